"""A real PostgreSQL server for the DuckLake tests and ``bench/fleet.py``: ``initdb`` + ``pg_ctl``
into a private folder, listening only on a Unix socket there (no TCP port to collide with),
stopped and removed afterwards.

PostgreSQL refuses to run as root (CI runs as root), so the server then runs as ``nobody``;
clients connect through the socket as the database user ``lake`` (trust authentication: the
socket is in a private folder). Where PostgreSQL is not installed (``make test`` and ``.ci/run``
install it with apt-get), or we are root with no other account to run it as,
:class:`PostgresUnavailable` says so; a server that is there but fails to start is an error."""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from supervisor.settings import DuckLakeLocation

PORT = 5432
"""Only names the socket file (``.s.PGSQL.5432``) in the private folder: no TCP is listened on."""
SERVER_USER = "nobody"
"""Who runs the server when we are root (initdb and postgres refuse root)."""


class PostgresUnavailable(RuntimeError):
    """PostgreSQL is not installed here, or cannot run (the message says which and what to do)."""


def pg_bin(name: str) -> str:
    """A PostgreSQL program: on PATH, else in the distribution's versioned folder."""
    found = shutil.which(name)
    if found:
        return found
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / name).exists():
            return str(folder / name)
    raise PostgresUnavailable(f"PostgreSQL's {name} is not installed (`make test` installs it: "
                              "apt-get install postgresql)")


@dataclass
class PostgresServer:
    """A running server: its socket folder and a way to make databases."""

    root: Path
    socket_dir: Path
    user: str = "lake"
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        out = subprocess.run([pg_bin("psql"), "-X", "-q", "-h", str(self.socket_dir), "-p", str(PORT), "-U",
                              self.user, "-d", dbname, "-tA", "-c", sql], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr.strip()}")
        return out.stdout.strip()

    def create_database(self, prefix: str = "lake") -> str:
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        self.psql(f"CREATE DATABASE {name}")
        return name

    def location(self, dbname: str, data_path: Path | None) -> DuckLakeLocation:
        return DuckLakeLocation(f"dbname={dbname} host={self.socket_dir} port={PORT} user={self.user}",
                                str(data_path) if data_path else None)


def _as_server_user() -> dict[str, object]:
    """subprocess options running PostgreSQL's programs as ``nobody`` when we are root."""
    if os.geteuid() != 0:
        return {}
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise PostgresUnavailable(f"running as root and there is no {SERVER_USER!r} account to run PostgreSQL as "
                                  "(initdb refuses root): add one, or run the tests as a normal user") from None
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def postgres_server(max_connections: int = 200) -> Iterator[PostgresServer]:
    """Start a private PostgreSQL server; stop and remove it on exit."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    owner = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="paneward-pg-"))
    data, sock = root / "data", root / "sock"
    data.mkdir()
    sock.mkdir()
    if owner:
        for p in (root, data, sock):
            os.chown(p, int(owner["user"]), int(owner["group"]))  # type: ignore[call-overload]
    log = root / "server.log"
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    try:
        made = subprocess.run([initdb, "-D", str(data), "-U", "lake", "--auth=trust", "-E", "UTF8", "--no-sync"],
                              capture_output=True, text=True, env=env, timeout=180, **owner)  # type: ignore[call-overload]
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()[-1000:]}")
        opts = f"-p {PORT} -k {sock} -c listen_addresses='' -c fsync=off -c max_connections={max_connections}"
        started = subprocess.run([pg_ctl, "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "120", "start"],
                                 capture_output=True, text=True, env=env, timeout=180, **owner)  # type: ignore[call-overload]
        if started.returncode != 0:
            detail = log.read_text(errors="replace")[-2000:] if log.exists() else started.stderr
            raise RuntimeError(f"PostgreSQL did not start: {detail}")
        try:
            yield PostgresServer(root, sock)
        finally:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                subprocess.run([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "-t", "60", "stop"],
                               capture_output=True, env=env, timeout=90, **owner)  # type: ignore[call-overload]
    finally:
        shutil.rmtree(root, ignore_errors=True)
