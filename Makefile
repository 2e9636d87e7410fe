# paneward: `make demo` and `make test` are all a newcomer needs.
# Both create .venv when missing and (re)install the project only when pyproject.toml changed.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
E2E_CACHE ?= $(HOME)/.cache/paneward-e2e

.PHONY: demo test test-slow e2e lint bench notebooks lab report clean install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP) tmux
	$(BIN)/python -m supervisor.demo

# Three tiers, all run by CI (.ci/run): `make test` is the quick loop (every test that takes a few
# seconds at most, one pytest-xdist worker per core); `make test-slow` the long live runs, fuzz and
# kill campaigns and the gate's planted candidates (marked `slow`; mostly waiting on panes and
# subprocesses, so two workers per core, eight at most); `make e2e` the real agent CLIs (marked `e2e`).
SLOW_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(8, 2 * (os.cpu_count() or 1)))')

test: $(STAMP) tmux postgres
	$(BIN)/python -m pytest -n auto -m "not e2e and not slow" $(PYTEST_ARGS)

test-slow: $(STAMP) tmux postgres
	$(BIN)/python -m pytest -n $(SLOW_WORKERS) -m "slow and not e2e" $(PYTEST_ARGS)

e2e: $(STAMP) tmux postgres
	E2E_CACHE=$(E2E_CACHE) bash tests/e2e/install_agents.sh
	E2E_CACHE=$(E2E_CACHE) $(BIN)/python -m pytest -m e2e tests/e2e tests/warehouse/test_ducklake_fleet.py $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check supervisor evals tests bench
	$(BIN)/mypy supervisor/models.py supervisor/policy.py supervisor/agents.py supervisor/screen.py supervisor/classify.py supervisor/classify_acp.py \
	  supervisor/decide.py supervisor/runstate.py supervisor/workflow/gate.py supervisor/workflow/checkpoint.py supervisor/judge/consult.py \
	  evals/compare.py evals/scorers.py evals/safety.py evals/stats.py evals/gate.py evals/canary.py evals/registry.py \
	  evals/replay.py supervisor/redact.py supervisor/journal.py supervisor/history.py

bench: $(STAMP) tmux postgres
	$(BIN)/python bench/warehouse.py
	$(BIN)/python bench/fleet.py
	$(BIN)/python bench/friction.py
	$(BIN)/python bench/classify.py
	$(BIN)/python bench/corpus_accuracy.py
	$(BIN)/python bench/heldout.py
	$(BIN)/python bench/evals.py
	$(BIN)/python bench/reaction.py
	$(BIN)/python bench/idle.py
	$(BIN)/python bench/workflow.py
	$(BIN)/python bench/judge.py
	$(BIN)/python bench/screens.py
	$(BIN)/python bench/reliability.py

# The notebooks, `supervisor report` and `make lab` need the `analysis` extra (matplotlib) and Jupyter.
NB_STAMP := $(VENV)/.installed-notebooks
$(NB_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,notebooks]'
	@touch $(NB_STAMP)

notebooks: $(NB_STAMP)

# JupyterLab on the project's kernel (.venv's python3), reading the warehouse the CLI uses:
# SUPERVISOR_HOME / SUPERVISOR_WAREHOUSE as set, else the per-user default.
lab: notebooks
	@echo "warehouse: $$($(BIN)/supervisor warehouse path)"
	$(BIN)/python -m supervisor warehouse sync >/dev/null || true
	cd notebooks && ../$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root)

report: notebooks
	$(BIN)/supervisor report friction

.PHONY: tmux
tmux:
	@command -v tmux >/dev/null 2>&1 || { \
	  echo "tmux is missing: installing it with apt-get"; \
	  (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null || \
	  { echo "error: could not install tmux (install it with your package manager)"; exit 3; }; }

# The DuckLake tests (and bench/fleet.py) start their own PostgreSQL server from the distribution's
# binaries (initdb + pg_ctl on a private socket); nothing is configured system-wide. Where it cannot
# be installed (no root) those tests are skipped with the reason; .ci/run installs it or fails.
.PHONY: postgres
postgres:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "PostgreSQL is missing (the DuckLake tests need it): installing it with apt-get"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null || \
	  echo "warning: could not install PostgreSQL: the DuckLake tests will be skipped (install the postgresql package)"; }

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
