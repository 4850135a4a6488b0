"""
A preprocessing pipeline over a fixed pool
==========================================

Digits (1,797 images of 8 x 8 pixels): standardise, project on 30 principal
components, and build the graph on the projected pool.
:func:`~skmcal.pipeline.make_pool_pipeline` fits the preprocessing on the
whole pool (no label is used, as for the graph) and returns a pipeline that
takes raw rows of the pool; see :doc:`/user_guide/pipelines`.

Then ten rounds of model-change active learning with batches of five, and the
chosen points drawn in the graph's spectral coordinates (the data have 64
dimensions).
"""

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skmcal import SpectralGraphClassifier, model_change
from skmcal.pipeline import make_pool_pipeline
from skmcal.plotting import plot_accuracy, plot_choices

X, y = load_digits(return_X_y=True)
model = make_pool_pipeline(
    make_pipeline(StandardScaler(), PCA(30, random_state=0)),
    SpectralGraphClassifier(loss="mgr"),
    X,
)
labeled = [int(np.flatnonzero(y == c)[0]) for c in range(10)]  # one per class
history = []
for iteration in range(11):
    model.fit(X[labeled], y[labeled])  # raw rows of the pool
    unlabeled = np.setdiff1d(np.arange(len(X)), labeled)
    history.append({"trial": 0, "strategy": "mc:mgr", "n_labeled": len(labeled),
                    "accuracy": model.score(X[unlabeled], y[unlabeled])})  # fmt: skip
    if iteration < 10:
        clf = model[-1]
        picks, _ = model_change(clf, clf.node_set_, n_instances=5, random_state=iteration)
        labeled += picks.tolist()
print(f"{len(labeled)} labels: accuracy {history[-1]['accuracy']:.3f}")

# %%
# Accuracy on the unlabeled images as labels are added.
accuracy = plot_accuracy(pd.DataFrame(history), title="digits, StandardScaler + PCA(30)")

# %%
# The labeled images in spectral coordinates: the first ten (one per
# class) and the fifty queried, by order. With ten classes several share a
# region of the plane.
picked = {"mc:mgr": labeled[10:]}
choices = plot_choices(X, y, picked, embedding=model[-1], title="digits")
