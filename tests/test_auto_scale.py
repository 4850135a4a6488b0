"""``kernel="auto"`` in the summed model's phase: the Gaussian graph against a narrower one.

The choice rests on whether each label's leave-one-out mean under the summed
prior predicts its class; here those means come from dense conditional
Gaussians (one explicit solve per label left out) and the sign test from
counting by hand. A fit that takes a graph must equal the fit with that
graph's kernel and scale given explicitly.
"""

from __future__ import annotations

import numpy as np
import pytest

import skmcal.classifier as module
from skmcal import GRAPH_CACHE, NodeSet, SpectralGraphClassifier, clear_graph_cache
from skmcal.classifier import AUTO_NARROW_SCALE, significantly_better
from skmcal.evidence import sum_loo_means

from _oracle import blobs, dense_green, semi_supervised

N_EIGS = 10


def _dense_loo_means(K, Y, gamma):
    """Each row of ``Y`` predicted from the others: ``K_i,-i (K_-i,-i + gamma^2 I)^-1 Y_-i``."""
    n = K.shape[0]
    means = np.empty_like(Y)
    for i in range(n):
        rest = np.delete(np.arange(n), i)
        S = K[np.ix_(rest, rest)] + gamma**2 * np.eye(n - 1)
        means[i] = K[i, rest] @ np.linalg.solve(S, Y[rest])
    return means


@pytest.mark.parametrize("k", [1, 3])
def test_sum_loo_means_are_the_dense_conditional_means(k):
    rng = np.random.RandomState(0)
    A, B = rng.randn(7, 7), rng.randn(7, 4)
    Ks, Kf = A @ A.T / 7, B @ B.T / 4  # the second one singular
    Y = rng.randn(7, k)
    eps, gamma = 0.7, 0.4
    got = sum_loo_means(Ks, Kf, Y[:, 0] if k == 1 else Y, eps, gamma)
    assert got.shape == (7, k)
    expected = _dense_loo_means(Ks + eps * Kf, Y, gamma)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_sum_loo_means_reject_bad_inputs():
    K = np.eye(3)
    with pytest.raises(ValueError, match="gamma"):
        sum_loo_means(K, K, np.ones(3), 0.5, 0.0)
    with pytest.raises(ValueError):
        sum_loo_means(K, np.eye(4), np.ones(3), 0.5, 0.1)


def test_significantly_better_is_the_sign_test_margin():
    for b in range(8):
        for a in range(8):
            correct = np.r_[np.ones(b, bool), np.zeros(a, bool), [True, False]]
            baseline = np.r_[np.zeros(b, bool), np.ones(a, bool), [True, False]]
            expected = b > a and (b - a) ** 2 >= 4 * (a + b)  # z = 2
            assert significantly_better(correct, baseline) is expected, (b, a)
            assert significantly_better(correct, baseline, z=0.0) is (b > a)
    assert not significantly_better([True] * 3, [True] * 3)  # no disagreement
    with pytest.raises(ValueError, match="one length"):
        significantly_better([True, False], [True])
    with pytest.raises(ValueError, match="z must be"):
        significantly_better([True], [False], z=-1.0)


def _data(n_labeled=4, seed=0):
    X, y_true, labeled = blobs(
        3, 25, centers=[[0.0, 0.0], [3.0, 0.0], [1.5, 2.6]], labels=np.arange(3),
        n_labeled=n_labeled, seed=seed,
    )  # fmt: skip
    return X, semi_supervised(y_true, labeled), y_true


def _rays():
    from test_auto_kernel import _labels, _rays

    X, y_true, labeled = _rays()
    return X, _labels(y_true, labeled), y_true


def _explicit(X, y, kernel, scale=None):
    scale_neighbor, scale_factor = scale or (5, 3.0)
    return SpectralGraphClassifier(
        "mgr", model="sum", kernel=kernel, scale_neighbor=scale_neighbor,
        scale_factor=scale_factor, n_eigs=N_EIGS,
    ).fit(X, y)  # fmt: skip


def _dense_correct(clf, y):
    """Whether each label's leave-one-out mean under ``clf``'s summed prior (its chosen
    grid point, dense) predicts its class."""
    p = clf.sum_prior_
    W, lam, V = clf.graph_.weights, clf.eigenvalues_, clf.eigenvectors_
    labeled = clf.labeled_nodes_
    Ks = ((V / (lam + p["tau_s"] ** 2)) @ V.T)[np.ix_(labeled, labeled)]
    Kf = dense_green(W, p["tau_f"])[np.ix_(labeled, labeled)]
    K = Ks / np.mean(np.diag(Ks)) + p["eps"] * Kf / np.mean(np.diag(Kf))
    codes = y[labeled]
    n_classes = int(y[y >= 0].max()) + 1
    means = _dense_loo_means(K, np.eye(n_classes)[codes], p["gamma"])
    return np.argmax(means, axis=1) == codes


@pytest.mark.parametrize("outcome", [None, True, False])
def test_auto_scale_choice_is_the_sign_test_of_the_dense_leave_one_out(monkeypatch, outcome):
    """The Gaussian graph (the evidence's choice here) against the narrow one: the sign
    test sees the dense leave-one-out verdicts of the two; the fit is the explicit fit
    of the graph it chose (``outcome``: the test's answer forced)."""
    X, y, y_true = _data()
    explicit = {
        "incumbent": _explicit(X, y, "gaussian"),
        "narrow": _explicit(X, y, "gaussian", AUTO_NARROW_SCALE),
    }
    seen = []

    def recording(correct, baseline):
        seen.append((correct, baseline))
        return significantly_better(correct, baseline) if outcome is None else outcome

    monkeypatch.setattr(module, "significantly_better", recording)
    auto = SpectralGraphClassifier("mgr", model="sum", n_eigs=N_EIGS).fit(X, y)
    assert len(seen) == 1
    challenger, incumbent = seen[0]
    np.testing.assert_array_equal(incumbent, _dense_correct(explicit["incumbent"], y))
    np.testing.assert_array_equal(challenger, _dense_correct(explicit["narrow"], y))
    narrow = significantly_better(challenger, incumbent) if outcome is None else outcome
    chosen = explicit["narrow" if narrow else "incumbent"]
    assert auto.kernel_ == "gaussian"
    assert auto.graph_ is chosen.graph_
    assert auto.sum_prior_ == chosen.sum_prior_
    np.testing.assert_array_equal(auto.predict_proba(X), chosen.predict_proba(X))
    np.testing.assert_array_equal(auto.posterior_cov(), chosen.posterior_cov())
    assert np.mean(auto.transduction_ == y_true) > 0.8


def test_warm_refits_keep_the_scale_until_the_labels_grow(monkeypatch):
    X, y, y_true = _data()
    unlabeled = np.flatnonzero(y == -1)
    order = np.random.RandomState(0).permutation(unlabeled)
    searches = []
    search = module.SpectralGraphClassifier._sum_search

    def counting(self, graph, labeled_nodes, *rest):
        searches.append((graph.params.scale_factor, labeled_nodes.size))
        return search(self, graph, labeled_nodes, *rest)

    monkeypatch.setattr(module.SpectralGraphClassifier, "_sum_search", counting)
    monkeypatch.setattr(module, "significantly_better", lambda correct, baseline: True)
    warm = SpectralGraphClassifier("mgr", model="sum", n_eigs=N_EIGS)
    n_start = np.sum(y != -1)
    sizes = [n_start + step for step in range(6)]
    for size in sizes:
        more = y.copy()
        more[order[: size - n_start]] = y_true[order[: size - n_start]]
        warm.fit(X, more)
        assert warm.graph_.params.scale_factor == AUTO_NARROW_SCALE[1]
        assert warm.graph_.params.scale_neighbor == AUTO_NARROW_SCALE[0]
    expected = [sizes[0]]
    for size in sizes[1:]:
        if size >= module.AUTO_REUSE_GROWTH * expected[-1]:
            expected.append(size)
    default_factor = SpectralGraphClassifier().scale_factor
    assert searches == [
        (factor, size) for size in expected for factor in (default_factor, AUTO_NARROW_SCALE[1])
    ]


def test_no_narrow_graph_where_the_kernel_is_given_or_the_model_not_summed(monkeypatch):
    """Only kernel="auto" weighs the scale, only for the summed model, and up to
    ``AUTO_SCALE_MAX_NODES`` nodes (beyond the kernel choice's limit too)."""
    X, y, _ = _data()
    nodes = NodeSet(X)
    clear_graph_cache()  # the narrow graph of earlier tests' data
    calls = []
    monkeypatch.setattr(
        module, "significantly_better", lambda correct, baseline: calls.append(1) or True
    )
    fits = [
        SpectralGraphClassifier("mgr", model="sum", kernel="gaussian", nodes=nodes),
        SpectralGraphClassifier("mgr", model="sum", kernel="cosine", nodes=nodes),
        SpectralGraphClassifier("mgr", model="full", nodes=nodes),
        SpectralGraphClassifier("mgr", model="spectral", nodes=nodes),
    ]
    for clf in fits:
        clf.set_params(n_eigs=N_EIGS).fit(X, y)
        assert clf.graph_.params.scale_factor == clf.scale_factor
    assert calls == []
    # Beyond the kernel choice's node limit: the Gaussian kernel without a choice, and
    # the narrow scale still weighed (one more graph) up to its own limit.
    monkeypatch.setattr(module, "AUTO_KERNEL_MAX_NODES", X.shape[0] - 1)
    monkeypatch.setattr(
        SpectralGraphClassifier, "_choose_kernel", lambda *a, **k: pytest.fail("kernel chosen")
    )
    builds = GRAPH_CACHE.builds
    clf = SpectralGraphClassifier("mgr", model="sum", nodes=nodes, n_eigs=N_EIGS).fit(X, y)
    assert clf.kernel_ == "gaussian" and clf.graph_.params.scale_factor == AUTO_NARROW_SCALE[1]
    assert calls == [1] and GRAPH_CACHE.builds == builds + 1
    # Beyond that one: the Gaussian graph, no second one.
    monkeypatch.setattr(module, "AUTO_SCALE_MAX_NODES", X.shape[0] - 1)
    clf = SpectralGraphClassifier("mgr", model="sum", nodes=nodes, n_eigs=N_EIGS).fit(X, y)
    assert clf.graph_.params.scale_factor == clf.scale_factor
    assert calls == [1] and GRAPH_CACHE.builds == builds + 1


def test_a_cosine_choice_has_no_narrow_rival(monkeypatch):
    """Two rays from the origin: the evidence takes the cosine graph, and the summed model
    fits it without weighing a Gaussian graph (the scale is a choice within the Gaussian
    kernel)."""
    X, y, _ = _rays()
    calls = []
    monkeypatch.setattr(
        module, "significantly_better", lambda correct, baseline: calls.append(1) or True
    )
    clf = SpectralGraphClassifier("mgr", model="sum", n_eigs=N_EIGS).fit(X, y)
    assert clf.kernel_ == "cosine" and calls == []
    np.testing.assert_array_equal(
        clf.predict_proba(X), _explicit(X, y, "cosine").predict_proba(X)
    )


@pytest.mark.parametrize("n_points", [8, 9])
def test_no_narrow_graph_on_too_few_distinct_points(monkeypatch, n_points):
    """Below ten distinct points the narrow scale's 9th neighbour does not exist: the
    first graph alone, and no warning about a scale_neighbor the user never set."""
    rng = np.random.RandomState(0)
    half = n_points // 2
    X = np.vstack([rng.randn(half, 2) * 0.3 + 5, rng.randn(n_points - half, 2) * 0.3 + [5, 8]])
    y = np.repeat([0, 1], [half, n_points - half])
    X, y = np.vstack([X, X[:3]]), np.r_[y, y[:3]]  # three copies: 11 or 12 nodes
    calls = []
    monkeypatch.setattr(
        module, "significantly_better", lambda correct, baseline: calls.append(1) or True
    )
    with pytest.warns(UserWarning) as caught:
        clf = SpectralGraphClassifier("mgr", model="sum", kernel="auto", n_eigs=5).fit(X, y)
    assert clf.kernel_ == "gaussian" and calls == []
    assert clf.graph_.params.scale_neighbor < AUTO_NARROW_SCALE[0]
    assert not any("scale_neighbor=9" in str(w.message) for w in caught)
