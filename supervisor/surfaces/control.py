"""A tmux control-mode client: ``tmux -L SOCKET -C attach -t SESSION`` as a subprocess.

tmux writes one notification per line (``%output %3 text``, ``%window-close @2``, ``%exit``);
output bytes below space and the backslash are escaped as ``\\ooo`` octal. One client serves
every pane of a session. A reader thread blocks on the pipe (no polling, no CPU while the
panes are quiet) and hands each notification to the callback as an
:class:`~supervisor.surfaces.base.OutputEvent`.

Pane death is not a tmux notification, so the client subscribes to ``#{pane_dead}`` for every
pane (``refresh-client -B``); tmux reports changes with ``%subscription-changed``.

The same connection runs commands (:meth:`ControlClient.request`): a capture or ``send-keys`` costs a
line on a pipe instead of a new ``tmux`` process (2-5 ms each, 50 ms for a 400x150 capture). tmux
answers each command line with one ``%begin TIME NUMBER 1`` ... ``%end TIME NUMBER 1`` block, in the
order the lines were sent, and queues a command's reply behind the ``%output`` of every byte it had
already put on the pane's screen: so the count of a pane's output notifications read before a
capture's reply (:attr:`ControlClient.versions`) says exactly which output that capture shows, and an
unchanged count later means nothing was drawn since. Command output is not escaped: a pane row that
reads ``%end ...`` would end a block early, so a block whose length is known (a capture is as many
lines as the pane is high) is read by its count, and its end must then be the block's own ``%end``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from supervisor.errors import SurfaceError
from supervisor.surfaces.base import OutputCallback, OutputEvent

log = logging.getLogger(__name__)

_OCTAL = re.compile(rb"\\([0-7]{3})")
DEAD_SUBSCRIPTION = "svdead"
_CLIENT_ENV = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TMUX", "TMUX_TMPDIR",
                         "TZ"})
"""The variables a control client is started with (see :meth:`ControlClient.start`): ``TMUX`` and
``TMUX_TMPDIR`` too, since without ``-L`` tmux finds the server through them, as the supervisor's other
tmux commands do."""

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


BlockLength = Callable[[list[list[bytes]]], "int | None"]
"""How many lines the next block of a request holds, given the blocks read so far (None: read to its
``%end``)."""


class Reply:
    """What tmux answered to one :meth:`ControlClient.request`: each command's output lines, its
    error (``%error`` block) if any, and the pane's output count when each block began."""

    __slots__ = ("blocks", "errors", "versions", "tags", "_lengths", "_done", "pane_id", "failure", "sent")

    def __init__(self, n: int, pane_id: str | None, lengths: list[BlockLength | int | None] | None) -> None:
        self.blocks: list[list[bytes]] = []
        self.errors: list[str | None] = []
        self.versions: list[int] = []
        self.tags: list[str] = []
        """Each block's ``TIME NUMBER`` (from its ``%begin``)."""
        self.pane_id = pane_id
        self.failure: str | None = None
        """Why the reply is not to be trusted (its framing broke, the client ended)."""
        self.sent = False
        """The command lines were written to tmux (so they may have run, whatever the reply says)."""
        self._lengths = lengths or [None] * n
        self._done = threading.Event()

    def length(self) -> int | None:
        want = self._lengths[len(self.blocks)] if len(self.blocks) < len(self._lengths) else None
        if callable(want):
            try:
                return want(self.blocks)
            except Exception:  # noqa: BLE001 - a bad first block: read the next to its end
                return None
        return want

    @property
    def complete(self) -> bool:
        return len(self.blocks) >= len(self._lengths)

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)


class ControlClient:
    """One control-mode client attached to ``session``; events go to ``callback``."""

    def __init__(self, socket: str | None, session: str, callback: OutputCallback, *,
                 subscribe_dead: bool = True, on_output: Callable[[str, bytes, float], bool | None] | None = None
                 ) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            raise SurfaceError("tmux is not installed", "install tmux", subcommand="attach-session")
        self.socket = socket
        self.session = session
        self.callback = callback
        self.on_output = on_output
        """Given each pane's output bytes (the tmux surface's shadow terminals), before ``callback``; a
        true result marks the event ``hint`` (the output may complete a dialog's frame)."""
        self.subscribe_dead = subscribe_dead
        # -E: attaching does not copy this process's environment into the session (update-environment)
        argv = [tmux] + (["-L", socket] if socket else []) + ["-C", "attach-session", "-E", "-f", "ignore-size",
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
        self.versions: dict[str, int] = {}
        """Per pane, how many output notifications (and mode changes) were read for it so far."""
        self._slots: deque[Reply | None] = deque()
        """One entry per command line written and not answered yet, in order: the request it belongs
        to, or None for a line sent with :meth:`command` (its reply is dropped)."""
        self._write_lock = threading.Lock()
        self.ready = threading.Event()
        """Set once tmux has answered the attach (or the client ended): the client is identified."""

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self.exit_reason is None

    def start(self) -> None:
        """Start the client. Its environment is the few variables tmux needs: a tmux 3.3 server crashes
        (a NULL ``control_state``, tmux/tmux#4980) when it notifies a control client that has said it
        is one but not yet finished identifying itself, and the identification is one message per
        environment variable: the fewer, the shorter that window (see :meth:`wait_ready`)."""
        env = {k: v for k, v in os.environ.items() if k in _CLIENT_ENV or k.startswith("LC_")}
        self._proc = subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, bufsize=0, env=env)
        self._thread = threading.Thread(target=self._read, name=f"tmux-control-{self.session}", daemon=True)
        self._thread.start()
        # The pane_dead subscription is requested once attached (see _read): sent earlier, tmux
        # may answer "no current client".

    def wait_ready(self, timeout: float = 5.0) -> bool:
        """Wait until tmux has answered the attach: from then on the server may notify this client."""
        return self.ready.wait(timeout)

    def command(self, line: str) -> None:
        """Send one tmux command over the control connection (its reply is read and dropped;
        ``%error`` replies are kept in :attr:`errors`)."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            return
        with self._write_lock, contextlib.suppress(BrokenPipeError, ValueError, OSError):
            proc.stdin.write(line.encode() + b"\n")
            self._slots.append(None)

    def request(self, lines: list[str], *, pane_id: str | None = None,
                lengths: list[BlockLength | int | None] | None = None, timeout: float = 5.0) -> Reply:
        """Run tmux commands (one per line, each its own command list: one failing does not stop the
        others) over this connection and wait for their replies. ``lengths`` gives, per command, how
        many lines its reply holds when that is known (read by count: pane text cannot end it early).
        A reply whose framing broke, or that did not come within ``timeout``, has ``failure`` set."""
        reply = Reply(len(lines), pane_id, lengths)
        proc = self._proc
        if proc is None or proc.stdin is None or not self.alive:
            reply.failure = "the control client is not running"
            return reply
        data = b"".join(ln.encode() + b"\n" for ln in lines)
        with self._write_lock:
            try:
                proc.stdin.write(data)
            except (BrokenPipeError, ValueError, OSError) as exc:
                reply.failure = f"writing to the control client failed: {exc}"
                return reply
            self._slots.extend([reply] * len(lines))
            reply.sent = True
        if not reply.wait(timeout):
            reply.failure = reply.failure or f"tmux did not answer within {timeout:g}s"
        return reply

    def version(self, pane_id: str) -> int:
        """How many output notifications were read for the pane so far."""
        return self.versions.get(pane_id, 0)

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
        reason = "eof"
        # stdin stays unbuffered (each command goes out at once); stdout is read through a buffer: a raw
        # pipe's readline reads one byte per system call (100,000 of them for one large pane's frame)
        readline = io.BufferedReader(proc.stdout, buffer_size=1 << 16).readline  # type: ignore[arg-type]
        for raw in iter(readline, b""):
            self.lines_read += 1
            self.ready.set()
            line = raw.rstrip(b"\n").rstrip(b"\r")
            if line.startswith(b"%begin "):
                self._read_block(line, readline)
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
        self.ready.set()
        with self._write_lock:
            left, self._slots = [r for r in dict.fromkeys(self._slots) if r is not None], deque()
        for reply in left:
            reply.failure = reply.failure or f"the control client ended ({reason})"
            reply._done.set()
        if not self._closing:
            try:
                self.callback(OutputEvent("server_gone", None, time.time()))
            except Exception:  # noqa: BLE001 - the reader is ending anyway
                log.exception("control-mode callback failed on server_gone")

    def _read_block(self, begin: bytes, readline: Callable[[], bytes]) -> None:
        """One ``%begin`` ... ``%end``/``%error`` block: the reply to a command of ours (flags 1; tmux's
        own reply to the attach has flags 0), given to the request it answers, in order."""
        parts = begin.split(b" ")
        tag = b" ".join(parts[1:3])
        mine = len(parts) >= 4 and parts[3] == b"1"
        reply: Reply | None = None
        if mine:
            with self._write_lock:
                reply = self._slots.popleft() if self._slots else None
        want = reply.length() if reply is not None else None
        if reply is not None:
            reply.versions.append(self.versions.get(reply.pane_id or "", 0))
            reply.tags.append(tag.decode("ascii", "replace"))
        body: list[bytes] = []
        end: bytes | None = None
        while True:
            raw = readline()
            if not raw:
                break
            self.lines_read += 1
            line = raw.rstrip(b"\n").rstrip(b"\r")
            if want is not None and len(body) < want:
                body.append(line)  # read by count: whatever the pane shows is content
                continue
            if line.startswith((b"%end ", b"%error ")) and b" ".join(line.split(b" ")[1:3]) == tag:
                end = line
                break
            if want is not None and reply is not None and reply.failure is None:
                reply.failure = "a reply held more lines than its command gives (its framing broke)"
            body.append(line)
        error = body if end is not None and end.startswith(b"%error") else None
        if error is not None:
            text = b" ".join(error).decode("utf-8", "replace")
            self.errors.append(text)
            if reply is None and self._subscribed and self._subscribe_tries < 5 and "client" in text.lower():
                # the pane_dead subscription was refused ("no current client"): without it a pane's
                # death is never reported, so ask again
                self._subscribe()
        if reply is None:
            return
        reply.blocks.append(body)
        reply.errors.append(None if error is None else b" ".join(error).decode("utf-8", "replace"))
        if end is None:
            reply.failure = reply.failure or "the control client ended inside a reply"
        if end is None:
            with self._write_lock:  # the stream ended: nothing more comes for this request
                self._slots = deque(r for r in self._slots if r is not reply)
        if reply.complete or end is None:
            reply._done.set()

    def _dispatch(self, note: Notification) -> None:
        now = time.time()
        if note.name == "output" and note.pane_id:
            self.versions[note.pane_id] = self.versions.get(note.pane_id, 0) + 1
            hint = False
            if self.on_output is not None:
                hint = bool(self.on_output(note.pane_id, note.data, time.monotonic()))
            self.callback(OutputEvent("output", note.pane_id, now, len(note.data), hint))
        elif note.name == "subscription-changed" and note.args and note.args[0] == DEAD_SUBSCRIPTION:
            if note.data.strip() == b"1" and note.pane_id:
                self.callback(OutputEvent("pane_dead", note.pane_id, now))
        elif note.name == "pane-mode-changed" and note.pane_id:
            self.versions[note.pane_id] = self.versions.get(note.pane_id, 0) + 1
            self.callback(OutputEvent("output", note.pane_id, now))
        elif ("%" + note.name).encode() in _PANES_CHANGED:
            if note.name == "layout-change":  # a resize redraws every pane of the window
                for pane in self.versions:
                    self.versions[pane] += 1
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
