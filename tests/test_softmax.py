"""skmcal.softmax: the fast path of the ce posterior family.

Batched small solves against dense ones; the quadratic forms of candidates,
computed directly, through the products ``v_m v_m'``, or kept up to date in
single precision through the look-ahead updates of a greedy batch, against
each other and the brute-force look-ahead of ``tests/_oracle.py``
(docs/math.rst, "Cross-entropy: the look-ahead without a Cholesky factor").
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from skmcal import acquisition, softmax
from skmcal.acquisition import look_ahead

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
        view, acquisition.model_change, look_ahead, np.arange(bf.N), rows, 4, "greedy",
        np.random.RandomState(0),
    )
    np.testing.assert_array_equal(indices, expected[0])
    np.testing.assert_allclose(scores, expected[1], rtol=1e-10)


def test_ce_forms_of_no_nodes():
    _clf, _bf, view = look_ahead_setup("ce", "auto")
    forms = view.prepare([]).forms
    assert forms.G.shape == forms.G2.shape == (2, 2, 0) and forms.nodes.size == 0
