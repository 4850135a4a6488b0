"""The learner API: labels taught twice, conflicting labels, modAL's ``only_new``,
one option set for every strategy, and a clear error for modAL committees."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from skmcal import NodeSet, SpectralGraphClassifier
from skmcal.query import BATCH_MODES, model_change, random_sampling, sopt, uncertainty, vopt

modal_models = pytest.importorskip("modAL.models")
from modAL.models import ActiveLearner, Committee  # noqa: E402

STRATEGIES = (model_change, vopt, sopt, uncertainty, random_sampling)


@pytest.fixture(scope="module")
def pool():
    X, y = make_blobs(60, centers=[[0.0, 0.0], [4.0, 0.0]], cluster_std=0.8, random_state=0)
    return NodeSet(X), y


def _clf(nodes):
    return SpectralGraphClassifier("gr", nodes=nodes, n_neighbors=6, n_eigs=8)


def _first_rows(y, per_class=3):
    return np.concatenate([np.flatnonzero(y == c)[:per_class] for c in (0, 1)])


def test_a_row_taught_twice_counts_once(pool):
    nodes, y = pool
    rows = _first_rows(y)
    once = _clf(nodes).fit(nodes.data[rows], y[rows])
    again = np.concatenate([rows, rows[:2]])
    twice = _clf(nodes).fit(nodes.data[again], y[again])
    np.testing.assert_array_equal(twice.labeled_nodes_, once.labeled_nodes_)
    np.testing.assert_allclose(twice.coef_, once.coef_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(twice.transduction_, once.transduction_)


def test_a_row_taught_again_through_modal_counts_once(pool):
    nodes, y = pool
    rows = _first_rows(y)
    learner = ActiveLearner(estimator=_clf(nodes), X_training=nodes.data[rows], y_training=y[rows])
    learner.teach(nodes.data[rows[:1]], y[rows[:1]])
    assert learner.estimator.labeled_nodes_.size == rows.size


def test_conflicting_labels_for_one_node_name_the_rows(pool):
    nodes, y = pool
    rows = _first_rows(y)
    X = nodes.data[np.concatenate([rows, rows[:1]])]
    labels = np.concatenate([y[rows], [1 - y[rows[0]]]])
    with pytest.raises(ValueError, match=rf"Rows \[0, {rows.size}\] of X are one node"):
        _clf(nodes).fit(X, labels)


def test_teach_only_new_warns_that_earlier_labels_are_dropped(pool):
    nodes, y = pool
    rows = _first_rows(y, per_class=5)
    learner = ActiveLearner(estimator=_clf(nodes), X_training=nodes.data[rows], y_training=y[rows])
    new = np.concatenate([np.flatnonzero(y == c)[10:12] for c in (0, 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        learner.teach(nodes.data[new[::2]], y[new[::2]])  # adds labels: no warning
    assert learner.estimator.labeled_nodes_.size == rows.size + 2
    with pytest.warns(UserWarning, match=r"labels none of the 12 nodes labeled by the previous"):
        learner.teach(nodes.data[new[1::2]], y[new[1::2]], only_new=True)
    assert learner.estimator.labeled_nodes_.size == 2


@pytest.mark.parametrize("batch", BATCH_MODES)
@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda f: f.__name__)
def test_every_strategy_takes_every_batch_mode(pool, strategy, batch):
    nodes, y = pool
    rows = _first_rows(y)
    clf = _clf(nodes).fit(nodes.data[rows], y[rows])
    idx, scores = strategy(clf, nodes, 4, batch=batch, random_state=0)
    assert idx.size == np.unique(idx).size == scores.size == 4
    assert not np.isin(idx, clf.labeled_nodes_).any()


def test_random_sampling_is_uniform_in_every_batch_mode(pool):
    nodes, y = pool
    rows = _first_rows(y)
    clf = _clf(nodes).fit(nodes.data[rows], y[rows])
    picks = {
        batch: random_sampling(clf, nodes, 5, batch=batch, random_state=3)[0]
        for batch in BATCH_MODES
    }
    for batch in BATCH_MODES:
        np.testing.assert_array_equal(picks[batch], picks["topk"])
    counts = np.zeros(nodes.n_nodes)
    for seed in range(400):
        counts[random_sampling(clf, nodes, 5, batch="greedy", random_state=seed)[0]] += 1
    unlabeled = np.setdiff1d(np.arange(nodes.n_nodes), clf.labeled_nodes_)
    assert counts[clf.labeled_nodes_].sum() == 0
    # 2000 draws over 54 rows: about 37 each; a uniform sample stays well inside [15, 65].
    assert 15 < counts[unlabeled].min() and counts[unlabeled].max() < 65


def test_random_sampling_rejects_an_unknown_batch_mode(pool):
    nodes, y = pool
    rows = _first_rows(y)
    clf = _clf(nodes).fit(nodes.data[rows], y[rows])
    with pytest.raises(ValueError, match=r"batch must be one of .*got 'best'"):
        random_sampling(clf, nodes, 2, batch="best")


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda f: f.__name__)
def test_committees_are_rejected_by_name(pool, strategy):
    nodes, y = pool
    rows = _first_rows(y)
    members = [
        ActiveLearner(estimator=_clf(nodes), X_training=nodes.data[rows], y_training=y[rows])
        for _ in range(2)
    ]
    committee = Committee(learner_list=members)
    with pytest.raises(TypeError, match="modAL committees \\(Committee\\) are not supported"):
        strategy(committee, nodes, 1)
