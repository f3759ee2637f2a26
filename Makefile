# The two commands: `make run` (the product on the embedded local stack) and `make test`.
# Both create the virtual environment at .venv/ when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test pytest lint typecheck imports unit e2e crds chart-crds lock clean

# Byte-compile what Python imports: every process of the suite and the local stack imports boto3, moto,
# kubernetes and temporalio, and compiling them from source each time (an environment may set
# PYTHONDONTWRITEBYTECODE) costs seconds of CPU per process. Installs are byte-compiled (uv
# --compile-bytecode); this lets Python cache nodeflow's own modules too.
unexport PYTHONDONTWRITEBYTECODE

# Pinned versions from requirements-dev.lock (refresh with `make lock`), then nodeflow itself and the
# dev stack's own distribution (devstack/, `nodeflow-devstack`), both editable.
$(STAMP): pyproject.toml devstack/pyproject.toml requirements-dev.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/uv pip install -q --compile-bytecode -p $(BIN)/python -r requirements-dev.lock
	$(BIN)/uv pip install -q --compile-bytecode -p $(BIN)/python --no-deps -e . -e devstack
	touch $(STAMP)

# requirements-dev.lock: the product's dependencies, the dev tools and the dev stack's dependencies;
# requirements.lock: the product's runtime dependencies only, at the same versions (the worker image
# installs from it). Existing pins are kept unless a pyproject.toml asks otherwise.
lock: $(STAMP)
	$(BIN)/uv pip compile -q pyproject.toml devstack/pyproject.toml --extra dev --python-version 3.11 \
		-o requirements-dev.lock
	$(BIN)/uv pip compile -q pyproject.toml -c requirements-dev.lock --python-version 3.11 -o requirements.lock

run: $(STAMP)
	$(BIN)/nodeflow dev $(ARGS)

# The static checks run beside the tests (the suite leaves CPU idle while its end-to-end tests wait on
# the stack); `make test` fails when any of them does.
test: $(STAMP)
	$(MAKE) --no-print-directory -j4 lint typecheck imports pytest

# Each of the 5 test processes imports every test module, and pytest rewrites a module's asserts on its
# first import and caches the result. Collecting once first spares the 5 from all rewriting the same
# modules at the same moment on a fresh clone (about 13 CPU seconds on 2 cores). A collection error is
# reported by the run that follows.
pytest: $(STAMP)
	$(BIN)/pytest -q --collect-only > /dev/null || true
	$(BIN)/pytest -q -ra --durations=15 -n 5 --dist loadgroup --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy apis scheduling cloudprovider kube activities workflows workers devstack/src/devstack

imports: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

e2e: $(STAMP)
	$(BIN)/pytest -q -m e2e

# deploy/crds is the source (generated from apis/); the Helm chart ships copies in its crds/ directory.
crds: $(STAMP)
	$(BIN)/nodeflow crds deploy/crds
	$(MAKE) --no-print-directory chart-crds

chart-crds:
	rm -f deploy/charts/nodeflow/crds/*.yaml
	cp deploy/crds/*.yaml deploy/charts/nodeflow/crds/

clean:
	rm -rf $(VENV) .nodeflow .mypy_cache .ruff_cache
