"""`supervisor report ...`: reports written from the warehouse into reports/ (markdown + PNG),
from the same functions the notebooks call. The plots need the optional `analysis` extra
(matplotlib); without it the command says so in one line."""

from __future__ import annotations

from pathlib import Path

import click

from supervisor.cli import console, settings_from
from supervisor.cli.output import df_records, print_df, print_json
from supervisor.warehouse import reader

_OUT = click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"),
                    show_default=True, help="Folder to write the report's folder into.")


@click.group("report")
def report() -> None:
    """Reports over the warehouse: markdown and PNG plots in a folder under reports/."""


def _written(rep: object) -> None:
    from supervisor.analysis import Report

    assert isinstance(rep, Report)
    click.echo(f"report: {rep.markdown} ({len(rep.images)} plots)")  # one line, never wrapped: scripts read it


@report.command("friction")
@_OUT
@click.option("--json", "as_json", is_flag=True, help="Print time lost per kind as JSON instead of writing a report.")
@click.pass_context
def friction(ctx: click.Context, out_dir: Path, as_json: bool) -> None:
    """Where supervised runs lose time: seconds lost by cause, agent, rule and policy; escalations
    and how humans answered them; the prompts seen most often; stalls; the trend per day."""
    from supervisor.analysis import friction_by_kind, write_friction_report
    from supervisor.analysis.plots import require_matplotlib

    s = settings_from(ctx).ensure()
    if not as_json:
        require_matplotlib()
    with reader(s) as wh:
        by_kind = friction_by_kind(wh)
        if as_json:
            print_json(df_records(by_kind))
            return
        print_df(console, by_kind, title="time lost by kind (seconds)")
        rep = write_friction_report(wh, out_dir)
    _written(rep)


COMMANDS = [report]
