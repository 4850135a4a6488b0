"""The active-learning loop behind the command line and the benchmarks.

:func:`run_experiment` compares query strategies on one data set, the way the
paper's experiments do: per trial, the same initial labels (a few per class,
drawn at random) for every strategy; the graph and its spectrum built once and
shared by every strategy and loss (through :class:`~skmcal.NodeSet` and the
graph cache); then, per strategy, ``iterations`` rounds of *query* (``B``
nodes chosen by the strategy among a random fraction of the unlabeled nodes)
and *update* (refit on every labeled node, warm-started), recording the
accuracy on the unlabeled nodes after each round.

A strategy is named ``"name"`` or ``"name:loss"`` (see :data:`STRATEGIES`);
the loss is the model the strategy queries for and whose accuracy is
recorded, as in the paper (MC-GR is ``"mc:gr"``, UNC-LOG ``"unc:logistic"``),
so strategies on different losses can be compared in one run. Every loss is
fitted in the paper's spectral model (``model="spectral"``) unless ``model``
names another of the classifier's models (``"auto"`` with ``loss="auto"``:
the classifier's defaults, on the experiment's graph).

:func:`run_experiment` is three parts: :class:`ExperimentConfig`, the
validated settings (what ``config.json`` records); :class:`ResultStore`, the
rows of the run and its resumable CSV files; and the loop of each (trial,
strategy) run. Candidates are drawn and batches chosen by the same rules as
the strategies' own (``skmcal.selection``).

Output folder (when ``out`` is given):

``results.csv``
    One row per (trial, strategy, iteration): ``trial, iteration, n_labeled,
    strategy, accuracy, time``. Appended and flushed row by row. Equal rows
    of the data are one point: ``n_labeled`` counts distinct points, the
    initial labels and the queries are distinct points, and ``accuracy`` is
    over the nodes equal to no labeled node.
``choices.csv``
    The labeled nodes: ``trial, strategy, iteration, node`` (iteration 0:
    the initial labels; iteration ``i``: the nodes queried at round ``i``).
``stops.csv``
    With stopping rules (``stop=``): ``trial, strategy, iteration, rule`` of
    each run that a rule ended (at ``iterations`` at the latest).
``config.json``
    The settings of the run. A run into a folder that already holds one
    resumes it: (trial, strategy) runs already complete are kept, partial
    ones are dropped and redone. Settings that differ raise ``ValueError``.

Each (trial, strategy) run is a pure function of the settings and the seed,
so runs can go to other processes (``n_jobs``, ``backend``: joblib's
``"loky"`` or ``"threading"``, or ``"dask"`` for a dask.distributed cluster
at ``scheduler``). Workers only compute: the parent process receives each
run's rows and writes them in the serial order, so the files of a parallel
run hold the same rows in the same order as those of a serial run (the
``time`` column apart, which measures each iteration), and resuming stays
exact whatever ``n_jobs`` the interrupted and the resuming run had. The
graph is built once by the parent and stored in a disk cache (``memory``,
or a temporary folder) from which workers load it, memory-mapped.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import gc
import hashlib
import json
import logging
import math
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from . import __version__, _threads
from ._warnings import warn_user
from .baselines import BASELINES, db_rkhs, sopt_hf, vopt_hf
from .classifier import MODELS, SpectralGraphClassifier, _check_model_loss, unlabeled_mask
from .coldstart import cold_start as graph_cold_start
from .datasets import DATASETS, load_dataset
from .graph import GRAPH_CACHE, NodeSet
from .losses import LOSSES
from .plotting import _check_columns, _check_filled
from .query import model_change, random_sampling, sopt, uncertainty, vopt
from .selection import check_candidates
from .stopping import make_rule

__all__ = [
    "BACKENDS",
    "NEIGHBORS",
    "RESULT_COLUMNS",
    "CHOICE_COLUMNS",
    "SCHEDULER_TIMEOUT",
    "STOP_COLUMNS",
    "STRATEGIES",
    "ExperimentConfig",
    "ExperimentResult",
    "ResultStore",
    "StrategySpec",
    "parse_strategy",
    "run_experiment",
    "summarize",
]

logger = logging.getLogger(__name__)

#: Columns of ``results.csv`` and of the ``results`` of an :class:`ExperimentResult`.
RESULT_COLUMNS = ("trial", "iteration", "n_labeled", "strategy", "accuracy", "time")

#: Columns of ``choices.csv`` and of the ``choices`` of an :class:`ExperimentResult`.
CHOICE_COLUMNS = ("trial", "strategy", "iteration", "node")

#: Columns of ``stops.csv`` and of the ``stops`` of an :class:`ExperimentResult`.
STOP_COLUMNS = ("trial", "strategy", "iteration", "rule")

RESULTS_FILE = "results.csv"
CHOICES_FILE = "choices.csv"
STOPS_FILE = "stops.csv"
CONFIG_FILE = "config.json"

#: Keys of ``config.json`` not compared when resuming.
_UNCOMPARED_KEYS = frozenset({"skmcal_version"})
#: Settings added since the first ``config.json`` files, with the value that those
#: files' runs had (a folder written before a setting existed resumes under it).
_ADDED_SETTINGS = {"model": "spectral"}

#: Query strategies by name: the :mod:`skmcal.query` function and its options
#: (a name without ``-greedy`` or ``-localmax`` means the paper's top-k batches).
STRATEGIES: dict[str, tuple[Callable, dict[str, Any]]] = {
    "mc": (model_change, {"batch": "topk"}),
    "mc-greedy": (model_change, {"batch": "greedy"}),
    "mc-localmax": (model_change, {"batch": "localmax"}),
    "vopt": (vopt, {"batch": "topk"}),
    "vopt-greedy": (vopt, {"batch": "greedy"}),
    "vopt-localmax": (vopt, {"batch": "localmax"}),
    "sopt": (sopt, {"batch": "topk"}),
    "sopt-greedy": (sopt, {"batch": "greedy"}),
    "sopt-localmax": (sopt, {"batch": "localmax"}),
    "unc": (uncertainty, {"measure": "margin", "batch": "topk"}),
    "unc-greedy": (uncertainty, {"measure": "margin", "batch": "greedy"}),
    "unc-entropy": (uncertainty, {"measure": "entropy", "batch": "topk"}),
    "unc-lc": (uncertainty, {"measure": "least_confident", "batch": "topk"}),
    "rand": (random_sampling, {}),
    # The paper's baselines, in their own models (skmcal.baselines): the loss
    # only sets the classifier that provides the graph and the labeled nodes.
    "vopt-hf": (vopt_hf, {}),
    "sopt-hf": (sopt_hf, {}),
    "db-rkhs": (db_rkhs, {}),
}

#: Defaults of a data set given as an ``(X, y)`` pair.
_CUSTOM_DEFAULTS = {"kernel": "gaussian", "n_neighbors": 10, "n_initial": 2}

#: kNN searches known by name (``neighbors=`` of :func:`run_experiment`):
#: exact neighbours by scikit-learn, or pynndescent's approximate ones.
NEIGHBORS = ("exact", "pynndescent")

#: Parallel backends of :func:`run_experiment` (joblib's names).
BACKENDS = ("loky", "threading", "dask")

#: Seconds allowed to connect to a dask scheduler given by address.
SCHEDULER_TIMEOUT = 5.0


# --------------------------------------------------------------------------
# Strategies and data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class StrategySpec:
    """A query strategy with the loss of the model it queries for.

    Attributes
    ----------
    name : str
        A key of :data:`STRATEGIES`.
    loss : str
        A loss of :class:`~skmcal.SpectralGraphClassifier` (``"auto"``: its own choice).
    """

    name: str
    loss: str

    @property
    def label(self) -> str:
        """``"name:loss"``, the strategy's name in the results."""
        return f"{self.name}:{self.loss}"

    @property
    def function(self) -> Callable:
        """The :mod:`skmcal.query` function."""
        return STRATEGIES[self.name][0]

    @property
    def options(self) -> dict[str, Any]:
        """Options passed to :attr:`function` besides candidates and random_state."""
        return dict(STRATEGIES[self.name][1])


def parse_strategy(spec: str, default_loss: str) -> StrategySpec:
    """Parse ``"name"`` or ``"name:loss"`` into a :class:`StrategySpec`.

    Parameters
    ----------
    spec : str
        A strategy name of :data:`STRATEGIES`, optionally followed by ``:``
        and a loss (``gr``, ``logistic``, ``probit``, ``mgr``, ``ce``, or
        ``auto``: the classifier's own choice, see its ``loss``).
        Case-insensitive.
    default_loss : str
        The loss of a spec without one.

    Returns
    -------
    StrategySpec

    Examples
    --------
    >>> from skmcal.experiment import parse_strategy
    >>> parse_strategy("MC:GR", "mgr").label
    'mc:gr'
    >>> parse_strategy("unc", "logistic").options
    {'measure': 'margin', 'batch': 'topk'}
    """
    if not isinstance(spec, str):
        raise TypeError(f"A strategy must be a string 'name' or 'name:loss'; got {spec!r}.")
    name, _, loss = spec.strip().lower().partition(":")
    if name not in STRATEGIES:
        raise ValueError(
            f"Unknown strategy {name!r} in {spec!r}; accepted: {', '.join(STRATEGIES)} "
            f"(optionally followed by ':loss')."
        )
    loss = loss or default_loss
    if loss != "auto" and loss not in LOSSES:
        raise ValueError(
            f"Unknown loss {loss!r} in strategy {spec!r}; accepted: {', '.join(LOSSES)}, auto."
        )
    return StrategySpec(name, loss)


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@dataclass
class ExperimentResult:
    """What :func:`run_experiment` returns.

    Attributes
    ----------
    results : pandas.DataFrame
        Columns :data:`RESULT_COLUMNS`, sorted by trial, strategy (in the
        order given) and iteration. ``accuracy`` is the fraction of
        unlabeled nodes classified correctly; ``time`` the seconds of the
        query and the update that led to the row (NaN at iteration 0).
    choices : pandas.DataFrame
        Columns :data:`CHOICE_COLUMNS`: the node labeled at each iteration
        (iteration 0: the initial labels).
    config : dict
        The settings of the run (as in ``config.json``).
    X : ndarray or sparse matrix of shape (n_nodes, n_features)
        The node data.
    y : ndarray of shape (n_nodes,)
        The true labels.
    out : Path or None
        The output folder, if any.
    runs_done : list of (int, str)
        The (trial, strategy) runs computed by this call.
    runs_skipped : list of (int, str)
        The runs found complete in ``out`` and kept.
    graph_seconds : float or None
        Seconds of the first fit, which builds the graph and its spectrum
        (or takes them from the graph cache); None if nothing was run.
    stops : pandas.DataFrame
        Columns :data:`STOP_COLUMNS`: the runs a stopping rule ended, with
        the iteration and the rule.
    """

    results: pd.DataFrame
    choices: pd.DataFrame
    config: dict
    X: Any
    y: np.ndarray
    out: Path | None = None
    runs_done: list[tuple[int, str]] = field(default_factory=list)
    runs_skipped: list[tuple[int, str]] = field(default_factory=list)
    graph_seconds: float | None = None
    stops: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(STOP_COLUMNS)))

    @property
    def results_path(self) -> Path | None:
        """Path of ``results.csv`` (None without an output folder)."""
        return None if self.out is None else self.out / RESULTS_FILE

    @property
    def choices_path(self) -> Path | None:
        """Path of ``choices.csv`` (None without an output folder)."""
        return None if self.out is None else self.out / CHOICES_FILE

    @property
    def config_path(self) -> Path | None:
        """Path of ``config.json`` (None without an output folder)."""
        return None if self.out is None else self.out / CONFIG_FILE

    def summary(self) -> pd.DataFrame:
        """The final accuracy and time per iteration of each strategy; see :func:`summarize`."""
        return summarize(self.results)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Final accuracy (mean and std over trials) and mean time per iteration.

    Parameters
    ----------
    results : pandas.DataFrame
        Columns as :data:`RESULT_COLUMNS`.

    Returns
    -------
    pandas.DataFrame
        One row per strategy, in order of first appearance, with columns
        ``strategy``, ``n_labeled`` (at each trial's last iteration, the mean
        over trials when stopping rules ended them apart), ``accuracy_mean``,
        ``accuracy_std`` (population std over trials, 0 for one trial),
        ``time_mean`` (seconds per iteration, iterations >= 1) and ``trials``.

    Raises
    ------
    TypeError
        If ``results`` is not a DataFrame (such as a list of rows, or the
        path of a CSV file: read it with :func:`pandas.read_csv`).
    ValueError
        If a column is missing, or if ``strategy``, ``trial``, ``iteration``
        or ``n_labeled`` has missing values (NaN or None). NaN accuracies
        and times are allowed.
    """
    _check_columns(results, ["strategy", "trial", "iteration", "n_labeled", "accuracy", "time"],
                   "summarize")  # fmt: skip
    _check_filled(results, ["strategy", "trial", "iteration", "n_labeled"], "summarize")
    rows = []
    for strategy in pd.unique(results["strategy"]):
        part = results[results["strategy"] == strategy]
        last = part.loc[part.groupby("trial")["iteration"].idxmax()]
        accuracy = last["accuracy"].to_numpy(dtype=float)
        times = part["time"].to_numpy(dtype=float)
        times = times[np.isfinite(times)]
        rows.append(
            {
                "strategy": strategy,
                "n_labeled": int(round(last["n_labeled"].mean())),
                "accuracy_mean": float(accuracy.mean()),
                "accuracy_std": float(accuracy.std()),
                "time_mean": float(times.mean()) if times.size else math.nan,
                "trials": int(last["trial"].nunique()),
            }
        )
    return pd.DataFrame(
        rows,
        columns=["strategy", "n_labeled", "accuracy_mean", "accuracy_std", "time_mean", "trials"],
    )


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}.")
    return int(value)


def _check_positive_or_auto(value, name):
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, Real) or not value > 0:
        raise ValueError(f"{name} must be 'auto' or a float > 0; got {value!r}.")
    return float(value)


def _check_neighbors(neighbors):
    """Check a kNN search given by name, and that pynndescent imports when named.

    An estimator is checked by the classifier.
    """
    if isinstance(neighbors, str):
        if neighbors not in NEIGHBORS:
            raise ValueError(
                f"neighbors must be None, one of {', '.join(map(repr, NEIGHBORS))}, or a "
                f"KNeighborsTransformer-like estimator; got {neighbors!r}."
            )
        if neighbors == "pynndescent":
            _import_pynndescent()


def _import_pynndescent():
    try:
        import pynndescent
    except ImportError as exc:
        raise ImportError(
            "neighbors='pynndescent' needs the optional package pynndescent, which is not "
            "installed; install it with `pip install skmcal[fast]` (or `pip install "
            "pynndescent`), or use neighbors='exact'."
        ) from exc
    return pynndescent


def _neighbors_estimator(neighbors, *, kernel, n_neighbors, n_nodes, seed):
    """The ``neighbors`` of the classifiers: None (exact), a PyNNDescentTransformer, or as given.

    ``PyNNDescentTransformer(n_neighbors=k).fit_transform`` gives each node
    itself plus its ``k`` nearest other nodes (it searches ``k + 1``, as
    scikit-learn's transformers do); the graph drops the node itself and
    needs ``n_neighbors`` others, and ``scale_neighbor`` of them for the
    local scales of the Gaussian kernel. So ``k`` is the larger of the two.
    """
    if neighbors is None or neighbors == "exact":
        return None
    if not isinstance(neighbors, str):
        return neighbors
    if kernel == "precomputed":
        raise ValueError(
            "neighbors='pynndescent' searches the neighbours of feature vectors, but "
            "kernel='precomputed' gives the affinities; use neighbors='exact'."
        )
    needed = n_neighbors
    if kernel == "gaussian":
        needed = max(needed, SpectralGraphClassifier().scale_neighbor)
    return _import_pynndescent().PyNNDescentTransformer(
        n_neighbors=min(needed, n_nodes - 1),
        metric="cosine" if kernel == "cosine" else "euclidean",
        random_state=seed,
    )


def _resolve_dataset(dataset, n_samples, data_home):
    """``(name, X, y, defaults)`` of a named data set or an ``(X, y)`` pair."""
    if isinstance(dataset, str):
        if dataset.lower() not in DATASETS:
            raise ValueError(
                f"Unknown data set {dataset!r}; accepted: {', '.join(DATASETS)}, or an (X, y) pair."
            )
        X, y = load_dataset(dataset, n_samples=n_samples, data_home=data_home)
        return dataset.lower(), X, y, DATASETS[dataset.lower()].defaults
    if isinstance(dataset, Sequence) and len(dataset) == 2:
        X, y = _check_pair(*dataset)
        if n_samples is not None:
            X, y = X[:n_samples], y[:n_samples]
        return "custom", X, y, _CUSTOM_DEFAULTS
    raise ValueError(
        f"dataset must be one of {', '.join(DATASETS)} or an (X, y) pair; got "
        f"{type(dataset).__name__}."
    )


def _check_pair(X, y):
    """A data set given as ``(X, y)``: numeric, finite, 2-D X and 1-D y of as many rows."""
    if not sp.issparse(X):
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
    values = X.data if sp.issparse(X) else X
    if values.dtype.kind not in "biuf":
        raise ValueError(f"X must hold numbers; got dtype {values.dtype}.")
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(f"X holds {int(bad.sum())} value(s) that are NaN or infinite.")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, one label per row of X; got shape {y.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
    # every row's true class: the experiment labels rows as its strategies ask
    missing = unlabeled_mask(y, np.nan) | unlabeled_mask(y, None)
    if missing.any():
        raise ValueError(
            f"y holds {int(missing.sum())} missing value(s) (NaN or None; first: row "
            f"{int(np.flatnonzero(missing)[0])}): an experiment needs the true class of "
            f"every row, which it reveals as the strategies query them. Drop those rows."
        )
    return X, y


def _labels_digest(classes, codes):
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(classes.tolist()).encode())
    h.update(np.ascontiguousarray(codes, dtype=np.int64).view(np.uint8).data)
    return h.hexdigest()


def _trial_seeds(seed, trial):
    """Seeds of a trial: initial labels, and the query stream of each strategy."""
    initial, queries = np.random.SeedSequence([seed, trial]).generate_state(2)
    return int(initial), int(queries)


def _initial_labels(codes, n_classes, n_initial, seed):
    rng = np.random.RandomState(seed)
    picks = [
        rng.choice(np.flatnonzero(codes == c), n_initial, replace=False) for c in range(n_classes)
    ]
    return np.sort(np.concatenate(picks))


# --------------------------------------------------------------------------
# Files and resume
# --------------------------------------------------------------------------


def _read_complete_lines(path: Path) -> list[list[str]]:
    """CSV rows of ``path`` without its header; a last line cut mid-write is dropped."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not a text file written by run_experiment ({exc}). Use another "
            "output folder, or delete this one to start over."
        ) from None
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    rows = list(csv.reader(text.splitlines()))
    return rows


def _check_header(path: Path, rows: list[list[str]], columns: Sequence[str]) -> list[list[str]]:
    if not rows:
        return []
    if tuple(rows[0]) != tuple(columns):
        raise ValueError(
            f"{path} has the columns {rows[0]}, not {list(columns)}; it was not written by "
            "run_experiment. Use another output folder."
        )
    return rows[1:]


def _write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    """Write ``path`` atomically (temporary file, then rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    os.replace(tmp, path)


def _parse_result(row):
    trial, iteration, n_labeled, strategy, accuracy, seconds = row
    return {
        "trial": int(trial),
        "iteration": int(iteration),
        "n_labeled": int(n_labeled),
        "strategy": strategy,
        "accuracy": float(accuracy),
        "time": float(seconds) if seconds else math.nan,
    }


def _result_fields(row):
    seconds = row["time"]
    return [
        row["trial"],
        row["iteration"],
        row["n_labeled"],
        row["strategy"],
        repr(row["accuracy"]),
        "" if math.isnan(seconds) else repr(seconds),
    ]


def _parse_rows(path: Path, lines: list[list[str]], columns, parse) -> list[dict]:
    """Parse the rows of a CSV file (after its header); a damaged value names its line.

    Rows with another number of fields are skipped (their run is then
    incomplete, and redone).
    """
    rows = []
    for number, fields in enumerate(lines, start=2):
        if len(fields) != len(columns):
            continue
        try:
            rows.append(parse(fields))
        except ValueError as exc:
            raise ValueError(
                f"{path}, line {number}: cannot read {fields} as {list(columns)} ({exc}). "
                "The file is damaged: delete that line (its run is then redone), or use "
                "another output folder."
            ) from None
    return rows


def _parse_stop(row):
    trial, strategy, iteration, rule = row
    return {"trial": int(trial), "strategy": strategy, "iteration": int(iteration), "rule": rule}


def _parse_choice(row):
    trial, strategy, iteration, node = row
    return {
        "trial": int(trial),
        "strategy": strategy,
        "iteration": int(iteration),
        "node": int(node),
    }


def _compare_configs(saved: dict, config: dict, path: Path) -> None:
    saved = {**_ADDED_SETTINGS, **saved}
    keys = (set(saved) | set(config)) - _UNCOMPARED_KEYS
    differ = sorted(k for k in keys if saved.get(k) != config.get(k))
    if differ:
        details = "; ".join(f"{k}: {saved.get(k)!r} there, {config.get(k)!r} now" for k in differ)
        raise ValueError(
            f"Cannot resume into {path.parent}: its {path.name} was written with other "
            f"settings ({details}). Use another output folder, or delete this one to start over."
        )


def _load_previous(
    out: Path,
    config: dict,
    expected: set[tuple[int, str]],
    iterations: int,
    n_chosen: tuple[int, int],
):
    """Results, choices and stops of the complete runs found in ``out``; partial ones dropped.

    A run is complete when ``results.csv`` holds its iterations 0 to
    ``iterations`` (or to the iteration where ``stops.csv`` says a stopping
    rule ended it) once each, and ``choices.csv`` its ``n_chosen[0]``
    initial nodes and ``n_chosen[1]`` nodes at every iteration after 0.
    """
    config_path = out / CONFIG_FILE
    results_path, choices_path = out / RESULTS_FILE, out / CHOICES_FILE
    stops_path = out / STOPS_FILE
    if config_path.exists():
        try:
            saved = json.loads(config_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{config_path} is not valid JSON ({exc}).") from exc
        if not isinstance(saved, dict):
            raise ValueError(
                f"{config_path} holds a JSON {type(saved).__name__}, not the settings of a run."
            )
        _compare_configs(saved, config, config_path)
    elif results_path.exists() or choices_path.exists():
        raise ValueError(
            f"{out} holds results but no {CONFIG_FILE}, so they cannot be resumed safely. "
            "Use another output folder, or delete this one."
        )
    results, choices = [], []
    if results_path.exists():
        lines = _check_header(results_path, _read_complete_lines(results_path), RESULT_COLUMNS)
        results = _parse_rows(results_path, lines, RESULT_COLUMNS, _parse_result)
    if choices_path.exists():
        lines = _check_header(choices_path, _read_complete_lines(choices_path), CHOICE_COLUMNS)
        choices = _parse_rows(choices_path, lines, CHOICE_COLUMNS, _parse_choice)
    stops = []
    if stops_path.exists():
        lines = _check_header(stops_path, _read_complete_lines(stops_path), STOP_COLUMNS)
        stops = _parse_rows(stops_path, lines, STOP_COLUMNS, _parse_stop)
    last = {(r["trial"], r["strategy"]): r["iteration"] for r in stops}

    seen: dict[tuple[int, str], list[int]] = {}
    for row in results:
        seen.setdefault((row["trial"], row["strategy"]), []).append(row["iteration"])
    chosen: dict[tuple[int, str], list[int]] = {}
    for row in choices:
        chosen.setdefault((row["trial"], row["strategy"]), []).append(row["iteration"])

    def wanted(run):
        end = last.get(run, iterations)
        chosen_at = [0] * n_chosen[0] + sorted(list(range(1, end + 1)) * n_chosen[1])
        return list(range(end + 1)), chosen_at

    complete = {
        run
        for run, its in seen.items()
        if run in expected and (sorted(its), sorted(chosen.get(run, []))) == wanted(run)
    }
    results = [r for r in results if (r["trial"], r["strategy"]) in complete]
    choices = [c for c in choices if (c["trial"], c["strategy"]) in complete]
    stops = [c for c in stops if (c["trial"], c["strategy"]) in complete]
    return results, choices, stops, complete


class ResultStore:
    """The rows of a run: in memory and, with an output folder, in its CSV files.

    With ``out``: the folder is created; the complete (trial, strategy) runs
    of an earlier run with the same settings are read back (partial ones are
    dropped, see ``_load_previous()``), the CSV files rewritten with them,
    ``config.json`` written; new rows are then appended and flushed one by
    one. Without ``out``, rows are only kept in memory.

    Parameters
    ----------
    out : Path or None
        The output folder.
    config : ExperimentConfig
        The settings of the run (compared with ``config.json`` when resuming).

    Attributes
    ----------
    complete : set of (int, str)
        The (trial, strategy) runs read back complete.
    """

    def __init__(self, out: Path | None, config: ExperimentConfig):
        self.out = out
        self.with_stops = bool(config.stop)
        self.results: list[dict] = []
        self.choices: list[dict] = []
        self.stops: list[dict] = []
        self.complete: set[tuple[int, str]] = set()
        self._files: list = []
        self._writers: dict[str, tuple] = {}
        if out is not None:
            self._resume(out, config)

    def _resume(self, out: Path, config: ExperimentConfig) -> None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            files = [p for p in (out, *out.parents) if p.is_file()]
            reason = f"{files[0]} is a file" if files else exc.strerror or str(exc)
            raise ValueError(f"Cannot use {out} as the output folder: {reason}.") from None
        record = config.record()
        expected = {(t, lab) for t in range(config.trials) for lab in config.strategies}
        self.results, self.choices, self.stops, self.complete = _load_previous(
            out, record, expected, config.iterations, (config.n_first, config.batch_size)
        )
        _write_csv(out / RESULTS_FILE, RESULT_COLUMNS, map(_result_fields, self.results))
        _write_csv(
            out / CHOICES_FILE,
            CHOICE_COLUMNS,
            ([c[k] for k in CHOICE_COLUMNS] for c in self.choices),
        )
        if self.with_stops:
            _write_csv(
                out / STOPS_FILE,
                STOP_COLUMNS,
                ([c[k] for k in STOP_COLUMNS] for c in self.stops),
            )
        (out / CONFIG_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if self.complete:
            logger.info(
                "Resuming %s: %d of %d runs complete.", out, len(self.complete), len(expected)
            )

    def __enter__(self) -> ResultStore:
        """Open the CSV files for appending (with an output folder)."""
        if self.out is not None:
            names = [RESULTS_FILE, CHOICES_FILE] + ([STOPS_FILE] if self.with_stops else [])
            for name in names:
                f = (self.out / name).open("a", encoding="utf-8", newline="")
                self._files.append(f)
                self._writers[name] = f, csv.writer(f, lineterminator="\n")
        return self

    def __exit__(self, *exc_info) -> None:
        for f in self._files:
            f.close()
        self._files, self._writers = [], {}

    def _append(self, name: str, rows: list[list]) -> None:
        if name in self._writers:
            f, writer = self._writers[name]
            writer.writerows(rows)
            f.flush()

    def add_result(self, row: dict) -> None:
        """One row of ``results.csv``."""
        self.results.append(row)
        self._append(RESULTS_FILE, [_result_fields(row)])

    def add_choices(self, trial: int, strategy: str, iteration: int, nodes) -> None:
        """The nodes labeled at an iteration (``choices.csv``)."""
        rows = [
            {"trial": trial, "strategy": strategy, "iteration": iteration, "node": int(n)}
            for n in nodes
        ]
        self.choices.extend(rows)
        self._append(CHOICES_FILE, [[r[c] for c in CHOICE_COLUMNS] for r in rows])

    def add_stop(self, row: dict) -> None:
        """The iteration and rule that ended a run (``stops.csv``)."""
        self.stops.append(row)
        self._append(STOPS_FILE, [[row[c] for c in STOP_COLUMNS]])

    def merge(self, run: ResultStore) -> None:
        """Add the rows of a run recorded apart (by a worker), as :meth:`add_result` would."""
        self.results.extend(run.results)
        self.choices.extend(run.choices)
        self.stops.extend(run.stops)
        self._append(RESULTS_FILE, [_result_fields(row) for row in run.results])
        self._append(CHOICES_FILE, [[c[k] for k in CHOICE_COLUMNS] for c in run.choices])
        self._append(STOPS_FILE, [[c[k] for k in STOP_COLUMNS] for c in run.stops])

    def frames(self, strategies: Sequence[str]):
        """``(results, choices, stops)`` DataFrames, sorted by trial, ``strategies``, iteration."""
        order = {lab: i for i, lab in enumerate(strategies)}

        def in_run_order(rows, columns, dtypes):
            frame = pd.DataFrame(rows, columns=list(columns)).sort_values(
                ["trial", "strategy", "iteration"],
                key=lambda col: col.map(order) if col.name == "strategy" else col,
                kind="stable",
            )
            return frame.reset_index(drop=True).astype(dtypes)

        results = in_run_order(
            self.results,
            RESULT_COLUMNS,
            {"trial": int, "iteration": int, "n_labeled": int, "accuracy": float, "time": float},
        )
        choices = in_run_order(
            self.choices, CHOICE_COLUMNS, {"trial": int, "iteration": int, "node": int}
        )
        stops = in_run_order(self.stops, STOP_COLUMNS, {"trial": int, "iteration": int})
        return results, choices, stops


# --------------------------------------------------------------------------
# The validated settings
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Data:
    """The nodes and labels of a run: the node set, class codes, distinct points."""

    name: str
    pool: NodeSet
    y: np.ndarray
    classes: np.ndarray
    codes: np.ndarray
    points: np.ndarray  # whether each node is the first of its equal nodes (a point)
    defaults: Mapping[str, Any]

    @classmethod
    def load(cls, dataset, n_samples, data_home) -> _Data:
        start = time.perf_counter()
        name, X, y, defaults = _resolve_dataset(dataset, n_samples, data_home)
        logger.info(
            "Data %s: %d x %d loaded in %.2f s.", name, *X.shape, time.perf_counter() - start
        )
        pool = NodeSet(X)
        classes, codes = np.unique(np.asarray(y), return_inverse=True)
        codes = codes.astype(np.intp).reshape(-1)
        if codes.size != pool.n_nodes:
            raise ValueError(f"X has {pool.n_nodes} rows but y has {codes.size} labels.")
        if classes.size < 2:
            raise ValueError(
                f"The data hold {classes.size} class; active learning needs at least 2."
            )
        points = pool.first_equal == np.arange(pool.n_nodes)
        return cls(name, pool, y, classes, codes, points, defaults)


@dataclass(frozen=True)
class ExperimentConfig:
    """The validated settings of a run, as :func:`run_experiment` resolved them.

    Every field but ``knn`` is recorded in ``config.json``
    (:meth:`record`), and compared with it when a run is resumed; see
    :func:`run_experiment` for their meaning. ``"auto"`` settings are
    resolved (except ``tau`` and ``gamma``, which the classifier resolves),
    ``strategies`` are ``"name:loss"`` labels.

    Attributes
    ----------
    knn : estimator or None
        The kNN search of the graph (None: exact); recorded as ``neighbors``
        (None, the name, or the estimator's repr).
    """

    dataset: str
    n_samples: int | None
    n_nodes: int
    n_features: int
    n_classes: int
    data_digest: str
    labels_digest: str
    kernel: str
    n_neighbors: int
    n_eigs: int
    neighbors: str | None
    loss: str
    tau: float | str
    gamma: float | str
    strategies: tuple[str, ...]
    n_initial: int
    cold_start: int | None
    stop: tuple[str, ...] | None
    batch_size: int
    iterations: int
    candidates: float | int | None
    trials: int
    seed: int
    model: str = "spectral"
    skmcal_version: str = __version__
    knn: Any = field(default=None, repr=False, compare=False)

    def record(self) -> dict:
        """The settings as ``config.json`` holds them (JSON types, ``knn`` left out)."""
        names = [f.name for f in dataclasses.fields(self) if f.name != "knn"]
        settings = {name: getattr(self, name) for name in names}
        return json.loads(json.dumps(settings))

    @property
    def specs(self) -> list[StrategySpec]:
        """The strategies, with their losses."""
        return [parse_strategy(label, self.loss) for label in self.strategies]

    @property
    def n_first(self) -> int:
        """Labels at iteration 0 (the cold start's, or ``n_initial`` per class)."""
        return self.cold_start or self.n_initial * self.n_classes

    @property
    def graph_options(self) -> dict[str, Any]:
        """The graph parameters of every classifier and of the cold start."""
        return {
            "kernel": self.kernel,
            "n_neighbors": self.n_neighbors,
            "n_eigs": self.n_eigs,
            "neighbors": self.knn,
        }


def _resolve_strategies(strategies, loss, n_classes, model) -> tuple[str, list[str]]:
    """The default loss and the ``"name:loss"`` labels, checked against the classes and
    ``model``."""
    if loss == "auto" and model == "spectral":
        loss = "gr" if n_classes == 2 else "mgr"
    elif loss != "auto" and loss not in LOSSES:
        raise ValueError(f"Unknown loss {loss!r}; accepted: 'auto', {', '.join(LOSSES)}.")
    specs = [parse_strategy(spec, loss) for spec in strategies]
    labels = [spec.label for spec in specs]
    repeated = sorted({lab for lab in labels if labels.count(lab) > 1})
    if repeated:
        raise ValueError(f"Strategies given more than once: {repeated} (from {list(strategies)}).")
    for spec in specs:
        if n_classes > 2 and spec.name in BASELINES and BASELINES[spec.name].binary_only:
            raise ValueError(
                f"Strategy {spec.label!r} is binary only, but the data hold {n_classes} classes."
            )
        if spec.loss == "auto":
            continue
        if n_classes > 2 and not LOSSES[spec.loss].multiclass:
            raise ValueError(
                f"Strategy {spec.label!r} uses the binary loss {spec.loss!r}, but the data "
                f"hold {n_classes} classes; use mgr or ce."
            )
        try:
            _check_model_loss(model, spec.loss)
        except ValueError as exc:
            raise ValueError(
                f"Strategy {spec.label!r} uses the loss {spec.loss!r}, but {exc}"
            ) from None
    return loss, labels


def _validate(dataset, data_home, settings: dict) -> tuple[ExperimentConfig, _Data]:
    """Check the arguments of :func:`run_experiment`, load the data, resolve "auto"."""
    s = dict(settings)
    for name, minimum in (("batch_size", 1), ("iterations", 0), ("trials", 1), ("seed", 0)):
        s[name] = _check_int(s[name], name, minimum)
    s["n_eigs"] = _check_int(s["n_eigs"], "n_eigs", 1)
    candidates = check_candidates(s["candidates"], rows=False)
    if candidates is not None:  # as config.json records it
        candidates = int(candidates) if isinstance(candidates, Integral) else float(candidates)
    tau = _check_positive_or_auto(s["tau"], "tau")
    gamma = _check_positive_or_auto(s["gamma"], "gamma")
    _check_neighbors(s["neighbors"])
    n_samples = s["n_samples"]
    if n_samples is not None:
        n_samples = _check_int(n_samples, "n_samples", 2)
    strategies = s["strategies"]
    if isinstance(strategies, str):
        strategies = [strategies]
    if not strategies:
        raise ValueError("strategies is empty; give at least one strategy.")

    data = _Data.load(dataset, n_samples, data_home)
    n_nodes, n_classes = data.pool.n_nodes, data.classes.size

    model = s["model"]
    if model not in MODELS:
        raise ValueError(f"Unknown model {model!r}; accepted: {', '.join(map(repr, MODELS))}.")
    loss, labels = _resolve_strategies(strategies, s["loss"], n_classes, model)

    kernel = data.defaults["kernel"] if s["kernel"] == "auto" else s["kernel"]
    n_neighbors = s["n_neighbors"]
    if n_neighbors == "auto":
        n_neighbors = data.defaults["n_neighbors"]
    n_neighbors = _check_int(n_neighbors, "n_neighbors", 1)
    n_initial, cold_start = s["n_initial"], s["cold_start"]
    if n_initial == "auto":
        n_initial = 0 if cold_start is not None else data.defaults["n_initial"]
    n_initial = _check_int(n_initial, "n_initial", 0)
    if cold_start is not None:
        cold_start = _check_int(cold_start, "cold_start", 1)
        if n_initial:
            raise ValueError(
                f"cold_start={cold_start} chooses the first labels from the graph; it needs "
                f"n_initial=0, got n_initial={n_initial}."
            )
    elif not n_initial:
        raise ValueError(
            "n_initial=0 starts from no label: give cold_start, the number of first labels "
            "to choose from the graph alone."
        )
    stop = s["stop"]
    stop = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
    for rule in stop:
        make_rule(rule)
    # Equal rows are one point: initial labels are drawn among distinct points
    # (the first of equal nodes), and every count below is of distinct points.
    n_points = int(data.points.sum())
    smallest = int(np.bincount(data.codes[data.points], minlength=n_classes).min())
    if n_initial > smallest:
        raise ValueError(
            f"n_initial={n_initial} labels per class, but the smallest class has {smallest} "
            f"distinct points (equal rows count once: the data hold {n_points} distinct "
            f"points in {data.codes.size} rows)."
        )
    n_first = cold_start or n_initial * n_classes
    batch_size, iterations = s["batch_size"], s["iterations"]
    n_final = n_first + iterations * batch_size
    if n_final >= n_points:
        raise ValueError(
            f"{n_first} initial labels + {iterations} iterations x "
            f"{batch_size} queries = {n_final} labels, but there are only {n_points} "
            f"distinct points (at least one must stay unlabeled)."
        )

    neighbors = s["neighbors"]
    knn = _neighbors_estimator(
        neighbors, kernel=kernel, n_neighbors=n_neighbors, n_nodes=n_nodes, seed=s["seed"]
    )
    config = ExperimentConfig(
        dataset=data.name,
        n_samples=n_samples,
        n_nodes=n_nodes,
        n_features=data.pool.n_features,
        n_classes=n_classes,
        data_digest=data.pool.digest,
        labels_digest=_labels_digest(data.classes, data.codes),
        kernel=kernel,
        n_neighbors=n_neighbors,
        n_eigs=s["n_eigs"],
        # Exact neighbours are recorded as None, as in the configs written before the names.
        neighbors=(
            None if knn is None else neighbors if isinstance(neighbors, str) else repr(neighbors)
        ),
        loss=loss,
        tau=tau,
        gamma=gamma,
        strategies=tuple(labels),
        n_initial=n_initial,
        cold_start=cold_start,
        stop=tuple(stop) or None,
        batch_size=batch_size,
        iterations=iterations,
        candidates=candidates,
        trials=s["trials"],
        seed=s["seed"],
        model=model,
        knn=knn,
    )
    return config, data


# --------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------


def _make_progress(progress, total):
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            warn_user(
                "progress=True needs tqdm (pip install tqdm); running without a progress bar.",
                UserWarning,
            )
        else:
            return tqdm(total=total, unit="iter", dynamic_ncols=True)
    return None


def _labeled_points(clf):
    """Whether each node is labeled, or equal to a labeled node (one point)."""
    first = clf.node_set_.first_equal
    labeled = np.zeros(first.size, dtype=bool)
    labeled[first[clf.labeled_nodes_]] = True
    return labeled[first]


def _n_labeled(pool, labeled) -> int:
    """Distinct points labeled: equal nodes count once."""
    return int(np.unique(pool.first_equal[labeled]).size)


def _accuracy(clf, codes, name=None):
    """Accuracy on the unlabeled nodes (none equal to a labeled one), in the model
    of strategy ``name`` (a baseline: its own)."""
    unlabeled = ~_labeled_points(clf)
    if not unlabeled.any():
        return math.nan
    baseline = BASELINES.get(name)
    if baseline is None:
        predicted = clf.transduction_
    else:
        predicted = baseline.transduction(clf, codes[clf.labeled_nodes_])
    return float(np.mean(predicted[unlabeled] == codes[unlabeled]))


def _one_class_accuracy(codes, labeled):
    """Accuracy on the unlabeled nodes of predicting the one labeled class everywhere."""
    unlabeled = np.ones(codes.size, dtype=bool)
    unlabeled[labeled] = False
    if not unlabeled.any():
        return math.nan
    return float(np.mean(codes[unlabeled] == codes[labeled[0]]))


class _Runner:
    """One run per (trial, strategy): the initial labels, then query and refit.

    ``memory`` is the folder of the graph's disk cache, or None.
    """

    def __init__(self, config: ExperimentConfig, data: _Data, memory: str | None = None):
        self.config, self.data, self.memory = config, data, memory
        self._first_labels: dict[int, np.ndarray] = {}

    def classifier(self, loss: str) -> SpectralGraphClassifier:
        c = self.config
        return SpectralGraphClassifier(
            loss,
            model=c.model,
            nodes=self.data.pool,
            tau=c.tau,
            gamma=c.gamma,
            memory=self.memory,
            **c.graph_options,
        )

    def load_graph(self):
        """The graph, put in the in-process cache: from there, from ``memory``, or built.

        The cold start takes the graph from the in-process cache (it has no
        ``memory``); a fit would load it by itself.
        """
        clf = self.classifier(self.config.loss)
        clf._validate_params()
        with warnings.catch_warnings():  # (about n_neighbors or n_eigs: told by the fits)
            warnings.simplefilter("ignore", UserWarning)
            params = clf._graph_params(self.data.pool.n_nodes)
        return params, GRAPH_CACHE.get_or_build(self.data.pool, params, memory=self.memory)

    def share_graph(self) -> None:
        """Store the graph in ``memory`` for workers and later runs, unless it is there.

        A graph found in this process's cache is not stored by a fit
        (see :meth:`skmcal.graph.GraphCache.store`).
        """
        params, graph = self.load_graph()
        GRAPH_CACHE.store(self.data.pool, params, graph, self.memory)

    def initial_labels(self, trial: int) -> np.ndarray:
        """The labels at iteration 0 of a trial, the same for every strategy."""
        if trial not in self._first_labels:
            c, d = self.config, self.data
            trial_seed = _trial_seeds(c.seed, trial)[0]
            if c.cold_start:
                if self.memory is not None:
                    self.load_graph()
                first = graph_cold_start(d.pool, c.cold_start, trial_seed, **c.graph_options)
                self._first_labels[trial] = np.sort(first)
            else:
                eligible = np.where(d.points, d.codes, -1)  # -1: a copy, never drawn
                self._first_labels[trial] = _initial_labels(
                    eligible, d.classes.size, c.n_initial, trial_seed
                )
        return self._first_labels[trial]

    def fit_if_possible(self, clf, labeled) -> bool:
        """Fit on the labeled nodes when they hold two classes; whether ``clf`` is fitted."""
        codes = self.data.codes
        if np.unique(codes[labeled]).size < 2:
            return False
        clf.fit(self.data.pool.data[labeled], codes[labeled])
        return True

    def build_graph(self, trial: int, loss: str) -> float:
        """Build the graph and its spectrum once (shared through the graph cache); seconds."""
        start = time.perf_counter()
        first = self.initial_labels(trial)
        if not self.config.cold_start:  # (a cold start builds the graph itself)
            self.fit_if_possible(self.classifier(loss), first)
        return time.perf_counter() - start

    def query(self, clf, spec: StrategySpec, labeled, fitted: bool, rng) -> np.ndarray:
        """The nodes queried: by the strategy, or by the cold start before two classes."""
        c = self.config
        if not fitted:
            return graph_cold_start(
                self.data.pool, c.batch_size, rng, labeled=labeled, **c.graph_options
            )
        baseline = BASELINES.get(spec.name)
        extra = {}
        if baseline is not None and baseline.needs_labels:
            extra = {"labels": self.data.codes[clf.labeled_nodes_]}
        queried, _ = spec.function(
            clf,
            self.data.pool,
            c.batch_size,
            candidates=c.candidates,
            random_state=rng,
            **spec.options,
            **extra,
        )
        return queried

    def run(self, trial: int, spec: StrategySpec, store: ResultStore, bar) -> None:
        """One (trial, strategy) run, its rows added to ``store`` as they come.

        It depends on nothing but the settings, the data and the seed (the
        graph is the same whether built or loaded), so any process may run it.
        """
        c, codes = self.config, self.data.codes
        labeled = self.initial_labels(trial)
        rng = np.random.RandomState(_trial_seeds(c.seed, trial)[1])
        rule_seed = int(np.random.SeedSequence([c.seed, trial, 1]).generate_state(1)[0])
        stop = c.stop or ()
        rules = [make_rule(rule, random_state=rule_seed) for rule in stop]
        clf = self.classifier(spec.loss)
        fitted = self.fit_if_possible(clf, labeled)
        if bar is not None:
            bar.set_description(f"trial {trial + 1}/{c.trials} {spec.label}")
        store.add_choices(trial, spec.label, 0, labeled)
        iteration, seconds = 0, math.nan
        while True:
            if fitted:
                accuracy = _accuracy(clf, codes, spec.name)
            else:
                accuracy = _one_class_accuracy(codes, labeled)
            store.add_result(
                {
                    "trial": trial,
                    "iteration": iteration,
                    "n_labeled": _n_labeled(self.data.pool, labeled),
                    "strategy": spec.label,
                    "accuracy": accuracy,
                    "time": seconds,
                }
            )
            if iteration and bar is not None:
                bar.set_postfix_str(f"acc={accuracy:.4f}", refresh=False)
                bar.update(1)
            for rule in rules if fitted else ():
                rule.update(clf)
            stopped = [text for text, rule in zip(stop, rules, strict=True) if rule.should_stop]
            if stopped:
                store.add_stop(
                    {
                        "trial": trial,
                        "strategy": spec.label,
                        "iteration": iteration,
                        "rule": stopped[0],
                    }
                )
                if bar is not None:
                    bar.update(c.iterations - iteration)
                return
            if iteration == c.iterations:
                return
            iteration += 1
            start = time.perf_counter()
            queried = self.query(clf, spec, labeled, fitted, rng)
            labeled = np.concatenate([labeled, queried])
            fitted = self.fit_if_possible(clf, labeled)
            seconds = time.perf_counter() - start
            store.add_choices(trial, spec.label, iteration, queried)


@dataclass(frozen=True)
class _Parallel:
    """Where the runs go: ``backend`` None runs them in this process, one after another."""

    n_jobs: int
    backend: str | None
    scheduler: str | None
    memory: str | None


def _check_parallel(n_jobs, backend, scheduler, memory) -> _Parallel:
    """Check ``n_jobs``, ``backend``, ``scheduler`` and ``memory``; resolve the defaults."""
    if memory is not None and not isinstance(memory, (str, os.PathLike)):
        raise ValueError(f"memory must be None or a folder (str or path-like); got {memory!r}.")
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ValueError(
                f"scheduler must be the address of a dask scheduler such as "
                f"'tcp://10.0.0.5:8786'; got {scheduler!r}."
            )
        if backend is None:
            backend = "dask"
        elif backend != "dask":
            raise ValueError(
                f"scheduler={scheduler!r} is the address of a dask cluster; it needs "
                f"backend='dask' (or None), got backend={backend!r}."
            )
    if backend is not None and backend not in BACKENDS:
        raise ValueError(
            f"Unknown backend {backend!r}; accepted: None, {', '.join(map(repr, BACKENDS))}."
        )
    if n_jobs is None:
        n_jobs = -1 if backend == "dask" else 1
    elif isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0:
        raise ValueError(
            f"n_jobs must be None or a nonzero int (-1: all cores or all the cluster's "
            f"workers); got {n_jobs!r}."
        )
    if backend == "dask":
        _import_distributed()
    elif n_jobs == 1:
        backend = None
    elif backend is None:
        backend = "loky"
    # Absolute: workers may run in another folder (dask workers do).
    folder = None if memory is None else os.path.abspath(os.fspath(memory))
    return _Parallel(int(n_jobs), backend, scheduler, folder)


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            "backend='dask' needs the optional packages dask and distributed, which are not "
            "installed; install them with `pip install skmcal[dask]` (or `pip install dask "
            "distributed`), or use backend='loky'."
        ) from exc
    return distributed


@contextlib.contextmanager
def _dask_client(scheduler: str | None, n_jobs: int):
    """A dask.distributed client: of the cluster at ``scheduler``; else the current client;
    else of a local cluster of ``n_jobs`` worker processes, closed at the end."""
    distributed = _import_distributed()
    if scheduler is not None:
        failure = None
        try:
            client = distributed.Client(scheduler, timeout=SCHEDULER_TIMEOUT, set_as_default=False)
        except ValueError as exc:
            failure = ValueError(
                f"scheduler={scheduler!r} is not a dask scheduler address ({exc}); expected "
                "host:port or tcp://host:port."
            )
        except (OSError, TimeoutError) as exc:
            failure = ConnectionError(
                f"Cannot reach the dask scheduler at {scheduler!r} within "
                f"{SCHEDULER_TIMEOUT:g} s ({exc}). Check the address (host:port or "
                "tcp://host:port) and that a scheduler runs there (`dask scheduler`)."
            )
        if failure is not None:
            # The client that failed to connect holds an event loop; close it now
            # (collected), not at the interpreter's exit, where it waits 10 s.
            gc.collect()
            raise failure
        with client:
            yield client
        return
    try:
        current = distributed.Client.current()
    except ValueError:
        current = None
    if current is not None:
        yield current
        return
    n_workers = n_jobs if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    with (
        distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


@contextlib.contextmanager
def _blas_setting(n_threads: int | None):
    """Run with :func:`skmcal.set_blas_threads` at ``n_threads`` (a worker: the parent's)."""
    if _threads.get_blas_threads() == n_threads:
        yield
        return
    previous = _threads.set_blas_threads(n_threads)
    try:
        yield
    finally:
        _threads.set_blas_threads(previous)


def _run_cell(config, data, trial, label, memory, blas_threads) -> ResultStore:
    """One (trial, strategy) run in a worker: its rows, for the parent to write.

    A worker that does not see the ``memory`` folder (on another machine)
    builds the graph itself.
    """
    if memory is not None and not os.path.isdir(memory):
        memory = None
    rows = ResultStore(None, config)
    with _blas_setting(blas_threads):
        runner = _Runner(config, data, memory)
        runner.run(trial, parse_strategy(label, config.loss), rows, None)
    return rows


def _run_parallel(parallel: _Parallel, runner: _Runner, pending, store, bar, runs_done):
    """The pending runs on joblib workers; their rows written here, in the serial order."""
    import joblib

    config, data = runner.config, runner.data
    blas_threads = _threads.get_blas_threads()
    with contextlib.ExitStack() as stack:
        if parallel.backend == "dask":
            client = stack.enter_context(_dask_client(parallel.scheduler, parallel.n_jobs))
            # The data go to every worker once, not with every run.
            backend = joblib.parallel_config("dask", client=client, scatter=[data])
        else:
            backend = joblib.parallel_config(parallel.backend)
        stack.enter_context(backend)
        runs = joblib.Parallel(n_jobs=parallel.n_jobs, batch_size=1, return_as="generator")(
            joblib.delayed(_run_cell)(config, data, trial, spec.label, runner.memory, blas_threads)
            for trial, spec in pending
        )
        # In submission order: a run finished early waits for the ones before it.
        for (trial, spec), run in zip(pending, runs, strict=True):
            store.merge(run)
            runs_done.append((trial, spec.label))
            if bar is not None:
                bar.set_description(f"trial {trial + 1}/{config.trials} {spec.label}")
                bar.set_postfix_str(f"acc={run.results[-1]['accuracy']:.4f}", refresh=False)
                bar.update(config.iterations)


def run_experiment(
    dataset: str | tuple = "binary-clusters",
    *,
    strategies: Sequence[str] = ("mc", "vopt", "sopt", "unc", "rand"),
    loss: str = "auto",
    model: str = "spectral",
    tau: float | str = "auto",
    gamma: float | str = "auto",
    kernel: str = "auto",
    n_neighbors: int | str = "auto",
    n_eigs: int = 50,
    neighbors: Any = "exact",
    n_initial: int | str = "auto",
    cold_start: int | None = None,
    batch_size: int = 5,
    iterations: int = 100,
    candidates: float | int | None = 0.1,
    trials: int = 5,
    seed: int = 0,
    stop: str | Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    n_samples: int | None = None,
    data_home: str | os.PathLike[str] | None = None,
    progress: bool = True,
    n_jobs: int | None = None,
    backend: str | None = None,
    scheduler: str | None = None,
    memory: str | os.PathLike[str] | None = None,
) -> ExperimentResult:
    """Run batch active learning with several query strategies and record the accuracy.

    Per trial: draw ``n_initial`` labels per class at random (the same for
    every strategy); then, for each strategy, fit its model on them and
    repeat ``iterations`` times: query ``batch_size`` nodes with the strategy
    (on a random ``candidates`` fraction of the unlabeled nodes), add their
    true labels, refit (warm start). The accuracy on the unlabeled nodes is
    recorded after the initial fit and after every iteration; the time of an
    iteration is that of its query and update.

    Parameters
    ----------
    dataset : str or (X, y), default="binary-clusters"
        A name of :data:`skmcal.datasets.DATASETS` (``"binary-clusters"``,
        ``"mnist-test"``, ``"fashion-mnist"``, ``"samson"``; see
        :func:`skmcal.datasets.load_dataset`) or an
        ``(X, y)`` pair (any label values; ``-1`` is an ordinary label here).
    strategies : sequence of str, default=("mc", "vopt", "sopt", "unc", "rand")
        ``"name"`` or ``"name:loss"``, names from :data:`STRATEGIES`
        (``mc``, ``vopt``, ``sopt`` with the paper's top-k batches, each also
        with ``-greedy`` or ``-localmax`` batches (``mc-greedy``,
        ``mc-localmax``, ...), ``unc`` (margin, top-k), ``unc-greedy``,
        ``unc-entropy``, ``unc-lc``, ``rand``, and the baselines
        ``vopt-hf``, ``sopt-hf``, ``db-rkhs``).
        The loss is the model the strategy queries for and whose accuracy is
        recorded (a baseline is scored in its own model); without one,
        ``loss``. Each must be unique.
    loss : str, default="auto"
        The loss of strategies given without one; "auto": with the spectral
        model ``gr`` for two classes, ``mgr`` for more (the paper's); with
        the other models the classifier's own ``loss="auto"`` (strategies
        ``"name:auto"``).
    model : {"spectral", "full", "sum", "poisson", "auto"}, default="spectral"
        The classifier's ``model`` for every strategy (the baselines apart):
        the paper's spectral model, or one beyond it (see
        :class:`~skmcal.SpectralGraphClassifier`). ``model="auto"`` with
        ``loss="auto"`` is the classifier's defaults (spectral ``ce`` below
        50 labels, then the summed prior with ``mgr``) on the experiment's
        graph: the data set's kernel, not the classifier's choice of kernel by
        the labels (see ``kernel``). ``"sum"`` takes ``gr``, ``mgr`` and
        ``auto`` only.
    tau, gamma : float or "auto", default="auto"
        Of :class:`~skmcal.SpectralGraphClassifier`; "auto" takes its
        automatic choice for each loss and model.
    kernel : {"auto", "gaussian", "cosine", "precomputed"}, default="auto"
        "auto": cosine for ``samson``, gaussian otherwise (the paper): the
        experiment reproduces the paper's graphs, so it does not pass the
        classifier's ``kernel="auto"`` (a choice by the labels' leave-one-out predictions).
    n_neighbors : int or "auto", default="auto"
        "auto": 15 for ``samson``, 10 otherwise (the paper).
    n_eigs : int, default=50
        Eigenpairs kept.
    neighbors : {"exact", "pynndescent"}, estimator or None, default="exact"
        The kNN search of the graph. "exact" (or None): scikit-learn's exact
        neighbours, the classifier's default. "pynndescent": approximate
        neighbours by ``pynndescent.PyNNDescentTransformer`` (much faster on
        tens of thousands of points; its first call compiles numba code for
        about 30 s), with ``n_neighbors`` set to what the graph needs (the
        larger of ``n_neighbors`` and the Gaussian kernel's scale neighbour),
        the cosine metric for ``kernel="cosine"``, and
        ``random_state=seed``; needs ``pip install skmcal[fast]``. Or any
        ``KNeighborsTransformer``-compatible object (see
        :class:`~skmcal.SpectralGraphClassifier`). Recorded in the config
        (None for exact, the name, or the estimator's repr).
    n_initial : int or "auto", default="auto"
        Initial labels per class; "auto": 1 for ``binary-clusters`` (the
        paper's two initial labels), 2 otherwise; 0 (and "auto" with
        ``cold_start``): start from no label, with ``cold_start``.
    cold_start : int, default=None
        With ``n_initial=0``: the number of first labels, chosen from the
        graph alone by :func:`skmcal.cold_start` (the same for every
        strategy of a trial). While fewer than two classes are labeled, no
        model can be fitted: each iteration then takes ``batch_size`` more
        rows by :func:`skmcal.cold_start` (clusters without a label), and
        the accuracy recorded is that of predicting the one class seen
        everywhere. Classes join the model when their first label arrives.
    batch_size : int, default=5
        ``B``, nodes queried per iteration.
    iterations : int, default=100
        Active-learning iterations (queries) per strategy and trial.
    candidates : float, int or None, default=0.1
        Unlabeled nodes scored per query: a random fraction (float in
        (0, 1]), that many at random (int), or all of them (None).
    trials : int, default=5
        Independent repetitions (different initial labels and candidates).
    seed : int, default=0
        Seed of everything random. Trial ``t`` draws from
        ``SeedSequence([seed, t])``: its initial labels and the candidate
        stream (the same stream for every strategy), so each (trial,
        strategy) run can be reproduced alone.
    stop : str or sequence of str, default=None
        Stopping rules (:func:`skmcal.stopping.make_rule`: ``"kappa:0.99"``,
        ``"mc:0.01"``, ``"budget:300"``), fresh for each run and updated
        after each refit (the ``kappa`` stop set and the ``mc`` sweep drawn
        from ``SeedSequence([seed, t, 1])``, the same for every strategy of
        trial ``t``); a run ends at the first iteration where one says stop,
        ``iterations`` being then the most. Recorded in ``stops.csv`` and
        in the ``stops`` of the result.
    out : str or path-like, default=None
        Output folder (created): ``results.csv``, ``choices.csv``,
        ``config.json``, written as the run goes. An existing run with the
        same settings is resumed; different settings raise ``ValueError``.
        None: nothing is written.
    n_samples : int, default=None
        Use only the first ``n_samples`` points of the data set.
    data_home : str or path-like, default=None
        Data folder for the named data sets; None resolves it by
        :func:`skmcal.datasets.get_data_home` (``SKMCAL_DATA``, else
        ``~/skmcal_data``).
    progress : bool, default=True
        Show a tqdm progress bar with the current accuracy.
    n_jobs : int, default=None
        (trial, strategy) runs computed at once, each by a worker of
        ``backend``; -1: as many as cores (with ``"dask"``: as the cluster's
        worker threads). None: 1, or -1 with ``backend="dask"``. 1 (without
        ``"dask"``): one after another in this process. The results are
        those of the serial run, rows in the same order, whatever
        ``n_jobs`` and ``backend`` (the ``time`` column apart); resuming
        with other values is exact.
    backend : {"loky", "threading", "dask"}, default=None
        joblib's backend of the workers: ``"loky"`` (processes, the default
        when ``n_jobs`` is not 1), ``"threading"`` (threads of this process),
        or ``"dask"`` (a dask.distributed cluster: the one at ``scheduler``,
        else the current ``dask.distributed.Client``, else a
        ``LocalCluster`` of ``n_jobs`` worker processes started for the
        run; needs ``pip install skmcal[dask]``).
    scheduler : str, default=None
        Address of a dask scheduler (``"tcp://host:8786"``); implies
        ``backend="dask"``. A scheduler that cannot be reached within
        :data:`SCHEDULER_TIMEOUT` seconds raises ``ConnectionError``.
    memory : str or path-like, default=None
        Folder of the graph's disk cache (``memory`` of
        :class:`~skmcal.SpectralGraphClassifier`): the graph is built once
        and stored there, and workers and later runs load it. None: with
        worker processes, a temporary folder removed at the end; otherwise
        none. Workers that do not see the folder (on another machine) build
        the graph themselves; on a cluster, give a folder of a shared file
        system. Not part of the settings: resuming with another folder is
        allowed.

    Returns
    -------
    ExperimentResult
        ``results`` (a DataFrame with columns :data:`RESULT_COLUMNS`),
        ``choices``, ``stops``, ``config``, the data, the paths and the runs done.

    Raises
    ------
    ValueError
        On invalid settings, or when ``out`` holds a run with other settings.
    ImportError
        When ``neighbors="pynndescent"`` and pynndescent is not installed,
        or ``backend="dask"`` and dask.distributed is not.
    ConnectionError
        When the dask scheduler at ``scheduler`` cannot be reached.

    Examples
    --------
    >>> from skmcal.experiment import run_experiment
    >>> result = run_experiment(
    ...     "binary-clusters", strategies=["mc:gr", "rand:gr"], iterations=2,
    ...     trials=1, progress=False)
    >>> result.results.columns.tolist()
    ['trial', 'iteration', 'n_labeled', 'strategy', 'accuracy', 'time']
    >>> result.results.groupby("strategy", sort=False)["n_labeled"].max().to_dict()
    {'mc:gr': 12, 'rand:gr': 12}
    """
    parallel = _check_parallel(n_jobs, backend, scheduler, memory)
    config, data = _validate(
        dataset,
        data_home,
        {
            "strategies": strategies,
            "loss": loss,
            "model": model,
            "tau": tau,
            "gamma": gamma,
            "kernel": kernel,
            "n_neighbors": n_neighbors,
            "n_eigs": n_eigs,
            "neighbors": neighbors,
            "n_initial": n_initial,
            "cold_start": cold_start,
            "batch_size": batch_size,
            "iterations": iterations,
            "candidates": candidates,
            "trials": trials,
            "seed": seed,
            "stop": stop,
            "n_samples": n_samples,
        },
    )
    out_path = None if out is None else Path(out)
    store = ResultStore(out_path, config)
    pending = [
        (t, spec)
        for t in range(config.trials)
        for spec in config.specs
        if (t, spec.label) not in store.complete
    ]
    graph_seconds = None
    runs_done: list[tuple[int, str]] = []
    with contextlib.ExitStack() as stack:
        graphs = parallel.memory
        if graphs is None and parallel.backend in ("loky", "dask") and pending:
            # Worker processes load the parent's graph from here rather than build it.
            graphs = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="skmcal-graphs-", ignore_cleanup_errors=True)
            )
        runner = _Runner(config, data, graphs)
        if pending:
            # The graph and its spectrum, built once here and shared by every run
            # through the graph cache (its fit is not part of any timed iteration).
            graph_seconds = runner.build_graph(pending[0][0], pending[0][1].loss)
            logger.info("Graph and spectrum of %d nodes: %.2f s.", config.n_nodes, graph_seconds)
            if graphs is not None:
                runner.share_graph()

        bar = _make_progress(progress and bool(pending), len(pending) * config.iterations)
        try:
            with store:
                if parallel.backend is not None and pending:
                    _run_parallel(parallel, runner, pending, store, bar, runs_done)
                else:
                    for trial, spec in pending:
                        runner.run(trial, spec, store, bar)
                        runs_done.append((trial, spec.label))
        finally:
            if bar is not None:
                bar.close()

    results, choices, stops = store.frames(config.strategies)
    return ExperimentResult(
        results=results,
        choices=choices,
        config=config.record(),
        X=data.pool.data,
        y=np.asarray(data.y),
        out=out_path,
        runs_done=runs_done,
        runs_skipped=sorted(store.complete),
        graph_seconds=graph_seconds,
        stops=stops,
    )
