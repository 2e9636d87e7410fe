"""The one scripted agent: a stand-in for a coding agent that tests, the demo, the benchmarks and
episode suites run in a real tmux pane (test and workbench support, never part of the runtime).

    python -m evals.agent SCRIPT.yaml [--record FILE] [--cwd DIR]
    python -m evals.agent --random 20 --seed 1 [--dismiss 2] [--mode append] --record FILE
    python -m evals.agent --at T1,T2,... --record FILE         # prompts at given instants (burst bench)

It draws each agent's screens with :mod:`evals.styles` (Claude Code's panels, Codex approvals,
aider's ``(Y)es/(N)o`` questions, trust dialogs, spinners, blockers, input boxes), waits for real
keystrokes, and records everything it receives in ``--record`` (JSONL), so a test can assert
what really arrived: the answers, the typed lines, and the **stray keys** (keys that arrived
while no prompt was live; see :mod:`evals.agent.player`).

Script format (YAML)::

    style: claude            # claude | codex | aider: idle box, spinner, messages, title
    mode: redraw             # redraw (a TUI) | append (line-based output; answered prompts stay)
    cwd: /home/dev/shop      # shown in trust dialogs and permission options
    paste_enter_gap_s: 0.2   # like Codex: Enter this soon after a paste is a newline
    steps:
      - say: "I'll run the tests first."
      - spinner: {seconds: 1.5, verb: Reading files}
      - prompt: {id: p1, kind: bash, command: "npm test", description: "Run the test suite",
                 on_decline: [{say: "Skipped."}]}
      - prompt: {id: p2, kind: trust, dismiss: {redraws: 2, every_s: 0.25, blank: true}}  # slow to go
      - prompt: {id: p3, kind: bash, command: "make", ignore: 2}   # the first 2 answers do not take
      - quote: {kind: menu, then: spinner}      # a prompt quoted in agent output: never to be answered
      - blocker: {kind: auth, seconds: 2}
      - spinner: {until: /tmp/t/worked}           # works until the file appears (``seconds``: a ceiling)
      - blocker: {kind: auth, until: /tmp/t/ok}   # shown until the file appears, then clears by itself
      - idle: {id: task1, seconds: 5}  # the input box; a typed (or pasted) line + Enter is recorded
      - done: {seconds: 30}            # "Worked for Ns" + idle box; "/exit" exits
      - exit: {code: 0}

Prompt kinds: ``bash`` (tool permission), ``edit`` (edit approval), ``trust`` (workspace trust,
current wording), ``trust_files`` (the older dialog), ``bypass`` (default "No, exit"),
``question`` (a free-text menu), ``codex_exec`` (Codex approval), ``yes_no`` (aider), ``shell_yn``
(``Continue? [y/N]``, default No). Quote kinds: ``menu``, ``yes_no``, ``press_enter``, ``trust``.

A checkpoint-protocol script (``turns:``, for workflow runs) is played too: each turn after the
first waits for an instruction (pasted lines up to a ``[handoff …]`` marker), works, performs
file actions in ``--cwd`` and prints a ``<checkpoint>`` block (``restart_seq_at``, ``ticker_s``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def agent_command(script: str | Path, record: str | Path, *extra: str) -> list[str]:
    """The command line that runs the scripted agent on ``script``, recording into ``record``."""
    return [sys.executable, "-m", "evals.agent", str(script), "--record", str(record), *extra]


def agent_named(name: str, bin_dir: str | Path, script: str | Path, record: str | Path, *extra: str) -> list[str]:
    """A command that runs the scripted agent as a process named ``name`` (a small wrapper script
    in ``bin_dir``), so a supervisor that picks panes by their processes (``supervisor watch``)
    takes it for that agent."""
    import shlex

    wrapper = Path(bin_dir) / name
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text("#!/bin/sh\n" + shlex.join(agent_command(script, record, *extra)) + "\n", encoding="utf-8")
    wrapper.chmod(0o755)
    return [str(wrapper)]


def read_record(path: str | Path) -> list[dict[str, Any]]:
    """Every event the agent recorded (an unreadable line is skipped: the agent may be mid-write)."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def answers(path: str | Path) -> dict[str, dict[str, Any]]:
    """The answer the agent took for each prompt id."""
    return {r["id"]: r for r in read_record(path) if r["event"] == "answer"}


def inputs(path: str | Path) -> list[str]:
    """Lines submitted in the agent's input box (tasks, a human's messages, ``/exit``)."""
    return [r["text"] for r in read_record(path) if r["event"] == "input"]


def stray_keys(path: str | Path) -> list[dict[str, Any]]:
    """Stray-key events: keys that arrived while no prompt was live (each with its keys and why)."""
    return [r for r in read_record(path) if r["event"] == "stray"]


def stray_count(path: str | Path) -> int:
    """How many stray keys the agent received."""
    return sum(len(r.get("keys") or []) for r in stray_keys(path))
