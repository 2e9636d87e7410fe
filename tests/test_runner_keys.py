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


# A line program with something typed into its terminal before it asks (a human's typeahead, a
# terminal's focus report): it asks while deaf to its terminal, then, told to, reads what waits there
# and then the answer.
TYPED_BEFORE = """
import os, select, socket, sys, time, tty
tty.setraw(0)
out, flag, asked, drain, patience = sys.stdout, sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
servers = []
for path in (asked, drain):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(1)
    servers.append(s)
out.write("working\\r\\n"); out.flush()
select.select([servers[0]], [], [], 60)  # the test has typed ahead: ask now
out.write("build ok\\r\\n\\r\\n$ npm test\\r\\nProceed? [Y/n] "); out.flush()
select.select([servers[1]], [], [], 60)  # deaf to its terminal until the test says so
early = os.read(0, 100) if select.select([0], [], [], 0.2)[0] else b""
answer = b""
end = time.monotonic() + patience
while b"\\r" not in answer and time.monotonic() < end:
    if select.select([0], [], [], 0.5)[0]:
        answer += os.read(0, 100)
open(flag, "w").write(repr((early, answer)))
out.write("\\r\\ndone\\r\\n"); out.flush()
time.sleep(30)
"""


def _typed_before(harness, tmp_path: Path, patience: float, **timing: float):
    prog, flag, asked, drain = (tmp_path / n for n in ("typed.py", "flag", "asked", "drain"))
    prog.write_text(TYPED_BEFORE)
    h = harness(turns=None, policy=fast_policy(**timing))
    pane = h.surface.new_session("typed", [sys.executable, str(prog), str(flag), str(asked), str(drain),
                                  str(patience)],
                                 width=100, height=30)
    retry_until(lambda: "working" in h.surface.capture(pane.pane_id).plain, 30, message="the program to start")
    h.surface.send_keys(pane.pane_id, ["x", "y", "z"])
    retry_until(lambda: h.surface.unread_input(pane.pane_id) == 3, 10, message="the three bytes typed ahead")
    (runner,) = h.supervise(pane)
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(asked))
    return runner, flag, drain


def test_a_prompt_asked_over_unread_input_is_answered_once_the_agent_reads_it(harness, tmp_path: Path) -> None:
    """Bytes typed earlier (not ours) wait unread under a prompt: no keys go while they do (they would
    be read first), the supervisor looks again, backing off, and answers once the agent has read them:
    no stall on a screen that stays the same."""
    runner, flag, drain = _typed_before(harness, tmp_path, 60.0, confirm_timeout_s=60.0)
    skipped = retry_until(lambda: [e.payload for e in events(runner, "answer_skipped")
                                   if "typed earlier are still unread" in e.payload["why"]], 30,
                          message="the answer held back for the unread bytes")
    assert "looking again" in skipped[0]["why"], skipped
    assert not [e for e in events(runner, "action") if e.payload.get("keys")], "keys went over unread input"
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(drain))
    retry_until(lambda: flag.exists(), 30, message=lambda: "the program to read its answer; events: " + repr(
        [(e.kind, e.payload.get("why") or e.payload.get("state") or e.payload.get("type")) for e in iter_events(runner.journal.path)][-40:]))
    assert flag.read_text() == repr((b"xyz", b"y\r")), flag.read_text()
    assert not events(runner, "pause")


def test_input_that_stays_unread_under_a_prompt_is_escalated(harness, tmp_path: Path) -> None:
    """Unread bytes that stay under a prompt past the confirmation time: a human is told (the run
    pauses with a reason naming them); nothing is typed and nothing typed earlier is thrown away."""
    runner, flag, drain = _typed_before(harness, tmp_path, 3.0, confirm_timeout_s=2.0)
    pause = retry_until(lambda: events(runner, "pause"), 30, message="the pause")[0].payload
    assert pause["rule"] == "unread-input" and "3 bytes typed earlier" in pause["pause_reason"], pause
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(drain))
    retry_until(lambda: flag.exists(), 30, message="the program to give up waiting for an answer")
    early, answer = eval(flag.read_text())  # noqa: S307 - our own program's repr of two bytes objects
    assert early == b"xyz" and answer == b"", (early, answer)  # kept for it, and nothing of ours
