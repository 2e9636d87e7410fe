"""ACP runs on the command line: ``supervisor run --acp -- COMMAND...`` (through :func:`run_acp`) and
``supervisor runs answer RUN_ID OPTION``.

A thin skin over :mod:`supervisor.acp_runner`. ``runs answer`` checks the answer against the
journal before anything is sent (the run must be paused on a permission request that offers that
option, and held by a live supervisor), hands it to the supervisor as a control request, and
waits (``--wait``) until the supervisor's journal says it took it or why it did not.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from supervisor.cli import console, err_console, settings_from
from supervisor.cli.runs_cmds import RUN_ID, runs
from supervisor.errors import (
    EXIT_AGENT_EXITED,
    EXIT_ENVIRONMENT,
    EXIT_ESCALATED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    EnvironmentProblem,
    InputError,
    UsageError,
)
from supervisor.settings import Settings, user_name

if TYPE_CHECKING:  # the runner and the journal load when a command runs, not for `runs --help`
    from supervisor.models import Event
    from supervisor.runner import RunConfig

ACK_POLL_S = 0.05
"""How often ``runs answer`` looks at the journal for the supervisor's acknowledgement."""


def run_acp(settings: Settings, config: RunConfig, command: list[str], printer: Any, *,
            spec_path: Path | None = None) -> int:
    """Supervise COMMAND as an ACP agent in the foreground; the documented exit code."""
    from supervisor.acp_runner import AcpRunner
    from supervisor.feeder import WarehouseFeeder
    from supervisor.redact import redact

    spec = workdir = None
    if spec_path is not None:
        from supervisor.workflow.live import load_runnable_spec, spec_workdir

        spec = load_runnable_spec(spec_path)
        wd = spec_workdir(spec, spec_path)
        workdir = str(wd) if wd is not None else None

    def echo(text: str) -> None:
        console.print(Text(text), soft_wrap=True)

    runner = AcpRunner(settings, config, command, echo=echo, spec=spec,
                       spec_path=str(Path(spec_path).resolve()) if spec_path is not None else None, workdir=workdir)
    feeder = WarehouseFeeder(settings)
    runner.on_change = lambda _ev: feeder.poke()
    printer(runner)
    console.print(f"supervising {redact(shlex.join(command))} over ACP in {runner.cwd} (run {runner.run_id}); "
                  f"`supervisor runs task {runner.run_id} TEXT` hands it a task", markup=False, highlight=False)
    feeder.start()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig, why in ((signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")):
            loop.add_signal_handler(sig, runner.request_stop, why)
        await runner.run()

    try:
        asyncio.run(main())
    finally:
        feeder.stop()
        from supervisor.cli.live_cmds import close_output

        close_output(runner)
    return acp_exit_code(runner)


def acp_exit_code(runner: Any) -> int:
    """0 finished (or the agent exited cleanly from a run without a task or spec), 5 ended paused on
    an escalation, 6 the agent exited before its task (or workflow) was done or failed, 130
    interrupted or stopped."""
    outcome = runner.outcome
    if outcome == "escalated":
        return EXIT_ESCALATED
    if outcome == "finished":
        return EXIT_OK
    if outcome == "exited":
        fold = runner.fold
        clean = (runner.exit_code in (0, None) and not runner.end_extra.get("blocker") and not fold.run_task
                 and not fold.queued_tasks and fold.current_task is None and runner.config.turns is None
                 and runner.workflow is None)
        return EXIT_OK if clean else EXIT_AGENT_EXITED
    return EXIT_INTERRUPTED


def waiting_request(events: list[Event]) -> dict[str, Any] | None:
    """The pause a run is in, when it is on a permission request (its payload: reason, options,
    signature, next action), else None."""
    pause: dict[str, Any] | None = None
    for e in events:
        if e.kind == "pause" and e.payload.get("source") != "workflow":
            pause = e.payload
        elif e.kind == "resume" and e.payload.get("source") != "workflow":
            pause = None
    return pause


@runs.command("answer")
@click.argument("run_id", type=RUN_ID)
@click.argument("option")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=10.0, show_default=True, metavar="SECONDS",
              help="How long to wait for the supervisor to take the answer.")
@click.pass_context
def answer_cmd(ctx: click.Context, run_id: str, option: str, wait_s: float) -> None:
    """Answer the permission request an ACP run (`supervisor run --acp`) is paused on. OPTION is one
    of the options the agent offered: its id, its number in the list, or its name (`supervisor
    status` and the pause's next action list them).

    Exit code: 0 the supervisor sent the answer, 2 nothing waits for that answer (or no such
    option), 3 no live supervisor took it within --wait seconds (it stays queued).
    Example: supervisor runs answer last proceed_once
    """
    from supervisor.acp_runner import describe_options, pick_option
    from supervisor.control import is_live, write_request
    from supervisor.journal import iter_events

    s = settings_from(ctx).ensure()
    path = s.journal_path(run_id)
    if not path.exists():
        raise InputError(f"run {run_id} not found (no journal at {path})", "list runs with `supervisor runs`")
    events = list(iter_events(path))
    if any(e.kind == "run_ended" for e in events):
        raise UsageError(f"run {run_id} has ended", f"see what happened: supervisor runs show {run_id}")
    pause = waiting_request(events)
    if pause is None or not isinstance(pause.get("options"), list):
        why = f" (it is paused: {pause.get('pause_reason')}; next: {pause.get('next_action')})" if pause else ""
        raise UsageError(f"run {run_id} is not waiting for an answer to a permission request{why}",
                         "`supervisor runs answer` answers ACP runs' escalated permission requests")
    options = [o for o in pause["options"] if isinstance(o, dict)]
    chosen = pick_option(options, option)
    if chosen is None:
        raise UsageError(f"no single option of run {run_id}'s request matches {option!r}",
                         f"choose one of: {describe_options(options)}")
    if not is_live(s, run_id):
        raise EnvironmentProblem(f"run {run_id} has no live supervisor to send the answer",
                                 "an ACP agent ends with its supervisor: start a new run")
    by = user_name("human")
    offset = path.stat().st_size
    rid = write_request(s, run_id, "answer", option=str(chosen["optionId"]), signature=pause.get("signature"),
                        by=by)
    verdict = _acknowledgement(path, rid, offset, wait_s)
    label = f"{chosen.get('optionId')} ({chosen.get('name')})"
    if verdict is None:
        err_console.print(f"the supervisor of {run_id} has not taken the answer {label} within {wait_s:g}s; it stays "
                          f"queued (request {rid})", markup=False, highlight=False)
        ctx.exit(EXIT_ENVIRONMENT)
    kind, payload = verdict
    if kind == "resume":
        console.print(f"answered {run_id}'s request with {label}", markup=False, highlight=False)
        ctx.exit(EXIT_OK)
    err_console.print(f"the supervisor did not send it: {payload.get('why')}", markup=False, highlight=False)
    ctx.exit(EXIT_USAGE)


def _acknowledgement(path: Path, request_id: str, offset: int, wait_s: float) -> tuple[str, dict[str, Any]] | None:
    """The event with which the supervisor took (``resume``) or refused (a ``note``) the request, read
    from the journal as it grows, or None when none came within ``wait_s``."""
    from supervisor.journal import ReadReport, iter_events

    deadline = time.monotonic() + wait_s
    while True:
        report = ReadReport(path)
        for e in iter_events(path, report, start=offset):
            if e.payload.get("request_id") == request_id and e.kind in ("resume", "note"):
                return e.kind, e.payload
            if e.kind == "run_ended":
                return "note", {"why": f"the run ended ({e.payload.get('outcome')}: {e.payload.get('reason')})"}
        offset = report.end_offset or offset
        if time.monotonic() >= deadline:
            return None
        time.sleep(ACK_POLL_S)

"""Nothing top-level: ``runs answer`` is added to the ``runs`` group on import; ``run --acp`` is
an option of ``run`` (supervisor.cli.live_cmds)."""
