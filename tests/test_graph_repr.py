"""The summary repr of SpectralGraph."""

import numpy as np
from sklearn.datasets import make_moons

from skmcal import SpectralGraphClassifier


def test_graph_repr_is_a_one_line_summary():
    X, y_true = make_moons(120, noise=0.05, random_state=0)
    y = np.full(120, -1)
    y[:4] = y_true[:4]
    graph = SpectralGraphClassifier(n_eigs=10).fit(X, y).graph_
    text = repr(graph)
    W = graph.weights.toarray()
    n_edges = np.count_nonzero(np.triu(W))  # each undirected edge (and self-loop) once
    assert text.startswith(
        f"SpectralGraph(n_nodes=120, n_edges={n_edges}, kernel='gaussian', n_neighbors=10, "
        f"n_eigs=10, eigenvalues=[{graph.eigenvalues[0]:.3g}, ..., "
        f"{graph.eigenvalues[-1]:.3g}], n_components={graph.n_components}, residual="
    )
    assert "\n" not in text and len(text) < 200
