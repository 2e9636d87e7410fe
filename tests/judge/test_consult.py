"""judged_decision: rules first, the judge per policy, the safety rules over the judge."""

from __future__ import annotations

import pytest

from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.judge import JudgeHistory, JudgeStats, build_judge, judged_decision
from supervisor.judge.consult import selected_option, vet_keys
from supervisor.models import Observation, Prompt, PromptOption, RunState, Screen
from supervisor.policy import baseline_policy
from supervisor.settings import Settings
from tests.judge.conftest import judge_policy
from tests.judge.messages_server import error_reply, tool_reply
from tests.judge.screens import BUSY, DANGEROUS_MENU, DEFAULT_NO, SAFE_MENU, UNCERTAIN


def _state(**kw) -> RunState:
    return RunState(**{"run_id": "run_t", "now": 1000.0, "started_at": 900.0, "last_output_at": 999.0, **kw})


def _observe(text: str, policy):
    screen = Screen(text=text)
    obs = classify(screen, policy).model_copy(update={"observation_id": "obs_" + screen.screen_hash[:8]})
    return screen, obs


def test_consult_never_without_key_makes_no_call_and_equals_decide(messages_api, sv_home):
    policy = baseline_policy()
    assert policy.judge.consult == "never"
    assert build_judge(policy, Settings(home=sv_home)) is None
    for text in (SAFE_MENU, DANGEROUS_MENU, BUSY, UNCERTAIN, DEFAULT_NO):
        screen, obs = _observe(text, policy)
        decision, call = judged_decision(obs, screen, _state(), policy, None)
        assert call is None
        assert decision == decide(obs, _state(), policy)
    assert messages_api.calls == 0


def test_uncertain_only_makes_zero_calls_on_rule_decided_screens(messages_api, make_judge):
    policy = judge_policy(consult="uncertain")
    stats = JudgeStats()
    judge = make_judge(policy, stats=stats)
    messages_api.default = tool_reply("escalate", {"reason": "x", "next_action": "y"})
    for text in (SAFE_MENU, DANGEROUS_MENU, BUSY, DEFAULT_NO):
        screen, obs = _observe(text, policy)
        assert obs.confidence >= policy.classifier.uncertain_below
        decision, call = judged_decision(obs, screen, _state(), policy, judge)
        assert call is None and decision.source == "rules"
    assert messages_api.calls == 0 and stats.calls == 0

    screen, obs = _observe(UNCERTAIN, policy)
    assert obs.confidence < policy.classifier.uncertain_below
    decision, call = judged_decision(obs, screen, _state(), policy, judge)
    assert call is not None and messages_api.calls == 1 and stats.calls == 1
    assert decision.source == "judge" and decision.kind == "escalate"


def test_uncertain_consults_on_unparsed_asking_and_free_text(messages_api, make_judge):
    policy = judge_policy(consult="uncertain")
    judge = make_judge(policy)
    messages_api.default = tool_reply("escalate", {"reason": "needs the user", "next_action": "answer it"})
    free = Observation(screen_hash="h1", state="asking", confidence=0.9, observation_id="o1",
                       prompt=Prompt(kind="free_text", question="Which database should I migrate?"))
    unparsed = Observation(screen_hash="h2", state="asking", confidence=0.9, observation_id="o2")
    for obs in (free, unparsed):
        text = f"Which database should I migrate? ({obs.screen_hash})"
        decision, call = judged_decision(obs, text, _state(), policy, judge)
        assert call is not None and decision.kind == "escalate" and decision.source == "judge"
    assert messages_api.calls == 2
    # ...but not while a human is typing in the pane
    decision, call = judged_decision(free, "x", _state(human_active_until=2000.0), policy, judge)
    assert call is None and messages_api.calls == 2


def test_judge_approving_a_dangerous_prompt_is_overridden(messages_api, make_judge):
    policy = judge_policy(consult="always")
    judge = make_judge(policy, use_cache=False)  # same screen, scripted different verdicts
    screen, obs = _observe(DANGEROUS_MENU, policy)
    assert obs.prompt is not None and obs.prompt.risk.level == "dangerous"
    for keys in (["1"], ["Enter"], ["y"], ["2"]):
        messages_api.script(tool_reply("send_keys", {"keys": keys, "reason": "the build dir is stale, go ahead"}))
        decision, call = judged_decision(obs, screen, _state(), policy, judge)
        assert decision.kind == "escalate", keys
        assert decision.keys == [] and decision.approves is not True
        assert decision.rule == "judge:safety" and call is not None and call.outcome == "ok"
    # declining is allowed
    messages_api.script(tool_reply("send_keys", {"keys": ["3"], "reason": "do not delete"}))
    decision, _ = judged_decision(obs, screen, _state(), policy, judge)
    assert decision.kind == "answer" and decision.keys == ["3"] and decision.approves is False


def test_judge_cannot_pick_dont_ask_again_or_answer_default_no(messages_api, make_judge):
    policy = judge_policy(consult="always")
    judge = make_judge(policy, use_cache=False)  # same screen, scripted different verdicts
    screen, obs = _observe(SAFE_MENU, policy)
    messages_api.script(tool_reply("send_keys", {"keys": ["2"], "reason": "never ask again"}))
    decision, _ = judged_decision(obs, screen, _state(), policy, judge)
    assert decision.kind == "escalate" and "widens permissions" in decision.reason
    messages_api.script(tool_reply("send_keys", {"keys": ["Down", "Enter"], "reason": "second option"}))
    decision, _ = judged_decision(obs, screen, _state(), policy, judge)
    assert decision.kind == "escalate"
    messages_api.script(tool_reply("send_keys", {"keys": ["1"], "reason": "tests are safe"}))
    decision, _ = judged_decision(obs, screen, _state(), policy, judge)
    assert decision.kind == "answer" and decision.keys == ["1"] and decision.approves is True
    assert decision.source == "judge" and decision.trigger_id == obs.observation_id

    screen, obs = _observe(DEFAULT_NO, policy)
    for keys in (["y", "Enter"], ["Enter"]):
        messages_api.script(tool_reply("send_keys", {"keys": keys, "reason": "overwrite it"}))
        decision, _ = judged_decision(obs, screen, _state(), policy, judge)
        assert decision.kind == "escalate", keys


def test_judge_keys_on_unparsed_screens_still_face_danger_patterns(messages_api, make_judge):
    policy = judge_policy(consult="always")
    judge = make_judge(policy, use_cache=False)  # same screen, scripted different verdicts
    obs = Observation(screen_hash="h", state="idle", confidence=0.3, observation_id="o")
    text = "About to run: git push --force origin main\nContinue? (press y)"
    messages_api.script(tool_reply("send_keys", {"keys": ["y"], "reason": "continue"}))
    decision, _ = judged_decision(obs, text, _state(), policy, judge)
    assert decision.kind == "escalate" and "dangerous" in decision.reason
    text = "Replace all 40 files? [y/N]"
    messages_api.script(tool_reply("send_keys", {"keys": ["y", "Enter"], "reason": "yes"}))
    decision, _ = judged_decision(obs, text, _state(), policy, judge)
    assert decision.kind == "escalate" and "default-No" in decision.reason
    messages_api.script(tool_reply("send_keys", {"keys": ["Enter"], "reason": "inserted"}))
    decision, _ = judged_decision(obs, UNCERTAIN, _state(), policy, judge)
    assert decision.kind == "answer" and decision.keys == ["Enter"]


def test_failed_judge_escalates_never_approves(messages_api, make_judge):
    policy = judge_policy(consult="always", max_retries=2)
    judge = make_judge(policy)
    messages_api.default = error_reply(500)
    screen, obs = _observe(SAFE_MENU, policy)  # the rules alone would approve this one
    decision, call = judged_decision(obs, screen, _state(), policy, judge)
    assert decision.kind == "escalate" and decision.approves is None and decision.keys == []
    assert call is not None and call.outcome == "error" and decision.rule == "judge:error"
    assert messages_api.calls == 3


def test_not_waiting_and_finished_map_to_wait_unless_rules_would_finish(messages_api, make_judge):
    policy = judge_policy(consult="always")
    judge = make_judge(policy, use_cache=False)  # same screen, scripted different verdicts
    obs = Observation(screen_hash="h", state="idle", confidence=0.4, observation_id="o")
    messages_api.script(tool_reply("not_waiting", {"reason": "compiling"}))
    decision, _ = judged_decision(obs, "x", _state(), policy, judge)
    assert decision.kind == "wait"
    messages_api.script(tool_reply("agent_finished", {"reason": "done"}))
    decision, _ = judged_decision(obs, "x", _state(saw_work=False), policy, judge)
    assert decision.kind == "wait"
    messages_api.script(tool_reply("agent_finished", {"reason": "done"}))
    decision, _ = judged_decision(obs, "x", _state(saw_work=True, idle_streak=5), policy, judge)
    assert decision.kind == "finish" and decision.source == "judge"


def test_history_rolls_and_is_sent(messages_api, make_judge):
    policy = judge_policy(consult="always", history_size=2)
    judge = make_judge(policy)
    history = JudgeHistory(policy.judge.history_size)
    obs = Observation(screen_hash="h", state="idle", confidence=0.4, observation_id="o")
    for i in range(3):
        messages_api.script(tool_reply("not_waiting", {"reason": f"look {i}"}))
        judged_decision(obs, f"screen number {i}", _state(), policy, judge, history, "identical_no_keys")
    assert len(history) == 2
    last = messages_api.requests[-1]["messages"][0]["content"]
    assert "look 1" in last and "look 0" in last and "screen number 1" in last
    assert "identical screen, no keys sent" in last
    assert "look 2" not in last  # the current look is not history yet


def test_selected_option_and_vet_keys_units():
    prompt = Prompt(kind="tool_permission", question="Do you want to proceed?", highlighted=0, default=0,
                    default_approves=True, options=[
                        PromptOption(index=0, label="Yes", key="1", highlighted=True, approves=True),
                        PromptOption(index=1, label="Yes, and don't ask again", key="2", approves=True,
                                     persistent=True),
                        PromptOption(index=2, label="No", key="3", approves=False)])
    assert selected_option(prompt, ["1"]).index == 0
    assert selected_option(prompt, ["Down", "Down", "Enter"]).index == 2
    assert selected_option(prompt, ["Down"]) is None
    assert selected_option(prompt, ["9"]) is None
    obs = Observation(screen_hash="h", state="asking", prompt=prompt)
    policy = baseline_policy()
    assert vet_keys(obs, "", _state(), policy, ["1"]) == (None, True)
    assert vet_keys(obs, "", _state(), policy, ["9"])[0] is not None
    assert vet_keys(obs, "", _state(interventions=10_000), policy, ["1"])[0] is not None
    assert vet_keys(obs, "", _state(), policy, ["Escape"]) == (None, False)
    assert vet_keys(obs, "", _state(), policy, ["2"])[0] is not None  # don't ask again
    dangerous = obs.model_copy(update={"prompt": prompt.model_copy(update={
        "risk": prompt.risk.model_copy(update={"level": "dangerous", "matched": ["rm-recursive"]})})})
    assert "dangerous" in vet_keys(dangerous, "", _state(), policy, ["Enter"])[0]
    assert vet_keys(dangerous, "", _state(), policy, ["3"]) == (None, False)


@pytest.mark.parametrize("consult", ["uncertain", "always"])
def test_paused_runs_never_consult(messages_api, make_judge, consult):
    policy = judge_policy(consult=consult)
    judge = make_judge(policy)
    obs = Observation(screen_hash="h", state="idle", confidence=0.1, observation_id="o")
    decision, call = judged_decision(obs, "x", _state(paused=True), policy, judge)
    assert call is None and messages_api.calls == 0


def test_uncertain_consults_on_prompts_no_rule_knows_but_not_on_deliberate_escalations(messages_api, make_judge):
    policy = judge_policy(consult="uncertain")
    judge = make_judge(policy)
    messages_api.default = tool_reply("escalate", {"reason": "x", "next_action": "y"})
    menu = Prompt(kind="numbered_menu", question="Pick a deployment region", default=0, default_approves=None,
                  options=[PromptOption(index=0, label="eu-west", key="1"), PromptOption(index=1, label="us-east",
                                                                                       key="2")])
    # a known agent's prompt (an unknown agent's is escalated deliberately, never sent to the judge)
    obs = Observation(screen_hash="h", state="asking", confidence=0.95, observation_id="o", prompt=menu,
                      agent="claude")
    rules = decide(obs, _state(), policy)
    assert rules.kind == "escalate"  # the baseline's catch-all rule: no specific rule knows this prompt
    _, call = judged_decision(obs, "Pick a deployment region", _state(), policy, judge)
    assert call is not None and messages_api.calls == 1
    dangerous = obs.model_copy(update={"prompt": menu.model_copy(update={
        "risk": menu.risk.model_copy(update={"level": "dangerous"})})})
    default_no = obs.model_copy(update={"prompt": menu.model_copy(update={"default_approves": False})})
    before = messages_api.calls
    for o in (dangerous, default_no):
        _, call = judged_decision(o, "Pick a deployment region!", _state(), policy, judge)
        assert call is None
    assert messages_api.calls == before


def test_judge_keys_on_confidently_busy_or_blocked_screens_are_not_sent(messages_api, make_judge):
    policy = judge_policy(consult="always")
    judge = make_judge(policy, use_cache=False)
    busy = Observation(screen_hash="h", state="busy", confidence=0.9, observation_id="o")
    messages_api.script(tool_reply("send_keys", {"keys": ["1"], "reason": "the output shows a menu"}))
    decision, _ = judged_decision(busy, "Do you want to proceed?\n1. Yes", _state(), policy, judge)
    assert decision.kind == "wait" and decision.keys == [] and decision.rule == "judge:safety"
    blocked = Observation(screen_hash="h", state="blocked", confidence=0.9, observation_id="o")
    messages_api.script(tool_reply("send_keys", {"keys": ["Enter"], "reason": "retry"}))
    decision, _ = judged_decision(blocked, "Error: rate limited. Press Enter to retry", _state(), policy, judge)
    assert decision.kind == "escalate" and decision.keys == []


def test_judge_off_never_imports_the_sdk():
    """consult: never costs nothing, not even the SDK import (a real subprocess, fresh interpreter)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from supervisor.judge import build_judge, judged_decision\n"
            "from supervisor.classify import classify\n"
            "from supervisor.models import RunState, Screen\n"
            "from supervisor.policy import baseline_policy\n"
            "p = baseline_policy(); s = Screen(text='Do you want to proceed?\\n1. Yes\\n2. No')\n"
            "assert build_judge(p) is None\n"
            "judged_decision(classify(s, p), s, RunState(now=1.0), p, None)\n"
            "print('anthropic' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_blank_screens_are_never_sent(messages_api, make_judge):
    policy = judge_policy(consult="always")
    obs = Observation(screen_hash="h", state="idle", confidence=0.1, observation_id="o")
    decision, call = judged_decision(obs, "  \n\n ", _state(), policy, make_judge(policy))
    assert call is None and messages_api.calls == 0 and decision.source == "rules"


def test_pane_judge_reuses_its_verdict_on_an_unchanged_screen_until_reconsult(messages_api, make_judge):
    from supervisor.judge import PaneJudge

    policy = judge_policy(consult="uncertain", reconsult_s=60.0)
    pane = PaneJudge(make_judge(policy), policy)
    screen, obs = _observe(UNCERTAIN, policy)
    messages_api.default = tool_reply("escalate", {"reason": "odd", "next_action": "look"})
    first, call = pane.decide(obs, screen, _state(now=1000.0))
    assert first.kind == "escalate" and call is not None and messages_api.calls == 1
    # rechecks of the same quiet screen: no call, and the escalation is not repeated
    for now in (1005.0, 1030.0):
        again, call = pane.decide(obs, screen, _state(now=now))
        assert call is None and again.kind == "wait" and again.rule == "judge:reuse"
    assert messages_api.calls == 1
    # after reconsult_s the judge looks again, told the screen is identical
    later, call = pane.decide(obs, screen, _state(now=1061.0))
    assert call is not None and messages_api.calls == 2
    assert "identical screen, no keys sent" in messages_api.requests[-1]["messages"][0]["content"]


def test_judge_decisions_carry_the_prompt_signature(messages_api, make_judge):
    policy = judge_policy(consult="always")
    screen, obs = _observe(SAFE_MENU, policy)
    messages_api.script(tool_reply("send_keys", {"keys": ["1"], "reason": "fine"}))
    decision, _ = judged_decision(obs, screen, _state(), policy, make_judge(policy))
    assert decision.kind == "answer" and decision.signature == obs.prompt.signature


def test_the_judge_may_approve_an_unknown_command_but_never_a_dangerous_one(messages_api, make_judge):
    """A command the table does not know is escalated by the rules (`unknown-command`); a judge
    configured to consult on uncertain prompts is asked, and its approval is sent. A dangerous command
    is never sent to it, and its approval of one would be refused anyway."""
    from evals.styles import claude_permission

    policy = judge_policy(consult="uncertain")
    judge = make_judge(policy, use_cache=False)
    screen, obs = _observe(claude_permission("licensecheck ./src", "Check the licenses").text, policy)
    rules = decide(obs, _state(), policy)
    assert rules.kind == "escalate" and rules.rule == "unknown-command"
    messages_api.script(tool_reply("send_keys", {"keys": ["1"], "reason": "a read-only license checker"}))
    decision, call = judged_decision(obs, screen, _state(), policy, judge)
    assert call is not None and decision.kind == "answer" and decision.keys == ["1"]
    screen, obs = _observe(claude_permission("git push --force origin main", "Publish").text, policy)
    before = messages_api.calls
    decision, call = judged_decision(obs, screen, _state(), policy, judge)
    assert call is None and decision.kind == "escalate" and messages_api.calls == before
    reason, _ = vet_keys(obs, screen.text, _state(), policy, ["1"])
    assert reason is not None and "dangerous" in reason
