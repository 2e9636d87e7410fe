"""`supervisor warehouse ...`: where the warehouse is, ingest journals, counts, SQL, and
migrating a local warehouse into a fleet's DuckLake.

The warehouse package (duckdb, polars) is imported inside each command: `supervisor warehouse path`
and every ``--help`` start without it.
"""

from __future__ import annotations

import click

from supervisor.cli import console, echo, settings_from
from supervisor.cli.output import df_records, print_df, print_json
from supervisor.errors import EXIT_CHECK_FAILED
from supervisor.settings import parse_warehouse


@click.group("warehouse")
def warehouse() -> None:
    """The warehouse (a DuckDB file, or a fleet's DuckLake) that ingests every run's journal."""


@warehouse.command("path")
@click.pass_context
def path_cmd(ctx: click.Context) -> None:
    """Print the warehouse file's path (and where journals live)."""
    s = settings_from(ctx)
    echo(str(s.warehouse))


@warehouse.command("sync")
@click.option("--wait", "wait_s", type=float, default=0.0, show_default=True,
              help="Seconds to wait for another process to release the warehouse lock.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def sync_cmd(ctx: click.Context, wait_s: float, as_json: bool) -> None:
    """Ingest new journal events into the warehouse (idempotent: safe to run any time)."""
    from supervisor.warehouse import sync

    s = settings_from(ctx).ensure()
    report = sync(s, wait_s=wait_s)
    if as_json:
        print_json(report.__dict__)
        return
    console.print(f"ingested {report.new_events} new events from {report.journals} journals "
                  f"in {report.seconds:.2f}s into {s.warehouse}")
    for path in report.torn_tails:
        console.print(f"[yellow]torn last line in {path} (an interrupted write; skipped until complete)[/]")
    for path, n in report.bad_lines.items():
        console.print(f"[yellow]{n} line(s) of {path} are not valid events and were skipped "
                      f"(first: {report.reasons.get(path, '?')}); `supervisor warehouse stats` lists them[/]")
    for path, why in report.unreadable.items():
        console.print(f"[yellow]could not read {path}: {why} (tried again at the next sync)[/]")


@warehouse.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print counts as JSON.")
@click.pass_context
def stats_cmd(ctx: click.Context, as_json: bool) -> None:
    """Row counts per table, the schema version, and journal lines the ingest skipped."""
    from supervisor.warehouse import open_warehouse

    s = settings_from(ctx)
    with open_warehouse(s.warehouse, read_only=True) as wh:
        stats = wh.stats()
        skipped = wh.skipped_lines()
    if as_json:
        print_json({**stats, "skipped_lines": [{"journal_path": p, "lines": n, "first_reason": r}
                                               for p, n, r in skipped]})
        return
    for name, n in stats.items():
        console.print(f"{name:24} {n:>12,}")
    for path, n, reason in skipped:
        console.print(f"[yellow]skipped {n} line(s) of {path} that are not valid events (first: {reason})[/]")
    if skipped:
        console.print('[yellow]details: supervisor warehouse sql "SELECT * FROM ingest_rejects"[/]')


@warehouse.command("sql")
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print rows as a JSON array.")
@click.pass_context
def sql_cmd(ctx: click.Context, query: str, as_json: bool) -> None:
    """Run a read-only SQL QUERY against the warehouse.

    Example: supervisor warehouse sql "SELECT kind, count(*) FROM decisions GROUP BY kind"
    """
    from supervisor.warehouse import open_warehouse

    s = settings_from(ctx)
    with open_warehouse(s.warehouse, read_only=True) as wh:
        df = wh.sql(query)
    if as_json:
        print_json(df_records(df))
    else:
        print_df(console, df)


@warehouse.command("migrate")
@click.option("--to", "to", required=True, metavar="FILE|ducklake:postgres:...",
              help="The warehouse to copy into, e.g. the fleet's DuckLake "
                   "(ducklake:postgres:dbname=NAME host=HOST data_path=FOLDER).")
@click.option("--from", "from_", default=None, metavar="FILE|ducklake:postgres:...",
              help="The warehouse to copy from (default: this one: --warehouse, $SUPERVISOR_WAREHOUSE or "
                   "HOME/warehouse.duckdb).")
@click.option("--json", "as_json", is_flag=True, help="Print the per-table counts as JSON.")
@click.pass_context
def migrate_cmd(ctx: click.Context, to: str, from_: str | None, as_json: bool) -> None:
    """Copy every row of this warehouse that the --to warehouse lacks into it, then check it.

    Idempotent (rows are matched by key: run it again at any time), one transaction, and
    verified: each table's rows are looked up in the target afterwards. Then point
    SUPERVISOR_WAREHOUSE (or --warehouse) at the target. Exit 1 if any row is missing.
    """
    from supervisor.warehouse.transfer import migrate_warehouse

    s = settings_from(ctx)
    source = parse_warehouse(from_) if from_ else s.warehouse
    report = migrate_warehouse(source, parse_warehouse(to))
    if as_json:
        print_json({"source": report.source, "target": report.target, "copied": report.copied,
                    "complete": report.complete, "tables": [t.__dict__ for t in report.tables]})
    else:
        console.print(f"copied {report.copied:,} rows from {report.source} into {report.target}")
        console.print(f"{'table':24} {'source':>10} {'copied':>10} {'target':>10} {'missing':>8}")
        for t in report.tables:
            console.print(f"{t.table:24} {t.source_rows:>10,} {t.copied:>10,} {t.target_rows:>10,} {t.missing:>8,}")
    if not report.complete:
        echo("error: some rows of the source are not in the target after the copy (run the migration "
                   "again; if rows are still missing, report it with this table)", err=True)
        ctx.exit(EXIT_CHECK_FAILED)
