"""Test-session settings: one BLAS thread, and the data home of the real data sets."""

import os
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

from skmcal.datasets import DATA_ENV

#: The project's shared real data, beside the repository (../shared/data; its
#: README says where each file comes from). Tests that need a file of it skip
#: when it is absent.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def pytest_configure(config):
    # Every loader's default data home (skmcal.datasets.get_data_home) is the
    # shared data, whether or not it exists here: the tests never read the
    # user's own ~/skmcal_data or $SKMCAL_DATA.
    os.environ[DATA_ENV] = str(SHARED_DATA)


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    # numpy and scipy each bundle an OpenBLAS; on 2 cores their thread pools
    # spin against each other on the tiny matrices of the tests (seen: 10x
    # slower runs). One BLAS thread keeps the suite fast and its timing stable.
    with threadpool_limits(limits=1, user_api="blas"):
        yield
