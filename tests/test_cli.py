"""The CLI skeleton: every command has help; bad input gives one line and a documented exit code."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from supervisor.cli import main
from supervisor.journal import Journal
from tests.conftest import run_cli


def _walk(cmd: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            out.extend(_walk(sub, (*path, name)))
    return out


ALL_COMMANDS = _walk(main)


def test_the_expected_groups_exist() -> None:
    names = {p[0] for p in ALL_COMMANDS if p}
    assert {"warehouse", "runs", "run", "attach", "watch", "status", "classify", "eval", "spec", "skill",
            "report"} <= names
    assert {("warehouse", "path"), ("warehouse", "sync"), ("warehouse", "stats"), ("warehouse", "sql"),
            ("runs", "show")} <= set(ALL_COMMANDS)


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=lambda p: " ".join(p) or "supervisor")
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"], standalone_mode=False)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    cmd: click.Command = main
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    assert (cmd.help or "").strip(), f"`supervisor {' '.join(path)}` has no help text"


@pytest.mark.parametrize("args, code, fragment", [
    (["runs", "--bogus"], 2, "No such option"),
    (["runs", "show"], 2, "Missing argument"),
    (["runs", "--limit", "0"], 2, "--limit"),
    (["no-such-command"], 2, "No such command"),
    (["warehouse", "sql", "SELECT * FROM no_such_table"], 2, "query failed"),
])
def test_bad_arguments_give_one_line(cli_env: dict[str, str], args: list[str], code: int, fragment: str) -> None:
    run_cli("warehouse", "sync", env=cli_env)
    proc = run_cli(*args, env=cli_env)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_warehouse_is_exit_4(cli_env: dict[str, str]) -> None:
    proc = run_cli("warehouse", "stats", env=cli_env)
    assert proc.returncode == 4
    assert proc.stderr.strip().startswith("error: ") and "supervisor warehouse sync" in proc.stderr


def test_sync_runs_and_show_through_the_real_cli(cli_env: dict[str, str], sv_home: Path) -> None:
    j = Journal(sv_home / "journals" / "run_CLI1.jsonl", "run_CLI1")
    j.append("run_started", {"command": ["aider"], "agent": "aider", "pane_id": "%3"})
    o = j.append("observation", {"observation": {"screen_hash": "abc", "state": "asking", "agent": "aider"},
                                 "screen": {"text": "Run shell command? (Y)es/(N)o [Yes]:"}})
    j.append("decision", {"decision": {"kind": "answer", "keys": ["y", "Enter"], "approves": True,
                                       "reason": "benign", "trigger_id": o.event_id}})
    j.append("run_ended", {"outcome": "finished", "exit_code": 0})
    j.close()
    proc = run_cli("warehouse", "sync", "--json", env=cli_env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["new_events"] == 4
    proc = run_cli("runs", "--json", env=cli_env)
    runs = json.loads(proc.stdout)
    assert [r["run_id"] for r in runs] == ["run_CLI1"] and runs[0]["outcome"] == "finished"
    proc = run_cli("runs", "show", "run_CLI1", "--json", env=cli_env)
    shown = json.loads(proc.stdout)
    assert shown["run"]["agent"] == "aider"
    assert shown["decisions"][0]["keys"] == '["y","Enter"]' and shown["decisions"][0]["state"] == "asking"
    proc = run_cli("runs", "show", "run_NOPE", env=cli_env)
    assert proc.returncode == 2 and "supervisor runs" in proc.stderr
    proc = run_cli("warehouse", "sql", "SELECT count(*) AS n FROM events", "--json", env=cli_env)
    assert json.loads(proc.stdout) == [{"n": 4}]
    proc = run_cli("warehouse", "path", env=cli_env)
    assert proc.stdout.strip() == str(sv_home / "warehouse.duckdb")
