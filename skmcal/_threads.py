"""BLAS threads for the small dense algebra of fits and acquisition.

The matrices of a fit or of a batch of acquisition values are small (at most
a few thousand rows). On a machine with few cores, multi-threaded OpenBLAS
gains little on them and loses badly as soon as another process holds a
core: its threads spin waiting for each other (measured on 2 cores with one
busy: a ce fit, 10 classes, M=50, 520 labels, took 1.6 s with 2 BLAS threads
and 0.1 s with 1). These code paths therefore run with one BLAS thread by
default; :func:`set_blas_threads` changes that (None keeps the BLAS
libraries' own setting, e.g. one chosen with ``threadpoolctl``). The graph
and spectrum computations are not limited.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from numbers import Integral

import joblib
from threadpoolctl import ThreadpoolController

_LIMIT: dict[str, int | None] = {"blas": 1}
# The BLAS pools' size where this thread entered its outermost small_algebra.
_OUTSIDE = threading.local()
# The kept thread pools by size (:func:`thread_pool`); a forked child has none of their threads.
_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_IN_POOL = threading.local()
# This thread's setting of solver_threads().
_SOLVER = threading.local()
os.register_at_fork(after_in_child=_POOLS.clear)


def set_blas_threads(n_threads: int | None) -> int | None:
    """Set the BLAS threads of skmcal's fits and acquisition values; return the previous value.

    Parameters
    ----------
    n_threads : int >= 1 or None
        BLAS threads inside fits and acquisition (default 1, see the module
        documentation); None leaves the BLAS libraries' own setting.

    Returns
    -------
    int or None
        The previous setting.

    Examples
    --------
    >>> import skmcal
    >>> previous = skmcal.set_blas_threads(None)  # the libraries' own threads
    >>> skmcal.set_blas_threads(previous)
    """
    if n_threads is not None and (
        not isinstance(n_threads, Integral) or isinstance(n_threads, bool) or n_threads < 1
    ):
        raise ValueError(f"n_threads must be a positive int or None; got {n_threads!r}.")
    previous = _LIMIT["blas"]
    _LIMIT["blas"] = None if n_threads is None else int(n_threads)
    return previous


def n_jobs_threads(n_jobs) -> int | None:
    """Threads for an estimator's ``n_jobs``: joblib's reading of it (-1: every core),
    at most ``os.cpu_count()``; None stays None.

    Threads beyond the cores only spin against each other (BLAS pools most of
    all: a 300 x 300 ``eigh`` under a limit of 16 threads on 2 cores took 7.5 s).
    """
    if n_jobs is None:
        return None
    if n_jobs == 0:
        raise ValueError(
            "n_jobs must be a non-zero int or None (-1: every core); got 0."
        )
    return max(1, min(joblib.effective_n_jobs(n_jobs), os.cpu_count() or 1))


def get_blas_threads() -> int | None:
    """The current setting of :func:`set_blas_threads`."""
    return _LIMIT["blas"]


@functools.lru_cache(maxsize=1)
def _controller():
    return ThreadpoolController()


def _pool_size() -> int:
    """The threads the BLAS libraries may use now, at most ``os.cpu_count()``."""
    cores = os.cpu_count() or 1
    pools = [lib.num_threads for lib in _controller().select(user_api="blas").lib_controllers]
    return max(1, min([cores, *pools]) if pools else cores)


def scoring_threads(n_threads: int | None) -> int:
    """Threads that score pieces of candidates: ``n_threads``, or (None) the BLAS pool's size.

    None takes the threads the BLAS libraries may use here: every core in a
    plain process, a joblib worker's share of them (joblib limits its
    workers' pools), one inside ``threadpoolctl.threadpool_limits(1)``. Inside
    :func:`small_algebra`, the size the pools had where it was entered (its
    own limit is for the BLAS calls, not for the scoring threads).
    """
    if n_threads is not None:
        return max(1, int(n_threads))
    outside = getattr(_OUTSIDE, "size", None)
    return _pool_size() if outside is None else outside


@contextmanager
def small_algebra():
    """Context manager limiting BLAS threads to the :func:`set_blas_threads` setting."""
    if _LIMIT["blas"] is None:
        yield
        return
    outermost = getattr(_OUTSIDE, "size", None) is None
    if outermost:
        _OUTSIDE.size = _pool_size()
    try:
        with _controller().limit(limits=_LIMIT["blas"], user_api="blas"):
            yield
    finally:
        if outermost:
            _OUTSIDE.size = None


def thread_pool(workers: int) -> ThreadPoolExecutor | None:
    """This process's pool of ``workers`` threads, created at its first use and kept; None
    in one of its threads (a piece that splits again runs its parts itself: no thread
    waits for its own pool).

    Scoring runs a few pools per query; starting their threads each time took
    about 0.6 ms a pool. A child forked from this process starts new pools.
    """
    if getattr(_IN_POOL, "inside", False):
        return None
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            pool = _POOLS[workers] = ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="skmcal", initializer=_mark_pool_thread
            )
        return pool


def run_parts(n_parts: int, function):
    """``[function(0), ..., function(n_parts - 1)]``, the parts on threads.

    Part 0 runs here, the others on the kept pool of ``n_parts - 1`` threads
    (:func:`thread_pool`; all here inside one of its threads). Every part has
    ended when this returns, also when one raised (the first error raises).
    The parts must write to disjoint memory; NumPy and SciPy release the GIL
    in their array loops and sparse products, so the parts run side by side.
    """
    pool = thread_pool(n_parts - 1) if n_parts > 1 else None
    if pool is None:
        return [function(i) for i in range(n_parts)]
    futures = [pool.submit(function, i) for i in range(1, n_parts)]
    try:
        first = function(0)
    finally:
        concurrent.futures.wait(futures)
    return [first, *(future.result() for future in futures)]


@contextmanager
def local_setting(local: threading.local, name: str, value):
    """``local.name = value`` in this block (in this thread), the previous value
    (None where there was none) restored after."""
    previous = getattr(local, name, None)
    setattr(local, name, value)
    try:
        yield
    finally:
        setattr(local, name, previous)


def solver_threads(n_threads: int | None):
    """Threads of the full-graph solves (:func:`row_threads`) in this block, in this thread."""
    return local_setting(_SOLVER, "n_threads", n_threads)


def row_threads() -> int:
    """Threads over which the full-graph solves split their rows: the :func:`solver_threads`
    setting where one is made, resolved like :func:`scoring_threads` (None: the BLAS
    pools' size, every core in a plain process)."""
    return scoring_threads(getattr(_SOLVER, "n_threads", None))


def _mark_pool_thread():
    _IN_POOL.inside = True


def with_small_algebra(function):
    """Decorator: run ``function`` inside :func:`small_algebra`."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with small_algebra():
            return function(*args, **kwargs)

    return wrapper
