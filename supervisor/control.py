"""Reaching a live run from another process: ``supervisor runs task|stop|resume|review RUN_ID``.

Every live run holds ``$SUPERVISOR_HOME/control/RUN_ID/.lock`` (an ``flock``) for as long as a
supervisor supervises it; that lock is what "the run has a live supervisor" means (``status``,
``runs resume`` and ``attach`` read it; a killed supervisor's lock goes with its process).

A request is a small JSON file written atomically into that folder, after which the writer
pokes the run's ``wake`` FIFO so the supervisor reads it at once (no polling: a quiet run costs
nothing). The supervisor journals each request it picks up, by its ``request_id``, before acting
on it, then removes the file: a request survives a supervisor crash and is handled exactly once.
Without a live supervisor, callers write the request's event straight into the journal (or
refuse, for requests only a live supervisor can carry out, like handing the agent a task).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from supervisor.ids import new_id

log = logging.getLogger(__name__)

REQUEST_KINDS = ("task", "stop", "resume", "review")


def control_dir(settings: Any, run_id: str) -> Path:
    return Path(settings.home) / "control" / run_id


@contextlib.contextmanager
def try_lock(path: Path) -> Iterator[bool]:
    """Hold ``path``'s lock for the block if it is free (yields True), else yield False at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_live(settings: Any, run_id: str) -> bool:
    """Whether a supervisor holds the run (its control lock is taken)."""
    with try_lock(control_dir(settings, run_id) / ".lock") as free:
        return not free


class RunControl:
    """The live side: holds the run's lock and its wake FIFO, and reads requests."""

    def __init__(self, settings: Any, run_id: str) -> None:
        self.dir = control_dir(settings, run_id)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.held = True
        except OSError:
            self.held = False
            """Another supervisor holds this run (its requests go to whichever reads them first)."""
        self.wake_fd: int | None = None
        fifo = self.dir / "wake"
        try:
            if not (fifo.exists() and stat.S_ISFIFO(fifo.stat().st_mode)):
                with contextlib.suppress(FileNotFoundError):
                    fifo.unlink()
                os.mkfifo(fifo, 0o600)
            # read-write: opening never blocks, and the FIFO never reports end-of-file
            self.wake_fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        except OSError as exc:
            log.warning("no wake channel for run %s (%s): requests are read on the next look", run_id, exc)

    def drain_wake(self) -> None:
        if self.wake_fd is None:
            return
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self.wake_fd, 512):
                pass

    def requests(self) -> list[dict[str, Any]]:
        """Pending requests, oldest first (a malformed file is reported as ``{"type": "bad"}``).
        The caller journals each, then calls :meth:`done`."""
        out = []
        for f in sorted(self.dir.glob("*.json")):
            try:
                req = json.loads(f.read_text(encoding="utf-8"))
                if not isinstance(req, dict) or not req.get("request_id"):
                    raise ValueError("not a request")
            except (OSError, ValueError) as exc:
                req = {"type": "bad", "request_id": f.stem, "error": str(exc)[:200]}
            req["_file"] = str(f)
            out.append(req)
        return out

    def done(self, request: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            Path(request["_file"]).unlink()

    def close(self) -> None:
        if self.wake_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.wake_fd)
            self.wake_fd = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = None


def write_request(settings: Any, run_id: str, kind: str, **data: Any) -> str:
    """Leave a request for the run's supervisor and wake it; returns the request id."""
    d = control_dir(settings, run_id)
    d.mkdir(parents=True, exist_ok=True)
    rid = new_id("req_")
    tmp = d / f".{rid}.tmp"
    tmp.write_text(json.dumps({"request_id": rid, "type": kind, "at": time.time(), **data}), encoding="utf-8")
    os.replace(tmp, d / f"{rid}.json")
    poke(settings, run_id)
    return rid


def poke(settings: Any, run_id: str) -> bool:
    """Wake the run's supervisor (False when nobody listens)."""
    fifo = control_dir(settings, run_id) / "wake"
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno not in (errno.ENXIO, errno.ENOENT):
            log.warning("cannot wake run %s: %s", run_id, exc)
        return False
    try:
        os.write(fd, b"!")
    except OSError as exc:  # a full pipe already holds a wake-up
        log.debug("wake of run %s not written: %s", run_id, exc)
    finally:
        os.close(fd)
    return True
