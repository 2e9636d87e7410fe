"""`supervisor pane-owner|ps|observe|session` against a real supervisor process on a private tmux
server, and real transcript folders laid out as Claude Code and Codex write them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from supervisor.policy import dump_policy
from supervisor.surfaces.tmux import TmuxSurface
from tests.conftest import REPO, invoke_cli, run_cli
from tests.helpers import retry_until
from tests.live_helpers import agent_command, fast_policy, write_script


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "fast.yaml"
    path.write_text(dump_policy(fast_policy()), encoding="utf-8")
    return path


def test_pane_owner_ps_and_observe_while_supervised_and_after(live_env: dict[str, str], policy_file: Path,
                                                              tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"prompt": {"id": "p1", "kind": "bash", "command": "git push --force origin main"}},
        {"done": {}},
    ])
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--policy", str(policy_file), "--",
                             *agent_command(script, tmp_path / "r.jsonl")], env=live_env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def paused() -> list[dict]:
            out = run_cli("status", "--json", env=live_env)
            return [r for r in json.loads(out.stdout or "[]") if r["paused"]]

        row = retry_until(paused, 60, message="a paused live run")[0]
        run_id, pane = row["run_id"], row["pane_id"]
        r = invoke_cli("pane-owner", pane, "--json", env=live_env)
        assert r.returncode == 0, r.stderr
        owner = json.loads(r.stdout)["owner"]
        assert owner["run_id"] == run_id and owner["live"] is True and owner["supervisor_pid"] == proc.pid
        assert f"{pane}: {run_id}" in invoke_cli("pane-owner", pane, env=live_env).stdout
        ps = json.loads(invoke_cli("ps", "--json", env=live_env).stdout)
        assert [(p["pid"], p["run_id"], p["pane_id"]) for p in ps] == [(proc.pid, run_id, pane)]
        assert ps[0]["uptime_s"] > 0
        snap = json.loads(invoke_cli("observe", run_id, "--json", env=live_env).stdout)
        assert snap["supervisor_alive"] is True and snap["paused"] is True and snap["pane"] == "alive"
        assert "git push --force origin main" in snap["screen"]
        assert any(e["kind"] == "decision" and e["what"].startswith("escalate") for e in snap["latest"])
        human = invoke_cli("observe", run_id[:12], env=live_env)
        assert "supervised now" in human.stdout and "PAUSED" in human.stdout
        before = (Path(live_env["SUPERVISOR_HOME"]) / "journals" / f"{run_id}.jsonl").read_bytes()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert before in (Path(live_env["SUPERVISOR_HOME"]) / "journals" / f"{run_id}.jsonl").read_bytes(), \
        "observe only read"
    # Ctrl-C suspends supervision (the run stays resumable): the pane's run is there, with no supervisor
    r = invoke_cli("pane-owner", pane, env=live_env)
    assert r.returncode == 0 and run_id in r.stdout and "runs resume" in r.stdout, r.stdout
    assert json.loads(invoke_cli("ps", "--json", env=live_env).stdout) == []
    snap = json.loads(invoke_cli("observe", run_id, "--json", "--no-screen", env=live_env).stdout)
    assert snap["supervisor_alive"] is False and snap["outcome"] is None and snap["screen"] is None, snap
    r = invoke_cli("pane-owner", "%999", env=live_env)
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "not found" in r.stderr


def _write(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_session_detect_jsonl_and_list(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    project = (tmp_path / "my project.v2").resolve()
    project.mkdir()
    claude = tmp_path / "claude-home"
    codex = tmp_path / "codex-home"
    env = {"CLAUDE_CONFIG_DIR": str(claude), "CODEX_HOME": str(codex)}
    # Claude Code's folder for the project, as it spells it (`_` kept, as a version might), so it is
    # found by the `cwd` its transcripts record; the one below is spelled as this code expects.
    folder = claude / "projects" / str(project).replace("/", "-").replace(" ", "-").replace(".", "-")
    old = _write(folder / "11111111-1111-4111-8111-111111111111.jsonl",
                 [{"type": "user", "sessionId": "11111111-1111-4111-8111-111111111111", "cwd": str(project)}])
    os.utime(old, (time.time() - 3600, time.time() - 3600))  # written before the pane's agent started
    surface = TmuxSurface(tmux_socket)
    info = surface.new_session("agent", ["sleep", "300"], cwd=str(project))
    sid = "22222222-2222-4222-8222-222222222222"
    new = _write(folder / f"{sid}.jsonl", [{"type": "user", "sessionId": sid, "cwd": str(project)}])
    os.utime(new, (time.time() + 5, time.time() + 5))  # written after the pane's agent started
    other = _write(claude / "projects" / "-elsewhere" / "33333333-3333-4333-8333-333333333333.jsonl",
                   [{"type": "user", "sessionId": "33333333-3333-4333-8333-333333333333", "cwd": "/elsewhere"}])
    r = invoke_cli("session", "detect", info.pane_id, "--json", env=env)
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    assert (found["agent"], found["session_id"], found["transcript"]) == ("claude", sid, str(new))
    assert invoke_cli("session", "jsonl", info.pane_id, env=env).stdout.strip() == str(new)
    # a Codex rollout in the same directory, newer: found with --agent codex (and without, as the newest)
    cid = "44444444-4444-4444-8444-444444444444"
    rollout = _write(codex / "sessions" / "2026" / "11" / "28" / f"rollout-2026-11-28T10-00-00-{cid}.jsonl",
                     [{"type": "session_meta", "payload": {"id": cid, "cwd": str(project)}}])
    os.utime(rollout, (time.time() + 10, time.time() + 10))
    r = invoke_cli("session", "detect", info.pane_id, "--agent", "codex", "--json", env=env)
    assert json.loads(r.stdout)["transcript"] == str(rollout)
    listed = json.loads(invoke_cli("session", "list", "--json", env=env).stdout)
    assert {x["transcript"] for x in listed} == {str(old), str(new), str(other), str(rollout)}
    by_dir = json.loads(invoke_cli("session", "list", "--cwd", str(project), "--agent", "claude", "--json",
                                   env=env).stdout)
    assert [x["session_id"] for x in by_dir] == [sid, "11111111-1111-4111-8111-111111111111"]
    p2 = tmp_path / "p2"
    p2.mkdir()
    t2 = _write(claude / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(p2)) / "55555555-5555-4555-8555-555555555555.jsonl",
                [{"type": "user", "sessionId": "55555555-5555-4555-8555-555555555555", "cwd": str(p2)}])
    assert invoke_cli("session", "jsonl", "--cwd", str(p2), env=env).stdout.strip() == str(t2)
    empty = tmp_path / "empty"
    empty.mkdir()
    r = invoke_cli("session", "jsonl", "--cwd", str(empty), env=env)
    assert r.returncode == 1 and "no Claude Code or Codex transcript found" in r.stderr
    r = invoke_cli("session", "detect", env={**env, "TMUX_PANE": ""})
    assert r.returncode == 2 and "not inside tmux" in r.stderr
