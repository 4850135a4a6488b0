#!/usr/bin/env python
"""Core benchmark of skmcal: graph, spectrum, the five losses, GridSearchCV.

Usage::

    python benchmarks/bench_core.py [--sizes 10000 70000] [--out benchmarks/results]

For every N (the first N rows of Fashion-MNIST): the graph phase by phase
(``NodeSet(X)``; the neighbour search skmcal runs, called alone: exact below
``--exact-below``, else pynndescent; ``skmcal.graph.build_graph``; the
connected components and ``laplacian_spectrum`` of its ``W``; weights = the
rest); a cold fit (empty graph cache, ``NodeSet`` + one ``ce`` fit); one fit of
each loss on the cached graph (median of ``--repeats``; 520 labels, binary
losses: class 0 vs the rest), also under ``threadpool_limits(1, "blas")``, split
into the solver (``fit_posterior``, timed by ``_harness.call_times``) and the
estimator's overhead; ``GridSearchCV`` 3 tau x 3 gamma x 3 folds on the cached
graph (``ce``, ``mgr``) and from an empty cache (``ce``); at exact-kNN sizes the
pynndescent graph for comparison. Memory: max RSS after each measurement and
the ``tracemalloc`` peak of each graph phase; the CPU other processes used
during each. ``--wait-idle`` waits for a quiet machine before each group of
measurements. Results: ``<out>/bench_core_<tag>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics

import _harness as h
import numpy as np
from scipy.sparse.csgraph import connected_components
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import threadpool_limits

LABELS_PER_CLASS, N_EIGS = 52, 50
LOSSES = ("gr", "logistic", "probit", "mgr", "ce")
BINARY = ("gr", "logistic", "probit")
GRID = {"tau": [0.001, 0.005, 0.02], "gamma": [0.1, 0.5, 1.0]}
TARGET_GRAPH_S, TARGET_CE_FIT_MS, TARGET_GS_RATIO = 30.0, 100.0, 2.0
KWARGS = dict(kernel="gaussian", n_neighbors=10, scale_neighbor=5, scale_factor=3.0, n_eigs=N_EIGS,
              random_state=0, warm_start=False)


def knn_alone(X, neighbors):
    """The neighbour search that skmcal's graph runs, called directly."""
    if neighbors is None:
        return NearestNeighbors().fit(X).kneighbors(None, n_neighbors=KWARGS["n_neighbors"])
    return clone(neighbors).fit_transform(X)


def bench_size(X_all, y_all, n, args) -> dict:
    import skmcal
    from skmcal import NodeSet, SpectralGraphClassifier
    from skmcal.graph import GraphParams, build_graph, laplacian_spectrum

    X, y = np.ascontiguousarray(X_all[:n]), y_all[:n]
    lab = np.sort(h.initial_labels(y, LABELS_PER_CLASS, 0))
    unl = np.setdiff1d(np.arange(n), lab)
    neighbors, knn = h.neighbors_for(n, args.exact_below)
    params = {k: v for k, v in KWARGS.items() if k != "warm_start"}
    r = {"N": n, "knn": knn, "phases": {}, "runs": {}}
    P, R = r["phases"], r["runs"]
    h.log(f"N={n}: kNN {knn}, {lab.size} labels")

    # 1. the graph, phase by phase (traced)
    h.wait_for_quiet(args.wait_idle)
    trace = args.tracemalloc
    with h.measured(P, "NodeSet(X) (copy + hash)", trace):
        nodes = NodeSet(X)
    with h.measured(P, "kNN of the nodes (the neighbour search alone)", trace):
        knn_alone(nodes.data, neighbors)
    with h.measured(P, "build_graph (kNN + weights + components + spectrum)", trace):
        graph = build_graph(nodes.data, GraphParams(kernel="gaussian", neighbors=neighbors,
                                                    **params))
    W = graph.weights
    with h.measured(P, "connected components", trace):
        connected_components(W, directed=False)
    with h.measured(P, f"spectrum: {N_EIGS} eigenpairs (laplacian_spectrum)", trace):
        laplacian_spectrum(W, N_EIGS, 0)
    lam = graph.eigenvalues
    r["graph_info"] = (f"nnz(W) = {W.nnz:,}, {graph.n_components} component(s), eigen-residual "
                       f"{graph.residual:.1e}, lambda_2..5 = {np.round(lam[1:5], 5).tolist()}, "
                       f"lambda_{N_EIGS} = {lam[-1]:.4f}")
    if args.compare_knn and neighbors is None:
        other, _ = h.neighbors_for(n, 0)
        with h.measured(R, "[compare] build_graph with pynndescent kNN") as e:
            W2 = build_graph(nodes.data, GraphParams(kernel="gaussian", neighbors=other,
                                                     **params)).weights
        e["edge_recall_vs_exact"] = float((W != 0).multiply(W2 != 0).nnz / W.nnz)
    del graph, W, nodes

    # 2. cold fit: empty cache, NodeSet, one ce fit
    skmcal.clear_graph_cache()
    h.wait_for_quiet(args.wait_idle)
    builds = skmcal.GRAPH_CACHE.builds
    with h.measured(R, "cold fit") as e:
        t0 = h.now()
        nodes = NodeSet(X)
        e["nodeset_s"] = h.now() - t0
        SpectralGraphClassifier("ce", nodes=nodes, neighbors=neighbors, **KWARGS).fit(X[lab],
                                                                                       y[lab])
    e["graph_builds"] = skmcal.GRAPH_CACHE.builds - builds

    # 3. fits of each loss on the cached graph
    r["fits"] = {}
    for loss in LOSSES:
        y_fit, y_ref = ((y[lab] == 0).astype(int), (y == 0).astype(int)) if loss in BINARY else (
            y[lab], y)
        clf = SpectralGraphClassifier(loss, model="spectral", nodes=nodes, neighbors=neighbors,
                                      **KWARGS)
        builds = skmcal.GRAPH_CACHE.builds
        clf.fit(X[lab], y_fit)  # untimed first call
        h.wait_for_quiet(args.wait_idle)

        def fit(c=clf, yf=y_fit):
            c.fit(X[lab], yf)

        with h.call_times("skmcal.classifier", "fit_posterior") as solver, h.measured(
                R, f"fit {loss}") as e:
            e.update(h.repeat(fit, args.repeats))
        with threadpool_limits(limits=1, user_api="blas"), h.measured(
                R, f"fit {loss}, BLAS 1 thread") as e1:
            e1.update(h.repeat(fit, args.repeats))
        r["fits"][loss] = dict(
            e, alt_median_s=e1["median_s"], classes=int(np.unique(y_fit).size),
            solver_median_s=statistics.median(solver), n_iter=int(clf.n_iter_),
            graph_builds=skmcal.GRAPH_CACHE.builds - builds,
            accuracy=float(np.mean(clf.transduction_[unl] == y_ref[unl])))

    # 4, 5. GridSearchCV warm (ce, mgr) and cold (ce)
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)

    def grid_search(loss, pool):
        clf = SpectralGraphClassifier(loss, model="spectral", nodes=pool, neighbors=neighbors,
                                      **KWARGS)
        return GridSearchCV(clf, GRID, cv=cv).fit(X[lab], y[lab])

    r["gridsearch"] = {}
    for loss in ("ce", "mgr"):
        builds = skmcal.GRAPH_CACHE.builds
        grid_search(loss, nodes)  # untimed first call
        h.wait_for_quiet(args.wait_idle)
        with h.measured(R, f"GridSearchCV {loss} warm") as e:
            e.update(h.repeat(lambda lo=loss: grid_search(lo, nodes), args.gs_repeats))
        gs, k = grid_search(loss, nodes), cv.get_n_splits()
        cvr = gs.cv_results_
        by_params = zip(cvr["params"], cvr["mean_fit_time"], strict=True)
        r["gridsearch"][loss] = dict(
            e, sum_fit_s=float(np.sum(cvr["mean_fit_time"]) * k + gs.refit_time_),
            sum_score_s=float(np.sum(cvr["mean_score_time"]) * k), best_params=gs.best_params_,
            best_cv_score=float(gs.best_score_),
            graph_builds_warm=skmcal.GRAPH_CACHE.builds - builds,
            fit_time_by_params_ms={f"tau={p['tau']},gamma={p['gamma']}": round(1e3 * float(t), 1)
                                   for p, t in by_params})
    if not args.skip_gs_cold:
        del clf, nodes
        skmcal.clear_graph_cache()
        builds = skmcal.GRAPH_CACHE.builds
        h.wait_for_quiet(args.wait_idle)
        with h.measured(R, "GridSearchCV ce cold") as e:
            grid_search("ce", NodeSet(X))
        e["graph_builds"] = skmcal.GRAPH_CACHE.builds - builds
    skmcal.clear_graph_cache()
    return r


def s(v) -> str:
    """Seconds as ``12.3 ms`` or ``1.23 s``; – for none."""
    return "–" if v is None else (f"{v * 1e3:.1f} ms" if v < 1.0 else f"{v:.2f} s")


def render(head, results, args) -> str:
    cols = [f"N={r['N']:,}" for r in results]
    rows = []

    def row(label, values, target="", status=""):
        rows.append([label, *values, target, status])

    def status(oks):
        return " / ".join("PASS" if ok else "MISS" for ok in oks)

    ph, rn = [r["phases"] for r in results], [r["runs"] for r in results]
    build, spec = "build_graph (kNN + weights + components + spectrum)", \
        f"spectrum: {N_EIGS} eigenpairs (laplacian_spectrum)"
    knn, comp = "kNN of the nodes (the neighbour search alone)", "connected components"
    ce_fit = [r["fits"]["ce"]["median_s"] for r in results]
    # graph + spectrum: phase run; cold fit minus NodeSet minus a warm ce fit
    graphs = [[p[build]["time_s"], q["cold fit"]["time_s"] - q["cold fit"]["nodeset_s"] - c]
              for p, q, c in zip(ph, rn, ce_fit, strict=True)]
    row("kNN method", [r["knn"].split(":")[0].split(".")[0] for r in results])
    row("NodeSet(X): copy to float64 + hash", [s(p["NodeSet(X) (copy + hash)"]["time_s"])
                                               for p in ph])
    row("&nbsp;&nbsp;kNN of the nodes (index + search)", [s(p[knn]["time_s"]) for p in ph])
    row("&nbsp;&nbsp;weights + symmetrise (by difference)", [s(
        p[build]["time_s"] - p[knn]["time_s"] - p[comp]["time_s"] - p[spec]["time_s"])
        for p in ph])
    row("connected components", [s(p[comp]["time_s"]) for p in ph])
    row(f"spectrum ({N_EIGS} eigenpairs, ARPACK)", [s(p[spec]["time_s"]) for p in ph])
    row("**graph + spectrum** = build_graph: phase run / in the cold fit (by difference)",
        [" / ".join(map(s, g)) for g in graphs], f"≤ {TARGET_GRAPH_S:.0f} s at 70k",
        status(g[0] <= TARGET_GRAPH_S for g, r in zip(graphs, results, strict=True)
               if r["N"] == 70000))
    cmp = "[compare] build_graph with pynndescent kNN"
    if any(cmp in q for q in rn):
        row(f"{cmp} (edge recall vs exact)", [f"{s(q[cmp]['time_s'])} "
            f"({q[cmp]['edge_recall_vs_exact']:.3f})" if cmp in q else "–" for q in rn])
    row("cold fit: NodeSet + graph + spectrum + ce model", [s(q["cold fit"]["time_s"])
                                                            for q in rn])
    for loss in LOSSES:
        f = [r["fits"][loss] for r in results]
        target = loss == "ce"
        row(f"fit {loss} (warm, cached graph)", [f"{s(e['median_s'])} (min {s(e['min_s'])})"
                                                 for e in f],
            f"≤ {TARGET_CE_FIT_MS:.0f} ms" if target else "",
            status(e["median_s"] * 1e3 <= TARGET_CE_FIT_MS for e in f) if target else "")
    g = [r["gridsearch"]["ce"] for r in results]
    row("GridSearchCV ce 3x3x3 (27+1 fits), warm cache", [s(e["median_s"]) for e in g])
    cold = [q.get("GridSearchCV ce cold", {}).get("time_s") for q in rn]
    row("GridSearchCV ce 3x3x3, cold (empty cache, NodeSet + 1 graph build)", map(s, cold))
    for name, num, den, fmt in (
            ("ratio GS cold / cold single fit", cold, [q["cold fit"]["time_s"] for q in rn],
             "{:.2f}x"),
            ("ratio GS warm / cold single fit", [e["median_s"] for e in g],
             [q["cold fit"]["time_s"] for q in rn], "{:.3f}x"),
            ("ratio GS warm / warm single ce fit (28 fits + 27 scorings inside)",
             [e["median_s"] for e in g], ce_fit, "{:.1f}x")):
        ratios = [a / b if a is not None else float("nan") for a, b in zip(num, den, strict=True)]
        row(name, [fmt.format(x) for x in ratios], f"≤ {TARGET_GS_RATIO:.0f}x",
            status(x <= TARGET_GS_RATIO for x in ratios))
    row("&nbsp;&nbsp;inside GS ce warm: sum of 28 fits / sum of 27 scorings (sklearn clock)",
        [f"{s(e['sum_fit_s'])} / {s(e['sum_score_s'])}" for e in g])
    row("GridSearchCV mgr 3x3x3, warm cache (ratio to warm mgr fit)", [
        f"{s(r['gridsearch']['mgr']['median_s'])} "
        f"({r['gridsearch']['mgr']['median_s'] / r['fits']['mgr']['median_s']:.1f}x)"
        for r in results])
    md = [*head, f"- model: gaussian kernel, n_neighbors=10, scale_neighbor=5, scale_factor=3, "
          f"M={N_EIGS}, random_state=0; {LABELS_PER_CLASS} labels/class; binary losses: class 0 "
          f"vs rest", f"- timings: perf_counter; fits = median of {args.repeats} (after one "
          f"untimed call), GridSearchCV warm = median of {args.gs_repeats}; waited up to "
          f"{args.wait_idle:.0f} s for other processes to use < 0.25 cores before each "
          "measurement", "", "## Timings", "",
          *h.markdown(["phase", *cols, "target", "status"], rows), "",
          "## Memory and CPU used by other processes", "",
          "max RSS = process high-water mark after the measurement (monotonic over the run); "
          "tracemalloc peak = NumPy/Python memory at the phase's peak (not numba/pynndescent "
          "internals, BLAS or ARPACK work arrays); other cores = CPU cores used by other "
          "processes during the measurement (/proc/stat; – : shorter than 0.5 s).", ""]

    def cells(e):
        peak = e.get("tracemalloc_peak_mib")
        return (f"{e['max_rss_mib_after']:.0f} MiB / {'–' if peak is None else f'{peak:.0f} MiB'}"
                f" / {h.fmt(e['other_processes_cores'], 2)}")

    md += h.markdown(["measurement", *[f"{c}: max RSS / tracemalloc peak / other cores"
                                       for c in cols]],
                     [[k, *[cells(p[k]) for p in ph]] for k in ph[0]]
                     + [[k, *[cells(q[k]) for q in rn]] for k in rn[0]])
    md += ["", "## Fits on the cached graph", "", "solver = median time in "
           "skmcal.classifier.fit_posterior per fit; overhead = median fit - solver "
           "(validation, node look-up, graph-cache key); BLAS 1 thread = the fit under "
           "threadpoolctl.threadpool_limits(1, 'blas').", ""]
    md += h.markdown(["N", "loss", "classes", "median", "min", "solver (fit_posterior)",
                      "overhead", "median, BLAS 1 thread", "Newton iters",
                      "accuracy on unlabeled nodes", "graph builds during fit"], [
        [f"{r['N']:,}", loss, f["classes"], s(f["median_s"]), s(f["min_s"]),
         s(f["solver_median_s"]), s(f["median_s"] - f["solver_median_s"]),
         s(f["alt_median_s"]), f["n_iter"], f"{f['accuracy']:.3f}", f["graph_builds"]]
        for r in results for loss, f in r["fits"].items()])
    md += ["", "## Graphs and GridSearchCV", ""]
    for r in results:
        gs = r["gridsearch"]
        md.append(f"- N={r['N']:,}: kNN {r['knn']}; {r['graph_info']}; graph builds: cold fit "
                  f"{r['runs']['cold fit']['graph_builds']}, GridSearchCV cold "
                  f"{r['runs'].get('GridSearchCV ce cold', {}).get('graph_builds', '–')}, warm "
                  f"{gs['ce']['graph_builds_warm']}; GridSearchCV ce best {gs['ce']['best_params']}"
                  f" (cv acc {gs['ce']['best_cv_score']:.3f}), mgr best {gs['mgr']['best_params']}"
                  f" (cv acc {gs['mgr']['best_cv_score']:.3f}); ce mean fit time by (tau, gamma), "
                  f"ms: {gs['ce']['fit_time_by_params_ms']}")
    if h.WARNINGS:
        md += ["", "## Warnings raised", "", *[f"- [{p}] {c}: {m}" for p, c, m in
                                              dict.fromkeys(h.WARNINGS)]]
    return "\n".join(md) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    h.add_common_arguments(p, sizes=(10000, 70000))
    p.add_argument("--repeats", type=int, default=7, help="timed repeats of each fit")
    p.add_argument("--gs-repeats", type=int, default=3, help="timed repeats of GridSearchCV")
    p.add_argument("--no-tracemalloc", dest="tracemalloc", action="store_false")
    p.add_argument("--no-compare-knn", dest="compare_knn", action="store_false",
                   help="skip the pynndescent graph at sizes that use exact kNN")
    p.add_argument("--skip-gs-cold", action="store_true")
    p.add_argument("--wait-idle", type=float, default=60.0, metavar="SECONDS",
                   help="before each measurement wait up to this long for other processes to "
                        "use < 0.25 cores (0: never wait)")
    p.add_argument("--tag", help="results file suffix (default: the sizes)")
    args = p.parse_args(argv)
    started = dt.datetime.now().astimezone()
    X, y, data = h.load_data(max(args.sizes))
    rev = h.revision()
    h.log(f"data: {data}\nskmcal revision: {rev}\nmachine: {h.machine()}")
    warmup = None
    if max(args.sizes) >= args.exact_below or args.compare_knn:
        warmup = h.warm_up_pynndescent()
        h.log(f"pynndescent warm-up: first call {warmup[0]:.1f} s, second {warmup[1]:.2f} s")
    results = [bench_size(X, y, n, args) for n in args.sizes]
    head = h.header("skmcal core benchmark (benchmarks/bench_core.py)", h.command_line(argv),
                    started, data, h.final_revision(rev))
    if warmup:
        head.append(f"- pynndescent warm-up (numba compile, 2,000 x 784, not timed anywhere): "
                    f"first call {s(warmup[0])}, second {s(warmup[1])}")
    report = render(head, results, args)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"bench_core_{args.tag or '_'.join(map(str, args.sizes))}"
    stem.with_suffix(".md").write_text(report)
    targets = {"graph_plus_spectrum_70k_s": TARGET_GRAPH_S, "ce_fit_ms": TARGET_CE_FIT_MS,
               "gridsearch_over_cold_fit": TARGET_GS_RATIO}
    stem.with_suffix(".json").write_text(json.dumps(
        {"head": head, "targets": targets, "results": results, "warnings": h.WARNINGS}, indent=2,
        default=str))
    print(f"\n{report}\nwrote {stem}.md and .json")


if __name__ == "__main__":
    main()
