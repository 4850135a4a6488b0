"""
skmcal in a scikit-activeml loop
================================

scikit-activeml marks unlabeled rows with NaN and asks a query strategy for
the next rows to label. :mod:`skmcal.skactiveml` makes the graph classifier a
scikit-activeml classifier and skmcal's strategies scikit-activeml query
strategies. Here model change and V-opt (skmcal's) are compared with
scikit-activeml's own uncertainty sampling and random sampling, all on the
same graph classifier, starting from no label at all (the first batch is
random until two classes are labeled).
"""

import warnings

import numpy as np
import pandas as pd
from skactiveml.pool import RandomSampling, UncertaintySampling
from skactiveml.utils import MISSING_LABEL, call_func
from sklearn.datasets import make_blobs

from skmcal import SpectralGraphClassifier
from skmcal.plotting import plot_accuracy
from skmcal.skactiveml import GraphQueryStrategy, skactiveml_classifier

X, y_true = make_blobs(600, centers=6, cluster_std=1.2, random_state=3)
y_true = y_true % 3  # three classes, two blobs each

strategies = {
    "model change (skmcal)": lambda seed: GraphQueryStrategy("model_change", random_state=seed),
    "V-opt (skmcal)": lambda seed: GraphQueryStrategy("vopt", random_state=seed),
    "uncertainty (scikit-activeml)": lambda seed: UncertaintySampling(random_state=seed),
    "random (scikit-activeml)": lambda seed: RandomSampling(random_state=seed),
}
rows = []
for trial in range(2):
    for name, make in strategies.items():
        qs = make(trial)
        clf = skactiveml_classifier(SpectralGraphClassifier(loss="ce"), classes=[0, 1, 2])
        y = np.full(len(X), MISSING_LABEL)
        for _ in range(8):
            with warnings.catch_warnings():
                # Before two classes are labeled the classifier cannot be
                # fitted and scikit-activeml says so.
                warnings.simplefilter("ignore", UserWarning)
                # call_func passes clf only to strategies that take it.
                idx = call_func(qs.query, X=X, y=y, clf=clf, batch_size=3)
                y[idx] = y_true[idx]
                unlabeled = np.isnan(y)
                score = clf.fit(X, y).score(X[unlabeled], y_true[unlabeled])
            rows.append({"trial": trial, "strategy": name,
                         "n_labeled": int(np.sum(~np.isnan(y))), "accuracy": score})  # fmt: skip

results = pd.DataFrame(rows)
print(results[results["n_labeled"] == 24].groupby("strategy")["accuracy"].mean().round(3))

# %%
# Accuracy against the number of labels (mean ± std over 2 trials).
accuracy = plot_accuracy(results, title="six blobs, three classes")
