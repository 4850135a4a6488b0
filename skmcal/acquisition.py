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

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import entr

from ._threads import small_algebra, with_small_algebra
from .losses import LOSSES

#: ce candidates are scored in chunks of this many, in parallel threads (its
#: per-candidate work is ~M^2 n_c^2); the rank-one losses in chunks of
#: ``RANK_ONE_CHUNK`` in the calling thread (a thread pool costs more than
#: their ~M^2 per candidate gains).
CHUNK = 1024
RANK_ONE_CHUNK = 16384


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


def _by_chunks(score_chunk, nodes, *, parallel):
    """Apply ``score_chunk`` to the candidates a chunk at a time; concatenate.

    With ``parallel`` (ce), chunks of ``CHUNK`` run on a pool of
    ``os.cpu_count()`` threads, each with a single-threaded BLAS (numpy
    releases the GIL in its kernels): parallel on an idle machine, and no
    spinning BLAS threads on a busy one.
    """
    nodes = np.asarray(nodes, dtype=np.intp)
    size = CHUNK if parallel else RANK_ONE_CHUNK
    starts = range(0, nodes.size, size)
    with small_algebra():
        if len(starts) <= 1:
            parts = [score_chunk(nodes)]
        elif not parallel:
            parts = [score_chunk(nodes[s : s + size]) for s in starts]
        else:
            workers = min(len(starts), os.cpu_count() or 1)
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = list(pool.map(lambda s: score_chunk(nodes[s : s + size]), starts))
    return np.concatenate(parts) if parts else np.empty(0)


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

    G2: np.ndarray  # (K, n_c, n_c): V_k C^2 V_k' = D_k' D_k, with D_k = C V_k'
    K: np.ndarray  # (K, n_c, n_c): (I + B G)^-1 B / gamma^2
    step: np.ndarray  # (K, n_c): (I + B G)^-1 (pi - yhat) / gamma; the MAP moves by -D_k step


def _ce_solves(view: PosteriorView, U, G):
    """``(K, step)`` from latent rows ``U`` and ``G_k = V_k C V_k' / g^2``.

    No Cholesky factor of the singular ``B_k = diag(pi) - pi pi'`` is formed:
    the look-ahead step is ``-(1/g) D_k (I + B_k G_k)^-1 (pi_k - yhat_k)`` and
    the covariance drop ``D_k (I + B_k G_k)^-1 B_k D_k' / g^2``.
    """
    g, n_c = view.gamma, view.n_classes
    Pi = LOSSES["ce"].proba(U, g)
    pseudo = np.eye(n_c)[np.argmax(U, axis=1)]
    B = Pi[:, :, None] * (np.eye(n_c)[None] - Pi[:, None, :])
    system = np.eye(n_c)[None] + B @ G
    solved = np.linalg.solve(system, np.concatenate([B, (Pi - pseudo)[:, :, None]], axis=2))
    return solved[:, :, :n_c] / g**2, solved[:, :, n_c] / g


def _ce_form_coefficients(view: PosteriorView):
    """Coefficients that turn products ``v_m v_m'`` into ``V_k C V_k' / g^2`` and ``V_k C^2 V_k'``.

    ``v' X_ch v`` only involves the symmetric part of the block ``X_ch`` and
    the ``M (M + 1) / 2`` products ``v_m v_m'`` with ``m <= m'``; with the
    ``n_c (n_c + 1) / 2`` class pairs ``c <= h`` this halves the work of
    forming ``D_k = C V_k'`` for every candidate. Computed once per scoring.
    """
    n_c, M = view.n_classes, view.eigenvectors.shape[1]
    rows, cols = np.triu_indices(M)
    class_rows, class_cols = np.triu_indices(n_c)

    def coefficients(X):
        blocks = X.reshape(n_c, M, n_c, M).transpose(0, 2, 1, 3)[class_rows, class_cols]
        symmetric = 0.5 * (blocks + blocks.transpose(0, 2, 1))
        return symmetric[:, rows, cols].T

    C = view.cov
    return np.hstack([coefficients(C) / view.gamma**2, coefficients(C @ C)])


def _ce_terms(view: PosteriorView, nodes, coefficients) -> _CETerms:
    """``G_k``, ``G2_k`` for every candidate, then the small solves."""
    n_c, M = view.n_classes, view.eigenvectors.shape[1]
    V = view.eigenvectors[nodes]
    rows, cols = np.triu_indices(M)
    products = V[:, rows] * V[:, cols]
    products[:, rows != cols] *= 2.0
    forms = products @ coefficients
    n_pairs = n_c * (n_c + 1) // 2
    class_rows, class_cols = np.triu_indices(n_c)
    G = np.empty((nodes.size, 2, n_c, n_c))
    G[:, :, class_rows, class_cols] = forms.reshape(nodes.size, 2, n_pairs)
    G[:, :, class_cols, class_rows] = forms.reshape(nodes.size, 2, n_pairs)
    K, step = _ce_solves(view, V @ view.coef, G[:, 0])
    return _CETerms(G2=G[:, 1], K=K, step=step)


def model_change(view: PosteriorView, nodes):
    """Norm of the change of the MAP when each node is added with its pseudo-label.

    Binary: ``|F| / (1 + F' s_k) ||C v_k||``; mgr: ``||C v_k|| ||A' v_k -
    yhat|| / (gamma^2 + s_k)``; ce: ``||(1/g) C V_k' (I + B_k G_k)^-1 (pi_k -
    yhat_k)||``.
    """
    coefficients = _ce_form_coefficients(view) if view.loss == "ce" else None

    def score_chunk(chunk):
        if view.loss == "ce":
            t = _ce_terms(view, chunk, coefficients)
            squared = np.einsum("kc,kch,kh->k", t.step, t.G2, t.step)
            return np.sqrt(np.clip(squared, 0.0, None))
        t = _rank_one_terms(view, chunk)
        grad_norm = np.abs(t.grad) if t.grad.ndim == 1 else np.linalg.norm(t.grad, axis=1)
        return grad_norm / (1.0 + t.curv * t.s) * np.linalg.norm(t.Cv, axis=1)

    return _by_chunks(score_chunk, nodes, parallel=view.loss == "ce")


def _covariance_drop(view: PosteriorView, nodes, direction):
    """Drop of ``tr(C)`` (``direction=None``) or ``w' C w`` under each look-ahead."""
    if view.loss == "ce":
        coefficients = _ce_form_coefficients(view)
        if direction is not None:
            # Per-class survey risk sum_c 1'V C_cc V'1. (The joint direction
            # 1 (x) V'1 shifts every class equally, along which the ce
            # likelihood is flat: its drop is 0 for every candidate.) With
            # a_c = D_k[c-block]' w, a_c[h] = v_k' (C_ch' w).
            n_c, M = view.n_classes, direction.size
            C4 = view.cov.reshape(n_c, M, n_c, M)
            weighted = np.einsum("cmhn,m->nch", C4, direction).reshape(M, n_c * n_c)

    def score_chunk(chunk):
        if view.loss == "ce":
            t = _ce_terms(view, chunk, coefficients)
            if direction is None:
                return np.einsum("kch,khc->k", t.K, t.G2)
            n_c = view.n_classes
            a = (view.eigenvectors[chunk] @ weighted).reshape(-1, n_c, n_c)
            return np.einsum("kch,khg,kcg->k", a, t.K, a)
        t = _rank_one_terms(view, chunk)
        weight = t.curv / (1.0 + t.curv * t.s)
        if direction is None:
            return weight * np.einsum("km,km->k", t.Cv, t.Cv)
        return weight * (t.Cv @ direction) ** 2

    return _by_chunks(score_chunk, nodes, parallel=view.loss == "ce")


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
        n_c, M = view.n_classes, view.eigenvectors.shape[1]
        v = view.eigenvectors[node]
        D = view.cov.reshape(M * n_c, n_c, M) @ v  # C V_k', (M n_c, n_c)
        G = np.einsum("cmh,m->ch", D.reshape(n_c, M, n_c), v)[None] / view.gamma**2
        K, step = _ce_solves(view, (v @ view.coef)[None], G)
        coef = view.coef - (D @ step[0]).reshape(n_c, M).T
        cov = view.cov - D @ K[0] @ D.T
    else:
        t = _rank_one_terms(view, nodes)
        Cv = t.Cv[0]
        weight = 1.0 / (1.0 + t.curv[0] * t.s[0])
        coef = view.coef - weight * np.multiply.outer(Cv, t.grad[0])
        cov = view.cov - (t.curv[0] * weight) * np.outer(Cv, Cv)
    return replace(view, coef=coef, cov=0.5 * (cov + cov.T))
