"""A supervisor killed with SIGKILL and started again continues the same run with its state:
strikes, cooldown, pause, answered prompt instances, pending confirmations. Real `supervisor`
processes against a real tmux server; the scripted agent counts every key it gets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from supervisor.policy import dump_policy
from tests.conftest import REPO, run_cli
from tests.helpers import retry_until
from tests.live_helpers import (
    agent_command,
    answers,
    assert_no_stray_keys,
    fast_policy,
    read_record,
    write_script,
)

pytestmark = pytest.mark.slow


def _events(home: Path) -> list[dict]:
    out = []
    for p in sorted((home / "journals").glob("*.jsonl")) if (home / "journals").exists() else []:
        out += [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    return out


def _kinds(home: Path, kind: str) -> list[dict]:
    return [e["payload"] for e in _events(home) if e["kind"] == kind]


def _sent(home: Path) -> list[dict]:
    return [p for p in _kinds(home, "action") if p.get("kind") == "send_keys" and p.get("delivered")
            and p.get("confirmed") is None]


class Supervisors:
    """The real `python -m supervisor` processes of one test, started one after another on its tmux
    server, their output in one log; any still running after the test is killed."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.procs: list[subprocess.Popen] = []

    def start(self, *args: str) -> subprocess.Popen:
        with open(self.log, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "supervisor", *args], env=self.env, cwd=REPO,
                                    stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def tail(self) -> str:
        """The end of their output (what a failed wait shows)."""
        return self.log.read_text()[-2000:]

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        """SIGKILL: a supervisor that gets no chance to tidy up."""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    @staticmethod
    def interrupt(proc: subprocess.Popen) -> None:
        """Ctrl-C, as a user stops a supervisor, and wait for it to end."""
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)


@pytest.fixture
def supervisors(live_env: dict[str, str], tmp_path: Path) -> Iterator[Supervisors]:
    sups = Supervisors(live_env, tmp_path / "sup.log")
    yield sups
    sups.close()


def test_killed_while_a_stuck_prompt_cools_down_resumes_with_its_strikes(supervisors: Supervisors, tmp_path: Path,
                                                                        sv_home: Path) -> None:
    """A prompt that never takes its answer: answered once, not taken, SIGKILL during the cooldown;
    the restarted supervisor (`attach` on the pane) continues the same run, retries once after the
    cooldown it remembered, and then escalates: two answers in all, one pause."""
    pol = fast_policy(confirm_timeout_s=0.8)
    pol.budgets.cooldown_s = 4.0
    pol.budgets.strike_limit = 2
    policy = tmp_path / "p.yaml"
    policy.write_text(dump_policy(pol))
    script = write_script(tmp_path, [{"spinner": {"seconds": 0.3}},
                                     {"prompt": {"id": "stuck", "kind": "bash", "command": "make", "ignore": 100}}])
    rec = tmp_path / "rec.jsonl"
    proc = supervisors.start("run", "--policy", str(policy), "--session", "s", "--", *agent_command(script, rec))
    retry_until(lambda: [p for p in _kinds(sv_home, "friction") if p["kind"] == "answer_not_taken"], 60,
                message=supervisors.tail)
    supervisors.kill(proc)
    assert len(_sent(sv_home)) == 1
    pane = _kinds(sv_home, "run_started")[0]["pane_id"]
    proc = supervisors.start("attach", "--policy", str(policy), pane)
    retry_until(lambda: _kinds(sv_home, "pause"), 60, message=supervisors.tail)
    supervisors.interrupt(proc)
    assert len(list((sv_home / "journals").glob("*.jsonl"))) == 1, "the same run, not a new one"
    notes = [p for p in _kinds(sv_home, "note") if p.get("type") == "supervision_resumed"]
    assert len(notes) == 1
    sent = _sent(sv_home)
    assert len(sent) == 2 and sent[1]["retry"] is True, sent
    pauses = _kinds(sv_home, "pause")
    assert len(pauses) == 1 and pauses[0]["rule"] == "strike-guard", pauses
    ignored = [r for r in read_record(rec) if r["event"] == "ignored"]
    assert len(ignored) == 2
    # the retry came after the cooldown the first supervisor journaled, not at once
    not_taken = next(e for e in _events(sv_home) if e["kind"] == "friction" and e["payload"]["kind"] == "answer_not_taken")
    retry_at = next(e["at"] for e in _events(sv_home) if e["kind"] == "action" and e["payload"].get("retry")
                    and e["payload"].get("delivered"))
    assert retry_at >= not_taken["payload"]["cooldown_until"] - 0.05
    assert_no_stray_keys(rec)


def test_killed_while_paused_resumes_paused_and_a_human_ends_the_pause(supervisors: Supervisors, live_env: dict[str, str],
                                                                       tmp_path: Path, sv_home: Path,
                                                                       tmux_socket: str) -> None:
    """SIGKILL while a dangerous prompt waits for a human; `supervisor runs resume` continues the
    run still paused (no second escalation, no keys); the human declines; the resume event says
    who ended the pause, after how long, and what they chose."""
    policy = tmp_path / "p.yaml"
    policy.write_text(dump_policy(fast_policy()))
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "push", "kind": "bash", "command": "git push --force origin main",
                    "on_decline": [{"say": "Not pushing."}]}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    proc = supervisors.start("run", "--policy", str(policy), "--", *agent_command(script, rec))
    retry_until(lambda: _kinds(sv_home, "pause"), 60, message=supervisors.tail)
    supervisors.kill(proc)
    run_id = _events(sv_home)[0]["run_id"]
    status = json.loads(run_cli("status", "--json", env=live_env).stdout)
    assert status[0]["run_id"] == run_id and status[0]["supervisor_alive"] is False and status[0]["paused"]
    proc = supervisors.start("runs", "resume", run_id)
    retry_until(lambda: [p for p in _kinds(sv_home, "note") if p.get("type") == "supervision_resumed"], 60,
                message=supervisors.tail)
    retry_until(lambda: json.loads(run_cli("status", "--json", env=live_env).stdout)[0]["supervisor_alive"], 30,
                message="the resumed supervisor to hold the run")
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", _kinds(sv_home, "run_started")[0]["pane_id"],
                    "3"], check=True)
    resume = retry_until(lambda: _kinds(sv_home, "resume"), 60, message=supervisors.tail)
    retry_until(lambda: _kinds(sv_home, "turn_finished"), 60, message=supervisors.tail)
    supervisors.interrupt(proc)
    assert len(_kinds(sv_home, "pause")) == 1, "not escalated again after the restart"
    assert len(_sent(sv_home)) == 1 and answers(rec)["p1"]["approved"] is True
    assert answers(rec)["push"]["approved"] is False and answers(rec)["push"]["keys"] == ["3"]
    r = resume[0]
    assert r["by"] == "human" and r["waited_s"] > 0 and r["selected"].startswith("No"), r
    assert_no_stray_keys(rec)


def test_a_run_whose_supervisor_and_pane_are_gone_is_closed_by_status(supervisors: Supervisors, live_env: dict[str, str],
                                                                       tmp_path: Path, sv_home: Path,
                                                                       tmux_socket: str) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(dump_policy(fast_policy()))
    script = write_script(tmp_path, [{"spinner": {"seconds": 0.3}}, {"idle": {"id": "wait"}}])
    proc = supervisors.start("run", "--policy", str(policy), "--", *agent_command(script, tmp_path / "r.jsonl"))
    retry_until(lambda: _kinds(sv_home, "observation"), 60, message=supervisors.tail)
    supervisors.kill(proc)
    live = json.loads(run_cli("status", "--json", env=live_env).stdout)
    assert len(live) == 1 and live[0]["supervisor_alive"] is False, "the pane lives: the run can still be resumed"
    pane = _kinds(sv_home, "run_started")[0]["pane_id"]
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", pane, "/exit", "Enter"], check=True)
    retry_until(lambda: subprocess.run(["tmux", "-L", tmux_socket, "display", "-p", "-t", pane, "#{pane_dead}"],
                                       capture_output=True, text=True).stdout.strip() == "1", 30,
                message="the agent to exit")
    assert json.loads(run_cli("status", "--json", env=live_env).stdout) == []
    ended = json.loads(run_cli("status", "--json", "--all", env=live_env).stdout)[0]
    assert ended["outcome"] == "exited"
    reason = _kinds(sv_home, "run_ended")[0]["reason"]
    assert "supervisor is gone" in reason and "dead" in reason


def test_keys_of_unknown_fate_after_a_crash_are_reconciled_from_the_screen(tmux_socket: str, sv_home: Path,
                                                                          tmp_path: Path) -> None:
    """A supervisor that died between journaling an answer's intent and its delivery leaves keys of
    unknown fate. The restarted one journals them `unknown` and lets the screen tell: here the keys
    never arrived (the prompt is still live): after the confirmation timeout it gets its one retry,
    and exactly one key reaches the agent. (No real process can be killed at exactly that instant on
    demand, so the test writes the journal such a crash leaves; everything else is real.)"""
    from supervisor.classify import classify
    from supervisor.journal import Journal
    from supervisor.policy import Policy
    from supervisor.runner import RunConfig, Supervisor
    from supervisor.settings import Settings
    from supervisor.surfaces.tmux import TmuxSurface

    pol = fast_policy(confirm_timeout_s=0.8)
    pol.budgets.cooldown_s = 0.5
    script = write_script(tmp_path, [{"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
                                     {"spinner": {"seconds": 0.3}}, {"done": {}}])
    rec = tmp_path / "rec.jsonl"
    surface = TmuxSurface(tmux_socket)
    info = surface.new_session("a", agent_command(script, rec), width=100, height=30, cwd=str(REPO))
    retry_until(lambda: "Esc to cancel" in surface.capture(info.pane_id).plain, 20, message="the prompt")
    settings = Settings(home=sv_home).ensure()
    from supervisor.screen import make_screen

    raw = surface.capture(info.pane_id)
    obs = classify(make_screen(raw.text, width=100, height=30), pol)
    assert obs.prompt is not None
    sig = obs.prompt.signature
    run_id = "run_crashed"
    with Journal(settings.journal_path(run_id), run_id) as j:
        j.append("run_started", {"pane_id": info.pane_id, "socket": tmux_socket, "policy_id": pol.policy_id,
                                 "policies": {pol.policy_id: pol.canonical()}, "agent": "claude", "pid": 1})
        j.append("observation", {"observation": obs.model_dump(mode="json"), "now": time.time(),
                                 "live_prompt": {"signature": sig, "instance_id": "pin_crash", "first": None,
                                                 "last": None}})
        j.append("action", {"action_id": "act_crash", "decision_id": "dec_crash", "kind": "send_keys", "keys": ["1"],
                            "delivered": False, "instance_id": "pin_crash", "signature": sig})
    sup = Supervisor(surface, settings, RunConfig(policy=Policy.model_validate(pol.canonical()), turns=1),
                     socket=tmux_socket)
    runner = sup.add_pane(info, run_id=run_id, resume=True)
    t = threading.Thread(target=lambda: sup.run(timeout=60), daemon=True)
    t.start()
    try:
        retry_until(lambda: runner.done, 60, message=lambda: f"the run to finish: {read_record(rec)[-3:]}")
    finally:
        sup.stop()
        t.join(20)
        sup.close(final_sync=False)
    acts = [e.payload for e in runner.journal.events() if e.kind == "action" and e.payload.get("kind") == "send_keys"]
    assert [a.get("outcome") for a in acts if a.get("outcome")] == ["unknown"]
    assert [a["confirmed"] for a in acts if a.get("confirmed") is not None] == [False, True]
    retried = [a for a in acts if a.get("retry") and a.get("delivered")]
    assert len(retried) == 1
    assert answers(rec)["p1"]["keys"] == ["1"] and runner.outcome == "finished"
    assert_no_stray_keys(rec)
