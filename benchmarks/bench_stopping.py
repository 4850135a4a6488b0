#!/usr/bin/env python
"""Where the stopping rules of skmcal.stopping stop, and the accuracy there vs at 520 labels.

Usage::

    python benchmarks/bench_stopping.py [--datasets mnist-test samson] [--losses mgr ce]
                                        [--trials 3] [--rules kappa:0.99 mc:0.01 ...]
                                        [--out benchmarks/results]

For each data set (MNIST-test, Samson; ``skmcal.datasets`` loaders, skipped when
absent), each loss and each trial: a plain active-learning loop as a
practitioner writes it, 2 random labels per class, then batches of 5 chosen by
:func:`skmcal.model_change` (top-k among a random 10% of the unlabeled nodes),
refit after each batch, until at least 520 labels. Every rule of ``--rules``
(:func:`skmcal.stopping.make_rule`; default ``kappa:0.99`` (Bloodgood &
Vijay-Shanker: mean kappa of the last 3 successive predictions on a stop set of
2,000 random nodes), ``kappa:0.995``, ``mc:0.02`` and ``mc:0.01`` (largest
relative model change of a full sweep), ``budget:200``) is updated after every
refit but never ends the loop; its first ``should_stop`` is recorded with the
number of labels and the accuracy on the unlabeled nodes there. Reported per
(data set, loss, rule): the labels at the stop and the accuracy there (means
over trials; "never" when a rule did not fire by 520 labels in some trial, the
means then over the trials where it did), the accuracy at 520 labels, and the
difference.

Results: ``<out>/bench_stopping.csv`` (the table), ``<out>/bench_stopping_trials.csv``
(one row per trial and rule), ``<out>/bench_stopping.md`` (with the command and
the machine).
"""

from __future__ import annotations

import sys
import time

import loop_common
import numpy as np

from skmcal import NodeSet, SpectralGraphClassifier, model_change
from skmcal.stopping import make_rule

RULES = ["kappa:0.99", "kappa:0.995", "mc:0.02", "mc:0.01", "budget:200"]
FINAL_LABELS = 520
TRIAL_COLUMNS = [
    "dataset",
    "loss",
    "trial",
    "rule",
    "stop_labels",
    "stop_accuracy",
    "final_labels",
    "final_accuracy",
    "seconds",
]
COLUMNS = [
    "dataset",
    "loss",
    "rule",
    "stop_labels",
    "stop_accuracy",
    "final_labels",
    "final_accuracy",
    "accuracy_lost",
    "fired",
]


def trial_rows(name, data, loss, trial, args):
    """One loop to 520 labels with every rule watching; one row per rule."""
    X, y, graph = data
    pool = NodeSet(X)
    seed = args.seed + trial
    rng = np.random.RandomState(seed)
    labeled = loop_common.initial_labels(y, 2, seed)
    clf = SpectralGraphClassifier(loss, model="spectral", nodes=pool, **graph)
    rules = {spec: make_rule(spec, random_state=seed) for spec in args.rules}
    fired: dict[str, tuple[int, float]] = {}
    start = time.perf_counter()
    while True:
        clf.fit(X[labeled], y[labeled])
        accuracy = loop_common.unlabeled_accuracy(clf, y, labeled)
        for spec, rule in rules.items():
            if spec not in fired and rule.update(clf).should_stop:
                fired[spec] = (labeled.size, accuracy)
        if labeled.size >= args.final_labels:
            break
        queried, _ = model_change(clf, pool, 5, candidates=0.1, batch="topk", random_state=rng)
        labeled = np.concatenate([labeled, queried])
    seconds = time.perf_counter() - start
    return [
        {
            "dataset": name,
            "loss": loss,
            "trial": trial,
            "rule": spec,
            "stop_labels": fired.get(spec, (None, None))[0],
            "stop_accuracy": fired.get(spec, (None, None))[1],
            "final_labels": int(labeled.size),
            "final_accuracy": accuracy,
            "seconds": round(seconds, 1),
        }
        for spec in args.rules
    ]


def summarise(trials: list[dict]) -> list[dict]:
    rows = []
    keys = dict.fromkeys((r["dataset"], r["loss"], r["rule"]) for r in trials)
    for name, loss, spec in keys:
        part = [r for r in trials if (r["dataset"], r["loss"], r["rule"]) == (name, loss, spec)]
        stopped = [r for r in part if r["stop_labels"] is not None]
        final = float(np.mean([r["final_accuracy"] for r in part]))
        row = {
            "dataset": name,
            "loss": loss,
            "rule": spec,
            "final_labels": part[0]["final_labels"],
            "final_accuracy": round(final, 4),
            "fired": f"{len(stopped)}/{len(part)}",
            "stop_labels": "never",
            "stop_accuracy": "-",
            "accuracy_lost": "-",
        }
        if stopped:
            at = float(np.mean([r["stop_accuracy"] for r in stopped]))
            final_there = float(np.mean([r["final_accuracy"] for r in stopped]))
            row["stop_labels"] = round(float(np.mean([r["stop_labels"] for r in stopped])), 1)
            row["stop_accuracy"] = round(at, 4)
            row["accuracy_lost"] = round(final_there - at, 4)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    p = loop_common.parser(__doc__.splitlines()[1])
    p.add_argument("--rules", nargs="+", default=RULES, help=f"stopping rules ({' '.join(RULES)})")
    p.add_argument("--final-labels", type=int, default=FINAL_LABELS, help="labels at the end (520)")
    args = p.parse_args(argv)
    for spec in args.rules:
        make_rule(spec)  # fails early on a bad rule
    print(loop_common.header(), flush=True)
    trials = []
    for name in args.datasets:
        data = loop_common.load(name, args.data_home)
        if data is None:
            continue
        for loss in args.losses:
            for trial in range(args.trials):
                trials += trial_rows(name, data, loss, trial, args)
                print(f"# {name} {loss} trial {trial}: {trials[-1]['seconds']} s", flush=True)
    if not trials:
        print("# no data set found: nothing measured")
        return 0
    rows = summarise(trials)
    text = loop_common.table(rows, COLUMNS)
    print(text)
    loop_common.write_csv(args.out / "bench_stopping.csv", rows, COLUMNS)
    loop_common.write_csv(args.out / "bench_stopping_trials.csv", trials, TRIAL_COLUMNS)
    note = (
        "stop_labels, stop_accuracy: means over the trials where the rule fired (fired); "
        "accuracy_lost: accuracy at the final labels minus at the stop, over those trials."
    )
    (args.out / "bench_stopping.md").write_text(
        f"{loop_common.header()}\n\n```\n{text}\n```\n\n{note}\n", encoding="utf-8"
    )
    print(f"# results: {args.out / 'bench_stopping.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
