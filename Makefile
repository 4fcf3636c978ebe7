# The developer's entry points. `make install` once, then the others.

VENV ?= .venv
PYTHON := $(VENV)/bin/python

# the tests start many Python processes: let them reuse compiled bytecode and pytest's rewritten
# test modules (.ci/run says what it saves)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install test test-all test-sweep lint bench demo tables gpu-cases gpu-check

install:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -e '.[dev]'

test:
	$(PYTHON) -m pytest -q -n auto -m "not slow"

# what CI runs: lint, types, the tests, then the slower sweeps
test-all: lint
	$(PYTHON) -m pytest -q -n auto -m "not slow"
	$(PYTHON) -m pytest -q -n auto -m "slow and not sweep"

# what CI leaves out (tests/sweep.py says how it is chosen): the heaviest conformance cases of
# each corpus-wide test, the emitted CUDA C of every GPU sample plan and conformance case run on
# the CPU emulator (tests/runtime/cuda_emulator), the tuner over every sample and case, three
# quarters of the slow random plans, the full fuzz campaign, two of the three seeds whose tuning
# plans must replay exactly (tests/tune/test_rules.py), and GEMM-sized programs in the thread
# model (about an hour on 2 cores, estimated from the per-test durations)
test-sweep:
	$(PYTHON) -m pytest -q -n auto -m sweep

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy tirc
	$(VENV)/bin/lint-imports

bench:
	$(PYTHON) benchmarks/run.py

demo:
	$(VENV)/bin/tirc print samples/matmul.tir

# after editing grammar/tir.lark: recompute the parse tables tirc ships
tables:
	.venv/bin/python -m tirc.text.syntax.tables

# On a machine with an NVIDIA GPU: the GPU differential over the conformance cases, the
# gpu-marked tests, the samples' CUDA client and bench_cuda, into GPU_OUT/report.json. Works
# from the checkout alone with any Python that has numpy, click, rich, llvmlite, lark,
# ml_dtypes and cuda-python. `make gpu-cases` first copies the GPU cases into .gpu-cases/,
# so that they travel with a checkout that lacks ../shared.
GPU_PYTHON ?= $(if $(wildcard $(PYTHON)),$(PYTHON),python3)
GPU_OUT ?= gpu-check
CASES ?= ../shared/conformance/cases

gpu-cases:
	rm -rf .gpu-cases && mkdir -p .gpu-cases
	for case in $(CASES)/*; do \
		if grep -q '"targets": "gpu"' $$case/meta.json; then cp -r $$case .gpu-cases/; fi; \
	done

gpu-check:
	$(GPU_PYTHON) benchmarks/gpu_check.py --out $(GPU_OUT)
