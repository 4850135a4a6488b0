"""Acquisition values against brute force, for every loss, on tiny graphs.

For every unlabeled node of a ~50-node graph (``n_eigs=8``) the closed forms
of ``skmcal.acquisition`` are compared with quantities rebuilt by hand in
``tests/_oracle.py`` from the statements of docs/math.rst ("Active learning:
the look-ahead", "V-opt and Sigma-opt"):

- model change: the exact refit with the candidate added with its
  pseudo-label (``gr``/``mgr``), or one explicit Newton step from the MAP on
  the look-ahead objective, with a dense Hessian (``logistic``, ``probit``,
  ``ce``; Kronecker form, class-major, for ``ce``);
- V-opt / Sigma-opt: ``tr(V C V') - tr(V C+ V')`` and
  ``1' V C V' 1 - 1' V C+ V' 1`` with ``C+`` the explicitly inverted
  look-ahead Hessian (the ``N * n_classes`` matrices for ``ce``);
- look-ahead: the updated MAP and covariance;
- uncertainty: margin, entropy and least confidence from the estimator's
  own ``decision_function`` and ``predict_proba``.

No expectation reuses the implementation's formulas: every value is a dense
solve, an inverse or a trace of matrices assembled by hand.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.base import clone

from skmcal import acquisition, posterior, softmax
from skmcal.acquisition import look_ahead
from skmcal.posterior import RankOnePosterior

from _oracle import (
    ALL_LOSSES,
    BINARY,
    LOOK_AHEAD_SETTINGS,
    assert_close,
    binary_derivatives,
    ce_many_classes,
    look_ahead_setup,
)

RTOL = 1e-8




# ------------------------------------------------------------------ model change
@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_model_change_matches_brute_force(loss, setting):
    clf, bf, view = look_ahead_setup(loss, setting)
    nodes = bf.unlabeled
    expected = np.array([bf.model_change(k) for k in nodes])
    actual = acquisition.model_change(view, nodes)
    assert_close(actual, expected)
    assert np.all(expected > 0)


@pytest.mark.parametrize("loss", ("gr", "mgr"))
def test_model_change_is_change_of_the_refitted_estimator(loss):
    """gr/mgr: the value is ||u_new - u||_2 over all nodes, u_new from a real refit (with
    unit weights: the look-ahead adds the candidate at weight 1, and the fit's balanced
    class weights are 1, as many labels per class)."""
    clf, bf, view = look_ahead_setup(loss, "custom")
    assert np.all(clf.class_weight_ == 1.0)
    nodes = bf.unlabeled[::3]
    actual = acquisition.model_change(view, nodes)
    U_old = clf.decision_function(bf.X)
    for k, value in zip(nodes, actual, strict=True):
        u = clf.decision_function(bf.X[k : k + 1])[0]
        code = int(u >= 0) if loss == "gr" else int(np.argmax(u))
        y_new = bf.y.copy()
        y_new[k] = clf.classes_[code]
        refit = clone(clf).set_params(class_weight=None).fit(bf.X, y_new)
        change = np.linalg.norm(refit.decision_function(bf.X) - U_old)
        np.testing.assert_allclose(value, change, rtol=1e-7)


@pytest.mark.parametrize("loss", BINARY)
def test_binary_pseudo_label_minimises_model_change(loss):
    """docs/math.rst: minimising the look-ahead change over yhat in {-1, +1} gives sign(u_k)."""
    clf, bf, view = look_ahead_setup(loss, "auto")
    nodes = bf.unlabeled
    actual = acquisition.model_change(view, nodes)
    for k, value in zip(nodes, actual, strict=True):
        changes = [np.linalg.norm(bf.look_ahead(k, label)[0] - bf.coef) for label in (-1, 1)]
        np.testing.assert_allclose(value, min(changes), rtol=RTOL,
                                   atol=RTOL * np.max(actual))


@pytest.mark.parametrize("loss", BINARY)
def test_pseudo_label_at_zero_is_positive(loss):
    """u_k = 0 exactly: the pseudo-label is +1, so the look-ahead step pulls u_k up."""
    clf, bf, view = look_ahead_setup(loss, "custom")
    zero = RankOnePosterior(view.loss, bf.g, bf.V, np.zeros(bf.M), view.cov)
    for k in bf.unlabeled[:5]:
        v = bf.V[k]
        new = look_ahead(zero, k)
        assert v @ new.coef > 0
        # one Newton step of J + l(u_k, +1) from a point where J has zero gradient
        F, Fp = binary_derivatives(loss, 0.0, 1.0, bf.g)
        H_new = np.linalg.inv(view.cov) + Fp * np.outer(v, v)
        step = -np.linalg.solve(H_new, F * v)
        np.testing.assert_allclose(new.coef, step, rtol=1e-8, atol=1e-10 * np.abs(step).max())
        np.testing.assert_allclose(acquisition.model_change(zero, [k])[0],
                                   np.linalg.norm(step), rtol=1e-8)


# ---------------------------------------------------------------- V-opt, Sigma-opt
@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_vopt_matches_trace_drop_of_recomputed_covariance(loss, setting):
    clf, bf, view = look_ahead_setup(loss, setting)
    nodes = bf.unlabeled
    expected = np.array([bf.vopt(k) for k in nodes])
    assert_close(acquisition.vopt(view, nodes), expected, rtol=1e-7)
    assert np.all(expected > 0)


@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
@pytest.mark.parametrize("loss", BINARY + ("mgr",))
def test_sopt_matches_survey_risk_drop_of_recomputed_covariance(loss, setting):
    clf, bf, view = look_ahead_setup(loss, setting)
    nodes = bf.unlabeled
    expected = np.array([bf.sopt(k) for k in nodes])
    assert_close(acquisition.sopt(view, nodes), expected, rtol=1e-7)
    assert np.all(expected >= 0) and np.max(expected) > 0


@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
def test_ce_joint_survey_risk_drop_is_identically_zero(setting):
    """Why ce Sigma-opt sums the survey risk per class.

    With W = I (x) V and the ones vector of length N n_c, W'1 = 1 (x) V'1 is a
    class-shift direction, along which the ce likelihood is flat: C W'1 =
    1 (x) Lambda^-1 V'1 and B_k 1 = 0, so the drop is 0 for every candidate.
    """
    clf, bf, view = look_ahead_setup("ce", setting)
    W = bf.W
    ones = np.ones(W.shape[0])
    risk = ones @ W @ bf.covariance() @ W.T @ ones
    expected = np.array([bf.sopt(k) for k in bf.unlabeled])
    np.testing.assert_allclose(expected, 0.0, atol=1e-11 * risk)


@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
def test_ce_sopt_matches_per_class_survey_risk_drop(setting):
    clf, bf, view = look_ahead_setup("ce", setting)
    nodes = bf.unlabeled
    expected = np.array([bf.sopt_per_class(k) for k in nodes])
    assert np.all(expected > 0)
    assert_close(acquisition.sopt(view, nodes), expected)


@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
def test_ce_sopt_is_informative(setting):
    """Every label lowers the posterior variance: Sigma-opt scores are positive."""
    clf, bf, view = look_ahead_setup("ce", setting)
    nodes = bf.unlabeled
    scores = acquisition.sopt(view, nodes)
    assert np.all(scores > 1e-6 * acquisition.vopt(view, nodes)), scores[:5]


@pytest.mark.parametrize("loss", ("gr", "probit", "mgr"))
def test_sopt_uses_column_sums_not_the_ones_vector(loss):
    """The paper's <1, C v_k>^2 differs from the survey-risk drop; skmcal must not use it."""
    clf, bf, view = look_ahead_setup(loss, "custom")
    nodes = bf.unlabeled
    expected = np.array([bf.sopt(k) for k in nodes])
    # the typo'd variant: the ones vector in spectral coordinates instead of V'1
    w = np.ones(bf.M)
    typo = []
    for k in nodes:
        C, C_plus = bf.covariance(), bf.look_ahead(k)[1]
        typo.append(w @ C @ w - w @ C_plus @ w)
    assert not np.allclose(expected, typo, rtol=1e-3)
    assert_close(acquisition.sopt(view, nodes), expected, rtol=1e-7)


# -------------------------------------------------------------------- look-ahead
@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS))
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_look_ahead_matches_brute_force_step_and_covariance(loss, setting):
    clf, bf, view = look_ahead_setup(loss, setting)
    for k in bf.unlabeled[::5]:
        coef_new, cov_new = bf.look_ahead(k)
        new = look_ahead(view, k)
        assert new.coef.shape == view.coef.shape and new.cov.shape == view.cov.shape
        assert_close(new.coef, coef_new, rtol=1e-8)
        assert_close(new.cov, cov_new, rtol=1e-8)
        np.testing.assert_array_equal(new.cov, new.cov.T)
        # the view itself is not modified
        np.testing.assert_array_equal(view.coef, clf.posterior_.coef)
        assert new.loss == view.loss and new.gamma == view.gamma
        assert new.eigenvectors is view.eigenvectors


@pytest.mark.parametrize("loss", ("gr", "mgr"))
def test_two_look_aheads_equal_the_exact_refit_with_both_labels(loss):
    """Exact for Gaussian losses: chaining updates equals refitting with both pseudo-labels."""
    clf, bf, view = look_ahead_setup(loss, "auto")
    k1, k2 = bf.unlabeled[[3, 17]]
    first = look_ahead(view, k1)
    label1 = bf.pseudo_label(k1)
    u2 = bf.V[k2] @ first.coef
    label2 = (1.0 if u2 >= 0 else -1.0) if loss == "gr" else np.eye(3)[np.argmax(u2)]
    second = look_ahead(first, k2)
    P = bf.V[np.r_[bf.labeled, k1, k2]]
    T = np.concatenate([bf.T, [label1, label2]]) if loss == "gr" else np.vstack(
        [bf.T, label1, label2])
    H = np.diag(bf.lam) + P.T @ P / bf.g**2
    assert_close(second.coef, np.linalg.solve(H, P.T @ T / bf.g**2))
    assert_close(second.cov, np.linalg.inv(H))


# ------------------------------------------------------------------- uncertainty
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_uncertainty_measures_from_decision_function_and_proba(loss):
    clf, bf, view = look_ahead_setup(loss, "custom")
    nodes = bf.unlabeled
    Xn = bf.X[nodes]
    D = clf.decision_function(Xn)
    proba = clf.predict_proba(Xn)
    if D.ndim == 1:
        margin = np.abs(D)
    else:
        top = np.sort(D, axis=1)
        margin = top[:, -1] - top[:, -2]
    entropy = -np.sum(proba * np.log(proba), axis=1)
    least = 1 - proba.max(axis=1)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes, "margin"), -margin,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes), -margin,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes, "entropy"), entropy,
                               rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes, "least_confident"), least,
                               rtol=1e-10, atol=1e-14)


def test_binary_margin_is_minus_abs_latent():
    clf, bf, view = look_ahead_setup("probit", "auto")
    nodes = bf.unlabeled
    np.testing.assert_allclose(acquisition.uncertainty(view, nodes),
                               -np.abs(bf.V[nodes] @ bf.coef), rtol=1e-12)


def test_uncertainty_rejects_unknown_measure():
    clf, bf, view = look_ahead_setup("mgr", "auto")
    with pytest.raises(ValueError, match="measure"):
        acquisition.uncertainty(view, bf.unlabeled, "variance")


# --------------------------------------------------------------- vectorisation
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_values_do_not_depend_on_the_thread_count(loss, monkeypatch):
    """Pieces scored on several threads give the values of one thread, bit for bit."""
    clf, bf, view = look_ahead_setup(loss, "auto")
    nodes = bf.unlabeled
    monkeypatch.setattr(softmax, "CE_CHUNK", 3)
    monkeypatch.setattr(posterior, "SCORE_CHUNK", 5)
    one, three = replace(view, n_threads=1), replace(view, n_threads=3)
    for f in (acquisition.model_change, acquisition.vopt, acquisition.sopt):
        np.testing.assert_array_equal(f(three, nodes), f(one, nodes))


@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_values_do_not_depend_on_chunking_or_order(loss, monkeypatch):
    clf, bf, view = look_ahead_setup(loss, "auto")
    nodes = bf.unlabeled
    perm = np.random.RandomState(0).permutation(nodes.size)
    functions = (acquisition.model_change, acquisition.vopt, acquisition.sopt)
    reference = [f(view, nodes) for f in functions]
    monkeypatch.setattr(softmax, "CE_CHUNK", 3)
    monkeypatch.setattr(posterior, "SCORE_CHUNK", 5)
    for f, ref in zip(functions, reference, strict=True):
        np.testing.assert_allclose(f(view, nodes), ref, rtol=1e-12)
        np.testing.assert_allclose(f(view, nodes[perm]), ref[perm], rtol=1e-12)
        np.testing.assert_allclose(f(view, list(nodes[:3])), ref[:3], rtol=1e-12)
        assert f(view, np.array([], dtype=int)).shape == (0,)


# --------------------------------------------------- screening, ce with many classes
def test_ce_with_six_classes_matches_brute_force():
    clf, bf, view = ce_many_classes()
    nodes = bf.unlabeled
    assert_close(acquisition.model_change(view, nodes), [bf.model_change(k) for k in nodes])
    assert_close(acquisition.vopt(view, nodes), [bf.vopt(k) for k in nodes])
    assert_close(acquisition.sopt(view, nodes), [bf.sopt_per_class(k) for k in nodes])
    coef, cov = bf.look_ahead(nodes[0])
    after = look_ahead(view, nodes[0])
    assert_close(after.coef, coef)
    assert_close(after.cov, cov)


@pytest.mark.parametrize("function", ["model_change", "vopt", "sopt"])
@pytest.mark.parametrize("top", [1, 4])
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_screening_keeps_the_exact_top_values(loss, function, top, monkeypatch):
    """With top=, every family scores in float32 first: the top values and their order
    stay exact."""
    setups = [look_ahead_setup(loss, "auto"), look_ahead_setup(loss, "custom")]
    if loss == "ce":
        setups.append(ce_many_classes())
    for _clf, bf, view in setups:
        f = getattr(acquisition, function)
        nodes = bf.unlabeled
        exact = f(view, nodes)
        monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
        screened = f(view, nodes, top=top)
        monkeypatch.undo()
        best = np.argsort(-exact, kind="stable")[:top]
        np.testing.assert_array_equal(np.argsort(-screened, kind="stable")[:top], best)
        np.testing.assert_allclose(screened[best], exact[best], rtol=1e-12)
        # the others are single-precision approximations of the exact values
        np.testing.assert_allclose(screened, exact, rtol=0, atol=1e-5 * exact.max())
        assert not np.array_equal(screened, exact)  # the float32 pass did run


def test_ce_screening_falls_back_to_double_on_float32_overflow(monkeypatch):
    """Non-finite float32 values (overflow) mean no screening: every value in float64."""
    clf, bf, view = look_ahead_setup("ce", "auto")
    exact = acquisition.model_change(view, bf.unlabeled)
    terms = softmax.SoftmaxPosterior._terms
    precisions = []

    def overflowing_terms(self, nodes, source, **kwargs):
        precisions.append(getattr(source, "dtype", source))
        t = terms(self, nodes, source, **kwargs)
        if precisions[-1] == np.float32:
            t.step[:] = np.inf
        return t

    monkeypatch.setattr(softmax.SoftmaxPosterior, "_terms", overflowing_terms)
    monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
    np.testing.assert_array_equal(acquisition.model_change(view, bf.unlabeled, top=2), exact)
    assert precisions == [np.float32, None]  # float32 products, then exact direct forms


@pytest.mark.parametrize("loss", ["gr", "mgr", "ce"])
def test_strategy_picks_do_not_depend_on_screening(loss, monkeypatch):
    from skmcal.query import model_change, vopt

    clf, bf, view = look_ahead_setup(loss, "auto")
    X = bf.X
    for strategy in (model_change, vopt):
        for batch in ("topk", "greedy"):
            reference = strategy(clf, X, 3, batch=batch, random_state=0)
            monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
            screened = strategy(clf, X, 3, batch=batch, random_state=0)
            monkeypatch.undo()
            np.testing.assert_array_equal(screened[0], reference[0])
            np.testing.assert_allclose(screened[1], reference[1], rtol=1e-12)


