# Two entry points (see README): `make demo` sets up and runs the main job; `make test` runs the suite.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export QUARRY_HOME ?= $(CURDIR)/.quarry

.PHONY: setup demo test bench clean

$(BIN)/quarry: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/quarry

demo: setup
	$(BIN)/quarry ingest examples/corpus --name sample
	$(BIN)/quarry index sample --dense
	$(BIN)/quarry run sample "dense passage retrieval with dual encoders for open-domain question answering, not surveys" --wait

test: setup
	$(BIN)/pytest -q

bench: setup
	$(BIN)/python -m bench.bench_search

clean:
	rm -rf $(VENV) .quarry
