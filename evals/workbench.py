"""The workbench's entry points: run, expand, replay and compare with persistence (warehouse +
JSON report). The CLI (``supervisor eval ...``) is a thin skin over these; notebooks call
them too.

Results are never lost to a busy warehouse: the JSON report is written first, and a locked
warehouse is reported (``stored=False``) instead of failing the command.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.candidates import candidates_dir
from supervisor.errors import UsageError, WarehouseError
from supervisor.ids import new_id
from supervisor.policy import Policy, baseline_policy, load_policy
from supervisor.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_REPORTS = Path("reports") / "evals"


@dataclass
class PolicyRef:
    policy: Policy
    path: str
    """What the user named (``baseline`` or a file path); never shown to a blind scorer."""


def resolve_policy(arg: str, settings: Settings | None = None) -> PolicyRef:
    """``baseline`` (the shipped default), a policy YAML path, a candidate id or name under the
    candidates folder (``$SUPERVISOR_CANDIDATES`` or ``candidates/``), or a policy id (``pol_...``)
    stored in the warehouse."""
    if arg == "baseline":
        return PolicyRef(baseline_policy(), "baseline")
    p = Path(arg)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return PolicyRef(load_policy(p), str(p))
    root = candidates_dir()
    for cand in (root / f"{arg}.yaml", root / arg / "policy.yaml"):
        if cand.exists():
            return PolicyRef(load_policy(cand), str(cand))
    if arg.startswith("pol_") and settings is not None:
        return PolicyRef(policy_by_id(settings, arg), arg)
    raise UsageError(f"no policy {arg!r}", "pass `baseline`, a policy YAML file, a candidate under candidates/, "
                     "or a policy id the warehouse has seen")


def policy_by_id(settings: Settings, policy_id: str) -> Policy:
    """A policy the warehouse stored by id (from a run, an eval, a compare or the registry)."""
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_policy_content

    with reader(settings) as wh:
        content = read_policy_content(wh, policy_id)
    if content is None:
        raise UsageError(f"the warehouse has no policy {policy_id}",
                         "policies are stored by the runs, evals and compares that used them")
    return stored_policy(policy_id, content)


def stored_policy(policy_id: str, content: dict[str, Any]) -> Policy:
    """A policy from its stored content, checked against its id (content that no longer hashes to
    it was edited or damaged and is refused)."""
    from supervisor.policy import policy_from_canonical

    try:
        policy = policy_from_canonical(content, name=str(content.get("name") or "stored"))
    except ValueError as exc:
        raise UsageError(f"the stored content of {policy_id} is not a valid policy: {str(exc).splitlines()[0]}",
                         "restore the warehouse's policies row, or use the policy file") from exc
    if policy.policy_id != policy_id:
        raise UsageError(f"the stored content of {policy_id} hashes to {policy.policy_id}",
                         "the warehouse row was edited by hand; restore it or use the policy file")
    return policy


def store_policies(wh: Any, policies: list[Policy], source: str) -> None:
    """Store every policy a workbench result used, by id with its full content."""
    from supervisor.warehouse.evals_store import save_policies

    save_policies(wh, {p.policy_id: p.model_dump(mode="json") for p in policies}, source)


def write_report(kind: str, report_id: str, data: Any, reports_dir: Path | None = None) -> Path:
    out = (reports_dir or DEFAULT_REPORTS) / kind
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{report_id}.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True, default=str) + "\n",
                    encoding="utf-8")
    return path


def store_result(settings: Settings | None, fn: Callable[[Any], None]) -> str | None:
    """Write to the warehouse; returns an error line instead of raising when it is locked/unusable
    (results are never lost to a busy warehouse: their JSON report is written first)."""
    if settings is None:
        return "no warehouse"
    from supervisor.warehouse import open_warehouse

    try:
        with open_warehouse(settings.warehouse, read_only=False, wait_s=5.0) as wh:
            fn(wh)
    except WarehouseError as exc:
        return exc.one_line()
    return None


# --------------------------------------------------------------------------- run


def eval_run(suite_spec: str, policy_arg: str, *, settings: Settings | None, save_report: bool = True,
             reports_dir: Path | None = None, episodes: bool = True, suites_root: Path | None = None,
             progress: Any = None, min_pass_rate: float | None = None) -> tuple[Any, Path | None, str | None]:
    """Run a policy over suites; store the run (warehouse) and its report. Returns
    (EvalRun, report path or None, warehouse error or None)."""
    from evals.runner import run_suites
    from evals.suites import resolve_suites
    from supervisor.warehouse.evals_store import save_eval_run

    ref = resolve_policy(policy_arg, settings)
    suites = resolve_suites(suite_spec, suites_root)
    run = run_suites(suites, ref.policy, policy_path=ref.path, episodes=episodes, progress=progress,
                     settings=settings, min_pass_rate=min_pass_rate)
    path = None
    if save_report:
        path = write_report("runs", run.eval_run_id, {}, reports_dir)
        run.report_path = str(path)
        write_report("runs", run.eval_run_id, run.model_dump(mode="json"), reports_dir)
    data = run.model_dump(mode="json")

    def store(wh: Any) -> None:
        store_policies(wh, [ref.policy], f"eval:{run.eval_run_id}")
        save_eval_run(wh, data)

    return run, path, store_result(settings, store)


# --------------------------------------------------------------------------- expand


def eval_expand(suite_spec: str, *, variants_per_case: int, seed: int, suites_root: Path | None = None,
                out_dir: Path | None = None) -> list[tuple[str, Path, int]]:
    from evals.expand import write_expanded
    from evals.suites import resolve_suites

    out = []
    for suite in resolve_suites(suite_spec, suites_root):
        if suite.header.kind != "screen" and not any(c.kind == "screen" for c in suite.cases):
            continue
        path, n = write_expanded(suite, variants_per_case=variants_per_case, seed=seed, out_dir=out_dir)
        out.append((suite.name, path, n))
    return out


# --------------------------------------------------------------------------- replay


def divergence_schema() -> dict[str, Any]:
    """The columns of ``replay_divergences`` (screens and checkpoints alike)."""
    import polars as pl

    return {"observation_id": pl.Utf8, "trigger": pl.Utf8, "run_id": pl.Utf8, "seq": pl.Int64, "screen_hash": pl.Utf8,
            "divergence": pl.Utf8, "recorded_kind": pl.Utf8, "recorded_keys": pl.Utf8, "recorded_approves": pl.Boolean,
            "replayed_kind": pl.Utf8, "replayed_keys": pl.Utf8, "replayed_approves": pl.Boolean,
            "replayed_reason": pl.Utf8}


def control_policies(wh: Any, policy_ids: list[str]) -> tuple[dict[str, Policy], list[str]]:
    """The stored policies of these ids (the controls of a replay), and the ids with no usable content."""
    from supervisor.warehouse.evals_store import read_policy_content

    out: dict[str, Policy] = {}
    missing: list[str] = []
    for pid in sorted(set(policy_ids)):
        content = read_policy_content(wh, pid)
        if content is None:
            missing.append(pid)
            continue
        try:
            out[pid] = stored_policy(pid, content)
        except UsageError as exc:
            log.warning("replay: no control policy %s: %s", pid, exc.one_line())
            missing.append(pid)
    return out, missing


def replay_evidence(settings: Settings, candidate: Policy, *, run_ids: list[str] | None = None,
                    since: float | None = None, progress: Callable[[int], None] | None = None,
                    ) -> tuple[dict[str, Any], Any, Any]:
    """Replay ``candidate`` over the warehouse's recorded runs, each against its own recorded policy,
    and re-decide their workflow checkpoints. Returns (summary, per-observation frame, divergent
    rows of both kinds). Raises when nothing recorded matches."""
    import polars as pl

    from evals.replay import checkpoint_summary, replay_checkpoints, replay_with_controls
    from supervisor.history import load_events
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import (
        read_checkpoint_run_ids,
        read_human_answers,
        read_replay_input,
    )

    with reader(settings) as wh:  # ingests fresh journal lines (and migrates) when the lock allows
        frame = read_replay_input(wh, run_ids=run_ids, since=since)
        humans = read_human_answers(wh, run_ids=run_ids, since=since)
        cp_runs = read_checkpoint_run_ids(wh, run_ids=run_ids, since=since)
        controls, missing = control_policies(wh, [p for p in frame["recorded_policy_id"].unique().to_list() if p])
    if frame.height == 0 and not cp_runs:
        raise UsageError("no recorded observations match",
                         "record runs first (`supervisor run -- ...`), or check --runs / --since (`supervisor runs`)")
    result, summary = replay_with_controls(frame, candidate, controls, humans, progress=progress)
    summary["control"]["missing_policies"] = missing
    cps: list[tuple[str, Any]] = []
    notes: list[str] = []
    for rid in cp_runs:
        events, _src = load_events(settings, rid)
        rows, run_notes = replay_checkpoints(events, candidate)
        cps += [(rid, r) for r in rows]
        notes += [f"{rid}: {n}" for n in run_notes]
    summary["checkpoints"] = checkpoint_summary([r for _, r in cps], len(cp_runs), notes)
    cp = pl.DataFrame([{"observation_id": r.trigger_id, "trigger": "checkpoint", "run_id": rid, "seq": None,
                        "screen_hash": None, "divergence": r.divergence, "recorded_kind": r.recorded,
                        "recorded_keys": None, "recorded_approves": None, "replayed_kind": r.replayed,
                        "replayed_keys": "[]", "replayed_approves": None, "replayed_reason": r.reason}
                       for rid, r in cps if r.divergence not in ("agree", "unrecorded")], schema=divergence_schema())
    obs_div = result.filter(~pl.col("divergence").is_in(["agree", "unrecorded"])).with_columns(
        pl.lit("observation").alias("trigger")).select(list(divergence_schema()))
    divergent = pl.concat([obs_div, cp], how="vertical_relaxed")
    return summary, result, divergent


def eval_replay(policy_arg: str, *, settings: Settings, run_ids: list[str] | None = None, since: float | None = None,
                save_report: bool = True, reports_dir: Path | None = None,
                progress: Callable[[int], None] | None = None) -> tuple[dict[str, Any], Any, Path | None, str | None]:
    """Replay a policy over the warehouse's recorded runs, each against the policy it was recorded
    with. Returns (summary, per-observation frame, report path, warehouse error)."""
    import polars as pl

    from evals.runner import code_version
    from supervisor.warehouse.evals_store import save_replay

    ref = resolve_policy(policy_arg, settings)
    summary, result, divergent = replay_evidence(settings, ref.policy, run_ids=run_ids, since=since,
                                                 progress=progress)
    summary.update({"replay_run_id": new_id("rpl_"), "created_at": time.time(), "code_version": code_version(),
                    "selection": json.dumps({"runs": run_ids, "since": since})})
    path = None
    if save_report:
        top = divergent.filter(pl.col("divergence") != "equivalent").head(200)
        path = write_report("replays", summary["replay_run_id"],
                            {"summary": summary, "policy_path": ref.path, "divergences": top.to_dicts()}, reports_dir)

    def store(wh: Any) -> None:
        store_policies(wh, [ref.policy], f"replay:{summary['replay_run_id']}")
        save_replay(wh, summary, divergent)

    return summary, result, path, store_result(settings, store)


# --------------------------------------------------------------------------- compare


def make_scorer(kind: str, *, policy: Policy, settings: Settings | None, hide: list[str], total: int | None = None,
                human_io: tuple[Callable[[str], str | None], Callable[[str], None]] | None = None) -> tuple[Any, Any]:
    """(scorer, judge stats or None) for ``expected | llm | human``."""
    from evals.scorers import ExpectedScorer, HumanScorer, LLMScorer

    if kind == "expected":
        return ExpectedScorer(), None
    if kind == "human":
        ask, show = human_io or (None, None)
        return HumanScorer(ask=ask, show=show, total=total), None
    if kind == "llm":
        from supervisor.judge import build_pairwise_scorer
        from supervisor.judge.base import JudgeStats

        stats = JudgeStats()
        pairwise = build_pairwise_scorer(policy, settings)  # LLMScorer adds each call to stats once
        return LLMScorer(pairwise, stats=stats, hide=hide), stats
    raise UsageError(f"unknown scorer {kind!r}", "use --scorer expected, llm or human")


def compare_items(items: list[Any], base: PolicyRef, cand: PolicyRef, *, scorer_kind: str, seed: int | None,
                  source: str, suites_named: list[str], settings: Settings | None, alpha: float = 0.05,
                  human_io: tuple[Callable[[str], str | None], Callable[[str], None]] | None = None,
                  progress: Any = None) -> Any:
    """Score ``items`` blind and judge the result (clusters, safety veto, errors). Returns a
    :class:`evals.compare.CompareOutcome`; storing it is the caller's."""
    from evals.compare import CompareOutcome, blind_compare, fresh_seed, identity_strings, summarize
    from evals.runner import code_version
    from evals.safety import safety_relaxations

    hide = identity_strings((base.policy, base.path), (cand.policy, cand.path))
    seed = fresh_seed() if seed is None else seed
    scorer, _stats = make_scorer(scorer_kind, policy=base.policy, settings=settings, hide=hide, total=len(items),
                                 human_io=human_io)
    pairs, sealed, identical, calls, cost = blind_compare(items, scorer, seed=seed, hide=hide, progress=progress)
    mapping = sealed.reveal()
    summary = summarize(new_id("cmp_"), pairs, mapping, baseline_id=base.policy.policy_id,
                        candidate_id=cand.policy.policy_id, baseline_name=base.policy.name,
                        candidate_name=cand.policy.name, source=source, suites=suites_named, scorer=scorer.name,
                        seed=seed, identical=identical, judge_calls=calls, judge_cost=cost,
                        code_version=code_version(), alpha=alpha,
                        safety_relaxations=safety_relaxations(base.policy, cand.policy))
    by_suite: dict[str, dict[str, int]] = {}
    for p in pairs:
        d = by_suite.setdefault(p.suite, {"wins": 0, "losses": 0, "ties": 0, "errors": 0})
        d[{"candidate": "wins", "baseline": "losses", "error": "errors"}.get(p.winner or "tie", "ties")] += 1
    return CompareOutcome(summary=summary, pairs=pairs, mapping=mapping, revealed_at=sealed.revealed_at or 0.0,
                          by_suite=by_suite)


def save_compare_outcome(outcome: Any, base: PolicyRef, cand: PolicyRef, *, settings: Settings | None,
                         save_report: bool = True, reports_dir: Path | None = None) -> tuple[Path | None, str | None]:
    """Write the compare's report and store it (with both policies) in the warehouse."""
    from supervisor.warehouse.evals_store import save_compare

    summary = outcome.summary
    path = None
    if save_report:
        path = write_report("compares", summary.compare_run_id, {}, reports_dir)
        summary.report_path = str(path)
        write_report("compares", summary.compare_run_id,
                     {"summary": summary.model_dump(mode="json"), "by_suite": outcome.by_suite,
                      "baseline_path": base.path, "candidate_path": cand.path,
                      "pairs": [p.model_dump(mode="json") for p in outcome.pairs if p.winner != "tie"][:500]},
                     reports_dir)

    def store(wh: Any) -> None:
        store_policies(wh, [base.policy, cand.policy], f"compare:{summary.compare_run_id}")
        save_compare(wh, summary.model_dump(mode="json"), [p.model_dump(mode="json") for p in outcome.pairs],
                     outcome.mapping, outcome.revealed_at)

    return path, store_result(settings, store)


def eval_compare(baseline_arg: str, candidate_arg: str, *, suite_spec: str | None, replay: bool = False,
                 run_ids: list[str] | None = None, since: float | None = None, scorer_kind: str = "expected",
                 seed: int | None = None, settings: Settings | None, save_report: bool = True,
                 reports_dir: Path | None = None, suites_root: Path | None = None, episodes: bool = False,
                 alpha: float = 0.05,
                 human_io: tuple[Callable[[str], str | None], Callable[[str], None]] | None = None,
                 progress: Any = None) -> tuple[Any, Path | None, str | None]:
    """A blind A/B compare on suites (both policies run over the same cases) or on recorded runs.
    Returns (CompareOutcome, report path, warehouse error)."""
    if (suite_spec is None) == (not replay):
        raise UsageError("give exactly one of --suite or --replay", "e.g. --suite all, or --replay --since 7d")
    if replay and scorer_kind == "expected":
        raise UsageError("recorded runs have no expected results", "use --scorer llm or --scorer human with --replay")
    base, cand = resolve_policy(baseline_arg, settings), resolve_policy(candidate_arg, settings)
    if replay:
        if settings is None:
            raise UsageError("--replay needs a warehouse", "pass --warehouse")
        from evals.replay import replay_compare_items

        items = replay_compare_items(settings, base.policy, cand.policy, run_ids=run_ids, since=since)
        source, suites_named = f"replay:{json.dumps({'runs': run_ids, 'since': since})}", []
    else:
        from evals.compare import case_contexts, items_from_results
        from evals.runner import run_suites
        from evals.suites import resolve_suites

        suites = resolve_suites(suite_spec or "all", suites_root)
        rb = run_suites(suites, base.policy, policy_path=base.path, episodes=episodes, settings=settings)
        rc = run_suites(suites, cand.policy, policy_path=cand.path, episodes=episodes, settings=settings)
        items = items_from_results(rb.results, rc.results, contexts=case_contexts(suites),
                                   with_expected=scorer_kind == "expected")
        source, suites_named = "suites:" + ",".join(s.name for s in suites), [s.name for s in suites]
    outcome = compare_items(items, base, cand, scorer_kind=scorer_kind, seed=seed, source=source,
                            suites_named=suites_named, settings=settings, alpha=alpha, human_io=human_io,
                            progress=progress)
    path, err = save_compare_outcome(outcome, base, cand, settings=settings, save_report=save_report,
                                     reports_dir=reports_dir)
    return outcome, path, err
