#!/usr/bin/env python
"""Wall time of one experiment run serially, on loky workers and on a dask cluster.

Usage::

    python benchmarks/bench_parallel.py [--dataset digits] [--strategies mc vopt]
                                        [--trials 4] [--iterations 30] [--batch 5]
                                        [--n-jobs 2] [--out benchmarks/results]

One :func:`skmcal.experiment.run_experiment` (by default scikit-learn's
digits, 1,797 x 64, 10 classes, ``mgr``; 2 strategies x 4 trials = 8
(trial, strategy) runs of 30 iterations of 5 queries among 10% of the
unlabeled nodes) timed in three ways: serially in this process; on ``loky``
with ``--n-jobs`` worker processes; on a ``dask.distributed.LocalCluster`` of
``--n-jobs`` worker processes (one thread each), through its scheduler
address as for a remote cluster. Each parallel way runs twice: "cold" (the
first run: worker processes start and import skmcal; the cluster's own start
is reported apart) and "warm" (the workers are up). The graph cache is
emptied before every run, so each builds its graph (in the parent) again.
Each run's files are compared with the serial run's: they must be the same
bytes, the ``time`` column of ``results.csv`` apart.

The machine is shared: the table gives, per run, the cores' worth of CPU that
other processes used meanwhile (``other cores``).

Results: ``<out>/bench_parallel.md`` (table, command, machine),
``<out>/bench_parallel.csv``, ``<out>/bench_parallel.log``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from pathlib import Path

import _harness as h

from skmcal import clear_graph_cache
from skmcal.experiment import run_experiment

FIELDS = ["way", "n_jobs", "seconds", "speedup", "same_files", "other_cores", "graph_s"]


def dataset_of(name: str):
    """The data set: a name of skmcal.datasets, or "digits" (scikit-learn's, no download)."""
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return (X, y), "scikit-learn digits, 1797 x 64, 10 classes"
    return name, f"skmcal.datasets {name!r}"


def outcome_files(out: Path) -> dict[str, str]:
    """The files of a run, the time column (the last of results.csv) cut off."""
    files = {}
    for name in ("results.csv", "choices.csv", "config.json"):
        text = (out / name).read_text()
        if name == "results.csv":
            text = "\n".join(line.rsplit(",", 1)[0] for line in text.splitlines())
        files[name] = text
    return files


def timed_run(dataset, settings: dict, out: Path, **parallel):
    """Seconds of one run_experiment into ``out`` (graph cache emptied first), other cores."""
    clear_graph_cache()
    with h.Contention() as busy:
        start = h.now()
        result = run_experiment(dataset, out=out, progress=False, **settings, **parallel)
        seconds = h.now() - start
    return seconds, busy.other_cores, result.graph_seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--dataset", default="digits", help="digits, or a skmcal.datasets name")
    p.add_argument("--strategies", nargs="+", default=["mc", "vopt"])
    p.add_argument("--trials", type=int, default=4)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--batch", type=int, default=5)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    started = dt.datetime.now()
    rev = h.revision()
    dataset, described = dataset_of(args.dataset)
    settings = {
        "strategies": args.strategies,
        "trials": args.trials,
        "iterations": args.iterations,
        "batch_size": args.batch,
        "seed": args.seed,
    }
    n_runs = args.trials * len(args.strategies)
    h.log(f"{described}: {n_runs} (trial, strategy) runs of {args.iterations} iterations")

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        folder = Path(tmp)

        def record(way, workers, out, **parallel):
            seconds, other, graph_s = timed_run(dataset, settings, out, **parallel)
            same = None if way == "serial" else outcome_files(out) == reference
            serial_s = rows[0]["seconds"] if rows else seconds
            rows.append({"way": way, "n_jobs": workers, "seconds": seconds,
                         "speedup": serial_s / seconds, "same_files": same,
                         "other_cores": other, "graph_s": graph_s})  # fmt: skip
            h.log(f"{way}: {seconds:.2f} s (other processes: {other:.2f} cores), same files: "
                  f"{same}")  # fmt: skip

        record("serial", 1, folder / "serial")
        reference = outcome_files(folder / "serial")
        for warmth in ("cold", "warm"):
            record(f"loky, {warmth}", args.n_jobs, folder / f"loky-{warmth}", n_jobs=args.n_jobs)

        from distributed import LocalCluster

        start = h.now()
        with LocalCluster(
            n_workers=args.n_jobs, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            cluster_s = h.now() - start
            h.log(f"dask LocalCluster of {args.n_jobs} workers started in {cluster_s:.2f} s")
            for warmth in ("cold", "warm"):
                record(f"dask LocalCluster, {warmth}", args.n_jobs, folder / f"dask-{warmth}",
                       scheduler=cluster.scheduler_address)  # fmt: skip

    args.out.mkdir(parents=True, exist_ok=True)
    h.write_csv(args.out / "bench_parallel.csv", rows, FIELDS)
    table = h.markdown(
        ["way", "workers", "wall s", "speed-up vs serial", "same files as serial",
         "other cores", "graph s (parent)"],
        [[r["way"], r["n_jobs"], h.fmt(r["seconds"], 2), h.fmt(r["speedup"], 2),
          "—" if r["same_files"] is None else ("yes" if r["same_files"] else "NO"),
          h.fmt(r["other_cores"], 2), h.fmt(r["graph_s"], 2)] for r in rows],
    )  # fmt: skip
    report = h.header(
        "Experiments on workers: serial, loky, dask LocalCluster",
        h.command_line(argv),
        started,
        f"{described}; strategies {' '.join(args.strategies)}; {args.trials} trials x "
        f"{args.iterations} iterations of {args.batch} queries (candidates 10%)",
        h.final_revision(rev),
    )
    report += [
        "",
        *table,
        "",
        f"The dask LocalCluster ({args.n_jobs} worker processes, 1 thread each) took "
        f"{cluster_s:.2f} s to start, not counted above. Cold: the first run on fresh "
        "workers (they start and import skmcal); warm: the workers are up. Every run "
        "builds the graph in the parent (graph s), then the workers load it from a disk "
        "cache. Same files: results.csv (the time column apart), choices.csv and "
        "config.json byte-identical to the serial run's. The machine is shared with other "
        "jobs: other cores is the CPU they used during each run.",
        "",
    ]
    h.finish(args.out, "bench_parallel", "\n".join(report))
    return 0 if all(r["same_files"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
