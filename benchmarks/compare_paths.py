#!/usr/bin/env python
"""Point by point: the active-learning paths of two ``bench_accuracy.py`` runs.

Usage::

    python benchmarks/compare_paths.py BEFORE AFTER [--out DIR] [--name NAME]

``BEFORE`` and ``AFTER`` are ``--out`` folders of ``bench_accuracy.py`` run with
the same arguments in two source trees (``PYTHONPATH`` set to each tree), e.g.
before and after a change that should not move the paths. For every data set
both hold (``<dataset>.csv``), method and trial: the points both have, how many
differ in accuracy and where first (labels), the largest difference, and each
run's mean accuracy over the path. Results: ``<out>/<name>.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from _accuracy_common import read_rows


def _paths(path: Path) -> dict:
    """``{(dataset, method, trial): {n_labels: accuracy}}`` of a results CSV."""
    paths = defaultdict(dict)
    for r in read_rows(path):
        paths[r["dataset"], r["method"], r["trial"]][r["n_labels"]] = r["accuracy"]
    return paths


def compare(before: Path, after: Path) -> list[dict]:
    """One row per (data set, method, trial) found in both folders."""
    rows = []
    for path in sorted(before.glob("*.csv")):
        other = after / path.name
        if path.name == "failures.csv" or not other.exists():
            continue
        a, b = _paths(path), _paths(other)
        for key in sorted(a.keys() & b.keys()):
            labels = sorted(a[key].keys() & b[key].keys())
            if not labels:
                continue
            acc_a = np.array([a[key][n] for n in labels])
            acc_b = np.array([b[key][n] for n in labels])
            moved = np.abs(acc_a - acc_b) > 0
            rows.append({
                "dataset": key[0], "method": key[1], "trial": key[2],
                "points": len(labels), "differ": int(moved.sum()),
                "first": labels[int(np.argmax(moved))] if moved.any() else None,
                "max": float(np.abs(acc_a - acc_b).max()),
                "mean_a": float(acc_a.mean()), "mean_b": float(acc_b.mean()),
            })  # fmt: skip
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| data set | method | trial | points | differing | first at (labels) | largest "
        "difference | mean accuracy before | after |",
        "|---" * 9 + "|",
    ]
    for r in rows:
        first = "-" if r["first"] is None else str(r["first"])
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['trial']} | {r['points']} | {r['differ']} "
            f"| {first} | {r['max']:.4f} | {r['mean_a']:.4f} | {r['mean_b']:.4f} |"
        )
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--name", default="compare_paths")
    p.add_argument("--note", default="", help="a line on what the two runs are")
    args = p.parse_args(argv)
    rows = compare(args.before, args.after)
    if not rows:
        sys.exit(f"No data set's results in both {args.before} and {args.after}.")
    total = sum(r["points"] for r in rows)
    moved = sum(r["differ"] for r in rows)
    lines = [
        f"# Active-learning paths compared point by point ({dt.date.today()})",
        "",
        *([args.note, ""] if args.note else []),
        f"command: `python benchmarks/compare_paths.py {args.before} {args.after}`",
        "",
        f"{len(rows)} paths, {total} points, {moved} differing.",
        "",
        *table(rows),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text(text)
    return rows


if __name__ == "__main__":
    main()
