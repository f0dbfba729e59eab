# One-command set-up: every target installs what it needs from the project's own files.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
STAMP := $(VENV)/.installed
SAM_STAMP := $(SAM_VENV)/.installed
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_MODEL_STAMP := $(VENV)/.bench-model-installed
COVERAGE_FLOOR := 96
export TIKTOKEN_CACHE_DIR := $(CURDIR)/.cache/tiktoken
export HF_HUB_OFFLINE := 1
export AWS_ACCOUNT_ID_ENDPOINT_MODE := disabled
export PYTHONDONTWRITEBYTECODE := 1

OPENSEARCH_NODE := $(BIN)/python -m knowledge_local.opensearch_node
# The console's browser tests drive Debian's Chromium (Playwright's own download is not reachable).
CHROMIUM := /usr/bin/chromium

.PHONY: help install browser console-screenshots test lint typecheck unit fuzz run opensearch lint-template pr bench bench-install bench-relevance bench-memory bench-ingest bench-efficiency bench-fairness bench-durability bench-portability bench-failover bench-conversion bench-model clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s $$'\t'

$(STAMP): requirements/dev.lock requirements/nodeps.txt pyproject.toml
	@echo "==> creating $(VENV) with $$($(PYTHON) --version)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check pip==26.3 setuptools==80.10.2
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements/dev.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -r requirements/nodeps.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m knowledge.vocab "$(TIKTOKEN_CACHE_DIR)"
	@touch $(STAMP)

install: $(STAMP)  ## create the virtualenv from the lock and seed offline assets

lint: install  ## ruff (lint + format check)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install  ## mypy on the package, the local runtime, the handlers and the benchmarks
	$(BIN)/mypy layers/knowledge/knowledge local/knowledge_local bench
	@# every handler is a module named `app`: check them one by one
	@for handler in functions/*/app.py; do $(BIN)/mypy --no-error-summary $$handler || exit 1; done

test: lint typecheck lint-template browser  ## every gate: ruff, mypy, cfn-lint, sam validate, pytest with branch coverage (on a real OpenSearch node it starts)
	$(OPENSEARCH_NODE) exec -- $(BIN)/pytest --numprocesses=2 --dist=loadfile --cov --cov-fail-under=$(COVERAGE_FLOOR)

browser: $(CHROMIUM)  ## Debian's headless Chromium for the console's browser tests (apt, once)

$(CHROMIUM):
	@echo "==> installing Debian's chromium for the console's browser tests"
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; \
	else sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends chromium; fi

console-screenshots: install browser  ## run the console's browser tests, saving their screenshots into docs/console (docs/console.md shows them)
	CONSOLE_SCREENSHOTS_DIR=$(CURDIR)/docs/console $(BIN)/pytest -q -p no:cacheprovider tests/e2e/test_console.py

unit: install $(SAM_STAMP)  ## unit tests only
	$(BIN)/pytest tests/unit -q

FUZZ_TESTS := tests/unit/services/test_isolation_properties.py tests/unit/services/test_erasure_properties.py tests/unit/services/test_bundle_properties.py tests/unit/services/test_memory_governance_properties.py tests/unit/services/test_token_reach_properties.py tests/integration/test_api_fuzz.py tests/integration/test_mcp_fuzz.py tests/e2e/test_crash_recovery.py tests/e2e/test_read_your_writes.py

fuzz: install  ## the long isolation, memory governance and token reach properties, REST/MCP fuzzing and 20 crash points (thousands of cases; docs/reliability.md)
	KNOWLEDGE_FUZZ=long POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/pytest -q -p no:cacheprovider -p no:logging --hypothesis-show-statistics $(FUZZ_TESTS)

run: install  ## serve the API on http://127.0.0.1:3000 on embedded defaults (every setting: .venv/bin/python -m knowledge_local.runtime --help)
	$(BIN)/python -m knowledge_local.runtime

opensearch: install  ## build (first use, with Maven) and serve an OpenSearch 2.19 node with k-NN on 127.0.0.1 until Ctrl-C
	$(OPENSEARCH_NODE) serve

$(SAM_STAMP): requirements/sam.txt
	@echo "==> creating $(SAM_VENV) (SAM CLI, which pins an older boto3 than the project)"
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements/sam.txt
	@touch $(SAM_STAMP)

lint-template: install $(SAM_STAMP)  ## cfn-lint and `sam validate --lint` (SAM CLI in its own virtualenv)
	$(BIN)/cfn-lint template.yaml
	SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam validate --lint --region us-east-1

pr: test  ## the same gates as test

$(BENCH_STAMP): $(STAMP) requirements/bench.txt
	@echo "==> adding the benchmark's peers to $(VENV) (requirements/bench.txt)"
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements/bench.txt -c requirements/dev.lock
	@touch $(BENCH_STAMP)

bench-install: $(BENCH_STAMP)  ## add LanceDB and matplotlib (requirements/bench.txt) to .venv; `make test` never needs them

bench: bench-install  ## ours vs LanceDB on SciFact (nDCG@10, p50/p95/p99) and at 1k-200k chunks (p50/p99, RSS), the semantic leg at 200k, store reads per search, ingest docs/s and chunks/s per phase, cold starts, the cost model; JSON and plots in docs/benchmarks/ (DATA_DIR, BENCH_SIZES override)
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.peer --data-dir "$${DATA_DIR:-../shared/data}/scifact" --sizes "$${BENCH_SIZES:-1000,10000,50000,200000}" --out docs/benchmarks
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.semantic_leg
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.search_profile
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.ingest_path --data-dir "$${DATA_DIR:-../shared/data}/scifact"
	$(BIN)/python -m bench.cold_start
	$(BIN)/python -m bench.cost

BACKEND ?= both

bench-relevance: install  ## nDCG@10 / Recall / search p50,p95 on BEIR SciFact for every search mode, embedded index beside a real OpenSearch node (BACKEND=embedded|opensearch|both, OPENSEARCH_URL, DATA_DIR override)
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.relevance --data-dir "$${DATA_DIR:-../shared/data}/scifact" --backend "$(BACKEND)" $${OPENSEARCH_URL:+--opensearch-url "$$OPENSEARCH_URL"}

bench-memory: install  ## remember → searchable, search_memory p50/p95 at 10,000 notes, recall_context pack build at 1k/10k
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.memory --data-dir "$${DATA_DIR:-../shared/data}/scifact" --corpus-vectors hashing --profile

bench-ingest: install  ## SciFact + FastAPI pages through the write API into a local runtime: docs/s, RSS, stop time
	$(BIN)/python -m bench.ingest --data-dir "$${DATA_DIR:-../shared/data}"

bench-efficiency: install  ## the model's own rate beside the local runtime's write-to-searchable rate on the same texts (short notes via remember, SciFact abstracts, FastAPI pages via the ingest path) and their ratio (DATA_DIR, NOTES, ABSTRACTS, PAGES, CLIENTS override)
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.efficiency --data-dir "$${DATA_DIR:-../shared/data}" --notes "$${NOTES:-500}" --abstracts "$${ABSTRACTS:-100}" --pages "$${PAGES:-10}" --clients "$${CLIENTS:-8}"

bench-fairness: install  ## a 500,000-character document indexing while small documents of its tenant and another arrive every second: p50/max seconds from 2xx to searchable beside a baseline of small documents alone (LARGE_CHARS override)
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.fairness --large-chars "$${LARGE_CHARS:-500000}"
bench-durability: install  ## durable local state: write p50 with KNOWLEDGE_PERSIST on vs off (interleaved), restart time with 5,000 SciFact documents, nothing embedded again
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.durability --data-dir "$${DATA_DIR:-../shared/data}"

bench-portability: install  ## export → import → export of a tenant with 5,000 SciFact items and 5,000 notes: bundle size, seconds per phase, bundles equal, searches equal in both tenants (DATA_DIR, ITEMS, NOTES override)
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.portability --data-dir "$${DATA_DIR:-../shared/data}" --items "$${ITEMS:-5000}" --notes "$${NOTES:-5000}"

$(BENCH_MODEL_STAMP): $(STAMP) requirements/bench-model.txt
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements/bench-model.txt -c requirements/dev.lock
	@touch $(BENCH_MODEL_STAMP)

bench-model: install $(BENCH_MODEL_STAMP)  ## the model's texts/s per variant (shipped int8 weights, fp32, dynamic int8; batching; ONNX Runtime options), round-robin, beside SciFact nDCG@10 per mode (DATA_DIR, NOTES, ABSTRACTS, REPEATS, CORPUS_DOCS override)
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.model_path --data-dir "$${DATA_DIR:-../shared/data}/scifact" --notes "$${NOTES:-2000}" --abstracts "$${ABSTRACTS:-60}" --repeats "$${REPEATS:-3}" --corpus-docs "$${CORPUS_DOCS:-1500}"

bench-failover: install  ## two OpenSearch nodes, one killed under a search load: answers/s and failures/s, p50/p99 per phase, time to yellow, answers identical to the survivor's copy (about 4 minutes)
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.failover

bench-conversion: install  ## documents/s, MB/s and pages/s per format of knowledge.conversion on generated PDF, DOCX, HTML, CSV, XLSX and Markdown files (RUNS override); JSON in docs/benchmarks/conversion.json
	POWERTOOLS_LOG_LEVEL=WARNING $(BIN)/python -m bench.conversion --runs "$${RUNS:-5}"

clean:  ## remove the virtualenvs and caches
	rm -rf $(VENV) $(SAM_VENV) .cache .aws-sam .mypy_cache .ruff_cache tools/opensearch/target
