"""Where the warehouse's tables live: a local DuckDB file, or a DuckLake shared by a fleet.

Both are opened here and give the same kind of connection, so every other module of the
warehouse (migrations, ingest, readers, the workbench's store) runs the same SQL on either:

- a **file** is DuckDB's own database file: one writing process at a time (the lock is
  reported as :class:`WarehouseLocked`), primary keys and indexes as declared;
- a **DuckLake** keeps its catalog in PostgreSQL and its data as Parquet files under a data
  path (a shared folder here, object storage in production). Any number of supervisors on any
  number of hosts write at once, coordinated by PostgreSQL advisory locks (:class:`IngestLocks`:
  a lock per run, one for the tables every host shares), so ingests never conflict; DuckLake
  commits optimistically all the same, and a commit that conflicts with one that landed first
  (a migration, a table copy) is run again by :func:`retry_conflicts` with backoff (ingest is
  idempotent by event id, so a retry never duplicates anything).
  DuckLake has no primary keys, unique constraints or indexes, so migrations are applied
  without them (:func:`keyless`) and the SQL that writes relies on anti-joins, never on a key.

The DuckLake and PostgreSQL extensions are loaded from the installed Python packages
(``paneward[fleet]``: ``duckdb-extension-ducklake``, ``duckdb-extension-postgres-scanner``),
never downloaded: autoloading and autoinstalling are switched off on these connections.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import random
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, TypeVar

import duckdb

from supervisor.errors import WarehouseBusy, WarehouseError, WarehouseLocked
from supervisor.settings import DuckLakeLocation, WarehouseLocation, hide_password

log = logging.getLogger(__name__)

Backend = Literal["file", "ducklake"]
T = TypeVar("T")

CATALOG = "warehouse"
"""The name the DuckLake is attached under (a default file ``warehouse.duckdb`` has the same)."""

_EXTENSIONS = (("duckdb_extension_postgres_scanner", "postgres_scanner"), ("duckdb_extension_ducklake", "ducklake"))
_LOCK_RE = re.compile(r"Conflicting lock is held in (?P<prog>.+?) \(PID (?P<pid>\d+)\)")


def backend_of(location: WarehouseLocation) -> Backend:
    return "ducklake" if isinstance(location, DuckLakeLocation) else "file"


def connect(location: WarehouseLocation, *, read_only: bool = False, wait_s: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open the warehouse at ``location``. A file locked by another process is waited for up to
    ``wait_s`` seconds, then :class:`WarehouseLocked`; a DuckLake has no such lock."""
    if isinstance(location, DuckLakeLocation):
        return _connect_lake(location, read_only=read_only)
    return _connect_file(Path(location), read_only=read_only, wait_s=wait_s)


def _quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """No progress bar: DuckDB draws one on stdout for a query that takes over two seconds, which
    a background sync would scribble over the terminal (and over ``--json`` output)."""
    try:
        con.execute("SET enable_progress_bar = false")
    except duckdb.Error as exc:  # in Jupyter without ipywidgets DuckDB refuses the change: there is no bar there
        log.debug("progress bar setting left as it is: %s", exc)
    return con


# --------------------------------------------------------------------------- a local file


def _lock_holder(message: str) -> str | None:
    m = _LOCK_RE.search(message)
    if not m:
        return None
    return f"{Path(m.group('prog')).name} (PID {m.group('pid')})"


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc)
    return "Could not set lock" in text or "Conflicting lock" in text


def _open_error(path: Path, exc: BaseException) -> WarehouseError:
    first = str(exc).splitlines()[0]
    if "created with an newer version of DuckDB" in str(exc) or "version number" in first:
        return WarehouseError(
            f"cannot open warehouse {path}: it was written by a newer DuckDB than this one ({duckdb.__version__})",
            f"journals hold every run: move {path} aside and run `supervisor warehouse sync` to rebuild it "
            "(eval results stored only in it need that DuckDB to export them)")
    return WarehouseError(f"cannot open warehouse {path}: {first}", "check the path, or move the damaged file aside")


def _connect_file(path: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    if read_only and not path.exists():
        raise WarehouseError(f"warehouse {path} does not exist yet", "run `supervisor warehouse sync` first")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            return _quiet(duckdb.connect(str(path), read_only=read_only))
        except duckdb.IOException as exc:
            if not _is_lock_error(exc):
                raise _open_error(path, exc) from exc
            if time.monotonic() >= deadline:
                raise WarehouseLocked(str(path), _lock_holder(str(exc))) from exc
        except duckdb.ConnectionException as exc:
            # this process holds the file open the other way (a reader while its own feeder writes, or the
            # reverse): DuckDB refuses the second mode until that connection closes, as a lock would
            if "different configuration" not in str(exc):
                raise _open_error(path, exc) from exc
            if time.monotonic() >= deadline:
                raise WarehouseLocked(str(path), "this process (opened the other way)") from exc
        except duckdb.Error as exc:
            raise _open_error(path, exc) from exc
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.5)


# --------------------------------------------------------------------------- a DuckLake


def extension_file(package: str, name: str) -> Path:
    """The extension binary a ``duckdb-extension-*`` package ships for this DuckDB version."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise WarehouseError(f"the DuckLake warehouse needs DuckDB's {name} extension, which is not installed",
                             "install the fleet extra: pip install 'paneward[fleet]'")
    root = Path(next(iter(spec.submodule_search_locations))) / "extensions"
    wanted = root / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not wanted.exists():
        shipped = sorted(p.name for p in root.glob("v*")) if root.exists() else []
        raise WarehouseError(
            f"{package} ships the {name} extension for DuckDB {', '.join(shipped) or '(none)'}, "
            f"but DuckDB {duckdb.__version__} is installed",
            "reinstall paneward[fleet] so both come from the same release")
    return wanted


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _connect_lake(location: DuckLakeLocation, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    con = _quiet(duckdb.connect(config={"autoinstall_known_extensions": "false",
                                        "autoload_known_extensions": "false"}))
    try:
        attach(con, location, CATALOG, read_only=read_only)
        con.execute(f"USE {CATALOG}")
    except BaseException:
        con.close()
        raise
    return con


def attach(con: duckdb.DuckDBPyConnection, location: WarehouseLocation, alias: str, *, read_only: bool) -> None:
    """Attach a warehouse to an open connection under ``alias`` (a DuckLake's extensions are
    loaded from the installed packages first)."""
    if not isinstance(location, DuckLakeLocation):
        try:
            con.execute(f"ATTACH {_sql_string(str(location))} AS {alias}" + (" (READ_ONLY)" if read_only else ""))
        except duckdb.IOException as exc:
            if _is_lock_error(exc):
                raise WarehouseLocked(str(location), _lock_holder(str(exc))) from exc
            raise _open_error(Path(location), exc) from exc
        except duckdb.Error as exc:
            raise _open_error(Path(location), exc) from exc
        return
    files = [extension_file(pkg, name) for pkg, name in _EXTENSIONS]
    try:
        for file in files:
            con.execute(f"LOAD {_sql_string(str(file))}")
        options = ["READ_ONLY"] if read_only else []
        if location.data_path:
            data_path = location.data_path
            if "://" not in data_path:
                folder = Path(data_path).expanduser().absolute()
                if not read_only:
                    folder.mkdir(parents=True, exist_ok=True)
                data_path = str(folder) + "/"
            options.append(f"DATA_PATH {_sql_string(data_path)}")
        statement = f"ATTACH {_sql_string('ducklake:postgres:' + location.conninfo)} AS {alias}"
        con.execute(statement + (f" ({', '.join(options)})" if options else ""))
    except duckdb.Error as exc:
        raise _lake_error(location, exc) from exc


def _lake_error(location: DuckLakeLocation, exc: BaseException) -> WarehouseError:
    text = hide_password(" ".join(str(exc).split()))
    if "creating a new DuckLake is explicitly disabled" in text:
        return WarehouseError(f"the DuckLake {location} holds no warehouse yet",
                              "run `supervisor warehouse sync` once to create it")
    if "DATA_PATH" in text or "data path" in text.lower():
        return WarehouseError(f"the DuckLake {location} has no data path yet: {text[:200]}",
                              "add data_path=FOLDER (a folder every host mounts, or an object store URL) "
                              "to SUPERVISOR_WAREHOUSE the first time")
    return WarehouseError(f"cannot open the DuckLake {location}: {text[:300]}",
                          "check that PostgreSQL is running and SUPERVISOR_WAREHOUSE's dbname/host/port/user "
                          "(the database must exist: createdb NAME)")


# --------------------------------------------------------------------------- schema without keys

_TABLE_KEY = re.compile(r",\s*(?:PRIMARY\s+KEY|UNIQUE)\s*\([^)]*\)", re.IGNORECASE)
_COLUMN_KEY = re.compile(r"\s+(?:PRIMARY\s+KEY|UNIQUE)\b", re.IGNORECASE)
_INDEX = re.compile(r"CREATE\s+(?:UNIQUE\s+)?INDEX\b[^;]*;?", re.IGNORECASE)


def keyless(sql: str) -> str:
    """DDL as a DuckLake takes it: no indexes, no primary keys or unique constraints (a column
    key becomes ``NOT NULL``, which is what it implied). Uniqueness is the writers' job: ingest
    inserts what is not there yet (anti-joins by id) and its transactions conflict with each
    other, so concurrent writers never both insert one row."""
    sql = _INDEX.sub("", sql)
    sql = _TABLE_KEY.sub("", sql)
    return _COLUMN_KEY.sub(" NOT NULL", sql)


class KeylessConnection:
    """A connection whose ``execute`` applies :func:`keyless` first: migrations written for a
    DuckDB file run unchanged on a DuckLake."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def execute(self, sql: str, parameters: Any = None) -> duckdb.DuckDBPyConnection:
        return self._con.execute(keyless(sql), parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


# --------------------------------------------------------------------------- commit conflicts


def rollback(con: Any) -> None:
    """Roll back, unless the failed statement was the COMMIT itself (a DuckLake commit that
    conflicted has already ended its transaction: there is nothing left to roll back)."""
    try:
        con.execute("ROLLBACK")
    except duckdb.TransactionException as exc:
        log.debug("nothing to roll back: %s", exc)


def is_conflict(exc: BaseException) -> bool:
    """A DuckLake commit that lost to a concurrent one (run the unit of work again)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, duckdb.TransactionException) and (
                "conflict" in str(seen).lower() or "Failed to commit DuckLake transaction" in str(seen)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def retry_conflicts(work: Callable[[], T], *, what: str, location: WarehouseLocation, patience_s: float = 90.0,
                    first_delay_s: float = 0.05, max_delay_s: float = 2.0) -> T:
    """Run ``work`` until it commits without a conflict, backing off with jitter between tries.
    A writer with a long backlog can lose many races in a row to writers committing small
    transactions, so it keeps trying for ``patience_s`` seconds (not a number of tries); then
    :class:`WarehouseBusy` (journals keep every event: the next sync tries again). ``work`` must
    be safe to run again: it reads what is committed each time."""
    started = time.monotonic()
    delay = first_delay_s
    attempt = 1
    while True:
        try:
            return work()
        except duckdb.Error as exc:
            if not is_conflict(exc):
                raise
            if time.monotonic() - started >= patience_s:
                raise WarehouseBusy(str(location), what, attempt) from exc
            log.info("%s: commit conflict with another writer (try %d): %s", what, attempt,
                     str(exc).splitlines()[-1][:200])
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, max_delay_s)
        attempt += 1


# --------------------------------------------------------------------------- writers coordinated

LOCK_WAIT_S = 120.0
"""How long an ingest waits for another writer's lock before it gives up (:class:`WarehouseBusy`)."""
_LOCKS_ALIAS = "paneward_locks"


def lock_key(name: str) -> int:
    """A PostgreSQL advisory lock key (a signed 64-bit integer) for a name: the same on every host."""
    digest = hashlib.sha256(b"paneward-ingest\0" + name.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


FLEET_KEY = lock_key("fleet")
"""Held shared by every ingest for its whole chunk, exclusively by ``warehouse migrate --to`` (which
copies whole tables and must not interleave with anyone)."""
SHARED_KEY = lock_key("shared tables")
"""Held by one writer at a time for the tables every host writes the same rows into (screens and
policies by content, run summaries, ingest state): the short second transaction of a chunk."""


class LocksBusy(WarehouseBusy):
    """Another writer held the locks this ingest needs for :data:`LOCK_WAIT_S`: like a locked
    file, the events stay in the journals for the next sync."""

    def __init__(self, location: str) -> None:
        WarehouseError.__init__(
            self, f"another writer into {location} held the locks of these runs for {LOCK_WAIT_S:g} s",
            "another supervisor is ingesting the same runs; journals keep every event and the next "
            "`supervisor warehouse sync` ingests them")
        self.path = location
        self.holder = None


class IngestLocks:
    """How writers into one warehouse stay out of each other's way.

    A DuckDB file has one writer at a time (its lock), so there is nothing to coordinate and every
    method does nothing. A DuckLake takes PostgreSQL advisory locks in the catalog's database: a
    lock per run for the events of that run (hosts write different runs, so they never wait for
    each other, and appends to one table never conflict in DuckLake), and one short lock for the
    shared tables. Locks are transaction-scoped on a connection of their own, so they are held
    until :meth:`release` (after the warehouse transactions committed) and vanish with the
    process if it dies. Every writer takes them in one order (fleet, then runs by key, then the
    shared tables), so no two writers can deadlock."""

    def __init__(self, con: duckdb.DuckDBPyConnection | None = None,
                 location: DuckLakeLocation | None = None) -> None:
        self._con = con
        self._location = location
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._held: set[int] = set()

    @property
    def active(self) -> bool:
        return self._con is not None

    def _take(self, keys: Iterable[int], *, shared: bool = False) -> None:
        if self._con is None or self._location is None:
            return
        wanted = sorted(set(keys) - self._held)
        if not wanted:
            return
        if self._cursor is None:
            self._con.execute(f"ATTACH IF NOT EXISTS {_sql_string(self._location.conninfo)} AS {_LOCKS_ALIAS} "
                              "(TYPE postgres)")
            self._cursor = self._con.cursor()
        if not self._held:
            self._cursor.execute("BEGIN TRANSACTION")
        fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        values = ", ".join(f"({k}::bigint)" for k in wanted)
        query = (f"SELECT set_config('lock_timeout', '{int(LOCK_WAIT_S * 1000)}', true) AS t, count({fn}(k)) AS n "
                 f"FROM (SELECT k FROM (VALUES {values}) AS v(k) ORDER BY k) AS ordered")
        try:
            self._cursor.execute(f"SELECT * FROM postgres_query('{_LOCKS_ALIAS}', {_sql_string(query)})").fetchall()
        except duckdb.Error as exc:
            self.release()
            if "lock timeout" in str(exc).lower() or "canceling statement" in str(exc).lower():
                raise LocksBusy(str(self._location)) from exc
            raise _lake_error(self._location, exc) from exc
        self._held.update(wanted)

    def fleet(self, *, exclusive: bool = False) -> None:
        """The fleet lock: shared by ingests, exclusive for a whole-warehouse copy."""
        self._take([FLEET_KEY], shared=not exclusive)

    def runs(self, run_ids: Iterable[str]) -> None:
        """The locks of these runs (after :meth:`fleet`, before :meth:`shared_tables`)."""
        self.fleet()
        self._take(lock_key("run:" + r) for r in run_ids)

    def shared_tables(self) -> None:
        """The shared tables' lock (taken last)."""
        self.fleet()
        self._take([SHARED_KEY])

    def release(self) -> None:
        """Let every lock go (ends the lock connection's transaction)."""
        if self._cursor is not None and self._held:
            self._held.clear()
            try:
                self._cursor.execute("ROLLBACK")
            except duckdb.Error as exc:  # the locks go with the PostgreSQL transaction, whatever happened
                log.debug("releasing ingest locks: %s", exc)
                self._cursor.close()
                self._cursor = None
        self._held.clear()

    def close(self) -> None:
        self.release()
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None


def ingest_locks(con: duckdb.DuckDBPyConnection, location: WarehouseLocation) -> IngestLocks:
    """The locks writers of ``location`` coordinate with (none for a DuckDB file)."""
    if isinstance(location, DuckLakeLocation):
        return IngestLocks(con, location)
    return IngestLocks()
