# The two commands: `make run` (the product on the embedded local stack) and `make test`.
# Both create the virtual environment at .venv/ when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck imports unit e2e crds lock clean

# Pinned versions from requirements-dev.lock (refresh with `make lock`), then nodeflow itself, editable.
$(STAMP): pyproject.toml requirements-dev.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/uv pip install -q -p $(BIN)/python -r requirements-dev.lock
	$(BIN)/uv pip install -q -p $(BIN)/python --no-deps -e .
	touch $(STAMP)

lock: $(STAMP)
	$(BIN)/uv pip compile -q pyproject.toml --extra dev --python-version 3.11 -o requirements-dev.lock

run: $(STAMP)
	$(BIN)/nodeflow dev $(ARGS)

test: $(STAMP) lint typecheck imports
	$(BIN)/pytest -q -ra --durations=15

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy apis scheduling cloudprovider kube activities workflows workers devstack

imports: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

e2e: $(STAMP)
	$(BIN)/pytest -q -m e2e

crds: $(STAMP)
	$(BIN)/python -m apis.crds deploy/crds

clean:
	rm -rf $(VENV) .nodeflow .mypy_cache .ruff_cache
