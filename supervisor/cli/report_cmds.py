"""`supervisor report friction|run RUN_ID|candidate ID|evals`: reports written from the warehouse
into a folder under HOME/reports/ or --out DIR (markdown + PNG), from the same functions the notebooks call. The
plots need the optional `analysis` extra (matplotlib); without it the command says so in one
line before reading anything."""

from __future__ import annotations

from pathlib import Path

import click

from supervisor.cli import console, echo, settings_from
from supervisor.cli.output import df_records, print_df, print_json
from supervisor.cli.runs_cmds import RUN_ID


def _home_reports(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path:
    """Without --out: the supervisor's home, never the current directory (often the agent's project)."""
    return value if value is not None else settings_from(ctx).home / "reports"


_OUT = click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                    callback=_home_reports,
                    help="Folder to write the report's folder into (default: HOME/reports).")


@click.group("report")
def report() -> None:
    """Reports over the warehouse: markdown and PNG plots in a folder under HOME/reports/ (or --out)."""


def _written(rep: object) -> None:
    from supervisor.analysis import Report

    assert isinstance(rep, Report)
    echo(f"report: {rep.markdown} ({len(rep.images)} plots)")  # one line, never wrapped: scripts read it


@report.command("friction")
@_OUT
@click.option("--json", "as_json", is_flag=True, help="Print time lost per kind as JSON instead of writing a report.")
@click.pass_context
def friction(ctx: click.Context, out_dir: Path, as_json: bool) -> None:
    """Where supervised runs lose time: seconds lost by cause, agent, rule and policy; escalations
    and how humans answered them; the prompts seen most often; stalls; the trend per day."""
    from supervisor.analysis import friction_by_kind, write_friction_report
    from supervisor.analysis.plots import require_matplotlib
    from supervisor.warehouse import reader

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


@report.command("run")
@click.argument("run_id", type=RUN_ID)
@_OUT
@click.pass_context
def run_report(ctx: click.Context, run_id: str, out_dir: Path) -> None:
    """One run: its timeline (pane states, prompts, keys sent, escalations, verifications,
    friction), the decisions that acted, its escalations and what the human did. RUN_ID may be a
    prefix or `last`."""
    from supervisor.analysis import write_run_report
    from supervisor.analysis.plots import require_matplotlib
    from supervisor.warehouse import reader

    require_matplotlib()
    with reader(settings_from(ctx).ensure()) as wh:
        rep = write_run_report(wh, run_id, out_dir)
    _written(rep)


@report.command("candidate")
@click.argument("candidate")
@click.option("--baseline", default=None, metavar="POLICY",
              help="Judge against this policy (default: the baseline of the candidate's latest compare, "
                   "else the shipped baseline).")
@_OUT
@click.pass_context
def candidate_report(ctx: click.Context, candidate: str, baseline: str | None, out_dir: Path) -> None:
    """One candidate's evidence: per-suite and per-tag pass rates against the baseline (95%
    intervals), blind-compare win rates, the cases where they disagree with their screens, shadow
    agreement and the limited-rollout arms on live runs, and the gate's reasons. CANDIDATE is a
    candidate id, a policy id (or prefix), a policy file, or a policy name."""
    from supervisor.analysis import canary_evidence, resolve_policy_id, write_candidate_report
    from supervisor.analysis.plots import require_matplotlib
    from supervisor.warehouse import reader

    require_matplotlib()
    s = settings_from(ctx).ensure()
    with reader(s) as wh:
        policy_id = resolve_policy_id(wh, candidate)[0]
    evidence = canary_evidence(s, policy_id)  # the workbench's verdicts (it reads the warehouse itself)
    with reader(s, refresh=False) as wh:
        rep = write_candidate_report(wh, candidate, out_dir, baseline=baseline, evidence=evidence)
    _written(rep)


@report.command("evals")
@_OUT
@click.pass_context
def evals_report(ctx: click.Context, out_dir: Path) -> None:
    """Eval, compare and gate history per policy (pass rates over time with intervals, unsafe
    approvals, compare win rates, verdicts), and the registry's promotions and rollouts."""
    from supervisor.analysis import write_evals_report
    from supervisor.analysis.plots import require_matplotlib
    from supervisor.warehouse import reader

    require_matplotlib()
    with reader(settings_from(ctx).ensure()) as wh:
        rep = write_evals_report(wh, out_dir)
    _written(rep)

