"""`supervisor observe|pane-owner|ps|session`: where runs, supervisors and agent sessions are.

All read-only, and all from the journals and tmux: they work with no supervisor alive and while
another process holds the warehouse. The home is per user, so one listing covers the runs of
every project and worktree.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import click

from supervisor.cli import echo, settings_from
from supervisor.cli.output import print_json
from supervisor.cli.runs_cmds import RUN_ID
from supervisor.errors import EXIT_CHECK_FAILED
from supervisor.settings import Settings


def _pane(settings: Settings, target: str | None) -> Any:
    """PaneInfo of TARGET (a pane id or session:window.pane), default the pane this shell runs in."""
    import os

    from supervisor.cli.live_cmds import _find_pane, tmux_surface
    from supervisor.errors import UsageError

    target = target or os.environ.get("TMUX_PANE")
    if not target:
        raise UsageError("no pane given and this shell is not inside tmux", "pass a pane id like %3")
    return _find_pane(tmux_surface(settings, None), settings, target)


def _when(at: float | None) -> str:
    return dt.datetime.fromtimestamp(at).isoformat(timespec="seconds") if at else "-"


def _owners(settings: Settings, pane_id: str) -> list[dict[str, Any]]:
    from supervisor.lifecycle import unended_runs

    out = []
    for r in unended_runs(settings):
        if r.pane_id == pane_id and (r.socket or None) == (settings.tmux_socket or None):
            out.append({"run_id": r.run_id, "live": r.live, "supervisor_pid": r.started.get("pid"),
                        "cwd": r.started.get("cwd"), "agent": r.started.get("agent"),
                        "started_at": _first_at(r.path)})
    return out


def _first_at(path: Path) -> float | None:
    from supervisor.journal import iter_events

    return next((e.at for e in iter_events(path)), None)


@click.command("pane-owner")
@click.argument("pane", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the owner as JSON (null when none).")
@click.pass_context
def pane_owner_cmd(ctx: click.Context, pane: str | None, as_json: bool) -> None:
    """Which run supervises PANE (default: this shell's pane). Exit 1 when none does."""
    s = settings_from(ctx)
    info = _pane(s, pane)
    owners = _owners(s, info.pane_id)
    live = [o for o in owners if o["live"]]
    owner = (live or owners or [None])[0]
    if as_json:
        print_json({"pane_id": info.pane_id, "owner": owner, "unended_runs": owners})
    elif owner is None:
        echo(f"no run supervises {info.pane_id} (start one with `supervisor attach {info.pane_id}`)")
    else:
        state = (f"supervised by pid {owner['supervisor_pid']}" if owner["live"]
                 else f"its supervisor is gone: `supervisor attach {info.pane_id}` or "
                      f"`supervisor runs resume {owner['run_id']}` continues it")
        echo(f"{info.pane_id}: {owner['run_id']} ({owner['agent'] or 'agent unknown'}, since "
                   f"{_when(owner['started_at'])}), {state}")
    if owner is None:
        ctx.exit(EXIT_CHECK_FAILED)


@click.command("ps")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.pass_context
def ps_cmd(ctx: click.Context, as_json: bool) -> None:
    """Live supervisor processes, across every project and worktree: pid, run, pane, directory, uptime."""
    import psutil

    from supervisor.lifecycle import unended_runs

    s = settings_from(ctx)
    rows = []
    for r in unended_runs(s):
        if not r.live:
            continue
        pid = r.started.get("pid")
        try:
            proc = psutil.Process(int(pid)) if pid else None
            up = time.time() - proc.create_time() if proc else None
            mem = proc.memory_info().rss / 2**20 if proc else None
        except (psutil.Error, ValueError):
            up = mem = None
        rows.append({"pid": pid, "run_id": r.run_id, "pane_id": r.pane_id, "socket": r.socket,
                     "cwd": r.started.get("cwd"), "agent": r.started.get("agent"), "host": r.started.get("host"),
                     "uptime_s": round(up, 1) if up is not None else None,
                     "rss_mb": round(mem, 1) if mem is not None else None})
    if as_json:
        print_json(rows)
        return
    if not rows:
        echo("no supervisor is running (`supervisor status --all` lists runs)")
        return
    for row in rows:
        up = f"{row['uptime_s']:.0f}s" if row["uptime_s"] is not None else "?"
        echo(f"{row['pid']}  {row['run_id']}  {row['pane_id'] or '-'}  {row['agent'] or '-'}  up {up}  "
                   f"{row['cwd'] or '-'}")


def _event_words(kind: str, p: dict[str, Any]) -> str:
    if kind == "observation":
        o = p.get("observation", p)
        prompt = o.get("prompt") or {}
        return f"{o.get('state')}" + (f": {prompt.get('question')!r}" if prompt.get("question") else "")
    if kind in ("decision", "shadow_decision"):
        d = p.get("decision", p)
        return f"{d.get('kind')} ({d.get('rule') or d.get('source') or '-'}): {d.get('reason') or ''}".strip()
    if kind == "action":
        a = p.get("action", p)
        return f"{a.get('kind')} {' '.join(a.get('keys') or [])}".strip()
    if kind == "pause":
        return str(p.get("pause_reason") or p.get("reason") or "")
    if kind == "checkpoint":
        c = p.get("checkpoint") or {}
        return f"{c.get('status')} at {c.get('current_node')}: {c.get('summary') or ''}"
    if kind == "verification":
        return f"{p.get('verifier')} {'passed' if p.get('passed') else 'FAILED'}"
    if kind == "friction":
        return f"{p.get('kind')}: {p.get('detail') or ''}"
    if kind == "run_ended":
        return f"{p.get('outcome')} {p.get('reason') or ''}".strip()
    return ""


@click.command("observe")
@click.argument("run_id", type=RUN_ID)
@click.option("--events", "n_events", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many of the latest events to show.")
@click.option("--screen/--no-screen", default=True, show_default=True,
              help="Also capture the pane's screen now (redacted), when the pane is alive.")
@click.option("--json", "as_json", is_flag=True, help="Print the snapshot as JSON.")
@click.pass_context
def observe_cmd(ctx: click.Context, run_id: str, n_events: int, screen: bool, as_json: bool) -> None:
    """A read-only snapshot of a run: its state, whether a supervisor holds it, the pane, the latest
    events, and the pane's screen now. Works with no supervisor alive; never sends a key."""
    from supervisor.control import is_live
    from supervisor.history import summarize_journal
    from supervisor.journal import iter_events
    from supervisor.lifecycle import tmux_pane_state
    from supervisor.redact import redact

    s = settings_from(ctx)
    path = s.journal_path(run_id)
    summary = summarize_journal(path)
    events = list(iter_events(path))
    started = next((e.payload for e in events if e.kind == "run_started"), {})
    socket = started.get("socket")
    pane_id = summary.pane_id
    pane_state = tmux_pane_state(socket, pane_id, started.get("pane_pid")) if pane_id else "none"
    text = None
    if screen and pane_state == "alive" and pane_id:
        from supervisor.surfaces.tmux import TmuxSurface

        raw = TmuxSurface(socket).capture(pane_id)
        text = redact(raw.plain.rstrip())
    pauses = [e for e in events if e.kind in ("pause", "resume")]
    paused = bool(pauses) and pauses[-1].kind == "pause"
    snap = {
        "run_id": run_id, "outcome": summary.outcome, "state": summary.state, "agent": summary.agent,
        "pane_id": pane_id, "socket": socket, "pane": pane_state, "cwd": started.get("cwd"),
        "supervisor_alive": is_live(s, run_id) if summary.outcome is None else False,
        "supervisor_pid": started.get("pid"), "started_at": summary.started_at, "last_event_at": summary.last_event_at,
        "paused": paused, "pause_reason": pauses[-1].payload.get("pause_reason") if paused else None,
        "next_action": pauses[-1].payload.get("next_action") if paused else None,
        "spec": summary.spec_name, "events": summary.events,
        "supervision": next(({k: v for k, v in e.payload.items() if k != "type"} for e in events
                             if e.kind == "note" and e.payload.get("type") == "supervision"), None),
        "latest": [{"seq": e.seq, "at": e.at, "kind": e.kind, "what": redact(_event_words(e.kind, e.payload))}
                   for e in events[-n_events:]] if n_events else [],
        "screen": text,
    }
    if as_json:
        print_json(snap)
        return
    sup = ("supervised now" if snap["supervisor_alive"] else
           "no supervisor (`supervisor runs resume` continues it)" if summary.outcome is None else "ended")
    echo(f"{run_id} · {summary.agent or 'agent unknown'} · pane {pane_id or '-'} ({pane_state}) · "
               f"{summary.outcome or summary.state or '-'} · {sup}")
    if started.get("cwd"):
        echo(f"directory {started['cwd']}")
    if snap["supervision"]:
        from supervisor.workflow.live import supervision_line

        echo(f"workflow {snap['spec']}: {supervision_line(snap['supervision'])}")
    if paused:
        echo(f"PAUSED: {snap['pause_reason']}" + (f" -> {snap['next_action']}" if snap["next_action"] else ""))
    for e in snap["latest"]:
        echo(f"  seq {e['seq']} {_when(e['at'])} {e['kind']} {e['what']}")
    if text is not None:
        echo("screen now (secrets redacted):")
        click.echo(text or "(blank)")


# -- session ---------------------------------------------------------------------------------------------


@click.group("session")
def session() -> None:
    """The Claude Code / Codex session and transcript of a pane (or of a directory)."""


def _detect(ctx: click.Context, pane: str | None, cwd: Path | None, agent: str | None) -> Any:
    import psutil

    from supervisor.errors import UsageError
    from supervisor.sessions import detect_session, session_agent

    s = settings_from(ctx)
    since = None
    if cwd is not None:
        if pane is not None:
            raise UsageError("give PANE or --cwd, not both", "drop one of them")
        where = str(cwd.resolve())
    else:
        info = _pane(s, pane)
        where = info.current_path
        if agent is None:
            from supervisor.agents import agent_of_pane
            from supervisor.cli.live_cmds import resolve_policy

            agent = session_agent(agent_of_pane(info, resolve_policy(s, None))) or None
        try:
            since = psutil.Process(info.pid).create_time() if info.pid else None
        except psutil.Error:
            since = None
    found = detect_session(where, agent, since=since)  # type: ignore[arg-type]
    return where, agent, found


_AGENT = click.option("--agent", type=click.Choice(["claude", "codex"]), default=None,
                      help="Which agent's sessions (default: the pane's agent, else both).")
_CWD = click.option("--cwd", type=click.Path(file_okay=False, path_type=Path), default=None,
                    help="Look for sessions of this directory instead of a pane's.")


@session.command("detect")
@click.argument("pane", required=False)
@_AGENT
@_CWD
@click.option("--json", "as_json", is_flag=True, help="Print the session as JSON (null when none).")
@click.pass_context
def session_detect(ctx: click.Context, pane: str | None, agent: str | None, cwd: Path | None, as_json: bool) -> None:
    """The session id of the agent in PANE (default: this shell's pane). Exit 1 when none is found."""
    where, agent, found = _detect(ctx, pane, cwd, agent)
    if as_json:
        print_json(found.to_dict() if found else None)
    elif found:
        echo(f"{found.agent} session {found.session_id} ({where}, transcript {found.transcript})")
    else:
        echo(f"no {agent or 'Claude Code or Codex'} session found for {where}")
    if found is None:
        ctx.exit(EXIT_CHECK_FAILED)


@session.command("jsonl")
@click.argument("pane", required=False)
@_AGENT
@_CWD
@click.pass_context
def session_jsonl(ctx: click.Context, pane: str | None, agent: str | None, cwd: Path | None) -> None:
    """The transcript path of the agent in PANE, alone on a line (for scripts). Exit 1 when none is found."""
    where, agent, found = _detect(ctx, pane, cwd, agent)
    if found is None:
        echo(f"no {agent or 'Claude Code or Codex'} transcript found for {where}", err=True)
        ctx.exit(EXIT_CHECK_FAILED)
    echo(found.transcript)


@session.command("list")
@_AGENT
@_CWD
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Show at most this many.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def session_list(agent: str | None, cwd: Path | None, limit: int, as_json: bool) -> None:
    """Recent agent sessions on this machine, newest first: agent, id, directory, transcript."""
    from supervisor.sessions import list_sessions

    found = list_sessions(agent, str(cwd.resolve()) if cwd else None, limit=limit)  # type: ignore[arg-type]
    if as_json:
        print_json([f.to_dict() for f in found])
        return
    if not found:
        echo("no Claude Code or Codex sessions found")
    for f in found:
        echo(f"{_when(f.modified_at)}  {f.agent:6}  {f.session_id}  {f.cwd or '-'}  {f.transcript}")
