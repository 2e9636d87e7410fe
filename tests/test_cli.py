"""The CLI skeleton: every command has help; bad input gives one line and a documented exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from supervisor.cli import COMMANDS, main
from supervisor.journal import Journal
from tests.conftest import invoke_cli, run_cli


def _sub(group: click.Group, name: str) -> click.Command:
    """The subcommand NAME of GROUP, loaded the way the CLI loads it (the root loads lazily)."""
    cmd = group.get_command(click.Context(group), name)
    assert cmd is not None, name
    return cmd


def _walk(cmd: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.list_commands(click.Context(cmd))):
            out.extend(_walk(_sub(cmd, name), (*path, name)))
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
        cmd = _sub(cmd, name)
    assert (cmd.help or "").strip(), f"`supervisor {' '.join(path)}` has no help text"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_root_help_summary_is_the_commands_own(name: str) -> None:
    """`supervisor --help` lists each command from COMMANDS without importing it: the stored summary
    must be the one the command's own help gives."""
    assert _sub(main, name).get_short_help_str(10_000) == COMMANDS[name][2]


HEAVY = ("polars", "duckdb", "pyarrow", "matplotlib", "anthropic", "libtmux", "supervisor.runner",
         "supervisor.classify", "supervisor.warehouse", "supervisor.models")


def test_help_imports_no_heavy_module() -> None:
    """Every command's --help starts without polars, DuckDB, the runner or the classifier (what made
    `supervisor --help` take 0.87 s); measured by bench/cli_start.py. A fresh interpreter, since
    this one has imported them all already. `run --help` is the one exception: it reads the
    registry to name the policy new runs use (issue 13)."""
    script = (
        "import sys\n"
        "from supervisor.cli import main\n"
        f"for path in {[[], *[[n] for n in sorted(COMMANDS) if n != 'run']]!r}:\n"
        "    main.main([*path, '--help'], standalone_mode=False)\n"
        f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "LOADED []", proc.stdout[-500:]


@pytest.mark.parametrize("args, code, fragment", [
    (["runs", "--bogus"], 2, "No such option"),
    (["runs", "show"], 2, "Missing argument"),
    (["runs", "--limit", "0"], 2, "--limit"),
    (["no-such-command"], 2, "No such command"),
    (["warehouse", "sql", "SELECT * FROM no_such_table"], 2, "query failed"),
])
def test_bad_arguments_give_one_line(cli_env: dict[str, str], args: list[str], code: int, fragment: str) -> None:
    invoke_cli("warehouse", "sync", env=cli_env)
    proc = invoke_cli(*args, env=cli_env)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_warehouse_is_exit_4(cli_env: dict[str, str]) -> None:
    proc = invoke_cli("warehouse", "stats", env=cli_env)
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
