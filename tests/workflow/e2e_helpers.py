"""Shared set-up for the workflow end-to-end tests: a project folder, an approved spec, the
scripted checkpoint agent in a real tmux pane, and readers for its record and the journal."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evals.agent import agent_command
from supervisor.journal import iter_events
from supervisor.models import Event
from supervisor.surfaces.tmux import TmuxSurface
from supervisor.workflow.demo import DEMO_SPEC
from supervisor.workflow.spec import approve_spec_text

# The demo's 3-step plan, as a draft the tests approve themselves (risk class spelled out).
SPEC3 = (DEMO_SPEC.replace("name: greeting-demo", "name: greeting")
         + "  risk_class: low\napproval:\n  status: draft\n")

FAILING_CHECK = "import sys\nprint('FAIL: greeting should say hello, world')\nsys.exit(1)\n"
PASSING_CHECK = "print('ok: greeting says hello, world')\n"


def script3(*, work_s: float = 0.3) -> dict[str, Any]:
    return {"turns": [
        {"work_s": work_s, "actions": [{"write": {"path": "hello.py", "text": "print('hello, world')\n"}}],
         "checkpoint": {"status": "step_done", "current_node": "write", "summary": "wrote hello.py",
                        "evidence": ["hello.py"]}},
        {"work_s": work_s, "actions": [{"write": {"path": "check.py", "text": FAILING_CHECK}}],
         "checkpoint": {"status": "step_done", "current_node": "test", "summary": "check written"}},
        {"work_s": work_s, "actions": [{"write": {"path": "check.py", "text": PASSING_CHECK}}],
         "checkpoint": {"status": "step_done", "current_node": "test", "summary": "fixed check"}},
        {"work_s": work_s, "actions": [{"write": {"path": "README.md", "text": "Run hello.py.\n"}}],
         "checkpoint": {"status": "workflow_done", "current_node": "docs", "summary": "documented"}},
    ]}


@dataclass
class Setup:
    project: Path
    spec_path: Path
    record: Path
    pane_id: str
    surface: TmuxSurface

    def records(self, event: str | None = None) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        rows = [json.loads(ln) for ln in self.record.read_text().splitlines() if ln.strip()]
        return [r for r in rows if event is None or r["event"] == event]

    def instructions(self) -> list[str]:
        return [r["text"] for r in self.records("instruction")]


STARTED: list[Path] = []
"""Records of the agents started by the current test (tests/workflow/conftest.py checks them for
stray keys after each test)."""


def start_agent(tmp_path: Path, socket: str, script: dict[str, Any], *, spec_text: str = SPEC3,
                approve: bool = True, name: str = "wf") -> Setup:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(approve_spec_text(spec_text, "tests") if approve else spec_text)
    script_path = tmp_path / "script.yaml"
    script_path.write_text(yaml.safe_dump(script))
    record = tmp_path / "agent.jsonl"
    STARTED.append(record)
    surface = TmuxSurface(socket)
    cmd = agent_command(script_path, record, "--cwd", str(project))
    info = surface.new_session(name, cmd, width=110, height=45, cwd=str(project))
    return Setup(project, spec_path, record, info.pane_id, surface)


def journal_events(home: Path, run_id: str) -> list[Event]:
    path = home / "journals" / f"{run_id}.jsonl"
    return list(iter_events(path)) if path.exists() else []


def kinds(events: list[Event], kind: str) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.kind == kind]


def wf_decisions(events: list[Event]) -> list[dict[str, Any]]:
    return [p for p in kinds(events, "decision") if p.get("source") == "workflow"]
