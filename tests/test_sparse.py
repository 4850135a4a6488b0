"""The block product of the large-graph eigensolver (skmcal._sparse) against scipy."""

import numpy as np
import pytest
import scipy.sparse as sp

from skmcal import _sparse


def _matrix_and_block(dtype, seed=0, n=60, k=7):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.1, random_state=seed, format="coo", dtype=np.float64)
    # unsorted column indices within rows, as a graph assembled by hand may have
    order = rng.permutation(A.nnz)
    A = sp.csr_matrix((A.data[order], (A.row[order], A.col[order])), shape=(n, n), dtype=dtype)
    A.has_sorted_indices = False
    Y = rng.standard_normal((n, k)).astype(dtype)
    prev = rng.standard_normal((n, k)).astype(dtype)
    return A, Y, prev


@pytest.fixture(params=["scipy", "numba"])
def path(request, monkeypatch):
    if request.param == "numba":
        pytest.importorskip("numba")
        monkeypatch.setattr(_sparse, "PARALLEL_MIN_ROWS", 0)
    else:
        monkeypatch.setattr(_sparse, "_kernel", lambda: None)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_product_is_the_sparse_product(path, dtype):
    A, Y, _ = _matrix_and_block(dtype)
    out = _sparse.block_product(A, Y)
    assert out.dtype == dtype
    # the same sums in the same order as scipy's: equal, not just close
    np.testing.assert_array_equal(out, A @ Y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_product_recurrence_step(path, dtype):
    A, Y, prev = _matrix_and_block(dtype, seed=1)
    scale, shift, coef = 2.5, -0.75, -1.0
    expected = scale * (A.astype(np.float64) @ Y) + shift * Y + coef * prev.astype(np.float64)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    out = _sparse.block_product(A, Y, scale, shift, prev, coef)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol)
    no_prev = _sparse.block_product(A, Y, scale, shift)
    np.testing.assert_allclose(no_prev, expected - coef * prev, rtol=rtol, atol=rtol)


def test_limit_threads_gives_the_same_result_and_restores_numba():
    numba = pytest.importorskip("numba")
    A, Y, prev = _matrix_and_block(np.float32, seed=3, n=500, k=9)
    before = numba.get_num_threads()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_sparse, "PARALLEL_MIN_ROWS", 0)
        free = _sparse.block_product(A, Y, 1.5, 0.5, prev, -1.0)
        with _sparse.limit_threads(1):
            one = _sparse.block_product(A, Y, 1.5, 0.5, prev, -1.0)
    np.testing.assert_array_equal(one, free)  # each row summed alone: thread count is moot
    assert numba.get_num_threads() == before
    assert getattr(_sparse._LOCAL, "n_threads", None) is None
