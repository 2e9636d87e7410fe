"""Run history: read one run (or every run) from the journal or the warehouse, summarize it,
export it, write its postmortem. Next to the journal and the warehouse, not inside the workflow
package: the workbench, ``supervisor status`` and ``supervisor runs`` read runs through this one
module (a run with a workflow spec gets its plan folded by the workflow layer, imported only
then). Replaying a run under a policy is :mod:`evals.replay`'s job.

Events come from the warehouse (after ingesting new journal lines); when the warehouse is
locked or does not have the run yet, from the run's journal, which is the source of truth.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from supervisor.errors import InputError, WarehouseError
from supervisor.journal import ReadReport, iter_events
from supervisor.models import Event
from supervisor.redact import clip

log = logging.getLogger(__name__)


def _journal_events(settings: Any, run_id: str) -> list[Event]:
    path = settings.journal_path(run_id)
    if not Path(path).exists():
        raise InputError(f"run {run_id} not found (no journal at {path})", "list runs with `supervisor runs`")
    return list(iter_events(path))


def load_events(settings: Any, run_id: str, *, prefer: str = "warehouse") -> tuple[list[Event], str]:
    """The run's events in order and where they came from (``warehouse`` or ``journal``)."""
    if prefer == "warehouse":
        try:
            from supervisor.warehouse import reader

            with reader(settings) as wh:
                df = wh.events_df(run_id)
            if df.height:
                out = []
                for row in df.iter_rows(named=True):
                    payload = row["payload"]
                    if isinstance(payload, str):
                        payload = json.loads(payload)
                    at = row["occurred_at"]
                    ts = at.replace(tzinfo=dt.UTC).timestamp() if isinstance(at, dt.datetime) else float(at or 0)
                    out.append(Event(event_id=row["event_id"], run_id=row["run_id"], seq=row["seq"],
                                     kind=row["kind"], at=ts, payload=payload or {},
                                     schema_version=row.get("schema_version") or 1))
                out.sort(key=lambda e: e.seq)
                # The journal may hold events the warehouse has not ingested yet.
                jpath = settings.journal_path(run_id)
                if Path(jpath).exists():
                    known = {e.event_id for e in out}
                    extra = [e for e in iter_events(jpath) if e.event_id not in known]
                    if extra:
                        out = sorted(out + extra, key=lambda e: e.seq)
                return out, "warehouse"
        except (WarehouseError, OSError, ValueError) as exc:
            log.info("run %s read from its journal: the warehouse could not serve it (%s)", run_id, exc)
    return _journal_events(settings, run_id), "journal"


def run_spec(events: list[Event]) -> tuple[Any, str | None]:
    """The workflow spec a run followed (from its ``workflow`` note), if the file is still there."""
    for e in events:
        if e.kind == "note" and e.payload.get("type") in ("workflow", "supervision_resumed"):
            path = e.payload.get("spec_path")
            if path and Path(path).exists():
                from supervisor.workflow.spec import load_spec

                try:
                    return load_spec(path), path
                except InputError:
                    return None, path
            return None, path
    return None, None


# -- export ----------------------------------------------------------------------------------------


def export_run(events: list[Event], fmt: str = "jsonl") -> str:
    rows = [e.model_dump(mode="json") for e in events]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# -- summarize -------------------------------------------------------------------------------------


class RunSummary(BaseModel):
    """What one run did, as its events tell it: the one summary behind ``supervisor status``,
    ``supervisor runs`` (when the warehouse is locked), ``runs summarize`` and postmortems."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    source: str = "journal"
    """Where the events came from: ``warehouse`` or ``journal``."""
    journal_path: str | None = None
    started_at: float | None = None
    last_event_at: float | None = None
    ended_at: float | None = None
    outcome: str | None = None
    command: Any = None
    pane_id: str | None = None
    agent: str | None = None
    """The agent: from ``run_started``, else the last observation that named one."""
    policy_id: str | None = None
    state: str | None = None
    """The last observed pane state."""
    spec_name: str | None = None
    spec_path: str | None = None
    events: int = 0
    kinds: dict[str, int] = Field(default_factory=dict)
    decisions: dict[str, int] = Field(default_factory=dict)
    """Screen decisions by kind."""
    workflow_decisions: dict[str, int] = Field(default_factory=dict)
    checkpoints: int = 0
    malformed_checkpoints: int = 0
    verifications: int = 0
    verifications_failed: int = 0
    handoffs: int = 0
    pauses: list[dict[str, Any]] = Field(default_factory=list)
    reviews: list[str] = Field(default_factory=list)
    nodes: dict[str, str] = Field(default_factory=dict)
    """Workflow step -> status (runs with a spec)."""
    friction: dict[str, int] = Field(default_factory=dict)
    paused: bool = False
    """The last pause has not been followed by a resume."""
    pause_reason: str | None = None
    next_action: str | None = None
    torn_tail: bool = False
    """The journal's last line was incomplete (read from the journal only)."""

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return round(self.ended_at - self.started_at, 3)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json") | {"duration_s": self.duration_s}


def _text(value: Any) -> str | None:
    """A payload field shown as text: strings as they are, anything else (a hostile or damaged
    journal's number, list or object) as compact JSON, so readers never choke on its type."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def summarize(events: list[Event], run_id: str, source: str = "journal") -> RunSummary:
    """Summarize a run's events (a run with a workflow spec also gets its steps' status)."""
    s = RunSummary(run_id=run_id, source=source, events=len(events))
    s.kinds = dict(Counter(e.kind for e in events))
    spec, spec_path = run_spec(events)
    s.spec_path = spec_path
    plan: Any = None
    if spec is not None:
        from supervisor.workflow.state import fold, initial_state

        plan = initial_state(spec, run_id)
    handoff_ids: set[str] = set()
    paused_by: dict[str, bool] = {}
    for e in events:
        p = e.payload
        s.last_event_at = e.at
        if s.started_at is None:
            s.started_at = e.at
        if e.kind == "run_started":
            s.started_at = e.at
            s.command = p.get("command")
            s.pane_id = _text(p.get("pane_id"))
            s.agent = _text(p.get("agent")) if p.get("agent") not in (None, "unknown") else s.agent
            s.policy_id = _text(p.get("policy_id"))
        elif e.kind == "run_ended":
            s.ended_at = e.at
            s.outcome = _text(p.get("outcome"))
        elif e.kind == "observation":
            obs = p.get("observation", p)
            s.state = _text(obs.get("state", s.state))
            if obs.get("agent") and obs.get("agent") != "unknown":
                s.agent = _text(obs["agent"])
        elif e.kind == "note" and p.get("type") == "workflow":
            s.spec_name = _text(p.get("spec_name"))
        elif e.kind == "decision":
            d = p.get("decision", p)
            key = str(d.get("kind"))
            target = s.workflow_decisions if d.get("source") == "workflow" else s.decisions
            target[key] = target.get(key, 0) + 1
            if key == "retry":  # friction, as the warehouse's friction_events counts it
                s.friction["retry"] = s.friction.get("retry", 0) + 1
        elif e.kind == "checkpoint":
            s.checkpoints += 1
            s.malformed_checkpoints += bool(p.get("parse_error"))
        elif e.kind == "verification":
            s.verifications += 1
            s.verifications_failed += not p.get("passed")
        elif e.kind == "action":
            a = p.get("action", p)
            if a.get("kind") == "handoff" and a.get("delivered") and a.get("action_id") not in handoff_ids:
                handoff_ids.add(a.get("action_id"))
                s.handoffs += 1
        elif e.kind == "pause":
            s.friction["escalation"] = s.friction.get("escalation", 0) + 1  # one per pause (friction_events)
            source = _text(p.get("source")) or "rules"
            s.pauses.append({"at": e.at, "reason": _text(p.get("pause_reason") or p.get("reason")),
                             "next_action": _text(p.get("next_action")), "source": source})
            paused_by[source] = True
            s.pause_reason, s.next_action = s.pauses[-1]["reason"], s.pauses[-1]["next_action"]
        elif e.kind == "resume":
            source = _text(p.get("source")) or "rules"
            paused_by[source] = False
            if source == "workflow":  # a workflow resume releases the screen pause too
                paused_by["rules"] = False
        elif e.kind == "note" and p.get("type") == "review":
            s.reviews.append(str(p.get("by")))
        elif e.kind == "friction":
            k = str(p.get("kind"))
            if k not in ("escalation", "retry") or p.get("author", "supervisor") != "supervisor":
                s.friction[k] = s.friction.get(k, 0) + 1  # the supervisor's own are counted above
        if plan is not None:
            fold(plan, e)
    s.paused = any(paused_by.values())
    if not s.paused:
        s.pause_reason = s.next_action = None
    if plan is not None:
        s.nodes = {k: v.status for k, v in plan.nodes.items()}
    return s


def summarize_journal(path: Path) -> RunSummary:
    """A run's summary straight from its journal (a torn last line is reported, not fatal)."""
    report = ReadReport(Path(path))
    events = list(iter_events(path, report))
    s = summarize(events, events[0].run_id if events else Path(path).stem, "journal")
    s.journal_path = str(path)
    s.torn_tail = report.torn_tail
    return s


def list_runs(journals_dir: Path) -> list[RunSummary]:
    """Every run with a journal, newest first."""
    if not Path(journals_dir).exists():
        return []
    runs = [summarize_journal(p) for p in sorted(Path(journals_dir).glob("*.jsonl"))]
    return sorted(runs, key=lambda r: r.started_at or 0.0, reverse=True)


def format_summary(s: RunSummary) -> str:
    lines = [f"run {s.run_id} ({s.source})"]
    if s.spec_name or s.spec_path:
        lines.append(f"  spec: {s.spec_name or '?'} ({s.spec_path or 'path unknown'})")
    lines.append(f"  outcome: {s.outcome or 'running or interrupted'}"
                 + (f" after {s.duration_s:.1f}s" if s.duration_s is not None else ""))
    if s.nodes:
        lines.append("  steps: " + ", ".join(f"{k}={v}" for k, v in s.nodes.items()))
    lines.append(f"  checkpoints: {s.checkpoints} ({s.malformed_checkpoints} malformed); verifications: "
                 f"{s.verifications} ({s.verifications_failed} failed); instructions handed over: {s.handoffs}")
    if s.workflow_decisions:
        lines.append("  workflow decisions: " + ", ".join(f"{k} {v}" for k, v in sorted(s.workflow_decisions.items())))
    if s.decisions:
        lines.append("  screen decisions: " + ", ".join(f"{k} {v}" for k, v in sorted(s.decisions.items())))
    if s.pauses:
        lines.append(f"  pauses: {len(s.pauses)}; last: {s.pauses[-1]['reason']}")
    if s.reviews:
        lines.append("  reviewed by: " + ", ".join(s.reviews))
    if s.friction:
        lines.append("  friction: " + ", ".join(f"{k} {v}" for k, v in sorted(s.friction.items())))
    if s.paused:
        lines.append(f"  PAUSED: {s.pause_reason}")
        if s.next_action:
            lines.append(f"  next: {s.next_action}")
    return "\n".join(lines)


# -- postmortem ------------------------------------------------------------------------------------


def postmortem_markdown(events: list[Event], run_id: str, source: str = "journal") -> str:
    s = summarize(events, run_id, source)
    out = [f"# Postmortem: run {run_id}", ""]
    when = dt.datetime.fromtimestamp(s.started_at, dt.UTC).isoformat(timespec="seconds") if s.started_at else "?"
    out += [f"- started: {when}", f"- command: `{s.command}`" if s.command else "- command: ?",
            f"- agent: {s.agent or '?'}", f"- outcome: **{s.outcome or 'unfinished'}**"
            + (f" after {s.duration_s:.1f}s" if s.duration_s is not None else ""),
            f"- spec: {s.spec_name or '-'} ({s.spec_path or '-'})", f"- events: {s.events} (from the {source})", ""]
    if s.nodes:
        out += ["## Plan", "", "| step | status |", "| --- | --- |"]
        out += [f"| {k} | {v} |" for k, v in s.nodes.items()] + [""]
    out += ["## Timeline", "", "| time (s) | event | detail |", "| --- | --- | --- |"]
    t0 = s.started_at or (events[0].at if events else 0.0)
    for e in events:
        detail = _timeline_detail(e)
        if detail is not None:
            cell = " ".join(detail.replace("|", "/").split())
            out.append(f"| {e.at - t0:.1f} | {e.kind} | {cell} |")
    out.append("")
    fails = [e for e in events if e.kind == "verification" and not e.payload.get("passed")]
    if fails:
        out += ["## Failed verifications", ""]
        for e in fails:
            p = e.payload
            out += [f"### {p.get('verifier')} (step {p.get('node')})", "", f"{p.get('detail', '')}", ""]
            if p.get("output"):
                out += ["```", clip(str(p["output"]), 3000, keep="tail").rstrip(), "```", ""]
    out += ["## Where time and attention went", ""]
    out.append(f"- pauses: {len(s.pauses)}" + (f" (last: {s.pauses[-1]['reason']})" if s.pauses else ""))
    out.append(f"- instructions handed to the agent: {s.handoffs}")
    out.append(f"- retries: {s.workflow_decisions.get('retry', 0)}; escalations: "
               f"{s.workflow_decisions.get('escalate', 0) + s.decisions.get('escalate', 0)}")
    if s.friction:
        out.append("- friction: " + ", ".join(f"{k} ×{v}" for k, v in sorted(s.friction.items())))
    if s.reviews:
        out.append("- reviewed by: " + ", ".join(s.reviews))
    out += ["", "## Look further", "", f"- `supervisor runs show {run_id}`",
            f"- `supervisor runs replay {run_id} --policy CANDIDATE.yaml`", f"- `supervisor runs export {run_id}`", ""]
    return "\n".join(out)


def _timeline_detail(e: Event) -> str | None:
    p = e.payload
    if e.kind in ("run_started", "run_ended"):
        return str(p.get("outcome") or p.get("command") or "")
    if e.kind == "checkpoint":
        body = p.get("checkpoint") or {}
        if p.get("parse_error"):
            return f"malformed: {p['parse_error']}"
        return f"#{body.get('checkpoint_seq')} {body.get('status')} at {body.get('current_node')}: {body.get('summary', '')}"
    if e.kind == "decision":
        d = p.get("decision", p)
        if d.get("kind") == "wait":
            return None
        return f"{d.get('kind')} ({d.get('source', 'rules')}): {d.get('reason', '')}"
    if e.kind == "verification":
        return f"{p.get('verifier')}: {'pass' if p.get('passed') else 'FAIL'} — {p.get('detail', '')}"
    if e.kind == "action":
        a = p.get("action", p)
        if not a.get("delivered") or a.get("confirmed") is not None:
            return None
        return f"{a.get('kind')}: {str(a.get('text') or a.get('keys'))[:80]}"
    if e.kind in ("pause", "resume"):
        return str(p.get("pause_reason") or p.get("note") or p.get("was") or "")
    if e.kind == "note" and p.get("type") in ("review", "stop"):
        return f"{p['type']} by {p.get('by')}"
    if e.kind == "friction":
        return f"{p.get('kind')}: {p.get('detail', '')}"
    return None


def write_postmortem(events: list[Event], run_id: str, reports_dir: Path, source: str = "journal") -> Path:
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / f"postmortem-{run_id}.md"
    path.write_text(postmortem_markdown(events, run_id, source), encoding="utf-8")
    return path
