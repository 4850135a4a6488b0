"""The oracle's own checks: its hand derivatives are those of its hand values.

``tests/_oracle.py`` writes the formulas of docs/math.rst out by hand; these
tests guard that reference itself against finite differences, so that a
slip in it cannot make a wrong implementation pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from _oracle import (
    ALL_LOSSES,
    BINARY,
    Objective,
    binary_derivatives,
    binary_value,
    fd_gradient,
    fd_jacobian,
    fitted,
)


@pytest.mark.parametrize("loss", BINARY)
def test_brute_force_derivatives_are_right(loss):
    """The test's own F and F' against central differences of the loss value."""
    g, h = 0.4, 1e-5
    x = np.linspace(-1.5, 1.5, 11)
    for t in (-1.0, 1.0):
        F, Fp = binary_derivatives(loss, x, t, g)
        fd = (binary_value(loss, x + h, t, g) - binary_value(loss, x - h, t, g)) / (2 * h)
        fd2 = (binary_derivatives(loss, x + h, t, g)[0]
               - binary_derivatives(loss, x - h, t, g)[0]) / (2 * h)
        np.testing.assert_allclose(F, fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(Fp, fd2, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("loss", ALL_LOSSES)
def test_hand_gradient_matches_finite_differences_of_hand_objective(loss):
    """Guards the reference itself: the hand gradient and Hessian are those of the hand J."""
    clf, _, y = fitted(loss)
    J = Objective(clf, y)
    a = J.vec(clf.coef_) + np.random.RandomState(4).randn(J.vec(clf.coef_).size) * 0.3
    np.testing.assert_allclose(J.gradient(a), fd_gradient(J.value, a, 1e-6), rtol=1e-6,
                               atol=1e-7 * np.abs(J.gradient(a)).max())
    np.testing.assert_allclose(J.hessian(a), fd_jacobian(J.gradient, a, 1e-5), rtol=1e-6,
                               atol=1e-8 * np.abs(J.hessian(a)).max())


def test_loo_class_probability_is_the_normal_one_for_two_columns_and_sampling_for_more():
    """``dense_loo_classes``' quadrature against what it integrates: with two columns
    the probability that the class's value is the larger is ``Phi(gap / (sqrt 2 sd))``
    (the difference of two independent normals); with three, a Monte Carlo draw of the
    predictive values."""
    import scipy.stats

    from _oracle import dense_loo_classes, dense_loo_terms

    rng = np.random.RandomState(0)
    A = rng.randn(8, 3)
    S = A @ A.T + 0.3 * np.eye(8)
    codes = np.array([0, 0, 1, 1, 0, 1, 1, 0])
    Y = np.eye(2)[codes]
    r, v = dense_loo_terms(S, Y)
    sd = np.sqrt(np.mean(r**2 / v[:, None]) * v)
    mu = Y - r
    gap = mu[np.arange(8), codes] - mu[np.arange(8), 1 - codes]
    log_p = scipy.stats.norm.logcdf(gap / (np.sqrt(2.0) * sd))
    expected = np.mean([log_p[codes == c].mean() for c in (0, 1)])
    np.testing.assert_allclose(dense_loo_classes(S, Y), expected, rtol=1e-9)

    codes = np.array([0, 1, 2, 2, 0, 1, 1, 0])
    Y = np.eye(3)[codes]
    r, v = dense_loo_terms(S, Y)
    sd = np.sqrt(np.mean(r**2 / v[:, None]) * v)
    draws = (Y - r)[:, None, :] + sd[:, None, None] * rng.randn(8, 400_000, 3)
    p = np.mean(np.argmax(draws, axis=2) == codes[:, None], axis=1)
    expected = np.mean([np.log(p[codes == c]).mean() for c in (0, 1, 2)])
    np.testing.assert_allclose(dense_loo_classes(S, Y), expected, atol=0.01)
