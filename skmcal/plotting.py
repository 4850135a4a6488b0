"""Figures of active-learning experiments, written as PNG files.

- :func:`plot_accuracy`: accuracy (mean +- std over trials) against the number
  of labels, one curve per strategy.
- :func:`plot_choices`: for 2-D data, the points each strategy labeled, over
  the ground truth (one panel per strategy, like the paper's figure of the
  Binary-Clusters choices).

Each function takes DataFrames or arrays and the path of the PNG file, and
returns that path. Figures are drawn on matplotlib's Agg canvas directly, so
``pyplot`` and its global backend are left alone. matplotlib is imported only
when a figure is drawn.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["plot_accuracy", "plot_choices"]

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
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi)
    return path


def _check_columns(frame: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{what} needs the columns {list(columns)}; missing {missing} "
            f"(it has {list(frame.columns)})."
        )


def plot_accuracy(
    results: pd.DataFrame,
    path: PathLike,
    *,
    title: str | None = None,
    dpi: int = 120,
) -> Path:
    """Accuracy against the number of labels: mean +- std over trials per strategy.

    The std is the population std over trials (0 for a single trial).

    Parameters
    ----------
    results : pandas.DataFrame
        Columns ``trial``, ``n_labeled``, ``strategy`` and ``accuracy``, as
        in :attr:`skmcal.experiment.ExperimentResult.results`.
    path : str or path-like
        The PNG file to write (its folder is created).
    title : str, default=None
        The figure's title.
    dpi : int, default=120
        Resolution.

    Returns
    -------
    Path
        ``path``.
    """
    _check_columns(results, ["trial", "n_labeled", "strategy", "accuracy"], "plot_accuracy")
    if results.empty:
        raise ValueError("plot_accuracy: results is empty.")
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
    ax.set_title(title or f"Accuracy, mean \u00b1 std over {n_trials} trial(s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _save(fig, path, dpi)


def _choices_by_strategy(choices, trial):
    """``{strategy: (initial nodes, queried nodes)}`` from a DataFrame or a mapping."""
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
            initial = rows.loc[rows["iteration"] == 0, "node"].to_numpy(dtype=np.intp)
            queried = rows.loc[rows["iteration"] > 0, "node"].to_numpy(dtype=np.intp)
            out[str(strategy)] = (initial, queried)
        return out
    if isinstance(choices, Mapping):
        return {
            str(k): (np.empty(0, dtype=np.intp), np.asarray(v, dtype=np.intp).reshape(-1))
            for k, v in choices.items()
        }
    raise TypeError(
        "choices must be a DataFrame with columns trial, strategy, iteration, node, or a "
        f"mapping strategy -> node indices; got {type(choices).__name__}."
    )


def plot_choices(
    X,
    y,
    choices,
    path: PathLike,
    *,
    trial: int = 0,
    n_cols: int = 3,
    title: str | None = None,
    dpi: int = 120,
) -> Path:
    """The points each strategy labeled, over the ground truth of 2-D data.

    One panel per strategy: every point coloured by its true class (red and
    blue for two classes), the initial labels as black squares and the
    queried points as yellow stars.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, 2)
        The points.
    y : array-like of shape (n_samples,)
        Their true labels.
    choices : pandas.DataFrame or mapping
        A DataFrame with columns ``trial``, ``strategy``, ``iteration`` and
        ``node`` (:attr:`skmcal.experiment.ExperimentResult.choices`; rows of
        iteration 0 are the initial labels), or a mapping ``strategy ->
        indices of the chosen points``.
    path : str or path-like
        The PNG file to write (its folder is created).
    trial : int, default=0
        The trial drawn, when ``choices`` is a DataFrame.
    n_cols : int, default=3
        Panels per row.
    title : str, default=None
        The figure's title.
    dpi : int, default=120
        Resolution.

    Returns
    -------
    Path
        ``path``.
    """
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    y = np.asarray(y).reshape(-1)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"plot_choices draws 2-D points; X has shape {X.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
    panels = _choices_by_strategy(choices, trial)
    if not panels:
        raise ValueError("plot_choices: choices is empty.")
    for strategy, (initial, queried) in panels.items():
        nodes = np.concatenate([initial, queried])
        if nodes.size and (nodes.min() < 0 or nodes.max() >= X.shape[0]):
            raise ValueError(
                f"plot_choices: strategy {strategy!r} has indices outside the {X.shape[0]} points."
            )

    classes, codes = np.unique(y, return_inverse=True)
    if classes.size == 2:
        from matplotlib.colors import ListedColormap

        cmap, vmax = ListedColormap(_BINARY_COLORS), 1
    else:
        cmap, vmax = "tab10" if classes.size <= 10 else "tab20", max(classes.size - 1, 1)

    n_cols = max(1, min(n_cols, len(panels)))
    n_rows = math.ceil(len(panels) / n_cols)
    fig, axes = _figure(n_rows, n_cols, size=(3.6 * n_cols, 3.4 * n_rows))
    for ax, (strategy, (initial, queried)) in zip(axes.flat, panels.items(), strict=False):
        ax.scatter(X[:, 0], X[:, 1], c=codes, cmap=cmap, vmin=0, vmax=vmax, s=6, alpha=0.6, lw=0)
        if queried.size:
            ax.scatter(
                X[queried, 0],
                X[queried, 1],
                marker="*",
                s=70,
                c="yellow",
                edgecolors="black",
                linewidths=0.6,
                label="queried",
            )
        if initial.size:
            ax.scatter(
                X[initial, 0], X[initial, 1], marker="s", s=40, c="black", label="initial", zorder=3
            )
        ax.set_title(f"{strategy} ({initial.size + queried.size} labels)", fontsize="medium")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_aspect("equal", adjustable="datalim")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return _save(fig, path, dpi)
