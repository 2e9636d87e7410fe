"""Friction measured on a real supervised run: the scripted agent in real tmux (private socket),
the real runner, journal and warehouse. A human answer is planted 5 s after the escalation; the
friction view must say the escalation cost 5 s."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from supervisor import analysis
from supervisor.warehouse import open_warehouse, sync
from tests.helpers import retry_until
from tests.live_helpers import LiveHarness, assert_no_stray_keys, events, read_record, write_script

pytestmark = pytest.mark.slow

PLANTED_WAIT_S = 5.0
TOLERANCE_S = 0.75
"""The wait is measured from journal event times: the pause is journaled as the supervisor
escalates, the resume when it next looks at the pane after the human's key (settle 60 ms,
plus the agent's redraw and a capture on a busy machine)."""


def test_a_planted_5s_escalation_costs_5s(tmux_socket: str, sv_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "push", "kind": "bash", "command": "git push --force origin main",
                    "description": "Force-push the fix", "on_decline": [{"say": "Understood, not pushing."}]}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = LiveHarness(tmux_socket, sv_home)
    planted: dict[str, float] = {}

    def human_declines(pane_id: str) -> None:
        planted["keys_at"] = time.time()
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", pane_id, "3"], check=True)

    def on_journal(runner, ev) -> None:  # the supervisor's own hook, called as each event is journaled
        if ev.kind == "pause" and "pause_at" not in planted:
            planted["pause_at"] = ev.at
            threading.Timer(PLANTED_WAIT_S, human_declines, args=(runner.pane_id,)).start()

    h.sup.on_journal = on_journal
    try:
        (runner,) = h.supervise(h.start_agent(script, rec))
        retry_until(lambda: events(runner, "resume"), 30, message="the human's answer to end the escalation")
        retry_until(lambda: runner.done, 30, message="the run to finish")
    finally:
        h.stop()
    assert runner.outcome == "finished"
    planted_wait = planted["keys_at"] - planted["pause_at"]
    # a timer on a busy host fires late, never early: the measure is compared with the wait planted
    assert planted_wait >= PLANTED_WAIT_S - 0.01
    got = read_record(rec)
    answer = next(r for r in got if r["event"] == "answer" and r["id"] == "push")
    assert answer["approved"] is False and answer["keys"] == ["3"]
    assert_no_stray_keys(rec)  # the human's key reached the live prompt, nothing else arrived

    sync(h.settings)
    with open_warehouse(h.settings.warehouse, read_only=True) as wh:
        esc = analysis.escalations(wh)
        friction = analysis.friction_events(wh, runner.run_id)
    assert esc.height == 1 and friction["kind"].to_list() == ["escalation"]
    row = esc.row(0, named=True)
    lost = row["seconds_lost"]
    assert lost == pytest.approx(planted_wait, abs=TOLERANCE_S), f"planted {planted_wait:.3f}s, measured {lost}s"
    # never shorter than the time the human really took (their key reached the agent at answer["t"])
    assert lost >= answer["t"] - planted["pause_at"] - 0.05
    # the danger pattern, then the command judgment's rule for the part that decided
    assert (row["ended_by"], row["rule"], row["pattern"], row["agent"]) == (
        "human", "danger", "git-push-force,effect:destroy", "claude")
    assert row["question"] == "Do you want to proceed?"
    assert row["human_keys"] == '["3"]'  # what the human pressed, and what that selected
    assert row["selected"].startswith("No")
