"""``kernel="auto"``: the graph whose spectral ``ce`` model predicts the labels best.

Each fit must equal the fit with the kernel it chose given explicitly, and the
choice must be the larger of the two balanced leave-one-out log-likelihoods
computed here on graphs built with each kernel (each at its grid point of
largest evidence; each label left out by one Newton step with a dense Hessian).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import skmcal.classifier as module
from skmcal import GRAPH_CACHE, NodeSet, SpectralGraphClassifier
from skmcal.evidence import LAPLACE_GAMMAS, select_hyperparameters
from skmcal.losses import LOSSES

N_EIGS = 10


def _rays(n=40, seed=0):
    """Two classes along two rays from the origin (angles 0 and 50 degrees): the angle
    separates them, the distance does not near the origin."""
    rng = np.random.RandomState(seed)
    radius = np.concatenate([np.linspace(0.3, 6.0, n)] * 2)
    angle = np.repeat(np.radians([0.0, 50.0]), n) + 0.03 * rng.randn(2 * n)
    X = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
    y_true = np.repeat([0, 1], n)
    return X, y_true, np.array([n - 1, 2 * n - 1, 5, n + 5])


def _along_a_ray(n=40, seed=1):
    """Two blobs on one ray from the origin: the angle cannot separate them."""
    rng = np.random.RandomState(seed)
    X = np.vstack([rng.randn(n, 2) * 0.4 + [2.0, 2.0], rng.randn(n, 2) * 0.4 + [5.0, 5.0]])
    y_true = np.repeat([0, 1], n)
    return X, y_true, np.array([0, 1, n, n + 1])


def _labels(y_true, labeled):
    y = np.full(y_true.size, -1)
    y[labeled] = y_true[labeled]
    return y


def _taus(graph, few):
    """The taus of the grid, by hand: DEFAULT_TAUS with tau^2 at most the median
    eigenvalue; ``few`` (model="auto", few labels): of those, the ones whose prior puts
    at most AUTO_FEW_LABELS_MAX_SHARE of its variance on the smoothest eigenvector."""
    lam = graph.eigenvalues
    taus = [t for t in module.DEFAULT_TAUS if t**2 <= np.median(lam)] or [module.DEFAULT_TAUS[0]]
    if few:
        shares = {t: (1 / (lam.min() + t**2)) / np.sum(1 / (lam + t**2)) for t in taus}
        taus = [t for t in taus if shares[t] <= module.AUTO_FEW_LABELS_MAX_SHARE] or [max(taus)]
    return taus


def _score(X, y, kernel, few=True):
    """The kernel's score by hand: the grid point of largest ce evidence (by default
    the grid of ``model="auto"`` with few labels, its balanced weights; ``few=False``:
    LAPLACE_GAMMAS, unit weights), the explicit spectral ce fit there, each label's
    latent value without it (``BruteForce.leave_one_out``: one Newton step with the
    dense Hessian), and the labels' log-likelihood there, each class's labels weighing
    one over its count."""
    from _oracle import BruteForce, softmax_rows

    weighting = "balanced" if few else None
    graph = SpectralGraphClassifier(kernel=kernel, n_eigs=N_EIGS).fit(X, y).graph_
    labeled = np.flatnonzero(y != -1)
    codes = np.unique(y[labeled], return_inverse=True)[1]
    n_classes = codes.max() + 1
    counts = np.bincount(codes)
    weights = (codes.size / (n_classes * counts))[codes] if few else None
    loss = LOSSES["ce"]
    tau, gamma, _ = select_hyperparameters(
        loss, graph.eigenvalues, graph.eigenvectors[labeled], loss.encode(codes, n_classes),
        _taus(graph, few), module.AUTO_FEW_LABELS_GAMMAS if few else LAPLACE_GAMMAS,
        n_nodes=graph.n_nodes, weights=weights,
    )  # fmt: skip
    clf = SpectralGraphClassifier(
        "ce", model="spectral", kernel=kernel, n_eigs=N_EIGS, tau=tau, gamma=gamma,
        class_weight=weighting,
    ).fit(X, y)  # fmt: skip
    brute = BruteForce(clf, X, y)
    latent = np.array([brute.leave_one_out(j) for j in range(labeled.size)])
    p = softmax_rows(latent / gamma)[np.arange(labeled.size), codes]
    return float(np.sum(np.log(p) / (n_classes * counts[codes])))


@pytest.mark.parametrize(("data", "expected"), [(_rays, "cosine"), (_along_a_ray, "gaussian")])
@pytest.mark.parametrize("loss", ["auto", "mgr", "probit"])
def test_auto_kernel_is_the_one_of_larger_score_and_fits_as_it(data, expected, loss):
    X, y_true, labeled = data()
    y = _labels(y_true, labeled)
    explicit = {
        kernel: SpectralGraphClassifier(loss, kernel=kernel, n_eigs=N_EIGS).fit(X, y)
        for kernel in ("gaussian", "cosine")
    }
    score = {kernel: _score(X, y, kernel) for kernel in explicit}
    auto = SpectralGraphClassifier(loss, n_eigs=N_EIGS).fit(X, y)
    assert auto.kernel == "auto"
    assert auto.kernel_ == max(score, key=score.get) == expected
    chosen = explicit[expected]
    assert auto.graph_ is chosen.graph_  # the cached graph of that kernel
    assert (auto.tau_, auto.gamma_) == (chosen.tau_, chosen.gamma_)
    np.testing.assert_array_equal(auto.predict_proba(X), chosen.predict_proba(X))
    np.testing.assert_array_equal(auto.posterior_cov(), chosen.posterior_cov())
    assert np.mean(auto.transduction_ == y_true) > 0.9


def test_the_kernels_score_takes_the_grid_and_weights_of_the_fit():
    """``model="auto"`` with few labels compares the graphs on its grid
    (AUTO_FEW_LABELS_GAMMAS, taus of AUTO_FEW_LABELS_MAX_SHARE) with its balanced
    weights, ``model="spectral"`` over LAPLACE_GAMMAS with unit weights, on labels the
    graphs do not fit (three blobs, labels shuffled): each fit's scores (recorded) are
    those by hand of its own grid and weights, which differ from the other's."""
    from _oracle import blobs

    centers = [[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]]
    X, y_true, labeled = blobs(3, 30, centers=centers, labels=np.arange(3), n_labeled=8, seed=2)
    y_true = np.random.RandomState(2).permutation(y_true)
    y = _labels(y_true, labeled)
    recorded = {}
    score_of = module.SpectralGraphClassifier._kernel_score

    def recording(self, graph, *args):
        value = score_of(self, graph, *args)
        recorded[graph.params.kernel] = value
        return value

    by_hand = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module.SpectralGraphClassifier, "_kernel_score", recording)
        for model, few in (("auto", True), ("spectral", False)):
            clf = SpectralGraphClassifier("ce", model=model, n_eigs=N_EIGS).fit(X, y)
            by_hand[model] = {k: _score(X, y, k, few) for k in ("gaussian", "cosine")}
            for kernel, value in by_hand[model].items():
                np.testing.assert_allclose(recorded[kernel], value, rtol=1e-8)
            assert clf.kernel_ == max(by_hand[model], key=by_hand[model].get)
    assert by_hand["auto"]["cosine"] != pytest.approx(by_hand["spectral"]["cosine"], rel=1e-3)


def test_auto_kernel_is_gaussian_beyond_the_node_limit_or_with_a_neighbors_estimator(
    monkeypatch,
):
    from sklearn.neighbors import KNeighborsTransformer

    X, y_true, labeled = _rays()
    y = _labels(y_true, labeled)
    nodes = NodeSet(X)
    SpectralGraphClassifier(nodes=nodes, n_eigs=N_EIGS).fit(X, y)  # both graphs cached
    monkeypatch.setattr(module, "AUTO_KERNEL_MAX_NODES", X.shape[0] - 1)
    builds = GRAPH_CACHE.builds
    beyond = SpectralGraphClassifier(nodes=nodes, n_eigs=N_EIGS).fit(X, y)
    assert beyond.kernel_ == "gaussian" and GRAPH_CACHE.builds == builds
    monkeypatch.setattr(module, "AUTO_KERNEL_MAX_NODES", X.shape[0])
    assert SpectralGraphClassifier(nodes=nodes, n_eigs=N_EIGS).fit(X, y).kernel_ == "cosine"
    transformer = KNeighborsTransformer(n_neighbors=11)
    given = SpectralGraphClassifier(neighbors=transformer, n_eigs=N_EIGS).fit(X, y)
    assert given.kernel_ == "gaussian"


@pytest.mark.filterwarnings("ignore:1 of 81 nodes lie in:UserWarning")
def test_a_cosine_graph_with_an_isolated_node_is_not_a_candidate():
    X, y_true, labeled = _rays()
    X = np.vstack([X, [0.0, 0.0]])  # the origin: no cosine affinity to anything
    y_true = np.append(y_true, 0)
    y = _labels(y_true, labeled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the cosine graph's warning is not shown
        auto = SpectralGraphClassifier(n_eigs=N_EIGS, cache=False).fit(X, y)
    assert auto.kernel_ == "gaussian"
    with pytest.warns(UserWarning, match="no edge of positive weight"):
        SpectralGraphClassifier(kernel="cosine", n_eigs=N_EIGS, cache=False).fit(X, y)


def test_warm_refits_reuse_the_choice_until_the_labels_grow(monkeypatch):
    X, y_true, labeled = _rays()
    order = np.random.RandomState(0).permutation(np.setdiff1d(np.arange(y_true.size), labeled))
    calls = []
    score = module.SpectralGraphClassifier._kernel_score

    def counting(self, graph, nodes, codes, n_classes, *rest):
        calls.append((graph.params.kernel, nodes.size))
        return score(self, graph, nodes, codes, n_classes, *rest)

    monkeypatch.setattr(module.SpectralGraphClassifier, "_kernel_score", counting)
    sizes = [labeled.size + step for step in range(6)]
    warm = SpectralGraphClassifier(n_eigs=N_EIGS)
    for size in sizes:
        rows = np.concatenate([labeled, order[: size - labeled.size]])
        warm.fit(X, _labels(y_true, rows))
        cold = SpectralGraphClassifier(n_eigs=N_EIGS, warm_start=False).fit(
            X, _labels(y_true, rows)
        )
        assert warm.kernel_ == cold.kernel_ == "cosine"
    chosen_at = [size for kernel, size in calls[::2]]
    expected = [sizes[0]]
    for size in sizes[1:]:
        if size >= module.AUTO_REUSE_GROWTH * expected[-1]:
            expected.append(size)
    # the warm estimator re-chose at the growth steps only; every cold fit chose afresh
    assert sorted(chosen_at) == sorted(expected + sizes)
    assert all(kernel == "gaussian" for kernel, _ in calls[::2])
    assert all(kernel == "cosine" for kernel, _ in calls[1::2])


def test_a_warm_re_choice_keeps_the_last_kernel_within_the_margin(monkeypatch):
    """Scores set by hand: a warm estimator choosing again keeps its last kernel until
    another beats it by AUTO_KERNEL_MARGIN; a cold fit of the same labels takes the
    largest score."""
    X, y_true, labeled = _rays()
    order = np.random.RandomState(0).permutation(np.setdiff1d(np.arange(y_true.size), labeled))
    margin = module.AUTO_KERNEL_MARGIN
    scores = {"gaussian": 0.0, "cosine": 0.1}
    monkeypatch.setattr(
        module.SpectralGraphClassifier, "_kernel_score",
        lambda self, graph, *args: scores[graph.params.kernel],
    )  # fmt: skip
    warm = SpectralGraphClassifier(n_eigs=N_EIGS)
    size = labeled.size

    def fit_both():
        y = _labels(y_true, np.concatenate([labeled, order[: size - labeled.size]]))
        cold = SpectralGraphClassifier(n_eigs=N_EIGS, warm_start=False).fit(X, y)
        return warm.fit(X, y).kernel_, cold.kernel_

    assert fit_both() == ("cosine", "cosine")
    for gaussian, expected in ((0.1 + 0.8 * margin, "cosine"), (0.1 + 1.2 * margin, "gaussian")):
        size = int(np.ceil(module.AUTO_REUSE_GROWTH * size))  # the warm estimator re-chooses
        scores["gaussian"] = gaussian
        assert fit_both() == (expected, "gaussian")
    size = int(np.ceil(module.AUTO_REUSE_GROWTH * size))
    scores["cosine"] = scores["gaussian"] + 0.8 * margin  # ahead, but not by the margin
    assert fit_both() == ("gaussian", "cosine")


def test_auto_kernel_parameter_is_validated():
    X, y_true, labeled = _rays()
    with pytest.raises(ValueError, match="'kernel' parameter"):
        SpectralGraphClassifier(kernel="rbf").fit(X, _labels(y_true, labeled))


@pytest.mark.parametrize(("loss", "grids"), [("ce", 2), ("auto", 2), ("mgr", 3)])
def test_the_chosen_graph_shares_its_grid_with_tau_and_gamma(monkeypatch, loss, grids):
    """Spectral ce with tau, gamma "auto": the kernel's grid on the chosen graph is the
    hyperparameters' grid, computed once (two grids per fit, not three)."""
    X, y_true, labeled = _rays()
    calls = []
    select = module.select_hyperparameters

    def counting(*args, **kwargs):
        calls.append(args[0].name)
        return select(*args, **kwargs)

    monkeypatch.setattr(module, "select_hyperparameters", counting)
    SpectralGraphClassifier(loss, model="spectral", n_eigs=N_EIGS).fit(X, _labels(y_true, labeled))
    assert len(calls) == grids


def test_warm_refits_with_a_shared_grid_equal_those_of_the_explicit_kernel():
    X, y_true, labeled = _rays()
    order = np.random.RandomState(1).permutation(np.setdiff1d(np.arange(y_true.size), labeled))
    auto = SpectralGraphClassifier("ce", model="spectral", n_eigs=N_EIGS)
    explicit = SpectralGraphClassifier("ce", model="spectral", kernel="cosine", n_eigs=N_EIGS)
    for size in range(labeled.size, labeled.size + 12, 2):
        y = _labels(y_true, np.concatenate([labeled, order[: size - labeled.size]]))
        auto.fit(X, y)
        explicit.fit(X, y)
        assert auto.kernel_ == "cosine"
        assert (auto.tau_, auto.gamma_) == (explicit.tau_, explicit.gamma_)
        np.testing.assert_array_equal(auto.coef_, explicit.coef_)
        np.testing.assert_array_equal(auto.posterior_cov(), explicit.posterior_cov())


def test_a_gaussian_loss_tol_does_not_reach_the_kernel_choice():
    """With mgr, tol is for the sparse solves (none for the spectral model): the
    spectral ce fits that compare the graphs keep AUTO_NEWTON_TOL (a user's tol=1e-20
    gave two warnings that Newton's method for 'ce' did not converge)."""
    X, y_true, labeled = _rays()
    y = _labels(y_true, labeled)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = SpectralGraphClassifier(
            "mgr", model="spectral", n_eigs=N_EIGS, cache=False, tol=1e-20
        ).fit(X, y)
    assert not [w for w in caught if "'ce'" in str(w.message)]
    plain = SpectralGraphClassifier("mgr", model="spectral", n_eigs=N_EIGS, cache=False).fit(X, y)
    assert clf.kernel_ == plain.kernel_
    np.testing.assert_array_equal(clf.transduction_, plain.transduction_)
