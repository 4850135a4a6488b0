"""``loss="auto"``, ``model="auto"``: the spectral model while labels are few, then the summed one.

Each resolved fit must equal the fit of the explicit configuration it names
(same hyperparameters, latent values and covariance), whichever fits came
before it on the same estimator.
"""

from __future__ import annotations

import numpy as np
import pytest

import skmcal.classifier as module
from skmcal import SpectralGraphClassifier
from skmcal.estimator_checks import expected_failed_checks
from skmcal.evidence import select_hyperparameters
from skmcal.losses import LOSSES

from _oracle import blobs, semi_supervised

CENTERS = [[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]]
N_LABELED = 24  # 8 per class


def _data(n_labeled_per_class=8, seed=0):
    X, y_true, labeled = blobs(
        3, 30, centers=CENTERS, labels=np.arange(3), n_labeled=n_labeled_per_class, seed=seed
    )
    return X, semi_supervised(y_true, labeled)


def _assert_same_fit(auto, explicit, X):
    assert (auto.tau_, auto.gamma_) == (explicit.tau_, explicit.gamma_)
    np.testing.assert_array_equal(auto.predict_proba(X), explicit.predict_proba(X))
    np.testing.assert_array_equal(auto.posterior_cov(), explicit.posterior_cov())


def _fit(X, y, **params):
    return SpectralGraphClassifier(n_eigs=10, cache=False, **params).fit(X, y)


@pytest.mark.parametrize("loss", ["auto", "mgr"])
def test_auto_model_is_spectral_below_the_label_threshold_and_full_from_it(monkeypatch, loss):
    X, y = _data()
    assert np.count_nonzero(y != -1) == N_LABELED
    below = _fit(X, y, loss=loss, model="auto")  # 24 labels < 50
    assert below.model_ == "spectral"
    assert below.loss_ == ("ce" if loss == "auto" else "mgr")
    _assert_same_fit(below, _fit(X, y, loss=below.loss_, model="spectral"), X)

    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", N_LABELED)  # the threshold itself
    at = _fit(X, y, loss=loss, model="auto")
    assert (at.model_, at.loss_) == ("sum", "mgr")
    _assert_same_fit(at, _fit(X, y, loss="mgr", model="sum"), X)
    assert at.sum_prior_ == _fit(X, y, loss="mgr", model="sum").sum_prior_
    assert at.get_params()["model"] == "auto" and at.get_params()["loss"] == loss

    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", N_LABELED + 1)
    assert _fit(X, y, loss=loss, model="auto").model_ == "spectral"


def test_auto_model_takes_the_few_labels_gammas_below_the_label_threshold(monkeypatch):
    """Spectral ce under model="auto", fewer labels than AUTO_SUM_MIN_LABELS: (tau, gamma)
    of largest evidence over the taus and AUTO_FEW_LABELS_GAMMAS, evaluated here by
    hand; from the threshold on (a Newton loss stays spectral), the full grid of
    model="spectral". On labels the graph does not fit (three blobs, labels shuffled)
    the full grid's evidence takes a larger gamma."""
    X, y_true, labeled = blobs(3, 30, centers=CENTERS, labels=np.arange(3), n_labeled=8, seed=1)
    y_true = np.random.RandomState(1).permutation(y_true)
    y = semi_supervised(y_true, labeled)
    auto = _fit(X, y, kernel="gaussian")
    assert (auto.model_, auto.loss_) == ("spectral", "ce")
    graph, ce = auto.graph_, LOSSES["ce"]
    codes = y[auto.labeled_nodes_]
    balanced = codes.size / (3 * np.bincount(codes))  # class_weight="auto" in this phase
    tau, gamma, _ = select_hyperparameters(
        ce, graph.eigenvalues, graph.eigenvectors[auto.labeled_nodes_],
        ce.encode(codes, 3), auto._spectral_taus(graph, few=True),
        module.AUTO_FEW_LABELS_GAMMAS, n_nodes=graph.n_nodes, weights=balanced[codes],
    )  # fmt: skip
    assert (auto.tau_, auto.gamma_) == (tau, gamma)
    explicit = _fit(X, y, loss="ce", model="spectral", kernel="gaussian", tau=tau, gamma=gamma,
                    class_weight="balanced")  # fmt: skip
    _assert_same_fit(auto, explicit, X)
    searched = _fit(X, y, loss="ce", model="spectral", kernel="gaussian")
    assert searched.gamma_ > auto.gamma_

    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", N_LABELED)
    _assert_same_fit(_fit(X, y, loss="ce", kernel="gaussian"), searched, X)


def test_auto_model_with_few_labels_leaves_out_the_taus_of_a_constant_prior(monkeypatch):
    """Points without cluster structure (Gaussian noise in 30 dimensions), labels at
    random: the graph's eigenvalues are large, and at tau = 0.01 and 0.03 the smoothest
    eigenvector carries over 90% of the prior's variance (computed here by hand).
    model="auto" with few labels searches tau = 0.1 alone, where the evidence at
    AUTO_FEW_LABELS_GAMMAS over every tau takes one of the others (0.03 with the
    balanced weights of class_weight="auto")."""
    rng = np.random.RandomState(5)
    X, y_true = rng.randn(150, 30), rng.randint(0, 3, 150)
    labeled = rng.choice(150, N_LABELED, replace=False)
    y = semi_supervised(y_true, labeled)

    def fit():
        return SpectralGraphClassifier(kernel="gaussian", n_eigs=40, cache=False).fit(X, y)

    auto = fit()
    lam = auto.graph_.eigenvalues
    share = {t: (1 / (lam.min() + t**2)) / np.sum(1 / (lam + t**2)) for t in module.DEFAULT_TAUS}
    assert all(t**2 <= np.median(lam) for t in module.DEFAULT_TAUS)
    kept = [t for t in module.DEFAULT_TAUS if share[t] <= module.AUTO_FEW_LABELS_MAX_SHARE]
    assert kept == [0.1] and min(share[0.01], share[0.03]) > 0.9
    ce, V = LOSSES["ce"], auto.graph_.eigenvectors[auto.labeled_nodes_]
    codes = y[auto.labeled_nodes_]
    balanced = codes.size / (3 * np.bincount(codes))  # class_weight="auto": balanced
    tau, gamma, _ = select_hyperparameters(
        ce, lam, V, ce.encode(codes, 3), kept, module.AUTO_FEW_LABELS_GAMMAS,
        n_nodes=auto.graph_.n_nodes, weights=balanced[codes],
    )  # fmt: skip
    assert (auto.tau_, auto.gamma_) == (tau, gamma)
    monkeypatch.setattr(module, "AUTO_FEW_LABELS_MAX_SHARE", 1.0)
    assert fit().tau_ in (0.01, 0.03)  # a prior of share > 0.9


def test_auto_model_threshold_does_not_grow_with_the_classes(monkeypatch):
    """12 classes of 2 labels each reach the threshold of 24 labels like 3 of 8."""
    centers = [[4.0 * (i % 4), 4.0 * (i // 4)] for i in range(12)]
    X, y_true, labeled = blobs(12, 15, centers=centers, labels=np.arange(12), n_labeled=2)
    y = semi_supervised(y_true, labeled)
    assert np.count_nonzero(y != -1) == N_LABELED
    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", N_LABELED)
    assert _fit(X, y, loss="auto", model="auto").model_ == "sum"
    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", N_LABELED + 1)
    assert _fit(X, y, loss="auto", model="auto").model_ == "spectral"


def test_auto_model_stays_spectral_above_the_node_limit_and_with_newton_losses(monkeypatch):
    X, y = _data()
    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", 1)
    monkeypatch.setattr(module, "AUTO_SUM_MAX_NODES", X.shape[0] - 1)
    auto = _fit(X, y, loss="auto", model="auto")
    assert (auto.model_, auto.loss_) == ("spectral", "ce")
    _assert_same_fit(auto, _fit(X, y, loss="ce"), X)
    monkeypatch.setattr(module, "AUTO_SUM_MAX_NODES", X.shape[0])
    assert _fit(X, y, loss="auto", model="auto").model_ == "sum"
    ce = _fit(X, y, loss="ce", model="auto")  # the summed model takes gr/mgr only
    assert (ce.model_, ce.loss_) == ("spectral", "ce")


def test_refits_across_the_switch_equal_fits_from_scratch(monkeypatch):
    """Growing labels switch spectral ce -> summed mgr; a warm refit must not keep the old model."""
    X, y_few = _data(4)
    _, y_many = _data(8)
    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", N_LABELED)
    clf = SpectralGraphClassifier(loss="auto", model="auto", n_eigs=10, cache=False)
    for y, model in ((y_few, "spectral"), (y_many, "sum"), (y_few, "spectral")):
        clf.fit(X, y)
        assert clf.model_ == model
        _assert_same_fit(clf, _fit(X, y, loss=clf.loss_, model=model), X)
        assert hasattr(clf, "sum_prior_") is (model == "sum")


@pytest.mark.parametrize(("model", "loss"), [("spectral", "ce"), ("poisson", "ce"),
                                             ("full", "mgr"), ("sum", "mgr")])  # fmt: skip
def test_auto_loss_with_a_given_model(model, loss):
    X, y = _data()
    auto = _fit(X, y, loss="auto", model=model)
    assert (auto.model_, auto.loss_) == (model, loss)
    _assert_same_fit(auto, _fit(X, y, loss=loss, model=model), X)


def test_auto_loss_refuses_a_tau_too_small_for_the_loss_it_resolves_to():
    X, y = _data()
    with pytest.raises(ValueError, match="tau=1e-05 is too small for loss='ce'"):
        _fit(X, y, loss="auto", tau=1e-5)  # spectral: ce
    assert _fit(X, y, loss="auto", model="full", tau=1e-5).loss_ == "mgr"


def test_auto_loss_and_model_in_the_expected_failed_checks():
    closed_form = "check_non_transformer_estimators_n_iter"
    for model, expected in (("auto", True), ("full", True), ("spectral", False)):
        checks = expected_failed_checks(SpectralGraphClassifier(loss="auto", model=model))
        assert (closed_form in checks) is expected


def test_loss_names_auto_among_the_accepted_values():
    X, y = _data()
    with pytest.raises(ValueError, match="'auto'"):
        SpectralGraphClassifier(loss="automatic").fit(X, y)
