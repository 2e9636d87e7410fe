"""The tmux surface: sessions, panes, keys, captures and messages through libtmux.

Every tmux command goes through :meth:`TmuxSurface.cmd`, the one place that turns tmux's
stderr into an exception naming the subcommand: :class:`~supervisor.errors.PaneGone` for a
missing pane or a dead server, :class:`~supervisor.errors.SurfaceError` for anything else.
Output events come from a control-mode client (:mod:`supervisor.surfaces.control`), one per
session, or from a capture-pane poller when ``poll_s`` is set.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import struct
import termios
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import libtmux
from libtmux import exc as tmux_exc

from supervisor.errors import PaneGone, SurfaceError
from supervisor.surfaces.base import OutputCallback, OutputEvent, PaneInfo, RawScreen

log = logging.getLogger(__name__)

SEP = "\x1f"
_IDENTIFYING = threading.Lock()
"""Held while a control client of this process starts and tmux identifies it, and around the
commands of ours that make tmux notify every control client (``new-session``): a tmux 3.3 server
that notifies a control client in the middle of its identification crashes (tmux/tmux#4980), with
every pane's program. Other programs can still do that; this process never does."""
CONTROL_READY_S = 5.0
"""How long starting a control client waits for tmux's answer to the attach."""
PANE_FIELDS = (
    "pane_id", "session_name", "window_id", "pane_title", "pane_current_command", "pane_dead",
    "pane_dead_status", "pane_width", "pane_height", "cursor_x", "cursor_y", "pane_pid", "pane_in_mode",
    "pane_current_path", "history_size", "pane_tty",
)
_CUT = "\x1e--supervisor-cut--"
PANE_FORMAT = SEP.join(f"#{{{f}}}" for f in PANE_FIELDS)

_READING_WCHANS = ("poll_schedule_timeout", "do_select", "core_sys_select", "do_sys_poll", "do_epoll_wait",
                   "ep_poll", "n_tty_read", "wait_woken", "tty_read")
"""Kernel wait channels of a thread blocked waiting for input (``/proc/PID/task/TID/wchan``)."""

_GONE_MARKERS = ("can't find pane", "can't find window", "can't find session", "no server running",
                 "error connecting to", "server exited", "lost server", "no such file or directory")


def _family(pid: int) -> list[int]:
    """A process and its descendants, read from ``/proc/PID/task/TID/children`` (no full process scan)."""
    out, todo = [], [pid]
    while todo and len(out) < 256:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def parse_pane_line(line: str) -> PaneInfo | None:
    """A ``PANE_FORMAT`` line as a :class:`PaneInfo` (None for a line that is not one)."""
    parts = line.split(SEP)
    if len(parts) != len(PANE_FIELDS) or not parts[0].startswith("%"):
        return None
    f = dict(zip(PANE_FIELDS, parts, strict=True))
    return PaneInfo(
        pane_id=f["pane_id"], session=f["session_name"], window_id=f["window_id"], title=f["pane_title"],
        current_command=f["pane_current_command"], dead=f["pane_dead"] == "1",
        dead_status=_int(f["pane_dead_status"]), width=_int(f["pane_width"]) or 80,
        height=_int(f["pane_height"]) or 24, cursor_x=_int(f["cursor_x"]), cursor_y=_int(f["cursor_y"]),
        pid=_int(f["pane_pid"]), in_mode=f["pane_in_mode"] == "1", current_path=f["pane_current_path"],
        history_size=_int(f["history_size"]) or 0, tty=f["pane_tty"],
    )


def _status_dir() -> Path:
    """Where wrapped commands leave their exit status (one small file per pane, by pane pid)."""
    import os
    import tempfile

    path = Path(tempfile.gettempdir()) / f"sv-exit-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _prune(folder: Path, max_age_s: float = 7 * 86400) -> None:
    """Remove exit-status files older than a week (their panes are long gone)."""
    cutoff = time.time() - max_age_s
    with contextlib.suppress(OSError):
        for f in folder.iterdir():
            with contextlib.suppress(OSError):
                if f.stat().st_mtime < cutoff:
                    f.unlink()


def _socket_label(socket: str | None) -> str:
    return f"tmux -L {socket}" if socket else "tmux"


class TmuxSurface:
    """A :class:`~supervisor.surfaces.base.Surface` over one tmux server (``tmux -L socket``)."""

    def __init__(self, socket: str | None = None, *, poll_s: float | None = None) -> None:
        if shutil.which("tmux") is None:
            raise SurfaceError("tmux is not installed", "install it (apt-get install tmux / brew install tmux)",
                               subcommand=None)
        self.socket = socket
        self.poll_s = poll_s
        self.server = libtmux.Server(socket_name=socket) if socket else libtmux.Server()
        self._controls: dict[str, object] = {}
        self._poller: _Poller | None = None
        self._lock = threading.Lock()
        self._ttys: dict[str, str] = {}
        self._pids: dict[str, int] = {}
        self._shadows: dict[str, Any] = {}
        """Per pane, its output played through an emulator that remembers overwritten rows (the bytes come
        from control mode, or with ``--poll`` from ``pipe-pane``)."""
        self._pane_sessions: dict[str, str] = {}
        """The session of each watched pane (whose control client runs its captures and keys)."""
        self._frame_ends: dict[str, Callable[[str], bool]] = {}
        """Per pane, a test of its output text: does it draw a row its agent ends a dialog with?"""
        self.control_failures = 0
        self._pipes: dict[str, Path] = {}
        """``--poll``: panes whose output is piped (``pipe-pane``) into their shadow terminals."""
        self._blind: dict[str, str] = {}
        """``--poll``: panes whose output could not be piped here, and why."""
        """Captures and keys the control connection could not carry (done with a tmux process instead)."""

    # -- the one place tmux errors become exceptions -------------------------------------------
    def cmd(self, subcommand: str, *args: str) -> list[str]:
        """Run one tmux subcommand (``\\;``-chained ones too) and return its stdout lines."""
        try:
            result = self.server.cmd(subcommand, *args)
        except tmux_exc.TmuxCommandNotFound as exc:
            raise SurfaceError("tmux is not installed", "install tmux", subcommand=subcommand) from exc
        stderr = [line for line in result.stderr if line.strip()]
        if stderr or (getattr(result, "returncode", 0) or 0) != 0:
            self._fail(subcommand, "; ".join(stderr) or f"exit status {result.returncode}")
        return list(result.stdout)

    def _fail(self, subcommand: str, message: str) -> None:
        """Raise what tmux's error ``message`` for ``subcommand`` means (however the command was run)."""
        low = message.lower()
        where = _socket_label(self.socket)
        if any(m in low for m in _GONE_MARKERS):
            if any(m in low for m in ("no server running", "error connecting", "no such file", "server exited",
                                      "lost server")):
                raise PaneGone(f"`{where} {subcommand}`: the tmux server is not running ({message})",
                               "start the agent in tmux first, or pass --socket NAME for its server",
                               subcommand=subcommand)
            raise PaneGone(f"`{where} {subcommand}`: {message}",
                           f"list panes with `{where} list-panes -a`", subcommand=subcommand)
        raise SurfaceError(f"`{where} {subcommand}` failed: {message}", "check the tmux server and arguments",
                           subcommand=subcommand)

    def _client_of(self, pane_id: str) -> Any:
        """The live control client of the pane's session (None: none, or ``--poll``)."""
        session = self._pane_sessions.get(pane_id)
        client = self._controls.get(session) if session is not None else None
        return client if client is not None and client.alive else None  # type: ignore[attr-defined]

    def output_version(self, pane_id: str) -> int | None:
        """How many output notifications the pane's control client has read for it (see
        ``RawScreen.version``); None without a control client."""
        client = self._client_of(pane_id)
        return None if client is None else client.version(pane_id)

    def settled_version(self, pane_id: str) -> int | None:
        """:meth:`output_version` after a round trip to tmux on the pane's control connection: tmux answers
        behind the output it has already read from the pane (and reads a pane whose output was waiting
        before it runs a command that came later), so what the program wrote before this call is
        counted. None without a control client, or when tmux did not answer."""
        client = self._client_of(pane_id)
        if client is None:
            return None
        # Two round trips, the second sent once the first is answered: tmux can answer a command before
        # it has sent a control client the output it read in the same turn of its loop (seen on a loaded
        # host: a capture already showing text whose %output came after the reply). By the second
        # answer, that turn's output has been sent.
        version = None
        for _ in range(2):
            reply = client.request([f"display-message -p -t {pane_id} '#{{pane_id}}'"], pane_id=pane_id, lengths=[1])
            if reply.failure is not None or not reply.complete or (reply.errors and reply.errors[0]):
                return None
            version = reply.versions[-1]
        return version

    # -- sessions and panes ------------------------------------------------------------------------
    def server_alive(self) -> bool:
        try:
            self.cmd("list-sessions", "-F", "#{session_name}")
        except SurfaceError:
            return False
        return True

    def new_session(self, name: str, command: list[str] | str, *, width: int = 120, height: int = 40,
                    cwd: str | None = None, env: dict[str, str] | None = None) -> PaneInfo:
        """A detached session running ``command``; its pane stays after the program exits
        (``remain-on-exit``) so the exit status and last screen can be read."""
        import shlex

        shell_cmd = command if isinstance(command, str) else shlex.join(command)
        # tmux 3.3 often marks a pane dead without ever learning its exit status (when the pty
        # closes before it reaps the child), so the wrapper shell also writes the status to a
        # file named after its own pid (the pane's pid): any process can find it later.
        # `set -m` gives the program its own foreground process group, so pane_current_command
        # still names the agent rather than the wrapping shell.
        status_dir = _status_dir()
        _prune(status_dir)
        prefix = shlex.quote(str(status_dir / self._status_label()))
        shell_cmd = (f"set -m; {shell_cmd}; __sv_status=$?; printf '%s' \"$__sv_status\" > {prefix}-$$; "
                     "exit $__sv_status")
        args = ["-d", "-s", name, "-x", str(width), "-y", str(height), "-P", "-F", "#{pane_id}"]
        if cwd:
            args += ["-c", cwd]
        for k, v in (env or {}).items():
            args += ["-e", f"{k}={v}"]
        args += [shell_cmd, ";", "set-option", "-w", "-t", name, "remain-on-exit", "on"]
        for attempt in range(3):
            try:
                with _IDENTIFYING:
                    out = self.cmd("new-session", *args)
                break
            except PaneGone as exc:
                # the server's last session ended a moment ago and it is exiting: a new session made now
                # reaches the exiting server and is refused; a moment later it starts a fresh one
                if attempt == 2 or not any(m in exc.message for m in ("server exited", "lost server")):
                    raise
                time.sleep(0.2 * (attempt + 1))
        pane_id = next((line.strip() for line in out if line.strip().startswith("%")), "")
        if not pane_id:
            raise SurfaceError(f"tmux new-session {name} printed no pane id", "check the tmux version (>= 3.2)",
                               subcommand="new-session")
        return self.pane_info(pane_id)

    def _status_label(self) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in (self.socket or "default"))

    def _remember(self, info: PaneInfo) -> PaneInfo:
        """Keep the pane's program's pid and its terminal from a look at its facts, so that checking its
        input before keys are sent never waits for a tmux process of its own."""
        if info.pid is not None and not info.dead:
            self._pids[info.pane_id] = info.pid
        if info.tty.startswith("/dev/"):
            self._ttys[info.pane_id] = info.tty
        return info

    def _with_status(self, info: PaneInfo) -> PaneInfo:
        """Fill in a dead pane's exit status from our wrapper's file when tmux does not know it (and
        remember its pid and terminal: every look at one pane's facts passes here)."""
        self._remember(info)
        if not info.dead or info.dead_status is not None or info.pid is None:
            return info
        try:
            text = (_status_dir() / f"{self._status_label()}-{info.pid}").read_text().strip()
        except OSError:
            return info
        status = _int(text)
        return info if status is None else replace(info, dead_status=status)

    def kill_session(self, name: str) -> None:
        with contextlib.suppress(SurfaceError):
            self.cmd("kill-session", "-t", name)

    def list_panes(self, session: str | None = None) -> list[PaneInfo]:
        args = ["-t", session, "-s"] if session else ["-a"]
        try:
            lines = self.cmd("list-panes", *args, "-F", PANE_FORMAT)
        except PaneGone:
            if session:
                raise
            return []
        return [self._remember(p) for line in lines if (p := parse_pane_line(line)) is not None]

    def pane_info(self, pane_id: str) -> PaneInfo:
        lines = self.cmd("display-message", "-p", "-t", pane_id, PANE_FORMAT)
        info = parse_pane_line(lines[0]) if lines else None
        # display-message does not fail for a missing pane: it prints empty fields.
        if info is None or info.pane_id != pane_id:
            raise PaneGone(f"`{_socket_label(self.socket)} display-message`: can't find pane {pane_id}",
                           f"list panes with `{_socket_label(self.socket)} list-panes -a`",
                           subcommand="display-message")
        return self._with_status(info)

    def capture(self, pane_id: str, *, scrollback: int = 0) -> RawScreen:
        """One tmux call: the pane's facts, then its visible text with its SGR escapes (and up to
        ``scrollback`` lines of history above it, in ``RawScreen.scrollback``; ``RawScreen.plain``
        is the text without escapes). Over the pane's control connection when there is one (no tmux
        process, and ``RawScreen.version`` says which output the capture shows); else a tmux process."""
        client = self._client_of(pane_id)
        if client is not None:
            for _ in range(3):
                raw = self._capture_control(client, pane_id, scrollback)
                if raw is None:
                    break
                if raw.version is not None:
                    return raw
            # it could not be read consistently (output kept arriving between its parts): a tmux process
        args = ["-p", "-t", pane_id, PANE_FORMAT]
        # -e keeps SGR escapes: some agents mark the selected option only in reverse video
        # (make_screen records it as Screen.highlights and strips the escapes).
        if scrollback > 0:
            args += [";", "capture-pane", "-p", "-e", "-t", pane_id, "-S", str(-scrollback), "-E", "-1",
                     ";", "display-message", "-p", _CUT]
        args += [";", "capture-pane", "-p", "-e", "-t", pane_id]
        try:
            lines = self.cmd("display-message", *args)
        except PaneGone as exc:  # the chain fails at capture-pane: name that one
            raise PaneGone(exc.message.replace("display-message", "capture-pane"), exc.fix,
                           subcommand="capture-pane") from exc
        info = parse_pane_line(lines[0]) if lines else None
        if info is None or info.pane_id != pane_id:
            raise PaneGone(f"`{_socket_label(self.socket)} capture-pane`: can't find pane {pane_id}",
                           f"list panes with `{_socket_label(self.socket)} list-panes -a`",
                           subcommand="capture-pane")
        body = lines[1:]
        history: list[str] = []
        if scrollback > 0 and _CUT in body:
            cut = body.index(_CUT)
            history, body = body[:cut], body[cut + 1:]
            keep = min(info.history_size, scrollback)
            history = history[len(history) - keep:] if keep else []
        info = self._with_status(info)
        return RawScreen(text="\n".join(body), info=info, scrollback="\n".join(history), captured_at=time.time())

    def _capture_control(self, client: Any, pane_id: str, scrollback: int) -> RawScreen | None:
        """:meth:`capture` over the control connection: the pane's facts, its history, its screen, each
        a command of its own, each block read by its known length. None when the connection could not
        carry it; ``version`` None when output arrived between the facts and the screen."""
        fmt = "'" + PANE_FORMAT + "'"
        lines = [f"display-message -p -t {pane_id} {fmt}"]
        lengths: list[Any] = [1]

        def height(blocks: list[list[bytes]]) -> int | None:
            info = parse_pane_line(blocks[0][0].decode("utf-8", "replace")) if blocks and blocks[0] else None
            return info.height if info is not None else None

        if scrollback > 0:
            lines.append(f"capture-pane -p -e -t {pane_id} -S {-scrollback} -E -1")

            def history(blocks: list[list[bytes]]) -> int | None:
                info = parse_pane_line(blocks[0][0].decode("utf-8", "replace")) if blocks and blocks[0] else None
                return None if info is None else max(1, min(info.history_size, scrollback))

            lengths.append(history)
        lines.append(f"capture-pane -p -e -t {pane_id}")
        lengths.append(height)
        reply = client.request(lines, pane_id=pane_id, lengths=lengths)
        for k, err in enumerate(reply.errors):
            if err:
                self._fail("capture-pane" if k else "display-message", err)
        if reply.failure is not None or not reply.complete:
            self.control_failures += 1
            log.info("capture of %s over control mode failed (%s); using a tmux process", pane_id, reply.failure)
            return None
        first = reply.blocks[0][0].decode("utf-8", "replace") if reply.blocks[0] else ""
        info = parse_pane_line(first)
        if info is None or info.pane_id != pane_id:
            raise PaneGone(f"`{_socket_label(self.socket)} capture-pane`: can't find pane {pane_id}",
                           f"list panes with `{_socket_label(self.socket)} list-panes -a`",
                           subcommand="capture-pane")
        body = [b.decode("utf-8", "replace") for b in reply.blocks[-1]]
        history_lines: list[str] = []
        if scrollback > 0:
            keep = min(info.history_size, scrollback)
            history_lines = [b.decode("utf-8", "replace") for b in reply.blocks[1]][-keep:] if keep else []
        steady = len(set(reply.versions)) == 1
        return RawScreen(text="\n".join(body), info=self._with_status(info), scrollback="\n".join(history_lines),
                         captured_at=time.time(), version=reply.versions[-1] if steady else None)

    def overwritten_rows(self, raw: RawScreen) -> dict[int, str]:
        """Rows of this capture that the pane's program drew over (row -> the text drawn over), as its
        shadow terminal saw them (see :mod:`supervisor.surfaces.shadow`); empty when the pane's output bytes are
        not seen (:meth:`overwrite_blindness`)."""
        shadow = self._shadows.get(raw.info.pane_id)
        if shadow is None:
            return {}
        from supervisor.screen import normalize

        rows = [normalize(b) for b in raw.text.split("\n")]
        return shadow.overwritten_rows(rows, raw.info.width, raw.info.height)

    def _shadow_output(self, pane_id: str, data: bytes, at: float) -> bool:
        """A control client's output bytes for a pane, queued on the pane's shadow terminal; True when
        they draw a row the pane's agent ends its dialogs with (see :meth:`watch_frame_ends`)."""
        shadow = self._shadows.get(pane_id)
        if shadow is None:
            from supervisor.surfaces.shadow import ShadowTerminal  # pyte: only when a pane is watched

            shadow = self._shadows.setdefault(pane_id, ShadowTerminal())
        shadow.add(data, at)
        test = self._frame_ends.get(pane_id)
        if test is None:
            return False
        from supervisor.screen import output_rows

        try:
            return any(test(row) for row in output_rows(data))
        except Exception:  # noqa: BLE001 - a hint only: without it the settle time applies
            log.debug("frame-end test failed on %s", pane_id, exc_info=True)
            return False

    def watch_frame_ends(self, pane_id: str, test: Callable[[str], bool] | None) -> None:
        """Test the pane's output rows with ``test`` as they arrive (None: stop): output that draws a row
        a dialog of the pane's agent ends with is marked ``OutputEvent.hint``, so the runner reads the
        screen at once instead of after the settle time."""
        if test is None:
            self._frame_ends.pop(pane_id, None)
        else:
            self._frame_ends[pane_id] = test

    def client_input_since(self, session: str, since: float) -> bool:
        """True if a human's tmux client (not a control-mode client like ours) attached to
        ``session`` has been active since ``since`` (tmux keeps ``client_activity`` in whole
        seconds; keys, but also attaching or switching windows, count)."""
        try:
            lines = self.cmd("list-clients", "-F", SEP.join(("#{client_control_mode}", "#{client_activity}",
                                                              "#{client_session}")))
        except SurfaceError:
            return False
        for line in lines:
            parts = line.split(SEP)
            if len(parts) != 3 or parts[0] == "1" or parts[2] != session:
                continue
            activity = _int(parts[1])
            if activity is not None and activity >= int(since):
                return True
        return False

    # -- acting --------------------------------------------------------------------------------------
    def send_keys(self, pane_id: str, keys: list[str]) -> None:
        """Send tmux key names, over the pane's control connection when there is one."""
        if not keys:
            return
        client = self._client_of(pane_id)
        if client is not None and all(k and "\n" not in k and "\r" not in k for k in keys):
            quoted = " ".join(f"'{k}'" if "'" not in k else f'"{k}"' for k in keys)
            # a second command after the keys: by its reply tmux has most likely written them into the
            # pane's terminal too (it does that asynchronously), so the check that they were read is fair
            reply = client.request([f"send-keys -t {pane_id} {quoted}", f"display-message -p -t {pane_id} ok"],
                                   pane_id=pane_id, lengths=[0, 1])
            if reply.errors and reply.errors[0]:
                self._fail("send-keys", reply.errors[0])
            if reply.failure is None and reply.complete:
                return
            self.control_failures += 1
            if reply.sent:  # tmux may have run it: sending again could answer twice
                raise SurfaceError(f"send-keys to {pane_id}: tmux did not confirm the keys ({reply.failure})",
                                   "look at the pane: they may or may not have arrived", subcommand="send-keys")
            log.info("send-keys to %s over control mode failed (%s); using a tmux process", pane_id, reply.failure)
        self.cmd("send-keys", "-t", pane_id, *keys)

    def unread_input(self, pane_id: str) -> int | None:
        """Bytes typed into the pane that its program has not read yet: the input queue of the pane's
        terminal (``FIONREAD`` on ``pane_tty``), None when it cannot be read. Keys the program does
        not read stay there and answer whatever it draws next (typeahead): the runner sends an answer
        only while this is empty and checks the program read it."""
        fd = self._open_tty(pane_id)
        if fd is None:
            return None
        try:
            return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            return None
        finally:
            os.close(fd)

    def discard_input(self, pane_id: str) -> int | None:
        """Throw away what the pane's program has not read from its terminal (``tcflush`` of the input
        queue); the bytes discarded, None when the terminal cannot be opened."""
        fd = self._open_tty(pane_id)
        if fd is None:
            return None
        try:
            left = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
            termios.tcflush(fd, termios.TCIFLUSH)
            return left
        except (OSError, termios.error):
            return None
        finally:
            os.close(fd)

    def reading_input(self, pane_id: str) -> bool | None:
        """Whether the pane's foreground program is waiting for input now (one of its threads blocked
        in ``select``/``poll``/``epoll``/a terminal read, as ``/proc/*/wchan`` says), so keys sent now
        are read now. False: it is computing, sleeping or waiting for a child, and keys would wait in
        its terminal for whatever it draws next. None: not knowable here (no ``/proc``)."""
        pid = self._pane_pid(pane_id)
        if pid is None:
            return None
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            tpgid = int(stat[stat.rindex(")") + 2:].split()[5])  # the terminal's foreground process group
        except (OSError, ValueError, IndexError):
            return None
        seen = False
        for proc in _family(pid):
            try:
                if os.getpgid(proc) != tpgid:
                    continue
                for task in Path(f"/proc/{proc}/task").iterdir():
                    chan = (task / "wchan").read_text().strip()
                    seen = seen or chan not in ("", "0")
                    if chan.startswith(_READING_WCHANS):
                        return True
            except OSError:
                continue
        return False if seen else None

    def _pane_pid(self, pane_id: str) -> int | None:
        pid = self._pids.get(pane_id)
        if pid is None or not Path(f"/proc/{pid}").exists():
            try:
                pid = _int((self.cmd("display-message", "-p", "-t", pane_id, "#{pane_pid}") or [""])[0].strip())
            except SurfaceError:
                return None
            if pid is None:
                return None
            self._pids[pane_id] = pid
        return pid

    def _open_tty(self, pane_id: str) -> int | None:
        """The pane's terminal opened for reading its queue: never as our controlling terminal, never blocking."""
        tty = self._ttys.get(pane_id)
        if tty is None:
            try:
                tty = (self.cmd("display-message", "-p", "-t", pane_id, "#{pane_tty}") or [""])[0].strip()
            except SurfaceError:
                return None
            if not tty.startswith("/dev/"):
                return None
            self._ttys[pane_id] = tty
        try:
            return os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            self._ttys.pop(pane_id, None)  # the pane is gone, or its terminal was reused
            return None

    def paste_text(self, pane_id: str, text: str) -> None:
        if text:
            self.cmd("send-keys", "-t", pane_id, "-l", text)

    def paste_buffer(self, pane_id: str, text: str, *, submit: bool = False) -> None:
        """Paste multi-line text as one paste (load-buffer from a temp file, then paste-buffer;
        bracketed if the program asked for it). Used for workflow handoff instructions. ``submit``
        chains the Enter that submits it into the same tmux command: a supervisor killed between the
        two can never leave a pasted instruction sitting unsubmitted (the screen would show its
        marker, so the next supervisor would take it as delivered)."""
        import os
        import tempfile

        if not text:
            return
        name = f"sv-{os.getpid()}-{threading.get_ident()}"
        fd, path = tempfile.mkstemp(prefix="sv-paste-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            self.cmd("load-buffer", "-b", name, path)
            enter = [";", "send-keys", "-t", pane_id, "Enter"] if submit else []
            self.cmd("paste-buffer", "-d", "-p", "-b", name, "-t", pane_id, *enter)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def display_message(self, pane_id: str, text: str, *, ms: int = 10_000) -> None:
        """Show ``text`` on every client looking at the pane's session (and in ``show-messages``).
        With no client attached tmux has nowhere to show it; that is not an error."""
        self.cmd("display-message", "-d", str(ms), "-t", pane_id, text)

    # -- events ----------------------------------------------------------------------------------------
    def watch(self, pane_ids: list[str], callback: OutputCallback) -> None:
        """Deliver output events for ``pane_ids``: one control client per session, or the poller."""
        if self.poll_s:
            with self._lock:
                if self._poller is None:
                    self._poller = _Poller(self, self.poll_s, callback)
                    self._poller.start()
                self._poller.add(pane_ids)
            for p in pane_ids:
                self._pipe_output(p)
            return
        for p in pane_ids:
            self._pane_sessions[p] = self.pane_info(p).session
        self._control_clients({self._pane_sessions[p] for p in pane_ids}, callback)

    def watch_all(self, callback: OutputCallback) -> list[str]:
        """A control client on every session of the server (``supervisor watch``: a new pane or
        window anywhere is noticed without polling). Returns the session names."""
        try:
            sessions = [s for s in self.cmd("list-sessions", "-F", "#{session_name}") if s]
        except PaneGone:
            return []
        if self.poll_s:
            return sessions
        self._control_clients(sessions, callback)
        return sessions

    def _control_clients(self, sessions: Iterable[str], callback: OutputCallback) -> None:
        """A live control client on each of ``sessions``: one is started with ``callback`` where
        there is none or the last one ended; a live one is kept as it is."""
        from supervisor.surfaces.control import ControlClient

        with self._lock:
            for session in sessions:
                client = self._controls.get(session)
                if client is None or not client.alive:  # type: ignore[attr-defined]
                    client = ControlClient(self.socket, session, callback, on_output=self._shadow_output)
                    with _IDENTIFYING:  # no session made by this process while tmux identifies it
                        client.start()
                        client.wait_ready(CONTROL_READY_S)
                    self._controls[session] = client

    # -- --poll: the pane's output bytes all the same -------------------------------------------------------
    def _pipe_output(self, pane_id: str) -> None:
        """Without control mode the shadow terminal still needs the pane's output bytes (to see text drawn
        over other text): ``pipe-pane`` copies them into a FIFO this process reads. A pane whose output is
        already piped somewhere (tmux allows one pipe per pane) is not taken over: for it, overwritten
        text cannot be seen (:meth:`overwrite_blindness` says so)."""
        if pane_id in self._pipes or pane_id in self._blind:
            return
        import shlex
        import tempfile

        try:
            piped = (self.cmd("display-message", "-p", "-t", pane_id, "#{pane_pipe}") or ["0"])[0].strip()
        except SurfaceError as exc:
            self._blind[pane_id] = f"its output could not be read ({exc.one_line()})"
            return
        if piped == "1":
            self._blind[pane_id] = "its output is already piped elsewhere (pipe-pane), so --poll cannot read it"
            return
        folder = Path(tempfile.mkdtemp(prefix="sv-pipe-"))
        fifo = folder / "out"
        os.mkfifo(fifo, 0o600)
        thread = threading.Thread(target=self._read_pipe, args=(pane_id, fifo), name=f"pipe-{pane_id}", daemon=True)
        thread.start()
        try:
            self.cmd("pipe-pane", "-O", "-t", pane_id, f"exec cat > {shlex.quote(str(fifo))}")
        except SurfaceError as exc:
            self._blind[pane_id] = f"pipe-pane failed ({exc.one_line()})"
            with contextlib.suppress(OSError):  # let the reader's open return, then clean up
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return
        self._pipes[pane_id] = folder

    def _read_pipe(self, pane_id: str, fifo: Path) -> None:
        from supervisor.feeder import block_signals

        block_signals()
        try:
            with open(fifo, "rb", buffering=0) as fh:
                while chunk := fh.read(1 << 16):
                    self._shadow_output(pane_id, chunk, time.monotonic())
        except OSError as exc:
            log.info("output pipe of %s ended: %s", pane_id, exc)
        finally:
            with contextlib.suppress(OSError):
                fifo.unlink()
                fifo.parent.rmdir()

    def overwrite_blindness(self, pane_id: str) -> str | None:
        """Why text drawn over other text cannot be seen on this pane (None: it can): in ``--poll`` mode,
        when its output could not be piped to this process."""
        return self._blind.get(pane_id)

    def close(self) -> None:
        with self._lock:
            clients = list(self._controls.values())
            self._controls.clear()
            poller, self._poller = self._poller, None
            pipes, self._pipes = dict(self._pipes), {}
        for c in clients:
            c.close()  # type: ignore[attr-defined]
        if poller is not None:
            poller.stop()
        for pane_id in pipes:
            with contextlib.suppress(SurfaceError):
                self.cmd("pipe-pane", "-t", pane_id)  # no command: the pipe is closed (its cat ends)


class _Poller:
    """The ``--poll`` fallback: every ``interval`` seconds, emit a ``tick`` per pane (the runner
    captures and compares hashes). Costs CPU while quiet, unlike control mode."""

    def __init__(self, surface: TmuxSurface, interval: float, callback: OutputCallback) -> None:
        self.surface = surface
        self.interval = interval
        self.callback = callback
        self.panes: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tmux-poller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, pane_ids: list[str]) -> None:
        self.panes.update(pane_ids)

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        import signal

        with contextlib.suppress(AttributeError, ValueError, OSError):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        while not self._stop.wait(self.interval):
            now = time.time()
            for pane_id in list(self.panes):
                self.callback(OutputEvent("tick", pane_id, now))
