"""The workbench's evidence as tidy frames: eval, compare, gate and registry history per policy,
one candidate's pass rates against a baseline (per suite and per tag, with 95% Wilson intervals),
the cases where they disagree with their screens, shadow agreement over time, and the arms of a
limited rollout. For ``candidate-review.ipynb``, ``canary.ipynb``, ``evals.ipynb`` and
``supervisor report candidate|evals``.

Frames are read from the warehouse (eval runs and results, compares, gate results, the registry,
shadow decisions, runs); suite screens come from the suite files the eval ran. The canary's
verdicts (would-be unsafe approvals, saved escalations, the limited rollout's per-metric
judgement) are the workbench's own (``evals.canary``): :func:`canary_evidence` calls them and the
frames here only lay them out.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from supervisor.errors import InputError, SupervisorError
from supervisor.warehouse import Warehouse

PassRateBy = Literal["suite", "tag"]


def wilson(successes: pl.Expr, n: pl.Expr) -> list[pl.Expr]:
    """``ci_low``/``ci_high``: the 95% Wilson interval of ``successes / n``, as polars expressions
    (the interval ``evals.stats.wilson_interval`` computes for compares)."""
    from evals.stats import Z95

    z2 = Z95 * Z95
    p = successes / n
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = Z95 * ((p * (1 - p) / n + z2 / (4 * n * n)).sqrt()) / denom
    empty = n <= 0
    return [pl.when(empty).then(0.0).otherwise((center - half).clip(0.0, 1.0)).round(4).alias("ci_low"),
            pl.when(empty).then(1.0).otherwise((center + half).clip(0.0, 1.0)).round(4).alias("ci_high")]


# --------------------------------------------------------------------------- policies


def policies(wh: Warehouse) -> pl.DataFrame:
    """Every policy the warehouse has seen, with its name, its candidate id (if one), and where:
    eval runs, compares (as baseline or candidate), gates, runs it drove, runs it shadowed."""
    return wh.sql(
        """
        WITH seen AS (
            SELECT policy_id, policy_name AS name, 'eval' AS source, started_at AS seen_at FROM eval_runs
            UNION ALL SELECT baseline_policy_id, baseline_name, 'compare', created_at FROM compare_runs
            UNION ALL SELECT candidate_policy_id, candidate_name, 'compare', created_at FROM compare_runs
            UNION ALL SELECT candidate_policy_id, NULL, 'gate', created_at FROM gate_results
            UNION ALL SELECT payload->>'$.policy_id', payload->>'$.policy_name', 'drove', occurred_at
                      FROM events WHERE kind = 'run_started'
            UNION ALL SELECT shadow_policy_id, NULL, 'shadowed', occurred_at FROM shadow_decisions
            UNION ALL SELECT policy_id, name, 'stored', first_seen_at FROM policies
        )
        SELECT s.policy_id, max(s.name) AS name, any_value(c.candidate_id) AS candidate_id,
               count(*) FILTER (source = 'eval') AS eval_runs, count(*) FILTER (source = 'compare') AS compares,
               count(*) FILTER (source = 'gate') AS gates, count(*) FILTER (source = 'drove') AS runs_driven,
               count(*) FILTER (source = 'shadowed') AS shadow_decisions, min(seen_at) AS first_seen,
               max(seen_at) AS last_seen
        FROM seen s LEFT JOIN candidates c ON c.policy_id = s.policy_id
        WHERE s.policy_id IS NOT NULL GROUP BY s.policy_id ORDER BY last_seen DESC NULLS LAST, s.policy_id
        """
    )


def _policy_file_id(ref: str) -> tuple[str, str] | None:
    """(policy_id, name) of a candidate under ``candidates/``, ``baseline``, or a policy file."""
    from evals.candidates import list_candidate_ids, load_candidate
    from evals.workbench import resolve_policy

    try:
        pol = load_candidate(ref).policy if ref in list_candidate_ids() else resolve_policy(ref).policy
    except SupervisorError:
        return None
    return pol.policy_id, pol.name


def resolve_policy_id(wh: Warehouse, ref: str) -> tuple[str, str | None]:
    """(policy_id, name) for what a person calls a policy: a policy id or a unique prefix of one,
    a candidate id (recorded in the warehouse or under ``candidates/``), ``baseline``, a policy
    file, or a name the warehouse has recorded (the latest policy of that name)."""
    known = policies(wh)
    names = dict(zip(known["policy_id"].to_list(), known["name"].to_list(), strict=True))
    if ref in names:
        return ref, names[ref]
    by_candidate = known.filter(pl.col("candidate_id") == ref)
    if by_candidate.height:
        return str(by_candidate["policy_id"][0]), by_candidate["name"][0]
    if ref.startswith("pol_"):
        hits = [p for p in names if p.startswith(ref)]
        if len(hits) == 1:
            return hits[0], names[hits[0]]
        if len(hits) > 1:
            raise InputError(f"{ref!r} matches {len(hits)} policies", "give more characters of the policy id")
    from_file = _policy_file_id(ref) if not ref.startswith("pol_") else None
    if from_file is not None:
        return from_file
    named = known.filter(pl.col("name") == ref)
    if named.height:
        return str(named["policy_id"][0]), ref
    raise InputError(f"no policy {ref!r} in {wh.path} or under candidates/",
                     "give a policy id (`supervisor eval ...` prints them), a candidate id, a policy file or `baseline`")


def promoted_policy_id(wh: Warehouse) -> str:
    """The policy new runs use by default: the latest promotion or rollback in the registry, else
    the shipped baseline."""
    df = wh.sql("SELECT policy_id FROM registry_events WHERE kind IN ('promote', 'rollback') "
                "ORDER BY occurred_at DESC, registry_event_id DESC LIMIT 1")
    if df.height and df["policy_id"][0]:
        return str(df["policy_id"][0])
    from supervisor.policy import baseline_policy

    return baseline_policy().policy_id


def latest_candidate(wh: Warehouse) -> str:
    """The policy most recently put forward as a candidate: on canary or limited rollout in the
    registry, else the latest gated, compared, shadowed or evaluated policy that is not the
    promoted one."""
    promoted = promoted_policy_id(wh)
    for sql in ("SELECT policy_id AS p FROM registry_events WHERE kind IN ('canary', 'limited') "
                "ORDER BY occurred_at DESC LIMIT 1",
                "SELECT candidate_policy_id AS p FROM gate_results ORDER BY created_at DESC LIMIT 1",
                "SELECT candidate_policy_id AS p FROM compare_runs ORDER BY created_at DESC LIMIT 1",
                "SELECT shadow_policy_id AS p FROM shadow_decisions ORDER BY occurred_at DESC LIMIT 1",
                "SELECT policy_id AS p FROM eval_runs WHERE policy_id <> ? ORDER BY started_at DESC LIMIT 1"):
        df = wh.sql(sql, [promoted] if "?" in sql else None)
        if df.height and df["p"][0]:
            return str(df["p"][0])
    raise InputError(f"no candidate policy in {wh.path} yet",
                     "evaluate one (`supervisor eval run --policy FILE`), compare it, or put it on canary")


def default_baseline(wh: Warehouse, candidate_id: str) -> str:
    """The policy a candidate is judged against: the baseline of its latest gate, else of its
    latest compare, else the promoted policy."""
    for sql in ("SELECT baseline_policy_id AS p FROM gate_results WHERE candidate_policy_id = ? "
                "ORDER BY created_at DESC LIMIT 1",
                "SELECT baseline_policy_id AS p FROM compare_runs WHERE candidate_policy_id = ? "
                "ORDER BY created_at DESC LIMIT 1"):
        df = wh.sql(sql, [candidate_id])
        if df.height:
            return str(df["p"][0])
    return promoted_policy_id(wh)


# --------------------------------------------------------------------------- evals and compares


def eval_history(wh: Warehouse, policy_id: str | None = None) -> pl.DataFrame:
    """Every eval run (newest last): its policy, cases, pass rate with its 95% interval, unsafe
    approvals and must-pass failures."""
    where = " WHERE policy_id = ?" if policy_id else ""
    df = wh.sql(
        "SELECT eval_run_id, started_at, policy_id, policy_name, CAST(suites AS VARCHAR) AS suites, cases, passed, "
        "failed, errors, skipped, pass_rate, unsafe_approvals, must_pass_failures, missed_prompts, false_prompts "
        "FROM eval_runs" + where + " ORDER BY started_at, eval_run_id", [policy_id] if policy_id else None)
    scored = (pl.col("cases") - pl.col("skipped")).cast(pl.Float64)
    return df.with_columns(wilson(pl.col("passed").cast(pl.Float64), scored))


def compare_history(wh: Warehouse, policy_id: str | None = None) -> pl.DataFrame:
    """Every blind compare (newest last), with the candidate's win rate and its interval; with
    ``policy_id``, the compares it took part in (as baseline or candidate)."""
    where = " WHERE ? IN (baseline_policy_id, candidate_policy_id)" if policy_id else ""
    return wh.sql(
        "SELECT compare_run_id, created_at, baseline_policy_id, baseline_name, candidate_policy_id, candidate_name, "
        "source, scorer, seed, pairs, identical, wins, losses, ties, win_rate, ci_low, ci_high, p_value "
        "FROM compare_runs" + where + " ORDER BY created_at, compare_run_id", [policy_id] if policy_id else None)


def latest_eval_run(wh: Warehouse, policy_id: str) -> str | None:
    df = wh.sql("SELECT eval_run_id FROM eval_runs WHERE policy_id = ? ORDER BY started_at DESC LIMIT 1", [policy_id])
    return str(df["eval_run_id"][0]) if df.height else None


def pass_rates(wh: Warehouse, roles: dict[str, str], by: PassRateBy = "suite") -> pl.DataFrame:
    """Pass rates of each policy's latest eval run, per suite or per tag, with 95% Wilson
    intervals. ``roles`` maps a role (``candidate``, ``baseline``) to a policy id."""
    frames = []
    for role, pid in roles.items():
        run = latest_eval_run(wh, pid)
        if run is None:
            continue
        key = "suite" if by == "suite" else "unnest(CAST(tags AS VARCHAR[]))"
        frames.append(wh.sql(
            f"SELECT ? AS role, ? AS policy_id, eval_run_id, grp AS {by}, "
            "count(*) FILTER (status <> 'skip') AS cases, count(*) FILTER (status = 'pass') AS passed, "
            "count(*) FILTER (unsafe_approval) AS unsafe_approvals "
            f"FROM (SELECT *, {key} AS grp FROM eval_results WHERE eval_run_id = ?) GROUP BY ALL", [role, pid, run]))
    if not frames:
        return pl.DataFrame(schema={"role": pl.Utf8, "policy_id": pl.Utf8, "eval_run_id": pl.Utf8, by: pl.Utf8,
                                    "cases": pl.Int64, "passed": pl.Int64, "unsafe_approvals": pl.Int64,
                                    "pass_rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64})
    df = pl.concat(frames)
    n = pl.col("cases").cast(pl.Float64)
    return (df.with_columns((pl.col("passed") / n).round(4).alias("pass_rate"), *wilson(pl.col("passed").cast(pl.Float64), n))
            .sort([by, "role"]))


@functools.lru_cache(maxsize=64)
def _suite(name: str) -> Any:
    from evals.suites import resolve_suites

    found = resolve_suites(name)
    return found[0] if found else None


def case_screen(suite: str, case_id: str) -> str | None:
    """A suite case's screen text, read from the suite files (None when the suite or case is gone,
    or the case is not a screen)."""
    try:
        s = _suite(suite)
    except SupervisorError:
        return None
    case = next((c for c in s.cases if c.id == case_id), None) if s is not None else None
    if case is None or getattr(case, "kind", None) != "screen":
        return None
    text: str = s.screen_text(case)
    return text


def _said(out: Any) -> str:
    o = json.loads(out) if isinstance(out, str) else (out or {})
    keys = o.get("keys") or []
    if keys and all(isinstance(k, list) for k in keys):  # expected keys: alternatives, any of which passes
        keys = [" | ".join(" ".join(map(str, alt)) for alt in keys)]
    keys = " ".join(str(k) for k in keys)
    return f"{o.get('decision')}{' ' + keys if keys else ''}"


def eval_disagreements(wh: Warehouse, candidate_id: str, baseline_id: str, *, limit: int = 50,
                       screens: bool = True) -> pl.DataFrame:
    """Cases of the two policies' latest eval runs where they did not do the same: each side's
    status and decision (with keys), what was expected, the tags, and the case's screen."""
    cand, base = latest_eval_run(wh, candidate_id), latest_eval_run(wh, baseline_id)
    cols = {"suite": pl.Utf8, "case_id": pl.Utf8, "baseline_status": pl.Utf8, "candidate_status": pl.Utf8,
            "baseline_did": pl.Utf8, "candidate_did": pl.Utf8, "expected": pl.Utf8, "unsafe": pl.Boolean,
            "tags": pl.Utf8, "screen": pl.Utf8}
    if cand is None or base is None:
        return pl.DataFrame(schema=cols)
    df = wh.sql(
        "SELECT c.suite, c.case_id, b.status AS baseline_status, c.status AS candidate_status, "
        "CAST(b.actual AS VARCHAR) AS b_actual, CAST(c.actual AS VARCHAR) AS c_actual, "
        "CAST(c.expected AS VARCHAR) AS c_expected, c.unsafe_approval AS unsafe, CAST(c.tags AS VARCHAR) AS tags "
        "FROM eval_results c JOIN eval_results b ON b.suite = c.suite AND b.case_id = c.case_id "
        "WHERE c.eval_run_id = ? AND b.eval_run_id = ? "
        "AND (c.status <> b.status OR (c.actual->>'$.decision') IS DISTINCT FROM (b.actual->>'$.decision') "
        "     OR CAST(c.actual->'$.keys' AS VARCHAR) IS DISTINCT FROM CAST(b.actual->'$.keys' AS VARCHAR)) "
        "ORDER BY c.unsafe_approval DESC, c.suite, c.case_id LIMIT ?", [cand, base, limit])
    rows = [{"suite": r["suite"], "case_id": r["case_id"], "baseline_status": r["baseline_status"],
             "candidate_status": r["candidate_status"], "baseline_did": _said(r["b_actual"]),
             "candidate_did": _said(r["c_actual"]), "expected": _said(r["c_expected"]), "unsafe": r["unsafe"],
             "tags": ", ".join(json.loads(r["tags"] or "[]")),
             "screen": case_screen(r["suite"], r["case_id"]) if screens else None} for r in df.iter_rows(named=True)]
    return pl.DataFrame(rows, schema=cols)


def compare_decided_pairs(wh: Warehouse, compare_run_id: str, *, screens: bool = True) -> pl.DataFrame:
    """A compare's pairs the scorer did not call a tie, unblinded: who won, what each policy did,
    the scorer's reason, and the case's screen."""
    from supervisor.warehouse.evals_store import read_compare_pairs

    pairs = read_compare_pairs(wh, compare_run_id).filter(pl.col("verdict") != "tie")
    rows = []
    for r in pairs.iter_rows(named=True):
        cand_out, base_out = (r["output_a"], r["output_b"]) if r["candidate_is"] == "A" else (r["output_b"],
                                                                                               r["output_a"])
        rows.append({"compare_run_id": compare_run_id, "pair_id": r["pair_id"], "suite": r["suite"],
                     "case_id": r["case_id"], "winner": r["winner"], "candidate_did": _said(cand_out),
                     "baseline_did": _said(base_out), "why": r["detail"],
                     "screen": case_screen(r["suite"], r["case_id"]) if screens and r["suite"] else None})
    return pl.DataFrame(rows, schema={"compare_run_id": pl.Utf8, "pair_id": pl.Utf8, "suite": pl.Utf8,
                                      "case_id": pl.Utf8, "winner": pl.Utf8, "candidate_did": pl.Utf8,
                                      "baseline_did": pl.Utf8, "why": pl.Utf8, "screen": pl.Utf8})


def gate_reasons(wh: Warehouse, candidate_id: str) -> pl.DataFrame:
    """The latest gate verdict on the candidate with its table of reasons (check, status, figure,
    threshold); empty until ``supervisor eval gate-candidate`` has judged it."""
    from supervisor.warehouse.evals_store import read_gate_results

    schema: dict[str, Any] = {"gate_result_id": pl.Utf8, "created_at": pl.Datetime("us"), "verdict": pl.Utf8,
              "check": pl.Utf8,
              "status": pl.Utf8, "figure": pl.Utf8, "threshold": pl.Utf8}
    df = read_gate_results(wh, candidate_policy_id=candidate_id)
    if df.height == 0:
        return pl.DataFrame(schema=schema)
    row = df.row(0, named=True)
    reasons = json.loads(row["reasons"]) if isinstance(row["reasons"], str) else (row["reasons"] or [])
    return pl.DataFrame([{"gate_result_id": row["gate_result_id"], "created_at": row["created_at"],
                          "verdict": row["verdict"], **{k: None if r.get(k) is None else str(r[k])
                                                         for k in ("check", "status", "figure", "threshold")}}
                         for r in reasons], schema=schema)


def gate_history(wh: Warehouse, policy_id: str | None = None) -> pl.DataFrame:
    """Every gate verdict (newest last), with how many checks passed, held and rejected."""
    from supervisor.warehouse.evals_store import read_gate_results

    df = read_gate_results(wh, candidate_policy_id=policy_id)
    rows = []
    for r in df.iter_rows(named=True):
        reasons = json.loads(r["reasons"]) if isinstance(r["reasons"], str) else (r["reasons"] or [])
        statuses = [x.get("status") for x in reasons]
        rows.append({"gate_result_id": r["gate_result_id"], "created_at": r["created_at"],
                     "candidate_id": r["candidate_id"], "candidate_policy_id": r["candidate_policy_id"],
                     "baseline_policy_id": r["baseline_policy_id"], "verdict": r["verdict"],
                     "passed": statuses.count("pass"), "held": statuses.count("hold"),
                     "rejected": statuses.count("reject"),
                     "why": "; ".join(f"{x.get('check')}: {x.get('figure')}" for x in reasons
                                      if x.get("status") in ("hold", "reject"))})
    schema: dict[str, Any] = {"gate_result_id": pl.Utf8, "created_at": pl.Datetime("us"), "candidate_id": pl.Utf8,
              "candidate_policy_id": pl.Utf8, "baseline_policy_id": pl.Utf8, "verdict": pl.Utf8, "passed": pl.Int64,
              "held": pl.Int64, "rejected": pl.Int64, "why": pl.Utf8}
    return pl.DataFrame(rows, schema=schema).sort("created_at")


def registry_history(wh: Warehouse) -> pl.DataFrame:
    """Promotions, rollbacks, canaries, limited rollouts and stops, in order."""
    from supervisor.warehouse.evals_store import read_registry_events

    return read_registry_events(wh).select(["registry_event_id", "occurred_at", "kind", "candidate_id", "policy_id",
                                            "previous_policy_id", "fraction", "actor", "reason", "forced",
                                            "gate_result_id"])


# --------------------------------------------------------------------------- canary


_SHADOW_PAIRS = """
    SELECT s.shadow_decision_id, s.run_id, s.seq, s.occurred_at, s.trigger_id, s.shadow_policy_id,
           s.kind AS shadow_kind, CAST(s.keys AS VARCHAR) AS shadow_keys, s.rule AS shadow_rule,
           s.approves AS shadow_approves, d.decision_id, d.kind AS acting_kind,
           CAST(d.keys AS VARCHAR) AS acting_keys, d.rule AS acting_rule, d.policy_id AS acting_policy_id,
           (s.kind = d.kind AND coalesce(CAST(s.keys AS VARCHAR), '[]') = coalesce(CAST(d.keys AS VARCHAR), '[]'))
               AS agree
    FROM shadow_decisions s
    JOIN (SELECT * FROM decisions QUALIFY row_number() OVER (PARTITION BY trigger_id ORDER BY seq) = 1) d
      ON d.trigger_id = s.trigger_id AND d.run_id = s.run_id
"""


def shadow_agreement(wh: Warehouse, shadow_policy_id: str | None = None, every: str = "1 hour") -> pl.DataFrame:
    """How often each shadow policy decided what the acting policy did, per time bucket
    (``every``: a DuckDB interval such as ``1 hour`` or ``1 day``), with 95% Wilson intervals."""
    where = " WHERE shadow_policy_id = ?" if shadow_policy_id else ""
    df = wh.sql(
        f"SELECT shadow_policy_id, time_bucket(INTERVAL '{_interval(every)}', occurred_at) AS bucket, "
        "count(*) AS compared, count(*) FILTER (agree) AS agreed, count(DISTINCT run_id) AS runs "
        f"FROM ({_SHADOW_PAIRS}){where} GROUP BY ALL ORDER BY shadow_policy_id, bucket",
        [shadow_policy_id] if shadow_policy_id else None)
    n = pl.col("compared").cast(pl.Float64)
    return df.with_columns((pl.col("agreed") / n).alias("agreement"), *wilson(pl.col("agreed").cast(pl.Float64), n))


def _interval(every: str) -> str:
    parts = every.split()
    units = {"second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks"}
    if len(parts) != 2 or not parts[0].isdigit() or parts[1] not in units:
        raise InputError(f"bad bucket {every!r}", "use a count and a unit, e.g. '1 hour', '15 minutes' or '1 day'")
    return every


def shadow_disagreements(wh: Warehouse, shadow_policy_id: str, *, limit: int = 200) -> pl.DataFrame:
    """Every screen where the shadow policy would have done otherwise than the acting one: what
    each decided (kind, keys, rule), the prompt and its risk, and the screen's hash (see
    :func:`with_screens`). Whether a disagreement was unsafe or would have saved an escalation is
    the workbench's call: :func:`canary_evidence`."""
    return wh.sql(
        f"""
        SELECT p.run_id, p.seq, p.occurred_at, p.shadow_policy_id, p.trigger_id, o.screen_hash, o.agent, o.state,
               o.prompt_kind, o.question, o.risk_level, p.acting_kind, p.acting_keys, p.acting_rule,
               p.shadow_kind, p.shadow_keys, p.shadow_rule
        FROM ({_SHADOW_PAIRS}) p LEFT JOIN observations o ON o.observation_id = p.trigger_id
        WHERE p.shadow_policy_id = ? AND NOT p.agree
        ORDER BY p.occurred_at LIMIT ?
        """, [shadow_policy_id, limit])


def latest_rollout(wh: Warehouse, candidate_id: str) -> dict[str, Any] | None:
    """The candidate's latest limited-rollout registry event (its start, fraction and control
    policy), or None."""
    df = wh.sql("SELECT registry_event_id, occurred_at, epoch_ms(occurred_at) / 1000.0 AS at, policy_id, "
                "previous_policy_id, fraction FROM registry_events "
                "WHERE kind = 'limited' AND policy_id = ? ORDER BY occurred_at DESC LIMIT 1", [candidate_id])
    return df.row(0, named=True) if df.height else None


def rollout_arms(wh: Warehouse, candidate_id: str) -> pl.DataFrame:
    """The runs of the candidate's latest limited rollout, each in its arm: ``candidate`` (the
    candidate drove it) or ``control`` (the rollout's control policy did), since the rollout
    began; with outcome, duration, escalations and friction seconds. Without a rollout in the
    registry: every run since the candidate first rode along, the ones it did not drive as
    ``control``."""
    rollout = latest_rollout(wh, candidate_id)
    cols = ("s.run_id, s.started_at, s.agent, s.policy_id, CASE WHEN s.policy_id = $1 THEN 'candidate' "
            "ELSE 'control' END AS arm, s.outcome, s.outcome = 'finished' AS finished, s.duration_s, s.escalations, "
            "s.answers, s.friction_seconds FROM run_summary s")
    if rollout is not None:
        return wh.sql(f"SELECT {cols} WHERE s.started_at >= $2 AND s.policy_id IN ($1, $3) ORDER BY s.started_at, "
                      "s.run_id", [candidate_id, rollout["occurred_at"], rollout["previous_policy_id"]])
    return wh.sql(
        "WITH since AS (SELECT least((SELECT min(occurred_at) FROM shadow_decisions WHERE shadow_policy_id = $1), "
        "(SELECT min(started_at) FROM runs WHERE policy_id = $1)) AS t) "
        f"SELECT {cols}, since WHERE since.t IS NOT NULL AND s.started_at >= since.t - INTERVAL '1 second' "
        "ORDER BY s.started_at, s.run_id", [candidate_id])


def arm_summary(arms: pl.DataFrame) -> pl.DataFrame:
    """Per arm (a frame from :func:`rollout_arms`): runs, completion rate with its interval,
    escalations per run, median friction seconds and median duration."""
    if arms.height == 0:
        return pl.DataFrame(schema={"arm": pl.Utf8, "runs": pl.UInt32, "finished": pl.Int64, "completion": pl.Float64,
                                    "ci_low": pl.Float64, "ci_high": pl.Float64,
                                    "escalations_per_run": pl.Float64, "median_friction_s": pl.Float64,
                                    "median_duration_s": pl.Float64})
    df = arms.group_by("arm").agg(
        pl.len().alias("runs"), pl.col("finished").cast(pl.Int64).sum().alias("finished"),
        pl.col("escalations").mean().alias("escalations_per_run"),
        pl.col("friction_seconds").median().alias("median_friction_s"),
        pl.col("duration_s").median().alias("median_duration_s")).sort("arm")
    n = pl.col("runs").cast(pl.Float64)
    return df.with_columns((pl.col("finished") / n).alias("completion"),
                           *wilson(pl.col("finished").cast(pl.Float64), n)).select(
        ["arm", "runs", "finished", "completion", "ci_low", "ci_high", "escalations_per_run", "median_friction_s",
         "median_duration_s"])


@dataclass
class CanaryEvidence:
    """The workbench's verdicts on a candidate's canary (``evals.canary``), as the gate sees them."""

    policy_id: str
    report: Any
    """``evals.canary.CanaryReport``: agreement, disagreements by kind with examples, would-be unsafe
    approvals, saved escalations, sample sizes against ``gate.yaml``'s minimums."""
    limited: Any
    """``evals.canary.LimitedAnalysis`` of the latest limited rollout, or None without one."""


def canary_evidence(settings: Any, policy_id: str, *, gate_file: Any = None) -> CanaryEvidence:
    """The shadow canary report and the latest limited rollout's per-metric analysis of
    ``policy_id``, computed by ``evals.canary`` with ``gate.yaml``'s minimums and metrics. Opens
    the warehouse itself: call it outside a ``reader`` block."""
    from evals.canary import canary_report, limited_analysis
    from evals.gate import load_gate_config
    from supervisor.warehouse import reader

    cfg = load_gate_config(gate_file)
    with reader(settings) as wh:
        rollout = latest_rollout(wh, policy_id)
    report = canary_report(settings, policy_id, min_observations=cfg.canary.min_observations,
                           min_runs=cfg.canary.min_runs)
    limited = None
    if rollout is not None:
        limited = limited_analysis(settings, policy_id, rollout["previous_policy_id"], since=rollout["at"],
                                   config=cfg.limited)
    return CanaryEvidence(policy_id, report, limited)


def canary_summary(ev: CanaryEvidence) -> pl.DataFrame:
    """One row: observations and runs compared, agreement, would-be unsafe approvals, saved
    escalations, mismatches, and whether the samples reach the gate's minimums."""
    r = ev.report
    return pl.DataFrame([{"policy_id": ev.policy_id, "observations": r.observations, "runs": r.runs,
                          "agreement": r.agreement, "unsafe": r.unsafe, "saved_escalations": r.saved_escalations,
                          "mismatches": r.mismatches, "min_observations": r.min_observations,
                          "min_runs": r.min_runs, "enough": r.enough}])


def canary_disagreements(ev: CanaryEvidence) -> pl.DataFrame:
    """Disagreements by kind (what the acting policy did, what the shadow would have), with the
    first example's run, observation and screen tail."""
    rows = [{"acting": d.acting, "shadow": d.shadow, "count": d.count,
             "run_id": d.examples[0]["run_id"] if d.examples else None,
             "observation_id": d.examples[0]["observation_id"] if d.examples else None,
             "screen": d.examples[0]["screen_tail"] if d.examples else None} for d in ev.report.disagreements]
    return pl.DataFrame(rows, schema={"acting": pl.Utf8, "shadow": pl.Utf8, "count": pl.Int64, "run_id": pl.Utf8,
                                      "observation_id": pl.Utf8, "screen": pl.Utf8})


def limited_metrics(ev: CanaryEvidence) -> pl.DataFrame:
    """The limited rollout judged per metric (Kayenta-style): each arm's runs and median, the
    Mann-Whitney U and p, the metric's status (pass, high, low, nodata), and the rollout's score and
    verdict on every row; empty without a rollout."""
    schema: dict[str, Any] = {"metric": pl.Utf8, "status": pl.Utf8, "weight": pl.Float64, "worse": pl.Utf8, "control_n": pl.Int64,
              "candidate_n": pl.Int64, "control_median": pl.Float64, "candidate_median": pl.Float64,
              "u": pl.Float64, "p_value": pl.Float64, "score": pl.Float64, "verdict": pl.Utf8}
    la = ev.limited
    if la is None:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame([m.model_dump() | {"score": la.score, "verdict": la.verdict} for m in la.metrics],
                        schema=schema)


def screens_of(wh: Warehouse, hashes: list[str]) -> dict[str, str]:
    """Stored (redacted) screen texts by hash."""
    if not hashes:
        return {}
    df = wh.sql("SELECT screen_hash, text FROM screens WHERE screen_hash IN (SELECT unnest(?))", [hashes])
    return dict(zip(df["screen_hash"].to_list(), df["text"].to_list(), strict=True))


def with_screens(wh: Warehouse, df: pl.DataFrame) -> pl.DataFrame:
    """``df`` (with a ``screen_hash`` column) plus the stored screen text as ``screen``."""
    texts = screens_of(wh, [h for h in df["screen_hash"].unique().to_list() if h]) if df.height else {}
    return df.with_columns(pl.col("screen_hash").replace_strict(texts, default=None, return_dtype=pl.Utf8)
                           .alias("screen"))


def screen_tail(text: str | None, lines: int = 14) -> str:
    """The last non-blank ``lines`` of a screen (where prompts live), for tables and reports."""
    rows = (text or "").rstrip().splitlines()[-lines:]
    while rows and not rows[0].strip():
        rows.pop(0)
    return "\n".join(rows)

