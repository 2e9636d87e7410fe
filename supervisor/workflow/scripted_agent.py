"""A scripted agent that follows the checkpoint protocol, for workflow tests and the demo.

    python -m supervisor.workflow.scripted_agent SCRIPT.yaml [--record FILE] [--cwd DIR]

It draws a Claude-style screen (transcript, spinner while working, idle input box), and plays
*turns*: each turn (after the first) waits for an instruction from the supervisor, shows it,
works for a moment, performs file actions in its working directory, and prints a
``<checkpoint>`` block. A multi-line instruction ends at its ``[handoff …]`` marker line (or
after a short quiet gap without one). Everything received goes to ``--record`` (JSONL), so a
test can assert exactly what arrived and that nothing arrived twice.

Script (YAML)::

    turns:
      - work_s: 0.5
        actions:
          - write: {path: hello.py, text: "print('hi')\\n"}
          - remove: stale.txt
          - run: "git add -A && git commit -qm step1"
        checkpoint: {status: step_done, current_node: write, summary: wrote hello.py}
      - checkpoint: {status: workflow_done, current_node: test}
    restart_seq_at: 3      # optional: simulate an agent restart (seq back to 1) from turn 3 on
    ticker_s: 0.1          # optional: while idle, redraw a changing status line this often
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import termios
import time
import tty
from pathlib import Path
from typing import Any

import yaml

MARKER_RE = re.compile(r"\[handoff [0-9a-z]+\]")
SPIN = "✢✳✶✻✽"


class Screen:
    """A tiny full-screen renderer: transcript on top, a bottom area, the cursor in the box."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    @staticmethod
    def size() -> tuple[int, int]:
        try:
            sz = os.get_terminal_size(sys.stdout.fileno())
            return sz.columns, sz.lines
        except OSError:
            return 100, 40

    def draw(self, bottom: list[str], typed: str = "", busy: bool = False) -> None:
        width, height = self.size()
        room = max(0, height - len(bottom))
        wrapped: list[str] = []
        for line in self.lines:
            while len(line) > width - 1:
                wrapped.append(line[: width - 1])
                line = "  " + line[width - 1:]
            wrapped.append(line)
        top = wrapped[-room:] if room else []
        rows = top + [""] * (room - len(top)) + bottom
        title = f"\x1b]0;{'⠐' if busy else '✳'} Claude Code\x07"
        out = title + "\x1b[H\x1b[2J" + "\r\n".join(r[: width - 1] for r in rows)
        box_row = next((i for i, r in enumerate(rows) if r.startswith("❯ ")), None)
        if box_row is not None:
            out += f"\x1b[{box_row + 1};{3 + len(typed)}H"
        sys.stdout.write(out)
        sys.stdout.flush()


def rule() -> str:
    return "─" * max(20, Screen.size()[0] - 1)


def idle_box(typed: str = "") -> list[str]:
    return [rule(), f"❯ {typed}", rule(), "  ? for shortcuts"]


class Agent:
    def __init__(self, script: dict[str, Any], record: Path | None, cwd: Path) -> None:
        self.script = script
        self.record_path = record
        self.cwd = cwd
        self.screen = Screen()
        self.seq = 0
        self.started = time.time()

    def record(self, event: str, **data: Any) -> None:
        if self.record_path is None:
            return
        with open(self.record_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"event": event, "at": time.time(), **data}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def say(self, text: str) -> None:
        for i, line in enumerate(text.splitlines() or [""]):
            self.screen.lines.append(("⏺ " if i == 0 else "  ") + line)
        self.screen.lines.append("")

    def work(self, seconds: float, verb: str = "Working") -> None:
        end = time.time() + seconds
        frame = 0
        while time.time() < end:
            elapsed = int(time.time() - self.started)
            self.screen.draw([f"{SPIN[frame % len(SPIN)]} {verb}… (esc to interrupt · {elapsed}s)", ""]
                             + idle_box(), busy=True)
            frame += 1
            time.sleep(0.15)

    def act(self, actions: list[dict[str, Any]]) -> None:
        for a in actions or []:
            if "write" in a:
                p = self.cwd / a["write"]["path"]
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(a["write"].get("text", ""))
            elif "remove" in a:
                (self.cwd / a["remove"]).unlink(missing_ok=True)
            elif "run" in a:
                subprocess.run(["bash", "-c", a["run"]], cwd=self.cwd, capture_output=True, check=False)
            self.record("action", action=a)

    def checkpoint(self, body: dict[str, Any], turn: int) -> None:
        restart_at = self.script.get("restart_seq_at")
        if restart_at is not None and turn == int(restart_at):
            self.seq = 0
            self.record("restart")
        self.seq += 1
        data = {"run_id": os.environ.get("SUPERVISOR_RUN_ID", ""), "checkpoint_seq": self.seq, **body}
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000).rstrip()
        self.screen.lines.append("⏺ <checkpoint>")
        self.screen.lines += ["  " + ln for ln in text.splitlines()]
        self.screen.lines += ["  </checkpoint>", ""]
        self.record("checkpoint", seq=self.seq, body=body)

    def read_instruction(self) -> str | None:
        """Collect typed/pasted lines until a handoff marker line (or a quiet gap after text)."""
        fd = sys.stdin.fileno()
        lines: list[str] = []
        typed = ""
        buf = b""
        self.screen.draw(idle_box())
        ticker = self.script.get("ticker_s")
        while True:
            timeout = 0.6 if (lines and not any(MARKER_RE.search(ln) for ln in lines)) else ticker
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                if lines:
                    break
                if ticker:  # redraw with a changing status line: new screens, same checkpoint on them
                    box = idle_box(typed)
                    box[-1] += f" · idle {time.time() - self.started:.1f}s"
                    self.screen.draw(box, typed)
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            buf += chunk
            try:
                text = buf.decode("utf-8")
                buf = b""
            except UnicodeDecodeError:
                continue
            self.record("keys", text=text)
            for ch in text:
                if ch in "\r\n":
                    if typed.strip() or lines:
                        lines.append(typed)
                        self.screen.lines.append(f"> {typed}")
                    typed = ""
                    if lines and MARKER_RE.search(lines[-1]):
                        break
                elif ch in "\x03\x04":
                    return None
                elif ch == "\x7f":
                    typed = typed[:-1]
                elif ch >= " ":
                    typed += ch
            if lines and MARKER_RE.search(lines[-1]):
                break
            self.screen.draw(idle_box(typed))
        # swallow the Enter that submits a pasted block (and any blank lines)
        while select.select([fd], [], [], 0.2)[0]:
            extra = os.read(fd, 4096)
            if extra.strip():
                break
        self.screen.lines.append("")
        instruction = "\n".join(lines).strip()
        self.record("instruction", text=instruction, marker=(MARKER_RE.findall(instruction) or [None])[-1])
        return instruction

    def run(self) -> int:
        turns = self.script.get("turns") or []
        self.record("start", pid=os.getpid())
        self.say(self.script.get("intro", "Starting on the plan."))
        for i, turn in enumerate(turns, 1):
            if (i > 1 or turn.get("wait")) and self.read_instruction() is None:
                return 0
            if turn.get("say"):
                self.say(turn["say"])
            self.work(float(turn.get("work_s", 0.4)))
            self.act(turn.get("actions") or [])
            if turn.get("checkpoint"):
                self.checkpoint(turn["checkpoint"], i)
        self.record("script_done")
        secs = max(1, int(time.time() - self.started))
        self.screen.lines += [f"✻ Worked for {secs}s", ""]
        while True:
            instruction = self.read_instruction()
            if instruction is None or instruction.strip() in ("/exit", "exit"):
                return 0
            self.say("Nothing left in my script.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m supervisor.workflow.scripted_agent")
    ap.add_argument("script")
    ap.add_argument("--record", default=None)
    ap.add_argument("--cwd", default=".")
    args = ap.parse_args(argv)
    script = yaml.safe_load(Path(args.script).read_text()) or {}
    agent = Agent(script, Path(args.record) if args.record else None, Path(args.cwd).resolve())
    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd) if os.isatty(fd) else None
    try:
        if old is not None:
            tty.setraw(fd)
        return agent.run()
    except KeyboardInterrupt:
        return 130
    finally:
        if old is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)


if __name__ == "__main__":
    sys.exit(main())
