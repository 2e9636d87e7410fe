"""Fixtures of the DuckLake tests: one private PostgreSQL server per test session (see
:mod:`tests.warehouse.pg`) and one database on it per test.

Where PostgreSQL is not installed or cannot run, the DuckLake tests are skipped with the
reason (``make test`` and ``.ci/run`` install it with apt-get, so CI always runs them)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from supervisor.settings import DuckLakeLocation
from tests.warehouse.pg import PostgresServer, PostgresUnavailable, postgres_server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(postgres_server())
        except PostgresUnavailable as exc:
            pytest.skip(f"no PostgreSQL for the DuckLake tests: {exc}")
        yield server


@pytest.fixture
def lake(postgres: PostgresServer, tmp_path: Path) -> DuckLakeLocation:
    """A fresh DuckLake: its own database on the session's server, data under this test's tmp."""
    return postgres.location(postgres.create_database(), tmp_path / "lake-data")
