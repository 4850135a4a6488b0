"""Evidence of the spectral model against dense evaluations of the same formulas."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from skmcal import SpectralGraphClassifier
from skmcal.evidence import (
    constant_share,
    full_log_evidence,
    log_evidence,
    prior_scale,
    select_full_hyperparameters,
    select_hyperparameters,
)
from skmcal.fitting import fit_posterior
from skmcal.losses import LOSSES

M, N_LABELED, N_CLASSES = 6, 10, 3


def _problem(seed=0):
    rng = np.random.RandomState(seed)
    V = np.linalg.qr(rng.randn(40, M))[0]
    eigenvalues = np.sort(rng.uniform(0, 1, M))
    eigenvalues[0] = 0.0
    labeled = rng.choice(40, N_LABELED, replace=False)
    codes = np.argmax(V[labeled, 1:4] + 0.05 * rng.randn(N_LABELED, 3), axis=1)
    return eigenvalues, V[labeled], codes


def _targets(loss, codes):
    return np.eye(N_CLASSES)[codes] if loss.multiclass else np.where(codes == 0, -1.0, 1.0)


@pytest.mark.parametrize("name", ["gr", "mgr"])
@pytest.mark.parametrize(("tau", "gamma"), [(0.01, 0.1), (0.3, 1.0)])
def test_closed_form_matches_dense_gaussian_density(name, tau, gamma):
    loss = LOSSES[name]
    eigenvalues, P, codes = _problem()
    targets = _targets(loss, codes)
    S = gamma**2 * np.eye(N_LABELED) + P @ np.diag(1.0 / (eigenvalues + tau**2)) @ P.T
    Y = targets.reshape(N_LABELED, -1)
    expected = sum(
        multivariate_normal(np.zeros(N_LABELED), S).logpdf(Y[:, c]) for c in range(Y.shape[1])
    )
    got = log_evidence(loss, eigenvalues, P, targets, tau, gamma)
    assert got == pytest.approx(expected, rel=1e-10)


def _dense_laplace(loss, eigenvalues, P, targets, tau, gamma, scale=1.0):
    """The Laplace formula from explicit full-space matrices (class-major for ce),
    for the prior covariance ``scale * Lambda_tau^-1``."""
    prior = (eigenvalues + tau**2) / scale
    coef = fit_posterior(loss, prior, P, np.arange(P.shape[0]), targets, gamma).coef
    if loss.multiclass:
        U = P @ coef
        Pi = loss.proba(U, gamma)
        H = np.kron(np.eye(N_CLASSES), np.diag(prior))
        for j in range(N_LABELED):
            block = (np.diag(Pi[j]) - np.outer(Pi[j], Pi[j])) / gamma**2
            H += np.kron(block, np.outer(P[j], P[j]))
        log_prior_det = N_CLASSES * np.sum(np.log(prior))
        quad = np.sum(prior[:, None] * coef**2)
    else:
        second = loss.derivatives(P @ coef, targets, gamma)[1]
        H = np.diag(prior) + P.T @ np.diag(second) @ P
        log_prior_det = np.sum(np.log(prior))
        quad = np.sum(prior * coef**2)
    value = loss.value(P @ coef, targets, gamma).sum()
    return -value - 0.5 * quad - 0.5 * np.linalg.slogdet(H)[1] + 0.5 * log_prior_det


@pytest.mark.parametrize("name", ["logistic", "probit", "ce"])
@pytest.mark.parametrize(("tau", "gamma"), [(0.01, 0.1), (0.3, 1.0)])
def test_laplace_matches_dense_formula(name, tau, gamma):
    loss = LOSSES[name]
    eigenvalues, P, codes = _problem()
    targets = _targets(loss, codes)
    got = log_evidence(loss, eigenvalues, P, targets, tau, gamma)
    expected = _dense_laplace(loss, eigenvalues, P, targets, tau, gamma)
    assert got == pytest.approx(expected, rel=1e-9)


def test_laplace_formula_is_exact_for_the_gaussian_likelihood():
    """For gr, the Laplace formula with the normalising constant equals the closed form."""
    loss = LOSSES["gr"]
    eigenvalues, P, codes = _problem()
    targets = _targets(loss, codes)
    tau, gamma = 0.05, 0.4
    laplace = _dense_laplace(loss, eigenvalues, P, targets, tau, gamma)
    constant = -N_LABELED * (np.log(gamma) + 0.5 * np.log(2.0 * np.pi))
    assert log_evidence(loss, eigenvalues, P, targets, tau, gamma) == pytest.approx(
        laplace + constant, rel=1e-10
    )


@pytest.mark.parametrize("name", ["mgr", "ce"])
def test_select_hyperparameters_takes_the_grid_maximum(name):
    loss = LOSSES[name]
    eigenvalues, P, codes = _problem()
    targets = _targets(loss, codes)
    taus, gammas = (0.01, 0.1, 0.5), (0.1, 0.3, 1.0)
    tau, gamma, table = select_hyperparameters(loss, eigenvalues, P, targets, taus, gammas)
    brute = np.array(
        [[log_evidence(loss, eigenvalues, P, targets, t, g) for g in gammas] for t in taus]
    )
    np.testing.assert_allclose(table, brute, rtol=1e-8)
    i, j = np.unravel_index(np.argmax(brute), brute.shape)
    assert (tau, gamma) == (taus[i], gammas[j])


def test_prior_scale_gives_unit_mean_node_variance():
    rng = np.random.RandomState(1)
    V = np.linalg.qr(rng.randn(30, 5))[0]
    eigenvalues = np.array([0.0, 0.02, 0.1, 0.4, 0.9])
    for tau in (0.01, 0.3):
        s = prior_scale(eigenvalues, tau, 30)
        prior_cov = s * V @ np.diag(1.0 / (eigenvalues + tau**2)) @ V.T
        assert np.mean(np.diag(prior_cov)) == pytest.approx(1.0, rel=1e-12)
    for bad in (0, -3, 2.5, None):
        with pytest.raises(ValueError, match="n_nodes must be a positive integer"):
            prior_scale(eigenvalues, 0.1, bad)


@pytest.mark.parametrize("name", ["gr", "mgr", "logistic", "ce"])
def test_relative_gammas_are_the_scaled_prior_model(name):
    """With n_nodes, grid point (tau, g) is the prior s Lambda_tau^-1 with gamma g,
    evaluated densely; the gamma returned is g / sqrt(s)."""
    loss = LOSSES[name]
    eigenvalues, P, codes = _problem()
    targets = _targets(loss, codes)
    taus, gammas, n_nodes = (0.01, 0.1, 0.5), (0.1, 0.3, 1.0), 40
    tau, gamma, table = select_hyperparameters(
        loss, eigenvalues, P, targets, taus, gammas, n_nodes=n_nodes
    )
    Y = targets.reshape(N_LABELED, -1)
    brute = np.empty((len(taus), len(gammas)))
    for i, t in enumerate(taus):
        s = n_nodes / np.sum(1.0 / (eigenvalues + t**2))
        for j, g in enumerate(gammas):
            if loss.closed_form:
                S = g**2 * np.eye(N_LABELED) + s * P @ np.diag(1.0 / (eigenvalues + t**2)) @ P.T
                brute[i, j] = sum(
                    multivariate_normal(np.zeros(N_LABELED), S).logpdf(Y[:, c])
                    for c in range(Y.shape[1])
                )
            else:
                brute[i, j] = _dense_laplace(loss, eigenvalues, P, targets, t, g, scale=s)
                # the same as the unscaled model at g / sqrt(s)
                unscaled = log_evidence(loss, eigenvalues, P, targets, t, g / np.sqrt(s))
                assert brute[i, j] == pytest.approx(unscaled, rel=1e-8)
    np.testing.assert_allclose(table, brute, rtol=1e-8)
    i, j = np.unravel_index(np.argmax(brute), brute.shape)
    s = n_nodes / np.sum(1.0 / (eigenvalues + taus[i] ** 2))
    assert tau == taus[i]
    assert gamma == pytest.approx(gammas[j] / np.sqrt(s), rel=1e-12)


def test_scaled_prior_and_relative_gamma_give_the_unscaled_map():
    """The MAP of prior s Lambda^-1 at gamma g is the unscaled one at g / sqrt(s)
    (gr: the same latent values; ce: latent values sqrt(s) times, the same probabilities)."""
    eigenvalues, P, codes = _problem()
    labeled = np.arange(N_LABELED)
    tau, g, s = 0.05, 0.3, 7.0
    prior = eigenvalues + tau**2
    for name in ("gr", "ce"):
        loss = LOSSES[name]
        targets = _targets(loss, codes)
        scaled = fit_posterior(loss, prior / s, P, labeled, targets, g).coef
        unscaled = fit_posterior(loss, prior, P, labeled, targets, g / np.sqrt(s)).coef
        factor = 1.0 if loss.closed_form else np.sqrt(s)
        np.testing.assert_allclose(scaled, factor * unscaled, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name", ["logistic", "ce"])
def test_warm_threaded_grid_is_the_cold_serial_one(name):
    """A grid started from another fit's coefficients, on two threads, gives the table of
    the cold serial grid (to the Newton tolerance), the same choice, and the chosen MAP."""
    loss = LOSSES[name]
    eigenvalues, P, codes = _problem(seed=3)
    targets = _targets(loss, codes)
    grid = dict(taus=(0.01, 0.1, 0.5), gammas=(0.1, 0.3, 1.0), n_nodes=40)
    cold = select_hyperparameters(loss, eigenvalues, P, targets, **grid, n_threads=1)
    other = fit_posterior(loss, eigenvalues + 0.2**2, P, np.arange(N_LABELED), targets, 0.7)
    tau, gamma, table, coef = select_hyperparameters(
        loss, eigenvalues, P, targets, **grid, coef_init=other.coef, n_threads=2,
        return_coef=True,
    )  # fmt: skip
    np.testing.assert_allclose(table, cold[2], rtol=0, atol=1e-8)
    assert (tau, gamma) == cold[:2]
    refit = fit_posterior(loss, eigenvalues + tau**2, P, np.arange(N_LABELED), targets, gamma)
    np.testing.assert_allclose(coef, refit.coef, rtol=0, atol=1e-8 * np.abs(refit.coef).max())
    # started there, the fit is converged at once
    again = fit_posterior(
        loss, eigenvalues + tau**2, P, np.arange(N_LABELED), targets, gamma, coef_init=coef
    )
    assert again.n_iter == 1


def test_return_coef_of_a_gaussian_loss_is_none():
    eigenvalues, P, codes = _problem()
    *_, coef = select_hyperparameters(
        LOSSES["mgr"], eigenvalues, P, np.eye(N_CLASSES)[codes], return_coef=True
    )
    assert coef is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"taus": ()}, "taus must be a non-empty grid"),
        ({"gammas": (0.1, -1.0)}, "gammas must be a non-empty grid"),
        ({"P": np.zeros((N_LABELED, M + 1))}, "P must have shape"),
        ({"targets": np.zeros(N_LABELED)}, "targets must have"),
    ],
)
def test_errors(kwargs, match):
    eigenvalues, P, codes = _problem()
    args = {"P": P, "targets": np.eye(N_CLASSES)[codes], "taus": (0.1,), "gammas": (0.5,)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        select_hyperparameters(
            LOSSES["ce"], eigenvalues, args["P"], args["targets"], args["taus"], args["gammas"]
        )


# ------------------------------------------------------ the full-graph evidence
def _full_problem(n_labeled=9, seed=2):
    """Dense ``(L + tau^2 I)^-1`` of a small plane kNN graph, labels and the offset direction."""
    from _oracle import dense_laplacian, plane_knn_graph

    W, _ = plane_knn_graph(30, seed)
    rng = np.random.RandomState(seed)
    labeled = rng.choice(30, n_labeled, replace=False)
    codes = np.arange(n_labeled) % N_CLASSES
    degrees = W.sum(axis=1)
    return dense_laplacian(W), labeled, codes, np.sqrt(degrees[labeled])


def _dense_full_evidence(K, Y, gamma, offset):
    """Brute force: the density of the contrasts orthogonal to ``offset`` (all of ``Y``
    without one) under ``N(0, s B'(K + gamma^2 I)B)``, maximised over ``s`` numerically."""
    from scipy.linalg import null_space
    from scipy.optimize import minimize_scalar

    n = K.shape[0]
    B = np.eye(n) if offset is None else null_space(offset[None, :])
    S = B.T @ (K + gamma**2 * np.eye(n)) @ B
    Z = B.T @ Y

    def minus(log_s):
        dist = multivariate_normal(np.zeros(B.shape[1]), np.exp(log_s) * S)
        return -sum(dist.logpdf(Z[:, c]) for c in range(Y.shape[1]))

    best = minimize_scalar(minus, bounds=(-30.0, 30.0), method="bounded",
                           options={"xatol": 1e-12})  # fmt: skip
    return -best.fun


@pytest.mark.parametrize("name", ["gr", "mgr"])
@pytest.mark.parametrize("with_offset", [False, True])
@pytest.mark.parametrize(("tau", "gamma"), [(0.01, 0.1), (0.3, 1.0)])
def test_full_evidence_matches_dense_restricted_likelihood(name, with_offset, tau, gamma):
    loss = LOSSES[name]
    L, labeled, codes, w = _full_problem()
    K = np.linalg.inv(L + tau**2 * np.eye(L.shape[0]))[np.ix_(labeled, labeled)]
    targets = _targets(loss, codes)
    offset = w if with_offset else None
    got = full_log_evidence(K, targets, gamma, offset=offset)
    expected = _dense_full_evidence(K, targets.reshape(len(labeled), -1), gamma, offset)
    assert got == pytest.approx(expected, rel=1e-8)


def test_full_evidence_ignores_the_offset_of_the_labels():
    """With an offset, labels shifted along it have the same evidence; the amplitude is free:
    scaled labels change it by the Jacobian only (-k (n - 1) log c)."""
    L, labeled, codes, w = _full_problem()
    K = np.linalg.inv(L + 0.01 * np.eye(L.shape[0]))[np.ix_(labeled, labeled)]
    Y = np.eye(N_CLASSES)[codes]
    base = full_log_evidence(K, Y, 0.2, offset=w)
    shifted = Y + np.outer(w, [0.3, -1.0, 2.0])
    assert full_log_evidence(K, shifted, 0.2, offset=w) == pytest.approx(base, rel=1e-10)
    n, k = Y.shape
    assert full_log_evidence(K, 3.0 * Y, 0.2, offset=w) == pytest.approx(
        base - k * (n - 1) * np.log(3.0), rel=1e-10
    )


def test_select_full_hyperparameters_takes_the_grid_maximum():
    L, labeled, codes, w = _full_problem()
    Y = np.eye(N_CLASSES)[codes]
    taus, gammas = (0.01, 0.1, 0.5), (0.05, 0.2, 1.0)

    def block(tau):
        return np.linalg.inv(L + tau**2 * np.eye(L.shape[0]))[np.ix_(labeled, labeled)]

    tau, gamma, table = select_full_hyperparameters(block, Y, taus, gammas, offset=w)
    expected = np.array(
        [[_dense_full_evidence(block(t), Y, g, w) for g in gammas] for t in taus]
    )
    np.testing.assert_allclose(table, expected, rtol=1e-8)
    i, j = np.unravel_index(np.argmax(expected), expected.shape)
    assert (tau, gamma) == (taus[i], gammas[j])


def _reference_climb(rows, start):
    """The climb of ``select_full_hyperparameters(start=)`` on known row maxima: the
    visited indices, moving to the first better neighbour (the lower one tried first)."""
    i, visited = start, {start}
    while True:
        for j in (i - 1, i + 1):
            if 0 <= j < len(rows):
                visited.add(j)
                if rows[j] > rows[i]:
                    i = j
                    break
        else:
            return visited


@pytest.mark.parametrize("second_peak", [False, True])
def test_select_full_hyperparameters_climb(second_peak):
    """From every start: the taus solved and the choice are those of a climb on the dense
    table; where the taus' best values have one peak, the choice is the grid's maximum.
    The labels are unrelated to the graph: the evidence rises with tau. ``second_peak``:
    one tau's block a random one of rank two (plus a small ridge), whose evidence is the
    lowest, so that the tau below it is a second peak."""
    L, labeled, codes, w = _full_problem()
    Y = np.eye(N_CLASSES)[codes]
    taus, gammas = (0.01, 0.03, 0.1, 0.3, 1.0), (0.05, 0.2, 1.0)
    odd = 3 if second_peak else None
    A = np.random.RandomState(0).randn(labeled.size, 2)

    def dense(tau):
        if taus.index(tau) == odd:
            return A @ A.T + 0.01 * np.eye(labeled.size)
        return np.linalg.inv(L + tau**2 * np.eye(L.shape[0]))[np.ix_(labeled, labeled)]

    expected = np.array([[_dense_full_evidence(dense(t), Y, g, w) for g in gammas] for t in taus])
    rows = expected.max(axis=1)
    peaks = [i for i in range(len(taus)) if all(
        rows[i] > rows[j] for j in (i - 1, i + 1) if 0 <= j < len(taus)
    )]  # fmt: skip
    assert len(peaks) == (2 if second_peak else 1)
    for start in range(len(taus)):
        solved = []

        def block(tau, solved=solved):
            solved.append(tau)
            return dense(tau)

        tau, gamma, table = select_full_hyperparameters(
            block, Y, taus, gammas, offset=w, start=taus[start]
        )
        visited = _reference_climb(rows, start)
        assert sorted(solved) == sorted(taus[i] for i in visited)  # each once
        for i in range(len(taus)):
            if i in visited:
                np.testing.assert_allclose(table[i], expected[i], rtol=1e-8)
            else:
                assert np.isnan(table[i]).all()
        i = max(visited, key=lambda k: rows[k])
        assert (tau, gamma) == (taus[i], gammas[int(np.argmax(expected[i]))])
        if not second_peak:
            assert i == peaks[0] == int(np.argmax(rows))
    if second_peak:  # a climb that meets the lower peak first stops there
        low = min(peaks, key=lambda k: rows[k])
        tau, _, _ = select_full_hyperparameters(dense, Y, taus, gammas, offset=w, start=taus[low])
        assert tau == taus[low] != taus[int(np.argmax(rows))]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"K": np.eye(3), "targets": np.ones(2)}, "K must be square"),
        ({"offset": np.zeros(3)}, "offset must be a non-zero vector"),
        ({"offset": np.ones(2)}, "offset must be a non-zero vector"),
        ({"gamma": 0.0}, "gamma must be a positive finite float"),
    ],
)
def test_full_evidence_errors(kwargs, match):
    args = {"K": np.eye(3), "targets": np.array([1.0, -1.0, 1.0]), "gamma": 0.1, **kwargs}
    with pytest.raises(ValueError, match=match):
        full_log_evidence(**args)
    with pytest.raises(ValueError, match="taus must be a non-empty grid"):
        select_full_hyperparameters(lambda t: np.eye(3), np.ones(3), taus=(), gammas=(0.1,))
    with pytest.raises(ValueError, match=r"start must be one of the taus \[0.1 0.2\]; got 0.3"):
        select_full_hyperparameters(
            lambda t: np.eye(3), np.ones(3), taus=(0.1, 0.2), gammas=(0.1,), start=0.3
        )


def test_constant_share_against_the_dense_prior():
    """The share of the prior's variance on the smoothest eigenvector, against the dense
    prior covariance (L + tau^2 I)^-1 of a small graph (every eigenpair kept), read
    along the normalised Laplacian's null vector D^(1/2) 1 (built here from the
    weights, not the eigensolver)."""
    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    graph = SpectralGraphClassifier(kernel="gaussian", n_eigs=30, cache=False).fit(
        X, np.r_[0, 1, np.full(28, -1)]
    ).graph_
    W = graph.weights.toarray()
    d = W.sum(axis=1)
    L = np.eye(30) - W / np.sqrt(np.outer(d, d))
    null = np.sqrt(d) / np.linalg.norm(np.sqrt(d))
    for tau in (0.01, 0.1, 1.0):
        cov = np.linalg.inv(L + tau**2 * np.eye(30))
        expected = null @ cov @ null / np.trace(cov)
        assert constant_share(graph.eigenvalues, tau) == pytest.approx(expected, rel=1e-8)
    assert 0 < constant_share(graph.eigenvalues, 1.0) < constant_share(graph.eigenvalues, 0.01) <= 1
