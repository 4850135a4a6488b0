"""A narrow fix that lets modAL-python 0.4.2.1 run on scikit-learn >= 1.8.

modAL's learners call ``sklearn.utils.check_X_y(..., force_all_finite=...)``
inside ``teach()``. scikit-learn 1.6 renamed that argument to
``ensure_all_finite`` and 1.8 removed the old name, so the first ``teach()``
raises ``TypeError``. :func:`patch_modal` replaces the ``check_X_y`` name in
``modAL.models.learners`` (and nowhere else) by a wrapper that renames the
argument; scikit-learn itself is untouched. ``import skmcal.query`` applies it.
"""

from __future__ import annotations

import functools
import importlib
import inspect

from sklearn.utils import check_X_y

_MODULES = ("modAL.models.learners", "modAL.models.base")


@functools.wraps(check_X_y)
def _check_X_y_compat(*args, force_all_finite=None, **kwargs):
    if force_all_finite is not None:
        kwargs.setdefault("ensure_all_finite", force_all_finite)
    return check_X_y(*args, **kwargs)


def patch_modal() -> bool:
    """Make modAL's ``teach()`` work on this scikit-learn; return whether a patch applied.

    Does nothing when modAL is not installed or when scikit-learn still
    accepts ``force_all_finite``. Safe to call more than once.
    """
    if "force_all_finite" in inspect.signature(check_X_y).parameters:
        return False
    patched = False
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "check_X_y", None) is check_X_y:
            module.check_X_y = _check_X_y_compat
            patched = True
    return patched
