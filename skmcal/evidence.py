"""Log evidence of the spectral model, and (tau, gamma) chosen by maximising it.

The spectral model's prior is ``alpha ~ N(0, Lambda_tau^-1)``, ``Lambda_tau =
diag(lambda_i + tau^2)``, and the latent values at the labeled nodes are
``P alpha`` (``P`` the eigenvector rows of those nodes). The evidence, or
type-II likelihood, is the probability of the labels with ``alpha``
integrated out.

Gaussian losses (``gr``; ``mgr`` column by column, the one-hot columns being
independent given the shared prior), exactly: ``y ~ N(0, S)``, ``S = gamma^2 I
+ P Lambda_tau^-1 P'``. With ``A = Lambda_tau + P'P / gamma^2``,

    log Z = -1/2 y'S^-1 y - 1/2 log|S| - n/2 log 2 pi,
    S^-1 = I / gamma^2 - P A^-1 P' / gamma^4,
    log|S| = n log gamma^2 + log|A| - log|Lambda_tau|.

``logistic``, ``probit`` and ``ce`` by the Laplace approximation around the MAP
``a`` of :func:`skmcal.fitting.newton_map`, with ``H`` the Hessian there (its log
determinant from the Cholesky factor of Newton's last Hessian):

    log Z ~ -sum_j loss(p_j'a, y_j) - 1/2 a'Lambda_tau a - 1/2 log|H| + 1/2 log|Lambda_tau|.

For ``ce`` the likelihood is flat along the class-shift directions, where
``H`` equals the prior; those directions cancel, and the determinants are
taken on the zero-class-mean subspace: ``log|H~| - (n_c - 1) log|Lambda_tau|``
with ``H~ = (E (x) I)' H (E (x) I)``. All three likelihoods are normalised over
the labels for every ``gamma``, so their evidences compare across ``gamma``.

The grid's gammas are relative to the prior's scale (``n_nodes`` of
:func:`select_hyperparameters`, what ``gamma="auto"`` uses). The eigenvectors
have unit norm, so the prior variance of a node's latent value averages
``sum_k 1/(lambda_k + tau^2) / N``: it falls as ``1/N``, and at ten million
nodes labels of size one are far outside the prior. The evidence then prefers
a large gamma (labels as noise), the MAP is the prior's covariance times the
labels, and the constant eigenvector, with the largest prior variance
``1/tau^2``, adds to each class an offset that grows with its number of
labels: one class wins everywhere (``mgr`` fell to 0.20 accuracy on the
ten-million-node benchmark). Grid point ``(tau, g)`` is therefore the model
with the prior ``s Lambda_tau^-1``, ``s =`` :func:`prior_scale` (unit mean
node variance), and noise or temperature
``g``. Its MAP and predictions are those of the unscaled model at ``gamma =
g / sqrt(s)`` and its covariance is ``s`` times that model's, so the chosen
gamma is reported as ``g / sqrt(s)`` and every query strategy picks the same
nodes under either description. For ``logistic``, ``probit`` and ``ce`` the
two evidences are equal (the Laplace determinants' factors of ``s``
cancel); for ``gr``/``mgr`` they differ by ``n k log(s) / 2``, ``k`` the
number of target columns.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from numbers import Real

import numpy as np
from scipy.special import log_ndtr
from sklearn.exceptions import ConvergenceWarning

from ._threads import scoring_threads, with_small_algebra
from .fitting import _weighted, check_weights, newton_map
from .posterior import cho_logdet, cho_solve, cholesky

#: The default grids of :func:`select_hyperparameters`. Bounded above in tau:
#: a large tau swamps the graph's eigenvalues (the prior forgets the graph),
#: yet with a label or two per class the mgr evidence prefers the largest tau
#: offered (two moons, 3 labels per class: 93.5% accuracy at tau = 0.3, 100%
#: at tau <= 0.1; three separated blobs, one label each: 75% at tau = 1); the
#: evidence chose tau = 0.1 on MNIST-test, where it held.
DEFAULT_TAUS = (0.01, 0.03, 0.1)
#: The gammas of ``gamma="auto"`` for ``gr``/``mgr``, relative to the prior's
#: scale (``n_nodes`` of :func:`select_hyperparameters`).
DEFAULT_GAMMAS = (0.1, 0.2, 0.5, 1.0)
#: The gammas of ``gamma="auto"`` for ``logistic``, ``probit`` and ``ce``,
#: relative to the prior's scale. Bounded below: with a few labels their
#: evidence keeps rising as gamma falls (sharper probabilities, still
#: separable labels), and sharp probabilities cost accuracy. With ``ce`` and
#: greedy model change over 5 trials of MNIST-test, this grid gave 0.906 /
#: 0.933 / 0.948 accuracy at 50 / 100 / 200 labels and no batch of 5 cost
#: more than 2.6 points; the grid (0.1, 0.2, 0.5, 1) gave 0.792 / 0.821 /
#: 0.909 (worst batch 3.9 points; 7.1 with top-k batches).
LAPLACE_GAMMAS = (0.5, 1.0, 2.0)

#: The taus of ``gamma="auto"`` / ``tau="auto"`` for the full-graph ``gr``/``mgr``
#: model (:func:`select_full_hyperparameters`). Its evidence rose as tau fell on
#: every data set of ``benchmarks/bench_accuracy.py`` (MNIST-test, Samson,
#: digits: tau = 0.001 beat 0.01; binary clusters: 0.03 or 0.01), and the accuracy
#: moved by at most a few points between 0.001 and 0.1; the floor keeps
#: ``L + tau^2 I`` well conditioned for the sparse solves.
FULL_TAUS = (0.01, 0.03, 0.1)
#: The gammas of the full-graph ``gr``/``mgr`` model (the unscaled model's: the
#: amplitude is profiled out). Its evidence took the smallest offered on every
#: data set (the labels interpolated), and its MAP's accuracy was flat below
#: gamma = 0.3; the floor is set by the spectral covariance that the query
#: strategies take around that MAP: with model change on MNIST-test (3 trials)
#: a floor of 0.01 / 0.03 / 0.1 gave 0.75 / 0.77 / 0.84 accuracy at 50 labels
#: and 0.87 / 0.93 / 0.94 at 200.
FULL_GAMMAS = (0.1, 0.2, 0.5, 1.0)
#: Residual norm of the Green's columns (unit right-hand sides) that the
#: classifier's search of :data:`FULL_TAUS` solves at the taus other than its
#: last choice (its ``tol`` where that is larger; a fit refines a chosen tau's
#: columns to ``tol``), their entries corrected to second order by the
#: residuals (:func:`skmcal.fullgraph.green_block`, ``second_order``): off by
#: at most ``FULL_EVIDENCE_TOL^2 / tau^2``, the bound of 1e-4 without the
#: correction, the value before. On Fashion-MNIST (70,000 nodes, full
#: ``mgr``, 60 to 150 labels of model change) the columns started from the
#: last choice's (``_borrow()``) had residuals of 1.1e-3 to 2.1e-3 without an
#: iteration, and the corrected entries were within 5.5e-5 of a tight
#: solve's (1e-4 without the correction: 6.9e-5, 1.85 iterations per column;
#: the taus' best log evidences 20 to 25 apart there, the tables within
#: 0.001 of the tight ones).
FULL_EVIDENCE_TOL = 1e-2

_LOG_2PI = np.log(2.0 * np.pi)


def _gaussian_evidence(prior, P, targets, gamma, weights=None):
    Y = targets[:, None] if targets.ndim == 1 else targets
    if weights is not None:
        # noise gamma^2 / w_j at row j: the unit-noise model of rows scaled by sqrt(w_j),
        # whose density differs by the Jacobian prod_j sqrt(w_j) per target column
        root = np.sqrt(weights)[:, None]
        jacobian = 0.5 * Y.shape[1] * np.sum(np.log(weights))
        return _gaussian_evidence(prior, P * root, Y * root, gamma) + jacobian
    n = P.shape[0]
    g2 = gamma**2
    A = P.T @ P / g2
    A[np.diag_indices_from(A)] += prior
    factor = cholesky(A)
    b = P.T @ Y  # (M, k)
    w = np.linalg.solve(factor, b)  # factor is lower: A^-1 = factor^-T factor^-1
    quad = np.sum(Y * Y) / g2 - np.sum(w * w) / g2**2
    logdet = n * np.log(g2) + cho_logdet(factor) - np.sum(np.log(prior))
    k = Y.shape[1]
    return -0.5 * quad - 0.5 * k * logdet - 0.5 * k * n * _LOG_2PI


def _laplace_evidence(loss, prior, P, targets, gamma, coef_init, weights=None):
    fit = newton_map(loss, prior, P, targets, gamma, coef_init=coef_init, weights=weights)
    if not fit.converged:
        raise ConvergenceWarning(
            f"Newton's method for the {loss.name!r} loss did not converge at gamma={gamma!r}."
        )
    coef = fit.coef
    value = _weighted(loss.value(P @ coef, targets, gamma), weights).sum()
    # log|H| from the factor of Newton's last Hessian (ce: H~ on the zero-sum
    # subspace, which H maps to itself); no covariance is formed.
    if loss.multiclass:
        quad = np.sum(prior[:, None] * coef * coef)
        logdet = fit.log_det_hessian() - (targets.shape[1] - 1) * np.sum(np.log(prior))
    else:
        quad = np.dot(prior * coef, coef)
        logdet = fit.log_det_hessian() - np.sum(np.log(prior))
    return -value - 0.5 * quad - 0.5 * logdet, coef


def _check(loss, eigenvalues, P, targets):
    eigenvalues = np.asarray(eigenvalues, dtype=float)
    P = np.asarray(P, dtype=float)
    targets = np.asarray(targets, dtype=float)
    if P.ndim != 2 or P.shape[1] != eigenvalues.size:
        raise ValueError(
            f"P must have shape (n_labeled, {eigenvalues.size}) (one column per "
            f"eigenvalue); got {P.shape}."
        )
    expected_ndim = 2 if loss.multiclass else 1
    if targets.ndim != expected_ndim or targets.shape[0] != P.shape[0]:
        raise ValueError(
            f"targets must have {P.shape[0]} rows and {expected_ndim} dimension(s) for loss "
            f"{loss.name!r}; got shape {targets.shape}."
        )
    return eigenvalues, P, targets


def _check_positive(name, value):
    if not (np.isscalar(value) and np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite float; got {value!r}.")


def _check_weight(eps):
    """``eps`` of ``model="sum"``: a non-negative finite float."""
    if not (np.isscalar(eps) and np.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be a non-negative finite float; got {eps!r}.")


@with_small_algebra
def log_evidence(
    loss, eigenvalues, P, targets, tau: float, gamma: float, *, weights=None
) -> float:
    """Log evidence of the spectral model at ``(tau, gamma)``.

    Exact for ``gr`` and ``mgr``, the Laplace approximation for the others
    (see the module documentation). With ``weights``, that of the weighted
    model of :func:`skmcal.fitting.fit_posterior` (``gr``/``mgr``: noise
    ``gamma^2 / w_j`` at labeled row ``j``; the others: the loss term of row
    ``j`` counted ``w_j`` times in the Laplace approximation).

    Parameters
    ----------
    loss : BinaryLoss or MulticlassLoss
        One of :data:`skmcal.losses.LOSSES`.
    eigenvalues : ndarray of shape (M,)
        The graph's ``lambda``.
    P : ndarray of shape (n_labeled, M)
        Eigenvector rows of the labeled nodes.
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        Labels in {-1, +1} (binary losses) or one-hot rows.
    tau, gamma : float
    weights : ndarray of shape (n_labeled,) or None, default=None
        The weight of each labeled row (positive); None: one each.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skmcal.losses import LOSSES
    >>> P = np.array([[0.5, 0.5], [0.5, -0.5]])
    >>> round(log_evidence(LOSSES["gr"], np.array([0.0, 0.3]), P, np.array([1.0, -1.0]),
    ...                    tau=0.1, gamma=0.5), 4)
    -4.6442
    """
    eigenvalues, P, targets = _check(loss, eigenvalues, P, targets)
    weights = check_weights(weights, P.shape[0])
    _check_positive("tau", tau)
    _check_positive("gamma", gamma)
    prior = eigenvalues + tau**2
    if loss.closed_form:
        return float(_gaussian_evidence(prior, P, targets, gamma, weights))
    return float(_laplace_evidence(loss, prior, P, targets, gamma, None, weights)[0])


def prior_scale(eigenvalues, tau: float, n_nodes: int) -> float:
    """The amplitude ``s`` that gives the prior unit mean variance per node.

    The spectral prior ``Lambda_tau^-1`` gives node ``i``'s latent value the
    variance ``sum_k v_k(i)^2 / (lambda_k + tau^2)``; the eigenvectors having
    unit norm, its mean over the ``n_nodes`` nodes is ``sum_k 1 / (lambda_k +
    tau^2) / n_nodes``, which falls as ``1 / n_nodes``. ``s`` is its inverse:
    the prior ``s Lambda_tau^-1`` has mean node variance one at every size.

    The null modes (one constant per connected component, variance ``1 /
    tau^2``) count: with ``tau`` in :data:`DEFAULT_TAUS` they are most of the
    sum. Leaving them out made ``mgr`` with model change lose up to 19 points
    of accuracy in one batch on MNIST-test. As ``tau -> 0``, ``s`` falls as
    ``n_nodes tau^2``; a ``tau`` far below the grid with ``gamma="auto"``
    gives a prior-dominated fit.

    Parameters
    ----------
    eigenvalues : ndarray of shape (M,)
        The graph's ``lambda``.
    tau : float
    n_nodes : int
        The number of nodes the eigenvectors span.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(prior_scale(np.array([0.0, 0.3]), tau=1.0, n_nodes=4), 4)
    2.2609
    """
    _check_positive("tau", tau)
    if not (isinstance(n_nodes, (int, np.integer)) and n_nodes > 0):
        raise ValueError(f"n_nodes must be a positive integer; got {n_nodes!r}.")
    return float(n_nodes / np.sum(1.0 / (np.asarray(eigenvalues, dtype=float) + tau**2)))


def constant_share(eigenvalues, tau: float) -> float:
    """The share of the spectral prior's variance on its smoothest eigenvector.

    The prior ``Lambda_tau^-1`` gives eigenvector ``k`` the variance ``1 /
    (lambda_k + tau^2)``; the smoothest (the smallest ``lambda``, the constant
    function on a connected graph) gets ``1 / tau^2`` at ``lambda = 0``. Its
    share of the total, ``(1 / (lambda_min + tau^2)) / sum_k 1 / (lambda_k +
    tau^2)``, says how much of the prior is one value for every node: near
    one, the other eigenvectors (the graph's structure) carry almost nothing,
    and with the prior scaled to unit mean variance (:func:`prior_scale`)
    the fit predicts the class most labeled nearly everywhere.

    Parameters
    ----------
    eigenvalues : ndarray of shape (M,)
        The graph's ``lambda``.
    tau : float

    Returns
    -------
    float
        In ``(0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> round(constant_share(np.array([0.0, 0.1, 0.1]), tau=0.1), 4)
    0.8462
    """
    _check_positive("tau", tau)
    variances = 1.0 / (np.asarray(eigenvalues, dtype=float) + tau**2)
    return float(variances.max() / variances.sum())


def _check_grid(taus, gammas):
    """The grids as flat float arrays, every value positive and finite."""
    taus = np.asarray(taus, dtype=float).ravel()
    gammas = np.asarray(gammas, dtype=float).ravel()
    for name, grid in (("taus", taus), ("gammas", gammas)):
        if grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise ValueError(f"{name} must be a non-empty grid of positive floats; got {grid}.")
    return taus, gammas


def _laplace_row(loss, prior, P, targets, gammas, start, weights=None):
    """Log evidence (Laplace) at every gamma of one tau, and the MAP of each.

    Each fit is warm-started from the previous gamma's MAP (the first from
    ``start``); a failed fit gives ``-inf`` and the next starts from ``start``.
    """
    values, coefs, coef = np.full(gammas.size, -np.inf), [None] * gammas.size, start
    for j, gamma in enumerate(gammas):
        try:
            values[j], coefs[j] = _laplace_evidence(
                loss, prior, P, targets, gamma, coef, weights
            )
            coef = coefs[j]
        except (ConvergenceWarning, ValueError):
            coef = start
    return values, coefs


@with_small_algebra
def select_hyperparameters(
    loss,
    eigenvalues,
    P,
    targets,
    taus=DEFAULT_TAUS,
    gammas=DEFAULT_GAMMAS,
    n_nodes=None,
    *,
    coef_init=None,
    n_threads=None,
    return_coef=False,
    weights=None,
):
    """The ``(tau, gamma)`` of a grid with the largest log evidence.

    Parameters
    ----------
    loss, eigenvalues, P, targets
        As :func:`log_evidence`.
    taus, gammas : sequence of float
        The grid; every value positive.
    n_nodes : int or None, default=None
        None: ``gammas`` are the model's gammas. An int (the number of nodes):
        ``gammas`` are relative to the prior's scale. Grid point ``(tau, g)``
        is then the model whose prior is ``s Lambda_tau^-1``, ``s =``
        :func:`prior_scale` ``(eigenvalues, tau, n_nodes)`` (unit mean variance
        per node), with ``gamma = g``; its evidence is compared, and the
        returned gamma is ``g / sqrt(s)``: the gamma at which the unscaled
        model has the same MAP, the same predictions and a covariance ``1 / s``
        times as large (every query strategy picks the same nodes). Without
        the amplitude, labels of size one under a prior whose node variance
        falls as ``1 / n_nodes`` look like noise to the evidence at large
        ``n_nodes``, and the fit it picks is prior-dominated.
    coef_init : ndarray of shape (M,) or (M, n_classes), or None, default=None
        Newton losses: coefficients of the unscaled model (a previous fit's
        ``coef``) that start the first fit of every tau (at grid point ``(tau,
        g)`` scaled by ``sqrt(s)``, its coefficients in the scaled model); the
        later gammas of a tau start from the previous gamma's MAP. None: the
        prior mean. The evidence does not depend on the start beyond the
        Newton tolerance.
    n_threads : int or None, default=None
        Newton losses: threads over the taus (each fits its gammas in turn);
        None: ``skmcal._threads.scoring_threads()``. The table does not
        depend on it.
    return_coef : bool, default=False
        Also return the MAP at the chosen grid point as coefficients of the
        unscaled model at the returned ``(tau, gamma)`` (the ``coef`` a fit
        there converges to, and a start that it accepts at once); None for
        ``gr``/``mgr``.
    weights : ndarray of shape (n_labeled,) or None, default=None
        As :func:`log_evidence`: the evidence of the weighted model.

    Returns
    -------
    tau, gamma : float
        The maximiser (the first one met, taus outer, on ties).
    table : ndarray of shape (len(taus), len(gammas))
        The log evidence at every grid point; ``-inf`` where the Newton fit
        of a non-Gaussian loss did not converge or its Hessian was not
        numerically positive definite.
    coef : ndarray or None
        Only with ``return_coef``.

    Examples
    --------
    >>> import numpy as np
    >>> from skmcal.losses import LOSSES
    >>> rng = np.random.RandomState(0)
    >>> P = rng.randn(12, 4) / 3
    >>> y = np.sign(P[:, 0] + 0.1)
    >>> tau, gamma, table = select_hyperparameters(LOSSES["probit"], np.linspace(0, 1, 4), P, y)
    >>> table.shape
    (3, 4)
    """
    eigenvalues, P, targets = _check(loss, eigenvalues, P, targets)
    weights = check_weights(weights, P.shape[0])
    taus, gammas = _check_grid(taus, gammas)
    table = np.full((taus.size, gammas.size), -np.inf)
    scales = np.ones(taus.size)
    priors = []
    for i, tau in enumerate(taus):
        if n_nodes is not None:
            scales[i] = prior_scale(eigenvalues, tau, n_nodes)
        priors.append((eigenvalues + tau**2) / scales[i])
    coefs = None
    if loss.closed_form:
        for i, prior in enumerate(priors):
            for j, gamma in enumerate(gammas):
                table[i, j] = _gaussian_evidence(prior, P, targets, gamma, weights)
    else:
        start = None if coef_init is None else np.asarray(coef_init, dtype=float)

        def row(i):
            return _laplace_row(
                loss, priors[i], P, targets, gammas,
                None if start is None else start * np.sqrt(scales[i]), weights,
            )  # fmt: skip

        workers = min(taus.size, scoring_threads(n_threads))
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                rows = list(pool.map(row, range(taus.size)))
        else:
            rows = [row(i) for i in range(taus.size)]
        table[:] = [values for values, _ in rows]
        coefs = [row_coefs for _, row_coefs in rows]
    if not np.isfinite(table).any():
        raise ValueError(
            f"The {loss.name!r} fit failed at every grid point (taus "
            f"{[float(t) for t in taus]}, gammas {[float(g) for g in gammas]}"
            f"{', relative to the prior' if n_nodes is not None else ''}): Newton did not "
            f"converge or the Hessian was singular; try larger gammas or taus."
        )
    i, j = np.unravel_index(np.argmax(table), table.shape)
    tau, gamma = float(taus[i]), float(gammas[j] / np.sqrt(scales[i]))
    if not return_coef:
        return tau, gamma, table
    return tau, gamma, table, None if coefs is None else coefs[i][j] / np.sqrt(scales[i])


def _check_full(K, targets, offset):
    K = np.asarray(K, dtype=float)
    targets = np.asarray(targets, dtype=float)
    Y = targets[:, None] if targets.ndim == 1 else targets
    n = K.shape[0]
    if K.ndim != 2 or K.shape != (n, n) or Y.ndim != 2 or Y.shape[0] != n:
        raise ValueError(
            f"K must be square, of the size of the targets' rows; got K {K.shape} and "
            f"targets {targets.shape}."
        )
    if offset is not None:
        offset = np.asarray(offset, dtype=float).reshape(-1)
        if offset.shape != (n,) or not np.any(offset):
            raise ValueError(
                f"offset must be a non-zero vector of {n} entries (one per label); got {offset!r}."
            )
        if n < 2:
            raise ValueError("With an offset the evidence needs at least 2 labels.")
    return K, Y, offset


def _full_evidence(K, Y, gamma, offset):
    """``log Z`` of :func:`full_log_evidence` (inputs checked)."""
    n, k = Y.shape
    S = K + gamma**2 * np.eye(n)
    factor = cholesky(S)
    SY = cho_solve(factor, Y)
    quad = np.sum(Y * SY)
    logdet = cho_logdet(factor)
    dof = n
    if offset is not None:
        Sw = cho_solve(factor, offset[:, None])[:, 0]
        wSw = float(offset @ Sw)
        quad -= float(np.sum((Sw @ Y) ** 2)) / wSw
        logdet += np.log(wSw) - np.log(float(offset @ offset))
        dof = n - 1
    # (round-off can leave a tiny negative quad where the labels are all offset)
    scale = max(quad, np.finfo(float).tiny) / (k * dof)
    return -0.5 * k * dof * (np.log(scale) + 1.0 + _LOG_2PI) - 0.5 * k * logdet


def full_log_evidence(K, targets, gamma: float, offset=None) -> float:
    """Log evidence of the full-graph Gaussian model, its amplitude and offset integrated out.

    The full-graph ``gr``/``mgr`` model (:mod:`skmcal.fullgraph`) with the
    prior ``u ~ N(0, s (L + tau^2 I)^-1)`` for each target column, noise
    ``N(0, s gamma^2)`` on the labels, and a class offset ``m`` along
    ``offset`` (the labeled nodes' entries of the null vector ``D^1/2 1`` of
    ``L``) with a flat prior. With ``K = P (L + tau^2 I)^-1 P'`` and ``S = K +
    gamma^2 I``, a target column ``y`` is ``N(m w, s S)``; integrating ``m``
    out leaves the density of the ``n - 1`` contrasts of ``y`` orthogonal to
    ``w`` (the restricted likelihood)

        log Z(s) = -(n - 1)/2 log(2 pi s) - 1/2 (log|S| + log(w'S^-1 w) - log(w'w))
                   - y'Pi y / (2 s),    Pi = S^-1 - S^-1 w w'S^-1 / (w'S^-1 w),

    summed over the ``k`` columns. The amplitude ``s`` is the maximiser
    ``s = sum_c y_c'Pi y_c / (k (n - 1))`` (a closed form), which leaves

        log Z = -k (n - 1)/2 (log(2 pi s) + 1) - k/2 (log|S| + log(w'S^-1 w) - log(w'w)).

    Without ``offset``: ``n`` for ``n - 1``, ``Pi = S^-1`` and no ``w`` terms.
    The model's MAP depends on ``(tau, gamma)`` only, not on ``s`` (see
    :func:`select_full_hyperparameters` for why both are needed);
    docs/math.rst, "The full-graph evidence".

    Parameters
    ----------
    K : ndarray of shape (n_labeled, n_labeled)
        The Green's function of ``L + tau^2 I`` at the labeled nodes
        (:func:`skmcal.fullgraph.green_block`).
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        Labels in {-1, +1} (``gr``) or one-hot rows (``mgr``).
    gamma : float
        Noise scale relative to the amplitude.
    offset : ndarray of shape (n_labeled,) or None, default=None
        The direction of the class offset at the labels
        (:func:`skmcal.fullgraph.offset_direction`); None: no offset.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[1.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.0]])
    >>> round(full_log_evidence(K, np.array([1.0, 1.0, -1.0]), 0.1), 4)
    -4.0104
    """
    K, Y, offset = _check_full(K, targets, offset)
    _check_positive("gamma", gamma)
    return float(_full_evidence(K, Y, gamma, offset))


@with_small_algebra
def select_full_hyperparameters(
    green_block, targets, taus=FULL_TAUS, gammas=FULL_GAMMAS, offset=None, start=None
) -> tuple[float, float, np.ndarray]:
    """The ``(tau, gamma)`` of a grid with the largest :func:`full_log_evidence`.

    Both the amplitude and the offset matter. With the prior's amplitude
    fixed, one-hot targets (mostly zeros) favour the smallest prior variance
    offered: on MNIST-test the largest tau (1.0, 67% accuracy against 81% at
    0.1). With the amplitude and no offset, the evidence chose tau = 0.03,
    where a batch of 5 labels of one class made that class the prediction of
    86% of the nodes (the constant part of every Green's column, about
    ``1 / (N tau^2)``, turns the share of the labels into a class offset).
    With both, and the offset left out of the predictions
    (:func:`skmcal.fullgraph.fit_full_graph`, ``free_offset``), its choice
    was within a point of the grid's best accuracy on the benchmark's data.

    Parameters
    ----------
    green_block : callable
        ``green_block(tau)`` gives ``K`` at ``tau`` (shape ``(n_labeled,
        n_labeled)``), once per tau.
    targets, offset
        As :func:`full_log_evidence`.
    taus, gammas : sequence of float
        The grid; every value positive.
    start : float or None, default=None
        None: every tau of the grid. A tau of the grid: a climb from it
        along the taus (each tau's best gamma), to the first neighbour that
        does better (the smaller tau tried first), until neither does; only
        the taus it visits are solved for. It finds the grid's maximiser when the
        best evidence over the gammas rises and then falls along the taus
        (one peak), as it did on every data set of
        ``benchmarks/bench_accuracy.py`` (it fell as tau rose). Active
        learning's refits start from the last choice: at 70,000 nodes the
        Green's columns of the new labels at each tau are most of a
        search's cost.

    Returns
    -------
    tau, gamma : float
        The maximiser (the first one met, taus outer, on ties); with
        ``start``, of the taus visited.
    table : ndarray of shape (len(taus), len(gammas))
        The log evidence at every grid point; NaN at the taus not visited.

    Examples
    --------
    >>> import numpy as np
    >>> def block(tau):
    ...     return np.array([[1.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.0]]) / (1 + tau)
    >>> tau, gamma, table = select_full_hyperparameters(block, np.array([1.0, 1.0, -1.0]))
    >>> table.shape
    (3, 4)
    """
    taus, gammas = _check_grid(taus, gammas)
    table = np.full((taus.size, gammas.size), np.nan)
    visited = np.zeros(taus.size, dtype=bool)

    def row(i):  # the evidence at every gamma of taus[i] (solved once), its best value
        if not visited[i]:
            K, Y, w = _check_full(green_block(float(taus[i])), targets, offset)
            table[i] = [_full_evidence(K, Y, gamma, w) for gamma in gammas]
            visited[i] = True
        return table[i].max()

    if start is None:
        for i in range(taus.size):
            row(i)
    else:
        at = np.flatnonzero(taus == start)
        if at.size == 0:
            raise ValueError(f"start must be one of the taus {taus}; got {start!r}.")
        i, moved = int(at[0]), True
        while moved:  # to the first better neighbour, the smaller tau tried first
            moved = False
            for j in (i - 1, i + 1):
                if 0 <= j < taus.size and row(j) > row(i):
                    i, moved = j, True
                    break
    rows = np.flatnonzero(visited)
    best = np.unravel_index(np.argmax(table[rows]), (rows.size, gammas.size))
    return float(taus[rows[best[0]]]), float(gammas[best[1]]), table


#: The weights ``eps`` of the full-graph part of ``model="sum"``
#: (:func:`select_sum_hyperparameters`): the prior ``a (K_s + eps K_f)``, each
#: kernel scaled to unit mean variance over the labeled nodes.
#: ``benchmarks/bench_prior_evidence.py`` chose every value from 0.01 to 3 on
#: some label set of MNIST-test, Samson or Fashion-MNIST, none above.
SUM_EPSILONS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
#: The ``tau`` of the full-graph part of ``model="sum"``: :data:`FULL_TAUS`.
SUM_FULL_TAUS = FULL_TAUS
#: The noise scales of ``model="sum"``, relative to the normalised prior
#: (unit mean variance at the labeled nodes; the amplitude is profiled out).
SUM_GAMMAS = (0.05, 0.1, 0.2, 0.5, 1.0)
#: The classifier's ``model="sum"`` takes the grid point of largest leave-one-out
#: density among those whose balanced leave-one-out log-probability of the
#: labels' classes (:func:`sum_loo_class_log_likelihood`) is at most this many
#: nats per label below the grid's best (:func:`select_sum_hyperparameters`'
#: ``margin``). The density alone, which scores one-hot targets as a regression,
#: took fits that predict the class most labeled nearly everywhere: after V-opt's
#: first 50 labels on UCI's DNA the defaults fell from 0.70-0.76 to 0.33-0.43 in
#: one batch. Along the defaults' paths (``benchmarks/results/sum_class_guard.md``,
#: 3 trials, five strategies, against the rule before): DNA with V-opt .395 ->
#: .688 at 50 labels; model change on DNA +2.1, Letters +4.0, Vowel +1.6 points at
#: 100 labels; Letters' uncertainty sampling -1.2 / -3.0 / -1.3 at 100 / 200 /
#: 500; the benchmark's data sets within 0.6 points. 0.1 kept less of the gains
#: at the same cost on Letters; 0.05 and less cost uncertainty sampling on DNA.
SUM_CLASS_MARGIN = 0.07


def unit_scale(K) -> float:
    """``1 / mean(diag(K))``: the factor that gives a prior block unit mean variance.

    ``model="sum"`` scales its spectral and full-graph blocks by it (at the
    labeled nodes), so that ``eps`` weighs two priors of one size.
    """
    diagonal = np.diagonal(np.asarray(K, dtype=float))
    if diagonal.size == 0 or not np.all(diagonal > 0):
        raise ValueError(f"A prior block needs a positive diagonal; got {diagonal!r}.")
    return float(1.0 / diagonal.mean())


def _check_sum(spectral, full, targets, eps):
    spectral, Y, _ = _check_full(spectral, targets, None)
    full, _, _ = _check_full(full, targets, None)
    _check_weight(eps)
    return spectral, full, Y


def sum_log_evidence(spectral, full, targets, eps: float, gamma: float) -> float:
    """Log evidence of the summed prior ``a (K_s + eps K_f)``, its amplitude ``a`` profiled.

    ``model="sum"`` of :class:`~skmcal.SpectralGraphClassifier` with ``gr`` or
    ``mgr``: each target column ``y`` is ``N(0, a (K + gamma^2 I))``, ``K =
    K_s + eps K_f`` the prior covariance at the labeled nodes (the spectral
    ``K_s = c_s P_V Lambda_tau^-1 P_V'`` and the full graph's ``K_f = c_f P
    (L + tau_f^2 I)^-1 P'``, each scaled by :func:`unit_scale`) and
    ``a gamma^2`` the noise variance. With ``S = K + gamma^2 I`` and ``k``
    columns, the maximiser over ``a`` is ``a = sum_c y_c'S^-1 y_c / (k n)`` and

        log Z = -k n/2 (log(2 pi a) + 1) - k/2 log|S|

    (:func:`full_log_evidence` of ``K`` without an offset; docs/math.rst,
    "The summed prior").

    Parameters
    ----------
    spectral, full : ndarray of shape (n_labeled, n_labeled)
        ``K_s`` and ``K_f``, scaled.
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        Labels in {-1, +1} (``gr``) or one-hot rows (``mgr``).
    eps : float
        Weight of the full-graph block, non-negative.
    gamma : float
        Noise scale relative to the amplitude.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> Ks = np.array([[1.0, 0.8], [0.8, 1.0]])
    >>> Kf = np.array([[1.0, 0.1], [0.1, 1.0]])
    >>> round(sum_log_evidence(Ks, Kf, np.array([1.0, -1.0]), 0.5, 0.1), 4)
    -3.475
    """
    spectral, full, Y = _check_sum(spectral, full, targets, eps)
    _check_positive("gamma", gamma)
    return float(_full_evidence(spectral + eps * full, Y, gamma, None))


def sum_loo_log_density(spectral, full, targets, eps: float, gamma: float) -> float:
    """Leave-one-out log predictive density of the summed prior, its amplitude profiled.

    The criterion by which :class:`~skmcal.SpectralGraphClassifier` with
    ``model="sum"`` chooses its grid point. With ``S = K + gamma^2 I``
    (``K = K_s + eps K_f`` as in :func:`sum_log_evidence`), each target
    column ``y ~ N(0, a S)``: the prediction of label ``i`` from the others
    has residual ``r_i = [S^-1 y]_i / [S^-1]_ii`` and variance ``a s_i``,
    ``s_i = 1 / [S^-1]_ii``. With ``k`` columns, the amplitude maximising
    the sum of the ``k n`` log densities is ``a = mean(r_ic^2 / s_i)`` and

        LOO = -k/2 sum_i log(a s_i) - k n/2 (1 + log 2 pi)

    (docs/math.rst, "The summed prior"). Unlike the evidence, it scores a
    prior by how well each label is predicted from the others: with few
    labels, a prior whose covariance is nearly diagonal at the labels (the
    full graph's, whose Green's functions peak at their own node) explains
    them as well as noise does under the evidence, but predicts none of them.

    Parameters
    ----------
    spectral, full, targets, eps, gamma
        As :func:`sum_log_evidence`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> Ks = np.array([[1.0, 0.8], [0.8, 1.0]])
    >>> Kf = np.array([[1.0, 0.1], [0.1, 1.0]])
    >>> round(sum_loo_log_density(Ks, Kf, np.array([1.0, -1.0]), 0.5, 0.1), 4)
    -3.731
    """
    spectral, full, Y = _check_sum(spectral, full, targets, eps)
    _check_positive("gamma", gamma)
    return float(_eigen_scores(spectral + eps * full, Y, [gamma], loo=True)[0][0])


def sum_loo_means(spectral, full, targets, eps: float, gamma: float) -> np.ndarray:
    """The leave-one-out predictive mean of every label under the summed prior.

    With ``S = K + gamma^2 I`` (``K = K_s + eps K_f`` as in
    :func:`sum_log_evidence`), the mean of label ``i`` given the others is
    ``y_i - r_i``, ``r_i = [S^-1 y]_i / [S^-1]_ii`` (the residual of
    :func:`sum_loo_log_density`); it does not depend on the amplitude. The
    classifier's ``kernel="auto"`` compares graphs by the labels these means
    predict (``SpectralGraphClassifier._choose_scale()``).

    Parameters
    ----------
    spectral, full, targets, eps, gamma
        As :func:`sum_log_evidence`.

    Returns
    -------
    ndarray of shape (n_labeled, n_columns)
        One column per target column (one for a 1-D ``targets``).

    Examples
    --------
    >>> import numpy as np
    >>> Ks = np.array([[1.0, 0.8], [0.8, 1.0]])
    >>> Kf = np.array([[1.0, 0.1], [0.1, 1.0]])
    >>> sum_loo_means(Ks, Kf, np.array([1.0, -1.0]), 0.5, 0.1).round(4).ravel().tolist()
    [-0.5629, 0.5629]
    """
    spectral, full, Y = _check_sum(spectral, full, targets, eps)
    _check_positive("gamma", gamma)
    d, Q = np.linalg.eigh(spectral + eps * full)
    alpha, precision = _loo_terms(np.maximum(d, 0.0), Q, Q.T @ Y, [gamma])
    return _loo_means(Y, alpha, precision)[0]


def sum_loo_class_log_likelihood(spectral, full, targets, eps: float, gamma: float) -> float:
    """Balanced leave-one-out log-probability of the labels' classes under the summed prior.

    The guard of :func:`select_sum_hyperparameters`' choice. The leave-one-out
    prediction of label ``i`` (:func:`sum_loo_means` and
    :func:`sum_loo_log_density`) is ``N(mu_i, a s_i I)`` over its target
    columns, ``a`` the amplitude that maximises the leave-one-out density. The
    probability that it predicts the label's class ``c``, that ``c``'s value is
    the largest, is

        p_i = E_t prod_{c' != c} Phi((mu_ic - mu_ic') / sqrt(a s_i) + t),  t ~ N(0, 1)

    (``t`` the standardised noise of ``c``'s value; 16-point Gauss-Hermite
    quadrature); with one column of targets in {-1, +1} (``gr``), ``p_i =
    Phi(y_i mu_i / sqrt(a s_i))``. The result is the mean over the labeled classes of
    their labels' mean ``log p_i``: each class counts alike, however many labels
    a strategy took from it. Unlike the density, which scores one-hot targets
    as a regression and ranks a fit near every label's mean (the class most
    labeled everywhere) as likely as any, it asks whether each label's class
    is predicted from the others (docs/math.rst, "The summed prior").

    Parameters
    ----------
    spectral, full, targets, eps, gamma
        As :func:`sum_log_evidence`; one-hot rows (a class per row) or one
        column in {-1, +1}.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> Ks = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.1], [0.1, 0.1, 1.0]])
    >>> Kf = np.eye(3)
    >>> round(sum_loo_class_log_likelihood(Ks, Kf, np.array([1.0, 1.0, -1.0]), 0.5, 0.1), 4)
    -0.5231
    """
    spectral, full, Y = _check_sum(spectral, full, targets, eps)
    _check_positive("gamma", gamma)
    return float(_eigen_scores(spectral + eps * full, Y, [gamma], loo=True, classes=True)[2][0])


#: Nodes and weights (summing to one) of Gauss-Hermite quadrature against the standard
#: normal density: ``E f(t) ~ sum_q w_q f(t_q)``, exact for polynomials of degree < 32
#: (on :func:`sum_loo_class_log_likelihood`, a relative error near 1e-6).
_HERMITE_NODES, _HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(16)
_HERMITE_WEIGHTS = _HERMITE_WEIGHTS / _HERMITE_WEIGHTS.sum()


def _target_classes(Y):
    """The class of each target row (one-hot: its largest column; one column: its sign) and
    each row's weight ``1 / (labels of its class * classes)``."""
    codes = np.argmax(Y, axis=1) if Y.shape[1] > 1 else (Y[:, 0] > 0).astype(np.intp)
    counts = np.bincount(codes)
    return codes, 1.0 / (counts[codes] * np.count_nonzero(counts))


def _class_scores(Y, alpha, precision, amplitude):
    """:func:`sum_loo_class_log_likelihood` at every gamma (leading axis of ``alpha``,
    ``precision`` and ``amplitude``)."""
    codes, weight = _target_classes(Y)
    rows = np.arange(Y.shape[0])
    mu = _loo_means(Y, alpha, precision)
    deviation = np.sqrt(amplitude[:, None] / precision)  # sqrt(a s_i)
    if Y.shape[1] == 1:  # the sign: rows scaled by label weights keep their class
        log_p = log_ndtr(np.sign(Y[:, 0]) * mu[:, :, 0] / deviation)
    else:  # log E_t prod_{c' != c} Phi(gap_c' + t), t ~ N(0, 1): Gauss-Hermite
        others = np.ones(Y.shape, dtype=bool)
        others[rows, codes] = False
        gap = (mu[:, rows, codes][:, :, None] - mu)[:, others].reshape(mu.shape[0], rows.size, -1)
        gap /= deviation[:, :, None]  # (mu_ic - mu_ic') / sqrt(a s_i), c' != c
        terms = np.sum(log_ndtr(gap[..., None] + _HERMITE_NODES), axis=2)  # (gamma, label, node)
        top = terms.max(axis=2)
        log_p = top + np.log(np.exp(terms - top[:, :, None]) @ _HERMITE_WEIGHTS)
    return log_p @ weight


def _loo_means(Y, alpha, precision):
    """The leave-one-out means ``y_i - r_i`` at every gamma (leading axis), ``r_i =
    [S^-1 y]_i / [S^-1]_ii`` from :func:`_loo_terms`."""
    return Y - alpha / precision[:, :, None]


def _loo_terms(d, Q, QY, gammas):
    """``(S^-1 Y, diag(S^-1))`` at every gamma (leading axis) from ``K = Q diag(d) Q'``,
    ``S = K + gamma^2 I``: the leave-one-out residuals are their ratio."""
    inverse = 1.0 / (d + np.asarray(gammas)[:, None] ** 2)  # eigenvalues of S^-1 per gamma
    precision = inverse @ (Q * Q).T
    alpha = Q @ (inverse[:, :, None] * QY)  # one product per gamma (BLAS), not an einsum
    return alpha, precision


def _eigen_scores(K, Y, gammas, loo=False, classes=False):
    """``(score, amplitude)`` at every gamma from one ``eigh(K)``: :func:`sum_log_evidence`,
    or with ``loo`` :func:`sum_loo_log_density`; with ``classes`` (and ``loo``) also
    :func:`sum_loo_class_log_likelihood`, third."""
    n, k = Y.shape
    d, Q = np.linalg.eigh(K)
    d = np.maximum(d, 0.0)  # round-off below a positive semi-definite block's spectrum
    QY = Q.T @ Y
    g2 = np.asarray(gammas)[:, None] ** 2
    inverse = 1.0 / (d + g2)  # the eigenvalues of S^-1, one row per gamma
    tiny = np.finfo(float).tiny
    if not loo:
        amplitude = np.maximum(inverse @ np.sum(QY**2, axis=1), tiny) / (k * n)
        logdet = -np.sum(np.log(inverse), axis=1)
        return -0.5 * k * n * (np.log(amplitude) + 1.0 + _LOG_2PI) - 0.5 * k * logdet, amplitude
    alpha, precision = _loo_terms(d, Q, QY, gammas)  # S^-1 Y and [S^-1]_ii per gamma
    ratios = np.sum(alpha**2 / precision[:, :, None], axis=(1, 2))  # r^2 / s = alpha^2 / [S^-1]_ii
    amplitude = np.maximum(ratios, tiny) / (k * n)
    score = 0.5 * k * np.sum(np.log(precision), axis=1) - 0.5 * k * n * (
        np.log(amplitude) + 1.0 + _LOG_2PI
    )
    if classes:
        return score, amplitude, _class_scores(Y, alpha, precision, amplitude)
    return score, amplitude


@with_small_algebra
def select_sum_hyperparameters(
    spectral_blocks,
    full_blocks,
    targets,
    epsilons=SUM_EPSILONS,
    gammas=SUM_GAMMAS,
    criterion="evidence",
    margin=None,
) -> tuple[int, int, float, float, float, np.ndarray]:
    """The grid point of the summed prior with the largest evidence or leave-one-out density.

    One symmetric eigendecomposition of ``K_s + eps K_f`` per kernel (one
    ``(spectral, full, eps)``) gives the criterion at every gamma (``O(n k)``
    each for the evidence, ``O(n^2 k)`` for the leave-one-out density); the
    amplitude is profiled in closed form. With a ``margin``, only the grid
    points whose :func:`sum_loo_class_log_likelihood` is within ``margin`` of
    the grid's largest are candidates (the classifier's
    :data:`SUM_CLASS_MARGIN`).

    Parameters
    ----------
    spectral_blocks, full_blocks : sequence of ndarray of shape (n_labeled, n_labeled)
        The scaled blocks ``K_s`` (one per spectral ``tau``) and ``K_f`` (one
        per full-graph ``tau``).
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_classes)
        As :func:`sum_log_evidence`.
    epsilons : sequence of float
        Weights of the full-graph block, non-negative.
    gammas : sequence of float
        Relative noise scales, positive.
    criterion : {"evidence", "loo"}, default="evidence"
        What is maximised: :func:`sum_log_evidence` or
        :func:`sum_loo_log_density` (the classifier's choice).
    margin : float or None, default=None
        With ``criterion="loo"``: the criterion's largest value among the grid
        points whose balanced leave-one-out log-probability of the labels'
        classes (:func:`sum_loo_class_log_likelihood`, nats per label) is at
        most ``margin`` below the grid's best. None: over the whole grid.

    Returns
    -------
    spectral, full : int
        Indices of the chosen blocks.
    eps, gamma : float
        The chosen weight and noise scale (the first maximiser met, blocks
        outer, on ties).
    amplitude : float
        The profiled ``a`` there (under ``criterion``).
    table : ndarray of shape (n_spectral, n_full, n_eps, n_gamma)
        The criterion at every grid point (with a ``margin``, -inf where the
        class log-probability is more than ``margin`` below the best).

    Examples
    --------
    >>> import numpy as np
    >>> Ks = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.1], [0.1, 0.1, 1.0]])
    >>> i, j, eps, gamma, a, table = select_sum_hyperparameters(
    ...     [Ks], [np.eye(3)], np.array([1.0, 1.0, -1.0]))
    >>> table.shape
    (1, 1, 6, 5)
    """
    if criterion not in ("evidence", "loo"):
        raise ValueError(f"criterion must be 'evidence' or 'loo'; got {criterion!r}.")
    if margin is not None:
        if criterion != "loo":
            raise ValueError(f"margin needs criterion='loo'; got criterion={criterion!r}.")
        number = isinstance(margin, Real) and not isinstance(margin, bool)
        if not (number and np.isfinite(margin) and margin >= 0):
            raise ValueError(f"margin must be a non-negative float or None; got {margin!r}.")
    epsilons = np.asarray(epsilons, dtype=float).ravel()
    if epsilons.size == 0 or not np.all(np.isfinite(epsilons) & (epsilons >= 0)):
        raise ValueError(
            f"epsilons must be a non-empty grid of non-negative floats; got {epsilons}."
        )
    _, gammas = _check_grid([1.0], gammas)
    if len(spectral_blocks) == 0 or len(full_blocks) == 0:
        raise ValueError("select_sum_hyperparameters needs at least one block of each kind.")
    table = np.empty((len(spectral_blocks), len(full_blocks), epsilons.size, gammas.size))
    amplitudes = np.empty_like(table)
    classes = np.empty_like(table)
    for i, Ks in enumerate(spectral_blocks):
        for j, Kf in enumerate(full_blocks):
            Ks, Kf, Y = _check_sum(Ks, Kf, targets, 0.0)
            for e, eps in enumerate(epsilons):
                scores = _eigen_scores(
                    Ks + eps * Kf, Y, gammas, loo=criterion == "loo", classes=margin is not None
                )
                table[i, j, e], amplitudes[i, j, e] = scores[:2]
                if margin is not None:
                    classes[i, j, e] = scores[2]
    if margin is not None:
        table[classes < classes.max() - margin] = -np.inf
    best = np.unravel_index(np.argmax(table), table.shape)
    i, j, e, g = (int(b) for b in best)
    return i, j, float(epsilons[e]), float(gammas[g]), float(amplitudes[best]), table
