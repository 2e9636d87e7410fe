"""The workbench's side of the warehouse: write eval runs, compares and replays; read them
back as polars DataFrames that always carry their id columns.

Writers take an open :class:`~supervisor.warehouse.Warehouse` (writable) and plain dicts or
DataFrames, so the ``evals`` package never touches DuckDB. Each write is one transaction and
idempotent by primary key (a re-saved run replaces its rows).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl

from supervisor.warehouse import Warehouse


def _ts(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, tz=UTC).replace(tzinfo=None) if t is not None else None


def _j(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)


def _tx(wh: Warehouse, statements: Sequence[tuple[str, Sequence[Any] | list[Sequence[Any]], bool]]) -> None:
    con = wh.con
    con.execute("BEGIN TRANSACTION")
    try:
        for sql, params, many in statements:
            if many:
                if params:
                    con.executemany(sql, params)
            else:
                con.execute(sql, params)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


# --------------------------------------------------------------------------- eval runs


def save_eval_run(wh: Warehouse, run: dict[str, Any]) -> None:
    """Store an :class:`evals.runner.EvalRun` (as ``model_dump(mode="json")``) and its results."""
    t = run["totals"]
    hashes = {s["suite"]: s["content_hash"] for s in run.get("suites", [])}
    row = [run["eval_run_id"], _ts(run["started_at"]), _ts(run["finished_at"]), run["policy_id"], run["policy_name"],
           run["policy_path"], run["code_version"], run.get("host", ""), _j(run.get("suites", [])), t["cases"],
           t["passed"], t["failed"], t["errors"], t["skipped"], t["pass_rate"], t["weighted_pass_rate"],
           t["unsafe_approvals"], t["missed_prompts"], t["false_prompts"], t["must_pass_failures"], t["judge_calls"],
           t["judge_cost_usd"], _j(run.get("by_suite", {})), _j(run.get("by_tag", {})), run.get("report_path")]
    results = [[run["eval_run_id"], r["suite"], r["case_id"], hashes.get(r["suite"]), r["kind"], r["status"],
                r["severity"], r["must_pass"], _j(r["tags"]), _j(r["failures"]), _j(r["actual"]), _j(r["expected"]),
                r["unsafe_approval"], r["missed_prompt"], r["false_prompt"], r.get("origin"), r.get("transform"),
                r["duration_ms"]] for r in run["results"]]
    _tx(wh, [
        ("DELETE FROM eval_results WHERE eval_run_id = ?", [run["eval_run_id"]], False),
        ("DELETE FROM eval_runs WHERE eval_run_id = ?", [run["eval_run_id"]], False),
        ("INSERT INTO eval_runs VALUES (" + ",".join("?" * 25) + ")", row, False),
        ("INSERT INTO eval_results VALUES (" + ",".join("?" * 18) + ")", results, True),
    ])


def read_eval_runs(wh: Warehouse, policy_id: str | None = None) -> pl.DataFrame:
    q = ("SELECT eval_run_id, started_at, policy_id, policy_name, code_version, cases, passed, failed, errors, "
         "skipped, pass_rate, weighted_pass_rate, unsafe_approvals, missed_prompts, false_prompts, "
         "must_pass_failures, judge_calls, judge_cost_usd, report_path FROM eval_runs")
    if policy_id:
        return wh.sql(q + " WHERE policy_id = ? ORDER BY started_at DESC", [policy_id])
    return wh.sql(q + " ORDER BY started_at DESC")


def read_eval_results(wh: Warehouse, eval_run_id: str | None = None) -> pl.DataFrame:
    q = ("SELECT r.eval_run_id, e.policy_id, r.suite, r.case_id, r.suite_hash, r.kind, r.status, r.severity, "
         "r.must_pass, r.tags, r.failures, r.actual, r.expected, r.unsafe_approval, r.missed_prompt, r.false_prompt, "
         "r.origin, r.transform, r.duration_ms FROM eval_results r JOIN eval_runs e USING (eval_run_id)")
    if eval_run_id:
        return wh.sql(q + " WHERE r.eval_run_id = ? ORDER BY r.suite, r.case_id", [eval_run_id])
    return wh.sql(q + " ORDER BY r.eval_run_id, r.suite, r.case_id")


def read_eval_suite_metrics(wh: Warehouse, eval_run_id: str) -> pl.DataFrame:
    """Per-suite metrics of one eval run, one row per suite."""
    return wh.sql(
        "SELECT eval_run_id, suite, count(*) AS cases, count(*) FILTER (status = 'pass') AS passed, "
        "count(*) FILTER (status IN ('fail', 'error')) AS failed, count(*) FILTER (status = 'skip') AS skipped, "
        "sum(severity) FILTER (status = 'pass') / nullif(sum(severity) FILTER (status != 'skip'), 0) "
        "AS weighted_pass_rate, count(*) FILTER (unsafe_approval) AS unsafe_approvals, "
        "count(*) FILTER (missed_prompt) AS missed_prompts, count(*) FILTER (false_prompt) AS false_prompts "
        "FROM eval_results WHERE eval_run_id = ? GROUP BY eval_run_id, suite ORDER BY suite", [eval_run_id])


# --------------------------------------------------------------------------- compares


def save_compare(wh: Warehouse, summary: dict[str, Any], pairs: list[dict[str, Any]],
                 mapping: dict[str, str], revealed_at: float) -> None:
    """Store a blind compare: its summary, the scored pairs (outputs as A/B, verdicts), and the
    A/B mapping in its own table, stamped with when it was revealed (after scoring)."""
    s = summary
    row = [s["compare_run_id"], _ts(s["created_at"]), s["baseline_policy_id"], s["candidate_policy_id"],
           s["baseline_name"], s["candidate_name"], s["source"], _j(s.get("suites", [])), s["scorer"], s["seed"],
           s["pairs"], s["identical"], s["wins"], s["losses"], s["ties"], s["win_rate"], s["ci_low"], s["ci_high"],
           s["p_value"], s.get("judge_calls", 0), s.get("judge_cost_usd", 0.0), s.get("code_version"),
           s.get("report_path")]
    prow = [[s["compare_run_id"], p["pair_id"], p.get("suite"), p.get("case_id"), _j(p["output_a"]),
             _j(p["output_b"]), p["verdict"], p.get("detail", ""), p.get("winner")] for p in pairs]
    mrow = [[s["compare_run_id"], pid, side, _ts(revealed_at)] for pid, side in sorted(mapping.items())]
    cid = s["compare_run_id"]
    _tx(wh, [
        ("DELETE FROM compare_pairs WHERE compare_run_id = ?", [cid], False),
        ("DELETE FROM compare_mappings WHERE compare_run_id = ?", [cid], False),
        ("DELETE FROM compare_runs WHERE compare_run_id = ?", [cid], False),
        ("INSERT INTO compare_runs VALUES (" + ",".join("?" * 23) + ")", row, False),
        ("INSERT INTO compare_pairs VALUES (" + ",".join("?" * 9) + ")", prow, True),
        ("INSERT INTO compare_mappings VALUES (?, ?, ?, ?)", mrow, True),
    ])


def read_compare_runs(wh: Warehouse) -> pl.DataFrame:
    return wh.sql("SELECT * EXCLUDE (suites) FROM compare_runs ORDER BY created_at DESC")


def read_compare_pairs(wh: Warehouse, compare_run_id: str, *, unblind: bool = True) -> pl.DataFrame:
    """The pairs of one compare; with ``unblind`` the mapping is joined in (``candidate_is``)."""
    if not unblind:
        return wh.sql("SELECT compare_run_id, pair_id, suite, case_id, output_a, output_b, verdict, detail "
                      "FROM compare_pairs WHERE compare_run_id = ? ORDER BY pair_id", [compare_run_id])
    return wh.sql("SELECT p.*, m.candidate_is, m.revealed_at FROM compare_pairs p LEFT JOIN compare_mappings m "
                  "USING (compare_run_id, pair_id) WHERE p.compare_run_id = ? ORDER BY p.pair_id", [compare_run_id])


# --------------------------------------------------------------------------- replay


def read_replay_input(wh: Warehouse, *, run_ids: Sequence[str] | None = None, since: float | None = None) -> pl.DataFrame:
    """Recorded observations with their screens and the decision recorded for each (one row per
    observation; decision columns null where none was recorded)."""
    where: list[str] = []
    params: list[Any] = []
    if run_ids:
        where.append("o.run_id IN (" + ",".join("?" * len(run_ids)) + ")")
        params.extend(run_ids)
    if since is not None:
        where.append("o.occurred_at >= ?")
        params.append(_ts(since))
    w = (" WHERE " + " AND ".join(where)) if where else ""
    return wh.sql(
        "SELECT o.observation_id, o.run_id, o.seq, epoch_ms(o.occurred_at) / 1000.0 AS at, o.screen_hash, o.state, o.agent, "
        "o.prompt_kind, o.risk_level, s.text, s.width, s.height, s.title, d.kind AS recorded_kind, "
        "d.keys AS recorded_keys, d.approves AS recorded_approves, d.policy_id AS recorded_policy_id "
        "FROM observations o LEFT JOIN screens s USING (screen_hash) "
        "LEFT JOIN (SELECT * FROM decisions QUALIFY row_number() OVER (PARTITION BY trigger_id ORDER BY seq) = 1) d "
        "ON d.trigger_id = o.observation_id" + w + " ORDER BY o.run_id, o.seq", params)


def read_checkpoint_run_ids(wh: Warehouse, *, run_ids: Sequence[str] | None = None,
                            since: float | None = None) -> list[str]:
    """Runs (of the selection) that recorded workflow checkpoints."""
    where: list[str] = []
    params: list[Any] = []
    if run_ids:
        where.append("run_id IN (" + ",".join("?" * len(run_ids)) + ")")
        params.extend(run_ids)
    if since is not None:
        where.append("occurred_at >= ?")
        params.append(_ts(since))
    w = (" WHERE " + " AND ".join(where)) if where else ""
    return [str(x) for x in wh.sql("SELECT DISTINCT run_id FROM checkpoints" + w + " ORDER BY run_id",
                                   params)["run_id"].to_list()]


def save_replay(wh: Warehouse, summary: dict[str, Any], divergences: pl.DataFrame) -> None:
    s = summary
    row = [s["replay_run_id"], _ts(s["created_at"]), s["policy_id"], s["policy_name"], s["selection"], s["runs"],
           s["observations"], s["unique_screens"], s["compared"], s["agreement"], _j(s["by_class"]),
           s.get("code_version"), s.get("seconds")]
    rid = s["replay_run_id"]
    _tx(wh, [("DELETE FROM replay_divergences WHERE replay_run_id = ?", [rid], False),
             ("DELETE FROM replay_runs WHERE replay_run_id = ?", [rid], False),
             ("INSERT INTO replay_runs VALUES (" + ",".join("?" * 13) + ")", row, False)])
    if divergences.height:
        cols = ["observation_id", "trigger", "run_id", "seq", "screen_hash", "divergence", "recorded_kind",
                "recorded_keys", "recorded_approves", "replayed_kind", "replayed_keys", "replayed_approves",
                "replayed_reason"]
        if "trigger" not in divergences.columns:
            divergences = divergences.with_columns(pl.lit("observation").alias("trigger"))
        frame = divergences.select(cols).with_columns(pl.lit(rid).alias("replay_run_id")).select(
            ["replay_run_id", *cols])
        wh.con.register("_replay_div", frame.to_arrow())
        try:
            wh.con.execute("INSERT INTO replay_divergences SELECT * FROM _replay_div")
        finally:
            wh.con.unregister("_replay_div")


def read_replay_runs(wh: Warehouse) -> pl.DataFrame:
    return wh.sql("SELECT * FROM replay_runs ORDER BY created_at DESC")


def read_replay_divergences(wh: Warehouse, replay_run_id: str) -> pl.DataFrame:
    return wh.sql("SELECT * FROM replay_divergences WHERE replay_run_id = ? ORDER BY run_id, seq", [replay_run_id])


def insert_frame(wh: Warehouse, table: str, frame: pl.DataFrame) -> int:
    """Bulk-insert a DataFrame into an existing table by column name (benchmarks, imports).
    Columns the frame lacks are left null."""
    if not table.isidentifier():
        raise ValueError(f"bad table name {table!r}")
    cols = ", ".join(frame.columns)
    wh.con.register("_bulk_frame", frame.to_arrow())
    try:
        wh.con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _bulk_frame")
    finally:
        wh.con.unregister("_bulk_frame")
    return frame.height
