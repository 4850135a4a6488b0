"""Figures of active-learning experiments, written as PNG files.

- :func:`plot_accuracy`: accuracy (mean +- std over trials) against the number
  of labels, one curve per strategy.
- :func:`plot_choices`: for 2-D data, the points each strategy labeled, over
  the ground truth (one panel per strategy, like the paper's figure of the
  Binary-Clusters choices).
- :func:`plot_timing`: time per iteration against the number of nodes
  ``N``, one line per strategy (log-log), and optionally dash-dot lines of
  other strategies in their own models (the paper's baselines) and grey
  reference lines of another implementation.

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

__all__ = ["plot_accuracy", "plot_choices", "plot_timing"]

PathLike = str | os.PathLike[str]

#: Binary ground truth as in the paper's figures: red and blue.
_BINARY_COLORS = ("#d62728", "#1f77b4")

#: Losses whose curves are dashed in :func:`plot_timing` (multiclass models).
_MULTICLASS_LOSSES = ("mgr", "ce")


_LINE_STYLES = ("-", "--", ":", "-.")

#: Markers of :func:`plot_timing`: one per loss, one per reference line.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


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


def _timing_stats(frame: pd.DataFrame, strategy, strategy_col, n_col, time_col):
    """``(N, mean, std)`` of one strategy, sorted by ``N``; std None without repeats."""
    part = frame[frame[strategy_col] == strategy]
    stats = part.groupby(n_col)[time_col].agg(["mean", "std"]).sort_index()
    std = stats["std"].fillna(0.0).to_numpy()
    return stats.index.to_numpy(dtype=float), stats["mean"].to_numpy(), std if std.any() else None


def _check_timings(frame: pd.DataFrame, columns, time_col: str, what: str) -> None:
    _check_columns(frame, columns, what)
    if frame.empty:
        raise ValueError(f"{what}: the timings are empty.")
    times = frame[time_col].to_numpy(dtype=float)
    if np.any(~np.isfinite(times) | (times <= 0)):
        raise ValueError(f"{what}: {time_col!r} must hold positive, finite times.")


def plot_timing(
    timings: pd.DataFrame,
    path: PathLike,
    *,
    strategy_col: str = "strategy",
    n_col: str = "N",
    time_col: str = "seconds",
    reference: pd.DataFrame | None = None,
    baselines: pd.DataFrame | None = None,
    unit: str = "s",
    title: str | None = None,
    dpi: int = 120,
) -> Path:
    """Time per active-learning iteration against the number of nodes ``N``.

    One line per strategy on log-log axes, through the mean time at each
    ``N`` (error bars: std over repeated rows, if any). Strategies named
    ``name:loss`` share a colour per ``name`` and a marker per loss; those
    with a multiclass loss (``:mgr``, ``:ce``) are dashed, the binary ones
    solid, as in the paper's timing figure. Other strategies in their own
    models (``baselines``, such as the paper's baselines of
    :mod:`skmcal.baselines`) are drawn as coloured dash-dot lines, and
    timings of another implementation (``reference``) as grey dotted lines.

    Parameters
    ----------
    timings : pandas.DataFrame
        One row per measurement, with columns ``strategy_col``, ``n_col`` and
        ``time_col``.
    path : str or path-like
        The PNG file to write (its folder is created).
    strategy_col, n_col, time_col : str, default="strategy", "N", "seconds"
        The column names (of ``timings`` and ``reference``).
    reference : pandas.DataFrame, default=None
        Timings to compare with, such as graphlearning's, with the same
        columns: one grey dotted line per value of ``strategy_col``,
        labelled by that value. None draws none.
    baselines : pandas.DataFrame, default=None
        Timings of other strategies, such as VOPT-HF, SOPT-HF and DB-RKHS,
        with the same columns: one dash-dot line per value of
        ``strategy_col``, labelled by that value, with open markers, in
        colours that ``timings``' strategies do not use (never grey). None
        draws none.
    unit : {"s", "ms"}, default="s"
        The unit of ``time_col``, for the axis label.
    title : str, default=None
        The figure's title.
    dpi : int, default=120
        Resolution.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from skmcal.plotting import plot_timing
    >>> ours = pd.DataFrame({"strategy": ["mc:gr", "mc:gr"], "N": [1e4, 7e4], "ms": [2.2, 10.0]})
    >>> gl = pd.DataFrame({"strategy": ["graphlearning"] * 2, "N": [1e4, 7e4], "ms": [111, 1245]})
    >>> path = Path(tempfile.mkdtemp()) / "timing.png"
    >>> plot_timing(ours, path, time_col="ms", unit="ms", reference=gl).name
    'timing.png'
    >>> hf = pd.DataFrame({"strategy": ["baseline vopt-hf"] * 2, "N": [1e3, 1e4], "ms": [9, 900]})
    >>> plot_timing(ours, path, time_col="ms", unit="ms", reference=gl, baselines=hf).name
    'timing.png'
    """
    units = {"s": "seconds", "ms": "milliseconds"}
    if unit not in units:
        raise ValueError(f"plot_timing: unit must be one of {list(units)}; got {unit!r}.")
    columns = [strategy_col, n_col, time_col]
    _check_timings(timings, columns, time_col, "plot_timing")
    references = []
    if reference is not None:
        _check_timings(reference, columns, time_col, "plot_timing (reference)")
        references = list(pd.unique(reference[strategy_col]))
    others = []
    if baselines is not None:
        _check_timings(baselines, columns, time_col, "plot_timing (baselines)")
        others = list(pd.unique(baselines[strategy_col]))

    strategies = [str(s) for s in pd.unique(timings[strategy_col])]
    names = list(dict.fromkeys(s.split(":", 1)[0] for s in strategies))
    losses = list(dict.fromkeys(s.rsplit(":", 1)[1] for s in strategies if ":" in s))
    n_lines = len(strategies) + len(others) + len(references)
    outside = n_lines > 10
    n_legend_cols = 1 if n_lines <= 24 else 2
    size = (6.4 + 2.6 * n_legend_cols, max(4.8, 0.19 * n_lines / n_legend_cols + 1.0))
    fig, axes = _figure(size=size if outside else (6.4, 4.8))
    ax = axes[0, 0]
    for strategy in pd.unique(timings[strategy_col]):
        label = str(strategy)
        loss = label.rsplit(":", 1)[1] if ":" in label else None
        x, mean, std = _timing_stats(timings, strategy, strategy_col, n_col, time_col)
        ax.errorbar(
            x,
            mean,
            yerr=std,
            label=label,
            color=f"C{names.index(label.split(':', 1)[0]) % 10}",
            marker=_MARKERS[losses.index(loss) % len(_MARKERS)] if loss else "o",
            markersize=4,
            capsize=2,
            linestyle="--" if loss in _MULTICLASS_LOSSES else "-",
        )
    # tab10 colours left by the strategies' names, without C7 (grey, the references').
    used = {number % 10 for number in range(len(names))}
    free = [f"C{i}" for i in range(10) if i != 7 and i not in used]
    palette = free or [f"C{i}" for i in range(10) if i != 7]
    for number, strategy in enumerate(others):
        x, mean, std = _timing_stats(baselines, strategy, strategy_col, n_col, time_col)
        ax.errorbar(
            x,
            mean,
            yerr=std,
            label=str(strategy),
            color=palette[number % len(palette)],
            marker=_MARKERS[number % len(_MARKERS)],
            markersize=5,
            markerfacecolor="none",
            capsize=2,
            linestyle="-.",
            linewidth=1.6,
        )
    greys = np.linspace(0.1, 0.6, len(references))
    for number, (strategy, grey) in enumerate(zip(references, greys, strict=True)):
        x, mean, std = _timing_stats(reference, strategy, strategy_col, n_col, time_col)
        ax.errorbar(
            x,
            mean,
            yerr=std,
            label=str(strategy),
            color=str(round(float(grey), 3)),
            marker=_MARKERS[number % len(_MARKERS)],
            markersize=4,
            markerfacecolor="none",
            capsize=2,
            linestyle=":",
            linewidth=1.6,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (nodes)")
    ax.set_ylabel(f"{units[unit]} per iteration")
    ax.set_title(title or "Time per active-learning iteration")
    ax.grid(True, which="both", alpha=0.3)
    if outside:
        fig.legend(loc="outside right upper", fontsize="small", ncols=n_legend_cols)
    else:
        ax.legend(fontsize="small")
    return _save(fig, path, dpi)
