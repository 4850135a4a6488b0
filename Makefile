# Set-up and main jobs. `make demo` and `make test` each create the virtual
# environment in .venv (once), install skmcal into it, and run their job.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: venv demo test bench lint clean

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

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/bench_core.py --sizes 10000 70000 --out benchmarks/results
	$(PY) benchmarks/bench_al.py --sizes 10000 70000 --iterations 20 --out benchmarks/results

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
