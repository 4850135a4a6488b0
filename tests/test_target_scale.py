"""``target_scale``: class-scaled targets of the Gaussian losses, against brute force.

A label of class ``c`` is fitted to ``s_c`` times its one-hot row (``gr``: to
``-s_0`` or ``+s_1``), ``s_c = (n / (n_classes n_c))^p``. Checked against the
formula by hand, a dense solve of the spectral model with those targets, the
dense summed model (its grid choice by the leave-one-out density and its mean),
the full-graph model's linearity in the targets, and the brute-force
look-ahead with the candidate's pseudo-target scaled alike.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

import skmcal.classifier as module
from skmcal import SpectralGraphClassifier, acquisition
from skmcal.losses import LOSSES, target_scales
from skmcal.poisson import poisson_learning

from _oracle import (
    BINARY,
    UNBALANCED_COUNTS,
    assert_close,
    dense_poisson,
    dense_sum_choice,
    dense_sum_prior,
    look_ahead_setup,
    unbalanced_blobs,
)


def _fit(X, y, **params):
    return SpectralGraphClassifier(kernel="gaussian", n_eigs=10, cache=False, **params).fit(X, y)


def test_target_scales_by_hand():
    codes = np.repeat([0, 1, 2], UNBALANCED_COUNTS)
    n, k = UNBALANCED_COUNTS.sum(), 3
    np.testing.assert_allclose(target_scales(codes, k, 1.0), n / (k * UNBALANCED_COUNTS))
    np.testing.assert_allclose(target_scales(codes, k, 0.5), np.sqrt(n / (k * UNBALANCED_COUNTS)))
    np.testing.assert_array_equal(target_scales(codes, k, 0.0), np.ones(3))
    np.testing.assert_array_equal(target_scales([0, 1, 1, 0], 2, 0.5), np.ones(2))  # even
    with pytest.raises(ValueError, match=r"each of the 3 classes.*\[2, 0, 1\]"):
        target_scales([0, 0, 2], 3, 0.5)
    with pytest.raises(ValueError, match="power must be a non-negative float; got -1"):
        target_scales(codes, k, -1.0)


def test_encode_and_pseudo_targets_carry_the_class_scale():
    s = np.array([0.5, 2.0, 3.0])
    np.testing.assert_array_equal(
        LOSSES["mgr"].encode([2, 0], 3, s), [[0.0, 0.0, 3.0], [0.5, 0.0, 0.0]]
    )
    np.testing.assert_array_equal(
        LOSSES["mgr"].pseudo_targets(np.array([[0.1, 0.7, 0.2]]), s), [[0.0, 2.0, 0.0]]
    )
    np.testing.assert_array_equal(LOSSES["gr"].encode([0, 1], 2, s[:2]), [-0.5, 2.0])
    np.testing.assert_array_equal(
        LOSSES["gr"].pseudo_targets(np.array([-0.3, 0.0, 4.0]), s[:2]), [-0.5, 2.0, 2.0]
    )
    np.testing.assert_array_equal(LOSSES["gr"].encode([0, 1], 2), [-1.0, 1.0])


@pytest.mark.parametrize("loss", ["gr", "mgr"])
@pytest.mark.parametrize("target_scale", ["sqrt", "balanced"])
def test_scaled_spectral_fit_is_the_dense_solve(loss, target_scale):
    """The spectral model's MAP at its (tau_, gamma_) with the scaled targets written
    out here; the classifier's scales are the formula's, and (tau_, gamma_) the
    unscaled fit's (the choice is made on targets of one)."""
    X, y = unbalanced_blobs(2 if loss in BINARY else 3)
    clf = _fit(X, y, loss=loss, model="spectral", target_scale=target_scale)
    k = clf.classes_.size
    counts = UNBALANCED_COUNTS[:k]
    power = {"sqrt": 0.5, "balanced": 1.0}[target_scale]
    s = (counts.sum() / (k * counts)) ** power
    np.testing.assert_allclose(clf.target_scale_, s, rtol=1e-12)
    labeled = np.flatnonzero(y != -1)
    if loss in BINARY:
        T = np.where(y[labeled] == 1, s[1], -s[0])
    else:
        T = np.eye(k)[y[labeled]] * s[y[labeled]][:, None]
    P, g = clf.eigenvectors_[labeled], clf.gamma_
    H = np.diag(clf.eigenvalues_ + clf.tau_**2) + P.T @ P / g**2
    np.testing.assert_allclose(clf.posterior_.coef, np.linalg.solve(H, P.T @ T) / g**2,
                               rtol=1e-9, atol=1e-12)  # fmt: skip
    unscaled = _fit(X, y, loss=loss, model="spectral", target_scale=None)
    assert (unscaled.tau_, unscaled.gamma_) == (clf.tau_, clf.gamma_)
    assert not np.allclose(unscaled.posterior_.coef, clf.posterior_.coef)


def test_sum_model_is_the_dense_model_of_square_root_scaled_targets():
    """model="sum" with target_scale="sqrt": the grid point of largest leave-one-out
    density of the dense summed prior with targets of one (the choice is unscaled),
    and there the posterior mean of targets s_c e_c (s_c the square root of
    n / (n_classes n_c)): the unscaled fit's latent values, class c's times s_c."""
    X, y = unbalanced_blobs()
    # the sparse solves well below the values' tolerance (tol="auto" holds them to ~1e-6)
    clf = _fit(X, y, loss="mgr", model="sum", target_scale="sqrt", tol=1e-11)
    labeled = np.flatnonzero(y != -1)
    s = np.sqrt(UNBALANCED_COUNTS.sum() / (3 * UNBALANCED_COUNTS))
    np.testing.assert_allclose(clf.target_scale_, s, rtol=1e-12)
    np.testing.assert_allclose(clf.posterior_.target_scale, s, rtol=1e-12)
    Y = np.eye(3)[y[labeled]] * s[y[labeled]][:, None]
    W, lam, V = clf.graph_.weights, clf.eigenvalues_, clf.eigenvectors_
    p = clf.sum_prior_
    choice = dense_sum_choice(clf, labeled, np.eye(3)[y[labeled]])
    assert (p["tau_s"], p["tau_f"], p["eps"], p["gamma"]) == choice
    unit = _fit(X, y, loss="mgr", model="sum", target_scale=None, tol=1e-11)
    assert unit.sum_prior_ == p | {"amplitude": unit.sum_prior_["amplitude"]}
    assert_close(clf.posterior_.latent(slice(None)), unit.posterior_.latent(slice(None)) * s,
                 rtol=1e-7)  # fmt: skip
    Sigma, _, _ = dense_sum_prior(W, lam, V, p["tau_s"], p["tau_f"], p["eps"], labeled)
    K = Sigma[np.ix_(labeled, labeled)] + p["gamma"] ** 2 * np.eye(labeled.size)
    expected = Sigma[:, labeled] @ np.linalg.solve(K, Y)
    np.testing.assert_allclose(clf.posterior_.latent(slice(None)), expected,
                               atol=1e-8 * np.abs(expected).max())  # fmt: skip


def test_full_model_is_linear_in_the_class_scales():
    """model="full", mgr, given tau and gamma: each class's latent values are the
    unscaled fit's times the class's scale (the fit, its class offset included, is
    linear in the targets)."""
    X, y = unbalanced_blobs()
    params = dict(loss="mgr", model="full", tau=0.1, gamma=0.3, tol=1e-10)
    scaled = _fit(X, y, target_scale="balanced", **params)
    unit = _fit(X, y, target_scale=None, **params)
    assert scaled.model_ == "full"
    expected = unit.posterior_.latent(slice(None)) * scaled.target_scale_
    assert_close(scaled.posterior_.latent(slice(None)), expected, rtol=1e-7)


@pytest.mark.parametrize("loss", ["gr", "mgr"])
@pytest.mark.parametrize("class_weight", ["auto", "balanced"])
def test_look_ahead_scales_the_candidates_pseudo_target(loss, class_weight):
    """Unbalanced labels, target_scale="balanced": model change and V-opt against the
    brute-force refit with the candidate's pseudo-target times its class's scale."""
    clf, bf, view = look_ahead_setup(loss, "custom", class_weight, target_scale="balanced")
    assert not np.any(np.isclose(bf.s, 1.0))
    nodes = bf.unlabeled
    assert_close(acquisition.model_change(view, nodes),
                 np.array([bf.model_change(k) for k in nodes]))  # fmt: skip
    assert_close(acquisition.vopt(view, nodes), np.array([bf.vopt(k) for k in nodes]),
                 rtol=1e-7)  # fmt: skip


def test_scale_applies_where_auto_loss_fits_mgr(monkeypatch):
    """target_scale="sqrt" with model="auto" and loss="auto": the square root once the
    summed model (mgr) takes over (AUTO_SUM_MIN_LABELS labels), ones in the spectral
    phase (ce); "auto" (the default) is AUTO_TARGET_SCALE with the summed model and
    ones elsewhere, None ones with every model."""
    X, y = unbalanced_blobs()  # 15 labels
    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", 10)
    s = np.sqrt(UNBALANCED_COUNTS.sum() / (3 * UNBALANCED_COUNTS))
    summed = _fit(X, y, target_scale="sqrt")
    assert (summed.model_, summed.loss_) == ("sum", "mgr")
    np.testing.assert_allclose(summed.target_scale_, s, rtol=1e-12)
    assert module.AUTO_TARGET_SCALE == "sqrt"
    default = _fit(X, y)
    assert default.model_ == "sum"
    np.testing.assert_allclose(default.target_scale_, s, rtol=1e-12)
    np.testing.assert_allclose(default.posterior_.target_scale, s, rtol=1e-12)
    unit = _fit(X, y, target_scale=None)
    assert unit.model_ == "sum" and unit.posterior_.target_scale is None
    np.testing.assert_array_equal(unit.target_scale_, np.ones(3))
    # "auto" outside the summed model: ones (mgr, spectral and full models; ce)
    for params in ({"loss": "mgr", "model": "spectral"}, {"loss": "mgr", "model": "full"},
                   {"loss": "ce", "model": "spectral"}, {"model": "poisson"}):  # fmt: skip
        np.testing.assert_array_equal(_fit(X, y, **params).target_scale_, np.ones(3))
    monkeypatch.setattr(module, "AUTO_SUM_MIN_LABELS", 50)
    for scale in ("sqrt", "auto"):
        few = _fit(X, y, target_scale=scale)
        assert (few.model_, few.loss_) == ("spectral", "ce")
        np.testing.assert_array_equal(few.target_scale_, np.ones(3))
        assert few.posterior_.target_scale is None


def test_target_scale_errors_name_the_value():
    X, y = unbalanced_blobs()
    with pytest.raises(ValueError, match=r"target_scale='sqrt' takes .*loss='ce'"):
        _fit(X, y, loss="ce", target_scale="sqrt")
    # model="poisson" with loss="auto" fits ce: a scale would do nothing
    with pytest.raises(ValueError, match=r"target_scale='balanced' takes .*model='poisson'"):
        _fit(X, y, model="poisson", target_scale="balanced")
    for bad in ("even", "Auto"):
        with pytest.raises(InvalidParameterError, match="target_scale"):
            _fit(X, y, target_scale=bad)
    # None and "auto" take every loss and model
    assert _fit(X, y, loss="ce", target_scale=None).target_scale_.tolist() == [1.0] * 3
    assert _fit(X, y, loss="ce", target_scale="auto").target_scale_.tolist() == [1.0] * 3


@pytest.mark.parametrize("loss", ["mgr", "gr"])
def test_poisson_scores_are_scaled_by_class(loss):
    """model="poisson": the scores of Poisson learning without its prior correction
    (priors equal to the labels' shares), each class's times its target scale, in the
    targets' units; "balanced" is the paper's correction with uniform priors and None
    (the default) leaves the scores as they are. Against a dense solve of the Poisson
    equation."""
    X, y = unbalanced_blobs()
    if loss == "gr":
        y = np.where(y == -1, -1, np.minimum(y, 1))  # classes of 2 + 4 and 9 labels
    labeled = np.flatnonzero(y != -1)
    classes, codes = np.unique(y[labeled], return_inverse=True)
    k = classes.size
    for target_scale, power in ((None, 0.0), ("sqrt", 0.5), ("balanced", 1.0), ("auto", 0.0)):
        clf = _fit(X, y, loss=loss, model="poisson", target_scale=target_scale, tol=1e-12)
        s = target_scales(codes, k, power)
        np.testing.assert_allclose(clf.target_scale_, s, rtol=1e-12)
        # the Poisson equation by a dense solve, without the correction (priors = shares)
        shares = np.bincount(codes, minlength=k) / codes.size
        scores = dense_poisson(clf.graph_.weights, labeled, codes, k, shares) * s
        if k == 2:
            scores = scores[:, 1] - scores[:, 0]
        targets = LOSSES[loss].encode(codes, k, s)
        factor = np.sum(scores[labeled] * targets) / np.sum(scores[labeled] ** 2)
        assert_close(clf.posterior_.latent(slice(None)), factor * scores, rtol=1e-7)
        predicted = scores.argmax(axis=1) if k > 2 else (scores > 0).astype(int)
        np.testing.assert_array_equal(clf.transduction_, classes[predicted])
    paper = _fit(X, y, loss=loss, model="poisson", target_scale="balanced")
    corrected = poisson_learning(paper.graph_.weights, labeled, codes, k)  # uniform priors
    if k == 2:
        corrected = corrected[:, 1] - corrected[:, 0]
        np.testing.assert_array_equal(paper.transduction_, classes[(corrected > 0).astype(int)])
    else:
        np.testing.assert_array_equal(paper.transduction_, classes[corrected.argmax(axis=1)])
