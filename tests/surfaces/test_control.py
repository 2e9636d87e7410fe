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


# -- commands over the control connection -----------------------------------------------------------------------

def test_requests_answer_in_order_and_count_the_output_they_show(tmux_socket: str) -> None:
    """Each command line gets its own reply block, in order; a reply tells how many output notifications
    of the pane came before it, and a later one that saw more output says so."""
    _tmux(tmux_socket, "new-session", "-d", "-s", "s", "-x", "60", "-y", "6", "cat")
    with control_client(tmux_socket, "s") as (client, _events):
        retry_until(lambda: client.alive and client.lines_read > 0, 10, message="the client to attach")
        reply = client.request(["display-message -p -t %0 '#{pane_id}'", "display-message -p nosuchformat#{",
                                "list-panes -t s -F '#{pane_height}'"], pane_id="%0")
        assert reply.failure is None and reply.complete
        assert reply.blocks[0] == [b"%0"] and reply.blocks[2] == [b"6"]
        before = reply.versions[-1]
        _tmux(tmux_socket, "send-keys", "-t", "%0", "-l", "hello")
        retry_until(lambda: client.version("%0") > before, 10, message="the output to be counted")
        after = client.request(["display-message -p -t %0 '#{pane_id}'"], pane_id="%0")
        assert after.versions[-1] > before


def test_pane_text_that_reads_like_the_end_of_a_reply_cannot_cut_a_capture(tmux_socket: str) -> None:
    """Command output is not escaped: a pane row that is exactly the ``%end`` line tmux will write for a
    capture would end it early and the rest be read as notifications. A capture is read by its known
    length (the pane's height), so such rows are content and the capture is whole."""
    from supervisor.surfaces.tmux import TmuxSurface

    _tmux(tmux_socket, "new-session", "-d", "-s", "s", "-x", "60", "-y", "30", "cat")
    surface = TmuxSurface(tmux_socket)
    try:
        surface.watch(["%0"], lambda ev: None)
        client = surface._client_of("%0")
        retry_until(lambda: surface._client_of("%0") is not None and client.lines_read > 0, 10,
                    message="the control client")
        probe = client.request(["display-message -p x"])
        when, number = probe.tags[0].split(" ")
        # every %end line the next commands could get, for this second and the next one
        fakes = [f"%end {int(when) + d} {int(number) + k} 1" for d in (0, 1) for k in range(1, 13)]
        _tmux(tmux_socket, "send-keys", "-t", "%0", "-l", "\n".join([*fakes, "BOTTOM"]) + "\n")
        retry_until(lambda: "BOTTOM" in surface.capture("%0").plain, 10, message="the rows to be drawn")
        for _ in range(3):
            raw = surface.capture("%0")
            rows = raw.text.split("\n")
            assert len(rows) == 30 and "BOTTOM" in raw.plain, rows
            assert raw.version is not None
        assert surface.control_failures == 0
        assert client.alive and client.request(["display-message -p ok"]).blocks == [[b"ok"]]
    finally:
        surface.close()


def test_keys_and_captures_go_over_the_control_connection(tmux_socket: str) -> None:
    """Once a pane is watched its captures and keys need no tmux process: the keys arrive, the capture
    shows them, and after a round trip the pane's count includes everything it drew."""
    from supervisor.surfaces.tmux import TmuxSurface

    _tmux(tmux_socket, "new-session", "-d", "-s", "s", "-x", "60", "-y", "8", "cat")
    surface = TmuxSurface(tmux_socket)
    try:
        surface.watch(["%0"], lambda ev: None)
        retry_until(lambda: surface._client_of("%0") is not None, 10, message="the control client")
        calls: list[str] = []
        original = surface.cmd
        surface.cmd = lambda sub, *a: calls.append(sub) or original(sub, *a)  # type: ignore[method-assign]
        before = surface.settled_version("%0")
        surface.send_keys("%0", ["e", "c", "h", "o", "Space", "$", "'", ";"])
        raw = retry_until(lambda: (r := surface.capture("%0")) and "echo $';" in r.plain and r, 10,
                          message="the keys on the screen")
        settled = surface.settled_version("%0")
        # a capture may show text whose output notice tmux sends after its reply (its version then
        # lags, which only makes the runner read again); after the round trips, it is counted
        assert raw.version is not None and before is not None and settled is not None
        assert before < settled and raw.version <= settled
        assert settled == surface.output_version("%0")
        assert calls == [] and surface.control_failures == 0
    finally:
        surface.close()


def test_output_that_draws_a_frame_end_is_marked(tmux_socket: str) -> None:
    """With a frame-end test installed for a pane, its output events say whether they drew such a row."""
    from supervisor.surfaces.tmux import TmuxSurface

    _tmux(tmux_socket, "new-session", "-d", "-s", "s", "-x", "60", "-y", "8", "cat")
    surface = TmuxSurface(tmux_socket)
    events: queue.Queue[OutputEvent] = queue.Queue()
    try:
        surface.watch(["%0"], events.put)
        surface.watch_frame_ends("%0", lambda row: row.startswith("Esc to cancel"))
        retry_until(lambda: surface._client_of("%0") is not None, 10, message="the control client")
        _tmux(tmux_socket, "send-keys", "-t", "%0", "-l", "just some output")
        wait_for_event(events, lambda e: e.kind == "output" and not e.hint, "plain output")
        _tmux(tmux_socket, "send-keys", "-t", "%0", "-l", "\n Esc to cancel · Tab to amend")
        wait_for_event(events, lambda e: e.kind == "output" and e.hint, "output marked as drawing a frame end")
    finally:
        surface.close()
