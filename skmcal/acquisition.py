"""Acquisition values on a Laplace posterior, vectorised over candidate nodes.

Each function takes a :class:`PosteriorView` (the spectrum, the MAP and the
covariance of a fitted model) and an array of candidate node indices, and
returns one value per candidate; larger is better. The formulas are those of
``MATH.md``:

- model change: the norm of the change of the MAP when the candidate is added
  with its pseudo-label (exact for ``gr``/``mgr``, one Newton step otherwise);
- V-opt / Sigma-opt: the drop in ``tr(V C V')`` / ``1' V C V' 1`` under the
  same look-ahead covariance update (``<V'1, C v_k>``, not the paper's
  ``<1, C v_k>``);
- uncertainty: smallest margin, entropy or least confidence.

:func:`look_ahead` applies the update itself, for greedy batches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import entr

from ._threads import small_algebra, with_small_algebra
from .losses import LOSSES

#: Candidates are scored in chunks of this many (bounds the memory of ce).
CHUNK = 1024


@dataclass(frozen=True)
class PosteriorView:
    """What the acquisition functions read from a fitted classifier.

    Attributes
    ----------
    loss : str
        One of ``gr``, ``logistic``, ``probit``, ``mgr``, ``ce``.
    gamma : float
        Loss scale.
    eigenvectors : ndarray of shape (n_nodes, M)
    coef : ndarray of shape (M,) or (M, n_classes)
    cov : ndarray of shape (M, M) or (M * n_classes, M * n_classes)
        Class-major for ``ce``.
    """

    loss: str
    gamma: float
    eigenvectors: np.ndarray
    coef: np.ndarray
    cov: np.ndarray

    @classmethod
    def from_classifier(cls, clf):
        """The view of a fitted :class:`~skmcal.SpectralGraphClassifier`."""
        return cls(
            loss=clf.loss,
            gamma=clf.gamma_,
            eigenvectors=clf.eigenvectors_,
            coef=clf.posterior_.coef,
            cov=clf.posterior_.cov,
        )

    @property
    def n_classes(self) -> int:
        """Number of classes (2 for binary losses)."""
        return 2 if self.coef.ndim == 1 else self.coef.shape[1]

    def latent(self, nodes):
        """Latent values at the nodes: ``(K,)`` binary, ``(K, n_classes)`` otherwise."""
        return self.eigenvectors[nodes] @ self.coef

    def column_sums(self):
        """``V' 1``, the spectral coordinates of the all-ones vector."""
        return self.eigenvectors.sum(axis=0)


def _by_chunks(score_chunk, nodes):
    """Apply ``score_chunk`` to the candidates ``CHUNK`` at a time; concatenate."""
    nodes = np.asarray(nodes, dtype=np.intp)
    out = np.empty(nodes.size)
    with small_algebra():
        for start in range(0, nodes.size, CHUNK):
            out[start : start + CHUNK] = score_chunk(nodes[start : start + CHUNK])
    return out


@dataclass
class _Terms:
    """Per-candidate look-ahead quantities of the rank-one losses.

    ``grad`` is the loss gradient at the pseudo-label (``(K,)`` binary,
    ``(K, n_classes)`` for mgr), ``curv`` its second derivative ``F'``,
    ``Cv`` the rows ``C v_k`` and ``s`` the values ``v_k' C v_k``.
    """

    grad: np.ndarray
    curv: np.ndarray
    Cv: np.ndarray
    s: np.ndarray
    pseudo: np.ndarray


def _rank_one_terms(view: PosteriorView, nodes) -> _Terms:
    V = view.eigenvectors[nodes]
    Cv = V @ view.cov
    s = np.einsum("km,km->k", Cv, V)
    u = V @ view.coef
    if view.loss == "mgr":
        pseudo = np.eye(view.n_classes)[np.argmax(u, axis=1)]
        grad = (u - pseudo) / view.gamma**2
        curv = np.full(nodes.size, 1.0 / view.gamma**2)
    else:
        pseudo = np.where(u >= 0, 1.0, -1.0)
        grad, curv = LOSSES[view.loss].derivatives(u, pseudo, view.gamma)
    return _Terms(grad=grad, curv=curv, Cv=Cv, s=s, pseudo=pseudo)


@dataclass
class _CETerms:
    """Per-candidate look-ahead quantities of ce (see :func:`_ce_terms`)."""

    D: np.ndarray  # (K, M n_c, n_c): C V_k'
    K: np.ndarray  # (K, n_c, n_c): (I + B G)^-1 B / gamma^2
    step: np.ndarray  # (K, n_c): (I + B G)^-1 (pi - yhat) / gamma
    pseudo: np.ndarray  # (K,): argmax class


def _ce_terms(view: PosteriorView, nodes) -> _CETerms:
    """``D_k = C V_k'``, ``G_k = V_k C V_k' / g^2``, ``B_k``, and the solves.

    No Cholesky factor of the singular ``B_k`` is formed: the look-ahead step
    is ``-(1/g) D_k (I + B_k G_k)^-1 (pi_k - yhat_k)`` and the covariance
    drop ``D_k (I + B_k G_k)^-1 B_k D_k' / g^2``.
    """
    g = view.gamma
    n_c = view.n_classes
    M = view.eigenvectors.shape[1]
    V = view.eigenvectors[nodes]
    # D[k, p, c] = sum_m C[p, c*M + m] V[k, m]: one matrix product, k-major.
    D = (V @ view.cov.reshape(M * n_c * n_c, M).T).reshape(nodes.size, M * n_c, n_c)
    # G[k, c, h] = V[k] . D[k, c*M:(c+1)*M, h] / g^2
    G = (V[:, None, None, :] @ D.reshape(nodes.size, n_c, M, n_c))[:, :, 0, :] / g**2
    U = V @ view.coef
    Pi = LOSSES["ce"].proba(U, g)
    labels = np.argmax(U, axis=1)
    pseudo = np.eye(n_c)[labels]
    B = Pi[:, :, None] * (np.eye(n_c)[None] - Pi[:, None, :])
    system = np.eye(n_c)[None] + B @ G
    solved = np.linalg.solve(system, np.concatenate([B, (Pi - pseudo)[:, :, None]], axis=2))
    K = solved[:, :, :n_c] / g**2
    step = solved[:, :, n_c] / g
    return _CETerms(D=D, K=K, step=step, pseudo=labels)


def model_change(view: PosteriorView, nodes):
    """Norm of the change of the MAP when each node is added with its pseudo-label.

    Binary: ``|F| / (1 + F' s_k) ||C v_k||``; mgr: ``||C v_k|| ||A' v_k -
    yhat|| / (gamma^2 + s_k)``; ce: ``||(1/g) C V_k' (I + B_k G_k)^-1 (pi_k -
    yhat_k)||``.
    """

    def score_chunk(chunk):
        if view.loss == "ce":
            t = _ce_terms(view, chunk)
            return np.linalg.norm((t.D @ t.step[:, :, None])[..., 0], axis=1)
        t = _rank_one_terms(view, chunk)
        grad_norm = np.abs(t.grad) if t.grad.ndim == 1 else np.linalg.norm(t.grad, axis=1)
        return grad_norm / (1.0 + t.curv * t.s) * np.linalg.norm(t.Cv, axis=1)

    return _by_chunks(score_chunk, nodes)


def _covariance_drop(view: PosteriorView, nodes, direction):
    """Drop of ``tr(C)`` (``direction=None``) or ``w' C w`` under each look-ahead."""

    def score_chunk(chunk):
        if view.loss == "ce":
            t = _ce_terms(view, chunk)
            if direction is None:
                return np.einsum("kch,khc->k", t.K, np.swapaxes(t.D, 1, 2) @ t.D)
            # Per-class survey risk sum_c 1'V C_cc V'1. (The joint direction
            # 1 (x) V'1 shifts every class equally, along which the ce
            # likelihood is flat: its drop is 0 for every candidate.)
            n_c, M = view.n_classes, direction.size
            a = np.einsum("kcmh,m->kch", t.D.reshape(-1, n_c, M, n_c), direction)
            return np.einsum("kch,khg,kcg->k", a, t.K, a)
        t = _rank_one_terms(view, chunk)
        weight = t.curv / (1.0 + t.curv * t.s)
        if direction is None:
            return weight * np.einsum("km,km->k", t.Cv, t.Cv)
        return weight * (t.Cv @ direction) ** 2

    return _by_chunks(score_chunk, nodes)


def vopt(view: PosteriorView, nodes):
    """V-opt: drop in ``tr(V C V')`` (the total posterior variance) per node.

    ``F' ||C v_k||^2 / (1 + F' s_k)``, with ``F' = 1/gamma^2`` for gr/mgr
    (exact) and the loss curvature at the pseudo-label otherwise (Laplace).
    """
    return _covariance_drop(view, nodes, None)


def sopt(view: PosteriorView, nodes):
    """Sigma-opt: drop in ``1' V C V' 1`` (the survey risk) per node.

    ``F' <V'1, C v_k>^2 / (1 + F' s_k)`` (MATH.md corrects the paper's
    ``<1, C v_k>``); for mgr, whose classes share ``C``, the same value. For
    ce the survey risk is summed over the classes, ``sum_c 1'V C_cc V'1``:
    the drop is ``sum_c a_c' K_k a_c`` with ``a_c = (C V_k')_c' V'1``.
    """
    return _covariance_drop(view, nodes, view.column_sums())


UNCERTAINTY_MEASURES = ("margin", "entropy", "least_confident")


def uncertainty(view: PosteriorView, nodes, measure="margin"):
    """Uncertainty of each node: larger is more uncertain.

    ``margin``: minus the gap between the two largest latent class values
    (binary: ``-|u|``); ``entropy``: entropy of the class probabilities of
    ``predict_proba``; ``least_confident``: one minus the largest of them.
    """
    nodes = np.asarray(nodes, dtype=np.intp)
    U = view.latent(nodes)
    if measure == "margin":
        if U.ndim == 1:
            return -np.abs(U)
        top2 = np.partition(U, U.shape[1] - 2, axis=1)[:, -2:]
        return -(top2[:, 1] - top2[:, 0])
    loss = LOSSES[view.loss]
    if U.ndim == 1:
        proba = np.column_stack(
            [loss.proba_positive(-U, view.gamma), loss.proba_positive(U, view.gamma)]
        )
    else:
        proba = loss.proba(U, view.gamma)
    if measure == "entropy":
        return entr(proba).sum(axis=1)
    if measure == "least_confident":
        return 1.0 - proba.max(axis=1)
    raise ValueError(f"measure must be one of {UNCERTAINTY_MEASURES}; got {measure!r}.")


@with_small_algebra
def look_ahead(view: PosteriorView, node) -> PosteriorView:
    """The posterior after adding ``node`` with its pseudo-label.

    gr/mgr: the exact refit. logistic/probit/ce: one Newton step from the MAP
    and the covariance at the old MAP plus the new curvature (the same
    quantities the acquisition values use).
    """
    nodes = np.array([node], dtype=np.intp)
    if view.loss == "ce":
        t = _ce_terms(view, nodes)
        D, n_c = t.D[0], view.n_classes
        M = view.eigenvectors.shape[1]
        delta = -D @ t.step[0]
        coef = view.coef + delta.reshape(n_c, M).T
        cov = view.cov - D @ t.K[0] @ D.T
    else:
        t = _rank_one_terms(view, nodes)
        Cv = t.Cv[0]
        weight = 1.0 / (1.0 + t.curv[0] * t.s[0])
        coef = view.coef - weight * np.multiply.outer(Cv, t.grad[0])
        cov = view.cov - (t.curv[0] * weight) * np.outer(Cv, Cv)
    return replace(view, coef=coef, cov=0.5 * (cov + cov.T))
