"""The journal: one append-only JSONL file per run, the source of truth.

Every event is redacted, written as one line, flushed and fsynced before
:meth:`Journal.append` returns, so the supervisor acts only on what is already on disk:
a supervisor killed at any instant loses nothing and can resume from the file.

A torn last line (a crash mid-write) is detected when reading, reported, and skipped;
the next append starts on a fresh line so the file stays readable.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from supervisor.errors import InputError
from supervisor.ids import new_id
from supervisor.models import SCHEMA_VERSION, Event, EventKind
from supervisor.redact import redact_data


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


def _encode(event: Event) -> bytes:
    return (json.dumps(event.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class Journal:
    """Appends events for one run. Thread-safe; one writer per file."""

    def __init__(self, path: Path, run_id: str, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self._fsync = fsync
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._seq = 0
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

    def append(self, kind: EventKind, payload: BaseModel | dict[str, Any] | None = None, *, at: float | None = None,
               event_id: str | None = None) -> Event:
        """Write one event durably and return it. Secrets in the payload are redacted first."""
        if isinstance(payload, BaseModel):
            data = payload.model_dump(mode="json")
        else:
            data = dict(payload or {})
        data = redact_data(data)
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
            self._fh.write(_encode(event))
            if self._fsync:
                os.fsync(self._fh.fileno())
        return event

    def events(self) -> list[Event]:
        return list(iter_events(self.path))

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
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
                ev = Event.model_validate(json.loads(raw))
            except (ValueError, ValidationError):
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
