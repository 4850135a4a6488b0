"""Does ``kernel="auto"`` pick the better graph? Its rule and the evidence, against each kernel.

For each data set, number of labels (the benchmark's 20 initial labels of a
trial, then random extra ones) and trial, under the spectral ``ce`` model of
the Gaussian and of the cosine graph: the largest log evidence of the labels
over the fit's grid (the rule of ``kernel="auto"`` before 2026-11-28's seventh
session), the balanced leave-one-out log-likelihood of the labels at that
grid point (``SpectralGraphClassifier._kernel_score``, what ``kernel="auto"``
compares now), the kernel that ``kernel="auto"`` chose, and the accuracy on
the unlabeled nodes of the spectral ``ce`` fit on each graph. The graphs are
``n_neighbors=10`` with the classifier's defaults; ``kernel="auto"`` ignores
its node limit here (Fashion-MNIST's 70,000 nodes are above it) so that the
choice can be compared on every data set.

Run::

    python benchmarks/bench_kernel_choice.py [--datasets binary-clusters digits mnist-test
        samson fashion-mnist] [--memory DIR] [--sklearn]

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
from skmcal.losses import LOSSES  # noqa: E402

KERNELS = ("gaussian", "cosine")
#: scikit-learn's bundled data sets (``--sklearn``), as given and standardised, with
#: 2, 5 and 10 random labels per class: small data outside the accuracy benchmark.
SKLEARN_SETS = ("breast_cancer", "wine", "iris")
PER_CLASS = (2, 5, 10)
LABELS = (20, 50, 100)
COLUMNS = [
    "dataset", "n_labels", "trial", "kernel", "log_evidence", "loo_score", "accuracy",
    "auto_kernel",
]  # fmt: skip


def labels_for(codes, n_labels, trial, seed=0):
    """The benchmark's initial labels of ``trial``, then random extra nodes."""
    first = initial_labels(codes, seed, trial)
    rng = np.random.RandomState(1000 + trial)
    rest = np.setdiff1d(np.arange(codes.size), first)
    return np.concatenate([first, rng.choice(rest, n_labels - first.size, replace=False)])


def score_kernels(name, X, codes, labeled, trial, common, writer):
    """The rows of one trial: each kernel's evidence, score and accuracy, and auto's choice."""
    unlabeled = np.setdiff1d(np.arange(codes.size), labeled)
    auto = SpectralGraphClassifier(**common).fit(X[labeled], codes[labeled])
    rows = []
    for kernel in KERNELS:
        clf = SpectralGraphClassifier(kernel=kernel, **common).fit(X[labeled], codes[labeled])
        local = np.searchsorted(clf.classes_, codes[labeled])
        weights = clf.class_weight_[local]
        weights = None if np.all(weights == 1.0) else weights
        few = clf._few_labels(clf.model_, clf.labeled_nodes_.size)
        graph, n_classes = clf.graph_, clf.classes_.size
        grids = {}  # the fit's grid, searched once for the evidence and the score
        _, _, table, _ = clf._spectral_grid(
            grids, LOSSES["ce"], graph, clf.labeled_nodes_, local, n_classes,
            clf._spectral_taus(graph, few), clf._newton_gammas(few), graph.n_nodes, None,
            weights,
        )  # fmt: skip
        score = clf._kernel_score(
            graph, clf.labeled_nodes_, local, n_classes, grids, few=few, weights=weights
        )
        accuracy = float(np.mean(clf.transduction_[unlabeled] == codes[unlabeled]))
        row = [name, labeled.size, trial, kernel, float(table.max()), score, accuracy,
               auto.kernel_]  # fmt: skip
        writer.writerow(row)
        rows.append(row)
    return rows


def run(name, args, writer):
    X, y = DATASETS[name].load(args.data_home)
    X = np.asarray(X, dtype=np.float64)
    codes = np.unique(y, return_inverse=True)[1].reshape(-1).astype(np.intp)
    common = dict(loss="ce", model="spectral", nodes=NodeSet(X), memory=args.memory)
    rows = []
    for n_labels in args.labels:
        for trial in range(args.trials):
            started = time.perf_counter()
            labeled = labels_for(codes, n_labels, trial)
            rows += score_kernels(name, X, codes, labeled, trial, common, writer)
            print(f"{name} {n_labels} labels, trial {trial}: "
                  + "; ".join(f"{r[3]} log evidence {r[4]:.2f}, score {r[5]:.3f}, "
                              f"accuracy {r[6]:.4f}" for r in rows[-len(KERNELS):])
                  + f"; auto took {rows[-1][7]} ({time.perf_counter() - started:.1f} s)",
                  flush=True)  # fmt: skip
    return rows


def run_sklearn(args, writer):
    """The scikit-learn sets: 5 trials of ``PER_CLASS`` random labels per class."""
    import sklearn.datasets
    from sklearn.preprocessing import StandardScaler

    rows = []
    for base in SKLEARN_SETS:
        X0, y = getattr(sklearn.datasets, f"load_{base}")(return_X_y=True)
        for name, X in ((base, X0), (f"{base}+std", StandardScaler().fit_transform(X0))):
            X = np.asarray(X, dtype=np.float64)
            common = dict(loss="ce", model="spectral", nodes=NodeSet(X), n_eigs=50)
            for per_class in PER_CLASS:
                for trial in range(5):
                    rng = np.random.RandomState(trial)
                    labeled = np.concatenate([
                        rng.choice(np.flatnonzero(y == c), per_class, replace=False)
                        for c in range(int(y.max()) + 1)
                    ])  # fmt: skip
                    rows += score_kernels(name, X, y, labeled, trial, common, writer)
            print(f"{name}: done", flush=True)
    return rows


def table(rows, labels):
    lines = [
        "| data set | labels | cosine − Gaussian log evidence, per trial | cosine − Gaussian "
        "score, per trial | auto took cosine | accuracy: Gaussian / cosine / auto's |",
        "|---|---|---|---|---|---|",
    ]
    names = list(dict.fromkeys(r[0] for r in rows))
    for name in names:
        for n_labels in labels:
            sel = [r for r in rows if r[0] == name and r[1] == n_labels]
            if not sel:  # a count this data set was not run at
                continue
            trials = sorted({r[2] for r in sel})
            ev = {(r[2], r[3]): r[4] for r in sel}
            sc = {(r[2], r[3]): r[5] for r in sel}
            acc = {(r[2], r[3]): r[6] for r in sel}
            took = {r[2]: r[7] for r in sel}
            gaps = ", ".join(f"{ev[(t, 'cosine')] - ev[(t, 'gaussian')]:+.1f}" for t in trials)
            score_gaps = ", ".join(
                f"{sc[(t, 'cosine')] - sc[(t, 'gaussian')]:+.2f}" for t in trials
            )
            auto_acc = np.mean([acc[(t, took[t])] for t in trials])
            lines.append(
                f"| {name} | {n_labels} | {gaps} | {score_gaps} | "
                f"{sum(took[t] == 'cosine' for t in trials)}"
                f" of {len(trials)} | {np.mean([acc[(t, 'gaussian')] for t in trials]):.3f} / "
                f"{np.mean([acc[(t, 'cosine')] for t in trials]):.3f} / {auto_acc:.3f} |"
            )
    return lines


def summary(rows, margins=(0.0, 0.5, 1.0, 2.0)):
    """Mean accuracy over the data sets (each the mean of its label counts and trials) of
    each kernel, of the better of the two in each trial, of the choice by the evidence
    with the cosine graph taken only ``margin`` nats ahead (0: the rule before), and of
    the choice by the leave-one-out score (``kernel="auto"``)."""
    groups = {}
    for name, n_labels, trial, kernel, evidence, score, accuracy, _ in rows:
        groups.setdefault(name, {}).setdefault((n_labels, trial), {})[kernel] = (
            evidence, accuracy, score,
        )  # fmt: skip

    def mean_over_sets(pick):
        return np.mean([
            np.mean([pick(runs) for runs in by_trial.values()]) for by_trial in groups.values()
        ])  # fmt: skip

    lines = [
        f"Mean accuracy over the {len(groups)} data sets above (each the mean of its label "
        "counts and trials):",
        "",
        "| graph | accuracy |",
        "|---|---|",
    ]
    for kernel in KERNELS:
        lines.append(f"| {kernel}, always | {mean_over_sets(lambda r, k=kernel: r[k][1]):.4f} |")
    lines.append(
        f"| the better of the two, each trial | "
        f"{mean_over_sets(lambda r: max(v[1] for v in r.values())):.4f} |"
    )
    for margin in margins:

        def pick(r, margin=margin):
            ahead = r["cosine"][0] - r["gaussian"][0] > margin
            return r["cosine" if ahead else "gaussian"][1]

        label = (
            "the evidence (the rule before)"
            if margin == 0
            else (f"the evidence, cosine only {margin:g} nats ahead")
        )
        lines.append(f"| {label} | {mean_over_sets(pick):.4f} |")

    def by_score(r):
        return r["cosine" if r["cosine"][2] > r["gaussian"][2] else "gaussian"][1]

    lines.append(
        f'| the leave-one-out score (`kernel="auto"`) | {mean_over_sets(by_score):.4f} |'
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
    p.add_argument("--sklearn", action="store_true",
                   help="also scikit-learn's breast_cancer, wine and iris (as given and "
                   "standardised; 2, 5, 10 labels per class, 5 trials)")  # fmt: skip
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
        small = run_sklearn(args, writer) if args.sklearn else []
    command = "python benchmarks/bench_kernel_choice.py " + " ".join(argv or sys.argv[1:])
    text = [
        "# The choice of graph: the evidence and the leave-one-out score "
        "(`benchmarks/bench_kernel_choice.py`)",
        "",
        f'Command: `{command.strip()}`. Spectral `ce` (`tau`, `gamma` "auto"), '
        "`n_neighbors=10`; the labels: a trial's 20 initial labels of "
        "`bench_accuracy.py`, then random ones. Accuracy on the unlabeled nodes; "
        '*auto\'s*: that of the kernel `kernel="auto"` took in each trial.',
        "",
        *table(rows, args.labels),
    ]
    if small:
        text += [
            "",
            "scikit-learn's bundled data sets (`--sklearn`; `+std`: standardised features), "
            "2 / 5 / 10 random labels per class, 5 trials:",
            "",
            *table(small, sorted({r[1] for r in small})),
        ]
    text += ["", *summary(rows + small)]
    (args.out / "bench_kernel_choice.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
