"""A workflow run observed from an agent's JSONL transcript alone, with no pane.

For an agent running where tmux cannot reach it (another machine's terminal, an IDE, a CI job) but
whose transcript file is readable: :func:`follow_transcript` reads each new assistant message for
checkpoint blocks, runs the spec's verifiers in the run's directory, and makes the same workflow
decisions as a pane run, journaled the same way (so ``status``, ``observe``, ``runs why``, the
warehouse and replay cover it). It is observe-only: it types nothing. An instruction the agent
should get next (the next step, a retry with the failing output) is journaled as an
``instruction_undelivered`` note and sent as a notification for a person (or the agent's own
hook) to hand over. ``supervisor runs review|stop RUN_ID`` reach it through the run's control
channel, as for any live run.
"""

from __future__ import annotations

import os
import socket as socketlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from supervisor import __version__
from supervisor.journal import Journal, open_run_journal
from supervisor.settings import Settings, user_name
from supervisor.surfaces.transcript import TranscriptSurface
from supervisor.workflow.controller import WorkflowController
from supervisor.workflow.live import load_runnable_spec
from supervisor.workflow.notify import Notification

POLL_S = 0.3
"""How often the transcript is read for new lines (and control requests looked for)."""


def follow_transcript(settings: Settings, transcript: str | Path, spec_path: str | Path, *,
                      policy: Any = None, cwd: str | Path | None = None, run_id: str | None = None,
                      timeout: float | None = None, agent: str = "unknown", profile: str | None = None,
                      echo: Callable[[str], None] | None = None) -> tuple[str, str]:
    """Supervise a run from ``transcript`` until the workflow finishes, is stopped, or ``timeout``
    passes. Returns (run_id, outcome): ``finished``, ``stopped``, ``escalated`` or ``timeout``."""
    from supervisor.policy import baseline_policy, load_policy

    spec = load_runnable_spec(spec_path)
    if policy is None:
        policy = load_policy(settings.policy_path) if settings.policy_path else baseline_policy()
    from supervisor.workflow.profiles import require_profile

    if profile:
        require_profile(policy, profile)  # refused before the run starts
    path = Path(transcript).resolve()
    workdir = Path(cwd).resolve() if cwd else Path.cwd()
    journal = open_run_journal(settings.ensure().journals_dir, run_id)
    rid = journal.run_id
    resuming = journal.seq > 0
    if not resuming:
        journal.append("run_started", {
            "run_id": rid, "surface": "transcript", "transcript": str(path), "command": None, "pane_id": None,
            "cwd": str(workdir), "agent": agent, "policy_id": policy.policy_id, "policy_name": policy.name,
            "policies": {policy.policy_id: policy.canonical()}, "spec_id": spec.content_hash,
            "spec_path": str(Path(spec_path).resolve()), "host": socketlib.gethostname(), "pid": os.getpid(),
            "user": user_name(), "package_version": __version__})
        journal.append("note", {"type": "workflow", "spec_id": spec.content_hash, "spec_name": spec.name,
                                "spec_path": str(Path(spec_path).resolve()), "surface": "transcript",
                                "transcript": str(path), "pid": os.getpid()})

    def on_event(event: Any) -> None:
        p = event.payload
        if event.kind == "decision" and p.get("source") == "workflow" and p.get("text") and p.get("handoff_kind"):
            _undelivered(journal, ctl, p)
        if echo is not None:
            from supervisor.workflow.live import describe_event

            line = describe_event(event)
            if line:
                echo(f"{time.strftime('%H:%M:%S')} {line}")

    ctl = WorkflowController(spec, journal, None, policy, settings, rid, cwd=workdir, on_event=on_event,
                             agent=agent, profile=profile)
    surface = TranscriptSurface(path)
    if resuming:  # what a previous follower already read is in the journal: start from the end
        surface.read_new()
    outcome = "timeout"
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while deadline is None or time.monotonic() < deadline:
            for entry in surface.read_new():
                ctl.on_output(entry.text, "transcript")
            ctl.tick()
            if ctl.finished:
                outcome = "finished"
                break
            if ctl.stop_requested:
                outcome = "escalated" if ctl.paused else "stopped"
                break
            ctl.control.drain_wake()
            wait = POLL_S if not ctl.busy() else 0.05
            if ctl.control.wake_fd is not None:
                import select

                select.select([ctl.control.wake_fd], [], [], wait)
            else:
                time.sleep(wait)
    finally:
        reason = {"finished": "workflow finished: acceptance holds", "stopped": "stop requested",
                  "escalated": "stop requested while paused", "timeout": "--timeout reached"}[outcome]
        journal.append("run_ended", {"outcome": outcome, "reason": reason, "exit_code": None})
        ctl.close()
        journal.close()
    return rid, outcome


def _undelivered(journal: Journal, ctl: WorkflowController, decision: dict[str, Any]) -> None:
    """An instruction for an agent nobody can type to: journal it and tell a person."""
    text = str(decision.get("text") or "")
    journal.append("note", {"type": "instruction_undelivered", "decision_id": decision.get("decision_id"),
                            "handoff_kind": decision.get("handoff_kind"), "text": text,
                            "reason": "transcript-only observation: nothing is typed to the agent"})
    first = text.splitlines()[0] if text else ""
    ctl.hub.notify(Notification(run_id=ctl.run_id, kind="info", title=f"hand the agent: {first[:150]}", body=text,
                                next_action="paste the instruction into the agent (nothing is typed in "
                                            "transcript-only observation)"))
