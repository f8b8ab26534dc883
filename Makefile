# make demo  - create .venv, install agent_nb, run the offline three-agent demo
# make test  - install the dev tools, then ruff, mypy and the whole suite (unit tests and notebooks)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --disable-pip-version-check -q

.PHONY: demo test lint notebooks bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || { apt-get update -q && apt-get install -y -q python3-venv && $(PYTHON) -m venv $(VENV); }

# Stamps: reinstall only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/agent-nb demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check agent_nb tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

# Re-execute the notebooks and store their outputs (what nbval compares against).
notebooks: $(VENV)/.installed-dev
	$(BIN)/jupyter execute --inplace notebooks/*.ipynb

bench: $(VENV)/.installed
	$(BIN)/python bench/agent_nb_bench.py
	$(BIN)/python bench/routing_bench.py

bench-quick: $(VENV)/.installed
	$(BIN)/python bench/agent_nb_bench.py --quick
	$(BIN)/python bench/routing_bench.py --quick

clean:
	rm -rf $(VENV) demo.html
