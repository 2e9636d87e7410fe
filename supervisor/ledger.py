"""What people record by hand: notes, friction the supervisor could not see, and preferences.

A supervisor's journal has one writer (the supervisor of that run), so what a person adds from
another shell goes to its own append-only file, the annotations ledger
(``Settings.annotations_path``): one JSON line per record, redacted, flushed and fsynced before the
command returns, written under an exclusive lock so two shells never interleave. The ledger is the
source of truth; the warehouse ingests it idempotently by ``annotation_id`` (table ``annotations``,
and friction also into ``friction``, so the friction views, reports and notebooks count it with
what the supervisor recorded itself). Nothing is edited in place: a newer preference for the same
key supersedes the older one, which stays in the history.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from supervisor.errors import InputError, UsageError
from supervisor.ids import new_id
from supervisor.journal import iter_events
from supervisor.redact import redact_data

ANNOTATIONS_FORMAT_VERSION = 1

AnnotationKind = Literal["note", "friction", "pref"]

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")


class Annotation(BaseModel):
    """One record a person made (the ledger's line)."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = ANNOTATIONS_FORMAT_VERSION
    annotation_id: str = Field(default_factory=lambda: new_id("ann_"))
    kind: AnnotationKind
    at: float = Field(default_factory=time.time)
    """Seconds since the epoch."""
    author: str
    """Who recorded it (``--by``, or the login name)."""
    run_id: str | None = None
    """The run it is about (None: not about one run)."""
    after_seq: int | None = None
    """The run's last journal seq when it was recorded: where it falls among the run's events."""
    type: str | None = None
    """A note's type (``info``, ``decision``, ``handoff``...) or a friction's kind."""
    key: str | None = None
    """A preference's key."""
    text: str = ""
    """A note's text, a friction's message, a preference's value."""
    signal: str | None = None
    """For friction: the signal behind it (``user_repeated_approval``...)."""
    seconds_lost: float | None = None
    """For friction: the time it cost, when the person knows it."""


def check_name(value: str, what: str) -> str:
    """A kind, type, key or signal: letters, digits, ``_ . -`` (so listings and SQL filters stay plain)."""
    if not _NAME_RE.match(value):
        raise UsageError(f"{what} {value!r} is not a plain name", f"use letters, digits, `_`, `.` or `-` for the {what}")
    return value


def last_seq(journals_dir: Path, run_id: str) -> int | None:
    """The last seq in a run's journal (None when the run has no journal)."""
    path = Path(journals_dir) / f"{run_id}.jsonl"
    if not path.exists():
        return None
    seq = 0
    for ev in iter_events(path):
        seq = max(seq, ev.seq)
    return seq


def append(path: Path, record: Annotation) -> Annotation:
    """Write one record durably (redacted) and return what was written."""
    data = redact_data(record.model_dump(mode="json"))
    stored = Annotation.model_validate(data)
    line = (json.dumps(stored.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _start_on_fresh_line(fd, path)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return stored


def _start_on_fresh_line(fd: int, path: Path) -> None:
    """After a torn last line (a crash mid-write), start the next record on a line of its own."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        if fh.read(1) != b"\n":
            os.write(fd, b"\n")


def read(path: Path) -> Iterator[Annotation]:
    """Every record of the ledger in order; lines that are not records (a torn tail) are skipped."""
    if not Path(path).exists():
        return
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break
            try:
                yield Annotation.model_validate(json.loads(raw))
            except (ValueError, ValidationError):
                continue


def notes(path: Path, *, run_id: str | None = None, type: str | None = None) -> list[Annotation]:
    return [a for a in read(path) if a.kind == "note" and (run_id is None or a.run_id == run_id)
            and (type is None or a.type == type)]


def prefs(path: Path, *, at: float | None = None) -> dict[str, Annotation]:
    """The preference in effect for each key (at time ``at``, default now); an empty value unsets."""
    out: dict[str, Annotation] = {}
    for a in read(path):
        if a.kind == "pref" and a.key and (at is None or a.at <= at):
            out[a.key] = a
    return {k: a for k, a in sorted(out.items()) if a.text != ""}


def require_run(journals_dir: Path, run_id: str) -> int:
    """The run's last seq; a run without a journal is a one-line error."""
    seq = last_seq(journals_dir, run_id)
    if seq is None:
        raise InputError(f"no run {run_id!r} in {journals_dir}", "list runs with `supervisor runs`")
    return seq
