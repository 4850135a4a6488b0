"""Fits with many labels: the summed model's grid search on a subset of them.

``model="auto"`` fits the summed model from 50 labels on, and its grid search
scores the leave-one-out density of the labels at 54 grid points of the taus
and ``eps`` (twice with ``kernel="auto"``'s narrower Gaussian scale), each an
eigendecomposition of a labels x labels matrix: the cost of a cold fit grows as
the cube of the labels. Above :data:`skmcal.classifier.SUM_SEARCH_MAX_LABELS`
(500) the search scores a fixed subset of that many labels
(``skmcal.classifier._search_subset``); the fit takes every label.

For each data set and number of random labels (stratified by class; 3 seeds):
the time of a cold fit of the default classifier and its accuracy on the
unlabeled rows, with the subset (``subset``) and with the search over every
label (``all``: the cap monkeypatched to infinity), each fit on a graph
already in the cache (both runs share it) but with a new sparse solver (no
Green's column of an earlier fit); and, with ``--cv``, the time of
``cross_val_score(SpectralGraphClassifier(), X, y, cv=3)`` on every row
labeled.

Run::

    python benchmarks/bench_many_labels.py [--datasets digits moons] [--labels 250 500
        1000 1500] [--seeds 3] [--cv] [--out benchmarks/results]

Results: ``<out>/bench_many_labels.csv`` (one row per data set, labels, seed
and search) and ``bench_many_labels.md`` (the tables, with the command).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h  # noqa: E402

COLUMNS = ["dataset", "n_labels", "seed", "search", "seconds", "accuracy", "tau_s", "tau_f",
           "eps", "gamma", "kernel"]  # fmt: skip


def load(name):
    """``(X, y)`` of a data set that ships with scikit-learn or is generated."""
    from sklearn.datasets import load_digits, make_moons

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X.astype(float), y
    if name == "moons":
        return make_moons(4000, noise=0.12, random_state=0)
    raise ValueError(f"unknown data set {name!r}")


def stratified(y, n_labels, seed):
    """``n_labels`` random rows, as many of each class as its share (at least one)."""
    rng = np.random.RandomState(seed)
    classes, counts = np.unique(y, return_counts=True)
    take = np.maximum(1, np.round(n_labels * counts / counts.sum()).astype(int))
    rows = [
        rng.choice(np.flatnonzero(y == c), k, replace=False)
        for c, k in zip(classes, take, strict=True)
    ]
    return np.sort(np.concatenate(rows))


def fit_once(X, y, rows, cap):
    """A cold fit of the default classifier on ``rows``' labels, the search capped at
    ``cap`` labels: ``(seconds, accuracy on the other rows, the fit's choices)``."""
    import skmcal.classifier as classifier
    import skmcal.fullgraph as fullgraph
    from skmcal import SpectralGraphClassifier

    saved = classifier.SUM_SEARCH_MAX_LABELS
    classifier.SUM_SEARCH_MAX_LABELS = cap
    with fullgraph._SOLVERS_LOCK:  # no Green's column of an earlier fit: a cold solver too
        fullgraph._SOLVERS.clear()
    try:
        labels = np.full(y.size, -1)
        labels[rows] = y[rows]
        start = time.perf_counter()
        clf = SpectralGraphClassifier().fit(X, labels)
        seconds = time.perf_counter() - start
    finally:
        classifier.SUM_SEARCH_MAX_LABELS = saved
    rest = np.setdiff1d(np.arange(y.size), rows)
    accuracy = float(np.mean(clf.transduction_[rest] == y[rest]))
    prior = getattr(clf, "sum_prior_", {})
    return seconds, accuracy, {**{k: prior.get(k, "") for k in ("tau_s", "tau_f", "eps", "gamma")},
                               "kernel": clf.kernel_}  # fmt: skip


def cross_validation(X, y, cap):
    """Seconds of ``cross_val_score`` (3 folds, every row labeled) with the cap."""
    from sklearn.model_selection import cross_val_score

    import skmcal.classifier as classifier
    from skmcal import SpectralGraphClassifier

    saved = classifier.SUM_SEARCH_MAX_LABELS
    classifier.SUM_SEARCH_MAX_LABELS = cap
    try:
        start = time.perf_counter()
        scores = cross_val_score(SpectralGraphClassifier(), X, y, cv=3)
        return time.perf_counter() - start, float(np.mean(scores))
    finally:
        classifier.SUM_SEARCH_MAX_LABELS = saved


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["digits", "moons"])
    p.add_argument("--labels", type=int, nargs="+", default=[250, 500, 1000, 1500])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--cv", action="store_true", help="also time cross_val_score (cv=3)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    import skmcal.classifier as classifier
    from skmcal import SpectralGraphClassifier

    searches = {"subset": classifier.SUM_SEARCH_MAX_LABELS, "all": np.inf}
    rows_out, cv_rows = [], []
    for name in args.datasets:
        X, y = load(name)
        SpectralGraphClassifier().fit(X, np.r_[y[:2], np.full(y.size - 2, -1)])  # the graphs
        for n_labels in args.labels:
            if n_labels >= y.size:
                continue
            for seed in range(args.seeds):
                rows = stratified(y, n_labels, seed)
                for search, cap in searches.items():
                    seconds, accuracy, chosen = fit_once(X, y, rows, cap)
                    rows_out.append({"dataset": name, "n_labels": rows.size, "seed": seed,
                                     "search": search, "seconds": seconds,
                                     "accuracy": accuracy, **chosen})  # fmt: skip
                    h.log(f"{name} {rows.size} labels seed {seed} {search}: {seconds:.2f} s, "
                          f"accuracy {accuracy:.4f}, {chosen}")  # fmt: skip
        if args.cv:
            for search, cap in searches.items():
                seconds, score = cross_validation(X, y, cap)
                cv_rows.append([name, y.size, search, h.fmt(seconds, 1), f"{score:.4f}"])
                h.log(f"{name} cross_val_score {search}: {seconds:.1f} s, mean {score:.4f}")
    args.out.mkdir(parents=True, exist_ok=True)
    h.write_csv(args.out / "bench_many_labels.csv", rows_out, COLUMNS)
    table = []
    for name in args.datasets:
        for n_labels in sorted({r["n_labels"] for r in rows_out if r["dataset"] == name}):
            cells = [name, n_labels]
            got = {}
            for search in searches:
                mine = [r for r in rows_out if (r["dataset"], r["n_labels"], r["search"])
                        == (name, n_labels, search)]  # fmt: skip
                got[search] = mine
                cells += [h.fmt(np.median([r["seconds"] for r in mine]), 2),
                          f"{np.mean([r['accuracy'] for r in mine]):.4f}"]  # fmt: skip
            same = sum(
                all(a[k] == b[k] for k in ("tau_s", "tau_f", "eps", "gamma", "kernel"))
                for a, b in zip(got["subset"], got["all"], strict=True)
            )
            table.append([*cells, f"{same} of {len(got['subset'])}"])
    report = h.header(
        "Fits with many labels: the summed model's search on a subset",
        h.command_line(argv), started, ", ".join(args.datasets), h.revision(),
    )  # fmt: skip
    report += ["", f"Cold fits of `SpectralGraphClassifier()` on random stratified labels "
               f"({args.seeds} seeds), the graph cached; median seconds, mean accuracy on the "
               f"other rows; `subset`: the search on {searches['subset']} labels at most "
               f"(the default), `all`: on every label.", ""]  # fmt: skip
    report += h.markdown(
        ["data set", "labels", "subset: s", "subset: accuracy", "all: s", "all: accuracy",
         "same choices"], table,
    )  # fmt: skip
    if cv_rows:
        report += ["", "`cross_val_score(SpectralGraphClassifier(), X, y, cv=3)`:", ""]
        report += h.markdown(["data set", "rows", "search", "seconds", "mean score"], cv_rows)
    h.finish(args.out, "bench_many_labels", "\n".join(report) + "\n")


if __name__ == "__main__":
    main()
