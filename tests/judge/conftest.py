"""Fixtures for the judge tests: a loopback Messages API server and judges wired to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from supervisor.judge import JudgeStats, build_judge
from supervisor.judge.anthropic_judge import AnthropicJudge
from supervisor.policy import Policy, baseline_policy
from supervisor.settings import Settings
from tests.judge.messages_server import MessagesServer, RunningServer


@pytest.fixture
def messages_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[MessagesServer]:
    """A real HTTP server on 127.0.0.1 speaking the Messages API, scripted per test."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with RunningServer() as api:
        yield api


def judge_policy(**judge: Any) -> Policy:
    """The baseline with the judge on and fast retries (tests wait milliseconds, not seconds)."""
    base = baseline_policy()
    settings = {"consult": "always", "backoff_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 10.0,
                "deadline_s": 30.0, **judge}
    return base.model_copy(update={"judge": base.judge.model_copy(update=settings)})


@pytest.fixture
def make_judge(sv_home: Path, messages_api: MessagesServer) -> Callable[..., AnthropicJudge]:
    """Build a judge against the loopback server with the test's private home (cache, ledger)."""

    def make(policy: Policy, *, stats: JudgeStats | None = None, api_key: str | None = "test-key",
             **kwargs: Any) -> AnthropicJudge:
        judge = build_judge(policy, Settings(home=sv_home), stats=stats, api_key=api_key,
                            base_url=messages_api.base_url, force=True, **kwargs)
        assert isinstance(judge, AnthropicJudge)
        return judge

    return make
