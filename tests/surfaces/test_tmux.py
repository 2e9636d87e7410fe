"""The tmux surface against a real tmux server on a private socket."""

from __future__ import annotations

import queue
import subprocess

import pytest

from supervisor.errors import PaneGone, SurfaceError
from supervisor.surfaces.base import OutputEvent, Surface
from supervisor.surfaces.tmux import TmuxSurface, parse_pane_line
from tests.helpers import retry_until


def test_is_a_surface(surface: TmuxSurface) -> None:
    assert isinstance(surface, Surface)


def test_session_capture_keys_and_info(surface: TmuxSurface) -> None:
    pane = surface.new_session("work", ["cat"], width=90, height=20)
    assert pane.pane_id.startswith("%") and pane.session == "work"
    assert (pane.width, pane.height) == (90, 20)
    surface.send_keys(pane.pane_id, ["hello", "Enter"])
    retry_until(lambda: surface.capture(pane.pane_id).plain.count("hello") == 2, 10, message="cat's echo")
    surface.paste_text(pane.pane_id, "literal Enter text")
    raw = retry_until(lambda: (r := surface.capture(pane.pane_id)) and "literal Enter text" in r.plain and r, 10,
                      message="the typed text on screen")
    assert raw.text.splitlines()[:2] == ["hello", "hello"]  # cat echoes the line back
    assert raw.info.current_command == "cat" and not raw.info.dead
    assert [p.pane_id for p in surface.list_panes()] == [pane.pane_id]
    assert surface.pane_info(pane.pane_id).cursor_y == 2


def test_paste_with_submit_sends_the_enter_in_the_same_command(surface: TmuxSurface, tmp_path) -> None:
    """A handoff's paste and the Enter that submits it are one tmux command: a supervisor killed
    between two calls could leave the instruction pasted but never submitted."""
    out = tmp_path / "lines.txt"
    pane = surface.new_session("paste", ["sh", "-c", f"cat > {out}"], width=80, height=10)
    sent: list[tuple[str, ...]] = []
    real = surface.cmd

    def counting(sub: str, *args: str) -> list[str]:
        sent.append((sub, *args))
        return real(sub, *args)

    surface.cmd = counting  # type: ignore[method-assign]
    surface.paste_buffer(pane.pane_id, "first line\n[handoff 0000abcd]", submit=True)
    surface.cmd = real  # type: ignore[method-assign]
    retry_until(lambda: out.exists() and out.read_text() == "first line\n[handoff 0000abcd]\n", 10,
                message=lambda: f"both lines submitted to cat, got {out.read_text() if out.exists() else None!r}")
    pasting = [c for c in sent if c[0] == "paste-buffer"]
    assert len(pasting) == 1 and pasting[0][-4:] == ("send-keys", "-t", pane.pane_id, "Enter"), sent
    assert not any(c[0] == "send-keys" for c in sent), sent
    surface.paste_buffer(pane.pane_id, "left\nunsubmitted")  # without submit: the last line stays typed
    retry_until(lambda: out.read_text().endswith("left\n"), 10, message="the first pasted line")
    assert "unsubmitted" not in out.read_text()


def test_capture_with_scrollback(surface: TmuxSurface) -> None:
    cmd = ["sh", "-c", "for i in $(seq 1 40); do echo line$i; done; exec cat"]
    pane = surface.new_session("sb", cmd, width=80, height=10)
    raw = retry_until(lambda: (r := surface.capture(pane.pane_id, scrollback=5)) and "line40" in r.plain and r, 10,
                      message="all lines printed")
    assert raw.scrollback.splitlines() == [f"line{i}" for i in range(27, 32)]
    assert raw.plain.splitlines()[0] == "line32"
    assert surface.capture(pane.pane_id).scrollback == ""


def test_dead_pane_keeps_status(surface: TmuxSurface) -> None:
    pane = surface.new_session("dies", ["sh", "-c", "exit 4"])
    info = retry_until(lambda: (i := surface.pane_info(pane.pane_id)) and i.dead and i.dead_status is not None and i,
                       10, message="the pane to be dead with a status")
    assert info.dead_status == 4


def test_display_message_reaches_show_messages(surface: TmuxSurface, tmux_socket: str) -> None:
    pane = surface.new_session("msg", ["cat"])
    events: queue.Queue[OutputEvent] = queue.Queue()
    surface.watch([pane.pane_id], events.put)  # a control client is a client to show messages on
    retry_until(lambda: surface.cmd("list-clients", "-F", "#{client_name}"), 10, message="a client")
    surface.display_message(pane.pane_id, "paused: need a human", ms=1000)
    log = subprocess.run(["tmux", "-L", tmux_socket, "show-messages"], capture_output=True, text=True).stdout
    assert "paused: need a human" in log


def test_missing_pane_and_dead_server_raise_pane_gone(surface: TmuxSurface) -> None:
    surface.new_session("x", ["cat"])
    with pytest.raises(PaneGone) as exc:
        surface.capture("%99")
    assert exc.value.subcommand == "capture-pane"
    with pytest.raises(PaneGone):
        surface.pane_info("%99")
    with pytest.raises(PaneGone):
        surface.send_keys("%99", ["x"])
    surface.cmd("kill-server")
    with pytest.raises(PaneGone) as exc:
        surface.pane_info("%0")
    assert "not running" in exc.value.message and exc.value.fix
    assert surface.list_panes() == []


def test_other_errors_name_the_subcommand(surface: TmuxSurface) -> None:
    surface.new_session("y", ["cat"])
    with pytest.raises(SurfaceError) as exc:
        surface.cmd("set-option", "-g", "no-such-option", "1")
    assert exc.value.subcommand == "set-option" and "set-option" in exc.value.one_line()
    assert not isinstance(exc.value, PaneGone)


def test_poll_mode_emits_ticks(tmux_socket: str) -> None:
    s = TmuxSurface(tmux_socket, poll_s=0.1)
    try:
        pane = s.new_session("p", ["cat"])
        events: queue.Queue[OutputEvent] = queue.Queue()
        s.watch([pane.pane_id], events.put)
        ev = events.get(timeout=10)
        assert ev.kind == "tick" and ev.pane_id == pane.pane_id
    finally:
        s.close()


def test_parse_pane_line_rejects_garbage() -> None:
    assert parse_pane_line("no separators here") is None


def test_capture_keeps_reverse_video_for_highlights(surface: TmuxSurface) -> None:
    """A menu whose selected option is shown only in reverse video (opencode) keeps its highlight
    through capture -> make_screen; the text itself carries no escapes."""
    from supervisor.screen import make_screen

    script = r"printf 'Pick one\n  Allow once\n  \033[7mAllow always\033[0m\n  Reject\n'; exec cat"
    pane = surface.new_session("hl", ["sh", "-c", script], width=60, height=10)
    raw = retry_until(lambda: (r := surface.capture(pane.pane_id)) and "Reject" in r.plain and r, 10,
                      message="the menu")
    assert "\x1b[" in raw.text and "\x1b" not in raw.plain
    info = raw.info
    screen = make_screen(raw.text, width=info.width, height=info.height, current_command=info.current_command)
    assert "\x1b" not in screen.text
    row = screen.text.split("\n").index("  Allow always")
    assert screen.highlights == ((row, 2, 2 + len("Allow always")),), screen.highlights


def test_poll_mode_still_sees_text_drawn_over_other_text(tmux_socket: str) -> None:
    """Without control mode the pane's output bytes come through ``pipe-pane``: a command drawn over by
    another (a carriage return) is seen on the shadow terminal, as in control mode. A pane whose output
    is already piped elsewhere is not taken over, and the surface says it cannot see overwrites there."""
    surface = TmuxSurface(tmux_socket, poll_s=0.2)
    try:
        pane = surface.new_session("poll", "bash --norc --noprofile", width=80, height=10)
        surface.watch([pane.pane_id], lambda ev: None)
        assert surface.overwrite_blindness(pane.pane_id) is None
        retry_until(lambda: "1" in surface.cmd("display-message", "-p", "-t", pane.pane_id, "#{pane_pipe}")[0], 10,
                    message="the pane's output to be piped")
        # the program clears the screen (so the shadow's rows line up with tmux's), then draws over a command
        surface.paste_text(pane.pane_id, "printf '\\033[H\\033[2Jrm -rf ~/proj\\rnpm test     \\n'; sleep 30")
        surface.send_keys(pane.pane_id, ["Enter"])

        def seen() -> dict[int, str]:
            return surface.overwritten_rows(surface.capture(pane.pane_id))

        rows = retry_until(seen, 10, message="the overwritten row")
        assert any("rm -rf ~/proj" in under for under in rows.values()), rows
        other = surface.new_session("piped", "cat", width=80, height=10)
        surface.cmd("pipe-pane", "-t", other.pane_id, "cat > /dev/null")
        surface.watch([other.pane_id], lambda ev: None)
        why = surface.overwrite_blindness(other.pane_id)
        assert why is not None and "already piped" in why
    finally:
        surface.close()


def test_input_checks_after_a_look_need_no_tmux_process(surface: TmuxSurface) -> None:
    """A look at a pane's facts (its capture) remembers its program's pid and its terminal, so the input
    checks made before keys are sent (unread bytes, whether the program reads) run no tmux process: with
    many panes asking at once, a process each was tens of milliseconds on every first answer."""
    pane = surface.new_session("facts", ["cat"], width=80, height=10)
    raw = surface.capture(pane.pane_id)
    assert raw.info.tty.startswith("/dev/") and raw.info.pid
    spawned: list[tuple[str, ...]] = []
    real = surface.cmd

    def cmd(subcommand: str, *args: str) -> list[str]:
        spawned.append((subcommand, *args))
        return real(subcommand, *args)

    surface.cmd = cmd  # type: ignore[method-assign]
    assert surface.unread_input(pane.pane_id) == 0
    assert surface.reading_input(pane.pane_id) in (True, None)
    assert not spawned, spawned
