"""The ``supervisor`` command line: a thin skin over the library.

Each command group lives in its own module, imported only when that command runs (or its help is
shown): the table :data:`COMMANDS` names where each lives and its one-line summary, so
``supervisor --help`` and ``supervisor runs --help`` start without importing polars, DuckDB or the
runner (``bench/cli_start.py`` measures it; the target is 0.3 s). Errors from the library (:class:`supervisor.errors.SupervisorError`) print as one line
with the fix and exit with the documented code; see ``supervisor.errors``.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from supervisor import __version__
from supervisor.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, SupervisorError
from supervisor.settings import Settings

logger = logging.getLogger(__name__)

class _Console(Console):
    """rich's Console whose printed text spells each command it names as this shell runs it
    (:func:`supervisor.cli.hints.runnable`: ``.venv/bin/supervisor`` until ``supervisor`` is on PATH).
    Text with spans of its own, tables and panels are printed as they are."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().print(*(_runnable(o) for o in objects), **kwargs)


def _runnable(obj: Any) -> Any:
    from rich.text import Text

    from supervisor.cli.hints import runnable

    if isinstance(obj, str):
        return runnable(obj)
    if isinstance(obj, Text) and not obj.spans:
        plain = runnable(obj.plain)
        return obj if plain == obj.plain else Text(plain, style=obj.style, justify=obj.justify,
                                                     overflow=obj.overflow, no_wrap=obj.no_wrap, end=obj.end)
    return obj


def echo(message: str = "", *, err: bool = False) -> None:
    """``click.echo`` of human text, each command it names spelled as this shell runs it."""
    from supervisor.cli.hints import runnable

    click.echo(runnable(message), err=err)


# soft_wrap: a line is never broken by rich (a printed command or path stays one line to copy; the
# terminal wraps it); tables still fit the width.
console = _Console(soft_wrap=True)
err_console = _Console(stderr=True, soft_wrap=True)


# name -> (module, attribute, the command's one-line summary for `supervisor --help`).
# tests/test_cli.py checks each summary against the command's own help.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("supervisor.cli.live_cmds", "run_cmd",
            "Start COMMAND in a new tmux session and supervise every turn until the agent exits (or the run "
            "is stopped)."),
    "attach": ("supervisor.cli.live_cmds", "attach_cmd",
               "Supervise panes that already run an agent (tmux pane ids like %3, or session:window.pane)."),
    "watch": ("supervisor.cli.live_cmds", "watch_cmd",
              "Supervise every pane on the tmux server whose process is a known agent (or just PANES), picking "
              "up new agent panes as they appear; never this supervisor's own pane, and plain shells only with "
              "--include-shells."),
    "status": ("supervisor.cli.live_cmds", "status_cmd",
               "Live runs from their journals: pane, agent, state, paused, why, and the next action."),
    "classify": ("supervisor.cli.classify_cmds", "classify_cmd",
                 "Classify screen captures (PATH: .txt files, plain or with ANSI, or folders walked recursively "
                 "in sorted order) and show what the policy would do on each."),
    "runs": ("supervisor.cli.runs_cmds", "runs", "List supervised runs, newest first."),
    "spec": ("supervisor.cli.spec_cmds", "spec",
             "Workflow specs: the plan a supervised run is held to (steps, verifiers, acceptance)."),
    "skill": ("supervisor.cli.skill_cmds", "skill",
              "Agent instructions (the checkpoint protocol) for Claude Code and Codex."),
    "eval": ("supervisor.cli.eval_cmds", "eval_group",
             "Golden suites, synthetic variants, replay and blind A/B compare of policies."),
    "warehouse": ("supervisor.cli.warehouse_cmds", "warehouse",
                  "The warehouse (a DuckDB file, or a fleet's DuckLake) that ingests every run's journal."),
    "report": ("supervisor.cli.report_cmds", "report",
               "Reports over the warehouse: markdown and PNG plots in a folder under HOME/reports/ (or --out)."),
    # what thin-supervisor users rely on: what thin-supervisor users rely on
    "notes": ("supervisor.cli.annotation_cmds", "notes",
              "Notes shared between runs and the people watching them (by type and run)."),
    "friction": ("supervisor.cli.annotation_cmds", "friction",
                 "Friction people saw and the supervisor could not (recorded by hand), with what it recorded "
                 "itself."),
    "prefs": ("supervisor.cli.annotation_cmds", "prefs",
              "Durable preferences of the people who run the supervisor, which workflow runs use (shown in "
              "`runs why`)."),
    "observe": ("supervisor.cli.observe_cmds", "observe_cmd",
                "A read-only snapshot of a run: its state, whether a supervisor holds it, the pane, the latest "
                "events, and the pane's screen now."),
    "pane-owner": ("supervisor.cli.observe_cmds", "pane_owner_cmd",
                   "Which run supervises PANE (default: this shell's pane)."),
    "ps": ("supervisor.cli.observe_cmds", "ps_cmd",
           "Live supervisor processes, across every project and worktree: pid, run, pane, directory, uptime."),
    "session": ("supervisor.cli.observe_cmds", "session",
                "The Claude Code / Codex session and transcript of a pane (or of a directory)."),
    "doctor": ("supervisor.cli.doctor_cmds", "doctor_cmd",
               "Check tmux (binary, server, control mode) and the supervisor's own set-up (home, warehouse, "
               "policy, runs that lost their supervisor, the judge's key, notification channels and plugins) in "
               "one go."),
    "bridge": ("supervisor.cli.doctor_cmds", "bridge",
               "Small tmux helpers for scripts: read a pane, type into it, send keys, list panes."),
    "oracle": ("supervisor.cli.oracle_cmds", "oracle",
               "A second opinion from a stronger model: advisory, read-only, cached and budgeted."),
    "follow": ("supervisor.cli.transcript_cmds", "follow_cmd",
               "Follow a workflow run from an agent's JSONL transcript alone (no pane, observe-only): checkpoints "
               "are read from the transcript, verifiers run in --cwd, and each instruction for the agent is "
               "journaled and sent as a notification instead of typed."),
    "profiles": ("supervisor.cli.profile_cmds", "profiles_cmd",
                 "Worker profiles (provider, model, trust) and the supervision mode each gets, with what every mode "
                 "sets: retries per step before a human is asked, instruction wording, pause handling."),
}


class SupervisorGroup(click.Group):
    """The root group: every error becomes one line (``error: what (fix)``) and a documented exit code.

    Subcommands load lazily from :data:`COMMANDS` (click's documented LazyGroup pattern); the root's
    help lists them from their stored summaries without importing any of them.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute, _ = COMMANDS[cmd_name]
            cmd = getattr(importlib.import_module(module), attribute)
            if not isinstance(cmd, click.Command):
                raise TypeError(f"{module}.{attribute} is not a click command")
            self.add_command(cmd, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                cmd: click.Command = self.commands[name]
            else:  # not loaded: a bare command carrying the stored summary formats it the same way
                cmd = click.Command(name, help=COMMANDS[name][2])
            if not cmd.hidden:
                rows.append((name, cmd))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            rv = super().main(args, prog_name or "supervisor", complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "supervisor"
            echo(f"error: {exc.format_message()} (see `{where} --help`)", err=True)
            code = exc.exit_code
        except click.ClickException as exc:
            echo(f"error: {exc.format_message()}", err=True)
            code = exc.exit_code
        except SupervisorError as exc:
            echo(f"error: {exc.one_line()}", err=True)
            code = exc.exit_code
        except (KeyboardInterrupt, click.Abort):
            click.echo("interrupted", err=True)
            code = EXIT_INTERRUPTED
        except Exception as exc:  # a bug, or data no check foresaw: one line, never a traceback
            if os.environ.get("SUPERVISOR_DEBUG"):
                raise
            logger.debug("unexpected error", exc_info=True)
            first = (str(exc).splitlines() or [""])[0][:300]
            click.echo(f"error: unexpected {type(exc).__name__}: {first} (this is a bug: run again with "
                       "SUPERVISOR_DEBUG=1 for the traceback and report it)", err=True)
            code = EXIT_INTERNAL
        else:
            code = rv if isinstance(rv, int) else 0
        if not standalone_mode:
            return code
        from supervisor.outqueue import output_stuck

        if output_stuck():  # nobody reads our output: flushing it at exit would block for ever
            os._exit(code)
        sys.exit(code)


def settings_from(ctx: click.Context) -> Settings:
    obj = ctx.find_root().obj
    if not isinstance(obj, Settings):
        obj = Settings()
    return obj


pass_settings = click.make_pass_decorator(Settings, ensure=True)


@click.group(cls=SupervisorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="supervisor")
@click.option("--home", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for journals and the warehouse (default: $SUPERVISOR_HOME or the per-user data dir).")
@click.option("--warehouse", metavar="FILE|ducklake:postgres:...", default=None,
              help="The warehouse: a DuckDB file, or a DuckLake shared by a fleet "
                   "(ducklake:postgres:dbname=NAME host=HOST data_path=FOLDER) "
                   "(default: $SUPERVISOR_WAREHOUSE or HOME/warehouse.duckdb).")
@click.option("--socket", "socket_name", default=None,
              help="tmux socket name, as for `tmux -L` (default: $SUPERVISOR_TMUX_SOCKET or tmux's default).")
@click.pass_context
def main(ctx: click.Context, home: Path | None, warehouse: str | None, socket_name: str | None) -> None:
    """Supervise AI coding agents in tmux, and tune the policies that do it."""
    ctx.obj = Settings().with_overrides(home=home, warehouse=warehouse, socket=socket_name)


__all__ = ["main", "COMMANDS", "console", "echo", "err_console", "settings_from", "pass_settings", "EXIT_USAGE"]
