"""The promotion gate: ``supervisor eval gate-candidate CANDIDATE`` says PROMOTE, HOLD or REJECT.

It gathers the evidence a careful reviewer would want before a policy runs their agents, runs
what is missing and reuses what the warehouse already holds for the same policy, suites and
code, and checks each piece against ``candidates/gate.yaml`` (thresholds are data, not code):

============  ========================================================================  ===========
check         figure                                                                    fails as
============  ========================================================================  ===========
safety_knobs  safety knobs the candidate relaxes against the baseline (by name)         REJECT
unsafe        unsafe answers over golden + expanded (+ episode) suites                  REJECT
must_pass     must-pass cases the baseline passes and the candidate fails               REJECT
pass_rate     weighted pass rate, and its drop against the baseline                     REJECT
compare       blind compare over origin-case clusters; safety veto; scorer errors       REJECT
replay        approvals the candidate adds over recorded runs (each run's own policy)   REJECT/HOLD
canary        shadow decisions on live runs: would-be unsafe approvals, sample size     REJECT/HOLD
limited       limited rollout's per-metric analysis (Mann-Whitney U, Kayenta-style)     REJECT/HOLD
objective     a significant win on the candidate's objective                            HOLD
============  ========================================================================  ===========

REJECT when any check rejects; HOLD when any holds (not enough evidence); PROMOTE only when
every check passes (``skip``: not asked for by ``gate.yaml`` and not there). Every gate result
is stored in the warehouse (``gate_results``) with its reasons and the ids of its evidence.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evals.progress import NoProgress, Progress, suite_hook
from evals.suites import REPO_ROOT
from supervisor.errors import EXIT_CHECK_FAILED, EXIT_OK, InputError, UsageError, WarehouseError
from supervisor.ids import new_id
from supervisor.settings import Settings
from supervisor.yamlio import format_validation, parse_yaml, read_text

log = logging.getLogger(__name__)

Verdict = Literal["PROMOTE", "HOLD", "REJECT"]
CheckStatus = Literal["pass", "hold", "reject", "skip"]
DEFAULT_GATE_FILE = REPO_ROOT / "candidates" / "gate.yaml"


class _C(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpandedConfig(_C):
    variants_per_case: int = Field(ge=0, le=50)
    """Synthetic variants per golden screen case made for the gate (0: none)."""
    seed: int


class EvalThresholds(_C):
    min_weighted_pass_rate: float = Field(ge=0, le=1)
    """REJECT below; ``supervisor eval run`` exits 1 below."""
    max_pass_rate_drop: float = Field(ge=0, le=1)
    """REJECT when the weighted pass rate drops more than this against the baseline."""


class SafetyThresholds(_C):
    max_unsafe_answers: int = Field(ge=0)
    max_relaxations: int = Field(ge=0)
    max_must_pass_regressions: int = Field(ge=0)


class CompareThresholds(_C):
    alpha: float = Field(gt=0, lt=1)
    scorer: Literal["expected", "llm", "human"] = "expected"


class ObjectiveThresholds(_C):
    alpha: float = Field(gt=0, lt=1)


class ReplayThresholds(_C):
    min_observations: int = Field(ge=0)
    max_safety_regressions: int = Field(ge=0)


class CanaryThresholds(_C):
    required: bool
    min_observations: int = Field(ge=0)
    min_runs: int = Field(ge=0)
    max_unsafe: int = Field(ge=0)
    min_agreement: float = Field(ge=0, le=1)


class MetricConfig(_C):
    weight: float = Field(gt=0)
    worse: Literal["increase", "decrease"]
    """Which direction of change is bad for the candidate."""


class LimitedThresholds(_C):
    required: bool
    min_runs_per_arm: int = Field(ge=1)
    alpha: float = Field(gt=0, lt=1)
    pass_score: float = Field(ge=0, le=100)
    marginal_score: float = Field(ge=0, le=100)
    metrics: dict[str, MetricConfig]


class GateConfig(_C):
    """``candidates/gate.yaml``: what the gate runs and every threshold it applies."""

    format_version: int = 1
    suites: str
    """Golden suites to run (``all``, names, a comma list); ``suites/heldout/`` is never read."""
    episodes: bool
    """Also play the episode suites (real tmux sessions) for both policies."""
    expanded: ExpandedConfig
    eval: EvalThresholds
    safety: SafetyThresholds
    compare: CompareThresholds
    objective: ObjectiveThresholds
    replay: ReplayThresholds
    canary: CanaryThresholds
    limited: LimitedThresholds
    source: str = ""
    """The file it was read from."""
    content_hash: str = ""


def load_gate_config(path: Path | str | None) -> GateConfig:
    """Read and validate a gate file (default ``candidates/gate.yaml``); errors name the field."""
    p = Path(path) if path is not None else DEFAULT_GATE_FILE
    text = read_text(p, InputError, "gate file", "pass --gate FILE (the project's is candidates/gate.yaml)")
    data, root = parse_yaml(text, str(p), InputError)
    if not isinstance(data, dict):
        raise InputError(f"{p}: a gate file must be a YAML mapping", "see candidates/gate.yaml")
    try:
        cfg = GateConfig.model_validate(data)
    except ValidationError as exc:
        raise InputError(format_validation(exc, root, str(p), whole="gate file"),
                         "compare with candidates/gate.yaml") from exc
    cfg.source = str(p)
    cfg.content_hash = hashlib.sha256(text.encode()).hexdigest()[:16]
    return cfg


# --------------------------------------------------------------------------- the gate


class GateReason(_C):
    """One row of the gate's table of reasons."""

    check: str
    status: CheckStatus
    figure: str
    """What was measured, in words and numbers."""
    threshold: str
    """What ``gate.yaml`` asks of it."""


class GateResult(_C):
    """A gate verdict with its reasons and the evidence it used (stored in ``gate_results``)."""

    format_version: int = 1
    gate_result_id: str
    created_at: float
    verdict: Verdict
    reasons: list[GateReason]
    candidate_id: str | None = None
    candidate_policy_id: str
    candidate_name: str
    candidate_path: str
    baseline_policy_id: str
    baseline_name: str
    baseline_source: str
    """``promoted <candidate>``, ``shipped baseline``, or what ``--baseline`` named."""
    objective: str = "overall"
    safety_relaxations: list[str] = Field(default_factory=list)
    evidence: dict[str, Any] = Field(default_factory=dict)
    """Ids of what the gate ran or reused: eval runs, compare, replay; canary and rollout figures."""
    gate_file: str = ""
    gate_hash: str = ""
    code_version: str = ""
    report_path: str | None = None
    stored: bool = False

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.verdict == "PROMOTE" else EXIT_CHECK_FAILED


def _verdict(reasons: list[GateReason]) -> Verdict:
    statuses = {r.status for r in reasons}
    if "reject" in statuses:
        return "REJECT"
    if "hold" in statuses:
        return "HOLD"
    return "PROMOTE"


def gate_suites(cfg: GateConfig, suites_root: Path | None) -> list[Any]:
    """The golden suites the gate runs and, made in memory with the gate's seed, their variants."""
    from evals.expand import expand_suite, render_jsonl
    from evals.suites import parse_suite, resolve_suites

    golden = resolve_suites(cfg.suites, suites_root)
    out = list(golden)
    if cfg.expanded.variants_per_case:
        for suite in golden:
            if not any(c.kind == "screen" for c in suite.cases):
                continue
            header, cases = expand_suite(suite, variants_per_case=cfg.expanded.variants_per_case,
                                         seed=cfg.expanded.seed)
            if cases:
                virtual = suite.path.parent / "expanded" / f"{suite.name}.s{cfg.expanded.seed}.jsonl"
                out.append(parse_suite(render_jsonl(header, cases), virtual))
    return out


def _eval_run(ref: Any, suites: list[Any], cfg: GateConfig, settings: Settings | None,
              progress: Progress, role: str) -> tuple[Any, bool]:
    """The policy's eval run over the gate's suites: reused from the warehouse when one exists for
    the same policy, suites (by content hash), code version and episode setting; else run now and
    stored, so the next gate of any candidate against this baseline reuses it."""
    from evals.runner import EvalRun, code_version, run_suites, suite_identity
    from evals.workbench import store_policies, store_result
    from supervisor.warehouse.evals_store import find_eval_run, save_eval_run

    code = code_version()
    if settings is not None and settings.warehouse.exists():
        from supervisor.warehouse import open_warehouse

        try:
            with open_warehouse(settings.warehouse, read_only=True, wait_s=5.0) as wh:
                found = find_eval_run(wh, policy_id=ref.policy.policy_id,
                                      suites=[suite_identity(s).model_dump() for s in suites], code_version=code,
                                      episodes=cfg.episodes)
        except WarehouseError as exc:
            log.warning("gate: cannot look for a reusable eval run (%s); running one", exc.one_line())
            found = None
        if found is not None:
            progress.step(f"{role}: reused eval run {found.get('eval_run_id')} (same policy, suites and code)")
            return EvalRun.model_validate(found), True
    progress.step(f"{role}: evaluating {ref.policy.policy_id} over {len(suites)} suites",
                  sum(len(s.cases) for s in suites))
    run = run_suites(suites, ref.policy, policy_path=ref.path, episodes=cfg.episodes, settings=settings,
                     progress=suite_hook(progress), min_pass_rate=cfg.eval.min_weighted_pass_rate)
    data = run.model_dump(mode="json")

    def store(wh: Any) -> None:
        store_policies(wh, [ref.policy], f"eval:{run.eval_run_id}")
        save_eval_run(wh, data)

    err = store_result(settings, store)
    if err:
        log.warning("gate: eval run %s not stored: %s", run.eval_run_id, err)
    return run, False


def _fmt_p(p: float) -> str:
    return f"{p:.3g}"


def gate_candidate(candidate_arg: str, *, baseline_arg: str | None = None, gate_file: Path | str | None = None,
                   settings: Settings | None, suites_root: Path | None = None, candidates_root: Path | None = None,
                   reports_dir: Path | None = None, save_report: bool = True,
                   progress: Progress | None = None) -> GateResult:
    """Gather (run or reuse) the evidence, check it against ``gate.yaml``, say PROMOTE/HOLD/REJECT,
    and store the result. ``candidate_arg``: a candidate id or a policy file; the baseline defaults
    to the promoted policy (the shipped baseline when nothing is promoted). ``progress`` hears of
    each step (:mod:`evals.progress`)."""
    prog: Progress = progress if progress is not None else NoProgress()
    from evals.candidates import list_candidate_ids, load_candidate
    from evals.compare import case_contexts, items_from_results
    from evals.runner import code_version
    from evals.safety import safety_relaxations
    from evals.workbench import PolicyRef, compare_items, resolve_policy, save_compare_outcome

    cfg = load_gate_config(gate_file)
    candidate_id = None
    objective = "overall"
    if candidate_arg in list_candidate_ids(candidates_root):
        cand_obj = load_candidate(candidate_arg, candidates_root)
        cand = PolicyRef(cand_obj.policy, str(cand_obj.path / "policy.yaml"))
        candidate_id, objective = cand_obj.candidate_id, cand_obj.manifest.objective
    else:
        cand = resolve_policy(candidate_arg, settings)
    if baseline_arg is not None:
        base = resolve_policy(baseline_arg, settings)
        base_source = baseline_arg
    else:
        from evals.registry import promoted_policy

        if settings is not None:
            policy, base_source = promoted_policy(settings)
        else:
            from supervisor.policy import baseline_policy

            policy, base_source = baseline_policy(), "shipped baseline"
        base = PolicyRef(policy, base_source)
    if base.policy.policy_id == cand.policy.policy_id:
        raise UsageError(f"the candidate is the baseline ({cand.policy.policy_id})",
                         "gate a candidate that differs from the promoted policy, or pass --baseline")
    reasons: list[GateReason] = []
    evidence: dict[str, Any] = {}

    relax = safety_relaxations(base.policy, cand.policy)
    reasons.append(GateReason(check="safety_knobs", status="reject" if len(relax) > cfg.safety.max_relaxations
                              else "pass", figure=f"{len(relax)} relaxed" + (f": {'; '.join(relax)}" if relax else ""),
                              threshold=f"<= {cfg.safety.max_relaxations}"))

    prog.step("reading the suites and making their seeded variants")
    suites = gate_suites(cfg, suites_root)
    base_run, base_reused = _eval_run(base, suites, cfg, settings, prog, "baseline")
    cand_run, cand_reused = _eval_run(cand, suites, cfg, settings, prog, "candidate")
    evidence["eval_runs"] = {"baseline": base_run.eval_run_id, "candidate": cand_run.eval_run_id,
                             "reused": {"baseline": base_reused, "candidate": cand_reused},
                             "suites": [s.name for s in suites], "cases": cand_run.totals.cases}
    t = cand_run.totals
    reasons.append(GateReason(
        check="unsafe", status="reject" if t.unsafe_answers > cfg.safety.max_unsafe_answers else "pass",
        figure=f"{t.unsafe_answers} unsafe answers ({t.unsafe_approvals} approvals, {t.persistent_approvals} "
               f"persistent) in {t.cases - t.skipped} cases", threshold=f"<= {cfg.safety.max_unsafe_answers}"))
    base_pass = {(r.suite, r.case_id) for r in base_run.results if r.passed}
    regressions = [f"{r.suite}/{r.case_id}" for r in cand_run.results
                   if r.must_pass and not r.passed and r.status != "skip" and (r.suite, r.case_id) in base_pass]
    reasons.append(GateReason(
        check="must_pass", status="reject" if len(regressions) > cfg.safety.max_must_pass_regressions else "pass",
        figure=f"{len(regressions)} must-pass regressions" + (f" ({', '.join(regressions[:3])})" if regressions else ""),
        threshold=f"<= {cfg.safety.max_must_pass_regressions}"))
    drop = round(base_run.totals.weighted_pass_rate - t.weighted_pass_rate, 4)
    low = t.weighted_pass_rate < cfg.eval.min_weighted_pass_rate or drop > cfg.eval.max_pass_rate_drop
    reasons.append(GateReason(
        check="pass_rate", status="reject" if low else "pass",
        figure=f"{t.weighted_pass_rate:.1%} weighted (baseline {base_run.totals.weighted_pass_rate:.1%}, "
               f"drop {drop:+.1%})",
        threshold=f">= {cfg.eval.min_weighted_pass_rate:.0%}, drop <= {cfg.eval.max_pass_rate_drop:.1%}"))

    items = items_from_results(base_run.results, cand_run.results, contexts=case_contexts(suites),
                               with_expected=cfg.compare.scorer == "expected")
    prog.step("blind compare", len(items))
    outcome = compare_items(items, base, cand, scorer_kind=cfg.compare.scorer, seed=None,
                            source=f"gate:eval:{base_run.eval_run_id},{cand_run.eval_run_id}",
                            suites_named=[s.name for s in suites], settings=settings, alpha=cfg.compare.alpha,
                            progress=lambda *_a: prog.advance())
    save_compare_outcome(outcome, base, cand, settings=settings, save_report=save_report, reports_dir=reports_dir)
    c = outcome.summary
    evidence["compare"] = {"compare_run_id": c.compare_run_id, "result": c.result, "seed": c.seed}
    cmp_fig = (f"{c.result}: {c.cluster_wins} origin cases won, {c.cluster_losses} lost of {c.clusters} "
               f"(p={_fmt_p(c.p_value)}), {c.unsafe_losses} unsafe losses, {c.errors} scorer errors")
    cmp_status: CheckStatus = "reject" if c.result in ("loss", "error") else "pass"
    reasons.append(GateReason(check="compare", status=cmp_status,
                              figure=cmp_fig + (f"; veto: {'; '.join(c.vetoes)}" if c.vetoes else ""),
                              threshold=f"no veto, no significant loss, no errors (alpha {cfg.compare.alpha:g})"))

    prog.step("replay over the recorded runs")
    replay_summary = _replay_check(cand, cfg, settings, reasons, evidence)
    prog.step("shadow canary and limited rollout")
    _canary_check(cand, cfg, settings, reasons, evidence)
    _limited_check(cand, base, cfg, settings, reasons, evidence)
    _objective_check(objective, c, replay_summary, evidence, cfg, reasons)

    result = GateResult(gate_result_id=new_id("gate_"), created_at=time.time(), verdict=_verdict(reasons),
                        reasons=reasons, candidate_id=candidate_id, candidate_policy_id=cand.policy.policy_id,
                        candidate_name=cand.policy.name, candidate_path=cand.path,
                        baseline_policy_id=base.policy.policy_id, baseline_name=base.policy.name,
                        baseline_source=base_source, objective=objective, safety_relaxations=relax,
                        evidence=evidence, gate_file=cfg.source, gate_hash=cfg.content_hash,
                        code_version=code_version())
    _save(result, cand, base, candidate_id, candidates_root, settings, save_report, reports_dir)
    return result


def _replay_check(cand: Any, cfg: GateConfig, settings: Settings | None, reasons: list[GateReason],
                  evidence: dict[str, Any]) -> dict[str, Any] | None:
    """Replay over the warehouse's recorded runs against each run's own policy."""
    threshold = (f"<= {cfg.replay.max_safety_regressions} safety regressions, >= {cfg.replay.min_observations} "
                 "observations")
    summary = None
    if settings is not None and settings.warehouse.exists():
        from evals.workbench import replay_evidence

        try:
            summary, _result, _div = replay_evidence(settings, cand.policy)
        except UsageError:
            summary = None
    if summary is None:
        status: CheckStatus = "hold" if cfg.replay.min_observations > 0 else "skip"
        reasons.append(GateReason(check="replay", status=status, figure="no recorded runs", threshold=threshold))
        return None
    evidence["replay"] = {"observations": summary["observations"], "runs": summary["runs"],
                          "reproduction": summary["control"]["reproduction"],
                          "safety_regressions": summary["safety_regressions"],
                          "saved_escalations": summary["saved_escalations"],
                          "answer_mismatches": summary["answer_mismatches"]}
    regress = summary["safety_regressions"]
    status = ("reject" if regress > cfg.replay.max_safety_regressions else
              "hold" if summary["observations"] < cfg.replay.min_observations else "pass")
    rep = summary["control"]["reproduction"]
    reasons.append(GateReason(
        check="replay", status=status,
        figure=f"{regress} safety regressions over {summary['observations']} observations in {summary['runs']} runs "
               f"(each run's own policy reproduces " + (f"{rep:.1%}" if rep is not None else "n/a") + ")",
        threshold=threshold))
    return summary


def _canary_check(cand: Any, cfg: GateConfig, settings: Settings | None, reasons: list[GateReason],
                  evidence: dict[str, Any]) -> None:
    from evals.canary import canary_report

    k = cfg.canary
    threshold = (f">= {k.min_observations} shadow decisions in >= {k.min_runs} runs, <= {k.max_unsafe} unsafe, "
                 f"agreement >= {k.min_agreement:.0%}" + ("" if k.required else " (not required)"))
    rep = None
    if settings is not None and settings.warehouse.exists():
        rep = canary_report(settings, cand.policy.policy_id, min_observations=k.min_observations, min_runs=k.min_runs)
    if rep is None or rep.observations == 0:
        reasons.append(GateReason(check="canary", status="hold" if k.required else "skip",
                                  figure="no shadow decisions on live runs", threshold=threshold))
        return
    evidence["canary"] = rep.model_dump(include={"observations", "runs", "agreement", "unsafe", "saved_escalations",
                                                 "mismatches"})
    status: CheckStatus = "pass"
    if rep.unsafe > k.max_unsafe:
        status = "reject"
    elif not rep.enough or (rep.agreement or 0.0) < k.min_agreement:
        status = "hold" if k.required else "pass"
    reasons.append(GateReason(
        check="canary", status=status,
        figure=f"{rep.observations} shadow decisions in {rep.runs} runs, agreement "
               f"{(rep.agreement or 0.0):.1%}, {rep.unsafe} would-be unsafe, {rep.saved_escalations} would-be saved "
               "escalations", threshold=threshold))


def _limited_check(cand: Any, base: Any, cfg: GateConfig, settings: Settings | None, reasons: list[GateReason],
                   evidence: dict[str, Any]) -> None:
    """The latest limited rollout of this candidate against the control it ran beside."""
    from evals.canary import limited_analysis

    k = cfg.limited
    threshold = (f"score >= {k.pass_score:g} passes, >= {k.marginal_score:g} marginal; >= {k.min_runs_per_arm} runs "
                 "per arm" + ("" if k.required else " (not required)"))
    rollout = None
    if settings is not None and settings.warehouse.exists():
        from evals.registry import history

        rollout = next((e for e in reversed(history(settings, ("limited",))) if e.policy_id == cand.policy.policy_id),
                       None)
    if rollout is None:
        reasons.append(GateReason(check="limited", status="hold" if k.required else "skip",
                                  figure="no limited rollout", threshold=threshold))
        return
    assert settings is not None
    a = limited_analysis(settings, cand.policy.policy_id, rollout.previous_policy_id or base.policy.policy_id,
                         since=rollout.occurred_at, config=k)
    evidence["limited"] = a.model_dump(mode="json")
    statuses: dict[str, CheckStatus] = {"pass": "pass", "marginal": "hold", "fail": "reject"}
    status: CheckStatus = statuses.get(a.verdict, "hold")
    if a.verdict == "nodata" and not k.required:
        status = "skip"
    parts = ", ".join(f"{m.metric} {m.status}" for m in a.metrics)
    reasons.append(GateReason(
        check="limited", status=status,
        figure=f"{a.verdict}: score {a.score if a.score is not None else 'n/a'} over {a.candidate_runs} candidate and "
               f"{a.control_runs} control runs ({parts})", threshold=threshold))


def _objective_check(objective: str, c: Any, replay: dict[str, Any] | None, evidence: dict[str, Any],
                     cfg: GateConfig, reasons: list[GateReason]) -> None:
    """A significant win on what the candidate is for: the blind compare over origin cases, or, for
    friction and false escalations, escalations humans resolved the way the candidate would answer
    (runs as clusters, sign test)."""
    from evals.stats import sign_test_p

    alpha = cfg.objective.alpha
    figures = [f"compare {c.result} (p={_fmt_p(c.p_value)})"]
    won = c.result == "win"
    if objective in ("reduce_friction", "reduce_false_escalation", "overall") and replay is not None:
        saved, lost = replay["saved_runs"], replay["mismatch_runs"]
        p = sign_test_p(saved, lost)
        figures.append(f"{replay['saved_escalations']} escalations saved in {saved} runs, answered otherwise in "
                       f"{lost} runs (p={_fmt_p(p)})")
        won = won or (p < alpha and saved > lost)
    lim = evidence.get("limited")
    if objective == "faster_reaction" and lim is not None:
        t = next((m for m in lim["metrics"] if m["metric"] == "time_to_finish_s"), None)
        if t and t["p_value"] is not None and t["p_value"] < alpha and (t["candidate_median"] or 0) < (
                t["control_median"] or 0):
            won = True
            figures.append(f"time to finish {t['candidate_median']:.1f}s vs {t['control_median']:.1f}s "
                           f"(p={_fmt_p(t['p_value'])})")
    reasons.append(GateReason(check="objective", status="pass" if won else "hold",
                              figure=f"{objective}: " + "; ".join(figures),
                              threshold=f"a significant win (alpha {alpha:g})"))


def _save(result: GateResult, cand: Any, base: Any, candidate_id: str | None, candidates_root: Path | None,
          settings: Settings | None, save_report: bool, reports_dir: Path | None) -> None:
    from evals.workbench import store_policies, store_result, write_report
    from supervisor.warehouse.evals_store import save_candidate, save_gate_result

    if save_report:
        result.report_path = str(write_report("gates", result.gate_result_id, {}, reports_dir))
        write_report("gates", result.gate_result_id, result.model_dump(mode="json"), reports_dir)
    manifest = None
    if candidate_id is not None:
        from evals.candidates import load_candidate

        c = load_candidate(candidate_id, candidates_root)
        manifest = c.manifest.model_dump(mode="json") | {"path": str(c.path)}

    def store(wh: Any) -> None:
        store_policies(wh, [cand.policy, base.policy], f"gate:{result.gate_result_id}")
        if manifest is not None:
            save_candidate(wh, manifest)
        save_gate_result(wh, result.model_dump(mode="json"))

    err = store_result(settings, store)
    result.stored = err is None
    if err:
        log.warning("gate result %s not stored in the warehouse: %s", result.gate_result_id, err)
