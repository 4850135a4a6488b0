"""Test-session settings."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    # numpy and scipy each bundle an OpenBLAS; on 2 cores their thread pools
    # spin against each other on the tiny matrices of the tests (seen: 10x
    # slower runs). One BLAS thread keeps the suite fast and its timing stable.
    with threadpool_limits(limits=1, user_api="blas"):
        yield
