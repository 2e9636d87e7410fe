"""The warehouse feeder: journals ingested into the warehouse a couple of seconds after new events,
never in the way of supervision.

Ingesting is CPU work in Python and DuckDB (each run's first line carries its whole policy, over a
megabyte for the baseline): done by a thread of the supervising process, it held the interpreter lock
for seconds while hundreds of panes asked at once, and their answers waited behind it (200 panes, 20
prompts at once: p99 1.6 s, 0.44 s with no feeding at all). So the feeder runs in a child process of its
own, started at the first event to feed, told over its standard input when there is more ("poke"), and
telling over its standard output what each sync did. Where the child cannot start, a thread does the
same work (the old way). The journals hold every event whatever happens to the feeder: a sync that
fails, a warehouse locked by a notebook, a child that dies are all caught up by the next sync or the
next ``supervisor warehouse sync``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from supervisor.settings import Settings

log = logging.getLogger(__name__)


def block_signals() -> None:
    """Keep SIGINT/SIGTERM away from a helper thread so the kernel delivers them to the main one."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def _sync_result(try_sync: Callable[[Settings], Any], settings: Settings) -> dict[str, Any]:
    """One sync, as the child reports it: ``synced`` (with the lines skipped per journal), ``locked``,
    or ``error``."""
    try:
        result = try_sync(settings)
    except Exception as exc:  # noqa: BLE001 - the journal has everything; report and go on
        return {"kind": "error", "error": f"{type(exc).__name__}: {exc}"}
    if result is None:
        return {"kind": "locked"}
    return {"kind": "synced", "bad_lines": dict(result.bad_lines), "reasons": dict(result.reasons)}


class WarehouseFeeder:
    """Ingests journals into the warehouse a couple of seconds after new events (see the module
    docstring): in a child process (``in_child``), else from a background thread; a locked warehouse
    is simply tried again later."""

    STOP_WAIT_S = 120.0
    """How long stopping waits for a sync in progress. A shared warehouse (DuckLake) under
    contention can take many seconds (commit conflicts are retried for up to 90 s)."""

    def __init__(self, settings: Settings, interval_s: float = 2.0, *, in_child: bool = True) -> None:
        self.settings = settings
        self.interval_s = interval_s
        self.in_child = in_child
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._started = False
        self._thread: threading.Thread | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._child_in: IO[bytes] | None = None
        self._send_lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self.syncs = 0
        self.locked = 0
        self.errors: list[str] = []
        self.skipped_lines: dict[str, int] = {}
        """Journal -> lines the warehouse skipped as not valid events (reported, never fatal)."""
        try:
            from supervisor.warehouse import try_sync
        except ImportError:  # the warehouse is optional for live supervision
            self._try_sync: Callable[[Settings], Any] | None = None
        else:
            self._try_sync = try_sync

    # -- the supervising process's side -------------------------------------------------------------
    def start(self) -> None:
        """Start feeding (once: a supervisor may run its loop more than once). The poker thread starts
        now; the child process (or the feeding thread) with the first event to feed."""
        if self._try_sync is None or self._started:
            return
        self._started = True
        self._thread = threading.Thread(target=self._loop, name="warehouse-feeder", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """New events are in a journal (from any thread; never blocks)."""
        self._dirty.set()

    def _loop(self) -> None:
        block_signals()
        while not self._stop.is_set():
            self._dirty.wait()
            if self._stop.is_set():
                break
            if self.in_child and self._child is None and not self._spawn():
                self.in_child = False  # the thread does the feeding from here on
            if self._child is not None:
                self._dirty.clear()
                if not self._send("poke"):
                    self._child = None  # it died: a new one at the next poke (the journals hold everything)
                    self._dirty.set()
                    if self._stop.wait(self.interval_s):
                        break
                    continue
                # pokes are coalesced: the child waits out the interval itself, one poke is enough for it
                if self._stop.wait(min(0.5, self.interval_s)):
                    break
                continue
            if self._stop.wait(self.interval_s):
                break
            self._dirty.clear()
            self.sync_once()

    def _spawn(self) -> bool:
        """Start the child; False when it cannot be started (then a thread feeds)."""
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            child = subprocess.Popen(
                [sys.executable, "-c", "from supervisor.feeder import child_main; child_main()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                start_new_session=True)  # Ctrl-C in the terminal is the supervisor's to handle, not the child's
        except OSError as exc:
            log.info("the warehouse feeder cannot run as a process of its own (%s); feeding from a thread", exc)
            return False
        assert child.stdin is not None and child.stdout is not None
        self._child, self._child_in = child, child.stdin
        hello = base64.b64encode(pickle.dumps((self.settings, self.interval_s))).decode("ascii")
        if not self._send(hello):
            with contextlib.suppress(OSError):
                child.kill()
            self._child = None
            return False
        self._reader = threading.Thread(target=self._read_results, args=(child.stdout,), name="warehouse-feeder-results",
                                        daemon=True)
        self._reader.start()
        return True

    def _send(self, line: str) -> bool:
        with self._send_lock:
            stream = self._child_in
            if stream is None:
                return False
            try:
                stream.write(line.encode("ascii") + b"\n")
                stream.flush()
                return True
            except (OSError, ValueError):
                return False

    def _read_results(self, stream: IO[bytes]) -> None:
        block_signals()
        for raw in stream:
            try:
                result = json.loads(raw)
            except ValueError:
                continue
            self._take(result)

    def _take(self, result: dict[str, Any]) -> None:
        kind = result.get("kind")
        if kind == "error":
            self.errors.append(str(result.get("error")))
            log.warning("warehouse sync failed (journals keep every event): %s", result.get("error"))
        elif kind == "locked":
            self.locked += 1
        elif kind == "synced":
            self.syncs += 1
            reasons = result.get("reasons") or {}
            for path, n in (result.get("bad_lines") or {}).items():
                self.skipped_lines[path] = self.skipped_lines.get(path, 0) + int(n)
                log.warning("warehouse skipped %d line(s) of %s that are not valid events (%s); "
                            "`supervisor warehouse stats` lists them", n, path, reasons.get(path, "?"))

    def sync_once(self) -> None:
        """One sync, here and now (in this process)."""
        if self._try_sync is None:
            return
        result = _sync_result(self._try_sync, self.settings)
        if result["kind"] == "locked":
            self._dirty.set()
        self._take(result)

    def stop(self, *, final_sync: bool = True) -> None:
        """Stop feeding; with ``final_sync``, ingest what the journals hold now first (in the child when
        one runs: it finishes what it was doing, syncs once more and exits)."""
        self._stop.set()
        self._dirty.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=10)
        child = self._child
        if child is not None:
            self._send("stop final" if final_sync else "stop")
            with self._send_lock:
                if self._child_in is not None:
                    with contextlib.suppress(OSError):
                        self._child_in.close()
                    self._child_in = None
            try:
                child.wait(timeout=self.STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                log.warning("the warehouse sync in progress did not finish; its events stay in the journals for the "
                            "next `supervisor warehouse sync`")
                with contextlib.suppress(OSError):
                    child.kill()
                child.wait(timeout=10)
            if self._reader is not None:
                self._reader.join(timeout=10)
            self._child = None
            return
        if self._thread is not None and self._thread.is_alive():
            log.info("waiting for the warehouse sync in progress to finish (up to %.0f s)", self.STOP_WAIT_S)
            self._thread.join(timeout=self.STOP_WAIT_S - 10)
        if self._thread is not None and self._thread.is_alive():
            log.warning("the warehouse sync in progress did not finish; its events stay in the journals for the "
                        "next `supervisor warehouse sync`")
        elif final_sync:
            self.sync_once()


# -- the child's side ------------------------------------------------------------------------------
def child_main() -> None:
    """The feeder's child process: settings on the first line of standard input, then ``poke`` (more
    events: sync after the interval), ``stop`` or ``stop final`` (sync once more, then exit); a sync's
    result as one JSON line on standard output. The end of standard input (the supervisor is gone) ends
    it too, after a last sync."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_IGN)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    first = stdin.readline()
    if not first:
        return
    settings, interval_s = pickle.loads(base64.b64decode(first))  # noqa: S301 - our own parent's message
    from supervisor.warehouse import try_sync

    lines: list[bytes] = []
    ready = threading.Condition()

    def read() -> None:
        for raw in stdin:
            with ready:
                lines.append(raw.strip())
                ready.notify()
        with ready:
            lines.append(b"stop final")  # the supervisor went away
            ready.notify()

    threading.Thread(target=read, daemon=True).start()

    def report(result: dict[str, Any]) -> None:
        with contextlib.suppress(OSError, ValueError):
            stdout.write(json.dumps(result).encode() + b"\n")
            stdout.flush()

    due: float | None = None
    while True:
        with ready:
            wait = None if due is None else max(0.0, due - time.monotonic())
            if not lines:
                ready.wait(wait)
            got = list(lines)
            lines.clear()
        stop = next((g for g in got if g.startswith(b"stop")), None)
        if stop is not None:
            if stop == b"stop final":
                report(_sync_result(try_sync, settings))
            return
        if got and due is None:
            due = time.monotonic() + interval_s
        if due is not None and time.monotonic() >= due:
            result = _sync_result(try_sync, settings)
            due = time.monotonic() + interval_s if result["kind"] == "locked" else None
            report(result)
