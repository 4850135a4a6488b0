# Set-up and main jobs. `make demo`, `make test` and `make docs` each create the
# virtual environment in .venv (once), install skmcal into it, and run their job.
# `make test` builds the documentation too (tests/test_docs.py).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: venv demo test docs dist bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m skmcal demo

test: $(STAMP)
	$(PY) -m pytest -q

# The HTML documentation in docs/_build/html, warnings as errors; the gallery
# (examples/) runs while it builds.
docs: $(STAMP)
	$(PY) -m sphinx -n -W --keep-going -b html docs docs/_build/html

# The sdist and wheel in dist/, checked by twine.
dist: $(STAMP)
	$(PY) -m pip install --quiet build twine
	rm -rf dist
	$(PY) -m build
	$(PY) -m twine check --strict dist/*

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/bench_core.py --sizes 10000 70000 --out benchmarks/results
	$(PY) benchmarks/bench_al.py --sizes 10000 70000 --iterations 20 --out benchmarks/results

clean:
	rm -rf $(VENV) .pytest_cache build dist *.egg-info docs/_build docs/api/generated docs/auto_examples
