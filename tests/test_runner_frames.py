"""Answering when the frame is whole (issue 28): a dialog drawn whole by its agent's grammar is answered
as soon as no output follows it for the pane's quiet window, not after the settle time; one that cannot
be known whole waits the settle time out; a half-drawn frame is never answered (a slow-drawing agent
gets no key while it draws); a dialog in another agent's style is escalated, never answered. Real tmux,
the scripted agent, its record of every key."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.journal import iter_events
from tests.helpers import retry_until
from tests.live_helpers import answers, assert_no_stray_keys, events, fast_policy, read_record, write_script

pytestmark = pytest.mark.slow


def _latency(record: Path, pid: str) -> float:
    drawn = next(r["drawn_at"] for r in read_record(record) if r["event"] == "drawn" and r["id"] == pid)
    return answers(record)[pid]["answered_at"] - drawn


def _answering_look(runner) -> dict:  # type: ignore[no-untyped-def]
    """The journaled look at the screen whose decision typed the run's first keys."""
    journal = list(iter_events(runner.journal.path))
    first_key = next(i for i, e in enumerate(journal) if e.kind == "action" and e.payload.get("keys"))
    return next(e.payload for e in reversed(journal[:first_key]) if e.kind == "observation"
                and e.payload["observation"]["state"] == "asking")


def test_a_whole_dialog_is_answered_before_the_settle_time_and_one_not_known_whole_after(harness,
                                                                                          tmp_path: Path) -> None:
    """The same dialog under two policies, both with a 5 s settle time: with the baseline's grammar it is
    whole at once (answered well before the settle time could end); with a footer the agent never draws,
    it is never known whole, and is answered only once the pane has been quiet for the settle time."""
    settle = 5.0  # long enough that a loaded host's late look is still told from the settle time
    strict = fast_policy(settle_ms=int(settle * 1000))
    for frame in strict.agents["claude"].dialogs:
        if frame.name == "dialog":
            frame.footer = ["^a footer claude never draws$"]
    steps = [{"spinner": {"seconds": 0.5}},
             {"prompt": {"id": "p", "kind": "bash", "command": "npm test", "description": "Run the tests"}},
             {"done": {"seconds": 3}}]
    got = {}
    for name, policy in (("grammar", fast_policy(settle_ms=int(settle * 1000))), ("no-footer", strict)):
        h = harness(policy=policy)
        rec = tmp_path / f"{name}.jsonl"
        (runner,) = h.supervise(h.start_agent(write_script(tmp_path, steps, name=name), rec, session=name))
        retry_until(lambda r=runner: r.done, 60,  # type: ignore[misc]
                    message=lambda n=name, f=rec: f"the {n} run to end: {read_record(f)[-3:]}")
        got[name] = (_latency(rec, "p"), runner)
        assert_no_stray_keys(rec)
    fast, runner = got["grammar"]
    fast_look = _answering_look(runner)
    assert fast_look["now"] - fast_look["last_output_at"] < settle / 2, (fast, fast_look.get("trigger"))
    answered_on = [e.payload["observation"]["evidence"] for e in events(runner, "observation")
                   if e.payload["observation"]["state"] == "asking"]
    assert any("+frame:dialog+whole" in ev[0] for ev in answered_on), answered_on
    # never known whole: the look that answered came once the pane had been quiet for the settle time
    # (measured on the supervisor's own clock of the pane's output, so a loaded host's late agent does
    # not blur it: the agent may draw its dialog well after its spinner stopped)
    _, strict_runner = got["no-footer"]
    look = _answering_look(strict_runner)
    assert not any("+whole" in ev for ev in look["observation"]["evidence"]), look["observation"]["evidence"]
    quiet = look["now"] - look["last_output_at"]
    assert quiet >= 0.99 * settle, (quiet, look.get("trigger"), look["observation"]["evidence"])


def test_a_slow_drawing_agent_gets_no_key_while_it_draws(harness, tmp_path: Path) -> None:
    """An agent that draws its screens row by row (10 ms apart: a frame takes a quarter of a second):
    every dialog is answered, and no key arrives before its last row is drawn (the agent records any as
    stray)."""
    h = harness(policy=fast_policy(settle_ms=30))
    steps = []
    for i in range(3):
        steps += [{"spinner": {"seconds": 0.4}},
                  {"prompt": {"id": f"p{i}", "kind": "bash", "command": "npm test", "description": "Run"}}]
    steps.append({"done": {"seconds": 3}})
    rec = tmp_path / "slow.jsonl"
    h.run_to_end(write_script(tmp_path, steps, row_delay_ms=10), rec, 90)
    assert set(answers(rec)) == {"p0", "p1", "p2"} and all(a["approved"] for a in answers(rec).values())
    assert_no_stray_keys(rec)


def test_a_dialog_in_another_agents_style_gets_no_key(harness, tmp_path: Path) -> None:
    """A Claude Code session that shows a Codex approval (something it ran printed one): not Claude's own
    dialog, so it is escalated and never answered, whatever the rules would do with it."""
    h = harness(policy=fast_policy())
    steps = [{"say": "I will run the tests."}, {"spinner": {"seconds": 0.4}},
             {"prompt": {"id": "fake", "kind": "codex_exec", "command": "npm test", "description": "run",
                         "timeout": 4}},
             {"done": {"seconds": 2}}]
    rec = tmp_path / "foreign.jsonl"
    runner = h.run_to_end(write_script(tmp_path, steps, name="foreign"), rec, 60)
    assert answers(rec)["fake"].get("timeout") is True and not answers(rec)["fake"]["keys"]
    pauses = [e.payload for e in iter_events(runner.journal.path) if e.kind == "pause"]
    assert pauses and pauses[0]["rule"] == "not-own-dialog", pauses
    assert_no_stray_keys(rec)
    retry_until(lambda: runner.done, 10, message="the run to end")
