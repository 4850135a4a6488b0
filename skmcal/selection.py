"""Choosing a batch among candidate rows: the rules every query strategy shares.

Public within the package, not part of skmcal's API: :mod:`skmcal.query`
(the strategies of the spectral models) and :mod:`skmcal.baselines` (the
paper's baselines in their own models) select through these functions, and
:mod:`skmcal.experiment` checks its ``candidates`` setting with
:func:`check_candidates`. A strategy provides only its scores (and, for greedy
batches, how its state changes when a node is added):

1. :func:`fitted_classifier`: the fitted classifier of a learner;
2. :func:`pool_nodes`: the node of every row of ``X_pool``;
3. :func:`candidate_rows`: the unlabeled rows to score, subsampled as
   ``candidates`` says;
4. :func:`choose`: the top-k, greedy or LocalMax batch among them
   (:func:`~skmcal.query.local_max_batch`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .classifier import SpectralGraphClassifier
from .graph import IdentityMemo, NodeSet, dtype_hint

__all__ = [
    "BATCH_MODES",
    "candidate_rows",
    "check_candidates",
    "choose",
    "fitted_classifier",
    "local_max_batch",
    "pool_nodes",
]

#: The batch modes of every strategy.
BATCH_MODES = ("topk", "greedy", "localmax")


def fitted_classifier(learner) -> SpectralGraphClassifier:
    """The fitted :class:`~skmcal.SpectralGraphClassifier` of ``learner``.

    ``learner`` is the classifier or a modAL learner wrapping it (its
    ``estimator``). Raises ``TypeError`` for another estimator and
    ``NotFittedError`` for an unfitted one; committees are not supported.
    """
    if hasattr(learner, "learner_list"):
        raise TypeError(
            f"modAL committees ({type(learner).__name__}) are not supported: the strategies "
            f"of skmcal.query score one SpectralGraphClassifier's posterior. Pass a modAL "
            f"ActiveLearner (or the classifier itself), or query each member of "
            f"learner_list separately."
        )
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


def pool_nodes(clf: SpectralGraphClassifier, X_pool) -> np.ndarray:
    """Node of every row of ``X_pool``: of equal nodes, the first (one point, one node).

    ``X_pool`` is the classifier's :class:`~skmcal.NodeSet` (no look-up) or
    rows of it (array, DataFrame or sparse matrix); a row that is not a node
    raises ``ValueError``. The result is read-only.
    """
    nodes = clf.node_set_
    if isinstance(X_pool, NodeSet):
        if X_pool is not nodes and X_pool.digest != nodes.digest:
            raise ValueError("X_pool is a NodeSet other than the classifier's nodes.")
        return nodes.first_equal
    return POOL_LOOKUPS.get(X_pool, nodes.digest, lambda: _lookup_pool(nodes, X_pool))


#: Node of every row of the pools given as arrays, per node set (see :func:`pool_nodes`):
#: remembered while the array lives and keeps its :func:`~skmcal.graph.array_fingerprint`,
#: so an unchanged pool is looked up once, not at every query.
POOL_LOOKUPS = IdentityMemo()


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
            f"built on (its `nodes`)." + dtype_hint(X_pool, nodes)
        )
    index.flags.writeable = False
    return index


def check_candidates(candidates, *, rows: bool = True):
    """Check the form of ``candidates`` and return it unchanged.

    Accepted: None (every unlabeled row), a fraction in (0, 1] (float), a
    count >= 1 (int) and, when ``rows`` is True, a 1-D integer array of row
    indices (checked against ``X_pool`` by :func:`candidate_rows`).

    Raises
    ------
    ValueError
        Naming the value and the accepted forms.
    """
    if candidates is None:
        return None
    if isinstance(candidates, (Real, Integral)) and not isinstance(candidates, bool):
        if isinstance(candidates, Integral):
            if candidates < 1:
                raise ValueError(f"candidates as an int must be >= 1; got {candidates}.")
        elif not 0 < candidates <= 1:
            raise ValueError(
                f"candidates as a float must be a fraction in (0, 1]; got {candidates}."
            )
        return candidates
    if rows:
        array = np.asarray(candidates)
        if array.ndim == 1 and array.dtype.kind in "iu":
            return array
        raise ValueError(
            "candidates must be None, a float in (0, 1], an int, or a 1-D array of "
            f"row indices of X_pool; got {candidates!r}."
        )
    raise ValueError(
        "candidates must be None (every unlabeled node), a fraction in (0, 1] or "
        f"an int >= 1; got {candidates!r}."
    )


@dataclass(frozen=True)
class _PoolIndex:
    """Which rows of a pool stand for their node, and which nodes the pool holds.

    ``first`` marks the first row of each node (None: every row is);
    ``held`` marks the nodes with a row in the pool (None: the pool holds
    node ``i`` at row ``i``, every node once).
    """

    first: np.ndarray | None
    held: np.ndarray | None
    n_first: int
    n_nodes: int

    @classmethod
    def of(cls, pool_nodes: np.ndarray) -> _PoolIndex:
        n = pool_nodes.size
        rows = np.arange(n)
        if np.array_equal(pool_nodes, rows):
            return cls(None, None, n, n)
        if np.all(pool_nodes <= rows) and np.array_equal(pool_nodes[pool_nodes], pool_nodes):
            # A node set's first_equal: row i holds node i or an earlier equal node.
            first = pool_nodes == rows
        else:
            first = np.zeros(n, dtype=bool)
            first[np.unique(pool_nodes, return_index=True)[1]] = True
        held = np.zeros(pool_nodes.max(initial=-1) + 1, dtype=bool)
        held[pool_nodes] = True
        return cls(None if first.all() else first, held, int(np.count_nonzero(first)), held.size)

    def eligible(self, rows, pool_nodes, labeled, *, first_only=True):
        """Which ``rows`` are not on a ``labeled`` node (a mask over nodes), and first on
        their node (``first_only``)."""
        keep = ~labeled[rows if self.held is None else pool_nodes[rows]]  # held None: row = node
        if first_only and self.first is not None:
            keep &= self.first[rows]
        return keep

    def n_labeled_held(self, labeled_nodes):
        """How many of the distinct ``labeled_nodes`` have a row in the pool."""
        if self.held is None:
            return int(np.count_nonzero(labeled_nodes < self.n_first))
        inside = labeled_nodes[labeled_nodes < self.held.size]
        return int(np.count_nonzero(self.held[inside]))


#: The ``_PoolIndex`` of the pools' node arrays, remembered by identity.
POOL_INDEXES = IdentityMemo()


def _draw_distinct(rng, n, size, accept, share):
    """``size`` distinct positions in ``range(n)`` that ``accept``, uniformly at random, sorted.

    Positions are drawn with replacement and the refused ones dropped until
    ``size`` distinct ones are held; a uniform choice of ``size`` among them
    is a uniform random subset. ``share`` is the fraction of positions
    accepted (the caller keeps it at least 1/2, and ``size`` at most half of
    the accepted positions): a few passes over an ``n``-byte mask and draws
    of the order of ``size``, never a permutation of ``n``.
    """
    taken = np.zeros(n, dtype=bool)
    count = 0
    while count < size:
        draw = rng.randint(0, n, size=int(1.05 * (size - count) / share) + 16)
        taken[draw[accept(draw)]] = True
        count = np.count_nonzero(taken)
    chosen = np.flatnonzero(taken)
    if chosen.size > size:
        keep = np.zeros(chosen.size, dtype=bool)  # a mask, not a sort of the positions kept
        keep[rng.permutation(chosen.size)[:size]] = True
        chosen = chosen[keep]
    return chosen


def top_positions(scores, k, key=None) -> np.ndarray:
    """Positions of the ``k`` largest ``scores``, ties broken by the smaller ``key``.

    With ``key`` None, by position: ``np.argsort(-scores, kind="stable")[:k]``.
    NaN come last. Computed from a partial sort when ``k`` is small against
    the number of scores: at a million candidates, a partition and a sort of
    the few that can be among the ``k``, instead of sorting them all.
    """
    negated = -np.asarray(scores, dtype=np.float64)
    key = np.arange(negated.size) if key is None else np.asarray(key)
    keep = np.arange(negated.size)
    if 8 * k < negated.size:
        kth = np.partition(negated, k - 1)[k - 1]
        if np.isfinite(kth):  # else infinities or NaN among the k: sort them all
            keep = np.flatnonzero(negated <= kth)  # every score that can be among the k
    return keep[np.lexsort((key[keep], negated[keep]))[:k]]


def expected_candidates(candidates, n_rows: int, n_labeled: int) -> int:
    """About how many rows :func:`candidate_rows` will return for ``candidates`` among
    ``n_rows`` rows of which ``n_labeled`` are labeled (equal rows counted apart), before
    it draws them."""
    candidates = check_candidates(candidates)
    n_unlabeled = max(n_rows - n_labeled, 0)
    if isinstance(candidates, np.ndarray):
        return min(candidates.size, n_unlabeled)
    return _subset_size(candidates, n_unlabeled)


def _subset_size(candidates, n_unlabeled: int) -> int:
    """Rows asked for by ``candidates`` None (all), an int (that many) or a fraction, among
    ``n_unlabeled`` unlabeled rows (before :func:`candidate_rows` raises it to
    ``n_instances``)."""
    if candidates is None:
        return n_unlabeled
    if isinstance(candidates, Integral):
        return min(int(candidates), n_unlabeled)
    return int(np.ceil(candidates * n_unlabeled))


def candidate_rows(pool_nodes, labeled_nodes, candidates, n_instances, rng) -> np.ndarray:
    """Rows of ``X_pool`` to score: unlabeled, one per node, then subsampled as asked.

    ``pool_nodes`` is the node of every row (:func:`pool_nodes`);
    ``labeled_nodes`` are first nodes of their equal nodes, as ``pool_nodes``
    are; of the rows of ``X_pool`` on one node, only the first is kept. A
    fraction or a count of ``candidates`` (:func:`check_candidates`) draws
    that many unlabeled rows with ``rng``, at least ``n_instances``; an array
    keeps its unlabeled rows. Returns the rows sorted; raises ``ValueError``
    when fewer than ``n_instances`` remain.

    While at most half of the pool's nodes are labeled and at most half of
    the unlabeled rows are asked for, a fraction or a count is drawn with
    replacement and rejection (a few passes over byte masks of the pool's
    size, draws of the order of the rows asked for), never by permuting the
    pool; otherwise the unlabeled rows are listed and subsampled.
    """
    candidates = check_candidates(candidates)
    if pool_nodes.size == 0:
        raise ValueError("X_pool is empty (0 rows): there is nothing to query.")
    index = POOL_INDEXES.get(pool_nodes, None, lambda: _PoolIndex.of(pool_nodes))
    labeled_nodes = np.unique(labeled_nodes)
    labeled = np.zeros(index.n_nodes, dtype=bool)
    labeled[labeled_nodes[labeled_nodes < labeled.size]] = True

    def eligible(rows, first_only=True):
        return index.eligible(rows, pool_nodes, labeled, first_only=first_only)

    if isinstance(candidates, np.ndarray):
        rows = candidates
        if rows.size and (rows.min() < -pool_nodes.size or rows.max() >= pool_nodes.size):
            raise ValueError(
                f"candidates holds row indices outside X_pool's {pool_nodes.size} rows."
            )
        rows = np.unique(rows % pool_nodes.size)
        rows = rows[eligible(rows, first_only=False)]
        rows = np.sort(rows[np.unique(pool_nodes[rows], return_index=True)[1]])
    else:
        n_unlabeled = index.n_first - index.n_labeled_held(labeled_nodes)
        size = min(max(_subset_size(candidates, n_unlabeled), n_instances), n_unlabeled)
        if 2 * size <= n_unlabeled and 2 * n_unlabeled >= pool_nodes.size:
            share = n_unlabeled / pool_nodes.size
            rows = _draw_distinct(rng, pool_nodes.size, size, eligible, share)
        else:
            rows = np.arange(pool_nodes.size)
            rows = rows[eligible(rows)]
            if size < rows.size:
                rows = np.sort(rng.choice(rows, size=size, replace=False))
    if n_instances > rows.size:
        raise ValueError(
            f"n_instances={n_instances} exceeds the {rows.size} unlabeled candidate rows of "
            f"X_pool (rows equal to each other count once)."
        )
    return rows


def local_max_batch(scores, adjacency, n_instances: int) -> np.ndarray:
    """Positions of a LocalMax batch among candidates with ``scores``.

    Candidate ``i`` is a local maximum when ``scores[i] >= scores[j]`` for every
    neighbour ``j`` of ``i`` (an entry ``adjacency[i, j] > 0``) among the
    candidates. The batch is the ``n_instances`` best local maxima; if there
    are fewer, it is filled with the best remaining candidates that are not
    neighbours of one already chosen (in order of score, each pick blocking
    its neighbours), then with the best remaining ones.

    Parameters
    ----------
    scores : ndarray of shape (n_candidates,)
        Acquisition values (larger is better). Ties keep the order given.
    adjacency : sparse matrix of shape (n_candidates, n_candidates)
        The graph restricted to the candidates (symmetric).
    n_instances : int
        Batch size, at most ``n_candidates``.

    Returns
    -------
    ndarray of shape (n_instances,)
        Positions into ``scores``, local maxima first, each part best first.

    References
    ----------
    W. Chapman, B. Chen, Z. Tan, J. Calder, K. Miller, A. L. Bertozzi,
    "Novel batch active learning approach and its application on the
    synthetic aperture radar datasets", SPIE Defense + Commercial Sensing 2023.
    """
    scores = np.asarray(scores, dtype=np.float64)
    adjacency = sp.csr_matrix(adjacency)
    adjacency.eliminate_zeros()
    rows = np.repeat(np.arange(scores.size), np.diff(adjacency.indptr))
    beaten = np.zeros(scores.size, dtype=bool)
    beaten[rows[scores[adjacency.indices] > scores[rows]]] = True
    order = np.argsort(-scores, kind="stable")
    chosen = order[~beaten[order]][:n_instances]
    if chosen.size == n_instances:
        return chosen
    # Fewer local maxima than asked: fill, keeping away from the chosen ones' neighbours.
    taken = np.zeros(scores.size, dtype=bool)
    blocked = np.zeros(scores.size, dtype=bool)
    picks = []

    def take(position):
        picks.append(position)
        taken[position] = True
        start, stop = adjacency.indptr[position], adjacency.indptr[position + 1]
        blocked[adjacency.indices[start:stop]] = True

    for position in chosen:
        take(position)
    for position in order:
        if len(picks) == n_instances:
            break
        if not taken[position] and not blocked[position]:
            take(position)
    picks.extend(order[~taken[order]][: n_instances - len(picks)])
    return np.array(picks, dtype=np.intp)


def choose(
    state: Any,
    score: Callable[[Any, np.ndarray], np.ndarray],
    advance: Callable[[Any, int], Any],
    pool_nodes: np.ndarray,
    rows: np.ndarray,
    n_instances: int,
    batch: str,
    rng: np.random.RandomState,
    weights=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k, greedy or LocalMax choice of ``n_instances`` among the candidate ``rows``.

    ``score(state, nodes)`` gives the acquisition values of nodes;
    ``advance(state, node)`` the state with ``node`` added (greedy batches);
    ``weights`` the graph's sparse adjacency over all nodes (LocalMax batches).
    Returns the chosen rows and their scores (in the order chosen).
    """
    # Ties are broken at random: by each candidate's place in a random order.
    # The candidates are scored in their own (node) order, which reads the
    # eigenvector rows in memory order.
    order = rng.permutation(rows.size)
    if batch == "localmax" and n_instances > 1:
        rows = rows[order]
        nodes = pool_nodes[rows]
        scores = score(state, nodes)
        best = local_max_batch(scores, weights[nodes][:, nodes], n_instances)
        return rows[best], scores[best]
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    if batch != "greedy" or n_instances == 1:
        scores = score(state, pool_nodes[rows])
        best = top_positions(scores, n_instances, rank)
        return rows[best], scores[best]
    chosen, chosen_scores = [], []
    available = np.ones(rows.size, dtype=bool)
    for _ in range(n_instances):
        positions = np.flatnonzero(available)
        scores = score(state, pool_nodes[rows[positions]])
        pick = top_positions(scores, 1, rank[positions])[0]
        position = positions[pick]
        chosen.append(rows[position])
        chosen_scores.append(scores[pick])
        available[position] = False
        if len(chosen) < n_instances:
            state = advance(state, pool_nodes[rows[position]])
    return np.array(chosen, dtype=np.intp), np.array(chosen_scores)
