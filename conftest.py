"""Collection settings for the doctests of skmcal/ (pytest --doctest-modules)."""

from importlib.util import find_spec

# The scikit-activeml adapter imports scikit-activeml, an optional extra: its
# doctests are skipped where it is not installed (tests/test_skactiveml.py
# skips its own tests the same way).
collect_ignore = [] if find_spec("skactiveml") else ["skmcal/skactiveml.py"]
