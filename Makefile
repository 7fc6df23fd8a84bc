# One entry point for people and CI. `make demo` and `make test` create the virtual
# environment on first use; nothing needs to be installed by hand.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DIR    ?= /usr/share/doc
BLOCK_TIME ?= 2

export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1

.PHONY: install demo up test test-fast test-all test-reliability soak lint typecheck bench bench-scale clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,dask]'
	@touch $@

install: $(BIN)/.installed

demo: install  ## start the bundled stack, notarize $(DIR) end to end, print a summary
	$(BIN)/notary demo $(DIR) --block-time $(BLOCK_TIME)

up: install  ## run node, wallet and publishing API on loopback until Ctrl-C
	$(BIN)/notary up --block-time $(BLOCK_TIME)

test: lint typecheck  ## lint, import contracts, mypy, then the suite without the long loops (CI runs this)
	$(BIN)/python -m pytest -m "not slow" -n auto --dist loadfile --durations=25

test-all: install  ## everything, slow tests included (crash loops, schemathesis)
	$(BIN)/python -m pytest

test-reliability: install  ## crash, fault and durability tests, long loops included
	$(BIN)/python -m pytest tests/reliability

soak: install  ## ten minutes of writes at half capacity with faults injected (not in CI)
	$(BIN)/python -m tests.reliability.soak

test-fast: install
	$(BIN)/python -m pytest -m "not slow and not e2e"

lint: install  ## ruff (lint and format) and the import contracts of pyproject.toml
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: install  ## mypy over the whole tree; strict on ledger/core, ledger/jsonrpc, connectors
	$(BIN)/mypy ledger connectors tasks flows deployments

bench: install  ## every benchmark beside its baseline; figures in bench/results/
	$(BIN)/python -m bench.run_all

SCALE_FILES ?= 100000
SCALE_MODES ?= aggregate,entry
bench-scale: install  ## archive scale: hash stage alone, then files to proofs per mode (minutes; not in CI)
	$(BIN)/python -m bench.hash_small --files $(SCALE_FILES)
	$(BIN)/python -m bench.pipeline_scale --files $(SCALE_FILES) --modes $(SCALE_MODES)

clean:
	rm -rf $(VENV) .notary .pytest_cache .mypy_cache .ruff_cache
