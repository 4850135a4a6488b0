"""Poisson learning against a dense solve of its linear system."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from skmcal.fullgraph import LaplacianSolver
from skmcal.poisson import poisson_learning, target_units

from _oracle import dense_poisson, plane_knn_graph

N_CLASSES = 3


def _graph(n=40, seed=0):
    return plane_knn_graph(n, seed)[0]


@pytest.mark.parametrize("priors", [None, np.array([0.5, 0.3, 0.2])])
def test_matches_dense_solve(priors):
    W = _graph()
    labeled = np.array([1, 5, 9, 17, 22, 30, 33])
    codes = np.array([0, 0, 0, 1, 1, 2, 2])
    U = poisson_learning(
        sp.csr_matrix(W), labeled, codes, N_CLASSES, class_priors=priors, tol=1e-13
    )
    b = np.full(N_CLASSES, 1.0 / N_CLASSES) if priors is None else priors
    expected = dense_poisson(W, labeled, codes, N_CLASSES, b)
    np.testing.assert_allclose(U, expected, atol=1e-8 * np.abs(expected).max())
    d = W.sum(axis=1)
    np.testing.assert_allclose(d @ U, 0.0, atol=1e-10)


def test_disconnected_graph_balances_each_component():
    W1, W2 = _graph(seed=0), _graph(n=30, seed=1)
    W = np.block([[W1, np.zeros((40, 30))], [np.zeros((30, 40)), W2]])
    labeled = np.array([1, 5, 9, 17, 45, 50, 60])
    codes = np.array([0, 1, 2, 0, 1, 2, 2])
    U = poisson_learning(sp.csr_matrix(W), labeled, codes, N_CLASSES, tol=1e-13)
    expected = dense_poisson(W, labeled, codes, N_CLASSES, np.full(N_CLASSES, 1.0 / N_CLASSES))
    # plus each component's constant: the class mean of its own labels, prior-corrected
    onehot = np.eye(N_CLASSES)[codes]
    correction = (1.0 / N_CLASSES) / onehot.mean(axis=0)
    expected[:40] += onehot[:4].mean(axis=0) * correction
    expected[40:] += onehot[4:].mean(axis=0) * correction
    np.testing.assert_allclose(U, expected, atol=1e-8 * np.abs(expected).max())


def test_warm_start_equals_cold_solve():
    W = sp.csr_matrix(_graph())
    labeled = np.array([1, 5, 9, 17, 22, 30, 33, 12, 3])
    codes = np.array([0, 0, 0, 1, 1, 2, 2, 1, 2])
    solver = LaplacianSolver(W)
    first = poisson_learning(W, labeled[:7], codes[:7], N_CLASSES, tol=1e-13, solver=solver)
    warm = poisson_learning(W, labeled, codes, N_CLASSES, init=first, tol=1e-13, solver=solver)
    cold = poisson_learning(W, labeled, codes, N_CLASSES, tol=1e-13, solver=LaplacianSolver(W))
    np.testing.assert_allclose(warm, cold, atol=1e-9 * np.abs(cold).max())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"codes": np.array([0, 0, 1])}, "needs a label of every class"),
        ({"codes": np.array([0, 1, 5])}, r"codes must lie in \[0, n_classes=3\)"),
        ({"labeled": np.array([0, 1, 400])}, "outside"),
        ({"class_priors": np.array([0.5, 0.5])}, "class_priors must be 3"),
        ({"init": np.zeros((3, 3))}, "init must have shape"),
    ],
)
def test_errors(kwargs, match):
    args = {"labeled": np.array([0, 1, 2]), "codes": np.array([0, 1, 2])}
    args.update(kwargs)
    labeled, codes = args.pop("labeled"), args.pop("codes")
    with pytest.raises(ValueError, match=match):
        poisson_learning(sp.csr_matrix(_graph()), labeled, codes, N_CLASSES, **args)


def test_components_labeled_with_one_class_predict_it():
    """Per component the mean-zero solution loses the constant: a pure component keeps its class."""
    import scipy.sparse as sp

    # three path components of 5 nodes: labels {0}, {1}, and {0, 2} at its ends
    blocks = [sp.diags([np.ones(4), np.ones(4)], [-1, 1], shape=(5, 5)) for _ in range(3)]
    W = sp.block_diag(blocks).tocsr()
    labeled = np.array([0, 7, 10, 14])
    codes = np.array([0, 1, 0, 2])
    U = poisson_learning(W, labeled, codes, 3)
    predicted = U.argmax(axis=1)
    np.testing.assert_array_equal(predicted[:5], 0)
    np.testing.assert_array_equal(predicted[5:10], 1)
    assert predicted[10] == 0 and predicted[14] == 2


@pytest.mark.parametrize("k", [1, 3])
def test_target_units_is_the_least_squares_factor(k):
    rng = np.random.RandomState(4)
    scores = 0.01 * rng.randn(20, k)
    labeled = np.array([3, 7, 11, 2, 19])
    targets = scores[labeled] * 40.0 + 0.001 * rng.randn(5, k)
    if k == 1:
        scores, targets = scores[:, 0], targets[:, 0]
    expected = np.linalg.lstsq(scores[labeled].reshape(-1, 1), targets.reshape(-1), rcond=None)[0]
    assert target_units(scores, labeled, targets) == pytest.approx(float(expected[0]), rel=1e-12)
    # scores against the labels, or none at them: left as they are
    assert target_units(scores, labeled, -targets) == 1.0
    assert target_units(np.zeros(20), labeled, np.ones(5)) == 1.0
    with pytest.raises(ValueError, match="shape of the scores"):
        target_units(scores, labeled, np.ones(4))
