"""Schema migrations: plain functions applied in order, one transaction each, recorded in
``schema_migrations``. A database made by an older version is brought up to date on
open; a migration never runs twice.

Add a migration by appending a function to :data:`MIGRATIONS`; never edit one that has
shipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Connection = Any  # duckdb.DuckDBPyConnection; kept loose so this module stays import-light


def m0001_core_tables(con: Connection) -> None:
    """Events, runs and the typed tables every supervised run fills."""
    con.execute(
        """
        CREATE TABLE ingest_state (
            journal_path VARCHAR PRIMARY KEY,
            run_id VARCHAR,
            byte_offset BIGINT NOT NULL,
            events BIGINT NOT NULL,
            torn_tail BOOLEAN NOT NULL,
            bad_lines INTEGER NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        CREATE TABLE events (
            event_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER NOT NULL,
            kind VARCHAR NOT NULL,
            occurred_at TIMESTAMP NOT NULL,
            payload JSON,
            schema_version INTEGER NOT NULL
        );
        CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY,
            started_at TIMESTAMP,
            ended_at TIMESTAMP,
            last_event_at TIMESTAMP,
            command VARCHAR,
            pane_id VARCHAR,
            session VARCHAR,
            cwd VARCHAR,
            host VARCHAR,
            agent VARCHAR,
            policy_id VARCHAR,
            spec_id VARCHAR,
            outcome VARCHAR,
            exit_code INTEGER,
            paused BOOLEAN,
            pause_reason VARCHAR,
            next_action VARCHAR,
            package_version VARCHAR,
            events BIGINT
        );
        CREATE TABLE screens (
            screen_hash VARCHAR PRIMARY KEY,
            text VARCHAR,
            width INTEGER,
            height INTEGER,
            title VARCHAR,
            first_seen_at TIMESTAMP,
            first_run_id VARCHAR
        );
        CREATE TABLE observations (
            observation_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            pane_id VARCHAR,
            screen_hash VARCHAR,
            state VARCHAR,
            agent VARCHAR,
            prompt_kind VARCHAR,
            question VARCHAR,
            risk_level VARCHAR,
            blocker_kind VARCHAR,
            confidence DOUBLE,
            policy_id VARCHAR,
            prompt JSON,
            blocker JSON,
            evidence JSON
        );
        CREATE TABLE checkpoints (
            checkpoint_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            checkpoint_seq INTEGER,
            status VARCHAR,
            current_node VARCHAR,
            summary VARCHAR,
            parse_error VARCHAR,
            payload JSON
        );
        CREATE TABLE decisions (
            decision_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            trigger_id VARCHAR,
            kind VARCHAR,
            keys JSON,
            text VARCHAR,
            approves BOOLEAN,
            reason VARCHAR,
            confidence DOUBLE,
            rule VARCHAR,
            next_action VARCHAR,
            policy_id VARCHAR,
            source VARCHAR
        );
        CREATE TABLE actions (
            event_id VARCHAR PRIMARY KEY,
            action_id VARCHAR,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            decision_id VARCHAR,
            kind VARCHAR,
            keys JSON,
            text VARCHAR,
            pane_id VARCHAR,
            delivered BOOLEAN,
            confirmed BOOLEAN,
            error VARCHAR
        );
        CREATE TABLE verifications (
            verification_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            verifier VARCHAR,
            node VARCHAR,
            passed BOOLEAN,
            output VARCHAR,
            payload JSON
        );
        CREATE TABLE judge_calls (
            judge_call_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            model VARCHAR,
            prompt_version VARCHAR,
            request_hash VARCHAR,
            cache_hit BOOLEAN,
            input_tokens BIGINT,
            output_tokens BIGINT,
            latency_ms DOUBLE,
            cost_usd DOUBLE,
            outcome VARCHAR,
            error VARCHAR
        );
        CREATE TABLE notifications (
            notification_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            channel VARCHAR,
            title VARCHAR,
            body VARCHAR,
            ok BOOLEAN,
            payload JSON
        );
        CREATE TABLE friction (
            friction_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            kind VARCHAR,
            detail VARCHAR,
            seconds_lost DOUBLE,
            author VARCHAR
        );
        CREATE TABLE shadow_decisions (
            shadow_decision_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            seq INTEGER,
            occurred_at TIMESTAMP,
            trigger_id VARCHAR,
            shadow_policy_id VARCHAR,
            kind VARCHAR,
            keys JSON,
            approves BOOLEAN,
            reason VARCHAR,
            rule VARCHAR
        );
        CREATE INDEX events_run ON events(run_id);
        CREATE INDEX observations_run ON observations(run_id);
        CREATE INDEX decisions_run ON decisions(run_id);
        """
    )


def m0002_views(con: Connection) -> None:
    """Views for the common questions: per-run summary, friction by kind, escalations."""
    con.execute(
        """
        CREATE VIEW run_summary AS
        SELECT r.run_id, r.started_at, r.ended_at, r.agent, r.command, r.outcome, r.paused,
               r.pause_reason, r.policy_id,
               date_diff('millisecond', r.started_at, coalesce(r.ended_at, r.last_event_at)) / 1000.0
                   AS duration_s,
               (SELECT count(*) FROM observations o WHERE o.run_id = r.run_id) AS observations,
               (SELECT count(*) FROM decisions d WHERE d.run_id = r.run_id AND d.kind = 'answer') AS answers,
               (SELECT count(*) FROM decisions d WHERE d.run_id = r.run_id AND d.kind = 'escalate')
                   AS escalations,
               (SELECT count(*) FROM friction f WHERE f.run_id = r.run_id) AS friction_events
        FROM runs r;

        CREATE VIEW friction_by_kind AS
        SELECT kind, count(*) AS events, count(DISTINCT run_id) AS runs,
               sum(coalesce(seconds_lost, 0)) AS seconds_lost
        FROM friction GROUP BY kind;

        CREATE VIEW escalations AS
        SELECT d.decision_id, d.run_id, d.occurred_at, d.reason, d.next_action, d.rule,
               o.state, o.agent, o.prompt_kind, o.question, o.risk_level, o.blocker_kind, o.screen_hash
        FROM decisions d LEFT JOIN observations o ON o.observation_id = d.trigger_id
        WHERE d.kind = 'escalate';

        CREATE VIEW answered_prompts AS
        SELECT d.decision_id, d.run_id, d.occurred_at, d.keys, d.approves, d.rule, d.reason,
               o.agent, o.prompt_kind, o.question, o.risk_level, o.screen_hash
        FROM decisions d JOIN observations o ON o.observation_id = d.trigger_id
        WHERE d.kind = 'answer';
        """
    )


def m_eval_tables(con: Connection) -> None:
    """The workbench's tables: eval runs and their case results, blind compares (pairs and, kept
    apart, the A/B mapping revealed after scoring), and replays with their divergences."""
    con.execute(
        """
        CREATE TABLE eval_runs (
            eval_run_id VARCHAR PRIMARY KEY,
            started_at TIMESTAMP,
            finished_at TIMESTAMP,
            policy_id VARCHAR NOT NULL,
            policy_name VARCHAR,
            policy_path VARCHAR,
            code_version VARCHAR,
            host VARCHAR,
            suites JSON,
            cases INTEGER,
            passed INTEGER,
            failed INTEGER,
            errors INTEGER,
            skipped INTEGER,
            pass_rate DOUBLE,
            weighted_pass_rate DOUBLE,
            unsafe_approvals INTEGER,
            missed_prompts INTEGER,
            false_prompts INTEGER,
            must_pass_failures INTEGER,
            judge_calls INTEGER,
            judge_cost_usd DOUBLE,
            by_suite JSON,
            by_tag JSON,
            report_path VARCHAR
        );
        CREATE TABLE eval_results (
            eval_run_id VARCHAR NOT NULL,
            suite VARCHAR NOT NULL,
            case_id VARCHAR NOT NULL,
            suite_hash VARCHAR,
            kind VARCHAR,
            status VARCHAR,
            severity DOUBLE,
            must_pass BOOLEAN,
            tags JSON,
            failures JSON,
            actual JSON,
            expected JSON,
            unsafe_approval BOOLEAN,
            missed_prompt BOOLEAN,
            false_prompt BOOLEAN,
            origin VARCHAR,
            transform VARCHAR,
            duration_ms DOUBLE,
            PRIMARY KEY (eval_run_id, suite, case_id)
        );
        CREATE TABLE compare_runs (
            compare_run_id VARCHAR PRIMARY KEY,
            created_at TIMESTAMP,
            baseline_policy_id VARCHAR,
            candidate_policy_id VARCHAR,
            baseline_name VARCHAR,
            candidate_name VARCHAR,
            source VARCHAR,
            suites JSON,
            scorer VARCHAR,
            seed BIGINT,
            pairs INTEGER,
            identical INTEGER,
            wins INTEGER,
            losses INTEGER,
            ties INTEGER,
            win_rate DOUBLE,
            ci_low DOUBLE,
            ci_high DOUBLE,
            p_value DOUBLE,
            judge_calls INTEGER,
            judge_cost_usd DOUBLE,
            code_version VARCHAR,
            report_path VARCHAR
        );
        CREATE TABLE compare_pairs (
            compare_run_id VARCHAR NOT NULL,
            pair_id VARCHAR NOT NULL,
            suite VARCHAR,
            case_id VARCHAR,
            output_a JSON,
            output_b JSON,
            verdict VARCHAR,
            detail VARCHAR,
            winner VARCHAR,
            PRIMARY KEY (compare_run_id, pair_id)
        );
        CREATE TABLE compare_mappings (
            compare_run_id VARCHAR NOT NULL,
            pair_id VARCHAR NOT NULL,
            candidate_is VARCHAR NOT NULL,
            revealed_at TIMESTAMP,
            PRIMARY KEY (compare_run_id, pair_id)
        );
        CREATE TABLE replay_runs (
            replay_run_id VARCHAR PRIMARY KEY,
            created_at TIMESTAMP,
            policy_id VARCHAR,
            policy_name VARCHAR,
            selection VARCHAR,
            runs INTEGER,
            observations BIGINT,
            unique_screens BIGINT,
            compared BIGINT,
            agreement DOUBLE,
            by_class JSON,
            code_version VARCHAR,
            seconds DOUBLE
        );
        CREATE TABLE replay_divergences (
            replay_run_id VARCHAR NOT NULL,
            observation_id VARCHAR NOT NULL,
            trigger VARCHAR,
            run_id VARCHAR,
            seq INTEGER,
            screen_hash VARCHAR,
            divergence VARCHAR,
            recorded_kind VARCHAR,
            recorded_keys JSON,
            recorded_approves BOOLEAN,
            replayed_kind VARCHAR,
            replayed_keys JSON,
            replayed_approves BOOLEAN,
            replayed_reason VARCHAR,
            PRIMARY KEY (replay_run_id, observation_id)
        );
        CREATE INDEX eval_results_run ON eval_results(eval_run_id);
        """
    )


MIGRATIONS: list[Callable[[Connection], None]] = [
    m0001_core_tables,
    m0002_views,
    m_eval_tables,
]
"""Applied in this order; the position (1-based) is the version recorded."""


def migration_name(fn: Callable[[Connection], None]) -> str:
    return fn.__name__


def apply_migrations(con: Connection, upto: int | None = None) -> list[str]:
    """Apply every migration not yet recorded (up to version ``upto``). Returns the names applied."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for version, fn in enumerate(MIGRATIONS, start=1):
        if upto is not None and version > upto:
            break
        if version in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            fn(con)
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, fn.__name__])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(fn.__name__)
    return applied
