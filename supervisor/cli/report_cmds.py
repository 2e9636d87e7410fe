"""`supervisor report ...`: reports written from the warehouse into reports/ (markdown + PNG)."""

from __future__ import annotations

from pathlib import Path

import click

from supervisor.analysis import friction_by_kind, write_friction_report
from supervisor.cli import console, settings_from
from supervisor.cli.output import df_records, print_df, print_json
from supervisor.warehouse import reader


@click.group("report")
def report() -> None:
    """Reports over the warehouse (markdown and PNG plots under reports/)."""


@report.command("friction")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"),
              show_default=True, help="Folder to write the report into.")
@click.option("--json", "as_json", is_flag=True, help="Print friction per kind as JSON instead of writing a report.")
@click.pass_context
def friction(ctx: click.Context, out_dir: Path, as_json: bool) -> None:
    """Where supervised runs lose time: friction by kind and by run, and the latest escalations."""
    s = settings_from(ctx).ensure()
    with reader(s) as wh:
        if as_json:
            print_json(df_records(friction_by_kind(wh)))
            return
        print_df(console, friction_by_kind(wh), title="friction by kind")
        path = write_friction_report(wh, out_dir)
    console.print(f"report: {path}")


COMMANDS = [report]
