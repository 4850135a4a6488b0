"""The summed model's target scale (``target_scale``), compared on the defaults' path.

From ``AUTO_SUM_MIN_LABELS`` (50) labels the defaults fit the summed model
(``model_ == "sum"``, ``mgr``), a regression of each class's targets. Without a
scale, the class queried most reaches furthest: the regression's mass grows
with the class's count, and a batch of queries of one class moves the
prediction of nodes that no label is near (Fashion-MNIST, V-opt: eleven of
fifty labels were trousers at the summed model's first fit, and accuracy fell
from .697 to .627 over that batch). ``target_scale`` scales class ``c``'s
targets by ``(n / (n_classes n_c))^p`` (:func:`skmcal.losses.target_scales`).

Along an active-learning path of the defaults (``bench_accuracy.py``'s initial
labels, candidates and tie breaks) with the target scale ``--path`` (``auto``:
the defaults themselves; ``none``: ``bench_accuracy.py``'s ``default-unscaled``), this
script refits, at every ``--every`` labels from 50 to ``--stop``, the classifier
as the path has it (its graph choice, hyperparameters' grids and all) from cold
with each of the scales (``None``: targets of one, ``"sqrt"``: ``p = 1/2``,
``"balanced"``: ``p = 1``), and measures the accuracy on the unlabeled nodes.
The queries come from the path's classifier, so every scale sees the same
labels. The results file's rows (``path`` column) came from these commands, at
d4088a7, where the scale entered the fit's choices (graph, hyperparameters) as well
and ``target_scale=None`` was the default (``none``: the defaults then, the
``default-unscaled`` path now; ``sqrt``: the defaults with ``target_scale="sqrt"``
as it was then)::

    python benchmarks/bench_target_scale.py --path sqrt --trials 2 \\
        --datasets digits binary-clusters rare-class imbalanced-blobs
    python benchmarks/bench_target_scale.py --path sqrt --trials 2 \\
        --datasets dna satellite vehicle \\
        --mlbench-home /usr/lib/R/site-library/mlbench/data
    python benchmarks/bench_target_scale.py --path none --trials 2 \\
        --datasets satellite rare-class --strategies mc unc vopt \\
        --mlbench-home /usr/lib/R/site-library/mlbench/data

and the rows of path ``auto`` at 0ec06fe (the scale in the fit only, the defaults
``target_scale="auto"``)::

    python benchmarks/bench_target_scale.py --path auto --trials 2 \\
        --datasets satellite rare-class dna \\
        --mlbench-home /usr/lib/R/site-library/mlbench/data

Results under ``results/target_scale`` (or ``--out``): ``target_scale.csv`` (one
row per state and scale) and ``target_scale.md`` (per data set and strategy,
each scale's mean accuracy over the states, per path).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _accuracy_common as common  # noqa: E402
import bench_accuracy  # noqa: E402
import bench_low_phase  # noqa: E402
import bench_mlbench  # noqa: E402
import bench_synthetic  # noqa: E402
from _accuracy_common import BATCH  # noqa: E402

from skmcal.classifier import AUTO_SUM_MIN_LABELS  # noqa: E402

SCALES = {"none": None, "sqrt": "sqrt", "balanced": "balanced"}
STRATEGIES = ("mc", "vopt", "sopt", "unc")
COLUMNS = ("path", "dataset", "strategy", "trial", "n_labels", "scale", "accuracy")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "target_scale"


def run_trial(name, pool, X, codes, strategy, trial, seed, stop, every, path, emit):
    """The path to ``stop`` labels of the defaults with target scale ``path`` ("auto":
    the defaults, "none": None); ``emit(n_labels, scale, accuracy)`` at every ``every``
    labels from ``AUTO_SUM_MIN_LABELS`` on, for each scale of ``SCALES``."""
    base = {"auto": "default", "none": "default-unscaled"}[path]
    config = bench_accuracy.CONFIGS[base if strategy == "mc" else f"{base}:{strategy}"]
    learner, labeled, rng = common.start_path(config, name, pool, codes, seed, trial)
    batch = 0
    while True:
        n = labeled.size
        if n >= AUTO_SUM_MIN_LABELS and (n - AUTO_SUM_MIN_LABELS) % every == 0:
            clf = learner.clf
            if clf.model_ != "sum":
                raise RuntimeError(f"{name}: the defaults fit model {clf.model_!r} here")
            unlabeled = np.ones(codes.size, dtype=bool)
            unlabeled[labeled] = False
            for key, scale in SCALES.items():  # the learner's node set: rows of X are nodes
                refit = clone(clf).set_params(target_scale=scale, warm_start=False)
                refit.fit(X[labeled], codes[labeled])
                right = refit.transduction_[unlabeled] == codes[unlabeled]
                emit(n, key, float(np.mean(right)))
        if n + BATCH > stop:
            return
        batch += 1
        labeled = common.query_batch(learner, labeled, codes.size, seed, trial, batch, rng)


def summarize(rows):
    """Markdown: per data set and strategy, and per data set, each scale's mean accuracy."""
    acc = {}
    for r in rows:
        for group in ((r["dataset"], r["strategy"]), (r["dataset"], "all"), ("all", "all")):
            acc.setdefault((r["path"], *group, r["scale"]), []).append(float(r["accuracy"]))
    paths = list(dict.fromkeys(p for p, _, _, _ in acc))
    datasets = list(dict.fromkeys(d for _, d, _, _ in acc if d != "all"))
    order = [*STRATEGIES, "all"]
    groups = [
        (p, d, s)
        for p in paths
        for d in [*datasets, "all"]
        for s in order
        if (p, d, s, "none") in acc
    ]
    lines = [
        "| path | data set | strategy | states | " + " | ".join(SCALES) + " | sqrt - none |",
        "|---|---|---|---|" + "---|" * (len(SCALES) + 1),
    ]
    for path, dataset, strategy in groups:
        means = [np.mean(acc[(path, dataset, strategy, key)]) for key in SCALES]
        states = len(acc[(path, dataset, strategy, "none")])
        cells = " | ".join(f"{m:.4f}" for m in means)
        gain = 100 * (means[1] - means[0])
        lines.append(f"| {path} | {dataset} | {strategy} | {states} | {cells} | {gain:+.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    names = [*common.DATASETS, *bench_synthetic.SYNTHETIC, *bench_mlbench.MLBENCH]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=["digits", "binary-clusters"], choices=names)
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stop", type=int, default=150, help="the last state's labels")
    p.add_argument("--every", type=int, default=10, help="labels between measured states")
    p.add_argument(
        "--path", default="auto", choices=["auto", "none"],
        help="the target scale of the path's classifier (auto: the defaults)",
    )  # fmt: skip
    p.add_argument("--data-home", default=None, help="skmcal's data folder (MNIST, Samson)")
    p.add_argument(
        "--mlbench-home", default=None, help="the mlbench sets' folder (bench_mlbench.py)"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument(
        "--report", action="store_true", help="only rewrite target_scale.md from the CSV"
    )
    args = p.parse_args(argv)
    if args.every % BATCH or args.every <= 0:
        p.error(f"--every must be a positive multiple of {BATCH}; got {args.every}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "target_scale.csv"

    def run(name, pool, X, codes, strategy, trial, emit):
        run_trial(
            name, pool, X, codes, strategy, trial, args.seed, args.stop, args.every,
            args.path, emit,
        )  # fmt: skip

    rows = common.state_runs(
        path, COLUMNS, (args.path,), () if args.report else args.datasets, args.strategies,
        args.trials, bench_low_phase.loader(args), run,
    )  # fmt: skip
    table = summarize(rows)
    (args.out / "target_scale.md").write_text(
        "# The summed model's target scale on active-learning paths "
        "(`benchmarks/bench_target_scale.py`)\n\n"
        f"States from {AUTO_SUM_MIN_LABELS} labels every {args.every} labels; accuracy on "
        "the unlabeled nodes of cold refits with each `target_scale`, mean over states "
        "and trials. *path*: the target scale of the classifier whose queries made the "
        "labels (auto: the defaults; none: `bench_accuracy.py`'s `default-unscaled`). "
        "The rows of paths none and sqrt were made at d4088a7, where the scale entered "
        "the fit's choices too (graph, hyperparameters; now made on targets of one), "
        'none was the default and sqrt its `target_scale="sqrt"`.\n\n' + table,
        encoding="utf-8",
    )
    print(table)


if __name__ == "__main__":
    main()
