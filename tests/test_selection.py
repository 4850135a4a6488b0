"""skmcal.selection: the candidate rows and the batch choice every strategy shares.

The strategies' own tests (test_query.py, test_baselines.py) check the
choices end to end; these check the shared rules directly.
"""

from __future__ import annotations

import numpy as np
import pytest

from skmcal.selection import (
    candidate_rows,
    check_candidates,
    choose,
    expected_candidates,
    top_positions,
)


@pytest.mark.parametrize("value", [None, 0.1, 1.0, 1, 50, np.float64(0.5), np.int64(3)])
def test_check_candidates_returns_accepted_values_unchanged(value):
    assert check_candidates(value) is value
    assert check_candidates(value, rows=False) is value


def test_check_candidates_arrays_only_where_rows_are_accepted():
    np.testing.assert_array_equal(check_candidates([3, 1]), [3, 1])
    with pytest.raises(ValueError, match=r"None \(every unlabeled node\), a fraction"):
        check_candidates(np.array([3, 1]), rows=False)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (0, "candidates as an int must be >= 1; got 0"),
        (1.5, r"candidates as a float must be a fraction in \(0, 1\]; got 1.5"),
        (True, "1-D array of row indices of X_pool; got True"),
        (np.array([0.5]), "1-D array of row indices"),
    ],
)
def test_check_candidates_errors_name_the_value(bad, message):
    with pytest.raises(ValueError, match=message):
        check_candidates(bad)


def test_candidate_rows_skip_labeled_nodes_and_repeated_rows():
    pool_nodes = np.array([0, 1, 2, 2, 3, 4, 1])  # rows 3 and 6 repeat nodes 2 and 1
    rng = np.random.RandomState(0)
    rows = candidate_rows(pool_nodes, np.array([4]), None, 1, rng)
    np.testing.assert_array_equal(rows, [0, 1, 2, 4])
    rows = candidate_rows(pool_nodes, np.array([4]), np.array([6, 5, 3, -1]), 1, rng)
    np.testing.assert_array_equal(rows, [3, 6])  # 5 is labeled, -1 is row 6 again
    assert candidate_rows(pool_nodes, np.array([4]), 0.5, 1, rng).size == 2
    assert candidate_rows(pool_nodes, np.array([4]), 0.1, 3, rng).size == 3  # >= n_instances
    with pytest.raises(ValueError, match="n_instances=5 exceeds the 4 unlabeled"):
        candidate_rows(pool_nodes, np.array([4]), None, 5, rng)


@pytest.mark.parametrize("candidates", [None, 0.25, 0.999, 7, 10**6, np.arange(0, 900, 3)])
def test_expected_candidates_is_the_count_that_candidate_rows_draws(candidates):
    """On a pool of distinct rows, the estimate before the draw is the draw's size."""
    rng = np.random.RandomState(0)
    labeled = rng.choice(1000, 40, replace=False)
    rows = candidate_rows(np.arange(1000), labeled, candidates, 1, rng)
    if isinstance(candidates, np.ndarray):  # the labeled rows among them are dropped
        assert expected_candidates(candidates, 1000, 40) >= rows.size
    else:
        assert expected_candidates(candidates, 1000, 40) == rows.size
    with pytest.raises(ValueError, match="fraction in"):
        expected_candidates(1.5, 1000, 40)


def test_choose_topk_and_greedy_with_an_advancing_state():
    values = np.array([0.8, 0.9, 0.5, 0.7])

    def score(state, nodes):  # the state is the set of silenced nodes
        return np.where(np.isin(nodes, list(state)), 0.0, values[nodes])

    def advance(state, node):
        return state | {node - 1, node + 1}  # adding a node silences its neighbours

    def pick(n, batch):
        return choose(frozenset(), score, advance, nodes, rows, n, batch, np.random.RandomState(0))

    rows = nodes = np.arange(4)
    picked, scores = pick(2, "topk")
    np.testing.assert_array_equal(picked, [1, 0])
    np.testing.assert_array_equal(scores, [0.9, 0.8])
    picked, scores = pick(2, "greedy")  # 1 silences 0 and 2
    np.testing.assert_array_equal(picked, [1, 3])
    np.testing.assert_array_equal(scores, [0.9, 0.7])


@pytest.mark.parametrize(
    "pool_nodes",
    [
        np.arange(40),  # a node set's own rows
        np.where(np.arange(40) % 7 == 3, np.arange(40) - 1, np.arange(40)),  # first_equal
        np.random.RandomState(1).randint(0, 30, size=40),  # rows of an array pool
    ],
    ids=["identity", "first_equal", "array"],
)
def test_candidate_draw_is_uniform_over_unlabeled_distinct_rows(pool_nodes):
    # The draw (not a permutation of the pool) must give every unlabeled node's first
    # row the same chance, never a labeled node, never two rows of one node.
    labeled = np.unique(pool_nodes)[::5]
    first = np.zeros(pool_nodes.size, dtype=bool)
    first[np.unique(pool_nodes, return_index=True)[1]] = True
    eligible = np.flatnonzero(first & ~np.isin(pool_nodes, labeled))
    rng = np.random.RandomState(0)
    counts = np.zeros(pool_nodes.size)
    n_draws, size = 3000, 4
    for _ in range(n_draws):
        rows = candidate_rows(pool_nodes, labeled, size, 1, rng)
        assert rows.size == size and np.all(np.diff(rows) > 0)
        assert np.isin(rows, eligible).all()
        counts[rows] += 1
    expected = n_draws * size / eligible.size
    # Binomial spread: 5 standard deviations (fails for a draw biased by 20% or more).
    assert np.all(np.abs(counts[eligible] - expected) < 5 * np.sqrt(expected))
    assert counts.sum() == n_draws * size


def test_candidate_rows_when_most_nodes_are_labeled_lists_the_rest():
    pool_nodes = np.arange(100)
    labeled = np.arange(0, 100)[np.arange(100) % 10 != 0]  # 90 labeled, 10 left
    rows = candidate_rows(pool_nodes, labeled, 0.5, 2, np.random.RandomState(0))
    assert rows.size == 5 and np.all(rows % 10 == 0)
    rows = candidate_rows(pool_nodes, labeled, 1.0, 2, np.random.RandomState(0))
    np.testing.assert_array_equal(rows, np.arange(0, 100, 10))


@pytest.mark.parametrize("seed", range(6))
def test_top_positions_equal_a_stable_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    scores = rng.integers(0, 12, size=n).astype(float)  # many ties
    if seed % 2:
        special = rng.choice(n, size=min(n, 5), replace=False)
        scores[special] = rng.choice([np.nan, np.inf, -np.inf], size=special.size)
    order = rng.permutation(n)
    rank = np.empty(n, dtype=np.intp)
    rank[order] = np.arange(n)
    for k in (1, 2, 5, 17, n):
        expected = np.argsort(-scores, kind="stable")[:k]
        np.testing.assert_array_equal(top_positions(scores, k), expected)
        # ties by key: what a stable sort of the scores in the key's order gives
        expected = order[np.argsort(-scores[order], kind="stable")[:k]]
        np.testing.assert_array_equal(top_positions(scores, k, rank), expected)
