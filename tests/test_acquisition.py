"""Acquisition values against brute force, for every loss, on tiny graphs.

For every unlabeled node of a ~50-node graph (``n_eigs=8``) the closed forms
of ``skmcal.acquisition`` are compared with quantities rebuilt here from the
definitions of ``/work/shared/design/MATH.md``:

- model change: the exact refit with the candidate added with its
  pseudo-label (``gr``/``mgr``), or one explicit Newton step from the MAP on
  the look-ahead objective, with a dense Hessian built here (``logistic``,
  ``probit``, ``ce``; Kronecker form, class-major, for ``ce``);
- V-opt / Sigma-opt: ``tr(V C V') - tr(V C+ V')`` and
  ``1' V C V' 1 - 1' V C+ V' 1`` with ``C+`` the explicitly inverted
  look-ahead Hessian (the ``N * n_classes`` matrices for ``ce``);
- look-ahead: the updated MAP and covariance;
- uncertainty: margin, entropy and least confidence from the estimator's
  own ``decision_function`` and ``predict_proba``.

No expectation reuses the implementation's formulas: every value is a dense
solve, an inverse or a trace of matrices assembled here.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone

from skmcal import SpectralGraphClassifier, acquisition, posterior, softmax
from skmcal.acquisition import look_ahead
from skmcal.posterior import RankOnePosterior

BINARY = ("gr", "logistic", "probit")
MULTICLASS = ("mgr", "ce")
ALL_LOSSES = BINARY + MULTICLASS
N_EIGS = 8
SETTINGS = {"auto": {}, "custom": {"tau": 0.2, "gamma": 0.3}}
RTOL = 1e-8


# --------------------------------------------------------------------------- data
def _blobs(n_classes, seed=0):
    """Overlapping blobs; labels 2, 6(, 9); three labeled rows per class, y=-1 elsewhere."""
    rng = np.random.RandomState(seed)
    centers = np.array([[0.0, 0.0], [3.0, 0.0], [1.5, 2.6]])[:n_classes]
    n_per_class = 26 if n_classes == 2 else 18
    X = np.vstack([rng.randn(n_per_class, 2) + c for c in centers])
    labels = np.array([2, 6, 9])[:n_classes]
    y_true = np.repeat(labels, n_per_class)
    y = np.full(X.shape[0], -1)
    for c in range(n_classes):
        rows = c * n_per_class + rng.choice(n_per_class, 3, replace=False)
        y[rows] = y_true[rows]
    return X, y


@functools.cache
def _fitted(loss, setting):
    X, y = _blobs(2 if loss in BINARY else 3)
    clf = SpectralGraphClassifier(loss, n_eigs=N_EIGS, **SETTINGS[setting])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.fit(X, y)
    return clf, X, y


# -------------------------------------------------------- losses, from the table
def _binary_value(loss, x, t, g):
    if loss == "gr":
        return (x - t) ** 2 / (2 * g**2)
    if loss == "logistic":
        return np.log1p(np.exp(-x * t / g))
    return -np.log(norm.cdf(x * t, scale=g))


def _binary_derivatives(loss, x, t, g):
    """(F, F') of the MATH.md table, written out directly."""
    x = np.asarray(x, dtype=float)
    s = x * t
    if loss == "gr":
        return (x - t) / g**2, np.full_like(x, 1 / g**2)
    if loss == "logistic":
        e = np.exp(s / g)
        return -(t / g) / (1 + e), e / (g**2 * (1 + e) ** 2)
    psi, Psi = norm.pdf(s, scale=g), norm.cdf(s, scale=g)
    return -t * psi / Psi, psi**2 / Psi**2 + s * psi / (g**2 * Psi)


def _softmax(U):
    E = np.exp(U - U.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("loss", BINARY)
def test_brute_force_derivatives_are_right(loss):
    """The test's own F and F' against central differences of the loss value."""
    g, h = 0.4, 1e-5
    x = np.linspace(-1.5, 1.5, 11)
    for t in (-1.0, 1.0):
        F, Fp = _binary_derivatives(loss, x, t, g)
        fd = (_binary_value(loss, x + h, t, g) - _binary_value(loss, x - h, t, g)) / (2 * h)
        fd2 = (_binary_derivatives(loss, x + h, t, g)[0]
               - _binary_derivatives(loss, x - h, t, g)[0]) / (2 * h)
        np.testing.assert_allclose(F, fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(Fp, fd2, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ brute force
class BruteForce:
    """The model of a fitted classifier, rebuilt densely from its spectrum.

    ``a`` is the class-major coefficient vector (index ``c * M + i``); for the
    binary losses it is ``alpha``. ``W`` maps ``a`` to the latent values at
    every node (``V``, or ``I_nc (x) V`` for ce).
    """

    def __init__(self, clf, X, y):
        self.loss = clf.loss
        self.g = clf.gamma_
        self.V = np.asarray(clf.eigenvectors_)
        self.N, self.M = self.V.shape
        self.lam = np.asarray(clf.eigenvalues_) + clf.tau_**2
        labeled = np.flatnonzero(y != -1)
        np.testing.assert_array_equal(np.sort(clf.labeled_nodes_), labeled)
        self.labeled = labeled
        self.P = self.V[labeled]
        self.classes = np.unique(y[labeled])
        if self.loss in BINARY:
            self.T = np.where(y[labeled] == self.classes[1], 1.0, -1.0)
            self.n_classes = 2
        else:
            self.T = (y[labeled][:, None] == self.classes[None, :]).astype(float)
            self.n_classes = self.classes.size
        self.coef = np.asarray(clf.posterior_.coef, dtype=float)
        self.X, self.y = X, y
        self.unlabeled = np.flatnonzero(y == -1)

    # layout helpers
    def vec(self, coef):
        return coef if coef.ndim == 1 else coef.T.ravel()

    def unvec(self, a):
        return a if self.loss in BINARY or self.loss == "mgr" else a.reshape(-1, self.M).T

    @property
    def W(self):
        if self.loss == "ce":
            return np.kron(np.eye(self.n_classes), self.V)
        return self.V

    # the objective at the fitted MAP
    def gradient_hessian(self):
        """Gradient and dense Hessian of J at the fitted MAP (mgr: shared M x M Hessian)."""
        g, P, A = self.g, self.P, self.coef
        U = P @ A
        if self.loss in BINARY:
            F, Fp = _binary_derivatives(self.loss, U, self.T, g)
            grad = self.lam * A + P.T @ F
            H = np.diag(self.lam) + P.T @ np.diag(Fp) @ P
            return grad, H
        if self.loss == "mgr":
            grad = self.lam[:, None] * A + P.T @ (U - self.T) / g**2
            return grad, np.diag(self.lam) + P.T @ P / g**2
        n_c = self.n_classes
        Pi = _softmax(U / g)
        grad = self.vec(self.lam[:, None] * A + P.T @ (Pi - self.T) / g)
        H = np.kron(np.eye(n_c), np.diag(self.lam))
        for p, pi in zip(P, Pi, strict=True):
            H += np.kron(np.diag(pi) - np.outer(pi, pi), np.outer(p, p)) / g**2
        return grad, H

    def pseudo_label(self, k):
        u = self.V[k] @ self.coef
        if self.loss in BINARY:
            return 1.0 if u >= 0 else -1.0
        return np.eye(self.n_classes)[np.argmax(u)]

    def look_ahead(self, k, label=None):
        """(new coefficients, new covariance) after adding node k with a (pseudo-)label.

        gr/mgr: exact refit from scratch; others: one Newton step from the MAP
        with the Hessian at the old MAP plus the candidate's term.
        """
        g, v = self.g, self.V[k]
        label = self.pseudo_label(k) if label is None else label
        if self.loss == "gr":
            H = np.diag(self.lam) + (self.P.T @ self.P + np.outer(v, v)) / g**2
            rhs = (self.P.T @ self.T + v * label) / g**2
            return np.linalg.solve(H, rhs), np.linalg.inv(H)
        if self.loss == "mgr":
            H = np.diag(self.lam) + (self.P.T @ self.P + np.outer(v, v)) / g**2
            rhs = (self.P.T @ self.T + np.outer(v, label)) / g**2
            return np.linalg.solve(H, rhs), np.linalg.inv(H)
        grad, H = self.gradient_hessian()
        u_k = v @ self.coef
        if self.loss in BINARY:
            F, Fp = _binary_derivatives(self.loss, u_k, label, g)
            H_new = H + Fp * np.outer(v, v)
            grad_new = grad + F * v
            return self.coef - np.linalg.solve(H_new, grad_new), np.linalg.inv(H_new)
        pi = _softmax(u_k / g)
        B = np.diag(pi) - np.outer(pi, pi)
        H_new = H + np.kron(B, np.outer(v, v)) / g**2
        grad_new = grad + np.kron((pi - label) / g, v)
        a_new = self.vec(self.coef) - np.linalg.solve(H_new, grad_new)
        return self.unvec(a_new), np.linalg.inv(H_new)

    def covariance(self):
        """C = H^-1 at the MAP, as an (M n_c)-square matrix for ce, M-square otherwise."""
        return np.linalg.inv(self.gradient_hessian()[1])

    def model_change(self, k):
        new, _ = self.look_ahead(k)
        return np.linalg.norm(self.vec(new) - self.vec(self.coef))

    def vopt(self, k):
        W = self.W
        C, C_plus = self.covariance(), self.look_ahead(k)[1]
        return np.trace(W @ C @ W.T) - np.trace(W @ C_plus @ W.T)

    def sopt(self, k):
        W = self.W
        ones = np.ones(W.shape[0])
        C, C_plus = self.covariance(), self.look_ahead(k)[1]
        return ones @ W @ C @ W.T @ ones - ones @ W @ C_plus @ W.T @ ones

    def sopt_per_class(self, k):
        """Drop of sum_c 1' V C_cc V' 1 (ce: the survey risk of each class's latent field)."""
        C, C_plus = self.covariance(), self.look_ahead(k)[1]
        ones, M = np.ones(self.N), self.M
        total = 0.0
        for c in range(self.n_classes):
            block = slice(c * M, (c + 1) * M)
            total += ones @ self.V @ (C - C_plus)[block, block] @ self.V.T @ ones
        return total


def _assert_close(actual, expected, rtol=RTOL):
    """Relative agreement, with an absolute floor at rtol * the largest value."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=rtol,
                               atol=rtol * np.max(np.abs(expected)))


def _setup(loss, setting):
    clf, X, y = _fitted(loss, setting)
    return clf, BruteForce(clf, X, y), clf.posterior_


# --------------------------------------------------------------- sanity of setup
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_fitted_posterior_is_the_brute_force_map_and_covariance(loss, setting):
    clf, bf, view = _setup(loss, setting)
    assert bf.n_classes == (2 if loss in BINARY else 3)
    assert bf.N >= 50 and bf.M == N_EIGS
    np.testing.assert_allclose(bf.V.T @ bf.V, np.eye(N_EIGS), atol=1e-10)
    grad, H = bf.gradient_hessian()
    # the MAP is a stationary point of the brute-force objective
    scale = np.linalg.norm(bf.lam[:, None] * bf.coef.reshape(N_EIGS, -1)) + 1.0
    assert np.linalg.norm(grad) <= 1e-8 * scale
    _assert_close(view.cov, np.linalg.inv(H), rtol=1e-9)
    assert view.n_classes == bf.n_classes


# ------------------------------------------------------------------ model change
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_model_change_matches_brute_force(loss, setting):
    clf, bf, view = _setup(loss, setting)
    nodes = bf.unlabeled
    expected = np.array([bf.model_change(k) for k in nodes])
    actual = acquisition.model_change(view, nodes)
    _assert_close(actual, expected)
    assert np.all(expected > 0)


@pytest.mark.parametrize("loss", ("gr", "mgr"))
def test_model_change_is_change_of_the_refitted_estimator(loss):
    """gr/mgr: the value is ||u_new - u||_2 over all nodes, u_new from a real refit."""
    clf, bf, view = _setup(loss, "custom")
    nodes = bf.unlabeled[::3]
    actual = acquisition.model_change(view, nodes)
    U_old = clf.decision_function(bf.X)
    for k, value in zip(nodes, actual, strict=True):
        u = clf.decision_function(bf.X[k : k + 1])[0]
        code = int(u >= 0) if loss == "gr" else int(np.argmax(u))
        y_new = bf.y.copy()
        y_new[k] = clf.classes_[code]
        refit = clone(clf).fit(bf.X, y_new)
        change = np.linalg.norm(refit.decision_function(bf.X) - U_old)
        np.testing.assert_allclose(value, change, rtol=1e-7)


@pytest.mark.parametrize("loss", BINARY)
def test_binary_pseudo_label_minimises_model_change(loss):
    """MATH.md: minimising the look-ahead change over yhat in {-1, +1} gives sign(u_k)."""
    clf, bf, view = _setup(loss, "auto")
    nodes = bf.unlabeled
    actual = acquisition.model_change(view, nodes)
    for k, value in zip(nodes, actual, strict=True):
        changes = [np.linalg.norm(bf.look_ahead(k, label)[0] - bf.coef) for label in (-1, 1)]
        np.testing.assert_allclose(value, min(changes), rtol=RTOL,
                                   atol=RTOL * np.max(actual))


@pytest.mark.parametrize("loss", BINARY)
def test_pseudo_label_at_zero_is_positive(loss):
    """u_k = 0 exactly: the pseudo-label is +1, so the look-ahead step pulls u_k up."""
    clf, bf, view = _setup(loss, "custom")
    zero = RankOnePosterior(view.loss, bf.g, bf.V, np.zeros(bf.M), view.cov)
    for k in bf.unlabeled[:5]:
        v = bf.V[k]
        new = look_ahead(zero, k)
        assert v @ new.coef > 0
        # one Newton step of J + l(u_k, +1) from a point where J has zero gradient
        F, Fp = _binary_derivatives(loss, 0.0, 1.0, bf.g)
        H_new = np.linalg.inv(view.cov) + Fp * np.outer(v, v)
        step = -np.linalg.solve(H_new, F * v)
        np.testing.assert_allclose(new.coef, step, rtol=1e-8, atol=1e-10 * np.abs(step).max())
        np.testing.assert_allclose(acquisition.model_change(zero, [k])[0],
                                   np.linalg.norm(step), rtol=1e-8)


# ---------------------------------------------------------------- V-opt, Sigma-opt
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_vopt_matches_trace_drop_of_recomputed_covariance(loss, setting):
    clf, bf, view = _setup(loss, setting)
    nodes = bf.unlabeled
    expected = np.array([bf.vopt(k) for k in nodes])
    _assert_close(acquisition.vopt(view, nodes), expected, rtol=1e-7)
    assert np.all(expected > 0)


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", BINARY + ("mgr",))
def test_sopt_matches_survey_risk_drop_of_recomputed_covariance(loss, setting):
    clf, bf, view = _setup(loss, setting)
    nodes = bf.unlabeled
    expected = np.array([bf.sopt(k) for k in nodes])
    _assert_close(acquisition.sopt(view, nodes), expected, rtol=1e-7)
    assert np.all(expected >= 0) and np.max(expected) > 0


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_ce_joint_survey_risk_drop_is_identically_zero(setting):
    """Why ce Sigma-opt sums the survey risk per class.

    With W = I (x) V and the ones vector of length N n_c, W'1 = 1 (x) V'1 is a
    class-shift direction, along which the ce likelihood is flat: C W'1 =
    1 (x) Lambda^-1 V'1 and B_k 1 = 0, so the drop is 0 for every candidate.
    """
    clf, bf, view = _setup("ce", setting)
    W = bf.W
    ones = np.ones(W.shape[0])
    risk = ones @ W @ bf.covariance() @ W.T @ ones
    expected = np.array([bf.sopt(k) for k in bf.unlabeled])
    np.testing.assert_allclose(expected, 0.0, atol=1e-11 * risk)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_ce_sopt_matches_per_class_survey_risk_drop(setting):
    clf, bf, view = _setup("ce", setting)
    nodes = bf.unlabeled
    expected = np.array([bf.sopt_per_class(k) for k in nodes])
    assert np.all(expected > 0)
    _assert_close(acquisition.sopt(view, nodes), expected)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_ce_sopt_is_informative(setting):
    """Every label lowers the posterior variance: Sigma-opt scores are positive."""
    clf, bf, view = _setup("ce", setting)
    nodes = bf.unlabeled
    scores = acquisition.sopt(view, nodes)
    assert np.all(scores > 1e-6 * acquisition.vopt(view, nodes)), scores[:5]


@pytest.mark.parametrize("loss", ("gr", "probit", "mgr"))
def test_sopt_uses_column_sums_not_the_ones_vector(loss):
    """The paper's <1, C v_k>^2 differs from the survey-risk drop; skmcal must not use it."""
    clf, bf, view = _setup(loss, "custom")
    nodes = bf.unlabeled
    expected = np.array([bf.sopt(k) for k in nodes])
    # the typo'd variant: the ones vector in spectral coordinates instead of V'1
    w = np.ones(bf.M)
    typo = []
    for k in nodes:
        C, C_plus = bf.covariance(), bf.look_ahead(k)[1]
        typo.append(w @ C @ w - w @ C_plus @ w)
    assert not np.allclose(expected, typo, rtol=1e-3)
    _assert_close(acquisition.sopt(view, nodes), expected, rtol=1e-7)


# -------------------------------------------------------------------- look-ahead
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_look_ahead_matches_brute_force_step_and_covariance(loss, setting):
    clf, bf, view = _setup(loss, setting)
    for k in bf.unlabeled[::5]:
        coef_new, cov_new = bf.look_ahead(k)
        new = look_ahead(view, k)
        assert new.coef.shape == view.coef.shape and new.cov.shape == view.cov.shape
        _assert_close(new.coef, coef_new, rtol=1e-8)
        _assert_close(new.cov, cov_new, rtol=1e-8)
        np.testing.assert_array_equal(new.cov, new.cov.T)
        # the view itself is not modified
        np.testing.assert_array_equal(view.coef, clf.posterior_.coef)
        assert new.loss == view.loss and new.gamma == view.gamma
        assert new.eigenvectors is view.eigenvectors


@pytest.mark.parametrize("loss", ("gr", "mgr"))
def test_two_look_aheads_equal_the_exact_refit_with_both_labels(loss):
    """Exact for Gaussian losses: chaining updates equals refitting with both pseudo-labels."""
    clf, bf, view = _setup(loss, "auto")
    k1, k2 = bf.unlabeled[[3, 17]]
    first = look_ahead(view, k1)
    label1 = bf.pseudo_label(k1)
    u2 = bf.V[k2] @ first.coef
    label2 = (1.0 if u2 >= 0 else -1.0) if loss == "gr" else np.eye(3)[np.argmax(u2)]
    second = look_ahead(first, k2)
    P = bf.V[np.r_[bf.labeled, k1, k2]]
    T = np.concatenate([bf.T, [label1, label2]]) if loss == "gr" else np.vstack(
        [bf.T, label1, label2])
    H = np.diag(bf.lam) + P.T @ P / bf.g**2
    _assert_close(second.coef, np.linalg.solve(H, P.T @ T / bf.g**2))
    _assert_close(second.cov, np.linalg.inv(H))


# ------------------------------------------------------------------- uncertainty
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_uncertainty_measures_from_decision_function_and_proba(loss):
    clf, bf, view = _setup(loss, "custom")
    nodes = bf.unlabeled
    Xn = bf.X[nodes]
    D = clf.decision_function(Xn)
    proba = clf.predict_proba(Xn)
    if D.ndim == 1:
        margin = np.abs(D)
    else:
        top = np.sort(D, axis=1)
        margin = top[:, -1] - top[:, -2]
    entropy = -np.sum(proba * np.log(proba), axis=1)
    least = 1 - proba.max(axis=1)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes, "margin"), -margin,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes), -margin,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes, "entropy"), entropy,
                               rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes, "least_confident"), least,
                               rtol=1e-10, atol=1e-14)


def test_binary_margin_is_minus_abs_latent():
    clf, bf, view = _setup("probit", "auto")
    nodes = bf.unlabeled
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes),
                               -np.abs(bf.V[nodes] @ bf.coef), rtol=1e-12)


def test_uncertainty_rejects_unknown_measure():
    clf, bf, view = _setup("mgr", "auto")
    with pytest.raises(ValueError, match="measure"):
        acquisition.uncertainty(view, bf.unlabeled, "variance")


# --------------------------------------------------------------- vectorisation
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_values_do_not_depend_on_chunking_or_order(loss, monkeypatch):
    clf, bf, view = _setup(loss, "auto")
    nodes = bf.unlabeled
    perm = np.random.RandomState(0).permutation(nodes.size)
    functions = (acquisition.model_change, acquisition.vopt, acquisition.sopt)
    reference = [f(view, nodes) for f in functions]
    monkeypatch.setattr(softmax, "CE_CHUNK", 3)
    monkeypatch.setattr(posterior, "SCORE_CHUNK", 5)
    for f, ref in zip(functions, reference, strict=True):
        np.testing.assert_allclose(f(view, nodes), ref, rtol=1e-12)
        np.testing.assert_allclose(f(view, nodes[perm]), ref[perm], rtol=1e-12)
        np.testing.assert_allclose(f(view, list(nodes[:3])), ref[:3], rtol=1e-12)
        assert f(view, np.array([], dtype=int)).shape == (0,)


def test_posterior_of_classifier():
    clf, bf, view = _setup("ce", "auto")
    assert view.loss.name == "ce" and view.gamma == clf.gamma_
    assert view.coef is clf.posterior_.coef and view.cov is clf.posterior_.cov
    assert view.eigenvectors is clf.eigenvectors_
    assert view.n_classes == 3
    np.testing.assert_allclose(view.column_sums(), bf.V.T @ np.ones(bf.N))
    np.testing.assert_allclose(view.latent(bf.unlabeled), bf.V[bf.unlabeled] @ bf.coef)


# ------------------------------------------------- ce with many classes, screening
@functools.cache
def _ce_many_classes(n_classes=6, seed=3):
    """ce on ~80 nodes with 6 classes: the zero-sum subspace has dimension 5 here."""
    rng = np.random.RandomState(seed)
    centers = 4.0 * rng.randn(n_classes, 3)
    X = np.vstack([rng.randn(14, 3) + c for c in centers])
    y = np.full(X.shape[0], -1)
    for c in range(n_classes):
        y[c * 14 + rng.choice(14, 2, replace=False)] = c
    clf = SpectralGraphClassifier("ce", n_eigs=10, tau=0.1, gamma=0.4).fit(X, y)
    return clf, BruteForce(clf, X, y), clf.posterior_


def test_ce_with_six_classes_matches_brute_force():
    clf, bf, view = _ce_many_classes()
    nodes = bf.unlabeled
    _assert_close(acquisition.model_change(view, nodes), [bf.model_change(k) for k in nodes])
    _assert_close(acquisition.vopt(view, nodes), [bf.vopt(k) for k in nodes])
    _assert_close(acquisition.sopt(view, nodes), [bf.sopt_per_class(k) for k in nodes])
    coef, cov = bf.look_ahead(nodes[0])
    after = look_ahead(view, nodes[0])
    _assert_close(after.coef, coef)
    _assert_close(after.cov, cov)


def test_spd_solve_batched_matches_dense_solves():
    rng = np.random.RandomState(0)
    n, r, K = 7, 3, 40
    W = rng.randn(K, n, n)
    A = W @ W.transpose(0, 2, 1) + 1e-3 * np.eye(n)  # condition numbers up to ~1e5
    B = rng.randn(K, n, r)
    X = softmax.spd_solve_batched(A.transpose(1, 2, 0), B.transpose(1, 2, 0))
    np.testing.assert_allclose(X.transpose(2, 0, 1), np.linalg.solve(A, B), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("function", ["model_change", "vopt", "sopt"])
@pytest.mark.parametrize("top", [1, 4])
def test_ce_screening_keeps_the_exact_top_values(function, top, monkeypatch):
    """With top=, ce scores in float32 first: the top values and their order stay exact."""
    for _clf, bf, view in (_setup("ce", "auto"), _ce_many_classes()):
        f = getattr(acquisition, function)
        nodes = bf.unlabeled
        exact = f(view, nodes)
        monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
        screened = f(view, nodes, top=top)
        monkeypatch.undo()
        best = np.argsort(-exact, kind="stable")[:top]
        np.testing.assert_array_equal(np.argsort(-screened, kind="stable")[:top], best)
        np.testing.assert_allclose(screened[best], exact[best], rtol=1e-12)
        # the others are single-precision approximations of the exact values
        np.testing.assert_allclose(screened, exact, rtol=0, atol=1e-5 * exact.max())
        assert not np.array_equal(screened, exact)  # the float32 pass did run


def test_ce_screening_falls_back_to_double_on_float32_overflow(monkeypatch):
    """Non-finite float32 values (overflow) mean no screening: every value in float64."""
    clf, bf, view = _setup("ce", "auto")
    exact = acquisition.model_change(view, bf.unlabeled)
    terms = softmax.SoftmaxPosterior._terms
    precisions = []

    def overflowing_terms(self, nodes, source, **kwargs):
        precisions.append(getattr(source, "dtype", source))
        t = terms(self, nodes, source, **kwargs)
        if precisions[-1] == np.float32:
            t.step[:] = np.inf
        return t

    monkeypatch.setattr(softmax.SoftmaxPosterior, "_terms", overflowing_terms)
    monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
    np.testing.assert_array_equal(acquisition.model_change(view, bf.unlabeled, top=2), exact)
    assert precisions == [np.float32, None]  # float32 products, then exact direct forms


def test_ce_strategy_picks_do_not_depend_on_screening(monkeypatch):
    from skmcal.query import model_change, vopt

    clf, bf, view = _setup("ce", "auto")
    X = bf.X
    for strategy in (model_change, vopt):
        for batch in ("topk", "greedy"):
            reference = strategy(clf, X, 3, batch=batch, random_state=0)
            monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
            screened = strategy(clf, X, 3, batch=batch, random_state=0)
            monkeypatch.undo()
            np.testing.assert_array_equal(screened[0], reference[0])
            np.testing.assert_allclose(screened[1], reference[1], rtol=1e-12)


def test_ce_forms_follow_the_look_ahead_updates(monkeypatch):
    """float32 forms kept by look_ahead (rank n_c - 1 updates) track the recomputed forms."""
    monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
    for _clf, bf, view in (_setup("ce", "custom"), _ce_many_classes()):
        nodes = bf.unlabeled
        state = view.prepare(nodes[::-1])
        assert state.forms.covers(nodes) and not state.forms.covers(bf.labeled[:1])
        for node in nodes[:3]:
            state = look_ahead(state, node)
            plain = replace(state, forms=None)
            exact_G, exact_G2, _ = plain._direct(nodes)
            kept_G, kept_G2 = state.forms.take(nodes)
            assert kept_G.dtype == np.float32
            _assert_close(kept_G, exact_G, rtol=1e-5)
            _assert_close(kept_G2, exact_G2, rtol=1e-5)
            for f in (acquisition.model_change, acquisition.vopt, acquisition.sopt):
                exact = f(plain, nodes)
                _assert_close(f(state, nodes), exact, rtol=1e-10)  # no top: no screening
                screened = f(state, nodes, top=2)
                best = np.argsort(-exact, kind="stable")[:2]
                np.testing.assert_array_equal(np.argsort(-screened, kind="stable")[:2], best)
                np.testing.assert_allclose(screened[best], exact[best], rtol=1e-10)


def test_ce_direct_forms_equal_the_product_forms():
    for _clf, bf, view in (_setup("ce", "auto"), _ce_many_classes()):
        nodes = bf.unlabeled
        direct = view._direct(nodes)[:2]
        products = view._forms(nodes, view._form_coefficients())
        for a, b in zip(direct, products, strict=True):
            _assert_close(a, b, rtol=1e-11)


def test_ce_greedy_batch_with_kept_forms_equals_rescoring_from_scratch():
    from skmcal.query import _choose, model_change

    clf, bf, view = _setup("ce", "auto")
    indices, scores = model_change(clf, bf.X, 4, batch="greedy", random_state=0)
    rows = np.flatnonzero(bf.y == -1)  # X is the node set: rows are nodes
    expected = _choose(
        view, acquisition.model_change, look_ahead, np.arange(bf.N), rows, 4, "greedy",
        np.random.RandomState(0),
    )
    np.testing.assert_array_equal(indices, expected[0])
    np.testing.assert_allclose(scores, expected[1], rtol=1e-10)


@pytest.mark.parametrize("setting", list(SETTINGS) + ["six classes"])
def test_ce_values_through_the_product_forms_match_brute_force(setting, monkeypatch):
    """Above DIRECT_MAX nodes the forms come from the products v_m v_m': same values."""
    clf, bf, view = _ce_many_classes() if setting == "six classes" else _setup("ce", setting)
    monkeypatch.setattr(softmax, "DIRECT_MAX", 0)
    nodes = bf.unlabeled
    _assert_close(acquisition.model_change(view, nodes), [bf.model_change(k) for k in nodes])
    _assert_close(acquisition.vopt(view, nodes), [bf.vopt(k) for k in nodes])
    _assert_close(acquisition.sopt(view, nodes), [bf.sopt_per_class(k) for k in nodes])


def test_ce_forms_of_no_nodes():
    _clf, _bf, view = _setup("ce", "auto")
    forms = view.prepare([]).forms
    assert forms.G.shape == forms.G2.shape == (2, 2, 0) and forms.nodes.size == 0
