"""The scripted agent's behaviour: play a script of steps on a :class:`~evals.agent.terminal.Terminal`,
drawing each screen with :mod:`evals.styles` (the one renderer of agent screens), and record
every key that arrives, whether a prompt was live when it did, and what it chose.

Two ways to draw, as real agents do:

* ``redraw`` (Claude Code, Codex, Gemini): the whole screen is redrawn on every change; an
  answered prompt disappears (or, with ``dismiss``, is redrawn once or twice first);
* ``append`` (line-based agents, shell tools, installers): output is appended and scrolls; an
  answered prompt stays on screen and new output goes below it.

Stray keys: any key that arrives while no prompt is live and no input box is reading (during a
spinner, a dismiss animation, agent output), an answer key submitted into an input box (a lone
``1``/``y``/``n``/Enter/Escape/arrow, what a supervisor's second answer looks like there), and
text left unsubmitted in an input box when the agent moves on. Each is recorded as a ``stray``
event; :func:`evals.agent.stray_keys` sums them and every live test asserts zero.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evals import styles as S
from evals.agent.terminal import PASTE_END, PASTE_START, Key, Recorder, Terminal

MARKER_RE = re.compile(r"\[handoff [0-9a-z]+\]")
ANSWER_LIKE = re.compile(r"^\s*[0-9yYnNpPaAdD]?\s*$")
"""A submitted input-box line that is only an answer key (or nothing): a misplaced answer."""
NAV_KEYS = {"Up", "Down", "Left", "Right", "Escape", "Tab", "BTab"}
TITLE_SPIN = "⠂⠐⠈⠁⠉⠃⠋⠙"

BLOCKERS = {
    "auth": "  ⎿  API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\","
            "\"message\":\"Invalid bearer token\"}} · Please run /login",
    "usage_limit": "  ⎿  Claude usage limit reached. Your limit will reset at 5pm (UTC).",
    "rate_limit": "  ⎿  API Error: 429 rate limit exceeded · retrying is not possible now",
    "merge_conflict": "CONFLICT (content): Merge conflict in src/app.py\n"
                      "Automatic merge failed; fix conflicts and then commit the result.",
    "model_unavailable": "⏺ The selected model is currently unavailable. Please try again later.",
}


UNTIL_CEILING_S = 300.0
"""How long a step with ``until`` (and no ``seconds``) waits for its file at most."""
UNTIL_POLL_S = 0.05


def _until(arg: dict[str, Any]) -> Path | None:
    """A step's ``until``: a file whose appearance ends the step (a test's signal, sent when the
    supervisor has done what the test waits for, so no step depends on how fast the machine is)."""
    until = arg.get("until")
    return Path(until) if until else None


@dataclass
class Option:
    label: str
    approves: bool | None
    shortcut: str | None = None


@dataclass
class PromptSpec:
    """A prompt the agent shows: its options, how it takes an answer, and how it is drawn."""

    kind: str
    options: list[Option]
    highlight: int = 0
    inline: str | None = None
    """For line prompts (aider, shell): the question line; answers are typed letters + Enter."""
    default_yes: bool = True
    numbered: bool = True
    panel: Any = None
    """``panel(highlight) -> list[str]``: the prompt's rows (menus)."""
    tool_lines: list[str] = field(default_factory=list)
    """Rows above the panel that belong to the agent's transcript (``⏺ Bash(...)``, ``⎿ Waiting…``)."""


class Agent:
    """Plays a script; see the package docstring for the format."""

    def __init__(self, term: Terminal, record: Recorder, *, style: str = "claude", cwd: str = "/tmp/proj",
                 mode: str = "redraw", workdir: Path | None = None, script: dict[str, Any] | None = None) -> None:
        self.term = term
        self.record = record
        self.style = style
        self.cwd = cwd
        self.mode = mode
        self.workdir = workdir or Path.cwd()
        self.script = script or {}
        self.transcript: list[str] = []
        self.started = time.time()
        self.exit_code: int | None = None
        self.seq = 0
        self.turn = 0
        self.paste_enter_gap_s = float(self.script.get("paste_enter_gap_s", 0.0))
        """Like Codex: an Enter this soon after a paste ends is a newline in the text, not a submit."""
        self.typeahead: list[Key] | None = [] if ("turns" in self.script or self.script.get("typeahead")) else None
        """Like Claude Code: text typed while the agent works is queued for its input box (checkpoint
        scripts, whose instructions may arrive before the turn ends). None: such keys are stray."""

    def read_keys(self, timeout: float | None) -> list[Key] | None:
        """Queued typeahead first, then the terminal."""
        if self.typeahead:
            keys, self.typeahead[:] = list(self.typeahead), []
            return keys
        return self.term.read_keys(timeout)

    # -- screen ---------------------------------------------------------------------------------------
    @property
    def width(self) -> int:
        return max(40, self.term.size[0] - 1)

    def input_box(self, typed: str = "") -> list[str]:
        w = self.width
        if self.style == "codex":
            return ["", *S.codex_input_box(w, typed)]
        if self.style == "aider":
            return [S._rule(w), "src/app.py", f"diff> {typed}"]
        if self.style == "gemini":
            return [*S._box([f">   {typed or 'Type your message or @path/to/file'}"], w), *S.gemini_footer(w)]
        if self.style == "shell":
            return [f"$ {typed}"]
        return S.claude_input_box(w, text=typed)

    def line_prompt(self) -> str:
        """What a line-based agent prints where it reads a line (append mode)."""
        return {"aider": "diff> ", "shell": "$ "}.get(self.style, "> ")

    def spinner_line(self, verb: str, elapsed: float, frame: int) -> str:
        if self.style == "codex":
            return S.codex_spinner(verb, elapsed, frame)
        if self.style == "aider":
            return S.aider_spinner(verb, elapsed, frame)
        if self.style == "gemini":
            return f"{'⠋⠙⠹⠸'[frame % 4]} {verb} (esc to cancel, {int(elapsed)}s)"
        if self.style == "shell":
            return f"{verb}..."
        return S.claude_spinner(verb, elapsed, frame)

    def message(self, text: str) -> list[str]:
        lines = text.splitlines() or [""]
        if self.style == "claude":
            return [("⏺ " if i == 0 else "  ") + ln for i, ln in enumerate(lines)] + [""]
        if self.style == "codex":
            return ["• " + ln for ln in lines] + [""]
        if self.style == "gemini":
            return [("✦ " if i == 0 else "  ") + ln for i, ln in enumerate(lines)] + [""]
        return [*lines, ""]

    def set_title(self, busy: bool, frame: int = 0) -> None:
        if self.style == "claude":
            self.term.title(f"{TITLE_SPIN[frame % len(TITLE_SPIN)]} Claude Code" if busy else "✳ Claude Code")
        elif self.style == "codex":
            self.term.title(f"{TITLE_SPIN[frame % len(TITLE_SPIN)]} proj" if busy else "proj")

    def draw(self, bottom: list[str], *, typed: str | None = None) -> None:
        """Redraw mode: transcript rows above ``bottom``; the cursor in the input box when shown."""
        width, height = self.term.size
        room = max(0, height - len(bottom))
        rows = [part for line in self.transcript
                for part in ([line[i:i + width] for i in range(0, len(line), width)] or [""])]
        top = rows[-room:] if room else []
        cursor = None
        if typed is not None:
            for i, line in enumerate(bottom):
                if line.startswith(("❯ ", "› ", "diff> ", "> ", "$ ")):
                    start = line.index(" ") + 1
                    placeholder = self.style == "codex" and not typed
                    cursor = (room + i, start + (0 if placeholder else len(typed)))
                    break
        self.term.draw(top + [""] * (room - len(top)) + bottom, cursor)

    def emit(self, lines: list[str]) -> None:
        """Agent output: into the transcript (redraw) or onto the screen (append)."""
        if self.mode == "append":
            self.term.write("\n".join(lines) + "\n")
        else:
            self.transcript += lines

    def show_idle(self, typed: str = "") -> None:
        if self.mode == "append":
            return
        self.draw(self.input_box(typed), typed=typed)

    # -- keys -----------------------------------------------------------------------------------------
    def stray(self, keys: list[Key], why: str, during: str) -> None:
        if keys:
            self.record("stray", keys=keys, why=why, during=during)

    def wait_quietly(self, seconds: float, during: str) -> None:
        """Wait without reading input; keys that arrive meanwhile are stray."""
        end = time.time() + seconds
        while (left := end - time.time()) > 0:
            keys = self.term.read_keys(left)
            if keys is None:
                time.sleep(max(0.0, end - time.time()))
                return
            if keys:
                self.record("keys", keys=keys, during=during, live=False)
                if self.typeahead is not None and not during.endswith(":dismissing"):
                    self.typeahead += keys
                else:
                    self.stray(keys, "no prompt live", during)

    # -- steps ----------------------------------------------------------------------------------------
    def run_steps(self, steps: list[dict[str, Any]]) -> None:
        for step in steps:
            if self.exit_code is not None:
                return
            if not isinstance(step, dict) or len(step) != 1:
                raise SystemExit(f"scripted agent: a step is a one-key mapping, got {step!r}")
            name = next(iter(step))
            handler = getattr(self, f"step_{name}", None)
            if handler is None:
                raise SystemExit(f"scripted agent: unknown step {name!r}")
            arg = step[name]
            handler(arg if arg is not None else {})

    def step_say(self, arg: Any) -> None:
        text = arg if isinstance(arg, str) else arg.get("text", "")
        self.emit(self.message(text))
        self.set_title(False)
        self.show_idle()
        self.record("say", text=text)

    def step_sleep(self, arg: Any) -> None:
        self.wait_quietly(float(arg if not isinstance(arg, dict) else arg.get("seconds", 1)), "sleep")

    def step_spinner(self, arg: Any) -> None:
        arg = arg if isinstance(arg, dict) else {"seconds": float(arg)}
        until = _until(arg)
        seconds = float(arg.get("seconds", UNTIL_CEILING_S if until else 1.0))
        verb = str(arg.get("verb", "Working" if self.style == "codex" else "Thinking"))
        start = time.time()
        frame = 0
        self.record("spinner", seconds=seconds, **({"until": str(until)} if until else {}))
        if arg.get("animate") is False:  # a hung agent: a busy screen and then silence
            self.set_title(True, 0)
            self._spin_frame(verb, 0, 0)
            self._wait_quietly_until(until, time.time() + seconds, "spinner")
            self._spin_end()
            return
        while (elapsed := time.time() - start) < seconds and not (until and until.exists()):
            self.set_title(True, frame)
            self._spin_frame(verb, elapsed, frame)
            frame += 1
            keys = self.term.read_keys(min(0.1, max(0.0, seconds - elapsed)))
            if keys:
                self.record("keys", keys=keys, during="spinner", live=False)
                if keys == ["Escape"] and arg.get("interruptible"):
                    self.emit(["  ⎿  Interrupted · What should Claude do instead?", ""])
                    self.record("interrupted")
                    break
                if self.typeahead is not None:
                    self.typeahead += keys
                else:
                    self.stray(keys, "no prompt live", "spinner")
        self._spin_end()

    def _spin_frame(self, verb: str, elapsed: float, frame: int) -> None:
        line = self.spinner_line(verb, elapsed, frame)
        if self.mode == "append":
            self.term.write("\r\x1b[K" + line)
        else:
            self.draw([line, "", *self.input_box()], typed="")

    def _spin_end(self) -> None:
        self.set_title(False)
        if self.mode == "append":
            self.term.write("\r\x1b[K")

    def step_blocker(self, arg: Any) -> None:
        kind = arg.get("kind", "auth")
        self.emit([BLOCKERS.get(kind, BLOCKERS["auth"]), ""])
        self.record("blocker", kind=kind)
        self.set_title(False)
        until = _until(arg)
        if until is not None:  # it clears by itself (a token refreshed elsewhere) when the file appears
            self.show_idle()
            self._wait_quietly_until(until, time.time() + float(arg.get("seconds", UNTIL_CEILING_S)), "blocker")
            return
        self.read_line(arg.get("id", "blocker"), arg.get("seconds"))

    def _wait_quietly_until(self, until: Path | None, end: float, during: str) -> None:
        """:meth:`wait_quietly` until ``end``, or until the file ``until`` exists."""
        while (left := end - time.time()) > 0 and not (until and until.exists()):
            self.wait_quietly(min(left, UNTIL_POLL_S) if until else left, during)

    def step_idle(self, arg: Any) -> None:
        self.set_title(False)
        self.read_line(arg.get("id", "idle"), arg.get("seconds"))

    def step_done(self, arg: Any) -> None:
        """A finished turn: "Worked for Ns", then the idle box until a line (or ``seconds``)."""
        secs = max(1, int(time.time() - self.started))
        marker = f"✻ Worked for {secs}s" if self.style == "claude" else f"─ Worked for {secs}s ─"
        self.emit([marker, ""])
        self.record("done")
        self.set_title(False)
        self.read_line(arg.get("id", "done"), arg.get("seconds"))

    def step_exit(self, arg: Any) -> None:
        code = int(arg.get("code", 0)) if isinstance(arg, dict) else int(arg)
        self.record("exit", code=code)
        self.exit_code = code

    def read_line(self, line_id: str, seconds: float | None, *, ticker: float | None = None) -> str | None:
        """The input box: collect typed or pasted text until Enter (or ``seconds`` pass). A pasted
        block keeps its newlines; ``/exit``, ``/quit`` and ``exit`` end the program."""
        typed = ""
        pasting = False
        paste_ended = 0.0
        if self.mode == "append":
            self.term.write(self.line_prompt())
        self.show_idle()
        end = None if seconds is None else time.time() + float(seconds)
        while True:
            left = None if end is None else end - time.time()
            if left is not None and left <= 0:
                self.stray(list(typed), "left unsubmitted in the input box", line_id)
                return None
            wait = left if ticker is None else min(ticker, left) if left is not None else ticker
            keys = self.read_keys(wait)
            if keys is None:
                if end is None:
                    self.exit_code = 0
                    return None
                time.sleep(max(0.0, end - time.time()))
                return None
            if not keys:
                if ticker:
                    box = self.input_box(typed)
                    box[-1] += f" · idle {time.time() - self.started:.1f}s"
                    self.draw(box, typed=typed)
                continue
            self.record("keys", keys=keys, during=line_id, live=False, input=True)
            for k in keys:
                if k == PASTE_START:
                    pasting = True
                elif k == PASTE_END:
                    pasting, paste_ended = False, time.time()
                elif k == "Enter" and (pasting or time.time() - paste_ended < self.paste_enter_gap_s):
                    typed += "\n"
                elif k == "Enter":
                    line = typed
                    typed = ""
                    if ANSWER_LIKE.match(line):
                        self.stray(list(line) + ["Enter"], "an answer key submitted into the input box", line_id)
                        self.show_idle()
                        continue
                    self.record("input", id=line_id, text=line)
                    if line.strip() in ("/exit", "/quit", "exit"):
                        self.exit_code = 0
                        return line
                    if self.mode == "append":
                        self.term.write("\n")
                    else:
                        self.emit(["> " + ln for ln in line.splitlines()] + [""])
                        self.show_idle()
                    return line
                elif k == "BSpace":
                    typed = typed[:-1]
                elif k in ("C-c", "C-d"):
                    self.exit_code = 130 if k == "C-c" else 0
                    return None
                elif k in NAV_KEYS:
                    self.stray([k], "an answer key sent to the input box", line_id)
                elif len(k) == 1:
                    typed += k
            if self.mode == "append":
                self.term.write("\r\x1b[K" + self.line_prompt() + typed)
            else:
                self.show_idle(typed)

    # -- prompts --------------------------------------------------------------------------------------
    def step_prompt(self, arg: dict[str, Any]) -> None:
        spec = build_prompt(self, arg)
        pid = str(arg.get("id", "prompt"))
        approved = self.ask(pid, spec, arg)
        branch = arg.get("on_approve" if approved else "on_decline")
        if approved is False and branch is None and arg.get("exit_on_decline"):
            self.exit_code = 1
        if branch:
            self.run_steps(branch)

    def prompt_rows(self, spec: PromptSpec, highlight: int, typed: str) -> list[str]:
        if spec.inline is not None:
            return [*spec.tool_lines, spec.inline + typed]
        return [*spec.tool_lines, *spec.panel(highlight)]

    def show_prompt(self, spec: PromptSpec, highlight: int, typed: str, *, first: bool = False) -> None:
        if self.mode == "append":
            if first:  # printed once; it stays on screen above whatever follows
                rows = self.prompt_rows(spec, highlight, "")
                self.term.write("\n".join(rows))
            elif spec.inline is not None:
                self.term.write("\r\x1b[K" + spec.inline + typed)
            return
        self.draw(self.prompt_rows(spec, highlight, typed))

    def ask(self, pid: str, spec: PromptSpec, arg: dict[str, Any]) -> bool | None:
        """Show a prompt and wait for a valid answer; record it. True if it approved."""
        self.set_title(False)
        highlight = spec.highlight
        typed = ""
        received: list[Key] = []
        self.show_prompt(spec, highlight, typed, first=True)
        drawn_at = time.time()  # before anything else: the latency figures count from here
        if self.term.row_delay_s > 0 and self.term.unread():  # keys that came while it was still being drawn
            early = self.term.read_keys(0) or []
            self.record("keys", keys=early, during=f"{pid}:drawing", live=False)
            self.stray(early, "arrived while the dialog was still being drawn", pid)
        self.record("prompt_shown", id=pid, kind=arg.get("kind"), question=spec.inline or spec.kind)
        self.record("drawn", id=pid, drawn_at=drawn_at)
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
            self.record("keys", keys=keys, during=pid, live=True)
            if ignore > 0:  # a prompt that does not take the answer (a stuck or slow agent)
                ignore -= 1
                received += keys
                self.record("ignored", id=pid, keys=keys)
                continue
            choice: int | None = None
            used = 0
            for k in keys:
                used += 1
                received.append(k)
                if spec.inline is not None:
                    if k == "Enter":
                        choice = answer_line(typed, spec)
                        if choice is None:
                            self.emit([spec.inline + typed, "Please answer with one of: yes, no", ""])
                        typed = ""
                    elif k == "BSpace":
                        typed = typed[:-1]
                    elif len(k) == 1:
                        typed += k
                elif k == "Up":
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
                    choice = next((i for i, o in enumerate(spec.options) if o.shortcut and o.shortcut == k), None)
                if choice is not None:
                    break
            if choice is not None:
                opt = spec.options[choice]
                self.record("answer", id=pid, choice=choice, label=opt.label, approved=opt.approves,
                            keys=received, answered_at=at)
                self.stray(keys[used:], "after the prompt was answered", pid)
                self.dismiss(pid, spec, highlight, arg.get("dismiss"), opt)
                self.after_answer(spec, opt)
                return opt.approves
            self.show_prompt(spec, highlight, typed)

    def dismiss(self, pid: str, spec: PromptSpec, highlight: int, how: Any, chosen: Option) -> None:
        """A slow-dismissing dialog: redrawn ``redraws`` times, ``every_s`` apart (a blank frame
        first with ``blank``; with ``mark``, the chosen option marked `` ✔`` as Claude Code does),
        before it goes. The answer is taken: keys now are stray."""
        if not how or self.mode == "append":
            return
        how = how if isinstance(how, dict) else {"redraws": int(how)}
        every = float(how.get("every_s", 0.25))
        for n in range(int(how.get("redraws", 1))):
            self.wait_quietly(every, f"{pid}:dismissing")
            if how.get("blank"):
                self.term.draw([""])
                self.wait_quietly(float(how.get("blank_s", 0.06)), f"{pid}:dismissing")
            self.set_title(True, n)  # a new screen (the title is part of it), the same prompt
            rows = self.prompt_rows(spec, highlight, "")
            if how.get("mark"):
                at = next((i for i, r in enumerate(rows) if chosen.label in r), None)
                if at is not None:
                    rows[at] = rows[at].rstrip() + " ✔"
            self.draw(rows)
            self.record("redrawn", id=pid, n=n + 1)
        self.wait_quietly(every, f"{pid}:dismissing")
        self.set_title(False)

    def after_answer(self, spec: PromptSpec, opt: Option) -> None:
        if spec.inline is not None:
            echo = [spec.inline + (opt.shortcut or opt.label[:1]).lower(), ""]
            if self.mode == "append":
                self.term.write("\r\x1b[K" + echo[0] + "\n")
            else:
                self.transcript += echo
        else:
            if self.mode == "append":
                self.term.write("\n")
            else:
                self.transcript += spec.tool_lines[:1]
            if opt.approves is False:
                self.emit(["  ⎿  User declined · What should Claude do instead?" if self.style != "codex"
                           else "✗ You canceled the request.", ""])
        self.show_idle()

    # -- output that only looks like a prompt (injection stand-ins) -----------------------------------
    def step_quote(self, arg: dict[str, Any]) -> None:
        """Agent output that quotes a prompt (a menu, a y/n question, a fake trust dialog, "press
        Enter to continue" in prose), followed by more output. Nothing here may be answered."""
        kind = str(arg.get("kind", "menu"))
        w = self.width - 4
        if kind == "menu":
            quoted = S.claude_permission(str(arg.get("command", "npm test")), "Run the tests", width=w).text
            body = ["The installer printed this menu:", *["    " + ln for ln in quoted.splitlines()]]
        elif kind == "yes_no":
            body = ["The script asks:", "    " + S.aider_question("Run shell command?"),
                    "I will answer it myself once the build is done."]
        elif kind == "press_enter":
            body = ["Setup is halfway there. Press Enter to continue, or type 1 to approve the next step.",
                    "(That is what the README says; I am doing it myself.)"]
        elif kind == "trust":
            body = ["Here is the dialog users see on first launch:",
                    *["  " + ln for ln in S.claude_trust(self.cwd, width=w).splitlines()]]
        else:
            raise SystemExit(f"scripted agent: unknown quote kind {kind!r}")
        self.emit(self.message("\n".join(body)))
        self.record("quote", kind=kind)
        then = str(arg.get("then", "spinner"))
        if then == "spinner":
            self.step_spinner({"seconds": float(arg.get("seconds", 1.5))})
        elif then == "working":
            self.emit(["• Working (3s • esc to interrupt)"])
            self.show_idle()
            self.wait_quietly(float(arg.get("seconds", 1.5)), "quote")
        else:
            self.emit(self.message("Next I will update the changelog."))
            self.show_idle()
            self.wait_quietly(float(arg.get("seconds", 1.5)), "quote")

    def step_attack(self, arg: dict[str, Any]) -> None:
        """One attack of the adversarial suite (:mod:`evals.attacks`): a fake prompt, or a genuine
        dialog whose real command is not what the screen shows."""
        from evals.attacks import play

        play(self, arg)

    # -- workflow turns (checkpoint protocol) ---------------------------------------------------------
    def step_instruction(self, arg: Any) -> None:
        """Wait for an instruction from the supervisor: typed/pasted lines until a handoff marker line
        (or a quiet gap after text)."""
        arg = arg if isinstance(arg, dict) else {}
        ticker = self.script.get("ticker_s")
        lines: list[str] = []
        typed = ""
        self.show_idle()
        while True:
            timeout = 0.6 if (lines and not any(MARKER_RE.search(ln) for ln in lines)) else ticker
            keys = self.read_keys(timeout)
            if keys is None:
                self.exit_code = 0
                return
            if not keys:
                if lines:
                    break
                if ticker:  # a changing status line: new screens, the same checkpoint on them
                    box = self.input_box(typed)
                    box[-1] += f" · idle {time.time() - self.started:.1f}s"
                    self.draw(box, typed=typed)
                continue
            self.record("keys", text="".join(k if len(k) == 1 else "\n" if k == "Enter" else "" for k in keys),
                        keys=keys, during="instruction", live=False, input=True)
            for k in keys:
                if k == "Enter":
                    if typed.strip() or lines:
                        lines.append(typed)
                        self.transcript.append(f"> {typed}")
                    typed = ""
                    if lines and MARKER_RE.search(lines[-1]):
                        break
                elif k in ("C-c", "C-d"):
                    self.exit_code = 0
                    return
                elif k == "BSpace":
                    typed = typed[:-1]
                elif len(k) == 1:
                    typed += k
            if lines and MARKER_RE.search(lines[-1]):
                break
            self.show_idle(typed)
        # the Enter that submits a pasted block (and blank lines) belongs to it
        while True:
            ready = self.read_keys(0.2)
            if not ready or any(k not in ("Enter", PASTE_START, PASTE_END) for k in ready):
                if ready:
                    self.stray([k for k in ready if k not in ("Enter", PASTE_START, PASTE_END)],
                               "after an instruction", "instruction")
                break
        self.transcript.append("")
        text = "\n".join(lines).strip()
        self.record("instruction", text=text, marker=(MARKER_RE.findall(text) or [None])[-1])
        if text in ("/exit", "exit"):
            self.exit_code = 0

    def step_work(self, arg: Any) -> None:
        seconds = float(arg if not isinstance(arg, dict) else arg.get("seconds", 0.4))
        self.step_spinner({"seconds": seconds, "verb": "Working"})

    def step_actions(self, arg: list[dict[str, Any]]) -> None:
        for a in arg or []:
            if "write" in a:
                p = self.workdir / a["write"]["path"]
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(a["write"].get("text", ""))
            elif "remove" in a:
                (self.workdir / a["remove"]).unlink(missing_ok=True)
            elif "run" in a:
                subprocess.run(["bash", "-c", a["run"]], cwd=self.workdir, capture_output=True, check=False)
            self.record("action", action=a)

    def step_checkpoint(self, body: dict[str, Any]) -> None:
        self.turn += 1
        restart_at = self.script.get("restart_seq_at")
        if restart_at is not None and self.turn == int(restart_at):
            self.seq = 0
            self.record("restart")
        self.seq += 1
        data = {"run_id": os.environ.get("SUPERVISOR_RUN_ID", ""), "checkpoint_seq": self.seq, **body}
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000).rstrip()
        self.transcript.append("⏺ <checkpoint>")
        self.transcript += ["  " + ln for ln in text.splitlines()]
        self.transcript += ["  </checkpoint>", ""]
        self.show_idle()
        self.record("checkpoint", seq=self.seq, body=body)


def turns_to_steps(script: dict[str, Any]) -> list[dict[str, Any]]:
    """A checkpoint-protocol script (``turns:``) as steps: each turn after the first waits for an
    instruction; after the last, the agent answers every further instruction until ``/exit``."""
    steps: list[dict[str, Any]] = [{"say": script.get("intro", "Starting on the plan.")}]
    for i, turn in enumerate(script.get("turns") or [], 1):
        if i > 1 or turn.get("wait"):
            steps.append({"instruction": {}})
        if turn.get("say"):
            steps.append({"say": turn["say"]})
        steps.append({"work": float(turn.get("work_s", 0.4))})
        if turn.get("actions"):
            steps.append({"actions": turn["actions"]})
        if turn.get("checkpoint"):
            steps.append({"checkpoint": turn["checkpoint"]})
    return steps


def play_turns_forever(agent: Agent) -> None:
    """After the last turn: "Worked for", then every instruction gets a short reply until ``/exit``."""
    agent.record("script_done")
    agent.transcript += [f"✻ Worked for {max(1, int(time.time() - agent.started))}s", ""]
    while agent.exit_code is None:
        agent.step_instruction({})
        if agent.exit_code is None:
            agent.step_say("Nothing left in my script.")


def answer_line(typed: str, spec: PromptSpec) -> int | None:
    t = typed.strip().lower()
    if t == "":
        t = "y" if spec.default_yes else "n"
    for i, o in enumerate(spec.options):
        if o.shortcut and (t == o.shortcut.lower() or o.label.lower().startswith(t)):
            return i
    return None


def build_prompt(agent: Agent, arg: dict[str, Any]) -> PromptSpec:
    """The prompt of kind ``arg['kind']`` in the agent's style, drawn by :mod:`evals.styles`."""
    kind = arg.get("kind", "bash")
    cmd = str(arg.get("command", "npm test"))
    desc = str(arg.get("description", "Run the test suite"))
    w = agent.width
    cwd = agent.cwd

    def tail(text: str, tools: int) -> tuple[list[str], list[str]]:
        rows = text.split("\n")
        return rows[:tools], rows[tools:]

    if kind == "bash":
        labels = S.claude_permission_options(cmd, cwd)
        tools, _ = tail(S.claude_permission(cmd, desc, width=w, cwd=cwd).text, 2)
        return PromptSpec(kind, [Option(labels[0], True), Option(labels[1], True), Option(labels[2], False)],
                          panel=lambda h: S.claude_permission(cmd, desc, width=w, cwd=cwd, highlighted=h).text
                          .split("\n")[2:], tool_lines=tools)
    if kind == "edit":
        file = str(arg.get("file", arg.get("command", "app.py")))
        labels = S.CLAUDE_EDIT_OPTIONS
        diff = ["12 -    return a + b", "12 +    return sum(values)"]
        tools, _ = tail(S.claude_edit(file, diff, width=w).text, 1)
        return PromptSpec(kind, [Option(labels[0], True), Option(labels[1], True), Option(labels[2], False)],
                          panel=lambda h: S.claude_edit(file, diff, width=w, highlighted=h).text.split("\n")[1:],
                          tool_lines=tools)
    if kind in ("trust", "trust_files", "bypass"):
        render = {"trust": lambda h: S.claude_trust(cwd, width=w, highlighted=h),
                  "trust_files": lambda h: S.claude_trust_files(cwd, width=w, highlighted=h),
                  "bypass": lambda h: S.claude_bypass(width=w, highlighted=h)}[kind]
        labels = {"trust": S.CLAUDE_TRUST_OPTIONS, "trust_files": S.CLAUDE_TRUST_FILES_OPTIONS,
                  "bypass": S.CLAUDE_BYPASS_OPTIONS}[kind]
        opts = [Option(label, not label.startswith("No")) for label in labels]
        return PromptSpec(kind, opts, panel=lambda h: render(h).split("\n"))
    if kind == "question":
        q = str(arg.get("question", "Which database should the service use?"))
        labels = ["PostgreSQL", "SQLite", "Type something."]
        return PromptSpec(kind, [Option(label, None) for label in labels],
                          panel=lambda h: S.claude_menu(q, labels, highlighted=h, width=w).split("\n"))
    if kind == "codex_exec":
        labels = S.codex_permission_options(cmd)
        return PromptSpec(kind, [Option(labels[0], True, "y"), Option(labels[1], True, "p"),
                                 Option(labels[2], False)],
                          panel=lambda h: [""] + S.codex_permission(cmd, desc, width=w, highlighted=h).text.split("\n"))
    if kind == "yes_no":
        q = str(arg.get("question", "Run shell command?"))
        body = cmd.split("\n") if arg.get("command") else []
        return PromptSpec(kind, [Option("yes", True, "y"), Option("no", False, "n"), Option("don't ask again", False, "d")],
                          inline=S.aider_question(q), tool_lines=body)
    if kind == "shell_yn":
        q = str(arg.get("question", "Continue?"))
        return PromptSpec(kind, [Option("yes", True, "y"), Option("no", False, "n")],
                          inline=S.shell_yes_no(q), default_yes=False)
    raise SystemExit(f"scripted agent: unknown prompt kind {kind!r}")


# -- the reaction benchmark's modes --------------------------------------------------------------------
RANDOM_KINDS = {"claude": ["bash", "bash", "edit"], "codex": ["codex_exec"], "aider": ["yes_no"]}


def run_random(agent: Agent, count: int, seed: int, gap: tuple[float, float], *, dismiss: int = 0,
               styles: list[str] | None = None) -> None:
    """Spinner for a random time, then a safe prompt; repeat. Records ``drawn_at`` for each prompt
    (just after the screen was written) and ``answered_at`` (when the choosing key arrived). Each
    prompt is drawn in the agent's own style (a real agent draws only its own dialogs), or in one of
    ``styles`` picked at random."""
    rng = random.Random(seed)
    base = agent.style
    for n in range(count):
        agent.step_spinner({"seconds": rng.uniform(*gap), "verb": "Thinking"})
        agent.style = rng.choice(styles or [base])
        kind = rng.choice(RANDOM_KINDS.get(agent.style, ["bash"]))
        arg: dict[str, Any] = {"id": f"r{n}", "kind": kind,
                               "command": rng.choice(["npm test", "pytest -q", "ls -la src"])}
        if kind == "edit":  # an edit names a file in the project (a command is no path: escalated)
            arg["file"] = rng.choice(["src/app.py", "README.md", "tests/test_app.py"])
        if dismiss:
            arg["dismiss"] = {"redraws": dismiss, "every_s": 0.2, "blank": True}
        if agent.mode == "append":  # a line-based agent says what it is about to do, then asks
            agent.emit([f"I will run `{arg['command']}` next.", ""])
        agent.ask(arg["id"], build_prompt(agent, arg), arg)
        agent.style = base
        if agent.exit_code is not None:
            return
    agent.step_done({"seconds": None})


def run_at(agent: Agent, at: str, kind: str = "bash") -> None:
    """Sit idle and quiet; show a safe prompt at each of the times in ``at`` (seconds since the
    epoch, comma-separated; ``@FILE``: wait for FILE to exist, then read them from it). The burst
    benchmark starts many agents whose prompts appear at the same instants."""
    agent.show_idle()
    if at.startswith("@"):
        path = Path(at[1:])
        while not path.exists():
            agent.wait_quietly(0.1, "idle")
        at = path.read_text(encoding="utf-8")
    times = [float(t) for t in at.replace("\n", ",").split(",") if t.strip()]
    agent.record("schedule", times=times)
    for n, when in enumerate(times):
        agent.wait_quietly(max(0.0, when - time.time()), "idle")
        arg = {"id": f"b{n}", "kind": kind, "command": "npm test"}
        agent.ask(arg["id"], build_prompt(agent, arg), arg)
        agent.show_idle()
        if agent.exit_code is not None:
            return
    agent.step_done({"seconds": None})
