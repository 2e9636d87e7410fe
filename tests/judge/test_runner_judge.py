"""The judge in the live runner: a scripted agent in real tmux asks a question no answer rule
knows; with judge.consult: uncertain the runner asks the judge (the loopback Messages API via the
real SDK), the judge's keys pass the safety rules and reach the agent, and the consultation is
journaled as a judge_call event."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import retry_until
from tests.judge.messages_server import tool_reply
from tests.live_helpers import LiveHarness, answers, events, fast_policy, read_record, write_script

pytestmark = pytest.mark.slow


def _judge_policy(**judge):
    pol = fast_policy()
    pol.judge = pol.judge.model_copy(update={"consult": "uncertain", "backoff_s": 0.01, "backoff_max_s": 0.05,
                                             "timeout_s": 10.0, "deadline_s": 20.0, **judge})
    return pol


@pytest.fixture
def api_env(messages_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_api.base_url)
    return messages_api


def _script(tmp_path: Path, steps):
    return write_script(tmp_path, [*steps, {"say": "Thanks."}, {"done": {"seconds": 60}}])


def test_runner_asks_the_judge_on_a_prompt_no_rule_knows(api_env, tmux_socket, sv_home, tmp_path):
    api_env.default = tool_reply("send_keys", {"keys": ["2"], "reason": "SQLite suits a local service"})
    script = _script(tmp_path, [{"prompt": {"id": "db", "kind": "question",
                                            "question": "Which database should the service use?"}}])
    rec = tmp_path / "rec.jsonl"
    h = LiveHarness(tmux_socket, sv_home, policy=_judge_policy())
    try:
        (runner,) = h.supervise(h.start_agent(script, rec))
        retry_until(lambda: "db" in answers(rec), 60, message=lambda: f"an answer; record={read_record(rec)[-3:]}")
        assert answers(rec)["db"]["choice"] == 1  # SQLite, the judge's pick
        calls = [e.payload for e in events(runner, "judge_call")]
        assert calls and calls[0]["outcome"] == "ok" and calls[0]["run_id"] == runner.run_id
        judged = [e.payload["decision"] for e in events(runner, "decision") if e.payload["decision"]["source"] == "judge"]
        assert judged and judged[0]["keys"] == ["2"]
        bodies = [r["messages"][0]["content"] for r in api_env.requests]
        assert any("Which database should the service use?" in b for b in bodies)
        assert not any("<<<SCREEN\n\nSCREEN>>>" in b for b in bodies)  # blank screens are never sent
    finally:
        h.stop()


def test_runner_never_lets_the_judge_approve_a_dangerous_prompt(api_env, tmux_socket, sv_home, tmp_path):
    api_env.default = tool_reply("send_keys", {"keys": ["1"], "reason": "approve"})
    script = _script(tmp_path, [{"prompt": {"id": "danger", "kind": "bash", "command": "rm -rf /tmp/proj/src",
                                            "description": "Remove the old sources"}}])
    rec = tmp_path / "rec.jsonl"
    h = LiveHarness(tmux_socket, sv_home, policy=_judge_policy(consult="always"))
    try:
        (runner,) = h.supervise(h.start_agent(script, rec))
        retry_until(lambda: any(e.payload["decision"]["kind"] == "escalate" for e in events(runner, "decision")),
                    60, message="an escalation")
        assert "danger" not in answers(rec)
        assert events(runner, "judge_call")
        for e in events(runner, "decision"):
            assert e.payload["decision"]["approves"] is not True, e.payload
    finally:
        h.stop()
