# Set-up is automatic: each target builds .venv from scratch when it is missing.
PYTHON ?= python3.11
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.steptrace-installed

.PHONY: demo test test-fast test-loaded test-gpu lint typecheck unit bench bench-guard clean

$(STAMP): pyproject.toml
	@echo "steptrace: setting up $(VENV) once: $(TORCH_SPEC), numpy, msgspec, click, rich and the"
	@echo "steptrace: dev tools (ruff, mypy, pytest, playwright, Dask, Lightning, transformers); this takes a minute or two"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install --progress-bar off -e '.[dev]' '$(TORCH_SPEC)'
	@echo "steptrace: $(VENV) is ready"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/steptrace demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

# --durations=15: the slowest tests printed on every run, so a slow one is seen where it comes in.
# Two workers (pytest-xdist), one per core of CI's two, each test file whole in one of them
# (its module fixtures built once): 9 min where one process took 16 (issue #42.6).
PYTEST := $(BIN)/python -m pytest -n 2 --dist loadfile --durations=15
unit: $(STAMP)
	$(PYTEST)

test: lint typecheck unit

# The suite beside two CPU-spinning processes: CI runs on shared machines, and a test that
# fails under load is a defect (issue #34.6). Lint and types first, then pytest beside them,
# in one process: three busy processes on CI's two cores, heavier than make test's two workers.
test-loaded: lint typecheck
	$(BIN)/python tests/spin.py $(BIN)/python -m pytest --durations=15

# The inner loop: the tests without the end-to-end ones marked slow.
test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

# The CUDA paths (capture with GPU activity, synchronized timing, pinned memory, the demo
# on cuda): skipped without a GPU, so run this on a machine that has one.
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m gpu

bench: $(STAMP)
	$(BIN)/python benchmarks/analyze_speed.py

# The guard CI runs after the tests (a few minutes): speed and memory against json.loads in
# the same run, and the demo's planted pipeline found and supported; exit 1 on a FAIL.
bench-guard: $(STAMP)
	$(BIN)/python benchmarks/guard.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .mypy_cache .pytest_cache .ruff_cache
