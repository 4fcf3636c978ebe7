# The developer's entry points. `make install` once, then the others.

VENV ?= .venv
PYTHON := $(VENV)/bin/python

.PHONY: install test lint bench demo tables

install:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -e '.[dev]'

test:
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy tirc

bench:
	$(PYTHON) benchmarks/run.py

demo:
	$(VENV)/bin/tirc print samples/matmul.tir

# after editing grammar/tir.lark: recompute the parse tables tirc ships
tables:
	.venv/bin/python -m tirc.text.syntax.tables
