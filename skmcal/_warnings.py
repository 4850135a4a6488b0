"""Warnings that point at the user's line, not at skmcal's or scikit-learn's.

A warning's ``stacklevel`` counts frames, and the frames between a user's call
and the code that warns vary: scikit-learn wraps ``fit`` (``_fit_context``), modAL
calls ``fit`` and the strategies, and skmcal's own helpers nest differently
along different paths. :func:`warn_user` walks the stack instead and reports the
first frame outside skmcal, scikit-learn, modAL and scikit-activeml.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import warnings

__all__ = ["warn_user"]

#: Packages whose frames a warning skips on its way to the user's line.
PASSED_THROUGH = ("sklearn", "modAL", "skactiveml")


@functools.cache
def _prefixes() -> tuple[str, ...]:
    """Folders of skmcal and of :data:`PASSED_THROUGH` (those installed), with a separator."""
    folders = [os.path.dirname(os.path.abspath(__file__))]
    for name in PASSED_THROUGH:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            folders += [os.path.abspath(p) for p in spec.submodule_search_locations]
    return tuple(folder + os.sep for folder in folders)


def warn_user(message, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` at the first frame outside the packages
    of :func:`_prefixes` (the caller's caller's ..., as far as they go)."""
    prefixes = _prefixes()
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        prefixes
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
