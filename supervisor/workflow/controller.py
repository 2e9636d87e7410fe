"""WorkflowController: one supervised run's workflow, driven by the runner.

The runner constructs it with ``(spec, journal, surface, policy, settings, run_id)`` and then
only calls :meth:`on_observation` for every observation (and :meth:`tick` on its re-check
timer, or when :attr:`wake` fires), and asks :meth:`finish_allowed` before finishing. The
controller parses new checkpoint blocks, journals them, decides with the pure gate, runs
verifiers on worker threads, pastes HandoffInstructions, pauses and notifies, and returns the
decisions it made so the runner can show them (or end the run on ``finish``).

All state is derived from the journal: a controller constructed on the journal of a run whose
supervisor was killed resumes it, re-running verifications that never reported, delivering
instructions that were decided but not sent, and checking the screen for instructions whose
intent was journaled but whose delivery was not (never sending one twice).

Humans reach a live run through control requests (``runs review|stop|resume``, see
:mod:`supervisor.control`): the run's pane runner picks them up and hands them over
(:meth:`WorkflowController.take_request`); the controller journals each once and acts on it. A
controller used on its own holds the run's control channel itself. Without a live supervisor
the CLI appends to the journal directly.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from supervisor.control import RunControl, is_live, write_request
from supervisor.ids import new_id
from supervisor.journal import Journal
from supervisor.policy import Policy
from supervisor.redact import clip
from supervisor.workflow import handoff as handoff_mod
from supervisor.workflow import inbox, profiles
from supervisor.workflow.checkpoint import CheckpointEvent, CheckpointSource, CheckpointTracker, find_blocks
from supervisor.workflow.gate import (
    ACCEPTANCE_NODE,
    acceptance_checks,
    decide_after_review,
    decide_checkpoint,
    decide_idle,
    decide_on_pause,
)
from supervisor.workflow.notify import Notification, NotificationHub, default_channels
from supervisor.workflow.profiles import SupervisionChoice
from supervisor.workflow.spec import WorkflowSpec
from supervisor.workflow.state import VerifierResult, WorkflowDecision, WorkflowState, fold, initial_state
from supervisor.workflow.verifiers import VerifierPool

log = logging.getLogger(__name__)

ControlType = str  # review | stop | resume


# -- control requests -------------------------------------------------------------------------------------


def control_event(kind: ControlType, *, by: str | None = None, note: str = "",
                  request_id: str | None = None) -> tuple[str, dict[str, Any]]:
    """The journal event (kind, payload) a control request becomes."""
    rid = request_id or new_id("req_")
    if kind == "review":
        return "note", {"type": "review", "by": by or "human", "note": note, "request_id": rid}
    if kind == "stop":
        return "note", {"type": "stop", "by": by or "human", "note": note, "request_id": rid}
    if kind == "resume":
        return "resume", {"source": "workflow", "by": by or "human", "note": note, "request_id": rid}
    raise ValueError(f"unknown control request {kind!r}")


def submit_control(settings: Any, run_id: str, kind: ControlType, *, by: str | None = None,
                   note: str = "") -> str:
    """Hand a request to the run: to its live supervisor (a request it picks up at once), or, when
    no supervisor holds the run, straight into its journal. Returns ``live`` or ``journal``."""
    if is_live(settings, run_id):
        write_request(settings, run_id, kind, by=by, note=note)
        return "live"
    ev_kind, payload = control_event(kind, by=by, note=note)
    with Journal(settings.journal_path(run_id), run_id) as j:
        j.append(ev_kind, payload)  # type: ignore[arg-type]
    return "journal"


# -- the controller ---------------------------------------------------------------------------------------


class WorkflowController:
    """The workflow side of one run (see the module docstring)."""

    def __init__(self, spec: WorkflowSpec, journal: Journal, surface: Any, policy: Policy, settings: Any,
                 run_id: str, *, pane_id: str | None = None, cwd: str | Path | None = None,
                 pool: VerifierPool | None = None, hub: NotificationHub | None = None,
                 wake: Callable[[], None] | None = None, confirm_timeout_s: float | None = None,
                 on_event: Callable[[Any], None] | None = None, control: RunControl | None = None,
                 agent: str | None = None, profile: str | None = None,
                 prefs: Mapping[str, str] | None = None) -> None:
        self.spec = spec
        self.journal = journal
        self.surface = surface
        self.base_policy = policy
        """The run's policy as given; :attr:`policy` is what the workflow obeys (its mode and preferences applied)."""
        self._agent = agent
        self._profile = profile
        """``--profile`` (None: ``$SUPERVISOR_PROFILE``, then the preferences, the agent, the default)."""
        self._prefs = dict(prefs) if prefs is not None else None
        """The preferences to use (None: the ledger's, as they stand when the run starts)."""
        self._wf: tuple[Policy, SupervisionChoice] | None = None
        self.settings = settings
        self.run_id = run_id
        self.pane_id = pane_id
        self._cwd = Path(cwd) if cwd else None
        self._own_pool = pool is None
        self.pool = pool or VerifierPool()
        self.wake = wake
        self.on_event = on_event
        """Called after every event the controller journals (the runner's printer, feeder)."""
        self.confirm_timeout_s = confirm_timeout_s or policy.timing.confirm_timeout_s
        self.hub = hub or NotificationHub(
            default_channels(settings, surface, display_ms=policy.pause.display_ms,
                             display=policy.pause.display_message),
            record=lambda payload: self.journal.append("notification", payload))
        self._results: queue.Queue[tuple[str, str | None, VerifierResult]] = queue.Queue()
        self._lock = threading.RLock()
        self._started = False
        self._in_flight: set[tuple[str, str]] = set()
        self._unconfirmed: dict[str, tuple[handoff_mod.HandoffInstruction, float]] = {}
        self.checkpoints: dict[str, CheckpointEvent] = {}
        self.tracker = CheckpointTracker()
        self._journaled: dict[str, dict[str, Any]] = {}
        """The run's ``supervision`` and ``preferences`` notes (a resumed run keeps its own)."""
        self.state: WorkflowState = initial_state(spec, run_id)
        for ev in journal.events():
            self._fold(ev)
        self._requests: list[dict[str, Any]] = []
        self._own_control = control is None
        self.control = control if control is not None else RunControl(settings, run_id)
        """The run's control channel: the pane runner's, or (used on its own) the controller's."""

    # -- state ------------------------------------------------------------------------------------------
    def _fold(self, ev: Any) -> None:
        fold(self.state, ev)
        if ev.kind == "note" and ev.payload.get("type") in ("supervision", "preferences"):
            self._journaled[ev.payload["type"]] = ev.payload
        elif ev.kind == "run_started" and self._agent is None and ev.payload.get("agent"):
            self._agent = str(ev.payload["agent"])
        if ev.kind == "checkpoint":
            try:
                cp = CheckpointEvent.model_validate({k: v for k, v in ev.payload.items()
                                                     if k in CheckpointEvent.model_fields and k != "body"}
                                                    | {"body": ev.payload.get("checkpoint")})
            except ValueError:
                return
            cp.checkpoint_id = cp.checkpoint_id or ev.event_id
            if not ev.payload.get("ignored"):
                self.checkpoints[cp.checkpoint_id] = cp
            self.tracker.remember(cp)

    def _append(self, kind: str, payload: dict[str, Any], *, event_id: str | None = None) -> Any:
        ev = self.journal.append(kind, payload, event_id=event_id)  # type: ignore[arg-type]
        self._fold(ev)
        if self.on_event is not None:
            try:
                self.on_event(ev)
            except Exception:  # noqa: BLE001 - a listener's bug must not stop the workflow (the event is journaled)
                log.exception("workflow event listener failed on %s", ev.kind)
        return ev

    # -- the mode and preferences the workflow obeys ------------------------------------------------------
    @property
    def policy(self) -> Policy:
        """The run's policy with its worker's supervision mode and the people's preferences applied."""
        return self._workflow_policy()[0]

    @property
    def supervision(self) -> SupervisionChoice:
        """The worker profile and supervision mode this run obeys, and why."""
        return self._workflow_policy()[1]

    @property
    def preferences(self) -> dict[str, str]:
        """The preferences this run's instructions use (a resumed run keeps those it started with)."""
        noted = self._journaled.get("preferences")
        if noted is not None:
            return {str(k): str(v) for k, v in (noted.get("values") or {}).items()}
        if self._prefs is None and "supervision" in self._journaled:
            self._prefs = {}  # the run started with none set: later ones are for later runs
        if self._prefs is None:
            from supervisor import ledger

            path = getattr(self.settings, "annotations_path", None)
            self._prefs = {k: a.text for k, a in ledger.prefs(path).items()} if path is not None else {}
        return self._prefs

    def _workflow_policy(self) -> tuple[Policy, SupervisionChoice]:
        """Chosen once, when first needed (by then the run's start, naming its agent, is journaled): the
        profile the run journaled if it has one (a resumed run), else by :func:`profiles.choose`."""
        if self._wf is None:
            if self._agent is None:  # an ACP run journals its start after making its controller
                started = next((e for e in self.journal.events() if e.kind == "run_started"), None)
                self._agent = str(started.payload.get("agent") or "") or None if started is not None else None
            prefs = self.preferences
            noted = (self._journaled.get("supervision") or {}).get("profile")
            requested = self._profile or os.environ.get("SUPERVISOR_PROFILE") or None
            if noted and noted in self.base_policy.supervision.profiles:
                policy, choice = profiles.workflow_policy(self.base_policy, self._agent, noted, prefs)
                was = self._journaled["supervision"]
                choice = profiles.SupervisionChoice(choice.profile, choice.mode, choice.provider, choice.model,
                                                    choice.trust, was.get("chosen_by") or "requested",
                                                    was.get("preference"))
            else:
                policy, choice = profiles.workflow_policy(self.base_policy, self._agent, requested, prefs)
            self._wf = (policy, choice)
        return self._wf

    def _note_supervision(self) -> None:
        """Journal, once per run, the profile and mode it obeys and the preferences it uses."""
        choice = self.supervision
        if "supervision" not in self._journaled:
            ignored = profiles.ignored_preferences(self.base_policy, self._agent, self.preferences)
            self._append("note", {"type": "supervision", **choice.to_dict(),
                                  **({"ignored_preferences": ignored} if ignored else {})})
        if "preferences" not in self._journaled and self.preferences:
            self._append("note", {"type": "preferences", "values": dict(self.preferences)})

    @property
    def cwd(self) -> Path:
        """Where verifiers run: the spec's workdir, else the pane's current path, else ours."""
        if self._cwd is not None:
            return self._cwd
        if self.surface is not None and self.pane_id:
            try:
                path = getattr(self.surface.pane_info(self.pane_id), "current_path", "")
                if path:
                    return Path(path)
            except Exception:  # noqa: BLE001 - an unreadable pane: verifiers run in our own cwd
                log.debug("pane %s's current path unreadable", self.pane_id, exc_info=True)
        return Path.cwd()

    @property
    def paused(self) -> bool:
        return self.state.paused

    @property
    def pause_reason(self) -> str | None:
        return self.state.pause_reason

    @property
    def next_action(self) -> str | None:
        return self.state.next_action

    @property
    def finished(self) -> bool:
        return self.state.finished

    @property
    def stop_requested(self) -> bool:
        return self.state.stop_requested

    def finish_allowed(self) -> bool:
        """True once the finish gate passed (verifiers, acceptance, review)."""
        return self.state.finished

    def busy(self) -> bool:
        """Verifications running or instructions unconfirmed (the runner should keep ticking)."""
        return bool(self.state.pending_verify) or not self._results.empty() or bool(self._unconfirmed)

    # -- hooks the runner calls -----------------------------------------------------------------------
    def on_observation(self, observation: Any, screen: Any = None) -> list[WorkflowDecision]:
        """New checkpoint blocks on this observation's screen -> decisions (already acted on)."""
        blocks: list[str] = list(getattr(observation, "checkpoint_blocks", None) or [])
        if screen is not None:
            text = f"{getattr(screen, 'scrollback', '') or ''}\n{getattr(screen, 'text', '') or ''}"
            for b in find_blocks(text):
                if b not in blocks:
                    blocks.append(b)
        with self._lock:
            out = self._start()
            if screen is not None:
                self._confirm(text)
            out += self._process(blocks, "screen")
            out += self._drain()
            return out

    def on_output(self, text: str, source: CheckpointSource = "output") -> list[WorkflowDecision]:
        """Checkpoint blocks in raw output (a transcript line, a control-mode chunk)."""
        with self._lock:
            out = self._start()
            out += self._process(find_blocks(text), source)
            out += self._drain()
            return out

    def agent_idle(self, trigger_id: str | None = None) -> list[WorkflowDecision]:
        """The runner saw the agent finish (idle after work) but the finish gate has not passed: if
        the plan is waiting on the agent (nothing verifying, no pause, no held finish), escalate once."""
        with self._lock:
            out = self._start()
            st = self.state
            if (st.finished or st.paused or st.hold is not None or self.busy() or st.awaiting_handoff
                    or st.idle_escalated_for == (st.last_checkpoint_id or "none")):
                return out
            return out + self._record_and_act(decide_idle(self.spec, st, self.policy, trigger_id))

    def tick(self) -> list[WorkflowDecision]:
        """Collect verifier results and control requests; call on the re-check timer."""
        with self._lock:
            out = self._start()
            if self._unconfirmed and self.surface is not None and self.pane_id:
                try:
                    self._confirm(handoff_mod.screen_text_of(self.surface, self.pane_id))
                except Exception:  # noqa: BLE001 - an unreadable pane confirms nothing
                    log.debug("pane %s unreadable while confirming a handoff", self.pane_id, exc_info=True)
                    self._confirm("")
            out += self._drain()
            return out

    def _confirm(self, screen_text: str) -> None:
        now = time.monotonic()
        for aid, (h, deadline) in list(self._unconfirmed.items()):
            st = handoff_mod.confirm_from_text(_JournalProxy(self), h, screen_text, expired=now >= deadline)
            if st != "delivered":
                del self._unconfirmed[aid]

    def close(self) -> None:
        if self._own_pool:
            self.pool.close(wait=False)
        self.hub.close()
        if self._own_control:
            self.control.close()

    def _waited(self) -> float | None:
        """Seconds since the pause being resumed began (None when the state does not know it)."""
        at = self.state.paused_at
        return None if at is None else round(max(0.0, time.time() - at), 3)

    def take_request(self, request: dict[str, Any]) -> None:
        """A review/stop/resume request the pane runner picked up; journaled on the next tick."""
        with self._lock:
            self._requests.append(request)

    # -- internals ----------------------------------------------------------------------------------------
    def _start(self) -> list[WorkflowDecision]:
        """Once per controller: finish what a previous supervisor of this run left half done."""
        if self._started:
            return []
        self._started = True
        self._note_supervision()
        out: list[WorkflowDecision] = []
        # 1. instructions whose intent was journaled but not their delivery: check the screen first
        for h in list(self.state.handoffs.values()):
            if not h.delivered and self.surface is not None and self.pane_id:
                inst = handoff_mod.HandoffInstruction(action_id=h.action_id, decision_id=h.decision_id,
                                                      run_id=self.run_id, pane_id=self.pane_id,
                                                      body=h.text.removesuffix("\n" + h.marker), marker=h.marker)
                handoff_mod.recover(self.surface, _JournalProxy(self), inst,
                                    confirm_timeout_s=self.confirm_timeout_s)
        # 2. instructions decided but never started
        for did, info in list(self.state.awaiting_handoff.items()):
            self._deliver(info["text"], info["kind"], did)
        # 3. verifications that never reported
        for cp_id, vids in list(self.state.pending_verify.items()):
            self._submit(cp_id, vids)
        # 4. checkpoints journaled but never decided, and those whose verifications all reported
        #    without the decision they lead to (killed between the last result and that decision)
        for cp_id, cp in self.checkpoints.items():
            kinds = self.state.decided.get(cp_id)
            verified_only = bool(kinds) and set(kinds) == {"verify"} and cp_id not in self.state.pending_verify
            if cp.body is not None and (not kinds or verified_only):
                out += self._decide(cp)
        return out

    def _process(self, blocks: list[str], source: CheckpointSource) -> list[WorkflowDecision]:
        out: list[WorkflowDecision] = []
        for raw in blocks:
            cp = self.tracker.admit(raw, source)
            if cp is None:
                continue
            eid = new_id()
            cp.checkpoint_id = eid
            payload = cp.model_dump(mode="json", exclude={"body"})
            payload["checkpoint"] = cp.body.model_dump(mode="json") if cp.body else None
            named = cp.body.run_id if cp.body is not None else None
            if named and named != self.run_id:
                # A checkpoint for another run (quoted, pasted, or planted in output): journaled, never acted on.
                payload["ignored"] = f"names another run ({named[:40]})"
                self._append("checkpoint", payload, event_id=eid)
                self._append("note", {"type": "checkpoint_ignored", "checkpoint_id": eid, "why": payload["ignored"]})
                continue
            self._append("checkpoint", payload, event_id=eid)
            if cp.body is None:
                continue
            if self.state.paused and cp.body.status != "blocked" and self.state.hold is None:
                self._append("resume", {"source": "workflow", "by": "agent", "waited_s": self._waited(),
                                        "note": f"agent reported {cp.body.status} (checkpoint {cp.body.checkpoint_seq})"})
            out += self._decide(cp)
        return out

    def _decide(self, cp: CheckpointEvent) -> list[WorkflowDecision]:
        results = dict(self.state.checkpoint_results.get(cp.checkpoint_id or "", {}))
        d = decide_checkpoint(cp, self.state, self.spec, results, self.policy)
        return self._record_and_act(d)

    def _record_and_act(self, d: WorkflowDecision) -> list[WorkflowDecision]:
        did = new_id()
        d.decision_id = did
        self._append("decision", d.model_dump(mode="json"), event_id=did)
        if d.kind == "verify" and d.trigger_id:
            self._submit(d.trigger_id, d.verifier_ids)
        elif d.kind in ("continue", "branch", "retry") and d.text:
            self._deliver(d.text, d.handoff_kind or "next_step", did)
        elif d.kind == "escalate":
            self._pause(d)
        elif d.kind == "finish":
            self._notify("finished", "workflow finished: acceptance holds", d.reason, None)
        return [d]

    def _deliver(self, text: str, kind: str, decision_id: str) -> None:
        if self.surface is None or not self.pane_id:
            return
        h = handoff_mod.new_handoff(text, decision_id=decision_id, run_id=self.run_id, pane_id=self.pane_id,
                                    kind=kind)
        # Delivery is synchronous (a paste); confirmation is not: later observations look for the
        # marker, so one pane's slow agent never holds up the supervision of others.
        state = handoff_mod.deliver(self.surface, _JournalProxy(self), h, confirm_timeout_s=0)
        if state == "delivered":
            self._unconfirmed[h.action_id] = (h, time.monotonic() + self.confirm_timeout_s)
        if state == "failed":
            self._notify("escalation", "could not deliver an instruction to the agent", clip(text, 200),
                         f"paste it yourself, then `supervisor runs resume {self.run_id}`")

    def _pause(self, d: WorkflowDecision) -> None:
        if not self.state.paused or self.state.pause_reason != d.reason:
            self._append("pause", {"source": "workflow", "pause_reason": d.reason, "next_action": d.next_action,
                                   "decision_id": d.decision_id, "trigger_id": d.trigger_id,
                                   "mode": self.policy.pause.mode, "hold": d.hold})
            kind = "review_needed" if d.hold == "review" else "escalation"
            self._notify(kind, d.reason, d.reason, d.next_action)

    def _notify(self, kind: str, title: str, body: str, next_action: str | None) -> None:
        self.hub.notify(Notification(run_id=self.run_id, pane_id=self.pane_id, kind=kind,  # type: ignore[arg-type]
                                     title=clip(title, 200), body=body, next_action=next_action))

    def _verifier(self, vid: str) -> Any:
        v = self.spec.verifier(vid)
        if v is None:
            v = next((a for a in acceptance_checks(self.spec) if a.id == vid), None)
        return v

    def _submit(self, cp_id: str, vids: list[str]) -> None:
        acc_ids = {a.id for a in acceptance_checks(self.spec)} | {a.id for a in self.spec.acceptance.required_evidence}
        cwd = self.cwd
        for vid in vids:
            if (cp_id, vid) in self._in_flight:
                continue
            v = self._verifier(vid)
            node = ACCEPTANCE_NODE if vid in acc_ids else self._node_of(vid)
            if v is None:
                self._results.put((cp_id, node, VerifierResult(verifier=vid, type="?", passed=False,
                                                               detail=f"verifier {vid} is not in the spec")))
                continue
            self._in_flight.add((cp_id, vid))

            def done(r: VerifierResult, cp_id: str = cp_id, node: str | None = node) -> None:
                self._results.put((cp_id, node, r))
                if self.wake is not None:
                    try:
                        self.wake()
                    except Exception:  # noqa: BLE001 - the result is queued; the next tick collects it
                        log.exception("waking the workflow after verifier %s failed", r.verifier)

            self.pool.submit(v, cwd, self.state, done)

    def _node_of(self, vid: str) -> str | None:
        for s in self.spec.steps:
            if any(v.id == vid for v in s.verify):
                return s.id
        return None

    def _drain(self) -> list[WorkflowDecision]:
        out: list[WorkflowDecision] = []
        self._controls()
        completed: list[str] = []
        while True:
            try:
                cp_id, node, r = self._results.get_nowait()
            except queue.Empty:
                break
            self._in_flight.discard((cp_id, r.verifier))
            r = r.model_copy(update={"verification_id": new_id("ver_"), "checkpoint_id": cp_id, "node": node})
            self._append("verification", r.model_dump(mode="json"))
            if cp_id not in self.state.pending_verify and cp_id not in completed:
                completed.append(cp_id)
        for cp_id in completed:
            cp = self.checkpoints.get(cp_id)
            if cp is not None and not self.state.finished:
                out += self._decide(cp)
        ai = decide_on_pause(self.spec, self.state, self.policy, time.time())
        if ai is not None:
            out += self._record_and_act(ai)
        if self.state.hold == "review" and not self.state.finished:
            d = decide_after_review(self.spec, self.state, self.policy)
            if d is not None:
                out += self._record_and_act(d)
                if self.state.paused:
                    self._append("resume", {"source": "workflow", "by": "review", "waited_s": self._waited(),
                                            "note": "finish after review"})
        return out

    def _controls(self) -> None:
        requests, self._requests = self._requests, []
        if self._own_control:
            requests += self.control.requests()
        for req in requests:
            rid = req.get("request_id")
            if req.get("type") == inbox.REQUEST:  # events another process hands the run (an oracle consultation)
                inbox.journal_request(self._append, req)
            elif rid and rid not in self.state.controls_done:
                try:
                    kind, payload = control_event(req.get("type", ""), by=req.get("by"), note=req.get("note", ""),
                                                  request_id=rid)
                except ValueError:
                    kind, payload = "note", {"type": "bad_request", "request_id": rid, "note": str(req)[:200]}
                self._append(kind, payload)
            if self._own_control:
                self.control.done(req)


class _JournalProxy:
    """The journal as handoff.py sees it, folding every event into the controller's state."""

    def __init__(self, ctl: WorkflowController) -> None:
        self._ctl = ctl

    def append(self, kind: str, payload: Any = None, **kw: Any) -> Any:
        return self._ctl._append(kind, payload if isinstance(payload, dict) else dict(payload or {}), **kw)


def describe(state: WorkflowState) -> dict[str, Any]:
    """A compact view of a run's workflow for ``status``/``runs show``."""
    return {
        "current_node": state.current_node,
        "nodes": {k: v.status for k, v in state.nodes.items()},
        "checkpoints": state.checkpoints,
        "malformed": state.malformed,
        "interventions": state.interventions,
        "paused": state.paused,
        "pause_reason": state.pause_reason,
        "next_action": state.next_action,
        "hold": state.hold,
        "finished": state.finished,
        "reviews": [r.by for r in state.reviews],
    }
