"""`make demo`'s workbench walk in a fresh home (real tmux, scripted agents, the real CLI and DuckDB),
checked step by step from what it recorded; then every notebook reads the demo's warehouse.

propose writes exactly one candidate whose manifest's claims hold; the gate says HOLD, then PROMOTE
without --force; the promoted policy drives the next run; rollback restores the previous policy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.candidates import list_candidate_ids, load_candidate
from evals.registry import policies_for_new_run
from supervisor.policy import baseline_policy
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse
from tests.analysis.test_notebooks import NOTEBOOKS, execute_in, pngs, varied
from tests.conftest import REPO

CANDIDATE = "answer-which-database-should-the-service-use"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a few minutes on an idle machine; a machine shared with other work takes longer
def test_the_demo_walks_the_workbench_and_every_notebook_reads_its_warehouse(tmp_path: Path) -> None:
    home = tmp_path / "demo-home"
    env = dict(os.environ, SUPERVISOR_CANDIDATES=str(tmp_path / "candidates"), PYTHONUNBUFFERED="1")
    for k in ("SUPERVISOR_HOME", "SUPERVISOR_WAREHOUSE", "SUPERVISOR_POLICY", "ANTHROPIC_API_KEY"):
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-m", "supervisor.demo", "--home", str(home)], capture_output=True,
                         text=True, timeout=1500, cwd=REPO, env=env)
    text = out.stdout
    assert out.returncode == 0, text[-6000:] + out.stderr[-3000:]
    # spelled as the test's shell would run it (`.venv/bin/supervisor` until it is on PATH)
    name = subprocess.run([sys.executable, "-c", "from supervisor.cli.hints import program; print(program())"],
                          capture_output=True, text=True, cwd=REPO, env=env, check=True).stdout.strip()
    prefix = f"$ {name} --home {home} eval"
    for step in ("propose --objective reduce_friction", f"gate-candidate {CANDIDATE} --gate candidates/demo-gate.yaml",
                 f"canary start {CANDIDATE} --by demo", f"canary limited {CANDIDATE} --fraction 0.5 --by demo",
                 f"promote-candidate {CANDIDATE} --approved-by demo", "rollback --by demo"):
        assert f"{prefix} {step}" in text, f"the walk prints `{step}` as a command"
    assert "gate: done in" in out.stderr and "propose: done in" in out.stderr, "slow commands say how long they took"

    # -- propose: exactly one candidate, and its manifest's claims hold
    settings = Settings(home=home)
    assert list_candidate_ids(tmp_path / "candidates") == [CANDIDATE]
    cand = load_candidate(CANDIDATE, tmp_path / "candidates")
    claims = cand.manifest.claims
    assert claims is not None and claims.golden_cases > 900
    assert claims.recorded_observations >= 3 and claims.recorded_changed == claims.recorded_observations
    from evals.workbench import replay_evidence

    summary, _frame, _div = replay_evidence(settings, cand.policy, run_ids=claims.recorded_runs)
    assert summary["saved_escalations"] == claims.recorded_changed and summary["answer_mismatches"] == 0
    assert summary["safety_regressions"] == 0

    base_id = baseline_policy().policy_id
    with open_warehouse(settings.warehouse, read_only=True) as wh:
        gates = wh.sql("SELECT verdict, candidate_id, gate_file FROM gate_results ORDER BY created_at").to_dicts()
        registry = wh.sql("SELECT kind, policy_id, forced, gate_result_id, epoch_ms(occurred_at) / 1000.0 AS at "
                          "FROM registry_events ORDER BY occurred_at, registry_event_id").to_dicts()
        runs = wh.sql("SELECT run_id, policy_id, escalations, epoch_ms(started_at) / 1000.0 AS at "
                      "FROM run_summary ORDER BY started_at").to_dicts()
    # -- the gate: HOLD (no live evidence), then PROMOTE without --force
    assert [g["verdict"] for g in gates] == ["HOLD", "PROMOTE"] and {g["candidate_id"] for g in gates} == {CANDIDATE}
    assert [r["kind"] for r in registry] == ["canary", "limited", "promote", "rollback"]
    promote = registry[2]
    assert promote["policy_id"] == cand.policy.policy_id and not promote["forced"] and promote["gate_result_id"]
    # -- the promoted policy drives the next run, which answers the question itself
    after = [r for r in runs if promote["at"] <= r["at"] <= registry[3]["at"]]
    assert after and all(r["policy_id"] == cand.policy.policy_id and r["escalations"] == 0 for r in after), after
    # -- rollback: new runs go back to the previous policy (the shipped baseline)
    assert registry[3]["policy_id"] in (None, base_id)
    assert policies_for_new_run(settings, None).acting.policy_id == base_id

    # -- every notebook reads the demo's warehouse: no error, at least one real image
    for path in NOTEBOOKS:
        nb = execute_in(path, home, {})
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        assert not errors, (path.name, errors)
        assert any(varied(p) for p in pngs(nb)), f"{path.name} shows no image"
