"""Cold start (``skmcal.cold_start``): coverage of well separated clusters, options, errors."""

from __future__ import annotations

import numpy as np
import pytest

from skmcal import GRAPH_CACHE, NodeSet, SpectralGraphClassifier, cold_start
from skmcal.coldstart import _farthest_points, spectral_embedding


def _clusters(sizes, std=1.0, seed=0):
    """Gaussian clusters of the given sizes on a circle of radius 10 (well separated)."""
    rng = np.random.RandomState(seed)
    angles = np.arange(len(sizes)) * 2 * np.pi / len(sizes)
    centers = 10 * np.c_[np.cos(angles), np.sin(angles)]
    X = np.vstack([rng.randn(s, 2) * std + c for s, c in zip(sizes, centers, strict=True)])
    return X, np.repeat(np.arange(len(sizes)), sizes)


@pytest.mark.parametrize("sizes", [[30, 60, 90, 120, 150, 200], [15, 100, 300]])
def test_one_row_per_cluster_in_almost_every_seed(sizes):
    X, y = _clusters(sizes)
    pool = NodeSet(X)
    k = len(sizes)
    covered = 0
    for seed in range(20):
        rows = cold_start(pool, k, random_state=seed, n_eigs=20)
        assert rows.shape == (k,) and np.unique(rows).size == k
        covered += np.unique(y[rows]).size == k
    assert covered >= 19
    # Random rows would cover every cluster far less often.
    rng = np.random.RandomState(0)
    lucky = sum(np.unique(y[rng.choice(y.size, k, replace=False)]).size == k for _ in range(200))
    assert lucky < 0.3 * 200


def test_rows_avoid_the_bridge_between_two_clusters():
    # Two clusters joined by a line of 12 points: the representatives lie in the clusters.
    rng = np.random.RandomState(0)
    bridge = np.c_[np.linspace(2.5, 7.5, 12), 0.3 * rng.randn(12)]
    X = np.vstack([rng.randn(100, 2), rng.randn(100, 2) + [10.0, 0.0], bridge])
    pool = NodeSet(X)
    for seed in range(10):
        rows = cold_start(pool, 2, random_state=seed, n_eigs=10)
        assert sorted((rows // 100).tolist()) == [0, 1]


def test_labeled_rows_send_new_rows_to_uncovered_clusters():
    X, y = _clusters([40, 50, 60, 70, 80])
    pool = NodeSet(X)
    for seed in range(5):
        labeled = [np.flatnonzero(y == 1)[seed], np.flatnonzero(y == 3)[seed]]
        rows = cold_start(pool, 3, random_state=seed, labeled=labeled, n_eigs=20)
        assert not np.isin(rows, labeled).any()
        assert sorted(y[rows].tolist()) == [0, 2, 4]


def test_same_seed_same_rows_and_array_equals_nodeset():
    X, _ = _clusters([30, 40, 50])
    a = cold_start(X, 4, random_state=3, n_eigs=10)
    b = cold_start(NodeSet(X), 4, random_state=np.random.RandomState(3), n_eigs=10)
    np.testing.assert_array_equal(a, b)


def test_graph_is_shared_with_a_classifier_of_the_same_options():
    X, y = _clusters([30, 40, 50], seed=5)
    pool = NodeSet(X)
    rows = cold_start(pool, 3, random_state=0, n_neighbors=8, n_eigs=12)
    builds = GRAPH_CACHE.builds
    clf = SpectralGraphClassifier("mgr", nodes=pool, n_neighbors=8, n_eigs=12)
    clf.fit(X[rows], y[rows])
    assert GRAPH_CACHE.builds == builds
    np.testing.assert_allclose(
        spectral_embedding(clf.graph_, 3),
        clf.eigenvectors_[:, :3] / np.linalg.norm(clf.eigenvectors_[:, :3], axis=1)[:, None],
    )


def test_fewer_distinct_rows_than_clusters_falls_back_to_farthest_points():
    # Three distinct points, each repeated: at most three k-means clusters.
    base = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    X = np.repeat(base, 4, axis=0) + 1e-9 * np.arange(12)[:, None]
    rows = cold_start(X, 5, random_state=0, n_neighbors=3, scale_neighbor=2, n_eigs=6)
    assert rows.size == 5 and np.unique(rows).size == 5
    assert np.unique(rows // 4).size == 3


def test_farthest_points_brute_force():
    rng = np.random.RandomState(0)
    E = rng.randn(40, 3)
    got = _farthest_points(E, [0, 7], [], 5)
    taken, expected = [0, 7], []
    for _ in range(5):
        gaps = [min(np.linalg.norm(E[i] - E[j]) for j in taken) if i not in taken else -1
                for i in range(40)]
        expected.append(int(np.argmax(gaps)))
        taken.append(expected[-1])
    assert got == expected


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n_instances": 0}, ValueError, "n_instances must be a positive int"),
        ({"n_instances": 2.0}, ValueError, "n_instances must be a positive int"),
        ({"n_instances": 30}, ValueError, "exceeds the 28 unlabeled rows"),
        ({"n_instances": 2, "labeled": [0, 30]}, ValueError, "outside X_pool's 30 rows"),
        ({"n_instances": 2, "loss": "ce"}, TypeError, "unknown option.*'loss'"),
        ({"n_instances": 2, "n_neighbors": 0}, ValueError, "'n_neighbors' parameter"),
    ],
)
def test_bad_arguments_raise(kwargs, error, message):
    X, _ = _clusters([10, 10, 10])
    kwargs.setdefault("labeled", [1, 2])
    with pytest.raises(error, match=message):
        cold_start(X, **kwargs)
