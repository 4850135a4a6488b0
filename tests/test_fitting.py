"""skmcal.fitting: the MAP and its Laplace covariance against the dense objective.

The objective J of docs/math.rst ("The spectral model", "The Laplace
posterior"), its gradient and its dense Hessian are rebuilt by hand
(``tests/_oracle.py``): the fitted MAP is a stationary point and a minimum of
J (the Gaussian losses: the linear solve), the covariance is the inverse of
the dense and of the finite-difference Hessian, class-major for ce; small
gamma and warm starts reach the same MAP.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skmcal import SpectralGraphClassifier, clear_graph_cache
from skmcal.classifier import PAPER_HYPERPARAMETERS

from _oracle import (
    ALL_LOSSES,
    BINARY,
    CLASS_LABELS,
    LOOK_AHEAD_SETTINGS,
    N_EIGS,
    SETTINGS,
    Objective,
    assert_close,
    eval_points,
    fd_gradient,
    fd_jacobian,
    fitted,
    look_ahead_setup,
    rel,
    separated_blobs,
    softmax_rows,
)

# ------------------------------------------------------------------- the MAP


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_layout_of_labeled_nodes_and_classes(loss, setting):
    clf, X, y = fitted(loss, setting)
    np.testing.assert_array_equal(clf.labeled_nodes_, np.flatnonzero(y != -1))
    np.testing.assert_array_equal(clf.classes_, np.unique(y[y != -1]))
    n_classes = clf.classes_.size
    expected_shape = (N_EIGS,) if loss in BINARY else (N_EIGS, n_classes)
    assert clf.coef_.shape == expected_shape
    cov_size = N_EIGS * n_classes if loss == "ce" else N_EIGS
    assert clf.posterior_cov().shape == (cov_size, cov_size)


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_map_gradient_vanishes(loss, setting):
    clf, _, y = fitted(loss, setting)
    J = Objective(clf, y)
    a = J.vec(clf.coef_)
    # scale of the gradient: either of its two (balancing) terms
    A = J.unvec(a)
    scale = np.linalg.norm(J.prior * (A.T if A.ndim == 2 else A))
    assert scale > 1e-3
    fd = fd_gradient(J.value, a, 1e-6)
    assert np.linalg.norm(fd) <= 1e-6 * scale
    assert np.linalg.norm(J.gradient(a)) <= 1e-9 * scale


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_map_is_a_minimum(loss, setting):
    clf, _, y = fitted(loss, setting)
    J = Objective(clf, y)
    a = J.vec(clf.coef_)
    H = J.hessian(a)
    f0 = J.value(a)
    rng = np.random.RandomState(5)
    for _ in range(20):
        delta = rng.randn(a.size)
        delta *= 1e-3 / np.linalg.norm(delta)
        increase = J.value(a + delta) - f0
        assert increase > 0
        # second order: the increase is the quadratic form of the Hessian
        assert increase == pytest.approx(0.5 * delta @ H @ delta, rel=1e-2)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_ce_map_has_zero_class_sum(setting):
    """The ce likelihood ignores a common shift of all classes, the prior does not:
    at the MAP the coefficients sum to zero over the classes."""
    clf, _, _ = fitted("ce", setting)
    np.testing.assert_allclose(clf.coef_.sum(axis=1), 0.0, atol=1e-10 * np.abs(clf.coef_).max())


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_gaussian_map_is_the_linear_solve(loss, setting):
    clf, _, y = fitted(loss, setting)
    J = Objective(clf, y)
    H = np.diag(J.prior) + J.P.T @ J.P / J.g**2
    expected = np.linalg.solve(H, J.P.T @ J.T / J.g**2)
    np.testing.assert_allclose(clf.coef_, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    assert clf.n_iter_ == 0


@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_fitted_posterior_is_the_brute_force_map_and_covariance(loss, setting):
    clf, bf, view = look_ahead_setup(loss, setting)
    assert bf.n_classes == (2 if loss in BINARY else 3)
    assert bf.N >= 50 and bf.M == N_EIGS
    np.testing.assert_allclose(bf.V.T @ bf.V, np.eye(N_EIGS), atol=1e-10)
    grad, H = bf.gradient_hessian()
    # the MAP is a stationary point of the brute-force objective
    scale = np.linalg.norm(bf.lam[:, None] * bf.coef.reshape(N_EIGS, -1)) + 1.0
    assert np.linalg.norm(grad) <= 1e-8 * scale
    assert_close(view.cov, np.linalg.inv(H), rtol=1e-9)
    assert view.n_classes == bf.n_classes



# ---------------------------------------------------- Hessian and covariance


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_finite_difference_hessian_is_inverse_posterior_cov(loss, setting):
    clf, _, y = fitted(loss, setting)
    J = Objective(clf, y)
    a = J.vec(clf.coef_)
    H_fd = fd_jacobian(J.gradient, a, 1e-5)
    H_fd = 0.5 * (H_fd + H_fd.T)
    C = clf.posterior_cov()
    if loss == "mgr":  # one covariance shared by all classes
        H_fd = H_fd[:N_EIGS, :N_EIGS]
    assert rel(np.linalg.inv(C), H_fd) <= 1e-6
    # the second differences of the objective itself tell the same
    h = 1e-4
    n = a.size
    E = np.eye(n) * h
    H2 = np.array([[(J.value(a + E[i] + E[j]) - J.value(a + E[i] - E[j])
                     - J.value(a - E[i] + E[j]) + J.value(a - E[i] - E[j])) / (4 * h * h)
                    for j in range(n)] for i in range(n)])
    if loss == "mgr":
        H2 = H2[:N_EIGS, :N_EIGS]
    assert rel(np.linalg.inv(C), H2) <= 1e-5


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_posterior_cov_is_inverse_of_dense_hessian(loss, setting):
    clf, _, y = fitted(loss, setting)
    J = Objective(clf, y)
    H = J.hessian(J.vec(clf.coef_))
    if loss == "mgr":
        H = H[:N_EIGS, :N_EIGS]
        # and the other diagonal blocks are the same matrix, the off-diagonal ones 0
        full = J.hessian(J.vec(clf.coef_))
        for c in range(clf.classes_.size):
            for d in range(clf.classes_.size):
                block = full[c * N_EIGS : (c + 1) * N_EIGS, d * N_EIGS : (d + 1) * N_EIGS]
                np.testing.assert_array_equal(block, H if c == d else 0.0)
    C = clf.posterior_cov()
    np.testing.assert_allclose(C, C.T, rtol=0, atol=1e-14 * np.abs(C).max())
    assert rel(C, np.linalg.inv(H)) <= 1e-10
    assert np.all(np.linalg.eigvalsh(C) > 0)


def test_ce_covariance_is_class_major():
    """Entry (c*M + i, h*M + k) couples coefficient i of class c with coefficient k of class h."""
    clf, _, y = fitted("ce")
    J = Objective(clf, y)
    a = J.vec(clf.coef_)
    np.testing.assert_array_equal(a.reshape(3, N_EIGS).T, clf.coef_)
    C = clf.posterior_cov()
    Cinv = np.linalg.inv(C)
    # curvature of J along coefficient (i, class c) and (k, class h): second difference
    h = 1e-4
    rng = np.random.RandomState(6)
    for _ in range(6):
        i, k = rng.randint(N_EIGS, size=2)
        c, d = rng.choice(3, size=2, replace=False)
        e1 = np.zeros_like(a)
        e2 = np.zeros_like(a)
        e1[c * N_EIGS + i] = h
        e2[d * N_EIGS + k] = h
        mixed = (J.value(a + e1 + e2) - J.value(a + e1 - e2) - J.value(a - e1 + e2)
                 + J.value(a - e1 - e2)) / (4 * h * h)
        assert Cinv[c * N_EIGS + i, d * N_EIGS + k] == pytest.approx(mixed, rel=1e-4, abs=1e-5)
    # the cross-class blocks of the Hessian are -(1/g^2) sum_j pi_jc pi_jd p_j p_j'
    Pi = softmax_rows(J.P @ clf.coef_ / J.g)
    block = -(J.P.T * (Pi[:, 0] * Pi[:, 1])) @ J.P / J.g**2
    np.testing.assert_allclose(Cinv[:N_EIGS, N_EIGS : 2 * N_EIGS], block, rtol=1e-7,
                               atol=1e-9 * np.abs(block).max())



# -------------------------------------------------- small gamma, warm starts


@pytest.mark.parametrize("gamma", [1e-3, 1e-4])
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_tiny_gamma_fit_converges_to_a_finite_stationary_point(loss, gamma):
    """Small gamma: |u| / gamma in the tens to thousands. No overflow, no warning, converged."""
    n_classes = 2 if loss in BINARY else 3
    X, y, _ = separated_blobs(n_classes)
    clf = SpectralGraphClassifier(loss, n_eigs=N_EIGS, gamma=gamma, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning fails the test too
        clf.fit(X, y)
        proba = clf.predict_proba(eval_points(X))
        cov = clf.posterior_cov()
    assert clf.posterior_.converged
    for arr in (clf.coef_, proba, cov):
        assert np.all(np.isfinite(arr))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X[y != -1]), y[y != -1])
    # stationary: the Newton step of the hand objective is negligible (scale-free,
    # unlike the gradient, whose terms are O(1/gamma^2) and cancel)
    J = Objective(clf, y)
    a = J.vec(clf.coef_)
    step = np.linalg.solve(J.hessian(a), J.gradient(a))
    assert np.abs(step).max() <= 1e-6 * np.abs(a).max()


@pytest.mark.parametrize(("loss", "small_gamma"), [("logistic", 1e-6), ("probit", 1e-8)])
def test_warm_start_after_a_change_of_gamma_reaches_the_cold_map(loss, small_gamma):
    """The optimum is unique: a warm start far from it must still reach it.

    After a fit at gamma=0.5, the latent values are O(1); at gamma=small_gamma a
    new label against its cluster starts Newton with u * y / gamma of about -1e6
    (logistic) or -1e8 (probit).
    """
    X, y, y_true = separated_blobs(2)
    y_new = y.copy()
    against = np.flatnonzero((y == -1) & (y_true == CLASS_LABELS[2]))[0]
    y_new[against] = CLASS_LABELS[0]
    warm = SpectralGraphClassifier(loss, n_eigs=N_EIGS, gamma=0.5, warm_start=True)
    warm.fit(X, y)
    assert warm.decision_function(X[[against]])[0] > 0.1  # confidently the other class
    warm.set_params(gamma=small_gamma)
    cold = SpectralGraphClassifier(loss, n_eigs=N_EIGS, gamma=small_gamma).fit(X, y_new)
    assert cold.posterior_.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warm.fit(X, y_new)
    assert warm.posterior_.converged
    scale = np.abs(cold.coef_).max()
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_warm_start_reaches_the_same_map_in_no_more_iterations(loss):
    clear_graph_cache()
    n_classes = 2 if loss in BINARY else 3
    X, y_more, y_true = separated_blobs(n_classes)
    y_less = y_more.copy()
    labeled = np.flatnonzero(y_more != -1)
    y_less[labeled[1 :: n_classes + 1]] = -1  # drop a few labels, keep every class
    assert set(np.unique(y_less[y_less != -1])) == set(np.unique(y_true))
    # the paper's fixed tau, gamma: a warm "auto" refit may reuse an earlier choice
    tau, gamma = PAPER_HYPERPARAMETERS[loss]
    params = dict(n_eigs=N_EIGS, cache=True, tau=tau, gamma=gamma)

    cold = SpectralGraphClassifier(loss, **params).fit(X, y_more)
    warm = SpectralGraphClassifier(loss, warm_start=True, **params).fit(X, y_less)
    warm.fit(X, y_more)
    scale = np.abs(cold.coef_).max()
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=0, atol=1e-9 * scale)
    assert warm.n_iter_ <= cold.n_iter_

    # refitting on the same labels starts at the optimum
    n_before = warm.n_iter_
    previous = warm.coef_.copy()
    warm.fit(X, y_more)
    np.testing.assert_allclose(warm.coef_, previous, rtol=0, atol=1e-9 * scale)
    if loss in ("gr", "mgr"):
        assert warm.n_iter_ == 0
    else:
        assert warm.n_iter_ <= min(n_before, cold.n_iter_)
        assert warm.n_iter_ < cold.n_iter_
    clear_graph_cache()


@pytest.mark.parametrize("name", ["logistic", "probit", "ce"])
def test_newton_map_log_det_is_that_of_the_dense_hessian(name):
    """``NewtonMap.log_det_hessian`` (the evidence's ``log|H|``) against a dense slogdet."""
    from skmcal.fitting import ce_hessian, fit_posterior, newton_map
    from skmcal.losses import LOSSES
    from skmcal.posterior import project_classes, zero_sum_basis

    loss, rng = LOSSES[name], np.random.RandomState(1)
    V = np.linalg.qr(rng.randn(30, 5))[0]
    prior = np.sort(rng.uniform(0.0, 1.0, 5)) + 0.05**2
    P = V[:12]
    codes = np.argmax(P[:, 1:4] + 0.1 * rng.randn(12, 3), axis=1)
    targets = np.eye(3)[codes] if loss.multiclass else np.where(codes == 0, -1.0, 1.0)
    fit = newton_map(loss, prior, P, targets, 0.3)
    assert fit.converged
    np.testing.assert_allclose(
        fit.coef, fit_posterior(loss, prior, P, np.arange(12), targets, 0.3).coef, atol=1e-12
    )
    if loss.multiclass:
        H = ce_hessian(prior, P, loss.proba(P @ fit.coef, 0.3), 0.3)
        H = project_classes(H, zero_sum_basis(3))  # the zero-sum subspace
    else:
        curvature = loss.derivatives(P @ fit.coef, targets, 0.3)[1]
        H = np.diag(prior) + P.T @ np.diag(curvature) @ P
    assert fit.log_det_hessian() == pytest.approx(np.linalg.slogdet(H)[1], rel=1e-10)


def test_ce_reduced_hessian_is_the_projected_dense_hessian():
    """``ce_reduced_hessian`` against ``(E (x) I)' H (E (x) I)`` of the dense class-major
    Hessian ``I (x) Lambda + sum_j B_j (x) p_j p_j' / gamma^2`` (explicit Kronecker products)."""
    from skmcal.fitting import ce_reduced_hessian
    from skmcal.posterior import zero_sum_basis

    rng = np.random.RandomState(4)
    n_labeled, M, n_c, gamma = 7, 5, 4, 0.3
    P, prior = rng.randn(n_labeled, M), rng.uniform(0.01, 1.0, M)
    Pi = rng.dirichlet(np.ones(n_c), n_labeled)
    H = np.kron(np.eye(n_c), np.diag(prior))
    for p, pi in zip(P, Pi, strict=True):
        H += np.kron(np.diag(pi) - np.outer(pi, pi), np.outer(p, p)) / gamma**2
    W = np.kron(zero_sum_basis(n_c), np.eye(M))
    np.testing.assert_allclose(ce_reduced_hessian(prior, P, Pi, gamma), W.T @ H @ W, atol=1e-12)
