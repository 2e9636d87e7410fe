"""At most one answer per prompt instance, against agents that do not simply redraw: a dialog that
redraws while it dismisses, a line-based agent whose answered prompt stays on screen with output
below it, prompts quoted in the agent's own output. Real tmux, the real supervisor, the scripted
agent counting every key (the harness fails the test on any stray key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.agent import inputs
from tests.helpers import retry_until
from tests.live_helpers import (
    answers,
    events,
    fast_policy,
    read_record,
    replay_under_recorded_policy,
    write_script,
)

pytestmark = pytest.mark.slow


def _sent(runner) -> list[dict]:
    return [e.payload for e in events(runner, "action") if e.payload.get("delivered") and e.payload.get("confirmed")
            is None and e.payload.get("kind") == "send_keys"]


def test_a_slowly_dismissing_dialog_is_answered_once(harness, tmp_path: Path) -> None:
    """Claude's trust dialog, answered, is redrawn twice (one blank frame between, the chosen
    option marked ✔ as Claude Code 2.1 does) before it goes: the redraws are the same prompt
    instance; exactly one key reaches the agent."""
    script = write_script(tmp_path, [
        {"prompt": {"id": "trust", "kind": "trust", "dismiss": {"redraws": 2, "every_s": 0.35, "blank": True,
                                                                "mark": True}}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test", "dismiss": {"redraws": 1, "every_s": 0.5}}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness()
    runner = h.run_to_end(script, rec, 60)
    assert runner.outcome == "finished"
    assert set(answers(rec)) == {"trust", "p1"}
    assert not events(runner, "pause")  # the ✔ redraw is the prompt we answered, not one to escalate
    assert [r["n"] for r in read_record(rec) if r["event"] == "redrawn"] == [1, 2, 1]
    sent = _sent(runner)
    assert len(sent) == 2, sent  # one answer per prompt, none for the redraws
    skipped = [e.payload for e in events(runner, "answer_skipped")]
    # skipped as already answered, or held back while the agent was not yet reading (a loaded host)
    assert skipped and all("already answered" in s["why"] or "not waiting for input" in s["why"]
                           for s in skipped), skipped
    assert any("already answered" in s["why"] for s in skipped), skipped
    confirmed = [e.payload for e in events(runner, "action") if e.payload.get("confirmed") is True]
    assert len(confirmed) == 2 and not [e for e in events(runner, "friction")
                                        if e.payload["kind"] in ("answer_not_taken", "repeated_prompt")]
    # the warehouse has each skipped answer and the turn
    from supervisor.warehouse import open_warehouse, sync

    sync(h.settings, wait_s=10)
    with open_warehouse(h.settings.warehouse, read_only=True) as wh:
        skips = wh.sql(f"SELECT why FROM answer_skips WHERE run_id = '{runner.run_id}'")["why"].to_list()
        turns = wh.sql(f"SELECT turn, answered FROM turns WHERE run_id = '{runner.run_id}'").rows()
    assert len(skips) == len(skipped) and turns == [(1, 2)]


@pytest.mark.parametrize("style,kind", [("aider", "yes_no"), ("claude", "bash")])
def test_an_appending_agent_is_answered_once_per_prompt(harness, tmp_path: Path, style: str, kind: str) -> None:
    """A line-based agent: each answered prompt stays on screen with output below it; the same
    question asked again after progress is a new prompt, answered once too."""
    steps: list[dict] = [{"say": "Setting up the project."}]
    for n in range(5):
        steps += [{"prompt": {"id": f"p{n}", "kind": kind, "question": "Run shell command?", "command": "make build"}},
                  {"say": f"Build step {n} done."}]
        if n % 2:
            steps.append({"spinner": {"seconds": 0.2}})
    steps += [{"spinner": {"seconds": 0.3}}, {"done": {}}]
    script = write_script(tmp_path, steps, style=style, mode="append")
    rec = tmp_path / "rec.jsonl"
    h = harness()
    runner = h.run_to_end(script, rec, 90)
    got = answers(rec)
    assert set(got) == {f"p{n}" for n in range(5)} and all(a["approved"] for a in got.values()), got
    assert len(_sent(runner)) == 5
    assert runner.outcome == "finished"
    # answered prompts that stayed on screen (history) were neither answered again nor escalated
    assert not events(runner, "pause")
    assert not [e for e in events(runner, "friction") if e.payload["kind"] == "answer_not_taken"]


def test_a_task_waits_for_the_input_box_of_an_agent_that_starts_slowly(harness, tmp_path: Path) -> None:
    """An agent that draws nothing for a while, then asks to trust the folder, then shows its
    input box (Claude Code on a fresh start): the task is typed only once the input box is up, so
    no key lands in the blank screen or in the trust dialog; the dialog gets the policy's answer."""
    script = write_script(tmp_path, [
        {"sleep": 2.0},
        {"prompt": {"id": "trust", "kind": "trust", "dismiss": {"redraws": 1, "every_s": 0.3, "mark": True}}},
        {"idle": {"id": "task"}},
        {"spinner": {"seconds": 0.3}},
        {"say": "Fixed."},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness(task="fix the failing test")
    runner = h.run_to_end(script, rec, 60)
    assert runner.outcome == "finished"
    assert inputs(rec) == ["fix the failing test"]
    assert answers(rec)["trust"]["keys"] == ["1"]
    assert len(_sent(runner)) == 1 and not events(runner, "pause")


QUOTE_KINDS = ("menu", "yes_no", "press_enter", "trust")
FOLLOWED_BY = {"claude": "spinner", "codex": "working", "aider": "say"}
"""What each style's agent shows below the quoted prompt first: Claude's spinner, Codex's
`• Working` line, aider's next paragraph (then, for every style, a newer message paragraph)."""


@pytest.mark.parametrize("style", list(FOLLOWED_BY))
def test_prompts_quoted_in_agent_output_get_no_keys(harness, tmp_path: Path, style: str) -> None:
    """Injection stand-ins in three agents' styles: a menu, a y/n question or a trust dialog quoted
    in a message, and "press Enter to continue" in prose, each followed by more output. Nothing is
    sent, and the agent (recording every key) received none, through to the agent's exit."""
    steps: list[dict] = [{"spinner": {"seconds": 0.3}}]
    for kind in QUOTE_KINDS:
        steps += [{"quote": {"kind": kind, "then": FOLLOWED_BY[style], "seconds": 1.5}},
                  {"quote": {"kind": kind, "then": "say", "seconds": 1.5}}]
    script = write_script(tmp_path, [*steps, {"say": "Done."}, {"done": {"seconds": 1}}, {"exit": 0}], style=style)
    rec = tmp_path / "rec.jsonl"
    h = harness(turns=None)  # every quote supervised: the run lasts until the agent exits
    runner = h.run_to_end(script, rec, 90)
    assert [r["kind"] for r in read_record(rec) if r["event"] == "quote"] == [k for k in QUOTE_KINDS for _ in "ab"]
    assert runner.outcome == "exited", runner.outcome
    assert not _sent(runner)
    assert not answers(rec)
    assert not [r for r in read_record(rec) if r["event"] == "keys"]


def test_replay_under_the_recorded_policy_reproduces_every_decision(harness, tmp_path: Path,
                                                                     tmux_socket: str) -> None:
    """Everything a decision depended on is in the journal: a stuck prompt (strikes, cooldown, the
    strike guard), a slowly dismissing dialog (instances), an escalation a human ends (pause),
    the finish confirmations: replayed from the journal, every decision comes out the same."""
    import subprocess

    pol = fast_policy(confirm_timeout_s=0.8)
    pol.budgets.cooldown_s = 0.6
    script = write_script(tmp_path, [
        {"prompt": {"id": "trust", "kind": "trust", "dismiss": {"redraws": 1, "every_s": 0.3, "blank": True}}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "stuck", "kind": "bash", "command": "make", "ignore": 1}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "push", "kind": "bash", "command": "git push --force origin main"}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness(policy=pol)
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: events(runner, "pause"), 60, message=lambda: f"the escalation; {read_record(rec)[-3:]}")
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", runner.pane_id, "3"], check=True)
    retry_until(lambda: runner.done, 60, message=lambda: f"the run to finish; {read_record(rec)[-3:]}")
    n, mismatches = replay_under_recorded_policy(runner.journal.events())
    assert n >= 7 and mismatches == [], (n, mismatches)  # trust, the strikes, the pause, the finish
    assert {"trust", "stuck", "push"} <= set(answers(rec))
