"""skmcal.posterior: the protocol of a fitted posterior, by hand.

Covariance at given rows (nodes and new points, class-major for ce), latent
values and probabilities, the class reductions of the softmax family
(docs/math.rst, "The losses" and "The Laplace posterior"), and the posterior
a classifier exposes.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm

from _oracle import (
    ALL_LOSSES,
    BINARY,
    MULTICLASS,
    N_EIGS,
    SETTINGS,
    eval_points,
    fitted,
    look_ahead_setup,
    softmax_rows,
)

# -------------------------------------------------- covariance at given rows


@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_posterior_cov_at_node_rows(loss):
    clf, X, y = fitted(loss)
    rows = np.array([0, 7, 19, 30, 41])
    V_X = np.asarray(clf.eigenvectors_)[rows]
    C = clf.posterior_cov()
    got = clf.posterior_cov(X[rows])
    if loss != "ce":
        expected = V_X @ C @ V_X.T
    else:
        K = np.kron(np.eye(clf.classes_.size), V_X)  # K[c*n + r, c*M + i] = V_X[r, i]
        expected = K @ C @ K.T
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14 * np.abs(expected).max())


def test_ce_posterior_cov_at_rows_is_class_major_and_matches_sampling_definition():
    """Cov(u_rc, u_sd) = sum_ik V_ri V_sk Cov(A_ic, A_kd), entry (c*n + r, d*n + s)."""
    clf, X, _ = fitted("ce")
    rows = np.array([3, 22, 50])
    n, M, n_classes = rows.size, N_EIGS, clf.classes_.size
    V_X = np.asarray(clf.eigenvectors_)[rows]
    C = clf.posterior_cov()
    got = clf.posterior_cov(X[rows])
    for c in range(n_classes):
        for d in range(n_classes):
            Ccd = C[c * M : (c + 1) * M, d * M : (d + 1) * M]
            for r in range(n):
                for s in range(n):
                    expected = V_X[r] @ Ccd @ V_X[s]
                    assert got[c * n + r, d * n + s] == pytest.approx(expected, rel=1e-10,
                                                                       abs=1e-14)


@pytest.mark.parametrize("loss", ["probit", "ce"])
def test_posterior_cov_at_new_points_uses_the_extension(loss):
    clf, X, _ = fitted(loss)
    new = X[[1, 2, 40]] + np.array([[0.3, -0.2], [0.1, 0.25], [-0.2, 0.1]])
    V_X = clf.graph_.interpolation_weights(new) @ clf.eigenvectors_
    K = V_X if loss != "ce" else np.kron(np.eye(clf.classes_.size), V_X)
    np.testing.assert_allclose(clf.posterior_cov(new), K @ clf.posterior_cov() @ K.T,
                               rtol=1e-12, atol=1e-15)



# ------------------------------------------- latent values and probabilities


LOSS_AND_N_CLASSES = [(loss, 2) for loss in ALL_LOSSES] + [(loss, 3) for loss in MULTICLASS]


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize(("loss", "n_classes"), LOSS_AND_N_CLASSES)
def test_predict_proba_matches_documented_formula(loss, n_classes, setting):
    clf, X, _ = fitted(loss, setting, n_classes)
    g = clf.gamma_
    Z = eval_points(X)
    proba = clf.predict_proba(Z)
    assert proba.shape == (Z.shape[0], n_classes)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # latent values at the nodes: u = V coef_
    U_nodes = np.asarray(clf.eigenvectors_) @ clf.coef_
    dec = clf.decision_function(Z)
    if loss in BINARY or n_classes == 2:
        expected_dec_nodes = U_nodes if loss in BINARY else U_nodes[:, 1] - U_nodes[:, 0]
        np.testing.assert_allclose(dec[: X.shape[0]], expected_dec_nodes, rtol=1e-12,
                                   atol=1e-14)
        positive = {"gr": expit(2 * dec / g**2), "logistic": expit(dec / g),
                    "probit": norm.cdf(dec / g), "mgr": expit(dec / g**2),
                    "ce": expit(dec / g)}[loss]
        np.testing.assert_allclose(proba[:, 1], positive, rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(proba[:, 0], 1 - positive, rtol=1e-10, atol=1e-15)
    else:
        np.testing.assert_allclose(dec[: X.shape[0]], U_nodes, rtol=1e-12, atol=1e-14)
        temperature = g**2 if loss == "mgr" else g
        np.testing.assert_allclose(proba, softmax_rows(dec / temperature), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize(("loss", "n_classes"), LOSS_AND_N_CLASSES)
def test_predict_is_argmax_of_proba_and_sign_of_decision(loss, n_classes):
    clf, X, _ = fitted(loss, "auto", n_classes)
    Z = eval_points(X)
    pred = clf.predict(Z)
    proba = clf.predict_proba(Z)
    dec = clf.decision_function(Z)
    np.testing.assert_array_equal(pred, clf.classes_[proba.argmax(axis=1)])
    if dec.ndim == 1:
        np.testing.assert_array_equal(pred, np.where(dec > 0, clf.classes_[1], clf.classes_[0]))
    else:
        np.testing.assert_array_equal(pred, clf.classes_[dec.argmax(axis=1)])
    np.testing.assert_array_equal(clf.transduction_, pred[: X.shape[0]])
    # the fit is meaningful: the labeled rows are predicted as labeled
    _, _, y = fitted(loss, "auto", n_classes)
    np.testing.assert_array_equal(pred[: X.shape[0]][y != -1], y[y != -1])



# -------------------------------------------------------------- the protocol


def test_posterior_of_classifier():
    clf, bf, view = look_ahead_setup("ce", "auto")
    assert view.loss.name == "ce" and view.gamma == clf.gamma_
    assert view.coef is clf.posterior_.coef and view.cov is clf.posterior_.cov
    assert view.eigenvectors is clf.eigenvectors_
    assert view.n_classes == 3
    np.testing.assert_allclose(view.column_sums(), bf.V.T @ np.ones(bf.N))
    np.testing.assert_allclose(view.latent(bf.unlabeled), bf.V[bf.unlabeled] @ bf.coef)


def test_class_reductions_are_kronecker_products():
    """reduce_classes / project_classes against dense (E (x) I)' X and (E (x) I)' X (E (x) I)."""
    from skmcal.posterior import project_classes, reduce_classes, zero_sum_basis

    rng = np.random.RandomState(1)
    E = zero_sum_basis(4)
    X = rng.randn(4 * 3, 4 * 3)
    W = np.kron(E, np.eye(3))
    np.testing.assert_allclose(reduce_classes(X, E), W.T @ X, atol=1e-14)
    np.testing.assert_allclose(reduce_classes(X[:, 0], E), W.T @ X[:, 0], atol=1e-14)
    np.testing.assert_allclose(project_classes(X, E), W.T @ X @ W, atol=1e-14)
    np.testing.assert_allclose(E.T @ E, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(E.sum(axis=0), 0.0, atol=1e-15)


# ------------------------------------------------------------ leave-one-out
@pytest.mark.parametrize("class_weight", ["auto", "balanced"])
@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_loo_latent_is_one_newton_step_without_the_label(loss, class_weight):
    """Each labeled node's leave-one-out latent value: one Newton step from the MAP of
    the objective without its label, with that objective's dense Hessian (gr / mgr: the
    exact refit on the other labels); with the balanced weights of an unbalanced label
    set too."""
    clf, bf, posterior = look_ahead_setup(loss, "custom", class_weight)
    codes = np.searchsorted(clf.classes_, bf.y[bf.labeled])
    weights = clf.class_weight_[codes]
    if class_weight == "balanced":
        assert np.ptp(weights) > 0  # the weights differ: they enter
    targets = posterior.loss.encode(codes, clf.classes_.size)
    loo = posterior.loo_latent(clf.labeled_nodes_, targets, weights)
    order = np.searchsorted(bf.labeled, clf.labeled_nodes_)
    expected = np.array([bf.leave_one_out(j) for j in order])
    np.testing.assert_allclose(loo, expected, rtol=1e-8, atol=1e-10)
    latent = posterior.latent(clf.labeled_nodes_)
    assert np.abs(loo - latent).max() > 1e-3  # leaving a label out moves its value


def test_loo_latent_refuses_a_full_graph_mean():
    clf, _, posterior = look_ahead_setup("mgr", "custom")
    from dataclasses import replace

    shifted = replace(posterior, base=np.zeros((posterior.eigenvectors.shape[0], 3)))
    with pytest.raises(ValueError, match="spectral model"):
        shifted.loo_latent(clf.labeled_nodes_, np.eye(3)[[0, 1, 2]], None)
