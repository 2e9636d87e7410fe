"""Workflows end to end in real tmux: the scripted checkpoint agent in a pane, the supervisor as
a real process, the real CLI for reviews and history."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evals.agent import agent_command
from supervisor.workflow.spec import approve_spec_text
from tests.conftest import REPO, run_cli
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import (
    FAILING_CHECK,
    SPEC3,
    STARTED,
    journal_events,
    kinds,
    script3,
    start_agent,
    wf_decisions,
)

pytestmark = pytest.mark.slow

FAST_POLICY = {"timing": {"recheck_s": 0.5, "settle_ms": 80, "confirm_timeout_s": 5}}


def stop_run(proc: subprocess.Popen, run_id: str, env: dict[str, str]) -> None:
    """`runs stop` the run, then wait for its supervisor process to end."""
    r = run_cli("runs", "stop", run_id, env=env)
    assert r.returncode == 0, r.stderr
    proc.wait(60)


def env_for(home: Path, socket: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SUPERVISOR_HOME=str(home), SUPERVISOR_TMUX_SOCKET=socket, PYTHONUNBUFFERED="1")
    env.pop("SUPERVISOR_WAREHOUSE", None)
    return env


def policy_file(tmp_path: Path, extra: dict | None = None) -> Path:
    p = tmp_path / "policy.yaml"
    data = json.loads(json.dumps(FAST_POLICY))
    for k, v in (extra or {}).items():
        data.setdefault(k, {}).update(v)
    p.write_text(yaml.safe_dump(data))
    return p


def start_supervisor(pane: str, spec: Path, run_id: str, env: dict[str, str], policy: Path,
                     log: Path) -> subprocess.Popen[bytes]:
    fh = open(log, "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, "-m", "supervisor.workflow.live", "--pane", pane, "--spec", str(spec),
                             "--run-id", run_id, "--policy", str(policy), "--timeout", "240"],
                            env=env, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)


def held_for_review(home: Path, run_id: str) -> bool:
    return any(p.get("hold") == "review" for p in wf_decisions(journal_events(home, run_id)))


def test_three_step_spec_with_retry_review_and_history(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    s = start_agent(tmp_path, tmux_socket, script3())
    env = env_for(sv_home, tmux_socket)
    run_id = "run_e2e_three"
    proc = start_supervisor(s.pane_id, s.spec_path, run_id, env, policy_file(tmp_path), tmp_path / "sup.log")
    try:
        retry_until(lambda: held_for_review(sv_home, run_id), 90,
                    message=lambda: (tmp_path / "sup.log").read_text()[-2000:])
        # The gate holds: the supervisor is still running although the agent is done and idle.
        assert proc.poll() is None
        instr = s.instructions()
        assert len(instr) == 3, instr
        assert "next step: test" in instr[0]
        assert "The verifier for step test failed" in instr[1]
        assert "FAIL: greeting should say hello, world" in instr[1], "the retry carries the verifier's output"
        assert "docs" in instr[2]
        r = run_cli("runs", "review", run_id, "--by", "human", env=env)
        assert r.returncode == 0, r.stderr
        assert "live supervisor" in r.stdout
        assert proc.wait(60) == 0, (tmp_path / "sup.log").read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    evs = journal_events(sv_home, run_id)
    ks = [p["kind"] for p in wf_decisions(evs)]
    assert ks == ["verify", "continue", "verify", "retry", "verify", "continue", "verify", "escalate", "finish"], ks
    for d in wf_decisions(evs):
        assert d["trigger_id"], d
    cps = kinds(evs, "checkpoint")
    assert len(cps) == 4 and len({c["checkpoint_key"] for c in cps}) == 4
    trig = {d["trigger_id"] for d in wf_decisions(evs)}
    assert trig <= {c["checkpoint_id"] for c in cps}
    ver = kinds(evs, "verification")
    check = [v for v in ver if v["verifier"] == "check"]
    assert [v["passed"] for v in check] == [False, True]
    assert "FAIL: greeting should say hello, world" in check[0]["output"]
    assert kinds(evs, "run_ended")[-1]["outcome"] == "finished"
    acts = [p for p in kinds(evs, "action") if p.get("kind") == "handoff"]
    assert {p["action_id"] for p in acts if p.get("confirmed") is True} == {p["action_id"] for p in acts}
    assert len({p["action_id"] for p in acts}) == 3
    assert any(n["kind"] == "review_needed" for n in kinds(evs, "notification"))
    notes = [json.loads(ln) for ln in (sv_home / "notifications.jsonl").read_text().splitlines()]
    assert any("waiting for a review by human" in n["title"] for n in notes)

    # history from the warehouse
    r = run_cli("runs", "summarize", run_id, "--json", env=env)
    assert r.returncode == 0, r.stderr
    summ = json.loads(r.stdout)
    assert summ["outcome"] == "finished" and summ["handoffs"] == 3 and summ["verifications_failed"] == 1
    assert summ["nodes"] == {"write": "done", "test": "done", "docs": "done"} and summ["reviews"] == ["human"]
    r = run_cli("warehouse", "sql", f"SELECT spec_id FROM runs WHERE run_id = '{run_id}'", "--json", env=env)
    assert r.returncode == 0 and "spec_" in r.stdout, (r.stdout, r.stderr)
    r = run_cli("runs", "export", run_id, env=env)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == len(evs)
    r = run_cli("runs", "replay", run_id, "--no-observations", "--json", env=env)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert len(rep["checkpoints"]) == len(ks) and {x["divergence"] for x in rep["checkpoints"]} == {"agree"}, rep
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump({"budgets": {"max_retries_per_node": 0}}))
    r = run_cli("runs", "replay", run_id, "--no-observations", "--policy", str(strict), "--json", env=env)
    rep = json.loads(r.stdout)
    changed = [(x["recorded"], x["replayed"]) for x in rep["checkpoints"] if x["divergence"] != "agree"]
    assert ("retry", "escalate") in changed, rep
    r = run_cli("runs", "postmortem", run_id, "-o", str(tmp_path / "reports"), env=env)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "reports" / f"postmortem-{run_id}.md").read_text()
    assert "## Failed verifications" in md and "FAIL: greeting should say hello, world" in md


def test_draft_spec_is_refused(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    s = start_agent(tmp_path, tmux_socket, script3(), approve=False)
    env = env_for(sv_home, tmux_socket)
    r = subprocess.run([sys.executable, "-m", "supervisor.workflow.live", "--pane", s.pane_id, "--spec",
                        str(s.spec_path)], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "is a draft and may not run" in r.stderr and "spec approve" in r.stderr
    assert not list((sv_home / "journals").glob("*.jsonl")) if (sv_home / "journals").exists() else True


def test_blocked_checkpoint_escalates_then_resumes(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    script = {"turns": [
        {"work_s": 0.3, "checkpoint": {"status": "blocked", "current_node": "write",
                                       "summary": "cannot write hello.py", "needs": ["write access to the repo"],
                                       "question_for_supervisor": "may I create files here?"}},
        {"work_s": 0.3, "actions": [{"write": {"path": "hello.py", "text": "print('hello')\n"}}],
         "checkpoint": {"status": "step_done", "current_node": "write", "summary": "wrote it after help"}},
    ]}
    s = start_agent(tmp_path, tmux_socket, script)
    env = env_for(sv_home, tmux_socket)
    run_id = "run_e2e_blocked"
    proc = start_supervisor(s.pane_id, s.spec_path, run_id, env, policy_file(tmp_path), tmp_path / "sup.log")
    try:
        def paused() -> list[dict]:
            return [p for p in kinds(journal_events(sv_home, run_id), "pause") if p.get("source") == "workflow"]

        retry_until(paused, 60, message=lambda: (tmp_path / "sup.log").read_text()[-2000:])
        p = paused()[0]
        assert "blocked" in p["pause_reason"] and "write access to the repo" in p["pause_reason"]
        assert f"supervisor runs resume {run_id}" in p["next_action"]
        esc = [d for d in wf_decisions(journal_events(sv_home, run_id)) if d["kind"] == "escalate"]
        assert esc and esc[0]["trigger_id"]
        assert s.instructions() == [], "nothing is sent to a blocked agent"
        nfile = sv_home / "notifications.jsonl"
        retry_until(lambda: nfile.exists() and nfile.read_text().strip(), 20)  # written right after the pause
        notes = [json.loads(ln) for ln in nfile.read_text().splitlines()]
        assert notes[0]["kind"] == "escalation" and notes[0]["next_action"].startswith("answer the agent")
        # the human answers the agent directly; its next checkpoint resumes the run by itself
        s.surface.paste_buffer(s.pane_id, "yes, go ahead\n[handoff 00human]")
        s.surface.send_keys(s.pane_id, ["Enter"])
        retry_until(lambda: kinds(journal_events(sv_home, run_id), "resume"), 60)
        retry_until(lambda: any(d["kind"] == "continue" and d.get("goto") == "test"
                                for d in wf_decisions(journal_events(sv_home, run_id))), 60)
        stop_run(proc, run_id, env)
    finally:
        if proc.poll() is None:
            proc.kill()
    # stopped, or escalated if the agent (whose script has ended) already went idle without a checkpoint
    assert kinds(journal_events(sv_home, run_id), "run_ended")[-1]["outcome"] in ("stopped", "escalated")


def test_sigkill_mid_run_resumes_without_loss_or_duplicates(tmp_path: Path, tmux_socket: str,
                                                            sv_home: Path) -> None:
    script = script3(work_s=0.3)
    script["turns"][1]["work_s"] = 4.0  # the agent is busy on step 2 when the supervisor dies
    s = start_agent(tmp_path, tmux_socket, script)
    env = env_for(sv_home, tmux_socket)
    run_id = "run_e2e_kill"
    pol = policy_file(tmp_path)
    proc = start_supervisor(s.pane_id, s.spec_path, run_id, env, pol, tmp_path / "sup.log")
    try:
        retry_until(lambda: len(s.instructions()) == 1, 60, message=lambda: (tmp_path / "sup.log").read_text())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        events_at_kill = journal_events(sv_home, run_id)
        # While no supervisor runs, the agent finishes step 2 (a failing check) and prints its checkpoint.
        retry_until(lambda: len(s.records("checkpoint")) == 2, 30)
        env2 = dict(env, SUPERVISOR_POLICY=str(pol))
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "runs", "resume", run_id, "--timeout", "240"],
                                env=env2, cwd=REPO, stdout=open(tmp_path / "sup2.log", "wb"),  # noqa: SIM115
                                stderr=subprocess.STDOUT)
        retry_until(lambda: held_for_review(sv_home, run_id), 90,
                    message=lambda: (tmp_path / "sup2.log").read_text()[-3000:])
        r = run_cli("runs", "review", run_id, "--by", "human", env=env)
        assert r.returncode == 0, r.stderr
        assert proc.wait(60) == 0, (tmp_path / "sup2.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    evs = journal_events(sv_home, run_id)
    assert [e.event_id for e in evs[:len(events_at_kill)]] == [e.event_id for e in events_at_kill], "nothing lost"
    instr = s.instructions()
    assert len(instr) == 3, instr
    markers = [r["marker"] for r in s.records("instruction")]
    assert len(set(markers)) == 3, "no instruction was sent twice"
    assert "FAIL: greeting should say hello, world" in instr[1]
    cps = kinds(evs, "checkpoint")
    assert len(cps) == 4 and len({c["checkpoint_key"] for c in cps}) == 4, "each checkpoint processed once"
    assert any(e.kind == "note" and e.payload.get("type") == "supervision_resumed" for e in evs)
    assert kinds(evs, "run_ended")[-1]["outcome"] == "finished"
    delivered = {p["action_id"] for p in kinds(evs, "action") if p.get("kind") == "handoff" and p.get("delivered")}
    assert len(delivered) == 3


def test_checkpoint_left_on_screen_is_processed_once(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """The agent sits idle with its checkpoint on screen and redraws a status line every 50 ms: the
    supervisor sees a new screen (same checkpoint) each time, as a real agent's clock or a minute of
    polling would show it, and is then restarted on that same screen. One checkpoint event, one decision
    chain, nothing resent."""
    spec = SPEC3.replace("must_review_by: human", "must_review_by: null")
    script = {"ticker_s": 0.05, "turns": [
        {"work_s": 0.2, "actions": [{"write": {"path": "hello.py", "text": "print('hello')\n"}}],
         "checkpoint": {"status": "blocked", "current_node": "write", "summary": "waiting on a human",
                        "needs": ["a decision"]}}]}
    s = start_agent(tmp_path, tmux_socket, script, spec_text=spec)
    env = env_for(sv_home, tmux_socket)
    run_id = "run_e2e_onscreen"
    pol = policy_file(tmp_path, {"timing": {"settle_ms": 20}})
    proc = start_supervisor(s.pane_id, s.spec_path, run_id, env, pol, tmp_path / "sup.log")
    try:
        def observations() -> int:
            return sum(1 for e in journal_events(sv_home, run_id) if e.kind == "observation")

        retry_until(lambda: kinds(journal_events(sv_home, run_id), "checkpoint"), 60)
        start_obs = observations()
        retry_until(lambda: observations() >= start_obs + 40, 60, message=lambda: str(observations()))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        # restarted through the real CLI on the same pane: it finds the unfinished run by itself
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "attach", s.pane_id, "--spec", str(s.spec_path)],
                                env=dict(env, SUPERVISOR_POLICY=str(pol)), cwd=REPO,
                                stdout=open(tmp_path / "sup2.log", "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
        retry_until(lambda: observations() >= start_obs + 60, 60, message=lambda: str(observations()))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    assert [p.stem for p in (sv_home / "journals").glob("*.jsonl")] == [run_id], "the same run went on"
    assert "resuming run run_e2e_onscreen" in (tmp_path / "sup2.log").read_text()
    evs = journal_events(sv_home, run_id)
    assert len(kinds(evs, "checkpoint")) == 1
    assert [d["kind"] for d in wf_decisions(evs)] == ["escalate"]
    assert len([p for p in kinds(evs, "pause") if p.get("source") == "workflow"]) == 1
    assert s.instructions() == []


def test_cli_run_with_spec_and_draft_refused(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """`supervisor run --spec SPEC -- AGENT` end to end through the real CLI; a draft is refused."""

    env = env_for(sv_home, tmux_socket)
    project = tmp_path / "project"
    project.mkdir()
    draft = tmp_path / "draft.yaml"
    draft.write_text(SPEC3)
    r = subprocess.run([sys.executable, "-m", "supervisor", "run", "--spec", str(draft), "--", "true"], env=env,
                       cwd=project, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "is a draft and may not run" in r.stderr
    assert subprocess.run(["tmux", "-L", tmux_socket, "list-sessions"], capture_output=True).returncode != 0, \
        "nothing was started"

    spec = tmp_path / "spec.yaml"
    spec.write_text(approve_spec_text(SPEC3, "tests"))
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(script3()))
    record = tmp_path / "agent.jsonl"
    STARTED.append(record)
    env["SUPERVISOR_POLICY"] = str(policy_file(tmp_path))
    log = tmp_path / "run.log"
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--spec", str(spec), "--session", "wfcli",
                             "--", *agent_command(script, record, "--cwd", str(project))],
                            env=env, cwd=project, stdout=open(log, "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        def run_id() -> str | None:
            js = list((sv_home / "journals").glob("*.jsonl")) if (sv_home / "journals").exists() else []
            return js[0].stem if js else None

        rid = retry_until(run_id, 90, message="the run to start (a busy machine is slow to start Python)")
        retry_until(lambda: held_for_review(sv_home, rid), 90, message=lambda: log.read_text()[-3000:])
        r = run_cli("runs", "review", rid, "--by", "human", env=env)
        assert r.returncode == 0, r.stderr
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert "checkpoint #2 step_done at test" in out and "verify check: FAIL" in out and "review by human" in out
    assert kinds(journal_events(sv_home, rid), "run_ended")[-1]["outcome"] == "finished"


def test_cli_run_with_a_profile_obeys_its_mode(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """`supervisor run --spec SPEC --profile intern -- AGENT` (the intern's mode: directive_lead): the
    agent is handed the mode's exact wording, gets one retry of a failing step, then a human is asked;
    the run journals its profile and `runs why` says which and why."""
    env = env_for(sv_home, tmux_socket)
    project = tmp_path / "project"
    project.mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(approve_spec_text(SPEC3, "tests"))
    policy = policy_file(tmp_path)
    policy.write_text(policy.read_text() + "supervision:\n  profiles:\n    intern: {trust: low}\n")
    still_failing = {"work_s": 0.3, "actions": [{"write": {"path": "check.py", "text": FAILING_CHECK}}],
                     "checkpoint": {"status": "step_done", "current_node": "test", "summary": "check written"}}
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"turns": [script3()["turns"][0], still_failing, still_failing]}))
    record = tmp_path / "agent.jsonl"
    STARTED.append(record)
    env["SUPERVISOR_POLICY"] = str(policy)
    log = tmp_path / "run.log"
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--spec", str(spec), "--profile", "intern",
                             "--session", "wfp", "--", *agent_command(script, record, "--cwd", str(project))],
                            env=env, cwd=project, stdout=open(log, "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        rid = retry_until(lambda: next(iter(p.stem for p in (sv_home / "journals").glob("*.jsonl")), None), 90,
                          message="the run to start (a busy machine is slow to start Python)")
        retry_until(lambda: any(d["kind"] == "escalate" for d in wf_decisions(journal_events(sv_home, rid))), 120,
                    message=lambda: log.read_text()[-3000:])
        why = run_cli("runs", "why", rid, env=dict(env, COLUMNS="200"))
        assert "profile intern (asked for), mode directive_lead" in why.stdout, why.stdout + why.stderr
        assert "after 1 retry" in why.stdout
        stop_run(proc, rid, env)
    finally:
        if proc.poll() is None:
            proc.kill()
    evs = journal_events(sv_home, rid)
    assert [d["kind"] for d in wf_decisions(evs) if d["kind"] != "verify"] == ["continue", "retry", "escalate"]
    sup = next(n for n in kinds(evs, "note") if n.get("type") == "supervision")
    assert (sup["profile"], sup["mode"], sup["chosen_by"]) == ("intern", "directive_lead", "requested")
    received = [r["text"] for r in [json.loads(x) for x in record.read_text().splitlines()]
                if r["event"] == "instruction"]
    assert received[0].startswith("Do exactly this next and nothing else. Step test: make check.py pass.")
    assert received[1].startswith("Stop. The check for step test failed.")
    assert "supervision: profile intern (asked for), mode directive_lead" in log.read_text()
