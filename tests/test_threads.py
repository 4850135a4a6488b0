"""The BLAS thread setting of fits and acquisition (skmcal._threads)."""

import os

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import skmcal
from skmcal._threads import scoring_threads, small_algebra


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


def test_scoring_threads_follow_the_blas_pools_unless_given():
    assert scoring_threads(3) == 3
    blas = [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]
    assert scoring_threads(None) == max(1, min([os.cpu_count() or 1, *blas]))
    with threadpool_limits(limits=1, user_api="blas"):  # e.g. a joblib worker's share
        assert scoring_threads(None) == 1
    with threadpool_limits(limits=2, user_api="blas"):
        outside = scoring_threads(None)
        with small_algebra():  # its one-thread limit is for BLAS calls, not for scoring
            assert set(_blas_threads().values()) == {1}
            assert scoring_threads(None) == outside
            with small_algebra():
                assert scoring_threads(None) == outside
    assert scoring_threads(None) == max(1, min([os.cpu_count() or 1, *blas]))


def test_thread_pools_are_kept_none_inside_them_and_new_after_a_fork():
    from skmcal._threads import thread_pool

    pool = thread_pool(2)
    assert thread_pool(2) is pool and thread_pool(3) is not pool
    assert pool.submit(thread_pool, 2).result(timeout=10) is None  # no pool waits on itself
    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    child = os.fork()
    if child == 0:  # the child: the parent's pool threads are gone, a new pool runs
        ok = False
        try:
            ok = thread_pool(2) is not pool and thread_pool(2).submit(int, "7").result(10) == 7
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("loss", ["mgr", "ce"])
def test_query_scoring_runs_on_the_free_pools_threads(loss, monkeypatch):
    """The strategies size their scoring threads outside small_algebra's one-thread
    limit: with n_jobs=None every loss gets the pools' threads (ce once got one)."""
    import numpy as np

    import skmcal.posterior
    from skmcal import SpectralGraphClassifier
    from skmcal.query import model_change

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: nothing to tell apart")
    seen = []
    real = skmcal.posterior.scoring_threads

    def spy(n_threads):
        seen.append(real(n_threads))
        return seen[-1]

    monkeypatch.setattr(skmcal.posterior, "scoring_threads", spy)
    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(150, 2), rng.randn(150, 2) + 5, rng.randn(150, 2) - 5])
    y = np.full(450, -1)
    y[[0, 150, 300]] = [0, 1, 2]
    clf = SpectralGraphClassifier(loss, n_eigs=10).fit(X, y)
    with threadpool_limits(limits=2, user_api="blas"):  # the pools of a plain 2-core process
        expected = scoring_threads(None)
        model_change(clf, X, n_instances=3, batch="topk")
    assert expected == 2
    assert seen and set(seen) == {expected}


def test_run_parts_returns_in_order_waits_for_every_part_and_raises_the_first_error():
    import threading
    import time

    from skmcal._threads import run_parts

    names = run_parts(3, lambda i: (i, threading.current_thread().name))
    assert [i for i, _ in names] == [0, 1, 2]
    assert names[0][1] == threading.current_thread().name  # part 0 runs here
    assert all(name.startswith("skmcal") for _, name in names[1:])
    assert run_parts(1, lambda i: i * 10) == [0]
    finished = []

    def part(i):
        if i == 0:
            raise ValueError("part 0")
        time.sleep(0.05)
        finished.append(i)

    with pytest.raises(ValueError, match="part 0"):
        run_parts(3, part)
    assert sorted(finished) == [1, 2]  # the others had ended when it raised


def test_row_threads_follow_solver_threads_else_the_blas_pools():
    from skmcal._threads import row_threads, scoring_threads, solver_threads

    assert row_threads() == scoring_threads(None)
    with solver_threads(3):
        assert row_threads() == 3
        with solver_threads(None):
            assert row_threads() == scoring_threads(None)
        assert row_threads() == 3
    with threadpool_limits(1, user_api="blas"):
        assert row_threads() == 1


def test_posterior_around_and_rank_one_evaluate_run_on_one_blas_thread(monkeypatch):
    """Their small products would wake the BLAS pools' threads, which then spin beside
    the next sparse solve's threads (at 70,000 nodes: V-cycles half as fast again)."""
    import numpy as np
    from sklearn.datasets import make_blobs

    import skmcal.fitting
    import skmcal.posterior
    from skmcal import SpectralGraphClassifier
    from skmcal.query import model_change

    seen = {}

    def recording(module, name, key):
        original = getattr(module, name)

        def spy(*args, **kwargs):
            seen.setdefault(key, set()).update(_blas_threads().values())
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)

    recording(skmcal.fitting, "cholesky", "posterior_around")
    recording(skmcal.posterior.RankOnePosterior, "_products", "evaluate")
    X, y = make_blobs(120, centers=3, random_state=0)
    y_train = np.full(120, -1)
    y_train[:9] = y[:9]
    with threadpool_limits(2, user_api="blas"):
        clf = SpectralGraphClassifier("mgr", model="full", cache=False).fit(X, y_train)
        model_change(clf, X, n_instances=2, batch="topk")
    assert seen == {"posterior_around": {1}, "evaluate": {1}}


def test_n_jobs_beyond_the_cores_uses_the_cores(monkeypatch):
    """n_jobs=64 on a small machine: the graph build's BLAS limit and the scoring
    threads are the cores (more threads only spin); n_jobs=0 is named."""
    import skmcal.graph as graph_module
    from skmcal import SpectralGraphClassifier
    from skmcal._threads import n_jobs_threads

    cores = os.cpu_count() or 1
    assert n_jobs_threads(10**6) == cores and n_jobs_threads(-1) == cores
    assert n_jobs_threads(1) == 1 and n_jobs_threads(None) is None
    limits = []
    real = graph_module.threadpool_limits

    def recording(*args, **kwargs):
        limits.append(kwargs.get("limits", args[0] if args else None))
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_module, "threadpool_limits", recording)
    X = np.random.RandomState(0).randn(60, 2)
    clf = SpectralGraphClassifier("mgr", n_jobs=64, cache=False, n_eigs=8)
    clf.fit(X, [0, 1] + [-1] * 58)
    assert limits and max(limits) <= cores
    assert clf._n_threads() == cores
    with pytest.raises(ValueError, match="n_jobs must be a non-zero int or None.*got 0"):
        SpectralGraphClassifier(n_jobs=0).fit(X, [0, 1] + [-1] * 58)
