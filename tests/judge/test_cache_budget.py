"""Cache (replays make no calls), budgets (per run, per day, persisted), and the warehouse record."""

from __future__ import annotations

import json
import time

import pytest

from supervisor.classify import classify
from supervisor.journal import open_run_journal
from supervisor.judge import JudgeStats, PaneJudge, judged_decision
from supervisor.judge.budget import JudgeBudget, utc_day
from supervisor.judge.cache import JudgeCache
from supervisor.models import RunState, Screen
from supervisor.settings import Settings
from tests.judge.conftest import judge_policy
from tests.judge.messages_server import error_reply, tool_reply
from tests.judge.screens import BUSY, DANGEROUS_MENU, SAFE_MENU, UNCERTAIN, UNCERTAIN_2

EPISODE = [UNCERTAIN, UNCERTAIN, SAFE_MENU, DANGEROUS_MENU, BUSY, UNCERTAIN_2]


def _replay(policy, judge, run_id: str = "run_r"):
    """Drive the judge over a recorded episode the way the runner does (one PaneJudge per pane)."""
    pane = PaneJudge(judge, policy)
    decisions, calls = [], []
    for i, text in enumerate(EPISODE):
        screen = Screen(text=text)
        obs = classify(screen, policy).model_copy(update={"observation_id": f"obs_{i}"})
        state = RunState(run_id=run_id, now=1000.0 + i, started_at=900.0, last_output_at=999.0 + i)
        decision, call = pane.decide(obs, screen, state)
        decisions.append(decision)
        calls.append(call)
    return decisions, calls


def _scripted(body):
    """Answer by what the screen shows, so the first run gets a mix of verdicts."""
    user = body["messages"][0]["content"]
    if "next disk" in user:
        return tool_reply("send_keys", {"keys": ["Enter"], "reason": "disk inserted"})
    if "rm -rf" in user:
        return tool_reply("send_keys", {"keys": ["1"], "reason": "approve"})
    if "pytest" in user:
        return tool_reply("send_keys", {"keys": ["1"], "reason": "tests are fine"})
    return tool_reply("not_waiting", {"reason": "working"})


def test_replay_hits_the_cache_with_zero_calls_and_identical_decisions(messages_api, make_judge):
    policy = judge_policy(consult="always")
    messages_api.default = _scripted
    first_stats = JudgeStats()
    decisions1, calls1 = _replay(policy, make_judge(policy, stats=first_stats))
    made = messages_api.calls
    assert made == len(EPISODE) and first_stats.calls == made and first_stats.cost_usd > 0
    assert all(c is not None and not c.cache_hit for c in calls1)
    assert decisions1[3].kind == "escalate"  # the judge's approval of rm -rf was overridden
    hints = [body["messages"][0]["content"].split("\n")[0] for body in messages_api.requests]
    assert hints[:3] == ["Change since your previous look: first look at this pane",
                         "Change since your previous look: keys sent and screen unchanged — your previous "
                         "action did not work",
                         "Change since your previous look: keys sent and screen changed"]
    assert "disk inserted" in messages_api.requests[1]["messages"][0]["content"]  # history of the first look

    # A new judge (as after a restart, or in an eval) with no key and a server that only fails.
    messages_api.default = error_reply(500)
    replay_stats = JudgeStats()
    decisions2, calls2 = _replay(policy, make_judge(policy, stats=replay_stats, api_key=None))
    assert messages_api.calls == made  # zero HTTP calls
    assert [d.model_dump() for d in decisions2] == [d.model_dump() for d in decisions1]
    assert all(c is not None and c.cache_hit and c.cost_usd == 0 and c.attempts == 0 for c in calls2)
    assert [c.request_hash for c in calls2] == [c.request_hash for c in calls1]
    assert replay_stats.as_dict()["judge_calls"] == 0 and replay_stats.cache_hits == len(EPISODE)


def test_cache_key_covers_model_prompt_hint_and_history(messages_api, make_judge):
    messages_api.default = tool_reply("not_waiting", {"reason": "x"})
    base = judge_policy()
    hashes = set()
    for policy, hint in [(base, "first_look"), (base, "keys_changed"), (judge_policy(model="claude-haiku-4-5"), "first_look"),
                         (judge_policy(screen_chars=300), "first_look")]:
        hashes.add(make_judge(policy).judge(UNCERTAIN, hint, []).call.request_hash)
    assert len(hashes) == 4 and messages_api.calls == 4
    # identical request: a hit
    verdict = make_judge(base).judge(UNCERTAIN, "first_look", [])
    assert verdict.call.cache_hit and messages_api.calls == 4


def test_failures_are_not_cached(messages_api, make_judge):
    policy = judge_policy(max_retries=0)
    messages_api.script(error_reply(500), tool_reply("not_waiting", {"reason": "ok now"}))
    assert make_judge(policy).judge(UNCERTAIN, "first_look", []).action == "escalate"
    verdict = make_judge(policy).judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "not_waiting" and not verdict.call.cache_hit and messages_api.calls == 2


def test_torn_cache_entry_is_a_miss(tmp_path):
    cache = JudgeCache(tmp_path)
    cache.put("ab" + "0" * 62, {"r": 1}, {"tool": "not_waiting", "input": {"reason": "x"}})
    assert len(cache) == 1 and cache.get("ab" + "0" * 62) is not None
    (tmp_path / "ab" / ("ab" + "0" * 62 + ".json")).write_text('{"format_version": 1, "requ')
    assert cache.get("ab" + "0" * 62) is None


def _expensive():
    return tool_reply("not_waiting", {"reason": "working"}, input_tokens=100_000, output_tokens=0)  # $0.30 on sonnet


def test_run_budget_exhaustion_escalates_without_calling(messages_api, make_judge):
    policy = judge_policy(max_tokens=16, budget_usd_per_run=0.1, budget_usd_per_day=100.0)
    stats = JudgeStats()
    judge = make_judge(policy, stats=stats)
    messages_api.default = _expensive()
    assert judge.judge(UNCERTAIN, "first_look", [], run_id="run_a").action == "not_waiting"
    verdict = judge.judge(UNCERTAIN_2, "first_look", [], run_id="run_a")
    assert verdict.action == "escalate" and verdict.call.outcome == "budget_exceeded"
    assert "budget" in verdict.reason and "spent" in verdict.reason and "run" in verdict.reason
    assert messages_api.calls == 1 and stats.refused == 1
    # the budget is per run: another run may still call
    assert judge.judge(UNCERTAIN_2, "first_look", [], run_id="run_b").action == "not_waiting"
    assert messages_api.calls == 2
    # cache hits stay free and allowed beyond the budget
    assert judge.judge(UNCERTAIN, "first_look", [], run_id="run_a").call.cache_hit


def test_zero_budget_never_calls(messages_api, make_judge):
    policy = judge_policy(budget_usd_per_run=0.0)
    obs_screen = Screen(text=UNCERTAIN)
    obs = classify(obs_screen, policy)
    decision, call = judged_decision(obs, obs_screen, RunState(run_id="run_z", now=1.0), policy, make_judge(policy))
    assert decision.kind == "escalate" and "budget" in decision.reason
    assert call is not None and call.outcome == "budget_exceeded" and messages_api.calls == 0


def test_day_budget_is_persisted_across_restarts(messages_api, make_judge, sv_home):
    policy = judge_policy(max_tokens=16, budget_usd_per_run=100.0, budget_usd_per_day=0.5)
    messages_api.default = _expensive()
    judge = make_judge(policy)
    judge.judge(UNCERTAIN, "first_look", [], run_id="run_1")
    judge.judge(UNCERTAIN_2, "first_look", [], run_id="run_1")
    assert messages_api.calls == 2

    # "restart": fresh objects over the same home see today's spend in the ledger
    ledger = JudgeBudget(Settings(home=sv_home).home / "judge" / "spend", policy.judge)
    assert ledger.spent_today() == pytest.approx(0.6)
    assert ledger.spent_run("run_1") == pytest.approx(0.6)
    verdict = make_judge(policy).judge(BUSY, "first_look", [], run_id="run_2")
    assert verdict.action == "escalate" and verdict.call.outcome == "budget_exceeded"
    assert "today" in verdict.reason and messages_api.calls == 2
    day_file = sv_home / "judge" / "spend" / f"{utc_day(time.time())}.jsonl"
    lines = [json.loads(x) for x in day_file.read_text().splitlines()]
    assert [x["run_id"] for x in lines] == ["run_1", "run_1"]


def test_ledger_survives_a_torn_line(tmp_path):
    policy = judge_policy()
    budget = JudgeBudget(tmp_path, policy.judge)
    budget.record("run_1", 0.25)
    with open(tmp_path / f"{utc_day(time.time())}.jsonl", "a") as fh:
        fh.write('{"run_id": "run_1", "cost_')  # a crash mid-write
    budget.record("run_1", 0.5)
    assert budget.spent_today() == pytest.approx(0.75)


def test_judge_call_is_journaled_and_lands_in_the_warehouse(messages_api, make_judge, sv_home):
    from supervisor.warehouse import open_warehouse

    policy = judge_policy()
    messages_api.script(tool_reply("not_waiting", {"reason": "busy"}, input_tokens=2000, output_tokens=100))
    verdict = make_judge(policy).judge(UNCERTAIN, "first_look", [], run_id="run_wh")
    settings = Settings(home=sv_home)
    with open_run_journal(settings.journals_dir, "run_wh") as journal:
        journal.append("judge_call", verdict.call)
    with open_warehouse(settings.warehouse) as wh:
        wh.migrate()
        wh.ingest_dir(settings.journals_dir)
        rows = wh.judge_calls_df("run_wh").to_dicts()
    assert len(rows) == 1
    row = rows[0]
    assert row["judge_call_id"] == verdict.call.judge_call_id and row["model"] == policy.judge.model
    assert (row["input_tokens"], row["output_tokens"], row["cache_hit"], row["outcome"]) == (2000, 100, False, "ok")
    assert row["cost_usd"] == pytest.approx(verdict.call.cost_usd) and row["request_hash"] == verdict.call.request_hash
