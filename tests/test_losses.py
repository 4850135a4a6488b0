"""skmcal.losses: the five likelihoods against their formulas, on their own.

Values, first and second derivatives against the table of the losses in
docs/math.rst ("The losses"), written out by hand in ``tests/_oracle.py``,
and against finite differences; probabilities as the normalised likelihood;
finiteness and the asymptotic forms far in the tails.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import norm

from skmcal.losses import LOSSES

from _oracle import (
    BINARY,
    MULTICLASS,
    binary_derivatives,
    binary_value,
    fd_gradient,
    fd_jacobian,
    softmax_rows,
)

# ---------------------------------------- values, derivatives, probabilities


@pytest.mark.parametrize("gamma", [0.5, 1.7])
@pytest.mark.parametrize("name", BINARY)
def test_binary_loss_value_matches_formula(name, gamma):
    u = np.linspace(-3, 3, 13) * gamma
    for y in (-1.0, 1.0):
        np.testing.assert_allclose(
            LOSSES[name].value(u, y, gamma), binary_value(name, u, y, gamma), rtol=1e-12
        )


@pytest.mark.parametrize("gamma", [0.5, 1.7])
@pytest.mark.parametrize("name", BINARY)
def test_binary_loss_derivatives_match_finite_differences(name, gamma):
    loss = LOSSES[name]
    u = np.linspace(-3, 3, 13) * gamma
    h = 1e-6 * gamma
    for y in (-1.0, 1.0):
        first, second = loss.derivatives(u, y, gamma)
        fd_first = (loss.value(u + h, y, gamma) - loss.value(u - h, y, gamma)) / (2 * h)
        fd_second = (loss.derivatives(u + h, y, gamma)[0]
                     - loss.derivatives(u - h, y, gamma)[0]) / (2 * h)
        scale = 1 / gamma
        np.testing.assert_allclose(first, fd_first, rtol=1e-7, atol=1e-8 * scale)
        np.testing.assert_allclose(second, fd_second, rtol=1e-7, atol=1e-8 * scale**2)
        # the second derivative also against second differences of the value itself
        H = 1e-4 * gamma
        fd2 = (loss.value(u + H, y, gamma) - 2 * loss.value(u, y, gamma)
               + loss.value(u - H, y, gamma)) / H**2
        np.testing.assert_allclose(second, fd2, rtol=1e-5, atol=1e-5 * scale**2)
        # and against the closed forms of the table in docs/math.rst
        np.testing.assert_allclose(first, binary_derivatives(name, u, y, gamma)[0], rtol=1e-10)
        np.testing.assert_allclose(second, binary_derivatives(name, u, y, gamma)[1], rtol=1e-10,
                                   atol=1e-14)


@pytest.mark.parametrize("gamma", [0.5, 1.7])
def test_cross_entropy_derivatives_match_finite_differences(gamma):
    rng = np.random.RandomState(1)
    loss = LOSSES["ce"]
    U = rng.randn(6, 4) * 2 * gamma
    Y = np.eye(4)[rng.randint(0, 4, size=6)]
    G, Pi = loss.derivatives(U, Y, gamma)
    np.testing.assert_allclose(Pi, softmax_rows(U / gamma), rtol=1e-12)
    np.testing.assert_allclose(loss.proba(U, gamma), softmax_rows(U / gamma), rtol=1e-12)
    np.testing.assert_allclose(
        loss.value(U, Y, gamma),
        np.log(np.exp(U / gamma).sum(axis=1)) - (Y * U).sum(axis=1) / gamma,
        rtol=1e-12,
    )
    h = 1e-6 * gamma
    for r in range(U.shape[0]):
        fd = fd_gradient(lambda u, r=r: loss.value(u[None], Y[r : r + 1], gamma)[0], U[r], h)
        np.testing.assert_allclose(G[r], fd, rtol=1e-7, atol=1e-8 / gamma)
        hess = (np.diag(Pi[r]) - np.outer(Pi[r], Pi[r])) / gamma**2
        fd_hess = fd_jacobian(
            lambda u, r=r: loss.derivatives(u[None], Y[r : r + 1], gamma)[0][0], U[r], h
        )
        np.testing.assert_allclose(hess, fd_hess, rtol=1e-6, atol=1e-8 / gamma**2)


@pytest.mark.parametrize("gamma", [0.1, 0.8])
def test_mgr_gradient_matches_finite_differences(gamma):
    rng = np.random.RandomState(2)
    loss = LOSSES["mgr"]
    U = rng.randn(5, 3)
    Y = np.eye(3)[rng.randint(0, 3, size=5)]
    np.testing.assert_allclose(
        loss.value(U, Y, gamma), ((U - Y) ** 2).sum(axis=1) / (2 * gamma**2), rtol=1e-12
    )
    G = loss.gradient(U, Y, gamma)
    h = 1e-6
    for r in range(U.shape[0]):
        fd = fd_gradient(lambda u, r=r: loss.value(u[None], Y[r : r + 1], gamma)[0], U[r], h)
        np.testing.assert_allclose(G[r], fd, rtol=1e-7, atol=1e-7 / gamma**2)
        fd_hess = fd_jacobian(
            lambda u, r=r: loss.gradient(u[None], Y[r : r + 1], gamma)[0], U[r], h
        )
        np.testing.assert_allclose(fd_hess, np.eye(3) / gamma**2, rtol=1e-7)


@pytest.mark.parametrize("name", BINARY)
def test_binary_proba_is_normalised_likelihood(name):
    """proba_positive(u) = exp(-l(u, +1)) / (exp(-l(u, +1)) + exp(-l(u, -1)))."""
    gamma = 0.7
    loss = LOSSES[name]
    u = np.linspace(-2, 2, 17)
    like_pos = np.exp(-binary_value(name, u, 1.0, gamma))
    like_neg = np.exp(-binary_value(name, u, -1.0, gamma))
    np.testing.assert_allclose(loss.proba_positive(u, gamma), like_pos / (like_pos + like_neg),
                               rtol=1e-12)


@pytest.mark.parametrize("name", MULTICLASS)
def test_multiclass_proba_is_normalised_likelihood(name):
    gamma = 0.6
    U = np.random.RandomState(3).randn(7, 3)
    loss = LOSSES[name]
    like = np.column_stack(
        [np.exp(-loss.value(U, np.tile(np.eye(3)[c], (7, 1)), gamma)) for c in range(3)]
    )
    np.testing.assert_allclose(loss.proba(U, gamma), like / like.sum(axis=1, keepdims=True),
                               rtol=1e-12)



# ------------------------------------------------- stability and asymptotics


EXTREME = np.array([-1e4, -1e3, -1e2, -40.0, 40.0, 1e2, 1e3, 1e4])


def _probit_tail_series(s):
    """For s -> -inf: Phi(s) = phi(s)/|s| * S, S = 1 - 1/s^2 + 3/s^4 - 15/s^6 + 105/s^8."""
    a = 1 / s**2 - 3 / s**4 + 15 / s**6 - 105 / s**8
    return 1 - a, a


@pytest.mark.parametrize("gamma", [0.5, 2.0])
@pytest.mark.parametrize("name", BINARY)
def test_binary_loss_finite_at_extreme_latents(name, gamma):
    loss = LOSSES[name]
    for y in (-1.0, 1.0):
        u = EXTREME * gamma * y  # so that u * y / gamma = EXTREME
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            value = loss.value(u, y, gamma)
            first, second = loss.derivatives(u, y, gamma)
            p_pos, p_neg = loss.proba_positive(u, gamma), loss.proba_positive(-u, gamma)
        for arr in (value, first, second, p_pos, p_neg):
            assert np.all(np.isfinite(arr))
        assert np.all(value >= 0)
        assert np.all(second >= 0)
        assert np.all((p_pos >= 0) & (p_pos <= 1))
        np.testing.assert_allclose(p_pos + p_neg, 1.0, atol=1e-12)
        # the likelihood of the label y grows with u * y
        p_label = p_pos if y > 0 else p_neg
        assert np.all(np.diff(p_label) >= 0)


@pytest.mark.parametrize("gamma", [0.5, 2.0])
def test_logistic_asymptotics(gamma):
    loss = LOSSES["logistic"]
    for y in (-1.0, 1.0):
        s = EXTREME
        u = s * gamma * y
        value = loss.value(u, y, gamma)
        first, second = loss.derivatives(u, y, gamma)
        neg, pos = s < 0, s > 0
        # s -> -inf: l = -s + log(1 + e^s); F = -(y/g)/(1 + e^s); F' = e^s/g^2 (1 + O(e^s))
        np.testing.assert_allclose(value[neg], -s[neg], rtol=1e-14)
        np.testing.assert_allclose(first[neg], -y / gamma, rtol=1e-14)
        np.testing.assert_allclose(second[neg], np.exp(s[neg]) / gamma**2, rtol=1e-12,
                                   atol=1e-300)
        # s -> +inf: l = e^-s, F = -(y/g) e^-s, F' = e^-s / g^2
        np.testing.assert_allclose(value[pos], np.exp(-s[pos]), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(first[pos], -(y / gamma) * np.exp(-s[pos]), rtol=1e-12,
                                   atol=1e-300)
        np.testing.assert_allclose(second[pos], np.exp(-s[pos]) / gamma**2, rtol=1e-12,
                                   atol=1e-300)


@pytest.mark.parametrize("gamma", [0.5, 2.0])
def test_probit_asymptotics(gamma):
    loss = LOSSES["probit"]
    for y in (-1.0, 1.0):
        s = EXTREME
        u = s * gamma * y
        value = loss.value(u, y, gamma)
        first, second = loss.derivatives(u, y, gamma)
        neg, pos = s < 0, s > 0
        sn = s[neg]
        S, a = _probit_tail_series(sn)
        # -log Phi(s) = s^2/2 + log|s| + log sqrt(2 pi) - log S
        expected = sn**2 / 2 + np.log(-sn) + 0.5 * np.log(2 * np.pi) - np.log(S)
        np.testing.assert_allclose(value[neg], expected, rtol=1e-13)
        # phi/Phi = |s| / S, so F = -(y/g) |s| / S
        np.testing.assert_allclose(first[neg], -(y / gamma) * (-sn) / S, rtol=1e-12)
        # F' = r (r + s) / g^2 with r + s = |s| a / S: F' = s^2 a / S^2 / g^2 -> 1/g^2
        np.testing.assert_allclose(second[neg], sn**2 * a / S**2 / gamma**2, rtol=1e-7)
        assert np.all(second[neg] <= (1 + 1e-7) / gamma**2)
        # s -> +inf: everything vanishes (Phi(s) = 1 - phi(s)/s ...)
        tail = norm.pdf(s[pos]) / s[pos]
        np.testing.assert_allclose(value[pos], tail, rtol=1e-6, atol=1e-300)
        np.testing.assert_allclose(first[pos], -(y / gamma) * norm.pdf(s[pos]), rtol=1e-6,
                                   atol=1e-300)
        assert np.all(np.abs(second[pos]) <= 1e-300)


@pytest.mark.parametrize("gamma", [0.5, 1e-6])
def test_probit_curvature_far_in_the_tail(gamma):
    """F' stays in (0, 1/g^2] and accurate for u * y / gamma of -1e5 ... -1e12.

    Probit is log-concave with curvature below 1/g^2 everywhere; far in the
    tail F' = (1 - 1/s^2 + ...) / g^2. The reference is the asymptotic series,
    exact in double precision for |s| >= 1e5.
    """
    loss = LOSSES["probit"]
    s = -np.array([1e5, 1e6, 1e7, 3e7, 1e8, 3e8, 1e9, 1e10, 1e12])
    for y in (-1.0, 1.0):
        u = s * gamma * y
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            first, second = loss.derivatives(u, y, gamma)
        S, a = _probit_tail_series(s)
        assert np.all(np.isfinite(second))
        assert np.all(second > 0)
        assert np.all(second * gamma**2 <= 1.0)
        np.testing.assert_allclose(second, s**2 * a / S**2 / gamma**2, rtol=1e-9)
        np.testing.assert_allclose(first, (y / gamma) * s / S, rtol=1e-12)


@pytest.mark.parametrize("gamma", [0.5, 2.0])
def test_gr_finite_at_extreme_latents(gamma):
    loss = LOSSES["gr"]
    u = EXTREME * gamma
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = loss.proba_positive(u, gamma)
    # sigmoid(2u/g^2), written without overflow on each side
    z = 2 * u / gamma**2
    e = np.exp(-np.abs(z))
    expected = np.where(z < 0, e / (1 + e), 1 / (1 + e))
    np.testing.assert_allclose(p, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("scale", [1e3, 1e4])
@pytest.mark.parametrize("gamma", [0.1, 0.5])
def test_multiclass_losses_finite_at_extreme_latents(scale, gamma):
    U = np.array([[1.0, 0.0, -1.0], [-1.0, 1.0, 0.0], [0.0, -1.0, 1.0], [0.5, 1.0, -1.0]])
    U = U * scale * gamma
    Y = np.eye(3)[[2, 1, 0, 0]]
    ce, mgr = LOSSES["ce"], LOSSES["mgr"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = ce.value(U, Y, gamma)
        G, Pi = ce.derivatives(U, Y, gamma)
        p_ce = ce.proba(U, gamma)
        p_mgr = mgr.proba(U, gamma)
        v_mgr = mgr.value(U, Y, gamma)
    for arr in (value, G, Pi, p_ce, p_mgr, v_mgr):
        assert np.all(np.isfinite(arr))
    # logsumexp(u/g) = max(u)/g up to e^-(gap/g), the gap is >= scale/2 here
    np.testing.assert_allclose(value, (U.max(axis=1) - (Y * U).sum(axis=1)) / gamma, rtol=1e-14)
    winner = np.eye(3)[U.argmax(axis=1)]
    np.testing.assert_allclose(G, (winner - Y) / gamma, atol=1e-12 / gamma)
    np.testing.assert_allclose(p_ce, winner, atol=1e-12)
    np.testing.assert_allclose(p_mgr, winner, atol=1e-12)
    np.testing.assert_allclose(p_ce.sum(axis=1), 1.0, atol=1e-14)


def test_ce_value_gradient_equals_value_and_derivatives():
    """The fused pass of the Newton iterations against the two separate formulas."""
    from skmcal.losses import LOSSES

    ce = LOSSES["ce"]
    rng = np.random.RandomState(0)
    Y = np.eye(4)[rng.randint(0, 4, size=30)]
    for scale in (1.0, 1e3):  # 1e3 / gamma: exp would overflow without the shift
        U = scale * rng.randn(30, 4)
        value, G = ce.value_gradient(U, Y, 0.3)
        np.testing.assert_allclose(value, ce.value(U, Y, 0.3), rtol=1e-13, atol=1e-13 * scale)
        np.testing.assert_allclose(G, ce.derivatives(U, Y, 0.3)[0], rtol=1e-13, atol=1e-15)
        assert np.all(np.isfinite(value))
