"""`supervisor classify`: JSON lines, folder walking, the table, errors. In-process through click's
CliRunner (the CLI is a thin skin over classify and decide); one test runs the real entry point
as a subprocess."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from supervisor.cli import main
from tests.cases import screens as S
from tests.conftest import run_cli


def invoke(*args: str, env: dict[str, str] | None = None) -> SimpleNamespace:
    """The CLI in this process; ``env`` adds variables (COLUMNS for the table's width)."""
    res = CliRunner().invoke(main, list(args), env={k: v for k, v in (env or {}).items() if k == "COLUMNS"})
    return SimpleNamespace(returncode=res.exit_code, stdout=res.stdout, stderr=res.stderr)


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    root = tmp_path / "caps"
    (root / "b" / "deeper").mkdir(parents=True)
    (root / "a_prompt.txt").write_text(S.claude_bash_permission("npm test"), encoding="utf-8")
    (root / "b" / "busy.txt").write_text(S.CODEX_BUSY, encoding="utf-8")
    (root / "b" / "deeper" / "idle.txt").write_text(S.CLAUDE_IDLE, encoding="utf-8")
    (root / "b" / "notes.md").write_text("not a capture", encoding="utf-8")
    # with ANSI colours and cursor-forward spaces, as `tmux capture-pane -e` writes them
    (root / "c_ansi.txt").write_text(
        "\x1b[1m Do you want to proceed?\x1b[0m\n\x1b[36m❯\x1b[1C1.\x1b[1CYes\x1b[0m\n\x1b[3C2.\x1b[1CNo\n\n"
        " Esc\x1b[1Cto\x1b[1Ccancel\n", encoding="utf-8")
    (root / "d_danger.txt").write_text(S.codex_exec_approval("git push --force origin main"), encoding="utf-8")
    return root


def test_json_lines_for_a_folder_walked_recursively_in_order(captures: Path, cli_env: dict[str, str]) -> None:
    res = invoke("classify", "--json", str(captures), env=cli_env)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    names = [Path(r["path"]).relative_to(captures).as_posix() for r in rows]
    assert names == ["a_prompt.txt", "b/busy.txt", "b/deeper/idle.txt", "c_ansi.txt", "d_danger.txt"]
    for r in rows:
        assert set(r) >= {"path", "state", "agent", "prompt", "blocker", "decision"}
        assert set(r["decision"]) >= {"kind", "keys", "approves", "reason"}
    prompt, busy, idle, ansi, danger = rows
    assert prompt["state"] == "asking" and prompt["agent"] == "claude"
    assert prompt["prompt"]["kind"] == "tool_permission"
    assert prompt["decision"] == {**prompt["decision"], "kind": "answer", "keys": ["1"], "approves": True}
    assert busy["state"] == "busy" and busy["decision"]["kind"] == "wait" and busy["prompt"] is None
    assert idle["state"] == "idle" and idle["decision"]["kind"] == "finish"
    assert ansi["state"] == "asking" and ansi["prompt"]["options"][0]["label"] == "Yes"
    assert danger["prompt"]["risk"]["level"] == "dangerous"
    assert danger["decision"]["kind"] == "escalate" and danger["decision"]["approves"] is None


def test_blocker_is_reported(tmp_path: Path, cli_env: dict[str, str]) -> None:
    f = tmp_path / "limit.txt"
    f.write_text(S.CLAUDE_USAGE_LIMIT, encoding="utf-8")
    res = invoke("classify", "--json", str(f), env=cli_env)
    row = json.loads(res.stdout)
    assert row["state"] == "blocked"
    assert row["blocker"]["kind"] == "usage_limit"
    assert row["decision"]["kind"] == "escalate"


def test_table_output(captures: Path, cli_env: dict[str, str]) -> None:
    res = invoke("classify", str(captures / "a_prompt.txt"), str(captures / "b"), str(captures / "d_danger.txt"),
                  env={**cli_env, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert "asking" in res.stdout and "busy" in res.stdout and "tool_permission" in res.stdout
    assert "[risk: dangerous]" in res.stdout  # brackets in cells are shown, not eaten as markup


def test_custom_policy(tmp_path: Path, captures: Path, cli_env: dict[str, str]) -> None:
    pol = tmp_path / "p.yaml"
    pol.write_text("name: cautious\nanswers:\n  rules:\n    - {name: all-to-humans, then: escalate}\n",
                   encoding="utf-8")  # extends the baseline; its own rule comes first
    res = invoke("classify", "--json", "--policy", str(pol), str(captures / "a_prompt.txt"), env=cli_env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["decision"]["kind"] == "escalate"


def test_missing_path_is_one_line_with_a_fix(tmp_path: Path, cli_env: dict[str, str]) -> None:
    res = invoke("classify", str(tmp_path / "nope.txt"), env=cli_env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not exist" in lines[0] and "Traceback" not in res.stderr
    assert res.stdout == ""


def test_folder_without_captures_is_an_error(tmp_path: Path, cli_env: dict[str, str]) -> None:
    (tmp_path / "empty").mkdir()
    res = invoke("classify", str(tmp_path / "empty"), env=cli_env)
    assert res.returncode == 2
    assert "no .txt screen captures" in res.stderr


def test_bad_policy_is_one_line(tmp_path: Path, captures: Path, cli_env: dict[str, str]) -> None:
    pol = tmp_path / "bad.yaml"
    pol.write_text("classifier:\n  busy_markers: ['(unclosed']\n", encoding="utf-8")
    res = invoke("classify", "--policy", str(pol), str(captures), env=cli_env)
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "bad regular expression" in res.stderr


def test_help_explains_the_fresh_run_decision(cli_env: dict[str, str]) -> None:
    """The real entry point, as a user runs it (python -m supervisor)."""
    res = run_cli("classify", "--help", env=cli_env)
    assert res.returncode == 0
    assert "fresh run" in res.stdout and "--json" in res.stdout
