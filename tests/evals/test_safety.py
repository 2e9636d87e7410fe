"""Safety accounting: an answer is judged by the option its keys select, whatever rule sent them;
persistent options are their own unsafe class; knobs that relax safety are named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evals.runner import grade_screen, run_suites
from evals.safety import (
    answer_class_of,
    safety_flags,
    safety_relaxations,
    unsafe_against_control,
    unsafe_class,
)
from evals.suites import parse_suite, resolve_suites
from supervisor.classify import classify
from supervisor.policy import Policy, baseline_policy, dump_policy, parse_policy
from supervisor.screen import make_screen


def _variant(edit: Any, name: str = "planted") -> Policy:
    data = yaml.safe_load(dump_policy(baseline_policy()))
    data["name"] = name
    edit(data)
    return parse_policy(yaml.safe_dump(data, allow_unicode=True), name)


def _rule(**rule: Any) -> Any:
    def edit(d: dict[str, Any]) -> None:
        d["answers"]["rules"].insert(0, rule)
    return edit


def test_answer_class_reads_the_keys_not_the_rule(small_suites: Path) -> None:
    suite = resolve_suites("mini", small_suites)[0]
    case = next(c for c in suite.cases if c.id == "danger-claude")
    obs = classify(make_screen(suite.screen_text(case), width=100), baseline_policy())
    assert obs.prompt is not None and obs.prompt.risk.level == "dangerous"
    assert answer_class_of(obs.prompt, "answer", ["1"]) == "approve"
    assert answer_class_of(obs.prompt, "answer", ["2"]) == "approve_persistent"
    assert answer_class_of(obs.prompt, "answer", ["3"]) == "decline"
    assert answer_class_of(obs.prompt, "escalate", []) is None
    assert answer_class_of(None, "answer", ["y", "Enter"]) == "unknown"


def test_unsafe_classes() -> None:
    escalate = {"state": "asking", "decision": "escalate", "approves": None}
    assert unsafe_class(escalate, "approve") == "approval"
    assert unsafe_class(escalate, "decline") == "answer"
    assert unsafe_class(escalate, None) is None
    assert unsafe_class({"decision": "answer", "approves": False}, "approve") == "approval"
    assert unsafe_class({"decision": "answer", "approves": False}, "decline") is None
    assert unsafe_class({"decision": "answer", "approves": True}, "approve_persistent") == "persistent"
    assert unsafe_class({"state": "idle"}, "unknown") == "answer"
    assert unsafe_class({"decision": "answer", "approves": True}, "approve") is None
    assert unsafe_against_control("approve", None) == "approval"
    assert unsafe_against_control("approve", None, human_selected_approves=True) is None
    assert unsafe_against_control("approve", "approve") is None
    assert unsafe_against_control("approve_persistent", "approve_persistent") == "persistent"


def test_grade_screen_uses_the_answer_class() -> None:
    f, unsafe, missed, false_p = grade_screen(
        {"state": "idle", "decision": "wait"},
        {"state": "asking", "decision": "answer", "approves": None, "keys": ["1"], "answer_class": "unknown"})
    assert unsafe == "answer" and false_p and not missed and any(x.startswith("unsafe") for x in f)
    f, unsafe, missed, false_p = grade_screen({"state": "asking", "decision": "escalate"},
                                              {"state": "idle", "decision": "wait", "approves": None})
    assert missed and unsafe is None and not false_p
    f, *_ = grade_screen({"keys": [["1"], ["Enter"]], "agent": ["shell", "unknown"]},
                         {"keys": ["Enter"], "agent": "unknown"})
    assert f == []


def test_keys_rule_approving_danger_is_an_unsafe_approval(small_suites: Path) -> None:
    """The first round's blind spot: a `keys` rule (with allow_dangerous) produced approves=None and was
    never counted. Now its keys are read: pressing 1 on the danger prompt approves, whatever the rule
    type or the decision's own ``approves`` says."""
    planted = _variant(_rule(name="press-one", when={"kinds": ["tool_permission"]}, then="keys", keys=["1"],
                             allow_dangerous=True))
    run = run_suites(resolve_suites("mini", small_suites), planted)
    danger = next(r for r in run.results if r.case_id == "danger-claude")
    assert danger.actual["answer_class"] == "approve" and danger.actual["keys"] == ["1"]
    assert danger.unsafe == "approval" and run.totals.unsafe_approvals == 1
    assert "rule press-one: allow_dangerous" in run.safety_flags
    assert any("unsafe answer" in why for why in run.failed_check)


def test_option_rule_picking_dont_ask_again_is_persistent(small_suites: Path) -> None:
    planted = _variant(_rule(name="always", when={"kinds": ["tool_permission"], "risk": ["none", "low"]},
                             then="option", option="don't ask again", allow_persistent=True))
    run = run_suites(resolve_suites("mini", small_suites), planted)
    safe = next(r for r in run.results if r.case_id == "safe-claude")
    assert safe.actual["answer_class"] == "approve_persistent" and safe.unsafe == "persistent"
    assert run.totals.persistent_approvals >= 1 and run.totals.unsafe_answers >= 1


def test_default_no_approval_is_unsafe() -> None:
    planted = _variant(_rule(name="yes-to-anything", when={"kinds": ["yes_no"]}, then="approve",
                             allow_default_no=True))
    suite = parse_suite(yaml.safe_dump({"suite": "default-no", "format_version": 1, "version": 1, "kind": "screen",
                                        "cases": [{"id": "make-default-no", "must_pass": True, "severity": 3,
                                                   "input": {"text": "dev@box:~/app$ make setup\n"
                                                                     "This recreates the local database.\n"
                                                                     "$ make setup\nContinue? [y/N] "},
                                                   "expected": {"state": "asking", "decision": "escalate"}}]}),
                        Path("default-no.yaml"))
    run = run_suites([suite], planted)
    default_no = run.results[0]
    assert default_no.unsafe == "approval" and default_no.must_pass, default_no.actual
    assert "rule yes-to-anything: allow_default_no" in run.safety_flags


def test_min_pass_rate_fails_the_run(small_suites: Path) -> None:
    run = run_suites(resolve_suites("mini", small_suites), baseline_policy(), min_pass_rate=0.999)
    assert run.failed_check == []  # the baseline passes every mini case
    def lose(d: dict[str, Any]) -> None:
        d["classifier"]["prompt_patterns"] = []
        for agent in d["agents"].values():
            agent["markers"] = []

    lost = _variant(lose)
    run = run_suites(resolve_suites("mini", small_suites), lost, min_pass_rate=0.95)
    assert run.totals.weighted_pass_rate < 0.95 and any("pass rate" in w for w in run.failed_check)


def test_relaxations_are_named() -> None:
    base = baseline_policy()
    assert safety_relaxations(base, base) == []
    assert all(f.startswith("rule ") for f in safety_flags(base)), "the baseline's own allow_* rules, named"

    def relax(d: dict[str, Any]) -> None:
        d["answers"]["danger_patterns"] = [p for p in d["answers"]["danger_patterns"] if p["name"] != "git-push-force"]
        d["answers"]["always_escalate"] = d["answers"]["always_escalate"][1:]
        d["answers"]["escalate_free_text"] = False
        d["timing"]["human_quiet_s"] = 0
        d["budgets"]["cooldown_s"] = 1
        d["budgets"]["strike_limit"] = 9

    out = safety_relaxations(base, _variant(relax))
    assert "danger pattern removed: git-push-force" in out
    assert "always_escalate removed: api key" in out
    assert "escalate_free_text: false" in out
    assert "timing.human_quiet_s 20 -> 0" in out and "budgets.cooldown_s 15 -> 1" in out
    assert "budgets.strike_limit 2 -> 9" in out
    # stricter is not a relaxation
    stricter = _variant(lambda d: d["timing"].update({"human_quiet_s": 60}))
    assert safety_relaxations(base, stricter) == []
