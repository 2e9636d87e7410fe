"""The ``supervisor`` command line: a thin skin over the library.

Each command group lives in its own module and registers itself on :data:`main`.
Errors from the library (:class:`supervisor.errors.SupervisorError`) print as one line
with the fix and exit with the documented code; see ``supervisor.errors``.
"""

from __future__ import annotations

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

console = Console()
err_console = Console(stderr=True)


class SupervisorGroup(click.Group):
    """The root group: every error becomes one line (``error: what (fix)``) and a documented exit code."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            rv = super().main(args, prog_name or "supervisor", complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "supervisor"
            click.echo(f"error: {exc.format_message()} (see `{where} --help`)", err=True)
            code = exc.exit_code
        except click.ClickException as exc:
            click.echo(f"error: {exc.format_message()}", err=True)
            code = exc.exit_code
        except SupervisorError as exc:
            click.echo(f"error: {exc.one_line()}", err=True)
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
@click.option("--warehouse", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="DuckDB warehouse file (default: $SUPERVISOR_WAREHOUSE or HOME/warehouse.duckdb).")
@click.option("--socket", "socket_name", default=None,
              help="tmux socket name, as for `tmux -L` (default: $SUPERVISOR_TMUX_SOCKET or tmux's default).")
@click.pass_context
def main(ctx: click.Context, home: Path | None, warehouse: Path | None, socket_name: str | None) -> None:
    """Supervise AI coding agents in tmux, and tune the policies that do it."""
    ctx.obj = Settings().with_overrides(home=home, warehouse=warehouse, socket=socket_name)


def _register() -> None:
    """Every command module exposes ``COMMANDS``; runs_workflow_cmds and acp_cmds add theirs to ``runs``."""
    from supervisor.cli import (
        acp_cmds,
        classify_cmds,
        eval_cmds,
        live_cmds,
        report_cmds,
        runs_cmds,
        runs_workflow_cmds,
        skill_cmds,
        spec_cmds,
        warehouse_cmds,
    )

    for mod in (live_cmds, classify_cmds, runs_cmds, runs_workflow_cmds, acp_cmds, spec_cmds, skill_cmds,
                eval_cmds, warehouse_cmds, report_cmds):
        for cmd in mod.COMMANDS:
            main.add_command(cmd)


_register()


__all__ = ["main", "console", "err_console", "settings_from", "pass_settings", "EXIT_USAGE"]
