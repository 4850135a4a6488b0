"""Time and peak memory of each phase of skmcal at 100,000+ nodes, and the kNN crossover.

Default mode: for each N, in a fresh process, on N x 64 float32 embedding-like
rows with 10 overlapping classes (``bench_array_pool.embeddings``): the
NodeSet, each phase of the graph (equal rows, kNN search, kernel weights,
components, spectrum; the times are those skmcal logs), the first fit, then
active-learning iterations (query 5 among 10% of the unlabeled nodes with model
change, refit on the labels) for ``mgr``, ``ce`` and ``model="full"`` mgr
(``--no-full``: not), the accuracy on the unlabeled nodes, and the peak of the
graph phases against ``skmcal.graph.graph_memory_estimate``. Peak memory per
phase is the process's ``VmHWM``, reset (``/proc/self/clear_refs``) at the
start of each phase::

    python benchmarks/bench_scale.py --sizes 100000 --out benchmarks/results

``--crossover``: exact kNN (scikit-learn) against pynndescent, fit + 10
neighbours of every point, at a few sizes, 64-d blobs and 784-d Fashion-MNIST
(or 784-d blobs without it), with pynndescent's recall::

    python benchmarks/bench_scale.py --crossover --out benchmarks/results

``--memory-only``: the peak of ``NodeSet`` + graph alone (to compare revisions,
with ``PYTHONPATH`` set to another checkout). ``--grid-search``: a cold
``GridSearchCV`` with ``n_jobs`` 1 and 2, ``memory`` a folder or None (the
estimator's ``n_jobs=-1``: a graph build in a worker uses every core).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_array_pool import embeddings, initial  # noqa: E402

GIB = 2.0**30
FASHION = Path("/usr/share/datasets/fashion-mnist")
WARM_UP = 10_000  # rows of the first pynndescent call, which compiles its code
NOT_RUN = {  # measured elsewhere: named in the tables of sizes not run
    10_000_000: "see bench_scale_10m.md (27 min end to end, peak 15.4 GiB, both cores: "
    "`--sizes 10000000 --no-full --greedy --knn-jobs 2`)",
}


def status(field):
    """A field of /proc/self/status in bytes (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def note(rows, name, seconds):
    """A row: the phase, its seconds, the peak since the last row, the RSS now; also to stderr."""
    rows.append((name, seconds, status("VmHWM"), status("VmRSS")))
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {seconds} s, peak {rows[-1][2] / GIB:.2f} GiB",
          file=sys.stderr, flush=True)  # fmt: skip
    reset_peak()


class Phases(logging.Handler):
    """Notes each phase message of skmcal with its time and the peak memory since the last."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.rows = []

    def emit(self, record):
        msg = record.getMessage()
        seconds = re.findall(r"([\d.]+) s\b", msg)
        note(self.rows, msg.rsplit(":", 1)[0], float(seconds[-1]) if seconds else None)


def run_size(n, args):
    """All phases at one size (run in a child process); returns the table rows and accuracy."""
    from sklearn.base import clone

    from skmcal import NodeSet, SpectralGraphClassifier
    from skmcal.graph import graph_memory_estimate
    from skmcal.query import model_change

    rows, t0 = [], time.perf_counter()
    X, y = embeddings(n, d=args.d, seed=0)
    note(rows, f"data ({n} x {args.d} float32, generated)", time.perf_counter() - t0)
    neighbors = None
    if args.neighbors == "pynndescent":
        from pynndescent import PyNNDescentTransformer

        neighbors = PyNNDescentTransformer(n_neighbors=11, random_state=0, n_jobs=args.knn_jobs)
        t0 = time.perf_counter()
        warm = embeddings(WARM_UP, seed=1)[0]
        warm.flags.writeable = False  # as the NodeSet leaves X: numba compiles per array kind
        clone(neighbors).fit_transform(warm)
        note(rows, f"pynndescent numba compilation ({WARM_UP:,} rows)", time.perf_counter() - t0)
    t0 = time.perf_counter()
    pool = NodeSet(X, copy=False)
    note(rows, "NodeSet(X, copy=False)", time.perf_counter() - t0)
    before_fit = sum(r[1] for r in rows[1:])  # compilation and NodeSet
    handler, log = Phases(), logging.getLogger("skmcal")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    make = dict(nodes=pool, neighbors=neighbors, n_eigs=args.n_eigs, memory=args.memory or None)
    init = initial(y)
    estimator, before = SpectralGraphClassifier("mgr", **make), status("VmRSS")
    estimate = graph_memory_estimate(n, args.d, estimator._graph_params(n))
    t0 = time.perf_counter()
    estimator.fit(X[init], y[init])
    first_fit = time.perf_counter() - t0
    log.removeHandler(handler)
    rows.extend(handler.rows)
    graph_peak = max(r[2] for r in handler.rows) - before
    note(rows, "first fit (graph + spectrum + mgr fit), total", first_fit)
    accuracy, ten = {}, {}
    runs = [("mgr", "mgr", "spectral", "topk"), ("ce", "ce", "spectral", "topk")]
    runs += [("mgr, greedy batch", "mgr", "spectral", "greedy")] * args.greedy
    runs += [("full mgr", "mgr", "full", "topk")] * (not args.no_full)
    for name, loss, model, batch in runs:
        clf = SpectralGraphClassifier(loss, model=model, **make).fit(X[init], y[init])
        rest = np.setdiff1d(np.arange(n), init)
        start = float(np.mean(clf.transduction_[rest] == y[rest]))
        accuracy[f"{name} at {len(init)} labels"] = start
        labeled, times = list(init), []
        for it in range(args.iterations + 1):
            t0 = time.perf_counter()
            idx, _ = model_change(
                clf, pool, n_instances=5, candidates=0.1, batch=batch, random_state=it
            )
            labeled.extend(idx)
            clf.fit(X[labeled], y[labeled])
            times.append(time.perf_counter() - t0)
        median = statistics.median(times[1:])
        note(rows, f"one AL iteration, {name} (median of {args.iterations})", median)
        rest = np.setdiff1d(np.arange(n), labeled)
        accuracy[name] = float(np.mean(clf.transduction_[rest] == y[rest]))
        ten[name] = sum(times[:10])
    end_to_end = before_fit + first_fit + ten["mgr"]
    return {"rows": rows, "accuracy": accuracy, "end_to_end_s": end_to_end, "labels": len(labeled),
            "estimate": estimate, "graph_peak": graph_peak}  # fmt: skip


def grid_search(n, n_jobs, memory):
    """Seconds of a cold GridSearchCV over tau x gamma on a fixed pool (a fresh process)."""
    from sklearn.model_selection import GridSearchCV

    from skmcal import NodeSet, SpectralGraphClassifier

    X, y = embeddings(n, seed=0)
    labeled = np.sort(np.random.default_rng(0).choice(n, 300, replace=False))
    clf = SpectralGraphClassifier(
        "mgr", model="spectral", nodes=NodeSet(X), memory=memory or None, n_jobs=-1
    )
    grid = {"tau": [0.001, 0.005, 0.02], "gamma": [0.05, 0.1, 0.5]}
    t0 = time.perf_counter()
    search = GridSearchCV(clf, grid, cv=3, n_jobs=n_jobs).fit(X[labeled], y[labeled])
    return {"seconds": time.perf_counter() - t0, "best": search.best_params_}


def memory_only(n, d):
    """Peak of NodeSet + graph over float32 data (works on older revisions too)."""
    import skmcal
    from skmcal import NodeSet, SpectralGraphClassifier

    X, y = embeddings(n, d=d, seed=0)
    out = {"skmcal": str(Path(skmcal.__file__).parent.parent), "data_rss": status("VmRSS")}
    reset_peak()
    pool = NodeSet(X)
    out["nodeset_peak"], out["nodeset_rss"] = status("VmHWM"), status("VmRSS")
    out["nodeset_dtype"] = str(pool.data.dtype)
    init = initial(y)
    reset_peak()
    SpectralGraphClassifier("mgr", nodes=pool, n_eigs=50).fit(X[init], y[init])
    out["graph_peak"] = status("VmHWM")
    return out


def crossover(args):
    """Exact kNN vs pynndescent: seconds for the graph of every point, and recall."""
    from pynndescent import PyNNDescentTransformer
    from sklearn.neighbors import NearestNeighbors

    PyNNDescentTransformer(n_neighbors=11).fit_transform(embeddings(WARM_UP)[0])  # compile
    lines = ["| data | N | d | exact s | pynndescent s | recall@10 | faster |", "|---" * 7 + "|"]
    for kind, d, sizes in (("blobs", 64, args.sizes_64), ("fashion", 784, args.sizes_784)):
        for n in sizes:
            if kind == "fashion" and FASHION.is_dir() and n <= 70000:
                from skmcal.datasets import load_fashion_mnist

                X = load_fashion_mnist(n_samples=n)[0].astype(np.float32)
            else:
                kind, X = "blobs", embeddings(n, d=d)[0]
            t0 = time.perf_counter()
            exact = NearestNeighbors().fit(X).kneighbors(None, n_neighbors=10)[1]
            t1 = time.perf_counter()
            G = PyNNDescentTransformer(n_neighbors=11, random_state=0).fit_transform(X).tocsr()
            t2 = time.perf_counter()
            rows = range(0, n, 97)  # recall on a sample of points
            recall = sum(len(set(G[i].indices) & set(exact[i])) for i in rows) / (10 * len(rows))
            best = "pynndescent" if t2 - t1 < t1 - t0 else "exact"
            cells = (kind, n, d, f"{t1 - t0:.1f}", f"{t2 - t1:.1f}", f"{recall:.3f}", best)
            lines.append("| " + " | ".join(map(str, cells)) + " |")
            print(lines[-1], flush=True)
    return lines


def header(argv, script="bench_scale.py"):
    return [
        f"command: `python benchmarks/{script} {' '.join(argv)}`",
        f"machine: {platform.node()}, {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GIB:.0f} GiB, "
        f"load {os.getloadavg()[0]:.1f} at the end (shared with other work)",
        "",
    ]


def child(argv, n, *extra):
    """Run this script on one size in a fresh process; its RESULT, or the error text."""
    command = [sys.executable, __file__, *argv, "--child", str(n), *extra]
    # stderr (the phases as they end) passes through; the last lines name a failure
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        tail = []
        for line in p.stderr:
            sys.stderr.write(line)
            tail = [*tail[-20:], line]
        out = p.stdout.read()
    found = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    return json.loads(found[0][7:]) if found else f"failed ({p.returncode}): {''.join(tail)[-400:]}"


def phase_table(n, args, r):
    knn = f" (n_jobs={args.knn_jobs})" if args.neighbors == "pynndescent" else ""
    title = (f"## N = {n:,} x {args.d} float32, {args.neighbors} kNN{knn}, "
             f"{args.n_eigs} eigenpairs")  # fmt: skip
    head = "| phase | seconds | peak GiB (in phase) | RSS GiB after |"
    lines = [title, "", head, "|---" * 4 + "|"]
    for name, sec, peak, rss in r["rows"]:
        s = "-" if sec is None else f"{sec:.3f}" if sec < 1 else f"{sec:.1f}"
        lines.append(f"| {name} | {s} | {peak / GIB:.2f} | {rss / GIB:.2f} |")
    acc = ", ".join(f"{k} {v:.3f}" for k, v in r["accuracy"].items())
    return [*lines, "", f"End to end (compilation, NodeSet, first fit, 10 mgr iterations): "
            f"{r['end_to_end_s']:.1f} s. Accuracy on the unlabeled nodes after "
            f"{r['labels']} labels: {acc}. Graph phases: peak {r['graph_peak'] / GIB:.2f} GiB "
            f"above the RSS before the fit; skmcal's estimate (graph_memory_estimate) "
            f"{r['estimate'] / GIB:.2f} GiB.", ""]  # fmt: skip


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--neighbors", choices=["pynndescent", "exact"], default="pynndescent")
    p.add_argument("--n-eigs", type=int, default=50)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--no-full", action="store_true", help='skip model="full" (slow above 100k)')
    p.add_argument("--greedy", action="store_true", help="also mgr with greedy batches")
    p.add_argument("--knn-jobs", type=int, default=1, help="pynndescent's n_jobs (default 1)")
    p.add_argument("--crossover", action="store_true")
    p.add_argument("--sizes-64", type=int, nargs="+", default=[20000, 50000, 100000])
    p.add_argument("--sizes-784", type=int, nargs="+", default=[20000, 70000])
    p.add_argument("--memory-only", action="store_true")
    p.add_argument("--grid-search", action="store_true")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--n-jobs", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--memory", default="", help="graph cache folder (the estimators' memory=)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    if args.child is not None:
        if args.grid_search:
            result = grid_search(args.child, args.n_jobs, args.memory)
        elif args.memory_only:
            result = memory_only(args.child, args.d)
        else:
            result = run_size(args.child, args)
        print("RESULT " + json.dumps(result))
        return
    lines = [f"# bench_scale {' '.join(argv)}", "", *header(argv)]
    if args.crossover:
        lines += crossover(args)
    for n in [] if args.crossover else args.sizes:
        if args.grid_search:
            lines += ["| N | n_jobs | memory | seconds (cold) |", "|---|---|---|---|"]
            for n_jobs, memory in ((1, True), (2, True), (1, False), (2, False)):
                with tempfile.TemporaryDirectory() as folder:
                    r = child(argv, n, "--n-jobs", str(n_jobs), "--memory", folder * memory)
                sec = r["seconds"] if isinstance(r, dict) else r
                sec = f"{sec:.1f}" if isinstance(sec, float) else sec
                lines.append(f"| {n} | {n_jobs} | {'folder' if memory else 'None'} | {sec} |")
                print(lines[-1], flush=True)
            continue
        r = child(argv, n)
        if isinstance(r, str):
            lines.append(f"N = {n}: {r}")
        elif args.memory_only:
            lines.append(f"N = {n}: " + ", ".join(
                f"{k} {v / GIB:.2f} GiB" if isinstance(v, int) else f"{k} {v}"
                for k, v in r.items()))  # fmt: skip
        else:
            lines += phase_table(n, args, r)
    if not (args.crossover or args.grid_search or args.memory_only):
        lines += [f"N = {n:,}: {why}." for n, why in NOT_RUN.items() if n not in args.sizes]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        mode = next((m for m in ("crossover", "grid_search", "memory_only") if vars(args)[m]), "")
        args.out.mkdir(parents=True, exist_ok=True)
        sizes = "_".join(f"{n // 10**6}m" if n % 10**6 == 0 else f"{n // 1000}k"
                         for n in args.sizes)  # fmt: skip
        mode = mode or ("" if args.sizes == [100_000] else sizes)  # 100k: bench_scale.md
        (args.out / f"bench_scale{'_' * bool(mode)}{mode}.md").write_text(text)


if __name__ == "__main__":
    main()
