"""How to launch each real agent CLI against the fake model server, and a small tmux pane driver.

Shared by the e2e tests and by ``capture_screens.py``. The agents are installed by
``tests/e2e/install_agents.sh`` into ``$E2E_CACHE`` (default ``~/.cache/paneward-e2e``).

Facts checked here (Claude Code 2.1.197, Codex CLI 0.169.0, aider 0.86.2):

- Claude Code: ``ANTHROPIC_BASE_URL`` + ``ANTHROPIC_AUTH_TOKEN`` (a bearer token). With only
  ``ANTHROPIC_API_KEY`` a fresh HOME first checks connectivity to the real service and exits;
  once onboarding is done (``hasCompletedOnboarding`` in ``$HOME/.claude.json``) it instead asks
  "Do you want to use this API key?" with "2. No (recommended)" highlighted.
- Codex CLI: a custom provider in ``$CODEX_HOME/config.toml`` and ``codex --no-daemon``.
- aider: ``OPENAI_API_BASE`` + ``OPENAI_API_KEY`` and ``--model openai/fake-model``.

The pane driver talks to tmux through its command line (``tmux -L SOCKET``): only
``supervisor/surfaces/`` may import libtmux, and the tests must see the panes the way a
person would.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

AGENTS = ("claude", "claude-latest", "claude-newest", "codex", "codex-latest", "aider", "gemini", "qwen", "opencode",
          "vibe", "vibe-latest", "pi", "copilot", "continue", "gptme", "open-interpreter", "hermes", "kilo", "openhands")
"""The e2e names of the agents: ``claude`` is Claude Code pinned at 2.1.197, ``claude-latest`` the
newest release we test (2.1.330); the others are one CLI each."""
CACHE = Path(os.environ.get("E2E_CACHE") or Path.home() / ".cache" / "paneward-e2e")
BINARIES = {
    "claude": CACHE / "claude" / "node_modules" / ".bin" / "claude",
    "claude-latest": CACHE / "claude-latest" / "node_modules" / ".bin" / "claude",
    "claude-newest": CACHE / "claude-newest" / "node_modules" / ".bin" / "claude",
    "codex": CACHE / "codex" / "node_modules" / ".bin" / "codex",
    "codex-latest": CACHE / "codex-latest" / "node_modules" / ".bin" / "codex",
    "aider": CACHE / "aider-venv" / "bin" / "aider",
    "gemini": CACHE / "gemini" / "node_modules" / ".bin" / "gemini",
    "qwen": CACHE / "qwen" / "node_modules" / ".bin" / "qwen",
    "opencode": CACHE / "opencode" / "node_modules" / ".bin" / "opencode",
    "vibe": CACHE / "vibe-venv" / "bin" / "vibe",
    "vibe-latest": CACHE / "vibe-latest-venv" / "bin" / "vibe",
    "pi": CACHE / "pi" / "node_modules" / ".bin" / "pi",
    "copilot": CACHE / "copilot" / "node_modules" / ".bin" / "copilot",
    "continue": CACHE / "continue" / "node_modules" / ".bin" / "cn",
    "gptme": CACHE / "gptme-venv" / "bin" / "gptme",
    "open-interpreter": CACHE / "open-interpreter-venv" / "bin" / "interpreter",
    "hermes": CACHE / "hermes-venv" / "bin" / "hermes",
    "kilo": CACHE / "kilo" / "node_modules" / ".bin" / "kilo",
    "openhands": CACHE / "openhands-venv" / "bin" / "openhands",
}
PRODUCT = {"claude-latest": "claude", "claude-newest": "claude", "codex-latest": "codex", "vibe-latest": "vibe"}
"""The agent name the supervisor knows an e2e agent by (both Claude versions are ``claude``)."""


def product(agent: str) -> str:
    """The supervisor's name for an e2e agent (``claude-latest`` is ``claude``)."""
    return PRODUCT.get(agent, agent)
FAKE_MODEL = "fake-model"
FAKE_API_KEY = "sk-ant-api03-e2e-fake-key-not-a-secret-0000000000000000000000-AAAAAAAA"


def agent_binary(agent: str) -> Path | None:
    """The installed binary of an agent, or None when ``make e2e`` has not installed it."""
    path = BINARIES[agent]
    return path if path.exists() and os.access(path, os.X_OK) else None


def agent_version(agent: str) -> str:
    """The agent's version as the installer recorded it (or ``unknown``)."""
    try:
        data = json.loads((CACHE / "versions.json").read_text())
        return str(data[agent]["version"]) or "unknown"
    except (OSError, ValueError, KeyError):
        return "unknown"


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: none of the caller's keys or agent settings leak into the agent."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "USER": os.environ.get("USER", "root"),
        "SHELL": "/bin/bash",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "NO_UPDATE_NOTIFIER": "1",
        # Node agents that try to install or update packages at run time get a dead registry.
        "npm_config_registry": "http://127.0.0.1:9/",
    }
    return env


@dataclass
class AgentLaunch:
    """What to run in the pane, with which environment, where."""

    agent: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    home: Path

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


def prepare(agent: str, root: Path, url: str, *, api_key: bool = False, onboarded: bool = False,
            classic: bool = False) -> AgentLaunch:
    """A fresh HOME and work folder (a git repo) under ``root`` and the launch for ``agent``.

    ``api_key`` (Claude only): authenticate with ``ANTHROPIC_API_KEY`` instead of a bearer token.
    ``onboarded``: skip the first-run questions the way a returning user has them answered
    (Claude: ``.claude.json`` says onboarding is done — theme and security notes are skipped, the
    trust dialog stays for 2.1.197 and is accepted beforehand for 2.1.330; without it a fresh HOME with only an API key checks the real service and
    exits. Codex: the work folder is trusted in ``config.toml``. aider: ``--no-gitignore
    --no-show-model-warnings --no-show-release-notes``; Gemini CLI and Qwen Code: the folder is
    trusted and the auth type chosen in settings).
    ``classic`` (``claude-latest`` only): ``--permission-mode default``, the numbered dialogs of
    older versions instead of auto mode.
    """
    home, work = root / "home", root / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = E2E Test\n\temail = e2e@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n")
    env = base_env(home)
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=env)
    binary = agent_binary(agent)
    if binary is None:
        raise FileNotFoundError(f"{agent} is not installed in {CACHE}: run tests/e2e/install_agents.sh")
    if agent in ("claude", "claude-latest", "claude-newest"):
        env.update(ANTHROPIC_BASE_URL=url, DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1",
                   DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        if api_key:
            env["ANTHROPIC_API_KEY"] = FAKE_API_KEY
        else:
            env["ANTHROPIC_AUTH_TOKEN"] = "dummy"
        if onboarded:
            state: dict[str, object] = {"hasCompletedOnboarding": True, "theme": "dark"}
            if agent != "claude":  # 2.1.3xx's trust dialog preselects "No, exit": trusted beforehand
                state["projects"] = {str(work): {"hasTrustDialogAccepted": True}}
            (home / ".claude.json").write_text(json.dumps(state))
        argv = [str(binary)]
        if agent != "claude" and classic:
            argv += ["--permission-mode", "default"]
    elif agent in ("codex", "codex-latest"):
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            f'model = "{FAKE_MODEL}"\nmodel_provider = "fake"\napproval_policy = "on-request"\n'
            'sandbox_mode = "read-only"\ncheck_for_update_on_startup = false\n\n'
            f'[model_providers.fake]\nname = "Fake"\nbase_url = "{url}/v1"\nenv_key = "FAKE_API_KEY"\n'
            'wire_api = "responses"\n'
            + (f'\n[projects."{work}"]\ntrust_level = "trusted"\n' if onboarded else ""))
        env.update(CODEX_HOME=str(codex_home), FAKE_API_KEY="dummy")
        argv = [str(binary), "--no-daemon"]
    elif agent == "aider":
        env.update(OPENAI_API_BASE=f"{url}/v1", OPENAI_API_KEY="dummy", LITELLM_LOCAL_MODEL_COST_MAP="True")
        argv = [str(binary), "--model", f"openai/{FAKE_MODEL}", "--edit-format", "diff", "--no-check-update",
                "--no-analytics"]
        if onboarded:
            argv += ["--no-gitignore", "--no-show-model-warnings", "--no-show-release-notes"]
    elif agent == "gemini":
        gem = home / ".gemini"
        gem.mkdir(exist_ok=True)
        settings: dict[str, object] = {
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                        "disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "security": {"folderTrust": {"enabled": True}},
        }
        if onboarded:
            settings["security"] = {"folderTrust": {"enabled": True}, "auth": {"selectedType": "gemini-api-key"}}
            (gem / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
        (gem / "settings.json").write_text(json.dumps(settings, indent=2))
        env.update(GEMINI_API_KEY="dummy-gemini-key", GOOGLE_GEMINI_BASE_URL=url)
        argv = [str(binary)]
    elif agent == "qwen":
        qwen = home / ".qwen"
        qwen.mkdir(exist_ok=True)
        qsettings: dict[str, object] = {
            "tools": {"approvalMode": "default"},
            "security": {"folderTrust": {"enabled": True}, "auth": {"selectedType": "openai"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "enableAutoUpdate": False},
            "model": {"name": FAKE_MODEL},
        }
        if onboarded:
            (qwen / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
        (qwen / "settings.json").write_text(json.dumps(qsettings, indent=2))
        env.update(OPENAI_API_KEY="dummy", OPENAI_BASE_URL=f"{url}/v1", OPENAI_MODEL=FAKE_MODEL)
        argv = [str(binary), "--auth-type", "openai"]
    elif agent in ("opencode", "kilo"):
        # Kilo Code CLI is a fork of opencode: the same config schema, in its own folder and env names.
        cfg = home / ".config" / agent
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / f"{agent}.json").write_text(json.dumps({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                                  "options": {"baseURL": f"{url}/v1", "apiKey": "dummy"},
                                  "models": {FAKE_MODEL: {"name": "Fake Model"}}}},
            "model": f"fake/{FAKE_MODEL}",
            "small_model": f"fake/{FAKE_MODEL}",
            "permission": {"bash": "ask", "edit": "ask", "external_directory": "ask"},
            "autoupdate": False,
            "share": "disabled",
            # Kilo Code asks "Do you want to disable Snapshots for this repository?" when its first
            # snapshot is slow (a loaded machine): a question of its own, not one a test is about
            **({"snapshot": False} if agent == "kilo" else {}),
        }, indent=2))
        if agent == "opencode":
            env.update(OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_MODELS_FETCH="1",
                       OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_DEFAULT_PLUGINS="1")
        else:
            env.update(KILO_DISABLE_AUTOUPDATE="1", KILO_DISABLE_MODELS_FETCH="1", KILO_DISABLE_LSP_DOWNLOAD="1",
                       KILO_DISABLE_SHARE="1", KILO_TELEMETRY_LEVEL="off", KILO_DISABLE_DEFAULT_PLUGINS="1")
        argv = [str(binary)]
    elif agent in ("vibe", "vibe-latest"):
        vibe = home / ".vibe"
        vibe.mkdir(exist_ok=True)
        (vibe / "config.toml").write_text(
            f'active_model = "{FAKE_MODEL}"\ndefault_agent = "ask"\nenable_telemetry = false\n'
            'enable_update_checks = false\nenable_auto_update = false\n\n'
            f'[[providers]]\nname = "fake"\napi_base = "{url}/v1"\napi_key_env_var = "FAKE_API_KEY"\n'
            'api_style = "openai"\n\n'
            f'[[models]]\nname = "{FAKE_MODEL}"\nprovider = "fake"\nalias = "{FAKE_MODEL}"\n')
        env.update(FAKE_API_KEY="dummy", VIBE_HOME=str(vibe))
        argv = [str(binary)]
    elif agent == "pi":
        pi = home / ".pi" / "agent"
        pi.mkdir(parents=True, exist_ok=True)
        (pi / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "dummy",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": FAKE_MODEL, "name": "Fake Model"}]}}}, indent=2))
        env.update(PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0")
        argv = [str(binary), "--provider", "fake", "--model", FAKE_MODEL]
    elif agent == "copilot":
        # No GitHub login: offline mode with a bring-your-own-key provider (see `copilot help environment`).
        env.update(COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL=f"{url}/v1", COPILOT_PROVIDER_TYPE="openai",
                   COPILOT_PROVIDER_API_KEY="dummy", COPILOT_MODEL=FAKE_MODEL, COPILOT_AUTO_UPDATE="false")
        argv = [str(binary), "--disable-client-telemetry"]
    elif agent == "continue":
        cont = home / ".continue"
        cont.mkdir(exist_ok=True)
        (cont / "config.yaml").write_text(
            "name: local\nversion: 1.0.0\nschema: v1\nmodels:\n"
            f"  - name: fake\n    provider: openai\n    model: {FAKE_MODEL}\n    apiBase: {url}/v1\n"
            "    apiKey: dummy\n    roles: [chat, edit, apply]\n    capabilities: [tool_use]\n")
        env.update(CONTINUE_CLI_ENABLE_TELEMETRY="0")
        argv = [str(binary), "--config", str(cont / "config.yaml")]
    elif agent == "gptme":
        env.update(OPENAI_BASE_URL=f"{url}/v1", OPENAI_API_KEY="dummy", GPTME_DISABLE_AUTH="1",
                   GPTME_TIKTOKEN_TIMEOUT="0")
        argv = [str(binary), "--model", f"local/{FAKE_MODEL}", "--tool-format", "tool"]
        if onboarded:  # a conversation named up front: no "New conversation or load previous?" first
            argv += ["--name", "e2e"]
    elif agent == "open-interpreter":
        env.update(LITELLM_LOCAL_MODEL_COST_MAP="True")
        argv = [str(binary), "--model", f"openai/{FAKE_MODEL}", "--api_base", f"{url}/v1", "--api_key", "dummy",
                "--llm_supports_functions", "--disable_telemetry", "--context_window", "8000", "--max_tokens", "1000"]
    elif agent == "hermes":
        hermes_home = home / ".hermes"
        hermes_home.mkdir(exist_ok=True)
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  base_url: {url}/v1\n  default: {FAKE_MODEL}\n")
        env.update(HERMES_HOME=str(hermes_home), OPENAI_API_KEY="dummy")
        argv = [str(binary), "chat", "--provider", "custom", "-m", FAKE_MODEL]
    elif agent == "openhands":
        # OpenHands CLI 1.16.0: the model from the environment (--override-with-envs), no login.
        env.update(LLM_MODEL=f"openai/{FAKE_MODEL}", LLM_API_KEY="dummy", LLM_BASE_URL=f"{url}/v1",
                   LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_DISABLE_TELEMETRY="1")
        argv = [str(binary), "--override-with-envs"]
    else:
        raise ValueError(f"unknown agent {agent!r}")
    return AgentLaunch(agent=agent, argv=argv, env=env, cwd=work, home=home)


# --------------------------------------------------------------------------------------
# a tmux pane driven through the tmux command line


class TmuxError(RuntimeError):
    pass


@dataclass
class Pane:
    """One tmux session with one pane on a private server (``tmux -L socket``)."""

    socket: str
    session: str
    target: str = field(init=False)

    def __post_init__(self) -> None:
        self.target = f"{self.session}:0.0"

    def tmux(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=env)
        if check and proc.returncode != 0:
            raise TmuxError(f"tmux {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    @classmethod
    def start(cls, socket: str, session: str, launch: AgentLaunch, width: int = 120, height: int = 40) -> Pane:
        if shutil.which("tmux") is None:
            raise TmuxError("tmux is not installed")
        pane = cls(socket, session)
        env_args = [a for k, v in launch.env.items() for a in ("-e", f"{k}={v}")]
        # The pane stays after the program exits so its last screen can be read. A server started
        # here gets the clean environment as its global one (nothing of ours leaks).
        args = ["new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), "-c", str(launch.cwd),
                *env_args, launch.command, ";", "set-option", "-t", session, "remain-on-exit", "on"]
        for attempt in range(5):
            try:
                pane.tmux(*args, env=launch.env)
                break
            except TmuxError as exc:
                # The server of a session just killed may still be exiting: start a new one.
                if "server exited" not in str(exc) or attempt == 4:
                    raise
                time.sleep(0.3)
        pane.tmux("set-option", "-g", "focus-events", "on", check=False)
        return pane

    def capture(self, ansi: bool = False) -> str:
        args = ["capture-pane", "-p", "-t", self.target]
        if ansi:
            args.append("-e")
        return self.tmux(*args)

    def text(self) -> str:
        """The visible screen, trailing blank lines and spaces trimmed."""
        return "\n".join(line.rstrip() for line in self.capture().rstrip("\n").split("\n")).rstrip("\n")

    def info(self) -> dict[str, str]:
        fmt = "#{pane_title}\t#{pane_current_command}\t#{pane_dead}\t#{cursor_x}\t#{cursor_y}\t#{pane_width}\t#{pane_height}"
        title, cmd, dead, cx, cy, w, h = self.tmux("display-message", "-p", "-t", self.target, fmt).rstrip("\n").split("\t")
        return {"title": title, "current_command": cmd, "dead": dead, "cursor_x": cx, "cursor_y": cy,
                "width": w, "height": h}

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.target, *keys)

    def type(self, text: str, enter: bool = True, pause: float = 0.6) -> None:
        """Type text literally, then (after a pause, so Codex does not take it as a paste) Enter."""
        self.tmux("send-keys", "-t", self.target, "-l", text)
        if enter:
            time.sleep(pause)
            self.keys("Enter")

    def resize(self, width: int, height: int) -> None:
        self.tmux("resize-window", "-t", self.session, "-x", str(width), "-y", str(height))

    def wait_for(self, pred: str | Callable[[str], bool], seconds: float = 30.0, interval: float = 0.2) -> str:
        """Wait until the screen contains ``pred`` (a substring) or ``pred(screen)`` holds; return the screen."""
        deadline = time.monotonic() + seconds
        screen = ""
        while True:
            screen = self.text()
            ok = pred in screen if isinstance(pred, str) else pred(screen)
            if ok:
                return screen
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {seconds}s waiting for {pred!r}; screen:\n{screen}")
            time.sleep(interval)

    def pid(self) -> int | None:
        out = self.tmux("display-message", "-p", "-t", self.target, "#{pane_pid}", check=False).strip()
        return int(out) if out.isdigit() else None

    def kill(self) -> None:
        """Kill the session and every process the agent started: some agents (Gemini CLI re-runs
        itself with a bigger heap) leave a child running when the pane goes away."""
        pid = self.pid()
        tree = descendants(pid) if pid else []
        self.tmux("kill-session", "-t", self.session, check=False)
        kill_all(tree)


def descendants(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc), parents first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def kill_all(pids: list[int]) -> None:
    """SIGKILL each process still alive (the agent had its SIGHUP from tmux already)."""
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
