"""The white-noise remainder of the full-graph and summed priors against dense brute force.

``model="full"`` and ``model="sum"`` with ``gr``/``mgr`` score candidates with the
covariance of the prior ``V D V' + s (I - V V')`` (``D`` the prior's projection on the
kept eigenvectors, ``s`` the mean variance of what is left, ``remainder_variance``),
observed with noise ``gamma^2`` at the labeled nodes (skmcal/posterior.py, "White-noise
remainder"). Here that covariance is formed over all nodes, ``C_u = Sigma - Sigma_:L
(Sigma_LL + gamma^2 I)^-1 Sigma_L:``, and every value is the Gaussian update it defines:
adding node ``k`` with target ``t`` moves the latent values by ``C_u e_k (t - u_k) /
(C_u[k, k] + gamma^2)``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from skmcal import SpectralGraphClassifier, acquisition, model_change, sopt, vopt
from skmcal.fitting import posterior_around, remainder_variance
from skmcal.graph import laplacian_trace
from skmcal.losses import LOSSES

from _oracle import blobs, dense_laplacian, plane_knn_graph, semi_supervised

CENTERS = [[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]]


def _data(n_classes=3, seed=0):
    X, y_true, labeled = blobs(
        n_classes, 25, centers=CENTERS, labels=np.arange(n_classes), n_labeled=3, seed=seed
    )
    return X, semi_supervised(y_true, labeled), y_true


def _fit(loss="mgr", model="full", **params):
    X, y, _ = _data(3 if loss in ("mgr", "ce") else 2)
    clf = SpectralGraphClassifier(loss, model=model, n_eigs=12, cache=False, **params)
    return clf.fit(X, y), X, y


def _dense(clf):
    """``(C_u, gamma, s)``: the latent covariance of the classifier's posterior, dense."""
    V, lam = clf.eigenvectors_, clf.eigenvalues_
    s = clf.posterior_.nugget
    assert s > 0  # the remainder is modelled
    if clf.model == "full":
        D, gamma = 1.0 / (lam + clf.tau_**2), clf.gamma_
    else:  # in units of a c_s: the spectral part plus the full part's projection
        p = clf.sum_prior_
        ratio = p["eps"] * p["full_scale"] / p["spectral_scale"]
        D, gamma = 1.0 / (lam + p["tau_s"] ** 2) + ratio / (lam + p["tau_f"] ** 2), clf.gamma_
    n = V.shape[0]
    Sigma = (V * D) @ V.T + s * (np.eye(n) - V @ V.T)
    L = clf.labeled_nodes_
    K = Sigma[np.ix_(L, L)] + gamma**2 * np.eye(L.size)
    return Sigma - Sigma[:, L] @ np.linalg.solve(K, Sigma[L, :]), gamma, s


def _targets(posterior, nodes, U):
    T = posterior.loss.pseudo_targets(U)
    if posterior.offset_coef is not None:
        T = T - np.multiply.outer(posterior.offset_direction[nodes], posterior.offset_coef)
    return T


def _dense_values(posterior, Cu, gamma, nodes):
    """Model change, V-opt and Sigma-opt of ``nodes`` under the dense covariance ``Cu``."""
    U = posterior.latent(nodes)
    residual = np.abs(U - _targets(posterior, nodes, U)).reshape(nodes.size, -1)
    S = Cu[nodes, nodes] + gamma**2
    column = Cu[:, nodes]
    change = np.linalg.norm(column, axis=0) * np.linalg.norm(residual, axis=1) / S
    return change, (column**2).sum(axis=0) / S, column.sum(axis=0) ** 2 / S


# ------------------------------------------------------------------ the variance s
def test_remainder_variance_is_the_mean_of_the_dropped_eigenvalues():
    W, _ = plane_knn_graph(40, seed=1)
    lam = np.linalg.eigvalsh(dense_laplacian(W))
    for M, tau in ((6, 0.1), (15, 0.03)):
        expected = 1.0 / (lam[M:].mean() + tau**2)
        got = remainder_variance(lam[:M], sp.csr_matrix(W), tau)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        assert np.all(got < 1.0 / (lam[:M] + tau**2))
    assert remainder_variance(lam, sp.csr_matrix(W), 0.1) == 0.0  # every eigenpair kept


def test_remainder_variance_counts_self_loops_in_the_trace():
    W, _ = plane_knn_graph(30, seed=2)
    W = sp.csr_matrix(W) + sp.diags(np.linspace(0.1, 1.0, 30))
    lam = np.linalg.eigvalsh(dense_laplacian(W))
    np.testing.assert_allclose(
        remainder_variance(lam[:5], W, 0.2), 1.0 / (lam[5:].mean() + 0.04), rtol=1e-12
    )


def test_laplacian_trace_is_the_dense_trace_and_kept_with_the_graph():
    W, _ = plane_knn_graph(30, seed=3)
    W = sp.lil_matrix(sp.csr_matrix(W) + sp.diags(np.linspace(0.1, 1.0, 30)))
    W[7, :] = 0.0  # an isolated node: its row of L is e_7'
    W[:, 7] = 0.0
    W = sp.csr_matrix(W)
    rest = np.delete(np.arange(30), 7)
    expected = np.trace(dense_laplacian(W[rest][:, rest])) + 1.0
    assert laplacian_trace(W) == pytest.approx(expected, rel=1e-13)
    degrees = np.asarray(W.sum(axis=1)).ravel()  # given: the same trace
    assert laplacian_trace(W, degrees) == laplacian_trace(W)
    clf, X, y = _fit()
    graph = clf.graph_
    dense = np.trace(dense_laplacian(graph.weights.toarray()))
    assert graph.laplacian_trace == pytest.approx(dense, rel=1e-13)
    assert "laplacian_trace" in vars(graph)  # computed once, with the fit's nugget
    for tau in (0.01, 0.3):
        lam = graph.eigenvalues
        assert remainder_variance(lam, graph.weights, tau, trace=graph.laplacian_trace) == (
            remainder_variance(lam, graph.weights, tau)
        )


# ------------------------------------------------------------- the classifier
@pytest.mark.parametrize(("loss", "model"), [("mgr", "full"), ("gr", "full"), ("mgr", "sum")])
def test_latent_covariance_is_the_dense_remainder_posterior(loss, model):
    clf, X, y = _fit(loss, model)
    Cu, _, s = _dense(clf)
    assert s > 0
    rows = np.r_[clf.labeled_nodes_[:3], np.flatnonzero(y == -1)[:4]]
    np.testing.assert_allclose(clf.posterior_cov(X[rows]), Cu[np.ix_(rows, rows)],
                               atol=1e-12 * np.abs(Cu).max())  # fmt: skip
    # a point off the nodes: the weighted average of its nearest nodes' latent values
    new = X[:2] + 0.05
    weights = clf.graph_.interpolation_weights(new).toarray()
    np.testing.assert_allclose(clf.posterior_cov(new), weights @ Cu @ weights.T,
                               atol=1e-12 * np.abs(Cu).max())  # fmt: skip


@pytest.mark.parametrize(("loss", "model"), [("mgr", "full"), ("gr", "full"), ("mgr", "sum")])
def test_acquisition_values_are_the_dense_gaussian_updates(loss, model):
    clf, X, y = _fit(loss, model)
    Cu, gamma, _ = _dense(clf)
    nodes = np.flatnonzero(y == -1)
    posterior = clf.posterior_
    change, variance, survey = _dense_values(posterior, Cu, gamma, nodes)
    np.testing.assert_allclose(acquisition.model_change(posterior, nodes), change, rtol=1e-9)
    np.testing.assert_allclose(acquisition.vopt(posterior, nodes), variance, rtol=1e-9)
    np.testing.assert_allclose(acquisition.sopt(posterior, nodes), survey, rtol=1e-9)


@pytest.mark.parametrize(("loss", "model"), [("mgr", "full"), ("mgr", "sum")])
def test_look_ahead_is_the_dense_update_with_the_pseudo_label(loss, model):
    """After node k: the latent values u + C_u e_k (t_k - u_k) / S_k at the other
    unlabeled nodes, and every value from the updated covariance (twice in a row)."""
    clf, X, y = _fit(loss, model)
    Cu, gamma, _ = _dense(clf)
    posterior = clf.posterior_
    nodes = np.flatnonzero(y == -1)
    for k in (nodes[5], nodes[40]):
        U = posterior.latent(nodes)
        i = np.flatnonzero(nodes == k)[0]
        t = _targets(posterior, nodes[i : i + 1], U[i : i + 1])[0]
        S = Cu[k, k] + gamma**2
        expected = U + np.multiply.outer(Cu[nodes, k], t - U[i]) / S
        Cu = Cu - np.outer(Cu[:, k], Cu[k]) / S
        posterior = posterior.look_ahead(k)
        nodes, expected = np.delete(nodes, i), np.delete(expected, i, axis=0)
        np.testing.assert_allclose(posterior.latent(nodes), expected, atol=1e-12)
        change, variance, survey = _dense_values(posterior, Cu, gamma, nodes)
        np.testing.assert_allclose(acquisition.model_change(posterior, nodes), change,
                                   rtol=1e-9)  # fmt: skip
        np.testing.assert_allclose(acquisition.vopt(posterior, nodes), variance, rtol=1e-9)
        np.testing.assert_allclose(acquisition.sopt(posterior, nodes), survey, rtol=1e-9)


@pytest.mark.parametrize("strategy", [model_change, vopt, sopt])
def test_greedy_batches_follow_the_dense_look_aheads(strategy):
    clf, X, y = _fit("mgr", "sum")
    Cu, gamma, _ = _dense(clf)
    posterior = clf.posterior_
    nodes = np.flatnonzero(y == -1)
    which = {model_change: 0, vopt: 1, sopt: 2}[strategy]
    expected = []
    for _ in range(3):
        values = _dense_values(posterior, Cu, gamma, nodes)[which]
        k = nodes[np.argmax(values)]
        expected.append(k)
        Cu = Cu - np.outer(Cu[:, k], Cu[k]) / (Cu[k, k] + gamma**2)
        posterior = posterior.look_ahead(k)
        nodes = nodes[nodes != k]
    rows, _ = strategy(clf, X, 3, batch="greedy", candidates=None)
    np.testing.assert_array_equal(rows, expected)


def test_screened_values_keep_the_exact_top(monkeypatch):
    """Single-precision screening (the remainder's form subtracted in float32) keeps
    the exact values of the top candidates."""
    clf, X, y = _fit("mgr", "full")
    nodes = np.flatnonzero(y == -1)
    exact = acquisition.model_change(clf.posterior_, nodes)
    monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
    screened = acquisition.model_change(clf.posterior_, nodes, top=4)
    top = np.argsort(-exact)[:4]
    np.testing.assert_array_equal(screened[top], exact[top])
    np.testing.assert_allclose(screened, exact, rtol=1e-4)


# ------------------------------------------------------------------ bad input
def test_remainder_needs_a_gaussian_loss_and_room_under_the_prior():
    clf, X, y = _fit("mgr", "full")
    lam, V = clf.eigenvalues_, clf.eigenvectors_
    labeled = clf.labeled_nodes_
    latent = clf.posterior_.latent(slice(None))
    T = LOSSES["mgr"].encode(np.zeros(labeled.size, dtype=int), 3)
    prior = lam + clf.tau_**2
    with pytest.raises(ValueError, match="nugget takes the losses 'gr' and 'mgr'; got 'ce'"):
        posterior_around(LOSSES["ce"], prior, V, labeled, T, 0.5, latent, nugget=0.1)
    with pytest.raises(ValueError, match="nugget must be below the prior variance"):
        posterior_around(LOSSES["mgr"], prior, V, labeled, T, 0.5, latent,
                         nugget=2.0 / prior.min())  # fmt: skip
    with pytest.raises(ValueError, match="nugget must be a positive finite number; got nan"):
        posterior_around(LOSSES["mgr"], prior, V, labeled, T, 0.5, latent, nugget=np.nan)


def test_other_models_keep_the_plain_spectral_covariance():
    for loss, model in (("ce", "full"), ("logistic", "full"), ("mgr", "poisson"),
                        ("mgr", "spectral")):  # fmt: skip
        clf = _fit(loss, model)[0]
        assert getattr(clf.posterior_, "nugget", 0.0) == 0.0
