#!/usr/bin/env python
"""Core benchmark of skmcal: graph, spectrum, the five losses, GridSearchCV.

Usage::

    python benchmarks/bench_core.py [--sizes 10000 70000] [--out benchmarks/results]

For every N it measures, with ``time.perf_counter``:

* the graph (kNN index build, kNN query, kernel weights + symmetrisation),
  the connected components and the 50 smallest eigenpairs, phase by phase
  through ``skmcal.graph`` internals (``_affinity``, ``laplacian_spectrum``);
* a cold fit: empty ``GRAPH_CACHE``, ``NodeSet(X)`` and one ``ce`` fit on the
  labeled rows (graph + spectrum + model, the path a user takes);
* one fit of each loss on the cached graph (median of ``--repeats`` runs), on
  520 labeled rows (52 per class; binary losses: class 0 vs the rest);
* ``GridSearchCV`` over 3 tau x 3 gamma x 3 folds (``ce`` and ``mgr``) with
  ``nodes=NodeSet(X)``, on the cached graph (warm) and from an empty cache
  (cold: graph built once, then 27 + 1 fits).

Data: Fashion-MNIST (train + test = 70,000 x 784, pixels / 255, float64) from
``/usr/share/datasets/fashion-mnist`` when it exists, the first N rows for
smaller N; otherwise a synthetic 10-class data set of the same shape.

kNN: exact (``sklearn.neighbors.NearestNeighbors``, skmcal's default) for
N < ``--exact-below`` (20,000); ``pynndescent.PyNNDescentTransformer(
n_neighbors=11, random_state=0, n_jobs=-1)`` above, after a small warm-up call
that compiles its numba code (reported separately).

Each graph is built three times per N (phase run, cold fit, cold
GridSearchCV); the graph rows give the median and the three values. Each
fit is also timed with the other BLAS threading (skmcal limits fits to one
BLAS thread since d7024e8; the alternative is the library default), and the
CPU used by other processes during every measurement is reported, since
the machine may be shared. ``--wait-idle`` waits for a quiet machine first.

Memory: the process max RSS (``resource.getrusage``, monotonic over the
whole run) after each phase, and the ``tracemalloc`` peak of each graph phase
(measured in the phase run only; tracemalloc sees NumPy/Python allocations,
not numba/pynndescent internals or BLAS/ARPACK Fortran work space). The cold
fit, the fits and GridSearchCV run without tracemalloc.

Results go to ``<out>/bench_core_<tag>.json`` and ``.md`` (the printed tables).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import gzip
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from scipy.sparse.csgraph import connected_components
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.neighbors import NearestNeighbors

import skmcal
import skmcal.classifier as skc
import skmcal.graph as skg
from skmcal import NodeSet, SpectralGraphClassifier

FMNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
N_CLASSES = 10
LABELS_PER_CLASS = 52
N_EIGS = 50
LOSSES = ("gr", "logistic", "probit", "mgr", "ce")
BINARY = ("gr", "logistic", "probit")
GRID = {"tau": [0.001, 0.005, 0.02], "gamma": [0.1, 0.5, 1.0]}

TARGET_GRAPH_SPECTRUM_S = 30.0  # graph + spectrum at 70k x 784
TARGET_CE_FIT_MS = 100.0  # one ce fit, 10 classes, M=50, 520 labels
TARGET_GS_RATIO = 2.0  # GridSearchCV 3x3x3 <= 2x one plain (cold) fit

WARNINGS: list[dict] = []
_CURRENT_PHASE = ["setup"]


# --------------------------------------------------------------------- utils
def now() -> float:
    return time.perf_counter()


def rss_mib() -> float:
    """Process max resident set size so far, MiB (ru_maxrss is KiB on Linux)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1024.0 * 1024.0) if sys.platform == "darwin" else r / 1024.0


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _busy_cpu_s():
    """(CPU seconds used by all processes, CPU seconds used by this one) so far."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        v = [int(x) for x in fields]
        # user nice system idle iowait irq softirq steal ...
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / _CLK_TCK
    except (OSError, ValueError, IndexError):
        busy = float("nan")
    ru = resource.getrusage(resource.RUSAGE_SELF)
    ruc = resource.getrusage(resource.RUSAGE_CHILDREN)
    return busy, ru.ru_utime + ru.ru_stime + ruc.ru_utime + ruc.ru_stime


class Contention:
    """Share of the machine's cores used by OTHER processes while a block ran."""

    def __enter__(self):
        self.b0, self.s0, self.t0 = *_busy_cpu_s(), now()
        return self

    def __exit__(self, *exc):
        b1, s1 = _busy_cpu_s()
        wall = max(now() - self.t0, 1e-9)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self.self_cpu_s = s1 - self.s0
        # /proc/stat ticks are 10 ms: meaningless for blocks much shorter than a second
        self.other_cores = (max(0.0, ((b1 - self.b0) - self.self_cpu_s)) / wall
                            if wall >= 0.5 else float("nan"))
        self.other_frac = self.other_cores / cores
        return False


def wait_for_quiet(max_wait_s: float, threshold_cores: float = 0.25, window_s: float = 2.0):
    """Wait (at most ``max_wait_s``) until other processes use < threshold cores.

    Returns ``(seconds waited, other-process cores in the last window)``.
    """
    t0 = now()
    level = float("nan")
    while True:
        with Contention() as c:
            time.sleep(window_s)
        level = c.other_cores
        if level < threshold_cores or now() - t0 >= max_wait_s:
            return now() - t0, level


QUIET = {"max_wait_s": 0.0, "log": []}


def quiet(label: str) -> None:
    """Wait for a quiet machine before a measurement (see --wait-idle)."""
    if QUIET["max_wait_s"] <= 0:
        return
    waited, level = wait_for_quiet(QUIET["max_wait_s"])
    QUIET["log"].append({"before": label, "waited_s": waited, "other_cores_last_window": level})
    if waited > 2.5:
        log(f"  waited {waited:.0f} s for a quiet machine before {label} "
            f"(other processes now {level:.2f} cores)")


def log(msg: str) -> None:
    print(f"[{_dt.datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


def _record_warning(message, category, filename, lineno, file=None, line=None):
    WARNINGS.append(
        {"phase": _CURRENT_PHASE[0], "category": category.__name__, "message": str(message)}
    )
    log(f"WARNING in {_CURRENT_PHASE[0]}: {category.__name__}: {message}")


class Phase:
    """Time a block; record max RSS after it and (if tracing) its tracemalloc peak."""

    def __init__(self, name: str, store: dict):
        self.name, self.store = name, store

    def __enter__(self):
        _CURRENT_PHASE[0] = self.name
        gc.collect()
        if tracemalloc.is_tracing():
            tracemalloc.reset_peak()
            self._base = tracemalloc.get_traced_memory()[0]
        self._cont = Contention().__enter__()
        self.t0 = now()
        return self

    def __exit__(self, *exc):
        dt = now() - self.t0
        self._cont.__exit__()
        entry = {"time_s": dt, "max_rss_mib_after": rss_mib(),
                 "other_processes_cores": self._cont.other_cores,
                 "self_cpu_s": self._cont.self_cpu_s}
        if tracemalloc.is_tracing():
            peak = tracemalloc.get_traced_memory()[1]
            entry["tracemalloc_peak_mib"] = (peak - self._base) / 2**20
        self.store[self.name] = entry
        log(f"  {self.name}: {dt:.3f} s (max RSS {entry['max_rss_mib_after']:.0f} MiB, "
            f"other processes used {_fc(entry['other_processes_cores'])} cores"
            + (f", tracemalloc peak +{entry['tracemalloc_peak_mib']:.0f} MiB"
               if "tracemalloc_peak_mib" in entry else "") + ")")
        return False


@contextlib.contextmanager
def instrument(module, names):
    """Temporarily wrap ``module.<name>`` to accumulate its wall time (and calls).

    Only the benchmark process's module attributes are patched (skmcal's
    ``build_graph`` and ``_affinity`` look these names up as module globals);
    no file is changed. Missing names are skipped.
    """
    totals = {name: 0.0 for name in names}
    calls = {name: [] for name in names}  # per-call wall times
    originals = {}
    for name in names:
        fn = getattr(module, name, None)
        if fn is None:
            continue
        originals[name] = fn

        def wrapper(*args, __fn=fn, __name=name, **kwargs):
            t0 = now()
            try:
                return __fn(*args, **kwargs)
            finally:
                dt = now() - t0
                totals[__name] += dt
                calls[__name].append(dt)

        setattr(module, name, wrapper)
    try:
        yield totals, calls
    finally:
        for name, fn in originals.items():
            setattr(module, name, fn)


ALT_THREADS_LABEL = ["alternative BLAS threading"]


@contextlib.contextmanager
def alt_blas_threads():
    """The fit's other BLAS threading: the opposite of what skmcal does by default.

    skmcal >= d7024e8 limits BLAS to ``skmcal._threads.SMALL_ALGEBRA_THREADS``
    (1) inside fits; the alternative is the BLAS libraries' own default (all
    cores). Older skmcal used the library default; the alternative is 1 thread.
    """
    try:
        from skmcal import _threads
    except ImportError:
        _threads = None
    if _threads is not None and getattr(_threads, "SMALL_ALGEBRA_THREADS", None) is not None:
        ALT_THREADS_LABEL[0] = "BLAS library default threads (skmcal's 1-thread limit off)"
        old = _threads.SMALL_ALGEBRA_THREADS
        _threads.SMALL_ALGEBRA_THREADS = None
        try:
            yield
        finally:
            _threads.SMALL_ALGEBRA_THREADS = old
    else:
        from threadpoolctl import threadpool_limits

        ALT_THREADS_LABEL[0] = "BLAS limited to 1 thread (threadpoolctl)"
        with threadpool_limits(limits=1, user_api="blas"):
            yield


def skmcal_fit_threads() -> str:
    try:
        from skmcal import _threads

        n = getattr(_threads, "SMALL_ALGEBRA_THREADS", None)
        return f"{n} BLAS thread(s) inside fit (skmcal._threads)" if n else "library default"
    except ImportError:
        return "library default (no skmcal._threads)"


def median_time(fn, repeats: int):
    times = []
    for _ in range(repeats):
        t0 = now()
        fn()
        times.append(now() - t0)
    return statistics.median(times), min(times), times


# ---------------------------------------------------------------------- data
def _read_idx(path: Path, offset: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load_fashion_mnist(directory: Path):
    parts = []
    for prefix in ("train", "t10k"):
        images = _read_idx(directory / f"{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 784)
        labels = _read_idx(directory / f"{prefix}-labels-idx1-ubyte.gz", 8)
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"{prefix}: {images.shape[0]} images, {labels.shape[0]} labels")
        parts.append((images, labels))
    X = np.concatenate([p[0] for p in parts]).astype(np.float64) / 255.0
    y = np.concatenate([p[1] for p in parts]).astype(np.int64)
    return np.ascontiguousarray(X), y


def make_synthetic(n: int = 70000, d: int = 784, seed: int = 0):
    """10 Gaussian clusters on a 16-d latent space, embedded linearly in 784-d, in [0, 1]."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, N_CLASSES, size=n)
    centers = rng.normal(0.0, 1.0, size=(N_CLASSES, 16)) * 2.0
    Z = centers[y] + rng.normal(0.0, 1.0, size=(n, 16))
    A = rng.normal(0.0, 1.0, size=(16, d)) / 4.0
    X = Z @ A + rng.normal(0.0, 0.3, size=(n, d))
    X = (X - X.min()) / (X.max() - X.min())
    return np.ascontiguousarray(X), y.astype(np.int64)


def choose_labeled(y: np.ndarray, per_class: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    idx = []
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        idx.append(rng.choice(members, size=min(per_class, members.size), replace=False))
    return np.sort(np.concatenate(idx))


# ------------------------------------------------------------------- machine
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _git(*args):
    try:
        root = Path(__file__).resolve().parents[1]
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except Exception:  # noqa: BLE001 - informational only
        return None


def machine_info() -> dict:
    info = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_cpu": _cpu_model(),
        "os_cpu_count": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_gib": _mem_total_gib(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "skmcal": getattr(skmcal, "__version__", "?"),
        "skmcal_git_head": _git("rev-parse", "--short", "HEAD"),
        "skmcal_dirty_files": _git("status", "--porcelain", "--", "skmcal"),
    }
    for mod in ("pynndescent", "numba", "joblib"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            info[mod] = None
    try:
        from threadpoolctl import threadpool_info

        info["threadpools"] = [
            f"{p.get('internal_api')} {p.get('version')} threads={p.get('num_threads')}"
            for p in threadpool_info()
        ]
    except Exception:  # noqa: BLE001
        info["threadpools"] = None
    return info


# ----------------------------------------------------------------- benchmark
def make_neighbors(kind: str):
    if kind == "exact":
        return None
    from pynndescent import PyNNDescentTransformer

    # PyNNDescentTransformer.transform returns each point itself plus
    # n_neighbors - 1 others; skmcal drops self-neighbours and needs 10 more.
    return PyNNDescentTransformer(n_neighbors=11, random_state=0, n_jobs=-1)


def estimator_kwargs(neighbors) -> dict:
    return dict(n_neighbors=10, scale_neighbor=5, scale_factor=3.0, n_eigs=N_EIGS,
                neighbors=neighbors, random_state=0, warm_start=False)


def graph_params(n_nodes: int, neighbors):
    """The exact GraphParams the estimator will use (so timings match its path)."""
    est = SpectralGraphClassifier(**estimator_kwargs(neighbors))
    try:
        return est._graph_params(n_nodes)
    except AttributeError:  # fallback if the private helper is renamed
        return skg.GraphParams(kernel="gaussian", n_neighbors=10, scale_neighbor=5,
                               scale_factor=3.0, n_eigs=N_EIGS, neighbors=neighbors,
                               random_state=0, n_jobs=None)


def warm_up_pynndescent(X_small: np.ndarray) -> dict:
    """Compile pynndescent's numba code (fit + query) on a small sample, through skmcal."""
    params = graph_params(X_small.shape[0], make_neighbors("pynndescent"))
    data = NodeSet(X_small).data
    t0 = now()
    skg._affinity(params, data)
    first = now() - t0
    t0 = now()
    skg._affinity(params, data)
    second = now() - t0
    return {"n": int(X_small.shape[0]), "first_call_s": first, "second_call_s": second}


def graph_phases(X, params, tag: str, store: dict, use_tracemalloc: bool) -> dict:
    """Phase-by-phase graph + spectrum through skmcal.graph internals."""
    info = {}
    if use_tracemalloc:
        tracemalloc.start()
    try:
        with Phase(f"{tag}NodeSet(X) (copy + hash)", store):
            nodes = NodeSet(X)
        with instrument(skg, ["_node_neighbors", "_query_neighbors"]) as (tot, _):
            with Phase(f"{tag}graph: kNN + weights (_affinity)", store):
                W, scales, index = skg._affinity(params, nodes.data)
        store[f"{tag}graph: kNN + weights (_affinity)"]["knn_index_build_s"] = tot.get(
            "_node_neighbors")
        store[f"{tag}graph: kNN + weights (_affinity)"]["knn_query_s"] = tot.get(
            "_query_neighbors")
        with Phase(f"{tag}connected components", store):
            n_comp = int(connected_components(W, directed=False)[0])
        with Phase(f"{tag}spectrum: {params.n_eigs} eigenpairs (laplacian_spectrum)", store):
            evals, V, residual = skg.laplacian_spectrum(W, params.n_eigs, params.random_state)
    finally:
        if use_tracemalloc:
            tracemalloc.stop()
    info.update(
        W_nnz=int(W.nnz), W_dtype=str(W.dtype), self_loops=int(np.count_nonzero(W.diagonal())),
        isolated=int(np.sum(np.asarray(W.sum(axis=1)).ravel() <= 0)),
        n_components=n_comp, residual=float(residual),
        eigenvalues_head=[float(v) for v in evals[:5]], eigenvalue_max=float(evals[-1]),
    )
    if index is not None and not isinstance(index, NearestNeighbors):
        # Does the transformer list each point as its own neighbour? (sample)
        sample = np.arange(0, X.shape[0], max(1, X.shape[0] // 2000))
        Gs = sp.csr_matrix(index.transform(nodes.data[sample]))
        has_self = np.array([s in Gs.indices[Gs.indptr[i]:Gs.indptr[i + 1]]
                             for i, s in enumerate(sample)])
        info["transformer_self_in_row_frac"] = float(has_self.mean())
        info["transformer_entries_per_row"] = float(np.diff(Gs.indptr).mean())
    return info, W


def bench_size(X_all, y_all, N, args, knn_kind, warmup) -> dict:
    X = np.ascontiguousarray(X_all[:N])
    y_true = y_all[:N]
    lab = choose_labeled(y_true, LABELS_PER_CLASS)
    X_lab, y_lab = X[lab], y_true[lab]
    unl = np.setdiff1d(np.arange(N), lab)
    neighbors = make_neighbors(knn_kind)
    params = graph_params(N, neighbors)
    res = {"N": N, "n_labeled": int(lab.size), "knn": knn_kind,
           "knn_detail": ("exact: sklearn NearestNeighbors (skmcal default)" if neighbors is None
                          else f"approximate: {neighbors!r}"),
           "phases": {}, "warmup": warmup}
    ph = res["phases"]
    log(f"N={N}: kNN={res['knn_detail']}, {lab.size} labels")

    # 1. phase run (traced) --------------------------------------------------
    quiet(f"N={N} graph phases")
    info, W_main = graph_phases(X, params, "", ph, args.tracemalloc)
    res["graph_info"] = info
    a = ph["graph: kNN + weights (_affinity)"]
    c = ph["connected components"]
    s = ph[f"spectrum: {N_EIGS} eigenpairs (laplacian_spectrum)"]
    res["graph_plus_spectrum_phase_run_s"] = a["time_s"] + c["time_s"] + s["time_s"]

    # optional: the other kNN method at this N, for comparison (graph only)
    if args.compare_knn and knn_kind == "exact":
        other = "pynndescent"
        p2 = graph_params(N, make_neighbors(other))
        cmp_store = {}
        with instrument(skg, ["_node_neighbors", "_query_neighbors"]) as (tot, _):
            with Phase(f"[compare] graph with {other} kNN", cmp_store):
                W2, _, _ = skg._affinity(p2, NodeSet(X).data)
        e1, e2 = (W_main != 0), (W2 != 0)
        res["compare_knn"] = {
            "method": other, "time_s": cmp_store[f"[compare] graph with {other} kNN"]["time_s"],
            "knn_index_build_s": tot.get("_node_neighbors"),
            "knn_query_s": tot.get("_query_neighbors"),
            "edge_recall_vs_exact": float(e1.multiply(e2).nnz / e1.nnz),
        }
        del W2, e1, e2
    del W_main
    gc.collect()

    # 2. cold fit: empty cache, NodeSet, one ce fit (untraced) ----------------
    skg.GRAPH_CACHE.clear()
    quiet(f"N={N} cold fit")
    builds0 = skg.GRAPH_CACHE.builds
    _CURRENT_PHASE[0] = "cold fit"
    gc.collect()
    with instrument(skg, ["build_graph", "_affinity", "laplacian_spectrum",
                          "_node_neighbors", "_query_neighbors"]) as (tot, _):
        with instrument(skc, ["fit_posterior"]) as (tot_c, _):
            with Contention() as cont:
                t0 = now()
                nodes = NodeSet(X)
                t1 = now()
                SpectralGraphClassifier(loss="ce", nodes=nodes, **estimator_kwargs(neighbors)).fit(
                    X_lab, y_lab)
                t2 = now()
    res["cold_fit"] = {
        "total_s": t2 - t0, "nodeset_s": t1 - t0, "fit_s": t2 - t1,
        "build_graph_s": tot.get("build_graph"), "affinity_s": tot.get("_affinity"),
        "knn_index_build_s": tot.get("_node_neighbors"),
        "knn_query_s": tot.get("_query_neighbors"),
        "spectrum_s": tot.get("laplacian_spectrum"), "solver_s": tot_c.get("fit_posterior"),
        "graph_builds": skg.GRAPH_CACHE.builds - builds0,
        "max_rss_mib_after": rss_mib(), "other_processes_cores": cont.other_cores,
    }
    cf = res["cold_fit"]
    log(f"  cold fit: {cf['total_s']:.2f} s (build_graph {cf['build_graph_s']:.2f} s, "
        f"spectrum {cf['spectrum_s']:.2f} s)")

    # 3. warm fits of each loss on the cached graph ----------------------------
    res["fits"] = {}
    for loss in LOSSES:
        _CURRENT_PHASE[0] = f"fit {loss}"
        if loss in BINARY:
            y_fit = (y_lab == 0).astype(np.int64)  # class 0 ("T-shirt/top") vs the rest
            y_ref = (y_true == 0).astype(np.int64)
        else:
            y_fit, y_ref = y_lab, y_true
        clf = SpectralGraphClassifier(loss=loss, nodes=nodes, **estimator_kwargs(neighbors))
        b0 = skg.GRAPH_CACHE.builds
        clf.fit(X_lab, y_fit)  # untimed first call (cache already holds the graph)
        quiet(f"N={N} fit {loss}")
        with instrument(skc, ["fit_posterior"]) as (tot_c, calls_c), Contention() as cont:
            med, best, times = median_time(lambda c=clf, y=y_fit: c.fit(X_lab, y), args.repeats)
        st = None
        if args.alt_threads_fits:
            with alt_blas_threads(), Contention() as cont1:
                clf.fit(X_lab, y_fit)
                st = median_time(lambda c=clf, y=y_fit: c.fit(X_lab, y), args.repeats)
        acc = float(np.mean(clf.transduction_[unl] == y_ref[unl]))
        res["fits"][loss] = {
            "classes": int(np.unique(y_fit).size), "median_s": med, "min_s": best,
            "times_s": times, "solver_median_s": statistics.median(calls_c["fit_posterior"]),
            "n_iter": int(clf.n_iter_),
            "accuracy_unlabeled": acc, "graph_builds": skg.GRAPH_CACHE.builds - b0,
            "max_rss_mib_after": rss_mib(), "other_processes_cores": cont.other_cores,
        }
        if st is not None:
            res["fits"][loss].update(alt_median_s=st[0], alt_min_s=st[1],
                                     alt_other_processes_cores=cont1.other_cores)
        log(f"  fit {loss}: median {med * 1e3:.1f} ms (min {best * 1e3:.1f})"
            + (f", {ALT_THREADS_LABEL[0]} {st[0] * 1e3:.1f} ms" if st else "") + ", "
            f"n_iter={clf.n_iter_}, acc={acc:.3f}, builds={skg.GRAPH_CACHE.builds - b0}")

    # 4. GridSearchCV on the cached graph (warm) -------------------------------
    res["gridsearch"] = {}
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)

    def run_gs(nodeset, loss):
        gs = GridSearchCV(
            SpectralGraphClassifier(loss=loss, nodes=nodeset, **estimator_kwargs(neighbors)),
            GRID, cv=cv, n_jobs=None, refit=True,
        )
        return gs.fit(X_lab, y_lab)

    for loss in ("ce", "mgr"):
        _CURRENT_PHASE[0] = f"GridSearchCV {loss}"
        b0 = skg.GRAPH_CACHE.builds
        run_gs(nodes, loss)  # first call untimed
        quiet(f"N={N} GridSearchCV {loss} warm")
        gss = []
        with Contention() as cont:
            med, best, times = median_time(
                lambda out=gss, name=loss: out.append(run_gs(nodes, name)), args.gs_repeats
            )
        gs = gss[-1]
        cvr = gs.cv_results_
        n_splits = cv.get_n_splits()
        res["gridsearch"][loss] = {
            "median_s": med, "min_s": best, "times_s": times,
            "n_fits": len(cvr["params"]) * n_splits + 1,
            # from the last timed run: time inside estimator.fit / scoring (sklearn's clock)
            "sum_fit_s": float(np.sum(cvr["mean_fit_time"]) * n_splits + gs.refit_time_),
            "sum_score_s": float(np.sum(cvr["mean_score_time"]) * n_splits),
            "fit_time_by_params_ms": {
                f"tau={p['tau']},gamma={p['gamma']}": round(1e3 * float(t), 1)
                for p, t in zip(cvr["params"], cvr["mean_fit_time"], strict=False)},
            "best_params": gs.best_params_, "best_cv_score": float(gs.best_score_),
            "graph_builds_warm": skg.GRAPH_CACHE.builds - b0,
            "max_rss_mib_after": rss_mib(), "other_processes_cores": cont.other_cores,
        }
        log(f"  GridSearchCV {loss}: warm median {med:.3f} s (sum of fits "
            f"{res['gridsearch'][loss]['sum_fit_s']:.2f} s, scoring "
            f"{res['gridsearch'][loss]['sum_score_s']:.2f} s)")
        del gss, gs

    # 5. GridSearchCV from an empty cache (ce): NodeSet + 1 graph build + 28 fits
    if not args.skip_gs_cold:
        _CURRENT_PHASE[0] = "GridSearchCV ce cold"
        del clf, nodes  # drop the warm graph so that only one graph is alive
        skg.GRAPH_CACHE.clear()
        gc.collect()
        quiet(f"N={N} GridSearchCV ce cold")
        entry = res["gridsearch"]["ce"]
        b0 = skg.GRAPH_CACHE.builds
        with instrument(skg, ["build_graph", "_node_neighbors", "_query_neighbors",
                              "laplacian_spectrum"]) as (tot, _), Contention() as cont:
            t0 = now()
            run_gs(NodeSet(X), "ce")
            entry["cold_s"] = now() - t0
        entry["cold_build_graph_s"] = tot.get("build_graph")
        entry["cold_knn_index_build_s"] = tot.get("_node_neighbors")
        entry["cold_knn_query_s"] = tot.get("_query_neighbors")
        entry["cold_spectrum_s"] = tot.get("laplacian_spectrum")
        entry["other_processes_cores_cold"] = cont.other_cores
        entry["graph_builds_cold"] = skg.GRAPH_CACHE.builds - b0
        entry["max_rss_mib_after_cold"] = rss_mib()
        log(f"  GridSearchCV ce cold: {entry['cold_s']:.2f} s, "
            f"{entry['graph_builds_cold']} graph build(s)")
    skg.GRAPH_CACHE.clear()
    gc.collect()
    return res


# ------------------------------------------------------------------- reports
def _fmt_s(v):
    if v is None:
        return "–"
    return f"{v * 1e3:.1f} ms" if v < 1.0 else f"{v:.2f} s"


def _fc(v):
    """Other-process cores, or a dash where the block was too short to tell."""
    return "–" if v is None or v != v else f"{v:.2f}"


def _status(ok):
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def render(meta: dict, results: list[dict], args) -> str:
    Ns = [r["N"] for r in results]
    lines = []
    lines.append("# skmcal core benchmark (benchmarks/bench_core.py)")
    lines.append("")
    lines.append(f"- date: {meta['date']}")
    lines.append(f"- command: `{meta['command']}`")
    lines.append(f"- data: {meta['data']}")
    lines.append(
        f"- machine: {meta['host_cpu']}, {meta['usable_cores']} usable cores "
        f"(os.cpu_count={meta['os_cpu_count']}), {meta['mem_total_gib']} GiB RAM, "
        f"{meta['platform']}")
    lines.append(
        f"- versions: python {meta['python']}, numpy {meta['numpy']}, scipy {meta['scipy']}, "
        f"scikit-learn {meta['sklearn']}, pynndescent {meta['pynndescent']}, "
        f"numba {meta['numba']}, skmcal {meta['skmcal']} (git {meta['skmcal_git_head']}"
        + (", skmcal/ has uncommitted changes" if meta.get("skmcal_dirty_files") else "") + ")")
    lines.append(f"- thread pools: {'; '.join(meta.get('threadpools') or [])}")
    lines.append(f"- load average (1/5/15 min) at start: {meta.get('loadavg_start')}, at end: "
                 f"{meta.get('loadavg_end')} (other processes on the machine share the cores)")
    wl = meta.get("wait_idle", {}).get("log", [])
    lines.append(
        f"- BLAS threads: whole-run limit {meta.get('blas_threads_limit') or 'none'}; skmcal "
        f"fits use {meta.get('skmcal_fit_threads')}; "
        f"waited for a quiet machine (< 0.25 cores used by others, up to "
        f"{meta.get('wait_idle', {}).get('max_wait_s', 0):.0f} s) before each measurement: "
        f"{sum(w['waited_s'] for w in wl):.0f} s in total, "
        f"{sum(w['other_cores_last_window'] >= 0.25 for w in wl)} of {len(wl)} waits timed out")
    lines.append(
        f"- model: gaussian kernel, n_neighbors=10, scale_neighbor=5, scale_factor=3, "
        f"M={N_EIGS}, random_state=0; {LABELS_PER_CLASS} labels/class "
        f"({LABELS_PER_CLASS * N_CLASSES} labels); binary losses: class 0 vs rest")
    lines.append(
        f"- timings: perf_counter; fits = median of {args.repeats} (after one untimed call), "
        f"GridSearchCV warm = median of {args.gs_repeats}; graph phases: median "
        f"[individual values] of the graph builds of the run: the phase run (traced, "
        f"through skmcal.graph._affinity / laplacian_spectrum), the cold fit and the "
        f"cold GridSearchCV (both through build_graph, untraced)")
    lines.append("")

    head = "| phase | " + " | ".join(f"N={n:,}" for n in Ns) + " | target | status |"
    sep = "|---|" + "---|" * len(Ns) + "---|---|"
    lines += ["## Timings", "", head, sep]

    def row(label, values, target="", status=""):
        lines.append(f"| {label} | " + " | ".join(values) + f" | {target} | {status} |")

    row("kNN method", [r["knn"] for r in results])
    row("pynndescent warm-up (numba compile; small sample, 1st call / 2nd call)",
        [(f"{_fmt_s(r['warmup']['first_call_s'])} / {_fmt_s(r['warmup']['second_call_s'])} "
          f"(n={r['warmup']['n']})") if r.get("warmup") else "–" for r in results])
    P = [r["phases"] for r in results]
    aff = "graph: kNN + weights (_affinity)"
    spec = f"spectrum: {N_EIGS} eigenpairs (laplacian_spectrum)"
    row("NodeSet(X): copy to float64 + hash", [_fmt_s(p["NodeSet(X) (copy + hash)"]["time_s"])
                                               for p in P])
    def builds(r):
        """Each graph build of the run: phase run (traced), cold fit, GridSearchCV cold."""
        p, cf, gc_ = r["phases"], r["cold_fit"], r["gridsearch"]["ce"]
        out = {"knn build": [p[aff].get("knn_index_build_s"), cf.get("knn_index_build_s")],
               "knn query": [p[aff].get("knn_query_s"), cf.get("knn_query_s")],
               "spectrum": [p[spec]["time_s"], cf.get("spectrum_s")],
               "total": [r["graph_plus_spectrum_phase_run_s"], cf.get("build_graph_s")]}
        if gc_.get("cold_build_graph_s") is not None:
            out["knn build"].append(gc_.get("cold_knn_index_build_s"))
            out["knn query"].append(gc_.get("cold_knn_query_s"))
            out["spectrum"].append(gc_.get("cold_spectrum_s"))
            out["total"].append(gc_.get("cold_build_graph_s"))
        return out

    def med_of(vals):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "–"
        return (f"{_fmt_s(statistics.median(vals))} "
                f"[{', '.join(_fmt_s(v) for v in vals)}]")

    B = [builds(r) for r in results]
    row("&nbsp;&nbsp;kNN of the nodes (index + search, _node_neighbors)",
        [med_of(b["knn build"]) for b in B])
    row("&nbsp;&nbsp;kNN search of other points (_query_neighbors)",
        [med_of(b["knn query"]) for b in B])
    row("&nbsp;&nbsp;weights + symmetrise (phase run)", [_fmt_s(
        p[aff]["time_s"] - (p[aff].get("knn_index_build_s") or 0)
        - (p[aff].get("knn_query_s") or 0)) for p in P])
    row("graph construction, kNN + weights (phase run)", [_fmt_s(p[aff]["time_s"]) for p in P])
    row("connected components (phase run)", [_fmt_s(p["connected components"]["time_s"])
                                             for p in P])
    row(f"spectrum ({N_EIGS} eigenpairs, ARPACK)", [med_of(b["spectrum"]) for b in B])
    vals, st = [], "n/a"
    for r, b in zip(results, B, strict=False):
        vals.append(med_of(b["total"]))
        good = [v for v in b["total"] if v is not None]
        if r["N"] == 70000 and good:
            st = _status(statistics.median(good) <= TARGET_GRAPH_SPECTRUM_S)
    row("**graph + spectrum** = build_graph (kNN + weights + components + spectrum)", vals,
        f"≤ {TARGET_GRAPH_SPECTRUM_S:.0f} s at 70k (median)", st)
    if any("compare_knn" in r for r in results):
        row("[compare] graph with pynndescent kNN (build / query; edge recall vs exact)", [
            (f"{_fmt_s(r['compare_knn']['time_s'])} "
             f"({_fmt_s(r['compare_knn']['knn_index_build_s'])}"
             f" / {_fmt_s(r['compare_knn']['knn_query_s'])}; "
             f"{r['compare_knn']['edge_recall_vs_exact']:.3f})") if "compare_knn" in r else "–"
            for r in results])
    row("cold fit: NodeSet + graph + spectrum + ce model", [
        _fmt_s(r["cold_fit"]["total_s"]) for r in results])
    for loss in LOSSES:
        vals = [f"{_fmt_s(r['fits'][loss]['median_s'])} (min {_fmt_s(r['fits'][loss]['min_s'])})"
                for r in results]
        if loss == "ce":
            oks = [r["fits"]["ce"]["median_s"] * 1e3 <= TARGET_CE_FIT_MS for r in results]
            row(f"fit {loss} (warm, cached graph)", vals, f"≤ {TARGET_CE_FIT_MS:.0f} ms",
                " / ".join(_status(o) for o in oks))
        else:
            row(f"fit {loss} (warm, cached graph)", vals)
    if all("alt_median_s" in r["fits"]["ce"] for r in results):
        oks = [r["fits"]["ce"]["alt_median_s"] * 1e3 <= TARGET_CE_FIT_MS for r in results]
        row(f"fit ce with {meta.get('alt_threads_label')}",
            [f"{_fmt_s(r['fits']['ce']['alt_median_s'])} "
             f"(min {_fmt_s(r['fits']['ce']['alt_min_s'])})" for r in results],
            f"≤ {TARGET_CE_FIT_MS:.0f} ms", " / ".join(_status(o) for o in oks))
    g = [r["gridsearch"]["ce"] for r in results]
    row("GridSearchCV ce 3x3x3 (27+1 fits), warm cache", [_fmt_s(e["median_s"]) for e in g])
    row("GridSearchCV ce 3x3x3, cold (empty cache, NodeSet + 1 graph build)",
        [_fmt_s(e.get("cold_s")) for e in g])
    ratios_cold = [e.get("cold_s", float("nan")) / r["cold_fit"]["total_s"]
                   for e, r in zip(g, results, strict=False)]
    row("ratio GS cold / cold single fit", [f"{x:.2f}x" for x in ratios_cold],
        f"≤ {TARGET_GS_RATIO:.0f}x", " / ".join(_status(x <= TARGET_GS_RATIO) for x in ratios_cold))
    ratios_wc = [e["median_s"] / r["cold_fit"]["total_s"] for e, r in zip(g, results, strict=False)]
    row("ratio GS warm / cold single fit", [f"{x:.3f}x" for x in ratios_wc],
        f"≤ {TARGET_GS_RATIO:.0f}x", " / ".join(_status(x <= TARGET_GS_RATIO) for x in ratios_wc))
    ratios_ww = [
        e["median_s"] / r["fits"]["ce"]["median_s"] for e, r in zip(g, results, strict=False)
    ]
    row("ratio GS warm / warm single ce fit (28 fits + 27 scorings inside)",
        [f"{x:.1f}x" for x in ratios_ww], f"≤ {TARGET_GS_RATIO:.0f}x (honest check)",
        " / ".join(_status(x <= TARGET_GS_RATIO) for x in ratios_ww))
    row("&nbsp;&nbsp;inside GS ce warm: sum of 28 fits / sum of 27 scorings (sklearn clock)",
        [f"{_fmt_s(e['sum_fit_s'])} / {_fmt_s(e['sum_score_s'])}" for e in g])
    gm = [r["gridsearch"]["mgr"] for r in results]
    row("GridSearchCV mgr 3x3x3, warm cache (ratio to warm mgr fit)", [
        f"{_fmt_s(e['median_s'])} ({e['median_s'] / r['fits']['mgr']['median_s']:.1f}x)"
        for e, r in zip(gm, results, strict=False)])
    lines.append("")

    # memory
    lines += ["## Memory", "",
              "max RSS = process high-water mark (ru_maxrss) after the phase (monotonic over "
              "the run, so it includes the data and earlier phases); tracemalloc peak = extra "
              "NumPy/Python memory at the phase's peak over its start (not numba/pynndescent "
              "internals, BLAS or ARPACK Fortran work arrays).", "",
              "| phase | " + " | ".join(f"N={n:,}: max RSS / tracemalloc peak" for n in Ns) + " |",
              "|---|" + "---|" * len(Ns)]
    for name in P[0]:
        vals = []
        for p in P:
            e = p.get(name, {})
            tm = e.get("tracemalloc_peak_mib")
            vals.append(f"{e.get('max_rss_mib_after', float('nan')):.0f} MiB / "
                        + (f"{tm:.0f} MiB" if tm is not None else "–"))
        lines.append(f"| {name} | " + " | ".join(vals) + " |")
    lines.append("| after cold fit | " + " | ".join(
        f"{r['cold_fit']['max_rss_mib_after']:.0f} MiB / –" for r in results) + " |")
    lines.append("| after all fits | " + " | ".join(
        f"{r['fits']['ce']['max_rss_mib_after']:.0f} MiB / –" for r in results) + " |")
    lines.append("| after GridSearchCV (cold) | " + " | ".join(
        f"{r['gridsearch']['ce'].get('max_rss_mib_after_cold', float('nan')):.0f} MiB / –"
        for r in results) + " |")
    lines.append("")

    # contention
    lines += ["## CPU used by other processes during each measurement", "",
              "Cores' worth of CPU time used by other processes (from /proc/stat minus this "
              "process's own CPU time) divided by the wall time of the measurement; the "
              f"machine has {meta['usable_cores']} cores. Values well above 0 mean the timing "
              "was slowed by concurrent work; – : block shorter than 0.5 s (not measurable).", "",
              "| measurement | " + " | ".join(f"N={n:,}" for n in Ns) + " |",
              "|---|" + "---|" * len(Ns)]
    for name in P[0]:
        lines.append(f"| {name} | " + " | ".join(
            _fc(p.get(name, {}).get('other_processes_cores', float('nan'))) for p in P) + " |")
    lines.append("| cold fit | " + " | ".join(
        _fc(r['cold_fit']['other_processes_cores']) for r in results) + " |")
    for loss in LOSSES:
        lines.append(f"| fit {loss} (all repeats) | " + " | ".join(
            _fc(r['fits'][loss]['other_processes_cores']) for r in results) + " |")
    if all("alt_other_processes_cores" in r["fits"]["ce"] for r in results):
        lines.append("| fit ce, alternative BLAS threading | " + " | ".join(
            _fc(r['fits']['ce']['alt_other_processes_cores']) for r in results) + " |")
    for loss in ("ce", "mgr"):
        lines.append(f"| GridSearchCV {loss} warm | " + " | ".join(
            _fc(r['gridsearch'][loss]['other_processes_cores']) for r in results) + " |")
    lines.append("| GridSearchCV ce cold | " + " | ".join(
        _fc(r['gridsearch']['ce'].get('other_processes_cores_cold', float('nan')))
        for r in results) + " |")
    lines.append("")

    # fit details
    lines += ["## Fits on the cached graph", "",
              "median/min over the timed repeats; solver = median of skmcal.posterior."
              "fit_posterior per fit; overhead = median fit - solver (validation, node "
              f"lookup, graph-cache key); alt. threads = the same fit with "
              f"{meta.get('alt_threads_label')}.", "",
              "| N | loss | classes | median | min | solver (fit_posterior) | overhead | "
              "median, alt. threads | Newton iters | accuracy on unlabeled nodes | "
              "graph builds during fit |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for loss in LOSSES:
            f = r["fits"][loss]
            lines.append(
                f"| {r['N']:,} | {loss} | {f['classes']} | {_fmt_s(f['median_s'])} | "
                f"{_fmt_s(f['min_s'])} | {_fmt_s(f['solver_median_s'])} | "
                f"{_fmt_s(f['median_s'] - f['solver_median_s'])} | "
                f"{_fmt_s(f.get('alt_median_s'))} | {f['n_iter']} | "
                f"{f['accuracy_unlabeled']:.3f} | {f['graph_builds']} |")
    lines.append("")

    # notes
    lines += ["## Graph details and cold-fit breakdown", ""]
    for r in results:
        gi, cf = r["graph_info"], r["cold_fit"]
        lines.append(
            f"- N={r['N']:,}: kNN {r['knn_detail']}; W nnz={gi['W_nnz']:,} ({gi['W_dtype']}), "
            f"self-loops={gi['self_loops']}, isolated={gi['isolated']}, "
            f"components={gi['n_components']}, eigen residual={gi['residual']:.1e}, "
            f"lambda_2..5={[round(v, 5) for v in gi['eigenvalues_head'][1:]]}, "
            f"lambda_50={gi['eigenvalue_max']:.4f}"
            + (f"; transformer lists the point itself in "
               f"{100 * gi['transformer_self_in_row_frac']:.1f}% of rows "
               f"({gi['transformer_entries_per_row']:.1f} entries/row; skmcal drops self)"
               if "transformer_self_in_row_frac" in gi else ""))
        lines.append(
            f"  cold fit {_fmt_s(cf['total_s'])} = NodeSet {_fmt_s(cf['nodeset_s'])} + "
            f"build_graph {_fmt_s(cf['build_graph_s'])} "
            f"(kNN build {_fmt_s(cf['knn_index_build_s'])}"
            f", kNN query {_fmt_s(cf['knn_query_s'])}, _affinity {_fmt_s(cf['affinity_s'])}, "
            f"spectrum {_fmt_s(cf['spectrum_s'])}) + ce solver {_fmt_s(cf['solver_s'])} + rest "
            f"{_fmt_s(cf['fit_s'] - (cf['build_graph_s'] or 0) - (cf['solver_s'] or 0))}; "
            f"graph builds: cold fit {cf['graph_builds']}, GridSearchCV cold "
            f"{r['gridsearch']['ce'].get('graph_builds_cold', '–')}, GridSearchCV warm "
            f"{r['gridsearch']['ce']['graph_builds_warm']}")
        lines.append(
            f"  GridSearchCV ce best {r['gridsearch']['ce']['best_params']} "
            f"(cv acc {r['gridsearch']['ce']['best_cv_score']:.3f}); mgr best "
            f"{r['gridsearch']['mgr']['best_params']} "
            f"(cv acc {r['gridsearch']['mgr']['best_cv_score']:.3f})")
    for r in results:
        lines.append(f"- N={r['N']:,}: GridSearchCV ce mean fit time by (tau, gamma), ms: "
                     f"{r['gridsearch']['ce']['fit_time_by_params_ms']}")
    if WARNINGS:
        lines += ["", "## Warnings raised", ""]
        seen = set()
        for w in WARNINGS:
            key = (w["phase"], w["category"], w["message"])
            if key not in seen:
                seen.add(key)
                lines.append(f"- [{w['phase']}] {w['category']}: {w['message']}")
    lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 70000])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--data", choices=["auto", "fashion-mnist", "synthetic"], default="auto")
    ap.add_argument("--knn", choices=["auto", "exact", "pynndescent"], default="auto",
                    help="auto: exact below --exact-below nodes, pynndescent at and above")
    ap.add_argument("--exact-below", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7, help="timed repeats of each fit")
    ap.add_argument("--gs-repeats", type=int, default=3, help="timed repeats of GridSearchCV")
    ap.add_argument("--no-tracemalloc", dest="tracemalloc", action="store_false")
    ap.add_argument("--no-compare-knn", dest="compare_knn", action="store_false",
                    help="skip the pynndescent graph at sizes that use exact kNN")
    ap.add_argument("--skip-gs-cold", action="store_true")
    ap.add_argument("--no-alt-threads-fits", dest="alt_threads_fits", action="store_false",
                    help="skip the extra fit timings with the other BLAS threading")
    ap.add_argument("--wait-idle", type=float, default=60.0, metavar="SECONDS",
                    help="before each measurement wait up to this long for other processes "
                         "to use < 0.25 cores (0: never wait)")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="limit BLAS threads for the whole run (threadpoolctl); default: "
                         "library default")
    ap.add_argument("--tag", default=None, help="results file suffix (default: the sizes)")
    args = ap.parse_args(argv)

    warnings.simplefilter("always")
    warnings.showwarning = _record_warning
    QUIET["max_wait_s"] = args.wait_idle
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=args.blas_threads, user_api="blas")

    meta = machine_info()
    meta["loadavg_start"] = os.getloadavg()
    meta["command"] = "python " + " ".join([os.path.relpath(__file__)] + sys.argv[1:])
    if args.data in ("auto", "fashion-mnist") and FMNIST_DIR.is_dir():
        t0 = now()
        X_all, y_all = load_fashion_mnist(FMNIST_DIR)
        meta["data"] = (f"Fashion-MNIST from {FMNIST_DIR} (train+test, {X_all.shape[0]:,} x "
                        f"{X_all.shape[1]}, pixels/255 as float64; first N rows)")
        log(f"loaded Fashion-MNIST {X_all.shape} in {now() - t0:.1f} s")
    else:
        if args.data == "fashion-mnist":
            raise SystemExit(f"{FMNIST_DIR} not found")
        X_all, y_all = make_synthetic()
        why = "--data synthetic" if args.data == "synthetic" else f"{FMNIST_DIR} not found"
        meta["data"] = (f"SYNTHETIC ({why}): 10 Gaussian clusters on a 16-d "
                        "latent space embedded in 784-d + noise, 70,000 x 784, in [0,1]")
        log(f"synthetic data ({why})")
    if max(args.sizes) > X_all.shape[0]:
        raise SystemExit(f"--sizes up to {X_all.shape[0]}")
    log(f"machine: {meta['host_cpu']}, {meta['usable_cores']} cores; "
        f"numpy {meta['numpy']}, scipy {meta['scipy']}, sklearn {meta['sklearn']}")

    def kind_for(n):
        if args.knn != "auto":
            return args.knn
        return "exact" if n < args.exact_below else "pynndescent"

    needs_pynn = any(kind_for(n) == "pynndescent" for n in args.sizes) or (
        args.compare_knn and any(n < args.exact_below for n in args.sizes))
    warmup = None
    if needs_pynn:
        _CURRENT_PHASE[0] = "pynndescent warm-up"
        log("pynndescent warm-up (numba compilation) ...")
        warmup = warm_up_pynndescent(X_all[:2000])
        log(f"  warm-up: first call {warmup['first_call_s']:.1f} s, "
            f"second {warmup['second_call_s']:.2f} s")
        meta["pynndescent_warmup"] = warmup

    results = []
    for n in args.sizes:
        kind = kind_for(n)
        results.append(bench_size(X_all, y_all, n, args, kind,
                                  warmup if kind == "pynndescent" else None))
    meta["max_rss_mib_end"] = rss_mib()
    meta["loadavg_end"] = os.getloadavg()
    meta["blas_threads_limit"] = args.blas_threads
    meta["alt_threads_label"] = ALT_THREADS_LABEL[0]
    meta["skmcal_fit_threads"] = skmcal_fit_threads()
    meta["wait_idle"] = QUIET

    report = render(meta, results, args)
    print()
    print(report)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = args.tag or "_".join(str(n) for n in args.sizes)
    (out / f"bench_core_{tag}.md").write_text(report)
    with open(out / f"bench_core_{tag}.json", "w") as f:
        json.dump({"meta": meta, "targets": {
            "graph_plus_spectrum_70k_s": TARGET_GRAPH_SPECTRUM_S,
            "ce_fit_ms": TARGET_CE_FIT_MS, "gridsearch_over_cold_fit": TARGET_GS_RATIO},
            "results": results, "warnings": WARNINGS}, f, indent=2, default=str)
    log(f"wrote {out / f'bench_core_{tag}.md'} and .json")


if __name__ == "__main__":
    main()
