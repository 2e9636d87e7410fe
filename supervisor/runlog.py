"""Run summaries read straight from journals (the source of truth).

Used where the warehouse cannot be read (another process holds its lock) and by
``supervisor status``: a journal alone tells what a run is doing now.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from supervisor.journal import ReadReport, iter_events


@dataclass
class RunSummary:
    """The state of one run as its journal tells it."""

    run_id: str
    journal_path: str
    started_at: float | None = None
    last_event_at: float | None = None
    ended_at: float | None = None
    command: Any = None
    pane_id: str | None = None
    agent: str | None = None
    policy_id: str | None = None
    state: str | None = None
    """The last observed pane state."""
    outcome: str | None = None
    paused: bool = False
    pause_reason: str | None = None
    next_action: str | None = None
    events: int = 0
    torn_tail: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text(value: Any) -> str | None:
    """A payload field shown as text: strings as they are, anything else (a hostile or damaged
    journal's number, list or object) as compact JSON, so readers never choke on its type."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def summarize_journal(path: Path) -> RunSummary:
    report = ReadReport(Path(path))
    summary = RunSummary(run_id=Path(path).stem, journal_path=str(path))
    for ev in iter_events(path, report):
        p = ev.payload
        summary.run_id = ev.run_id
        summary.events += 1
        summary.last_event_at = ev.at
        if summary.started_at is None:
            summary.started_at = ev.at
        if ev.kind == "run_started":
            summary.started_at = ev.at
            summary.command = p.get("command")
            summary.pane_id = _text(p.get("pane_id"))
            summary.agent = _text(p.get("agent")) or summary.agent
            summary.policy_id = _text(p.get("policy_id"))
        elif ev.kind == "observation":
            obs = p.get("observation", p)
            summary.state = _text(obs.get("state", summary.state))
            if obs.get("agent") and obs.get("agent") != "unknown":
                summary.agent = _text(obs["agent"])
        elif ev.kind == "pause":
            summary.paused = True
            summary.pause_reason = _text(p.get("pause_reason") or p.get("reason"))
            summary.next_action = _text(p.get("next_action"))
        elif ev.kind == "resume":
            summary.paused = False
            summary.pause_reason = summary.next_action = None
        elif ev.kind == "run_ended":
            summary.ended_at = ev.at
            summary.outcome = _text(p.get("outcome"))
    summary.torn_tail = report.torn_tail
    return summary


def list_runs(journals_dir: Path) -> list[RunSummary]:
    """Every run with a journal, newest first."""
    if not Path(journals_dir).exists():
        return []
    runs = [summarize_journal(p) for p in sorted(Path(journals_dir).glob("*.jsonl"))]
    return sorted(runs, key=lambda r: r.started_at or 0.0, reverse=True)
