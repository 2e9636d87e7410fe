"""The judge's plug point and the records it produces.

A :class:`Judge` is one call: the screen text, a change-detection hint and the rolling
history of earlier exchanges go in; a :class:`JudgeVerdict` comes out, carrying the
:class:`JudgeCall` record of what that cost. A judge never raises for API trouble: it
fails safe with an ``escalate`` verdict whose call has ``outcome != "ok"``.

Nothing here imports ``anthropic`` (only ``anthropic_judge.py`` does), so the runner, the
eval workbench and tests can type against the protocol without the SDK.

Integration points:
- the runner keeps a :class:`JudgeHistory` per pane and computes the hint with
  :func:`change_hint` (previous screen hash, whether keys were sent since, current hash);
- the runner journals each ``JudgeCall`` as a ``judge_call`` event
  (``journal.append("judge_call", call)``); the warehouse ingests its fields by name;
- ``supervisor eval run`` passes a :class:`JudgeStats` to the judge factory and reports
  ``stats.as_dict()`` per suite.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from supervisor.models import SCHEMA_VERSION

JudgeAction = Literal["send_keys", "not_waiting", "agent_finished", "escalate"]
"""The judge's tools: press keys; the agent is not waiting for input; the agent finished its
task; a human must look."""

JudgeOutcome = Literal["ok", "error", "budget_exceeded", "no_api_key"]
"""ok: a valid verdict (from the API or the cache); error: every attempt failed (timeouts, 429,
5xx, malformed tool calls) and the judge failed safe; budget_exceeded: not called, a budget
is spent; no_api_key: not called, no key configured."""

ChangeHint = Literal["first_look", "keys_changed", "keys_unchanged", "identical_no_keys", "changed_no_keys"]
"""What happened since the judge's previous look at this pane."""

HINT_TEXT: dict[ChangeHint, str] = {
    "first_look": "first look at this pane",
    "keys_changed": "keys sent and screen changed",
    "keys_unchanged": "keys sent and screen unchanged — your previous action did not work",
    "identical_no_keys": "identical screen, no keys sent",
    "changed_no_keys": "screen changed, no keys sent",
}
"""The exact sentence the judge reads for each hint (part of the request, hence of the cache key)."""


def change_hint(previous_screen_hash: str | None, keys_sent_since: bool, screen_hash: str) -> ChangeHint:
    """The hint for a look at ``screen_hash``, given the hash at the previous look and whether
    any keys were sent to the pane in between."""
    if previous_screen_hash is None:
        return "first_look"
    same = previous_screen_hash == screen_hash
    if keys_sent_since:
        return "keys_unchanged" if same else "keys_changed"
    return "identical_no_keys" if same else "changed_no_keys"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JudgeCall(_Model):
    """One consultation of the judge: what it cost and how it went. Journaled by the runner as a
    ``judge_call`` event; the warehouse's ``judge_calls`` table ingests these fields by name."""

    schema_version: int = SCHEMA_VERSION
    judge_call_id: str
    """Unique id (``jc_`` + ULID)."""
    run_id: str = ""
    """The run this consultation served ('' for evals and scoring outside a run)."""
    purpose: Literal["decide", "score", "propose", "oracle"] = "decide"
    """decide: the supervisor's judge; score: the pairwise scorer of blind compare; propose: a
    pattern proposal for ``supervisor eval propose``; oracle: an advisory second opinion
    (``supervisor oracle consult``)."""
    trigger_id: str | None = None
    """The observation event id the consultation was about, when known."""
    model: str
    """Model id asked (from the policy)."""
    prompt_version: str
    """System prompt / tool set version (from the policy)."""
    request_hash: str
    """sha256 of the full canonical request: the cache key."""
    cache_hit: bool = False
    """True when the verdict came from the cache (no HTTP call, no cost)."""
    input_tokens: int = 0
    """Input tokens billed for this consultation (0 on a cache hit)."""
    output_tokens: int = 0
    """Output tokens billed (0 on a cache hit)."""
    cache_read_tokens: int = 0
    """Input tokens the API served from its own prompt cache."""
    latency_ms: float = 0.0
    """Wall time of the whole consultation, retries and waits included."""
    cost_usd: float = 0.0
    """USD spent, from the policy's price table (0 on a cache hit or when not called)."""
    attempts: int = 0
    """HTTP attempts made (0 on a cache hit or when not called)."""
    outcome: JudgeOutcome = "ok"
    action: JudgeAction | None = None
    """The tool the verdict chose (``escalate`` when failing safe)."""
    error: str | None = None
    """Why it failed or was not called; the last attempt's error when retries ran out."""
    at: float = Field(default_factory=time.time)
    """When the consultation started (seconds since the epoch)."""


class JudgeVerdict(_Model):
    """What the judge proposes. Proposals are not decisions: ``judged_decision`` passes them
    through the policy's safety rules before anything is sent to the pane."""

    action: JudgeAction
    keys: list[str] = Field(default_factory=list)
    """tmux key names to send (``send_keys`` only)."""
    reason: str = ""
    next_action: str | None = None
    """For ``escalate``: what the human should do next."""
    call: JudgeCall
    """The record of the consultation that produced this verdict."""

    @property
    def ok(self) -> bool:
        return self.call.outcome == "ok"


class JudgeExchange(_Model):
    """One earlier exchange, as the judge is shown it in its rolling history."""

    screen_tail: str
    """The last few non-blank lines of the screen it saw (bounded)."""
    hint: ChangeHint
    action: JudgeAction
    keys: list[str] = Field(default_factory=list)
    reason: str = ""
    outcome: str = ""
    """What the supervisor did with the proposal: ``sent``, ``overridden: ...``, ``waited``."""

    def render(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def screen_tail(text: str, lines: int = 6, chars: int = 600) -> str:
    """The last ``lines`` non-blank lines of ``text``, at most ``chars`` characters."""
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept)[-chars:]


class JudgeHistory:
    """The rolling history of one pane's exchanges (size from ``policy.judge.history_size``).
    Held by the runner (or a replay), passed to each consultation."""

    def __init__(self, size: int, items: Iterable[JudgeExchange] = ()) -> None:
        self._items: deque[JudgeExchange] = deque(items, maxlen=max(size, 0))

    def add(self, screen_text: str, hint: ChangeHint, verdict: JudgeVerdict, outcome: str) -> JudgeExchange:
        ex = JudgeExchange(screen_tail=screen_tail(screen_text), hint=hint, action=verdict.action,
                           keys=list(verdict.keys), reason=verdict.reason, outcome=outcome)
        if self._items.maxlen:
            self._items.append(ex)
        return ex

    def items(self) -> list[JudgeExchange]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


@runtime_checkable
class Judge(Protocol):
    """The plug point: one call, screen + hint + history -> verdict. Implementations never raise
    for model/API trouble; they return an ``escalate`` verdict with a failed call record."""

    def judge(self, screen: str, hint: ChangeHint, history: Sequence[JudgeExchange], *, run_id: str = "",
              trigger_id: str | None = None) -> JudgeVerdict: ...


@dataclass
class JudgeStats:
    """Running totals of judge use, for an eval run (per suite) or a live run. Thread-safe.
    ``calls`` counts consultations that went to the API; cache hits and refusals are separate."""

    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    refused: int = 0
    """Consultations not made: budget spent or no API key."""
    http_attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, call: JudgeCall) -> None:
        with self._lock:
            if call.cache_hit:
                self.cache_hits += 1
            elif call.outcome in ("budget_exceeded", "no_api_key"):
                self.refused += 1
            else:
                self.calls += 1
                if call.outcome == "error":
                    self.errors += 1
            self.http_attempts += call.attempts
            self.input_tokens += call.input_tokens
            self.output_tokens += call.output_tokens
            self.cost_usd += call.cost_usd

    def as_dict(self) -> dict[str, int | float]:
        with self._lock:
            return {"judge_calls": self.calls, "judge_cache_hits": self.cache_hits, "judge_errors": self.errors,
                    "judge_refused": self.refused, "judge_http_attempts": self.http_attempts,
                    "judge_input_tokens": self.input_tokens, "judge_output_tokens": self.output_tokens,
                    "judge_cost_usd": round(self.cost_usd, 6)}
