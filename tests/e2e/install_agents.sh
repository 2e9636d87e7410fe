#!/usr/bin/env bash
# Install the real agent CLIs used by the e2e tests into a cache folder outside the clone.
#
#   E2E_CACHE=${E2E_CACHE:-$HOME/.cache/paneward-e2e} bash tests/e2e/install_agents.sh
#
# Reused when present: an agent whose binary already exists in the cache is not reinstalled
# (set E2E_REINSTALL=1 to force). Only the package registries are used (npm, PyPI).
# Writes $E2E_CACHE/versions.json with each agent's version and install time.
set -euo pipefail

CACHE="${E2E_CACHE:-$HOME/.cache/paneward-e2e}"
mkdir -p "$CACHE"
PY="${E2E_PYTHON:-python3}"
REINSTALL="${E2E_REINSTALL:-0}"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

declare -A SECS

install_npm() {  # name package bin: each agent in its own prefix, so one install never prunes the other
    local name=$1 pkg=$2 bin=$3 t0
    if [[ "$REINSTALL" != 1 && -x "$CACHE/$name/node_modules/.bin/$bin" ]]; then
        echo "e2e: $name already installed in $CACHE (set E2E_REINSTALL=1 to reinstall)"
        return 0
    fi
    t0=$SECONDS
    echo "e2e: npm install --prefix $CACHE/$name $pkg"
    mkdir -p "$CACHE/$name"
    npm install --prefix "$CACHE/$name" "$pkg" >"$CACHE/install-$name.log" 2>&1 \
        || { echo "e2e: npm install of $pkg failed; see $CACHE/install-$name.log" >&2; tail -20 "$CACHE/install-$name.log" >&2; return 1; }
    SECS[$name]=$((SECONDS - t0))
    echo "${SECS[$name]}" >"$CACHE/$name.install-seconds"
}

install_aider() {
    local t0
    if [[ "$REINSTALL" != 1 && -x "$CACHE/aider-venv/bin/aider" ]]; then
        echo "e2e: aider already installed in $CACHE/aider-venv"
        return 0
    fi
    t0=$SECONDS
    echo "e2e: $PY -m venv $CACHE/aider-venv && pip install aider-chat"
    rm -rf "$CACHE/aider-venv"
    "$PY" -m venv "$CACHE/aider-venv"
    "$CACHE/aider-venv/bin/pip" install --disable-pip-version-check -q aider-chat >"$CACHE/install-aider.log" 2>&1 \
        || { echo "e2e: pip install aider-chat failed; see $CACHE/install-aider.log" >&2; tail -20 "$CACHE/install-aider.log" >&2; return 1; }
    SECS[aider]=$((SECONDS - t0))
    echo "${SECS[aider]}" >"$CACHE/aider.install-seconds"
}

fix_claude_binary() {
    # The wrapper's postinstall copies the native program (an npm optional dependency) over
    # bin/claude.exe. An npm that skips install scripts leaves a placeholder: do the copy here.
    local bin="$CACHE/claude/node_modules/.bin/claude" native
    [[ -x "$bin" ]] || return 0
    if ! HOME="$CACHE/probe-home" DISABLE_AUTOUPDATER=1 timeout 60 "$bin" --version >/dev/null 2>&1; then
        native=$(ls "$CACHE"/claude/node_modules/@anthropic-ai/claude-code-linux-*/claude 2>/dev/null | head -1)
        if [[ -n "$native" ]]; then
            echo "e2e: claude wrapper not linked to its native program; copying $native"
            cp -f "$native" "$CACHE/claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
        else
            echo "e2e: claude's native program is missing (npm optional dependency not installed)" >&2
        fi
    fi
}

status=0
install_npm claude @anthropic-ai/claude-code claude || status=1
fix_claude_binary
install_npm codex @openai/codex codex || status=1
install_aider || status=1

# Seconds the last real install of each agent took (kept across reuses of the cache).
for a in claude codex aider; do
    [[ -n "${SECS[$a]:-}" ]] || SECS[$a]=$(cat "$CACHE/$a.install-seconds" 2>/dev/null || echo null)
done

ver() { timeout 60 "$@" 2>/dev/null | head -1 | tr -d '\r' || true; }
CLAUDE_V=$(HOME="$CACHE/probe-home" DISABLE_AUTOUPDATER=1 ver "$CACHE/claude/node_modules/.bin/claude" --version)
CODEX_V=$(ver "$CACHE/codex/node_modules/.bin/codex" --version)
AIDER_V=$(ver "$CACHE/aider-venv/bin/aider" --version)
cat >"$CACHE/versions.json" <<JSON
{"claude": {"version": "${CLAUDE_V}", "install_seconds": ${SECS[claude]}},
 "codex": {"version": "${CODEX_V}", "install_seconds": ${SECS[codex]}},
 "aider": {"version": "${AIDER_V}", "install_seconds": ${SECS[aider]}}}
JSON
echo "e2e: versions: claude=${CLAUDE_V:-?} codex=${CODEX_V:-?} aider=${AIDER_V:-?}"
echo "e2e: install seconds: claude=${SECS[claude]:-?} codex=${SECS[codex]:-?} aider=${SECS[aider]:-?}"
exit $status
