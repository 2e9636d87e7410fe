"""SIGKILL of the supervisor at random instants (>= 20 per ``make test``): after each restart the
run goes on by itself with its state; nothing journaled is lost or missing from the warehouse;
no instruction is delivered twice, no checkpoint processed twice; no supervisor process leaks.
``bench/reliability.py`` does the same with 50 kills and prints the figures."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from tests.reliability.kills import PLAIN_PROMPTS, kill_run, plain_kill_run

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", [15, 16])
def test_sigkill_at_random_instants(seed: int, tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    # A run id of its own: other checkouts' suites may run this test on the same machine at once.
    report = kill_run(tmp_path / "run", tmux_socket, sv_home, run_id=f"run_kill_{seed}_{uuid.uuid4().hex[:8]}",
                      kills=10, rng=random.Random(seed))
    assert report.kills >= 8, report  # a supervisor may end by itself before its instant (held for review)
    assert report.lost == 0 and report.missing == 0, report
    assert report.duplicates == 0, report
    assert report.instructions == 3 and report.checkpoints == 4, report
    assert report.restarts >= 5 and report.resumes == report.restarts, report
    assert report.outcome == "finished" and report.leaks == 0, report


@pytest.mark.timeout(900)
def test_sigkill_a_plain_run_at_random_instants(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """Plain runs resume too (the live runner's fold): every prompt answered once, no stray key."""
    report = plain_kill_run(tmp_path / "plain", tmux_socket, sv_home, kills=6, rng=random.Random(17))
    assert report.kills >= 3, report
    assert report.lost == 0 and report.missing == 0, report
    assert report.duplicates == 0 and report.instructions == PLAIN_PROMPTS, report
    assert report.resumes == report.restarts, report
    assert report.outcome == "finished", report
