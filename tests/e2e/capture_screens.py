"""Capture real screens of the agents (and of plain shell programs) into ``suites/captures/``.

Drives each real agent in tmux against the fake model server through its first-run dialogs,
idle and busy states, permission prompts (benign and dangerous) and API errors, and saves
every screen at several widths with a JSON sidecar saying what it shows and what the
supervisor should conclude. See ``suites/captures/README.md`` for the layout.

    .venv/bin/python tests/e2e/capture_screens.py [--agent claude|codex|aider|shell] [--out DIR]
    .venv/bin/python tests/e2e/capture_screens.py --scenes --agent gemini [--out DIR]

``--scenes`` plays the common scenes of ``scenes.py`` (every agent, Claude Code 2.1.330 as
``claude-latest``; Claude 2.1.197, Codex and aider get ``r2-`` scene names there) and writes
format-2 sidecars with provisional labels; ``split_captures.py`` then sets the held-out part
aside before anyone labels them by reading.

Needs the agents installed by ``tests/e2e/install_agents.sh``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.agents import AgentLaunch, Pane, agent_version, base_env, prepare, product  # noqa: E402
from tests.e2e.fake_model_server import FakeModelServer, Turn  # noqa: E402
from tests.e2e.scenes import PROFILES, SceneDriver  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WIDTHS = (80, 120, 200)
MAIN_WIDTH = 120
HEIGHT = 40


def expect(state: str, kind: str | None = None, decision: str | None = None, keys: list[str] | None = None,
           risk: str | None = None, blocker: str | None = None, default_approves: bool | None = None,
           note: str = "") -> dict[str, Any]:
    """The expected classification and decision for a screen (None: no expectation)."""
    out: dict[str, Any] = {"state": state, "prompt_kind": kind, "decision": decision, "keys": keys, "risk": risk,
                           "blocker_kind": blocker, "default_approves": default_approves}
    if note:
        out["note"] = note
    return out


class Capturer:
    """Saves the pane's screen at several widths with a sidecar."""

    def __init__(self, agent: str, pane: Pane, out: Path, program: str, version: str,
                 format_version: int = 1) -> None:
        self.agent, self.pane, self.program, self.version = agent, pane, program, version
        self.format_version = format_version
        self.dir = out / agent
        self.dir.mkdir(parents=True, exist_ok=True)
        self.saved: list[str] = []

    def settle(self, seconds: float = 4.0) -> str:
        """Wait until two captures 0.5 s apart agree (busy screens never do: give up after ``seconds``)."""
        deadline = time.monotonic() + seconds
        last = self.pane.capture()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.pane.capture()
            if now == last:
                return now
            last = now
        return last

    def snap(self, name: str, shows: str, expected: dict[str, Any], widths: tuple[int, ...] = WIDTHS,
             ansi: bool = True, settle: float = 4.0) -> None:
        for width in widths:
            if int(self.pane.info()["width"]) != width:
                self.pane.resize(width, HEIGHT)
                self.settle(max(settle, 2.0))
            else:
                self.settle(settle)
            self._write(name, width, shows, expected, ansi and width == MAIN_WIDTH)
        if int(self.pane.info()["width"]) != MAIN_WIDTH:
            self.pane.resize(MAIN_WIDTH, HEIGHT)
            self.settle(2.0)

    def _write(self, name: str, width: int, shows: str, expected: dict[str, Any], ansi: bool) -> None:
        stem = f"{name}.w{width}"
        plain = self.pane.capture()
        info = self.pane.info()
        if int(info["width"]) != width:
            raise RuntimeError(f"pane is {info['width']} wide, wanted {width}")
        (self.dir / f"{stem}.txt").write_text(plain)
        files = {"plain": f"{stem}.txt"}
        if ansi:
            (self.dir / f"{stem}.ansi").write_text(self.pane.capture(ansi=True))
            files["ansi"] = f"{stem}.ansi"
        meta = {
            "format_version": self.format_version,
            "case_id": f"{self.agent}/{stem}",
            "agent": product(self.agent),
            "agent_version": self.version,
            "program": self.program,
            "scene": name,
            "width": int(info["width"]),
            "height": int(info["height"]),
            "cursor": [int(info["cursor_x"]), int(info["cursor_y"])],
            "title": info["title"],
            "current_command": info["current_command"],
            "dead": info["dead"] == "1",
            "shows": shows,
            "expected": expected,
            "files": files,
            "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "captured_by": "tests/e2e/capture_screens.py",
        }
        (self.dir / f"{stem}.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        self.saved.append(stem)
        print(f"  saved {self.agent}/{stem}", flush=True)


def step(label: str, fn: Callable[[], None], failures: list[str]) -> None:
    """Run one scene; a failure is reported and the next scene goes on."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - capture as much as possible, report the rest
        failures.append(f"{label}: {exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        traceback.print_exc()


@contextlib.contextmanager
def agent_pane(socket: str, name: str, launch: AgentLaunch) -> Iterator[Pane]:
    pane = Pane.start(socket, name, launch, MAIN_WIDTH, HEIGHT)
    try:
        yield pane
    finally:
        pane.kill()


def waiting_scene(srv: FakeModelServer, pane: Pane, cap: Capturer, marker: str) -> Callable[[], None]:
    """Busy before the first token: the model takes its time, the agent shows its waiting spinner."""
    def run() -> None:
        srv.script(Turn(text="Here is the answer after a long wait.", first_delay=14))
        pane.type("what is in this folder?")
        pane.wait_for(marker, 10)
        cap.snap("busy-waiting-for-model", "Busy before the first token: the agent's waiting spinner "
                 f"({marker!r})", expect("busy", decision="wait"), settle=0.5)
        pane.wait_for(lambda s: "after a long wait" in s, 40)
        time.sleep(3)
    return run


def streaming_scene(srv: FakeModelServer, pane: Pane, cap: Capturer, streaming: str | Callable[[str], bool],
                    streaming_shows: str, finished: Callable[[str], bool], finished_shows: str,
                    finished_note: str = "") -> Callable[[], None]:
    """Busy while the answer streams (held open by the fake server until ``streaming`` shows on the
    screen), then the finished turn once ``finished`` holds."""
    def run() -> None:
        srv.script(Turn(text="Let me look at this project. It is a small repository with nothing in it yet.",
                        hold=True, chunks=6))
        pane.type("explain this project")
        pane.wait_for(streaming, 30)
        cap.snap("busy-streaming", streaming_shows, expect("busy", decision="wait"), settle=1.0)
        srv.release()
        pane.wait_for(finished, 30)
        cap.snap("idle-turn-finished", finished_shows, expect("idle", decision="finish", note=finished_note))
    return run


FINISHED_RE = re.compile(r"✻ \w+ for \d+")
BRAILLE_SPINNER = "⠁⠂⠄⡀⢀⠠⠐⠈⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


# --------------------------------------------------------------------------------------
# Claude Code


def capture_claude(root: Path, out: Path, socket: str, failures: list[str]) -> None:
    version = agent_version("claude")
    with FakeModelServer() as srv:
        launch = prepare("claude", root / "claude", srv.url)
        work = launch.cwd
        with agent_pane(socket, "claude", launch) as pane:
            cap = Capturer("claude", pane, out, "claude", version)

            def first_run() -> None:
                pane.wait_for("Choose the text style", 40)
                cap.snap("first-run-theme", "First run: theme menu (numbered, Dark mode highlighted)",
                         expect("asking", "numbered_menu", "answer", ["Enter"], default_approves=None,
                                note="first-run settings menu: accept the highlighted default"))
                pane.keys("Enter")
                pane.wait_for("Security notes", 20)
                cap.snap("first-run-security-notes", "First run: security notes, 'Press Enter to continue…'",
                         expect("asking", None, "answer", ["Enter"],
                                note="a notice that wants Enter ('Press Enter to continue…'); its numbered points "
                                "are not options"))
                pane.keys("Enter")
                pane.wait_for("Yes, I trust this folder", 20)
                cap.snap("first-run-trust-folder", "First run: 'Quick safety check' trust folder menu (1. Yes, I trust)",
                         expect("asking", "trust_dialog", "answer", ["1"], default_approves=True))
                pane.keys("1")
                pane.wait_for("? for shortcuts", 30)
                cap.snap("idle-fresh", "Fresh session: empty input box, welcome banner", expect("idle"))

            def perm_touch() -> None:
                srv.script(Turn(kind="shell", text="I will create the file.", command="touch hello.txt"))
                pane.type("create hello.txt")
                pane.wait_for("Do you want to proceed?", 30)
                cap.snap("perm-bash-touch", "Bash permission prompt for `touch hello.txt` (1. Yes / 2. always / 3. No)",
                         expect("asking", "tool_permission", "answer", ["1"], risk="none", default_approves=True))
                pane.keys("1")
                pane.wait_for(lambda s: (work / "hello.txt").exists() and "esc to interrupt" not in s
                              and "? for shortcuts" in s, 30)

            def perm_write() -> None:
                srv.script(Turn(kind="write", path=str(work / "notes.md"), content="# Notes\n\nWritten by the fake model.\n"))
                pane.type("write notes.md")
                pane.wait_for(lambda s: "Do you want to" in s and "notes.md" in s, 30)
                cap.snap("perm-write-file", "Write permission prompt: create notes.md (diff preview, numbered menu)",
                         expect("asking", "edit_approval", "answer", ["1"], risk="none", default_approves=True))
                pane.keys("1")
                pane.wait_for(lambda s: (work / "notes.md").exists() and "? for shortcuts" in s, 30)

            def perm_dangerous(name: str, command: str, shows: str) -> Callable[[], None]:
                def run() -> None:
                    srv.script(Turn(kind="shell", text="Cleaning up.", command=command))
                    pane.type("clean up")
                    pane.wait_for("Do you want to proceed?", 30)
                    cap.snap(name, shows, expect("asking", "tool_permission", "escalate", risk="dangerous",
                                                 default_approves=True,
                                                 note="dangerous command: never approve automatically"))
                    pane.keys("Escape")
                    pane.wait_for(lambda s: "Do you want to proceed?" not in s and "? for shortcuts" in s, 30)
                    cap.snap(name + "-declined", "After Esc on the dangerous prompt: interrupted, input box back",
                             expect("idle"), widths=(MAIN_WIDTH,))
                return run

            step("claude first run", first_run, failures)
            step("claude busy", streaming_scene(
                srv, pane, cap, "esc to interrupt", "Busy: model answer streaming ('esc to interrupt', spinner)",
                lambda s: bool(FINISHED_RE.search(s)) and "esc to interrupt" not in s,
                "Turn finished ('✻ <Verb>ed for Ns'), empty input box",
                finished_note="finish after a turn, once confirmed idle"), failures)
            step("claude waiting", waiting_scene(srv, pane, cap, "esc to interrupt"), failures)
            step("claude touch", perm_touch, failures)
            step("claude write", perm_write, failures)
            (work / "build").mkdir(exist_ok=True)
            step("claude rm -rf", perm_dangerous("perm-bash-rm-rf", "rm -rf build/ src/",
                                                 "Bash permission prompt for `rm -rf build/ src/`"), failures)
            step("claude push", perm_dangerous("perm-bash-git-push-force", "git push --force origin main",
                                               "Bash permission prompt for `git push --force origin main`"), failures)

            def retrying() -> None:
                srv.script(Turn(kind="error", status=500, message="Internal server error", repeat=None), replace=True)
                pane.type("try again")
                pane.wait_for(lambda s: "etrying" in s or "attempt" in s, 40)
                cap.snap("error-500-retrying", "HTTP 500 from the API: Claude retries ('Retrying in Ns · attempt n/10')",
                         expect("busy", decision="wait", note="retrying by itself; a stall if it never ends"),
                         settle=1.0)
                srv.script(replace=True)
                pane.keys("Escape")
                pane.wait_for("Interrupted", 30)
                cap.snap("interrupted-prompt-restored", "After Esc during retries: 'Interrupted · What should Claude "
                         "do instead?' and the last prompt put back in the input box",
                         expect("idle", note="the input box holds unsent text; a human interrupted"),
                         widths=(MAIN_WIDTH,))
                pane.keys("C-u")
                pane.wait_for(lambda s: "esc to interrupt" not in s and "? for shortcuts" in s, 30)
            step("claude retrying", retrying, failures)

        # Errors, in a second session in the same (now onboarded, trusted) HOME with few retries.
        launch.env["CLAUDE_CODE_MAX_RETRIES"] = "1"
        with agent_pane(socket, "claude-errors", launch) as pane:
            cap = Capturer("claude", pane, out, "claude", version)
            errors = [
                ("error-401-auth", 401, "authentication_error", "invalid x-api-key", "auth",
                 "HTTP 401 authentication_error"),
                ("error-429-rate-limit", 429, "rate_limit_error",
                 "This request would exceed the rate limit for your organization of 50 requests per minute.",
                 "rate_limit", "HTTP 429 rate_limit_error"),
                ("error-500-api", 500, "api_error", "Internal server error", "model_unavailable",
                 "HTTP 500 api_error after retries"),
                ("error-404-model", 404, "not_found_error", "model: fake-model", "model_unavailable",
                 "HTTP 404 not_found_error for the model"),
            ]

            def errors_run() -> None:
                pane.wait_for("? for shortcuts", 40)
                for name, status, etype, message, blocker, shows in errors:
                    srv.script(Turn(kind="error", status=status, error_type=etype, message=message, repeat=None,
                                    retry_after="1" if status == 429 else None), replace=True)
                    pane.type(f"hello {status}")
                    pane.wait_for(lambda s, st=status: "esc to interrupt" not in s and "? for shortcuts" in s
                                  and FINISHED_RE.search(s.rpartition(f"hello {st}")[2]) is not None, 120)
                    cap.snap(name, f"{shows}: how Claude shows it (turn ends with the error)",
                             expect("blocked", blocker=blocker, decision="escalate"))
                    srv.script(replace=True)
            step("claude errors", errors_run, failures)

        # The API-key question: only reachable once onboarding is done (else a connectivity check exits).
        launch = prepare("claude", root / "claude-key", srv.url, api_key=True, onboarded=True)
        with agent_pane(socket, "claude-key", launch) as pane:
            cap = Capturer("claude", pane, out, "claude", version)

            def api_key() -> None:
                pane.wait_for(lambda s: "trust this folder" in s or "Do you want to use this API key?" in s, 40)
                if "trust this folder" in pane.text():
                    pane.keys("1")
                pane.wait_for("Do you want to use this API key?", 30)
                cap.snap("first-run-api-key", "Detected a custom API key: 'Do you want to use this API key?' "
                         "with '2. No (recommended)' highlighted",
                         expect("asking", "numbered_menu", "escalate", default_approves=False,
                                note="default is No: only an explicit policy rule may answer it"))
            step("claude api key", api_key, failures)

        # No connectivity: API key only, fresh HOME -> Claude checks the real service and exits.
        launch = prepare("claude", root / "claude-nonet", srv.url, api_key=True)
        with agent_pane(socket, "claude-nonet", launch) as pane:
            cap = Capturer("claude", pane, out, "claude", version)

            def no_net() -> None:
                pane.wait_for(lambda s: "Unable to connect" in s or pane.info()["dead"] == "1", 40)
                cap.snap("error-unable-to-connect", "Fresh HOME with only ANTHROPIC_API_KEY: 'Unable to connect to "
                         "Anthropic services' and the program exits", expect("exited", blocker="network",
                                                                             decision="escalate"))
            step("claude no network", no_net, failures)


# --------------------------------------------------------------------------------------
# Codex CLI


def capture_codex(root: Path, out: Path, socket: str, failures: list[str]) -> None:
    version = agent_version("codex")
    with FakeModelServer() as srv:
        launch = prepare("codex", root / "codex", srv.url)
        work = launch.cwd
        with agent_pane(socket, "codex", launch) as pane:
            cap = Capturer("codex", pane, out, "codex --no-daemon", version)

            def first_run() -> None:
                pane.wait_for("Trust this folder?", 40)
                cap.snap("first-run-trust-folder", "First run: 'Trust this folder?' (› 1. Trust and continue)",
                         expect("asking", "trust_dialog", "answer", ["Enter"], default_approves=True,
                                note="digits move the cursor here; Enter confirms"))
                pane.keys("Enter")
                pane.wait_for("Ask Codex to do anything", 30)
                cap.snap("idle-fresh", "Fresh session: input box 'Ask Codex to do anything'", expect("idle"))

            def approval(name: str, command: str, shows: str, decision: str, risk: str,
                         key: str) -> Callable[[], None]:
                def run() -> None:
                    srv.script(Turn(kind="shell", text="Running a command.", command=command))
                    pane.type(f"please run {command.split()[0]}")
                    pane.wait_for("Would you like to run the following command?", 30)
                    cap.snap(name, shows, expect("asking", "tool_permission", decision,
                                                 ["y"] if decision == "answer" else None, risk=risk,
                                                 default_approves=True))
                    pane.keys(key)
                    pane.wait_for(lambda s: "Would you like to run" not in s and "esc to interrupt" not in s, 30)
                    time.sleep(1.0)
                return run

            step("codex first run", first_run, failures)
            # While text streams Codex shows no 'esc to interrupt': only the title spins.
            step("codex busy", streaming_scene(
                srv, pane, cap, lambda s: "Let me" in s and pane.info()["title"][:1] in BRAILLE_SPINNER,
                "Busy: answer streaming; the screen shows no 'esc to interrupt' line, only the pane title spins "
                "('⠙ work')", lambda s: "Worked for" in s and "esc to interrupt" not in s,
                "Turn finished ('Worked for Ns'), input box back"), failures)
            step("codex waiting", waiting_scene(srv, pane, cap, "esc to interrupt"), failures)
            step("codex touch", approval("approval-touch", "touch codex_hello.txt",
                                         "Approval: 'Would you like to run the following command?' touch",
                                         "answer", "none", "y"), failures)
            (work / "build").mkdir(exist_ok=True)
            step("codex rm", approval("approval-rm-rf", "rm -rf build/ src/",
                                      "Approval for `rm -rf build/ src/`", "escalate", "dangerous", "Escape"), failures)
            step("codex push", approval("approval-git-push-force", "git push --force origin main",
                                        "Approval for `git push --force origin main`", "escalate", "dangerous",
                                        "Escape"), failures)

            def retrying() -> None:
                srv.script(Turn(kind="error", status=500, message="Internal server error", repeat=None), replace=True)
                pane.type("try again")
                pane.wait_for(lambda s: "econnecting" in s or "etrying" in s or "rror" in s, 40)
                cap.snap("error-500-retrying", "HTTP 500: Codex reconnects/retries by itself",
                         expect("busy", decision="wait"), settle=1.0)
                srv.script(replace=True)
                pane.keys("Escape")
                pane.wait_for(lambda s: "esc to interrupt" not in s, 60)
            step("codex retrying", retrying, failures)

        # Errors with retries off (provider settings), same HOME.
        cfg = launch.home / ".codex" / "config.toml"
        cfg.write_text(cfg.read_text() + "request_max_retries = 0\nstream_max_retries = 0\n")
        with agent_pane(socket, "codex-errors", launch) as pane:
            cap = Capturer("codex", pane, out, "codex --no-daemon", version)
            errors = [
                ("error-401-auth", 401, "invalid_request_error", "Incorrect API key provided: dummy.", "auth"),
                ("error-429-usage-limit", 429, "usage_limit_reached", "You've hit your usage limit.", "usage_limit"),
                ("error-429-rate-limit", 429, "rate_limit_exceeded", "Rate limit reached for requests", "rate_limit"),
                ("error-500-api", 500, "server_error", "The server had an error while processing your request.",
                 "model_unavailable"),
                ("error-404-model", 404, "invalid_request_error", "The model `fake-model` does not exist or you do "
                 "not have access to it.", "model_unavailable"),
            ]

            def errors_run() -> None:
                pane.wait_for("Ask Codex to do anything", 40)
                for name, status, etype, message, blocker in errors:
                    srv.script(Turn(kind="error", status=status, error_type=etype, message=message, repeat=None),
                               replace=True)
                    pane.type(f"hello {status}")
                    pane.wait_for(lambda s, st=status: "esc to interrupt" not in s
                                  and "■" in s.rpartition(f"hello {st}")[2], 120)
                    cap.snap(name, f"HTTP {status} {etype}: how Codex shows it",
                             expect("blocked", blocker=blocker, decision="escalate"))
                    srv.script(replace=True)
            step("codex errors", errors_run, failures)


# --------------------------------------------------------------------------------------
# aider


def capture_aider(root: Path, out: Path, socket: str, failures: list[str]) -> None:
    version = agent_version("aider")
    with FakeModelServer() as srv:
        launch = prepare("aider", root / "aider", srv.url)
        work = launch.cwd
        program = "aider --model openai/fake-model --edit-format diff --no-check-update --no-analytics"
        with agent_pane(socket, "aider", launch) as pane:
            cap = Capturer("aider", pane, out, program, version)

            def first_run() -> None:
                pane.wait_for("Add .aider* to .gitignore", 60)
                cap.snap("first-run-gitignore", "First run: 'Add .aider* to .gitignore (recommended)? (Y)es/(N)o [Yes]:'",
                         expect("asking", "yes_no", "answer", ["y", "Enter"], default_approves=True))
                pane.keys("y", "Enter")
                pane.wait_for("Open documentation url for more info?", 60)
                cap.snap("first-run-open-docs-url", "'Open documentation url for more info? (Y)es/(N)o/(D)on't ask "
                         "again [Yes]:' (Yes opens a browser)",
                         expect("asking", "yes_no", "answer", ["n", "Enter"], default_approves=True,
                                note="decline: Yes would open a browser"))
                pane.keys("n", "Enter")
                pane.wait_for(lambda s: "what's new" in s or s.rstrip().endswith(">"), 30)
                if "what's new" in pane.text():
                    cap.snap("first-run-whats-new", "'Would you like to see what's new in this version? [Yes]:'",
                             expect("asking", "yes_no", "answer", ["n", "Enter"], default_approves=True))
                    pane.keys("n", "Enter")
                pane.wait_for(lambda s: s.rstrip().endswith("diff>"), 30)
                cap.snap("idle-fresh", "Input prompt 'diff>' after the banner", expect("idle"))

            def run_shell(name: str, command: str, shows: str, decision: str, risk: str,
                          answer: list[str]) -> Callable[[], None]:
                def run() -> None:
                    srv.script(Turn(kind="shell", text="Run this command.", command=command))
                    pane.type(f"please run {command.split()[0]}")
                    pane.wait_for("Run shell command?", 30)
                    cap.snap(name, shows, expect("asking", "tool_permission", decision,
                                                 answer if decision == "answer" else None, risk=risk,
                                                 default_approves=True))
                    pane.keys(*answer)
                    pane.wait_for(lambda s: s.rstrip().endswith("diff>") or "Add command output" in s, 30)
                    if "Add command output" in pane.text():
                        cap.snap("add-command-output", "'Add command output to the chat? (Y)es/(N)o/(D)on't ask again "
                                 "[Yes]:'", expect("asking", "yes_no", "answer", ["n", "Enter"], default_approves=True))
                        pane.keys("n", "Enter")
                        pane.wait_for(lambda s: s.rstrip().endswith("diff>"), 30)
                return run

            def create_file() -> None:
                srv.script(Turn(kind="write", text="Creating the file.", path="notes.md", content="# Notes"))
                pane.type("write notes.md")
                pane.wait_for(lambda s: "Create new file?" in s or "Allow edits" in s or s.rstrip().endswith("diff>"),
                              30)
                if "?" in pane.text().rstrip().splitlines()[-1]:
                    cap.snap("create-new-file", "aider asks before creating a file the model named",
                             expect("asking", "edit_approval", "answer", ["y", "Enter"], default_approves=True))
                    pane.keys("y", "Enter")
                pane.wait_for(lambda s: s.rstrip().endswith("diff>"), 30)

            step("aider first run", first_run, failures)
            step("aider busy", streaming_scene(
                srv, pane, cap, "Let me", "Busy: answer streaming (no input prompt yet)",
                lambda s: "Tokens:" in s and s.rstrip().endswith("diff>"),
                "Turn finished: 'Tokens: … sent, … received.' then 'diff>'"), failures)
            step("aider waiting", waiting_scene(srv, pane, cap, "Waiting for"), failures)
            step("aider touch", run_shell("run-shell-touch", "touch aider_hello.txt",
                                          "'Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:' for touch",
                                          "answer", "none", ["y", "Enter"]), failures)
            (work / "build").mkdir(exist_ok=True)
            step("aider rm", run_shell("run-shell-rm-rf", "rm -rf build/ src/", "'Run shell command?' for rm -rf",
                                       "escalate", "dangerous", ["n", "Enter"]), failures)
            step("aider push", run_shell("run-shell-git-push-force", "git push --force origin main",
                                         "'Run shell command?' for git push --force", "escalate", "dangerous",
                                         ["n", "Enter"]), failures)
            step("aider create", create_file, failures)

            errors = [
                ("error-401-auth", 401, "invalid_request_error", "Incorrect API key provided: dummy.", "auth"),
                ("error-429-rate-limit", 429, "rate_limit_exceeded", "Rate limit reached for requests", "rate_limit"),
                ("error-500-api", 500, "server_error", "The server had an error while processing your request.",
                 "model_unavailable"),
                ("error-404-model", 404, "invalid_request_error", "The model `fake-model` does not exist.",
                 "model_unavailable"),
            ]

            def errors_run() -> None:
                for name, status, etype, message, blocker in errors:
                    srv.script(Turn(kind="error", status=status, error_type=etype, message=message, repeat=None),
                               replace=True)
                    pane.type(f"hello {status}")
                    t0 = time.monotonic()
                    pane.wait_for(lambda s: "rror" in s or "etry" in s, 60)
                    if status in (429, 500):
                        time.sleep(3)
                        cap.snap(name + "-retrying", f"HTTP {status}: aider/litellm retrying",
                                 expect("busy", decision="wait"), settle=1.0)
                    pane.wait_for(lambda s: s.rstrip().endswith("diff>") or s.rstrip().endswith("[Yes]:"),
                                  max(10.0, 120 - (time.monotonic() - t0)))
                    cap.snap(name, f"HTTP {status} {etype}: how aider shows it",
                             expect("blocked", blocker=blocker, decision="escalate"))
                    srv.script(replace=True)
                    if pane.text().rstrip().endswith("[Yes]:"):
                        pane.keys("n", "Enter")
                        pane.wait_for(lambda s: s.rstrip().endswith("diff>"), 30)
            step("aider errors", errors_run, failures)


# --------------------------------------------------------------------------------------
# plain shell programs


def capture_shell(root: Path, out: Path, socket: str, failures: list[str]) -> None:
    home, work = root / "shell" / "home", root / "shell" / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    env = base_env(home)
    (home / ".gitconfig").write_text("[user]\n\tname = E2E Test\n\temail = e2e@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n")
    launch = AgentLaunch(agent="shell", argv=["bash", "--noprofile", "--norc"], env=env, cwd=work, home=home)
    with agent_pane(socket, "shell", launch) as pane:
        cap = Capturer("shell", pane, out, "bash", "bash")
        pane.type("PS1='$ '", pause=0.1)

        def prompt(name: str, setup: str, command: str, wait: str, shows: str, exp: dict[str, Any],
                   answer: list[str]) -> Callable[[], None]:
            def run() -> None:
                if setup:
                    pane.type(setup, pause=0.1)
                pane.type("clear", pause=0.1)
                time.sleep(0.5)
                pane.type(command, pause=0.1)
                pane.wait_for(wait, 120)
                cap.program = command
                cap.snap(name, shows, exp)
                pane.keys(*answer)
                pane.wait_for(lambda s: s.rstrip().endswith("$"), 60)
            return run

        py = sys.executable
        scenes = [
            ("rm-i", "echo data > keep.txt", "rm -i keep.txt", "remove regular file",
             "`rm -i`: \"rm: remove regular file 'keep.txt'?\"",
             expect("asking", "yes_no", "escalate", risk="dangerous", default_approves=None,
                    note="deleting a file; no default shown"), ["n", "Enter"]),
            ("apt-get-remove", "", "apt-get remove less", "Do you want to continue?",
             "`apt-get remove less` (no -y): 'Do you want to continue? [Y/n]'",
             expect("asking", "yes_no", "escalate", risk="dangerous", default_approves=True,
                    note="removing a system package"), ["n", "Enter"]),
            ("pip-uninstall", f"{py} -m venv {root}/shell/venv", f"{root}/shell/venv/bin/pip uninstall pip",
             "Proceed (Y/n)?", "`pip uninstall pip`: 'Proceed (Y/n)?'",
             expect("asking", "yes_no", "escalate", risk="dangerous", default_approves=True,
                    note="uninstalling a package"), ["n", "Enter"]),
            ("git-clean-i", "git init -q . && touch junk1.tmp junk2.tmp", "git clean -i", "What now>",
             "`git clean -i`: 'Would remove …' then the '*** Commands ***' menu and 'What now>'",
             expect("asking", "numbered_menu", "escalate", risk="dangerous", note="interactive delete menu"),
             ["5", "Enter"]),
            ("git-add-p", "printf 'a\\nb\\n' > f.txt && git add f.txt && git commit -qm init && printf 'a\\nc\\n' > f.txt",
             "git add -p", "Stage this hunk", "`git add -p`: '(1/1) Stage this hunk [y,n,q,a,d,e,?]?'",
             expect("asking", "yes_no", "escalate", note="a review choice a human makes"), ["q", "Enter"]),
            ("python-input-default-no", "", f"{py} -c \"input('Continue? [y/N] ')\"", "Continue? [y/N]",
             "python input(): 'Continue? [y/N] '",
             expect("asking", "yes_no", "escalate", default_approves=False,
                    note="default is No: only an explicit rule may answer"), ["n", "Enter"]),
            ("python-input-default-yes", "", f"{py} -c \"input('Continue with the build? [Y/n] ')\"",
             "Continue with the build? [Y/n]", "python input(): 'Continue with the build? [Y/n] '",
             expect("asking", "yes_no", "answer", ["y", "Enter"], default_approves=True), ["n", "Enter"]),
        ]
        for name, setup, command, wait, shows, exp, answer in scenes:
            step(f"shell {name}", prompt(name, setup, command, wait, shows, exp, answer), failures)
        pane.type("clear", pause=0.1)
        step("shell idle", lambda: (pane.wait_for(lambda s: s.strip() == "$", 10),
                                    cap.snap("idle-prompt", "A plain bash prompt '$ '", expect("idle"))), failures)


CAPTURERS = {"claude": capture_claude, "codex": capture_codex, "aider": capture_aider, "shell": capture_shell}


def capture_scenes(agent: str, root: Path, out: Path, socket: str, failures: list[str]) -> None:
    """The common scenes (scenes.py) for one agent, in one session from a fresh HOME."""
    profile = PROFILES[agent]
    version = agent_version(agent)
    with FakeModelServer() as srv:
        launch = prepare(agent, root / agent, srv.url, **profile.launch)
        launch.env.update(profile.error_env)
        if agent in ("codex", "codex-latest"):  # give up on API errors after one retry
            cfg = launch.home / ".codex" / "config.toml"
            text = cfg.read_text()
            head, _, providers = text.partition("[model_providers.fake]")
            cfg.write_text(head + "[model_providers.fake]" + providers + "request_max_retries = 1\n"
                           "stream_max_retries = 1\n")
        program = " ".join(Path(launch.argv[0]).name if i == 0 else a for i, a in enumerate(launch.argv))
        with agent_pane(socket, agent, launch) as pane:
            cap = Capturer(agent, pane, out, program, version, format_version=2)
            d = SceneDriver(profile, pane, srv, launch, cap.snap, expect)
            step(f"{agent} first run", d.first_run, failures)
            step(f"{agent} busy", d.busy_and_finish, failures)
            step(f"{agent} waiting", d.waiting, failures)
            if profile.dialog:
                step(f"{agent} permissions", d.permissions, failures)
            else:
                step(f"{agent} tool runs", d.tool_runs, failures)
            step(f"{agent} errors", d.errors, failures)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", action="append", choices=sorted(set(CAPTURERS) | set(PROFILES)),
                        help="repeatable; default: all")
    parser.add_argument("--scenes", action="store_true", help="the common scenes of scenes.py (format 2)")
    parser.add_argument("--out", type=Path, default=REPO / "suites" / "captures")
    parser.add_argument("--prefix", default=None,
                        help="scene-name prefix for --scenes (a new round of an agent captured before: r2-)")
    args = parser.parse_args()
    if args.prefix is not None:
        for name in args.agent or list(PROFILES):
            PROFILES[name] = dataclasses.replace(PROFILES[name], prefix=args.prefix)
    if args.scenes:
        CAPTURERS.clear()
        CAPTURERS.update({a: (lambda root, out, sock, f, a=a: capture_scenes(a, root, out, sock, f))
                          for a in PROFILES})
    failures: list[str] = []
    socket = f"capture-{uuid.uuid4().hex[:8]}"
    try:
        with tempfile.TemporaryDirectory(prefix="paneward-capture-") as tmp:
            for agent in args.agent or list(CAPTURERS):
                t0 = time.monotonic()
                print(f"capturing {agent}", flush=True)
                step(agent, lambda a=agent: CAPTURERS[a](Path(tmp), args.out, socket, failures), failures)
                print(f"  {agent}: {time.monotonic() - t0:.0f}s", flush=True)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    for f in failures:
        print(f"FAILED {f}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
