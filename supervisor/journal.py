"""The journal: one append-only JSONL file per run, the source of truth.

Every event is redacted, written as one line, flushed and fsynced before
:meth:`Journal.append` returns, so the supervisor acts only on what is already on disk:
a supervisor killed at any instant loses nothing and can resume from the file.

A torn last line (a crash mid-write) is detected when reading, reported, and skipped;
the next append starts on a fresh line so the file stays readable.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from supervisor.errors import InputError, JournalWriteError
from supervisor.ids import new_id
from supervisor.models import SCHEMA_VERSION, Event, EventKind
from supervisor.redact import redact_data

log = logging.getLogger(__name__)

MAX_AT = 253_402_300_800.0
"""Event times are Unix seconds in ``[0, MAX_AT)`` (up to the year 10000): a line whose ``at``
is out of that range, not finite, or not a number is not an event (the warehouse agrees)."""


EVENT_KINDS: tuple[str, ...] = get_args(EventKind)
ENVELOPE_KEYS = frozenset(Event.model_fields)
NESTED_OBJECTS: dict[str, tuple[tuple[str, bool], ...]] = {
    "observation": (("observation", False), ("screen", False)),
    "decision": (("decision", False),),
    "shadow_decision": (("decision", False),),
    "action": (("action", False),),
    "checkpoint": (("checkpoint", True),),
}
"""Per event kind, the payload keys that hold a model dumped as an object whenever they are
present (readers descend into them), and whether ``null`` is allowed (a malformed checkpoint)."""


def envelope_problem(obj: object) -> str | None:
    """Why a parsed journal line is not an event envelope (``None`` when it is one). The
    warehouse's ingest applies the same rules in SQL, so a line is an event for both or neither."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    for key in ("event_id", "run_id", "kind"):
        if not isinstance(obj.get(key), str):
            return f"{key} is not a string"
    if obj["kind"] not in EVENT_KINDS:
        return "unknown kind"
    if not obj.keys() <= ENVELOPE_KEYS:
        return "unknown envelope key"
    version = obj.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version < 2**31:
        return "schema_version is not an integer"
    seq = obj.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < 2**31:
        return "seq is not an integer"
    at = obj.get("at")
    if not isinstance(at, int | float) or isinstance(at, bool):
        return "at is not a number"
    if not (math.isfinite(at) and 0 <= at < MAX_AT):
        return "at is out of range"
    payload = obj.get("payload", {})
    if not isinstance(payload, dict):
        return "payload is not an object"
    for key, nullable in NESTED_OBJECTS.get(obj["kind"], ()):
        if key in payload and not isinstance(payload[key], dict) and not (nullable and payload[key] is None):
            return f"payload.{key} is not an object"
    return None


def _lone_surrogate(obj: object) -> bool:
    """A ``\\ud800``-style escape that is not half of a pair: JSON text that is not UTF-8 (the
    warehouse refuses it, so readers of the journal skip it too)."""
    try:
        json.dumps(obj, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


@dataclass
class ReadReport:
    """What reading a journal found besides events."""

    path: Path
    events: int = 0
    torn_tail: bool = False
    """The last line was incomplete (crash mid-write); it was skipped."""
    bad_lines: list[int] = field(default_factory=list)
    """1-based numbers of lines in the middle that did not parse (skipped, reported)."""
    end_offset: int = 0
    """Byte offset just after the last complete line read."""


VERBATIM: dict[str, tuple[str, ...]] = {"run_started": ("policies",)}
"""Payload fields journaled as they are, not redacted: a run's policies (``{policy_id: content}``)
are configuration whose ids hash their exact content (a danger regex mentioning ``password:`` is
not a secret), and replay needs them byte for byte."""


def _encode(event: Event) -> bytes:
    # "replace": a lone surrogate (text decoded with surrogateescape somewhere) becomes "?" instead
    # of an exception that would lose the event.
    return (json.dumps(event.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
            + "\n").encode("utf-8", "replace")


class Journal:
    """Appends events for one run. Thread-safe; one writer per file."""

    def __init__(self, path: Path, run_id: str, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self._fsync = fsync
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._seq = 0
        self._unsynced = False
        """Lines were written since the last fsync (``append(sync=False)``)."""
        self.last_report: ReadReport | None = None
        if self.path.exists():
            report = ReadReport(self.path)
            for ev in iter_events(self.path, report):
                self._seq = max(self._seq, ev.seq)
            self.last_report = report
            if report.torn_tail:
                # Cut the torn fragment so the file stays line-aligned; it never held a
                # complete (and therefore acted-upon) event.
                with open(self.path, "r+b") as fh:
                    fh.truncate(report.end_offset)
        self._fh = open(self.path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the journal

    @property
    def seq(self) -> int:
        return self._seq

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def append(self, kind: EventKind, payload: BaseModel | dict[str, Any] | None = None, *, at: float | None = None,
               event_id: str | None = None, sync: bool = True) -> Event:
        """Write one event durably and return it. Secrets in the payload are redacted first. Raises
        :class:`~supervisor.errors.JournalWriteError` when the line cannot be written whole (nothing
        of it is left in the file). With ``sync`` false the line is written but not yet fsynced: the
        next synced append (or :meth:`sync`) makes it durable with everything before it, so a caller
        that writes several events before it acts pays for one fsync, taken before it acts."""
        if isinstance(payload, BaseModel):
            data = payload.model_dump(mode="json")
        else:
            data = dict(payload or {})
        keep = {k: data.pop(k) for k in VERBATIM.get(kind, ()) if k in data}
        data = redact_data(data) | keep
        with self._lock:
            self._seq += 1
            event = Event(
                event_id=event_id or new_id(),
                run_id=self.run_id,
                seq=self._seq,
                kind=kind,
                at=time.time() if at is None else at,
                payload=data,
                schema_version=SCHEMA_VERSION,
            )
            try:
                self._write_whole(_encode(event), sync=sync)
            except OSError as exc:
                self._seq -= 1
                raise JournalWriteError(str(self.path), exc) from exc
        return event

    def sync(self) -> None:
        """Make every line written so far durable (fsync), if any is not yet."""
        with self._lock:
            if not self._unsynced or self._fh.closed:
                return
            try:
                os.fsync(self._fh.fileno())
            except OSError as exc:
                raise JournalWriteError(str(self.path), exc) from exc
            self._unsynced = False

    def _write_whole(self, line: bytes, *, sync: bool = True) -> None:
        """Write one line whole or not at all: a short write is continued, and a failure (ENOSPC,
        EDQUOT, EIO, EROFS) cuts the file back to where the line began, so no reader ever sees part
        of it (and the next line starts on a fresh one)."""
        fd = self._fh.fileno()
        start = os.lseek(fd, 0, os.SEEK_END)
        view = memoryview(line)
        try:
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[n:]
            if self._fsync and sync:
                os.fsync(fd)
                self._unsynced = False
            elif self._fsync:
                self._unsynced = True
        except OSError:
            try:
                os.ftruncate(fd, start)
            except OSError as cut:  # the next open cuts a torn tail; say so now
                log.warning("could not cut a partly written line from %s (%s); readers skip it", self.path, cut)
            raise

    def events(self) -> list[Event]:
        return list(iter_events(self.path))

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                if self._unsynced:
                    with contextlib.suppress(OSError):
                        os.fsync(self._fh.fileno())
                    self._unsynced = False
                self._fh.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_events(path: Path, report: ReadReport | None = None, *, start: int = 0) -> Iterator[Event]:
    """Events of a journal file from byte offset ``start``. A torn last line is reported in
    ``report`` and skipped; a bad line in the middle is reported and skipped too."""
    rep = report if report is not None else ReadReport(Path(path))
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError as exc:
        raise InputError(f"journal {path} not found", "check the run id with `supervisor runs`") from exc
    with fh:
        fh.seek(start)
        offset = start
        lineno = 0
        for raw in fh:
            lineno += 1
            complete = raw.endswith(b"\n")
            if not complete:
                rep.torn_tail = True
                break
            try:
                obj = json.loads(raw.decode("utf-8", "replace"))  # as the warehouse reads it
                problem = envelope_problem(obj)
                if problem is None and b"\\u" in raw and _lone_surrogate(obj):
                    problem = "lone surrogate escape (not UTF-8 text)"
                if problem is not None:
                    raise ValueError(problem)
                ev = Event.model_validate(obj)
            except (ValueError, ValidationError, RecursionError):
                rep.bad_lines.append(lineno)
                offset += len(raw)
                rep.end_offset = offset
                continue
            offset += len(raw)
            rep.end_offset = offset
            rep.events += 1
            yield ev
        rep.end_offset = offset


def open_run_journal(journals_dir: Path, run_id: str | None = None) -> Journal:
    """Open (or create) the journal of ``run_id`` in ``journals_dir``; a new run id if none."""
    rid = run_id or new_id("run_")
    return Journal(Path(journals_dir) / f"{rid}.jsonl", rid)
