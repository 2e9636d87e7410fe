"""Keys never pile up in the agent's terminal (issue 23): an answer the pane's program does not read is
discarded and nothing more is typed until it reads again; a dangerous prompt right after our keys
pauses the run as possibly answered by them. Real tmux, the real supervisor, real programs."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from supervisor.journal import iter_events
from tests.helpers import retry_until
from tests.live_helpers import answers, events, fast_policy, write_script

# A line program that asks, then waits on something else than its terminal (a socket, a child's
# pipe: select() on another fd) before it reads: the kernel shows it blocked in poll, yet our keys
# stay unread in its terminal.
DEAF_READER = """
import os, select, socket, sys, time, tty
tty.setraw(0)
out, flag, go = sys.stdout, sys.argv[1], sys.argv[2]
server = socket.socket(socket.AF_UNIX)
server.bind(go)
server.listen(1)
out.write("build ok\\r\\n\\r\\n$ npm test\\r\\nProceed? [Y/n] "); out.flush()
select.select([server], [], [], 60)    # waiting for something else: the test connects when it is time
left = os.read(0, 100) if select.select([0], [], [], 0.2)[0] else b""
open(flag, "w").write(repr(left))
out.write("\\r\\ndone\\r\\n"); out.flush()
time.sleep(30)
"""


def test_keys_the_program_does_not_read_are_discarded(harness, tmp_path: Path) -> None:
    prog, flag, go = tmp_path / "deaf.py", tmp_path / "flag", tmp_path / "go"
    prog.write_text(DEAF_READER)
    h = harness(turns=None)
    pane = h.surface.new_session("deaf", [sys.executable, str(prog), str(flag), str(go)], width=100, height=30)
    (runner,) = h.supervise(pane)
    # the program looks at its terminal only once the supervisor says it discarded (however loaded the
    # host, the keys cannot reach a reader that came back first); without that note, it never looks
    retry_until(lambda: [e for e in events(runner, "note") if e.payload.get("type") == "keys_discarded"], 30,
                message="the supervisor to discard the keys it typed")
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(go))
    retry_until(lambda: flag.exists(), 30, message="the program to look at its terminal")
    assert flag.read_text() == "b''", "our keys were left in its terminal"
    notes = [e.payload for e in events(runner, "note") if e.payload.get("type") == "keys_discarded"]
    assert len(notes) == 1 and notes[0]["bytes"] == 2, notes  # "y" and Enter, once
    sent = [e.payload for e in events(runner, "action") if e.payload.get("keys") and e.payload.get("delivered")]
    assert len(sent) == 1, sent  # nothing more was typed


def test_a_dangerous_prompt_right_after_our_keys_pauses_the_run(harness, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"prompt": {"id": "safe", "kind": "bash", "command": "npm test"}},
        {"prompt": {"id": "rm", "kind": "bash", "command": "rm -rf ~/proj", "timeout": 8}},
        {"done": {"seconds": 2}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness(turns=None, policy=fast_policy(confirm_timeout_s=10.0))  # "right after": however loaded the host
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: [e for e in events(runner, "pause")], 30, message="the pause")
    assert answers(rec)["safe"]["approved"] is True
    flagged = [e.payload for e in events(runner, "note") if e.payload.get("type") == "possibly_answered_by_typeahead"]
    pause = events(runner, "pause")[0].payload
    assert flagged and pause["rule"] == "typeahead" and "may have been answered" in pause["pause_reason"], pause
    retry_until(lambda: "rm" in answers(rec), 20)
    assert answers(rec)["rm"]["approved"] is None  # nothing answered it: it timed out
    assert all(e.kind != "action" or not e.payload.get("keys") or e.payload.get("signature") != pause["signature"]
               for e in iter_events(runner.journal.path))
