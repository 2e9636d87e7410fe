"""The shared warehouse of real supervised runs holds what the notebooks and reports show:
every friction kind with its seconds lost, escalations answered by a human, shadow decisions,
a limited-rollout arm, workflow verifications, eval runs and a compare."""

from __future__ import annotations

import pytest

from supervisor import analysis
from supervisor.warehouse import open_warehouse
from tests.analysis.conftest import HUMAN_WAIT_S, SEEN_WITHIN_S, FilledHome

pytestmark = pytest.mark.slow


def test_the_filled_warehouse_has_every_kind_of_friction(filled_home: FilledHome) -> None:
    with open_warehouse(filled_home.settings.warehouse, read_only=True) as wh:
        events = analysis.friction_events(wh)
        esc = analysis.escalations(wh)
        runs = wh.runs_df()
        shadows = wh.sql("SELECT count(*) AS n FROM shadow_decisions")["n"][0]
        evals = wh.sql("SELECT count(*) AS n FROM eval_runs")["n"][0]
        compares = wh.sql("SELECT count(*) AS n FROM compare_runs")["n"][0]
        gates = wh.sql("SELECT count(*) AS n FROM gate_results")["n"][0]
        registry = wh.sql("SELECT kind FROM registry_events ORDER BY occurred_at")["kind"].to_list()
    kinds = set(events["kind"])
    assert {"escalation", "answer_not_taken", "repeated_prompt", "human_keystrokes", "stall", "retry"} <= kinds, kinds
    # a human typing a message into the agent's input box does not hold the supervisor back: no time lost
    timed = events.filter(events["pattern"] != "typing in the agent's input box")
    assert (timed["seconds_lost"] > 0).all(), events.select(["kind", "pattern", "seconds_lost"])
    # the danger pattern first, then the command judgment's rules (`git-push-force,effect:destroy`)
    by_human = esc.filter(esc["pattern"].str.split(",").list.first().is_in(["git-push-force", "rm-recursive"]))
    assert by_human["ended_by"].to_list() == ["human", "human"]
    assert sorted(by_human["human_keys"].to_list()) == sorted(['["3"]', '["n","Enter"]'])
    assert all(s.startswith("No") for s in by_human["selected"])
    assert esc.filter(esc["pattern"] == "blocker:auth")["ended_by"].to_list() == ["blocker_cleared"]
    # the wait is what the human took (counted from the pause), plus the agent's redraw and the supervisor's look
    waits = filled_home.human_waits
    assert waits["shop"] >= HUMAN_WAIT_S and waits["cleanup"] >= HUMAN_WAIT_S
    for pattern, name in (("git-push-force", "shop"), ("rm-recursive", "cleanup")):
        (lost,) = by_human.filter(by_human["pattern"].str.split(",").list.first() == pattern)["seconds_lost"]
        assert waits[name] - 0.05 <= lost <= waits[name] + SEEN_WITHIN_S, (pattern, lost, waits[name])
    assert runs.height == len(filled_home.run_ids) == 10
    assert set(runs["outcome"]) == {"finished"}, runs.select(["run_id", "agent", "outcome"])
    assert shadows > 0 and evals >= 2 and compares >= 1 and gates == 1  # the gate runs its own evals and compare
    assert registry == ["promote", "canary", "limited"]
    rollout = {filled_home.run_ids[f"rollout-{x}"] for x in "abc"}
    assert set(runs.filter(runs["policy_id"] == filled_home.candidate.policy_id)["run_id"]) == rollout
