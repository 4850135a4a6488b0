"""model="sum": the spectral prior plus the full graph's, against dense brute force.

On tiny graphs: the posterior mean against a dense solve with the dense
inverse of ``L + tau_f^2 I`` and the dense truncated spectral prior; the
evidence against a dense Gaussian log density maximised numerically over the
amplitude; the classifier's choice against the evidence evaluated densely at
every grid point (docs/math.rst, "The summed prior").
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
import scipy.stats
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from skmcal import NodeSet, SpectralGraphClassifier, clear_graph_cache, query
from skmcal.evidence import (
    DEFAULT_TAUS,
    SUM_CLASS_MARGIN,
    SUM_EPSILONS,
    SUM_FULL_TAUS,
    SUM_GAMMAS,
    select_sum_hyperparameters,
    sum_log_evidence,
    sum_loo_class_log_likelihood,
    sum_loo_log_density,
    unit_scale,
)
from skmcal.fullgraph import LaplacianSolver, fit_sum_graph, spectral_block

from _oracle import (
    blobs,
    dense_laplacian,
    dense_loo,
    dense_loo_classes,
    dense_sum_choice,
    dense_sum_prior,
    plane_knn_graph,
    run_concurrently,
    semi_supervised,
)

CENTERS = [[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]]


def _tiny_graph(n=40, n_eigs=6, seed=0):
    W, _ = plane_knn_graph(n, seed=seed)
    W = sp.csr_matrix(W)
    lam, V = np.linalg.eigh(dense_laplacian(W))
    return W, lam[:n_eigs], V[:, :n_eigs]


@pytest.mark.parametrize("eps", [0.0, 0.3, 3.0])
@pytest.mark.parametrize("n_classes", [1, 3])  # gr (+-1 vector); mgr (one-hot rows)
def test_sum_mean_matches_the_dense_posterior_mean(eps, n_classes):
    W, lam, V = _tiny_graph()
    rng = np.random.RandomState(1)
    labeled = np.array([3, 11, 17, 25, 30, 11])  # node 11 labeled twice
    if n_classes == 1:
        targets = rng.choice([-1.0, 1.0], labeled.size)
    else:
        targets = np.eye(n_classes)[rng.randint(n_classes, size=labeled.size)]
    tau_s, tau_f, gamma = 0.1, 0.2, 0.3
    fit = fit_sum_graph(
        lam, V, W, labeled, targets, tau_s, tau_f, eps, gamma, tol=1e-13, solver=LaplacianSolver(W)
    )
    Sigma, cs, cf = dense_sum_prior(W, lam, V, tau_s, tau_f, eps, labeled)
    P = np.eye(W.shape[0])[labeled]
    Y = targets.reshape(labeled.size, -1)
    C = np.linalg.solve(P @ Sigma @ P.T + gamma**2 * np.eye(labeled.size), Y)
    expected = (Sigma @ P.T @ C).reshape(fit.latent.shape)
    np.testing.assert_allclose(fit.latent, expected, atol=1e-8 * np.abs(expected).max())
    np.testing.assert_allclose([fit.spectral_scale, fit.full_scale], [cs, cf], rtol=1e-10)
    assert fit.converged
    # The profiled amplitude: a = sum_c y_c'S^-1 y_c / (k n).
    np.testing.assert_allclose(fit.amplitude, np.sum(Y * C) / Y.size, rtol=1e-10)


def test_spectral_block_is_the_truncated_prior_at_the_labels():
    W, lam, V = _tiny_graph()
    labeled = np.array([0, 7, 39])
    dense = (V / (lam + 0.04)) @ V.T
    np.testing.assert_allclose(
        spectral_block(lam, V, labeled, 0.2), dense[np.ix_(labeled, labeled)], atol=1e-12
    )


def _blocks(seed=2, n=7):
    rng = np.random.RandomState(seed)
    A, B = rng.randn(n, 3), rng.randn(n, n)
    Ks, Kf = A @ A.T + 0.01 * np.eye(n), B @ B.T
    return unit_scale(Ks) * Ks, unit_scale(Kf) * Kf


@pytest.mark.parametrize("k", [1, 3])
def test_sum_evidence_is_the_dense_gaussian_density_at_its_best_amplitude(k):
    Ks, Kf = _blocks()
    rng = np.random.RandomState(3)
    Y = rng.randn(Ks.shape[0], k)
    targets = Y[:, 0] if k == 1 else Y
    eps, gamma = 0.4, 0.3
    S = Ks + eps * Kf + gamma**2 * np.eye(Ks.shape[0])

    def minus_log_density(log_a):
        dist = scipy.stats.multivariate_normal(np.zeros(S.shape[0]), np.exp(log_a) * S)
        return -sum(dist.logpdf(Y[:, c]) for c in range(k))

    best = scipy.optimize.minimize_scalar(
        minus_log_density, bounds=(-10, 10), method="bounded", options={"xatol": 1e-10}
    )
    value = sum_log_evidence(Ks, Kf, targets, eps, gamma)
    np.testing.assert_allclose(value, -best.fun, rtol=1e-9)
    # ... and the selection's profiled amplitude is that maximiser.
    *_, amplitude, table = select_sum_hyperparameters([Ks], [Kf], targets, [eps], [gamma])
    np.testing.assert_allclose(amplitude, np.exp(best.x), rtol=1e-6)
    np.testing.assert_allclose(table[0, 0, 0, 0], value, rtol=1e-10)


@pytest.mark.parametrize("k", [1, 3])
def test_sum_loo_is_the_dense_leave_one_out_density_at_its_best_amplitude(k):
    Ks, Kf = _blocks()
    rng = np.random.RandomState(3)
    Y = rng.randn(Ks.shape[0], k)
    targets = Y[:, 0] if k == 1 else Y
    eps, gamma = 0.4, 0.3
    S = Ks + eps * Kf + gamma**2 * np.eye(Ks.shape[0])
    best = scipy.optimize.minimize_scalar(
        lambda log_a: -dense_loo(S, Y, np.exp(log_a)),
        bounds=(-10, 10), method="bounded", options={"xatol": 1e-10},
    )  # fmt: skip
    value = sum_loo_log_density(Ks, Kf, targets, eps, gamma)
    np.testing.assert_allclose(value, -best.fun, rtol=1e-9)
    *_, amplitude, table = select_sum_hyperparameters(
        [Ks], [Kf], targets, [eps], [gamma], criterion="loo"
    )
    np.testing.assert_allclose(amplitude, np.exp(best.x), rtol=1e-6)
    np.testing.assert_allclose(table[0, 0, 0, 0], value, rtol=1e-10)


def test_sum_loo_prefers_the_prior_that_predicts_the_labels():
    """Labels that a smooth prior predicts and a nearly diagonal one does not: the
    leave-one-out density prefers the smooth prior's weight, the evidence need not."""
    x = np.linspace(0, 1, 12)
    Ks = np.exp(-((x[:, None] - x[None, :]) ** 2) / 0.1)  # smooth: neighbours agree
    Kf = np.eye(12) + 0.05 * Ks  # nearly diagonal, like Green's functions at the labels
    Ks, Kf = unit_scale(Ks) * Ks, unit_scale(Kf) * Kf
    Y = np.sign(x - 0.5)
    *_, table = select_sum_hyperparameters([Ks], [Kf], Y, [0.01, 3.0], [0.1], criterion="loo")
    assert table[0, 0, 0, 0] > table[0, 0, 1, 0]


@pytest.mark.parametrize(
    "criterion, value", [("evidence", sum_log_evidence), ("loo", sum_loo_log_density)]
)
def test_sum_selection_table_is_the_criterion_on_the_grid(criterion, value):
    Ks1, Kf1 = _blocks(4)
    Ks2, Kf2 = _blocks(5)
    Y = np.eye(3)[np.random.RandomState(6).randint(3, size=7)]
    i, j, eps, gamma, _, table = select_sum_hyperparameters(
        [Ks1, Ks2], [Kf1, Kf2], Y, criterion=criterion
    )
    assert table.shape == (2, 2, len(SUM_EPSILONS), len(SUM_GAMMAS))
    for a, Ks in enumerate((Ks1, Ks2)):
        for b, Kf in enumerate((Kf1, Kf2)):
            for e, ep in enumerate(SUM_EPSILONS):
                for g, ga in enumerate(SUM_GAMMAS):
                    np.testing.assert_allclose(
                        table[a, b, e, g], value(Ks, Kf, Y, ep, ga), rtol=1e-9
                    )
    best = np.unravel_index(np.argmax(table), table.shape)
    assert (i, j, SUM_EPSILONS[best[2]], SUM_GAMMAS[best[3]]) == (*best[:2], eps, gamma)
    with pytest.raises(ValueError, match="criterion must be 'evidence' or 'loo'; got 'cv'"):
        select_sum_hyperparameters([Ks1], [Kf1], Y, criterion="cv")


@pytest.mark.parametrize("k", [1, 3])
def test_sum_loo_class_log_likelihood_is_the_dense_leave_one_out_one(k):
    """Explicit solves without each label, the pairwise normal probabilities of its
    class, averaged per class (one column: the sign of a +-1 target)."""
    Ks, Kf = _blocks(n=9)
    codes = np.array([0, 0, 0, 0, 1, 1, 2, 0, 1]) % max(k, 2)
    Y = np.eye(3)[codes] if k == 3 else (2.0 * codes - 1.0)[:, None]
    targets = Y if k == 3 else Y[:, 0]
    for eps, gamma in [(0.4, 0.3), (3.0, 0.05), (0.01, 1.0)]:
        S = Ks + eps * Kf + gamma**2 * np.eye(9)
        value = sum_loo_class_log_likelihood(Ks, Kf, targets, eps, gamma)
        # one column: closed form; more: 16-point Gauss-Hermite against adaptive quadrature
        np.testing.assert_allclose(value, dense_loo_classes(S, Y), rtol=1e-9 if k == 1 else 1e-5)


@pytest.mark.parametrize("k", [1, 3])
def test_sum_loo_class_log_likelihood_of_weighted_labels(k):
    """The classifier's search scales the blocks and targets by the labels' weights
    (``sqrt(w_i w_j) K_ij``, ``sqrt(w_i) y_i``): the class log-likelihood there is that
    of the unscaled targets under the noise ``gamma^2 / w_i``."""
    Ks, Kf = _blocks(n=9)
    codes = np.array([0, 0, 0, 0, 1, 1, 2, 0, 1]) % max(k, 2)
    Y = np.eye(3)[codes] if k == 3 else (2.0 * codes - 1.0)[:, None]
    w = np.array([0.5, 0.5, 0.5, 0.5, 2.0, 2.0, 4.0, 0.5, 2.0])
    root = np.sqrt(w)
    scaled = Y * root[:, None]
    eps, gamma = 0.4, 0.3
    value = sum_loo_class_log_likelihood(
        np.outer(root, root) * Ks, np.outer(root, root) * Kf,
        scaled if k == 3 else scaled[:, 0], eps, gamma,
    )  # fmt: skip
    S = Ks + eps * Kf + gamma**2 * np.diag(1.0 / w)
    np.testing.assert_allclose(value, dense_loo_classes(S, Y), rtol=1e-9 if k == 1 else 1e-5)


def test_sum_selection_with_a_margin_is_the_dense_guarded_maximum():
    """The leave-one-out density's maximum among the grid points whose class
    log-likelihood is within the margin of the best; -inf in the table elsewhere. Here
    the guard moves the choice (without it the density's maximum is another point)."""
    Ks1, Kf1 = _blocks(0, 9)
    Ks2, Kf2 = _blocks(100, 9)
    Y = np.eye(3)[np.random.RandomState(0).choice(3, 9, p=[0.6, 0.25, 0.15])]
    density, classes = {}, {}
    for a, Ks in enumerate((Ks1, Ks2)):
        for b, Kf in enumerate((Kf1, Kf2)):
            for eps in SUM_EPSILONS:
                for g in SUM_GAMMAS:
                    S = Ks + eps * Kf + g**2 * np.eye(9)
                    density[a, b, eps, g] = dense_loo(S, Y)
                    classes[a, b, eps, g] = dense_loo_classes(S, Y)
    best = max(classes.values())
    chosen = {}
    for margin in (0.0, 0.07, 0.5):
        *choice, _, table = select_sum_hyperparameters(
            [Ks1, Ks2], [Kf1, Kf2], Y, criterion="loo", margin=margin
        )
        near = [q for q in density if classes[q] >= best - margin]
        assert tuple(choice) == max(near, key=density.get)
        assert np.count_nonzero(np.isfinite(table)) == len(near)
        chosen[margin] = tuple(choice)
    unguarded = select_sum_hyperparameters([Ks1, Ks2], [Kf1, Kf2], Y, criterion="loo")[:4]
    assert unguarded == max(density, key=density.get) != chosen[0.07]
    with pytest.raises(ValueError, match="margin needs criterion='loo'; got criterion='ev"):
        select_sum_hyperparameters([Ks1], [Kf1], Y, margin=0.1)
    for bad in (-0.1, np.inf, True, "0.1"):
        with pytest.raises(ValueError, match="margin must be a non-negative float or None"):
            select_sum_hyperparameters([Ks1], [Kf1], Y, criterion="loo", margin=bad)


def test_sum_evidence_rejects_bad_inputs():
    Ks, Kf = _blocks()
    with pytest.raises(ValueError, match="eps must be a non-negative finite float; got -1"):
        sum_log_evidence(Ks, Kf, np.ones(7), -1.0, 0.1)
    with pytest.raises(ValueError, match="epsilons must be a non-empty grid"):
        select_sum_hyperparameters([Ks], [Kf], np.ones(7), epsilons=[])
    with pytest.raises(ValueError, match="K must be square"):
        sum_log_evidence(Ks, Kf[:3, :3], np.ones(7), 1.0, 0.1)
    with pytest.raises(ValueError, match="positive diagonal"):
        unit_scale(np.zeros((2, 2)))


# ------------------------------------------------------------- the classifier
def _data(n_classes=3, seed=0, n_labeled=3):
    X, y_true, labeled = blobs(
        n_classes, 20, centers=CENTERS, labels=np.arange(3), n_labeled=n_labeled, seed=seed
    )
    return X, semi_supervised(y_true, labeled), y_true


@pytest.mark.parametrize("loss", ["gr", "mgr"])
def test_classifier_sum_choice_is_the_dense_leave_one_out_maximum(loss):
    n_classes = 2 if loss == "gr" else 3
    X, y, y_true = _data(n_classes)
    clf = SpectralGraphClassifier(loss, model="sum", n_eigs=10, cache=False).fit(X, y)
    W, lam, V = clf.graph_.weights, clf.eigenvalues_, clf.eigenvectors_
    labeled = np.flatnonzero(y != -1)
    Y = np.eye(n_classes)[y[labeled]] if loss == "mgr" else 2.0 * y[labeled] - 1.0
    Y = Y.reshape(labeled.size, -1)
    n = labeled.size
    taus_s = [t for t in DEFAULT_TAUS if t**2 <= np.median(lam)]
    table, classes = {}, {}
    for ts in taus_s:
        for tf in SUM_FULL_TAUS:
            for eps in SUM_EPSILONS:
                Sigma, _, _ = dense_sum_prior(W, lam, V, ts, tf, eps, labeled)
                K = Sigma[np.ix_(labeled, labeled)]
                for g in SUM_GAMMAS:
                    S = K + g**2 * np.eye(n)
                    table[ts, tf, eps, g] = dense_loo(S, Y)  # at the profiled amplitude
                    classes[ts, tf, eps, g] = dense_loo_classes(S, Y)
    near = [q for q in table if classes[q] >= max(classes.values()) - SUM_CLASS_MARGIN]
    p = clf.sum_prior_
    assert (p["tau_s"], p["tau_f"], p["eps"], p["gamma"]) == max(near, key=table.get)
    assert clf.tau_ == p["tau_s"]
    np.testing.assert_allclose(clf.gamma_, p["gamma"] / np.sqrt(p["spectral_scale"]))
    assert np.mean(clf.transduction_ == y_true) > 0.9


def test_a_search_beyond_its_cap_is_the_dense_maximum_over_the_subset(monkeypatch):
    """More labels than SUM_SEARCH_MAX_LABELS: the grid's choice is the dense
    leave-one-out maximum over the labels of _search_subset; the fit takes them all."""
    import skmcal.classifier as module

    X, y, y_true = _data(3, n_labeled=8)
    labeled = np.flatnonzero(y != -1)
    cap = labeled.size // 2
    monkeypatch.setattr(module, "SUM_SEARCH_MAX_LABELS", cap)
    clf = SpectralGraphClassifier("mgr", model="sum", n_eigs=10, cache=False).fit(X, y)
    np.testing.assert_array_equal(clf.labeled_nodes_, labeled)
    keep = module._search_subset(labeled, y[labeled], cap)
    assert cap <= keep.size <= cap + 3 and keep.size < labeled.size
    sub = labeled[keep]
    p = clf.sum_prior_
    chosen = (p["tau_s"], p["tau_f"], p["eps"], p["gamma"])
    assert chosen == dense_sum_choice(clf, sub, np.eye(3)[y[sub]])


def test_search_subset_is_fixed_by_the_nodes_and_holds_every_class():
    from skmcal.classifier import _search_subset

    rng = np.random.RandomState(0)
    nodes = rng.choice(10_000, size=900, replace=False)
    codes = rng.randint(0, 3, size=900)
    codes[np.argmax(nodes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))] = 3  # one label
    keep = _search_subset(nodes, codes, 300)
    assert 300 <= keep.size <= 304 and np.all(np.diff(keep) > 0)
    assert set(codes[keep]) == {0, 1, 2, 3}  # the class of one label, its hash the largest
    order = rng.permutation(900)
    again = _search_subset(nodes[order], codes[order], 300)
    assert set(nodes[order][again]) == set(nodes[keep])  # whatever the order of the labels
    more = np.concatenate([nodes, rng.choice(np.setdiff1d(np.arange(10_000), nodes), 100, False)])
    grown = set(more[_search_subset(more, np.r_[codes, np.zeros(100, int)], 300)])
    assert len(grown & set(nodes[keep])) >= 250  # most of the subset stays as labels come


def test_classifier_sum_latent_and_covariance():
    """The latent of the chosen prior; the coefficients' covariance of the remainder model
    (the prior's projection on V less the white noise s, noise gamma_^2 + s; units a c_s)."""
    X, y, _ = _data()
    clf = SpectralGraphClassifier("mgr", model="sum", n_eigs=10, cache=False, tol=1e-10)
    clf.fit(X, y)
    p = clf.sum_prior_
    W, lam, V = clf.graph_.weights, clf.eigenvalues_, clf.eigenvectors_
    labeled = np.flatnonzero(y != -1)
    Sigma, _, _ = dense_sum_prior(W, lam, V, p["tau_s"], p["tau_f"], p["eps"], labeled)
    Y = np.eye(3)[y[labeled]]
    K = Sigma[np.ix_(labeled, labeled)] + p["gamma"] ** 2 * np.eye(labeled.size)
    expected = Sigma[:, labeled] @ np.linalg.solve(K, Y)
    got = clf.posterior_.latent(slice(None))
    np.testing.assert_allclose(got, expected, atol=1e-8 * np.abs(expected).max())
    ratio = p["eps"] * p["full_scale"] / p["spectral_scale"]
    D = 1.0 / (lam + p["tau_s"] ** 2) + ratio / (lam + p["tau_f"] ** 2)
    s = clf.posterior_.nugget
    assert 0 < s < D.min()
    H = np.diag(1.0 / (D - s)) + V[labeled].T @ V[labeled] / (clf.gamma_**2 + s)
    np.testing.assert_allclose(clf.posterior_cov(), np.linalg.inv(H), rtol=1e-8)
    np.testing.assert_array_equal(clf.predict(X), np.argmax(expected, axis=1))


def test_sum_warm_refit_equals_cold():
    X, y, y_true = _data()
    more = y.copy()
    new = np.flatnonzero(y == -1)[::5]  # 12 new labels on 9: the choice is made again
    more[new] = y_true[new]
    warm = SpectralGraphClassifier("mgr", model="sum", n_eigs=10, cache=False)
    warm.fit(X, y).fit(X, more)
    cold = SpectralGraphClassifier(
        "mgr", model="sum", n_eigs=10, cache=False, warm_start=False
    ).fit(X, more)
    assert warm.sum_prior_["eps"] == cold.sum_prior_["eps"]
    np.testing.assert_allclose(
        warm.posterior_.latent(slice(None)),
        cold.posterior_.latent(slice(None)),
        rtol=1e-7,
        atol=1e-9,
    )
    # Given tau and gamma, eps is chosen at every fit: warm equals cold for any growth.
    one = y.copy()
    one[new[0]] = y_true[new[0]]
    params = dict(model="sum", n_eigs=10, cache=False, tau=0.1, gamma=0.2)
    warm = SpectralGraphClassifier("mgr", **params).fit(X, y).fit(X, one)
    cold = SpectralGraphClassifier("mgr", warm_start=False, **params).fit(X, one)
    np.testing.assert_allclose(
        warm.posterior_.latent(slice(None)),
        cold.posterior_.latent(slice(None)),
        rtol=1e-7,
        atol=1e-9,
    )
    assert warm.sum_prior_["tau_f"] == warm.sum_prior_["tau_s"] == 0.1
    assert warm.sum_prior_["gamma"] == 0.2


def test_sum_refits_reuse_the_auto_choice(monkeypatch):
    import skmcal.classifier as module

    calls = []
    select = module.select_sum_hyperparameters

    def counting(spectral, full, targets, *args, **kwargs):
        calls.append(len(targets))
        return select(spectral, full, targets, *args, **kwargs)

    monkeypatch.setattr(module, "select_sum_hyperparameters", counting)
    X, y, y_true = _data()
    order = np.flatnonzero(y == -1)
    clf = SpectralGraphClassifier("mgr", model="sum", kernel="gaussian", n_eigs=10, cache=False)
    for extra in (0, 1, 2, 3):
        more = y.copy()
        more[order[:extra]] = y_true[order[:extra]]
        clf.fit(X, more)
    assert calls == [9, 12]


def test_sum_beyond_the_green_budget_keeps_one_full_tau(monkeypatch):
    import skmcal.fullgraph as module

    X, y, _ = _data()
    monkeypatch.setattr(module, "MAX_GREEN_BYTES", 8 * X.shape[0] * 10)  # 10 columns
    clf = SpectralGraphClassifier("mgr", model="sum", n_eigs=10, cache=False).fit(X, y)
    assert clf.sum_prior_["tau_f"] == SUM_FULL_TAUS[len(SUM_FULL_TAUS) // 2]


@pytest.mark.parametrize(
    "strategy", ["model_change", "vopt", "sopt", "uncertainty", "random_sampling"]
)
@pytest.mark.parametrize("batch", ["topk", "greedy"])
def test_every_strategy_runs_with_the_sum_model(strategy, batch):
    X, y, _ = _data()
    clf = SpectralGraphClassifier("mgr", model="sum", n_eigs=10, cache=False).fit(X, y)
    options = {"batch": batch}
    rows, scores = getattr(query, strategy)(clf, X, 3, random_state=0, **options)
    assert np.all(y[rows] == -1) and len(set(rows.tolist())) == 3
    assert np.all(np.isfinite(scores))


def test_sum_clone_params_and_grid_search():
    X, y, y_true = _data()
    clf = SpectralGraphClassifier("mgr", model="sum", nodes=NodeSet(X), n_eigs=10)
    assert clone(clf).get_params()["model"] == "sum"
    labeled = np.flatnonzero(y != -1)
    more = np.concatenate([labeled, np.flatnonzero(y == -1)[::4]])
    search = GridSearchCV(clf, {"n_neighbors": [5, 10]}, cv=3).fit(X[more], y_true[more])
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_score_ > 0.8


@pytest.mark.parametrize("loss", ["ce", "logistic", "probit"])
def test_sum_model_refuses_non_gaussian_losses(loss):
    X, y, _ = _data(2 if loss != "ce" else 3)
    with pytest.raises(
        ValueError, match=f"model='sum' takes the Gaussian losses 'gr' and 'mgr'; got loss='{loss}'"
    ):
        SpectralGraphClassifier(loss, model="sum", n_eigs=10, cache=False).fit(X, y)


@pytest.mark.parametrize("model", ["sum", "full"])
def test_threads_fitting_a_full_graph_model_on_one_graph_agree_with_a_serial_fit(model):
    """The fits share the graph's solver and its cached Green's columns: one at a time.

    Without the solver's lock, two threads both created the Green's columns of a tau
    and one read the other's (a KeyError, in most runs of this test).
    """
    X, y, _ = _data()
    nodes = NodeSet(X)
    labeled = np.flatnonzero(y != -1)
    clear_graph_cache()  # a new graph: a new solver, no Green's column solved yet
    fitted = run_concurrently(
        lambda i: SpectralGraphClassifier("mgr", model=model, nodes=nodes, n_eigs=10).fit(
            X[labeled], y[labeled]
        ),
        4,
    )
    clear_graph_cache()
    serial = SpectralGraphClassifier("mgr", model=model, nodes=nodes, n_eigs=10)
    serial.fit(X[labeled], y[labeled])
    for clf in fitted:
        assert clf.model_ == model
        np.testing.assert_allclose(clf.posterior_.latent(slice(None)),
                                   serial.posterior_.latent(slice(None)),
                                   rtol=1e-7, atol=1e-9)  # fmt: skip


@pytest.mark.parametrize("model", ["full", "sum"])
def test_auto_choice_does_not_depend_on_columns_cached_by_earlier_fits(monkeypatch, model):
    """Two estimators on one graph share its solver and the Green's columns it keeps;
    the columns an earlier fit left (other labels) must not change the next fit's
    hyperparameter rule (it did: their bytes counted against the budget)."""
    import skmcal.fullgraph as fullgraph

    X, _, y_true = _data()
    n_taus = len(SUM_FULL_TAUS)
    budget = 8 * X.shape[0] * (n_taus * 6 + 4)  # one fit's 6 columns per tau, not two fits'
    monkeypatch.setattr(fullgraph, "MAX_GREEN_BYTES", budget)
    pool = NodeSet(X)
    first, second = ([np.flatnonzero(y_true == c)[k : k + 2] for c in range(3)] for k in (0, 2))

    def fit(labeled):
        y = np.full(X.shape[0], -1)
        labeled = np.concatenate(labeled)
        y[labeled] = y_true[labeled]
        return SpectralGraphClassifier("mgr", model=model, nodes=pool, n_eigs=10).fit(X, y)

    clear_graph_cache()
    alone = fit(second)
    clear_graph_cache()
    fit(first)  # leaves its columns in the graph's solver
    after = fit(second)
    assert after.graph_ is not alone.graph_  # a graph (and solver) built afresh
    assert (after.tau_, after.gamma_) == (alone.tau_, alone.gamma_)
    if model == "sum":
        assert after.sum_prior_["tau_f"] == alone.sum_prior_["tau_f"]
        assert after.sum_prior_["eps"] == alone.sum_prior_["eps"]
    np.testing.assert_allclose(
        after.posterior_.latent(slice(None)), alone.posterior_.latent(slice(None)), atol=1e-8
    )
    # the solver keeps within the budget: the first fit's columns went
    solver = fullgraph.solver_for(after.graph_.weights)
    assert sum(g.n_columns for g in solver._greens.values()) * 8 * X.shape[0] <= budget


def test_given_tau_whose_prior_is_one_value_warns():
    """A given tau whose spectral prior puts all but SUM_MIN_STRUCTURE of its variance
    on the constant eigenvector: the summed model predicts the class most labeled at
    every node, and says so; at a usual tau it fits the blobs and says nothing."""
    X, y_true, labeled = blobs(
        3, 100, centers=[(0, 0), (4, 0), (2, 3)], labels=[0, 1, 2], n_labeled=6, seed=1
    )
    labeled = np.r_[labeled[:6], labeled[6:9], labeled[12:15]]  # 6, 3 and 3 labels
    y = semi_supervised(y_true, labeled)
    with pytest.warns(UserWarning, match=r"tau=1e-06 puts all but .* one value for every node"):
        flat = SpectralGraphClassifier("mgr", model="sum", tau=1e-6, n_eigs=20).fit(X, y)
    assert np.all(flat.transduction_ == 0)  # the class of 6 labels
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        usual = SpectralGraphClassifier("mgr", model="sum", tau=0.1, n_eigs=20).fit(X, y)
    assert np.mean(usual.transduction_ == y_true) > 0.85
