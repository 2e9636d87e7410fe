"""Runs across supervisor restarts: which run a pane belongs to, and closing runs nobody will
finish.

A run lives in its journal. While a supervisor supervises it, that supervisor holds the run's
control lock (:func:`supervisor.control.is_live`). A run that has not ended and whose lock is
free lost its supervisor (killed, crashed, the machine rebooted): ``supervisor attach`` or
``watch`` on its pane, or ``supervisor runs resume RUN_ID``, continue it (same run id, state
rebuilt from the journal). If its pane is dead or gone too, nobody can continue it: it is
closed as such (``run_ended`` with outcome ``exited`` or ``lost`` and the reason), so ``status``
does not show it live forever.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supervisor.control import is_live
from supervisor.journal import Journal, iter_events

log = logging.getLogger(__name__)

RECENT_JOURNALS = 200
"""How many of the most recently written journals are considered (older runs are history)."""


@dataclass
class UnendedRun:
    """A run whose journal has no ``run_ended``."""

    run_id: str
    path: Path
    started: dict[str, Any]
    """The ``run_started`` payload (pane, socket, pane pid, command, task...)."""
    workflow: dict[str, Any] | None
    """The workflow note (spec id and path) for a run held to a spec."""
    live: bool
    """A supervisor holds it now."""

    @property
    def pane_id(self) -> str | None:
        return self.started.get("pane_id") or (self.workflow or {}).get("pane_id")

    @property
    def socket(self) -> str | None:
        return self.started.get("socket") or (self.workflow or {}).get("socket")


def unended_runs(settings: Any, *, recent: int = RECENT_JOURNALS) -> list[UnendedRun]:
    """Runs without ``run_ended`` among the most recently written journals, newest first."""
    try:
        journals = sorted(Path(settings.journals_dir).glob("*.jsonl"), key=lambda p: p.stat().st_mtime,
                          reverse=True)[:recent]
    except OSError:
        return []
    out = []
    for path in journals:
        try:
            events = list(iter_events(path))
        except Exception as exc:  # noqa: BLE001 - an unreadable journal is not a candidate
            log.warning("skipping unreadable journal %s: %s", path, exc)
            continue
        if not events or any(e.kind == "run_ended" for e in events):
            continue
        started = next((e.payload for e in events if e.kind == "run_started"), {})
        workflow = next((e.payload for e in events if e.kind == "note" and e.payload.get("type") == "workflow"), None)
        run_id = events[0].run_id
        out.append(UnendedRun(run_id, path, started, workflow, is_live(settings, run_id)))
    return out


def resumable_run(settings: Any, pane_id: str, socket: str | None, *, pane_pid: int | None = None,
                  spec_id: str | None = None) -> UnendedRun | None:
    """The newest run on this pane (of this tmux server) that has not ended and has no live
    supervisor: the run a new supervisor of the pane continues. A different pane process (a new
    server reused the pane id) is not the same pane. With ``spec_id``, only a run held to that
    spec; without, only a run held to none."""
    for run in unended_runs(settings):
        if run.live or run.pane_id != pane_id or run.socket != socket:
            continue
        recorded = run.started.get("pane_pid")
        if pane_pid is not None and recorded is not None and recorded != pane_pid:
            continue
        wf_spec = (run.workflow or {}).get("spec_id")
        if wf_spec != spec_id:
            continue
        return run
    return None


def close_run(settings: Any, run: UnendedRun, outcome: str, reason: str) -> None:
    with Journal(run.path, run.run_id) as j:
        j.append("run_ended", {"outcome": outcome, "reason": reason, "exit_code": None, "pane_id": run.pane_id,
                               "closed_by": "supervisor"})


def close_orphans(settings: Any, *, pane_state: Any = None) -> list[str]:
    """Close runs whose supervisor is gone and whose pane is dead or gone; returns their ids.
    ``pane_state(socket, pane_id, pane_pid)`` says ``alive``, ``dead``, ``gone`` or ``no_server``
    (default: asks tmux)."""
    check = pane_state or tmux_pane_state
    closed = []
    for run in unended_runs(settings):
        if run.live or not run.pane_id:
            continue
        state = check(run.socket, run.pane_id, run.started.get("pane_pid"))
        if state == "alive":
            continue
        outcome = "lost" if state == "no_server" else "exited"
        why = {"dead": "its pane is dead", "gone": "its pane is gone", "no_server": "its tmux server is gone"}[state]
        close_run(settings, run, outcome, f"closed: its supervisor is gone and {why}")
        closed.append(run.run_id)
    return closed


def tmux_pane_state(socket: str | None, pane_id: str, pane_pid: int | None = None) -> str:
    """``alive`` | ``dead`` | ``gone`` | ``no_server`` for a pane of a tmux server."""
    from supervisor.errors import PaneGone, SurfaceError
    from supervisor.surfaces.tmux import TmuxSurface

    try:
        info = TmuxSurface(socket).pane_info(pane_id)
    except PaneGone as exc:
        return "no_server" if "server is not running" in exc.message else "gone"
    except SurfaceError:
        return "alive"  # cannot tell: leave the run alone
    if pane_pid is not None and info.pid is not None and info.pid != pane_pid:
        return "gone"  # a new server reused the pane id
    return "dead" if info.dead else "alive"
