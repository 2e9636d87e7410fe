"""What the tmux surface knows about the keys it sends (issue 23): whether the pane's program waits
for input right now, what it has left unread in its terminal, and throwing that away. Real panes on
the test's private tmux server, each running a small Python program that stops reading for a while
and then reads (a flag file says which phase it is in, so nothing depends on timing)."""

from __future__ import annotations

import sys
from pathlib import Path

from supervisor.surfaces.tmux import TmuxSurface
from tests.helpers import retry_until

PROGRAM = """
import os, select, sys, time, tty
tty.setraw(0)
flag, go = sys.argv[1], sys.argv[2]
open(flag, "w").write("deaf")
while not os.path.exists(go):       # working: not reading the terminal
    time.sleep(0.02)
open(flag, "w").write("reading")
ready, _, _ = select.select([0], [], [], 30)
open(flag, "w").write("read:" + repr(os.read(0, 100)) if ready else "timeout")
time.sleep(30)
"""


def _start(surface: TmuxSurface, tmp_path: Path) -> tuple[str, Path, Path]:
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    flag, go = tmp_path / "flag", tmp_path / "go"
    pane = surface.new_session("reader", [sys.executable, str(prog), str(flag), str(go)], width=80, height=20)
    retry_until(lambda: flag.exists() and flag.read_text() == "deaf", 20, message="the program to start")
    return pane.pane_id, flag, go


def test_keys_a_busy_program_does_not_read_wait_in_its_terminal_and_can_be_discarded(surface: TmuxSurface,
                                                                                      tmp_path: Path) -> None:
    pane, flag, go = _start(surface, tmp_path)
    retry_until(lambda: surface.reading_input(pane) is False, 10, message="the program seen as not reading")
    assert surface.unread_input(pane) == 0
    surface.send_keys(pane, ["y", "Enter"])
    retry_until(lambda: surface.unread_input(pane) == 2, 10, message="the two keys waiting unread")
    assert surface.discard_input(pane) == 2
    assert surface.unread_input(pane) == 0
    go.touch()
    retry_until(lambda: flag.read_text() == "reading", 10)
    retry_until(lambda: surface.reading_input(pane) is True, 10, message="the program seen waiting for input")
    surface.send_keys(pane, ["n"])
    retry_until(lambda: flag.read_text().startswith("read:"), 10)
    assert flag.read_text() == "read:b'n'"  # the discarded "y Enter" never reached it


def test_a_program_waiting_for_its_child_is_not_reading(surface: TmuxSurface) -> None:
    pane = surface.new_session("waits", ["bash", "-c", "sleep 30; true"], width=80, height=20)
    retry_until(lambda: surface.reading_input(pane.pane_id) is False, 10)


def test_a_gone_pane_is_not_knowable(surface: TmuxSurface) -> None:
    assert surface.unread_input("%999") is None
    assert surface.reading_input("%999") is None
    assert surface.discard_input("%999") is None
