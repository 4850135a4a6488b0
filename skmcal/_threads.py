"""BLAS thread limit for the small dense algebra of fits and acquisition.

The matrices of a fit or of a batch of acquisition values are small (at most
a few thousand rows). On a machine with few cores, multi-threaded OpenBLAS
gains little on them and loses badly as soon as another process holds a
core: its threads spin waiting for each other (measured on 2 cores with one
busy: a ce fit, 10 classes, M=50, 520 labels, took 1.6 s with 2 BLAS threads
and 0.1 s with 1). These code paths therefore run with :data:`SMALL_ALGEBRA_THREADS`
BLAS threads; set it to None to keep the BLAS libraries' own setting.
"""

from __future__ import annotations

import functools
from contextlib import nullcontext

from threadpoolctl import ThreadpoolController

#: BLAS threads used inside fits and acquisition; None keeps the library default.
SMALL_ALGEBRA_THREADS: int | None = 1


@functools.lru_cache(maxsize=1)
def _controller():
    return ThreadpoolController()


def small_algebra():
    """Context manager limiting BLAS threads to :data:`SMALL_ALGEBRA_THREADS`."""
    if SMALL_ALGEBRA_THREADS is None:
        return nullcontext()
    return _controller().limit(limits=SMALL_ALGEBRA_THREADS, user_api="blas")


def with_small_algebra(function):
    """Decorator: run ``function`` inside :func:`small_algebra`."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with small_algebra():
            return function(*args, **kwargs)

    return wrapper
