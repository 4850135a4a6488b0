"""The Laplace posterior: the hub every prediction and acquisition reads.

With ``V`` the ``(n_nodes, M)`` eigenvectors of the graph Laplacian,
``Lambda_tau = diag(lambda_i + tau^2)`` and ``P = V[labeled]``, the spectral
model minimises

    J(alpha) = 1/2 <alpha, Lambda_tau alpha> + sum_j l(p_j' alpha, y_j)

and its Laplace posterior is ``N(alpha_hat, C)``, ``C`` the inverse Hessian
of ``J`` at the MAP (:mod:`skmcal.fitting` computes both). A fitted posterior
is one of two families, with one protocol:

- :class:`RankOnePosterior` (``gr``, ``logistic``, ``probit``, ``mgr``): one
  ``M x M`` covariance shared by all classes; a label adds a rank-one term to
  the Hessian.
- :class:`skmcal.softmax.SoftmaxPosterior` (``ce``): the classes are coupled;
  a label adds a rank ``n_c - 1`` term on the zero-sum subspace.

The protocol (see :class:`LaplacePosterior`): ``latent(nodes)``,
``proba(nodes)``, ``cov_at(rows)``, ``evaluate(formula, nodes, ...)`` (the
look-ahead terms of candidate nodes, given to an acquisition formula),
``look_ahead(node)`` (the posterior after one more pseudo-labeled node),
``prepare(nodes)`` (state kept across the look-aheads of a greedy batch) and
``change_bound(nodes)`` (cheap upper bounds of model-change values, if any).

**Look-ahead terms.** Adding node ``k`` with its pseudo-label moves the
coefficients by ``-D_k R_k`` and the covariance by ``-D_k K_k D_k'``, where
the columns of ``D_k`` span the directions the node can move (rank-one:
``D_k = C v_k``; softmax: ``D_k = C V_k' E``). :class:`LookAheadTerms` holds,
per candidate, ``R_k`` (``step``), ``K_k`` (``gain``), ``D_k' D_k``
(``gram``) and ``D_k' w`` (``survey``) for a survey direction ``w``; the
acquisition functions (:mod:`skmcal.acquisition`) are formulas in these.

A posterior may also carry ``base``: latent values of every node computed by
another model (a full-graph solve), around which the spectral covariance is
used; then ``coef`` starts at zero and holds the spectral change of the
look-aheads. A full-graph ``gr``/``mgr`` fit with a free class offset fitted
the targets less ``w c`` (``w = D^1/2 1``, ``c`` the labels' class offset,
:func:`skmcal.fullgraph.class_offset`); its posterior carries ``w`` at every
node and ``c``, and the look-ahead pseudo-targets are shifted the same way.

**White-noise remainder** (``gr``/``mgr`` around a full-graph mean). The
full graph's prior is ``V Lambda_tau^-1 V'`` plus a remainder outside the
kept eigenvectors. A :class:`RankOnePosterior` with ``nugget = s > 0``
replaces that remainder by ``s (I - V V')``, so that the latent values are
``u = V alpha + beta``, ``alpha ~ N(0, Lambda_tau^-1 - s I)``, ``beta ~
N(0, s I)`` independent at every node. A labeled node's ``beta_j`` then acts
as extra noise: ``cov`` is the posterior of ``alpha`` with noise ``gamma^2 /
n_j + s`` at a node labeled ``n_j`` times (``nugget_nodes``,
``nugget_counts``). Adding an unlabeled node ``k`` moves ``alpha`` by ``C
v_k r / S``, its own ``beta_k`` by ``s r / S`` (``S = gamma^2 + s + s_k``) and
each labeled ``beta_j`` by ``-sigma_j v_j' delta alpha`` (``sigma_j = s / (s +
gamma^2 / n_j)``), so over all nodes ::

    D_k' D_k = ||C v_k||^2 - sum_j sigma_j (2 - sigma_j) (v_j' C v_k)^2 + 2 s s_k + s^2,

``K_k = 1 / S`` and, for the survey direction ``1``, ``D_k' 1 = (V' 1 -
V_L' sigma)' C v_k + s``. As labels accumulate, ``C`` shrinks and model change
tends to the residual ``|r| s / (gamma^2 + s)``: it keeps sampling where the
mean is unsure instead of following a covariance that no longer changes.
docs/math.rst, "The remainder of the prior".

Layouts: binary losses use ``coef`` of shape ``(M,)`` and ``cov`` of shape
``(M, M)``; ``mgr`` uses ``(M, n_classes)`` with one ``(M, M)`` covariance;
``ce`` uses ``(M, n_classes)`` with a ``(M n_classes, M n_classes)``
covariance in class-major order (index ``c * M + i`` is coefficient ``i`` of
class ``c``).
"""

from __future__ import annotations

import functools
from contextlib import nullcontext
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from ._threads import scoring_threads, small_algebra, thread_pool, with_small_algebra

# ------------------------------------------------------------ dense algebra
# Cholesky through LAPACK (dpotrf / dpotrs / dpotri). Fits run with one BLAS
# thread (skmcal._threads): numpy and scipy each bundle an OpenBLAS, and with
# several threads each would wait for the other's spinning threads.
_SINGULAR = (
    "The Hessian of the objective is not numerically positive definite: gamma is "
    "too small relative to tau (the loss curvature 1/gamma^2 swamps the prior "
    "tau^2 in floating point). Increase gamma or tau."
)


def cholesky(H):
    """Lower Cholesky factor of a symmetric positive definite matrix."""
    factor, info = lapack.dpotrf(H, lower=1, clean=1)
    if info != 0:
        raise ValueError(_SINGULAR)
    return factor


def cho_solve(factor, rhs):
    """``H^-1 rhs`` from the lower Cholesky factor of ``H``."""
    x, info = lapack.dpotrs(factor, rhs, lower=1)
    if info != 0:  # pragma: no cover - dpotrs fails only on bad arguments
        raise ValueError(_SINGULAR)
    return x


def cho_logdet(factor):
    """``log|H|`` from the lower Cholesky factor of ``H``: ``2 sum(log(diag(factor)))``."""
    return 2.0 * float(np.sum(np.log(np.diag(factor))))


def row_quadratic(V, A):
    """``v_i' A v_i`` for every row ``v_i`` of ``V``: the diagonal of ``V A V'`` without
    forming it (one matrix product, then a row-wise dot product)."""
    return np.einsum("ij,ij->i", V @ A, V)


def cho_inverse(factor):
    """``H^-1`` (symmetric) from the lower Cholesky factor of ``H``."""
    lower, info = lapack.dpotri(factor, lower=1)
    if info != 0:
        raise ValueError(_SINGULAR)
    inverse = np.tril(lower)
    inverse += np.tril(lower, -1).T
    return inverse


@functools.lru_cache(maxsize=32)
def zero_sum_basis(n_classes):
    """Orthonormal basis ``E`` (``(n_c, n_c - 1)``) of the vectors whose entries sum to 0.

    Cached; the array is read-only.
    """
    centred = np.eye(n_classes) - 1.0 / n_classes
    basis = np.linalg.qr(centred[:, : n_classes - 1])[0]
    basis.flags.writeable = False
    return basis


def reduce_classes(X, E):
    """``(E (x) I)' X`` for class-major rows: ``X`` has ``n_c M`` rows, ``E`` is ``(n_c, d)``.

    The result has ``d M`` rows and the trailing shape of ``X``.
    """
    n_c, d = E.shape
    return (E.T @ X.reshape(n_c, -1)).reshape((d * (X.shape[0] // n_c),) + X.shape[1:])


def project_classes(X, E):
    """``(E (x) I)' X (E (x) I)`` for a class-major square ``X``: ``(d M, d M)``."""
    return reduce_classes(reduce_classes(X, E).T, E).T


# ------------------------------------------------------------------ protocol
@dataclass
class LookAheadTerms:
    """Per-candidate look-ahead quantities, batch-last (candidate ``k`` is the last index).

    With ``d`` the rank of a label's update (1 for the rank-one family,
    ``n_c - 1`` for softmax):

    Attributes
    ----------
    step : ndarray of shape (d, s, K)
        ``R_k``: the look-ahead MAP is ``coef - D_k R_k`` (``s`` columns: one
        per class for ``mgr``, else 1).
    gram : ndarray of shape (d, d, K)
        ``D_k' D_k``.
    gain : ndarray of shape (d, d, K) or None
        ``K_k``: the look-ahead covariance is ``C - D_k K_k D_k'``.
    survey : ndarray of shape (d, t, K) or None
        ``D_k' w`` for the survey direction(s) ``w`` (one per class for softmax).
    """

    step: np.ndarray
    gram: np.ndarray
    gain: np.ndarray | None = None
    survey: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class LaplacePosterior:
    """A fitted Laplace posterior ``N(coef, cov)`` in spectral coordinates: the protocol.

    Attributes
    ----------
    loss : BinaryLoss or MulticlassLoss
        The likelihood (:mod:`skmcal.losses`).
    gamma : float
        Loss scale.
    eigenvectors : ndarray of shape (n_nodes, M)
        ``V``.
    coef : ndarray of shape (M,) or (M, n_classes)
        The MAP spectral coefficients (with ``base``: their look-ahead change).
    cov : ndarray
        The inverse Hessian of the objective at the MAP.
    base : ndarray of shape (n_nodes,) or (n_nodes, n_classes), or None
        Latent values of every node from another model (full-graph); None
        for the spectral model.
    n_iter : int
        Newton (and chord) steps of the fit (0 for the closed forms).
    converged : bool
        Whether the fit met its tolerance.
    n_threads : int or None
        Threads that score pieces of candidates, each with a single-threaded
        BLAS (None: ``skmcal._threads.scoring_threads()``, the cores the
        BLAS pools may use here).
    offset_direction : ndarray of shape (n_nodes,) or None
        ``w``, the direction of the class offset at every node (rank-one
        family with ``base`` only); None: no offset.
    offset_coef : float or ndarray of shape (n_classes,), or None
        ``c``: a pseudo-label's target at node ``k`` is the loss's
        pseudo-target less ``w_k c``.
    target_scale : ndarray of shape (n_classes,) or None
        The scale of each class's targets in the fit (``gr``/``mgr``,
        :func:`skmcal.losses.target_scales`): a pseudo-label of class ``c``
        enters with the loss's pseudo-target times ``target_scale[c]``, as a
        label of that class was fitted. None: unscaled.
    """

    loss: object
    gamma: float
    eigenvectors: np.ndarray
    coef: np.ndarray
    cov: np.ndarray
    base: np.ndarray | None = None
    n_iter: int = 0
    converged: bool = True
    n_threads: int | None = None
    offset_direction: np.ndarray | None = None
    offset_coef: np.ndarray | float | None = None
    target_scale: np.ndarray | None = None

    #: Whether approximate (single-precision) values are worth computing
    #: before exact ones (:mod:`skmcal.acquisition` screening).
    screening = False

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(loss={self.loss.name!r}, gamma={self.gamma!r}, "
            f"n_nodes={self.eigenvectors.shape[0]}, M={self.eigenvectors.shape[1]}, "
            f"n_classes={self.n_classes}, full_graph={self.base is not None}, "
            f"n_iter={self.n_iter}, converged={self.converged})"
        )

    @property
    def n_classes(self) -> int:
        """Number of classes (2 for binary losses)."""
        return 2 if self.coef.ndim == 1 else self.coef.shape[1]

    def latent(self, nodes, rows=None, *, projected=None):
        """Latent values at the nodes: ``(K,)`` binary, ``(K, n_classes)`` otherwise.

        ``rows``: the nodes' eigenvector rows when the caller has gathered
        them; ``projected``: their product with ``coef`` when the caller has
        computed it (along with other products of the rows).
        """
        if projected is None:
            projected = (self.eigenvectors[nodes] if rows is None else rows) @ self.coef
        return projected if self.base is None else projected + self.base[nodes]

    def proba(self, nodes):
        """Class probabilities at the nodes (the likelihood at the latent values)."""
        return self.loss.proba(self.latent(nodes), self.gamma)

    def column_sums(self):
        """``V' 1``, the spectral coordinates of the all-ones vector."""
        return self.eigenvectors.sum(axis=0)

    def prepare(self, nodes):
        """This posterior with state kept for the look-aheads of a greedy batch over ``nodes``."""
        return self

    def kept_for(self, nodes) -> bool:
        """Whether :meth:`prepare` state covers ``nodes`` (cheap approximate values)."""
        return False

    def change_bound(self, nodes):
        """Cheap upper bounds of the model-change values of ``nodes``, or None (none known)."""
        return None

    def change_bound_ahead(self, n_nodes):
        """Context manager: the set-up that :meth:`change_bound` of about ``n_nodes``
        nodes needs runs in a background thread meanwhile (none here).

        A query enters it, inside ``small_algebra()``, before it
        draws its candidates; :meth:`change_bound` waits for the set-up, and so
        does the exit.
        """
        return nullcontext()

    def cov_at(self, rows):
        """Covariance of the latent values at eigenvector rows ``rows`` (``(n, M)``)."""
        raise NotImplementedError

    def loo_latent(self, labeled, targets, weights=None):
        """Leave-one-out latent values of the labeled nodes: each one's latent value
        after a refit without its own label, by one Newton step from the MAP.

        Dropping label ``j`` removes ``w_j l(u_j, y_j)`` from the objective: from the
        MAP, its gradient there is ``-V_j' g_j`` and its Hessian ``H - V_j' W_j V_j``
        (``g_j``, ``W_j`` the gradient and Hessian of ``w_j l`` in ``u_j``,
        ``V_j`` the rows of node ``j``). One Newton step moves ``u_j`` by
        ``V_j (H - V_j' W_j V_j)^-1 V_j' g_j = S_j (I - W_j S_j)^-1 g_j``
        (Woodbury), ``S_j`` the posterior covariance of ``u_j``. Exact for the
        Gaussian losses (one step is the refit); for the others the usual
        approximate leave-one-out (e.g. Rad and Maleki, 2020).

        Parameters
        ----------
        labeled : ndarray of shape (n_labeled,)
            The labeled nodes of the fit, distinct.
        targets : ndarray
            Their targets as fitted (``loss.encode``).
        weights : ndarray of shape (n_labeled,) or None
            Their weights in the fit (None: one each).

        Returns
        -------
        ndarray of shape (n_labeled,) or (n_labeled, n_classes)
            The leave-one-out latent values.
        """
        if self.base is not None:
            raise ValueError(
                "loo_latent takes the spectral model's posterior (base is None): a "
                "full-graph mean is not a function of the spectral coefficients."
            )
        rows = np.asarray(self.eigenvectors[labeled], dtype=np.float64)
        latent = rows @ self.coef
        w = np.ones(rows.shape[0]) if weights is None else np.asarray(weights, dtype=float)
        return latent + self._loo_steps(rows, latent, targets, w)

    def _loo_steps(self, rows, latent, targets, weights):
        """The change of each labeled node's latent value in :meth:`loo_latent`."""
        raise NotImplementedError

    def latent_cov(self, weights):
        """Covariance of the latent values at the rows of ``weights`` over the nodes.

        ``weights``: ``(n, n_nodes)``, a node's own row or its neighbours' weights.
        """
        return self.cov_at(np.asarray(weights @ self.eigenvectors))

    def latent_variance(self):
        """Posterior variance of the latent value at every node, ``(n_nodes,)``.

        ``v_i' C v_i`` (shared by the classes of ``mgr``); the diagonal of
        :meth:`latent_cov` at the nodes without forming it.
        """
        return row_quadratic(self.eigenvectors, self.cov)

    def evaluate(self, formula, nodes, *, approximate=False, gain=True, survey=None, floor=None):
        """``formula(terms)`` of the look-ahead terms of ``nodes``, one value per node.

        ``floor``: approximate values provably below it need not be computed; a
        family may return them as ``-inf``.
        """
        raise NotImplementedError

    def _in_pieces(self, function, nodes, chunk):
        """``function(piece)`` over pieces of ``chunk`` nodes, concatenated (last axis).

        The pieces run on ``n_threads`` threads (numpy releases the GIL in its
        kernels), each with a single-threaded BLAS; the pieces and what is
        computed on each do not depend on the thread count.
        """
        # no nodes: one empty piece, so that the result has the function's shape
        pieces = [nodes[start : start + chunk] for start in range(0, nodes.size, chunk)] or [nodes]
        workers = min(len(pieces), scoring_threads(self.n_threads))
        pool = thread_pool(workers) if workers > 1 else None
        with small_algebra():
            if pool is None:
                parts = [function(piece) for piece in pieces]
            else:
                parts = list(pool.map(function, pieces))
        return np.concatenate(parts, axis=-1)

    def look_ahead(self, node):
        """The posterior after adding ``node`` with its pseudo-label."""
        raise NotImplementedError


# ------------------------------------------------------------ rank-one family
#: The rank-one family scores candidates in pieces of ``SCORE_CHUNK`` (each
#: ~M^2 work per candidate, several pieces at once on the posterior's ``n_threads``
#: threads; see :class:`LaplacePosterior`).
SCORE_CHUNK = 8192


@dataclass(frozen=True, eq=False)
class RankOnePosterior(LaplacePosterior):
    """``gr``, ``logistic``, ``probit``, ``mgr``: one ``M x M`` covariance shared by the classes.

    A node ``k`` with pseudo-label ``yhat`` adds ``F'(u_k, yhat) v_k v_k'`` to
    the Hessian, so ``D_k = C v_k``, ``R_k = F / (1 + F' s_k)`` and ``K_k =
    F' / (1 + F' s_k)`` with ``s_k = v_k' C v_k`` (Sherman-Morrison; exact for
    ``gr``/``mgr``, one Newton step for the others).

    Many candidates are scored from one product per eigenvector row: with
    ``C = Q diag(d) Q'``, the row ``w = Q' v_k`` gives ``s_k = sum_i d_i
    w_i^2`` and ``||D_k||^2 = ||C v_k||^2 = sum_i d_i^2 w_i^2``, and the
    same product holds ``v_k' coef`` (the latent values) and ``v_k' C w``
    (the survey term). Approximate values (screening, see
    :mod:`skmcal.acquisition`) compute it in single precision.
    """

    #: ``s``, the variance of the white-noise remainder (0: none; see the module).
    nugget: float = 0.0
    #: Labeled nodes (distinct) and how often each is labeled (with ``nugget``).
    nugget_nodes: np.ndarray | None = None
    nugget_counts: np.ndarray | None = None

    screening = True

    def cov_at(self, rows):
        return rows @ self.cov @ rows.T

    def _loo_steps(self, rows, latent, targets, weights):
        # scalar curvature per label: S_j = s_j I, W_j = w_j F'_j I (Sherman-Morrison)
        if self.nugget:
            raise ValueError("loo_latent takes a posterior without a white-noise remainder.")
        first, second = self.loss.derivatives(latent, targets, self.gamma)
        s = row_quadratic(rows, self.cov)
        ratio = weights * s / (1.0 - weights * second * s)
        return (ratio[:, None] if latent.ndim == 2 else ratio) * first

    def latent_cov(self, weights):
        if not self.nugget:
            return super().latent_cov(weights)
        # u = A alpha + independent noise, where A's row is v_i, or (1 - sigma_j) v_j at
        # a labeled node, and the noise variance s, or s (1 - sigma_j) (see the module)
        weights = sp.csr_matrix(weights)
        scale = self._node_scale()
        rows = weights @ (self.eigenvectors * scale[:, None])
        noise = weights @ sp.diags(self.nugget * scale) @ weights.T
        return self.cov_at(rows) + noise.toarray()

    def latent_variance(self):
        if not self.nugget:
            return super().latent_variance()
        # the diagonal of latent_cov: scale_i^2 v_i' C v_i + s scale_i
        scale = self._node_scale()
        return scale**2 * super().latent_variance() + self.nugget * scale

    def _node_scale(self):
        """``1`` at every node, ``1 - sigma_j`` at a labeled node (see :meth:`latent_cov`)."""
        scale = np.ones(self.eigenvectors.shape[0])
        scale[self.nugget_nodes] -= self._shrink()
        return scale

    @property
    def _noise(self) -> float:
        """The loss scale of a new label's innovation: ``sqrt(gamma^2 + s)``."""
        return float(np.sqrt(self.gamma**2 + self.nugget)) if self.nugget else self.gamma

    def _shrink(self):
        """``sigma_j = s / (s + gamma^2 / n_j)`` of the labeled nodes."""
        return self.nugget / (self.nugget + self.gamma**2 / self.nugget_counts)

    def column_sums(self):
        """``V' 1``; with a remainder, ``V' 1 - V_L' sigma`` (see the module)."""
        sums = self.eigenvectors.sum(axis=0)
        if self.nugget:
            sums = sums - self._shrink() @ self.eigenvectors[self.nugget_nodes]
        return sums

    @functools.cached_property
    def _labeled_form(self):
        """``F`` with ``||F' v_k||^2 = sum_j sigma_j (2 - sigma_j) (v_j' C v_k)^2``."""
        sigma = self._shrink()
        F = self.cov @ (self.eigenvectors[self.nugget_nodes].T * np.sqrt(sigma * (2.0 - sigma)))
        if F.shape[1] > F.shape[0]:  # more labeled nodes than eigenvectors: an M x M factor
            e, E = np.linalg.eigh(F @ F.T)
            F = E * np.sqrt(np.clip(e, 0.0, None))
        return F

    @functools.cached_property
    def _spectral_cov(self):
        """``(Q, d)`` with ``cov = Q diag(d) Q'`` (numpy's ``eigh``, one BLAS thread)."""
        with small_algebra():
            d, Q = np.linalg.eigh(self.cov)
        return Q, d

    def _terms(self, nodes, basis, weights, survey):
        """The look-ahead terms of ``nodes`` from their rows' product with ``basis``.

        ``basis`` is ``[Q, coef, C w]`` (the last block only with a survey
        direction ``w``) and ``weights`` is ``[d, d^2]``, both in the
        precision to compute in.
        """
        rows = self.eigenvectors[nodes]
        product = rows.astype(basis.dtype, copy=False) @ basis
        M = weights.shape[0]
        width = self.coef.size // M
        end = M + width + (survey is not None)  # the remainder's form after
        # The latent values and the survey term in double precision, then every
        # entry squared in place (one pass over a contiguous array).
        projected = product[:, M : M + width].astype(np.float64)
        u = self.latent(nodes, projected=projected if self.coef.ndim == 2 else projected[:, 0])
        survey_term = None if survey is None else product[:, end - 1].astype(np.float64)
        np.square(product, out=product)
        s, gram = (product[:, :M] @ weights).T
        if self.nugget:
            nugget = self.nugget
            gram = gram - product[:, end:].sum(axis=1) + nugget * (2.0 * s + nugget)
            if survey_term is not None:
                survey_term = survey_term + nugget
        targets = self.loss.pseudo_targets(u, self.target_scale)
        if self.offset_coef is not None:
            targets = targets - np.multiply.outer(self.offset_direction[nodes], self.offset_coef)
        grad, curv = self.loss.derivatives(u, targets, self._noise)
        denominator = 1.0 + curv * s
        # (s, K) in C order: the acquisition formulas reduce over the last axis.
        step = np.divide(grad.T if grad.ndim == 2 else grad[None], denominator, order="C")
        return LookAheadTerms(
            step=step[None],
            gram=gram[None, None],
            gain=(curv / denominator)[None, None],
            survey=None if survey_term is None else survey_term[None, None],
        )

    def _products(self, survey=None, dtype=np.float64):
        """``(basis, weights)`` of ``_terms()`` in ``dtype``."""
        Q, d = self._spectral_cov
        blocks = [Q, self.coef.reshape(d.size, -1)]
        if survey is not None:
            blocks.append((self.cov @ survey)[:, None])
        if self.nugget:
            blocks.append(self._labeled_form)
        return np.hstack(blocks).astype(dtype), np.column_stack([d, d * d]).astype(dtype)

    @with_small_algebra  # the coefficients too: no idle BLAS threads spinning
    def evaluate(self, formula, nodes, *, approximate=False, gain=True, survey=None, floor=None):
        nodes = np.asarray(nodes, dtype=np.intp)
        basis, weights = self._products(survey, np.float32 if approximate else np.float64)
        return self._in_pieces(
            lambda piece: formula(self._terms(piece, basis, weights, survey)), nodes, SCORE_CHUNK
        )

    @with_small_algebra
    def look_ahead(self, node):
        t = self._terms(np.array([node], dtype=np.intp), *self._products(), None)
        Cv = self.eigenvectors[node] @ self.cov
        step = t.step[0, :, 0]
        change = np.multiply.outer(Cv, step) if self.coef.ndim == 2 else Cv * step[0]
        cov = self.cov - t.gain[0, 0, 0] * np.outer(Cv, Cv)
        labeled = {}
        if self.nugget:  # the node joins the labeled nodes whose beta is observed
            nodes, counts = self.nugget_nodes, self.nugget_counts
            at = np.searchsorted(nodes, node)
            if at < nodes.size and nodes[at] == node:
                counts = counts.copy()
                counts[at] += 1
            else:
                nodes, counts = np.insert(nodes, at, node), np.insert(counts, at, 1)
            labeled = {"nugget_nodes": nodes, "nugget_counts": counts}
        return replace(self, coef=self.coef - change, cov=0.5 * (cov + cov.T), **labeled)
