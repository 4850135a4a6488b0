"""The defaults against the peers on synthetic data sets outside the benchmark.

``bench_accuracy.py``'s loop, configurations and report on scikit-learn's
generators, to check that what the benchmark's five data sets show holds on
data of other shapes: two noisy moons, imbalanced blobs, many uninformative
features, features of very different scales, a 95/5 binary set, 60 small
classes, rounded features with copies, a 26-class set shaped like UCI
letter (20,000 x 16 integers); and since 2026-11-29 two noisy concentric
circles (3,000 x 2), 5 classes of two clusters each in 20 features of which
6 informative (4,000 x 20), and 4 nested Gaussian shells (3,000 x 4,
``make_gaussian_quantiles``). Results under ``results/synthetic`` (or
``--out``)::

    python benchmarks/bench_synthetic.py --trials 3 \\
        --only default default:unc ls:unc gl-laplace:unc gl-laplace:mc

Every other option is ``bench_accuracy.py``'s (``--datasets`` takes the names
below).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import (
    make_blobs,
    make_circles,
    make_classification,
    make_gaussian_quantiles,
    make_moons,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_accuracy  # noqa: E402


def _moons(home):
    return make_moons(4000, noise=0.25, random_state=0)


def _imbalanced_blobs(home):
    return make_blobs(
        n_samples=[2000, 800, 400, 200, 100], n_features=8,
        cluster_std=[1.0, 1.5, 2.0, 1.0, 0.7], center_box=(-6, 6), random_state=1,
    )  # fmt: skip


def _noisy_features(home):
    return make_classification(
        n_samples=5000, n_features=40, n_informative=10, n_redundant=5, n_classes=10,
        n_clusters_per_class=2, class_sep=2.0, random_state=2,
    )  # fmt: skip


def _unscaled(home):
    X, y = make_classification(
        n_samples=4000, n_features=20, n_informative=8, n_classes=4, class_sep=1.5,
        random_state=3,
    )  # fmt: skip
    return X * 10.0 ** np.random.default_rng(3).uniform(-2, 3, X.shape[1]), y


def _rare_class(home):
    return make_classification(
        n_samples=5000, n_features=10, n_informative=5, weights=[0.95, 0.05],
        class_sep=1.5, random_state=4,
    )  # fmt: skip


def _many_classes(home):
    return make_blobs(
        n_samples=3000, centers=60, n_features=30, cluster_std=3.5, center_box=(-10, 10),
        random_state=5,
    )  # fmt: skip


def _rounded(levels, **params):
    X, y = make_classification(**params)
    lo, hi = np.percentile(X, [1, 99], axis=0)
    return np.clip(np.round((X - lo) / (hi - lo) * levels), 0, levels), y


def _copies(home):
    return _rounded(
        5, n_samples=6000, n_features=8, n_informative=6, n_redundant=0, n_classes=6,
        class_sep=2.0, random_state=6,
    )  # fmt: skip


def _letters(home):
    return _rounded(
        15, n_samples=20000, n_features=16, n_informative=12, n_redundant=2,
        n_classes=26, n_clusters_per_class=2, class_sep=2.5, random_state=0,
    )  # fmt: skip


def _circles(home):
    return make_circles(3000, noise=0.08, factor=0.5, random_state=0)


def _clusters(home):
    return make_classification(
        4000, n_features=20, n_informative=6, n_redundant=4, n_classes=5,
        n_clusters_per_class=2, class_sep=1.5, random_state=0,
    )  # fmt: skip


def _quantiles(home):
    return make_gaussian_quantiles(n_samples=3000, n_features=4, n_classes=4, random_state=0)


#: The synthetic data sets, cheapest first (all on the default Gaussian graph, k = 10).
SYNTHETIC = {
    "moons": _moons,
    "imbalanced-blobs": _imbalanced_blobs,
    "noisy-features": _noisy_features,
    "unscaled": _unscaled,
    "rare-class": _rare_class,
    "many-classes": _many_classes,
    "copies": _copies,
    "letters-like": _letters,
    "circles": _circles,
    "clusters": _clusters,
    "quantiles": _quantiles,
}


def main(argv=None):
    bench_accuracy.main_on(SYNTHETIC, "synthetic", argv)


if __name__ == "__main__":
    main()
