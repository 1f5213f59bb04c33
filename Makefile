# Every target creates .venv by itself, so on a fresh machine `make test` alone installs and tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# the prebuilt llama-cpp-python wheel `make demo-local` installs when present (else it builds from source)
LLAMA_WHEEL_DIR ?= ../shared/wheels

.PHONY: demo demo-local test lint pytest bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/support_agent.py

# the same demo on a real local model server (llama.cpp + SmolLM2-135M, in .cache/local-llm)
demo-local: $(STAMP)
	LLAMA_WHEEL_DIR=$(LLAMA_WHEEL_DIR) $(PY) examples/local_llm.py demo

lint: $(STAMP)
	$(VENV)/bin/ruff check flowchart agent governance tests examples bench
	$(VENV)/bin/ruff format --check flowchart agent governance tests examples bench
	$(VENV)/bin/mypy flowchart agent governance

pytest: $(STAMP)
	$(VENV)/bin/pytest

test: lint pytest

bench: $(STAMP)
	bash bench/run.sh

docs: $(STAMP)
	@echo "docs are plain markdown under docs/; see docs/index.md"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
