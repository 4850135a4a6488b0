#!/usr/bin/env python
"""Active-learning benchmark of skmcal: one iteration of every strategy x loss.

Usage::

    python benchmarks/bench_al.py [--sizes 10000 70000] [--iterations 20] [--only model_change/ce]
                                  [--profile model_change/ce] [--no-graphlearning]

For every N (the first N rows of Fashion-MNIST) and every strategy
(``model_change``, greedy ``model_change``, ``vopt``, ``sopt``, ``uncertainty``,
``random_sampling``) x loss (``gr``, ``logistic``, ``probit`` on the labels
``label < 5``; ``mgr``, ``ce`` on the 10 classes), ``n_eigs=50``, from 2 labels
per class: the median over ``--iterations`` of one iteration = *query* (values
on a random 10% of the unlabeled nodes, choice of B = 5) + *update* (teaching
the 5 true labels: the refit). Path (a), reported first, is modAL's
``learner.query(pool, n_instances=5, candidates=0.1, random_state=...)`` +
``learner.teach(X[idx], y[idx])`` with ``pool = NodeSet(X)``; path (b)
(``--no-direct`` skips it) ``strategy(clf, pool, 5, ...)`` + ``clf.fit(X[labeled],
y[labeled])``, which must pick the same rows. graphlearning (optional) runs
``active_learner(gl.ssl.laplace(W), acq, ...)`` on skmcal's graph and
eigenpairs, ``select_queries(batch_size=5, candidate_ind='rand', rand_frac=0.1)``
+ ``update``, for its counterparts ``model_change``, ``var_opt``, ``sigma_opt``,
``unc_sampling`` (its model differs: Laplace learning over all nodes).

The graph is built once per N, not timed (exact kNN below ``--exact-below``,
else pynndescent). Each N waits for the load to drop below ``--max-load``; a
configuration slowed by other processes is re-run once. ``--profile
STRATEGY/LOSS`` writes a cProfile of that loop at the largest N with
``n_jobs=1`` (the ce scoring in the profiled thread). Results:
``<out>/bench_al_<N>.csv``, ``<out>/bench_al.md``, ``<out>/bench_al.log``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import statistics
import time

import _harness as h
import numpy as np

N_EIGS, BATCH, CANDIDATES, LABELS_PER_CLASS = 50, 5, 0.1, 2
LOSSES = ("gr", "logistic", "probit", "mgr", "ce")
BINARY = ("gr", "logistic", "probit")
#: (row name, skmcal strategy, query options, graphlearning counterpart)
STRATEGIES = (
    ("model_change", "model_change", {"batch": "topk"}, "model_change"),
    ("model_change[greedy]", "model_change", {"batch": "greedy"}, "model_change"),
    ("vopt", "vopt", {"batch": "topk"}, "var_opt"),
    ("sopt", "sopt", {"batch": "topk"}, "sigma_opt"),
    ("uncertainty", "uncertainty", {"batch": "topk"}, "unc_sampling"),
    ("random_sampling", "random_sampling", {}, None),
)
GL_ACQUISITIONS = ("model_change", "var_opt", "sigma_opt", "unc_sampling")
TARGETS_MS, TARGET_N, TARGET_SPEEDUP = {("model_change", "ce"): 60.0,
                                        ("model_change", "mgr"): 10.0}, 70000, 10.0
CSV_FIELDS = (*h.TIMING_FIELDS, "direct_update_ms", "direct_query_ms", "direct_total_ms",
              "same_picks", "newton_iter", "n_labeled", "accuracy", "gl_acq", "gl_update_ms",
              "gl_query_ms", "gl_total_ms", "speedup", "other_cores", "reruns")


def run_loop(clf, strategy, opts, X, y, pool, init, iterations, seed, direct=False):
    """One configuration's loop: path (a), modAL's ActiveLearner with the NodeSet as pool, or
    (``direct``) path (b), ``strategy(clf, pool, ...)`` and ``clf.fit(X[labeled], y[labeled])``.
    Also the median CPU time of the process per iteration (``cpu_ms``; all threads).
    """
    from modAL.models import ActiveLearner

    import skmcal

    # modAL 0.4.2.1's teach() on scikit-learn >= 1.8 (compare_revisions also runs
    # trees from before patch_modal, which patched modAL on importing skmcal.query)
    getattr(skmcal, "patch_modal", lambda: None)()
    learner = clf.fit(X[init], y[init]) if direct else ActiveLearner(
        estimator=clf, query_strategy=strategy, X_training=X[init], y_training=y[init])
    labeled, upd, qry, cpu, newton, picks = init.copy(), [], [], [], [], []
    for it in range(iterations):
        options = dict(candidates=CANDIDATES, random_state=seed + it, **opts)
        c0, t0 = time.process_time(), h.now()
        idx, _ = (strategy(clf, pool, BATCH, **options) if direct
                  else learner.query(pool, n_instances=BATCH, **options))
        t1 = h.now()
        if direct:
            labeled = np.concatenate([labeled, idx])
            clf.fit(X[labeled], y[labeled])
        else:
            learner.teach(X[idx], y[idx])
        qry.append(t1 - t0)
        upd.append(h.now() - t1)
        cpu.append(time.process_time() - c0)
        newton.append(clf.n_iter_)
        picks.append(np.asarray(idx))
    return {**h.medians(upd, qry), "cpu_ms": 1e3 * statistics.median(cpu),
            "newton_iter": float(np.mean(newton)),
            "n_labeled": int(clf.labeled_nodes_.size),
            "accuracy": float(np.mean(clf.transduction_ == y))}, np.concatenate(picks)


def run_graphlearning(acq_name, graph, labels, init, iterations, seed):
    import graphlearning as gl

    np.random.seed(seed)  # noqa: NPY002  (graphlearning draws candidates from the global RNG)
    kwargs = {} if acq_name == "unc_sampling" else {
        "C": np.diag(1.0 / (graph.eigenvalues + 1e-11)), "V": graph.eigenvectors}
    t0 = h.now()
    AL = gl.active_learning.active_learner(gl.ssl.laplace(graph.weights),
                                           getattr(gl.active_learning, acq_name), init.copy(),
                                           labels[init], **kwargs)
    setup, upd, qry = h.now() - t0, [], []
    for _ in range(iterations):
        t0 = h.now()
        q = AL.select_queries(batch_size=BATCH, candidate_ind="rand", rand_frac=CANDIDATES)
        t1 = h.now()
        AL.update(q, labels[q])
        qry.append(t1 - t0)
        upd.append(h.now() - t1)
    return {**h.medians(upd, qry), "setup_s": setup, "n_labeled": int(AL.labeled_ind.size),
            "accuracy": float(np.mean(np.argmax(AL.u, axis=1) == labels))}


def run_size(n, X_all, y_all, args, reruns):
    import skmcal
    from skmcal import NodeSet, SpectralGraphClassifier

    X, y10 = np.ascontiguousarray(X_all[:n]), y_all[:n]
    ybin = (y10 < 5).astype(np.int64)
    neighbors, knn = h.neighbors_for(n, args.exact_below)
    t0 = h.now()
    pool = NodeSet(X)
    g = {"knn": knn, "nodeset_s": h.now() - t0}

    def make(loss, n_jobs=None):
        return SpectralGraphClassifier(loss, model="spectral", kernel="gaussian", nodes=pool,
                                       neighbors=neighbors, n_eigs=N_EIGS, n_jobs=n_jobs)

    h.log(f"N={n}: building the graph (kNN, weights, {N_EIGS} eigenpairs) ...")
    skmcal.clear_graph_cache()
    init = h.initial_labels(y10, LABELS_PER_CLASS, args.seed)
    t0 = h.now()
    graph = make("mgr").fit(X[init], y10[init]).graph_
    g["graph_s"] = h.now() - t0
    t0 = h.now()
    make("mgr").fit(X[init], y10[init])
    g.update(cached_fit_s=h.now() - t0, nnz=graph.weights.nnz, n_components=graph.n_components,
             residual=graph.residual)
    h.log(f"  graph: {g['graph_s']:.2f} s (cached mgr fit {1e3 * g['cached_fit_s']:.1f} ms), "
          f"nnz(W)={g['nnz']}, components={g['n_components']}, residual={g['residual']:.1e}")
    run = {"n": n, "graph": g, "gl_eig": None, "results": [], "gl_results": {}, "profiles": {}}
    have_gl = args.graphlearning and importlib.util.find_spec("graphlearning") is not None
    if args.graphlearning and not have_gl:
        h.log("  graphlearning is not installed: its comparison is skipped")
    if have_gl and args.gl_eigen:
        import graphlearning as gl

        t0 = h.now()
        vals, _ = gl.graph(graph.weights).eigen_decomp(normalization="normalized", k=N_EIGS)
        run["gl_eig"] = {"seconds": h.now() - t0,
                         "max_abs_diff": float(np.max(np.abs(np.sort(vals) - graph.eigenvalues)))}
    run["waited"], load = h.wait_for_load(args.max_load, args.max_wait)
    run["load_before"] = h.loadavg()
    h.log(f"  waited {run['waited']:.0f} s for 1-min load < {args.max_load}: now {load:.2f}")
    def loop(name, loss, n_jobs=None, iterations=args.iterations):
        _, strategy, opts, _ = next(s for s in STRATEGIES if s[0] == name)
        return (make(loss, n_jobs), getattr(skmcal, strategy), opts, X,
                ybin if loss in BINARY else y10, pool, init, iterations, args.seed)

    for loss in ("mgr", "ce", "logistic"):  # first calls of every code path, not recorded
        run_loop(*loop("model_change", loss, iterations=2))
    for name, _, _, gl_acq in STRATEGIES:
        for loss in [lo for lo in LOSSES if not args.only or f"{name}/{lo}" in args.only]:
            (res, picks), other, rerun = reruns(lambda nm=name, lo=loss: run_loop(*loop(nm, lo)))
            row = {"N": n, "strategy": name, "loss": loss, "iterations": args.iterations,
                   "classes": 2 if loss in BINARY else h.N_CLASSES, **res, "other_cores": other,
                   "reruns": rerun, "gl_acq": gl_acq if have_gl else None}
            if args.direct:
                direct, dpicks = run_loop(*loop(name, loss), direct=True)
                row.update({f"direct_{k}": direct[k] for k in h.TIME_KEYS[:3]},
                           same_picks="yes" if np.array_equal(picks, dpicks) else "NO")
            run["results"].append(row)
            h.log(f"  {name:>20s} {loss:>8s}: update {h.fmt(res['update_ms'])} ms, query "
                  f"{h.fmt(res['query_ms'])} ms, total {h.fmt(res['total_ms'])} ms; direct "
                  f"{h.fmt(row.get('direct_total_ms'))} ms, same picks "
                  f"{row.get('same_picks', '—')}; other processes {h.fmt(other, 2)} cores")
    for spec in args.profile if n == max(args.sizes) else ():
        path = args.out / f"bench_al_profile_{n}_{spec.replace('/', '_')}.txt"
        path = path.with_name(path.name.replace("[", "_").replace("]", ""))
        args_ = loop(*spec.split("/"), n_jobs=1)
        run["profiles"][spec] = (path, h.profile(lambda a=args_: run_loop(*a), path))
        h.log(f"  cProfile of {spec} ({args.iterations} iterations, n_jobs=1) -> {path}")
    for kind, labels in (("binary", ybin), ("10 classes", y10)) if have_gl else ():
        for acq in GL_ACQUISITIONS:
            gres, other, _ = reruns(lambda a=acq, lb=labels: run_graphlearning(
                a, graph, lb, init, args.gl_iterations or args.iterations, args.seed))
            run["gl_results"][(acq, kind)] = {**gres, "other_cores": other}
            h.log(f"  graphlearning {acq} ({kind}): total {h.fmt(gres['total_ms'])} ms")
    for row in run["results"]:
        if row["gl_acq"]:
            gres = run["gl_results"][(row["gl_acq"], "binary" if row["loss"] in BINARY
                                      else "10 classes")]
            row.update({f"gl_{k}": gres[k] for k in h.TIME_KEYS[:3]},
                       speedup=gres["total_ms"] / row["total_ms"])
    run["load_after"] = h.loadavg()
    gl_rows = [{"N": n, "strategy": f"graphlearning:{acq}", "loss": "laplace",
                "classes": 2 if kind == "binary" else h.N_CLASSES,
                "iterations": args.gl_iterations or args.iterations, **gres}
               for (acq, kind), gres in run["gl_results"].items()]
    h.write_csv(args.out / f"bench_al_{n}.csv", run["results"] + gl_rows, CSV_FIELDS)
    return run


def tables(run):
    """The per-N markdown tables (skmcal; graphlearning) and the target checks."""
    n, rows, checks = run["n"], [], []
    for r in run["results"]:
        key, here = (r["strategy"], r["loss"]), []
        if key in TARGETS_MS and n >= TARGET_N:
            here.append((f"<= {TARGETS_MS[key]:.0f} ms", r["total_ms"],
                         r["total_ms"] <= TARGETS_MS[key]))
        if r.get("speedup") is not None:
            here.append((f">= {TARGET_SPEEDUP:.0f}x gl", r["speedup"],
                         r["speedup"] >= TARGET_SPEEDUP))
        target = [f"{name}: {'pass' if ok else 'MISS'}" for name, _, ok in here]
        checks += [(f"N={n} {key[0]}/{key[1]} {name}", v, ok) for name, v, ok in here]
        f = h.fmt
        rows.append([*key, f(r["update_ms"]), f(r["query_ms"]), f"**{f(r['total_ms'])}**",
                     f"{f(r['total_min_ms'])}–{f(r['total_max_ms'])}", f(r.get("direct_total_ms")),
                     r.get("same_picks", "—"), f(r["newton_iter"]), f(r["accuracy"], 3),
                     r.get("gl_acq") or "—", f(r.get("gl_update_ms")), f(r.get("gl_query_ms")),
                     f(r.get("gl_total_ms")), f"{f(r['speedup'])}x" if r.get("speedup") else "—",
                     f(r["other_cores"], 2), "; ".join(target)])
    ours = h.markdown(["strategy", "loss", "update ms", "query ms", "**total ms**", "min–max ms",
                       "direct ms", "same picks", "Newton it", "acc", "gl counterpart",
                       "gl update ms", "gl query ms", "gl total ms", "speed-up", "other cores",
                       "target"], rows)
    gl = [[acq, kind, h.fmt(g["update_ms"]), h.fmt(g["query_ms"]), h.fmt(g["total_ms"]),
           f"{h.fmt(g['total_min_ms'])}–{h.fmt(g['total_max_ms'])}", h.fmt(g["setup_s"], 2),
           h.fmt(g["accuracy"], 3), h.fmt(g["other_cores"], 2)]
          for (acq, kind), g in run["gl_results"].items()]
    return ours, gl and h.markdown(["graphlearning acquisition", "labels", "update ms",
                                    "query ms", "total ms", "min–max ms", "setup s",
                                    "acc (Laplace)", "other cores"], gl), checks


def report(runs, args, head, warmup):
    md = [*head,
          "- binary losses (gr, logistic, probit): label < 5 vs >= 5; mgr, ce: the 10 classes",
          f"- set-up: n_eigs = M = {N_EIGS}, start from {LABELS_PER_CLASS} labels per class "
          f"({LABELS_PER_CLASS * h.N_CLASSES}), B = {BATCH} labels per iteration, candidates = "
          f"a random {CANDIDATES:.0%} of the unlabeled nodes, {args.iterations} iterations; "
          "times are medians over the iterations",
          "- one iteration = *query* (acquisition values on the candidates + choice of 5) + "
          "*update* (teach the 5 true labels: refit on all labeled nodes)",
          "- **total ms** = modAL path (`learner.query(pool, ...)` + `learner.teach`); *direct "
          "ms* = `strategy(clf, pool, 5, ...)` + `clf.fit(X[labeled], y[labeled])`; *same "
          "picks* = both paths chose the same rows",
          "- graphlearning: `active_learner(gl.ssl.laplace(W), acq, ...)` on skmcal's W and "
          "eigenpairs (**the models differ**: Laplace learning over all nodes); speed-up = gl "
          "total / skmcal total",
          "- targets: " + ", ".join(f"{s}/{loss} <= {ms:.0f} ms" for (s, loss), ms in
                                    TARGETS_MS.items()) + f" per iteration at N = {TARGET_N:,}; "
          f">= {TARGET_SPEEDUP:.0f}x faster than graphlearning's iteration",
          "- other cores = CPU cores used by other processes while the configuration ran; a "
          f"configuration is re-run once above {args.rerun_above}"]
    if warmup:
        md.append(f"- pynndescent warm-up (numba compile): first call {warmup[0]:.1f} s, "
                  f"second {warmup[1]:.2f} s (not part of any timing)")
    all_checks = []
    for run in runs:
        g, (lb, la) = run["graph"], (run["load_before"], run["load_after"])
        ours, gl, checks = tables(run)
        all_checks += checks
        md += ["", f"## N = {run['n']:,}", "",
               f"- graph (built once, cached, not part of an iteration): kNN {g['knn']}; "
               f"`NodeSet(X)` {g['nodeset_s']:.2f} s; cold first fit (kNN + weights + {N_EIGS} "
               f"eigenpairs + one mgr fit) **{g['graph_s']:.2f} s** (a cached mgr fit: "
               f"{1e3 * g['cached_fit_s']:.1f} ms); nnz(W) = {g['nnz']:,}, {g['n_components']} "
               f"connected component(s), eigen-residual {g['residual']:.1e}"]
        if run["gl_eig"]:
            md.append(f"- graphlearning `eigen_decomp(normalization='normalized', k={N_EIGS})`: "
                      f"{run['gl_eig']['seconds']:.2f} s (max |eigenvalue difference| to skmcal "
                      f"{run['gl_eig']['max_abs_diff']:.1e}); the runs reuse skmcal's eigenpairs")
        md += [f"- load average (1, 5, 15 min): before {lb[0]:.2f} {lb[1]:.2f} {lb[2]:.2f} "
               f"(after waiting {run['waited']:.0f} s for < {args.max_load}); after "
               f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}", "", *ours]
        md += ["", "graphlearning runs:", "", *gl] if gl else []
        for spec, (path, text) in run["profiles"].items():
            md += ["", f"cProfile of the {spec} loop ({args.iterations} iterations, modAL path, "
                   f"n_jobs=1; full listing in `{path}`), top functions by own time:", "",
                   "```", text, "```"]
    if all_checks:
        md += ["", "## Targets", "", *h.markdown(["target", "value", "result"], [
            [name, f"{v:.1f}{'x' if 'gl' in name else ' ms'}", "pass" if ok else "MISS"]
            for name, v, ok in all_checks])]
        md.append(f"\n{sum(ok for *_, ok in all_checks)} of {len(all_checks)} targets pass.")
    return "\n".join(md) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    h.add_common_arguments(p, sizes=(10000, 70000))
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--gl-iterations", type=int, help="graphlearning's (default: --iterations)")
    p.add_argument("--no-direct", dest="direct", action="store_false",
                   help="skip path (b), the direct strategy(clf, pool) + clf.fit loop")
    p.add_argument("--no-graphlearning", dest="graphlearning", action="store_false")
    p.add_argument("--no-gl-eigen", dest="gl_eigen", action="store_false",
                   help="do not time graphlearning's own eigen_decomp")
    h.add_load_arguments(p, "configuration")
    p.add_argument("--profile", action="append", default=[],
                   help="STRATEGY/LOSS to cProfile at the largest N, e.g. model_change/ce")
    p.add_argument("--only", action="append", default=[],
                   help="time only this STRATEGY/LOSS (repeatable)")
    args = p.parse_args(argv)
    for spec in args.profile + args.only:
        name, _, loss = spec.partition("/")
        if name not in [s[0] for s in STRATEGIES] or loss not in LOSSES:
            p.error(f"{spec!r}: expected STRATEGY/LOSS with a strategy of "
                    f"{[s[0] for s in STRATEGIES]} and a loss of {list(LOSSES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now().astimezone()
    X, y, data = h.load_data(max(args.sizes))
    import skmcal  # noqa: F401  (every module imported before the sources are hashed)

    rev = h.revision()
    h.log(f"data: {data}\nskmcal revision: {rev}\nmachine: {h.machine()}")
    warmup = h.warm_up_pynndescent() if max(args.sizes) >= args.exact_below else None
    reruns = h.Reruns(args)
    runs = [run_size(n, X, y, args, reruns) for n in args.sizes]
    head = h.header("skmcal active-learning benchmark (`benchmarks/bench_al.py`)",
                    h.command_line(argv), started, data, h.final_revision(rev))
    h.finish(args.out, "bench_al", report(runs, args, head, warmup))


if __name__ == "__main__":
    main()
