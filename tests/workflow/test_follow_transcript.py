"""`supervisor follow TRANSCRIPT --spec SPEC`: a workflow run from an agent's JSONL transcript
alone, as a real process with no tmux at all: checkpoints read from the transcript, verifiers run,
a retry instruction journaled and notified (never typed), review through the control channel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.workflow.spec import approve_spec_text
from tests.conftest import REPO, run_cli
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import SPEC3, journal_events, kinds, wf_decisions


def say(transcript: Path, text: str) -> None:
    """The agent writes one assistant message to its transcript (Claude Code's layout)."""
    with open(transcript, "a") as fh:
        fh.write(json.dumps({"type": "assistant", "message": {"role": "assistant",
                                                             "content": [{"type": "text", "text": text}]}}) + "\n")


def follow_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A project folder, an approved 3-step spec and an empty transcript for a `follow` run."""
    project = tmp_path / "project"
    project.mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(approve_spec_text(SPEC3, "tests"))
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("")
    return project, spec, transcript


def checkpoint(seq: int, status: str, node: str, summary: str) -> str:
    return (f"Done.\n<checkpoint>\ncheckpoint_seq: {seq}\nstatus: {status}\ncurrent_node: {node}\n"
            f"summary: {summary}\n</checkpoint>")


@pytest.mark.slow
def test_follow_a_transcript_to_the_finish(tmp_path: Path, sv_home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(approve_spec_text(SPEC3, "tests"))
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "go"}}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "SUPERVISOR_TMUX"))}
    env.update(SUPERVISOR_HOME=str(sv_home), SUPERVISOR_TMUX_SOCKET="no-such-server-here", PYTHONUNBUFFERED="1")
    log = tmp_path / "follow.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "follow", str(transcript), "--spec", str(spec),
                                 "--cwd", str(project), "--agent", "claude", "--timeout", "120"],
                                env=env, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
    try:
        run_id = retry_until(lambda: next(iter(p.stem for p in (sv_home / "journals").glob("*.jsonl")), None), 60,
                             message="the run to start")

        def decided(kind: str, n: int = 1) -> bool:
            return sum(d["kind"] == kind for d in wf_decisions(journal_events(sv_home, run_id))) >= n

        (project / "hello.py").write_text("print('hello, world')\n")
        say(transcript, checkpoint(1, "step_done", "write", "wrote hello.py"))
        retry_until(lambda: decided("continue"), 60, message=lambda: log.read_text()[-2000:])
        (project / "check.py").write_text("import sys\nprint('FAIL: greeting should say hello, world')\nsys.exit(1)\n")
        say(transcript, checkpoint(2, "step_done", "test", "check written"))
        retry_until(lambda: decided("retry"), 60, message=lambda: log.read_text()[-2000:])
        notes = [n for n in kinds(journal_events(sv_home, run_id), "note")
                 if n.get("type") == "instruction_undelivered"]
        assert [n["handoff_kind"] for n in notes] == ["next_step", "retry"]
        assert "FAIL: greeting should say hello, world" in notes[1]["text"], "the retry carries the failing output"
        told = [json.loads(x) for x in (sv_home / "notifications.jsonl").read_text().splitlines()]
        assert any(t["title"].startswith("hand the agent:") and "FAIL: greeting" in t["body"] for t in told)
        (project / "check.py").write_text("print('ok')\n")
        say(transcript, checkpoint(3, "step_done", "test", "fixed"))
        retry_until(lambda: decided("continue", 2), 60, message=lambda: log.read_text()[-2000:])
        (project / "README.md").write_text("Run hello.py.\n")
        say(transcript, checkpoint(4, "workflow_done", "docs", "documented"))
        retry_until(lambda: any(p.get("hold") == "review" for p in wf_decisions(journal_events(sv_home, run_id))),
                    60, message=lambda: log.read_text()[-2000:])
        status = json.loads(run_cli("status", "--json", env=env).stdout)
        assert [(r["run_id"], r["supervisor_alive"]) for r in status] == [(run_id, True)]
        r = run_cli("runs", "review", run_id, "--by", "human", env=env)
        assert r.returncode == 0, r.stderr
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    evs = journal_events(sv_home, run_id)
    assert all(c["source"] == "transcript" for c in kinds(evs, "checkpoint")) and len(kinds(evs, "checkpoint")) == 4
    assert kinds(evs, "run_started")[0]["surface"] == "transcript" and not kinds(evs, "action"), "nothing was typed"
    assert kinds(evs, "run_ended")[-1]["outcome"] == "finished"
    assert f"run {run_id} finished" in log.read_text()
    r = run_cli("observe", run_id, "--json", env=env)
    assert json.loads(r.stdout)["outcome"] == "finished"


@pytest.mark.slow
def test_notify_then_ai_max_auto_interventions_through_the_cli(tmp_path: Path, sv_home: Path) -> None:
    """`pause: {mode: notify_then_ai, max_auto_interventions: 2}` in the policy file a real
    `supervisor follow` process uses: a blocked checkpoint gets two tries (each journaled and
    notified for a person to hand over, as follow types nothing), then the run waits for a human,
    who stops it through `supervisor runs stop`."""
    project, spec, transcript = follow_files(tmp_path)
    policy = tmp_path / "policy.yaml"
    policy.write_text("pause:\n  mode: notify_then_ai\n  ai_after_s: 0.5\n  max_auto_interventions: 2\n")
    env = dict(os.environ, SUPERVISOR_HOME=str(sv_home), PYTHONUNBUFFERED="1")
    env.pop("SUPERVISOR_POLICY", None)
    log = tmp_path / "follow.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "follow", str(transcript), "--spec", str(spec),
                                 "--cwd", str(project), "--policy", str(policy), "--timeout", "120"],
                                env=env, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
    try:
        run_id = retry_until(lambda: next(iter(p.stem for p in (sv_home / "journals").glob("*.jsonl")), None), 60)
        say(transcript, "<checkpoint>\ncheckpoint_seq: 1\nstatus: blocked\ncurrent_node: write\n"
                        "needs: [a name for the file]\n</checkpoint>")

        def tries() -> list[dict]:
            return [d for d in wf_decisions(journal_events(sv_home, run_id)) if d.get("rule") == "workflow:notify_then_ai"]

        retry_until(lambda: len(tries()) == 2, 60, message=lambda: log.read_text()[-2000:])
        assert ["(try 1 of 2)" in tries()[0]["reason"], "(try 2 of 2)" in tries()[1]["reason"]] == [True, True]
        # the third would come 0.5 s after the second: it never does; the run waits for a human
        observed = retry_until(lambda: (r := run_cli("observe", run_id, "--json", env=env)).returncode == 0
                               and json.loads(r.stdout), 30)
        assert observed["paused"] is True and observed["supervisor_alive"] is True
        notes = [n for n in kinds(journal_events(sv_home, run_id), "note") if n.get("type") == "instruction_undelivered"]
        assert [n["handoff_kind"] for n in notes] == ["unblock", "unblock"]
        assert run_cli("runs", "stop", run_id, env=env).returncode == 0
        assert proc.wait(60) == 5, log.read_text()[-2000:]  # stopped while paused
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(tries()) == 2
