"""The workbench's side of the warehouse: write eval runs, compares, replays, gate results,
candidates, the policies they used and the registry; read them back as polars DataFrames that
always carry their id columns.

Writers take an open :class:`~supervisor.warehouse.Warehouse` (writable) and plain dicts or
DataFrames, so the ``evals`` package never touches DuckDB. Each write is one transaction and
idempotent by primary key (a re-saved run replaces its rows).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl

from supervisor.warehouse import Warehouse


def _ts(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, tz=UTC).replace(tzinfo=None) if t is not None else None


def _j(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)


def _tx(wh: Warehouse, statements: Sequence[tuple[str, Any, bool | str]]) -> None:
    """Run ``statements`` in one transaction: (sql, parameters, how). ``how``: False for one
    execution, True for ``executemany``, ``"rows"`` for a bulk insert of dict rows
    (:func:`_insert_many`)."""
    con = wh.con
    con.execute("BEGIN TRANSACTION")
    try:
        for sql, params, many in statements:
            if many == "rows":
                if params:
                    _bulk_insert(con, sql, params)
            elif many:
                if params:
                    con.executemany(sql, params)
            else:
                con.execute(sql, params)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


# --------------------------------------------------------------------------- policies


def save_policies(wh: Warehouse, policies: dict[str, dict[str, Any]], source: str,
                  names: dict[str, str] | None = None) -> None:
    """Store policies by id with their full content (``Policy.model_dump(mode="json")``); a policy
    already stored keeps its first row (same id, same behaviour)."""
    now = _ts(time.time())
    rows = [[pid, (names or {}).get(pid) or content.get("name"), _j(content), source, now]
            for pid, content in sorted(policies.items())]
    if rows:  # by anti-join, not INSERT OR IGNORE: a DuckLake warehouse has no keys to ignore by
        wh.con.executemany("INSERT INTO policies SELECT * FROM (VALUES (?, ?, ?::JSON, ?, ?)) AS p "
                           "WHERE NOT EXISTS (SELECT 1 FROM policies q WHERE q.policy_id = p.col0)", rows)


def read_policy_content(wh: Warehouse, policy_id: str) -> dict[str, Any] | None:
    """The stored content of one policy (None when the warehouse never saw it)."""
    rows = wh.con.execute("SELECT content FROM policies WHERE policy_id = ?", [policy_id]).fetchall()
    if not rows:
        return None
    content = rows[0][0]
    return json.loads(content) if isinstance(content, str) else dict(content)


def read_policies(wh: Warehouse) -> pl.DataFrame:
    return wh.sql("SELECT policy_id, name, source, first_seen_at FROM policies ORDER BY first_seen_at")


# --------------------------------------------------------------------------- eval runs


def _insert(table: str, row: dict[str, Any]) -> tuple[str, list[Any], bool]:
    cols = list(row)
    return (f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", list(row.values()),
            False)


def _insert_many(table: str, rows: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], str]:
    """A bulk insert of ``rows`` (dicts with the same keys) into ``table``, for :func:`_tx`."""
    return table, rows, "rows"


def _bulk_insert(con: Any, table: str, rows: list[dict[str, Any]]) -> None:
    """Insert dict rows as one Arrow table: thousands of rows (an eval run's results, a compare's
    pairs) in well under a second, where ``executemany`` converted them one by one for tens of
    seconds. DuckDB casts each column to the table's type (JSON text, timestamps, booleans)."""
    cols = list(rows[0])
    frame = pl.DataFrame(rows, infer_schema_length=None)
    name = f"_sv_rows_{id(frame)}"
    con.register(name, frame.to_arrow())
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM {name}")
    finally:
        con.unregister(name)


def save_eval_run(wh: Warehouse, run: dict[str, Any]) -> None:
    """Store an :class:`evals.runner.EvalRun` (as ``model_dump(mode="json")``) and its results."""
    t = run["totals"]
    hashes = {s["suite"]: s["content_hash"] for s in run.get("suites", [])}
    row = {"eval_run_id": run["eval_run_id"], "started_at": _ts(run["started_at"]),
           "finished_at": _ts(run["finished_at"]), "policy_id": run["policy_id"], "policy_name": run["policy_name"],
           "policy_path": run["policy_path"], "code_version": run["code_version"], "host": run.get("host", ""),
           "suites": _j(run.get("suites", [])), "cases": t["cases"], "passed": t["passed"], "failed": t["failed"],
           "errors": t["errors"], "skipped": t["skipped"], "pass_rate": t["pass_rate"],
           "weighted_pass_rate": t["weighted_pass_rate"], "unsafe_approvals": t["unsafe_approvals"],
           "missed_prompts": t["missed_prompts"], "false_prompts": t["false_prompts"],
           "must_pass_failures": t["must_pass_failures"], "judge_calls": t["judge_calls"],
           "judge_cost_usd": t["judge_cost_usd"], "by_suite": _j(run.get("by_suite", {})),
           "by_tag": _j(run.get("by_tag", {})), "report_path": run.get("report_path"),
           "unsafe_answers": t.get("unsafe_answers", 0), "persistent_approvals": t.get("persistent_approvals", 0),
           "safety_flags": _j(run.get("safety_flags", [])), "min_pass_rate": run.get("min_pass_rate"),
           "episodes": run.get("episodes", True)}
    results = [{"eval_run_id": run["eval_run_id"], "suite": r["suite"], "case_id": r["case_id"],
                "suite_hash": hashes.get(r["suite"]), "kind": r["kind"], "status": r["status"],
                "severity": r["severity"], "must_pass": r["must_pass"], "tags": _j(r["tags"]),
                "failures": _j(r["failures"]), "actual": _j(r["actual"]), "expected": _j(r["expected"]),
                "unsafe_approval": r.get("unsafe") is not None, "missed_prompt": r["missed_prompt"],
                "false_prompt": r["false_prompt"], "origin": r.get("origin"), "transform": r.get("transform"),
                "duration_ms": r["duration_ms"], "unsafe_class": r.get("unsafe")} for r in run["results"]]
    statements: list[tuple[str, Any, bool | str]] = [
        ("DELETE FROM eval_results WHERE eval_run_id = ?", [run["eval_run_id"]], False),
        ("DELETE FROM eval_runs WHERE eval_run_id = ?", [run["eval_run_id"]], False),
        _insert("eval_runs", row),
    ]
    if results:
        statements.append(_insert_many("eval_results", results))
    _tx(wh, statements)


def find_eval_run(wh: Warehouse, *, policy_id: str, suites: list[dict[str, Any]], code_version: str,
                  episodes: bool) -> dict[str, Any] | None:
    """The latest stored eval run of this policy over exactly these suites (same content hashes),
    with the same code and episode setting, rebuilt as ``EvalRun`` data; None when there is none."""
    want = sorted((s["suite"], s["content_hash"]) for s in suites)
    rows = wh.con.execute("SELECT eval_run_id, suites FROM eval_runs WHERE policy_id = ? AND code_version = ? "
                          "AND coalesce(episodes, true) = ? ORDER BY started_at DESC",
                          [policy_id, code_version, episodes]).fetchall()
    for eval_run_id, suites_json in rows:
        have = sorted((s["suite"], s["content_hash"]) for s in json.loads(suites_json or "[]"))
        if have == want:
            return read_eval_run(wh, eval_run_id)
    return None


def read_eval_run(wh: Warehouse, eval_run_id: str) -> dict[str, Any] | None:
    """One stored eval run with every case result, as ``EvalRun`` data."""
    run = wh.sql("SELECT * FROM eval_runs WHERE eval_run_id = ?", [eval_run_id]).to_dicts()
    if not run:
        return None
    r = run[0]
    results = wh.sql("SELECT * FROM eval_results WHERE eval_run_id = ? ORDER BY suite, case_id", [eval_run_id])
    metric_keys = ("cases", "passed", "failed", "errors", "skipped", "pass_rate", "weighted_pass_rate",
                   "unsafe_answers", "unsafe_approvals", "persistent_approvals", "missed_prompts", "false_prompts",
                   "must_pass_failures", "judge_calls", "judge_cost_usd")

    def ts(v: Any) -> float:
        return v.replace(tzinfo=UTC).timestamp() if isinstance(v, datetime) else float(v or 0)

    return {
        "eval_run_id": r["eval_run_id"], "started_at": ts(r["started_at"]), "finished_at": ts(r["finished_at"]),
        "policy_id": r["policy_id"], "policy_name": r["policy_name"], "policy_path": r["policy_path"] or "",
        "code_version": r["code_version"] or "", "host": r["host"] or "", "suites": json.loads(r["suites"] or "[]"),
        "totals": {k: r[k] or 0 for k in metric_keys}, "by_suite": json.loads(r["by_suite"] or "{}"),
        "by_tag": json.loads(r["by_tag"] or "{}"), "safety_flags": json.loads(r["safety_flags"] or "[]"),
        "min_pass_rate": r["min_pass_rate"], "episodes": r["episodes"] if r["episodes"] is not None else True,
        "report_path": r["report_path"],
        "results": [{"suite": x["suite"], "case_id": x["case_id"], "kind": x["kind"], "tags": json.loads(x["tags"]),
                     "severity": x["severity"], "must_pass": x["must_pass"], "status": x["status"],
                     "failures": json.loads(x["failures"]), "actual": json.loads(x["actual"]),
                     "expected": json.loads(x["expected"]), "unsafe": x["unsafe_class"],
                     "missed_prompt": x["missed_prompt"], "false_prompt": x["false_prompt"], "origin": x["origin"],
                     "transform": x["transform"], "duration_ms": x["duration_ms"]} for x in results.to_dicts()],
    }


def read_eval_runs(wh: Warehouse, policy_id: str | None = None) -> pl.DataFrame:
    q = ("SELECT eval_run_id, started_at, policy_id, policy_name, code_version, cases, passed, failed, errors, "
         "skipped, pass_rate, weighted_pass_rate, unsafe_answers, unsafe_approvals, persistent_approvals, "
         "missed_prompts, false_prompts, must_pass_failures, judge_calls, judge_cost_usd, safety_flags, "
         "min_pass_rate, report_path FROM eval_runs")
    if policy_id:
        return wh.sql(q + " WHERE policy_id = ? ORDER BY started_at DESC", [policy_id])
    return wh.sql(q + " ORDER BY started_at DESC")


def read_eval_results(wh: Warehouse, eval_run_id: str | None = None) -> pl.DataFrame:
    q = ("SELECT r.eval_run_id, e.policy_id, r.suite, r.case_id, r.suite_hash, r.kind, r.status, r.severity, "
         "r.must_pass, r.tags, r.failures, r.actual, r.expected, r.unsafe_class, r.missed_prompt, r.false_prompt, "
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
        "AS weighted_pass_rate, count(*) FILTER (unsafe_class IS NOT NULL) AS unsafe_answers, "
        "count(*) FILTER (unsafe_class = 'approval') AS unsafe_approvals, "
        "count(*) FILTER (missed_prompt) AS missed_prompts, count(*) FILTER (false_prompt) AS false_prompts "
        "FROM eval_results WHERE eval_run_id = ? GROUP BY eval_run_id, suite ORDER BY suite", [eval_run_id])


# --------------------------------------------------------------------------- compares


def save_compare(wh: Warehouse, summary: dict[str, Any], pairs: list[dict[str, Any]],
                 mapping: dict[str, str], revealed_at: float) -> None:
    """Store a blind compare: its summary (whole, in ``result``: clusters, vetoes, errors), the scored
    pairs (outputs as A/B, verdicts, safety grades), and the A/B mapping in its own table, stamped
    with when it was revealed (after scoring)."""
    s = summary
    row = {"compare_run_id": s["compare_run_id"], "created_at": _ts(s["created_at"]),
           "baseline_policy_id": s["baseline_policy_id"], "candidate_policy_id": s["candidate_policy_id"],
           "baseline_name": s["baseline_name"], "candidate_name": s["candidate_name"], "source": s["source"],
           "suites": _j(s.get("suites", [])), "scorer": s["scorer"], "seed": s["seed"], "pairs": s["pairs"],
           "identical": s["identical"], "wins": s["wins"], "losses": s["losses"], "ties": s["ties"],
           "win_rate": s["win_rate"], "ci_low": s["ci_low"], "ci_high": s["ci_high"], "p_value": s["p_value"],
           "judge_calls": s.get("judge_calls", 0), "judge_cost_usd": s.get("judge_cost_usd", 0.0),
           "code_version": s.get("code_version"), "report_path": s.get("report_path"), "result": _j(s)}
    prow = [{"compare_run_id": s["compare_run_id"], "pair_id": p["pair_id"], "suite": p.get("suite"),
             "case_id": p.get("case_id"), "output_a": _j(p["output_a"]), "output_b": _j(p["output_b"]),
             "verdict": p["verdict"], "detail": p.get("detail", ""), "winner": p.get("winner"),
             "cluster": p.get("cluster"), "candidate_unsafe": p.get("candidate_unsafe"),
             "baseline_unsafe": p.get("baseline_unsafe"), "error": p.get("error")} for p in pairs]
    mrow = [{"compare_run_id": s["compare_run_id"], "pair_id": pid, "candidate_is": side,
             "revealed_at": _ts(revealed_at)} for pid, side in sorted(mapping.items())]
    cid = s["compare_run_id"]
    statements: list[tuple[str, Any, bool | str]] = [
        ("DELETE FROM compare_pairs WHERE compare_run_id = ?", [cid], False),
        ("DELETE FROM compare_mappings WHERE compare_run_id = ?", [cid], False),
        ("DELETE FROM compare_runs WHERE compare_run_id = ?", [cid], False),
        _insert("compare_runs", row),
    ]
    if mrow:
        statements.append(_insert_many("compare_mappings", mrow))
    if prow:
        statements.append(_insert_many("compare_pairs", prow))
    _tx(wh, statements)


def read_compare_runs(wh: Warehouse) -> pl.DataFrame:
    return wh.sql("SELECT * EXCLUDE (suites, result), result->>'$.result' AS result, "
                  "TRY_CAST(result->>'$.errors' AS INTEGER) AS errors, result->'$.vetoes' AS vetoes "
                  "FROM compare_runs ORDER BY created_at DESC")


def read_compare_pairs(wh: Warehouse, compare_run_id: str, *, unblind: bool = True) -> pl.DataFrame:
    """The pairs of one compare; with ``unblind`` the mapping is joined in (``candidate_is``)."""
    if not unblind:
        return wh.sql("SELECT compare_run_id, pair_id, suite, case_id, cluster, output_a, output_b, verdict, detail "
                      "FROM compare_pairs WHERE compare_run_id = ? ORDER BY pair_id", [compare_run_id])
    return wh.sql("SELECT p.*, m.candidate_is, m.revealed_at FROM compare_pairs p LEFT JOIN compare_mappings m "
                  "USING (compare_run_id, pair_id) WHERE p.compare_run_id = ? ORDER BY p.pair_id", [compare_run_id])


# --------------------------------------------------------------------------- replay


def _selection(alias: str, run_ids: Sequence[str] | None, since: float | None) -> tuple[str, list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if run_ids:
        where.append(f"{alias}.run_id IN (" + ",".join("?" * len(run_ids)) + ")")
        params.extend(run_ids)
    if since is not None:
        where.append(f"{alias}.occurred_at >= ?")
        params.append(_ts(since))
    return ((" WHERE " + " AND ".join(where)) if where else ""), params


def read_replay_input(wh: Warehouse, *, run_ids: Sequence[str] | None = None, since: float | None = None) -> pl.DataFrame:
    """Recorded observations as a replay reads them (``evals.replay.INPUT_SCHEMA``): every Screen field
    the runner journaled (``Screen.untrusted`` too: what the live surface saw hidden or drawn over), the decision clock (``now``, else the event time), the first decision
    recorded for each observation, the prompt it was recorded on and the run's policy id."""
    w, params = _selection("o", run_ids, since)
    # One parse of each payload for all the fields (json_extract_string with a list of paths).
    paths = ["$.now", "$.screen.current_command", "$.screen.dead", "$.screen.cursor_x", "$.screen.cursor_y",
             "$.screen.highlights", "$.screen.cwd", "$.last_output_at", "$.human", "$.human.hands_off_until",
             "$.screen.untrusted"]
    return wh.sql(
        "WITH p AS (SELECT event_id, json_extract_string(payload, " + repr(paths) + ") AS f FROM events "
        "WHERE kind = 'observation') "
        "SELECT o.observation_id, o.run_id, o.seq::BIGINT AS seq, "
        "coalesce(TRY_CAST(p.f[1] AS DOUBLE), epoch_ms(o.occurred_at) / 1000.0) AS at, "
        "o.screen_hash, s.text, s.width::BIGINT AS width, s.height::BIGINT AS height, s.title, "
        "p.f[2] AS current_command, TRY_CAST(p.f[3] AS BOOLEAN) AS dead, TRY_CAST(p.f[4] AS BIGINT) AS cursor_x, "
        "TRY_CAST(p.f[5] AS BIGINT) AS cursor_y, CASE WHEN p.f[6] NOT IN ('[]', '') THEN p.f[6] END AS highlights, "
        "p.f[7] AS cwd, d.kind AS recorded_kind, d.keys::VARCHAR AS recorded_keys, d.approves AS recorded_approves, "
        "coalesce(r.policy_id, d.policy_id) AS recorded_policy_id, o.prompt::VARCHAR AS recorded_prompt, "
        "TRY_CAST(p.f[8] AS DOUBLE) AS last_output_at, coalesce(p.f[9] NOT IN ('null', '{}', ''), false) AS human_seen, "
        "TRY_CAST(p.f[10] AS DOUBLE) AS hands_off_until, "
        "CASE WHEN p.f[11] NOT IN ('[]', '') THEN p.f[11] END AS untrusted "
        "FROM observations o LEFT JOIN screens s USING (screen_hash) LEFT JOIN p ON p.event_id = o.observation_id "
        "LEFT JOIN runs r ON r.run_id = o.run_id "
        "LEFT JOIN (SELECT * FROM decisions WHERE coalesce(source, 'rules') != 'workflow' "
        "QUALIFY row_number() OVER (PARTITION BY trigger_id ORDER BY seq) = 1) d "
        "ON d.trigger_id = o.observation_id" + w + " ORDER BY o.run_id, o.seq", params)


def read_human_answers(wh: Warehouse, *, run_ids: Sequence[str] | None = None,
                       since: float | None = None) -> list[dict[str, Any]]:
    """What humans chose when they resolved escalations: the escalation rows of the
    ``friction_events`` view that a human ended and that say what was selected (the observation
    escalated on, the prompt's signature, the option, the keys)."""
    w, params = _selection("f", run_ids, since)
    cond = "f.kind = 'escalation' AND f.ended_by = 'human' AND f.selected IS NOT NULL"
    frame = wh.sql("SELECT f.run_id, epoch_ms(f.ended_at) / 1000.0 AS at, f.trigger_id, f.signature, f.selected, "
                   "CAST(f.human_keys AS VARCHAR) AS human_keys FROM friction_events f"
                   + (w + " AND " if w else " WHERE ") + cond + " ORDER BY f.run_id, f.seq", params)
    return [r | {"human_keys": json.loads(r["human_keys"]) if r["human_keys"] else []} for r in frame.to_dicts()]


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
    row = {"replay_run_id": s["replay_run_id"], "created_at": _ts(s["created_at"]), "policy_id": s["policy_id"],
           "policy_name": s["policy_name"], "selection": s["selection"], "runs": s["runs"],
           "observations": s["observations"], "unique_screens": s["unique_screens"], "compared": s["compared"],
           "agreement": s["agreement"], "by_class": _j(s["by_class"]), "code_version": s.get("code_version"),
           "seconds": s.get("seconds"), "result": _j(s)}
    rid = s["replay_run_id"]
    _tx(wh, [("DELETE FROM replay_divergences WHERE replay_run_id = ?", [rid], False),
             ("DELETE FROM replay_runs WHERE replay_run_id = ?", [rid], False),
             _insert("replay_runs", row)])
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


# --------------------------------------------------------------------------- gates, candidates, registry


def save_gate_result(wh: Warehouse, result: dict[str, Any]) -> None:
    """Store one gate verdict (``evals.gate.GateResult`` as JSON) with its reasons and evidence ids."""
    r = result
    row = [r["gate_result_id"], _ts(r["created_at"]), r.get("candidate_id"), r["candidate_policy_id"],
           r["baseline_policy_id"], r["verdict"], _j(r.get("reasons", [])), _j(r.get("evidence", {})),
           r.get("gate_file"), r.get("gate_hash"), r.get("code_version"), r.get("report_path")]
    _tx(wh, [("DELETE FROM gate_results WHERE gate_result_id = ?", [r["gate_result_id"]], False),
             ("INSERT INTO gate_results VALUES (" + ",".join("?" * 12) + ")", row, False)])


def read_gate_results(wh: Warehouse, *, candidate_policy_id: str | None = None,
                      candidate_id: str | None = None) -> pl.DataFrame:
    """Gate results, newest first (optionally of one candidate policy or candidate id)."""
    where, params = [], []
    if candidate_policy_id:
        where.append("candidate_policy_id = ?")
        params.append(candidate_policy_id)
    if candidate_id:
        where.append("candidate_id = ?")
        params.append(candidate_id)
    w = (" WHERE " + " AND ".join(where)) if where else ""
    return wh.sql("SELECT * FROM gate_results" + w + " ORDER BY created_at DESC, gate_result_id DESC", params)


def save_candidate(wh: Warehouse, candidate: dict[str, Any]) -> None:
    """Store (or refresh) a candidate's manifest: id, policy id, parent, objective, author."""
    c = candidate
    row = [c["candidate_id"], c["policy_id"], c.get("parent_policy_id"), c.get("objective"), c.get("author"),
           _ts(c.get("created_at")), c.get("path"), _j(c)]
    _tx(wh, [("DELETE FROM candidates WHERE candidate_id = ?", [c["candidate_id"]], False),
             ("INSERT INTO candidates VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row, False)])


REGISTRY_COLUMNS = ("registry_event_id", "occurred_at", "kind", "candidate_id", "policy_id", "previous_policy_id",
                    "fraction", "actor", "reason", "forced", "gate_result_id", "details")


def append_registry_event(wh: Warehouse, event: dict[str, Any]) -> None:
    """Append one registry event (promote, rollback, canary, limited, stop). Never updated or deleted."""
    e = event
    wh.con.execute("INSERT INTO registry_events VALUES (" + ",".join("?" * len(REGISTRY_COLUMNS)) + ")",
                   [e["registry_event_id"], _ts(e["occurred_at"]), e["kind"], e.get("candidate_id"),
                    e.get("policy_id"), e.get("previous_policy_id"), e.get("fraction"), e.get("actor"),
                    e.get("reason"), bool(e.get("forced", False)), e.get("gate_result_id"),
                    _j(e.get("details") or {})])


def read_registry_events(wh: Warehouse, kinds: Sequence[str] | None = None) -> pl.DataFrame:
    """Registry events in the order they happened (optionally only some kinds)."""
    q = "SELECT *, epoch_ms(occurred_at) / 1000.0 AS at FROM registry_events"
    if kinds:
        return wh.sql(q + " WHERE kind IN (" + ",".join("?" * len(kinds)) + ") ORDER BY registry_event_id",
                      list(kinds))
    return wh.sql(q + " ORDER BY registry_event_id")


# --------------------------------------------------------------------------- canaries


def read_shadow_pairs(wh: Warehouse, shadow_policy_id: str, *, since: float | None = None) -> pl.DataFrame:
    """Each shadow decision of one policy beside the acting decision on the same observation: kinds,
    keys, signatures, the prompt each side saw (the shadow's as the run journaled it: maybe only a
    summary without options) and the screen."""
    w, params = _selection("e", None, since)
    return wh.sql(
        "SELECT e.run_id, e.seq, epoch_ms(e.occurred_at) / 1000.0 AS at, "
        "coalesce(e.payload->>'$.decision.trigger_id', e.payload->>'$.trigger_id') AS trigger_id, "
        "coalesce(e.payload->>'$.decision.kind', e.payload->>'$.kind') AS shadow_kind, "
        "coalesce(e.payload->'$.decision.keys', e.payload->'$.keys')::VARCHAR AS shadow_keys, "
        "coalesce(e.payload->>'$.decision.signature', e.payload->>'$.signature') AS shadow_signature, "
        "coalesce(e.payload->>'$.decision.reason', e.payload->>'$.reason') AS shadow_reason, "
        "(e.payload->'$.observation.prompt')::VARCHAR AS shadow_prompt, s.width, s.height, s.title, "
        "d.kind AS acting_kind, d.keys::VARCHAR AS acting_keys, d.reason AS acting_reason, "
        "o.prompt::VARCHAR AS acting_prompt, o.screen_hash, s.text "
        "FROM events e "
        "LEFT JOIN observations o ON o.observation_id = coalesce(e.payload->>'$.decision.trigger_id', "
        "e.payload->>'$.trigger_id') "
        "LEFT JOIN (SELECT * FROM decisions WHERE coalesce(source, 'rules') != 'workflow' "
        "QUALIFY row_number() OVER (PARTITION BY trigger_id ORDER BY seq) = 1) d ON d.trigger_id = o.observation_id "
        "LEFT JOIN screens s ON s.screen_hash = o.screen_hash "
        "WHERE e.kind = 'shadow_decision' AND coalesce(e.payload->>'$.shadow_policy_id', "
        "e.payload->>'$.decision.policy_id') = ?" + w.replace(" WHERE ", " AND ") + " ORDER BY e.run_id, e.seq",
        [shadow_policy_id, *params])


def read_run_metrics(wh: Warehouse, policy_ids: Sequence[str], *, since: float | None = None) -> pl.DataFrame:
    """Outcome metrics per run of these acting policies (limited-rollout analysis): escalations,
    friction seconds (``friction_events``: every friction's time, escalations until resolved),
    completion, and time to finish (finished runs only)."""
    if not policy_ids:
        return pl.DataFrame()
    params: list[Any] = list(policy_ids)
    w = ""
    if since is not None:
        w = " AND r.started_at >= ?"
        params.append(_ts(since))
    return wh.sql(
        "SELECT r.run_id, r.policy_id, r.outcome, "
        "(SELECT count(*) FROM decisions d WHERE d.run_id = r.run_id AND d.kind = 'escalate' "
        " AND coalesce(d.source, 'rules') != 'workflow')::DOUBLE AS escalations, "
        "coalesce((SELECT sum(f.seconds_lost) FROM friction_events f WHERE f.run_id = r.run_id), 0) "
        "AS friction_seconds, "
        "CASE WHEN r.outcome = 'finished' THEN 1.0 ELSE 0.0 END AS completion, "
        "CASE WHEN r.outcome = 'finished' THEN date_diff('millisecond', r.started_at, r.ended_at) / 1000.0 END "
        "AS time_to_finish_s "
        "FROM runs r WHERE r.policy_id IN (" + ",".join("?" * len(policy_ids)) + ")" + w +
        " ORDER BY r.started_at", params)
