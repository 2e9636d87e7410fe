"""The Anthropic judge through the real SDK against the loopback Messages API server."""

from __future__ import annotations

import pytest

from supervisor.judge import JudgeExchange, JudgeStats
from supervisor.judge.budget import cost_usd
from supervisor.judge.prompts import valid_key
from tests.judge.conftest import judge_policy
from tests.judge.messages_server import error_reply, slow, text_reply, tool_reply
from tests.judge.screens import UNCERTAIN


def test_request_carries_tools_screen_hint_history_and_settings(messages_api, make_judge):
    policy = judge_policy(model="claude-haiku-4-5", temperature=0.3, max_tokens=300, screen_chars=200)
    judge = make_judge(policy)
    messages_api.script(tool_reply("send_keys", {"keys": ["Enter"], "reason": "it waits for a key"},
                                   input_tokens=1000, output_tokens=50))
    history = [JudgeExchange(screen_tail="Processing batch 6 of 12", hint="first_look", action="not_waiting",
                             reason="working", outcome="waited")]
    screen = "x" * 500 + "\n" + UNCERTAIN
    verdict = judge.judge(screen, "keys_unchanged", history, run_id="run_1", trigger_id="obs_1")

    assert messages_api.calls == 1
    body = messages_api.requests[0]
    assert body["model"] == "claude-haiku-4-5"
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 300
    assert body["tool_choice"] == {"type": "any"}
    assert sorted(t["name"] for t in body["tools"]) == ["agent_finished", "escalate", "not_waiting", "send_keys"]
    user = body["messages"][0]["content"]
    assert "keys sent and screen unchanged — your previous action did not work" in user
    assert "Press any key when you have inserted the next disk" in user
    assert "x" * 200 not in user  # only the last screen_chars characters are sent
    assert "Processing batch 6 of 12" in user and "you chose not_waiting" in user
    assert messages_api.headers[0]["authorization"].endswith("test-key") or messages_api.headers[0].get("x-api-key")

    assert verdict.action == "send_keys" and verdict.keys == ["Enter"] and verdict.ok
    call = verdict.call
    assert (call.run_id, call.trigger_id, call.model, call.attempts) == ("run_1", "obs_1", "claude-haiku-4-5", 1)
    assert (call.input_tokens, call.output_tokens, call.cache_hit, call.outcome) == (1000, 50, False, "ok")
    assert call.cost_usd == pytest.approx(1000 * 1.0 / 1e6 + 50 * 5.0 / 1e6)
    assert len(call.request_hash) == 64


def test_secrets_on_screen_are_redacted_before_sending(messages_api, make_judge):
    judge = make_judge(judge_policy())
    messages_api.script(tool_reply("not_waiting", {"reason": "log output"}))
    judge.judge("export ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\n$ ", "first_look", [])
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in str(messages_api.requests[0])


def test_500_then_success_is_retried(messages_api, make_judge):
    stats = JudgeStats()
    judge = make_judge(judge_policy(), stats=stats)
    messages_api.script(error_reply(500), tool_reply("not_waiting", {"reason": "busy"}))
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "not_waiting" and verdict.ok
    assert verdict.call.attempts == 2 and messages_api.calls == 2
    assert stats.calls == 1 and stats.http_attempts == 2 and stats.errors == 0


def test_repeated_500s_fail_safe_to_escalate(messages_api, make_judge):
    judge = make_judge(judge_policy(max_retries=2))
    messages_api.default = error_reply(500)
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "escalate" and verdict.keys == []
    assert verdict.call.outcome == "error" and "HTTP 500" in (verdict.call.error or "")
    assert messages_api.calls == 3 and verdict.call.attempts == 3
    assert verdict.next_action


def test_429_retry_after_is_honoured(messages_api, make_judge):
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        import time

        time.sleep(seconds)

    judge = make_judge(judge_policy(), sleep=sleep)
    messages_api.script(error_reply(429, headers={"retry-after": "1"}, kind="rate_limit_error"),
                        tool_reply("escalate", {"reason": "unclear", "next_action": "look"}))
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "escalate" and verdict.ok
    assert waits == [1.0]  # the server's retry-after, not our 10 ms backoff
    assert messages_api.calls == 2


def test_retry_after_beyond_the_deadline_fails_safe_without_waiting(messages_api, make_judge):
    waits: list[float] = []
    judge = make_judge(judge_policy(deadline_s=5.0), sleep=waits.append)
    messages_api.script(error_reply(429, headers={"retry-after": "3600"}, kind="rate_limit_error"))
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "escalate" and verdict.call.outcome == "error"
    assert "deadline" in (verdict.call.error or "") and waits == [] and messages_api.calls == 1


def test_slow_response_times_out_and_is_retried(messages_api, make_judge):
    judge = make_judge(judge_policy(timeout_s=0.5))
    messages_api.script(slow(tool_reply("send_keys", {"keys": ["1"], "reason": "late"}), 5.0),
                        tool_reply("not_waiting", {"reason": "in time"}))
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "not_waiting" and verdict.call.attempts == 2


@pytest.mark.parametrize("bad", [
    tool_reply("send_keys", {"keys": ["rm -rf /", "Enter"], "reason": "typing a command"}),
    tool_reply("send_keys", {"keys": "1", "reason": "not a list"}),
    tool_reply("send_keys", {"keys": ["C-c"], "reason": "interrupt"}),
    tool_reply("press_buttons", {"reason": "unknown tool"}),
    tool_reply("escalate", {"next_action": "missing reason"}),
    text_reply(),
], ids=["not-a-key", "keys-not-list", "control-key", "unknown-tool", "missing-field", "no-tool-call"])
def test_malformed_tool_calls_are_retried_then_fail_safe(messages_api, make_judge, bad):
    stats = JudgeStats()
    judge = make_judge(judge_policy(max_retries=1), stats=stats)
    messages_api.default = bad
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "escalate" and verdict.keys == []
    assert verdict.call.outcome == "error" and "malformed" in (verdict.call.error or "")
    assert messages_api.calls == 2
    # malformed responses still cost tokens: they are billed
    assert verdict.call.input_tokens == 2 * 1200 and verdict.call.cost_usd > 0 and stats.cost_usd > 0


def test_malformed_then_valid(messages_api, make_judge):
    judge = make_judge(judge_policy())
    messages_api.script(text_reply(), tool_reply("agent_finished", {"reason": "summary printed"}))
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "agent_finished" and verdict.call.attempts == 2


def test_client_errors_are_not_retried(messages_api, make_judge):
    judge = make_judge(judge_policy())
    messages_api.default = error_reply(401, kind="authentication_error", message="invalid x-api-key")
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "escalate" and messages_api.calls == 1
    assert "401" in (verdict.call.error or "")


def test_connection_refused_fails_safe(sv_home, monkeypatch):
    """No server at all (a closed port): connection errors are retried, then escalate."""
    import socket

    from supervisor.judge import build_judge
    from supervisor.settings import Settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = build_judge(judge_policy(max_retries=1), Settings(home=sv_home), api_key="k",
                        base_url=f"http://127.0.0.1:{port}")
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "escalate" and verdict.call.attempts == 2
    assert "connection" in (verdict.call.error or "").lower()


def test_no_key_makes_no_call(messages_api, make_judge):
    judge = make_judge(judge_policy(), api_key=None)
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert verdict.action == "escalate" and verdict.call.outcome == "no_api_key"
    assert messages_api.calls == 0


def test_cost_uses_price_table_prefixes_and_policy_overrides():
    from supervisor.policy import JudgePrice

    assert cost_usd("claude-sonnet-4-5-20250929", 1_000_000, 0) == pytest.approx(3.0)
    assert cost_usd("claude-opus-4-1-20250805", 0, 1_000_000) == pytest.approx(75.0)
    assert cost_usd("some-future-model", 1_000_000, 0) == pytest.approx(15.0)  # '*' is the top tier
    custom = {"some-future-model": JudgePrice(input_per_mtok=2.0, output_per_mtok=4.0)}
    assert cost_usd("some-future-model", 1_000_000, 1_000_000, custom) == pytest.approx(6.0)


def test_valid_keys():
    assert all(valid_key(k) for k in ["1", "y", "Y", "Enter", "Escape", "Down", "BTab"])
    assert not any(valid_key(k) for k in ["", "yes", "C-c", "rm -rf /", "Enter\n", "é"])


def test_temperature_is_not_sent_unless_set_and_a_rejection_says_why(messages_api, make_judge):
    judge = make_judge(judge_policy())
    messages_api.script(tool_reply("not_waiting", {"reason": "x"}))
    judge.judge(UNCERTAIN, "first_look", [])
    assert "temperature" not in messages_api.requests[0]

    judge = make_judge(judge_policy(temperature=0.0, model="claude-opus-4-8"))
    messages_api.script(error_reply(400, kind="invalid_request_error",
                                    message="`temperature` is deprecated for this model."))
    verdict = judge.judge(UNCERTAIN, "first_look", [])
    assert messages_api.requests[1]["temperature"] == 0.0
    assert verdict.action == "escalate" and messages_api.calls == 2  # a 400 is not retried
    assert "unset judge.temperature" in (verdict.call.error or "")


def test_unknown_prompt_version_is_refused_at_start(sv_home):
    from supervisor.errors import PolicyError
    from supervisor.judge import build_judge
    from supervisor.settings import Settings

    with pytest.raises(PolicyError, match="prompt_version"):
        build_judge(judge_policy(prompt_version="v99"), Settings(home=sv_home), api_key="k")


def test_odd_terminal_text_is_sent_safely(messages_api, make_judge):
    judge = make_judge(judge_policy())
    messages_api.script(tool_reply("not_waiting", {"reason": "x"}))
    verdict = judge.judge("bad \udcff surrogate and \x00 nul\n$ ", "first_look", [])
    assert verdict.ok and messages_api.calls == 1


def test_a_judge_that_raises_fails_safe():
    """A stand-in Judge that raises: no real judge raises (they fail safe inside), so this checks
    judged_decision's own guard for third-party Judge implementations."""
    from supervisor.judge import judged_decision
    from supervisor.models import Observation, RunState

    class Exploding:
        def judge(self, screen, hint, history, *, run_id="", trigger_id=None):
            raise RuntimeError("boom")

    obs = Observation(screen_hash="h", state="idle", confidence=0.1, observation_id="o")
    decision, call = judged_decision(obs, "x", RunState(run_id="r", now=1.0), judge_policy(), Exploding())
    assert decision.kind == "escalate" and call is not None and call.outcome == "error" and "boom" in call.error


def test_baseline_ships_the_judge_off():
    from supervisor.policy import baseline_policy, load_policy
    from tests.conftest import REPO

    assert baseline_policy().judge.consult == "never"
    p = load_policy(REPO / "candidates" / "baseline.yaml")
    assert p.judge.consult == "never" and p.judge.temperature is None and p.judge.prices


def test_a_missing_judge_extra_is_one_line_naming_it(sv_home, monkeypatch):
    """anthropic is the `judge` extra: a policy that consults the judge without it installed gets one
    line naming the extra. The SDK is installed here, so its absence is simulated the way Python
    spells "not installed" (a None entry in sys.modules makes its import raise ImportError)."""
    import sys

    from supervisor.errors import EnvironmentProblem
    from supervisor.judge import build_judge
    from supervisor.settings import Settings

    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.delitem(sys.modules, "supervisor.judge.anthropic_judge", raising=False)
    with pytest.raises(EnvironmentProblem) as info:
        build_judge(judge_policy(), Settings(home=sv_home))
    line = info.value.one_line()
    assert "`judge` extra" in line and "paneward[judge]" in line and "\n" not in line
    assert build_judge(judge_policy(consult="never"), Settings(home=sv_home)) is None  # the shipped setting
