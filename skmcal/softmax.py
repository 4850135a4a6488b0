"""The softmax (ce) posterior family and its fast path.

A node ``k`` with pseudo-label ``yhat_k`` adds ``V_k' B_k V_k / gamma^2`` to
the Hessian (``V_k = I (x) v_k'``, ``B_k = diag(pi_k) - pi_k pi_k'``). Every
vector this touches sums to zero over the classes (``B_k 1 = 0``), so the
look-ahead lives on the zero-sum subspace, basis ``E``
(:func:`skmcal.posterior.zero_sum_basis`): with ``D_k = C V_k' E`` and
``G_k = E' V_k C V_k' E / gamma^2`` (``(n_c - 1) x (n_c - 1)``),

    R_k = E' (I + B_k G_k)^-1 (pi_k - yhat_k) / gamma,
    K_k = E' (I + B_k G_k)^-1 B_k E / gamma^2,

the look-ahead MAP is ``coef - D_k R_k`` and its covariance ``C - D_k K_k
D_k'`` (one Newton step; ``docs/math.rst``). ``D_k' D_k = E' V_k C^2 V_k' E``.

What makes it fast (all of it inside this module):

- the small solves use ``B_k = F F'`` with ``F = diag(s)(I - s s')``,
  ``s = sqrt(pi_k)``, and Woodbury: ``N = I + F' G F`` is positive definite
  with eigenvalues >= 1 (no factor of the singular ``B_k``), solved for all
  candidates at once by a vectorised elimination;
- the quadratic forms ``G_k`` and ``D_k' D_k`` of many nodes come from the
  products ``v_m v_m'`` and coefficients set up once per scoring
  (``SoftmaxPosterior._form_coefficients()``), of few nodes from ``C V_k'``
  directly;
- approximate values (float32 forms, optionally kept up to date through the
  look-aheads of a greedy batch) for screening, see
  :mod:`skmcal.acquisition`; with numba, the model-change values of many
  candidates from their forms in one compiled pass
  (``skmcal._ce_kernels``);
- an upper bound of the model-change value that needs only the latent values
  (:meth:`SoftmaxPosterior.change_bound`): screening skips the candidates
  whose bound is below the values that matter; on the compiled path, tighter
  bounds from the leading directions of the covariance kept exactly
  (:class:`ChangeSplit`) skip more of them before ``G_k`` (from ``r``
  projections of ``v_k``) and before ``D_k' D_k`` (given the step ``R_k``);
- pieces of ``CE_CHUNK`` candidates scored on ``n_threads`` threads
  (``skmcal.posterior.LaplacePosterior._in_pieces()``).
"""

from __future__ import annotations

import functools
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
from scipy.linalg import lapack
from scipy.sparse.linalg import ArpackError, eigsh

from ._ce_kernels import (
    model_change_kernel,
    products_kernel,
    split_kernels,
    step_values_kernel,
)
from ._threads import small_algebra, thread_pool, with_small_algebra
from .posterior import (
    SCORE_CHUNK,
    LaplacePosterior,
    LookAheadTerms,
    reduce_classes,
    row_quadratic,
    zero_sum_basis,
)

#: Candidates are scored in pieces of about ``CE_CHUNK`` (large pieces, so
#: that the many small numpy operations per candidate run over long arrays).
CE_CHUNK = 2048

#: Below this many nodes the exact forms come from ``C V_k'`` directly
#: (``O(M^2 n_c^2)`` per node), above it from the products ``v_m v_m'`` with
#: coefficients set up once per scoring (``O(M^3 n_c^3)``).
DIRECT_MAX = 256

#: Approximate model-change values of at least this many candidates come from
#: the compiled kernel when numba is installed (its compilation, a few seconds
#: once, cached on disk, pays off only on large calls).
KERNEL_MIN = 4096

#: Candidates per piece of the compiled path (the products ``v_m v_m'`` of a
#: piece stay in cache for their matrix product).
KERNEL_CHUNK = 512

#: The factor that raises the scale of :meth:`SoftmaxPosterior.change_bound`
#: until proven an upper bound (and the split of :class:`ChangeSplit`).
SCALE_MARGIN = 1.002

#: Leading directions of the covariance that :class:`ChangeSplit` keeps exactly.
SPLIT_RANK = 24

#: The split bounds screen from this many candidates (their eigenpairs, ~10 ms once per
#: posterior, pay off only on large calls).
SPLIT_MIN = 16384

#: Formulas with a compiled kernel (formulas name theirs in a ``kernel`` attribute).
_KERNELS = {"model_change": model_change_kernel}


def spd_solve_batched(A, B):
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


@dataclass(frozen=True, eq=False)
class KeptForms:
    """float32 ``G_k`` and ``D_k' D_k`` (``(n_c - 1, n_c - 1, n)`` each) of sorted ``nodes``.

    Used for approximate values only: the values that decide are recomputed
    exactly.
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

    def packed(self, nodes):
        """The upper triangles of both forms of ``nodes``, stacked: ``(2 T, n)`` (see
        ``SoftmaxPosterior._packed_forms()``)."""
        rows, cols = np.triu_indices(self.G.shape[0])
        return np.vstack([form[rows, cols] for form in self.take(nodes)])


def _in_background(setup, n_nodes, started=None):
    """``(n_nodes >= SPLIT_MIN, future)``: ``setup(n_nodes, started)`` on this process's
    one-thread pool (run here, done, inside a pool's thread)."""
    pool = thread_pool(1)
    if pool is None:
        future = futures.Future()
        try:
            future.set_result(setup(n_nodes, started))
        except Exception as error:  # raised by result(), as from a thread
            future.set_exception(error)
    else:
        future = pool.submit(setup, n_nodes, started)
    return n_nodes >= SPLIT_MIN, future


@dataclass(frozen=True, eq=False)
class ChangeSplit:
    """``Y Y' <= rest C~ + sum_i weights_i c_i c_i'``, proven (``C~``, ``Y Y'``: see
    ``SoftmaxPosterior._zero_sum_blocks``), and the bounds that follow.

    ``c_i`` are the ``r`` leading directions of the pencil ``(Y Y', C~)`` scaled
    by ``C~`` (``c_i = C~ u_i``, ``u_i' C~ u_i = 1``; for the covariances skmcal
    builds, ``sqrt(lambda_i)`` times the eigenvectors of ``C~``), ``rest`` the
    next eigenvalue and ``weights_i`` the excess of the leading ones, both raised
    by :data:`SCALE_MARGIN`. With ``y = W_k R_k`` (``W_k = I (x) v_k``) the
    model-change value is ``||D_k R_k||^2 = y' Y Y' y <= rest y' C~ y + sum_i
    weights_i (c_i' y)^2``, where ``y' C~ y = g^2 R_k' G_k R_k`` and ``c_i' y =
    p_i' R_k``, ``p_i = W_k' c_i``: given the step, a bound without ``D_k'
    D_k``. Before the step, with ``g R_k = -E' B^1/2 u``, ``u = (I + H)^-1 w``
    (:meth:`SoftmaxPosterior.change_bound`): ``g^2 R_k' G_k R_k = u' H u``,
    ``(p_i' R_k)^2 = (q_i' u)^2 / g^2 <= ||q_i||^2 ||u||^2 / g^2`` (``q_i =
    B^1/2 E p_i``), the ``(c_i' y)^2`` sum to ``u' H u`` (over all the
    generalized eigenvectors), and ``e = ||w||^2 = ||u||^2 + 2 u' H u + ||H
    u||^2 >= (||u|| + u' H u / ||u||)^2``: with ``||u|| = t sqrt(e)``, ``u' H
    u <= e t (1 - t)``. The largest value of the bound under these
    constraints, over intervals of ``t`` (the largest weights take as much as
    their limits allow), is a bound without ``G_k``. It is taken with a
    second one when smaller: ``u`` is reachable exactly when ``u'(w - u) >=
    0``, the ball of centre ``w / 2`` and radius ``sqrt(e) / 2``, on which ``u'
    H u = e / 4 - |u - w/2|^2``; with ``Q = sum_i weights_i q_i q_i' / g^2``
    the value's square is at most ``rest (e/4 - r^2) + (a + b r)^2`` for
    ``r = |u - w/2|`` (``a^2 = w'Qw/4``, ``b^2 = tr Q``), maximised over
    ``r``; at 1,000,000 nodes it left 16,000 to 21,000 of ~47,000 candidates
    for ``G_k`` where the first left 24,000 to 29,000. Both bounds:
    ``skmcal._ce_kernels.split_kernels()``.

    ``basis``: the rows ``E c_i`` (the class blocks of ``c_i``, ``(d, M)``,
    mapped by the zero-sum basis ``E`` to ``(n_c, M)``), stacked to ``(r n_c,
    M)`` float32: ``basis v_k`` holds the ``E p_i``.
    """

    rest: float
    weights: np.ndarray
    basis: np.ndarray

    def projections(self, Vt):
        """``E p_i`` of nodes with float32 eigenvector rows ``Vt`` (``(M, K)``): ``(r, n_c, K)``."""
        rank = self.weights.size
        return (self.basis @ Vt).reshape(rank, self.basis.shape[0] // rank, Vt.shape[1])


@dataclass(frozen=True, eq=False)
class SoftmaxPosterior(LaplacePosterior):
    """The ce posterior: ``cov`` is ``(n_c M, n_c M)``, class-major.

    It has the attributes of :class:`~skmcal.posterior.LaplacePosterior`, and
    one more.

    Attributes
    ----------
    forms : KeptForms or None
        float32 forms of some nodes, kept up to date by :meth:`look_ahead`
        (see :meth:`prepare`).
    """

    forms: KeptForms | None = None

    screening = True

    # -------------------------------------------------------------- basics
    def cov_at(self, rows):
        """Class-major ``(n_c n, n_c n)``: index ``c * n + r`` is class ``c`` at row ``r``."""
        n_c, M, n = self.n_classes, rows.shape[1], rows.shape[0]
        C4 = self.cov.reshape(n_c, M, n_c, M)
        blocks = np.einsum("ai,cihk,bk->cahb", rows, C4, rows)
        return blocks.reshape(n_c * n, n_c * n)

    def _loo_steps(self, rows, latent, targets, weights):
        # S_j (I - W_j S_j)^-1 g_j per label, W_j = w_j (diag(pi) - pi pi') / gamma^2
        n_c, M = self.n_classes, rows.shape[1]
        C4 = self.cov.reshape(n_c, M, n_c, M)
        S = np.empty((rows.shape[0], n_c, n_c))
        for c in range(n_c):  # one class's row of blocks at a time: O(n n_c M) memory
            block = (rows @ C4[c].reshape(M, n_c * M)).reshape(rows.shape[0], n_c, M)
            S[:, c, :] = np.einsum("adk,ak->ad", block, rows)
        G, Pi = self.loss.derivatives(latent, targets, self.gamma)
        W = (Pi[:, :, None] * np.eye(n_c) - Pi[:, :, None] * Pi[:, None, :]) / self.gamma**2
        W *= weights[:, None, None]
        steps = np.linalg.solve(np.eye(n_c) - W @ S, (weights[:, None] * G)[:, :, None])
        return (S @ steps)[:, :, 0]

    def latent_variance(self):
        """Posterior variance of the centred class values ``u_c - mean(u)`` at every node,
        summed over the classes, ``(n_nodes,)``.

        Softmax ignores a shift shared by the classes, so this is the variance
        that matters: the trace of ``(I - 11'/n_c) Cov(u_i) (I - 11'/n_c)``,
        ``v_i' (sum_c C_cc - sum_cd C_cd / n_c) v_i``.
        """
        n_c, V = self.n_classes, self.eigenvectors
        M = V.shape[1]
        blocks = self.cov.reshape(n_c, M, n_c, M)
        centred = np.einsum("cicj->ij", blocks) - blocks.sum(axis=(0, 2)) / n_c
        return row_quadratic(V, centred)

    # ---------------------------------------------------------- the forms
    def _form_coefficients(self):
        """Coefficients that turn products ``v_m v_m'`` into ``G_k`` and ``D_k' D_k``.

        Returns the ``(n_c (n_c - 1), M (M + 1) / 2)`` matrix whose product
        with the column of products ``v_m v_m'`` (``m <= m'``,
        ``np.triu_indices`` order) of a node is the upper triangles of both
        forms. On the zero-sum subspace the covariance ``C~ = (E (x) I)' C (E
        (x) I)`` has ``(n_c - 1) n_c / 2`` class blocks ``C~_ch`` (``c <=
        h``); ``v' C~_ch v`` involves only the symmetric part of the block and
        the products with ``m <= m'`` (off-diagonal ones counted twice).
        ``C^2`` is projected the same way, as ``Y Y'`` with ``Y = (E (x) I)'
        C``.
        """
        n_c, M = self.n_classes, self.eigenvectors.shape[1]
        d = n_c - 1
        rows, cols = np.triu_indices(M)
        class_rows, class_cols = np.triu_indices(d)
        doubled = np.where(rows == cols, 1.0, 2.0)

        def coefficients(X):
            blocks = X.reshape(d, M, d, M).transpose(0, 2, 1, 3)[class_rows, class_cols]
            symmetric = 0.5 * (blocks + blocks.transpose(0, 2, 1))
            return symmetric[:, rows, cols].T * doubled[:, None]

        projected, square = self._zero_sum_blocks
        both = np.vstack([coefficients(projected).T / self.gamma**2, coefficients(square).T])
        return np.ascontiguousarray(both)

    @functools.cached_property
    def _zero_sum_blocks(self):
        """``(C~, Y Y')``: ``C~ = (E (x) I)' C (E (x) I)`` and, with ``Y = (E (x) I)' C``,
        ``Y Y' = (E (x) I)' C^2 (E (x) I)``, both ``(d M)``-square."""
        E = zero_sum_basis(self.n_classes)
        Y = reduce_classes(self.cov, E)
        with small_algebra():
            return reduce_classes(Y.T, E).T, Y @ Y.T

    @functools.cached_property
    def _coefficients(self):
        """``_form_coefficients()`` in double and single precision, computed once."""
        with small_algebra():
            both = self._form_coefficients()
        return both, both.astype(np.float32)

    def _direct(self, nodes):
        """``(G_k, D_k' D_k, D_k)`` of a few nodes, from ``D_k = C V_k' E``.

        ``D_k`` is ``(n_c M, n_c - 1)`` (stacked: ``(n_c M, n_c - 1, K)``);
        ``G_k = E' V_k D_k / g^2``. ``O(M^2 n_c^2)`` per node and no set-up.
        """
        n_c, M = self.n_classes, self.eigenvectors.shape[1]
        E = zero_sum_basis(n_c)
        d = n_c - 1
        V = self.eigenvectors[nodes]  # (K, M)
        # (D_k)' = (I (x) v_k') Y with Y = (E' (x) I) C: one product for all nodes
        Y = reduce_classes(self.cov, E)  # (d M, n_c M)
        Dt = (V @ Y.reshape(d, M, n_c * M).transpose(1, 0, 2).reshape(M, -1)).reshape(
            -1, d, n_c * M
        )
        per_class = np.einsum("kbcm,km->kbc", Dt.reshape(-1, d, n_c, M), V)  # (V_k D_k)'
        G = (per_class @ E).transpose(2, 1, 0) / self.gamma**2  # E' V_k D_k, batch-last
        G2 = (Dt @ Dt.transpose(0, 2, 1)).transpose(1, 2, 0)
        D = Dt.transpose(2, 1, 0)  # (n_c M, d, K)
        return 0.5 * (G + G.transpose(1, 0, 2)), np.ascontiguousarray(G2), D

    @staticmethod
    def _packed_forms(V, coefficients, fill=None):
        """The upper triangles (``np.triu_indices`` order) of ``G_k`` then of ``D_k' D_k``
        of the nodes with eigenvector rows ``V``, from the products ``v_m v_m'``:
        ``(2 T, K)``, ``T = d (d + 1) / 2``. ``fill``: the compiled products
        (``skmcal._ce_kernels.products_kernel()``, float32 only)."""
        n_nodes, M = V.shape
        dtype = coefficients.dtype
        products = np.empty((M * (M + 1) // 2, n_nodes), dtype=dtype)
        if fill is not None:
            fill(V, products)
            return coefficients @ products
        Vt = np.ascontiguousarray(V.T, dtype=dtype)
        row = 0
        for m in range(M):
            np.multiply(Vt[m], Vt[m:], out=products[row : row + M - m])
            row += M - m
        return coefficients @ products

    def _product_forms(self, V, coefficients):
        """Both forms of the nodes with eigenvector rows ``V`` from the products ``v_m v_m'``:
        ``(2, d, d, K)``."""
        n_nodes = V.shape[0]
        d = self.n_classes - 1
        dtype = coefficients.dtype
        class_rows, class_cols = np.triu_indices(d)
        forms = self._packed_forms(V, coefficients).reshape(2, class_rows.size, n_nodes)
        G = np.empty((2, d, d, n_nodes), dtype=dtype)
        G[:, class_rows, class_cols] = forms
        G[:, class_cols, class_rows] = forms
        return G

    def _forms(self, nodes, V, source):
        """``(G_k, D_k' D_k)`` of the nodes (eigenvector rows ``V``): ``source`` None (exact,
        direct), "kept" (float32 :class:`KeptForms`) or coefficients (in their precision)."""
        if source is None:
            return self._direct(nodes)[:2]
        if isinstance(source, str):
            return self.forms.take(nodes)
        G = self._product_forms(V, source)
        return G[0], G[1]

    # -------------------------------------------------------- small solves
    def _solves(self, U, G, *, need_gain=True):
        """``(K_k, R_k)`` from latent rows ``U`` (``(K, n_c)``) and ``G_k`` (``(d, d, K)``)."""
        g, n_c = self.gamma, self.n_classes
        E = zero_sum_basis(n_c).astype(G.dtype)
        Pi = self.loss.proba(U, g).T.astype(G.dtype)  # (n_c, K)
        # E' F = E' diag(s) - (E' pi) s', i.e. [E' F]_ah = s_h (E_ha - (E' pi)_a)
        mean = E.T @ Pi
        F = (E.T[:, :, None] - mean[:, None, :]) * np.sqrt(Pi)[None]  # (d, n_c, K)
        residual = mean - E.T[:, np.argmax(U, axis=1)]  # E' (pi - yhat), (d, K)
        GF = np.einsum("abk,bhk->ahk", G, F)
        N = np.einsum("ahk,agk->hgk", F, GF)
        N[np.arange(n_c), np.arange(n_c)] += 1.0
        rhs = np.einsum("ahk,ak->hk", GF, residual)[:, None]
        if need_gain:
            rhs = np.concatenate([rhs, F.transpose(1, 0, 2)], axis=1)
        Z = spd_solve_batched(N, rhs)
        step = (residual - np.einsum("ahk,hk->ak", F, Z[:, 0])) / g
        if not need_gain:
            return None, step
        K = np.einsum("ahk,hbk->abk", F, Z[:, 1:]) / g**2
        return 0.5 * (K + K.transpose(1, 0, 2)), step

    def _terms(self, nodes, source, *, need_gain=True, weighted=None) -> LookAheadTerms:
        """The look-ahead terms of ``nodes`` (forms from ``source``, see ``_forms()``)."""
        V = self.eigenvectors[nodes]  # gathered once: rows of a (memory-mapped) n x M array
        G, G2 = self._forms(nodes, V, source)
        K, step = self._solves(self.latent(nodes, V), G, need_gain=need_gain)
        survey = None
        if weighted is not None:
            a = np.tensordot(V, weighted, axes=1)  # (K, n_c, d)
            survey = a.transpose(2, 1, 0).astype(G.dtype)
        return LookAheadTerms(step=step[:, None], gram=G2, gain=K, survey=survey)

    def _survey_weights(self, direction):
        """``(M, n_c, d)``: ``a_c = (C V_k')_c' w`` on the zero-sum subspace is ``v_k' [:, c]``.

        The survey risk of ce is summed per class, ``sum_c w' C_cc w`` (the
        joint direction ``1 (x) w`` shifts every class equally, along which the
        likelihood is flat).
        """
        n_c, M = self.n_classes, direction.size
        C4 = self.cov.reshape(n_c, M, n_c, M)
        return np.einsum("cmhn,m->nch", C4, direction) @ zero_sum_basis(n_c)

    def _packed(self, nodes, V, source, part=None):
        """The packed forms of ``nodes`` (eigenvector rows ``V``, forms from ``source``, see
        ``_forms()``, not exact): ``(2 T, K)``, or only ``G_k`` (``part`` 0) or only
        ``D_k' D_k`` (``part`` 1), ``(T, K)``."""
        T = self.n_classes * (self.n_classes - 1) // 2
        if isinstance(source, str):
            packed = self.forms.packed(nodes)
            return packed if part is None else packed[part * T : (part + 1) * T]
        coefficients = source if part is None else source[part * T : (part + 1) * T]
        return self._packed_forms(V, coefficients, products_kernel())

    def _kernel_steps(self, kernel, U, G):
        """The steps ``R_k`` (``(d, K)``) and ``g^2 R_k' G_k R_k`` (``(K,)``) of nodes with
        latent values ``U`` (``(K, n_c)``) from their packed ``G_k`` by the compiled
        ``kernel``, float32."""
        latent = np.ascontiguousarray(U.T)
        steps = np.empty((self.n_classes - 1, U.shape[0]), np.float32)
        quadratic = np.empty(U.shape[0], np.float32)
        kernel(G, latent, zero_sum_basis(self.n_classes), self.gamma, steps, quadratic)
        return steps, quadratic

    @staticmethod
    def _step_values(square, steps):
        """``sqrt(R_k' (D_k' D_k) R_k)`` from the packed ``D_k' D_k`` and the steps (compiled)."""
        values = np.empty(steps.shape[1], np.float32)
        step_values_kernel()(square, steps, values)
        return values

    def _kernel_values(self, kernel, nodes, source):
        """Approximate values of ``nodes`` by a compiled ``kernel`` (forms from ``source``)."""
        V = self.eigenvectors[nodes]
        forms = self._packed(nodes, V, source)
        T = forms.shape[0] // 2
        steps, _ = self._kernel_steps(kernel, self.latent(nodes, V), forms[:T])
        return self._step_values(forms[T:], steps)

    def _kernel_bounds(self, kernel, nodes, source, split, floor):
        """``(d + 1, K)``: the steps of ``nodes`` (as ``_kernel_steps()``) and their
        :class:`ChangeSplit` bounds given the steps, for the nodes whose bound before
        the steps reaches ``floor`` (the others: zeros and ``-inf``)."""
        before, after = split_kernels()
        V = self.eigenvectors[nodes]
        U = self.latent(nodes, V)
        projections = split.projections(np.ascontiguousarray(V.T, dtype=np.float32))
        early = np.empty(nodes.size, np.float32)
        before(projections, np.ascontiguousarray(U.T), self.gamma, split.rest, split.weights, early)
        chosen = np.flatnonzero(early >= floor)
        out = np.zeros((self.n_classes, nodes.size), np.float32)
        out[-1] = -np.inf
        G = self._packed(nodes[chosen], V[chosen], source, 0)
        steps, quadratic = self._kernel_steps(kernel, U[chosen], G)
        out[:-1, chosen] = steps
        basis = zero_sum_basis(self.n_classes)
        bounds = np.empty(chosen.size, np.float32)
        after(projections, chosen, steps, basis, quadratic, split.rest, split.weights, bounds)
        out[-1, chosen] = bounds
        return out

    def _split_values(self, kernel, nodes, source, split, floor):
        """``_kernel_values()`` of the nodes whose :class:`ChangeSplit` bounds reach
        ``floor``, ``-inf`` for the others: the steps and bounds of every node, then
        ``D_k' D_k`` of those the bounds keep."""
        bounded = self._in_pieces(
            lambda piece: self._kernel_bounds(kernel, piece, source, split, floor),
            nodes,
            KERNEL_CHUNK,
        )
        steps, keep = bounded[:-1], np.flatnonzero(bounded[-1] >= floor)

        def kept_values(where):
            V = self.eigenvectors[nodes[where]]
            return self._step_values(self._packed(nodes[where], V, source, 1), steps[:, where])

        values = np.full(nodes.size, -np.inf)
        values[keep] = self._in_pieces(kept_values, keep, KERNEL_CHUNK)
        return values

    # ------------------------------------------------------------ protocol
    def kept_for(self, nodes) -> bool:
        return self.forms is not None and self.forms.covers(nodes)

    @functools.cached_property
    def _change_scale(self):
        """A ``lambda`` with ``Y Y' <= lambda C~`` (``_zero_sum_blocks``), or None where
        ``C~`` is not positive definite.

        The least such ``lambda`` is the largest eigenvalue of the pencil
        ``(Y Y', C~)``: ``lambda_max(C~)`` where ``C`` maps the zero-sum
        subspace to itself, as the covariances of every fit and look-ahead do.
        That value by Lanczos on ``C~`` (or the leading eigenvalue of
        ``_change_split`` where it is computed already: of ``C~`` or of the
        pencil, no second Lanczos), raised by :data:`SCALE_MARGIN` until
        ``lambda C~ - Y Y'`` has a Cholesky factor (the proof that it bounds),
        else the pencil's eigenvalue (``eigh``).
        """
        projected, square = self._zero_sum_blocks
        split = self.__dict__.get("_change_split")  # computed already: its leading eigenvalue
        with small_algebra():
            if split is not None and split.weights.size:
                scale = (split.rest + float(split.weights[0])) / SCALE_MARGIN
            else:
                try:  # Lanczos, from a fixed start
                    start = np.ones(projected.shape[0])
                    scale = float(eigsh(projected, k=1, which="LA", tol=1e-6, v0=start)[0][0])
                except ArpackError:
                    scale = np.inf
            for _ in range(4 if np.isfinite(scale) and scale > 0.0 else 0):
                scale *= SCALE_MARGIN
                if lapack.dpotrf(scale * projected - square, lower=1, clean=0)[1] == 0:
                    return scale
            last = projected.shape[0] - 1
            try:
                return float(
                    scipy.linalg.eigh(
                        square, projected, eigvals_only=True, subset_by_index=[last, last]
                    )[0]
                )
            except np.linalg.LinAlgError:
                return None

    @functools.cached_property
    def _change_split(self):
        """The :class:`ChangeSplit` of this posterior, or None where none is proven.

        The ``SPLIT_RANK + 1`` leading eigenpairs of ``C~`` (Lanczos; dense
        for small ``C~``) give the split where ``Y Y' = C~^2`` (``C`` maps the
        zero-sum subspace to itself), those of the pencil ``(Y Y', C~)``
        otherwise; the split holds if ``rest C~ + sum_i weights_i c_i c_i' - Y
        Y'`` (margins included) has a Cholesky factor.
        """
        projected, square = self._zero_sum_blocks
        n = projected.shape[0]
        count = min(SPLIT_RANK + 1, n)
        with small_algebra():
            for pencil in (False, True):
                try:
                    if pencil:
                        mu, u = scipy.linalg.eigh(
                            square, projected, subset_by_index=[n - count, n - 1]
                        )
                        directions = projected @ u
                    else:
                        if 3 * count < n:
                            start = np.ones(n)
                            mu, e = eigsh(projected, k=count, which="LA", tol=1e-8, v0=start)
                        else:
                            mu, e = scipy.linalg.eigh(projected, subset_by_index=[n - count, n - 1])
                        directions = e * np.sqrt(np.clip(mu, 0.0, None))
                except (ArpackError, np.linalg.LinAlgError):
                    continue
                mu, directions = SCALE_MARGIN * mu[::-1], directions[:, ::-1]
                rest = mu[-1] if count < n else 0.0  # all n directions kept: no rest
                kept = directions[:, : count - 1] if count < n else directions
                weights = mu[: kept.shape[1]] - rest
                excess = rest * projected + (kept * weights) @ kept.T - square
                if lapack.dpotrf(excess, lower=1, clean=0)[1] == 0:
                    d, M = self.n_classes - 1, self.eigenvectors.shape[1]
                    blocks = kept.T.reshape(-1, d, M)  # [i, a, m]: the class blocks of c_i
                    basis = np.matmul(zero_sum_basis(self.n_classes), blocks).reshape(-1, M)
                    return ChangeSplit(
                        rest=float(rest), weights=weights, basis=basis.astype(np.float32)
                    )
        return None

    @with_small_algebra
    def change_bound(self, nodes):
        """Upper bounds of the model-change values of ``nodes``, or None.

        ``||D_k R_k||^2 <= lambda (1 / pi_j - 1) / 4`` with ``pi_j`` the
        probability of the pseudo-label and ``lambda`` of
        ``_change_scale``: ``D_k' D_k <= lambda g^2 G_k`` and, with ``H =
        B^1/2 G_k B^1/2`` and ``pi - e_j = -B e_j / pi_j``, ``g^2 R_k' G_k R_k
        = w' (I + H)^-1 H (I + H)^-1 w <= ||w||^2 / 4`` for ``w = B^1/2 e_j /
        pi_j``, ``||w||^2 = 1 / pi_j - 1``. Needs only the latent values.
        """

        def excess(piece):  # 1 / pi_j - 1
            Z = self.latent(piece) / self.gamma
            return np.exp(Z - Z.max(axis=1, keepdims=True)).sum(axis=1) - 1.0

        nodes = np.asarray(nodes, dtype=np.intp)
        started = self.__dict__.get("_bound_started")
        if started is None or (nodes.size >= SPLIT_MIN) > started[0]:
            started = _in_background(self._bound_setup, nodes.size, started)
        excesses = self._in_pieces(excess, nodes, SCORE_CHUNK)
        scale = started[1].result()
        return None if scale is None else np.sqrt(scale * excesses / 4.0)

    def _bound_setup(self, n_nodes, started=None):
        """What the screening of ``n_nodes`` candidates needs (cached properties): the
        form coefficients, the split from :data:`SPLIT_MIN` nodes, and the scale of
        :meth:`change_bound`, returned. ``started``: a set-up begun earlier, waited for."""
        if started is not None:
            started[1].exception()  # wait; a failure is raised again below
        _ = self._coefficients
        if n_nodes >= SPLIT_MIN:
            _ = self._change_split
        return self._change_scale

    @contextmanager
    def change_bound_ahead(self, n_nodes):
        if n_nodes <= 0 or "_bound_started" in self.__dict__:  # none, or an outer context's
            yield
            return
        started = self.__dict__["_bound_started"] = _in_background(self._bound_setup, n_nodes)
        try:
            yield
        finally:
            futures.wait([started[1]])
            self.__dict__.pop("_bound_started", None)  # the results stay, cached

    @with_small_algebra  # the coefficients too: no idle BLAS threads spinning
    def evaluate(self, formula, nodes, *, approximate=False, gain=True, survey=None, floor=None):
        """``formula(terms)`` per node; ``approximate``: float32 forms (kept ones if they cover).

        Approximate values of a formula with a compiled kernel
        (``_KERNELS``) come from it when numba is installed, from
        :data:`KERNEL_MIN` nodes; there, from :data:`SPLIT_MIN` nodes, ``floor``
        skips the nodes whose :class:`ChangeSplit` bound is below it (their value
        is ``-inf``).
        """
        nodes = np.asarray(nodes, dtype=np.intp)
        if approximate and self.kept_for(nodes):
            source = "kept"
        elif approximate:
            source = self._coefficients[1]
        else:
            source = None if nodes.size <= DIRECT_MAX else self._coefficients[0]
        compiled = _KERNELS.get(getattr(formula, "kernel", None))
        kernel = compiled() if compiled and approximate and nodes.size >= KERNEL_MIN else None
        if kernel is not None and not gain and survey is None:
            split = None
            if floor is not None and nodes.size >= SPLIT_MIN:
                split = self._change_split
            if split is not None:
                return self._split_values(kernel, nodes, source, split, floor)
            return self._in_pieces(
                lambda piece: self._kernel_values(kernel, piece, source), nodes, KERNEL_CHUNK
            )
        weighted = None if survey is None else self._survey_weights(survey)

        def piece_values(piece):
            return formula(self._terms(piece, source, need_gain=gain, weighted=weighted))

        return self._in_pieces(piece_values, nodes, CE_CHUNK)

    @with_small_algebra
    def prepare(self, nodes):
        """This posterior with float32 forms of ``nodes``, computed once, for greedy batches.

        :meth:`look_ahead` updates them through the rank ``n_c - 1`` change of
        the covariance (``O(M n_c^2)`` per node) instead of every greedy step
        recomputing them (``O(M^2 n_c^2)``).
        """
        nodes = np.unique(np.asarray(nodes, dtype=np.intp))
        coefficients = self._coefficients[1]
        G, G2 = self._in_pieces(
            lambda piece: self._product_forms(self.eigenvectors[piece], coefficients),
            nodes,
            CE_CHUNK,
        )
        Vt = np.ascontiguousarray(self.eigenvectors[nodes].T, dtype=np.float32)
        return replace(self, forms=KeptForms(nodes=nodes, G=G, G2=G2, Vt=Vt))

    def _updated_forms(self, D, K) -> KeptForms:
        """The (float32) kept forms under ``C - D K D'``.

        With ``Y_k = E' V_k D`` and ``Z_k = E' V_k C D``: ``G_k - Y_k K Y_k' /
        g^2`` and ``G2_k - Z_k K Y_k' - Y_k K Z_k' + Y_k K (D'D) K Y_k'`` (the
        square of the new covariance). ``E' V_k X = v_k' X~`` with ``X~ = (E'
        (x) I) X`` folded once, so ``Y`` and ``Z`` of every node are one
        matrix product.
        """
        forms = self.forms
        n_c, M = self.n_classes, self.eigenvectors.shape[1]
        d = n_c - 1
        X = np.hstack([D, self.cov @ D])  # (n_c M, 2d)
        folded = (zero_sum_basis(n_c).T @ X.reshape(n_c, M * 2 * d)).reshape(d, M, 2 * d)
        folded = folded.transpose(0, 2, 1).reshape(d * 2 * d, M).astype(np.float32)
        YZ = (folded @ forms.Vt).reshape(d, 2 * d, -1)  # [a, b, k] = (E' V_k X)_ab
        Y, Z = YZ[:, :d], YZ[:, d:]
        KT = K.T.astype(np.float32)
        YK = np.matmul(KT, Y)  # [a, c, k] = sum_b Y[a, b, k] K[b, c]
        ZK = np.matmul(KT, Z)
        YKDD = np.matmul((D.T @ D).astype(np.float32), YK)
        G = forms.G - np.einsum("ack,eck->aek", YK, Y) / np.float32(self.gamma**2)
        ZKY = np.einsum("ack,eck->aek", ZK, Y)
        G2 = forms.G2 - ZKY - ZKY.transpose(1, 0, 2) + np.einsum("ack,eck->aek", YKDD, YK)
        return replace(forms, G=G, G2=G2)

    @with_small_algebra
    def look_ahead(self, node):
        nodes = np.array([node], dtype=np.intp)
        n_c, M = self.n_classes, self.eigenvectors.shape[1]
        G, _, D = self._direct(nodes)
        D = D[:, :, 0]
        K, step = self._solves(self.latent(nodes), G)
        coef = self.coef - (D @ step[:, 0]).reshape(n_c, M).T
        cov = self.cov - D @ K[:, :, 0] @ D.T
        forms = None if self.forms is None else self._updated_forms(D, K[:, :, 0])
        return replace(self, coef=coef, cov=0.5 * (cov + cov.T), forms=forms)
