"""The graph and its spectrum against hand computations on tiny point sets.

The formulas: docs/math.rst, "The graph".
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import eigh
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import make_moons
from sklearn.neighbors import KNeighborsTransformer, kneighbors_graph

from skmcal import NodeSet, SpectralGraphClassifier, clear_graph_cache
from skmcal import graph as graph_module
from skmcal.graph import GraphParams, build_graph, laplacian_spectrum

from _oracle import run_concurrently

N_EIGS = 8


def _params(kernel="gaussian", n_neighbors=5, scale_neighbor=3, scale_factor=3.0, n_eigs=N_EIGS):
    return GraphParams(kernel=kernel, n_neighbors=n_neighbors, scale_neighbor=scale_neighbor,
                       scale_factor=scale_factor, n_eigs=n_eigs)


def _distances(A, B):
    return np.sqrt(np.maximum(((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1), 0.0))


def _hand_gaussian(X, n_neighbors, scale_neighbor, scale_factor):
    """Self-tuning kNN weights: sigma_i = distance to the scale_neighbor-th other point."""
    n = X.shape[0]
    D = _distances(X, X)
    order = np.argsort(D + np.diag(np.full(n, np.inf)), axis=1)  # self last
    sigma = D[np.arange(n), order[:, scale_neighbor - 1]]
    W0 = np.zeros((n, n))
    for i in range(n):
        for j in order[i, :n_neighbors]:
            W0[i, j] = np.exp(-D[i, j] ** 2 / (scale_factor * sigma[i] * sigma[j]))
    return (W0 + W0.T) / 2, sigma


def _dense_spectrum(W, n_eigs):
    d = W.sum(axis=1)
    s = 1 / np.sqrt(d)
    L = np.eye(W.shape[0]) - s[:, None] * W * s[None, :]
    lam, V = np.linalg.eigh(L)
    return L, lam[:n_eigs], V[:, :n_eigs]


def _check_spectrum(W, eigenvalues, V, residual, n_eigs, vec_tol):
    L, lam, V_ref = _dense_spectrum(W, n_eigs)
    assert eigenvalues.shape == (n_eigs,) and V.shape == (W.shape[0], n_eigs)
    np.testing.assert_allclose(eigenvalues, lam, rtol=0, atol=1e-10)
    assert np.all(np.diff(eigenvalues) >= 0) and np.all(eigenvalues >= 0)
    np.testing.assert_allclose(V.T @ V, np.eye(n_eigs), atol=1e-10)
    own_residual = np.linalg.norm(L @ V - V * eigenvalues, axis=0)
    assert own_residual.max() < 1e-9
    assert residual == pytest.approx(own_residual.max(), abs=1e-9)
    # eigenvectors up to sign (the test graphs have simple eigenvalues)
    assert np.min(np.diff(lam)) > 1e-4
    signs = np.sign(np.sum(V * V_ref, axis=0))
    np.testing.assert_allclose(V, V_ref * signs, rtol=0, atol=vec_tol)
    # documented sign convention: the entry of largest magnitude is positive
    top = V[np.abs(V).argmax(axis=0), np.arange(n_eigs)]
    assert np.all(top > 0)


def _random_graph(n, seed, density=0.15):
    rng = np.random.RandomState(seed)
    W = rng.rand(n, n) * (rng.rand(n, n) < density)
    ring = np.roll(np.eye(n), 1, axis=1) * 0.5  # keeps it connected
    W = W + ring
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0.0)
    return W


def _knn_graph(n, seed):
    """A sparse symmetric Gaussian kNN graph of random points in the unit square."""
    X = np.random.RandomState(seed).rand(n, 2)
    D = kneighbors_graph(X, 8, mode="distance")
    D.data = np.exp(-(D.data**2) / (2 * np.median(D.data) ** 2))
    return ((D + D.T) * 0.5).tocsr()


# ===================================================================== spectrum
def _spy_on_eigsh(monkeypatch):
    calls = []
    real_eigsh = graph_module.eigsh

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real_eigsh(*args, **kwargs)

    monkeypatch.setattr(graph_module, "eigsh", spy)
    return calls


def test_laplacian_spectrum_dense_path_matches_eigh(monkeypatch):
    calls = _spy_on_eigsh(monkeypatch)
    W = _random_graph(40, seed=0)
    eigenvalues, V, residual = laplacian_spectrum(sp.csr_matrix(W), N_EIGS)
    _check_spectrum(W, eigenvalues, V, residual, N_EIGS, vec_tol=1e-9)
    assert calls == []


def test_laplacian_spectrum_arpack_path_matches_eigh(monkeypatch):
    W = _knn_graph(120, seed=1)
    calls = _spy_on_eigsh(monkeypatch)
    monkeypatch.setattr(graph_module, "DENSE_EIGEN_MAX_NODES", 20)
    for random_state in (None, 0):
        eigenvalues, V, residual = laplacian_spectrum(W, N_EIGS, random_state=random_state)
        _check_spectrum(W.toarray(), eigenvalues, V, residual, N_EIGS, vec_tol=1e-8)
    assert len(calls) == 2


def test_laplacian_spectrum_arpack_path_on_a_graph_above_the_threshold(monkeypatch):
    n = graph_module.DENSE_EIGEN_MAX_NODES + 60
    W = _knn_graph(n, seed=2)
    calls = _spy_on_eigsh(monkeypatch)
    eigenvalues, V, residual = laplacian_spectrum(W, 6)
    assert len(calls) == 1
    Wd = W.toarray()
    d = Wd.sum(axis=1)
    s = 1 / np.sqrt(d)
    L = np.eye(n) - s[:, None] * Wd * s[None, :]
    lam, V_ref = eigh(L, subset_by_index=[0, 5])
    np.testing.assert_allclose(eigenvalues, lam, rtol=0, atol=1e-10)
    np.testing.assert_allclose(V.T @ V, np.eye(6), atol=1e-10)
    assert np.linalg.norm(L @ V - V * eigenvalues, axis=0).max() < 1e-8
    gaps = np.diff(lam)
    assert gaps.min() > 1e-5
    # subspace and vectors up to sign
    signs = np.sign(np.sum(V * V_ref, axis=0))
    np.testing.assert_allclose(V, V_ref * signs, rtol=0, atol=1e-6)


def test_laplacian_null_space_of_two_components():
    """Two components give eigenvalue 0 twice; the null space is spanned by sqrt(degree)."""
    W = np.zeros((30, 30))
    W[:15, :15] = _random_graph(15, seed=3)
    W[15:, 15:] = _random_graph(15, seed=4)
    eigenvalues, V, _ = laplacian_spectrum(sp.csr_matrix(W), 4)
    np.testing.assert_allclose(eigenvalues[:2], 0.0, atol=1e-10)
    assert eigenvalues[2] > 1e-3
    d = W.sum(axis=1)
    null = np.zeros((30, 2))
    null[:15, 0] = np.sqrt(d[:15])
    null[15:, 1] = np.sqrt(d[15:])
    null /= np.linalg.norm(null, axis=0)
    # same subspace: the projectors agree
    np.testing.assert_allclose(V[:, :2] @ V[:, :2].T, null @ null.T, atol=1e-10)


# ====================================================================== weights
@pytest.mark.parametrize(
    ("n_neighbors", "scale_neighbor", "scale_factor"), [(4, 2, 3.0), (3, 5, 1.5), (6, 6, 3.0)]
)
def test_self_tuning_gaussian_weights_by_hand(n_neighbors, scale_neighbor, scale_factor):
    X = np.random.RandomState(5).randn(14, 2)
    g = build_graph(X, _params("gaussian", n_neighbors, scale_neighbor, scale_factor, n_eigs=4))
    W, sigma = _hand_gaussian(X, n_neighbors, scale_neighbor, scale_factor)
    np.testing.assert_allclose(g.weights.toarray(), W, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g.scales, sigma, rtol=1e-12)
    np.testing.assert_allclose(g.degrees, W.sum(axis=1), rtol=1e-12)
    assert abs(g.weights - g.weights.T).max() == 0


def test_classifier_builds_the_same_gaussian_graph():
    X = np.random.RandomState(6).randn(20, 3)
    y = np.full(20, -1)
    y[:2] = [0, 1]
    clf = SpectralGraphClassifier("gr", kernel="gaussian", n_neighbors=4, scale_neighbor=3,
                                  scale_factor=2.0, n_eigs=5, cache=False).fit(X, y)
    W, _ = _hand_gaussian(X, 4, 3, 2.0)
    np.testing.assert_allclose(clf.graph_.weights.toarray(), W, rtol=1e-12, atol=1e-15)
    _, lam, _ = _dense_spectrum(W, 5)
    np.testing.assert_allclose(clf.eigenvalues_, lam, atol=1e-10)


@pytest.mark.parametrize("kernel", ["gaussian", "cosine"])
def test_a_second_scale_reuses_the_knn_search(kernel, monkeypatch):
    """Graphs of one data array that differ only in their Gaussian scale search its
    neighbours once, and equal the graphs built with a search of their own."""
    X = np.random.RandomState(8).randn(40, 3)
    X[7] = X[3]  # a copy: the search runs over the distinct points
    calls = []
    search = graph_module._node_neighbors
    monkeypatch.setattr(
        graph_module, "_node_neighbors", lambda *a: calls.append(a[2]) or search(*a)
    )
    clear_graph_cache()
    first = build_graph(X, _params(kernel, 5, 5, 3.0, n_eigs=4))
    second = build_graph(X, _params(kernel, 5, 4, 0.5, n_eigs=4))
    assert calls == [5]
    assert second.index is None  # fitted on first use
    np.testing.assert_array_equal(
        second.neighbor_index().kneighbors(X[:3] * second.data_scale)[1],
        first.index.kneighbors(X[:3] * first.data_scale)[1],
    )
    clear_graph_cache()  # forgets the searches too
    fresh = build_graph(X, _params(kernel, 5, 4, 0.5, n_eigs=4))
    assert calls == [5, 5]
    assert abs(second.weights - fresh.weights).max() == 0
    np.testing.assert_array_equal(second.eigenvalues, fresh.eigenvalues)
    if kernel == "gaussian":
        W, _ = _hand_gaussian(np.delete(X, 7, axis=0), 5, 4, 0.5)
        points = np.delete(np.arange(40), 7)
        np.testing.assert_allclose(second.weights[points][:, points].toarray(), W, rtol=1e-12)
    build_graph(X.copy(), _params(kernel, 5, 4, 0.5, n_eigs=4))  # another array
    build_graph(X, _params(kernel, 6, 4, 0.5, n_eigs=4))  # more neighbours
    assert calls == [5, 5, 5, 6]
    # A graph kept nowhere (cache=False) neither takes nor leaves a search.
    build_graph(X, _params(kernel, 5, 4, 0.5, n_eigs=4), reuse_search=False)
    assert calls == [5, 5, 5, 6, 5]
    build_graph(X, _params(kernel, 5, 5, 1.0, n_eigs=4))
    assert calls == [5, 5, 5, 6, 5]
    nodes, y = NodeSet(X), np.r_[0, 1, np.full(38, -1)]
    fit = {"kernel": kernel, "n_neighbors": 5, "n_eigs": 4, "nodes": nodes}
    SpectralGraphClassifier(**fit).fit(X, y)
    assert calls == [5, 5, 5, 6, 5, 5]
    SpectralGraphClassifier(**fit, scale_factor=1.0, cache=False).fit(X, y)
    assert calls == [5, 5, 5, 6, 5, 5, 5]
    SpectralGraphClassifier(**fit, scale_factor=0.5).fit(X, y)
    assert calls == [5, 5, 5, 6, 5, 5, 5]


def test_cosine_weights_by_hand():
    rng = np.random.RandomState(7)
    X = rng.randn(12, 3)
    k = 7
    g = build_graph(X, _params("cosine", n_neighbors=k, n_eigs=4))
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = Xn @ Xn.T
    np.fill_diagonal(cos, -np.inf)
    W0 = np.zeros_like(cos)
    for i in range(12):
        for j in np.argsort(-cos[i])[:k]:
            W0[i, j] = max(0.0, cos[i, j])
    # the test exercises the clipping: some kNN pairs have a negative cosine
    assert np.any([cos[i, np.argsort(-cos[i])[:k]].min() < 0 for i in range(12)])
    np.testing.assert_allclose(g.weights.toarray(), (W0 + W0.T) / 2, rtol=1e-12, atol=1e-14)


def test_precomputed_affinity_is_symmetrised():
    rng = np.random.RandomState(8)
    A = rng.rand(20, 20) * (rng.rand(20, 20) < 0.4) + np.roll(np.eye(20), 1, axis=1)
    np.fill_diagonal(A, 0.0)
    g = build_graph(A, _params("precomputed", n_eigs=5))
    np.testing.assert_allclose(g.weights.toarray(), (A + A.T) / 2, rtol=1e-15)
    _, lam, _ = _dense_spectrum((A + A.T) / 2, 5)
    np.testing.assert_allclose(g.eigenvalues, lam, atol=1e-10)


def test_equal_rows_are_one_point_of_the_graph():
    """The graph of rows with copies: that of the distinct points, every point
    replaced by its copies (joined with weight 1, the kernel at distance 0) and
    joined to every copy of its neighbours; no zero scale, no extra component."""
    rng = np.random.RandomState(9)
    points = np.vstack([rng.randn(12, 2), rng.randn(12, 2) + 3])
    copies = np.array([1, 3, 1, 6] * 6)  # how often each point occurs
    node_points = rng.permutation(np.repeat(np.arange(24), copies))
    X = points[node_points]
    k, sn, s = 5, 3, 3.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = build_graph(X, _params("gaussian", k, sn, s, n_eigs=4))
    W_points, sigma = _hand_gaussian(points, k, sn, s)
    same = node_points[:, None] == node_points[None, :]
    W = W_points[node_points][:, node_points] + same - np.eye(X.shape[0])
    np.testing.assert_allclose(g.weights.toarray(), W, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g.scales, sigma[node_points], rtol=1e-12)
    assert g.n_components == build_graph(points, _params("gaussian", k, sn, s)).n_components
    # equal nodes get equal eigenvector rows (the bottom of the spectrum
    # never separates copies, whose own modes have eigenvalues above 1)
    V = g.eigenvectors
    for p in range(24):
        rows = V[node_points == p]
        np.testing.assert_allclose(rows, np.broadcast_to(rows[0], rows.shape), atol=1e-10)


def test_copies_of_two_blobs_keep_the_graph_of_the_blobs():
    """Issue 10: 2 blobs of 40 points copied 6 times gave 12 components."""
    rng = np.random.RandomState(0)
    blobs = np.vstack([rng.randn(40, 2), rng.randn(40, 2) + 4])
    once = build_graph(blobs, _params(n_neighbors=10, scale_neighbor=5))
    six = build_graph(np.vstack([blobs] * 6), _params(n_neighbors=10, scale_neighbor=5))
    assert six.n_components == once.n_components
    np.testing.assert_allclose(six.scales, np.tile(once.scales, 6), rtol=1e-12)
    np.testing.assert_allclose(six.eigenvalues[: once.n_components], 0.0, atol=1e-10)


def test_first_equal_rows_dense_and_sparse():
    rng = np.random.RandomState(1)
    X = rng.randint(0, 3, size=(60, 4)).astype(float)
    X[5] = -0.0 * X[5]  # -0.0 equals 0.0
    expected = np.array([np.flatnonzero((X == X[i]).all(axis=1))[0] for i in range(60)])
    np.testing.assert_array_equal(graph_module.first_equal_rows(X), expected)
    S = sp.csr_matrix(X)
    S.data[S.data == 1.0] = 1.0  # keep the structure; explicit zeros must not matter
    np.testing.assert_array_equal(graph_module.first_equal_rows(S), expected)


@pytest.mark.parametrize("duplicates", [True, False])
def test_a_cached_graph_gives_a_new_node_set_its_equal_rows(tmp_path, monkeypatch, duplicates):
    """A NodeSet of the same data whose graph is loaded (disk or in-process cache)
    learns its equal rows from the graph, as first_equal_rows would find them."""
    rng = np.random.RandomState(0)
    X = rng.randn(80, 3)
    if duplicates:
        X[[7, 30, 61]] = X[4]
        X[50] = X[12]
    expected = graph_module.first_equal_rows(X)
    rows, y = np.array([0, 1, 40, 41]), [0, 0, 1, 1]

    def fit(nodes, **kwargs):
        return SpectralGraphClassifier(
            "gr", kernel="gaussian", nodes=nodes, n_neighbors=5, n_eigs=6, **kwargs
        ).fit(X[rows], y)

    clear_graph_cache()
    fit(NodeSet(X), memory=tmp_path)  # built (and its equal rows found), stored on disk
    clear_graph_cache()
    monkeypatch.setattr(graph_module, "first_equal_rows", None)  # no look at the rows now
    for _ in range(2):  # loaded from the disk, then from the in-process cache
        nodes = NodeSet(X)
        fit(nodes, memory=tmp_path)
        np.testing.assert_array_equal(nodes._first_equal, expected)
        assert not nodes.first_equal.flags.writeable
    clear_graph_cache()


def test_memory_that_is_a_file_is_refused_at_fit(tmp_path):
    X = np.random.RandomState(0).randn(30, 2)
    afile = tmp_path / "afile"
    afile.write_text("")
    clf = SpectralGraphClassifier("gr", n_neighbors=5, n_eigs=6)
    clf.fit(X, [0, 1] + [-1] * 28)  # the graph now in the in-process cache
    with pytest.raises(ValueError, match=r"memory must be a folder .*'.*afile' is a file"):
        clf.set_params(memory=afile).fit(X, [0, 1] + [-1] * 28)
    clear_graph_cache()


def test_a_precomputed_graph_does_not_tell_equal_rows():
    X = np.repeat(np.eye(4), 2, axis=0)
    W = sp.csr_matrix(np.ones((8, 8)) - np.eye(8))
    nodes = NodeSet(X)
    graph = graph_module.build_graph(W, _params(kernel="precomputed", n_eigs=3))
    graph_module._learn_first_equal(nodes, graph)
    assert nodes._first_equal is None
    np.testing.assert_array_equal(nodes.first_equal, [0, 0, 2, 2, 4, 4, 6, 6])


def test_too_few_distinct_points_clip_the_neighbours_with_a_warning():
    X = np.repeat([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]], 10, axis=0)
    with pytest.warns(UserWarning, match="only 3 distinct points"):
        g = build_graph(X, _params(n_neighbors=5, scale_neighbor=3, n_eigs=3))
    assert (g.params.n_neighbors, g.params.scale_neighbor) == (2, 2)
    assert g.n_components == 1


@pytest.mark.parametrize("factor", [1e300, 1e-300, 2.0**70])
@pytest.mark.parametrize("kernel", ["gaussian", "cosine"])
def test_the_graph_does_not_depend_on_the_scale_of_the_data(factor, kernel):
    X = np.random.RandomState(2).randn(40, 3)
    g = build_graph(X, _params(kernel))
    scaled = build_graph(X * factor, _params(kernel))
    # a power of two is exact; other factors round the data (relative 1e-16)
    np.testing.assert_allclose(scaled.weights.toarray(), g.weights.toarray(), rtol=1e-9, atol=0)
    np.testing.assert_allclose(scaled.eigenvalues, g.eigenvalues, atol=1e-9)
    new = np.random.RandomState(3).randn(5, 3)
    np.testing.assert_allclose(
        scaled.interpolation_weights(new * factor).toarray(),
        g.interpolation_weights(new).toarray(),
        rtol=1e-9,
        atol=1e-300,
    )


def test_many_components_warn():
    X = np.repeat(np.arange(12.0)[:, None] * 100, 3, axis=0) + np.tile([[0.0], [1], [2]], (12, 1))
    with pytest.warns(UserWarning, match="12 connected components, .* the n_eigs=8"):
        build_graph(X, _params(n_neighbors=2, scale_neighbor=2, n_eigs=8))


# ================================================================ extension
def _hand_interpolation(g, X, new, k, sn, s):
    W, sigma = _hand_gaussian(X, k, sn, s)
    out = np.zeros((new.shape[0], X.shape[0]))
    for r, x in enumerate(new):
        dist = _distances(x[None], X)[0]
        nn = np.argsort(dist)
        sigma_x = dist[nn[sn - 1]]
        out[r, nn[:k]] = np.exp(-dist[nn[:k]] ** 2 / (s * sigma_x * sigma[nn[:k]]))
        out[r] /= out[r].sum()
    return out


def test_interpolation_weights_of_new_points_by_hand():
    rng = np.random.RandomState(11)
    X = np.vstack([rng.randn(25, 2), rng.randn(25, 2) + 4])
    k, sn, s = 6, 4, 3.0
    g = build_graph(X, _params("gaussian", k, sn, s, n_eigs=N_EIGS))
    new = rng.rand(7, 2) * 6 - 1
    weights = g.interpolation_weights(new)
    assert sp.isspmatrix_csr(weights) and weights.shape == (7, 50)
    np.testing.assert_allclose(weights.toarray(), _hand_interpolation(g, X, new, k, sn, s),
                               rtol=1e-10, atol=1e-15)


def test_interpolation_reproduces_the_nodes_and_their_float32_copies():
    rng = np.random.RandomState(12)
    X = np.vstack([rng.randn(25, 2), rng.randn(25, 2) + 4]) * 3.3
    g = build_graph(X, _params(n_eigs=N_EIGS))
    for rows in (X, X + 1e-12, X.astype(np.float32).astype(float), X * (1 + 1e-9)):
        np.testing.assert_array_equal(g.interpolation_weights(rows).toarray(), np.eye(50))
    # a true new point near a node: its kNN average, continuous as it moves
    near = X + 1e-3
    w1, w2 = g.interpolation_weights(near), g.interpolation_weights(X + 1.01e-3)
    assert np.all(w1.getnnz(axis=1) == 5)
    np.testing.assert_allclose(w1.toarray(), w2.toarray(), atol=1e-3)


def test_interpolation_of_precomputed_rows_normalises_them():
    W = _random_graph(30, seed=10, density=0.3)
    g = build_graph(W, _params("precomputed", n_eigs=N_EIGS))
    rows = 2.5 * W[[3, 17]]
    np.testing.assert_allclose(g.interpolation_weights(rows).toarray(),
                               rows / rows.sum(axis=1, keepdims=True), rtol=1e-14)
    with pytest.warns(UserWarning, match="1 row.* no positive affinity"):
        zero = g.interpolation_weights(np.zeros((1, 30)))
    assert zero.nnz == 0
    with pytest.raises(ValueError, match="one column per node"):
        g.interpolation_weights(np.ones((1, 29)))
    with pytest.raises(ValueError, match="non-negative"):
        g.interpolation_weights(-np.ones((1, 30)))


def test_interpolation_far_from_every_node_warns_and_uses_the_nearest_nodes():
    rng = np.random.RandomState(13)
    X = rng.randn(40, 2)
    g = build_graph(X, _params(n_eigs=N_EIGS))
    far = np.array([[1e4, 0.0]])
    with pytest.warns(UserWarning, match="1 row.* far from every node"):
        weights = g.interpolation_weights(far).toarray()[0]
    assert weights.sum() == pytest.approx(1.0)
    nearest = np.argsort(np.linalg.norm(X - far, axis=1))[:5]  # n_neighbors=5
    assert set(np.flatnonzero(weights)) <= set(nearest.tolist())


def test_interpolation_with_copies_weighs_every_copy():
    rng = np.random.RandomState(14)
    points = rng.randn(30, 2)
    node_points = np.r_[np.arange(30), [4, 4, 9]]  # nodes 30, 31 copy point 4; 32 copies 9
    X = points[node_points]
    k, sn, s = 5, 3, 3.0
    g = build_graph(X, _params("gaussian", k, sn, s))
    new = rng.randn(6, 2)
    by_point = _hand_interpolation(None, points, new, k, sn, s)
    expected = by_point[:, node_points]
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g.interpolation_weights(new).toarray(), expected, rtol=1e-10,
                               atol=1e-15)
    # an exact copy of a duplicated point: its first node alone
    exact = g.interpolation_weights(points[[4, 9]]).toarray()
    np.testing.assert_array_equal(exact, np.eye(33)[[4, 9]])


def test_graph_repr_is_a_one_line_summary():
    X, y_true = make_moons(120, noise=0.05, random_state=0)
    y = np.full(120, -1)
    y[:4] = y_true[:4]
    graph = SpectralGraphClassifier(n_eigs=10).fit(X, y).graph_
    text = repr(graph)
    W = graph.weights.toarray()
    n_edges = np.count_nonzero(np.triu(W))  # each undirected edge (and self-loop) once
    assert text.startswith(
        f"SpectralGraph(n_nodes=120, n_edges={n_edges}, kernel='gaussian', n_neighbors=10, "
        f"n_eigs=10, eigenvalues=[{graph.eigenvalues[0]:.3g}, ..., "
        f"{graph.eigenvalues[-1]:.3g}], n_components={graph.n_components}, residual="
    )
    assert "\n" not in text and len(text) < 200


# ------------------------------------------------------------ cache: one build per key
def test_threads_fitting_on_one_node_set_build_the_graph_once(monkeypatch):
    import threading
    import time

    from skmcal import GRAPH_CACHE, NodeSet, clear_graph_cache

    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(30, 2), rng.randn(30, 2) + 4.0])
    nodes = NodeSet(X)
    rows = np.array([0, 1, 30, 31])
    calls = []
    real_build = graph_module.build_graph

    def slow_build(*args, **kwargs):
        calls.append(threading.get_ident())
        time.sleep(0.2)  # keeps the build open while the other threads arrive
        return real_build(*args, **kwargs)

    monkeypatch.setattr(graph_module, "build_graph", slow_build)
    clear_graph_cache()
    builds_before = GRAPH_CACHE.builds
    fitted = run_concurrently(
        lambda i: SpectralGraphClassifier(
            "gr", kernel="gaussian", nodes=nodes, n_neighbors=5, n_eigs=6
        ).fit(
            X[rows], [0, 0, 1, 1]
        ),
        4,
    )
    assert len(calls) == 1
    assert GRAPH_CACHE.builds - builds_before == 1
    assert all(clf.graph_ is fitted[0].graph_ for clf in fitted)
    clear_graph_cache()


def test_a_failed_build_releases_its_key(monkeypatch):
    from skmcal import NodeSet
    from skmcal.graph import GraphCache

    rng = np.random.RandomState(1)
    nodes = NodeSet(rng.randn(40, 2))
    params = GraphParams("gaussian", 5, 3, 1.0, 6, random_state=0)
    real_build = graph_module.build_graph
    monkeypatch.setattr(
        graph_module, "build_graph", lambda *a, **k: (_ for _ in ()).throw(MemoryError("boom"))
    )
    cache = GraphCache()
    with pytest.raises(MemoryError, match="boom"):
        cache.get_or_build(nodes, params)
    monkeypatch.setattr(graph_module, "build_graph", real_build)
    graph = cache.get_or_build(nodes, params)
    assert cache.get_or_build(nodes, params) is graph
    assert cache.builds == 1 and not cache._key_locks


# -------------------------------------------- many components: the true smallest eigenpairs
def _many_components(n_components=15, size=40, seed=0):
    """Block-diagonal kNN affinity: ``n_components`` separate random clouds."""
    rng = np.random.RandomState(seed)
    blocks = []
    for _ in range(n_components):
        A = kneighbors_graph(rng.randn(size, 3), 5, mode="distance")
        A.data = np.exp(-(A.data**2))
        blocks.append((A + A.T) * 0.5)
    return sp.block_diag(blocks, format="csr")


def _dense_laplacian_eigh(W):
    d = np.asarray(W.sum(axis=1)).ravel()
    L = np.eye(W.shape[0]) - W.toarray() / np.sqrt(np.outer(d, d))
    return np.linalg.eigh(L)


def _projector(V):
    return V @ V.T


@pytest.mark.parametrize("path", ["dense", "arpack"])
@pytest.mark.parametrize("n_eigs", [10, 15, 25])
def test_spectrum_on_a_graph_with_many_components_matches_a_dense_solver(
    monkeypatch, path, n_eigs
):
    if path == "arpack":
        monkeypatch.setattr(graph_module, "DENSE_EIGEN_MAX_NODES", 10)
    W = _many_components()
    eigenvalues, V, residual = laplacian_spectrum(W, n_eigs, random_state=0)
    lam, U = _dense_laplacian_eigh(W)
    np.testing.assert_allclose(eigenvalues, np.clip(lam[:n_eigs], 0, None), atol=1e-9)
    assert residual < 1e-6
    np.testing.assert_allclose(V.T @ V, np.eye(n_eigs), atol=1e-9)
    n_null = min(15, n_eigs)
    assert np.all(eigenvalues[:n_null] == 0.0)
    # The null space (all 15 components when n_eigs allows) and, past it, the
    # whole span (the dense eigenvalues have a gap after n_eigs there).
    assert lam[14] < 1e-12 < 1e-3 < lam[15]
    if n_eigs <= 15:
        assert np.linalg.norm(U[:, 15:].T @ V) < 1e-9  # V lies in the null space
    else:
        np.testing.assert_allclose(_projector(V[:, :15]), _projector(U[:, :15]), atol=1e-9)
        assert lam[n_eigs] - lam[n_eigs - 1] > 1e-3
        np.testing.assert_allclose(_projector(V), _projector(U[:, :n_eigs]), atol=1e-7)


def test_null_space_basis_is_one_weighted_indicator_per_component():
    W = _many_components(n_components=4, size=10).tolil()
    W = sp.block_diag([W, sp.csr_matrix((2, 2))], format="csr")  # two isolated nodes
    N = graph_module.null_space_basis(W).toarray()
    assert N.shape == (42, 4)
    d = np.asarray(W.sum(axis=1)).ravel()
    for c in range(4):
        expected = np.zeros(42)
        expected[10 * c : 10 * (c + 1)] = np.sqrt(d[10 * c : 10 * (c + 1)])
        np.testing.assert_allclose(N[:, c], expected / np.linalg.norm(expected), rtol=1e-14)


_DETERMINISM_SCRIPT = """
import hashlib, sys
import numpy as np
from skmcal import NodeSet, SpectralGraphClassifier, clear_graph_cache
from skmcal import graph
graph.DENSE_EIGEN_MAX_NODES = 50
rng = np.random.RandomState(0)
X = np.vstack([rng.randn(25, 4) + 6 * rng.randn(4) for _ in range(12)])
X = np.vstack([X, X[:60]])  # duplicate rows
y = np.full(X.shape[0], -1)
y[[0, 1, 25, 26]] = [0, 0, 1, 1]
for random_state in (0, None):
    clf = SpectralGraphClassifier("gr", n_neighbors=6, n_eigs=20, random_state=random_state)
    with np.errstate(all="ignore"):
        import warnings
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    for a in (clf.eigenvalues_, clf.eigenvectors_, clf.transduction_, clf.predict_proba(X)):
        sys.stdout.write(hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() + "\\n")
"""


def test_identical_fits_in_two_processes_agree_bit_for_bit():
    import os
    import subprocess
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    runs = [
        subprocess.run(
            [sys.executable, "-c", _DETERMINISM_SCRIPT],
            env=env, capture_output=True, text=True, check=True, timeout=300,
        ).stdout
        for _ in range(2)
    ]  # fmt: skip
    assert len(runs[0].split()) == 8
    assert runs[0] == runs[1]


def test_neighbors_from_a_transformer_graph_match_brute_force():
    from sklearn.neighbors import KNeighborsTransformer

    X = np.random.RandomState(3).rand(40, 3)
    D = _distances(X, X)
    order = np.argsort(D + np.diag(np.full(40, np.inf)), axis=1, kind="stable")[:, :5]
    G = KNeighborsTransformer(n_neighbors=6, mode="distance").fit_transform(X)  # self + 6 each
    assert np.unique(np.diff(G.indptr)).size == 1  # the path of equal counts per row
    dist, ind = graph_module._neighbors_from_graph(G, 5, exclude_self=True, source=None)
    np.testing.assert_array_equal(ind, order)
    np.testing.assert_allclose(dist, np.take_along_axis(D, order, 1), rtol=1e-12)
    uneven = G.tolil()
    uneven[0, order[0, 5 - 1]] = 0  # row 0 loses its 5th neighbour: the general path
    uneven = sp.csr_matrix(uneven)
    uneven.eliminate_zeros()
    dist2, ind2 = graph_module._neighbors_from_graph(uneven, 5, exclude_self=True, source=None)
    np.testing.assert_array_equal(ind2[1:], order[1:])
    np.testing.assert_allclose(dist2[1:], dist[1:], rtol=0)
    with pytest.raises(ValueError, match="gave 6 neighbours for some rows; 7 are needed"):
        graph_module._neighbors_from_graph(G, 7, exclude_self=True, source=None)


def test_symmetric_knn_weights_and_normalized_adjacency_against_dense():
    rng = np.random.RandomState(4)
    n, k = 30, 4
    ind = np.array([rng.choice(np.delete(np.arange(n), i), k, replace=False) for i in range(n)])
    weights = rng.rand(n, k)
    K = np.zeros((n, n))
    K[np.repeat(np.arange(n), k), ind.ravel()] = weights.ravel()
    W = graph_module._symmetric_knn_weights(weights, ind)
    assert W.indices.dtype == np.int32 and W.has_canonical_format
    np.testing.assert_array_equal(W.toarray(), (K + K.T) * 0.5)
    A = graph_module.normalized_adjacency(W)
    assert (A != A.T).nnz == 0  # symmetric to the last bit
    s = 1 / np.sqrt(W.toarray().sum(axis=1))
    np.testing.assert_allclose(A.toarray(), s[:, None] * W.toarray() * s[None, :], rtol=1e-15)


def _two_component_knn_graph(n, seed):
    """Two far-apart copies of a kNN graph: a null space of two vectors to deflate."""
    return sp.block_diag([_knn_graph(n, seed), _knn_graph(n // 2, seed + 1)], format="csr")


@pytest.mark.parametrize("parallel", [False, True], ids=["scipy-product", "numba-product"])
@pytest.mark.parametrize("make", [_knn_graph, _two_component_knn_graph])
def test_laplacian_spectrum_chebyshev_path_matches_eigh(make, parallel, monkeypatch):
    if parallel:  # the block products on numba's threads (skmcal._sparse), as on large graphs
        pytest.importorskip("numba")
        monkeypatch.setattr("skmcal._sparse.PARALLEL_MIN_ROWS", 0)
    W = make(150, seed=5)
    n = W.shape[0]
    Wd = W.toarray()
    s = 1 / np.sqrt(Wd.sum(axis=1))
    L = np.eye(n) - s[:, None] * Wd * s[None, :]
    lam, V_ref = np.linalg.eigh(L)
    lam, V_ref = lam[:N_EIGS], V_ref[:, :N_EIGS]
    eigenvalues, V, residual = laplacian_spectrum(W, N_EIGS, random_state=1, solver="chebyshev")
    # float32 subspace iteration: residuals at the float32 level, eigenvalues to ~1e-6
    assert residual <= graph_module.CHEBYSHEV_TOL
    own = np.linalg.norm(L @ V - V * eigenvalues, axis=0)
    assert residual == pytest.approx(own.max(), rel=1e-6)
    np.testing.assert_allclose(eigenvalues, lam, rtol=0, atol=1e-6)
    np.testing.assert_allclose(V.T @ V, np.eye(N_EIGS), atol=1e-6)
    n_null = int(np.sum(lam < 1e-10))
    assert np.all(eigenvalues[:n_null] == 0.0)
    # the same vectors (the null space: the same subspace)
    np.testing.assert_allclose(np.linalg.svd(V[:, :n_null].T @ V_ref[:, :n_null])[1], 1.0)
    rest = slice(n_null, N_EIGS)
    np.testing.assert_allclose(np.abs(V[:, rest].T @ V_ref[:, rest]), np.eye(N_EIGS - n_null),
                               atol=1e-4)  # fmt: skip
    assert np.all(V[np.abs(V).argmax(axis=0), np.arange(N_EIGS)] > 0)
    again = laplacian_spectrum(W, N_EIGS, random_state=1, solver="chebyshev")
    np.testing.assert_array_equal(again[1], V)  # seeded: deterministic


def test_chebyshev_spectrum_is_the_same_with_numba_threads_or_scipy(monkeypatch):
    # the threaded product sums each row in scipy's order: identical spectra
    pytest.importorskip("numba")
    W = _two_component_knn_graph(150, seed=6)
    monkeypatch.setattr("skmcal._sparse._kernel", lambda: None)
    plain = laplacian_spectrum(W, N_EIGS, random_state=2, solver="chebyshev")
    monkeypatch.undo()
    monkeypatch.setattr("skmcal._sparse.PARALLEL_MIN_ROWS", 0)
    threaded = laplacian_spectrum(W, N_EIGS, random_state=2, solver="chebyshev")
    np.testing.assert_array_equal(threaded[0], plain[0])
    np.testing.assert_array_equal(threaded[1], plain[1])


def test_laplacian_spectrum_solver_choice(monkeypatch):
    calls = _spy_on_eigsh(monkeypatch)
    used = []
    real = graph_module.chebyshev_eigenpairs
    monkeypatch.setattr(
        graph_module, "chebyshev_eigenpairs", lambda *a, **k: used.append(1) or real(*a, **k)
    )
    W = _knn_graph(120, seed=6)
    monkeypatch.setattr(graph_module, "DENSE_EIGEN_MAX_NODES", 20)
    monkeypatch.setattr(graph_module, "CHEBYSHEV_MIN_NODES", 100)
    laplacian_spectrum(W, 4)  # above CHEBYSHEV_MIN_NODES
    assert used and not calls
    laplacian_spectrum(W, 4, solver="arpack")
    assert len(calls) == 1
    with pytest.raises(ValueError, match="solver must be 'auto', 'dense', 'arpack' or "
                       "'chebyshev'; got 'lobpcg'"):  # fmt: skip
        laplacian_spectrum(W, 4, solver="lobpcg")


class Flipped(TransformerMixin, BaseEstimator):
    """A kNN transformer whose distances are negative (module level: graphs hash it)."""

    def fit(self, X, y=None):
        self.knn_ = KNeighborsTransformer(n_neighbors=11).fit(X)
        return self

    def transform(self, X):
        G = self.knn_.transform(X)
        G.data = -G.data
        return G


def test_a_neighbors_transformer_that_gives_no_distance_graph_is_named():
    from sklearn.preprocessing import StandardScaler

    X = np.random.RandomState(0).randn(80, 2)
    y = [0, 1] + [-1] * 78
    cases = [
        (StandardScaler(), r"StandardScaler must give a sparse distance graph of shape "
                           r"\(80, 80\).*got ndarray of shape \(80, 2\)"),
        (KNeighborsTransformer(n_neighbors=10, mode="connectivity"),
         r"mode='connectivity'; the graph's kernel needs distances"),
        (Flipped(), r"Flipped gave distances that are negative, NaN or infinite"),
    ]  # fmt: skip
    for neighbors, message in cases:
        with pytest.raises(ValueError, match=message):
            SpectralGraphClassifier("mgr", neighbors=neighbors, cache=False).fit(X, y)
    SpectralGraphClassifier("mgr", neighbors=KNeighborsTransformer(n_neighbors=11)).fit(X, y)
