"""A scripted stand-in for a coding agent: a small TUI that plays screens in the styles of real
agents (Claude-style permission menus, Codex approvals, aider y/n questions, trust dialogs,
spinners, blockers, an idle input box), waits for real keystrokes, and records what it got.

    python -m supervisor.demo_agent SCRIPT.yaml [--record FILE]
    python -m supervisor.demo_agent --random 20 --seed 1 --record FILE   # for bench/reaction.py

The screens are our own, written in the agents' wording and layout. Plain stdout and raw-mode
stdin (termios); no curses. Every key received, every prompt shown and every answer chosen
goes to the ``--record`` JSONL file, so tests can assert on what really arrived.

Script format (YAML)::

    style: claude            # claude | codex | aider (screens of idle box, spinner, prompts)
    steps:
      - say: "I'll run the tests first."
      - spinner: {seconds: 1.5, verb: Reading files}
      - prompt: {id: p1, kind: bash, command: "npm test", description: "Run the test suite",
                 on_decline: [{say: "Skipped."}]}
      - prompt: {id: p2, kind: yes_no, question: "Run shell command?", command: "pytest -q"}
      - prompt: {id: p3, kind: bash, command: "make", ignore: 2}   # the first 2 answers do not take
      - blocker: {kind: auth, seconds: 2}
      - idle: {id: i1, seconds: 5}     # input box; a typed line + Enter is recorded
      - done: {seconds: 30}            # "Worked for Ns" + idle box; "/exit" exits
      - exit: {code: 0}

Prompt kinds: ``bash`` (tool permission), ``edit`` (edit approval), ``trust`` (workspace
trust dialog, current wording), ``trust_files`` (the older "Do you trust the files in this
folder?" dialog), ``bypass`` (default is "No, exit"), ``question`` (free-text menu),
``codex_exec`` (Codex approval), ``yes_no`` (aider ``(Y)es/(N)o [Yes]:``), ``shell_yn``
(``Continue? [y/N]``, default No).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import sys
import termios
import time
import tty
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

SPINNER = "·✢✳✶✻✽"
BRAILLE = "⠂⠐⠈⠁⠉⠃⠋⠙"
Key = str

_ESCAPES = {
    b"\x1b[A": "Up", b"\x1b[B": "Down", b"\x1b[C": "Right", b"\x1b[D": "Left", b"\x1bOA": "Up",
    b"\x1bOB": "Down", b"\x1b[Z": "BTab", b"\x1b[3~": "Delete",
}
_SINGLE = {b"\r": "Enter", b"\n": "Enter", b"\x1b": "Escape", b"\x7f": "BSpace", b"\x08": "BSpace",
           b"\t": "Tab", b"\x03": "C-c", b"\x04": "C-d"}


def parse_keys(data: bytes) -> list[Key]:
    """Bytes read from the terminal as key names (tmux's names: Enter, Up, Escape, or the text)."""
    keys: list[Key] = []
    i = 0
    while i < len(data):
        for seq, name in _ESCAPES.items():
            if data.startswith(seq, i):
                keys.append(name)
                i += len(seq)
                break
        else:
            one = data[i:i + 1]
            if one in _SINGLE:
                keys.append(_SINGLE[one])
                i += 1
                continue
            # one UTF-8 character
            n = 1
            b0 = data[i]
            if b0 >= 0xF0:
                n = 4
            elif b0 >= 0xE0:
                n = 3
            elif b0 >= 0xC0:
                n = 2
            keys.append(data[i:i + n].decode("utf-8", "replace"))
            i += n
    return keys


class Recorder:
    """Appends one JSON object per line; flushed at once so tests can read it live."""

    def __init__(self, path: str | None) -> None:
        self._fh: TextIO | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def __call__(self, event: str, **data: Any) -> None:
        if self._fh is None:
            return
        self._fh.write(json.dumps({"t": time.time(), "event": event, **data}, ensure_ascii=False) + "\n")
        self._fh.flush()


@dataclass
class Option:
    label: str
    approves: bool | None
    shortcut: str | None = None


@dataclass
class PromptSpec:
    lines: list[str]
    """The prompt's body above the options."""
    options: list[Option]
    footer: list[str] = field(default_factory=list)
    highlight: int = 0
    marker: str = "❯"
    numbered: bool = True
    inline: str | None = None
    """For line prompts (aider, shell): the question line; answers are typed letters + Enter."""
    default_yes: bool = True


class Terminal:
    """Raw-mode stdin and full-screen redraws on stdout."""

    def __init__(self) -> None:
        self.fd = sys.stdin.fileno()
        self.out = sys.stdout
        self._saved: list[Any] | None = None

    def __enter__(self) -> Terminal:
        if os.isatty(self.fd):
            self._saved = termios.tcgetattr(self.fd)
            tty.setraw(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    @property
    def size(self) -> tuple[int, int]:
        try:
            sz = os.get_terminal_size(self.out.fileno())
            return sz.columns, sz.lines
        except OSError:
            return 80, 24

    def title(self, text: str) -> None:
        self.out.write(f"\x1b]2;{text}\x07")
        self.out.flush()

    def draw(self, lines: list[str], cursor: tuple[int, int] | None = None) -> None:
        """Redraw the whole screen; put the cursor at (row, column) like a TUI's input box does."""
        _, height = self.size
        lines = lines[-height:]
        move = f"\x1b[{cursor[0] + 1};{cursor[1] + 1}H" if cursor is not None else ""
        self.out.write("\x1b[H\x1b[2J" + "\r\n".join(lines) + move)
        self.out.flush()

    def read_keys(self, timeout: float | None) -> list[Key] | None:
        """Keys typed within ``timeout`` seconds ([] when none; None at end of input)."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        data = os.read(self.fd, 1024)
        if not data:
            return None
        if data == b"\x1b":  # a lone Escape, or the start of a sequence split across reads
            more, _, _ = select.select([self.fd], [], [], 0.03)
            if more:
                data += os.read(self.fd, 1024)
        return parse_keys(data)


class Agent:
    """Plays a script on a :class:`Terminal`."""

    def __init__(self, term: Terminal, record: Recorder, style: str = "claude", cwd: str = "/tmp/proj") -> None:
        self.term = term
        self.record = record
        self.style = style
        self.cwd = cwd
        self.transcript: list[str] = []
        self.started = time.time()
        self.exit_code: int | None = None

    # -- screen pieces ---------------------------------------------------------------------------
    def rule(self) -> str:
        return "─" * max(20, self.term.size[0] - 1)

    def idle_box(self, typed: str = "") -> list[str]:
        if self.style == "codex":
            return ["", f"› {typed}" if typed else "› Ask Codex to do anything", "",
                    "  ? for shortcuts                                    100% context left"]
        if self.style == "aider":
            return ["", f"> {typed}"]
        return [self.rule(), f"❯ {typed}", self.rule(), "  ? for shortcuts"]

    def spinner_line(self, verb: str, elapsed: float, frame: int) -> str:
        if self.style == "codex":
            return f"{'•◦'[frame % 2]} {verb} ({int(elapsed)}s • esc to interrupt)"
        if self.style == "aider":
            return f"{'░▒▓█'[frame % 4]} {verb}..."
        tokens = 40 + int(elapsed * 37)
        return f"{SPINNER[frame % len(SPINNER)]} {verb}… (esc to interrupt · {int(elapsed)}s · ↓ {tokens} tokens)"

    def say_line(self, text: str) -> list[str]:
        if self.style == "claude":
            out = []
            for i, line in enumerate(text.splitlines() or [""]):
                out.append(("⏺ " if i == 0 else "  ") + line)
            return out + [""]
        if self.style == "codex":
            return ["• " + line for line in text.splitlines()] + [""]
        return text.splitlines() + [""]

    def set_title(self, busy: bool, frame: int = 0) -> None:
        if self.style == "claude":
            self.term.title(f"{BRAILLE[frame % len(BRAILLE)]} Claude Code" if busy else "✳ Claude Code")
        elif self.style == "codex":
            self.term.title(f"{BRAILLE[frame % len(BRAILLE)]} proj" if busy else "proj")

    def draw(self, bottom: list[str]) -> None:
        width, height = self.term.size
        room = max(0, height - len(bottom))
        # Wrap long transcript lines ourselves: a line the terminal wraps takes two rows, and an
        # overfull screen would scroll the top rows (the start of an error message) away.
        rows = [part for line in self.transcript
                for part in ([line[i:i + width] for i in range(0, len(line), width)] or [""])]
        top = rows[-room:] if room else []
        cursor = None
        for i, line in enumerate(bottom):
            if line.startswith(("❯ ", "› ", "> ")) and i <= 2:
                typed = line[2:]
                cursor = (room + i, 2 + (0 if typed.startswith("Ask Codex") else len(typed)))
                break
        self.term.draw(top + [""] * (room - len(top)) + bottom, cursor)

    # -- steps -------------------------------------------------------------------------------------
    def run_steps(self, steps: list[dict[str, Any]]) -> None:
        for step in steps:
            if self.exit_code is not None:
                return
            name = next(iter(step))
            handler = getattr(self, f"step_{name}", None)
            if handler is None:
                raise SystemExit(f"demo_agent: unknown step {name!r}")
            arg = step[name]
            handler(arg if arg is not None else {})

    def step_say(self, arg: Any) -> None:
        text = arg if isinstance(arg, str) else arg.get("text", "")
        self.transcript += self.say_line(text)
        self.set_title(False)
        self.draw(self.idle_box())
        self.record("say", text=text)

    def step_sleep(self, arg: Any) -> None:
        seconds = float(arg if not isinstance(arg, dict) else arg.get("seconds", 1))
        self._pause(seconds)

    def _pause(self, seconds: float) -> None:
        """Wait without drawing; keys that arrive are recorded as unexpected."""
        end = time.time() + seconds
        while (left := end - time.time()) > 0:
            keys = self.term.read_keys(left)
            if keys is None:
                time.sleep(left)
                return
            if keys:
                self.record("keys", keys=keys, during="pause")

    def step_spinner(self, arg: Any) -> None:
        arg = arg if isinstance(arg, dict) else {"seconds": float(arg)}
        seconds = float(arg.get("seconds", 1.0))
        verb = str(arg.get("verb", "Working" if self.style == "codex" else "Thinking"))
        start = time.time()
        frame = 0
        self.record("spinner", seconds=seconds)
        if arg.get("animate") is False:  # a hung agent: a busy screen and then silence
            self.set_title(True, 0)
            self.draw([self.spinner_line(verb, 0, 0), ""] + self.idle_box())
            self._pause(seconds)
            self.set_title(False)
            return
        while (elapsed := time.time() - start) < seconds:
            self.set_title(True, frame)
            self.draw([self.spinner_line(verb, elapsed, frame), ""] + self.idle_box())
            frame += 1
            keys = self.term.read_keys(min(0.1, max(0.0, seconds - elapsed)))
            if keys:
                self.record("keys", keys=keys, during="spinner")
                if "Escape" in keys:
                    self.transcript += ["  ⎿  Interrupted · What should Claude do instead?", ""]
                    self.record("interrupted")
                    break
        self.set_title(False)

    def step_blocker(self, arg: Any) -> None:
        kind = arg.get("kind", "auth")
        text = BLOCKERS.get(kind, BLOCKERS["auth"])
        self.transcript += [text, ""]
        self.record("blocker", kind=kind)
        self.set_title(False)
        self.draw(self.idle_box())
        seconds = arg.get("seconds")
        self._read_line(arg.get("id", "blocker"), seconds)

    def step_idle(self, arg: Any) -> None:
        self.set_title(False)
        self._read_line(arg.get("id", "idle"), arg.get("seconds"))

    def step_done(self, arg: Any) -> None:
        secs = int(time.time() - self.started)
        marker = f"✻ Worked for {max(1, secs)}s" if self.style == "claude" else f"─ Worked for {max(1, secs)}s ─"
        self.transcript += [marker, ""]
        self.record("done")
        self.set_title(False)
        self._read_line(arg.get("id", "done"), arg.get("seconds"))

    def _read_line(self, line_id: str, seconds: float | None) -> str | None:
        """Show the idle box and collect a typed line until Enter (or ``seconds`` pass).
        ``/exit`` (Claude, Codex) or ``/quit`` (aider) ends the program."""
        typed = ""
        self.draw(self.idle_box())
        end = None if seconds is None else time.time() + float(seconds)
        while True:
            left = None if end is None else end - time.time()
            if left is not None and left <= 0:
                return None
            keys = self.term.read_keys(left)
            if keys is None:
                if end is None:
                    self.exit_code = 0
                    return None
                time.sleep(max(0.0, end - time.time()))
                return None
            if not keys:
                continue
            self.record("keys", keys=keys, during=line_id)
            for k in keys:
                if k == "Enter":
                    line = typed
                    self.record("input", id=line_id, text=line)
                    if line.strip() in ("/exit", "/quit", "exit"):
                        self.exit_code = 0
                        return line
                    if line.strip():
                        self.transcript += [f"> {line}", ""]
                    self.draw(self.idle_box())
                    if line.strip():
                        return line
                    typed = ""
                elif k == "BSpace":
                    typed = typed[:-1]
                elif k == "C-c" or k == "C-d":
                    self.exit_code = 130 if k == "C-c" else 0
                    return None
                elif len(k) == 1:
                    typed += k
            self.draw(self.idle_box(typed))

    def step_exit(self, arg: Any) -> None:
        code = int(arg.get("code", 0)) if isinstance(arg, dict) else int(arg)
        self.record("exit", code=code)
        self.exit_code = code

    def step_prompt(self, arg: dict[str, Any]) -> None:
        spec = build_prompt(self, arg)
        pid = str(arg.get("id", "prompt"))
        approved = self.ask(pid, spec, arg)
        branch = arg.get("on_approve" if approved else "on_decline")
        if approved is False and branch is None and arg.get("exit_on_decline"):
            self.exit_code = 1
        if branch:
            self.run_steps(branch)

    def ask(self, pid: str, spec: PromptSpec, arg: dict[str, Any]) -> bool | None:
        """Show a prompt and wait for a valid answer; record it. True if it approved."""
        self.set_title(False)
        highlight = spec.highlight
        typed = ""
        received: list[Key] = []
        self.draw(render_prompt(self, spec, highlight, typed))
        self.record("prompt_shown", id=pid, kind=arg.get("kind"), question=spec.inline or spec.lines[-1:])
        timeout = arg.get("timeout")
        end = None if timeout is None else time.time() + float(timeout)
        ignore = int(arg.get("ignore", 0))
        while True:
            left = None if end is None else end - time.time()
            if left is not None and left <= 0:
                self.record("answer", id=pid, choice=None, label=None, approved=None, keys=received, timeout=True)
                return None
            keys = self.term.read_keys(left)
            if keys is None:
                self.exit_code = 0
                return None
            if not keys:
                continue
            at = time.time()
            received += keys
            self.record("keys", keys=keys, during=pid)
            if ignore > 0:  # a prompt that does not take the answer (a stuck or slow agent)
                ignore -= 1
                self.record("ignored", id=pid, keys=keys)
                continue
            choice: int | None = None
            for k in keys:
                if spec.inline is not None:
                    if k == "Enter":
                        choice = answer_line(typed, spec)
                        if choice is None:
                            self.transcript += [spec.inline + typed, "Please answer with one of: yes, no", ""]
                        typed = ""
                    elif k == "BSpace":
                        typed = typed[:-1]
                    elif len(k) == 1:
                        typed += k
                else:
                    if k == "Up":
                        highlight = (highlight - 1) % len(spec.options)
                    elif k == "Down":
                        highlight = (highlight + 1) % len(spec.options)
                    elif k == "Enter":
                        choice = highlight
                    elif k == "Escape":
                        choice = next((i for i, o in enumerate(spec.options) if o.approves is False),
                                      len(spec.options) - 1)
                    elif spec.numbered and k.isdigit() and 1 <= int(k) <= len(spec.options):
                        choice = int(k) - 1
                    else:
                        choice = next((i for i, o in enumerate(spec.options) if o.shortcut and o.shortcut == k),
                                      None)
                if choice is not None:
                    break
            if choice is not None:
                opt = spec.options[choice]
                self.record("answer", id=pid, choice=choice, label=opt.label, approved=opt.approves,
                            keys=received, answered_at=at)
                self.transcript += answer_echo(self, spec, opt)
                self.draw(self.idle_box())
                return opt.approves
            self.draw(render_prompt(self, spec, highlight, typed))


BLOCKERS = {
    "auth": "  ⎿  API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\","
            "\"message\":\"Invalid bearer token\"}} · Please run /login",
    "usage_limit": "  ⎿  Claude usage limit reached. Your limit will reset at 5pm (UTC).",
    "rate_limit": "  ⎿  API Error: 429 rate limit exceeded · retrying is not possible now",
    "merge_conflict": "CONFLICT (content): Merge conflict in src/app.py\n"
                      "Automatic merge failed; fix conflicts and then commit the result.",
    "model_unavailable": "⏺ The selected model is currently unavailable. Please try again later.",
}


def answer_line(typed: str, spec: PromptSpec) -> int | None:
    t = typed.strip().lower()
    if t == "":
        t = "y" if spec.default_yes else "n"
    for i, o in enumerate(spec.options):
        if o.shortcut and (t == o.shortcut.lower() or o.label.lower().startswith(t)):
            return i
    return None


def answer_echo(agent: Agent, spec: PromptSpec, opt: Option) -> list[str]:
    if spec.inline is not None:
        return [spec.inline + opt.label.split()[0].capitalize(), ""]
    if opt.approves:
        return []
    if agent.style == "codex":
        return ["✗ You canceled the request.", ""]
    return ["  ⎿  User declined · What should Claude do instead?", ""]


def build_prompt(agent: Agent, arg: dict[str, Any]) -> PromptSpec:
    kind = arg.get("kind", "bash")
    cmd = str(arg.get("command", "npm test"))
    desc = str(arg.get("description", "Run the test suite"))
    first = cmd.split()[0] if cmd.split() else cmd
    if kind == "bash":
        return PromptSpec(
            lines=[agent.rule(), " Bash command", "", f"   {cmd}", f"   {desc}", "", " Do you want to proceed?"],
            options=[Option("Yes", True),
                     Option(f"Yes, and don't ask again for {first} commands in {agent.cwd}", True),
                     Option("No, and tell Claude what to do differently (esc)", False)],
            footer=["", " Esc to cancel · Tab to amend"])
    if kind == "edit":
        file = str(arg.get("file", "app.py"))
        return PromptSpec(
            lines=[agent.rule(), " Edit file", f" {file}", "╌" * 40, "  12 -    return a + b",
                   "  12 +    return sum(values)", "╌" * 40, f" Do you want to make this edit to {Path(file).name}?"],
            options=[Option("Yes", True), Option("Yes, allow all edits during this session (shift+tab)", True),
                     Option("No, and tell Claude what to do differently (esc)", False)],
            footer=["", " Esc to cancel · Tab to amend"])
    if kind == "trust":
        return PromptSpec(
            lines=[agent.rule(), " Accessing workspace:", "", f" {agent.cwd}", "",
                   " Quick safety check: Is this a project you created or one you trust?",
                   " Claude Code'll be able to read, edit, and execute files here.", ""],
            options=[Option("Yes, I trust this folder", True), Option("No, exit", False)],
            footer=["", " Enter to confirm · Esc to cancel"])
    if kind == "trust_files":
        return PromptSpec(
            lines=[agent.rule(), " Do you trust the files in this folder?", "", f" {agent.cwd}", "",
                   " Claude Code may read, write, or execute files contained in this directory. This can pose",
                   " security risks, so only use files from trusted sources.", ""],
            options=[Option("Yes, proceed", True), Option("No, exit", False)],
            footer=["", " Enter to confirm · Esc to cancel"])
    if kind == "bypass":
        return PromptSpec(
            lines=[agent.rule(), " WARNING: Claude Code running in Bypass Permissions mode", "",
                   " In Bypass Permissions mode, Claude Code will not ask for your approval before running",
                   " potentially dangerous commands.", ""],
            options=[Option("No, exit", False), Option("Yes, I accept", True)],
            footer=["", " Enter to confirm · Esc to cancel"])
    if kind == "question":
        q = str(arg.get("question", "Which database should the service use?"))
        return PromptSpec(
            lines=[agent.rule(), f"● {q}", ""],
            options=[Option("PostgreSQL", None), Option("SQLite", None), Option("Type something.", None)],
            footer=["", "Enter to select · ↑/↓ to navigate · Esc to cancel"])
    if kind == "codex_exec":
        return PromptSpec(
            lines=["", "  Would you like to run the following command?", "",
                   f"  Reason: {desc}", "", f"  $ {cmd}", ""],
            options=[Option("Yes, proceed (y)", True, "y"),
                     Option(f"Yes, and don't ask again for commands that start with `{first}` (p)", True, "p"),
                     Option("No, and tell Codex what to do differently (esc)", False)],
            footer=["", "  Press enter to confirm or esc to cancel"], marker="›")
    if kind == "yes_no":
        q = str(arg.get("question", "Run shell command?"))
        body = [f"{cmd}", ""] if arg.get("command") else []
        return PromptSpec(lines=body, options=[Option("yes", True, "y"), Option("no", False, "n"),
                                               Option("don't ask again", False, "d")],
                          inline=f"{q} (Y)es/(N)o/(D)on't ask again [Yes]: ")
    if kind == "shell_yn":
        q = str(arg.get("question", "Continue?"))
        return PromptSpec(lines=[], options=[Option("yes", True, "y"), Option("no", False, "n")],
                          inline=f"{q} [y/N] ", default_yes=False)
    raise SystemExit(f"demo_agent: unknown prompt kind {kind!r}")


def render_prompt(agent: Agent, spec: PromptSpec, highlight: int, typed: str) -> list[str]:
    if spec.inline is not None:
        return [*spec.lines, spec.inline + typed]
    lines = list(spec.lines)
    for i, o in enumerate(spec.options):
        mark = spec.marker if i == highlight else " "
        num = f"{i + 1}. " if spec.numbered else ""
        lines.append(f" {mark} {num}{o.label}")
    return lines + spec.footer


# -- random prompts for the reaction benchmark -----------------------------------------------------
def run_random(agent: Agent, count: int, seed: int, gap: tuple[float, float]) -> None:
    """Spinner for a random time, then a safe prompt; repeat. Records ``drawn_at`` for each
    prompt (just after the screen was written) and ``answered_at`` (when the choosing key arrived)."""
    rng = random.Random(seed)
    for n in range(count):
        agent.step_spinner({"seconds": rng.uniform(*gap), "verb": "Thinking"})
        kind = rng.choice(["bash", "bash", "edit", "codex_exec"])
        arg = {"id": f"r{n}", "kind": kind, "command": rng.choice(["npm test", "pytest -q", "ls -la src"])}
        if kind == "codex_exec":
            agent.style = "codex"
        spec = build_prompt(agent, arg)
        agent.draw(render_prompt(agent, spec, 0, ""))
        agent.record("drawn", id=arg["id"], drawn_at=time.time())
        agent.ask(arg["id"], spec, arg)
        agent.style = "claude"
        if agent.exit_code is not None:
            return
    agent.step_done({"seconds": None})


def load_script(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SystemExit(f"demo_agent: cannot read script {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise SystemExit(f"demo_agent: {path} needs a mapping with a `steps:` list")
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m supervisor.demo_agent", description=__doc__.splitlines()[0])
    ap.add_argument("script", nargs="?", help="a demo script (YAML); see supervisor/data/demo/")
    ap.add_argument("--record", help="append everything received to this JSONL file")
    ap.add_argument("--random", type=int, default=0, metavar="N", help="show N prompts at random moments")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gap", type=float, nargs=2, default=(0.3, 1.5), metavar=("MIN", "MAX"))
    ap.add_argument("--style", default=None)
    args = ap.parse_args(argv)
    record = Recorder(args.record)
    script: dict[str, Any] = load_script(args.script) if args.script else {"steps": []}
    style = args.style or script.get("style", "claude")
    with Terminal() as term:
        agent = Agent(term, record, style=style, cwd=str(script.get("cwd", os.getcwd())))
        record("start", pid=os.getpid(), style=style, script=args.script)
        try:
            if args.random:
                run_random(agent, args.random, args.seed, (args.gap[0], args.gap[1]))
            else:
                agent.run_steps(script["steps"])
        except KeyboardInterrupt:
            agent.exit_code = 130
        code = agent.exit_code if agent.exit_code is not None else 0
        record("end", code=code)
        term.out.write("\r\n")
        term.out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
