"""The five likelihoods of the paper, in numerically stable (log-space) form.

Every loss is a function of the latent value(s) ``u`` of one labeled node and
its label. Binary losses take ``y`` in {-1, +1} and scalar latents; multiclass
losses take one-hot rows ``Y`` and latent rows ``U`` (one column per class).

Every loss has the same protocol, so that nothing outside this module and the
posterior families needs to know which loss it holds:

- ``value(U, Y, gamma)``: the loss of each labeled row;
- ``derivatives(U, Y, gamma) -> (gradient, curvature)``: the gradient of each
  row's loss in its latent value(s), and what determines its Hessian: the
  second derivative ``F'`` per row for the rank-one family (binary losses and
  ``mgr``, whose Hessian is ``F' I``), the softmax rows ``pi`` for ``ce``
  (Hessian ``(diag(pi) - pi pi') / gamma^2``);
- ``proba(U, gamma)``: the likelihood of each class at given latent values,
  normalised over the classes, shape ``(n, n_classes)`` for every loss; what
  :meth:`~skmcal.SpectralGraphClassifier.predict_proba` reports;
- ``encode(codes, n_classes)`` and ``pseudo_targets(U)``: the targets of
  class codes, and of the class each latent value predicts (the pseudo-label
  of the look-ahead updates);
- ``family``: ``"rank_one"`` (one ``M x M`` covariance shared by the classes)
  or ``"softmax"`` (ce, coupled classes).

All formulas are those of the documentation's math page (``docs/math.rst``);
the log-space forms keep them finite for ``|u| / gamma`` of 1e3 and beyond.
"""

from __future__ import annotations

import numpy as np
from scipy.special import erfcx, expit, log_ndtr, logsumexp, ndtr, softmax

_SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _mills_ratio_inverse(z):
    """Return ``phi(z) / Phi(z)`` for the standard normal, stable for all z.

    For ``z < 0`` it uses ``Phi(z) = exp(-z^2/2) erfcx(-z/sqrt 2) / 2``, so no
    exponential of a large number is formed; for ``z >= 0`` the ratio is at
    most ``phi(0) / Phi(0)`` and the log-space form is exact.
    """
    z = np.asarray(z, dtype=float)
    neg = z < 0
    out = np.empty_like(z)
    out[neg] = _SQRT_2_OVER_PI / erfcx(-z[neg] / np.sqrt(2.0))
    zp = z[~neg]
    out[~neg] = np.exp(-0.5 * zp * zp - _LOG_SQRT_2PI - log_ndtr(zp))
    return out


#: Below this z, ``r (r + z)`` cancels; the asymptotic series is used instead.
_PROBIT_TAIL = -50.0


def _probit_curvature(z, r):
    """``r (r + z)`` with ``r = phi(z) / Phi(z)``: the probit curvature at ``gamma = 1``.

    For ``z < -50`` the difference ``r + z`` cancels, so the asymptotic
    series of the Mills ratio is used: with ``w = 1/z^2`` and
    ``p = 1 - 3w + 15w^2 - 105w^3 + 945w^4``, ``r (r + z) = p / (1 - w p)^2``
    (truncation error below 1e-16 there).
    """
    out = r * (r + z)
    tail = z < _PROBIT_TAIL
    if np.any(tail):
        w = 1.0 / z[tail] ** 2
        p = 1.0 - w * (3.0 - w * (15.0 - w * (105.0 - 945.0 * w)))
        out[tail] = p / (1.0 - w * p) ** 2
    return out


class BinaryLoss:
    """A binary likelihood ``l(x, y)`` with ``y`` in {-1, +1}.

    Subclasses implement :meth:`value`, :meth:`derivatives` and
    :meth:`proba_positive`; all act elementwise on arrays. Class code 0 is
    coded -1, class code 1 is coded +1.
    """

    name: str = ""
    closed_form: bool = False
    multiclass = False
    family = "rank_one"

    def encode(self, codes, n_classes=2, scale=None):
        """Targets of class codes in {0, 1}: -1 and +1, times ``scale[code]`` if given
        (the target scale of each class, :func:`target_scales`)."""
        codes = np.asarray(codes, dtype=np.intp)
        targets = 2.0 * codes - 1.0
        return targets if scale is None else targets * np.asarray(scale, dtype=float)[codes]

    def pseudo_targets(self, u, scale=None):
        """The target each latent value predicts: +1 where ``u >= 0``, else -1 (times
        the class's ``scale`` if given, as :meth:`encode`)."""
        return self.encode(np.asarray(u) >= 0, 2, scale)

    def gradient(self, u, y, gamma):
        """First derivative ``F`` of ``l`` in ``u``."""
        return self.derivatives(u, y, gamma)[0]

    def proba(self, u, gamma):
        """Likelihood of the classes (-1, +1) at latent ``u``: shape ``(n, 2)``."""
        u = np.asarray(u, dtype=float)
        return np.column_stack([self.proba_positive(-u, gamma), self.proba_positive(u, gamma)])

    def value(self, u, y, gamma):
        """Loss ``l(u, y)`` elementwise."""
        raise NotImplementedError

    def derivatives(self, u, y, gamma):
        """Return ``(F, F')``: first and second derivative of ``l`` in ``u``."""
        raise NotImplementedError

    def proba_positive(self, u, gamma):
        """Likelihood of the label +1 at latent ``u``, normalised over {-1, +1}."""
        raise NotImplementedError


class GaussianRegressionLoss(BinaryLoss):
    """``(x - y)^2 / (2 gamma^2)``; the Gaussian regression (GR) model."""

    name = "gr"
    closed_form = True

    def value(self, u, y, gamma):
        return (u - y) ** 2 / (2.0 * gamma**2)

    def derivatives(self, u, y, gamma):
        u = np.asarray(u, dtype=float)
        return (u - y) / gamma**2, np.full_like(u, 1.0 / gamma**2)

    def proba_positive(self, u, gamma):
        # exp(-(u-1)^2/2g^2) / (exp(-(u-1)^2/2g^2) + exp(-(u+1)^2/2g^2))
        return expit(2.0 * np.asarray(u, dtype=float) / gamma**2)


class LogisticLoss(BinaryLoss):
    """``log(1 + exp(-x y / gamma))``; the logistic (LOG) model."""

    name = "logistic"

    def value(self, u, y, gamma):
        return np.logaddexp(0.0, -u * y / gamma)

    def derivatives(self, u, y, gamma):
        t = u * y / gamma
        first = -(y / gamma) * expit(-t)
        second = expit(t) * expit(-t) / gamma**2
        return first, second

    def proba_positive(self, u, gamma):
        return expit(np.asarray(u, dtype=float) / gamma)


class ProbitLoss(BinaryLoss):
    """``-log Psi_gamma(x y)`` with ``Psi_gamma`` the N(0, gamma^2) CDF (P model)."""

    name = "probit"

    def value(self, u, y, gamma):
        return -log_ndtr(u * y / gamma)

    def derivatives(self, u, y, gamma):
        z = np.asarray(u * y / gamma, dtype=float)
        r = _mills_ratio_inverse(z)
        first = -(y / gamma) * r
        return first, _probit_curvature(z, r) / gamma**2

    def proba_positive(self, u, gamma):
        return ndtr(np.asarray(u, dtype=float) / gamma)


class MulticlassLoss:
    """A multiclass likelihood of latent rows ``U`` and one-hot rows ``Y``."""

    name: str = ""
    closed_form: bool = False
    multiclass = True
    family = "rank_one"

    def encode(self, codes, n_classes, scale=None):
        """One-hot rows of class codes; with ``scale`` (the target scale of each
        class, :func:`target_scales`), row ``j``'s one is ``scale[codes[j]]``."""
        eye = np.eye(n_classes) if scale is None else np.diag(np.asarray(scale, dtype=float))
        return eye[np.asarray(codes, dtype=np.intp)]

    def pseudo_targets(self, U, scale=None):
        """One-hot rows of the class of the largest latent value of each row (scaled
        as :meth:`encode` with ``scale``)."""
        return self.encode(np.argmax(U, axis=1), U.shape[1], scale)

    def value(self, U, Y, gamma):
        """Loss of each row, shape ``(n,)``."""
        raise NotImplementedError

    def derivatives(self, U, Y, gamma):
        """Return ``(gradient rows, curvature)``; see the module documentation."""
        raise NotImplementedError

    def gradient(self, U, Y, gamma):
        """Gradient of each row's loss in its latent row."""
        return self.derivatives(U, Y, gamma)[0]

    def proba(self, U, gamma):
        """Likelihood of each class at latent rows ``U``, normalised per row."""
        raise NotImplementedError


class MulticlassGaussianRegressionLoss(MulticlassLoss):
    """``||x - y||^2 / (2 gamma^2)``; multiclass Gaussian regression (MGR)."""

    name = "mgr"
    closed_form = True

    def value(self, U, Y, gamma):
        return ((U - Y) ** 2).sum(axis=1) / (2.0 * gamma**2)

    def derivatives(self, U, Y, gamma):
        """Return ``((U - Y) / gamma^2, 1 / gamma^2)``: each row's Hessian is ``I / gamma^2``."""
        U = np.asarray(U, dtype=float)
        return (U - Y) / gamma**2, np.full(U.shape[0], 1.0 / gamma**2)

    def proba(self, U, gamma):
        # exp(-||u - e_c||^2 / 2g^2) normalised over c is softmax(u / g^2).
        return softmax(np.asarray(U, dtype=float) / gamma**2, axis=1)


class CrossEntropyLoss(MulticlassLoss):
    """``-<y, x>/gamma + logsumexp(x / gamma)``; the cross-entropy (CE) model."""

    name = "ce"
    family = "softmax"

    def value(self, U, Y, gamma):
        return logsumexp(U / gamma, axis=1) - (Y * U).sum(axis=1) / gamma

    def derivatives(self, U, Y, gamma):
        """Return ``(G, Pi)``: the gradient rows ``(pi - y) / gamma`` and ``pi``.

        ``pi = softmax(u / gamma)``; the Hessian of a row's loss in its latent
        row is ``(diag(pi) - pi pi') / gamma^2``.
        """
        Pi = self.proba(U, gamma)
        return (Pi - Y) / gamma, Pi

    def value_gradient(self, U, Y, gamma):
        """``(value, G)`` of :meth:`value` and :meth:`derivatives` from one pass over ``U``."""
        Z = np.asarray(U, dtype=float) / gamma
        top = Z.max(axis=1, keepdims=True)
        E = np.exp(Z - top)
        total = E.sum(axis=1, keepdims=True)
        value = (top + np.log(total))[:, 0] - (Y * Z).sum(axis=1)
        return value, (E / total - Y) / gamma

    def proba(self, U, gamma):
        return softmax(np.asarray(U, dtype=float) / gamma, axis=1)


LOSSES = {
    loss.name: loss
    for loss in (
        GaussianRegressionLoss(),
        LogisticLoss(),
        ProbitLoss(),
        MulticlassGaussianRegressionLoss(),
        CrossEntropyLoss(),
    )
}
"""Every loss by name: ``gr``, ``logistic``, ``probit`` (binary), ``mgr``, ``ce``."""


def target_scales(codes, n_classes, power):
    """The target scale of each class: ``(n / (n_classes n_c))^power``.

    ``n_c`` labels of class ``c`` among ``n``. With ``power=1`` a class's
    targets sum to ``n / n_classes`` whatever its count (scikit-learn's
    "balanced" weights); with ``power=0.5`` (``SpectralGraphClassifier``'s
    ``target_scale="sqrt"``) to ``sqrt(n_c n / n_classes)``. Evenly labeled
    classes keep the scale 1. The Gaussian losses' fits are linear in the
    targets, so the scales multiply each class's latent values: a class
    labeled more often than the others no longer reaches further for it.

    Parameters
    ----------
    codes : array-like of int of shape (n,)
        The class code of each label, in ``range(n_classes)``; every class
        labeled at least once.
    n_classes : int
    power : float
        Non-negative; 0 gives ones.

    Returns
    -------
    ndarray of shape (n_classes,)

    Examples
    --------
    >>> target_scales([0, 0, 0, 1], 2, 1.0).tolist()
    [0.6666666666666666, 2.0]
    >>> target_scales([0, 0, 0, 1], 2, 0.5).round(4).tolist()
    [0.8165, 1.4142]
    """
    codes = np.asarray(codes, dtype=np.intp)
    counts = np.bincount(codes, minlength=n_classes)
    if counts.size != n_classes or not np.all(counts > 0):
        raise ValueError(
            f"target_scales needs at least one label of each of the {n_classes} classes "
            f"and codes below {n_classes}; got counts {counts.tolist()}."
        )
    if not (np.isfinite(power) and power >= 0):
        raise ValueError(f"power must be a non-negative float; got {power!r}.")
    return (codes.size / (n_classes * counts)) ** float(power)
