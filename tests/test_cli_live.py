"""The live CLI commands as real subprocesses against a private tmux server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.policy import dump_policy
from tests.conftest import REPO, run_cli
from tests.helpers import retry_until
from tests.live_helpers import agent_command, answers, fast_policy, write_script


@pytest.fixture
def env(cli_env: dict[str, str], tmux_socket: str) -> dict[str, str]:
    cli_env["SUPERVISOR_TMUX_SOCKET"] = tmux_socket
    return cli_env


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "fast.yaml"
    path.write_text(dump_policy(fast_policy()), encoding="utf-8")
    return path


def _status(env: dict[str, str], *extra: str) -> list[dict]:
    out = run_cli("status", "--json", *extra, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("cmd", ["run", "attach", "watch", "status"])
def test_every_live_command_has_help(cmd: str) -> None:
    out = run_cli(cmd, "--help")
    assert out.returncode == 0 and "Usage" in out.stdout


@pytest.mark.slow
def test_run_answers_and_finishes_exit_0(env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    out = run_cli("run", "--policy", str(policy_file), "--session", "demo", "--", *agent_command(script, rec), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "sent 1" in out.stdout and "finished" in out.stdout
    assert answers(rec)["p1"]["approved"] is True
    runs = _status(env, "--all")
    assert len(runs) == 1 and runs[0]["outcome"] == "finished" and runs[0]["session"] == "demo"
    assert _status(env) == []  # nothing live any more


@pytest.mark.slow
def test_run_agent_exits_exit_6(env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [{"spinner": {"seconds": 0.3}}, {"exit": {"code": 2}}])
    out = run_cli("run", "--policy", str(policy_file), "--", *agent_command(script, tmp_path / "r.jsonl"), env=env)
    assert out.returncode == 6, out.stdout + out.stderr
    assert "exited" in out.stdout and "exit 2" in out.stdout


@pytest.mark.slow
def test_run_escalation_status_then_interrupt_exit_5(env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"prompt": {"id": "p1", "kind": "bash", "command": "git push --force origin main"}},
        {"done": {}},
    ])
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--policy", str(policy_file), "--",
                             *agent_command(script, tmp_path / "r.jsonl")], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        live = retry_until(lambda: [r for r in _status(env) if r["paused"]], 60, message="a paused live run")
        assert live[0]["pause_reason"] and live[0]["next_action"] and live[0]["supervisor_alive"] is True
        human = run_cli("status", env=env)
        assert "paused and waiting for you" in human.stderr
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, out + err
    assert "PAUSED" in out
    ended = _status(env, "--all")[0]
    assert ended["outcome"] == "escalated"


def test_attach_missing_pane_or_dead_server_exit_3(env: dict[str, str], tmux_socket: str) -> None:
    out = run_cli("attach", "%42", env=env)
    assert out.returncode == 3
    assert out.stderr.count("\n") == 1 and "not running" in out.stderr  # no server yet
    subprocess.run(["tmux", "-L", tmux_socket, "new-session", "-d", "cat"], check=True)
    out = run_cli("attach", "%42", env=env)
    assert out.returncode == 3
    assert out.stderr.startswith("error: pane %42 not found") and "list-panes" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_watch_supervises_a_fleet(env: dict[str, str], policy_file: Path, tmp_path: Path, tmux_socket: str) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.5}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"done": {"seconds": 60}},
    ])
    recs = [tmp_path / f"r{i}.jsonl" for i in range(3)]
    tmux = ["tmux", "-L", tmux_socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "w", "-x", "100", "-y", "30", "sleep 1000"], check=True)
    for rec in recs:
        subprocess.run([*tmux, "new-window", "-d", "-t", "w", " ".join(agent_command(script, rec))], check=True,
                       cwd=REPO)
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "watch", "--policy", str(policy_file),
                             "--duration", "90"], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        retry_until(lambda: all("p1" in answers(r) for r in recs), 60,
                    message=lambda: f"three answers: {[list(answers(r)) for r in recs]}")
        retry_until(lambda: len([r for r in _status(env, "--all") if r["outcome"] == "finished"]) == 3, 60,
                    message="three finished runs")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "3 agent pane(s)" in out


@pytest.mark.slow
def test_run_detach_supervises_in_the_background(env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 1.0}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    out = run_cli("run", "--detach", "--policy", str(policy_file), "--", *agent_command(script, rec), env=env,
                  timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "background" in out.stdout
    retry_until(lambda: "p1" in answers(rec), 60, message="the background supervisor to answer")
    runs = retry_until(lambda: [r for r in _status(env, "--all") if r["outcome"] == "finished"], 60,
                       message="the background run to finish")
    assert runs[0]["pane_id"] == "%0"


@pytest.mark.slow
def test_run_agent_exits_on_a_blocker_exit_6_with_the_reason(env: dict[str, str], policy_file: Path) -> None:
    cmd = ["sh", "-c", "echo 'Working on it...'; sleep 0.3; "
           "echo 'API Error: 401 invalid x-api-key · Please run /login'; exit 1"]
    out = run_cli("run", "--policy", str(policy_file), "--", *cmd, env=env)
    assert out.returncode == 6, out.stdout + out.stderr
    assert "exited" in out.stdout and "exit 1" in out.stdout
    assert "blocked: auth:" in out.stdout and "401" in out.stdout and "/login" in out.stdout, out.stdout
    runs = _status(env, "--all")
    assert runs[0]["outcome"] == "exited" and runs[0]["paused"] and "auth" in runs[0]["pause_reason"], runs
    assert runs[0]["next_action"] and "/login" in runs[0]["next_action"]
