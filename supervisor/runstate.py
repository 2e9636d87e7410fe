"""Folding observations and decisions into a :class:`RunState`: the one definition shared by the
live runner, shadow policies, run replay and eval replay, so a replayed run sees exactly the
state the live one saw.

These are pure updates of the state object (no I/O, no clock: ``now`` is passed in).
"""

from __future__ import annotations

from supervisor.decide import counts_as_work
from supervisor.models import Decision, Observation, RunState


def idle_spaced(rs: RunState, now: float, recheck_s: float) -> bool:
    """Whether an idle observation at ``now`` counts as a new finish confirmation: the first one
    does, a later one only ``recheck_s`` after the last counted one (two redraws 0.1 s apart are
    one look, not two)."""
    return rs.idle_confirmed_at is None or now - rs.idle_confirmed_at >= recheck_s


def note_answer(rs: RunState, decision: Decision, now: float) -> None:
    """We sent keys for a prompt: count strikes on the same prompt and the intervention budget."""
    sig = decision.signature
    if sig is not None and sig == rs.last_prompt_signature:
        rs.answers_to_same_prompt += 1
    else:
        rs.last_prompt_signature = sig
        rs.answers_to_same_prompt = 1
    rs.last_answer_at = now
    rs.interventions += 1


def note_escalation(rs: RunState, decision: Decision) -> None:
    rs.paused = True
    rs.pause_reason = decision.reason
    rs.escalated_signature = decision.signature


def clear_pause_if_resolved(rs: RunState, obs: Observation) -> bool:
    """A paused run resumes once nothing asks or blocks any more; returns True when it did."""
    if rs.paused and obs.state not in ("asking", "blocked"):
        rs.paused, rs.pause_reason, rs.escalated_signature = False, None, None
        return True
    return False


def advance(rs: RunState, obs: Observation, decision: Decision, now: float, recheck_s: float) -> None:
    """Fold one observation and its decision into the run state (decide saw the state before)."""
    rs.now = now
    if obs.state == "idle":
        if idle_spaced(rs, now, recheck_s):
            rs.idle_streak += 1
            rs.idle_confirmed_at = now
    else:
        rs.idle_streak = 0
        rs.idle_confirmed_at = None
    if counts_as_work(obs):  # busy, or asking a tool/edit prompt: not a trust dialog or first-run menu
        rs.saw_work = True
    if obs.state == "busy":
        if rs.busy_since is None:
            rs.busy_since = now
    else:
        rs.busy_since = None
    if decision.rule == "stall":
        rs.stalls += 1
    if decision.kind == "finish" and obs.state != "exited":
        rs.finished = True
    rs.last_state = obs.state
