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
