"""The paper's baselines of ``skmcal.baselines``: VOPT-HF, SOPT-HF, DB-RKHS.

Every score is checked against a brute-force computation on a tiny pool:
HF V-opt / Sigma-opt against the trace / sum of the covariance recomputed by
inverting the reduced precision matrix with the candidate removed; DB-RKHS
against the interpolants refitted explicitly with the candidate and each
label added (docs/math.rst, "The paper's baselines"). Then the contract:
labeled nodes never returned, greedy batches, determinism, errors, modAL.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from skmcal import NodeSet, SpectralGraphClassifier, patch_modal
from skmcal.baselines import (
    BASELINES,
    DENSE_HF_MAX_UNLABELED,
    HF_DELTA,
    RKHS_BANDWIDTH,
    db_rkhs,
    graph_laplacian,
    harmonic_transduction,
    rkhs_transduction,
    sopt_hf,
    vopt_hf,
)

from _oracle import blobs

HF_STRATEGIES = {"vopt": vopt_hf, "sopt": sopt_hf}


# ---------------------------------------------------------------- tiny pools


def _blobs(n_classes, seed=0):
    return blobs(
        n_classes,
        24 if n_classes == 2 else 16,
        centers=[[0.0, 0.0], [3.0, 0.0], [1.5, 2.6]],
        labels=[4, 8, 11],
        n_labeled=3,
        scale=0.8,
        seed=seed,
    )


@functools.cache
def _pool(n_classes=2):
    """``(clf, pool, X, y_true, labeled)``: a classifier fitted on the labeled rows."""
    X, y_true, labeled = _blobs(n_classes)
    pool = NodeSet(X)
    clf = SpectralGraphClassifier("gr" if n_classes == 2 else "mgr", nodes=pool, n_eigs=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.fit(X[labeled], y_true[labeled])
    return clf, pool, X, y_true, labeled


def _all_scores(strategy, clf, pool, **options):
    """Score of every unlabeled point (equal nodes are one, the first), by node index."""
    first = pool.first_equal
    n_unlabeled = np.setdiff1d(np.unique(first), first[clf.labeled_nodes_]).size
    rows, scores = strategy(clf, pool, n_unlabeled, **options)
    return dict(zip(rows.tolist(), scores, strict=True))


# ----------------------------------------------------------- brute force: HF
def _dense_laplacian(clf):
    W = clf.graph_.weights.toarray()
    np.fill_diagonal(W, 0.0)
    return np.diag(W.sum(axis=1)) - W


def _risk(precision, nodes, criterion):
    """Trace (vopt) or sum (sopt) of the covariance of ``nodes`` given all other nodes."""
    C = np.linalg.inv(precision[np.ix_(nodes, nodes)])
    return np.trace(C) if criterion == "vopt" else C.sum()


def _hf_brute_scores(clf, labeled, delta, criterion):
    n = clf.node_set_.n_nodes
    precision = _dense_laplacian(clf) + delta**2 * np.eye(n)
    unlabeled = np.setdiff1d(np.arange(n), labeled)
    base = _risk(precision, unlabeled, criterion)
    return {
        int(k): base - _risk(precision, unlabeled[unlabeled != k], criterion) for k in unlabeled
    }


def _harmonic_brute(clf, codes, delta):
    n, n_classes = clf.node_set_.n_nodes, clf.classes_.size
    labeled = clf.labeled_nodes_
    unlabeled = np.setdiff1d(np.arange(n), labeled)
    P = _dense_laplacian(clf) + delta**2 * np.eye(n)
    u = np.zeros((n, n_classes))
    u[labeled, codes] = 1.0
    # Minimise 1/2 u' P u over u_U with u_L fixed: P_UU u_U = -P_UL u_L.
    u[unlabeled] = np.linalg.solve(
        P[np.ix_(unlabeled, unlabeled)], -P[np.ix_(unlabeled, labeled)] @ u[labeled]
    )
    return u


# --------------------------------------------------------- brute force: RKHS
def _kernel(A, B, h, kernel):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-np.sqrt(d2) / h) if kernel == "laplace" else np.exp(-d2 / (2 * h**2))


def _interpolant(X, nodes, values, h, kernel):
    """Minimum-norm interpolant at every node, and its squared RKHS norm."""
    coef = np.linalg.solve(_kernel(X[nodes], X[nodes], h, kernel), values)
    return _kernel(X, X[nodes], h, kernel) @ coef, float(values @ coef)


def _rkhs_brute_scores(X, labeled, signs, h, kernel, norm):
    f, _ = _interpolant(X, labeled, signs, h, kernel)
    scores = {}
    for k in np.setdiff1d(np.arange(X.shape[0]), labeled):
        values = []
        for t in (-1.0, 1.0):
            fk, squared_norm = _interpolant(
                X, np.append(labeled, k), np.append(signs, t), h, kernel
            )
            values.append(np.linalg.norm(fk - f) if norm == "data" else np.sqrt(squared_norm))
        scores[int(k)] = min(values)
    return scores


def _signs(clf, labels):
    return np.where(labels == clf.classes_[1], 1.0, -1.0)


# ------------------------------------------------------------------ HF scores
@pytest.mark.parametrize("criterion", ["vopt", "sopt"])
@pytest.mark.parametrize("solver", ["dense", "sparse", "auto"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_hf_scores_are_drops_of_the_conditioned_covariance(criterion, solver, n_classes):
    clf, pool, *_ = _pool(n_classes)
    got = _all_scores(HF_STRATEGIES[criterion], clf, pool, solver=solver)
    expected = _hf_brute_scores(clf, clf.labeled_nodes_, HF_DELTA, criterion)
    assert got.keys() == expected.keys()
    for k, value in expected.items():
        assert got[k] == pytest.approx(value, rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("criterion", ["vopt", "sopt"])
def test_hf_precision_shift_is_delta_squared(criterion):
    clf, pool, *_ = _pool()
    delta = 0.7
    got = _all_scores(HF_STRATEGIES[criterion], clf, pool, delta=delta)
    expected = _hf_brute_scores(clf, clf.labeled_nodes_, delta, criterion)
    np.testing.assert_allclose(
        [got[k] for k in expected], list(expected.values()), rtol=1e-9, atol=1e-14
    )


def test_graph_laplacian_is_d_minus_w_without_self_loops():
    W = sp.csr_matrix(np.array([[2.0, 1.0, 0.0], [1.0, 0.0, 3.0], [0.0, 3.0, 0.0]]))
    L = graph_laplacian(W).toarray()
    np.testing.assert_array_equal(L, [[1.0, -1.0, 0.0], [-1.0, 4.0, -3.0], [0.0, -3.0, 3.0]])


def test_auto_solver_threshold_is_a_few_hundred_nodes():
    assert 50 < DENSE_HF_MAX_UNLABELED < 5000


@pytest.mark.parametrize("n_classes", [2, 3])
def test_harmonic_transduction_is_the_harmonic_function(n_classes):
    clf, _, _, y_true, labeled = _pool(n_classes)
    labels = y_true[labeled]
    codes = np.searchsorted(clf.classes_, labels)
    u = _harmonic_brute(clf, codes, HF_DELTA)
    # Maximum principle: each class indicator stays within [0, 1].
    assert u.min() >= -1e-12 and u.max() <= 1 + 1e-12
    got = harmonic_transduction(clf, labels)
    assert got.shape == (clf.node_set_.n_nodes,)
    np.testing.assert_array_equal(got, clf.classes_[np.argmax(u, axis=1)])
    np.testing.assert_array_equal(got[labeled], labels)
    assert np.mean(got == y_true) > 0.8


# ---------------------------------------------------------------- DB-RKHS
@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
@pytest.mark.parametrize("norm", ["data", "rkhs"])
@pytest.mark.parametrize("h", [RKHS_BANDWIDTH, 1.0])
def test_db_rkhs_matches_explicit_interpolants(kernel, norm, h):
    clf, pool, X, y_true, labeled = _pool()
    labels = y_true[labeled]
    got = _all_scores(db_rkhs, clf, pool, labels=labels, h=h, kernel=kernel, norm=norm)
    expected = _rkhs_brute_scores(X, labeled, _signs(clf, labels), h, kernel, norm)
    assert got.keys() == expected.keys()
    np.testing.assert_allclose(
        [got[k] for k in expected], list(expected.values()), rtol=1e-6, atol=1e-9
    )


def test_db_rkhs_sparse_node_data_matches_dense():
    clf, pool, X, y_true, labeled = _pool()
    sparse_pool = NodeSet(sp.csr_matrix(X))
    sparse_clf = SpectralGraphClassifier("gr", nodes=sparse_pool, n_eigs=8)
    sparse_clf.fit(sp.csr_matrix(X[labeled]), y_true[labeled])
    labels = y_true[labeled]
    dense = _all_scores(db_rkhs, clf, pool, labels=labels, h=1.0)
    sparse = _all_scores(db_rkhs, sparse_clf, sparse_pool, labels=labels, h=1.0)
    np.testing.assert_allclose([sparse[k] for k in dense], list(dense.values()), rtol=1e-6)


def test_db_rkhs_never_scores_a_duplicate_of_a_labeled_point():
    X, y_true, labeled = _blobs(2)
    X = np.vstack([X, X[labeled[0]]])  # an unlabeled copy of a labeled point
    y_true = np.append(y_true, y_true[labeled[0]])
    pool = NodeSet(X)
    clf = SpectralGraphClassifier("gr", nodes=pool, n_eigs=8).fit(X[labeled], y_true[labeled])
    copy = X.shape[0] - 1
    assert copy not in clf.labeled_nodes_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for norm in ("data", "rkhs"):
            scores = _all_scores(db_rkhs, clf, pool, labels=y_true[labeled], h=1.0, norm=norm)
            assert np.isfinite(list(scores.values())).all()
            # equal rows are one point: the copy is labeled with it, never a candidate
            assert copy not in scores and len(scores) == X.shape[0] - 1 - labeled.size


def test_rkhs_transduction_is_the_sign_of_the_interpolant():
    clf, _, X, y_true, labeled = _pool()
    labels = y_true[labeled]
    for kernel, h in (("laplace", RKHS_BANDWIDTH), ("gaussian", 1.0)):
        f, _ = _interpolant(X, labeled, _signs(clf, labels), h, kernel)
        got = rkhs_transduction(clf, labels, h=h, kernel=kernel)
        expected = clf.classes_[(f > 0).astype(int)]
        expected[labeled] = labels
        np.testing.assert_array_equal(got, expected)
    assert np.mean(rkhs_transduction(clf, labels, h=1.0) == y_true) > 0.8


# ----------------------------------------------------- selection and batches
def _strategies(labels):
    return {
        "vopt_hf": vopt_hf,
        "sopt_hf": sopt_hf,
        "db_rkhs": functools.partial(db_rkhs, labels=labels, h=1.0),
    }


@pytest.mark.parametrize("name", ["vopt_hf", "sopt_hf", "db_rkhs"])
def test_never_returns_labeled_rows(name):
    clf, pool, X, y_true, labeled = _pool()
    strategy = _strategies(y_true[labeled])[name]
    rows, scores = strategy(clf, pool, 5, candidates=np.r_[labeled, 0:20])
    assert not np.isin(rows, labeled).any()
    assert np.all(np.diff(scores) <= 0)
    # A subset of the rows as X_pool: indices into it, labeled rows excluded.
    others = np.setdiff1d(np.arange(30, 40), labeled)
    subset = np.r_[labeled[:2], others]
    rows, _ = strategy(clf, X[subset], others.size)
    assert sorted(subset[rows].tolist()) == others.tolist()
    # X_pool as the array of every node gives what the NodeSet gives.
    np.testing.assert_array_equal(strategy(clf, X, 3)[0], strategy(clf, pool, 3)[0])


@pytest.mark.parametrize("name", ["vopt_hf", "sopt_hf", "db_rkhs"])
def test_topk_takes_the_best_candidates(name):
    clf, pool, _, y_true, labeled = _pool()
    strategy = _strategies(y_true[labeled])[name]
    everything = dict(zip(*strategy(clf, pool, pool.n_nodes - labeled.size), strict=True))
    rows, scores = strategy(clf, pool, 4)
    assert sorted(everything.values(), reverse=True)[:4] == pytest.approx(scores)
    assert [everything[r] for r in rows] == pytest.approx(scores)


@pytest.mark.parametrize("name", ["vopt_hf", "sopt_hf", "db_rkhs"])
def test_same_random_state_same_choice(name):
    clf, pool, _, y_true, labeled = _pool()
    strategy = _strategies(y_true[labeled])[name]
    for batch in ("topk", "greedy"):
        first = strategy(clf, pool, 3, candidates=0.5, batch=batch, random_state=7)
        second = strategy(clf, pool, 3, candidates=0.5, batch=batch, random_state=7)
        np.testing.assert_array_equal(first[0], second[0])
        np.testing.assert_array_equal(first[1], second[1])


@pytest.mark.parametrize("criterion", ["vopt", "sopt"])
def test_hf_greedy_batch_conditions_on_each_pick(criterion):
    clf, pool, *_ = _pool()
    rows, scores = HF_STRATEGIES[criterion](clf, pool, 3, batch="greedy")
    labeled = clf.labeled_nodes_
    for row, score in zip(rows, scores, strict=True):
        expected = _hf_brute_scores(clf, labeled, HF_DELTA, criterion)
        best = max(expected, key=expected.get)
        assert row == best
        assert score == pytest.approx(expected[best], rel=1e-8)
        labeled = np.append(labeled, row)


def test_db_rkhs_greedy_batch_adds_the_nearest_label():
    clf, pool, X, y_true, labeled = _pool()
    labels = y_true[labeled]
    rows, scores = db_rkhs(clf, pool, 3, labels=labels, h=1.0, batch="greedy")
    nodes, signs = labeled.copy(), _signs(clf, labels)
    for row, score in zip(rows, scores, strict=True):
        expected = _rkhs_brute_scores(X, nodes, signs, 1.0, "laplace", "data")
        best = max(expected, key=expected.get)
        assert row == best
        assert score == pytest.approx(expected[best], rel=1e-6)
        f, _ = _interpolant(X, nodes, signs, 1.0, "laplace")
        nodes, signs = np.append(nodes, row), np.append(signs, 1.0 if f[row] >= 0 else -1.0)


# ------------------------------------------------------------------ registry
def test_registry_runs_each_baseline_and_its_model():
    clf, pool, _, y_true, labeled = _pool()
    labels = y_true[labeled]
    assert set(BASELINES) == {"vopt-hf", "sopt-hf", "db-rkhs"}
    for baseline in BASELINES.values():
        extra = {"labels": labels} if baseline.needs_labels else {}
        rows, _ = baseline.strategy(clf, pool, 2, candidates=0.5, random_state=0, **extra)
        assert rows.shape == (2,)
        predicted = baseline.transduction(clf, labels)
        assert predicted.shape == (pool.n_nodes,)
        assert set(np.unique(predicted)) <= set(clf.classes_)
    assert BASELINES["db-rkhs"].binary_only and not BASELINES["vopt-hf"].binary_only


# -------------------------------------------------------------------- errors
def test_db_rkhs_is_binary_only():
    clf, pool, _, y_true, labeled = _pool(3)
    with pytest.raises(ValueError, match="binary"):
        db_rkhs(clf, pool, labels=y_true[labeled])
    with pytest.raises(ValueError, match="binary"):
        rkhs_transduction(clf, y_true[labeled])


def test_labels_are_required_and_checked():
    clf, pool, _, y_true, labeled = _pool()
    labels = y_true[labeled]
    with pytest.raises(ValueError, match="needs the labels"):
        db_rkhs(clf, pool)
    with pytest.raises(ValueError, match="needs the labels"):
        harmonic_transduction(clf)
    with pytest.raises(ValueError, match="one label per entry"):
        db_rkhs(clf, pool, labels=labels[:-1])
    with pytest.raises(ValueError, match="not one of the classifier's classes"):
        db_rkhs(clf, pool, labels=np.where(labels == labels[0], 99, labels))
    with pytest.raises(ValueError, match="1-D"):
        harmonic_transduction(clf, labels[:, None])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delta": 0.0}, "delta must be a finite float > 0"),
        ({"delta": -1.0}, "delta must be"),
        ({"delta": np.nan}, "delta must be"),
        ({"delta": True}, "delta must be"),
        ({"delta": "0.01"}, "delta must be"),
        ({"delta": 1e200}, r"delta must be a float whose square.* got 1e\+200"),
        ({"delta": 1e-200}, r"delta must be a float whose square.* got 1e-200"),
        ({"solver": "cholesky"}, "solver must be one of"),
        ({"batch": "best"}, "batch must be one of"),
        ({"n_instances": 0}, "n_instances must be a positive int"),
        ({"n_instances": 2.0}, "n_instances must be a positive int"),
        ({"n_instances": True}, "n_instances must be a positive int"),
        ({"n_instances": 10_000}, "exceeds"),
        ({"candidates": 1.5}, "fraction"),
    ],
)
@pytest.mark.parametrize("strategy", [vopt_hf, sopt_hf])
def test_hf_rejects_bad_options(strategy, options, message):
    clf, pool, *_ = _pool()
    options = dict(options)
    n_instances = options.pop("n_instances", 1)
    with pytest.raises(ValueError, match=message):
        strategy(clf, pool, n_instances, **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"h": 0.0}, "h must be a finite float > 0"),
        ({"h": np.inf}, "h must be"),
        ({"kernel": "rbf"}, "kernel must be one of"),
        ({"norm": "l1"}, "norm must be one of"),
        ({"batch": "best"}, "batch must be one of"),
        ({"n_instances": -1}, "n_instances must be a positive int"),
    ],
)
def test_db_rkhs_rejects_bad_options(options, message):
    clf, pool, _, y_true, labeled = _pool()
    options = dict(options)
    n_instances = options.pop("n_instances", 1)
    with pytest.raises(ValueError, match=message):
        db_rkhs(clf, pool, n_instances, labels=y_true[labeled], **options)


def test_transductions_reject_bad_options():
    clf, _, _, y_true, labeled = _pool()
    with pytest.raises(ValueError, match="delta must be"):
        harmonic_transduction(clf, y_true[labeled], delta=0)
    with pytest.raises(ValueError, match="kernel must be one of"):
        rkhs_transduction(clf, y_true[labeled], kernel="cosine")


def test_unfitted_or_foreign_learner():
    _, pool, X, y_true, _ = _pool()
    for strategy in (vopt_hf, sopt_hf):
        with pytest.raises(NotFittedError):
            strategy(SpectralGraphClassifier(nodes=pool), pool)
        with pytest.raises(TypeError, match="SpectralGraphClassifier"):
            strategy(object(), pool)
    with pytest.raises(NotFittedError):
        db_rkhs(SpectralGraphClassifier(nodes=pool), pool, labels=y_true[:2])


def test_singular_labeled_kernel_is_a_clear_error():
    X, y_true, labeled = _blobs(2)
    X = np.vstack([X, X[labeled[0]]])
    y_true = np.append(y_true, y_true[labeled[0]])
    both = np.append(labeled, X.shape[0] - 1)  # a point and its copy, both labeled
    pool = NodeSet(X)
    clf = SpectralGraphClassifier("gr", nodes=pool, n_eigs=8).fit(X[both], y_true[both])
    assert sorted(clf.labeled_nodes_) == sorted(both)
    with pytest.raises(ValueError, match="not positive definite"):
        db_rkhs(clf, pool, labels=y_true[clf.labeled_nodes_])


# --------------------------------------------------------------------- modAL
def _db_rkhs_learner():
    """``(learner, pool, X, y_true, labeled)``: a modAL learner of db_rkhs on ``_pool()``."""
    modal_models = pytest.importorskip("modAL.models")
    patch_modal()  # modAL 0.4.2.1's teach() on scikit-learn >= 1.8
    _, pool, X, y_true, labeled = _pool()
    learner = modal_models.ActiveLearner(
        estimator=SpectralGraphClassifier("gr", nodes=pool, n_eigs=8),
        query_strategy=db_rkhs,
        X_training=X[labeled],
        y_training=y_true[labeled],
    )
    return learner, pool, X, y_true, labeled


def test_modal_learner_supplies_the_labels():
    learner, pool, X, y_true, labeled = _db_rkhs_learner()
    for _ in range(2):
        rows, _ = learner.query(pool, n_instances=2, h=1.0, random_state=0)
        assert not np.isin(rows, learner.estimator.labeled_nodes_).any()
        learner.teach(X[rows], y_true[rows])
    assert learner.estimator.labeled_nodes_.size == labeled.size + 4
    predicted = harmonic_transduction(learner)
    assert predicted.shape == (pool.n_nodes,)
    rows, _ = vopt_hf(learner, pool, 2)
    assert not np.isin(rows, learner.estimator.labeled_nodes_).any()


def test_modal_rows_taught_again_count_once():
    """A row taught twice is one label to fit, and to the baselines that read the
    learner's y_training: the same as passing the labels of labeled_nodes_."""
    learner, pool, X, y_true, labeled = _db_rkhs_learner()
    rows, _ = learner.query(pool, n_instances=2, h=1.0, random_state=0)
    learner.teach(X[rows], y_true[rows])
    learner.teach(X[rows[::-1]], y_true[rows[::-1]])  # the same rows again
    clf = learner.estimator
    assert clf.labeled_nodes_.size == labeled.size + 2 < learner.y_training.size
    expected = y_true[clf.labeled_nodes_]  # the nodes are the pool's rows
    got, _ = learner.query(pool, n_instances=2, h=1.0, random_state=0)  # (rows, X rows)
    want, _ = db_rkhs(clf, pool, 2, h=1.0, random_state=0, labels=expected)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        harmonic_transduction(learner), harmonic_transduction(clf, expected)
    )


def test_a_bandwidth_far_below_the_data_scale_warns():
    """h=0.1 (the paper's, for data in the unit square) on data a thousand times larger:
    the labeled nodes reach no other node, and every score ties; said, not silent."""
    _, pool, X, y_true, labeled = _pool()
    for scale, warns in ((1.0, False), (1000.0, True)):
        nodes = NodeSet(X * scale)
        clf = SpectralGraphClassifier("gr", nodes=nodes, n_eigs=8).fit(
            X[labeled] * scale, y_true[labeled]
        )
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            db_rkhs(clf, nodes, 2, labels=y_true[labeled])
        said = [w for w in record if "laplace kernel between the labeled" in str(w.message)]
        assert bool(said) == warns
