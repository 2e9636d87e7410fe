"""`supervisor run --acp --spec SPEC`: an ACP agent held to an approved workflow spec, through the real
CLI and a scripted ACP agent subprocess. The first prompt gives the agent the checkpoint protocol
(with the run id) and the plan; its checkpoint blocks go to the workflow controller, whose
verifiers run on the files the agent wrote; each instruction (the next step, a retry with the
failing check's output) is the agent's next prompt; the finish waits for the human review the
spec asks for (`supervisor runs review`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.errors import EXIT_OK
from supervisor.workflow.demo import DEMO_SPEC as SPEC  # the plan `make demo` runs in tmux, here over ACP
from supervisor.workflow.spec import approve_spec_text
from tests.acp.helpers import (
    acp_run,
    agent_argv,
    agent_log,
    finish,
    journal,
    wait_for_event,
    write_agent_script,
)
from tests.conftest import run_cli

FAILING_CHECK = "import sys\nprint('FAIL: greeting should say hello, world')\nsys.exit(1)\n"
PASSING_CHECK = "print('ok: greeting says hello, world')\n"


@pytest.mark.slow
def test_a_spec_run_over_acp(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    work = tmp_path / "proj"
    work.mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(approve_spec_text(SPEC, "tests"))
    script, log = write_agent_script(tmp_path, [
        [{"write": {"path": "hello.py", "text": "print('hello, world')\n"}},
         {"checkpoint": {"status": "step_done", "current_node": "write", "summary": "wrote hello.py"}}],
        [{"write": {"path": "check.py", "text": FAILING_CHECK}},
         {"checkpoint": {"status": "step_done", "current_node": "test", "summary": "check written"}}],
        [{"write": {"path": "check.py", "text": PASSING_CHECK}},
         {"checkpoint": {"status": "step_done", "current_node": "test", "summary": "fixed the check"}}],
        [{"write": {"path": "README.md", "text": "Run hello.py.\n"}},
         {"checkpoint": {"status": "workflow_done", "current_node": "docs", "summary": "documented"}}],
    ])
    with acp_run(cli_env, work, agent_argv(script), "--spec", str(spec)) as proc:
        held = wait_for_event(sv_home, lambda e: e.kind == "pause" and e.payload.get("hold") == "review",
                              "the finish held for review", seconds=90)
        assert proc.poll() is None
        review = run_cli("runs", "review", held.run_id, "--by", "human", env=cli_env)
        assert review.returncode == 0, review.stderr
        code, out, err = finish(proc)
    assert code == EXIT_OK, (out, err)

    prompts = [r["text"] for r in agent_log(log) if r["event"] == "prompt"]
    assert len(prompts) == 4
    assert "<checkpoint>" in prompts[0] and f"run_id: {held.run_id}" in prompts[0] and "- write:" in prompts[0]
    assert all("[handoff " in p for p in prompts[1:])
    assert "FAIL: greeting should say hello, world" in prompts[2]  # the retry carries the failing output
    _, evs = journal(sv_home)
    started = next(e.payload for e in evs if e.kind == "run_started")
    assert started["spec_id"] and started["surface"] == "acp"
    checkpoints = [e.payload["checkpoint"]["status"] for e in evs if e.kind == "checkpoint"]
    assert checkpoints == ["step_done", "step_done", "step_done", "workflow_done"]
    handoffs = [e.payload for e in evs if e.kind == "action" and e.payload.get("kind") == "handoff"
                and e.payload.get("confirmed")]
    assert [h["handoff_kind"] for h in handoffs] == ["next_step", "retry", "next_step"]
    assert evs[-1].kind == "run_ended" and evs[-1].payload["outcome"] == "finished"
    assert (work / "README.md").exists()
