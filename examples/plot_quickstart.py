"""
Four labels on two moons
========================

Fit :class:`~skmcal.SpectralGraphClassifier` on 300 points of which four are
labeled, and look at what the Laplace posterior knows: the posterior variance
of each node's latent value is small near the labels and grows with the
distance from them along the graph; the margin is small near the decision
boundary.
"""

import numpy as np
from sklearn.datasets import make_moons

from skmcal import SpectralGraphClassifier
from skmcal.plotting import plot_uncertainty

X, y_true = make_moons(300, noise=0.08, random_state=0)
y = np.full(300, -1)  # -1 marks unlabeled rows
labeled = [0, 1, 2, 3]
y[labeled] = y_true[labeled]

clf = SpectralGraphClassifier(loss="probit").fit(X, y)
print(f"accuracy on every point: {np.mean(clf.transduction_ == y_true):.3f}")
print(clf.graph_)

# %%
# The posterior variance of the latent value at every node,
# ``diag(V C V')``: the labeled nodes (blue squares) pin the function down
# around them.
variance = plot_uncertainty(clf)

# %%
# The margin ``|u|``: small where the two classes meet.
margin = plot_uncertainty(clf, measure="margin")
