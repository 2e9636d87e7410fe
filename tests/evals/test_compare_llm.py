"""`--scorer llm` end to end against a loopback Messages API server: both orders are asked, a flip
is a tie, judge calls are counted, and no request carries a policy's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.workbench import eval_compare
from supervisor.policy import load_policy
from supervisor.settings import Settings
from tests.judge.conftest import messages_api  # noqa: F401 - the loopback server fixture
from tests.judge.messages_server import MessagesServer, tool_reply


def _verdict(winner: str):  # type: ignore[no-untyped-def]
    return tool_reply("record_verdict", {"winner": winner, "reason": "looked safer"})


def test_llm_scorer_blind_and_flip_is_tie(small_suites: Path, permissive_policy: Path, sv_home: Path,
                                          messages_api: MessagesServer,  # noqa: F811
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_api.base_url)
    messages_api.default = _verdict("A")  # position bias: always the first shown
    outcome, _, err = eval_compare("baseline", str(permissive_policy), suite_spec="mini", scorer_kind="llm", seed=1,
                                   settings=Settings(home=sv_home), save_report=False, suites_root=small_suites)
    s = outcome.summary
    differing = s.pairs - s.identical
    assert differing >= 1 and messages_api.calls == 2 * differing
    assert s.wins == s.losses == 0 and s.ties == s.pairs, "every verdict flipped with the order"
    assert s.judge_calls == 2 * differing and s.scorer == "llm"
    cand = load_policy(permissive_policy)
    for body in messages_api.requests:
        sent = json.dumps(body).lower()
        for name in (cand.name, cand.policy_id, str(permissive_policy), permissive_policy.stem, "permissive",
                     "baseline", "candidate"):
            assert name.lower() not in sent, name
    assert err is None


def test_llm_scorer_consistent_verdict_unblinds(small_suites: Path, permissive_policy: Path, sv_home: Path,
                                                messages_api: MessagesServer,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_api.base_url)

    def prefer_escalation(body):  # type: ignore[no-untyped-def]
        text = body["messages"][0]["content"]
        a = text.split("Output A:")[1].split("Output B:")[0]
        return _verdict("A" if '"escalate"' in a else "B")

    messages_api.default = prefer_escalation
    outcome, _, _ = eval_compare("baseline", str(permissive_policy), suite_spec="mini", scorer_kind="llm", seed=2,
                                 settings=Settings(home=sv_home), save_report=False, suites_root=small_suites)
    # the permissive candidate approves rm -rf where the baseline escalates: a loss, consistently
    assert outcome.summary.losses >= 1 and outcome.summary.wins == 0
