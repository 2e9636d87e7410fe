"""A pane whose journal cannot be written is suspended, visibly, and comes back by itself.

The journal is written before the supervisor acts (an answer it could not record could be sent
twice after a restart, or never be known). So when a write fails (a full disk, a quota, an I/O
error, a read-only filesystem), the supervisor stops acting on that pane, not on the others, and
says so where the human looks: ``tmux display-message`` on the pane, ``supervisor status``, and
its own output. It retries with backoff and resumes by itself at the first write that succeeds,
journaling then how long the pane went unsupervised and why.

``supervisor status`` learns of a suspension from a small file in the run's control folder,
written when the run starts (while there is room) and later only overwritten in place: updating
it needs no new disk space, so it still works on the disk that just filled up.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SLOT_BYTES = 1024
"""Size of the status file: a suspension's JSON padded with blanks (blank: not suspended)."""
SLOT_NAME = "suspended"

BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Waits between attempts to write the journal again (the last one repeats)."""
NOTICE_EVERY_S = 10.0
"""How often the notice on the pane is shown again while the pane stays suspended."""


def read_suspension(control: Path) -> dict[str, Any] | None:
    """The suspension recorded for a run (``since``, ``why``, ``path``), or None."""
    try:
        text = (control / SLOT_NAME).read_bytes().decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


class Suspension:
    """One run's suspension state and its status file."""

    def __init__(self, control: Path) -> None:
        self.path = control / SLOT_NAME
        self.why: str | None = None
        self.since: float | None = None
        self.retry_at = 0.0
        self.attempts = 0
        self.noticed_at = 0.0
        self._fd: int | None = None
        try:
            control.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            os.pwrite(fd, b" " * SLOT_BYTES, 0)
            os.fsync(fd)  # the blocks are allocated now: overwriting them later needs no free space
            self._fd = fd
        except OSError as exc:
            log.warning("cannot prepare %s (%s): `supervisor status` will not show a suspension of this run",
                        self.path, exc)

    @property
    def active(self) -> bool:
        return self.why is not None

    def begin(self, why: str, path: str, now: float) -> bool:
        """Mark the run suspended (True the first time: the caller tells the human)."""
        first = self.why is None
        if first:
            self.why, self.since, self.attempts = why, now, 0
            self._write({"since": now, "why": why, "path": path, "pid": os.getpid()})
        self.retry_at = now + BACKOFF_S[min(self.attempts, len(BACKOFF_S) - 1)]
        self.attempts += 1
        return first

    def notice_due(self, now: float) -> bool:
        if now - self.noticed_at >= NOTICE_EVERY_S:
            self.noticed_at = now
            return True
        return False

    def end(self) -> float:
        """Clear the suspension; returns how long it lasted."""
        lasted = time.time() - (self.since or time.time())
        self.why, self.since, self.attempts, self.noticed_at = None, None, 0, 0.0
        self._write(None)
        return lasted

    def _write(self, data: dict[str, Any] | None) -> None:
        if self._fd is None:
            return
        blob = json.dumps(data, ensure_ascii=True).encode() if data is not None else b""
        blob = blob[:SLOT_BYTES].ljust(SLOT_BYTES, b" ")
        with contextlib.suppress(OSError):
            os.pwrite(self._fd, blob, 0)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.pwrite(self._fd, b" " * SLOT_BYTES, 0)
                os.close(self._fd)
            self._fd = None
