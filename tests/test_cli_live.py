"""The live CLI commands as real subprocesses against a private tmux server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evals.agent import agent_named, inputs
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


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "fast.yaml"
    path.write_text(dump_policy(fast_policy()), encoding="utf-8")
    return path


def _count(env: dict[str, str], kind: str, run_id: str | None = None) -> int:
    """Events of a kind in the journals (one run's, or all)."""
    journals = Path(env["SUPERVISOR_HOME"]) / "journals"
    paths = [journals / f"{run_id}.jsonl"] if run_id else list(journals.glob("*.jsonl"))
    needle = f'"kind":"{kind}"'
    return sum(p.read_text().count(needle) for p in paths if p.exists())


def _status(env: dict[str, str], *extra: str) -> list[dict]:
    out = run_cli("status", "--json", *extra, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("cmd", ["run", "attach", "watch", "status"])
def test_every_live_command_has_help(cmd: str) -> None:
    out = run_cli(cmd, "--help")
    assert out.returncode == 0 and "Usage" in out.stdout


@pytest.mark.slow
def test_run_with_a_task_types_it_answers_and_finishes_exit_0(live_env: dict[str, str], policy_file: Path,
                                                              tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"idle": {"id": "task"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"say": "Fixed."},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    out = run_cli("run", "--policy", str(policy_file), "--session", "demo", "--task", "fix the failing test", "--",
                  *agent_command(script, rec), env=live_env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "task taken" in out.stdout and "sent 1" in out.stdout and "finished" in out.stdout
    assert inputs(rec) == ["fix the failing test"]
    assert answers(rec)["p1"]["approved"] is True
    assert_no_stray_keys(rec)
    runs = _status(live_env, "--all")
    assert len(runs) == 1 and runs[0]["outcome"] == "finished" and runs[0]["session"] == "demo"
    assert _status(live_env) == []  # nothing live any more


@pytest.mark.slow
def test_run_supervises_every_turn_until_the_agent_exits(live_env: dict[str, str], policy_file: Path,
                                                         tmp_path: Path) -> None:
    """No task: each finished turn is journaled and supervision goes on; `runs task` hands the
    agent its next tasks (a multi-line one from a file is pasted); the run ends when the agent exits."""
    turn = [{"spinner": {"seconds": 0.3}}, {"prompt": {"id": "p", "kind": "bash", "command": "npm test"}},
            {"say": "Done."}]
    script = write_script(tmp_path, [
        *turn, {"done": {"id": "t1"}},
        *[{**s, "prompt": {**s["prompt"], "id": "p2"}} if "prompt" in s else s for s in turn], {"done": {"id": "t2"}},
        *[{**s, "prompt": {**s["prompt"], "id": "p3"}} if "prompt" in s else s for s in turn], {"done": {"id": "t3"}},
    ], paste_enter_gap_s=0.1)
    rec = tmp_path / "rec.jsonl"
    task_file = tmp_path / "task.txt"
    task_file.write_text("add a --json flag\nand document it\n")
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--policy", str(policy_file), "--",
                             *agent_command(script, rec)], env=live_env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        live = retry_until(lambda: _status(live_env), 60, message="the live run")
        run_id = live[0]["run_id"]

        def turns() -> int:
            return _count(live_env, "turn_finished", run_id)

        retry_until(lambda: turns() >= 1, 60, message="the first finished turn")
        assert proc.poll() is None, "a run without a task lasts as long as the agent"
        out = run_cli("runs", "task", run_id, "run the linters", env=live_env)
        assert out.returncode == 0 and "handed to the live supervisor" in out.stdout, out.stdout + out.stderr
        retry_until(lambda: turns() >= 2, 60, message="the second finished turn")
        out = run_cli("runs", "task", run_id, f"@{task_file}", env=live_env)
        assert out.returncode == 0, out.stderr
        retry_until(lambda: turns() >= 3, 60, message="the third finished turn")
        assert run_cli("runs", "task", run_id, "/exit", env=live_env).returncode == 0
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err  # the agent exited cleanly: the normal end of a run
    assert inputs(rec) == ["run the linters", "add a --json flag\nand document it", "/exit"]
    assert {k: v["approved"] for k, v in answers(rec).items()} == {"p": True, "p2": True, "p3": True}
    assert_no_stray_keys(rec)
    ended = _status(live_env, "--all")[0]
    assert ended["outcome"] == "exited"


def test_run_refuses_unknown_options_before_the_command(live_env: dict[str, str]) -> None:
    out = run_cli("run", "--bogus-opt", "x", "--", "true", env=live_env)
    assert out.returncode == 2 and "no such option" in out.stderr.lower() and "--bogus-opt" in out.stderr, out.stderr
    assert subprocess.run(["tmux", "-L", live_env["SUPERVISOR_TMUX_SOCKET"], "list-sessions"],
                          capture_output=True).returncode != 0, "nothing was started"


@pytest.mark.slow
def test_tmux_dying_ends_the_run_lost_exit_3(live_env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [{"spinner": {"seconds": 0.3}}, {"idle": {"id": "wait"}}])
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--policy", str(policy_file), "--",
                             *agent_command(script, tmp_path / "r.jsonl")], env=live_env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        retry_until(lambda: _status(live_env), 60, message="the live run")
        subprocess.run(["tmux", "-L", live_env["SUPERVISOR_TMUX_SOCKET"], "kill-server"], check=True)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, out + err
    assert "tmux server went away" in err
    assert _status(live_env, "--all")[0]["outcome"] == "lost"


@pytest.mark.slow
def test_run_agent_exits_exit_6(live_env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [{"spinner": {"seconds": 0.3}}, {"exit": {"code": 2}}])
    out = run_cli("run", "--policy", str(policy_file), "--", *agent_command(script, tmp_path / "r.jsonl"), env=live_env)
    assert out.returncode == 6, out.stdout + out.stderr
    assert "exited" in out.stdout and "exit 2" in out.stdout


@pytest.mark.slow
def test_run_escalation_status_then_interrupt_exit_5(live_env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"prompt": {"id": "p1", "kind": "bash", "command": "git push --force origin main"}},
        {"done": {}},
    ])
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--policy", str(policy_file), "--",
                             *agent_command(script, tmp_path / "r.jsonl")], env=live_env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        live = retry_until(lambda: [r for r in _status(live_env) if r["paused"]], 60, message="a paused live run")
        assert live[0]["pause_reason"] and live[0]["next_action"] and live[0]["supervisor_alive"] is True
        human = run_cli("status", env=live_env)
        assert "paused and waiting for you" in human.stderr
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, out + err
    assert "PAUSED" in out and "suspended (SIGINT)" in out and "runs resume" in out
    suspended = _status(live_env, "--all")[0]  # Ctrl-C suspends: the run is still paused, waiting for a human
    assert suspended["outcome"] is None and suspended["paused"] and suspended["supervisor_alive"] is False
    assert not read_record(tmp_path / "r.jsonl") or not [r for r in read_record(tmp_path / "r.jsonl")
                                                         if r["event"] == "stray"]


def test_attach_missing_pane_or_dead_server_exit_3(live_env: dict[str, str], tmux_socket: str) -> None:
    out = run_cli("attach", "%42", env=live_env)
    assert out.returncode == 3
    assert out.stderr.count("\n") == 1 and "not running" in out.stderr  # no server yet
    subprocess.run(["tmux", "-L", tmux_socket, "new-session", "-d", "cat"], check=True)
    out = run_cli("attach", "%42", env=live_env)
    assert out.returncode == 3
    assert out.stderr.startswith("error: pane %42 not found") and "list-panes" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_watch_supervises_agent_processes_only(live_env: dict[str, str], policy_file: Path, tmp_path: Path,
                                               tmux_socket: str) -> None:
    """Three panes whose process is an agent are supervised, every turn; a plain shell whose
    screen mentions aider and shows a [Y/n] question is left alone (no --include-shells)."""
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.5}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"done": {"seconds": 60}},
    ])
    recs = [tmp_path / f"r{i}.jsonl" for i in range(3)]
    tmux = ["tmux", "-L", tmux_socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "w", "-x", "100", "-y", "30", "sleep 1000"], check=True)
    for i, rec in enumerate(recs):
        cmd = agent_named("claude", tmp_path / f"bin{i}", script, rec)
        subprocess.run([*tmux, "new-window", "-d", "-t", "w", " ".join(cmd)], check=True, cwd=REPO)
    shell = subprocess.run([*tmux, "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "w", "bash --norc"],
                           check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([*tmux, "send-keys", "-t", shell, "echo 'aider --yes'; printf 'Continue? [Y/n] '", "Enter"],
                   check=True)
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "watch", "--policy", str(policy_file),
                             "--duration", "90"], env=live_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        retry_until(lambda: all("p1" in answers(r) for r in recs), 60,
                    message=lambda: f"three answers: {[list(answers(r)) for r in recs]}")
        retry_until(lambda: _count(live_env, "turn_finished") >= 3, 60, message="three finished turns")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "3 agent pane(s)" in out and shell not in out
    assert_no_stray_keys(*recs)
    screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", shell], capture_output=True, text=True).stdout
    last = screen.rstrip().splitlines()[-1]
    assert "[Y/n]" in last and last.rstrip().endswith(("#", "$")), screen  # nobody typed into the shell


@pytest.mark.slow
def test_run_detach_supervises_in_the_background(live_env: dict[str, str], policy_file: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"idle": {"id": "task"}},
        {"spinner": {"seconds": 1.0}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    out = run_cli("run", "--detach", "--policy", str(policy_file), "--task", "go", "--", *agent_command(script, rec),
                  env=live_env, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "background" in out.stdout
    retry_until(lambda: "p1" in answers(rec), 60, message="the background supervisor to answer")
    runs = retry_until(lambda: [r for r in _status(live_env, "--all") if r["outcome"] == "finished"], 60,
                       message="the background run to finish")
    assert runs[0]["pane_id"] == "%0"
    assert inputs(rec) == ["go"]
    assert_no_stray_keys(rec)


@pytest.mark.slow
def test_run_agent_exits_on_a_blocker_exit_6_with_the_reason(live_env: dict[str, str], policy_file: Path) -> None:
    cmd = ["sh", "-c", "echo 'Working on it...'; sleep 0.3; "
           "echo 'API Error: 401 invalid x-api-key · Please run /login'; exit 1"]
    out = run_cli("run", "--policy", str(policy_file), "--", *cmd, env=live_env)
    assert out.returncode == 6, out.stdout + out.stderr
    assert "exited" in out.stdout and "exit 1" in out.stdout
    assert "blocked: auth:" in out.stdout and "401" in out.stdout and "/login" in out.stdout, out.stdout
    runs = _status(live_env, "--all")
    assert runs[0]["outcome"] == "exited" and runs[0]["paused"] and "auth" in runs[0]["pause_reason"], runs
    assert runs[0]["next_action"] and "/login" in runs[0]["next_action"]


@pytest.mark.slow
def test_watch_never_supervises_its_own_pane(live_env: dict[str, str], tmux_socket: str, tmp_path: Path) -> None:
    """`supervisor watch` running inside a pane whose title says Claude Code (as a pane that once
    ran Claude keeps) does not take its own pane for an agent."""
    import shlex

    out = tmp_path / "watch.out"
    inner = (f"printf '\\033]2;✳ Claude Code\\007'; exec {shlex.quote(sys.executable)} -m supervisor watch "
             f"--duration 15 > {shlex.quote(str(out))} 2>&1")
    tmux = ["tmux", "-L", tmux_socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "self", "-x", "100", "-y", "30", "-c", str(REPO),
                    f"bash -c {shlex.quote(inner)}"], check=True, env=live_env)
    pane = subprocess.run([*tmux, "display", "-p", "-t", "self", "#{pane_id} #{pane_title}"], capture_output=True,
                          text=True).stdout
    retry_until(lambda: "agent pane(s)" in (out.read_text() if out.exists() else ""), 60,
                message=lambda: out.read_text() if out.exists() else "no output yet")
    assert "watching" in out.read_text() and "0 agent pane(s)" in out.read_text(), (pane, out.read_text())
    assert _count(live_env, "run_started") == 0
