"""Verifiers against real subprocesses and real git repositories under tmp_path."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from supervisor.workflow.spec import (
    ArtifactVerifier,
    CommandVerifier,
    GitVerifier,
    PassedVerifier,
    WorkflowVerifier,
)
from supervisor.workflow.state import VerifierResult, WorkflowState
from supervisor.workflow.verifiers import OUTPUT_LIMIT, VerifierPool, run_verifier
from tests.helpers import retry_until


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "user.name", "T")
    (r / "a.txt").write_text("a\n")
    git(r, "add", "a.txt")
    git(r, "commit", "-qm", "init")
    return r


def test_command_pass_fail_contains(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello world\n")
    ok = run_verifier(CommandVerifier(id="c", run="cat f.txt"), tmp_path)
    assert ok.passed and ok.exit_code == 0 and "hello world" in ok.output and ok.cwd == str(tmp_path)
    bad = run_verifier(CommandVerifier(id="c", run="echo boom >&2; exit 3"), tmp_path)
    assert not bad.passed and bad.exit_code == 3 and "boom" in bad.output and "exited 3" in bad.detail
    assert run_verifier(CommandVerifier(id="c", run="exit 1", expect="fail"), tmp_path).passed
    assert run_verifier(CommandVerifier(id="c", run="cat f.txt", expect="contains:world"), tmp_path).passed
    assert not run_verifier(CommandVerifier(id="c", run="cat f.txt", expect="contains:mars"), tmp_path).passed


def test_command_timeout_kills_process_group(tmp_path: Path) -> None:
    r = run_verifier(CommandVerifier(id="slow", run="sleep 30 & sleep 30", timeout_s=0.5), tmp_path)
    assert not r.passed and r.timed_out and "timed out" in r.detail


def test_command_output_truncated_and_redacted(tmp_path: Path) -> None:
    r = run_verifier(CommandVerifier(id="c", run="echo token=ghp_" + "a" * 36 + "; seq 1 20000"), tmp_path)
    assert len(r.output) < OUTPUT_LIMIT + 200 and "elided" in r.output
    assert "ghp_aaaa" not in r.output and "REDACTED" in r.output
    assert r.output.rstrip().endswith("20000")


def test_artifact(tmp_path: Path) -> None:
    (tmp_path / "out.md").write_text("# Title\n")
    assert run_verifier(ArtifactVerifier(id="a", path="out.md"), tmp_path).passed
    assert run_verifier(ArtifactVerifier(id="a", path="out.md", contains="Title"), tmp_path).passed
    assert not run_verifier(ArtifactVerifier(id="a", path="out.md", contains="Nope"), tmp_path).passed
    assert not run_verifier(ArtifactVerifier(id="a", path="missing"), tmp_path).passed
    assert run_verifier(ArtifactVerifier(id="a", path="missing", exists=False), tmp_path).passed


def test_git_checks(repo: Path) -> None:
    clean = GitVerifier(id="g", check="clean")
    assert run_verifier(clean, repo).passed
    (repo / "b.txt").write_text("b\n")
    r = run_verifier(clean, repo)
    assert not r.passed and "dirty" in r.detail and "b.txt" in r.output
    assert run_verifier(GitVerifier(id="g", check="dirty"), repo).passed
    assert run_verifier(GitVerifier(id="g", check="file_changed", path="b.txt"), repo).passed
    assert not run_verifier(GitVerifier(id="g", check="file_changed", path="a.txt"), repo).passed
    assert run_verifier(GitVerifier(id="g", check="branch", branch="main"), repo).passed
    assert not run_verifier(GitVerifier(id="g", check="branch", branch="dev"), repo).passed
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "add", "b.txt")
    git(repo, "commit", "-qm", "b")
    ahead = GitVerifier(id="g", check="commits_ahead", base=base, min=1)
    assert run_verifier(ahead, repo).passed
    assert not run_verifier(GitVerifier(id="g", check="commits_ahead", base=base, min=2), repo).passed
    assert run_verifier(GitVerifier(id="g", check="file_changed", path="b.txt", base=base), repo).passed


def test_git_outside_repo_fails_cleanly(tmp_path: Path) -> None:
    r = run_verifier(GitVerifier(id="g", check="clean"), tmp_path)
    assert not r.passed and "not a git repository" in r.detail


def test_workflow_and_passed_use_state(tmp_path: Path) -> None:
    st = WorkflowState()
    st.node("one").status = "done"
    st.results["t"] = VerifierResult(verifier="t", type="command", passed=True)
    assert run_verifier(WorkflowVerifier(id="w", require_node_done="one"), tmp_path, st).passed
    assert not run_verifier(WorkflowVerifier(id="w", require_node_done="two"), tmp_path, st).passed
    assert run_verifier(PassedVerifier(id="p", verifier="t"), tmp_path, st).passed
    assert not run_verifier(PassedVerifier(id="p", verifier="u"), tmp_path, st).passed


def test_slow_verifier_does_not_block_others(tmp_path: Path) -> None:
    """A slow command runs on its own worker; a quick one submitted after it reports first."""
    pool = VerifierPool(workers=2)
    got: list[str] = []
    lock = threading.Lock()

    def cb(r: VerifierResult) -> None:
        with lock:
            got.append(r.verifier)

    try:
        pool.submit(CommandVerifier(id="slow", run="sleep 5", timeout_s=20), tmp_path, None, cb)
        pool.submit(CommandVerifier(id="quick", run="true"), tmp_path, None, cb)
        retry_until(lambda: "quick" in got, 10)
        assert got == ["quick"]
    finally:
        pool.close()
