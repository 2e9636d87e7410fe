"""A full disk never leaves a pane silently unsupervised (supervisor.suspension).

The supervisor's home (journals, control files, warehouse) is a small tmpfs that the test fills
while a real `supervisor run` supervises the scripted agent in a real tmux pane. While the
journal cannot be written the pane is suspended with a notice (tmux's message, `supervisor
status`, the supervisor's own output), no dialog is answered (a force push among them), no line is
half-written; once space is freed supervision comes back by itself and the force push is escalated;
and the supervisor ends when the agent exits, whether or not its journal can be written then."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from supervisor.policy import dump_policy
from tests.conftest import REPO
from tests.helpers import retry_until, tmpfs
from tests.live_helpers import agent_command, answers, fast_policy, write_script

pytestmark = pytest.mark.slow


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    """A 24 MB tmpfs as the supervisor's home, unmounted afterwards."""
    with tmpfs(tmp_path / "home", "24m") as home:
        yield home


def fill(home: Path) -> Path:
    """Fill the filesystem to the last byte (big writes, then pages, then single bytes)."""
    filler = home / "filler"
    with open(filler, "wb", buffering=0) as fh:
        for size in (1 << 20, 4096, 1):
            while True:
                try:
                    fh.write(b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    return filler


def journal_lines(home: Path) -> list[bytes]:
    """Every journal's bytes, checked to be whole JSON lines (nothing half-written)."""
    out: list[bytes] = []
    for path in (home / "journals").glob("*.jsonl"):
        data = path.read_bytes()
        assert not data or data.endswith(b"\n"), f"{path.name} ends in a partial line: {data[-200:]!r}"
        for line in data.splitlines():
            json.loads(line)
            out.append(line)
    return out


def _env(home: Path, tmux_socket: str) -> dict[str, str]:
    return dict(os.environ, SUPERVISOR_HOME=str(home), SUPERVISOR_TMUX_SOCKET=tmux_socket, PYTHONUNBUFFERED="1")


def _status(env: dict[str, str]) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "supervisor", "status", "--json"], capture_output=True, text=True,
                         env=env, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _pane_text(tmux_socket: str) -> str:
    return subprocess.run(["tmux", "-L", tmux_socket, "capture-pane", "-p", "-t", "sv-disk"], capture_output=True,
                          text=True).stdout


def _messages(tmux_socket: str) -> str:
    return subprocess.run(["tmux", "-L", tmux_socket, "show-messages"], capture_output=True, text=True).stdout


def _start(tmp_path: Path, home: Path, tmux_socket: str, steps: list[dict]) -> tuple[subprocess.Popen[str], Path]:
    policy = tmp_path / "fast.yaml"
    policy.write_text(dump_policy(fast_policy()), encoding="utf-8")
    rec = tmp_path / "rec.jsonl"
    script = write_script(tmp_path, steps)
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--session", "sv-disk", "--policy",
                             str(policy), "--", *agent_command(script, rec)], env=_env(home, tmux_socket), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, rec


@pytest.mark.timeout(300)
def test_a_full_disk_suspends_the_pane_visibly_and_supervision_comes_back(small_home: Path, tmp_path: Path,
                                                                         tmux_socket: str) -> None:
    flag = tmp_path / "disk-full"
    proc, rec = _start(tmp_path, small_home, tmux_socket, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"spinner": {"until": str(flag)}},
        {"prompt": {"id": "force", "kind": "bash", "command": "git push --force origin main"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p3", "kind": "bash", "command": "npm run lint"}},
        {"say": "All done."},
        {"exit": 0},
    ])
    env = _env(small_home, tmux_socket)
    try:
        retry_until(lambda: "p1" in answers(rec), 60, message="the first dialog answered")
        filler = fill(small_home)
        flag.touch()
        retry_until(lambda: "git push --force" in _pane_text(tmux_socket), 60, message="the force push dialog")
        runs = retry_until(lambda: [r for r in _status(env) if r.get("suspended")], 60,
                           message="`supervisor status` showing the run suspended")
        assert "No space left on device" in runs[0]["suspended"]["why"]
        retry_until(lambda: "SUSPENDED" in _messages(tmux_socket), 30, message="the notice on the pane")
        before = journal_lines(small_home)  # whole lines only, while the disk is full
        assert "force" not in answers(rec)
        assert b'"kind":"pause"' not in b"".join(before)  # nothing could be recorded, so nothing was done

        filler.unlink()  # space again: supervision resumes by itself and the force push is escalated
        retry_until(lambda: b"journal_writable_again" in b"".join(journal_lines(small_home)), 60,
                    message="the journal written again")
        retry_until(lambda: b'"kind":"pause"' in b"".join(journal_lines(small_home)), 60,
                    message="the force push escalated")
        assert not [r for r in _status(env) if r.get("suspended")]
        assert "force" not in answers(rec)
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "sv-disk", "3"], check=True)  # a human says no
        retry_until(lambda: "p3" in answers(rec), 60, message="the next dialog answered")
        out, err = proc.communicate(timeout=60)  # the agent exits: so does the supervisor
    finally:
        if proc.poll() is None:
            proc.kill()
    got = {k: v["approved"] for k, v in answers(rec).items()}
    assert got == {"p1": True, "force": False, "p3": True}
    assert "SUSPENDED" in err and "resumed" in err, err
    assert "Traceback" not in out + err, err
    notes = [json.loads(x) for x in journal_lines(small_home) if b"journal_writable_again" in x]
    assert notes[0]["payload"]["suspended_s"] > 0 and "No space" in notes[0]["payload"]["why"]


@pytest.mark.timeout(240)
def test_the_supervisor_ends_when_the_agent_exits_on_a_full_disk(small_home: Path, tmp_path: Path,
                                                                  tmux_socket: str) -> None:
    flag = tmp_path / "disk-full"
    proc, rec = _start(tmp_path, small_home, tmux_socket, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"spinner": {"until": str(flag)}},
        {"say": "Giving up."},
        {"exit": 0},
    ])
    try:
        retry_until(lambda: "p1" in answers(rec), 60, message="the first dialog answered")
        fill(small_home)
        flag.touch()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in out + err, err
    journal_lines(small_home)  # no torn line
