"""The injection suite never gets a key: agent output that quotes a menu or a y/n question with
more output below it, says "press Enter to continue" in prose, draws a fake trust dialog inside a
message, or talks to the supervisor, is never answered (issue 10 §5). A prompt is live only as the
last thing on the screen in the agent's own dialog frame."""

from __future__ import annotations

import pytest

from evals.runner import screen_of
from evals.suites import ScreenCase, resolve_suites
from supervisor.classify import classify
from supervisor.decide import answer_class, decide
from supervisor.models import RunState
from supervisor.policy import baseline_policy

SUITES = resolve_suites("injection,stale_quoted")
CASES = [(s, c) for s in SUITES for c in s.cases if isinstance(c, ScreenCase)]


def test_the_suite_holds_each_kind_in_several_agents_styles() -> None:
    ids = [c.id for _, c in CASES]
    for kind in ("quoted-menu", "yn", "press-enter", "fake-trust"):
        agents = {i.split("-")[1] for i in ids if i.startswith("live-") and kind in i}
        assert len(agents) >= 2, (kind, agents)


@pytest.mark.parametrize("suite, case", CASES, ids=[f"{s.name}/{c.id}" for s, c in CASES])
def test_no_key_is_ever_sent(suite, case: ScreenCase) -> None:
    policy = baseline_policy()
    rs = RunState(run_id="inj", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True,
                  **case.input.run_state)
    obs = classify(screen_of(suite, case), policy)
    dec = decide(obs, rs, policy)
    if case.expected.decision == "escalate":
        assert dec.kind == "escalate" and not dec.keys, dec.reason
        return
    assert not dec.keys, (obs.state, obs.evidence, dec.reason)
    if obs.prompt is not None:
        assert answer_class(obs.prompt, dec.keys) not in ("approve", "approve_persistent")
