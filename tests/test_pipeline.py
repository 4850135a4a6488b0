"""Pipelines over a fixed pool: NodeSet.transformed, PoolTransformer, make_pool_pipeline."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, StandardScaler

import skmcal.graph
from skmcal import NodeSet, SpectralGraphClassifier, model_change
from skmcal.pipeline import PoolTransformer, make_pool_pipeline


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:600], y[:600]


def preprocessing():
    return make_pipeline(StandardScaler(), PCA(30, random_state=0))


def test_a_plain_pipeline_over_a_pool_fails_as_reported(digits):
    X, y = digits
    plain = make_pipeline(StandardScaler(), PCA(30), SpectralGraphClassifier(nodes=NodeSet(X)))
    with pytest.raises(ValueError, match="X has 30 features, but the nodes have 64"):
        plain.fit(X[:60], y[:60])


def test_transformed_node_set_holds_the_transformed_pool(digits):
    X, _ = digits
    pool = NodeSet(X)
    prep = preprocessing().fit(X)
    features = pool.transformed(prep)
    assert_array_equal(features.data, prep.transform(X))
    assert features.source is pool and features.transformer is prep
    assert pool.source is None and pool.transformer is None


def test_pool_pipeline_fits_the_same_model_as_the_transformed_nodes(digits):
    X, y = digits
    labeled = np.r_[0:40]
    model = make_pool_pipeline(preprocessing(), SpectralGraphClassifier(loss="ce"), X)
    model.fit(X[labeled], y[labeled])
    features = model[-1].node_set_
    # The same labels given directly on the transformed nodes.
    direct = SpectralGraphClassifier(loss="ce").fit(
        features.data, np.where(np.isin(np.arange(len(X)), labeled), y, -1)
    )
    assert_array_equal(model[-1].coef_, direct.coef_)
    assert_array_equal(model.predict(X), direct.transduction_)
    assert model.score(X, y) > 0.85


def test_single_rows_of_the_pool_map_to_their_nodes_exactly(digits):
    # Transforming one row alone differs from transforming the pool in the
    # last bits (BLAS): the pool's rows must still be found as nodes.
    X, y = digits
    prep = preprocessing().fit(X)
    assert not np.array_equal(prep.transform(X[5:6])[0], prep.transform(X)[5])
    model = make_pool_pipeline(preprocessing(), SpectralGraphClassifier(), X)
    model.fit(X[:40], y[:40])
    full = model.predict(X)
    for row in (5, 77, 321):
        assert model.predict(X[row : row + 1])[0] == full[row]
        assert_array_equal(model[0].transform(X[row : row + 1])[0], model[-1].node_set_.data[row])


def test_new_points_go_through_the_fitted_transformer(digits):
    X, y = digits
    model = make_pool_pipeline(preprocessing(), SpectralGraphClassifier(), X).fit(X[:50], y[:50])
    new = X[100:110] + 0.25
    step, clf = model[0], model[-1]
    mixed = np.vstack([new, X[:3]])
    transformed = step.transform(mixed)
    assert_array_equal(transformed[:10], clf.node_set_.transformer.transform(new))
    assert_array_equal(transformed[10:], clf.node_set_.data[:3])
    assert_array_equal(model.predict(new), clf.predict(transformed[:10]))


def test_sparse_pools_and_mixed_rows(digits):
    X, _ = digits
    pool = NodeSet(sp.csr_matrix(X))
    scaler = MaxAbsScaler().fit(pool.data)
    features = pool.transformed(scaler)
    assert sp.issparse(features.data)
    step = PoolTransformer(features).fit(pool.data)
    rows = sp.vstack([pool.data[[4, 2]], sp.csr_matrix(X[7:8] + 1.0)]).tocsr()
    out = step.transform(rows)
    assert sp.issparse(out)
    assert_array_equal(out[:2].toarray(), features.data[[4, 2]].toarray())
    assert_array_equal(out[2].toarray(), scaler.transform(sp.csr_matrix(X[7:8] + 1.0)).toarray())


def test_query_strategies_take_the_transformed_pool(digits):
    X, y = digits
    model = make_pool_pipeline(preprocessing(), SpectralGraphClassifier(), X)
    labeled = np.array([np.flatnonzero(y == c)[0] for c in range(10)])
    model.fit(X[labeled], y[labeled])
    features = model[-1].node_set_
    idx, _ = model_change(model[-1], features, n_instances=5, random_state=0)
    same, _ = model_change(model[-1], model[0].transform(X), n_instances=5, random_state=0)
    assert_array_equal(idx, same)
    assert not np.isin(idx, labeled).any()


def test_grid_search_over_a_pool_pipeline_builds_the_graph_once(digits):
    X, y = digits
    model = make_pool_pipeline(preprocessing(), SpectralGraphClassifier(loss="probit"), X)
    binary = np.flatnonzero(y < 2)[:40]
    model.fit(X[binary], y[binary])
    builds = skmcal.graph.GRAPH_CACHE.builds
    search = GridSearchCV(model, {"spectralgraphclassifier__tau": [0.001, 0.01]}, cv=2)
    search.fit(X[binary], y[binary])
    assert skmcal.graph.GRAPH_CACHE.builds == builds
    assert clone(model)[0].nodes is model[0].nodes


def test_pool_transformer_needs_a_transformed_node_set(digits):
    X, _ = digits
    with pytest.raises(TypeError, match=r"NodeSet made by NodeSet.transformed"):
        PoolTransformer(NodeSet(X)).fit(X)
    features = NodeSet(X).transformed(StandardScaler().fit(X))
    with pytest.raises(ValueError, match="X has 3 features, but the pool that nodes was"):
        PoolTransformer(features).fit(X[:, :3])
