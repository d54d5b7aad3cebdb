# Dynaforge developer commands. Each target sets itself up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp

.PHONY: setup run test test-fast lint format bench services schema clean web-lint web-test web-unit \
	client-test client-check client-generate examples-test

PLUGINS := sentiment nli qa hatespeech translation redteam
LLAMA_VERSION := 0.3.36
LLAMA_WHEELS := $(HOME)/.cache/dynaforge/llama-cpp-wheels
LLAMA_CMAKE_ARGS := $(if $(filter x86_64,$(shell uname -m)),-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON)

$(STAMP): pyproject.toml $(foreach p,$(PLUGINS),plugins/$(p)/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned to the CPU build, so that transformers does not pull a CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	# the local engine: llama-cpp-python builds llama.cpp from source (minutes once, then a wheel kept outside the
	# repo). On x86-64 it is built for any AVX2 machine, not with -march=native: the native build of 0.3.36 crashed
	# on its first completion on a machine with AVX-512 and AMX.
	test -n "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl 2>/dev/null)" || \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel -q --no-cache-dir --no-deps -w $(LLAMA_WHEELS) \
		"llama-cpp-python==$(LLAMA_VERSION)"
	$(BIN)/python -m pip install -q --find-links $(LLAMA_WHEELS) "llama-cpp-python[server]==$(LLAMA_VERSION)"
	$(BIN)/python -m pip install -q -e ".[dev,models,engine]" $(foreach p,$(PLUGINS),-e plugins/$(p))
	touch $(STAMP)

# graphql-http's audit suite for tests/test_graphql_http.py (Node.js); without npm that test skips (fails in CI)
AUDIT_STAMP := tests/http_audit/node_modules/.package-lock.json
$(AUDIT_STAMP): tests/http_audit/package.json tests/http_audit/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/http_audit && npm ci --no-audit --no-fund --loglevel=error; \
	else \
		echo "npm not found: the GraphQL-over-HTTP audit test will skip (install Node.js 18 or newer to run it)"; \
	fi

# The web app (web/): installed and built when npm exists, served by the server at /. Without npm every web step
# says so and skips (with CI=true it fails). Browsers are never downloaded: the tests use Debian's Chromium.
NPM := $(shell command -v npm 2>/dev/null)
NO_NPM = echo "npm not found: the web app is not built and its checks and tests skip (install Node.js 20.19 or newer, then make setup)"; [ "$$CI" != true ]
WEB_STAMP := web/node_modules/.package-lock.json
WEB_BUILD := web/dist/index.html
WEB_SOURCES := $(shell find web/src web/public web/scripts -type f -not -path 'web/src/gql/*' 2>/dev/null) \
	web/index.html web/graphiql.html web/vite.config.ts web/codegen.ts web/tsconfig.json schema.graphql
$(WEB_STAMP): web/package.json web/package-lock.json
	@if [ -n "$(NPM)" ]; then \
		cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error; \
	else $(NO_NPM); fi
$(WEB_BUILD): $(WEB_STAMP) $(WEB_SOURCES)
	@if [ -n "$(NPM)" ]; then cd web && npm run --silent build; else $(NO_NPM); fi

setup: $(STAMP) $(AUDIT_STAMP) $(WEB_BUILD)

## The embedded demo: SQLite under ./dynaforge-data/, the web app at http://127.0.0.1:8000/, GraphiQL at /graphql
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
	@$(MAKE) --no-print-directory client-test
	@$(MAKE) --no-print-directory examples-test
	@$(MAKE) --no-print-directory web-test

## The quick loop: no end-to-end servers, fault injection, PostgreSQL fuzzing or PostgreSQL authorisation matrix
test-fast: setup services
	$(PYTEST) $(PARALLEL) -m "$(FAST)"
	@$(MAKE) --no-print-directory web-unit

## The web app's unit tests (vitest), then its browser tests (Playwright on Debian's Chromium against a real demo)
web-test: web-unit
	@if [ -n "$(NPM)" ]; then cd web && npm run --silent test:browser; else $(NO_NPM); fi

web-unit: $(WEB_BUILD)
	@if [ -n "$(NPM)" ]; then cd web && npm test --silent; else $(NO_NPM); fi

# The Python client (clients/python): a virtualenv of its own with only the client (and its optional pandas and
# datasets) installed, and one with the pinned code generator that makes its typed layer from schema.graphql.
CLIENT := clients/python
CLIENT_STAMP := $(CLIENT)/.venv/.setup-stamp
CODEGEN_STAMP := $(CLIENT)/.venv-codegen/.setup-stamp
$(CLIENT_STAMP): $(CLIENT)/pyproject.toml
	rm -rf $(CLIENT)/.venv
	$(PYTHON) -m venv $(CLIENT)/.venv
	$(CLIENT)/.venv/bin/python -m pip install -q --upgrade pip
	$(CLIENT)/.venv/bin/python -m pip install -q -e "$(CLIENT)[pandas,datasets,test]"
	touch $@
$(CODEGEN_STAMP): $(CLIENT)/codegen-requirements.txt
	rm -rf $(CLIENT)/.venv-codegen
	$(PYTHON) -m venv $(CLIENT)/.venv-codegen
	$(CLIENT)/.venv-codegen/bin/python -m pip install -q -r $(CLIENT)/codegen-requirements.txt
	touch $@

# The community task packages (examples/<name>/): each is installed the way a community installs one, with pip (not
# editable), into a virtualenv of its own beside the server (dynaforge from this tree, without torch), and its own
# tests run there (by the pytest command, so that the installed package is imported, not the folder), the end-to-end
# ones against a real `dynaforge serve` on SQLite and PostgreSQL.
EXAMPLES := minimal-pairs data-selection
EXAMPLES_VENV := examples/.venv
EXAMPLES_STAMP := $(EXAMPLES_VENV)/.setup-stamp
$(EXAMPLES_STAMP): pyproject.toml $(shell find $(foreach e,$(EXAMPLES),examples/$(e)) -type f \
		-not -path '*/tests/*' -not -path '*/__pycache__/*' -not -path '*.egg-info*' -not -path '*/build/*' 2>/dev/null)
	rm -rf $(EXAMPLES_VENV)
	$(PYTHON) -m venv $(EXAMPLES_VENV)
	$(EXAMPLES_VENV)/bin/python -m pip install -q --upgrade pip
	$(EXAMPLES_VENV)/bin/python -m pip install -q -e . $(foreach e,$(EXAMPLES),"./examples/$(e)[test]")
	touch $@

## The example task packages' own tests, each from examples/.venv (see examples/README.md)
examples-test: services $(EXAMPLES_STAMP)
	@for e in $(EXAMPLES); do \
		echo "examples/$$e:"; \
		(cd examples/$$e && HF_HUB_OFFLINE=1 ../.venv/bin/pytest -q -p no:cacheprovider) || exit 1; \
	done

## Regenerate the client's typed layer after schema.graphql or clients/python/operations/ changed (and the blocking
## Client's declared methods, after AsyncClient's changed)
client-generate: $(CODEGEN_STAMP)
	$(CLIENT)/.venv-codegen/bin/python $(CLIENT)/scripts/generate.py
	$(CLIENT)/.venv-codegen/bin/python $(CLIENT)/scripts/sync_surface.py

## Fail when the client's checked-in generated code does not match schema.graphql and its operations
client-check: $(CODEGEN_STAMP)
	$(CLIENT)/.venv-codegen/bin/python $(CLIENT)/scripts/generate.py --check

## The client's tests, from its own virtualenv, against real servers (SQLite and PostgreSQL) built from this tree
client-test: setup services client-check $(CLIENT_STAMP)
	cd $(CLIENT) && DYNAFORGE_SERVER_BIN=$(CURDIR)/$(BIN)/dynaforge HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -p no:cacheprovider

## ruff (lint and format check) and mypy (strict on the plugin contract and the kit plugins import; the plugins
## themselves; the Python client's own code): the checks of .pre-commit-config.yaml; then the web app's type check
## (tsc) and lint (biome)
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy $(foreach p,$(PLUGINS),plugins/$(p)/dynaforge_$(p))
	cd $(CLIENT) && $(CURDIR)/$(BIN)/mypy --config-file pyproject.toml
	@$(MAKE) --no-print-directory web-lint

web-lint: $(WEB_STAMP)
	@if [ -n "$(NPM)" ]; then cd web && npm run --silent lint; else $(NO_NPM); fi

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
	rm -rf $(VENV) $(CLIENT)/.venv $(CLIENT)/.venv-codegen dynaforge-data .pytest_cache web/node_modules web/dist web/src/gql
