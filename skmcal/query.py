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

Options
-------
candidates : None, float in (0, 1], int or array of row indices, default=None
    Which unlabeled rows of ``X_pool`` are scored: all of them (None), a
    random fraction of them (float; the paper uses 0.1), that many at random
    (int), or exactly these rows of ``X_pool`` (array; labeled ones dropped).
batch : {"topk", "greedy"}, default="topk"
    ``topk``: the ``n_instances`` best candidates (the paper). ``greedy``:
    pick the best, add it with its pseudo-label through the look-ahead update
    of the posterior, re-score, pick the next, and so on.
random_state : int, RandomState instance or None, default=None
    Draws the candidate subset and breaks ties.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import acquisition
from .classifier import SpectralGraphClassifier
from .graph import IdentityMemo, NodeSet
from .modal_compat import patch_modal

patch_modal()

BATCH_MODES = ("topk", "greedy")


def _classifier(learner) -> SpectralGraphClassifier:
    clf = getattr(learner, "estimator", learner)
    if not isinstance(clf, SpectralGraphClassifier):
        raise TypeError(
            f"The learner must be a SpectralGraphClassifier or a modAL learner wrapping "
            f"one; got {type(clf).__name__}."
        )
    check_is_fitted(
        clf,
        msg="The SpectralGraphClassifier is not fitted yet: teach it "
        "some labels (modAL: X_training, y_training) before querying.",
    )
    return clf


#: Node of every row of the pools given as arrays, per node set (see :func:`_pool_nodes`).
POOL_LOOKUPS = IdentityMemo()

#: Distinct rows of each pool (see :func:`_pool_rows`), by the pool's node array.
_POOL_ROWS = IdentityMemo()


def _pool_nodes(clf: SpectralGraphClassifier, X_pool):
    """Node of every row of ``X_pool``: of equal nodes, the first (one point, one node).

    The result is read-only. For a NumPy array or CSR matrix it is remembered
    (in :data:`POOL_LOOKUPS`) while the array lives and keeps its
    :func:`~skmcal.graph.array_fingerprint`, so the same pool is looked up
    once, not at every query.
    """
    nodes = clf.node_set_
    if isinstance(X_pool, NodeSet):
        if X_pool is not nodes and X_pool.digest != nodes.digest:
            raise ValueError("X_pool is a NodeSet other than the classifier's nodes.")
        return nodes.first_equal
    return POOL_LOOKUPS.get(X_pool, nodes.digest, lambda: _lookup_pool(nodes, X_pool))


def _lookup_pool(nodes: NodeSet, X_pool):
    if hasattr(X_pool, "iloc") or not sp.issparse(X_pool):
        X_pool = np.asarray(X_pool)
        if X_pool.dtype not in (np.float32, np.float64):
            X_pool = X_pool.astype(np.float64)
    if X_pool.ndim != 2:
        raise ValueError(f"X_pool must be 2-D (n_rows, n_features); got shape {X_pool.shape}.")
    index = nodes.lookup(X_pool)
    missing = np.flatnonzero(index < 0)
    if missing.size:
        raise ValueError(
            f"{missing.size} row(s) of X_pool are not nodes of the classifier's graph "
            f"(first: row {missing[0]}). Query rows of the pool the classifier was "
            f"built on (its `nodes`)."
        )
    index.flags.writeable = False
    return index


def _pool_rows(pool_nodes):
    """The first row of ``X_pool`` on each of its nodes, ascending, and those nodes sorted.

    Computed once per pool (a read-only ``pool_nodes`` is remembered).
    """

    def compute():
        rows = np.sort(np.unique(pool_nodes, return_index=True)[1])
        return rows, np.sort(pool_nodes[rows])

    if pool_nodes.flags.writeable:
        return compute()
    return _POOL_ROWS.get(pool_nodes, "rows", compute)


def _contains(sorted_values, values):
    """Whether each of ``values`` is in the ascending array ``sorted_values``."""
    at = np.minimum(np.searchsorted(sorted_values, values), max(sorted_values.size - 1, 0))
    return sorted_values[at] == values if sorted_values.size else np.zeros(values.size, bool)


def _draw_distinct(rng, n_positions, size, rejected):
    """``size`` distinct positions in ``[0, n_positions)``, uniform among those not ``rejected``.

    Positions are drawn with replacement, rejected ones dropped, and the
    first ``size`` distinct ones kept in the order drawn: a uniform random
    subset, in time and memory of order ``size`` (the caller keeps ``size``
    at most half of the eligible positions), never a permutation of all.
    """
    chosen = np.empty(0, dtype=np.intp)
    while chosen.size < size:
        draw = rng.randint(0, n_positions, size=int(1.25 * (size - chosen.size)) + 16)
        draw = np.concatenate([chosen, draw[~rejected(draw)]])
        first = np.sort(np.unique(draw, return_index=True)[1])
        chosen = draw[first][:size]
    return chosen


def _candidate_rows(pool_nodes, labeled_nodes, candidates, n_instances, rng):
    """Rows of ``X_pool`` to score: unlabeled, one per node, then subsampled as asked.

    ``labeled_nodes`` are first nodes of their equal nodes, as ``pool_nodes``
    are; of the rows of ``X_pool`` on one node, only the first is kept. A
    random subset (``candidates`` a float or an int) is drawn directly
    (:func:`_draw_distinct`): its cost grows with its size, not with the pool.
    """
    labeled = np.unique(labeled_nodes)
    if isinstance(candidates, (Real, Integral)) and not isinstance(candidates, bool):
        if isinstance(candidates, Integral):
            if candidates < 1:
                raise ValueError(f"candidates as an int must be >= 1; got {candidates}.")
        elif not 0 < candidates <= 1:
            raise ValueError(
                f"candidates as a float must be a fraction in (0, 1]; got {candidates}."
            )
        first_rows, pool_set = _pool_rows(pool_nodes)
        n_fresh = first_rows.size - int(np.count_nonzero(_contains(pool_set, labeled)))
        if isinstance(candidates, Integral):
            size = min(int(candidates), n_fresh)
        else:
            size = int(np.ceil(candidates * n_fresh))
        size = min(max(size, n_instances), n_fresh)

        def is_labeled(positions):
            return _contains(labeled, pool_nodes[first_rows[positions]])

        if size == n_fresh:
            rows = first_rows[~is_labeled(np.arange(first_rows.size))]
        elif 2 * size <= n_fresh:
            rows = np.sort(first_rows[_draw_distinct(rng, first_rows.size, size, is_labeled)])
        else:  # draw the rows left out instead
            left_out = _draw_distinct(rng, first_rows.size, n_fresh - size, is_labeled)
            keep = ~is_labeled(np.arange(first_rows.size))
            keep[left_out] = False
            rows = first_rows[keep]
    elif candidates is None:
        first_rows, _ = _pool_rows(pool_nodes)
        rows = first_rows[~_contains(labeled, pool_nodes[first_rows])]
    else:
        rows = np.asarray(candidates)
        if rows.ndim != 1 or rows.dtype.kind not in "iu":
            raise ValueError(
                "candidates must be None, a float in (0, 1], an int, or a 1-D array of "
                f"row indices of X_pool; got {candidates!r}."
            )
        if rows.size and (rows.min() < -pool_nodes.size or rows.max() >= pool_nodes.size):
            raise ValueError(
                f"candidates holds row indices outside X_pool's {pool_nodes.size} rows."
            )
        rows = np.unique(rows % pool_nodes.size)
        rows = rows[~_contains(labeled, pool_nodes[rows])]
        rows = np.sort(rows[np.unique(pool_nodes[rows], return_index=True)[1]])
    if n_instances > rows.size:
        raise ValueError(
            f"n_instances={n_instances} exceeds the {rows.size} unlabeled candidate rows of "
            f"X_pool (rows equal to each other count once)."
        )
    return rows


def _choose(state, score, advance, pool_nodes, rows, n_instances, batch, rng):
    """Top-k or greedy choice of ``n_instances`` among the candidate ``rows``.

    ``score(state, nodes)`` gives the acquisition values of nodes;
    ``advance(state, node)`` the state with ``node`` added (greedy batches).
    Shared by the spectral strategies and the baselines (:mod:`skmcal.baselines`).
    """
    # A random order of the candidates breaks ties at random in the stable sort.
    rows = rows[rng.permutation(rows.size)]
    if batch == "topk" or n_instances == 1:
        scores = score(state, pool_nodes[rows])
        best = np.argsort(-scores, kind="stable")[:n_instances]
        return rows[best], scores[best]
    chosen, chosen_scores = [], []
    available = np.ones(rows.size, dtype=bool)
    for _ in range(n_instances):
        scores = score(state, pool_nodes[rows[available]])
        pick = np.argsort(-scores, kind="stable")[0]
        position = np.flatnonzero(available)[pick]
        chosen.append(rows[position])
        chosen_scores.append(scores[pick])
        available[position] = False
        if len(chosen) < n_instances:
            state = advance(state, pool_nodes[rows[position]])
    return np.array(chosen, dtype=np.intp), np.array(chosen_scores)


#: Acquisition functions that take ``top=`` (ce screens its candidates in float32).
_SCREENED = (acquisition.model_change, acquisition.vopt, acquisition.sopt)


def _select(score_fn, learner, X_pool, n_instances, candidates, batch, random_state):
    """Shared body of every strategy: candidates, scores, top-k or greedy batch."""
    if not isinstance(n_instances, Integral) or n_instances < 1:
        raise ValueError(f"n_instances must be a positive int; got {n_instances!r}.")
    if batch not in BATCH_MODES:
        raise ValueError(f"batch must be one of {BATCH_MODES}; got {batch!r}.")
    clf = _classifier(learner)
    rng = check_random_state(random_state)
    pool_nodes = _pool_nodes(clf, X_pool)
    labeled = clf.node_set_.first_equal[clf.labeled_nodes_]
    rows = _candidate_rows(pool_nodes, labeled, candidates, n_instances, rng)
    posterior = clf.posterior_
    screened = score_fn in _SCREENED
    if screened and batch == "greedy" and n_instances > 1:
        posterior = posterior.prepare(pool_nodes[rows])
    if screened:
        # Only the best value of each greedy step, or the n_instances best, must be exact.
        top = n_instances if batch == "topk" else 1

        def score(posterior, nodes):
            return score_fn(posterior, nodes, top=top)

    else:
        score = score_fn
    return _choose(
        posterior, score, acquisition.look_ahead, pool_nodes, rows, n_instances, batch, rng
    )


def model_change(
    learner, X_pool, n_instances=1, *, candidates=None, batch="topk", random_state=None
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
    learner : modAL learner or SpectralGraphClassifier
        A fitted classifier, or a modAL learner wrapping one.
    X_pool : array-like, sparse matrix or NodeSet
        Rows of the classifier's node set, or the node set itself (the fast
        path: no row look-up). Labeled nodes are never returned.
    n_instances : int, default=1
        How many rows to return.
    candidates : None, float in (0, 1], int or array of int, default=None
        Which unlabeled rows of ``X_pool`` are scored: all of them (None); a
        random fraction of them (float; the paper scores 10%, 0.1); that many
        drawn at random (int); or exactly these row indices of ``X_pool``
        (array; labeled rows among them are dropped). A random subset never
        has fewer than ``n_instances`` rows.
    batch : {"topk", "greedy"}, default="topk"
        How ``n_instances > 1`` rows are chosen. ``topk``: the
        ``n_instances`` best-scored candidates (the paper's batches).
        ``greedy``: the best candidate, then the posterior updated as if it
        were labeled with its pseudo-label (the look-ahead update), the
        candidates rescored, the next best, and so on; costlier, and it
        spreads a batch out.
    random_state : int, RandomState instance or None, default=None
        Draws the random candidate subset and breaks ties between equal
        scores.

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


def vopt(learner, X_pool, n_instances=1, *, candidates=None, batch="topk", random_state=None):
    """V-opt: the rows whose label most reduces the total posterior variance.

    The score of a candidate node is the decrease of ``trace(V C V')``, the
    summed posterior variance of the latent values of every node, that its
    label would bring: the update of the Laplace covariance ``C`` by the
    node's curvature (``1/gamma^2`` for ``gr`` and ``mgr``; the loss's
    curvature at the pseudo-label otherwise).

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted classifier, or a modAL learner wrapping one.
    X_pool : array-like, sparse matrix or NodeSet
        Rows of the classifier's node set, or the node set itself (the fast
        path: no row look-up). Labeled nodes are never returned.
    n_instances : int, default=1
        How many rows to return.
    candidates : None, float in (0, 1], int or array of int, default=None
        Which unlabeled rows of ``X_pool`` are scored: all of them (None); a
        random fraction of them (float; the paper scores 10%, 0.1); that many
        drawn at random (int); or exactly these row indices of ``X_pool``
        (array; labeled rows among them are dropped). A random subset never
        has fewer than ``n_instances`` rows.
    batch : {"topk", "greedy"}, default="topk"
        How ``n_instances > 1`` rows are chosen. ``topk``: the
        ``n_instances`` best-scored candidates (the paper's batches).
        ``greedy``: the best candidate, then the posterior updated as if it
        were labeled with its pseudo-label (the look-ahead update), the
        candidates rescored, the next best, and so on; costlier, and it
        spreads a batch out.
    random_state : int, RandomState instance or None, default=None
        Draws the random candidate subset and breaks ties between equal
        scores.

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first.
    scores : ndarray of shape (n_instances,)
        Their acquisition values (variance reductions).
    """
    return _select(acquisition.vopt, learner, X_pool, n_instances, candidates, batch, random_state)


def sopt(learner, X_pool, n_instances=1, *, candidates=None, batch="topk", random_state=None):
    """Sigma-opt: the rows whose label most reduces the survey risk ``1' V C V' 1``.

    The score of a candidate node is the decrease of ``1' V C V' 1``, the
    posterior variance of the sum of the latent values (for ``ce``, summed
    over the classes), that its label would bring, through the same update
    of ``C`` as :func:`vopt`.

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted classifier, or a modAL learner wrapping one.
    X_pool : array-like, sparse matrix or NodeSet
        Rows of the classifier's node set, or the node set itself (the fast
        path: no row look-up). Labeled nodes are never returned.
    n_instances : int, default=1
        How many rows to return.
    candidates : None, float in (0, 1], int or array of int, default=None
        Which unlabeled rows of ``X_pool`` are scored: all of them (None); a
        random fraction of them (float; the paper scores 10%, 0.1); that many
        drawn at random (int); or exactly these row indices of ``X_pool``
        (array; labeled rows among them are dropped). A random subset never
        has fewer than ``n_instances`` rows.
    batch : {"topk", "greedy"}, default="topk"
        How ``n_instances > 1`` rows are chosen. ``topk``: the
        ``n_instances`` best-scored candidates (the paper's batches).
        ``greedy``: the best candidate, then the posterior updated as if it
        were labeled with its pseudo-label (the look-ahead update), the
        candidates rescored, the next best, and so on; costlier, and it
        spreads a batch out.
    random_state : int, RandomState instance or None, default=None
        Draws the random candidate subset and breaks ties between equal
        scores.

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``, best first.
    scores : ndarray of shape (n_instances,)
        Their acquisition values (survey-risk reductions).
    """
    return _select(acquisition.sopt, learner, X_pool, n_instances, candidates, batch, random_state)


def uncertainty(
    learner,
    X_pool,
    n_instances=1,
    *,
    measure="margin",
    candidates=None,
    batch="topk",
    random_state=None,
):
    """Uncertainty sampling: the rows the current model is least sure of.

    Scores every candidate by ``measure`` at the MAP latent values (no
    posterior covariance is used).

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted classifier, or a modAL learner wrapping one.
    X_pool : array-like, sparse matrix or NodeSet
        Rows of the classifier's node set, or the node set itself (the fast
        path: no row look-up). Labeled nodes are never returned.
    n_instances : int, default=1
        How many rows to return.
    measure : {"margin", "entropy", "least_confident"}, default="margin"
        ``margin``: smallest gap between the two largest latent class values
        (binary: smallest ``|u|``); ``entropy``: largest entropy of the class
        probabilities (``predict_proba``); ``least_confident``: smallest
        largest class probability.
    candidates : None, float in (0, 1], int or array of int, default=None
        Which unlabeled rows of ``X_pool`` are scored: all of them (None); a
        random fraction of them (float; the paper scores 10%, 0.1); that many
        drawn at random (int); or exactly these row indices of ``X_pool``
        (array; labeled rows among them are dropped). A random subset never
        has fewer than ``n_instances`` rows.
    batch : {"topk", "greedy"}, default="topk"
        How ``n_instances > 1`` rows are chosen. ``topk``: the
        ``n_instances`` best-scored candidates (the paper's batches).
        ``greedy``: the best candidate, then the posterior updated as if it
        were labeled with its pseudo-label (the look-ahead update), the
        candidates rescored, the next best, and so on; costlier, and it
        spreads a batch out.
    random_state : int, RandomState instance or None, default=None
        Draws the random candidate subset and breaks ties between equal
        scores.

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


def random_sampling(learner, X_pool, n_instances=1, *, candidates=None, random_state=None):
    """Uniformly random unlabeled rows (the RAND baseline).

    Parameters
    ----------
    learner : modAL learner or SpectralGraphClassifier
        A fitted classifier, or a modAL learner wrapping one.
    X_pool : array-like, sparse matrix or NodeSet
        Rows of the classifier's node set, or the node set itself (the fast
        path: no row look-up). Labeled nodes are never returned.
    n_instances : int, default=1
        How many rows to return.
    candidates : None, float in (0, 1], int or array of int, default=None
        Which unlabeled rows of ``X_pool`` are scored: all of them (None); a
        random fraction of them (float; the paper scores 10%, 0.1); that many
        drawn at random (int); or exactly these row indices of ``X_pool``
        (array; labeled rows among them are dropped). A random subset never
        has fewer than ``n_instances`` rows.
    random_state : int, RandomState instance or None, default=None
        Draws the candidate subset and the rows.

    Returns
    -------
    indices : ndarray of shape (n_instances,)
        Rows of ``X_pool``.
    scores : ndarray of shape (n_instances,)
        The random keys drawn (uniform on [0, 1), largest first).
    """
    rng = check_random_state(random_state)

    def score(posterior, nodes):
        return rng.uniform(size=np.asarray(nodes).size)

    return _select(score, learner, X_pool, n_instances, candidates, "topk", rng)
