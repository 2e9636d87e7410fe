"""Where supervised runs lose time: frames over the warehouse's ``friction_events`` view.

Every frame is tidy (one row per thing counted) and carries its id columns, so a notebook can
join or filter it further. Seconds lost are computed by the view (see
``supervisor.warehouse.migrations.m_friction_time``); nothing here re-derives them.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from supervisor.warehouse import Warehouse

Dimension = Literal["kind", "agent", "rule", "pattern", "policy", "day", "run"]
"""What time lost can be broken down by."""

_DIMENSION_COLUMNS: dict[str, list[str]] = {
    "kind": ["kind"],
    "agent": ["agent"],
    "rule": ["rule"],
    "pattern": ["rule", "pattern"],
    "policy": ["policy_id", "policy_name"],
    "day": ["day"],
    "run": ["run_id", "agent", "policy_id"],
}


def friction_totals(wh: Warehouse) -> pl.DataFrame:
    """One row: runs, friction occurrences, seconds lost in all, escalations and how many of
    them a human ended."""
    return wh.sql(
        "SELECT (SELECT count(*) FROM runs) AS runs, count(*) AS friction, "
        "round(coalesce(sum(seconds_lost), 0), 3) AS seconds_lost, "
        "count(*) FILTER (kind = 'escalation') AS escalations, "
        "count(*) FILTER (kind = 'escalation' AND ended_by = 'human') AS ended_by_human "
        "FROM friction_events"
    )


def friction_events(wh: Warehouse, run_id: str | None = None) -> pl.DataFrame:
    """Every friction occurrence with its seconds lost, cause, agent and policy (oldest first)."""
    if run_id is None:
        return wh.sql("SELECT * FROM friction_events ORDER BY occurred_at, run_id, seq")
    return wh.sql("SELECT * FROM friction_events WHERE run_id = ? ORDER BY seq", [run_id])


def time_lost(wh: Warehouse, by: Dimension = "kind") -> pl.DataFrame:
    """Seconds lost and occurrences per ``by`` (and per friction kind within it), most time first.

    Columns: the dimension's columns, ``kind``, ``events``, ``runs``, ``seconds_lost``,
    ``median_s`` (per occurrence) and ``max_s``.
    """
    if by not in _DIMENSION_COLUMNS:
        raise ValueError(f"cannot break friction down by {by!r}; use one of {sorted(_DIMENSION_COLUMNS)}")
    group = list(dict.fromkeys([*_DIMENSION_COLUMNS[by], "kind"]))
    select = ", ".join(c if c in ("day", "kind") else f"coalesce({c}, 'unknown') AS {c}" for c in group)
    return wh.sql(
        f"SELECT {select}, count(*) AS events, count(DISTINCT run_id) AS runs, "
        "round(sum(seconds_lost), 3) AS seconds_lost, round(median(seconds_lost), 3) AS median_s, "
        "round(max(seconds_lost), 3) AS max_s FROM friction_events GROUP BY ALL "
        f"ORDER BY seconds_lost DESC, events DESC, {', '.join(group)}"
    )


def friction_by_kind(wh: Warehouse) -> pl.DataFrame:
    """Friction per kind: how many, in how many runs, and the seconds lost."""
    return time_lost(wh, "kind").select(["kind", "events", "runs", "seconds_lost", "median_s", "max_s"])


def friction_by_run(wh: Warehouse) -> pl.DataFrame:
    """Per run: its agent, outcome, duration, seconds lost and friction counts by kind (one column
    per kind), most time lost first."""
    runs = wh.sql("SELECT run_id, agent, policy_id, outcome, duration_s, friction_seconds AS seconds_lost "
                  "FROM run_summary")
    counts = wh.sql("SELECT run_id, kind, count(*) AS n FROM friction_events GROUP BY ALL")
    if counts.height:
        wide = counts.pivot(on="kind", index="run_id", values="n", aggregate_function="sum", sort_columns=True)
        runs = runs.join(wide, on="run_id", how="left")
    kinds = [c for c in runs.columns if c not in ("run_id", "agent", "policy_id", "outcome", "duration_s",
                                                    "seconds_lost")]
    runs = runs.with_columns([pl.col(k).fill_null(0) for k in kinds])
    total = pl.sum_horizontal(*[pl.col(k) for k in kinds]) if kinds else pl.lit(0, dtype=pl.Int64)
    return runs.with_columns(total.alias("total")).sort(["seconds_lost", "total", "run_id"],
                                                        descending=[True, True, False])


def escalations(wh: Warehouse, run_id: str | None = None) -> pl.DataFrame:
    """Every escalation (of one run, or all): what it was about, how long it waited, what ended it
    and what the human pressed and chose (newest last)."""
    where = "" if run_id is None else " AND f.run_id = ?"
    return wh.sql(
        "SELECT f.friction_id AS pause_id, f.decision_id, f.run_id, f.seq, f.occurred_at, f.agent, f.policy_id, "
        "o.state, o.prompt_kind, o.question, o.risk_level, o.blocker_kind, f.rule, f.pattern, f.detail AS reason, "
        "round(f.seconds_lost, 3) AS seconds_lost, f.ended_by, f.ended_at, "
        "CAST(f.human_keys AS VARCHAR) AS human_keys, f.selected, f.screen_hash "
        "FROM friction_events f LEFT JOIN observations o ON o.observation_id = f.trigger_id "
        f"WHERE f.kind = 'escalation'{where} ORDER BY f.occurred_at, f.run_id, f.seq", [run_id] if run_id else None
    )


def human_answers(wh: Warehouse) -> pl.DataFrame:
    """How escalations ended, per cause: for each (rule, pattern) how many ended by each means and
    what the human selected, with the wait. The evidence for turning a repeated human answer into
    a policy rule."""
    return wh.sql(
        "SELECT rule, pattern, ended_by, coalesce(selected, '') AS selected, count(*) AS escalations, "
        "count(DISTINCT run_id) AS runs, round(sum(seconds_lost), 3) AS seconds_lost, "
        "round(median(seconds_lost), 3) AS median_wait_s "
        "FROM friction_events WHERE kind = 'escalation' GROUP BY ALL "
        "ORDER BY escalations DESC, seconds_lost DESC, rule, pattern, ended_by, selected"
    )


def top_prompts(wh: Warehouse, limit: int = 15) -> pl.DataFrame:
    """The prompts seen most often: per (agent, prompt kind, question), how many screens showed
    it, in how many runs, how the supervisor handled it (answered, escalated, other), and the
    latest observation and screen that showed it."""
    return wh.sql(
        "SELECT coalesce(o.agent, 'unknown') AS agent, o.prompt_kind, o.question, "
        "count(*) AS observations, count(DISTINCT o.run_id) AS runs, "
        "count(d.decision_id) FILTER (d.kind = 'answer') AS answered, "
        "count(d.decision_id) FILTER (d.kind = 'escalate') AS escalated, "
        "count(d.decision_id) FILTER (d.kind NOT IN ('answer', 'escalate')) AS waited, "
        "min(o.occurred_at) AS first_seen, max(o.occurred_at) AS last_seen, "
        "arg_max(o.observation_id, o.occurred_at) AS last_observation_id, "
        "arg_max(o.screen_hash, o.occurred_at) AS last_screen_hash "
        "FROM observations o LEFT JOIN decisions d ON d.trigger_id = o.observation_id "
        "WHERE o.state = 'asking' AND o.question IS NOT NULL GROUP BY ALL "
        "ORDER BY observations DESC, runs DESC, agent, question LIMIT ?", [limit]
    )


def stalls(wh: Warehouse) -> pl.DataFrame:
    """Every stall: the quiet time before it was noticed, and the escalation it led to (if any)
    with that escalation's wait."""
    return wh.sql(
        "WITH f AS MATERIALIZED (SELECT * FROM friction_events WHERE kind IN ('stall', 'escalation')) "
        "SELECT s.friction_id, s.run_id, s.seq, s.occurred_at, s.agent, s.policy_id, s.detail, "
        "round(s.seconds_lost, 3) AS quiet_s, e.friction_id AS pause_id, round(e.seconds_lost, 3) AS escalation_wait_s, "
        "e.ended_by, round(s.seconds_lost + coalesce(e.seconds_lost, 0), 3) AS seconds_lost "
        "FROM (SELECT * FROM f WHERE kind = 'stall') s "
        "ASOF LEFT JOIN (SELECT * FROM f WHERE kind = 'escalation' AND rule = 'stall') e "
        "ON e.run_id = s.run_id AND s.seq < e.seq "
        "ORDER BY s.occurred_at, s.run_id, s.seq"
    )


def friction_trend(wh: Warehouse) -> pl.DataFrame:
    """Per day (UTC) and kind: occurrences and seconds lost, with that day's run count and the
    seconds lost per run, for trend plots."""
    return wh.sql(
        "WITH days AS (SELECT CAST(started_at AS DATE) AS day, count(*) AS day_runs FROM runs GROUP BY 1) "
        "SELECT f.day, f.kind, count(*) AS events, round(sum(f.seconds_lost), 3) AS seconds_lost, "
        "coalesce(any_value(d.day_runs), 0) AS day_runs, "
        "round(sum(f.seconds_lost) / nullif(any_value(d.day_runs), 0), 3) AS seconds_per_run "
        "FROM friction_events f LEFT JOIN days d ON d.day = f.day GROUP BY f.day, f.kind ORDER BY f.day, f.kind"
    )


def daily_friction(wh: Warehouse) -> pl.DataFrame:
    """Friction occurrences and seconds lost per day and kind."""
    return time_lost(wh, "day").sort(["day", "kind"])


def answer_latency(wh: Warehouse) -> pl.DataFrame:
    """For each answered prompt: seconds from the observation to the delivered keys."""
    return wh.sql(
        "SELECT d.decision_id, d.run_id, o.observation_id, o.agent, o.prompt_kind, "
        "date_diff('millisecond', o.occurred_at, a.delivered_at) / 1000.0 AS seconds "
        "FROM decisions d JOIN observations o ON o.observation_id = d.trigger_id "
        "JOIN (SELECT decision_id, min(occurred_at) AS delivered_at FROM actions WHERE delivered "
        "      GROUP BY decision_id) a ON a.decision_id = d.decision_id "
        "WHERE d.kind = 'answer' ORDER BY d.run_id, d.seq"
    )
