# Every target creates .venv by itself, so on a fresh machine `make test` alone installs and tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# the prebuilt llama-cpp-python wheel `make demo-local` installs when present (else it builds from source)
LLAMA_WHEEL_DIR ?= ../shared/wheels

.PHONY: demo demo-local demo-inbox screenshot-inbox test lint pytest bench docs screenshot clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/support_agent.py

# the approval inbox on the demo's store: three paused refunds, alice's token, http://127.0.0.1:8000/
demo-inbox: $(STAMP)
	$(PY) examples/inbox_demo.py

# the same demo on a real local model server (llama.cpp + SmolLM2-135M, in .cache/local-llm)
demo-local: $(STAMP)
	LLAMA_WHEEL_DIR=$(LLAMA_WHEEL_DIR) $(PY) examples/local_llm.py demo

lint: $(STAMP)
	$(VENV)/bin/ruff check flowchart agent governance tests examples bench tools
	$(VENV)/bin/ruff format --check flowchart agent governance tests examples bench tools
	$(VENV)/bin/mypy flowchart agent governance

pytest: $(STAMP)
	$(VENV)/bin/pytest

test: lint pytest

bench: $(STAMP)
	bash bench/run.sh

# every python block and console session of README.md and docs/*.md, run as pasted
docs: $(STAMP)
	$(VENV)/bin/pytest tests/test_docs_examples.py

# docs/img/viewer.png from the current demo (headless /usr/bin/chromium through Playwright)
screenshot: $(STAMP)
	$(PY) tools/viewer_screenshot.py

# docs/img/inbox-list.png and docs/img/inbox-run.png from the inbox demo (headless Chromium)
screenshot-inbox: $(STAMP)
	$(PY) tools/inbox_screenshot.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
