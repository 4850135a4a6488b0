"""MAP of the graph models over all nodes, without spectral truncation.

With ``L = I - D^-1/2 W D^-1/2`` the normalised Laplacian of the whole graph
(the matrix whose bottom eigenpairs the spectral model keeps), every loss of
:mod:`skmcal.losses` defines the objective over the latent values ``u`` of all
``N`` nodes

    J(u) = 1/2 u'(L + tau^2 I)u + sum_j loss(u_{k_j}, y_j),

``k_j`` the node of the j-th label (``U`` of shape ``(N, n_classes)`` and the
sum over classes of the quadratic form for ``mgr`` and ``ce``). ``gr`` and
``mgr`` are one sparse symmetric positive definite solve,

    (L + tau^2 I + gamma^-2 P'P) u = gamma^-2 P'y

(one right-hand side per class for ``mgr``), the Laplace learning of the
harmonic-function literature with a ``tau`` shift: ``tau, gamma -> 0`` gives
the harmonic extension of the labels. ``logistic``, ``probit`` and ``ce`` are
minimised by a damped inexact Newton method whose steps are sparse solves
with the Hessian ``L + tau^2 I + P'HP`` (for ``ce``, the block Hessian on the
zero-class-mean subspace, where the MAP lies).

Every solve is conjugate gradients preconditioned by a smoothed-aggregation
algebraic multigrid hierarchy (:mod:`pyamg`) held by a :class:`LaplacianSolver`,
one per graph, which reuses its hierarchy between fits (see there).
``gr`` / ``mgr`` fits with few labeled nodes, and refits adding a few, take
another route: with ``G = (L + tau^2 I)^-1 P'`` (a Green's column per
labeled node, cached by the solver for this ``tau``) the push-through
identity gives the MAP as ``G (gamma^2 I + P G)^-1 y``, so a refit solves
only the new nodes' columns, with one hierarchy of ``L + tau^2 I`` that
labels never change, and a new ``gamma`` solves nothing (``_fit_green()``;
the identity and the tolerance: docs/math.rst). A sparse
direct factorisation is no alternative on kNN graphs: SuperLU's factor of the
10-NN graph of 10,000 Fashion-MNIST images has 6.9 million entries and took
1.8 s, against 0.08 s for the hierarchy (``benchmarks/bench_fullgraph.py``).

The fits run with one BLAS thread (``skmcal._threads``): their dense
algebra is thin (``N x n_classes`` QR, small Woodbury systems), and threaded
BLAS spinning on a busy machine made it 100x slower.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pyamg
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee
from sklearn.exceptions import ConvergenceWarning

from ._threads import row_threads, run_parts, with_small_algebra
from ._warnings import warn_user
from .evidence import _check_positive, _check_weight, unit_scale
from .fitting import ce_hessian, check_weights
from .losses import BinaryLoss, CrossEntropyLoss, MulticlassLoss
from .posterior import zero_sum_basis

#: Default relative tolerance: a fit stops when the gradient norm of ``J`` is at
#: most ``tol`` times its norm at ``u = 0``, its entries weighted (for ``gr`` /
#: ``mgr`` by ``min(1, gamma^2 / c)`` at nodes labeled ``c`` times, for Newton's
#: losses by the inverse Hessian diagonal; see :func:`fit_full_graph`).
DEFAULT_TOL = 1e-8

#: Most nodes whose diagonal entry a hierarchy absorbs by a low-rank
#: (Woodbury) correction before it is rebuilt.
MAX_LOW_RANK = 64

#: The multigrid hierarchy coarsens until a level has at most this many
#: nodes (and at most an eighth of the graph's), then factors that level
#: densely (Cholesky): on kNN graphs the first coarse level is already nearly
#: dense (Fashion-MNIST 70,000: 1,703 nodes, 26% of the entries), and solving
#: it exactly took 6 CG iterations to 1e-6 against 8 with further levels.
MAX_COARSE = 2500

#: Strength threshold of the multigrid aggregation: an edge joins an aggregate
#: when its weight in ``L`` is at least this fraction of the largest off the
#: diagonal in its row (pyamg's "classical" strength, relative to each node's
#: strongest edge). pyamg's default ("symmetric", threshold 0) aggregates every
#: neighbour alike, which failed on graphs whose weights span decades: on the
#: Gaussian graph of Fashion-MNIST (70,000 nodes) with the narrow scale
#: ``(9, 0.25)`` Green's columns at tau = 0.01 took 44 CG iterations against 15.
#: On the default scale's graphs (Fashion-MNIST, MNIST-test, digits,
#: Binary-Clusters, Samson's cosine graph) 0.1 builds the same hierarchy; 0.25
#: changed it for 0-25% fewer iterations and up to 3x the set-up time.
STRENGTH_THETA = 0.1

#: Degree of the Chebyshev smoother before and after each coarse correction
#: (one sparse product per degree each side, as many as Jacobi sweeps): at
#: 70,000 nodes (Fashion-MNIST, tau = 0.03, Green's columns of 4 batches of 5
#: nodes queried by model change) degree 2 took 9 CG iterations per batch to
#: residual 6e-10 where 2 sweeps of Jacobi damped by 0.9 took 10.75, for 14%
#: less time; degree 3 took 8 iterations, for 1% less.
SMOOTHER_DEGREE = 2

#: The Chebyshev smoother damps the eigenvalues of ``D^-1 A`` (``D`` the
#: diagonal of the level's matrix ``A``) in ``[rho / SMOOTHER_RATIO, rho]``,
#: ``rho`` an upper estimate of the largest one; below that interval it
#: still contracts, so the V-cycle is a symmetric positive definite
#: preconditioner. Ratios 4 and 6 took the same iterations above; 10, one more.
SMOOTHER_RATIO = 4.0

#: Factor on the Lanczos estimate of the largest eigenvalue of ``D^-1 A``
#: (an estimate from below), so that the smoother's interval covers it.
SPECTRAL_MARGIN = 1.1

#: Relative ridge added to the coarsest level before its factorisation.
COARSE_RIDGE = 1e-8

#: A diagonal entry within this factor of the one the preconditioner was
#: built for is left to conjugate gradients.
DIAGONAL_SLACK = 2.0

#: Most bytes the Green's columns cached by one solver may take (see
#: :meth:`LaplacianSolver.green_solve`); beyond it, fits solve directly.
MAX_GREEN_BYTES = 2**28

#: Most nodes whose second-order Green's entries one shift keeps
#: (``_GreenColumns.estimate``: a square of float64, 32 MiB); beyond it only
#: those among the nodes asked for are kept (more where more are asked for).
MAX_ESTIMATE_NODES = 2048

#: A gr / mgr fit goes through Green's columns when at most this many per
#: class (right-hand side) are missing, or no more than are cached already:
#: a cold fit with 2 labels per class, then refits adding labels; a cold fit
#: with many labels solves directly (one column per class).
GREEN_NEW_PER_CLASS = 2

#: Passes of ``_fit_green()`` that tighten the columns before giving up.
_GREEN_PASSES = 8

#: Fewest rows of a multigrid level (and of a graph, for its products with
#: ``L``) whose sparse products and vector updates are split into row blocks
#: on threads (``skmcal._threads.row_threads()``; every row is computed as
#: in one piece). Two threads against one, an active-learning iteration of
#: full mgr on Fashion-MNIST (2 cores, ``benchmarks/bench_fullgraph.py
#: --al-iterations``): 70,000 nodes 257 -> 156 ms, 40,000 141 -> 100, 20,000
#: 71 -> 51, 10,000 38 -> 35; refits at 5,000 nodes 20 -> 23 ms and at 3,000
#: 13 -> 17 ms, where the threads' hand-over costs more than it saves.
PARALLEL_MIN_ROWS = 10_000

#: Fewest rows per block: with more threads than a graph's rows over this,
#: its solves take one block per this many rows (a hand-over per block and
#: pass costs tens of microseconds; at 70,000 nodes a product takes ~2 ms).
MIN_BLOCK_ROWS = 5_000

#: Columns of the coarsest level's inverse per product of the V-cycle
#: (``_coarse_product()``; the blocks are dealt to the threads).
COARSE_BLOCK = 512

#: Precision of the multigrid levels' sparse matrices and of the cycle on them
#: (float64 for a singular system, see ``LaplacianSolver._hierarchy()``).
PRECONDITIONER_DTYPE = np.float32

_ARMIJO = 1e-4
_MIN_STEP = 2.0**-30
_ROUNDOFF = 16 * np.finfo(float).eps


def _inverse_sqrt(d):
    out = np.zeros_like(d, dtype=float)
    pos = d > 0
    out[pos] = 1.0 / np.sqrt(d[pos])
    return out


def normalized_laplacian(weights) -> sp.csr_matrix:
    """``L = I - D^-1/2 W D^-1/2`` as a CSR matrix (an isolated node's row is ``e_i'``)."""
    W = sp.csr_matrix(weights, dtype=float)
    s = _inverse_sqrt(np.asarray(W.sum(axis=1)).ravel())
    return (sp.identity(W.shape[0], format="csr") - sp.diags(s) @ W @ sp.diags(s)).tocsr()


def _each(rows, function):
    """``function(s)`` for each row slice ``s`` of ``rows`` on its thread; None: all rows here."""
    if rows is None:
        function(slice(None))
    else:
        run_parts(len(rows), lambda i: function(rows[i]))


def _cg_update(rows, x, cols, alpha, p, q, r):
    """``x[:, cols] += alpha p`` (None: every column) and ``r -= alpha q``, in place."""

    def part(s):
        if cols is None:
            x[s] += alpha * p[s]
        else:
            x[s, cols] += alpha * p[s]
        r[s] -= alpha * q[s]

    _each(rows, part)


def _cg_direction(rows, p, z, beta):
    """``p = z - beta p``, in place."""

    def part(s):
        np.multiply(beta, p[s], out=p[s])
        np.subtract(z[s], p[s], out=p[s])

    _each(rows, part)


def _pcg(apply_a, apply_m, b, x, atol, max_iter, row_scale=None, rows=None):
    """Preconditioned conjugate gradients on the independent columns of ``(n, k)`` arrays.

    Flexible (Polak-Ribiere) directions, ``beta = z_new'(r_new - r) / z'r``:
    the float32 multigrid cycle is symmetric only to its round-off. Column
    ``c`` stops once its residual norm is at most ``atol[c]``, the norm of
    the residual's rows multiplied by ``row_scale`` (shape ``(n,)``) when
    given. ``rows``: slices of the rows whose vector updates run on threads
    (None: here; the same values). The inner products run here on whole
    columns; NumPy may round them differently as the arrays lie differently
    in memory, so solves with and without threads agree to round-off, not
    bit for bit. Returns ``(x, iterations, converged, residuals)``: iterations
    counted per column and summed, and the last residual norm of every column
    (that of the recurrence, which tracks the true one to round-off).
    """

    def norm(r):
        scaled = r if row_scale is None else row_scale[:, None] * r
        return np.sqrt(np.einsum("ij,ij->j", scaled, scaled))

    r = b - apply_a(x)
    norms = norm(r)
    active = norms > atol
    total = 0
    if not active.any():
        return x, total, True, norms
    cols = np.flatnonzero(active)
    r = r[:, cols]
    z = apply_m(r)
    p = z.copy()
    rz = np.einsum("ij,ij->j", r, z)
    for _ in range(max_iter):
        total += cols.size
        q = apply_a(p)
        alpha = rz / np.einsum("ij,ij->j", p, q)
        _cg_update(rows, x, None if cols.size == x.shape[1] else cols, alpha, p, q, r)
        norms[cols] = norm(r)
        going = norms[cols] > atol[cols]
        if not going.any():
            return x, total, True, norms
        if not going.all():
            cols, r, p, q = cols[going], r[:, going], p[:, going], q[:, going]
            rz, alpha = rz[going], alpha[going]
        z = apply_m(r)
        rz_new = np.einsum("ij,ij->j", r, z)
        if not np.all(rz_new > 0):  # preconditioner not positive definite here: give up
            return x, total, False, norms
        # r_new - r = -alpha q
        _cg_direction(rows, p, z, alpha * np.einsum("ij,ij->j", z, q) / rz)
        rz = rz_new
    return x, total, False, norms


def _n_parts(n_rows):
    """Row blocks of a solve on ``n_rows`` nodes: one per thread
    (``skmcal._threads.row_threads()``), at most one per :data:`MIN_BLOCK_ROWS`
    rows; one below :data:`PARALLEL_MIN_ROWS`."""
    if n_rows < PARALLEL_MIN_ROWS:
        return 1
    return max(1, min(row_threads(), n_rows // MIN_BLOCK_ROWS))


def _cuts(indptr, n_parts):
    """Bounds of ``n_parts`` row blocks of a CSR matrix with about equal entries."""
    n_rows = indptr.size - 1
    inner = np.searchsorted(indptr, np.linspace(0, indptr[-1], n_parts + 1)[1:-1])
    return np.concatenate([[0], np.clip(inner, 0, n_rows), [n_rows]]).astype(np.intp)


def _row_blocks(A, cuts):
    """The rows of CSR ``A`` between ``cuts``, as CSR matrices sharing its arrays."""
    blocks = []
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        start, end = A.indptr[lo], A.indptr[hi]
        blocks.append(
            sp.csr_matrix(
                (A.data[start:end], A.indices[start:end], A.indptr[lo : hi + 1] - start),
                shape=(hi - lo, A.shape[1]),
            )
        )
    return blocks


@dataclass
class _Rows:
    """A matrix split into row blocks for :func:`skmcal._threads.run_parts`."""

    slices: list
    blocks: list

    @classmethod
    def of(cls, A, cuts=None, n_parts=None):
        """``A``'s rows between ``cuts``, or in ``n_parts`` blocks of about equal entries."""
        cuts = _cuts(A.indptr, n_parts) if cuts is None else cuts
        return cls([slice(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)],
                   _row_blocks(A, cuts))  # fmt: skip

    @classmethod
    def whole(cls, A):
        """``A`` as one block (no thread), its arrays untouched."""
        return cls([slice(0, A.shape[0])], [A])

    @property
    def n_parts(self) -> int:
        return len(self.slices)

    def product(self, X):
        """``A @ X``, each block's rows on its thread."""
        out = np.empty((self.slices[-1].stop, *X.shape[1:]), dtype=np.result_type(
            self.blocks[0].dtype, X.dtype))  # fmt: skip

        def part(i):
            out[self.slices[i]] = self.blocks[i] @ X

        run_parts(self.n_parts, part)
        return out


@dataclass
class _LevelSplit:
    """A multigrid level's matrices in row blocks: ``A`` and ``P`` by the level's rows
    (``A.slices`` are the blocks of its vectors), ``Rt`` by the next level's rows."""

    A: _Rows
    P: _Rows
    Rt: _Rows


@dataclass
class _Hierarchy:
    """Multigrid levels (``_smoothing_level()``) in the node ``order``, the coarsest level's
    Cholesky factor (a ``cho_factor`` pair, float64) or inverse (an array in ``dtype``)."""

    order: np.ndarray
    levels: list
    coarse: tuple | np.ndarray
    dtype: type
    _splits: dict = field(default_factory=dict, repr=False)

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    def rows(self, n_parts):
        """The finest level's row blocks of :meth:`split` (None where it splits none)."""
        split = self.split(n_parts)
        return None if split is None else split[0][0].A.slices

    def split(self, n_parts):
        """``(levels, n_parts)``: the levels in ``n_parts`` row blocks (None for
        a level below :data:`PARALLEL_MIN_ROWS` rows); None where no level is split."""
        if n_parts < 2 or not self.levels or self.levels[0][0].shape[0] < PARALLEL_MIN_ROWS:
            return None
        if n_parts not in self._splits:
            levels = []
            for A, P, Rt, _, _ in self.levels:
                if A.shape[0] < PARALLEL_MIN_ROWS:
                    levels.append(None)
                    continue
                cuts = _cuts(A.indptr, n_parts)
                levels.append(_LevelSplit(_Rows.of(A, cuts), _Rows.of(P, cuts),
                                          _Rows.of(Rt, n_parts=n_parts)))  # fmt: skip
            self._splits[n_parts] = (levels, n_parts)
        return self._splits[n_parts]


def _vcycle(hierarchy, R, *, ordered=False, n_parts=1):
    """One V-cycle of ``hierarchy`` on every column of ``R`` (``(n_nodes, k)``), from zero.

    ``ordered``: the rows of ``R``, and of the result, are in the hierarchy's
    node order already (no permutation either way). ``n_parts``: threads
    over the rows of the levels of :data:`PARALLEL_MIN_ROWS` rows or more
    (``_Hierarchy.split()``), the same values.
    """
    split = hierarchy.split(n_parts)
    rows = [slice(0, R.shape[0])] if split is None else hierarchy.rows(n_parts)
    order = hierarchy.order
    start = np.empty(R.shape, dtype=hierarchy.dtype)

    def convert(i):
        start[rows[i]] = R[rows[i]] if ordered else R[order[rows[i]]]

    run_parts(len(rows), convert)
    X = _cycle(hierarchy.levels, hierarchy.coarse, start, split=split)
    out = np.empty(R.shape)

    def back(i):
        if ordered:
            out[rows[i]] = X[rows[i]]
        else:
            out[order[rows[i]]] = X[rows[i]]

    run_parts(len(rows), back)
    return out


def _cycle(levels, coarse, R, level=0, split=None):
    """The V-cycle from ``level`` down (see ``_vcycle()``).

    The same Chebyshev smoother (``_smooth()``) before and after the
    coarse correction (a symmetric preconditioner), the coarsest level solved
    by its Cholesky factor (in float64) or its inverse ``coarse``: sparse
    products with all columns at once; ``split`` (``_Hierarchy.split()``):
    the levels' rows in blocks on threads (None, or a level below
    :data:`PARALLEL_MIN_ROWS` rows: one block).
    """
    if level == len(levels):
        if isinstance(coarse, np.ndarray):
            return _coarse_product(coarse, R, 1 if split is None else split[1])
        solution = scipy.linalg.cho_solve(coarse, R.astype(float), check_finite=False)
        return solution.astype(R.dtype)
    A, P, Rt, scale, steps = levels[level]
    parts = None if split is None else split[0][level]
    if parts is None:  # one block: the whole matrices
        parts = _LevelSplit(_Rows.whole(A), _Rows.whole(P), _Rows.whole(Rt))
    X, residual = _smooth(parts.A, scale, steps, R, None)
    correction = _cycle(levels, coarse, parts.Rt.product(residual), level + 1, split)

    def prolong(i):
        X[parts.P.slices[i]] += parts.P.blocks[i] @ correction

    run_parts(parts.P.n_parts, prolong)
    return _smooth(parts.A, scale, steps, R, X, residual=False)[0]


def _coarse_product(inverse, R, n_parts):
    """``inverse @ R`` for the symmetric coarsest inverse, as ``R' C^-1`` (row-major), in
    blocks of :data:`COARSE_BLOCK` columns, the blocks dealt to ``n_parts`` threads.

    The blocks are the same whatever ``n_parts`` (a BLAS product's rounding
    may depend on its shape), so the values are too.
    """
    n = inverse.shape[0]
    out = np.empty((n, R.shape[1]), dtype=np.result_type(inverse, R))
    starts = range(0, n, COARSE_BLOCK)

    def part(i):
        for lo in starts[i::n_parts]:
            block = slice(lo, min(lo + COARSE_BLOCK, n))
            out[block] = (R.T @ inverse[:, block]).T

    run_parts(min(n_parts, len(starts)), part)
    return out


def _smooth(A, scale, steps, R, X, *, residual=True):
    """Chebyshev smoothing of ``A X = R`` from ``X`` (None: zero); ``(X, R - A X)``.

    The Chebyshev semi-iteration (Saad, *Iterative Methods for Sparse Linear
    Systems*, Algorithm 12.1) on ``D^-1 A X = D^-1 R``, ``scale`` the column
    ``D^-1``: ``d_0 = c_0 D^-1 r``, then ``r -= A d``,
    ``d = a_k d + c_k D^-1 r``, ``X += d``, with the pairs ``steps`` =
    ``((0, c_0), (a_1, c_1), ...)`` of ``_chebyshev_steps()``; a given ``X``
    is updated in place. The residual costs one more product
    (``residual=False``: None in its place; the post-smoother of a cycle
    needs none, and leaving that product out took the Green's columns at
    70,000 nodes from 430 to 383 ms CPU per batch of 5).

    ``A``: a sparse matrix, or a :class:`_Rows` whose row blocks each run on
    their thread, with the same operations on every row, so the same values:
    each pass reads the previous direction ``d`` of all rows and writes the
    next one to a second array; ``X`` is read by the products of the first
    pass of a smoothing from ``X``, so its update waits for the next pass.
    """
    if not isinstance(A, _Rows):
        A = _Rows.whole(A)
    rows, blocks = A.slices, A.blocks
    r, d, following = np.empty_like(R), np.empty_like(R), np.empty_like(R)
    fresh = X is None
    if fresh:
        X = np.empty_like(R)
    c0 = steps[0][1]

    def first(i):
        s = rows[i]
        if fresh:
            r[s] = R[s]
        else:
            np.subtract(R[s], blocks[i] @ X, out=r[s])
        np.multiply(c0, scale[s] * r[s], out=d[s])
        if fresh:
            X[s] = d[s]

    run_parts(A.n_parts, first)
    pending = not fresh  # X += d of the first pass
    for a, c in steps[1:]:

        def step(i, a=a, c=c, d=d, following=following, pending=pending):
            s = rows[i]
            r[s] -= blocks[i] @ d
            if pending:
                X[s] += d[s]
            np.multiply(d[s], a, out=following[s])
            following[s] += c * (scale[s] * r[s])
            X[s] += following[s]

        run_parts(A.n_parts, step)
        d, following, pending = following, d, False

    def last(i, d=d):
        s = rows[i]
        if residual:
            r[s] -= blocks[i] @ d
        if pending:
            X[s] += d[s]

    if residual or pending:
        run_parts(A.n_parts, last)
    return X, (r if residual else None)


def _chebyshev_steps(upper, dtype):
    """Coefficients of ``_smooth()`` for eigenvalues in ``[upper / SMOOTHER_RATIO, upper]``."""
    lower = upper / SMOOTHER_RATIO
    theta, delta = (upper + lower) / 2, (upper - lower) / 2
    sigma = theta / delta
    rho = 1 / sigma
    steps = [(dtype(0), dtype(1 / theta))]
    for _ in range(SMOOTHER_DEGREE - 1):
        rho_next = 1 / (2 * sigma - rho)
        steps.append((dtype(rho_next * rho), dtype(2 * rho_next / delta)))
        rho = rho_next
    return tuple(steps)


def _smoothing_level(level, dtype):
    """``(A, P, R, D^-1 as a column, Chebyshev steps)`` of a pyamg level, in ``dtype``."""
    A = level.A.tocsr()
    scale = 1.0 / A.diagonal()
    root = np.sqrt(scale)
    symmetric = sp.diags(root) @ A @ sp.diags(root)
    start = np.random.RandomState(0).rand(A.shape[0], 1)
    upper = pyamg.util.linalg.approximate_spectral_radius(
        symmetric, symmetric=True, initial_guess=start
    )
    return (
        A.astype(dtype),
        level.P.tocsr().astype(dtype),
        level.R.tocsr().astype(dtype),
        scale.astype(dtype)[:, None],
        _chebyshev_steps(SPECTRAL_MARGIN * upper, dtype),
    )


class LaplacianSolver:
    """Preconditioned conjugate gradients for ``(L + diag(shift)) X = R`` on one graph.

    ``L`` is the normalised Laplacian of ``weights``; ``shift`` is a
    non-negative vector (``tau^2`` plus the loss curvature at the labeled
    nodes). The preconditioner is a smoothed-aggregation AMG hierarchy of
    ``L + diag(shift_0)`` for the shift of some earlier solve, kept between
    solves:

    - entries of the new shift whose diagonal ``1 + shift`` is within a factor
      :data:`DIAGONAL_SLACK` of the preconditioned one are left to CG (a
      bounded perturbation: the condition number grows at most by that factor);
    - entries that grew beyond it (new labels) are added exactly to the
      preconditioned matrix by a Woodbury correction, one V-cycle per node;
      adding the same positive diagonal to a matrix and to its preconditioner
      keeps their spectral equivalence, so the correction is as good a
      preconditioner as a new hierarchy;
    - the hierarchy is rebuilt when an entry fell below it by more than the
      slack, when more than :data:`MAX_LOW_RANK` nodes would need a
      correction, or when the shift seen by the smoothest mode ``D^1/2 1``
      (on which ``L`` vanishes: ``d'shift``) changed by more than the slack
      (a new ``tau``; a singular system after a shifted one).

    Parameters
    ----------
    weights : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric non-negative affinity ``W``.

    Attributes
    ----------
    laplacian : scipy.sparse.csr_matrix
        ``L``.
    degrees : ndarray of shape (n_nodes,)
        Row sums of ``W``.
    n_setups : int
        Hierarchies built so far.
    lock : threading.RLock
        Held by a classifier's fit over all its use of the solver: the cached
        Green's columns and preconditioners are shared by every fit on the
        graph, threads included.
    """

    def __init__(self, weights):
        W = sp.csr_matrix(weights, dtype=float)
        if W.shape[0] != W.shape[1]:
            raise ValueError(f"weights must be square; got shape {W.shape}.")
        self.degrees = np.asarray(W.sum(axis=1)).ravel()
        self.laplacian = normalized_laplacian(W)
        self.n_setups = 0
        self._shift_hierarchy = None
        self._base_shift = None
        self._effective_shift = None
        self._nodes = np.empty(0, dtype=np.intp)
        self._columns = np.empty((W.shape[0], 0))
        self._buffer = None
        self._small = None
        self._greens = OrderedDict()  # tau2 -> _GreenColumns, least recently used first
        self._low_modes = None  # (eigenvalues, eigenvectors) of L, set_low_modes()
        self._order = None  # reverse Cuthill-McKee order of L (_hierarchy())
        self._split = {}  # n_parts -> the Laplacian in row blocks (matvec())
        self.lock = threading.RLock()

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.laplacian.shape[0]

    def matvec(self, shift, X):
        """``(L + diag(shift)) X`` for ``X`` of shape ``(n_nodes,)`` or ``(n_nodes, k)``.

        In row blocks on threads from :data:`PARALLEL_MIN_ROWS` nodes
        (``_n_parts()``; the same values).
        """
        column = shift if X.ndim == 1 else shift[:, None]
        n_parts = _n_parts(self.n_nodes)
        if n_parts < 2:
            return self.laplacian @ X + column * X
        if n_parts not in self._split:
            self._split[n_parts] = _Rows.of(self.laplacian, n_parts=n_parts)
        rows = self._split[n_parts]
        out = np.empty(X.shape, dtype=np.result_type(self.laplacian.dtype, X.dtype))

        def part(i):
            s = rows.slices[i]
            np.add(rows.blocks[i] @ X, column[s] * X[s], out=out[s])

        run_parts(n_parts, part)
        return out

    def _build(self, shift):
        self._shift_hierarchy = self._hierarchy(shift)
        self._base_shift = shift.copy()
        self._effective_shift = shift.copy()
        self._nodes = np.empty(0, dtype=np.intp)
        self._columns = np.empty((self.n_nodes, 0))
        self._buffer = None  # _add_columns()
        self._small = None

    def _add_columns(self, nodes, columns):
        """Keep ``columns`` (V-cycles of the unit vectors of ``nodes``) after the others.

        In the order the nodes came (``_nodes`` the same), in a buffer of
        :data:`MAX_LOW_RANK` columns (column-major) allocated once per
        hierarchy: adding a node writes its column, with no copy of the
        others (at 70,000 nodes a sorted copy of up to 64 columns cost 15 ms
        a refit).
        """
        kept, total = self._nodes.size, self._nodes.size + nodes.size
        if self._buffer is None or self._buffer.shape[1] < total:
            self._buffer = np.empty((self.n_nodes, max(MAX_LOW_RANK, total)), order="F")
            self._buffer[:, :kept] = self._columns
        self._buffer[:, kept:total] = columns
        self._columns = self._buffer[:, :total]
        self._nodes = np.concatenate([self._nodes, nodes])

    def _hierarchy(self, shift, *, inverse=False):
        """A smoothed-aggregation hierarchy of ``L + diag(shift)`` for ``_vcycle()``.

        Built in the reverse Cuthill-McKee order of the graph (neighbours
        near in memory: sparse products on blocks of columns ran 1.4x faster
        at 70,000 nodes), its sparse levels in float32 (the preconditioner's
        accuracy does not bound the solution's) unless ``L + diag(shift)`` is
        singular (Poisson: the null modes the coarse ridge amplifies must
        cancel in the projection, which float32 would not resolve), its
        coarsest factor in float64. ``inverse``: the coarsest level's inverse
        instead, in the levels' precision, for a hierarchy that many cycles
        will use (the Green's columns': at 70,000 nodes its 2,077 coarse nodes
        took 4.5 ms per cycle of 5 columns by the factor, 2.2 ms by the float32
        inverse, against 0.2 s once to invert).
        """
        dtype = PRECONDITIONER_DTYPE if self.degrees @ shift > 0 else np.float64
        if self._order is None:  # one order for every shift (the graph's alone; _borrow())
            self._order = reverse_cuthill_mckee(self.laplacian, symmetric_mode=True)
            self._order = self._order.astype(np.intp)
        order = self._order
        A = (self.laplacian + sp.diags(shift))[order][:, order].tocsr()
        candidate = np.sqrt(self.degrees[order]) + (self.degrees[order] <= 0)
        # pyamg's prolongation smoother estimates a spectral radius from numpy's
        # global random stream: a fixed draw makes the hierarchy reproducible
        # and leaves the caller's stream where it was.
        state = np.random.get_state()  # noqa: NPY002 (the global stream pyamg draws from)
        np.random.seed(0)  # noqa: NPY002
        try:
            hierarchy = pyamg.smoothed_aggregation_solver(
                A,
                B=candidate[:, None],
                symmetry="hermitian",
                strength=("classical", {"theta": STRENGTH_THETA}),
                max_coarse=min(MAX_COARSE, max(self.n_nodes // 8, 1)),
                keep=False,
            )
        finally:
            np.random.set_state(state)  # noqa: NPY002
        levels = [_smoothing_level(level, dtype) for level in hierarchy.levels[:-1]]
        coarse = hierarchy.levels[-1].A.toarray()
        # A ridge below the coarse operator's eigenvalues (about tau^2 times its
        # diagonal) keeps the factor of a singular system (Poisson) finite;
        # the null modes it amplifies are projected out after the preconditioner.
        coarse[np.diag_indices_from(coarse)] += COARSE_RIDGE * max(coarse.diagonal().max(), 1.0)
        self.n_setups += 1
        factor = scipy.linalg.cho_factor(coarse)
        if not inverse:
            return _Hierarchy(order, levels, factor, dtype)
        triangle, _ = scipy.linalg.lapack.dpotri(factor[0], lower=factor[1])
        upper = np.tril(triangle).T if factor[1] else np.triu(triangle)
        return _Hierarchy(order, levels, (upper + np.triu(upper, 1).T).astype(dtype), dtype)

    def _vcycle(self, R):
        """The V-cycle of the hierarchy of ``_prepare()`` (see ``_vcycle()``)."""
        return _vcycle(self._shift_hierarchy, R, n_parts=_n_parts(self.n_nodes))

    def _prepare(self, shift):
        """Make the preconditioner fit ``L + diag(shift)`` (see the class notes)."""
        if self._shift_hierarchy is None or self._base_shift.shape != shift.shape:
            self._build(shift)
            return
        # The smoothest mode, D^1/2 1, is seen by the shift alone (L vanishes on it).
        weighted, new_weighted = self.degrees @ self._effective_shift, self.degrees @ shift
        smooth = new_weighted / weighted if weighted > 0 else (1.0 if new_weighted == 0 else np.inf)
        if not 1.0 / DIAGONAL_SLACK <= smooth <= DIAGONAL_SLACK:
            self._build(shift)
            return
        ratio = (1.0 + shift) / (1.0 + self._effective_shift)
        changed = np.flatnonzero(np.abs(np.log(ratio)) > np.log(DIAGONAL_SLACK))
        if changed.size == 0:
            return
        added = shift[changed] - self._base_shift[changed]
        new = changed[~np.isin(changed, self._nodes)]
        if np.any(added <= 0) or self._nodes.size + new.size > MAX_LOW_RANK:
            self._build(shift)
            return
        if new.size:
            unit = np.zeros((self.n_nodes, new.size))
            unit[new, np.arange(new.size)] = 1.0
            self._add_columns(new, self._vcycle(unit))
        self._effective_shift[changed] = shift[changed]
        added = self._effective_shift[self._nodes] - self._base_shift[self._nodes]
        # (M + S'CS)^-1 r = M^-1 r - Z (C^-1 + S Z)^-1 S M^-1 r, with Z = M^-1 S'.
        small = self._columns[self._nodes] + np.diag(1.0 / added)
        self._small = scipy.linalg.lu_factor(small)

    def _precondition(self, R):
        out = self._vcycle(R)
        if self._small is not None:
            out -= self._columns @ scipy.linalg.lu_solve(self._small, out[self._nodes])
        return out

    def set_low_modes(self, eigenvalues, eigenvectors):
        """Give the solver eigenpairs of ``L`` (the graph's spectrum).

        A Green's column missing at one shift starts from the same node's
        column at another (:meth:`green_solve`), corrected exactly on these
        modes; the rest of its error is left to the iterations, so the
        columns meet the same residuals with any pairs (approximate ones
        only help less). The classifier gives its graph's. The arrays are
        kept, not copied.

        Parameters
        ----------
        eigenvalues : ndarray of shape (M,)
            Non-negative eigenvalues of ``L``.
        eigenvectors : ndarray of shape (n_nodes, M)
            Their orthonormal eigenvectors (``SpectralGraph.eigenvectors``).
        """
        eigenvalues = np.asarray(eigenvalues)
        if (
            eigenvalues.ndim != 1
            or np.ndim(eigenvectors) != 2
            or eigenvectors.shape != (self.n_nodes, eigenvalues.size)
        ):
            raise ValueError(
                f"eigenvectors must have shape (n_nodes, n_eigenvalues) = "
                f"({self.n_nodes}, {eigenvalues.size}) for {eigenvalues.size} eigenvalues "
                f"(1-d); got eigenvalues of shape {eigenvalues.shape} and eigenvectors of "
                f"shape {np.shape(eigenvectors)}."
            )
        if not np.all(eigenvalues >= 0):
            raise ValueError("eigenvalues of L must be non-negative (and not NaN).")
        self._low_modes = (eigenvalues, eigenvectors)

    def n_green_missing(self, tau2, nodes) -> int:
        """How many of ``nodes`` have no cached Green's column for this ``tau2``."""
        green = self._greens.get(tau2)
        if green is None:
            return len(nodes)
        return int(np.count_nonzero(~green.has(nodes)))

    def column_bytes(self, n_columns: int) -> int:
        """Bytes of ``n_columns`` Green's columns (float64 over the nodes)."""
        return 8 * self.n_nodes * int(n_columns)

    def greens_fit(self, n_shifts: int, n_columns: int) -> bool:
        """Whether ``n_columns`` Green's columns at each of ``n_shifts`` shifts fit in
        :data:`MAX_GREEN_BYTES` together (this fit's own, whatever else is cached)."""
        return n_shifts * self.column_bytes(n_columns) <= MAX_GREEN_BYTES

    def green_bytes(self, tau2, nodes) -> int:
        """Bytes the Green's columns of this ``tau2`` would take once ``nodes`` have theirs."""
        green = self._greens.get(tau2)
        kept = 0 if green is None else green.n_columns
        return self.column_bytes(kept + self.n_green_missing(tau2, nodes))

    def green_solve(self, tau2, nodes, atol, max_iter=1000):
        """Make the Green's columns ``g_i = (L + tau2 I)^-1 e_i`` of ``nodes`` meet ``atol``.

        The columns are cached per ``tau2``, each with the residual norm
        ``||e_i - (L + tau2 I) g_i||`` it reached; columns missing or above
        their ``atol`` are solved (refined from the cached value; a missing
        one started from the node's column at the nearest other cached shift,
        corrected on the eigenpairs of :meth:`set_low_modes`, ``_borrow()``)
        by conjugate gradients with a hierarchy of
        ``L + tau2 I`` built once per ``tau2``: labels never change it. The
        columns are solved and kept in the hierarchy's node order, so that no
        iteration permutes them (5 columns
        at 70,000 nodes: 47 to 37 ms per iteration with the products of ``L``
        in that order too). Several shifts are kept (the evidence of
        :func:`green_block` compares a few ``tau``), the least recently used
        dropped first while they take more than :data:`MAX_GREEN_BYTES`; then
        the last shift's columns of earlier fits (blocks without any of
        ``nodes``), oldest first.

        Parameters
        ----------
        tau2 : float
            Positive shift.
        nodes : ndarray of shape (k,)
            Distinct node indices.
        atol : ndarray of shape (k,)
            Residual norm each column must reach.
        max_iter : int
            Iterations per column.

        Returns
        -------
        iterations : int
            CG iterations, summed over the columns solved.
        converged : bool
        """
        green = self._greens.get(tau2)
        if green is None:
            hierarchy = self._hierarchy(np.full(self.n_nodes, tau2), inverse=True)
            order = hierarchy.order
            operator = (self.laplacian + tau2 * sp.identity(self.n_nodes))[order][:, order]
            green = self._greens[tau2] = _GreenColumns(tau2, hierarchy, operator.tocsr())
        self._greens.move_to_end(tau2)
        known = green.has(nodes)
        residual = np.full(len(nodes), np.inf)
        residual[known] = green.residuals(nodes[known])
        todo = np.flatnonzero(residual > atol)
        if todo.size == 0:
            return 0, True
        unit = np.zeros((self.n_nodes, todo.size))
        unit[green.position[nodes[todo]], np.arange(todo.size)] = 1.0
        x = np.zeros_like(unit)
        refine = known[todo]
        if refine.any():
            x[:, refine] = green.columns(nodes[todo[refine]])
        if not refine.all():
            self._borrow(green, nodes[todo[~refine]], x, np.flatnonzero(~refine))
        n_parts = _n_parts(self.n_nodes)
        x, total, converged, norms = _pcg(
            lambda X: green.product(X, n_parts),
            lambda R: _vcycle(green.hierarchy, R, ordered=True, n_parts=n_parts),
            unit, x, atol[todo], max_iter, rows=green.hierarchy.rows(n_parts),
        )  # fmt: skip
        green.store(nodes[todo], x, norms)
        self._trim(nodes)
        return total, converged

    def _borrow(self, green, nodes, x, cols):
        """Start the new columns ``x[:, cols]`` of ``nodes`` at ``green``'s shift from the
        cached columns of the same nodes at the nearest other shift (on a log scale).

        ``(L + tau2 I)^-1 e_i`` moves smoothly with ``tau2``: at 70,000 nodes
        (Fashion-MNIST) the columns at ``tau2 = 1e-4`` left a residual of about
        0.03 in the system at ``9e-4`` (1 from zero), and the columns of a
        search's other ``tau`` took 2.8 conjugate-gradient iterations to
        ``1e-4`` against 3.9. The start changes how many iterations a column
        takes, not the residual it meets.

        With the eigenpairs of :meth:`set_low_modes` the start is corrected on
        them exactly: ``g_b = g_a + V ((Lambda + tau_b^2)^-1 - (Lambda +
        tau_a^2)^-1) V' e_i``, which leaves the residual ``(tau_a^2 - tau_b^2)``
        times the column's part outside ``V`` in place of the whole column
        (most of a Green's column, its part along ``D^1/2 1`` included, lies
        on the smoothest modes, where the shift matters most). There, with the
        graph's 50 eigenpairs, the start's residual fell from 0.03 to 0.001
        and a column took 1.4 iterations to ``1e-4`` (30 columns: 152 ms
        against 337).
        """
        others = sorted(
            (g for tau2, g in self._greens.items() if tau2 != green.tau2),
            key=lambda g: abs(np.log(g.tau2 / green.tau2)),
        )
        left = np.ones(len(nodes), dtype=bool)
        for other in others:
            found = np.flatnonzero(left & other.has(nodes))
            if found.size == 0:
                continue
            values = other.columns(nodes[found])  # every shift's rows in self._order
            if self._low_modes is not None:
                lam, V = self._low_modes
                change = 1.0 / (lam + green.tau2) - 1.0 / (lam + other.tau2)
                coef = (change[:, None] * V[nodes[found]].T).astype(V.dtype, copy=False)
                values += (V @ coef)[self._order]
            x[:, cols[found]] = values
            left[found] = False
            if not left.any():
                break

    def _trim(self, nodes):
        """Keep the cached columns within :data:`MAX_GREEN_BYTES`: drop the least
        recently used shifts, then the blocks of the last one that hold none of
        ``nodes`` (columns of earlier fits on other labels), oldest first."""

        def size():
            return self.column_bytes(sum(g.n_columns for g in self._greens.values()))

        while len(self._greens) > 1 and size() > MAX_GREEN_BYTES:
            self._greens.popitem(last=False)
        if size() > MAX_GREEN_BYTES:
            next(reversed(self._greens.values())).drop_blocks(
                keep=nodes, excess=size() - MAX_GREEN_BYTES, column_bytes=self.column_bytes(1)
            )

    def green_residuals(self, tau2, nodes):
        """Residual norms of the cached Green's columns of ``nodes`` for ``tau2``."""
        return self._greens[tau2].residuals(nodes)

    def green_rows(self, tau2, rows, nodes):
        """``G[rows][:, nodes]`` from the cached Green's columns of ``nodes`` for ``tau2``."""
        green = self._greens[tau2]
        return green.columns(nodes, green.position[rows])

    def green_estimate(self, tau2, nodes):
        """``K = G[nodes][:, nodes]`` to second order in the cached columns' residuals
        (``_GreenColumns.estimate``); every node needs a column (:meth:`green_solve`)."""
        return self._greens[tau2].estimate(nodes, _n_parts(self.n_nodes))

    def green_combine(self, tau2, nodes, coef):
        """``G[:, nodes] @ coef`` from the cached Green's columns of ``nodes`` for ``tau2``."""
        return self._greens[tau2].combine(nodes, coef, _n_parts(self.n_nodes))

    def solve(self, shift, rhs, *, x0=None, atol, max_iter=1000, project=None, row_scale=None):
        """Solve ``(L + diag(shift)) X = rhs`` column by column.

        Parameters
        ----------
        shift : ndarray of shape (n_nodes,)
            Non-negative diagonal shift.
        rhs : ndarray of shape (n_nodes, k)
        x0 : ndarray of shape (n_nodes, k) or None
            Starting point (zeros if None).
        atol : ndarray of shape (k,)
            Residual norm at which each column stops.
        max_iter : int
            Iterations per column.
        project : callable or None
            For a singular system (``shift = 0``): the orthogonal projector on
            the range of ``L``, applied after the preconditioner (``rhs`` must
            lie in that range).
        row_scale : ndarray of shape (n_nodes,) or None
            Factors of the residual's rows in the norm that ``atol`` bounds
            (``_residual_scale()``); None: the plain norm.

        Returns
        -------
        X : ndarray of shape (n_nodes, k)
        iterations : int
            CG iterations, summed over the columns.
        converged : bool
        """
        self._prepare(shift)

        def apply_m(R):
            Z = self._precondition(R)
            return Z if project is None else project(Z)

        x = np.zeros_like(rhs) if x0 is None else np.array(x0, dtype=float)
        x, total, converged, _ = _pcg(
            lambda X: self.matvec(shift, X), apply_m, rhs, x, atol, max_iter, row_scale,
            self._shift_hierarchy.rows(_n_parts(self.n_nodes)),
        )  # fmt: skip
        return x, total, converged


class _GreenColumns:
    """Green's columns ``(L + tau2 I)^-1 e_i`` of one shift, in blocks as they were solved.

    Rows in the ``hierarchy``'s node order: row ``position[i]`` is node ``i``'s;
    ``operator`` is ``L + tau2 I`` in that order.
    """

    def __init__(self, tau2, hierarchy, operator):
        self.tau2, self.hierarchy, self.operator = tau2, hierarchy, operator
        self._split = {}  # n_parts -> operator in row blocks
        self.position = np.empty_like(hierarchy.order)
        self.position[hierarchy.order] = np.arange(hierarchy.order.size)
        self.where = {}  # node -> (block, column)
        self.blocks = []  # (n_nodes, k) Fortran arrays
        self.norms = []  # residual norm of each block's columns
        self.n_columns = 0
        self._slot = {}  # node -> row and column of _estimates
        self._estimates = np.empty((0, 0))  # second-order K entries, NaN where unknown

    def product(self, X, n_parts=1):
        """``operator @ X``, in ``n_parts`` row blocks on threads (``_n_parts()``)."""
        if n_parts < 2:
            return self.operator @ X
        if n_parts not in self._split:
            self._split[n_parts] = _Rows.of(self.operator, n_parts=n_parts)
        return self._split[n_parts].product(X)

    def has(self, nodes):
        """Which of ``nodes`` have a column."""
        return np.array([int(node) in self.where for node in nodes], dtype=bool)

    def residuals(self, nodes):
        return np.array([self.norms[b][c] for b, c in (self.where[int(i)] for i in nodes)])

    def _by_block(self, nodes):
        """``{block: (columns in the block, positions in nodes)}``."""
        groups = {}
        for j, node in enumerate(nodes):
            b, c = self.where[int(node)]
            cols, pos = groups.setdefault(b, ([], []))
            cols.append(c)
            pos.append(j)
        return groups

    def columns(self, nodes, rows=slice(None)):
        out = None
        for b, (cols, pos) in self._by_block(nodes).items():
            part = self.blocks[b][rows][:, cols]
            if out is None:
                out = np.empty((part.shape[0], len(nodes)))
            out[:, pos] = part
        return out

    def estimate(self, nodes, n_parts=1):
        """``K = P (L + tau2 I)^-1 P'`` at ``nodes`` to second order in the columns' residuals.

        With ``x_j`` the column of node ``j`` and ``r_j = e_j - A x_j`` its
        residual (``A = L + tau2 I``), ``e_i' A^-1 e_j = x_j[i] + x_i' r_j +
        delta_i' A delta_j`` (``delta = A^-1 e - x``): the estimate ``x_j[i]
        + x_i' r_j``, symmetrised, is off by ``r_i' A^-1 r_j``, at most
        ``||r_i|| ||r_j|| / tau2``, where ``x_j[i]`` alone is off by up to
        ``||r_j|| / tau2``. The entries are kept (a property of the graph,
        whatever columns are refined or dropped later): a call computes those
        of the nodes with an unknown pair, one product with ``A`` and one
        with the columns for their residuals. Every node must have a column.
        """
        nodes = np.asarray(nodes)
        new = sum(int(node) not in self._slot for node in nodes)
        if len(self._slot) + new > MAX_ESTIMATE_NODES and len(self._slot) > nodes.size - new:
            # keep the entries among the nodes asked for, drop the others
            kept = [int(node) for node in nodes if int(node) in self._slot]
            at = [self._slot[node] for node in kept]
            self._estimates = self._estimates[np.ix_(at, at)]
            self._slot = {node: i for i, node in enumerate(kept)}
        for node in nodes:
            self._slot.setdefault(int(node), len(self._slot))
        grow = len(self._slot) - self._estimates.shape[0]
        if grow:
            self._estimates = np.pad(self._estimates, (0, grow), constant_values=np.nan)
        slots = np.array([self._slot[int(node)] for node in nodes], dtype=np.intp)
        unknown = np.isnan(self._estimates[np.ix_(slots, slots)])
        # the nodes never estimated, then any node of a pair still unknown among the others
        fresh = np.diagonal(unknown).copy()
        rest = np.flatnonzero(~fresh)
        fresh[rest[unknown[np.ix_(rest, rest)].any(axis=0)]] = True
        fresh = np.flatnonzero(fresh)
        if fresh.size:
            rows = self.position[nodes]
            X = self.columns(nodes[fresh])
            R = -self.product(X, n_parts)
            R[rows[fresh], np.arange(fresh.size)] += 1.0
            K = X[rows]  # x_j[i]: (nodes, fresh)
            for b, (cols, pos) in self._by_block(nodes).items():
                K[pos] += (self.blocks[b].T @ R)[cols]  # x_i' r_j
            both = K[fresh]
            K[fresh] = 0.5 * (both + both.T)
            self._estimates[np.ix_(slots, slots[fresh])] = K
            self._estimates[np.ix_(slots[fresh], slots)] = K.T
        return self._estimates[np.ix_(slots, slots)]

    def combine(self, nodes, coef, n_parts=1):
        """``G[:, nodes] @ coef`` in node order, in the hierarchy's row blocks
        (:meth:`_Hierarchy.rows`) on ``n_parts`` threads."""
        terms = []
        for b, (cols, pos) in self._by_block(nodes).items():
            weights = np.zeros((self.blocks[b].shape[1], coef.shape[1]))
            weights[cols] = coef[pos]
            terms.append((self.blocks[b], weights))
        rows = self.hierarchy.rows(n_parts) or [slice(None)]
        ordered = np.zeros((self.position.size, coef.shape[1]))
        out = np.empty_like(ordered)

        def combine(i):
            for block, weights in terms:
                ordered[rows[i]] += block[rows[i]] @ weights

        def gather(i):
            out[rows[i]] = ordered[self.position[rows[i]]]

        run_parts(len(rows), combine)
        run_parts(len(rows), gather)
        return out

    def drop_blocks(self, keep, excess, column_bytes):
        """Drop the oldest blocks holding none of the nodes ``keep`` until ``excess``
        bytes (``column_bytes`` per column) are freed or no such block is left; the
        blocks left keep their order."""
        needed = {self.where[int(i)][0] for i in keep if int(i) in self.where}
        dropped, freed = set(), 0
        for b, block in enumerate(self.blocks):
            if freed >= excess:
                break
            if b not in needed:
                dropped.add(b)
                freed += column_bytes * block.shape[1]
                self.n_columns -= block.shape[1]
        alive = [b for b in range(len(self.blocks)) if b not in dropped]
        renumber = {b: k for k, b in enumerate(alive)}
        self.blocks = [self.blocks[b] for b in alive]
        self.norms = [self.norms[b] for b in alive]
        self.where = {i: (renumber[b], c) for i, (b, c) in self.where.items() if b in renumber}

    def store(self, nodes, x, norms):
        new = ~self.has(nodes)
        for j in np.flatnonzero(~new):
            b, c = self.where[int(nodes[j])]
            self.blocks[b][:, c] = x[:, j]
            self.norms[b][c] = norms[j]
        if new.any():
            b = len(self.blocks)
            self.blocks.append(np.asfortranarray(x[:, new]))
            self.norms.append(norms[new].copy())
            for c, node in enumerate(nodes[new]):
                self.where[int(node)] = (b, c)
            self.n_columns += int(new.sum())


_SOLVERS: OrderedDict = OrderedDict()
_SOLVER_CACHE_SIZE = 4
_SOLVERS_LOCK = threading.Lock()


def solver_for(weights) -> LaplacianSolver:
    """The :class:`LaplacianSolver` of ``weights``, shared while that matrix object lives.

    A small cache keyed on the identity of the weight matrix (the graph's
    ``weights`` is never modified once built): refits on one graph reuse its
    preconditioner.
    """
    key = id(weights)
    with _SOLVERS_LOCK:
        entry = _SOLVERS.get(key)
        if entry is not None and entry[0]() is weights:
            _SOLVERS.move_to_end(key)
            return entry[1]
        solver = LaplacianSolver(weights)
        _SOLVERS[key] = (weakref.ref(weights), solver)
        while len(_SOLVERS) > _SOLVER_CACHE_SIZE:
            _SOLVERS.popitem(last=False)
        return solver


def _check_labeled(labeled, n_nodes, *, empty=True):
    """``labeled`` as node indices (``np.intp``) of a graph of ``n_nodes`` nodes."""
    labeled = np.asarray(labeled)
    if labeled.ndim != 1 or labeled.dtype.kind not in "iu" or (not empty and labeled.size == 0):
        what = "a 1-D array" if empty else "a non-empty 1-D array"
        raise ValueError(f"labeled must be {what} of node indices; got {labeled!r}.")
    if labeled.size and (labeled.min() < 0 or labeled.max() >= n_nodes):
        raise ValueError(f"labeled holds node indices outside [0, {n_nodes}).")
    return labeled.astype(np.intp)


def offset_direction(weights, labeled, *, solver: LaplacianSolver | None = None) -> np.ndarray:
    """The entries of ``D^1/2 1``, the null vector of ``L``, at the ``labeled`` nodes.

    The direction of the class offset of the full-graph Gaussian model
    (:func:`skmcal.evidence.full_log_evidence`, ``free_offset`` of
    :func:`fit_full_graph`): ``sqrt`` of each labeled node's degree.
    """
    solver = solver_for(weights) if solver is None else solver
    return np.sqrt(solver.degrees[np.asarray(labeled, dtype=np.intp)])


def class_offset(weights, labeled, targets, *, solver: LaplacianSolver | None = None):
    """The class offset of the labels: the least-squares coefficients of ``targets``
    on :func:`offset_direction`.

    ``free_offset`` of :func:`fit_full_graph` fits ``targets - w c`` (``w``
    the offset direction at the labeled nodes, ``c`` this); the look-ahead
    of a model-change query compares the latent values with pseudo-targets
    shifted the same way (:func:`skmcal.fitting.posterior_around`).

    Parameters
    ----------
    weights : sparse matrix of shape (n_nodes, n_nodes)
        The graph's weights.
    labeled : array-like of shape (n_labeled,)
        The labeled nodes.
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        Their targets.
    solver : LaplacianSolver or None
        The graph's solver (None: :func:`solver_for`).

    Returns
    -------
    float or ndarray of shape (n_classes,)
        ``w' targets / w' w``; zero where every labeled node is isolated.
    """
    w = offset_direction(weights, labeled, solver=solver)
    norm = float(w @ w)
    return np.zeros(np.shape(targets)[1:]) if norm == 0.0 else (w @ targets) / norm


@with_small_algebra
def green_block(
    weights,
    labeled,
    tau: float,
    *,
    tol: float = DEFAULT_TOL,
    solver: LaplacianSolver | None = None,
    second_order: bool = False,
) -> np.ndarray:
    """``K = P (L + tau^2 I)^-1 P'``: the Green's function at the labeled nodes.

    The Green's columns of the labeled nodes (:meth:`LaplacianSolver.green_solve`,
    cached per ``tau`` and shared with the fits) solved to residual norm
    ``tol`` each (the columns of the unit vectors), their rows at those nodes
    symmetrised. What :func:`skmcal.evidence.full_log_evidence` takes.

    An entry read from a column is off by up to ``||g_i|| tol <= tol /
    tau^2``; with ``second_order`` it is corrected by the column's residual
    (:meth:`LaplacianSolver.green_estimate`), off by up to ``tol^2 / tau^2``:
    the same bound from columns of residual ``sqrt(tol)``, which a column
    started from another shift's (``_borrow()``) often meets without an
    iteration. Those entries are not the fits' (a fit with Green's columns
    reads them from the columns, which its residual check assumes).

    Parameters
    ----------
    weights : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric affinity ``W``.
    labeled : ndarray of shape (n_labeled,)
        Node of each label (a node may repeat).
    tau : float
        Positive prior shift.
    tol : float, default=1e-8
        Residual norm of each Green's column.
    solver : LaplacianSolver or None
        As :func:`fit_full_graph`.
    second_order : bool, default=False
        Correct the entries by the columns' residuals (see above).

    Returns
    -------
    ndarray of shape (n_labeled, n_labeled)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.diags([np.ones(3), np.ones(3)], [-1, 1], shape=(4, 4)).tocsr()
    >>> np.round(green_block(W, np.array([0, 3]), tau=1.0), 3)
    array([[0.578, 0.022],
           [0.022, 0.578]])
    """
    solver = solver_for(weights) if solver is None else solver
    labeled = _check_labeled(labeled, solver.n_nodes, empty=False)
    _check_positive("tau", tau)
    nodes, inverse = np.unique(labeled, return_inverse=True)
    _, converged = solver.green_solve(tau**2, nodes, np.full(nodes.size, tol))
    if not converged:
        warn_user(
            f"The Green's columns at tau={tau!r} did not reach the residual {tol!r}.",
            ConvergenceWarning,
        )
    if second_order:
        K = solver.green_estimate(tau**2, nodes)
    else:
        K = solver.green_rows(tau**2, nodes, nodes)
        K = 0.5 * (K + K.T)
    return K[np.ix_(inverse, inverse)]


@dataclass
class FullGraphFit:
    """The MAP of a loss over all nodes.

    Attributes
    ----------
    latent : ndarray of shape (n_nodes,) or (n_nodes, n_classes)
        MAP latent values (``ce``: zero mean over the classes at every node).
    curvature : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        The loss curvature at the labeled nodes, what a Laplace covariance
        around this MAP needs: the second derivative of the loss for ``gr``,
        ``logistic`` and ``probit``; ``1 / gamma^2`` for ``mgr`` (the Hessian
        of every class); for ``ce`` the softmax rows ``pi_j`` at the MAP, the
        Hessian block of label j being ``(diag(pi_j) - pi_j pi_j') / gamma^2``
        (pass them to :func:`skmcal.fitting.ce_hessian`).
    n_iter : int
        Newton iterations (0 for ``gr`` and ``mgr``).
    n_cg : int
        Conjugate-gradient iterations, summed over right-hand sides and steps.
    converged : bool
        Whether the gradient met the tolerance.
    """

    latent: np.ndarray
    curvature: np.ndarray
    n_iter: int
    n_cg: int
    converged: bool


def spectral_hessian(loss, prior, P, fit: FullGraphFit, gamma: float) -> np.ndarray:
    """Hessian of the spectral objective with the loss curvature of a full-graph fit.

    The Laplace covariance around the full-graph MAP that the acquisition
    functions use with ``logistic``, ``probit`` and ``ce`` is the inverse of
    this matrix (``gr``/``mgr`` add the prior's remainder as white noise,
    :func:`skmcal.fitting.posterior_around`): the spectral model's posterior
    precision ``Lambda_tau + P'HP`` with ``H`` taken at the full-graph latent
    values of the labeled nodes (an approximation: the exact covariance is
    ``(L + tau^2 I + P'HP)^-1`` over all nodes).

    Parameters
    ----------
    loss : BinaryLoss or MulticlassLoss
        The loss of ``fit``.
    prior : ndarray of shape (M,)
        ``eigenvalues + tau**2``.
    P : ndarray of shape (n_labeled, M)
        Eigenvector rows of the labeled nodes, in the order of the fit's labels.
    fit : FullGraphFit
    gamma : float
        The loss scale of the fit.

    Returns
    -------
    ndarray of shape (M, M), or (M n_classes, M n_classes) class-major for ``ce``
    """
    if isinstance(loss, CrossEntropyLoss):
        return ce_hessian(prior, P, fit.curvature, gamma)
    H = (P.T * fit.curvature) @ P
    H[np.diag_indices_from(H)] += prior
    return H


def _selector(labeled, n_nodes):
    n = labeled.size
    return sp.csr_matrix((np.ones(n), (np.arange(n), labeled)), shape=(n, n_nodes))


def _check_inputs(loss, solver, labeled, targets, tau, gamma, init):
    labeled = _check_labeled(labeled, solver.n_nodes)
    n_nodes = solver.n_nodes
    targets = np.asarray(targets, dtype=float)
    expected = (labeled.size,) if not loss.multiclass else (labeled.size, targets.shape[-1])
    if targets.shape != expected or (loss.multiclass and targets.ndim != 2):
        raise ValueError(
            f"targets must have shape {expected} for loss {loss.name!r} (one "
            f"{'one-hot row' if loss.multiclass else 'label in {-1, +1}'} per labeled "
            f"node); got {targets.shape}."
        )
    _check_positive("tau", tau)
    _check_positive("gamma", gamma)
    shape = (n_nodes,) if not loss.multiclass else (n_nodes, targets.shape[1])
    if init is not None:
        init = np.asarray(init, dtype=float)
        if init.shape != shape:
            raise ValueError(f"init must have shape {shape} (the latent values); got {init.shape}.")
    return labeled, targets, init


@with_small_algebra
def fit_full_graph(
    loss,
    weights,
    labeled,
    targets,
    tau: float,
    gamma: float,
    *,
    init=None,
    tol: float = DEFAULT_TOL,
    max_iter: int = 50,
    solver: LaplacianSolver | None = None,
    free_offset: bool = False,
) -> FullGraphFit:
    """MAP of ``loss`` over all nodes of the graph of ``weights`` (no truncation).

    Minimises ``1/2 u'(L + tau^2 I)u + sum_j loss(u_{k_j}, y_j)`` (see the module
    documentation).

    Parameters
    ----------
    loss : BinaryLoss or MulticlassLoss
        One of :data:`skmcal.losses.LOSSES`.
    weights : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric affinity ``W`` (``SpectralGraph.weights``).
    labeled : ndarray of shape (n_labeled,)
        Node of each label (a node may repeat: its losses add up).
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        Labels in {-1, +1} for binary losses, one-hot rows for ``mgr``/``ce``.
    tau, gamma : float
        Prior shift and loss scale, both positive.
    init : ndarray of shape (n_nodes,) or (n_nodes, n_classes) or None
        Starting latent values (warm start, e.g. the previous fit's
        ``latent``). The minimiser does not depend on it.
    tol : float, default=1e-8
        Stop when the gradient norm of the objective is at most ``tol``
        times its norm at ``u = 0``. For ``gr`` / ``mgr`` the gradient's
        entries at the labeled nodes are first multiplied by ``min(1, gamma^2
        / c)`` (``c`` labels at the node): they carry the loss's weight ``c /
        gamma^2``, and with a small ``gamma`` the plain relative norm did not
        bound the error of the other nodes' values (at ``tau = gamma =
        1e-4``, 0.16 of the largest on MNIST-test's 10,000 nodes with 500
        labels; the scaled norm holds them to about ``tol`` at any
        ``gamma``; ``benchmarks/bench_solver_tol.py``). For ``logistic``,
        ``probit`` and ``ce`` (Newton's method) every entry is first divided
        by the Hessian's diagonal there, ``1 + tau^2`` plus the loss terms'
        curvature (at the start about ``1 / gamma^2`` at a labeled node,
        near zero once its label is fitted).
    max_iter : int, default=50
        Newton iterations (``logistic``, ``probit``, ``ce``).
    solver : LaplacianSolver or None
        The solver state of this graph; None takes :func:`solver_for`
        ``(weights)``, shared between fits on the same matrix.
    free_offset : bool, default=False
        ``gr`` / ``mgr`` only: fit the targets less their projection on
        :func:`offset_direction` (the labeled nodes' entries of ``D^1/2 1``,
        the null vector of ``L``), the class offset of
        :func:`skmcal.evidence.full_log_evidence` left out of the latent
        values. Without it, the part of every Green's column along that
        vector (about ``1 / (N tau^2)`` at each node) adds to each class a
        constant that grows with its share of the labels, and a batch of
        labels of one class makes it the prediction far from every label
        (Laplace learning's degeneracy at low label rates, which Poisson
        learning's centred sources avoid the same way).

    Returns
    -------
    FullGraphFit

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skmcal.losses import LOSSES
    >>> W = sp.diags([np.ones(5), np.ones(5)], [-1, 1], shape=(6, 6)).tocsr()
    >>> fit = fit_full_graph(LOSSES["gr"], W, np.array([0, 5]), np.array([-1.0, 1.0]),
    ...                      tau=1e-3, gamma=1e-3)
    >>> np.round(fit.latent, 2)
    array([-1.  , -0.85, -0.28,  0.28,  0.85,  1.  ])
    """
    solver = solver_for(weights) if solver is None else solver
    labeled, targets, init = _check_inputs(loss, solver, labeled, targets, tau, gamma, init)
    P = _selector(labeled, solver.n_nodes)
    if free_offset:
        if not loss.closed_form:
            raise ValueError(
                f"free_offset=True takes the losses 'gr' and 'mgr'; got {loss.name!r}."
            )
        targets = targets - np.multiply.outer(
            offset_direction(weights, labeled, solver=solver),
            class_offset(weights, labeled, targets, solver=solver),
        )
    if loss.closed_form:
        return _fit_gaussian(solver, labeled, P, targets, tau, gamma, init, tol)
    if isinstance(loss, MulticlassLoss):
        if not isinstance(loss, CrossEntropyLoss):
            raise ValueError(f"No full-graph Newton method for the multiclass loss {loss.name!r}.")
        problem = _CrossEntropyProblem(solver, loss, P, targets, tau, gamma)
    elif isinstance(loss, BinaryLoss):
        problem = _BinaryProblem(solver, loss, P, targets, tau, gamma)
    else:
        raise ValueError(f"loss must be one of skmcal.losses.LOSSES; got {loss!r}.")
    x, n_iter, n_cg, converged = _newton(problem, problem.start(init), tol, max_iter)
    return FullGraphFit(
        latent=problem.latent(x),
        curvature=problem.curvature(x),
        n_iter=n_iter,
        n_cg=n_cg,
        converged=converged,
    )


def _residual_scale(n_nodes, nodes, counts, gamma):
    """Row factors of the norm in which a gr / mgr fit's residual meets its tolerance.

    The rows of ``Q = L + tau^2 I + P'P / gamma^2`` at a node labeled ``c``
    times carry ``c / gamma^2``: there a residual ``r`` moves the fit by about
    ``gamma^2 r / c``, and with a small ``gamma`` the plain norm of the
    residual, relative to ``||P'Y|| / gamma^2``, would leave the unlabeled
    nodes' values far from the MAP (the system's condition is about
    ``1 / gamma^2``). Their rows are scaled by ``min(1, gamma^2 / c)``, the
    others by one: the norm of the row-scaled system, whose condition does
    not grow as ``gamma`` shrinks.
    """
    scale = np.ones(n_nodes)
    scale[nodes] = np.minimum(1.0, gamma**2 / counts)
    return scale


def _fit_gaussian(solver, labeled, P, targets, tau, gamma, init, tol):
    """gr / mgr: one solve with ``Q = L + tau^2 I + P'P / gamma^2``, its columns compressed.

    The fit meets ``||S (Q U - B)|| <= tol ||S B||``, ``B = P'Y / gamma^2``
    and ``S`` the row scale of :func:`_residual_scale`. Through Green's
    columns (:func:`_fit_green`) when few are missing; otherwise, or when they
    do not reach the tolerance, from the start (or their result): the
    residual ``R = B - Q U_0`` is reduced to its significant singular
    directions (after a warm start with a few new labels, about one per new
    label however many classes), each solved once.
    """
    one_dim = targets.ndim == 1
    Y = targets[:, None] if one_dim else targets
    nodes, counts = np.unique(labeled, return_counts=True)
    scale = _residual_scale(solver.n_nodes, nodes, counts, gamma)
    B = np.asarray(P.T @ Y) / gamma**2
    budget = tol * np.linalg.norm(scale[:, None] * B)
    curvature = np.full(P.shape[0], 1.0 / gamma**2)
    shift = tau**2 + np.asarray(P.T @ curvature).ravel()  # Q = L + diag(shift)
    n_cg = 0
    if labeled.size:
        missing = solver.n_green_missing(tau**2, nodes)
        if (
            missing <= max(GREEN_NEW_PER_CLASS * Y.shape[1], nodes.size - missing)
            and solver.green_bytes(tau**2, nodes) <= MAX_GREEN_BYTES
        ):
            U, n_cg, converged = _fit_green(
                solver, labeled, Y, tau, gamma, shift, budget, scale
            )
            if converged:
                return FullGraphFit(
                    latent=U[:, 0] if one_dim else U,
                    curvature=curvature, n_iter=0, n_cg=n_cg, converged=True,
                )  # fmt: skip
            init = U
    if init is None:
        U = np.zeros_like(B)
    else:
        U = (init[:, None] if init.ndim == 1 else init).copy()
    R = B - solver.matvec(shift, U)
    basis, r_factor = np.linalg.qr(R)
    left, sigma, right = np.linalg.svd(r_factor)
    keep = sigma > budget / (2.0 * np.sqrt(sigma.size))
    converged = True
    if keep.any():
        directions = basis @ left[:, keep]
        atol = budget / (2.0 * np.sqrt(keep.sum()) * sigma[keep])
        X, cg, converged = solver.solve(shift, directions, atol=atol, row_scale=scale)
        U += X @ (sigma[keep, None] * right[keep])
        n_cg += cg
    latent = U[:, 0] if one_dim else U
    return FullGraphFit(
        latent=latent, curvature=curvature, n_iter=0, n_cg=n_cg, converged=converged
    )


def _fit_green(solver, labeled, Y, tau, gamma, shift, budget, scale):
    """gr / mgr from the Green's columns ``G = (L + tau^2 I)^-1 P'`` of the labeled nodes.

    With ``Q = L + tau^2 I + P'P / gamma^2`` and ``K = P G``, the MAP
    ``Q^-1 B`` (``B = P'Y / gamma^2``) is ``G C`` with ``(gamma^2 I + K) C = Y``
    (the push-through identity): labels and ``gamma`` enter only through the
    small system, so a refit solves only the columns of new labeled nodes
    (:meth:`LaplacianSolver.green_solve`, cached between fits) and a new
    ``gamma`` none. Columns with residuals ``E = P' - (L + tau^2 I) G`` and
    ``K`` taken from them give ``Q G C - B = -E C`` in exact arithmetic
    (``Q = L + diag(shift)``); the fit meets ``budget`` when the scaled
    residual ``||S (Q G C - B)||``
    (``S = diag(scale)``), computed, does. Otherwise the columns are
    tightened by the factor it missed by, and the check repeats. A new
    column is first solved to ``budget / (sqrt(m) (1 + tau^2) ||Y||_2)``,
    ``m`` the smaller of the labeled nodes ``n`` and the right-hand sides
    ``k``: ``||E C||_F <= ||E||_2 ||C||_F <= ||E||_2 sqrt(m) ||C||_2``, with
    ``||C||_2`` about ``(1 + tau^2) ||Y||_2`` (as ``K_ii >= 1 / (1 +
    tau^2)``) and ``||E||_2`` about the largest column's residual: the
    columns solve separate unit vectors, their residuals lie near their own
    nodes, nearly orthogonal (``||E||_2 <= sqrt(n)`` times it where they
    align, which the check catches). At 70,000 nodes (Fashion-MNIST, full
    ``mgr``, 25 to 100 labels) the fits' residuals were 0.24 to 0.32 of the
    budget with ``m = 10`` classes, and 0.08 to 0.17 with ``sqrt(n)`` in
    its place, which took 15% more conjugate-gradient iterations
    (``benchmarks/results/bench_fullgraph_al_first_tol.md``). With a small
    ``tau`` the columns' part along ``D^1/2 1`` (about ``1 / (N tau^2)`` at
    each node) cancels in ``G C`` and leaves round-off that tighter columns do not reduce (at tau =
    gamma = 1e-6 on 150 nodes, 1e-5 in the values): when that round-off,
    estimated from ``max|K|`` and ``C``, is near the budget, when a pass does
    not halve the residual, after :data:`_GREEN_PASSES` passes, or once the
    columns stop converging, the caller goes on from ``G C``.

    Returns ``(latent of shape (n_nodes, k), CG iterations, converged)``.
    """
    nodes, inverse = np.unique(labeled, return_inverse=True)
    node_y = np.zeros((nodes.size, Y.shape[1]))
    np.add.at(node_y, inverse, Y)
    first = budget / (
        np.sqrt(min(nodes.size, Y.shape[1])) * (1.0 + tau**2) * np.linalg.norm(Y, 2)
    )
    atol = np.full(nodes.size, first)
    n_cg, missed = 0, np.inf
    for _ in range(_GREEN_PASSES):
        cg, converged = solver.green_solve(tau**2, nodes, atol)
        n_cg += cg
        K = solver.green_rows(tau**2, nodes, nodes)[np.ix_(inverse, inverse)]
        K[np.diag_indices_from(K)] += gamma**2
        C = scipy.linalg.solve(K, Y, check_finite=False)
        node_c = np.zeros_like(node_y)
        np.add.at(node_c, inverse, C)
        U = solver.green_combine(tau**2, nodes, node_c)
        if not converged:
            return U, n_cg, False
        R = solver.matvec(shift, U)
        R[nodes] -= node_y / gamma**2
        missed, before = np.linalg.norm(scale[:, None] * R), missed
        if missed <= budget:
            return U, n_cg, True
        # round-off of G C (each entry a sum of products up to max|K| |C|), as a
        # residual: what tighter columns cannot remove
        floor = _ROUNDOFF * np.abs(K).max() * np.abs(node_c).sum(axis=0).max()
        if missed > 0.5 * before or 2.0 * np.sqrt(solver.n_nodes) * floor > 0.5 * budget:
            break
        atol = solver.green_residuals(tau**2, nodes) * (0.5 * budget / missed)
    return U, n_cg, False


class _BinaryProblem:
    """Objective, gradient and Newton step of a binary loss over all nodes."""

    def __init__(self, solver, loss, P, y, tau, gamma):
        self.solver, self.loss, self.P, self.y = solver, loss, P, y
        self.tau2, self.gamma = tau**2, gamma
        self.prior_shift = np.full(solver.n_nodes, self.tau2)

    def hessian_shift(self, u):
        """``tau^2 + h``, ``h`` the loss terms' curvature at each node at ``u`` (0 where
        no label is): the diagonal the Newton step's solve adds to ``L``."""
        return self.prior_shift + self.P.T @ self.curvature(u)

    def row_scale(self, u, shift=None):
        """``1 / (1 + tau^2 + h)`` (``shift``: :meth:`hessian_shift` at ``u``, if
        computed): the inverse diagonal of the Hessian (the normalised Laplacian's
        diagonal is one), by which the entries of a gradient weigh in
        :func:`_newton`'s norm. A labeled node's entry ``g`` moves the minimiser by
        about ``g / (1 + tau^2 + h)``: with a small ``gamma`` the curvature at the
        start is about ``1 / gamma^2`` and a saturated label's is near zero, and the
        plain norm, relative to the start's, left the values 1e-3 off at tau =
        gamma = 1e-3."""
        return 1.0 / (1.0 + (self.hessian_shift(u) if shift is None else shift))

    def norm(self, u, g):
        """The norm of the gradient ``g`` at ``u`` in which the fit meets its
        tolerance: its entries times :meth:`row_scale`."""
        scale = self.row_scale(u)
        return float(np.linalg.norm((scale if g.ndim == 1 else scale[:, None]) * g))

    def start(self, init):
        return np.zeros(self.solver.n_nodes) if init is None else init.copy()

    def latent(self, x):
        return x

    def objective(self, u):
        quad = np.dot(u, self.solver.matvec(self.prior_shift, u))
        return 0.5 * quad + self.loss.value(self.P @ u, self.y, self.gamma).sum()

    def gradient(self, u):
        first, _ = self.loss.derivatives(self.P @ u, self.y, self.gamma)
        return self.solver.matvec(self.prior_shift, u) + self.P.T @ first

    def curvature(self, u):
        return self.loss.derivatives(self.P @ u, self.y, self.gamma)[1]

    def newton_step(self, u, grad, atol):
        shift = self.hessian_shift(u)
        step, n_cg, _ = self.solver.solve(
            shift, -grad[:, None], atol=np.array([atol]), row_scale=self.row_scale(u, shift)
        )
        return step[:, 0], n_cg


class _CrossEntropyProblem(_BinaryProblem):
    """ce over all nodes in zero-class-mean coordinates ``U = Z E'`` (``E``: zero-sum basis).

    The likelihood is flat along ``U + c 1'`` and the prior is the same for
    every class, so the MAP has zero class mean; ``Z`` (``(N, n_c - 1)``)
    parametrises that subspace without the flat direction. The Hessian is
    ``I (x) (L + tau^2 I)`` plus, at each labeled node, the block
    ``E'(diag(pi) - pi pi')E / gamma^2``; its CG solve is preconditioned class
    by class with the hierarchy of ``L + tau^2 I + diag(h)``, ``h`` the mean
    eigenvalue of each labeled block.
    """

    def __init__(self, solver, loss, P, Y, tau, gamma):
        super().__init__(solver, loss, P, Y, tau, gamma)
        self.basis = zero_sum_basis(Y.shape[1])

    def start(self, init):
        if init is None:
            return np.zeros((self.solver.n_nodes, self.basis.shape[1]))
        return init @ self.basis

    def latent(self, Z):
        return Z @ self.basis.T

    def objective(self, Z):
        quad = np.sum(Z * self.solver.matvec(self.prior_shift, Z))
        return 0.5 * quad + self.loss.value(self.P @ self.latent(Z), self.y, self.gamma).sum()

    def gradient(self, Z):
        G, _ = self.loss.derivatives(self.P @ self.latent(Z), self.y, self.gamma)
        return self.solver.matvec(self.prior_shift, Z) + self.P.T @ (G @ self.basis)

    def curvature(self, Z):
        return self.loss.derivatives(self.P @ self.latent(Z), self.y, self.gamma)[1]

    def hessian_shift(self, Z):
        """As the binary losses', ``h`` the mean eigenvalue of each labeled node's
        block, ``trace / (n_c - 1)``: the preconditioner's shift in :meth:`newton_step`."""
        Pi = self.curvature(Z)
        mean = (1.0 - np.sum(Pi * Pi, axis=1)) / (self.gamma**2 * self.basis.shape[1])
        return self.prior_shift + self.P.T @ mean

    def newton_step(self, Z, grad, atol):
        Pi = self.curvature(Z)
        E, P, g2 = self.basis, self.P, self.gamma**2
        N, d = Z.shape
        # Labeled-block Hessian action on rows V of Z at the labeled nodes.
        proj = Pi @ E  # pi_j' E

        def block(V):
            EV = V @ E.T
            return ((Pi * EV) @ E - proj * np.sum(Pi * EV, axis=1, keepdims=True)) / g2

        def apply_a(x):
            X = x.reshape(N, d)
            out = self.solver.matvec(self.prior_shift, X) + P.T @ block(P @ X)
            return out.reshape(-1, 1)

        shift = self.hessian_shift(Z)
        self.solver._prepare(shift)

        def apply_m(r):
            return self.solver._precondition(r.reshape(N, d)).reshape(-1, 1)

        x, n_cg, _, _ = _pcg(
            apply_a, apply_m, -grad.reshape(-1, 1), np.zeros((N * d, 1)), np.array([atol]),
            1000, np.repeat(self.row_scale(Z, shift), d),
        )  # fmt: skip
        return x.reshape(N, d), n_cg


def _newton(problem, x, tol, max_iter):
    """Damped inexact Newton: CG steps with a forcing term, Armijo backtracking.

    Converged when ``||S(u) grad J(u)|| <= tol ||S(0) grad J(0)||``, ``S`` the
    inverse diagonal of the Hessian (``problem.row_scale``); the CG steps'
    forcing term in the same norm. A warm start whose objective exceeds that
    of ``u = 0`` is replaced by 0.
    """
    zero = np.zeros_like(x)
    scale = problem.norm(zero, problem.gradient(zero))
    if problem.objective(x) > problem.objective(zero):
        x = zero
    f, grad = problem.objective(x), problem.gradient(x)
    n_cg = 0
    for it in range(max_iter + 1):
        gnorm = problem.norm(x, grad)
        if gnorm <= tol * scale:
            return x, it, n_cg, True
        if it == max_iter:
            break
        forcing = min(0.5, np.sqrt(gnorm / scale))
        step, cg = problem.newton_step(x, grad, max(forcing * gnorm, 0.1 * tol * scale))
        n_cg += cg
        slope = np.sum(grad * step)
        t = 1.0
        while True:
            x_new = x + t * step
            f_new = problem.objective(x_new)
            if f_new <= f + _ARMIJO * t * slope or abs(f_new - f) <= _ROUNDOFF * (1 + abs(f)):
                break
            t *= 0.5
            if t < _MIN_STEP:
                return x, it, n_cg, False
        x, f, grad = x_new, f_new, problem.gradient(x_new)
    return x, max_iter, n_cg, False


def spectral_block(eigenvalues, eigenvectors, labeled, tau: float) -> np.ndarray:
    """``P_V (Lambda + tau^2 I)^-1 P_V'``: the spectral prior's covariance at the labeled nodes.

    ``P_V`` the eigenvector rows of ``labeled``; the spectral counterpart of
    :func:`green_block`.
    """
    _check_positive("tau", tau)
    rows = np.asarray(eigenvectors)[np.asarray(labeled, dtype=np.intp)]
    K = (rows / (np.asarray(eigenvalues, dtype=float) + tau**2)) @ rows.T
    return 0.5 * (K + K.T)


@dataclass
class SumFit:
    """The posterior mean of the summed prior (:func:`fit_sum_graph`).

    Attributes
    ----------
    latent : ndarray of shape (n_nodes,) or (n_nodes, n_classes)
        Posterior mean at every node.
    spectral_scale, full_scale : float
        ``c_s`` and ``c_f``, the factors of :func:`skmcal.evidence.unit_scale`
        that gave each block unit mean variance at the labeled nodes.
    amplitude : float
        The amplitude ``a`` that maximises the evidence at these hyperparameters.
    converged : bool
        Whether the Green's columns met their tolerance.
    """

    latent: np.ndarray
    spectral_scale: float
    full_scale: float
    amplitude: float
    converged: bool


@with_small_algebra
def fit_sum_graph(
    eigenvalues,
    eigenvectors,
    weights,
    labeled,
    targets,
    tau_s: float,
    tau_f: float,
    eps: float,
    gamma: float,
    *,
    tol: float = DEFAULT_TOL,
    solver: LaplacianSolver | None = None,
    label_weights=None,
) -> SumFit:
    """Posterior mean of ``gr`` / ``mgr`` under the summed prior ``a (K_s + eps K_f)``.

    Per target column, the latent values of all nodes are ``N(0, Sigma)``,
    ``Sigma = a (c_s V (Lambda + tau_s^2 I)^-1 V' + eps c_f (L + tau_f^2 I)^-1)``,
    observed with noise ``a gamma^2`` at the labeled nodes; ``c_s`` and
    ``c_f`` give each part unit mean variance there
    (:func:`skmcal.evidence.unit_scale`). The mean is ::

        u = Sigma P' (P Sigma P' + a gamma^2 I)^-1 Y
          = c_s V (Lambda + tau_s^2 I)^-1 P_V' C + eps c_f G C,
        C = (K_s + eps K_f + gamma^2 I)^-1 Y,

    with ``G = (L + tau_f^2 I)^-1 P'`` the Green's columns of the labeled nodes
    (:meth:`LaplacianSolver.green_solve`, cached per ``tau_f`` and shared with
    :func:`green_block`: a refit solves only the new nodes' columns). It does
    not depend on ``a``. docs/math.rst, "The summed prior".

    Parameters
    ----------
    eigenvalues : ndarray of shape (M,)
    eigenvectors : ndarray of shape (n_nodes, M)
        The graph's kept spectrum.
    weights : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric affinity ``W``.
    labeled : ndarray of shape (n_labeled,)
        Node of each label (a node may repeat).
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        Labels in {-1, +1} (``gr``) or one-hot rows (``mgr``).
    tau_s, tau_f : float
        Shifts of the spectral and the full-graph prior, positive.
    eps : float
        Weight of the full-graph part, non-negative.
    gamma : float
        Noise scale relative to the amplitude, positive.
    tol : float, default=1e-8
        Residual norm of each Green's column.
    solver : LaplacianSolver or None
        As :func:`fit_full_graph`.
    label_weights : ndarray of shape (n_labeled,) or None, default=None
        The weight ``w_j`` of each label (``class_weight``): its noise is
        ``a gamma^2 / w_j``, the ``gamma^2 I`` above ``gamma^2 W^-1``. None: one each.

    Returns
    -------
    SumFit

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.diags([np.ones(5), np.ones(5)], [-1, 1], shape=(6, 6)).tocsr()
    >>> L = normalized_laplacian(W).toarray()
    >>> lam, V = np.linalg.eigh(L)
    >>> fit = fit_sum_graph(lam[:3], V[:, :3], W, np.array([0, 5]), np.array([-1.0, 1.0]),
    ...                     0.1, 0.1, 1.0, 0.1)
    >>> bool(fit.latent[0] < 0 < fit.latent[5])
    True
    """
    solver = solver_for(weights) if solver is None else solver
    labeled = _check_labeled(labeled, solver.n_nodes, empty=False)
    targets = np.asarray(targets, dtype=float)
    Y = targets[:, None] if targets.ndim == 1 else targets
    if Y.ndim != 2 or Y.shape[0] != labeled.size:
        raise ValueError(
            f"targets must have {labeled.size} rows (one per label); got shape {targets.shape}."
        )
    for name, value in (("tau_s", tau_s), ("tau_f", tau_f), ("gamma", gamma)):
        _check_positive(name, value)
    _check_weight(eps)
    label_weights = check_weights(label_weights, labeled.size)
    eigenvalues = np.asarray(eigenvalues, dtype=float)
    Ks = spectral_block(eigenvalues, eigenvectors, labeled, tau_s)
    Kf = green_block(weights, labeled, tau_f, tol=tol, solver=solver)
    nodes, inverse = np.unique(labeled, return_inverse=True)
    converged = bool(np.all(solver.green_residuals(tau_f**2, nodes) <= tol))
    cs, cf = unit_scale(Ks), unit_scale(Kf)
    S = cs * Ks + eps * cf * Kf
    S[np.diag_indices_from(S)] += gamma**2 / (1.0 if label_weights is None else label_weights)
    C = scipy.linalg.solve(S, Y, assume_a="pos", check_finite=False)
    rows = np.asarray(eigenvectors)[labeled]
    U = eigenvectors @ (cs * (rows.T @ C) / (eigenvalues + tau_s**2)[:, None])
    if eps > 0:
        node_c = np.zeros((nodes.size, C.shape[1]))
        np.add.at(node_c, inverse, C)
        U += eps * cf * solver.green_combine(tau_f**2, nodes, node_c)
    amplitude = float(np.sum(Y * C)) / Y.size
    return SumFit(
        latent=U[:, 0] if targets.ndim == 1 else U,
        spectral_scale=cs, full_scale=cf, amplitude=amplitude, converged=converged,
    )  # fmt: skip
