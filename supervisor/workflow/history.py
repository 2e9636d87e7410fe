"""Run history: export, summarize, replay and postmortem of one run.

Events come from the warehouse (after ingesting new journal lines); when the warehouse is
locked or does not have the run yet, from the run's journal, which is the source of truth.

Replay never touches a pane: it re-folds the recorded events and, for every recorded
checkpoint, asks the pure gate again under the current (or a given) policy with the verifier
results that were recorded for it; for every recorded observation whose screen is stored, it
re-classifies the screen and re-decides. It reports where the new decisions differ.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from supervisor.errors import InputError, WarehouseError
from supervisor.journal import iter_events
from supervisor.models import Event, RunState
from supervisor.policy import Policy
from supervisor.redact import clip
from supervisor.workflow.checkpoint import CheckpointEvent
from supervisor.workflow.gate import decide_after_review, decide_checkpoint
from supervisor.workflow.spec import WorkflowSpec, load_spec
from supervisor.workflow.state import WorkflowState, fold, initial_state


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
        except (WarehouseError, ImportError, OSError, ValueError):
            pass
    return _journal_events(settings, run_id), "journal"


def run_spec(events: list[Event]) -> tuple[WorkflowSpec | None, str | None]:
    """The spec a run followed (from its ``workflow`` note), if the file is still there."""
    for e in events:
        if e.kind == "note" and e.payload.get("type") in ("workflow", "supervision_resumed"):
            path = e.payload.get("spec_path")
            if path and Path(path).exists():
                try:
                    return load_spec(path), path
                except InputError:
                    return None, path
            return None, path
    return None, None


# -- export ---------------------------------------------------------------------------------------------


def export_run(events: list[Event], fmt: str = "jsonl") -> str:
    rows = [e.model_dump(mode="json") for e in events]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# -- summarize ------------------------------------------------------------------------------------------


@dataclass
class RunSummary:
    run_id: str
    source: str
    started_at: float | None = None
    ended_at: float | None = None
    outcome: str | None = None
    command: Any = None
    agent: str | None = None
    spec_name: str | None = None
    spec_path: str | None = None
    events: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    decisions: dict[str, int] = field(default_factory=dict)
    workflow_decisions: dict[str, int] = field(default_factory=dict)
    checkpoints: int = 0
    malformed_checkpoints: int = 0
    verifications: int = 0
    verifications_failed: int = 0
    handoffs: int = 0
    pauses: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    nodes: dict[str, str] = field(default_factory=dict)
    friction: dict[str, int] = field(default_factory=dict)
    paused: bool = False
    pause_reason: str | None = None
    next_action: str | None = None

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.ended_at
        return None if end is None else round(end - self.started_at, 3)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["duration_s"] = self.duration_s
        return d


def summarize(events: list[Event], run_id: str, source: str = "journal") -> RunSummary:
    s = RunSummary(run_id=run_id, source=source, events=len(events))
    s.kinds = dict(Counter(e.kind for e in events))
    spec, spec_path = run_spec(events)
    s.spec_path = spec_path
    st: WorkflowState | None = initial_state(spec, run_id) if spec is not None else None
    handoff_ids: set[str] = set()
    paused_by: dict[str, bool] = {}
    for e in events:
        p = e.payload
        if e.kind == "run_started":
            s.started_at = e.at
            s.command = p.get("command")
            s.agent = p.get("agent")
        elif e.kind == "run_ended":
            s.ended_at = e.at
            s.outcome = p.get("outcome")
        elif e.kind == "note" and p.get("type") == "workflow":
            s.spec_name = p.get("spec_name")
            if s.started_at is None:
                s.started_at = e.at
        elif e.kind == "decision":
            d = p.get("decision", p)
            key = str(d.get("kind"))
            if d.get("source") == "workflow":
                s.workflow_decisions[key] = s.workflow_decisions.get(key, 0) + 1
            else:
                s.decisions[key] = s.decisions.get(key, 0) + 1
        elif e.kind == "checkpoint":
            s.checkpoints += 1
            if p.get("parse_error"):
                s.malformed_checkpoints += 1
        elif e.kind == "verification":
            s.verifications += 1
            if not p.get("passed"):
                s.verifications_failed += 1
        elif e.kind == "action":
            a = p.get("action", p)
            if a.get("kind") == "handoff" and a.get("delivered") and a.get("action_id") not in handoff_ids:
                handoff_ids.add(a.get("action_id"))
                s.handoffs += 1
        elif e.kind == "pause":
            s.pauses.append({"at": e.at, "reason": p.get("pause_reason"), "next_action": p.get("next_action"),
                             "source": p.get("source", "rules")})
            paused_by[p.get("source", "rules")] = True
            s.pause_reason, s.next_action = p.get("pause_reason"), p.get("next_action")
        elif e.kind == "resume":
            paused_by[p.get("source", "rules")] = False
            paused_by["rules" if p.get("source") == "workflow" else p.get("source", "rules")] = False
        elif e.kind == "note" and p.get("type") == "review":
            s.reviews.append(str(p.get("by")))
        elif e.kind == "friction":
            k = str(p.get("kind"))
            s.friction[k] = s.friction.get(k, 0) + 1
        if st is not None:
            fold(st, e)
    s.paused = any(paused_by.values()) and s.outcome is None
    if not s.paused:
        s.pause_reason = s.next_action = None if s.outcome is None else s.pause_reason
    if st is not None:
        s.nodes = {k: v.status for k, v in st.nodes.items()}
    return s


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


# -- replay ----------------------------------------------------------------------------------------------


@dataclass
class ReplayRow:
    trigger_id: str
    what: str
    """checkpoint | observation"""
    recorded: str | None
    replayed: str
    reason: str

    @property
    def same(self) -> bool:
        return self.recorded == self.replayed


@dataclass
class ReplayReport:
    run_id: str
    policy_id: str
    rows: list[ReplayRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[ReplayRow]:
        return [r for r in self.rows if not r.same]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "policy_id": self.policy_id, "compared": len(self.rows),
                "changed": len(self.changed), "notes": self.notes,
                "rows": [dict(r.__dict__, same=r.same) for r in self.rows]}


def replay(events: list[Event], policy: Policy, *, spec: WorkflowSpec | None = None,
           run_id: str = "", observations: bool = True) -> ReplayReport:
    """Re-decide every recorded checkpoint (and observation) under ``policy``. Touches no pane."""
    report = ReplayReport(run_id=run_id, policy_id=policy.policy_id)
    if spec is None:
        spec, path = run_spec(events)
        if spec is None and any(e.kind == "checkpoint" for e in events):
            report.notes.append(f"spec not available ({path or 'no path recorded'}): checkpoints not replayed")
    st = initial_state(spec, run_id) if spec is not None else None
    checkpoints: dict[str, CheckpointEvent] = {}
    t0 = events[0].at if events else 0.0
    rs = RunState(run_id=run_id, now=t0, started_at=t0, last_output_at=t0)
    for e in events:
        if st is not None and e.kind == "checkpoint":
            try:
                cp = CheckpointEvent.model_validate({k: v for k, v in e.payload.items()
                                                     if k in CheckpointEvent.model_fields and k != "body"}
                                                    | {"body": e.payload.get("checkpoint")})
            except ValueError:
                cp = None
            if cp is not None:
                cp.checkpoint_id = cp.checkpoint_id or e.event_id
                checkpoints[cp.checkpoint_id] = cp
        if st is not None and e.kind == "decision":
            d = e.payload.get("decision", e.payload)
            cp = checkpoints.get(d.get("trigger_id") or "")
            if d.get("source") == "workflow" and cp is not None:
                # Same point of the recorded run, same inputs, the policy under test.
                if d.get("rule") == "workflow:finish_after_review":
                    new = decide_after_review(spec, st, policy)  # type: ignore[arg-type]
                    kind, reason = (new.kind, new.reason) if new else ("wait", "finish still held")
                else:
                    results = dict(st.checkpoint_results.get(cp.checkpoint_id or "", {}))
                    new = decide_checkpoint(cp, st, spec, results, policy)  # type: ignore[arg-type]
                    kind, reason = new.kind, new.reason
                report.rows.append(ReplayRow(cp.checkpoint_id or "", "checkpoint", str(d.get("kind")), kind, reason))
        if st is not None:
            fold(st, e)
        if observations and e.kind == "observation":
            row = _replay_observation(e, policy, rs)
            if row is not None:
                report.rows.append(row)
    return attach_recorded(report, events)


def _replay_observation(e: Event, policy: Policy, rs: RunState) -> ReplayRow | None:
    """Re-classify a stored screen and decide under ``policy``, carrying the run state forward
    the way the runner carries a shadow policy's (so finish confirmations, strikes and pauses
    evolve as they would have under that policy)."""
    screen = e.payload.get("screen") or {}
    text = screen.get("text")
    if text is None:
        return None
    try:
        from supervisor.classify import classify
        from supervisor.decide import decide
        from supervisor.runstate import advance, clear_pause_if_resolved, note_answer, note_escalation
        from supervisor.screen import make_screen
    except ImportError:
        return None
    obs_id = (e.payload.get("observation") or {}).get("observation_id") or e.event_id
    try:
        sc = make_screen(text, width=screen.get("width") or 80, height=screen.get("height") or 24,
                         title=screen.get("title") or "", dead=bool(screen.get("dead")))
        obs = classify(sc, policy)
        rs.now = e.at
        if obs.state == "busy" or rs.last_state is None:
            rs.last_output_at = e.at
        d = decide(obs, rs, policy)
        if d.kind == "answer":
            note_answer(rs, d, e.at)
        elif d.kind == "escalate":
            note_escalation(rs, d)
        clear_pause_if_resolved(rs, obs)
        advance(rs, obs, d, e.at, policy.timing.recheck_s)
    except Exception as exc:  # noqa: BLE001 - a replay reports, it does not crash
        return ReplayRow(obs_id, "observation", None, "error", f"{type(exc).__name__}: {exc}")
    return ReplayRow(obs_id, "observation", None, d.kind, d.reason)


def attach_recorded(report: ReplayReport, events: list[Event]) -> ReplayReport:
    """Fill the recorded decision kind of observation rows (the runner's first decision per trigger)."""
    first: dict[str, str] = {}
    for e in events:
        if e.kind == "decision":
            d = e.payload.get("decision", e.payload)
            if d.get("trigger_id") and d.get("source") != "workflow":
                first.setdefault(d["trigger_id"], str(d.get("kind")))
    for r in report.rows:
        if r.what == "observation" and r.recorded is None:
            r.recorded = first.get(r.trigger_id)
    return report


# -- postmortem ------------------------------------------------------------------------------------------


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
