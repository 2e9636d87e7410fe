"""The ``friction_events`` view and its roll-ups, on journals written event by event with known
times (real Journal files, a real DuckDB warehouse): each kind's ``seconds_lost``, what ended an
escalation, the rule/pattern, agent and policy behind it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from supervisor import analysis
from supervisor.journal import Journal
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse, sync

T0 = 1_790_000_000.0  # 2026-09-21 (UTC)
DAY = 86_400.0


class RunWriter:
    """Writes one run's journal the way the runner does, at chosen times."""

    def __init__(self, s: Settings, run_id: str, *, agent: str = "claude", policy_id: str = "pol_a",
                 policy_name: str = "baseline", at: float = T0) -> None:
        self.j = Journal(s.journal_path(run_id), run_id)
        self.t = at
        self.j.append("run_started", {"run_id": run_id, "agent": agent, "policy_id": policy_id,
                                      "policy_name": policy_name, "command": [agent]}, at=at)
        self.policy_id = policy_id
        self.agent = agent

    def at(self, dt: float) -> float:
        return self.t + dt

    def observe(self, dt: float, state: str = "asking", question: str | None = "Proceed?",
                signature: str = "prm_1", risk: dict[str, Any] | None = None) -> str:
        prompt = None if question is None else {"kind": "tool_permission", "question": question,
                                                "signature": signature, "risk": risk or {"level": "none"}}
        ev = self.j.append("observation", {
            "observation": {"screen_hash": f"h{dt}", "state": state, "agent": self.agent, "prompt": prompt,
                            "evidence": ["prompt:claude-menu"]},
            "screen": {"screen_hash": f"h{dt}", "text": f"screen at {dt}\n{question or ''}", "width": 80,
                       "height": 24}}, at=self.at(dt))
        return ev.event_id

    def decide(self, dt: float, trigger: str, kind: str, rule: str, keys: list[str] | None = None,
               **extra: Any) -> str:
        ev = self.j.append("decision", {"decision": {"kind": kind, "rule": rule, "keys": keys or [],
                                                     "reason": f"{kind} by {rule}", "trigger_id": trigger,
                                                     "policy_id": self.policy_id, **extra}}, at=self.at(dt))
        return ev.event_id

    def act(self, dt: float, decision_id: str, *, delivered: bool, confirmed: bool | None = None,
            action_id: str = "act") -> None:
        self.j.append("action", {"action_id": f"{action_id}-{decision_id}", "decision_id": decision_id,
                                 "keys": ["1"], "delivered": delivered, "confirmed": confirmed}, at=self.at(dt))

    def event(self, dt: float, kind: Any, payload: dict[str, Any]) -> None:
        self.j.append(kind, payload, at=self.at(dt))

    def end(self, dt: float, outcome: str = "finished") -> None:
        self.j.append("run_ended", {"outcome": outcome}, at=self.at(dt))
        self.j.close()


def _escalate(r: RunWriter, dt: float, *, rule: str = "danger", matched: list[str] | None = None,
              blocker: dict[str, Any] | None = None) -> str:
    obs = r.observe(dt, risk={"level": "dangerous", "matched": matched or []})
    dec = r.decide(dt + 0.01, obs, "escalate", rule, signature="prm_1")
    r.event(dt + 0.02, "pause", {"pause_reason": "dangerous", "next_action": "look", "rule": rule,
                                 "risk": {"level": "dangerous", "matched": matched or []}, "blocker": blocker,
                                 "signature": "prm_1", "decision_id": dec})
    r.event(dt + 0.03, "friction", {"kind": "escalation", "detail": "dangerous"})  # as the runner writes it
    return dec


@pytest.fixture
def wh_settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home").ensure()


def _frame(s: Settings) -> pl.DataFrame:
    sync(s)
    with open_warehouse(s.warehouse, read_only=True) as wh:
        return analysis.friction_events(wh)


def test_escalation_ended_by_a_human_uses_the_runners_wait_and_answer(wh_settings: Settings) -> None:
    r = RunWriter(wh_settings, "run_esc")
    dec = _escalate(r, 1.0, matched=["git-push-force"])
    r.event(6.5, "resume", {"by": "human", "waited_s": 5.4, "human_keys": ["3"], "selected": "No",
                            "signature": "prm_1", "was": "dangerous"})
    r.end(8.0)
    df = _frame(wh_settings)
    assert df["kind"].to_list() == ["escalation"]  # the pause; the runner's friction line is not counted twice
    row = df.row(0, named=True)
    assert row["seconds_lost"] == pytest.approx(5.4)
    assert (row["ended_by"], row["selected"], row["human_keys"]) == ("human", "No", '["3"]')
    assert (row["rule"], row["pattern"], row["agent"], row["policy_id"]) == ("danger", "git-push-force", "claude",
                                                                             "pol_a")
    assert row["decision_id"] == dec and row["screen_hash"] == "h1.0" and row["signature"] == "prm_1"
    assert row["derived"] is False


def test_escalation_wait_from_event_times_when_the_resume_does_not_say(wh_settings: Settings) -> None:
    r = RunWriter(wh_settings, "run_old")
    _escalate(r, 1.0, rule="exited-blocked", blocker={"kind": "auth", "message": "401"})
    r.event(4.52, "resume", {"by": "exit", "state": "exited"})  # the first round's payload
    r.end(5.0, "exited")
    row = _frame(wh_settings).row(0, named=True)
    assert row["seconds_lost"] == pytest.approx(3.5, abs=1e-3)  # 1.02 -> 4.52
    assert (row["ended_by"], row["pattern"], row["derived"]) == ("agent_exit", "blocker:auth", True)


def test_superseded_ended_with_the_run_and_open_escalations(wh_settings: Settings) -> None:
    r = RunWriter(wh_settings, "run_sup")
    _escalate(r, 1.0)
    _escalate(r, 3.0)  # a different prompt escalated while still paused: the first one's wait ends here
    r.end(10.0, "escalated")
    o = RunWriter(wh_settings, "run_open", at=T0 + 100)
    _escalate(o, 1.0)
    o.event(7.0, "notification", {"channel": "tmux", "ok": True})  # nothing ended it yet
    o.j.close()
    df = _frame(wh_settings)
    got = [(r["run_id"], r["ended_by"], round(r["seconds_lost"], 2)) for r in df.iter_rows(named=True)]
    assert got == [("run_sup", "superseded", 2.0), ("run_sup", "run_ended", 6.98), ("run_open", "open", 5.98)]


def test_answers_that_did_not_take_repeats_stalls_humans_retries_and_manual(wh_settings: Settings) -> None:
    r = RunWriter(wh_settings, "run_mix", agent="aider", policy_id="pol_b")
    o1 = r.observe(1.0)
    d1 = r.decide(1.01, o1, "answer", "approve-yes-no", ["y", "Enter"])
    r.act(1.02, d1, delivered=False)
    r.act(1.05, d1, delivered=True)
    r.act(3.05, d1, delivered=True, confirmed=False)
    r.event(3.06, "friction", {"kind": "answer_not_taken", "detail": "keys y Enter did not change the prompt"})
    o2 = r.observe(4.0)
    d2 = r.decide(4.01, o2, "answer", "approve-yes-no", ["y", "Enter"])
    r.act(4.05, d2, delivered=True)
    r.act(4.2, d2, delivered=True, confirmed=True)
    r.event(6.0, "friction", {"kind": "repeated_prompt", "detail": "the prompt came back"})  # before its observation
    o3 = r.observe(6.01)
    d3 = r.decide(6.02, o3, "answer", "approve-yes-no", ["y", "Enter"])
    r.act(6.3, d3, delivered=True)
    r.act(6.4, d3, delivered=True, confirmed=True)
    r.event(10.0, "friction", {"kind": "human_keystrokes", "detail": "typing in the agent's input box"})
    o4 = r.observe(10.01, state="idle", question=None)
    r.decide(10.02, o4, "wait", "human-active")
    o5 = r.observe(13.0, state="idle", question=None)
    r.decide(14.0, o5, "wait", "human-active")
    o6 = r.observe(15.0)
    r.decide(15.01, o6, "answer", "approve-yes-no", ["y", "Enter"])
    o7 = r.observe(16.0, state="busy", question=None)
    r.decide(30.0, o7, "wait", "stall")
    r.event(30.01, "friction", {"kind": "stall", "detail": "stalled", "seconds_lost": 14.0})
    r.j.append("checkpoint", {"checkpoint_id": "ck_1", "checkpoint": {"checkpoint_seq": 1, "status": "step_done",
                                                                     "current_node": "test"}},
               at=r.at(39.9), event_id="ck_1")  # the workflow journals a checkpoint under its own id
    r.decide(40.0, "ck_1", "retry", "workflow:retry", node_id="test")  # as the workflow journals it
    r.event(45.0, "verification", {"verifier": "check", "node": "other", "passed": True})
    r.event(47.5, "verification", {"verifier": "check", "node": "test", "passed": True})
    r.event(50.0, "friction", {"kind": "manual", "detail": "had to explain the task twice", "seconds_lost": 120.0,
                               "author": "ana"})
    r.end(51.0)
    df = _frame(wh_settings)
    got = {row["kind"]: row for row in df.iter_rows(named=True)}
    assert sorted(got) == ["answer_not_taken", "human_keystrokes", "manual", "repeated_prompt", "retry", "stall"]
    assert got["answer_not_taken"]["seconds_lost"] == pytest.approx(2.01, abs=1e-3)  # delivered 1.05 -> 3.06
    assert got["answer_not_taken"]["rule"] == "approve-yes-no" and got["answer_not_taken"]["decision_id"] == d1
    assert got["repeated_prompt"]["seconds_lost"] == pytest.approx(0.3, abs=1e-3)  # back at 6.0, answered 6.3
    assert got["repeated_prompt"]["screen_hash"] == "h4.0"  # the answer that was asked again
    assert got["human_keystrokes"]["seconds_lost"] == pytest.approx(4.0, abs=1e-3)  # 10.0 -> last hands-off 14.0
    assert (got["human_keystrokes"]["rule"], got["human_keystrokes"]["pattern"]) == ("human",
                                                                                    "typing in the agent's input box")
    assert (got["stall"]["seconds_lost"], got["stall"]["rule"]) == (14.0, "stall")
    assert got["retry"]["seconds_lost"] == pytest.approx(7.5, abs=1e-3)  # until step "test" was verified again
    assert (got["retry"]["rule"], got["retry"]["pattern"]) == ("workflow:retry", "step:test")
    assert (got["manual"]["seconds_lost"], got["manual"]["author"]) == (120.0, "ana")
    assert set(df["agent"]) == {"aider"} and set(df["policy_id"]) == {"pol_b"}


def test_a_humans_turn_as_the_issue_14_runner_journals_it(wh_settings: Settings) -> None:
    """The observation that revealed the keystrokes comes first; an idle finish the runner holds
    back for the typing human (a ``finish_held`` note) is hands-off time, not the supervisor acting."""
    r = RunWriter(wh_settings, "run_turn")
    o1 = r.observe(1.0, state="idle", question=None)
    r.event(1.01, "friction", {"kind": "human_keystrokes", "detail": "typing in the agent's input box",
                               "where": "input box"})
    held = r.decide(1.02, o1, "finish", "finish")
    r.event(1.03, "note", {"type": "finish_held", "why": "a human is typing in the agent's input box",
                           "decision_id": held})
    o2 = r.observe(6.0, state="idle", question=None)
    held2 = r.decide(6.5, o2, "finish", "finish")
    r.event(6.51, "note", {"type": "finish_held", "why": "a human is typing", "decision_id": held2})
    o3 = r.observe(9.0, state="asking")
    r.decide(9.01, o3, "answer", "approve-tools", ["1"])
    r.end(10.0)
    row = _frame(wh_settings).row(0, named=True)
    assert row["kind"] == "human_keystrokes"
    assert row["seconds_lost"] == pytest.approx(5.49, abs=1e-3)  # 1.01 -> the last held finish at 6.5
    assert row["screen_hash"] == "h1.0"  # the screen that showed the typing, journaled just before


def test_rollups_by_agent_rule_policy_and_day(wh_settings: Settings) -> None:
    a = RunWriter(wh_settings, "run_a", agent="claude", policy_id="pol_a", policy_name="baseline")
    _escalate(a, 1.0, matched=["rm-recursive"])
    a.event(4.02, "resume", {"by": "human", "waited_s": 3.0})
    a.end(5.0)
    b = RunWriter(wh_settings, "run_b", agent="codex", policy_id="pol_c", policy_name="candidate", at=T0 + DAY)
    _escalate(b, 1.0, matched=["rm-recursive"])
    b.event(2.0, "resume", {"by": "blocker_cleared", "waited_s": 1.0})
    b.event(3.0, "friction", {"kind": "stall", "detail": "stalled", "seconds_lost": 10.0})
    b.end(20.0)
    sync(wh_settings)
    with open_warehouse(wh_settings.warehouse, read_only=True) as wh:
        by_agent = {(r["agent"], r["kind"]): r["seconds_lost"] for r in analysis.time_lost(wh, "agent").iter_rows(
            named=True)}
        by_rule = analysis.time_lost(wh, "pattern")
        by_policy = analysis.time_lost(wh, "policy")
        by_day = analysis.time_lost(wh, "day")
        by_kind = analysis.friction_by_kind(wh)
        view = wh.sql("SELECT * FROM friction_by_policy ORDER BY policy_id, kind")
        summary = wh.sql("SELECT run_id, friction_events, friction_seconds FROM run_summary ORDER BY run_id")
        answers = analysis.human_answers(wh)
    assert by_agent == {("claude", "escalation"): 3.0, ("codex", "escalation"): 1.0, ("codex", "stall"): 10.0}
    assert by_rule.filter(pl.col("pattern") == "rm-recursive")["events"].to_list() == [2]
    assert sorted(zip(by_policy["policy_name"], by_policy["seconds_lost"], strict=True)) == [
        ("baseline", 3.0), ("candidate", 1.0), ("candidate", 10.0)]
    assert [str(d) for d in by_day.sort("day")["day"].unique(maintain_order=True)] == ["2026-09-21", "2026-09-22"]
    assert dict(zip(by_kind["kind"], by_kind["seconds_lost"], strict=True)) == {"stall": 10.0, "escalation": 4.0}
    assert view.height == 3
    assert summary.rows() == [("run_a", 1, 3.0), ("run_b", 2, 11.0)]
    assert sorted(zip(answers["ended_by"], answers["escalations"], strict=True)) == [("blocker_cleared", 1),
                                                                                     ("human", 1)]


def test_empty_warehouse_gives_empty_frames_and_no_data_figures(wh_settings: Settings, tmp_path: Path) -> None:
    sync(wh_settings)
    with open_warehouse(wh_settings.warehouse, read_only=True) as wh:
        frames = {"events": analysis.friction_events(wh), "kind": analysis.time_lost(wh, "kind"),
                  "runs": analysis.friction_by_run(wh), "esc": analysis.escalations(wh),
                  "prompts": analysis.top_prompts(wh), "stalls": analysis.stalls(wh),
                  "trend": analysis.friction_trend(wh)}
        report = analysis.write_friction_report(wh, tmp_path / "reports")
    assert all(f.height == 0 for f in frames.values())
    assert "friction_id" in frames["events"].columns and "run_id" in frames["runs"].columns
    assert len(report.images) == 7
    assert "no friction" in report.markdown.read_text() or "_none_" in report.markdown.read_text()


def test_unknown_dimension_is_refused(wh_settings: Settings) -> None:
    sync(wh_settings)
    with open_warehouse(wh_settings.warehouse, read_only=True) as wh, pytest.raises(ValueError, match="by 'colour'"):
        analysis.time_lost(wh, "colour")  # type: ignore[arg-type]
