"""Fitting the spectral model: the MAP by Newton's method and its Laplace posterior.

Every model minimises ``J(alpha) = 1/2 <alpha, Lambda_tau alpha> + sum_j
l(p_j' alpha, y_j)`` over the spectral coefficients (:mod:`skmcal.posterior`).
Gaussian losses (``gr``, ``mgr``) are solved in closed form; the others by
Newton's method with a backtracking line search (ce on its zero-sum subspace,
with chord steps). :func:`fit_posterior` returns the posterior family of the
loss. Weighted labels (``class_weight``) count their loss terms ``w_j`` times:
``sum_j w_j l(p_j' alpha, y_j)``, for ``gr``/``mgr`` noise of variance
``gamma^2 / w_j``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas
from sklearn.exceptions import ConvergenceWarning

from ._threads import with_small_algebra
from ._warnings import warn_user
from .graph import laplacian_trace
from .losses import BinaryLoss, CrossEntropyLoss
from .posterior import (
    _SINGULAR,
    RankOnePosterior,
    cho_inverse,
    cho_logdet,
    cho_solve,
    cholesky,
    reduce_classes,
    zero_sum_basis,
)
from .softmax import SoftmaxPosterior

_ARMIJO = 1e-4
_MIN_STEP = 2.0**-40
_ROUNDOFF = 16 * np.finfo(float).eps


def check_weights(weights, n_labeled):
    """The weights of the labeled rows' loss terms, checked.

    Parameters
    ----------
    weights : array-like of shape (n_labeled,) or None
        One positive finite weight per labeled row; None: one each.
    n_labeled : int
        The number of labeled rows.

    Returns
    -------
    ndarray of shape (n_labeled,) or None
        ``weights`` as floats; None where ``weights`` is None.

    Raises
    ------
    ValueError
        If the shape is not ``(n_labeled,)`` or a weight is not positive and finite.
    """
    if weights is None:
        return None
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (n_labeled,) or not np.all(np.isfinite(weights) & (weights > 0)):
        raise ValueError(
            f"weights must hold one positive finite float per labeled row ({n_labeled}); "
            f"got shape {weights.shape} with minimum "
            f"{float(np.min(weights)) if weights.size else None!r}."
        )
    return weights


def _weighted(rows, weights):
    """``diag(weights) rows``: ``rows`` as they are where ``weights`` is None."""
    if weights is None:
        return rows
    return rows * weights.reshape((-1,) + (1,) * (rows.ndim - 1))


def _gaussian_map(prior, P, targets, gamma, weights=None):
    """Closed form for gr/mgr: ``C = (Lambda + P'WP/g^2)^-1``, ``alpha = C P'W y / g^2``
    (``W`` the diagonal of the labeled rows' weights; the identity without)."""
    WP = _weighted(P, weights)
    H = WP.T @ P / gamma**2
    H[np.diag_indices_from(H)] += prior
    cov = cho_inverse(cholesky(H))
    return cov @ (WP.T @ targets) / gamma**2, cov


class _BinaryProblem:
    """Objective, derivatives and linear algebra of a binary loss in ``alpha``."""

    #: Whether chord steps (reusing a factor) pay: not for an M x M Hessian.
    chord = False

    def __init__(self, loss: BinaryLoss, prior, P, y, gamma, weights=None):
        self.loss, self.prior, self.P, self.y, self.gamma = loss, prior, P, y, gamma
        self.weights = weights  # of the labeled rows' loss terms; None: unit weights

    def start(self, coef_init):
        if coef_init is None:
            return np.zeros(self.prior.size)
        return np.asarray(coef_init, dtype=float).copy()

    def coef(self, x):
        return x

    def objective(self, alpha):
        value = _weighted(self.loss.value(self.P @ alpha, self.y, self.gamma), self.weights)
        return 0.5 * np.dot(self.prior * alpha, alpha) + value.sum()

    def gradient_hessian(self, alpha):
        first, second = self.loss.derivatives(self.P @ alpha, self.y, self.gamma)
        first, second = _weighted(first, self.weights), _weighted(second, self.weights)
        grad = self.prior * alpha + self.P.T @ first
        H = (self.P.T * second) @ self.P
        H[np.diag_indices_from(H)] += self.prior
        return grad, H

    def factor(self, H):
        """Cholesky factor of the Hessian (on the subspace the iterates live in)."""
        return cholesky(H)

    def step(self, factor, grad):
        """``-H^-1 grad`` for the Hessian ``H`` whose factor is given."""
        return cho_solve(factor, -grad)

    def covariance(self, factor):
        return cho_inverse(factor)


def ce_hessian(prior, P, Pi, gamma, weights=None):
    """Hessian of the ce objective, class-major, at softmax rows ``Pi``.

    ``I (x) Lambda_tau + (1/gamma^2) sum_j w_j (diag(pi_j) - pi_j pi_j') (x) p_j p_j'``
    assembled as ``blockdiag(P' diag(w pi_c) P) - Q'WQ`` with ``Q = [pi_c * P]_c``
    (``w_j = 1`` without ``weights``).
    """
    n_labeled, M = P.shape
    n_classes = Pi.shape[1]
    Q = (Pi[:, :, None] * P[:, None, :]).reshape(n_labeled, n_classes * M)
    WQ = _weighted(Q, weights)
    H = -(WQ.T @ Q)
    diagonal_blocks = (WQ.T @ P).reshape(n_classes, M, M)
    for c in range(n_classes):
        H[c * M : (c + 1) * M, c * M : (c + 1) * M] += diagonal_blocks[c]
    H /= gamma**2
    H[np.diag_indices_from(H)] += np.tile(prior, n_classes)
    return H


def ce_reduced_hessian(prior, P, Pi, gamma, weights=None):
    """Hessian of the ce objective on the zero-sum subspace, ``H~ = (E (x) I)' H (E (x) I)``.

    ``H~ = I (x) Lambda_tau + (1/gamma^2) sum_j w_j F_j (x) p_j p_j'`` with ``F_j =
    E' (diag(pi_j) - pi_j pi_j') E`` (``(n_c - 1)``-square; ``w_j = 1`` without
    ``weights``), assembled block by
    block: class block ``(a, b)`` is ``P' diag(F_.ab) P / gamma^2``, one matrix
    product for the ``d (d + 1) / 2`` blocks ``a <= b`` (``d = n_c - 1``).
    Class-major, ``(d M, d M)``.
    """
    n_labeled, M = P.shape
    E = zero_sum_basis(Pi.shape[1])
    d = E.shape[1]
    rows, cols = np.triu_indices(d)
    PiE = Pi @ E
    F = Pi @ (E[:, rows] * E[:, cols]) - PiE[:, rows] * PiE[:, cols]  # (n_labeled, T)
    F = _weighted(F, weights) / gamma**2
    blocks = P.T @ (F[:, :, None] * P[:, None, :]).reshape(n_labeled, -1)  # (M, T M)
    blocks = blocks.reshape(M, rows.size, M).transpose(1, 0, 2)  # (T, M, M), each symmetric
    H = np.empty((d, d, M, M))
    H[rows, cols] = blocks
    H[cols, rows] = blocks
    H = H.transpose(0, 2, 1, 3).reshape(d * M, d * M)
    H[np.diag_indices_from(H)] += np.tile(prior, d)
    return H


class _CrossEntropyProblem(_BinaryProblem):
    """The ce objective in class-major ``a = vec(A)`` (index ``c * M + i``).

    Shifting coefficient ``i`` of every class by the same amount leaves the
    likelihood unchanged (``B_j 1 = 0``), so along these "shift" directions
    ``q_i = (1 (x) e_i) / sqrt(n_c)`` only the prior curves the objective:
    ``H q_i = (lambda_i + tau^2) q_i``, and the MAP has zero class mean. The
    iterates are kept at zero class mean, and Newton's method runs on that
    subspace, ``(E (x) I)`` with ``E`` the orthonormal basis of the zero-sum
    vectors: ``H~ = (E (x) I)' H (E (x) I)``, of size ``(n_c - 1) M``, has no
    ill-conditioning from the flat directions however small ``gamma``. ``H``
    maps each subspace to itself, so the covariance is exactly
    ``H^-1 = (E (x) I) H~^-1 (E (x) I)' + sum_i q_i q_i' / (lambda_i + tau^2)``.

    :meth:`gradient_hessian` gives ``H~`` itself (:func:`ce_reduced_hessian`),
    and the objective comes with its gradient from one pass over the latent
    values.
    """

    chord = True  # a (n_c - 1) M Hessian: its assembly and factor dominate

    def __init__(self, loss: CrossEntropyLoss, prior, P, Y, gamma, weights=None):
        super().__init__(loss, prior, P, Y, gamma, weights)
        self.n_classes, self.M = Y.shape[1], P.shape[1]
        self.basis = zero_sum_basis(self.n_classes)

    def _center(self, a):
        A = a.reshape(self.n_classes, self.M)
        return (A - A.mean(axis=0)).ravel()

    def _reduce(self, a):
        """Coordinates ``(E (x) I)' a`` on the zero-sum subspace."""
        return reduce_classes(a, self.basis)

    def _lift(self, b):
        """``(E (x) I) b``: back to class-major coefficients."""
        return (self.basis @ b.reshape(self.n_classes - 1, -1)).reshape(self.n_classes * self.M, -1)

    def start(self, coef_init):
        if coef_init is None:
            return np.zeros(self.prior.size * self.n_classes)
        return self._center(np.asarray(coef_init, dtype=float).T.ravel())

    def coef(self, x):
        return x.reshape(self.n_classes, self.M).T

    def objective(self, a):
        return self.objective_gradient(a)[0]

    def gradient(self, a):
        return self.objective_gradient(a)[1]

    def objective_gradient(self, a):
        A = self.coef(a)
        value, G = self.loss.value_gradient(self.P @ A, self.y, self.gamma)
        value, G = _weighted(value, self.weights), _weighted(G, self.weights)
        objective = 0.5 * np.sum(self.prior[:, None] * A * A) + value.sum()
        return objective, (self.prior[:, None] * A + self.P.T @ G).T.ravel()

    def gradient_hessian(self, a):
        """The gradient (class-major) and ``H~`` (on the zero-sum subspace)."""
        A = self.coef(a)
        G, Pi = self.loss.derivatives(self.P @ A, self.y, self.gamma)
        grad = self.prior[:, None] * A + self.P.T @ _weighted(G, self.weights)
        H = ce_reduced_hessian(self.prior, self.P, Pi, self.gamma, self.weights)
        return grad.T.ravel(), H

    def factor(self, H):
        """Lower Cholesky factor of ``H~`` (numpy's, which releases the GIL: the
        evidence grid runs fits on several threads)."""
        try:
            return np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            raise ValueError(_SINGULAR) from None

    def step(self, factor, grad):
        """``-H^-1 grad`` by two triangular solves (LAPACK's ``potrs`` is slower here);
        ``factor.T`` is the upper factor in Fortran order."""
        upper = factor.T
        half = blas.dtrsv(upper, self._reduce(-grad), lower=0, trans=1)
        return self._lift(blas.dtrsv(upper, half, lower=0))[:, 0]

    def covariance(self, factor):
        n_c, d, M = self.n_classes, self.n_classes - 1, self.M
        inner = cho_inverse(factor)  # H~^-1, symmetric
        # (E (x) I) inner (E (x) I)': the class rows, then (by symmetry) the class columns
        half = (self.basis @ inner.reshape(d, M * d * M)).reshape(n_c * M, d * M)
        cov = (self.basis @ np.ascontiguousarray(half.T).reshape(d, M * n_c * M)).reshape(
            n_c * M, n_c * M
        )
        cov = 0.5 * (cov + cov.T)
        # + sum_i q_i q_i' / (lambda_i + tau^2): the diagonal of every class block
        diagonal = np.arange(M)
        cov.reshape(n_c, M, n_c, M)[:, diagonal, :, diagonal] += (1.0 / (n_c * self.prior))[
            :, None, None
        ]
        return cov


#: Chord steps reuse the last Cholesky factor while each shrinks the step by
#: at least this factor; otherwise the Hessian is re-evaluated and refactored.
_CHORD_RATE = 0.25


def _newton(problem, x0, max_iter, tol):
    """Damped Newton's method for a smooth strictly convex objective.

    The Hessian is evaluated and factored at the start; for problems with
    ``chord`` set (ce), the following steps are chord steps ``-H_0^-1
    grad(x)`` with that factor (one gradient and two triangular solves each)
    while they contract fast (each at most ``_CHORD_RATE`` times the previous
    one); otherwise, and whenever a chord step meets the tolerance, the
    Hessian is re-evaluated at the current point (plain Newton without
    ``chord``). Every step, Newton or chord, counts as an iteration.
    Converged when the exact Newton step at the current point is at most
    ``tol * (1 + max|x|)`` in every coordinate; that point is returned with the
    Cholesky factor of its Hessian. Backtracking (Armijo)
    never accepts an increase of the objective beyond round-off; if no
    decrease can be found the iteration stops unconverged.
    """
    x = np.array(x0, dtype=float)
    f = problem.objective(x)
    grad, H = problem.gradient_hessian(x)
    factor, exact = problem.factor(H), True
    previous = np.inf
    for it in range(1, max_iter + 1):
        step = problem.step(factor, grad)
        size = np.max(np.abs(step))
        if size <= tol * (1.0 + np.max(np.abs(x))):
            if exact:
                return x, factor, it, True
            grad, H = problem.gradient_hessian(x)
            factor, exact, previous = problem.factor(H), True, np.inf
            continue
        decrement = -np.dot(grad, step)
        roundoff = _ROUNDOFF * (1.0 + abs(f))
        t, grad_new = 1.0, None
        while True:
            x_new = x + t * step
            if t == 1.0 and problem.chord:  # usually accepted: its gradient is next
                f_new, grad_new = problem.objective_gradient(x_new)
            else:
                f_new, grad_new = problem.objective(x_new), None
            if f_new <= f - _ARMIJO * t * decrement or abs(f_new - f) <= roundoff:
                break
            t *= 0.5
            if t < _MIN_STEP:
                if exact:
                    return x, factor, it, False
                break
        if t < _MIN_STEP:  # a chord direction that does not descend: refresh
            grad, H = problem.gradient_hessian(x)
            factor, exact, previous = problem.factor(H), True, np.inf
            continue
        x, f = x_new, f_new
        if not problem.chord or t * size > _CHORD_RATE * previous:
            grad, H = problem.gradient_hessian(x)
            factor, exact, previous = problem.factor(H), True, np.inf
        else:
            grad = problem.gradient(x) if grad_new is None else grad_new
            exact, previous = False, t * size
    if not exact:
        grad, H = problem.gradient_hessian(x)
        factor = problem.factor(H)
    return x, factor, max_iter, False


#: The posterior family of each loss family (the ``family`` of a loss, see
#: :mod:`skmcal.losses`).
FAMILIES = {"rank_one": RankOnePosterior, "softmax": SoftmaxPosterior}


@with_small_algebra
def fit_posterior(
    loss,
    prior,
    eigenvectors,
    labeled,
    targets,
    gamma,
    *,
    coef_init=None,
    max_iter=100,
    tol=1e-10,
    n_threads=None,
    weights=None,
):
    """MAP and Laplace posterior of ``loss`` in spectral coordinates.

    With ``weights``, the loss term of labeled row ``j`` counts ``w_j`` times:
    ``J(alpha) = 1/2 <alpha, Lambda_tau alpha> + sum_j w_j l(p_j' alpha, y_j)``
    (for ``gr``/``mgr``, noise of variance ``gamma^2 / w_j`` at row ``j``). The
    posterior's look-ahead adds a candidate at unit weight.

    Parameters
    ----------
    loss : BinaryLoss or MulticlassLoss
        The likelihood (see :mod:`skmcal.losses`).
    prior : ndarray of shape (M,)
        Diagonal of ``Lambda_tau``: ``eigenvalues + tau**2``.
    eigenvectors : ndarray of shape (n_nodes, M)
        The eigenvector matrix ``V``.
    labeled : ndarray of shape (n_labeled,)
        Node index of each labeled node.
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        ``loss.encode`` of the labels: {-1, +1} for binary losses, one-hot rows
        for multiclass.
    gamma : float
        Loss scale.
    coef_init : ndarray or None
        Starting point for Newton's method (warm start); ignored by the
        closed-form losses.
    max_iter : int
        Maximum number of Newton iterations.
    tol : float
        Stop when every coordinate of the Newton step is at most
        ``tol * (1 + max|coef|)``.
    n_threads : int or None
        Threads of the posterior's candidate scoring (None: the cores the BLAS
        pools may use, ``skmcal._threads.scoring_threads()``).
    weights : ndarray of shape (n_labeled,) or None
        The weight of each labeled row's loss term (positive); None: one each.

    Returns
    -------
    LaplacePosterior
        :class:`~skmcal.posterior.RankOnePosterior` or
        :class:`~skmcal.softmax.SoftmaxPosterior`, by ``loss.family``.
    """
    P = eigenvectors[labeled]
    weights = check_weights(weights, P.shape[0])
    family = FAMILIES[loss.family]
    if loss.closed_form:
        coef, cov = _gaussian_map(prior, P, targets, gamma, weights)
        return family(loss, gamma, eigenvectors, coef, cov, n_threads=n_threads)
    fit = newton_map(
        loss, prior, P, targets, gamma, coef_init=coef_init, max_iter=max_iter, tol=tol,
        weights=weights,
    )
    if not fit.converged:
        warn_user(
            f"Newton's method for the {loss.name!r} loss did not converge in "
            f"max_iter={max_iter} iterations (tol={tol}); increase max_iter.",
            ConvergenceWarning,
        )
    return family(
        loss,
        gamma,
        eigenvectors,
        fit.coef,
        fit.problem.covariance(fit.factor),
        n_iter=fit.n_iter,
        converged=fit.converged,
        n_threads=n_threads,
    )


@dataclass(frozen=True)
class NewtonMap:
    """The MAP of a Newton loss and the Cholesky factor of its Hessian there.

    ``factor`` is the lower factor of the Hessian on the subspace the iterates
    live in (ce: the zero-sum subspace, ``H~``); ``problem.covariance(factor)``
    is the Laplace covariance and :func:`~skmcal.posterior.cho_logdet` of it
    the log determinant of that Hessian, without forming the covariance.
    """

    coef: np.ndarray
    factor: np.ndarray
    problem: _BinaryProblem
    n_iter: int
    converged: bool

    def log_det_hessian(self) -> float:
        """``log|H|`` (binary) or ``log|H~|`` (ce, on the zero-sum subspace)."""
        return cho_logdet(self.factor)


def newton_map(
    loss, prior, P, targets, gamma, *, coef_init=None, max_iter=100, tol=1e-10, weights=None
):
    """MAP of a Newton loss (logistic, probit, ce) by ``_newton()``, with its Hessian factor.

    Parameters as :func:`fit_posterior`, with ``P`` the eigenvector rows of
    the labeled nodes (``weights`` as checked by :func:`check_weights`). A warm
    start worse than the prior mean is replaced by the prior mean. No warning:
    the caller reads ``converged``.
    """
    problem_type = _CrossEntropyProblem if loss.family == "softmax" else _BinaryProblem
    problem = problem_type(loss, prior, P, targets, gamma, weights)
    x0 = problem.start(coef_init)
    if coef_init is not None and not problem.objective(x0) <= problem.objective(0.0 * x0):
        x0 = 0.0 * x0  # a warm start worse than the prior mean: start cold
    x, factor, n_iter, converged = _newton(problem, x0, max_iter, tol)
    return NewtonMap(problem.coef(x), factor, problem, n_iter, converged)


@with_small_algebra
def remainder_variance(eigenvalues, weights, tau, *, trace=None) -> float:
    """Variance of the white noise that stands for the prior's remainder.

    The full graph's prior ``(L + tau^2 I)^-1`` is ``V Lambda_tau^-1 V'``
    plus ``sum_{i > M} v_i v_i' / (lambda_i + tau^2)`` over the eigenpairs not
    kept. With those eigenvalues replaced by their mean ``lbar = (tr L -
    sum_{i <= M} lambda_i) / (n - M)``, the remainder is ``s (I - V V')``,
    ``s = 1 / (lbar + tau^2)``; ``s`` is below every kept ``1 / (lambda_i +
    tau^2)``. Returns 0 when every eigenpair is kept (or when ``lbar`` is not
    above the largest kept eigenvalue, which only round-off at a degenerate
    edge of the spectrum allows).

    Parameters
    ----------
    eigenvalues : ndarray of shape (M,)
        The kept (smallest) eigenvalues of ``L = I - D^-1/2 W D^-1/2``.
    weights : sparse matrix of shape (n_nodes, n_nodes)
        The affinity ``W``.
    tau : float
        The prior's shift.
    trace : float or None
        ``tr L`` where known (:attr:`skmcal.SpectralGraph.laplacian_trace`, kept
        with the graph); None: computed from ``weights``
        (:func:`skmcal.graph.laplacian_trace`, a pass over its entries: 3 ms at
        70,000 nodes).

    Returns
    -------
    float
    """
    n, M = weights.shape[0], np.size(eigenvalues)
    if M >= n:
        return 0.0
    if trace is None:
        trace = laplacian_trace(weights)
    mean = (trace - float(np.sum(eigenvalues))) / (n - M)
    if not mean > float(np.max(eigenvalues)):  # round-off at a degenerate edge: none
        return 0.0
    return 1.0 / (mean + tau**2)


@with_small_algebra
def posterior_around(
    loss, prior, eigenvectors, labeled, targets, gamma, latent, *, n_threads=None,
    offset=None, nugget=0.0, weights=None, **fit_info,
):  # fmt: skip
    """The spectral Laplace covariance around latent values computed by another model.

    With ``nugget``, the covariance of the model whose prior's remainder
    outside ``eigenvectors`` is white noise (``gr``/``mgr``, below).

    A full-graph model (:mod:`skmcal.fullgraph`) gives latent values ``u`` at
    every node but no tractable covariance. Its posterior here is the
    spectral one evaluated at that mean: ``C = (Lambda_tau + V_L' H V_L)^-1``
    with ``H`` the loss curvature at the labeled nodes' latent values (ce:
    the Kronecker form on the zero-sum subspace), ``base = u`` and ``coef =
    0`` (the spectral change that look-aheads accumulate).

    Parameters
    ----------
    loss, prior, eigenvectors, labeled, targets, gamma
        As :func:`fit_posterior`.
    latent : ndarray of shape (n_nodes,) or (n_nodes, n_classes)
        The latent values of every node.
    n_threads : int or None
        As :func:`fit_posterior`.
    offset : tuple (direction, coef) or None
        The class offset the model removed from the targets (``gr``/``mgr``,
        :func:`skmcal.fullgraph.fit_full_graph` with ``free_offset``):
        ``direction`` of shape (n_nodes,) (``sqrt`` of the degrees) and
        ``coef`` (:func:`skmcal.fullgraph.class_offset`). Look-ahead
        pseudo-targets lose the same offset, so that a candidate's latent
        value is compared with the target a label there would have been
        fitted as. ``targets`` are the encoded labels as given (the
        curvature of ``gr``/``mgr`` does not depend on them).
    nugget : float, default=0
        ``s``: the variance of the white noise that stands for the prior's
        remainder outside ``eigenvectors`` (``gr``/``mgr``;
        :func:`remainder_variance`). ``prior`` is then the precision of the
        prior's projection on the eigenvectors, ``1 / prior > s``, and the
        covariance is that of the coefficients with prior variance ``1 /
        prior - s`` and noise ``gamma^2 + s`` at each labeled node
        (:mod:`skmcal.posterior`, "White-noise remainder").
    weights : ndarray of shape (n_labeled,) or None, default=None
        The weight of each label's loss term, as :func:`fit_posterior` (with
        ``nugget``: noise ``gamma^2 / w`` at a node, ``w`` the summed weight of
        its labels; a node labeled twice at weight 1 is one at weight 2).
    **fit_info
        ``n_iter`` and ``converged`` of the model that computed ``latent``.

    Returns
    -------
    LaplacePosterior
    """
    if offset is not None and not loss.closed_form:
        raise ValueError(f"offset takes the losses 'gr' and 'mgr'; got {loss.name!r}.")
    weights = check_weights(weights, np.size(labeled))
    if nugget:
        H, remainder = _remainder_hessian(
            loss, prior, eigenvectors, labeled, gamma, nugget, weights
        )
    else:
        P = eigenvectors[labeled]
        U = latent[labeled]
        if loss.family == "softmax":
            problem = _CrossEntropyProblem(loss, prior, P, targets, gamma)
            H = ce_reduced_hessian(prior, P, loss.proba(U, gamma), gamma, weights)
            cov = problem.covariance(problem.factor(H))
            return SoftmaxPosterior(
                loss, gamma, eigenvectors, np.zeros((prior.size, U.shape[1])), cov,
                base=latent, n_threads=n_threads, **fit_info,
            )  # fmt: skip
        _, curvature = loss.derivatives(U, targets, gamma)
        H = (P.T * _weighted(curvature, weights)) @ P
        H[np.diag_indices_from(H)] += prior
        remainder = {}
    coef = np.zeros((prior.size,) + latent.shape[1:])
    return RankOnePosterior(
        loss, gamma, eigenvectors, coef, cho_inverse(cholesky(H)), base=latent,
        n_threads=n_threads, offset_direction=None if offset is None else offset[0],
        offset_coef=None if offset is None else offset[1], **remainder, **fit_info,
    )  # fmt: skip


def _remainder_hessian(loss, prior, eigenvectors, labeled, gamma, nugget, weights=None):
    """The coefficients' posterior precision of :func:`posterior_around` with a
    white-noise remainder ``nugget`` (``gr``/``mgr``), and the posterior's fields
    that describe the remainder (``nugget_counts``: the summed weight of each
    labeled node's labels, their number without ``weights``)."""
    if not loss.closed_form:
        raise ValueError(f"nugget takes the losses 'gr' and 'mgr'; got {loss.name!r}.")
    if not (np.isfinite(nugget) and nugget > 0):
        raise ValueError(f"nugget must be a positive finite number; got {nugget!r}.")
    variance = 1.0 / np.asarray(prior, dtype=float) - nugget
    if not np.all(variance > 0):
        raise ValueError(
            f"nugget must be below the prior variance 1 / prior of every eigenvector; got "
            f"nugget={nugget!r} and a smallest variance of {float(np.min(1.0 / prior))!r}."
        )
    nodes, inverse = np.unique(np.asarray(labeled, dtype=np.intp), return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=weights, minlength=nodes.size)
    P = eigenvectors[nodes]
    H = (P.T / (gamma**2 / counts + nugget)) @ P
    H[np.diag_indices_from(H)] += 1.0 / variance
    return H, {"nugget": float(nugget), "nugget_nodes": nodes, "nugget_counts": counts}
