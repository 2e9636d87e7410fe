"""One run over time: the pane's states, the prompts it showed, the keys sent, escalations with
their waits, verifications and friction, as tidy frames with seconds since the run started
(``t_s``) next to wall-clock times, for ``run-timeline.ipynb`` and ``supervisor report run``."""

from __future__ import annotations

import polars as pl

from supervisor.errors import InputError
from supervisor.warehouse import Warehouse


def run_overview(wh: Warehouse, run_id: str) -> pl.DataFrame:
    """The run's one summary row (``run_summary``); an error naming the fix when it is unknown."""
    df = wh.sql("SELECT * FROM run_summary WHERE run_id = ?", [run_id])
    if df.height == 0:
        raise InputError(f"run {run_id} is not in {wh.path}", "run `supervisor warehouse sync`, or check `supervisor runs`")
    return df


def run_states(wh: Warehouse, run_id: str) -> pl.DataFrame:
    """The pane's state over time: one row per journaled observation, lasting until the next one
    (the last until the run's end). Columns: ids, ``start``/``end``, ``t0_s``/``t1_s``, ``state``,
    ``prompt_kind``, ``question``."""
    return wh.sql(
        "WITH r AS (SELECT started_at, coalesce(ended_at, last_event_at) AS end_at FROM runs WHERE run_id = ?) "
        "SELECT o.run_id, o.observation_id, o.seq, o.occurred_at AS start, "
        "coalesce(lead(o.occurred_at) OVER (ORDER BY o.seq), r.end_at) AS \"end\", "
        "date_diff('millisecond', r.started_at, o.occurred_at) / 1000.0 AS t0_s, "
        "date_diff('millisecond', r.started_at, coalesce(lead(o.occurred_at) OVER (ORDER BY o.seq), r.end_at)) "
        "/ 1000.0 AS t1_s, o.state, o.prompt_kind, o.question, o.screen_hash "
        "FROM observations o, r WHERE o.run_id = ? ORDER BY o.seq", [run_id, run_id]
    )


def run_events(wh: Warehouse, run_id: str) -> pl.DataFrame:
    """What happened in the run, one row per marker, in ``lane`` order: ``prompt`` (a prompt first
    seen), ``sent`` (keys or text delivered), ``escalation`` (a span until what ended it),
    ``verification`` (passed or failed), ``friction`` (anything else that cost time).
    Columns: ``run_id``, ``seq``, ``at``, ``t_s``, ``end_t_s`` (spans), ``lane``, ``label``,
    ``ok`` (verifications; false for a friction or an unconfirmed answer), ``id`` (the row's own id)."""
    return wh.sql(
        """
        WITH r AS (SELECT started_at FROM runs WHERE run_id = $1),
        prompts AS (
            SELECT o.observation_id AS id, o.seq, o.occurred_at AS at, 'prompt' AS lane,
                   o.prompt_kind || ': ' || coalesce(o.question, '') AS label, NULL::BOOLEAN AS ok,
                   NULL::TIMESTAMP AS end_at
            FROM observations o WHERE o.run_id = $1 AND o.state = 'asking'
            QUALIFY row_number() OVER (PARTITION BY coalesce(o.prompt->>'$.signature', o.question) ORDER BY o.seq) = 1
        ),
        sent AS (
            SELECT a.action_id AS id, a.seq, a.occurred_at AS at, 'sent' AS lane,
                   coalesce(nullif(array_to_string(CAST(a.keys AS VARCHAR[]), ' '), ''), 'text') AS label,
                   (SELECT bool_or(c.confirmed) FROM actions c WHERE c.action_id = a.action_id
                    AND c.confirmed IS NOT NULL) AS ok, NULL::TIMESTAMP AS end_at
            FROM actions a WHERE a.run_id = $1 AND a.delivered AND a.confirmed IS NULL
        ),
        esc AS (
            SELECT friction_id AS id, seq, occurred_at AS at, 'escalation' AS lane,
                   coalesce(pattern, rule, 'escalation') || ' -> ' || coalesce(ended_by, '?') AS label,
                   NULL::BOOLEAN AS ok, ended_at AS end_at
            FROM friction_events WHERE run_id = $1 AND kind = 'escalation'
        ),
        ver AS (
            SELECT verification_id AS id, seq, occurred_at AS at, 'verification' AS lane,
                   coalesce(node || ': ', '') || verifier AS label, passed AS ok, NULL::TIMESTAMP AS end_at
            FROM verifications WHERE run_id = $1
        ),
        fr AS (
            SELECT friction_id AS id, seq, occurred_at AS at, 'friction' AS lane,
                   kind || ' (' || round(seconds_lost, 1) || ' s)' AS label, false AS ok, NULL::TIMESTAMP AS end_at
            FROM friction_events WHERE run_id = $1 AND kind <> 'escalation'
        ),
        allrows AS (SELECT * FROM prompts UNION ALL SELECT * FROM sent UNION ALL SELECT * FROM esc
                    UNION ALL SELECT * FROM ver UNION ALL SELECT * FROM fr)
        SELECT $1 AS run_id, x.seq, x.at, date_diff('millisecond', r.started_at, x.at) / 1000.0 AS t_s,
               date_diff('millisecond', r.started_at, x.end_at) / 1000.0 AS end_t_s, x.lane, x.label, x.ok, x.id
        FROM allrows x, r ORDER BY x.seq
        """, [run_id]
    )


def run_decisions(wh: Warehouse, run_id: str) -> pl.DataFrame:
    """Every decision that did something (not a plain wait), with the screen state it answered."""
    return wh.sql(
        "SELECT d.decision_id, d.run_id, d.seq, d.occurred_at, d.kind, d.rule, "
        "array_to_string(CAST(d.keys AS VARCHAR[]), ' ') AS keys, d.approves, o.state, o.prompt_kind, o.question, "
        "d.reason FROM decisions d LEFT JOIN observations o ON o.observation_id = d.trigger_id "
        "WHERE d.run_id = ? AND d.kind <> 'wait' ORDER BY d.seq", [run_id]
    )


def run_supervision(wh: Warehouse, run_id: str) -> pl.DataFrame:
    """A workflow run's worker profile, supervision mode and why, and the preferences its instructions
    used (its ``supervision`` and ``preferences`` notes): one row per setting, ``what`` and ``value``."""
    df = wh.sql("SELECT CAST(payload AS VARCHAR) AS payload FROM events WHERE run_id = ? AND kind = 'note' "
                "AND (payload->>'$.type') IN ('supervision', 'preferences') ORDER BY seq", [run_id])
    import json

    rows: list[dict[str, str]] = []
    for p in (json.loads(x) for x in df["payload"].to_list()):
        if p.get("type") == "supervision":
            why = p.get("chosen_by") + (f" ({p['preference']})" if p.get("preference") else "")
            rows += [{"what": "profile", "value": f"{p.get('profile')} (chosen by {why})"},
                     {"what": "mode", "value": str(p.get("mode"))}]
        else:
            rows += [{"what": f"preference {k}", "value": str(v)} for k, v in (p.get("values") or {}).items()]
    return pl.DataFrame(rows, schema={"what": pl.String, "value": pl.String})


def run_oracle(wh: Warehouse, run_id: str) -> pl.DataFrame:
    """The second opinions asked about the run (``oracle consult --run``), oldest first."""
    return wh.sql("SELECT seq, occurred_at, mode, source, model, question, summary, cost_usd, cache_hit, asked_by "
                  "FROM oracle_consultations WHERE run_id = ? ORDER BY occurred_at, consultation_id", [run_id])
