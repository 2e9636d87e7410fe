"""HandoffInstruction: an instruction for the agent (next step, retry with the verifier's
output, branch choice), pasted into its pane and submitted.

Delivery is journaled intent-first: an ``action`` event with ``delivered=False`` is fsynced
before anything reaches the pane, then a second one with ``delivered=True`` after the paste
and Enter. Each instruction ends with a marker line (``[handoff h-…]``) that identifies it on
the screen, so a supervisor restarted after a crash between the two events looks for the
marker before sending again: an instruction is never sent twice. The marker also tells
line-based agents where a multi-line instruction ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from supervisor.ids import new_id
from supervisor.models import Action

log = logging.getLogger(__name__)

HandoffState = Literal["intent", "delivered", "confirmed", "unconfirmed", "failed"]


class JournalLike(Protocol):
    """What delivery needs from a journal (the controller passes one that also folds its state)."""

    def append(self, kind: Any, payload: Any = None, **kw: Any) -> Any:
        ...


class HandoffInstruction(BaseModel):
    """One instruction handed to the agent."""

    model_config = ConfigDict(extra="forbid")

    action_id: str
    decision_id: str | None = None
    run_id: str = ""
    pane_id: str | None = None
    kind: str = "next_step"
    """next_step | retry | branch."""
    body: str
    """The rendered template text."""
    marker: str
    """The last line, unique to this instruction (found on the screen to confirm receipt)."""

    @property
    def text(self) -> str:
        return f"{self.body.rstrip()}\n{self.marker}"


def new_handoff(body: str, *, decision_id: str | None, run_id: str, pane_id: str | None,
                kind: str = "next_step") -> HandoffInstruction:
    aid = new_id("act_")
    return HandoffInstruction(action_id=aid, decision_id=decision_id, run_id=run_id, pane_id=pane_id, kind=kind,
                              body=body, marker=f"[handoff {aid[-8:].lower()}]")


def screen_text_of(surface: Any, pane_id: str) -> str:
    """Visible text plus a little scrollback (the marker may have scrolled just off)."""
    raw = surface.capture(pane_id, scrollback=200)
    from supervisor.screen import normalize  # tmux captures carry SGR escapes (capture-pane -e)

    return f"{normalize(getattr(raw, 'scrollback', ''))}\n{normalize(raw.text)}"


def marker_visible(surface: Any, pane_id: str, marker: str) -> bool:
    try:
        return marker in screen_text_of(surface, pane_id)
    except Exception:  # noqa: BLE001 - a pane that cannot be read does not show the marker
        log.debug("pane %s unreadable while looking for a handoff marker", pane_id, exc_info=True)
        return False


def _action(h: HandoffInstruction, **kw: Any) -> dict[str, Any]:
    a = Action(action_id=h.action_id, decision_id=h.decision_id, kind="handoff", text=h.text, pane_id=h.pane_id,
               **kw)
    return {**a.model_dump(mode="json"), "marker": h.marker, "handoff_kind": h.kind}


def journal_intent(journal: JournalLike, h: HandoffInstruction) -> None:
    journal.append("action", _action(h, delivered=False))


def paste(surface: Any, pane_id: str, text: str) -> None:
    """Paste through tmux buffers when the surface can (``paste_buffer``: load-buffer +
    paste-buffer, and the Enter that submits it in the same tmux command), else type it
    literally, then submit with Enter."""
    fn = getattr(surface, "paste_buffer", None)
    if callable(fn):
        fn(pane_id, text, submit=True)
        return
    surface.paste_text(pane_id, text)
    surface.send_keys(pane_id, ["Enter"])


def deliver(surface: Any, journal: JournalLike, h: HandoffInstruction, *, confirm_timeout_s: float = 5.0,
            sleep: Callable[[float], None] = time.sleep) -> HandoffState:
    """Journal the intent, paste and submit, journal the delivery, then wait (bounded) until the
    marker shows on the screen. Returns the final state."""
    assert h.pane_id, "a handoff needs a pane"
    journal_intent(journal, h)
    return send_journaled(surface, journal, h, confirm_timeout_s=confirm_timeout_s, sleep=sleep)


def send_journaled(surface: Any, journal: JournalLike, h: HandoffInstruction, *, confirm_timeout_s: float = 5.0,
                   sleep: Callable[[float], None] = time.sleep, recovered: bool = False) -> HandoffState:
    """Send a handoff whose intent is already journaled."""
    assert h.pane_id
    try:
        paste(surface, h.pane_id, h.text)
    except Exception as exc:  # noqa: BLE001 - journal the failure; the run goes on
        journal.append("action", _action(h, delivered=False, error=f"{type(exc).__name__}: {exc}"))
        return "failed"
    journal.append("action", {**_action(h, delivered=True), "resent": recovered})
    if confirm_timeout_s <= 0:
        return "delivered"  # the caller confirms later (``confirm_from_text``), without blocking
    return confirm(surface, journal, h, timeout_s=confirm_timeout_s, sleep=sleep)


def confirm_from_text(journal: JournalLike, h: HandoffInstruction, screen_text: str, *, expired: bool) -> HandoffState:
    """Non-blocking confirmation: journal ``confirmed`` once the marker shows in ``screen_text``,
    or ``unconfirmed`` once ``expired``. Returns ``delivered`` while still waiting."""
    if h.marker in screen_text:
        journal.append("action", _action(h, delivered=True, confirmed=True))
        return "confirmed"
    if expired:
        journal.append("action", _action(h, delivered=True, confirmed=False,
                                         error="the instruction did not show on the screen in time"))
        return "unconfirmed"
    return "delivered"


def confirm(surface: Any, journal: JournalLike, h: HandoffInstruction, *, timeout_s: float,
            sleep: Callable[[float], None] = time.sleep) -> HandoffState:
    deadline = time.monotonic() + timeout_s
    while True:
        if marker_visible(surface, h.pane_id or "", h.marker):
            journal.append("action", _action(h, delivered=True, confirmed=True))
            return "confirmed"
        if time.monotonic() >= deadline:
            journal.append("action", _action(h, delivered=True, confirmed=False,
                                             error="the instruction did not show on the screen in time"))
            return "unconfirmed"
        sleep(0.05)


def recover(surface: Any, journal: JournalLike, h: HandoffInstruction, *, confirm_timeout_s: float = 5.0,
            sleep: Callable[[float], None] = time.sleep) -> HandoffState:
    """After a restart: a handoff whose intent was journaled but not its delivery. If its marker
    is on the screen it arrived before the crash (journal that, send nothing); else send it now."""
    if h.pane_id and marker_visible(surface, h.pane_id, h.marker):
        journal.append("action", {**_action(h, delivered=True, confirmed=True), "recovered": True})
        return "confirmed"
    return send_journaled(surface, journal, h, confirm_timeout_s=confirm_timeout_s, sleep=sleep, recovered=True)
