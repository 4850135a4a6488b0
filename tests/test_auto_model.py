"""``model="auto"`` from 50 labels on: the summed model, or the first phase's spectral one.

The choice compares how well each model predicts the labels, each from the
others, each class weighing alike (``balanced_hits``). Here the summed model's
leave-one-out verdicts come from dense conditional Gaussians and the spectral
model's (with ``loss="mgr"``, where one Newton step is the refit) from explicit
dense refits without each label; a fit that takes a model must equal that
model's own fit.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_auto_scale import _dense_correct

import skmcal.classifier as module
from skmcal import SpectralGraphClassifier
from skmcal.classifier import AUTO_SUM_MIN_LABELS, balanced_hits

from _oracle import blobs, semi_supervised

N_EIGS = 10


def _data(seed=0):
    """120 points in 3 blobs, 51 of them labeled (17 per class)."""
    X, y_true, labeled = blobs(
        3, 40, centers=[[0.0, 0.0], [2.5, 0.0], [1.25, 2.2]], labels=np.arange(3),
        n_labeled=17, seed=seed,
    )  # fmt: skip
    y = semi_supervised(y_true, labeled)
    assert (y >= 0).sum() >= AUTO_SUM_MIN_LABELS
    return X, y


def test_balanced_hits_is_the_mean_of_the_class_recalls():
    assert balanced_hits([1, 1, 1, 0], [0, 0, 0, 1]) == 0.5
    assert balanced_hits([1, 0, 1, 1, 0, 0], [2, 2, 5, 5, 5, 9]) == pytest.approx(
        (1 / 2 + 2 / 3 + 0) / 3
    )
    assert balanced_hits([True] * 4, [3, 1, 3, 1]) == 1.0
    with pytest.raises(ValueError, match="one non-zero length"):
        balanced_hits([True, False], [0])
    with pytest.raises(ValueError, match="one non-zero length"):
        balanced_hits([], [])


def _dense_spectral_correct(first, y):
    """Whether each label is predicted right by the spectral ``mgr`` model refitted
    densely without it (``first``'s eigenpairs, tau, gamma and class weights)."""
    lam, V = first.eigenvalues_, first.eigenvectors_
    labeled = first.labeled_nodes_
    codes = y[labeled]
    Y = np.eye(first.classes_.size)[codes]
    w = first.class_weight_[codes]
    prior = lam + first.tau_**2

    def coef(rows):
        Vl = V[labeled[rows]]
        A = np.diag(prior) + (Vl.T * w[rows]) @ Vl / first.gamma_**2
        return np.linalg.solve(A, (Vl.T * w[rows]) @ Y[rows] / first.gamma_**2)

    every = np.arange(labeled.size)
    np.testing.assert_allclose(coef(every), first.coef_, rtol=1e-8, atol=1e-10)  # the oracle
    guess = np.array([np.argmax(V[labeled[j]] @ coef(np.delete(every, j))) for j in every])
    return guess == codes


@pytest.mark.parametrize("margin", [-np.inf, np.inf])
def test_auto_model_weighs_the_dense_leave_one_out_verdicts(monkeypatch, margin):
    """The two balanced shares the choice compares are those of the dense
    leave-one-out verdicts; the fit is the one of the model it takes."""
    X, y = _data()
    seen = []
    real = module.balanced_hits
    monkeypatch.setattr(
        module, "balanced_hits", lambda c, k: seen.append((np.asarray(c), k)) or real(c, k)
    )
    monkeypatch.setattr(module, "AUTO_MODEL_MARGIN", margin)
    clf = SpectralGraphClassifier("mgr", n_eigs=N_EIGS).fit(X, y)
    first = clf._first_phase_model
    assert first.model_ == "spectral" and np.ptp(first.class_weight_) == 0  # balanced: even labels
    summed_correct, spectral_correct = seen[0][0], seen[1][0]
    explicit_sum = SpectralGraphClassifier("mgr", model="sum", n_eigs=N_EIGS).fit(X, y)
    np.testing.assert_array_equal(summed_correct, _dense_correct(explicit_sum, y))
    np.testing.assert_array_equal(spectral_correct, _dense_spectral_correct(first, y))
    if margin < 0:
        assert clf.model_ == "spectral" and not hasattr(clf, "sum_prior_")
        expected = first
    else:
        assert clf.model_ == "sum"
        expected = explicit_sum
    np.testing.assert_array_equal(clf.transduction_, expected.transduction_)
    np.testing.assert_allclose(clf.predict_proba(X), expected.predict_proba(X), rtol=1e-12)
    assert clf.tau_ == expected.tau_ and clf.gamma_ == expected.gamma_


def test_auto_model_takes_the_first_phase_where_it_predicts_the_labels_better(monkeypatch):
    """A margin of 0: the spectral model exactly when its balanced share is the larger."""
    X, y = _data(seed=3)
    shares = []
    real = module.balanced_hits
    monkeypatch.setattr(
        module, "balanced_hits", lambda c, k: shares.append(real(c, k)) or shares[-1]
    )
    monkeypatch.setattr(module, "AUTO_MODEL_MARGIN", 0.0)
    clf = SpectralGraphClassifier(n_eigs=N_EIGS).fit(X, y)
    summed, spectral = shares
    assert clf.model_ == ("spectral" if spectral > summed else "sum")


def test_auto_model_keeps_its_first_phase_model_between_warm_refits():
    X, y = _data()
    clf = SpectralGraphClassifier(n_eigs=N_EIGS).fit(X, y)
    first = clf._first_phase_model
    y2 = y.copy()
    y2[np.flatnonzero(y < 0)[:5]] = 0
    clf.fit(X, y2)
    assert clf._first_phase_model is first  # refitted warm
    np.testing.assert_array_equal(first.labeled_nodes_, clf.labeled_nodes_)
    clf.set_params(n_eigs=N_EIGS + 2).fit(X, y2)
    assert clf._first_phase_model is not first  # a new parameter: a new one
    assert clf._first_phase_model.n_eigs == N_EIGS + 2
    clf.set_params(warm_start=False).fit(X, y2)
    assert clf._first_phase_model is not first


def test_auto_model_below_the_switch_and_explicit_models_fit_one_model():
    X, y = _data()
    few = y.copy()
    few[np.flatnonzero(few >= 0)[AUTO_SUM_MIN_LABELS - 10 :]] = -1
    clf = SpectralGraphClassifier(n_eigs=N_EIGS).fit(X, few)
    assert clf.model_ == "spectral" and not hasattr(clf, "_first_phase_model")
    for model in ("sum", "spectral"):
        clf = SpectralGraphClassifier("mgr", model=model, n_eigs=N_EIGS).fit(X, y)
        assert clf.model_ == model and not hasattr(clf, "_first_phase_model")
