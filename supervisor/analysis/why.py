"""Why one decision was made, from the warehouse alone (``supervisor runs why``).

For one decision of a run: the screen it saw (redacted as stored), the classification with the
rules that fired, the rule that decided, what was sent and whether it took, what happened next,
and, for an escalation, how long it waited and what the human did. Shadow policies' decisions on
the same screen are included, so a candidate's disagreement is one command away.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from supervisor.errors import InputError
from supervisor.redact import redact
from supervisor.warehouse import Warehouse

NEXT_EVENTS = 12
"""How many events after the decision "what happened next" lists (escalations add their end)."""


class Classification(BaseModel):
    """What classify concluded about the screen (or the checkpoint that triggered a workflow decision)."""

    trigger: str
    """``observation`` or ``checkpoint``."""
    trigger_id: str | None = None
    seq: int | None = None
    state: str | None = None
    """The pane state (busy, asking, blocked, idle, exited), or the checkpoint's status."""
    prompt: dict[str, Any] | None = None
    """The live prompt: kind, question, options, default, risk (level, matched patterns, subject)."""
    blocker: dict[str, Any] | None = None
    evidence: list[str] = Field(default_factory=list)
    """Names of the classifier rules that fired."""
    confidence: float | None = None


class Happening(BaseModel):
    """One event after the decision, in words."""

    seq: int
    at: str
    """When (UTC, ISO 8601)."""
    kind: str
    what: str


class DecisionExplanation(BaseModel):
    """Everything the warehouse knows about one decision."""

    run_id: str
    decision_id: str
    seq: int
    at: str
    """When the decision was made (UTC, ISO 8601)."""
    agent: str | None = None
    policy_id: str | None = None
    policy_name: str | None = None
    screen: str | None = None
    """The screen the decision saw, as stored (secrets redacted)."""
    screen_hash: str | None = None
    classification: Classification | None = None
    rule: str | None = None
    """The policy rule that chose the decision."""
    decision: dict[str, Any]
    """kind, reason, keys, text, approves, confidence, next_action, source."""
    sent: list[dict[str, Any]] = Field(default_factory=list)
    """The action rows for this decision: intent, delivery, confirmation (keys, delivered, confirmed, error)."""
    next: list[Happening] = Field(default_factory=list)
    escalation: dict[str, Any] | None = None
    """For an escalation: seconds waited, what ended it, the human's keys and the option they selected."""
    friction: list[dict[str, Any]] = Field(default_factory=list)
    """Friction linked to this decision (its escalation, an answer that did not take...)."""
    shadows: list[dict[str, Any]] = Field(default_factory=list)
    """What shadow policies decided on the same trigger."""
    people: list[dict[str, Any]] = Field(default_factory=list)
    """Notes and friction people recorded by hand about this run (``supervisor notes|friction add``)."""
    prefs: dict[str, str] = Field(default_factory=dict)
    """The people's preferences in effect when the decision was made (``supervisor prefs``)."""
    supervision: dict[str, Any] | None = None
    """A workflow run's worker profile and supervision mode, and why (its ``supervision`` note)."""
    run_prefs: dict[str, str] = Field(default_factory=dict)
    """The preferences a workflow run's instructions used (read when it started; its ``preferences`` note)."""


def _iso(value: Any) -> str:
    return value.isoformat(timespec="milliseconds") if hasattr(value, "isoformat") else str(value)


def _load(payload: Any) -> dict[str, Any]:
    if isinstance(payload, dict):
        return payload
    try:
        data = json.loads(payload) if payload else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _events(wh: Warehouse, run_id: str) -> list[dict[str, Any]]:
    df = wh.sql("SELECT event_id, seq, kind, occurred_at, payload FROM events WHERE run_id = ? ORDER BY seq", [run_id])
    return [{**r, "payload": _load(r["payload"])} for r in df.iter_rows(named=True)]


def _decision_of(e: dict[str, Any]) -> dict[str, Any]:
    p = e["payload"]
    d = p.get("decision", p)
    return d if isinstance(d, dict) else {}


def _decision_id(e: dict[str, Any]) -> str:
    return str(_decision_of(e).get("decision_id") or e["event_id"])


def _trigger_ids(e: dict[str, Any]) -> set[str]:
    p = e["payload"]
    ids = {e["event_id"]}
    for key in ("observation", "checkpoint"):
        inner = p.get(key)
        if isinstance(inner, dict):
            ids.update(str(v) for k, v in inner.items() if k in ("observation_id", "checkpoint_id") and v)
    if p.get("checkpoint_id"):
        ids.add(str(p["checkpoint_id"]))
    return ids


def pick_decision(events: list[dict[str, Any]], target: int | str | None, *, last: bool = False) -> dict[str, Any]:
    """The decision event ``target`` names: a journal ``seq`` (a decision, the observation or
    checkpoint that triggered one, or an event belonging to one), a decision id or its unique
    prefix, ``last`` for the run's last decision; by default the last escalation, else the last
    decision that did something (not a wait), else the last one."""
    decisions = [e for e in events if e["kind"] == "decision"]
    if not decisions:
        raise InputError("this run has no decisions yet", "wait for the supervisor to look at the pane")
    if last:
        return decisions[-1]
    if target is None:
        for want in ("escalate", None):
            hits = [e for e in decisions if (_decision_of(e).get("kind") == want if want else
                                            _decision_of(e).get("kind") != "wait")]
            if hits:
                return hits[-1]
        return decisions[-1]
    if isinstance(target, int):
        ev = next((e for e in events if e["seq"] == target), None)
        if ev is None:
            raise InputError(f"this run has no event with seq {target} (it has 1..{events[-1]['seq']})",
                             "pick a seq from `supervisor runs export RUN_ID`")
        if ev["kind"] == "decision":
            return ev
        if ev["kind"] in ("observation", "checkpoint"):
            ids = _trigger_ids(ev)
            hit = next((d for d in decisions if d["seq"] > ev["seq"] and _decision_of(d).get("trigger_id") in ids), None)
            if hit is not None:
                return hit
        p = ev["payload"]
        did = p.get("decision_id") or (p.get("action") or {}).get("decision_id") if isinstance(p, dict) else None
        if did:
            hit = next((d for d in decisions if _decision_id(d) == did), None)
            if hit is not None:
                return hit
        before = [d for d in decisions if d["seq"] < ev["seq"]]
        if not before:
            raise InputError(f"no decision at or before seq {target}", "pick a later seq, or omit it")
        return before[-1]
    text = str(target)
    exact = [d for d in decisions if _decision_id(d) == text]
    hits = exact or [d for d in decisions if _decision_id(d).upper().startswith(text.upper())]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise InputError(f"no decision {text!r} in this run", "give a seq or a decision id from `supervisor runs show`")
    raise InputError(f"{text!r} matches {len(hits)} decisions", "give more characters of the decision id")


def _describe(e: dict[str, Any]) -> str | None:
    """One event in words (None for events not worth listing)."""
    p, kind = e["payload"], e["kind"]
    if kind == "action":
        a = p.get("action", p)
        keys = " ".join(a.get("keys") or []) or ("text" if a.get("text") else "-")
        if a.get("error"):
            return f"sending {keys} failed: {a['error']}"
        if a.get("confirmed") is True:
            return f"{keys}: took (the prompt changed)"
        if a.get("confirmed") is False:
            return f"{keys}: did not take"
        return f"{keys}: {'delivered' if a.get('delivered') else 'about to send'}"
    if kind == "observation":
        o = p.get("observation", p)
        prompt = o.get("prompt") or {}
        extra = f": {prompt.get('question')}" if prompt.get("question") else ""
        if o.get("blocker"):
            extra = f": {o['blocker'].get('kind')}"
        return f"screen {o.get('state')}{extra}"
    if kind == "decision":
        d = p.get("decision", p)
        return f"decided {d.get('kind')} ({d.get('rule')}): {d.get('reason')}"
    if kind == "pause":
        return f"paused: {p.get('pause_reason')}"
    if kind == "resume":
        parts = [f"resumed (by {p.get('by') or 'human'}"]
        if p.get("waited_s") is not None:
            parts.append(f" after {float(p['waited_s']):.1f}s")
        if p.get("human_keys"):
            parts.append(f"; the human pressed {' '.join(map(str, p['human_keys']))}")
        if p.get("selected"):
            parts.append(f", selecting {p['selected']!r}")
        return "".join(parts) + ")"
    if kind == "friction":
        return f"friction {p.get('kind')}: {p.get('detail')}"
    if kind == "answer_skipped":
        return f"answer not sent: {p.get('why')}"
    if kind == "verification":
        return f"verifier {p.get('verifier')} {'passed' if p.get('passed') else 'failed'}: {p.get('detail') or ''}"
    if kind == "checkpoint":
        c = p.get("checkpoint") or {}
        return f"checkpoint {c.get('status')} at {c.get('current_node')}" if c else "checkpoint (unparsed)"
    if kind == "notification":
        return f"notified ({p.get('channel')}): {p.get('title')}"
    if kind == "turn_finished":
        return (f"turn {p.get('turn')} finished after {p.get('duration_s')}s "
                f"({p.get('answered')} answered, {p.get('escalated')} escalated)")
    if kind == "run_ended":
        return f"run ended: {p.get('outcome')}"
    if kind in ("shadow_decision", "judge_call"):
        return None
    return f"{kind}: {json.dumps(p, ensure_ascii=False, default=str)[:120]}"


def _happening(e: dict[str, Any]) -> Happening | None:
    what = _describe(e)
    return None if what is None else Happening(seq=e["seq"], at=_iso(e["occurred_at"]), kind=e["kind"], what=what)


def explain_decision(wh: Warehouse, run_id: str, target: int | str | None = None, *,
                     last: bool = False) -> DecisionExplanation:
    """Explain one decision of ``run_id`` (see :func:`pick_decision` for ``target``)."""
    events = _events(wh, run_id)
    if not events:
        raise InputError(f"run {run_id} has no events in {wh.path}", "run `supervisor warehouse sync`, then retry")
    ev = pick_decision(events, target, last=last)
    d = _decision_of(ev)
    decision_id = _decision_id(ev)
    trigger_id = d.get("trigger_id")
    trig = next((e for e in events if e["seq"] < ev["seq"] and trigger_id in _trigger_ids(e)), None)
    classification = None
    screen_text = screen_hash = None
    if trig is not None and trig["kind"] == "observation":
        o = trig["payload"].get("observation", trig["payload"])
        scr = trig["payload"].get("screen") or {}
        screen_hash = o.get("screen_hash") or scr.get("screen_hash")
        screen_text = scr.get("text") or (wh.screen_text(screen_hash) if screen_hash else None)
        classification = Classification(trigger="observation", trigger_id=trigger_id, seq=trig["seq"],
                                        state=o.get("state"), prompt=o.get("prompt"), blocker=o.get("blocker"),
                                        evidence=list(o.get("evidence") or []), confidence=o.get("confidence"))
    elif trig is not None and trig["kind"] == "checkpoint":
        c = trig["payload"].get("checkpoint") or {}
        classification = Classification(trigger="checkpoint", trigger_id=trigger_id, seq=trig["seq"],
                                        state=c.get("status"), evidence=[str(x) for x in c.get("evidence") or []])
        screen_text = trig["payload"].get("raw")
    run = wh.sql("SELECT agent, policy_id FROM runs WHERE run_id = ?", [run_id]).to_dicts()
    started: dict[str, Any] = next((e["payload"] for e in events if e["kind"] == "run_started"), {})
    sent = []
    for e in events:
        a = e["payload"].get("action", e["payload"]) if e["kind"] == "action" else {}
        if a.get("decision_id") == decision_id:
            sent.append({"seq": e["seq"], "at": _iso(e["occurred_at"]), "kind": a.get("kind"), "keys": a.get("keys"),
                         "text": a.get("text"), "delivered": a.get("delivered"), "confirmed": a.get("confirmed"),
                         "error": a.get("error")})
    own = {row["seq"] for row in sent}
    later = [e for e in events if e["seq"] > ev["seq"]]
    nxt: list[Happening] = []
    for e in later:
        h = None if e["seq"] in own else _happening(e)
        if h is None:
            continue
        nxt.append(h)
        if len(nxt) >= NEXT_EVENTS or (e["kind"] == "decision" and _decision_of(e).get("kind") != "wait"):
            break
    friction = wh.sql("SELECT friction_id, kind, seq, round(seconds_lost, 3) AS seconds_lost, ended_by, ended_at, "
                      "CAST(human_keys AS VARCHAR) AS human_keys, selected, rule, pattern, detail "
                      "FROM friction_events WHERE run_id = ? AND decision_id = ? ORDER BY seq",
                      [run_id, decision_id]).to_dicts()
    for f in friction:
        f["ended_at"] = _iso(f["ended_at"]) if f.get("ended_at") is not None else None
        f["human_keys"] = json.loads(f["human_keys"]) if f.get("human_keys") else None
    escalation = next((f for f in friction if f["kind"] == "escalation"), None) if d.get("kind") == "escalate" \
        else None
    if escalation is not None:
        end = next((e for e in later if e["kind"] in ("resume", "run_ended")), None)
        h = _happening(end) if end is not None else None
        if h is not None and all(n.seq != h.seq for n in nxt):
            nxt.append(h)
    shadows = [{"shadow_policy_id": e["payload"].get("shadow_policy_id"), **{
        k: _decision_of(e).get(k) for k in ("kind", "rule", "keys", "approves", "reason")}}
        for e in events if e["kind"] == "shadow_decision" and _decision_of(e).get("trigger_id") == trigger_id
        and trigger_id is not None]
    people = wh.sql("SELECT kind, type, occurred_at, author, after_seq, text, signal FROM annotations "
                    "WHERE run_id = ? AND kind IN ('note', 'friction') ORDER BY occurred_at, annotation_id",
                    [run_id]).to_dicts()
    for p in people:
        p["occurred_at"] = _iso(p["occurred_at"])
    prefs = {r["key"]: r["value"] for r in wh.sql(
        "SELECT key, arg_max(text, occurred_at) AS value FROM annotations WHERE kind = 'pref' AND occurred_at <= ? "
        "GROUP BY key HAVING arg_max(text, occurred_at) <> '' ORDER BY key", [ev["occurred_at"]]).to_dicts()}
    return DecisionExplanation(
        run_id=run_id, decision_id=decision_id, seq=ev["seq"], at=_iso(ev["occurred_at"]),
        agent=(run[0]["agent"] if run else None), policy_id=d.get("policy_id") or (run[0]["policy_id"] if run else None),
        policy_name=started.get("policy_name"), screen=redact(screen_text) if screen_text else None,
        screen_hash=screen_hash, classification=classification, rule=d.get("rule"),
        decision={k: d.get(k) for k in ("kind", "reason", "keys", "text", "approves", "confidence", "next_action",
                                        "source", "signature")},
        sent=sent, next=nxt, escalation=escalation, friction=friction, shadows=shadows, people=people, prefs=prefs,
        supervision=_note(events, "supervision"),
        run_prefs={str(k): str(v) for k, v in ((_note(events, "preferences") or {}).get("values") or {}).items()})


def _note(events: list[dict[str, Any]], note_type: str) -> dict[str, Any] | None:
    """The payload of the run's first note of ``note_type`` (without its type), or None."""
    p = next((e["payload"] for e in events if e["kind"] == "note" and e["payload"].get("type") == note_type), None)
    return None if p is None else {k: v for k, v in p.items() if k != "type"}
