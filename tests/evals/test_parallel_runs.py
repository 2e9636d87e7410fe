"""A large eval run shared by worker processes (one per core) gives exactly what one process gives,
in the same order, with every case counted once in the progress hook."""

from __future__ import annotations

import pytest

from evals.runner import POOL_MIN_CASES, run_suites
from evals.suites import resolve_suites
from supervisor.policy import baseline_policy


def test_worker_processes_give_the_results_of_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    suites = resolve_suites("all")
    static = sum(1 for s in suites for c in s.cases if c.kind != "episode")
    assert static >= POOL_MIN_CASES, "large enough to be shared"
    monkeypatch.setenv("SUPERVISOR_EVAL_WORKERS", "1")
    one = run_suites(suites, baseline_policy(), episodes=False)
    monkeypatch.setenv("SUPERVISOR_EVAL_WORKERS", "2")
    seen: dict[str, int] = {}
    shared = run_suites(suites, baseline_policy(), episodes=False,
                        progress=lambda suite, done: seen.__setitem__(suite, done))
    key = [(r.suite, r.case_id, r.status, r.actual, r.failures, r.unsafe) for r in one.results]
    assert [(r.suite, r.case_id, r.status, r.actual, r.failures, r.unsafe) for r in shared.results] == key
    assert shared.totals == one.totals and shared.by_suite == one.by_suite
    assert seen == {s.name: len(s.cases) for s in suites}, "every case, episodes skipped included, counted once"
