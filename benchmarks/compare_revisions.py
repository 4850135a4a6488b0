#!/usr/bin/env python
"""Before/after: one active-learning iteration of two source trees of skmcal, interleaved.

Usage::

    python benchmarks/compare_revisions.py BEFORE AFTER [--sizes 10000 70000] [--rounds 3]

``BEFORE`` and ``AFTER`` are repository roots. For each N, one worker process
per tree imports skmcal from its root (``PYTHONPATH``), builds the graph of the
first N rows of Fashion-MNIST once, not timed (above ``--exact-below`` from one
pynndescent neighbour graph computed here, so both trees have the same graph),
and runs on request ``bench_al.py``'s modAL loop (``run_loop``: public API only,
the same in both revisions) for one configuration. Each round runs every
configuration in both workers, the order alternating (A B, then B A) so that
drifts of the machine's load hit both; a ratio above ``--recheck-above`` gets up
to ``--extra-rounds`` more rounds. ms = median over the rounds of each round's
median per iteration; "same picks": both trees chose the same nodes. Results:
``<out>/compare_revisions.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _harness as h
import bench_al
import numpy as np
from sklearn.base import BaseEstimator


class FixedNeighbors(BaseEstimator):
    """A kNN transformer returning the neighbour graph of an ``.npz`` file (its path is the
    parameter, not the matrix, so that skmcal's graph key, which hashes it, stays cheap)."""

    def __init__(self, path=None):
        self.path = path

    def fit(self, X, y=None):
        import scipy.sparse as sp

        self.graph_ = sp.load_npz(self.path)
        if self.graph_.shape[0] != X.shape[0]:
            raise ValueError(f"{self.path} has {self.graph_.shape[0]} rows; X has {X.shape[0]}.")
        return self

    def transform(self, X):
        return self.graph_


#: The paper's (tau, gamma), which were both trees' "auto" before the evidence-chosen defaults.
PAPER = {"gr": (0.001, 0.5), "logistic": (0.001, 0.5), "probit": (0.001, 0.5),
         "mgr": (0.005, 0.1), "ce": (0.005, 0.5)}


def worker(folder: str, iterations: int, seed: int) -> None:
    """Serve ``{"strategy", "loss"}`` requests on stdin with one timed loop each."""
    import skmcal
    from skmcal import NodeSet, SpectralGraphClassifier

    X, y = np.load(f"{folder}/X.npy"), np.load(f"{folder}/y.npy")
    knn = Path(folder, "knn.npz")
    neighbors = FixedNeighbors(str(knn)) if knn.exists() else None
    pool = NodeSet(X)
    init = h.initial_labels(y, bench_al.LABELS_PER_CLASS, seed)

    def loop(name, loss, n_iter):
        _, strategy, opts, _ = next(s for s in bench_al.STRATEGIES if s[0] == name)
        tau, gamma = PAPER[loss]  # fixed: both trees fit the same model, whatever their defaults
        clf = SpectralGraphClassifier(loss, model="spectral", kernel="gaussian", nodes=pool,
                                      neighbors=neighbors, tau=tau, gamma=gamma,
                                      n_eigs=bench_al.N_EIGS)
        labels = (y < 5).astype(np.int64) if loss in bench_al.BINARY else y
        res, picks = bench_al.run_loop(clf, getattr(skmcal, strategy), opts, X, labels, pool, init,
                                       n_iter, seed)
        return {**res, "picks": picks.tolist()}

    for loss in ("mgr", "ce", "logistic"):  # graph build and first calls, not timed
        loop("model_change", loss, 2)
    print(json.dumps({"skmcal": skmcal.__file__}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(loop(request["strategy"], request["loss"], iterations)), flush=True)


class Tree:
    """A worker process importing skmcal from ``root``."""

    def __init__(self, root: Path, folder: str, args):
        env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{Path(__file__).parent}"}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", folder, "--iterations", str(args.iterations),
             "--seed", str(args.seed)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=env)
        ready = json.loads(self.proc.stdout.readline())["skmcal"]
        if not Path(ready).resolve().is_relative_to(root.resolve()):
            raise SystemExit(f"the worker for {root} imported skmcal from {ready}")

    def run(self, strategy: str, loss: str) -> dict:
        self.proc.stdin.write(json.dumps({"strategy": strategy, "loss": loss}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.communicate()


def compare_size(n, X, y, args) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        np.save(f"{folder}/X.npy", np.ascontiguousarray(X[:n]))
        np.save(f"{folder}/y.npy", y[:n])
        neighbors, knn = h.neighbors_for(n, args.exact_below)
        if neighbors is not None:
            import scipy.sparse as sp

            sp.save_npz(f"{folder}/knn.npz", sp.csr_matrix(neighbors.fit_transform(X[:n])))
        h.log(f"N={n}: kNN {knn}; starting the workers (graph, warm-up) ...")
        trees = [Tree(root, folder, args) for root in (args.before, args.after)]
        configs = [(s[0], loss) for s in bench_al.STRATEGIES for loss in bench_al.LOSSES
                   if not args.only or f"{s[0]}/{loss}" in args.only]
        runs = {c: ([], []) for c in configs}

        def one_round(r, todo):
            for strategy, loss in todo:
                for k in ((0, 1) if r % 2 == 0 else (1, 0)):
                    runs[(strategy, loss)][k].append(trees[k].run(strategy, loss))

        def ratio(c):
            return (statistics.median(x["total_ms"] for x in runs[c][1])
                    / statistics.median(x["total_ms"] for x in runs[c][0]))

        for r in range(args.rounds):
            h.log(f"  round {r + 1}/{args.rounds} (load {h.loadavg()[0]:.2f})")
            one_round(r, configs)
        for r in range(args.extra_rounds):
            slow = [c for c in configs if ratio(c) > args.recheck_above]
            if not slow:
                break
            h.log(f"  extra round {r + 1}: {['/'.join(c) for c in slow]}")
            one_round(args.rounds + r, slow)
        for tree in trees:
            tree.close()
    rows = []
    for c in configs:
        before, after = runs[c]
        med = [{k: statistics.median(x[k] for x in side) for k in ("total_ms", "update_ms",
                                                                   "query_ms", "cpu_ms")}
               for side in (before, after)]
        same = all(a["picks"] == b["picks"] for a, b in zip(before, after, strict=False))
        row = [f"{c[0]}/{c[1]}", h.fmt(med[0]["total_ms"]), h.fmt(med[1]["total_ms"]),
               f"{ratio(c):.2f}", *(f"{med[1][k] / med[0][k]:.2f}" for k in (
                   "update_ms", "query_ms", "cpu_ms")), str(len(before)), "yes" if same else "NO"]
        rows.append(row)
        h.log("  " + " | ".join(row))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, nargs="?")
    p.add_argument("after", type=Path, nargs="?")
    h.add_common_arguments(p, sizes=(10000, 70000))
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--extra-rounds", type=int, default=4)
    p.add_argument("--recheck-above", type=float, default=1.10)
    p.add_argument("--only", action="append", default=[], help="STRATEGY/LOSS (repeatable)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.iterations, args.seed)
    if args.before is None or args.after is None:
        p.error("give the BEFORE and AFTER repository roots")
    started = dt.datetime.now().astimezone()
    X, y, data = h.load_data(max(args.sizes))
    md = h.header("Before/after: ms per active-learning iteration "
                  "(`benchmarks/compare_revisions.py`)", h.command_line(argv), started, data,
                  "the two trees below")
    md += [f"- {label}: `{root.resolve()}` at {h.git_revision(root)}"
           for label, root in (("before", args.before), ("after", args.after))]
    md += [f"- one iteration = query 5 among a random 10% of the unlabeled nodes + teach "
           f"(modAL path of `bench_al.py`), {args.iterations} iterations from 20 labels; ms = "
           "median over the rounds of each round's median; ratio = after / before (also of "
           "the update and query medians, and of the process's CPU time per iteration, less "
           "sensitive to other processes than the wall clock); rounds interleaved A B / B A",
           f"- load average at start: {' '.join(f'{v:.2f}' for v in h.loadavg())}"]
    for n in args.sizes:
        rows = compare_size(n, X, y, args)
        md += ["", f"## N = {n:,}", "", *h.markdown(
            ["config", "before ms", "after ms", "ratio", "update ratio", "query ratio",
             "CPU-time ratio", "rounds", "same picks"], rows)]
    md.append(f"\n- load average at end: {' '.join(f'{v:.2f}' for v in h.loadavg())}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare_revisions.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
