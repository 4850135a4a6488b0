"""Figures of active-learning experiments and of a fitted classifier.

- :func:`plot_accuracy`: accuracy (mean +- std over trials) against the number
  of labels, one curve per strategy.
- :func:`plot_choices`: the points each strategy labeled, in the order they
  were picked, over the ground truth (one panel per strategy, like the
  paper's figure of the Binary-Clusters choices). Data of more than two
  dimensions are drawn in a 2-D embedding of the nodes: the graph's own
  spectral coordinates.
- :func:`plot_uncertainty`: the posterior uncertainty of a fitted
  :class:`~skmcal.SpectralGraphClassifier` over its nodes (variance or
  margin), with the labeled nodes.

Each function takes DataFrames or arrays and the path of a PNG file, writes
it and returns that path; without a path, :func:`plot_accuracy`,
:func:`plot_choices` and :func:`plot_uncertainty` return the
:class:`matplotlib.figure.Figure` instead (a notebook displays it). Figures are
drawn on matplotlib's Agg canvas directly, so ``pyplot`` and its global
backend are left alone. matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from numbers import Integral
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = [
    "plot_accuracy",
    "plot_choices",
    "plot_uncertainty",
    "spectral_coordinates",
]

PathLike = str | os.PathLike[str]

#: Binary ground truth as in the paper's figures: red and blue.
_BINARY_COLORS = ("#d62728", "#1f77b4")


_LINE_STYLES = ("-", "--", ":", "-.")


def _figure(n_rows=1, n_cols=1, *, size=(6.4, 4.8)):
    """A figure on an Agg canvas with a grid of axes (always a 2-D array)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(
            "skmcal.plotting needs matplotlib; install it with `pip install matplotlib`."
        ) from exc
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    return fig, axes


def _save(fig, path: PathLike, dpi: int) -> Path:
    path = Path(path)
    if path.is_dir():
        raise ValueError(
            f"path {str(path)!r} is a folder; give the PNG file to write, such as "
            f"{str(path / 'figure.png')!r}."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi)
    return path


def _finish(fig, path: PathLike | None, dpi: int):
    """Save to ``path`` and return it, or return the figure when ``path`` is None."""
    return fig if path is None else _save(fig, path, dpi)


def _trials(n: int) -> str:
    return f"{n} trial" if n == 1 else f"{n} trials"


def _check_columns(frame: pd.DataFrame, columns, what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            f"{what} takes a pandas DataFrame (run_experiment's, or pd.read_csv of its "
            f"CSV file); got {type(frame).__name__}."
        )
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{what} needs the columns {list(columns)}; missing {missing} "
            f"(it has {list(frame.columns)})."
        )


def _check_filled(frame: pd.DataFrame, columns, what: str) -> None:
    """Refuse missing values (NaN, None) in ``columns``: their rows would be dropped."""
    for column in columns:
        missing = frame[column].isna().to_numpy()
        if missing.any():
            raise ValueError(
                f"{what}: the {column} column is missing (NaN or None) in {int(missing.sum())} "
                f"of the {missing.size} rows (the first is row {int(np.flatnonzero(missing)[0])}); "
                f"every row needs its {column}."
            )


def plot_accuracy(
    results: pd.DataFrame,
    path: PathLike | None = None,
    *,
    title: str | None = None,
    dpi: int = 120,
):
    """Accuracy against the number of labels: mean +- std over trials per strategy.

    The std is the population std over trials (0 for a single trial). The
    title says over how many trials. A NaN accuracy (an iteration that left
    no unlabeled point to score) is left out of the mean and the std.

    Parameters
    ----------
    results : pandas.DataFrame
        Columns ``trial``, ``n_labeled``, ``strategy`` and ``accuracy``, as
        in the ``results`` of an :class:`~skmcal.experiment.ExperimentResult`.
    path : str or path-like, default=None
        The PNG file to write (its folder is created; an existing folder is
        refused); None returns the figure.
    title : str, default=None
        The first line of the title, such as the data set's name; the second
        line is "mean ± std over N trials".
    dpi : int, default=120
        Resolution.

    Returns
    -------
    Path or matplotlib.figure.Figure
        ``path``, or the figure when ``path`` is None.

    Raises
    ------
    ValueError
        If ``results`` is empty, if its ``trial``, ``n_labeled`` or
        ``strategy`` column has missing values, or if every accuracy is NaN
        (the figure would have no curve).
    """
    _check_columns(results, ["trial", "n_labeled", "strategy", "accuracy"], "plot_accuracy")
    if results.empty:
        raise ValueError("plot_accuracy: results is empty.")
    _check_filled(results, ["trial", "n_labeled", "strategy"], "plot_accuracy")
    accuracy = results["accuracy"]
    if not pd.api.types.is_numeric_dtype(accuracy):
        raise TypeError(
            f"plot_accuracy: the accuracy column must hold numbers; got dtype {accuracy.dtype} "
            f"({accuracy.head(3).tolist()}...)."
        )
    if accuracy.isna().all():
        raise ValueError(
            f"plot_accuracy: all {accuracy.size} accuracies are NaN, so there is no curve to "
            "draw (an accuracy is NaN when no unlabeled point is left to score)."
        )
    fig, axes = _figure()
    ax = axes[0, 0]
    for number, strategy in enumerate(pd.unique(results["strategy"])):
        part = results[results["strategy"] == strategy]
        grouped = part.groupby("n_labeled")["accuracy"]
        mean, std = grouped.mean(), grouped.std(ddof=0)
        x, mean, std = mean.index.to_numpy(), mean.to_numpy(), std.to_numpy()
        # Colours repeat after 10 curves: every further 10 get another line style.
        style = _LINE_STYLES[(number // 10) % len(_LINE_STYLES)]
        (line,) = ax.plot(x, mean, label=str(strategy), linewidth=1.6, linestyle=style)
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.2, lw=0)
    n_trials = results["trial"].nunique()
    ax.set_xlabel("number of labeled points")
    ax.set_ylabel("accuracy on unlabeled points")
    ax.set_title(f"{title or 'Accuracy'}\nmean \u00b1 std over {_trials(n_trials)}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _finish(fig, path, dpi)


def _integers(values) -> bool:
    """Whether ``values`` are whole numbers (integer dtype, or floats without fractions)."""
    return values.dtype.kind in "iu" or (
        values.dtype.kind == "f" and bool(np.all(np.isfinite(values) & (values % 1 == 0)))
    )


def _node_indices(values, what) -> np.ndarray:
    """``values`` as node indices: integers (not a boolean mask, not fractions)."""
    values = np.asarray(values).reshape(-1)
    if values.size and not _integers(values):
        raise ValueError(
            f"plot_choices: {what} must hold node indices (integers); got dtype "
            f"{values.dtype} ({values[:3].tolist()}...): a boolean mask gives its nodes by "
            f"np.flatnonzero(mask)."
        )
    return values.astype(np.intp)


def _iterations(values) -> np.ndarray:
    """The ``iteration`` column as whole numbers >= 0 (0: the initial labels)."""
    values = np.asarray(values).reshape(-1)
    if values.size and (not _integers(values) or values.min() < 0):
        raise ValueError(
            "plot_choices: choices.iteration must hold iteration numbers (integers >= 0, 0 "
            f"for the initial labels); got dtype {values.dtype} ({values[:3].tolist()}...)."
        )
    return values.astype(np.intp)


def _choices_by_strategy(choices, trial):
    """``{strategy: (initial nodes, queried nodes, query order)}``."""
    if isinstance(choices, pd.DataFrame):
        _check_columns(choices, ["trial", "strategy", "iteration", "node"], "plot_choices")
        part = choices[choices["trial"] == trial]
        if part.empty:
            raise ValueError(
                f"plot_choices: no choices of trial {trial}; trials present: "
                f"{sorted(choices['trial'].unique().tolist())}."
            )
        out = {}
        for strategy in pd.unique(part["strategy"]):
            rows = part[part["strategy"] == strategy]
            iteration = _iterations(rows["iteration"])
            nodes = _node_indices(rows["node"], "choices.node")
            initial, queried = nodes[iteration == 0], nodes[iteration > 0]
            order = iteration[iteration > 0].astype(float)
            out[str(strategy)] = (initial, queried, order)
        return out
    if isinstance(choices, Mapping):
        out = {}
        for key, value in choices.items():
            queried = _node_indices(value, f"choices[{key!r}]")
            out[str(key)] = (np.empty(0, dtype=np.intp), queried, np.arange(1.0, queried.size + 1))
        return out
    raise TypeError(
        "choices must be a DataFrame with columns trial, strategy, iteration, node, or a "
        f"mapping strategy -> node indices; got {type(choices).__name__}."
    )


def spectral_coordinates(X, *, n_neighbors: int = 10) -> np.ndarray:
    """A 2-D embedding of the nodes: the graph's own spectral coordinates.

    The second and third eigenvectors of the normalised Laplacian of the kNN
    graph (self-tuning Gaussian kernel, as
    :class:`~skmcal.SpectralGraphClassifier` builds it): the two smoothest
    non-constant functions on the graph, which separate its largest
    clusters. With many classes several share a region of the plane.

    Parameters
    ----------
    X : array-like, sparse matrix, SpectralGraph or fitted SpectralGraphClassifier
        The node data, whose graph is built here; or a graph (with at least
        three eigenpairs), or a fitted classifier, whose graph is used.
    n_neighbors : int, default=10
        Neighbours of the graph built from node data.

    Returns
    -------
    ndarray of shape (n_nodes, 2)

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``X`` is an estimator that is not fitted.
    TypeError
        If ``X`` is a string or another estimator without a graph.
    """
    from sklearn.base import BaseEstimator
    from sklearn.utils.validation import check_is_fitted

    from .graph import GRAPH_CACHE, GraphParams, SpectralGraph, node_set

    if isinstance(X, BaseEstimator):
        check_is_fitted(X)
        if not isinstance(getattr(X, "graph_", None), SpectralGraph):
            raise TypeError(
                f"spectral_coordinates takes node data, a SpectralGraph or a fitted "
                f"SpectralGraphClassifier; {type(X).__name__} has no graph_."
            )
    if isinstance(X, str | bytes):
        raise TypeError(
            f"spectral_coordinates takes node data, a SpectralGraph or a fitted "
            f"SpectralGraphClassifier; got the string {X!r}."
        )
    graph = getattr(X, "graph_", X)
    if not isinstance(graph, SpectralGraph):
        nodes = node_set(X)
        if nodes.n_nodes < 4:
            raise ValueError(f"spectral_coordinates needs at least 4 nodes; got {nodes.n_nodes}.")
        k = min(n_neighbors, nodes.n_nodes - 1)
        params = GraphParams("gaussian", k, min(5, k), 3.0, n_eigs=3)
        graph = GRAPH_CACHE.get_or_build(nodes, params)
    if graph.eigenvalues.size < 3:
        raise ValueError(
            f"spectral_coordinates needs 3 eigenpairs; the graph has {graph.eigenvalues.size}."
        )
    return np.array(graph.eigenvectors[:, 1:3])


def _given(embedding) -> bool:
    """Whether ``embedding`` is given coordinates (not None, a graph or a classifier)."""
    from .graph import SpectralGraph

    return not (
        embedding is None or isinstance(embedding, SpectralGraph) or hasattr(embedding, "fit")
    )


def _coordinates(X, embedding, what):
    """2-D positions of the nodes: ``embedding``, else ``X`` if 2-D, else spectral."""
    if embedding is None and X.shape[1] == 2:
        coords = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    elif embedding is None:
        coords = spectral_coordinates(X)
    elif not _given(embedding):
        coords = spectral_coordinates(embedding)
    else:
        accepted = (
            f"None, an array-like of shape ({X.shape[0]}, 2), a SpectralGraph or a fitted "
            "SpectralGraphClassifier"
        )
        if isinstance(embedding, str | bytes):
            raise TypeError(f"{what}: embedding must be {accepted}; got the string {embedding!r}.")
        try:
            coords = np.asarray(embedding, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{what}: embedding must be {accepted}; got {type(embedding).__name__}, which "
                f"does not convert to an array of numbers ({exc})."
            ) from exc
    if coords.ndim != 2 or coords.shape[1] != 2 or coords.shape[0] != X.shape[0]:
        raise ValueError(
            f"{what} draws a 2-D embedding of the {X.shape[0]} points; the embedding has "
            f"shape {coords.shape} (expected ({X.shape[0]}, 2))."
        )
    bad = ~np.isfinite(coords).all(axis=1)
    if bad.any():
        raise ValueError(
            f"{what}: {int(bad.sum())} of the {X.shape[0]} points have NaN or infinite "
            f"coordinates (the first is point {int(np.flatnonzero(bad)[0])}); every point "
            "needs finite coordinates to be drawn."
        )
    return coords


def _class_colors(y):
    """Class codes, colormap and vmax: red and blue for two classes, tab10/tab20 else."""
    if y.dtype == object:
        missing = np.flatnonzero([label is None for label in y])
        if missing.size:
            raise ValueError(
                f"plot_choices: y holds None for {missing.size} of the {y.size} points (the "
                f"first is point {int(missing[0])}); y gives every point's true label, which "
                "colours it."
            )
    try:
        classes, codes = np.unique(y, return_inverse=True)
    except TypeError as exc:
        kinds = sorted({type(label).__name__ for label in y})
        raise TypeError(
            f"plot_choices: y must hold labels of one kind (numbers or strings) that can be "
            f"sorted; got a mix of {kinds}."
        ) from exc
    if classes.size == 2:
        from matplotlib.colors import ListedColormap

        return classes, codes, ListedColormap(_BINARY_COLORS), 1
    cmap = "tab10" if classes.size <= 10 else "tab20"
    return classes, codes, cmap, max(classes.size - 1, 1)


def plot_choices(
    X,
    y,
    choices,
    path: PathLike | None = None,
    *,
    embedding=None,
    trial: int = 0,
    n_cols: int = 3,
    title: str | None = None,
    dpi: int = 120,
):
    """The points each strategy labeled, in order, over the ground truth.

    One panel per strategy: every point coloured by its true class (red and
    blue for two classes), the initial labels as black squares and the
    queried points as stars coloured by when they were picked (a colour bar
    gives the iteration). Data of more than two dimensions are drawn in a
    2-D embedding (by default the spectral coordinates of their graph, see
    :func:`spectral_coordinates`).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The points.
    y : array-like of shape (n_samples,)
        Their true labels.
    choices : pandas.DataFrame or mapping
        A DataFrame with columns ``trial``, ``strategy``, ``iteration`` and
        ``node`` (the ``choices`` of an
        :class:`~skmcal.experiment.ExperimentResult`; rows of iteration 0 are
        the initial labels), or a mapping ``strategy ->
        indices of the chosen points`` in the order they were picked.
    path : str or path-like, default=None
        The PNG file to write (its folder is created; an existing folder is
        refused); None returns the figure.
    embedding : None, array-like of shape (n_samples, 2), SpectralGraph or fitted \
            SpectralGraphClassifier, default=None
        Where to draw the points. None: ``X`` itself when it has two
        columns, else its spectral coordinates (a kNN graph is built). A
        graph or a classifier: the spectral coordinates of that graph (no
        graph is built). Every point needs finite coordinates: a NaN or
        infinite one is refused (the point would silently not be drawn).
    trial : int, default=0
        The trial drawn, when ``choices`` is a DataFrame.
    n_cols : int, default=3
        Panels per row, a positive integer (at most the number of panels are
        used).
    title : str, default=None
        The figure's title, such as the data set's name.
    dpi : int, default=120
        Resolution.

    Returns
    -------
    Path or matplotlib.figure.Figure
        ``path``, or the figure when ``path`` is None.

    Raises
    ------
    ValueError
        If the points' coordinates (``embedding``, or ``X`` when it has two
        columns) hold NaN or infinite values, if ``y`` holds None, or if
        ``choices`` holds anything other than whole node indices and
        iteration numbers.
    TypeError
        If ``embedding`` is not one of the accepted kinds, or if ``y`` mixes
        labels that cannot be sorted (such as numbers and strings).
    """
    y = np.asarray(y).reshape(-1)
    if not sp.issparse(X):
        X = np.asarray(X)  # lists and DataFrames as documented (array-like)
    if getattr(X, "ndim", 2) != 2 or len(X.shape) != 2:
        raise ValueError(f"plot_choices: X must be 2-D (n_samples, n_features); got {X.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
    panels = _choices_by_strategy(choices, trial)
    if not panels:
        raise ValueError("plot_choices: choices is empty.")
    for strategy, (initial, queried, _) in panels.items():
        nodes = np.concatenate([initial, queried])
        if nodes.size and (nodes.min() < 0 or nodes.max() >= X.shape[0]):
            raise ValueError(
                f"plot_choices: strategy {strategy!r} has indices outside the {X.shape[0]} points."
            )
    coords = _coordinates(X, embedding, "plot_choices")
    classes, codes, cmap, vmax = _class_colors(y)
    last = max([order.max() for _, _, order in panels.values() if order.size] or [1.0])

    from matplotlib.lines import Line2D

    if isinstance(n_cols, bool) or not isinstance(n_cols, Integral) or n_cols < 1:
        raise ValueError(f"plot_choices: n_cols must be a positive integer; got {n_cols!r}.")
    n_cols = min(int(n_cols), len(panels))
    n_rows = math.ceil(len(panels) / n_cols)
    fig, axes = _figure(n_rows, n_cols, size=(3.6 * n_cols + 1.2, 3.4 * n_rows + 0.9))
    size = 6 if X.shape[0] <= 2000 else 2
    picks = None
    for ax, (strategy, (initial, queried, order)) in zip(axes.flat, panels.items(), strict=False):
        ax.scatter(*coords.T, c=codes, cmap=cmap, vmin=0, vmax=vmax, s=size, alpha=0.5, lw=0)
        if queried.size:
            picks = ax.scatter(
                *coords[queried].T,
                c=order,
                cmap="viridis",
                vmin=1,
                vmax=max(last, 2),
                marker="*",
                s=70,
                edgecolors="black",
                linewidths=0.4,
                zorder=3,
            )
        if initial.size:
            ax.scatter(*coords[initial].T, marker="s", s=40, c="black", zorder=4)
        ax.set_title(f"{strategy} ({initial.size + queried.size} labels)", fontsize="medium")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_aspect("equal", adjustable="datalim")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)

    from matplotlib import colormaps

    palette = colormaps[cmap] if isinstance(cmap, str) else cmap
    dot = {"marker": "o", "linestyle": "", "markersize": 6}
    handles = [
        Line2D([], [], color=palette(code / vmax), label=f"class {name}", **dot)
        for code, name in enumerate(classes)
    ]
    if len(handles) > 10:
        handles = handles[:9] + [Line2D([], [], linestyle="", label=f"... {len(handles)} classes")]
    handles += [
        Line2D([], [], marker="s", color="black", linestyle="", label="initial label"),
        Line2D(
            [], [], marker="*", color="gold", markeredgecolor="black", linestyle="",
            markersize=11, label="queried (colour: order)",
        ),
    ]  # fmt: skip
    width = fig.get_figwidth()  # about 1.7 inch per legend entry
    fig.legend(handles=handles, loc="outside lower center", frameon=False, fontsize="small",
               ncols=max(1, min(len(handles), int(width // 1.7))))  # fmt: skip
    if picks is not None:
        bar = fig.colorbar(picks, ax=axes.ravel().tolist(), shrink=0.8, pad=0.02)
        by_iteration = isinstance(choices, pd.DataFrame)
        bar.set_label("iteration of the query" if by_iteration else "order of the pick")
    given = _given(embedding)
    spectral = not given and (embedding is not None or X.shape[1] != 2)
    text = "points chosen" + (f", trial {trial}" if isinstance(choices, pd.DataFrame) else "")
    text += " (spectral coordinates)" if spectral else ""
    fig.suptitle(f"{title}: {text}" if title else text)
    return _finish(fig, path, dpi)


def _node_uncertainty(clf, measure):
    """Per-node posterior variance of the latent values, or the margin."""
    if measure == "margin":
        U = clf._node_latent()
        if U.ndim == 1:
            return np.abs(U)
        top = np.sort(U, axis=1)
        return top[:, -1] - top[:, -2]
    return clf._point_values(clf.posterior_.latent_variance())


def plot_uncertainty(
    clf,
    X=None,
    path: PathLike | None = None,
    *,
    measure: str = "variance",
    title: str | None = None,
    dpi: int = 120,
):
    """The posterior uncertainty of a fitted classifier over its nodes.

    Every node coloured by ``measure``, the labeled nodes as blue squares.
    ``variance``: the Laplace posterior variance of its latent value,
    ``diag(V C V')`` (for ``ce``, of the centred class values, summed over
    the classes; ``model="full"`` and ``"sum"`` with ``gr``/``mgr``: with the
    prior's white-noise remainder, the diagonal of
    :meth:`~skmcal.SpectralGraphClassifier.posterior_cov`), large far from the
    labels; ``margin``: the gap between the two largest latent class values
    (binary: ``|u|``), small near the decision boundary.

    Parameters
    ----------
    clf : SpectralGraphClassifier
        Fitted.
    X : array-like of shape (n_nodes, 2), default=None
        Where to draw the nodes, in node order. None: the node data when
        they have two columns, else the graph's spectral coordinates
        (:func:`spectral_coordinates`).
    path : str or path-like, default=None
        The PNG file to write (its folder is created; an existing folder is
        refused); None returns the figure.
    measure : {"variance", "margin"}, default="variance"
        What colours the nodes.
    title : str, default=None
        The figure's title; None names the measure and the loss.
    dpi : int, default=120
        Resolution.

    Returns
    -------
    Path or matplotlib.figure.Figure
        ``path``, or the figure when ``path`` is None.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from skmcal import SpectralGraphClassifier
    >>> from skmcal.plotting import plot_uncertainty
    >>> X, y_true = make_moons(200, noise=0.05, random_state=0)
    >>> y = np.full(200, -1)
    >>> y[:4] = y_true[:4]
    >>> fig = plot_uncertainty(SpectralGraphClassifier(loss="probit").fit(X, y))
    >>> fig.axes[0].get_title()
    'posterior variance of the latent value (probit)'
    """
    from sklearn.utils.validation import check_is_fitted

    measures = {"variance": "posterior variance of the latent value", "margin": "margin"}
    if measure not in measures:
        raise ValueError(f"measure must be one of {list(measures)}; got {measure!r}.")
    check_is_fitted(clf)
    nodes = clf.node_set_.data
    coords = _coordinates(nodes, X if X is not None else (None if nodes.shape[1] == 2 else clf),
                          "plot_uncertainty")  # fmt: skip
    values = _node_uncertainty(clf, measure)
    fig, axes = _figure(size=(6.4, 5.2))
    ax = axes[0, 0]
    order = np.argsort(values) if measure == "variance" else np.argsort(-values)
    cmap = "magma_r" if measure == "variance" else "magma"
    points = ax.scatter(*coords[order].T, c=values[order], cmap=cmap, s=12, lw=0)
    labeled = clf.labeled_nodes_
    ax.scatter(*coords[labeled].T, marker="s", s=36, c="#1f77b4", edgecolors="white",
               linewidths=0.6, label=f"labeled ({labeled.size})", zorder=3)  # fmt: skip
    hint = "large" if measure == "variance" else "small"
    fig.colorbar(points, ax=ax, shrink=0.85).set_label(f"{measures[measure]} ({hint}: uncertain)")
    ax.set_title(title or f"{measures[measure]} ({clf.loss_})")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="best", fontsize="small")
    return _finish(fig, path, dpi)
