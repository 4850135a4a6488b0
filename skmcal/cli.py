"""Command line of skmcal: ``skmcal run ...``, ``skmcal demo``, ``skmcal --version``.

The ``skmcal`` command and ``python -m skmcal`` are the same program.

``run`` compares query strategies on a data set with
:func:`skmcal.experiment.run_experiment`, writes the results, the choices and
the configuration to ``--out`` (resuming a run already there), draws the
accuracy curves and the points chosen in the first trial (in spectral
coordinates for data of more than two dimensions, up to
``CHOICES_PLOT_MAX_NODES`` nodes), both titled with the data set's name
or file, and prints a table of the final accuracy and the time per
iteration::

    python -m skmcal run --dataset binary-clusters \\
        --strategies mc:gr mc:logistic unc:logistic rand \\
        --batch 5 --iterations 20 --trials 2 --out results/bc

``--n-jobs`` and ``--backend`` spread the (trial, strategy) runs over
worker processes, and ``--scheduler`` over a dask.distributed cluster; the
files written are those of a serial run::

    python -m skmcal run --dataset mnist-test --trials 8 --n-jobs 4
    python -m skmcal run --dataset mnist-test --trials 8 --scheduler tcp://10.0.0.5:8786

``--model`` fits another of the classifier's models than the paper's spectral
one; ``--model auto`` (with the default ``--loss auto``) is the classifier's
defaults::

    python -m skmcal run --dataset mnist-test --model auto --strategies mc unc

``demo`` is a quick run of the same kind on Binary-Clusters (under two
minutes on two cores).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from . import __version__
from .datasets import DATASETS, load_npz
from .experiment import BACKENDS, MODELS, NEIGHBORS, STRATEGIES, ExperimentResult, run_experiment
from .losses import LOSSES

__all__ = ["DEMO_STRATEGIES", "format_summary", "main"]

#: Strategies of ``python -m skmcal demo``: MC on three binary models, UNC-LOG,
#: VOPT and random sampling (in the GR model).
DEMO_STRATEGIES = ("mc:gr", "mc:logistic", "mc:probit", "unc:logistic", "vopt:gr", "rand:gr")


def _auto_or(kind):
    def parse(text):
        if text == "auto":
            return text
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected 'auto' or a{'n int' if kind is int else ' number'}; got {text!r}"
            ) from None

    return parse


def _batch(text):
    """The points queried per iteration: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1; got {text!r}")
    return value


def _candidates(text):
    """'all' -> None; a number with a '.' or an exponent -> fraction; else an int."""
    if text.lower() in ("all", "none"):
        return None
    try:
        return float(text) if any(ch in text.lower() for ch in ".e") else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a fraction such as 0.1, a count such as 50, or 'all'; got {text!r}"
        ) from None


def _dataset(text):
    if text.lower() in DATASETS:
        return text.lower()
    path = Path(text)
    if path.suffix == ".npz" and path.is_file():
        return path
    raise argparse.ArgumentTypeError(
        f"expected one of {', '.join(DATASETS)}, or an .npz file with arrays X and y; got {text!r}"
    )


#: Loggers whose messages the command line shows as phase reports: data
#: loading, node hashing, the graph phases (kNN, weights, spectrum), resuming.
PHASE_LOGGERS = ("skmcal.experiment", "skmcal.graph")


@contextlib.contextmanager
def _phase_reports(enabled: bool):
    """Print the phases of the run with their times to standard error, while it lasts."""
    if not enabled:
        yield
        return
    package = logging.getLogger("skmcal")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[skmcal] %(message)s"))
    handler.addFilter(lambda record: record.name in PHASE_LOGGERS)
    level = package.level
    package.addHandler(handler)
    package.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        package.removeHandler(handler)
        package.setLevel(level)


def format_summary(summary: pd.DataFrame) -> str:
    """The table printed at the end of a run.

    Parameters
    ----------
    summary : pandas.DataFrame
        As returned by :func:`skmcal.experiment.summarize`.

    Returns
    -------
    str
        One line per strategy: final accuracy (mean ± std over trials),
        mean seconds per iteration, labels at the end, trials.
    """
    width = max([len("strategy"), *(len(str(s)) for s in summary["strategy"])])
    lines = [
        f"{'strategy':<{width}}  {'final accuracy':>17}  {'s / iteration':>13}  "
        f"{'labels':>6}  {'trials':>6}"
    ]
    for row in summary.itertuples(index=False):
        seconds = "-" if math.isnan(row.time_mean) else f"{row.time_mean:.4f}"
        accuracy = f"{row.accuracy_mean:.4f} \u00b1 {row.accuracy_std:.4f}"
        lines.append(
            f"{row.strategy:<{width}}  {accuracy:>17}  {seconds:>13}  "
            f"{row.n_labeled:>6}  {row.trials:>6}"
        )
    return "\n".join(lines)


def _add_loop_options(parser, *, iterations, trials):
    parser.add_argument(
        "--batch", type=_batch, default=5, metavar="B", help="points queried per iteration (5)"
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=iterations,
        help=f"active-learning iterations per strategy and trial ({iterations})",
    )
    parser.add_argument("--trials", type=int, default=trials, help=f"independent trials ({trials})")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="do not show the progress bar, nor the times of the data, graph and spectrum "
        "phases (on standard error)",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skmcal",
        description="Model-change active learning on graphs (Miller & Bertozzi).",
    )
    parser.add_argument("--version", action="version", version=f"skmcal {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    strategies = ", ".join(STRATEGIES)
    run = commands.add_parser(
        "run",
        help="compare query strategies on a data set",
        description="Compare query strategies on a data set; results, plots and a table.",
    )
    run.add_argument(
        "--dataset",
        type=_dataset,
        default="binary-clusters",
        help=f"{', '.join(DATASETS)}, or an .npz file with arrays X and y (binary-clusters)",
    )
    run.add_argument(
        "--strategies",
        nargs="+",
        default=["mc", "vopt", "sopt", "unc", "rand"],
        metavar="NAME[:LOSS]",
        help=f"strategies ({strategies}), each optionally ':loss' "
        f"({', '.join(LOSSES)}, or auto: the classifier's choice); default: mc vopt sopt "
        "unc rand",
    )
    run.add_argument(
        "--loss",
        default="auto",
        choices=["auto", *LOSSES],
        help="loss of strategies given without one; auto: with --model spectral gr for 2 "
        "classes, else mgr (the paper's); with the other models the classifier's own choice",
    )
    run.add_argument(
        "--model",
        default="spectral",
        choices=list(MODELS),
        help="the classifier's model for every strategy: spectral (the paper's, the "
        "default), full, sum, poisson, or auto (with --loss auto: the classifier's defaults)",
    )
    run.add_argument("--tau", type=_auto_or(float), default="auto", help="prior shift (auto)")
    run.add_argument("--gamma", type=_auto_or(float), default="auto", help="loss scale (auto)")
    run.add_argument(
        "--kernel",
        default="auto",
        choices=["auto", "gaussian", "cosine"],
        help="graph kernel; auto: the data set's (the paper's: cosine for samson, else "
        "gaussian), not the classifier's choice by the labels",
    )
    run.add_argument(
        "--n-neighbors",
        type=_auto_or(int),
        default="auto",
        help="kNN neighbours; auto: 15 for samson, else 10",
    )
    run.add_argument(
        "--neighbors",
        default="exact",
        choices=NEIGHBORS,
        help="kNN search: exact (scikit-learn; the default) or pynndescent (approximate, "
        "for tens of thousands of points; needs pip install skmcal[fast]; compiles for "
        "~30 s on first use)",
    )
    run.add_argument("--n-eigs", type=int, default=50, help="eigenpairs kept (50)")
    run.add_argument(
        "--initial",
        type=_auto_or(int),
        default="auto",
        help="initial labels per class; auto: 1 for binary-clusters, else 2; 0: start "
        "from no label (with --cold-start)",
    )
    run.add_argument(
        "--cold-start",
        type=int,
        default=None,
        metavar="N",
        help="start from no label (--initial 0, implied by default): choose the first N "
        "labels from the graph alone "
        "(skmcal.cold_start); more come the same way until two classes are labeled",
    )
    run.add_argument(
        "--stop",
        nargs="+",
        default=None,
        metavar="RULE",
        help="end each run at the first iteration where a rule says stop: kappa[:0.99] "
        "(stabilising predictions), mc:TOL (largest relative model change <= TOL), "
        "budget:N (N labels); --iterations is then the most",
    )
    run.add_argument(
        "--candidates",
        type=_candidates,
        default=0.1,
        help="unlabeled points scored per query: a fraction (0.1), a count, or 'all'",
    )
    _add_loop_options(run, iterations=100, trials=5)
    run.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder; an existing run there is resumed (results/<dataset>)",
    )
    run.add_argument("--n-samples", type=int, default=None, help="use the first N points only")
    run.add_argument(
        "--data-home",
        default=None,
        help="data folder of the named data sets (default: $SKMCAL_DATA, else ~/skmcal_data)",
    )
    run.add_argument("--no-plots", action="store_true", help="do not draw the figures")
    run.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        metavar="N",
        help="(trial, strategy) runs computed at once by workers (1; -1: all cores; with "
        "--backend dask: all the cluster's workers); the files are those of a serial run",
    )
    run.add_argument(
        "--backend",
        default=None,
        choices=BACKENDS,
        help="the workers: loky (processes; the default with --n-jobs), threading, or dask "
        "(the cluster at --scheduler, else a local cluster of --n-jobs processes; needs "
        "pip install skmcal[dask])",
    )
    run.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="address of a dask.distributed scheduler (tcp://host:8786); implies --backend dask",
    )
    run.add_argument(
        "--memory",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder of the graph's disk cache: the graph is built once, then workers and "
        "later runs load it (default with worker processes: a temporary folder)",
    )

    demo = commands.add_parser(
        "demo",
        help="a quick comparison on Binary-Clusters",
        description=f"Binary-Clusters, strategies {' '.join(DEMO_STRATEGIES)}: results, "
        "plots and a table in under two minutes.",
    )
    _add_loop_options(demo, iterations=20, trials=3)
    demo.add_argument(
        "--out", type=Path, default=None, help="output folder (a new temporary folder)"
    )
    return parser


#: Above this many nodes, data of more than two dimensions get no choices plot
#: (its spectral coordinates need a kNN graph of their own).
CHOICES_PLOT_MAX_NODES = 20000


def _plots(result: ExperimentResult, out: Path, name: str) -> list[Path]:
    from .plotting import plot_accuracy, plot_choices

    paths = [plot_accuracy(result.results, out / "accuracy.png", title=f"{name}: accuracy")]
    if result.X.shape[1] == 2 or result.X.shape[0] <= CHOICES_PLOT_MAX_NODES:
        paths.append(
            plot_choices(
                result.X,
                result.y,
                result.choices,
                out / "choices.png",
                trial=int(result.choices["trial"].min()),
                title=name,
            )
        )
    return paths


def _report(result: ExperimentResult, out: Path, plots: bool, name: str) -> None:
    config = result.config
    print(
        f"{config['dataset']}: {config['n_nodes']} points, {config['n_classes']} classes; "
        f"{config['trials']} trial(s) x {config['iterations']} iterations of "
        f"{config['batch_size']} queries"
    )
    if not result.stops.empty:
        ends = result.stops.groupby("strategy", sort=False)["iteration"].agg(list)
        for strategy, its in ends.items():
            print(f"stopped: {strategy} at iteration(s) {its}")
    if result.runs_skipped:
        print(f"resumed: {len(result.runs_skipped)} run(s) already complete in {out}")
    print(format_summary(result.summary()))
    print(f"results: {result.results_path}")
    if plots:
        for path in _plots(result, out, name):
            print(f"plot: {path}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : sequence of str, default=None
        The arguments; None reads ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0; 2 when the settings or the data are invalid or
        damaged, the data or an optional package (pynndescent, dask) are
        missing, ``--out`` cannot be written or holds a run with other
        settings, the dask scheduler cannot be reached; 130
        when interrupted (Ctrl-C), after which the same command resumes.
    """
    args = _build_parser().parse_args(argv)
    try:
        return _main(args)
    except (ValueError, KeyError, ImportError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


def _main(args) -> int:
    with _phase_reports(not args.no_progress):
        return _run(args)


def _run(args) -> int:
    progress = not args.no_progress
    if args.command == "demo":
        out = args.out or Path(tempfile.mkdtemp(prefix="skmcal-demo-"))
        options = {"strategies": DEMO_STRATEGIES}
        dataset, plots = "binary-clusters", True
        name = dataset
    else:
        if isinstance(args.dataset, Path):
            dataset, name = load_npz(args.dataset), args.dataset.name
            out = args.out or Path("results") / args.dataset.stem
        else:
            dataset = name = args.dataset
            out = args.out or Path("results") / name
        plots = not args.no_plots
        options = {
            "strategies": args.strategies,
            "loss": args.loss,
            "model": args.model,
            "tau": args.tau,
            "gamma": args.gamma,
            "kernel": args.kernel,
            "n_neighbors": args.n_neighbors,
            "neighbors": args.neighbors,
            "n_eigs": args.n_eigs,
            "n_initial": args.initial,
            "cold_start": args.cold_start,
            "stop": args.stop,
            "candidates": args.candidates,
            "n_samples": args.n_samples,
            "data_home": args.data_home,
            "n_jobs": args.n_jobs,
            "backend": args.backend,
            "scheduler": args.scheduler,
            "memory": args.memory,
        }
    try:
        result = run_experiment(
            dataset,
            batch_size=args.batch,
            iterations=args.iterations,
            trials=args.trials,
            seed=args.seed,
            out=out,
            progress=progress,
            **options,
        )
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _report(result, out, plots=plots, name=name)
    return 0
