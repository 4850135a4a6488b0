"""``offset``: the full model's class offset fitted apart ("free") or not (None).

Each fit against a dense solve on a small graph: with ``offset=None`` the
Gaussian MAP ``(L + tau^2 I + P'P / gamma^2)^-1 P'y / gamma^2`` and, as
``tau`` and ``gamma`` shrink, Laplace learning's harmonic extension; "auto"
choices against the dense evidence without the offset.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from skmcal import SpectralGraphClassifier
from skmcal.evidence import FULL_GAMMAS, FULL_TAUS
from skmcal.losses import LOSSES

from _oracle import dense_green, full_graph_map, harmonic_extension

N, N_CLASSES = 150, 3


def _data(n_labeled=12, seed=4):
    X, y_true = make_blobs(N, centers=N_CLASSES, cluster_std=2.5, random_state=3)
    y = np.full(N, -1)
    labeled = np.random.RandomState(seed).choice(N, n_labeled, replace=False)
    y[labeled] = y_true[labeled]
    return X, y, y_true, labeled


@pytest.mark.parametrize(("tau", "gamma"), [(0.1, 0.5), (0.01, 0.1)])
def test_no_offset_is_the_dense_gaussian_map(tau, gamma):
    X, y, y_true, labeled = _data()
    clf = SpectralGraphClassifier(
        "mgr", model="full", offset=None, tau=tau, gamma=gamma, n_eigs=20, tol=1e-10
    ).fit(X, y)
    expected = full_graph_map(LOSSES["mgr"], clf.graph_.weights, labeled,
                              np.eye(N_CLASSES)[y_true[labeled]], tau, gamma)  # fmt: skip
    latent = clf.posterior_.latent(np.arange(N))
    np.testing.assert_allclose(latent, expected, atol=1e-8 * np.abs(expected).max())
    np.testing.assert_array_equal(clf.transduction_, expected.argmax(axis=1))


def test_no_offset_with_small_tau_and_gamma_is_the_harmonic_extension():
    """Laplace learning: the labels' values held, ``L_uu u_u = -L_ul y`` elsewhere.

    At tau = gamma = 1e-3 the dense MAP is within 4e-5 of the extension here, and
    the sparse solves (relative residual ``tol``, a system of condition about
    ``1 / gamma^2``) within 1e-5 of the MAP.
    """
    X, y, y_true, labeled = _data()
    clf = SpectralGraphClassifier(
        "mgr", model="full", offset=None, tau=1e-3, gamma=1e-3, n_eigs=20
    ).fit(X, y)
    harmonic = harmonic_extension(clf.graph_.weights, labeled, np.eye(N_CLASSES)[y_true[labeled]])
    latent = clf.posterior_.latent(np.arange(N))
    np.testing.assert_allclose(latent, harmonic, atol=1e-4)
    np.testing.assert_array_equal(clf.transduction_, harmonic.argmax(axis=1))
    # the free offset (the default) moves the values by sqrt(degree) times each class's offset
    free_fit = SpectralGraphClassifier("mgr", model="full", tau=1e-3, gamma=1e-3, n_eigs=20)
    moved = free_fit.fit(X, y).posterior_.latent(np.arange(N))
    assert np.abs(moved - harmonic).max() > 0.1


def test_auto_is_free_for_the_full_gaussian_models():
    X, y, _, _ = _data()
    for loss in ("gr", "mgr"):
        yy = np.where(y == 2, -1, y) if loss == "gr" else y
        auto = SpectralGraphClassifier(loss, model="full", n_eigs=20).fit(X, yy)
        free = SpectralGraphClassifier(loss, model="full", offset="free", n_eigs=20).fit(X, yy)
        none = SpectralGraphClassifier(loss, model="full", offset=None, n_eigs=20).fit(X, yy)
        nodes = np.arange(N)
        np.testing.assert_array_equal(auto.posterior_.latent(nodes), free.posterior_.latent(nodes))
        assert not np.allclose(auto.posterior_.latent(nodes), none.posterior_.latent(nodes))


def test_no_offset_choice_is_the_dense_evidence_maximum():
    """tau, gamma "auto" with offset=None: the grid maximum of the evidence without the
    offset (the amplitude profiled), from dense Green's blocks."""
    X, y, y_true, labeled = _data()
    clf = SpectralGraphClassifier("mgr", model="full", offset=None, n_eigs=20).fit(X, y)
    Y = np.eye(N_CLASSES)[y_true[labeled]]
    n, k = Y.shape
    table = {}
    for tau in FULL_TAUS:
        K = dense_green(clf.graph_.weights, tau)[np.ix_(labeled, labeled)]
        for gamma in FULL_GAMMAS:
            S = K + gamma**2 * np.eye(n)
            quad = np.trace(Y.T @ np.linalg.solve(S, Y))
            table[tau, gamma] = -0.5 * k * n * np.log(quad / (k * n)) - 0.5 * k * (
                np.linalg.slogdet(S)[1]
            )
    assert (clf.tau_, clf.gamma_) == max(table, key=table.get)


def test_a_warm_refit_without_offset_equals_a_cold_one():
    X, y, _, labeled = _data(n_labeled=20)
    first = y.copy()
    first[labeled[12:]] = -1
    warm = SpectralGraphClassifier("mgr", model="full", offset=None, tau=0.01, gamma=0.1,
                                   n_eigs=20)  # fmt: skip
    warm.fit(X, first).fit(X, y)
    cold = SpectralGraphClassifier("mgr", model="full", offset=None, tau=0.01, gamma=0.1,
                                   n_eigs=20).fit(X, y)  # fmt: skip
    nodes = np.arange(N)
    np.testing.assert_allclose(
        warm.posterior_.latent(nodes), cold.posterior_.latent(nodes), atol=1e-8
    )


@pytest.mark.parametrize(
    "params",
    [
        {"model": "sum"},
        {"model": "spectral"},
        {"model": "auto"},
        {"model": "poisson"},
        {"model": "full", "loss": "ce"},
        {"model": "full", "loss": "logistic"},
    ],
)
def test_free_offset_with_another_model_or_loss_is_refused(params):
    X, y, _, _ = _data()
    if params.get("loss") == "logistic":
        y = np.where(y == 2, -1, y)
    clf = SpectralGraphClassifier(offset="free", n_eigs=20, **params)
    with pytest.raises(ValueError, match="offset='free' takes model='full' with the Gaussian"):
        clf.fit(X, y)


def test_offset_values_are_validated():
    X, y, _, _ = _data()
    with pytest.raises(ValueError, match="offset"):
        SpectralGraphClassifier(model="full", offset="none").fit(X, y)


def test_the_covariance_does_not_depend_on_the_offset():
    """The query strategies' covariance (spectral part and remainder, ``nugget``) is the
    prior's and the labels': the same with and without the offset apart."""
    X, y, _, _ = _data()
    params = {"model": "full", "tau": 0.05, "gamma": 0.2, "n_eigs": 20}
    free = SpectralGraphClassifier("mgr", offset="free", **params).fit(X, y).posterior_
    none = SpectralGraphClassifier("mgr", offset=None, **params).fit(X, y).posterior_
    assert free.nugget > 0
    assert none.nugget == free.nugget
    np.testing.assert_allclose(none.cov, free.cov, rtol=1e-12)
    assert none.offset_direction is None and free.offset_direction is not None
