"""Gate cases: a workflow spec, a sequence of checkpoints and verifier results -> the workflow
decision on the last checkpoint (``supervisor.workflow.gate.decide_checkpoint``).

Earlier checkpoints are decided too, and the workflow state advances exactly as the live run's
does: each checkpoint, decision, delivered handoff and verifier result becomes the journal
event the controller would write and is folded with :func:`supervisor.workflow.state.fold`, the
runner's own fold (a verified step is marked done, ``goto`` moves the current node, a retry
counts, interventions count on delivery, holds and branches are kept). A case can therefore say
"second failure of the same step" without spelling out state, and grades the live code.
"""

from __future__ import annotations

from typing import Any

from evals.suites import GateCase, Suite
from supervisor.policy import Policy


def _event(raw_or_body: dict[str, Any], n: int) -> Any:
    from pydantic import ValidationError

    from supervisor.workflow.checkpoint import CheckpointBody, CheckpointEvent, checkpoint_key, parse_body

    if "raw" in raw_or_body:
        raw = str(raw_or_body["raw"])
        body, err = parse_body(raw)
    else:
        data = dict(raw_or_body)
        data.setdefault("checkpoint_seq", n)
        raw = "\n".join(f"{k}: {v}" for k, v in data.items())
        try:
            body, err = CheckpointBody.model_validate(data), None
        except ValidationError as exc:  # a malformed body is part of what cases test
            body, err = None, str(exc).splitlines()[0]
    return CheckpointEvent(checkpoint_id=f"ck{n}", checkpoint_key=checkpoint_key(raw, body), raw=raw, body=body,
                           parse_error=err)


def run_gate(spec_data: dict[str, Any], checkpoints: list[dict[str, Any]], verifier_results: list[dict[str, Any]],
             workflow_state: dict[str, Any], policy: Policy) -> Any:
    """Decide every checkpoint in order; return the decision on the last one."""
    from supervisor.models import Event
    from supervisor.workflow.gate import decide_checkpoint
    from supervisor.workflow.spec import WorkflowSpec
    from supervisor.workflow.state import VerifierResult, WorkflowState, fold

    spec = WorkflowSpec.model_validate(spec_data)
    state = WorkflowState.model_validate({"current_node": spec.steps[0].id, **workflow_state})
    seq = 0

    def journal(kind: str, payload: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        fold(state, Event(event_id=f"ev{seq}", run_id="gate-case", seq=seq, kind=kind, at=float(seq), payload=payload))

    decision = None
    last = len(checkpoints)
    for n, cp_data in enumerate(checkpoints, 1):
        cp = _event(cp_data, n)
        journal("checkpoint", {"checkpoint_id": cp.checkpoint_id, "parse_error": cp.parse_error,
                               "checkpoint": cp.body.model_dump(mode="json") if cp.body is not None else None})
        results: dict[str, VerifierResult] = {}
        for r in verifier_results:
            if int(r.get("checkpoint", last)) == n:
                vr = {k: v for k, v in r.items() if k != "checkpoint"}
                vr.setdefault("type", "command")
                results[vr["verifier"]] = VerifierResult.model_validate(vr | {"checkpoint_id": cp.checkpoint_id})
        decision = decide_checkpoint(cp, state, spec, results, policy)
        decision.decision_id = f"d{n}"
        journal("decision", {"decision": decision.model_dump(mode="json")})
        if decision.text and decision.handoff_kind:
            journal("action", {"action": {"action_id": f"a{n}", "decision_id": decision.decision_id,
                                          "kind": "handoff", "text": decision.text, "delivered": True}})
        for result in results.values():
            journal("verification", result.model_dump(mode="json"))
    return decision


def run_gate_case(suite: Suite, case: GateCase, policy: Policy) -> tuple[dict[str, Any], dict[str, Any]]:
    spec: Any = case.input.spec
    if case.input.spec_file is not None:
        import yaml

        spec = yaml.safe_load(suite.read_capture(case.input.spec_file))
    d = run_gate(spec, case.input.checkpoints, case.input.verifier_results, case.input.workflow_state, policy)
    actual = {"decision": d.kind, "step_id": d.node_id, "reason": d.reason, "text": d.text,
              "keys": list(d.keys or []), "approves": d.approves}
    expected = case.expected.model_dump(mode="json", include=case.expected.model_fields_set)
    return actual, expected
