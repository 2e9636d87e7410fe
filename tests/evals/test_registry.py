"""The registry on a real DuckDB warehouse: append-only events, the promoted policy, canaries and
limited rollouts for new runs (deterministic by run id), promotion refused without a PROMOTE,
forced promotions recorded, rollback, and the cached state when the warehouse is locked."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evals import registry
from evals.candidates import load_candidate, write_candidate
from supervisor.errors import CheckFailed, UsageError
from supervisor.policy import Policy, baseline_policy
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse
from supervisor.warehouse.evals_store import read_registry_events, save_gate_result


@pytest.fixture
def env(tmp_path: Path, sv_home: Path) -> dict[str, Any]:
    settings = Settings(home=sv_home).ensure()
    root = tmp_path / "candidates"
    base = baseline_policy()
    cands = {}
    for name, stall in (("calm", 900.0), ("calmer", 1200.0)):
        cands[name] = write_candidate(name, {"timing": {"stall_timeout_s": stall}}, parent="baseline",
                                      parent_policy=base, objective="reduce_friction", root=root)
    return {"settings": settings, "root": root, "cands": cands}


def _gate(settings: Settings, policy: Policy, verdict: str, baseline_id: str | None = None) -> str:
    gid = f"gate_{verdict}_{time.time_ns()}"
    with open_warehouse(settings.warehouse) as wh:
        save_gate_result(wh, {"gate_result_id": gid, "created_at": time.time(), "candidate_policy_id": policy.policy_id,
                              "baseline_policy_id": baseline_id or baseline_policy().policy_id, "verdict": verdict,
                              "reasons": []})
    return gid


def test_promote_needs_the_latest_gate_to_say_promote(env: dict[str, Any]) -> None:
    s, calm = env["settings"], env["cands"]["calm"]
    with pytest.raises(CheckFailed, match="no gate result"):
        registry.promote(s, "calm", calm.policy, approved_by="ana")
    _gate(s, calm.policy, "PROMOTE")
    _gate(s, calm.policy, "HOLD")
    with pytest.raises(CheckFailed, match="said HOLD"):
        registry.promote(s, "calm", calm.policy, approved_by="ana")
    with pytest.raises(UsageError, match="--force needs --reason"):
        registry.promote(s, "calm", calm.policy, approved_by="ana", force=True)
    gid = _gate(s, calm.policy, "PROMOTE")
    e = registry.promote(s, "calm", calm.policy, approved_by="ana")
    assert e.gate_result_id == gid and not e.forced and e.previous_policy_id is None
    acting, source = registry.promoted_policy(s)
    assert acting.policy_id == calm.policy.policy_id and source == "promoted calm"
    # a PROMOTE against the old baseline is stale once calm is promoted: refused, then forced with a reason
    calmer = env["cands"]["calmer"]
    _gate(s, calmer.policy, "PROMOTE")
    with pytest.raises(CheckFailed, match="promoted policy is now"):
        registry.promote(s, "calmer", calmer.policy, approved_by="ana")
    f = registry.promote(s, "calmer", calmer.policy, approved_by="bo", force=True, reason="incident 42")
    assert f.forced and f.reason == "incident 42" and "promoted policy is now" in f.details["overridden"]
    assert f.previous_policy_id == calm.policy.policy_id
    # rollback returns to calm, then to the shipped baseline; a third is refused
    r = registry.rollback(s, by="cy", reason="slower")
    assert r.policy_id == calm.policy.policy_id and r.previous_policy_id == calmer.policy.policy_id
    assert registry.promoted_policy(s)[0].policy_id == calm.policy.policy_id
    registry.rollback(s, by="cy")
    assert registry.promoted_policy(s) == (baseline_policy(), "shipped baseline")
    with pytest.raises(UsageError, match="nothing is promoted"):
        registry.rollback(s, by="cy")
    kinds = [e.kind for e in registry.history(s, ("promote", "rollback"))]
    assert kinds == ["promote", "promote", "rollback", "rollback"]
    with open_warehouse(s.warehouse, read_only=True) as wh:
        assert read_registry_events(wh).height == 4  # append-only: nothing updated or deleted


def test_new_runs_follow_canaries_and_limited_rollouts(env: dict[str, Any]) -> None:
    s, calm, calmer = env["settings"], env["cands"]["calm"], env["cands"]["calmer"]
    first = registry.policies_for_new_run(s, "run_A")
    assert first.acting == baseline_policy() and first.shadows == [] and first.arm is None
    registry.start_canary(s, "calm", calm.policy, by="ana")
    run = registry.policies_for_new_run(s, "run_B")
    assert run.acting.policy_id == baseline_policy().policy_id
    assert [p.policy_id for p in run.shadows] == [calm.policy.policy_id]
    e = registry.start_limited(s, "calmer", calmer.policy, 0.3, by="ana")
    state = registry.registry_state(s)
    arms = {rid: registry.choose_policies(state, rid) for rid in (f"run_{i:03d}" for i in range(200))}
    assert registry.policies_for_new_run(s, "run_007") == arms["run_007"]
    on = [rid for rid, r in arms.items() if r.arm == "candidate"]
    assert 0.2 < len(on) / len(arms) < 0.4, len(on)
    for rid, r in arms.items():
        assert r.arm == registry.arm_of(e.registry_event_id, rid, 0.3), "deterministic by run id"
        assert r.rollout_id == e.registry_event_id and r.candidate_id == "calmer"
        acting = calmer.policy.policy_id if r.arm == "candidate" else baseline_policy().policy_id
        assert r.acting.policy_id == acting
        # the other policy of the rollout rides along as a shadow, and so does the canary
        assert {p.policy_id for p in r.shadows} == {calm.policy.policy_id, calmer.policy.policy_id,
                                                    baseline_policy().policy_id} - {acting}
    registry.stop(s, "calmer", by="ana")
    assert registry.policies_for_new_run(s, on[0]).arm is None
    kinds = [x.kind for x in registry.history(s, ("canary", "limited", "stop"))]
    assert kinds == ["canary", "limited", "stop"]


def test_a_locked_warehouse_falls_back_to_the_cached_state(env: dict[str, Any]) -> None:
    s, calm = env["settings"], env["cands"]["calm"]
    _gate(s, calm.policy, "PROMOTE")
    registry.promote(s, "calm", calm.policy, approved_by="ana")
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(60)", str(s.warehouse)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        st = registry.registry_state(s, wait_s=0.2)
        assert st.source == "cache" and st.promoted_policy_id == calm.policy.policy_id
        assert registry.policies_for_new_run(s, "run_X").acting.policy_id == calm.policy.policy_id
    finally:
        holder.kill()
        holder.wait()


def test_candidate_files_and_manifest(env: dict[str, Any]) -> None:
    c = load_candidate("calm", env["root"])
    assert c.manifest.parent == "baseline" and c.manifest.parent_policy_id == baseline_policy().policy_id
    assert [(ch.path, ch.before, ch.after) for ch in c.manifest.changes] == [("timing.stall_timeout_s", 600.0, 900.0)]
    assert not c.stale and c.policy.policy_id == c.manifest.policy_id
    with pytest.raises(UsageError, match="already exists"):
        write_candidate("calm", {}, parent="baseline", parent_policy=baseline_policy(), objective="overall",
                        root=env["root"])
    with pytest.raises(UsageError, match="no candidate"):
        load_candidate("nope", env["root"])
    path = c.path / "policy.yaml"
    text = path.read_text()
    assert text.splitlines()[2:5] == ["extends: baseline", "name: calm", "timing:"], "it names only what it changes"
    path.write_text(text.replace("stall_timeout_s: 900.0", "stall_timeout_s: 950.0"))
    assert load_candidate("calm", env["root"]).stale
    # a candidate made from another extends that one's file
    child = write_candidate("calmest", {"timing": {"recheck_s": 4.0}}, parent="calm",
                            parent_policy=load_candidate("calm", env["root"]).policy, objective="overall",
                            root=env["root"])
    assert "extends: ../calm/policy.yaml" in (child.path / "policy.yaml").read_text()
    assert child.policy.timing.stall_timeout_s == 950.0 and child.policy.timing.recheck_s == 4.0
