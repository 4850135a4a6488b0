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


#: Warnings already shown under a once-only action ("default", "module", "once"):
#: Python's own record of them is emptied whenever a filter changes, and skmcal's
#: fits change filters (``warnings.catch_warnings``) at every call, so a warning
#: from a loop's line came again at every iteration.
_SHOWN: set = set()


def _action(text, category, module, lineno) -> str:
    """The action of the first filter of ``warnings.filters`` that matches, as
    :func:`warnings.warn` would find it (else ``warnings.defaultaction``)."""
    for action, message, kind, module_re, line in warnings.filters:
        if (
            (message is None or message.match(text))
            and issubclass(category, kind)
            and (module_re is None or module_re.match(module))
            and (line == 0 or line == lineno)
        ):
            return action
    return warnings.defaultaction


def warn_user(message, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` at the first frame outside the packages
    of :func:`_prefixes` (the caller's caller's ..., as far as they go).

    Under a once-only action (Python's default for most warnings) a warning
    already shown at that line (``"default"``), in that module (``"module"``) or
    at all (``"once"``) is not shown again, whatever filters changed since;
    under ``"always"`` (``pytest.warns``, ``warnings.simplefilter("always")``)
    every call shows.
    """
    prefixes = _prefixes()
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        prefixes
    ):
        frame, level = frame.f_back, level + 1
    text = str(message)
    module = frame.f_globals.get("__name__", "")
    action = _action(text, category, module, frame.f_lineno)
    if action in ("default", "module", "once"):
        where = {"default": (module, frame.f_lineno), "module": (module,), "once": ()}[action]
        key = (action, text, category, *where)
        if key in _SHOWN:
            return
        _SHOWN.add(key)
    warnings.warn(message, category, stacklevel=level)
