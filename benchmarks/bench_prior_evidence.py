"""Which prior do the labels support: the 50-eigenvector one, the full graph's, or their sum?

Issue 9 asks for models beyond the spectral truncation. This script measures,
on fixed label sets, how three Gaussian priors on the latent class scores
explain the labels (log evidence) and how well their posterior means classify
the other nodes:

- ``spectral``: ``V (Lambda + tau_s^2)^-1 V'`` over the ``n_eigs`` kept
  eigenpairs (the model of ``SpectralGraphClassifier``), ``tau_s`` from
  {0.01, 0.1} by the evidence;
- ``full``: ``(L + tau_f^2 I)^-1`` over all nodes (``model="full"``),
  ``tau_f`` from {0.001, 0.01, 0.1};
- ``sum``: ``spectral + eps * full`` (each scaled to unit mean variance over
  the labeled nodes), ``eps`` from {0.01 .. 10}: an additive prior, smooth
  at large scales and local where labels are dense.

Each model is the Gaussian regression of the one-hot labels (``loss="mgr"``):
per class, ``Y_c ~ N(0, a (K + gamma^2 I))`` with ``K`` the prior covariance
among the labeled nodes (the full graph's from its Green's columns,
:func:`skmcal.fullgraph.green_block`), the amplitude ``a`` profiled in
closed form and ``gamma``, relative to it, on a grid, as ``model="sum"``
does (:func:`skmcal.evidence.full_log_evidence`; the results written before
revision 7d80f6e took ``a`` on a grid of 13 values and an absolute
``gamma``, with ``Y_c ~ N(0, a K + gamma^2 I)``); the evidence is maximised over every grid, the
prediction is the posterior mean at every node and its argmax.

Label sets: those the configuration ``spectral-ce`` of ``bench_accuracy.py``
(``SpectralGraphClassifier("ce", model="spectral", nodes=pool)`` with model
change, the previous default, on its graph) holds after 100 / 200 / 500
labels in its trial ``t``, and uniformly random sets of the same sizes. The
table gives each model's evidence and accuracy and the model the evidence
prefers.

    python benchmarks/bench_prior_evidence.py --datasets mnist-test samson \\
        --trials 2 --memory DIR --out benchmarks/results
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import _harness as h
import numpy as np
import scipy.linalg as sl
from _accuracy_common import DATASETS, SkmcalLearner
from bench_accuracy import CONFIGS, run_one
from threadpoolctl import threadpool_limits

from skmcal import NodeSet
from skmcal.evidence import full_log_evidence
from skmcal.fullgraph import LaplacianSolver, green_block

SIZES = (100, 200, 500)
SPECTRAL_TAUS = (0.01, 0.1)
FULL_TAUS = (0.001, 0.01, 0.1)
EPSILONS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
#: Noise scales relative to the amplitude, which is profiled (closed form).
GAMMAS = (0.05, 0.1, 0.2, 0.5, 1.0)
GREEN_ATOL = 1e-9


def best_fit(K, Y):
    """``(evidence, a, gamma)`` at the gamma of GAMMAS of largest evidence, the amplitude
    ``a`` profiled (:func:`skmcal.evidence.full_log_evidence` without an offset: the
    evidence of ``Y_c ~ N(0, a (K + gamma^2 I))``, gamma relative to the amplitude)."""
    value, g = max((full_log_evidence(K, Y, g), g) for g in GAMMAS)
    S = K + g**2 * np.eye(K.shape[0])
    return value, float(np.sum(Y * sl.solve(S, Y, assume_a="pos")) / Y.size), g


def posterior_weights(K, Y, gamma):
    """``(K + gamma^2 I)^-1 Y``: the posterior mean is the prior's columns times these."""
    return sl.solve(K + gamma**2 * np.eye(K.shape[0]), Y, assume_a="pos")


class Priors:
    """Prior covariances of one graph among labeled nodes, and posterior means."""

    def __init__(self, graph):
        self.lam, self.V = graph.eigenvalues, graph.eigenvectors
        self.weights = graph.weights
        self.solver = LaplacianSolver(graph.weights)

    def spectral(self, L, tau):
        scaled = self.V / (self.lam + tau**2)
        K = scaled[L] @ self.V[L].T
        unit = np.mean(np.diag(K))
        return K / unit, lambda Z: scaled @ (self.V[L].T @ Z) / unit

    def full(self, L, tau):
        K = green_block(self.weights, L, tau, tol=GREEN_ATOL, solver=self.solver)
        unit = np.mean(np.diag(K))
        order = np.argsort(L)
        return K / unit, lambda Z: self.solver.green_combine(tau**2, L[order], Z[order]) / unit


def candidates(priors, L):
    """Every model of the grids: ``(name, tau_s, tau_f, eps, K, mean)``."""
    spectral = {t: priors.spectral(L, t) for t in SPECTRAL_TAUS}
    for ts, (K, mean) in spectral.items():
        yield "spectral", ts, None, 0.0, K, mean
    for tf in FULL_TAUS:
        Kf, mean_f = priors.full(L, tf)
        yield "full", None, tf, np.inf, Kf, mean_f
        for ts, (Ks, mean_s) in spectral.items():
            for eps in EPSILONS:
                yield (
                    "sum", ts, tf, eps, Ks + eps * Kf,
                    lambda Z, ms=mean_s, mf=mean_f, e=eps: ms(Z) + e * mf(Z),
                )  # fmt: skip


def evaluate(priors, L, codes):
    """Per model family, the best grid point: evidence, parameters, accuracy."""
    n_classes = codes.max() + 1
    Y = np.eye(n_classes)[codes[L]]
    rest = np.ones(codes.size, dtype=bool)
    rest[L] = False
    best = {}
    for name, ts, tf, eps, K, mean in candidates(priors, L):
        value, a, g = best_fit(K, Y)
        if name not in best or value > best[name][0]:
            latent = mean(posterior_weights(K, Y, g))
            accuracy = float(np.mean(np.argmax(latent[rest], axis=1) == codes[rest]))
            best[name] = (value, ts, tf, eps, a, g, accuracy)
    return best


def default_label_sets(name, codes, pool, trial, memory):
    """The default configuration's labeled nodes after each of SIZES labels, and its accuracy."""
    learner = SkmcalLearner(CONFIGS["spectral-ce"], pool, codes, DATASETS[name], memory=memory)
    sets = {}

    def emit(n, accuracy, seconds):
        if n in SIZES:
            sets[n] = (learner.labeled.copy(), accuracy)

    run_one(learner, codes, 0, trial, emit, h.log)
    return learner.clf.graph_, sets


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--datasets", nargs="+", default=["mnist-test", "samson"], choices=sorted(DATASETS)
    )
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--no-random", action="store_true", help="only the default's label sets")
    p.add_argument("--memory", default=None, help="graph cache folder (the classifier's memory=)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    command = h.command_line(argv)
    threadpool_limits(1)
    rows = []
    for name in args.datasets:
        X, y = DATASETS[name].load(None)
        X = np.asarray(X, dtype=np.float64)
        codes = np.unique(y, return_inverse=True)[1].reshape(-1).astype(np.intp)
        pool = NodeSet(X)
        for trial in range(args.trials):
            graph, sets = default_label_sets(name, codes, pool, trial, args.memory)
            priors = Priors(graph)
            rng = np.random.default_rng(trial)
            for n in SIZES:
                sources = [("default", *sets[n])]
                if not args.no_random:
                    sources.append(("random", rng.choice(codes.size, n, replace=False), np.nan))
                for source, L, default_accuracy in sources:
                    best = evaluate(priors, np.asarray(L), codes)
                    chosen = max(best, key=lambda k: best[k][0])
                    row = dict(dataset=name, trial=trial, labels=source, n_labels=n,
                               default_ce=default_accuracy, chosen=chosen)  # fmt: skip
                    for model, (value, ts, tf, eps, a, g, acc) in best.items():
                        row[f"{model}_evidence"] = value
                        row[f"{model}_accuracy"] = acc
                        row[f"{model}_params"] = (
                            f"tau_s={ts} tau_f={tf} eps={eps} a={a:.3g} gamma={g}"
                        )
                    rows.append(row)
                    h.log(
                        f"{name} t{trial} {source:7s} n={n}: "
                        + "  ".join(f"{m} {best[m][6]:.3f} ({best[m][0]:.0f})" for m in best)
                        + f"  -> {chosen}"
                    )
    fields = list(rows[0])
    args.out.mkdir(parents=True, exist_ok=True)
    h.write_csv(args.out / "bench_prior_evidence.csv", rows, fields)
    head = ["data set", "trial", "labels", "n", "default (ce)", "spectral", "full", "sum",
            "evidence prefers"]  # fmt: skip
    table = [
        [
            r["dataset"],
            r["trial"],
            r["labels"],
            r["n_labels"],
            "-" if np.isnan(r["default_ce"]) else f"{r['default_ce']:.3f}",
            *(
                f"{r[f'{m}_accuracy']:.3f} ({r[f'{m}_evidence']:.0f})"
                for m in ("spectral", "full", "sum")
            ),
            r["chosen"],
        ]  # fmt: skip
        for r in rows
    ]
    lines = h.header(
        "Gaussian evidence and accuracy of the spectral, full-graph and summed priors",
        command, started, ", ".join(args.datasets), h.revision(),
    )  # fmt: skip
    lines += [
        "Accuracy on the other nodes of each prior's posterior mean (one-hot Gaussian",
        "regression, mgr), its log evidence in parentheses, each maximised over its grid",
        "(see the script's docstring); *default (ce)*: the default configuration's own",
        "accuracy on the same labels.",
        "",
        *h.markdown(head, table),
    ]
    h.finish(args.out, "bench_prior_evidence", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
