"""Behaviour of SpectralGraphClassifier: bad input, the scikit-learn API, the
graph cache, out-of-sample prediction, and every constructor parameter.

Formulas are checked against independent brute-force computations on tiny
graphs; accuracies on two-moons data, whose structure a kNN graph recovers
from a handful of labels.
"""

from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from scipy.stats import multivariate_normal
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import pairwise_distances
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsTransformer, NearestNeighbors
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from threadpoolctl import threadpool_limits

import skmcal
import skmcal.graph
from skmcal import NodeSet, SpectralGraphClassifier
from skmcal.evidence import DEFAULT_GAMMAS, DEFAULT_TAUS, LAPLACE_GAMMAS, log_evidence
from skmcal.losses import LOSSES as LOSSES_BY_NAME

from _oracle import dense_laplacian

LOSSES = ("gr", "logistic", "probit", "mgr", "ce")
BINARY_LOSSES = ("gr", "logistic", "probit")
NEWTON_LOSSES = ("logistic", "probit", "ce")

#: Every constructor parameter, each exercised by at least one test below
#: (see test_every_constructor_parameter_is_tested).
TESTED_PARAMETERS = {
    "model",  # tests/test_models.py (every test there), test_model_must_be_known
    "loss",  # test_out_of_sample_points_are_predicted_accurately, test_binary_loss_*
    "nodes",  # test_grid_search_*, test_rows_not_among_nodes_raise, cache tests
    "kernel",  # test_cosine_kernel_*, test_precomputed_kernel_*
    "n_neighbors",  # test_gaussian_weights_match_brute_force, test_n_neighbors_*
    "scale_neighbor",  # test_gaussian_weights_match_brute_force
    "scale_factor",  # test_gaussian_weights_match_brute_force
    "neighbors",  # test_neighbors_transformer_*
    "n_eigs",  # test_n_eigs_*, test_gaussian_weights_match_brute_force
    "tau",  # test_mgr_coef_matches_closed_form, test_tau_and_gamma_must_be_positive
    "gamma",  # test_mgr_coef_matches_closed_form, test_newton_map_*
    "class_weight",  # tests/test_class_weight.py
    "target_scale",  # tests/test_target_scale.py
    "offset",  # tests/test_offset.py
    "max_iter",  # test_small_max_iter_warns_convergence
    "tol",  # test_looser_tol_takes_fewer_iterations, test_auto_tol_*
    "warm_start",  # test_warm_start_*, test_refit_with_new_class_under_warm_start
    "cache",  # test_cache_false_*
    "n_jobs",  # test_n_jobs_does_not_change_the_graph
    "random_state",  # test_random_state_makes_the_arpack_path_deterministic
    "missing_label",  # tests/test_skactiveml.py: test_missing_label_*
    "memory",  # tests/test_scale.py: test_memory_*
    "verbose",  # tests/test_scale.py: test_verbose_*
}


# ----------------------------------------------------------------- helpers
@pytest.fixture(autouse=True, scope="module")
def _single_blas_thread():
    """One BLAS thread: the matrices here are tiny, and on a busy machine
    OpenBLAS threads spinning on them make the suite many times slower."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(autouse=True)
def _empty_graph_cache():
    """Every test starts (and leaves) with an empty process-wide graph cache."""
    skmcal.clear_graph_cache()
    yield
    skmcal.clear_graph_cache()


def moons(n_samples=200, per_class=3, seed=0):
    """Two moons: ``(X, y_true, y)`` with ``per_class`` labels per class in ``y``."""
    X, y_true = make_moons(n_samples, noise=0.05, random_state=seed)
    rng = np.random.RandomState(seed)
    y = np.full(n_samples, -1)
    for c in (0, 1):
        chosen = rng.choice(np.flatnonzero(y_true == c), per_class, replace=False)
        y[chosen] = c
    return X, y_true, y


def blobs(centers, n_per_center=30, std=1.0, labels_per_class=2, seed=0):
    """Gaussian blobs ``(X, y_true, y)``, ``labels_per_class`` labeled per blob."""
    X, y_true = make_blobs(
        n_per_center * len(centers), centers=centers, cluster_std=std, random_state=seed
    )
    y = np.full(y_true.size, -1)
    for c in range(len(centers)):
        chosen = np.flatnonzero(y_true == c)[:labels_per_class]
        y[chosen] = c
    return X, y_true, y


def unlabeled_accuracy(clf, y_true, y):
    unlabeled = y == -1
    return np.mean(clf.transduction_[unlabeled] == y_true[unlabeled])


# --------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_X_at_fit_raises(bad):
    X, _, y = moons()
    X[7, 1] = bad
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        SpectralGraphClassifier().fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, -np.inf])
@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function"])
def test_non_finite_X_at_predict_raises(bad, method):
    X, _, y = moons()
    clf = SpectralGraphClassifier().fit(X, y)
    X_new = X[:5].copy()
    X_new[2, 0] = bad
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        getattr(clf, method)(X_new)


def test_y_of_wrong_length_raises():
    X, _, y = moons()
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[200, 199\]"):
        SpectralGraphClassifier().fit(X, y[:-1])


def test_no_labeled_row_raises():
    X, _, _ = moons()
    with pytest.raises(ValueError, match="No labeled row: every entry of y is -1"):
        SpectralGraphClassifier().fit(X, np.full(X.shape[0], -1))


@pytest.mark.parametrize("loss", LOSSES)
def test_single_labeled_class_raises(loss):
    X, y_true, _ = moons()
    y = np.full(X.shape[0], -1)
    y[np.flatnonzero(y_true == 1)[:4]] = 1
    with pytest.raises(ValueError, match=r"(single|one) class"):
        SpectralGraphClassifier(loss=loss).fit(X, y)


def test_few_labels_of_many_classes_fit_without_a_regression_warning():
    """30 labels of 26 classes: scikit-learn's "could represent a regression
    problem" warning (over half the labeled rows distinct) is not ours to give."""
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=10.0, size=(26, 4))
    X = np.repeat(centres, 12, axis=0) + rng.normal(size=(312, 4))
    y = np.full(312, -1)
    picked = np.r_[np.arange(0, 312, 12), np.arange(1, 48, 12)]  # one per class, 4 twice
    y[picked] = picked // 12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = SpectralGraphClassifier().fit(X, y)
    assert clf.classes_.size == 26
    assert np.mean(clf.transduction_ == np.arange(312) // 12) > 0.9


def test_score_counts_labels_unseen_at_fit_as_errors():
    X, y_true, y = moons()
    clf = SpectralGraphClassifier().fit(X, y)
    assert_array_equal(clf.predict(X), y_true)  # two moons: every node right
    y_eval = y_true.copy()
    y_eval[:50] = 7  # a class the model never saw
    assert clf.score(X, y_eval) == pytest.approx(150 / 200)
    assert not np.isin(7, clf.predict(X))


def test_score_ignores_unlabeled_rows():
    X, y_true, y = moons()
    clf = SpectralGraphClassifier().fit(X, y)
    y_eval = y_true.copy()
    y_eval[::2] = -1
    assert clf.score(X, y_eval) == 1.0
    with pytest.raises(ValueError, match="at least one labeled row"):
        clf.score(X, np.full(X.shape[0], -1))


def test_refit_with_new_class_under_warm_start():
    X, y_true, y3 = blobs([[0, 0], [10, 0], [0, 10]])
    y2 = np.where(y3 == 2, -1, y3)
    clf = SpectralGraphClassifier(loss="ce", warm_start=True).fit(X, y2)
    assert_array_equal(clf.classes_, [0, 1])
    assert clf.coef_.shape == (50, 2)

    clf.fit(X, y3)  # a class not seen at the previous fit: no warm start possible
    cold = SpectralGraphClassifier(loss="ce").fit(X, y3)
    assert_array_equal(clf.classes_, [0, 1, 2])
    assert clf.coef_.shape == (50, 3)
    assert_allclose(clf.coef_, cold.coef_, atol=1e-8)
    assert_array_equal(clf.transduction_, y_true)


def test_object_labels_with_unlabeled_marker():
    # y = -1 marks an unlabeled row; classifier.py's unlabeled_mask handles
    # object arrays mixing strings and the integer -1, so string classes with
    # unlabeled rows should work.
    X, y_true, y = moons()
    names = np.array(["left", "right"], dtype=object)
    y_obj = np.where(y == -1, -1, names[np.clip(y, 0, 1)]).astype(object)
    clf = SpectralGraphClassifier().fit(X, y_obj)
    assert_array_equal(clf.classes_, ["left", "right"])
    assert_array_equal(clf.predict(X), names[y_true])


def test_many_duplicates_of_a_point_give_finite_results():
    # 31 coincident points: their kNN distances, hence their local scales, are 0.
    X, y_true, y = moons()
    X_dup = np.vstack([X, np.repeat(X[:1], 30, axis=0)])
    y_dup = np.concatenate([y, np.full(30, -1)])
    clf = SpectralGraphClassifier().fit(X_dup, y_dup)
    graph = clf.graph_
    assert np.all(graph.scales > 0)
    assert np.all(np.isfinite(graph.weights.data))
    assert np.all(np.isfinite(clf.coef_))
    assert np.all(np.isfinite(clf.posterior_cov()))
    proba = clf.predict_proba(X_dup)
    assert np.all(np.isfinite(proba))
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(clf.transduction_[:200], y_true)
    assert_array_equal(clf.transduction_[200:], y_true[0])  # copies of point 0
    X_new, y_new = make_moons(100, noise=0.05, random_state=1)
    assert np.mean(clf.predict(X_new) == y_new) > 0.95


def test_all_nodes_equal_raises_clear_error():
    X = np.repeat([[1.0, 1.0]], 20, axis=0)
    y = np.full(20, -1)
    y[[0, 1]] = [0, 1]
    with pytest.raises(ValueError, match="All 20 nodes are equal"):
        SpectralGraphClassifier(n_eigs=10).fit(X, y)


@pytest.mark.parametrize("loss", ["mgr", "ce"])
def test_disconnected_components_predicted_per_labeled_cluster(loss):
    X, y_true, y = blobs([[0, 0], [100, 0], [0, 100]], labels_per_class=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a warning is acceptable here
        clf = SpectralGraphClassifier(loss=loss).fit(X, y)
    assert clf.graph_.n_components == 3
    assert_allclose(clf.eigenvalues_[:3], 0.0, atol=1e-10)
    assert clf.eigenvalues_[3] > 1e-3
    assert_array_equal(clf.transduction_, y_true)
    assert_array_equal(clf.predict(X + 0.1), y_true)  # out-of-sample, per cluster
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_n_neighbors_at_least_n_samples_is_clipped_with_warning():
    X, y_true, y = blobs([[0, 0], [20, 0]], n_per_center=8, labels_per_class=1)
    n = X.shape[0]
    with pytest.warns(UserWarning, match=rf"n_neighbors={n} .* n_nodes={n}"):
        clf = SpectralGraphClassifier(n_neighbors=n, n_eigs=n).fit(X, y)
    assert clf.graph_.params.n_neighbors == n - 1
    assert clf.graph_.params.scale_neighbor == 5  # already < n_nodes: unchanged
    assert clf.graph_.weights.nnz == n * (n - 1)  # complete graph
    assert_array_equal(clf.transduction_, y_true)


@pytest.mark.parametrize("extra", [0, 10])
def test_n_eigs_at_least_n_samples_uses_the_dense_solver(monkeypatch, extra):
    X, y_true, y = moons(n_samples=60)
    n = X.shape[0]
    # The node-count rule alone would choose ARPACK; n_eigs must force eigh.
    monkeypatch.setattr(skmcal.graph, "DENSE_EIGEN_MAX_NODES", 10)

    def no_arpack(*args, **kwargs):
        raise AssertionError("ARPACK used where the dense solver was expected")

    monkeypatch.setattr(skmcal.graph, "eigsh", no_arpack)
    clf = SpectralGraphClassifier(n_eigs=n + extra, cache=False)
    if extra:
        with pytest.warns(UserWarning, match=rf"n_eigs={n + extra} exceeds n_nodes={n}"):
            clf.fit(X, y)
    else:
        clf.fit(X, y)
    assert clf.eigenvalues_.shape == (n,)
    assert clf.eigenvectors_.shape == (n, n)
    L = dense_laplacian(clf.graph_.weights.toarray())
    assert_allclose(clf.eigenvalues_, np.clip(np.linalg.eigvalsh(L), 0, None), atol=1e-10)
    assert unlabeled_accuracy(clf, y_true, y) > 0.9


@pytest.mark.parametrize("param", ["tau", "gamma"])
@pytest.mark.parametrize("value", [0, -0.5])
def test_tau_and_gamma_must_be_positive(param, value):
    X, _, y = moons()
    clf = SpectralGraphClassifier(**{param: value})
    message = (
        rf"The '{param}' parameter of SpectralGraphClassifier must be .*"
        rf"range \(0(\.0)?, inf\)\. Got {value!r} instead"
    )
    with pytest.raises(InvalidParameterError, match=message):
        clf.fit(X, y)


@pytest.mark.parametrize("loss", BINARY_LOSSES)
def test_binary_loss_with_three_classes_raises(loss):
    X, _, y = blobs([[0, 0], [10, 0], [0, 10]])
    message = rf"Only binary classification is supported by loss='{loss}'.*'mgr'.*'ce'"
    with pytest.raises(ValueError, match=message):
        SpectralGraphClassifier(loss=loss).fit(X, y)


@pytest.mark.parametrize("loss", ["mgr", "probit"])
def test_sparse_X_gives_the_dense_results(loss):
    X, _, y = moons()
    X_new, _ = make_moons(50, noise=0.05, random_state=1)
    dense = SpectralGraphClassifier(loss=loss).fit(X, y)
    sparse = SpectralGraphClassifier(loss=loss).fit(sp.csr_matrix(X), y)
    assert sp.issparse(sparse.node_set_.data)
    assert_allclose(sparse.eigenvalues_, dense.eigenvalues_, atol=1e-10)
    assert_allclose(sparse.coef_, dense.coef_, rtol=1e-8, atol=1e-8)
    for points in (X, X_new):
        assert_allclose(
            sparse.predict_proba(sp.csr_matrix(points)),
            dense.predict_proba(points),
            rtol=1e-8,
            atol=1e-12,
        )
        assert_array_equal(sparse.predict(sp.csr_matrix(points)), dense.predict(points))


def test_float32_X_gives_the_float64_results():
    X, _, y = moons()
    X32 = X.astype(np.float32)
    X_new = make_moons(50, noise=0.05, random_state=1)[0]
    a = SpectralGraphClassifier(loss="ce").fit(X32, y)
    b = SpectralGraphClassifier(loss="ce").fit(X32.astype(np.float64), y)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(
        a.predict_proba(X_new.astype(np.float32)),
        b.predict_proba(X_new.astype(np.float32).astype(np.float64)),
    )
    reference = SpectralGraphClassifier(loss="ce").fit(X, y)
    assert_array_equal(a.predict(X_new.astype(np.float32)), reference.predict(X_new))
    assert_allclose(a.predict_proba(X32), reference.predict_proba(X), atol=1e-4)


def test_dataframe_X_sets_feature_names():
    X, y_true, y = moons()
    df = pd.DataFrame(X, columns=["x0", "x1"])
    clf = SpectralGraphClassifier().fit(df, y)
    assert_array_equal(clf.feature_names_in_, ["x0", "x1"])
    assert clf.n_features_in_ == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no feature-name warning on a matching frame
        predicted = clf.predict(df)
    assert_array_equal(predicted, SpectralGraphClassifier().fit(X, y).predict(X))
    half_labeled = pd.Series(np.where(np.arange(y.size) % 2, -1, y_true))
    assert clf.score(df, half_labeled) == 1.0  # rows picked from a frame, -1 ignored
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(df.rename(columns={"x0": "other"}))


def test_rows_not_among_nodes_raise():
    X, y_true, _ = moons()
    nodes = NodeSet(X)
    clf = SpectralGraphClassifier(nodes=nodes)
    rows = X[:6].copy()
    rows[4] += 1e-3  # no longer a node
    message = r"1 row\(s\) of X are not nodes of `nodes` \(first: row 4\)"
    with pytest.raises(ValueError, match=message):
        clf.fit(rows, y_true[:6])
    with pytest.raises(ValueError, match="X has 3 features, but the nodes have 2"):
        clf.fit(np.hstack([X[:6], X[:6, :1]]), y_true[:6])


# ---------------------------------------------------------- sklearn API
def test_clone_keeps_parameters_and_drops_fitted_state():
    X, _, y = moons()
    nodes = NodeSet(X)
    clf = SpectralGraphClassifier(loss="ce", nodes=nodes, tau=0.01, n_eigs=30).fit(X, y)
    copy = clone(clf)
    assert copy.get_params() == clf.get_params()
    assert copy.nodes is nodes
    assert not hasattr(copy, "coef_")
    assert not hasattr(copy, "classes_")


@pytest.mark.parametrize("loss", ["probit", "ce"])
def test_pickle_round_trip_gives_identical_predictions(loss):
    X, _, y = moons()
    X_new = make_moons(50, noise=0.05, random_state=1)[0]
    clf = SpectralGraphClassifier(loss=loss).fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    for points in (X, X_new):
        assert_array_equal(restored.predict(points), clf.predict(points))
        assert_array_equal(restored.predict_proba(points), clf.predict_proba(points))
        assert_array_equal(restored.decision_function(points), clf.decision_function(points))
    assert_array_equal(restored.posterior_cov(X_new[:5]), clf.posterior_cov(X_new[:5]))
    assert restored.node_set_.digest == clf.node_set_.digest


def test_random_state_makes_the_arpack_path_deterministic(monkeypatch):
    X, y_true, y = moons(n_samples=300)
    monkeypatch.setattr(skmcal.graph, "DENSE_EIGEN_MAX_NODES", 100)
    calls = []
    eigsh = skmcal.graph.eigsh

    def counting_eigsh(*args, **kwargs):
        calls.append(kwargs.get("v0"))
        return eigsh(*args, **kwargs)

    monkeypatch.setattr(skmcal.graph, "eigsh", counting_eigsh)
    fits = [
        SpectralGraphClassifier(
            loss="ce", kernel="gaussian", n_eigs=20, random_state=0, cache=False
        ).fit(X, y)
        for _ in range(2)
    ]
    assert len(calls) == 2 and calls[0] is not None  # ARPACK, seeded start vector
    assert_array_equal(calls[0], calls[1])
    assert_array_equal(fits[0].eigenvalues_, fits[1].eigenvalues_)
    assert_array_equal(fits[0].eigenvectors_, fits[1].eigenvectors_)
    assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))
    other_seed = SpectralGraphClassifier(
        kernel="gaussian", n_eigs=20, random_state=1, cache=False
    ).fit(X, y)
    assert not np.array_equal(calls[2], calls[0])
    assert_allclose(other_seed.eigenvalues_, fits[0].eigenvalues_, atol=1e-8)
    assert unlabeled_accuracy(fits[0], y_true, y) > 0.95


def test_random_state_instance_bypasses_the_cache():
    X, _, y = moons()
    builds = skmcal.graph.GRAPH_CACHE.builds
    rng = np.random.RandomState(0)
    SpectralGraphClassifier(kernel="gaussian", random_state=rng).fit(X, y)
    SpectralGraphClassifier(kernel="gaussian", random_state=rng).fit(X, y)
    assert skmcal.graph.GRAPH_CACHE.builds == builds + 2
    assert len(skmcal.graph.GRAPH_CACHE) == 0


def test_pipeline_with_unlabeled_rows():
    X, y_true, y = moons()
    X = X * [100.0, 0.01] + [5.0, -3.0]  # badly scaled features
    pipe = make_pipeline(StandardScaler(), SpectralGraphClassifier())
    pipe.fit(X, y)
    assert_array_equal(pipe.classes_, [0, 1])
    assert_array_equal(pipe.predict(X), y_true)
    X_new, y_new = make_moons(100, noise=0.05, random_state=1)
    assert np.mean(pipe.predict(X_new * [100.0, 0.01] + [5.0, -3.0]) == y_new) > 0.95


def test_grid_search_on_labeled_rows_with_node_set():
    X, y_true, y = moons(per_class=6)
    labeled = np.flatnonzero(y != -1)
    nodes = NodeSet(X)
    search = GridSearchCV(
        SpectralGraphClassifier(loss="probit", nodes=nodes),
        {"tau": [0.001, 0.01, 0.1], "gamma": [0.1, 0.5, 1.0]},
        cv=3,
    )
    search.fit(X[labeled], y[labeled])
    assert len(search.cv_results_["params"]) == 9
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_score_ > 0.9
    best = search.best_estimator_
    assert best.node_set_ is nodes
    assert best.eigenvectors_.shape[0] == X.shape[0]  # the unlabeled nodes took part
    assert np.mean(search.predict(X) == y_true) > 0.95


# ------------------------------------------------------------- graph cache
def test_grid_search_over_loss_tau_gamma_builds_the_graph_once():
    X, _, y = moons(per_class=6)
    labeled = np.flatnonzero(y != -1)
    skmcal.clear_graph_cache()
    before = skmcal.graph.GRAPH_CACHE.builds
    search = GridSearchCV(
        SpectralGraphClassifier(kernel="gaussian", nodes=NodeSet(X)),
        {"loss": ["mgr", "ce", "probit"], "tau": [0.001, 0.01, 0.1], "gamma": [0.1, 0.5, 1.0]},
        cv=3,
    )
    search.fit(X[labeled], y[labeled])
    assert len(search.cv_results_["params"]) == 27
    assert skmcal.graph.GRAPH_CACHE.builds == before + 1


def test_refit_with_new_labels_does_not_rebuild():
    X, y_true, y = moons()
    nodes = NodeSet(X)
    clf = SpectralGraphClassifier(loss="probit", nodes=nodes).fit(X[y != -1], y[y != -1])
    builds, graph = skmcal.graph.GRAPH_CACHE.builds, clf.graph_
    more = np.arange(20)
    clf.fit(X[more], y_true[more])
    assert skmcal.graph.GRAPH_CACHE.builds == builds
    assert clf.graph_ is graph
    assert_array_equal(clf.labeled_nodes_, more)


def test_clones_share_the_node_set_and_the_graph():
    X, _, y = moons()
    nodes = NodeSet(X)
    clf = SpectralGraphClassifier(nodes=nodes)
    twin = clone(clf)
    assert twin.nodes is clf.nodes
    clf.fit(X[y != -1], y[y != -1])
    builds = skmcal.graph.GRAPH_CACHE.builds
    twin.set_params(loss="ce").fit(X[y != -1], y[y != -1])
    assert skmcal.graph.GRAPH_CACHE.builds == builds
    assert twin.graph_ is clf.graph_


def test_a_different_graph_parameter_rebuilds():
    X, _, y = moons()
    nodes = NodeSet(X)
    builds = skmcal.graph.GRAPH_CACHE.builds
    k10 = SpectralGraphClassifier(kernel="gaussian", nodes=nodes, n_neighbors=10).fit(X, y)
    k12 = SpectralGraphClassifier(kernel="gaussian", nodes=nodes, n_neighbors=12).fit(X, y)
    assert skmcal.graph.GRAPH_CACHE.builds == builds + 2
    assert k12.graph_ is not k10.graph_
    assert k12.graph_.weights.nnz > k10.graph_.weights.nnz
    again = SpectralGraphClassifier(kernel="gaussian", nodes=nodes, n_neighbors=10).fit(X, y)
    assert skmcal.graph.GRAPH_CACHE.builds == builds + 2  # still cached
    assert again.graph_ is k10.graph_


def test_eigenvalues_depend_only_on_graph_parameters():
    X, _, y = moons()
    nodes = NodeSet(X)
    builds = skmcal.graph.GRAPH_CACHE.builds
    reference = SpectralGraphClassifier(kernel="gaussian", nodes=nodes).fit(X, y)
    for loss in LOSSES:
        for tau, gamma in [("auto", "auto"), (0.1, 0.2), (1.0, 2.0)]:
            clf = SpectralGraphClassifier(
                kernel="gaussian", nodes=nodes, loss=loss, tau=tau, gamma=gamma
            )
            clf.fit(X, y)
            assert clf.eigenvalues_ is reference.eigenvalues_
            assert_array_equal(clf.eigenvectors_, reference.eigenvectors_)
    assert skmcal.graph.GRAPH_CACHE.builds == builds + 1


def test_cache_false_builds_a_private_graph_with_the_same_result():
    X, _, y = moons()
    cached = SpectralGraphClassifier(loss="ce").fit(X, y)
    builds, stored = skmcal.graph.GRAPH_CACHE.builds, len(skmcal.graph.GRAPH_CACHE)
    private = SpectralGraphClassifier(loss="ce", cache=False).fit(X, y)
    again = SpectralGraphClassifier(loss="ce", cache=False).fit(X, y)
    assert skmcal.graph.GRAPH_CACHE.builds == builds
    assert len(skmcal.graph.GRAPH_CACHE) == stored
    assert private.graph_ is not cached.graph_ and again.graph_ is not private.graph_
    assert_array_equal(private.eigenvectors_, cached.eigenvectors_)
    assert_array_equal(private.coef_, cached.coef_)


# ------------------------------------------------------ out-of-sample
@pytest.mark.parametrize("loss", LOSSES)
def test_out_of_sample_points_are_predicted_accurately(loss):
    X, y_true, y = moons()
    clf = SpectralGraphClassifier(loss=loss).fit(X, y)
    assert_array_equal(clf.predict(X), clf.transduction_)  # nodes: exact rows
    X_new, y_new = make_moons(300, noise=0.05, random_state=1)
    assert clf.node_set_.lookup(X_new).max() == -1  # none of them is a node
    assert np.mean(clf.predict(X_new) == y_new) > 0.95
    proba = clf.predict_proba(X_new)
    assert proba.shape == (300, 2)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X_new))
    decision = clf.decision_function(X_new)
    assert decision.shape == (300,)
    assert_array_equal(clf.classes_[(decision > 0).astype(int)], clf.predict(X_new))


def test_out_of_sample_values_are_weighted_averages_of_the_nodes():
    X, _, y = moons()
    W = SpectralGraphClassifier(n_eigs=20).fit(X, y).graph_.weights
    precomputed = SpectralGraphClassifier("gr", kernel="precomputed", n_eigs=20).fit(W, y)
    rows = 2.0 * W[:10].toarray()  # rows of affinities that are not node rows
    u = precomputed.eigenvectors_ @ precomputed.coef_
    expected = rows @ u / rows.sum(axis=1)
    assert_allclose(precomputed.decision_function(rows), expected, rtol=1e-12, atol=1e-14)
    assert_allclose(precomputed.decision_function(W[:10]), u[:10], rtol=1e-12, atol=1e-14)


# ------------------------------------------------ constructor parameters
@pytest.mark.parametrize("scale_neighbor, scale_factor", [(2, 1.5), (4, 3.0)])
def test_gaussian_weights_match_brute_force(scale_neighbor, scale_factor):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(12, 3))
    y = np.full(12, -1)
    y[[0, 1]] = [0, 1]
    k = 4
    clf = SpectralGraphClassifier(
        n_neighbors=k, scale_neighbor=scale_neighbor, scale_factor=scale_factor, n_eigs=12
    ).fit(X, y)
    D = pairwise_distances(X)
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1)
    sigma = D[np.arange(12), order[:, scale_neighbor - 1]]
    W = np.zeros((12, 12))
    for i in range(12):
        for j in order[i, :k]:
            W[i, j] = np.exp(-(D[i, j] ** 2) / (scale_factor * sigma[i] * sigma[j]))
    W = (W + W.T) / 2
    assert_allclose(clf.graph_.weights.toarray(), W, rtol=1e-12, atol=1e-15)
    assert_allclose(clf.graph_.scales, sigma, rtol=1e-12)
    L = dense_laplacian(W)
    assert_allclose(clf.eigenvalues_, np.clip(np.linalg.eigvalsh(L), 0, None), atol=1e-10)
    V = clf.eigenvectors_
    assert_allclose(V.T @ V, np.eye(12), atol=1e-10)
    assert_allclose(L @ V, V * clf.eigenvalues_, atol=1e-10)


def test_cosine_kernel_weights_and_scale_invariance():
    rng = np.random.RandomState(0)
    angle = np.concatenate([rng.uniform(0.0, 0.5, 60), rng.uniform(1.1, 1.6, 60)])
    radius = rng.uniform(0.5, 5.0, 120)
    X = np.column_stack([radius * np.cos(angle), radius * np.sin(angle), np.ones(120)])
    y_true = np.repeat([0, 1], 60)
    y = np.full(120, -1)
    y[[0, 1, 60, 61]] = y_true[[0, 1, 60, 61]]
    clf = SpectralGraphClassifier(kernel="cosine", n_neighbors=6).fit(X, y)
    # Brute force: w_ij = max(0, cos(x_i, x_j)) on the kNN graph of the cosine distance.
    D = pairwise_distances(X, metric="cosine")
    np.fill_diagonal(D, np.inf)
    W = np.zeros_like(D)
    for i, row in enumerate(np.argsort(D, axis=1)[:, :6]):
        W[i, row] = np.clip(1.0 - D[i, row], 0.0, None)
    assert_allclose(clf.graph_.weights.toarray(), (W + W.T) / 2, atol=1e-12)
    assert_array_equal(clf.transduction_, y_true)
    # Rescaling each row leaves cosine similarities, hence the model, unchanged.
    scaled = X * rng.uniform(1.0, 100.0, size=(120, 1))
    rescaled = SpectralGraphClassifier(kernel="cosine", n_neighbors=6).fit(scaled, y)
    assert_allclose(rescaled.eigenvalues_, clf.eigenvalues_, atol=1e-10)
    assert_allclose(rescaled.predict_proba(scaled), clf.predict_proba(X), atol=1e-8)


def _gaussian_knn_affinity(X_query, X_nodes, k=10, width=0.05, exclude_self=False):
    """Sparse kNN affinities ``exp(-d^2 / width)`` from query rows to the nodes."""
    nn = NearestNeighbors(n_neighbors=k).fit(X_nodes)
    dist, ind = nn.kneighbors(None if exclude_self else X_query)
    rows = np.repeat(np.arange(dist.shape[0]), k)
    return sp.csr_matrix(
        (np.exp(-(dist.ravel() ** 2) / width), (rows, ind.ravel())),
        shape=(dist.shape[0], X_nodes.shape[0]),
    )


def test_precomputed_kernel_with_sparse_affinity():
    X, y_true, y = moons()
    W = _gaussian_knn_affinity(X, X, exclude_self=True)
    W = W.maximum(W.T).tocsr()
    clf = SpectralGraphClassifier(kernel="precomputed").fit(W, y)
    assert_allclose(clf.graph_.weights.toarray(), W.toarray())  # already symmetric
    assert_array_equal(clf.transduction_, y_true)
    assert_array_equal(clf.predict(W), y_true)
    X_new, y_new = make_moons(100, noise=0.05, random_state=1)
    affinity_new = _gaussian_knn_affinity(X_new, X)
    assert np.mean(clf.predict(affinity_new) == y_new) > 0.95
    with pytest.raises(ValueError, match="square affinity matrix"):
        SpectralGraphClassifier(kernel="precomputed").fit(W[:, :150], y)


def test_neighbors_transformer_gives_the_default_graph():
    X, _, y = moons()
    X_new = make_moons(50, noise=0.05, random_state=1)[0]
    default = SpectralGraphClassifier(loss="ce").fit(X, y)
    custom = SpectralGraphClassifier(
        loss="ce", neighbors=KNeighborsTransformer(n_neighbors=10)
    ).fit(X, y)
    assert custom.graph_ is not default.graph_
    assert isinstance(custom.graph_.index, KNeighborsTransformer)
    assert_allclose(custom.graph_.weights.toarray(), default.graph_.weights.toarray())
    assert_allclose(custom.coef_, default.coef_, atol=1e-10)
    assert_allclose(custom.predict_proba(X_new), default.predict_proba(X_new), atol=1e-10)


def test_neighbors_transformer_with_too_few_neighbours_raises():
    X, _, y = moons()
    clf = SpectralGraphClassifier(neighbors=KNeighborsTransformer(n_neighbors=3))
    with pytest.raises(ValueError, match="gave 3 neighbours for some rows; 10 are needed"):
        clf.fit(X, y)


def test_n_eigs_sets_the_spectrum_size():
    X, _, y = moons()
    small = SpectralGraphClassifier(n_eigs=7).fit(X, y)
    large = SpectralGraphClassifier(n_eigs=30).fit(X, y)
    assert small.eigenvalues_.shape == (7,) and small.coef_.shape == (7, 2)
    assert np.all(np.diff(large.eigenvalues_) >= 0)
    assert_allclose(small.eigenvalues_, large.eigenvalues_[:7], atol=1e-10)


@pytest.mark.parametrize("tau, gamma", [("auto", "auto"), (0.3, 0.7)])
def test_mgr_coef_matches_closed_form(tau, gamma):
    X, _, y = blobs([[0, 0], [6, 0], [0, 6]], labels_per_class=3)
    clf = SpectralGraphClassifier("mgr", tau=tau, gamma=gamma, n_eigs=20).fit(X, y)
    labeled = np.flatnonzero(y != -1)
    P = clf.eigenvectors_[labeled]
    Y = np.eye(3)[y[labeled]]
    if tau == "auto":  # the grid point of largest evidence, evaluated densely
        V = clf.eigenvectors_

        def amplitude(t):  # makes the prior's node variances average one
            prior_cov = V @ np.diag(1 / (clf.eigenvalues_ + t**2)) @ V.T
            return len(V) / np.trace(prior_cov)

        def evidence(t, g):
            cov = amplitude(t) * P @ np.diag(1 / (clf.eigenvalues_ + t**2)) @ P.T
            S = g**2 * np.eye(len(labeled)) + cov
            return sum(multivariate_normal(cov=S).logpdf(Y[:, c]) for c in range(3))

        taus = [t for t in DEFAULT_TAUS if t**2 <= np.median(clf.eigenvalues_)]
        grid = [(t, g) for t in taus for g in DEFAULT_GAMMAS]
        expected_tau, g = max(grid, key=lambda tg: evidence(*tg))
        # the unscaled model's gamma with the same MAP
        expected_gamma = g / np.sqrt(amplitude(expected_tau))
    else:
        expected_tau, expected_gamma = tau, gamma
    assert clf.tau_ == expected_tau
    assert clf.gamma_ == pytest.approx(expected_gamma, rel=1e-12)
    H = np.diag(clf.eigenvalues_ + expected_tau**2) + P.T @ P / expected_gamma**2
    assert_allclose(
        clf.coef_, np.linalg.solve(H, P.T @ Y / expected_gamma**2), rtol=1e-8, atol=1e-12
    )
    assert_allclose(clf.posterior_cov(), np.linalg.inv(H), rtol=1e-8, atol=1e-12)
    assert clf.n_iter_ == 0


@pytest.mark.parametrize("loss", ["logistic", "probit", "ce"])
def test_auto_hyperparameters_maximise_the_evidence_of_the_loss(loss):
    X, _, y = moons()
    clf = SpectralGraphClassifier(loss=loss).fit(X, y)
    labeled = np.flatnonzero(y != -1)
    codes = np.searchsorted(clf.classes_, y[labeled])
    targets = LOSSES_BY_NAME[loss].encode(codes, 2)
    V = clf.eigenvectors_
    P = V[labeled]

    def amplitude(t):  # makes the prior's node variances average one
        return len(V) / np.trace(V @ np.diag(1 / (clf.eigenvalues_ + t**2)) @ V.T)

    # With the prior scaled by s, the Laplace evidence at gamma g equals the
    # unscaled one at g / sqrt(s) (the latent values scale by sqrt(s)).
    grid = DEFAULT_GAMMAS if LOSSES_BY_NAME[loss].closed_form else LAPLACE_GAMMAS
    table = {
        (t, g): log_evidence(
            LOSSES_BY_NAME[loss], clf.eigenvalues_, P, targets, t, g / np.sqrt(amplitude(t))
        )
        for t in DEFAULT_TAUS
        if t**2 <= np.median(clf.eigenvalues_)  # the cap of tau="auto"
        for g in grid
    }
    tau, g = max(table, key=table.get)
    assert clf.tau_ == tau
    assert clf.gamma_ == pytest.approx(g / np.sqrt(amplitude(tau)), rel=1e-12)
    # one of them given: the other is chosen alone
    fixed = SpectralGraphClassifier(loss=loss, tau=0.03).fit(X, y)
    assert fixed.tau_ == 0.03
    g = max(grid, key=lambda g: table[(0.03, g)])
    assert fixed.gamma_ == pytest.approx(g / np.sqrt(amplitude(0.03)), rel=1e-12)
    # gamma given: the tau of largest evidence at that gamma, unscaled
    fixed = SpectralGraphClassifier(loss=loss, gamma=0.5).fit(X, y)
    assert fixed.gamma_ == 0.5
    unscaled = {
        t: log_evidence(LOSSES_BY_NAME[loss], clf.eigenvalues_, P, targets, t, 0.5)
        for t in DEFAULT_TAUS
        if t**2 <= np.median(clf.eigenvalues_)
    }
    assert fixed.tau_ == max(unscaled, key=unscaled.get)


def test_auto_choice_is_reused_by_warm_refits_until_the_labels_grow(evidence_selections):
    """Newton losses reuse the choice until the labels grow by a quarter; gr/mgr never do."""
    calls = evidence_selections
    X, y_true, y = moons()
    labeled = list(np.flatnonzero(y != -1))
    unlabeled = [i for i in range(len(y)) if y[i] == -1]
    sizes = [len(labeled) + 2 * step for step in range(6)]
    for loss in ("probit", "mgr"):
        calls.clear()
        clf = SpectralGraphClassifier(loss, kernel="gaussian")  # no kernel choice
        for step in range(6):
            rows = labeled + unlabeled[: 2 * step]
            clf.fit(X, np.where(np.isin(np.arange(len(y)), rows), y_true, -1))
        expected = sizes if loss == "mgr" else [sizes[0]]
        for n in sizes[1:] if loss == "probit" else ():
            if n >= 1.25 * expected[-1]:
                expected.append(n)
        assert calls == expected
    calls.clear()
    cold = SpectralGraphClassifier("probit", kernel="gaussian", warm_start=False)
    for _ in range(2):
        cold.fit(X, y)
    assert calls == [sizes[0], sizes[0]]


@pytest.mark.parametrize("gamma", [0.2, 1.0])
def test_newton_map_of_logistic_has_zero_gradient(gamma):
    X, y_true, y = moons()
    tau = 0.05
    clf = SpectralGraphClassifier(loss="logistic", tau=tau, gamma=gamma, n_eigs=20).fit(X, y)
    assert clf.gamma_ == gamma and clf.tau_ == tau
    labeled = np.flatnonzero(y != -1)
    P = clf.eigenvectors_[labeled]
    signs = 2.0 * y[labeled] - 1.0
    alpha = clf.coef_
    # J(a) = 1/2 sum (lambda + tau^2) a^2 + sum log(1 + exp(-u y / gamma)), u = P a
    gradient = (clf.eigenvalues_ + tau**2) * alpha - P.T @ (
        signs / gamma * expit(-(P @ alpha) * signs / gamma)
    )
    assert np.max(np.abs(gradient)) < 1e-8 * (1 + np.max(np.abs(alpha)))
    assert_allclose(clf.predict_proba(X)[:, 1], expit(clf.decision_function(X) / gamma))
    assert unlabeled_accuracy(clf, y_true, y) > 0.95


@pytest.mark.parametrize("loss", NEWTON_LOSSES)
def test_small_max_iter_warns_convergence(loss):
    X, _, y = moons()
    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=1"):
        clf = SpectralGraphClassifier(loss=loss, max_iter=1).fit(X, y)
    assert clf.n_iter_ == 1
    assert not clf.posterior_.converged
    converged = SpectralGraphClassifier(loss=loss).fit(X, y)
    assert converged.posterior_.converged and converged.n_iter_ > 1


@pytest.mark.parametrize("loss", NEWTON_LOSSES)
def test_looser_tol_takes_fewer_iterations(loss):
    X, _, y = moons()
    loose = SpectralGraphClassifier(loss=loss, tol=1e-1).fit(X, y)
    tight = SpectralGraphClassifier(loss=loss, tol=1e-12).fit(X, y)
    assert loose.n_iter_ < tight.n_iter_
    scale = np.max(np.abs(tight.coef_))
    assert np.max(np.abs(loose.coef_ - tight.coef_)) < 0.1 * (1 + scale)
    assert_array_equal(loose.transduction_, tight.transduction_)


@pytest.mark.parametrize("model", ["spectral", "full", "sum"])
def test_auto_tol_is_tight_for_spectral_newton_and_auto_solve_tol_for_sparse_solves(
    model, monkeypatch
):
    """tol="auto": AUTO_NEWTON_TOL (1e-10) for the spectral model's Newton,
    AUTO_SOLVE_TOL (1e-6) for the sparse solves (full-graph fits, the summed model and
    its Green's columns); a given tol goes to every one but, with mgr, the spectral ce
    fits of kernel="auto" (AUTO_NEWTON_TOL: mgr's tol is the sparse solves'). The full
    model's evidence (a cold fit: every tau) solves its Green's columns to the larger of
    tol and FULL_EVIDENCE_TOL."""
    import skmcal.classifier as module
    from skmcal.evidence import FULL_EVIDENCE_TOL

    seen = []
    for name in ("fit_posterior", "fit_full_graph", "green_block", "fit_sum_graph"):
        original = getattr(module, name)

        def spy(*args, _name=name, _original=original, **kwargs):
            seen.append((_name, kwargs.get("tol")))
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    X, _, y = blobs([(0, 0), (5, 0), (0, 5)], labels_per_class=3)
    loss = "ce" if model == "spectral" else "mgr"
    for tol, expected in (("auto", None), (1e-7, 1e-7)):
        seen.clear()
        SpectralGraphClassifier(loss=loss, model=model, tol=tol).fit(X, y)
        assert seen
        for name, got in seen:
            want = expected
            if want is None or (name == "fit_posterior" and loss == "mgr"):
                want = module.AUTO_NEWTON_TOL if name == "fit_posterior" else module.AUTO_SOLVE_TOL
            if model == "full" and name == "green_block":
                want = max(want, FULL_EVIDENCE_TOL)
            assert got == want, name
    assert module.AUTO_NEWTON_TOL == 1e-10 and module.AUTO_SOLVE_TOL == 1e-6
    with pytest.raises(ValueError, match="tol"):
        SpectralGraphClassifier(tol="fast").fit(X, y)


@pytest.mark.parametrize("loss", NEWTON_LOSSES)
def test_warm_start_refit_takes_fewer_iterations(loss):
    X, y_true, y = moons()
    # a fixed gamma: Newton's iteration count from a start depends on it
    warm = SpectralGraphClassifier(loss=loss, gamma=0.5, warm_start=True).fit(X, y)
    y_more = y.copy()
    y_more[np.flatnonzero(y == -1)[:4]] = y_true[np.flatnonzero(y == -1)[:4]]
    warm.fit(X, y_more)
    cold = SpectralGraphClassifier(loss=loss, gamma=0.5).fit(X, y_more)
    assert warm.n_iter_ < cold.n_iter_
    assert_allclose(warm.coef_, cold.coef_, atol=1e-8)
    no_warm = SpectralGraphClassifier(loss=loss, gamma=0.5, warm_start=False).fit(X, y)
    assert no_warm.fit(X, y_more).n_iter_ == cold.n_iter_


def test_warm_start_without_cache():
    # With cache=False every fit rebuilds an identical graph; warm_start should
    # still start from the previous coef_ ("refitting on the same graph").
    X, y_true, y = moons()
    warm = SpectralGraphClassifier(loss="ce", gamma=0.5, warm_start=True, cache=False).fit(X, y)
    y_more = y.copy()
    y_more[np.flatnonzero(y == -1)[:4]] = y_true[np.flatnonzero(y == -1)[:4]]
    warm.fit(X, y_more)
    cold = SpectralGraphClassifier(loss="ce", gamma=0.5, cache=False).fit(X, y_more)
    assert_allclose(warm.coef_, cold.coef_, atol=1e-8)
    assert warm.n_iter_ < cold.n_iter_


def test_n_jobs_does_not_change_the_graph():
    X, _, y = moons()
    serial = SpectralGraphClassifier(cache=False).fit(X, y)
    parallel = SpectralGraphClassifier(n_jobs=2, cache=False).fit(X, y)
    assert parallel.graph_.index.n_jobs == 2
    assert_array_equal(parallel.graph_.weights.toarray(), serial.graph_.weights.toarray())
    assert_array_equal(parallel.coef_, serial.coef_)
    # n_jobs is not a graph parameter: a cached graph is reused across n_jobs.
    SpectralGraphClassifier().fit(X, y)
    builds = skmcal.graph.GRAPH_CACHE.builds
    SpectralGraphClassifier(n_jobs=2).fit(X, y)
    assert skmcal.graph.GRAPH_CACHE.builds == builds


def test_every_constructor_parameter_is_tested():
    parameters = set(inspect.signature(SpectralGraphClassifier.__init__).parameters) - {"self"}
    untested = parameters - TESTED_PARAMETERS
    assert not untested, f"constructor parameters without a test: {sorted(untested)}"
    stale = TESTED_PARAMETERS - parameters
    assert not stale, f"TESTED_PARAMETERS names parameters that no longer exist: {sorted(stale)}"


def test_model_must_be_known():
    X, y = make_blobs(40, centers=2, random_state=0)
    y = np.where(np.arange(40) < 6, y, -1)
    with pytest.raises(ValueError, match="'model' parameter"):
        SpectralGraphClassifier(model="laplace").fit(X, y)
