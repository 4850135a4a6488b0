#!/usr/bin/env python
"""Time per active-learning iteration of the paper's baselines against N.

Usage::

    python benchmarks/bench_baselines.py [--sizes 1000 2000 5000 10000] [--iterations 10]
                                         [--max-gb 6] [--out benchmarks/results]

The baselines are skmcal's own implementations (:mod:`skmcal.baselines`, the
registry ``BASELINES``) of the strategies the paper compares model change
with, each in its own model: VOPT-HF and SOPT-HF (V-opt and Sigma-opt in the
harmonic-functions model on the full graph, ``L = D - W``) and DB-RKHS
(MaxiMin with the data-based norm on kernel interpolation of the node data;
binary only). They complete the timing figure of ``benchmarks/bench_al.py``
(skmcal's strategies in the spectral models, graphlearning's iteration), which
does not time them.

What is timed (``time.perf_counter``), for every N and baseline, in the loop of
:func:`skmcal.experiment.run_experiment` (the code path of ``python -m skmcal
run --strategies vopt-hf ...``), trial 0, with the same calls:

* *query*: ``STRATEGIES[name](clf, pool, 5, candidates=0.1, random_state=rng)``
  (plus ``labels=`` for DB-RKHS): the baseline's scores on a random 10% of the
  unlabeled nodes and the choice of B = 5 of them (top 5). The query builds
  what it needs from the labeled set itself: the sparse factorisation of
  ``L_UU + delta^2 I`` and one solve per candidate (HF), or the kernel matrix
  of the labeled nodes and the kernel rows of all nodes against the candidates
  (DB-RKHS).
* *update*: teaching the true labels of the 5 picks, i.e.
  ``clf.fit(X[labeled], y[labeled])`` (the carrier classifier, a
  ``SpectralGraphClassifier("gr")`` on the cached graph: it holds the graph and
  the labeled nodes the baselines read; ``run_experiment`` times this fit too),
  plus the refit of the baseline's own model on the labeled set, its
  transduction (``harmonic_transduction``: one sparse factorisation and solve;
  ``rkhs_transduction``: the minimum-norm interpolant at every node), which
  ``run_experiment`` computes for the accuracy outside its timed span.
  Columns ``carrier_fit_ms`` and ``model_fit_ms`` hold the two parts.

The loop starts from 2 labels per class of the binary labels ``label < 5``
(4 labels, drawn as ``run_experiment`` draws trial 0's with ``--seed``) and
adds 5 an iteration; times are medians over ``--iterations`` iterations
(update, query and total each). ``--check-picks`` also runs
``run_experiment`` itself on the same data and checks that it picks the same
nodes (column ``same_picks``).

Graph: as in ``bench_al.py``, the kNN graph with 10 neighbours and the
self-tuning Gaussian weights of ``SpectralGraphClassifier`` (and its 50
eigenpairs, which only the carrier uses), built once per N before any timing
and shared through skmcal's graph cache; exact kNN below ``--exact-below``
(20,000), ``pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0)``
at or above it.

Memory: before each N and baseline the script estimates the peak memory of
that baseline's iteration (the data, the dense blocks of the chunked kernel
and solve loops, and, for HF, the sparse LU factor of ``L_UU`` bounded by a
dense one) and skips it, saying why, above ``--max-gb``. DB-RKHS never holds an
N x N matrix (its kernel rows are computed in blocks of about 4M entries), so
its memory grows like ``N * d``; its time grows like ``N * |candidates| * d``,
i.e. N^2. The peak resident memory of the process after each baseline is
recorded (``peak_rss_gb``) to check the estimate.

Data: the first N rows of Fashion-MNIST (train then test), pixels / 255, by
:func:`skmcal.datasets.load_fashion_mnist` from
``/usr/share/datasets/fashion-mnist`` (the rows ``bench_al.py`` uses); without
it, ``bench_al.py``'s synthetic stand-in (said so in the output).

Machine load: as ``bench_al.py`` (whose helpers this script imports): wait for
the 1-minute load average to drop below ``--max-load`` before each N, record
the cores other processes used during each baseline's loop, re-run it once
above ``--rerun-above``.

Results: ``<out>/bench_baselines_<N>.csv`` per N, with the columns of
``bench_al_<N>.csv`` that ``benchmarks/plot_timing.py`` draws (``N``,
``strategy``: the registry's name, ``loss``: the baseline's model, ``hf`` or
``rkhs``, ``classes``, ``iterations``, ``total_ms``; also ``update_ms``,
``query_ms`` and more), ``<out>/bench_baselines.md`` (command, machine,
versions, table) and ``<out>/bench_baselines.log``. A baseline skipped for
memory has no row.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import platform
import resource
import shlex
import statistics
import sys
import warnings
from pathlib import Path

import bench_al
import numpy as np
from bench_al import fmt, loadavg, log, now, timed, wait_for_load

N_EIGS = 50
BATCH = 5
CANDIDATES = 0.1
LABELS_PER_CLASS = 2
N_CLASSES = 2
#: Loss of the carrier classifier (graph and labeled nodes only; ``run_experiment``'s
#: default for two classes).
CARRIER_LOSS = "gr"
#: The baselines timed, by their name in ``skmcal.baselines.BASELINES``, and the
#: model each one queries and predicts in (the ``loss`` column of the CSV).
MODELS = {"vopt-hf": "hf", "sopt-hf": "hf", "db-rkhs": "rkhs"}
GIB = 2.0**30
#: Resident memory of the interpreter with numpy, scipy and scikit-learn loaded (GiB).
BASE_GB = 0.2

CSV_FIELDS = (
    *bench_al.TIMING_FIELDS,
    "carrier_fit_ms",
    "model_fit_ms",
    "n_labeled",
    "accuracy",
    "same_picks",
    "memory_estimate_gb",
    "peak_rss_gb",
    "other_cores",
    "reruns",
)


# ---------------------------------------------------------------------- data
def load_data(n_max: int):
    """First ``n_max`` rows of Fashion-MNIST (train + test), pixels / 255; or synthetic."""
    from skmcal.datasets import FASHION_MNIST_HOME, load_fashion_mnist

    try:
        X, y = load_fashion_mnist(n_samples=n_max)
    except FileNotFoundError as exc:
        log(f"Fashion-MNIST not found ({exc}); using bench_al.py's synthetic data")
        return bench_al.load_data(n_max)
    desc = (
        f"Fashion-MNIST ({FASHION_MNIST_HOME}, skmcal.datasets.load_fashion_mnist), train "
        "then test, first N rows of 70,000 x 784, pixels / 255 in [0, 1], float64"
    )
    return X, y.astype(np.int64), desc


# -------------------------------------------------------------------- memory
def memory_estimate(name: str, n: int, d: int, n_labeled: int) -> tuple[float, str]:
    """Estimated peak memory (GiB) of one iteration of baseline ``name`` at ``n`` nodes.

    Counts the interpreter and its libraries, the data (float64 rows), the
    graph and the 50 eigenpairs, and what
    the baseline allocates in ``skmcal.baselines``: for HF the sparse LU factor
    of ``L_UU + delta^2 I``, bounded by a dense factor (values + int32 indices,
    12 bytes an entry; the actual fill is smaller), and its blocks of solves;
    for DB-RKHS the kernel blocks (about six of ``_BLOCK_ENTRIES`` doubles) and
    the copies of the rows they are computed from.
    """
    from skmcal.baselines import _BLOCK_ENTRIES, DENSE_HF_MAX_UNLABELED

    block = 8.0 * _BLOCK_ENTRIES
    common = 8.0 * n * d + 8.0 * n * N_EIGS + 16.0 * n * 20
    n_u = n - n_labeled
    n_c = int(np.ceil(CANDIDATES * n_u))
    if name in ("vopt-hf", "sopt-hf"):
        if n_u <= DENSE_HF_MAX_UNLABELED:
            extra, how = 3 * 8.0 * n_u**2, "dense inverse of L_UU"
        else:
            extra = 12.0 * n_u**2 + 2 * block
            how = "LU factor of L_UU bounded by a dense one + 2 solve blocks"
    elif name == "db-rkhs":
        rows = min(n_u, max(1, _BLOCK_ENTRIES // (n_c + n_labeled)))
        extra = 6 * block + 8.0 * d * (rows + n_c + n) + 8.0 * n * n_labeled
        how = "6 kernel blocks + row copies (no N x N matrix)"
    else:
        raise ValueError(f"No memory model for the baseline {name!r}; known: {list(MODELS)}.")
    return BASE_GB + (common + extra) / GIB, how


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0 / GIB


# ------------------------------------------------------------------- the loop
def run_baseline(spec, X, codes, pool, make, init, iterations, seed):
    """``run_experiment``'s loop for one baseline (trial 0), with query and update timed apart.

    The same calls as :func:`skmcal.experiment.run_experiment`: the strategy on
    the carrier classifier with the pool, ``candidates`` and the trial's query
    stream, then ``clf.fit`` on the grown labeled set; plus the baseline's
    transduction (its own model's refit), timed as part of the update.
    """
    from skmcal.baselines import BASELINES
    from skmcal.experiment import _trial_seeds

    baseline = BASELINES[spec.name]
    clf = make(spec.loss).fit(X[init], codes[init])
    rng = np.random.RandomState(_trial_seeds(seed, 0)[1])
    labeled = init.copy()
    query, carrier, model, picks = [], [], [], []
    for iteration in range(iterations):
        t0 = now()
        extra = {"labels": codes[clf.labeled_nodes_]} if baseline.needs_labels else {}
        queried, _ = spec.function(
            clf,
            pool,
            BATCH,
            candidates=CANDIDATES,
            random_state=rng,
            **spec.options,
            **extra,
        )
        t1 = now()
        labeled = np.concatenate([labeled, queried])
        clf.fit(X[labeled], codes[labeled])
        t2 = now()
        predicted = baseline.transduction(clf, codes[clf.labeled_nodes_])
        t3 = now()
        query.append(t1 - t0)
        carrier.append(t2 - t1)
        model.append(t3 - t2)
        picks.append(np.asarray(queried))
        print(
            f"    iteration {iteration + 1}/{iterations}: query {1e3 * (t1 - t0):.1f} ms, "
            f"carrier fit {1e3 * (t2 - t1):.1f} ms, model fit {1e3 * (t3 - t2):.1f} ms",
            flush=True,
        )
    update = [c + m for c, m in zip(carrier, model, strict=True)]
    total = [u + q for u, q in zip(update, query, strict=True)]
    unlabeled = np.ones(codes.size, dtype=bool)
    unlabeled[clf.labeled_nodes_] = False
    out = {
        "update_ms": 1e3 * statistics.median(update),
        "query_ms": 1e3 * statistics.median(query),
        "total_ms": 1e3 * statistics.median(total),
        "total_min_ms": 1e3 * min(total),
        "total_max_ms": 1e3 * max(total),
        "carrier_fit_ms": 1e3 * statistics.median(carrier),
        "model_fit_ms": 1e3 * statistics.median(model),
        "n_labeled": int(clf.labeled_nodes_.size),
        "accuracy": float(np.mean(predicted[unlabeled] == codes[unlabeled])),
    }
    return out, np.concatenate(picks)


def experiment_picks(spec, X, codes, neighbors, iterations, seed):
    """The nodes ``run_experiment`` picks for ``spec`` on ``(X, codes)``, trial 0, in order."""
    from skmcal.experiment import run_experiment

    result = run_experiment(
        (X, codes),
        strategies=[spec.label],
        loss=CARRIER_LOSS,
        n_eigs=N_EIGS,
        neighbors=neighbors,
        n_initial=LABELS_PER_CLASS,
        batch_size=BATCH,
        iterations=iterations,
        candidates=CANDIDATES,
        trials=1,
        seed=seed,
        progress=False,
    )
    choices = result.choices
    return choices.loc[choices["iteration"] > 0, "node"].to_numpy()


# ------------------------------------------------------------------- one size
def run_size(n, X_all, y_all, args, results_dir, specs):
    import skmcal
    from skmcal import NodeSet, SpectralGraphClassifier
    from skmcal.experiment import _initial_labels, _trial_seeds

    X = np.ascontiguousarray(X_all[:n])
    codes = (y_all[:n] < 5).astype(np.intp)
    init = _initial_labels(codes, N_CLASSES, LABELS_PER_CLASS, _trial_seeds(args.seed, 0)[0])
    n_labeled = init.size
    d = X.shape[1]
    run = {"n": n, "results": [], "skipped": [], "graph": None}

    todo = []
    for spec in specs:
        gb, how = memory_estimate(spec.name, n, d, n_labeled)
        if gb > args.max_gb:
            reason = f"estimated {gb:.2f} GB ({how}) > --max-gb {args.max_gb:g}"
            log(f"N={n} {spec.name}: skipped: {reason}")
            run["skipped"].append((spec.name, reason))
        else:
            log(f"N={n} {spec.name}: estimated peak memory {gb:.2f} GB ({how})")
            todo.append((spec, gb))
    if not todo:
        return run

    neighbors, knn = None, "exact: sklearn NearestNeighbors (skmcal default)"
    experiment_neighbors = "exact"
    if n >= args.exact_below:
        import pynndescent

        neighbors = pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0)
        knn = "pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0)"
        experiment_neighbors = neighbors

    log(f"N={n}: building the graph (kNN {knn}, Gaussian weights, {N_EIGS} eigenpairs) ...")
    skmcal.clear_graph_cache()
    pool = NodeSet(X)

    def make(loss):
        return SpectralGraphClassifier(loss, nodes=pool, neighbors=neighbors, n_eigs=N_EIGS)

    t0 = now()
    graph = make(CARRIER_LOSS).fit(X[init], codes[init]).graph_
    run["graph"] = {
        "knn": knn,
        "seconds": now() - t0,
        "nnz": graph.weights.nnz,
        "n_components": graph.n_components,
    }
    log(
        f"  graph: {run['graph']['seconds']:.2f} s, nnz(W) = {graph.weights.nnz:,}, "
        f"{graph.n_components} connected component(s)"
    )

    waited, load = wait_for_load(args.max_load, args.max_wait)
    run["load_before"], run["waited"] = loadavg(), waited
    log(
        f"  waited {waited:.0f} s for 1-min load < {args.max_load}: load now {load:.2f}"
        + ("" if load < args.max_load else "  (NOT below the threshold; timings may be noisy)")
    )

    for spec, gb in todo:
        log(f"  {spec.name} ({MODELS[spec.name]} model), {args.iterations} iterations ...")

        def fn(spec=spec):
            return run_baseline(spec, X, codes, pool, make, init, args.iterations, args.seed)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (res, picks), other, reruns = timed(fn, args, args.rerun_above, args.quiet_wait)
        same = "—"
        if args.check_picks:
            expected = experiment_picks(
                spec, X, codes, experiment_neighbors, args.iterations, args.seed
            )
            same = "yes" if np.array_equal(picks, expected) else "NO"
        row = {
            "N": n,
            "strategy": spec.name,
            "loss": MODELS[spec.name],
            "classes": N_CLASSES,
            "iterations": args.iterations,
            **res,
            "same_picks": same,
            "memory_estimate_gb": gb,
            "peak_rss_gb": peak_rss_gb(),
            "other_cores": other,
            "reruns": reruns,
        }
        run["results"].append(row)
        log(
            f"  {spec.name:>8s}: update {fmt(row['update_ms'])} ms (carrier fit "
            f"{fmt(row['carrier_fit_ms'])}, model fit {fmt(row['model_fit_ms'])}), query "
            f"{fmt(row['query_ms'])} ms, total {fmt(row['total_ms'])} ms (min "
            f"{fmt(row['total_min_ms'])}, max {fmt(row['total_max_ms'])}); acc "
            f"{row['accuracy']:.3f} at {row['n_labeled']} labels; same picks as run_experiment "
            f"{same}; peak RSS {row['peak_rss_gb']:.2f} GB (estimate {gb:.2f}); other "
            f"processes {other:.2f} cores"
        )
        for message in sorted({str(w.message)[:160] for w in caught}):
            log(f"    warning: {message}")
    run["load_after"] = loadavg()

    with open(results_dir / f"bench_baselines_{n}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in run["results"]:
            writer.writerow({k: row.get(k, "") for k in CSV_FIELDS})
    return run


# -------------------------------------------------------------------- report
def write_report(runs, args, command, started, machine, vers, data_desc, revision, results_dir):
    md = [
        "# Time per active-learning iteration of the paper's baselines "
        "(`benchmarks/bench_baselines.py`)",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- date: {started.isoformat(timespec='seconds')}",
        f"- machine: {machine}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()),
        f"- skmcal revision: {revision}",
        f"- data: {data_desc}; binary labels `label < 5`",
        "- baselines: skmcal's implementations in `skmcal.baselines` (registry `BASELINES`), "
        "each in its own model: `vopt-hf`, `sopt-hf` (HF model, `L = D - W` of the kNN graph, "
        "delta = 0.01), `db-rkhs` (kernel interpolation of the node data, Laplace kernel, "
        "h = 0.1); graph: 10 neighbours, self-tuning Gaussian weights, as in `bench_al.py`",
        f"- set-up: start from {LABELS_PER_CLASS} labels per class ({LABELS_PER_CLASS * N_CLASSES} "
        f"labels, `run_experiment`'s trial 0 with seed {args.seed}), B = {BATCH} labels per "
        f"iteration, candidates = a random {CANDIDATES:.0%} of the unlabeled nodes, "
        f"{args.iterations} iterations; medians over the iterations",
        "- one iteration, the loop of `skmcal.experiment.run_experiment`: *query* = "
        "`strategy(clf, pool, 5, candidates=0.1, random_state=rng)` (scores on the candidates "
        "+ top 5); *update* = teach the 5 true labels: `clf.fit(X[labeled], y[labeled])` of the "
        "carrier `SpectralGraphClassifier('gr')` (*carrier fit*, timed by `run_experiment` too) "
        "+ the refit of the baseline's own model, its transduction (*model fit*: harmonic "
        "function / minimum-norm kernel interpolant at every node; `run_experiment` computes it "
        "for the accuracy, outside its timed span). `run_experiment`'s `time` column = query + "
        "carrier fit",
        "- acc = accuracy of the baseline's model on the unlabeled nodes after the last "
        "iteration; same picks = `run_experiment` chose the same nodes (`--check-picks`; "
        "— when not checked)",
        f"- memory: estimate before running (skip above --max-gb {args.max_gb:g}); peak RSS = "
        "peak resident memory of the process so far; other cores = CPU cores used by other "
        f"processes during the loop (re-run once above {args.rerun_above})",
        "",
        "| N | strategy | model | update ms | (carrier fit ms) | (model fit ms) | query ms | "
        "**total ms** | min–max ms | acc | same picks | memory estimate GB | peak RSS GB | "
        "other cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for run in runs:
        for r in run["results"]:
            md.append(
                f"| {r['N']:,} | {r['strategy']} | {r['loss']} | {fmt(r['update_ms'])} | "
                f"{fmt(r['carrier_fit_ms'])} | {fmt(r['model_fit_ms'])} | {fmt(r['query_ms'])} | "
                f"**{fmt(r['total_ms'])}** | {fmt(r['total_min_ms'])}–{fmt(r['total_max_ms'])} | "
                f"{fmt(r['accuracy'], 3)} | {r['same_picks']} | "
                f"{fmt(r['memory_estimate_gb'], 2)} | {fmt(r['peak_rss_gb'], 2)} | "
                f"{fmt(r['other_cores'], 2)} |"
            )
        for name, reason in run["skipped"]:
            md.append(f"| {run['n']:,} | {name} | {MODELS[name]} | skipped: {reason} |" + " |" * 10)
        g = run["graph"]
        if g is not None:
            lb, la = run["load_before"], run["load_after"]
            notes.append(
                f"- N = {run['n']:,}: graph (not timed) kNN {g['knn']}, built in "
                f"{g['seconds']:.2f} s, nnz(W) = {g['nnz']:,}, {g['n_components']} connected "
                f"component(s); load average before {lb[0]:.2f} {lb[1]:.2f} {lb[2]:.2f} (after "
                f"waiting {run['waited']:.0f} s for < {args.max_load}), after {la[0]:.2f} "
                f"{la[1]:.2f} {la[2]:.2f}"
            )
    md += ["", *notes]
    text = "\n".join(md) + "\n"
    (results_dir / "bench_baselines.md").write_text(text)
    (results_dir / "bench_baselines.log").write_text("\n".join(bench_al.LOG_LINES) + "\n")
    print()
    print(text)
    print(
        f"wrote {results_dir / 'bench_baselines.md'}, bench_baselines_<N>.csv and "
        "bench_baselines.log"
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument(
        "--baselines",
        nargs="+",
        default=list(MODELS),
        choices=list(MODELS),
        help="which baselines to time (all three by default)",
    )
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--max-gb",
        type=float,
        default=6.0,
        help="skip a baseline at an N whose estimated peak memory is above this (GB)",
    )
    p.add_argument(
        "--exact-below",
        type=int,
        default=20000,
        help="exact kNN below this N, pynndescent at or above it",
    )
    p.add_argument(
        "--check-picks",
        action="store_true",
        help="also run skmcal.experiment.run_experiment and check it picks the same nodes",
    )
    bench_al.add_load_arguments(p, "baseline")
    args = p.parse_args(argv)
    if args.iterations < 1:
        p.error(f"--iterations must be >= 1; got {args.iterations}.")
    if args.max_gb <= 0:
        p.error(f"--max-gb must be > 0; got {args.max_gb}.")
    smallest = LABELS_PER_CLASS * N_CLASSES + BATCH * args.iterations + 1
    too_small = [n for n in args.sizes if n < smallest]
    if too_small:
        p.error(
            f"--sizes {too_small}: {LABELS_PER_CLASS * N_CLASSES} initial labels + "
            f"{args.iterations} iterations x {BATCH} labels need at least {smallest} nodes."
        )
    bench_al.QUIET_BUDGET["left"] = args.quiet_budget
    results_dir = args.out
    results_dir.mkdir(parents=True, exist_ok=True)
    command = "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])])

    from skmcal.baselines import BASELINES
    from skmcal.experiment import parse_strategy

    unknown = [name for name in MODELS if name not in BASELINES]
    if unknown:
        raise SystemExit(
            f"skmcal.baselines.BASELINES has no {unknown} (it has {list(BASELINES)}); "
            "update MODELS in this script."
        )
    specs = [parse_strategy(name, CARRIER_LOSS) for name in args.baselines]

    started = _dt.datetime.now().astimezone()
    t0 = now()
    X_all, y_all, data_desc = load_data(max(args.sizes))
    log(f"data: {data_desc}; loaded {X_all.shape} in {now() - t0:.1f} s")
    vers = bench_al.versions()
    import skmcal.acquisition  # noqa: F401  (every module imported before hashing)
    import skmcal.posterior  # noqa: F401

    revision = bench_al.skmcal_revision()
    machine = (
        f"{bench_al.cpu_model()}, {bench_al.n_cores()} cores, "
        f"{platform.system()} {platform.release()}"
    )
    log(f"skmcal revision: {revision}")
    log(f"machine: {machine}")
    log("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    log(f"load average at start: {' '.join(f'{v:.2f}' for v in loadavg())}")

    runs = [run_size(n, X_all, y_all, args, results_dir, specs) for n in args.sizes]
    after = bench_al.skmcal_revision()
    if after != revision:
        log(f"NOTE: skmcal changed on disk during the run (now {after}); measured {revision}")
        revision += f"; NOTE: the sources changed on disk during the run (now {after})"
    write_report(runs, args, command, started, machine, vers, data_desc, revision, results_dir)


if __name__ == "__main__":
    main()
