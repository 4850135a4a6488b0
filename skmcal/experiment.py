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
so strategies on different losses can be compared in one run.

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
``config.json``
    The settings of the run. A run into a folder that already holds one
    resumes it: (trial, strategy) runs already complete are kept, partial
    ones are dropped and redone. Settings that differ raise ``ValueError``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from . import __version__
from .baselines import BASELINES, db_rkhs, sopt_hf, vopt_hf
from .classifier import SpectralGraphClassifier
from .graph import NodeSet
from .losses import LOSSES
from .query import model_change, random_sampling, sopt, uncertainty, vopt

__all__ = [
    "DATASETS",
    "NEIGHBORS",
    "RESULT_COLUMNS",
    "CHOICE_COLUMNS",
    "STRATEGIES",
    "ExperimentResult",
    "StrategySpec",
    "load_dataset",
    "parse_strategy",
    "run_experiment",
    "summarize",
]

logger = logging.getLogger(__name__)

#: Columns of ``results.csv`` and of :attr:`ExperimentResult.results`.
RESULT_COLUMNS = ("trial", "iteration", "n_labeled", "strategy", "accuracy", "time")

#: Columns of ``choices.csv`` and of :attr:`ExperimentResult.choices`.
CHOICE_COLUMNS = ("trial", "strategy", "iteration", "node")

RESULTS_FILE = "results.csv"
CHOICES_FILE = "choices.csv"
CONFIG_FILE = "config.json"

#: Keys of ``config.json`` not compared when resuming.
_UNCOMPARED_KEYS = frozenset({"skmcal_version"})

#: Query strategies by name: the :mod:`skmcal.query` function and its options.
STRATEGIES: dict[str, tuple[Callable, dict[str, Any]]] = {
    "mc": (model_change, {}),
    "mc-greedy": (model_change, {"batch": "greedy"}),
    "vopt": (vopt, {}),
    "vopt-greedy": (vopt, {"batch": "greedy"}),
    "sopt": (sopt, {}),
    "sopt-greedy": (sopt, {"batch": "greedy"}),
    "unc": (uncertainty, {"measure": "margin"}),
    "unc-entropy": (uncertainty, {"measure": "entropy"}),
    "unc-lc": (uncertainty, {"measure": "least_confident"}),
    "rand": (random_sampling, {}),
    # The paper's baselines, in their own models (skmcal.baselines): the loss
    # only sets the classifier that provides the graph and the labeled nodes.
    "vopt-hf": (vopt_hf, {}),
    "sopt-hf": (sopt_hf, {}),
    "db-rkhs": (db_rkhs, {}),
}

#: Data sets known by name: graph defaults of the paper and labels per class
#: at the start (Binary-Clusters: one per class; the others: two).
DATASETS: dict[str, dict[str, Any]] = {
    "binary-clusters": {"kernel": "gaussian", "n_neighbors": 10, "n_initial": 1},
    "mnist-test": {"kernel": "gaussian", "n_neighbors": 10, "n_initial": 2},
    "fashion-mnist": {"kernel": "gaussian", "n_neighbors": 10, "n_initial": 2},
    "samson": {"kernel": "cosine", "n_neighbors": 15, "n_initial": 2},
}

#: Defaults of a data set given as an ``(X, y)`` pair.
_CUSTOM_DEFAULTS = {"kernel": "gaussian", "n_neighbors": 10, "n_initial": 2}

#: kNN searches known by name (``neighbors=`` of :func:`run_experiment`):
#: exact neighbours by scikit-learn, or pynndescent's approximate ones.
NEIGHBORS = ("exact", "pynndescent")


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
        A loss of :class:`~skmcal.SpectralGraphClassifier`.
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
        and a loss (``gr``, ``logistic``, ``probit``, ``mgr``, ``ce``).
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
    {'measure': 'margin'}
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
    if loss not in LOSSES:
        raise ValueError(
            f"Unknown loss {loss!r} in strategy {spec!r}; accepted: {', '.join(LOSSES)}."
        )
    return StrategySpec(name, loss)


def load_dataset(
    name: str,
    *,
    n_samples: int | None = None,
    data_home: str | os.PathLike[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load a data set of :data:`DATASETS` by name.

    Parameters
    ----------
    name : {"binary-clusters", "mnist-test", "fashion-mnist", "samson"}
        The data set.
    n_samples : int, default=None
        Keep only the first ``n_samples`` points. None keeps all.
    data_home : str or path-like, default=None
        The data folder for the loaders of :mod:`skmcal.datasets`; None
        takes each loader's default.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    """
    from . import datasets

    key = name.lower() if isinstance(name, str) else name
    home = {} if data_home is None else {"data_home": data_home}
    if key == "binary-clusters":
        X, y = datasets.make_binary_clusters()
    elif key == "mnist-test":
        X, y = datasets.load_mnist_test(n_samples=n_samples, **home)
    elif key == "fashion-mnist":
        X, y = datasets.load_fashion_mnist(n_samples=n_samples, **home)
    elif key == "samson":
        X, y = datasets.load_hsi("samson", **home)
    else:
        raise ValueError(
            f"Unknown data set {name!r}; accepted: {', '.join(DATASETS)}, or an (X, y) pair."
        )
    if n_samples is not None:
        X, y = X[:n_samples], y[:n_samples]
    return X, y


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
        ``strategy``, ``n_labeled`` (at the last iteration), ``accuracy_mean``,
        ``accuracy_std`` (population std over trials, 0 for one trial),
        ``time_mean`` (seconds per iteration, iterations >= 1) and ``trials``.
    """
    rows = []
    for strategy in pd.unique(results["strategy"]):
        part = results[results["strategy"] == strategy]
        last = part[part["iteration"] == part["iteration"].max()]
        accuracy = last["accuracy"].to_numpy(dtype=float)
        times = part["time"].to_numpy(dtype=float)
        times = times[np.isfinite(times)]
        rows.append(
            {
                "strategy": strategy,
                "n_labeled": int(last["n_labeled"].max()),
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


def _check_candidates(candidates):
    if candidates is None:
        return None
    if isinstance(candidates, bool) or not isinstance(candidates, Real):
        raise ValueError(
            "candidates must be None (every unlabeled node), a fraction in (0, 1] or "
            f"an int >= 1; got {candidates!r}."
        )
    if isinstance(candidates, Integral):
        return _check_int(candidates, "candidates as an int", 1)
    if not 0 < candidates <= 1:
        raise ValueError(f"candidates as a float must be a fraction in (0, 1]; got {candidates}.")
    return float(candidates)


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
        X, y = load_dataset(dataset, n_samples=n_samples, data_home=data_home)
        return dataset.lower(), X, y, DATASETS[dataset.lower()]
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


def _parse_choice(row):
    trial, strategy, iteration, node = row
    return {
        "trial": int(trial),
        "strategy": strategy,
        "iteration": int(iteration),
        "node": int(node),
    }


def _compare_configs(saved: dict, config: dict, path: Path) -> None:
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
    """Results and choices of the complete runs found in ``out``; partial ones dropped.

    A run is complete when ``results.csv`` holds its iterations 0 to
    ``iterations`` once each, and ``choices.csv`` its ``n_chosen[0]`` initial
    nodes and ``n_chosen[1]`` nodes at every iteration.
    """
    config_path = out / CONFIG_FILE
    results_path, choices_path = out / RESULTS_FILE, out / CHOICES_FILE
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

    seen: dict[tuple[int, str], list[int]] = {}
    for row in results:
        seen.setdefault((row["trial"], row["strategy"]), []).append(row["iteration"])
    chosen: dict[tuple[int, str], list[int]] = {}
    for row in choices:
        chosen.setdefault((row["trial"], row["strategy"]), []).append(row["iteration"])
    want_iterations = list(range(iterations + 1))
    want_chosen = [0] * n_chosen[0] + sorted(list(range(1, iterations + 1)) * n_chosen[1])
    complete = {
        run
        for run, its in seen.items()
        if run in expected
        and sorted(its) == want_iterations
        and sorted(chosen.get(run, [])) == want_chosen
    }
    results = [r for r in results if (r["trial"], r["strategy"]) in complete]
    choices = [c for c in choices if (c["trial"], c["strategy"]) in complete]
    return results, choices, complete


# --------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------


class _Sink:
    """Rows kept in memory and, with an output folder, appended to the CSV files."""

    def __init__(self, out: Path | None, results: list, choices: list):
        self.results, self.choices = results, choices
        self._files = []
        self._results_writer = self._choices_writer = None
        if out is not None:
            self._results_writer = self._open(out / RESULTS_FILE)
            self._choices_writer = self._open(out / CHOICES_FILE)

    def _open(self, path):
        f = path.open("a", encoding="utf-8", newline="")
        self._files.append(f)
        return f, csv.writer(f, lineterminator="\n")

    def add_choices(self, trial, strategy, iteration, nodes):
        rows = [
            {"trial": trial, "strategy": strategy, "iteration": iteration, "node": int(n)}
            for n in nodes
        ]
        self.choices.extend(rows)
        if self._choices_writer is not None:
            f, writer = self._choices_writer
            writer.writerows([[r[c] for c in CHOICE_COLUMNS] for r in rows])
            f.flush()

    def add_result(self, row):
        self.results.append(row)
        if self._results_writer is not None:
            f, writer = self._results_writer
            writer.writerow(_result_fields(row))
            f.flush()

    def close(self):
        for f in self._files:
            f.close()


def _make_progress(progress, total):
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            warnings.warn(
                "progress=True needs tqdm (pip install tqdm); running without a progress bar.",
                UserWarning,
                stacklevel=3,
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


def _n_labeled(clf) -> int:
    """Distinct points labeled: equal nodes count once."""
    return int(np.unique(clf.node_set_.first_equal[clf.labeled_nodes_]).size)


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


def run_experiment(
    dataset: str | tuple = "binary-clusters",
    *,
    strategies: Sequence[str] = ("mc", "vopt", "sopt", "unc", "rand"),
    loss: str = "auto",
    tau: float | str = "auto",
    gamma: float | str = "auto",
    kernel: str = "auto",
    n_neighbors: int | str = "auto",
    n_eigs: int = 50,
    neighbors: Any = "exact",
    n_initial: int | str = "auto",
    batch_size: int = 5,
    iterations: int = 100,
    candidates: float | int | None = 0.1,
    trials: int = 5,
    seed: int = 0,
    out: str | os.PathLike[str] | None = None,
    n_samples: int | None = None,
    data_home: str | os.PathLike[str] | None = None,
    progress: bool = True,
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
        A name of :data:`DATASETS` (``"binary-clusters"``, ``"mnist-test"``,
        ``"fashion-mnist"``, ``"samson"``; see :func:`load_dataset`) or an
        ``(X, y)`` pair (any label values; ``-1`` is an ordinary label here).
    strategies : sequence of str, default=("mc", "vopt", "sopt", "unc", "rand")
        ``"name"`` or ``"name:loss"``, names from :data:`STRATEGIES`
        (``mc``, ``mc-greedy``, ``vopt``, ``vopt-greedy``, ``sopt``,
        ``sopt-greedy``, ``unc`` (margin), ``unc-entropy``, ``unc-lc``,
        ``rand``, and the baselines ``vopt-hf``, ``sopt-hf``, ``db-rkhs``).
        The loss is the model the strategy queries for and whose accuracy is
        recorded (a baseline is scored in its own model); without one,
        ``loss``. Each must be unique.
    loss : str, default="auto"
        The loss of strategies given without one; "auto": ``gr`` for two
        classes, ``mgr`` for more.
    tau, gamma : float or "auto", default="auto"
        Of :class:`~skmcal.SpectralGraphClassifier`; "auto" takes the paper's
        value for each loss.
    kernel : {"auto", "gaussian", "cosine", "precomputed"}, default="auto"
        "auto": cosine for ``samson``, gaussian otherwise (the paper).
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
        paper's two initial labels), 2 otherwise.
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
    out : str or path-like, default=None
        Output folder (created): ``results.csv``, ``choices.csv``,
        ``config.json``, written as the run goes. An existing run with the
        same settings is resumed; different settings raise ``ValueError``.
        None: nothing is written.
    n_samples : int, default=None
        Use only the first ``n_samples`` points of the data set.
    data_home : str or path-like, default=None
        Data folder for the named data sets (see :mod:`skmcal.datasets`).
    progress : bool, default=True
        Show a tqdm progress bar with the current accuracy.

    Returns
    -------
    ExperimentResult
        ``results`` (a DataFrame with columns :data:`RESULT_COLUMNS`),
        ``choices``, ``config``, the data, the paths and the runs done.

    Raises
    ------
    ValueError
        On invalid settings, or when ``out`` holds a run with other settings.
    ImportError
        When ``neighbors="pynndescent"`` and pynndescent is not installed.

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
    batch_size = _check_int(batch_size, "batch_size", 1)
    iterations = _check_int(iterations, "iterations", 0)
    trials = _check_int(trials, "trials", 1)
    seed = _check_int(seed, "seed", 0)
    n_eigs = _check_int(n_eigs, "n_eigs", 1)
    candidates = _check_candidates(candidates)
    tau = _check_positive_or_auto(tau, "tau")
    gamma = _check_positive_or_auto(gamma, "gamma")
    _check_neighbors(neighbors)
    if n_samples is not None:
        n_samples = _check_int(n_samples, "n_samples", 2)
    if isinstance(strategies, str):
        strategies = [strategies]
    if not strategies:
        raise ValueError("strategies is empty; give at least one strategy.")

    start = time.perf_counter()
    name, X, y, defaults = _resolve_dataset(dataset, n_samples, data_home)
    logger.info(
        "Data %s: %d x %d loaded in %.2f s.", name, *X.shape, time.perf_counter() - start
    )
    pool = NodeSet(X)
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    codes = codes.astype(np.intp).reshape(-1)
    n_nodes, n_classes = pool.n_nodes, classes.size
    if codes.size != n_nodes:
        raise ValueError(f"X has {n_nodes} rows but y has {codes.size} labels.")
    if n_classes < 2:
        raise ValueError(f"The data hold {n_classes} class; active learning needs at least 2.")

    if loss == "auto":
        loss = "gr" if n_classes == 2 else "mgr"
    elif loss not in LOSSES:
        raise ValueError(f"Unknown loss {loss!r}; accepted: 'auto', {', '.join(LOSSES)}.")
    specs = [parse_strategy(s, loss) for s in strategies]
    labels = [s.label for s in specs]
    repeated = sorted({lab for lab in labels if labels.count(lab) > 1})
    if repeated:
        raise ValueError(f"Strategies given more than once: {repeated} (from {list(strategies)}).")
    for spec in specs:
        if n_classes > 2 and spec.name in BASELINES and BASELINES[spec.name].binary_only:
            raise ValueError(
                f"Strategy {spec.label!r} is binary only, but the data hold {n_classes} classes."
            )
        if n_classes > 2 and not LOSSES[spec.loss].multiclass:
            raise ValueError(
                f"Strategy {spec.label!r} uses the binary loss {spec.loss!r}, but the data "
                f"hold {n_classes} classes; use mgr or ce."
            )

    kernel = defaults["kernel"] if kernel == "auto" else kernel
    if n_neighbors == "auto":
        n_neighbors = defaults["n_neighbors"]
    n_neighbors = _check_int(n_neighbors, "n_neighbors", 1)
    if n_initial == "auto":
        n_initial = defaults["n_initial"]
    n_initial = _check_int(n_initial, "n_initial", 1)
    # Equal rows are one point: initial labels are drawn among distinct points
    # (the first of equal nodes), and every count below is of distinct points.
    points = pool.first_equal == np.arange(n_nodes)
    n_points = int(points.sum())
    smallest = int(np.bincount(codes[points], minlength=n_classes).min())
    if n_initial > smallest:
        raise ValueError(
            f"n_initial={n_initial} labels per class, but the smallest class has {smallest} points."
        )
    n_final = n_initial * n_classes + iterations * batch_size
    if n_final >= n_points:
        raise ValueError(
            f"{n_initial} x {n_classes} initial labels + {iterations} iterations x "
            f"{batch_size} queries = {n_final} labels, but there are only {n_points} "
            f"distinct points (at least one must stay unlabeled)."
        )

    knn = _neighbors_estimator(
        neighbors, kernel=kernel, n_neighbors=n_neighbors, n_nodes=n_nodes, seed=seed
    )
    # Exact neighbours are recorded as None, as in the configs written before the names.
    neighbors_config = (
        None if knn is None else neighbors if isinstance(neighbors, str) else repr(neighbors)
    )

    config = {
        "dataset": name,
        "n_samples": n_samples,
        "n_nodes": n_nodes,
        "n_features": pool.n_features,
        "n_classes": n_classes,
        "data_digest": pool.digest,
        "labels_digest": _labels_digest(classes, codes),
        "kernel": kernel,
        "n_neighbors": n_neighbors,
        "n_eigs": n_eigs,
        "neighbors": neighbors_config,
        "loss": loss,
        "tau": tau,
        "gamma": gamma,
        "strategies": labels,
        "n_initial": n_initial,
        "batch_size": batch_size,
        "iterations": iterations,
        "candidates": candidates,
        "trials": trials,
        "seed": seed,
        "skmcal_version": __version__,
    }
    config = json.loads(json.dumps(config))

    expected = {(t, lab) for t in range(trials) for lab in labels}
    results: list[dict] = []
    choices: list[dict] = []
    complete: set[tuple[int, str]] = set()
    out_path = None
    if out is not None:
        out_path = Path(out)
        try:
            out_path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            files = [p for p in (out_path, *out_path.parents) if p.is_file()]
            reason = f"{files[0]} is a file" if files else exc.strerror or str(exc)
            raise ValueError(f"Cannot use {out_path} as the output folder: {reason}.") from None
        results, choices, complete = _load_previous(
            out_path, config, expected, iterations, (n_initial * n_classes, batch_size)
        )
        _write_csv(out_path / RESULTS_FILE, RESULT_COLUMNS, map(_result_fields, results))
        _write_csv(
            out_path / CHOICES_FILE,
            CHOICE_COLUMNS,
            ([c[k] for k in CHOICE_COLUMNS] for c in choices),
        )
        (out_path / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        if complete:
            logger.info(
                "Resuming %s: %d of %d runs complete.", out_path, len(complete), len(expected)
            )

    def make_classifier(spec_loss):
        return SpectralGraphClassifier(
            spec_loss,
            nodes=pool,
            kernel=kernel,
            n_neighbors=n_neighbors,
            n_eigs=n_eigs,
            neighbors=knn,
            tau=tau,
            gamma=gamma,
        )

    def initial_labels(trial):
        eligible = np.where(points, codes, -1)  # -1: a copy, never drawn
        return _initial_labels(eligible, n_classes, n_initial, _trial_seeds(seed, trial)[0])

    data = pool.data
    pending = [
        (t, spec) for t in range(trials) for spec in specs if (t, spec.label) not in complete
    ]
    graph_seconds = None
    if pending:
        # The graph and its spectrum, built once here and shared by every run
        # through the graph cache (its fit is not part of any timed iteration).
        start = time.perf_counter()
        first = initial_labels(pending[0][0])
        make_classifier(pending[0][1].loss).fit(data[first], codes[first])
        graph_seconds = time.perf_counter() - start
        logger.info("Graph and spectrum of %d nodes: %.2f s.", n_nodes, graph_seconds)

    runs_done = []
    bar = _make_progress(progress and bool(pending), len(pending) * iterations)
    sink = _Sink(out_path, results, choices)
    try:
        for trial, spec in pending:
            labeled = initial_labels(trial)
            rng = np.random.RandomState(_trial_seeds(seed, trial)[1])
            clf = make_classifier(spec.loss)
            clf.fit(data[labeled], codes[labeled])
            if bar is not None:
                bar.set_description(f"trial {trial + 1}/{trials} {spec.label}")
            sink.add_choices(trial, spec.label, 0, labeled)
            accuracy = _accuracy(clf, codes, spec.name)
            sink.add_result(
                {
                    "trial": trial,
                    "iteration": 0,
                    "n_labeled": _n_labeled(clf),
                    "strategy": spec.label,
                    "accuracy": accuracy,
                    "time": math.nan,
                }
            )
            baseline = BASELINES.get(spec.name)
            for iteration in range(1, iterations + 1):
                start = time.perf_counter()
                if baseline is not None and baseline.needs_labels:
                    extra = {"labels": codes[clf.labeled_nodes_]}
                else:
                    extra = {}
                queried, _ = spec.function(
                    clf,
                    pool,
                    batch_size,
                    candidates=candidates,
                    random_state=rng,
                    **spec.options,
                    **extra,
                )
                labeled = np.concatenate([labeled, queried])
                clf.fit(data[labeled], codes[labeled])
                seconds = time.perf_counter() - start
                accuracy = _accuracy(clf, codes, spec.name)
                sink.add_choices(trial, spec.label, iteration, queried)
                sink.add_result(
                    {
                        "trial": trial,
                        "iteration": iteration,
                        "n_labeled": _n_labeled(clf),
                        "strategy": spec.label,
                        "accuracy": accuracy,
                        "time": seconds,
                    }
                )
                if bar is not None:
                    bar.set_postfix_str(f"acc={accuracy:.4f}", refresh=False)
                    bar.update(1)
            runs_done.append((trial, spec.label))
    finally:
        sink.close()
        if bar is not None:
            bar.close()

    order = {lab: i for i, lab in enumerate(labels)}

    def in_run_order(rows, columns, dtypes):
        frame = pd.DataFrame(rows, columns=list(columns)).sort_values(
            ["trial", "strategy", "iteration"],
            key=lambda col: col.map(order) if col.name == "strategy" else col,
            kind="stable",
        )
        return frame.reset_index(drop=True).astype(dtypes)

    results_df = in_run_order(
        results,
        RESULT_COLUMNS,
        {"trial": int, "iteration": int, "n_labeled": int, "accuracy": float, "time": float},
    )
    choices_df = in_run_order(
        choices, CHOICE_COLUMNS, {"trial": int, "iteration": int, "node": int}
    )
    return ExperimentResult(
        results=results_df,
        choices=choices_df,
        config=config,
        X=data,
        y=np.asarray(y),
        out=out_path,
        runs_done=runs_done,
        runs_skipped=sorted(complete),
        graph_seconds=graph_seconds,
    )
