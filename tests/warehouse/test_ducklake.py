"""The warehouse as a DuckLake (catalog in a real PostgreSQL, data as Parquet): the same code,
tables and DataFrames as the local DuckDB file; idempotent ingest; concurrent writers that
never duplicate an event; the setting, the CLI and the one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from evals import registry
from supervisor.cli import main as cli_main
from supervisor.errors import WarehouseError
from supervisor.policy import baseline_policy
from supervisor.settings import DuckLakeLocation, Settings, parse_warehouse
from supervisor.warehouse import open_warehouse, sync
from supervisor.warehouse.friction import friction_snapshot
from tests.warehouse.journals import write_run
from tests.warehouse.pg import PostgresServer

READERS = ["events_df", "observations_df", "decisions_df", "actions_df", "checkpoints_df", "verifications_df",
           "notifications_df", "friction_df", "shadow_decisions_df", "screens_df"]


def _frames(wh) -> dict[str, pl.DataFrame]:  # type: ignore[no-untyped-def]
    out = {name: getattr(wh, name)() for name in READERS}
    out["runs_df"] = wh.runs_df()
    with friction_snapshot(wh):
        out["friction_events"] = wh.sql("SELECT * EXCLUDE (derived) FROM friction_events ORDER BY friction_id")
        out["friction_by_kind"] = wh.sql("SELECT * FROM friction_by_kind ORDER BY kind")
    out["escalations"] = wh.sql("SELECT * FROM escalations ORDER BY decision_id")
    out["turns"] = wh.sql("SELECT * FROM turns ORDER BY event_id")
    return out


@pytest.mark.slow
def test_same_tables_and_frames_as_the_local_file(tmp_path: Path, lake: DuckLakeLocation) -> None:
    home = Settings(home=tmp_path / "home").ensure()
    for n in range(3):
        write_run(home, f"run_{n}", prompts=2 + n, at=1_700_000_000.0 + 100 * n).close()
    local = Settings(home=home.home, warehouse_path=tmp_path / "local.duckdb")
    shared = Settings(home=home.home, warehouse_path=lake)
    r_local, r_lake = sync(local), sync(shared)
    assert r_local.new_events == r_lake.new_events == 3 * 9 + 4 * (2 + 3 + 4)
    assert r_local.bad_lines == r_lake.bad_lines and sum(r_lake.bad_lines.values()) == 3
    with open_warehouse(local.warehouse, read_only=True) as a, open_warehouse(lake, read_only=True) as b:
        assert b.backend == "ducklake" and a.backend == "file"
        fa, fb = _frames(a), _frames(b)
        sa, sb = a.stats(), b.stats()
        assert a.skipped_lines() == b.skipped_lines()
    assert sa == sb and sb["events"] == r_lake.new_events
    for name in fa:
        assert fa[name].height > 0 or name == "turns", name
        assert fa[name].schema == fb[name].schema, name
        assert fa[name].equals(fb[name]), name


def test_ingest_is_idempotent_and_keeps_each_event_once(tmp_path: Path, lake: DuckLakeLocation) -> None:
    s = Settings(home=tmp_path / "home", warehouse_path=lake).ensure()
    j = write_run(s, "run_A")
    assert sync(s).new_events == 21
    assert sync(s).new_events == 0
    j.append("note", {"text": "late"})
    j.close()
    assert sync(s).new_events == 1
    with open_warehouse(lake) as wh:
        wh.con.execute("DELETE FROM ingest_state")  # a forgotten offset: the journal is read again
        assert wh.ingest_dir(s.journals_dir).new_events == 0
        dupes = wh.sql("SELECT event_id FROM events GROUP BY event_id HAVING count(*) > 1")
        per_table = wh.sql("SELECT (SELECT count(*) FROM observations) AS o, (SELECT count(DISTINCT observation_id) "
                           "FROM observations) AS uo, (SELECT count(*) FROM runs) AS r, "
                           "(SELECT count(*) FROM ingest_state) AS st, (SELECT count(*) FROM ingest_rejects) AS rj")
    assert dupes.height == 0
    assert per_table.row(0) == (3, 3, 1, 1, 1)


HOST = textwrap.dedent("""
    import logging, sys
    from pathlib import Path
    from supervisor.settings import Settings, parse_warehouse
    from supervisor.warehouse import ingest, sync
    conflicts = []
    class Count(logging.Handler):
        def emit(self, record):
            if "commit conflict" in record.getMessage():
                conflicts.append(record.getMessage())
    logging.getLogger("supervisor.warehouse.backend").addHandler(Count())
    logging.getLogger("supervisor.warehouse.backend").setLevel(logging.INFO)
    ingest.CHUNK_LINES = 10  # one journal per transaction: the writers' commits interleave
    s = Settings(home=Path(sys.argv[1]), warehouse_path=parse_warehouse(sys.argv[2]))
    total = 0
    for _ in range(int(sys.argv[3])):
        total += sync(s).new_events
    print(total, len(conflicts))
""")


@pytest.mark.slow
def test_hosts_ingesting_the_same_journals_at_once_insert_each_event_once(
        tmp_path: Path, lake: DuckLakeLocation) -> None:
    """Four processes ingest the same journals into one DuckLake at the same moment (a home on
    a shared disk, or journals copied between hosts): each waits for the runs' locks the one
    ingesting them holds, finds their events stored and inserts none of them again, so every
    event is there exactly once, however the commits interleave, and no commit is redone."""
    s = Settings(home=tmp_path / "home", warehouse_path=lake).ensure()
    for n in range(4):
        write_run(s, f"run_{n}", prompts=5, at=1_700_000_000.0 + 100 * n).close()
    with open_warehouse(lake):
        pass  # created once, so the writers race on ingest rather than on creating the schema
    procs = [subprocess.Popen([sys.executable, "-c", HOST, str(s.home), lake.spec, "2"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-2000:] for _, e in outs]
    inserted = [int(o.split()[0]) for o, _ in outs]
    assert [int(o.split()[1]) for o, _ in outs] == [0, 0, 0, 0]  # no writer redid a commit
    expected = 4 * (9 + 4 * 5)
    assert sum(inserted) == expected  # between them they inserted (and reported) each event once
    with open_warehouse(lake, read_only=True) as wh:
        counts = wh.sql("SELECT count(*) AS n, count(DISTINCT event_id) AS ids FROM events").row(0)
        obs = wh.sql("SELECT count(*) AS n, count(DISTINCT observation_id) AS ids FROM observations").row(0)
        runs = wh.sql("SELECT count(*) AS n, count(DISTINCT run_id) AS ids, sum(events) AS ev FROM runs").row(0)
    assert counts == (expected, expected)
    assert obs == (20, 20)
    assert runs == (4, 4, expected)


def test_one_setting_switches_the_cli_to_the_ducklake(tmp_path: Path, lake: DuckLakeLocation,
                                                       postgres: PostgresServer) -> None:
    home = tmp_path / "home"
    s = Settings(home=home).ensure()
    write_run(s, "run_cli").close()
    secret = DuckLakeLocation(lake.conninfo + " password=hunter2", lake.data_path)
    env = {"SUPERVISOR_HOME": str(home), "SUPERVISOR_WAREHOUSE": secret.spec}
    runner = CliRunner()
    shown = runner.invoke(cli_main, ["warehouse", "path"], env=env)
    assert shown.exit_code == 0 and "ducklake:postgres:" in shown.output
    assert "hunter2" not in shown.output and "password=***" in shown.output
    synced = runner.invoke(cli_main, ["warehouse", "sync", "--json"], env=env)
    assert synced.exit_code == 0, synced.output
    assert json.loads(synced.output)["new_events"] == 21
    stats = runner.invoke(cli_main, ["warehouse", "stats", "--json"], env=env)
    assert stats.exit_code == 0 and json.loads(stats.output)["events"] == 21
    # the flag does the same, and wins over the environment
    flagged = runner.invoke(cli_main, ["--warehouse", lake.spec, "warehouse", "sql", "--json",
                                       "SELECT count(*) AS n FROM runs"], env={**env, "SUPERVISOR_WAREHOUSE": "x.db"})
    assert flagged.exit_code == 0, flagged.output
    assert json.loads(flagged.output) == [{"n": 1}]
    assert not (home / "warehouse.duckdb").exists() and not Path("x.db").exists()
    # the data is Parquet under the data path; the catalog is in PostgreSQL
    assert list(Path(str(lake.data_path)).rglob("*.parquet"))
    dbname = lake.conninfo.split()[0].split("=")[1]
    assert int(postgres.psql("SELECT count(*) FROM ducklake_table", dbname)) >= 20


def test_unreachable_catalog_is_a_one_line_error(tmp_path: Path, postgres: PostgresServer) -> None:
    gone = DuckLakeLocation(f"dbname=no_such_db host={postgres.socket_dir} port=5432 user=lake password=pw",
                            str(tmp_path / "d"))
    with pytest.raises(WarehouseError) as err, open_warehouse(gone):
        pass
    line = err.value.one_line()
    assert "no_such_db" in line and "createdb" in line and "pw" not in line.replace("password=***", "")
    assert "\n" not in line
    env = {"SUPERVISOR_HOME": str(tmp_path / "home"), "SUPERVISOR_WAREHOUSE": gone.spec}
    out = CliRunner().invoke(cli_main, ["warehouse", "sync"], env=env)
    assert out.exit_code == 4 and "createdb" in out.output


def test_a_new_catalog_says_how_to_create_it(postgres: PostgresServer) -> None:
    fresh = postgres.location(postgres.create_database("nodata"), None)
    with pytest.raises(WarehouseError) as err, open_warehouse(fresh):
        pass
    assert "data_path=" in err.value.one_line()
    with pytest.raises(WarehouseError) as empty, open_warehouse(fresh, read_only=True):
        pass
    assert "holds no warehouse yet" in empty.value.one_line() and "warehouse sync" in empty.value.one_line()


def test_settings_read_the_ducklake_setting() -> None:
    loc = parse_warehouse("ducklake:postgres:dbname=paneward host=db.internal user=sup data_path=/mnt/lake/")
    assert loc == DuckLakeLocation("dbname=paneward host=db.internal user=sup", "/mnt/lake/")
    assert parse_warehouse(loc.spec) == loc
    assert parse_warehouse("~/w.duckdb") == Path(os.path.expanduser("~/w.duckdb"))
    with pytest.raises(Exception, match="keyword=value"):
        parse_warehouse("ducklake:postgres:paneward")
    with pytest.raises(Exception, match="unsupported DuckLake catalog"):
        parse_warehouse("ducklake:mysql:db=x")


@pytest.mark.slow
def test_migrate_copies_a_local_warehouse_over_idempotently(tmp_path: Path, lake: DuckLakeLocation) -> None:
    home = Settings(home=tmp_path / "home").ensure()
    for n in range(2):
        write_run(home, f"run_{n}", at=1_700_000_000.0 + 100 * n).close()
    local = Settings(home=home.home)
    sync(local)
    env = {"SUPERVISOR_HOME": str(home.home)}
    runner = CliRunner()
    first = runner.invoke(cli_main, ["warehouse", "migrate", "--to", lake.spec, "--json"], env=env)
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    tables = {t["table"]: t for t in report["tables"]}
    assert report["complete"] and tables["events"]["copied"] == tables["events"]["source_rows"] == 42
    assert all(t["missing"] == 0 and t["target_rows"] == t["source_rows"] for t in report["tables"])
    assert tables["ingest_state"]["copied"] == 2 and tables["ingest_rejects"]["copied"] == 2
    again = runner.invoke(cli_main, ["warehouse", "migrate", "--to", lake.spec], env=env)
    assert again.exit_code == 0 and "copied 0 rows" in again.output and "events" in again.output
    # switched over: the copied ingest state means no journal line is read again
    write_run(home, "run_after", at=1_700_001_000.0).close()
    assert sync(Settings(home=home.home, warehouse_path=lake)).new_events == 21
    with open_warehouse(local.warehouse, read_only=True) as a, open_warehouse(lake, read_only=True) as b:
        assert b.sql("SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM events").row(0) == (63, 63)
        assert a.events_df().equals(b.events_df().filter(pl.col("run_id") != "run_after"))
        assert b.runs_df().height == 3
    same = runner.invoke(cli_main, ["--warehouse", lake.spec, "warehouse", "migrate", "--to", lake.spec], env=env)
    assert same.exit_code == 2 and "already" in same.output


@pytest.mark.slow
def test_the_registry_and_canaries_are_shared_by_every_host_of_the_catalog(
        tmp_path: Path, lake: DuckLakeLocation) -> None:
    """One host promotes a policy and puts a candidate on canary; another host (its own home and
    cache, the same catalog) starts its new runs under that policy, carrying that canary; a
    rollback on a third host reaches everyone."""
    base = baseline_policy()
    promoted, canary = base.model_copy(deep=True), base.model_copy(deep=True)
    promoted.timing.stall_timeout_s, canary.timing.stall_timeout_s = 901.0, 1201.0
    promoted.name, canary.name = "calm", "calmer"
    a, b, c = (Settings(home=tmp_path / h, warehouse_path=lake).ensure() for h in ("a", "b", "c"))
    assert registry.policies_for_new_run(b, "run_1").acting.policy_id == base.policy_id
    registry.promote(a, "calm", promoted, approved_by="ana", force=True, reason="fleet rollout")
    registry.start_canary(a, "calmer", canary, by="ana")
    for host in (b, c):
        chosen = registry.policies_for_new_run(host, "run_2")
        assert chosen.acting.policy_id == promoted.policy_id and chosen.acting_source == "promoted calm"
        assert [p.policy_id for p in chosen.shadows] == [canary.policy_id]
    assert registry.registry_state(b).source == "warehouse"
    registry.rollback(c, by="cy", reason="slower")
    assert registry.policies_for_new_run(b, "run_3").acting.policy_id == base.policy_id
    assert not (tmp_path / "a" / "warehouse.duckdb").exists()


HOLDER = textwrap.dedent("""
    import sys, time
    from supervisor.settings import parse_warehouse
    from supervisor.warehouse import open_warehouse
    with open_warehouse(sys.argv[1]) as wh:
        wh.locks.runs(["run_held"])
        wh.locks.shared_tables()
        print("held", flush=True)
        time.sleep(600)
""")


@pytest.mark.slow
def test_a_killed_writers_locks_go_with_it(tmp_path: Path, lake: DuckLakeLocation,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer killed while it holds a run's lock and the shared tables' lock (SIGKILL: nothing
    released by hand) holds nobody up: PostgreSQL drops its locks with its connection, and the
    next sync of that run ingests everything."""
    from supervisor.warehouse import backend

    s = Settings(home=tmp_path / "home", warehouse_path=lake).ensure()
    write_run(s, "run_held", prompts=2).close()
    with open_warehouse(lake):
        pass
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, lake.spec], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(backend, "LOCK_WAIT_S", 2.0)
        with pytest.raises(WarehouseError, match="held the locks of these runs"):  # this writer gives up, says why
            sync(s)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    monkeypatch.setattr(backend, "LOCK_WAIT_S", 60.0)
    assert sync(s).new_events == 9 + 4 * 2
