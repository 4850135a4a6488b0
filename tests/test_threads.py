"""The BLAS thread setting of fits and acquisition (skmcal._threads)."""

import pytest
from threadpoolctl import threadpool_info

import skmcal
from skmcal._threads import small_algebra


def _blas_threads():
    return {m["filepath"]: m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"}


def test_default_is_one_thread_inside_small_algebra():
    assert skmcal.get_blas_threads() == 1
    with small_algebra():
        assert set(_blas_threads().values()) == {1}


def test_set_blas_threads_returns_the_previous_setting_and_none_leaves_the_libraries():
    previous = skmcal.set_blas_threads(None)
    try:
        assert previous == 1 and skmcal.get_blas_threads() is None
        outside = _blas_threads()
        with small_algebra():
            assert _blas_threads() == outside
        assert skmcal.set_blas_threads(2) is None
        with small_algebra():
            assert set(_blas_threads().values()) <= {1, 2}
    finally:
        skmcal.set_blas_threads(previous)
    assert skmcal.get_blas_threads() == 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_set_blas_threads_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="positive int or None"):
        skmcal.set_blas_threads(bad)
    assert skmcal.get_blas_threads() == 1
