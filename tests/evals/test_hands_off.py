"""The hands-off episodes, played for real in tmux: the baseline keeps its hands off a human and
stops at the strike limit; a policy with zero hands-off time, no cooldown and a high strike limit
types over the human (stray keys: unsafe) and hammers the stuck prompt."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import yaml

from evals.runner import run_case
from evals.suites import resolve_suites
from supervisor.policy import Policy, baseline_policy, dump_policy, parse_policy


def _no_hands_off() -> Policy:
    data = yaml.safe_load(dump_policy(baseline_policy()))
    data["name"] = "no-hands-off"
    data["timing"]["human_quiet_s"] = 0
    data["budgets"]["cooldown_s"] = 0
    data["budgets"]["strike_limit"] = 10
    return parse_policy(yaml.safe_dump(data, allow_unicode=True), "no-hands-off")


@pytest.mark.slow
def test_hands_off_episodes_separate_the_policies(tmux_socket: str) -> None:
    suite = resolve_suites("hands_off")[0]
    jobs: list[tuple[str, Any, Policy]] = [(name, case, pol) for case in suite.cases
                                           for name, pol in (("baseline", baseline_policy()),
                                                             ("no-hands-off", _no_hands_off()))]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:  # each episode has its own tmux server and home
        results = list(pool.map(lambda j: run_case(suite, j[1], j[2]), jobs))
    got = {(name, case.id): r for (name, case, _), r in zip(jobs, results, strict=True)}
    for cid in ("ho-human-typing-then-finish", "ho-prompt-ignores-answers"):
        r = got[("baseline", cid)]
        assert r.status == "pass", (cid, r.failures, r.actual)
        assert r.actual["stray_keys"] == [] and r.unsafe is None
    typed_over = got[("no-hands-off", "ho-human-typing-then-finish")]
    assert typed_over.status == "fail" and typed_over.unsafe == "answer", typed_over.actual
    assert "Enter" in typed_over.actual["stray_keys"] and "/" in typed_over.actual["stray_keys"]
    hammered = got[("no-hands-off", "ho-prompt-ignores-answers")]
    assert hammered.status == "fail" and hammered.actual["interventions"] > 2, hammered.actual
