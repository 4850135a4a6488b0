"""How many predictions one refit of the defaults changes, along their active-learning paths.

Along the defaults' paths (``bench_accuracy.py``'s initial labels, candidates
and tie breaks; ``default`` with model change, ``default:<strategy>`` with the
others), from ``AUTO_SUM_MIN_LABELS - 5`` labels to ``--stop``: at each batch,
the share of the nodes unlabeled after it whose predicted class the refit
changed, the accuracy there before and after, and whether the refit searched
the summed model's grid again. A collapse shows as a refit that changes a large
share (DNA with V-opt: 61% at the summed model's first fit, accuracy 0.76 to
0.42); the table lists the refits above ``THRESHOLD`` (a quarter of the
predictions, the threshold of the check tried in
``results/sum_check_rejected.md``)::

    python benchmarks/bench_refit_changes.py --trials 2 \\
        --strategies mc vopt sopt unc rand \\
        --datasets dna unscaled vehicle satellite digits binary-clusters samson \\
        mnist-test moons imbalanced-blobs noisy-features rare-class copies \\
        --mlbench-home /usr/lib/R/site-library/mlbench/data --data-home ../shared/data

Results under ``results/refit_changes`` (or ``--out``): ``refit_changes.csv``
(one row per refit) and ``refit_changes.md`` (per data set and strategy, the
largest share and the accuracy change of that refit; the refits above the
threshold).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _accuracy_common as common  # noqa: E402
import _harness as h  # noqa: E402
import bench_accuracy  # noqa: E402
import bench_low_phase  # noqa: E402
import bench_mlbench  # noqa: E402
import bench_synthetic  # noqa: E402
from _accuracy_common import BATCH  # noqa: E402

from skmcal.classifier import AUTO_SUM_MIN_LABELS  # noqa: E402

#: The share of changed predictions above which the table lists a refit.
THRESHOLD = 0.25

STRATEGIES = ("mc", "vopt", "sopt", "unc", "rand")
COLUMNS = ("dataset", "strategy", "trial", "n_labels", "changed", "before", "after", "searched")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "refit_changes"


def run_trial(name, pool, codes, strategy, trial, seed, stop, emit):
    """The defaults' path to ``stop`` labels; ``emit(n_labels, changed, before, after,
    searched)`` at every refit from ``AUTO_SUM_MIN_LABELS`` labels on."""
    config = bench_accuracy.CONFIGS["default" if strategy == "mc" else f"default:{strategy}"]
    learner, labeled, rng = common.start_path(config, name, pool, codes, seed, trial)
    batch, after = 0, learner.clf.transduction_.copy()
    while labeled.size + BATCH <= stop:
        batch += 1
        labeled = common.query_batch(learner, labeled, codes.size, seed, trial, batch, rng)
        clf = learner.clf
        before, after = after, clf.transduction_.copy()  # each fit's predictions read once
        if labeled.size < AUTO_SUM_MIN_LABELS:
            continue
        unlabeled = np.ones(codes.size, dtype=bool)
        unlabeled[labeled] = False
        searched = h.searched_again(clf, labeled.size)
        emit(
            labeled.size,
            float(np.mean(after[unlabeled] != before[unlabeled])),
            float(np.mean(before[unlabeled] == codes[unlabeled])),
            float(np.mean(after[unlabeled] == codes[unlabeled])),
            bool(searched),
        )


def summarize(rows, threshold=THRESHOLD):
    """Markdown: per data set and strategy, the refit that changed the most predictions;
    then every refit above ``threshold``."""
    groups = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["strategy"]), []).append(r)
    lines = [
        "| data set | strategy | refits | largest share changed | at labels (trial) "
        "| accuracy before -> after |",
        "|---|---|---|---|---|---|",
    ]
    for (dataset, strategy), refits in groups.items():
        top = max(refits, key=lambda r: float(r["changed"]))
        lines.append(
            f"| {dataset} | {strategy} | {len(refits)} | {float(top['changed']):.3f} "
            f"| {top['n_labels']} ({top['trial']}) "
            f"| {float(top['before']):.3f} -> {float(top['after']):.3f} |"
        )
    above = [r for r in rows if float(r["changed"]) > threshold]
    lines += ["", f"Refits that changed more than {threshold:g} of the predictions: "
              f"{len(above)} of {len(rows)}.", ""]  # fmt: skip
    for r in above:
        lines.append(
            f"- {r['dataset']} {r['strategy']} trial {r['trial']} at {r['n_labels']} labels: "
            f"{float(r['changed']):.3f} changed, accuracy {float(r['before']):.3f} -> "
            f"{float(r['after']):.3f} (searched: {r['searched']})"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    names = [*common.DATASETS, *bench_synthetic.SYNTHETIC, *bench_mlbench.MLBENCH]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=["digits", "binary-clusters"], choices=names)
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES[:4]), choices=STRATEGIES)
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stop", type=int, default=150, help="the last state's labels")
    p.add_argument("--data-home", default=None, help="skmcal's data folder (MNIST, Samson)")
    p.add_argument(
        "--mlbench-home", default=None, help="the mlbench sets' folder (bench_mlbench.py)"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--report", action="store_true", help="only rewrite the table from the CSV")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "refit_changes.csv"

    def run(name, pool, X, codes, strategy, trial, emit):
        run_trial(name, pool, codes, strategy, trial, args.seed, args.stop, emit)

    rows = common.state_runs(
        path, COLUMNS, (), () if args.report else args.datasets, args.strategies,
        args.trials, bench_low_phase.loader(args), run,
    )  # fmt: skip
    table = summarize(rows)
    command = " ".join(["python benchmarks/bench_refit_changes.py", *(argv or sys.argv[1:])])
    (args.out / "refit_changes.md").write_text(
        "# Predictions changed by one refit of the defaults "
        "(`benchmarks/bench_refit_changes.py`)\n\n"
        f"command: `{command}`\nskmcal: {h.revision()}\n\n"
        "Along the defaults' paths, each refit from "
        f"{AUTO_SUM_MIN_LABELS} labels on: the share of the nodes unlabeled after it whose "
        "predicted class it changed, and the accuracy on them before and after.\n\n" + table,
        encoding="utf-8",
    )
    print(table)


if __name__ == "__main__":
    main()
