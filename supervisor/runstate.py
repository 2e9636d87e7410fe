"""The run-state fold: what a run's journal means for its state, defined once.

The live runner changes its state only by journaling events and folding them here
(:meth:`RunFold.apply`), so a supervisor restarted on a journal rebuilds exactly the state the
killed one had (pause, strikes, cooldown, budgets, answered prompt instances, pending
confirmations, turns, tasks), and a replay of the journal under the recording policy sees at
each decision exactly the :class:`~supervisor.models.RunState` the live run decided with.
Shadow policies and counterfactual replays, whose decisions were never acted on, fold their
own decisions with :meth:`RunFold.simulate` (as if each answer had been sent and taken).

Prompt instances: a prompt has an identity beyond its signature: the agent, and where it sits
on the pane. Once answered, an instance is never answered again; it *closes* when the agent
shows progress (busy, another prompt, or the same prompt asked again below a copy of the
answered one that is still on screen, as an appending agent asks it anew) or when it has been
off the screen for :data:`DISMISS_GRACE_S`. A dialog that is redrawn once or twice while it
dismisses (even through a blank frame, even pushed into tmux's history by a screen clear) is
therefore the same instance, and a genuinely new identical prompt after progress is a new one.

Everything here is pure: no I/O, no clock (times come from the events).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from supervisor.decide import counts_as_work
from supervisor.ids import new_id
from supervisor.models import Decision, Event, Observation, Prompt, RunState

DISMISS_GRACE_S = 1.0
"""How long an answered prompt must stay off the screen (with no other sign of progress) before
it counts as gone: a dialog that redraws while it dismisses comes back within this."""

KEEP_INSTANCES = 64
"""Closed prompt instances kept (the oldest are dropped)."""

InstanceStatus = Literal["open", "sending", "pending", "taken", "not_taken", "unknown"]
"""A prompt instance: seen, not answered; keys being sent; answered, waiting for it to go; gone
after our answer; still there after the confirmation timeout; keys journaled as being sent but
the supervisor died before it knew whether they arrived."""


CHOSEN_MARKS = " ✔✓"
"""What an agent appends to the option it took while the dialog dismisses."""


def prompt_face(prompt: Prompt) -> str:
    """A prompt's identity without the decorations of a dismissing redraw: kind, question, subject
    and option labels (each without a trailing chosen-mark), hashed."""
    parts = [prompt.kind, " ".join(prompt.question.split()), prompt.risk.subject or "",
             *(o.label.rstrip(CHOSEN_MARKS) for o in prompt.options)]
    return "fce_" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


@dataclass
class PromptInstance:
    """One prompt instance (see the module docstring)."""

    instance_id: str
    signature: str
    agent: str
    first: int | None
    """Absolute first row (history size + screen row), when known."""
    last: int | None
    seen_at: float
    status: InstanceStatus = "open"
    answers: int = 0
    """Keys sent to it (an answer, then at most one retry)."""
    sent_at: float | None = None
    decision_id: str | None = None
    action_id: str | None = None
    last_live_at: float = 0.0
    absent_since: float | None = None
    closed: bool = False
    face: str = ""
    """:func:`prompt_face`: a dialog redrawn as it dismisses (its chosen option marked ``✔``) has
    another signature but the same face."""


@dataclass
class TaskState:
    """A task handed to the agent (``--task``, ``supervisor runs task``)."""

    task_id: str
    text: str
    source: str
    status: Literal["queued", "delivering", "started", "finished", "failed"] = "queued"
    queued_at: float = 0.0
    started_at: float | None = None


@dataclass
class RunFold:
    """A run's state, folded from its journal events."""

    state: RunState = field(default_factory=RunState)
    instances: dict[str, PromptInstance] = field(default_factory=dict)
    live_instance: str | None = None
    """The instance live on the last observed screen (None: no live prompt)."""
    last_obs: Observation | None = None
    pending_actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Actions journaled as intent whose outcome is not journaled yet (unknown after a crash)."""
    paused_at: float | None = None
    pause_signature: str | None = None
    pause_kind: str | None = None
    """``prompt`` or ``blocker``: what the pause is about."""
    turn: int = 1
    turn_started_at: float = 0.0
    turn_prompts: int = 0
    turn_answered: int = 0
    turn_escalated: int = 0
    tasks: list[TaskState] = field(default_factory=list)
    run_task: bool = False
    """The run was started with a task: it ends when its tasks are done."""
    human_until: float = 0.0
    """Until then a human is at the keyboard (noticed on an observation; friction once per stretch)."""
    human_where: str | None = None
    """Where the human's keys went: ``prompt`` (hands off: decide waits) or ``input box``."""
    ended: bool = False
    started: bool = False
    recheck_s: float = 5.0
    """The acting policy's ``timing.recheck_s`` (finish confirmations are spaced by it)."""

    # -- building ---------------------------------------------------------------------------------
    @classmethod
    def from_events(cls, events: list[Event], run_id: str = "", *, recheck_s: float = 5.0) -> RunFold:
        fold = cls(state=RunState(run_id=run_id), recheck_s=recheck_s)
        for ev in events:
            fold.apply(ev)
        return fold

    @property
    def current_task(self) -> TaskState | None:
        return next((t for t in self.tasks if t.status in ("delivering", "started")), None)

    @property
    def queued_tasks(self) -> list[TaskState]:
        return [t for t in self.tasks if t.status == "queued"]

    def instance(self, instance_id: str | None) -> PromptInstance | None:
        return self.instances.get(instance_id) if instance_id else None

    @property
    def awaiting_confirmation(self) -> list[PromptInstance]:
        """Answered instances not yet known to have gone (or not taken)."""
        return [i for i in self.instances.values() if i.status in ("pending", "unknown", "sending")]

    # -- matching a live prompt to an instance (pure, used by the runner before journaling) ------------
    def match_instance(self, signature: str, *, first: int | None = None, again: bool = False,
                       face: str = "") -> str | None:
        """The open instance this live prompt is, or None for a new one: same signature (kind,
        question, options), not closed, and not the same prompt asked anew below it. Asked anew
        means: it starts below the instance's last row (absolute rows) *and* a copy of it is still
        on the screen above (``again``): an appending agent asking again. (A TUI that clears the
        screen pushes the old rows into tmux's history, so absolute rows alone would take a redrawn
        dialog for a new one; the copy that stays above is what tells.) The agent is not compared:
        one pane runs one agent, and the classifier's guess of it may flicker on a mixed screen."""
        newest = sorted(self.instances.values(), key=lambda i: i.seen_at, reverse=True)
        for inst in newest:
            if inst.closed or inst.signature != signature:
                continue
            if again and first is not None and inst.last is not None and first > inst.last:
                continue
            return inst.instance_id
        if again or not face:
            return None
        # A prompt we answered, redrawn while it dismisses with its options decorated (Claude Code
        # marks the chosen one ``✔``): the same instance, not a new prompt to answer or escalate.
        for inst in newest:
            if (not inst.closed and inst.answers > 0 and inst.status in ("sending", "pending", "unknown")
                    and inst.face == face):
                return inst.instance_id
        return None

    # -- the fold ---------------------------------------------------------------------------------------
    def apply(self, ev: Event) -> None:
        """Fold one journal event."""
        handler = getattr(self, f"_on_{ev.kind}", None)
        if handler is not None:
            handler(ev, ev.payload)

    def _on_run_started(self, ev: Event, p: dict[str, Any]) -> None:
        rs = self.state
        rs.run_id = ev.run_id
        if not self.started:
            rs.started_at = rs.now = rs.last_output_at = ev.at
            self.turn_started_at = ev.at
            self.started = True
        self.run_task = bool(p.get("task"))

    def _on_run_ended(self, ev: Event, p: dict[str, Any]) -> None:
        self.ended = True

    def _on_observation(self, ev: Event, p: dict[str, Any]) -> None:
        rs = self.state
        now = float(p.get("now", ev.at))
        rs.now = now
        if p.get("last_output_at") is not None:
            rs.last_output_at = float(p["last_output_at"])
        try:
            obs = Observation.model_validate(p.get("observation") or {})
        except ValueError:
            obs = None
        self.last_obs = obs
        human = p.get("human") or None
        if human:
            self.human_until = float(human.get("until") or now)
            self.human_where = human.get("where")
            if human.get("hands_off_until") is not None:
                rs.human_active_until = float(human["hands_off_until"])
            rs.idle_streak = 0
        live = p.get("live_prompt") or None
        live_id = live.get("instance_id") if live else None
        if live and live_id and live_id not in self.instances:
            self.instances[live_id] = PromptInstance(
                instance_id=live_id, signature=str(live.get("signature") or ""), agent=str(live.get("agent") or ""),
                first=live.get("first"), last=live.get("last"), seen_at=now, last_live_at=now,
                face=str(live.get("face") or ""))
            self.turn_prompts += 1
        state = obs.state if obs is not None else None
        for inst in self.instances.values():
            if inst.closed:
                continue
            if inst.instance_id == live_id:
                inst.last_live_at, inst.absent_since = now, None
                if live is not None:
                    inst.first, inst.last = live.get("first"), live.get("last")
                continue
            progress = state in ("busy", "exited") or (live is not None and live.get("signature") != inst.signature)
            anew = live is not None and live.get("signature") == inst.signature  # asked again below it
            if progress or anew:
                inst.closed = True
                continue
            if inst.absent_since is None:
                inst.absent_since = now
            if now - inst.absent_since >= DISMISS_GRACE_S:
                inst.closed = True
        self.live_instance = live_id
        self._prune()

    def _prune(self) -> None:
        closed = [i for i in self.instances.values() if i.closed]
        if len(closed) > KEEP_INSTANCES:
            for inst in sorted(closed, key=lambda i: i.seen_at)[:len(closed) - KEEP_INSTANCES]:
                del self.instances[inst.instance_id]

    def _on_decision(self, ev: Event, p: dict[str, Any]) -> None:
        if p.get("source") == "workflow" or "decision" not in p:
            return  # the workflow controller's decisions have their own fold
        try:
            d = Decision.model_validate(p["decision"])
        except ValueError:
            return
        obs = self.last_obs
        if obs is None:
            return
        advance(self.state, obs, d, float(p.get("now", ev.at)), self.recheck_s)

    def _on_action(self, ev: Event, p: dict[str, Any]) -> None:
        aid = p.get("action_id")
        inst = self.instance(p.get("instance_id"))
        task = next((t for t in self.tasks if t.task_id == p.get("task_id")), None)
        if p.get("confirmed") is not None:
            self.pending_actions.pop(aid or "", None)
            if inst is not None:
                if p["confirmed"]:
                    inst.status, inst.closed = "taken", True
                    self.state.answers_to_same_prompt = 0  # strikes count answers that did not take
                else:
                    inst.status = "not_taken"
            if task is not None and p.get("phase") == "submit":
                if p["confirmed"]:
                    task.status, task.started_at = "started", ev.at
                    self.turn_started_at = ev.at
                else:
                    task.status = "failed"
            return
        if p.get("outcome") == "unknown":
            self.pending_actions.pop(aid or "", None)
            if inst is not None:  # it may have arrived: counted as an answer (at most once, and one retry)
                inst.status = "unknown"
                inst.sent_at = inst.sent_at or ev.at
                inst.answers += 1
                count_answer(self.state, inst.signature, ev.at)
            return
        if p.get("error"):
            self.pending_actions.pop(aid or "", None)
            if inst is not None and inst.status == "sending":
                inst.status = "not_taken" if inst.answers else "open"
            if task is not None:
                task.status = "failed"
            return
        if not p.get("delivered"):
            if aid:
                self.pending_actions[aid] = {**p, "at": ev.at}
            if inst is not None:
                inst.status = "sending"
                inst.decision_id = p.get("decision_id")
                inst.action_id = aid
            if task is not None and task.status == "queued":
                task.status = "delivering"
            return
        # delivered
        self.pending_actions.pop(aid or "", None)
        if inst is not None:
            inst.status = "pending"
            inst.answers += 1
            inst.sent_at = ev.at
            self.turn_answered += 1
            count_answer(self.state, inst.signature, ev.at)
        elif p.get("kind") == "exit_agent" or (p.get("kind") == "send_keys" and p.get("signature")):
            count_answer(self.state, p.get("signature"), ev.at)

    def _on_friction(self, ev: Event, p: dict[str, Any]) -> None:
        if p.get("cooldown_until") is not None:
            self.state.cooldown_until = float(p["cooldown_until"])

    def _on_pause(self, ev: Event, p: dict[str, Any]) -> None:
        if p.get("source") == "workflow":
            return
        rs = self.state
        rs.paused = True
        rs.pause_reason = p.get("pause_reason")
        rs.escalated_signature = p.get("signature")
        self.paused_at = ev.at
        self.pause_signature = p.get("signature")
        self.pause_kind = "blocker" if p.get("blocker") else "prompt"
        self.turn_escalated += 1

    def _on_resume(self, ev: Event, p: dict[str, Any]) -> None:
        if p.get("source") == "workflow":
            return
        rs = self.state
        rs.paused, rs.pause_reason, rs.escalated_signature = False, None, None
        self.paused_at = self.pause_signature = self.pause_kind = None

    def _on_task(self, ev: Event, p: dict[str, Any]) -> None:
        tid = str(p.get("task_id") or "")
        task = next((t for t in self.tasks if t.task_id == tid), None)
        status = p.get("status")
        if task is None:
            if status != "queued":
                return
            self.tasks.append(TaskState(task_id=tid, text=str(p.get("text") or ""), source=str(p.get("source") or ""),
                                        queued_at=ev.at))
            return
        if status in ("finished", "failed"):
            task.status = status

    def _on_turn_finished(self, ev: Event, p: dict[str, Any]) -> None:
        start_next_turn(self.state)
        self.turn = int(p.get("turn", self.turn)) + 1
        self.turn_started_at = ev.at
        self.turn_prompts = self.turn_answered = self.turn_escalated = 0
        tid = p.get("task_id")
        for t in self.tasks:
            if t.task_id == tid and t.status in ("started", "delivering"):
                t.status = "finished"

    # -- counterfactual decisions (shadows, replay under another policy) ------------------------------
    def simulate(self, obs: Observation, decision: Decision, now: float, recheck_s: float,
                 live: dict[str, Any] | None) -> None:
        """Fold a decision that was never acted on, as if acting on it had worked: an answer is sent
        once per prompt instance (and taken once the prompt goes), an escalation pauses until the
        screen no longer asks or blocks."""
        rs = self.state
        rs.now = now
        inst = self.instance(live.get("instance_id")) if live else None
        if decision.kind == "answer" and inst is not None and inst.answers == 0:
            inst.answers, inst.status, inst.sent_at = 1, "pending", now
            count_answer(self.state, inst.signature, now)
        elif decision.kind == "escalate" and not (rs.paused and rs.escalated_signature == decision.signature):
            note_escalation(rs, decision)
        clear_pause_if_resolved(rs, obs)
        for i in self.instances.values():
            if i.closed and i.status == "pending":
                i.status = "taken"
                rs.answers_to_same_prompt = 0
        advance(rs, obs, decision, now, recheck_s)


def new_instance_id() -> str:
    return new_id("pin_")


def idle_spaced(rs: RunState, now: float, recheck_s: float) -> bool:
    """Whether an idle observation at ``now`` counts as a new finish confirmation: the first one
    does, a later one only ``recheck_s`` after the last counted one (two redraws 0.1 s apart are
    one look, not two)."""
    return rs.idle_confirmed_at is None or now - rs.idle_confirmed_at >= recheck_s


def count_answer(rs: RunState, signature: str | None, at: float) -> None:
    """Keys answering the prompt ``signature`` went out at ``at``: one more strike when it is the
    same prompt as the last answer (else the count starts again), one more intervention."""
    if signature is not None and signature == rs.last_prompt_signature:
        rs.answers_to_same_prompt += 1
    else:
        rs.last_prompt_signature = signature
        rs.answers_to_same_prompt = 1
    rs.last_answer_at = at
    rs.interventions += 1


def start_next_turn(rs: RunState) -> None:
    """A turn finished and the run goes on: the next turn must see work and idle again before it
    counts as finished."""
    rs.finished = False
    rs.saw_work = False
    rs.idle_streak = 0
    rs.idle_confirmed_at = None


def note_escalation(rs: RunState, decision: Decision) -> None:
    rs.paused = True
    rs.pause_reason = decision.reason
    rs.escalated_signature = decision.signature


def clear_pause_if_resolved(rs: RunState, obs: Observation) -> bool:
    """A paused run resumes once nothing asks or blocks any more; returns True when it did."""
    if rs.paused and obs.state not in ("asking", "blocked"):
        rs.paused, rs.pause_reason, rs.escalated_signature = False, None, None
        return True
    return False


def advance(rs: RunState, obs: Observation, decision: Decision, now: float, recheck_s: float) -> None:
    """Fold one observation and its decision into the run state (decide saw the state before)."""
    rs.now = now
    if obs.state == "idle":
        if idle_spaced(rs, now, recheck_s):
            rs.idle_streak += 1
            rs.idle_confirmed_at = now
    else:
        rs.idle_streak = 0
        rs.idle_confirmed_at = None
    if counts_as_work(obs):  # busy, or asking a tool/edit prompt: not a trust dialog or first-run menu
        rs.saw_work = True
    if obs.state == "busy":
        if rs.busy_since is None:
            rs.busy_since = now
    else:
        rs.busy_since = None
    if decision.rule == "stall":
        rs.stalls += 1
    if decision.kind == "finish" and obs.state != "exited":
        rs.finished = True
    rs.last_state = obs.state
