# Two commands set up a fresh machine: `make run` (the TUI over ./docs on the embedded
# models) and `make test` (the whole suite). Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PREPARED := $(VENV)/.prepared
FOLDER ?= docs
# The CPU build of torch, installed first: an unpinned torch pulls GBs of CUDA packages.
TORCH ?= torch==2.13.0

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install "$(TORCH)"
	$(BIN)/pip install -e '.[test]'
	touch $(STAMP)

# `models prepare` makes the embedder's exports and measures the fastest backend on this
# CPU, once after installing, so the first index waits for neither (docs/performance.md).
$(PREPARED): $(STAMP)
	$(BIN)/iterretgen-chat models prepare
	touch $(PREPARED)

install: $(PREPARED)

run: $(PREPARED)
	$(BIN)/iterretgen-chat $(FOLDER)

test: $(STAMP)
	$(BIN)/python -m pytest -q

.PHONY: install run test
