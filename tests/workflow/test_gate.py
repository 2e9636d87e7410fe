"""The pure workflow gate: decisions from checkpoints, verifier results, budgets and the finish gate."""

from __future__ import annotations

from supervisor.policy import Policy
from supervisor.workflow.checkpoint import CheckpointEvent, CheckpointTracker, format_checkpoint
from supervisor.workflow.gate import decide_after_review, decide_checkpoint, render
from supervisor.workflow.spec import parse_spec
from supervisor.workflow.state import Review, VerifierResult, initial_state

SPEC = parse_spec("""\
name: gate
steps:
  - id: one
    objective: first
    verify:
      - {type: command, run: "true"}
  - id: two
    objective: second
    verify:
      - {type: command, run: "pytest", id: tests}
  - id: three
    objective: third
acceptance:
  required_evidence:
    - {type: passed, verifier: tests}
    - {type: artifact, path: README.md, id: readme}
  forbidden_states: [failing_tests]
  must_review_by: human
""")
POLICY = Policy()


def cp(seq: int, status: str, node: str | None, **extra: object) -> CheckpointEvent:
    body = {"checkpoint_seq": seq, "status": status, "current_node": node, "summary": "s", **extra}
    ev = CheckpointTracker().admit(format_checkpoint(body))
    assert ev is not None
    ev.checkpoint_id = f"ev{seq}"
    return ev


def res(vid: str, passed: bool, output: str = "", node: str | None = None) -> VerifierResult:
    return VerifierResult(verifier=vid, type="command", passed=passed, output=output, detail="exit", node=node)


def test_working_continues_and_blocked_escalates() -> None:
    st = initial_state(SPEC, "run_x")
    d = decide_checkpoint(cp(1, "working", "one"), st, SPEC, {}, POLICY)
    assert d.kind == "continue" and d.text is None and d.trigger_id == "ev1"
    d = decide_checkpoint(cp(2, "blocked", "one", needs=["creds"]), st, SPEC, {}, POLICY)
    assert d.kind == "escalate" and "creds" in d.reason and "runs resume run_x" in d.next_action
    d = decide_checkpoint(cp(3, "working", "one", question_for_supervisor="which db?"), st, SPEC, {}, POLICY)
    assert d.kind == "escalate" and "which db?" in d.reason


def test_step_done_verifies_then_continues_with_next_step() -> None:
    st = initial_state(SPEC, "r")
    c = cp(1, "step_done", "one")
    d = decide_checkpoint(c, st, SPEC, {}, POLICY)
    assert d.kind == "verify" and d.verifier_ids == ["one.command1"] and d.trigger_id == "ev1"
    d = decide_checkpoint(c, st, SPEC, {"one.command1": res("one.command1", True)}, POLICY)
    assert d.kind == "continue" and d.goto == "two" and d.mark_done and d.handoff_kind == "next_step"
    assert "two: second" in d.text and d.source == "workflow"


def test_failure_retries_with_output_then_escalates_when_budget_spent() -> None:
    st = initial_state(SPEC, "r")
    c = cp(1, "step_done", "two")
    d = decide_checkpoint(c, st, SPEC, {"tests": res("tests", False, "FAILED test_x - assert 1 == 2")}, POLICY)
    assert d.kind == "retry" and "FAILED test_x - assert 1 == 2" in d.text and d.handoff_kind == "retry"
    st.node("two").retries = POLICY.budgets.max_retries_per_node
    d = decide_checkpoint(c, st, SPEC, {"tests": res("tests", False)}, POLICY)
    assert d.kind == "escalate" and d.rule == "workflow:retries_exhausted"
    st.node("two").retries = 0
    st.interventions = 10
    tight = Policy.model_validate({"budgets": {"max_interventions": 10}})
    d = decide_checkpoint(c, st, SPEC, {"tests": res("tests", False)}, tight)
    assert d.kind == "escalate" and d.rule == "workflow:budget"


def test_finish_gate_checks_acceptance_then_holds_for_review() -> None:
    st = initial_state(SPEC, "r")
    for n in ("one", "two"):
        st.node(n).status = "done"
    st.results["tests"] = res("tests", True)
    c = cp(5, "workflow_done", "three")
    d = decide_checkpoint(c, st, SPEC, {}, POLICY)
    assert d.kind == "verify" and d.verifier_ids == ["readme"]
    d = decide_checkpoint(c, st, SPEC, {"readme": res("readme", False, "README.md does not exist", "acceptance")},
                          POLICY)
    assert d.kind == "retry" and "README.md does not exist" in d.text
    d = decide_checkpoint(c, st, SPEC, {"readme": res("readme", True, node="acceptance")}, POLICY)
    assert d.kind == "escalate" and d.hold == "review" and "runs review r --by human" in d.next_action
    # after the hold is folded in and a review arrives, the finish goes through
    st.node("three").status = "done"
    st.results["readme"] = res("readme", True, node="acceptance")
    st.hold, st.hold_checkpoint_id = "review", "ev5"
    assert decide_after_review(SPEC, st, POLICY) is None
    st.reviews.append(Review(by="human", at=1.0))
    d = decide_after_review(SPEC, st, POLICY)
    assert d is not None and d.kind == "finish" and d.trigger_id == "ev5"


def test_workflow_done_too_early_hands_the_next_undone_step() -> None:
    st = initial_state(SPEC, "r")
    d = decide_checkpoint(cp(1, "workflow_done", "one"), st, SPEC, {"one.command1": res("one.command1", True)},
                          POLICY)
    assert d.kind == "continue" and d.goto == "two" and d.rule == "workflow:next_undone_step"


def test_failing_tests_forbidden_state_refuses_finish() -> None:
    st = initial_state(SPEC, "r")
    for n in ("one", "two"):
        st.node(n).status = "done"
    st.results["tests"] = res("tests", False)
    d = decide_checkpoint(cp(5, "workflow_done", "three"), st, SPEC, {}, POLICY)
    assert d.kind == "escalate" and "failing_tests" in d.reason


def test_branches_and_malformed() -> None:
    spec = parse_spec("""\
steps:
  - id: probe
    verify: [{type: command, run: "true", id: fast_ok}]
  - id: pick
    kind: decision
    branches:
      - {id: quick, next: ship, when_verifier: fast_ok}
      - {id: slow, next: rework, default: true}
  - id: rework
  - id: ship
""")
    st = initial_state(spec, "r")
    st.results["fast_ok"] = res("fast_ok", True)
    st.node("probe").status = "done"
    d = decide_checkpoint(cp(2, "step_done", "pick"), st, spec, {}, POLICY)
    assert d.kind == "branch" and d.branch_id == "quick" and d.goto == "ship" and "quick" in d.text
    bad = CheckpointTracker().admit("<checkpoint>nonsense here</checkpoint>")
    assert bad is not None
    assert decide_checkpoint(bad, st, spec, {}, POLICY).kind == "wait"


def test_render_leaves_unknown_placeholders() -> None:
    assert render("{a} and {b}", a=1) == "1 and {b}"


def test_gate_is_deterministic() -> None:
    st = initial_state(SPEC, "r")
    c = cp(1, "step_done", "two")
    r = {"tests": res("tests", False, "boom")}
    a = decide_checkpoint(c, st, SPEC, r, POLICY).model_dump()
    b = decide_checkpoint(c, st, SPEC, r, POLICY).model_dump()
    assert a == b


def test_retry_always_carries_the_output_even_with_a_custom_template() -> None:
    pol = Policy.model_validate({"templates": {"retry": "Step {step_id} is not done yet."}})
    d = decide_checkpoint(cp(1, "step_done", "two"), initial_state(SPEC, "r"), SPEC,
                          {"tests": res("tests", False, "E   assert 1 == 2")}, pol)
    assert d.kind == "retry" and d.text.startswith("Step two is not done yet.") and "E   assert 1 == 2" in d.text


def test_high_risk_requires_a_human_review() -> None:
    spec = parse_spec("steps:\n  - id: only\nacceptance:\n  risk_class: high\n")
    st = initial_state(spec, "r")
    d = decide_checkpoint(cp(1, "workflow_done", "only"), st, spec, {}, POLICY)
    assert d.kind == "escalate" and d.hold == "review" and "--by human" in d.next_action
    low = parse_spec("steps:\n  - id: only\n")
    assert decide_checkpoint(cp(1, "workflow_done", "only"), initial_state(low, "r"), low, {}, POLICY).kind == "finish"


def test_decide_on_pause_is_pure_and_timed() -> None:
    from supervisor.workflow.gate import decide_on_pause

    pol = Policy.model_validate({"pause": {"mode": "notify_then_ai", "ai_after_s": 60}})
    st = initial_state(SPEC, "r")
    st.paused, st.paused_at, st.pause_reason, st.pause_trigger_id = True, 1000.0, "needs creds", "ev9"
    assert decide_on_pause(SPEC, st, pol, 1059.0) is None
    d = decide_on_pause(SPEC, st, pol, 1060.0)
    assert d is not None and d.kind == "continue" and d.trigger_id == "ev9" and "needs creds" in d.text
    st.ai_tried_pause_at, st.ai_tries, st.ai_last_try_at = 1000.0, 1, 1060.0
    assert decide_on_pause(SPEC, st, pol, 5000.0) is None  # max_auto_interventions: 1 (the default)
    twice = Policy.model_validate({"pause": {"mode": "notify_then_ai", "ai_after_s": 60, "max_auto_interventions": 2}})
    assert decide_on_pause(SPEC, st, twice, 1119.0) is None  # ai_after_s after the last try, not the pause
    again = decide_on_pause(SPEC, st, twice, 1120.0)
    assert again is not None and "(try 2 of 2)" in again.reason
    st.ai_tries = 2
    assert decide_on_pause(SPEC, st, twice, 9000.0) is None
    st.ai_tried_pause_at = None
    assert decide_on_pause(SPEC, st, POLICY, 5000.0) is None  # notify_only
    st.hold = "review"
    assert decide_on_pause(SPEC, st, pol, 5000.0) is None  # a held finish waits for its reviewer


def test_re_reported_done_step_hands_nothing_new() -> None:
    st = initial_state(SPEC, "r")
    st.node("one").status = "done"
    st.current_node = "two"
    d = decide_checkpoint(cp(4, "step_done", "one"), st, SPEC, {"one.command1": res("one.command1", True)}, POLICY)
    assert d.kind == "continue" and d.text is None and d.rule == "workflow:already_done"


def test_done_for_a_node_outside_the_plan_escalates_instead_of_verifying_the_current_one() -> None:
    st = initial_state(SPEC, "run_u")
    d = decide_checkpoint(cp(1, "step_done", "deploy"), st, SPEC, {}, POLICY)
    assert d.kind == "escalate" and d.rule == "workflow:unknown_node" and "'deploy'" in d.reason
    # A checkpoint that names no node at all still means the current one.
    d = decide_checkpoint(cp(2, "step_done", None), st, SPEC, {}, POLICY)
    assert d.kind == "verify"
