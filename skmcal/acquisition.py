"""Acquisition values on a Laplace posterior, vectorised over candidate nodes.

Each function takes a fitted posterior (:mod:`skmcal.posterior`: the
``posterior_`` of a :class:`~skmcal.SpectralGraphClassifier`) and an array of
candidate node indices, and returns one value per candidate; larger is
better. Adding node ``k`` with its pseudo-label moves the coefficients by
``-D_k R_k`` and the covariance by ``-D_k K_k D_k'``
(:class:`~skmcal.posterior.LookAheadTerms`), so that (``docs/math.rst``):

- model change, the norm of the change of the MAP: ``||D_k R_k|| =
  sqrt(R_k' (D_k' D_k) R_k)`` (exact for ``gr``/``mgr``, one Newton step
  otherwise);
- V-opt, the drop in ``tr(C)`` (the total variance): ``tr(K_k D_k' D_k)``;
- Sigma-opt, the drop in the survey risk ``w' C w`` with ``w = V' 1``:
  ``(D_k' w)' K_k (D_k' w)`` (``<V'1, C v_k>``, not the paper's ``<1, C
  v_k>``; summed over the classes for ce);
- uncertainty: smallest margin, entropy or least confidence.

``top`` (int or None) says that only the ``top`` largest values must be
exact. A posterior family with cheaper approximate values (``screening``:
both families, in single precision) then scores every candidate
approximately and rescores exactly those within ``SCREEN_RTOL`` (relative to
the largest value) of the ``top``-th: as long as the approximation error
stays below that margin (it is ~1e-5 of the largest value), the ``top``
largest returned values are the exact ones, and exact; the others keep
single-precision accuracy. Where the posterior bounds model-change values
from above (``change_bound``: ce), the candidates of the ``PROBE`` largest
bounds are scored first, and those whose bound falls below the margin of
their ``top``-th value (the floor) are not scored at all: their value is NaN.
The posterior may leave out more of the others by tighter bounds of its own
(``evaluate(..., floor=...)``; ce: after the small solve, before the second
quadratic form), with NaN values too.
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr

#: Screening applies above ``SCREEN_MIN`` candidates (or where the posterior
#: keeps approximate forms of them), rescoring within ``SCREEN_RTOL`` of the top.
SCREEN_MIN = 1024
SCREEN_RTOL = 1e-3

#: Candidates scored first where values have upper bounds (those of the largest bounds).
PROBE = 4096


def _model_change(t):
    squared = np.einsum("ask,abk,bsk->k", t.step, t.gram, t.step)
    return np.sqrt(np.clip(squared, 0.0, None))


# a posterior family may compute this formula's approximate values by a compiled kernel
_model_change.kernel = "model_change"


def _variance_drop(t):
    return np.einsum("abk,bak->k", t.gain, t.gram)


def _survey_drop(t):
    return np.einsum("atk,abk,btk->k", t.survey, t.gain, t.survey)


def _approximate(posterior, nodes, formula, top, bound, needs):
    """Approximate values of ``nodes`` and whether each was computed (see the module).

    With upper bounds ``bound(nodes)`` of the values (asked for above
    ``max(PROBE, top)`` nodes), the ``max(PROBE, top)`` nodes of the largest
    bounds are scored first; a node whose bound is below the floor ``t -
    SCREEN_RTOL * max(bound)``, ``t`` the ``top``-th of their values, is below
    every value the screening keeps, and is not scored. The others are scored
    with that floor: the posterior may leave out (``-inf``) those that a
    tighter bound of its own, found along the way, puts below it.
    """
    values = np.full(nodes.size, np.nan)

    def score(which, floor=None):
        with np.errstate(all="ignore"):  # overflow is detected by the caller
            values[which] = posterior.evaluate(
                formula, nodes[which], approximate=True, floor=floor, **needs
            )

    first = max(PROBE, top)
    bound = None if bound is None or nodes.size <= first else bound(nodes)
    if bound is None:
        score(slice(None))
        return values, np.ones(nodes.size, dtype=bool)
    probe = np.zeros(nodes.size, dtype=bool)
    probe[np.argpartition(bound, bound.size - first)[bound.size - first :]] = True
    score(probe)
    probed = values[probe]
    if not np.all(np.isfinite(probed)):
        return values, probe
    t = np.partition(probed, probed.size - top)[probed.size - top]
    floor = t - SCREEN_RTOL * bound.max()
    rest = ~probe & (bound >= floor)
    score(rest, floor)
    below = values == -np.inf  # left out by the posterior's own bound: below the floor too
    values[below] = np.nan
    return values, (probe | rest) & ~below


def _values(posterior, nodes, formula, top, bound=None, **needs):
    """``formula`` of the look-ahead terms of every node, screened when it pays.

    ``bound(nodes)``: upper bounds of the values (or None) that screening may use.
    """
    nodes = np.asarray(nodes, dtype=np.intp)

    def exact(which):
        return posterior.evaluate(formula, which, **needs)

    kept = posterior.kept_for(nodes)
    small = nodes.size <= max(SCREEN_MIN, top or 0) and not kept
    if top is None or not posterior.screening or small:
        return exact(nodes)
    top = min(top, nodes.size)
    values, scored = _approximate(posterior, nodes, formula, top, None if kept else bound, needs)
    if not np.all(np.isfinite(values[scored])):  # overflow in single precision: no screening
        return exact(nodes)
    finite = values[scored]
    kth = np.partition(finite, finite.size - top)[finite.size - top]
    shortlist = np.flatnonzero(scored & (values >= kth - SCREEN_RTOL * max(finite.max(), 0.0)))
    values[shortlist] = exact(nodes[shortlist])
    return values


def model_change(posterior, nodes, *, top=None):
    """Norm of the change of the MAP when each node is added with its pseudo-label.

    Binary: ``|F| / (1 + F' s_k) ||C v_k||``; mgr: ``||C v_k|| ||A' v_k -
    yhat|| / (gamma^2 + s_k)``; ce: ``||(1/g) C V_k' (I + B_k G_k)^-1 (pi_k -
    yhat_k)||``. ``top``: see the module documentation (with ``top``, values
    provably below the ``top`` largest may be NaN).
    """
    return _values(posterior, nodes, _model_change, top, posterior.change_bound, gain=False)


def vopt(posterior, nodes, *, top=None):
    """V-opt: drop in ``tr(V C V')`` (the total posterior variance) per node.

    ``F' ||C v_k||^2 / (1 + F' s_k)`` for the rank-one family, with ``F' =
    1/gamma^2`` for gr/mgr (exact) and the loss curvature at the pseudo-label
    otherwise (Laplace); ``tr(K_k D_k' D_k)`` for ce.
    """
    return _values(posterior, nodes, _variance_drop, top)


def sopt(posterior, nodes, *, top=None):
    """Sigma-opt: drop in ``1' V C V' 1`` (the survey risk) per node.

    ``F' <V'1, C v_k>^2 / (1 + F' s_k)`` (``docs/math.rst`` corrects the paper's
    ``<1, C v_k>``); for mgr, whose classes share ``C``, the same value. For
    ce the survey risk is summed over the classes, ``sum_c 1'V C_cc V'1``.
    """
    return _values(posterior, nodes, _survey_drop, top, survey=posterior.column_sums())


UNCERTAINTY_MEASURES = ("margin", "entropy", "least_confident")


def uncertainty(posterior, nodes, measure="margin"):
    """Uncertainty of each node: larger is more uncertain.

    ``margin``: minus the gap between the two largest latent class values
    (binary: ``-|u|``); ``entropy``: entropy of the class probabilities of
    ``predict_proba``; ``least_confident``: one minus the largest of them.
    """
    if measure not in UNCERTAINTY_MEASURES:
        raise ValueError(f"measure must be one of {UNCERTAINTY_MEASURES}; got {measure!r}.")
    nodes = np.asarray(nodes, dtype=np.intp)
    if measure == "margin":
        U = posterior.latent(nodes)
        if U.ndim == 1:
            return -np.abs(U)
        top2 = np.partition(U, U.shape[1] - 2, axis=1)[:, -2:]
        return -(top2[:, 1] - top2[:, 0])
    proba = posterior.proba(nodes)
    if measure == "entropy":
        return entr(proba).sum(axis=1)
    return 1.0 - proba.max(axis=1)


def look_ahead(posterior, node):
    """The posterior after adding ``node`` with its pseudo-label.

    gr/mgr: the exact refit. logistic/probit/ce: one Newton step from the MAP
    and the covariance at the old MAP plus the new curvature (the same
    quantities the acquisition values use).
    """
    return posterior.look_ahead(node)
