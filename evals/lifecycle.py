"""A candidate's life between proposal and promotion, for the CLI and notebooks: a bounded review
for a human, everything the warehouse and the registry know about it, and its canary evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.candidates import Candidate, knob_diff, load_candidate, refresh_manifest
from supervisor.errors import UsageError
from supervisor.policy import Policy
from supervisor.settings import Settings

REVIEW_EXAMPLES = 20


def parent_policy(settings: Settings | None, candidate: Candidate) -> Policy:
    """The policy a candidate was made from: by id from the warehouse, else by what the manifest names."""
    from evals.workbench import policy_by_id, resolve_policy

    m = candidate.manifest
    if settings is not None and settings.warehouse.exists():
        try:
            return policy_by_id(settings, m.parent_policy_id)
        except UsageError:
            pass
    if m.parent == "promoted" and settings is not None:
        from evals.registry import promoted_policy

        policy, _ = promoted_policy(settings)
    else:
        policy = resolve_policy(m.parent, settings).policy
    if policy.policy_id != m.parent_policy_id:
        raise UsageError(f"{candidate.candidate_id}'s parent {m.parent} is now {policy.policy_id}, not "
                         f"{m.parent_policy_id} as when it was made",
                         "store the parent in the warehouse (gate or eval it once), or remake the candidate")
    return policy


def review_candidate(settings: Settings | None, candidate_id: str, *, candidates_root: Path | None = None,
                     suites_root: Path | None = None, progress: Any = None) -> dict[str, Any]:
    """What a reviewer needs, bounded: the knob diff, safety knobs relaxed, and the golden cases it
    decides differently from its parent (counts, and the first examples). ``progress``: an
    :class:`evals.progress.Progress` told of each step."""
    from evals.progress import NoProgress, suite_hook

    prog = progress if progress is not None else NoProgress()
    from evals.compare import case_contexts
    from evals.runner import run_suites
    from evals.safety import safety_relaxations
    from evals.suites import resolve_suites

    cand = load_candidate(candidate_id, candidates_root)
    parent = parent_policy(settings, cand)
    stale = cand.stale
    if stale:
        cand = refresh_manifest(cand, parent)
    suites = resolve_suites("all", suites_root)
    total = sum(len(s.cases) for s in suites)
    prog.step(f"the parent over {len(suites)} golden suites", total)
    base = run_suites(suites, parent, episodes=False, progress=suite_hook(prog))
    prog.step(f"{candidate_id} over {len(suites)} golden suites", total)
    new = run_suites(suites, cand.policy, episodes=False, progress=suite_hook(prog))
    diff = decided_differently(base, new, case_contexts(suites))
    return {"candidate_id": candidate_id, "policy_id": cand.policy.policy_id,
            "manifest": cand.manifest.model_dump(mode="json"), "stale_manifest": stale,
            "changes": [c.model_dump(mode="json") for c in knob_diff(parent, cand.policy)],
            "safety_relaxations": safety_relaxations(parent, cand.policy),
            "decided_differently": {"cases": diff["cases"], "count": len(diff["differ"]), "better": diff["better"],
                                    "worse": diff["worse"], "examples": diff["differ"][:REVIEW_EXAMPLES]}}


def decided_differently(base: Any, new: Any, contexts: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """The cases two eval runs of the same suites decide differently (state, decision, keys, answer
    class, prompt kind, agent): each with both outputs and which is closer to the expectation, and
    how many got closer (``better``) or further (``worse``). ``cases``: how many ran (not skipped)."""
    from evals.scorers import badness

    by_key = {(r.suite, r.case_id): r for r in new.results}
    differ: list[dict[str, Any]] = []
    better = worse = 0
    for rb in base.results:
        rc = by_key.get((rb.suite, rb.case_id))
        if rc is None or rb.status == "skip" or rb.actual == rc.actual:
            continue
        fields = ("state", "decision", "keys", "answer_class", "prompt_kind", "agent")
        b, c = ({k: r.actual.get(k) for k in fields if r.actual.get(k) not in (None, [])} for r in (rb, rc))
        if b == c:
            continue
        kind = contexts.get((rb.suite, rb.case_id), {}).get("kind", "screen")
        sb, _ = badness(rb.expected, rb.actual, kind)
        sc, _ = badness(rc.expected, rc.actual, kind)
        better += sc < sb
        worse += sc > sb
        differ.append({"suite": rb.suite, "case_id": rb.case_id, "parent": b, "candidate": c,
                       "closer": "candidate" if sc < sb else "parent" if sc > sb else "same"})
    return {"cases": base.totals.cases - base.totals.skipped, "differ": differ, "better": better, "worse": worse}


def candidate_status(settings: Settings, candidate_id: str, *, candidates_root: Path | None = None) -> dict[str, Any]:
    """The manifest, eval runs, compares, gate results, canary evidence and registry standing."""
    from evals.canary import canary_report
    from evals.registry import registry_state
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_compare_runs, read_eval_runs, read_gate_results

    cand = load_candidate(candidate_id, candidates_root)
    pid = cand.policy.policy_id
    evals: list[dict[str, Any]] = []
    compares: list[dict[str, Any]] = []
    gates: list[dict[str, Any]] = []
    canary: dict[str, Any] = {}
    if settings.warehouse.exists():
        with reader(settings) as wh:
            evals = read_eval_runs(wh, pid).select("eval_run_id", "started_at", "weighted_pass_rate",
                                                   "unsafe_answers", "must_pass_failures").head(10).to_dicts()
            cmp = read_compare_runs(wh)
            compares = cmp.filter(cmp["candidate_policy_id"] == pid).select(
                "compare_run_id", "created_at", "baseline_policy_id", "result", "win_rate", "p_value").head(10).to_dicts()
            gates = read_gate_results(wh, candidate_policy_id=pid).select(
                "gate_result_id", "created_at", "baseline_policy_id", "verdict").head(10).to_dicts()
        rep = canary_report(settings, pid)
        if rep.observations:
            canary = rep.model_dump(include={"observations", "runs", "agreement", "unsafe", "saved_escalations"})
    st = registry_state(settings)
    active = next((a for a in st.active if a.policy_id == pid), None)
    if st.promoted_policy_id == pid:
        standing = "promoted (the default of new runs)"
    elif active is not None:
        standing = (f"on limited rollout ({active.fraction:.0%} of new runs)" if active.phase == "limited"
                    else "on shadow canary")
    elif any(p == pid for p, _ in st.stack):
        standing = "promoted earlier, superseded"
    else:
        standing = "not in the registry"
    return {"candidate_id": candidate_id, "policy_id": pid, "stale_manifest": cand.stale,
            "manifest": cand.manifest.model_dump(mode="json"), "eval_runs": evals, "compares": compares,
            "gates": gates, "canary": canary, "registry": standing}


def canary_evidence(settings: Settings, candidate_id: str, *, since: float | None = None,
                    gate_file: Path | None = None, candidates_root: Path | None = None) -> tuple[Any, Any]:
    """(the shadow canary report against gate.yaml's minimums, the latest limited rollout's analysis
    or None)."""
    from evals.canary import canary_report, limited_analysis
    from evals.gate import load_gate_config
    from evals.registry import history, promoted_policy

    cfg = load_gate_config(gate_file)
    cand = load_candidate(candidate_id, candidates_root)
    pid = cand.policy.policy_id
    rep = canary_report(settings, pid, since=since, min_observations=cfg.canary.min_observations,
                        min_runs=cfg.canary.min_runs)
    rollout = next((e for e in reversed(history(settings, ("limited",))) if e.policy_id == pid), None)
    limited = None
    if rollout is not None:
        control = rollout.previous_policy_id or promoted_policy(settings)[0].policy_id
        limited = limited_analysis(settings, pid, control, since=rollout.occurred_at, config=cfg.limited)
    return rep, limited
