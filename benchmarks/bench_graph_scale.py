"""The Gaussian kernel's scale along the active-learning loop of ``bench_accuracy``.

The classifier's defaults (``loss="auto"``, ``model="auto"``) on the Gaussian
graph (``n_neighbors=10``, or ``kernel="auto"`` with ``--kernel auto``) with
each ``(scale_neighbor, scale_factor)`` given, and each strategy given (its
default batch mode), through ``bench_accuracy``'s own loop: the same 20
initial labels per trial, batches of 5 among the same random 10% of the
unlabeled nodes, to 500 labels. The kernel weight is ``exp(-d^2 / (s
sigma_i sigma_j))`` with ``sigma_i`` the distance to the
``scale_neighbor``-th neighbour and ``s`` = ``scale_factor``: a smaller
``s`` or a farther ``sigma`` neighbour makes a steeper kernel (the default is
5, 3; graphlearning's kNN graph uses about ``exp(-4 d^2 / d_k^2)``).

Run::

    python benchmarks/bench_graph_scale.py [--datasets binary-clusters digits mnist-test]
        [--scales 5,3 9,1 9,0.25] [--strategies unc mc] [--trials 5] [--kernel gaussian]
        [--memory DIR] [--out DIR]

Results: ``<out>/bench_graph_scale.csv`` (one row per data set, strategy,
scale, trial and checkpoint of 100, 200 and 500 labels) and
``bench_graph_scale.md`` (the means, with the command). A data set whose
files are absent is skipped.
"""

from __future__ import annotations

import argparse
import csv
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _accuracy_common import DATASETS, Config, SkmcalLearner  # noqa: E402
from bench_accuracy import DEFAULT_BATCH, run_one  # noqa: E402

from skmcal import NodeSet  # noqa: E402

CHECKPOINTS = (100, 200, 500)


def parse_scale(text):
    """``"9,0.25"`` -> ``(9, 0.25)``."""
    neighbor, factor = text.split(",")
    return int(neighbor), float(factor)


def run(name, args, writer):
    """Every (strategy, scale, trial) on data set ``name``; the rows written, or None."""
    data = DATASETS[name]
    try:
        X, y = data.load(args.data_home)
    except (FileNotFoundError, OSError) as exc:
        print(f"{name}: skipped, data not found ({exc})", flush=True)
        return None
    X = np.asarray(X, dtype=np.float64)
    codes = np.unique(y, return_inverse=True)[1].reshape(-1).astype(np.intp)
    pool = NodeSet(X)
    rows = []
    for strategy in args.strategies:
        for neighbor, factor in args.scales:
            params = {"kernel": args.kernel, "n_neighbors": 10, "scale_neighbor": neighbor,
                      "scale_factor": factor}  # fmt: skip
            options = {} if strategy == "rand" else {"batch": DEFAULT_BATCH}
            config = Config("skmcal", strategy, params, options=options, data_graph=False)
            for trial in range(args.trials):
                accuracy = {}
                started = time.perf_counter()
                learner = SkmcalLearner(config, pool, codes, data, args.memory)

                def emit(n, value, _seconds, accuracy=accuracy):
                    accuracy[n] = value

                run_one(learner, codes, args.seed, trial, emit, lambda _message: None)
                for n in CHECKPOINTS:
                    row = [name, strategy, neighbor, factor, trial, n, repr(accuracy[n])]
                    writer.writerow(row)
                    rows.append(row)
                print(
                    f"{name} {strategy} ({neighbor}, {factor}) trial {trial}: "
                    + " / ".join(f"{accuracy[n]:.4f}" for n in CHECKPOINTS)
                    + f" ({time.perf_counter() - started:.0f} s)",
                    flush=True,
                )
    return rows


def table(rows):
    """Markdown: the mean accuracy at each checkpoint per data set, strategy and scale."""
    means = {}
    for name, strategy, neighbor, factor, _trial, n, value in rows:
        means.setdefault((name, strategy, neighbor, factor), {}).setdefault(n, []).append(
            float(value)
        )
    lines = [
        "| data set | strategy | scale_neighbor, scale_factor | "
        + " | ".join(f"{n} labels" for n in CHECKPOINTS)
        + " | trials |",
        "|---|---|---|" + "---|" * len(CHECKPOINTS) + "---|",
    ]
    for (name, strategy, neighbor, factor), by_n in means.items():
        cells = " | ".join(f"{np.mean(by_n[n]):.4f}" for n in CHECKPOINTS)
        lines.append(
            f"| {name} | {strategy} | {neighbor}, {factor:g} | {cells} | {len(by_n[100])} |"
        )
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["binary-clusters", "digits", "mnist-test"],
                   choices=sorted(DATASETS))  # fmt: skip
    p.add_argument("--scales", nargs="+", type=parse_scale,
                   default=[(5, 3.0), (9, 1.0), (9, 0.25)])  # fmt: skip
    p.add_argument("--strategies", nargs="+", default=["unc", "mc"],
                   choices=["mc", "vopt", "sopt", "unc", "rand"])  # fmt: skip
    p.add_argument("--kernel", default="gaussian", choices=["gaussian", "auto"])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--memory", default=None, help="disk cache of the graphs")
    p.add_argument("--data-home", default=None)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with (args.out / "bench_graph_scale.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["dataset", "strategy", "scale_neighbor", "scale_factor", "trial",
                         "n_labels", "accuracy"])  # fmt: skip
        for name in args.datasets:
            rows += run(name, args, writer) or []
    command = "python benchmarks/bench_graph_scale.py " + shlex.join(argv or sys.argv[1:])
    text = (
        "# The Gaussian kernel's scale along the active-learning loop\n\n"
        f"command: `{command.strip()}`\n\n"
        "Mean accuracy on the unlabeled nodes over the trials, at 100, 200 and 500 labels "
        "(`bench_accuracy`'s loop and seeds; the defaults on the graph named, each strategy "
        "with its default batch mode).\n\n" + table(rows) + "\n"
    )
    (args.out / "bench_graph_scale.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
