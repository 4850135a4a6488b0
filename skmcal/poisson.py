"""Poisson learning (Calder, Cook, Thorpe and Slepcev, ICML 2020).

With ``L_u = D - W`` the unnormalised graph Laplacian, one-hot labels
``y_j`` at nodes ``k_j`` and their mean ``ybar``, the class scores solve the
graph Poisson equation

    L_u U = sum_j (y_j - ybar) delta_{k_j}          (one column per class)

with the degree-weighted mean of every column fixed at zero,
``sum_i d_i U_i = 0``. ``L_u`` is singular (constants); the right-hand side
sums to zero, so the system is consistent and the constraint picks the
solution, the limit of the paper's iteration ``U <- U + D^-1 (B - L_u U)``
from ``U = 0``. The scores are finally rescaled per class, ``U <- U
diag(b / ybar)`` with ``b`` the class priors (uniform unless given), the
paper's correction for a labeled set whose class proportions differ from the
data's; the predicted class is the argmax of a row.

Here the equation is solved exactly, by conjugate gradients on the
normalised Laplacian: with ``U = D^-1/2 V`` it reads ``L V = D^-1/2 B`` with
``V`` orthogonal to ``D^1/2 1``, the null vector of ``L``; the iteration is
projected on that complement and preconditioned by the same AMG hierarchy as
the full-graph models (:class:`skmcal.fullgraph.LaplacianSolver`). On a graph
of several connected components the constraint holds on each component, and
each component's sources are balanced to sum to zero (a component without
labels gets scores 0).

The classifier's ``model="poisson"`` leaves the correction out by default
(``class_priors`` equal to the labels' shares, a factor of one: under
active learning the shares follow the queries, not the classes' sizes) and
applies it with ``target_scale="balanced"`` (uniform priors); it scales the
scores to the units of the targets at the labels (:func:`target_units`)
before the query strategies see them; its predictions are those of the
scores.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

from ._threads import with_small_algebra
from .fullgraph import DEFAULT_TOL, LaplacianSolver, solver_for


def _component_projector(degrees, labels):
    """Orthogonal projector on the complement of the vectors ``D^1/2 1_component``."""
    root = np.sqrt(degrees)
    volume = np.bincount(labels, weights=degrees)
    safe = np.where(volume > 0, volume, 1.0)

    def project(X):
        coef = np.stack(
            [np.bincount(labels, weights=root * X[:, c]) for c in range(X.shape[1])], axis=1
        )
        return X - root[:, None] * (coef / safe[:, None])[labels]

    return project


@with_small_algebra
def poisson_learning(
    weights,
    labeled,
    codes,
    n_classes: int,
    *,
    class_priors=None,
    init=None,
    tol: float = DEFAULT_TOL,
    solver: LaplacianSolver | None = None,
) -> np.ndarray:
    """Class scores of Poisson learning at every node.

    Parameters
    ----------
    weights : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric affinity ``W``.
    labeled : ndarray of shape (n_labeled,)
        Node of each label.
    codes : ndarray of shape (n_labeled,)
        Class index of each label, in ``[0, n_classes)``.
    n_classes : int
        Number of classes; each needs at least one label.
    class_priors : array-like of shape (n_classes,) or None
        The class proportions ``b`` of the data; None: uniform.
    init : ndarray of shape (n_nodes, n_classes) or None
        Scores of an earlier call (before the prior correction is undone, it
        is the returned array) to start the iteration from.
    tol : float, default=1e-8
        Relative residual of the solve, ``||L_u U - B|| <= tol ||B||`` in the
        ``D^-1/2``-scaled norm.
    solver : LaplacianSolver or None
        None takes :func:`skmcal.fullgraph.solver_for` ``(weights)``.

    Returns
    -------
    ndarray of shape (n_nodes, n_classes)
        ``U diag(b / ybar)``; the predicted class of node i is ``argmax U[i]``.

    References
    ----------
    J. Calder, B. Cook, M. Thorpe, D. Slepcev, "Poisson Learning: Graph Based
    Semi-Supervised Learning At Very Low Label Rates", ICML 2020.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.diags([np.ones(5), np.ones(5)], [-1, 1], shape=(6, 6)).tocsr()
    >>> U = poisson_learning(W, np.array([0, 5]), np.array([0, 1]), 2)
    >>> U.argmax(axis=1)
    array([0, 0, 0, 1, 1, 1])
    """
    solver = solver_for(weights) if solver is None else solver
    labeled = np.asarray(labeled)
    codes = np.asarray(codes)
    n_nodes = solver.n_nodes
    if labeled.ndim != 1 or labeled.dtype.kind not in "iu" or labeled.size == 0:
        raise ValueError(f"labeled must be a non-empty 1-D array of node indices; got {labeled!r}.")
    if labeled.min() < 0 or labeled.max() >= n_nodes:
        raise ValueError(f"labeled holds node indices outside [0, {n_nodes}).")
    if codes.shape != labeled.shape or codes.dtype.kind not in "iu":
        raise ValueError(
            f"codes must be integer class indices, one per labeled node; got {codes!r}."
        )
    if codes.min() < 0 or codes.max() >= n_classes:
        raise ValueError(f"codes must lie in [0, n_classes={n_classes}); got {np.unique(codes)}.")
    missing = np.setdiff1d(np.arange(n_classes), codes)
    if missing.size:
        raise ValueError(
            f"Poisson learning needs a label of every class; classes {missing.tolist()} of "
            f"n_classes={n_classes} have none."
        )
    priors = (
        np.full(n_classes, 1.0 / n_classes)
        if class_priors is None
        else np.asarray(class_priors, dtype=float)
    )
    if priors.shape != (n_classes,) or np.any(priors < 0):
        raise ValueError(
            f"class_priors must be {n_classes} non-negative proportions; got {class_priors!r}."
        )
    onehot = np.eye(n_classes)[codes]
    label_mean = onehot.mean(axis=0)
    B = np.zeros((n_nodes, n_classes))
    np.add.at(B, labeled, onehot - label_mean)
    degrees = solver.degrees
    root = np.sqrt(degrees)
    inv_root = np.where(degrees > 0, 1.0 / np.where(degrees > 0, root, 1.0), 0.0)
    n_components, components = connected_components(solver.laplacian, directed=False)
    project = _component_projector(degrees, components)
    rhs = inv_root[:, None] * B
    if n_components > 1:
        rhs = project(rhs)
    correction = priors / label_mean
    x0 = None
    if init is not None:
        init = np.asarray(init, dtype=float)
        if init.shape != (n_nodes, n_classes):
            raise ValueError(f"init must have shape {(n_nodes, n_classes)}; got {init.shape}.")
        undo = np.divide(1.0, correction, out=np.zeros(n_classes), where=correction > 0)
        x0 = project(root[:, None] * init * undo)
    atol = np.full(n_classes, tol * np.linalg.norm(rhs))
    V, _, _ = solver.solve(np.zeros(n_nodes), rhs, x0=x0, atol=atol, project=project)
    U = inv_root[:, None] * project(V)
    if n_components > 1:
        # The mean-zero constraint removes each component's constant: on a
        # component whose labels are all of one class the solution would be 0.
        # Its labels' class mean is that constant (on a connected graph the
        # global mean, which the prior correction turns into b: no change).
        counts = np.zeros((n_components, n_classes))
        np.add.at(counts, components[labeled], onehot)
        totals = counts.sum(axis=1, keepdims=True)
        U += np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)[components]
    return U * correction


def target_units(scores, labeled, targets) -> float:
    """The factor that puts Poisson scores in the units of the targets at the labels.

    Poisson learning's scores have a scale of their own (that of the graph's
    Green's function: small on a large graph), while the query strategies'
    look-ahead fits targets of one around them (:func:`skmcal.fitting.posterior_around`):
    with scores far below one every candidate's residual ``t_k - u_k`` is about
    ``t_k``, and model change loses its uncertainty. The least-squares factor
    ``c = <S_L, T> / <S_L, S_L>`` (``S_L`` the scores at the labeled nodes,
    ``T`` their targets) takes them to those units; a positive factor leaves
    every prediction (the argmax, or the sign) as it was. Where ``c`` is not
    positive and finite (scores that do not follow the labels), 1.

    Parameters
    ----------
    scores : ndarray of shape (n_nodes,) or (n_nodes, n_columns)
        Poisson scores (binary: the difference of the two classes').
    labeled : ndarray of shape (n_labeled,)
        Node of each label.
    targets : ndarray of shape (n_labeled,) or (n_labeled, n_columns)
        Their targets (``loss.encode``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> target_units(np.array([0.02, -0.01, 0.0]), np.array([0, 1]), np.array([1.0, -1.0]))
    60.0
    """
    scores = np.asarray(scores, dtype=float)
    at_labels = scores[np.asarray(labeled, dtype=np.intp)]
    targets = np.asarray(targets, dtype=float)
    if at_labels.shape != targets.shape:
        raise ValueError(
            f"targets must have the shape of the scores at the labeled nodes, "
            f"{at_labels.shape}; got {targets.shape}."
        )
    norm = float(np.sum(at_labels * at_labels))
    factor = float(np.sum(at_labels * targets)) / norm if norm > 0 else 1.0
    return factor if np.isfinite(factor) and factor > 0 else 1.0
