"""WorkflowController against a real tmux pane and a real journal: recovery of half-done work."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from supervisor.journal import Journal
from supervisor.models import Observation
from supervisor.policy import Policy
from supervisor.settings import Settings
from supervisor.workflow import handoff
from supervisor.workflow.controller import WorkflowController, submit_control
from supervisor.workflow.gate import decide_on_pause
from supervisor.workflow.spec import parse_spec
from supervisor.workflow.state import WorkflowState, fold, initial_state
from tests.helpers import WEBHOOK_SECRET, WebhookReceiver, retry_until
from tests.workflow.e2e_helpers import SPEC3, start_agent

IDLE = {"turns": [{"work_s": 0.1}], "intro": "ready"}


def obs() -> Observation:
    return Observation(screen_hash="x", state="idle")


@contextmanager
def offline_controller(sv_home: Path, run_id: str, **kw: Any) -> Iterator[tuple[WorkflowController, Journal]]:
    """A controller of SPEC3 with no pane (it can send nothing) and its journal, both closed after."""
    settings = Settings(home=sv_home).ensure()
    j = Journal(settings.journal_path(run_id), run_id)
    ctl = WorkflowController(parse_spec(SPEC3), j, None, Policy(), settings, run_id, **kw)
    try:
        yield ctl, j
    finally:
        ctl.close()
        j.close()


def make(tmp_path: Path, tmux_socket: str, sv_home: Path, script: dict) -> tuple:
    s = start_agent(tmp_path, tmux_socket, script)
    spec = parse_spec(s.spec_path.read_text())
    settings = Settings(home=sv_home, tmux_socket=tmux_socket).ensure()
    retry_until(lambda: s.records("script_done"), 20)
    return s, spec, settings


def next_supervisor_sends_once(s: Any, spec: Any, settings: Settings, run_id: str, j: Journal,
                               block: str) -> tuple[str, WorkflowState]:
    """The run's next supervisor (a new controller on its journal, with the pane): it sends exactly
    one instruction, and the same checkpoint block seen again adds nothing. Returns what it sent and
    its state."""
    ctl = WorkflowController(spec, j, s.surface, Policy(), settings, run_id, pane_id=s.pane_id, cwd=s.project)
    try:
        ctl.tick()
        retry_until(lambda: len(s.instructions()) == 1, 20)
        ctl.on_output(block)  # the same block again: nothing new
        ctl.tick()
        assert len(s.instructions()) == 1, s.instructions()
        return s.instructions()[0], ctl.state
    finally:
        ctl.close()


@pytest.mark.parametrize("visible", [True, False])
def test_intent_without_delivery_is_checked_against_the_screen(tmp_path: Path, tmux_socket: str, sv_home: Path,
                                                               visible: bool) -> None:
    """A crash between journaling a handoff's intent and its delivery: on restart the controller sends
    it only if its marker is not on the screen."""
    s, spec, settings = make(tmp_path, tmux_socket, sv_home, IDLE)
    run_id = f"run_intent_{visible}"
    j = Journal(settings.journal_path(run_id), run_id)
    h = handoff.new_handoff("Continue with the next step: test", decision_id="dec1", run_id=run_id,
                            pane_id=s.pane_id)
    handoff.journal_intent(j, h)
    if visible:  # it reached the pane before the crash
        handoff.paste(s.surface, s.pane_id, h.text)
        retry_until(lambda: len(s.instructions()) == 1, 20)
    j.close()
    j2 = Journal(settings.journal_path(run_id), run_id)
    ctl = WorkflowController(spec, j2, s.surface, Policy(), settings, run_id, pane_id=s.pane_id,
                             cwd=s.project)
    try:
        ctl.on_observation(obs(), None)
        retry_until(lambda: len(s.instructions()) == 1, 20)
        assert s.instructions()[0].endswith(h.marker)
        acts = [e.payload for e in j2.events() if e.kind == "action"]
        assert acts[-1]["confirmed"] is True and acts[-1]["action_id"] == h.action_id
        assert any(a.get("recovered") for a in acts) == visible
        assert ctl.state.interventions == 1
        # a second restart finds everything delivered: nothing is sent again
        ctl.close()
        ctl2 = WorkflowController(spec, j2, s.surface, Policy(), settings, run_id, pane_id=s.pane_id)
        ctl2.on_observation(obs(), None)
        ctl2.close()
        assert len(s.instructions()) == 1
    finally:
        ctl.close()
        j2.close()


def test_decided_but_never_sent_is_sent_once_after_restart(tmp_path: Path, tmux_socket: str,
                                                           sv_home: Path) -> None:
    s, spec, settings = make(tmp_path, tmux_socket, sv_home, IDLE)
    run_id = "run_decided"
    j = Journal(settings.journal_path(run_id), run_id)
    ctl = WorkflowController(spec, j, None, Policy(), settings, run_id, cwd=s.project)  # no surface: cannot send
    (s.project / "hello.py").write_text("print('hello')\n")
    block = "<checkpoint>\ncheckpoint_seq: 1\nstatus: step_done\ncurrent_node: write\n</checkpoint>"
    ctl.on_output(block)
    retry_until(lambda: (ctl.tick(), ctl.state.awaiting_handoff)[1], 20)
    ctl.close()
    try:
        sent, state = next_supervisor_sends_once(s, spec, settings, run_id, j, block)
    finally:
        j.close()
    assert "next step: test" in sent
    assert state.awaiting_handoff == {}


def test_verified_but_never_decided_is_decided_once_after_restart(tmp_path: Path, tmux_socket: str,
                                                                 sv_home: Path) -> None:
    """Killed after the last verification result was journaled and before the decision it leads to
    (here a retry): the next supervisor of the run makes that decision and sends its instruction once,
    instead of holding the finish forever with nothing asked of the agent."""
    s, spec, settings = make(tmp_path, tmux_socket, sv_home, IDLE)
    run_id = "run_verified"
    j = Journal(settings.journal_path(run_id), run_id)
    ctl = WorkflowController(spec, j, None, Policy(), settings, run_id, cwd=s.project)  # no surface: cannot send
    block = "<checkpoint>\ncheckpoint_seq: 1\nstatus: step_done\ncurrent_node: write\n</checkpoint>"
    ctl.on_output(block)  # hello.py is missing: the write step's verification fails
    retry_until(lambda: (ctl.tick(), ctl.state.awaiting_handoff)[1], 20)
    ctl.close()
    j.close()
    path = settings.journal_path(run_id)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    last_result = max(i for i, ln in enumerate(lines) if '"kind": "verification"' in ln or '"kind":"verification"' in ln)
    path.write_text("".join(lines[:last_result + 1]), encoding="utf-8")  # the journal as the kill left it
    j2 = Journal(path, run_id)
    try:
        left = initial_state(spec, run_id)
        for e in j2.events():
            fold(left, e)
        assert left.decided and not left.pending_verify  # verified, not decided
        sent, _ = next_supervisor_sends_once(s, spec, settings, run_id, j2, block)
        kinds = [e.payload.get("kind") for e in j2.events() if e.kind == "decision"]
    finally:
        j2.close()
    assert "hello.py" in sent, sent  # the retry names what failed
    assert kinds.count("retry") == 1, kinds


def test_review_without_live_supervisor_goes_to_journal(tmp_path: Path, sv_home: Path) -> None:
    settings = Settings(home=sv_home).ensure()
    run_id = "run_offline"
    Journal(settings.journal_path(run_id), run_id).close()
    assert submit_control(settings, run_id, "review", by="human") == "journal"
    with offline_controller(sv_home, run_id) as (ctl, j):
        assert ctl.state.reviewed_by("human")
        # while this controller is live, requests go through the control folder and are journaled once
        assert submit_control(settings, run_id, "stop") == "live"
        ctl.tick()
        ctl.tick()
        assert ctl.stop_requested
        assert sum(1 for e in j.events() if e.kind == "note" and e.payload.get("type") == "stop") == 1


def test_malformed_checkpoint_is_recorded_and_never_raises(tmp_path: Path, sv_home: Path) -> None:
    with offline_controller(sv_home, "run_bad") as (ctl, j):
        for junk in ["<checkpoint></checkpoint>", "<checkpoint>status: [unclosed</checkpoint>",
                     "<checkpoint>\x00\x01 binary ☃ </checkpoint>", "<checkpoint>checkpoint_seq: -3\nstatus: x"
                     "</checkpoint>", "<checkpoint>" + "a: b\n" * 5000 + "</checkpoint>"]:
            assert ctl.on_output(junk) == []
        evs = [e.payload for e in j.events() if e.kind == "checkpoint"]
        assert len(evs) == 5 and all(p["parse_error"] for p in evs)
        assert ctl.state.malformed == 5


def test_agent_restart_is_followed(tmp_path: Path, sv_home: Path) -> None:
    """seq back to 1 after an agent restart: the new blocks are processed, the old ones never again."""
    (tmp_path / "hello.py").write_text("print('hello')\n")

    def cp(seq: int, status: str, node: str, summary: str) -> str:
        return (f"<checkpoint>\ncheckpoint_seq: {seq}\nstatus: {status}\ncurrent_node: {node}\n"
                f"summary: {summary}\n</checkpoint>\n")

    with offline_controller(sv_home, "run_restart", cwd=tmp_path) as (ctl, j):
        old = cp(1, "working", "write", "starting") + cp(2, "step_done", "write", "wrote hello.py")
        ctl.on_output(old)
        retry_until(lambda: (ctl.tick(), ctl.state.node("write").status == "done")[1], 20)
        after = old + cp(1, "working", "test", "restarted, picking up the tests")
        ctl.on_output(after)
        evs = [e.payload for e in j.events() if e.kind == "checkpoint"]
        assert [(p["checkpoint"]["checkpoint_seq"], p["epoch"], p["restart"]) for p in evs] == [
            (1, 0, False), (2, 0, False), (1, 1, True)]
        ctl.on_output(after + cp(2, "step_done", "test", "tests pass"))
        evs = [e.payload for e in j.events() if e.kind == "checkpoint"]
        assert len(evs) == 4 and evs[-1]["epoch"] == 1 and not evs[-1]["restart"]


def test_escalation_reaches_the_webhook(tmp_path: Path, sv_home: Path, monkeypatch: pytest.MonkeyPatch,
                                        receiver: WebhookReceiver) -> None:
    monkeypatch.setenv("SUPERVISOR_WEBHOOK_URL", receiver.url)
    monkeypatch.setenv("SUPERVISOR_WEBHOOK_SECRET", WEBHOOK_SECRET)
    with offline_controller(sv_home, "run_hook") as (ctl, j):
        ctl.on_output("<checkpoint>\ncheckpoint_seq: 1\nstatus: blocked\ncurrent_node: write\n"
                      "needs: [the deploy key]\n</checkpoint>")
        retry_until(lambda: receiver.accepted, 20)
        [batch] = receiver.accepted
        n = batch["notifications"][0]
        assert n["kind"] == "escalation" and "the deploy key" in n["title"] and n["run_id"] == "run_hook"
        assert "supervisor runs resume run_hook" in n["next_action"]
        chans = {e.payload["channel"] for e in j.events() if e.kind == "notification"}
        assert chans == {"jsonl", "webhook"}


def test_notify_then_ai_tries_up_to_max_auto_interventions_per_pause(tmp_path: Path, tmux_socket: str,
                                                                     sv_home: Path) -> None:
    """thin-supervisor's `max_auto_interventions: N`: while a pause lasts, the agent is asked to try
    itself N times, each `ai_after_s` after the last try, then it is left to a human; a new pause
    gets N tries of its own; a restarted controller (state folded from the journal) keeps the count."""
    s, spec, settings = make(tmp_path, tmux_socket, sv_home, IDLE)
    pol = Policy.model_validate({"pause": {"mode": "notify_then_ai", "ai_after_s": 1.0, "max_auto_interventions": 2}})
    j = Journal(settings.journal_path("run_ai3"), "run_ai3")
    ctl = WorkflowController(spec, j, s.surface, pol, settings, "run_ai3", pane_id=s.pane_id, cwd=s.project)

    def tries() -> list[dict]:
        return [e.payload for e in j.events() if e.kind == "decision"
                and e.payload.get("rule") == "workflow:notify_then_ai"]

    try:
        ctl.on_output("<checkpoint>\ncheckpoint_seq: 1\nstatus: blocked\ncurrent_node: write\n"
                      "needs: [a name]\n</checkpoint>")
        retry_until(lambda: (ctl.tick(), len(tries()) == 1)[1], 20, message=lambda: str(tries()))
        retry_until(lambda: len(s.instructions()) == 1, 20)  # (ticks make decisions: none while it types)
        retry_until(lambda: (ctl.tick(), len(tries()) == 2)[1], 20, message=lambda: str(tries()))
        assert "(try 1 of 2)" in tries()[0]["reason"] and "(try 2 of 2)" in tries()[1]["reason"]
        retry_until(lambda: len(s.instructions()) == 2, 20)
    finally:
        ctl.close()
    ctl = WorkflowController(spec, j, s.surface, pol, settings, "run_ai3", pane_id=s.pane_id, cwd=s.project)
    try:
        # however long this pause lasts, no third try (the state folded from the journal counts two)
        assert ctl.state.ai_tries == 2
        assert decide_on_pause(spec, ctl.state, pol, time.time() + 3600) is None
        ctl.tick()
        assert len(tries()) == 2
        ctl.on_output("<checkpoint>\ncheckpoint_seq: 2\nstatus: blocked\ncurrent_node: write\n"
                      "needs: [a second thing]\n</checkpoint>")
        retry_until(lambda: (ctl.tick(), len(tries()) == 3)[1], 20, message=lambda: str(tries()))
        assert "(try 1 of 2)" in tries()[2]["reason"], "a new pause has tries of its own"
    finally:
        ctl.close()
        j.close()


def test_notify_then_ai_hands_the_agent_a_try_once(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    s, spec, settings = make(tmp_path, tmux_socket, sv_home, IDLE)
    pol = Policy.model_validate({"pause": {"mode": "notify_then_ai", "ai_after_s": 0.3}})
    j = Journal(settings.journal_path("run_ai"), "run_ai")
    ctl = WorkflowController(spec, j, s.surface, pol, settings, "run_ai", pane_id=s.pane_id, cwd=s.project)
    try:
        ctl.on_output("<checkpoint>\ncheckpoint_seq: 1\nstatus: blocked\ncurrent_node: write\n"
                      "needs: [a name for the file]\n</checkpoint>")
        assert ctl.paused and s.instructions() == []
        retry_until(lambda: (ctl.tick(), len(s.instructions()) == 1)[1], 20)
        text = s.instructions()[0]
        assert "No human has answered yet about step write" in text and "a name for the file" in text
        for _ in range(5):  # once per pause, however long it lasts
            ctl.tick()
        assert len(s.instructions()) == 1
        d = [e.payload for e in j.events() if e.kind == "decision" and e.payload.get("rule") == "workflow:notify_then_ai"]
        assert len(d) == 1 and d[0]["trigger_id"] and d[0]["handoff_kind"] == "unblock"
    finally:
        ctl.close()
        j.close()
    # notify_only (the default) never does this
    j2 = Journal(settings.journal_path("run_ai2"), "run_ai2")
    ctl2 = WorkflowController(spec, j2, s.surface, Policy(), settings, "run_ai2", pane_id=s.pane_id)
    try:
        ctl2.on_output("<checkpoint>\ncheckpoint_seq: 1\nstatus: blocked\ncurrent_node: write\n</checkpoint>")
        ctl2.tick()
        assert not [e for e in j2.events() if e.kind == "action"]
    finally:
        ctl2.close()
        j2.close()


def test_a_checkpoint_naming_another_run_is_ignored(tmp_path: Path, sv_home: Path) -> None:
    """A checkpoint block for another run (quoted in output, pasted from elsewhere) is journaled as
    ignored and never advances this run's workflow, not even after a restart."""
    other = ("<checkpoint>\nrun_id: run_someone_else\ncheckpoint_seq: 1\nstatus: step_done\ncurrent_node: write\n"
             "summary: wrote hello.py\n</checkpoint>")
    with offline_controller(sv_home, "run_mine") as (ctl, j):
        assert ctl.on_output(other) == []
        cps = [e.payload for e in j.events() if e.kind == "checkpoint"]
        assert len(cps) == 1 and "another run" in cps[0]["ignored"]
        assert any(e.kind == "note" and e.payload.get("type") == "checkpoint_ignored" for e in j.events())
        assert ctl.state.checkpoints == 0 and not [e for e in j.events() if e.kind == "decision"]
    with offline_controller(sv_home, "run_mine") as (ctl2, j):  # a restarted supervisor
        assert ctl2.tick() == [] and ctl2.on_output(other) == []
        assert not [e for e in j.events() if e.kind == "decision"]
