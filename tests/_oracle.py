"""The tests' brute-force oracle: every formula of docs/math.rst, by hand.

Everything here is rebuilt in plain numpy from the statements of the
documentation's mathematics page (``docs/math.rst``), never from skmcal's own
implementation of them: the losses and their derivatives, the dense spectral
objective with its gradient and Hessian, the dense Laplace covariance, the
look-ahead (one explicit Newton step with a dense Hessian, or an exact refit
for the Gaussian losses) and the V-opt / Sigma-opt risks of an explicitly
recomputed covariance, the dense graph Laplacian and the dense full-graph MAP.
The tests compare skmcal's closed forms with these on tiny graphs.

It also holds the small data sets and the fitted classifiers that several
test files share (all cached: treat them as read-only).
"""

from __future__ import annotations

import functools
import threading
import warnings

import numpy as np
from scipy.stats import norm

from skmcal import SpectralGraphClassifier

BINARY = ("gr", "logistic", "probit")
MULTICLASS = ("mgr", "ce")
ALL_LOSSES = BINARY + MULTICLASS
N_EIGS = 8


# ------------------------------------------------------------------------ data
def blobs(n_classes, n_per_class, *, centers, labels, n_labeled, scale=1.0, seed=0):
    """Gaussian blobs in the plane, ``n_labeled`` rows per class chosen at random.

    Returns ``(X, y_true, labeled)``: the points (one blob of ``n_per_class``
    per class, standard deviation ``scale``), their classes (``labels``, one
    per blob) and the sorted indices of the labeled rows. ``centers`` and
    ``labels`` give at least ``n_classes`` entries, the first ones are used.
    """
    rng = np.random.RandomState(seed)
    centers = np.asarray(centers, dtype=float)[:n_classes]
    X = np.vstack([scale * rng.randn(n_per_class, 2) + c for c in centers])
    y_true = np.repeat(np.asarray(labels)[:n_classes], n_per_class)
    labeled = np.sort(
        np.concatenate(
            [
                c * n_per_class + rng.choice(n_per_class, n_labeled, replace=False)
                for c in range(n_classes)
            ]
        )
    )
    return X, y_true, labeled


def semi_supervised(y_true, labeled):
    """``y_true`` on the ``labeled`` rows, -1 (unlabeled) elsewhere."""
    y = np.full(y_true.shape[0], -1)
    y[labeled] = y_true[labeled]
    return y


# ---------------------------------------------------------- losses, by hand
def softmax_rows(U):
    """Softmax along the last axis."""
    E = np.exp(U - U.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def binary_value(loss, x, t, g):
    """l(x, t) of a binary loss: the table of docs/math.rst."""
    if loss == "gr":
        return (x - t) ** 2 / (2 * g**2)
    if loss == "logistic":
        return np.log1p(np.exp(-x * t / g))
    return -np.log(norm.cdf(x * t, scale=g))


def binary_derivatives(loss, x, t, g):
    """(F, F'): first and second derivative of l(x, t) in x, written out directly."""
    x = np.asarray(x, dtype=float)
    s = x * t
    if loss == "gr":
        return (x - t) / g**2, np.full_like(x, 1 / g**2)
    if loss == "logistic":
        e = np.exp(s / g)
        return -(t / g) / (1 + e), e / (g**2 * (1 + e) ** 2)
    psi, Psi = norm.pdf(s, scale=g), norm.cdf(s, scale=g)
    return -t * psi / Psi, psi**2 / Psi**2 + s * psi / (g**2 * Psi)


# ------------------------------------------------------- finite differences
def fd_gradient(f, x, h):
    """Central differences of a scalar function."""
    out = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def fd_jacobian(g, x, h):
    """Central differences of a vector function, one column per coordinate."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((g(x + e) - g(x - e)) / (2 * h))
    return np.column_stack(cols)


def rel(a, b):
    """Relative error ||a - b|| / ||b||."""
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(b)


# ---------------------------------------------------------------- the graph
def plane_knn_graph(n, seed=0):
    """``(W, X)``: dense symmetric weights, 5 nearest neighbours of ``n`` points in the plane."""
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 2)
    dist = np.linalg.norm(X[:, None] - X[None], axis=2)
    W = np.zeros((n, n))
    for i in range(n):
        nearest = np.argsort(dist[i])[1:6]
        W[i, nearest] = np.exp(-(dist[i, nearest] ** 2) / 0.05)
    return 0.5 * (W + W.T), X


def dense_laplacian(W):
    """``I - D^-1/2 W D^-1/2`` of a dense (or sparse) affinity matrix."""
    W = W.toarray() if hasattr(W, "toarray") else np.asarray(W)
    s = 1.0 / np.sqrt(W.sum(axis=1))
    return np.eye(W.shape[0]) - s[:, None] * W * s[None, :]


def dense_green(W, tau):
    """``(L + tau^2 I)^-1`` by a dense inverse: the full graph's prior covariance (its
    columns are the Green's columns of :func:`skmcal.fullgraph.green_block`)."""
    return np.linalg.inv(dense_laplacian(W) + tau**2 * np.eye(W.shape[0]))


def harmonic_extension(W, labeled, targets):
    """Laplace learning (Zhu et al. 2003): the labels' values held at their nodes,
    ``L_uu u_u = -L_ul y`` at the others."""
    L = dense_laplacian(W)
    free = np.setdiff1d(np.arange(W.shape[0]), labeled)
    u = np.zeros((W.shape[0],) + np.shape(targets)[1:])
    u[labeled] = targets
    u[free] = np.linalg.solve(L[np.ix_(free, free)], -L[np.ix_(free, labeled)] @ targets)
    return u


def dense_poisson(W, labeled, codes, n_classes, priors):
    """Poisson learning by a dense solve: ``pinv(D - W)`` on the sources ``y_j - ybar``
    balanced per connected component, each component's degree-weighted mean 0, the
    scores times ``priors / ybar`` (``priors`` equal to the labels' shares: none)."""
    from scipy.sparse.csgraph import connected_components

    W = W.toarray() if hasattr(W, "toarray") else np.asarray(W)
    d = W.sum(axis=1)
    onehot = np.eye(n_classes)[codes]
    ybar = onehot.mean(axis=0)
    B = np.zeros((W.shape[0], n_classes))
    np.add.at(B, labeled, onehot - ybar)
    _, comp = connected_components(W, directed=False)
    for c in np.unique(comp):
        m = comp == c
        B[m] -= np.outer(d[m], B[m].sum(axis=0)) / d[m].sum()
    U = np.linalg.pinv(np.diag(d) - W) @ B
    for c in np.unique(comp):
        m = comp == c
        U[m] -= d[m] @ U[m] / d[m].sum()
    return U * priors / ybar


def dense_sum_prior(W, lam, V, tau_s, tau_f, eps, labeled):
    """``(Sigma, c_s, c_f)``: the summed prior of ``model="sum"`` at every node, dense
    (``c_s V (Lambda + tau_s^2)^-1 V' + eps c_f (L + tau_f^2 I)^-1``), and its two
    scales (unit mean variance at the labeled nodes)."""
    Ks = (V / (lam + tau_s**2)) @ V.T
    Kf = dense_green(W, tau_f)
    cs = 1.0 / np.mean(np.diag(Ks)[labeled])
    cf = 1.0 / np.mean(np.diag(Kf)[labeled])
    return cs * Ks + eps * cf * Kf, cs, cf


def dense_loo_terms(S, Y):
    """Residual of every label predicted from the others, and its variance, under ``S``
    (explicit solves without row ``i``)."""
    n = S.shape[0]
    residuals, variances = np.empty_like(Y), np.empty(n)
    for i in range(n):
        rest = np.delete(np.arange(n), i)
        weights = np.linalg.solve(S[np.ix_(rest, rest)], S[rest, i])
        residuals[i] = Y[i] - Y[rest].T @ weights
        variances[i] = S[i, i] - S[i, rest] @ weights
    return residuals, variances


def dense_loo(S, Y, amplitude=None):
    """Sum over labels and columns of log N(y_i | the others) under ``amplitude * S``
    (None: the profiled amplitude, the mean of ``r_i^2 / v_i``)."""
    r, v = dense_loo_terms(S, Y)
    if amplitude is None:
        amplitude = np.mean(r**2 / v[:, None])
    v = amplitude * v[:, None]
    return float(np.sum(-0.5 * np.log(2 * np.pi * v) - r**2 / (2 * v)))


def dense_loo_classes(S, Y):
    """The mean over the labels' classes of their mean log-probability of being predicted
    from the others: label ``i`` of class ``c`` (the largest column of its one-hot row,
    or the sign of a single column) has the prediction ``N(mu_i, a v_i I)`` of explicit
    solves without it (:func:`dense_loo_terms`; ``a`` the profiled amplitude of
    :func:`dense_loo`), and the probability that ``c``'s value is the largest: the
    integral of ``phi(z) prod_{c' != c} Phi(z + (mu_c - mu_c') / sd)`` over ``c``'s
    standardised value by the trapezoidal rule on 4,001 points of [-20, 20] (one column:
    ``P(sign(z) = sign(y_i))``)."""
    import scipy.stats

    r, v = dense_loo_terms(S, Y)
    amplitude = np.mean(r**2 / v[:, None])
    mu, sd = Y - r, np.sqrt(amplitude * v)
    if Y.shape[1] == 1:
        codes = (Y[:, 0] > 0).astype(int)
        log_p = scipy.stats.norm.logcdf(np.sign(Y[:, 0]) * mu[:, 0] / sd)
    else:
        codes = np.argmax(Y, axis=1)
        norm, z = scipy.stats.norm, np.linspace(-20.0, 20.0, 4001)

        def probability(i, c):
            gaps = np.delete(mu[i, c] - mu[i], c) / sd[i]
            f = norm.pdf(z) * np.prod(norm.cdf(z[:, None] + gaps), axis=1)
            return np.log(np.sum((f[1:] + f[:-1]) / 2) * (z[1] - z[0]))

        log_p = np.array([probability(i, c) for i, c in enumerate(codes)])
    return float(np.mean([log_p[codes == c].mean() for c in np.unique(codes)]))


def dense_sum_choice(clf, labeled, Y, noise=None, margin=None):
    """The grid point ``(tau_s, tau_f, eps, gamma)`` of largest leave-one-out density
    (:func:`dense_loo`) of the dense summed prior on ``clf``'s graph, with targets ``Y``
    at the ``labeled`` nodes and noise ``gamma^2 * noise`` (None: ones) there, among the
    points whose :func:`dense_loo_classes` is within ``margin`` of the grid's best
    (None: the classifier's :data:`~skmcal.evidence.SUM_CLASS_MARGIN`); the grid of
    ``model="sum"`` (the spectral taus capped at the eigenvalues' median)."""
    from skmcal.evidence import (
        DEFAULT_TAUS,
        SUM_CLASS_MARGIN,
        SUM_EPSILONS,
        SUM_FULL_TAUS,
        SUM_GAMMAS,
    )

    W, lam, V = clf.graph_.weights, clf.eigenvalues_, clf.eigenvectors_
    noise = np.ones(len(labeled)) if noise is None else noise
    margin = SUM_CLASS_MARGIN if margin is None else margin
    Y = Y.reshape(len(labeled), -1)
    table, classes = {}, {}
    for ts in [t for t in DEFAULT_TAUS if t**2 <= np.median(lam)]:
        for tf in SUM_FULL_TAUS:
            for eps in SUM_EPSILONS:
                Sigma, _, _ = dense_sum_prior(W, lam, V, ts, tf, eps, labeled)
                K = Sigma[np.ix_(labeled, labeled)]
                for g in SUM_GAMMAS:
                    S = K + g**2 * np.diag(noise)
                    table[ts, tf, eps, g] = dense_loo(S, Y)
                    classes[ts, tf, eps, g] = dense_loo_classes(S, Y)
    best = max(classes.values())
    return max((p for p in table if classes[p] >= best - margin), key=table.get)


def full_graph_map(loss, W, labeled, targets, tau, gamma):
    """Dense Newton on the full-graph objective (class-major ``vec(U)`` for multiclass).

    ``J(u) = 1/2 u' (L + tau^2 I) u + sum_j l(u_j, y_j)`` over one latent value
    (one row, multiclass) per node; ``loss`` is a loss of
    :data:`skmcal.losses.LOSSES`, used for its value's derivatives only.
    """
    A = dense_laplacian(W) + tau**2 * np.eye(W.shape[0])
    n = W.shape[0]
    if loss.closed_form:  # a node labeled twice: its losses add up
        Q = A.copy()
        np.add.at(Q, (labeled, labeled), 1.0 / gamma**2)
        B = np.zeros((n,) + targets.shape[1:])
        np.add.at(B, labeled, targets / gamma**2)
        return np.linalg.solve(Q, B)
    if not loss.multiclass:
        u = np.zeros(n)
        for _ in range(100):
            first, second = loss.derivatives(u[labeled], targets, gamma)
            grad = A @ u
            grad[labeled] += first
            H = A.copy()
            H[labeled, labeled] += second
            step = np.linalg.solve(H, -grad)
            u += step
            if np.abs(step).max() < 1e-15:
                break
        return u
    n_c = targets.shape[1]
    prior = np.kron(np.eye(n_c), A)
    x = np.zeros(n * n_c)
    for _ in range(100):
        U = x.reshape(n_c, n).T
        Pi = loss.proba(U[labeled], gamma)
        G = np.zeros((n, n_c))
        G[labeled] = (Pi - targets) / gamma
        grad = prior @ x + G.T.ravel()
        H = prior.copy()
        for j, node in enumerate(labeled):
            block = (np.diag(Pi[j]) - np.outer(Pi[j], Pi[j])) / gamma**2
            idx = np.arange(n_c) * n + node
            H[np.ix_(idx, idx)] += block
        step = np.linalg.solve(H, -grad)
        x += step
        if np.abs(step).max() < 1e-15:
            break
    return x.reshape(n_c, n).T


# ------------------------------------------------ the spectral objective J
class Objective:
    """J(a) = 1/2 <A, Lambda_tau A> + sum_j loss(p_j' A, y_j), with gradient and Hessian.

    ``a`` is the class-major vector of coefficients (index ``c * M + i`` is
    coefficient ``i`` of class ``c``); for binary losses it is ``alpha``. The
    Hessian of the multiclass losses is the full Kronecker form (mgr too).
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
            return prior_term + binary_value(self.loss, U, self.T, g).sum()
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
            return self.prior * A + self.P.T @ binary_derivatives(self.loss, U, self.T, g)[0]
        if self.loss == "mgr":
            G = (U - self.T) / g**2
        else:
            G = (softmax_rows(U / g) - self.T) / g
        return self.vec(self.prior[:, None] * A + self.P.T @ G)

    def hessian(self, a):
        """Dense Hessian, explicitly: Kronecker form for the multiclass losses."""
        A = self.unvec(a)
        U = self.P @ A
        g = self.g
        if self.loss in BINARY:
            curvature = binary_derivatives(self.loss, U, self.T, g)[1]
            return np.diag(self.prior) + self.P.T @ np.diag(curvature) @ self.P
        eye = np.eye(self.n_classes)
        H = np.kron(eye, np.diag(self.prior))
        if self.loss == "mgr":
            return H + np.kron(eye, self.P.T @ self.P) / g**2
        Pi = softmax_rows(U / g)
        for p, pi in zip(self.P, Pi, strict=True):
            B = np.diag(pi) - np.outer(pi, pi)
            H += np.kron(B, np.outer(p, p)) / g**2
        return H


# ------------------------------------------------ the look-ahead, by hand
class BruteForce:
    """The model of a fitted classifier, rebuilt densely from its spectrum.

    ``a`` is the class-major coefficient vector (index ``c * M + i``); for the
    binary losses it is ``alpha``. ``W`` maps ``a`` to the latent values at
    every node (``V``, or ``I_nc (x) V`` for ce). mgr keeps its shared
    ``M x M`` covariance. ``w``: the weight of each labeled node's loss term
    (``class_weight_`` of its class); a look-ahead adds its candidate at weight 1.
    ``s``: the scale of each class's targets (``target_scale_``), the candidate's
    pseudo-target's too.
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
        codes = np.searchsorted(self.classes, y[labeled])
        self.w = clf.class_weight_[codes]
        # target_scale_: class c's targets (and pseudo-targets) times s[c]
        self.s = np.asarray(clf.target_scale_, dtype=float)
        self.T = self.T * (self.s[codes][:, None] if self.T.ndim == 2 else self.s[codes])
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
        g, P, A, w = self.g, self.P, self.coef, self.w
        U = P @ A
        if self.loss in BINARY:
            F, Fp = binary_derivatives(self.loss, U, self.T, g)
            grad = self.lam * A + P.T @ (w * F)
            H = np.diag(self.lam) + P.T @ np.diag(w * Fp) @ P
            return grad, H
        if self.loss == "mgr":
            grad = self.lam[:, None] * A + P.T @ (w[:, None] * (U - self.T)) / g**2
            return grad, np.diag(self.lam) + P.T @ np.diag(w) @ P / g**2
        n_c = self.n_classes
        Pi = softmax_rows(U / g)
        grad = self.vec(self.lam[:, None] * A + P.T @ (w[:, None] * (Pi - self.T)) / g)
        H = np.kron(np.eye(n_c), np.diag(self.lam))
        for p, pi, w_j in zip(P, Pi, w, strict=True):
            H += w_j * np.kron(np.diag(pi) - np.outer(pi, pi), np.outer(p, p)) / g**2
        return grad, H

    def pseudo_label(self, k):
        u = self.V[k] @ self.coef
        if self.loss in BINARY:
            return self.s[1] if u >= 0 else -self.s[0]
        return np.eye(self.n_classes)[np.argmax(u)] * self.s[np.argmax(u)]

    def look_ahead(self, k, label=None):
        """(new coefficients, new covariance) after adding node k with a (pseudo-)label.

        gr/mgr: exact refit from scratch; others: one Newton step from the MAP
        with the Hessian at the old MAP plus the candidate's term.
        """
        g, v = self.g, self.V[k]
        label = self.pseudo_label(k) if label is None else label
        WP = self.P * self.w[:, None]
        if self.loss == "gr":
            H = np.diag(self.lam) + (WP.T @ self.P + np.outer(v, v)) / g**2
            rhs = (WP.T @ self.T + v * label) / g**2
            return np.linalg.solve(H, rhs), np.linalg.inv(H)
        if self.loss == "mgr":
            H = np.diag(self.lam) + (WP.T @ self.P + np.outer(v, v)) / g**2
            rhs = (WP.T @ self.T + np.outer(v, label)) / g**2
            return np.linalg.solve(H, rhs), np.linalg.inv(H)
        grad, H = self.gradient_hessian()
        u_k = v @ self.coef
        if self.loss in BINARY:
            F, Fp = binary_derivatives(self.loss, u_k, label, g)
            H_new = H + Fp * np.outer(v, v)
            grad_new = grad + F * v
            return self.coef - np.linalg.solve(H_new, grad_new), np.linalg.inv(H_new)
        pi = softmax_rows(u_k / g)
        B = np.diag(pi) - np.outer(pi, pi)
        H_new = H + np.kron(B, np.outer(v, v)) / g**2
        grad_new = grad + np.kron((pi - label) / g, v)
        a_new = self.vec(self.coef) - np.linalg.solve(H_new, grad_new)
        return self.unvec(a_new), np.linalg.inv(H_new)

    def leave_one_out(self, j):
        """The latent value at labeled node ``self.labeled[j]`` with its label left out:
        one Newton step from the MAP on the objective without label ``j`` (its gradient
        and dense Hessian there, each label's term by hand); for gr / mgr an exact
        refit on the other labels by dense normal equations."""
        g, P, w, T = self.g, self.P, self.w, self.T
        rest = np.delete(np.arange(P.shape[0]), j)
        if self.loss in ("gr", "mgr"):
            WP = P[rest] * w[rest, None]
            H = np.diag(self.lam) + WP.T @ P[rest] / g**2
            return P[j] @ np.linalg.solve(H, WP.T @ T[rest] / g**2)
        grad, H = self.gradient_hessian()
        U = P[j] @ self.coef
        if self.loss in BINARY:
            F, Fp = binary_derivatives(self.loss, U, T[j], g)
            grad_rest, H_rest = grad - w[j] * F * P[j], H - w[j] * Fp * np.outer(P[j], P[j])
            return P[j] @ (self.coef - np.linalg.solve(H_rest, grad_rest))
        pi = softmax_rows(U[None] / g)[0]
        H_rest = H - w[j] * np.kron(np.diag(pi) - np.outer(pi, pi), np.outer(P[j], P[j])) / g**2
        grad_rest = grad - w[j] * np.kron((pi - T[j]) / g, P[j])
        a = self.vec(self.coef) - np.linalg.solve(H_rest, grad_rest)
        return P[j] @ self.unvec(a)

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


class GaussianRefits:
    """Exact gr / mgr fits on an explicit label set, by dense normal equations.

    The greedy batch of a Gaussian loss, by hand: score every candidate by
    refitting with it added (pseudo-labeled), take the best, add it, repeat.
    """

    def __init__(self, clf):
        self.V = np.asarray(clf.eigenvectors_)
        self.lam = np.asarray(clf.eigenvalues_) + clf.tau_**2
        self.g = clf.gamma_
        self.binary = clf.loss == "gr"
        self.n_classes = clf.classes_.size

    def fit(self, nodes, targets):
        P = self.V[list(nodes)]
        H = np.diag(self.lam) + P.T @ P / self.g**2
        T = np.asarray(targets, dtype=float)
        return np.linalg.solve(H, P.T @ T / self.g**2), np.linalg.inv(H)

    def pseudo(self, coef, k):
        u = self.V[k] @ coef
        if self.binary:
            return 1.0 if u >= 0 else -1.0
        return np.eye(self.n_classes)[np.argmax(u)]

    def score(self, kind, nodes, targets, k):
        coef, C = self.fit(nodes, targets)
        label = self.pseudo(coef, k)
        coef2, C2 = self.fit(list(nodes) + [k], list(targets) + [label])
        if kind == "model_change":
            return np.linalg.norm(coef2 - coef)
        V = self.V
        if kind == "vopt":
            return np.trace(V @ C @ V.T) - np.trace(V @ C2 @ V.T)
        one = np.ones(V.shape[0])
        return one @ V @ C @ V.T @ one - one @ V @ C2 @ V.T @ one

    def greedy(self, kind, nodes, targets, candidates, n):
        nodes, targets, candidates = list(nodes), list(targets), list(candidates)
        chosen, scores = [], []
        for _ in range(n):
            values = np.array([self.score(kind, nodes, targets, k) for k in candidates])
            best = int(np.argmax(values))
            k = candidates.pop(best)
            coef, _ = self.fit(nodes, targets)
            nodes.append(k)
            targets.append(self.pseudo(coef, k))
            chosen.append(k)
            scores.append(values[best])
        return np.array(chosen), np.array(scores)


# ---------------------------------------------- fitted models shared by files
#: Separated blobs (test_losses, test_fitting, test_posterior): classes 3, 5, 7.
CLASS_LABELS = np.array([3, 5, 7])
#: Settings of :func:`fitted`.
SETTINGS = {"auto": {}, "custom": {"tau": 0.1, "gamma": 0.3}}
#: Settings of :func:`look_ahead_setup` (overlapping blobs).
LOOK_AHEAD_SETTINGS = {"auto": {}, "custom": {"tau": 0.2, "gamma": 0.3}}


#: Labels per class of :func:`unbalanced_blobs`.
UNBALANCED_COUNTS = np.array([2, 4, 9])


def unbalanced_blobs(n_classes=3, seed=0):
    """Blobs of 25 points (classes 0, 1(, 2)) with 2, 4 (and 9) labels:
    ``(X, y)`` (test_class_weight, test_target_scale)."""
    X, y_true, _ = blobs(n_classes, 25, centers=[[0, 0], [4, 0], [2, 3.5]][:n_classes],
                         labels=np.arange(n_classes), n_labeled=1, seed=seed)  # fmt: skip
    labeled = np.concatenate(
        [np.flatnonzero(y_true == c)[:n] for c, n in enumerate(UNBALANCED_COUNTS[:n_classes])]
    )
    return X, semi_supervised(y_true, labeled)


def separated_blobs(n_classes, n_per_class=None, seed=0):
    """Blobs labeled 3, 5(, 7), four to six labeled rows per class: ``(X, y, y_true)``."""
    n_per_class = n_per_class or (25 if n_classes == 2 else 18)
    X, y_true, labeled = blobs(
        n_classes,
        n_per_class,
        centers=[[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]],
        labels=CLASS_LABELS[[0, 2]] if n_classes == 2 else CLASS_LABELS,
        n_labeled=6 if n_classes == 2 else 4,
        seed=seed,
    )
    return X, semi_supervised(y_true, labeled), y_true


@functools.cache
def fitted(loss, setting="auto", n_classes=None):
    """``(clf, X, y)``: the loss fitted on :func:`separated_blobs` (no graph cache)."""
    n_classes = n_classes or (2 if loss in BINARY else 3)
    X, y, _ = separated_blobs(n_classes)
    clf = SpectralGraphClassifier(loss, n_eigs=N_EIGS, cache=False, **SETTINGS[setting])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.fit(X, y)
    return clf, X, y


def eval_points(X):
    """The rows of X and, near every fifth one, a new point."""
    rng = np.random.RandomState(7)
    return np.vstack([X, X[::5] + rng.randn(X[::5].shape[0], 2) * 0.3])


def overlapping_blobs(n_classes, seed=0):
    """Overlapping blobs; labels 2, 6(, 9); three labeled rows per class: ``(X, y)``."""
    X, y_true, labeled = blobs(
        n_classes,
        26 if n_classes == 2 else 18,
        centers=[[0.0, 0.0], [3.0, 0.0], [1.5, 2.6]],
        labels=[2, 6, 9],
        n_labeled=3,
        seed=seed,
    )
    return X, semi_supervised(y_true, labeled)


@functools.cache
def _look_ahead_fit(loss, setting, class_weight="auto", target_scale=None):
    X, y = overlapping_blobs(2 if loss in BINARY else 3)
    if class_weight != "auto" or target_scale is not None:  # unbalanced: a 4th label of class 2
        y = y.copy()
        y[np.flatnonzero(y == -1)[0]] = 2
    # one graph: the look-ahead is a refit on the graph of the fit (no kernel choice)
    clf = SpectralGraphClassifier(
        loss, kernel="gaussian", n_eigs=N_EIGS, class_weight=class_weight,
        target_scale=target_scale, **LOOK_AHEAD_SETTINGS[setting],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.fit(X, y)
    return clf, X, y


def look_ahead_setup(loss, setting, class_weight="auto", target_scale=None):
    """``(clf, BruteForce, posterior)`` of the loss fitted on :func:`overlapping_blobs`
    (three labels per class, whose balanced weights and target scales are all 1); with
    another ``class_weight`` or ``target_scale``, one more label of the first class,
    fitted with them."""
    clf, X, y = _look_ahead_fit(loss, setting, class_weight, target_scale)
    return clf, BruteForce(clf, X, y), clf.posterior_


@functools.cache
def ce_many_classes(n_classes=6, seed=3):
    """ce on ~80 nodes with 6 classes: the zero-sum subspace has dimension 5 here."""
    rng = np.random.RandomState(seed)
    centers = 4.0 * rng.randn(n_classes, 3)
    X = np.vstack([rng.randn(14, 3) + c for c in centers])
    y = np.full(X.shape[0], -1)
    for c in range(n_classes):
        y[c * 14 + rng.choice(14, 2, replace=False)] = c
    clf = SpectralGraphClassifier("ce", n_eigs=10, tau=0.1, gamma=0.4).fit(X, y)
    return clf, BruteForce(clf, X, y), clf.posterior_


def run_concurrently(function, n_threads):
    """``[function(0), ..., function(n_threads - 1)]``, each in its own thread, all
    released at once by a barrier; the first exception raised in a thread is
    raised here."""
    start = threading.Barrier(n_threads)
    results, errors = [None] * n_threads, []

    def run(i):
        try:
            start.wait()
            results[i] = function(i)
        except Exception as exc:  # noqa: BLE001 -- re-raised in the calling thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def assert_png(path):
    """A PNG file of more than 2,000 bytes."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 2000


def data_lines(path):
    """The lines of a CSV file after its header."""
    return path.read_text().splitlines()[1:]


def assert_close(actual, expected, rtol=1e-8):
    """Relative agreement, with an absolute floor at rtol * the largest value."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * np.max(np.abs(expected)))
