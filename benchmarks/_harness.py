"""What every benchmark script shares: options, machine load, data, timing, result files.

The scripts in this folder import it (``import _harness as h``); it is not
part of skmcal. It imports skmcal only inside functions, so a script can
time another source tree of skmcal (``compare_revisions.py``).

- options: :func:`add_common_arguments` (``--sizes --out --seed
  --exact-below``) and :func:`add_load_arguments` (waiting for a quiet
  machine and re-running a measurement that other processes slowed);
- machine load: :class:`Contention` (CPU cores used by *other* processes
  while a block ran, from ``/proc/stat``), :func:`wait_for_load`,
  :func:`wait_for_quiet`, :class:`Reruns`;
- data: :func:`load_data` (Fashion-MNIST through
  :func:`skmcal.datasets.load_fashion_mnist`, or a synthetic stand-in);
- the graph's neighbour search: :func:`neighbors_for`;
- timing and memory: :data:`now` (``time.perf_counter``), :func:`measured`, :func:`repeat`,
  :func:`medians`, :func:`profile`, :func:`call_times`, :func:`max_rss_mib`;
- results: :func:`header` (command, date, machine, versions, revision),
  :func:`markdown`, :func:`write_csv`, :func:`log`, :func:`finish`.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import csv
import datetime as dt
import functools
import gc
import hashlib
import importlib
import io
import os
import platform
import pstats
import resource
import shlex
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

now = time.perf_counter
N_CLASSES = 10
#: The timing columns (milliseconds) of every per-iteration table.
TIME_KEYS = ("update_ms", "query_ms", "total_ms", "total_min_ms", "total_max_ms")
#: The leading columns of every ``bench_*_<N>.csv`` that ``plot_timing.py`` reads.
TIMING_FIELDS = ("N", "strategy", "loss", "classes", "iterations", *TIME_KEYS)
#: The kNN transformer of the large graphs (11 = the point itself + 10 neighbours).
PYNNDESCENT = "pynndescent.PyNNDescentTransformer(n_neighbors=11, random_state=0)"
LOG: list[str] = []


# --------------------------------------------------------------------- logging
def log(msg: str = "") -> None:
    """Print ``msg`` with the time, and keep it for :func:`finish`."""
    line = f"[{time.strftime('%H:%M:%S')}] {msg}" if msg else ""
    print(line, flush=True)
    LOG.append(line)


def finish(out: Path, stem: str, report: str) -> None:
    """Write ``<out>/<stem>.md`` (the report) and ``<out>/<stem>.log`` (the log); print both."""
    (out / f"{stem}.md").write_text(report)
    (out / f"{stem}.log").write_text("\n".join(LOG) + "\n")
    print(f"\n{report}\nwrote {out / stem}.md, {stem}_<N>.csv and {stem}.log")


def command_line(argv) -> str:
    """The command that ran the script, from the repository root."""
    script = os.path.relpath(sys.argv[0])
    return "python " + shlex.join([script, *(sys.argv[1:] if argv is None else argv)])


# --------------------------------------------------------------------- machine
def n_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def machine() -> str:
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {n_cores()} cores, {platform.system()} {platform.release()}"


def versions() -> dict:
    """Versions of Python, the libraries skmcal uses, the benchmarks' extras and the BLAS."""
    out = {"python": platform.python_version()}
    for dist in ("numpy", "scipy", "scikit-learn", "skmcal", "modAL-python", "pynndescent",
                 "numba", "graphlearning"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    from threadpoolctl import threadpool_info

    out["BLAS"] = "; ".join(
        f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    )
    return out


def git_revision(root: Path) -> str:
    """The git revision of a source tree, noting uncommitted changes in its skmcal/."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "skmcal")
        return git("log", "-1", "--format=%h") + (" + uncommitted changes in skmcal/" * bool(dirty))
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def revision() -> str:
    """The git revision of the imported skmcal, and a hash of its imported sources.

    The hash covers the files of the skmcal modules this process imported, so
    uncommitted edits (and edits made while a benchmark runs) are told apart.
    """
    import skmcal

    digest = hashlib.sha1()
    for name in sorted(n for n in sys.modules if n == "skmcal" or n.startswith("skmcal.")):
        path = getattr(sys.modules[name], "__file__", None)
        if path and path.endswith(".py"):
            digest.update(name.encode() + Path(path).read_bytes())
    root = Path(skmcal.__file__).resolve().parent.parent
    return f"{git_revision(root)} (sources sha1 {digest.hexdigest()[:10]})"


def final_revision(start: str) -> str:
    """``start`` (the :func:`revision` measured), noting sources changed on disk since."""
    end = revision()
    if end == start:
        return start
    log(f"NOTE: skmcal changed on disk during the run (now {end}); measured {start}")
    return f"{start}; NOTE: the sources changed on disk during the run (now {end})"


def header(title: str, command: str, started: dt.datetime, data: str, rev: str) -> list[str]:
    """The first lines of a report: what ran, when, where, on what (``rev``: :func:`revision`)."""
    return [
        f"# {title}",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- date: {started.isoformat(timespec='seconds')}",
        f"- machine: {machine()}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        f"- skmcal revision: {rev}",
        f"- data: {data}",
    ]


# ------------------------------------------------------------------------ load
def loadavg() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def _cpu_seconds() -> tuple[float, float]:
    """(CPU seconds used by the whole machine so far, by this process and its children)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / tick
    except (OSError, ValueError, IndexError):
        busy = float("nan")
    t = os.times()
    return busy, t.user + t.system + t.children_user + t.children_system


class Contention:
    """Cores' worth of CPU that OTHER processes used while the block ran.

    ``other_cores`` is NaN for blocks shorter than 0.5 s (``/proc/stat``
    counts in 10 ms ticks); ``self_cpu_s`` is this process's CPU time.
    """

    def __enter__(self):
        self.busy0, self.self0 = _cpu_seconds()
        self.t0 = now()
        return self

    def __exit__(self, *exc):
        busy, mine = _cpu_seconds()
        wall = now() - self.t0
        self.self_cpu_s = mine - self.self0
        other = max(0.0, busy - self.busy0 - self.self_cpu_s) / max(wall, 1e-9)
        self.other_cores = other if wall >= 0.5 else float("nan")
        return False


def wait_for_load(threshold: float, max_wait: float, poll: float = 5.0):
    """Sleep until the 1-minute load average is below ``threshold`` (at most ``max_wait`` s)."""
    t0 = now()
    while not loadavg()[0] < threshold and now() - t0 < max_wait:
        time.sleep(poll)
    return now() - t0, loadavg()[0]


def wait_for_quiet(max_wait: float, threshold: float = 0.25, window: float = 2.0):
    """Wait (at most ``max_wait`` s) until other processes use < ``threshold`` cores.

    Returns ``(seconds waited, cores other processes used in the last window)``.
    """
    t0, level = now(), float("nan")
    while max_wait > 0:
        with Contention() as c:
            time.sleep(window)
        level = c.other_cores
        if level < threshold or now() - t0 >= max_wait:
            break
    return now() - t0, level


def add_common_arguments(p: argparse.ArgumentParser, sizes, out=Path("benchmarks/results")):
    p.add_argument("--sizes", type=int, nargs="+", default=list(sizes))
    p.add_argument("--out", type=Path, default=out)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--exact-below", type=int, default=20000,
                   help="exact kNN below this N, pynndescent at or above it")


def add_load_arguments(p: argparse.ArgumentParser, unit: str) -> None:
    """The machine-load options; ``unit``: what is re-run."""
    p.add_argument("--max-load", type=float, default=0.8)
    p.add_argument("--max-wait", type=float, default=600.0,
                   help="longest wait (s) for the 1-minute load to drop below --max-load")
    p.add_argument("--rerun-above", type=float, default=0.3,
                   help=f"re-run a {unit} once when other processes used more cores")
    p.add_argument("--quiet-wait", type=float, default=60.0,
                   help="longest wait (s) for quiet before such a re-run")
    p.add_argument("--quiet-budget", type=float, default=900.0,
                   help="total seconds the re-runs may wait for quiet")


class Reruns:
    """Run a measurement; once more, after waiting for quiet, if others were busy.

    The waits share one budget (``--quiet-budget`` seconds per run); of the
    two runs the one with less contention is kept.
    """

    def __init__(self, args):
        self.above, self.wait, self.budget = args.rerun_above, args.quiet_wait, args.quiet_budget

    def __call__(self, fn):
        """``(fn(), cores used by other processes, number of re-runs)``; logs the warnings."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = self._run(fn)
        for message in sorted({str(w.message)[:160] for w in caught}):
            log(f"    warning: {message}")
        return out

    def _run(self, fn):
        gc.collect()
        with Contention() as c:
            result = fn()
        if not c.other_cores > self.above or self.budget <= 0:
            return result, c.other_cores, 0
        waited, _ = wait_for_quiet(min(self.wait, self.budget), self.above)
        self.budget -= waited
        gc.collect()
        with Contention() as c2:
            result2 = fn()
        log(f"    re-ran: other processes used {c.other_cores:.2f} cores (waited "
            f"{waited:.0f} s; now {c2.other_cores:.2f})")
        return (result2, c2.other_cores, 1) if c2.other_cores < c.other_cores else (
            result, c.other_cores, 1)


# ------------------------------------------------------------------------ data
#: The project's shared real data beside the repository (its README says where
#: each file comes from): the benchmarks' data home, unless --data-home or the
#: environment variable SKMCAL_DATA say otherwise.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def data_home(given=None) -> Path:
    """``given`` (--data-home), else ``$SKMCAL_DATA``, else ../shared/data beside the repository."""
    return Path(given or os.environ.get("SKMCAL_DATA") or SHARED_DATA)


def load_data(n_max: int):
    """First ``n_max`` rows of Fashion-MNIST (train then test), pixels / 255; or synthetic.

    Returns ``(X, y, description)``. Without the Debian package
    ``dataset-fashion-mnist``, a 10-class Gaussian mixture of the same shape.
    """
    from skmcal.datasets import FASHION_MNIST_HOME, load_fashion_mnist

    try:
        X, y = load_fashion_mnist(n_samples=n_max)
        return X, y.astype(np.int64), (
            f"Fashion-MNIST ({FASHION_MNIST_HOME}, skmcal.datasets.load_fashion_mnist), train "
            "then test, first N rows of 70,000 x 784, pixels / 255 in [0, 1], float64")
    except FileNotFoundError:
        rng = np.random.default_rng(0)
        centers = rng.uniform(0.0, 1.0, size=(N_CLASSES, 784))
        y = rng.integers(0, N_CLASSES, size=n_max)
        X = np.clip(centers[y] + rng.normal(0.0, 0.35, size=(n_max, 784)), 0.0, 1.0)
        return X, y, (f"SYNTHETIC (no {FASHION_MNIST_HOME}): 10-class Gaussian mixture, "
                      f"{n_max} x 784, clipped to [0, 1]")


def initial_labels(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """``per_class`` random rows of every class 0..9, class by class."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.choice(np.flatnonzero(y == c), per_class, replace=False)
                           for c in range(N_CLASSES)])


def neighbors_for(n: int, exact_below: int):
    """``(neighbors, description)``: skmcal's exact kNN below ``exact_below``, else pynndescent."""
    if n < exact_below:
        return None, "exact: sklearn NearestNeighbors (skmcal default)"
    from pynndescent import PyNNDescentTransformer

    return PyNNDescentTransformer(n_neighbors=11, random_state=0), PYNNDESCENT


def warm_up_pynndescent() -> tuple[float, float]:
    """Compile pynndescent's numba code on 2,000 random rows: (first call s, second call s)."""
    from pynndescent import PyNNDescentTransformer

    Z = np.random.default_rng(0).uniform(size=(2000, 784))
    times = []
    for _ in range(2):
        t0 = now()
        PyNNDescentTransformer(n_neighbors=11, random_state=0).fit_transform(Z)
        times.append(now() - t0)
    return times[0], times[1]


# ---------------------------------------------------------------------- timing
#: ``(measurement, warning category, message)`` of the warnings raised in :func:`measured`.
WARNINGS: list[tuple[str, str, str]] = []


def searched_again(clf, n_labels: int) -> bool:
    """Whether the classifier's last fit, on ``n_labels`` labels, searched its "auto"
    hyperparameters again rather than reusing the last choice (the private
    ``_auto_choice`` records the label count of the last search)."""
    return getattr(clf, "_auto_choice", (None,))[0] == n_labels


def max_rss_mib() -> float:
    """The process's peak resident memory so far (Linux: ``ru_maxrss`` in KiB), MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@contextlib.contextmanager
def measured(store: dict, name: str, trace: bool = False):
    """Time the block into ``store[name]`` (``time_s``), with the max RSS after it, the
    cores other processes used and, with ``trace``, its ``tracemalloc`` peak (MiB)."""
    gc.collect()
    if trace:
        tracemalloc.start()
    entry = store.setdefault(name, {})
    with warnings.catch_warnings(record=True) as caught, Contention() as c:
        warnings.simplefilter("always")
        t0 = now()
        yield entry
        entry["time_s"] = now() - t0
    if trace:
        entry["tracemalloc_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    entry.update(max_rss_mib_after=max_rss_mib(), other_processes_cores=c.other_cores)
    WARNINGS.extend((name, w.category.__name__, str(w.message)) for w in caught)
    log(f"  {name}: {entry['time_s']:.3f} s (max RSS {entry['max_rss_mib_after']:.0f} MiB, "
        f"other processes {fmt(c.other_cores, 2)} cores)")


def repeat(fn, repeats: int) -> dict:
    """Time ``fn()`` ``repeats`` times: median, min and every time (s)."""
    times = []
    for _ in range(repeats):
        t0 = now()
        fn()
        times.append(now() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "times_s": times}


def medians(update, query) -> dict:
    """Medians (ms) of per-iteration update, query and total times (s), and the range."""
    total = [u + q for u, q in zip(update, query, strict=True)]
    return {"update_ms": 1e3 * statistics.median(update),
            "query_ms": 1e3 * statistics.median(query),
            "total_ms": 1e3 * statistics.median(total),
            "total_min_ms": 1e3 * min(total), "total_max_ms": 1e3 * max(total)}


@contextlib.contextmanager
def call_times(module: str, name: str):
    """Collect the wall time of every call of ``module.name`` while the block runs.

    The one place where a benchmark wraps an attribute of skmcal: ``bench_core.py``
    splits a fit into the solver (``skmcal.classifier.fit_posterior``) and the
    estimator's own overhead, which no public API tells apart. The function is
    called unchanged and restored on exit. Yields the list of times (s).
    """
    owner = importlib.import_module(module)
    original, times = getattr(owner, name), []

    @functools.wraps(original)
    def timed(*args, **kwargs):
        t0 = now()
        try:
            return original(*args, **kwargs)
        finally:
            times.append(now() - t0)

    setattr(owner, name, timed)
    try:
        yield times
    finally:
        setattr(owner, name, original)


def profile(fn, path: Path, top: int = 13) -> str:
    """cProfile ``fn()``; write the listings by own and cumulative time to ``path``.

    Returns the header and the ``top`` first rows by own time. The clock is
    the process's CPU time, which other processes on a shared machine barely
    disturb; cProfile sees the calling thread only, so profile skmcal with
    ``n_jobs=1`` (the ce candidate scoring then runs in that thread).
    """
    prof = cProfile.Profile(time.process_time)
    prof.runcall(fn)
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(25)
    short = [line for line in buf.getvalue().splitlines() if line.strip()]
    stats.sort_stats("cumulative").print_stats(40)
    path.write_text(buf.getvalue())
    start = next((i for i, ln in enumerate(short) if "function calls" in ln), 0)
    head = next((i for i, ln in enumerate(short) if ln.lstrip().startswith("ncalls")), start)
    return "\n".join([short[start], *short[head : head + top]])


# --------------------------------------------------------------------- results
def fmt(v, digits: int = 1) -> str:
    if v is None or v == "" or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    return f"{v:.{digits}f}"


def markdown(head, rows) -> list[str]:
    """A markdown table: the header cells, then one list of cells per row."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def write_csv(path: Path, rows, fields) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(fields), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in fields})
