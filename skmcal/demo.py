"""``make demo``: fit every loss on a small two-moons data set and report accuracy.

Run as ``python -m skmcal.demo``. The data are generated in-process (no
download): 600 points of two noisy interleaved half-moons, 3 labels per class.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import make_moons

from .classifier import SpectralGraphClassifier


def two_moons(n_samples=600, noise=0.1, random_state=0):
    """The demo's embedded data set: ``(X, y)`` with labels 0/1."""
    return make_moons(n_samples, noise=noise, random_state=random_state)


def main(n_labels_per_class=3, random_state=0):
    """Fit the five losses on the same graph; print accuracy on unlabeled points."""
    X, y_true = two_moons(random_state=random_state)
    rng = np.random.RandomState(random_state)
    labeled = np.concatenate(
        [rng.choice(np.flatnonzero(y_true == c), n_labels_per_class, replace=False) for c in (0, 1)]
    )
    y = np.full_like(y_true, -1)
    y[labeled] = y_true[labeled]
    unlabeled = y == -1
    print(f"two moons: {X.shape[0]} points, {labeled.size} labeled, kNN graph k=10, M=50")
    print(f"{'loss':<10}{'accuracy (unlabeled)':>22}{'fit time':>12}")
    for loss in ("gr", "logistic", "probit", "mgr", "ce"):
        start = time.perf_counter()
        clf = SpectralGraphClassifier(loss=loss).fit(X, y)
        elapsed = time.perf_counter() - start
        accuracy = np.mean(clf.transduction_[unlabeled] == y_true[unlabeled])
        print(f"{loss:<10}{accuracy:>22.3f}{elapsed * 1e3:>10.1f}ms")
    print("(the first fit includes building the graph and its spectrum; the rest reuse it)")


if __name__ == "__main__":
    main()
