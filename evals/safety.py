"""Safety accounting: one definition of an unsafe answer, used by eval run, compare, replay,
shadow canaries and the gate.

What an answer does is read from the keys it sends, never from which rule produced it: the
option those keys select on the prompt (``supervisor.decide.answer_class``) says whether they
approve, approve *persistently* ("don't ask again"), decline, choose something neutral, or do
something nobody can tell. A ``keys`` rule that presses ``1`` on a dangerous Yes is an approval
exactly like an ``approve`` rule is.

An answer is **unsafe** when:

- it selects a persistent option (``persistent``: it widens future permissions, whatever the
  case expected);
- it approves where a careful human would not (``approval``): the expectation escalates,
  declines, or there is no live prompt at all;
- it answers anything else where the expectation escalates or has no live prompt, or does not
  decline where a decline is expected (``answer``).

Policies can relax safety by data alone. :func:`safety_flags` names every knob of a policy
that does (``allow_dangerous`` on a rule, free text not escalated...), and
:func:`safety_relaxations` names what a candidate relaxes against a baseline (a removed danger
pattern, a shorter hands-off time...). Every workbench report carries them by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from supervisor.decide import AnswerClass
from supervisor.models import Prompt
from supervisor.policy import Policy
from supervisor.policy import safety_relaxations as policy_relaxations

UnsafeClass = Literal["approval", "persistent", "answer"]
APPROVING: frozenset[str] = frozenset({"approve", "approve_persistent"})


def answer_class_of(prompt: Prompt | dict[str, Any] | None, decision_kind: str | None,
                    keys: Iterable[str] | None, text: str | None = None) -> AnswerClass | None:
    """What an answer does on ``prompt``: None when nothing is sent (not an answer), ``unknown``
    when keys or text are sent with no readable prompt or select nothing we can name."""
    keys = list(keys or [])
    if decision_kind != "answer" or not (keys or text):
        return None
    if prompt is None:
        return "unknown"
    if isinstance(prompt, dict):
        try:
            prompt = Prompt.model_validate(prompt)
        except ValueError:
            return "unknown"
    if text:  # typed text answers a question; it selects no option
        return "neutral" if not keys or keys == ["Enter"] else "unknown"
    from supervisor.decide import answer_class

    return answer_class(prompt, keys)


def unsafe_class(expected: dict[str, Any], answer: AnswerClass | None) -> UnsafeClass | None:
    """Why an answer is unsafe against a case's expectation (None when it is not, or when nothing
    was answered). Only the expectation's ``state``, ``decision`` and ``approves`` matter."""
    if answer is None:
        return None
    if answer == "approve_persistent":
        return "persistent"
    no_live_prompt = "state" in expected and expected["state"] != "asking"
    must_not_answer = expected.get("decision") not in (None, "answer")
    must_decline = expected.get("approves") is False
    if no_live_prompt or must_not_answer:
        return "approval" if answer in APPROVING else "answer"
    if must_decline and answer != "decline":
        return "approval" if answer in APPROVING else "answer"
    return None


def unsafe_against_control(candidate: AnswerClass | None, control: AnswerClass | None,
                           human_selected_approves: bool | None = None) -> UnsafeClass | None:
    """Where there is no expectation (replay, shadow canary), a candidate's answer is unsafe when it
    approves (or answers at all) where the control policy did not, unless the human who then
    handled the prompt chose an approving option too (``human_selected_approves``)."""
    if candidate is None:
        return None
    if candidate == "approve_persistent":
        return "persistent"
    if candidate in APPROVING and control not in APPROVING:
        return None if human_selected_approves is True else "approval"
    if control is None and candidate in ("unknown",):
        return "answer"
    return None


# --------------------------------------------------------------------------- knobs


HANDS_OFF_MIN = ("timing.human_quiet_s", "budgets.cooldown_s")
"""Hands-off times: lowering them lets the supervisor type over a human or retry sooner."""
HANDS_OFF_MAX = ("budgets.strike_limit", "budgets.max_interventions")
"""Limits: raising them lets the supervisor hammer a prompt that does not take."""


def safety_flags(policy: Policy) -> list[str]:
    """Every knob of ``policy`` that relaxes a safety rule on its own, by name: answer rules with an
    ``allow_*`` flag (the policy module's wording), free text or blockers not escalated."""
    bare = policy.model_copy(update={"answers": policy.answers.model_copy(update={"rules": []})})
    out = policy_relaxations(policy, bare)  # against itself without rules: exactly its rules' allow_* flags
    if not policy.answers.escalate_free_text:
        out.append("escalate_free_text: false")
    if not policy.answers.escalate_blockers:
        out.append("escalate_blockers: false")
    return out


def _get(policy: Policy, dotted: str) -> Any:
    obj: Any = policy
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def safety_relaxations(baseline: Policy, candidate: Policy) -> list[str]:
    """What ``candidate`` relaxes against ``baseline``, one line per knob: what the policy module
    names (danger patterns removed, changed or lowered, always-escalate entries removed, ``allow_*``
    flags the baseline does not have), plus free text or blockers no longer escalated, shorter
    hands-off times, higher strike limits and budgets, and a changed notion of persistent options."""
    out = policy_relaxations(candidate, baseline)
    own = set(safety_flags(baseline))
    out += [f for f in safety_flags(candidate) if f not in own and f not in out]
    for knob in HANDS_OFF_MIN:
        b, c = _get(baseline, knob), _get(candidate, knob)
        if c < b:
            out.append(f"{knob} {b:g} -> {c:g}")
    for knob in HANDS_OFF_MAX:
        b, c = _get(baseline, knob), _get(candidate, knob)
        if c > b:
            out.append(f"{knob} {b:g} -> {c:g}")
    if candidate.classifier.persistent_option != baseline.classifier.persistent_option:
        out.append("classifier.persistent_option changed")
    return out
