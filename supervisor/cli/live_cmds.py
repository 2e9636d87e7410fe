"""Live supervision commands: ``run``, ``attach``, ``watch``, ``status``.

A thin skin over :mod:`supervisor.runner`: resolve the policy, open the tmux surface, build a
:class:`~supervisor.runner.Supervisor`, print what happens, and exit with the documented code
(0 finished, or the agent exited cleanly from a run without a task; 5 ended paused/escalated;
6 the agent exited before its task was done, or failed; 3 tmux went away or a pane is missing;
130 interrupted).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import shlex
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from supervisor.cli import console, err_console, settings_from
from supervisor.cli.output import print_json
from supervisor.errors import (
    EXIT_AGENT_EXITED,
    EXIT_ENVIRONMENT,
    EXIT_ESCALATED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EnvironmentProblem,
    InputError,
    PaneGone,
    SupervisorError,
    UsageError,
)
from supervisor.ids import new_id
from supervisor.outqueue import OutputQueue, QueuedLogHandler, mark_output_stuck, output_stuck
from supervisor.settings import Settings

if TYPE_CHECKING:  # the runner and the policy load when a command runs, not for --help (bench/cli_start.py)
    from supervisor.models import Event
    from supervisor.policy import Policy
    from supervisor.runner import PaneRunner, RunConfig, Supervisor


def resolve_policy(settings: Settings, path: Path | None) -> Policy:
    """--policy, else $SUPERVISOR_POLICY, else the registry's promoted policy (the shipped baseline
    when nothing is promoted)."""
    from supervisor.policy import load_policy

    if path is not None:
        return load_policy(path)
    if settings.policy_path is not None:
        return load_policy(settings.policy_path)
    return _registry_choice(settings, None).acting


def _registry_choice(settings: Settings, run_id: str | None) -> Any:
    """What the registry says a new run uses (:func:`evals.registry.policies_for_new_run`). A registry
    that cannot be read is said on stderr and the shipped baseline runs (supervision never waits)."""
    from evals.registry import NewRunPolicies, policies_for_new_run
    from supervisor.policy import baseline_policy

    try:
        return policies_for_new_run(settings, run_id)
    except SupervisorError as exc:
        err_console.print(f"[yellow]warning: the policy registry cannot be read ({exc.one_line()}); "
                          "supervising with the shipped baseline[/]")
        return NewRunPolicies(acting=baseline_policy(), acting_source="shipped baseline (registry unreadable)")


class _RunCommand(click.Command):
    """``run``: its help names the policy new runs use by default (the registry's promoted one)."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        from evals.registry import default_policy_help

        try:
            default = default_policy_help(settings_from(ctx))
        except SupervisorError as exc:
            default = f"unknown ({exc.one_line()})"
        with formatter.indentation():
            formatter.write_paragraph()
            formatter.write_text(f"Default policy (without --policy or $SUPERVISOR_POLICY): {default}.")


def _tmux(settings: Settings) -> str:
    return f"tmux -L {settings.tmux_socket}" if settings.tmux_socket else "tmux"


def _attach_hint(settings: Settings, session: str) -> str:
    from supervisor.cli.hints import tmux_attach

    return tmux_attach(settings.tmux_socket, session)


def _policy_options(f: Any) -> Any:
    f = click.option("--poll", type=click.FloatRange(min=0.05), default=None, metavar="SECONDS",
                     help="Poll with capture-pane every SECONDS instead of tmux control-mode events.")(f)
    f = click.option("--shadow", "shadows", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
                     help="A candidate policy that decides on every observation too (journaled, never acted "
                          "on). Repeatable.")(f)
    f = click.option("--policy", "policy_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Policy file (default: $SUPERVISOR_POLICY, the promoted policy, or the baseline).")(f)
    return f


def _config(settings: Settings, policy_path: Path | None, shadows: tuple[Path, ...], *, run_id: str | None = None,
            **kw: Any) -> RunConfig:
    """The run's policies: --policy (or $SUPERVISOR_POLICY) when given, else what the registry says
    (the promoted policy acts, candidates on canary ride along as shadows, and a run whose id is
    known takes its arm of a limited rollout); --shadow adds shadows."""
    from supervisor.policy import load_policy
    from supervisor.runner import RunConfig

    extra = [load_policy(p) for p in shadows]
    if policy_path is not None or settings.policy_path is not None:
        return RunConfig(policy=resolve_policy(settings, policy_path), shadows=extra, **kw)
    choice = _registry_choice(settings, run_id)
    return RunConfig(policy=choice.acting, shadows=[*choice.shadows, *extra], **kw)


def read_task(task: str | None) -> str | None:
    """``--task TEXT`` or ``--task @FILE`` (the file's text); refused when empty."""
    if task is None:
        return None
    if task.startswith("@"):
        path = Path(task[1:]).expanduser()
        try:
            task = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read the task file {path}: {exc.strerror or exc}",
                             "give --task TEXT, or --task @FILE with a readable file") from exc
    task = task.strip("\n")
    if not task.strip():
        raise UsageError("the task is empty", "give --task TEXT (or @FILE)")
    return task


def _task_options(f: Any) -> Any:
    f = click.option("--turns", type=click.IntRange(min=1), default=None, metavar="N",
                     help="End the run after N finished turns (default: supervise until the agent exits).")(f)
    f = click.option("--task", default=None, metavar="TEXT|@FILE",
                     help="Type this task into the agent once it is ready (multi-line text is pasted); the "
                          "run ends when the task is finished.")(f)
    return f


def _profile_option(f: Any) -> Any:
    return click.option("--profile", default=None, metavar="NAME",
                        help="The worker profile of a workflow run (--spec): its supervision mode sets the "
                             "retries a step gets before a human is asked, the wording of instructions and "
                             "the pause handling (default: $SUPERVISOR_PROFILE, the preference `profile`, the "
                             "profile listing the agent, the policy's default; `supervisor profiles` lists "
                             "them).")(f)


def tmux_surface(settings: Settings, poll: float | None) -> Any:
    """The tmux surface on the invocation's socket (control-mode events, or polling every ``poll`` seconds)."""
    from supervisor.surfaces.tmux import TmuxSurface

    return TmuxSurface(settings.tmux_socket, poll_s=poll)


def sent_text(text: str, limit: int = 72) -> str:
    """An instruction as the live log shows it: redacted, its first line, shortened."""
    from supervisor.redact import clip, redact

    lines = redact(text).strip().splitlines()
    first = lines[0] if lines else ""
    more = " …" if len(lines) > 1 else ""
    return clip(first, limit) + more


def with_attach(text: str, socket: str | None, session: str | None) -> str:
    """A next action that says "tmux attach", with the exact command for this run's pane (its
    ``-L`` socket and session)."""
    if not session or "tmux attach" not in text:
        return text
    from supervisor.cli.hints import tmux_attach

    return text.replace("tmux attach", tmux_attach(socket, session), 1)


def print_events(sup: Supervisor, *, quiet: bool = False) -> None:
    """Print answers, pauses, resumes and run ends as they are journaled, from a thread of their own
    through a bounded queue (supervisor.outqueue): a terminal that stops reading never holds up
    supervision; when the queue overflows, the oldest lines are dropped and counted."""
    out = output_queue(sup)

    def on_notice(runner: PaneRunner, text: str) -> None:
        stamp = dt.datetime.now().strftime("%H:%M:%S")
        err_console.print(f"{stamp} {runner.pane_id} [bold red]{text}[/]", highlight=False)

    sup.on_notice = out.wrap(on_notice)
    if getattr(sup, "echo", None) is not None:  # a workflow supervisor's own lines
        sup.echo = out.wrap(sup.echo)
    paused_at: dict[str, float] = {}

    def ref(runner: PaneRunner) -> str:
        from supervisor.runref import short_id

        return short_id(runner.run_id, sup.settings.journals_dir)

    def on_journal(runner: PaneRunner, ev: Event) -> None:
        p = ev.payload
        pane = runner.pane_id
        stamp = dt.datetime.fromtimestamp(ev.at).strftime("%H:%M:%S")
        if ev.kind == "action" and p.get("kind") == "task":
            if p.get("confirmed") is not None:
                console.print(f"{stamp} {pane} task {'[green]taken[/]' if p['confirmed'] else '[red]NOT taken[/]'}"
                              f" ({p.get('note', '')})")
        elif ev.kind == "action" and p.get("delivered") and p.get("confirmed") is None:
            sent = " ".join(p.get("keys") or [])
            if p.get("text"):  # an instruction (a workflow's next step, a retry): its first line, redacted
                sent = " ".join(x for x in (sent, repr(sent_text(p["text"]))) if x)
            console.print(f"{stamp} {pane} [green]sent[/] ", Text(sent), sep="")
        elif ev.kind == "task" and p.get("status") == "queued":
            first = (p.get("text") or "").strip().splitlines()[0][:80] if (p.get("text") or "").strip() else ""
            console.print(f"{stamp} {pane} task queued ({p.get('source')}): {first}", markup=False, highlight=False)
        elif ev.kind == "turn_finished":
            console.print(f"{stamp} {pane} turn {p.get('turn')} finished in {p.get('duration_s', 0):.1f}s "
                          f"({p.get('answered', 0)} answered, {p.get('escalated', 0)} escalated)")
        elif ev.kind == "pause":
            paused_at.setdefault(runner.run_id, ev.at)
            console.print(f"{stamp} {pane} [bold red]PAUSED[/] ", Text(str(p.get("pause_reason"))), sep="")
            console.print("         next: " + with_attach(str(p.get("next_action")), runner.socket, runner.pane.session),
                          markup=False, highlight=False)
        elif ev.kind == "resume":
            waited = p.get("waited_s")
            since = paused_at.pop(runner.run_id, None)
            if waited is None and since is not None:  # a workflow's resume: the wait since its pause
                waited = ev.at - since
            after = f", after {waited:.1f}s" if isinstance(waited, int | float) else ""
            console.print(f"{stamp} {pane} [cyan]resumed[/] (by {p.get('by')}{after})")
        elif ev.kind == "friction" and p.get("kind") in ("human_keystrokes", "answer_not_taken", "stall"):
            console.print(f"{stamp} {pane} [yellow]{p.get('kind')}[/] {p.get('detail')}")
        elif ev.kind == "run_ended":
            console.print(f"{stamp} {pane} run {ref(runner)} ended: [bold]{p.get('outcome')}[/]"
                          + (f" (exit {p.get('exit_code')})" if p.get("exit_code") is not None else ""))
            blocker = p.get("blocker")
            if blocker:  # it exited on an error a human must fix: say which, and what to do
                console.print(f"         blocked: {blocker.get('kind')}: {blocker.get('message')}\n"
                              f"         next: {p.get('next_action')}", markup=False, highlight=False)
        elif ev.kind == "run_started" and not quiet:
            console.print(f"{stamp} {pane} supervising ({p.get('agent')}) as run {ref(runner)}")
        elif ev.kind == "note" and p.get("type") == "supervision_resumed":
            console.print(f"{stamp} {pane} continuing run {ref(runner)} from its journal (its supervisor was gone)")

    sup.on_journal = out.wrap(on_journal)


def say(sup: Any, text: str, *, err: bool = False, **kw: Any) -> None:
    """Print a line of a supervising command through its queue (never blocking the supervisor's
    main thread on a terminal that stopped reading); once the queue is closed, directly, unless
    the output is stuck (the line is dropped: the journal and the exit code tell the same)."""
    target = err_console if err else console
    out = getattr(sup, "output", None)
    if isinstance(out, OutputQueue) and not out.closed:
        out.put(lambda: target.print(text, **kw))
    elif not output_stuck():
        target.print(text, **kw)


def output_queue(sup: Any) -> OutputQueue:
    """The supervisor's printing queue (made once, with warnings logged through it too)."""
    out = getattr(sup, "output", None)
    if isinstance(out, OutputQueue):
        return out

    def dropped(n: int) -> None:
        err_console.print(f"[yellow]{n} line{'s' if n != 1 else ''} not shown; see the journal[/] "
                          "(`supervisor runs show RUN_ID`)", highlight=False)

    out = OutputQueue(on_dropped=dropped)
    sup.output = out
    root = logging.getLogger()
    if not any(isinstance(h, QueuedLogHandler) for h in root.handlers):
        root.addHandler(QueuedLogHandler(out))
    return out


def _exit_code(runners: list[PaneRunner], interrupted: bool) -> int:
    if any(r.outcome == "escalated" or (r.suspended and r.state.paused) for r in runners):
        return EXIT_ESCALATED
    if any(r.outcome == "lost" for r in runners):
        return EXIT_ENVIRONMENT
    if interrupted:
        return EXIT_INTERRUPTED
    outcomes = {r.outcome for r in runners}
    if "exited" in outcomes:
        return EXIT_OK if all(_clean_exit(r) for r in runners if r.outcome == "exited") else EXIT_AGENT_EXITED
    if outcomes == {"finished"}:
        return EXIT_OK
    return EXIT_INTERRUPTED if "stopped" in outcomes else EXIT_OK


def _clean_exit(r: PaneRunner) -> bool:
    """The agent exited on its own, with status 0, no blocker, and no task left undone: the normal
    end of a run without a task."""
    fold = r.fold
    return (r.exit_code in (0, None) and not r._end_extra.get("blocker") and not fold.run_task
            and not fold.queued_tasks and fold.current_task is None and r.config.turns is None)


SUSPEND_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals that suspend supervision (Ctrl-C, `kill PID`, a closed terminal): the runs stay
resumable. ``supervisor runs stop`` is what ends a run."""


def supervise_foreground(sup: Supervisor, *, duration: float | None = None) -> str | None:
    """Run the loop in the foreground until its runs end. SIGINT, SIGTERM or SIGHUP suspends
    supervision: every active run is journaled as suspended (not ended), so `supervisor runs
    resume` or `attach` continues it. Returns the signal's name when one came, else None."""
    got: list[str] = []

    def on_signal(signum: int, frame: Any) -> None:
        got.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    old = {sig: signal.signal(sig, on_signal) for sig in SUSPEND_SIGNALS}
    try:
        sup.run(timeout=duration)
    except KeyboardInterrupt:
        got.append("SIGINT")  # raised by Python's own handler, before ours was installed
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        reason = f"the supervisor got {got[0]}" if got else None
        sup.close(suspend=reason)
        close_output(sup)
    if reason:
        from supervisor.cli.hints import program
        from supervisor.runref import short_id

        for r in sup.ended:
            if r.suspended:
                ref = short_id(r.run_id, sup.settings.journals_dir)
                console.print(f"supervision of run {ref} suspended ({got[0]}); the agent keeps running in pane "
                              f"{r.pane_id}: `{program()} runs resume {ref}` continues it, "
                              f"`{program()} runs stop {ref}` ends it", markup=False, highlight=False)
    return got[0] if got else None


def close_output(sup: Any) -> None:
    """Print what is still queued, for two seconds at most: output nobody reads does not keep the
    process alive (the CLI then exits without flushing stdout, see supervisor.outqueue)."""
    out = getattr(sup, "output", None)
    if isinstance(out, OutputQueue):
        if not out.close():
            mark_output_stuck()
        root = logging.getLogger()
        for h in [h for h in root.handlers if isinstance(h, QueuedLogHandler) and h.out is out]:
            root.removeHandler(h)


@click.command("run", cls=_RunCommand)
@_policy_options
@_task_options
@click.option("--session", default=None, help="Name of the tmux session to create (default: sv-XXXXXX).")
@click.option("--exit-on-finish", is_flag=True,
              help="Quit the agent (its exit command) when the run is finished: its task, its --turns, or "
                   "without either, its first finished turn.")
@click.option("--keep-session", is_flag=True,
              help="Keep the tmux session after the agent exits (to read its last screen); by default a "
                   "session whose agent has exited is closed when the run ends.")
@click.option("--detach", is_flag=True,
              help="Supervise from a background process and return at once (see `supervisor status`).")
@click.option("--width", type=click.IntRange(20, 1000), default=120, show_default=True)
@click.option("--height", type=click.IntRange(5, 500), default=40, show_default=True)
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Hold the run to this approved workflow spec (a draft is refused).")
@_profile_option
@click.option("--acp", is_flag=True,
              help="COMMAND speaks the Agent Client Protocol (e.g. `gemini --acp`): run it as a subprocess "
                   "and supervise its permission requests as structured data instead of a tmux screen.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def run_cmd(ctx: click.Context, policy_path: Path | None, shadows: tuple[Path, ...], poll: float | None,
            task: str | None, turns: int | None, session: str | None, exit_on_finish: bool, keep_session: bool,
            detach: bool, width: int, height: int, spec_path: Path | None, profile: str | None, acp: bool,
            command: tuple[str, ...]) -> None:
    """Start COMMAND in a new tmux session and supervise every turn until the agent exits (or
    the run is stopped). With --task, type the task once the agent is ready and end the run when
    it is finished; `supervisor runs task RUN_ID TEXT` hands a running agent its next task.

    With --acp, COMMAND is an ACP agent started as a subprocess in this directory (no tmux): a
    task is sent as a prompt, its permission requests go through the same policy, and one that is
    escalated waits for `supervisor runs answer RUN_ID OPTION`.

    Exit code: 0 finished (or the agent exited cleanly), 5 ended paused on an escalation, 6 the
    agent exited before its task was done or failed, 3 tmux went away, 130 interrupted.
    Example: supervisor run --task "fix the failing test" -- claude
    Example: supervisor run --acp --task "fix the failing test" -- gemini --acp
    """
    settings = settings_from(ctx).ensure()
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("no command given", "put it after --, e.g. `supervisor run -- claude`")
    if spec_path is not None and (task or turns):
        raise UsageError("--spec decides when the run is done; --task and --turns do not go with it",
                         "drop --task/--turns, or run without --spec")
    if acp:
        tmux_only = [f"--{name.replace('_', '-')}" for name in ("session", "detach", "width", "height", "poll",
                                                              "exit_on_finish")
                     if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
        if tmux_only:
            raise UsageError(f"{', '.join(tmux_only)} {'does' if len(tmux_only) == 1 else 'do'} not go with --acp "
                             "(an ACP agent runs as the supervisor's subprocess, not in tmux, and ends with the run)",
                             "drop them, or run without --acp")
    task = read_task(task)
    run_id = new_id("run_")  # chosen first: a limited rollout picks this run's policy by its id
    config = _config(settings, policy_path, shadows, run_id=run_id, exit_on_finish=exit_on_finish,
                     command=list(command), task=task, turns=turns)
    check_profile(config.policy, profile, spec_path)
    if acp:
        from supervisor.cli.acp_cmds import run_acp

        with _profile_env(profile):  # the ACP runner's workflow controller reads $SUPERVISOR_PROFILE
            ctx.exit(run_acp(settings, config, list(command), print_events, spec_path=spec_path))
    require_program(command[0])  # (an ACP agent that cannot start is said by its run)
    from supervisor.redact import redact
    from supervisor.runref import short_id
    from supervisor.workflow.live import load_runnable_spec, make_supervisor

    if spec_path is not None:
        load_runnable_spec(spec_path)  # refuse a draft before starting anything
    surface = tmux_surface(settings, poll)
    name = session or f"sv-{os.urandom(3).hex()}"
    pane = surface.new_session(name, list(command), width=width, height=height, cwd=os.getcwd())
    if detach:
        log = _detach(settings, pane.pane_id, policy_path, shadows, poll, exit_on_finish, spec_path, task, turns,
                      None if keep_session else name, profile)
        console.print(f"started {redact(shlex.join(command))} in tmux session {name} pane {pane.pane_id}; supervising in "
                      f"the background (log {log}); `supervisor status` shows it; "
                      f"watch it: {_attach_hint(settings, name)}")
        ctx.exit(EXIT_OK)
    sup = make_supervisor(surface, settings, config, spec_path=spec_path, echo=console.print,
                          socket=settings.tmux_socket, profile=profile)
    print_events(sup, quiet=True)
    runner = sup.add_pane(pane, command=list(command), run_id=run_id)
    say(sup, f"supervising [bold]{redact(shlex.join(command))}[/] in tmux session {name} pane {pane.pane_id} "
                  f"(run {short_id(runner.run_id, settings.journals_dir)}); watch it: {_attach_hint(settings, name)}")
    interrupted = supervise_foreground(sup)
    if not keep_session and runner.outcome == "exited" and close_dead_session(surface, runner, name):
        say(sup, f"closed tmux session {name} (its agent exited; --keep-session keeps it)")
    elif runner.outcome in ("finished", "escalated", "stopped") or runner.suspended:
        say(sup, f"the agent is still in tmux session {name}: {_attach_hint(settings, name)}")
    elif runner.outcome == "lost":
        say(sup, f"[red]the tmux server went away[/] ({_tmux(settings)}); run {runner.run_id} is closed", err=True)
    ctx.exit(_exit_code([runner], interrupted))


def check_profile(policy: Policy, profile: str | None, spec_path: Path | None) -> None:
    """Refuse, before anything starts, a profile without a workflow to shape or one the policy lacks."""
    if profile is None:
        return
    if spec_path is None:
        raise UsageError("--profile shapes a workflow run (retries, instruction wording, pause handling), and "
                         "this run has no spec", "add --spec PLAN.yaml, or drop --profile")
    from supervisor.workflow.profiles import require_profile

    require_profile(policy, profile)


@contextlib.contextmanager
def _profile_env(profile: str | None) -> Iterator[None]:
    """``$SUPERVISOR_PROFILE`` set to ``profile`` for the block (unchanged when None)."""
    if profile is None:
        yield
        return
    before = os.environ.get("SUPERVISOR_PROFILE")
    os.environ["SUPERVISOR_PROFILE"] = profile
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SUPERVISOR_PROFILE", None)
        else:
            os.environ["SUPERVISOR_PROFILE"] = before


def require_program(name: str) -> None:
    """Refuse, before any tmux session exists, an agent program the shell would not find (exit 3):
    otherwise the pane dies at once with status 127 and nothing says why."""
    import shutil

    if "=" in name:  # an environment assignment in front of the program: the shell resolves it
        return
    if "/" in name:
        path = Path(name).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise EnvironmentProblem(f"`{name}`: no such executable file", "check the path, or install the agent")
        return
    if shutil.which(name) is None:
        raise EnvironmentProblem(f"`{name}`: command not found in PATH", "install it, or pass the full path")


def close_dead_session(surface: Any, runner: PaneRunner, session: str) -> bool:
    """Kill the tmux session ``run`` created for this run once its agent has exited (its pane is
    dead or gone): nothing is left behind on the server. A live agent's session is kept."""
    try:
        info = surface.pane_info(runner.pane_id)
    except PaneGone:
        return False
    except SupervisorError:
        return False
    if not info.dead:
        return False
    try:
        surface.cmd("kill-session", "-t", session)
    except SupervisorError:
        return False
    return True


def _detach(settings: Settings, pane_id: str, policy_path: Path | None, shadows: tuple[Path, ...],
            poll: float | None, exit_on_finish: bool, spec_path: Path | None, task: str | None,
            turns: int | None, close_session: str | None, profile: str | None = None) -> Path:
    """Start ``supervisor attach PANE`` as a background process in a session of its own."""
    import subprocess
    import sys

    args = [sys.executable, "-m", "supervisor", "--home", str(settings.home)]
    if settings.tmux_socket:
        args += ["--socket", settings.tmux_socket]
    args.append("attach")
    if policy_path is not None:
        args += ["--policy", str(policy_path.resolve())]
    for sh in shadows:
        args += ["--shadow", str(sh.resolve())]
    if poll:
        args += ["--poll", str(poll)]
    if exit_on_finish:
        args.append("--exit-on-finish")
    if spec_path is not None:
        args += ["--spec", str(spec_path.resolve())]
    if profile is not None:
        args += ["--profile", profile]
    if task is not None:
        args += ["--task", task]
    if turns is not None:
        args += ["--turns", str(turns)]
    if close_session is not None:
        args += ["--close-session", close_session]
    args.append(pane_id)
    logs = settings.home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"supervise-{pane_id.lstrip('%')}-{int(time.time())}.log"
    with open(log, "ab") as fh:
        subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=fh, stderr=fh, start_new_session=True,
                         env=dict(os.environ))
    return log


@click.command("attach")
@_policy_options
@_task_options
@click.option("--exit-on-finish", is_flag=True, help="Quit the agent (its exit command) when the run is finished.")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Hold the run to this approved workflow spec (a draft is refused).")
@click.option("--run-id", default=None, help="With --spec: continue this run from its journal (after a crash).")
@click.option("--close-session", default=None, hidden=True,
              help="`run --detach` created this tmux session: close it when the run ends with its agent exited.")
@_profile_option
@click.argument("panes", nargs=-1, required=True)
@click.pass_context
def attach_cmd(ctx: click.Context, policy_path: Path | None, shadows: tuple[Path, ...], poll: float | None,
               task: str | None, turns: int | None, exit_on_finish: bool, spec_path: Path | None,
               run_id: str | None, close_session: str | None, profile: str | None, panes: tuple[str, ...]) -> None:
    """Supervise panes that already run an agent (tmux pane ids like %3, or session:window.pane).
    A pane whose earlier run lost its supervisor (killed, crashed) continues that same run."""
    settings = settings_from(ctx).ensure()
    if run_id is not None and (spec_path is None or len(panes) != 1):
        raise UsageError("--run-id needs --spec and exactly one pane", "e.g. `supervisor attach %3 --spec S.yaml "
                         "--run-id RUN`, or `supervisor runs resume RUN`")
    if spec_path is not None and (task or turns):
        raise UsageError("--spec decides when the run is done; --task and --turns do not go with it",
                         "drop --task/--turns, or attach without --spec")
    config = _config(settings, policy_path, shadows, exit_on_finish=exit_on_finish, task=read_task(task),
                     turns=turns)
    check_profile(config.policy, profile, spec_path)
    from supervisor.workflow.live import make_supervisor

    surface = tmux_surface(settings, poll)
    infos = [_find_pane(surface, settings, p) for p in panes]
    sup = make_supervisor(surface, settings, config, spec_path=spec_path, run_id=run_id, echo=console.print,
                          socket=settings.tmux_socket, auto_resume=True, profile=profile)
    print_events(sup)
    runners = [sup.add_pane(i) for i in infos]
    for r in runners:
        if r.resuming and config.task:
            r.queue_task(config.task, source="attach --task")
    interrupted = supervise_foreground(sup)
    if close_session is not None and len(runners) == 1 and runners[0].outcome == "exited":
        close_dead_session(surface, runners[0], close_session)
    ctx.exit(_exit_code(runners, interrupted))


def _find_pane(surface: Any, settings: Settings, target: str) -> Any:
    try:
        if target.startswith("%"):
            return surface.pane_info(target)
        lines = surface.cmd("display-message", "-p", "-t", target, "#{pane_id}")
        return surface.pane_info(lines[0].strip() if lines else target)
    except PaneGone as exc:
        if "not running" in exc.message:
            raise
        raise PaneGone(f"pane {target} not found on {_tmux(settings)}",
                       f"list panes with `{_tmux(settings)} list-panes -a`, or pass --socket NAME",
                       subcommand=exc.subcommand) from exc


def discover_agent_panes(surface: Any, policy: Policy, callback: Any = None, *,
                         include_shells: bool = False) -> Iterator[Any]:
    """Every live pane on the server whose process (the pane's command or one of its children)
    is a known agent; never the supervisor's own pane; plain shells only with ``include_shells``.
    What a pane's screen shows does not count: a shell whose scrollback mentions an agent is a
    shell."""
    from supervisor.agents import agent_of_pane, is_shell
    from supervisor.runner import runs_us

    if callback is not None:
        surface.watch_all(callback)
    for info in surface.list_panes():
        if info.dead or runs_us(info):
            continue
        agent = agent_of_pane(info, policy)
        if (agent != "unknown" and not is_shell(agent)) or (include_shells and is_shell(agent)):
            yield info


@click.command("watch")
@_policy_options
@click.option("--include-shells", is_flag=True, help="Also supervise panes that run a plain shell.")
@click.option("--duration", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="Stop after this long (for scripts and CI); default: until Ctrl-C.")
@click.argument("panes", nargs=-1)
@click.pass_context
def watch_cmd(ctx: click.Context, policy_path: Path | None, shadows: tuple[Path, ...], poll: float | None,
              include_shells: bool, duration: float | None, panes: tuple[str, ...]) -> None:
    """Supervise every pane on the tmux server whose process is a known agent (or just PANES),
    picking up new agent panes as they appear; never this supervisor's own pane, and plain shells
    only with --include-shells. One process, one run per pane, each until its agent exits; a pane
    whose earlier run lost its supervisor continues that run."""
    from supervisor.workflow.live import InboxSupervisor

    settings = settings_from(ctx).ensure()
    config = _config(settings, policy_path, shadows)
    surface = tmux_surface(settings, poll)
    sup = InboxSupervisor(surface, settings, config, socket=settings.tmux_socket, renew_finished=True,
                          auto_resume=True)
    print_events(sup)
    if panes:
        for p in panes:
            sup.add_pane(_find_pane(surface, settings, p))
        sup.discover = None
    else:
        sup.discover = lambda: discover_agent_panes(surface, config.policy, sup._enqueue,
                                                    include_shells=include_shells)
        # Without a server (or in poll mode) there is nothing to listen to: look now and then.
        # (With control clients attached, tmux tells us about new windows, panes and sessions.)
        sup.rescan_every = max(poll or 0.0, 5.0) if poll or not surface.server_alive() else None
        found = sup.scan()
        say(sup, f"watching {_tmux(settings)}: {len(found)} agent pane(s)"
                 + (f" ({', '.join(r.pane_id for r in found)})" if found else "") + "; Ctrl-C to stop")
    interrupted = supervise_foreground(sup, duration=duration)
    runners = sup.ended
    if interrupted:
        ctx.exit(EXIT_ESCALATED if any(r.outcome == "escalated" for r in runners) else EXIT_INTERRUPTED)
    ctx.exit(EXIT_ESCALATED if any(r.outcome == "escalated" for r in runners) else EXIT_OK)


def first_event(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            line = fh.readline()
        return json.loads(line) if line.endswith(b"\n") else {}
    except (OSError, ValueError):
        return {}


def live_runs(settings: Settings, *, include_ended: bool = False) -> list[dict[str, Any]]:
    """Runs as their journals tell them: state, paused, pause_reason, next_action, and whether a
    supervisor holds the run (``supervisor_alive``). Runs whose supervisor is gone and whose pane
    is dead (or gone) are closed first: nobody can continue them."""
    from supervisor.control import control_dir, is_live
    from supervisor.history import list_runs
    from supervisor.lifecycle import close_orphans
    from supervisor.suspension import read_suspension

    close_orphans(settings)
    rows = []
    for r in list_runs(settings.journals_dir):
        if r.outcome is not None and not include_ended:
            continue
        first = first_event(Path(r.journal_path)).get("payload", {})
        row = r.to_dict()
        row["session"] = first.get("session")
        row["socket"] = first.get("socket")
        row["host"] = first.get("host")
        row["supervisor_pid"] = first.get("pid")
        row["supervisor_alive"] = is_live(settings, r.run_id) if r.outcome is None else False
        row["suspended"] = read_suspension(control_dir(settings, r.run_id)) if row["supervisor_alive"] else None
        row["age_s"] = round(time.time() - (r.last_event_at or time.time()), 1)
        rows.append(row)
    return rows


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--all", "include_ended", is_flag=True, help="Include runs that have ended.")
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool, include_ended: bool) -> None:
    """Live runs from their journals: pane, agent, state, paused, why, and the next action."""
    settings = settings_from(ctx)
    rows = live_runs(settings, include_ended=include_ended)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no live runs" + ("" if include_ended else " (--all shows ended ones)"))
        return
    from supervisor.cli.hints import program, tmux_attach
    from supervisor.cli.output import fitted_table, seconds
    from supervisor.runref import short_ids

    short = short_ids([r["run_id"] for r in rows], settings.journals_dir)
    table_rows = []
    for r in rows:
        state = r["outcome"] or r["state"] or "-"
        if r["outcome"] is None and r["supervisor_alive"] is False:
            state = f"{state}, no supervisor"
        if r.get("suspended"):
            state = "SUSPENDED: journal not writable"
        table_rows.append([short[r["run_id"]], r["pane_id"] or "-", r["agent"] or "-", state,
                           "PAUSED" if r["paused"] and r["outcome"] is None else "yes" if r["paused"] else "no",
                           seconds(r["age_s"])])
    console.print(fitted_table([("run", "left"), ("pane", "left"), ("agent", "left"), ("state", "left"),
                                ("paused", "left"), ("quiet for", "right")], table_rows, width=console.width),
                  markup=False, highlight=False)
    # What a person must read or do is prose below the table: it wraps, the table rows never do.
    prog = program()
    for r in rows:
        ref = short[r["run_id"]]
        socket, session = r.get("socket"), r.get("session")
        if r["outcome"] is None and r["paused"]:
            console.print(Text(f"{ref} paused: {r['pause_reason']}", style="red"))
            if r["next_action"]:
                console.print(Text("  next: " + with_attach(str(r["next_action"]), socket, session)))
        if r["outcome"] is None and r["supervisor_alive"] is False:
            console.print(Text(f"{ref} has no supervisor: `{prog} runs resume {ref}` continues it, "
                               f"`{prog} runs stop {ref}` ends it"))
        if r["outcome"] is None and session:
            console.print(Text(f"{ref} watch it: {tmux_attach(socket, session)}", style="dim"))
        if r.get("suspended"):
            console.print(Text(f"{ref} not supervised now: its journal cannot be written "
                               f"({r['suspended'].get('why')}); supervision resumes by itself", style="bold red"))
    suspended = [r for r in rows if r.get("suspended")]
    if suspended:
        err_console.print(f"[bold red]{len(suspended)} run(s) not supervised now: their journal cannot be written[/] "
                          "(free space where the journals are; supervision resumes by itself)")
    paused = [r for r in rows if r["paused"] and r["outcome"] is None]
    if paused:
        err_console.print(f"[bold red]{len(paused)} run(s) paused and waiting for you[/]")

