"""Fixtures of the command-judgment tests: a real git repository as the project."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@x", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with src/app.py and src/old.py committed and unchanged."""
    r = tmp_path / "proj"
    (r / "src").mkdir(parents=True)
    (r / "src" / "app.py").write_text("x = 1\n")
    (r / "src" / "old.py").write_text("y = 1\n")
    git(r, "init", "-q")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "init")
    return r
