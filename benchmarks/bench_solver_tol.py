"""Full-graph fits at their tolerance: time, CG iterations and error by (tau, gamma).

On MNIST-test's Gaussian graph (the classifier's, 10,000 nodes; or its first
``--n`` images), for each ``(tau, gamma)``: a cold fit from 20 random labels,
10 warm refits adding 5 labels each (the active-learning path; for ``mgr``
through the Green's columns), and a cold fit from 500 labels (for ``mgr`` a
direct solve), all by :func:`skmcal.fullgraph.fit_full_graph` at ``--tol``;
each fit's largest error against a reference, the number of predictions
that differ from the reference's, and the CG iterations. The reference:
for ``mgr`` a sparse direct solve (SuperLU) of the same system
``(L + tau^2 I + P'P / gamma^2) U = P'Y / gamma^2``; for ``ce`` (Newton) the
same fit at tol 1e-13.

Run it in two source trees (``PYTHONPATH=<tree>``) to compare stopping
rules; the report names the revision it measured::

    python benchmarks/bench_solver_tol.py --out benchmarks/results --name bench_solver_tol
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import _harness as h
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

SETTINGS = {
    "mgr": ((0.1, 1.0), (0.03, 0.5), (0.01, 0.1), (1e-3, 1e-3), (1e-4, 1e-4), (1e-5, 1e-5)),
    "ce": ((0.1, 1.0), (0.03, 0.5), (0.01, 0.1), (1e-3, 1e-3)),
}


def direct_map(L, labeled, Y, tau, gamma):
    """The reference: SuperLU on ``L + tau^2 I + P'P / gamma^2`` (repeats add up)."""
    n = L.shape[0]
    diag = np.full(n, tau**2)
    np.add.at(diag, labeled, 1.0 / gamma**2)
    B = np.zeros((n, Y.shape[1]))
    np.add.at(B, labeled, Y / gamma**2)
    return spla.splu((L + sp.diags(diag)).tocsc()).solve(B)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10000, help="the first n MNIST-test images")
    p.add_argument("--tol", type=float, default=1e-8, help="tol of fit_full_graph")
    p.add_argument("--loss", choices=sorted(SETTINGS), default="mgr")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-home", default=None)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--name", default="bench_solver_tol")
    args = p.parse_args(argv)

    from skmcal import SpectralGraphClassifier
    from skmcal.datasets import load_dataset
    from skmcal.fullgraph import fit_full_graph, normalized_laplacian, solver_for
    from skmcal.losses import LOSSES

    started, command, rev = dt.datetime.now(dt.timezone.utc), h.command_line(argv), h.revision()
    X, y = load_dataset("mnist-test", data_home=h.data_home(args.data_home))
    X, y = X[: args.n], np.asarray(y[: args.n])
    given = np.full(y.size, -1)
    given[:20] = y[:20]
    graph = SpectralGraphClassifier(
        "mgr", model="spectral", kernel="gaussian", tau=0.1, gamma=0.5
    ).fit(X, given).graph_
    W = graph.weights.tocsr()
    L = normalized_laplacian(W)
    n_classes = int(y.max()) + 1
    order = np.random.default_rng(args.seed).permutation(y.size)
    rows = []
    loss = LOSSES[args.loss]
    for tau, gamma in SETTINGS[args.loss]:
        solver = solver_for(W.copy())  # a fresh solver: no columns of other settings
        fits, latent = [], None
        for size in [20, *range(25, 75, 5), 500]:
            labeled = order[:size]
            Y = np.eye(n_classes)[y[labeled]]
            init = None if size in (20, 500) else latent
            start = h.now()
            fit = fit_full_graph(
                loss, W, labeled, Y, tau, gamma, init=init, tol=args.tol, solver=solver
            )
            ms = 1e3 * (h.now() - start)
            latent = fit.latent
            if loss.closed_form:
                reference = direct_map(L, labeled, Y, tau, gamma)
            else:
                reference = fit_full_graph(loss, W, labeled, Y, tau, gamma, tol=1e-13).latent
            error = np.abs(fit.latent - reference).max() / np.abs(reference).max()
            changed = int(np.sum(fit.latent.argmax(axis=1) != reference.argmax(axis=1)))
            fits.append((size, ms, fit.n_cg, error, changed, fit.converged))
        cold, warm, many = fits[0], fits[1:-1], fits[-1]
        row = {
            "tau": tau, "gamma": gamma,
            "cold_ms": cold[1], "cold_cg": cold[2], "cold_error": cold[3],
            "warm_ms": float(np.median([f[1] for f in warm])),
            "warm_cg": int(sum(f[2] for f in warm)),
            "warm_error": max(f[3] for f in warm),
            "warm_changed": max(f[4] for f in warm),
            "many_ms": many[1], "many_cg": many[2], "many_error": many[3],
            "many_changed": many[4],
            "converged": all(f[5] for f in fits),
        }  # fmt: skip
        rows.append(row)
        h.log(
            f"tau={tau:g} gamma={gamma:g}: cold {cold[1]:.0f} ms, {cold[2]} CG, "
            f"error {cold[3]:.1e}; "
            f"warm median {row['warm_ms']:.0f} ms, {row['warm_cg']} CG, error "
            f"{row['warm_error']:.1e}; 500 labels {many[1]:.0f} ms, {many[2]} CG, error "
            f"{many[3]:.1e}, {many[4]} predictions differ"
        )
    rev = h.final_revision(rev)
    head = [
        "tau", "gamma", "cold: ms / CG / error",
        "warm refits: median ms / CG (10) / max error / max differing",
        "500 labels: ms / CG / error / differing", "converged",
    ]  # fmt: skip
    table = [
        [f"{r['tau']:g}", f"{r['gamma']:g}",
         f"{r['cold_ms']:.0f} / {r['cold_cg']} / {r['cold_error']:.1e}",
         f"{r['warm_ms']:.0f} / {r['warm_cg']} / {r['warm_error']:.1e} / {r['warm_changed']}",
         f"{r['many_ms']:.0f} / {r['many_cg']} / {r['many_error']:.1e} / {r['many_changed']}",
         r["converged"]]
        for r in rows
    ]  # fmt: skip
    lines = h.header(
        f"Full-graph {args.loss} fits at their tolerance", command, started,
        f"MNIST-test, first {y.size} images, the classifier's Gaussian graph", rev,
    )  # fmt: skip
    lines += [
        "",
        f"`fit_full_graph({args.loss}, tol={args.tol:g})`: a cold fit from 20 random labels, "
        "10 warm refits adding 5 labels each, a cold fit from 500 labels. *error*: largest "
        "|value - reference| over the reference's largest |value|, the reference "
        + ("a sparse direct solve (SuperLU) of the same system" if loss.closed_form
           else "the same fit at tol 1e-13")
        + "; *differing*: predictions (argmax) that differ from the reference's. "
        "One BLAS thread.",
        "",
        *h.markdown(head, table),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    h.write_csv(args.out / f"{args.name}.csv", rows, rows[0].keys())
    h.finish(args.out, args.name, "\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
