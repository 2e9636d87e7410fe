"""`supervisor doctor` and `supervisor bridge read|type|keys|list|id|doctor`: checking the set-up,
and small tmux helpers people script with (the same surface the supervisor uses)."""

from __future__ import annotations

import click

from supervisor.cli import echo, settings_from
from supervisor.cli.output import print_json
from supervisor.errors import EXIT_CHECK_FAILED

_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as a JSON array.")
@click.option("--send-test", is_flag=True, help="Also send a test notification through every off-pane channel.")
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool, send_test: bool = False) -> None:
    """Check tmux (binary, server, control mode) and the supervisor's own set-up (home, warehouse,
    policy, runs that lost their supervisor, the judge's key, notification channels and plugins) in
    one go. Exit 1 when a check fails."""
    from supervisor.doctor import run_checks, send_test_notification

    checks = run_checks(settings_from(ctx))
    if send_test:
        checks += send_test_notification(settings_from(ctx))
    if as_json:
        print_json([c.to_dict() for c in checks])
    else:
        for c in checks:
            echo(f"{_MARK[c.status]}  {c.name:13} {c.detail}" + (f" ({c.fix})" if c.fix and c.status != "ok"
                                                                         else ""))
    if any(c.status == "fail" for c in checks):
        ctx.exit(EXIT_CHECK_FAILED)


@click.group("bridge")
def bridge() -> None:
    """Small tmux helpers for scripts: read a pane, type into it, send keys, list panes."""


def _surface(ctx: click.Context):  # type: ignore[no-untyped-def]
    from supervisor.cli.live_cmds import tmux_surface

    return tmux_surface(settings_from(ctx), None)


def _pane_id(ctx: click.Context, pane: str) -> str:
    from supervisor.cli.live_cmds import _find_pane

    s = settings_from(ctx)
    return str(_find_pane(_surface(ctx), s, pane).pane_id)


@bridge.command("read")
@click.argument("pane")
@click.argument("lines", type=click.IntRange(min=1), required=False)
@click.pass_context
def bridge_read(ctx: click.Context, pane: str, lines: int | None) -> None:
    """Print PANE's screen as text (the last LINES lines, scrollback included, when given)."""
    from supervisor.screen import normalize

    surface = _surface(ctx)
    pid = _pane_id(ctx, pane)
    raw = surface.capture(pid, scrollback=lines or 0)
    text = normalize((raw.scrollback + "\n" if raw.scrollback else "") + raw.text).rstrip("\n")
    rows = text.splitlines()
    echo("\n".join(rows[-lines:] if lines else rows))


@bridge.command("type")
@click.argument("pane")
@click.argument("text")
@click.pass_context
def bridge_type(ctx: click.Context, pane: str, text: str) -> None:
    """Type TEXT into PANE literally (no Enter: add it with `bridge keys PANE Enter`)."""
    _surface(ctx).paste_text(_pane_id(ctx, pane), text)


@bridge.command("keys")
@click.argument("pane")
@click.argument("keys", nargs=-1, required=True)
@click.pass_context
def bridge_keys(ctx: click.Context, pane: str, keys: tuple[str, ...]) -> None:
    """Send KEYS to PANE as tmux names them (Enter, Escape, C-c, Up, y...)."""
    _surface(ctx).send_keys(_pane_id(ctx, pane), list(keys))


@bridge.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.pass_context
def bridge_list(ctx: click.Context, as_json: bool) -> None:
    """Every pane of the tmux server: id, session, command, directory, size."""
    panes = _surface(ctx).list_panes()
    rows = [{"pane_id": p.pane_id, "session": p.session, "command": p.current_command, "cwd": p.current_path,
             "width": p.width, "height": p.height, "dead": p.dead} for p in panes]
    if as_json:
        print_json(rows)
        return
    for r in rows:
        echo(f"{r['pane_id']}  {r['session']}  {r['command']}{' (dead)' if r['dead'] else ''}  "
                   f"{r['width']}x{r['height']}  {r['cwd']}")


@bridge.command("id")
@click.pass_context
def bridge_id(ctx: click.Context) -> None:
    """The pane this shell runs in ($TMUX_PANE). Exit 1 outside tmux."""
    import os

    pane = os.environ.get("TMUX_PANE")
    if not pane:
        echo("not inside tmux", err=True)
        ctx.exit(EXIT_CHECK_FAILED)
    echo(pane)


@bridge.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as a JSON array.")
@click.pass_context
def bridge_doctor(ctx: click.Context, as_json: bool) -> None:
    """The same checks as `supervisor doctor`."""
    ctx.invoke(doctor_cmd, as_json=as_json)
