"""`supervisor runs`: list runs; `supervisor runs show RUN_ID`: one run in detail.

Reads the warehouse after ingesting new journal lines. When another process holds the
warehouse lock, the list falls back to reading the journals directly (they are the
source of truth) and says so.
"""

from __future__ import annotations

import datetime as dt

import click

from supervisor.cli import console, err_console, settings_from
from supervisor.cli.output import df_records, print_df, print_json
from supervisor.errors import InputError, WarehouseLocked
from supervisor.runlog import list_runs
from supervisor.warehouse import reader

LIST_COLUMNS = ["run_id", "started_at", "agent", "outcome", "paused", "duration_s", "observations", "answers",
                "escalations", "friction_events"]


@click.group("runs", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print runs as a JSON array.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Show at most this many.")
@click.pass_context
def runs(ctx: click.Context, as_json: bool, limit: int) -> None:
    """List supervised runs, newest first. Subcommands act on one run."""
    if ctx.invoked_subcommand is not None:
        return
    s = settings_from(ctx).ensure()
    try:
        with reader(s) as wh:
            df = wh.runs_df().head(limit)
    except WarehouseLocked as exc:
        err_console.print(f"[yellow]{exc.one_line()}; listing from journals instead[/]")
        rows = [r.to_dict() for r in list_runs(s.journals_dir)[:limit]]
        if as_json:
            print_json(rows)
        else:
            for r in rows:
                started = dt.datetime.fromtimestamp(r["started_at"] or 0).isoformat(timespec="seconds")
                console.print(f"{r['run_id']}  {started}  {r['agent'] or '-'}  {r['outcome'] or r['state'] or '-'}"
                              f"{'  PAUSED: ' + str(r['pause_reason']) if r['paused'] else ''}")
        return
    if as_json:
        print_json(df_records(df))
        return
    if df.height == 0:
        console.print(f"no runs yet in {s.warehouse} (start one with `supervisor run -- COMMAND`)")
        return
    print_df(console, df.select([c for c in LIST_COLUMNS if c in df.columns]), title="runs")


@runs.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the run, its decisions and friction as JSON.")
@click.option("--events", "n_events", type=click.IntRange(min=0), default=15, show_default=True,
              help="How many of the latest decisions to show.")
@click.pass_context
def show(ctx: click.Context, run_id: str, as_json: bool, n_events: int) -> None:
    """Show one run: where it stands, what was decided, what friction it met."""
    s = settings_from(ctx).ensure()
    with reader(s) as wh:
        run = wh.run_df(run_id)
        if run.height == 0:
            raise InputError(f"no run {run_id!r} in {s.warehouse}", "list runs with `supervisor runs`")
        decisions = wh.sql(
            "SELECT d.decision_id, d.occurred_at, d.kind, d.keys, d.approves, d.reason, d.rule, d.next_action, "
            "o.state, o.prompt_kind, o.question FROM decisions d LEFT JOIN observations o "
            "ON o.observation_id = d.trigger_id WHERE d.run_id = ? ORDER BY d.seq", [run_id])
        friction = wh.friction_df(run_id)
        counts = wh.sql("SELECT kind, count(*) AS n FROM events WHERE run_id = ? GROUP BY kind ORDER BY kind",
                        [run_id])
    if as_json:
        print_json({"run": df_records(run)[0], "event_counts": {r["kind"]: r["n"] for r in df_records(counts)},
                    "decisions": df_records(decisions), "friction": df_records(friction)})
        return
    row = df_records(run)[0]
    for key in ("run_id", "started_at", "ended_at", "command", "agent", "pane_id", "policy_id", "outcome",
                "paused", "pause_reason", "next_action", "events"):
        if row.get(key) not in (None, ""):
            console.print(f"[bold]{key:14}[/] {row[key]}")
    console.print("[bold]events        [/] " + ", ".join(f"{r['kind']}={r['n']}" for r in df_records(counts)))
    if decisions.height:
        print_df(console, decisions.tail(n_events).select(
            ["occurred_at", "kind", "keys", "approves", "state", "question", "reason"]), title="latest decisions")
    if friction.height:
        print_df(console, friction.select(["occurred_at", "kind", "detail", "seconds_lost"]), title="friction")


COMMANDS = [runs]
