#!/usr/bin/env python
"""The timing figure and table of the active-learning benchmark, against N.

Usage::

    python benchmarks/plot_timing.py [--results benchmarks/results] [--out benchmarks/results]

Reads every ``<results>/bench_al_<N>.csv`` written by ``benchmarks/bench_al.py``
(one file per N; see that script for what is timed), and every
``<results>/bench_baselines_<N>.csv`` written by ``benchmarks/bench_baselines.py``
when there are any (the paper's baselines VOPT-HF, SOPT-HF and DB-RKHS as
skmcal implements them in :mod:`skmcal.baselines`, each in its own model; any
N), and writes

``<out>/timing_vs_n.png``
    Milliseconds per active-learning iteration (median over the iterations,
    column ``total_ms``: the query of B = 5 nodes among a random 10% of the
    unlabeled ones plus the update, modAL path) against N, log-log: one line
    per skmcal strategy x loss (colour: strategy, marker: loss, dashed: the
    multiclass losses mgr and ce), one coloured dash-dot line per baseline
    (open markers; its iteration is its query plus the refit of its own model,
    see ``bench_baselines.py``), and one grey dotted line per graphlearning
    acquisition and run (the rows ``graphlearning:<acq>``; ``classes`` tells
    the run on the binary labels, 2, from the one on the 10 classes).
``<out>/timing_vs_n.md``
    The same numbers as tables: skmcal (strategy x loss by N, with the
    graphlearning counterpart's ms in parentheses, column ``gl_total_ms``),
    graphlearning (acquisition x classes by N) and, when there are baseline
    files, the baselines (strategy x model by N).

The machine, the versions and the load of each run are in the
``bench_al.md`` and ``bench_baselines.md`` that the scripts wrote with the
CSV files.
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
#: Columns of bench_baselines_<N>.csv that this script reads.
BASELINE_COLUMNS = ("N", "strategy", "loss", "classes", "iterations", "total_ms")
CSV_NAME = re.compile(r"bench_al_(\d+)\.csv")
BASELINE_CSV_NAME = re.compile(r"bench_baselines_(\d+)\.csv")
GL_PREFIX = "graphlearning:"
FIGURE, TABLE = "timing_vs_n.png", "timing_vs_n.md"


def find_results(results: Path, name: re.Pattern = CSV_NAME) -> list[tuple[int, Path]]:
    """``(N, path)`` of every ``bench_al_<N>.csv`` (or other ``name``) in ``results``, by N."""
    found = []
    for path in results.glob("*.csv"):
        match = name.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def read_results(
    files: Sequence[tuple[int, Path]],
    columns: Sequence[str] = COLUMNS,
    script: str = "bench_al.py",
) -> pd.DataFrame:
    """The rows of all files in one frame, after checking their ``columns`` and N."""
    frames = []
    for n, path in files:
        frame = pd.read_csv(path)
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{path} lacks the columns {missing}; it has {list(frame.columns)}. "
                f"Is it a {script} results file?"
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


def label_baselines(rows: pd.DataFrame) -> pd.DataFrame:
    """Baseline rows labelled for the legend: ``VOPT-HF (baseline)``, as the paper names them."""
    rows = rows.copy()
    rows["label"] = rows["strategy"].str.upper() + " (baseline)"
    return rows


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


def _iterations(frames: Sequence[pd.DataFrame]) -> str:
    """``"N: iterations"`` for every N of the frames."""
    return ", ".join(
        f"{n:,}: {'/'.join(map(str, sorted(set(part['iterations']))))}"
        for n, part in pd.concat(frames).groupby("N")
    )


def write_table(
    path: Path,
    ours: pd.DataFrame,
    gl: pd.DataFrame,
    files: Sequence[tuple[int, Path]],
    command: str,
    baselines: pd.DataFrame | None = None,
    baseline_files: Sequence[tuple[int, Path]] = (),
) -> Path:
    """The markdown tables by N: skmcal (graphlearning counterpart), graphlearning, baselines."""
    has_baselines = baselines is not None and not baselines.empty
    sizes = sorted({n for n, _ in files} | {n for n, _ in baseline_files})
    columns = [f"N = {n:,}" for n in sizes]

    def ours_cell(row):
        text = _ms(row.total_ms)
        return text if pd.isna(row.gl_total_ms) else f"{text} ({_ms(row.gl_total_ms)})"

    scripts = "`benchmarks/bench_al.py`"
    names = [p.name for _, p in files]
    if has_baselines:
        scripts += " and `benchmarks/bench_baselines.py`"
        names += [p.name for _, p in baseline_files]
    data = f"{', '.join(f'`{name}`' for name in names)} in `{files[0][1].parent}`"
    lines = [
        f"# Time per active-learning iteration against N ({scripts})",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- data: {data}; machine, versions, load and set-up: the `bench_al.md`"
        + (" and `bench_baselines.md`" if has_baselines else "")
        + " written with them",
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
    if has_baselines:
        body = by_n(baselines, ["strategy", "loss"], sizes, lambda row: _ms(row.total_ms))
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
            *_markdown(["strategy", "model", *columns], body),
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Timing figure and table (ms per iteration against N) from the "
        "bench_al_<N>.csv files of benchmarks/bench_al.py and, when present, the "
        "bench_baselines_<N>.csv files of benchmarks/bench_baselines.py."
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=Path("benchmarks/results"),
        help="folder of the bench_al_<N>.csv and bench_baselines_<N>.csv files "
        "(benchmarks/results)",
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
    baseline_files = find_results(args.results, BASELINE_CSV_NAME)
    if not files:
        print(
            f"error: no bench_al_<N>.csv file in {args.results}; run benchmarks/bench_al.py "
            "first (it writes them there), or give the folder that holds them with --results"
            + (
                f" (there are {len(baseline_files)} bench_baselines_<N>.csv files, which are "
                "drawn with the bench_al ones, not alone)."
                if baseline_files
                else "."
            ),
            file=sys.stderr,
        )
        return 2
    try:
        rows = read_results(files)
        baselines = (
            label_baselines(read_results(baseline_files, BASELINE_COLUMNS, "bench_baselines.py"))
            if baseline_files
            else None
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ours, gl = split(rows)
    print(
        f"using {len(files)} bench_al and {len(baseline_files)} bench_baselines results "
        f"file(s) in {args.results}:"
    )
    for n, path in files:
        print(
            f"  {path.name}: N = {n:,}, {int((ours['N'] == n).sum())} skmcal rows, "
            f"{int((gl['N'] == n).sum())} graphlearning rows"
        )
    for n, path in baseline_files:
        print(
            f"  {path.name}: N = {n:,}, {int((baselines['N'] == n).sum())} baseline rows "
            "(skmcal.baselines)"
        )
    if len({n for n, _ in files} | {n for n, _ in baseline_files}) == 1:
        print("note: one N only, so every line of the figure is a single point.")

    args.out.mkdir(parents=True, exist_ok=True)
    figure = plot_timing(
        ours,
        args.out / FIGURE,
        strategy_col="label",
        time_col="total_ms",
        unit="ms",
        reference=None if gl.empty else gl,
        baselines=baselines,
        title="Time per active-learning iteration (B = 5, 10% candidates)",
    )
    table = write_table(args.out / TABLE, ours, gl, files, command, baselines, baseline_files)
    print(f"wrote {figure}")
    print(f"wrote {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
