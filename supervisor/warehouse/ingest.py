"""Ingest journals into the warehouse, idempotently by ``event_id``.

Python only splits each journal's new bytes into lines (a torn last line is left for
the next sync and reported); DuckDB parses, validates and projects them into the typed
tables, so a million events ingest in seconds. Each batch of lines is two transactions: its
events and their typed rows under its runs' locks, then the rows runs share (screens, policies),
the runs' summaries and the journals' offsets under the shared tables' lock
(:class:`~supervisor.warehouse.backend.IngestLocks`; a DuckDB file needs none). A writer killed
between the two leaves the offsets where they were: the next sync reads those lines again, finds
their events stored and writes the rest. Ingesting the same
journal twice changes nothing: rows are keyed by event id and ``ingest_state`` remembers
how far each file was read (a file that shrank is read again from the start).

Payload layouts the typed tables understand (the runner writes these; nested and flat
forms are both accepted, so older journals stay readable):

- ``observation``: the Observation's fields, flat or under ``observation``; ``pane_id``;
  ``screen`` = ``{text, width, height, title}`` (only needed the first time a hash appears).
- ``decision`` / ``shadow_decision``: the Decision's fields, flat or under ``decision``;
  shadow decisions add ``shadow_policy_id``.
- ``action``: the Action's fields, flat or under ``action`` (intent and delivery are two rows).
- ``checkpoint``: the parsed checkpoint, flat or under ``checkpoint``, plus ``parse_error``.
- ``verification``, ``judge_call``, ``notification``, ``friction``: flat fields.
- ``run_started`` / ``run_ended`` / ``pause`` / ``resume``: flat fields (command, pane_id,
  session, cwd, host, agent, policy_id, spec_id, package_version; outcome, exit_code;
  pause_reason, next_action).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from supervisor.journal import ENVELOPE_KEYS, EVENT_KINDS, MAX_AT, NESTED_OBJECTS
from supervisor.redact import redact
from supervisor.warehouse.backend import IngestLocks, rollback

logger = logging.getLogger(__name__)

Connection = Any


@dataclass
class SyncReport:
    """What one sync did."""

    journals: int = 0
    """Journal files looked at."""
    new_events: int = 0
    """Events inserted (already-known ids are not counted)."""
    torn_tails: list[str] = field(default_factory=list)
    """Journals whose last line was incomplete (left for the next sync)."""
    bad_lines: dict[str, int] = field(default_factory=dict)
    """Journal -> lines that were not valid events (skipped, recorded in ``ingest_rejects``)."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Journal -> why its first skipped line was skipped (``at is out of range``, ``not JSON``...)."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """Journal -> the error reading it (permissions...); it is tried again at the next sync."""
    seconds: float = 0.0


def _field(name: str, *, nest: str | None = None, as_json: bool = False) -> str:
    """A payload field; with ``nest``, read from ``o``: the nested object when the payload has one,
    else the payload itself (see :func:`_unnested`)."""
    op = "->" if as_json else "->>"
    return f"{'o' if nest else 'payload'}{op}'$.{name}'"


def _unnested(kind: str, nest: str) -> str:
    """Rows of ``kind`` with ``o`` = ``payload.<nest>`` if present, else ``payload`` (one JSON lookup
    per row instead of one per field)."""
    return (f"(SELECT *, coalesce(payload->'$.{nest}', payload) AS o FROM new_events "
            f"WHERE kind = '{kind}') AS u")


def _bool(expr: str) -> str:
    return f"TRY_CAST({expr} AS BOOLEAN)"


def _typed_inserts() -> list[tuple[str, str, str]]:
    """(table, key column, the SELECT of its new rows) for each typed table."""
    o = "observation"
    d = "decision"
    a = "action"
    c = "checkpoint"
    return [
        ("observations", "observation_id", f"""
        SELECT coalesce({_field('observation_id', nest=o)}, event_id), run_id, seq, occurred_at,
               coalesce(payload->>'$.pane_id', o->>'$.pane_id'),
               coalesce({_field('screen_hash', nest=o)}, payload->>'$.screen.screen_hash'),
               {_field('state', nest=o)}, {_field('agent', nest=o)},
               o->>'$.prompt.kind', o->>'$.prompt.question', o->>'$.prompt.risk.level', o->>'$.blocker.kind',
               TRY_CAST({_field('confidence', nest=o)} AS DOUBLE),
               {_field('policy_id', nest=o)},
               {_field('prompt', nest=o, as_json=True)}, {_field('blocker', nest=o, as_json=True)},
               {_field('evidence', nest=o, as_json=True)}
        FROM {_unnested('observation', o)}
        """),
        ("screens", "screen_hash", """
        SELECT screen_hash, text, width, height, title, occurred_at, run_id FROM (
            SELECT coalesce(payload->>'$.screen.screen_hash', payload->>'$.observation.screen_hash',
                            payload->>'$.screen_hash') AS screen_hash,
                   coalesce(payload->>'$.screen.text', payload->>'$.screen_text') AS text,
                   TRY_CAST(payload->>'$.screen.width' AS INTEGER) AS width,
                   TRY_CAST(payload->>'$.screen.height' AS INTEGER) AS height,
                   payload->>'$.screen.title' AS title, occurred_at, run_id,
                   row_number() OVER (PARTITION BY screen_hash ORDER BY occurred_at) AS rn
            FROM new_events WHERE kind = 'observation'
        ) s WHERE rn = 1 AND screen_hash IS NOT NULL AND text IS NOT NULL
        """),
        ("decisions", "decision_id", f"""
        SELECT coalesce({_field('decision_id', nest=d)}, event_id), run_id, seq, occurred_at,
               {_field('trigger_id', nest=d)}, {_field('kind', nest=d)},
               {_field('keys', nest=d, as_json=True)}, {_field('text', nest=d)},
               {_bool(_field('approves', nest=d))}, {_field('reason', nest=d)},
               TRY_CAST({_field('confidence', nest=d)} AS DOUBLE), {_field('rule', nest=d)},
               {_field('next_action', nest=d)}, {_field('policy_id', nest=d)}, {_field('source', nest=d)}
        FROM {_unnested('decision', d)}
        """),
        ("shadow_decisions", "shadow_decision_id", f"""
        SELECT event_id, run_id, seq, occurred_at, {_field('trigger_id', nest=d)},
               coalesce(payload->>'$.shadow_policy_id', {_field('policy_id', nest=d)}),
               {_field('kind', nest=d)}, {_field('keys', nest=d, as_json=True)},
               {_bool(_field('approves', nest=d))}, {_field('reason', nest=d)}, {_field('rule', nest=d)}
        FROM {_unnested('shadow_decision', d)}
        """),
        ("actions", "event_id", f"""
        SELECT event_id, coalesce({_field('action_id', nest=a)}, event_id), run_id, seq, occurred_at,
               {_field('decision_id', nest=a)}, {_field('kind', nest=a)}, {_field('keys', nest=a, as_json=True)},
               {_field('text', nest=a)}, {_field('pane_id', nest=a)}, {_bool(_field('delivered', nest=a))},
               {_bool(_field('confirmed', nest=a))}, {_field('error', nest=a)}
        FROM {_unnested('action', a)}
        """),
        ("checkpoints", "checkpoint_id", f"""
        SELECT coalesce({_field('checkpoint_id', nest=c)}, event_id), run_id, seq, occurred_at,
               TRY_CAST({_field('checkpoint_seq', nest=c)} AS INTEGER), {_field('status', nest=c)},
               {_field('current_node', nest=c)}, {_field('summary', nest=c)},
               payload->>'$.parse_error', payload
        FROM {_unnested('checkpoint', c)}
        """),
        ("verifications", "verification_id", """
        SELECT coalesce(payload->>'$.verification_id', event_id), run_id, seq, occurred_at,
               coalesce(payload->>'$.verifier', payload->>'$.kind'),
               coalesce(payload->>'$.node', payload->>'$.step_id'),
               TRY_CAST(payload->>'$.passed' AS BOOLEAN), payload->>'$.output', payload
        FROM new_events WHERE kind = 'verification'
        """),
        ("judge_calls", "judge_call_id", """
        SELECT coalesce(payload->>'$.judge_call_id', event_id), run_id, seq, occurred_at,
               payload->>'$.model', payload->>'$.prompt_version', payload->>'$.request_hash',
               TRY_CAST(payload->>'$.cache_hit' AS BOOLEAN),
               TRY_CAST(payload->>'$.input_tokens' AS BIGINT), TRY_CAST(payload->>'$.output_tokens' AS BIGINT),
               TRY_CAST(payload->>'$.latency_ms' AS DOUBLE), TRY_CAST(payload->>'$.cost_usd' AS DOUBLE),
               payload->>'$.outcome', payload->>'$.error'
        FROM new_events WHERE kind = 'judge_call'
        """),
        ("notifications", "notification_id", """
        SELECT coalesce(payload->>'$.notification_id', event_id), run_id, seq, occurred_at,
               payload->>'$.channel', payload->>'$.title', payload->>'$.body',
               TRY_CAST(payload->>'$.ok' AS BOOLEAN), payload
        FROM new_events WHERE kind = 'notification'
        """),
        ("friction", "friction_id", """
        SELECT coalesce(payload->>'$.friction_id', event_id), run_id, seq, occurred_at,
               payload->>'$.kind', payload->>'$.detail', TRY_CAST(payload->>'$.seconds_lost' AS DOUBLE),
               coalesce(payload->>'$.author', 'supervisor')
        FROM new_events WHERE kind = 'friction'
        """),
        # run_started carries {policy_id: canonical content} for the acting policy and every shadow.
        ("policies", "policy_id", """
        SELECT policy_id, NULL, any_value(content), 'run:' || any_value(run_id), min(occurred_at) FROM (
            SELECT run_id, occurred_at, policy_id, payload->'$.policies'->policy_id AS content FROM (
                SELECT run_id, occurred_at, payload, unnest(json_keys(payload->'$.policies')) AS policy_id
                FROM new_events WHERE kind = 'run_started' AND json_type(payload->'$.policies') = 'OBJECT'))
        WHERE content IS NOT NULL
        GROUP BY policy_id
        """),
    ]


def _insert_new(table: str, key: str, select: str, *, scope: str = "") -> str:
    """Insert the rows of ``select`` whose key the table does not hold yet, one per key (the first
    seen, for a table with ``first_seen_at``). By anti-join, not ``INSERT OR IGNORE``: a DuckLake has
    no keys to ignore by. ``scope``: a condition on the table's rows that any row with one of these
    keys meets (the batch's runs), so the anti-join reads only those."""
    order = " ORDER BY x.first_seen_at" if table in ("screens", "policies") else ""
    return (f"INSERT INTO {table} SELECT * FROM ({select}) AS x(k) "
            f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.{key} = x.k{scope}) "
            f"QUALIFY row_number() OVER (PARTITION BY x.k{order}) = 1")


SHARED_TABLES = ("screens", "policies")
"""Typed tables whose rows are shared by runs (a screen by its content, a policy by its id): two
hosts may hold the same row, so they are written under the shared-tables lock, not a run's."""
_RUN_SCOPE = " AND t.run_id IN (SELECT run_id FROM chunk_runs)"
_KIND_OF = {"observations": "observation", "decisions": "decision", "shadow_decisions": "shadow_decision",
            "actions": "action", "checkpoints": "checkpoint", "verifications": "verification",
            "judge_calls": "judge_call", "notifications": "notification", "friction": "friction"}
"""The event kind each run's typed table is made of (a batch without that kind skips the table)."""
_BY_EVENT_ID = ("shadow_decisions", "actions")
"""Typed tables keyed by the event's own id: an event not stored yet has no row there (both are
inserted in one transaction), so their rows need no anti-join."""
_TYPED = [(_KIND_OF[table], f"INSERT INTO {table} {select}" if table in _BY_EVENT_ID
           else _insert_new(table, key, select, scope=_RUN_SCOPE))
          for table, key, select in _typed_inserts() if table not in SHARED_TABLES]
_SHARED_STAGE = [(f"CREATE OR REPLACE TEMP TABLE chunk_{table} AS {select.replace('new_events', 'valid_events')}",
                  f"INSERT INTO pending_{table} SELECT * FROM chunk_{table}",
                  _insert_new(table, key, f"SELECT * FROM pending_{table}"))
                 for table, key, select in _typed_inserts() if table in SHARED_TABLES]
"""Per shared table: stage its rows from the batch's valid lines (before any lock: a line whose
values DuckDB rejects is found here), keep them once the batch's events committed, insert the new
ones under the shared-tables lock."""

_RUNS_DELETE = "DELETE FROM runs WHERE run_id IN (SELECT run_id FROM pending_runs)"
_RUNS_UPSERT = """
INSERT INTO runs
SELECT e.run_id,
       coalesce(min(occurred_at) FILTER (WHERE kind = 'run_started'), min(occurred_at)) AS started_at,
       max(occurred_at) FILTER (WHERE kind = 'run_ended') AS ended_at,
       max(occurred_at) AS last_event_at,
       arg_max(payload->>'$.command', occurred_at) FILTER (WHERE kind = 'run_started') AS command,
       arg_max(payload->>'$.pane_id', occurred_at) FILTER (WHERE kind = 'run_started') AS pane_id,
       arg_max(payload->>'$.session', occurred_at) FILTER (WHERE kind = 'run_started') AS session,
       arg_max(payload->>'$.cwd', occurred_at) FILTER (WHERE kind = 'run_started') AS cwd,
       arg_max(payload->>'$.host', occurred_at) FILTER (WHERE kind = 'run_started') AS host,
       coalesce(arg_max(payload->>'$.agent', occurred_at) FILTER (WHERE kind = 'run_started'
                                                           AND (payload->>'$.agent') <> 'unknown'),
                arg_max(coalesce(payload->>'$.observation.agent', payload->>'$.agent'), occurred_at)
                    FILTER (WHERE kind = 'observation'
                            AND coalesce(payload->>'$.observation.agent', payload->>'$.agent') <> 'unknown'),
                arg_max(payload->>'$.agent', occurred_at) FILTER (WHERE kind = 'run_started')) AS agent,
       arg_max(payload->>'$.policy_id', occurred_at) FILTER (WHERE kind = 'run_started') AS policy_id,
       arg_max(payload->>'$.spec_id', occurred_at) FILTER (WHERE kind = 'run_started') AS spec_id,
       arg_max(payload->>'$.outcome', occurred_at) FILTER (WHERE kind = 'run_ended') AS outcome,
       TRY_CAST(arg_max(payload->>'$.exit_code', occurred_at) FILTER (WHERE kind = 'run_ended') AS INTEGER) AS exit_code,
       coalesce(arg_max(kind, seq) FILTER (WHERE kind IN ('pause', 'resume')) = 'pause', false) AS paused,
       CASE WHEN arg_max(kind, seq) FILTER (WHERE kind IN ('pause', 'resume')) = 'pause'
            THEN arg_max(coalesce(payload->>'$.pause_reason', payload->>'$.reason'), seq)
                 FILTER (WHERE kind = 'pause') END AS pause_reason,
       CASE WHEN arg_max(kind, seq) FILTER (WHERE kind IN ('pause', 'resume')) = 'pause'
            THEN arg_max(payload->>'$.next_action', seq) FILTER (WHERE kind = 'pause') END AS next_action,
       arg_max(payload->>'$.package_version', occurred_at) FILTER (WHERE kind = 'run_started') AS package_version,
       count(*) AS events
FROM events e
WHERE e.run_id IN (SELECT run_id FROM pending_runs)
GROUP BY e.run_id
"""


def _read_new_lines(path: Path, offset: int) -> tuple[list[str], int, int, bool]:
    """Complete lines after ``offset``; returns (lines, offset read from, new offset, torn). The
    offset read from is 0 when the file shrank (replaced or truncated: read again from the start)."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size < offset:
            offset = 0  # the file was replaced or truncated: read it again (ids keep it idempotent)
        fh.seek(offset)
        data = fh.read()
    cut = data.rfind(b"\n")
    torn = cut != len(data) - 1 if data else False
    if cut < 0:
        return [], offset, offset, bool(data)
    complete = data[: cut + 1]
    text = complete.decode("utf-8", errors="replace")
    lines = text.split("\n")[:-1]
    return lines, offset, offset + len(complete), torn


_INTEGER = "('UBIGINT', 'BIGINT')"
_NUMBER = "('UBIGINT', 'BIGINT', 'DOUBLE')"
_KINDS = "(" + ", ".join(f"'{k}'" for k in EVENT_KINDS) + ")"
_KEYS = "[" + ", ".join(f"'{k}'" for k in sorted(ENVELOPE_KEYS)) + "]"
_NESTED_KEYS = sorted({key for keys in NESTED_OBJECTS.values() for key, _ in keys})
_PATHS = ["event_id", "run_id", "kind", "seq", "at", "payload", "schema_version",
          *(f"payload.{k}" for k in _NESTED_KEYS)]
"""Extracted in one pass per line (``f[1]`` = event_id ... in this order)."""
_F = {name: f"f[{i}]" for i, name in enumerate(_PATHS, start=1)}
_OBJECT, _OBJECT_OR_NULL = "('OBJECT')", "('OBJECT', 'NULL')"
_NESTED = "".join(
    f"     WHEN {_F['kind']}->>'$' = '{kind}' AND json_type({_F['payload.' + key]}) NOT IN "
    f"{_OBJECT_OR_NULL if nullable else _OBJECT} THEN 'payload.{key} is not an object'\n"
    for kind, keys in NESTED_OBJECTS.items() for key, nullable in keys)

# Why a line is not an event, or NULL: the rules of supervisor.journal.envelope_problem, in SQL.
_PROBLEM = f"""
CASE WHEN j IS NULL THEN 'not JSON'
     WHEN json_type(j) <> 'OBJECT' THEN 'not a JSON object'
     WHEN json_type({_F['event_id']}) IS DISTINCT FROM 'VARCHAR' THEN 'event_id is not a string'
     WHEN json_type({_F['run_id']}) IS DISTINCT FROM 'VARCHAR' THEN 'run_id is not a string'
     WHEN json_type({_F['kind']}) IS DISTINCT FROM 'VARCHAR' THEN 'kind is not a string'
     WHEN {_F['kind']}->>'$' NOT IN {_KINDS} THEN 'unknown kind'
     WHEN NOT list_has_all({_KEYS}, json_keys(j)) THEN 'unknown envelope key'
     WHEN {_F['schema_version']} IS NOT NULL AND (json_type({_F['schema_version']}) NOT IN {_INTEGER}
          OR coalesce(TRY_CAST({_F['schema_version']}->>'$' AS INTEGER) < 0, true))
          THEN 'schema_version is not an integer'
     WHEN coalesce(json_type({_F['seq']}) NOT IN {_INTEGER} OR TRY_CAST({_F['seq']}->>'$' AS INTEGER) < 0, true)
          OR TRY_CAST({_F['seq']}->>'$' AS INTEGER) IS NULL THEN 'seq is not an integer'
     WHEN coalesce(json_type({_F['at']}) NOT IN {_NUMBER}, true) THEN 'at is not a number'
     WHEN NOT coalesce(isfinite(at_s) AND at_s >= 0 AND at_s < {MAX_AT!r}, false) THEN 'at is out of range'
     WHEN json_type({_F['payload']}) <> 'OBJECT' THEN 'payload is not an object'
{_NESTED}END"""

_CANDIDATES = f"""
CREATE OR REPLACE TEMP TABLE candidate AS
SELECT journal_path, line_no, problem, line,
       CASE WHEN problem IS NULL THEN {_F['event_id']}->>'$' END AS event_id,
       {_F['run_id']}->>'$' AS run_id, TRY_CAST({_F['seq']}->>'$' AS INTEGER) AS seq, {_F['kind']}->>'$' AS kind,
       CASE WHEN problem IS NULL THEN make_timestamp(TRY_CAST(round(at_s * 1000000) AS BIGINT)) END AS occurred_at,
       {_F['payload']} AS payload,
       coalesce(TRY_CAST({_F['schema_version']}->>'$' AS INTEGER), 1) AS schema_version
FROM (SELECT *, {_PROBLEM} AS problem
      FROM (SELECT *, TRY_CAST({_F['at']}->>'$' AS DOUBLE) AS at_s
            FROM (SELECT *, json_extract(j, {[f"$.{p}" for p in _PATHS]!r}) AS f
                  FROM (SELECT journal_path, line_no, line, CASE WHEN json_valid(line) THEN line::JSON END AS j
                        FROM stage_lines WHERE length(trim(line)) > 0))))
"""


@dataclass
class _Loaded:
    new_events: int = 0
    rejects: list[tuple[str, int, str, str]] = field(default_factory=list)
    """(journal path, line number, reason, excerpt)."""


_VALID = """
CREATE OR REPLACE TEMP VIEW valid_events AS
SELECT event_id, run_id, seq, kind, occurred_at, payload, schema_version FROM candidate WHERE problem IS NULL
"""


def _load(con: Connection, stage: pl.DataFrame, locks: IngestLocks) -> _Loaded:
    """Validate and insert one batch of lines in one transaction (rolled back if DuckDB raises).

    The lines are parsed and validated, and the shared tables' rows staged, in this connection's
    temporary tables before any lock is taken; then, holding the locks of the batch's runs, the
    events no writer stored yet and their typed rows are inserted and committed. The shared
    tables' rows wait in ``pending_*`` for :func:`_save_state`."""
    out = _Loaded()
    con.register("stage_lines", stage)
    try:
        con.execute(_CANDIDATES)
    finally:
        con.unregister("stage_lines")
    out.rejects = [(p, int(n), r, x) for p, n, r, x in con.execute(
        "SELECT journal_path, line_no, problem, left(line, 200) FROM candidate WHERE problem IS NOT NULL"
    ).fetchall()]
    con.execute(_VALID)
    con.execute("CREATE OR REPLACE TEMP TABLE chunk_runs AS SELECT DISTINCT run_id FROM valid_events")
    for stage_sql, _keep, _insert in _SHARED_STAGE:
        con.execute(stage_sql)
    run_ids = [r[0] for r in con.execute("SELECT run_id FROM chunk_runs").fetchall()]
    if run_ids:
        locks.runs(run_ids)
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(
                """
                CREATE OR REPLACE TEMP TABLE new_events AS
                SELECT DISTINCT ON (c.event_id) c.event_id, c.run_id, c.seq, c.kind, c.occurred_at, c.payload,
                       c.schema_version
                FROM valid_events c
                WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = c.event_id
                                  AND e.run_id IN (SELECT run_id FROM chunk_runs))
                """
            )
            out.new_events = con.execute("SELECT count(*) FROM new_events").fetchall()[0][0]
            if out.new_events:
                con.execute("INSERT INTO events SELECT event_id, run_id, seq, kind, occurred_at, payload, "
                            "schema_version FROM new_events")
                kinds = {k for (k,) in con.execute("SELECT DISTINCT kind FROM new_events").fetchall()}
                for kind, sql in _TYPED:
                    if kind in kinds:
                        con.execute(sql)
            con.execute("DROP TABLE IF EXISTS new_events")
            con.execute("COMMIT")
        except Exception:
            rollback(con)
            raise
    # committed (or nothing to commit): what the shared tables need from these lines, even when a
    # writer that died after committing them left them to this one
    for _stage, keep_sql, _insert in _SHARED_STAGE:
        con.execute(keep_sql)
    con.execute("INSERT INTO pending_runs SELECT run_id FROM chunk_runs")
    con.execute("DROP VIEW IF EXISTS valid_events; DROP TABLE IF EXISTS candidate")
    return out


_DATA_ERRORS = (duckdb.DataError, duckdb.IntegrityError, duckdb.InvalidInputException)
"""What a line's values can cause (a failed conversion, a constraint). Anything else (a full
disk, a damaged file, a bug in this module) is not a bad line: it propagates and no offset moves."""


def _load_isolating(con: Connection, stage: pl.DataFrame, locks: IngestLocks) -> _Loaded:
    """:func:`_load`, and when a line's data makes DuckDB reject the batch, the two halves apart,
    down to the single lines that fail: those are rejected with DuckDB's reason and everything
    else is ingested."""
    try:
        return _load(con, stage, locks)
    except _DATA_ERRORS as exc:
        if stage.height <= 1:
            row = stage.row(0, named=True) if stage.height else None
            if row is None:
                return _Loaded()
            reason = "ingest failed: " + str(exc).splitlines()[0][:300]
            logger.warning("journal %s line %s: %s", row["journal_path"], row["line_no"], reason)
            return _Loaded(rejects=[(row["journal_path"], int(row["line_no"]), reason, row["line"][:200])])
    half = stage.height // 2
    first = _load_isolating(con, stage.slice(0, half), locks)
    second = _load_isolating(con, stage.slice(half), locks)
    return _Loaded(first.new_events + second.new_events, first.rejects + second.rejects)


CHUNK_LINES = 20_000
"""Journal lines ingested per transaction (whole journals, so a bigger one goes alone). Large
batches make few commits (each costs a round of catalog writes and a Parquet file per table on a
DuckLake); writers of other runs never wait for each other, so a large batch holds nobody up."""


@dataclass
class _JournalRead:
    key: str
    lines: list[str]
    first_line_no: int
    end: int
    lines_seen: int
    torn: bool
    restarted: bool


def ingest_journals(con: Connection, journals: list[Path], report: SyncReport | None = None,
                    locks: IngestLocks | None = None) -> SyncReport:
    """Ingest the new part of each journal file. Lines that are not events (bad JSON, hostile
    values such as ``"at": 1e300``) are skipped, recorded in ``ingest_rejects`` and reported;
    the rest is ingested, so one bad line never stops the warehouse for every run.

    ``report``: add to it (a retry after a commit conflict keeps what the chunks committed
    before the conflict inserted). ``locks``: how this writer coordinates with the others of a
    shared warehouse (:func:`supervisor.warehouse.backend.ingest_locks`; none needed for a file)."""
    t0 = time.perf_counter()
    report = report or SyncReport(journals=len(journals))
    locks = locks or IngestLocks()
    state = _read_state(con, [str(p) for p in journals])
    reads: list[_JournalRead] = []
    for path in journals:
        key = str(path)
        offset, seen = state.get(key, (0, 0))
        try:
            new_lines, start, end, torn = _read_new_lines(path, offset)
        except FileNotFoundError:
            continue
        except OSError as exc:
            report.unreadable[key] = str(exc)
            continue
        restarted = start == 0 and offset > 0
        if restarted:
            seen = 0
        if torn and key not in report.torn_tails:
            report.torn_tails.append(key)
        if new_lines or restarted or torn or key not in state:  # else nothing to read or record
            reads.append(_JournalRead(key, new_lines, seen + 1, end, seen + len(new_lines), torn, restarted))
    chunk: list[_JournalRead] = []
    try:
        for read in reads:
            if chunk and sum(len(r.lines) for r in chunk) + len(read.lines) > CHUNK_LINES:
                _ingest_chunk(con, chunk, report, locks)
                chunk = []
            chunk.append(read)
        if chunk:
            _ingest_chunk(con, chunk, report, locks)
    finally:
        locks.release()
    report.seconds += time.perf_counter() - t0
    return report


def _read_state(con: Connection, keys: list[str]) -> dict[str, tuple[int, int]]:
    """How far each of these journals was read: (byte offset, lines)."""
    if not keys:
        return {}
    con.register("wanted_journals", pl.DataFrame({"journal_path": keys}, schema={"journal_path": pl.Utf8}))
    try:
        rows = con.execute("SELECT journal_path, byte_offset, events FROM ingest_state "
                           "WHERE journal_path IN (SELECT journal_path FROM wanted_journals)").fetchall()
    finally:
        con.unregister("wanted_journals")
    return {row[0]: (int(row[1]), int(row[2])) for row in rows}


_PENDING = ("CREATE OR REPLACE TEMP TABLE pending_runs (run_id VARCHAR); "
            "CREATE OR REPLACE TEMP TABLE pending_screens AS SELECT * FROM screens LIMIT 0; "
            "CREATE OR REPLACE TEMP TABLE pending_policies AS SELECT * FROM policies LIMIT 0")
_SCRATCH = ("pending_runs", "pending_screens", "pending_policies", "chunk_runs", "chunk_screens", "chunk_policies",
            "candidate", "new_events")


def _ingest_chunk(con: Connection, reads: list[_JournalRead], report: SyncReport, locks: IngestLocks) -> None:
    """One chunk: its events under its runs' locks, then its shared rows and progress under the
    shared tables' lock; every lock is let go at the end."""
    stage = pl.DataFrame({"journal_path": [r.key for r in reads for _ in r.lines],
                          "line_no": [n for r in reads for n in range(r.first_line_no, r.first_line_no + len(r.lines))],
                          "line": [line for r in reads for line in r.lines]},
                         schema={"journal_path": pl.Utf8, "line_no": pl.Int64, "line": pl.Utf8})
    con.execute(_PENDING)
    try:
        loaded = _load_isolating(con, stage, locks)
        report.new_events += loaded.new_events  # committed: a retry of this chunk finds them there
        rejects = pl.DataFrame([(p, n, r, redact(x)) for p, n, r, x in loaded.rejects], orient="row",
                               schema={"journal_path": pl.Utf8, "line_no": pl.Int64, "reason": pl.Utf8,
                                       "excerpt": pl.Utf8})
        states = pl.DataFrame([(r.key, r.end, r.lines_seen, r.torn, r.restarted) for r in reads], orient="row",
                              schema={"journal_path": pl.Utf8, "byte_offset": pl.Int64, "events": pl.Int64,
                                      "torn_tail": pl.Boolean, "restarted": pl.Boolean})
        _save_state(con, rejects, states, locks)
    finally:
        locks.release()
        with contextlib.suppress(duckdb.Error):
            con.execute("DROP VIEW IF EXISTS valid_events")
        for table in _SCRATCH:
            with contextlib.suppress(duckdb.Error):
                con.execute(f"DROP TABLE IF EXISTS {table}")
    for rejected_path, _n, reason, _x in loaded.rejects:  # counted once recorded (a retry finds them again)
        report.bad_lines[rejected_path] = report.bad_lines.get(rejected_path, 0) + 1
        report.reasons.setdefault(rejected_path, reason)


def _save_state(con: Connection, rejects: pl.DataFrame, states: pl.DataFrame, locks: IngestLocks) -> None:
    """Under the shared tables' lock, in one transaction: the chunk's new screens and policies, its
    runs' summaries (recomputed from their events), the lines skipped and how far each journal
    was read (replacing the rows of the same journal and line by delete + insert: a DuckLake has
    no keys to upsert by)."""
    locks.shared_tables()
    con.execute("BEGIN TRANSACTION")
    try:
        con.register("reject_rows", rejects)
        con.register("state_rows", states)
        for _stage, _keep, insert_sql in _SHARED_STAGE:
            con.execute(insert_sql)
        if con.execute("SELECT count(*) FROM pending_runs").fetchall()[0][0]:
            con.execute(_RUNS_DELETE)
            con.execute(_RUNS_UPSERT)
        if bool(states["restarted"].any()):
            con.execute("DELETE FROM ingest_rejects WHERE journal_path IN "
                        "(SELECT journal_path FROM state_rows WHERE restarted)")
        if rejects.height:
            con.execute("DELETE FROM ingest_rejects WHERE (journal_path, line_no) IN "
                        "(SELECT (journal_path, line_no) FROM reject_rows)")
            con.execute("INSERT INTO ingest_rejects SELECT journal_path, line_no, reason, excerpt, current_timestamp "
                        "FROM reject_rows QUALIFY row_number() OVER (PARTITION BY journal_path, line_no) = 1")
        con.execute("DELETE FROM ingest_state WHERE journal_path IN (SELECT journal_path FROM state_rows)")
        con.execute("INSERT INTO ingest_state SELECT s.journal_path, NULL, s.byte_offset, s.events, s.torn_tail, "
                    "(SELECT count(*) FROM ingest_rejects r WHERE r.journal_path = s.journal_path), current_timestamp "
                    "FROM state_rows s")
        con.execute("COMMIT")
    except Exception:
        rollback(con)
        raise
    finally:
        for view in ("reject_rows", "state_rows"):  # each one, even when the other is already gone
            with contextlib.suppress(duckdb.Error):
                con.unregister(view)
