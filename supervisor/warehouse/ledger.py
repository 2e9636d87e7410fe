"""Ingest the annotations ledger (what people record by hand) into the warehouse.

Like a journal: ``ingest_state`` remembers how far the ledger was read (a file that shrank is read
again from the start), only complete lines after that are parsed, and rows are inserted in bulk
(one Arrow table) by ``annotation_id``, so ingesting twice changes nothing and a sync with nothing
new costs one ``stat``. Friction goes into ``friction`` too (``seq`` is the run's last seq when it
was recorded), so every friction view, report and notebook counts it with what the supervisor
recorded itself.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ValidationError

from supervisor.ledger import Annotation
from supervisor.warehouse.backend import rollback

Connection = Any

_SCHEMA: dict[str, Any] = {"annotation_id": pl.Utf8, "kind": pl.Utf8, "run_id": pl.Utf8, "after_seq": pl.Int32,
           "occurred_at": pl.Datetime("us"), "author": pl.Utf8, "type": pl.Utf8, "key": pl.Utf8, "text": pl.Utf8,
           "signal": pl.Utf8, "seconds_lost": pl.Float64}


def _read_from(path: Path, offset: int) -> tuple[list[Annotation], int]:
    """Records in the complete lines after ``offset`` (0 when the file shrank), and the new offset."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size < offset:
            offset = 0
        fh.seek(offset)
        data = fh.read()
    cut = data.rfind(b"\n")
    if cut < 0:
        return [], offset
    out = []
    for raw in data[: cut + 1].splitlines():
        try:
            out.append(Annotation.model_validate(json.loads(raw)))
        except (ValueError, ValidationError):
            continue  # not a record (a fragment a crash left): the ledger's reader skips it too
    return out, offset + cut + 1


def ingest_annotations(con: Connection, path: Path) -> int:
    """Insert the ledger's new records; returns how many were new."""
    if not Path(path).exists():
        return 0
    key = str(Path(path).resolve())
    row = con.execute("SELECT byte_offset, events FROM ingest_state WHERE journal_path = ?", [key]).fetchall()
    offset, seen = (int(row[0][0]), int(row[0][1])) if row else (0, 0)
    records, new_offset = _read_from(Path(path), offset)
    if new_offset == offset and row:
        return 0
    frame = pl.DataFrame([{
        "annotation_id": a.annotation_id, "kind": a.kind, "run_id": a.run_id, "after_seq": a.after_seq,
        "occurred_at": dt.datetime.fromtimestamp(a.at, dt.UTC).replace(tzinfo=None), "author": a.author,
        "type": a.type, "key": a.key, "text": a.text, "signal": a.signal, "seconds_lost": a.seconds_lost}
        for a in records], schema=_SCHEMA)
    con.register("new_annotations", frame.to_arrow())
    con.execute("BEGIN TRANSACTION")
    try:
        new = con.execute("SELECT count(DISTINCT annotation_id) FROM new_annotations n WHERE NOT EXISTS "
                          "(SELECT 1 FROM annotations a WHERE a.annotation_id = n.annotation_id)").fetchall()[0][0]
        con.execute("INSERT INTO friction SELECT annotation_id, run_id, coalesce(after_seq, 0), occurred_at, type, "
                    "text || CASE WHEN signal IS NULL THEN '' ELSE ' (signal: ' || signal || ')' END, seconds_lost, "
                    "author FROM new_annotations n WHERE kind = 'friction' AND run_id IS NOT NULL AND NOT EXISTS "
                    "(SELECT 1 FROM friction f WHERE f.friction_id = n.annotation_id) "
                    "QUALIFY row_number() OVER (PARTITION BY annotation_id) = 1")
        con.execute("INSERT INTO annotations SELECT * FROM new_annotations n WHERE NOT EXISTS "
                    "(SELECT 1 FROM annotations a WHERE a.annotation_id = n.annotation_id) "
                    "QUALIFY row_number() OVER (PARTITION BY annotation_id) = 1")
        con.execute("DELETE FROM ingest_state WHERE journal_path = ?", [key])
        con.execute("INSERT INTO ingest_state VALUES (?, NULL, ?, ?, false, 0, current_timestamp)",
                    [key, new_offset, (seen if new_offset > offset and offset else 0) + len(records)])
        con.execute("COMMIT")
    except Exception:
        rollback(con)
        raise
    finally:
        con.unregister("new_annotations")
    return int(new)
