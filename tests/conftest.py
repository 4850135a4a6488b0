"""Test-session settings: one BLAS thread, and the data home of the real data sets."""

import os
import sys
import types
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.neighbors import KNeighborsTransformer
from threadpoolctl import threadpool_limits

from skmcal.datasets import DATA_ENV
from skmcal.graph import clear_graph_cache

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


class FakePyNNDescentTransformer(TransformerMixin, BaseEstimator):
    """Stands in for pynndescent's transformer (no numba compilation): the same
    contract, with exact neighbours. ``fit_transform`` gives each point itself
    plus its ``n_neighbors`` nearest others, as pynndescent's does. Records the
    parameters of every fit in ``fits``."""

    fits: list = []

    def __init__(self, n_neighbors=30, metric="euclidean", random_state=None):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.random_state = random_state

    def fit(self, X, y=None):
        type(self).fits.append(self.get_params())
        self.knn_ = KNeighborsTransformer(n_neighbors=self.n_neighbors, metric=self.metric)
        self.knn_.fit(X)
        return self

    def transform(self, X):
        return self.knn_.transform(X)


@pytest.fixture
def fake_pynndescent(monkeypatch):
    """``import pynndescent`` gives a module holding the fake transformer; its fits."""
    module = types.ModuleType("pynndescent")
    module.PyNNDescentTransformer = FakePyNNDescentTransformer
    monkeypatch.setitem(sys.modules, "pynndescent", module)
    fits = []
    monkeypatch.setattr(FakePyNNDescentTransformer, "fits", fits)
    clear_graph_cache()  # so that every graph of the test is built, not taken from the cache
    yield fits
    clear_graph_cache()


@pytest.fixture
def evidence_selections(monkeypatch):
    """The labeled-node counts of the fits that chose (tau, gamma) by the evidence, in order.

    ``skmcal.classifier.select_hyperparameters`` is wrapped to record each call.
    """
    import skmcal.classifier as module

    calls = []
    select = module.select_hyperparameters

    def counting(*args, **kwargs):
        calls.append(args[2].shape[0])
        return select(*args, **kwargs)

    monkeypatch.setattr(module, "select_hyperparameters", counting)
    return calls
