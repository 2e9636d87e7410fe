"""`supervisor notes|friction|prefs`: what people record by hand reaches the ledger, the warehouse,
`runs why`, `runs show` and the friction report, through the CLI against a real DuckDB file."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from supervisor import ledger
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse
from tests.conftest import invoke_cli
from tests.warehouse.journals import write_run


def _settings(sv_home: Path) -> Settings:
    return Settings(home=sv_home).ensure()


def test_notes_by_type_and_run(sv_home: Path) -> None:
    s = _settings(sv_home)
    write_run(s, "run_alpha", at=time.time() - 60).close()
    assert invoke_cli("notes", "add", "deploys freeze at 5pm", "--type", "policy", "--by", "ana").returncode == 0
    r = invoke_cli("notes", "add", "agent asked about the schema twice; token sk-ant-api03-" + "x" * 40,
                   "--run", "alpha", "--by", "bo")
    assert r.returncode == 0 and "added to run_alpha" in r.stdout, r.stderr
    r = invoke_cli("notes", "list")
    assert "[policy] ana: deploys freeze at 5pm" in r.stdout
    assert "[info] bo on run_alpha: agent asked about the schema twice" in r.stdout
    assert "sk-ant-api03-xxxx" not in r.stdout and "sk-ant-api03-xxxx" not in s.annotations_path.read_text(), \
        "secrets are redacted before the note is stored"
    r = invoke_cli("notes", "list", "--run", "last", "--json")
    listed = json.loads(r.stdout)
    assert [n["author"] for n in listed] == ["bo"] and listed[0]["after_seq"] > 0
    assert json.loads(invoke_cli("notes", "list", "--type", "policy", "--json").stdout)[0]["text"] == \
        "deploys freeze at 5pm"
    with open_warehouse(s.warehouse, read_only=True) as wh:
        assert wh.sql("SELECT count(*) AS n FROM notes")["n"][0] == 2
    r = invoke_cli("notes", "add", "x", "--run", "nosuchrun")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "supervisor runs" in r.stderr
    r = invoke_cli("notes", "add", "x", "--type", "not a name")
    assert r.returncode == 2 and "not a plain name" in r.stderr
    assert len(list(ledger.read(s.annotations_path))) == 2, "refused notes store nothing"


def test_friction_add_list_summarize_and_reports(sv_home: Path, tmp_path: Path) -> None:
    s = _settings(sv_home)
    write_run(s, "run_beta", at=time.time() - 60).close()
    r = invoke_cli("friction", "add", "--kind", "repeated_confirmation", "--message", "I had to approve twice",
                   "--signal", "user_repeated_approval", "--seconds-lost", "40", "--by", "ana")
    assert r.returncode == 0 and "recorded in run_beta" in r.stdout, r.stderr  # --run defaults to last
    r = invoke_cli("friction", "list", "--run", "beta", "--json")
    rows = json.loads(r.stdout)
    mine = [f for f in rows if f["recorded_by"] == "person"]
    assert len(mine) == 1 and mine[0]["kind"] == "repeated_confirmation" and mine[0]["seconds_lost"] == 40.0
    assert mine[0]["detail"] == "I had to approve twice (signal: user_repeated_approval)" and mine[0]["author"] == "ana"
    assert any(f["recorded_by"] == "supervisor" for f in rows), "the supervisor's own friction is listed with it"
    r = invoke_cli("friction", "summarize", "--run", "beta", "--json")
    summary = json.loads(r.stdout)
    by_kind = {(k["kind"], k["recorded_by"]): k for k in summary["by_kind"]}
    assert by_kind[("repeated_confirmation", "person")]["events"] == 1
    assert summary["total"]["seconds_lost"] >= 40.0
    r = invoke_cli("friction", "summarize", "--kind", "repeated_confirmation")
    assert r.returncode == 0 and "1 events, 40 s lost" in r.stdout
    r = invoke_cli("runs", "show", "beta", "--json")
    assert any(f["kind"] == "repeated_confirmation" for f in json.loads(r.stdout)["friction"])
    r = invoke_cli("report", "friction", "--out", str(tmp_path / "rep"), "--json")
    assert r.returncode == 0, r.stderr
    assert "repeated_confirmation" in r.stdout, "the friction report counts friction people recorded"
    r = invoke_cli("friction", "add", "--kind", "x", "--message", "m", "--run", "run_nope")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_prefs_and_runs_why_show_what_people_recorded(sv_home: Path) -> None:
    s = _settings(sv_home)
    assert invoke_cli("prefs", "set", "instruction_style", "terse", "--by", "ana").returncode == 0
    assert invoke_cli("prefs", "set", "escalate_via", "slack").returncode == 0
    assert invoke_cli("prefs", "set", "escalate_via", "").returncode == 0  # unset
    r = invoke_cli("prefs", "show", "--json")
    assert {k: v["value"] for k, v in json.loads(r.stdout).items()} == {"instruction_style": "terse"}
    # a run after the preference was set, and one long before it
    write_run(s, "run_gamma", at=time.time() + 30).close()
    write_run(s, "run_old", at=time.time() - 86400).close()
    assert invoke_cli("notes", "add", "watch the migration step", "--run", "gamma", "--by", "bo").returncode == 0
    assert invoke_cli("friction", "add", "--kind", "slow_start", "--message", "took 2 min to boot", "--run",
                      "gamma", "--by", "bo").returncode == 0
    r = invoke_cli("runs", "why", "gamma", "--json")
    assert r.returncode == 0, r.stderr
    x = json.loads(r.stdout)
    assert [(p["kind"], p["type"], p["text"]) for p in x["people"]] == [
        ("note", "info", "watch the migration step"), ("friction", "slow_start", "took 2 min to boot")]
    assert x["prefs"] == {"instruction_style": "terse"}
    r = invoke_cli("runs", "why", "gamma")
    assert "what people recorded about this run" in r.stdout and "preferences in effect then" in r.stdout
    assert "instruction_style = terse" in r.stdout
    x = json.loads(invoke_cli("runs", "why", "old", "--json").stdout)
    assert x["prefs"] == {} and x["people"] == [], "preferences set after a decision were not in effect then"


def test_ledger_survives_a_busy_warehouse_and_concurrent_writers(sv_home: Path) -> None:
    """A warehouse held by another writer (a notebook) delays ingest, never loses a record; two
    shells adding at once never interleave lines."""
    s = _settings(sv_home)
    write_run(s, "run_delta", at=time.time() - 5).close()
    invoke_cli("warehouse", "sync")
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); sys.stdin.read()", str(s.warehouse)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        r = invoke_cli("notes", "add", "while a notebook holds the file", "--run", "delta")
        assert r.returncode == 0 and "ingested at the next sync" in r.stderr

        def add(i: int) -> None:
            for j in range(20):
                ledger.append(s.annotations_path, ledger.Annotation(kind="note", author=f"t{i}",
                                                                              text=f"n{i}-{j}" * 50))

        threads = [threading.Thread(target=add, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        holder.communicate("", timeout=30)
    assert len(list(ledger.read(s.annotations_path))) == 81
    r = invoke_cli("notes", "list", "--run", "delta", "--json")
    assert len(json.loads(r.stdout)) == 1
    invoke_cli("warehouse", "sync")
    invoke_cli("warehouse", "sync")  # twice: idempotent
    with open_warehouse(s.warehouse, read_only=True) as wh:
        assert wh.sql("SELECT count(*) AS n FROM annotations")["n"][0] == 81
