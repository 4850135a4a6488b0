"""Property-based tests of the estimator's invariants (hypothesis, small data, few examples).

Probabilities lie in [0, 1] and sum to 1; ``posterior_cov`` is symmetric
positive semi-definite; permuting the rows of ``X`` and ``y`` permutes
``transduction_`` and ``predict_proba``; a fit is a function of its input and
``random_state``, bit for bit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skmcal import SpectralGraphClassifier

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

LOSSES = ("gr", "logistic", "probit", "mgr", "ce")
FAST = settings(max_examples=8, deadline=None, derandomize=True)


@st.composite
def problems(draw, binary=False):
    """A small clustered data set with a few labels per class, and a loss."""
    loss = draw(st.sampled_from(LOSSES[:3] if binary else LOSSES))
    binary_loss = loss in LOSSES[:3]
    n_classes = 2 if binary_loss else draw(st.integers(2, 3))
    per_class = draw(st.integers(8, 16))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.RandomState(seed)
    centers = rng.randn(n_classes, 3) * draw(st.floats(1.0, 5.0))
    X = np.vstack([rng.randn(per_class, 3) + c for c in centers])
    y_true = np.repeat(np.arange(n_classes), per_class)
    y = np.full(X.shape[0], -1)
    n_labeled = draw(st.integers(1, 3))
    for c in range(n_classes):
        rows = c * per_class + rng.choice(per_class, n_labeled, replace=False)
        y[rows] = c
    params = dict(
        loss=loss,
        n_neighbors=draw(st.integers(3, 7)),
        n_eigs=draw(st.integers(3, 12)),
        tau=draw(st.sampled_from([0.05, 0.5, "auto"])),
        gamma=draw(st.sampled_from([0.1, 1.0, "auto"])),
    )
    return X, y, y_true, params


def _fit(X, y, params, **extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return SpectralGraphClassifier(**params, **extra).fit(X, y)


@FAST
@given(problems())
def test_probabilities_lie_in_the_unit_interval_and_sum_to_one(problem):
    X, y, _, params = problem
    clf = _fit(X, y, params)
    rng = np.random.RandomState(0)
    new = X[rng.choice(X.shape[0], 5)] + 0.05 * rng.randn(5, X.shape[1])
    for P in (clf.predict_proba(X), clf.predict_proba(new)):
        assert P.shape[1] == clf.classes_.size
        assert np.all((P >= 0) & (P <= 1))
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@FAST
@given(problems())
def test_posterior_cov_is_symmetric_positive_semidefinite(problem):
    X, y, _, params = problem
    clf = _fit(X, y, params)
    for C in (clf.posterior_cov(), clf.posterior_cov(X[:10])):
        scale = max(np.abs(C).max(), np.finfo(float).tiny)
        # V_X C V_X' is symmetric up to the round-off of the products.
        np.testing.assert_allclose(C, C.T, rtol=0, atol=1e-13 * scale)
        assert np.linalg.eigvalsh(C).min() >= -1e-10 * scale


@FAST
@given(problems(), st.integers(0, 2**16))
def test_permuting_the_rows_permutes_the_predictions(problem, perm_seed):
    X, y, _, params = problem
    perm = np.random.RandomState(perm_seed).permutation(X.shape[0])
    clf = _fit(X, y, params)
    permuted = _fit(X[perm], y[perm], params)
    P, Q = clf.predict_proba(X)[perm], permuted.predict_proba(X[perm])
    np.testing.assert_allclose(Q, P, rtol=0, atol=1e-6)
    top2 = np.sort(P, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-6  # a tie may break either way under round-off
    np.testing.assert_array_equal(permuted.transduction_[clear], clf.transduction_[perm][clear])
    np.testing.assert_allclose(permuted.eigenvalues_, clf.eigenvalues_, rtol=0, atol=1e-9)


@FAST
@given(problems(), st.integers(0, 2**16))
def test_identical_fits_agree_bit_for_bit(problem, random_state):
    X, y, _, params = problem
    a = _fit(X, y, params, random_state=random_state, cache=False)
    b = _fit(X, y, params, random_state=random_state, cache=False)
    np.testing.assert_array_equal(a.eigenvalues_, b.eigenvalues_)
    np.testing.assert_array_equal(a.eigenvectors_, b.eigenvectors_)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.transduction_, b.transduction_)
