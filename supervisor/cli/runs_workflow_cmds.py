"""Per-run lifecycle and history: `supervisor runs stop|resume|review|export|summarize|replay|
postmortem RUN_ID`, added to the `runs` group.

A live supervisor of the run gets stop/resume/review as control requests (it journals them);
without one they go straight into the run's journal, and `runs resume` re-attaches to the
run's pane and supervises it again from its journal (after a crash, nothing is sent twice).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from supervisor.cli import console, settings_from
from supervisor.cli.output import print_json
from supervisor.cli.runs_cmds import RUN_ID, runs
from supervisor.errors import EXIT_ESCALATED, InputError, UsageError
from supervisor.journal import Journal, iter_events
from supervisor.settings import Settings
from supervisor.workflow.controller import _try_lock, control_dir, submit_control
from supervisor.workflow.history import (
    attach_recorded,
    export_run,
    format_summary,
    load_events,
    replay,
    run_spec,
    summarize,
    write_postmortem,
)


def _journal_path(s: Settings, run_id: str) -> Path:
    path = s.journal_path(run_id)
    if not path.exists():
        raise InputError(f"run {run_id} not found (no journal at {path})", "list runs with `supervisor runs`")
    return path


def _is_live(s: Settings, run_id: str) -> bool:
    with _try_lock(control_dir(s, run_id) / ".lock") as free:
        return not free


def _ended(path: Path) -> bool:
    return any(e.kind == "run_ended" for e in iter_events(path))


def _refuse_if_plain_run_is_live(path: Path, run_id: str) -> None:
    """A run without a workflow has no control channel: never write to the journal of a live one."""
    import os
    import socket

    events = list(iter_events(path))
    if any(e.kind == "note" and e.payload.get("type") in ("workflow", "supervision_resumed") for e in events):
        return
    started = next((e.payload for e in events if e.kind == "run_started"), {})
    pid, host = started.get("pid"), started.get("host")
    if not pid or host != socket.gethostname():
        return
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError):
        return
    except PermissionError:
        pass
    raise UsageError(f"run {run_id} is supervised by process {pid} and has no workflow control channel",
                     f"stop that supervisor (Ctrl-C, or `kill {pid}`) first")


def _current_policy(s: Settings, path: Path | None) -> Any:
    try:
        from supervisor.cli.live_cmds import resolve_policy
    except ImportError:
        from supervisor.policy import baseline_policy, load_policy

        return load_policy(path) if path else baseline_policy()
    return resolve_policy(s, path)


@runs.command("review")
@click.argument("run_id", type=RUN_ID)
@click.option("--by", "by", type=click.Choice(["human", "stronger_reviewer"]), default="human", show_default=True,
              help="Who reviewed the work (the spec's acceptance.must_review_by).")
@click.option("--note", default="", help="A note kept with the review.")
@click.pass_context
def review_cmd(ctx: click.Context, run_id: str, by: str, note: str) -> None:
    """Record a review of RUN_ID; a finish held for this review then goes through."""
    s = settings_from(ctx).ensure()
    _refuse_if_plain_run_is_live(_journal_path(s, run_id), run_id)
    where = submit_control(s, run_id, "review", by=by, note=note)
    if where == "live":
        console.print(f"review by {by} handed to the live supervisor of {run_id}")
    else:
        console.print(f"review by {by} recorded in {run_id}'s journal (no live supervisor; "
                      f"`supervisor runs resume {run_id}` continues it)")


@runs.command("stop")
@click.argument("run_id", type=RUN_ID)
@click.option("--note", default="", help="Why.")
@click.pass_context
def stop_cmd(ctx: click.Context, run_id: str, note: str) -> None:
    """Stop supervising RUN_ID (the agent keeps running in its pane)."""
    s = settings_from(ctx).ensure()
    path = _journal_path(s, run_id)
    if _ended(path):
        raise UsageError(f"run {run_id} has already ended", "nothing to stop")
    _refuse_if_plain_run_is_live(path, run_id)
    where = submit_control(s, run_id, "stop", note=note)
    if where == "live":
        console.print(f"stop handed to the live supervisor of {run_id}")
        return
    with Journal(path, run_id) as j:
        j.append("run_ended", {"outcome": "stopped", "reason": "stopped by `supervisor runs stop` (no live "
                                                               "supervisor)", "exit_code": None})
    console.print(f"{run_id} marked stopped (it had no live supervisor)")


@runs.command("resume")
@click.argument("run_id", type=RUN_ID)
@click.option("--no-attach", is_flag=True, help="Only clear the pause; do not re-attach a supervisor.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="When re-attaching: stop supervising after this long.")
@click.pass_context
def resume_cmd(ctx: click.Context, run_id: str, no_attach: bool, timeout: float | None) -> None:
    """Resume RUN_ID: clear its pause; with no live supervisor, re-attach to its pane and go on
    from the journal (instructions already sent are not sent again)."""
    s = settings_from(ctx).ensure()
    path = _journal_path(s, run_id)
    if _ended(path):
        raise UsageError(f"run {run_id} has already ended", f"start a new run, or read it: supervisor runs show {run_id}")
    _refuse_if_plain_run_is_live(path, run_id)
    where = submit_control(s, run_id, "resume")
    if where == "live":
        console.print(f"resume handed to the live supervisor of {run_id}")
        return
    if no_attach:
        console.print(f"{run_id} resumed in its journal (no live supervisor)")
        return
    events = list(iter_events(path))
    note = next((e.payload for e in reversed(events) if e.kind == "note"
                 and e.payload.get("type") in ("workflow", "supervision_resumed")), None)
    if note is None or not note.get("spec_path"):
        raise UsageError(f"run {run_id} has no workflow spec to re-attach with",
                         "supervise its pane again with `supervisor attach PANE`")
    started = next((e.payload for e in events if e.kind == "run_started"), {})
    pane_id = note.get("pane_id") or started.get("pane_id")
    if not pane_id:
        raise UsageError(f"run {run_id} does not say which pane it supervised", "use `supervisor attach PANE --spec`")
    socket = note.get("socket") or started.get("socket")
    if socket and not s.tmux_socket:
        s = replace(s, tmux_socket=socket)
    from supervisor.workflow.live import supervise_pane

    console.print(f"re-attaching to pane {pane_id} as run {run_id} (spec {note['spec_path']})")
    runner = supervise_pane(s, pane_id, note["spec_path"], policy=_current_policy(s, None), run_id=run_id,
                            timeout=timeout)
    console.print(f"run {run_id} ended: {runner.outcome}")
    if runner.outcome != "finished":
        ctx.exit(EXIT_ESCALATED if runner.outcome == "escalated" else 0)


@runs.command("export")
@click.argument("run_id", type=RUN_ID)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "json"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: standard output).")
@click.pass_context
def export_cmd(ctx: click.Context, run_id: str, fmt: str, output: Path | None) -> None:
    """Every event of RUN_ID (from the warehouse, or its journal), redacted as stored."""
    s = settings_from(ctx).ensure()
    events, _src = load_events(s, run_id)
    text = export_run(events, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        console.print(f"wrote {len(events)} events to {output}")


@runs.command("summarize")
@click.argument("run_id", type=RUN_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def summarize_cmd(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """What happened in RUN_ID: steps, checkpoints, verifications, instructions, pauses."""
    s = settings_from(ctx).ensure()
    events, src = load_events(s, run_id)
    summary = summarize(events, run_id, src)
    if as_json:
        print_json(summary.to_dict())
    else:
        console.print(format_summary(summary), highlight=False, markup=False)


@runs.command("replay")
@click.argument("run_id", type=RUN_ID)
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Decide under this policy (default: the current one).")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="The spec to replay checkpoints against (default: the run's own).")
@click.option("--no-observations", is_flag=True, help="Replay only the workflow's checkpoints.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def replay_cmd(ctx: click.Context, run_id: str, policy_path: Path | None, spec_path: Path | None,
               no_observations: bool, as_json: bool) -> None:
    """Re-decide RUN_ID's recorded checkpoints and screens under a policy. Touches no pane."""
    from supervisor.workflow.spec import load_spec

    s = settings_from(ctx).ensure()
    events, _src = load_events(s, run_id)
    policy = _current_policy(s, policy_path)
    spec = load_spec(spec_path) if spec_path else run_spec(events)[0]
    report = attach_recorded(replay(events, policy, spec=spec, run_id=run_id, observations=not no_observations),
                             events)
    if as_json:
        print_json(report.to_dict())
        return
    console.print(f"replayed {run_id} under {policy.policy_id}: {len(report.rows)} decisions compared, "
                  f"{len(report.changed)} differ")
    for n in report.notes:
        console.print(f"  note: {n}")
    for r in report.changed[:50]:
        console.print(f"  {r.what} {r.trigger_id}: recorded {r.recorded or '-'} -> replayed {r.replayed} "
                      f"({r.reason})", highlight=False, markup=False)


@runs.command("postmortem")
@click.argument("run_id", type=RUN_ID)
@click.option("-o", "--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"),
              show_default=True, help="Folder for the markdown report.")
@click.pass_context
def postmortem_cmd(ctx: click.Context, run_id: str, out_dir: Path) -> None:
    """Write a markdown postmortem of RUN_ID (timeline, failed checks, pauses) to reports/."""
    s = settings_from(ctx).ensure()
    events, src = load_events(s, run_id)
    path = write_postmortem(events, run_id, out_dir, src)
    console.print(f"wrote {path}")


COMMANDS: list[click.Command] = []
"""Nothing top-level: the commands above are added to the lead's `runs` group on import."""
