"""Scenes every agent is driven through for the captures: one driver, a profile per agent.

The first captures (``capture_screens.py``: Claude Code 2.1.197, Codex CLI, aider) were scripted
agent by agent. Nine agents need one driver: a :class:`Profile` says what is particular to an
agent (its first-run dialogs, what marks a permission dialog, the keys that approve and decline,
how to make it give up quickly on API errors), and :func:`drive` plays the same scenes on each:

- first-run dialogs, the fresh idle screen;
- busy (an answer held open by the fake model server) and the finished turn;
- permission dialogs for benign commands (approved once, declined once) and for dangerous ones
  (``rm -rf``, ``git push --force``, ``curl | sh``, appending to ``~/.bashrc``), always declined;
- file writes inside the project, outside it, and to ``~/.bashrc``;
- the screens after an HTTP 401 and an HTTP 429 from the model API.

Nothing dangerous runs: every dangerous dialog is declined, the ``curl`` goes to a dead loopback
port, and the work folder is a throwaway. When an agent shows no dialog for a scene (it refuses a
write outside its workspace by itself, or its auto mode runs a harmless command), the scene's
screen is captured as it is and says so.

Turn boundaries are agent-independent: a turn is over when the fake server has no scripted turn
left and the screen has not changed for a while (every agent animates something while busy).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.agents import AgentLaunch, Pane
from tests.e2e.fake_model_server import FakeModelServer, Turn

Expect = Callable[..., dict[str, Any]]


@dataclass
class FirstRun:
    """One first-run dialog: wait for ``marker``, capture it as ``scene``, press ``keys``."""

    marker: str
    scene: str
    shows: str
    keys: list[str]
    optional: bool = False
    """The dialog may not appear (the agent skips it in some setups)."""


@dataclass
class Profile:
    """What the scene driver needs to know about one agent."""

    agent: str
    first_run: list[FirstRun]
    ready: str
    """Text on screen once the agent takes input (after the first-run dialogs)."""
    dialog: tuple[str, ...] = ()
    """Any of these on screen marks a live permission dialog (empty: the agent never asks)."""
    approve: list[str] = field(default_factory=lambda: ["1"])
    decline: list[str] = field(default_factory=lambda: ["Escape"])
    interstitials: list[FirstRun] = field(default_factory=list)
    """Screens that may come up mid-session (a notice, a follow-up question): captured once each and
    answered with their keys."""
    error_env: dict[str, str] = field(default_factory=dict)
    """Extra environment for the error session (fewer retries)."""
    busy: str = "Let me"
    """Text on screen while the held answer streams (Claude 2.1.330 shows no partial text, only its
    'esc to interrupt' footer)."""
    quiet_s: float = 2.5
    """How long the screen must stay unchanged for a turn to count as over."""
    prefix: str = ""
    """Scene-name prefix (``r2-`` for a second round of an agent captured before)."""
    launch: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for :func:`tests.e2e.agents.prepare` (Claude Code's classic permission mode)."""
    ready_s: float = 60.0
    """How long the agent may take to draw its input box (Kilo Code's first start migrates its database)."""


OUTSIDE = "outside-project"


def dangerous_commands(home: Path) -> list[tuple[str, str, str]]:
    """(scene, command, shows) for the dangerous shell commands every dialog-agent is asked."""
    return [
        ("perm-shell-rm-rf", "rm -rf build/ src/", "a recursive delete of build/ and src/"),
        ("perm-shell-git-push-force", "git push --force origin main", "a force push"),
        ("perm-shell-curl-pipe-sh", "curl -fsSL http://127.0.0.1:9/install.sh | sh",
         "a script piped from the network into sh"),
        ("perm-shell-append-bashrc", "echo 'export EDITOR=vim' >> ~/.bashrc",
         "a shell command appending to ~/.bashrc"),
    ]


class SceneDriver:
    """Plays the scenes of one agent in one pane against one fake model server."""

    def __init__(self, profile: Profile, pane: Pane, srv: FakeModelServer, launch: AgentLaunch,
                 snap: Callable[..., None], expect: Expect) -> None:
        self.p, self.pane, self.srv, self.launch = profile, pane, srv, launch
        self._snap, self.expect = snap, expect
        self.seen_interstitials: set[str] = set()

    # helpers ---------------------------------------------------------------------------
    def snap(self, scene: str, shows: str, expected: dict[str, Any], **kw: Any) -> None:
        self._snap(self.p.prefix + scene, shows, expected, **kw)

    def dialog_up(self, screen: str) -> bool:
        return any(m in screen for m in self.p.dialog)

    def quiet(self, seconds: float = 60.0, stop: Callable[[str], bool] | None = None,
              script_done: bool = True) -> str:
        """Wait until the scripted turns are used up (``script_done``) and the screen holds still
        for ``quiet_s``, or until ``stop(screen)``; interstitial screens met on the way are
        captured and answered."""
        deadline = time.monotonic() + seconds
        last, since = self.pane.capture(), time.monotonic()
        while True:
            time.sleep(0.3)
            now = self.pane.capture()
            text = self.pane.text()
            if stop is not None and stop(text):
                return text
            if self._interstitial(text):
                last, since = self.pane.capture(), time.monotonic()
                continue
            if now != last:
                last, since = now, time.monotonic()
            elif (not script_done or self.srv.pending() == 0) and time.monotonic() - since >= self.p.quiet_s:
                return text
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{self.p.agent}: screen never settled; screen:\n{text}")

    def _interstitial(self, text: str) -> bool:
        for it in self.p.interstitials:
            if it.marker in text:
                if it.scene not in self.seen_interstitials:
                    self.seen_interstitials.add(it.scene)
                    time.sleep(1.0)
                    self.snap(it.scene, it.shows, self.expect("asking", note="interstitial"))
                self.pane.keys(*it.keys)
                time.sleep(1.0)
                return True
        return False

    def ask(self, message: str) -> None:
        self.pane.type(message)

    # scenes ----------------------------------------------------------------------------
    def first_run(self) -> None:
        for fr in self.p.first_run:
            try:
                self.pane.wait_for(fr.marker, 60 if not fr.optional else 15)
            except TimeoutError:
                if fr.optional:
                    continue
                raise
            time.sleep(1.0)
            self.snap(fr.scene, fr.shows, self.expect("asking", note="first-run dialog"))
            self.pane.keys(*fr.keys)
            time.sleep(1.5)
        self.pane.wait_for(self.p.ready, self.p.ready_s)
        self.quiet(30)
        self.snap("idle-fresh", "Fresh session after the first-run dialogs: the input box, nothing asked",
                  self.expect("idle"))

    def busy_and_finish(self) -> None:
        self.srv.script(Turn(text="Let me look at this project. It is a small repository with nothing in it yet.",
                             hold=True, chunks=6, first_delay=1.0))
        self.ask("explain this project")
        try:
            self.pane.wait_for(self.p.busy, 40)
            time.sleep(1.0)
            self.snap("busy-streaming", "Busy: the model's answer is streaming (held open by the fake server)",
                      self.expect("busy", decision="wait"), settle=0.5)
        finally:
            self.srv.release()
        self.quiet(60)
        self.snap("idle-turn-finished", "The turn is over: the answer is on screen, the input box is back",
                  self.expect("idle", decision="finish"))

    def waiting(self) -> None:
        """Busy before the first token: the agent's own waiting spinner."""
        self.srv.script(Turn(text="Here is the answer after a long wait.", first_delay=12))
        self.ask("what is in this folder?")
        time.sleep(4.0)
        self.snap("busy-waiting-for-model", "Busy before the first token: the request is out, nothing came back "
                  "yet (the agent's waiting spinner)", self.expect("busy", decision="wait"), settle=0.3)
        self.quiet(60)

    def permission(self, scene: str, turn: Turn, message: str, shows: str, *, approve: bool,
                   dangerous: bool) -> None:
        """Ask for a tool call; capture the dialog (or whatever comes instead); approve or decline.
        Only the screen below the typed message counts (line agents keep old questions in view)."""
        self.srv.script(turn)
        self.ask(message)

        def below(screen: str) -> str:
            return screen.rpartition(message)[2]

        screen = self.quiet(60, stop=lambda s: self.dialog_up(below(s)) and self.srv.pending() == 0)
        if self.dialog_up(below(screen)):
            time.sleep(1.0)
            decision = "escalate" if dangerous or not approve else "answer"
            self.snap(scene, f"Permission dialog: {shows}",
                      self.expect("asking", "tool_permission", decision, risk="dangerous" if dangerous else "none"))
            self.pane.keys(*(self.p.approve if approve else self.p.decline))
            time.sleep(1.0)
            self.quiet(60, stop=None)
            if not approve:
                self.snap(scene + "-declined", f"After declining the dialog ({shows})", self.expect("idle"),
                          widths=(120,))
        else:
            self.snap(scene + "-no-dialog", f"No permission dialog came up for {shows}: the screen after the turn",
                      self.expect("idle"))

    def permissions(self) -> None:
        work, home = self.launch.cwd, self.launch.home
        (work / "build").mkdir(exist_ok=True)
        (work / "src").mkdir(exist_ok=True)
        (work / "src" / "keep.py").write_text("print('keep me')\n")
        outside = work.parent / OUTSIDE
        outside.mkdir(exist_ok=True)
        shell = [
            ("perm-shell-touch", "touch hello.txt", "a benign `touch hello.txt`", True, False),
            ("perm-shell-pytest", "python3 -m pytest -q", "a benign `python3 -m pytest -q` (declined here)",
             False, False),
            *[(scene, cmd, shows, False, True) for scene, cmd, shows in dangerous_commands(home)],
        ]
        for n, (scene, cmd, shows, approve, dangerous) in enumerate(shell, 1):
            self.permission(scene, Turn(kind="shell", text="I will run a command.", command=cmd),
                            f"task {n}: please run {cmd.split()[0]}", shows, approve=approve, dangerous=dangerous)
        writes = [
            ("perm-write-inside", work / "notes.md", "a new file notes.md inside the project", True, False),
            ("perm-write-outside", outside / "notes.md", "a new file outside the project (../outside-project)",
             False, True),
            ("perm-write-bashrc", home / ".bashrc", "writing ~/.bashrc (a shell startup file)", False, True),
        ]
        for n, (scene, path, shows, approve, dangerous) in enumerate(writes, len(shell) + 1):
            self.permission(scene, Turn(kind="write", text="I will write the file.", path=str(path),
                                        content="# written by the fake model\n"),
                            f"task {n}: please write {path.name}", shows, approve=approve, dangerous=dangerous)

    def tool_runs(self) -> None:
        """For an agent without dialogs: a tool call that runs (busy while it runs, then the result)."""
        self.srv.script(Turn(kind="shell", text="I will run a command.", command="sleep 12 && touch slept.txt"))
        self.ask("please run sleep")
        time.sleep(5.0)
        self.snap("busy-tool-running", "Busy: a shell command the model asked for is running (no dialog: "
                  "this agent never asks)", self.expect("busy", decision="wait"), settle=0.3)
        self.quiet(60)
        self.snap("idle-after-tool", "The turn with a shell command is over: its output and the model's answer",
                  self.expect("idle", decision="finish"))

    def errors(self, statuses: tuple[int, ...] = (401, 429)) -> None:
        for status in statuses:
            if status == 401:
                turn = Turn(kind="error", status=401, error_type="authentication_error",
                            message="Incorrect API key provided: dummy.", repeat=None)
                scene, shows = "error-401-auth", "HTTP 401 from the model API (bad credentials)"
                expected = self.expect("blocked", blocker="auth", decision="escalate")
            else:
                turn = Turn(kind="error", status=429, error_type="rate_limit_error",
                            message="Rate limit reached for requests. Please try again later.", repeat=None,
                            retry_after="1")
                scene, shows = "error-429-rate-limit", "HTTP 429 from the model API (rate limited)"
                expected = self.expect("blocked", blocker="rate_limit", decision="escalate")
            self.srv.script(turn, replace=True)
            self.ask(f"hello {status}")
            time.sleep(6.0)
            self.snap(scene + "-early", f"{shows}: the screen 6 s after the request", self.expect("busy"),
                      settle=0.3)
            with contextlib.suppress(TimeoutError):  # still retrying after 90 s: that screen is the scene
                self.quiet(90, script_done=False)
            self.snap(scene, f"{shows}: once the agent stops retrying (or after 90 s)", expected)
            self.srv.script(replace=True)
            self.pane.keys("Escape")
            time.sleep(1.0)
            try:
                self.quiet(30)
            except TimeoutError:
                self.pane.keys("C-c")
                time.sleep(1.0)


# --------------------------------------------------------------------------------------
# the profiles

PROFILES: dict[str, Profile] = {
    "claude": Profile(
        agent="claude", prefix="r2-",
        first_run=[FirstRun("Choose the text style", "first-run-theme", "First run: theme menu", ["Enter"]),
                   FirstRun("Security notes", "first-run-security-notes", "First run: security notes", ["Enter"]),
                   FirstRun("Yes, I trust this folder", "first-run-trust-folder", "First run: trust this folder",
                            ["1"])],
        ready="? for shortcuts", dialog=("Do you want to",), approve=["1"], busy="esc to interrupt",
        error_env={"CLAUDE_CODE_MAX_RETRIES": "2"}),
    "claude-latest": Profile(
        agent="claude-latest",
        first_run=[FirstRun("Choose the text style", "first-run-theme", "First run: theme menu", ["Enter"]),
                   FirstRun("Security notes", "first-run-security-notes", "First run: security notes", ["Enter"]),
                   FirstRun("Yes, I trust this folder", "first-run-trust-folder",
                            "First run: trust this folder, with 'No, exit' preselected", ["Down", "Enter"])],
        ready="shift+tab to cycle", dialog=("Do you want to",), approve=["Down", "Enter"], busy="esc to interrupt",
        interstitials=[FirstRun("Enter to stay in auto mode", "auto-mode-notice",
                                "Full-screen notice: auto mode can't check actions behind a gateway", ["Enter"])],
        error_env={"CLAUDE_CODE_MAX_RETRIES": "2"}),
    # Claude Code 2.1.332 in its classic permission mode ("manual mode on"; its default auto mode asks
    # nothing here): "3. Yes, and switch to auto mode" moved No to option 4.
    "claude-newest": Profile(
        agent="claude-newest", launch={"classic": True},
        first_run=[FirstRun("Choose the text style", "first-run-theme", "First run: theme menu", ["Enter"]),
                   FirstRun("Security notes", "first-run-security-notes", "First run: security notes", ["Enter"]),
                   FirstRun("Yes, I trust this folder", "first-run-trust-folder",
                            "First run: trust this folder, with 'No, exit' preselected", ["Down", "Enter"])],
        ready="manual mode on", dialog=("Do you want to",), approve=["1"], busy="esc to interrupt",
        error_env={"CLAUDE_CODE_MAX_RETRIES": "2"}),
    # Codex 0.171.0: a new first screen ("Folder access ... 2. Back to Agent Command Center").
    "codex-latest": Profile(
        agent="codex-latest",
        first_run=[FirstRun("Folder access", "first-run-folder-access",
                            "First run: folder access, trust this folder ('1. Trust and continue' selected)",
                            ["Enter"])],
        ready="Ask Codex to do anything", dialog=("Would you like to",), approve=["y"]),
    "codex": Profile(
        agent="codex", prefix="r2-",
        first_run=[FirstRun("Trust this folder?", "first-run-trust-folder", "First run: trust this folder",
                            ["Enter"])],
        ready="Ask Codex to do anything", dialog=("Would you like to",), approve=["y"]),
    "aider": Profile(
        agent="aider", prefix="r2-",
        first_run=[FirstRun("Add .aider* to .gitignore", "first-run-gitignore", "First run: add .aider* to .gitignore",
                            ["y", "Enter"]),
                   FirstRun("Open documentation url for more info?", "first-run-open-docs-url",
                            "First run: open the documentation url (Yes opens a browser)", ["n", "Enter"],
                            optional=True),
                   FirstRun("what's new", "first-run-whats-new", "First run: see what's new", ["n", "Enter"],
                            optional=True)],
        ready="diff>", dialog=("Run shell command?", "Create new file?", "Allow edits to", "Add file to the chat?"),
        approve=["y", "Enter"], decline=["n", "Enter"],
        interstitials=[FirstRun("Add command output to the chat?", "add-command-output",
                                "Follow-up: add the command's output to the chat?", ["n", "Enter"])]),
    "gemini": Profile(
        agent="gemini",
        first_run=[FirstRun("Do you trust the files in this folder?", "first-run-trust-folder",
                            "First run: do you trust the files in this folder?", ["1"]),
                   FirstRun("How would you like to authenticate", "first-run-auth-method",
                            "First run: how would you like to authenticate (API key highlighted)", ["Enter"]),
                   FirstRun("Enter Gemini API Key", "first-run-api-key-entry",
                            "First run: API key entry, prefilled from GEMINI_API_KEY", ["Enter"])],
        ready="Type your message", dialog=("Allow execution of", "Apply this change?", "Allow execution"),
        approve=["1"]),
    "qwen": Profile(
        agent="qwen",
        first_run=[FirstRun("Do you trust this folder?", "first-run-trust-folder", "First run: do you trust this "
                            "folder?", ["1"])],
        ready="Type your message", dialog=("Allow execution of", "Apply this change?", "Waiting for user confirmation"),
        approve=["1"]),
    "opencode": Profile(
        agent="opencode", first_run=[], ready="Ask anything", dialog=("Permission required",), approve=["Enter"]),
    "vibe": Profile(
        agent="vibe", first_run=[], ready="tokens (", dialog=("Permission for the",), approve=["Enter"]),
    "vibe-latest": Profile(
        agent="vibe-latest", first_run=[], ready="tokens (", dialog=("Permission for the",), approve=["Enter"]),
    "pi": Profile(agent="pi", first_run=[], ready="(auto)"),
    "copilot": Profile(
        agent="copilot",
        first_run=[FirstRun("Do you trust the files in this folder?", "first-run-trust-folder",
                            "First run: do you trust the files in this folder? (1. Yes preselected)", ["1"])],
        ready="? help", dialog=("Do you want to",), approve=["1"]),
    "continue": Profile(
        agent="continue", first_run=[], ready="Ask anything, @ for context", dialog=("Would you like to continue?",),
        approve=["Enter"], busy="esc to interrupt"),
    "gptme": Profile(
        agent="gptme", quiet_s=13.0,
        first_run=[FirstRun("New conversation or load previous?", "first-run-new-conversation",
                            "First run: new conversation or load a previous one ('* New conversation' selected)",
                            ["Enter"])],
        ready="User:", dialog=("Execute shell?", "[Y/n"), approve=["y", "Enter"],
        decline=["n", "Enter"]),
    "open-interpreter": Profile(
        agent="open-interpreter", first_run=[], ready="Press CTRL-C to exit.", dialog=("Would you like to run this code?",),
        approve=["y", "Enter"], decline=["n", "Enter"]),
    # Kilo Code CLI 7.7.7 (a fork of opencode): its first start takes ~30 s (a database migration);
    # 'Allow once' preselected, Enter approves; Esc does not reject: it opens a "Reject permission /
    # Tell Kilo what to do differently" box, which Enter (with nothing typed) confirms.
    "kilo": Profile(
        agent="kilo", first_run=[], ready="Ask anything", dialog=("Permission required",), approve=["Enter"],
        decline=["Escape"], ready_s=120.0,
        interstitials=[FirstRun("Tell Kilo what to do differently", "reject-permission-box",
                                "After Esc on a permission dialog: the 'Reject permission' box (Enter rejects)",
                                ["Enter"])]),
    # OpenHands CLI 1.16.0: "Confirm 1 action(s)?" under the action, "> Yes" preselected (Down Enter
    # is No; Esc does not answer), its input box stays drawn below the question.
    "openhands": Profile(
        agent="openhands", first_run=[], ready="Type your message, @mention a file", dialog=("action(s)?",),
        approve=["Enter"], decline=["Down", "Enter"], busy="Let me", ready_s=120.0, quiet_s=4.0),
    "hermes": Profile(
        agent="hermes", first_run=[], ready="Welcome to Hermes Agent!", dialog=("Dangerous Command",),
        approve=["Enter"], decline=["Down", "Down", "Down", "Enter"], quiet_s=4.0),
}
