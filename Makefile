# Two commands set up a fresh machine: `make run` (the TUI over ./docs on the embedded
# models) and `make test` (lint, format check and the whole suite). Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FOLDER ?= docs
# The CPU build of torch, installed first: an unpinned torch pulls GBs of CUDA packages.
TORCH ?= torch==2.13.0

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install "$(TORCH)"
	$(BIN)/pip install -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/iterretgen-chat $(FOLDER)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

.PHONY: install run test
