"""A short workflow run for ``make demo``: a 3-step spec, the scripted checkpoint agent in tmux,
one failing verifier whose output goes back to the agent, a finish held for a human review
(given here on the human's behalf), and the run in the journal and the warehouse.

    from supervisor.workflow.demo import run_workflow_demo
    summary = run_workflow_demo(settings)     # returns a dict; prints nothing itself

``python -m supervisor.workflow.demo`` runs it and prints the summary.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from supervisor.ids import new_id
from supervisor.policy import Policy, baseline_policy
from supervisor.settings import Settings
from supervisor.workflow.controller import submit_control
from supervisor.workflow.spec import approve_spec_text

log = logging.getLogger(__name__)

DEMO_SPEC = """\
name: greeting-demo
goal: a greeting program with a passing check and a README
steps:
  - id: write
    objective: write hello.py that prints a greeting
    verify:
      - {type: artifact, path: hello.py, contains: hello}
  - id: test
    objective: make check.py pass
    verify:
      - {type: command, run: "python3 check.py", expect: pass, timeout_s: 30, id: check}
  - id: docs
    objective: document it in README.md
    verify:
      - {type: artifact, path: README.md, contains: hello.py}
acceptance:
  required_evidence:
    - {type: passed, verifier: check}
  forbidden_states: [failing_tests]
  must_review_by: human
"""

DEMO_SCRIPT: dict[str, Any] = {"intro": "I'll follow the plan and report checkpoints.", "turns": [
    {"work_s": 0.6, "say": "Writing hello.py.",
     "actions": [{"write": {"path": "hello.py", "text": "print('hello, world')\n"}}],
     "checkpoint": {"status": "step_done", "current_node": "write", "summary": "wrote hello.py",
                    "evidence": ["hello.py prints hello, world"]}},
    {"work_s": 0.6, "say": "Adding check.py.",
     "actions": [{"write": {"path": "check.py",
                            "text": "import sys\nprint('FAIL: greeting should end with !')\nsys.exit(1)\n"}}],
     "checkpoint": {"status": "step_done", "current_node": "test", "summary": "check.py written"}},
    {"work_s": 0.6, "say": "Fixing check.py after the supervisor's report.",
     "actions": [{"write": {"path": "check.py", "text": "print('ok')\n"}}],
     "checkpoint": {"status": "step_done", "current_node": "test", "summary": "check.py passes"}},
    {"work_s": 0.6, "say": "Writing the README.",
     "actions": [{"write": {"path": "README.md", "text": "Run `python3 hello.py`.\n"}}],
     "checkpoint": {"status": "workflow_done", "current_node": "docs", "summary": "all steps done"}},
]}


def run_workflow_demo(settings: Settings, *, workdir: Path | None = None, timeout_s: float = 90.0,
                      policy: Policy | None = None) -> dict[str, Any]:
    """Run the demo workflow and return a summary (run id, outcome, what happened, where to look)."""
    from supervisor.history import load_events, summarize
    from supervisor.surfaces.tmux import TmuxSurface
    from supervisor.workflow.live import supervise_pane

    settings = settings.ensure()
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="sv-workflow-demo-"))
    project = base / "project"
    project.mkdir(parents=True, exist_ok=True)
    spec_path = base / "greeting-demo.spec.yaml"
    spec_path.write_text(approve_spec_text(DEMO_SPEC, "make demo"), encoding="utf-8")
    script_path = base / "agent-script.yaml"
    script_path.write_text(yaml.safe_dump(DEMO_SCRIPT, sort_keys=False), encoding="utf-8")
    record = base / "agent-record.jsonl"
    surface = TmuxSurface(settings.tmux_socket)
    session = f"sv-wfdemo-{uuid.uuid4().hex[:6]}"
    from evals.agent import agent_command

    info = surface.new_session(session, agent_command(script_path, record, "--cwd", str(project)),
                               width=110, height=45, cwd=str(project))
    run_id = new_id("run_")
    pol = policy or baseline_policy()
    out: dict[str, Any] = {}

    def supervise() -> None:
        try:
            out["runner"] = supervise_pane(settings, info.pane_id, spec_path, policy=pol, run_id=run_id,
                                           cwd=project, timeout=timeout_s, surface=surface)
        except Exception as exc:  # noqa: BLE001 - reported in the summary
            out["error"] = f"{type(exc).__name__}: {exc}"

    t = threading.Thread(target=supervise, name="workflow-demo", daemon=True)
    started = time.time()
    t.start()
    reviewed = False
    try:
        while t.is_alive() and time.time() - started < timeout_s + 10:
            if not reviewed and _held_for_review(settings, run_id):
                submit_control(settings, run_id, "review", by="human", note="reviewed by the demo on your behalf")
                reviewed = True
            t.join(0.2)
    finally:
        try:
            surface.kill_session(session)
        except Exception:  # noqa: BLE001 - the demo's summary comes next either way
            log.debug("killing the demo session %s failed", session, exc_info=True)
    runner = out.get("runner")
    events, source = load_events(settings, run_id)
    s = summarize(events, run_id, source)
    return {
        "run_id": run_id,
        "outcome": getattr(runner, "outcome", None),
        "error": out.get("error"),
        "seconds": round(time.time() - started, 1),
        "steps": s.nodes,
        "checkpoints": s.checkpoints,
        "verifications": s.verifications,
        "verifications_failed": s.verifications_failed,
        "instructions_sent": s.handoffs,
        "workflow_decisions": s.workflow_decisions,
        "reviewed_by": s.reviews,
        "spec": str(spec_path),
        "agent_record": str(record),
        "project": str(project),
    }


def _held_for_review(settings: Settings, run_id: str) -> bool:
    from supervisor.journal import iter_events

    path = settings.journal_path(run_id)
    if not path.exists():
        return False
    return any(e.kind == "pause" and e.payload.get("hold") == "review" for e in iter_events(path))


def format_demo_summary(summary: dict[str, Any], ref: str | None = None) -> str:
    """The workflow demo in a few lines; ``ref`` names the run (default: its full id)."""
    lines = [f"workflow demo: run {ref or summary['run_id']} {summary['outcome'] or 'did not finish'} "
             f"in {summary['seconds']}s"]
    if summary.get("error"):
        lines.append(f"  error: {summary['error']}")
    lines.append("  steps: " + ", ".join(f"{k}={v}" for k, v in (summary.get("steps") or {}).items()))
    lines.append(f"  checkpoints {summary['checkpoints']}, verifications {summary['verifications']} "
                 f"({summary['verifications_failed']} failed -> retry with its output), "
                 f"instructions sent {summary['instructions_sent']}, reviewed by {', '.join(summary['reviewed_by'])}")
    return "\n".join(lines)


if __name__ == "__main__":
    res = run_workflow_demo(Settings())
    print(format_demo_summary(res))
    sys.exit(0 if res["outcome"] == "finished" else 1)
