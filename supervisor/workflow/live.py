"""Live workflow supervision: the runner's pane loop with a WorkflowController riding along.

:class:`WorkflowPaneRunner` is the runner's :class:`~supervisor.runner.PaneRunner` plus a
workflow: after every observation it hands the observation and screen to the controller,
between observations it lets the controller collect verifier results and control requests,
and it holds the runner's own "finished" until the workflow's finish gate passes. Given the
run id of an existing journal it resumes that run instead of starting a new one.

    python -m supervisor.workflow.live --pane %3 --spec SPEC.yaml [--run-id RUN] [--policy P]

(the same thing ``supervisor attach --spec`` / ``supervisor runs resume`` do).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from supervisor.agents import exit_keys
from supervisor.errors import SupervisorError
from supervisor.models import Decision, Observation
from supervisor.runner import PaneRunner, RunConfig, Supervisor
from supervisor.settings import Settings
from supervisor.surfaces.base import OutputEvent, PaneInfo, RawScreen
from supervisor.surfaces.transcript import TranscriptSurface
from supervisor.workflow import inbox
from supervisor.workflow.controller import WorkflowController
from supervisor.workflow.spec import WorkflowSpec, load_spec, require_approved

log = logging.getLogger(__name__)

WAITING_POLL_S = 1.0
"""While the run waits for a human (paused, finish held), look for control requests this often."""


class WorkflowPaneRunner(PaneRunner):
    """A PaneRunner whose run follows a WorkflowSpec."""

    def __init__(self, surface: Any, pane: PaneInfo, settings: Settings, config: RunConfig, *, spec: WorkflowSpec,
                 spec_path: str | None = None, run_id: str | None = None,
                 on_change: Callable[[PaneRunner, Any], None] | None = None, socket: str | None = None,
                 cwd: str | Path | None = None, wake: Callable[[], None] | None = None,
                 transcript: str | Path | None = None, profile: str | None = None) -> None:
        self.spec = spec
        self.spec_path = spec_path
        super().__init__(surface, pane, settings, config, run_id=run_id, on_change=on_change, socket=socket,
                         resume=bool(run_id))
        # the worker's profile and its supervision mode, and the people's preferences, shape the workflow
        # (the controller chooses them, journals them, and a resumed run keeps its own)
        self.workflow = WorkflowController(spec, self.journal, surface, config.policy, settings, self.run_id,
                                           pane_id=pane.pane_id, cwd=cwd, wake=wake, on_event=self._wf_event,
                                           control=self.control, agent=self.known_agent, profile=profile)
        self._wf_hash: str | None = None
        self._transcript = TranscriptSurface(transcript) if transcript else None
        """An agent's JSONL transcript, read for checkpoint blocks too (observe-only)."""
        self._wf_next: float | None = None
        self._finish_held = False
        self._worked_since_handoff = False
        """Seen busy since our last instruction: only then does "idle" mean it stopped without reporting."""

    def _wf_event(self, event: Any) -> None:
        if event.kind == "action":
            self._our_keys_at = time.time()  # our own paste: not a human typing
            if event.payload.get("delivered"):
                self._worked_since_handoff = False
        if self._on_change is not None:
            self._on_change(self, event)

    def _append(self, kind: Any, payload: dict[str, Any], *, event_id: str | None = None) -> Any:
        if kind == "run_started" or (kind == "note" and payload.get("type") == "supervision_resumed"):
            # the warehouse's runs.spec_id comes from run_started
            payload = {**payload, "spec_id": self.spec.content_hash, "spec_path": self.spec_path}
        return super()._append(kind, payload, event_id=event_id)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        resuming = self.resuming
        super().start()
        if not resuming:
            self._append("note", {"type": "workflow", "spec_id": self.spec.content_hash, "spec_name": self.spec.name,
                                  "spec_path": self.spec_path, "pane_id": self.pane_id, "socket": self.socket,
                                  "pid": os.getpid()})
        self._wf_next = time.time()

    def _handle_request(self, req: dict[str, Any], now: float) -> None:
        """Review, stop and resume belong to the workflow (its finish gate, its pause); a task is the
        runner's."""
        if req.get("type") in ("review", "stop", "resume"):
            self.workflow.take_request(req)
            with self._sched:
                self._wf_next = now
        elif req.get("type") == inbox.REQUEST:
            inbox.journal_request(self._append, req)
        else:
            super()._handle_request(req, now)

    def stop(self) -> None:
        """The supervisor stops: ``escalated`` if the run (or its workflow) is paused."""
        paused = self.state.paused or self.workflow.paused
        self.end("escalated" if paused else "stopped", reason="supervisor stopped")

    def end(self, outcome: Any, *, exit_code: int | None = None, reason: str = "") -> None:
        if not self.done:
            self.workflow.close()
        super().end(outcome, exit_code=exit_code, reason=reason)

    def suspend(self, reason: str) -> None:
        if not self.done:
            self.workflow.close()
        super().suspend(reason)

    # -- hooks ---------------------------------------------------------------------------------------
    def observe(self, now: float, *, trigger: str = "output", force: bool = False) -> Decision | None:
        d = super().observe(now, trigger=trigger, force=force)
        if self.last_obs is not None and self.last_obs.state == "busy":
            self._worked_since_handoff = True
        if not self.done:
            self._workflow_step(time.time())
        return d

    def tick(self, now: float) -> None:
        super().tick(now)
        if not self.done and self._wf_next is not None and now >= self._wf_next:
            self._workflow_step(now)

    def next_deadline(self) -> float | None:
        base = super().next_deadline()
        if self.done:
            return None
        times = [t for t in (base, self._wf_next) if t is not None]
        return min(times) if times else None

    def _act(self, decision: Decision, obs: Observation, raw: RawScreen, now: float,
             live: dict[str, Any] | None) -> None:
        if decision.kind == "finish" and obs.state != "exited" and not self.workflow.finish_allowed():
            # The screen that made the agent look finished may carry its last checkpoint: read it first.
            self._wf_hash = None
            try:
                self._feed_workflow()
                if not self.workflow.finish_allowed() and self._worked_since_handoff:
                    self.workflow.agent_idle(decision.trigger_id)
            except Exception as exc:  # noqa: BLE001 - nothing an agent prints may crash the supervisor
                self._append("note", {"type": "workflow_error", "error": f"{type(exc).__name__}: {exc}"[:500]})
            if not self.workflow.finish_allowed():
                if not self._finish_held:
                    self._finish_held = True
                    self._append("note", {"type": "finish_held", "pane_id": self.pane_id,
                                          "reason": "the agent looks finished but the workflow's finish gate has "
                                                    "not passed", "pause_reason": self.workflow.pause_reason,
                                          "next_action": self.workflow.next_action})
                return
        super()._act(decision, obs, raw, now, live)

    def _finish(self, decision: Decision, obs: Observation, now: float) -> None:
        """The workflow's finish gate passed: the run ends when ``_workflow_step`` sees it finished."""

    def _feed_workflow(self) -> None:
        if self._transcript is not None:
            for entry in self._transcript.read_new():
                self.workflow.on_output(entry.text, "transcript")
        obs, screen = self.last_obs, self.last_screen
        if obs is not None and screen is not None and self.last_hash != self._wf_hash:
            self._wf_hash = self.last_hash
            self.workflow.on_observation(obs, screen)
        else:
            self.workflow.tick()

    def _workflow_step(self, now: float) -> None:
        obs = self.last_obs
        try:
            self._feed_workflow()
        except Exception as exc:  # noqa: BLE001 - nothing an agent prints may crash the supervisor
            self._append("note", {"type": "workflow_error", "error": f"{type(exc).__name__}: {exc}"[:500],
                                  "pane_id": self.pane_id})
        wf = self.workflow
        if wf.finished:
            if self.config.exit_on_finish:
                keys = exit_keys(obs.agent if obs else "unknown", self.policy)
                if keys:
                    self._send(None, keys, kind="exit_agent")
            self.end("finished", reason="workflow finished: acceptance holds")
            return
        if wf.stop_requested:
            self.end("escalated" if wf.paused else "stopped", reason="stop requested")
            return
        if wf.busy():
            self._wf_next = now + 0.2
        elif wf.paused or wf.state.hold:
            self._wf_next = now + WAITING_POLL_S
        else:
            self._wf_next = now + max(WAITING_POLL_S, self.policy.timing.recheck_s)


class InboxPaneRunner(PaneRunner):
    """The runner's PaneRunner that also journals what other processes hand its run
    (:mod:`supervisor.workflow.inbox`: an oracle consultation made with ``--run``)."""

    def _handle_request(self, req: dict[str, Any], now: float) -> None:
        if req.get("type") == inbox.REQUEST:
            inbox.journal_request(self._append, req)
        else:
            super()._handle_request(req, now)


class InboxSupervisor(Supervisor):
    """The runner's Supervisor, its panes supervised by :class:`InboxPaneRunner`."""

    def _make_runner(self, info: PaneInfo, cfg: RunConfig, *, run_id: str | None = None,
                     resume: bool = False) -> PaneRunner:
        return InboxPaneRunner(self.surface, info, self.settings, cfg, socket=self.socket, on_change=self._journaled,
                               run_id=run_id, resume=resume)


class WorkflowSupervisor(Supervisor):
    """A Supervisor whose panes follow one WorkflowSpec."""

    def __init__(self, surface: Any, settings: Settings, config: RunConfig, *, spec: WorkflowSpec,
                 spec_path: str | None = None, run_id: str | None = None, cwd: str | Path | None = None,
                 transcript: str | Path | None = None, profile: str | None = None, **kw: Any) -> None:
        super().__init__(surface, settings, config, **kw)
        self.transcript = transcript
        self.profile = profile
        self.spec = spec
        self.spec_path = spec_path
        self.run_id = run_id
        self.cwd = cwd if cwd is not None else spec_workdir(spec, spec_path)
        self.echo: Callable[[str], None] | None = None
        self.auto_resume = True  # a pane whose run under this spec lost its supervisor continues that run

    def _journaled(self, runner: PaneRunner, event: Any) -> None:
        super()._journaled(runner, event)
        if self.echo is not None:
            line = describe_event(event)
            if line:
                stamp = time.strftime("%H:%M:%S", time.localtime(event.at))
                try:
                    self.echo(f"{stamp} {runner.pane_id} {line}")
                except Exception:  # noqa: BLE001 - a printer must not stop supervision
                    log.warning("echo of a workflow event failed", exc_info=True)

    def _resumable(self, info: PaneInfo) -> str | None:
        from supervisor.lifecycle import resumable_run

        run = resumable_run(self.settings, info.pane_id, self.socket, pane_pid=info.pid,
                            spec_id=self.spec.content_hash)
        return run.run_id if run is not None else None

    def _make_runner(self, info: PaneInfo, cfg: RunConfig, *, run_id: str | None = None,
                     resume: bool = False) -> PaneRunner:
        pane_id = info.pane_id

        def wake() -> None:
            self.events.put(OutputEvent("tick", pane_id, time.time()))

        if self.run_id is not None:  # only the first pane takes over a given run
            run_id, self.run_id = self.run_id, None
        if run_id is not None and self.echo is not None and self.settings.journal_path(run_id).exists():
            self.echo(f"{pane_id} resuming run {run_id} from its journal")
        return WorkflowPaneRunner(self.surface, info, self.settings, cfg, spec=self.spec, spec_path=self.spec_path,
                                  run_id=run_id, on_change=self._journaled, socket=self.socket, cwd=self.cwd,
                                  wake=wake, transcript=self.transcript, profile=self.profile)


def make_supervisor(surface: Any, settings: Settings, config: RunConfig, *, spec_path: str | Path | None = None,
                    run_id: str | None = None, cwd: str | Path | None = None,
                    echo: Callable[[str], None] | None = None, transcript: str | Path | None = None,
                    profile: str | None = None, **kw: Any) -> Supervisor:
    """The runner's Supervisor (whose runs also journal what other processes hand them, see
    :mod:`supervisor.workflow.inbox`), or a WorkflowSupervisor when a spec is given (a draft is
    refused with a SpecError before anything starts; ``profile`` names its worker profile). ``echo``
    prints workflow events (the CLI's console)."""
    if spec_path is None:
        return InboxSupervisor(surface, settings, config, **kw)
    spec = load_runnable_spec(spec_path)
    sup = WorkflowSupervisor(surface, settings, config, spec=spec, spec_path=str(Path(spec_path).resolve()),
                             run_id=run_id, cwd=cwd, transcript=transcript, profile=profile, **kw)
    sup.echo = echo
    return sup


def describe_event(event: Any) -> str | None:
    """One line for a workflow event (None for events the runner's printer already shows)."""
    p = event.payload
    if event.kind == "checkpoint":
        body = p.get("checkpoint") or {}
        if p.get("parse_error"):
            return f"checkpoint (malformed): {p['parse_error']}"
        return (f"checkpoint #{body.get('checkpoint_seq')} {body.get('status')} at {body.get('current_node')}: "
                f"{body.get('summary', '')}")
    if event.kind == "verification":
        return f"verify {p.get('verifier')}: {'pass' if p.get('passed') else 'FAIL'} ({p.get('detail', '')})"
    if event.kind == "decision" and p.get("source") == "workflow" and p.get("kind") not in ("verify", "wait"):
        return f"workflow {p.get('kind')}: {p.get('reason')}"
    if event.kind == "action" and p.get("kind") == "handoff" and p.get("confirmed") is not None:
        first = (p.get("text") or "").splitlines()[0][:100] if p.get("text") else ""
        return f"instruction {'received' if p.get('confirmed') else 'NOT confirmed'}: {first}"
    if event.kind == "note" and p.get("type") == "review":
        return f"review by {p.get('by')}"
    if event.kind == "note" and p.get("type") == "supervision":
        return f"supervision: {supervision_line(p)}"
    if event.kind == "note" and p.get("type") == "preferences":
        return "preferences used: " + ", ".join(f"{k}={v!r}" for k, v in (p.get("values") or {}).items())
    return None


def supervision_line(note: dict[str, Any]) -> str:
    """A run's ``supervision`` note in a line: profile, why, mode (and a preference it passed over)."""
    how = {"requested": "asked for", "preference": f"preference {note.get('preference')}",
           "agent": "the profile lists the agent", "default": "the policy's default"}.get(
        str(note.get("chosen_by")), str(note.get("chosen_by")))
    line = f"profile {note.get('profile')} ({how}), mode {note.get('mode')}"
    ignored = note.get("ignored_preferences") or {}
    if ignored:
        line += "; passed over " + ", ".join(f"{k}={v!r} (no such profile)" for k, v in ignored.items())
    return line


def spec_workdir(spec: WorkflowSpec, spec_path: str | Path | None) -> Path | None:
    """The spec's ``workdir`` (relative to the spec file), or None: verifiers then run in the
    pane's current directory."""
    if not spec.workdir:
        return None
    base = Path(spec_path).resolve().parent if spec_path else Path.cwd()
    return (base / spec.workdir).resolve()


def load_runnable_spec(path: str | Path) -> WorkflowSpec:
    """Load a spec and refuse a draft (SpecError, exit 2)."""
    spec = load_spec(path)
    require_approved(spec, str(path))
    return spec


def supervise_pane(settings: Settings, pane_id: str, spec_path: str | Path, *, policy: Any = None,
                   run_id: str | None = None, cwd: str | Path | None = None, timeout: float | None = None,
                   surface: Any = None, exit_on_finish: bool = False,
                   transcript: str | Path | None = None) -> WorkflowPaneRunner:
    """Supervise one pane under a spec in the foreground until the run ends."""
    from supervisor.policy import baseline_policy, load_policy
    from supervisor.surfaces.tmux import TmuxSurface

    spec = load_runnable_spec(spec_path)
    if policy is None:
        policy = load_policy(settings.policy_path) if settings.policy_path else baseline_policy()
    surf = surface or TmuxSurface(settings.tmux_socket)
    sup = WorkflowSupervisor(surf, settings, RunConfig(policy=policy, exit_on_finish=exit_on_finish), spec=spec,
                             spec_path=str(Path(spec_path).resolve()), run_id=run_id, cwd=cwd,
                             socket=settings.tmux_socket, transcript=transcript)
    runner = sup.add_pane(pane_id)
    assert isinstance(runner, WorkflowPaneRunner)

    got: list[str] = []

    def on_signal(signum: int, frame: Any) -> None:  # suspends: `supervisor runs resume` continues the run
        got.append(signal.Signals(signum).name)
        sup.stop()

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {sig: signal.signal(sig, on_signal) for sig in sigs} if _main_thread() else {}
    try:
        sup.run(timeout=timeout)
    finally:
        sup.close(suspend=f"the supervisor got {got[0]}" if got else None)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return runner


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m supervisor.workflow.live")
    ap.add_argument("--pane", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--run-id", default=None)
    ap.add_argument("--policy", default=None)
    ap.add_argument("--cwd", default=None)
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--transcript", default=None, help="the agent's JSONL transcript (checkpoints read there too)")
    args = ap.parse_args(argv)
    settings = Settings().ensure()
    try:
        policy = None
        if args.policy:
            from supervisor.policy import load_policy

            policy = load_policy(args.policy)
        runner = supervise_pane(settings, args.pane, args.spec, policy=policy, run_id=args.run_id, cwd=args.cwd,
                                timeout=args.timeout, transcript=args.transcript)
    except SupervisorError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    print(f"run {runner.run_id}: {runner.outcome}")
    return 0 if runner.outcome == "finished" else 5


if __name__ == "__main__":
    sys.exit(main())
