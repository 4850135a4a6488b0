"""MAP estimate and Laplace posterior in spectral coordinates.

With ``V`` the ``(n_nodes, M)`` eigenvectors of the graph Laplacian,
``Lambda_tau = diag(lambda_i + tau^2)`` and ``P = V[labeled]`` (the rows of the
labeled nodes), every model minimises

    J(alpha) = 1/2 <alpha, Lambda_tau alpha> + sum_j l(p_j' alpha, y_j)

over the spectral coefficients ``alpha``. The Laplace posterior is
``N(alpha_hat, C)`` with ``C`` the inverse Hessian of ``J`` at the MAP
``alpha_hat``. Gaussian losses (``gr``, ``mgr``) are solved in closed form;
the others by Newton's method with a backtracking line search.

Layouts: binary losses use ``alpha`` of shape ``(M,)`` and ``C`` of shape
``(M, M)``; ``mgr`` uses ``A`` of shape ``(M, n_classes)`` with one ``C`` of
shape ``(M, M)`` shared by all classes; ``ce`` uses ``A`` of shape
``(M, n_classes)`` whose covariance is ``(M n_classes, M n_classes)`` in
class-major order (index ``c * M + i`` is coefficient ``i`` of class ``c``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .losses import BinaryLoss, CrossEntropyLoss, MulticlassLoss

_ARMIJO = 1e-4
_MIN_STEP = 2.0**-40


@dataclass
class LaplacePosterior:
    """The fitted Laplace posterior ``N(coef, cov)`` in spectral coordinates.

    Attributes
    ----------
    coef : ndarray of shape (M,) or (M, n_classes)
        The MAP spectral coefficients.
    cov : ndarray of shape (M, M) or (M * n_classes, M * n_classes)
        The inverse Hessian of the objective at the MAP (class-major for ce).
    hessian : ndarray, same shape as ``cov``
        The Hessian itself.
    n_iter : int
        Newton iterations taken (0 for the closed-form losses).
    converged : bool
        Whether the Newton iteration met its tolerance.
    """

    coef: np.ndarray
    cov: np.ndarray
    hessian: np.ndarray
    n_iter: int
    converged: bool


# Dense linear algebra goes through numpy.linalg only. numpy and scipy wheels
# each bundle their own OpenBLAS; alternating between the two makes each wait
# for the other's spinning threads (a 500 x 500 Cholesky from scipy took 0.5 s
# right after a numpy product on 2 cores, instead of 2 ms).


def _spd_inverse(H):
    """Inverse of a symmetric positive definite matrix, symmetrised."""
    inv = np.linalg.inv(H)
    return 0.5 * (inv + inv.T)


def _gaussian_map(prior, P, targets, gamma):
    """Closed form for gr/mgr: ``C = (Lambda + P'P/g^2)^-1``, ``alpha = C P' y / g^2``."""
    H = P.T @ P / gamma**2
    H[np.diag_indices_from(H)] += prior
    cov = _spd_inverse(H)
    coef = cov @ (P.T @ targets) / gamma**2
    return LaplacePosterior(coef=coef, cov=cov, hessian=H, n_iter=0, converged=True)


def _binary_problem(loss: BinaryLoss, prior, P, y, gamma):
    def objective(alpha):
        return 0.5 * np.dot(prior * alpha, alpha) + loss.value(P @ alpha, y, gamma).sum()

    def gradient_hessian(alpha):
        first, second = loss.derivatives(P @ alpha, y, gamma)
        grad = prior * alpha + P.T @ first
        H = (P.T * second) @ P
        H[np.diag_indices_from(H)] += prior
        return grad, H

    return objective, gradient_hessian


def ce_hessian(prior, P, Pi, gamma):
    """Hessian of the ce objective, class-major, at softmax rows ``Pi``.

    ``I (x) Lambda_tau + (1/gamma^2) sum_j (diag(pi_j) - pi_j pi_j') (x) p_j p_j'``
    assembled as ``blockdiag(P' diag(pi_c) P) - Q'Q`` with ``Q = [pi_c * P]_c``.
    """
    n_labeled, M = P.shape
    n_classes = Pi.shape[1]
    Q = (Pi[:, :, None] * P[:, None, :]).reshape(n_labeled, n_classes * M)
    H = -(Q.T @ Q)
    diagonal_blocks = (Q.T @ P).reshape(n_classes, M, M)
    for c in range(n_classes):
        H[c * M : (c + 1) * M, c * M : (c + 1) * M] += diagonal_blocks[c]
    H /= gamma**2
    H[np.diag_indices_from(H)] += np.tile(prior, n_classes)
    return H


def _ce_problem(loss: CrossEntropyLoss, prior, P, Y, gamma):
    n_classes = Y.shape[1]
    M = P.shape[1]

    def unvec(a):
        return a.reshape(n_classes, M).T

    def objective(a):
        A = unvec(a)
        return 0.5 * np.sum(prior[:, None] * A * A) + loss.value(P @ A, Y, gamma).sum()

    def gradient_hessian(a):
        A = unvec(a)
        G, Pi = loss.derivatives(P @ A, Y, gamma)
        grad = prior[:, None] * A + P.T @ G
        return grad.T.ravel(), ce_hessian(prior, P, Pi, gamma)

    return objective, gradient_hessian, unvec


def _newton(objective, gradient_hessian, x0, max_iter, tol):
    """Damped Newton's method for a smooth strictly convex objective.

    Stops when the Newton step is at most ``tol * (1 + max|x|)`` in every
    coordinate; the returned Hessian is evaluated at the returned point.
    """
    x = np.array(x0, dtype=float)
    f = objective(x)
    for it in range(1, max_iter + 1):
        grad, H = gradient_hessian(x)
        step = -np.linalg.solve(H, grad)
        if np.max(np.abs(step)) <= tol * (1.0 + np.max(np.abs(x))):
            x = x + step
            grad, H = gradient_hessian(x)
            return x, H, it, True
        decrement = -np.dot(grad, step)
        t = 1.0
        while True:
            x_new = x + t * step
            f_new = objective(x_new)
            if f_new <= f - _ARMIJO * t * decrement or t < _MIN_STEP:
                break
            if abs(f_new - f) <= 1e-15 * (1.0 + abs(f)):
                break  # the change is at round-off level: accept the step
            t *= 0.5
        x, f = x_new, f_new
    _, H = gradient_hessian(x)
    return x, H, max_iter, False


def fit_posterior(loss, prior, P, targets, gamma, *, coef_init=None, max_iter=100, tol=1e-10):
    """MAP and Laplace posterior of ``loss`` in spectral coordinates.

    Parameters
    ----------
    loss : BinaryLoss or MulticlassLoss
        The likelihood (see :mod:`skmcal.losses`).
    prior : ndarray of shape (M,)
        Diagonal of ``Lambda_tau``: ``eigenvalues + tau**2``.
    P : ndarray of shape (n_labeled, M)
        Rows of the eigenvector matrix at the labeled nodes.
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        Labels in {-1, +1} for binary losses, one-hot rows for multiclass.
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

    Returns
    -------
    LaplacePosterior
    """
    if loss.closed_form:
        return _gaussian_map(prior, P, targets, gamma)
    if isinstance(loss, MulticlassLoss):
        objective, gradient_hessian, unvec = _ce_problem(loss, prior, P, targets, gamma)
        n_params = prior.size * targets.shape[1]
        x0 = np.zeros(n_params) if coef_init is None else np.asarray(coef_init).T.ravel()
    else:
        objective, gradient_hessian = _binary_problem(loss, prior, P, targets, gamma)
        unvec = None
        x0 = np.zeros(prior.size) if coef_init is None else np.asarray(coef_init, dtype=float)
    x, H, n_iter, converged = _newton(objective, gradient_hessian, x0, max_iter, tol)
    if not converged:
        warnings.warn(
            f"Newton's method for the {loss.name!r} loss did not converge in "
            f"max_iter={max_iter} iterations (tol={tol}); increase max_iter.",
            ConvergenceWarning,
            stacklevel=3,
        )
    coef = x if unvec is None else unvec(x)
    return LaplacePosterior(
        coef=coef, cov=_spd_inverse(H), hessian=H, n_iter=n_iter, converged=converged
    )
