"""scikit-activeml interop: the missing_label marker and skmcal.skactiveml.

The missing_label tests need only skmcal; the adapter's tests run against the
real scikit-activeml and are skipped where it is not installed.
"""

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import make_blobs, make_moons

from skmcal import SpectralGraphClassifier, model_change, uncertainty, vopt


@pytest.fixture(scope="module")
def moons():
    X, y_true = make_moons(200, noise=0.05, random_state=0)
    return X, y_true


@pytest.fixture(scope="module")
def blobs():
    X, y_true = make_blobs(240, centers=3, cluster_std=0.8, random_state=1)
    return X, y_true


# ----------------------------------------------------------- missing_label
LABELED = [0, 1, 2, 3, 4, 5]


def marked(y_true, marker, dtype=None):
    y = np.array(y_true, dtype=dtype if dtype is not None else object)
    keep = np.zeros(y.size, dtype=bool)
    keep[LABELED] = True
    y[~keep] = marker
    return y


@pytest.mark.parametrize(
    ("marker", "dtype"),
    [(-1, int), (np.nan, float), (None, object), ("unknown", object), (-1.0, float), (7, int)],
)
def test_missing_label_markers_give_the_same_fit(moons, marker, dtype):
    X, y_true = moons
    reference = SpectralGraphClassifier().fit(X, marked(y_true, -1, int))
    clf = SpectralGraphClassifier(missing_label=marker).fit(X, marked(y_true, marker, dtype))
    assert_array_equal(clf.labeled_nodes_, LABELED)
    assert_array_equal(clf.coef_, reference.coef_)
    assert_array_equal(clf.classes_, [0, 1])


def test_missing_label_nan_in_a_pandas_series(moons):
    X, y_true = moons
    y = pd.Series(marked(y_true, np.nan, float))
    clf = SpectralGraphClassifier(missing_label=np.nan).fit(pd.DataFrame(X), y)
    assert_array_equal(clf.labeled_nodes_, LABELED)


def test_missing_label_none_with_string_classes(moons):
    X, y_true = moons
    names = np.array(["left", "right"], dtype=object)[y_true]
    y = marked(names, None)
    clf = SpectralGraphClassifier(missing_label=None).fit(X, y)
    assert_array_equal(clf.classes_, ["left", "right"])
    assert clf.score(X, names) > 0.95


def test_missing_label_default_with_classes_minus_one_and_one_explains(moons):
    X, y_true = moons
    y = 2 * y_true - 1  # every row labeled -1 or +1
    message = (
        r"one class only \(1\).* 100 row\(s\) equal to the unlabeled marker missing_label=-1 "
        r"are unlabeled; if -1 is a class label .* pass it as missing_label"
    )
    with pytest.raises(ValueError, match=message):
        SpectralGraphClassifier().fit(X, y)
    y_nan = np.where(np.isin(np.arange(200), LABELED), y, np.nan)
    clf = SpectralGraphClassifier(missing_label=np.nan).fit(X, y_nan)
    assert_array_equal(clf.classes_, [-1, 1])


@pytest.mark.parametrize(("marker", "name"), [(np.nan, "np.nan"), (None, "None")])
def test_missing_label_mismatch_names_the_marker_to_pass(moons, marker, name):
    X, y_true = moons
    y = marked(y_true, marker, float if marker is not None else object)
    with pytest.raises(
        ValueError, match=rf"y contains {name} among its labels.*missing_label={name}"
    ):
        SpectralGraphClassifier().fit(X, y)


@pytest.mark.parametrize(
    ("y_marker", "dtype", "missing_label", "shown"),
    [("-1", str, -1, "'-1'"), (-1, int, "-1", "-1"), ("7", object, 7, "'7'")],
)
def test_a_marker_of_another_type_is_refused(moons, y_marker, dtype, missing_label, shown):
    """Text '-1' read from a file against the number -1 (or the reverse): no row would
    be unlabeled and the marked rows a class of their own."""
    X, y_true = moons
    y = marked(np.array(["cat", "dog"], dtype=object)[y_true] if dtype is not int else y_true,
               y_marker, dtype)  # fmt: skip
    message = (
        rf"y holds {shown} \(194 rows\), and the unlabeled marker "
        rf"missing_label={missing_label!r} is of type {type(missing_label).__name__}.*"
        rf"Pass missing_label={shown} if they are the unlabeled rows"
    )
    with pytest.raises(ValueError, match=message):
        SpectralGraphClassifier(missing_label=missing_label).fit(X, y)
    clf = SpectralGraphClassifier(missing_label=y_marker).fit(X, y)  # the marker y holds
    assert_array_equal(clf.labeled_nodes_, LABELED)


def test_missing_label_no_labeled_row_names_the_marker(moons):
    X, _ = moons
    with pytest.raises(ValueError, match=r"every entry of y is nan, the unlabeled marker"):
        SpectralGraphClassifier(missing_label=np.nan).fit(X, np.full(200, np.nan))


def test_missing_label_score_ignores_marked_rows(moons):
    X, y_true = moons
    clf = SpectralGraphClassifier(missing_label=np.nan).fit(X, marked(y_true, np.nan, float))
    y_score = y_true.astype(float)
    y_score[:100] = np.nan
    assert clf.score(X, y_score) == np.mean(clf.predict(X[100:]) == y_true[100:])
    with pytest.raises(ValueError, match=r"at least one labeled row \(y != nan\)"):
        clf.score(X, np.full(200, np.nan))


def test_missing_label_none_scores_numeric_classes(moons):
    X, y_true = moons
    clf = SpectralGraphClassifier(missing_label=None).fit(X, marked(y_true, None))
    y_score = np.array([None] * 100 + list(y_true[100:]), dtype=object)
    assert clf.score(X, y_score) == np.mean(clf.predict(X[100:]) == y_true[100:])


def test_missing_label_must_be_a_scalar():
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="'missing_label' parameter"):
        SpectralGraphClassifier(missing_label=[-1]).fit(np.eye(3), [0, 1, -1])


# ------------------------------------------------------------- the adapter
@pytest.fixture(scope="module")
def skactiveml():
    return pytest.importorskip("skactiveml")


@pytest.fixture(scope="module")
def adapter(skactiveml):
    from skmcal import skactiveml as module

    return module


def start(y_true, per_class=1):
    y = np.full(y_true.size, np.nan)
    for c in np.unique(y_true):
        rows = np.flatnonzero(y_true == c)[:per_class]
        y[rows] = y_true[rows]
    return y


def test_classifier_wrapper_fits_on_every_row(adapter, blobs):
    X, y_true = blobs
    clf = adapter.skactiveml_classifier(SpectralGraphClassifier(loss="ce"), classes=[0, 1, 2])
    y = start(y_true)
    clf.fit(X, y)
    assert clf.is_fitted_
    inner = clf.estimator_
    assert np.isnan(inner.missing_label)
    assert inner.node_set_.n_nodes == X.shape[0]  # unlabeled rows are nodes
    direct = SpectralGraphClassifier(loss="ce", missing_label=np.nan).fit(X, y)
    assert_allclose(clf.predict_proba(X), direct.predict_proba(X))
    assert_array_equal(clf.predict(X), direct.predict(X))


def test_classifier_wrapper_with_scikit_activeml_strategies(adapter, skactiveml, blobs):
    from skactiveml.pool import UncertaintySampling

    X, y_true = blobs
    clf = adapter.skactiveml_classifier(classes=[0, 1, 2])
    qs = UncertaintySampling(method="margin_sampling", random_state=0)
    y = start(y_true)
    for _ in range(5):
        idx = qs.query(X, y, clf, batch_size=2)
        assert np.isnan(y[idx]).all()
        y[idx] = y_true[idx]
    assert np.sum(~np.isnan(y)) == 3 + 10
    assert clf.fit(X, y).score(X, y_true) > 0.9


def test_classifier_wrapper_rejects_other_estimators(adapter):
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(TypeError, match="estimator must be a SpectralGraphClassifier"):
        adapter.skactiveml_classifier(LogisticRegression())


@pytest.mark.parametrize(
    ("name", "function", "options"),
    [
        ("model_change", model_change, {}),
        ("vopt", vopt, {}),
        ("uncertainty", uncertainty, {"measure": "entropy"}),
    ],
)
def test_query_strategy_picks_what_skmcal_picks(adapter, blobs, name, function, options):
    X, y_true = blobs
    y = start(y_true, per_class=2)
    qs = adapter.GraphQueryStrategy(name, strategy_options=options or None, random_state=0)
    clf = adapter.skactiveml_classifier(SpectralGraphClassifier(loss="ce"))
    idx = qs.query(X, y, clf, batch_size=4)
    fitted = SpectralGraphClassifier(loss="ce", missing_label=np.nan).fit(X, y)
    unlabeled = np.flatnonzero(np.isnan(y))
    options = {"batch": "topk", **options}  # the adapter's default batch
    expected, _ = function(fitted, X, 4, candidates=unlabeled, random_state=0, **options)
    assert_array_equal(idx, expected)


def test_query_strategy_utilities(adapter, blobs):
    X, y_true = blobs
    y = start(y_true)
    qs = adapter.GraphQueryStrategy(random_state=0)
    clf = SpectralGraphClassifier(missing_label=np.nan)
    idx, utilities = qs.query(X, y, clf, batch_size=3, return_utilities=True)
    assert utilities.shape == (3, X.shape[0])
    labeled = ~np.isnan(y)
    assert np.isnan(utilities[:, labeled]).all()
    fitted = clf.fit(X, y)
    unlabeled = np.flatnonzero(~labeled)
    rows, scores = model_change(fitted, X, unlabeled.size, candidates=unlabeled, batch="topk")
    assert_allclose(utilities[0, rows], scores)
    for b in range(3):
        assert np.nanargmax(utilities[b]) == idx[b]
        assert np.isnan(utilities[b, idx[:b]]).all()
    assert_array_equal(idx, qs.query(X, y, clf, batch_size=3))


def test_query_strategy_candidates_as_indices_and_as_rows(adapter, blobs):
    X, y_true = blobs
    y = start(y_true)
    clf = adapter.skactiveml_classifier()
    qs = adapter.GraphQueryStrategy(random_state=0)
    allowed = np.arange(100, 140)
    idx = qs.query(X, y, clf, candidates=allowed, batch_size=3)
    assert np.isin(idx, allowed).all()
    # Rows given as candidates: the indices are rows of `candidates`.
    idx_rows = qs.query(X, y, clf, candidates=X[allowed], batch_size=3)
    assert_array_equal(allowed[idx_rows], idx)
    _, utilities = qs.query(X, y, clf, candidates=X[allowed], batch_size=2, return_utilities=True)
    assert utilities.shape == (2, allowed.size)


def test_query_strategy_candidates_with_labeled_rows_are_skipped(adapter, blobs):
    X, y_true = blobs
    y = start(y_true)
    labeled = np.flatnonzero(~np.isnan(y))
    qs = adapter.GraphQueryStrategy(random_state=0)
    clf = adapter.skactiveml_classifier()
    with pytest.warns(UserWarning, match="batch_size=3 exceeds the 2 unlabeled candidates"):
        idx = qs.query(X, y, clf, candidates=np.r_[labeled, 50, 60], batch_size=3)
    assert sorted(idx) == [50, 60]


def test_query_strategy_greedy_batches(adapter, blobs):
    X, y_true = blobs
    y = start(y_true, per_class=2)
    qs = adapter.GraphQueryStrategy(batch="greedy", random_state=0)
    clf = adapter.skactiveml_classifier(SpectralGraphClassifier(loss="ce"))
    idx = qs.query(X, y, clf, batch_size=4)
    fitted = SpectralGraphClassifier(loss="ce", missing_label=np.nan).fit(X, y)
    unlabeled = np.flatnonzero(np.isnan(y))
    expected, _ = model_change(fitted, X, 4, candidates=unlabeled, batch="greedy")
    assert_array_equal(idx, expected)
    with pytest.raises(ValueError, match="return_utilities=True needs batch='topk'"):
        qs.query(X, y, clf, batch_size=2, return_utilities=True)


@pytest.mark.parametrize("n_labeled_classes", [0, 1])
def test_query_strategy_cold_start_is_uniformly_random(adapter, blobs, n_labeled_classes):
    X, y_true = blobs
    y = np.full(y_true.size, np.nan)
    if n_labeled_classes:
        first = np.flatnonzero(y_true == 0)[:3]
        y[first] = 0
    qs = adapter.GraphQueryStrategy(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is fitted, so nothing warns
        idx, utilities = qs.query(
            X, y, adapter.skactiveml_classifier(), batch_size=5, return_utilities=True
        )
    assert idx.size == 5 and np.isnan(y[idx]).all() and np.unique(idx).size == 5
    assert_array_equal(utilities[0, np.isnan(y)], 1.0)
    again = adapter.GraphQueryStrategy(random_state=1).query(
        X, y, adapter.skactiveml_classifier(), batch_size=5
    )
    assert not np.array_equal(idx, again)


def test_query_strategy_without_refit(adapter, blobs):
    X, y_true = blobs
    y = start(y_true)
    clf = adapter.skactiveml_classifier().fit(X, y)
    qs = adapter.GraphQueryStrategy("sopt", random_state=0)
    assert_array_equal(
        qs.query(X, y, clf, fit_clf=False, batch_size=2),
        qs.query(X, y, clf, fit_clf=True, batch_size=2),
    )


def test_query_strategy_random_sampling_and_callables(adapter, blobs):
    X, y_true = blobs
    y = start(y_true)
    clf = adapter.skactiveml_classifier()
    idx = adapter.GraphQueryStrategy("random_sampling", random_state=0).query(
        X, y, clf, batch_size=6
    )
    assert idx.size == 6 and np.isnan(y[idx]).all()
    by_callable = adapter.GraphQueryStrategy(vopt, random_state=0).query(X, y, clf, batch_size=2)
    by_name = adapter.GraphQueryStrategy("vopt", random_state=0).query(X, y, clf, batch_size=2)
    assert_array_equal(by_callable, by_name)


def test_query_strategy_errors(adapter, blobs):
    from skactiveml.classifier import SklearnClassifier
    from sklearn.linear_model import LogisticRegression

    X, y_true = blobs
    y = start(y_true)
    clf = adapter.skactiveml_classifier()
    with pytest.raises(ValueError, match="strategy must be one of"):
        adapter.GraphQueryStrategy("bald").query(X, y, clf)
    with pytest.raises(ValueError, match="batch must be one of"):
        adapter.GraphQueryStrategy(batch="all").query(X, y, clf)
    with pytest.raises(TypeError, match="clf must be a SpectralGraphClassifier"):
        adapter.GraphQueryStrategy().query(X, y, SklearnClassifier(LogisticRegression()))
    with pytest.raises(ValueError, match="must be equal"):
        adapter.GraphQueryStrategy().query(X, y, SpectralGraphClassifier())  # marker -1
    with pytest.raises(ValueError, match=r"strategy_options may not set \['candidates'\]"):
        adapter.GraphQueryStrategy("vopt", strategy_options={"candidates": 0.1}).query(X, y, clf)


def test_query_strategy_checks_the_markers_before_counting_candidates(adapter, blobs):
    # y marked with NaN but missing_label=-1: no row looks unlabeled, which used to give
    # an empty batch with scikit-activeml's batch_size warning instead of the mismatch.
    X, y_true = blobs
    y = start(y_true)
    for clf in (adapter.skactiveml_classifier(), SpectralGraphClassifier(missing_label=np.nan)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="must be equal"):
                adapter.GraphQueryStrategy(missing_label=-1).query(X, y, clf, batch_size=2)
    with pytest.raises(TypeError, match="clf must be a SpectralGraphClassifier"):
        adapter.GraphQueryStrategy(missing_label=-1).query(X, y, object(), batch_size=2)


def test_query_strategy_on_a_pool_with_equal_rows(adapter, blobs):
    """Copies count once, as in the strategies: utilities over the distinct points, and a
    batch larger than them is cut to them with a warning."""
    X, y_true = blobs
    y = start(y_true)
    copies = np.flatnonzero(np.isnan(y))[:20]
    Xd, yd = np.r_[X, X[copies]], np.r_[y, np.full(20, np.nan)]
    labeled_copy = np.flatnonzero(~np.isnan(y))[0]
    Xd, yd = np.r_[Xd, X[[labeled_copy]]], np.r_[yd, np.nan]  # a copy of a labeled row
    qs = adapter.GraphQueryStrategy(random_state=0)
    clf = adapter.skactiveml_classifier()
    idx, utilities = qs.query(Xd, yd, clf, batch_size=3, return_utilities=True)
    n_distinct = int(np.isnan(y).sum())  # the copies add no point
    assert np.isfinite(utilities[0]).sum() == n_distinct
    assert np.isnan(utilities[0, X.shape[0]:]).all()  # the copies' rows: their first stands
    assert len({tuple(row) for row in Xd[idx]}) == 3 and np.isnan(yd[idx]).all()
    with pytest.warns(UserWarning, match=rf"batch_size={n_distinct + 5} exceeds the "
                                         rf"{n_distinct} unlabeled candidates once equal rows"):
        chosen = qs.query(Xd, yd, clf, batch_size=n_distinct + 5)
    assert chosen.size == n_distinct and np.all(chosen < X.shape[0])


def test_every_query_strategy_parameter_is_tested(adapter):
    tested = {"strategy", "batch", "strategy_options", "missing_label", "random_state"}
    parameters = set(inspect.signature(adapter.GraphQueryStrategy.__init__).parameters) - {"self"}
    assert parameters == tested
    query_parameters = set(inspect.signature(adapter.GraphQueryStrategy.query).parameters)
    assert query_parameters == {
        "self", "X", "y", "clf", "fit_clf", "candidates", "batch_size", "return_utilities"
    }  # fmt: skip


def test_query_strategy_with_another_marker(adapter, blobs):
    X, y_true = blobs
    y = np.where(np.isnan(start(y_true)), -7, start(y_true)).astype(int)
    qs = adapter.GraphQueryStrategy(missing_label=-7, random_state=0)
    clf = adapter.skactiveml_classifier(missing_label=-7)
    idx = qs.query(X, y, clf, batch_size=3)
    assert (y[idx] == -7).all()
