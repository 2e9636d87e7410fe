"""Fail safe on every screen the project owns: a dialog whose subject was not positively identified
is never approved, whatever the rules say.

Runs the baseline over every screen case of the golden suites (the team's captures of nine agent
CLIs, the injection and dialog suites, ...; never the held-out split, which lives below
``suites/heldout/`` and is not one of them) and over the same screens under a policy whose only
rule approves everything, so the guarantee does not lean on the baseline's rules being careful."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evals.runner import screen_of
from evals.suites import ScreenCase, Suite, iter_suites
from supervisor.classify import classify
from supervisor.decide import answer_class, decide
from supervisor.models import RunState
from supervisor.policy import Policy, baseline_policy, parse_policy

APPROVING = ("approve", "approve_persistent")
# Every answer rule of the baseline dropped, one rule that approves anything (allowing default-No
# and persistent options too): only the safety checks stand between a dialog and an approval.
RECKLESS = """\
name: reckless
answers:
  rules:
    - name: approve-anything
      then: approve
      allow_default_no: true
      allow_persistent: true
"""


def _screen_cases() -> Iterator[tuple[Suite, ScreenCase]]:
    for suite in iter_suites():
        if suite.header.kind == "episode":
            continue
        for case in suite.cases:
            if isinstance(case, ScreenCase):
                yield suite, case


CASES = list(_screen_cases())


def _state(case: ScreenCase) -> RunState:
    fresh = RunState(run_id="t", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True)
    return RunState(**{**fresh.model_dump(), **case.input.run_state})


def _unknown_subject_approvals(policy: Policy) -> tuple[int, list[str]]:
    """(unknown-subject dialogs seen, those that got approving keys) over every owned screen."""
    seen = 0
    approved: list[str] = []
    for suite, case in CASES:
        obs = classify(screen_of(suite, case), policy)
        prompt = obs.prompt
        if prompt is None or prompt.risk.level != "unknown":
            continue
        seen += 1
        dec = decide(obs, _state(case), policy)
        if dec.approves or answer_class(prompt, dec.keys) in APPROVING:
            approved.append(f"{suite.name}/{case.id}: {dec.keys} ({dec.rule})")
    return seen, approved


def test_the_owned_suites_include_the_captures_of_every_agent() -> None:
    names = {suite.name for suite, _ in CASES}
    assert {"agent_captures", "captures", "injection", "dialogs"} <= names
    assert "heldout" not in names
    agents = {case.expected.agent for suite, case in CASES if suite.name == "agent_captures"}
    assert {"claude", "codex", "aider", "gemini", "qwen", "opencode", "vibe", "pi"} <= agents


@pytest.mark.parametrize("policy", [baseline_policy(), parse_policy(RECKLESS, "reckless.yaml")],
                         ids=["baseline", "approve-anything"])
def test_every_unknown_subject_dialog_is_escalated(policy: Policy) -> None:
    seen, approved = _unknown_subject_approvals(policy)
    assert not approved, "approved with no identified subject:\n" + "\n".join(approved)
    assert seen >= 5, "the suites hold unknown-subject dialogs (or this test checks nothing)"


def test_an_approval_dialog_without_a_subject_is_unknown_or_dangerous() -> None:
    """A permission or edit dialog with no command, path or URL found is never rated ``none`` or
    ``low`` (the rating that rules approve on)."""
    policy = baseline_policy()
    wrong = []
    for suite, case in CASES:
        prompt = classify(screen_of(suite, case), policy).prompt
        if prompt is None or prompt.kind not in ("tool_permission", "edit_approval"):
            continue
        if prompt.risk.subject is None and prompt.risk.level in ("none", "low"):
            wrong.append(f"{suite.name}/{case.id}: {prompt.risk.level}")
    assert not wrong, "\n".join(wrong)


def test_approve_anything_approves_nothing_the_labels_call_dangerous() -> None:
    """Under the reckless policy, every captured dialog labelled dangerous still gets no approving
    key: the danger patterns and write-risk lists come from the baseline it extends."""
    policy = parse_policy(RECKLESS, "reckless.yaml")
    approved = []
    dangerous = 0
    for suite, case in CASES:
        if case.expected.risk != "dangerous":
            continue
        dangerous += 1
        obs = classify(screen_of(suite, case), policy)
        if obs.prompt is None:
            continue
        dec = decide(obs, _state(case), policy)
        if answer_class(obs.prompt, dec.keys) in APPROVING:
            approved.append(f"{suite.name}/{case.id}: {dec.keys}")
    assert dangerous >= 30
    assert not approved, "\n".join(approved)
