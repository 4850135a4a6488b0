"""The paper's baselines outside the spectral models: VOPT-HF, SOPT-HF and DB-RKHS.

Miller & Bertozzi compare model change with three acquisition functions that
live in their own models, not in the spectrally truncated ones of
:mod:`skmcal.acquisition`, and measure each one's accuracy in its own model:

**VOPT-HF, SOPT-HF** (:func:`vopt_hf`, :func:`sopt_hf`): V-opt (Ji & Han
2012) and Sigma-opt (Ma et al. 2013) in the harmonic-functions (HF) model of
Zhu, Lafferty & Ghahramani (2003), on the full graph. The latent field has
the Gaussian prior ``N(0, (L + delta^2 I)^-1)`` with ``L = D - W`` the
*unnormalised* Laplacian of the classifier's own kNN graph
(``clf.graph_.weights``), and labels are observed without noise (the
hard-constraint loss). The covariance of the unlabeled nodes ``U`` is

    C = (L_UU + delta^2 I)^-1.

Observing node ``k`` conditions ``C`` on ``u_k``; the covariance of
``U - {k}`` becomes ``C - C e_k e_k' C / C_kk`` restricted there, so the
drops of the trace (V-opt) and of the survey risk ``1' C 1`` (Sigma-opt) are

    VOPT(k) = ||C e_k||^2 / C_kk,        SOPT(k) = (1' C e_k)^2 / C_kk,

the paper's equation (smeq:v-sigma-hf), whose Sigma-opt numerator it prints
as ``<1, C_HF 1>``, a typo (docs/math.rst notes another in its last display). The HF
classifier is the harmonic function ``u_U = -(L_UU + delta^2 I)^-1 L_UL Y``
with one-hot ``Y``, classified by argmax (:func:`harmonic_transduction`).

*Which Laplacian, which shift.* The paper's own models use the normalised
Laplacian, but for HF it cites the original papers and ``delta = 0.01`` from
Zhu et al.; its authors' code (github.com/millerk22/model-change-paper,
``binary_clusters_run.py``: "diagonal perturbation of unnormalized graph
Laplacian for HF model") builds ``L = D - W`` on the same kNN graph and adds
``delta**2 * I``, the same squared convention as the paper's
``L_tau = L + tau^2 I``. skmcal does the same: precision ``L + delta^2 I``
with ``delta = 0.01`` (shift ``1e-4``).

*Solvers.* ``solver="dense"`` inverts ``L_UU + delta^2 I`` (``O(|U|^3)``);
``"sparse"`` factorises it once (SuperLU) and solves for the columns
``C e_k`` of the candidates only (``O(|candidates| nnz(LU))``), plus one
solve for ``C 1``; ``"auto"`` is dense up to :data:`DENSE_HF_MAX_UNLABELED`
unlabeled nodes. Either way the cost grows much faster with ``N`` than the
spectral models' ``O(M^2)`` per candidate, which is what the paper's timing
figure shows.

**DB-RKHS** (:func:`db_rkhs`): the MaxiMin criterion of Karzand & Nowak
(2020) with their data-based norm, on kernel interpolation of the node data
(``clf.node_set_.data``), binary only (as in their paper and in the
paper's Binary-Clusters test). With the labeled nodes ``L``, labels ``y`` in
{-1, +1}, the kernel matrix ``K`` and the minimum-norm interpolant
``f = K_.L K_LL^-1 y``, the interpolant ``f^{k,t}`` of ``L + {(k, t)}``
differs from ``f`` by::

    f^{k,t} - f = (t - f_k) g_k / s_k,   g_k = K_.k - K_.L K_LL^-1 K_Lk,   s_k = g_k(k),

which vanishes on ``L``. The score is the smallest, over the two labels, of
the norm of that change (the label nearest ``f_k`` attains it)::

    norm="data" (DB-RKHS):  A(k) = min_t ||f^{k,t} - f||_2 = |1 - |f_k|| ||g_k||_2 / s_k,
    norm="rkhs":            A(k) = min_t ||f^{k,t}||_H = sqrt(y' K_LL^-1 y + (1 - |f_k|)^2 / s_k),

``||.||_2`` over the nodes (the data). In the RKHS norm
``||f^{k,t}||_H^2 = ||f||_H^2 + ||f^{k,t} - f||_H^2`` (``f`` is the projection
of ``f^{k,t}`` on the span of ``K_.L``), so the maximin of the interpolant's
norm and of its change are one criterion; the data-based norm measures that
change on the data instead, which is how the paper's authors implemented
DB-RKHS (``util/rkhs.py``, with ``1 - |f_k|`` where the minimum over labels
is ``|1 - |f_k||``) and why the paper calls model change its relative.
Kernel: ``kernel="laplace"`` (default), ``k(x, x') = exp(-||x - x'|| / h)``,
the kernel of Karzand & Nowak's analysis and of the authors' code
(``RKHSClassifier``: ``exp(-cdist(X, X) / h)``); or ``"gaussian"``,
``exp(-||x - x'||^2 / (2 h^2))``. ``h = 0.1`` (the paper). The classifier
is ``sign(f)`` (:func:`rkhs_transduction`). Cost per query:
``O(|L|^3 + N (|L| + |candidates|) (d + |L|))``, dense kernel blocks
computed in row chunks.

Each strategy has modAL's contract and skmcal's options (``candidates``,
``batch``, ``random_state``; see :mod:`skmcal.query`). ``batch="greedy"``
re-scores after adding each pick to the labeled set: in HF the covariance
does not depend on the label; in DB-RKHS the pick gets the label nearest
``f_k`` (the minimiser above). :data:`BASELINES` lists them for the
experiment runner.

References
----------
X. Zhu, J. Lafferty, Z. Ghahramani, "Combining active learning and
semi-supervised learning using Gaussian fields and harmonic functions",
ICML 2003 workshops.
M. Ji, J. Han, "A variance minimization criterion to active learning on
graphs", AISTATS 2012.
Y. Ma, R. Garnett, J. Schneider, "Sigma-optimality for active learning on
Gaussian random fields", NeurIPS 2013.
M. Karzand, R. D. Nowak, "MaxiMin active learning in overparameterized model
classes", IEEE JSAIT 1(1), 2020 (arXiv:1905.12782).
K. Miller, A. L. Bertozzi, "Model-change active learning in graph-based
semi-supervised learning", 2021, section "Experiments & Numerics".

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_moons
>>> from skmcal import NodeSet, SpectralGraphClassifier
>>> from skmcal.baselines import db_rkhs, harmonic_transduction, vopt_hf
>>> X, y = make_moons(80, noise=0.1, random_state=0)
>>> pool = NodeSet(X)
>>> labeled = np.array([0, 1, 2, 3])
>>> clf = SpectralGraphClassifier("gr", nodes=pool, n_eigs=10).fit(X[labeled], y[labeled])
>>> rows, scores = vopt_hf(clf, pool, 3, random_state=0)
>>> rows.shape, bool(np.all(np.diff(scores) <= 0))
((3,), True)
>>> rows, scores = db_rkhs(clf, pool, 2, labels=y[labeled], random_state=0)
>>> harmonic_transduction(clf, y[labeled]).shape
(80,)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu
from scipy.spatial.distance import cdist
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_random_state

from . import selection
from ._threads import small_algebra
from ._warnings import warn_user
from .classifier import SpectralGraphClassifier, unlabeled_mask
from .selection import BATCH_MODES

__all__ = [
    "BASELINES",
    "Baseline",
    "DENSE_HF_MAX_UNLABELED",
    "HF_DELTA",
    "RKHS_BANDWIDTH",
    "db_rkhs",
    "graph_laplacian",
    "harmonic_transduction",
    "rkhs_transduction",
    "sopt_hf",
    "vopt_hf",
]

#: ``delta`` of the HF model (precision ``L + delta^2 I``): the paper's 0.01.
HF_DELTA = 0.01

#: Kernel bandwidth ``h`` of DB-RKHS: the paper's (and Karzand & Nowak's) 0.1.
RKHS_BANDWIDTH = 0.1

#: ``solver="auto"`` inverts ``L_UU + delta^2 I`` densely up to this many
#: unlabeled nodes, and factorises it sparsely above (already faster on
#: Binary-Clusters, 760 nodes and 76 candidates: 15 ms against 140 ms).
DENSE_HF_MAX_UNLABELED = 300

HF_SOLVERS = ("auto", "dense", "sparse")
RKHS_KERNELS = ("laplace", "gaussian")
RKHS_NORMS = ("data", "rkhs")

#: Dense blocks (solves, kernel rows) hold at most about this many entries.
_BLOCK_ENTRIES = 2**22

#: ``s_k`` at or below this (relative to ``k(x, x) = 1``): the candidate is
#: determined by the labeled nodes (a duplicate), and its score is 0.
_DETERMINED = 1e-12


# --------------------------------------------------------------------------
# Validation and labels
# --------------------------------------------------------------------------


def _check_positive(value, name):
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not np.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite float > 0; got {value!r}.")
    return float(value)


def _check_delta(delta):
    """``delta`` of the HF model: a positive float whose square is a positive float too."""
    delta = _check_positive(delta, "delta")
    if not 0.0 < delta * delta < np.inf:
        raise ValueError(
            f"delta must be a float whose square, the precision's shift delta^2, is a "
            f"positive finite float (about 1e-154 to 1e154); got {delta!r}."
        )
    return delta


def _check_choice(value, name, accepted):
    if not isinstance(value, str) or value not in accepted:
        raise ValueError(f"{name} must be one of {accepted}; got {value!r}.")
    return value


def _check_query(n_instances, batch):
    if isinstance(n_instances, bool) or not isinstance(n_instances, Integral) or n_instances < 1:
        raise ValueError(f"n_instances must be a positive int; got {n_instances!r}.")
    _check_choice(batch, "batch", BATCH_MODES)


def _rows(X):
    """Training rows as the classifier's ``fit`` reads them (a float array or CSR matrix)."""
    if sp.issparse(X):
        return sp.csr_matrix(X)
    X = np.asarray(X)
    return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)


def _labeled_codes(clf: SpectralGraphClassifier, learner, labels, who: str) -> np.ndarray:
    """Class codes (indices into ``clf.classes_``) of ``clf.labeled_nodes_``.

    From ``labels`` (in the order of ``labeled_nodes_``) or, when None, from
    the ``y_training`` of a modAL learner (the rows ``fit`` was given; its
    ``-1`` entries are unlabeled rows and are skipped, and a row taught again
    counts once, at its first occurrence, as ``fit`` does).
    """
    if labels is None:
        labels = getattr(learner, "y_training", None)
        if labels is None:
            raise ValueError(
                f"{who} needs the labels of the labeled nodes: pass labels= (the labels of "
                "clf.labeled_nodes_, in that order), or query through a modAL learner "
                "(its y_training holds them)."
            )
        labels = np.asarray(labels).reshape(-1)
        keep = ~unlabeled_mask(labels, clf.missing_label)
        training = getattr(learner, "X_training", None)
        if clf.nodes is not None and training is not None and keep.sum() > clf.labeled_nodes_.size:
            # rows taught again: fit counts each node once, at its first row
            nodes = clf.node_set_.lookup(_rows(training), distinct=True)[keep]
            _, first = np.unique(nodes, return_index=True)
            labels = labels[keep][np.sort(first)]
        else:
            labels = labels[keep]
    else:
        labels = np.asarray(labels)
        if labels.ndim != 1:
            raise ValueError(f"labels must be 1-D; got shape {labels.shape}.")
    n_labeled = clf.labeled_nodes_.size
    if labels.size != n_labeled:
        raise ValueError(
            f"{who}: got {labels.size} labels for the {n_labeled} labeled nodes of the "
            "classifier; give one label per entry of clf.labeled_nodes_, in that order."
        )
    classes = clf.classes_
    codes = np.searchsorted(classes, labels)
    bad = (codes >= classes.size) | (classes[np.minimum(codes, classes.size - 1)] != labels)
    if bad.any():
        raise ValueError(
            f"{who}: label {labels[np.flatnonzero(bad)[0]]!r} is not one of the classifier's "
            f"classes {classes.tolist()}."
        )
    return codes.astype(np.intp)


# --------------------------------------------------------------------------
# Shared query loop
# --------------------------------------------------------------------------


def _query(scorer, clf, X_pool, n_instances, candidates, batch, random_state):
    """Candidates, scores, top-k, greedy or LocalMax batch through :func:`skmcal.selection.choose`.

    ``scorer`` has ``scores(nodes) -> ndarray`` and ``add(node) -> scorer``
    (the model with ``node`` labeled, for greedy batches).
    """
    rng = check_random_state(random_state)
    pool_nodes = selection.pool_nodes(clf, X_pool)
    labeled = clf.node_set_.first_equal[clf.labeled_nodes_]
    rows = selection.candidate_rows(pool_nodes, labeled, candidates, n_instances, rng)
    return selection.choose(
        scorer,
        lambda state, nodes: state.scores(nodes),
        lambda state, node: state.add(node),
        pool_nodes,
        rows,
        n_instances,
        batch,
        rng,
        clf.graph_.weights,
    )


# --------------------------------------------------------------------------
# Harmonic functions
# --------------------------------------------------------------------------


def graph_laplacian(W) -> sp.csr_matrix:
    """The unnormalised graph Laplacian ``L = D - W`` (self-loops ignored).

    Parameters
    ----------
    W : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric, non-negative affinities.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_nodes, n_nodes)
    """
    W = sp.csr_matrix(W, dtype=np.float64, copy=True)
    W.setdiag(0.0)
    W.eliminate_zeros()
    degrees = np.asarray(W.sum(axis=1)).ravel()
    return (sp.diags(degrees) - W).tocsr()


def _unlabeled_precision(laplacian, labeled, delta):
    """``(unlabeled nodes, A = L_UU + delta^2 I as CSC, L_UL)``."""
    n = laplacian.shape[0]
    mask = np.ones(n, dtype=bool)
    mask[labeled] = False
    unlabeled = np.flatnonzero(mask)
    rows = laplacian[unlabeled]
    A = rows[:, unlabeled] + delta**2 * sp.identity(unlabeled.size, format="csr")
    return unlabeled, A.tocsc(), rows[:, labeled]


def _sparse_factor(A):
    return splu(
        A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True}
    )


@dataclass(frozen=True)
class _HarmonicScorer:
    """V-opt / Sigma-opt of the HF model for one labeled set."""

    laplacian: sp.csr_matrix
    labeled: np.ndarray
    delta: float
    criterion: str
    solver: str

    def add(self, node) -> _HarmonicScorer:
        labeled = np.append(self.labeled, node)
        return _HarmonicScorer(self.laplacian, labeled, self.delta, self.criterion, self.solver)

    def scores(self, nodes) -> np.ndarray:
        unlabeled, A, _ = _unlabeled_precision(self.laplacian, self.labeled, self.delta)
        positions = np.searchsorted(unlabeled, nodes)
        n_u = unlabeled.size
        dense = self.solver == "dense" or (self.solver == "auto" and n_u <= DENSE_HF_MAX_UNLABELED)
        vopt = self.criterion == "vopt"
        with small_algebra():
            if dense:
                C = np.linalg.inv(A.toarray())
                C = 0.5 * (C + C.T)
                columns = C[:, positions]
                diagonal = columns[positions, np.arange(positions.size)]
                numerator = (
                    np.einsum("ik,ik->k", columns, columns) if vopt else columns.sum(axis=0) ** 2
                )
            else:
                lu = _sparse_factor(A)
                diagonal = np.empty(positions.size)
                numerator = np.empty(positions.size)
                if not vopt:
                    numerator[:] = lu.solve(np.ones(n_u))[positions] ** 2
                chunk = max(1, _BLOCK_ENTRIES // n_u)
                for start in range(0, positions.size, chunk):
                    part = positions[start : start + chunk]
                    rhs = np.zeros((n_u, part.size))
                    rhs[part, np.arange(part.size)] = 1.0
                    columns = lu.solve(rhs)
                    diagonal[start : start + chunk] = columns[part, np.arange(part.size)]
                    if vopt:
                        numerator[start : start + chunk] = np.einsum("ik,ik->k", columns, columns)
        return numerator / diagonal


def _harmonic_query(
    criterion, learner, X_pool, n_instances, delta, solver, candidates, batch, random_state
):
    _check_query(n_instances, batch)
    delta = _check_delta(delta)
    _check_choice(solver, "solver", HF_SOLVERS)
    clf = selection.fitted_classifier(learner)
    scorer = _HarmonicScorer(
        graph_laplacian(clf.graph_.weights), clf.labeled_nodes_, delta, criterion, solver
    )
    return _query(scorer, clf, X_pool, n_instances, candidates, batch, random_state)


def vopt_hf(
    learner,
    X_pool,
    n_instances: int = 1,
    *,
    delta: float = HF_DELTA,
    solver: str = "auto",
    candidates=None,
    batch: str = "topk",
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """VOPT-HF: V-opt in the harmonic-functions model on the full graph.

    Scores each candidate ``k`` by the drop of the total variance of the
    unlabeled nodes when ``u_k`` is observed, ``||C e_k||^2 / C_kk`` with
    ``C = (L_UU + delta^2 I)^-1`` and ``L = D - W`` the unnormalised
    Laplacian of the classifier's graph (see the module documentation).

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted classifier (its graph and labeled nodes are used; its loss
        is not), or a modAL learner wrapping one.
    X_pool : array-like, sparse matrix or NodeSet
        Rows of the classifier's node set (or the node set itself).
    n_instances : int, default=1
        How many rows to return.
    delta : float, default=0.01
        The prior precision is ``L + delta^2 I`` (the paper's 0.01).
    solver : {"auto", "dense", "sparse"}, default="auto"
        Dense inverse, or a sparse factorisation with one solve per
        candidate; "auto": dense up to :data:`DENSE_HF_MAX_UNLABELED`
        unlabeled nodes.
    candidates, batch, random_state
        As in :mod:`skmcal.query`. ``batch="greedy"`` adds each pick to the
        labeled set before re-scoring.

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first; never labeled nodes.
    scores : ndarray of shape (n_instances,)
        Their V-opt values.

    References
    ----------
    M. Ji and J. Han, "A variance minimization criterion to active learning
    on graphs", AISTATS 2012.
    """
    return _harmonic_query(
        "vopt", learner, X_pool, n_instances, delta, solver, candidates, batch, random_state
    )


def sopt_hf(
    learner,
    X_pool,
    n_instances: int = 1,
    *,
    delta: float = HF_DELTA,
    solver: str = "auto",
    candidates=None,
    batch: str = "topk",
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """SOPT-HF: Sigma-opt in the harmonic-functions model on the full graph.

    Scores each candidate ``k`` by the drop of the survey risk ``1' C 1``
    of the unlabeled nodes when ``u_k`` is observed, ``(1' C e_k)^2 / C_kk``
    (same ``C`` as :func:`vopt_hf`).

    Parameters
    ----------
    learner, X_pool, n_instances, delta, solver, candidates, batch, random_state
        As :func:`vopt_hf`.

    Returns
    -------
    indices, scores
        As :func:`vopt_hf`; the scores are Sigma-opt values.

    References
    ----------
    Y. Ma, R. Garnett and J. Schneider, "Sigma-optimality for active learning
    on Gaussian random fields", NeurIPS 2013.
    """
    return _harmonic_query(
        "sopt", learner, X_pool, n_instances, delta, solver, candidates, batch, random_state
    )


def harmonic_transduction(learner, labels=None, *, delta: float = HF_DELTA) -> np.ndarray:
    """Labels of every node by the harmonic function (label propagation) of the HF model.

    ``u_U = -(L_UU + delta^2 I)^-1 L_UL Y`` with ``Y`` the one-hot labels,
    ``L = D - W`` on the classifier's graph; each unlabeled node takes the
    class of its largest entry, each labeled node its own label. Binary and
    multiclass.

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted classifier (its graph, labeled nodes and classes).
    labels : array-like of shape (n_labeled,), default=None
        The labels of ``clf.labeled_nodes_``, in that order (values of
        ``clf.classes_``). None: the ``y_training`` of a modAL learner.
    delta : float, default=0.01
        As in :func:`vopt_hf`.

    Returns
    -------
    ndarray of shape (n_nodes,)
        Values of ``clf.classes_``.
    """
    delta = _check_delta(delta)
    clf = selection.fitted_classifier(learner)
    codes = _labeled_codes(clf, learner, labels, "harmonic_transduction")
    labeled = clf.labeled_nodes_
    unlabeled, A, L_UL = _unlabeled_precision(graph_laplacian(clf.graph_.weights), labeled, delta)
    out = np.empty(clf.graph_.weights.shape[0], dtype=np.intp)
    out[labeled] = codes
    if unlabeled.size:
        Y = np.eye(clf.classes_.size)[codes]
        with small_algebra():
            U = _sparse_factor(A).solve(np.asarray(-(L_UL @ Y)))
        out[unlabeled] = np.argmax(U.reshape(unlabeled.size, -1), axis=1)
    return clf.classes_[out]


# --------------------------------------------------------------------------
# Kernel interpolation (DB-RKHS)
# --------------------------------------------------------------------------


def _kernel(A, B, h, kernel):
    """Kernel block ``k(A_i, B_j)``; exact distances for dense data."""
    if sp.issparse(A) or sp.issparse(B):
        squared = euclidean_distances(A, B, squared=True)
    else:
        squared = cdist(A, B, metric="sqeuclidean")
    if kernel == "laplace":
        return np.exp(-np.sqrt(squared) / h)
    return np.exp(-squared / (2.0 * h**2))


@dataclass(frozen=True)
class _InterpolationModel:
    """Minimum-norm kernel interpolation of ±1 labels at some nodes."""

    data: Any
    labeled: np.ndarray
    signs: np.ndarray
    h: float
    kernel: str
    norm: str = "data"
    _fit: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        XL = self.data[self.labeled]
        K_LL = _kernel(XL, XL, self.h, self.kernel)
        K_LL = 0.5 * (K_LL + K_LL.T)
        try:
            np.linalg.cholesky(K_LL)
        except np.linalg.LinAlgError:
            raise ValueError(
                "The kernel matrix of the labeled nodes is not positive definite "
                "(duplicate or nearly duplicate labeled points for this kernel and h); "
                "the minimum-norm interpolant is not defined."
            ) from None
        object.__setattr__(self, "_fit", (XL, K_LL, np.linalg.solve(K_LL, self.signs)))

    def latent(self, nodes) -> np.ndarray:
        """``f`` at the nodes."""
        XL, _, alpha = self._fit
        out = np.empty(nodes.size)
        step = max(1, _BLOCK_ENTRIES // XL.shape[0])
        with small_algebra():
            for start in range(0, nodes.size, step):
                part = nodes[start : start + step]
                K = _kernel(self.data[part], XL, self.h, self.kernel)
                out[start : start + part.size] = K @ alpha
        return out

    def add(self, node) -> _InterpolationModel:
        """The model with ``node`` labeled by its nearest label, ``sign(f)`` (+1 at 0)."""
        sign = 1.0 if self.latent(np.array([node]))[0] >= 0 else -1.0
        return _InterpolationModel(
            self.data,
            np.append(self.labeled, node),
            np.append(self.signs, sign),
            self.h,
            self.kernel,
            self.norm,
        )

    def scores(self, nodes) -> np.ndarray:
        """MaxiMin scores of the candidate nodes (see the module documentation)."""
        XL, K_LL, alpha = self._fit
        nodes = np.asarray(nodes, dtype=np.intp)
        with small_algebra():
            K_LC = _kernel(XL, self.data[nodes], self.h, self.kernel)
            B = np.linalg.solve(K_LL, K_LC)
            f = K_LC.T @ alpha
            s = 1.0 - np.einsum("lk,lk->k", K_LC, B)
            gap = np.abs(1.0 - np.abs(f))
            determined = s <= _DETERMINED
            s = np.where(determined, 1.0, s)
            if self.norm == "rkhs":
                change = np.where(determined, 0.0, gap**2 / s)
                return np.sqrt(float(self.signs @ alpha) + change)
            mask = np.ones(self.data.shape[0], dtype=bool)
            mask[self.labeled] = False
            unlabeled = np.flatnonzero(mask)
            squares = np.zeros(nodes.size)
            XC = self.data[nodes]
            step = max(1, _BLOCK_ENTRIES // (nodes.size + XL.shape[0]))
            for start in range(0, unlabeled.size, step):
                Xp = self.data[unlabeled[start : start + step]]
                G = _kernel(Xp, XC, self.h, self.kernel) - _kernel(Xp, XL, self.h, self.kernel) @ B
                squares += np.einsum("ik,ik->k", G, G)
        return np.where(determined, 0.0, gap * np.sqrt(squares) / s)


def _interpolation_model(clf, learner, labels, h, kernel, norm, who):
    h = _check_positive(h, "h")
    _check_choice(kernel, "kernel", RKHS_KERNELS)
    _check_choice(norm, "norm", RKHS_NORMS)
    if clf.classes_.size != 2:
        raise ValueError(
            f"{who} is binary (as in Karzand & Nowak and the paper's Binary-Clusters test); "
            f"the classifier has {clf.classes_.size} classes {clf.classes_.tolist()}."
        )
    codes = _labeled_codes(clf, learner, labels, who)
    _warn_if_the_kernel_vanishes(clf.node_set_.data, clf.labeled_nodes_, h, kernel, who)
    return _InterpolationModel(
        clf.node_set_.data, clf.labeled_nodes_, 2.0 * codes - 1.0, h, kernel, norm
    )


#: Nodes (evenly spaced) against which :func:`_warn_if_the_kernel_vanishes` looks, and
#: the kernel value below which it calls the labeled nodes' reach negligible.
KERNEL_CHECK_NODES = 1000
KERNEL_NEGLIGIBLE = 1e-8


def _warn_if_the_kernel_vanishes(data, labeled, h, kernel, who):
    """Warn where ``h`` is so small for the data that the kernel between every labeled
    node and every other (of :data:`KERNEL_CHECK_NODES` evenly spaced) is below
    :data:`KERNEL_NEGLIGIBLE`: the interpolant is then about zero off the labels, and
    the candidates' scores tie to round-off."""
    others = np.setdiff1d(
        np.linspace(0, data.shape[0] - 1, min(KERNEL_CHECK_NODES, data.shape[0])).astype(int),
        labeled,
    )
    if others.size and _kernel(data[labeled], data[others], h, kernel).max() < KERNEL_NEGLIGIBLE:
        warn_user(
            f"{who}: with h={h} the {kernel} kernel between the labeled nodes and the "
            f"others is below {KERNEL_NEGLIGIBLE:g} (the data's distances are far larger "
            f"than h), so the candidates' scores tie; scale the data (the paper's h=0.1 "
            f"is for data in the unit square) or pass a larger h.",
            UserWarning,
        )


def db_rkhs(
    learner,
    X_pool,
    n_instances: int = 1,
    *,
    labels=None,
    h: float = RKHS_BANDWIDTH,
    kernel: str = "laplace",
    norm: str = "data",
    candidates=None,
    batch: str = "topk",
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """DB-RKHS: Karzand & Nowak's MaxiMin criterion with the data-based norm.

    For each candidate ``k`` and label ``t`` in {-1, +1}, the minimum-norm
    kernel interpolant of the labeled nodes plus ``(k, t)`` is compared with
    the current one; the score is the smallest norm of that change over the
    two labels, ``|1 - |f_k|| ||g_k||_2 / s_k`` (see the module
    documentation). Binary classification only.

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted binary classifier (its node data, labeled nodes and
        classes are used; its graph and loss are not), or a modAL learner
        wrapping one.
    X_pool : array-like, sparse matrix or NodeSet
        Rows of the classifier's node set (or the node set itself).
    n_instances : int, default=1
        How many rows to return.
    labels : array-like of shape (n_labeled,), default=None
        The labels of ``clf.labeled_nodes_``, in that order (values of
        ``clf.classes_``; the first class is -1, the second +1). None: the
        ``y_training`` of a modAL learner.
    h : float, default=0.1
        Kernel bandwidth (the paper's 0.1).
    kernel : {"laplace", "gaussian"}, default="laplace"
        ``exp(-||x - x'|| / h)`` (Karzand & Nowak; the paper's code) or
        ``exp(-||x - x'||^2 / (2 h^2))``.
    norm : {"data", "rkhs"}, default="data"
        ``data``: the l2 norm of the change over the nodes (DB-RKHS).
        ``rkhs``: the RKHS norm of the new interpolant itself.
    candidates, batch, random_state
        As in :mod:`skmcal.query`. ``batch="greedy"`` adds each pick with the
        label nearest ``f_k`` before re-scoring.

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first; never labeled nodes.
    scores : ndarray of shape (n_instances,)
        Their MaxiMin values.

    Raises
    ------
    ValueError
        For more than two classes, missing or misaligned labels, or a
        singular kernel matrix of the labeled nodes.

    References
    ----------
    M. Karzand and R. D. Nowak, "MaxiMin active learning in overparameterized
    model classes", IEEE JSAIT, 2020.
    """
    _check_query(n_instances, batch)
    clf = selection.fitted_classifier(learner)
    model = _interpolation_model(clf, learner, labels, h, kernel, norm, "db_rkhs")
    return _query(model, clf, X_pool, n_instances, candidates, batch, random_state)


def rkhs_transduction(
    learner, labels=None, *, h: float = RKHS_BANDWIDTH, kernel: str = "laplace"
) -> np.ndarray:
    """Labels of every node by the minimum-norm kernel interpolant (the DB-RKHS model).

    ``f = K_.L K_LL^-1 y`` with ``y`` = -1 for ``classes_[0]`` and +1 for
    ``classes_[1]``; a node takes ``classes_[1]`` where ``f > 0``, and each
    labeled node its own label.

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted binary classifier.
    labels : array-like of shape (n_labeled,), default=None
        As in :func:`db_rkhs`.
    h, kernel
        As in :func:`db_rkhs`.

    Returns
    -------
    ndarray of shape (n_nodes,)
        Values of ``clf.classes_``.
    """
    clf = selection.fitted_classifier(learner)
    model = _interpolation_model(clf, learner, labels, h, kernel, "data", "rkhs_transduction")
    n_nodes = clf.node_set_.n_nodes
    out = (model.latent(np.arange(n_nodes)) > 0).astype(np.intp)
    out[model.labeled] = (model.signs > 0).astype(np.intp)
    return clf.classes_[out]


# --------------------------------------------------------------------------
# Registry for the experiment runner
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """A baseline as the experiment runner uses it.

    Attributes
    ----------
    strategy : callable
        The query strategy (modAL contract).
    transduction : callable
        ``transduction(clf, labels) -> labels of every node`` in the
        baseline's own model, for its accuracy.
    needs_labels : bool
        Whether the strategy must be given ``labels=`` (the labels of
        ``clf.labeled_nodes_``) when the learner is not a modAL learner.
    binary_only : bool
        Whether it takes two classes only.
    """

    strategy: Callable
    transduction: Callable
    needs_labels: bool
    binary_only: bool


#: The paper's baselines by strategy name.
BASELINES: dict[str, Baseline] = {
    "vopt-hf": Baseline(vopt_hf, harmonic_transduction, needs_labels=False, binary_only=False),
    "sopt-hf": Baseline(sopt_hf, harmonic_transduction, needs_labels=False, binary_only=False),
    "db-rkhs": Baseline(db_rkhs, rkhs_transduction, needs_labels=True, binary_only=True),
}
