"""The DuckDB warehouse: the only package that imports duckdb.

One database file (default: ``$SUPERVISOR_HOME/warehouse.duckdb``) ingests every run's
journal; a fleet of supervisors on many hosts shares one DuckLake instead (catalog in
PostgreSQL, data as Parquet: see :mod:`supervisor.warehouse.backend`), through the same code.
DuckDB lets one process write a file at a time, and a notebook may hold it open, so:

- writers (the live supervisor) open it briefly per :func:`sync` and never wait:
  :func:`try_sync` returns ``None`` when the file is locked and the events stay in the
  journals until the next sync;
- readers retry for a short while and then raise :class:`WarehouseLocked` naming the
  process that holds the lock.

A DuckLake has no such lock: writers commit concurrently, each holding PostgreSQL advisory
locks for the runs it ingests (:class:`~supervisor.warehouse.backend.IngestLocks`), and one
that cannot get them in time gives up like a locked file does.

The read API returns polars DataFrames that always carry the id columns.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from supervisor.errors import InputError, WarehouseError, WarehouseLocked
from supervisor.settings import Settings, WarehouseLocation, parse_warehouse
from supervisor.warehouse.backend import (
    Backend,
    KeylessConnection,
    backend_of,
    connect,
    ingest_locks,
    retry_conflicts,
)
from supervisor.warehouse.ingest import SyncReport, ingest_journals
from supervisor.warehouse.migrations import MIGRATIONS, apply_migrations

log = logging.getLogger(__name__)

__all__ = [
    "Warehouse",
    "open_warehouse",
    "sync",
    "try_sync",
    "SyncReport",
    "MIGRATIONS",
    "apply_migrations",
]

@contextlib.contextmanager
def _one_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Ingest on one DuckDB thread: a sync runs beside the agents it supervises (and, in a fleet,
    beside other writers), and its many short statements spend more CPU coordinating threads than
    they gain from them (a third less CPU per event measured on two cores)."""
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    con.execute("SET threads = 1")
    try:
        yield
    finally:
        con.execute(f"SET threads = {int(threads)}")


class Warehouse:
    """An open warehouse connection with the read API."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: WarehouseLocation, read_only: bool) -> None:
        self.con = con
        self.path = path
        """Where it is: the DuckDB file, or the DuckLake (printed without its password)."""
        self.read_only = read_only
        self.backend: Backend = backend_of(path)
        self.locks = ingest_locks(con, path)
        """How this writer coordinates with the others of a DuckLake (nothing to do for a file)."""

    # -- writing ----------------------------------------------------------
    def migrate(self, upto: int | None = None) -> list[str]:
        if self.backend == "file":
            return apply_migrations(self.con, upto)
        ddl = KeylessConnection(self.con)
        return retry_conflicts(lambda: apply_migrations(ddl, upto), what="migrating the warehouse",
                               location=self.path)

    def ingest(self, journals: Sequence[Path]) -> SyncReport:
        if self.read_only:
            raise WarehouseError("warehouse opened read-only cannot ingest", "open it with read_only=False")
        report = SyncReport(journals=len(journals))  # kept across retries: committed chunks stay counted
        with _one_thread(self.con):
            return retry_conflicts(lambda: ingest_journals(self.con, list(journals), report, self.locks),
                                   what="ingesting journals", location=self.path)

    def ingest_annotations(self, ledger: Path) -> int:
        """Ingest what people recorded by hand (:mod:`supervisor.ledger`); returns the new records."""
        from supervisor.warehouse.ledger import ingest_annotations

        if self.read_only:
            raise WarehouseError("warehouse opened read-only cannot ingest", "open it with read_only=False")
        def ingest() -> int:
            self.locks.shared_tables()
            try:
                return ingest_annotations(self.con, ledger)
            finally:
                self.locks.release()

        return retry_conflicts(ingest, what="ingesting annotations", location=self.path)

    def ingest_dir(self, journals_dir: Path) -> SyncReport:
        files = sorted(Path(journals_dir).glob("*.jsonl")) if Path(journals_dir).exists() else []
        return self.ingest(files)

    # -- reading ----------------------------------------------------------
    def sql(self, query: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """Run a query and return a DataFrame. Errors become one-line :class:`InputError`s."""
        try:
            rel = self.con.sql(query, params=list(params) if params else None)
            if rel is None:
                return pl.DataFrame()
            frame = pl.from_arrow(rel.to_arrow_table())
            assert isinstance(frame, pl.DataFrame)
            return frame
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0]
            raise InputError(f"query failed: {first}", "check the SQL; `supervisor warehouse stats` lists tables") from exc

    def _table(self, table: str, run_id: str | None, order: str = "run_id, seq") -> pl.DataFrame:
        if run_id is None:
            return self.sql(f"SELECT * FROM {table} ORDER BY {order}")
        return self.sql(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY {order}", [run_id])

    def runs_df(self) -> pl.DataFrame:
        return self.sql("SELECT * FROM run_summary ORDER BY started_at DESC NULLS LAST, run_id DESC")

    def run_df(self, run_id: str) -> pl.DataFrame:
        return self.sql("SELECT * FROM runs WHERE run_id = ?", [run_id])

    def events_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("events", run_id)

    def observations_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("observations", run_id)

    def decisions_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("decisions", run_id)

    def actions_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("actions", run_id)

    def checkpoints_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("checkpoints", run_id)

    def verifications_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("verifications", run_id)

    def judge_calls_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("judge_calls", run_id)

    def notifications_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("notifications", run_id)

    def friction_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("friction", run_id)

    def shadow_decisions_df(self, run_id: str | None = None) -> pl.DataFrame:
        return self._table("shadow_decisions", run_id)

    def screens_df(self) -> pl.DataFrame:
        return self.sql("SELECT * FROM screens ORDER BY first_seen_at")

    def screen_text(self, screen_hash: str) -> str | None:
        rows = self.con.execute("SELECT text FROM screens WHERE screen_hash = ?", [screen_hash]).fetchall()
        return str(rows[0][0]) if rows else None

    def stats(self) -> dict[str, int]:
        """Row counts per table (and the schema version)."""
        tables = [r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = 'main' AND table_type = 'BASE TABLE' ORDER BY table_name").fetchall()]
        out = {t: int(self.con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]) for t in tables}
        out["schema_version"] = int(self.con.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0] or 0)
        return out

    def skipped_lines(self) -> list[tuple[str, int, str]]:
        """Journals with lines the ingest skipped: (journal path, lines skipped, first reason)."""
        return [(str(p), int(n), str(r)) for p, n, r in self.con.execute(
            "SELECT journal_path, count(*), arg_min(reason, line_no) FROM ingest_rejects "
            "GROUP BY journal_path ORDER BY journal_path").fetchall()]

    def close(self) -> None:
        try:
            self.locks.close()
            self.con.close()
        except duckdb.Error as exc:  # closing must finish; what was committed is on disk
            log.debug("closing the warehouse connection: %s", exc)


@contextlib.contextmanager
def open_warehouse(path: WarehouseLocation | str, *, read_only: bool = False,
                   wait_s: float | None = None) -> Iterator[Warehouse]:
    """Open the warehouse, a DuckDB file or a DuckLake (a string is read as ``SUPERVISOR_WAREHOUSE``
    is), migrating it when writable. Readers wait up to 2 s for a file's lock by default."""
    location = parse_warehouse(path) if isinstance(path, str) else path
    wait = (2.0 if read_only else 0.0) if wait_s is None else wait_s
    con = connect(location, read_only=read_only, wait_s=wait)
    wh = Warehouse(con, location, read_only)
    try:
        if not read_only:
            wh.migrate()
        else:
            _check_schema(wh)
        yield wh
    finally:
        wh.close()


def _check_schema(wh: Warehouse) -> None:
    try:
        version = wh.con.execute("SELECT max(version) FROM schema_migrations").fetchall()[0][0] or 0
    except duckdb.Error as exc:
        raise WarehouseError(f"{wh.path} is not a supervisor warehouse",
                             "point --warehouse at the right file or run `supervisor warehouse sync`") from exc
    if version < len(MIGRATIONS):
        raise WarehouseError(f"warehouse {wh.path} has schema version {version}, this version needs {len(MIGRATIONS)}",
                             "run `supervisor warehouse sync` once to migrate it")


def sync(settings: Settings, *, wait_s: float = 0.0) -> SyncReport:
    """Ingest every journal under the settings' home into its warehouse. Raises
    :class:`WarehouseLocked` when another process holds the file."""
    with open_warehouse(settings.warehouse, read_only=False, wait_s=wait_s) as wh:
        report = wh.ingest_dir(settings.journals_dir)
        wh.ingest_annotations(settings.annotations_path)
        return report


def try_sync(settings: Settings) -> SyncReport | None:
    """:func:`sync`, or ``None`` if the warehouse is locked right now (events stay in the journals)."""
    try:
        return sync(settings)
    except WarehouseLocked:
        return None


@contextlib.contextmanager
def reader(settings: Settings, *, refresh: bool = True) -> Iterator[Warehouse]:
    """Open the warehouse for reading, ingesting new journal lines first when the lock allows."""
    if refresh:
        with contextlib.suppress(WarehouseLocked):
            sync(settings)
    if not settings.warehouse.exists():
        sync(settings)
    with open_warehouse(settings.warehouse, read_only=True) as wh:
        yield wh
