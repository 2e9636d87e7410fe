"""The tmux surface: sessions, panes, keys, captures and messages through libtmux.

Every tmux command goes through :meth:`TmuxSurface.cmd`, the one place that turns tmux's
stderr into an exception naming the subcommand: :class:`~supervisor.errors.PaneGone` for a
missing pane or a dead server, :class:`~supervisor.errors.SurfaceError` for anything else.
Output events come from a control-mode client (:mod:`supervisor.surfaces.control`), one per
session, or from a capture-pane poller when ``poll_s`` is set.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import libtmux
from libtmux import exc as tmux_exc

from supervisor.errors import PaneGone, SurfaceError
from supervisor.surfaces.base import OutputCallback, OutputEvent, PaneInfo, RawScreen

SEP = "\x1f"
PANE_FIELDS = (
    "pane_id", "session_name", "window_id", "pane_title", "pane_current_command", "pane_dead",
    "pane_dead_status", "pane_width", "pane_height", "cursor_x", "cursor_y", "pane_pid", "pane_in_mode",
    "pane_current_path", "history_size",
)
_CUT = "\x1e--supervisor-cut--"
PANE_FORMAT = SEP.join(f"#{{{f}}}" for f in PANE_FIELDS)

_GONE_MARKERS = ("can't find pane", "can't find window", "can't find session", "no server running",
                 "error connecting to", "server exited", "lost server", "no such file or directory")


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
        history_size=_int(f["history_size"]) or 0,
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

    # -- the one place tmux errors become exceptions -------------------------------------------
    def cmd(self, subcommand: str, *args: str) -> list[str]:
        """Run one tmux subcommand (``\\;``-chained ones too) and return its stdout lines."""
        try:
            result = self.server.cmd(subcommand, *args)
        except tmux_exc.TmuxCommandNotFound as exc:
            raise SurfaceError("tmux is not installed", "install tmux", subcommand=subcommand) from exc
        stderr = [line for line in result.stderr if line.strip()]
        if stderr or (getattr(result, "returncode", 0) or 0) != 0:
            message = "; ".join(stderr) or f"exit status {result.returncode}"
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
        return list(result.stdout)

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
        out = self.cmd("new-session", *args)
        pane_id = next((line.strip() for line in out if line.strip().startswith("%")), "")
        if not pane_id:
            raise SurfaceError(f"tmux new-session {name} printed no pane id", "check the tmux version (>= 3.2)",
                               subcommand="new-session")
        return self.pane_info(pane_id)

    def _status_label(self) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in (self.socket or "default"))

    def _with_status(self, info: PaneInfo) -> PaneInfo:
        """Fill in a dead pane's exit status from our wrapper's file when tmux does not know it."""
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
        return [p for line in lines if (p := parse_pane_line(line)) is not None]

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
        is the text without escapes)."""
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
        if keys:
            self.cmd("send-keys", "-t", pane_id, *keys)

    def paste_text(self, pane_id: str, text: str) -> None:
        if text:
            self.cmd("send-keys", "-t", pane_id, "-l", text)

    def paste_buffer(self, pane_id: str, text: str) -> None:
        """Paste multi-line text as one paste (load-buffer from a temp file, then paste-buffer;
        bracketed if the program asked for it). Used for workflow handoff instructions."""
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
            self.cmd("paste-buffer", "-d", "-p", "-b", name, "-t", pane_id)
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
            return
        self._control_clients({self.pane_info(p).session for p in pane_ids}, callback)

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
                    client = ControlClient(self.socket, session, callback)
                    client.start()
                    self._controls[session] = client

    def close(self) -> None:
        with self._lock:
            clients = list(self._controls.values())
            self._controls.clear()
            poller, self._poller = self._poller, None
        for c in clients:
            c.close()  # type: ignore[attr-defined]
        if poller is not None:
            poller.stop()


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
