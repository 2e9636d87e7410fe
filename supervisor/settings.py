"""Where things live. One per-user home holds journals and the warehouse, so runs of
every project land in one place; environment variables and CLI flags point elsewhere.

- ``SUPERVISOR_HOME``: the home folder (default: the per-user data dir,
  ``~/.local/share/supervisor`` on Linux). ``--home`` overrides.
- ``SUPERVISOR_WAREHOUSE``: the warehouse: a DuckDB file (default
  ``$SUPERVISOR_HOME/warehouse.duckdb``), or a DuckLake shared by a fleet of supervisors,
  ``ducklake:postgres:<libpq keywords> [data_path=<folder or URL>]`` (catalog in PostgreSQL, data
  as Parquet under the data path; see :class:`DuckLakeLocation`). ``--warehouse`` overrides.
- ``SUPERVISOR_TMUX_SOCKET``: the tmux socket *name* (``tmux -L``) to use; unset means the
  user's default server. ``--socket`` overrides.
- ``SUPERVISOR_POLICY``: a policy file to use instead of the promoted one.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

APP_NAME = "supervisor"
DUCKLAKE_PREFIX = "ducklake:"


@dataclass(frozen=True)
class DuckLakeLocation:
    """A warehouse kept as a DuckLake: the catalog in PostgreSQL, the data as Parquet files under
    ``data_path`` (a shared folder, or object storage). Every supervisor of a fleet names the same
    catalog and writes into it concurrently; readers see every host's runs.

    Written as one setting: ``ducklake:postgres:dbname=paneward host=db user=sup
    data_path=/mnt/lake/`` (libpq keywords; ``data_path`` is ours and only needed by the first
    host: the catalog remembers it)."""

    conninfo: str
    """libpq connection keywords of the PostgreSQL database holding the catalog."""
    data_path: str | None = None
    """Where the Parquet files go; None: where the catalog says (it is set when it is created)."""

    @property
    def spec(self) -> str:
        """The setting that names this location (password included: never print it)."""
        tail = f" data_path={shlex.quote(self.data_path)}" if self.data_path else ""
        return f"{DUCKLAKE_PREFIX}postgres:{self.conninfo}{tail}"

    def exists(self) -> bool:
        """A shared catalog is created by the first writer that opens it, so it is always there
        to be opened; whether it is reachable shows when it is opened."""
        return True

    def __str__(self) -> str:
        return hide_password(self.spec)


def hide_password(text: str) -> str:
    """``text`` with the value of every libpq ``password=`` keyword replaced by ``***``."""
    return re.sub(r"(password\s*=\s*)('[^']*'|[^\s\"]+)", r"\1***", text)


WarehouseLocation = Path | DuckLakeLocation
"""Where the warehouse is: a local DuckDB file or a DuckLake."""


def parse_warehouse(value: str) -> WarehouseLocation:
    """``ducklake:postgres:...`` is a DuckLake; anything else is a DuckDB file path."""
    from supervisor.errors import UsageError

    if not value.startswith(DUCKLAKE_PREFIX):
        return Path(value).expanduser()
    rest = value[len(DUCKLAKE_PREFIX):]
    if not rest.startswith("postgres:"):
        raise UsageError(f"unsupported DuckLake catalog in {value.split(' ')[0]!r}",
                         "use ducklake:postgres:dbname=NAME host=HOST user=USER data_path=FOLDER")
    try:
        words = shlex.split(rest[len("postgres:"):])
    except ValueError as exc:
        raise UsageError(f"cannot read the DuckLake setting: {exc}",
                         "write it as ducklake:postgres:dbname=NAME host=HOST data_path=FOLDER") from exc
    keep: list[str] = []
    data_path = None
    for word in words:
        key, eq, val = word.partition("=")
        if not eq or not key:
            raise UsageError(f"{word!r} in the DuckLake setting is not keyword=value",
                             "write it as ducklake:postgres:dbname=NAME host=HOST data_path=FOLDER")
        if key == "data_path":
            data_path = val
        else:
            keep.append(f"{key}={_conninfo_value(val)}")
    if not keep:
        raise UsageError("the DuckLake setting names no PostgreSQL database",
                         "add dbname=NAME (and host=, port=, user= as needed)")
    return DuckLakeLocation(" ".join(keep), data_path)


def _conninfo_value(val: str) -> str:
    if val and not re.search(r"[\s'\\]", val):
        return val
    return "'" + val.replace("\\", "\\\\").replace("'", "\\'") + "'"


def user_name(default: str = "") -> str:
    """The login name of whoever runs this, or ``default`` where there is none (a container whose
    uid has no passwd entry and no ``$USER``): journals, approvals and the registry record it."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no name: OSError from Python 3.13, the passwd lookup's KeyError before
        return default


def default_home() -> Path:
    env = os.environ.get("SUPERVISOR_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


@dataclass(frozen=True)
class Settings:
    """Resolved locations and names for one invocation."""

    home: Path = field(default_factory=default_home)
    warehouse_path: WarehouseLocation | None = None
    tmux_socket: str | None = field(default_factory=lambda: os.environ.get("SUPERVISOR_TMUX_SOCKET") or None)
    policy_path: Path | None = field(
        default_factory=lambda: Path(p) if (p := os.environ.get("SUPERVISOR_POLICY")) else None
    )

    @property
    def warehouse(self) -> WarehouseLocation:
        """The local DuckDB file (a ``Path``) or the fleet's :class:`DuckLakeLocation`."""
        if self.warehouse_path is not None:
            return self.warehouse_path
        env = os.environ.get("SUPERVISOR_WAREHOUSE")
        if env:
            return parse_warehouse(env)
        return self.home / "warehouse.duckdb"

    @property
    def journals_dir(self) -> Path:
        return self.home / "journals"

    @property
    def registry_dir(self) -> Path:
        """Where the promotion registry keeps the promoted policy pointer."""
        return self.home / "registry"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def notifications_path(self) -> Path:
        return self.home / "notifications.jsonl"

    @property
    def annotations_path(self) -> Path:
        """The ledger of what people record by hand (notes, friction, preferences)."""
        return self.home / "annotations.jsonl"

    def journal_path(self, run_id: str) -> Path:
        return self.journals_dir / f"{run_id}.jsonl"

    def with_overrides(
        self,
        *,
        home: Path | None = None,
        warehouse: Path | str | DuckLakeLocation | None = None,
        socket: str | None = None,
        policy: Path | None = None,
    ) -> Settings:
        s = self
        if home is not None:
            s = replace(s, home=home.expanduser())
        if isinstance(warehouse, str):
            warehouse = parse_warehouse(warehouse)
        if isinstance(warehouse, Path):
            warehouse = warehouse.expanduser()
        if warehouse is not None:
            s = replace(s, warehouse_path=warehouse)
        if socket is not None:
            s = replace(s, tmux_socket=socket)
        if policy is not None:
            s = replace(s, policy_path=policy)
        return s

    def ensure(self) -> Settings:
        """Create the home's folders; a home that cannot hold them is a one-line error."""
        from supervisor.errors import EnvironmentProblem

        wh = self.warehouse
        for folder in (self.journals_dir, *([wh.parent] if isinstance(wh, Path) else [])):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise EnvironmentProblem(f"cannot create {folder}: {exc.strerror or exc}",
                                         "point --home (or SUPERVISOR_HOME) at a writable folder") from exc
        return self
