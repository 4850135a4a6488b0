"""Stopping rules for the active-learning loop.

Each rule is a small object: call ``update(learner)`` after every refit
(``learner`` a fitted :class:`~skmcal.SpectralGraphClassifier` or a modAL
learner wrapping one), then read ``should_stop``::

    rules = [StabilizingPredictions(random_state=0), LabelBudget(300)]
    for rule in rules:
        rule.update(learner)
    while not any(rule.should_stop for rule in rules):
        idx, _ = learner.query(pool, n_instances=5)
        learner.teach(X[idx], y[idx])
        for rule in rules:
            rule.update(learner)

:class:`StabilizingPredictions`
    Bloodgood & Vijay-Shanker (2009): the predictions on a fixed random stop
    set of nodes no longer change. After each update, Cohen's kappa between
    the current and the previous predictions; stop when the mean of the last
    ``window`` (3) kappas is at least ``threshold`` (0.99).
:class:`ModelChangeBelow`
    The posterior no longer moves: the largest model-change score over the
    unlabeled nodes (:func:`skmcal.model_change`, a full sweep by default),
    relative to the norm of the MAP coefficients, is at most ``tol``.
:class:`LabelBudget`
    At least ``n_labels`` distinct nodes are labeled.

:func:`make_rule` builds a rule from a short text (``"kappa:0.99"``,
``"mc:0.01"``, ``"budget:300"``), as the command line's ``--stop`` does.

References
----------
M. Bloodgood, K. Vijay-Shanker, "A method for stopping active learning based
on stabilizing predictions and the need for user-adjustable stopping",
CoNLL 2009.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from .query import model_change
from .selection import fitted_classifier

__all__ = [
    "RULES",
    "LabelBudget",
    "ModelChangeBelow",
    "StabilizingPredictions",
    "StoppingRule",
    "cohen_kappa",
    "make_rule",
]


def cohen_kappa(a, b) -> float:
    """Cohen's kappa between two labelings of the same items.

    ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the fraction of agreements and
    ``p_e`` the agreement expected from the two label frequencies. When both
    labelings are one and the same constant (``p_e = 1``), 1.

    Parameters
    ----------
    a, b : array-like of shape (n_items,)

    Returns
    -------
    float
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(
            f"cohen_kappa needs two non-empty 1-D labelings of one length; got shapes "
            f"{a.shape} and {b.shape}."
        )
    labels, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
    ca, cb = codes[: a.size], codes[a.size :]
    observed = np.mean(ca == cb)
    counts_a, counts_b = (np.bincount(c, minlength=labels.size) for c in (ca, cb))
    expected = np.dot(counts_a, counts_b) / a.size**2
    if expected >= 1.0:
        return 1.0
    return float((observed - expected) / (1.0 - expected))


def _n_labeled(clf) -> int:
    return int(np.unique(clf.labeled_nodes_).size)


class StoppingRule:
    """Base of the stopping rules: ``update(learner)`` and ``should_stop``.

    Attributes
    ----------
    n_labels_ : int or None
        Distinct labeled nodes at the last update (None before the first).
    n_updates_ : int
        Updates so far.
    """

    def __init__(self):
        self.n_labels_: int | None = None
        self.n_updates_ = 0

    def update(self, learner) -> StoppingRule:
        """Read the state of ``learner`` after a refit.

        Parameters
        ----------
        learner : SpectralGraphClassifier or modAL learner
            Fitted.

        Returns
        -------
        self
        """
        clf = fitted_classifier(learner)
        self._observe(clf)
        self.n_labels_ = _n_labeled(clf)
        self.n_updates_ += 1
        return self

    def _observe(self, clf) -> None:
        raise NotImplementedError

    @property
    def should_stop(self) -> bool:
        """Whether the loop should stop now."""
        raise NotImplementedError


class StabilizingPredictions(StoppingRule):
    """Stop when the predictions on a fixed stop set have stabilised.

    Parameters
    ----------
    threshold : float in (0, 1], default=0.99
        Stop when the mean of the last ``window`` kappas is at least this.
    window : int, default=3
        Number of successive kappas averaged.
    stop_set : int or float, default=2000
        The stop set, drawn once at the first update among the classifier's
        nodes: that many nodes (int; all of them if fewer) or that fraction
        of them (float in (0, 1]). Its labels are never needed.
    random_state : int, RandomState instance or None, default=None
        Draws the stop set.

    Attributes
    ----------
    stop_nodes_ : ndarray of int
        The stop set (node indices).
    kappas_ : list of float
        Kappa between the predictions of each update and the previous one.

    Notes
    -----
    A rule follows one loop: make a new one for each. An update with a
    learner whose node set differs from the first update's (another size or
    other content, compared by :attr:`NodeSet.digest <skmcal.NodeSet>`)
    raises a ValueError; a second loop over the same node set cannot be told
    from the first, and would continue its kappas.
    """

    def __init__(self, threshold=0.99, window=3, stop_set=2000, random_state=None):
        super().__init__()
        if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 < threshold <= 1:
            raise ValueError(f"threshold must be a float in (0, 1]; got {threshold!r}.")
        if isinstance(window, bool) or not isinstance(window, Integral) or window < 1:
            raise ValueError(f"window must be an int >= 1; got {window!r}.")
        valid_int = isinstance(stop_set, Integral) and stop_set >= 1
        valid_float = (
            isinstance(stop_set, Real) and not isinstance(stop_set, Integral) and 0 < stop_set <= 1
        )
        if isinstance(stop_set, bool) or not (valid_int or valid_float):
            raise ValueError(
                f"stop_set must be an int >= 1 or a fraction in (0, 1]; got {stop_set!r}."
            )
        self.threshold = float(threshold)
        self.window = int(window)
        self.stop_set = stop_set
        self.random_state = random_state
        self.stop_nodes_: np.ndarray | None = None
        self.kappas_: list[float] = []
        self._previous = None
        self._nodes: tuple[int, str] | None = None  # (size, content hash) of the node set

    def _observe(self, clf):
        nodes = clf.node_set_
        n_nodes = nodes.n_nodes
        if self.stop_nodes_ is None:
            size = (
                min(int(self.stop_set), n_nodes)
                if isinstance(self.stop_set, Integral)
                else max(1, int(round(self.stop_set * n_nodes)))
            )
            rng = check_random_state(self.random_state)
            self.stop_nodes_ = np.sort(rng.choice(n_nodes, size=size, replace=False))
            self._nodes = (n_nodes, nodes.digest)
        elif (n_nodes, nodes.digest) != self._nodes:
            n_drawn = self._nodes[0]
            if n_nodes != n_drawn:
                what = f"{n_nodes} nodes, {'fewer' if n_nodes < n_drawn else 'more'} than"
            else:
                what = f"other nodes (as many, {n_nodes}, but other data) than"
            raise ValueError(
                f"The learner's graph has {what} when the stop set was drawn ({n_drawn} "
                "nodes): a StabilizingPredictions rule follows one loop over one node set; "
                "make a new rule for each loop."
            )
        predictions = clf.transduction_[self.stop_nodes_]
        if self._previous is not None:
            self.kappas_.append(cohen_kappa(self._previous, predictions))
        self._previous = predictions

    @property
    def should_stop(self) -> bool:
        """Whether the mean of the last ``window`` kappas reaches ``threshold``."""
        recent = self.kappas_[-self.window :]
        return len(recent) == self.window and float(np.mean(recent)) >= self.threshold


class ModelChangeBelow(StoppingRule):
    """Stop when no unlabeled node's label would move the MAP by more than ``tol``.

    Parameters
    ----------
    tol : float > 0
        Stop when the largest model-change score (see
        :func:`skmcal.model_change`) is at most ``tol`` (times ``||coef_||``
        when ``relative``).
    relative : bool, default=True
        Divide the score by the Frobenius norm of the MAP coefficients
        ``coef_``, so that ``tol`` does not depend on the loss or ``gamma``:
        the largest relative change of the MAP one more label could cause.
    candidates : None, float or int, default=None
        The nodes swept: every unlabeled node (None), or a random fraction
        or number of them (as in :mod:`skmcal.query`).
    random_state : int, RandomState instance or None, default=None
        Draws the candidates.

    Attributes
    ----------
    scores_ : list of float
        The largest (relative) score at each update.
    """

    def __init__(self, tol, relative=True, candidates=None, random_state=None):
        super().__init__()
        if isinstance(tol, bool) or not isinstance(tol, Real) or not tol > 0:
            raise ValueError(f"tol must be a float > 0; got {tol!r}.")
        self.tol = float(tol)
        self.relative = bool(relative)
        self.candidates = candidates
        self.random_state = random_state
        self.scores_: list[float] = []
        self._rng = check_random_state(random_state)

    def _observe(self, clf):
        if _n_labeled(clf) >= clf.node_set_.n_nodes:
            score = 0.0
        else:
            _, (score,) = model_change(
                clf, clf.node_set_, 1, candidates=self.candidates, random_state=self._rng
            )
        if self.relative:
            norm = float(np.linalg.norm(clf.coef_))
            score = score / norm if norm > 0 else np.inf
        self.scores_.append(float(score))

    @property
    def should_stop(self) -> bool:
        """Whether the last largest score is at most ``tol``."""
        return bool(self.scores_) and self.scores_[-1] <= self.tol


class LabelBudget(StoppingRule):
    """Stop when ``n_labels`` distinct nodes are labeled.

    Parameters
    ----------
    n_labels : int >= 1
        The budget.
    """

    def __init__(self, n_labels):
        super().__init__()
        if isinstance(n_labels, bool) or not isinstance(n_labels, Integral) or n_labels < 1:
            raise ValueError(f"n_labels must be an int >= 1; got {n_labels!r}.")
        self.n_labels = int(n_labels)

    def _observe(self, clf):
        pass

    @property
    def should_stop(self) -> bool:
        """Whether the budget is spent."""
        return self.n_labels_ is not None and self.n_labels_ >= self.n_labels


#: Rules by name for :func:`make_rule`: the class and the meaning of the value.
RULES = {
    "kappa": (StabilizingPredictions, "threshold", float),
    "mc": (ModelChangeBelow, "tol", float),
    "budget": (LabelBudget, "n_labels", int),
}


def make_rule(spec: str, random_state=None) -> StoppingRule:
    """A fresh stopping rule from ``"name"`` or ``"name:value"``.

    Parameters
    ----------
    spec : str
        ``kappa[:threshold]`` (:class:`StabilizingPredictions`, default
        0.99), ``mc:tol`` (:class:`ModelChangeBelow`, relative) or
        ``budget:n_labels`` (:class:`LabelBudget`).
    random_state : int, RandomState instance or None, default=None
        For the rules that draw nodes (``kappa``, ``mc``).

    Returns
    -------
    StoppingRule

    Examples
    --------
    >>> from skmcal.stopping import make_rule
    >>> make_rule("kappa:0.98").threshold
    0.98
    >>> make_rule("budget:300").n_labels
    300
    """
    if not isinstance(spec, str):
        raise TypeError(f"A stopping rule must be a string 'name:value'; got {spec!r}.")
    name, _, text = spec.strip().lower().partition(":")
    if name not in RULES:
        raise ValueError(
            f"Unknown stopping rule {name!r} in {spec!r}; accepted: kappa[:threshold], "
            "mc:tol, budget:n_labels."
        )
    cls, parameter, kind = RULES[name]
    options = {} if name == "budget" else {"random_state": random_state}
    if not text:
        if name != "kappa":
            raise ValueError(f"The stopping rule {spec!r} needs a value: {name}:{parameter}.")
        return cls(**options)
    try:
        value = kind(text)
    except ValueError:
        what = "an int" if kind is int else "a number"
        raise ValueError(
            f"The value of the stopping rule {spec!r} must be {what} ({parameter}); got {text!r}."
        ) from None
    return cls(value, **options)
