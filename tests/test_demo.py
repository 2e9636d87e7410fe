"""`make demo` (python -m supervisor.demo) runs non-interactively and tells the story it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The supervised half (the workbench walk has its own test: tests/test_demo_workbench.py)."""
    home = tmp_path / "demo-home"
    out = subprocess.run([sys.executable, "-m", "supervisor.demo", "--home", str(home), "--no-workbench"],
                         capture_output=True,
                         text=True, timeout=120, cwd=REPO, env=cli_env)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "answered with" in text and "ESCALATED" in text and "resumed" in text
    assert "outcome=finished" in text and "outcome=escalated" in text
    further = text.split("look further")[1]
    assert re.search(r"supervisor --home \S+ runs show [0-9A-Z]{8,} ", further), further  # short ids
    assert "run_" not in further, further
    assert "workflow demo: run " in text and "finished" in text and "1 failed -> retry" in text
    assert text.count("(shown in the pane with tmux display-message)") == 2, "once per escalation"
    assert "reviewed by human" in text
    assert "stray keys (keys that reached an agent while no prompt was live): 0" in text
    assert len(list((home / "journals").glob("*.jsonl"))) == 3  # two live runs and the workflow run
    assert (home / "warehouse.duckdb").exists()


@pytest.mark.slow
def test_demo_with_an_unreadable_warehouse_still_runs_and_says_what_to_do(tmp_path: Path,
                                                                         cli_env: dict[str, str]) -> None:
    """A home whose warehouse file cannot be opened (here: not a DuckDB file; in the field, one a
    newer DuckDB wrote) still gives the whole demo, journals every run, and says in one line how to
    rebuild the warehouse: no traceback."""
    home = tmp_path / "demo-home"
    home.mkdir()
    (home / "warehouse.duckdb").write_bytes(b"not a duckdb file\n" * 64)
    out = subprocess.run([sys.executable, "-m", "supervisor.demo", "--home", str(home)], capture_output=True,
                         text=True, timeout=120, cwd=REPO, env=cli_env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr
    assert "not updated: cannot open warehouse" in out.stdout and "move" in out.stdout, out.stdout
    assert "stray keys (keys that reached an agent while no prompt was live): 0" in out.stdout
    assert len(list((home / "journals").glob("*.jsonl"))) == 3
