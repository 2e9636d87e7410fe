"""`make demo` (python -m supervisor.demo) runs non-interactively and tells the story it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path: Path, cli_env: dict[str, str]) -> None:
    home = tmp_path / "demo-home"
    out = subprocess.run([sys.executable, "-m", "supervisor.demo", "--home", str(home)], capture_output=True,
                         text=True, timeout=120, cwd=REPO, env=cli_env)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "answered with" in text and "ESCALATED" in text and "resumed" in text
    assert "outcome=finished" in text and "outcome=escalated" in text
    assert "supervisor runs show run_" in text
    assert "workflow demo: run run_" in text and "finished" in text and "1 failed -> retry" in text
    assert "reviewed by human" in text
    assert "stray keys (keys that reached an agent while no prompt was live): 0" in text
    assert len(list((home / "journals").glob("*.jsonl"))) == 3  # two live runs and the workflow run
    assert (home / "warehouse.duckdb").exists()
