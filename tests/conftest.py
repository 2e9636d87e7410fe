"""Fixtures shared by every test: a private tmux server per test, a private supervisor home."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def sv_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private SUPERVISOR_HOME (journals + warehouse) for one test."""
    home = tmp_path / "svhome"
    home.mkdir()
    monkeypatch.setenv("SUPERVISOR_HOME", str(home))
    monkeypatch.delenv("SUPERVISOR_WAREHOUSE", raising=False)
    monkeypatch.delenv("SUPERVISOR_POLICY", raising=False)
    return home


@pytest.fixture
def tmux_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private tmux server socket name (``tmux -L NAME``) for one test; the server is killed after."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: run `apt-get install -y tmux` (make test does it in CI)")
    name = f"svtest-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("SUPERVISOR_TMUX_SOCKET", name)
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def cli_env(sv_home: Path) -> dict[str, str]:
    """Environment for running the real `supervisor` CLI in a subprocess."""
    env = dict(os.environ)
    env["SUPERVISOR_HOME"] = str(sv_home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_cli(*args: str, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `python -m supervisor ARGS` as a real subprocess."""
    return subprocess.run([sys.executable, "-m", "supervisor", *args], capture_output=True, text=True,
                          env=env, input=input, timeout=timeout, cwd=REPO)
