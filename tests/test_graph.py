"""The graph and its spectrum against hand computations on tiny point sets."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import eigh
from sklearn.neighbors import kneighbors_graph

from skmcal import SpectralGraphClassifier
from skmcal import graph as graph_module
from skmcal.graph import GraphParams, build_graph, laplacian_spectrum

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
    clf = SpectralGraphClassifier("gr", n_neighbors=4, scale_neighbor=3, scale_factor=2.0,
                                  n_eigs=5, cache=False).fit(X, y)
    W, _ = _hand_gaussian(X, 4, 3, 2.0)
    np.testing.assert_allclose(clf.graph_.weights.toarray(), W, rtol=1e-12, atol=1e-15)
    _, lam, _ = _dense_spectrum(W, 5)
    np.testing.assert_allclose(clf.eigenvalues_, lam, atol=1e-10)


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


def test_duplicate_points_get_a_positive_scale():
    """sigma_i = 0 (duplicates) is floored: smallest positive neighbour distance, no warning."""
    rng = np.random.RandomState(9)
    X = np.vstack([np.zeros((4, 2)), rng.randn(12, 2) + 3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = build_graph(X, _params("gaussian", n_neighbors=5, scale_neighbor=3, n_eigs=4))
    assert np.all(np.isfinite(g.weights.data)) and np.all(g.scales > 0)
    D = _distances(X, X)
    for i in range(4):  # each duplicate: its 5 neighbours are 3 copies (d=0) and 2 others
        others = np.sort(D[i, 4:])
        assert g.scales[i] == pytest.approx(others[0], rel=1e-12)


# ================================================================ extension
def test_nystrom_reproduces_eigenvectors_on_precomputed_rows():
    W = _random_graph(30, seed=10, density=0.3)
    g = build_graph(W, _params("precomputed", n_eigs=N_EIGS))
    assert np.max(g.eigenvalues) < 1 - 10 * graph_module.NYSTROM_MIN_GAP
    np.testing.assert_allclose(g.extend(W), g.eigenvectors, rtol=0, atol=1e-11)
    np.testing.assert_allclose(g.extend(sp.csr_matrix(W[[3, 17]])), g.eigenvectors[[3, 17]],
                               rtol=0, atol=1e-11)
    # the same through the classifier: rows of affinities that are not node rows
    y = np.full(30, -1)
    y[[0, 1, 2, 15, 16]] = [0, 0, 0, 1, 1]
    clf = SpectralGraphClassifier("gr", kernel="precomputed", n_eigs=N_EIGS,
                                  cache=False).fit(W, y)
    # a row scaled by c is no node row; by the formula its values scale by sqrt(c)
    scaled = 2.0 * W[[4, 9]]
    np.testing.assert_allclose(clf.decision_function(scaled),
                               np.sqrt(2.0) * clf.eigenvectors_[[4, 9]] @ clf.coef_, atol=1e-10)


def test_nystrom_of_new_points_by_hand():
    rng = np.random.RandomState(11)
    X = np.vstack([rng.randn(25, 2), rng.randn(25, 2) + 4])
    k, sn, s = 6, 4, 3.0
    g = build_graph(X, _params("gaussian", k, sn, s, n_eigs=N_EIGS))
    W, sigma = _hand_gaussian(X, k, sn, s)
    d = W.sum(axis=1)
    new = rng.rand(7, 2) * 6 - 1
    V, lam = g.eigenvectors, g.eigenvalues
    expected = np.empty((new.shape[0], N_EIGS))
    for r, x in enumerate(new):
        dist = _distances(x[None], X)[0]
        nn = np.argsort(dist)
        sigma_x = dist[nn[sn - 1]]
        w = np.zeros(X.shape[0])
        w[nn[:k]] = np.exp(-dist[nn[:k]] ** 2 / (s * sigma_x * sigma[nn[:k]]))
        expected[r] = (w / np.sqrt(d)) @ V / np.sqrt(w.sum()) / (1 - lam)
    np.testing.assert_allclose(g.extend(new), expected, rtol=1e-10, atol=1e-12)


def test_nystrom_of_a_near_duplicate_is_near_its_node():
    """Near, not equal: a point 1e-7 from node i counts node i as a neighbour of
    weight ~1 (the graph has no self-loops) and its own kNN row is not the
    symmetrised row of W, so Nystrom gives V[i] only approximately (the error grows
    like 1 / (1 - lambda)). It is still much nearer V[i] than other nodes are.
    """
    rng = np.random.RandomState(12)
    X = np.vstack([rng.randn(25, 2), rng.randn(25, 2) + 4])
    y = np.full(50, -1)
    y[[0, 1, 2, 25, 26, 27]] = [0, 0, 0, 1, 1, 1]
    clf = SpectralGraphClassifier("gr", n_eigs=N_EIGS, cache=False).fit(X, y)
    V = clf.eigenvectors_
    near = X + 1e-7
    ext = clf.graph_.extend(near)
    for i in range(50):
        own = np.linalg.norm(ext[i] - V[i])
        others = np.delete(np.linalg.norm(V - V[i], axis=1), i)
        assert own < 0.6 * np.median(others)
    # continuity away from the nodes: halving the perturbation barely moves the values
    np.testing.assert_allclose(clf.graph_.extend(X + 5e-8), ext, atol=1e-5)
    u = clf.decision_function(X)
    confident = np.abs(u) > 0.3 * np.abs(u).max()
    np.testing.assert_array_equal(clf.predict(near)[confident], clf.predict(X)[confident])
