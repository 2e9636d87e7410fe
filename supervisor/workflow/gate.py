"""The workflow gate: a pure function from (checkpoint, state, spec, verifier results, policy)
to a decision, and the acceptance/finish gate.

Pure on purpose: a recorded run replays to the same decisions under the same policy, and to
comparable ones under a candidate policy (``runs replay``). Nothing here runs a command or
reads a clock; verifier results come in as data.

The agent's word is never proof: ``step_done`` leads to ``verify``, and only verifier results
the supervisor produced itself move the plan forward or let the run finish.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from string import Formatter
from typing import Any

from supervisor.models import DecisionKind
from supervisor.policy import Policy
from supervisor.workflow.checkpoint import CheckpointEvent
from supervisor.workflow.spec import (
    CommandVerifier,
    GitVerifier,
    PassedVerifier,
    Step,
    WorkflowSpec,
)
from supervisor.workflow.state import VerifierResult, WorkflowDecision, WorkflowState

ACCEPTANCE_NODE = "acceptance"
FORBIDDEN_UNCOMMITTED = "forbidden.uncommitted_changes"
OUTPUT_CHARS_IN_RETRY = 2000


def render(template: str, **values: Any) -> str:
    """Fill a policy template; unknown placeholders are left as they are (templates are data,
    and a typo in one must not crash a run)."""
    out = []
    for literal, name, spec, conv in Formatter().parse(template):
        out.append(literal)
        if name is None:
            continue
        if name in values:
            v = values[name]
            out.append(format(v, spec) if spec else str(v))
        else:
            out.append("{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}")
    return "".join(out)


def _max_retries(spec: WorkflowSpec, policy: Policy) -> int:
    if spec.policy.max_retries_per_node is not None:
        return spec.policy.max_retries_per_node
    return policy.budgets.max_retries_per_node


def _mk(kind: DecisionKind, reason: str, cp: CheckpointEvent | None, policy: Policy, **kw: Any) -> WorkflowDecision:
    return WorkflowDecision(kind=kind, reason=reason, trigger_id=cp.checkpoint_id if cp else kw.pop("trigger", None),
                            source="workflow", policy_id=policy.policy_id, rule=f"workflow:{kw.pop('rule', kind)}",
                            **kw)


def _resume_cmd(state: WorkflowState) -> str:
    return f"supervisor runs resume {state.run_id or 'RUN_ID'}"


def _failure_text(failed: list[VerifierResult]) -> str:
    parts = []
    for r in failed:
        head = f"[{r.verifier}] {r.detail}".strip()
        body = r.output.strip()
        if len(body) > OUTPUT_CHARS_IN_RETRY:
            body = "…" + body[-OUTPUT_CHARS_IN_RETRY:]
        parts.append(head + ("\n" + body if body else ""))
    return "\n\n".join(parts)


# -- acceptance / finish gate -------------------------------------------------------------------------


@dataclass
class FinishGate:
    """Whether the run may finish, and if not, what holds it."""

    allowed: bool
    reasons: list[str] = field(default_factory=list)
    """Why not (empty when allowed)."""
    to_verify: list[str] = field(default_factory=list)
    """Acceptance checks that have not run yet for this finish attempt."""
    failed: list[VerifierResult] = field(default_factory=list)
    """Acceptance checks that ran and failed."""
    hold: str | None = None
    """``review`` when only a review is missing."""


def required_reviewer(spec: WorkflowSpec) -> str | None:
    """Who must review before the finish: ``must_review_by``, or a human for ``risk_class: high``."""
    acc = spec.acceptance
    return acc.must_review_by or ("human" if acc.risk_class == "high" else None)


def acceptance_checks(spec: WorkflowSpec) -> list[Any]:
    """Verifiers the supervisor runs itself before finishing: the required evidence that needs
    running, and one git check per forbidden state that needs one."""
    checks: list[Any] = [v for v in spec.acceptance.required_evidence if not isinstance(v, PassedVerifier)]
    if "uncommitted_changes" in spec.acceptance.forbidden_states:
        checks.append(GitVerifier(id=FORBIDDEN_UNCOMMITTED, check="clean", min=1,
                                  description="forbidden state: uncommitted changes"))
    return checks


def skipped_nodes(spec: WorkflowSpec, state: WorkflowState) -> set[str]:
    """Nodes only reachable through branches that were not taken."""
    skipped: set[str] = set()
    for node_id, taken in state.branches_taken.items():
        node = spec.node(node_id)
        if node is None:
            continue
        for b in node.branches:
            if b.id != taken and b.next not in state.path:
                skipped.add(b.next)
    return skipped


def finish_gate(spec: WorkflowSpec, state: WorkflowState, results: dict[str, VerifierResult]) -> FinishGate:
    """The acceptance contract over the state (with the current node counted as done) and the
    acceptance results of this finish attempt (``results``, keyed by verifier id)."""
    reasons: list[str] = []
    skipped = skipped_nodes(spec, state)
    if spec.finish_policy.require_all_steps_done:
        undone = [s.id for s in spec.steps if s.id not in skipped and state.node(s.id).status != "done"]
        if undone:
            reasons.append(f"steps not done: {', '.join(undone)}")
    latest = dict(state.results)
    if spec.finish_policy.require_verification_pass:
        bad = sorted(vid for vid, r in latest.items() if not r.passed and r.node != ACCEPTANCE_NODE)
        if bad:
            reasons.append(f"verifiers whose last result failed: {', '.join(bad)}")
    for v in spec.acceptance.required_evidence:
        if isinstance(v, PassedVerifier):
            r = latest.get(v.verifier)
            if r is None or not r.passed:
                reasons.append(f"required evidence missing: verifier {v.verifier} has not passed")
    forbidden = spec.acceptance.forbidden_states
    if "failing_tests" in forbidden:
        failing = sorted(vid for vid, r in latest.items()
                         if not r.passed and isinstance(spec.verifier(vid), CommandVerifier)
                         and spec.verifier(vid).is_test)
        if failing:
            reasons.append(f"forbidden state failing_tests: {', '.join(failing)}")
    if "unverified_steps" in forbidden:
        unverified = [s.id for s in spec.steps if s.id not in skipped and not s.verify and s.kind == "step"]
        if unverified:
            reasons.append(f"forbidden state unverified_steps: {', '.join(unverified)} have no verifiers")
    if "blocked" in forbidden and state.paused:
        reasons.append("forbidden state blocked: the run is paused")
    to_verify: list[str] = []
    failed: list[VerifierResult] = []
    for v in acceptance_checks(spec):
        r = results.get(v.id)
        if r is None:
            to_verify.append(v.id)
        elif not r.passed:
            failed.append(r)
            label = "forbidden state uncommitted_changes" if v.id == FORBIDDEN_UNCOMMITTED else f"evidence {v.id}"
            reasons.append(f"{label} failed: {r.detail}")
    if reasons or to_verify:
        return FinishGate(False, reasons, to_verify, failed)
    who = required_reviewer(spec)
    if who and not state.reviewed_by(who):
        return FinishGate(False, [f"waiting for a review by {who}"], hold="review")
    return FinishGate(True)


# -- the checkpoint decision ----------------------------------------------------------------------------


def _choose_branch(node: Step, cp: CheckpointEvent, state: WorkflowState,
                   results: dict[str, VerifierResult]) -> Any:
    actions = " ".join(cp.body.candidate_next_actions if cp.body else []).lower()
    for b in node.branches:
        if b.when_verifier:
            r = results.get(b.when_verifier) or state.results.get(b.when_verifier)
            if r is not None and r.passed == (b.when_result == "pass"):
                return b
        if b.when_choice and b.when_choice.lower() in actions:
            return b
    return next((b for b in node.branches if b.default), None)


def decide_checkpoint(checkpoint: CheckpointEvent, workflow_state: WorkflowState, spec: WorkflowSpec,
                      verifier_results: dict[str, VerifierResult], policy: Policy) -> WorkflowDecision:
    """What to do about one checkpoint: ``continue | verify | retry | branch | escalate | finish``
    (or ``wait`` for a malformed block). ``verifier_results`` are the results produced for this
    checkpoint so far; every decision's ``trigger_id`` is the checkpoint's event id."""
    cp, st = checkpoint, workflow_state
    if cp.body is None:
        return _mk("wait", f"malformed checkpoint ignored: {cp.parse_error}", cp, policy, rule="malformed")
    body = cp.body
    if st.finished:
        return _mk("wait", "the workflow already finished", cp, policy, rule="after_finish")
    node = spec.node(body.current_node) or spec.node(st.current_node)
    node_id = node.id if node else None

    if body.status == "blocked" or (body.question_for_supervisor and body.status == "working"):
        what = "; ".join(x for x in [body.summary, ("needs: " + ", ".join(body.needs)) if body.needs else "",
                                     ("asks: " + body.question_for_supervisor) if body.question_for_supervisor
                                     else ""] if x)
        return _mk("escalate", f"agent {'blocked' if body.status == 'blocked' else 'asks a question'}"
                   f" at {node_id or '?'}: {what}".strip(), cp, policy, node_id=node_id, rule="blocked",
                   next_action=f"answer the agent in its pane, then `{_resume_cmd(st)}`")
    if body.status == "working":
        return _mk("continue", f"agent working on {node_id or '?'}", cp, policy, node_id=node_id,
                   rule="working")
    # A step_done/workflow_done for a node the plan does not have is not evidence about the
    # current node: the agent went off plan (or mislabels its work), so a human looks.
    if node is None or (body.current_node and spec.node(body.current_node) is None):
        return _mk("escalate", f"checkpoint names unknown node {body.current_node!r}", cp, policy,
                   rule="unknown_node", next_action=f"check the spec and the agent, then `{_resume_cmd(st)}`")

    max_retries = _max_retries(spec, policy)
    # 1. the node's own verifiers
    missing = [v.id for v in node.verify if v.id not in verifier_results]
    if missing:
        return _mk("verify", f"{body.status} at {node.id}: verifying {', '.join(missing)}", cp, policy,
                   node_id=node.id, verifier_ids=missing, rule="verify_step")
    failed = [verifier_results[v.id] for v in node.verify if not verifier_results[v.id].passed]
    if failed:
        return _retry_or_escalate(cp, st, spec, policy, node, failed, max_retries)

    # 2. where next
    if st.node(node.id).status == "done" and st.current_node != node.id and body.status == "step_done":
        # The agent re-reported a step we already moved past: nothing new to hand over.
        return _mk("continue", f"{node.id} verified again; the agent is on {st.current_node}", cp, policy,
                   node_id=node.id, mark_done=True, rule="already_done")
    if node.kind == "decision":
        b = _choose_branch(node, cp, st, verifier_results)
        if b is None:
            return _mk("escalate", f"decision node {node.id}: no branch matches", cp, policy, node_id=node.id,
                       mark_done=True, rule="no_branch",
                       next_action=f"tell the agent which branch to take, then `{_resume_cmd(st)}`")
        target = spec.node(b.next)
        if target is not None:
            text = render(policy.templates.branch, branch=b.id, objective=b.objective or target.objective,
                          step_id=target.id, node_id=node.id, run_id=st.run_id)
            return _budgeted(_mk("branch", f"{node.id} verified; branch {b.id} -> {target.id}", cp, policy,
                                 node_id=node.id, mark_done=True, goto=target.id, branch_id=b.id, text=text,
                                 handoff_kind="branch", rule="branch"), st, policy, cp)
        nxt = None
    else:
        nxt = spec.next_node(node.id) if node.next != "end" else None
    if nxt is not None and body.status == "step_done":
        if st.node(nxt.id).status == "done":
            # The agent reported a step we already moved past: nothing new to hand over.
            return _mk("continue", f"{node.id} verified again; {nxt.id} already done", cp, policy,
                       node_id=node.id, mark_done=True, rule="already_done")
        if not spec.policy.default_continue:
            return _mk("escalate", f"{node.id} verified; the spec asks a human before {nxt.id}", cp, policy,
                       node_id=node.id, mark_done=True, rule="ask_before_continue",
                       next_action=f"hand the agent step {nxt.id}, then `{_resume_cmd(st)}`")
        text = render(policy.templates.next_step, step_id=nxt.id, objective=nxt.objective,
                      done_step=node.id, run_id=st.run_id, goal=spec.goal)
        return _budgeted(_mk("continue", f"{node.id} verified; next step {nxt.id}", cp, policy, node_id=node.id,
                             mark_done=True, goto=nxt.id, text=text, handoff_kind="next_step",
                             rule="next_step"), st, policy, cp)

    # 3. the end of the plan (or the agent says the workflow is done): the finish gate
    sim = st.model_copy(deep=True)
    sim.node(node.id).status = "done"
    for r in verifier_results.values():
        sim.results[r.verifier] = r
    acc_results = {vid: r for vid, r in verifier_results.items() if r.node == ACCEPTANCE_NODE}
    gate = finish_gate(spec, sim, acc_results)
    if gate.allowed:
        return _mk("finish", f"workflow done at {node.id}; acceptance holds", cp, policy, node_id=node.id,
                   mark_done=True, rule="finish")
    plan_reasons = [] if gate.hold == "review" else [
        r for r in gate.reasons if not r.startswith(("evidence", "forbidden state uncommitted"))]
    if plan_reasons:
        skipped = skipped_nodes(spec, sim)
        undone = next((s for s in spec.steps if s.id not in skipped and sim.node(s.id).status != "done"), None)
        if undone is not None and spec.policy.default_continue:
            text = render(policy.templates.next_step, step_id=undone.id, objective=undone.objective,
                          done_step=node.id, run_id=st.run_id, goal=spec.goal)
            return _budgeted(_mk("continue", f"{node.id} verified but the plan is not done; next step {undone.id}",
                                 cp, policy, node_id=node.id, mark_done=True, goto=undone.id, text=text,
                                 handoff_kind="next_step", rule="next_undone_step"), st, policy, cp)
        return _mk("escalate", "finish refused: " + "; ".join(plan_reasons), cp, policy, node_id=node.id,
                   mark_done=True, hold="acceptance", rule="finish_refused",
                   next_action=f"look at the run (`supervisor runs show {st.run_id or 'RUN_ID'}`), fix it, "
                               f"then `{_resume_cmd(st)}`")
    if gate.failed:
        return _retry_or_escalate(cp, st, spec, policy, node, gate.failed, max_retries, acceptance=True)
    if gate.to_verify:
        return _mk("verify", f"finish candidate: checking acceptance {', '.join(gate.to_verify)}", cp, policy,
                   node_id=node.id, verifier_ids=gate.to_verify, rule="verify_acceptance")
    who = required_reviewer(spec)
    return _mk("escalate", f"finish held: acceptance holds, waiting for a review by {who}", cp, policy,
               node_id=node.id, mark_done=True, hold="review", rule="hold_for_review",
               next_action=f"review the work, then `supervisor runs review {st.run_id or 'RUN_ID'} --by {who}`")


def _retry_or_escalate(cp: CheckpointEvent, st: WorkflowState, spec: WorkflowSpec, policy: Policy, node: Step,
                       failed: list[VerifierResult], max_retries: int, *, acceptance: bool = False) -> WorkflowDecision:
    names = ", ".join(r.verifier for r in failed)
    what = "acceptance" if acceptance else f"step {node.id}"
    retries = st.node(node.id).retries
    if retries >= max_retries:
        return _mk("escalate", f"{what} failed verification ({names}) after {retries} "
                   f"{'retry' if retries == 1 else 'retries'}", cp, policy,
                   node_id=node.id, rule="retries_exhausted",
                   next_action=f"look at the failure (`supervisor runs show {st.run_id or 'RUN_ID'}`), help the "
                               f"agent, then `{_resume_cmd(st)}`")
    output = _failure_text(failed)
    template = policy.templates.retry
    if "{output}" not in template:  # the agent must see what failed, whatever the template says
        template = template.rstrip() + "\n\nVerifier output:\n{output}"
    text = render(template, step_id=node.id, objective=node.objective, output=output,
                  verifier=names, attempt=retries + 1, max_retries=max_retries, run_id=st.run_id)
    return _budgeted(_mk("retry", f"{what} failed verification ({names}); retry {retries + 1}/{max_retries}",
                         cp, policy, node_id=node.id, text=text, handoff_kind="retry", rule="retry"), st, policy, cp)


def _budgeted(d: WorkflowDecision, st: WorkflowState, policy: Policy, cp: CheckpointEvent) -> WorkflowDecision:
    """Turn an instruction into an escalation once the intervention budget is spent."""
    if st.interventions >= policy.budgets.max_interventions:
        return _mk("escalate", f"intervention budget spent ({st.interventions}); would have: {d.reason}", cp,
                   policy, node_id=d.node_id, rule="budget",
                   next_action=f"take over the run, or raise budgets.max_interventions; then `{_resume_cmd(st)}`")
    return d


def decide_after_review(spec: WorkflowSpec, state: WorkflowState, policy: Policy) -> WorkflowDecision | None:
    """Once a review arrives for a finish held for review: finish (or None if still held)."""
    if state.finished or state.hold != "review":
        return None
    acc = {vid: r for vid, r in state.results.items() if r.node == ACCEPTANCE_NODE}
    gate = finish_gate(spec, state, acc)
    if gate.allowed:
        return _mk("finish", "review received; acceptance holds", None, policy, trigger=state.hold_checkpoint_id,
                   node_id=state.current_node, rule="finish_after_review")
    return None


def decide_on_pause(spec: WorkflowSpec, state: WorkflowState, policy: Policy, now: float) -> WorkflowDecision | None:
    """``pause.mode: notify_then_ai``: once a pause has waited ``ai_after_s`` with no human, hand the
    agent ``templates.unblock``; again ``ai_after_s`` after each try while the pause lasts, up to
    ``max_auto_interventions`` tries per pause (and within the intervention budget). ``now`` is an
    input, so this stays pure."""
    tries = state.ai_tries if state.ai_tried_pause_at == state.paused_at else 0
    since = state.ai_last_try_at if tries and state.ai_last_try_at is not None else state.paused_at
    if (policy.pause.mode != "notify_then_ai" or not state.paused or state.hold is not None or state.finished
            or since is None or now - since < policy.pause.ai_after_s
            or tries >= policy.pause.max_auto_interventions
            or state.interventions >= policy.budgets.max_interventions):
        return None
    node = spec.node(state.current_node)
    text = render(policy.templates.unblock, step_id=node.id if node else "?", objective=node.objective if node else "",
                  reason=state.pause_reason or "", run_id=state.run_id)
    waited = "the pause" if not tries else "the agent's last try"
    return _mk("continue", f"no human answered {waited} in {policy.pause.ai_after_s:g}s; the agent tries itself "
                           f"(try {tries + 1} of {policy.pause.max_auto_interventions})",
               None, policy, trigger=state.pause_trigger_id, node_id=node.id if node else None, text=text,
               handoff_kind="unblock", rule="notify_then_ai")


def decide_idle(spec: WorkflowSpec, state: WorkflowState, policy: Policy, trigger_id: str | None) -> WorkflowDecision:
    """The agent looks finished (idle after work) while the plan waits on it: it stopped without
    reporting. Escalate once per checkpoint, with what to do."""
    run = state.run_id or "RUN_ID"
    node = state.current_node or "?"
    if state.checkpoints == 0:
        reason = ("the agent stopped without reporting any checkpoint (does it know the checkpoint protocol? "
                  "`supervisor skill install`)")
    else:
        reason = f"the agent is idle at step {node} after checkpoint status {state.last_status!r} without reporting it done"
    return _mk("escalate", reason, None, policy, trigger=trigger_id, node_id=state.current_node, rule="idle",
               next_action=f"tell the agent to continue with step {node} and report checkpoints, then "
                           f"`supervisor runs resume {run}` (or `supervisor runs stop {run}`)")
