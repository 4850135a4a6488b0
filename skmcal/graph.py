"""Similarity graph, normalised-Laplacian spectrum and out-of-sample extension.

The data path is ``X -> kNN affinity W -> (lambda, V)``. All of it depends on
the node data and the graph parameters only, never on the loss, ``tau`` or
``gamma``; :class:`NodeSet` and the content-keyed :data:`GRAPH_CACHE` make sure
it is computed once per node set and shared by every estimator (and clone)
that uses the same nodes and graph parameters.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field

import joblib
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import eigsh
from sklearn.base import clone
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state

#: Above this many nodes the spectrum is computed by ARPACK (eigsh); at or
#: below it, or when ``n_eigs`` is a third of the nodes or more, by dense ``eigh``.
DENSE_EIGEN_MAX_NODES = 1000

#: ARPACK's relative tolerance. At 70,000 Fashion-MNIST nodes it gives
#: residuals ~1e-8 and eigenvalues within 2e-9 of tol=0 (machine precision),
#: in 7.2 s instead of 9.4 s.
EIGSH_TOL = 1e-8

#: Largest acceptable residual ``||A v - mu v||`` of a computed eigenpair.
EIGEN_RESIDUAL_TOL = 1e-6

#: Components whose ``|1 - lambda|`` is below this use the neighbour average
#: instead of the Nystrom formula (which divides by ``1 - lambda``).
NYSTROM_MIN_GAP = 1e-3

_HASH_SEED = 20211201


def _as_node_array(X):
    """Validate node data: finite float64, dense C-contiguous or canonical CSR."""
    X = check_array(
        X,
        accept_sparse="csr",
        dtype=np.float64,
        ensure_all_finite=True,
        copy=True,
        input_name="nodes",
    )
    if sp.issparse(X):
        X.sum_duplicates()
        X.sort_indices()
    else:
        X = np.ascontiguousarray(X)
    return X


class NodeSet:
    """An immutable set of graph nodes, identified by its content.

    Pass one as ``nodes=`` to :class:`~skmcal.SpectralGraphClassifier` when
    the estimator is fitted on subsets of a fixed pool (active learning,
    ``GridSearchCV`` on the labeled part of a pool): every row given to
    ``fit`` is looked up among the nodes, the unlabeled nodes take part in the
    graph, and the graph with its spectrum is built once per node set and
    graph parameters. A ``NodeSet`` is never copied: ``copy.deepcopy`` and
    :func:`sklearn.base.clone` return the same object, so clones share it.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_nodes, n_features)
        The node data. It is copied once, to float64, and made read-only.
        With ``kernel="precomputed"`` it is the square affinity matrix.

    Attributes
    ----------
    data : ndarray or scipy.sparse.csr_matrix of shape (n_nodes, n_features)
        The read-only node data.
    digest : str
        A hash of the content; the key of the graph cache.
    source, transformer : NodeSet or None, transformer or None
        For a node set made by :meth:`transformed`: the node set it was made
        from, and the transformer; None otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from skmcal import NodeSet
    >>> nodes = NodeSet(np.arange(12.0).reshape(6, 2))
    >>> nodes.lookup(np.array([[4.0, 5.0], [1.0, 1.0]]))
    array([ 2, -1])
    """

    def __init__(self, X):
        self.data = _as_node_array(X)
        if sp.issparse(self.data):
            for part in (self.data.data, self.data.indices, self.data.indptr):
                part.flags.writeable = False
        else:
            self.data.flags.writeable = False
        self.digest = self._hash(self.data)
        self._index = None
        self.source = self.transformer = None

    @staticmethod
    def _hash(X):
        h = hashlib.blake2b(digest_size=20)
        h.update(repr((type(X).__name__, X.shape)).encode())
        parts = (X.data, X.indices, X.indptr) if sp.issparse(X) else (X,)
        for part in parts:
            h.update(np.ascontiguousarray(part).view(np.uint8).data)
        return h.hexdigest()

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.data.shape[0]

    @property
    def n_features(self) -> int:
        """Number of features (columns) of each node."""
        return self.data.shape[1]

    def __len__(self) -> int:
        return self.n_nodes

    def __getitem__(self, rows):
        """Rows of the node data (so modAL can retrieve queried rows of a NodeSet pool)."""
        return self.data[rows]

    def __repr__(self) -> str:
        kind = "sparse" if sp.issparse(self.data) else "dense"
        return f"NodeSet(n_nodes={self.n_nodes}, n_features={self.n_features}, {kind})"

    def transformed(self, transformer) -> NodeSet:
        """The node set of the transformed nodes, for a pipeline over a fixed pool.

        Parameters
        ----------
        transformer : fitted transformer
            Any object with ``transform``, such as ``make_pipeline(StandardScaler(),
            PCA(30))`` fitted on ``self.data`` (the whole pool, as the graph
            is: no label is used).

        Returns
        -------
        NodeSet
            The nodes ``transformer.transform(self.data)``. It remembers this
            node set as ``source`` and the transformer as ``transformer``, so
            that :class:`skmcal.pipeline.PoolTransformer` maps rows of the pool
            to these nodes exactly (transforming one row alone may differ from
            transforming the pool in the last bits).

        See Also
        --------
        skmcal.pipeline.make_pool_pipeline : A pipeline built from it.
        """
        nodes = NodeSet(transformer.transform(self.data))
        nodes.source, nodes.transformer = self, transformer
        return nodes

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_index"] = None
        return state

    def _row_hash(self, X):
        """Two projections of each row: a signed one (the hash) and its scale."""
        rng = np.random.RandomState(_HASH_SEED)
        r = rng.uniform(0.5, 1.5, size=self.n_features) * rng.choice([-1.0, 1.0], self.n_features)
        h, scale = np.empty(X.shape[0]), np.empty(X.shape[0])
        chunk = max(1, 2**22 // max(1, self.n_features))
        for start in range(0, X.shape[0], chunk):
            block = X[start : start + chunk]
            h[start : start + chunk] = np.asarray(block @ r).ravel()
            scale[start : start + chunk] = np.asarray(abs(block) @ np.abs(r)).ravel()
        return h, scale

    def _sorted_index(self):
        if self._index is None:
            h, scale = self._row_hash(self.data)
            order = np.argsort(h, kind="stable")
            self._index = (h[order], order, float(scale.max(initial=0.0)))
        return self._index

    def _rows_equal(self, X, rows, nodes):
        """Whether ``X[rows[i]]`` equals node ``nodes[i]`` exactly, in chunks."""
        out = np.empty(rows.size, dtype=bool)
        chunk = max(1, 2**24 // max(1, self.n_features))
        for start in range(0, rows.size, chunk):
            sl = slice(start, start + chunk)
            a, b = X[rows[sl]], self.data[nodes[sl]]
            if sp.issparse(a) or sp.issparse(b):
                diff = sp.csr_matrix(a) - sp.csr_matrix(b)
                diff.eliminate_zeros()
                out[sl] = np.diff(diff.indptr) == 0
            else:
                out[sl] = np.all(a == b, axis=1)
        return out

    def lookup(self, X, *, distinct=False):
        """Index of the node equal to each row of ``X``, or -1 where none is.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_rows, n_features)
            Rows to look up; compared exactly (after conversion to float64).
        distinct : bool, default=False
            If True, repeated rows are spread over the equal nodes in order
            (the t-th copy gets the t-th equal node, cycling), so that
            duplicated points keep distinct nodes.

        Returns
        -------
        ndarray of shape (n_rows,)
        """
        if X.shape[1] != self.n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but the node set has {self.n_features}."
            )
        sorted_hash, order, scale = self._sorted_index()
        h, qscale = self._row_hash(X)
        eps = 1e-9 * np.maximum(qscale, scale) + 1e-300
        lo = np.searchsorted(sorted_hash, h - eps, side="left")
        hi = np.searchsorted(sorted_hash, h + eps, side="right")
        result = np.full(X.shape[0], -1, dtype=np.intp)
        single = np.flatnonzero(hi - lo == 1)
        if single.size:
            cand = order[lo[single]]
            ok = self._rows_equal(X, single, cand)
            result[single[ok]] = cand[ok]
        seen = {}
        for i in np.flatnonzero(hi - lo > 1):
            cand = np.sort(order[lo[i] : hi[i]])
            ok = cand[self._rows_equal(X, np.full(cand.size, i), cand)]
            if ok.size == 0:
                continue
            if distinct:
                key = int(ok[0])
                count = seen.get(key, 0)
                seen[key] = count + 1
                result[i] = ok[count % ok.size]
            else:
                result[i] = ok[0]
        return result


def node_set(nodes) -> NodeSet:
    """Return ``nodes`` as a :class:`NodeSet` (unchanged if it already is one)."""
    return nodes if isinstance(nodes, NodeSet) else NodeSet(nodes)


@dataclass(frozen=True)
class GraphParams:
    """Everything the graph and its spectrum depend on besides the node data."""

    kernel: str
    n_neighbors: int
    scale_neighbor: int
    scale_factor: float
    n_eigs: int
    neighbors: object = None
    random_state: object = None
    n_jobs: object = None

    @functools.cached_property
    def _neighbors_hash(self):
        return None if self.neighbors is None else joblib.hash(self.neighbors)

    def key(self, digest):
        """Content key of the graph of these parameters on nodes of ``digest``."""
        neighbors = self._neighbors_hash
        seed = self.random_state
        return (
            digest,
            self.kernel,
            self.n_neighbors,
            self.scale_neighbor,
            float(self.scale_factor),
            self.n_eigs,
            neighbors,
            seed,
        )


@dataclass(eq=False)
class SpectralGraph:
    """A similarity graph over a node set and the bottom of its spectrum.

    Attributes
    ----------
    weights : scipy.sparse.csr_matrix of shape (n_nodes, n_nodes)
        Symmetric affinity matrix ``W``.
    degrees : ndarray of shape (n_nodes,)
        Row sums of ``W``.
    eigenvalues : ndarray of shape (M,)
        The ``M`` smallest eigenvalues of ``L = I - D^-1/2 W D^-1/2``, ascending.
    eigenvectors : ndarray of shape (n_nodes, M)
        Orthonormal eigenvectors, each signed so that its largest entry is positive.
    n_components : int
        Connected components of the graph.
    residual : float
        Largest residual ``||L v - lambda v||_2`` of the computed eigenpairs.
    """

    params: GraphParams
    weights: sp.csr_matrix
    degrees: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    n_components: int
    residual: float
    scales: np.ndarray | None = None
    index: object = field(default=None, repr=False)

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.eigenvectors.shape[0]

    def __repr__(self) -> str:
        p, lam = self.params, self.eigenvalues
        n_edges = (self.weights.nnz + np.count_nonzero(self.weights.diagonal())) // 2
        spectrum = f"[{lam[0]:.3g}, ..., {lam[-1]:.3g}]" if lam.size else "[]"
        return (
            f"SpectralGraph(n_nodes={self.n_nodes}, n_edges={n_edges}, kernel={p.kernel!r}, "
            f"n_neighbors={p.n_neighbors}, n_eigs={lam.size}, eigenvalues={spectrum}, "
            f"n_components={self.n_components}, residual={self.residual:.1e})"
        )

    def extend(self, X):
        """Eigenvector values at new points (Nystrom extension).

        For a point ``x`` with affinities ``w_xj`` to the nodes (its kNN among
        them, weighted by the graph's own kernel; or the given row of
        affinities when ``kernel="precomputed"``) and degree ``d_x = sum_j w_xj``:

            v_i(x) = sum_j w_xj V_ji / sqrt(d_x d_j) / (1 - lambda_i).

        This reproduces ``V`` exactly on a node given its own row of ``W``.
        Components with ``|1 - lambda_i| < NYSTROM_MIN_GAP`` use the
        weighted neighbour average ``sum_j w_xj V_ji / d_x`` instead; a point
        with no positive affinity gets zeros.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_points, n_features)

        Returns
        -------
        ndarray of shape (n_points, M)
        """
        affinity = self._affinity_to_nodes(X)
        d_x = np.asarray(affinity.sum(axis=1)).ravel()
        out = np.zeros((X.shape[0], self.eigenvalues.size))
        has = d_x > 0
        if not has.any():
            return out
        affinity = affinity[has]
        inv_sqrt_deg = _inverse_sqrt(self.degrees)
        nystrom = np.asarray(affinity @ (self.eigenvectors * inv_sqrt_deg[:, None]))
        nystrom /= np.sqrt(d_x[has])[:, None]
        gap = 1.0 - self.eigenvalues
        ok = np.abs(gap) >= NYSTROM_MIN_GAP
        rows = np.empty_like(nystrom)
        rows[:, ok] = nystrom[:, ok] / gap[ok]
        if not ok.all():
            average = np.asarray(affinity @ self.eigenvectors[:, ~ok]) / d_x[has][:, None]
            rows[:, ~ok] = average
        out[has] = rows
        return out

    def _affinity_to_nodes(self, X):
        p = self.params
        if p.kernel == "precomputed":
            affinity = sp.csr_matrix(X, dtype=float)
            if affinity.shape[1] != self.n_nodes:
                raise ValueError(
                    f"With kernel='precomputed', X must have one column per node "
                    f"({self.n_nodes}); got {affinity.shape[1]}."
                )
            return affinity
        n_query = max(p.n_neighbors, p.scale_neighbor if p.kernel == "gaussian" else 0)
        dist, ind = _query_neighbors(self.index, X, n_query)
        weights = _kernel_weights(p, dist, ind, self.scales, own_scales=None)
        rows = np.repeat(np.arange(X.shape[0]), p.n_neighbors)
        return sp.csr_matrix(
            (weights.ravel(), (rows, ind[:, : p.n_neighbors].ravel())),
            shape=(X.shape[0], self.n_nodes),
        )


def _inverse_sqrt(d):
    out = np.zeros_like(d, dtype=float)
    pos = d > 0
    out[pos] = 1.0 / np.sqrt(d[pos])
    return out


def _node_neighbors(params: GraphParams, data, k):
    """Fit the neighbour index on the nodes; the ``k`` nearest other nodes of each.

    A ``KNeighborsTransformer``-like object is fitted with ``fit_transform``,
    whose graph already holds every node's neighbours (no second search).
    """
    if params.neighbors is not None:
        try:
            index = clone(params.neighbors)
        except TypeError:
            index = copy.deepcopy(params.neighbors)
        if hasattr(index, "fit_transform"):
            graph = index.fit_transform(data)
        else:
            graph = index.fit(data).transform(data)
        return index, *_neighbors_from_graph(graph, k, exclude_self=True, source=index)
    metric = "cosine" if params.kernel == "cosine" else "euclidean"
    algorithm = "brute" if metric == "cosine" or sp.issparse(data) else "auto"
    index = NearestNeighbors(metric=metric, algorithm=algorithm, n_jobs=params.n_jobs).fit(data)
    return index, *index.kneighbors(None, n_neighbors=k)


def _query_neighbors(index, X, k):
    """The ``k`` nearest nodes of each row of new points ``X``: ``(distances, indices)``.

    ``index`` is a fitted :class:`~sklearn.neighbors.NearestNeighbors` or any
    fitted ``KNeighborsTransformer``-like object (its ``transform`` gives a
    sparse distance graph).
    """
    if isinstance(index, NearestNeighbors):
        return index.kneighbors(X, n_neighbors=k)
    return _neighbors_from_graph(index.transform(X), k, exclude_self=False, source=index)


def _neighbors_from_graph(graph, k, *, exclude_self, source):
    """The ``k`` smallest distances of each row of a sparse distance graph, (n, k) each.

    With ``exclude_self`` (the rows are the nodes themselves) a node is never
    its own neighbour.
    """
    G = sp.csr_matrix(graph)
    rows = np.repeat(np.arange(G.shape[0]), np.diff(G.indptr))
    keep = rows != G.indices if exclude_self else np.ones(G.nnz, dtype=bool)
    rows, cols, dist = rows[keep], G.indices[keep], G.data[keep]
    counts = np.bincount(rows, minlength=G.shape[0])
    if counts.min(initial=k) < k:
        raise ValueError(
            f"The neighbors transformer {type(source).__name__} gave {counts.min()} "
            f"neighbours for some rows; {k} are needed (n_neighbors and "
            f"scale_neighbor). Increase its n_neighbors."
        )
    order = np.lexsort((dist, rows))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    take = order[(starts[:, None] + np.arange(k)).ravel()]
    return dist[take].reshape(-1, k), cols[take].reshape(-1, k)


def _local_scales(params: GraphParams, dist):
    """Self-tuning scale: distance to the ``scale_neighbor``-th neighbour.

    A zero scale (duplicate points) is replaced by the smallest positive
    distance to a neighbour, and where there is none by the median positive
    scale, so that no weight divides by zero.
    """
    sigma = dist[:, params.scale_neighbor - 1].copy()
    zero = sigma <= 0
    if zero.any():
        positive = np.where(dist[zero] > 0, dist[zero], np.inf).min(axis=1)
        sigma[zero] = positive
        still = ~np.isfinite(sigma)
        if still.any():
            finite = sigma[np.isfinite(sigma) & (sigma > 0)]
            if finite.size == 0:
                raise ValueError(
                    "All nodes and their neighbours coincide (every kNN distance "
                    "is 0): the Gaussian kernel has no scale. Remove duplicate "
                    "points or pass kernel='precomputed'."
                )
            sigma[still] = np.median(finite)
    return sigma


def _kernel_weights(params: GraphParams, dist, ind, node_scales, own_scales):
    """Edge weights to the first ``n_neighbors`` neighbours, shape (n, n_neighbors)."""
    k = params.n_neighbors
    if params.kernel == "cosine":
        return np.clip(1.0 - dist[:, :k], 0.0, None)
    if own_scales is None:
        own_scales = _local_scales(params, dist)
    # (d / sigma_i) (d / sigma_j) / s rather than d^2 / (s sigma_i sigma_j): no
    # overflow of d^2 for far-away points.
    d = dist[:, :k]
    return np.exp(-(d / own_scales[:, None]) * (d / node_scales[ind[:, :k]]) / params.scale_factor)


def _affinity(params: GraphParams, data):
    """Symmetric affinity ``W`` of the node data, the local scales and the index."""
    n = data.shape[0]
    if params.kernel == "precomputed":
        W = sp.csr_matrix(data)
        if W.shape[0] != W.shape[1]:
            raise ValueError(
                f"With kernel='precomputed' the nodes must form a square affinity "
                f"matrix; got shape {W.shape}."
            )
        if W.nnz and W.data.min() < 0:
            raise ValueError(
                f"A precomputed affinity must be non-negative; its smallest entry "
                f"is {W.data.min()}."
            )
        return ((W + W.T) * 0.5).tocsr(), None, None
    n_query = max(params.n_neighbors, params.scale_neighbor if params.kernel == "gaussian" else 0)
    index, dist, ind = _node_neighbors(params, data, n_query)
    scales = _local_scales(params, dist) if params.kernel == "gaussian" else None
    weights = _kernel_weights(params, dist, ind, scales, scales)
    rows = np.repeat(np.arange(n), params.n_neighbors)
    W = sp.csr_matrix((weights.ravel(), (rows, ind[:, : params.n_neighbors].ravel())), shape=(n, n))
    return ((W + W.T) * 0.5).tocsr(), scales, index


def laplacian_spectrum(W, n_eigs, random_state=None):
    """The ``n_eigs`` smallest eigenpairs of ``L = I - D^-1/2 W D^-1/2``.

    Computed as the largest eigenpairs of ``A = D^-1/2 W D^-1/2`` (dense
    ``eigh`` on small graphs, ARPACK ``eigsh(which="LA")`` otherwise), with
    each eigenvector signed so that its entry of largest magnitude is positive.

    Returns
    -------
    eigenvalues : ndarray of shape (n_eigs,)
        Ascending, clipped at 0.
    eigenvectors : ndarray of shape (n_nodes, n_eigs)
    residual : float
        ``max_i ||A v_i - (1 - lambda_i) v_i||_2``.
    """
    n = W.shape[0]
    degrees = np.asarray(W.sum(axis=1)).ravel()
    s = _inverse_sqrt(degrees)
    A = sp.diags(s) @ W @ sp.diags(s)
    A = ((A + A.T) * 0.5).tocsr()
    if n <= DENSE_EIGEN_MAX_NODES or 3 * n_eigs >= n:
        # numpy's eigh, not scipy's: see the note on OpenBLAS in posterior.py.
        mu, V = np.linalg.eigh(A.toarray())
        mu, V = mu[n - n_eigs :], V[:, n - n_eigs :]
    else:
        rng = check_random_state(random_state)
        v0 = rng.uniform(-1.0, 1.0, size=n) if random_state is not None else None
        mu, V = eigsh(
            A, k=n_eigs, which="LA", v0=v0, ncv=min(n, max(2 * n_eigs + 1, 100)), tol=EIGSH_TOL
        )
    order = np.argsort(-mu, kind="stable")
    mu, V = mu[order], np.ascontiguousarray(V[:, order])
    residual = float(np.linalg.norm(A @ V - V * mu, axis=0).max(initial=0.0))
    flip = V[np.abs(V).argmax(axis=0), np.arange(V.shape[1])] < 0
    V[:, flip] *= -1.0
    eigenvalues = np.clip(1.0 - mu, 0.0, None)
    return eigenvalues, V, residual


def build_graph(data, params: GraphParams) -> SpectralGraph:
    """Build the graph of ``params`` over the node data and its spectrum."""
    W, scales, index = _affinity(params, data)
    degrees = np.asarray(W.sum(axis=1)).ravel()
    isolated = int(np.sum(degrees <= 0))
    if isolated:
        warnings.warn(
            f"{isolated} node(s) have no edge of positive weight; their latent "
            f"values stay at the prior mean 0.",
            UserWarning,
            stacklevel=3,
        )
    n_components = int(connected_components(W, directed=False)[0])
    eigenvalues, V, residual = laplacian_spectrum(W, params.n_eigs, params.random_state)
    if residual > EIGEN_RESIDUAL_TOL:
        warnings.warn(
            f"The computed eigenpairs have residual {residual:.2e} "
            f"(> {EIGEN_RESIDUAL_TOL:.0e}); the spectrum may be inaccurate.",
            UserWarning,
            stacklevel=3,
        )
    for arr in (eigenvalues, V, degrees):
        arr.flags.writeable = False
    return SpectralGraph(
        params=params,
        weights=W,
        degrees=degrees,
        eigenvalues=eigenvalues,
        eigenvectors=V,
        n_components=n_components,
        residual=residual,
        scales=scales,
        index=index,
    )


class GraphCache:
    """A small least-recently-used cache of spectral graphs, keyed by content.

    The key is the :class:`NodeSet` digest plus every graph parameter
    (:meth:`GraphParams.key`), so a hit is always the graph that would have
    been built. Graphs built with a ``numpy.random.RandomState`` as
    ``random_state`` are never cached.

    Parameters
    ----------
    maxsize : int, default=4
        Number of graphs kept.
    """

    def __init__(self, maxsize: int = 4):
        self.maxsize = maxsize
        self._store: OrderedDict = OrderedDict()
        self.builds = 0

    def get_or_build(self, nodes: NodeSet, params: GraphParams) -> SpectralGraph:
        """The graph of ``params`` on ``nodes``, from the cache or freshly built."""
        cacheable = params.random_state is None or isinstance(
            params.random_state, (int, np.integer)
        )
        key = params.key(nodes.digest) if cacheable else None
        if key is not None and key in self._store:
            self._store.move_to_end(key)
            return self._store[key]
        graph = build_graph(nodes.data, params)
        self.builds += 1
        if key is not None and self.maxsize > 0:
            self._store[key] = graph
            while len(self._store) > self.maxsize:
                self._store.popitem(last=False)
        return graph

    def clear(self):
        """Forget every cached graph."""
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)


#: The process-wide graph cache used by :class:`~skmcal.SpectralGraphClassifier`.
GRAPH_CACHE = GraphCache()


def clear_graph_cache():
    """Empty :data:`GRAPH_CACHE`."""
    GRAPH_CACHE.clear()
