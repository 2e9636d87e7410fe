"""Gate cases: a workflow spec, a sequence of checkpoints and verifier results -> the workflow
decision on the last checkpoint (``supervisor.workflow.gate.decide_checkpoint``).

Earlier checkpoints are decided too, and their decisions advance the workflow state the way
the runner does (a verified step is marked done, ``goto`` moves the current node, a retry
counts), so a case can say "second failure of the same step" without spelling out state.
"""

from __future__ import annotations

from typing import Any

from evals.suites import GateCase, Suite
from supervisor.policy import Policy


def _event(raw_or_body: dict[str, Any], n: int) -> Any:
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
        except Exception as exc:  # a malformed body is part of what cases test
            body, err = None, str(exc).splitlines()[0]
    return CheckpointEvent(checkpoint_id=f"ck{n}", checkpoint_key=checkpoint_key(raw, body), raw=raw, body=body,
                           parse_error=err)


def run_gate(spec_data: dict[str, Any], checkpoints: list[dict[str, Any]], verifier_results: list[dict[str, Any]],
             workflow_state: dict[str, Any], policy: Policy) -> Any:
    """Decide every checkpoint in order; return the decision on the last one."""
    from supervisor.workflow.gate import decide_checkpoint
    from supervisor.workflow.spec import WorkflowSpec
    from supervisor.workflow.state import VerifierResult, WorkflowState

    spec = WorkflowSpec.model_validate(spec_data)
    state = WorkflowState.model_validate({"current_node": spec.steps[0].id, **workflow_state})
    decision = None
    last = len(checkpoints)
    for n, cp_data in enumerate(checkpoints, 1):
        cp = _event(cp_data, n)
        results = {}
        for r in verifier_results:
            if int(r.get("checkpoint", last)) == n:
                vr = {k: v for k, v in r.items() if k != "checkpoint"}
                vr.setdefault("type", "command")
                results[vr["verifier"]] = VerifierResult.model_validate(vr)
        decision = decide_checkpoint(cp, state, spec, results, policy)
        _advance(state, decision, results)
    return decision


def _advance(state: Any, d: Any, results: dict[str, Any]) -> None:
    for vid, r in results.items():
        state.results[vid] = r
    if d.node_id and d.mark_done:
        state.node(d.node_id).status = "done"
    if d.kind == "retry" and d.node_id:
        state.node(d.node_id).retries += 1
    if d.goto:
        state.current_node = d.goto
        state.path.append(d.goto)
    if d.kind in ("retry", "continue", "branch") and d.text:
        state.interventions += 1
    if d.kind == "finish":
        state.finished = True


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
