# `make demo` and `make test` each create .venv when it is missing and install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(PY) -m chainrules demo

test: $(VENV)/.test-installed
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m pytest -n 2 src tests

$(VENV)/.bench-installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $@ $(VENV)/.test-installed $(VENV)/.demo-installed

bench: $(VENV)/.bench-installed
	$(PY) -m benchmarks

lint: $(VENV)/.test-installed
	$(PY) -m ruff check src tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache
