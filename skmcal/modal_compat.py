"""An explicit fix that lets modAL-python 0.4.2.1 run on scikit-learn >= 1.8.

modAL's learners call ``sklearn.utils.check_X_y(..., force_all_finite=...)``
inside ``teach()``. scikit-learn 1.6 renamed that argument to
``ensure_all_finite`` and 1.8 removed the old name, so the first ``teach()``
raises ``TypeError``. :func:`patch_modal` (also ``skmcal.patch_modal``) fixes
that when you call it; importing skmcal changes nothing in modAL.
"""

from __future__ import annotations

import functools
import importlib
import inspect

from sklearn.utils import check_X_y

__all__ = ["patch_modal"]

#: The modAL modules whose ``check_X_y`` name :func:`patch_modal` replaces.
MODAL_MODULES = ("modAL.models.learners", "modAL.models.base")


@functools.wraps(check_X_y)
def _check_X_y_compat(*args, force_all_finite=None, **kwargs):
    if force_all_finite is not None:
        kwargs.setdefault("ensure_all_finite", force_all_finite)
    return check_X_y(*args, **kwargs)


def patch_modal() -> bool:
    """Make modAL's ``ActiveLearner.teach()`` work on scikit-learn >= 1.8.

    Call it once, before the first ``teach()``, in a program that uses
    modAL's learners with scikit-learn 1.8 or later; importing skmcal does
    not call it.

    What it changes: in the module ``modAL.models.learners`` (and in
    ``modAL.models.base``, should a modAL version import it there), the
    global name ``check_X_y`` (scikit-learn's function, imported there by
    modAL) is rebound to a wrapper that passes
    modAL's ``force_all_finite=`` on to scikit-learn as ``ensure_all_finite=``
    and everything else unchanged. Nothing else is touched: not scikit-learn
    (``sklearn.utils.check_X_y`` stays as it is), not the other modules of
    modAL, not skmcal. A name that is already something other than
    scikit-learn's ``check_X_y`` (a patch of your own) is left alone.

    It does nothing when modAL is not installed or when this scikit-learn
    still accepts ``force_all_finite``, and is safe to call more than once.

    Returns
    -------
    bool
        Whether a name was replaced by this call.

    Examples
    --------
    >>> import skmcal
    >>> _ = skmcal.patch_modal()  # once, before modAL's first teach()
    """
    if "force_all_finite" in inspect.signature(check_X_y).parameters:
        return False
    patched = False
    for name in MODAL_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "check_X_y", None) is check_X_y:
            module.check_X_y = _check_X_y_compat
            patched = True
    return patched
