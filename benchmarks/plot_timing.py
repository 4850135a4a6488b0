#!/usr/bin/env python
"""The timing figure and table of the active-learning benchmark, against N.

Usage::

    python benchmarks/plot_timing.py [--results benchmarks/results] [--out benchmarks/results]

Reads every ``<results>/bench_al_<N>.csv`` written by ``benchmarks/bench_al.py``
(one file per N; see that script for what is timed) and writes

``<out>/timing_vs_n.png``
    Milliseconds per active-learning iteration (median over the iterations,
    column ``total_ms``: the query of B = 5 nodes among a random 10% of the
    unlabeled ones plus the update, modAL path) against N, log-log: one line
    per skmcal strategy x loss (colour: strategy, marker: loss, dashed: the
    multiclass losses mgr and ce), and one grey dotted line per graphlearning
    acquisition and run (the rows ``graphlearning:<acq>``; ``classes`` tells
    the run on the binary labels, 2, from the one on the 10 classes).
``<out>/timing_vs_n.md``
    The same numbers as tables: skmcal (strategy x loss by N, with the
    graphlearning counterpart's ms in parentheses, column ``gl_total_ms``)
    and graphlearning (acquisition x classes by N).

The machine, the versions and the load of each run are in the
``bench_al.md`` that ``bench_al.py`` wrote with the CSV files.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from skmcal.plotting import plot_timing

#: Columns of bench_al_<N>.csv that this script reads.
COLUMNS = ("N", "strategy", "loss", "classes", "iterations", "total_ms", "gl_total_ms")
CSV_NAME = re.compile(r"bench_al_(\d+)\.csv")
GL_PREFIX = "graphlearning:"
FIGURE, TABLE = "timing_vs_n.png", "timing_vs_n.md"


def find_results(results: Path) -> list[tuple[int, Path]]:
    """``(N, path)`` of every ``bench_al_<N>.csv`` in ``results``, by increasing N."""
    found = []
    for path in results.glob("bench_al_*.csv"):
        match = CSV_NAME.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def read_results(files: Sequence[tuple[int, Path]]) -> pd.DataFrame:
    """The rows of all files in one frame, after checking their columns and N."""
    frames = []
    for n, path in files:
        frame = pd.read_csv(path)
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{path} lacks the columns {missing}; it has {list(frame.columns)}. "
                "Is it a bench_al.py results file?"
            )
        if frame.empty:
            raise ValueError(f"{path} holds no rows.")
        if set(frame["N"]) != {n}:
            raise ValueError(
                f"{path} is named for N = {n} but its rows have N = {sorted(set(frame['N']))}."
            )
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def split(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """skmcal rows labelled ``strategy:loss`` and graphlearning rows labelled for the legend."""
    is_gl = rows["strategy"].str.startswith(GL_PREFIX)
    ours = rows[~is_gl].copy()
    ours["label"] = ours["strategy"] + ":" + ours["loss"]
    gl = rows[is_gl].copy()
    gl["acquisition"] = gl["strategy"].str.removeprefix(GL_PREFIX)
    gl["classes"] = gl["classes"].astype(int)
    gl["label"] = "graphlearning " + gl["acquisition"] + " (" + gl["classes"].astype(str)
    gl["label"] += " classes)"
    return ours, gl


def _ms(value) -> str:
    return "-" if pd.isna(value) else f"{value:.1f}"


def _markdown(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def by_n(frame: pd.DataFrame, keys: Sequence[str], sizes: Sequence[int], cell) -> list[list[str]]:
    """One table row per value of ``keys`` (in order of appearance), one cell per N."""
    body = []
    for key, part in frame.groupby(list(keys), sort=False):
        rows = {row.N: row for row in part.itertuples(index=False)}
        body.append([*map(str, key), *(cell(rows[n]) if n in rows else "-" for n in sizes)])
    return body


def write_table(
    path: Path,
    ours: pd.DataFrame,
    gl: pd.DataFrame,
    files: Sequence[tuple[int, Path]],
    command: str,
) -> Path:
    """The markdown tables: skmcal (graphlearning counterpart) and graphlearning, by N."""
    sizes = [n for n, _ in files]
    columns = [f"N = {n:,}" for n in sizes]

    def ours_cell(row):
        text = _ms(row.total_ms)
        return text if pd.isna(row.gl_total_ms) else f"{text} ({_ms(row.gl_total_ms)})"

    iterations = ", ".join(
        f"{n:,}: {'/'.join(map(str, sorted(set(part['iterations']))))}"
        for n, part in pd.concat([ours, gl]).groupby("N")
    )
    lines = [
        "# Time per active-learning iteration against N (`benchmarks/bench_al.py`)",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- data: {', '.join(f'`{p.name}`' for _, p in files)} in `{files[0][1].parent}`; "
        "machine, versions, load and set-up: the `bench_al.md` written with them",
        "- one iteration: query B = 5 nodes among a random 10% of the unlabeled nodes, then "
        "update on the new labels (modAL path); milliseconds, median over the iterations "
        f"(iterations per N: {iterations})",
        "- in parentheses: graphlearning's iteration with the counterpart acquisition "
        "(model_change, var_opt, sigma_opt, unc_sampling) on the same graph, on the binary "
        "labels for gr / logistic / probit and on the 10 classes for mgr / ce",
        f"- figure: `{FIGURE}`",
        "",
        "## skmcal: ms per iteration (graphlearning counterpart)",
        "",
        *_markdown(
            ["strategy", "loss", *columns], by_n(ours, ["strategy", "loss"], sizes, ours_cell)
        ),
        "",
        "## graphlearning: ms per iteration",
        "",
    ]
    if gl.empty:
        lines.append("No graphlearning rows (bench_al.py ran with --no-graphlearning).")
    else:
        body = by_n(gl, ["acquisition", "classes"], sizes, lambda row: _ms(row.total_ms))
        lines += _markdown(["acquisition", "classes", *columns], body)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Timing figure and table (ms per iteration against N) from the "
        "bench_al_<N>.csv files of benchmarks/bench_al.py."
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=Path("benchmarks/results"),
        help="folder of the bench_al_<N>.csv files (benchmarks/results)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("benchmarks/results"),
        help=f"folder of {FIGURE} and {TABLE} (benchmarks/results)",
    )
    args = parser.parse_args(argv)
    command = shlex.join(["python", "benchmarks/plot_timing.py", *sys.argv[1:]])

    files = find_results(args.results)
    if not files:
        print(
            f"error: no bench_al_<N>.csv file in {args.results}; run benchmarks/bench_al.py "
            "first (it writes them there), or give the folder that holds them with --results.",
            file=sys.stderr,
        )
        return 2
    try:
        rows = read_results(files)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ours, gl = split(rows)
    print(f"using {len(files)} results file(s) in {args.results}:")
    for n, path in files:
        print(
            f"  {path.name}: N = {n:,}, {int((ours['N'] == n).sum())} skmcal rows, "
            f"{int((gl['N'] == n).sum())} graphlearning rows"
        )
    if len(files) == 1:
        print("note: one N only, so every line of the figure is a single point.")

    args.out.mkdir(parents=True, exist_ok=True)
    figure = plot_timing(
        ours,
        args.out / FIGURE,
        strategy_col="label",
        time_col="total_ms",
        unit="ms",
        reference=None if gl.empty else gl,
        title="Time per active-learning iteration (B = 5, 10% candidates)",
    )
    table = write_table(args.out / TABLE, ours, gl, files, command)
    print(f"wrote {figure}")
    print(f"wrote {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
