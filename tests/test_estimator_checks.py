"""scikit-learn's estimator contract, checked by ``parametrize_with_checks``.

Four configurations: the default multiclass loss ``ce`` (Newton), the
multiclass ``mgr`` (closed form), the binary ``probit`` (Newton), and ``mgr``
with NaN as the unlabeled marker (scikit-activeml's convention).

Only failures that follow from a deliberate design decision are expected; they
are listed, with their reasons, in one public place,
:data:`skmcal.estimator_checks.EXPECTED_FAILED_CHECKS` (also in the docs).
``xfail_strict=True`` makes a listed check that starts passing fail the suite,
so the list cannot go stale. A check that fails because of something skmcal
should change is *not* listed: it fails until skmcal is fixed.
"""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

from skmcal import SpectralGraphClassifier
from skmcal.estimator_checks import EXPECTED_FAILED_CHECKS, expected_failed_checks

ESTIMATORS = [
    SpectralGraphClassifier(),
    SpectralGraphClassifier(loss="mgr"),
    SpectralGraphClassifier(loss="probit"),
    SpectralGraphClassifier(loss="mgr", missing_label=np.nan),
    SpectralGraphClassifier(loss="auto", model="auto", missing_label=np.nan),
]


@pytest.fixture(autouse=True, scope="module")
def _single_blas_thread():
    """One BLAS thread: the matrices here are tiny, and on a busy machine
    OpenBLAS threads spinning on them make the suite many times slower."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@parametrize_with_checks(
    ESTIMATORS, expected_failed_checks=expected_failed_checks, xfail_strict=True
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_every_listed_check_is_expected_by_some_configuration():
    listed = set()
    for estimator in ESTIMATORS:
        listed |= set(expected_failed_checks(estimator))
    assert listed == set(EXPECTED_FAILED_CHECKS)


def test_a_nan_marker_passes_the_unlabeled_marker_check():
    assert expected_failed_checks(SpectralGraphClassifier("mgr", missing_label=None)) == {
        "check_non_transformer_estimators_n_iter": EXPECTED_FAILED_CHECKS[
            "check_non_transformer_estimators_n_iter"
        ]
    }
