"""Events another process hands to a run's journal (an oracle consultation made with ``--run``).

A run's journal has one writer. When no supervisor holds the run, :func:`submit` appends the
events itself, holding the run's control lock meanwhile so no supervisor takes the run halfway.
When one does, the events travel as a control request (``journal``) that the run's supervisor
journals, by the event ids chosen here, before it removes the request: exactly once, even across a
supervisor crash (the request waits for the next one). Only the kinds in :data:`ACCEPTED` are
taken, so the channel cannot forge what a supervisor decides or does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from supervisor.control import control_dir, is_live, try_lock, write_request
from supervisor.journal import Journal, iter_events

REQUEST = "journal"

ACCEPTED: dict[str, str | None] = {"note": "oracle", "judge_call": None}
"""Event kinds a run takes from another process, and the note type required (None: any payload)."""

Submitted = Literal["journaled", "pending", "refused"]


def check_events(events: list[dict[str, Any]]) -> str | None:
    """Why these events may not go into a run's journal from outside (None: they may)."""
    if not isinstance(events, list) or not events:
        return "no events"
    for e in events:
        if not isinstance(e, dict) or not isinstance(e.get("payload"), dict) or not e.get("event_id"):
            return "an event without an id or a payload"
        kind = e.get("kind")
        if kind not in ACCEPTED:
            return f"events of kind {kind!r} are not taken from other processes"
        wanted = ACCEPTED[kind]
        if wanted is not None and e["payload"].get("type") != wanted:
            return f"only {kind}s of type {wanted} are taken from other processes"
    return None


def journal_request(append: Callable[..., Any], request: dict[str, Any]) -> None:
    """A live supervisor's side: journal a ``journal`` request's events (or why they were refused)."""
    events = request.get("events")
    why = check_events(events)  # type: ignore[arg-type]
    if why is not None:
        append("note", {"type": "request_ignored", "request_id": request.get("request_id"), "request": REQUEST,
                        "why": why})
        return
    for e in events:  # type: ignore[union-attr]
        append(e["kind"], e["payload"], event_id=e["event_id"])


def _journaled(path: Path, start: int, event_id: str, request_id: str) -> Submitted | None:
    for ev in iter_events(path, start=start):
        if ev.event_id == event_id:
            return "journaled"
        if ev.kind == "note" and ev.payload.get("request_id") == request_id and \
                ev.payload.get("type") == "request_ignored":
            return "refused"
    return None


def submit(settings: Any, run_id: str, events: list[dict[str, Any]], *, wait_s: float = 10.0) -> Submitted:
    """Put ``events`` (each ``{kind, payload, event_id}``) into the run's journal: ``journaled`` once
    they are there, ``pending`` when a live supervisor has not read them within ``wait_s`` (it will),
    ``refused`` when the run's supervisor does not take such requests (an older one, an ACP run)."""
    why = check_events(events)
    if why is not None:
        raise ValueError(why)
    path = settings.journal_path(run_id)
    lock = control_dir(settings, run_id) / ".lock"
    if not is_live(settings, run_id):
        with try_lock(lock) as free:
            if free:
                with Journal(path, run_id) as j:
                    for e in events:
                        j.append(e["kind"], e["payload"], event_id=e["event_id"])
                return "journaled"
    start = path.stat().st_size if path.exists() else 0
    rid = write_request(settings, run_id, REQUEST, events=events)
    deadline = time.monotonic() + wait_s
    while True:
        got = _journaled(path, start, events[0]["event_id"], rid)
        if got is not None:
            return got
        if time.monotonic() >= deadline:
            return "pending"
        time.sleep(0.05)
