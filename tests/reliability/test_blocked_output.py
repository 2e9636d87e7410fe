"""Printing never blocks supervising (supervisor.outqueue): a supervisor whose stdout is a pipe
nobody reads still answers or escalates every dialog and journals it, and ends when the agent
exits; the queue between the pane workers and the terminal drops its oldest lines, counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from supervisor.outqueue import OutputQueue
from supervisor.policy import dump_policy
from tests.conftest import REPO
from tests.helpers import retry_until
from tests.live_helpers import agent_command, answers, fast_policy, write_script


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is already full: any further write blocks."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    try:
        while True:
            os.write(w, b"x")
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    return r, w


def test_the_queue_drops_the_oldest_lines_and_says_how_many() -> None:
    r, w = _full_pipe()
    dropped: list[int] = []
    out = OutputQueue(maxlen=10, on_dropped=dropped.append)
    try:
        start = time.perf_counter()
        for i in range(1000):  # the printing thread is stuck in the first write: puts never wait
            out.put(lambda i=i: os.write(w, f"line {i}\n".encode()))
        assert time.perf_counter() - start < 1.0
        assert out.waiting <= 10 and out.dropped_total >= 989
        assert out.close(timeout=0.3) is False  # still stuck: closing does not wait for ever
        got = b""
        os.set_blocking(r, False)
        deadline = time.monotonic() + 10
        while b"line 999" not in got and time.monotonic() < deadline:  # a reader comes back
            try:
                got += os.read(r, 65536)
            except BlockingIOError:
                time.sleep(0.01)
        assert b"line 999" in got and b"line 500" not in got  # the newest kept, the oldest dropped
        assert sum(dropped) == out.dropped_total  # and each drop was counted where it happened
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_supervisor_whose_stdout_nobody_reads_still_supervises(tmp_path: Path, sv_home: Path,
                                                                tmux_socket: str) -> None:
    steps: list[dict] = [{"spinner": {"seconds": 0.2}}]
    for i in range(12):
        steps += [{"prompt": {"id": f"ok{i}", "kind": "bash", "command": f"npm test -- --shard={i}"}},
                  {"say": f"Shard {i} passed. " + "Lots of output to print. " * 8}]
        if i == 6:
            steps.append({"prompt": {"id": "danger", "kind": "bash", "command": "git push --force origin main"}})
    steps += [{"say": "All done."}, {"exit": 0}]
    script = write_script(tmp_path, steps)
    rec = tmp_path / "rec.jsonl"
    policy = tmp_path / "fast.yaml"
    policy.write_text(dump_policy(fast_policy()), encoding="utf-8")
    env = dict(os.environ, SUPERVISOR_HOME=str(sv_home), SUPERVISOR_TMUX_SOCKET=tmux_socket, PYTHONUNBUFFERED="1")
    r, w = _full_pipe()
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--session", "sv-pipe", "--policy",
                                 str(policy), "--", *agent_command(script, rec)], env=env, cwd=REPO,
                                stdout=w, stderr=err, text=True)
    os.close(w)
    try:
        retry_until(lambda: "ok6" in answers(rec), 120, message="the first seven dialogs answered")
        journal = sv_home / "journals"

        def paused() -> bool:
            return any('"kind":"pause"' in p.read_text() for p in journal.glob("*.jsonl"))

        retry_until(paused, 60, message="the force push escalated and journaled")
        assert "danger" not in answers(rec)
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "sv-pipe", "3"], check=True)  # a human says no
        retry_until(lambda: "ok11" in answers(rec), 120, message="every benign dialog answered")
        proc.wait(timeout=60)  # the agent exited: so does the supervisor, its output still unread
    finally:
        if proc.poll() is None:
            proc.kill()
        reader = threading.Thread(target=lambda: os.read(r, 1 << 20), daemon=True)
        reader.start()
        reader.join(timeout=1)
        os.close(r)
    got = {k: v["approved"] for k, v in answers(rec).items()}
    assert got == {**{f"ok{i}": True for i in range(12)}, "danger": False}
    events = [json.loads(line) for p in (sv_home / "journals").glob("*.jsonl") for line in p.read_text().splitlines()]
    delivered = [e for e in events if e["kind"] == "action" and e["payload"].get("delivered")]
    assert len(delivered) >= 12  # each answer journaled
    assert "Traceback" not in err_path.read_text()
