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
from .posterior import reduce_classes, zero_sum_basis

#: The rank-one losses score ``SCORE_CHUNK`` candidates at a time in the
#: calling thread (~M^2 work per candidate: a thread pool would cost more than
#: it gains). ce (~M^2 n_c^2 per candidate) scores pieces of about
#: ``CE_CHUNK`` candidates on a pool of ``os.cpu_count()`` threads: large
#: pieces, so that its many small per-candidate numpy operations run over
#: long arrays (their GIL-bound overhead stays small).
SCORE_CHUNK = 16384
CE_CHUNK = 2048

#: ce with ``top``: above ``SCREEN_MIN`` candidates, screen in float32 and
#: rescore in float64 those within ``SCREEN_RTOL`` (relative to the largest
#: value) of the ``top``-th (see :func:`_ce_values`).
SCREEN_MIN = 1024
SCREEN_RTOL = 1e-3

#: Below this many nodes the exact ce forms come from ``C V_k'`` directly
#: (``O(M^2 n_c^2)`` per node), above it from the products ``v_m v_m'`` with
#: coefficients set up once per scoring (``O(M^3 n_c^3)``).
DIRECT_MAX = 256


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
    ce_forms : _CEForms or None
        ce only: the quadratic forms of some nodes under ``cov``, kept up to
        date by :func:`look_ahead` (see :func:`with_ce_forms`).
    """

    loss: str
    gamma: float
    eigenvectors: np.ndarray
    coef: np.ndarray
    cov: np.ndarray
    ce_forms: _CEForms | None = None

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
    """Apply ``score_chunk`` to ``SCORE_CHUNK`` candidates at a time; concatenate."""
    nodes = np.asarray(nodes, dtype=np.intp)
    with small_algebra():
        parts = [score_chunk(nodes[s : s + SCORE_CHUNK]) for s in range(0, nodes.size, SCORE_CHUNK)]
    return np.concatenate(parts) if parts else np.empty(0)


def _in_pieces(function, nodes):
    """``function(piece)`` over pieces of about ``CE_CHUNK`` nodes, concatenated on the last axis.

    The pieces run on a pool of ``os.cpu_count()`` threads (numpy releases the
    GIL in its kernels), each with a single-threaded BLAS: parallel on an idle
    machine, and no spinning BLAS threads on a busy one.
    """
    n_pieces = max(1, -(-nodes.size // CE_CHUNK))
    pieces = np.array_split(nodes, n_pieces)
    workers = min(n_pieces, os.cpu_count() or 1)
    with small_algebra():
        if workers <= 1:
            parts = [function(piece) for piece in pieces]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = list(pool.map(function, pieces))
    return np.concatenate(parts, axis=-1)


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


def _spd_solve_batched(A, B):
    """``A_k^-1 B_k`` for a stack of small symmetric positive definite matrices.

    Batch-last layout: ``A`` is ``(n, n, K)`` and ``B`` is ``(n, r, K)``.
    Gaussian elimination without pivoting (stable for positive definite
    matrices), vectorised over the stack: a few numpy operations per row, each
    over ``K`` contiguous values, instead of one LAPACK call per matrix.
    """
    A, X = A.copy(), B.copy()
    n = A.shape[0]
    for p in range(n - 1):
        factor = A[p + 1 :, p] / A[p, p]
        A[p + 1 :, p + 1 :] -= factor[:, None] * A[p, p + 1 :][None]
        X[p + 1 :] -= factor[:, None] * X[p][None]
    for p in range(n - 1, -1, -1):
        if p < n - 1:
            X[p] -= np.einsum("jk,jrk->rk", A[p, p + 1 :], X[p + 1 :])
        X[p] /= A[p, p]
    return X


@dataclass
class _CETerms:
    """Per-candidate look-ahead quantities of ce, on the zero-sum subspace.

    Batch-last: candidate ``k`` is the last index. With ``E`` the basis of
    :func:`skmcal.posterior.zero_sum_basis`, ``V_k = I (x) v_k'``, ``G_k = V_k C V_k' / g^2``
    and ``B_k = diag(pi_k) - pi_k pi_k'``: ``G2 = E' V_k C^2 V_k' E``,
    ``K = E' (I + B_k G_k)^-1 B_k E / g^2`` (None when not asked for) and
    ``step = E' (I + B_k G_k)^-1 (pi_k - yhat_k) / g``. The look-ahead MAP is
    ``alpha - C V_k' E step`` and its covariance ``C - C V_k' E K E' V_k C``.
    """

    G2: np.ndarray  # (n_c - 1, n_c - 1, K)
    K: np.ndarray | None  # (n_c - 1, n_c - 1, K)
    step: np.ndarray  # (n_c - 1, K)


def _ce_solves(view: PosteriorView, U, G, *, need_K=True):
    """``(K, step)`` of :class:`_CETerms` from latent rows ``U`` and ``E' G_k E``.

    ``U`` is ``(K, n_c)``, ``G`` is ``(n_c - 1, n_c - 1, K)``. Every vector in
    these formulas sums to zero over the classes (``B_k 1 = 0`` and ``pi_k -
    yhat_k`` sums to 0), so they live on the zero-sum subspace, where ``C`` has
    no flat direction. ``B_k = F F'`` with ``F = diag(s) (I - s s')``, ``s =
    sqrt(pi_k)``; by Woodbury ``(I + B G)^-1 = I - F N^-1 F' G`` with ``N = I +
    F' G F``, positive definite with eigenvalues >= 1 (no factor of the
    singular ``B_k`` is needed), and ``(I + B G)^-1 B = F N^-1 F'``.
    """
    g, n_c = view.gamma, view.n_classes
    E = zero_sum_basis(n_c).astype(G.dtype)
    Pi = LOSSES["ce"].proba(U, g).T.astype(G.dtype)  # (n_c, K)
    # E' F = E' diag(s) - (E' pi) s', i.e. [E' F]_ah = s_h (E_ha - (E' pi)_a)
    mean = E.T @ Pi
    F = (E.T[:, :, None] - mean[:, None, :]) * np.sqrt(Pi)[None]  # (n_c - 1, n_c, K)
    residual = mean - E.T[:, np.argmax(U, axis=1)]  # E' (pi - yhat), (n_c - 1, K)
    GF = np.einsum("abk,bhk->ahk", G, F)
    N = np.einsum("ahk,agk->hgk", F, GF)
    N[np.arange(n_c), np.arange(n_c)] += 1.0
    rhs = np.einsum("ahk,ak->hk", GF, residual)[:, None]
    if need_K:
        rhs = np.concatenate([rhs, F.transpose(1, 0, 2)], axis=1)
    Z = _spd_solve_batched(N, rhs)
    step = (residual - np.einsum("ahk,hk->ak", F, Z[:, 0])) / g
    if not need_K:
        return None, step
    K = np.einsum("ahk,hbk->abk", F, Z[:, 1:]) / g**2
    return 0.5 * (K + K.transpose(1, 0, 2)), step


def _ce_form_coefficients(view: PosteriorView):
    """Coefficients that turn products ``v_m v_m'`` into ``E' G_k E`` and ``E' G2_k E``.

    Returns the ``(n_c (n_c - 1), M (M + 1) / 2)`` matrix whose product with
    the column of products ``v_m v_m'`` (``m <= m'``, ``np.triu_indices``
    order) of a node is the upper triangles of both forms.

    On the zero-sum subspace (basis ``E``) the covariance ``C~ = (E (x) I)' C
    (E (x) I)`` has ``(n_c - 1) n_c / 2`` class blocks ``C~_ch`` (``c <= h``), and
    ``v' C~_ch v`` only involves the symmetric part of the block and the
    ``M (M + 1) / 2`` products ``v_m v_m'`` with ``m <= m'`` (off-diagonal
    ones counted twice: their coefficient is doubled here). ``C^2`` is
    projected the same way, as ``Y Y'`` with ``Y = (E (x) I)' C``. Computed
    once per scoring.
    """
    n_c, M = view.n_classes, view.eigenvectors.shape[1]
    d = n_c - 1
    E = zero_sum_basis(n_c)
    rows, cols = np.triu_indices(M)
    class_rows, class_cols = np.triu_indices(d)
    doubled = np.where(rows == cols, 1.0, 2.0)

    def coefficients(X):
        blocks = X.reshape(d, M, d, M).transpose(0, 2, 1, 3)[class_rows, class_cols]
        symmetric = 0.5 * (blocks + blocks.transpose(0, 2, 1))
        return symmetric[:, rows, cols].T * doubled[:, None]

    Y = reduce_classes(view.cov, E)
    projected = reduce_classes(Y.T, E).T  # (E (x) I)' C (E (x) I)
    both = np.vstack([coefficients(projected).T / view.gamma**2, coefficients(Y @ Y.T).T])
    return np.ascontiguousarray(both)


@dataclass(frozen=True)
class _CEForms:
    """float32 ``E' G_k E`` and ``E' G2_k E`` (``(n_c - 1, n_c - 1, n)`` each) of sorted ``nodes``.

    Used to screen candidates only: the values that decide are recomputed
    exactly (see :func:`_ce_values`).
    """

    nodes: np.ndarray
    G: np.ndarray
    G2: np.ndarray
    Vt: np.ndarray  # float32 eigenvector rows of the nodes, transposed: (M, n)

    def covers(self, nodes) -> bool:
        position = np.searchsorted(self.nodes, nodes)
        return bool(np.all(position < self.nodes.size)) and np.array_equal(
            self.nodes[np.minimum(position, self.nodes.size - 1)], nodes
        )

    def take(self, nodes):
        position = np.searchsorted(self.nodes, nodes)
        # np.take keeps the batch-last layout contiguous (G[:, :, position] does not)
        return np.take(self.G, position, axis=2), np.take(self.G2, position, axis=2)


def _ce_direct(view: PosteriorView, nodes):
    """``(E' G_k E, E' G2_k E, D_k)`` of a few nodes, from ``D_k = C V_k' E``.

    ``D_k`` is ``(n_c M, n_c - 1)`` (stacked: ``(n_c M, n_c - 1, K)``);
    ``E' G_k E = E' V_k D_k / g^2`` and ``E' G2_k E = D_k' D_k``. ``O(M^2
    n_c^2)`` per node and no set-up: cheaper than the products of
    :func:`_ce_form_coefficients` for fewer than ``DIRECT_MAX`` nodes.
    """
    n_c, M = view.n_classes, view.eigenvectors.shape[1]
    E = zero_sum_basis(n_c)
    d = n_c - 1
    V = view.eigenvectors[nodes]  # (K, M)
    # (D_k)' = (I (x) v_k') Y with Y = (E' (x) I) C: one product for all nodes
    Y = reduce_classes(view.cov, E)  # (d M, n_c M)
    Dt = (V @ Y.reshape(d, M, n_c * M).transpose(1, 0, 2).reshape(M, -1)).reshape(-1, d, n_c * M)
    per_class = np.einsum("kbcm,km->kbc", Dt.reshape(-1, d, n_c, M), V)  # (V_k D_k)'
    G = (per_class @ E).transpose(2, 1, 0) / view.gamma**2  # E' V_k D_k, batch-last
    G2 = (Dt @ Dt.transpose(0, 2, 1)).transpose(1, 2, 0)
    D = Dt.transpose(2, 1, 0)  # (n_c M, d, K)
    return 0.5 * (G + G.transpose(1, 0, 2)), np.ascontiguousarray(G2), D


def _ce_forms(view: PosteriorView, nodes, source):
    """``(E' G_k E, E' G2_k E)`` of the nodes, each ``(n_c - 1, n_c - 1, K)``.

    ``source``: None (exact, :func:`_ce_direct`), ``"cache"`` (float32, from
    ``view.ce_forms``) or the coefficients of :func:`_ce_form_coefficients`
    (in their precision), applied to the products ``v_m v_m'``.
    """
    if source is None:
        return _ce_direct(view, nodes)[:2]
    if isinstance(source, str):
        return view.ce_forms.take(nodes)
    G = _product_forms(view, nodes, source)
    return G[0], G[1]


def _product_forms(view: PosteriorView, nodes, source):
    """Both forms of the nodes from the products ``v_m v_m'``, ``(2, n_c - 1, n_c - 1, K)``."""
    V = view.eigenvectors[nodes]
    n_nodes, M = V.shape
    d = view.n_classes - 1
    dtype = source.dtype
    Vt = np.ascontiguousarray(V.T, dtype=dtype)
    products = np.empty((M * (M + 1) // 2, n_nodes), dtype=dtype)
    row = 0
    for m in range(M):
        np.multiply(Vt[m], Vt[m:], out=products[row : row + M - m])
        row += M - m
    class_rows, class_cols = np.triu_indices(d)
    forms = (source @ products).reshape(2, class_rows.size, n_nodes)
    G = np.empty((2, d, d, n_nodes), dtype=dtype)
    G[:, class_rows, class_cols] = forms
    G[:, class_cols, class_rows] = forms
    return G


def _ce_terms(view: PosteriorView, nodes, source, *, need_K=True) -> _CETerms:
    """The forms of every node (:func:`_ce_forms`), then the small solves."""
    G, G2 = _ce_forms(view, nodes, source)
    K, step = _ce_solves(view, view.eigenvectors[nodes] @ view.coef, G, need_K=need_K)
    return _CETerms(G2=G2, K=K, step=step)


def with_ce_forms(view: PosteriorView, nodes) -> PosteriorView:
    """The view with float32 ce forms of ``nodes``, computed once, for greedy batches.

    :func:`look_ahead` updates them through the rank ``n_c - 1`` change of the
    covariance (``O(M n_c^2)`` per node) instead of the screening pass of every
    greedy step recomputing them (``O(M^2 n_c^2)``). A no-op for other losses.
    """
    if view.loss != "ce":
        return view
    nodes = np.unique(np.asarray(nodes, dtype=np.intp))
    source = _ce_form_coefficients(view).astype(np.float32)
    G, G2 = _in_pieces(lambda piece: _product_forms(view, piece, source), nodes)
    Vt = np.ascontiguousarray(view.eigenvectors[nodes].T, dtype=np.float32)
    return replace(view, ce_forms=_CEForms(nodes=nodes, G=G, G2=G2, Vt=Vt))


def _updated_forms(view: PosteriorView, D, K) -> _CEForms:
    """The (float32) forms of ``view.ce_forms`` under ``C - D K D'``.

    With ``Y_k = E' V_k D`` and ``Z_k = E' V_k C D``: ``G_k - Y_k K Y_k' / g^2``
    and ``G2_k - Z_k K Y_k' - Y_k K Z_k' + Y_k K (D'D) K Y_k'`` (the square of
    the new covariance). ``E' V_k X = v_k' X~`` with ``X~ = (E' (x) I) X``
    folded once, so ``Y`` and ``Z`` of every node are one matrix product.
    Batch-last, like the forms.
    """
    forms = view.ce_forms
    n_c, M = view.n_classes, view.eigenvectors.shape[1]
    d = n_c - 1
    X = np.hstack([D, view.cov @ D])  # (n_c M, 2d)
    folded = (zero_sum_basis(n_c).T @ X.reshape(n_c, M * 2 * d)).reshape(d, M, 2 * d)
    folded = folded.transpose(0, 2, 1).reshape(d * 2 * d, M).astype(np.float32)
    YZ = (folded @ forms.Vt).reshape(d, 2 * d, -1)  # [a, b, k] = (E' V_k X)_ab
    Y, Z = YZ[:, :d], YZ[:, d:]
    KT = K.T.astype(np.float32)
    YK = np.matmul(KT, Y)  # [a, c, k] = sum_b Y[a, b, k] K[b, c]
    ZK = np.matmul(KT, Z)
    YKDD = np.matmul((D.T @ D).astype(np.float32), YK)  # [a, e, k] = sum_c YK[a, c, k] DD[c, e]
    G = forms.G - np.einsum("ack,eck->aek", YK, Y) / np.float32(view.gamma**2)
    ZKY = np.einsum("ack,eck->aek", ZK, Y)
    G2 = forms.G2 - ZKY - ZKY.transpose(1, 0, 2) + np.einsum("ack,eck->aek", YKDD, YK)
    return replace(forms, G=G, G2=G2)


def _ce_values(view: PosteriorView, nodes, value_chunk, top):
    """ce acquisition values, exact where they matter for choosing ``top`` nodes.

    ``value_chunk(chunk, source)`` gives the values of a chunk of nodes from
    the forms of ``source`` (see :func:`_ce_forms`). With ``top`` None (or at
    most ``SCREEN_MIN`` nodes and no float32 forms in ``view``) every value is
    computed in float64. Otherwise every node is first scored in float32 (half
    the time of the ``M^2 n_c^2`` products per node, or from the forms kept in
    ``view.ce_forms``), and the nodes whose float32 value is within
    ``SCREEN_RTOL * max`` of the ``top``-th largest are rescored exactly: as
    long as the float32 error stays below that margin (it is ~1e-6 of the
    largest value), the ``top`` largest of the returned values are those of
    the exact values, and are exact; the other values keep float32 accuracy.
    """
    nodes = np.asarray(nodes, dtype=np.intp)

    def values_in(source, which):
        return _in_pieces(lambda piece: value_chunk(piece, source), which)

    def exact(which):
        return values_in(None if which.size <= DIRECT_MAX else _ce_form_coefficients(view), which)

    cached = view.ce_forms is not None and view.ce_forms.covers(nodes)
    if top is None or (nodes.size <= max(SCREEN_MIN, top) and not cached):
        return exact(nodes)
    source = "cache" if cached else _ce_form_coefficients(view).astype(np.float32)
    with np.errstate(all="ignore"):  # overflow is detected below
        values = values_in(source, nodes).astype(np.float64)
    if not np.all(np.isfinite(values)):  # float32 overflow: no screening
        return exact(nodes)
    top = min(top, values.size)
    kth = np.partition(values, values.size - top)[values.size - top]
    shortlist = np.flatnonzero(values >= kth - SCREEN_RTOL * max(values.max(), 0.0))
    values[shortlist] = exact(nodes[shortlist])
    return values


def model_change(view: PosteriorView, nodes, *, top=None):
    """Norm of the change of the MAP when each node is added with its pseudo-label.

    Binary: ``|F| / (1 + F' s_k) ||C v_k||``; mgr: ``||C v_k|| ||A' v_k -
    yhat|| / (gamma^2 + s_k)``; ce: ``||(1/g) C V_k' (I + B_k G_k)^-1 (pi_k -
    yhat_k)||``.

    ``top`` (int or None): only the ``top`` largest values are needed exactly
    (ce screens the others in single precision; see :func:`_ce_values`).
    """
    if view.loss == "ce":

        def value_chunk(chunk, source):
            t = _ce_terms(view, chunk, source, need_K=False)
            squared = np.einsum("ak,abk,bk->k", t.step, t.G2, t.step)
            return np.sqrt(np.clip(squared, 0.0, None))

        return _ce_values(view, nodes, value_chunk, top)

    def score_chunk(chunk):
        t = _rank_one_terms(view, chunk)
        grad_norm = np.abs(t.grad) if t.grad.ndim == 1 else np.linalg.norm(t.grad, axis=1)
        return grad_norm / (1.0 + t.curv * t.s) * np.linalg.norm(t.Cv, axis=1)

    return _by_chunks(score_chunk, nodes)


def _covariance_drop(view: PosteriorView, nodes, direction, top):
    """Drop of ``tr(C)`` (``direction=None``) or ``w' C w`` under each look-ahead."""
    if view.loss == "ce":
        n_c = view.n_classes
        if direction is not None:
            # Per-class survey risk sum_c 1'V C_cc V'1. (The joint direction
            # 1 (x) V'1 shifts every class equally, along which the ce
            # likelihood is flat: its drop is 0 for every candidate.) With
            # a_c = D_k[c-block]' w, a_c[h] = v_k' (C_ch' w), projected on the
            # zero-sum subspace where K acts.
            M = direction.size
            C4 = view.cov.reshape(n_c, M, n_c, M)
            weighted = np.einsum("cmhn,m->nch", C4, direction) @ zero_sum_basis(n_c)

        def value_chunk(chunk, source):
            t = _ce_terms(view, chunk, source)
            if direction is None:
                return np.einsum("abk,bak->k", t.K, t.G2)
            a = np.tensordot(view.eigenvectors[chunk], weighted, axes=1).astype(t.K.dtype)
            return np.einsum("kca,abk,kcb->k", a, t.K, a)

        return _ce_values(view, nodes, value_chunk, top)

    def score_chunk(chunk):
        t = _rank_one_terms(view, chunk)
        weight = t.curv / (1.0 + t.curv * t.s)
        if direction is None:
            return weight * np.einsum("km,km->k", t.Cv, t.Cv)
        return weight * (t.Cv @ direction) ** 2

    return _by_chunks(score_chunk, nodes)


def vopt(view: PosteriorView, nodes, *, top=None):
    """V-opt: drop in ``tr(V C V')`` (the total posterior variance) per node.

    ``F' ||C v_k||^2 / (1 + F' s_k)``, with ``F' = 1/gamma^2`` for gr/mgr
    (exact) and the loss curvature at the pseudo-label otherwise (Laplace).
    """
    return _covariance_drop(view, nodes, None, top)


def sopt(view: PosteriorView, nodes, *, top=None):
    """Sigma-opt: drop in ``1' V C V' 1`` (the survey risk) per node.

    ``F' <V'1, C v_k>^2 / (1 + F' s_k)`` (MATH.md corrects the paper's
    ``<1, C v_k>``); for mgr, whose classes share ``C``, the same value. For
    ce the survey risk is summed over the classes, ``sum_c 1'V C_cc V'1``:
    the drop is ``sum_c a_c' K_k a_c`` with ``a_c = (C V_k')_c' V'1``.
    """
    return _covariance_drop(view, nodes, view.column_sums(), top)


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
        G, _, D = _ce_direct(view, nodes)
        D = D[:, :, 0]
        K, step = _ce_solves(view, view.latent(nodes), G)
        coef = view.coef - (D @ step[:, 0]).reshape(n_c, M).T
        cov = view.cov - D @ K[:, :, 0] @ D.T
        if view.ce_forms is not None:
            forms = _updated_forms(view, D, K[:, :, 0])
            return replace(view, coef=coef, cov=0.5 * (cov + cov.T), ce_forms=forms)
    else:
        t = _rank_one_terms(view, nodes)
        Cv = t.Cv[0]
        weight = 1.0 / (1.0 + t.curv[0] * t.s[0])
        coef = view.coef - weight * np.multiply.outer(Cv, t.grad[0])
        cov = view.cov - (t.curv[0] * weight) * np.outer(Cv, Cv)
    return replace(view, coef=coef, cov=0.5 * (cov + cov.T))
