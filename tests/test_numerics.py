"""Brute-force checks of every formula of MATH.md on tiny graphs.

The expected values are rebuilt here in plain numpy from the formulas of
``/work/shared/design/MATH.md`` (objective, gradient, dense Hessian,
probabilities), never taken from the implementation's own output.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm

from skmcal import SpectralGraphClassifier, clear_graph_cache
from skmcal.classifier import PAPER_HYPERPARAMETERS
from skmcal.losses import LOSSES

BINARY = ("gr", "logistic", "probit")
MULTICLASS = ("mgr", "ce")
ALL_LOSSES = BINARY + MULTICLASS
N_EIGS = 8
CLASS_LABELS = np.array([3, 5, 7])


# --------------------------------------------------------------------------- data
def _blobs(n_classes, n_per_class=None, seed=0):
    """Gaussian blobs, labels 3, 5(, 7), four to six labeled rows per class, y=-1 elsewhere."""
    rng = np.random.RandomState(seed)
    centers = np.array([[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]])[:n_classes]
    n_per_class = n_per_class or (25 if n_classes == 2 else 18)
    X = np.vstack([rng.randn(n_per_class, 2) + c for c in centers])
    labels = CLASS_LABELS[[0, 2]] if n_classes == 2 else CLASS_LABELS
    y_true = np.repeat(labels, n_per_class)
    n_labeled = 6 if n_classes == 2 else 4
    y = np.full(X.shape[0], -1)
    for c in range(n_classes):
        rows = c * n_per_class + rng.choice(n_per_class, n_labeled, replace=False)
        y[rows] = y_true[rows]
    return X, y, y_true


SETTINGS = {"auto": {}, "custom": {"tau": 0.1, "gamma": 0.3}}


@functools.cache
def _fitted(loss, setting="auto", n_classes=None):
    n_classes = n_classes or (2 if loss in BINARY else 3)
    X, y, _ = _blobs(n_classes)
    clf = SpectralGraphClassifier(loss, n_eigs=N_EIGS, cache=False, **SETTINGS[setting])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.fit(X, y)
    return clf, X, y


# ------------------------------------------------------- the objective, by hand
def _binary_value(loss, x, t, g):
    if loss == "gr":
        return (x - t) ** 2 / (2 * g**2)
    if loss == "logistic":
        return np.log1p(np.exp(-x * t / g))
    return -np.log(norm.cdf(x * t, scale=g))


def _binary_first(loss, x, t, g):
    if loss == "gr":
        return (x - t) / g**2
    if loss == "logistic":
        return -(t / g) / (1 + np.exp(x * t / g))
    s = x * t
    return -t * norm.pdf(s, scale=g) / norm.cdf(s, scale=g)


def _binary_second(loss, x, t, g):
    if loss == "gr":
        return np.full_like(x, 1 / g**2)
    s = x * t
    if loss == "logistic":
        return np.exp(s / g) / (g**2 * (1 + np.exp(s / g)) ** 2)
    ratio = norm.pdf(s, scale=g) / norm.cdf(s, scale=g)
    return ratio**2 + s * ratio / g**2


def _softmax(U):
    E = np.exp(U - U.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


class Objective:
    """J(a) = 1/2 <A, Lambda_tau A> + sum_j loss(p_j' A, y_j), rebuilt from MATH.md.

    ``a`` is the class-major vector of coefficients (index ``c * M + i`` is
    coefficient ``i`` of class ``c``); for binary losses it is ``alpha``.
    """

    def __init__(self, clf, y):
        self.loss = clf.loss
        self.g = clf.gamma_
        self.prior = np.asarray(clf.eigenvalues_) + clf.tau_**2
        self.M = self.prior.size
        self.P = np.asarray(clf.eigenvectors_)[np.flatnonzero(y != -1)]
        y_lab = y[y != -1]
        classes = np.unique(y_lab)
        if self.loss in BINARY:
            self.n_classes = 1
            self.T = np.where(y_lab == classes[1], 1.0, -1.0)
        else:
            self.n_classes = classes.size
            self.T = (y_lab[:, None] == classes[None, :]).astype(float)

    def vec(self, coef):
        return np.asarray(coef, dtype=float).T.ravel()

    def unvec(self, a):
        return a if self.n_classes == 1 else a.reshape(self.n_classes, self.M).T

    def value(self, a):
        A = self.unvec(a)
        prior_term = 0.5 * np.sum(self.prior * (A.T if A.ndim == 2 else A) ** 2)
        U = self.P @ A
        g = self.g
        if self.loss in BINARY:
            return prior_term + _binary_value(self.loss, U, self.T, g).sum()
        if self.loss == "mgr":
            return prior_term + np.sum((U - self.T) ** 2) / (2 * g**2)
        top = U.max(axis=1)
        lse = top / g + np.log(np.exp((U - top[:, None]) / g).sum(axis=1))
        return prior_term + np.sum(lse - (self.T * U).sum(axis=1) / g)

    def gradient(self, a):
        A = self.unvec(a)
        U = self.P @ A
        g = self.g
        if self.loss in BINARY:
            return self.prior * A + self.P.T @ _binary_first(self.loss, U, self.T, g)
        if self.loss == "mgr":
            G = (U - self.T) / g**2
        else:
            G = (_softmax(U / g) - self.T) / g
        return self.vec(self.prior[:, None] * A + self.P.T @ G)

    def hessian(self, a):
        """Dense Hessian, explicitly: Kronecker form for the multiclass losses."""
        A = self.unvec(a)
        U = self.P @ A
        g = self.g
        if self.loss in BINARY:
            curvature = _binary_second(self.loss, U, self.T, g)
            return np.diag(self.prior) + self.P.T @ np.diag(curvature) @ self.P
        eye = np.eye(self.n_classes)
        H = np.kron(eye, np.diag(self.prior))
        if self.loss == "mgr":
            return H + np.kron(eye, self.P.T @ self.P) / g**2
        Pi = _softmax(U / g)
        for p, pi in zip(self.P, Pi, strict=True):
            B = np.diag(pi) - np.outer(pi, pi)
            H += np.kron(B, np.outer(p, p)) / g**2
        return H


def _fd_gradient(f, x, h):
    out = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def _fd_jacobian(g, x, h):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((g(x + e) - g(x - e)) / (2 * h))
    return np.column_stack(cols)


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(b)


# ============================================================ 1. loss derivatives
@pytest.mark.parametrize("gamma", [0.5, 1.7])
@pytest.mark.parametrize("name", BINARY)
def test_binary_loss_value_matches_formula(name, gamma):
    u = np.linspace(-3, 3, 13) * gamma
    for y in (-1.0, 1.0):
        np.testing.assert_allclose(
            LOSSES[name].value(u, y, gamma), _binary_value(name, u, y, gamma), rtol=1e-12
        )


@pytest.mark.parametrize("gamma", [0.5, 1.7])
@pytest.mark.parametrize("name", BINARY)
def test_binary_loss_derivatives_match_finite_differences(name, gamma):
    loss = LOSSES[name]
    u = np.linspace(-3, 3, 13) * gamma
    h = 1e-6 * gamma
    for y in (-1.0, 1.0):
        first, second = loss.derivatives(u, y, gamma)
        fd_first = (loss.value(u + h, y, gamma) - loss.value(u - h, y, gamma)) / (2 * h)
        fd_second = (loss.derivatives(u + h, y, gamma)[0]
                     - loss.derivatives(u - h, y, gamma)[0]) / (2 * h)
        scale = 1 / gamma
        np.testing.assert_allclose(first, fd_first, rtol=1e-7, atol=1e-8 * scale)
        np.testing.assert_allclose(second, fd_second, rtol=1e-7, atol=1e-8 * scale**2)
        # the second derivative also against second differences of the value itself
        H = 1e-4 * gamma
        fd2 = (loss.value(u + H, y, gamma) - 2 * loss.value(u, y, gamma)
               + loss.value(u - H, y, gamma)) / H**2
        np.testing.assert_allclose(second, fd2, rtol=1e-5, atol=1e-5 * scale**2)
        # and against the closed forms of the MATH.md table
        np.testing.assert_allclose(first, _binary_first(name, u, y, gamma), rtol=1e-10)
        np.testing.assert_allclose(second, _binary_second(name, u, y, gamma), rtol=1e-10,
                                   atol=1e-14)


@pytest.mark.parametrize("gamma", [0.5, 1.7])
def test_cross_entropy_derivatives_match_finite_differences(gamma):
    rng = np.random.RandomState(1)
    loss = LOSSES["ce"]
    U = rng.randn(6, 4) * 2 * gamma
    Y = np.eye(4)[rng.randint(0, 4, size=6)]
    G, Pi = loss.derivatives(U, Y, gamma)
    np.testing.assert_allclose(Pi, _softmax(U / gamma), rtol=1e-12)
    np.testing.assert_allclose(loss.proba(U, gamma), _softmax(U / gamma), rtol=1e-12)
    np.testing.assert_allclose(
        loss.value(U, Y, gamma),
        np.log(np.exp(U / gamma).sum(axis=1)) - (Y * U).sum(axis=1) / gamma,
        rtol=1e-12,
    )
    h = 1e-6 * gamma
    for r in range(U.shape[0]):
        fd = _fd_gradient(lambda u, r=r: loss.value(u[None], Y[r : r + 1], gamma)[0], U[r], h)
        np.testing.assert_allclose(G[r], fd, rtol=1e-7, atol=1e-8 / gamma)
        hess = (np.diag(Pi[r]) - np.outer(Pi[r], Pi[r])) / gamma**2
        fd_hess = _fd_jacobian(
            lambda u, r=r: loss.derivatives(u[None], Y[r : r + 1], gamma)[0][0], U[r], h
        )
        np.testing.assert_allclose(hess, fd_hess, rtol=1e-6, atol=1e-8 / gamma**2)


@pytest.mark.parametrize("gamma", [0.1, 0.8])
def test_mgr_gradient_matches_finite_differences(gamma):
    rng = np.random.RandomState(2)
    loss = LOSSES["mgr"]
    U = rng.randn(5, 3)
    Y = np.eye(3)[rng.randint(0, 3, size=5)]
    np.testing.assert_allclose(
        loss.value(U, Y, gamma), ((U - Y) ** 2).sum(axis=1) / (2 * gamma**2), rtol=1e-12
    )
    G = loss.gradient(U, Y, gamma)
    h = 1e-6
    for r in range(U.shape[0]):
        fd = _fd_gradient(lambda u, r=r: loss.value(u[None], Y[r : r + 1], gamma)[0], U[r], h)
        np.testing.assert_allclose(G[r], fd, rtol=1e-7, atol=1e-7 / gamma**2)
        fd_hess = _fd_jacobian(
            lambda u, r=r: loss.gradient(u[None], Y[r : r + 1], gamma)[0], U[r], h
        )
        np.testing.assert_allclose(fd_hess, np.eye(3) / gamma**2, rtol=1e-7)


@pytest.mark.parametrize("name", BINARY)
def test_binary_proba_is_normalised_likelihood(name):
    """proba_positive(u) = exp(-l(u, +1)) / (exp(-l(u, +1)) + exp(-l(u, -1)))."""
    gamma = 0.7
    loss = LOSSES[name]
    u = np.linspace(-2, 2, 17)
    like_pos = np.exp(-_binary_value(name, u, 1.0, gamma))
    like_neg = np.exp(-_binary_value(name, u, -1.0, gamma))
    np.testing.assert_allclose(loss.proba_positive(u, gamma), like_pos / (like_pos + like_neg),
                               rtol=1e-12)


@pytest.mark.parametrize("name", MULTICLASS)
def test_multiclass_proba_is_normalised_likelihood(name):
    gamma = 0.6
    U = np.random.RandomState(3).randn(7, 3)
    loss = LOSSES[name]
    like = np.column_stack(
        [np.exp(-loss.value(U, np.tile(np.eye(3)[c], (7, 1)), gamma)) for c in range(3)]
    )
    np.testing.assert_allclose(loss.proba(U, gamma), like / like.sum(axis=1, keepdims=True),
                               rtol=1e-12)


# ---------------------------------------------------- 1b. stability, asymptotics
EXTREME = np.array([-1e4, -1e3, -1e2, -40.0, 40.0, 1e2, 1e3, 1e4])


def _probit_tail_series(s):
    """For s -> -inf: Phi(s) = phi(s)/|s| * S, S = 1 - 1/s^2 + 3/s^4 - 15/s^6 + 105/s^8."""
    a = 1 / s**2 - 3 / s**4 + 15 / s**6 - 105 / s**8
    return 1 - a, a


@pytest.mark.parametrize("gamma", [0.5, 2.0])
@pytest.mark.parametrize("name", BINARY)
def test_binary_loss_finite_at_extreme_latents(name, gamma):
    loss = LOSSES[name]
    for y in (-1.0, 1.0):
        u = EXTREME * gamma * y  # so that u * y / gamma = EXTREME
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            value = loss.value(u, y, gamma)
            first, second = loss.derivatives(u, y, gamma)
            p_pos, p_neg = loss.proba_positive(u, gamma), loss.proba_positive(-u, gamma)
        for arr in (value, first, second, p_pos, p_neg):
            assert np.all(np.isfinite(arr))
        assert np.all(value >= 0)
        assert np.all(second >= 0)
        assert np.all((p_pos >= 0) & (p_pos <= 1))
        np.testing.assert_allclose(p_pos + p_neg, 1.0, atol=1e-12)
        # the likelihood of the label y grows with u * y
        p_label = p_pos if y > 0 else p_neg
        assert np.all(np.diff(p_label) >= 0)


@pytest.mark.parametrize("gamma", [0.5, 2.0])
def test_logistic_asymptotics(gamma):
    loss = LOSSES["logistic"]
    for y in (-1.0, 1.0):
        s = EXTREME
        u = s * gamma * y
        value = loss.value(u, y, gamma)
        first, second = loss.derivatives(u, y, gamma)
        neg, pos = s < 0, s > 0
        # s -> -inf: l = -s + log(1 + e^s); F = -(y/g)/(1 + e^s); F' = e^s/g^2 (1 + O(e^s))
        np.testing.assert_allclose(value[neg], -s[neg], rtol=1e-14)
        np.testing.assert_allclose(first[neg], -y / gamma, rtol=1e-14)
        np.testing.assert_allclose(second[neg], np.exp(s[neg]) / gamma**2, rtol=1e-12,
                                   atol=1e-300)
        # s -> +inf: l = e^-s, F = -(y/g) e^-s, F' = e^-s / g^2
        np.testing.assert_allclose(value[pos], np.exp(-s[pos]), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(first[pos], -(y / gamma) * np.exp(-s[pos]), rtol=1e-12,
                                   atol=1e-300)
        np.testing.assert_allclose(second[pos], np.exp(-s[pos]) / gamma**2, rtol=1e-12,
                                   atol=1e-300)


@pytest.mark.parametrize("gamma", [0.5, 2.0])
def test_probit_asymptotics(gamma):
    loss = LOSSES["probit"]
    for y in (-1.0, 1.0):
        s = EXTREME
        u = s * gamma * y
        value = loss.value(u, y, gamma)
        first, second = loss.derivatives(u, y, gamma)
        neg, pos = s < 0, s > 0
        sn = s[neg]
        S, a = _probit_tail_series(sn)
        # -log Phi(s) = s^2/2 + log|s| + log sqrt(2 pi) - log S
        expected = sn**2 / 2 + np.log(-sn) + 0.5 * np.log(2 * np.pi) - np.log(S)
        np.testing.assert_allclose(value[neg], expected, rtol=1e-13)
        # phi/Phi = |s| / S, so F = -(y/g) |s| / S
        np.testing.assert_allclose(first[neg], -(y / gamma) * (-sn) / S, rtol=1e-12)
        # F' = r (r + s) / g^2 with r + s = |s| a / S: F' = s^2 a / S^2 / g^2 -> 1/g^2
        np.testing.assert_allclose(second[neg], sn**2 * a / S**2 / gamma**2, rtol=1e-7)
        assert np.all(second[neg] <= (1 + 1e-7) / gamma**2)
        # s -> +inf: everything vanishes (Phi(s) = 1 - phi(s)/s ...)
        tail = norm.pdf(s[pos]) / s[pos]
        np.testing.assert_allclose(value[pos], tail, rtol=1e-6, atol=1e-300)
        np.testing.assert_allclose(first[pos], -(y / gamma) * norm.pdf(s[pos]), rtol=1e-6,
                                   atol=1e-300)
        assert np.all(np.abs(second[pos]) <= 1e-300)


@pytest.mark.parametrize("gamma", [0.5, 1e-6])
def test_probit_curvature_far_in_the_tail(gamma):
    """F' stays in (0, 1/g^2] and accurate for u * y / gamma of -1e5 ... -1e12.

    Probit is log-concave with curvature below 1/g^2 everywhere; far in the
    tail F' = (1 - 1/s^2 + ...) / g^2. The reference is the asymptotic series,
    exact in double precision for |s| >= 1e5.
    """
    loss = LOSSES["probit"]
    s = -np.array([1e5, 1e6, 1e7, 3e7, 1e8, 3e8, 1e9, 1e10, 1e12])
    for y in (-1.0, 1.0):
        u = s * gamma * y
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            first, second = loss.derivatives(u, y, gamma)
        S, a = _probit_tail_series(s)
        assert np.all(np.isfinite(second))
        assert np.all(second > 0)
        assert np.all(second * gamma**2 <= 1.0)
        np.testing.assert_allclose(second, s**2 * a / S**2 / gamma**2, rtol=1e-9)
        np.testing.assert_allclose(first, (y / gamma) * s / S, rtol=1e-12)


@pytest.mark.parametrize("gamma", [0.5, 2.0])
def test_gr_finite_at_extreme_latents(gamma):
    loss = LOSSES["gr"]
    u = EXTREME * gamma
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = loss.proba_positive(u, gamma)
    # sigmoid(2u/g^2), written without overflow on each side
    z = 2 * u / gamma**2
    e = np.exp(-np.abs(z))
    expected = np.where(z < 0, e / (1 + e), 1 / (1 + e))
    np.testing.assert_allclose(p, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("scale", [1e3, 1e4])
@pytest.mark.parametrize("gamma", [0.1, 0.5])
def test_multiclass_losses_finite_at_extreme_latents(scale, gamma):
    U = np.array([[1.0, 0.0, -1.0], [-1.0, 1.0, 0.0], [0.0, -1.0, 1.0], [0.5, 1.0, -1.0]])
    U = U * scale * gamma
    Y = np.eye(3)[[2, 1, 0, 0]]
    ce, mgr = LOSSES["ce"], LOSSES["mgr"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = ce.value(U, Y, gamma)
        G, Pi = ce.derivatives(U, Y, gamma)
        p_ce = ce.proba(U, gamma)
        p_mgr = mgr.proba(U, gamma)
        v_mgr = mgr.value(U, Y, gamma)
    for arr in (value, G, Pi, p_ce, p_mgr, v_mgr):
        assert np.all(np.isfinite(arr))
    # logsumexp(u/g) = max(u)/g up to e^-(gap/g), the gap is >= scale/2 here
    np.testing.assert_allclose(value, (U.max(axis=1) - (Y * U).sum(axis=1)) / gamma, rtol=1e-14)
    winner = np.eye(3)[U.argmax(axis=1)]
    np.testing.assert_allclose(G, (winner - Y) / gamma, atol=1e-12 / gamma)
    np.testing.assert_allclose(p_ce, winner, atol=1e-12)
    np.testing.assert_allclose(p_mgr, winner, atol=1e-12)
    np.testing.assert_allclose(p_ce.sum(axis=1), 1.0, atol=1e-14)


# ================================================================== 2. the MAP
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_layout_of_labeled_nodes_and_classes(loss, setting):
    clf, X, y = _fitted(loss, setting)
    np.testing.assert_array_equal(clf.labeled_nodes_, np.flatnonzero(y != -1))
    np.testing.assert_array_equal(clf.classes_, np.unique(y[y != -1]))
    n_classes = clf.classes_.size
    expected_shape = (N_EIGS,) if loss in BINARY else (N_EIGS, n_classes)
    assert clf.coef_.shape == expected_shape
    cov_size = N_EIGS * n_classes if loss == "ce" else N_EIGS
    assert clf.posterior_cov().shape == (cov_size, cov_size)


@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_hand_gradient_matches_finite_differences_of_hand_objective(loss):
    """Guards the reference itself: the hand gradient and Hessian are those of the hand J."""
    clf, _, y = _fitted(loss)
    J = Objective(clf, y)
    a = J.vec(clf.coef_) + np.random.RandomState(4).randn(J.vec(clf.coef_).size) * 0.3
    np.testing.assert_allclose(J.gradient(a), _fd_gradient(J.value, a, 1e-6), rtol=1e-6,
                               atol=1e-7 * np.abs(J.gradient(a)).max())
    np.testing.assert_allclose(J.hessian(a), _fd_jacobian(J.gradient, a, 1e-5), rtol=1e-6,
                               atol=1e-8 * np.abs(J.hessian(a)).max())


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_map_gradient_vanishes(loss, setting):
    clf, _, y = _fitted(loss, setting)
    J = Objective(clf, y)
    a = J.vec(clf.coef_)
    # scale of the gradient: either of its two (balancing) terms
    A = J.unvec(a)
    scale = np.linalg.norm(J.prior * (A.T if A.ndim == 2 else A))
    assert scale > 1e-3
    fd = _fd_gradient(J.value, a, 1e-6)
    assert np.linalg.norm(fd) <= 1e-6 * scale
    assert np.linalg.norm(J.gradient(a)) <= 1e-9 * scale


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_map_is_a_minimum(loss, setting):
    clf, _, y = _fitted(loss, setting)
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
    clf, _, _ = _fitted("ce", setting)
    np.testing.assert_allclose(clf.coef_.sum(axis=1), 0.0, atol=1e-10 * np.abs(clf.coef_).max())


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_gaussian_map_is_the_linear_solve(loss, setting):
    clf, _, y = _fitted(loss, setting)
    J = Objective(clf, y)
    H = np.diag(J.prior) + J.P.T @ J.P / J.g**2
    expected = np.linalg.solve(H, J.P.T @ J.T / J.g**2)
    np.testing.assert_allclose(clf.coef_, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    assert clf.n_iter_ == 0


# ======================================================= 3. Hessian, covariance
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_finite_difference_hessian_is_inverse_posterior_cov(loss, setting):
    clf, _, y = _fitted(loss, setting)
    J = Objective(clf, y)
    a = J.vec(clf.coef_)
    H_fd = _fd_jacobian(J.gradient, a, 1e-5)
    H_fd = 0.5 * (H_fd + H_fd.T)
    C = clf.posterior_cov()
    if loss == "mgr":  # one covariance shared by all classes
        H_fd = H_fd[:N_EIGS, :N_EIGS]
    assert _rel(np.linalg.inv(C), H_fd) <= 1e-6
    # the second differences of the objective itself tell the same
    h = 1e-4
    n = a.size
    E = np.eye(n) * h
    H2 = np.array([[(J.value(a + E[i] + E[j]) - J.value(a + E[i] - E[j])
                     - J.value(a - E[i] + E[j]) + J.value(a - E[i] - E[j])) / (4 * h * h)
                    for j in range(n)] for i in range(n)])
    if loss == "mgr":
        H2 = H2[:N_EIGS, :N_EIGS]
    assert _rel(np.linalg.inv(C), H2) <= 1e-5


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_posterior_cov_is_inverse_of_dense_hessian(loss, setting):
    clf, _, y = _fitted(loss, setting)
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
    assert _rel(C, np.linalg.inv(H)) <= 1e-10
    assert np.all(np.linalg.eigvalsh(C) > 0)


def test_ce_covariance_is_class_major():
    """Entry (c*M + i, h*M + k) couples coefficient i of class c with coefficient k of class h."""
    clf, _, y = _fitted("ce")
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
    Pi = _softmax(J.P @ clf.coef_ / J.g)
    block = -(J.P.T * (Pi[:, 0] * Pi[:, 1])) @ J.P / J.g**2
    np.testing.assert_allclose(Cinv[:N_EIGS, N_EIGS : 2 * N_EIGS], block, rtol=1e-7,
                               atol=1e-9 * np.abs(block).max())


# ================================================= 4. covariance at given rows
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_posterior_cov_at_node_rows(loss):
    clf, X, y = _fitted(loss)
    rows = np.array([0, 7, 19, 30, 41])
    V_X = np.asarray(clf.eigenvectors_)[rows]
    C = clf.posterior_cov()
    got = clf.posterior_cov(X[rows])
    if loss != "ce":
        expected = V_X @ C @ V_X.T
    else:
        K = np.kron(np.eye(clf.classes_.size), V_X)  # K[c*n + r, c*M + i] = V_X[r, i]
        expected = K @ C @ K.T
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14 * np.abs(expected).max())


def test_ce_posterior_cov_at_rows_is_class_major_and_matches_sampling_definition():
    """Cov(u_rc, u_sd) = sum_ik V_ri V_sk Cov(A_ic, A_kd), entry (c*n + r, d*n + s)."""
    clf, X, _ = _fitted("ce")
    rows = np.array([3, 22, 50])
    n, M, n_classes = rows.size, N_EIGS, clf.classes_.size
    V_X = np.asarray(clf.eigenvectors_)[rows]
    C = clf.posterior_cov()
    got = clf.posterior_cov(X[rows])
    for c in range(n_classes):
        for d in range(n_classes):
            Ccd = C[c * M : (c + 1) * M, d * M : (d + 1) * M]
            for r in range(n):
                for s in range(n):
                    expected = V_X[r] @ Ccd @ V_X[s]
                    assert got[c * n + r, d * n + s] == pytest.approx(expected, rel=1e-10,
                                                                       abs=1e-14)


@pytest.mark.parametrize("loss", ["probit", "ce"])
def test_posterior_cov_at_new_points_uses_the_extension(loss):
    clf, X, _ = _fitted(loss)
    new = X[[1, 2, 40]] + np.array([[0.3, -0.2], [0.1, 0.25], [-0.2, 0.1]])
    V_X = clf.graph_.interpolation_weights(new) @ clf.eigenvectors_
    K = V_X if loss != "ce" else np.kron(np.eye(clf.classes_.size), V_X)
    np.testing.assert_allclose(clf.posterior_cov(new), K @ clf.posterior_cov() @ K.T,
                               rtol=1e-12, atol=1e-15)


# ============================================================ 5. predict_proba
def _eval_points(X):
    rng = np.random.RandomState(7)
    return np.vstack([X, X[::5] + rng.randn(X[::5].shape[0], 2) * 0.3])


LOSS_AND_N_CLASSES = [(loss, 2) for loss in ALL_LOSSES] + [(loss, 3) for loss in MULTICLASS]


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize(("loss", "n_classes"), LOSS_AND_N_CLASSES)
def test_predict_proba_matches_documented_formula(loss, n_classes, setting):
    clf, X, _ = _fitted(loss, setting, n_classes)
    g = clf.gamma_
    Z = _eval_points(X)
    proba = clf.predict_proba(Z)
    assert proba.shape == (Z.shape[0], n_classes)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # latent values at the nodes: u = V coef_
    U_nodes = np.asarray(clf.eigenvectors_) @ clf.coef_
    dec = clf.decision_function(Z)
    if loss in BINARY or n_classes == 2:
        expected_dec_nodes = U_nodes if loss in BINARY else U_nodes[:, 1] - U_nodes[:, 0]
        np.testing.assert_allclose(dec[: X.shape[0]], expected_dec_nodes, rtol=1e-12,
                                   atol=1e-14)
        positive = {"gr": expit(2 * dec / g**2), "logistic": expit(dec / g),
                    "probit": norm.cdf(dec / g), "mgr": expit(dec / g**2),
                    "ce": expit(dec / g)}[loss]
        np.testing.assert_allclose(proba[:, 1], positive, rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(proba[:, 0], 1 - positive, rtol=1e-10, atol=1e-15)
    else:
        np.testing.assert_allclose(dec[: X.shape[0]], U_nodes, rtol=1e-12, atol=1e-14)
        temperature = g**2 if loss == "mgr" else g
        np.testing.assert_allclose(proba, _softmax(dec / temperature), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize(("loss", "n_classes"), LOSS_AND_N_CLASSES)
def test_predict_is_argmax_of_proba_and_sign_of_decision(loss, n_classes):
    clf, X, _ = _fitted(loss, "auto", n_classes)
    Z = _eval_points(X)
    pred = clf.predict(Z)
    proba = clf.predict_proba(Z)
    dec = clf.decision_function(Z)
    np.testing.assert_array_equal(pred, clf.classes_[proba.argmax(axis=1)])
    if dec.ndim == 1:
        np.testing.assert_array_equal(pred, np.where(dec > 0, clf.classes_[1], clf.classes_[0]))
    else:
        np.testing.assert_array_equal(pred, clf.classes_[dec.argmax(axis=1)])
    np.testing.assert_array_equal(clf.transduction_, pred[: X.shape[0]])
    # the fit is meaningful: the labeled rows are predicted as labeled
    _, _, y = _fitted(loss, "auto", n_classes)
    np.testing.assert_array_equal(pred[: X.shape[0]][y != -1], y[y != -1])


@pytest.mark.parametrize("gamma", [1e-3, 1e-4])
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_tiny_gamma_fit_converges_to_a_finite_stationary_point(loss, gamma):
    """Small gamma: |u| / gamma in the tens to thousands. No overflow, no warning, converged."""
    n_classes = 2 if loss in BINARY else 3
    X, y, _ = _blobs(n_classes)
    clf = SpectralGraphClassifier(loss, n_eigs=N_EIGS, gamma=gamma, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning fails the test too
        clf.fit(X, y)
        proba = clf.predict_proba(_eval_points(X))
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


# ================================================================ 7. warm start
@pytest.mark.parametrize(("loss", "small_gamma"), [("logistic", 1e-6), ("probit", 1e-8)])
def test_warm_start_after_a_change_of_gamma_reaches_the_cold_map(loss, small_gamma):
    """The optimum is unique: a warm start far from it must still reach it.

    After a fit at gamma=0.5, the latent values are O(1); at gamma=small_gamma a
    new label against its cluster starts Newton with u * y / gamma of about -1e6
    (logistic) or -1e8 (probit).
    """
    X, y, y_true = _blobs(2)
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
    X, y_more, y_true = _blobs(n_classes)
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


def test_ce_value_gradient_equals_value_and_derivatives():
    """The fused pass of the Newton iterations against the two separate formulas."""
    from skmcal.losses import LOSSES

    ce = LOSSES["ce"]
    rng = np.random.RandomState(0)
    Y = np.eye(4)[rng.randint(0, 4, size=30)]
    for scale in (1.0, 1e3):  # 1e3 / gamma: exp would overflow without the shift
        U = scale * rng.randn(30, 4)
        value, G = ce.value_gradient(U, Y, 0.3)
        np.testing.assert_allclose(value, ce.value(U, Y, 0.3), rtol=1e-13, atol=1e-13 * scale)
        np.testing.assert_allclose(G, ce.derivatives(U, Y, 0.3)[0], rtol=1e-13, atol=1e-15)
        assert np.all(np.isfinite(value))


def test_class_reductions_are_kronecker_products():
    """reduce_classes / project_classes against dense (E (x) I)' X and (E (x) I)' X (E (x) I)."""
    from skmcal.posterior import project_classes, reduce_classes, zero_sum_basis

    rng = np.random.RandomState(1)
    E = zero_sum_basis(4)
    X = rng.randn(4 * 3, 4 * 3)
    W = np.kron(E, np.eye(3))
    np.testing.assert_allclose(reduce_classes(X, E), W.T @ X, atol=1e-14)
    np.testing.assert_allclose(reduce_classes(X[:, 0], E), W.T @ X[:, 0], atol=1e-14)
    np.testing.assert_allclose(project_classes(X, E), W.T @ X @ W, atol=1e-14)
    np.testing.assert_allclose(E.T @ E, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(E.sum(axis=0), 0.0, atol=1e-15)
