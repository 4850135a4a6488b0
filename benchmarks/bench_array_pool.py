"""One active-learning iteration with the pool as a plain array against a NodeSet pool.

Most modAL users pass arrays: ``SpectralGraphClassifier(nodes=X)`` and
``learner.query(X, ...)``. This script times one modAL iteration (query 5
among a 10% candidate set with model change, then ``teach`` the 5 true labels)
both ways on the same graph, median of ``--iterations`` after two warm-up
iterations, the two learners taking turns (so the load of a shared machine
weighs on both alike):

* ``nodeset``: ``pool = NodeSet(X)``; ``nodes=pool``; ``learner.query(pool, ...)``
* ``array``:   ``nodes=X``; ``learner.query(X, ...)``

Data: embedding-like float32 blobs (``--data blobs``, 64-d, 10 overlapping
classes) or Fashion-MNIST (``--data fashion``, 784-d, from Debian's
``dataset-fashion-mnist``). The graph is built once (exact kNN) and shared
through the graph cache, so only the per-iteration costs are compared::

    python benchmarks/bench_array_pool.py --sizes 20000 70000 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def embeddings(n, d=64, n_classes=10, seed=0, latent=16, chunk=200_000):
    """``n`` x ``d`` float32 rows of ``n_classes`` overlapping Gaussian classes.

    Each class is a Gaussian around its own mean in a ``latent``-dimensional
    space, mapped linearly to ``d`` dimensions plus a little isotropic noise:
    low intrinsic dimension, as in learned embeddings. The means are close
    enough that a kNN classifier is right about 85% of the time. Generated in
    chunks, so the peak is the float32 result plus one chunk.
    """
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=0.85, size=(n_classes, latent))
    lift = rng.normal(size=(latent, d)) / np.sqrt(latent)
    y = rng.integers(n_classes, size=n)
    X = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        z = means[y[start:stop]] + rng.normal(size=(stop - start, latent))
        X[start:stop] = z @ lift + 0.05 * rng.normal(size=(stop - start, d))
    return X, y


def load(kind, n, seed=0):
    if kind == "fashion":
        from skmcal.datasets import load_fashion_mnist

        X, y = load_fashion_mnist(n_samples=n)
        return X.astype(np.float32), y
    return embeddings(n, seed=seed)


def initial(y, per_class=2, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in np.unique(y)]
    )


def iterate(learners, X, y, iterations, seed):
    """Median seconds of query and of teach per learner, the learners run in turns.

    ``learners`` maps a name to ``(learner, pool)``. Each iteration runs every
    learner once, in an order that alternates, so that the load of a shared
    machine weighs on all of them alike.
    """
    times = {name: ([], []) for name in learners}
    names = list(learners)
    for it in range(iterations + 2):
        for name in names if it % 2 else names[::-1]:
            learner, pool = learners[name]
            t0 = time.perf_counter()
            idx, _ = learner.query(pool, n_instances=5, candidates=0.1, batch="topk",
                                       random_state=seed + it)
            t1 = time.perf_counter()
            learner.teach(X[idx], y[idx])
            t2 = time.perf_counter()
            if it >= 2:
                times[name][0].append(t1 - t0)
                times[name][1].append(t2 - t1)
    return {name: tuple(statistics.median(t) for t in times[name]) for name in names}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[20000, 70000])
    p.add_argument("--data", choices=["blobs", "fashion"], default="blobs")
    p.add_argument("--losses", nargs="+", default=["mgr", "ce"])
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    from skmcal import NodeSet, SpectralGraphClassifier

    lines = [
        "| N | d | loss | NodeSet query ms | NodeSet teach ms | NodeSet total ms "
        "| array query ms | array teach ms | array total ms | array / NodeSet | same picks |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in args.sizes:
        X, y = load(args.data, n)
        init = initial(y)
        pool = NodeSet(X)
        t0 = time.perf_counter()
        # builds the shared graph
        SpectralGraphClassifier("mgr", model="spectral", kernel="gaussian", nodes=pool).fit(
            X[init], y[init]
        )
        print(f"N={n}: graph {time.perf_counter() - t0:.1f} s", flush=True)
        for loss in args.losses:
            from modAL.models import ActiveLearner

            from skmcal.query import model_change

            learners = {}
            for path in ("nodeset", "array"):
                nodes = pool if path == "nodeset" else X
                learner = ActiveLearner(
                    estimator=SpectralGraphClassifier(
                        loss, model="spectral", kernel="gaussian", nodes=nodes
                    ),
                    query_strategy=model_change,
                    X_training=X[init],
                    y_training=y[init],
                )
                learners[path] = (learner, nodes)
            res = iterate(learners, X, y, args.iterations, seed=1)
            (qn, tn), (qa, ta) = res["nodeset"], res["array"]
            ln, la = learners["nodeset"][0], learners["array"][0]
            same = np.array_equal(ln.estimator.labeled_nodes_, la.estimator.labeled_nodes_)
            ratio = (qa + ta) / (qn + tn)
            lines.append(
                f"| {n} | {X.shape[1]} | {loss} | {1e3 * qn:.1f} | {1e3 * tn:.1f} "
                f"| {1e3 * (qn + tn):.1f} | {1e3 * qa:.1f} | {1e3 * ta:.1f} "
                f"| {1e3 * (qa + ta):.1f} | {ratio:.2f}x | {'yes' if same else 'NO'} |"
            )
            print(lines[-1], flush=True)
    load1 = os.getloadavg()[0]
    header = [
        f"# {Path(__file__).name}: array pool vs NodeSet pool, one AL iteration",
        "",
        f"command: `python benchmarks/{Path(__file__).name} {' '.join(argv or sys.argv[1:])}`",
        f"machine: {platform.node()}, {os.cpu_count()} cores, load {load1:.1f} at the end; "
        f"data: {args.data}; medians of {args.iterations} iterations "
        "(model change, 5 queries among 10%, teach the 5 labels).",
        "",
    ]
    text = "\n".join(header + lines) + "\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"bench_array_pool_{args.data}.md").write_text(text)


if __name__ == "__main__":
    main()
