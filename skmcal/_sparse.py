"""The sparse-matrix-times-block product of the large-graph eigensolver, on every core.

scipy's ``csr_matrix @ ndarray`` runs on one core and holds the GIL, so
neither threads nor BLAS settings spread it. When numba is installed (it comes
with the ``fast`` extra, through pynndescent), :func:`block_product` runs the
same row-by-row product on numba's threads instead: each output row is the
sum, in the stored order of the row's entries, of ``a_ij * Y[j]``, exactly
what scipy computes, so the result is the same whatever the thread count.
Without numba it is scipy's product.
"""

from __future__ import annotations

import contextlib
import functools
import threading

import numpy as np
import scipy.sparse as sp

from ._threads import local_setting

#: Below this many rows the product stays with scipy (the kernel's one-off
#: compilation, about a second, would cost more than it saves).
PARALLEL_MIN_ROWS = 50_000

# numba's default "workqueue" threading layer must not be entered from two
# threads at once; the kernel already uses every core, so calls queue here.
_LOCK = threading.Lock()
_LOCAL = threading.local()


def limit_threads(n_threads: int | None):
    """Run :func:`block_product` on at most ``n_threads`` numba threads in this block.

    None leaves numba's own setting (all cores unless ``NUMBA_NUM_THREADS``
    says otherwise).
    """
    return local_setting(_LOCAL, "n_threads", n_threads)


@functools.lru_cache(maxsize=1)
def _kernel():
    """The compiled kernel, or None where numba is not installed."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(parallel=True, nogil=True, cache=False)
    def product(indptr, indices, data, Y, scale, shift, prev, prev_coef, out):  # pragma: no cover
        for i in numba.prange(out.shape[0]):
            row = np.zeros(out.shape[1], dtype=out.dtype)
            for p in range(indptr[i], indptr[i + 1]):
                a = data[p]
                Yj = Y[indices[p]]
                for c in range(out.shape[1]):
                    row[c] += a * Yj[c]
            for c in range(out.shape[1]):
                out[i, c] = scale * row[c] + shift * Y[i, c] + prev_coef * prev[i, c]

    return product


#: Rows handed to a thread at a time. Rows differ in cost (their number of
#: entries, and how far their neighbours lie in memory), so equal shares of the
#: rows per thread (numba's default, static schedule) leave threads waiting.
CHUNK_ROWS = 4096


@contextlib.contextmanager
def _numba_settings(n_threads):
    """numba's threads for one kernel call: ``n_threads`` of them (None: as set),
    rows handed out :data:`CHUNK_ROWS` at a time."""
    import numba

    previous = numba.get_num_threads()
    if n_threads is not None:
        numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        with numba.parallel_chunksize(CHUNK_ROWS):
            yield
    finally:
        numba.set_num_threads(previous)


def block_product(A: sp.csr_matrix, Y: np.ndarray, scale=1.0, shift=0.0, prev=None, prev_coef=0.0):
    """``scale * (A @ Y) + shift * Y + prev_coef * prev``, in ``A``'s float dtype.

    The step of a three-term (Chebyshev) recurrence in one pass over the
    block; with the defaults, ``A @ Y``.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix of shape (n, n)
        Its dtype (float32 or float64) is the result's.
    Y : ndarray of shape (n, k) or (n,)
        A vector, or a block in another dtype than ``A``'s, takes scipy's product.
    scale : float, default=1.0
    shift : float, default=0.0
    prev : ndarray of shape (n, k) or None, default=None
        None: the term is left out.
    prev_coef : float, default=0.0

    Returns
    -------
    ndarray of shape (n, k)
    """
    dtype = A.dtype.type
    kernel = _kernel() if A.shape[0] >= PARALLEL_MIN_ROWS else None
    if kernel is None or Y.dtype != A.dtype or Y.ndim != 2:
        out = A @ Y
        if scale != 1.0:
            out *= dtype(scale)
        if shift != 0.0:
            out += dtype(shift) * Y
        if prev is not None and prev_coef != 0.0:
            out += dtype(prev_coef) * prev
        return out
    Y = np.ascontiguousarray(Y)
    if prev is None:  # a finite stand-in, multiplied by 0
        prev, prev_coef = Y, 0.0
    out = np.empty((A.shape[0], Y.shape[1]), dtype=A.dtype)
    n_threads = getattr(_LOCAL, "n_threads", None)
    with _LOCK, _numba_settings(n_threads):
        kernel(A.indptr, A.indices, A.data, Y, dtype(scale), dtype(shift),
               np.ascontiguousarray(prev), dtype(prev_coef), out)  # fmt: skip
    return out
