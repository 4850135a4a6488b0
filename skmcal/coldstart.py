"""Cold start: the first rows to label, chosen from the graph alone.

With no label there is no posterior to query, but the graph already shows
where the data lie. :func:`cold_start` clusters the nodes in their spectral
embedding and labels one representative per cluster:

1. the graph of the node set and the bottom of its spectrum, through the
   same machinery (and the same cache, :data:`skmcal.GRAPH_CACHE`) as
   :class:`~skmcal.SpectralGraphClassifier`;
2. the embedding of Ng, Jordan & Weiss: the rows of the first ``m``
   eigenvectors of the normalised Laplacian, each scaled to unit length
   (which removes the ``sqrt(degree)`` factor of those eigenvectors), with
   ``m = n_clusters`` (at least 2, at most ``n_eigs``): on ``k`` well
   separated clusters the rows of the first ``k`` eigenvectors sit near ``k``
   orthogonal points, one per cluster;
3. k-means (k-means++ seeding, 10 restarts) with ``n_clusters`` equal to the
   number of rows already labeled plus ``n_instances``;
4. the clusters holding no labeled row, largest first, each represented by
   its member nearest the cluster mean (a typical point, not an outlier).

Equal rows are one point: one row of each (the first) can be chosen, and
none of a point with a labeled copy.

If k-means leaves fewer such clusters than asked (data with many equal
rows), the rest are the rows farthest, in the embedding, from every chosen
or labeled row.

References
----------
A. Y. Ng, M. I. Jordan, Y. Weiss, "On spectral clustering: analysis and an
algorithm", NeurIPS 2001.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from . import _threads
from .classifier import SpectralGraphClassifier
from .graph import GRAPH_CACHE, NodeSet, SpectralGraph, build_graph, node_set

__all__ = ["GRAPH_OPTIONS", "cold_start", "spectral_embedding"]

#: Keyword options of :func:`cold_start` that set the graph (as in
#: :class:`~skmcal.SpectralGraphClassifier`, with the same defaults).
GRAPH_OPTIONS = (
    "kernel",
    "n_neighbors",
    "scale_neighbor",
    "scale_factor",
    "neighbors",
    "n_eigs",
    "n_jobs",
    "cache",
)

#: Restarts of k-means (the best of them by inertia is kept).
KMEANS_N_INIT = 10


def _graph(nodes: NodeSet, graph_options: dict) -> SpectralGraph:
    unknown = sorted(set(graph_options) - set(GRAPH_OPTIONS))
    if unknown:
        raise TypeError(
            f"cold_start got unknown option(s) {unknown}; the graph options are "
            f"{', '.join(GRAPH_OPTIONS)}."
        )
    # The classifier's own parameter checks and graph parameters: the same
    # graph, and the same cache entry, as a classifier with these options.
    clf = SpectralGraphClassifier(**graph_options)
    clf._validate_params()
    params = clf._graph_params(nodes.n_nodes)
    if clf.cache:
        return GRAPH_CACHE.get_or_build(nodes, params)
    return build_graph(nodes.data, params, reuse_search=False)


def spectral_embedding(graph: SpectralGraph, n_components: int) -> np.ndarray:
    """Rows of the first ``n_components`` eigenvectors, scaled to unit length.

    Parameters
    ----------
    graph : SpectralGraph
        A graph with its spectrum (``clf.graph_`` of a fitted classifier).
    n_components : int
        Eigenvectors used, at most ``graph.eigenvectors.shape[1]``.

    Returns
    -------
    ndarray of shape (n_nodes, n_components)
        Rows of norm 1 (rows that are zero, e.g. of isolated nodes, stay zero).
    """
    E = np.array(graph.eigenvectors[:, :n_components])
    norms = np.linalg.norm(E, axis=1, keepdims=True)
    np.divide(E, norms, out=E, where=norms > 0)
    return E


def cold_start(
    X_pool,
    n_instances: int,
    random_state=None,
    *,
    labeled=None,
    **graph_options,
) -> np.ndarray:
    """Rows of ``X_pool`` to label first, chosen from the graph alone.

    Clusters the nodes in their spectral embedding and returns one
    representative of each cluster holding no labeled row (see the module
    documentation). On ``k`` well separated clusters, ``n_instances = k``
    returns one row of each.

    Parameters
    ----------
    X_pool : array-like, sparse matrix or NodeSet of shape (n_nodes, n_features)
        The nodes of the graph (pass the :class:`~skmcal.NodeSet` that the
        classifier will use, to share its graph).
    n_instances : int
        How many rows to return.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means. The graph itself does not depend on it.
    labeled : array-like of int or None, default=None
        Rows already labeled: the new rows go to clusters that hold none of
        them (the active-learning loop uses this while fewer than two classes
        are labeled).
    **graph_options
        ``kernel``, ``n_neighbors``, ``scale_neighbor``, ``scale_factor``,
        ``neighbors``, ``n_eigs``, ``n_jobs``, ``cache``: as in
        :class:`~skmcal.SpectralGraphClassifier` (same defaults). A
        classifier with the same options on the same node set reuses the
        graph from the cache.

    Returns
    -------
    ndarray of shape (n_instances,)
        Row indices of ``X_pool`` of distinct points (no two rows equal, none
        equal to a row in ``labeled``); representatives of larger clusters
        first.

    Raises
    ------
    ValueError
        If ``n_instances`` exceeds the distinct points that hold no labeled row.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_blobs
    >>> from skmcal import cold_start
    >>> X, y = make_blobs(300, centers=3, cluster_std=0.5, random_state=0)
    >>> rows = cold_start(X, 3, random_state=0)
    >>> sorted(y[rows].tolist())
    [0, 1, 2]
    """
    nodes = node_set(X_pool)
    n_nodes = nodes.n_nodes
    labeled = np.unique(np.asarray([] if labeled is None else labeled, dtype=np.intp))
    if labeled.size and (labeled.min() < 0 or labeled.max() >= n_nodes):
        raise ValueError(f"labeled holds row indices outside X_pool's {n_nodes} rows.")
    if isinstance(n_instances, bool) or not isinstance(n_instances, Integral) or n_instances < 1:
        raise ValueError(f"n_instances must be a positive int; got {n_instances!r}.")
    # One row per point: equal rows are one point (the first of them stands for it),
    # and a point with a labeled copy is labeled.
    first = nodes.first_equal
    eligible = first == np.arange(n_nodes)
    eligible[first[labeled]] = False
    n_free = int(np.count_nonzero(eligible))
    if n_instances > n_free:
        raise ValueError(
            f"n_instances={n_instances} exceeds the {n_free} unlabeled distinct points of "
            f"X_pool ({n_nodes} rows; equal rows are one point)."
        )
    rng = check_random_state(random_state)
    graph = _graph(nodes, graph_options)
    n_clusters = labeled.size + n_instances
    embedding = spectral_embedding(graph, min(max(n_clusters, 2), graph.eigenvectors.shape[1]))

    kmeans = KMeans(n_clusters, n_init=KMEANS_N_INIT, random_state=rng.randint(2**31 - 1))
    # A small problem (n_nodes x n_clusters): k-means's OpenMP threads only
    # spin against each other on a busy machine, as BLAS threads do (see _threads).
    with (
        warnings.catch_warnings(),
        threadpool_limits(limits=_threads.get_blas_threads(), user_api="openmp"),
    ):
        # Fewer distinct rows than clusters: handled by the farthest-point fill below.
        warnings.simplefilter("ignore", ConvergenceWarning)
        assignment = kmeans.fit_predict(embedding)
    covered = np.zeros(n_clusters, dtype=bool)
    covered[assignment[labeled]] = True
    sizes = np.bincount(assignment, minlength=n_clusters)
    chosen = []
    for c in np.argsort(-sizes, kind="stable"):
        members = np.flatnonzero((assignment == c) & eligible)
        if covered[c] or not members.size:
            continue
        gaps = np.linalg.norm(embedding[members] - kmeans.cluster_centers_[c], axis=1)
        chosen.append(members[np.argmin(gaps)])
        if len(chosen) == n_instances:
            break
    if len(chosen) < n_instances:
        chosen = _farthest_points(
            embedding, np.r_[labeled, chosen], chosen, n_instances, eligible
        )  # fmt: skip
    return np.array(chosen, dtype=np.intp)


def _farthest_points(embedding, taken, chosen, n_instances, eligible):
    """Extend ``chosen`` to ``n_instances`` rows among the ``eligible`` ones, each
    farthest from every row taken."""
    chosen, taken = list(chosen), list(taken)
    gaps = np.full(embedding.shape[0], np.inf)
    for row in taken:
        gaps = np.minimum(gaps, np.linalg.norm(embedding - embedding[row], axis=1))
    gaps[taken] = -1.0
    gaps[~eligible] = -1.0
    while len(chosen) < n_instances:
        row = int(np.argmax(gaps))
        chosen.append(row)
        gaps = np.minimum(gaps, np.linalg.norm(embedding - embedding[row], axis=1))
        gaps[row] = -1.0
    return chosen
