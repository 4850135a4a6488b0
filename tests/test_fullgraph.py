"""Full-graph MAP against dense brute force on tiny graphs.

The objective: docs/math.rst, "Full-graph and Poisson models"; the dense
Newton iteration of ``tests/_oracle.py``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

import skmcal.fullgraph
from skmcal._threads import solver_threads
from skmcal.fullgraph import (
    SMOOTHER_DEGREE,
    SMOOTHER_RATIO,
    LaplacianSolver,
    _chebyshev_steps,
    _smooth,
    _vcycle,
    class_offset,
    fit_full_graph,
    green_block,
    normalized_laplacian,
    solver_for,
    spectral_hessian,
)
from skmcal.losses import LOSSES

from _oracle import (
    dense_green,
    dense_laplacian,
    full_graph_map,
    harmonic_extension,
    plane_knn_graph,
)

N_NODES = 40
N_CLASSES = 3


def _graph(n=N_NODES, seed=0):
    """A connected random geometric graph: 5 nearest neighbours of points in the plane."""
    W, X = plane_knn_graph(n, seed)
    return sp.csr_matrix(W), X


def _labels(seed=1, n_labeled=9):
    rng = np.random.RandomState(seed)
    labeled = rng.choice(N_NODES, n_labeled, replace=False)
    codes = np.arange(n_labeled) % N_CLASSES
    return labeled, codes


def _targets(loss, codes):
    return np.eye(N_CLASSES)[codes] if loss.multiclass else np.where(codes == 0, -1.0, 1.0)


@pytest.mark.parametrize("name", ["gr", "logistic", "probit", "mgr", "ce"])
@pytest.mark.parametrize(("tau", "gamma"), [(0.1, 0.5), (0.01, 0.1)])
def test_matches_dense_map(name, tau, gamma):
    loss = LOSSES[name]
    W, _ = _graph()
    labeled, codes = _labels()
    targets = _targets(loss, codes)
    fit = fit_full_graph(
        loss, W, labeled, targets, tau, gamma, tol=1e-13, solver=LaplacianSolver(W)
    )
    expected = full_graph_map(loss, W, labeled, targets, tau, gamma)
    assert fit.converged
    np.testing.assert_allclose(fit.latent, expected, rtol=0, atol=1e-8 * np.abs(expected).max())
    if name == "ce":
        np.testing.assert_allclose(fit.latent.sum(axis=1), 0.0, atol=1e-10)
        np.testing.assert_allclose(fit.curvature, loss.proba(expected[labeled], gamma), atol=1e-8)
    elif name == "mgr":
        np.testing.assert_allclose(fit.curvature, 1.0 / gamma**2)
    else:
        np.testing.assert_allclose(
            fit.curvature, loss.derivatives(expected[labeled], targets, gamma)[1], atol=1e-8
        )


@pytest.mark.parametrize("name", ["logistic", "probit", "ce"])
@pytest.mark.parametrize("small", [1e-2, 1e-3, 1e-4])
def test_newton_meets_the_default_tol_at_small_tau_and_gamma(name, small):
    """Newton's stopping rule weighs the gradient by the inverse Hessian diagonal:
    with a small gamma a labeled node's curvature is about 1 / gamma^2 at the start
    and near zero once its label is fitted, and the plain gradient norm relative to
    the start's left the values 1e-3 off the MAP at tau = gamma = 1e-3 (5e-2 at 1e-4)."""
    loss = LOSSES[name]
    W, _ = _graph()
    labeled, codes = _labels()
    targets = _targets(loss, codes)
    fit = fit_full_graph(loss, W, labeled, targets, small, small, solver=LaplacianSolver(W))
    expected = full_graph_map(loss, W, labeled, targets, small, small)
    if name == "ce":  # the dense Newton's iterate keeps an arbitrary class mean
        expected = expected - expected.mean(axis=1, keepdims=True)
    assert fit.converged
    np.testing.assert_allclose(fit.latent, expected, rtol=0, atol=1e-7 * np.abs(expected).max())


def test_repeated_labeled_node_adds_its_losses():
    """A node labeled twice counts twice: double precision and right-hand side there."""
    W, _ = _graph()
    labeled = np.array([3, 3, 10, 20])
    targets = np.array([1.0, 1.0, -1.0, 1.0])
    fit = fit_full_graph(LOSSES["gr"], W, labeled, targets, 0.1, 0.5, tol=1e-13)
    Q = dense_laplacian(W) + 0.01 * np.eye(N_NODES)
    Q[[3, 10, 20], [3, 10, 20]] += np.array([2.0, 1.0, 1.0]) / 0.25
    b = np.zeros(N_NODES)
    b[[3, 10, 20]] = np.array([2.0, -1.0, 1.0]) / 0.25
    np.testing.assert_allclose(fit.latent, np.linalg.solve(Q, b), atol=1e-9)


@pytest.mark.parametrize("name", ["gr", "mgr"])
def test_small_tau_gamma_approach_harmonic_extension(name):
    loss = LOSSES[name]
    W, _ = _graph()
    labeled, codes = _labels()
    targets = _targets(loss, codes)
    harmonic = harmonic_extension(W, labeled, targets)
    errors = [
        np.abs(fit_full_graph(loss, W, labeled, targets, s, s, tol=1e-12).latent - harmonic).max()
        for s in (1e-1, 1e-2, 1e-3)
    ]
    assert errors[0] > 50 * errors[1] > 2500 * errors[2]
    assert errors[2] < 1e-5


@pytest.mark.parametrize("small", [1e-4, 1e-6])
def test_tiny_tau_and_gamma_hold_the_harmonic_extension_at_the_default_tol(small, monkeypatch):
    """The residual is measured with the labeled rows scaled by gamma^2 (their weight
    ``1 / gamma^2`` made the plain relative residual blind to the unlabeled nodes):
    the Green's columns (6 labels), the direct solve (14 labels, too many columns
    missing) and the direct solve polishing the Green's result (columns reported unconverged)
    each hold the MAP, within ``tau^2``-ish of the harmonic extension. At 1e-6 the
    plain criterion left values 0.1 off."""
    loss = LOSSES["mgr"]
    n = 150
    W, _ = _graph(n=n, seed=9)
    rng = np.random.RandomState(3)
    labeled = rng.choice(n, 14, replace=False)
    targets = np.eye(N_CLASSES)[np.arange(14) % N_CLASSES]
    solver = LaplacianSolver(W)
    passes = []
    original = LaplacianSolver.green_solve

    def counted(self, *args, **kwargs):
        passes.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LaplacianSolver, "green_solve", counted)
    green = fit_full_graph(loss, W, labeled[:6], targets[:6], small, small, solver=solver)
    assert solver.n_green_missing(small**2, np.unique(labeled[:6])) == 0  # the Green's path
    if small == 1e-6:  # the round-off of G C is above the budget: no second pass
        assert len(passes) == 1
    solver = LaplacianSolver(W)
    direct = fit_full_graph(loss, W, labeled, targets, small, small, solver=solver)
    assert solver.n_green_missing(small**2, np.unique(labeled)) == 14  # no columns: direct

    def unconverged(self, *args, **kwargs):
        return original(self, *args, **kwargs)[0], False

    monkeypatch.setattr(LaplacianSolver, "green_solve", unconverged)
    polished = fit_full_graph(loss, W, labeled[:6], targets[:6], small, small,
                              solver=LaplacianSolver(W))  # fmt: skip
    for fit, size in ((green, 6), (direct, 14), (polished, 6)):
        assert fit.converged
        expected = full_graph_map(loss, W, labeled[:size], targets[:size], small, small)
        np.testing.assert_allclose(fit.latent, expected, atol=1e-7)
        np.testing.assert_allclose(
            fit.latent, harmonic_extension(W, labeled[:size], targets[:size]), atol=1e-6
        )


@pytest.mark.parametrize("name", ["gr", "logistic", "mgr", "ce"])
def test_warm_start_equals_cold_solve(name):
    """Refit after adding labels: warm start from the previous latent values, same solver."""
    loss = LOSSES[name]
    W, _ = _graph()
    labeled, codes = _labels(n_labeled=12)
    targets = _targets(loss, codes)
    solver = LaplacianSolver(W)
    first = fit_full_graph(loss, W, labeled[:7], targets[:7], 0.05, 0.2, tol=1e-12, solver=solver)
    warm = fit_full_graph(
        loss, W, labeled, targets, 0.05, 0.2, init=first.latent, tol=1e-12, solver=solver
    )
    cold = fit_full_graph(
        loss, W, labeled, targets, 0.05, 0.2, tol=1e-12, solver=LaplacianSolver(W)
    )
    assert warm.converged and cold.converged
    np.testing.assert_allclose(warm.latent, cold.latent, atol=1e-9 * np.abs(cold.latent).max())


def test_preconditioner_low_rank_update_and_rebuild():
    """New labels are absorbed by the Woodbury correction; a lowered diagonal rebuilds."""
    W, _ = _graph(n=300, seed=3)
    solver = LaplacianSolver(W)
    rng = np.random.RandomState(0)
    b = rng.randn(300, 1)
    shift = np.full(300, 1e-4)
    shift[:5] += 100.0
    solver.solve(shift, b, atol=np.array([1e-10]))
    assert solver.n_setups == 1
    shift[5:10] += 100.0
    x, _, converged = solver.solve(shift, b, atol=np.array([1e-10]))
    assert converged and solver.n_setups == 1
    dense = normalized_laplacian(W).toarray() + np.diag(shift)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), atol=1e-8)
    shift[:5] = 1e-4
    solver.solve(shift, b, atol=np.array([1e-10]))
    assert solver.n_setups == 2


def test_woodbury_corrected_preconditioner_is_the_cycle_of_the_shifted_matrix():
    """New labels in any order, one of them again: ``(M^-1 + S' diag(added) S)^-1``.

    ``M^-1`` is the V-cycle of the hierarchy built for the first shift (a dense
    product here); the corrected preconditioner adds the labels' diagonal to
    ``M`` exactly, whatever the order the nodes came in.
    """
    W, _ = _graph(n=300, seed=3)
    solver = LaplacianSolver(W)
    base = np.full(300, 1e-4)
    base[200:220] += 100.0  # labels already in the hierarchy
    solver._prepare(base)
    cycle = solver._vcycle(np.eye(300))
    M = np.linalg.inv((cycle + cycle.T) / 2)
    shift = base.copy()
    for nodes, value in (([40, 7, 123], 50.0), ([7], 80.0), ([299, 0, 64, 12], 30.0)):
        shift[nodes] += value
        solver._prepare(shift)
        assert solver.n_setups == 1
        exact = np.linalg.inv(M + np.diag(shift - base))
        got = solver._precondition(np.eye(300))
        roundoff = 1000 * np.finfo(np.float32).eps
        np.testing.assert_allclose(got, exact, atol=roundoff * np.abs(exact).max())
    assert sorted(solver._nodes) == [0, 7, 12, 40, 64, 123, 299]


def test_block_vcycle_is_a_symmetric_positive_definite_preconditioner():
    """The V-cycle on a block of columns is one linear SPD operator, column by column the same.

    Its sparse levels are float32: symmetric and linear to that round-off.
    """
    W, _ = _graph(n=300, seed=3)
    solver = LaplacianSolver(W)
    shift = np.full(300, 1e-4)
    shift[:5] += 100.0
    solver._prepare(shift)
    assert solver._shift_hierarchy.n_levels >= 1  # a coarsening: the cycle, not only the factor
    M = solver._precondition(np.eye(300))
    roundoff = 100 * np.finfo(np.float32).eps
    np.testing.assert_allclose(M, M.T, atol=roundoff * np.abs(M).max())
    assert np.linalg.eigvalsh((M + M.T) / 2).min() > 0
    R = np.random.RandomState(0).randn(300, 4)
    block = solver._precondition(R)
    columns = np.column_stack([solver._precondition(R[:, [c]])[:, 0] for c in range(4)])
    np.testing.assert_allclose(block, columns, atol=roundoff * np.abs(block).max())
    np.testing.assert_allclose(block, M @ R, atol=roundoff * np.abs(block).max())


def test_chebyshev_smoother_is_the_chebyshev_residual_polynomial():
    """X = (I - T_k((theta I - D^-1 A) / delta) / T_k(theta / delta)) A^-1 R, and R - A X."""
    W, _ = _graph(n=60, seed=9)
    A = normalized_laplacian(W) + 0.01 * sp.identity(60, format="csr")
    scale = 1.0 / A.diagonal()
    upper = 1.8
    steps = _chebyshev_steps(upper, np.float64)
    lower = upper / SMOOTHER_RATIO
    theta, delta = (upper + lower) / 2, (upper - lower) / 2
    # T_k by its three-term recurrence on the matrix argument and on a scalar
    argument = (theta * np.eye(60) - np.diag(scale) @ A.toarray()) / delta
    T = [np.eye(60), argument]
    t = [1.0, theta / delta]
    for _ in range(SMOOTHER_DEGREE - 1):
        T.append(2 * argument @ T[-1] - T[-2])
        t.append(2 * (theta / delta) * t[-1] - t[-2])
    dense = (np.eye(60) - T[SMOOTHER_DEGREE] / t[SMOOTHER_DEGREE]) @ np.linalg.inv(A.toarray())
    rng = np.random.RandomState(0)
    R, X0 = rng.randn(60, 3), rng.randn(60, 3)
    for start in (None, X0):
        X, residual = _smooth(A, scale[:, None], steps, R, None if start is None else start.copy())
        base = np.zeros_like(R) if start is None else start
        np.testing.assert_allclose(X, base + dense @ (R - A @ base), atol=1e-12)
        np.testing.assert_allclose(residual, R - A @ X, atol=1e-12)
        alone, none = _smooth(A, scale[:, None], steps, R, None if start is None else start.copy(),
                              residual=False)  # fmt: skip
        assert none is None
        np.testing.assert_allclose(alone, X, atol=1e-12)


def test_coarse_inverse_gives_the_cycle_of_the_coarse_factor():
    """The Green's hierarchy's coarsest level by its (float32) inverse: the same V-cycle."""
    W, _ = _graph(n=300, seed=3)
    solver = LaplacianSolver(W)
    shift = np.full(300, 1e-3)
    factor, inverse = solver._hierarchy(shift), solver._hierarchy(shift, inverse=True)
    assert isinstance(inverse.coarse, np.ndarray) and inverse.coarse.dtype == np.float32
    dense = scipy.linalg.cho_solve(factor.coarse, np.eye(inverse.coarse.shape[0]))
    np.testing.assert_allclose(inverse.coarse, dense, atol=1e-6 * np.abs(dense).max())
    R = np.random.RandomState(1).randn(300, 4)
    expected = _vcycle(factor, R)
    roundoff = 100 * np.finfo(np.float32).eps * np.abs(expected).max()
    np.testing.assert_allclose(_vcycle(inverse, R), expected, atol=roundoff)
    ordered = _vcycle(inverse, R[inverse.order], ordered=True)
    np.testing.assert_allclose(ordered, expected[inverse.order], atol=roundoff)


def test_hierarchy_is_reproducible_and_leaves_numpy_random_alone():
    """pyamg draws from numpy's global stream: the same hierarchy each time, the stream unmoved."""
    W, _ = _graph(n=300, seed=3)
    solver = LaplacianSolver(W)
    np.random.seed(11)  # noqa: NPY002 (the global stream is what is checked)
    expected = np.random.rand()  # noqa: NPY002
    np.random.seed(11)  # noqa: NPY002
    first = solver._hierarchy(np.full(300, 1e-3))
    assert np.random.rand() == expected  # noqa: NPY002
    second = solver._hierarchy(np.full(300, 1e-3))
    for one, other in zip(first.levels, second.levels, strict=True):
        np.testing.assert_array_equal(one[1].toarray(), other[1].toarray())


def test_singular_system_with_zero_coarse_levels():
    """Shift 0 on three components: the coarsest level is zero; the projected solve is exact."""
    blocks = [sp.diags([np.ones(4), np.ones(4)], [-1, 1], shape=(5, 5)) for _ in range(3)]
    W = sp.block_diag(blocks).tocsr()
    solver = LaplacianSolver(W)
    root = np.sqrt(solver.degrees)
    nulls = np.zeros((15, 3))
    for c in range(3):
        nulls[5 * c : 5 * c + 5, c] = root[5 * c : 5 * c + 5]
    nulls /= np.linalg.norm(nulls, axis=0)

    def project(X):
        return X - nulls @ (nulls.T @ X)

    b = project(np.random.RandomState(0).randn(15, 2))
    x, _, converged = solver.solve(np.zeros(15), b, atol=np.full(2, 1e-12), project=project)
    assert converged
    L = dense_laplacian(W.toarray())
    np.testing.assert_allclose(project(x), np.linalg.pinv(L) @ b, atol=1e-10)


@pytest.mark.parametrize(("tau", "gamma"), [(0.005, 0.1), (0.1, 0.5)])
def test_active_learning_refits_match_a_dense_solve_at_the_default_tol(tau, gamma):
    """Warm refits adding labels in batches (Woodbury path), default tol: the dense MAP."""
    loss = LOSSES["mgr"]
    n = 300
    W, _ = _graph(n=n, seed=3)
    Q0 = normalized_laplacian(W).toarray() + tau**2 * np.eye(n)
    rng = np.random.RandomState(2)
    order = rng.permutation(n)[:30]
    Y = np.eye(N_CLASSES)[rng.randint(N_CLASSES, size=30)]
    solver, latent = LaplacianSolver(W), None
    for size in (6, 11, 16, 21, 30):
        labeled = order[:size]
        fit = fit_full_graph(loss, W, labeled, Y[:size], tau, gamma, init=latent, solver=solver)
        latent = fit.latent
        Q = Q0.copy()
        Q[labeled, labeled] += 1.0 / gamma**2
        B = np.zeros((n, N_CLASSES))
        B[labeled] = Y[:size] / gamma**2
        expected = np.linalg.solve(Q, B)
        assert fit.converged
        # DEFAULT_TOL (1e-8, relative residual) keeps latent values within 1e-5 of their scale
        np.testing.assert_allclose(latent, expected, atol=1e-5 * np.abs(expected).max())
        np.testing.assert_array_equal(latent.argmax(axis=1), expected.argmax(axis=1))
    assert solver.n_setups == 1


def test_green_refits_match_dense_solves_over_successive_batches():
    """Batches of new labels, a new gamma, a repeated node, then a new tau: each the dense MAP.

    The mgr refits go through the cached Green's columns of ``L + tau^2 I``:
    one hierarchy for the whole sequence, none per label or gamma, only the
    new nodes' columns solved; a new tau with 22 labeled nodes solves directly.
    """
    loss = LOSSES["mgr"]
    n = 300
    W, _ = _graph(n=n, seed=4)
    rng = np.random.RandomState(5)
    order = rng.permutation(n)[:26]
    codes = rng.randint(N_CLASSES, size=26)
    solver = LaplacianSolver(W)
    steps = [(2, 0.05, 0.2), (7, 0.05, 0.2), (12, 0.05, 0.2), (12, 0.05, 0.5), (17, 0.05, 0.5)]
    steps += [(22, 0.05, 0.1), (22, 0.2, 0.1)]
    for size, tau, gamma in steps:
        labeled, y = order[:size], codes[:size]
        if size == 17:  # one node labeled twice: its losses add up
            labeled, y = np.append(labeled, labeled[0]), np.append(y, y[0])
        targets = _targets(loss, y)
        fit = fit_full_graph(loss, W, labeled, targets, tau, gamma, tol=1e-12, solver=solver)
        expected = full_graph_map(loss, W, labeled, targets, tau, gamma)
        assert fit.converged
        np.testing.assert_allclose(fit.latent, expected, atol=1e-9 * np.abs(expected).max())
        if tau == 0.05:
            assert solver.n_green_missing(tau**2, np.unique(labeled)) == 0  # the Green's path
            assert solver.n_setups == 1 and solver._shift_hierarchy is None
    assert solver.n_setups == 2 and solver._shift_hierarchy is not None  # direct at the new tau


def test_green_columns_are_columns_of_the_inverse():
    W, _ = _graph(n=200, seed=6)
    solver = LaplacianSolver(W)
    nodes = np.array([3, 50, 199])
    _, converged = solver.green_solve(0.01, nodes, np.full(3, 1e-11))
    inverse = np.linalg.inv(normalized_laplacian(W).toarray() + 0.01 * np.eye(200))
    assert converged
    columns = inverse[:, nodes]
    np.testing.assert_allclose(solver.green_rows(0.01, np.arange(200), nodes), columns, atol=1e-9)
    coef = np.random.RandomState(0).randn(3, 2)
    np.testing.assert_allclose(solver.green_combine(0.01, nodes, coef), columns @ coef, atol=1e-9)
    assert np.all(solver.green_residuals(0.01, nodes) <= 1e-11)
    assert solver.green_solve(0.01, nodes, np.full(3, 1e-11)) == (0, True)  # cached


def test_green_columns_start_from_the_nearest_other_shift():
    """A new shift's columns start from the cached ones of the nearest other shift
    (the classifier's taus 0.01 and 0.03): fewer iterations than from zero, the
    same columns of the inverse."""
    W, _ = _graph(n=400, seed=6)
    nodes = np.array([3, 50, 199, 350])
    atol = np.full(4, 1e-10)
    cold = LaplacianSolver(W)
    cold_iterations, _ = cold.green_solve(0.03**2, nodes, atol)
    warm = LaplacianSolver(W)
    for tau2 in (1.0, 0.01**2):  # 0.01^2 is the nearer to 0.03^2 on a log scale
        warm.green_solve(tau2, nodes, np.full(4, 1e-12))
    seen = []
    original = warm._borrow

    def spy(green, todo, x, cols):
        original(green, todo, x, cols)
        seen.append(x[:, cols].copy())

    warm._borrow = spy
    warm_iterations, converged = warm.green_solve(0.03**2, nodes, atol)
    assert converged and warm_iterations < cold_iterations
    order = warm._greens[0.03**2].hierarchy.order
    near = dense_green(W, 0.01)[:, nodes]
    np.testing.assert_allclose(seen[0], near[order], atol=1e-8)  # the start, in the solve's order
    got = warm.green_rows(0.03**2, np.arange(400), nodes)
    np.testing.assert_allclose(got, dense_green(W, 0.03)[:, nodes], atol=1e-7)
    assert np.all(warm.green_residuals(0.03**2, nodes) <= 1e-10)
    # a node with no column at any other shift starts from zero, beside borrowed ones
    more = np.array([3, 77])
    _, converged = warm.green_solve(0.1**2, more, np.full(2, 1e-10))
    assert converged and len(seen) == 2
    assert np.any(seen[1][:, 0] != 0) and np.all(seen[1][:, 1] == 0)
    np.testing.assert_allclose(
        warm.green_rows(0.1**2, np.arange(400), more), dense_green(W, 0.1)[:, more], atol=1e-8
    )


def test_borrowed_columns_are_corrected_on_the_low_modes():
    """With eigenpairs of ``L`` (set_low_modes) a borrowed column starts as
    ``g_a + V ((Lambda + tau_b^2)^-1 - (Lambda + tau_a^2)^-1) V' e_i``: exact with
    every pair (no iteration), fewer iterations than the plain borrow with a
    few, the same columns of the inverse either way."""
    n = 400
    W, _ = _graph(n=n, seed=6)
    nodes = np.array([3, 50, 199, 350])
    lam, V = np.linalg.eigh(dense_laplacian(W))
    lam = np.clip(lam, 0.0, None)
    atol = np.full(4, 1e-9)

    def borrowed(low_modes):
        solver = LaplacianSolver(W)
        if low_modes is not None:
            solver.set_low_modes(*low_modes)
        solver.green_solve(0.01**2, nodes, np.full(4, 1e-13))
        seen = []
        original = solver._borrow

        def spy(green, todo, x, cols):
            original(green, todo, x, cols)
            seen.append(x[:, cols][np.argsort(green.hierarchy.order)])  # node order
        solver._borrow = spy
        iterations, converged = solver.green_solve(0.03**2, nodes, atol)
        assert converged and np.all(solver.green_residuals(0.03**2, nodes) <= atol)
        got = solver.green_rows(0.03**2, np.arange(n), nodes)
        np.testing.assert_allclose(got, dense_green(W, 0.03)[:, nodes], atol=1e-7)
        return iterations, seen[0]

    plain, _ = borrowed(None)
    exact, start = borrowed((lam, V))
    assert exact == 0
    np.testing.assert_allclose(start, dense_green(W, 0.03)[:, nodes], atol=1e-9)
    few, start = borrowed((lam[:10], V[:, :10]))
    assert few < plain
    change = 1.0 / (lam[:10] + 0.03**2) - 1.0 / (lam[:10] + 0.01**2)
    expected = dense_green(W, 0.01)[:, nodes] + V[:, :10] @ (change[:, None] * V[nodes, :10].T)
    np.testing.assert_allclose(start, expected, atol=1e-9)


def test_low_modes_of_the_wrong_shape_are_refused():
    solver = LaplacianSolver(_graph()[0])
    with pytest.raises(ValueError, match=r"shape \(n_nodes, n_eigenvalues\) = \(40, 3\)"):
        solver.set_low_modes(np.zeros(3), np.zeros((39, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        solver.set_low_modes(np.array([0.0, np.nan]), np.zeros((40, 2)))


@pytest.mark.parametrize("tol", [1e-4, 1e-8])
def test_green_fit_meets_its_residual_tolerance(tol):
    """The fit's residual, its labeled rows scaled by ``min(1, gamma^2)``, meets ``tol``."""
    n = 300
    W, _ = _graph(n=n, seed=7)
    solver = LaplacianSolver(W)
    rng = np.random.RandomState(8)
    labeled = rng.choice(n, 9, replace=False)
    Y = np.eye(N_CLASSES)[np.arange(9) % N_CLASSES]
    tau, gamma = 0.02, 0.1
    for size in (6, 9):
        fit = fit_full_graph(LOSSES["mgr"], W, labeled[:size], Y[:size], tau, gamma, tol=tol,
                             solver=solver)  # fmt: skip
        shift = np.full(n, tau**2)
        shift[labeled[:size]] += 1.0 / gamma**2
        B = np.zeros((n, N_CLASSES))
        B[labeled[:size]] = Y[:size] / gamma**2
        scale = np.ones((n, 1))
        scale[labeled[:size]] = gamma**2
        residual = scale * (B - solver.matvec(shift, fit.latent))
        assert np.linalg.norm(residual) <= tol * np.linalg.norm(scale * B)
        # gr: one right-hand side, the first columns' tolerance the loosest (m = 1)
        y = np.where(np.arange(size) % 2 == 0, 1.0, -1.0)
        fit = fit_full_graph(LOSSES["gr"], W, labeled[:size], y, tau, gamma, tol=tol,
                             solver=solver)  # fmt: skip
        b = np.zeros(n)
        b[labeled[:size]] = y / gamma**2
        residual = scale[:, 0] * (b - solver.matvec(shift, fit.latent))
        assert np.linalg.norm(residual) <= tol * np.linalg.norm(scale[:, 0] * b)
    assert solver._shift_hierarchy is None


def test_solver_for_is_shared_per_matrix():
    W, _ = _graph()
    assert solver_for(W) is solver_for(W)
    assert solver_for(W.copy()) is not solver_for(W)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"labeled": np.array([0, 99])}, "outside"),
        ({"labeled": np.array([0.0, 1.0])}, "1-D array of node indices"),
        ({"targets": np.array([1.0])}, "targets must have shape"),
        ({"tau": 0.0}, "tau must be a positive"),
        ({"gamma": -1.0}, "gamma must be a positive"),
        ({"init": np.zeros(3)}, "init must have shape"),
    ],
)
def test_errors(kwargs, match):
    W, _ = _graph()
    args = {
        "labeled": np.array([0, 1]),
        "targets": np.array([-1.0, 1.0]),
        "tau": 0.1,
        "gamma": 0.5,
        "init": None,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        fit_full_graph(
            LOSSES["gr"],
            W,
            args["labeled"],
            args["targets"],
            args["tau"],
            args["gamma"],
            init=args["init"],
        )


@pytest.mark.parametrize("name", ["gr", "logistic", "mgr", "ce"])
def test_spectral_hessian_at_the_full_graph_map(name):
    """Lambda_tau + P'HP from explicit per-label curvature matrices."""
    loss = LOSSES[name]
    W, _ = _graph()
    labeled, codes = _labels()
    targets = _targets(loss, codes)
    tau, gamma = 0.1, 0.5
    fit = fit_full_graph(loss, W, labeled, targets, tau, gamma, tol=1e-12)
    eigenvalues, V = np.linalg.eigh(dense_laplacian(W))
    prior, P = eigenvalues[:6] + tau**2, V[labeled, :6]
    got = spectral_hessian(loss, prior, P, fit, gamma)
    if name == "ce":
        expected = np.kron(np.eye(N_CLASSES), np.diag(prior))
        for j, pi in enumerate(loss.proba(fit.latent[labeled], gamma)):
            block = (np.diag(pi) - np.outer(pi, pi)) / gamma**2
            expected += np.kron(block, np.outer(P[j], P[j]))
    else:
        if name == "logistic":
            second = loss.derivatives(fit.latent[labeled], targets, gamma)[1]
        else:
            second = np.full(labeled.size, 1.0 / gamma**2)
        expected = np.diag(prior) + P.T @ np.diag(second) @ P
    np.testing.assert_allclose(got, expected, atol=1e-10)


def test_classifier_full_refits_reuse_the_auto_choice(monkeypatch):
    """model="full": a warm refit keeps (tau, gamma) until the labels grow by a quarter."""
    from sklearn.datasets import make_moons

    import skmcal.classifier as module
    from skmcal import SpectralGraphClassifier

    calls = []
    select = module.select_full_hyperparameters

    def counting(block, targets, *args, **kwargs):
        calls.append(targets.shape[0])
        return select(block, targets, *args, **kwargs)

    monkeypatch.setattr(module, "select_full_hyperparameters", counting)
    X, y_true = make_moons(200, noise=0.05, random_state=0)
    order = np.random.RandomState(0).permutation(200)
    clf = SpectralGraphClassifier("mgr", model="full", n_eigs=20)
    for size in (8, 9, 10, 11):
        y = np.full(200, -1)
        y[order[:size]] = y_true[order[:size]]
        clf.fit(X, y)
    assert calls == [8, 10]
    cold = SpectralGraphClassifier(
        "mgr", model="full", n_eigs=20, tau=clf.tau_, gamma=clf.gamma_, warm_start=False
    ).fit(X, y)
    np.testing.assert_allclose(
        clf.posterior_.base, cold.posterior_.base, atol=1e-5 * np.abs(cold.posterior_.base).max()
    )


def test_classifier_full_search_climbs_from_the_last_choice(monkeypatch):
    """model="full": a cold fit searches every tau, a warm search climbs from the last
    choice; the columns of that tau are solved at the classifier's tol (the fit needs
    them), those of the others at FULL_EVIDENCE_TOL, their entries to second order."""
    from sklearn.datasets import make_moons

    import skmcal.classifier as module
    from skmcal import SpectralGraphClassifier
    from skmcal.evidence import FULL_EVIDENCE_TOL, FULL_TAUS

    starts, solves = [], []
    select, block = module.select_full_hyperparameters, module.green_block

    def recording_select(*args, start=None, **kwargs):
        starts.append(start)
        solves.append([])
        return select(*args, start=start, **kwargs)

    def recording_block(weights, labeled, tau, *, tol, solver, second_order):
        solves[-1].append((tau, tol, second_order))
        return block(weights, labeled, tau, tol=tol, solver=solver, second_order=second_order)

    monkeypatch.setattr(module, "select_full_hyperparameters", recording_select)
    monkeypatch.setattr(module, "green_block", recording_block)
    X, y_true = make_moons(200, noise=0.05, random_state=0)
    order = np.random.RandomState(0).permutation(200)
    clf = SpectralGraphClassifier("mgr", model="full", n_eigs=20, tol=1e-9)
    chosen = []
    for size in (8, 10):
        y = np.full(200, -1)
        y[order[:size]] = y_true[order[:size]]
        clf.fit(X, y)
        chosen.append(clf.tau_)
    assert starts == [None, chosen[0]]
    assert solves[0] == [(tau, FULL_EVIDENCE_TOL, True) for tau in FULL_TAUS]
    warm = {tau: (tol, second) for tau, tol, second in solves[1]}
    assert warm[chosen[0]] == (1e-9, False)
    assert all(v == (FULL_EVIDENCE_TOL, True) for tau, v in warm.items() if tau != chosen[0])
    i = FULL_TAUS.index(chosen[0])  # the climb tries the smaller neighbour first
    assert FULL_TAUS[i - 1 if i > 0 else i + 1] in warm


def test_second_order_green_block_meets_its_bound():
    """green_block(second_order=True) from loose columns: each entry within
    ``||r_i|| ||r_j|| / tau^2`` of the dense inverse's (a node labeled twice), where
    the entries read from the same columns are off by more; kept entries are reused
    (new nodes' only are computed) and stay valid when the columns are refined."""
    n, tau = 300, 0.05
    W, _ = _graph(n=n, seed=11)
    exact = dense_green(W, tau)
    solver = LaplacianSolver(W)
    first = np.array([4, 40, 150, 40, 260])
    K = green_block(W, first, tau, tol=3e-2, solver=solver, second_order=True)
    nodes = np.unique(first)
    r = solver.green_residuals(tau**2, nodes)
    assert np.all(r <= 3e-2) and np.any(r > 1e-4)  # loose columns
    pos = np.searchsorted(nodes, first)
    bound = np.outer(r, r)[np.ix_(pos, pos)] / tau**2
    truth = exact[np.ix_(first, first)]
    assert np.all(np.abs(K - truth) <= bound)
    # the entries read from the same columns: off by more between nodes (on the
    # diagonal both are: a column from zero is CG's, x_i' r_i = 0)
    read = green_block(W, first, tau, tol=3e-2, solver=solver)
    apart = first[:, None] != first[None, :]
    assert np.abs(read - truth)[apart].max() > 10 * np.abs(K - truth)[apart].max()
    np.testing.assert_allclose(K, K.T, atol=0)
    # two more nodes: only they are computed (their residuals in one product)
    green = solver._greens[tau**2]
    widths = []
    original = green.product
    green.product = lambda X, n_parts=1: widths.append(X.shape[1]) or original(X, n_parts)
    more = np.array([4, 40, 150, 260, 7, 99])
    K2 = green_block(W, more, tau, tol=3e-2, solver=solver, second_order=True)
    assert widths[-1] == 2
    np.testing.assert_array_equal(K2[:4, :4], K[np.ix_([0, 1, 2, 4], [0, 1, 2, 4])])
    r2 = solver.green_residuals(tau**2, more)
    assert np.all(np.abs(K2 - exact[np.ix_(more, more)]) <= np.outer(r2, r2) / tau**2)
    # refined columns (a fit's tolerance): the kept entries are returned as they were
    solver.green_solve(tau**2, np.sort(more), np.full(6, 1e-12))
    K3 = green_block(W, more, tau, tol=1e-12, solver=solver, second_order=True)
    np.testing.assert_array_equal(K3, K2)


def test_second_order_entries_past_their_cap_keep_the_nodes_asked_for(monkeypatch):
    """Past MAX_ESTIMATE_NODES the entries of nodes not asked for are dropped, those among
    the nodes asked for kept (not computed again): the values of a solver without a cap."""
    n, tau = 200, 0.05
    W, _ = _graph(n=n, seed=12)
    monkeypatch.setattr(skmcal.fullgraph, "MAX_ESTIMATE_NODES", 5)
    capped, whole = LaplacianSolver(W), LaplacianSolver(W)
    sets = (np.array([1, 30, 60]), np.array([1, 30, 60, 90, 120, 150]), np.array([60, 90, 7]))
    # entries computed at each call: every node, then the three new ones, then the
    # one new (60 and 90 kept past the cap, 1, 30, 120 and 150 dropped)
    for labeled, computed in zip(sets, (3, 3, 1), strict=True):
        widths = []
        capped.green_solve(tau**2, np.unique(labeled), np.full(np.unique(labeled).size, 1e-3))
        green = capped._greens[tau**2]
        original = green.product  # now the residuals of the entries computed
        green.product = lambda X, n_parts=1, f=original, w=widths: w.append(X.shape[1]) or f(X)
        got = green_block(W, labeled, tau, tol=1e-3, solver=capped, second_order=True)
        green.product = original
        assert len(capped._greens[tau**2]._slot) <= max(5, labeled.size)
        monkeypatch.setattr(skmcal.fullgraph, "MAX_ESTIMATE_NODES", 100)
        want = green_block(W, labeled, tau, tol=1e-3, solver=whole, second_order=True)
        monkeypatch.setattr(skmcal.fullgraph, "MAX_ESTIMATE_NODES", 5)
        np.testing.assert_allclose(got, want, atol=1e-12)
        assert widths == [computed]


def test_green_block_is_the_labeled_block_of_the_inverse():
    """K at two taus (both kept: switching back solves nothing), a node labeled twice."""
    W, _ = _graph(n=200, seed=9)
    solver = LaplacianSolver(W)
    labeled = np.array([5, 17, 5, 120, 199])
    for tau in (0.03, 0.2):
        K = green_block(W, labeled, tau, tol=1e-12, solver=solver)
        np.testing.assert_allclose(K, dense_green(W, tau)[np.ix_(labeled, labeled)], atol=1e-10)
    setups = solver.n_setups
    assert solver.green_solve(0.03**2, np.unique(labeled), np.full(4, 1e-12)) == (0, True)
    assert solver.n_setups == setups == 2


def test_green_columns_of_old_taus_are_dropped_beyond_the_byte_budget(monkeypatch):
    import skmcal.fullgraph as module

    W, _ = _graph(n=100, seed=10)
    monkeypatch.setattr(module, "MAX_GREEN_BYTES", 8 * 100 * 5)  # five columns
    solver = LaplacianSolver(W)
    nodes = np.array([1, 2, 3])
    for tau2 in (0.01, 0.04):
        solver.green_solve(tau2, nodes, np.full(3, 1e-10))
    assert solver.n_green_missing(0.01, nodes) == 3  # the older shift went
    assert solver.n_green_missing(0.04, nodes) == 0


def test_green_columns_of_earlier_fits_are_dropped_beyond_the_byte_budget(monkeypatch):
    """One shift over the budget: the blocks of other nodes go, the current ones stay right."""
    import skmcal.fullgraph as module

    W, _ = _graph(n=100, seed=10)
    monkeypatch.setattr(module, "MAX_GREEN_BYTES", 8 * 100 * 5)  # five columns
    solver = LaplacianSolver(W)
    for nodes in ([1, 2], [3, 4], [5, 6, 7]):
        solver.green_solve(0.1**2, np.array(nodes), np.full(len(nodes), 1e-10))
    assert solver.n_green_missing(0.1**2, np.array([1, 2])) == 2  # the oldest block went
    assert solver.n_green_missing(0.1**2, np.array([3, 4, 5, 6, 7])) == 0
    labeled = np.array([5, 6, 7])
    K = green_block(W, labeled, 0.1, tol=1e-12, solver=solver)
    np.testing.assert_allclose(K, dense_green(W, 0.1)[np.ix_(labeled, labeled)], atol=1e-10)
    np.testing.assert_allclose(
        solver.green_combine(0.1**2, labeled, np.eye(3)),
        dense_green(W, 0.1)[:, labeled],
        atol=1e-8,
    )


@pytest.mark.parametrize("name", ["gr", "mgr"])
@pytest.mark.parametrize("n_labeled", [6, 30])  # Green's columns; a direct solve
def test_free_offset_fits_the_labels_less_their_offset(name, n_labeled):
    """free_offset: the dense MAP of the targets less their projection on sqrt(degrees)."""
    loss = LOSSES[name]
    W, _ = _graph(n=120, seed=11)
    rng = np.random.RandomState(12)
    labeled = rng.choice(120, n_labeled, replace=False)
    codes = np.arange(n_labeled) % N_CLASSES
    targets = _targets(loss, codes)
    fit = fit_full_graph(loss, W, labeled, targets, 0.05, 0.2, tol=1e-13, free_offset=True,
                         solver=LaplacianSolver(W))  # fmt: skip
    w = np.sqrt(np.asarray(W.sum(axis=1)).ravel()[labeled])
    Y = targets.reshape(n_labeled, -1)
    centred = Y - np.outer(w, w @ Y) / (w @ w)
    expected = full_graph_map(loss, W, labeled, centred.reshape(targets.shape), 0.05, 0.2)
    np.testing.assert_allclose(fit.latent, expected, atol=1e-9 * np.abs(expected).max())
    with pytest.raises(ValueError, match="free_offset=True takes the losses 'gr' and 'mgr'"):
        fit_full_graph(LOSSES["ce"], W, labeled, np.eye(N_CLASSES)[codes], 0.05, 0.2,
                       free_offset=True)  # fmt: skip


@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_classifier_full_choice_is_the_dense_evidence_maximum(loss):
    """model="full", tau/gamma "auto": the grid maximum of the evidence of dense Green's blocks."""
    from sklearn.datasets import make_blobs

    from skmcal import SpectralGraphClassifier
    from skmcal.evidence import FULL_GAMMAS, FULL_TAUS

    n_classes = 2 if loss == "gr" else 3
    X, y_true = make_blobs(150, centers=n_classes, cluster_std=2.5, random_state=3)
    y = np.full(150, -1)
    labeled = np.random.RandomState(4).choice(150, 12, replace=False)
    y[labeled] = y_true[labeled]
    clf = SpectralGraphClassifier(loss, model="full", n_eigs=20).fit(X, y)
    W = clf.graph_.weights
    w = np.sqrt(np.asarray(W.sum(axis=1)).ravel()[labeled])
    Y = np.eye(n_classes)[y_true[labeled]] if loss == "mgr" else 2.0 * y_true[labeled] - 1.0
    Y = Y.reshape(12, -1)
    table = {}
    for tau in FULL_TAUS:
        K = dense_green(W, tau)[np.ix_(labeled, labeled)]
        for gamma in FULL_GAMMAS:  # the restricted likelihood, amplitude profiled
            S = K + gamma**2 * np.eye(12)
            B = scipy.linalg.null_space(w[None, :])
            quad = np.trace(Y.T @ B @ np.linalg.solve(B.T @ S @ B, B.T @ Y))
            dof = Y.shape[1] * 11
            table[tau, gamma] = -0.5 * dof * np.log(quad / dof) - 0.5 * Y.shape[
                1
            ] * np.linalg.slogdet(B.T @ S @ B)[1]
    assert (clf.tau_, clf.gamma_) == max(table, key=table.get)
    np.testing.assert_array_equal(np.sort(clf.labeled_nodes_), np.sort(labeled))


def test_class_offset_is_the_least_squares_coefficient_on_sqrt_degrees():
    W, _ = _graph(n=60, seed=13)
    labeled = np.array([3, 9, 27, 40])
    T = np.eye(3)[[0, 1, 1, 2]]
    w = np.sqrt(np.asarray(W.sum(axis=1)).ravel()[labeled])
    expected = np.linalg.lstsq(w[:, None], T, rcond=None)[0][0]
    np.testing.assert_allclose(class_offset(W, labeled, T), expected, rtol=1e-12)
    isolated = sp.csr_matrix((5, 5))
    np.testing.assert_array_equal(class_offset(isolated, [0, 2], np.eye(2)), np.zeros(2))


def test_posterior_around_takes_an_offset_for_gr_and_mgr_only():
    from skmcal.fitting import posterior_around

    V = np.linalg.qr(np.random.RandomState(0).randn(8, 3))[0]
    with pytest.raises(ValueError, match="offset takes the losses 'gr' and 'mgr'; got 'ce'"):
        posterior_around(LOSSES["ce"], np.ones(3), V, np.array([0, 1]), np.eye(2), 0.5,
                         np.zeros((8, 2)), offset=(np.ones(8), np.zeros(2)))  # fmt: skip


def test_dropping_green_blocks_keeps_the_others_and_their_index():
    """_GreenColumns.drop_blocks: the oldest blocks without a kept node go, the list
    closes up (no empty slots accumulate over a long loop), every column left is found."""
    from types import SimpleNamespace

    from skmcal.fullgraph import _GreenColumns

    n = 12
    green = _GreenColumns(0.01, SimpleNamespace(order=np.arange(n)), None)
    rng = np.random.RandomState(0)
    batches = [np.array([0, 1]), np.array([2, 3, 4]), np.array([5]), np.array([6, 7])]
    stored = {}
    for nodes in batches:
        x = rng.randn(n, nodes.size)
        green.store(nodes, x, np.full(nodes.size, 1e-9))
        stored.update({int(i): x[:, j] for j, i in enumerate(nodes)})
    # free two columns' worth, keeping the nodes of the second block: the first block goes
    green.drop_blocks(keep=np.array([3]), excess=2 * 8 * n, column_bytes=8 * n)
    assert len(green.blocks) == len(green.norms) == 3
    assert green.n_columns == 6 and set(green.where) == {2, 3, 4, 5, 6, 7}
    kept = np.array([7, 2, 5, 4])
    np.testing.assert_array_equal(green.columns(kept), np.column_stack([stored[i] for i in kept]))
    # then more than is left without a kept node: every block but the kept one goes
    green.drop_blocks(keep=np.array([6]), excess=10**9, column_bytes=8 * n)
    assert len(green.blocks) == 1 and set(green.where) == {6, 7} and green.n_columns == 2
    np.testing.assert_array_equal(green.columns(np.array([6, 7]))[:, 1], stored[7])


def test_row_blocks_on_threads_give_one_threads_products_and_cycles(monkeypatch):
    """Sparse products, V-cycles (every column count: the coarsest inverse's products
    are blocked alike) and Laplacian products in row blocks: the same values."""
    monkeypatch.setattr(skmcal.fullgraph, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(skmcal.fullgraph, "MIN_BLOCK_ROWS", 1)
    W, _ = _graph(n=300, seed=3)
    rng = np.random.RandomState(0)
    shift = np.full(300, 1e-3)
    shift[:5] += 50.0
    values = {}
    for n_parts in (1, 2, 3):
        solver = LaplacianSolver(W)
        with solver_threads(n_parts):
            hierarchy = solver._hierarchy(shift, inverse=True)
            assert (hierarchy.split(n_parts) is None) == (n_parts == 1)
            solver._prepare(shift)
            out = []
            for k in (1, 2, 5, 12):
                R = rng.randn(300, k) if n_parts == 1 else values[1][len(out)]
                out += [R, _vcycle(hierarchy, R, n_parts=n_parts),
                        _vcycle(hierarchy, R, ordered=True, n_parts=n_parts),
                        solver._precondition(R), solver.matvec(shift, R)]  # fmt: skip
            values[n_parts] = out
    for n_parts in (2, 3):
        for one, split in zip(values[1], values[n_parts], strict=True):
            np.testing.assert_array_equal(split, one)


@pytest.mark.parametrize("loss", ["mgr", "ce", "probit"])
def test_fits_on_threads_match_one_thread(loss, monkeypatch):
    """Fits with the rows split on three threads: one thread's values to round-off (the
    inner products may round differently), through Green's columns and directly."""
    monkeypatch.setattr(skmcal.fullgraph, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(skmcal.fullgraph, "MIN_BLOCK_ROWS", 1)
    W, _ = _graph()
    labeled, codes = _labels(n_labeled=4)
    many = np.arange(0, N_NODES, 4)
    many_codes = np.arange(many.size) % N_CLASSES
    fits = {}
    for n_threads in (1, 3):
        with solver_threads(n_threads):
            solver = LaplacianSolver(W)
            fits[n_threads] = [
                fit_full_graph(LOSSES[loss], W, nodes, _targets(LOSSES[loss], c), 0.05, 0.1,
                               solver=solver).latent
                for nodes, c in ((labeled, codes), (many, many_codes))
            ]  # fmt: skip
    for one, split in zip(fits[1], fits[3], strict=True):
        np.testing.assert_allclose(split, one, atol=1e-10 * np.abs(one).max())


def test_classifier_fits_split_rows_on_n_jobs_threads(monkeypatch):
    """model="full": the solves' row blocks follow n_jobs, up to the cores."""
    from sklearn.datasets import make_blobs

    from skmcal import SpectralGraphClassifier

    monkeypatch.setattr(skmcal.fullgraph, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(skmcal.fullgraph, "MIN_BLOCK_ROWS", 1)
    parts = []
    run = skmcal.fullgraph.run_parts
    monkeypatch.setattr(skmcal.fullgraph, "run_parts",
                        lambda n, f: parts.append(n) or run(n, f))  # fmt: skip
    X, y = make_blobs(200, centers=3, random_state=0)
    y_train = np.full(200, -1)
    y_train[:12] = y[:12]
    fits = {}
    for n_jobs in (1, 3):
        parts.clear()
        clf = SpectralGraphClassifier("mgr", model="full", n_jobs=n_jobs, cache=False)
        fits[n_jobs] = clf.fit(X, y_train).predict_proba(X)
        # (the coarsest products run in one part alone; threads at most the cores)
        assert max(parts) == min(n_jobs, os.cpu_count() or 1)
    np.testing.assert_allclose(fits[3], fits[1], atol=1e-9)


def test_row_blocks_follow_the_threads_up_to_one_per_min_block_rows():
    from skmcal.fullgraph import MIN_BLOCK_ROWS, PARALLEL_MIN_ROWS, _n_parts

    with solver_threads(64):
        assert _n_parts(70_000) == 70_000 // MIN_BLOCK_ROWS
        assert _n_parts(PARALLEL_MIN_ROWS - 1) == 1
    with solver_threads(2):
        assert _n_parts(PARALLEL_MIN_ROWS) == 2 and _n_parts(10**6) == 2
    with solver_threads(1):
        assert _n_parts(10**6) == 1
