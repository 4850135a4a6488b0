"""Similarity graph, normalised-Laplacian spectrum and out-of-sample extension.

The data path is ``X -> kNN affinity W -> (lambda, V)``. All of it depends on
the node data and the graph parameters only, never on the loss, ``tau`` or
``gamma``; :class:`NodeSet` and the content-keyed :data:`~skmcal.GRAPH_CACHE` make sure
it is computed once per node set and shared by every estimator (and clone)
that uses the same nodes and graph parameters.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import logging
import os
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import joblib
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee
from scipy.sparse.linalg import LinearOperator, eigsh
from scipy.sparse.linalg import norm as sparse_norm
from sklearn.base import clone
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state
from threadpoolctl import threadpool_limits

from skmcal._sparse import block_product, limit_threads
from skmcal._threads import n_jobs_threads
from skmcal._warnings import warn_user

#: Above this many nodes the spectrum is computed by ARPACK (eigsh); at or
#: below it, or when ``n_eigs`` is a third of the nodes or more, by dense ``eigh``.
DENSE_EIGEN_MAX_NODES = 1000

#: ARPACK's relative tolerance. At 70,000 Fashion-MNIST nodes it gives
#: residuals ~1e-8 and eigenvalues within 2e-9 of tol=0 (machine precision),
#: in 7.2 s instead of 9.4 s.
EIGSH_TOL = 1e-8

#: Above this many nodes the spectrum is computed by Chebyshev-filtered
#: subspace iteration in float32 (:func:`chebyshev_eigenpairs`) instead of
#: ARPACK. Measured on 64-d embeddings with 50 eigenpairs, one thread
#: (``benchmarks/bench_spectrum.py``): at 1,000,000 nodes ARPACK takes 175 CPU
#: seconds and 1.76 GiB, the subspace iteration 201 s and 1.05 GiB, with the
#: same classifier accuracy; ARPACK's 100 float64 Lanczos vectors (8 GB at
#: 10,000,000 nodes) are what a one-machine build cannot afford.
CHEBYSHEV_MIN_NODES = 2_000_000

#: Above this many nodes a graph does not keep the fitted neighbour search
#: (the index that places new points): it is dropped after the kNN search,
#: before the spectrum, and :meth:`~skmcal.SpectralGraph.neighbor_index` fits it
#: again on the nodes the first time a row that is not a node is predicted
#: (as for a graph loaded from a ``memory`` cache). Measured with pynndescent
#: on 64 features (``benchmarks/results/bench_scale_3m.md``): the index is
#: 1.18 GiB at 3,000,000 nodes (0.41 KB per node; ~3.9 GiB at 10,000,000),
#: as much as the spectrum's vectors, while fitting it again costs about
#: one kNN search (measured, one thread: 6.7 s at 100,000 nodes; the kNN
#: search took 77-129 s at 1,000,000), paid only if new points are predicted. Set it to 0 never to
#: keep an index.
INDEX_MAX_NODES = 1_000_000

#: Residual ``||A v - mu v||`` at which the float32 subspace iteration stops
#: (its float32 arithmetic reaches about 1e-6).
CHEBYSHEV_TOL = 1e-5

#: Largest acceptable residual ``||A v - mu v||`` of a computed eigenpair.
EIGEN_RESIDUAL_TOL = 1e-4

#: A new point whose nearest node lies within this fraction of the larger of
#: its Euclidean norm and the node's local scale counts as that node: the
#: difference is at the level of float32 rounding or of the round-off of the
#: neighbour search, not a distance between points.
NODE_MATCH_RTOL = 1e-6

#: A new point whose largest kernel weight to a node is below this lies far
#: outside the graph (for the self-tuning kernel, some 50 local scales away):
#: its values are extrapolated from its nearest nodes, with a warning.
EXTRAPOLATION_MIN_WEIGHT = 1e-8

_HASH_SEED = 20211201

logger = logging.getLogger(__name__)


def phase_level(verbose) -> int:
    """The logging level of progress messages: INFO when ``verbose``, DEBUG otherwise.

    With ``verbose`` set, the logger ``"skmcal"`` is made to show them when
    logging is not configured: its level is set to INFO if it has none, and a
    handler writing to standard error is added if no logger on its path has
    one. A level or handlers configured by the user are left alone.
    """
    if not verbose:
        return logging.DEBUG
    package = logging.getLogger("skmcal")
    if package.level == logging.NOTSET:
        package.setLevel(logging.INFO)
    if not package.hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[skmcal] %(message)s"))
        package.addHandler(handler)
    return logging.INFO


class _Timer:
    """Seconds since it was made (or last read) and the total."""

    def __init__(self):
        self.start = self.last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        seconds, self.last = now - self.last, now
        return seconds

    def total(self) -> float:
        return time.perf_counter() - self.start


#: The dtypes node data keep; any other (integers, float16, ...) becomes float64.
NODE_DTYPES = (np.float64, np.float32)


def _as_node_array(X, copy=True):
    """Validate node data: finite float64 or float32, dense C-contiguous or canonical CSR.

    float32 stays float32 (no float64 copy): hashing, equal-row search and the
    kNN search read it as it is, and every distance the graph uses is
    converted to float64 before any weight is computed.
    """
    X = check_array(
        X,
        accept_sparse="csr",
        dtype=list(NODE_DTYPES),
        order="C",
        ensure_all_finite=True,
        copy=copy,
        input_name="nodes",
    )
    if sp.issparse(X) and not X.has_canonical_format:
        if not copy:
            X = X.copy()
        X.sum_duplicates()
        X.sort_indices()
    return X


def _exact_row_hash(X):
    """A 64-bit hash of each row's values, equal for equal rows (``-0.0 == 0.0``).

    float32 rows are hashed through the bits of their float32 values (no
    float64 copy of the data); the hash is then only comparable between
    arrays of one dtype, which is all :func:`~skmcal.graph.first_equal_rows` needs.
    """
    n, d = X.shape
    rng = np.random.RandomState(_HASH_SEED)
    mult = rng.randint(1, 2**62, size=d, dtype=np.int64).astype(np.uint64) * np.uint64(2) + 1
    values = X.data if sp.issparse(X) else X
    bits = np.uint32 if values.dtype == np.float32 else np.uint64
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    if sp.issparse(X):
        terms = (values + values.dtype.type(0)).view(bits).astype(np.uint64) * mult[X.indices]
        out = np.zeros(n, dtype=np.uint64)
        nonempty = np.diff(X.indptr) > 0
        if terms.size:
            out[nonempty] = np.add.reduceat(terms, X.indptr[:-1][nonempty], dtype=np.uint64)
        return out
    out = np.empty(n, dtype=np.uint64)
    chunk = max(1, 2**22 // max(1, d))
    for start in range(0, n, chunk):
        block = (values[start : start + chunk] + values.dtype.type(0)).view(bits)
        out[start : start + chunk] = (block.astype(np.uint64) * mult).sum(axis=1, dtype=np.uint64)
    return out


def _equal_to_row(X, rows, ref):
    """Whether each of ``X[rows]`` equals ``X[ref]`` exactly."""
    a, b = X[rows], X[[ref]]
    if sp.issparse(X):
        diff = sp.csr_matrix(a - sp.vstack([b] * rows.size))
        diff.eliminate_zeros()
        return np.diff(diff.indptr) == 0
    return np.all(a == b, axis=1)


def first_equal_rows(X) -> np.ndarray:
    """Index of the first row equal to each row of ``X`` (the row itself if none earlier).

    Rows are compared exactly, by value (``-0.0`` equals ``0.0``; a sparse
    row equals the dense row of the same values). A 64-bit hash of the
    values finds the candidates; equal hashes are confirmed row by row.

    Parameters
    ----------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_rows, n_features)
        Finite float64 or float32 data, as held by a :class:`NodeSet`.

    Returns
    -------
    ndarray of shape (n_rows,)
        ``first[i] <= i``; ``first[i] == i`` for the first of each group of
        equal rows (and for a row equal to no other).

    Examples
    --------
    >>> import numpy as np
    >>> from skmcal.graph import first_equal_rows
    >>> first_equal_rows(np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [-0.0, 0.0]]))
    array([0, 1, 0, 1])
    """
    n = X.shape[0]
    first = np.arange(n)
    h = _exact_row_hash(X)
    order = np.argsort(h, kind="stable")
    h = h[order]
    same = np.flatnonzero(h[1:] == h[:-1])
    if same.size == 0:
        return first
    # Runs of equal hashes: [starts[r], ends[r]) in the sorted order.
    starts = same[np.r_[True, np.diff(same) > 1]]
    ends = same[np.r_[np.diff(same) > 1, True]] + 2
    for lo, hi in zip(starts, ends, strict=True):
        rows = np.sort(order[lo:hi])
        while rows.size > 1:
            equal = _equal_to_row(X, rows, rows[0])
            first[rows[equal]] = rows[0]
            rows = rows[~equal]
    return first


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
        The node data, kept as float64 or float32 (any other dtype becomes
        float64), C-contiguous (or canonical CSR) and read-only. float32 is
        not widened: hashing, look-ups and the kNN search read it as it is,
        and every kNN distance is converted to float64 before the weights
        are computed (so the graph is that of the float32 values, computed in
        double precision; the node set of ``X.astype(np.float64)`` is another
        node set, with another digest). With ``kernel="precomputed"`` it is
        the square affinity matrix.
    copy : bool, default=True
        Copy the data (once; never to a wider dtype). False: use ``X``
        itself when it is already a C-contiguous float64 or float32 array (or
        a canonical CSR matrix of those), and make it read-only in place
        (``X.flags.writeable = False``) so that it cannot change under the
        graph cache; this saves one copy of the data (2.6 GB for 10 million
        rows of 64 float32). Other inputs are copied anyway.

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

    def __init__(self, X, *, copy: bool = True):
        start = time.perf_counter()
        self.data = _as_node_array(X, copy=copy)
        if sp.issparse(self.data):
            for part in (self.data.data, self.data.indices, self.data.indptr):
                part.flags.writeable = False
        else:
            self.data.flags.writeable = False
        self.digest = self._hash(self.data)
        logger.debug(
            "NodeSet of %d x %d %s: validated and hashed in %.2f s.",
            *self.data.shape, self.data.dtype, time.perf_counter() - start,
        )  # fmt: skip
        self._index = None
        self.source = self.transformer = None
        self._first_equal = None

    @staticmethod
    def _hash(X):
        h = hashlib.blake2b(digest_size=20)
        # float64 data keep the digests of earlier versions (experiment configs record them).
        dtype = () if X.dtype == np.float64 else (X.dtype.str,)
        h.update(repr((type(X).__name__, X.shape, *dtype)).encode())
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

    @property
    def first_equal(self) -> np.ndarray:
        """Index of the first node equal to each node (see :func:`~skmcal.graph.first_equal_rows`).

        Equal rows are one point: :meth:`lookup` maps a row to the first of
        its equal nodes, and the query strategies score and return only that
        one (read-only, computed once).
        """
        if getattr(self, "_first_equal", None) is None:
            first = first_equal_rows(self.data)
            first.flags.writeable = False
            self._first_equal = first
        return self._first_equal

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
            Rows to look up; compared exactly (after conversion to float64),
            float64 rows rounded to float32 first where the node set holds
            float32 data: the precision its nodes are told apart at.
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
        if self.data.dtype == np.float32 and X.dtype == np.float64:
            X = X.astype(np.float32)
        sorted_hash, order, scale = self._sorted_index()
        h, qscale = self._row_hash(X)
        eps = 1e-9 * np.maximum(qscale, scale) + np.finfo(float).tiny
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


def dtype_hint(X, nodes: NodeSet) -> str:
    """A sentence for a look-up's error where ``X`` holds float32 rows and ``nodes``
    float64 data (float64 rows of float32 nodes are rounded to them), else ``""``."""
    if getattr(X, "dtype", None) == np.float32 and nodes.data.dtype == np.float64:
        return (
            " X is float32 but the nodes are float64: rows are compared exactly, so "
            "pass the rows as the nodes hold them (float64), or build the NodeSet on "
            "float32 data."
        )
    return ""


#: Arrays of at most this many values are hashed whole by :func:`array_fingerprint`.
FINGERPRINT_FULL_MAX_VALUES = 2**16

#: Larger arrays are hashed on evenly spaced rows holding about this many values
#: (at least 64 rows, all of them if fewer).
FINGERPRINT_SAMPLE_VALUES = 2**14


def array_fingerprint(X) -> str | None:
    """A cheap summary of a NumPy array or CSR matrix: its identity and a sample of its values.

    It holds the type, shape, dtype, strides and memory address of every
    array of ``X`` (a CSR matrix's ``data``, ``indices`` and ``indptr``), and
    a hash of its values: all of them for arrays of at most
    :data:`FINGERPRINT_FULL_MAX_VALUES` values, otherwise those of evenly
    spaced rows (about :data:`FINGERPRINT_SAMPLE_VALUES` values, at least 64
    rows). It costs well under a millisecond at any size.

    An array replaced by another, reshaped, re-typed or edited in a sampled
    row gets another fingerprint; an edit in place of an unsampled row of a
    large array does not: pass a new array (or a :class:`NodeSet`) after such
    an edit. This is the guarantee of every look-up that skmcal remembers by
    identity (:func:`node_set`, the pool of the query strategies).

    Parameters
    ----------
    X : object
        Anything; only NumPy arrays and CSR matrices get a fingerprint.

    Returns
    -------
    str or None
        None for other objects (never remembered).
    """
    if isinstance(X, np.ndarray):
        parts = (X,)
    elif sp.issparse(X) and X.format == "csr":
        parts = (X.data, X.indices, X.indptr)
    else:
        return None
    h = hashlib.blake2b(digest_size=16)
    meta = [type(X).__name__, X.shape]
    for a in parts:
        meta.append((a.dtype.str, a.shape, a.strides, a.__array_interface__["data"][0]))
        if a.size > FINGERPRINT_FULL_MAX_VALUES and a.ndim:
            per_row = max(1, a.size // max(1, a.shape[0]))
            n_rows = min(a.shape[0], max(64, FINGERPRINT_SAMPLE_VALUES // per_row))
            a = a[np.linspace(0, a.shape[0] - 1, n_rows).astype(np.intp)]
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(repr(meta).encode())
    return h.hexdigest()


class IdentityMemo:
    """Values computed from arrays, remembered while the array lives and is unchanged.

    An entry is found again for the same object (by identity, checked
    through a weak reference) with the same :func:`array_fingerprint`; it is
    dropped when the object is garbage collected, or when more than
    ``maxsize`` entries are held (least recently used first). The memo never
    keeps an array alive. Objects without a fingerprint (lists, DataFrames)
    are computed every time.

    Parameters
    ----------
    maxsize : int, default=4
        Entries kept.
    """

    def __init__(self, maxsize: int = 4):
        self.maxsize = maxsize
        self._store: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, obj, key, compute):
        """``compute()``, or the value remembered for ``(obj, key)``."""
        fingerprint = array_fingerprint(obj)
        if fingerprint is None or self.maxsize <= 0:
            return compute()
        slot = (id(obj), key)
        with self._lock:
            entry = self._store.get(slot)
            if entry is not None and entry[0]() is obj and entry[1] == fingerprint:
                self._store.move_to_end(slot)
                return entry[2]
        value = compute()
        ref = weakref.ref(obj, functools.partial(self._forget, slot))
        with self._lock:
            self._store[slot] = (ref, fingerprint, value)
            self._store.move_to_end(slot)
            while len(self._store) > self.maxsize:
                self._store.popitem(last=False)
        return value

    def _forget(self, slot, ref):
        with self._lock:
            entry = self._store.get(slot)
            if entry is not None and entry[0] is ref:
                del self._store[slot]

    def clear(self):
        """Forget every entry."""
        with self._lock:
            self._store.clear()

    def __len__(self) -> int:
        return len(self._store)


#: The node sets of the arrays given as ``nodes``: an unchanged array is never rehashed.
NODE_SETS = IdentityMemo()


def node_set(nodes) -> NodeSet:
    """Return ``nodes`` as a :class:`NodeSet` (unchanged if it already is one).

    The node set of a NumPy array or CSR matrix is remembered (in
    :data:`NODE_SETS`) while that array lives and keeps its
    :func:`array_fingerprint`: an estimator with ``nodes=X`` refitted in an
    active-learning loop hashes ``X`` once, not at every fit. An array edited
    in place must be passed anew (a copy) for the edit to be seen, unless it
    is small (see :func:`array_fingerprint`).
    """
    if isinstance(nodes, NodeSet):
        return nodes
    return NODE_SETS.get(nodes, "nodes", lambda: NodeSet(nodes))


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
    params : GraphParams
        The parameters in effect (``n_neighbors`` and ``scale_neighbor``
        clipped below the number of distinct points).
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
    scales : ndarray of shape (n_nodes,) or None
        The local scale ``sigma_i`` of each node (Gaussian kernel), in the
        units of the data; None for the other kernels.
    index : object
        The fitted neighbour search over the distinct points (None for
        ``kernel="precomputed"``). A graph of more than
        :data:`~skmcal.graph.INDEX_MAX_NODES` nodes does not keep it, nor does a graph
        loaded from a ``memory`` cache on disk: it is None until a new point
        needs it, and :meth:`neighbor_index` then fits it again on the nodes.
    component_labels : ndarray of shape (n_nodes,)
        The connected component of each node, ``0`` to ``n_components - 1``.
    point_nodes : ndarray of shape (n_points,) or None
        The first node of each point of ``index`` when some nodes are equal
        (None: point ``i`` is node ``i``).
    node_points : ndarray of shape (n_nodes,) or None
        The point of ``index`` of each node (None: node ``i`` is point ``i``).
    data_scale : float
        The power of two the data is multiplied by before any distance
        (1.0 unless its magnitude lies outside ``[2^-64, 2^64]``).
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
    component_labels: np.ndarray | None = field(default=None, repr=False)
    point_nodes: np.ndarray | None = field(default=None, repr=False)
    node_points: np.ndarray | None = field(default=None, repr=False)
    data_scale: float = 1.0

    #: The node data the graph was built on (not stored with the graph on disk).
    _data = None

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.eigenvectors.shape[0]

    @functools.cached_property
    def laplacian_trace(self) -> float:
        """``tr L`` (:func:`laplacian_trace`), computed once: the weights never change."""
        return laplacian_trace(self.weights, self.degrees)

    @property
    def n_points(self) -> int:
        """Number of distinct points (equal nodes are one point)."""
        return self.n_nodes if self.point_nodes is None else self.point_nodes.size

    def neighbor_index(self):
        """The fitted neighbour search over the distinct points, fitted now if missing.

        A graph loaded from a ``memory`` cache leaves its index behind (it may
        not pickle, and it holds the data again), and a graph of more than
        :data:`~skmcal.graph.INDEX_MAX_NODES` nodes drops it after the kNN search (it costs
        as much memory as the graph); it is fitted again here, on the nodes,
        the first time a new point is placed on the graph, and kept. With
        approximate neighbours (a ``neighbors`` transformer) the refitted
        index is an equivalent one, not the same object: new points may get
        slightly different neighbours than from the index of the first build.
        """
        if self.index is None and self.params.kernel != "precomputed":
            if self._data is None:
                raise ValueError(
                    "This graph has no neighbour index and no node data to fit one on."
                )
            points = self._data if self.point_nodes is None else self._data[self.point_nodes]
            if self.data_scale != 1.0:
                points = points * self.data_scale
            start = time.perf_counter()
            self.index = _new_index(self.params, points).fit(points)
            logger.debug(
                "Neighbour index over %d points fitted again: %.2f s.",
                points.shape[0], time.perf_counter() - start,
            )  # fmt: skip
        return self.index

    def point_sources(self, labeled_nodes) -> np.ndarray | None:
        """The node whose values each node reports: one per point, a labeled one first.

        Equal nodes are one point, joined with weight 1, and unlabeled ones get
        equal latent values. A label on one of them, though, ties that node
        alone, and its unlabeled copies stay with their neighbours: a copy of
        a labeled row would be predicted apart from it (and the query
        strategies never offer it). So every node of a point reports the
        values of the point's smallest labeled node where one is labeled,
        else of its first node; labeled nodes keep their own (two copies with
        different labels each keep theirs).

        Parameters
        ----------
        labeled_nodes : array-like of int
            The labeled nodes.

        Returns
        -------
        ndarray of shape (n_nodes,) or None
            The source node of every node; None where every point is one node.
        """
        if self.node_points is None:
            return None
        labeled = np.sort(np.asarray(labeled_nodes, dtype=np.intp))
        point_source = self.point_nodes.copy()
        points, smallest = np.unique(self.node_points[labeled], return_index=True)
        point_source[points] = labeled[smallest]
        source = point_source[self.node_points]
        source[labeled] = labeled
        return source

    def __repr__(self) -> str:
        p, lam = self.params, self.eigenvalues
        n_edges = (self.weights.nnz + np.count_nonzero(self.weights.diagonal())) // 2
        spectrum = f"[{lam[0]:.3g}, ..., {lam[-1]:.3g}]" if lam.size else "[]"
        return (
            f"SpectralGraph(n_nodes={self.n_nodes}, n_edges={n_edges}, kernel={p.kernel!r}, "
            f"n_neighbors={p.n_neighbors}, n_eigs={lam.size}, eigenvalues={spectrum}, "
            f"n_components={self.n_components}, residual={self.residual:.1e})"
        )

    def interpolation_weights(self, X) -> sp.csr_matrix:
        """Weights of new points over the nodes: values at ``X`` are ``weights @ u``.

        Each row of ``X`` gets the graph's own kernel weights to its
        ``n_neighbors`` nearest nodes (the Gaussian kernel with the row's own
        self-tuning scale, or the cosine kernel; with
        ``kernel="precomputed"``, the row itself, a row of affinities to the
        nodes), normalised to sum to 1. A function ``u`` on the nodes is so
        extended by the weighted average of its values at the neighbours, the
        value that minimises the graph's Dirichlet energy ``sum_j w_xj (u_x -
        u_j)^2`` of the new point.

        A row whose nearest node lies at a numerically zero distance (below
        :data:`~skmcal.graph.NODE_MATCH_RTOL` times the larger of the row's norm and the
        node's local scale; with the cosine kernel, a chord of
        ``NODE_MATCH_RTOL`` between the rows scaled to unit length, or the
        round-off of float32 data; exact equality with ``kernel="precomputed"``)
        gets weight 1 on that node alone, so every node's own values are
        reproduced, also from a float32 copy of the node. Of equal nodes, the
        first is taken.

        Gaussian weights are normalised in log space, so a point far from
        every node still gets weights on its nearest nodes; rows whose
        largest kernel weight is below :data:`~skmcal.graph.EXTRAPOLATION_MIN_WEIGHT` are
        counted in a warning. A row with no positive affinity (cosine or
        precomputed) is a zero row, with a warning.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_rows, n_features)

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_rows, n_nodes)
            Non-negative; each row sums to 1 (or is zero).
        """
        if self.params.kernel == "precomputed":
            weights = self._precomputed_rows(X)
        else:
            weights = self._kernel_rows(X)
        total = np.asarray(weights.sum(axis=1)).ravel()
        empty = total <= 0
        if empty.any():
            warn_user(
                f"{int(empty.sum())} row(s) of X have no positive affinity to any node; "
                f"nothing is known there (zero weights).",
                UserWarning,
            )
        scale = np.divide(1.0, total, out=np.zeros_like(total), where=~empty)
        return sp.csr_matrix(sp.diags(scale) @ weights)

    def _cosine_match_tolerance(self, X) -> float:
        """The cosine distance below which a row counts as its nearest node.

        ``1 - cos = |x/|x| - x_j/|x_j||^2 / 2``: a chord of :data:`~skmcal.graph.NODE_MATCH_RTOL`
        on the unit sphere, as the Gaussian kernel's relative tolerance, unless
        the round-off of ``1 - cos`` in the precision of the rows or of the
        node data (float32: about 1e-7; float32 too where the node data is not
        held) is larger. A tolerance of ``NODE_MATCH_RTOL`` on ``1 - cos``
        itself matched every row within an angle of ``1.4e-3`` of a node: as
        a row moved out of that cone, its value jumped from the node's to its
        neighbours' average (all cosine weights near one there).
        """
        dtypes = [getattr(X, "dtype", np.float64)]
        dtypes.append(self._data.dtype if self._data is not None else np.float32)
        eps = max(
            np.finfo(d).eps if np.issubdtype(d, np.floating) else np.finfo(np.float64).eps
            for d in dtypes
        )
        return max(NODE_MATCH_RTOL**2 / 2.0, 16.0 * eps)

    def _precomputed_rows(self, X):
        affinity = sp.csr_matrix(X, dtype=float)
        if affinity.shape[1] != self.n_nodes:
            raise ValueError(
                f"With kernel='precomputed', X must have one column per node "
                f"({self.n_nodes}); got {affinity.shape[1]}."
            )
        if affinity.nnz and affinity.data.min() < 0:
            raise ValueError(
                f"A precomputed affinity must be non-negative; X's smallest entry is "
                f"{affinity.data.min()}."
            )
        return affinity

    def _kernel_rows(self, X):
        p = self.params
        if self.data_scale != 1.0:
            X = X * self.data_scale
        n_query = max(p.n_neighbors, p.scale_neighbor if p.kernel == "gaussian" else 0)
        dist, ind = _query_neighbors(self.neighbor_index(), X, n_query)
        k, n = p.n_neighbors, X.shape[0]
        point_scales = None
        if self.scales is not None:
            node_scales = self.scales if self.point_nodes is None else self.scales[self.point_nodes]
            point_scales = node_scales * self.data_scale
        if p.kernel == "cosine":
            weights = np.clip(1.0 - dist[:, :k], 0.0, None)
            tolerance = np.full(n, self._cosine_match_tolerance(X))
        else:
            own = _local_scales(p, dist)
            d = dist[:, :k]
            log_weights = -(d / own[:, None]) * (d / point_scales[ind[:, :k]]) / p.scale_factor
            top = log_weights.max(axis=1)
            far = int(np.sum(top < np.log(EXTRAPOLATION_MIN_WEIGHT)))
            if far:
                warn_user(
                    f"{far} row(s) of X lie far from every node (largest kernel weight below "
                    f"{EXTRAPOLATION_MIN_WEIGHT:.0e}): their values are extrapolated from "
                    f"their nearest nodes.",
                    UserWarning,
                )
            weights = np.exp(log_weights - top[:, None])
            norms = sparse_norm(X, axis=1) if sp.issparse(X) else np.linalg.norm(X, axis=1)
            tolerance = NODE_MATCH_RTOL * np.maximum(norms, point_scales[ind[:, 0]])
        match = dist[:, 0] <= tolerance
        weights[match] = 0.0
        rows = np.repeat(np.arange(n), k)
        near = sp.csr_matrix(
            (weights.ravel(), (rows, ind[:, :k].ravel())), shape=(n, self.n_points)
        )
        nearest = ind[match, 0]
        if self.node_points is not None:
            # Equal nodes share a point: a neighbouring point weighs on each of
            # its nodes, as in W; a matched point gives its first node.
            near = near[:, self.node_points]
            nearest = self.point_nodes[nearest]
        exact = sp.csr_matrix(
            (np.ones(nearest.size), (np.flatnonzero(match), nearest)), shape=(n, self.n_nodes)
        )
        return (near + exact).tocsr()


def _inverse_sqrt(d):
    out = np.zeros_like(d, dtype=float)
    pos = d > 0
    out[pos] = 1.0 / np.sqrt(d[pos])
    return out


def _new_index(params: GraphParams, data):
    """An unfitted neighbour search for ``data``: a clone of ``neighbors``, or exact."""
    if params.neighbors is not None:
        try:
            return clone(params.neighbors)
        except TypeError:
            return copy.deepcopy(params.neighbors)
    metric = "cosine" if params.kernel == "cosine" else "euclidean"
    algorithm = "brute" if metric == "cosine" or sp.issparse(data) else "auto"
    return NearestNeighbors(metric=metric, algorithm=algorithm, n_jobs=params.n_jobs)


def _node_neighbors(params: GraphParams, data, k):
    """Fit the neighbour index on the nodes; the ``k`` nearest other nodes of each.

    A ``KNeighborsTransformer``-like object is fitted with ``fit_transform``,
    whose graph already holds every node's neighbours (no second search).
    """
    index = _new_index(params, data)
    if params.neighbors is not None:
        if getattr(index, "mode", "distance") != "distance":
            raise ValueError(
                f"The neighbors transformer {type(index).__name__} has mode={index.mode!r}; "
                f"the graph's kernel needs distances: use mode='distance'."
            )
        if hasattr(index, "fit_transform"):
            graph = index.fit_transform(data)
        else:
            graph = index.fit(data).transform(data)
        _check_distance_graph(graph, (data.shape[0], data.shape[0]), index)
        return index, *_neighbors_from_graph(graph, k, exclude_self=True, source=index)
    index.fit(data)
    dist, ind = index.kneighbors(None, n_neighbors=k)
    return index, dist.astype(np.float64, copy=False), ind


#: The last exact kNN searches over node data, remembered by data array (see
#: :class:`IdentityMemo`), kernel and neighbour count: their distances and
#: indices (``16 * n_points * k`` bytes each), not the index. A second graph of
#: the same nodes that differs only in its Gaussian scale (``kernel="auto"``'s
#: narrow graph, a grid over ``scale_factor``) reuses the search: on
#: Fashion-MNIST (70,000 x 784) it took 84 s of the narrow graph's 106 s.
KNN_SEARCHES = IdentityMemo(maxsize=2)


def _searched_neighbors(params: GraphParams, data, points, k, reuse=True):
    """``(index, dist, ind)`` of :func:`_node_neighbors` over ``points`` (the distinct
    points of ``data``), from :data:`KNN_SEARCHES` where ``data`` was searched alike
    (then ``index`` is None: a graph fits it again on first use). A ``neighbors``
    estimator searches every time (it may be approximate and random), and so does
    ``reuse=False`` (a graph kept nowhere: ``cache=False``)."""
    if params.neighbors is not None or not reuse:
        return _node_neighbors(params, points, k)
    fitted = []

    def search():
        index, dist, ind = _node_neighbors(params, points, k)
        fitted.append(index)
        for a in (dist, ind):
            a.flags.writeable = False
        return dist, ind

    dist, ind = KNN_SEARCHES.get(data, (params.kernel, k), search)
    return (fitted[0] if fitted else None), dist, ind


def _query_neighbors(index, X, k):
    """The ``k`` nearest nodes of each row of new points ``X``: ``(distances, indices)``.

    ``index`` is a fitted :class:`~sklearn.neighbors.NearestNeighbors` or any
    fitted ``KNeighborsTransformer``-like object (its ``transform`` gives a
    sparse distance graph).
    """
    if isinstance(index, NearestNeighbors):
        dist, ind = index.kneighbors(X, n_neighbors=k)
        return dist.astype(np.float64, copy=False), ind
    return _neighbors_from_graph(index.transform(X), k, exclude_self=False, source=index)


def _check_distance_graph(graph, shape, source):
    """A neighbors transformer's output: a sparse ``shape`` matrix of finite distances >= 0."""
    name = type(source).__name__
    if not sp.issparse(graph) or graph.shape != shape:
        raise ValueError(
            f"The neighbors transformer {name} must give a sparse distance graph of shape "
            f"{shape} (rows: the points, columns: the nodes), as a KNeighborsTransformer "
            f"with mode='distance' does; got {type(graph).__name__} of shape "
            f"{np.shape(graph)}."
        )
    values = sp.csr_matrix(graph).data
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(
            f"The neighbors transformer {name} gave distances that are negative, NaN or "
            f"infinite ({int(np.sum(~(np.isfinite(values) & (values >= 0))))} of "
            f"{values.size}); a distance graph holds finite distances >= 0."
        )


def _neighbors_from_graph(graph, k, *, exclude_self, source):
    """The ``k`` smallest distances of each row of a sparse distance graph, (n, k) each.

    With ``exclude_self`` (the rows are the nodes themselves) a node is never
    its own neighbour. Ties keep the graph's order. A graph with as many
    entries in every row (a kNN transformer's) is sorted row by row, without
    a row index per entry.
    """
    G = sp.csr_matrix(graph)
    n, counts = G.shape[0], np.diff(G.indptr)
    if n and counts.min() == counts.max():
        dist = G.data.reshape(n, -1).astype(np.float64)
        cols = G.indices.reshape(n, -1)
        if exclude_self:
            own = cols == np.arange(n, dtype=cols.dtype)[:, None]
            dist[own] = np.inf  # sorted last, and not counted
            counts = counts - own.sum(axis=1)
        _check_neighbor_counts(counts, k, source)
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(dist, order, 1), np.take_along_axis(cols, order, 1)
    rows = np.repeat(np.arange(n), counts)
    keep = rows != G.indices if exclude_self else np.ones(G.nnz, dtype=bool)
    rows, cols, dist = rows[keep], G.indices[keep], G.data[keep]
    counts = np.bincount(rows, minlength=n)
    _check_neighbor_counts(counts, k, source)
    order = np.lexsort((dist, rows))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    take = order[(starts[:, None] + np.arange(k)).ravel()]
    return dist[take].reshape(-1, k).astype(np.float64), cols[take].reshape(-1, k)


def _check_neighbor_counts(counts, k, source):
    if counts.min(initial=k) < k:
        raise ValueError(
            f"The neighbors transformer {type(source).__name__} gave {counts.min()} "
            f"neighbours for some rows; {k} are needed (n_neighbors and "
            f"scale_neighbor). Increase its n_neighbors."
        )


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


#: Node data whose largest magnitude lies outside ``[2^-64, 2^64]`` is
#: multiplied by a power of two into ``[1/2, 1)`` before any distance. The
#: product is exact, and so is every distance ratio the kernels use: the graph
#: is that of the data as given, without overflow or underflow of squared
#: distances (1e300 or 1e-300 times any data gives the graph of the data).
_SAFE_MAGNITUDE = (2.0**-64, 2.0**64)


def _power_of_two_scale(data) -> float:
    values = data.data if sp.issparse(data) else data
    top = float(np.abs(values).max(initial=0.0))
    if top == 0.0 or _SAFE_MAGNITUDE[0] <= top <= _SAFE_MAGNITUDE[1]:
        return 1.0
    return float(np.ldexp(1.0, -int(np.frexp(top)[1])))


@dataclass
class _Affinity:
    """``W`` and what the out-of-sample extension needs of its construction."""

    W: sp.csr_matrix
    params: GraphParams
    scales: np.ndarray | None = None
    index: object = None
    point_nodes: np.ndarray | None = None
    node_points: np.ndarray | None = None
    data_scale: float = 1.0


def _distinct_points(params: GraphParams, data, first=None):
    """The distinct rows of the node data, and the parameters clipped to their number.

    Returns ``(points, point_nodes, node_points, params)``; the two index
    arrays are None when every row is distinct.
    """
    n = data.shape[0]
    if first is None:
        first = first_equal_rows(data)
    point_nodes = np.flatnonzero(first == np.arange(n))
    n_points = point_nodes.size
    if n_points < 2:
        raise ValueError(f"All {n} nodes are equal: a graph needs at least 2 distinct points.")
    needed = max(params.n_neighbors, params.scale_neighbor if params.kernel == "gaussian" else 0)
    if needed >= n_points:
        clipped = replace(
            params,
            n_neighbors=min(params.n_neighbors, n_points - 1),
            scale_neighbor=min(params.scale_neighbor, n_points - 1),
        )
        warn_user(
            f"The {n} nodes hold only {n_points} distinct points: n_neighbors="
            f"{params.n_neighbors} and scale_neighbor={params.scale_neighbor} must be below "
            f"that; using n_neighbors={clipped.n_neighbors} and scale_neighbor="
            f"{clipped.scale_neighbor}.",
            UserWarning,
        )
        params = clipped
    if n_points == n:
        return data, None, None, params
    position = np.empty(n, dtype=np.intp)
    position[point_nodes] = np.arange(n_points)
    return data[point_nodes], point_nodes, position[first], params


def _index_dtype(n_entries):
    """int32 for the indices of a sparse matrix with up to 2^31 - 1 entries, else int64."""
    return np.int32 if n_entries < np.iinfo(np.int32).max else np.int64


def _symmetric_knn_weights(weights, ind) -> sp.csr_matrix:
    """``(K + K^T) / 2`` for ``K[i, ind[i, j]] = weights[i, j]``, built as CSR directly.

    No COO triplets and no int64 row index per entry: ``K`` is CSR with
    ``k`` entries per row (int32 indices below 2^31 entries), ``W`` its sum
    with its transpose, halved in place.
    """
    m, k = ind.shape
    index = _index_dtype(2 * m * k)
    indptr = np.arange(0, m * k + 1, k, dtype=index)
    K = sp.csr_matrix((weights.ravel(), ind.astype(index).ravel(), indptr), shape=(m, m))
    K.sum_duplicates()
    W = (K + K.T).tocsr()
    del K
    W.data *= 0.5
    return W


def _affinity(
    params: GraphParams, data, first_equal=None, level=logging.DEBUG, reuse_search=True
) -> _Affinity:
    """Symmetric affinity ``W`` of the node data, with its scales and neighbour index.

    Equal nodes are one point: the kNN search runs over the distinct points
    (so copies never crowd out a point's neighbours, nor give zero local
    scales), and ``W`` is that of the distinct points with every point
    replaced by its copies, joined to each other with weight 1 (the kernel
    at distance 0) and each joined to every copy of the point's neighbours.
    """
    if params.kernel == "precomputed":
        W = sp.csr_matrix(data, dtype=np.float64)
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
        return _Affinity(((W + W.T) * 0.5).tocsr(), params)
    points, point_nodes, node_points, params = _distinct_points(params, data, first_equal)
    data_scale = _power_of_two_scale(points)
    if data_scale != 1.0:
        points = points * data_scale
    n_query = max(params.n_neighbors, params.scale_neighbor if params.kernel == "gaussian" else 0)
    timer = _Timer()
    index, dist, ind = _searched_neighbors(params, data, points, n_query, reuse_search)
    if index is None:
        logger.log(
            level, "kNN search (%d neighbours) over %d points: reused (KNN_SEARCHES).",
            n_query, points.shape[0],
        )  # fmt: skip
    else:
        logger.log(
            level, "kNN search (%s, %d neighbours) over %d points: %.2f s.",
            type(index).__name__, n_query, points.shape[0], timer.lap(),
        )  # fmt: skip
    scales = _local_scales(params, dist) if params.kernel == "gaussian" else None
    weights = _kernel_weights(params, dist, ind, scales, scales)
    W = _symmetric_knn_weights(weights, ind[:, : params.n_neighbors])
    del dist, ind, weights
    m = points.shape[0]
    if node_points is not None:
        n = node_points.size
        P = sp.csr_matrix((np.ones(n), (np.arange(n), node_points)), shape=(n, m))
        W = (P @ W @ P.T + P @ P.T - sp.identity(n, format="csr")).tocsr()
        W.eliminate_zeros()
        if scales is not None:
            scales = scales[node_points]
    if scales is not None and data_scale != 1.0:
        scales = scales / data_scale
    logger.log(level, "Kernel weights, W with %d entries: %.2f s.", W.nnz, timer.lap())
    return _Affinity(W, params, scales, index, point_nodes, node_points, data_scale)


#: The null space of ``A`` (eigenvalue 1) is moved to this eigenvalue, below
#: the spectrum of ``A`` (within [-1, 1]), before the remaining eigenpairs are
#: computed.
_DEFLATED_EIGENVALUE = -2.0


def null_space_basis(W) -> sp.csr_matrix:
    """The null space of ``L = I - D^-1/2 W D^-1/2`` in closed form.

    One column per connected component of positive degree: ``D^1/2 1_c``
    normalised, where ``1_c`` indicates the component (edges of positive
    weight only). The columns are orthonormal, in the order of the component
    labels of :func:`scipy.sparse.csgraph.connected_components`; a node
    without an edge belongs to none (its eigenvalue is 1).

    Parameters
    ----------
    W : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric non-negative affinity.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_nodes, n_null)
    """
    W = sp.csr_matrix(W)
    positive = sp.csr_matrix((W.data > 0, W.indices, W.indptr), shape=W.shape)
    positive.eliminate_zeros()
    _, labels = connected_components(positive, directed=False)
    root_degree = np.sqrt(np.asarray(W.sum(axis=1)).ravel().clip(0.0, None))
    norms = np.sqrt(np.bincount(labels, weights=root_degree**2))
    kept = np.flatnonzero(norms > 0)
    column = np.full(labels.max(initial=-1) + 1, -1, dtype=np.intp)
    column[kept] = np.arange(kept.size)
    rows = np.flatnonzero(column[labels] >= 0)
    values = root_degree[rows] / norms[labels[rows]]
    return sp.csr_matrix((values, (rows, column[labels[rows]])), shape=(W.shape[0], kept.size))


#: Columns of an ``n_nodes``-row block processed at once after the eigensolver
#: (projection, signs, residuals): blocks of about 32 MiB, not copies of all
#: ``n_eigs`` eigenvectors.
_BLOCK_VALUES = 2**22


def _column_blocks(n_rows, n_cols):
    width = max(1, _BLOCK_VALUES // max(1, n_rows))
    return [slice(j, min(n_cols, j + width)) for j in range(0, n_cols, width)]


def normalized_adjacency(W) -> sp.csr_matrix:
    """``A = D^-1/2 W D^-1/2`` of a symmetric affinity, exactly symmetric.

    Each entry is ``w_ij (s_i s_j)`` with ``s = D^-1/2`` (0 for a node without
    edges): the product ``s_i s_j`` is the same both ways, so a symmetric
    ``W`` gives a symmetric ``A`` to the last bit, with one copy of ``W``
    (no triple product, no symmetrisation).

    Parameters
    ----------
    W : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric non-negative affinity.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_nodes, n_nodes), float64
    """
    A = sp.csr_matrix(W, dtype=np.float64, copy=True)
    s = _inverse_sqrt(np.asarray(A.sum(axis=1)).ravel())
    rows = np.repeat(np.arange(A.shape[0], dtype=A.indices.dtype), np.diff(A.indptr))
    scale = s[rows]
    del rows
    scale *= s[A.indices]
    A.data *= scale
    return A


def laplacian_trace(W, degrees=None) -> float:
    """``tr L`` of ``L = I - D^-1/2 W D^-1/2``: ``n - sum_i w_ii / d_i``.

    The sum runs over the nodes with edges; a node without any counts 1 (its
    row of ``L`` is ``e_i'``, as in :func:`skmcal.fullgraph.normalized_laplacian`).

    Parameters
    ----------
    W : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric non-negative affinity.
    degrees : ndarray of shape (n_nodes,) or None, default=None
        The row sums of ``W`` where known (``SpectralGraph.degrees``);
        None: summed here.

    Returns
    -------
    float

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> laplacian_trace(sp.csr_matrix([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    2.5
    """
    W = sp.csr_matrix(W)
    degrees = np.asarray(W.sum(axis=1)).ravel() if degrees is None else np.asarray(degrees)
    edged = degrees > 0
    return float(W.shape[0] - np.sum(W.diagonal()[edged] / degrees[edged]))


def _orthonormal_columns(Y):
    """An orthonormal basis of the columns of ``Y``, in its dtype (SVQB, twice).

    The Gram matrix, scaled to a unit diagonal, is diagonalised in float64 and
    its tiny eigenvalues raised to ``eps`` times the largest, so that nearly
    dependent columns do not break it (Stathopoulos & Wu, 2002).
    """
    for _ in range(2):
        G = (Y.T @ Y).astype(np.float64)
        d = 1.0 / np.sqrt(np.clip(np.diag(G), np.finfo(float).tiny, None))
        s, U = np.linalg.eigh(G * d[:, None] * d[None, :])
        s = np.clip(s, s.max() * np.finfo(Y.dtype).eps, None)
        Y = Y @ (d[:, None] * U / np.sqrt(s)).astype(Y.dtype)
    return Y


def chebyshev_eigenpairs(
    A, n_wanted, deflate=None, random_state=None, degree=16, tol=None, max_iter=100
):
    """The ``n_wanted`` largest eigenpairs of a symmetric ``A`` with spectrum in [-1, 1].

    Chebyshev-filtered subspace iteration (Zhou & Saad, 2007) in float32: a
    block of ``n_wanted + max(8, n_wanted // 4)`` vectors is multiplied by
    the Chebyshev polynomial of degree ``degree`` that is small on
    ``[-1, c]`` (``c`` the smallest Ritz value of the block, 0 at first) and
    grows fast above it, made orthonormal and rotated to Ritz vectors, until
    the ``n_wanted`` largest have residuals ``||A v - mu v|| <= tol``. It
    holds three float32 blocks (half of ARPACK's 100 float64 Lanczos
    vectors at 50 eigenpairs) and multiplies ``A`` by whole blocks, its
    nodes renumbered by reverse Cuthill-McKee for locality.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric, eigenvalues within [-1, 1].
    n_wanted : int
    deflate : scipy.sparse matrix of shape (n, c) or None, default=None
        Orthonormal columns spanning an invariant subspace to leave out
        (projected out of every iterate).
    random_state : int, RandomState instance or None, default=None
        Seeds the starting block (None: seed 0).
    degree : int, default=16
        Matrix products per filter.
    tol : float or None, default=None
        :data:`CHEBYSHEV_TOL` if None.
    max_iter : int, default=100
        Filters at most.

    Returns
    -------
    mu : ndarray of shape (n_wanted,)
        Descending, float64.
    X : ndarray of shape (n, n_wanted)
        Orthonormal float32 eigenvectors.
    """
    tol = CHEBYSHEV_TOL if tol is None else tol
    n = A.shape[0]
    # Nodes renumbered by reverse Cuthill-McKee: neighbours get near numbers, so
    # the rows of the block that a product reads are near in memory (a kNN
    # graph in data order has none of that; 2x faster products at 100,000).
    order = reverse_cuthill_mckee(sp.csr_matrix(A), symmetric_mode=True)
    A32 = sp.csr_matrix(A, dtype=np.float32)[order][:, order]
    N = NT = None
    if deflate is not None and deflate.shape[1]:
        N = sp.csr_matrix(deflate, dtype=np.float32)[order]
        NT = N.T.tocsr()

    def project(Y):  # in row blocks: no temporary of the whole block
        if N is not None:
            C = NT @ Y
            rows = max(1, _BLOCK_VALUES // Y.shape[1])
            for start in range(0, n, rows):
                Y[start : start + rows] -= N[start : start + rows] @ C
        return Y

    size = min(n, n_wanted + max(8, n_wanted // 4))
    rng = check_random_state(0 if random_state is None else random_state)
    Q = _orthonormal_columns(project(rng.standard_normal((n, size)).astype(np.float32)))
    cut = 0.0
    for _ in range(max_iter):
        half, centre = (cut + 1.0) / 2, (cut - 1.0) / 2  # [-1, cut] -> [-1, 1]
        # T_1 = t Q and T_{j+1} = 2 t T_j - T_{j-1}, t = (A - centre) / half,
        # each step one pass over the block (block_product).
        Y0, Y1 = Q, block_product(A32, Q, 1.0 / half, -centre / half)
        del Q
        for _ in range(degree - 1):
            Y2 = block_product(A32, Y1, 2.0 / half, -2.0 * centre / half, Y0, -1.0)
            Y0, Y1 = Y1, project(Y2)
            del Y2
        del Y0
        Q = _orthonormal_columns(project(Y1))
        del Y1
        AQ = block_product(A32, Q)
        H = (Q.T @ AQ).astype(np.float64)
        mu, U = np.linalg.eigh((H + H.T) / 2)
        mu, U = mu[::-1], np.ascontiguousarray(U[:, ::-1], dtype=np.float32)
        Q = Q @ U
        AQ = AQ @ U
        AQ -= Q * mu.astype(np.float32)
        worst = float(np.linalg.norm(AQ[:, :n_wanted], axis=0).max())
        del AQ
        cut = float(mu[-1])
        if worst <= tol:
            break
    X = np.empty((n, n_wanted), dtype=np.float32)
    X[order] = Q[:, :n_wanted]
    return mu[:n_wanted], X


def _auto_solver(n_nodes, n_eigs):
    if n_nodes <= DENSE_EIGEN_MAX_NODES or 3 * n_eigs >= n_nodes:
        return "dense"
    return "arpack" if n_nodes <= CHEBYSHEV_MIN_NODES else "chebyshev"


def laplacian_spectrum(W, n_eigs, random_state=None, solver="auto"):
    """The ``n_eigs`` smallest eigenpairs of ``L = I - D^-1/2 W D^-1/2``.

    The null space is put in first, in closed form (:func:`null_space_basis`:
    one vector per connected component, so no copy of the eigenvalue 0 is
    ever missed, however many components the graph has). The other
    eigenpairs are the largest of ``A = D^-1/2 W D^-1/2`` with the null space
    deflated (``solver``: dense ``eigh`` on small graphs, ARPACK
    ``eigsh(which="LA")`` up to :data:`CHEBYSHEV_MIN_NODES` nodes, the float32
    subspace iteration :func:`chebyshev_eigenpairs` above; each started from
    vectors drawn from ``random_state``, or from seed 0 when it is None, so
    that identical input gives identical output),
    made orthogonal to the null space and signed so that each eigenvector's
    entry of largest magnitude is positive. The eigenvectors are assembled,
    projected and checked in blocks of columns, so that the peak holds one
    copy of them (plus the solver's own workspace).

    Parameters
    ----------
    W : sparse matrix of shape (n_nodes, n_nodes)
        Symmetric non-negative affinity.
    n_eigs : int
        Number of eigenpairs.
    random_state : int, RandomState instance or None, default=None
        Seeds the start of the sparse eigensolver.
    solver : {"auto", "dense", "arpack", "chebyshev"}, default="auto"
        "auto": dense below :data:`DENSE_EIGEN_MAX_NODES` nodes or when
        ``n_eigs`` is a third of them or more, ARPACK up to
        :data:`CHEBYSHEV_MIN_NODES`, Chebyshev above.

    Returns
    -------
    eigenvalues : ndarray of shape (n_eigs,)
        Ascending, clipped at 0; the null space's are exactly 0.
    eigenvectors : ndarray of shape (n_nodes, n_eigs)
    residual : float
        ``max_i ||A v_i - (1 - lambda_i) v_i||_2``.
    """
    n = W.shape[0]
    A = normalized_adjacency(W)
    N = null_space_basis(W)
    n_null = min(N.shape[1], n_eigs)
    n_rest = n_eigs - n_null
    NT = N.T.tocsr()
    shift = _DEFLATED_EIGENVALUE - 1.0
    if solver == "auto":
        solver = _auto_solver(n, n_eigs)
    elif solver not in ("dense", "arpack", "chebyshev"):
        raise ValueError(
            f"solver must be 'auto', 'dense', 'arpack' or 'chebyshev'; got {solver!r}."
        )
    if n_rest == 0:
        mu, X = np.ones(0), np.zeros((n, 0))
    elif solver == "dense":
        # numpy's eigh, not scipy's: see the note on OpenBLAS in posterior.py.
        B = A.toarray()
        for c in range(N.shape[1]):
            part = slice(NT.indptr[c], NT.indptr[c + 1])
            rows, v = NT.indices[part], NT.data[part]
            B[np.ix_(rows, rows)] += shift * np.outer(v, v)
        mu, X = np.linalg.eigh(B)
        mu, X = mu[n - n_rest :], X[:, n - n_rest :]
    elif solver == "chebyshev":
        mu, X = chebyshev_eigenpairs(A, n_rest, N, random_state)
    else:
        rng = check_random_state(0 if random_state is None else random_state)
        v0 = rng.uniform(-1.0, 1.0, size=n)
        deflated = LinearOperator(
            (n, n), matvec=lambda x: A @ x + shift * (N @ (NT @ x)), dtype=np.float64
        )
        mu, X = eigsh(
            deflated, k=n_rest, which="LA", v0=v0, ncv=min(n, max(2 * n_rest + 1, 100)),
            tol=EIGSH_TOL,
        )  # fmt: skip
    order = np.argsort(-mu, kind="stable")
    mu = np.concatenate([np.ones(n_null), mu[order]])
    V = np.empty((n, n_eigs))
    V[:, :n_null] = N[:, :n_null].toarray()
    residual = 0.0
    for cols in _column_blocks(n, n_eigs):
        rest = range(max(cols.start, n_null), cols.stop)
        if rest:
            block = X[:, order[rest.start - n_null : rest.stop - n_null]].astype(np.float64)
            if N.shape[1]:
                block -= N @ (NT @ block)
            block /= np.linalg.norm(block, axis=0).clip(np.finfo(float).tiny, None)
            flip = block[np.abs(block).argmax(axis=0), np.arange(block.shape[1])] < 0
            block[:, flip] *= -1.0
            V[:, rest.start : rest.stop] = block
            del block
        block = V[:, cols]
        residual = max(residual, float(np.linalg.norm(A @ block - block * mu[cols], axis=0).max()))
    eigenvalues = np.clip(1.0 - mu, 0.0, None)
    eigenvalues[:n_null] = 0.0
    return eigenvalues, V, residual


#: Check, before a graph is built, that the memory it needs is available
#: (:func:`check_graph_memory`). Set to False to skip the check.
MEMORY_CHECK = True


def available_memory() -> int | None:
    """Bytes this process may still allocate without swapping, or None if unknown.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux), lowered to what the
    process's control group still allows (cgroup v2 ``memory.max`` minus
    ``memory.current``) when it has a limit; elsewhere the physical memory
    reported by ``os.sysconf`` (available pages where the system reports
    them); None when none of these can be read.
    """
    found = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit != "max":
            left = max(0, int(limit) - used)
            found = left if found is None else min(found, left)
    except (OSError, ValueError):
        pass
    if found is None:
        for name in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
            try:
                found = os.sysconf(name) * os.sysconf("SC_PAGE_SIZE")
                break
            except (AttributeError, ValueError, OSError):
                continue
    return found


def graph_memory_estimate(
    n_nodes: int, n_features: int, params: GraphParams, nnz: int | None = None
) -> int:
    """Peak bytes a graph build and its spectrum allocate, beyond the node data.

    The larger of the two phases: the kNN search and kernel weights (the
    neighbour index: a float64 copy of the data for scikit-learn's trees at
    up to 15 features, else its chunked distances, or for a ``neighbors``
    transformer an allowance of 8 bytes per feature and 24 per neighbour
    of each node; the transformer's sparse graph, the distances and indices
    of each node's neighbours and their sorting; the kernel weights, ``K``
    as CSR, its transpose and ``W``, their sum), and the
    spectrum (the index, kept with the graph up to
    :data:`~skmcal.graph.INDEX_MAX_NODES` nodes; ``W`` and ``A = D^-1/2 W
    D^-1/2``; ARPACK's Lanczos basis of ``max(2 n_eigs, 100)`` vectors and
    its ``n_eigs`` Ritz vectors, the float32 copy of ``A`` and three float32
    blocks of the subspace iteration
    above :data:`CHEBYSHEV_MIN_NODES`, or the dense matrix and its
    eigenvectors on small graphs; the eigenvectors returned, in float64).
    ``W`` holds ``nnz`` entries (a precomputed affinity), or at most
    ``2 n_nodes n_neighbors``. Calibrated against the peaks measured by
    ``benchmarks/bench_scale.py`` with pynndescent on 64 features (see the
    user guide, "Large data"): above each of them by 2% (1,000,000 nodes,
    ARPACK) to 18% (1,000,000 nodes, the float32 subspace iteration), 5% at
    3,000,000 and 7% at 10,000,000 nodes; an allowance, not a guaranteed bound.

    Parameters
    ----------
    n_nodes, n_features : int
        Shape of the node data.
    params : GraphParams
    nnz : int or None, default=None
        Entries of a precomputed affinity (``kernel="precomputed"``).

    Returns
    -------
    int
    """
    return max(_phase_bytes(n_nodes, n_features, params, nnz))


def _phase_bytes(n_nodes, n_features, params, nnz):
    """(kNN search and weights, spectrum): the two terms of :func:`graph_memory_estimate`."""
    n, k, m = int(n_nodes), params.n_neighbors, params.n_eigs
    entries = 2 * n * k if nnz is None else int(nnz)
    sparse_bytes = 12 * entries + 8 * n  # CSR float64 data, int32 indices, indptr
    search = kept = 0
    if params.kernel != "precomputed":
        q = max(k, params.scale_neighbor if params.kernel == "gaussian" else 0)
        if params.neighbors is not None:  # pynndescent, 64 features: 0.42-0.71 KB per node
            index = held = n * (8 * n_features + 24 * (q + 1))
        elif n_features <= 15:  # a k-d tree over a float64 copy
            index = held = 8 * n * n_features
        else:  # brute force: chunks of working_memory
            from sklearn import get_config

            index, held = get_config()["working_memory"] * 2**20, 0
        kept = held if n <= INDEX_MAX_NODES else 0  # with the graph through the spectrum
        # (dist, ind); a transformer's graph, its distances in float64 and their order
        knn = index + 16 * n * q + 32 * n * (q + 1)
        # (dist, ind); the weights with K's indices (12 B) and K^T as CSR (12 B); W = K + K^T
        weights = held + 16 * n * q + 24 * n * k + sparse_bytes
        search = max(knn, weights)
    if n <= DENSE_EIGEN_MAX_NODES or 3 * m >= n:
        solver = 16 * n * n + 8 * n * m
    elif n <= CHEBYSHEV_MIN_NODES:  # Lanczos basis and Ritz vectors (measured: 1.25x)
        solver = 10 * n * (max(2 * m + 1, 100) + m) + 24 * n
    else:  # A in float32 and three float32 blocks, then the float32 vectors and V
        solver = 8 * entries + max(12 * n * (m + max(8, m // 4)), 12 * n * m)
    spectrum = kept + 2 * sparse_bytes + solver + 2 * 8 * _BLOCK_VALUES
    return search, spectrum


def check_graph_memory(data, params: GraphParams) -> None:
    """Raise MemoryError, before anything is allocated, if the graph cannot fit.

    Compares :func:`graph_memory_estimate` with :func:`available_memory`;
    does nothing when :data:`MEMORY_CHECK` is False or the available memory
    is unknown.

    Raises
    ------
    MemoryError
        Naming the estimate, the memory available and what lowers the need.
    """
    if not MEMORY_CHECK:
        return
    available = available_memory()
    if available is None:
        return
    n, d = data.shape[0], data.shape[1]
    nnz = data.nnz if params.kernel == "precomputed" and sp.issparse(data) else None
    need = graph_memory_estimate(n, d, params, nnz)
    if need <= available:
        return
    gib = 2.0**30
    search, spectrum = _phase_bytes(n, d, params, nnz)
    advice = "lower n_eigs or n_neighbors"
    values = data.data if sp.issparse(data) else data
    if values.dtype == np.float64:
        advice += f", pass the node data as float32 (saves {values.nbytes / 2 / gib:.1f} GiB)"
    raise MemoryError(
        f"The graph of {n:,} nodes ({d} features, n_neighbors={params.n_neighbors}, "
        f"n_eigs={params.n_eigs}) needs about {need / gib:.1f} GiB besides the node data "
        f"(kNN search and weights {search / gib:.1f} GiB, spectrum {spectrum / gib:.1f} GiB); "
        f"{available / gib:.1f} GiB are available. To fit: {advice}, or free memory "
        f"(skmcal.graph.MEMORY_CHECK = False skips this check)."
    )


def build_graph(
    data, params: GraphParams, first_equal=None, verbose=0, *, reuse_search=True
) -> SpectralGraph:
    """Build the graph of ``params`` over the node data and its spectrum.

    ``first_equal``, if known, is :func:`~skmcal.graph.first_equal_rows` of the data.
    ``reuse_search``: take the kNN search from, and keep it in,
    :data:`~skmcal.graph.KNN_SEARCHES` (False: search, and keep nothing).
    Each phase (equal rows, kNN search, weights, components, spectrum) is
    logged with its time on the logger ``skmcal.graph``: at INFO with
    ``verbose``, at DEBUG otherwise (see :func:`phase_level`).
    """
    check_graph_memory(data, params)
    level = phase_level(verbose)
    timer = _Timer()
    if first_equal is None and params.kernel != "precomputed":
        first_equal = first_equal_rows(data)
        logger.log(level, "Equal rows among %d nodes: %.2f s.", data.shape[0], timer.lap())
    affinity = _affinity(params, data, first_equal, level, reuse_search)
    if data.shape[0] > INDEX_MAX_NODES:  # fitted again on first use: neighbor_index()
        affinity.index = None
    timer.lap()
    W, params = affinity.W, affinity.params
    degrees = np.asarray(W.sum(axis=1)).ravel()
    isolated = int(np.sum(degrees <= 0))
    if isolated:
        warn_user(
            f"{isolated} node(s) have no edge of positive weight; their latent "
            f"values stay at the prior mean 0.",
            UserWarning,
        )
    n_components, component_labels = connected_components(W, directed=False)
    n_components = int(n_components)
    if 1 < n_components and params.n_eigs <= n_components:
        warn_user(
            f"The graph has {n_components} connected components, at least as many as the "
            f"n_eigs={params.n_eigs} eigenpairs kept: the spectrum holds nothing but "
            f"constants on components, and labels do not spread within or between them. "
            f"Increase n_neighbors (or n_eigs).",
            UserWarning,
        )
    logger.log(level, "Connected components (%d): %.2f s.", n_components, timer.lap())
    eigenvalues, V, residual = laplacian_spectrum(W, params.n_eigs, params.random_state)
    logger.log(
        level, "Spectrum: %d eigenpairs of %d nodes (%s), residual %.1e: %.2f s.",
        params.n_eigs, W.shape[0], _auto_solver(W.shape[0], params.n_eigs), residual, timer.lap(),
    )  # fmt: skip
    if residual > EIGEN_RESIDUAL_TOL:
        warn_user(
            f"The computed eigenpairs have residual {residual:.2e} "
            f"(> {EIGEN_RESIDUAL_TOL:.0e}); the spectrum may be inaccurate.",
            UserWarning,
        )
    component_labels = component_labels.astype(np.intp)
    extras = [
        a for a in (affinity.scales, affinity.point_nodes, affinity.node_points) if a is not None
    ]
    for arr in (eigenvalues, V, degrees, component_labels, *extras):
        arr.flags.writeable = False
    graph = SpectralGraph(
        params=params,
        weights=W,
        degrees=degrees,
        eigenvalues=eigenvalues,
        eigenvectors=V,
        n_components=n_components,
        residual=residual,
        scales=affinity.scales,
        index=affinity.index,
        component_labels=component_labels,
        point_nodes=affinity.point_nodes,
        node_points=affinity.node_points,
        data_scale=affinity.data_scale,
    )
    graph._data = data
    logger.log(level, "Graph of %d nodes built: %.2f s in all.", W.shape[0], timer.total())
    return graph


def check_memory(memory):
    """``memory`` as a ``joblib.Memory``-like object, or None for no disk cache.

    Parameters
    ----------
    memory : None, str, path-like or object with a ``cache`` method
        None: no disk cache. A folder: ``joblib.Memory(folder,
        mmap_mode="r")``, whose arrays are loaded memory-mapped (read-only,
        shared by every process that loads them). An object with ``cache``
        (a ``joblib.Memory``) is used as it is.

    Returns
    -------
    joblib.Memory-like or None
    """
    if memory is None:
        return None
    if isinstance(memory, (str, os.PathLike)):
        if os.path.exists(memory) and not os.path.isdir(memory):
            raise ValueError(
                f"memory must be a folder (the disk cache of graphs); {os.fspath(memory)!r} "
                f"is a file."
            )
        return joblib.Memory(os.fspath(memory), mmap_mode="r", verbose=0)
    if not callable(getattr(memory, "cache", None)):
        raise ValueError(
            f"memory must be None, a folder or an object with a 'cache' method such as "
            f"joblib.Memory; got {memory!r}."
        )
    return memory


def _cache_key(nodes: NodeSet, params: GraphParams):
    """The cache key of the graph of ``params`` on ``nodes``, or None when it cannot be
    cached (``random_state`` a RandomState: another spectrum at each build)."""
    if params.random_state is None or isinstance(params.random_state, (int, np.integer)):
        return params.key(nodes.digest)
    return None


def _disk_get_or_put(memory, key, build):
    """The graph of ``key`` in the disk cache ``memory`` (a checked ``joblib.Memory``-like),
    put there by ``build()`` if it is not (under the key and skmcal's version)."""
    from . import __version__

    location = getattr(memory, "location", None)
    if isinstance(location, (str, os.PathLike)):
        store = _DiskStore(location, getattr(memory, "mmap_mode", None))
        return store.get_or_put((key, __version__), build)
    # any other object with cache()
    return memory.cache(_stored_graph, ignore=["build"])(key, __version__, build=build)


def _stored_graph(key, version, build):
    """The graph of ``key`` (``build`` is no part of the key), for a ``memory`` with no folder."""
    return build()


class _DiskStore:
    """Graphs in a folder: one ``joblib.dump`` file per key, written whole or not at all.

    ``<location>/skmcal/graphs/<hash of the key>.pkl``, loaded with
    ``mmap_mode``. A file lock per key (POSIX ``flock``) makes processes that
    need the same graph at once (the workers of ``GridSearchCV(n_jobs=2)``)
    wait for the first to build and store it, then load it; where ``flock``
    is missing (Windows) they may each build it. A file is written under
    another name and renamed, so a reader never sees half of one.
    """

    def __init__(self, location, mmap_mode):
        self.folder = os.path.join(os.fspath(location), "skmcal", "graphs")
        self.mmap_mode = mmap_mode

    def get_or_put(self, key, build):
        name = joblib.hash(key)
        path = os.path.join(self.folder, name + ".pkl")
        os.makedirs(self.folder, exist_ok=True)
        with _FileLock(os.path.join(self.folder, name + ".lock")):
            if os.path.exists(path):
                return joblib.load(path, mmap_mode=self.mmap_mode)
            graph = build()
            partial = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            joblib.dump(graph, partial)
            os.replace(partial, path)
            return graph


class _FileLock:
    """An exclusive lock on a file (POSIX ``flock``; no lock where it is missing)."""

    def __init__(self, path):
        self.path = path
        self._fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return self
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _build_threads(n_jobs):
    """Thread pools (BLAS, OpenMP, numba) of a graph build: ``n_jobs`` threads, or as they are.

    A joblib worker has its pools limited to its share of the cores; with
    ``n_jobs`` given, the build that other workers may be waiting for (see
    ``_DiskStore``) uses that many threads instead.
    """
    if n_jobs is None:
        return contextlib.nullcontext()
    n_threads = n_jobs_threads(n_jobs)  # at most the cores
    stack = contextlib.ExitStack()
    stack.enter_context(threadpool_limits(limits=n_threads))
    stack.enter_context(limit_threads(n_threads))
    return stack


def _learn_first_equal(nodes: NodeSet, graph: SpectralGraph):
    """Give ``nodes`` its equal rows from its graph, unless it knows them already.

    A graph built from the node data (any kernel but ``"precomputed"``) holds
    its distinct points: the first of each group of equal nodes
    (``point_nodes``) and the point of every node (``node_points``; both None
    when every row is distinct). A graph loaded from a cache thus spares the
    queries' first look at the nodes' rows (:attr:`NodeSet.first_equal`; 0.14 s
    at 70,000 x 784).
    """
    if graph.params.kernel == "precomputed" or getattr(nodes, "_first_equal", None) is not None:
        return
    if graph.point_nodes is None:
        first = np.arange(nodes.n_nodes)
    else:
        first = graph.point_nodes[graph.node_points]
    first.flags.writeable = False
    nodes._first_equal = first


class GraphCache:
    """A small least-recently-used cache of spectral graphs, keyed by content.

    The key is the :class:`NodeSet` digest plus every graph parameter
    (:meth:`~skmcal.graph.GraphParams.key`), so a hit is always the graph that would have
    been built. Graphs built with a ``numpy.random.RandomState`` as
    ``random_state`` are never cached. It is thread-safe: threads asking for
    the same key while its graph is being obtained wait for it (one build or
    load per key); different keys proceed concurrently. ``skmcal.GRAPH_CACHE``
    is the one the classifier uses: ``GRAPH_CACHE.maxsize = 8`` keeps more
    graphs (0 keeps none), ``GRAPH_CACHE.info()`` lists them with their memory,
    ``clear_graph_cache()`` empties it.

    A graph can also be kept on disk, shared by processes and later runs:
    :meth:`~skmcal.graph.GraphCache.get_or_build` with ``memory`` (the classifier's ``memory``
    parameter) loads it from there, or builds and stores it, under the same key.

    Parameters
    ----------
    maxsize : int, default=4
        Number of graphs kept.

    Attributes
    ----------
    builds : int
        Graphs built so far through this cache (not counting those found in
        it or loaded from disk, nor those of ``keep=False``).
    loads : int
        Graphs loaded from a disk cache so far (``keep=False`` not counted).
    """

    def __init__(self, maxsize: int = 4):
        self.maxsize = maxsize
        self._store: OrderedDict = OrderedDict()
        self.builds = 0
        self.loads = 0
        self._lock = threading.Lock()
        self._key_locks: dict = {}

    def _cached(self, key, nodes, verbose):
        """The cached graph of ``key`` (marked as recently used), or None; hold ``_lock``."""
        graph = self._store.get(key)
        if graph is not None:
            self._store.move_to_end(key)
            if verbose:  # not at DEBUG: a refit in a loop finds it at every fit
                logger.log(
                    phase_level(verbose), "Graph of %d nodes: in the in-process cache.",
                    nodes.n_nodes,
                )  # fmt: skip
        return graph

    def get_or_build(
        self, nodes: NodeSet, params: GraphParams, *, memory=None, verbose=0, keep: bool = True
    ) -> SpectralGraph:
        """The graph of ``params`` on ``nodes``: from memory, from disk, or freshly built.

        Parameters
        ----------
        nodes : NodeSet
        params : GraphParams
        memory : None, str, path-like or joblib.Memory, default=None
            A disk cache (see :func:`check_memory`): a graph stored there
            under the same key is loaded (memory-mapped, without its
            neighbour index, see :meth:`~skmcal.SpectralGraph.neighbor_index`);
            otherwise it is built and stored, under a file lock so that
            processes wanting it at once build it once.
        verbose : int, default=0
            Log where the graph came from and the phases of its build at
            INFO (see :func:`phase_level`).
        keep : bool, default=True
            Read and keep the graph in this in-process cache (False: only
            ``memory``, if given).

        Returns
        -------
        SpectralGraph

        Notes
        -----
        Of threads asking for one key at once, the first obtains the graph
        (built or loaded) and the others wait for it and return it.
        """
        graph = self._get_or_build(nodes, params, memory, verbose, keep)
        _learn_first_equal(nodes, graph)
        return graph

    def _get_or_build(self, nodes, params, memory, verbose, keep):
        key = _cache_key(nodes, params)
        if not keep or key is None:
            return self._obtain(nodes, params, key, memory, verbose, keep)
        with self._lock:
            graph = self._cached(key, nodes, verbose)
            if graph is not None:
                return graph
            key_lock, waiting = self._key_locks.get(key, (threading.Lock(), 0))
            self._key_locks[key] = (key_lock, waiting + 1)
        try:
            with key_lock:
                with self._lock:
                    graph = self._cached(key, nodes, verbose)
                if graph is None:
                    graph = self._obtain(nodes, params, key, memory, verbose, keep)
                    with self._lock:
                        if self.maxsize > 0:
                            self._store[key] = graph
                            while len(self._store) > self.maxsize:
                                self._store.popitem(last=False)
        finally:
            with self._lock:
                key_lock, waiting = self._key_locks[key]
                if waiting == 1:
                    del self._key_locks[key]
                else:
                    self._key_locks[key] = (key_lock, waiting - 1)
        return graph

    def store(self, nodes: NodeSet, params: GraphParams, graph: SpectralGraph, memory) -> bool:
        """Put ``graph`` (the graph of ``params`` on ``nodes``) in the disk cache ``memory``.

        As :meth:`~skmcal.graph.GraphCache.get_or_build` stores a graph it builds: without its
        neighbour index, under the key of ``params`` and the node content, so
        that later fits and other processes with the same ``memory`` load it.
        A graph found in this in-process cache is not stored by a fit; this
        stores it, for instance before handing work to other processes.

        Parameters
        ----------
        nodes : NodeSet
        params : GraphParams
        graph : SpectralGraph
        memory : str, path-like or joblib.Memory
            The disk cache (see :func:`check_memory`).

        Returns
        -------
        bool
            True if the graph was written, False if the cache held it already
            (or ``params`` cannot be cached: a ``random_state`` object).
        """
        memory = check_memory(memory)
        key = _cache_key(nodes, params)
        if memory is None or key is None:
            return False
        written = []

        def put():
            written.append(True)
            return replace(graph, index=None)

        _disk_get_or_put(memory, key, put)
        return bool(written)

    def _obtain(self, nodes, params, key, memory, verbose, keep):
        """The graph built, or loaded from ``memory`` (stored there once built)."""
        memory = check_memory(memory) if key is not None else None
        if memory is None:
            return self._build(nodes, params, verbose, keep)
        return self._from_disk(memory, key, nodes, params, verbose, keep)

    def _build(self, nodes, params, verbose, count):
        check_graph_memory(nodes.data, params)
        level = phase_level(verbose)
        first_equal = None
        if params.kernel != "precomputed":
            start = time.perf_counter()
            first_equal = nodes.first_equal
            logger.log(
                level, "Equal rows among %d nodes: %.2f s.", nodes.n_nodes,
                time.perf_counter() - start,
            )  # fmt: skip
        with _build_threads(params.n_jobs):
            graph = build_graph(nodes.data, params, first_equal, verbose, reuse_search=count)
        with self._lock:
            self.builds += bool(count)
        return graph

    def _from_disk(self, memory, key, nodes, params, verbose, count):
        level = phase_level(verbose)
        built = []

        def build():
            graph = self._build(nodes, params, verbose, count)
            built.append(graph)
            return replace(graph, index=None)

        start = time.perf_counter()
        location = getattr(memory, "location", None)
        stored = _disk_get_or_put(memory, key, build)
        if built:
            logger.log(level, "Graph stored in the disk cache %s.", location)
            return built[0]
        self.loads += bool(count)
        stored._data = nodes.data
        logger.log(
            level, "Graph of %d nodes: loaded from the disk cache %s in %.2f s.",
            nodes.n_nodes, location, time.perf_counter() - start,
        )  # fmt: skip
        return stored

    def info(self) -> list[dict]:
        """The graphs held, least recently used first.

        Returns
        -------
        list of dict
            For each graph: ``n_nodes``, ``kernel``, ``n_neighbors``,
            ``n_eigs`` and ``nbytes`` (its weights, eigenvectors and other
            arrays; the neighbour index not counted).
        """
        out = []
        for graph in self._store.values():
            arrays = [graph.weights.data, graph.weights.indices, graph.weights.indptr]
            arrays += [graph.degrees, graph.eigenvalues, graph.eigenvectors]
            extras = (graph.scales, graph.component_labels, graph.point_nodes, graph.node_points)
            arrays += [a for a in extras if a is not None]
            out.append(
                {
                    "n_nodes": graph.n_nodes,
                    "kernel": graph.params.kernel,
                    "n_neighbors": graph.params.n_neighbors,
                    "n_eigs": int(graph.eigenvalues.size),
                    "nbytes": int(sum(a.nbytes for a in arrays)),
                }
            )
        return out

    def clear(self):
        """Forget every cached graph."""
        with self._lock:
            self._store.clear()

    def __len__(self) -> int:
        return len(self._store)

    def __repr__(self) -> str:
        mb = sum(g["nbytes"] for g in self.info()) / 2**20
        return (
            f"GraphCache({len(self)} of maxsize={self.maxsize} graphs, {mb:.1f} MiB; "
            f"builds={self.builds}, loads={self.loads})"
        )


#: The process-wide graph cache used by :class:`~skmcal.SpectralGraphClassifier`.
GRAPH_CACHE = GraphCache()


def clear_graph_cache():
    """Empty :data:`~skmcal.GRAPH_CACHE`, the in-process cache (not a ``memory`` folder),
    and the kNN searches it was built from (:data:`~skmcal.graph.KNN_SEARCHES`)."""
    GRAPH_CACHE.clear()
    KNN_SEARCHES.clear()
