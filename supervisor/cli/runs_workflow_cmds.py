"""Per-run lifecycle and history: `supervisor runs task|stop|resume|review|export|summarize|replay|
postmortem RUN_ID`, added to the `runs` group.

A live supervisor of the run gets task/stop/resume/review as requests (see
:mod:`supervisor.control`; it journals them and acts at once); without one, stop/resume/review
go straight into the run's journal, and `runs resume` re-attaches to the run's pane and
supervises it again from its journal, with its state (after a crash, nothing is sent twice).

Run history, the journal and the workflow controller are imported inside the commands that use
them, so ``supervisor runs --help`` starts in well under 0.3 s (``bench/cli_start.py``).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from supervisor.cli import console, err_console, settings_from
from supervisor.cli.output import print_json
from supervisor.cli.runs_cmds import RUN_ID, runs
from supervisor.control import is_live
from supervisor.errors import EXIT_ESCALATED, EXIT_INTERRUPTED, InputError, UsageError
from supervisor.settings import Settings


def _journal_path(s: Settings, run_id: str) -> Path:
    path = s.journal_path(run_id)
    if not path.exists():
        raise InputError(f"run {run_id} not found (no journal at {path})", "list runs with `supervisor runs`")
    return path


def _is_live(s: Settings, run_id: str) -> bool:
    return is_live(s, run_id)


def _ended(path: Path) -> bool:
    from supervisor.journal import iter_events

    return any(e.kind == "run_ended" for e in iter_events(path))


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
    from supervisor.workflow.controller import submit_control

    s = settings_from(ctx).ensure()
    _journal_path(s, run_id)
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
    from supervisor.journal import Journal
    from supervisor.workflow.controller import submit_control

    s = settings_from(ctx).ensure()
    path = _journal_path(s, run_id)
    if _ended(path):
        raise UsageError(f"run {run_id} has already ended", "nothing to stop")
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
    with the same run, its state rebuilt from the journal (nothing already sent is sent again)."""
    from supervisor.journal import Journal, iter_events
    from supervisor.workflow.controller import submit_control

    s = settings_from(ctx).ensure()
    path = _journal_path(s, run_id)
    if _ended(path):
        raise UsageError(f"run {run_id} has already ended", f"start a new run, or read it: supervisor runs show {run_id}")
    events = list(iter_events(path))
    note = next((e.payload for e in reversed(events) if e.kind == "note"
                 and e.payload.get("type") in ("workflow", "supervision_resumed") and e.payload.get("spec_path")), None)
    if _is_live(s, run_id):
        submit_control(s, run_id, "resume")
        console.print(f"resume handed to the live supervisor of {run_id}")
        return
    if note is not None:  # a workflow's pause is cleared in its journal (its gate decides what is next)
        submit_control(s, run_id, "resume")
    elif no_attach:  # a plain run's pause clears itself once the screen no longer asks; this clears it now
        with Journal(path, run_id) as j:
            j.append("resume", {"by": "supervisor", "note": "supervisor runs resume --no-attach", "waited_s": None,
                                "human_keys": [], "selected": None})
    if no_attach:
        console.print(f"{run_id} resumed in its journal (no live supervisor)")
        return
    started = next((e.payload for e in events if e.kind == "run_started"), {})
    pane_id = (note or {}).get("pane_id") or started.get("pane_id")
    if not pane_id:
        raise UsageError(f"run {run_id} does not say which pane it supervised", "use `supervisor attach PANE`")
    socket = (note or {}).get("socket") or started.get("socket")
    if socket and not s.tmux_socket:
        s = replace(s, tmux_socket=socket)
    if note is not None:
        from supervisor.workflow.live import supervise_pane

        console.print(f"re-attaching to pane {pane_id} as run {run_id} (spec {note['spec_path']})")
        runner = supervise_pane(s, pane_id, note["spec_path"], policy=_current_policy(s, None), run_id=run_id,
                                timeout=timeout)
    else:
        runner = _resume_plain(s, run_id, pane_id, started, timeout)
    if runner.suspended:  # a signal: the run goes on without a supervisor (said when it was suspended)
        ctx.exit(EXIT_ESCALATED if runner.state.paused else EXIT_INTERRUPTED)
    console.print(f"run {run_id} ended: {runner.outcome}")
    if runner.outcome != "finished":
        ctx.exit(EXIT_ESCALATED if runner.outcome == "escalated" else 0)


def _resume_plain(s: Settings, run_id: str, pane_id: str, started: dict[str, Any], timeout: float | None) -> Any:
    """Supervise a run without a spec again, in the foreground, on its pane."""
    from supervisor.cli.live_cmds import print_events, say, supervise_foreground, tmux_surface
    from supervisor.errors import PaneGone
    from supervisor.runner import RunConfig
    from supervisor.workflow.live import InboxSupervisor

    surface = tmux_surface(s, None)
    try:
        info = surface.pane_info(pane_id)
    except PaneGone as exc:
        raise PaneGone(f"run {run_id}'s pane {pane_id} is gone ({exc.message})",
                       "nothing to resume; `supervisor status` closes such runs", subcommand=exc.subcommand) from exc
    recorded = started.get("pane_pid")
    if recorded is not None and info.pid is not None and recorded != info.pid:
        raise UsageError(f"pane {pane_id} now runs another program than run {run_id} supervised",
                         "supervise it as a new run with `supervisor attach PANE`")
    config = RunConfig(policy=_current_policy(s, None), exit_on_finish=bool(started.get("exit_on_finish")),
                       task=started.get("task"), turns=started.get("turns"), command=started.get("command"))
    sup = InboxSupervisor(surface, s, config, socket=s.tmux_socket)
    print_events(sup)
    say(sup, f"re-attaching to pane {pane_id} as run {run_id}")
    runner = sup.add_pane(info, run_id=run_id, resume=True)
    supervise_foreground(sup, duration=timeout)
    return runner


@runs.command("task")
@click.argument("run_id", type=RUN_ID)
@click.argument("text")
@click.pass_context
def task_cmd(ctx: click.Context, run_id: str, text: str) -> None:
    """Hand a running agent its next task (TEXT, or @FILE): typed once the agent is idle and ready.

    The run's live supervisor queues it and types it into the agent's input box (multi-line text
    is pasted), then checks that the agent took it.
    """
    from supervisor.cli.live_cmds import read_task
    from supervisor.control import write_request

    s = settings_from(ctx).ensure()
    path = _journal_path(s, run_id)
    if _ended(path):
        raise UsageError(f"run {run_id} has ended",
                         "supervise the agent again with `supervisor attach PANE --task TEXT`")
    task = read_task(text)
    if not _is_live(s, run_id):
        raise UsageError(f"run {run_id} has no live supervisor to type the task",
                         f"continue it first: `supervisor runs resume {run_id}` (or `supervisor attach PANE --task`)")
    rid = write_request(s, run_id, "task", text=task)
    console.print(f"task handed to the live supervisor of {run_id} (request {rid}); it is typed once the agent "
                  "is idle")


@runs.command("export")
@click.argument("run_id", type=RUN_ID)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "json"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: standard output).")
@click.pass_context
def export_cmd(ctx: click.Context, run_id: str, fmt: str, output: Path | None) -> None:
    """Every event of RUN_ID (from the warehouse, or its journal), redacted as stored."""
    from supervisor.history import export_run, load_events

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
    from supervisor.history import format_summary, load_events, summarize

    s = settings_from(ctx).ensure()
    events, src = load_events(s, run_id)
    summary = summarize(events, run_id, src)
    if as_json:
        print_json(summary.to_dict())
    else:
        console.print(format_summary(summary), highlight=False, markup=False)


@runs.command("replay")
@click.argument("run_id", type=RUN_ID)
@click.option("--policy", "policy_arg", default=None,
              help="Decide under this policy: a file, `baseline`, a candidate, or a policy id (default: the policy "
                   "the run was recorded with, when the warehouse stored it; else the current default).")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="The spec to replay checkpoints against (default: the run's own).")
@click.option("--no-observations", is_flag=True, help="Replay only the workflow's checkpoints.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def replay_cmd(ctx: click.Context, run_id: str, policy_arg: str | None, spec_path: Path | None,
               no_observations: bool, as_json: bool) -> None:
    """Re-decide RUN_ID's recorded screens and checkpoints under a policy (by default the one it was
    recorded with, so differences show what changed since). Touches no pane."""
    from evals.replay import replay_run
    from supervisor.history import load_events, run_spec
    from supervisor.workflow.spec import load_spec

    s = settings_from(ctx).ensure()
    events, _src = load_events(s, run_id)
    policy = _replay_policy(s, events, policy_arg)
    spec = load_spec(spec_path) if spec_path else run_spec(events)[0]
    report = replay_run(events, policy, spec=spec, observations=not no_observations)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    obs = report.observations
    changed_cps = [r for r in report.checkpoints if r.divergence not in ("agree", "unrecorded")]
    console.print(f"replayed {run_id} under {policy.name} ({policy.policy_id}): "
                  f"{obs.get('compared', 0)} screen decisions compared, {len(report.changed)} differ; "
                  f"{len(report.checkpoints)} checkpoint decisions, {len(changed_cps)} differ")
    for n in report.notes:
        console.print(f"  note: {n}")
    for r in report.changed[:50]:
        console.print(f"  {r['divergence']}: observation {r['observation_id']}: recorded {r['recorded_kind'] or '-'} "
                      f"{r['recorded_keys'] or ''} -> replayed {r['replayed_kind']} {r['replayed_keys']} "
                      f"({r['replayed_reason']})", highlight=False, markup=False)
    for c in changed_cps[:50]:
        console.print(f"  {c.divergence}: checkpoint {c.trigger_id}: recorded {c.recorded or '-'} -> replayed "
                      f"{c.replayed} ({c.reason})", highlight=False, markup=False)


def _replay_policy(s: Settings, events: list[Any], arg: str | None) -> Any:
    """The policy to replay a run under: the one asked for, else the run's own (stored by id)."""
    from evals.workbench import policy_by_id, resolve_policy

    if arg is not None:
        return resolve_policy(arg, s).policy
    started = next((e.payload for e in events if e.kind == "run_started"), {})
    pid = started.get("policy_id")
    if pid:
        try:
            return policy_by_id(s, pid)
        except UsageError:
            err_console.print(f"note: the warehouse has no content for the run's policy {pid}; replaying under "
                              "the current default")
    return _current_policy(s, None)


@runs.command("postmortem")
@click.argument("run_id", type=RUN_ID)
@click.option("-o", "--out-dir", "--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the markdown report (default: HOME/reports, never the current project).")
@click.pass_context
def postmortem_cmd(ctx: click.Context, run_id: str, out_dir: Path | None) -> None:
    """Write a markdown postmortem of RUN_ID (timeline, failed checks, pauses) under the supervisor's
    home (HOME/reports/), or into --out DIR."""
    from supervisor.history import load_events, write_postmortem

    s = settings_from(ctx).ensure()
    if out_dir is None:
        out_dir = s.home / "reports"
    events, src = load_events(s, run_id)
    path = write_postmortem(events, run_id, out_dir, src)
    console.print(f"wrote {path}")

