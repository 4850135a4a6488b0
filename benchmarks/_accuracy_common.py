"""Pieces of ``bench_accuracy.py``: data sets, shared draws, the three families of learners.

A *learner* runs one active-learning loop on one data set. Every family has
the same four methods, so the loop in ``bench_accuracy.py`` never asks which
one it holds:

``start(labeled)``
    Fit on the initial labels (node indices; the true labels are known).
``query(candidates, batch, rng)``
    ``batch`` node indices chosen among ``candidates`` by the strategy.
``add(nodes)``
    Teach the true labels of ``nodes`` and refit.
``predict()``
    The predicted class code of every node.

Random picks (strategy ``rand``) are made here, the same way for every family,
so that in a trial every ``rand`` configuration labels the very same nodes.
"""

from __future__ import annotations

import csv
import inspect
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import _harness as h
import numpy as np

import skmcal
from skmcal import NodeSet, SpectralGraphClassifier

#: Number of labels at the start of every trial, and labels per query batch.
N_START = 20
BATCH = 5
#: Fraction of the unlabeled nodes offered as candidates to each query.
CANDIDATE_FRACTION = 0.1
#: Labels at the end of a run (the default; :func:`set_final` changes the run's), and
#: the label counts reported in the tables (those below the end, and the end).
N_FINAL = 500
REPORTED = [20, 50, 100, 200, 500]
#: Label counts after the start and after each batch: a row of the CSV each.
CHECKPOINTS = list(range(N_START, N_FINAL + 1, BATCH))


def set_final(n_final: int) -> None:
    """End the runs at ``n_final`` labels (``--final``: small data sets): ``CHECKPOINTS``
    and ``REPORTED`` are changed in place, so that every module reading them agrees."""
    if n_final < 50 or (n_final - N_START) % BATCH:
        raise ValueError(
            f"--final must be at least 50, {N_START} and a multiple of {BATCH}; got {n_final}."
        )
    CHECKPOINTS[:] = range(N_START, n_final + 1, BATCH)
    REPORTED[:] = [n for n in (20, 50, 100, 200, 500) if n < n_final] + [n_final]


#: Columns of ``<dataset>.csv``.
COLUMNS = ("dataset", "method", "trial", "n_labels", "accuracy", "seconds")


def read_rows(path: Path) -> list[dict]:
    """The rows of a results CSV (none when absent), typed."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    text = text[: text.rfind("\n") + 1]  # a last line cut mid-write is dropped
    rows = [r for r in csv.DictReader(text.splitlines()) if None not in r.values()]
    for r in rows:
        r["trial"], r["n_labels"] = int(r["trial"]), int(r["n_labels"])
        r["accuracy"], r["seconds"] = float(r["accuracy"]), float(r["seconds"])
    return rows


def start_path(config: Config, name: str, pool, codes, seed: int, trial: int):
    """``(learner, labeled, rng)`` of an skmcal ``config`` on data set ``name`` at trial
    ``trial``: started on :func:`initial_labels`, with the trial's tie-break generator
    (:func:`tie_break_rng`); :func:`query_batch` goes on."""
    learner = SkmcalLearner(config, pool, codes, DATASETS[name])
    labeled, rng = initial_labels(codes, seed, trial), tie_break_rng(seed, trial)
    learner.start(labeled)
    return learner, labeled, rng


def query_batch(learner, labeled, n_nodes, seed, trial, batch, rng) -> np.ndarray:
    """Query batch number ``batch`` of ``BATCH`` nodes among that batch's candidates
    (:func:`candidates`), teach them to ``learner``, and return the labeled nodes."""
    offered = candidates(labeled, n_nodes, seed, trial, batch)
    nodes = np.asarray(learner.query(offered, BATCH, rng), dtype=np.intp)
    learner.add(nodes)
    return np.concatenate([labeled, nodes])


def state_runs(path: Path, columns, key, datasets, strategies, trials, load, run) -> list:
    """The rows of the CSV at ``path``, extended by the runs it lacks (state benchmarks).

    For each data set of ``datasets`` that ``load(name) -> (X, y)`` finds (a missing
    file is skipped with a message), each strategy and each trial in ``range(trials)``
    whose row key ``(*key, name, strategy, trial)`` is not in the file yet,
    ``run(name, pool, X, codes, strategy, trial, emit)`` is called, ``emit(*values)``
    adding the row ``(*key, name, strategy, trial, *values)`` over ``columns``; a run's
    rows are appended to the file when it ends. Rows are dicts of strings; with no
    ``datasets``, the file's rows alone (a report).
    """
    rows = list(csv.DictReader(path.open(encoding="utf-8"))) if path.exists() else []
    width = len(key) + 3
    done = {tuple(r[c] for c in columns[:width]) for r in rows}
    for name in datasets:
        try:
            X, y = load(name)
        except (FileNotFoundError, OSError) as exc:
            print(f"{name}: skipped, data not found ({exc})", flush=True)
            continue
        X = np.asarray(X, dtype=np.float64)
        codes = np.unique(y, return_inverse=True)[1].reshape(-1).astype(np.intp)
        pool = NodeSet(X)
        for strategy in strategies:
            for trial in range(trials):
                head = (*key, name, strategy, trial)
                if tuple(str(v) for v in head) in done:
                    continue
                start, new = time.perf_counter(), []

                def emit(*values, head=head, new=new):
                    new.append(dict(zip(columns, (*head, *values), strict=True)))

                run(name, pool, X, codes, strategy, trial, emit)
                with path.open("a", newline="", encoding="utf-8") as f:
                    writer = csv.DictWriter(f, columns, lineterminator="\n")
                    if f.tell() == 0:
                        writer.writeheader()
                    writer.writerows(new)
                rows += [{k: str(v) for k, v in r.items()} for r in new]
                elapsed = time.perf_counter() - start
                print(f"{name} {strategy} trial {trial}: {elapsed:.1f} s", flush=True)
    return rows


@dataclass(frozen=True)
class Data:
    """A data set of the benchmark: its loader and the graph that every method uses."""

    load: Callable[[Any], tuple[np.ndarray, np.ndarray]]
    kernel: str = "gaussian"
    n_neighbors: int = 10


def _binary_clusters(home):
    from skmcal.datasets import make_binary_clusters

    return make_binary_clusters()


def _digits(home):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def _mnist_test(home):
    from skmcal.datasets import load_mnist_test

    return load_mnist_test(h.data_home(home))


def _samson(home):
    from skmcal.datasets import load_hsi

    return load_hsi("samson", data_home=h.data_home(home))


def _fashion_mnist(home):
    """From ``--data-home`` where given and it holds the files (its ``fashion-mnist``
    folder or itself), else by the loader's own search (the data home, then Debian's
    ``/usr/share/datasets/fashion-mnist``)."""
    from skmcal.datasets import load_fashion_mnist

    if home is not None:
        try:
            return load_fashion_mnist(data_home=home)
        except FileNotFoundError:
            pass
    return load_fashion_mnist()


#: The data sets, cheapest first. Samson: cosine graph, 15 neighbours (the paper).
DATASETS = {
    "binary-clusters": Data(_binary_clusters),
    "digits": Data(_digits),
    "mnist-test": Data(_mnist_test),
    "samson": Data(_samson, kernel="cosine", n_neighbors=15),
    "fashion-mnist": Data(_fashion_mnist),
}

_CLASSIFIER_DEFAULTS = inspect.signature(SpectralGraphClassifier).parameters
#: The classifier's default graph where it does not choose its kernel (``kernel="auto"``
#: takes the Gaussian kernel then): what ``--graph default`` gives every method.
DEFAULT_GRAPH = {
    "kernel": "gaussian",
    "n_neighbors": _CLASSIFIER_DEFAULTS["n_neighbors"].default,
}
#: Suffix of the results of a data set run on the default graph where its own differs.
DEFAULT_GRAPH_SUFFIX = "@default-graph"


def dataset_graph(name: str, graph: str) -> tuple[str, Data]:
    """The results name and the :class:`Data` of data set ``name`` on ``graph``.

    ``graph="data"``: the data set's own graph (``DATASETS``), results under
    ``name``. ``graph="default"``: the classifier's default graph
    (:data:`DEFAULT_GRAPH`) for every method, peers included; the results go
    under ``name + DEFAULT_GRAPH_SUFFIX`` where the data set's graph differs
    (``samson@default-graph``), else under ``name`` (the same runs).
    """
    data = DATASETS[name]
    if graph == "data":
        return name, data
    default = replace(data, **DEFAULT_GRAPH)
    return (name if default == data else name + DEFAULT_GRAPH_SUFFIX), default


@dataclass(frozen=True)
class Config:
    """One method of the benchmark: a model family, its parameters and a query strategy.

    ``family`` is ``skmcal`` (``params`` go to ``SpectralGraphClassifier``),
    ``gl-laplace`` / ``gl-poisson`` (graphlearning's Laplace / Poisson
    learning and its active learner) or ``ls`` (scikit-learn's
    LabelSpreading). ``strategy`` is one of ``mc``, ``vopt``, ``sopt``,
    ``unc`` (margin), ``rand``, or an skmcal strategy with options
    (``options``, e.g. ``{"batch": "greedy"}``). ``classes`` says on which data
    the method runs: ``binary``, ``multiclass`` or ``any``. ``data_graph``:
    skmcal uses the data set's kernel and neighbours (False: the classifier's
    own defaults, as a new user would).
    """

    family: str
    strategy: str
    params: dict = field(default_factory=dict)
    classes: str = "any"
    options: dict = field(default_factory=dict)
    data_graph: bool = True

    def runs_on(self, n_classes: int) -> bool:
        return self.classes == "any" or (self.classes == "binary") == (n_classes == 2)


# ------------------------------------------------------------------ the draws
def _rng(seed: int, trial: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, trial, stream])


def initial_labels(codes: np.ndarray, seed: int, trial: int) -> np.ndarray:
    """``N_START`` nodes, as even over the classes as possible: ``N_START // C`` per class,
    then one more in each of ``N_START % C`` classes drawn at random."""
    rng = _rng(seed, trial, 0)
    n_classes = int(codes.max()) + 1
    per_class = np.full(n_classes, N_START // n_classes)
    per_class[rng.choice(n_classes, N_START % n_classes, replace=False)] += 1
    picks = [
        rng.choice(np.flatnonzero(codes == c), per_class[c], replace=False)
        for c in range(n_classes)
    ]
    return np.concatenate(picks)


def candidates(labeled: np.ndarray, n_nodes: int, seed: int, trial: int, batch: int):
    """A random ``CANDIDATE_FRACTION`` of the unlabeled nodes for query number ``batch``.

    The nodes come in an order drawn once per (trial, batch); the candidates
    are the first unlabeled ones in that order. Methods with the same labeled
    nodes get the same candidates, and methods that differ by a few labels
    nearly the same.
    """
    order = _rng(seed, trial, batch).permutation(n_nodes)
    is_labeled = np.zeros(n_nodes, dtype=bool)
    is_labeled[labeled] = True
    unlabeled = order[~is_labeled[order]]
    size = max(BATCH, math.ceil(CANDIDATE_FRACTION * unlabeled.size))
    return np.sort(unlabeled[:size])


def tie_break_rng(seed: int, trial: int) -> np.random.RandomState:
    """The stream of random picks and tie breaks of a trial, the same for every method."""
    return np.random.RandomState(np.random.SeedSequence([seed, trial, 1 << 20]).generate_state(1))


def _best(cands, scores, batch, rng):
    """The ``batch`` candidates of largest score, ties broken at random."""
    shuffled = rng.permutation(cands.size)
    best = shuffled[np.argsort(-scores[shuffled], kind="stable")[:batch]]
    return cands[best]


def _random(cands, batch, rng):
    return rng.choice(cands, batch, replace=False)


# ------------------------------------------------------------------ learners
class PeerGraphs:
    """The peers' graphs of one data set, each built on first use and kept (not timed)."""

    def __init__(self, X: np.ndarray, data: Data, log: Callable[[str], None]):
        self.X, self.data, self.log = X, data, log

    def _timed(self, what, build):
        start = time.perf_counter()
        value = build()
        self.log(f"  {what}: {time.perf_counter() - start:.1f} s")
        return value

    @cached_property
    def gl_weights(self):
        import graphlearning as gl

        similarity = "angular" if self.data.kernel == "cosine" else "euclidean"
        return self._timed(
            f"gl.weightmatrix.knn(X, {self.data.n_neighbors}, similarity={similarity!r})",
            lambda: gl.weightmatrix.knn(self.X, self.data.n_neighbors, similarity=similarity),
        )

    @cached_property
    def gl_eigen(self):
        import graphlearning as gl

        return self._timed(
            "gl.graph(W).eigen_decomp(normalization='normalized', k=50)",
            lambda: gl.graph(self.gl_weights).eigen_decomp(normalization="normalized", k=50),
        )

    @cached_property
    def ls_knn(self):
        from sklearn.neighbors import NearestNeighbors

        k = self.data.n_neighbors
        return self._timed(
            f"LabelSpreading's kNN connectivity (k = {k})",
            lambda: (
                NearestNeighbors(n_neighbors=k)
                .fit(self.X)
                .kneighbors_graph(self.X, k, mode="connectivity")
            ),
        )


#: The configurations' strategies, with the paper's top-k batches unless a
#: configuration's options say otherwise (``default`` takes skmcal's defaults).
_SKMCAL_STRATEGIES = {
    "mc": (skmcal.model_change, {"batch": "topk"}),
    "vopt": (skmcal.vopt, {"batch": "topk"}),
    "sopt": (skmcal.sopt, {"batch": "topk"}),
    "unc": (skmcal.uncertainty, {"measure": "margin", "batch": "topk"}),
}


class SkmcalLearner:
    """``SpectralGraphClassifier(nodes=pool, **params)`` with an skmcal query strategy.

    ``memory``: the classifier's disk cache of graphs (``--memory``), so that
    later invocations load the graph and its spectrum instead of building them.
    """

    def __init__(self, config: Config, pool: NodeSet, codes: np.ndarray, data: Data, memory=None):
        params = dict(config.params)
        if config.data_graph:
            params = {"kernel": data.kernel, "n_neighbors": data.n_neighbors, **params}
        self.clf = SpectralGraphClassifier(nodes=pool, memory=memory, **params)
        self.pool, self.codes, self.config = pool, codes, config

    def _fit(self):
        self.clf.fit(self.pool.data[self.labeled], self.codes[self.labeled])

    def start(self, labeled):
        self.labeled = np.asarray(labeled)
        self._fit()

    def query(self, cands, batch, rng):
        if self.config.strategy == "rand":
            return _random(cands, batch, rng)
        function, options = _SKMCAL_STRATEGIES[self.config.strategy]
        options = {**options, **self.config.options}
        nodes, _ = function(
            self.clf, self.pool, batch, candidates=cands, random_state=rng, **options
        )
        return nodes

    def add(self, nodes):
        self.labeled = np.concatenate([self.labeled, nodes])
        self._fit()

    def predict(self):
        return self.clf.transduction_


class GraphLearningLearner:
    """graphlearning's ``active_learner`` over ``gl.ssl.laplace(W)`` or ``gl.ssl.poisson(W)``.

    ``W`` is graphlearning's own kNN graph (``gl.weightmatrix.knn``, its
    Gaussian weights, annoy search above 5 dimensions, angular similarity for
    a cosine data set); ``mc`` and ``vopt`` get the spectral covariance
    ``C = diag(1 / (evals + 1e-11))``, ``V = evecs`` of its 50 smallest
    normalised-Laplacian eigenpairs.

    graphlearning's models take the classes of the labels they are given as
    all the classes (with a class missing from the labels, Laplace learning
    fails). The learner gets the labels as codes of the classes labeled so
    far, its scores map back to those classes, and a batch that brings a new
    class starts it afresh on every label (``restarts``). Where the first
    labels hold every class, nothing of this changes what it does.
    """

    ACQUISITIONS = {
        "mc": "model_change",
        "vopt": "var_opt",
        "unc": "unc_sampling",
        "rand": "unc_sampling",
    }

    def __init__(self, config: Config, graphs: PeerGraphs, codes: np.ndarray):
        self.config, self.graphs, self.codes = config, graphs, codes
        self.restarts = 0

    def _local(self, nodes):
        """The codes of ``nodes``' labels among the classes labeled so far."""
        return np.searchsorted(self.present, self.codes[nodes])

    def start(self, labeled):
        import graphlearning as gl

        labeled = np.asarray(labeled)
        self.labeled, self.present = labeled, np.unique(self.codes[labeled])
        W = self.graphs.gl_weights
        model = gl.ssl.laplace(W) if self.config.family == "gl-laplace" else gl.ssl.poisson(W)
        name = self.ACQUISITIONS[self.config.strategy]
        kwargs = {}
        if name in ("model_change", "var_opt"):
            evals, evecs = self.graphs.gl_eigen
            kwargs = {"C": np.diag(1.0 / (evals + 1e-11)), "V": evecs}
        self.al = gl.active_learning.active_learner(
            model, getattr(gl.active_learning, name), labeled, self._local(labeled), **kwargs
        )

    def query(self, cands, batch, rng):
        if self.config.strategy == "rand":
            return _random(cands, batch, rng)
        return self.al.select_queries(batch_size=batch, candidate_ind=cands)

    def add(self, nodes):
        if np.isin(self.codes[nodes], self.present).all():
            self.al.update(nodes, self._local(nodes))
            self.labeled = np.concatenate([self.labeled, nodes])
        else:  # a new class: graphlearning's model cannot grow one
            self.restarts += 1
            self.start(np.concatenate([self.labeled, nodes]))

    def predict(self):
        return self.present[np.argmax(self.al.u, axis=1)]

    def finite(self) -> bool:
        return bool(np.all(np.isfinite(self.al.u)))


class LabelSpreadingLearner:
    """``LabelSpreading(kernel="knn", n_neighbors=k)`` with margin sampling.

    The kNN connectivity graph is the one LabelSpreading builds
    (``NearestNeighbors(k).fit(X).kneighbors_graph(X, k, mode="connectivity")``),
    computed once per data set and handed over as a callable kernel, so the
    refits skip the neighbour search; the model is the same.
    """

    def __init__(self, config: Config, graphs: PeerGraphs, codes: np.ndarray):
        from sklearn.semi_supervised import LabelSpreading

        knn = graphs.ls_knn
        self.config, self.codes, self.X = config, codes, graphs.X
        self.model = LabelSpreading(kernel=lambda a, b: knn.copy())

    def _fit(self):
        y = np.full(self.codes.size, -1)
        y[self.labeled] = self.codes[self.labeled]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning after its 30 iterations
            self.model.fit(self.X, y)

    def start(self, labeled):
        self.labeled = np.asarray(labeled)
        self._fit()

    def query(self, cands, batch, rng):
        if self.config.strategy == "rand":
            return _random(cands, batch, rng)
        top2 = np.sort(self.model.label_distributions_[cands], axis=1)[:, -2:]
        return _best(cands, top2[:, 0] - top2[:, 1], batch, rng)

    def add(self, nodes):
        self.labeled = np.concatenate([self.labeled, nodes])
        self._fit()

    def predict(self):
        return self.model.transduction_
