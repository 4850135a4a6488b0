"""modAL query strategies of ``skmcal.query``: selection, options, errors, and modAL itself.

Greedy batches are compared with a brute-force sequence of exact refits (gr,
mgr: dense normal equations, ``tests/_oracle.py``; docs/math.rst, "Batches"),
and with real estimator refits.
The modAL loops use the real ``modAL.models.ActiveLearner``.
"""

from __future__ import annotations

import functools
import inspect
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn.utils
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skmcal
from skmcal import (
    GRAPH_CACHE,
    NodeSet,
    SpectralGraphClassifier,
    acquisition,
    clear_graph_cache,
    query,
)
from skmcal.classifier import AUTO_KERNELS
from skmcal.losses import LOSSES
from skmcal.query import model_change, random_sampling, sopt, uncertainty, vopt

modal_models = pytest.importorskip("modAL.models")
import modAL.models.learners as modal_learners  # noqa: E402
from modAL.models import ActiveLearner  # noqa: E402

from _oracle import GaussianRefits, blobs  # noqa: E402

skmcal.patch_modal()  # modAL 0.4.2.1's teach() on scikit-learn >= 1.8

N_EIGS = 8
STRATEGIES = {
    "model_change": model_change,
    "vopt": vopt,
    "sopt": sopt,
    "uncertainty": uncertainty,
    "random_sampling": random_sampling,
}


# ---------------------------------------------------------------- tiny pools


def _blobs(n_classes, seed=0):
    return blobs(
        n_classes,
        28 if n_classes == 2 else 19,
        centers=[[0.0, 0.0], [3.0, 0.0], [1.5, 2.6]],
        labels=[4, 8, 11],
        n_labeled=3,
        seed=seed,
    )


@functools.cache
def _pool(loss, tau=0.2, gamma=0.4):
    """A classifier on the node set X, fitted on the labeled rows only."""
    X, y_true, labeled = _blobs(2 if loss in ("gr", "logistic", "probit") else 3)
    nodes = NodeSet(X)
    clf = SpectralGraphClassifier(loss, nodes=nodes, n_eigs=N_EIGS, tau=tau, gamma=gamma)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.fit(X[labeled], y_true[labeled])
    return clf, X, y_true, labeled


# ------------------------------------------------- brute force for gr and mgr


def _targets(clf, y):
    if clf.loss == "gr":
        return list(np.where(y == clf.classes_[1], 1.0, -1.0))
    return list((y[:, None] == clf.classes_[None, :]).astype(float))


def _unlabeled(X, labeled):
    return np.setdiff1d(np.arange(X.shape[0]), labeled)


# ================================================================ batches
@pytest.mark.parametrize("kind", ["model_change", "vopt", "sopt"])
@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_greedy_batch_is_sequence_of_exact_refits(loss, kind):
    clf, X, y, labeled = _pool(loss)
    brute = GaussianRefits(clf)
    expected_idx, expected_scores = brute.greedy(
        kind, labeled, _targets(clf, y[labeled]), _unlabeled(X, labeled), 4
    )
    idx, scores = STRATEGIES[kind](clf, X, n_instances=4, batch="greedy", random_state=0)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-8)


@pytest.mark.parametrize("kind", ["model_change", "vopt", "sopt"])
@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_topk_batch_is_best_brute_force_scores(loss, kind):
    clf, X, y, labeled = _pool(loss)
    brute = GaussianRefits(clf)
    cands = _unlabeled(X, labeled)
    values = np.array([brute.score(kind, labeled, _targets(clf, y[labeled]), k) for k in cands])
    order = np.argsort(-values)[:5]
    idx, scores = STRATEGIES[kind](clf, X, n_instances=5, batch="topk", random_state=0)
    np.testing.assert_array_equal(idx, cands[order])
    np.testing.assert_allclose(scores, values[order], rtol=1e-8)
    assert np.all(np.diff(scores) <= 0)
    # greedy and top-k agree on the first pick
    first, first_score = STRATEGIES[kind](clf, X, n_instances=3, batch="greedy")
    assert first[0] == idx[0]
    np.testing.assert_allclose(first_score[0], scores[0], rtol=1e-12)


def test_greedy_gr_equals_estimator_refits_with_pseudo_labels():
    """Query one, refit the estimator with its pseudo-label, query again: the greedy batch."""
    clf, X, y, labeled = _pool("gr")
    # a greedy batch adds its pseudo-labels at weight 1, as a refit with unit weights
    # does (the first fit's balanced class weights are 1: as many labels per class)
    assert np.all(clf.class_weight_ == 1.0)
    idx, scores = model_change(clf, X, n_instances=4, batch="greedy")
    current = clf
    rows, labels = list(labeled), list(y[labeled])
    for step in range(4):
        (k,), (score,) = model_change(current, X, n_instances=1)
        assert k == idx[step]
        np.testing.assert_allclose(score, scores[step], rtol=1e-8)
        u = current.decision_function(X[k : k + 1])[0]
        rows.append(k)
        labels.append(current.classes_[int(u >= 0)])
        current = clone(clf).set_params(class_weight=None).fit(X[rows], np.array(labels))


def test_greedy_batches_for_newton_losses_are_distinct_unlabeled_rows():
    for loss in ("logistic", "probit", "ce"):
        clf, X, y, labeled = _pool(loss)
        for strategy in (model_change, vopt, sopt, uncertainty):
            idx, scores = strategy(clf, X, n_instances=6, batch="greedy", random_state=0)
            assert idx.shape == scores.shape == (6,)
            assert np.unique(idx).size == 6
            assert not np.isin(idx, labeled).any()
            assert np.all(np.isfinite(scores))


# ================================================================ LocalMax
def _brute_local_maxima(values, nodes, W):
    """Positions ``i`` with ``values[i] >= values[j]`` for each neighbour ``j`` in ``nodes``."""
    return [
        i for i in range(len(nodes))
        if all(values[i] >= values[j] for j in range(len(nodes)) if W[nodes[i], nodes[j]] > 0)
    ]


def _brute_localmax_batch(values, nodes, W, n):
    """The best local maxima, then non-neighbours of the chosen ones, then the rest: by loops."""
    order = sorted(range(len(nodes)), key=lambda i: -values[i])
    maxima = set(_brute_local_maxima(values, nodes, W))
    picks = [i for i in order if i in maxima][:n]
    for i in order:
        if len(picks) < n and i not in picks and all(W[nodes[i], nodes[j]] == 0 for j in picks):
            picks.append(i)
    picks += [i for i in order if i not in picks][: n - len(picks)]
    return picks


@pytest.mark.parametrize("kind", ["model_change", "vopt", "sopt", "uncertainty"])
@pytest.mark.parametrize("loss", ["gr", "mgr", "ce"])
def test_localmax_batch_is_best_brute_force_local_maxima(loss, kind):
    clf, X, y, labeled = _pool(loss)
    W = clf.graph_.weights.toarray()
    cands = _unlabeled(X, labeled)
    idx, scores = STRATEGIES[kind](clf, X, n_instances=4, batch="localmax", random_state=0)
    view = clf.posterior_
    if kind == "uncertainty":
        values = acquisition.uncertainty(view, cands, "margin")
    else:
        values = getattr(acquisition, kind)(view, cands)
    expected = _brute_localmax_batch(values, cands, W, 4)
    np.testing.assert_array_equal(idx, cands[expected])
    np.testing.assert_allclose(scores, values[expected], rtol=1e-10)
    n_maxima = len(_brute_local_maxima(values, cands, W))
    assert n_maxima >= 1
    idx = idx[:n_maxima]
    # Every pick beats or ties each of its neighbours among the candidates.
    for k in idx:
        neighbours = np.flatnonzero(W[k, cands] > 0)
        assert np.all(values[np.searchsorted(cands, k)] >= values[neighbours])
    # The best candidate is a local maximum: top-k and LocalMax share the first pick.
    assert STRATEGIES[kind](clf, X, n_instances=1, batch="localmax")[0][0] == idx[0]


def test_localmax_batch_of_local_maxima_only_on_a_larger_pool():
    X, y = make_blobs(300, centers=4, cluster_std=1.5, random_state=0)
    labeled = np.array([np.flatnonzero(y == c)[0] for c in range(4)])
    clf = SpectralGraphClassifier("mgr", nodes=NodeSet(X), n_eigs=20).fit(X[labeled], y[labeled])
    W = clf.graph_.weights.toarray()
    cands = _unlabeled(X, labeled)
    values = acquisition.model_change(clf.posterior_, cands)
    maxima = _brute_local_maxima(values, cands, W)
    assert len(maxima) >= 6
    idx, scores = model_change(clf, X, n_instances=6, batch="localmax", random_state=0)
    expected = sorted(maxima, key=lambda i: -values[i])[:6]
    np.testing.assert_array_equal(idx, cands[expected])
    np.testing.assert_allclose(scores, values[expected], rtol=1e-10)
    # No two picks are neighbours (no ties here); top-k picks neighbouring rows.
    assert not (W[np.ix_(idx, idx)] > 0).any()
    top, _ = model_change(clf, X, n_instances=6, random_state=0)
    assert (W[np.ix_(top, top)] > 0).any()


def test_localmax_on_a_candidate_subset_compares_neighbours_among_candidates_only():
    clf, X, y, labeled = _pool("mgr")
    W = clf.graph_.weights.toarray()
    cands = _unlabeled(X, labeled)[::3]
    idx, scores = model_change(clf, X, n_instances=3, candidates=cands, batch="localmax")
    values = acquisition.model_change(clf.posterior_, cands)
    expected = _brute_localmax_batch(values, cands, W, 3)
    np.testing.assert_array_equal(idx, cands[expected])


def test_localmax_fills_with_non_neighbours_then_the_rest():
    # A path 0-1-2-3-4-5 and a node 6 joined to 5 by an explicit zero (no edge):
    # scores rise along the path, so the local maxima are 5 and 6; then 3 (4
    # neighbours 5), then 1, then 4.
    i = np.array([0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6])
    j = np.array([1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5])
    W = sp.csr_matrix((np.r_[np.ones(10), 0.0, 0.0], (i, j)), shape=(7, 7))
    assert W.nnz == 12
    values = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.5])
    for n in range(1, 8):
        got = query.local_max_batch(values, W, n)
        expected = _brute_localmax_batch(values, np.arange(7), W.toarray(), n)
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(query.local_max_batch(values, W, 5), [5, 6, 3, 1, 4])
    # Equal neighbours are both local maxima.
    flat = np.ones(7)
    np.testing.assert_array_equal(query.local_max_batch(flat, W, 7), np.arange(7))


@pytest.mark.parametrize("seed", range(5))
def test_local_max_batch_matches_brute_force_on_random_graphs(seed):
    rng = np.random.RandomState(seed)
    n = 30
    A = sp.random(n, n, density=0.15, random_state=rng, format="csr")
    W = ((A + A.T) * 0.5).toarray()
    values = rng.randint(0, 6, size=n).astype(float)  # many ties
    for size in (1, 4, 12, n):
        got = query.local_max_batch(values, sp.csr_matrix(W), size)
        assert got.size == size == np.unique(got).size
        np.testing.assert_array_equal(got, _brute_localmax_batch(values, np.arange(n), W, size))


def test_localmax_batches_of_the_baselines():
    from skmcal.baselines import vopt_hf

    clf, X, y, labeled = _pool("gr")
    W = clf.graph_.weights.toarray()
    cands = _unlabeled(X, labeled)
    _, all_scores = vopt_hf(clf, X, n_instances=cands.size, candidates=cands)
    top_rows, _ = vopt_hf(clf, X, n_instances=cands.size, candidates=cands)
    values = np.empty(cands.size)
    values[np.searchsorted(cands, top_rows)] = all_scores
    idx, scores = vopt_hf(clf, X, n_instances=4, batch="localmax")
    expected = _brute_localmax_batch(values, cands, W, 4)
    np.testing.assert_array_equal(idx, cands[expected])
    np.testing.assert_allclose(scores, values[expected], rtol=1e-10)


# ====================================================== candidates and pools
@pytest.mark.parametrize("name", list(STRATEGIES))
@pytest.mark.parametrize("loss", ["gr", "probit", "ce"])
def test_strategies_never_return_labeled_nodes(loss, name):
    clf, X, y, labeled = _pool(loss)
    strategy = STRATEGIES[name]
    unlabeled = _unlabeled(X, labeled)
    idx, scores = strategy(clf, X, n_instances=unlabeled.size, batch="topk", random_state=0)
    np.testing.assert_array_equal(np.sort(idx), unlabeled)
    assert scores.shape == idx.shape and idx.dtype.kind == "i"
    if name != "random_sampling":
        assert np.all(np.diff(scores) <= 0)
    # labeled rows among explicit candidates are dropped
    cand = np.r_[labeled[:2], unlabeled[:3]]
    idx, _ = strategy(clf, X, n_instances=3, candidates=cand, random_state=0)
    np.testing.assert_array_equal(np.sort(idx), unlabeled[:3])


def test_pool_subset_indices_refer_to_pool_rows():
    clf, X, y, labeled = _pool("gr")
    brute = GaussianRefits(clf)
    rng = np.random.RandomState(3)
    sub = rng.permutation(X.shape[0])[:25]
    sub = np.r_[sub, labeled[:2]]  # a few labeled rows in the pool too
    X_sub = X[sub]
    idx, scores = model_change(clf, X_sub, n_instances=4, batch="topk")
    targets = _targets(clf, y[labeled])
    rows = np.flatnonzero(~np.isin(sub, labeled))
    values = np.array([brute.score("model_change", labeled, targets, sub[r]) for r in rows])
    order = np.argsort(-values)[:4]
    np.testing.assert_array_equal(idx, rows[order])
    np.testing.assert_allclose(scores, values[order], rtol=1e-8)
    assert not np.isin(sub[idx], labeled).any()
    # greedy on the subset stays inside it too
    gidx, _ = model_change(clf, X_sub, n_instances=4, batch="greedy")
    assert gidx.max() < X_sub.shape[0] and not np.isin(sub[gidx], labeled).any()
    assert gidx[0] == idx[0]


@pytest.mark.parametrize("loss", ["gr", "ce"])
def test_nodeset_pool_equals_array_pool(loss):
    clf, X, y, labeled = _pool(loss)
    for strategy in (model_change, vopt, uncertainty):
        a = strategy(clf, X, n_instances=5, random_state=1)
        b = strategy(clf, clf.node_set_, n_instances=5, random_state=1)
        c = strategy(clf, NodeSet(X), n_instances=5, random_state=1)  # same content
        for other in (b, c):
            np.testing.assert_array_equal(a[0], other[0])
            np.testing.assert_allclose(a[1], other[1], rtol=1e-12)


def test_pandas_and_sparse_pools_equal_array_pool():
    clf, X, y, labeled = _pool("probit")
    expected = model_change(clf, X, n_instances=5)
    for pool in (pd.DataFrame(X, columns=["a", "b"]), sp.csr_matrix(X)):
        idx, scores = model_change(clf, pool, n_instances=5)
        np.testing.assert_array_equal(idx, expected[0])
        np.testing.assert_allclose(scores, expected[1], rtol=1e-12)


def test_other_nodeset_pool_is_rejected():
    clf, X, y, labeled = _pool("gr")
    with pytest.raises(ValueError, match="NodeSet other than"):
        model_change(clf, NodeSet(X + 1.0))


def test_candidates_none_float_int_array():
    clf, X, y, labeled = _pool("gr")
    mc = functools.partial(model_change, batch="topk")
    unlabeled = _unlabeled(X, labeled)
    n_unl = unlabeled.size
    all_idx, all_scores = mc(clf, X, n_instances=n_unl)
    score_of = dict(zip(all_idx.tolist(), all_scores, strict=True))

    # None: every unlabeled row
    np.testing.assert_array_equal(np.sort(mc(clf, X, n_instances=n_unl,
                                                       candidates=None)[0]), unlabeled)
    # float: a random fraction, ceil(f * n_unlabeled) rows, scored exactly
    size = int(np.ceil(0.2 * n_unl))
    idx, scores = mc(clf, X, n_instances=size, candidates=0.2, random_state=5)
    assert np.unique(idx).size == size and not np.isin(idx, labeled).any()
    np.testing.assert_allclose(scores, [score_of[i] for i in idx], rtol=1e-12)
    assert np.all(np.diff(scores) <= 0)
    with pytest.raises(ValueError, match="exceeds"):
        mc(clf, X, n_instances=n_unl + 1, candidates=0.2)
    # with the same seed, the best of the subset is the first of the full ranking of it
    best, _ = mc(clf, X, n_instances=1, candidates=0.2, random_state=5)
    assert best[0] == idx[0]
    # float 1.0: everything
    np.testing.assert_array_equal(
        np.sort(mc(clf, X, n_instances=n_unl, candidates=1.0)[0]), unlabeled)
    # int: that many at random; more than available is clipped
    idx, _ = mc(clf, X, n_instances=7, candidates=7, random_state=2)
    assert np.unique(idx).size == 7 and not np.isin(idx, labeled).any()
    with pytest.raises(ValueError, match="exceeds"):
        mc(clf, X, n_instances=8, candidates=np.arange(7),
                     random_state=2)
    idx, _ = mc(clf, X, n_instances=n_unl, candidates=10**6)
    np.testing.assert_array_equal(np.sort(idx), unlabeled)
    idx, _ = mc(clf, X, n_instances=2, candidates=np.int64(3), random_state=0)
    assert idx.size == 2
    # array: exactly these rows (negative indices count from the end; repeats merge)
    rows = np.array([unlabeled[0], unlabeled[4], unlabeled[4], -1])
    last = X.shape[0] - 1
    expected_rows = {unlabeled[0], unlabeled[4]} | ({last} if last in unlabeled else set())
    idx, scores = mc(clf, X, n_instances=len(expected_rows), candidates=rows)
    assert set(idx.tolist()) == expected_rows
    np.testing.assert_allclose(scores, [score_of[i] for i in idx], rtol=1e-12)
    idx, _ = mc(clf, X, n_instances=1, candidates=[unlabeled[9]])
    assert idx.tolist() == [unlabeled[9]]


@pytest.mark.parametrize(
    "bad",
    [0, -3, 0.0, 1.5, -0.1, True, "all", np.array([0.5, 1.0]), np.array([[1, 2]]),
     np.array([True, False]), np.array([0, 10**6]), np.array([-10**6])],
    ids=lambda v: repr(v)[:20],
)
def test_bad_candidates_raise_clear_errors(bad):
    clf, X, y, labeled = _pool("gr")
    with pytest.raises(ValueError, match="candidates"):
        model_change(clf, X, candidates=bad)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_random_state_determinism(name):
    clf, X, y, labeled = _pool("probit")
    strategy = STRATEGIES[name]
    runs = [strategy(clf, X, n_instances=4, candidates=0.3, random_state=seed)
            for seed in (0, 0, 1, 2, 3, 4)]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert any(not np.array_equal(runs[0][0], r[0]) for r in runs[2:])
    rs = np.random.RandomState(7)
    a = strategy(clf, X, n_instances=4, candidates=0.3, random_state=rs)
    b = strategy(clf, X, n_instances=4, candidates=0.3, random_state=np.random.RandomState(7))
    np.testing.assert_array_equal(a[0], b[0])


def test_random_sampling_is_uniform_over_unlabeled():
    clf, X, y, labeled = _pool("gr")
    unlabeled = _unlabeled(X, labeled)
    counts = np.zeros(X.shape[0])
    for seed in range(300):
        idx, _ = random_sampling(clf, X, n_instances=3, random_state=seed)
        counts[idx] += 1
    assert counts[labeled].sum() == 0
    assert np.all(counts[unlabeled] > 0)
    assert counts[unlabeled].max() < 4 * counts[unlabeled].mean()


def test_uncertainty_measures_rank_by_the_right_quantity():
    clf, X, y, labeled = _pool("ce")
    unlabeled = _unlabeled(X, labeled)
    proba = clf.predict_proba(X[unlabeled])
    D = np.sort(clf.decision_function(X[unlabeled]), axis=1)
    expected = {
        "margin": -(D[:, -1] - D[:, -2]),
        "entropy": -(proba * np.log(proba)).sum(axis=1),
        "least_confident": 1 - proba.max(axis=1),
    }
    for measure, values in expected.items():
        idx, scores = uncertainty(clf, X, n_instances=4, measure=measure, batch="topk")
        order = np.argsort(-values)[:4]
        np.testing.assert_array_equal(idx, unlabeled[order])
        np.testing.assert_allclose(scores, values[order], rtol=1e-10)


# =================================================================== errors
def test_rows_that_are_not_nodes_raise():
    clf, X, y, labeled = _pool("gr")
    X_bad = X.copy()
    X_bad[5] += 1e-3
    with pytest.raises(ValueError, match=r"not nodes of the classifier's graph \(first: row 5\)"):
        model_change(clf, X_bad)
    with pytest.raises(ValueError, match="features"):
        model_change(clf, X[:, :1])
    with pytest.raises(ValueError, match="2-D"):
        model_change(clf, X[0])


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_n_instances_errors(name):
    clf, X, y, labeled = _pool("gr")
    strategy = STRATEGIES[name]
    n_unl = X.shape[0] - labeled.size
    with pytest.raises(ValueError, match=f"n_instances={n_unl + 1} exceeds the {n_unl}"):
        strategy(clf, X, n_instances=n_unl + 1)
    with pytest.raises(ValueError, match="exceeds"):
        strategy(clf, X[labeled], n_instances=1)
    for candidates in (0.1, 5, None):  # an empty pool, however the candidates are drawn
        with pytest.raises(ValueError, match=r"X_pool is empty \(0 rows\)"):
            strategy(clf, X[:0], n_instances=1, candidates=candidates)
    for bad in (0, -1, 2.0, "3", None):
        with pytest.raises(ValueError, match="n_instances must be a positive int"):
            strategy(clf, X, n_instances=bad)


def test_unfitted_model_raises():
    X = _blobs(2)[0]
    for learner in (SpectralGraphClassifier("gr", nodes=NodeSet(X)),
                    ActiveLearner(estimator=SpectralGraphClassifier("gr"),
                                  query_strategy=model_change)):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            model_change(learner, X)


def test_bad_batch_and_measure_raise():
    clf, X, y, labeled = _pool("gr")
    with pytest.raises(ValueError, match="batch must be one of"):
        model_change(clf, X, n_instances=2, batch="sequential")
    with pytest.raises(ValueError, match="measure must be one of"):
        uncertainty(clf, X, measure="variance")
    with pytest.raises(ValueError, match="batch must be one of"):
        random_sampling(clf, X, batch="sequential")


def test_non_spectral_learner_raises_type_error():
    X, y, labeled = _blobs(2)
    logreg = LogisticRegression().fit(X, y)
    pipe = make_pipeline(StandardScaler(), SpectralGraphClassifier("gr", n_eigs=N_EIGS))
    pipe.fit(X, np.where(np.isin(np.arange(X.shape[0]), labeled), y, -1))
    for learner in (logreg, ActiveLearner(estimator=LogisticRegression(), X_training=X,
                                          y_training=y, query_strategy=model_change), pipe):
        with pytest.raises(TypeError, match="SpectralGraphClassifier"):
            model_change(learner, X)


# ============================================================ modAL itself
def _rings_of_blobs(n_classes, n_per_blob=80, seed=0):
    """2 n_classes blobs on a circle, class = blob % n_classes; one blob per class labeled."""
    rng = np.random.RandomState(seed)
    n_blobs = 2 * n_classes
    angles = 2 * np.pi * np.arange(n_blobs) / n_blobs
    centers = 5 * np.column_stack([np.cos(angles), np.sin(angles)])
    X = np.vstack([rng.randn(n_per_blob, 2) * 0.8 + c for c in centers])
    y = np.repeat(np.arange(n_blobs) % n_classes, n_per_blob) + 1
    labeled = np.concatenate([b * n_per_blob + np.arange(2) for b in range(n_classes)])
    return X, y, labeled


def _run_loop(loss, X, y, labeled, pool=None, rounds=50, strategy=model_change):
    pool = X if pool is None else pool
    learner = ActiveLearner(
        estimator=SpectralGraphClassifier(loss, nodes=NodeSet(X), n_eigs=20),
        query_strategy=strategy,
        X_training=X[labeled],
        y_training=y[labeled],
    )
    accuracy = [learner.score(X, y)]
    taught = set(labeled.tolist())
    for _ in range(rounds):
        idx, rows = learner.query(pool, n_instances=5)
        assert len(idx) == 5 and not (set(idx.tolist()) & taught)
        np.testing.assert_array_equal(np.asarray(rows), X[idx])
        taught |= set(idx.tolist())
        learner.teach(X[idx], y[idx])
        accuracy.append(learner.score(X, y))
    np.testing.assert_array_equal(np.sort(learner.estimator.labeled_nodes_), sorted(taught))
    return learner, np.array(accuracy)


@pytest.mark.parametrize("loss", ["gr", "logistic", "probit", "mgr", "ce"])
def test_modal_loop_end_to_end(loss):
    X, y, labeled = _rings_of_blobs(2 if loss in ("gr", "logistic", "probit") else 3)
    clear_graph_cache()
    builds = GRAPH_CACHE.builds
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # half the blobs, separate components of the graph, start without a label
        warnings.filterwarnings("ignore", "[0-9]+ of [0-9]+ nodes lie in", UserWarning)
        learner, accuracy = _run_loop(loss, X, y, labeled)
    # once per graph, not per fit: each kernel's, and with the summed model (gr, mgr)
    # the narrower Gaussian graph kernel="auto" weighs against the Gaussian one (where
    # the Gaussian kernel is chosen)
    narrow = int(LOSSES[loss].closed_form)
    assert len(AUTO_KERNELS) <= GRAPH_CACHE.builds - builds == len(GRAPH_CACHE)
    assert len(GRAPH_CACHE) <= len(AUTO_KERNELS) + narrow
    assert accuracy[0] < 0.9, accuracy[0]
    assert accuracy[-1] >= 0.97, accuracy
    assert accuracy[-1] > accuracy[0] + 0.1
    assert learner.X_training.shape[0] == labeled.size + 250


def test_importing_skmcal_patches_nothing():
    code = (
        "import sklearn.utils, skmcal, skmcal.query, skmcal.experiment, skmcal.baselines\n"
        "import modAL.models.learners as learners\n"
        "assert learners.check_X_y is sklearn.utils.check_X_y\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_modal_teach_needs_the_patch(monkeypatch):
    from skmcal.modal_compat import _check_X_y_compat, patch_modal

    X, y, labeled = _rings_of_blobs(2, n_per_blob=30)
    # scikit-learn itself no longer knows force_all_finite ...
    assert "force_all_finite" not in inspect.signature(sklearn.utils.check_X_y).parameters
    with pytest.raises(TypeError, match="force_all_finite"):
        sklearn.utils.check_X_y(X, y, force_all_finite=True)
    # ... so skmcal.patch_modal() (called above) patched modAL's name, and only modAL's
    assert skmcal.patch_modal is patch_modal
    assert modal_learners.check_X_y is _check_X_y_compat
    assert sklearn.utils.check_X_y is not _check_X_y_compat
    assert patch_modal() is False  # idempotent: nothing left to patch
    learner = ActiveLearner(
        estimator=SpectralGraphClassifier("gr", nodes=NodeSet(X), n_eigs=10),
        query_strategy=model_change, X_training=X[labeled], y_training=y[labeled],
    )
    idx, _ = learner.query(X, n_instances=2)
    learner.teach(X[idx], y[idx])
    assert learner.X_training.shape[0] == labeled.size + 2
    # without the patch modAL's teach() fails on this scikit-learn
    monkeypatch.setattr(modal_learners, "check_X_y", sklearn.utils.check_X_y)
    idx, _ = learner.query(X, n_instances=2)
    with pytest.raises(TypeError, match="force_all_finite"):
        learner.teach(X[idx], y[idx])
    # patching again restores it
    assert patch_modal() is True
    assert modal_learners.check_X_y is _check_X_y_compat
    learner.teach(X[idx], y[idx])
    assert learner.X_training.shape[0] == labeled.size + 4


def test_patched_check_keeps_the_finiteness_switch():
    from skmcal.modal_compat import _check_X_y_compat

    X = np.array([[0.0, np.nan], [1.0, 2.0]])
    y = np.array([0, 1])
    _check_X_y_compat(X, y, force_all_finite=False)
    with pytest.raises(ValueError, match="NaN"):
        _check_X_y_compat(X, y, force_all_finite=True)
    with pytest.raises(ValueError, match="NaN"):
        _check_X_y_compat(X, y)


def test_modal_query_with_nodeset_pool():
    X, y, labeled = _rings_of_blobs(2, n_per_blob=40)
    nodes = NodeSet(X)
    learner = ActiveLearner(
        estimator=SpectralGraphClassifier("probit", nodes=nodes, n_eigs=12),
        query_strategy=model_change, X_training=X[labeled], y_training=y[labeled],
    )
    expected, _ = learner.query(X, n_instances=5)
    for _ in range(5):
        idx, rows = learner.query(nodes, n_instances=5)
        np.testing.assert_array_equal(rows, X[idx])
        if expected is not None:
            np.testing.assert_array_equal(idx, expected)
            expected = None
        learner.teach(rows, y[idx])
    assert not np.isin(model_change(learner, nodes, n_instances=5)[0],
                       learner.estimator.labeled_nodes_).any()


def test_modal_loop_on_a_standardised_pool():
    X_raw, y, labeled = _rings_of_blobs(2)
    X_raw = X_raw * np.array([1.0, 1000.0]) + np.array([50.0, -3.0])
    X_pool = StandardScaler().fit_transform(X_raw)
    clear_graph_cache()
    builds = GRAPH_CACHE.builds
    learner, accuracy = _run_loop("probit", X_pool, y, labeled, rounds=30)
    assert GRAPH_CACHE.builds - builds == len(AUTO_KERNELS)
    assert accuracy[-1] >= 0.97 and accuracy[-1] > accuracy[0]
    # prediction on the preprocessed pool rows is transductive
    np.testing.assert_array_equal(learner.predict(X_pool), learner.estimator.transduction_)


def test_grid_search_on_the_labeled_nodes_of_a_pool():
    X, y, _ = _rings_of_blobs(2, n_per_blob=60)
    rng = np.random.RandomState(0)
    labeled = np.sort(rng.choice(X.shape[0], 48, replace=False))
    nodes = NodeSet(X)
    clear_graph_cache()
    builds = GRAPH_CACHE.builds
    search = GridSearchCV(
        SpectralGraphClassifier("probit", nodes=nodes, n_eigs=12),
        {"tau": [0.001, 0.1], "gamma": [0.1, 0.5]},
        cv=3,
    )
    search.fit(X[labeled], y[labeled])
    assert GRAPH_CACHE.builds - builds == len(AUTO_KERNELS)  # each kernel's graph once
    assert len(search.cv_results_["params"]) == 4
    assert search.best_score_ >= 0.9
    best = search.best_estimator_
    assert best.node_set_ is nodes
    np.testing.assert_array_equal(np.sort(best.labeled_nodes_), labeled)
    assert np.mean(best.transduction_ == y) >= 0.95
    idx, _ = model_change(best, X, n_instances=10)
    assert not np.isin(idx, labeled).any()
    idx, _ = vopt(best, nodes, n_instances=10, batch="greedy")
    assert not np.isin(idx, labeled).any() and np.unique(idx).size == 10


def test_query_module_exports():
    assert query.BATCH_MODES == ("topk", "greedy", "localmax")
    assert skmcal.NodeSet is NodeSet
    for strategy in STRATEGIES.values():
        params = inspect.signature(strategy).parameters
        assert list(params)[:3] == ["learner", "X_pool", "n_instances"]
        assert params["n_instances"].default == 1
