"""The workflow loop in-process against a real tmux pane (fast feedback for the slow CLI tests)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from supervisor.policy import Policy
from supervisor.settings import Settings
from supervisor.workflow.controller import submit_control
from supervisor.workflow.live import supervise_pane
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import journal_events, kinds, script3, start_agent, wf_decisions


@pytest.mark.slow
def test_three_steps_retry_review_finish(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    s = start_agent(tmp_path, tmux_socket, script3())
    settings = Settings(home=sv_home, tmux_socket=tmux_socket).ensure()
    policy = Policy.model_validate({"timing": {"recheck_s": 0.5, "settle_ms": 80}})
    run_id = "run_inproc1"
    out: dict[str, object] = {}

    def go() -> None:
        out["runner"] = supervise_pane(settings, s.pane_id, s.spec_path, policy=policy, run_id=run_id,
                                       timeout=120)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    retry_until(lambda: any(p.get("hold") == "review" for p in wf_decisions(journal_events(sv_home, run_id))),
                60, message=lambda: str([(p["kind"], p["reason"]) for p in
                                         wf_decisions(journal_events(sv_home, run_id))]))
    assert t.is_alive(), "the finish gate holds the run open until a review"
    instr = s.instructions()
    assert len(instr) == 3, instr
    assert "next step: test" in instr[0]
    assert "FAIL: greeting should say hello, world" in instr[1]
    assert "docs" in instr[2]
    assert submit_control(settings, run_id, "review", by="human") == "live"
    t.join(30)
    assert not t.is_alive()
    runner = out["runner"]
    assert runner.outcome == "finished"  # type: ignore[attr-defined]
    evs = journal_events(sv_home, run_id)
    ks = [p["kind"] for p in wf_decisions(evs)]
    assert ks.count("retry") == 1 and ks[-1] == "finish", ks
    assert kinds(evs, "run_ended")[-1]["outcome"] == "finished"


@pytest.mark.slow
def test_checkpoints_from_the_transcript(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """An agent whose checkpoints only reach its JSONL transcript (not the screen) is followed too."""
    import json

    s = start_agent(tmp_path, tmux_socket, {"turns": [{"work_s": 0.2}, {"work_s": 0.2}]})
    (s.project / "hello.py").write_text("print('hello')\n")
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "go"}}) + "\n")
    settings = Settings(home=sv_home, tmux_socket=tmux_socket).ensure()
    policy = Policy.model_validate({"timing": {"recheck_s": 0.3, "settle_ms": 50}})
    run_id = "run_transcript"

    errors: list[BaseException] = []

    def go() -> None:
        from supervisor.workflow.live import supervise_pane as sp

        try:
            sp(settings, s.pane_id, s.spec_path, policy=policy, run_id=run_id, timeout=60, transcript=transcript)
        except BaseException as exc:  # surfaced in the assertion message
            errors.append(exc)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    retry_until(lambda: journal_events(sv_home, run_id), 20)
    retry_until(lambda: s.records("spinner"), 60, message="the agent to start working")
    with open(transcript, "a") as fh:
        fh.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Wrote it.\n<checkpoint>\ncheckpoint_seq: 1\nstatus: step_done\n"
                                     "current_node: write\nsummary: wrote hello.py\n</checkpoint>"}]}}) + "\n")
    retry_until(lambda: len(s.instructions()) == 1, 60,
                message=lambda: f"errors={errors!r} journal={[(e.kind, e.payload.get('kind')) for e in journal_events(sv_home, run_id)][-12:]}")
    assert "next step: test" in s.instructions()[0]
    cps = kinds(journal_events(sv_home, run_id), "checkpoint")
    assert len(cps) == 1 and cps[0]["source"] == "transcript"
    submit_control(settings, run_id, "stop")
    t.join(30)
    assert not t.is_alive()


@pytest.mark.slow
def test_slow_verifier_does_not_hold_up_another_pane(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """Two panes, one supervisor: pane A's verifier takes 20 s; pane B's step is verified and its
    next instruction delivered while A's verifier is still running."""
    from supervisor.runner import RunConfig
    from supervisor.surfaces.tmux import TmuxSurface
    from supervisor.workflow.live import WorkflowSupervisor
    from supervisor.workflow.spec import approve_spec_text, parse_spec

    spec_text = approve_spec_text(
        "steps:\n  - id: write\n    verify:\n      - {type: command, run: 'if [ -e slow ]; then sleep 20; fi; "
        "test -e hello.py', timeout_s: 60}\n  - id: test\n    objective: next\n", "tests")
    spec = parse_spec(spec_text)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = start_agent(tmp_path / "a", tmux_socket, script3(), name="a")
    (a.project / "slow").write_text("")
    b = start_agent(tmp_path / "b", tmux_socket, script3(), name="b")
    settings = Settings(home=sv_home, tmux_socket=tmux_socket).ensure()
    policy = Policy.model_validate({"timing": {"recheck_s": 0.3, "settle_ms": 50}})
    sup = WorkflowSupervisor(TmuxSurface(tmux_socket), settings, RunConfig(policy=policy), spec=spec,
                             socket=tmux_socket)
    ra = sup.add_pane(a.pane_id)
    rb = sup.add_pane(b.pane_id)
    t = threading.Thread(target=lambda: sup.run(timeout=60), daemon=True)
    t.start()
    try:
        retry_until(lambda: len(b.instructions()) == 1, 15, message="pane B's next-step instruction")
        assert a.instructions() == [], "pane A is still being verified"
        assert ra.workflow.busy() and not ra.done and not rb.done
    finally:
        sup.stop()
        t.join(20)
        sup.close()


@pytest.mark.slow
def test_agent_idle_without_checkpoints_escalates_once(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    s = start_agent(tmp_path, tmux_socket, {"turns": [{"work_s": 0.8}]})
    settings = Settings(home=sv_home, tmux_socket=tmux_socket).ensure()
    policy = Policy.model_validate({"timing": {"recheck_s": 0.3, "settle_ms": 50}})
    run_id = "run_idle"
    t = threading.Thread(target=lambda: supervise_pane(settings, s.pane_id, s.spec_path, policy=policy,
                                                       run_id=run_id, timeout=60), daemon=True)
    t.start()

    def idle_pauses() -> list[dict]:
        return [p for p in kinds(journal_events(sv_home, run_id), "pause") if p.get("source") == "workflow"]

    retry_until(idle_pauses, 30)
    [p] = idle_pauses()
    assert "without reporting any checkpoint" in p["pause_reason"] and "skill install" in p["pause_reason"]
    assert f"supervisor runs resume {run_id}" in p["next_action"]
    submit_control(settings, run_id, "stop")
    t.join(30)
    assert not t.is_alive()
    evs = journal_events(sv_home, run_id)
    assert [d["rule"] for d in wf_decisions(evs)] == ["workflow:idle"]
    assert kinds(evs, "run_ended")[-1]["outcome"] == "escalated"


@pytest.mark.slow
def test_workflow_run_ends_when_the_agent_exits(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """The finish gate holds an idle agent's "finished", never its exit: a workflow run whose agent
    exits mid-plan ends `exited` at once (it used to hang until a timeout)."""
    import time

    s = start_agent(tmp_path, tmux_socket, {"turns": [{"work_s": 0.3}]})
    settings = Settings(home=sv_home, tmux_socket=tmux_socket).ensure()
    policy = Policy.model_validate({"timing": {"recheck_s": 0.3, "settle_ms": 50}})
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(r=supervise_pane(settings, s.pane_id, s.spec_path,
                                                                    policy=policy, run_id="run_exit", timeout=120)),
                         daemon=True)
    t.start()
    retry_until(lambda: s.records("script_done"), 30, message="the agent to finish its turn")
    s.surface.send_keys(s.pane_id, ["C-c"])  # the agent quits
    exited_at = time.monotonic()
    t.join(60)
    assert not t.is_alive() and time.monotonic() - exited_at < 30
    assert out["r"].outcome == "exited"
    assert kinds(journal_events(sv_home, "run_exit"), "run_ended")[-1]["outcome"] == "exited"
