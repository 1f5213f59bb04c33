# Every target creates .venv by itself, so on a fresh machine `make test` alone installs and tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint pytest bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/support_agent.py

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
