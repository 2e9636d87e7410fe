# paneward: `make demo` and `make test` are all a newcomer needs.
# Both create .venv when missing and (re)install the project only when pyproject.toml changed.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
# Bytecode caching on, even where the environment turns it off (PYTHONDONTWRITEBYTECODE=1): without
# it every interpreter a test or the demo starts compiles the whole package again, and pytest
# rewrites every test module's asserts again in each worker (collection took 2.4x as long).
export PYTHONDONTWRITEBYTECODE :=
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
E2E_CACHE ?= $(HOME)/.cache/paneward-e2e

.PHONY: demo test test-slow e2e lint bench notebooks lab report clean install

# pip shows its progress on a terminal and stays quiet in logs (CI); each step says what it does
# and how long it took.
PIP_INSTALL := $(BIN)/python -m pip install $$( [ -t 1 ] || echo --quiet )
step = @echo "==> $(1)"; start=$$(date +%s)
done_step = echo "==> done in $$(( $$(date +%s) - start )) s"

$(BIN)/python:
	$(call step,creating $(VENV) with $(PYTHON)); $(PYTHON) -m venv $(VENV) && \
	  $(PIP_INSTALL) --upgrade pip && $(done_step)

$(STAMP): pyproject.toml | $(BIN)/python
	$(call step,installing paneward and its dev tools into $(VENV) (the first time takes a few minutes)); \
	  $(PIP_INSTALL) -e '.[dev]' && $(done_step)
	@touch $(STAMP)
	@echo "    the supervisor command is $(BIN)/supervisor; to type it as \`supervisor\`: export PATH=\"$$PWD/$(BIN):\$$PATH\""

install: $(STAMP)

demo: $(STAMP) tmux
	$(BIN)/python -m supervisor.demo

# Three tiers, all run by CI (.ci/run): `make test` is the quick loop (every test that takes a few
# seconds at most, one pytest-xdist worker per core); `make test-slow` the long live runs, fuzz and
# kill campaigns and the gate's planted candidates (marked `slow`; mostly waiting on panes and
# subprocesses, so one and a half workers per core, eight at most: at two per core on two cores the
# live runs' agents, tmux servers and supervisors queued behind each other for tens of seconds); `make
# e2e` the real agent CLIs (marked `e2e`).
SLOW_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(8, max(2, 3 * (os.cpu_count() or 1) // 2)))')

test: $(STAMP) tmux postgres
	$(BIN)/python -m pytest -n auto -m "not e2e and not slow" $(PYTEST_ARGS)

test-slow: $(STAMP) tmux postgres
	$(BIN)/python -m pytest -n $(SLOW_WORKERS) -m "slow and not e2e" $(PYTEST_ARGS)

# The e2e tests mostly wait on real agents (each on its own tmux socket, HOME and loopback model
# server), so they run two at a time (E2E_WORKERS=1 for one at a time).
E2E_WORKERS ?= 2
e2e: $(STAMP) tmux postgres
	E2E_CACHE=$(E2E_CACHE) bash tests/e2e/install_agents.sh
	E2E_CACHE=$(E2E_CACHE) $(BIN)/python -m pytest -n $(E2E_WORKERS) -m e2e tests/e2e tests/warehouse/test_ducklake_fleet.py $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check supervisor evals tests bench
	$(BIN)/mypy supervisor/models.py supervisor/policy.py supervisor/agents.py supervisor/screen.py supervisor/classify.py supervisor/classify_acp.py \
	  supervisor/decide.py supervisor/runstate.py supervisor/workflow/gate.py supervisor/workflow/checkpoint.py supervisor/judge/consult.py \
	  evals/compare.py evals/scorers.py evals/safety.py evals/stats.py evals/gate.py evals/canary.py evals/registry.py \
	  evals/replay.py supervisor/redact.py supervisor/journal.py supervisor/history.py \
	  supervisor/judgment/shell.py supervisor/judgment/judge.py supervisor/judgment/paths.py

bench: $(STAMP) tmux postgres
	$(BIN)/python bench/warehouse.py
	$(BIN)/python bench/fleet.py
	$(BIN)/python bench/friction.py
	$(BIN)/python bench/classify.py
	$(BIN)/python bench/corpus_accuracy.py
	$(BIN)/python bench/heldout.py
	$(BIN)/python bench/evals.py
	$(BIN)/python bench/workbench.py
	$(BIN)/python bench/reaction.py
	$(BIN)/python bench/idle.py
	$(BIN)/python bench/workflow.py
	$(BIN)/python bench/judge.py
	$(BIN)/python bench/screens.py
	$(BIN)/python bench/reliability.py
	$(BIN)/python bench/commands.py

# The notebooks, `supervisor report` and `make lab` need the `analysis` extra (matplotlib) and Jupyter.
NB_STAMP := $(VENV)/.installed-notebooks
$(NB_STAMP): $(STAMP)
	$(call step,installing JupyterLab and the notebook tools into $(VENV)); \
	  $(PIP_INSTALL) -e '.[dev,notebooks]' && $(done_step)
	@touch $(NB_STAMP)

notebooks: $(NB_STAMP)

# JupyterLab on the project's kernel (.venv's python3), reading the warehouse the CLI uses:
# SUPERVISOR_HOME / SUPERVISOR_WAREHOUSE as set, else the per-user default.
# Options: `make lab LAB_PORT=8890` (default 8888, or the next free one), `LAB_IP=0.0.0.0` to listen
# beyond this machine (default 127.0.0.1), `LAB_ARGS='--no-browser'` for any other jupyter lab option.
LAB_PORT ?= 8888
LAB_IP   ?= 127.0.0.1
LAB_ARGS ?=
lab: notebooks
	@echo "warehouse: $$($(BIN)/supervisor warehouse path)"
	$(BIN)/python -m supervisor warehouse sync >/dev/null || true
	cd notebooks && ../$(BIN)/jupyter lab --port=$(LAB_PORT) --ip=$(LAB_IP) \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# Into this repository's reports/ (the supervisor's own default is HOME/reports).
report: notebooks
	$(BIN)/supervisor report friction --out reports

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
