"""Run history from a real journal (no tmux): summarize, export, replay under another policy, postmortem;
the one summary behind `status` and `runs` (journals only)."""

from __future__ import annotations

import json
from pathlib import Path

from evals.replay import replay_run
from supervisor.history import export_run, list_runs, load_events, postmortem_markdown, summarize
from supervisor.journal import Journal
from supervisor.policy import Policy
from supervisor.settings import Settings
from supervisor.workflow.controller import WorkflowController
from supervisor.workflow.spec import parse_spec
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import SPEC3


def cp(seq: int, status: str, node: str) -> str:
    return f"<checkpoint>\ncheckpoint_seq: {seq}\nstatus: {status}\ncurrent_node: {node}\nsummary: s{seq}\n</checkpoint>"


def recorded_run(tmp_path: Path, home: Path) -> tuple[Settings, str]:
    settings = Settings(home=home).ensure()
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(SPEC3)
    spec = parse_spec(SPEC3)
    run_id = "run_hist"
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "hello.py").write_text("print('hello')\n")
    (proj / "check.py").write_text("import sys\nprint('FAIL: nope')\nsys.exit(1)\n")
    j = Journal(settings.journal_path(run_id), run_id)
    j.append("run_started", {"command": "agent", "agent": "claude"})
    j.append("note", {"type": "workflow", "spec_path": str(spec_path), "spec_name": spec.name})
    ctl = WorkflowController(spec, j, None, Policy(), settings, run_id, cwd=proj)

    def settle(n: int) -> None:
        retry_until(lambda: ctl.tick() is not None and sum(1 for e in j.events() if e.kind == "verification") >= n, 20)

    ctl.on_output(cp(1, "step_done", "write"))
    settle(1)
    ctl.on_output(cp(2, "step_done", "test"))
    settle(2)
    (proj / "check.py").write_text("print('ok')\n")
    ctl.on_output(cp(3, "step_done", "test"))
    settle(3)
    ctl.close()
    j.append("run_ended", {"outcome": "stopped"})
    j.close()
    return settings, run_id


def test_history_from_the_journal(tmp_path: Path, sv_home: Path) -> None:
    settings, run_id = recorded_run(tmp_path, sv_home)
    events, source = load_events(settings, run_id, prefer="journal")
    assert source == "journal"
    s = summarize(events, run_id, source)
    assert s.checkpoints == 3 and s.verifications == 3 and s.verifications_failed == 1
    assert s.workflow_decisions == {"verify": 3, "continue": 2, "retry": 1}
    assert s.nodes["write"] == "done" and s.nodes["test"] == "done" and s.nodes["docs"] == "active"
    assert s.outcome == "stopped" and s.spec_name == "greeting"
    lines = export_run(events).splitlines()
    assert len(lines) == len(events) and json.loads(lines[0])["kind"] == "run_started"
    same = replay_run(events, Policy(), observations=False)
    assert len(same.checkpoints) == 6 and all(r.divergence == "agree" for r in same.checkpoints)
    strict = replay_run(events, Policy.model_validate({"budgets": {"max_retries_per_node": 0}}), observations=False)
    assert [(r.recorded, r.replayed) for r in strict.checkpoints if r.divergence != "agree"] == [("retry", "escalate")]
    md = postmortem_markdown(events, run_id, source)
    assert md.startswith(f"# Postmortem: run {run_id}") and "FAIL: nope" in md and "| test | done |" in md


def test_history_reads_the_warehouse_when_it_can(tmp_path: Path, sv_home: Path) -> None:
    settings, run_id = recorded_run(tmp_path, sv_home)
    events, source = load_events(settings, run_id)
    assert source == "warehouse"
    jevents, _ = load_events(settings, run_id, prefer="journal")
    assert [e.event_id for e in events] == [e.event_id for e in jevents]
    assert [e.payload for e in events] == [e.payload for e in jevents]


def test_one_summary_for_status_and_runs(tmp_path: Path, sv_home: Path) -> None:
    settings, run_id = recorded_run(tmp_path, sv_home)
    j = Journal(settings.journal_path("run_live"), "run_live")
    j.append("run_started", {"command": ["claude"], "agent": "unknown", "pane_id": "%3", "policy_id": "pol_x"})
    j.append("observation", {"observation": {"state": "asking", "agent": "claude"}})
    j.append("pause", {"pause_reason": "dangerous", "next_action": "answer it", "pane_id": 7})
    j.close()
    runs = {r.run_id: r for r in list_runs(settings.journals_dir)}
    live = runs["run_live"]
    assert live.agent == "claude" and live.state == "asking" and live.paused and live.outcome is None
    assert live.next_action == "answer it" and live.pane_id == "%3" and live.policy_id == "pol_x"
    assert live.journal_path and not live.torn_tail and live.to_dict()["duration_s"] is None
    assert runs[run_id].outcome == "stopped" and runs[run_id].nodes["write"] == "done"
