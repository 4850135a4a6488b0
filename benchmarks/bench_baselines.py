#!/usr/bin/env python
"""Time per active-learning iteration of the paper's baselines against N.

Usage::

    python benchmarks/bench_baselines.py [--sizes 1000 2000 5000 10000] [--iterations 10]
                                         [--max-gb 6] [--check-picks] [--out benchmarks/results]

The baselines are skmcal's own implementations (:mod:`skmcal.baselines`,
registry ``BASELINES``) of the strategies the paper compares model change
with, each in its own model: VOPT-HF and SOPT-HF (the harmonic-functions
model on the full graph, ``L = D - W``) and DB-RKHS (kernel interpolation of
the node data; binary only). They complete the timing figure of
``bench_al.py``.

Timed (``time.perf_counter``), for every N and baseline, in the loop of
:func:`skmcal.experiment.run_experiment` (trial 0, the same calls):

* *query*: ``STRATEGIES[name](clf, pool, 5, candidates=0.1, random_state=rng)``
  (plus ``labels=`` for DB-RKHS): scores on a random 10% of the unlabeled
  nodes and the top 5. The query builds what it needs from the labeled set
  (the sparse factor of ``L_UU + delta^2 I`` and one solve per candidate for
  HF; kernel rows of all nodes against the candidates for DB-RKHS).
* *update*: teaching the 5 true labels: ``clf.fit(X[labeled], y[labeled])`` of
  the carrier ``SpectralGraphClassifier("gr")`` (it holds the graph and the
  labeled nodes; column ``carrier_fit_ms``) plus the refit of the baseline's
  own model, its transduction (column ``model_fit_ms``).

From 2 labels per class of the binary labels ``label < 5`` (drawn as
``run_experiment`` draws trial 0's), 5 more an iteration; medians over
``--iterations``. ``--check-picks`` also runs ``run_experiment`` and checks
that it picks the same nodes. The graph is ``bench_al.py``'s (10 neighbours,
self-tuning Gaussian weights), built once per N, not timed.

Memory: the peak of each baseline's iteration is estimated first (the data,
the dense blocks of the kernel and solve loops, and for HF the LU factor of
``L_UU`` bounded by a dense one); a baseline above ``--max-gb`` is skipped,
saying why. DB-RKHS never holds an N x N matrix (time ~ N^2, memory ~ N d).
The process's peak resident memory after each baseline checks the estimate.

Results: ``<out>/bench_baselines_<N>.csv`` (the leading columns of
``bench_al_<N>.csv``, which ``plot_timing.py`` draws; ``loss`` is the model,
``hf`` or ``rkhs``), ``<out>/bench_baselines.md`` and ``<out>/bench_baselines.log``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics

import _harness as h
import numpy as np

N_EIGS, BATCH, CANDIDATES, LABELS_PER_CLASS, N_CLASSES = 50, 5, 0.1, 2, 2
#: Loss of the carrier classifier (``run_experiment``'s default for two classes).
CARRIER_LOSS = "gr"
#: The baselines, by their name in ``skmcal.baselines.BASELINES``, and their model.
MODELS = {"vopt-hf": "hf", "sopt-hf": "hf", "db-rkhs": "rkhs"}
GIB = 2.0**30
#: Resident memory of the interpreter with numpy, scipy and scikit-learn loaded (GiB).
BASE_GB = 0.2
CSV_FIELDS = (*h.TIMING_FIELDS, "carrier_fit_ms", "model_fit_ms", "n_labeled", "accuracy",
              "same_picks", "memory_estimate_gb", "peak_rss_gb", "other_cores", "reruns")


def memory_estimate(name: str, n: int, d: int, n_labeled: int) -> tuple[float, str]:
    """Estimated peak memory (GiB) of one iteration of baseline ``name`` at ``n`` nodes.

    The interpreter, the data (float64), the graph and the eigenpairs, and what
    ``skmcal.baselines`` allocates: for HF the sparse LU factor of ``L_UU +
    delta^2 I`` bounded by a dense one (12 bytes an entry) and its solve blocks,
    or the dense inverse of a small ``L_UU``; for DB-RKHS about six kernel blocks
    of ``_BLOCK_ENTRIES`` doubles and the row copies they are computed from.
    """
    from skmcal.baselines import _BLOCK_ENTRIES, DENSE_HF_MAX_UNLABELED

    block = 8.0 * _BLOCK_ENTRIES
    common = 8.0 * n * d + 8.0 * n * N_EIGS + 16.0 * n * 20
    n_u = n - n_labeled
    n_c = int(np.ceil(CANDIDATES * n_u))
    if name in ("vopt-hf", "sopt-hf") and n_u <= DENSE_HF_MAX_UNLABELED:
        extra, how = 3 * 8.0 * n_u**2, "dense inverse of L_UU"
    elif name in ("vopt-hf", "sopt-hf"):
        extra = 12.0 * n_u**2 + 2 * block
        how = "LU factor of L_UU bounded by a dense one + 2 solve blocks"
    elif name == "db-rkhs":
        rows = min(n_u, max(1, _BLOCK_ENTRIES // (n_c + n_labeled)))
        extra = 6 * block + 8.0 * d * (rows + n_c + n) + 8.0 * n * n_labeled
        how = "6 kernel blocks + row copies (no N x N matrix)"
    else:
        raise ValueError(f"No memory model for the baseline {name!r}; known: {list(MODELS)}.")
    return BASE_GB + (common + extra) / GIB, how


def trial_zero(codes, seed):
    """``run_experiment``'s trial 0: its initial labels and the RandomState of its queries."""
    from skmcal.experiment import _initial_labels, _trial_seeds

    initial, queries = _trial_seeds(seed, 0)
    return (_initial_labels(codes, N_CLASSES, LABELS_PER_CLASS, initial),
            np.random.RandomState(queries))


def run_baseline(spec, X, codes, pool, make, seed, iterations):
    """``run_experiment``'s loop for one baseline, with query, carrier fit and model fit apart."""
    from skmcal.baselines import BASELINES

    baseline = BASELINES[spec.name]
    init, rng = trial_zero(codes, seed)
    clf = make(spec.loss).fit(X[init], codes[init])
    labeled, query, carrier, model, picks = init.copy(), [], [], [], []
    for _ in range(iterations):
        t0 = h.now()
        extra = {"labels": codes[clf.labeled_nodes_]} if baseline.needs_labels else {}
        queried, _ = spec.function(clf, pool, BATCH, candidates=CANDIDATES, random_state=rng,
                                   **spec.options, **extra)
        t1 = h.now()
        labeled = np.concatenate([labeled, queried])
        clf.fit(X[labeled], codes[labeled])
        t2 = h.now()
        predicted = baseline.transduction(clf, codes[clf.labeled_nodes_])
        query.append(t1 - t0)
        carrier.append(t2 - t1)
        model.append(h.now() - t2)
        picks.append(np.asarray(queried))
        h.log(f"    query {1e3 * query[-1]:.1f} ms, carrier fit {1e3 * carrier[-1]:.1f} ms, "
              f"model fit {1e3 * model[-1]:.1f} ms")
    unlabeled = np.ones(codes.size, dtype=bool)
    unlabeled[clf.labeled_nodes_] = False
    return {**h.medians([c + m for c, m in zip(carrier, model, strict=True)], query),
            "carrier_fit_ms": 1e3 * statistics.median(carrier),
            "model_fit_ms": 1e3 * statistics.median(model),
            "n_labeled": int(clf.labeled_nodes_.size),
            "accuracy": float(np.mean(predicted[unlabeled] == codes[unlabeled]))}, np.concatenate(
        picks)


def experiment_picks(spec, X, codes, neighbors, iterations, seed):
    """The nodes ``run_experiment`` picks for ``spec`` on ``(X, codes)``, trial 0, in order."""
    from skmcal.experiment import run_experiment

    result = run_experiment((X, codes), strategies=[spec.label], loss=CARRIER_LOSS,
                            n_eigs=N_EIGS, neighbors="exact" if neighbors is None else neighbors,
                            n_initial=LABELS_PER_CLASS, batch_size=BATCH, iterations=iterations,
                            candidates=CANDIDATES, trials=1, seed=seed, progress=False)
    choices = result.choices
    return choices.loc[choices["iteration"] > 0, "node"].to_numpy()


def run_size(n, X_all, y_all, args, specs, reruns):
    import skmcal
    from skmcal import NodeSet, SpectralGraphClassifier

    X = np.ascontiguousarray(X_all[:n])
    codes = (y_all[:n] < 5).astype(np.intp)
    run = {"n": n, "results": [], "skipped": [], "graph": None}
    todo = []
    for spec in specs:
        gb, how = memory_estimate(spec.name, n, X.shape[1], LABELS_PER_CLASS * N_CLASSES)
        if gb > args.max_gb:
            run["skipped"].append((spec.name, f"estimated {gb:.2f} GB ({how}) > --max-gb "
                                   f"{args.max_gb:g}"))
            h.log(f"N={n} {spec.name}: skipped: {run['skipped'][-1][1]}")
        else:
            h.log(f"N={n} {spec.name}: estimated peak memory {gb:.2f} GB ({how})")
            todo.append((spec, gb))
    if not todo:
        return run
    neighbors, knn = h.neighbors_for(n, args.exact_below)
    skmcal.clear_graph_cache()
    pool = NodeSet(X)

    def make(loss):
        return SpectralGraphClassifier(
            loss, model="spectral", kernel="gaussian", nodes=pool, neighbors=neighbors,
            n_eigs=N_EIGS,
        )

    init, _ = trial_zero(codes, args.seed)
    t0 = h.now()
    graph = make(CARRIER_LOSS).fit(X[init], codes[init]).graph_
    run["graph"] = {"knn": knn, "seconds": h.now() - t0, "nnz": graph.weights.nnz,
                    "n_components": graph.n_components}
    h.log(f"  graph ({knn}): {run['graph']['seconds']:.2f} s, nnz(W) = {graph.weights.nnz:,}")
    run["waited"], load = h.wait_for_load(args.max_load, args.max_wait)
    run["load_before"] = h.loadavg()
    h.log(f"  waited {run['waited']:.0f} s for 1-min load < {args.max_load}: now {load:.2f}")
    for spec, gb in todo:
        h.log(f"  {spec.name} ({MODELS[spec.name]} model), {args.iterations} iterations ...")
        (res, picks), other, rerun = reruns(lambda s=spec: run_baseline(
            s, X, codes, pool, make, args.seed, args.iterations))
        same = "—"
        if args.check_picks:
            expected = experiment_picks(spec, X, codes, neighbors, args.iterations, args.seed)
            same = "yes" if np.array_equal(picks, expected) else "NO"
        row = {"N": n, "strategy": spec.name, "loss": MODELS[spec.name], "classes": N_CLASSES,
               "iterations": args.iterations, **res, "same_picks": same,
               "memory_estimate_gb": gb, "peak_rss_gb": h.max_rss_mib() / 1024,
               "other_cores": other, "reruns": rerun}
        run["results"].append(row)
        h.log(f"  {spec.name:>8s}: update {h.fmt(row['update_ms'])} ms, query "
              f"{h.fmt(row['query_ms'])} ms, total {h.fmt(row['total_ms'])} ms; acc "
              f"{row['accuracy']:.3f}; same picks {same}; peak RSS {row['peak_rss_gb']:.2f} GB "
              f"(estimate {gb:.2f}); other processes {h.fmt(other, 2)} cores")
    run["load_after"] = h.loadavg()
    h.write_csv(args.out / f"bench_baselines_{n}.csv", run["results"], CSV_FIELDS)
    return run


def report(runs, args, head):
    f = h.fmt
    rows, notes = [], []
    for run in runs:
        for r in run["results"]:
            rows.append([f"{r['N']:,}", r["strategy"], r["loss"], f(r["update_ms"]),
                         f(r["carrier_fit_ms"]), f(r["model_fit_ms"]), f(r["query_ms"]),
                         f"**{f(r['total_ms'])}**",
                         f"{f(r['total_min_ms'])}–{f(r['total_max_ms'])}",
                         f(r["accuracy"], 3), r["same_picks"], f(r["memory_estimate_gb"], 2),
                         f(r["peak_rss_gb"], 2), f(r["other_cores"], 2)])
        rows += [[f"{run['n']:,}", name, MODELS[name], f"skipped: {why}", *[""] * 10]
                 for name, why in run["skipped"]]
        if run["graph"] is not None:
            g, lb, la = run["graph"], run["load_before"], run["load_after"]
            notes.append(f"- N = {run['n']:,}: graph (not timed) kNN {g['knn']}, built in "
                         f"{g['seconds']:.2f} s, nnz(W) = {g['nnz']:,}, {g['n_components']} "
                         f"connected component(s); load average before {lb[0]:.2f} {lb[1]:.2f} "
                         f"{lb[2]:.2f} (after waiting {run['waited']:.0f} s for < "
                         f"{args.max_load}), after {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    md = [*head, "- binary labels `label < 5`",
          "- baselines: `skmcal.baselines` (registry `BASELINES`), each in its own model: "
          "`vopt-hf`, `sopt-hf` (HF model, `L = D - W` of the kNN graph), `db-rkhs` (kernel "
          "interpolation of the node data); graph: 10 neighbours, self-tuning Gaussian "
          "weights, as in `bench_al.py`",
          f"- set-up: start from {LABELS_PER_CLASS} labels per class (`run_experiment`'s trial 0 "
          f"with seed {args.seed}), B = {BATCH} labels per iteration, candidates = a random "
          f"{CANDIDATES:.0%} of the unlabeled nodes, {args.iterations} iterations; medians",
          "- one iteration, the loop of `skmcal.experiment.run_experiment`: *query* = "
          "`strategy(clf, pool, 5, candidates=0.1, random_state=rng)`; *update* = the carrier "
          "`SpectralGraphClassifier('gr')`'s `clf.fit(X[labeled], y[labeled])` (*carrier fit*) + "
          "the refit of the baseline's own model, its transduction (*model fit*)",
          "- acc = accuracy of the baseline's model on the unlabeled nodes after the last "
          "iteration; same picks = `run_experiment` chose the same nodes (`--check-picks`)",
          f"- memory: estimated before running (skipped above --max-gb {args.max_gb:g}); peak "
          "RSS = the process's so far; other cores = CPU cores used by other processes during "
          f"the loop (re-run once above {args.rerun_above})", "",
          *h.markdown(["N", "strategy", "model", "update ms", "(carrier fit ms)",
                       "(model fit ms)", "query ms", "**total ms**", "min–max ms", "acc",
                       "same picks", "memory estimate GB", "peak RSS GB", "other cores"], rows),
          "", *notes]
    return "\n".join(md) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    h.add_common_arguments(p, sizes=(1000, 2000, 5000, 10000))
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--baselines", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--max-gb", type=float, default=6.0,
                   help="skip a baseline at an N whose estimated peak memory is above this (GB)")
    p.add_argument("--check-picks", action="store_true",
                   help="also run skmcal.experiment.run_experiment; check it picks the same nodes")
    h.add_load_arguments(p, "baseline")
    args = p.parse_args(argv)
    if args.iterations < 1 or args.max_gb <= 0:
        p.error(f"--iterations must be >= 1 and --max-gb > 0; got {args.iterations}, "
                f"{args.max_gb}.")
    smallest = LABELS_PER_CLASS * N_CLASSES + BATCH * args.iterations + 1
    if min(args.sizes) < smallest:
        p.error(f"--sizes {min(args.sizes)}: {LABELS_PER_CLASS * N_CLASSES} initial labels + "
                f"{args.iterations} iterations x {BATCH} labels need at least {smallest} nodes.")
    from skmcal.baselines import BASELINES
    from skmcal.experiment import parse_strategy

    if set(MODELS) - set(BASELINES):
        raise SystemExit(f"skmcal.baselines.BASELINES has no {sorted(set(MODELS) - set(BASELINES))}"
                         f" (it has {list(BASELINES)}); update MODELS in this script.")
    args.out.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now().astimezone()
    X, y, data = h.load_data(max(args.sizes))
    rev = h.revision()
    h.log(f"data: {data}\nskmcal revision: {rev}\nmachine: {h.machine()}")
    specs = [parse_strategy(name, CARRIER_LOSS) for name in args.baselines]
    reruns = h.Reruns(args)
    runs = [run_size(n, X, y, args, specs, reruns) for n in args.sizes]
    head = h.header("Time per active-learning iteration of the paper's baselines "
                    "(`benchmarks/bench_baselines.py`)", h.command_line(argv), started, data,
                    h.final_revision(rev))
    h.finish(args.out, "bench_baselines", report(runs, args, head))


if __name__ == "__main__":
    main()
