"""The DuckDB warehouse: idempotent ingest, torn tails, locks held by another process, migrations."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from supervisor.errors import WarehouseError, WarehouseLocked
from supervisor.journal import Journal
from supervisor.settings import Settings
from supervisor.warehouse import MIGRATIONS, open_warehouse, sync, try_sync
from tests.helpers import retry_until


def _write_run(settings: Settings, run_id: str, n_obs: int = 3) -> Journal:
    j = Journal(settings.journal_path(run_id), run_id)
    j.append("run_started", {"command": ["claude"], "pane_id": "%1", "agent": "claude", "policy_id": "pol_a"})
    for i in range(n_obs):
        o = j.append("observation", {
            "observation": {"screen_hash": f"h{i % 2}", "state": "asking", "agent": "claude",
                            "prompt": {"kind": "tool_permission", "question": "Do you want to proceed?",
                                       "risk": {"level": "none"}}},
            "pane_id": "%1", "screen": {"text": f"screen {i % 2}", "width": 80, "height": 24}})
        j.append("decision", {"decision": {"kind": "answer", "keys": ["1"], "approves": True, "reason": "ok",
                                           "trigger_id": o.event_id}})
    j.append("friction", {"kind": "repeated_prompt", "detail": "same prompt twice", "seconds_lost": 2.5})
    return j


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home").ensure()


def test_ingest_is_idempotent(settings: Settings) -> None:
    _write_run(settings, "run_A").close()
    first = sync(settings)
    assert first.new_events == 8
    second = sync(settings)
    assert second.new_events == 0
    # Even a forgotten offset (journal re-read from byte 0) inserts nothing twice.
    with open_warehouse(settings.warehouse) as wh:
        wh.con.execute("DELETE FROM ingest_state")
        again = wh.ingest_dir(settings.journals_dir)
        assert again.new_events == 0
        stats = wh.stats()
    assert stats["events"] == 8 and stats["observations"] == 3 and stats["decisions"] == 3
    assert stats["screens"] == 2  # content-addressed: stored once per hash
    assert stats["runs"] == 1 and stats["friction"] == 1


def test_typed_tables_link_decisions_to_observations(settings: Settings) -> None:
    _write_run(settings, "run_L").close()
    sync(settings)
    with open_warehouse(settings.warehouse, read_only=True) as wh:
        joined = wh.sql("SELECT count(*) AS n FROM answered_prompts WHERE question = 'Do you want to proceed?'")
        runs = wh.runs_df()
        obs = wh.observations_df("run_L")
        fr = wh.friction_df()
    assert joined["n"][0] == 3
    assert runs["run_id"].to_list() == ["run_L"] and runs["answers"][0] == 3
    assert {"observation_id", "run_id", "screen_hash"} <= set(obs.columns)
    assert {"friction_id", "run_id"} <= set(fr.columns) and fr["seconds_lost"][0] == 2.5


def test_torn_tail_waits_for_completion(settings: Settings) -> None:
    j = _write_run(settings, "run_T", n_obs=1)
    j.close()
    path = settings.journal_path("run_T")
    line = '{"event_id":"01ZZZZZZZZZZZZZZZZZZZZZZZZ","run_id":"run_T","seq":99,"kind":"note","at":1.0,"payload":{}}'
    with open(path, "a") as fh:
        fh.write(line[:30])
    report = sync(settings)
    assert report.torn_tails == [str(path)]
    assert report.new_events == 4
    with open(path, "a") as fh:  # the writer finishes its line
        fh.write(line[30:] + "\n")
    report = sync(settings)
    assert report.new_events == 1 and not report.torn_tails


def test_bad_lines_are_counted_not_fatal(settings: Settings) -> None:
    _write_run(settings, "run_X", n_obs=1).close()
    with open(settings.journal_path("run_X"), "a") as fh:
        fh.write("garbage\n{\"valid_json\": \"but not an event\"}\n")
    report = sync(settings)
    assert report.new_events == 4
    assert report.bad_lines == {str(settings.journal_path("run_X")): 2}


HOLDER = textwrap.dedent("""
    import duckdb, sys, time
    con = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    sys.stdin.readline()   # hold the lock until the test says so
    con.close()
""")


def test_lock_held_by_another_process_loses_nothing(settings: Settings) -> None:
    j = _write_run(settings, "run_K", n_obs=1)
    sync(settings)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(settings.warehouse)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        # Events keep arriving while the warehouse is locked: the journal takes them all.
        for i in range(20):
            j.append("friction", {"kind": "stall", "detail": f"while locked {i}"})
        assert try_sync(settings) is None
        with pytest.raises(WarehouseLocked) as info:
            sync(settings)
        assert f"PID {holder.pid}" in info.value.one_line()
        # Readers retry briefly, then say who holds it.
        with pytest.raises(WarehouseLocked), open_warehouse(settings.warehouse, read_only=True, wait_s=0.3):
            pass
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    j.close()
    report = retry_until(lambda: try_sync(settings), seconds=10, message="the lock to be released")
    assert report.new_events == 20
    with open_warehouse(settings.warehouse, read_only=True) as wh:
        assert wh.stats()["friction"] == 21


def test_a_reader_waits_for_this_processs_own_writer(settings: Settings) -> None:
    """DuckDB refuses a read-only connection to a file this process holds open for writing (the feeder
    thread syncing while a command reads): the reader waits for it as for a lock, then reads."""
    import threading

    _write_run(settings, "run_W", n_obs=1).close()
    sync(settings)
    opened = threading.Event()
    release = threading.Event()

    def writer() -> None:
        with open_warehouse(settings.warehouse, read_only=False):
            opened.set()
            release.wait(30)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert opened.wait(30)
        with pytest.raises(WarehouseLocked) as info, open_warehouse(settings.warehouse, read_only=True, wait_s=0.3):
            pass
        assert "this process" in info.value.one_line()
        threading.Timer(0.5, release.set).start()
        with open_warehouse(settings.warehouse, read_only=True, wait_s=30) as wh:
            assert wh.stats()["events"] >= 1
    finally:
        release.set()
        t.join(30)


def test_migrations_bring_an_old_database_up_to_date(settings: Settings) -> None:
    _write_run(settings, "run_M", n_obs=2).close()
    with open_warehouse(settings.warehouse, read_only=False) as wh:
        pass
    # Make an "old" database: only the first migration applied, with data in it.
    old = settings.warehouse.with_name("old.duckdb")
    with duckdb.connect(str(old)) as con:
        from supervisor.warehouse.migrations import apply_migrations
        applied = apply_migrations(con, upto=1)
        assert applied == ["m0001_core_tables"]
        con.execute("INSERT INTO runs (run_id, agent) VALUES ('run_old', 'aider')")
    with pytest.raises(WarehouseError, match="schema version 1"), open_warehouse(old, read_only=True):
        pass
    with open_warehouse(old) as wh:
        versions = wh.sql("SELECT version, name FROM schema_migrations ORDER BY version")
        assert versions["version"].to_list() == list(range(1, len(MIGRATIONS) + 1))
        assert wh.sql("SELECT agent FROM run_summary WHERE run_id = 'run_old'")["agent"].to_list() == ["aider"]
    with open_warehouse(old) as wh:  # opening again applies nothing twice
        assert wh.migrate() == []


def test_not_a_warehouse_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "x.duckdb"
    bogus.write_text("this is not a database")
    with pytest.raises(WarehouseError) as info, open_warehouse(bogus):
        pass
    assert "\n" not in info.value.one_line()
