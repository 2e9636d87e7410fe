"""The live runner end to end: the scripted agent in real tmux (private socket per test), the
real control-mode surface, the real classifier and decide, real journals."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from supervisor.runner import RunConfig, Supervisor
from supervisor.settings import Settings
from supervisor.surfaces.tmux import TmuxSurface
from tests.helpers import retry_until
from tests.live_helpers import (
    agent_command,
    answers,
    assert_no_stray_keys,
    events,
    fast_policy,
    read_record,
    write_script,
)

pytestmark = pytest.mark.slow


def test_answers_prompts_in_each_style(harness, tmp_path: Path) -> None:
    """Each agent's own prompts, each agent in its own pane (a real agent draws only its own dialogs:
    one drawn in another agent's style is not its own, and is escalated)."""
    plays = {
        "claude": [
            {"say": "Let me look around."},
            {"spinner": {"seconds": 0.3, "verb": "Reading files"}},
            {"prompt": {"id": "bash", "kind": "bash", "command": "npm test", "description": "Run the tests"}},
            {"spinner": {"seconds": 0.3}},
            {"prompt": {"id": "edit", "kind": "edit", "file": "src/app.py"}},
        ],
        # aider's plain question is not work (first-run questions are of its kind): the run is finished by the
        # work after it, which a supervisor that starts late (a loaded host) still sees
        "aider": [{"spinner": {"seconds": 1.0}},
                  {"prompt": {"id": "yn", "kind": "yes_no", "question": "Add src/app.py to the chat?"}},
                  {"spinner": {"seconds": 1.5}}],
        "codex": [{"spinner": {"seconds": 1.0}},
                  {"prompt": {"id": "codex", "kind": "codex_exec", "command": "pytest -q", "description": "run tests"}}],
    }
    h = harness()
    records, panes = {}, []
    for style, steps in plays.items():
        script = write_script(tmp_path, [*steps, {"say": "All done."}, {"done": {}}], style=style, name=style)
        records[style] = tmp_path / f"{style}.jsonl"
        panes.append(h.start_agent(script, records[style]))
    runners = h.supervise(*panes)
    retry_until(lambda: all(r.done for r in runners), 60,
                message=lambda: f"every run to end; {[(r.pane_id, r.outcome) for r in runners]}")
    got = {pid: a for rec in records.values() for pid, a in answers(rec).items()}
    assert set(got) == {"bash", "edit", "yn", "codex"}
    for pid in got:
        assert got[pid]["approved"] is True, got[pid]
    # never a "don't ask again" option: the first (plain Yes) option every time
    assert all(got[p]["choice"] == 0 for p in got), got
    assert got["yn"]["keys"][-1] == "Enter"  # aider style: a letter, then Enter
    runner = runners[0]
    assert all(r.outcome == "finished" for r in runners), [r.outcome for r in runners]
    kinds = [e.kind for e in events(runner)]
    assert kinds[0] == "run_started" and kinds[-1] == "run_ended"
    acts = [e.payload for e in events(runner, "action")]
    assert any(a["delivered"] is False for a in acts) and any(a.get("confirmed") is True for a in acts)
    started = events(runner, "run_started")[0].payload
    for key in ("run_id", "command", "pane_id", "session", "policy_id", "shadow_policy_ids", "agent", "cwd", "host",
                "package_version"):
        assert key in started


def test_dangerous_prompt_escalates_then_human_resolves(harness, tmp_path: Path, tmux_socket: str) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "danger", "kind": "bash", "command": "rm -rf /tmp/proj/src",
                    "description": "Remove the old sources"}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness()
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: events(runner, "pause"), 30, message="a pause event")
    pause = events(runner, "pause")[0].payload
    assert pause["pause_reason"] and pause["next_action"]
    retry_until(lambda: runner.state.paused, 10, message="the pause folded into the run state")
    risky = [e.payload["observation"]["prompt"]["risk"] for e in events(runner, "observation")
             if e.payload["observation"]["state"] == "asking"]
    assert risky and risky[0]["level"] == "dangerous", risky
    note = retry_until(lambda: events(runner, "notification"), 10, message="the display-message notification")
    assert note[0].payload["ok"] is True
    # the journal may say ok before tmux's message log holds it on a busy machine: wait for the log
    retry_until(lambda: "supervisor paused" in subprocess.run(["tmux", "-L", tmux_socket, "show-messages"],
                                                             capture_output=True, text=True).stdout,
                20, message="'supervisor paused' in tmux's show-messages")
    # nothing was approved: no keys went to the pane
    assert not [e for e in events(runner, "action")]
    assert "danger" not in answers(rec)
    retry_until(lambda: "escalation" in [e.payload["kind"] for e in events(runner, "friction")], 10,
                message="escalation friction")
    # the human declines in the pane; supervision resumes by itself
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", runner.pane_id, "3"], check=True)
    retry_until(lambda: events(runner, "resume"), 60, message=lambda: "a resume event; journal since the pause: " + str(
        [(e.kind, e.payload.get("observation", {}).get("state")) for e in runner.journal.events()
         if e.kind not in ("heartbeat",)][-15:]) + f"; agent's record: {answers(rec)}")
    assert answers(rec)["danger"]["approved"] is False
    retry_until(lambda: runner.done, 30, message="the run to finish")
    assert runner.outcome == "finished"


def test_a_human_typing_a_message_does_not_hold_back_the_next_prompt(harness, tmp_path: Path,
                                                                     tmux_socket: str) -> None:
    """Typing into the agent's input box and submitting is not working a prompt: it is noticed
    (friction, once) and the prompt that follows is answered at once, not after human_quiet_s."""
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"say": "What next?"},
        {"idle": {"id": "ask"}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "make lint"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness(policy=fast_policy(recheck_s=60.0, human_quiet_s=60.0))  # idle must not count as finished here
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: [e for e in events(runner, "observation") if e.payload["observation"]["state"] == "idle"
                         and "What next?" in e.payload["screen"]["text"]], 30, message="the idle input box")

    def tmux(*args: str) -> None:
        subprocess.run(["tmux", "-L", tmux_socket, *args], check=True)

    tmux("send-keys", "-t", runner.pane_id, "-l", "please lint")
    got = retry_until(lambda: [e for e in events(runner, "friction") if e.payload["kind"] == "human_keystrokes"], 30,
                      message="human_keystrokes friction")
    assert got[0].payload["where"] == "input box"
    tmux("send-keys", "-t", runner.pane_id, "Enter")
    retry_until(lambda: "p1" in answers(rec), 20, message="the supervisor's answer")
    assert answers(rec)["p1"]["keys"] == ["1"]
    shown = next(r["t"] for r in read_record(rec) if r["event"] == "drawn" and r["id"] == "p1")
    assert answers(rec)["p1"]["answered_at"] - shown < 10  # not held for human_quiet_s (60 s)
    assert not [e for e in events(runner, "decision") if e.payload["decision"]["rule"] == "human-active"]
    assert len([e for e in events(runner, "friction") if e.payload["kind"] == "human_keystrokes"]) == 1


def test_a_human_working_a_prompt_is_not_fought_and_is_told(harness, tmp_path: Path, tmux_socket: str) -> None:
    """A human who answers a prompt themselves (here: one whose first answer did not take, while
    the supervisor cools down) keeps our hands off the next prompt for human_quiet_s, and the pane
    says the supervisor is holding back."""
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "stuck", "kind": "bash", "command": "make", "ignore": 1}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "make lint"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    pol = fast_policy(recheck_s=60.0, confirm_timeout_s=0.8)
    pol.budgets.cooldown_s = 60.0
    h = harness(policy=pol)
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: [e for e in events(runner, "friction") if e.payload["kind"] == "answer_not_taken"], 30,
                message="the first answer not to take")
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", runner.pane_id, "1"], check=True)
    retry_until(lambda: "stuck" in answers(rec), 20, message="the human's answer")
    retry_until(lambda: any(r["event"] == "prompt_shown" and r["id"] == "p1" for r in read_record(rec)), 30,
                message="the next prompt to be shown")
    retry_until(lambda: [e for e in events(runner, "decision") if e.payload["decision"]["rule"] == "human-active"],
                30, message="a hands-off decision")
    human = [e.payload for e in events(runner, "friction") if e.payload["kind"] == "human_keystrokes"]
    assert human and human[0]["where"] == "prompt", human
    note = retry_until(lambda: [e for e in events(runner, "notification") if e.payload["title"] == "holding back"],
                       10, message="the holding-back message")
    assert "holding back" in note[0].payload["body"]
    msgs = subprocess.run(["tmux", "-L", tmux_socket, "show-messages"], capture_output=True, text=True).stdout
    assert "holding back" in msgs
    assert "p1" not in answers(rec)
    assert len([e for e in events(runner, "action") if e.payload.get("delivered") and e.payload.get("confirmed")
                is None]) == 1  # only the first answer to "stuck"
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", runner.pane_id, "1"], check=True)
    retry_until(lambda: "p1" in answers(rec), 20, message="the human's second answer")


def test_stall_is_recorded_then_escalated(harness, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 60, "animate": False, "verb": "Compiling"}},
    ])
    rec = tmp_path / "rec.jsonl"
    pol = fast_policy(stall_timeout_s=1.0)
    pol.budgets.max_stalls = 1
    h = harness(policy=pol)
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: [e for e in events(runner, "friction") if e.payload["kind"] == "stall"], 30,
                message="stall friction")
    retry_until(lambda: events(runner, "pause"), 30, message="the stall to be escalated")
    stall_decisions = [e for e in events(runner, "decision") if e.payload["decision"]["rule"] == "stall"]
    assert [d.payload["decision"]["kind"] for d in stall_decisions][:2] == ["wait", "escalate"]
    assert len([e for e in events(runner, "friction") if e.payload["kind"] == "stall"]) >= 1


def test_finish_confirmed_and_exit_on_finish(harness, tmp_path: Path) -> None:
    h = harness(exit_on_finish=True)
    script = write_script(tmp_path, [
        h.work_seen(tmp_path / "seen"),
        {"say": "Implemented the feature; tests pass."},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    runner = h.run_to_end(script, rec, 30)
    assert runner.outcome == "finished"
    decisions = [e.payload["decision"] for e in events(runner, "decision")]
    assert decisions[-1]["kind"] == "finish"
    idle = [e for e in events(runner, "observation") if e.payload["observation"]["state"] == "idle"]
    assert len(idle) >= 2
    retry_until(lambda: any(r["event"] == "input" and r["text"] == "/exit" for r in read_record(rec)), 20,
                message="the exit command to arrive")
    exit_actions = [e.payload for e in events(runner, "action") if e.payload["kind"] == "exit_agent"]
    assert exit_actions and exit_actions[0]["keys"] == ["/exit", "Enter"]


def test_dead_pane_ends_run_as_exited(harness, tmp_path: Path) -> None:
    script = write_script(tmp_path, [{"spinner": {"seconds": 0.5}}, {"exit": {"code": 3}}])
    rec = tmp_path / "rec.jsonl"
    h = harness()
    runner = h.run_to_end(script, rec, 30)
    assert runner.outcome == "exited"
    ended = events(runner, "run_ended")[0].payload
    assert ended["outcome"] == "exited" and ended["exit_code"] == 3, ended


def test_shadow_policies_decide_but_never_act(harness, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    cautious = fast_policy()
    cautious.name = "cautious"
    cautious.answers.rules = [r for r in cautious.answers.rules if r.then == "escalate"]
    h = harness(shadows=[cautious])
    runner = h.run_to_end(script, rec, 30)
    shadow = [e.payload for e in events(runner, "shadow_decision")]
    observations = events(runner, "observation")
    assert len(shadow) == len(observations)
    assert {s["shadow_policy_id"] for s in shadow} == {cautious.policy_id}
    assert any(s["decision"]["kind"] == "escalate" for s in shadow)
    assert answers(rec)["p1"]["approved"] is True  # the acting policy answered
    assert not events(runner, "pause")  # the shadow's escalation was never executed
    started = events(runner, "run_started")[0].payload
    assert started["shadow_policy_ids"] == [cautious.policy_id]
    assert set(started["policies"]) == {cautious.policy_id, started["policy_id"]}
    assert all("observation" in s for s in shadow)


def test_fleet_of_three_panes_including_one_started_later(tmux_socket: str, sv_home: Path, tmp_path: Path) -> None:
    import threading

    from supervisor.cli.live_cmds import discover_agent_panes

    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.5}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"spinner": {"seconds": 0.3}},
        {"done": {"seconds": 30}},
    ])
    surface = TmuxSurface(tmux_socket)
    recs = [tmp_path / f"rec{i}.jsonl" for i in range(3)]
    surface.new_session("a", agent_command(script, recs[0]), width=100, height=30)
    surface.new_session("b", agent_command(script, recs[1]), width=100, height=30)
    settings = Settings(home=sv_home)
    sup = Supervisor(surface, settings, RunConfig(policy=fast_policy()), socket=tmux_socket)  # runs last
    sup.discover = lambda: discover_agent_panes(surface, sup.config.policy, sup._enqueue)
    retry_until(lambda: len(list(sup.discover())) == 2, 20, message="two agent panes")
    sup.scan()
    t = threading.Thread(target=lambda: sup.run(timeout=90), daemon=True)
    t.start()
    try:
        # a third agent appears in a new window of an existing session, after the supervisor started
        surface.cmd("new-window", "-d", "-t", "a", " ".join(agent_command(script, recs[2])))
        retry_until(lambda: all("p1" in answers(r) for r in recs), 60,
                    message=lambda: f"all three answered: {[list(answers(r)) for r in recs]}")
        retry_until(lambda: sum(1 for r in sup.runners.values() if events(r, "turn_finished")) == 3, 60,
                    message="three finished turns")
        assert len({r.run_id for r in sup.runners.values()}) == 3
        assert not any(r.done for r in sup.runners.values())  # a run lasts as long as its agent
    finally:
        sup.stop()
        t.join(timeout=20)
        sup.close(final_sync=False)
    assert_no_stray_keys(*recs)


def test_answer_not_taken_strikes_then_escalates(harness, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "stuck", "kind": "bash", "command": "make", "ignore": 100}},
    ])
    rec = tmp_path / "rec.jsonl"
    pol = fast_policy(confirm_timeout_s=0.8)
    pol.budgets.cooldown_s = 0.5
    pol.budgets.strike_limit = 2
    h = harness(policy=pol)
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: events(runner, "pause"), 40, message="the strike guard to escalate")
    not_taken = [e for e in events(runner, "friction") if e.payload["kind"] == "answer_not_taken"]
    assert len(not_taken) == 2
    sent = [e.payload for e in events(runner, "action") if e.payload["delivered"] and e.payload["confirmed"] is None]
    assert len(sent) == 2  # two tries, then hands off
    assert [a["confirmed"] for a in (e.payload for e in events(runner, "action")) if a["confirmed"] is not None] \
        == [False, False]
    assert events(runner, "pause")[0].payload["rule"] == "strike-guard"
    ignored = [r for r in read_record(rec) if r["event"] == "ignored"]
    assert len(ignored) == 2


def test_same_prompt_again_is_repeated_prompt_friction(harness, tmp_path: Path) -> None:
    prompt = {"kind": "bash", "command": "npm test", "description": "Run the tests"}
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "first", **prompt}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "again", **prompt}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness()
    runner = h.run_to_end(script, rec, 30)
    assert set(answers(rec)) == {"first", "again"}
    assert [e for e in events(runner, "friction") if e.payload["kind"] == "repeated_prompt"]
    assert not events(runner, "pause")


def test_poll_fallback_answers_too(harness, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness(poll_s=0.3)
    runner = h.run_to_end(script, rec, 40)
    assert answers(rec)["p1"]["approved"] is True
    assert runner.outcome == "finished"
    assert {e.payload["trigger"] for e in events(runner, "observation")} & {"poll", "timer"}


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script` to attach a real tmux client")
def test_keys_from_an_attached_tmux_client_are_the_human(harness, tmp_path: Path, tmux_socket: str) -> None:
    """A real `tmux attach` client (under `script`, which gives it a terminal) types into the pane."""
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"say": "What next?"},
        {"idle": {"id": "ask"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness(policy=fast_policy(recheck_s=60.0))
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: [e for e in events(runner, "observation") if "What next?" in e.payload["screen"]["text"]],
                30, message="the idle input box")
    client = subprocess.Popen(["script", "-q", "-c", f"tmux -L {tmux_socket} attach -t {runner.pane.session}",
                               "/dev/null"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        retry_until(lambda: subprocess.run(["tmux", "-L", tmux_socket, "list-clients", "-F", "#{client_control_mode}"],
                                           capture_output=True, text=True).stdout.split().count("0"), 20,
                    message="the human's client to attach")
        assert client.stdin is not None
        client.stdin.write(b"fix the flaky test")
        client.stdin.flush()
        got = retry_until(lambda: [e for e in events(runner, "friction") if e.payload["kind"] == "human_keystrokes"],
                          30, message="human_keystrokes friction")
        assert got[0].payload["detail"] in ("input from an attached tmux client", "typing in the agent's input box")
        assert got[0].payload["where"] == "input box"
        assert runner.fold.human_until > 0 and runner.state.human_active_until == 0  # not a prompt: no hands-off
        assert not events(runner, "action")
    finally:
        client.kill()
        client.wait(timeout=10)


def test_trust_dialog_then_idle_is_not_work(harness, tmp_path: Path) -> None:
    """Answering a trust dialog (a first-run question) is not work: the agent then sits idle for
    a few seconds (many finish re-check periods) and exits; the run must end "exited", never
    "finished" before the user typed anything."""
    script = write_script(tmp_path, [
        {"prompt": {"id": "trust", "kind": "trust"}},
        {"say": "Ready."},
        {"idle": {"id": "wait", "seconds": 4}},
        {"exit": {"code": 0}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness(policy=fast_policy(recheck_s=0.2))
    runner = h.run_to_end(script, rec, 40)
    assert "trust" in answers(rec)
    assert runner.outcome == "exited", [e.payload["decision"]["reason"] for e in events(runner, "decision")]
    assert not runner.state.saw_work
    assert [e for e in events(runner, "decision") if e.payload["decision"]["rule"] == "idle"
            and "not worked yet" in e.payload["decision"]["reason"]]


def test_quick_tool_permission_counts_as_work(harness, tmp_path: Path) -> None:
    """A tool permission is work even when the turn around it is too quick to be seen busy."""
    script = write_script(tmp_path, [
        {"prompt": {"id": "trust", "kind": "trust"}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"say": "Done."},
        {"idle": {"id": "wait", "seconds": 60}},
    ])
    rec = tmp_path / "rec.jsonl"
    h = harness()
    runner = h.run_to_end(script, rec, 40)
    assert runner.outcome == "finished"
    assert set(answers(rec)) == {"trust", "p1"}
    states = [e.payload["observation"]["state"] for e in events(runner, "observation")]
    assert "busy" not in states, states  # no spinner ever: the permission prompt alone was the work


def test_human_typing_keeps_an_idle_run_from_finishing(harness, tmp_path: Path, tmux_socket: str) -> None:
    """decide() would finish an idle turn after work; while a human types a new message into the
    input box the runner holds the finish (journaled) instead of ending the run."""
    # the idle re-check (which would confirm the finish) comes after the human started typing
    h = harness(policy=fast_policy(recheck_s=6.0, finish_confirmations=2))
    script = write_script(tmp_path, [
        # works until the supervisor has seen it working: a fixed spinner (even 2 s) could be over
        # before a loaded host's first look, and the run then never saw work (CI, 2 cores)
        h.work_seen(tmp_path / "seen"),
        {"say": "What next?"},
        {"idle": {"id": "ask", "seconds": 60}},
    ])
    rec = tmp_path / "rec.jsonl"
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: [e for e in events(runner, "observation") if e.payload["observation"]["state"] == "idle"
                         and "What next?" in e.payload["screen"]["text"]], 30, message="the idle input box")
    retry_until(lambda: runner.state.saw_work, 10, message="the work folded into the run state")
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", runner.pane_id, "-l", "please lint"], check=True)
    got = retry_until(lambda: [e for e in events(runner, "note") if e.payload.get("type") == "finish_held"], 30,
                      message="a held finish")
    assert "typing" in got[0].payload["why"]
    assert not runner.done and not events(runner, "turn_finished")


BLOCKED_EXIT = ["sh", "-c", "echo 'Working on it...'; sleep 0.3; "
                "echo 'API Error: 401 invalid x-api-key · Please run /login'; exit 1"]
"""A program that prints an auth error as its last line and exits 1 (like an agent without credentials)."""


def test_exit_with_blocker_ends_exited_with_the_blocker(harness) -> None:
    h = harness()
    pane = h.surface.new_session("blocked", BLOCKED_EXIT, width=100, height=30)
    runner = h.sup.add_pane(pane, command=BLOCKED_EXIT)
    h.start()
    retry_until(lambda: runner.done, 30, message="the run to end")
    assert runner.outcome == "exited"
    ended = events(runner, "run_ended")[0].payload
    assert ended["exit_code"] == 1 and ended["blocker"]["kind"] == "auth", ended
    assert "401" in ended["blocker"]["message"] and "auth" in ended["reason"] and "/login" in ended["next_action"]
    pause = events(runner, "pause")[0].payload
    assert pause["rule"] == "exited-blocked" and pause["state"] == "exited" and pause["next_action"]
    note = events(runner, "notification")[0].payload
    assert note["channel"] == "journal" and "auth" in note["body"]
    from supervisor.history import summarize_journal

    summary = summarize_journal(runner.journal.path)
    assert summary.outcome == "exited" and summary.paused and "auth" in (summary.pause_reason or "")


def test_agent_from_the_launched_command_or_the_pane_process(harness, tmp_path: Path) -> None:
    """Nothing on screen names the agent: the runner fills in what it knows (the command it
    launched; an interpreter's script), for journaling and decisions."""
    from supervisor.agents import agent_from_argv, agent_of_pane
    from supervisor.policy import baseline_policy

    policy = baseline_policy()
    assert agent_from_argv(["python3", "-m", "aider", "--model", "x"], policy) == "aider"
    assert agent_from_argv("npx @anthropic-ai/claude-code", policy) == "claude"
    assert agent_from_argv(["python3", "-m", "evals.agent", "s.yaml"], policy) == "unknown"
    assert agent_from_argv(["vim", "claude.md"], policy) == "unknown"
    fake = tmp_path / "aider.py"
    fake.write_text("import sys, time\nprint('hello from a tool', flush=True)\ntime.sleep(120)\n")
    h = harness()
    pane = h.surface.new_session("py", ["python3", str(fake)], width=80, height=20)
    info = retry_until(lambda: (i := h.surface.pane_info(pane.pane_id)) and i.current_command.startswith("python")
                       and i, 10, message="python in the pane")
    assert agent_of_pane(info, policy) == "aider"
    launched = h.surface.new_session("launched", ["sh", "-c", "echo hello from a tool; exec cat"], width=80,
                                     height=20)
    r1 = h.sup.add_pane(h.surface.pane_info(pane.pane_id))
    r2 = h.sup.add_pane(launched, command=["aider", "--model", "x"])
    h.start()
    for r in (r1, r2):
        obs = retry_until(lambda r=r: [e.payload["observation"] for e in events(r, "observation")
                                       if "hello from a tool" in e.payload["screen"]["text"]], 30,
                          message="an observation")
        assert obs[-1]["agent"] == "aider", obs[-1]
        assert events(r, "run_started")[0].payload["agent"] == "aider"


def test_agent_scoped_fixed_keys_need_the_screen_to_name_the_agent(tmp_path: Path) -> None:
    """Pure check of the guard (no tmux needed): an agent-scoped ``then: keys`` rule is the one
    kind of answer whose keys do not come from the screen's input style."""
    from supervisor.runner import PaneRunner

    pol = fast_policy()
    keys_rule = next(r for r in pol.answers.rules if r.then == "keys" and r.when.agents)
    runner = PaneRunner.__new__(PaneRunner)
    runner.policy = pol
    from supervisor.models import Decision

    d = Decision(kind="answer", keys=["Enter"], reason="x", rule=keys_rule.name)
    assert runner._agent_keys_rule(d)
    assert not runner._agent_keys_rule(d.model_copy(update={"rule": "approve-tools-and-edits"}))


def test_late_look_after_our_answer_is_not_a_human(harness) -> None:
    """On a loaded machine the first full observation after our keys may come later than
    ``confirm_timeout_s``; the prompt we answered being gone is still our doing, not a human's
    (which would keep our hands off for ``human_quiet_s``)."""
    from supervisor.models import Observation, Prompt
    from supervisor.runstate import PromptInstance
    from supervisor.screen import make_screen

    h = harness()
    pane = h.surface.new_session("late", ["cat"], width=80, height=20)
    runner = h.sup.add_pane(pane)  # the loop is not running: the test drives the runner itself
    prompt = Prompt(kind="tool_permission", question="Run npm test?", signature="prm_x")
    asking = Observation(screen_hash="a", state="asking", agent="claude", prompt=prompt)
    idle = Observation(screen_hash="b", state="idle", agent="claude")
    s1, s2 = make_screen("Run npm test?\n❯ 1. Yes"), make_screen("ok\n❯")
    runner._last_full_obs_at = 100.0
    # we answered it when we saw it at t=100 (and it has gone since)
    runner.fold.instances["pin_x"] = PromptInstance("pin_x", "prm_x", "claude", None, None, seen_at=100.0,
                                                    status="taken", answers=1, sent_at=100.0, closed=True)
    assert runner._notice_human(110.0, idle, asking, s2, s1) is None  # next full look 10 s later
    runner.fold.instances.clear()  # a prompt we never answered that goes away: a human did it
    human = runner._notice_human(110.0, idle, asking, s2, s1)
    assert human is not None and human["where"] == "prompt" and human["hands_off_until"] > 110.0


def test_a_shadow_classifies_with_its_own_policy(harness, tmp_path: Path, tmux_socket: str) -> None:
    """A candidate that dropped both vetoes on a force push (the danger pattern, and the command table's
    levels for what destroys and what sends) sees that prompt as not dangerous (its own classification)
    and would approve it; the acting policy escalates. Only the acting policy's decisions are carried
    out."""
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "push", "kind": "bash", "command": "git push --force origin main"}},
        {"done": {}},
    ])
    rec = tmp_path / "rec.jsonl"
    candidate = fast_policy()
    candidate.name = "no-force-push-pattern"
    candidate.answers.danger_patterns = [d for d in candidate.answers.danger_patterns if d.name != "git-push-force"]
    candidate.commands.effects.update(destroy="none", send="none")
    h = harness(shadows=[candidate])
    (runner,) = h.supervise(h.start_agent(script, rec))
    retry_until(lambda: events(runner, "pause"), 30, message="the acting policy's escalation")
    shadow = retry_until(lambda: [e.payload for e in events(runner, "shadow_decision")
                                  if e.payload["observation"]["prompt"]], 10, message="the shadow's look at the prompt")
    assert shadow[0]["decision"]["kind"] == "answer" and shadow[0]["decision"]["keys"] == ["1"]
    assert shadow[0]["observation"]["prompt"]["risk"]["matched"] == []
    acting = next(e.payload["observation"] for e in events(runner, "observation")
                  if e.payload["observation"]["state"] == "asking")
    assert acting["prompt"]["risk"]["matched"] == ["git-push-force", "effect:destroy"]
    assert "push" not in answers(rec) and not [e for e in events(runner, "action")]
    subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", runner.pane_id, "3"], check=True)
    retry_until(lambda: runner.done, 30, message="the run to finish")
