"""skmcal.softmax: the fast path of the ce posterior family.

Batched small solves against dense ones; the quadratic forms of candidates,
computed directly, through the products ``v_m v_m'``, or kept up to date in
single precision through the look-ahead updates of a greedy batch, against
each other and the brute-force look-ahead of ``tests/_oracle.py``
(docs/math.rst, "Cross-entropy: the look-ahead without a Cholesky factor").
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np
import pytest

from skmcal import acquisition, softmax
from skmcal.acquisition import look_ahead
from skmcal.posterior import zero_sum_basis

from _oracle import LOOK_AHEAD_SETTINGS, assert_close, ce_many_classes, look_ahead_setup


def test_spd_solve_batched_matches_dense_solves():
    rng = np.random.RandomState(0)
    n, r, K = 7, 3, 40
    W = rng.randn(K, n, n)
    A = W @ W.transpose(0, 2, 1) + 1e-3 * np.eye(n)  # condition numbers up to ~1e5
    B = rng.randn(K, n, r)
    X = softmax.spd_solve_batched(A.transpose(1, 2, 0), B.transpose(1, 2, 0))
    np.testing.assert_allclose(X.transpose(2, 0, 1), np.linalg.solve(A, B), rtol=1e-8, atol=1e-8)


def test_ce_direct_forms_equal_the_product_forms():
    for _clf, bf, view in (look_ahead_setup("ce", "auto"), ce_many_classes()):
        nodes = bf.unlabeled
        direct = view._direct(nodes)[:2]
        products = view._forms(nodes, view.eigenvectors[nodes], view._form_coefficients())
        for a, b in zip(direct, products, strict=True):
            assert_close(a, b, rtol=1e-11)


@pytest.mark.parametrize("setting", list(LOOK_AHEAD_SETTINGS) + ["six classes"])
def test_ce_values_through_the_product_forms_match_brute_force(setting, monkeypatch):
    """Above DIRECT_MAX nodes the forms come from the products v_m v_m': same values."""
    if setting == "six classes":
        clf, bf, view = ce_many_classes()
    else:
        clf, bf, view = look_ahead_setup("ce", setting)
    monkeypatch.setattr(softmax, "DIRECT_MAX", 0)
    nodes = bf.unlabeled
    assert_close(acquisition.model_change(view, nodes), [bf.model_change(k) for k in nodes])
    assert_close(acquisition.vopt(view, nodes), [bf.vopt(k) for k in nodes])
    assert_close(acquisition.sopt(view, nodes), [bf.sopt_per_class(k) for k in nodes])


def test_ce_forms_follow_the_look_ahead_updates(monkeypatch):
    """float32 forms kept by look_ahead (rank n_c - 1 updates) track the recomputed forms."""
    monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
    for _clf, bf, view in (look_ahead_setup("ce", "custom"), ce_many_classes()):
        nodes = bf.unlabeled
        state = view.prepare(nodes[::-1])
        assert state.forms.covers(nodes) and not state.forms.covers(bf.labeled[:1])
        for node in nodes[:3]:
            state = look_ahead(state, node)
            plain = replace(state, forms=None)
            exact_G, exact_G2, _ = plain._direct(nodes)
            kept_G, kept_G2 = state.forms.take(nodes)
            assert kept_G.dtype == np.float32
            assert_close(kept_G, exact_G, rtol=1e-5)
            assert_close(kept_G2, exact_G2, rtol=1e-5)
            for f in (acquisition.model_change, acquisition.vopt, acquisition.sopt):
                exact = f(plain, nodes)
                assert_close(f(state, nodes), exact, rtol=1e-10)  # no top: no screening
                screened = f(state, nodes, top=2)
                best = np.argsort(-exact, kind="stable")[:2]
                np.testing.assert_array_equal(np.argsort(-screened, kind="stable")[:2], best)
                np.testing.assert_allclose(screened[best], exact[best], rtol=1e-10)


def test_ce_greedy_batch_with_kept_forms_equals_rescoring_from_scratch():
    from skmcal.query import model_change
    from skmcal.selection import choose

    clf, bf, view = look_ahead_setup("ce", "auto")
    indices, scores = model_change(clf, bf.X, 4, batch="greedy", random_state=0)
    rows = np.flatnonzero(bf.y == -1)  # X is the node set: rows are nodes
    expected = choose(
        view,
        acquisition.model_change,
        look_ahead,
        np.arange(bf.N),
        rows,
        4,
        "greedy",
        np.random.RandomState(0),
    )
    np.testing.assert_array_equal(indices, expected[0])
    np.testing.assert_allclose(scores, expected[1], rtol=1e-10)


def test_ce_forms_of_no_nodes():
    _clf, _bf, view = look_ahead_setup("ce", "auto")
    forms = view.prepare([]).forms
    assert forms.G.shape == forms.G2.shape == (2, 2, 0) and forms.nodes.size == 0


# ------------------------------------------------------------------ fast paths
# ce_many_classes with 2, 3 and 10 classes, two seeds each.
FAST_SETUPS = [(n_classes, seed) for n_classes in (2, 3, 10) for seed in (0, 1)]

needs_numba = pytest.mark.skipif(
    softmax.model_change_kernel() is None, reason="the compiled kernel needs numba"
)


def every_fast_path(monkeypatch):
    """Screening, pruning by the bounds and the compiled kernel from the first candidate."""
    monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
    monkeypatch.setattr(acquisition, "PROBE", 3)
    monkeypatch.setattr(softmax, "KERNEL_MIN", 0)
    monkeypatch.setattr(softmax, "SPLIT_MIN", 0)


def no_fast_path(monkeypatch):
    """Screening with numpy's float32 values of every candidate, as before the fast paths."""
    monkeypatch.setattr(acquisition, "SCREEN_MIN", 0)
    monkeypatch.setattr(acquisition, "PROBE", 10**9)
    monkeypatch.setattr(softmax, "KERNEL_MIN", 10**9)


def dense_zero_sum_covariance(view):
    """``(E (x) I)' C (E (x) I)``, densely."""
    basis = np.kron(zero_sum_basis(view.n_classes), np.eye(view.eigenvectors.shape[1]))
    return basis.T @ view.cov @ basis


@pytest.mark.parametrize(("n_classes", "seed"), FAST_SETUPS)
def test_change_bound_is_above_the_brute_force_values(n_classes, seed):
    _clf, bf, view = ce_many_classes(n_classes, seed)
    nodes = bf.unlabeled
    exact = np.array([bf.model_change(k) for k in nodes])
    bound = view.change_bound(nodes)
    assert np.all(bound >= exact * (1.0 - 1e-12))
    assert np.median(bound / exact) < 5.0  # not vacuous
    # lambda: here just above the largest eigenvalue of the covariance on the zero-sum subspace
    largest = np.linalg.eigvalsh(dense_zero_sum_covariance(view))[-1]
    assert largest <= view._change_scale <= 1.01 * largest


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_change_bound_holds_for_a_covariance_that_mixes_the_subspaces(seed):
    """Any positive definite covariance: lambda from the pencil (Y Y', C~), not lambda_max(C~)."""
    _clf, bf, view = ce_many_classes(3, 0)
    rng = np.random.RandomState(seed)
    A = rng.randn(view.cov.shape[0], view.cov.shape[0])
    mixed = replace(view, cov=view.cov + 0.05 * np.abs(view.cov).max() * (A @ A.T) / A.shape[0])
    nodes = bf.unlabeled
    exact = acquisition.model_change(mixed, nodes)
    assert np.all(mixed.change_bound(nodes) >= exact * (1.0 - 1e-12))
    assert mixed._change_scale > np.linalg.eigvalsh(dense_zero_sum_covariance(mixed))[-1]


@pytest.mark.parametrize(("n_classes", "seed"), FAST_SETUPS)
def test_the_scale_from_the_split_equals_the_scale_by_lanczos(n_classes, seed, monkeypatch):
    """Where the split is computed first, lambda comes from its leading eigenvalue."""
    _clf, bf, view = ce_many_classes(n_classes, seed)
    by_lanczos = replace(view)._change_scale
    after_split = replace(view)
    assert after_split._change_split is not None

    def no_lanczos(*args, **kwargs):
        raise AssertionError("the split's eigenvalue is there")

    monkeypatch.setattr(softmax, "eigsh", no_lanczos)
    scale = after_split._change_scale
    monkeypatch.undo()
    assert scale == pytest.approx(by_lanczos, rel=1e-5)
    largest = np.linalg.eigvalsh(dense_zero_sum_covariance(view))[-1]
    assert largest <= scale <= 1.01 * largest
    exact = np.array([bf.model_change(k) for k in bf.unlabeled])
    assert np.all(after_split.change_bound(bf.unlabeled) >= exact * (1.0 - 1e-12))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_scale_from_the_split_of_a_mixing_covariance_bounds(seed):
    """The pencil's split: its leading eigenvalue is the least lambda, still a bound."""
    _clf, bf, view = ce_many_classes(3, 0)
    rng = np.random.RandomState(seed)
    A = rng.randn(view.cov.shape[0], view.cov.shape[0])
    mixed = replace(view, cov=view.cov + 0.05 * np.abs(view.cov).max() * (A @ A.T) / A.shape[0])
    assert mixed._change_split is not None
    exact = acquisition.model_change(mixed, bf.unlabeled)
    assert np.all(mixed.change_bound(bf.unlabeled) >= exact * (1.0 - 1e-12))
    assert mixed._change_scale > np.linalg.eigvalsh(dense_zero_sum_covariance(mixed))[-1]


def test_no_change_bound_without_a_positive_definite_covariance():
    _clf, bf, view = ce_many_classes(3, 0)
    singular = replace(view, cov=np.zeros_like(view.cov))
    assert singular.change_bound(bf.unlabeled) is None
    assert acquisition.vopt(view, bf.unlabeled[:0]).shape == (0,)


@needs_numba
@pytest.mark.parametrize(("n_classes", "seed"), FAST_SETUPS)
def test_compiled_values_match_the_brute_force_and_numpy_values(n_classes, seed, monkeypatch):
    _clf, bf, view = ce_many_classes(n_classes, seed)
    nodes = bf.unlabeled
    exact = np.array([bf.model_change(k) for k in nodes])

    def approximate(state):
        return state.evaluate(acquisition._model_change, nodes, approximate=True, gain=False)

    numpy_values = approximate(view)
    monkeypatch.setattr(softmax, "KERNEL_MIN", 0)
    compiled = approximate(view)
    assert not np.array_equal(compiled, numpy_values)  # the kernel did run
    for values in (numpy_values, compiled, approximate(view.prepare(nodes))):  # kept forms too
        np.testing.assert_allclose(values, exact, rtol=2e-5, atol=1e-6 * exact.max())


def no_split(monkeypatch):
    """The compiled path without the split bounds (as where none is proven)."""
    monkeypatch.setattr(softmax.SoftmaxPosterior, "_change_split", property(lambda self: None))


@pytest.mark.parametrize("batch", ["topk", "greedy"])
@pytest.mark.parametrize(("n_classes", "seed"), FAST_SETUPS)
def test_fast_paths_keep_the_picks_and_their_values(n_classes, seed, batch, monkeypatch):
    from skmcal.query import model_change

    clf, bf, _view = ce_many_classes(n_classes, seed)

    def picks():
        return model_change(clf, bf.X, 4, batch=batch, random_state=seed)

    no_fast_path(monkeypatch)
    indices, scores = picks()
    every_fast_path(monkeypatch)
    variants = [
        ("kernel, split bounds", softmax.model_change_kernel, None),
        ("kernel alone", softmax.model_change_kernel, no_split),
        ("without numba: pruning alone", lambda: None, None),
    ]
    for _name, kernel, change in variants:
        with monkeypatch.context() as patch:
            patch.setitem(softmax._KERNELS, "model_change", kernel)
            if change is not None:
                change(patch)
            fast_indices, fast_scores = picks()
        np.testing.assert_array_equal(fast_indices, indices)
        np.testing.assert_array_equal(fast_scores, scores)
    monkeypatch.undo()
    if batch == "topk":
        assert_close(fast_scores, [bf.model_change(k) for k in indices])


def split_bounds(view, nodes):
    """``(before, after)``: the :class:`ChangeSplit` bounds of ``nodes`` before the step and
    given the step, by the compiled kernels on the float32 forms."""
    split = view._change_split
    before, after = softmax.split_kernels()
    V = view.eigenvectors[nodes]
    U = view.latent(nodes, V)
    projections = split.projections(np.ascontiguousarray(V.T, dtype=np.float32))
    early = np.empty(nodes.size, np.float32)
    before(projections, np.ascontiguousarray(U.T), view.gamma, split.rest, split.weights, early)
    G = view._packed(nodes, V, view._coefficients[1], 0)
    steps, quadratic = view._kernel_steps(softmax.model_change_kernel(), U, G)
    late = np.empty(nodes.size, np.float32)
    basis = zero_sum_basis(view.n_classes)
    positions = np.arange(nodes.size)
    after(projections, positions, steps, basis, quadratic, split.rest, split.weights, late)
    return early.astype(float), late.astype(float)


def split_excess(view):
    """``rest C~ + sum_i weights_i c_i c_i' - Y Y'`` densely, ``c_i`` from the float32 basis."""
    split = view._change_split
    n_c, M = view.n_classes, view.eigenvectors.shape[1]
    E = zero_sum_basis(n_c)
    blocks = np.matmul(E.T, split.basis.astype(float).reshape(-1, n_c, M))  # (r, d, M)
    directions = blocks.reshape(split.weights.size, -1).T
    projected, square = view._zero_sum_blocks
    return split.rest * projected + (directions * split.weights) @ directions.T - square


@pytest.mark.parametrize("rank", [softmax.SPLIT_RANK, 2])
@pytest.mark.parametrize(("n_classes", "seed"), FAST_SETUPS)
def test_change_split_bounds_the_square_of_the_covariance(n_classes, seed, rank, monkeypatch):
    """Dense eigenpairs (2, 3 classes), Lanczos (10 classes at the default rank), a rest or none."""
    monkeypatch.setattr(softmax, "SPLIT_RANK", rank)
    view = replace(ce_many_classes(n_classes, seed)[2])  # a fresh copy: nothing cached
    split = view._change_split
    n = view._zero_sum_blocks[0].shape[0]
    assert split.weights.size == min(rank, n) and np.all(np.diff(split.weights) <= 0)
    assert (split.rest == 0.0) == (rank >= n)
    square = view._zero_sum_blocks[1]
    # float32 directions: positive semidefinite to single precision
    assert np.linalg.eigvalsh(split_excess(view))[0] >= -1e-5 * np.abs(square).max()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_change_split_holds_for_a_covariance_that_mixes_the_subspaces(seed, monkeypatch):
    """From the pencil (Y Y', C~) where Y Y' is not C~^2."""
    monkeypatch.setattr(softmax, "SPLIT_RANK", 4)
    _clf, _bf, view = ce_many_classes(3, 0)
    rng = np.random.RandomState(seed)
    A = rng.randn(view.cov.shape[0], view.cov.shape[0])
    mixed = replace(view, cov=view.cov + 0.05 * np.abs(view.cov).max() * (A @ A.T) / A.shape[0])
    projected, square = mixed._zero_sum_blocks
    assert not np.allclose(square, projected @ projected)
    assert np.linalg.eigvalsh(split_excess(mixed))[0] >= -1e-5 * np.abs(square).max()


def test_no_change_split_without_a_positive_definite_covariance():
    _clf, _bf, view = ce_many_classes(3, 0)
    assert replace(view, cov=np.zeros_like(view.cov))._change_split is None


@needs_numba
@pytest.mark.parametrize("rank", [softmax.SPLIT_RANK, 2])
@pytest.mark.parametrize(("n_classes", "seed"), FAST_SETUPS)
def test_split_bounds_are_above_the_brute_force_values(n_classes, seed, rank, monkeypatch):
    monkeypatch.setattr(softmax, "SPLIT_RANK", rank)
    _clf, bf, view = ce_many_classes(n_classes, seed)
    view = replace(view)  # a fresh copy: nothing cached
    nodes = bf.unlabeled
    exact = np.array([bf.model_change(k) for k in nodes])
    early, late = split_bounds(view, nodes)
    for bound in (early, late):  # float32 forms: to single precision
        assert np.all(bound >= exact * (1.0 - 1e-5) - 1e-6 * exact.max())
    # never above the bound from the latent values alone; given the step, tighter still
    assert np.all(early <= view.change_bound(nodes) * (1.0 + 1e-5))
    assert np.median(late / exact) < np.median(early / exact) < 5.0


@needs_numba
@pytest.mark.parametrize(("n_classes", "seed"), FAST_SETUPS)
def test_a_floor_leaves_out_only_values_below_it(n_classes, seed, monkeypatch):
    monkeypatch.setattr(softmax, "SPLIT_RANK", 2)
    monkeypatch.setattr(softmax, "KERNEL_MIN", 0)
    monkeypatch.setattr(softmax, "SPLIT_MIN", 0)
    _clf, bf, view = ce_many_classes(n_classes, seed)
    view = replace(view)  # a fresh copy: nothing cached
    nodes = bf.unlabeled
    exact = np.array([bf.model_change(k) for k in nodes])

    def approximate(floor):
        return view.evaluate(
            acquisition._model_change, nodes, approximate=True, gain=False, floor=floor
        )

    plain = approximate(None)
    floor = np.quantile(exact, 0.5)
    screened = approximate(floor)
    left_out = screened == -np.inf
    assert left_out.any() and not left_out.all()
    assert np.all(exact[left_out] < floor)
    # the same float32 forms (from products of another shape: to single precision)
    np.testing.assert_allclose(screened[~left_out], plain[~left_out], rtol=1e-5)
    assert view.evaluate(
        acquisition._model_change, nodes[:0], approximate=True, gain=False, floor=floor
    ).shape == (0,)


@pytest.mark.parametrize("n_classes", [2, 3, 10])
def test_pruned_screening_scores_what_can_reach_the_top(n_classes, monkeypatch):
    """Candidates left out (NaN) have a bound below the top values; the top stays exact."""
    _clf, bf, view = ce_many_classes(n_classes, 0)
    nodes = bf.unlabeled
    exact = acquisition.model_change(view, nodes)
    every_fast_path(monkeypatch)
    screened = acquisition.model_change(view, nodes, top=2)
    left_out = np.isnan(screened)
    assert left_out.any() and not left_out.all()
    kth = np.sort(exact)[-2]
    bounds = [view.change_bound(nodes)]
    if softmax.model_change_kernel() is not None:  # and the split bounds on the compiled path
        bounds.extend(split_bounds(view, nodes))
    assert np.all(np.min(bounds, axis=0)[left_out] < kth)
    best = np.argsort(-exact, kind="stable")[:2]
    np.testing.assert_array_equal(np.argsort(-np.nan_to_num(screened, nan=-1.0))[:2], best)
    # exact (to rounding: the exact values of a batch of nodes may differ in the last bit)
    np.testing.assert_allclose(screened[best], exact[best], rtol=1e-14)
    np.testing.assert_allclose(screened[~left_out], exact[~left_out], rtol=2e-5)


def test_fast_paths_break_ties_like_the_plain_screening(monkeypatch):
    """Nodes with equal eigenvector rows tie exactly; the random order decides, as before."""
    from skmcal.selection import choose

    _clf, bf, view = ce_many_classes(3, 0)
    V = view.eigenvectors
    twins = np.vstack([V, V[bf.unlabeled]])  # every unlabeled node twice
    state = replace(view, eigenvectors=twins)
    rows = np.concatenate([bf.unlabeled, V.shape[0] + np.arange(bf.unlabeled.size)])

    def picks(seed):
        return choose(
            state, lambda s, nodes: acquisition.model_change(s, nodes, top=4), look_ahead,
            np.arange(twins.shape[0]), rows, 4, "topk", np.random.RandomState(seed),
        )  # fmt: skip

    for seed in range(3):
        no_fast_path(monkeypatch)
        indices, scores = picks(seed)
        assert scores[0] == scores[1]  # the best node and its twin
        every_fast_path(monkeypatch)
        fast_indices, fast_scores = picks(seed)
        np.testing.assert_array_equal(fast_indices, indices)
        np.testing.assert_array_equal(fast_scores, scores)


@needs_numba
def test_compiled_products_equal_numpy_products():
    _clf, bf, view = ce_many_classes(10, 0)
    V = view.eigenvectors[bf.unlabeled]
    coefficients = view._coefficients[1]
    compiled = view._packed_forms(V, coefficients, softmax.products_kernel())
    np.testing.assert_array_equal(compiled, view._packed_forms(V, coefficients))


def test_a_query_sets_the_bounds_up_while_it_draws_its_candidates(monkeypatch):
    """model_change starts change_bound's set-up (the form coefficients, the split, the
    scale) in the background before it draws the candidates; it picks what a query
    without the early start picks, and leaves nothing running or unpicklable behind."""
    import pickle

    from skmcal import selection
    from skmcal.query import model_change

    every_fast_path(monkeypatch)
    clf, _bf, _view = ce_many_classes(10, 0)
    seen = []
    draw = selection.candidate_rows

    def spied(*args, **kwargs):
        started = clf.posterior_.__dict__.get("_bound_started")
        seen.append(started is not None and started[0])  # split asked for (SPLIT_MIN 0)
        return draw(*args, **kwargs)

    monkeypatch.setattr(selection, "candidate_rows", spied)
    early = model_change(clf, clf.node_set_, n_instances=3, batch="topk", random_state=0)
    assert seen == [True]
    state = clf.posterior_.__dict__
    assert "_bound_started" not in state and "_change_split" in state and "_coefficients" in state
    pickle.dumps(clf)

    clf, _bf, _view = ce_many_classes(10, 0)  # a fresh posterior, no early start
    monkeypatch.setattr(
        softmax.SoftmaxPosterior, "change_bound_ahead", lambda self, n: contextlib.nullcontext()
    )
    late = model_change(clf, clf.node_set_, n_instances=3, batch="topk", random_state=0)
    assert seen == [True, False]
    np.testing.assert_array_equal(early[0], late[0])
    np.testing.assert_array_equal(early[1], late[1])


def test_change_bound_after_an_early_start_for_fewer_nodes_adds_the_split(monkeypatch):
    """A set-up started for fewer than SPLIT_MIN nodes, then bounds of more: the split is
    computed after it (waited for), and the bounds equal those of a cold posterior."""
    _clf, bf, view = ce_many_classes(3, 1)
    nodes = bf.unlabeled
    monkeypatch.setattr(softmax, "SPLIT_MIN", nodes.size)
    cold = replace(view).change_bound(nodes)
    warm = replace(view)
    with warm.change_bound_ahead(nodes.size - 1):
        assert warm.__dict__["_bound_started"][0] is False
        bound = warm.change_bound(nodes)
        assert "_change_split" in warm.__dict__
    assert "_bound_started" not in warm.__dict__
    exact = np.array([bf.model_change(k) for k in nodes])
    assert np.all(bound >= exact * (1.0 - 1e-12))
    # the scale by Lanczos (before the split) or from the split: equal within Lanczos' tolerance
    np.testing.assert_allclose(bound, cold, rtol=1e-5)


def test_queries_of_one_posterior_from_several_threads_with_the_early_start(monkeypatch):
    """Threads that query one fitted classifier at once share its posterior's set-up:
    each gets the serial picks, and none is left running."""
    from skmcal.query import model_change

    from _oracle import run_concurrently

    every_fast_path(monkeypatch)
    clf = ce_many_classes(10, 0)[0]
    serial = model_change(clf, clf.node_set_, n_instances=3, batch="topk", random_state=0)
    clf = ce_many_classes(10, 0)[0]  # a fresh posterior: nothing set up yet
    results = run_concurrently(
        lambda i: model_change(clf, clf.node_set_, n_instances=3, batch="topk", random_state=0),
        4,
    )
    for indices, scores in results:
        np.testing.assert_array_equal(indices, serial[0])
        np.testing.assert_array_equal(scores, serial[1])
    assert "_bound_started" not in clf.posterior_.__dict__
