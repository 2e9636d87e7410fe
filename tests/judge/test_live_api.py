"""Opt-in: one consultation against the real Anthropic API (costs a fraction of a cent)."""

from __future__ import annotations

import os

import pytest

from supervisor.judge import build_judge
from supervisor.settings import Settings
from tests.judge.conftest import judge_policy
from tests.judge.screens import SAFE_MENU


@pytest.mark.live_api
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY (opt-in, paid)")
def test_real_api_returns_a_valid_verdict(sv_home):
    policy = judge_policy(model=os.environ.get("SUPERVISOR_JUDGE_TEST_MODEL", "claude-haiku-4-5"), max_tokens=300,
                          backoff_s=1.0, backoff_max_s=10.0)
    judge = build_judge(policy, Settings(home=sv_home))
    verdict = judge.judge(SAFE_MENU, "first_look", [], run_id="run_live")
    assert verdict.call.outcome == "ok", verdict.call.error
    assert verdict.action in ("send_keys", "not_waiting", "agent_finished", "escalate")
    assert verdict.call.input_tokens > 0 and verdict.call.cost_usd > 0
    again = judge.judge(SAFE_MENU, "first_look", [], run_id="run_live")
    assert again.call.cache_hit and again.action == verdict.action
