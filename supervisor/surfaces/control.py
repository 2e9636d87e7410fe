"""A tmux control-mode client: ``tmux -L SOCKET -C attach -t SESSION`` as a subprocess.

tmux writes one notification per line (``%output %3 text``, ``%window-close @2``, ``%exit``);
output bytes below space and the backslash are escaped as ``\\ooo`` octal. One client serves
every pane of a session. A reader thread blocks on the pipe (no polling, no CPU while the
panes are quiet) and hands each notification to the callback as an
:class:`~supervisor.surfaces.base.OutputEvent`.

Pane death is not a tmux notification, so the client subscribes to ``#{pane_dead}`` for every
pane (``refresh-client -B``); tmux reports changes with ``%subscription-changed``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from supervisor.errors import SurfaceError
from supervisor.surfaces.base import OutputCallback, OutputEvent

log = logging.getLogger(__name__)

_OCTAL = re.compile(rb"\\([0-7]{3})")
DEAD_SUBSCRIPTION = "svdead"

_PANES_CHANGED = {
    b"%window-add", b"%window-close", b"%unlinked-window-close", b"%unlinked-window-add",
    b"%layout-change", b"%sessions-changed", b"%session-changed", b"%window-pane-changed",
    b"%session-window-changed", b"%unlinked-window-renamed",
}


def decode_output(data: bytes) -> bytes:
    """Undo control mode's escaping: ``\\ooo`` octal for bytes below space and for ``\\``."""
    if b"\\" not in data:
        return data
    return _OCTAL.sub(lambda m: bytes([int(m.group(1), 8) & 0xFF]), data)


@dataclass
class Notification:
    """One parsed control-mode line."""

    name: str
    """``output``, ``exit``, ``window-close``, ... (without the ``%``)."""
    pane_id: str | None = None
    data: bytes = b""
    args: list[str] = field(default_factory=list)


def parse_line(line: bytes) -> Notification | None:
    """Parse one notification line (without its newline); None for lines that are not one."""
    if not line.startswith(b"%"):
        return None
    head, _, rest = line.partition(b" ")
    name = head[1:].decode("ascii", "replace")
    if name == "output":
        pane, _, data = rest.partition(b" ")
        return Notification(name, pane.decode("ascii", "replace"), decode_output(data))
    if name == "extended-output":
        # %extended-output %PANE AGE ... : DATA
        pane, _, remainder = rest.partition(b" ")
        _, _, data = remainder.partition(b" : ")
        return Notification("output", pane.decode("ascii", "replace"), decode_output(data))
    args = rest.decode("utf-8", "replace").split(" ") if rest else []
    if name == "subscription-changed":
        # %subscription-changed NAME $SESSION @WINDOW INDEX %PANE ... : VALUE
        target = next((a for a in args if a.startswith("%")), None)
        value = rest.decode("utf-8", "replace").partition(" : ")[2]
        return Notification(name, target, value.encode(), args)
    if name == "pane-mode-changed":
        return Notification(name, args[0] if args else None, b"", args)
    return Notification(name, None, b"", args)


class ControlClient:
    """One control-mode client attached to ``session``; events go to ``callback``."""

    def __init__(self, socket: str | None, session: str, callback: OutputCallback, *,
                 subscribe_dead: bool = True) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            raise SurfaceError("tmux is not installed", "install tmux", subcommand="attach-session")
        self.socket = socket
        self.session = session
        self.callback = callback
        self.subscribe_dead = subscribe_dead
        argv = [tmux] + (["-L", socket] if socket else []) + ["-C", "attach-session", "-f", "ignore-size",
                                                              "-t", session]
        self._argv = argv
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self.exit_reason: str | None = None
        self.errors: list[str] = []
        self.lines_read = 0
        self._subscribed = False
        self._subscribe_tries = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self.exit_reason is None

    def start(self) -> None:
        self._proc = subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, bufsize=0)
        self._thread = threading.Thread(target=self._read, name=f"tmux-control-{self.session}", daemon=True)
        self._thread.start()
        # The pane_dead subscription is requested once attached (see _read): sent earlier, tmux
        # may answer "no current client".

    def command(self, line: str) -> None:
        """Send one tmux command over the control connection (its reply is read and dropped;
        ``%error`` replies are kept in :attr:`errors`)."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            proc.stdin.write(line.encode() + b"\n")

    def _subscribe(self) -> None:
        """Ask tmux to report ``#{pane_dead}`` of every pane (again: a subscription of the same
        name replaces the old one, and tmux reports every pane's current value at once)."""
        self._subscribe_tries += 1
        self.command(f"refresh-client -B '{DEAD_SUBSCRIPTION}:%*:#{{pane_dead}}'")

    def _read(self) -> None:
        with contextlib.suppress(AttributeError, ValueError, OSError):
            # Signals go to the main thread (the supervisor loop), never to this reader.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        in_block = False
        block_error = False
        block: list[bytes] = []
        reason = "eof"
        for raw in iter(proc.stdout.readline, b""):
            self.lines_read += 1
            line = raw.rstrip(b"\n").rstrip(b"\r")
            if in_block:
                if line.startswith((b"%end ", b"%error ")):
                    if line.startswith(b"%error") or block_error:
                        error = b" ".join(block).decode("utf-8", "replace")
                        self.errors.append(error)
                        if self._subscribed and self._subscribe_tries < 5 and "client" in error.lower():
                            # the pane_dead subscription was refused ("no current client"):
                            # without it a pane's death is never reported, so ask again
                            self._subscribe()
                    in_block, block = False, []
                else:
                    block.append(line)
                continue
            if line.startswith(b"%begin "):
                in_block, block_error, block = True, False, []
                continue
            note = parse_line(line)
            if note is None:
                continue
            if note.name == "session-changed" and self.subscribe_dead and not self._subscribed:
                self._subscribed = True
                self._subscribe()
            try:
                self._dispatch(note)
            except Exception:  # noqa: BLE001 - a callback bug must not kill the reader
                log.exception("control-mode callback failed on %s", note.name)
            if note.name == "exit":
                reason = "exit: " + " ".join(note.args) if note.args else "exit"
                break
        self.exit_reason = reason
        if not self._closing:
            try:
                self.callback(OutputEvent("server_gone", None, time.time()))
            except Exception:  # noqa: BLE001 - the reader is ending anyway
                log.exception("control-mode callback failed on server_gone")

    def _dispatch(self, note: Notification) -> None:
        now = time.time()
        if note.name == "output" and note.pane_id:
            self.callback(OutputEvent("output", note.pane_id, now, len(note.data)))
        elif note.name == "subscription-changed" and note.args and note.args[0] == DEAD_SUBSCRIPTION:
            if note.data.strip() == b"1" and note.pane_id:
                self.callback(OutputEvent("pane_dead", note.pane_id, now))
        elif note.name == "pane-mode-changed" and note.pane_id:
            self.callback(OutputEvent("output", note.pane_id, now))
        elif ("%" + note.name).encode() in _PANES_CHANGED:
            self.callback(OutputEvent("panes_changed", None, now))

    def close(self, timeout: float = 2.0) -> None:
        self._closing = True
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
