# Dynaforge developer commands. Each target sets itself up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp

.PHONY: setup run test test-fast lint format bench services schema clean

PLUGINS := sentiment nli qa hatespeech

$(STAMP): pyproject.toml $(foreach p,$(PLUGINS),plugins/$(p)/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned to the CPU build, so that transformers does not pull a CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev,models]" $(foreach p,$(PLUGINS),-e plugins/$(p))
	touch $(STAMP)

# graphql-http's audit suite for tests/test_graphql_http.py (Node.js); without npm that test skips (fails in CI)
AUDIT_STAMP := tests/http_audit/node_modules/.package-lock.json
$(AUDIT_STAMP): tests/http_audit/package.json tests/http_audit/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/http_audit && npm ci --no-audit --no-fund --loglevel=error; \
	else \
		echo "npm not found: the GraphQL-over-HTTP audit test will skip (install Node.js 18 or newer to run it)"; \
	fi

setup: $(STAMP) $(AUDIT_STAMP)

## The embedded demo: SQLite under ./dynaforge-data/, GraphiQL at http://127.0.0.1:8000/graphql
run: setup
	HF_HUB_OFFLINE=1 $(BIN)/dynaforge demo

# Test processes at once (pytest-xdist); a module whose tests share a server stays on one of them.
TEST_WORKERS ?= 3
PYTEST := HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -p no:cacheprovider
PARALLEL := -n $(TEST_WORKERS) --dist loadgroup
FAST := not e2e and not faults and not (postgres and (fuzz or authz))

## Every test, on SQLite and PostgreSQL (services started when they are down and can be started here): in parallel,
## then the tests that restart a shared service, alone
test: setup services
	$(PYTEST) $(PARALLEL) -m "not serial"
	$(PYTEST) -m serial

## The quick loop: no end-to-end servers, fault injection, PostgreSQL fuzzing or PostgreSQL authorisation matrix
test-fast: setup services
	$(PYTEST) $(PARALLEL) -m "$(FAST)"

## ruff (lint and format check) and mypy (strict on the plugin contract); the same checks as .pre-commit-config.yaml
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## Apply ruff's formatting and safe fixes
format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: setup services
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench

services:
	@bash scripts/services.sh

schema: setup
	$(BIN)/dynaforge schema > schema.graphql

clean:
	rm -rf $(VENV) dynaforge-data .pytest_cache
