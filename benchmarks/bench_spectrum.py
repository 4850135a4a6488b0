"""The spectrum at scale: ARPACK against float32 Chebyshev subspace iteration.

For N rows of 64-d embedding-like float32 data (``bench_array_pool.embeddings``,
10 overlapping classes), the graph ``W`` of the classifier's defaults
(pynndescent kNN, 10 neighbours, self-tuning Gaussian) is built once and
saved (``--graphs``, reused if there); then each solver of
``skmcal.graph.laplacian_spectrum`` computes 50 eigenpairs in a fresh process
with one BLAS thread: wall and CPU seconds, the peak memory above ``W``
(``VmHWM``), the largest residual ``||A v - mu v||``, the largest eigenvalue
error and the smallest cosine between the subspaces against ARPACK with
``tol=0`` (``--reference``), and the accuracy on the unlabeled nodes of ``mgr``
and ``ce`` fitted with that spectrum on 20, 100 and 500 random labels (10% per
class)::

    python benchmarks/bench_spectrum.py --sizes 100000 --reference --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))
from bench_array_pool import embeddings  # noqa: E402
from bench_scale import GIB, header, reset_peak, status  # noqa: E402

LABELS = (20, 100, 500)


def graph(n, folder):
    """``W`` of N rows (built with pynndescent and saved, or loaded) and the classes."""
    path = folder / f"W_{n}.npz"
    if not path.exists():
        from pynndescent import PyNNDescentTransformer

        from skmcal import SpectralGraphClassifier
        from skmcal.graph import _affinity

        X, y = embeddings(n, d=64, seed=0)
        knn = PyNNDescentTransformer(n_neighbors=11, random_state=0, n_jobs=1)
        params = SpectralGraphClassifier(neighbors=knn)._graph_params(n)
        sp.save_npz(path, _affinity(params, X).W)
        np.save(folder / f"y_{n}.npy", y)
    return sp.load_npz(path).tocsr(), np.load(folder / f"y_{n}.npy")


def solve(n, solver, folder):
    """One solver in this process; the row of the table as a dict."""
    from threadpoolctl import threadpool_limits

    from skmcal import NodeSet, SpectralGraphClassifier
    from skmcal import graph as graph_module

    W, y = graph(n, folder)
    name, tight = solver.removesuffix("-tight"), solver.endswith("-tight")
    graph_module.EIGSH_TOL = 0.0 if tight else graph_module.EIGSH_TOL
    base = status("VmRSS")
    reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(1):
        lam, V, residual = graph_module.laplacian_spectrum(W, 50, solver=name)
    out = {"solver": solver, "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
           "peak_gib": (status("VmHWM") - base) / GIB, "residual": residual}  # fmt: skip
    ref = folder / f"ref_{n}.npz"
    if tight:
        np.savez(ref, lam=lam, V=V)
    elif ref.exists():
        r = np.load(ref)
        out["eig_err"] = float(np.abs(lam - r["lam"]).max())
        out["min_cos"] = float(np.linalg.svd(r["V"].T @ V, compute_uv=False).min())
    graph_module.laplacian_spectrum = lambda *a, **k: (lam, V, residual)
    pool, rng = NodeSet(W), np.random.default_rng(0)
    for n_labels in LABELS:
        labeled = np.concatenate([rng.choice(np.flatnonzero(y == c), n_labels // 10, replace=False)
                                  for c in range(10)])  # fmt: skip
        rest = np.setdiff1d(np.arange(n), labeled)
        for loss in ("mgr", "ce"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = SpectralGraphClassifier(
                    loss, model="spectral", kernel="precomputed", nodes=pool, n_eigs=50
                )
                clf.fit(W[labeled], y[labeled])
            out[f"{loss} {n_labels}"] = float(np.mean(clf.transduction_[rest] == y[rest]))
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    p.add_argument("--solvers", nargs="+", default=["arpack", "chebyshev"])
    p.add_argument("--reference", action="store_true", help="ARPACK with tol=0 first")
    p.add_argument("--graphs", type=Path, default=Path("/tmp/skmcal_bench_spectrum"))
    p.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    args.graphs.mkdir(parents=True, exist_ok=True)
    if args.child:
        print("RESULT " + json.dumps(solve(int(args.child[0]), args.child[1], args.graphs)))
        return
    cols = ["solver", "wall_s", "cpu_s", "peak_gib", "residual", "eig_err", "min_cos",
            *(f"{loss} {k}" for k in LABELS for loss in ("mgr", "ce"))]  # fmt: skip
    lines = [f"# bench_spectrum {' '.join(argv)}", "", *header(argv, "bench_spectrum.py")]
    for n in args.sizes:
        graph(n, args.graphs)
        lines += [f"## N = {n:,} x 64 float32, 50 eigenpairs (one BLAS thread)", "",
                  "| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]  # fmt: skip
        for solver in ["arpack-tight"] * args.reference + args.solvers:
            command = [sys.executable, __file__, *argv, "--child", str(n), solver]
            run = subprocess.run(command, capture_output=True, text=True)
            found = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
            r = json.loads(found[0][7:]) if found else {"solver": f"{solver}: {run.stderr[-300:]}"}
            cells = [r.get(c, "-") for c in cols]
            cells[cols.index("min_cos")] = f"{r['min_cos']:.7f}" if "min_cos" in r else "-"
            lines.append("| " + " | ".join(
                f"{v:.3g}" if isinstance(v, float) else str(v) for v in cells) + " |")  # fmt: skip
            print(lines[-1], flush=True)
        lines.append("")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        (args.out / f"bench_spectrum_{'_'.join(map(str, args.sizes))}.md").write_text(text)


if __name__ == "__main__":
    main()
