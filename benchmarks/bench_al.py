#!/usr/bin/env python
"""Active-learning benchmark of skmcal: one iteration of every strategy x loss.

Usage::

    python benchmarks/bench_al.py [--sizes 10000 70000] [--iterations 20]
                                  [--out benchmarks/results]

What is timed (``time.perf_counter``), for every N:

* **One active-learning iteration**, median over ``--iterations`` iterations of
  a real loop, for every query strategy (``model_change``, ``model_change``
  with ``batch="greedy"``, ``vopt``, ``sopt``, ``uncertainty``,
  ``random_sampling``) x every loss (``gr``, ``logistic``, ``probit`` on the
  binary relabelling ``label < 5``; ``mgr``, ``ce`` on the 10 classes),
  ``n_eigs=50``. One iteration is

  - *query*: acquisition values on a random 10% of the unlabeled nodes
    (``candidates=0.1``) and the choice of B=5 of them, and
  - *update*: teaching the true labels of those 5 rows, i.e. the refit of the
    posterior on all labeled nodes (closed form for gr/mgr, Newton warm-started
    from the previous MAP for logistic/probit/ce).

  The loop starts from 2 labels per class (20 labels) and grows by 5 labels an
  iteration, as in practice (query -> teach the true labels of the rows).
  Path (a), the one reported first, is modAL's::

      pool = skmcal.NodeSet(X)
      learner = ActiveLearner(estimator=SpectralGraphClassifier(loss, nodes=pool),
                              query_strategy=strategy, X_training=..., y_training=...)
      idx, _ = learner.query(pool, n_instances=5, candidates=0.1, random_state=...)
      learner.teach(X[idx], y[idx])

  Path (b), ``--direct`` (default on), calls the strategy on the classifier and
  refits it on ``X[labeled]`` (no modAL); with the same seeds it must pick the
  same rows (checked, column "same picks").

* **graphlearning** (``gl.active_learning.active_learner`` with
  ``gl.ssl.laplace``), on the very same graph (skmcal's symmetric weight matrix
  ``clf.graph_.weights``) and skmcal's 50 eigenpairs (``C = diag(1/(evals +
  1e-11))``, ``V = evecs``), one iteration = ``AL.select_queries(batch_size=5,
  candidate_ind='rand', rand_frac=0.1)`` + ``AL.update(q, y[q])``. Its
  strategies ``model_change``, ``var_opt``, ``sigma_opt``, ``unc_sampling`` are
  compared with skmcal's ``model_change``, ``vopt``, ``sopt``, ``uncertainty``
  (greedy model_change also against gl's top-k model_change). The models
  differ: graphlearning refits Laplace learning (a harmonic-extension solve by
  conjugate gradients over all nodes) and updates its covariance by rank-one
  Gaussian-regression updates, whatever the loss; skmcal fits our losses in the
  50-dimensional spectral basis. Binary losses are compared with a
  graphlearning run on the binary labels, mgr/ce with one on the 10 classes.
  ``gl.graph(W).eigen_decomp(normalization='normalized', k=50)`` is timed once
  per N for reference (``--no-gl-eigen`` skips it).

* The graph (kNN + Gaussian weights + 50 eigenpairs) is built once per N
  before any timing, through skmcal's graph cache, and its time is reported
  separately (not part of an iteration): exact kNN
  (``sklearn.neighbors.NearestNeighbors``, skmcal's default) for N below
  ``--exact-below`` (20,000), otherwise ``pynndescent.PyNNDescentTransformer(
  n_neighbors=11, random_state=0)`` after a warm-up call that compiles its
  numba code (reported separately).

Data: the first N rows of Fashion-MNIST (train then test, 70,000 x 784),
pixels / 255 in [0, 1], float64, from ``/usr/share/datasets/fashion-mnist``;
if that directory is missing, a synthetic 10-class Gaussian mixture of the same
shape (said so in the output).

Machine load: before the timed block of each N the script waits (at most
``--max-wait`` s) until the 1-minute load average is below ``--max-load``
(0.8), and records it; during every configuration it measures the CPU used by
other processes (from ``/proc/stat``) and re-runs a configuration once when
other processes took more than ``--rerun-above`` cores.

Results: ``<out>/bench_al_<N>.csv`` per N and ``<out>/bench_al.md`` (tables,
machine information, the command); ``--profile model_change/ce`` (repeatable)
also writes a cProfile of that configuration's loop at the largest N.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import datetime as _dt
import gc
import gzip
import io
import os
import platform
import pstats
import shlex
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

FMNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
N_CLASSES = 10
LABELS_PER_CLASS = 2
N_EIGS = 50
BATCH = 5
CANDIDATES = 0.1
LOSSES = ("gr", "logistic", "probit", "mgr", "ce")
BINARY = ("gr", "logistic", "probit")
# (row name, skmcal strategy name, query options, graphlearning counterpart)
STRATEGIES = (
    ("model_change", "model_change", {}, "model_change"),
    ("model_change[greedy]", "model_change", {"batch": "greedy"}, "model_change"),
    ("vopt", "vopt", {}, "var_opt"),
    ("sopt", "sopt", {}, "sigma_opt"),
    ("uncertainty", "uncertainty", {}, "unc_sampling"),
    ("random_sampling", "random_sampling", {}, None),
)
GL_ACQUISITIONS = ("model_change", "var_opt", "sigma_opt", "unc_sampling")

TARGETS_MS = {("model_change", "ce"): 60.0, ("model_change", "mgr"): 10.0}
TARGET_N = 70000
TARGET_SPEEDUP = 10.0

LOG_LINES: list[str] = []


# ----------------------------------------------------------------- utilities
def now() -> float:
    return time.perf_counter()


def log(msg: str = "") -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}" if msg else ""
    print(line, flush=True)
    LOG_LINES.append(line)


def loadavg() -> tuple[float, float, float]:
    try:
        a, b, c = Path("/proc/loadavg").read_text().split()[:3]
        return float(a), float(b), float(c)
    except (OSError, ValueError):
        return (float("nan"),) * 3


def wait_for_load(threshold: float, max_wait: float, poll: float = 5.0):
    """Sleep until the 1-minute load average is below ``threshold`` (at most ``max_wait`` s)."""
    t0 = now()
    load = loadavg()[0]
    while not load < threshold and now() - t0 < max_wait:
        time.sleep(poll)
        load = loadavg()[0]
    return now() - t0, load


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds():
    """(CPU seconds used by the whole machine so far, by this process so far)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        v = [int(x) for x in fields]
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / _CLK_TCK
    except (OSError, ValueError, IndexError):
        busy = float("nan")
    t = os.times()
    return busy, t.user + t.system + t.children_user + t.children_system


class Contention:
    """Cores used by OTHER processes (on average) while the block ran."""

    def __enter__(self):
        self.b0, self.s0 = _cpu_seconds()
        self.t0 = now()
        return self

    def __exit__(self, *exc):
        b1, s1 = _cpu_seconds()
        wall = max(now() - self.t0, 1e-9)
        self.other_cores = max(0.0, (b1 - self.b0) - (s1 - self.s0)) / wall
        return False


def n_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def versions() -> dict:
    import modAL  # noqa: F401
    import scipy
    import sklearn

    import skmcal

    out = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "skmcal": skmcal.__version__,
    }
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("modAL-python", "pynndescent", "numba", "graphlearning"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    try:
        from threadpoolctl import threadpool_info

        out["BLAS"] = "; ".join(
            f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        )
    except ImportError:
        pass
    return out


def skmcal_revision() -> str:
    """Git revision of the repository, and a hash of the imported skmcal sources.

    The hash is of the source files of the modules as imported by this process
    (``module.__file__``), so uncommitted edits, and edits made while the
    benchmark runs, are told apart.
    """
    import hashlib
    import subprocess

    import skmcal

    digest = hashlib.sha1()
    for name in sorted(sys.modules):
        module = sys.modules[name]
        if name == "skmcal" or name.startswith("skmcal."):
            path = getattr(module, "__file__", None)
            if path and path.endswith(".py"):
                digest.update(name.encode())
                digest.update(Path(path).read_bytes())
    repo = Path(skmcal.__file__).resolve().parent.parent
    try:
        rev = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "skmcal"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        rev += " + uncommitted changes in skmcal/" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        rev = "unknown"
    return f"{rev} (sources sha1 {digest.hexdigest()[:10]})"


# ---------------------------------------------------------------------- data
def _read_idx(path: Path, offset: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load_data(n_max: int):
    """First ``n_max`` rows of Fashion-MNIST (train + test), pixels / 255; or synthetic."""
    if FMNIST_DIR.is_dir():
        images, labels = [], []
        for part in ("train", "t10k"):
            images.append(_read_idx(FMNIST_DIR / f"{part}-images-idx3-ubyte.gz", 16))
            labels.append(_read_idx(FMNIST_DIR / f"{part}-labels-idx1-ubyte.gz", 8))
        X = np.concatenate(images).reshape(-1, 784)
        y = np.concatenate(labels).astype(np.int64)
        if n_max > X.shape[0]:
            raise SystemExit(f"Fashion-MNIST has {X.shape[0]} rows; asked for {n_max}.")
        X = X[:n_max].astype(np.float64) / 255.0
        desc = (
            f"Fashion-MNIST ({FMNIST_DIR}), train then test, first N rows of 70,000 x 784, "
            "pixels / 255 in [0, 1], float64"
        )
        return X, y[:n_max], desc
    rng = np.random.default_rng(0)
    centers = rng.uniform(0.0, 1.0, size=(N_CLASSES, 784))
    y = rng.integers(0, N_CLASSES, size=n_max)
    X = np.clip(centers[y] + rng.normal(0.0, 0.35, size=(n_max, 784)), 0.0, 1.0)
    desc = (
        f"SYNTHETIC (no {FMNIST_DIR}): 10-class Gaussian mixture, {n_max} x 784, clipped to [0, 1]"
    )
    return X, y, desc


def initial_labels(y: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [
            rng.choice(np.flatnonzero(y == c), LABELS_PER_CLASS, replace=False)
            for c in range(N_CLASSES)
        ]
    )


# ------------------------------------------------------------------- skmcal
def make_estimator_factory(pool, neighbors):
    from skmcal import SpectralGraphClassifier

    def make(loss):
        return SpectralGraphClassifier(loss, nodes=pool, neighbors=neighbors, n_eigs=N_EIGS)

    return make


def _summary(update, query):
    total = [u + q for u, q in zip(update, query, strict=True)]
    return {
        "update_ms": 1e3 * statistics.median(update),
        "query_ms": 1e3 * statistics.median(query),
        "total_ms": 1e3 * statistics.median(total),
        "total_min_ms": 1e3 * min(total),
        "total_max_ms": 1e3 * max(total),
    }


def run_modal(make, strategy, opts, loss, X, y, pool, init, iterations, seed, evaluate=True):
    """Path (a): modAL ActiveLearner with the NodeSet as pool."""
    from modAL.models import ActiveLearner

    learner = ActiveLearner(
        estimator=make(loss),
        query_strategy=strategy,
        X_training=X[init],
        y_training=y[init],
    )
    upd, qry, newton, picks = [], [], [], []
    for it in range(iterations):
        t0 = now()
        idx, _ = learner.query(
            pool, n_instances=BATCH, candidates=CANDIDATES, random_state=seed + it, **opts
        )
        t1 = now()
        learner.teach(X[idx], y[idx])
        t2 = now()
        qry.append(t1 - t0)
        upd.append(t2 - t1)
        newton.append(learner.estimator.n_iter_)
        picks.append(np.asarray(idx))
    clf = learner.estimator
    out = _summary(upd, qry)
    out["newton_iter"] = float(np.mean(newton))
    out["n_labeled"] = int(clf.labeled_nodes_.size)
    out["accuracy"] = float(np.mean(clf.transduction_ == y)) if evaluate else float("nan")
    return out, np.concatenate(picks), clf


def run_direct(make, strategy, opts, loss, X, y, pool, init, iterations, seed):
    """Path (b): strategy(clf, pool, ...) and clf.fit(X[labeled], y[labeled])."""
    clf = make(loss).fit(X[init], y[init])
    labeled = init.copy()
    upd, qry, picks = [], [], []
    for it in range(iterations):
        t0 = now()
        idx, _ = strategy(clf, pool, BATCH, candidates=CANDIDATES, random_state=seed + it, **opts)
        t1 = now()
        labeled = np.concatenate([labeled, idx])
        clf.fit(X[labeled], y[labeled])
        t2 = now()
        qry.append(t1 - t0)
        upd.append(t2 - t1)
        picks.append(np.asarray(idx))
    return _summary(upd, qry), np.concatenate(picks)


# ------------------------------------------------------------ graphlearning
def run_graphlearning(acq_name, W, evals, evecs, labels, init, iterations, seed):
    import graphlearning as gl

    np.random.seed(seed)  # noqa: NPY002  (graphlearning draws candidates from the global RNG)
    acq_cls = getattr(gl.active_learning, acq_name)
    kwargs = {} if acq_name == "unc_sampling" else {"C": np.diag(1.0 / (evals + 1e-11)), "V": evecs}
    t0 = now()
    AL = gl.active_learning.active_learner(
        gl.ssl.laplace(W), acq_cls, init.copy(), labels[init], **kwargs
    )
    setup = now() - t0
    upd, qry = [], []
    for _ in range(iterations):
        t0 = now()
        q = AL.select_queries(batch_size=BATCH, candidate_ind="rand", rand_frac=CANDIDATES)
        t1 = now()
        AL.update(q, labels[q])
        t2 = now()
        qry.append(t1 - t0)
        upd.append(t2 - t1)
    out = _summary(upd, qry)
    out["setup_s"] = setup
    out["n_labeled"] = int(AL.labeled_ind.size)
    out["accuracy"] = float(np.mean(np.argmax(AL.u, axis=1) == labels))
    return out


# ----------------------------------------------------------------- the run
def build_graph_for(X, y, n, args, pool_holder):
    """Build (and cache) the graph of the first n rows; return timings and the graph."""
    import skmcal
    from skmcal import NodeSet

    info = {}
    skmcal.clear_graph_cache()
    gc.collect()
    neighbors = None
    if n >= args.exact_below:
        import pynndescent

        neighbors = pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0)
        info["knn"] = "pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0)"
    else:
        info["knn"] = "exact: sklearn NearestNeighbors (skmcal default)"
    t0 = now()
    pool = NodeSet(X)
    info["nodeset_s"] = now() - t0
    make = make_estimator_factory(pool, neighbors)
    init = initial_labels(y, args.seed)
    builds0 = skmcal.GRAPH_CACHE.builds
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Contention() as c:
            t0 = now()
            clf = make("mgr").fit(X[init], y[init])
            info["graph_s"] = now() - t0
    info["graph_other_cores"] = c.other_cores
    info["graph_warnings"] = [str(w.message) for w in caught]
    info["builds"] = skmcal.GRAPH_CACHE.builds - builds0
    graph = clf.graph_
    info["residual"] = graph.residual
    info["n_components"] = graph.n_components
    info["nnz"] = graph.weights.nnz
    # One more fit on the cached graph: the time of an mgr fit to subtract.
    t0 = now()
    make("mgr").fit(X[init], y[init])
    info["cached_fit_s"] = now() - t0
    pool_holder.update(pool=pool, make=make, init=init, graph=graph)
    return info


class _SerialExecutor:
    """Stand-in for ``ThreadPoolExecutor`` that maps in the calling thread."""

    def __init__(self, max_workers=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, *iterables):
        return map(fn, *iterables)


def profile_config(make, strategy, opts, loss, X, y, pool, init, iterations, seed, path):
    """cProfile of one configuration's loop (not timed; after the timed runs).

    cProfile sees the calling thread only, so while profiling, a chunk thread
    pool in ``skmcal.acquisition`` (if any) is replaced by a serial map: the
    chunk work then shows up under its own functions. The profile is of the
    serial path; the timings in the tables are of the code as shipped.
    """
    import skmcal.acquisition as acquisition_module

    executor = getattr(acquisition_module, "ThreadPoolExecutor", None)
    if executor is not None:
        acquisition_module.ThreadPoolExecutor = _SerialExecutor
    prof = cProfile.Profile()
    try:
        prof.enable()
        run_modal(make, strategy, opts, loss, X, y, pool, init, iterations, seed, evaluate=False)
        prof.disable()
    finally:
        if executor is not None:
            acquisition_module.ThreadPoolExecutor = executor
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(25)
    short = buf.getvalue()
    stats.sort_stats("cumulative").print_stats(40)
    path.write_text(buf.getvalue())
    # The header and the first rows of the tottime listing, for the report.
    lines = [ln for ln in short.splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if "function calls" in ln), 0)
    head = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), start)
    return "\n".join([lines[start], *lines[head : head + 13]])


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    return f"{v:.{digits}f}"


def table_rows(n, results, gl_results):
    """Markdown rows of the per-N table, and the target checks."""
    header = (
        "| strategy | loss | update ms | query ms | **total ms** | min–max ms | direct ms | "
        "same picks | Newton it | acc | gl counterpart | gl update ms | gl query ms | "
        "gl total ms | speed-up | other cores | target |"
    )
    sep = "|" + "---|" * (header.count("|") - 1)
    lines = [header, sep]
    checks = []
    for r in results:
        target = []
        key = (r["strategy"], r["loss"])
        if key in TARGETS_MS and n >= TARGET_N:
            ok = r["total_ms"] <= TARGETS_MS[key]
            target.append(f"<= {TARGETS_MS[key]:.0f} ms: {'pass' if ok else 'MISS'}")
            name = f"N={n} {key[0]}/{key[1]} <= {TARGETS_MS[key]:.0f} ms"
            checks.append((name, r["total_ms"], ok))
        if r.get("speedup") is not None:
            ok = r["speedup"] >= TARGET_SPEEDUP
            target.append(f">= {TARGET_SPEEDUP:.0f}x gl: {'pass' if ok else 'MISS'}")
            name = f"N={n} {key[0]}/{key[1]} >= {TARGET_SPEEDUP:.0f}x gl"
            checks.append((name, r["speedup"], ok))
        lines.append(
            "| "
            + " | ".join(
                [
                    r["strategy"],
                    r["loss"],
                    fmt(r["update_ms"]),
                    fmt(r["query_ms"]),
                    f"**{fmt(r['total_ms'])}**",
                    f"{fmt(r['total_min_ms'])}–{fmt(r['total_max_ms'])}",
                    fmt(r.get("direct_total_ms")),
                    r.get("same_picks", "—"),
                    fmt(r["newton_iter"]),
                    fmt(r["accuracy"], 3),
                    r.get("gl_acq") or "—",
                    fmt(r.get("gl_update_ms")),
                    fmt(r.get("gl_query_ms")),
                    fmt(r.get("gl_total_ms")),
                    (fmt(r["speedup"]) + "x") if r.get("speedup") is not None else "—",
                    fmt(r["other_cores"], 2),
                    "; ".join(target) or "",
                ]
            )
            + " |"
        )
    gl_lines = []
    if gl_results:
        gl_lines = [
            "| graphlearning acquisition | labels | update ms | query ms | total ms | "
            "min–max ms | setup s | acc (Laplace) | other cores |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for (acq, kind), g in gl_results.items():
            gl_lines.append(
                f"| {acq} | {kind} | {fmt(g['update_ms'])} | {fmt(g['query_ms'])} | "
                f"{fmt(g['total_ms'])} | {fmt(g['total_min_ms'])}–{fmt(g['total_max_ms'])} | "
                f"{fmt(g['setup_s'], 2)} | {fmt(g['accuracy'], 3)} | {fmt(g['other_cores'], 2)} |"
            )
    return lines, gl_lines, checks


TIME_KEYS = ("update_ms", "query_ms", "total_ms", "total_min_ms", "total_max_ms")
#: The columns every ``bench_*_<N>.csv`` of the timing figure starts with
#: (``plot_timing.py`` reads them; ``bench_baselines.py`` writes them too).
TIMING_FIELDS = ("N", "strategy", "loss", "classes", "iterations", *TIME_KEYS)
CSV_FIELDS = (
    *TIMING_FIELDS,
    "direct_update_ms",
    "direct_query_ms",
    "direct_total_ms",
    "same_picks",
    "newton_iter",
    "n_labeled",
    "accuracy",
    "gl_acq",
    "gl_update_ms",
    "gl_query_ms",
    "gl_total_ms",
    "speedup",
    "other_cores",
    "reruns",
)


QUIET_BUDGET = {"left": 0.0}


def timed(fn, args, rerun_above, max_wait_quiet):
    """Run ``fn()`` under Contention; once more (after a quiet wait) if others were busy.

    The waits for quiet share one budget (``--quiet-budget`` seconds per run).
    """
    gc.collect()
    with Contention() as c:
        res = fn()
    reruns = 0
    if c.other_cores > rerun_above and QUIET_BUDGET["left"] > 0:
        t0 = now()
        while now() - t0 < min(max_wait_quiet, QUIET_BUDGET["left"]):
            with Contention() as q:
                time.sleep(2.0)
            if q.other_cores < rerun_above:
                break
        waited = now() - t0
        QUIET_BUDGET["left"] -= waited
        gc.collect()
        with Contention() as c2:
            res2 = fn()
        reruns = 1
        log(
            f"    re-ran: other processes used {c.other_cores:.2f} cores "
            f"(waited {waited:.0f} s; now {c2.other_cores:.2f})"
        )
        if c2.other_cores < c.other_cores:
            res, c = res2, c2
    return res, c.other_cores, reruns


def run_size(n, X_all, y_all, args, results_dir):
    import skmcal

    X = np.ascontiguousarray(X_all[:n])
    y10 = y_all[:n]
    ybin = (y10 < 5).astype(np.int64)
    log(f"N={n}: building the graph (kNN, weights, {N_EIGS} eigenpairs) ...")
    holder: dict = {}
    ginfo = build_graph_for(X, y10, n, args, holder)
    pool, make, init, graph = holder["pool"], holder["make"], holder["init"], holder["graph"]
    log(
        f"  graph: kNN {ginfo['knn']}; NodeSet(X) {ginfo['nodeset_s']:.2f} s; cold first fit "
        f"(graph + spectrum + one mgr fit) {ginfo['graph_s']:.2f} s (cached mgr fit "
        f"{1e3 * ginfo['cached_fit_s']:.1f} ms); builds={ginfo['builds']}, "
        f"nnz(W)={ginfo['nnz']}, components={ginfo['n_components']}, "
        f"residual={ginfo['residual']:.1e}, other processes {ginfo['graph_other_cores']:.2f} cores"
    )
    for w in ginfo["graph_warnings"]:
        log(f"  graph warning: {w}")

    gl_eig = None
    have_gl = args.graphlearning
    if have_gl:
        try:
            import graphlearning as gl  # noqa: F401
        except ImportError:
            log("  graphlearning is not installed: its comparison is skipped")
            have_gl = False
    if have_gl and args.gl_eigen:
        import graphlearning as gl

        t0 = now()
        G = gl.graph(graph.weights)
        vals, _ = G.eigen_decomp(normalization="normalized", k=N_EIGS)
        gl_eig = {
            "seconds": now() - t0,
            "max_abs_diff_eigenvalues": float(np.max(np.abs(np.sort(vals) - graph.eigenvalues))),
        }
        log(
            f"  graphlearning eigen_decomp(normalization='normalized', k={N_EIGS}): "
            f"{gl_eig['seconds']:.2f} s; max |lambda_gl - lambda_skmcal| = "
            f"{gl_eig['max_abs_diff_eigenvalues']:.1e}"
        )

    waited, load = wait_for_load(args.max_load, args.max_wait)
    load_before = loadavg()
    log(
        f"  waited {waited:.0f} s for 1-min load < {args.max_load}: load now "
        f"{load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}"
        + ("" if load < args.max_load else "  (NOT below the threshold; timings may be noisy)")
    )

    # Warm-up (first calls of every code path), not recorded.
    for loss in ("mgr", "ce", "logistic"):
        yl = ybin if loss in BINARY else y10
        run_modal(make, skmcal.model_change, {}, loss, X, yl, pool, init, 2, args.seed)

    results = []
    for name, strat_name, opts, gl_acq in STRATEGIES:
        strategy = getattr(skmcal, strat_name)
        for loss in LOSSES:
            if args.only and f"{name}/{loss}" not in args.only:
                continue
            yl = ybin if loss in BINARY else y10

            def fn(strategy=strategy, opts=opts, loss=loss, yl=yl):
                return run_modal(
                    make, strategy, opts, loss, X, yl, pool, init, args.iterations, args.seed
                )

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (res, picks, _), other, reruns = timed(fn, args, args.rerun_above, args.quiet_wait)
            row = {
                "N": n,
                "strategy": name,
                "loss": loss,
                "classes": 2 if loss in BINARY else N_CLASSES,
                "iterations": args.iterations,
                **res,
                "other_cores": other,
                "reruns": reruns,
                "gl_acq": gl_acq if have_gl else None,
            }
            if args.direct:
                dres, dpicks = run_direct(
                    make, strategy, opts, loss, X, yl, pool, init, args.iterations, args.seed
                )
                row["direct_update_ms"] = dres["update_ms"]
                row["direct_query_ms"] = dres["query_ms"]
                row["direct_total_ms"] = dres["total_ms"]
                row["same_picks"] = "yes" if np.array_equal(picks, dpicks) else "NO"
            warn_text = sorted({str(w.message)[:120] for w in caught})
            results.append(row)
            log(
                f"  {name:>20s} {loss:>8s}: update {fmt(res['update_ms'])} ms, query "
                f"{fmt(res['query_ms'])} ms, total {fmt(res['total_ms'])} ms (min "
                f"{fmt(res['total_min_ms'])}, max {fmt(res['total_max_ms'])}); direct "
                f"{fmt(row.get('direct_total_ms'))} ms, same picks {row.get('same_picks', '—')}; "
                f"Newton {res['newton_iter']:.1f} it; acc {res['accuracy']:.3f} at "
                f"{res['n_labeled']} labels; other processes {other:.2f} cores"
            )
            for w in warn_text:
                log(f"    warning: {w}")

    gl_results = {}
    if have_gl:
        evals, evecs = graph.eigenvalues, graph.eigenvectors
        for kind, labels in (("binary", ybin), ("10 classes", y10)):
            for acq in GL_ACQUISITIONS:

                def gfn(acq=acq, labels=labels):
                    return run_graphlearning(
                        acq,
                        graph.weights,
                        evals,
                        evecs,
                        labels,
                        init,
                        args.gl_iterations,
                        args.seed,
                    )

                g, other, reruns = timed(gfn, args, args.rerun_above, args.quiet_wait)
                g["other_cores"] = other
                gl_results[(acq, kind)] = g
                log(
                    f"  graphlearning {acq:>13s} ({kind}): update {fmt(g['update_ms'])} ms, "
                    f"query {fmt(g['query_ms'])} ms, total {fmt(g['total_ms'])} ms; setup "
                    f"{g['setup_s']:.2f} s; acc {g['accuracy']:.3f}; other processes "
                    f"{other:.2f} cores"
                )
        for row in results:
            if row["gl_acq"] is None:
                continue
            g = gl_results[(row["gl_acq"], "binary" if row["loss"] in BINARY else "10 classes")]
            row["gl_update_ms"] = g["update_ms"]
            row["gl_query_ms"] = g["query_ms"]
            row["gl_total_ms"] = g["total_ms"]
            row["speedup"] = g["total_ms"] / row["total_ms"]

    load_after = loadavg()
    with open(results_dir / f"bench_al_{n}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for row in results:
            w.writerow({k: row.get(k, "") for k in CSV_FIELDS})
        for (acq, kind), g in gl_results.items():
            w.writerow(
                {
                    "N": n,
                    "strategy": f"graphlearning:{acq}",
                    "loss": "laplace",
                    "classes": 2 if kind == "binary" else N_CLASSES,
                    "iterations": args.gl_iterations,
                    **{k: g[k] for k in TIME_KEYS},
                    "n_labeled": g["n_labeled"],
                    "accuracy": g["accuracy"],
                    "other_cores": g["other_cores"],
                }
            )

    profiles = {}
    if args.profile and n == max(args.sizes):
        for spec in args.profile:
            sname, loss = spec.split("/")
            entry = next(s for s in STRATEGIES if s[0] == sname)
            yl = ybin if loss in BINARY else y10
            stem = f"bench_al_profile_{n}_{sname}_{loss}".replace("[", "_").replace("]", "")
            path = results_dir / f"{stem}.txt"
            text = profile_config(
                make,
                getattr(skmcal, entry[1]),
                entry[2],
                loss,
                X,
                yl,
                pool,
                init,
                args.iterations,
                args.seed,
                path,
            )
            profiles[spec] = (path, text)
            log(f"  cProfile of {spec} ({args.iterations} iterations) -> {path}")

    return {
        "n": n,
        "graph": ginfo,
        "gl_eig": gl_eig,
        "load_before": load_before,
        "load_after": load_after,
        "waited": waited,
        "results": results,
        "gl_results": gl_results,
        "profiles": profiles,
    }


def add_load_arguments(p, unit):
    """The machine-load options shared with ``bench_baselines.py``; ``unit``: what is re-run."""
    p.add_argument("--max-load", type=float, default=0.8)
    p.add_argument(
        "--max-wait",
        type=float,
        default=600.0,
        help="longest wait (s) for the 1-minute load to drop below --max-load",
    )
    p.add_argument(
        "--rerun-above",
        type=float,
        default=0.3,
        help=f"re-run a {unit} once when other processes used more cores",
    )
    p.add_argument(
        "--quiet-wait",
        type=float,
        default=60.0,
        help="longest wait (s) for quiet before such a re-run",
    )
    p.add_argument(
        "--quiet-budget",
        type=float,
        default=900.0,
        help="total seconds the re-runs may wait for quiet",
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10000, 70000])
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument(
        "--gl-iterations",
        type=int,
        default=None,
        help="graphlearning iterations (default: --iterations)",
    )
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--exact-below",
        type=int,
        default=20000,
        help="exact kNN below this N, pynndescent at or above it",
    )
    p.add_argument(
        "--no-direct",
        dest="direct",
        action="store_false",
        help="skip path (b), the direct strategy(clf, pool) + clf.fit loop",
    )
    p.add_argument("--no-graphlearning", dest="graphlearning", action="store_false")
    p.add_argument(
        "--no-gl-eigen",
        dest="gl_eigen",
        action="store_false",
        help="do not time graphlearning's own eigen_decomp",
    )
    add_load_arguments(p, "configuration")
    p.add_argument(
        "--profile",
        action="append",
        default=[],
        help="STRATEGY/LOSS to cProfile at the largest N, e.g. model_change/ce",
    )
    p.add_argument(
        "--only",
        action="append",
        default=[],
        help="time only this STRATEGY/LOSS (repeatable; quick checks, e.g. model_change/ce)",
    )
    args = p.parse_args(argv)
    QUIET_BUDGET["left"] = args.quiet_budget
    if args.gl_iterations is None:
        args.gl_iterations = args.iterations
    for spec in args.profile + args.only:
        sname, _, loss = spec.partition("/")
        if sname not in [s[0] for s in STRATEGIES] or loss not in LOSSES:
            p.error(f"--profile {spec!r}: expected STRATEGY/LOSS")
    results_dir = args.out
    results_dir.mkdir(parents=True, exist_ok=True)
    command = "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])])

    import skmcal  # noqa: F401  (applies the modAL teach() fix)

    started = _dt.datetime.now().astimezone()
    t0 = now()
    X_all, y_all, data_desc = load_data(max(args.sizes))
    log(f"data: {data_desc}; loaded {X_all.shape} in {now() - t0:.1f} s")
    vers = versions()
    import skmcal.acquisition  # noqa: F401  (every module imported before hashing)
    import skmcal.posterior  # noqa: F401

    revision = skmcal_revision()
    log(f"skmcal revision: {revision}")
    machine = f"{cpu_model()}, {n_cores()} cores, {platform.system()} {platform.release()}"
    log(f"machine: {machine}")
    log("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    log(f"load average at start: {' '.join(f'{v:.2f}' for v in loadavg())}")

    knn_warmup = None
    if any(n >= args.exact_below for n in args.sizes):
        import pynndescent

        log("pynndescent warm-up (numba compilation) on 2,000 random rows ...")
        rng = np.random.default_rng(0)
        Z = rng.uniform(size=(2000, 784))
        t0 = now()
        pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0).fit_transform(Z)
        first = now() - t0
        t0 = now()
        pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0).fit_transform(Z)
        knn_warmup = (first, now() - t0)
        log(f"  warm-up: first call {first:.1f} s, second {knn_warmup[1]:.2f} s")

    runs = [run_size(n, X_all, y_all, args, results_dir) for n in args.sizes]
    after = skmcal_revision()
    if after != revision:
        # Modules were imported once, at the start: the run measured ``revision``.
        log(f"NOTE: skmcal changed on disk during the run (now {after}); measured {revision}")
        revision += f"; NOTE: the sources changed on disk during the run (now {after})"
    write_report(
        runs, args, command, started, machine, vers, data_desc, knn_warmup, results_dir, revision
    )


def write_report(
    runs, args, command, started, machine, vers, data_desc, knn_warmup, results_dir, revision
):
    md = [
        "# skmcal active-learning benchmark (`benchmarks/bench_al.py`)",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- date: {started.isoformat(timespec='seconds')}",
        f"- machine: {machine}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()),
        f"- skmcal revision: {revision}",
        f"- data: {data_desc}",
        "- binary losses (gr, logistic, probit): label < 5 vs >= 5; mgr, ce: the 10 classes",
        f"- set-up: n_eigs = M = {N_EIGS}, start from {LABELS_PER_CLASS} labels per class "
        f"({LABELS_PER_CLASS * N_CLASSES} labels), B = {BATCH} labels per iteration, candidates "
        f"= a random {CANDIDATES:.0%} of the unlabeled nodes, {args.iterations} iterations "
        f"(labeled set grows to {LABELS_PER_CLASS * N_CLASSES + BATCH * args.iterations}); "
        "times are medians over the iterations",
        "- one iteration = *query* (acquisition values on the candidates + choice of 5) + "
        "*update* (teach the 5 true labels: refit on all labeled nodes — closed form for "
        "gr/mgr, Newton warm-started from the previous MAP for logistic/probit/ce)",
        "- **total ms** = modAL path: `learner.query(pool, n_instances=5, candidates=0.1, "
        "random_state=...)` with `pool = NodeSet(X)` + `learner.teach(X[idx], y[idx])`; "
        "*direct ms* = `strategy(clf, pool, 5, ...)` + `clf.fit(X[labeled], y[labeled])`; "
        "*same picks* = both paths chose the same rows",
        "- graphlearning: `active_learner(gl.ssl.laplace(W), acq, train_ind, y[train_ind], "
        "C=np.diag(1/(evals+1e-11)), V=evecs)` on skmcal's W and eigenpairs; one iteration = "
        "`select_queries(batch_size=5, candidate_ind='rand', rand_frac=0.1)` + `update(q, y[q])`. "
        "**The models differ**: graphlearning refits Laplace learning (CG solve over all nodes) "
        "and updates its covariance with Gaussian-regression rank-one updates for every "
        "acquisition; skmcal fits the named loss in the 50-dim spectral basis. Binary losses "
        "are compared with a graphlearning run on the binary labels, mgr/ce with one on 10 "
        "classes; model_change[greedy] with gl's (top-k) model_change. speed-up = gl total / "
        "skmcal total (modAL path)",
        f"- targets: model_change with ce <= {TARGETS_MS[('model_change', 'ce')]:.0f} ms and with "
        f"mgr <= {TARGETS_MS[('model_change', 'mgr')]:.0f} ms per iteration at N = {TARGET_N:,}; "
        f">= {TARGET_SPEEDUP:.0f}x faster than graphlearning's iteration",
        "- other cores = average CPU cores used by other processes while the configuration "
        f"ran (from /proc/stat); a configuration is re-run once above {args.rerun_above}",
    ]
    if knn_warmup:
        md.append(
            f"- pynndescent warm-up (numba compile, 2,000 x 784): first call "
            f"{knn_warmup[0]:.1f} s, second {knn_warmup[1]:.2f} s (not part of any timing)"
        )
    all_checks = []
    for run in runs:
        n, g = run["n"], run["graph"]
        lines, gl_lines, checks = table_rows(n, run["results"], run["gl_results"])
        all_checks += checks
        md += [
            "",
            f"## N = {n:,}",
            "",
            f"- graph (built once, cached, not part of an iteration): kNN {g['knn']}; "
            f"`NodeSet(X)` {g['nodeset_s']:.2f} s; cold first fit (kNN + weights + "
            f"{N_EIGS} eigenpairs + one mgr fit) **{g['graph_s']:.2f} s** (a cached mgr fit: "
            f"{1e3 * g['cached_fit_s']:.1f} ms); nnz(W) = {g['nnz']:,}, "
            f"{g['n_components']} connected component(s), eigen-residual {g['residual']:.1e}",
        ]
        if run["gl_eig"]:
            md.append(
                f"- graphlearning `gl.graph(W).eigen_decomp(normalization='normalized', "
                f"k={N_EIGS})`: {run['gl_eig']['seconds']:.2f} s (max |eigenvalue difference| "
                f"to skmcal {run['gl_eig']['max_abs_diff_eigenvalues']:.1e}); the runs reuse "
                "skmcal's eigenpairs"
            )
        lb, la = run["load_before"], run["load_after"]
        md.append(
            f"- load average (1, 5, 15 min): before the timed block {lb[0]:.2f} {lb[1]:.2f} "
            f"{lb[2]:.2f} (after waiting {run['waited']:.0f} s for < {args.max_load}); after "
            f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}"
        )
        md += ["", *lines]
        if gl_lines:
            md += ["", "graphlearning runs:", "", *gl_lines]
        for spec, (path, text) in run["profiles"].items():
            md += [
                "",
                f"cProfile of the {spec} loop ({args.iterations} iterations, modAL path, "
                "chunk thread pool replaced by a serial map so that cProfile sees the chunk "
                f"work; full listing in `{path}`), top functions by own time:",
                "",
                "```",
                text,
                "```",
            ]
    if all_checks:
        md += ["", "## Targets", "", "| target | value | result |", "|---|---|---|"]
        for name, value, ok in all_checks:
            unit = "x" if "gl" in name else " ms"
            md.append(f"| {name} | {value:.1f}{unit} | {'pass' if ok else 'MISS'} |")
        n_pass = sum(ok for _, _, ok in all_checks)
        md.append(f"\n{n_pass} of {len(all_checks)} targets pass.")
    text = "\n".join(md) + "\n"
    (results_dir / "bench_al.md").write_text(text)
    (results_dir / "bench_al.log").write_text("\n".join(LOG_LINES) + "\n")
    print()
    print(text)
    print(f"wrote {results_dir / 'bench_al.md'} and bench_al_<N>.csv, bench_al.log")


if __name__ == "__main__":
    main()
