"""The full-graph and Poisson models of SpectralGraphClassifier against dense brute force.

On a tiny graph the full-graph MAP is recomputed by a dense Newton iteration
on ``1/2 u'(L + tau^2 I)u + sum_j loss(u_j, y_j)`` (docs/math.rst,
"Full-graph and Poisson models"; the oracle's, with the losses' own value and
derivatives, which tests/test_losses.py checks against finite differences),
and the covariance by inverting the dense spectral Hessian at that latent.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from skmcal import SpectralGraphClassifier, acquisition, model_change
from skmcal.losses import LOSSES
from skmcal.poisson import poisson_learning

from _oracle import blobs, dense_laplacian, full_graph_map, semi_supervised

BINARY = ("gr", "logistic", "probit")
ALL_LOSSES = BINARY + ("mgr", "ce")
TAU, GAMMA = 0.2, 0.4


def _blobs(n_classes, seed=0):
    X, y_true, labeled = blobs(
        n_classes,
        20,
        centers=[[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]],
        labels=np.arange(3),
        n_labeled=3,
        seed=seed,
    )
    return X, semi_supervised(y_true, labeled), y_true


def _less_offset(W, labeled, T):
    """``T`` less its projection on the labeled nodes' ``sqrt(degrees)`` (the class offset)."""
    w = np.sqrt(np.asarray(W.sum(axis=1)).ravel()[labeled])
    w = w if T.ndim == 1 else w[:, None]
    return T - w * np.sum(w * T, axis=0) / np.sum(w * w)


def _dense_map(clf, y):
    """The oracle's dense Newton on the full-graph objective, for the classifier's graph
    (gr / mgr: the targets less their class offset, docs/math.rst)."""
    loss = LOSSES[clf.loss]
    labeled = np.flatnonzero(y != -1)
    codes = np.searchsorted(clf.classes_, y[labeled])
    T = loss.encode(codes, clf.classes_.size)
    if loss.closed_form:
        T = _less_offset(clf.graph_.weights, labeled, T)
    return full_graph_map(loss, clf.graph_.weights, labeled, T, clf.tau_, clf.gamma_)


def _fit(loss, model="full", **params):
    X, y, y_true = _blobs(2 if loss in BINARY else 3)
    # tol 1e-10: the brute-force comparisons at 1e-8 (tol="auto" stops the sparse solves
    # at 1e-6; the spectral model's Newton is at 1e-10 either way)
    params = {"tau": TAU, "gamma": GAMMA, "n_eigs": 10, "cache": False, "tol": 1e-10, **params}
    clf = SpectralGraphClassifier(loss, model=model, **params).fit(X, y)
    return clf, X, y, y_true


@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_full_graph_map_matches_dense_newton(loss):
    clf, X, y, _ = _fit(loss)
    expected = _dense_map(clf, y)
    got = clf.posterior_.latent(np.arange(X.shape[0]))
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-8 * np.abs(expected).max())
    np.testing.assert_allclose(clf.decision_function(X[:5]).shape[0], 5)


@pytest.mark.parametrize("loss", ["logistic", "probit", "ce"])
def test_full_graph_covariance_is_the_spectral_hessian_at_its_latent(loss):
    """Newton losses; gr / mgr add the prior's remainder (tests/test_remainder.py)."""
    clf, X, y, _ = _fit(loss)
    V, lam, g = clf.eigenvectors_, clf.eigenvalues_, clf.gamma_
    labeled = np.flatnonzero(y != -1)
    U = clf.posterior_.latent(labeled)
    M = lam.size
    if loss == "ce":
        n_c = clf.classes_.size
        H = np.kron(np.eye(n_c), np.diag(lam + clf.tau_**2))
        for j, u in zip(labeled, U, strict=True):
            pi = softmax(u / g)
            H += np.kron(np.diag(pi) - np.outer(pi, pi), np.outer(V[j], V[j])) / g**2
    else:
        codes = np.searchsorted(clf.classes_, y[labeled])
        _, curvature = LOSSES[loss].derivatives(U, 2.0 * codes - 1.0, g)
        H = np.diag(lam + clf.tau_**2) + (V[labeled].T * curvature) @ V[labeled]
    np.testing.assert_allclose(clf.posterior_cov(), np.linalg.inv(H), rtol=1e-8,
                               atol=1e-10 * np.abs(np.linalg.inv(H)).max())
    assert clf.posterior_cov().shape == (M * (clf.classes_.size if loss == "ce" else 1),) * 2


def test_full_graph_gaussian_approaches_the_harmonic_extension():
    """Of the labels less their class offset."""
    clf, X, y, _ = _fit("gr", tau=1e-3, gamma=1e-3)
    L = dense_laplacian(clf.graph_.weights)
    labeled = np.flatnonzero(y != -1)
    unlabeled = np.flatnonzero(y == -1)
    f = _less_offset(
        clf.graph_.weights, labeled, np.where(y[labeled] == clf.classes_[1], 1.0, -1.0)
    )
    harmonic = -np.linalg.solve(L[np.ix_(unlabeled, unlabeled)], L[np.ix_(unlabeled, labeled)] @ f)
    got = clf.posterior_.latent(unlabeled)
    np.testing.assert_allclose(got, harmonic, atol=1e-3)
    assert np.abs(got - harmonic).max() < 0.01 * np.abs(harmonic).max()


@pytest.mark.parametrize("loss", ["mgr", "ce", "gr"])
def test_warm_started_full_graph_fit_equals_cold(loss):
    clf, X, y, _ = _fit(loss)
    more = y.copy()
    more[np.flatnonzero(y == -1)[:4]] = _blobs(3 if loss != "gr" else 2)[2][
        np.flatnonzero(y == -1)[:4]
    ]
    warm = clf.fit(X, more).posterior_.latent(slice(None))
    cold = _fit(loss)[0].fit(X, more).posterior_.latent(slice(None))
    fresh = SpectralGraphClassifier(
        loss, model="full", tau=TAU, gamma=GAMMA, n_eigs=10, cache=False, warm_start=False,
        tol=1e-10,
    ).fit(X, more)
    np.testing.assert_allclose(warm, fresh.posterior_.latent(slice(None)), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cold, warm, rtol=1e-7, atol=1e-9)


def test_poisson_model_predicts_the_argmax_of_poisson_learning():
    clf, X, y, y_true = _fit("mgr", model="poisson")
    labeled = np.flatnonzero(y != -1)
    scores = poisson_learning(clf.graph_.weights, labeled, y[labeled], 3)
    np.testing.assert_array_equal(clf.transduction_, np.argmax(scores, axis=1))
    assert np.mean(clf.transduction_ == y_true) > 0.9
    # the latent values are the scores in the targets' units (least squares at the labels)
    onehot = np.eye(3)[y[labeled]]
    factor = np.sum(scores[labeled] * onehot) / np.sum(scores[labeled] ** 2)
    assert factor > 1.0  # the raw scores are smaller than the targets
    np.testing.assert_allclose(clf.posterior_.latent(slice(None)), factor * scores, rtol=1e-6)


@pytest.mark.parametrize("model", ["full", "poisson"])
def test_strategies_work_unchanged_on_full_graph_models(model):
    clf, X, y, _ = _fit("mgr", model=model)
    for batch in ("topk", "greedy"):
        rows, scores = model_change(clf, X, 3, batch=batch, random_state=0)
        assert np.all(y[rows] == -1) and len(set(rows)) == 3 and np.all(np.isfinite(scores))


def _offset_pseudo_target(clf, y, k, u):
    """The target a label argmax(u) at node k is fitted as: one-hot less the class offset."""
    loss = LOSSES[clf.loss]
    labeled = np.flatnonzero(y != -1)
    T = loss.encode(np.searchsorted(clf.classes_, y[labeled]), clf.classes_.size)
    w = np.sqrt(np.asarray(clf.graph_.weights.sum(axis=1)).ravel())
    offset = w[labeled] @ T / (w[labeled] @ w[labeled])
    return loss.pseudo_targets(u[None])[0] - w[k] * offset


def test_full_graph_model_change_uses_the_full_graph_latent():
    """mgr: ||C_u e_k|| ||u_k - t_k|| / (gamma^2 + C_u[k, k]) with u_k the full-graph
    latent, t_k the pseudo-label's one-hot less the class offset the fit removed, and
    C_u the latent covariance (``posterior_cov``, tests/test_remainder.py)."""
    clf, X, y, _ = _fit("mgr")
    g = clf.gamma_
    nodes = np.flatnonzero(y == -1)
    Cu = clf.posterior_cov(X)
    U = clf.posterior_.latent(nodes)
    expected = []
    for k, u in zip(nodes, U, strict=True):
        t = _offset_pseudo_target(clf, y, k, u)
        expected.append(np.linalg.norm(Cu[:, k]) * np.linalg.norm(u - t) / (g**2 + Cu[k, k]))
    np.testing.assert_allclose(acquisition.model_change(clf.posterior_, nodes), expected,
                               rtol=1e-10)


@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_full_graph_look_ahead_is_the_refit_of_the_offset_pseudo_target(loss):
    """The look-ahead of node k: the spectral change minimising the posterior's quadratic
    plus the new term (u_k + v_k'c - t_k)^2 / (2 (gamma^2 + s)), t_k with the class
    offset out (s the white noise of the prior's remainder at node k)."""
    clf, X, y, _ = _fit(loss)
    C, V = clf.posterior_cov(), clf.eigenvectors_
    g = np.sqrt(clf.gamma_**2 + clf.posterior_.nugget)
    k = int(np.flatnonzero(y == -1)[7])
    u = np.atleast_1d(clf.posterior_.latent(np.array([k]))[0])
    t = np.atleast_1d(_offset_pseudo_target(clf, y, k, clf.posterior_.latent(np.array([k]))[0]))
    H = np.linalg.inv(C) + np.outer(V[k], V[k]) / g**2
    change = -np.linalg.solve(H, np.outer(V[k], u - t) / g**2)
    got = clf.posterior_.look_ahead(k).coef.reshape(change.shape)
    np.testing.assert_allclose(got, change, atol=1e-10 * np.abs(change).max())


def test_full_graph_out_of_sample_is_the_weighted_neighbour_average():
    clf, X, y, _ = _fit("mgr")
    new = X[:4] + 0.05
    weights = clf.graph_.interpolation_weights(new).toarray()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    base = clf.posterior_.latent(np.arange(X.shape[0]))
    expected = weights @ base
    np.testing.assert_allclose(clf.predict_proba(new), LOSSES["mgr"].proba(expected, clf.gamma_),
                               rtol=1e-10)
