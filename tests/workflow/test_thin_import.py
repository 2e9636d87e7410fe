"""`supervisor spec import`: a thin-supervisor spec converted, reviewed, approved and run here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evals.agent import agent_command
from tests.conftest import invoke_cli, run_cli
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import STARTED, journal_events, kinds, wf_decisions

# The spec of thin-supervisor 0.3.6's README ("Quick Start"), verbatim.
THIN_README_SPEC = """\
kind: linear_plan
id: my_feature
goal: implement feature X with tests
approval:
  required: true
  status: draft
finish_policy:
  require_all_steps_done: true
  require_verification_pass: true
policy:
  default_continue: true
  max_retries_per_node: 3

steps:
  - id: write_tests
    type: task
    objective: write failing tests for feature X
    verify:
      - type: artifact
        path: tests/test_feature_x.py
        exists: true

  - id: implement
    type: task
    objective: implement feature X until tests pass
    verify:
      - type: command
        run: pytest -q tests/test_feature_x.py
        expect: pass

  - id: final_check
    type: task
    objective: run full test suite
    verify:
      - type: command
        run: pytest -q
        expect: pass
"""

CONDITIONAL = """\
kind: conditional_workflow
id: triage
goal: fix or document
acceptance:
  risk_class: critical
  must_review_by: ""
  required_evidence: [fix.command1, "a screenshot"]
  require_clean_or_committed_repo: true
policy:
  max_retries_global: 5
nodes:
  - id: look
    type: decision
    objective: decide whether to fix or document
    options:
      - {id: fix, next: fix, label: fix the bug}
      - {id: doc, next: doc, when_hint: the bug is by design}
  - id: fix
    type: task
    objective: fix it
    depends_on: [look]
    verify:
      - {type: command, run: "true", expect: pass}
      - {type: git, check: dirty, expect: false}
  - id: doc
    type: task
    objective: document it
    verify:
      - {type: artifact, path: NOTES.md}
"""


def test_thin_spec_is_refused_with_the_import_command_as_the_fix(tmp_path: Path, sv_home: Path) -> None:
    thin = tmp_path / "my-plan.yaml"
    thin.write_text(THIN_README_SPEC)
    r = invoke_cli("spec", "validate", str(thin))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1, r.stderr
    assert "this is a thin-supervisor spec" in r.stderr and f"supervisor spec import {thin}" in r.stderr


def test_import_keeps_steps_and_verifiers_and_says_what_changed(tmp_path: Path, sv_home: Path) -> None:
    thin = tmp_path / "my-plan.yaml"
    thin.write_text(THIN_README_SPEC)
    r = invoke_cli("spec", "import", str(thin))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "my-plan.imported.yaml"
    assert f"wrote draft spec {out} (3 steps" in r.stdout
    assert "id: my_feature -> name: my_feature" in r.stdout
    assert "approval: draft there -> draft here" in r.stdout
    data = yaml.safe_load(out.read_text())
    source = yaml.safe_load(THIN_README_SPEC)
    assert data["name"] == "my_feature" and data["goal"] == source["goal"]
    assert [s["id"] for s in data["steps"]] == [s["id"] for s in source["steps"]]
    assert [s["objective"] for s in data["steps"]] == [s["objective"] for s in source["steps"]]
    assert [s["verify"] for s in data["steps"]] == [s["verify"] for s in source["steps"]]
    assert data["policy"]["max_retries_per_node"] == 3
    assert data["approval"] == {"status": "draft"}
    assert out.read_text().startswith("# Imported from"), "the changes are recorded in the file too"
    # a draft: validate says so, approve works, and then it validates as approved
    r = invoke_cli("spec", "validate", "--require-approved", str(out))
    assert r.returncode == 1 and "draft" in r.stdout
    assert invoke_cli("spec", "approve", str(out), "--by", "tester").returncode == 0
    r = invoke_cli("spec", "validate", "--require-approved", str(out))
    assert r.returncode == 0 and "approved" in r.stdout, r.stdout
    # a second import refuses to overwrite the first
    r = invoke_cli("spec", "import", str(thin))
    assert r.returncode == 2 and "already exists" in r.stderr


def test_conditional_workflow_decisions_git_and_acceptance(tmp_path: Path, sv_home: Path) -> None:
    thin = tmp_path / "triage.yaml"
    thin.write_text(CONDITIONAL)
    out = tmp_path / "here.yaml"
    imported = invoke_cli("spec", "import", str(thin), "-o", str(out))
    assert imported.returncode == 0, imported.stderr
    spec = json.loads(invoke_cli("spec", "show", "--json", str(out)).stdout)
    look, fix, doc = spec["steps"]
    assert look["kind"] == "decision"
    assert [(b["id"], b["next"], b["when_choice"]) for b in look["branches"]] == [("fix", "fix", "fix"),
                                                                                  ("doc", "doc", "doc")]
    assert look["branches"][1]["objective"] == "the bug is by design"
    assert fix["next"] == "end" and doc["next"] == "end", "a conditional node without next ended the plan there"
    assert fix["verify"][1]["check"] == "clean"
    acc = spec["acceptance"]
    assert acc["risk_class"] == "high" and acc["must_review_by"] is None
    assert acc["forbidden_states"] == ["uncommitted_changes"]
    assert acc["required_evidence"] == [{"id": "acceptance.passed1", "description": "", "type": "passed",
                                         "verifier": "fix.command1"}]
    for said in ("policy.max_retries_global: 5 dropped", "depends_on dropped", "risk_class: critical -> high",
                 "git check: dirty, expect: false -> check: clean", "\"a screenshot\" dropped"):
        assert said in imported.stdout and said in out.read_text(), said


def test_not_a_thin_spec_is_one_line(tmp_path: Path, sv_home: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: dag\nid: x\ngoal: y\n")
    r = invoke_cli("spec", "import", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "kind 'dag' is not a thin-supervisor plan" in r.stderr
    bad.write_text("kind: linear_plan\nid: x\ngoal: y\nsteps:\n  - id: a\n    type: task\n    objective: o\n"
                   "    verify:\n      - type: screenshot\n")
    r = invoke_cli("spec", "import", str(bad))
    assert r.returncode == 2 and "verifier type 'screenshot' is unknown" in r.stderr


@pytest.mark.slow
def test_readme_spec_runs_here_after_import(tmp_path: Path, tmux_socket: str, sv_home: Path) -> None:
    """thin-supervisor's README spec, imported and approved, supervises the scripted agent through
    its three steps with the same verifiers (an artifact, then pytest on the new test, then pytest
    on everything) and finishes: through the real CLI (`spec import`, `spec approve`, `run --spec`)."""
    project = tmp_path / "project"
    project.mkdir()
    thin = tmp_path / "my-plan.yaml"
    thin.write_text(THIN_README_SPEC)
    spec = tmp_path / "my-plan.imported.yaml"
    assert invoke_cli("spec", "import", str(thin)).returncode == 0
    assert invoke_cli("spec", "approve", str(spec), "--by", "tester").returncode == 0
    test_text = "from feature_x import feature\n\n\ndef test_feature():\n    assert feature() == 42\n"
    script = {"turns": [
        {"work_s": 0.2, "actions": [{"write": {"path": "tests/test_feature_x.py", "text": test_text}}],
         "checkpoint": {"status": "step_done", "current_node": "write_tests", "summary": "tests written"}},
        {"work_s": 0.2, "actions": [{"write": {"path": "feature_x.py", "text": "def feature():\n    return 42\n"}},
                                    {"write": {"path": "conftest.py", "text": ""}}],
         "checkpoint": {"status": "step_done", "current_node": "implement", "summary": "feature done"}},
        {"work_s": 0.2, "checkpoint": {"status": "workflow_done", "current_node": "final_check",
                                       "summary": "all tests pass"}},
    ]}
    script_path = tmp_path / "script.yaml"
    script_path.write_text(yaml.safe_dump(script))
    record = tmp_path / "agent.jsonl"
    STARTED.append(record)
    env = dict(os.environ, SUPERVISOR_HOME=str(sv_home), SUPERVISOR_TMUX_SOCKET=tmux_socket, PYTHONUNBUFFERED="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the verifiers' `pytest`
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"timing": {"recheck_s": 0.5, "settle_ms": 80, "confirm_timeout_s": 5}}))
    env["SUPERVISOR_POLICY"] = str(policy)
    log = tmp_path / "run.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--spec", str(spec), "--session", "thin",
                                 "--", *agent_command(script_path, record, "--cwd", str(project))],
                                env=env, cwd=project, stdout=fh, stderr=subprocess.STDOUT)
    try:
        assert proc.wait(180) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    run_id = retry_until(lambda: next(iter(p.stem for p in (sv_home / "journals").glob("*.jsonl")), None), 10)
    evs = journal_events(sv_home, run_id)
    verified = [(v.get("node"), v.get("verifier"), v.get("passed")) for v in kinds(evs, "verification")]
    assert ("write_tests", "write_tests.artifact1", True) in verified, verified
    assert ("implement", "implement.command1", True) in verified, verified
    assert ("final_check", "final_check.command1", True) in verified, verified
    assert [d["kind"] for d in wf_decisions(evs)][-1] == "finish"
    assert kinds(evs, "run_ended")[-1]["outcome"] == "finished"
    sup = [n for n in kinds(evs, "note") if n.get("type") == "supervision"]
    assert [(n["profile"], n["mode"]) for n in sup] == [("default", "strict_verifier")], "the run journals its mode"
    r = run_cli("runs", "show", run_id, env=env)
    assert r.returncode == 0 and "finished" in r.stdout
