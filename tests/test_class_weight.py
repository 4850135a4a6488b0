"""``class_weight``: weighted loss terms in the spectral model, against brute force.

The weighted model minimises ``1/2 <a, Lambda_tau a> + sum_j w_j l(p_j' a, y_j)``.
Checked against a dense weighted least-squares solve (gr, mgr), against the
same fit with row ``j`` repeated ``w_j`` times (integer weights: the same
objective, for every loss), against finite differences of the weighted
objective written out here (ce, non-integer weights), and the evidence
against the dense marginal density (gr, mgr) and the repeated rows (the
Laplace approximation). The classifier's weights are computed by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

import skmcal.classifier as module
from skmcal import SpectralGraphClassifier, acquisition
from skmcal.evidence import (
    log_evidence,
    select_hyperparameters,
)
from skmcal.fitting import fit_posterior
from skmcal.fullgraph import LaplacianSolver, fit_sum_graph
from skmcal.losses import LOSSES

from _oracle import (
    BINARY,
    assert_close,
    dense_laplacian,
    dense_sum_choice,
    dense_sum_prior,
    look_ahead_setup,
    plane_knn_graph,
    unbalanced_blobs,
)

M, N_LABELED, N_CLASSES = 6, 9, 3


def _problem(loss, seed=0):
    """Eigenvalues, an orthonormal V (30 x M), the labeled rows and their targets."""
    rng = np.random.RandomState(seed)
    V = np.linalg.qr(rng.randn(30, M))[0]
    eigenvalues = np.sort(rng.uniform(0.0, 1.0, M))
    eigenvalues[0] = 0.0
    labeled = rng.choice(30, N_LABELED, replace=False)
    codes = np.arange(N_LABELED) % (2 if loss in BINARY else N_CLASSES)
    targets = LOSSES[loss].encode(codes, 2 if loss in BINARY else N_CLASSES)
    return eigenvalues, V, labeled, targets


INTEGER_WEIGHTS = np.array([1, 3, 2, 1, 1, 2, 4, 1, 2])


@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_weighted_gaussian_fit_is_the_weighted_least_squares_solve(loss):
    eigenvalues, V, labeled, targets = _problem(loss)
    w = np.linspace(0.3, 2.5, N_LABELED)
    prior, gamma = eigenvalues + 0.1**2, 0.4
    post = fit_posterior(LOSSES[loss], prior, V, labeled, targets, gamma, weights=w)
    P = V[labeled]
    H = np.diag(prior) + P.T @ np.diag(w) @ P / gamma**2
    np.testing.assert_allclose(post.coef, np.linalg.solve(H, P.T @ np.diag(w) @ targets) / gamma**2,
                               rtol=1e-10, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(post.cov, np.linalg.inv(H), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["gr", "mgr", "logistic", "probit", "ce"])
def test_integer_weights_fit_as_repeated_rows(loss):
    eigenvalues, V, labeled, targets = _problem(loss)
    prior, gamma = eigenvalues + 0.1**2, 0.5
    weighted = fit_posterior(
        LOSSES[loss], prior, V, labeled, targets, gamma, weights=INTEGER_WEIGHTS.astype(float)
    )
    repeat = np.repeat(np.arange(N_LABELED), INTEGER_WEIGHTS)
    repeated = fit_posterior(LOSSES[loss], prior, V, labeled[repeat], targets[repeat], gamma)
    np.testing.assert_allclose(weighted.coef, repeated.coef, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(weighted.cov, repeated.cov, rtol=1e-8, atol=1e-10)


def test_weighted_ce_map_zeroes_the_finite_difference_gradient():
    """Non-integer weights: the weighted ce objective, written out here, is stationary at
    the MAP (central differences) and its curvature there is the inverse covariance."""
    eigenvalues, V, labeled, targets = _problem("ce")
    w = np.linspace(0.2, 3.0, N_LABELED)
    prior, gamma = eigenvalues + 0.1**2, 0.5
    post = fit_posterior(LOSSES["ce"], prior, V, labeled, targets, gamma, weights=w)
    P = V[labeled]

    def J(a):
        A = a.reshape(N_CLASSES, M).T
        U = P @ A / gamma
        loss = logsumexp(U, axis=1) - np.sum(U * targets, axis=1)
        return 0.5 * np.sum(prior[:, None] * A * A) + np.dot(w, loss)

    a0, h = post.coef.T.ravel(), 1e-5
    eye = np.eye(a0.size)
    grad = np.array([(J(a0 + h * e) - J(a0 - h * e)) / (2 * h) for e in eye])
    np.testing.assert_allclose(grad, 0.0, atol=1e-8)
    h = 1e-4

    def second(ei, ej):
        plus, minus = h * (ei + ej), h * (ei - ej)
        return (J(a0 + plus) - J(a0 + minus) - J(a0 - minus) + J(a0 - plus)) / (4 * h * h)

    hess = np.array([[second(ei, ej) for ej in eye] for ei in eye])
    # the covariance is H^-1 of the class-major Hessian (exact on every direction)
    np.testing.assert_allclose(np.linalg.inv(post.cov), hess, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_weighted_gaussian_evidence_is_the_dense_marginal_density(loss):
    """``y ~ N(0, P Lambda^-1 P' + gamma^2 W^-1)`` per target column."""
    eigenvalues, V, labeled, targets = _problem(loss)
    w = np.linspace(0.3, 2.5, N_LABELED)
    tau, gamma = 0.1, 0.4
    P = V[labeled]
    cov = P @ np.diag(1 / (eigenvalues + tau**2)) @ P.T + gamma**2 * np.diag(1 / w)
    Y = targets.reshape(N_LABELED, -1)
    expected = sum(multivariate_normal(np.zeros(N_LABELED), cov).logpdf(col) for col in Y.T)
    actual = log_evidence(LOSSES[loss], eigenvalues, P, targets, tau, gamma, weights=w)
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


@pytest.mark.parametrize("loss", ["logistic", "probit", "ce"])
def test_weighted_laplace_evidence_is_that_of_repeated_rows(loss):
    """The Laplace evidence of integer weights is that of the repeated rows (the same
    MAP, loss sum and Hessian), at each grid point."""
    eigenvalues, V, labeled, targets = _problem(loss)
    P = V[labeled]
    repeat = np.repeat(np.arange(N_LABELED), INTEGER_WEIGHTS)
    grid = ((0.03, 0.1), (0.5, 1.0))
    _, _, weighted = select_hyperparameters(
        LOSSES[loss], eigenvalues, P, targets, *grid, weights=INTEGER_WEIGHTS.astype(float)
    )
    _, _, repeated = select_hyperparameters(
        LOSSES[loss], eigenvalues, P[repeat], targets[repeat], *grid
    )
    np.testing.assert_allclose(weighted, repeated, rtol=1e-8)
    single = log_evidence(
        LOSSES[loss], eigenvalues, P, targets, 0.1, 1.0, weights=INTEGER_WEIGHTS.astype(float)
    )
    np.testing.assert_allclose(single, weighted[1, 1], rtol=1e-8)


def test_weights_must_be_positive_one_per_row():
    eigenvalues, V, labeled, targets = _problem("mgr")
    for bad in (np.ones(N_LABELED - 1), np.r_[np.ones(N_LABELED - 1), 0.0],
                np.r_[np.ones(N_LABELED - 1), np.nan]):  # fmt: skip
        with pytest.raises(ValueError, match="one positive finite float per labeled row"):
            fit_posterior(LOSSES["mgr"], eigenvalues + 0.01, V, labeled, targets, 0.5,
                          weights=bad)  # fmt: skip


# ------------------------------------------------------------------ the classifier
def _fit(X, y, **params):
    return SpectralGraphClassifier(kernel="gaussian", n_eigs=10, cache=False, **params).fit(X, y)


@pytest.mark.parametrize("loss", ["mgr", "ce"])
def test_balanced_classifier_is_the_weighted_fit_at_its_hyperparameters(loss):
    X, y = unbalanced_blobs()
    clf = _fit(X, y, loss=loss, model="spectral", class_weight="balanced")
    counts = np.array([2, 4, 9])
    np.testing.assert_allclose(clf.class_weight_, 15 / (3 * counts), rtol=1e-15)
    codes = y[clf.labeled_nodes_]
    w = 15 / (3 * counts[codes])
    lam, V = clf.eigenvalues_ + clf.tau_**2, clf.eigenvectors_
    post = fit_posterior(LOSSES[loss], lam, V, clf.labeled_nodes_,
                         LOSSES[loss].encode(codes, 3), clf.gamma_, weights=w)  # fmt: skip
    np.testing.assert_allclose(clf.coef_, post.coef, rtol=1e-7, atol=1e-9)
    # the hyperparameters: the evidence of the weighted model over the same grid
    explicit = _fit(X, y, loss=loss, model="spectral", class_weight="balanced",
                    tau=clf.tau_, gamma=clf.gamma_)  # fmt: skip
    np.testing.assert_allclose(explicit.coef_, clf.coef_, rtol=1e-7, atol=1e-9)
    unit = _fit(X, y, loss=loss, model="spectral", class_weight=None,
                tau=clf.tau_, gamma=clf.gamma_)  # fmt: skip
    assert np.all(unit.class_weight_ == 1.0)
    assert not np.allclose(unit.coef_, clf.coef_)


def test_auto_class_weight_is_balanced_in_the_spectral_phase_of_the_auto_model(monkeypatch):
    X, y = unbalanced_blobs()
    auto = _fit(X, y)  # model="auto", 15 labels: spectral ce
    assert auto.model_ == "spectral"
    balanced = _fit(X, y, class_weight="balanced")
    np.testing.assert_array_equal(auto.class_weight_, balanced.class_weight_)
    assert not np.all(auto.class_weight_ == 1.0)
    np.testing.assert_array_equal(auto.predict_proba(X), balanced.predict_proba(X))
    unit = _fit(X, y, class_weight=None)
    assert not np.array_equal(unit.predict_proba(X), auto.predict_proba(X))
    # an explicit model: unit weights
    for model in ("spectral", "full", "sum", "poisson"):
        assert np.all(_fit(X, y, model=model).class_weight_ == 1.0)
    np.testing.assert_array_equal(_fit(X, y, model="spectral").predict_proba(X),
                                  _fit(X, y, model="spectral", class_weight=None).predict_proba(X))
    # model="auto" from AUTO_SUM_MIN_LABELS: the summed model, unit weights unless asked
    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", 15)
    summed = _fit(X, y)
    assert summed.model_ == "sum" and np.all(summed.class_weight_ == 1.0)
    asked = _fit(X, y, class_weight="balanced")
    assert asked.model_ == "sum"
    np.testing.assert_array_equal(asked.class_weight_, balanced.class_weight_)
    np.testing.assert_array_equal(
        asked.predict_proba(X),
        _fit(X, y, model="sum", class_weight="balanced").predict_proba(X),
    )


def test_class_weight_dict_weighs_the_named_classes():
    X, y = unbalanced_blobs()
    clf = _fit(X, y, loss="mgr", model="spectral", class_weight={2: 0.5, 7: 3.0}, tau=0.1,
               gamma=0.5)  # fmt: skip
    np.testing.assert_array_equal(clf.class_weight_, [1.0, 1.0, 0.5])  # 7: no such class
    codes = y[clf.labeled_nodes_]
    post = fit_posterior(LOSSES["mgr"], clf.eigenvalues_ + 0.01, clf.eigenvectors_,
                         clf.labeled_nodes_, LOSSES["mgr"].encode(codes, 3), 0.5,
                         weights=np.where(codes == 2, 0.5, 1.0))  # fmt: skip
    np.testing.assert_allclose(clf.coef_, post.coef, rtol=1e-10, atol=1e-12)


def test_class_weight_errors_name_the_value():
    X, y = unbalanced_blobs()
    for model in ("full", "poisson"):
        with pytest.raises(ValueError, match=r"class_weight='balanced' takes the models"):
            _fit(X, y, model=model, class_weight="balanced")
    with pytest.raises(ValueError, match=r"got -1.0 for class 1"):
        _fit(X, y, model="spectral", class_weight={1: -1.0})
    with pytest.raises(ValueError, match="'class_weight' parameter"):
        _fit(X, y, class_weight="even")


@pytest.mark.parametrize("loss", ["gr", "mgr", "logistic", "ce"])
def test_weighted_look_ahead_adds_the_candidate_at_unit_weight(loss):
    """Unbalanced labels, class_weight="balanced": model change and V-opt against the
    brute-force look-ahead of the weighted objective with the candidate at weight 1."""
    clf, bf, view = look_ahead_setup(loss, "custom", class_weight="balanced")
    assert not np.all(bf.w == 1.0)
    nodes = bf.unlabeled
    assert_close(acquisition.model_change(view, nodes),
                 np.array([bf.model_change(k) for k in nodes]))  # fmt: skip
    assert_close(acquisition.vopt(view, nodes), np.array([bf.vopt(k) for k in nodes]),
                 rtol=1e-7)  # fmt: skip


# ------------------------------------------------------------------ the summed model
def test_weighted_sum_mean_is_the_dense_posterior_mean_of_heteroscedastic_noise():
    W, _ = plane_knn_graph(40, seed=0)
    W = sp.csr_matrix(W)
    lam, V = np.linalg.eigh(dense_laplacian(W))
    lam, V = lam[:6], V[:, :6]
    labeled = np.array([3, 11, 17, 25, 30, 8])
    targets = np.eye(3)[[0, 1, 1, 2, 0, 1]]
    w = np.array([0.5, 1.0, 2.0, 3.0, 0.7, 1.5])
    tau_s, tau_f, eps, gamma = 0.1, 0.2, 0.3, 0.3
    fit = fit_sum_graph(lam, V, W, labeled, targets, tau_s, tau_f, eps, gamma, tol=1e-13,
                        solver=LaplacianSolver(W), label_weights=w)  # fmt: skip
    Sigma, _, _ = dense_sum_prior(W, lam, V, tau_s, tau_f, eps, labeled)
    K = Sigma[np.ix_(labeled, labeled)] + gamma**2 * np.diag(1 / w)
    C = np.linalg.solve(K, targets)
    expected = Sigma[:, labeled] @ C
    np.testing.assert_allclose(fit.latent, expected, atol=1e-8 * np.abs(expected).max())
    np.testing.assert_allclose(fit.amplitude, np.sum(targets * C) / targets.size, rtol=1e-10)


def test_balanced_sum_model_is_the_dense_weighted_model():
    """class_weight="balanced", model="sum": the grid point of largest leave-one-out density
    of the model with noise gamma^2 / w_j at label j (dense), its latent values, and the
    coefficients' covariance with noise gamma_^2 / w_j + s at the labeled nodes."""
    X, y = unbalanced_blobs()
    # the sparse solves well below the values' tolerance (tol="auto" holds them to ~1e-6)
    clf = _fit(X, y, loss="mgr", model="sum", class_weight="balanced", target_scale=None,
               tol=1e-11)  # fmt: skip
    W, lam, V = clf.graph_.weights, clf.eigenvalues_, clf.eigenvectors_
    labeled = np.flatnonzero(y != -1)
    w = 15 / (3 * np.array([2, 4, 9])[y[labeled]])
    Y = np.eye(3)[y[labeled]]
    p = clf.sum_prior_
    assert (p["tau_s"], p["tau_f"], p["eps"], p["gamma"]) == dense_sum_choice(
        clf, labeled, Y, 1 / w
    )
    unit = _fit(X, y, loss="mgr", model="sum", class_weight=None, target_scale=None)
    assert unit.sum_prior_ != p  # the weights move the choice here
    Sigma, _, _ = dense_sum_prior(W, lam, V, p["tau_s"], p["tau_f"], p["eps"], labeled)
    K = Sigma[np.ix_(labeled, labeled)] + p["gamma"] ** 2 * np.diag(1 / w)
    expected = Sigma[:, labeled] @ np.linalg.solve(K, Y)
    np.testing.assert_allclose(clf.posterior_.latent(slice(None)), expected,
                               atol=1e-8 * np.abs(expected).max())  # fmt: skip
    ratio = p["eps"] * p["full_scale"] / p["spectral_scale"]
    D = 1.0 / (lam + p["tau_s"] ** 2) + ratio / (lam + p["tau_f"] ** 2)
    s = clf.posterior_.nugget
    H = np.diag(1.0 / (D - s)) + V[labeled].T @ np.diag(1 / (clf.gamma_**2 / w + s)) @ V[labeled]
    np.testing.assert_allclose(clf.posterior_cov(), np.linalg.inv(H), rtol=1e-8)


def test_weighted_sum_look_ahead_adds_a_unit_weight_label():
    """The summed model's posterior with weights: a candidate's look-ahead covariance is
    the dense one with the candidate's node added at weight 1 (noise gamma_^2 + s)."""
    X, y = unbalanced_blobs()
    clf = _fit(X, y, loss="mgr", model="sum", class_weight="balanced")
    post, lam, V = clf.posterior_, clf.eigenvalues_, clf.eigenvectors_
    p = clf.sum_prior_
    ratio = p["eps"] * p["full_scale"] / p["spectral_scale"]
    D = 1.0 / (lam + p["tau_s"] ** 2) + ratio / (lam + p["tau_f"] ** 2)
    s, g2 = post.nugget, clf.gamma_**2
    labeled = clf.labeled_nodes_
    w = clf.class_weight_[y[labeled]]
    assert not np.all(w == 1.0)
    for k in np.flatnonzero(y == -1)[:3]:
        nodes, noise = np.r_[labeled, k], np.r_[g2 / w + s, g2 + s]
        H = np.diag(1.0 / (D - s)) + V[nodes].T @ np.diag(1 / noise) @ V[nodes]
        np.testing.assert_allclose(post.look_ahead(k).cov, np.linalg.inv(H), rtol=1e-8)
