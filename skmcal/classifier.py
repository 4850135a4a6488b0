"""SpectralGraphClassifier: graph-based semi-supervised learning, the scikit-learn way."""

from __future__ import annotations

import logging
import os
import time
import warnings
from contextlib import ExitStack
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.metrics import accuracy_score
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from ._threads import n_jobs_threads, small_algebra, solver_threads
from ._warnings import warn_user
from .evidence import (
    DEFAULT_GAMMAS,
    DEFAULT_TAUS,
    FULL_EVIDENCE_TOL,
    FULL_GAMMAS,
    FULL_TAUS,
    LAPLACE_GAMMAS,
    SUM_CLASS_MARGIN,
    SUM_EPSILONS,
    SUM_FULL_TAUS,
    SUM_GAMMAS,
    constant_share,
    select_full_hyperparameters,
    select_hyperparameters,
    select_sum_hyperparameters,
    sum_loo_means,
    unit_scale,
)
from .fitting import fit_posterior, posterior_around, remainder_variance
from .fullgraph import (
    class_offset,
    fit_full_graph,
    fit_sum_graph,
    green_block,
    offset_direction,
    solver_for,
    spectral_block,
)
from .graph import (
    GRAPH_CACHE,
    NODE_DTYPES,
    GraphParams,
    NodeSet,
    check_memory,
    dtype_hint,
    node_set,
    phase_level,
)
from .losses import LOSSES, target_scales
from .poisson import poisson_learning, target_units

logger = logging.getLogger(__name__)

#: The ``(tau, gamma)`` of the paper's experiments per loss (binary: tau=0.001,
#: gamma=0.5; MGR: tau=0.005, gamma=0.1; CE: tau=0.005, gamma=0.5). Not the
#: default: with few labels they collapse (ce on MNIST: 0.67 -> 0.28 accuracy
#: after one batch of model-change queries; ``benchmarks/bench_auto_hyper.py``).
PAPER_HYPERPARAMETERS = {
    "gr": (0.001, 0.5),
    "logistic": (0.001, 0.5),
    "probit": (0.001, 0.5),
    "mgr": (0.005, 0.1),
    "ce": (0.005, 0.5),
}

#: A warm refit reuses the last "auto" choice until the labels grow by this factor.
AUTO_REUSE_GROWTH = 1.25

#: ``tol="auto"`` for the spectral model's Newton iterations (dense and cheap).
AUTO_NEWTON_TOL = 1e-10

#: ``tol="auto"`` for the sparse solves of the full and summed models (the
#: functions of :mod:`skmcal.fullgraph` default to the tighter
#: :data:`~skmcal.fullgraph.DEFAULT_TOL`, 1e-8). Their stopping rule held the
#: values within 0.2 to 0.8 times the tolerance of a direct solve's (relative
#: to the largest) at every ``(tau, gamma)`` from ``(0.1, 1)`` to ``(1e-5,
#: 1e-5)`` on MNIST-test's 10,000 nodes, no prediction apart
#: (``benchmarks/results/bench_solver_tol_1e-6.md``; at 1e-8,
#: ``bench_solver_tol.md``), and within 5 times at 70,000 nodes and 520 labels;
#: each factor of 10 costs
#: about one conjugate-gradient iteration per Green's column. Against 1e-8, the
#: benchmark's active-learning paths did not move (72 paths of 97 points: the
#: defaults with model change, V-opt and uncertainty sampling, summed and
#: full ``mgr`` with model change, Laplace learning with uncertainty
#: sampling, the full model with all three; digits, Binary-Clusters, Samson,
#: MNIST-test, 2 trials; the defaults with model change and uncertainty sampling
#: on Fashion-MNIST, one trial), and on 70,000 Fashion-MNIST images an iteration
#: took a median 138 / 134 ms against 173 / 161 (full ``mgr``) and 133 / 130
#: against 159 / 186 (the summed model), and over 100 iterations (to 520
#: labels) of full ``mgr`` 139 ms against 174 (mean 158 against 193); the
#: values 4e-7 (120 labels) and 4.6e-6 (520) off a tight solve, no prediction
#: apart (``benchmarks/results/bench_fullgraph_al_auto_tol.md``); 2e-6 and 4.5e-6
#: since the Green's columns' first tolerance is an estimate rather than a
#: bound (``bench_fullgraph_al_first_tol.md``).
AUTO_SOLVE_TOL = 1e-6

#: The models of the latent function (the ``model`` parameter).
MODELS = ("spectral", "full", "poisson", "sum", "auto")
#: The models that take ``class_weight`` (weighted labels): the spectral and the
#: summed ones, and ``"auto"``, which fits one of them.
WEIGHTED = ("spectral", "sum", "auto")

#: The power of :func:`skmcal.losses.target_scales` of each ``target_scale``.
TARGET_SCALE_POWERS = {None: 0.0, "sqrt": 0.5, "balanced": 1.0}

#: ``target_scale="auto"``'s scale where the fit is the summed model (``model_ == "sum"``;
#: targets of one elsewhere). The summed model interpolates its labels (its noise is
#: small), so class weights do not reach it, and a class the strategy queried more than
#: its share reaches further: on Fashion-MNIST, where V-opt took 11 trousers among its
#: first 50 labels, its first fit lost up to 7 points against the balanced spectral
#: model before it. With the square root (``benchmarks/bench_accuracy.py``'s
#: ``default`` against ``default-unscaled`` rows, 5 trials): Fashion-MNIST's worst
#: one-batch drops 7.0 / 6.0 -> 2.2 / 2.7 (V-opt / Sigma-opt), every strategy's below 4
#: points, accuracy at 100 / 200 / 500 labels up by 0.2 to 1.9 points with the other
#: strategies (model change +0.4 / -0.8 / -0.5); DNA's model change .756 / .812 / .877
#: -> .777 / .822 / .879 (3 trials); the benchmark's other sets within 0.5 points;
#: Satellite, whose queries follow its classes' unequal sizes, 0.1 to 1.1 points lower.
#: The choices of graph and hyperparameters stay on targets of one: made on the scaled
#: targets (the option's first version) they took smoother fits that followed the
#: counts again, and cost Satellite's uncertainty sampling 3 to 8 points.
AUTO_TARGET_SCALE = "sqrt"

#: ``model="auto"`` takes the spectral model while the labels number fewer than
#: this, and the summed prior (spectral + full graph) from there on (with ``gr``/``mgr``, on
#: at most :data:`~skmcal.classifier.AUTO_SUM_MAX_NODES` nodes). With few labels the spectral
#: model is the steadier one: the summed model lost up to 8 points, the full
#: one up to 10, over one batch below 50 labels in ``benchmarks/bench_accuracy.py``
#: (their hyperparameters, chosen from a handful of labels, move with each
#: batch; Laplace learning degenerates at low label rates). With more labels
#: the full graph's part is the more accurate (no truncation to saturate), and
#: with many classes the spectral model is the weaker one from the start: the
#: threshold does not grow with the classes. Waiting for 5 labels per class
#: (``max(50, 5 * n_classes)``, the rule before) held a 60-class set of
#: 3,000 points (``make_blobs``, 30 features) at .832 / .837 accuracy at
#: 100 / 200 labels where the summed model from 50 labels reached 1.000; on a
#: 26-class set of 20,000 it gave .890 / .935 / .943 at 100 / 200 / 500
#: against .911 / .936 / .941 (model change under the defaults, 2 trials).
AUTO_SUM_MIN_LABELS = 50

#: The relative gammas of ``gamma="auto"`` with a Newton loss (``ce``) in the
#: spectral phase of ``model="auto"`` (fewer labels than
#: :data:`~skmcal.classifier.AUTO_SUM_MIN_LABELS`), in place of
#: :data:`~skmcal.evidence.LAPLACE_GAMMAS`; ``kernel="auto"`` compares the
#: graphs at them in that phase. With so few labels the evidence
#: does not tell the noise scale: where the graph fits the labels it sits at
#: the grid's smallest gamma (0.5), and where it fits them no better than
#: chance (UCI's DNA, whose graph has no cluster structure) it climbs to the
#: largest, whose prior-dominated fit predicts nearly every node to the
#: class most labeled, and flips with it (0.77 -> 0.26 accuracy over one
#: batch). Along the defaults' own paths from 20 to 45 labels
#: (``benchmarks/bench_low_phase.py``: 16 data sets, every strategy, 5
#: trials; rule ``chosen`` against ``previous``, the full grid), it left the
#: benchmark's data sets as they were (Fashion-MNIST: one trial's first fit),
#: raised DNA's mean accuracy by 7 to 32 points with every strategy and
#: noisy-features' by 0.6 to 2 points (its worst one-batch drops from 2.9 to
#: 9.1 points to 0.4 to 3.9), and cost at most 1.1 points (unscaled,
#: Sigma-opt); over the 77 data set and strategy pairs, 0.748 -> 0.759 (with
#: :data:`~skmcal.classifier.AUTO_FEW_LABELS_MAX_SHARE`, which the evidence
#: otherwise evades on DNA by the smallest tau). It does not stop every drop
#: (Satellite's kernel flip; the README's "Outside the benchmark").
AUTO_FEW_LABELS_GAMMAS = (0.5,)

#: In the same phase (:data:`~skmcal.classifier.AUTO_FEW_LABELS_GAMMAS`), the taus of
#: ``tau="auto"`` and of the kernel's choice are those at which the prior's
#: smoothest eigenvector (the constant function) carries at most this share of
#: its variance (:func:`skmcal.evidence.constant_share`; the largest tau of
#: the grid where none does). A larger share is a prior of one value for every
#: node, and with labels that look like noise the evidence takes it: with
#: V-opt on DNA, where the graph's other eigenvalues are large (the mean of
#: the smallest two 0.1), tau = 0.01 (share 0.98) predicted one class, 44
#: points of accuracy lost over one batch. On the states of
#: ``benchmarks/bench_low_phase.py`` the cap changed DNA with V-opt only
#: (mean accuracy 0.544 -> 0.636, worst drop 44.3 -> 21.0 points); it keeps
#: tau = 0.03 on rare-class (share 0.51), which a cap of one half would not.
AUTO_FEW_LABELS_MAX_SHARE = 2 / 3

#: ``model="sum"`` with a given ``tau`` warns when the graph's other
#: eigenvectors hold less than this share of the spectral prior's variance
#: (one minus :func:`skmcal.evidence.constant_share`): each part of the summed
#: prior is scaled to unit mean variance and its noise is relative to that, so
#: a prior of nearly one value for every node leaves the labels' structure
#: below the noise, and the fit predicts the class most labeled nearly
#: everywhere. On digits with 60 random labels: tau = 1e-4 (share of the rest
#: 6e-5) 0.933 accuracy, 3e-5 (6e-6) 0.521, 1e-5 and below 0.10.
SUM_MIN_STRUCTURE = 1e-5

#: The summed model's grid search (``model="sum"``, and ``"auto"`` from 50 labels) scores
#: at most this many labels: beyond, a fixed subset of them (``_search_subset()``; the
#: fit itself takes every label). Its leave-one-out density costs one eigendecomposition
#: of a labels x labels matrix per grid point of the taus and ``eps`` (54 of them, twice
#: with ``kernel="auto"``'s narrower Gaussian scale): cold fits of 1,000 / 1,500 labels
#: took 16 / 46 s on 2 cores with every label scored, 4 s with the subset, at the same
#: accuracy (digits; moons alike), and ``cross_val_score`` on moons' 4,000 rows 726 s
#: against 22 s (``benchmarks/results/bench_many_labels.md``). Above the benchmark's 500
#: labels, so that its paths do not change.
SUM_SEARCH_MAX_LABELS = 500

#: ``model="auto"`` keeps the spectral model on more nodes than this: the
#: summed model's refit and query cost grows with the number of nodes (sparse
#: solves per class, Green's columns per label; about 1 s per batch at 70,000
#: nodes in ``benchmarks/bench_accuracy.py``); the spectral model's does not.
AUTO_SUM_MAX_NODES = 100_000

#: The kernels ``kernel="auto"`` chooses from, by the labels' leave-one-out predictions (see
#: ``SpectralGraphClassifier._choose_kernel()``); the first one where there is no
#: choice to make.
AUTO_KERNELS = ("gaussian", "cosine")

#: ``(scale_neighbor, scale_factor)`` of the narrower Gaussian graph that
#: ``kernel="auto"`` weighs against the Gaussian one in the summed model's phase
#: (``model_ == "sum"``): the steepest of the scales of
#: ``benchmarks/bench_graph_scale.py``, the most accurate there on MNIST-test
#: (.955 / .961 / .971 against .939 / .949 / .968 at 100 / 200 / 500 labels
#: with model change), not on Binary-Clusters.
AUTO_NARROW_SCALE = (9, 0.25)

#: ``kernel="auto"`` weighs the narrower Gaussian graph
#: (:data:`~skmcal.classifier.AUTO_NARROW_SCALE`) on at most this many nodes,
#: beyond :data:`~skmcal.classifier.AUTO_KERNEL_MAX_NODES` too (where the
#: Gaussian kernel is taken without a choice): the narrow graph shares the
#: Gaussian graph's kNN search (:data:`~skmcal.graph.KNN_SEARCHES`), and costs
#: its spectrum (22 s at 70,000 x 784) and its grid searches. On Fashion-MNIST
#: (70,000) it took ``benchmarks/bench_accuracy.py``'s ``default`` from .785 to
#: .802 accuracy at 500 labels (5 trials), a run to 500 labels from 55 to 145 s.
AUTO_SCALE_MAX_NODES = 100_000

#: The margin of :func:`~skmcal.classifier.significantly_better` by which the
#: narrower graph's leave-one-out predictions of the labels must beat the
#: kernel's graph for ``kernel="auto"`` to take it.
AUTO_SCALE_Z = 2.0

#: A warm refit that makes ``kernel="auto"``'s choice again keeps the last kernel
#: unless another's balanced leave-one-out log-likelihood of the labels (see
#: ``SpectralGraphClassifier._kernel_score()``) beats it by this much. Each change
#: of graph starts the model afresh, and near a tie the choice flipped back and
#: forth: in scratch runs of the defaults' paths (copies, noisy-features,
#: unscaled, Satellite, DNA, Vehicle; five strategies, 3 trials, to 100 labels) a
#: margin of 0.05 took the flips from 84 to 25 and the worst one-batch drops from
#: 8.9 / 6.3 / 7.9 points to 2.2 / 2.0 / 3.6 (copies, noisy-features, unscaled),
#: mean accuracy unchanged.
AUTO_KERNEL_MARGIN = 0.05

#: ``kernel="auto"`` builds the graph of every kernel of :data:`AUTO_KERNELS` up to
#: this many nodes; on more nodes it takes the Gaussian kernel. Each graph costs a
#: neighbour search and an eigensolve, and the exact cosine search grows as the
#: square of the nodes: 5 s for 10,000 x 784 (MNIST-test), 300 s for 70,000 x 784
#: (Fashion-MNIST, against 125 s for its Gaussian graph), on 2 cores.
AUTO_KERNEL_MAX_NODES = 20_000

#: The likelihoods the ``loss`` parameter takes: those of :data:`~skmcal.losses.LOSSES`, and
#: ``"auto"`` (``ce`` with the spectral and Poisson models, ``mgr`` with the
#: full-graph and summed ones).
LOSS_OPTIONS = (*LOSSES, "auto")


def auto_loss(model: str) -> str:
    """The loss ``loss="auto"`` takes with a resolved ``model``: ``mgr`` with the
    full-graph and summed models (their fit is a few sparse solves per class),
    ``ce`` with the spectral and Poisson ones."""
    return "mgr" if model in ("full", "sum") else "ce"

#: Default marker of an unlabeled row in ``y`` (scikit-learn's semi-supervised
#: convention); see the ``missing_label`` parameter.
UNLABELED = -1

#: Largest ratio accepted with ``loss="ce"`` between the posterior variance
#: ``1/tau^2`` of the class mean (the cross-entropy is flat along it, so only
#: the prior's shift bounds it) and the smallest posterior variances, at most
#: ``1/(lambda_max + tau^2)`` with ``lambda_max <= 2`` for the normalised
#: Laplacian (the loss's curvature can only shrink them further). Float64
#: then keeps about ``-log10(eps * ratio)`` significant digits of the
#: covariance and of the acquisition scores: at least 6 here. Beyond it
#: (tau = 1e-9: ratio 2e18) model_change and vopt scores were off by up to
#: 35,000x and the covariance had eigenvalues of -1.8e4.
CE_MAX_CONDITION = 1e-6 / np.finfo(float).eps

_TINY, _HUGE = np.finfo(float).tiny, np.finfo(float).max


def _check_tau_gamma(loss, tau, gamma):
    """Refuse a ``tau`` or ``gamma`` that float64 cannot honour (see :data:`CE_MAX_CONDITION`)."""
    for name, value in (("tau", tau), ("gamma", gamma)):
        if value is None:  # "auto": chosen on a grid of safe values
            continue
        with np.errstate(over="ignore", under="ignore"):
            square = float(np.float64(value) ** 2)
        if not _TINY <= square <= _HUGE:
            raise ValueError(
                f"{name}={value!r} cannot be honoured: {name}^2 = {square!r} is outside "
                f"float64's normal range; use {np.sqrt(_TINY):.1e} <= {name} <= "
                f"{np.sqrt(_HUGE):.1e}."
            )
    ratio = 2.0 / tau**2 if tau is not None else 0.0
    if LOSSES[loss].family == "softmax" and ratio > CE_MAX_CONDITION:
        raise ValueError(
            f"tau={tau!r} is too small for loss='ce': the posterior variance 1/tau^2 of the "
            f"class mean (along which the cross-entropy is flat) is up to 2/tau^2 = "
            f"{ratio:.1e} times the smallest variances, more than the {CE_MAX_CONDITION:.1e} "
            f"that float64 holds with 6 significant digits. Use tau >= "
            f"{np.sqrt(2.0 / CE_MAX_CONDITION):.1e}."
        )


def significantly_better(correct, baseline, z=AUTO_SCALE_Z) -> bool:
    """Whether ``correct`` beats ``baseline`` by a sign test on the labels they disagree on.

    Of the labels where exactly one of the two is right, ``b`` favour ``correct``
    and ``a`` ``baseline``; the test passes when ``b - a >= z sqrt(a + b)`` and
    ``b > a`` (under equal accuracy, ``b - a`` has mean 0 and standard deviation
    ``sqrt(a + b)``). With ``z = 2``, four labels right on one side and none on
    the other are the least that passes.

    Parameters
    ----------
    correct, baseline : array-like of bool of shape (n_labels,)
        Whether each label is predicted right under the two models.
    z : float, default=AUTO_SCALE_Z
        The margin in standard deviations, non-negative.

    Returns
    -------
    bool

    Examples
    --------
    >>> significantly_better([1, 1, 1, 1, 0], [0, 0, 0, 0, 0])
    True
    >>> significantly_better([1, 1, 1, 0, 0], [0, 0, 0, 0, 1])
    False
    """
    correct = np.asarray(correct, dtype=bool)
    baseline = np.asarray(baseline, dtype=bool)
    if correct.shape != baseline.shape or correct.ndim != 1:
        raise ValueError(
            f"correct and baseline must be 1-D of one length; got shapes {correct.shape} "
            f"and {baseline.shape}."
        )
    if not (np.isfinite(z) and z >= 0):
        raise ValueError(f"z must be a non-negative float; got {z!r}.")
    b = int(np.sum(correct & ~baseline))
    a = int(np.sum(baseline & ~correct))
    return bool(b > a and b - a >= z * np.sqrt(a + b))


def _graph_solver(graph):
    """The sparse solver of ``graph``'s weights (:func:`~skmcal.fullgraph.solver_for`),
    given the graph's eigenpairs (:meth:`~skmcal.fullgraph.LaplacianSolver.set_low_modes`:
    columns borrowed across shifts start corrected on them)."""
    solver = solver_for(graph.weights)
    solver.set_low_modes(graph.eigenvalues, graph.eigenvectors)
    return solver


def _check_model_loss(model, loss) -> None:
    """Refuse a ``loss`` that ``model`` cannot fit: ``model="sum"`` takes the Gaussian
    losses (and ``"auto"``, which fits ``mgr`` there)."""
    if model == "sum" and loss != "auto" and not LOSSES[loss].closed_form:
        raise ValueError(
            f"model='sum' takes the Gaussian losses 'gr' and 'mgr'; got loss={loss!r}. "
            f"Use loss='mgr' (or 'gr' for two classes), or another model for {loss!r}."
        )


def _is_nan(value) -> bool:
    return isinstance(value, Real) and value != value


def unlabeled_mask(y, missing_label=UNLABELED):
    """Rows of ``y`` equal to ``missing_label`` (a number, a string, NaN or None).

    Public within the package (:mod:`skmcal.baselines` reads a modAL
    learner's ``y_training`` with it), not part of skmcal's API.
    """
    y = np.asarray(y)
    if y.dtype.kind == "O":
        if missing_label is None:
            return np.array([v is None for v in y], dtype=bool)
        if _is_nan(missing_label):
            return np.array([_is_nan(v) for v in y], dtype=bool)
        kind = str if isinstance(missing_label, str) else Real
        return np.array(
            [isinstance(v, kind) and not isinstance(v, bool) and v == missing_label for v in y],
            dtype=bool,
        )
    if missing_label is None:
        return np.zeros(y.shape[0], dtype=bool)
    if _is_nan(missing_label):
        return np.isnan(y) if y.dtype.kind == "f" else np.zeros(y.shape[0], dtype=bool)
    if isinstance(missing_label, str) == (y.dtype.kind in "US"):
        return y == missing_label
    return np.zeros(y.shape[0], dtype=bool)


def _plain_labels(labels):
    """Labels of an object array (None markers removed) as the array of their values,
    numbers as numbers, for scikit-learn's type checks; other arrays as they are."""
    if labels.dtype.kind == "O" and not any(isinstance(v, str) for v in labels):
        return np.asarray(labels.tolist())  # numbers left beside None markers
    return labels


def _search_subset(labeled_nodes, codes, size):
    """Positions of about ``size`` of the labeled nodes for a grid search
    (:data:`SUM_SEARCH_MAX_LABELS`), in their order.

    The nodes of the ``size`` smallest values of a fixed hash of the node index
    (multiplication by the 64-bit golden ratio), and of each class the smallest one
    (every class is scored): the same nodes whatever the order of the labels, and as
    labels come, a node leaves the subset only for a node of smaller hash, so
    successive searches share most of their labels. The hash does not look at the
    labels, nor at the order they came in.
    """
    key = labeled_nodes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    order = np.argsort(key, kind="stable")
    chosen = np.zeros(labeled_nodes.size, dtype=bool)
    chosen[order[:size]] = True
    _, first_of_class = np.unique(codes[order], return_index=True)
    chosen[order[first_of_class]] = True
    return np.flatnonzero(chosen)


class SpectralGraphClassifier(ClassifierMixin, BaseEstimator):
    """Graph-based semi-supervised classifier with a Laplace posterior.

    Builds a k-nearest-neighbour similarity graph over all nodes (labeled and
    unlabeled), keeps the ``n_eigs`` smallest eigenpairs ``(lambda, V)`` of
    its normalised Laplacian, and fits the latent function ``u = V alpha`` by
    minimising

        1/2 sum_i (lambda_i + tau^2) alpha_i^2 + sum_{j labeled} loss(u_j, y_j)

    (Miller & Bertozzi, "Model-Change Active Learning in Graph-Based
    Semi-Supervised Learning"). The posterior of ``alpha`` is approximated by
    the Gaussian ``N(coef_, posterior_cov())`` (exact for ``gr`` and ``mgr``).

    With the defaults (``loss="auto"``, ``model="auto"``) it fits this model
    with the cross-entropy while the labels are few (fewer than 50), then
    adds the full graph's prior to the spectral one with a Gaussian
    likelihood (``model="sum"``, ``loss="mgr"``), which the truncation no
    longer limits; ``model_`` and ``loss_`` say which each fit took.

    Parameters
    ----------
    loss : {"auto", "ce", "mgr", "gr", "logistic", "probit"}, default="auto"
        The likelihood. ``gr`` (Gaussian regression), ``logistic`` and
        ``probit`` are binary: they take exactly two classes, the first of
        ``classes_`` coded -1 and the second +1. ``mgr`` (multiclass Gaussian
        regression, one-hot targets) and ``ce`` (cross-entropy) take any
        number of classes >= 2. ``auto`` (the default): ``ce`` with the
        spectral and Poisson models, ``mgr`` with the full-graph and summed
        ones (the Gaussian likelihood makes their fit a few sparse solves per
        class); with ``model="auto"`` that is ``ce`` while the labels are few
        and ``mgr`` from there on. In the spectral model ``ce`` was the most
        accurate per label with model change in
        ``benchmarks/bench_accuracy.py``; ``mgr`` is several times faster per
        query and refit (a closed form, no Newton iterations) and is as
        accurate with uncertainty sampling (see the user guide, "Choosing a
        loss and a strategy"). The loss of each fit is in ``loss_``.
    model : {"auto", "spectral", "full", "poisson", "sum"}, default="auto"
        The latent function. ``spectral``: ``u = V alpha`` in the ``n_eigs``
        smallest eigenvectors (the paper). ``full``: the MAP over all nodes,
        no truncation: ``min_u 1/2 u'(L + tau^2 I) u + sum_j loss(u_j, y_j)``
        with sparse solves (:mod:`skmcal.fullgraph`; with ``gr``/``mgr`` a
        free class offset along the null vector of ``L`` is left out of the
        predictions, which keeps a batch of labels of one class from taking
        over; ``offset=None`` with small ``tau`` and ``gamma`` is Laplace
        learning).
        ``poisson``: Poisson
        learning (Calder et al. 2020; :mod:`skmcal.poisson`; binary losses
        take the difference of the two class scores), its scores scaled to the
        targets' units at the labels (:func:`skmcal.poisson.target_units`);
        the paper's correction for the labels' class shares only where
        ``target_scale`` asks for it (see there). ``sum`` (``gr`` and
        ``mgr`` only): the spectral prior plus the full graph's, ``a (c_s V
        Lambda_{tau_s}^-1 V' + eps c_f (L + tau_f^2 I)^-1)``, each part
        scaled to unit mean variance at the labeled nodes, with ``tau_s``,
        ``tau_f``, ``eps`` and the noise chosen by the leave-one-out density
        of its labels and the amplitude ``a`` profiled (:func:`skmcal.fullgraph.fit_sum_graph`,
        :func:`skmcal.evidence.sum_loo_log_density`; the values in
        ``sum_prior_``). For ``full``, ``poisson`` and ``sum`` the covariance
        that ``posterior_cov`` and the query strategies use is the spectral
        Laplace covariance of ``loss`` evaluated around the model's latent values (see
        :func:`skmcal.fitting.posterior_around`). ``auto`` (the default): the spectral
        model while the labels number fewer than 50
        (:data:`~skmcal.classifier.AUTO_SUM_MIN_LABELS`),
        ``sum`` from there on with ``gr``, ``mgr`` or ``loss="auto"`` on at
        most :data:`~skmcal.classifier.AUTO_SUM_MAX_NODES` (100,000) nodes; ``spectral`` with
        the other losses and on more nodes (its cost does not grow with the
        number of nodes). With few labels the spectral model is the steadier,
        with more the full graph's part is the more accurate (no truncation);
        see the user guide, "The model". The choice of each fit is in
        ``model_``.
    nodes : None, array-like, sparse matrix or NodeSet, default=None
        The nodes of the graph. None: the rows given to ``fit`` are the nodes
        (rows with ``y = missing_label`` are unlabeled nodes). Otherwise ``fit(X, y)``
        labels the nodes equal to the rows of ``X`` (every row of ``X`` must
        be a node) and every other node is unlabeled; pass a
        :class:`~skmcal.NodeSet` to avoid hashing the data at each fit. The
        graph and its spectrum are cached by node content and graph
        parameters (see Notes).
    kernel : {"auto", "gaussian", "cosine", "precomputed"}, default="auto"
        ``gaussian``: ``w_ij = exp(-|x_i - x_j|^2 / (scale_factor sigma_i
        sigma_j))`` with ``sigma_i`` the distance from ``x_i`` to its
        ``scale_neighbor``-th nearest neighbour (self-tuning scale).
        ``cosine``: ``w_ij = max(0, cos(x_i, x_j))`` on the kNN graph of the
        cosine distance. ``precomputed``: the node data is a square,
        non-negative affinity matrix (rows of ``X`` in ``fit`` and
        ``predict`` are rows of affinities to the nodes). The kNN graph is
        symmetrised as ``(W + W') / 2``. ``auto``: the graphs of both
        kernels, and of the two the one whose spectral ``ce`` model predicts
        the labels better, each from the others (the balanced leave-one-out
        log-likelihood of the labels, at the grid point of ``tau="auto"`` and
        ``gamma="auto"`` of largest evidence), on at most
        :data:`~skmcal.classifier.AUTO_KERNEL_MAX_NODES` (20,000) nodes with ``neighbors=None``;
        the Gaussian kernel on more nodes, with a ``neighbors`` estimator
        (it has its own metric), and where there are no labels to choose
        by (:func:`~skmcal.cold_start`). The cosine graph is not a candidate
        where a node has no positive affinity (a zero row). A warm refit
        keeps the last choice until the labels grow by a quarter, and then
        changes kernel only if the other's score is ahead by
        :data:`~skmcal.classifier.AUTO_KERNEL_MARGIN`. The choice
        of each fit is in ``kernel_``. It costs a second graph and
        spectrum (5 s for the 10,000 x 784 MNIST test set on 2 cores); see the
        user guide, "The model", for what it chose and gained in
        ``benchmarks/bench_accuracy.py``. With the summed model, a Gaussian
        choice is weighed once more against the Gaussian graph of a
        narrower scale (:data:`~skmcal.classifier.AUTO_NARROW_SCALE`:
        ``scale_neighbor=9``, ``scale_factor=0.25``), taken where it predicts
        the labels left out one at a time significantly better
        (:func:`~skmcal.classifier.significantly_better`), on at most
        :data:`~skmcal.classifier.AUTO_SCALE_MAX_NODES` (100,000) nodes with
        ``neighbors=None`` (beyond the kernel's own limit too); ``graph_.params``
        has the scale in use. That costs one more graph (its spectrum: it
        shares the Gaussian graph's kNN search), and the summed model's grid
        search on it.
    n_neighbors : int, default=10
        Neighbours of each node in the kNN graph (the paper: 10; 15 for
        hyperspectral data). Clipped, with a warning, to ``n_nodes - 1``.
    scale_neighbor : int, default=5
        Which neighbour (not counting the point itself) sets the local scale
        of the Gaussian kernel. The paper's experiments used 5.
    scale_factor : float, default=3.0
        ``s`` in the Gaussian kernel. The paper's experiments used 3.
    neighbors : estimator or None, default=None
        A ``KNeighborsTransformer``-compatible object (``fit`` on the nodes,
        ``transform`` giving a sparse distance graph), such as
        :class:`sklearn.neighbors.KNeighborsTransformer` or
        ``pynndescent.PyNNDescentTransformer`` for large data. It must return
        at least ``max(n_neighbors, scale_neighbor)`` neighbours besides the
        point itself; with ``kernel="cosine"`` it must use the cosine
        distance. None: exact neighbours by
        :class:`sklearn.neighbors.NearestNeighbors`. Measured on 2 cores,
        compiled pynndescent is faster from a few tens of thousands of points
        (100,000 x 64: 10 s against 59 s; 70,000 x 784: 12 s against 268 s), but its
        compilation costs about a minute per process: for one graph in a
        fresh process, exact search is faster up to about 100,000 points in
        64 dimensions and 30,000 in 784 (see the user guide, "Large data").
    n_eigs : int, default=50
        ``M``, the number of eigenpairs kept. Clipped, with a warning, to the
        number of nodes.
    tau : float or "auto", default="auto"
        Prior shift: the prior precision is ``L + tau^2 I``. "auto": the
        value of :data:`skmcal.evidence.DEFAULT_TAUS` (0.01 to 0.1; ``tau^2``
        at most the median kept eigenvalue, so that the prior still orders
        the eigenvectors) with the
        largest evidence of the spectral model for the labels of this fit
        (type-II maximum likelihood: closed form for ``gr``/``mgr``, Laplace
        approximation otherwise; :mod:`skmcal.evidence`), jointly with
        ``gamma`` when that is "auto" too; used for every ``model``. A warm
        refit with ``logistic``, ``probit`` or ``ce`` (whose evidence needs a
        Newton fit per grid point), or with ``model="full"`` (where a new
        value means a new solve from scratch), reuses the last choice until
        the number of labels has grown by a quarter. The paper's values
        (:data:`~skmcal.classifier.PAPER_HYPERPARAMETERS`, e.g. tau=0.005, gamma=0.5 for
        ``ce``) collapse with few labels. With
        ``ce``, at least 2.1e-5 (see Notes). With ``model="sum"`` (also
        ``"auto"`` from 50 labels), a given tau so small that the spectral
        prior is one value for every node but a share below
        :data:`~skmcal.classifier.SUM_MIN_STRUCTURE` raises a ``UserWarning``:
        that fit predicts the class most labeled nearly everywhere.
    gamma : float or "auto", default="auto"
        Scale of the loss. "auto": the value with the largest evidence, as for
        ``tau``, on a grid relative to the prior's scale (which falls as one
        over the number of nodes; :func:`skmcal.evidence.select_hyperparameters`):
        :data:`skmcal.evidence.DEFAULT_GAMMAS` (0.1 to 1) for ``gr``/``mgr``,
        :data:`skmcal.evidence.LAPLACE_GAMMAS` (0.5 to 2) for the others,
        except that ``model="auto"`` takes the smallest of these,
        :data:`~skmcal.classifier.AUTO_FEW_LABELS_GAMMAS`, while the labels
        are fewer than :data:`~skmcal.classifier.AUTO_SUM_MIN_LABELS` (the
        evidence of a few labels does not tell the noise scale).
        ``gamma_`` is the equivalent gamma of the unscaled prior. With
        ``model="full"`` and ``gr``/``mgr``: tau and gamma by the full
        model's own evidence (:func:`skmcal.evidence.select_full_hyperparameters`,
        :data:`~skmcal.evidence.FULL_TAUS` x :data:`~skmcal.evidence.FULL_GAMMAS`;
        a warm refit's search climbs along the taus from the last choice and
        solves the other taus' Green's columns to
        :data:`~skmcal.evidence.FULL_EVIDENCE_TOL`, their entries corrected to
        second order); with the other losses,
        DEFAULT_GAMMAS as they are. ``model="sum"``:
        the leave-one-out density of its labels over
        :data:`~skmcal.evidence.SUM_GAMMAS`, relative to the prior scaled to
        unit mean variance at the labeled nodes (a given gamma is that
        relative noise; a given tau is both taus of the model, and its
        ``eps`` is always chosen).
    class_weight : {"auto", "balanced"}, dict or None, default="auto"
        Weights of the labeled nodes' loss terms by class, as in
        scikit-learn: ``"balanced"`` weighs each labeled node
        ``n_labeled / (n_classes * n_labeled_in_its_class)``, so that every
        class weighs as much in the fit however many labels it has; a dict
        maps class labels to weights (1 for a class it does not name); None
        weighs every label 1. The spectral and the summed models take weights
        (:func:`skmcal.fitting.fit_posterior`,
        :func:`skmcal.fullgraph.fit_sum_graph`; the hyperparameters and the
        graph are chosen by the weighted model's evidence or leave-one-out
        density); the query strategies' look-ahead adds a candidate at
        weight 1. ``"auto"`` (the
        default): ``"balanced"`` in the spectral phase of ``model="auto"``
        (fewer labels than :data:`~skmcal.classifier.AUTO_SUM_MIN_LABELS`),
        None otherwise. There the labels are few, as even over the classes as
        the first draw and the queries made them, and a class that a few
        queries favoured takes over the smooth function: on Fashion-MNIST,
        uncertainty sampling took four of a batch of five from one class
        and, with unit weights, that class went from 300 predicted nodes to
        20,600 (accuracy 0.66 to 0.59; weighted, the same labels: 0.67). With many
        labels the counts follow the classes' sizes, and balancing them
        would trade accuracy for balanced accuracy: not the default.
        ``model="full"`` and ``"poisson"`` raise a ``ValueError`` for a
        ``class_weight`` other than "auto" or None.
    target_scale : {"auto", "sqrt", "balanced"} or None, default="auto"
        With the Gaussian losses (``gr``, ``mgr``), fit each class's labels to
        targets scaled by ``(n_labeled / (n_classes * n_labeled_in_its_class))^p``
        (:func:`skmcal.losses.target_scales`): ``p = 1/2`` with ``"sqrt"``, 1
        with ``"balanced"``; None: targets of one. ``"auto"`` (the default):
        :data:`~skmcal.classifier.AUTO_TARGET_SCALE` (``"sqrt"``) where the
        fit is the summed model, targets of one elsewhere. Their fit is
        linear in the targets, so a class's latent values scale with its
        targets: with targets of one, the class queried most reaches furthest
        (the regression's mass grows with its count), and a batch of queries
        of one class moves the prediction of nodes that no label is near.
        The fit's choices (kernel, graph scale, tau, gamma, the summed
        prior's weights) are made on targets of one; the scale then enters
        the fit, its predictions and the query strategies' look-ahead (a
        candidate takes the scale of its pseudo-label's class). Evenly
        labeled classes fit as without a scale. With ``model="poisson"`` the
        scale multiplies each class's Poisson scores (and its targets):
        ``"balanced"`` is the paper's correction of the scores for the labels'
        class shares with uniform class priors, ``b_c / ybar_c``; None (and
        "auto") leaves the scores as graphlearning does. Active learning's
        queries do not follow the classes' sizes, and the correction cost
        uncertainty sampling up to 1.7 points on the benchmark's data
        (``benchmarks/bench_accuracy.py``, ``poisson-balanced:*`` rows; the
        README's *Poisson learning's class correction*). With ``loss="auto"``, ``"sqrt"``
        and ``"balanced"`` apply where the fit takes ``mgr`` (the summed and
        full models), not to the spectral phase's ``ce``; a Newton ``loss``, or
        ``loss="auto"`` with ``model="poisson"`` (which fits ``ce``), raise a
        ``ValueError`` for a scale other than "auto" or None. See the README's
        *Target scales*.
    offset : {"auto", "free"} or None, default="auto"
        The class offset of ``model="full"`` with ``gr``/``mgr``. ``"free"``:
        each class's targets less their least-squares projection on the
        labeled nodes' entries of ``D^1/2 1`` (the null vector of ``L``), the
        offset left out of the latent values
        (:func:`skmcal.fullgraph.fit_full_graph`'s ``free_offset``; ``tau``
        and ``gamma`` "auto" by the evidence with that offset integrated
        out): with few labels, a batch of one class cannot take over the
        nodes far from every label, whose values the offset would set.
        None: no offset apart, the prior alone, as the spectral and summed
        models; with small ``tau`` and ``gamma`` the fit is then Laplace
        learning's harmonic extension (Zhu et al. 2003), the labels' values
        held and their weighted averages elsewhere. ``"auto"`` (the default):
        ``"free"`` where the fit is the full model with ``gr``/``mgr``, None
        elsewhere. ``"free"`` with another model or a Newton ``loss`` raises
        a ``ValueError``. Measured with uncertainty sampling in
        ``benchmarks/bench_accuracy.py`` (``laplace:*`` against
        ``full-mgr:*``): None gained on Samson from 100 labels on and on
        Binary-Clusters at 100 and 200, and cost MNIST-test 10 points at 50;
        see the user guide, "Choosing a loss and a strategy".
    max_iter : int, default=100
        Maximum Newton iterations (``logistic``, ``probit``, ``ce``; for
        ``ce`` this counts the cheap chord steps that reuse a factored
        Hessian too).
    tol : float or "auto", default="auto"
        ``model="spectral"``: Newton stops when every coordinate of its exact
        step at the current point is at most ``tol * (1 + max|coef|)``
        ("auto": :data:`skmcal.classifier.AUTO_NEWTON_TOL`, 1e-10).
        ``model="full"`` and ``"sum"``: the relative residual of their sparse
        solves, for ``gr``/``mgr`` with the rows of nodes labeled ``c`` times
        scaled by ``min(1, gamma^2 / c)``, for Newton's losses the relative
        gradient norm, each entry divided by the Hessian's diagonal
        (:func:`skmcal.fullgraph.fit_full_graph`; "auto":
        :data:`skmcal.classifier.AUTO_SOLVE_TOL`, 1e-6, which held the
        values within a few times 1e-6 (relative to the largest) of the
        exact solve's at every ``tau`` and ``gamma`` measured; each factor of
        10 below costs about one more conjugate-gradient iteration per
        column). Below 1: a relative tolerance of 1 or more stops at the
        first step. With ``gr`` / ``mgr``, the spectral ``ce`` fits by which
        ``kernel="auto"`` compares the graphs keep ``AUTO_NEWTON_TOL``.
    warm_start : bool, default=True
        Start Newton's method from the previous ``coef_`` when refitting on
        the same graph with the same loss and classes (the active-learning
        loop, where ``teach()`` refits). The objective is strictly convex, so
        the optimum is the same either way; only the iteration count changes.
    cache : bool, default=True
        Share graphs through the in-process cache
        :data:`~skmcal.GRAPH_CACHE` (see Notes).
    n_jobs : int or None, default=None
        Parallel jobs of the default neighbour search (None: 1), threads of
        the BLAS and OpenMP pools while the graph is built (None: as they
        are; in a joblib worker, such as one of ``GridSearchCV(n_jobs=2)``,
        they are limited to its share of the cores, and ``n_jobs=-1`` lets
        the build that the other workers wait for use them all), threads
        that score pieces of candidates in the query strategies, every loss,
        and threads over which the sparse solves of ``model="full"``,
        ``"sum"`` and ``"poisson"`` split their rows on graphs of
        :data:`skmcal.fullgraph.PARALLEL_MIN_ROWS` nodes or more (None: the
        size of the BLAS pools, i.e. every core in a plain process and a
        joblib worker's share in a worker; each thread runs a
        single-threaded BLAS). Threads are at most the cores
        (``os.cpu_count()``), whatever ``n_jobs`` says: more only spin
        against each other.
    random_state : int, RandomState instance or None, default=None
        Seeds the start of the sparse eigensolver (large graphs only: ARPACK's
        starting vector, or the starting block of the float32 subspace
        iteration above :data:`skmcal.graph.CHEBYSHEV_MIN_NODES` nodes).
        None uses seed 0, so the spectrum is the same at every build. A
        RandomState instance disables the graph cache.
    missing_label : int, float, str or None, default=-1
        The value of ``y`` that marks an unlabeled row: -1 as in
        :mod:`sklearn.semi_supervised`; ``np.nan`` (scikit-activeml's
        convention) and None are accepted too, and so is a string. It cannot
        also be a class label: with classes -1 and +1, pass
        ``missing_label=np.nan`` (or None) and mark the unlabeled rows with it.
    memory : None, str, path-like or joblib.Memory, default=None
        A disk cache of graphs (scikit-learn's ``Pipeline`` convention): a
        folder, or a ``joblib.Memory``. The graph and its spectrum (weights,
        eigenpairs, scales; not the neighbour index, fitted again on the
        nodes only if a new point must be placed on the graph) are stored
        there under the key of the in-process cache, and every process that
        needs the same graph later, or at the same time (the workers of
        ``GridSearchCV(n_jobs=2)``, a later run), loads it, with its arrays
        memory-mapped (read-only, shared) when ``memory`` is a folder,
        instead of building it. None: no disk cache.
    verbose : int, default=0
        0: silent. 1 or more: ``fit`` logs each phase with its time (node
        hashing and row look-up, equal rows, kNN search, weights, spectrum,
        or where the graph came from, and the model fit) at INFO on the
        logger ``skmcal`` (see :func:`skmcal.graph.phase_level`: with
        logging not configured, the messages go to standard error).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels seen among the labeled rows.
    coef_ : ndarray of shape (n_eigs,) or (n_eigs, n_classes)
        The MAP spectral coefficients: ``(M,)`` for binary losses,
        ``(M, n_classes)`` for ``mgr`` and ``ce``.
    eigenvalues_ : ndarray of shape (n_eigs,)
        Smallest eigenvalues of the normalised graph Laplacian, ascending.
    eigenvectors_ : ndarray of shape (n_nodes, n_eigs)
        The matching orthonormal eigenvectors (read-only, shared).
    graph_ : SpectralGraph
        The graph and spectrum, shared with every estimator on the same nodes.
    node_set_ : NodeSet
        The nodes of the graph.
    labeled_nodes_ : ndarray of shape (n_labeled,)
        Node index of each labeled row of the last ``fit``.
    posterior_ : LaplacePosterior
        The fitted posterior (MAP and covariance in spectral coordinates), a
        :class:`~skmcal.posterior.RankOnePosterior` (``gr``, ``logistic``,
        ``probit``, ``mgr``) or :class:`~skmcal.softmax.SoftmaxPosterior`
        (``ce``): what predictions and the query strategies read.
    model_ : str
        The model of the last fit: ``model``, or the one ``model="auto"`` chose.
    loss_ : str
        The loss of the last fit: ``loss``, or the one ``loss="auto"`` chose.
    kernel_ : str
        The kernel of the last fit's graph: ``kernel``, or the one
        ``kernel="auto"`` chose.
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class's labels in the last fit (ones where it
        used none).
    target_scale_ : ndarray of shape (n_classes,)
        The scale of each class's targets in the last fit (``target_scale``,
        "auto" resolved; ones where it used none); with ``model="poisson"``,
        of its class scores too.
    tau_, gamma_ : float
        The values used (after resolving "auto"). ``model="sum"``: the
        spectral tau, and the gamma of the unscaled spectral prior with the
        same predictions and query picks (``noise / sqrt(spectral_scale)``).
    sum_prior_ : dict
        ``model="sum"`` only: ``tau_s``, ``tau_f``, ``eps``, ``gamma`` (the
        noise relative to the scaled prior), ``amplitude`` (profiled),
        ``spectral_scale`` and ``full_scale`` (``c_s``, ``c_f``).
    n_iter_ : int
        Newton (and, for ``ce``, chord) steps of the last fit (0 for ``gr``
        and ``mgr``).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined only when ``X`` has feature names that are all strings.

    See Also
    --------
    sklearn.semi_supervised.LabelSpreading : Graph-based SSL without a posterior.

    Notes
    -----
    **The graph is computed once per node set.** It depends on the node data
    and on ``kernel``, ``n_neighbors``, ``scale_neighbor``, ``scale_factor``,
    ``neighbors``, ``n_eigs`` and ``random_state``; never on ``loss``, ``tau``
    or ``gamma``. Graphs are kept in a small least-recently-used cache keyed
    by a hash of the node data plus those parameters, so refitting with new
    labels, clones, and ``GridSearchCV`` over ``loss``/``tau``/``gamma`` on a
    fixed ``nodes`` reuse it. ``skmcal.GRAPH_CACHE`` is that cache:
    ``GRAPH_CACHE.info()`` lists the graphs held with their size,
    ``GRAPH_CACHE.maxsize`` sets how many are kept (4; 0 keeps none),
    ``skmcal.clear_graph_cache()`` empties it. ``memory`` adds a cache on disk
    under the same key, shared by processes. ``nodes=X`` with an array is
    hashed once while that array lives (see :func:`skmcal.graph.node_set`):
    an array larger than 65,536 values edited in place in a row that its
    fingerprint does not sample (:func:`skmcal.graph.array_fingerprint`) is
    taken for the array before; pass a new array, or a
    :class:`~skmcal.NodeSet` (read-only), after such an edit. The same holds
    for ``X`` in ``fit`` without ``nodes`` and for the query strategies' pool.

    **Prediction.** Rows equal to a node get that node's latent values.
    Other rows get the weighted average of the latent values of their
    ``n_neighbors`` nearest nodes, weighted by the graph's own kernel (see
    :meth:`~skmcal.SpectralGraph.interpolation_weights`), which
    ``posterior_cov(X)`` follows too. A row at a numerically zero distance
    from a node (a float32 copy of it, say) gets that node's values; a row
    far from every node is extrapolated from its nearest nodes, with a
    warning.

    **Equal rows are one point.** The graph is built over the distinct rows
    (so copies never crowd out a point's neighbours nor split the graph),
    every copy joined to its equal nodes with weight 1. Equal nodes report
    one point's values (``transduction_``, and ``predict``, ``predict_proba``,
    ``decision_function`` and ``posterior_cov`` at their rows): those of its
    labeled node where one is labeled (the smallest, if several), else of its
    first node; a label ties its own node only, so an unlabeled copy of a
    labeled row would otherwise be predicted apart from it (see
    :meth:`~skmcal.SpectralGraph.point_sources`). A row equal to
    several nodes stands for the first of them (with ``nodes=`` given, k
    copies of a row in one ``fit`` label k equal nodes), and the query
    strategies of :mod:`skmcal.query` never return a
    node equal to a labeled one, nor two equal rows in one batch.

    **Labels given twice.** With ``nodes=`` given, labeled rows of ``X`` that
    land on one node (a row taught again) count once; different labels for
    one node raise a ``ValueError`` naming the rows. ``fit`` always starts
    from the labels it is given: a fit on the same nodes that keeps none of
    the previous fit's labeled nodes warns (modAL's
    ``teach(..., only_new=True)`` does that, and drops every earlier label).

    **Components without labels.** Nothing is learned in a connected
    component of the graph that holds no label: ``fit`` warns with the number
    of such nodes, and predictions there are fixed, whatever the round-off:
    latent value 0 (the prior mean), equal class probabilities, and the most
    frequent labeled class (the first of ``classes_`` on a tie). The same
    holds for new rows whose neighbours all lie in such components.

    **Floating point.** The data are used at any scale (data beyond
    ``2^+-64`` are multiplied by an exact power of two before any distance).
    ``tau`` and ``gamma`` must have squares in float64's normal range, and
    with ``loss="ce"``, ``tau >= 2.1e-5``: the cross-entropy is flat along
    the class mean, where the posterior variance is ``1/tau^2``, and a
    smaller ``tau`` leaves fewer than 6 significant digits of the
    covariance and of the acquisition scores (see
    :data:`skmcal.classifier.CE_MAX_CONDITION`).

    **Probabilities.** ``predict_proba`` is the model's own likelihood of
    each class at the MAP latent value ``u``, normalised over the classes:
    ``gr``: ``sigmoid(2 u / gamma^2)``; ``logistic``: ``sigmoid(u / gamma)``;
    ``probit``: ``Phi(u / gamma)``; ``mgr``: ``softmax(u / gamma^2)`` (the
    Gaussian likelihood of each one-hot label); ``ce``: ``softmax(u / gamma)``.
    Small ``gamma`` gives sharp probabilities. They are the model's
    likelihoods, not calibrated confidences: ``mgr`` regresses the latent
    values towards one-hot rows with ``gamma = 0.1`` (the paper's setting),
    so ``softmax(u / gamma^2)`` multiplies latent gaps by 100 and a gap of
    0.05 already gives odds of ``e^5 ~ 150``: its probabilities are nearly
    one-hot. Use ``ce`` (``softmax(u / 0.5)``) for graded probabilities, or
    wrap the classifier in :class:`sklearn.calibration.CalibratedClassifierCV`
    (with ``nodes=`` a fixed pool) to calibrate them on the labeled rows.

    References
    ----------
    K. Miller and A. L. Bertozzi, "Model-Change Active Learning in Graph-Based
    Semi-Supervised Learning", 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from skmcal import SpectralGraphClassifier
    >>> X, y_true = make_moons(200, noise=0.05, random_state=0)
    >>> y = np.full(200, -1)
    >>> y[:4] = y_true[:4]
    >>> clf = SpectralGraphClassifier(loss="probit", n_eigs=20).fit(X, y)
    >>> clf.coef_.shape
    (20,)
    >>> float(np.mean(clf.transduction_ == y_true)) > 0.9
    True

    The defaults grow the model with the labels:

    >>> few = SpectralGraphClassifier().fit(X, y)
    >>> few.model_, few.loss_
    ('spectral', 'ce')
    >>> y[:60] = y_true[:60]
    >>> many = SpectralGraphClassifier().fit(X, y)
    >>> many.model_, many.loss_
    ('sum', 'mgr')
    >>> float(np.mean(many.transduction_ == y_true)) > 0.9
    True
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions(set(LOSS_OPTIONS))],
        "model": [StrOptions(set(MODELS))],
        "nodes": [None, "array-like", "sparse matrix", NodeSet],
        "kernel": [StrOptions({"auto", "gaussian", "cosine", "precomputed"})],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "scale_neighbor": [Interval(Integral, 1, None, closed="left")],
        "scale_factor": [Interval(Real, 0, None, closed="neither")],
        "neighbors": [None, HasMethods(["fit", "transform"])],
        "n_eigs": [Interval(Integral, 1, None, closed="left")],
        "tau": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "gamma": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "class_weight": [StrOptions({"auto", "balanced"}), dict, None],
        "target_scale": [StrOptions({"auto", "sqrt", "balanced"}), None],
        "offset": [StrOptions({"auto", "free"}), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
        "warm_start": ["boolean"],
        "cache": ["boolean"],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "missing_label": [None, Real, str],
        "memory": [None, str, os.PathLike, HasMethods(["cache"])],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        loss="auto",
        *,
        model="auto",
        nodes=None,
        kernel="auto",
        n_neighbors=10,
        scale_neighbor=5,
        scale_factor=3.0,
        neighbors=None,
        n_eigs=50,
        tau="auto",
        gamma="auto",
        class_weight="auto",
        target_scale="auto",
        offset="auto",
        max_iter=100,
        tol="auto",
        warm_start=True,
        cache=True,
        n_jobs=None,
        random_state=None,
        missing_label=UNLABELED,
        memory=None,
        verbose=0,
    ):
        self.loss = loss
        self.model = model
        self.nodes = nodes
        self.kernel = kernel
        self.n_neighbors = n_neighbors
        self.scale_neighbor = scale_neighbor
        self.scale_factor = scale_factor
        self.neighbors = neighbors
        self.n_eigs = n_eigs
        self.tau = tau
        self.gamma = gamma
        self.class_weight = class_weight
        self.target_scale = target_scale
        self.offset = offset
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.cache = cache
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.missing_label = missing_label
        self.memory = memory
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        loss = LOSSES.get(self.loss) if isinstance(self.loss, str) else None
        tags.classifier_tags.multi_class = loss is None or loss.multiclass
        return tags

    # ------------------------------------------------------------------ fit
    def _graph_params(self, n_nodes, kernel=None):
        """The :class:`~skmcal.graph.GraphParams` of ``kernel`` (None: ``self.kernel``;
        "auto" without labels to choose by is the first of :data:`AUTO_KERNELS`)."""
        kernel = self.kernel if kernel is None else kernel
        kernel = AUTO_KERNELS[0] if kernel == "auto" else kernel
        if n_nodes < 2:
            raise ValueError(f"A graph needs at least 2 nodes; got n_nodes={n_nodes}.")
        n_neighbors, scale_neighbor, n_eigs = self.n_neighbors, self.scale_neighbor, self.n_eigs
        if kernel != "precomputed" and max(n_neighbors, scale_neighbor) >= n_nodes:
            n_neighbors = min(n_neighbors, n_nodes - 1)
            scale_neighbor = min(scale_neighbor, n_nodes - 1)
            warn_user(
                f"n_neighbors={self.n_neighbors} and scale_neighbor={self.scale_neighbor} "
                f"must be < n_nodes={n_nodes}; using n_neighbors={n_neighbors} and "
                f"scale_neighbor={scale_neighbor}.",
                UserWarning,
            )
        if n_eigs > n_nodes:
            warn_user(
                f"n_eigs={n_eigs} exceeds n_nodes={n_nodes}; all {n_nodes} "
                f"eigenpairs are used (dense solver).",
                UserWarning,
            )
            n_eigs = n_nodes
        return GraphParams(
            kernel=kernel,
            n_neighbors=int(n_neighbors),
            scale_neighbor=int(scale_neighbor),
            scale_factor=float(self.scale_factor),
            n_eigs=int(n_eigs),
            neighbors=self.neighbors,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )

    def _tau_gamma(self):
        """``(tau, gamma)`` as given; None for "auto"."""
        tau = None if self.tau == "auto" else float(self.tau)
        gamma = None if self.gamma == "auto" else float(self.gamma)
        return tau, gamma

    def _select_hyperparameters(
        self, model, loss, graph, labeled_nodes, codes, n_classes, warm, grids=None, weights=None
    ):
        """``(tau, gamma, start)``: the given values, "auto" ones by the evidence.

        ``model="full"`` with ``gr``/``mgr``: the full model's own evidence
        (:func:`skmcal.evidence.select_full_hyperparameters` over
        :data:`~skmcal.evidence.FULL_TAUS` x :data:`~skmcal.evidence.FULL_GAMMAS`;
        a warm search climbs from the last tau, whose columns it solves at the
        fits' tolerance, the other taus' at ``FULL_EVIDENCE_TOL`` with
        second-order entries, :func:`~skmcal.fullgraph.green_block`)
        while the Green's columns of the labeled nodes at every tau fit in
        :data:`skmcal.fullgraph.MAX_GREEN_BYTES`; beyond, a warm refit keeps
        the last choice. Otherwise the spectral evidence:

        The evidence is maximised, for the "auto" one(s) only, over
        :data:`skmcal.evidence.DEFAULT_TAUS` (those with ``tau^2`` at most the
        median kept eigenvalue) x :data:`~skmcal.evidence.DEFAULT_GAMMAS`
        (``gr``/``mgr``) or :data:`~skmcal.evidence.LAPLACE_GAMMAS` (the
        others), gammas relative to the prior's scale (the full-graph model:
        DEFAULT_GAMMAS as they are), at each fit, except that a warm refit of a Newton
        loss or of the full-graph model reuses the last choice while the
        number of labels has grown by less than ``AUTO_REUSE_GROWTH`` since
        it was made (active learning
        adds a few labels per refit; the choice moves slowly).

        ``start``: after a search on a warm spectral refit of a Newton loss, the
        grid's MAP at the choice (coefficients for ``_fit_model()`` to start
        from); None otherwise. ``weights``: those of the labeled nodes (the spectral
        model's ``class_weight``), None for unit weights.
        """
        tau, gamma = self._tau_gamma()
        if tau is not None and gamma is not None:
            return tau, gamma, None
        n_labeled = labeled_nodes.size
        # gr/mgr: the evidence is a closed form, cheap enough for every spectral
        # fit; a full-graph refit with another (tau, gamma) would solve afresh.
        reuse = warm and (not loss.closed_form or model == "full")
        last = getattr(self, "_auto_choice", None) if reuse else None
        if last is not None and n_labeled < AUTO_REUSE_GROWTH * last[0]:
            return last[1], last[2], None
        if model == "full" and loss.closed_form:
            solver = _graph_solver(graph)
            taus = FULL_TAUS if tau is None else (tau,)
            nodes = np.unique(labeled_nodes)
            # this fit's columns at every tau, whatever the solver's cache holds
            # (columns of other fits): the choice of rule must not depend on it
            if solver.greens_fit(len(taus), nodes.size):
                # a warm search climbs from the last choice (select_full_hyperparameters),
                # whose columns the fit needs at tol; the other taus' at FULL_EVIDENCE_TOL,
                # their entries corrected to second order
                start = last[1] if last is not None and last[1] in taus else None
                tol = self._solve_tol()
                tau, gamma, _ = select_full_hyperparameters(
                    lambda t: green_block(
                        graph.weights, labeled_nodes, t, solver=solver,
                        tol=tol if t == start else max(tol, FULL_EVIDENCE_TOL),
                        second_order=t != start,
                    ),
                    loss.encode(codes, n_classes),  # choices on unit targets (_encode)
                    taus,
                    FULL_GAMMAS if gamma is None else (gamma,),
                    offset=(
                        offset_direction(graph.weights, labeled_nodes, solver=solver)
                        if self._free_offset(model, loss) else None
                    ),
                    start=start,
                )  # fmt: skip
                self._auto_choice = (n_labeled, tau, gamma)
                return tau, gamma, None
            if last is not None:
                return last[1], last[2], None
        # "auto" gammas are relative to the spectral prior's scale (see
        # select_hyperparameters). The full-graph prior keeps the paper's scale
        # and grid (Newton losses, or gr/mgr whose Green's columns would not fit):
        # its node variance, summed over all N modes, does not fall with N.
        relative = gamma is None and model != "full"
        # the spectral phase of model="auto": its own grid for the relative Newton fits
        few = relative and not loss.closed_form and self._few_labels(model, n_labeled)
        taus = self._spectral_taus(graph, few)
        if gamma is not None:
            gammas = (gamma,)
        elif relative and not loss.closed_form:
            gammas = self._newton_gammas(few)
        else:
            gammas = DEFAULT_GAMMAS
        # Newton losses, warm refit: the grid starts from the last fit's coefficients,
        # and the fit that follows from the chosen point's MAP (_fit_model takes it).
        grid_start = self._grid_start(warm, model, loss)
        tau, gamma, _, start = self._spectral_grid(
            {} if grids is None else grids, loss, graph, labeled_nodes, codes, n_classes,
            taus if tau is None else (tau,), gammas, graph.n_nodes if relative else None,
            grid_start, weights,
        )  # fmt: skip
        self._auto_choice = (n_labeled, tau, gamma)
        return tau, gamma, None if not (warm and model == "spectral") else start

    def _resolved_loss_model(self, n_nodes, n_labeled):
        """The loss and model of this fit: ``loss`` and ``model``, "auto" resolved.

        ``model="auto"``: ``"sum"`` once ``n_labeled`` reaches
        :data:`~skmcal.classifier.AUTO_SUM_MIN_LABELS`,
        with ``gr``/``mgr`` (or ``loss="auto"``) on at most
        :data:`~skmcal.classifier.AUTO_SUM_MAX_NODES` nodes; ``"spectral"`` otherwise.
        ``loss="auto"``: ``"mgr"`` with the full and summed models, ``"ce"``
        with the spectral and Poisson ones.
        """
        model = self.model
        if model == "auto":
            gaussian = self.loss == "auto" or LOSSES[self.loss].closed_form
            enough = n_labeled >= AUTO_SUM_MIN_LABELS
            summed = gaussian and enough and n_nodes <= AUTO_SUM_MAX_NODES
            model = "sum" if summed else "spectral"
        return auto_loss(model) if self.loss == "auto" else self.loss, model

    def _few_labels(self, model, n_labeled):
        """Whether this fit is in the spectral phase of ``model="auto"`` (``model`` the
        resolved one; fewer labels than :data:`~skmcal.classifier.AUTO_SUM_MIN_LABELS`),
        where ``"auto"`` searches :data:`~skmcal.classifier.AUTO_FEW_LABELS_GAMMAS` and
        the taus of :data:`~skmcal.classifier.AUTO_FEW_LABELS_MAX_SHARE`."""
        return self.model == "auto" and model == "spectral" and n_labeled < AUTO_SUM_MIN_LABELS

    @staticmethod
    def _spectral_taus(graph, few=False):
        """:data:`~skmcal.evidence.DEFAULT_TAUS` with ``tau^2`` at most the median kept eigenvalue;
        ``few`` (``_few_labels()``): of those, the ones of
        :data:`~skmcal.classifier.AUTO_FEW_LABELS_MAX_SHARE` (the largest where none is).

        tau^2 above most kept eigenvalues flattens the prior over them (the
        smoothness is gone); with few labels the evidence can prefer it all
        the same (two moons, 6 labels, mgr: tau=1 and 65% accuracy).
        """
        cap = np.median(graph.eigenvalues)
        taus = [t for t in DEFAULT_TAUS if t**2 <= cap] or list(DEFAULT_TAUS[:1])
        if few:
            share = AUTO_FEW_LABELS_MAX_SHARE
            taus = [t for t in taus if constant_share(graph.eigenvalues, t) <= share] or [max(taus)]
        return taus

    @staticmethod
    def _newton_gammas(few=False):
        """The relative gammas of ``gamma="auto"`` for the Newton losses and of the kernel's
        choice: :data:`~skmcal.evidence.LAPLACE_GAMMAS`; ``few`` (``_few_labels()``):
        :data:`~skmcal.classifier.AUTO_FEW_LABELS_GAMMAS`."""
        return AUTO_FEW_LABELS_GAMMAS if few else LAPLACE_GAMMAS

    def _cached_graph(self, nodes, params):
        """The graph of ``params`` over ``nodes`` from the graph cache (built there if new),
        with this estimator's ``memory``, ``verbose`` and ``cache``."""
        return GRAPH_CACHE.get_or_build(
            nodes, params, memory=self.memory, verbose=self.verbose, keep=self.cache
        )

    def _chooses_kernel(self, n_nodes):
        """Whether this fit chooses its kernel: ``kernel="auto"``, exact neighbours (a
        ``neighbors`` estimator has its own metric) and at most
        :data:`~skmcal.classifier.AUTO_KERNEL_MAX_NODES` nodes."""
        return self.kernel == "auto" and self.neighbors is None and n_nodes <= AUTO_KERNEL_MAX_NODES

    def _weighs_scale(self, n_nodes, model):
        """Whether this fit weighs the narrower Gaussian graph (``_narrow_graph()``):
        ``kernel="auto"``, exact neighbours, the summed model and at most
        :data:`~skmcal.classifier.AUTO_SCALE_MAX_NODES` nodes."""
        return (
            self.kernel == "auto" and self.neighbors is None and model == "sum"
            and n_nodes <= AUTO_SCALE_MAX_NODES
        )  # fmt: skip

    def _grid_start(self, warm, model, loss):
        """The coefficients the spectral evidence grid of a fit starts from: the last
        fit's on a warm spectral refit of a Newton loss, else None (the prior mean)."""
        warm_newton = warm and model == "spectral" and not loss.closed_form
        return self.posterior_.coef if warm_newton else None

    def _spectral_grid(
        self, grids, loss, graph, labeled_nodes, codes, n_classes, taus, gammas, n_nodes, start,
        weights=None,
    ):  # fmt: skip
        """:func:`~skmcal.evidence.select_hyperparameters` (``return_coef=True``) of these
        labels (their ``weights``) on ``graph``, from ``start``; ``grids`` holds the ones
        this fit computed, so that the kernel's choice and the hyperparameters' share a
        grid they both need."""
        key = (
            id(graph), loss.name, tuple(taus), tuple(gammas), n_nodes, id(start),
            None if weights is None else weights.tobytes(),
        )  # fmt: skip
        if key not in grids:
            try:
                result = select_hyperparameters(
                    loss,
                    graph.eigenvalues,
                    graph.eigenvectors[labeled_nodes],
                    loss.encode(codes, n_classes),  # choices on unit targets (_encode)
                    taus,
                    gammas,
                    n_nodes=n_nodes,
                    coef_init=start,
                    n_threads=self._n_threads(),
                    return_coef=True,
                    weights=weights,
                )
            except ValueError as exc:
                if not isinstance(self.class_weight, dict) or weights is None:
                    raise
                raise ValueError(
                    f"{exc} class_weight={self.class_weight!r} weighs labels up to "
                    f"{weights.max():g}, and a label of weight w has the noise gamma^2 / w: "
                    f"try smaller weights."
                ) from exc
            grids[key] = (graph, start, result)  # the objects behind the ids stay alive
        return grids[key][2]

    def _kernel_score(
        self, graph, labeled_nodes, codes, n_classes, grids=None, start=None, few=False,
        weights=None,
    ):  # fmt: skip
        """How well the spectral ``ce`` model of ``graph`` predicts each label from the
        others: the balanced leave-one-out log-likelihood of the labels, ``sum_j
        log p_-j(y_j) / (n_classes n_{c_j})`` (``n_{c_j}`` the labels of ``j``'s class;
        ``p_-j`` the likelihood at :meth:`~skmcal.posterior.LaplacePosterior.loo_latent`),
        at the grid point of largest evidence over the grid of ``tau="auto"`` and
        ``gamma="auto"`` (the taus of ``_spectral_taus()`` and the gammas of
        ``_newton_gammas()``, ``few`` of ``_few_labels()`` passed to both); ``-inf``
        where every grid point failed. ``start``: the coefficients its Newton fits start
        from (those of the hyperparameters' grid that follows on this graph, which then
        reuses it through ``grids``); ``weights``: the labeled nodes' in the fit (None:
        unit weights)."""
        ce = LOSSES["ce"]
        try:
            tau, gamma, _, coef = self._spectral_grid(
                {} if grids is None else grids, ce, graph, labeled_nodes, codes,
                n_classes, self._spectral_taus(graph, few), self._newton_gammas(few),
                graph.n_nodes, start, weights,
            )  # fmt: skip
        except ValueError:
            return -np.inf
        targets = ce.encode(codes, n_classes)
        posterior = fit_posterior(
            ce, graph.eigenvalues + tau**2, graph.eigenvectors, labeled_nodes, targets, gamma,
            coef_init=coef, max_iter=self.max_iter, tol=self._newton_tol(),
            n_threads=self._n_threads(),
            weights=weights,
        )  # fmt: skip
        latent = posterior.loo_latent(labeled_nodes, targets, weights)
        balanced = 1.0 / (n_classes * np.bincount(codes, minlength=n_classes)[codes])
        return float(-np.sum(balanced * ce.value(latent, targets, gamma)))

    def _kernel_graph(self, nodes, kernel):
        """The graph of ``kernel`` over ``nodes`` with this estimator's other graph
        parameters, from the graph cache (a clipped ``n_neighbors`` is not warned of
        again)."""
        with warnings.catch_warnings():  # clipped n_neighbors: warned for the first graph
            warnings.simplefilter("ignore")
            params = self._graph_params(nodes.n_nodes, kernel)
        return self._cached_graph(nodes, params)

    def _candidate_graphs(self, nodes, graph):
        """``(graphs, caught)``: the graphs ``kernel="auto"`` chooses from, by kernel,
        ``graph`` (one of them, already built) first, then those of the other kernels of
        :data:`AUTO_KERNELS` that have no isolated node (a node of no positive
        affinity: a zero row under the cosine kernel); ``caught``, the warnings of
        each built graph's construction, by kernel."""
        graphs, caught = {graph.params.kernel: graph}, {}
        for kernel in AUTO_KERNELS:
            if kernel in graphs:
                continue
            with warnings.catch_warnings(record=True) as caught[kernel]:
                warnings.simplefilter("always")
                other = self._kernel_graph(nodes, kernel)
            if other.degrees.min() > 0:  # no isolated node
                graphs[kernel] = other
        return graphs, caught

    def _choose_kernel(
        self, nodes, graph, labeled_nodes, codes, n_classes, level, grids, start_on, few,
        weights=None,
    ):  # fmt: skip
        """The graph of the kernel of :data:`AUTO_KERNELS` whose spectral ``ce`` model
        predicts the labels best, each from the others (``_kernel_score()``: the
        balanced leave-one-out log-likelihood at the grid point of largest evidence,
        with ``few`` of ``_few_labels()`` and the labeled nodes' ``weights``); ``graph``
        is the first kernel's.

        The ``ce`` model decides whatever the loss (a classification likelihood; the
        Gaussian evidence of ``mgr`` picked the wrong graph on Samson at 50 labels).
        The evidence itself, which chose before, compares the graphs' priors at the
        labels, and with few labels it is nearly flat: on Satellite it took the
        cosine graph, 12 to 18 points less accurate there, at some states of 25 to
        45 labels, and the model fell 19 points in one batch; each label predicted
        from the others measures what the choice is for. The balance (each class's
        labels weigh alike) keeps the class queried most from deciding. A graph with
        a node of no positive affinity (a zero row under the cosine kernel) is not a
        candidate; the warnings of a candidate's construction are shown only if it is
        chosen. A warm refit keeps the last choice while the number of labels has
        grown by less than :data:`AUTO_REUSE_GROWTH` since it was made, as
        ``tau="auto"`` does with the Newton losses: the choice moves slowly, and each
        change of graph starts the model afresh. When it chooses again, it keeps the
        last kernel unless another's score beats it by :data:`AUTO_KERNEL_MARGIN`
        (a cold fit takes the largest score).
        """
        key = (graph.params.key(nodes.digest), n_classes)
        last = getattr(self, "_kernel_choice", None)
        kept = last[2] if self.warm_start and last is not None and last[0] == key else None
        if kept is not None and labeled_nodes.size < AUTO_REUSE_GROWTH * last[1]:
            return graph if kept == graph.params.kernel else self._kernel_graph(nodes, kept)
        graphs, caught = self._candidate_graphs(nodes, graph)
        start = time.perf_counter()
        score = {
            kernel: self._kernel_score(
                g, labeled_nodes, codes, n_classes, grids, start_on(g), few, weights
            )
            for kernel, g in graphs.items()
        }
        chosen = max(score, key=lambda kernel: score[kernel])  # ties: the first
        if kept in score and score[chosen] < score[kept] + AUTO_KERNEL_MARGIN:
            chosen = kept  # a warm re-choice: another kernel must win by the margin
        logger.log(
            level, "Kernel by the leave-one-out predictions of %d labels: %s (balanced "
            "log-likelihood %s): %.2f s.",
            labeled_nodes.size, chosen,
            ", ".join(f"{kernel} {value:.3f}" for kernel, value in score.items()),
            time.perf_counter() - start,
        )  # fmt: skip
        self._kernel_choice = (key, labeled_nodes.size, chosen)
        for caught_warning in caught.get(chosen, ()):  # those of the graph in use
            warnings.warn_explicit(
                caught_warning.message, caught_warning.category,
                caught_warning.filename, caught_warning.lineno,
            )  # fmt: skip
        return graphs[chosen]

    def _newton_tol(self):
        """The tolerance of the spectral Newton fits: ``tol`` resolved. With ``gr`` /
        ``mgr`` a given ``tol`` is the sparse solves' (their spectral fits take no Newton
        step), so the Newton fits made for them (``kernel="auto"``'s ``ce`` models)
        keep :data:`AUTO_NEWTON_TOL`."""
        if self.tol == "auto" or self.loss in ("gr", "mgr"):
            return AUTO_NEWTON_TOL
        return self.tol

    def _solve_tol(self):
        """The sparse solves' tolerance (full-graph and summed models): ``tol`` resolved."""
        return AUTO_SOLVE_TOL if self.tol == "auto" else self.tol

    def _n_threads(self):
        """Scoring threads of the posterior: ``n_jobs`` resolved, None where not given."""
        return n_jobs_threads(self.n_jobs)

    def _resolve_nodes(self, X):
        """The node set and the node index of every row of ``X``."""
        if self.nodes is None:
            nodes = node_set(X)
            return nodes, np.arange(X.shape[0])
        nodes = node_set(self.nodes)
        if nodes.n_features != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, but the nodes have {nodes.n_features}.")
        index = nodes.lookup(X, distinct=True)
        missing = np.flatnonzero(index < 0)
        if missing.size:
            raise ValueError(
                f"{missing.size} row(s) of X are not nodes of `nodes` (first: row "
                f"{missing[0]}). With nodes= given, fit takes rows of the node set "
                f"only; pass nodes=None to build the graph on X itself."
                + dtype_hint(X, nodes)
            )
        return nodes, index

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the model on the graph of the nodes, labels from ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The nodes (``nodes=None``) or rows of the node set to label.
        y : array-like of shape (n_samples,)
            Labels; ``missing_label`` (default -1) marks an unlabeled row. At
            least two classes must be labeled; binary losses take exactly two.

        Returns
        -------
        self : SpectralGraphClassifier
            The fitted estimator.
        """
        X = validate_data(self, X, accept_sparse="csr", dtype=list(NODE_DTYPES))
        check_memory(self.memory)  # a bad folder is named here, not at a later cache miss
        n_jobs_threads(self.n_jobs)  # n_jobs=0 named here
        # "auto" is checked as mgr here (the range of float64) and again once resolved.
        _check_tau_gamma("mgr" if self.loss == "auto" else self.loss, *self._tau_gamma())
        # y may hold NaN or None as its unlabeled marker: checked here, not by validate_data.
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        labeled = ~unlabeled_mask(y, self.missing_label)
        for value, name in ((np.nan, "np.nan"), (None, "None")):
            if unlabeled_mask(y[labeled], value).any():
                raise ValueError(
                    f"y contains {name} among its labels, but missing_label="
                    f"{self.missing_label!r} marks the unlabeled rows; pass "
                    f"missing_label={name} if {name} marks them."
                )
        labels = _plain_labels(y[labeled])
        if labels.dtype.kind == "f" and not np.isfinite(labels).all():
            raise ValueError("Input y contains infinity among its labels.")
        with warnings.catch_warnings():
            # scikit-learn suspects a regression target where over half the labeled
            # rows hold distinct classes: a few labels of many classes, here by design
            warnings.filterwarnings("ignore", "The number of unique classes is greater")
            check_classification_targets(labels)
        _check_model_loss(self.model, self.loss)
        marker = f"the unlabeled marker missing_label={self.missing_label!r}"
        if not labeled.any():
            raise ValueError(
                f"No labeled row: every entry of y is {self.missing_label!r}, the unlabeled "
                "marker (missing_label). "
                "Label at least one row of each of two classes."
            )
        classes = np.unique(labels)
        if self.missing_label is not None and not _is_nan(self.missing_label):
            # the marker as another type (text '-1' against the number -1): no row is
            # marked, and the unlabeled rows would be a class of their own
            same = [c for c in classes.tolist() if str(c) == str(self.missing_label)]
            if same:
                raise ValueError(
                    f"y holds {same[0]!r} ({int(np.sum(labels == same[0]))} rows), and "
                    f"{marker} is of type {type(self.missing_label).__name__}: they read "
                    f"alike but are not equal, so those rows would be a class of their own. "
                    f"Pass missing_label={same[0]!r} if they are the unlabeled rows."
                )
        if classes.size < 2:
            n_marked = int(labeled.size - labeled.sum())
            hint = (
                f" {n_marked} row(s) equal to {marker} are unlabeled; if "
                f"{self.missing_label!r} is a class label (classes -1 and +1), mark the "
                f"unlabeled rows with another value and pass it as missing_label (for "
                f"instance missing_label=np.nan or None)."
                if n_marked
                else ""
            )
            raise ValueError(
                f"The labeled rows hold one class only ({classes.tolist()[0]!r}); "
                f"a classifier needs labels of at least two classes.{hint}"
            )
        if self.loss != "auto" and not LOSSES[self.loss].multiclass and classes.size > 2:
            raise ValueError(
                f"Only binary classification is supported by loss={self.loss!r}, but "
                f"y has {classes.size} classes {classes.tolist()}; use loss='mgr' or "
                f"loss='ce' for multiclass data."
            )
        level, start = phase_level(self.verbose), time.perf_counter()
        nodes, node_index = self._resolve_nodes(X)
        logger.log(
            level, "Nodes (%d x %d %s) and the %d rows of X among them: %.2f s.",
            *nodes.data.shape, nodes.data.dtype, X.shape[0], time.perf_counter() - start,
        )  # fmt: skip
        labeled_nodes, codes = self._distinct_labels(
            node_index, labeled, np.searchsorted(classes, labels), classes, nodes
        )
        loss_name, model = self._resolved_loss_model(nodes.n_nodes, labeled_nodes.size)
        if loss_name != self.loss:
            _check_tau_gamma(loss_name, *self._tau_gamma())
        loss = LOSSES[loss_name]
        class_weight = self._class_weights(model, classes, codes)
        weights = None if np.all(class_weight == 1.0) else class_weight[codes]
        target_scale = self._target_scales(model, loss, classes, codes)
        self._free_offset(model, loss)  # offset="free" with another model: a ValueError
        # every target this fit encodes (grids, kernel choice, fit, look-aheads) is scaled
        self._fit_scale = None if np.all(target_scale == 1.0) else target_scale
        graph = self._cached_graph(nodes, self._graph_params(nodes.n_nodes))

        def signature_on(g):  # warm start only where the previous fit used this graph content
            return (
                g.params.key(nodes.digest), model, loss_name, tuple(classes.tolist()),
                self.tau, self.gamma, self.offset,
            )  # fmt: skip

        def grid_start_on(g):  # the start of tau/gamma's grid on g where it is the kernel's
            if (loss_name, self.tau, self.gamma) != ("ce", "auto", "auto"):
                return None
            warm_on = self.warm_start and getattr(self, "_fit_signature", None) == signature_on(g)
            return self._grid_start(warm_on, model, loss)

        grids = {}  # grids of this fit, shared by the kernel's choice and tau/gamma's
        chooses = self._chooses_kernel(nodes.n_nodes)
        if chooses:
            graph = self._choose_kernel(
                nodes, graph, labeled_nodes, codes, classes.size, level, grids, grid_start_on,
                self._few_labels(model, labeled_nodes.size), weights,
            )  # fmt: skip
        weighs = self._weighs_scale(nodes.n_nodes, model)
        narrow = self._narrow_graph(nodes, graph) if weighs else None
        candidates = [graph] if narrow is None else [graph, narrow]
        warm = self.warm_start and getattr(self, "_fit_signature", None) in [
            signature_on(g) for g in candidates
        ]
        start = time.perf_counter()
        # The full-graph models share the graph's sparse solver (its cached Green's
        # columns and preconditioners) with every fit on the graph: one at a time.
        # Their solves split rows over n_jobs threads (the fits before are spectral).
        with ExitStack() as locks:
            if model != "spectral":
                for g in candidates:  # always in this order: the incumbent, then the narrow
                    locks.enter_context(_graph_solver(g).lock)
                locks.enter_context(solver_threads(self._n_threads()))
            if model == "sum":
                posterior, tau, gamma, graph = self._fit_sum(
                    loss, candidates, labeled_nodes, codes, classes.size, warm, level, weights
                )
            else:
                tau, gamma, grid_map = self._select_hyperparameters(
                    model, loss, graph, labeled_nodes, codes, classes.size, warm, grids,
                    weights,
                )  # fmt: skip
                posterior = self._fit_model(
                    model, loss, graph, labeled_nodes, codes, classes.size, tau, gamma,
                    self.posterior_ if warm else None, grid_map, weights,
                )  # fmt: skip
        signature = signature_on(graph)
        logger.log(
            level, "Model fit (%s, loss=%s, %d labeled nodes): %d iterations, %.2f s.",
            model, loss_name, labeled_nodes.size, posterior.n_iter,
            time.perf_counter() - start,
        )  # fmt: skip

        self.classes_ = classes
        self.class_weight_ = class_weight
        self.target_scale_ = target_scale
        self.model_ = model
        self.kernel_ = graph.params.kernel
        self.loss_ = loss_name
        if model != "sum":  # from an earlier fit of the summed model
            self.__dict__.pop("sum_prior_", None)
        self.graph_ = graph
        self.node_set_ = nodes
        self.eigenvalues_ = graph.eigenvalues
        self.eigenvectors_ = graph.eigenvectors
        self.labeled_nodes_ = labeled_nodes
        if self._fit_scale is not None:
            posterior = replace(posterior, target_scale=self._fit_scale)
        self.posterior_ = posterior
        if posterior.base is None:
            self.coef_ = posterior.coef
        else:
            with small_algebra():  # thin (M x N times N x k): see _threads
                self.coef_ = graph.eigenvectors.T @ posterior.base
        self.tau_ = tau
        self.gamma_ = gamma
        self.n_iter_ = posterior.n_iter
        self._fit_signature = signature
        self._node_source = graph.point_sources(labeled_nodes)
        self._note_unlabeled_components(codes)
        return self

    def _class_weights(self, model, classes, codes):
        """``class_weight_`` of this fit: the weight of each class's labels under
        ``class_weight`` ("auto" resolved for ``model``, the resolved model), from
        ``codes``, the class code of each distinct labeled node."""
        class_weight = self.class_weight
        if class_weight is not None and class_weight != "auto" and self.model not in WEIGHTED:
            raise ValueError(
                f"class_weight={class_weight!r} takes the models {list(WEIGHTED)}; "
                f"model={self.model!r} fits every label at weight 1. Use class_weight='auto' "
                f"or None, or one of those models."
            )
        if class_weight == "auto":
            class_weight = "balanced" if self._few_labels(model, codes.size) else None
        if class_weight is None:
            return np.ones(classes.size)
        if class_weight == "balanced":
            return codes.size / (classes.size * np.bincount(codes, minlength=classes.size))
        weights = np.array([class_weight.get(c, 1.0) for c in classes.tolist()], dtype=float)
        bad = np.flatnonzero(~(np.isfinite(weights) & (weights > 0)))
        if bad.size:
            c = classes.tolist()[bad[0]]
            raise ValueError(
                f"class_weight must map classes to positive finite weights; got "
                f"{class_weight.get(c)!r} for class {c!r}."
            )
        return weights

    def _target_scales(self, model, loss, classes, codes):
        """``target_scale_`` of this fit: the scale of each class's targets under
        ``target_scale`` for ``model`` and ``loss`` (the resolved ones; ones where the
        fit is not Gaussian), from ``codes``, the class code of each distinct labeled
        node."""
        target_scale = self.target_scale
        gaussian = LOSSES[self.loss].closed_form if self.loss != "auto" else self.model != "poisson"
        if target_scale not in (None, "auto") and not gaussian:
            raise ValueError(
                f"target_scale={target_scale!r} takes the Gaussian losses 'gr' and 'mgr' "
                f"(or loss='auto' where it fits mgr: not with model='poisson', where it "
                f"fits ce); got loss={self.loss!r} and model={self.model!r}. Use "
                f"target_scale='auto' or None, or loss='mgr'."
            )
        if target_scale == "auto":
            target_scale = AUTO_TARGET_SCALE if model == "sum" else None
        if not loss.closed_form:  # loss="auto"'s ce phase
            target_scale = None
        return target_scales(codes, classes.size, TARGET_SCALE_POWERS[target_scale])

    def _free_offset(self, model, loss):
        """Whether this fit (``model`` and ``loss`` resolved) fits the class offset
        apart and leaves it out of the latent values (``offset``)."""
        if self.offset == "free" and (
            self.model != "full" or (self.loss != "auto" and not LOSSES[self.loss].closed_form)
        ):
            raise ValueError(
                f"offset='free' takes model='full' with the Gaussian losses 'gr' and 'mgr' "
                f"(or loss='auto', where it fits mgr); got model={self.model!r} and "
                f"loss={self.loss!r}. Use offset='auto' or None, or model='full'."
            )
        return self.offset is not None and model == "full" and loss.closed_form

    def _encode(self, loss, codes, n_classes):
        """The targets the model fits to the labels' class ``codes``, scaled as this
        fit's ``target_scale_`` (:meth:`_target_scales`). The choices of a fit (graph,
        kernel, scale, hyperparameters) are made on targets of one (``loss.encode``)."""
        return loss.encode(codes, n_classes, self._fit_scale)

    def _distinct_labels(self, node_index, labeled, codes, classes, nodes):
        """One label per node: rows of ``X`` on one node count once, and must agree.

        With ``nodes=`` given, several labeled rows may stand for one node
        (a row taught twice). They count once; different labels for one node
        raise a ``ValueError`` naming the rows. A fit on the same node set
        that labels none of the previous fit's nodes warns: ``fit`` does not
        add labels (modAL's ``teach(..., only_new=True)`` refits on the new
        rows alone).
        """
        rows = np.flatnonzero(labeled)
        labeled_nodes = node_index[rows]
        unique, first, inverse = np.unique(labeled_nodes, return_index=True, return_inverse=True)
        if unique.size < labeled_nodes.size:
            clash = np.flatnonzero(codes != codes[first][inverse])
            if clash.size:
                node = labeled_nodes[clash[0]]
                on_node = rows[labeled_nodes == node]
                raise ValueError(
                    f"Rows {on_node.tolist()} of X are one node ({node}) but carry different "
                    f"labels {classes[codes[labeled_nodes == node]].tolist()}; a node takes "
                    f"one label. Keep one of these rows (or relabel it everywhere)."
                )
            keep = np.sort(first)
            labeled_nodes, codes = labeled_nodes[keep], codes[keep]
        previous = getattr(self, "labeled_nodes_", None)
        if (
            self.nodes is not None
            and previous is not None
            and getattr(getattr(self, "node_set_", None), "digest", None) == nodes.digest
            and not np.isin(previous, labeled_nodes).any()
        ):
            warn_user(
                f"This fit labels none of the {np.unique(previous).size} nodes labeled by the "
                f"previous fit on the same nodes: fit starts afresh from the labels given, "
                f"it does not add them to earlier ones (modAL's teach(..., only_new=True) "
                f"drops every earlier label; use teach(X, y) to add labels).",
                UserWarning,
            )
        return labeled_nodes, codes

    def _fit_model(
        self, model, loss, graph, labeled_nodes, codes, n_classes, tau, gamma, previous,
        start=None, weights=None,
    ):  # fmt: skip
        """The posterior of ``model``, warm-started from ``start`` (coefficients: the
        evidence grid's MAP at ``(tau, gamma)``) or else from ``previous`` if given;
        ``weights``: the labeled nodes' (the spectral model; None: unit weights)."""
        targets = self._encode(loss, codes, n_classes)
        prior = graph.eigenvalues + tau**2
        n_threads = self._n_threads()
        free_offset = self._free_offset(model, loss)
        if model == "spectral":
            return fit_posterior(
                loss, prior, graph.eigenvectors, labeled_nodes, targets, gamma,
                coef_init=start if start is not None or previous is None else previous.coef,
                max_iter=self.max_iter, tol=self._newton_tol(), n_threads=n_threads,
                weights=weights,
            )  # fmt: skip
        if model == "poisson":
            # The scores of Poisson learning without its prior correction (priors equal
            # to the labels' shares: a factor of one), then each class's scaled as its
            # targets (target_scale): "balanced" is the paper's correction with uniform
            # priors, None (the default) graphlearning's scores.
            shares = np.bincount(codes, minlength=n_classes) / codes.size
            latent = poisson_learning(
                graph.weights, labeled_nodes, codes, n_classes, class_priors=shares
            )
            if self._fit_scale is not None:
                latent = latent * self._fit_scale
            if not loss.multiclass:  # binary: the difference of the two class scores
                latent = latent[:, 1] - latent[:, 0]
            # in the targets' units, where the strategies' look-ahead fits them
            latent = latent * target_units(latent, labeled_nodes, targets)
            n_iter, converged = 0, True
        else:
            solution = fit_full_graph(
                loss, graph.weights, labeled_nodes, targets, tau, gamma,
                init=None if previous is None else previous.base,
                tol=self._solve_tol(), max_iter=self.max_iter, free_offset=free_offset,
            )  # fmt: skip
            latent, n_iter, converged = solution.latent, solution.n_iter, solution.converged
        offset, nugget = None, 0.0
        if free_offset:  # the offset fit_full_graph removed
            offset = (
                offset_direction(graph.weights, np.arange(graph.n_nodes)),
                class_offset(graph.weights, labeled_nodes, targets),
            )
        if model == "full" and loss.closed_form:
            nugget = remainder_variance(
                graph.eigenvalues, graph.weights, tau, trace=graph.laplacian_trace
            )
        return posterior_around(
            loss, prior, graph.eigenvectors, labeled_nodes, targets, gamma, latent,
            n_threads=n_threads, n_iter=n_iter, converged=converged, offset=offset,
            nugget=nugget,
        )  # fmt: skip

    def _sum_grids(self, graph):
        """The grids of ``model="sum"``: ``(taus_s, taus_f, gammas)``, a given value alone."""
        tau, gamma = self._tau_gamma()
        taus_s = self._spectral_taus(graph)
        return (
            taus_s if tau is None else [tau],
            list(SUM_FULL_TAUS) if tau is None else [tau],
            SUM_GAMMAS if gamma is None else (gamma,),
        )

    def _fit_sum(
        self, loss, candidates, labeled_nodes, codes, n_classes, warm, level, weights=None
    ):
        """``model="sum"``: hyperparameters by the leave-one-out density, the posterior
        mean, and the spectral Laplace covariance around it (with the prior's remainder
        as white noise); returns ``(posterior, tau_, gamma_, graph)``.

        ``candidates``: the graph of the kernel in use, and with ``kernel="auto"``
        possibly the Gaussian graph of narrower scale (``_narrow_graph()``); the
        graph fitted is chosen among them at each search of the grid
        (``_choose_scale()``), and kept with the grid's choice on warm refits.

        The grid (:data:`~skmcal.evidence.DEFAULT_TAUS` capped as for the
        spectral model, :data:`~skmcal.evidence.SUM_FULL_TAUS`,
        :data:`~skmcal.evidence.SUM_EPSILONS`, :data:`~skmcal.evidence.SUM_GAMMAS`;
        a given ``tau`` is both taus, a given ``gamma`` the relative noise) is
        searched at every cold fit and, on warm refits, once the labels have
        grown by ``AUTO_REUSE_GROWTH`` since the last search (eps alone is
        searched at every fit when ``tau`` and ``gamma`` are both given). The
        full-graph taus whose Green's columns would not fit in
        :data:`skmcal.fullgraph.MAX_GREEN_BYTES` together give way to one: the
        last choice (a cold fit: the grid's middle value), whose columns are
        kept whatever their size (``8 N n_labeled`` bytes; 280 MB at 70,000
        nodes and 500 labels). ``weights``: the labels' (``class_weight``), each
        label's noise ``gamma^2 / w``; None: unit weights.
        """
        n_labeled = labeled_nodes.size
        given = self.tau != "auto" and self.gamma != "auto"
        last = getattr(self, "_auto_choice", None) if warm and not given else None
        kept = [g for g in candidates if last is not None and g.params == last[2]]
        if kept and n_labeled < AUTO_REUSE_GROWTH * last[0]:
            graph, (tau_s, tau_f, eps, g) = kept[0], last[1]
        else:
            scored, scored_codes, scored_weights = labeled_nodes, codes, weights
            if labeled_nodes.size > SUM_SEARCH_MAX_LABELS:  # one subset for every graph
                keep = _search_subset(labeled_nodes, codes, SUM_SEARCH_MAX_LABELS)
                scored, scored_codes = labeled_nodes[keep], codes[keep]
                scored_weights = None if weights is None else weights[keep]
            unit = loss.encode(scored_codes, n_classes)  # choices on targets of one (_encode)
            searches = [
                self._sum_search(
                    graph, scored, scored_codes, unit, last, len(candidates) > 1, scored_weights
                )
                for graph in candidates
            ]
            chosen = self._choose_scale(candidates, searches, level)
            graph, (tau_s, tau_f, eps, g) = candidates[chosen], searches[chosen][0]
            self._auto_choice = (n_labeled, (tau_s, tau_f, eps, g), graph.params)
        rest = 1.0 - constant_share(graph.eigenvalues, tau_s)
        if self.tau != "auto" and rest < SUM_MIN_STRUCTURE:
            warn_user(
                f"tau={self.tau!r} puts all but {rest:.1e} of the summed prior's "
                f"spectral variance on one value for every node (the graph's constant "
                f"eigenvector); with each part scaled to unit variance and the noise "
                f"relative to it, the fit predicts the class most labeled nearly "
                f"everywhere. Use tau='auto', a tau of at least 1e-4 or so, or "
                f"model='full' (offset=None with small tau and gamma is Laplace "
                f"learning).",
                UserWarning,
            )
        solver = _graph_solver(graph)
        targets = self._encode(loss, codes, n_classes)
        fit = fit_sum_graph(
            graph.eigenvalues, graph.eigenvectors, graph.weights, labeled_nodes, targets,
            tau_s, tau_f, eps, g, tol=self._solve_tol(), solver=solver, label_weights=weights,
        )  # fmt: skip
        self.sum_prior_ = {
            "tau_s": tau_s, "tau_f": tau_f, "eps": eps, "gamma": g,
            "amplitude": fit.amplitude,
            "spectral_scale": fit.spectral_scale, "full_scale": fit.full_scale,
        }  # fmt: skip
        # In units of a c_s (which no query strategy sees), the prior's projection on the
        # eigenvectors is Lambda_s^-1 + r Lambda_f^-1 (r = eps c_f / c_s), its remainder
        # r (L + tau_f^2 I)^-1's, and the noise gamma^2 = g^2 / c_s.
        gamma = g / np.sqrt(fit.spectral_scale)
        ratio = eps * fit.full_scale / fit.spectral_scale
        lam = graph.eigenvalues
        prior = 1.0 / (1.0 / (lam + tau_s**2) + ratio / (lam + tau_f**2))
        nugget = ratio * remainder_variance(
            lam, graph.weights, tau_f, trace=graph.laplacian_trace
        )
        posterior = posterior_around(
            loss, prior, graph.eigenvectors, labeled_nodes, targets, gamma, fit.latent,
            n_threads=self._n_threads(), n_iter=0, converged=fit.converged, nugget=nugget,
            weights=weights,
        )  # fmt: skip
        return posterior, tau_s, float(gamma), graph

    def _sum_search(self, graph, labeled_nodes, codes, targets, last, compare, weights=None):
        """The summed model's grid search on ``graph``: ``((tau_s, tau_f, eps, gamma),
        correct)``, ``correct`` (with ``compare``, else None) whether each label's
        leave-one-out mean (:func:`~skmcal.evidence.sum_loo_means`) at the chosen
        point predicts its class. ``last``: the previous choice (its ``tau_f`` stands
        in for the full-graph grid where the Green's columns would not fit). ``weights``:
        the labels' (None: one each); the search runs on the blocks and targets scaled
        by their square roots (``sqrt(w_i w_j) K_ij``, ``sqrt(w_i) y_i``: unit noise
        there is noise ``gamma^2 / w_i`` here, the criterion shifted by a constant), and
        the leave-one-out means, scaled alike, predict the same classes. ``_fit_sum``
        passes, beyond :data:`SUM_SEARCH_MAX_LABELS` labels, those of
        ``_search_subset()``."""
        solver = _graph_solver(graph)
        taus_s, taus_f, gammas = self._sum_grids(graph)
        if not solver.greens_fit(len(taus_f), np.unique(labeled_nodes).size):
            taus_f = [last[1][1] if last is not None else taus_f[len(taus_f) // 2]]
        spectral = [spectral_block(graph.eigenvalues, graph.eigenvectors, labeled_nodes, t)
                    for t in taus_s]  # fmt: skip
        full = [green_block(graph.weights, labeled_nodes, t, tol=self._solve_tol(), solver=solver)
                for t in taus_f]  # fmt: skip
        spectral = [unit_scale(K) * K for K in spectral]
        full = [unit_scale(K) * K for K in full]
        if weights is not None:
            root = np.sqrt(weights)
            scale = np.outer(root, root)
            spectral = [scale * K for K in spectral]
            full = [scale * K for K in full]
            targets = targets * (root[:, None] if targets.ndim == 2 else root)
        i, j, eps, g, _, _ = select_sum_hyperparameters(
            spectral, full, targets, SUM_EPSILONS, gammas, criterion="loo",
            margin=SUM_CLASS_MARGIN,
        )  # fmt: skip
        correct = None
        if compare:
            means = sum_loo_means(spectral[i], full[j], targets, eps, g)
            guess = np.argmax(means, axis=1) if means.shape[1] > 1 else (means[:, 0] > 0)
            correct = guess == codes
        return (float(taus_s[i]), float(taus_f[j]), eps, g), correct

    def _narrow_graph(self, nodes, graph):
        """The Gaussian graph of :data:`~skmcal.classifier.AUTO_NARROW_SCALE` that
        ``kernel="auto"`` weighs against ``graph`` in the summed model's phase; None
        where ``graph`` is not Gaussian, already has that scale, or its nodes hold
        too few distinct points for it (its scale neighbour would be clipped)."""
        scale_neighbor, scale_factor = AUTO_NARROW_SCALE
        if graph.params.kernel != "gaussian" or scale_neighbor >= graph.n_points:
            return None
        params = replace(graph.params, scale_neighbor=scale_neighbor, scale_factor=scale_factor)
        return None if params == graph.params else self._cached_graph(nodes, params)

    def _choose_scale(self, candidates, searches, level):
        """The index of the graph the summed model fits: the first (the kernel's), unless
        the second one's leave-one-out predictions of the labels are significantly
        better (:func:`~skmcal.classifier.significantly_better`)."""
        if len(candidates) == 1:
            return 0
        incumbent, challenger = searches[0][1], searches[1][1]
        chosen = int(significantly_better(challenger, incumbent))
        logger.log(
            level, "Graph scale by the labels' leave-one-out predictions: %d and %d of %d "
            "right (scale_factor %g and %g): scale_factor %g.",
            incumbent.sum(), challenger.sum(), incumbent.size,
            candidates[0].params.scale_factor, candidates[1].params.scale_factor,
            candidates[chosen].params.scale_factor,
        )  # fmt: skip
        return chosen

    # -------------------------------------------------------------- predict
    def _row_weights(self, X):
        """Weights of the rows of ``X`` over the nodes: a node's own row for
        rows equal to a node, :meth:`SpectralGraph.interpolation_weights` otherwise;
        each node's weight moved to the node whose values it reports (``_node_source``)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        index = self.node_set_.lookup(X)
        found = index >= 0
        n, n_nodes = X.shape[0], self.node_set_.n_nodes
        weights = sp.csr_matrix(
            (np.ones(int(found.sum())), (np.flatnonzero(found), index[found])),
            shape=(n, n_nodes),
        )
        if not found.all():
            rest = np.flatnonzero(~found)
            place = sp.csr_matrix((np.ones(rest.size), (rest, np.arange(rest.size))))
            place.resize(n, rest.size)
            weights = weights + place @ self.graph_.interpolation_weights(X[rest])
        weights = weights.tocsr()
        source = getattr(self, "_node_source", None)
        if source is not None:  # a point is reached through the node that reports its values
            weights = sp.csr_matrix(
                (weights.data, source[weights.indices], weights.indptr), shape=weights.shape
            )
            weights.sum_duplicates()
        return weights

    def _node_latent(self):
        """Latent values of the nodes; exactly 0 (the prior mean) where no label reaches."""
        U = self._point_values(self.posterior_.latent(slice(None)))
        if self._unreached is not None:
            U[self._unreached] = 0.0
        return U

    def _point_values(self, values):
        """Per-node ``values`` (rows: nodes), each copy of a point given its point's
        (:meth:`~skmcal.SpectralGraph.point_sources`); in place."""
        source = getattr(self, "_node_source", None)
        if source is not None:
            moved = np.flatnonzero(source != np.arange(source.size))
            values[moved] = values[source[moved]]
        return values

    def _latent_at(self, X):
        """Latent values at the rows of ``X`` (a weighted average of the nodes'),
        and which rows no label reaches."""
        weights = self._row_weights(X)
        U = weights @ self._node_latent()
        reached = weights @ self._reached_nodes()
        return U, reached <= 0

    def _reached_nodes(self):
        reached = np.ones(self.node_set_.n_nodes)
        if self._unreached is not None:
            reached[self._unreached] = 0.0
        return reached

    def _note_unlabeled_components(self, codes):
        """Find the nodes in components without a label, warn, fix their prediction."""
        self._fallback_class = int(np.argmax(np.bincount(codes, minlength=self.classes_.size)))
        components = self.graph_.component_labels
        has_label = np.zeros(self.graph_.n_components, dtype=bool)
        has_label[components[self.labeled_nodes_]] = True
        self._unreached = None
        if not has_label.all():  # a look at every node only when some component has no label
            unreached = ~has_label[components]
            self._unreached = unreached
            warn_user(
                f"{int(unreached.sum())} of {unreached.size} nodes lie in "
                f"{int((~has_label).sum())} connected component(s) of the graph without "
                f"any label. Nothing is learned there: they get the latent value 0 (equal "
                f"class probabilities) and the most frequent labeled class, "
                f"{self.classes_[self._fallback_class].tolist()!r}.",
                UserWarning,
            )

    def decision_function(self, X):
        """Latent values at the rows of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Binary losses: ``u``, positive for ``classes_[1]``. ``mgr``/``ce``
            with more than two classes: one column per class; with two
            classes, ``u[:, 1] - u[:, 0]`` (scikit-learn's binary convention).
        """
        U, _ = self._latent_at(X)
        if U.ndim == 2 and U.shape[1] == 2:
            return U[:, 1] - U[:, 0]
        return U

    def predict_proba(self, X):
        """Class probabilities: each class's likelihood at the MAP latent value.

        See the Notes of the class for the formula of each loss.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_``.
        """
        U, _ = self._latent_at(X)
        return self.posterior_.loss.proba(U, self.gamma_)

    def _labels_from_latent(self, U, unreached=None):
        codes = (U > 0).astype(np.intp) if U.ndim == 1 else np.argmax(U, axis=1)
        if unreached is not None:
            codes[unreached] = self._fallback_class
        return self.classes_[codes]

    def predict(self, X):
        """Predicted class of each row of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._labels_from_latent(*self._latent_at(X))

    @property
    def transduction_(self):
        """Predicted label of every node of the graph, shape (n_nodes,)."""
        check_is_fitted(self)
        return self._labels_from_latent(self._node_latent(), self._unreached)

    def score(self, X, y):
        """Accuracy on the labeled rows of ``(X, y)``; rows equal to ``missing_label`` are ignored.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        float
        """
        y = np.asarray(y)
        keep = ~unlabeled_mask(y, self.missing_label)
        if not keep.any():
            raise ValueError(f"score needs at least one labeled row (y != {self.missing_label!r}).")
        if not keep.all():
            X, y = _safe_indexing(X, np.flatnonzero(keep)), y[keep]
        return accuracy_score(_plain_labels(y), self.predict(X))

    # ------------------------------------------------------------ posterior
    def posterior_cov(self, X=None):
        """Laplace posterior covariance.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or None
            None: the covariance of the spectral coefficients ``coef_``.
            Otherwise: the covariance of the latent values at the rows of
            ``X`` (nodes exactly, other points through the weights over their
            nearest nodes: ``V_X = interpolation_weights(X) V``).

        Returns
        -------
        ndarray
            With ``X=None``: ``(M, M)`` for ``gr``, ``logistic``, ``probit``
            and ``mgr`` (whose classes share one covariance); for ``ce``,
            ``(M * n_classes, M * n_classes)`` in class-major order (index
            ``c * M + i`` is coefficient ``i`` of class ``c``).
            With ``X``: ``V_X C V_X'`` of shape ``(n, n)``; for ``ce``,
            ``(n * n_classes, n * n_classes)``, class-major (index ``c * n + r``
            is the latent value of class ``c`` at row ``r``). ``model="full"``
            and ``"sum"`` with ``gr``/``mgr`` add the prior's remainder outside
            the kept eigenvectors as white noise (``C`` is then the covariance
            of the coefficients of the rest; :mod:`skmcal.posterior`, "White-noise
            remainder").
        """
        check_is_fitted(self)
        if X is None:
            return self.posterior_.cov.copy()
        return self.posterior_.latent_cov(self._row_weights(X))
