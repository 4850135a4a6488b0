"""Does the evidence pick the better graph? ``kernel="auto"`` against each kernel.

For each data set, number of labels (the benchmark's 20 initial labels of a
trial, then random extra ones) and trial: the largest ``ce`` log evidence of
the labels under the spectral model of the Gaussian and of the cosine graph
(``SpectralGraphClassifier._kernel_evidence``, what ``kernel="auto"``
compares), the kernel that ``kernel="auto"`` chose, and the accuracy on the
unlabeled nodes of the spectral ``ce`` fit on each graph. The graphs are
``n_neighbors=10`` with the classifier's defaults; ``kernel="auto"`` ignores
its node limit here (Fashion-MNIST's 70,000 nodes are above it) so that the
choice can be compared on every data set.

Run::

    python benchmarks/bench_kernel_choice.py [--datasets binary-clusters digits mnist-test samson fashion-mnist] [--memory DIR]

Results: ``benchmarks/results/bench_kernel_choice.csv`` (one row per data set,
labels, trial and kernel) and ``bench_kernel_choice.md`` (the table, with the
command).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _accuracy_common import DATASETS, initial_labels  # noqa: E402

import skmcal.classifier as classifier  # noqa: E402
from skmcal import NodeSet, SpectralGraphClassifier  # noqa: E402

KERNELS = ("gaussian", "cosine")
LABELS = (20, 50, 100)
COLUMNS = ["dataset", "n_labels", "trial", "kernel", "log_evidence", "accuracy", "auto_kernel"]


def labels_for(codes, n_labels, trial, seed=0):
    """The benchmark's initial labels of ``trial``, then random extra nodes."""
    first = initial_labels(codes, seed, trial)
    rng = np.random.RandomState(1000 + trial)
    rest = np.setdiff1d(np.arange(codes.size), first)
    return np.concatenate([first, rng.choice(rest, n_labels - first.size, replace=False)])


def run(name, args, writer):
    X, y = DATASETS[name].load(args.data_home)
    X = np.asarray(X, dtype=np.float64)
    codes = np.unique(y, return_inverse=True)[1].reshape(-1).astype(np.intp)
    pool = NodeSet(X)
    common = dict(loss="ce", model="spectral", nodes=pool, memory=args.memory)
    rows = []
    for n_labels in args.labels:
        for trial in range(args.trials):
            labeled = labels_for(codes, n_labels, trial)
            unlabeled = np.setdiff1d(np.arange(codes.size), labeled)
            auto = SpectralGraphClassifier(**common).fit(X[labeled], codes[labeled])
            for kernel in KERNELS:
                started = time.perf_counter()
                clf = SpectralGraphClassifier(kernel=kernel, **common).fit(
                    X[labeled], codes[labeled]
                )
                evidence = clf._kernel_evidence(
                    clf.graph_, clf.labeled_nodes_, codes[labeled], int(codes.max()) + 1
                )
                accuracy = float(np.mean(clf.transduction_[unlabeled] == codes[unlabeled]))
                row = [name, n_labels, trial, kernel, evidence, accuracy, auto.kernel_]
                writer.writerow(row)
                rows.append(row)
                print(f"{name} {n_labels} labels, trial {trial}, {kernel}: log evidence "
                      f"{evidence:.2f}, accuracy {accuracy:.4f}, auto took {auto.kernel_} "
                      f"({time.perf_counter() - started:.1f} s)", flush=True)  # fmt: skip
    return rows


def table(rows, labels):
    lines = [
        "| data set | labels | cosine − Gaussian log evidence, per trial | auto took cosine "
        "| accuracy: Gaussian / cosine / auto's |",
        "|---|---|---|---|---|",
    ]
    names = list(dict.fromkeys(r[0] for r in rows))
    for name in names:
        for n_labels in labels:
            sel = [r for r in rows if r[0] == name and r[1] == n_labels]
            trials = sorted({r[2] for r in sel})
            ev = {(r[2], r[3]): r[4] for r in sel}
            acc = {(r[2], r[3]): r[5] for r in sel}
            took = {r[2]: r[6] for r in sel}
            gaps = ", ".join(f"{ev[(t, 'cosine')] - ev[(t, 'gaussian')]:+.1f}" for t in trials)
            auto_acc = np.mean([acc[(t, took[t])] for t in trials])
            lines.append(
                f"| {name} | {n_labels} | {gaps} | {sum(took[t] == 'cosine' for t in trials)}"
                f" of {len(trials)} | {np.mean([acc[(t, 'gaussian')] for t in trials]):.3f} / "
                f"{np.mean([acc[(t, 'cosine')] for t in trials]):.3f} / {auto_acc:.3f} |"
            )
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+",
                   default=["binary-clusters", "digits", "mnist-test", "samson"])  # fmt: skip
    p.add_argument("--labels", nargs="+", type=int, default=list(LABELS))
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--memory", default=None, help="disk cache of the graphs")
    p.add_argument("--data-home", default=None)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    classifier.AUTO_KERNEL_MAX_NODES = 10**9  # the choice on every data set (see above)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with (args.out / "bench_kernel_choice.csv").open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(COLUMNS)
        for name in args.datasets:
            try:
                rows += run(name, args, writer)
            except (FileNotFoundError, OSError) as exc:
                print(f"{name}: skipped, data not found ({exc})", flush=True)
    command = "python benchmarks/bench_kernel_choice.py " + " ".join(argv or sys.argv[1:])
    text = [
        "# The evidence's choice of graph (`benchmarks/bench_kernel_choice.py`)",
        "",
        f"Command: `{command.strip()}`. Spectral `ce` (`tau`, `gamma` \"auto\"), "
        "`n_neighbors=10`; the labels: a trial's 20 initial labels of "
        "`bench_accuracy.py`, then random ones. Accuracy on the unlabeled nodes; "
        "*auto's*: that of the kernel `kernel=\"auto\"` took in each trial.",
        "",
        *table(rows, args.labels),
    ]
    (args.out / "bench_kernel_choice.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
