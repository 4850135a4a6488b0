#!/usr/bin/env python
"""Accuracy against the number of labels: skmcal's configurations against the peers.

Usage (from the repository root)::

    python benchmarks/bench_accuracy.py --datasets digits binary-clusters --trials 2
    python benchmarks/bench_accuracy.py --datasets mnist-test samson --trials 5
    python benchmarks/bench_accuracy.py --only 'gl-*' --datasets digits   # some methods
    python benchmarks/bench_accuracy.py --datasets samson --graph default  # every method
    python benchmarks/bench_accuracy.py --report                          # tables, plots only
    python benchmarks/bench_accuracy.py --list                            # the methods

Per data set and trial: every method starts from the same ``N_START`` = 20
labels (as even over the classes as possible; 2 per class with 10 classes),
then queries batches of ``BATCH`` = 5 nodes, each among a random 10% of its
unlabeled nodes (the same random order of the nodes for every method, see
``_accuracy_common.candidates``), until 500 labels. After the start and after
every batch it records the accuracy on the nodes not labeled (transductive)
and the seconds of that step (the initial fit; then query + refit). Graphs and
spectra are built before any timed step.

The methods are data: :data:`CONFIGS` maps a name to a
``_accuracy_common.Config`` (family, parameters, strategy); a new
configuration is one more line. Results go to ``<out>/<dataset>.csv`` (one row
per method, trial and label count, appended as the runs go), and a rerun only
computes the (method, trial) runs missing there (a run cut short is redone).
``<out>/<dataset>.json`` holds the settings, which a rerun must share, and the
commands that wrote the rows.

Graphs: every method uses the data set's graph (``DATASETS``: kernel and
neighbours; the peers their own weights on that many neighbours), except
``default`` and its ``default-*`` variants, which use the classifier's
defaults as a new user would. ``--graph default`` gives every method the
classifier's default graph instead (Gaussian, 10 neighbours); where that
differs from the data set's graph, the results are those of a data set named
``<dataset>@default-graph`` (``samson@default-graph.csv``). ``--memory DIR``
keeps skmcal's graphs and spectra on disk (the classifier's ``memory=``), so
that a later invocation loads them. Then ``<out>/accuracy.md`` (method x labels per
data set) and ``<out>/<dataset>.png`` are written from every CSV in ``<out>``.
A method that raises is recorded in ``<out>/failures.csv`` and its remaining
rows hold NaN; graphlearning scores that are not finite are noted there too.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import fnmatch
import inspect
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from _accuracy_common import (
    BATCH,
    CHECKPOINTS,
    COLUMNS,
    DATASETS,
    N_FINAL,
    N_START,
    Config,
    Data,
    GraphLearningLearner,
    LabelSpreadingLearner,
    PeerGraphs,
    SkmcalLearner,
    candidates,
    dataset_graph,
    initial_labels,
    read_rows,
    set_final,
    tie_break_rng,
)
from _accuracy_report import report

import skmcal
from skmcal.classifier import PAPER_HYPERPARAMETERS as PAPER

#: skmcal's default batch mode (the configurations below otherwise use top-k batches).
DEFAULT_BATCH = inspect.signature(skmcal.model_change).parameters["batch"].default


def settings() -> dict:
    """The loop's settings, recorded with the results (a folder holds runs of one)."""
    return {"n_start": N_START, "batch": BATCH, "n_final": CHECKPOINTS[-1], "candidates": 0.1}


MULTI, BINARY = "multiclass", "binary"
#: The default before loss="auto", model="auto" and kernel="auto" (the ``spectral-ce*``
#: rows): spectral ce on the Gaussian graph.
SPECTRAL_CE = {"loss": "ce", "model": "spectral", "kernel": "gaussian"}
#: The spectral model with mgr and with ce on the data set's graph (the ``mgr:*`` and
#: ``ce:*`` rows; Samson's is its cosine graph, which SPECTRAL_CE's kernel would override).
SPECTRAL_MGR = {"loss": "mgr", "model": "spectral"}
SPECTRAL_CE_DATA = {"loss": "ce", "model": "spectral"}
STRATEGIES = ("mc", "vopt", "sopt", "unc", "rand")
#: Laplace learning (the ``laplace:*`` rows): the full model with ``offset=None``.
LAPLACE = {"model": "full", "loss": "mgr", "offset": None, "tau": 1e-3, "gamma": 1e-3}
#: The methods. skmcal: SpectralGraphClassifier(nodes=pool, **params) on the data set's graph.
CONFIGS: dict[str, Config] = {
    # The classifier's defaults, graph included, with model change and its default batch
    # mode: what a new user gets (loss="auto", model="auto": spectral ce below 50 labels,
    # the summed prior with mgr from there on).
    "default": Config("skmcal", "mc", options={"batch": DEFAULT_BATCH}, data_graph=False),
    # The defaults with the other strategies (their default greedy batches) and random picks.
    **{
        f"default:{s}": Config(
            "skmcal", s, options={} if s == "rand" else {"batch": DEFAULT_BATCH},
            data_graph=False,
        )
        for s in ("vopt", "sopt", "unc", "rand")
    },  # fmt: skip
    # The defaults with targets of one (target_scale=None; "auto" scales the summed
    # model's by the square root of the counts), each strategy: the defaults before.
    **{
        f"default-unscaled{'' if s == 'mc' else ':' + s}": Config(
            "skmcal", s, {"target_scale": None},
            options={} if s == "rand" else {"batch": DEFAULT_BATCH}, data_graph=False,
        )
        for s in STRATEGIES
    },  # fmt: skip
    # The same with targets of one: default-gaussian and default-cosine-k15(:unc) as
    # they were measured before target_scale="auto".
    **{
        f"default-unscaled-{name}": Config(
            "skmcal", s, {**params, "target_scale": None}, options={"batch": DEFAULT_BATCH},
            data_graph=False,
        )
        for name, s, params in (
            ("gaussian", "mc", {"kernel": "gaussian"}),
            ("cosine-k15", "mc", {"kernel": "cosine", "n_neighbors": 15}),
            ("cosine-k15:unc", "unc", {"kernel": "cosine", "n_neighbors": 15}),
        )
    },  # fmt: skip
    # The defaults with the Gaussian graph alone (kernel="auto" builds two): what the
    # kernel's choice costs per batch and gains in accuracy.
    "default-gaussian": Config(
        "skmcal", "mc", {"kernel": "gaussian"}, options={"batch": DEFAULT_BATCH},
        data_graph=False,
    ),  # fmt: skip
    # The defaults on a cosine graph with 15 neighbours (Samson's own graph, as the paper).
    **{
        f"default-cosine-k15{suffix}": Config(
            "skmcal", s, {"kernel": "cosine", "n_neighbors": 15},
            options={"batch": DEFAULT_BATCH}, data_graph=False,
        )
        for suffix, s in (("", "mc"), (":unc", "unc"))
    },  # fmt: skip
    # The previous default, spectral ce, on the Gaussian graph, alone and with one graph or
    # model parameter changed: which part of it costs accuracy, and the truncation (n_eigs).
    "spectral-ce": Config(
        "skmcal", "mc", SPECTRAL_CE, options={"batch": DEFAULT_BATCH}, data_graph=False
    ),
    **{
        f"spectral-ce-{name}": Config(
            "skmcal", "mc", {**SPECTRAL_CE, **params}, options={"batch": DEFAULT_BATCH},
            data_graph=False,
        )
        for name, params in (
            ("k15", {"n_neighbors": 15}),
            ("k20", {"n_neighbors": 20}),
            ("cosine", {"kernel": "cosine"}),
            ("cosine-k15", {"kernel": "cosine", "n_neighbors": 15}),
            ("m100", {"n_eigs": 100}),
            ("m200", {"n_eigs": 200}),
        )
    },  # fmt: skip
    # Spectral ce with 100 eigenvectors and the other strategies (greedy batches).
    **{
        f"spectral-ce-m100:{s}": Config(
            "skmcal", s, {**SPECTRAL_CE, "n_eigs": 100}, options={"batch": DEFAULT_BATCH},
            data_graph=False,
        )
        for s in ("vopt", "sopt", "unc", "rand")
    },  # fmt: skip
    # The paper's (tau, gamma) (the defaults before tau="auto", gamma="auto").
    **{
        f"paper-{loss}:{s}": Config(
            "skmcal", s, {"loss": loss, "model": "spectral", "tau": PAPER[loss][0],
                         "gamma": PAPER[loss][1]},
            BINARY if loss in ("gr", "probit", "logistic") else MULTI,
        )
        for loss in ("mgr", "ce", "gr", "probit", "logistic")
        for s in STRATEGIES
    },  # fmt: skip
    # The full-graph and Poisson models (tau, gamma "auto").
    **{
        f"{name}:{s}": Config("skmcal", s, {"model": model, "loss": "mgr"})
        for name, model in (("full-mgr", "full"), ("poisson", "poisson"))
        for s in ("mc", "unc")
    },
    # Poisson learning with the paper's prior correction (uniform priors), the
    # classifier's default before the benchmark showed it cost uncertainty sampling.
    **{
        f"poisson-balanced:{s}": Config(
            "skmcal", s, {"model": "poisson", "loss": "mgr", "target_scale": "balanced"}
        )
        for s in ("mc", "unc")
    },
    # The full-graph model with greedy batches and random picks (a default candidate).
    **{
        f"full-mgr:{name}": Config(
            "skmcal", s, {"model": "full", "loss": "mgr"}, options=options
        )
        for name, s, options in (
            ("rand", "rand", {}),
            *((f"{s}-greedy", s, {"batch": "greedy"}) for s in ("mc", "vopt", "sopt", "unc")),
        )
    },
    # Laplace learning on skmcal's graph: the full model without its free class offset
    # (offset=None), tau and gamma small: the harmonic extension of the labels.
    **{
        f"laplace:{s}": Config("skmcal", s, LAPLACE)
        for s in ("mc", "unc", "rand")
    },
    # The summed prior (spectral + full graph, weights and taus by its evidence).
    **{
        f"sum-mgr:{name}": Config("skmcal", s, {"model": "sum", "loss": "mgr"}, options=options)
        for name, s, options in (
            ("mc", "mc", {}),
            ("unc", "unc", {}),
            ("rand", "rand", {}),
            *((f"{s}-greedy", s, {"batch": "greedy"}) for s in ("mc", "vopt", "sopt", "unc")),
        )
    },
    **{
        f"mgr:{s}": Config("skmcal", s, SPECTRAL_MGR, MULTI)
        for s in STRATEGIES
    },
    # ce takes two classes as well as more.
    **{f"ce:{s}": Config("skmcal", s, SPECTRAL_CE_DATA) for s in STRATEGIES},
    # Greedy batches (each pick updates the posterior with its pseudo-label before the next).
    **{
        "mgr:mc-greedy": Config(
            "skmcal", "mc", SPECTRAL_MGR, MULTI, {"batch": "greedy"}
        ),
        **{
            f"ce:{s}-greedy": Config("skmcal", s, SPECTRAL_CE_DATA, options={"batch": "greedy"})
            for s in ("mc", "vopt", "sopt", "unc")
        },
    },
    **{
        f"{loss}:{s}": Config("skmcal", s, {"loss": loss, "model": "spectral"}, BINARY)
        for loss in ("gr", "probit", "logistic")
        for s in STRATEGIES
    },
    **{
        f"{family}:{s}": Config(family, s)
        for family in ("gl-laplace", "gl-poisson")
        for s in ("mc", "vopt", "unc", "rand")
    },
    "ls:unc": Config("ls", "unc"),
    "ls:rand": Config("ls", "rand"),
}


def log(message: str) -> None:
    print(message, flush=True)


# --------------------------------------------------------------------- files
def complete_runs(path: Path) -> set[tuple[str, int]]:
    """The (method, trial) runs with every checkpoint in ``path``; the file keeps only those."""
    rows = read_rows(path)
    seen: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        seen.setdefault((r["method"], r["trial"]), []).append(r["n_labels"])
    done = {run for run, labels in seen.items() if sorted(labels) == CHECKPOINTS}
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(r for r in rows if (r["method"], r["trial"]) in done)
    return done


def record_command(path: Path, info: dict, description: str) -> None:
    """Check the settings of ``<dataset>.json`` (or write them) and add this command."""
    saved = json.loads(path.read_text()) if path.exists() else {"settings": settings(), "runs": []}
    saved["data"] = description
    if saved["settings"] != settings():
        sys.exit(
            f"{path} was written with settings {saved['settings']}, not {settings()}; "
            "use another --out."
        )
    saved["runs"].append(info)
    path.write_text(json.dumps(saved, indent=1) + "\n")


# ----------------------------------------------------------------- the loop
def make_learner(config: Config, pool, codes, data, graphs, memory=None):
    if config.family == "skmcal":
        return SkmcalLearner(config, pool, codes, data, memory)
    if config.family.startswith("gl-"):
        return GraphLearningLearner(config, graphs, codes)
    return LabelSpreadingLearner(config, graphs, codes)


def run_one(learner, codes, seed, trial, emit, note):
    """One active-learning run; ``emit(n_labels, accuracy, seconds)`` after each step."""
    labeled = initial_labels(codes, seed, trial)
    rng = tie_break_rng(seed, trial)
    n = codes.size

    def accuracy():
        if hasattr(learner, "finite") and not learner.finite():
            note(f"non-finite scores at {labeled.size} labels")
        unlabeled = np.ones(n, dtype=bool)
        unlabeled[labeled] = False
        return float(np.mean(learner.predict()[unlabeled] == codes[unlabeled]))

    start = time.perf_counter()
    learner.start(labeled)
    emit(labeled.size, accuracy(), time.perf_counter() - start)
    for batch in range(1, len(CHECKPOINTS)):
        cands = candidates(labeled, n, seed, trial, batch)
        start = time.perf_counter()
        nodes = np.asarray(learner.query(cands, BATCH, rng), dtype=np.intp)
        learner.add(nodes)
        seconds = time.perf_counter() - start
        if np.unique(nodes).size != BATCH or np.isin(nodes, labeled).any():
            raise RuntimeError(f"the query returned {nodes}: repeated or labeled nodes")
        labeled = np.concatenate([labeled, nodes])
        emit(labeled.size, accuracy(), seconds)


def run_dataset(name: str, args, info: dict) -> None:
    from skmcal import NodeSet

    results, data = dataset_graph(name, args.graph)
    try:
        X, y = data.load(args.data_home)
    except (FileNotFoundError, OSError) as exc:
        log(f"{name}: skipped, data not found ({exc})")
        return
    name = results
    X = np.asarray(X, dtype=np.float64)
    codes = np.unique(y, return_inverse=True)[1].reshape(-1).astype(np.intp)
    n_classes = int(codes.max()) + 1
    n_duplicates = X.shape[0] - np.unique(X, axis=0).shape[0]
    description = (
        f"{X.shape[0]} x {X.shape[1]}, {n_classes} classes, {n_duplicates} duplicate rows; "
        f"graph: {data.kernel}, k = {data.n_neighbors}"
    )
    log(f"{name}: {description}")
    path = args.out / f"{name}.csv"
    done = complete_runs(path)
    pending = [
        (m, t)
        for t in range(args.trials)
        for m, c in CONFIGS.items()
        if c.runs_on(n_classes)
        and (m, t) not in done
        and any(fnmatch.fnmatch(m, p) for p in args.only)
    ]
    if not args.graphlearning:
        pending = [(m, t) for m, t in pending if not CONFIGS[m].family.startswith("gl-")]
    log(f"  {len(done)} runs already complete, {len(pending)} to compute")
    if not pending:
        return
    record_command(args.out / f"{name}.json", info, description)
    pool = NodeSet(X)
    graphs = PeerGraphs(X, data, log)
    started = time.perf_counter()
    for method in dict.fromkeys(m for m, _ in pending):  # skmcal's graphs, built untimed
        if CONFIGS[method].family == "skmcal":
            learner = make_learner(CONFIGS[method], pool, codes, data, graphs, args.memory)
            learner.start(initial_labels(codes, args.seed, 0))
    log(f"  skmcal graphs and spectra (one fit per method): {time.perf_counter() - started:.1f} s")
    with (
        path.open("a", newline="", encoding="utf-8") as f,
        (args.out / "failures.csv").open("a", newline="", encoding="utf-8") as ff,
    ):
        writer = csv.writer(f, lineterminator="\n")
        failures = csv.writer(ff, lineterminator="\n")
        for method, trial in pending:
            rows, notes = [], set()

            def emit(n_labels, accuracy, seconds, method=method, trial=trial, rows=rows):
                rows.append(n_labels)
                writer.writerow([name, method, trial, n_labels, repr(accuracy), repr(seconds)])
                f.flush()

            def note(message, method=method, trial=trial, notes=notes):
                if message.split(" at ")[0] not in notes:
                    notes.add(message.split(" at ")[0])
                    failures.writerow([name, method, trial, message])
                    ff.flush()

            started, learner = time.perf_counter(), None
            try:
                learner = make_learner(CONFIGS[method], pool, codes, data, graphs, args.memory)
                run_one(learner, codes, args.seed, trial, emit, note)
            except Exception as exc:  # a peer that breaks is a result, not a crash
                note(f"failed at {CHECKPOINTS[len(rows)]} labels: {type(exc).__name__}: {exc}")
                for n_labels in CHECKPOINTS[len(rows) :]:
                    emit(n_labels, math.nan, math.nan)
            restarts = getattr(learner, "restarts", 0)  # graphlearning's, for new classes
            again = f" ({restarts} restarts on a new class)" if restarts else ""
            log(f"  trial {trial} {method:16s} {time.perf_counter() - started:7.1f} s{again}")


def main_on(loaders: dict, results: str, argv=None) -> None:
    """:func:`main` on other data sets: ``loaders`` (name: ``load(home) -> (X, y)``, each on
    the default graph) replace the benchmark's, and ``--out`` defaults to ``results/<results>``
    (``bench_synthetic.py``, ``bench_mlbench.py``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    DATASETS.clear()  # the registry the loop and the report share
    DATASETS.update((name, Data(load)) for name, load in loaders.items())
    if not any(arg == "--out" or arg.startswith("--out=") for arg in argv):
        argv += ["--out", str(Path(__file__).resolve().parent / "results" / results)]
    main(argv)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument(
        "--only",
        nargs="+",
        default=["*"],
        metavar="CONFIG",
        help="method names or shell patterns (default: all)",
    )
    p.add_argument("--trials", type=int, default=5, help="trials 0 .. TRIALS-1 (default 5)")
    p.add_argument(
        "--final",
        type=int,
        default=N_FINAL,
        help=f"labels at the end of a run (default {N_FINAL}; a folder holds runs of one)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/accuracy"))
    p.add_argument("--data-home", default=None, help="skmcal's data folder (MNIST, Samson)")
    p.add_argument(
        "--graph",
        choices=("data", "default"),
        default="data",
        help="every method on the data set's graph (default) or on the classifier's "
        "default graph (results under <dataset>@default-graph where they differ)",
    )
    p.add_argument(
        "--memory",
        default=None,
        metavar="DIR",
        help="a folder for skmcal's graphs and spectra on disk (the classifier's memory=)",
    )
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    p.add_argument("--no-graphlearning", dest="graphlearning", action="store_false")
    p.add_argument("--report", action="store_true", help="only write the tables and plots")
    p.add_argument("--list", action="store_true", help="print the methods and exit")
    args = p.parse_args(argv)
    try:
        set_final(args.final)
    except ValueError as exc:
        p.error(str(exc))
    if args.list:
        for m, c in CONFIGS.items():
            log(f"{m:18s} {c}")
        return
    unknown = [o for o in args.only if not fnmatch.filter(CONFIGS, o)]
    if unknown:
        p.error(f"--only {unknown} match no method; see --list")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report:
        from _harness import n_cores
        from _harness import revision as skmcal_revision
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
        try:
            import graphlearning  # noqa: F401
        except ImportError:
            log("graphlearning is not installed (pip install -e '.[bench]'): its methods skipped")
            args.graphlearning = False
        info = {
            # the script run (bench_synthetic.py and bench_mlbench.py run this main)
            "command": shlex.join(
                ["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]]
            ),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "revision": skmcal_revision(),
            "machine": f"{n_cores()} cores, {args.threads} BLAS thread(s), load average "
            + " ".join(f"{v:.2f}" for v in os.getloadavg())
            + " at the start",
        }
        for name in args.datasets:
            run_dataset(name, args, info)
    log(f"wrote {report(args.out, CONFIGS)}")


if __name__ == "__main__":
    main()
