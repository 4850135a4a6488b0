#!/usr/bin/env python
"""Top-k, greedy and LocalMax batches of model change: accuracy and time per iteration.

Usage::

    python benchmarks/bench_batches.py [--datasets mnist-test samson] [--losses mgr ce]
                                       [--trials 3] [--iterations 40] [--out benchmarks/results]

For each data set (MNIST-test, 10,000 x 784; Samson, 9,025 pixels x 156 bands;
``skmcal.datasets`` loaders, skipped when the data are absent), each loss
(``mgr``, ``ce``) and each batch mode of :func:`skmcal.model_change`:

* ``topk``: the 5 best candidates (the paper);
* ``greedy``: best, look-ahead update with its pseudo-label, re-score, ... (5 scorings);
* ``localmax``: the 5 best candidates that score at least as high as each of their
  kNN-graph neighbours among the candidates (Chapman et al. 2023; one scoring),

the loop of :func:`skmcal.experiment.run_experiment`: 2 random labels per class
(the same for every mode in a trial), ``--iterations`` batches of 5 among a
random 10% of the unlabeled nodes, refit after each batch; ``--trials`` trials.
Reported per (data set, loss, batch): the accuracy on the unlabeled nodes
after the last batch (mean and std over trials), the mean accuracy over the
batches (the area under the learning curve, per batch), and the mean seconds
of an iteration (query + refit; the refit is the same for every mode).

Results: ``<out>/bench_batches.csv`` (the table), ``<out>/bench_batches_curves.csv``
(accuracy after every batch of every trial), ``<out>/bench_batches.md`` (the
table with the command and the machine).
"""

from __future__ import annotations

import sys
from pathlib import Path

import loop_common
import pandas as pd

from skmcal.experiment import run_experiment

BATCHES = {"topk": "mc", "greedy": "mc-greedy", "localmax": "mc-localmax"}
COLUMNS = [
    "dataset",
    "loss",
    "batch",
    "n_labeled",
    "final_accuracy",
    "final_std",
    "mean_accuracy",
    "s_per_iteration",
    "time_vs_greedy",
    "trials",
]


def run(name, data, loss, args):
    """The run_experiment results of the three batch modes on one data set and loss."""
    X, y, graph = data
    strategies = [f"{strategy}:{loss}" for strategy in BATCHES.values()]
    result = run_experiment(
        (X, y),
        strategies=strategies,
        **graph,
        n_initial=2,
        batch_size=5,
        iterations=args.iterations,
        candidates=0.1,
        trials=args.trials,
        seed=args.seed,
        progress=False,
    )
    frame = result.results.copy()
    frame.insert(0, "dataset", name)
    return frame


def summarise(frame: pd.DataFrame) -> list[dict]:
    rows = []
    for (name, strategy), part in frame.groupby(["dataset", "strategy"], sort=False):
        mode, loss = strategy.split(":")
        last = part[part["iteration"] == part["iteration"].max()]
        curve = part[part["iteration"] > 0]
        rows.append(
            {
                "dataset": name,
                "loss": loss,
                "batch": next(b for b, s in BATCHES.items() if s == mode),
                "n_labeled": int(last["n_labeled"].max()),
                "final_accuracy": round(float(last["accuracy"].mean()), 4),
                "final_std": round(float(last["accuracy"].std(ddof=0)), 4),
                "mean_accuracy": round(float(curve["accuracy"].mean()), 4),
                "s_per_iteration": round(float(curve["time"].mean()), 4),
                "trials": int(last["trial"].nunique()),
            }
        )
    for row in rows:
        greedy = next(
            r
            for r in rows
            if (r["dataset"], r["loss"], r["batch"]) == (row["dataset"], row["loss"], "greedy")
        )
        row["time_vs_greedy"] = round(row["s_per_iteration"] / greedy["s_per_iteration"], 3)
    return rows


def main(argv=None) -> int:
    p = loop_common.parser(__doc__.splitlines()[1])
    p.add_argument("--iterations", type=int, default=40, help="batches of 5 (40)")
    args = p.parse_args(argv)
    print(loop_common.header(), flush=True)
    frames = []
    for name in args.datasets:
        data = loop_common.load(name, args.data_home)
        if data is None:
            continue
        for loss in args.losses:
            frames.append(run(name, data, loss, args))
            print(f"# {name} {loss}: done", flush=True)
    if not frames:
        print("# no data set found: nothing measured")
        return 0
    frame = pd.concat(frames, ignore_index=True)
    rows = summarise(frame)
    text = loop_common.table(rows, COLUMNS)
    print(text)
    out: Path = args.out
    loop_common.write_csv(out / "bench_batches.csv", rows, COLUMNS)
    frame.to_csv(out / "bench_batches_curves.csv", index=False)
    note = (
        "final_accuracy: on the unlabeled nodes after the last batch (mean over trials); "
        "mean_accuracy: over all batches; s_per_iteration: query + refit."
    )
    (out / "bench_batches.md").write_text(
        f"{loop_common.header()}\n\n```\n{text}\n```\n\n{note}\n", encoding="utf-8"
    )
    print(f"# results: {out / 'bench_batches.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
