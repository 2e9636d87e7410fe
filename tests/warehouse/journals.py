"""Journals for the warehouse tests: runs with every kind of row the typed tables hold."""

from __future__ import annotations

from supervisor.journal import Journal
from supervisor.settings import Settings


def write_run(settings: Settings, run_id: str, *, prompts: int = 3, at: float = 1_700_000_000.0) -> Journal:
    """A run with every kind of row the typed tables hold, a pause answered by a human, and one
    line that is not an event."""
    j = Journal(settings.journal_path(run_id), run_id, fsync=False)
    t = at
    j.append("run_started", {"command": ["claude"], "pane_id": "%1", "agent": "claude", "policy_id": "pol_a",
                             "host": "h1"}, at=t)
    for i in range(prompts):
        t += 1
        o = j.append("observation", {
            "observation": {"screen_hash": f"{run_id}-h{i % 2}", "state": "asking", "agent": "claude",
                            "prompt": {"kind": "tool_permission", "question": f"Run step {i}?",
                                       "risk": {"level": "none"}, "signature": f"sig{i}"}},
            "pane_id": "%1", "screen": {"text": f"{run_id} screen {i % 2}", "width": 80, "height": 24}}, at=t)
        d = j.append("decision", {"decision": {"kind": "answer", "keys": ["1"], "approves": True, "reason": "ok",
                                               "trigger_id": o.event_id, "rule": "allow"}}, at=t + 0.1)
        j.append("action", {"action": {"decision_id": d.event_id, "kind": "keys", "keys": ["1"], "delivered": True}},
                 at=t + 0.2)
        j.append("shadow_decision", {"shadow_policy_id": "pol_b", "decision": {"kind": "escalate",
                                                                              "trigger_id": o.event_id}}, at=t + 0.1)
    j.append("checkpoint", {"checkpoint": {"checkpoint_seq": 1, "status": "done", "current_node": "tests"}}, at=t + 1)
    j.append("verification", {"verifier": "pytest", "node": "tests", "passed": True, "output": "ok"}, at=t + 2)
    esc = j.append("decision", {"decision": {"kind": "escalate", "reason": "dangerous", "rule": "rm"}}, at=t + 3)
    j.append("pause", {"pause_reason": "dangerous command", "decision_id": esc.event_id}, at=t + 3.1)
    j.append("notification", {"channel": "desktop", "title": "paused", "body": "rm -rf", "ok": True}, at=t + 3.2)
    j.append("resume", {"by": "human", "waited_s": 4.5, "human_keys": ["n"], "selected": "No"}, at=t + 7.6)
    j.append("friction", {"kind": "repeated_prompt", "detail": "same prompt twice", "seconds_lost": 2.5}, at=t + 8)
    j.append("run_ended", {"outcome": "finished", "exit_code": 0}, at=t + 9)
    with open(settings.journal_path(run_id), "a", encoding="utf-8") as fh:
        fh.write('{"event_id": 7, "not": "an event"}\n')
    return j
