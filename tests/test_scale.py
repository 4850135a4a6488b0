"""What makes skmcal scale: remembered array pools, float32 nodes, candidate draws,
progress logging, and graphs shared through a disk cache (``memory=``)."""

from __future__ import annotations

import gc
import hashlib
import logging
import pickle
import re
import subprocess
import sys
import textwrap
import time

import joblib
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import make_blobs
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

import skmcal
from skmcal import GRAPH_CACHE, NodeSet, SpectralGraphClassifier, clear_graph_cache, selection
from skmcal import graph as graph_module
from skmcal import query as query_module
from skmcal.classifier import AUTO_KERNELS
from skmcal.graph import GraphCache, GraphParams, array_fingerprint, first_equal_rows, node_set

from _oracle import run_concurrently


@pytest.fixture(autouse=True, scope="module")
def _single_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(autouse=True)
def _empty_caches():
    clear_graph_cache()
    graph_module.NODE_SETS.clear()
    selection.POOL_LOOKUPS.clear()
    yield
    clear_graph_cache()


def blobs(n=300, d=5, dtype=np.float64, seed=0):
    X, y = make_blobs(n, n_features=d, centers=3, cluster_std=2.0, random_state=seed)
    labels = np.full(n, -1)
    first = np.concatenate([np.flatnonzero(y == c)[:3] for c in range(3)])
    labels[first] = y[first]
    return X.astype(dtype), y, labels, first


@pytest.fixture
def count_lookups(monkeypatch):
    """How many times NodeSet.lookup ran on each number of rows."""
    calls = []
    original = NodeSet.lookup

    def lookup(self, X, **kw):
        calls.append(X.shape[0])
        return original(self, X, **kw)

    monkeypatch.setattr(NodeSet, "lookup", lookup)
    return calls


# ------------------------------------------------------- array pools, remembered
def test_fingerprint_follows_identity_shape_dtype_and_sampled_values():
    X = np.arange(2 * 10**5, dtype=np.float64).reshape(-1, 4)
    fp = array_fingerprint(X)
    assert array_fingerprint(X) == fp
    assert array_fingerprint(X.copy()) != fp  # another buffer
    assert array_fingerprint(X.reshape(-1, 8)) != fp
    assert array_fingerprint(X[::2]) != fp
    X[0, 0] = -1.0  # row 0 is always sampled
    assert array_fingerprint(X) != fp
    assert array_fingerprint([[1.0]]) is None


def test_small_arrays_are_fingerprinted_whole():
    X = np.zeros((100, 10))
    fp = array_fingerprint(X)
    X[57, 3] = 1.0
    assert array_fingerprint(X) != fp


def test_an_unchanged_array_pool_is_looked_up_once(count_lookups):
    X, _, labels, _ = blobs()
    clf = SpectralGraphClassifier(nodes=X, n_eigs=10).fit(X[labels >= 0], labels[labels >= 0])
    first = selection.pool_nodes(clf, X)
    again = selection.pool_nodes(clf, X)
    assert again is first and not first.flags.writeable
    assert count_lookups.count(X.shape[0]) == 1
    assert_array_equal(first, clf.node_set_.lookup(X))


def test_equal_content_in_a_new_array_is_looked_up_anew_with_the_same_result(count_lookups):
    X, _, labels, _ = blobs()
    clf = SpectralGraphClassifier(nodes=X, n_eigs=10).fit(X[labels >= 0], labels[labels >= 0])
    first = selection.pool_nodes(clf, X)
    copy = selection.pool_nodes(clf, X.copy())
    assert copy is not first
    assert_array_equal(copy, first)
    assert count_lookups.count(X.shape[0]) == 2
    picks = [
        query_module.model_change(clf, pool, n_instances=3, candidates=0.5, random_state=0)[0]
        for pool in (X, X.copy(), clf.node_set_)
    ]
    assert_array_equal(picks[0], picks[1])
    assert_array_equal(picks[0], picks[2])


def test_an_array_pool_edited_in_place_is_not_served_stale():
    X, _, labels, _ = blobs()
    clf = SpectralGraphClassifier(nodes=X, n_eigs=10).fit(X[labels >= 0], labels[labels >= 0])
    pool = X.copy()
    query_module.model_change(clf, pool, candidates=0.5, random_state=0)
    pool[-1] += 100.0  # no longer a node (a small array: fingerprinted whole)
    with pytest.raises(ValueError, match="1 row.s. of X_pool are not nodes"):
        query_module.model_change(clf, pool, candidates=0.5, random_state=0)
    pool[-1] = X[0]  # now equal to node 0
    assert selection.pool_nodes(clf, pool)[-1] == 0


def test_a_large_array_pool_edited_in_a_sampled_row_is_looked_up_again():
    X, _, labels, _ = blobs(n=20000, d=4)
    pool = NodeSet(X)
    clf = SpectralGraphClassifier(nodes=pool, n_eigs=5).fit(X[labels >= 0], labels[labels >= 0])
    editable = X.copy()
    assert editable.size > graph_module.FINGERPRINT_FULL_MAX_VALUES
    assert selection.pool_nodes(clf, editable)[0] == 0
    editable[0] = X[1]
    assert selection.pool_nodes(clf, editable)[0] == 1


def test_nodes_given_as_an_array_are_hashed_once_while_it_lives(monkeypatch):
    X, _, labels, _ = blobs()
    made = []
    original = NodeSet.__init__

    def init(self, *args, **kw):
        made.append(1)
        original(self, *args, **kw)

    monkeypatch.setattr(NodeSet, "__init__", init)
    clf = SpectralGraphClassifier(nodes=X, n_eigs=10)
    first = clf.fit(X[labels >= 0], labels[labels >= 0]).node_set_
    second = clf.fit(X[:20], np.where(labels[:20] >= 0, labels[:20], -1)).node_set_
    assert second is first and len(made) == 1
    other = SpectralGraphClassifier(nodes=X.copy(), n_eigs=10).fit(X[:20], labels[:20])
    assert other.node_set_ is not first and other.node_set_.digest == first.digest
    assert len(made) == 2
    n_held = len(graph_module.NODE_SETS)
    del X, clf, first, second, other
    gc.collect()
    assert len(graph_module.NODE_SETS) < n_held  # dropped with its array


def test_node_set_of_an_edited_array_is_a_new_node_set():
    X, _, _, _ = blobs(n=50)
    first = node_set(X)
    X[3] += 1.0
    second = node_set(X)
    assert second is not first and second.digest != first.digest
    assert_array_equal(second.data, X)


def test_modal_loop_with_an_array_pool_picks_as_with_a_node_set():
    from modAL.models import ActiveLearner

    skmcal.patch_modal()  # modAL 0.4.2.1's teach() on scikit-learn >= 1.8
    X, y, labels, first = blobs(n=400)
    picks = []
    for nodes in (NodeSet(X), X):
        learner = ActiveLearner(
            estimator=SpectralGraphClassifier(nodes=nodes, n_eigs=10),
            query_strategy=query_module.model_change,
            X_training=X[first],
            y_training=y[first],
        )
        chosen = []
        for it in range(4):
            idx, _ = learner.query(nodes, n_instances=3, candidates=0.2, random_state=it)
            learner.teach(X[idx], y[idx])
            chosen.append(idx)
        picks.append(np.concatenate(chosen))
    assert_array_equal(picks[0], picks[1])


# ------------------------------------------------------------------ float32
def test_float32_nodes_stay_float32_and_float64_digests_are_unchanged():
    X, _, _, _ = blobs(dtype=np.float32)
    nodes = NodeSet(X)
    assert nodes.data.dtype == np.float32 and nodes.data.nbytes == X.nbytes
    assert not np.shares_memory(nodes.data, X)
    X64 = X.astype(np.float64)
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(("ndarray", X64.shape)).encode())
    h.update(X64.tobytes())
    assert NodeSet(X64).digest == h.hexdigest()
    assert NodeSet(X).digest != NodeSet(X64).digest
    assert NodeSet(X.astype(np.int64)).data.dtype == np.float64


def test_copy_false_uses_the_array_itself_read_only():
    X, _, _, _ = blobs(dtype=np.float32)
    nodes = NodeSet(X, copy=False)
    assert nodes.data is X and not X.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        X[0, 0] = 1.0
    F = np.asfortranarray(blobs()[0])
    assert not np.shares_memory(NodeSet(F, copy=False).data, F) and F.flags.writeable


def test_equal_float32_rows_are_found_as_in_float64():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    X[[5, 17, 30]] = X[2]
    X[11] = 0.0
    X[12] = -0.0
    assert_array_equal(first_equal_rows(X), first_equal_rows(X.astype(np.float64)))
    brute = np.array([min(j for j in range(40) if np.array_equal(X[j], X[i])) for i in range(40)])
    assert_array_equal(first_equal_rows(X), brute)


def test_float64_rows_of_float32_nodes_are_found_at_their_precision():
    """A float32 node set (the large-data advice) takes the float64 rows it was made
    from, in fit and in queries; float32 rows of float64 nodes raise, naming the types."""
    X, y, labels, first = blobs()
    pool = NodeSet(X.astype(np.float32))
    clf = SpectralGraphClassifier("mgr", nodes=pool).fit(X[first], y[first])
    assert_array_equal(clf.labeled_nodes_, first)
    rows, _ = skmcal.uncertainty(clf, X, n_instances=3)
    same, _ = skmcal.uncertainty(clf, pool, n_instances=3)
    assert_array_equal(rows, same)
    assert_array_equal(pool.lookup(X), np.arange(X.shape[0]))
    X_far = X.copy()
    X_far[4] += 1e-3  # not a float32 node either
    assert pool.lookup(X_far)[4] == -1
    message = "X is float32 but the nodes are float64: rows are compared exactly"
    with pytest.raises(ValueError, match=message):
        SpectralGraphClassifier("mgr", nodes=NodeSet(X)).fit(
            X[first].astype(np.float32), y[first]
        )
    clf64 = SpectralGraphClassifier("mgr", nodes=NodeSet(X)).fit(X[first], y[first])
    with pytest.raises(ValueError, match=message):
        skmcal.uncertainty(clf64, X.astype(np.float32), n_instances=3)


def test_float32_graph_is_the_float64_graph_to_float32_rounding():
    X, y, labels, _ = blobs(n=400, dtype=np.float32)
    params = GraphParams("gaussian", 10, 5, 3.0, 12)
    g32 = graph_module.build_graph(X, params)
    g64 = graph_module.build_graph(X.astype(np.float64), params)
    assert g32.weights.dtype == np.float64 and g32.eigenvectors.dtype == np.float64
    assert_allclose(g32.weights.toarray(), g64.weights.toarray(), atol=1e-6)
    assert_allclose(g32.eigenvalues, g64.eigenvalues, atol=1e-6)
    c32 = SpectralGraphClassifier(nodes=NodeSet(X), n_eigs=12).fit(X[labels >= 0], y[labels >= 0])
    c64 = SpectralGraphClassifier(n_eigs=12).fit(X.astype(np.float64), labels)
    assert np.mean(c32.transduction_ == c64.transduction_) > 0.99
    assert_array_equal(c32.predict(X.astype(np.float64)), c32.transduction_)
    assert_array_equal(c32.predict(X), c32.transduction_)


# ------------------------------------------------------------------- verbose
def test_verbose_logs_each_phase_of_a_fit_with_its_time(caplog):
    X, _, labels, _ = blobs()
    clf = SpectralGraphClassifier(n_eigs=10, verbose=1)
    with caplog.at_level(logging.INFO, logger="skmcal"):
        clf.fit(X, labels)
    text = "\n".join(r.getMessage() for r in caplog.records)
    for phase in ("Nodes (300 x 5 float64)", "Equal rows", "kNN search", "Kernel weights",
                  "Spectrum: 10 eigenpairs", "Model fit (spectral, loss=ce"):  # fmt: skip
        assert phase in text
    assert all(r.name.startswith("skmcal") and r.levelno == logging.INFO for r in caplog.records)
    assert all(re.search(r"\d\.\d\d s\b", r.getMessage()) for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="skmcal"):
        clf.fit(X, labels)
    assert "in the in-process cache" in caplog.text


def test_verbose_zero_logs_at_debug_only(caplog):
    X, _, labels, _ = blobs()
    with caplog.at_level(logging.INFO, logger="skmcal"):
        SpectralGraphClassifier(n_eigs=10).fit(X, labels)
    assert caplog.records == []
    with caplog.at_level(logging.DEBUG, logger="skmcal"):
        clear_graph_cache()
        SpectralGraphClassifier(n_eigs=10).fit(X, labels)
    assert "kNN search" in caplog.text


def test_verbose_shows_messages_when_logging_is_not_configured():
    code = textwrap.dedent(
        """
        import numpy as np
        from skmcal import SpectralGraphClassifier
        X = np.random.default_rng(0).normal(size=(60, 3))
        y = np.full(60, -1); y[:2] = [0, 1]
        SpectralGraphClassifier(n_eigs=5, verbose=1).fit(X, y)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[skmcal] Spectrum: 5 eigenpairs" in out.stderr


# -------------------------------------------------------------------- memory
def test_memory_second_estimator_loads_instead_of_building(tmp_path):
    X, y, labels, first = blobs()
    pool = NodeSet(X)
    built = SpectralGraphClassifier(
        nodes=pool, kernel="gaussian", n_eigs=10, memory=tmp_path
    ).fit(X[first], y[first])
    clear_graph_cache()
    builds, loads = GRAPH_CACHE.builds, GRAPH_CACHE.loads
    loaded = SpectralGraphClassifier(nodes=pool, kernel="gaussian", n_eigs=10, memory=str(tmp_path))
    loaded.fit(X[first], y[first])
    assert GRAPH_CACHE.builds == builds and GRAPH_CACHE.loads == loads + 1
    assert isinstance(loaded.eigenvectors_, np.memmap) and not loaded.eigenvectors_.flags.writeable
    assert_array_equal(loaded.eigenvectors_, built.eigenvectors_)
    assert_array_equal(loaded.coef_, built.coef_)
    assert (loaded.graph_.weights != built.graph_.weights).nnz == 0
    assert loaded.graph_.index is None  # left behind on disk; fitted again when needed
    X_new = X[:30] + 0.01
    assert_array_equal(loaded.predict_proba(X_new), built.predict_proba(X_new))
    assert loaded.graph_.index is not None
    assert_array_equal(pickle.loads(pickle.dumps(loaded)).predict(X_new), built.predict(X_new))
    SpectralGraphClassifier(nodes=pool, kernel="gaussian", n_eigs=11, memory=tmp_path).fit(
        X[first], y[first]
    )
    assert GRAPH_CACHE.builds == builds + 1  # other parameters: another graph


@pytest.mark.parametrize("as_joblib", [False, True])
def test_store_puts_a_graph_of_the_in_process_cache_on_disk(tmp_path, as_joblib):
    X, y, labels, first = blobs()
    pool = NodeSet(X)
    clear_graph_cache()
    built = SpectralGraphClassifier(nodes=pool, kernel="gaussian", n_eigs=10)
    built.fit(X[first], y[first])
    memory = joblib.Memory(tmp_path, verbose=0) if as_joblib else tmp_path
    params = built._graph_params(pool.n_nodes)
    assert GRAPH_CACHE.store(pool, params, built.graph_, memory)
    assert not GRAPH_CACHE.store(pool, params, built.graph_, memory)  # held already
    assert built.graph_.index is not None  # the graph in use keeps its index
    clear_graph_cache()
    builds, loads = GRAPH_CACHE.builds, GRAPH_CACHE.loads
    loaded = SpectralGraphClassifier(nodes=pool, kernel="gaussian", n_eigs=10, memory=memory)
    loaded.fit(X[first], y[first])
    assert GRAPH_CACHE.builds == builds and GRAPH_CACHE.loads == loads + 1
    assert loaded.graph_.index is None
    assert_array_equal(loaded.eigenvectors_, built.eigenvectors_)
    assert_array_equal(loaded.transduction_, built.transduction_)


def test_memory_accepts_a_joblib_memory_and_serves_the_full_model(tmp_path):
    X, y, labels, first = blobs()
    memory = joblib.Memory(tmp_path, verbose=0)
    fits = []
    for _ in range(2):
        clear_graph_cache()
        clf = SpectralGraphClassifier(model="full", nodes=X, n_eigs=10, memory=memory)
        fits.append(clf.fit(X[first], y[first]))
    assert GRAPH_CACHE.loads >= 1
    assert_array_equal(fits[0].transduction_, fits[1].transduction_)
    assert_allclose(fits[0].decision_function(X), fits[1].decision_function(X))


def test_memory_with_cache_false_still_loads_from_disk(tmp_path):
    X, _, labels, _ = blobs()
    a = SpectralGraphClassifier(n_eigs=10, memory=tmp_path, cache=False).fit(X, labels)
    b = SpectralGraphClassifier(n_eigs=10, memory=tmp_path, cache=False).fit(X, labels)
    assert len(GRAPH_CACHE) == 0 and b.graph_ is not a.graph_
    assert isinstance(b.eigenvectors_, np.memmap)
    assert_array_equal(a.transduction_, b.transduction_)


def test_memory_must_be_a_folder_or_have_cache():
    X, _, labels, _ = blobs()
    with pytest.raises(ValueError, match="'memory' parameter"):
        SpectralGraphClassifier(memory=3).fit(X, labels)
    with pytest.raises(ValueError, match="'cache' method"):
        graph_module.check_memory(object())


def test_memory_graph_is_built_once_by_concurrent_builders(tmp_path, monkeypatch):
    X, _, _, _ = blobs()
    nodes, params = NodeSet(X), GraphParams("gaussian", 10, 5, 3.0, 10)
    original = graph_module.build_graph

    def slow_build(*args, **kwargs):
        time.sleep(0.5)
        return original(*args, **kwargs)

    monkeypatch.setattr(graph_module, "build_graph", slow_build)
    caches = [GraphCache(), GraphCache()]
    graphs = run_concurrently(
        lambda i: caches[i].get_or_build(nodes, params, memory=tmp_path), 2
    )
    assert sum(c.builds for c in caches) == 1 and sum(c.loads for c in caches) == 1
    assert_array_equal(graphs[0].eigenvectors, graphs[1].eigenvectors)


def test_memory_serves_another_process(tmp_path):
    X, y, labels, first = blobs()
    SpectralGraphClassifier(nodes=X, n_eigs=10, memory=tmp_path).fit(X[first], y[first])
    code = textwrap.dedent(
        f"""
        import numpy as np
        from sklearn.datasets import make_blobs
        from skmcal import GRAPH_CACHE, SpectralGraphClassifier
        X, y = make_blobs(300, n_features=5, centers=3, cluster_std=2.0, random_state=0)
        first = {first.tolist()}
        SpectralGraphClassifier(nodes=X, n_eigs=10, memory={str(tmp_path)!r}).fit(
            X[first], y[first])
        print(GRAPH_CACHE.builds, GRAPH_CACHE.loads)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", str(len(AUTO_KERNELS))]  # kernel="auto": every graph


def test_memory_grid_search_over_tau_gamma_equals_the_uncached_search(tmp_path):
    X, y, labels, first = blobs()
    grid = {"tau": [0.01, 0.1], "gamma": [0.1, 0.5]}
    results = []
    for memory in (None, tmp_path):
        clear_graph_cache()
        clf = SpectralGraphClassifier(nodes=NodeSet(X), n_eigs=10, memory=memory)
        search = GridSearchCV(clf, grid, cv=3).fit(X[labels >= 0], y[labels >= 0])
        results.append(search.cv_results_["mean_test_score"])
    assert_array_equal(results[0], results[1])


# --------------------------------------------------------- the in-process cache
def test_graph_cache_info_and_maxsize():
    X, _, labels, _ = blobs()
    maxsize = GRAPH_CACHE.maxsize
    try:
        GRAPH_CACHE.maxsize = 1
        for n_eigs in (5, 6):
            SpectralGraphClassifier(n_eigs=n_eigs).fit(X, labels)
        info = GRAPH_CACHE.info()
        assert len(info) == 1 and info[0]["n_eigs"] == 6 and info[0]["n_nodes"] == 300
        assert info[0]["nbytes"] > 300 * 6 * 8
        assert "1 of maxsize=1 graphs" in repr(GRAPH_CACHE)
        GRAPH_CACHE.maxsize = 0
        SpectralGraphClassifier(n_eigs=7).fit(X, labels)
        assert len(GRAPH_CACHE) == 1  # nothing added
    finally:
        GRAPH_CACHE.maxsize = maxsize
    skmcal.clear_graph_cache()
    assert GRAPH_CACHE.info() == []


# ----------------------------------------------------------------------- CLI
def test_cli_reports_data_graph_and_spectrum_phases(tmp_path, capsys):
    from skmcal.cli import main

    X, y, _, _ = blobs(n=120)
    level = logging.getLogger("skmcal").level
    data = tmp_path / "blobs.npz"
    np.savez(data, X=X, y=y)
    run = ["run", "--dataset", str(data), "--strategies", "rand", "--iterations", "1",
           "--trials", "1", "--n-eigs", "8", "--no-plots"]  # fmt: skip
    assert main([*run, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    for phase in ("Data custom: 120 x 5 loaded", "NodeSet of 120 x 5", "kNN search",
                  "Spectrum: 8 eigenpairs", "Graph and spectrum of 120 nodes"):  # fmt: skip
        assert f"[skmcal] {phase}" in err
    assert "Model fit" not in err  # one line per phase, not per refit
    assert main([*run, "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    assert "[skmcal]" not in capsys.readouterr().err
    assert logging.getLogger("skmcal").level == level


def test_n_jobs_sets_the_threads_of_a_graph_build(monkeypatch):
    from threadpoolctl import threadpool_info

    X, _, labels, _ = blobs()
    seen = []
    original = graph_module.build_graph

    def spy(*args, **kwargs):
        seen.append({p["user_api"]: p["num_threads"] for p in threadpool_info()})
        return original(*args, **kwargs)

    monkeypatch.setattr(graph_module, "build_graph", spy)
    with threadpool_limits(limits=1):
        SpectralGraphClassifier(kernel="gaussian", n_eigs=5, n_jobs=2).fit(X, labels)
        SpectralGraphClassifier(kernel="gaussian", n_eigs=6).fit(X, labels)
    assert set(seen[0].values()) == {2}  # n_jobs=2: two threads while building
    assert set(seen[1].values()) == {1}  # None: the pools as they are


def test_a_graph_that_cannot_fit_says_so_before_allocating(monkeypatch):
    X, _, labels, _ = blobs()
    computed = []
    monkeypatch.setattr(graph_module, "available_memory", lambda: 1000)
    monkeypatch.setattr(graph_module, "first_equal_rows", lambda *a: computed.append(a))
    with pytest.raises(MemoryError, match=r"The graph of 300 nodes \(5 features, n_neighbors=10, "
                       r"n_eigs=5\) needs about 0\.\d GiB .* 0\.0 GiB are available\. "
                       r"To fit: lower n_eigs or n_neighbors, pass the node data as float32"):
        SpectralGraphClassifier(n_eigs=5).fit(X, labels)
    assert computed == []  # refused before the first phase
    with pytest.raises(MemoryError, match="To fit: lower n_eigs or n_neighbors, or free memory"):
        SpectralGraphClassifier(n_eigs=5).fit(X.astype(np.float32), labels)
    monkeypatch.undo()
    monkeypatch.setattr(graph_module, "MEMORY_CHECK", False)
    monkeypatch.setattr(graph_module, "available_memory", lambda: 1000)
    assert SpectralGraphClassifier(n_eigs=5).fit(X, labels).graph_.n_nodes == 300
    monkeypatch.setattr(graph_module, "MEMORY_CHECK", True)
    monkeypatch.setattr(graph_module, "available_memory", lambda: None)  # unknown: no check
    assert SpectralGraphClassifier(n_eigs=6).fit(X, labels).graph_.n_nodes == 300


def test_available_memory_is_read_from_the_system():
    available = graph_module.available_memory()
    assert available is None or 0 < available < 2**50


@pytest.mark.parametrize("index_max_nodes", [10**6, 0], ids=["index kept", "index dropped"])
def test_memory_estimate_covers_the_traced_peak_of_a_build(monkeypatch, index_max_nodes):
    import tracemalloc

    from sklearn.neighbors import KNeighborsTransformer

    monkeypatch.setattr(graph_module, "INDEX_MAX_NODES", index_max_nodes)
    X = make_blobs(3000, n_features=8, centers=4, random_state=0)[0].astype(np.float32)
    for neighbors, n_eigs in ((None, 10), (KNeighborsTransformer(n_neighbors=11), 40)):
        params = GraphParams("gaussian", 10, 5, 3.0, n_eigs, neighbors=neighbors)
        tracemalloc.start()
        graph = graph_module.build_graph(X, params)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert (graph.index is None) == (index_max_nodes == 0)
        estimate = graph_module.graph_memory_estimate(3000, 8, params)
        assert peak <= estimate, (neighbors, peak, estimate)


def test_memory_estimate_counts_the_index_only_where_the_graph_keeps_it(monkeypatch):
    from sklearn.neighbors import KNeighborsTransformer

    params = GraphParams("gaussian", 10, 7, 3.0, 50, neighbors=KNeighborsTransformer())
    n, d, q = 3_000_000, 64, 10
    index = n * (8 * d + 24 * (q + 1))  # the transformer's allowance
    monkeypatch.setattr(graph_module, "INDEX_MAX_NODES", n)
    search, kept = graph_module._phase_bytes(n, d, params, None)
    monkeypatch.setattr(graph_module, "INDEX_MAX_NODES", n - 1)
    assert graph_module._phase_bytes(n, d, params, None) == (search, kept - index)


@pytest.mark.parametrize("neighbors", ["exact", "transformer"])
def test_new_rows_predicted_alike_with_and_without_the_kept_index(monkeypatch, neighbors):
    """Above INDEX_MAX_NODES the graph drops its neighbour index and fits it on first use."""
    from sklearn.neighbors import KNeighborsTransformer

    X, y, labels, first = blobs(n=200)
    X[150:160] = X[140:150]  # equal nodes: the index is over the distinct points
    X_new = np.vstack([X[:20] + 0.05, make_blobs(20, n_features=5, random_state=1)[0], X[150:155]])
    knn = KNeighborsTransformer(n_neighbors=11) if neighbors == "transformer" else None
    predictions = []
    for index_max_nodes in (10**6, 0):
        monkeypatch.setattr(graph_module, "INDEX_MAX_NODES", index_max_nodes)
        clear_graph_cache()
        clf = SpectralGraphClassifier(n_eigs=10, neighbors=knn).fit(X, labels)
        assert (clf.graph_.index is None) == (index_max_nodes == 0)
        predictions.append((clf.predict_proba(X_new), clf.predict(X_new)))
        assert clf.graph_.index is not None  # fitted on first use, then kept
        assert_array_equal(clf.predict_proba(X_new), predictions[-1][0])
    assert_array_equal(predictions[1][0], predictions[0][0])
    assert_array_equal(predictions[1][1], predictions[0][1])
