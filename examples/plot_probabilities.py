"""
Why mgr probabilities are nearly one-hot
========================================

``predict_proba`` returns each class's likelihood under the model's own loss
at the MAP latent values. For ``mgr`` that is ``softmax(u / gamma^2)`` with
the paper's ``gamma = 0.1``: latent gaps are multiplied by 100, so the
probabilities are nearly one-hot even where the model is wrong. ``ce``
(``softmax(u / 0.5)``) grades them, and scikit-learn's
:class:`~sklearn.calibration.CalibratedClassifierCV` calibrates either on the
labeled rows. The histograms show the largest class probability on the
unlabeled points, and the log-loss says which probabilities can be trusted.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_blobs
from sklearn.metrics import log_loss

from skmcal import NodeSet, SpectralGraphClassifier

X, y = make_blobs(600, centers=3, cluster_std=2.0, random_state=1)
pool = NodeSet(X)
rng = np.random.RandomState(0)
labeled = rng.choice(600, 60, replace=False)
unlabeled = np.setdiff1d(np.arange(600), labeled)

models = {
    "mgr": SpectralGraphClassifier("mgr", model="spectral", nodes=pool),
    "ce": SpectralGraphClassifier("ce", nodes=pool),
    "mgr, calibrated (sigmoid, 3-fold)": CalibratedClassifierCV(
        SpectralGraphClassifier("mgr", model="spectral", nodes=pool), method="sigmoid", cv=3
    ),
}

# %%
# The largest class probability of each unlabeled point, with the accuracy
# and the log-loss on the unlabeled points.
fig, axes = plt.subplots(1, 3, figsize=(10, 3.2), sharey=True, layout="constrained")
for ax, (name, model) in zip(axes, models.items(), strict=True):
    proba = model.fit(X[labeled], y[labeled]).predict_proba(X[unlabeled])
    loss = log_loss(y[unlabeled], proba)
    accuracy = np.mean(proba.argmax(axis=1) == y[unlabeled])
    ax.hist(proba.max(axis=1), bins=np.linspace(1 / 3, 1, 21), color="C0")
    ax.set_title(f"{name}\naccuracy {accuracy:.2f}, log-loss {loss:.2f}", fontsize="medium")
    ax.set_xlabel("largest class probability")
_ = axes[0].set_ylabel("unlabeled points")
