"""Rules for the hyperparameters of the defaults' first phase, compared on one path.

Below ``AUTO_SUM_MIN_LABELS`` (50) labels the defaults fit the spectral ``ce``
model. The kernel (``kernel="auto"``, up to ``AUTO_KERNEL_MAX_NODES`` nodes) and
``tau`` are the grid point of largest evidence at the relative gamma of
``AUTO_FEW_LABELS_GAMMAS`` (0.5), and a warm refit keeps both while the number
of labels has grown by less than ``AUTO_REUSE_GROWTH``. Until 2026-11-28 the
gamma too was the evidence's, over ``LAPLACE_GAMMAS`` (0.5, 1, 2): the
defaults' worst one-batch drops outside the benchmark happened in this phase,
on near-ties of the evidence, on synthetic data (``bench_synthetic.py``:
rare-class, noisy-features) and on real data (``bench_mlbench.py``: Satellite,
DNA, Letters).

Along the defaults' own active-learning path (``bench_accuracy.py``'s initial
labels, candidates and tie breaks; each strategy), this script measures at
every state from 20 to 45 labels the accuracy on the unlabeled nodes of these
rules, all but the first over the full grid (``_spectral_taus()`` x
``LAPLACE_GAMMAS`` on every candidate graph, gammas relative to the prior's
scale):

- ``chosen``: the classifier's predictions (the rule in use);
- ``previous``: the rule before 2026-11-28: the kernel and grid point of
  largest evidence, searched again once the labels have grown by
  ``AUTO_REUSE_GROWTH`` since the last search, kept in between;
- ``fresh``: the grid point of largest evidence over every kernel's grid,
  searched at this state (no reuse);
- ``marginal``: the kernel whose grid has the largest total evidence (its
  marginal likelihood under a uniform prior over the grid, rather than its
  best point's), and that kernel's best grid point, searched at this state;
- ``average``: the average of the grid's class probabilities on the chosen
  kernel, weighted by the evidence (Bayesian model averaging over the grid);
- ``average-kernels``: the same over every kernel's grid;
- ``average-best``: the evidence-weighted average of each kernel's best grid
  point (the kernels averaged, each at its own ``(tau, gamma)``).

Since 2026-11-28 the classifier also weighs the labels of this phase by class
(``class_weight="auto"``: balanced); ``chosen`` has those weights, and the
other rules fit unit weights, as the classifier did before (``previous`` is
that rule, weights included).

The queries come from the classifier as it is, so every rule sees the same
labels: the rules differ by their predictions only, and a difference is the
rule's, not the path's. (A rule put into the classifier would change the
queries of the strategies that use the posterior, and so the path.) A grid
point's probabilities are the ``ce`` likelihood at its MAP, as
``predict_proba``::

    python benchmarks/bench_low_phase.py --trials 5
    python benchmarks/bench_low_phase.py --datasets rare-class noisy-features --trials 5
    python benchmarks/bench_low_phase.py --datasets satellite dna --trials 5 \\
        --mlbench-home /usr/lib/R/site-library/mlbench/data
    python benchmarks/bench_low_phase.py --datasets letters --trials 2 --strategies mc unc \\
        --mlbench-home /usr/lib/R/site-library/mlbench/data

Results under ``results/low_phase`` (or ``--out``): ``low_phase.csv`` (one row
per state and rule) and ``low_phase.md`` (per data set and strategy, the mean
accuracy over the states and the worst one-batch drop of each rule).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.special import logsumexp, softmax

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _accuracy_common as common  # noqa: E402
import bench_accuracy  # noqa: E402
import bench_mlbench  # noqa: E402
import bench_synthetic  # noqa: E402
from _accuracy_common import BATCH, N_START  # noqa: E402

from skmcal.classifier import AUTO_REUSE_GROWTH, AUTO_SUM_MIN_LABELS  # noqa: E402
from skmcal.evidence import LAPLACE_GAMMAS, select_hyperparameters  # noqa: E402
from skmcal.losses import LOSSES  # noqa: E402

RULES = ("chosen", "previous", "fresh", "marginal", "average", "average-kernels", "average-best")
STRATEGIES = ("mc", "vopt", "sopt", "unc", "rand")
COLUMNS = ("dataset", "strategy", "trial", "n_labels", "rule", "accuracy")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "low_phase"
CE = LOSSES["ce"]


def _grid(clf, graph, labeled, codes):
    """``(log evidence, class probabilities at every node, (tau, relative gamma))`` of each
    point of ``graph``'s grid (``LAPLACE_GAMMAS``), over the classes of the labels
    (``clf.classes_``).

    Each point is fitted on its own (``select_hyperparameters`` over a one-point
    grid, so its MAP and evidence are the classifier's at that point)."""
    local = np.searchsorted(clf.classes_, codes[labeled])
    V, targets = graph.eigenvectors, CE.encode(local, clf.classes_.size)
    points = []
    for tau in clf._spectral_taus(graph):
        for g in LAPLACE_GAMMAS:
            try:
                _, gamma, table, coef = select_hyperparameters(
                    CE, graph.eigenvalues, V[labeled], targets, (tau,), (g,),
                    n_nodes=graph.n_nodes, return_coef=True,
                )  # fmt: skip
            except ValueError:  # the Newton fit failed at this point
                continue
            points.append((float(table[0, 0]), CE.proba(V @ coef, gamma), (tau, g)))
    return points


def _average(points):
    """The evidence-weighted average of the points' class probabilities."""
    weights = softmax([point[0] for point in points])
    return sum(w * point[1] for w, point in zip(weights, points, strict=True))


def _best(points):
    """The point of largest evidence."""
    return max(points, key=lambda point: point[0])


def _total(points):
    """The log of the summed evidence of the points (a kernel's grid)."""
    return logsumexp([point[0] for point in points])


def _graphs(clf, pool):
    """The graph of every kernel ``kernel="auto"`` chooses from (the chosen one first)."""
    if not clf._chooses_kernel(pool.n_nodes):
        return {clf.kernel_: clf.graph_}
    return clf._candidate_graphs(pool, clf.graph_)[0]


def run_trial(name, pool, codes, strategy, trial, seed, emit):
    """The defaults' path from 20 to ``AUTO_SUM_MIN_LABELS - BATCH`` labels.

    ``emit(n_labels, rule, accuracy)`` at every state and rule."""
    config = bench_accuracy.CONFIGS["default" if strategy == "mc" else f"default:{strategy}"]
    learner, labeled, rng = common.start_path(config, name, pool, codes, seed, trial)
    batch, previous = 0, None  # previous: (labels, kernel, (tau, gamma)) of its last search
    while True:
        clf = learner.clf
        if clf.model_ != "spectral" or clf.loss_ != "ce":
            raise RuntimeError(f"{name}: the defaults fit {clf.model_} {clf.loss_} here")
        unlabeled = np.ones(codes.size, dtype=bool)
        unlabeled[labeled] = False
        grids = {k: _grid(clf, g, labeled, codes) for k, g in _graphs(clf, pool).items()}
        grids = {k: points for k, points in grids.items() if points}  # some point fitted
        if clf.kernel_ not in grids:
            raise RuntimeError(f"{name}: no grid point of the chosen graph fitted")
        every = [point for points in grids.values() for point in points]
        chosen = clf.transduction_
        if previous is None or labeled.size >= AUTO_REUSE_GROWTH * previous[0]:
            kernel = max(grids, key=lambda k: _best(grids[k])[0])
            previous = (labeled.size, kernel, _best(grids[kernel])[2])
        kept = [p for p in grids[previous[1]] if p[2] == previous[2]] or [_best(grids[previous[1]])]
        predictions = {
            "chosen": chosen,
            "previous": clf.classes_[kept[0][1].argmax(axis=1)],
            "fresh": clf.classes_[_best(every)[1].argmax(axis=1)],
            "marginal": clf.classes_[_best(max(grids.values(), key=_total))[1].argmax(axis=1)],
            "average": clf.classes_[_average(grids[clf.kernel_]).argmax(axis=1)],
            "average-kernels": clf.classes_[_average(every).argmax(axis=1)],
            "average-best": clf.classes_[
                _average([_best(points) for points in grids.values()]).argmax(axis=1)
            ],
        }
        unreached = clf._unreached  # no label in their component: the classifier's fallback
        if unreached is not None:
            for rule in RULES[1:]:
                predictions[rule][unreached] = chosen[unreached]
        for rule in RULES:
            right = predictions[rule][unlabeled] == codes[unlabeled]
            emit(labeled.size, rule, float(np.mean(right)))
        if labeled.size + BATCH >= AUTO_SUM_MIN_LABELS:
            return
        batch += 1
        labeled = common.query_batch(learner, labeled, codes.size, seed, trial, batch, rng)


def summarize(rows):
    """Markdown: per data set and strategy, each rule's mean accuracy and worst one-batch drop."""
    runs = {}
    for r in rows:
        key = (r["dataset"], r["strategy"], r["rule"])
        runs.setdefault(key, {}).setdefault(int(r["trial"]), []).append(
            (int(r["n_labels"]), float(r["accuracy"]))
        )
    lines = [
        "| data set | strategy | trials | "
        + " | ".join(f"{rule}: mean / worst drop" for rule in RULES)
        + " |",
        "|---|---|---|" + "---|" * len(RULES),
    ]
    for dataset, strategy in dict.fromkeys((d, s) for d, s, _ in runs):
        cells = []
        for rule in RULES:
            trials = runs.get((dataset, strategy, rule), {})
            accs = [acc for path in trials.values() for _, acc in path]
            drops = [
                100 * (a - b)
                for path in trials.values()
                for (_, a), (_, b) in zip(sorted(path)[:-1], sorted(path)[1:], strict=True)
            ]
            cells.append(f"{np.mean(accs):.4f} / {max([0.0, *drops]):.1f}")
        n_trials = len(runs[(dataset, strategy, RULES[0])])
        lines.append(f"| {dataset} | {strategy} | {n_trials} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def loader(args):
    """``load(name) -> (X, y)`` of every data set of the accuracy benchmarks, from
    ``args.mlbench_home`` (the mlbench sets) or ``args.data_home`` (the others)."""
    for extra in (bench_synthetic.SYNTHETIC, bench_mlbench.MLBENCH):
        common.DATASETS.update((name, common.Data(load)) for name, load in extra.items())

    def load(name):
        home = args.mlbench_home if name in bench_mlbench.MLBENCH else args.data_home
        return common.DATASETS[name].load(home)

    return load


def main(argv=None):
    names = [*common.DATASETS, *bench_synthetic.SYNTHETIC, *bench_mlbench.MLBENCH]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=[*common.DATASETS], choices=names)
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-home", default=None, help="skmcal's data folder (MNIST, Samson)")
    p.add_argument(
        "--mlbench-home", default=None, help="the mlbench sets' folder (bench_mlbench.py)"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument(
        "--report", action="store_true", help="only rewrite low_phase.md from low_phase.csv"
    )
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "low_phase.csv"

    def run(name, pool, X, codes, strategy, trial, emit):
        run_trial(name, pool, codes, strategy, trial, args.seed, emit)

    datasets = () if args.report else args.datasets
    rows = common.state_runs(
        path, COLUMNS, (), datasets, args.strategies, args.trials, loader(args), run
    )
    table = summarize(rows)
    (args.out / "low_phase.md").write_text(
        "# The first phase's hyperparameter rules on the defaults' path "
        "(`benchmarks/bench_low_phase.py`)\n\n"
        f"States from {N_START} to {AUTO_SUM_MIN_LABELS - BATCH} labels; accuracy on the "
        "unlabeled nodes, mean over states and trials; worst drop: the largest fall over "
        "one batch (points). Rules: see the script's docstring.\n\n" + table,
        encoding="utf-8",
    )
    print(table)


if __name__ == "__main__":
    main()
