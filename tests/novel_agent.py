"""A made-up coding agent ("zorp") whose dialogs follow none of the grammars the policy knows.

    python tests/novel_agent.py RECORD.jsonl

It draws, one after another, permission dialogs of its own invention (an arrow menu with ``»``,
a row of bracketed buttons, choice words one per line, words side by side with an auto-reject
countdown, a radio row in a box, a ``[Y/n]`` line, a ``(y/n)`` line), each about a benign action
a known agent's dialog would get approved for. Each waits for one key press, which it records
(JSONL: ``{"event": "shown" | "key", "dialog": id, "t": epoch, "keys": ...}``) before drawing the
next; after the last it shows its idle line ``zorp>`` and waits until killed. Test support only:
the live test of unknown agents (tests/test_unknown_agent.py) runs it in real tmux.
"""

from __future__ import annotations

import json
import os
import sys
import termios
import time
import tty

BANNER = [" zorp ◈ session 4f2a · a made-up agent", ""]

DIALOGS: list[tuple[str, list[str]]] = [
    ("arrow-menu", [
        "  ✧ I need to run a command to continue.",
        "  ✧ shell · make test",
        "",
        " Zorp wants to execute a shell command. Allow it?",
        "   » 1) Go ahead",
        "     2) Always go ahead for make",
        "     3) Stop",
        " (choose with arrows, confirm with return)",
    ]),
    ("button-row", [
        "  ✧ I will update the notes.",
        "",
        " Zorp needs to edit notes.md",
        "   [ Accept ]   [ Accept all ]   [ Reject ]",
    ]),
    ("word-list", [
        "  ✧ I need to read the docs.",
        " Permission needed: network access to https://example.com/docs",
        "   ◇ Allow",
        "   ◆ Deny",
    ]),
    ("countdown-row", [
        "  ✧ Plan: add a test, then run it.",
        " Proceed with the plan?",
        "    Continue      Reject        auto-reject in 42s",
    ]),
    ("radio-box", [
        "  ✧ I will run the tests.",
        " ┌ zorp asks ─────────────────────────────┐",
        " │ Run `pytest -q` here?                  │",
        " │   ◉ Yes, run it     ○ No, skip it      │",
        " └ ←/→ move · ⏎ pick ─────────────────────┘",
    ]),
    ("yn-line", [
        "  ✧ Listing the folder.",
        ' Execute "ls -la"? [Y/n] ',
    ]),
    ("y-slash-n", [
        "  ✧ Plan ready: add one test.",
        " Proceed with the plan? (y/n) ",
    ]),
]


def main() -> int:
    record = open(sys.argv[1], "a", encoding="utf-8")  # noqa: SIM115 - held for the process's life

    def log(**event: object) -> None:
        record.write(json.dumps({"t": time.time(), **event}) + "\n")
        record.flush()

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    out = sys.stdout
    try:
        for dialog_id, body in DIALOGS:
            out.write("\x1b[2J\x1b[H" + "\r\n".join(BANNER + body))
            out.flush()
            log(event="shown", dialog=dialog_id)
            keys = os.read(fd, 64)
            log(event="key", dialog=dialog_id, keys=keys.decode("utf-8", "replace"))
        out.write("\x1b[2J\x1b[H" + "\r\n".join([*BANNER, "  ✧ All done.", "", " zorp> "]))
        out.flush()
        log(event="idle")
        while True:
            time.sleep(3600)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    raise SystemExit(main())
