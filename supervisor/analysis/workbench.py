"""The workbench's evidence as tidy frames: eval and compare history per policy, one candidate's
pass rates against a baseline (per suite and per tag, with 95% Wilson intervals), the cases where
they disagree with their screens, shadow agreement over time, and the arms of a limited rollout.
For ``candidate-review.ipynb``, ``canary.ipynb``, ``evals.ipynb`` and ``supervisor report
candidate|evals``.

Everything is read from the warehouse (eval runs and results, compares, shadow decisions, runs);
suite screens come from the suite files the eval ran. Gate results are shown when the warehouse
has them (``gate_results``).
"""

from __future__ import annotations

import functools
import json
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


def _table_exists(wh: Warehouse, name: str) -> bool:
    return bool(wh.sql("SELECT count(*) AS n FROM information_schema.tables WHERE table_name = ?", [name])["n"][0])


# --------------------------------------------------------------------------- policies


def policies(wh: Warehouse) -> pl.DataFrame:
    """Every policy the warehouse has seen, with its name and where: eval runs, compares (as
    baseline or candidate), runs it drove, runs it shadowed."""
    return wh.sql(
        """
        WITH seen AS (
            SELECT policy_id, policy_name AS name, 'eval' AS source, started_at AS seen_at FROM eval_runs
            UNION ALL SELECT baseline_policy_id, baseline_name, 'compare', created_at FROM compare_runs
            UNION ALL SELECT candidate_policy_id, candidate_name, 'compare', created_at FROM compare_runs
            UNION ALL SELECT payload->>'$.policy_id', payload->>'$.policy_name', 'drove', occurred_at
                      FROM events WHERE kind = 'run_started'
            UNION ALL SELECT shadow_policy_id, NULL, 'shadowed', occurred_at FROM shadow_decisions
        )
        SELECT policy_id, max(name) AS name, count(*) FILTER (source = 'eval') AS eval_runs,
               count(*) FILTER (source = 'compare') AS compares, count(*) FILTER (source = 'drove') AS runs_driven,
               count(*) FILTER (source = 'shadowed') AS shadow_decisions, min(seen_at) AS first_seen, max(seen_at) AS last_seen
        FROM seen WHERE policy_id IS NOT NULL GROUP BY policy_id ORDER BY last_seen DESC, policy_id
        """
    )


def _policy_file_id(ref: str) -> tuple[str, str] | None:
    """(policy_id, name) of ``baseline``, a policy file, or a candidate under ``candidates/``."""
    from evals.suites import REPO_ROOT
    from evals.workbench import resolve_policy
    from supervisor.policy import load_policy

    folder = REPO_ROOT / "candidates" / ref / "policy.yaml"
    try:
        pol = load_policy(folder) if folder.is_file() else resolve_policy(ref).policy
    except SupervisorError:
        return None
    return pol.policy_id, pol.name


def resolve_policy_id(wh: Warehouse, ref: str) -> tuple[str, str | None]:
    """(policy_id, name) for what a person calls a policy: a policy id or a unique prefix of one,
    ``baseline``, a policy file, a candidate id (``candidates/ID/``), or a name the warehouse has
    recorded (the latest policy of that name)."""
    known = policies(wh)
    names = dict(zip(known["policy_id"].to_list(), known["name"].to_list(), strict=True))
    if ref in names:
        return ref, names[ref]
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


def latest_candidate(wh: Warehouse) -> str:
    """The policy most recently put forward as a candidate: the latest compare's candidate, else
    the latest shadow policy, else the latest policy evaluated that is not the shipped baseline."""
    from supervisor.policy import baseline_policy

    shipped = baseline_policy().policy_id
    for sql in ("SELECT candidate_policy_id AS p FROM compare_runs ORDER BY created_at DESC LIMIT 1",
                "SELECT shadow_policy_id AS p FROM shadow_decisions ORDER BY occurred_at DESC LIMIT 1",
                "SELECT policy_id AS p FROM eval_runs WHERE policy_id <> ? ORDER BY started_at DESC LIMIT 1"):
        df = wh.sql(sql, [shipped] if "?" in sql else None)
        if df.height:
            return str(df["p"][0])
    raise InputError(f"no candidate policy in {wh.path} yet",
                     "evaluate one (`supervisor eval run --policy FILE`), compare it, or run it as a shadow")


def default_baseline(wh: Warehouse, candidate_id: str) -> str:
    """The policy a candidate is judged against: the baseline of its latest compare, else the
    shipped baseline."""
    df = wh.sql("SELECT baseline_policy_id FROM compare_runs WHERE candidate_policy_id = ? "
                "ORDER BY created_at DESC LIMIT 1", [candidate_id])
    if df.height:
        return str(df["baseline_policy_id"][0])
    from supervisor.policy import baseline_policy

    return baseline_policy().policy_id


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
        "AND (c.status <> b.status OR c.actual->>'$.decision' IS DISTINCT FROM b.actual->>'$.decision' "
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
    """The latest gate verdict on the candidate with its reasons (check, status, figure,
    threshold), when the warehouse records gate results; empty otherwise."""
    empty = pl.DataFrame(schema={"gate_result_id": pl.Utf8, "verdict": pl.Utf8, "check": pl.Utf8, "status": pl.Utf8,
                                 "figure": pl.Utf8, "threshold": pl.Utf8})
    if not _table_exists(wh, "gate_results"):
        return empty
    df = wh.sql("SELECT * FROM gate_results WHERE candidate_policy_id = ? ORDER BY created_at DESC LIMIT 1",
                [candidate_id])
    if df.height == 0:
        return empty
    row = df.row(0, named=True)
    reasons = json.loads(row["reasons"]) if isinstance(row.get("reasons"), str) else (row.get("reasons") or [])
    return pl.DataFrame([{"gate_result_id": row.get("gate_result_id"), "verdict": row.get("verdict"),
                          **{k: None if r.get(k) is None else str(r.get(k))
                             for k in ("check", "status", "figure", "threshold")}} for r in reasons], schema=empty.schema)


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
    """The screens where the shadow policy would have done otherwise: what each decided, the
    prompt and its risk, the class of disagreement (``would_answer``: the shadow answers what the
    acting policy did not; ``would_escalate``; ``other``), ``unsafe`` (the shadow approves a
    prompt whose risk is dangerous or unknown), and ``saved_escalation`` (the acting policy
    escalated and the human then pressed exactly the keys the shadow would have sent)."""
    return wh.sql(
        f"""
        SELECT p.run_id, p.seq, p.occurred_at, p.shadow_policy_id, p.trigger_id, o.screen_hash, o.agent, o.state,
               o.prompt_kind, o.question, o.risk_level, p.acting_kind, p.acting_keys, p.acting_rule,
               p.shadow_kind, p.shadow_keys, p.shadow_rule,
               CASE WHEN p.shadow_kind = 'answer' AND p.acting_kind <> 'answer' THEN 'would_answer'
                    WHEN p.shadow_kind = 'escalate' AND p.acting_kind <> 'escalate' THEN 'would_escalate'
                    ELSE 'other' END AS disagreement,
               coalesce(p.shadow_approves AND o.risk_level IN ('dangerous', 'unknown'), false) AS unsafe,
               coalesce(p.acting_kind = 'escalate' AND p.shadow_kind = 'answer'
                        AND CAST(f.human_keys AS VARCHAR) = p.shadow_keys, false) AS saved_escalation,
               f.ended_by AS escalation_ended_by, CAST(f.human_keys AS VARCHAR) AS human_keys
        FROM ({_SHADOW_PAIRS}) p
        LEFT JOIN observations o ON o.observation_id = p.trigger_id
        LEFT JOIN friction_events f ON f.kind = 'escalation' AND f.decision_id = p.decision_id
        WHERE p.shadow_policy_id = ? AND NOT p.agree
        ORDER BY unsafe DESC, p.occurred_at LIMIT ?
        """, [shadow_policy_id, limit])


def disagreement_summary(df: pl.DataFrame) -> pl.DataFrame:
    """Disagreements (a frame from :func:`shadow_disagreements`) per class and prompt kind."""
    if df.height == 0:
        return pl.DataFrame(schema={"disagreement": pl.Utf8, "prompt_kind": pl.Utf8, "screens": pl.UInt32,
                                    "unsafe": pl.UInt32, "saved_escalations": pl.UInt32})
    return (df.group_by(["disagreement", "prompt_kind"])
            .agg(pl.len().alias("screens"), pl.col("unsafe").sum().cast(pl.UInt32),
                 pl.col("saved_escalation").sum().cast(pl.UInt32).alias("saved_escalations"))
            .sort(["screens", "disagreement"], descending=[True, False]))


def rollout_arms(wh: Warehouse, candidate_id: str) -> pl.DataFrame:
    """Runs since the candidate first rode along (as a shadow or driving), each in its arm:
    ``candidate`` (the candidate drove it) or ``incumbent``; with outcome, duration, escalations
    and friction seconds."""
    return wh.sql(
        """
        WITH since AS (
            SELECT least((SELECT min(occurred_at) FROM shadow_decisions WHERE shadow_policy_id = $1),
                         (SELECT min(started_at) FROM runs WHERE policy_id = $1)) AS t
        )
        SELECT s.run_id, s.started_at, s.agent, s.policy_id,
               CASE WHEN s.policy_id = $1 THEN 'candidate' ELSE 'incumbent' END AS arm,
               s.outcome, s.outcome = 'finished' AS finished, s.duration_s, s.escalations, s.answers,
               s.friction_seconds
        FROM run_summary s, since WHERE since.t IS NOT NULL AND s.started_at >= since.t - INTERVAL '1 second'
        ORDER BY s.started_at, s.run_id
        """, [candidate_id])


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

