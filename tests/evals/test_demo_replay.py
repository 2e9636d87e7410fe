"""The demo's runs, replayed under the policies they were recorded with, decide exactly as they did.

`python -m supervisor.demo` supervises the scripted agent in a real tmux server (a live run that
answers, one that escalates and is resumed by a person's keys, a workflow run with checkpoints, then
the workbench walk's runs: friction, a shadow canary, a limited rollout, a run under the promoted
candidate) and syncs its journals into a real DuckDB warehouse. `supervisor eval replay` then replays every
recorded observation under its run's own stored policy (the control): the control must reproduce
every recorded decision (100%), and every workflow checkpoint too. `runs replay RUN_ID` (the run's
own policy by default) agrees on each run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, invoke_cli, run_cli


@pytest.mark.slow
@pytest.mark.timeout(1500)  # the demo (bounded at 600 s: about 2 minutes alone, 5 on a loaded host) and two replays
def test_demo_runs_replay_at_100_percent_under_their_recorded_policies(sv_home: Path, cli_env: dict[str, str],
                                                                      tmux_socket: str) -> None:
    env = dict(cli_env, SUPERVISOR_TMUX_SOCKET=tmux_socket)
    demo = subprocess.run([sys.executable, "-m", "supervisor.demo", "--home", str(sv_home)], capture_output=True,
                          text=True, timeout=600, cwd=REPO, env=env)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    r = run_cli("eval", "replay", "--policy", "baseline", "--json", "--no-save-report", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    ctrl = out["control"]
    journals = sorted((sv_home / "journals").glob("*.jsonl"))
    assert out["runs"] == len(journals) >= 3 and out["observations"] >= 20, out
    assert ctrl["missing_policies"] == [] and ctrl["unknown_policies"] == [], ctrl
    assert ctrl["observations_with_control_policy"] == out["observations"], ctrl
    # the demo's live policy, the workflow's, and the candidate it promotes (its runs before the rollback)
    assert len(ctrl["policies"]) == 3, ctrl["policies"]
    assert ctrl["reproduction"] == 1.0, ctrl
    for pid, rep in ctrl["policies"].items():
        assert rep["compared"] == rep["observations"] and rep["agreement"] == 1.0, (pid, rep)
    cps = out["checkpoints"]
    assert cps["runs"] == 1 and cps["checkpoints"] >= 5 and cps["agreement"] == 1.0, cps
    for journal in journals:
        r = invoke_cli("runs", "replay", journal.stem, "--json", env=env)
        assert r.returncode == 0, r.stderr
        rep = json.loads(r.stdout)
        assert rep["observations"]["agreement"] == 1.0 and rep["changed"] == [], rep
        assert all(c["divergence"] == "agree" for c in rep["checkpoints"]), rep["checkpoints"]
