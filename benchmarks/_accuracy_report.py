"""Tables and figures of ``bench_accuracy.py``, from the CSV files of its output folder.

Method names are ``model:strategy`` (``mgr:mc``, ``gl-poisson:unc``, ``ls:rand``)
plus ``default``. A figure has one panel per strategy, one curve per model
(mean over trials, a band of one standard deviation), and the default
configuration, black and dashed, in every panel.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
from _accuracy_common import (
    BATCH,
    CHECKPOINTS,
    DATASETS,
    DEFAULT_GRAPH_SUFFIX,
    N_START,
    REPORTED,
    read_rows,
)

#: The plots' lower row: the error of the mean curves from this many labels, on a log
#: scale (where the curves crowd near accuracy 1), an error of 0 drawn at ERROR_FLOOR.
ERROR_FROM = 50
ERROR_FLOOR = 1e-4

PANELS = {
    "mc": "model change",
    "vopt": "V-opt",
    "sopt": "Σ-opt",
    "unc": "uncertainty (margin)",
    "rand": "random",
}


def summarize(rows: list[dict]) -> dict:
    """Per method: accuracies (trials x checkpoints), worst one-batch drop, seconds per batch.

    Only complete runs count (another process may be writing the file).
    """
    out = {}
    for method in dict.fromkeys(r["method"] for r in rows):
        trials: dict[int, dict[int, tuple[float, float]]] = {}
        for r in rows:
            if r["method"] == method:
                trials.setdefault(r["trial"], {})[r["n_labels"]] = (r["accuracy"], r["seconds"])
        trials = {t: d for t, d in trials.items() if len(d) == len(CHECKPOINTS)}
        if not trials:
            continue
        acc = np.array([[t[n][0] for n in CHECKPOINTS] for t in trials.values()])
        secs = np.array([[t[n][1] for n in CHECKPOINTS[1:]] for t in trials.values()])
        out[method] = {
            "acc": acc,
            "drop": float(np.max(-np.diff(acc, axis=1))) if np.isfinite(acc).all() else math.nan,
            "seconds": float(np.mean(secs)),
        }
    return out


def _order(methods, configs) -> list[str]:
    known = [m for m in configs if m in methods]
    return known + sorted(set(methods) - set(known))


def markdown_table(stats: dict, configs: dict) -> list[str]:
    """Method x reported label counts, mean ± std; the best mean of each column in bold."""
    cols = [CHECKPOINTS.index(n) for n in REPORTED]
    means = {m: s["acc"].mean(axis=0) for m, s in stats.items()}
    best = [
        max((means[m][c] for m in stats if np.isfinite(means[m][c])), default=math.nan)
        for c in cols
    ]
    head = " | ".join(str(n) for n in REPORTED)
    lines = [
        f"| method | {head} | worst drop (pts) | s / batch | trials |",
        "|---|" + "---|" * (len(REPORTED) + 3),
    ]
    for m in _order(stats, configs):
        acc = stats[m]["acc"]
        cells = []
        for c, b in zip(cols, best, strict=True):
            if not np.isfinite(acc[:, c]).all():
                cells.append("failed")
                continue
            cell = f"{acc[:, c].mean():.3f} ± {acc[:, c].std():.3f}"
            cells.append(f"**{cell}**" if f"{b:.3f}" == cell[:5] else cell)
        name = f"**{m}**" if m == "default" else m
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {100 * stats[m]['drop']:.1f} | "
            f"{stats[m]['seconds']:.3f} | {acc.shape[0]} |"
        )
    return lines


def _best(stats: dict, methods: list[str], col: int) -> tuple[float, str]:
    """The largest mean accuracy at checkpoint column ``col`` among ``methods``, and whose."""
    means = [(float(stats[m]["acc"][:, col].mean()), m) for m in methods]
    return max((v for v in means if np.isfinite(v[0])), default=(math.nan, "-"))


def targets_table(all_stats: dict, configs: dict) -> list[str]:
    """One line per data set: the best peer, the best skmcal method and the default
    at the reported counts from 100 labels on, and the default's gap to the best peer.

    Peers are the methods whose family is not ``skmcal``; a mean over fewer trials
    than the others is compared as it is (the tables give the trial counts).
    """
    counts = [n for n in REPORTED if n >= 100]
    cols = [CHECKPOINTS.index(n) for n in counts]
    head = " / ".join(str(n) for n in counts)
    lines = [
        f"| data set | best peer: {head} | best skmcal: {head} | default: {head} "
        "| default − best peer (pts) | default's worst drop (pts) "
        "| defaults' worst drop, any strategy (pts) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, stats in all_stats.items():
        peers = [m for m in stats if m in configs and configs[m].family != "skmcal"]
        ours = [m for m in stats if m in configs and configs[m].family == "skmcal"]
        if not peers or not ours:
            continue
        peer = [_best(stats, peers, c) for c in cols]
        best = [_best(stats, ours, c) for c in cols]
        cell = lambda pairs: " / ".join(f"{v:.3f} ({m})" for v, m in pairs)  # noqa: E731
        if "default" in stats:
            acc = stats["default"]["acc"].mean(axis=0)
            default = " / ".join(f"{acc[c]:.3f}" for c in cols)
            gaps = [100 * (acc[c] - p[0]) for c, p in zip(cols, peer, strict=True)]
            gap = " / ".join(f"{g:+.1f}" for g in gaps)
            drop = f"{100 * stats['default']['drop']:.1f}"
            every = [m for m in stats if m == "default" or m.startswith("default:")]
            worst = max(every, key=lambda m: stats[m]["drop"])
            drop_any = f"{100 * stats[worst]['drop']:.1f} ({worst}, {len(every)} strategies)"
        else:
            default = gap = drop = drop_any = "-"
        lines.append(
            f"| {name} | {cell(peer)} | {cell(best)} | {default} | {gap} | {drop} | {drop_any} |"
        )
    return lines


#: Colours of the models known today; a new model takes the next free colour of tab10.
COLORS = {
    "mgr": "tab:blue",
    "gr": "tab:blue",
    "ce": "tab:orange",
    "probit": "tab:orange",
    "logistic": "tab:olive",
    "gl-laplace": "tab:green",
    "gl-poisson": "tab:red",
    "ls": "tab:purple",
    "full-mgr": "tab:brown",
    "poisson": "tab:pink",
    "default-unscaled": "black",
}


def _styles(configs: dict) -> dict[str, dict]:
    """Line style per model (the same on every figure): peers dash-dotted."""
    import matplotlib

    used = {matplotlib.colors.to_rgb(c) for c in COLORS.values()}
    free = [c for c in matplotlib.colormaps["tab10"].colors if c not in used] or ["tab:gray"]
    styles = {}
    for m, config in configs.items():
        model = m.partition(":")[0]
        if model == "default" or model in styles:
            continue
        # the paper's (tau, gamma): the colour of the loss, dotted
        paper = model.removeprefix("paper-")
        color = COLORS.get(paper) or free[len(styles) % len(free)]
        styles[model] = {
            "color": color,
            "lw": 1.3,
            "ls": ":" if model != paper else "-" if config.family == "skmcal" else "-.",
        }
    return styles


def plot(name: str, stats: dict, configs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = _styles(configs)
    x = np.array(CHECKPOINTS)
    tail = x >= ERROR_FROM
    fig, grid = plt.subplots(
        2, len(PANELS), figsize=(4 * len(PANELS), 7.6), sharey="row",
        gridspec_kw={"height_ratios": [4.4, 3.2]},
    )  # fmt: skip
    axes, below = grid
    handles, lowest = {}, 1.0
    for ax, low_ax, (strategy, title) in zip(axes, below, PANELS.items(), strict=True):
        for m in _order(stats, configs):
            model, _, suffix = m.partition(":")
            config = configs.get(m)
            if m == "default":
                kw = {"color": "black", "lw": 2.2, "ls": "--", "zorder": 5}
                label = "default (skmcal defaults + model change)"
            elif model == "default" and config is not None and config.strategy == strategy:
                kw = {"color": "black", "lw": 1.8, "ls": ":", "zorder": 5}
                label = "skmcal defaults + this strategy"
            elif config is not None and config.strategy == strategy:
                kw = styles.get(model, {"color": "gray", "lw": 1.3})
                if suffix.endswith("-greedy"):  # greedy batches: the loss's colour, dashed
                    kw = {**kw, "ls": "--"}
                label = f"skmcal {model}" if config.family == "skmcal" else model
                label += "" if suffix in ("", strategy) else f" ({suffix})"
            else:
                continue
            mean, std = stats[m]["acc"].mean(axis=0), stats[m]["acc"].std(axis=0)
            (line,) = ax.plot(x, mean, label=label, **kw)
            ax.fill_between(x, mean - std, mean + std, color=kw["color"], alpha=0.12, lw=0)
            handles.setdefault(label, line)
            error = 1.0 - mean[tail]
            if np.isfinite(error).all():
                error = np.maximum(error, ERROR_FLOOR)
                lowest = min(lowest, error.min())
                low_ax.plot(x[tail], error, **kw)
        for a in (ax, low_ax):
            a.set_xscale("log")
            a.minorticks_off()
            a.grid(alpha=0.3)
        ax.set_xticks(REPORTED, [str(n) for n in REPORTED])
        low_ax.set_xticks(REPORTED[REPORTED.index(ERROR_FROM):],
                          [str(n) for n in REPORTED[REPORTED.index(ERROR_FROM):]])  # fmt: skip
        ax.set_title(title)
        low_ax.set_xlabel("labels")
        low_ax.set_yscale("log")
    axes[0].set_ylabel("accuracy on the unlabeled nodes")
    below[0].set_ylabel(f"error (1 - accuracy), from {ERROR_FROM} labels")
    below[0].set_ylim(bottom=lowest / 1.5)
    finite = [s["acc"].mean(axis=0) for s in stats.values() if np.isfinite(s["acc"]).all()]
    low = min((mean.min() for mean in finite), default=0.0)
    axes[0].set_ylim(max(0.0, low - 0.02), 1.0)
    rank = {model: i for i, model in enumerate(["default", *styles])}
    labels = sorted(
        handles, key=lambda label: rank.get(label.removeprefix("skmcal ").split(" ")[0], 99)
    )
    counts = sorted({s["acc"].shape[0] for s in stats.values()})
    trials = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    fig.suptitle(
        f"{name}: accuracy against labels, mean ± std over {trials} trials per method; "
        f"below, the mean's error on a log scale (0 drawn at {ERROR_FLOOR:g})"
    )
    fig.tight_layout()
    # Below the axes, whatever its number of rows; the saved box takes it in.
    fig.legend(
        [handles[label] for label in labels],
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(len(labels), 8),
        frameon=False,
    )
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def report(out: Path, configs: dict) -> Path:
    """Write ``accuracy.md`` and one PNG per data set from the CSV files in ``out``."""
    lines = [
        "# Accuracy against the number of labels (`benchmarks/bench_accuracy.py`)",
        "",
        f"Every method starts from the same {N_START} labels per trial (as even over the "
        f"classes as possible: 2 per class with 10 classes, 6-7 with 3, 10 with 2), then "
        f"labels batches of {BATCH} chosen among a random 10% of its unlabeled nodes, to "
        f"{CHECKPOINTS[-1]}. Accuracy on the nodes not labeled, mean ± std over trials; the "
        "best mean of each column in bold. *worst drop*: the largest fall of accuracy over one "
        "batch, in any trial (points). *s / batch*: query + refit, mean. Methods are "
        "`model:strategy` (`python benchmarks/bench_accuracy.py --list`); **default** is "
        "`SpectralGraphClassifier(nodes=pool)` with model change and its default options, "
        "graph included (`loss='auto'`, `model='auto'`: spectral ce below 50 labels, the "
        "summed prior with mgr from there on; `kernel='auto'`: the Gaussian or the cosine "
        "graph whose spectral ce model predicts the labels better, each from the others (kept "
        "on warm refits unless the other is ahead by a margin), up to 20,000 nodes, else the "
        "Gaussian one); "
        "`default:<strategy>` the same with another "
        "strategy. `spectral-ce` is the previous default (`loss='ce'`, "
        "`model='spectral'`, the Gaussian graph), and `spectral-ce-*` changes one parameter "
        "of it (`-k15`: `n_neighbors=15`, `-cosine`: `kernel='cosine'`, `-m100`: "
        "`n_eigs=100`). Every other method uses the data set's graph (named under each "
        "data set); `<dataset>@default-graph` holds runs where every method, peers "
        "included, used the classifier's Gaussian graph instead (`--graph default`).",
        "",
    ]
    names = [n + suffix for n in DATASETS for suffix in ("", DEFAULT_GRAPH_SUFFIX)]
    all_stats = {name: summarize(read_rows(out / f"{name}.csv")) for name in names}
    all_stats = {name: stats for name, stats in all_stats.items() if stats}
    lines += [
        "## Summary",
        "",
        "The best peer and the best skmcal method (mean over trials, the method in "
        "brackets), the default, its difference from the best peer and its worst "
        "one-batch drop, and the worst one-batch drop of the defaults with any strategy "
        "(`default` and `default:*`), per data set.",
        "",
    ] + targets_table(all_stats, configs) + [""]
    for name, stats in all_stats.items():
        plot(name, stats, configs, out / f"{name}.png")
        saved = json.loads((out / f"{name}.json").read_text())
        lines += [f"## {name}", "", saved.get("data", ""), "", f"![{name}]({name}.png)", ""]
        lines += markdown_table(stats, configs) + ["", "Commands that wrote these rows:", ""]
        lines += [
            f"- `{r['command']}` ({r['date']}; skmcal {r['revision']}; {r['machine']})"
            for r in saved["runs"]
        ] + [""]
    failures = out / "failures.csv"
    if failures.exists() and failures.read_text().strip():
        lines += [
            "## Failures and warnings (`failures.csv`)",
            "",
            "| data | method | trial | what |",
            "|---|---|---|---|",
        ]
        with failures.open(newline="", encoding="utf-8") as f:
            lines += [f"| {' | '.join(r)} |" for r in csv.reader(f) if r] + [""]
    path = out / "accuracy.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
