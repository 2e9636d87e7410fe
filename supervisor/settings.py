"""Where things live. One per-user home holds journals and the warehouse, so runs of
every project land in one place; environment variables and CLI flags point elsewhere.

- ``SUPERVISOR_HOME``: the home folder (default: the per-user data dir,
  ``~/.local/share/supervisor`` on Linux). ``--home`` overrides.
- ``SUPERVISOR_WAREHOUSE``: the DuckDB file (default ``$SUPERVISOR_HOME/warehouse.duckdb``).
  ``--warehouse`` overrides.
- ``SUPERVISOR_TMUX_SOCKET``: the tmux socket *name* (``tmux -L``) to use; unset means the
  user's default server. ``--socket`` overrides.
- ``SUPERVISOR_POLICY``: a policy file to use instead of the promoted one.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

APP_NAME = "supervisor"


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
    warehouse_path: Path | None = None
    tmux_socket: str | None = field(default_factory=lambda: os.environ.get("SUPERVISOR_TMUX_SOCKET") or None)
    policy_path: Path | None = field(
        default_factory=lambda: Path(p) if (p := os.environ.get("SUPERVISOR_POLICY")) else None
    )

    @property
    def warehouse(self) -> Path:
        if self.warehouse_path is not None:
            return self.warehouse_path
        env = os.environ.get("SUPERVISOR_WAREHOUSE")
        if env:
            return Path(env).expanduser()
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

    def journal_path(self, run_id: str) -> Path:
        return self.journals_dir / f"{run_id}.jsonl"

    def with_overrides(
        self,
        *,
        home: Path | None = None,
        warehouse: Path | None = None,
        socket: str | None = None,
        policy: Path | None = None,
    ) -> Settings:
        s = self
        if home is not None:
            s = replace(s, home=home.expanduser())
        if warehouse is not None:
            s = replace(s, warehouse_path=warehouse.expanduser())
        if socket is not None:
            s = replace(s, tmux_socket=socket)
        if policy is not None:
            s = replace(s, policy_path=policy)
        return s

    def ensure(self) -> Settings:
        """Create the home's folders; a home that cannot hold them is a one-line error."""
        from supervisor.errors import EnvironmentProblem

        for folder in (self.journals_dir, self.warehouse.parent):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise EnvironmentProblem(f"cannot create {folder}: {exc.strerror or exc}",
                                         "point --home (or SUPERVISOR_HOME) at a writable folder") from exc
        return self
