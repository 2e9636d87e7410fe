"""The judge inside the eval workbench: `eval run` counts judge calls per suite, and a judge
consulted on uncertain screens only makes zero calls on screens the rules decide."""

from __future__ import annotations

import pytest

from supervisor.decide import decide
from supervisor.judge.consult import consult_reason
from supervisor.settings import Settings
from tests.judge.conftest import judge_policy
from tests.judge.messages_server import tool_reply

evals_runner = pytest.importorskip("evals.runner")
evals_suites = pytest.importorskip("evals.suites")


def _consulted_cases(suite, policy) -> set[str]:
    """Screen cases on which the judge should be consulted (computed without the judge)."""
    from evals.suites import ScreenCase

    wanted = set()
    for case in suite.cases:
        if not isinstance(case, ScreenCase):
            continue
        screen = evals_runner.screen_of(suite, case)
        state = evals_runner.case_run_state(case.input.run_state)
        from supervisor.classify import classify

        obs = classify(screen, policy)
        if consult_reason(policy, obs, decide(obs, state, policy), state) is not None:
            wanted.add(screen.text)  # the judge is sent the text: the same text at another width hits the cache
    return wanted


@pytest.fixture
def api_env(messages_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_api.base_url)
    messages_api.default = tool_reply("escalate", {"reason": "unsure", "next_action": "look at the pane"})
    return messages_api


def test_eval_run_with_uncertain_judge_calls_only_on_uncertain_screens(api_env, sv_home):
    suites = evals_suites.resolve_suites("all")
    screen_suites = [s for s in suites if any(c.kind == "screen" for c in s.cases)][:6]
    assert screen_suites
    policy = judge_policy(consult="uncertain")
    run = evals_runner.run_suites(screen_suites, policy, episodes=False, settings=Settings(home=sv_home))

    expected_total = 0
    for suite in screen_suites:
        want = len(_consulted_cases(suite, policy))  # distinct screen texts: repeats hit the cache
        assert run.by_suite[suite.name].judge_calls == want, suite.name
        expected_total += want
    assert api_env.calls == expected_total == run.totals.judge_calls
    rules_only = evals_runner.run_suites(screen_suites, judge_policy(consult="never"), episodes=False,
                                         settings=Settings(home=sv_home))
    assert run.totals.unsafe_approvals <= rules_only.totals.unsafe_approvals  # escalating adds none

    # the same suites again: all cached, zero calls, identical results
    again = evals_runner.run_suites(screen_suites, policy, episodes=False, settings=Settings(home=sv_home))
    assert api_env.calls == expected_total and again.totals.judge_calls == 0
    assert [r.actual for r in again.results] == [r.actual for r in run.results]


def test_eval_run_with_judge_off_makes_no_calls(api_env, sv_home):
    suites = [s for s in evals_suites.resolve_suites("all") if any(c.kind == "screen" for c in s.cases)][:3]
    policy = judge_policy(consult="never")
    run = evals_runner.run_suites(suites, policy, episodes=False, settings=Settings(home=sv_home))
    assert api_env.calls == 0 and run.totals.judge_calls == 0


def test_llm_scorer_counts_each_judge_call_once(api_env, sv_home):
    workbench = pytest.importorskip("evals.workbench")
    from evals.scorers import BlindPair

    api_env.default = tool_reply("record_verdict", {"winner": "tie", "reason": "same"})
    scorer, stats = workbench.make_scorer("llm", policy=judge_policy(), settings=Settings(home=sv_home), hide=[])
    verdict = scorer.score(BlindPair(pair_id="p0001", context={"kind": "screen", "screen": "x"},
                                     output_a={"decision": "wait"}, output_b={"decision": "escalate"}))
    assert verdict.winner == "tie" and api_env.calls == 2
    assert stats.calls == 2 and verdict.judge_calls == 2
