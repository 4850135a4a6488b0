"""Stopping rules (``skmcal.stopping``) on constructed sequences and in real loops."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import cohen_kappa_score

from skmcal import NodeSet, SpectralGraphClassifier, acquisition, model_change, patch_modal
from skmcal.stopping import (
    LabelBudget,
    ModelChangeBelow,
    StabilizingPredictions,
    cohen_kappa,
    make_rule,
)


class ScriptedClassifier(SpectralGraphClassifier):
    """A 'fitted' classifier whose transduction and labeled nodes follow a script."""

    def __init__(self, n_nodes):
        super().__init__()
        self.node_set_ = NodeSet(np.arange(n_nodes, dtype=float)[:, None])
        self.classes_ = np.array([0, 1, 2])
        self.labeled_nodes_ = np.array([0, 1], dtype=np.intp)
        self.predictions = np.zeros(n_nodes, dtype=int)

    @property
    def transduction_(self):
        return self.predictions


def test_cohen_kappa_equals_sklearn_and_handles_constant_labelings():
    rng = np.random.RandomState(0)
    for _ in range(20):
        a, b = rng.randint(0, 4, 50), rng.randint(0, 3, 50)
        b[:25] = a[:25]
        assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert cohen_kappa(["x", "y", "x"], ["x", "y", "x"]) == 1.0
    assert cohen_kappa(np.zeros(5), np.zeros(5)) == 1.0  # p_e = 1: identical constants
    assert cohen_kappa(np.zeros(4), np.r_[0, 0, 1, 1]) == 0.0
    with pytest.raises(ValueError, match="one length"):
        cohen_kappa([1, 2], [1, 2, 3])


def test_stabilizing_predictions_on_a_constructed_sequence():
    clf = ScriptedClassifier(100)
    rule = StabilizingPredictions(threshold=0.99, window=3, stop_set=40, random_state=0)
    rng = np.random.RandomState(1)
    base = rng.randint(0, 3, 100)
    # Predictions that change on 20, 10, 0, 0, 1 (of 100) nodes, then stay put.
    changes = [20, 10, 0, 0, 1, 0, 0, 0]
    expected_kappas, previous = [], None
    stops = []
    for n_changed in changes:
        current = base.copy()
        flip = rng.choice(100, n_changed, replace=False)
        current[flip] = (current[flip] + 1) % 3
        clf.predictions = current
        rule.update(clf)
        assert rule.stop_nodes_.size == 40 and np.unique(rule.stop_nodes_).size == 40
        seen = current[rule.stop_nodes_]
        if previous is not None:
            expected_kappas.append(cohen_kappa_score(previous, seen))
        previous = seen
        base = current
        stops.append(rule.should_stop)
    np.testing.assert_allclose(rule.kappas_, expected_kappas, atol=1e-12)
    # The stop test by hand: mean of the last three kappas >= 0.99.
    by_hand = [
        len(expected_kappas[:i]) >= 3 and np.mean(expected_kappas[:i][-3:]) >= 0.99
        for i in range(len(changes))
    ]
    assert stops == by_hand
    assert stops[-1] and not stops[2]
    assert rule.n_updates_ == len(changes) and rule.n_labels_ == 2


def test_stop_set_sizes_and_fixed_draw():
    clf = ScriptedClassifier(50)
    assert StabilizingPredictions(stop_set=2000).update(clf).stop_nodes_.size == 50
    assert StabilizingPredictions(stop_set=0.2).update(clf).stop_nodes_.size == 10
    rule = StabilizingPredictions(stop_set=5, random_state=3).update(clf)
    drawn = rule.stop_nodes_.copy()
    rule.update(clf)
    np.testing.assert_array_equal(rule.stop_nodes_, drawn)
    with pytest.raises(ValueError, match="fewer than when the stop set"):
        StabilizingPredictions(stop_set=50).update(clf).update(ScriptedClassifier(20))



def test_stabilizing_predictions_refuses_a_learner_with_other_nodes():
    rule = StabilizingPredictions(stop_set=5, random_state=0).update(ScriptedClassifier(50))
    rule.update(ScriptedClassifier(50))  # other objects, the same nodes: the same loop
    other = ScriptedClassifier(50)
    other.node_set_ = NodeSet(np.arange(50, 100, dtype=float)[:, None])
    with pytest.raises(ValueError, match=r"has other nodes \(as many, 50, but other data\) than "
                                         r"when the stop set was drawn \(50 nodes\).*make a new "
                                         r"rule for each loop"):
        rule.update(other)
    with pytest.raises(ValueError, match=r"has 80 nodes, more than when the stop set was drawn"):
        rule.update(ScriptedClassifier(80))
    assert rule.n_updates_ == 2 and len(rule.kappas_) == 1


def test_label_budget_counts_distinct_labeled_nodes():
    clf = ScriptedClassifier(30)
    rule = LabelBudget(4)
    for labeled, stop in [([0, 1], False), ([0, 1, 2, 2, 1], False), ([0, 1, 2, 5], True)]:
        clf.labeled_nodes_ = np.array(labeled)
        assert rule.update(clf).should_stop is stop
    assert rule.n_labels_ == 4


def _blob_loop(loss, n_rounds):
    X, y = make_blobs(200, centers=3, cluster_std=1.2, random_state=0)
    pool = NodeSet(X)
    labeled = [int(np.flatnonzero(y == c)[0]) for c in range(3)]
    clf = SpectralGraphClassifier(loss, nodes=pool, n_eigs=15)
    for _ in range(n_rounds):
        clf.fit(X[labeled], y[labeled])
        yield clf
        idx, _ = model_change(clf, pool, 3, random_state=0)
        labeled += idx.tolist()


@pytest.mark.parametrize("loss", ["mgr", "ce"])
def test_model_change_rule_is_the_largest_score_of_a_full_sweep(loss):
    rule = ModelChangeBelow(tol=1e-9)
    absolute = ModelChangeBelow(tol=1e-9, relative=False)
    scores = []
    for clf in _blob_loop(loss, 4):
        rule.update(clf)
        absolute.update(clf)
        unlabeled = np.setdiff1d(np.arange(200), clf.labeled_nodes_)
        view = clf.posterior_
        scores.append(acquisition.model_change(view, unlabeled).max())
        assert not rule.should_stop
    np.testing.assert_allclose(absolute.scores_, scores, rtol=1e-10)
    assert rule.scores_[-1] == pytest.approx(scores[-1] / np.linalg.norm(clf.coef_), rel=1e-10)


def test_model_change_rule_stops_at_the_first_score_below_tol():
    scores = [ModelChangeBelow(1.0).update(clf).scores_[0] for clf in _blob_loop("mgr", 5)]
    tol = sorted(scores)[1]  # the two smallest scores are at or below tol
    rule = ModelChangeBelow(tol)
    stops = [rule.update(clf).should_stop for clf in _blob_loop("mgr", 5)]
    assert stops == [s <= tol for s in scores]
    assert sum(stops) == 2


def test_rules_in_a_modal_loop():
    ActiveLearner = pytest.importorskip("modAL.models").ActiveLearner
    patch_modal()  # modAL 0.4.2.1's teach() on scikit-learn >= 1.8
    X, y = make_blobs(300, centers=3, cluster_std=1.0, random_state=1)
    pool = NodeSet(X)
    labeled = np.array([np.flatnonzero(y == c)[0] for c in range(3)])
    learner = ActiveLearner(
        estimator=SpectralGraphClassifier("mgr", nodes=pool, n_eigs=15),
        query_strategy=model_change,
        X_training=X[labeled],
        y_training=y[labeled],
    )
    rules = [StabilizingPredictions(random_state=0), LabelBudget(60)]
    for rule in rules:
        rule.update(learner)
    while not any(rule.should_stop for rule in rules):
        idx, _ = learner.query(pool, n_instances=5, random_state=0)
        learner.teach(X[idx], y[idx])
        for rule in rules:
            rule.update(learner)
    n_labels = learner.estimator.labeled_nodes_.size
    assert rules[0].should_stop and n_labels < 60  # separated blobs stabilise early
    assert rules[0].n_labels_ == n_labels == 3 + 5 * len(rules[0].kappas_)


def test_make_rule_and_errors():
    rule = make_rule("KAPPA", random_state=0)
    assert isinstance(rule, StabilizingPredictions) and rule.threshold == 0.99
    assert make_rule("mc:0.01").tol == 0.01 and make_rule("budget:300").n_labels == 300
    for spec, message in [
        ("stability:0.9", "Unknown stopping rule 'stability'"),
        ("budget", "needs a value"),
        ("budget:1.5", "must be an int"),
        ("kappa:high", "must be a number"),
        ("kappa:1.5", "threshold must be a float in"),
        ("mc:0", "tol must be a float > 0"),
        ("budget:0", "n_labels must be an int >= 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_rule(spec)
    with pytest.raises(TypeError, match="must be a string"):
        make_rule(0.99)
    for bad in [{"window": 0}, {"stop_set": 0}, {"stop_set": 1.5}, {"stop_set": True}]:
        with pytest.raises(ValueError):
            StabilizingPredictions(**bad)
    with pytest.raises(TypeError, match="SpectralGraphClassifier"):
        LabelBudget(3).update(object())


# ------------------------------------------------ rules in the experiment loop
def test_experiment_runs_end_where_a_rule_says_stop(tmp_path):
    from skmcal.experiment import run_experiment

    X, y = make_blobs(240, centers=3, cluster_std=1.0, random_state=2)
    options = {
        "strategies": ["mc:mgr", "rand:mgr"], "batch_size": 3, "iterations": 12, "trials": 2,
        "n_eigs": 12, "stop": ["budget:21", "kappa:0.999"], "progress": False,
    }
    result = run_experiment((X, y), out=tmp_path, **options)
    stops, results = result.stops, result.results
    assert set(stops.columns) == {"trial", "strategy", "iteration", "rule"}
    assert len(stops) == 4  # every run ends by the budget, if not before by kappa
    for row in stops.itertuples():
        run = results[(results["trial"] == row.trial) & (results["strategy"] == row.strategy)]
        assert run["iteration"].max() == row.iteration
        assert run["n_labeled"].max() == 6 + 3 * row.iteration <= 21
        assert row.rule == "kappa:0.999" or run["n_labeled"].max() == 21
    # By hand: the budget of 21 labels is reached at iteration 5.
    assert set(stops.loc[stops["rule"] == "budget:21", "iteration"]) <= {5}
    # A rerun resumes every run, stopped ones included; a cut run is redone.
    lines = (tmp_path / "results.csv").read_text().splitlines()
    (tmp_path / "results.csv").write_text("\n".join(lines[:-1]) + "\n")
    again = run_experiment((X, y), out=tmp_path, **options)
    assert len(again.runs_skipped) == 3 and len(again.runs_done) == 1
    outcome = ["trial", "iteration", "n_labeled", "strategy", "accuracy"]
    assert again.results[outcome].equals(result.results[outcome])
    assert again.stops.equals(result.stops)
    with pytest.raises(ValueError, match="Unknown stopping rule 'often'"):
        run_experiment((X, y), **{**options, "stop": "often"})


def test_cli_stop_option(tmp_path, capsys):
    from skmcal.cli import main

    argv = ["run", "--strategies", "mc:gr", "--batch", "5", "--iterations", "6",
            "--trials", "1", "--no-plots", "--no-progress", "--out", str(tmp_path)]
    assert main([*argv, "--stop", "budget:12"]) == 0
    printed = capsys.readouterr().out
    assert "stopped: mc:gr at iteration(s) [2]" in printed
    assert (tmp_path / "stops.csv").read_text().splitlines()[1] == "0,mc:gr,2,budget:12"
    assert main([*argv[:-1], str(tmp_path / "bad"), "--stop", "budget"]) == 2
    assert "needs a value" in capsys.readouterr().err
