"""Cold start (``skmcal.cold_start``): coverage of well separated clusters, options, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skmcal import GRAPH_CACHE, NodeSet, SpectralGraphClassifier, cold_start
from skmcal.classifier import AUTO_KERNELS
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
    rows = cold_start(pool, 3, random_state=0, kernel="gaussian", n_neighbors=8, n_eigs=12)
    builds = GRAPH_CACHE.builds
    clf = SpectralGraphClassifier("mgr", nodes=pool, kernel="gaussian", n_neighbors=8, n_eigs=12)
    clf.fit(X[rows], y[rows])
    assert GRAPH_CACHE.builds == builds
    np.testing.assert_allclose(
        spectral_embedding(clf.graph_, 3),
        clf.eigenvectors_[:, :3] / np.linalg.norm(clf.eigenvectors_[:, :3], axis=1)[:, None],
    )


def test_auto_kernel_without_labels_is_the_gaussian_graph():
    """cold_start has no labels to choose a kernel by: kernel="auto" is the Gaussian graph,
    which a classifier with kernel="auto" then shares (building only the other candidate)."""
    X, y = _clusters([30, 40, 50], seed=5)
    pool = NodeSet(X)
    rows = cold_start(pool, 3, random_state=0, n_neighbors=8, n_eigs=12)
    assert_array_equal(
        rows, cold_start(pool, 3, random_state=0, kernel="gaussian", n_neighbors=8, n_eigs=12)
    )
    builds = GRAPH_CACHE.builds
    clf = SpectralGraphClassifier("mgr", nodes=pool, n_neighbors=8, n_eigs=12)
    clf.fit(X[rows], y[rows])
    assert GRAPH_CACHE.builds == builds + len(AUTO_KERNELS) - 1


def test_fewer_distinct_rows_than_clusters_falls_back_to_farthest_points():
    # Three distinct points, each repeated: at most three k-means clusters.
    base = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    X = np.repeat(base, 4, axis=0) + 1e-9 * np.arange(12)[:, None]
    rows = cold_start(X, 5, random_state=0, n_neighbors=3, scale_neighbor=2, n_eigs=6)
    assert rows.size == 5 and np.unique(rows).size == 5
    assert np.unique(rows // 4).size == 3


def test_equal_rows_are_one_point():
    """Copies of a point: one row of it at most, none of a point labeled through a copy."""
    base = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0], [-6.0, 0.5], [0.5, -6.0]])
    X = np.repeat(base, 20, axis=0)  # 5 distinct points, rows 20 p .. 20 p + 19
    first = cold_start(X, 5, random_state=0, n_neighbors=3, scale_neighbor=2, n_eigs=4)
    assert sorted((first // 20).tolist()) == [0, 1, 2, 3, 4]
    assert np.all(first % 20 == 0)  # the first row of each point stands for it
    rows = cold_start(X, 4, random_state=0, labeled=[3], n_neighbors=3, scale_neighbor=2, n_eigs=4)
    assert sorted((rows // 20).tolist()) == [1, 2, 3, 4]  # point 0 is labeled through row 3
    with pytest.raises(ValueError, match="exceeds the 5 unlabeled distinct points of X_pool"):
        cold_start(X, 6, n_neighbors=3, scale_neighbor=2, n_eigs=4)
    with pytest.raises(ValueError, match="exceeds the 4 unlabeled distinct points"):
        cold_start(X, 5, labeled=[45], n_neighbors=3, scale_neighbor=2, n_eigs=4)


def test_farthest_points_brute_force():
    rng = np.random.RandomState(0)
    E = rng.randn(40, 3)
    got = _farthest_points(E, [0, 7], [], 5, np.ones(40, dtype=bool))
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
        ({"n_instances": 30}, ValueError, "exceeds the 28 unlabeled distinct points"),
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


# ------------------------------------------------- the loop from zero labels
def test_experiment_from_zero_labels_grows_its_classes(tmp_path):
    from skmcal.experiment import run_experiment

    X, y = _clusters([60, 60, 60, 60])
    runs = {"strategies": ["mc:mgr", "rand:mgr"], "batch_size": 2, "iterations": 4}
    result = run_experiment(
        (X, y), n_initial=0, cold_start=1, trials=1, seed=0, n_eigs=10, progress=False,
        out=tmp_path, **runs,
    )
    choices, results = result.choices, result.results
    for strategy in ("mc:mgr", "rand:mgr"):
        mine = choices[choices["strategy"] == strategy]
        first = mine[mine["iteration"] == 0]["node"].to_numpy()
        # One label, one class: no model, the accuracy of predicting that class.
        assert first.size == 1
        row = results[(results["strategy"] == strategy) & (results["iteration"] == 0)]
        assert row["accuracy"].item() == pytest.approx(59 / 239)
        # Iteration 1 is a cold start away from the labeled cluster; the data
        # being four clusters, it brings the other three classes.
        second = mine[mine["iteration"] == 1]["node"].to_numpy()
        np.testing.assert_array_equal(
            second, cold_start(X, 2, _rng_of_trial(0), labeled=first, n_eigs=10)
        )
        assert np.unique(y[np.r_[first, second]]).size == 3
        # Then the model takes over and, with every class labeled, classifies well.
        assert results[results["strategy"] == strategy]["n_labeled"].tolist() == [1, 3, 5, 7, 9]
    assert result.results["accuracy"].iloc[-1] > 0.95
    assert result.config["cold_start"] == 1 and result.config["n_initial"] == 0
    # The same strategy-independent first label in every run of the trial.
    assert choices[choices["iteration"] == 0]["node"].nunique() == 1
    again = run_experiment(
        (X, y), n_initial=0, cold_start=1, trials=1, seed=0, n_eigs=10, progress=False,
        out=tmp_path, **runs,
    )
    assert len(again.runs_skipped) == 2 and not again.runs_done


def _rng_of_trial(trial, seed=0):
    """The query stream of a trial of run_experiment (its second trial seed)."""
    from skmcal.experiment import _trial_seeds

    return np.random.RandomState(_trial_seeds(seed, trial)[1])


def test_experiment_cold_start_options_are_checked():
    from skmcal.experiment import run_experiment

    X, y = _clusters([20, 20])
    base = {"strategies": ["mc:gr"], "iterations": 1, "trials": 1, "progress": False}
    with pytest.raises(ValueError, match="n_initial=0 starts from no label"):
        run_experiment((X, y), n_initial=0, **base)
    with pytest.raises(ValueError, match="it needs n_initial=0, got n_initial=2"):
        run_experiment((X, y), n_initial=2, cold_start=3, **base)
    with pytest.raises(ValueError, match="cold_start must be an int >= 1"):
        run_experiment((X, y), n_initial=0, cold_start=0, **base)
    # With cold_start, n_initial="auto" is 0.
    assert run_experiment((X, y), cold_start=2, n_eigs=8, **base).config["n_initial"] == 0


def test_cli_initial_zero_with_cold_start(tmp_path, capsys):
    from skmcal.cli import main

    X, y = _clusters([40, 40])
    np.savez(tmp_path / "two.npz", X=X, y=y)
    argv = ["run", "--dataset", str(tmp_path / "two.npz"), "--strategies", "mc:gr",
            "--initial", "0", "--cold-start", "2", "--batch", "2", "--iterations", "2",
            "--trials", "1", "--n-eigs", "8", "--no-plots", "--no-progress",
            "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    assert json.loads((tmp_path / "out" / "config.json").read_text())["cold_start"] == 2
    assert main([*argv[:-2], "--out", str(tmp_path / "bad"), "--initial", "1"]) == 2
    assert "needs n_initial=0" in capsys.readouterr().err
