#!/usr/bin/env python
"""The timing figure and table of the active-learning benchmark, against N.

Usage::

    python benchmarks/plot_timing.py [--results benchmarks/results] [--out benchmarks/results]

Reads every ``<results>/bench_al_<N>.csv`` written by ``bench_al.py`` (one
file per N), and every ``<results>/bench_baselines_<N>.csv`` written by
``bench_baselines.py`` when there are any, and writes

``<out>/timing_vs_n.png``
    Milliseconds per active-learning iteration (median over the iterations,
    column ``total_ms``) against N, log-log: one line per skmcal strategy x
    loss (colour: strategy, marker: loss, dashed: the multiclass losses mgr
    and ce), one coloured dash-dot line with open markers per baseline, and
    one grey dotted line per graphlearning acquisition and run (rows
    ``graphlearning:<acq>``; ``classes`` tells the binary run, 2, from the one
    on the 10 classes). With more than 10 lines the legend goes beside the axes.
``<out>/timing_vs_n.md``
    The same numbers as tables: skmcal (strategy x loss by N, with the
    graphlearning counterpart's ms in parentheses), graphlearning
    (acquisition x classes by N) and the baselines (strategy x model by N).

Machine, versions and load of each run are in the ``bench_al.md`` and
``bench_baselines.md`` written with the CSV files.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import _harness as h
import numpy as np
import pandas as pd

#: Columns of bench_al_<N>.csv that this script reads.
COLUMNS = ("N", "strategy", "loss", "classes", "iterations", "total_ms", "gl_total_ms")
#: Columns of bench_baselines_<N>.csv that this script reads.
BASELINE_COLUMNS = ("N", "strategy", "loss", "classes", "iterations", "total_ms")
CSV_NAME = re.compile(r"bench_al_(\d+)\.csv")
BASELINE_CSV_NAME = re.compile(r"bench_baselines_(\d+)\.csv")
GL_PREFIX = "graphlearning:"
FIGURE, TABLE = "timing_vs_n.png", "timing_vs_n.md"
#: Losses whose lines are dashed (multiclass models); markers: one per loss or line.
MULTICLASS = ("mgr", "ce")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def find_results(results: Path, name: re.Pattern = CSV_NAME) -> list[tuple[int, Path]]:
    """``(N, path)`` of every ``bench_al_<N>.csv`` (or other ``name``) in ``results``, by N."""
    found = [(int(m.group(1)), path) for path in results.glob("*.csv")
             if (m := name.fullmatch(path.name))]
    return sorted(found)


def read_results(files, columns: Sequence[str] = COLUMNS, script: str = "bench_al.py"):
    """The rows of all files in one frame, after checking their columns, N and times."""
    frames = []
    for n, path in files:
        frame = pd.read_csv(path)
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{path} lacks the columns {missing}; it has "
                             f"{list(frame.columns)}. Is it a {script} results file?")
        if frame.empty:
            raise ValueError(f"{path} holds no rows.")
        if set(frame["N"]) != {n}:
            raise ValueError(f"{path} is named for N = {n} but its rows have N = "
                             f"{sorted(set(frame['N']))}.")
        times = frame["total_ms"].to_numpy(dtype=float)
        if np.any(~np.isfinite(times) | (times <= 0)):
            raise ValueError(f"{path}: total_ms must hold positive, finite times (log axes).")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def split(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """skmcal rows labelled ``strategy:loss`` and graphlearning rows labelled for the legend."""
    is_gl = rows["strategy"].str.startswith(GL_PREFIX)
    ours = rows[~is_gl].assign(label=lambda f: f["strategy"] + ":" + f["loss"])
    gl = rows[is_gl].copy()
    gl["acquisition"] = gl["strategy"].str.removeprefix(GL_PREFIX)
    gl["classes"] = gl["classes"].astype(int)
    gl["label"] = ("graphlearning " + gl["acquisition"] + " ("
                   + gl["classes"].astype(str) + " classes)")
    return ours, gl


def draw(path: Path, ours, gl, baselines, title: str) -> Path:
    """The log-log figure of ms per iteration against N (see the module docstring)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    strategies = list(pd.unique(ours["label"]))
    names = list(dict.fromkeys(s.rsplit(":", 1)[0] for s in strategies))
    losses = list(dict.fromkeys(s.rsplit(":", 1)[1] for s in strategies))
    others = [] if baselines is None else list(pd.unique(baselines["label"]))
    references = list(pd.unique(gl["label"]))
    n_lines = len(strategies) + len(others) + len(references)
    outside, n_cols = n_lines > 10, 1 if n_lines <= 24 else 2
    size = (6.4 + 2.6 * n_cols, max(4.8, 0.19 * n_lines / n_cols + 1.0))
    fig = Figure(figsize=size if outside else (6.4, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()

    def line(frame, label, **style):
        stats = frame[frame["label"] == label].groupby("N")["total_ms"].agg(["mean", "std"])
        std = stats["std"].fillna(0.0).to_numpy()
        ax.errorbar(stats.index.to_numpy(dtype=float), stats["mean"].to_numpy(), label=label,
                    yerr=std if std.any() else None, capsize=2, **style)

    for label in strategies:
        name, loss = label.rsplit(":", 1)
        line(ours, label, color=f"C{names.index(name) % 10}", markersize=4,
             marker=MARKERS[losses.index(loss) % len(MARKERS)],
             linestyle="--" if loss in MULTICLASS else "-")
    # tab10 colours the strategies left, without C7 (grey, the references').
    used = {number % 10 for number in range(len(names))}
    palette = [f"C{i}" for i in range(10) if i != 7 and i not in used] or [
        f"C{i}" for i in range(10) if i != 7]
    for i, label in enumerate(others):
        line(baselines, label, color=palette[i % len(palette)], marker=MARKERS[i % len(MARKERS)],
             markersize=5, markerfacecolor="none", linestyle="-.", linewidth=1.6)
    for i, (label, grey) in enumerate(zip(references, np.linspace(0.1, 0.6, len(references)),
                                          strict=True)):
        line(gl, label, color=str(round(float(grey), 3)), marker=MARKERS[i % len(MARKERS)],
             markersize=4, markerfacecolor="none", linestyle=":", linewidth=1.6)
    ax.set(xscale="log", yscale="log", xlabel="N (nodes)",
           ylabel="milliseconds per iteration", title=title)
    ax.grid(True, which="both", alpha=0.3)
    if outside:
        fig.legend(loc="outside right upper", fontsize="small", ncols=n_cols)
    else:
        ax.legend(fontsize="small")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=120)
    return path


def by_n(frame: pd.DataFrame, keys: Sequence[str], sizes: Sequence[int], cell) -> list[list[str]]:
    """One table row per value of ``keys`` (in order of appearance), one cell per N."""
    body = []
    for key, part in frame.groupby(list(keys), sort=False):
        rows = {row.N: row for row in part.itertuples(index=False)}
        body.append([*map(str, key), *(cell(rows[n]) if n in rows else "-" for n in sizes)])
    return body


def _ms(value) -> str:
    return "-" if pd.isna(value) else f"{value:.1f}"


def _iterations(frames) -> str:
    """``"N: iterations"`` for every N of the frames."""
    return ", ".join(f"{n:,}: {'/'.join(map(str, sorted(set(part['iterations']))))}"
                     for n, part in pd.concat(frames).groupby("N"))


def write_table(path: Path, ours, gl, files, command: str, baselines=None, baseline_files=()):
    """The markdown tables by N: skmcal (graphlearning counterpart), graphlearning, baselines."""
    has_baselines = baselines is not None and not baselines.empty
    sizes = sorted({n for n, _ in files} | {n for n, _ in baseline_files})
    columns = [f"N = {n:,}" for n in sizes]

    def ours_cell(row):
        text = _ms(row.total_ms)
        return text if pd.isna(row.gl_total_ms) else f"{text} ({_ms(row.gl_total_ms)})"

    scripts = "`benchmarks/bench_al.py`" + (
        " and `benchmarks/bench_baselines.py`" if has_baselines else "")
    names = [p.name for _, p in files] + [p.name for _, p in baseline_files if has_baselines]
    lines = [
        f"# Time per active-learning iteration against N ({scripts})",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- data: {', '.join(f'`{name}`' for name in names)} in `{files[0][1].parent}`; machine, "
        "versions, load and set-up: the `bench_al.md`"
        + (" and `bench_baselines.md`" if has_baselines else "") + " written with them",
        "- one iteration: query B = 5 nodes among a random 10% of the unlabeled nodes, then "
        "update on the new labels (modAL path); milliseconds, median over the iterations "
        f"(iterations per N: {_iterations([ours, gl])})",
        "- in parentheses: graphlearning's iteration with the counterpart acquisition "
        "(model_change, var_opt, sigma_opt, unc_sampling) on the same graph, on the binary "
        "labels for gr / logistic / probit and on the 10 classes for mgr / ce",
        f"- figure: `{FIGURE}`",
        "",
        "## skmcal: ms per iteration (graphlearning counterpart)",
        "",
        *h.markdown(["strategy", "loss", *columns],
                    by_n(ours, ["strategy", "loss"], sizes, ours_cell)),
        "",
        "## graphlearning: ms per iteration",
        "",
    ]
    if gl.empty:
        lines.append("No graphlearning rows (bench_al.py ran with --no-graphlearning).")
    else:
        lines += h.markdown(["acquisition", "classes", *columns], by_n(
            gl, ["acquisition", "classes"], sizes, lambda row: _ms(row.total_ms)))
    if has_baselines:
        lines += [
            "",
            "## The paper's baselines (`skmcal.baselines`): ms per iteration",
            "",
            "- skmcal's implementations of VOPT-HF, SOPT-HF (harmonic-functions model on the "
            "full graph) and DB-RKHS (kernel interpolation of the node data), on the binary "
            "labels, each in its own model (column model); one iteration = the query (scores "
            "on a random 10% of the unlabeled nodes + top 5) + the update (the carrier "
            "classifier's refit on the labeled nodes + the refit of the baseline's model); "
            "update and query apart in `bench_baselines.md` (iterations per N: "
            f"{_iterations([baselines])})",
            "",
            *h.markdown(["strategy", "model", *columns], by_n(
                baselines, ["strategy", "loss"], sizes, lambda row: _ms(row.total_ms))),
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results"),
                        help="folder of the bench_al_<N>.csv and bench_baselines_<N>.csv files")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"),
                        help=f"folder of {FIGURE} and {TABLE}")
    args = parser.parse_args(argv)
    files = find_results(args.results)
    baseline_files = find_results(args.results, BASELINE_CSV_NAME)
    if not files:
        print(f"error: no bench_al_<N>.csv file in {args.results}; run benchmarks/bench_al.py "
              "first (it writes them there), or give the folder that holds them with --results"
              + (f" (its {len(baseline_files)} bench_baselines_<N>.csv files are drawn with "
                 "the bench_al ones, not alone)." if baseline_files else "."), file=sys.stderr)
        return 2
    try:
        ours, gl = split(read_results(files))
        baselines = None
        if baseline_files:
            baselines = read_results(baseline_files, BASELINE_COLUMNS, "bench_baselines.py")
            # labelled as the paper names them: "VOPT-HF (baseline)"
            baselines["label"] = baselines["strategy"].str.upper() + " (baseline)"
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"using {len(files)} bench_al and {len(baseline_files)} bench_baselines results "
          f"file(s) in {args.results}:")
    for n, path in files:
        print(f"  {path.name}: N = {n:,}, {int((ours['N'] == n).sum())} skmcal rows, "
              f"{int((gl['N'] == n).sum())} graphlearning rows")
    for n, path in baseline_files:
        print(f"  {path.name}: N = {n:,}, {int((baselines['N'] == n).sum())} baseline rows")
    if len({n for n, _ in files} | {n for n, _ in baseline_files}) == 1:
        print("note: one N only, so every line of the figure is a single point.")
    args.out.mkdir(parents=True, exist_ok=True)
    title = "Time per active-learning iteration (B = 5, 10% candidates)"
    print(f"wrote {draw(args.out / FIGURE, ours, gl, baselines, title)}")
    table = write_table(args.out / TABLE, ours, gl, files, h.command_line(argv), baselines,
                        baseline_files)
    print(f"wrote {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
