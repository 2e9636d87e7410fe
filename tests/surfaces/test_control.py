"""The tmux control-mode client: parsing (pure) and a real client against a private server."""

from __future__ import annotations

import queue
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from supervisor.surfaces.base import OutputEvent
from supervisor.surfaces.control import ControlClient, decode_output, parse_line
from tests.helpers import retry_until


def test_decode_output_octal_escapes() -> None:
    assert decode_output(rb"plain text") == b"plain text"
    assert decode_output(rb"a\015\012b") == b"a\r\nb"
    assert decode_output(rb"back\134slash") == b"back\\slash"
    assert decode_output(rb"\033[1mbold\033[0m") == b"\x1b[1mbold\x1b[0m"
    # UTF-8 bytes pass through unescaped
    assert decode_output("❯ 1. Yes".encode()) == "❯ 1. Yes".encode()


def test_parse_notifications() -> None:
    n = parse_line(rb"%output %12 hello\015\012")
    assert n is not None and n.name == "output" and n.pane_id == "%12" and n.data == b"hello\r\n"
    n = parse_line(rb"%extended-output %3 120 : data\012")
    assert n is not None and n.name == "output" and n.pane_id == "%3" and n.data == b"data\n"
    n = parse_line(b"%subscription-changed svdead $0 @1 1 %4 : 1")
    assert n is not None and n.pane_id == "%4" and n.data == b"1" and n.args[0] == "svdead"
    n = parse_line(b"%window-close @3")
    assert n is not None and n.name == "window-close" and n.args == ["@3"]
    n = parse_line(b"%pane-mode-changed %7")
    assert n is not None and n.pane_id == "%7"
    assert parse_line(b"%exit").name == "exit"  # type: ignore[union-attr]
    assert parse_line(b"not a notification") is None


def _tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], check=True, capture_output=True, text=True).stdout


@contextmanager
def control_client(socket: str, session: str) -> Iterator[tuple[ControlClient, queue.Queue[OutputEvent]]]:
    """A started control client of ``session`` and the queue its events land in; closed after."""
    events: queue.Queue[OutputEvent] = queue.Queue()
    client = ControlClient(socket, session, events.put)
    client.start()
    try:
        yield client, events
    finally:
        client.close()


def drain(events: queue.Queue[OutputEvent]) -> list[OutputEvent]:
    """The events queued so far."""
    got: list[OutputEvent] = []
    while not events.empty():
        got.append(events.get())
    return got


def wait_for_event(events: queue.Queue[OutputEvent], wanted: Callable[[OutputEvent], bool], what: str,
                   seconds: float = 10) -> None:
    """Wait (bounded) until an event ``wanted`` accepts has come."""
    got: list[OutputEvent] = []

    def came() -> bool:
        got.extend(drain(events))
        return any(wanted(e) for e in got)

    retry_until(came, seconds, message=lambda: f"{what} (got {[e.kind for e in got]})")


def test_one_client_serves_every_pane_of_a_session(tmux_socket: str) -> None:
    _tmux(tmux_socket, "new-session", "-d", "-s", "s", "-x", "80", "-y", "24", "cat")
    second = _tmux(tmux_socket, "split-window", "-d", "-t", "s", "-P", "-F", "#{pane_id}", "cat").strip()
    third = _tmux(tmux_socket, "new-window", "-d", "-t", "s", "-P", "-F", "#{pane_id}", "cat").strip()
    with control_client(tmux_socket, "s") as (_client, events):
        seen: set[str] = set()

        def saw_all() -> bool:
            for pane in ("%0", second, third):
                _tmux(tmux_socket, "send-keys", "-t", pane, "-l", f"x{pane}")
            seen.update(ev.pane_id for ev in drain(events) if ev.kind == "output" and ev.pane_id)
            return {"%0", second, third} <= seen

        retry_until(saw_all, 15, interval=0.2, message=lambda: f"output from all three panes (saw {seen})")
        # a pane whose program exits is reported dead (remain-on-exit keeps it)
        _tmux(tmux_socket, "set-option", "-w", "-t", "s:0", "remain-on-exit", "on")
        _tmux(tmux_socket, "send-keys", "-t", second, "Enter", "C-d")
        wait_for_event(events, lambda e: e.kind == "pane_dead" and e.pane_id == second, "a pane_dead event", 15)


def test_server_death_ends_the_client_cleanly(tmux_socket: str) -> None:
    _tmux(tmux_socket, "new-session", "-d", "-s", "s", "cat")
    with control_client(tmux_socket, "s") as (client, events):
        retry_until(lambda: client.lines_read > 0, 10, message="the client to attach")
        _tmux(tmux_socket, "kill-server")
        wait_for_event(events, lambda e: e.kind == "server_gone", "a server_gone event")
        retry_until(lambda: not client.alive, 10, message="the client to stop")
        assert client.exit_reason is not None


def test_attach_to_missing_session_reports_gone(tmux_socket: str) -> None:
    _tmux(tmux_socket, "new-session", "-d", "-s", "s", "cat")
    with control_client(tmux_socket, "nosuch") as (client, events):
        retry_until(lambda: not client.alive, 10, message="the client to exit")
        wait_for_event(events, lambda e: e.kind == "server_gone", "a server_gone event")
