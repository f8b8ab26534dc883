# make demo  - create .venv, install agent_nb, run the offline three-agent demo
# make test  - install the dev tools (and chromium, when missing), then ruff, mypy, lint-imports and the whole suite:
#              unit tests, notebooks under nbval, the browser tests, the real local model tests, spans sent to a real
#              OpenTelemetry receiver (Arize Phoenix, installed in .venv-phoenix)
# make soak  - kill -9 during SQLite history writes and during file checkpoints, then 1,000 concurrent routed
#              sessions on one history file (bench/soak.py, under 2 minutes; not part of make test;
#              SOAK_ARGS=--quick for a few seconds)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --disable-pip-version-check -q

.PHONY: demo test lint system-deps notebooks cassettes bench bench-quick bench-ours soak clean

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

# lint-imports checks the layer contract of pyproject.toml (docs/ARCHITECTURE.md draws it).
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check agent_nb tests bench notebooks/cassettes
	$(BIN)/ruff format --check --quiet agent_nb tests bench notebooks/cassettes
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo --no-cache

# The browser tests drive Debian's chromium (Playwright's own browser download is not used).
system-deps:
	@[ -n "$$CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  apt-get update -q && apt-get install -y -q chromium; } || { echo "the browser tests need chromium:" \
	  "run 'sudo apt-get install chromium' (Debian) or set CHROMIUM=/path/to/chromium"; exit 1; }

# A real OpenTelemetry receiver for the telemetry tests (Arize Phoenix), in a virtual environment of its own.
PHOENIX_VENV := .venv-phoenix

$(PHOENIX_VENV)/.installed: | $(BIN)/python
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --disable-pip-version-check -q 'arize-phoenix==20.26.1'
	touch $@

test: lint system-deps $(PHOENIX_VENV)/.installed
	$(BIN)/python -m pytest

# Re-execute the notebooks and store their outputs (what nbval compares against); no progress bars,
# as under nbval, so the stored outputs do not carry a widget of their own. The widgets' state is not
# stored: where no kernel runs them, renderers (nbconvert, JupyterLab with the kernel off) show the
# static snapshot each widget puts beside itself, instead of a widget that loads scripts from the network.
notebooks: $(VENV)/.installed-dev
	AGENT_NB_NO_PROGRESS=1 $(BIN)/jupyter execute --inplace notebooks/*.ipynb
	$(BIN)/python -c "import sys, nbformat; [nbformat.write(nb, f) for f in sys.argv[1:] \
	  for nb in [nbformat.read(f, as_version=4)] if nb.metadata.pop('widgets', None) is not None]" notebooks/*.ipynb

# Record the real-models notebook's cassettes again, against the local model on loopback.
cassettes: $(VENV)/.installed-dev
	$(BIN)/python notebooks/cassettes/record.py

# The peer (Microsoft Agent Framework) lives in its own virtual environment, beside agent_nb.
BENCH_VENV := .venv-bench
PEER := agent-framework-core==1.23.0 agent-framework-orchestrations==1.4.0

$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --disable-pip-version-check -q -e . $(PEER)
	touch $@

# Both libraries on the reference workload, interleaved; writes bench/RESULTS.md and bench/scaling.png.
bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/compare.py --write

bench-quick: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/compare.py --quick

# agent_nb's own benchmarks, one by one, with their targets.
bench-ours: $(VENV)/.installed-dev
	$(BIN)/python bench/agent_nb_bench.py
	$(BIN)/python bench/checkpoint_bench.py
	$(BIN)/python bench/routing_bench.py
	$(BIN)/python bench/display_bench.py
	$(BIN)/python bench/harness_bench.py
	$(BIN)/python bench/experiments_bench.py
	$(BIN)/python bench/playground_lab_bench.py
	$(BIN)/python bench/telemetry_bench.py

# Crash and load soak: exits non-zero when a turn or a checkpoint is lost, duplicated or torn (bench/soak.py).
SOAK_ARGS ?=
soak: $(VENV)/.installed
	$(BIN)/python bench/soak.py $(SOAK_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) demo.html
