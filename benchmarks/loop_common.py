"""What bench_batches.py and bench_stopping.py share: data, options, table and CSV output."""

from __future__ import annotations

import argparse
import csv
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import _harness as h
import numpy as np

from skmcal.datasets import DATASETS, load_dataset

#: The data sets of both benchmarks (skmcal.datasets loaders; skipped when absent).
BENCH_DATASETS = ("mnist-test", "samson")
RESULTS = Path(__file__).resolve().parent / "results"


def parser(description: str) -> argparse.ArgumentParser:
    """Options common to both benchmarks."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--datasets", nargs="+", default=list(BENCH_DATASETS), choices=BENCH_DATASETS)
    p.add_argument("--losses", nargs="+", default=["mgr", "ce"], choices=["mgr", "ce"])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--data-home", default=None, help="data folder (default: $SKMCAL_DATA, else ../shared/data)"
    )
    p.add_argument("--out", type=Path, default=RESULTS)
    return p


def load(name: str, data_home=None):
    """``(X, y, graph_options)`` of a named data set, or None (said so) when it is absent."""
    try:
        X, y = load_dataset(name, data_home=h.data_home(data_home))
    except FileNotFoundError as exc:
        print(f"# {name}: skipped, data not found ({exc})", flush=True)
        return None
    defaults = DATASETS[name].defaults
    graph = {"kernel": defaults["kernel"], "n_neighbors": defaults["n_neighbors"], "n_eigs": 50}
    return X, np.asarray(y), graph


def initial_labels(y, per_class: int, seed: int) -> np.ndarray:
    """``per_class`` random labeled nodes of each class."""
    rng = np.random.RandomState(seed)
    picks = [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in np.unique(y)]
    return np.sort(np.concatenate(picks))


def unlabeled_accuracy(clf, y, labeled) -> float:
    """Accuracy of the transduction on the unlabeled nodes."""
    mask = np.ones(y.size, dtype=bool)
    mask[labeled] = False
    return float(np.mean(clf.transduction_[mask] == y[mask]))


def header() -> str:
    """The command and the machine, as printed and written beside the results."""
    load1 = os.getloadavg()[0]
    return (
        f"# command: python {shlex.join(sys.argv)}\n"
        f"# machine: {platform.node()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load1:.2f} at "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}, python {platform.python_version()}"
    )


def table(rows: list[dict], columns: list[str]) -> str:
    """A fixed-width text table of ``rows``."""
    cells = [[str(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    """Write ``rows`` to ``path`` (created with its folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
