"""Query strategies with modAL's contract.

Each strategy is a plain function::

    strategy(learner, X_pool, n_instances=1, **options) -> (indices, scores)

where ``learner`` is a modAL learner wrapping a fitted
:class:`~skmcal.SpectralGraphClassifier` (or the classifier itself),
``indices`` index rows of ``X_pool`` and ``scores`` are the acquisition values
of those rows (larger is better). ``X_pool`` is the whole node set (an array,
or the :class:`~skmcal.NodeSet` itself, which skips the row look-up) or any
subset of its rows; labeled nodes are never returned. Equal rows are
one point: a strategy scores the first of equal nodes only, never returns a
node equal to a labeled one, and never returns two equal rows in one batch
(of rows of ``X_pool`` on one node, the first stands for all).

modAL 0.4.2.1's ``teach()`` fails on scikit-learn >= 1.8 until
:func:`skmcal.patch_modal` is called once; importing this module patches
nothing.

Options
-------
candidates : None, float in (0, 1], int or array of row indices, default=None
    Which unlabeled rows of ``X_pool`` are scored: all of them (None), a
    random fraction of them (float; the paper uses 0.1), that many at random
    (int), or exactly these rows of ``X_pool`` (array; labeled ones dropped).
batch : {"greedy", "topk", "localmax"}, default="greedy"
    ``greedy``: pick the best, add it with its pseudo-label through the
    look-ahead update of the posterior, re-score, pick the next, and so on
    (the default: in ``benchmarks/bench_accuracy.py`` it kept every batch of
    5 from costing more than 5 points of accuracy, which top-k batches of
    model change and uncertainty did not). ``topk``: the ``n_instances``
    best candidates (the paper's batches; one scoring). ``localmax``
    (Chapman et al. 2023): the ``n_instances`` best candidates whose value is
    at least that of each of their kNN-graph neighbours among the
    candidates (one scoring, every value exact); if fewer qualify, the batch
    is filled with the best remaining candidates that are not neighbours of
    a chosen one, then with the best remaining (see :func:`~skmcal.query.local_max_batch`).
random_state : int, RandomState instance or None, default=None
    Draws the candidate subset and breaks ties.
"""

from __future__ import annotations

import textwrap
from contextlib import nullcontext
from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state

from . import acquisition, selection
from ._threads import small_algebra
from .selection import BATCH_MODES, local_max_batch

__all__ = [
    "BATCH_MODES",
    "local_max_batch",
    "model_change",
    "random_sampling",
    "sopt",
    "uncertainty",
    "vopt",
]

#: Acquisition functions that take ``top=`` (the posteriors screen candidates in float32).
_SCREENED = (acquisition.model_change, acquisition.vopt, acquisition.sopt)


# Parameter entries shared by the strategies' docstrings (one text for all:
# ``_shared_parameters()`` puts each where its docstring says ``{name}``).
_PARAMETERS = {
    "pool": """\
learner : modAL learner or SpectralGraphClassifier
    A fitted classifier, or a modAL learner wrapping one.
X_pool : array-like, sparse matrix or NodeSet
    Rows of the classifier's node set, or the node set itself (the fast
    path: no row look-up). Labeled nodes are never returned.
n_instances : int, default=1
    How many rows to return.""",
    "candidates": """\
candidates : None, float in (0, 1], int or array of int, default=None
    Which unlabeled rows of ``X_pool`` are scored: all of them (None); a
    random fraction of them (float; the paper scores 10%, 0.1); that many
    drawn at random (int); or exactly these row indices of ``X_pool``
    (array; labeled rows among them are dropped). A random subset never
    has fewer than ``n_instances`` rows.""",
    "batch": """\
batch : {"greedy", "topk", "localmax"}, default="greedy"
    How ``n_instances > 1`` rows are chosen. ``greedy``: the best
    candidate, then the posterior updated as if it were labeled with its
    pseudo-label (the look-ahead update), the candidates rescored, the
    next best, and so on; it spreads a batch out (see the module's
    Options for why it is the default). ``topk``: the ``n_instances``
    best-scored candidates (the paper's batches; one scoring, cheaper).
    ``localmax``: the best local maxima of the scores on the graph
    (:func:`~skmcal.query.local_max_batch`).""",
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Draws the random candidate subset and breaks ties between equal
    scores.""",
}


def _shared_parameters(function):
    """Fill the lines ``{name}`` of ``function``'s docstring with ``_PARAMETERS``."""
    doc = function.__doc__
    for name, text in _PARAMETERS.items():
        doc = doc.replace("    {" + name + "}\n", textwrap.indent(text, "    ") + "\n")
    function.__doc__ = doc
    return function


def _select(score_fn, learner, X_pool, n_instances, candidates, batch, random_state):
    """Shared body of every strategy: candidates, scores, top-k, greedy or LocalMax batch."""
    if not isinstance(n_instances, Integral) or n_instances < 1:
        raise ValueError(f"n_instances must be a positive int; got {n_instances!r}.")
    if batch not in BATCH_MODES:
        raise ValueError(f"batch must be one of {BATCH_MODES}; got {batch!r}.")
    clf = selection.fitted_classifier(learner)
    rng = check_random_state(random_state)
    pool_nodes = selection.pool_nodes(clf, X_pool)
    labeled = clf.node_set_.first_equal[clf.labeled_nodes_]
    posterior = clf.posterior_
    screened = score_fn in _SCREENED
    greedy = batch == "greedy" and n_instances > 1
    expected = 0  # candidates whose change bounds will be asked for: set up meanwhile
    if score_fn is acquisition.model_change and not greedy:
        expected = selection.expected_candidates(candidates, pool_nodes.size, labeled.size)
        expected = expected if expected > max(acquisition.PROBE, n_instances) else 0
    # small_algebra first, where a set-up starts: it runs inside it in the background
    with small_algebra() if expected else nullcontext(), posterior.change_bound_ahead(expected):
        rows = selection.candidate_rows(pool_nodes, labeled, candidates, n_instances, rng)
        if screened and greedy:
            posterior = posterior.prepare(pool_nodes[rows])
        score = score_fn
        if screened:
            # Only the best value of each greedy step, or the n_instances best, must be
            # exact; LocalMax compares every candidate with its neighbours: all exact.
            top = {"topk": n_instances, "greedy": 1, "localmax": None}[batch]
            top = top if n_instances > 1 else 1

            def score(posterior, nodes):
                return score_fn(posterior, nodes, top=top)

        return selection.choose(
            posterior, score, acquisition.look_ahead, pool_nodes, rows, n_instances,
            batch, rng, clf.graph_.weights,
        )  # fmt: skip


@_shared_parameters
def model_change(
    learner, X_pool, n_instances=1, *, candidates=None, batch="greedy", random_state=None
):
    """Model-change (MC) acquisition: the rows whose label would move the MAP most.

    For each candidate node ``k`` the score is the norm of the change of
    the MAP spectral coefficients ``coef_`` that labeling ``k`` with its
    pseudo-label (the class the current model predicts for it) would cause.
    It is computed without refitting, from the Laplace posterior: exactly
    for ``gr`` and ``mgr``, as one Newton step from the current MAP for
    ``logistic``, ``probit`` and ``ce`` (Miller & Bertozzi).

    Parameters
    ----------
    {pool}
    {candidates}
    {batch}
    {random_state}

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first.
    scores : ndarray of shape (n_instances,)
        Their acquisition values (the norm of the MAP change; exact float64).
    """
    return _select(
        acquisition.model_change, learner, X_pool, n_instances, candidates, batch, random_state
    )


@_shared_parameters
def vopt(learner, X_pool, n_instances=1, *, candidates=None, batch="greedy", random_state=None):
    """V-opt: the rows whose label most reduces the total posterior variance.

    The score of a candidate node is the decrease of ``trace(V C V')``, the
    summed posterior variance of the latent values of every node, that its
    label would bring: the update of the Laplace covariance ``C`` by the
    node's curvature (``1/gamma^2`` for ``gr`` and ``mgr``; the loss's
    curvature at the pseudo-label otherwise).

    Parameters
    ----------
    {pool}
    {candidates}
    {batch}
    {random_state}

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first.
    scores : ndarray of shape (n_instances,)
        Their acquisition values (variance reductions).
    """
    return _select(acquisition.vopt, learner, X_pool, n_instances, candidates, batch, random_state)


@_shared_parameters
def sopt(learner, X_pool, n_instances=1, *, candidates=None, batch="greedy", random_state=None):
    """Sigma-opt: the rows whose label most reduces the survey risk ``1' V C V' 1``.

    The score of a candidate node is the decrease of ``1' V C V' 1``, the
    posterior variance of the sum of the latent values (for ``ce``, summed
    over the classes), that its label would bring, through the same update
    of ``C`` as :func:`vopt`.

    Parameters
    ----------
    {pool}
    {candidates}
    {batch}
    {random_state}

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first.
    scores : ndarray of shape (n_instances,)
        Their acquisition values (survey-risk reductions).
    """
    return _select(acquisition.sopt, learner, X_pool, n_instances, candidates, batch, random_state)


@_shared_parameters
def uncertainty(
    learner,
    X_pool,
    n_instances=1,
    *,
    measure="margin",
    candidates=None,
    batch="greedy",
    random_state=None,
):
    """Uncertainty sampling: the rows the current model is least sure of.

    Scores every candidate by ``measure`` at the MAP latent values (no
    posterior covariance is used).

    Parameters
    ----------
    {pool}
    measure : {"margin", "entropy", "least_confident"}, default="margin"
        ``margin``: smallest gap between the two largest latent class values
        (binary: smallest ``|u|``); ``entropy``: largest entropy of the class
        probabilities (``predict_proba``); ``least_confident``: smallest
        largest class probability.
    {candidates}
    {batch}
    {random_state}

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first.
    scores : ndarray of shape (n_instances,)
        Their uncertainties: larger is more uncertain (for ``margin``,
        minus the margin).
    """
    if measure not in acquisition.UNCERTAINTY_MEASURES:
        raise ValueError(
            f"measure must be one of {acquisition.UNCERTAINTY_MEASURES}; got {measure!r}."
        )

    def score(posterior, nodes):
        return acquisition.uncertainty(posterior, nodes, measure)

    return _select(score, learner, X_pool, n_instances, candidates, batch, random_state)


@_shared_parameters
def random_sampling(
    learner, X_pool, n_instances=1, *, candidates=None, batch="greedy", random_state=None
):
    """Uniformly random unlabeled rows (the RAND baseline).

    Parameters
    ----------
    {pool}
    {candidates}
    batch : {"greedy", "topk", "localmax"}, default="greedy"
        Accepted so that every strategy takes the same options; every mode
        gives the same uniform sample without replacement (a random score
        does not change when a row is labeled).
    random_state : int, RandomState instance or None, default=None
        Draws the candidate subset and the rows.

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``.
    scores : ndarray of shape (n_instances,)
        The random keys drawn (uniform on [0, 1), largest first).
    """
    if batch not in BATCH_MODES:
        raise ValueError(f"batch must be one of {BATCH_MODES}; got {batch!r}.")
    rng = check_random_state(random_state)

    def score(posterior, nodes):
        return rng.uniform(size=np.asarray(nodes).size)

    return _select(score, learner, X_pool, n_instances, candidates, "topk", rng)
