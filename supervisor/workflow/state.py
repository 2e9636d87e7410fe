"""Workflow state: where a run is in its plan, derived from the journal alone.

:func:`fold` applies one journal event to a :class:`WorkflowState`; replaying a run's journal
through it rebuilds the state exactly, which is how a supervisor killed with SIGKILL resumes,
and how ``runs replay`` re-evaluates a recorded run. Decisions carry their effect on the plan
explicitly (``node_id``, ``goto``, ``mark_done``...), so folding needs no judgment.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from supervisor.models import Decision, Event

NodeStatus = Literal["pending", "active", "verifying", "done", "failed"]
HandoffKind = Literal["next_step", "retry", "branch", "unblock"]


class VerifierResult(BaseModel):
    """One verifier run. Journaled as a ``verification`` event."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    verification_id: str | None = None
    verifier: str
    """The verifier's id in the spec."""
    type: str
    """command | artifact | git | workflow | passed."""
    node: str | None = None
    """The step it belongs to (``acceptance`` for the finish contract)."""
    checkpoint_id: str | None = None
    """The checkpoint whose verify decision started it."""
    passed: bool
    detail: str = ""
    """One line: why it passed or failed."""
    output: str = ""
    """Captured output (commands), truncated and redacted."""
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    cwd: str | None = None


class WorkflowDecision(Decision):
    """A :class:`~supervisor.models.Decision` plus its explicit effect on the plan."""

    node_id: str | None = None
    """The node the decision is about."""
    goto: str | None = None
    """The node the agent is handed next (continue/branch)."""
    mark_done: bool = False
    """``node_id`` is done (verified)."""
    verifier_ids: list[str] = Field(default_factory=list)
    """For ``verify``: the verifiers to run."""
    handoff_kind: HandoffKind | None = None
    """Set when ``text`` is an instruction to paste into the pane."""
    hold: Literal["review", "acceptance"] | None = None
    """For an escalation that holds the finish: what it waits for."""
    branch_id: str | None = None


class NodeState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: NodeStatus = "pending"
    retries: int = 0
    last_failure: str | None = None


class Review(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by: str
    at: float
    note: str = ""
    review_id: str | None = None


class PendingHandoff(BaseModel):
    """A handoff whose intent is journaled; ``delivered`` once it reached the pane."""

    model_config = ConfigDict(extra="forbid")

    action_id: str
    decision_id: str | None = None
    text: str
    marker: str
    delivered: bool = False
    confirmed: bool | None = None


class WorkflowState(BaseModel):
    """Everything the gate needs about the run so far."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = ""
    current_node: str | None = None
    nodes: dict[str, NodeState] = Field(default_factory=dict)
    path: list[str] = Field(default_factory=list)
    """Nodes handed to the agent, in order."""
    branches_taken: dict[str, str] = Field(default_factory=dict)
    """Decision node -> branch id."""
    results: dict[str, VerifierResult] = Field(default_factory=dict)
    """Latest result of each verifier."""
    checkpoint_results: dict[str, dict[str, VerifierResult]] = Field(default_factory=dict)
    """Checkpoint id -> verifier id -> result, for results started by that checkpoint."""
    pending_verify: dict[str, list[str]] = Field(default_factory=dict)
    """Checkpoint id -> verifiers asked for and not yet reported."""
    checkpoints: int = 0
    malformed: int = 0
    last_checkpoint_id: str | None = None
    last_status: str | None = None
    interventions: int = 0
    """Workflow handoffs delivered (budget: ``policy.budgets.max_interventions``)."""
    handoffs: dict[str, PendingHandoff] = Field(default_factory=dict)
    reviews: list[Review] = Field(default_factory=list)
    hold: Literal["review", "acceptance"] | None = None
    hold_checkpoint_id: str | None = None
    paused: bool = False
    pause_reason: str | None = None
    next_action: str | None = None
    paused_at: float | None = None
    pause_trigger_id: str | None = None
    """The checkpoint whose decision paused the run."""
    idle_escalated_for: str | None = None
    """The last checkpoint id when the agent was last escalated for going idle without reporting."""
    ai_tried_pause_at: float | None = None
    """``paused_at`` of the pause the agent was last asked to resolve itself (notify_then_ai)."""
    ai_tries: int = 0
    """How many times the agent was asked to resolve that pause itself."""
    ai_last_try_at: float | None = None
    """When it was last asked."""
    finished: bool = False
    stop_requested: bool = False
    decided: dict[str, list[str]] = Field(default_factory=dict)
    """Checkpoint id -> kinds of workflow decisions already made for it."""
    awaiting_handoff: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Decision id -> {text, kind} of instructions decided but whose intent is not journaled yet."""
    controls_done: list[str] = Field(default_factory=list)
    """Ids of control requests (review, stop, resume) already journaled."""

    def node(self, node_id: str) -> NodeState:
        return self.nodes.setdefault(node_id, NodeState())

    def reviewed_by(self, who: str) -> bool:
        return any(r.by == who for r in self.reviews)


def initial_state(spec: Any, run_id: str = "") -> WorkflowState:
    st = WorkflowState(run_id=run_id)
    for s in spec.steps:
        st.nodes[s.id] = NodeState()
    first = spec.first_node().id
    st.current_node = first
    st.nodes[first].status = "active"
    st.path.append(first)
    return st


def fold(state: WorkflowState, event: Event) -> WorkflowState:
    """Apply one journal event (mutates and returns ``state``). Unknown events are ignored."""
    p = event.payload
    kind = event.kind
    if kind == "checkpoint":
        if p.get("ignored"):  # a checkpoint for another run: recorded, never part of this one
            return state
        state.checkpoints += 1
        if p.get("parse_error"):
            state.malformed += 1
        else:
            state.last_checkpoint_id = p.get("checkpoint_id") or event.event_id
            body = p.get("checkpoint") or {}
            state.last_status = body.get("status")
    elif kind == "decision":
        d = p.get("decision", p)
        if d.get("source") != "workflow":
            return state
        _fold_decision(state, d)
        if d.get("rule") == "workflow:notify_then_ai":
            state.ai_last_try_at = event.at
    elif kind == "verification":
        try:
            r = VerifierResult.model_validate({k: v for k, v in p.items() if k in VerifierResult.model_fields})
        except ValueError:
            return state
        state.results[r.verifier] = r
        if r.checkpoint_id:
            state.checkpoint_results.setdefault(r.checkpoint_id, {})[r.verifier] = r
            pend = state.pending_verify.get(r.checkpoint_id)
            if pend and r.verifier in pend:
                pend.remove(r.verifier)
                if not pend:
                    del state.pending_verify[r.checkpoint_id]
    elif kind == "action":
        a = p.get("action", p)
        if a.get("kind") != "handoff" or not a.get("action_id"):
            return state
        state.awaiting_handoff.pop(a.get("decision_id") or "", None)
        h = state.handoffs.get(a["action_id"])
        if h is None:
            h = PendingHandoff(action_id=a["action_id"], decision_id=a.get("decision_id"), text=a.get("text") or "",
                               marker=p.get("marker") or "")
            state.handoffs[a["action_id"]] = h
        if a.get("delivered") and not h.delivered:
            h.delivered = True
            state.interventions += 1
        if a.get("confirmed") is not None:
            h.confirmed = a.get("confirmed")
    if kind in ("note", "resume", "pause") and p.get("request_id"):
        state.controls_done.append(p["request_id"])
    if kind == "note" and p.get("type") == "review":
        state.reviews.append(Review(by=p.get("by", "human"), at=event.at, note=p.get("note", ""),
                                    review_id=p.get("review_id")))
    elif kind == "note" and p.get("type") == "stop":
        state.stop_requested = True
    elif kind == "pause" and p.get("source") == "workflow":
        state.paused = True
        state.pause_reason = p.get("pause_reason")
        state.next_action = p.get("next_action")
        state.paused_at = event.at
        state.pause_trigger_id = p.get("trigger_id")
    elif kind == "resume" and p.get("source", "workflow") == "workflow":
        state.paused = False
        state.pause_reason = None
        state.next_action = None
    return state


def _fold_decision(state: WorkflowState, d: dict[str, Any]) -> None:
    trig = d.get("trigger_id")
    kind = d.get("kind")
    node_id = d.get("node_id")
    if trig:
        state.decided.setdefault(trig, []).append(str(kind))
    if kind == "verify" and trig:
        vids = [v for v in d.get("verifier_ids") or [] if v]
        have = state.checkpoint_results.get(trig, {})
        state.pending_verify[trig] = [v for v in vids if v not in have]
        if not state.pending_verify[trig]:
            del state.pending_verify[trig]
        if node_id and node_id in state.nodes:
            state.nodes[node_id].status = "verifying"
    if d.get("mark_done") and node_id:
        state.node(node_id).status = "done"
    if kind == "retry" and node_id:
        ns = state.node(node_id)
        ns.retries += 1
        ns.status = "active"
        ns.last_failure = d.get("reason")
    if kind == "branch" and node_id and d.get("branch_id"):
        state.branches_taken[node_id] = d["branch_id"]
    goto = d.get("goto")
    if goto and goto in state.nodes:
        state.current_node = goto
        if state.nodes[goto].status != "done":
            state.nodes[goto].status = "active"
        state.path.append(goto)
    if kind == "escalate" and d.get("hold"):
        state.hold = d["hold"]
        state.hold_checkpoint_id = trig
    if kind == "finish":
        state.finished = True
        state.hold = None
    if d.get("rule") == "workflow:idle":
        state.idle_escalated_for = state.last_checkpoint_id or "none"
    if d.get("rule") == "workflow:notify_then_ai":
        if state.ai_tried_pause_at != state.paused_at:
            state.ai_tries = 0
        state.ai_tried_pause_at = state.paused_at
        state.ai_tries += 1
    if d.get("handoff_kind") and d.get("text") and d.get("decision_id"):
        state.awaiting_handoff[d["decision_id"]] = {"text": d["text"], "kind": d["handoff_kind"]}
