"""Does the sparse solves' tolerance change what the active-learning loop does?

``tol="auto"`` stops the sparse solves of the full-graph and summed models at
:data:`skmcal.classifier.AUTO_SOLVE_TOL` (1e-6; 1e-8 when the results in
``results/tol_choice`` were made, 1e-10 before that). This script runs
``bench_accuracy.py``'s loop (its initial labels, candidates and tie breaks)
for some of its methods as they are and again with ``tol=1e-10`` (methods
``tol10-<name>``), then compares the two accuracy
curves point by point (trial, number of labels): how many points are
identical and the largest difference. Different picks anywhere along a path
would show as differences from there on.

    python benchmarks/bench_tol_choice.py --datasets digits binary-clusters mnist-test \\
        --methods default default:unc --trials 2 --out benchmarks/results/tol_choice
    python benchmarks/bench_tol_choice.py --datasets digits mnist-test --trials 2 \\
        --methods full-mgr:mc full-mgr:unc laplace:mc laplace:unc \\
        --out benchmarks/results/tol_choice

(``--data-home`` as for ``bench_accuracy.py``; results accumulate in ``--out``:
runs already there are not computed again.) Writes ``<out>/tol_choice.md``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import bench_accuracy
import pandas as pd

PREFIX = "tol10-"


def compare(out: Path) -> list[str]:
    """Table rows: per data set (every results file in ``out``) and method with a
    ``tol=1e-10`` twin, the points compared, identical, largest difference."""
    rows = []
    for path in sorted(out.glob("*.csv")):
        if path.stem == "failures":
            continue
        name = path.stem
        frame = pd.read_csv(path)
        frame["tol"] = frame.method.str.startswith(PREFIX).map({True: "1e-10", False: "auto"})
        frame["base"] = frame.method.str.removeprefix(PREFIX)
        table = frame.pivot_table(
            index=["base", "trial", "n_labels"], columns="tol", values="accuracy"
        ).dropna()
        if "1e-10" not in table:
            continue
        gap = (table["auto"] - table["1e-10"]).abs()
        for method, part in gap.groupby(level=0):
            rows.append(
                f"| {name} | {method} | {part.size} | {int((part == 0).sum())} | {part.max():.4f} |"
            )
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", required=True)
    p.add_argument("--methods", nargs="+", required=True, help="bench_accuracy.py methods")
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--data-home", default=None)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/tol_choice"))
    args = p.parse_args(argv)
    for method in args.methods:
        config = bench_accuracy.CONFIGS[method]
        bench_accuracy.CONFIGS[PREFIX + method] = replace(
            config, params={**config.params, "tol": 1e-10}
        )
    forwarded = ["--no-graphlearning", "--datasets", *args.datasets, "--trials",
                 str(args.trials), "--out", str(args.out), "--only", *args.methods,
                 *(PREFIX + m for m in args.methods)]  # fmt: skip
    if args.data_home is not None:
        forwarded += ["--data-home", args.data_home]
    bench_accuracy.main(forwarded)
    lines = [
        "# Accuracy curves at tol='auto' against tol=1e-10",
        "",
        f"last command: `python benchmarks/bench_tol_choice.py {' '.join(argv or sys.argv[1:])}`"
        " (the rows cover every run into this folder; the commands: the module docstring)",
        "",
        "| data | method | points (trial x labels) | identical | largest difference |",
        "|---|---|---|---|---|",
        *compare(args.out),
    ]
    (args.out / "tol_choice.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
