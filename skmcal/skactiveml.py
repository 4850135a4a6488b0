"""scikit-activeml interop: skmcal's classifier and query strategies in its loops.

scikit-activeml keeps the whole pool ``X`` with labels ``y`` in which a marker
(NaN by default) stands for a missing label, and asks a query strategy
``qs.query(X, y, clf, batch_size=...)`` for the indices of the rows to label.

- :func:`skactiveml_classifier` wraps a :class:`~skmcal.SpectralGraphClassifier`
  as a scikit-activeml classifier (its ``SklearnClassifier`` with the
  unlabeled rows passed on, since they are nodes of the graph), so that
  scikit-activeml's own strategies (uncertainty sampling, ...) can use it.
- :class:`GraphQueryStrategy` is a scikit-activeml query strategy that runs one
  of skmcal's strategies (:mod:`skmcal.query`: model change, V-opt,
  Sigma-opt, uncertainty, random) on that classifier's posterior.

Needs ``pip install skmcal[skactiveml]``.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_blobs
>>> from skactiveml.utils import MISSING_LABEL
>>> from skmcal.skactiveml import GraphQueryStrategy, skactiveml_classifier
>>> X, y_true = make_blobs(300, centers=3, random_state=0)
>>> y = np.full(300, MISSING_LABEL)
>>> clf = skactiveml_classifier(classes=[0, 1, 2])
>>> qs = GraphQueryStrategy("model_change", random_state=0)
>>> for _ in range(10):
...     idx = qs.query(X, y, clf, batch_size=3)
...     y[idx] = y_true[idx]
>>> clf = clf.fit(X, y)
>>> int(np.sum(~np.isnan(y)))
30
>>> float(clf.score(X, y_true)) > 0.85
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from . import query
from ._warnings import warn_user
from .classifier import SpectralGraphClassifier
from .selection import candidate_rows, pool_nodes

try:
    from skactiveml.base import SingleAnnotatorPoolQueryStrategy
    from skactiveml.classifier import SklearnClassifier
    from skactiveml.utils import MISSING_LABEL, check_equal_missing_label, is_labeled
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "skmcal.skactiveml needs scikit-activeml; install it with "
        "`pip install skmcal[skactiveml]` (or `pip install scikit-activeml`)."
    ) from exc

__all__ = ["STRATEGIES", "GraphQueryStrategy", "skactiveml_classifier"]

#: The strategies of :mod:`skmcal.query` by name, for :class:`GraphQueryStrategy`.
STRATEGIES: dict[str, Callable] = {
    "model_change": query.model_change,
    "vopt": query.vopt,
    "sopt": query.sopt,
    "uncertainty": query.uncertainty,
    "random_sampling": query.random_sampling,
}


def skactiveml_classifier(
    estimator: SpectralGraphClassifier | None = None,
    *,
    classes=None,
    missing_label=MISSING_LABEL,
    cost_matrix=None,
    random_state=None,
) -> SklearnClassifier:
    """A :class:`~skmcal.SpectralGraphClassifier` as a scikit-activeml classifier.

    scikit-activeml's ``SklearnClassifier`` fits its estimator on the labeled
    rows only, unless ``include_unlabeled_samples=True``; a graph-based
    classifier needs every row (the unlabeled ones are nodes of the graph), so
    that is set, and the estimator's ``missing_label`` is set to the
    wrapper's. Until two classes are labeled the estimator cannot be fitted
    and the wrapper predicts the label frequencies (uniform with no label),
    with a warning, as it does for any estimator it cannot fit.

    Parameters
    ----------
    estimator : SpectralGraphClassifier, default=None
        The classifier (cloned); None: ``SpectralGraphClassifier()``.
    classes : array-like of shape (n_classes,), default=None
        All the classes, so that probabilities have a column for each class
        from the start; None: the classes among the labels seen in ``fit``.
    missing_label : scalar, str, np.nan or None, default=np.nan
        The marker of a missing label, scikit-activeml's default NaN.
    cost_matrix : array-like of shape (n_classes, n_classes), default=None
        Misclassification costs (needs ``classes``).
    random_state : int, RandomState instance or None, default=None
        Breaks ties in scikit-activeml's ``predict``.

    Returns
    -------
    skactiveml.classifier.SklearnClassifier
        The wrapped classifier; the fitted ``SpectralGraphClassifier`` is its
        ``estimator_`` once two classes are labeled.
    """
    if estimator is None:
        estimator = SpectralGraphClassifier()
    if not isinstance(estimator, SpectralGraphClassifier):
        raise TypeError(
            f"estimator must be a SpectralGraphClassifier; got {type(estimator).__name__}."
        )
    return SklearnClassifier(
        clone(estimator).set_params(missing_label=missing_label),
        classes=classes,
        missing_label=missing_label,
        cost_matrix=cost_matrix,
        include_unlabeled_samples=True,
        random_state=random_state,
    )


class GraphQueryStrategy(SingleAnnotatorPoolQueryStrategy):
    """One of skmcal's query strategies as a scikit-activeml query strategy.

    ``query(X, y, clf, ...)`` fits the classifier on the pool (unless
    ``fit_clf=False``) and picks the rows with :mod:`skmcal.query`'s
    ``strategy`` on its Laplace posterior. Until two classes are labeled
    there is no posterior to score: the batch is then drawn uniformly at
    random among the candidates (all utilities equal).

    Parameters
    ----------
    strategy : {"model_change", "vopt", "sopt", "uncertainty", "random_sampling"} \
            or callable, default="model_change"
        A name of :data:`STRATEGIES` or a function with the contract of
        :mod:`skmcal.query`, ``f(learner, X_pool, n_instances, **options) ->
        (indices, scores)``.
    batch : {"topk", "greedy"}, default="topk"
        How a batch of more than one row is chosen: the ``batch_size`` best
        rows (``topk``) or one at a time, each added with its pseudo-label
        through the posterior's look-ahead update before the next is scored
        (``greedy``). Ignored by ``random_sampling``. Top-k by default,
        unlike skmcal's own strategies (greedy by default), because
        ``return_utilities`` needs a single scoring.
    strategy_options : dict or None, default=None
        Further options of the strategy, such as ``{"measure": "entropy"}``
        for ``uncertainty``.
    missing_label : scalar, str, np.nan or None, default=np.nan
        The marker of a missing label in ``y``; the classifier's must be the
        same.
    random_state : int, RandomState instance or None, default=None
        Draws the ties and the random batches, as scikit-activeml's
        strategies do (a seed shifted by the number of unlabeled rows).

    See Also
    --------
    skactiveml_classifier : The matching classifier.
    skmcal.model_change, skmcal.vopt, skmcal.sopt : The strategy functions.
    skmcal.uncertainty, skmcal.random_sampling : The other strategy functions.
    """

    def __init__(
        self,
        strategy="model_change",
        *,
        batch="topk",
        strategy_options=None,
        missing_label=MISSING_LABEL,
        random_state=None,
    ):
        super().__init__(missing_label=missing_label, random_state=random_state)
        self.strategy = strategy
        self.batch = batch
        self.strategy_options = strategy_options

    def _strategy(self):
        if callable(self.strategy):
            function = self.strategy
        elif isinstance(self.strategy, str) and self.strategy in STRATEGIES:
            function = STRATEGIES[self.strategy]
        else:
            raise ValueError(
                f"strategy must be one of {sorted(STRATEGIES)} or a callable; "
                f"got {self.strategy!r}."
            )
        if self.batch not in query.BATCH_MODES:
            raise ValueError(f"batch must be one of {query.BATCH_MODES}; got {self.batch!r}.")
        options = dict(self.strategy_options or {})
        reserved = sorted({"n_instances", "candidates", "random_state"} & set(options))
        if reserved:
            raise ValueError(
                f"strategy_options may not set {reserved}: the adapter passes them (query's "
                f"batch_size and candidates, the strategy's random_state)."
            )
        if function is not query.random_sampling:
            options["batch"] = self.batch
        return function, options

    def _check_classifier(self, clf):
        """Refuse a classifier of another kind or with another missing-label marker.

        Done before ``y`` is read: with another marker the unlabeled rows of ``y``
        would look labeled, and the query would end early with no candidates."""
        if not isinstance(clf, (SpectralGraphClassifier, SklearnClassifier)) or (
            isinstance(clf, SklearnClassifier)
            and not isinstance(clf.estimator, SpectralGraphClassifier)
        ):
            raise TypeError(
                "clf must be a SpectralGraphClassifier or a scikit-activeml SklearnClassifier "
                f"wrapping one (see skactiveml_classifier); got {clf!r}."
            )
        check_equal_missing_label(clf.missing_label, self.missing_label)

    def _graph_classifier(self, clf, X, y, fit_clf):
        """The fitted SpectralGraphClassifier behind ``clf`` (checked by
        :meth:`_check_classifier`); None before two classes."""
        labeled = is_labeled(y, self.missing_label_)
        if np.unique(y[labeled]).size < 2:
            return None
        if fit_clf:
            clf = clone(clf).fit(X, y)
        if isinstance(clf, SklearnClassifier):
            check_is_fitted(clf)
            return clf.estimator_ if clf.is_fitted_ else None
        return clf

    def query(
        self,
        X,
        y,
        clf,
        fit_clf=True,
        candidates=None,
        batch_size=1,
        return_utilities=False,
    ):
        """The rows to label next.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The pool, labeled and unlabeled rows; with ``fit_clf=False``, rows
            of the classifier's nodes.
        y : array-like of shape (n_samples,)
            Labels, ``missing_label`` for the unlabeled rows.
        clf : SpectralGraphClassifier or skactiveml.classifier.SklearnClassifier
            The classifier (:func:`skactiveml_classifier`), or a bare
            ``SpectralGraphClassifier`` with the same ``missing_label``.
        fit_clf : bool, default=True
            Fit a clone of ``clf`` on ``(X, y)`` first; False: ``clf`` is
            already fitted on them.
        candidates : None, array-like of shape (n_candidates,) of int, or \
                array-like of shape (n_candidates, n_features), default=None
            None: the unlabeled rows of ``X``. Indices: those rows of ``X``.
            Rows: these points, which must be nodes of the classifier's graph
            (the returned indices then index ``candidates``). Labeled rows
            are never chosen.
        batch_size : int, default=1
            Rows to choose.
        return_utilities : bool, default=False
            Also return the utilities (``batch="topk"`` only).

        Returns
        -------
        query_indices : ndarray of shape (batch_size,)
            Rows of ``X`` (or of ``candidates`` given as rows), best first.
        utilities : ndarray of shape (batch_size, n_samples) or (batch_size, n_candidates)
            Only with ``return_utilities``: the strategy's score of every
            candidate, NaN elsewhere; row ``b`` has the first ``b`` chosen
            rows set to NaN too.

        Raises
        ------
        TypeError
            If ``clf`` is not a SpectralGraphClassifier or a SklearnClassifier
            wrapping one.
        ValueError
            If the classifier's ``missing_label`` differs from this
            strategy's (checked first: with another marker no row of ``y``
            would look unlabeled).
        """
        self._check_classifier(clf)
        X, y, candidates, batch_size, return_utilities = self._validate_data(
            X, y, candidates, batch_size, return_utilities, reset=True
        )
        function, options = self._strategy()
        if return_utilities and self.batch != "topk" and function is not query.random_sampling:
            raise ValueError(
                "return_utilities=True needs batch='topk': a greedy batch rescores "
                "the candidates after each pick."
            )
        X_cand, mapping = self._transform_candidates(candidates, X, y)
        n_out = X.shape[0] if mapping is not None else X_cand.shape[0]
        if mapping is not None:
            rows = np.asarray(mapping, dtype=np.intp)
            rows = rows[~is_labeled(y[rows], self.missing_label_)]
        else:
            rows = np.arange(X_cand.shape[0])
        batch_size = _fit_batch(batch_size, rows.size)
        if batch_size == 0:
            return _output(np.empty(0, dtype=np.intp), None, n_out, 0, return_utilities)

        estimator = self._graph_classifier(clf, X, y, fit_clf)
        rng = self.random_state_
        if estimator is None:
            utilities = np.full(n_out, np.nan)
            utilities[rows] = 1.0
            chosen = rng.choice(rows, size=batch_size, replace=False)
            return _output(chosen, utilities, n_out, batch_size, return_utilities)

        pool = X if mapping is not None else X_cand
        # the strategies' own candidates: one row per point, none equal to a labeled one
        labeled = estimator.node_set_.first_equal[estimator.labeled_nodes_]
        rows = candidate_rows(pool_nodes(estimator, pool), labeled, rows, 0, rng)
        batch_size = _fit_batch(
            batch_size, rows.size,
            " once equal rows count once (and rows equal to a labeled one not at all)",
        )  # fmt: skip
        if batch_size == 0:
            return _output(np.empty(0, dtype=np.intp), None, n_out, 0, return_utilities)
        n_instances = rows.size if return_utilities else batch_size
        picks, scores = function(
            estimator,
            pool,
            n_instances=n_instances,
            candidates=rows,
            random_state=rng,
            **options,
        )
        utilities = None
        if return_utilities:
            utilities = np.full(n_out, np.nan)
            utilities[picks] = scores
        return _output(picks[:batch_size], utilities, n_out, batch_size, return_utilities)


def _fit_batch(batch_size, n_rows, counted=""):
    """``batch_size``, or ``n_rows`` with a warning where fewer candidates remain."""
    if n_rows >= batch_size:
        return batch_size
    warn_user(
        f"batch_size={batch_size} exceeds the {n_rows} unlabeled candidates{counted}; "
        f"choosing {n_rows}.",
        UserWarning,
    )
    return n_rows


def _output(chosen, utilities, n_out, batch_size, return_utilities):
    chosen = np.asarray(chosen, dtype=np.intp)
    if not return_utilities:
        return chosen
    table = np.tile(utilities if utilities is not None else np.full(n_out, np.nan), (batch_size, 1))
    for b in range(1, batch_size):
        table[b:, chosen[b - 1]] = np.nan
    return chosen, table
