"""Copy a warehouse into another: a host's local DuckDB file into the fleet's DuckLake (or
back). ``supervisor warehouse migrate --to ...`` is a thin skin over :func:`migrate_warehouse`.

- **Idempotent**: a row is copied only when the target has no row with its key (the keys the
  local schema declares, derived from the migrations themselves), so running it again, or
  after the host already ingested some of the same runs into the target, copies nothing twice.
- **Atomic**: one transaction, holding the fleet lock exclusively (no ingest into the DuckLake
  interleaves with it: each holds that lock shared), and bumping ``ingest_serial`` so that it
  conflicts with (and is retried after) any older writer committing at the same moment.
- **Verifiable**: afterwards every table's source rows are looked up in the target by key and
  the counts are reported (rows in the source, in the target, and source rows missing).
- ``ingest_state`` comes along, so the host's journals are not read again once it switches.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import duckdb

from supervisor.errors import UsageError, WarehouseError
from supervisor.settings import WarehouseLocation
from supervisor.warehouse import open_warehouse
from supervisor.warehouse.backend import attach, retry_conflicts, rollback
from supervisor.warehouse.migrations import apply_migrations

SOURCE = "migrate_source"
NOT_COPIED = ("schema_migrations", "ingest_serial")
"""Each warehouse keeps its own: the schema it has, and its own ingest counter."""


@dataclass
class TableCopy:
    """One table's figures after a migration."""

    table: str
    source_rows: int
    copied: int
    target_rows: int
    missing: int
    """Source rows whose key the target does not hold (0 when the copy is complete)."""


@dataclass
class MigrationReport:
    """What :func:`migrate_warehouse` did, table by table."""

    source: str
    target: str
    tables: list[TableCopy] = field(default_factory=list)

    @property
    def copied(self) -> int:
        return sum(t.copied for t in self.tables)

    @property
    def complete(self) -> bool:
        return all(t.missing == 0 for t in self.tables)


@functools.cache
def schema_keys() -> dict[str, tuple[str, ...]]:
    """Each table's key columns as the local schema declares them (a DuckLake declares none, so
    they are read from the migrations applied to a scratch in-memory database)."""
    con = duckdb.connect()
    try:
        apply_migrations(con)
        rows = con.execute("SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                           "WHERE constraint_type = 'PRIMARY KEY'").fetchall()
    finally:
        con.close()
    return {str(t): tuple(cols) for t, cols in rows}


def _columns(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[str]]:
    rows = con.execute("SELECT table_name, column_name FROM information_schema.columns WHERE table_catalog = ? "
                       "AND table_schema = 'main' AND table_name IN (SELECT table_name FROM information_schema.tables "
                       "WHERE table_catalog = ? AND table_schema = 'main' AND table_type = 'BASE TABLE') "
                       "ORDER BY table_name, ordinal_position", [catalog, catalog]).fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(str(table), []).append(str(column))
    return out


def _missing_sql(table: str, key: tuple[str, ...]) -> str:
    match = " AND ".join(f"t.{c} = s.{c}" for c in key)
    return f"FROM {SOURCE}.main.{table} s WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {match})"


def migrate_warehouse(source: WarehouseLocation, target: WarehouseLocation) -> MigrationReport:
    """Copy every row of ``source`` that ``target`` lacks into ``target`` (see the module)."""
    if str(source) == str(target):
        raise UsageError(f"the warehouse to migrate is already {target}", "name another one with --to")
    with open_warehouse(source):
        pass  # brings the source to this version's schema, like any sync would
    report = MigrationReport(str(source), str(target))
    keys = schema_keys()
    with open_warehouse(target) as wh:
        attach(wh.con, source, SOURCE, read_only=True)
        target_catalog = str(wh.con.execute("SELECT current_database()").fetchall()[0][0])
        here, there = _columns(wh.con, target_catalog), _columns(wh.con, SOURCE)
        tables = [t for t in sorted(there) if t not in NOT_COPIED]
        if not tables:
            raise WarehouseError(f"{source} holds no tables to migrate", "check --from")
        for t in tables:
            if t not in here or not set(there[t]) <= set(here[t]):
                raise WarehouseError(f"{target} has no place for {source}'s table {t} (or some of its columns)",
                                     "upgrade paneward where the target was created, then migrate again")
            if t not in keys:
                raise WarehouseError(f"table {t} of {source} has no key to copy it by idempotently",
                                     "this paneward version does not know it: upgrade paneward")

        def copy() -> dict[str, int]:
            copied: dict[str, int] = {}
            wh.locks.fleet(exclusive=True)  # no ingest interleaves with a copy of whole tables
            wh.con.execute("BEGIN TRANSACTION")
            try:
                for t in tables:
                    cols = ", ".join(there[t])
                    copied[t] = int(wh.con.execute(f"INSERT INTO {t} ({cols}) SELECT {cols} "
                                                   + _missing_sql(t, keys[t])).fetchall()[0][0])
                wh.con.execute("UPDATE ingest_serial SET generation = generation + 1, committed_at = current_timestamp")
                wh.con.execute("COMMIT")
            except Exception:
                rollback(wh.con)
                raise
            finally:
                wh.locks.release()
            return copied

        copied = retry_conflicts(copy, what="migrating the warehouse", location=target)
        for t in tables:
            n_source = int(wh.con.execute(f"SELECT count(*) FROM {SOURCE}.main.{t}").fetchall()[0][0])
            n_target = int(wh.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            missing = int(wh.con.execute("SELECT count(*) " + _missing_sql(t, keys[t])).fetchall()[0][0])
            report.tables.append(TableCopy(t, n_source, copied[t], n_target, missing))
        wh.con.execute(f"DETACH {SOURCE}")
    return report
