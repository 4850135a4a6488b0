"""Do evidence-chosen (tau, gamma) keep active learning from collapsing?

Issue 9: ``SpectralGraphClassifier(loss="ce", nodes=pool)`` with the paper's
tau=0.005, gamma=0.5 (the estimator's values before "auto" became the
evidence) on the first 6,000 MNIST-test images with 2 labels per class drops
from ~0.7 to ~0.3 accuracy after one batch of 5 model-change queries. This
script runs batches of 5 (model change and margin uncertainty, 10% random
candidates per query, as the paper) from 2 random labels per class, under
several hyperparameter rules:

- ``paper``: the paper's values (``skmcal.classifier.PAPER_HYPERPARAMETERS``);
- ``auto``: the estimator's ``tau="auto"``, ``gamma="auto"`` (the evidence
  with gammas relative to the prior's scale, docs/user_guide/hyperparameters.rst);
- ``evidence``: (tau, gamma) maximising the spectral model's log evidence
  with the gammas as given (:func:`skmcal.evidence.select_hyperparameters`
  without ``n_nodes``: the first "auto" rule, before the relative gammas)
  over the ``--taus`` x ``--gammas`` grid, re-selected before every fit;
- ``fixed:TAU,GAMMA``: constants.

``benchmarks/results/auto_hyper.log`` was written when ``paper`` was the
estimator's default.

It prints the mean accuracy on the unlabeled nodes after each batch and the
largest drop of any batch in any trial, and writes every (trial, batch) row
to ``<out>/auto_hyper.csv``.

    python benchmarks/bench_auto_hyper.py --out benchmarks/results
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import _harness as h
import numpy as np

from skmcal import NodeSet, SpectralGraphClassifier
from skmcal.classifier import PAPER_HYPERPARAMETERS
from skmcal.datasets import load_mnist_test
from skmcal.evidence import DEFAULT_GAMMAS, DEFAULT_TAUS, select_hyperparameters
from skmcal.losses import LOSSES
from skmcal.query import model_change, uncertainty

STRATEGIES = {"mc": model_change, "unc": uncertainty}


def resolve(rule, clf, loss, labeled_nodes, codes, grid):
    """The (tau, gamma) of ``rule`` for the current labels (``None`` = the estimator's auto)."""
    if rule == "paper":
        return PAPER_HYPERPARAMETERS[loss]
    if rule == "auto":
        return "auto", "auto"
    if rule.startswith("fixed:"):
        tau, gamma = (float(v) for v in rule[6:].split(","))
        return tau, gamma
    graph = clf.graph_
    n_classes = int(codes.max()) + 1
    targets = np.eye(n_classes)[codes] if LOSSES[loss].multiclass else 2.0 * codes - 1.0
    P = graph.eigenvectors[labeled_nodes]
    tau, gamma, _ = select_hyperparameters(LOSSES[loss], graph.eigenvalues, P, targets, *grid)
    return tau, gamma


def run(X, y, pool, loss, strategy, rule, trial, args, grid):
    rng = np.random.RandomState(1000 + trial)
    labeled = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), args.initial, replace=False) for c in np.unique(y)]
    )
    clf = SpectralGraphClassifier(loss=loss, model="spectral", kernel="gaussian", nodes=pool)
    clf.fit(X[labeled], y[labeled])  # builds (or reuses) the graph
    rows = []
    for batch in range(args.batches + 1):
        tau, gamma = resolve(rule, clf, loss, labeled, y[labeled], grid)
        clf.set_params(tau=tau, gamma=gamma).fit(X[labeled], y[labeled])
        free = np.setdiff1d(np.arange(y.size), labeled)
        acc = float(np.mean(clf.transduction_[free] == y[free]))
        rows.append([loss, strategy, rule, trial, batch, labeled.size, clf.tau_, clf.gamma_, acc])
        if batch == args.batches:
            break
        kwargs = {"candidates": args.candidates, "batch": "topk", "random_state": rng}
        picked, _ = STRATEGIES[strategy](clf, pool, n_instances=args.batch_size, **kwargs)
        labeled = np.concatenate([labeled, picked])
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=6000, help="first N MNIST-test images")
    p.add_argument("--losses", nargs="+", default=["ce", "mgr"])
    p.add_argument("--strategies", nargs="+", default=["mc", "unc"], choices=sorted(STRATEGIES))
    p.add_argument("--rules", nargs="+", default=["paper", "auto", "evidence"])
    p.add_argument("--taus", type=float, nargs="+", default=list(DEFAULT_TAUS))
    p.add_argument("--gammas", type=float, nargs="+", default=list(DEFAULT_GAMMAS))
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=5)
    p.add_argument("--initial", type=int, default=2, help="random labels per class at the start")
    p.add_argument("--candidates", type=float, default=0.1)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--tag", default="", help="suffix of the CSV name")
    args = p.parse_args(argv)
    X, y = load_mnist_test(h.data_home(), n_samples=args.n)
    pool = NodeSet(X)
    grid = (args.taus, args.gammas)
    header = ["loss", "strategy", "rule", "trial", "batch", "n_labeled", "tau", "gamma", "accuracy"]
    rows = []
    start = time.perf_counter()
    for loss in args.losses:
        for strategy in args.strategies:
            for rule in args.rules:
                for trial in range(args.trials):
                    rows += run(X, y, pool, loss, strategy, rule, trial, args, grid)
                acc = np.array([r[8] for r in rows if r[:3] == [loss, strategy, rule]])
                acc = acc.reshape(args.trials, args.batches + 1)
                drop = float(np.max(acc[:, :-1] - acc[:, 1:]))
                last = [r for r in rows if r[:3] == [loss, strategy, rule] and r[4] == args.batches]
                params = sorted({(r[6], r[7]) for r in last})
                curve = " ".join(f"{a:.3f}" for a in acc.mean(axis=0))
                print(
                    f"{loss:4s} {strategy:4s} {rule:18s} worst drop {drop:+.3f} | {curve} "
                    f"| final (tau, gamma) {params} [{time.perf_counter() - start:.0f} s]",
                    flush=True,
                )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"auto_hyper{args.tag}.csv"
        with path.open("w", newline="") as f:
            csv.writer(f).writerows([header] + rows)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
