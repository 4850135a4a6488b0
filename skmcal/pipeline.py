"""Pipelines whose classifier works on a fixed pool of transformed nodes.

In ``make_pipeline(StandardScaler(), PCA(30), SpectralGraphClassifier(nodes=pool))``
the classifier receives transformed rows while its nodes are the raw pool, and
the transformers would be fitted on the labeled rows only. The graph-based way
is to fit the transformers on the whole pool (no label is used, as for the
graph itself), build the nodes from the transformed pool, and map every row of
the pool to its node exactly:

- :meth:`skmcal.NodeSet.transformed` gives the node set of the transformed pool;
- :class:`PoolTransformer` is the pipeline step that maps rows of the pool to
  those nodes (bit for bit) and transforms any other row;
- :func:`make_pool_pipeline` puts the two together.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils.validation import check_is_fitted, validate_data

from .graph import NodeSet, node_set

__all__ = ["PoolTransformer", "make_pool_pipeline"]


def _check_transformed(nodes) -> NodeSet:
    if not isinstance(nodes, NodeSet) or nodes.source is None:
        raise TypeError(
            f"nodes must be a NodeSet made by NodeSet.transformed(transformer); got {nodes!r}."
        )
    return nodes


class PoolTransformer(TransformerMixin, BaseEstimator):
    """The transform that maps rows of a pool to the nodes of its transformed pool.

    A step of a :class:`~sklearn.pipeline.Pipeline` in front of a
    :class:`~skmcal.SpectralGraphClassifier` whose nodes are ``nodes``: a row
    equal to a row of the raw pool (``nodes.source``) becomes that node's row
    of ``nodes.data``, exactly; any other row is transformed by
    ``nodes.transformer``. The transformer was fitted on the pool beforehand,
    so ``fit`` does not refit it (as :class:`sklearn.frozen.FrozenEstimator`).

    Parameters
    ----------
    nodes : NodeSet
        A node set made by :meth:`NodeSet.transformed <skmcal.NodeSet.transformed>`.

    Attributes
    ----------
    n_features_in_ : int
        Number of features of the raw rows.

    See Also
    --------
    make_pool_pipeline : The pipeline of this step and a classifier.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.pipeline import make_pipeline
    >>> from skmcal import NodeSet, SpectralGraphClassifier
    >>> from skmcal.pipeline import PoolTransformer
    >>> X, y = load_digits(return_X_y=True)
    >>> pool = NodeSet(X)
    >>> features = pool.transformed(PCA(20, random_state=0).fit(X))
    >>> model = make_pipeline(
    ...     PoolTransformer(features), SpectralGraphClassifier(nodes=features)
    ... ).fit(X[:100], y[:100])
    >>> float(model.score(X, y)) > 0.85
    True
    """

    def __init__(self, nodes):
        self.nodes = nodes

    def fit(self, X, y=None):
        """Check the rows' width; the transformer is not refitted.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows of the raw pool (or any rows with its number of features).
        y : None
            Ignored.

        Returns
        -------
        self : PoolTransformer
        """
        source = _check_transformed(self.nodes).source
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        if X.shape[1] != source.n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but the pool that nodes was transformed "
                f"from has {source.n_features}."
            )
        return self

    def transform(self, X):
        """Rows of the transformed pool for rows of the pool; ``transform`` for others.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray or sparse matrix of shape (n_samples, n_transformed_features)
        """
        check_is_fitted(self)
        nodes = _check_transformed(self.nodes)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        index = nodes.source.lookup(X)
        found = index >= 0
        if found.all():
            return nodes.data[index]
        other = nodes.transformer.transform(X[~found])
        if sp.issparse(nodes.data) or sp.issparse(other):
            order = np.argsort(np.concatenate([np.flatnonzero(found), np.flatnonzero(~found)]))
            stacked = sp.vstack([sp.csr_matrix(nodes.data[index[found]]), sp.csr_matrix(other)])
            return stacked.tocsr()[order]
        out = np.empty((X.shape[0], nodes.n_features))
        out[found] = nodes.data[index[found]]
        out[~found] = other
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.requires_fit = False
        return tags


def make_pool_pipeline(transformer, classifier, nodes) -> Pipeline:
    """A pipeline of a transformer fitted on the pool and a classifier on its nodes.

    Fits a clone of ``transformer`` on the whole pool (no label is used),
    makes the node set of the transformed pool
    (:meth:`NodeSet.transformed <skmcal.NodeSet.transformed>`) and returns
    ``make_pipeline(PoolTransformer(features), classifier)`` with a clone of
    ``classifier`` whose ``nodes`` are those. The pipeline then takes raw rows
    of the pool in ``fit`` (the labeled ones), ``predict`` and the query
    strategies' ``X_pool``, and raw new points in ``predict``.

    Parameters
    ----------
    transformer : transformer
        Unfitted, such as ``make_pipeline(StandardScaler(), PCA(30))``.
    classifier : SpectralGraphClassifier
        Its ``nodes`` is replaced.
    nodes : array-like, sparse matrix or NodeSet
        The raw pool.

    Returns
    -------
    Pipeline
        Two steps, ``pooltransformer`` and the classifier's.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skmcal import SpectralGraphClassifier
    >>> from skmcal.pipeline import make_pool_pipeline
    >>> X, y = load_digits(return_X_y=True)
    >>> model = make_pool_pipeline(
    ...     make_pipeline(StandardScaler(), PCA(30, random_state=0)),
    ...     SpectralGraphClassifier(),
    ...     X,
    ... ).fit(X[:100], y[:100])
    >>> model[-1].node_set_.n_features
    30
    """
    pool = node_set(nodes)
    features = pool.transformed(clone(transformer).fit(pool.data))
    return make_pipeline(PoolTransformer(features), clone(classifier).set_params(nodes=features))
