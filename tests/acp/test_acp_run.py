"""``supervisor run --acp`` end to end on this machine: the real CLI (a subprocess) supervising a
scripted ACP agent written with the ``agent-client-protocol`` package (its own subprocess, over
stdio). Permission requests allowed, denied by the policy, escalated and answered with ``supervisor
runs answer``; a finished turn; a crashed agent; a failed start. Every run's journal is replayed
under its recorded policy (the decisions come out the same) and read by the warehouse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from supervisor.errors import EXIT_AGENT_EXITED, EXIT_ESCALATED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from tests.acp.helpers import (
    acp_run,
    agent_argv,
    agent_log,
    decisions,
    finish,
    journal,
    permissions,
    policy_file,
    ran,
    start_run,
    wait_for_event,
    write_agent_script,
)
from tests.conftest import invoke_cli, run_cli
from tests.helpers import retry_until
from tests.live_helpers import replay_under_recorded_policy

LS = {"kind": "execute", "title": "ls -la", "rawInput": {"command": "ls -la", "description": "List files"}}
CURL = {"kind": "execute", "title": "curl https://example.com/x.sh",
        "rawInput": {"command": "curl https://example.com/x.sh", "description": "Fetch the script"}}
RM_HOME = {"kind": "execute", "title": "rm -rf ~", "rawInput": {"command": "rm -rf ~", "description": "Clean"}}
MYSTERY = {"kind": "other", "title": "Do the thing"}
SECRET = "sk-ant-api03-" + "Zq8xWv2Lm5Np7Rt1Ks4Jd6Hf9Gb3Cy0Ea" + "_-Ux7Io2"


def _edit(path: str) -> dict:
    return {"kind": "edit", "title": f"Edit {path}", "locations": [{"path": path}],
            "content": [{"type": "diff", "path": path, "oldText": "a = 1\n", "newText": "a = 2\n"}],
            "rawInput": {"file_path": path, "old_string": "a = 1", "new_string": "a = 2"}}


@pytest.mark.slow
def test_allowed_and_denied_requests_and_a_finished_turn(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    work = tmp_path / "proj"
    work.mkdir()
    script, log = write_agent_script(tmp_path, [[
        {"say": "Looking around."},
        {"tool": LS},
        {"tool": CURL, "request": "minimal"},  # Claude's adapter: only id, title and raw input
        {"tool": _edit(str(work / "app.py"))},
        {"say": "All done."},
    ]])
    policy = policy_file(tmp_path, rules_first=[
        {"name": "decline-curl", "when": {"subject": r"^curl\b"}, "then": "decline"}])
    shadow = tmp_path / "shadow.yaml"  # a shadow whose decline rule never matches: it approves curl
    shadow.write_text(policy.read_text().replace("decline-curl", "shadow-decline-curl").replace(
        r"^curl\b", r"^curl-never\b"))
    proc = start_run(cli_env, work, agent_argv(script), "--policy", str(policy), "--shadow", str(shadow),
                     "--task", "tidy up")
    code, out, err = finish(proc)
    assert code == EXIT_OK, (out, err)

    log_ = agent_log(log)
    assert log_[0] == {"event": "initialize", "client": "paneward", "fs": False}
    assert {"event": "session", "cwd": str(work)} in log_
    assert {"event": "prompt", "text": "tidy up", "turn": 1} in log_
    answered = permissions(log)
    assert answered["ls -la"]["option_id"] == "allow_once"  # never the persistent "Always Allow"
    assert answered["curl https://example.com/x.sh"]["option_kind"] == "reject_once"
    assert answered[f"Edit {work / 'app.py'}"]["option_id"] == "allow_once"
    assert ran(log) == ["ls -la", f"Edit {work / 'app.py'}"]

    run_id, evs = journal(sv_home)
    started = next(e.payload for e in evs if e.kind == "run_started")
    assert started["surface"] == "acp" and started["cwd"] == str(work) and started["task"] == "tidy up"
    ds = decisions(evs)
    assert [(d["kind"], d["approves"], d["rule"]) for d in ds] == [
        ("answer", True, "approve-tools-and-edits"), ("answer", False, "decline-curl"),
        ("answer", True, "approve-tools-and-edits")]
    assert [d["prompt"]["kind"] for d in ds] == ["tool_permission", "tool_permission", "edit_approval"]
    risk = ds[0]["prompt"]["risk"]
    assert {k: risk[k] for k in ("level", "matched", "subject", "subject_kind")} == {
        "level": "none", "matched": [], "subject": "ls -la", "subject_kind": "command"}
    assert [p["rule"] for p in risk["parts"]] == ["table:ls"]  # the command judgment's one part
    assert ds[2]["prompt"]["risk"]["subject_kind"] == "path"
    turn = next(e.payload for e in evs if e.kind == "turn_finished")
    assert (turn["prompts"], turn["answered"], turn["escalated"], turn["stop_reason"]) == (3, 3, 0, "end_turn")
    ended = evs[-1]
    assert ended.kind == "run_ended" and ended.payload["outcome"] == "finished"
    assert not any(e.kind == "pause" for e in evs)
    n, mismatches = replay_under_recorded_policy(evs)
    assert n >= 3 and mismatches == []

    shadows = [(e.payload["decision"]["kind"], e.payload["decision"]["approves"]) for e in evs
               if e.kind == "shadow_decision" and e.payload["observation"]["state"] == "asking"]
    assert shadows == [("answer", True)] * 3  # the shadow would have approved curl
    replay = invoke_cli("runs", "replay", run_id, "--policy", str(shadow), "--json", env=cli_env)
    assert replay.returncode == 0, replay.stderr
    report = json.loads(replay.stdout)  # the warehouse reads the run: replay flags approving the declined curl
    assert [(c["recorded_keys"], c["replayed_keys"], c["divergence"]) for c in report["changed"]] == [
        ('["reject_once"]', '["allow_once"]', "safety_regression")]
    shown = invoke_cli("runs", "show", run_id, "--json", env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert "decline-curl" in shown.stdout and "approve-tools-and-edits" in shown.stdout


@pytest.mark.slow
def test_escalated_requests_wait_for_runs_answer(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    work = tmp_path / "proj"
    work.mkdir()
    script, log = write_agent_script(tmp_path, [[
        {"tool": RM_HOME},
        {"tool": MYSTERY},  # no command, path or URL: unknown subject, never approved
        {"say": "Finished."},
    ]])
    with acp_run(cli_env, work, agent_argv(script), "--task", "clean up") as proc:
        pause = wait_for_event(sv_home, lambda e: e.kind == "pause", "the first escalation")
        assert "dangerous" in pause.payload["pause_reason"] and "rm -rf ~" in pause.payload["pause_reason"]
        assert [o["optionId"] for o in pause.payload["options"]] == ["allow_once", "allow_always", "reject_once"]
        assert permissions(log) == {}  # the request waits
        run_id = pause.run_id
        status = json.loads(invoke_cli("status", "--json", env=cli_env).stdout)
        assert [(r["run_id"], bool(r["paused"])) for r in status] == [(run_id, True)], status

        wrong = invoke_cli("runs", "answer", run_id, "maybe", "--wait", "60", env=cli_env)
        assert wrong.returncode == EXIT_USAGE and "choose one of" in wrong.stderr, wrong.stderr
        ok = invoke_cli("runs", "answer", run_id, "reject_once", "--wait", "60", env=cli_env)
        assert ok.returncode == EXIT_OK, ok.stderr
        retry_until(lambda: "rm -rf ~" in permissions(log), 60, message="the answer to reach the agent")
        assert permissions(log)["rm -rf ~"]["option_id"] == "reject_once"

        second = wait_for_event(sv_home, lambda e: e.kind == "pause" and "Do the thing" not in str(e.payload.get(
            "pause_reason")) and e.payload.get("risk", {}).get("level") == "unknown", "the second escalation")
        ok2 = invoke_cli("runs", "answer", run_id, "1", "--wait", "60", env=cli_env)  # by number: Allow
        assert ok2.returncode == EXIT_OK, ok2.stderr
        assert "answered" in ok2.stdout and "allow_once" in ok2.stdout
        code, out, err = finish(proc)
    assert code == EXIT_OK, (out, err)
    assert second.payload["risk"]["subject_kind"] is None
    assert ran(log) == ["Do the thing"]
    _, evs = journal(sv_home)
    ds = decisions(evs)
    # the second names why: a request whose subject is not known (no command, path or URL in it)
    assert [(d["kind"], d["rule"]) for d in ds] == [("escalate", "danger"), ("escalate", "unknown-subject")]
    resumes = [e.payload for e in evs if e.kind == "resume"]
    assert [(r["by"], r["human_keys"], r["selected"]) for r in resumes] == [
        ("human", ["reject_once"], "Reject"), ("human", ["allow_once"], "Allow")]
    turn = next(e.payload for e in evs if e.kind == "turn_finished")
    assert (turn["prompts"], turn["escalated"]) == (2, 2)
    assert evs[-1].payload["outcome"] == "finished"
    n, mismatches = replay_under_recorded_policy(evs)
    assert n >= 2 and mismatches == []
    late = invoke_cli("runs", "answer", evs[0].run_id, "1", "--wait", "60", env=cli_env)
    assert late.returncode == EXIT_USAGE and "has ended" in late.stderr


def test_stopping_a_run_paused_on_a_request(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    script, log = write_agent_script(tmp_path, [[{"tool": RM_HOME}]])
    with acp_run(cli_env, tmp_path, agent_argv(script), "--task", "clean up") as proc:
        pause = wait_for_event(sv_home, lambda e: e.kind == "pause", "the escalation")
        stop = invoke_cli("runs", "stop", pause.run_id, env=cli_env)
        assert stop.returncode == 0, stop.stderr
        code, out, err = finish(proc)
    assert code == EXIT_ESCALATED, (out, err)
    assert permissions(log)["rm -rf ~"]["outcome"] == "cancelled"  # the waiting request is cancelled
    assert ran(log) == []
    _, evs = journal(sv_home)
    assert evs[-1].kind == "run_ended" and evs[-1].payload["outcome"] == "escalated"


def test_a_crashed_agent_ends_the_run_with_its_error(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    script, log = write_agent_script(tmp_path, [[
        {"say": "Working."},
        {"crash": {"code": 3, "stderr": "API Error: 401 Unauthorized: invalid x-api-key\n"
                   f"ANTHROPIC_API_KEY={SECRET}"}},
    ]])
    proc = start_run(cli_env, tmp_path, agent_argv(script), "--task", "do it")
    code, out, err = finish(proc)
    assert code == EXIT_AGENT_EXITED, (out, err)
    _, evs = journal(sv_home)
    exit_obs = [e.payload["observation"] for e in evs if e.kind == "observation"
                and e.payload["observation"]["state"] == "exited"]
    assert len(exit_obs) == 1 and exit_obs[0]["blocker"]["kind"] == "auth"
    ended = evs[-1].payload
    assert evs[-1].kind == "run_ended" and ended["outcome"] == "exited" and ended["exit_code"] == 3
    assert ended["blocker"]["kind"] == "auth" and "401" in ended["blocker"]["message"]
    assert any(e.kind == "task" and e.payload.get("status") == "started" for e in evs)
    assert not any(e.kind == "turn_finished" for e in evs)
    agent_stderr = next((sv_home / "logs").glob("acp-*.log")).read_text()
    assert "401 Unauthorized" in agent_stderr and SECRET not in agent_stderr  # redacted before it is stored
    assert SECRET not in "".join(p.read_text() for p in (sv_home / "journals").glob("*.jsonl"))


def test_an_error_answering_the_prompt_pauses_the_run(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    script, _log = write_agent_script(tmp_path, [[{"fail": {"code": -32000, "message": "Authentication required"}}]])
    with acp_run(cli_env, tmp_path, agent_argv(script), "--task", "do it") as proc:
        pause = wait_for_event(sv_home, lambda e: e.kind == "pause", "the blocker's pause")
        assert "runs task" in pause.payload["next_action"]
        assert pause.payload["blocker"]["kind"] == "auth"
        invoke_cli("runs", "stop", pause.run_id, env=cli_env)
        code, out, err = finish(proc)
    assert code == EXIT_ESCALATED, (out, err)


def test_an_agent_that_cannot_start_is_one_line(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    proc = start_run(cli_env, tmp_path, [str(tmp_path / "no-such-agent")], "--task", "x")
    code, out, err = finish(proc)
    assert code != 0
    assert "cannot start the agent" in err and "Traceback" not in err, err
    _, evs = journal(sv_home)
    assert evs[-1].kind == "run_ended" and evs[-1].payload["outcome"] == "exited"


def test_acp_rejects_tmux_only_options(cli_env: dict) -> None:
    res = run_cli("run", "--acp", "--detach", "--", "gemini", "--acp", env=cli_env)
    assert res.returncode == EXIT_USAGE and "--detach does not go with --acp" in res.stderr


def test_garbage_on_the_protocol_channel_does_not_stop_supervision(tmp_path: Path, sv_home: Path,
                                                                   cli_env: dict) -> None:
    script, log = write_agent_script(tmp_path, [[
        {"print": "Loading extensions... done"},
        {"print": "[1, 2, 3]"},
        {"print": "42"},
        {"print": '{"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}'},
        {"tool": LS},
        {"say": "Listed."},
    ]])
    proc = start_run(cli_env, tmp_path, agent_argv(script), "--task", "list")
    code, out, err = finish(proc)
    assert code == EXIT_OK, (out, err)
    assert ran(log) == ["ls -la"]
    assert "Traceback" not in err and "Traceback" not in out, err
    agent_stderr = next((sv_home / "logs").glob("acp-*.log")).read_text()
    assert "not a protocol message on stdout: [1, 2, 3]" in agent_stderr


def test_an_agent_stuck_at_start_can_be_stopped(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    script, log = write_agent_script(tmp_path, [], hang_initialize=True)
    with acp_run(cli_env, tmp_path, agent_argv(script), "--task", "x") as proc:
        started = wait_for_event(sv_home, lambda e: e.kind == "note" and e.payload.get("type") == "acp_started",
                                 "the agent's start")
        retry_until(lambda: any(r["event"] == "initialize" for r in agent_log(log)), 30,
                    message="the agent to receive initialize")
        stop = invoke_cli("runs", "stop", started.run_id, env=cli_env)
        assert stop.returncode == 0, stop.stderr
        code, out, err = finish(proc)
    assert code == EXIT_INTERRUPTED, (out, err)
    _, evs = journal(sv_home)
    assert evs[-1].kind == "run_ended" and evs[-1].payload["outcome"] == "stopped"
    assert not any(e.kind == "task" and e.payload.get("status") == "started" for e in evs)


def test_runs_task_hands_a_waiting_agent_its_next_prompt(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    script, log = write_agent_script(tmp_path, [[{"tool": LS}, {"say": "Listed."}], [{"say": "Second."}]])
    with acp_run(cli_env, tmp_path, agent_argv(script)) as proc:  # no --task: it waits for `runs task`
        ready = wait_for_event(sv_home, lambda e: e.kind == "note" and e.payload.get("type") == "acp_session",
                               "the session")
        assert [r for r in agent_log(log) if r["event"] == "prompt"] == []
        for n, text in enumerate(["list the files", "and now say more"], start=1):
            handed = invoke_cli("runs", "task", ready.run_id, text, env=cli_env)
            assert handed.returncode == 0, handed.stderr
            wait_for_event(sv_home, lambda e, n=n: e.kind == "turn_finished" and e.payload["turn"] == n,
                           f"turn {n}")
        assert proc.poll() is None  # a run without --task lasts until it is stopped (or the agent exits)
        assert invoke_cli("runs", "stop", ready.run_id, env=cli_env).returncode == 0
        code, out, err = finish(proc)
    assert code == EXIT_INTERRUPTED, (out, err)
    assert [r["text"] for r in agent_log(log) if r["event"] == "prompt"] == ["list the files", "and now say more"]
    assert ran(log) == ["ls -la"]
    _, evs = journal(sv_home)
    assert [t["task"] for t in (e.payload for e in evs if e.kind == "turn_finished")] == [
        "list the files", "and now say more"]
