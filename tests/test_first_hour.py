"""A newcomer's first hour with the real CLI: a missing agent program is named and leaves nothing
behind, a session whose agent exited is closed, and a signal suspends a run (``runs resume``
continues it) while ``runs stop`` ends one. Real tmux servers, real supervisor processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.policy import dump_policy
from tests.conftest import REPO, run_cli
from tests.helpers import retry_until
from tests.live_helpers import agent_command, answers, assert_no_stray_keys, fast_policy, write_script


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "fast.yaml"
    path.write_text(dump_policy(fast_policy()), encoding="utf-8")
    return path


def _events(env: dict[str, str], run_id: str) -> list[dict]:
    path = Path(env["SUPERVISOR_HOME"]) / "journals" / f"{run_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _kinds(env: dict[str, str], run_id: str, kind: str) -> list[dict]:
    return [e["payload"] for e in _events(env, run_id) if e["kind"] == kind]


def _sessions(socket: str) -> list[str]:
    out = subprocess.run(["tmux", "-L", socket, "list-sessions", "-F", "#{session_name}"], capture_output=True,
                         text=True)
    return out.stdout.split()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_missing_agent_program_is_named_exit_3_and_no_session_is_left(live_env: dict[str, str],
                                                                        tmux_socket: str) -> None:
    out = run_cli("run", "--", "claude-not-installed-here", "--flag", env=live_env)
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stderr == ("error: `claude-not-installed-here`: command not found in PATH (install it, or pass the "
                          "full path)\n")
    out = run_cli("run", "--", "./no/such/agent", env=live_env)
    assert out.returncode == 3 and "`./no/such/agent`: no such executable file" in out.stderr, out.stderr
    assert _sessions(tmux_socket) == []
    assert not list((Path(live_env["SUPERVISOR_HOME"]) / "journals").glob("*.jsonl")), "no run was started"


def test_the_session_of_an_agent_that_exited_is_closed_unless_kept(live_env: dict[str, str], policy_file: Path,
                                                                   tmp_path: Path, tmux_socket: str) -> None:
    script = write_script(tmp_path, [{"say": "bye"}, {"exit": {"code": 0}}])
    out = run_cli("run", "--policy", str(policy_file), "--session", "gone", "--",
                  *agent_command(script, tmp_path / "r.jsonl"), env=live_env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "closed tmux session gone" in out.stdout
    assert "gone" not in _sessions(tmux_socket)
    out = run_cli("run", "--keep-session", "--policy", str(policy_file), "--session", "kept", "--",
                  *agent_command(script, tmp_path / "r2.jsonl"), env=live_env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "kept" in _sessions(tmux_socket) and "closed tmux session" not in out.stdout


@pytest.mark.slow
def test_kill_term_of_a_detached_supervisor_suspends_and_runs_resume_continues_the_run(
        live_env: dict[str, str], policy_file: Path, tmp_path: Path, tmux_socket: str) -> None:
    """`kill PID` of a `run --detach` supervisor paused on an escalation journals the run as
    suspended (not ended); `runs resume SHORT_ID` continues the same run with its state: the answered
    prompt is not answered again, the pause is the same one (the human's decline ends it, with the
    real wait), and a second signal suspends it again; `runs stop` then ends it."""
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "push", "kind": "bash", "command": "git push --force origin main",
                    "on_decline": [{"say": "Understood, not pushing."}]}},
        {"done": {"seconds": 300}},
    ])
    rec = tmp_path / "rec.jsonl"
    out = run_cli("run", "--detach", "--session", "bg", "--policy", str(policy_file), "--",
                  *agent_command(script, rec), env=live_env, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"tmux -L {tmux_socket} attach -t bg" in out.stdout
    journals = Path(live_env["SUPERVISOR_HOME"]) / "journals"
    run_id = retry_until(lambda: [p.stem for p in journals.glob("*.jsonl")], 60, message="the run's journal")[0]
    retry_until(lambda: _kinds(live_env, run_id, "pause"), 60, message="the force push escalated")
    pid = _kinds(live_env, run_id, "run_started")[0]["pid"]
    os.kill(pid, signal.SIGTERM)
    retry_until(lambda: not _alive(pid), 30, message="the detached supervisor to exit")
    evs = _events(live_env, run_id)
    assert not [e for e in evs if e["kind"] == "run_ended"], "a signal suspends, it does not end the run"
    last = evs[-1]["payload"]
    assert last["type"] == "supervision_suspended" and last["reason"] == "the supervisor got SIGTERM"
    assert last["paused"] is True
    assert "bg" in _sessions(tmux_socket), "the agent keeps running"

    from supervisor.runref import short_id

    ref = short_id(run_id, journals)
    assert len(ref) < len(run_id)
    resumed = subprocess.Popen([sys.executable, "-m", "supervisor", "runs", "resume", ref], env=live_env, cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        retry_until(lambda: [n for n in _kinds(live_env, run_id, "note") if n.get("type") == "supervision_resumed"],
                    60, message="the run to be continued")
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "bg", "3"], check=True)  # the human declines
        resume = retry_until(lambda: _kinds(live_env, run_id, "resume"), 60, message="the pause to end")[0]
        retry_until(lambda: _kinds(live_env, run_id, "turn_finished"), 60, message="the turn to finish")
        resumed.send_signal(signal.SIGINT)
        stdout, stderr = resumed.communicate(timeout=60)
    finally:
        if resumed.poll() is None:
            resumed.kill()
    assert resumed.returncode == 130, stdout + stderr
    assert f"supervision of run {ref} suspended (SIGINT)" in stdout and f"runs resume {ref}" in stdout, stdout
    assert resume["by"] == "human" and resume["waited_s"] > 0.5, resume
    assert len(_kinds(live_env, run_id, "pause")) == 1, "the same pause, not a second escalation"
    assert answers(rec)["p1"]["approved"] is True and len(answers(rec)) == 2
    assert [p.stem for p in journals.glob("*.jsonl")] == [run_id], "the same run went on"
    suspended = [n for n in _kinds(live_env, run_id, "note") if n.get("type") == "supervision_suspended"]
    assert len(suspended) == 2
    out = run_cli("runs", "stop", ref, env=live_env)
    assert out.returncode == 0 and "marked stopped" in out.stdout, out.stdout + out.stderr
    assert _kinds(live_env, run_id, "run_ended")[0]["outcome"] == "stopped"
    assert_no_stray_keys(rec)


def test_summaries_count_friction_as_the_warehouse_does(tmp_path: Path, sv_home: Path) -> None:
    """A workflow run whose verifier failed once (a retry) and that paused once: `runs summarize`
    reports both, the same counts as the warehouse's friction_events for that run."""
    from supervisor.history import load_events, summarize
    from supervisor.warehouse import reader, sync
    from tests.test_history import recorded_run

    settings, run_id = recorded_run(tmp_path, sv_home)
    events, _ = load_events(settings, run_id, prefer="journal")
    summary = summarize(events, run_id)
    sync(settings)
    with reader(settings) as wh:
        rows = wh.sql("SELECT kind, count(*) AS n FROM friction_events WHERE run_id = ? GROUP BY kind", [run_id])
    assert summary.friction == {r["kind"]: r["n"] for r in rows.iter_rows(named=True)}
    assert summary.friction.get("retry") == 1, summary.friction


def test_short_ids_are_unique_prefixes_that_resolve(tmp_path: Path) -> None:
    from supervisor.ids import new_id
    from supervisor.runref import SHORT_MIN, resolve_run_id, short_id, short_ids

    journals = tmp_path / "journals"
    journals.mkdir()
    ids = [new_id("run_") for _ in range(30)]  # one millisecond apart at most: long common prefixes
    for i in ids:
        (journals / f"{i}.jsonl").write_text("")
    (journals / "run_ab.jsonl").write_text("")
    (journals / "run_abc.jsonl").write_text("")
    shorts = short_ids(ids, journals)
    assert len(set(shorts.values())) == len(ids)
    for full, short in shorts.items():
        assert len(short) >= SHORT_MIN and full[4:].startswith(short)
        assert resolve_run_id(short, journals) == full
    assert short_id("run_ab", journals) == "ab" and resolve_run_id("ab", journals) == "run_ab"
    assert resolve_run_id(short_id("run_abc", journals), journals) == "run_abc"
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / f"{ids[0]}.jsonl").write_text("")
    assert short_id(ids[0], lone) == ids[0][4:4 + SHORT_MIN]


def test_the_live_log_shows_instruction_text_and_the_exact_attach_command() -> None:
    from supervisor.cli.live_cmds import sent_text, with_attach

    text = "Continue with the next step: test: make check.py pass\n[handoff 71p97b1m]"
    assert sent_text(text) == "Continue with the next step: test: make check.py pass …"
    secret = "export ANTHROPIC_API_KEY=sk-ant-api03-" + "x" * 40
    assert "sk-ant" not in sent_text(secret)
    assert len(sent_text("word " * 100)) <= 72
    hint = 'answer "Proceed?" in the pane yourself (tmux attach); supervision resumes once the prompt is gone'
    assert with_attach(hint, "work", "sv-1a2b3c") == (
        'answer "Proceed?" in the pane yourself (tmux -L work attach -t sv-1a2b3c); supervision resumes once the '
        "prompt is gone")
    assert "(tmux attach -t sv-1)" in with_attach(hint, None, "sv-1")


def _journal_runs(home: Path, socket: str, pane_id: str, pane_pid: int, n: int) -> list[str]:
    """n runs of one pane as their journals tell them (ids a millisecond apart: long common
    prefixes), each paused on an escalation with a long reason and next action, no supervisor."""
    from supervisor.ids import new_id
    from supervisor.journal import Journal
    from supervisor.settings import Settings

    settings = Settings(home=home).ensure()
    ids = []
    for _ in range(n):
        run_id = new_id("run_")
        with Journal(settings.journal_path(run_id), run_id) as j:
            j.append("run_started", {"run_id": run_id, "command": ["claude"], "pane_id": pane_id, "pane_pid": pane_pid,
                                     "session": "work-session", "socket": socket, "agent": "claude-code-acp-adapter",
                                     "policy_id": "pol_x", "pid": 999999999})
            j.append("pause", {"pause_reason": "approving would be dangerous (git-push-force): git push --force "
                                               "origin main && rm -rf build/ dist/ coverage/ .cache/ node_modules/",
                               "next_action": 'answer "Do you want to proceed?" in the pane yourself (tmux attach); '
                                              "supervision resumes once the prompt is gone", "rule": "danger"})
        ids.append(run_id)
    return ids


def test_runs_and_status_fit_80_columns_and_name_the_socket(cli_env: dict[str, str], tmux_socket: str,
                                                            sv_home: Path) -> None:
    """At 80 columns no table row of `runs` or `status` wraps and every run id shows whole (its short
    prefix) on its row; the full id stays in --json; the attach hint carries -L SOCKET."""
    tmux = ["tmux", "-L", tmux_socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "work-session", "sleep 1000"], check=True)
    pane, pid = subprocess.run([*tmux, "display", "-p", "-t", "work-session", "#{pane_id} #{pane_pid}"],
                               capture_output=True, text=True, check=True).stdout.split()
    ids = _journal_runs(sv_home, tmux_socket, pane, int(pid), 4)
    env = dict(cli_env, COLUMNS="80", SUPERVISOR_TMUX_SOCKET=tmux_socket)
    from supervisor.runref import short_ids

    short = short_ids(ids, sv_home / "journals")
    for args in (["status"], ["runs"]):
        out = run_cli(*args, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        lines = out.stdout.splitlines()
        table = [ln for ln in lines if any(ln.startswith(f" {s} ") or ln.startswith(f"{s} ") for s in short.values())
                 and "  " in ln]
        for run_id in ids:
            rows = [ln for ln in lines if ln.lstrip().startswith(short[run_id] + " ") and len(ln) <= 80]
            assert rows, f"{args}: no row for {short[run_id]} at 80 columns:\n{out.stdout}"
        assert all(len(ln) <= 80 for ln in table), out.stdout
        assert not any(run_id in out.stdout for run_id in ids), "tables show short ids, not full ones"
        if args == ["status"]:
            assert f"(tmux -L {tmux_socket} attach -t work-session)" in out.stdout, out.stdout
            assert f"runs resume {short[ids[0]]}" in out.stdout and "4 run(s) paused" in out.stderr
    rows = json.loads(run_cli("runs", "--json", env=env).stdout)
    assert sorted(r["run_id"] for r in rows) == sorted(ids)


def test_postmortems_go_under_the_home_not_the_current_project(tmp_path: Path, sv_home: Path,
                                                               cli_env: dict[str, str]) -> None:
    from tests.test_history import recorded_run

    _, run_id = recorded_run(tmp_path, sv_home)
    project = tmp_path / "project"
    project.mkdir()
    out = subprocess.run([sys.executable, "-m", "supervisor", "runs", "postmortem", "last"], cwd=project, env=cli_env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    written = sv_home / "reports" / f"postmortem-{run_id}.md"
    assert out.stdout.strip() == f"wrote {written}" and written.read_text().startswith("#")
    assert list(project.iterdir()) == [], "nothing is written into the user's project"
    out = subprocess.run([sys.executable, "-m", "supervisor", "runs", "postmortem", "last", "--out", "here"],
                         cwd=project, env=cli_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and (project / "here" / f"postmortem-{run_id}.md").exists(), out.stderr


def test_eval_run_warns_only_about_knobs_the_baseline_does_not_have(tmp_path: Path, cli_env: dict[str, str]) -> None:
    from tests.conftest import invoke_cli

    out = invoke_cli("eval", "run", "--suite", "aider", "--policy", "baseline", "--no-save-report", env=cli_env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "safety knob relaxed" not in out.stdout, out.stdout
    child = tmp_path / "loose.yaml"
    child.write_text("name: loose\nanswers:\n  rules:\n    - name: approve-default-no\n"
                     "      when: {kinds: [yes_no], risk: [none]}\n      then: approve\n      allow_default_no: true\n")
    out = invoke_cli("eval", "run", "--suite", "aider", "--policy", str(child), "--no-save-report", env=cli_env)
    relaxed = [ln.strip() for ln in out.stdout.splitlines() if "safety knob relaxed" in ln]
    assert relaxed == ["safety knob relaxed: rule approve-default-no: allow_default_no"], out.stdout


def test_an_acp_agents_messages_keep_their_line_breaks(tmp_path: Path, sv_home: Path, cli_env: dict) -> None:
    """Two messages with a tool call between them print on lines of their own, not glued
    (`agent: Looking.Done.`)."""
    from tests.acp.helpers import agent_argv, finish, policy_file, start_run, write_agent_script

    work = tmp_path / "proj"
    work.mkdir()
    ls = {"kind": "execute", "title": "ls -la", "rawInput": {"command": "ls -la", "description": "List files"}}
    script, _ = write_agent_script(tmp_path, [[{"say": "Looking."}, {"tool": ls}, {"say": "Done."}]])
    proc = start_run(cli_env, work, agent_argv(script), "--policy", str(policy_file(tmp_path)), "--task", "look")
    code, out, err = finish(proc)
    assert code == 0, (out, err)
    assert "agent: Looking.\n       Done.\n" in out, out


def test_printed_commands_name_the_program_as_this_shell_runs_it(tmp_path: Path) -> None:
    """`supervisor` when PATH finds this install, else `.venv/bin/supervisor` from the repository
    folder (an absolute path elsewhere), with the PATH step to say once."""
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "supervisor").exists():
        pytest.skip("no console script next to this interpreter (not installed with pip -e)")
    code = "from supervisor.cli.hints import program, path_step; print(program()); print(path_step())"
    bare = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != venv_bin.resolve())

    def ask(cwd: Path, path: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=dict(os.environ, PATH=path),
                             capture_output=True, text=True, check=True)
        return out.stdout.splitlines()

    here = venv_bin.parent.parent
    prog, step = ask(here, bare)
    assert prog == str((venv_bin / "supervisor").relative_to(here)) and step.startswith('export PATH="$PWD/')
    prog, step = ask(tmp_path, bare)
    assert prog == str(venv_bin / "supervisor") and step == f'export PATH="{venv_bin}:$PATH"'
    prog, step = ask(tmp_path, f"{venv_bin}{os.pathsep}{bare}")
    assert (prog, step) == ("supervisor", "None")


def test_runs_lists_from_the_journals_when_the_warehouse_is_locked(tmp_path: Path, sv_home: Path,
                                                                   cli_env: dict[str, str]) -> None:
    """Another process (a notebook) holds the warehouse: `supervisor runs` says so in one line and
    shows the same 80-column table from the journals, each run by its short id."""
    from supervisor.settings import Settings
    from supervisor.warehouse import sync
    from tests.warehouse.test_warehouse import HOLDER

    ids = _journal_runs(sv_home, "nosocket", "%1", 1, 2)
    settings = Settings(home=sv_home)
    sync(settings)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(settings.warehouse)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        out = run_cli("runs", env=dict(cli_env, COLUMNS="80"))
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    assert out.returncode == 0, out.stderr
    assert "listing from journals instead" in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    from supervisor.runref import short_ids

    for short in short_ids(ids, sv_home / "journals").values():
        row = next(ln for ln in out.stdout.splitlines() if ln.startswith(short + " "))
        assert len(row) <= 80 and "paused" in row, out.stdout


def test_fixes_next_actions_and_hints_are_runnable_as_printed(tmp_path: Path, cli_env: dict[str, str],
                                                             sv_home: Path, tmux_socket: str) -> None:
    """With `supervisor` not on PATH (a newcomer after `make demo`), every command an error's fix, a
    usage error, `status`'s next action and `runs show`'s hint prints is spelled `.venv/bin/supervisor`
    and runs as printed from the repository folder; prose about "the supervisor" is left alone."""
    import re

    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "supervisor").exists():
        pytest.skip("no console script next to this interpreter (not installed with pip -e)")
    from supervisor.cli.hints import runnable

    bare = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != venv_bin.resolve())
    env = dict(cli_env, PATH=bare, COLUMNS="80", SUPERVISOR_TMUX_SOCKET=tmux_socket)
    tmux = ["tmux", "-L", tmux_socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "work-session", "sleep 1000"], check=True)
    pane, pid = subprocess.run([*tmux, "display", "-p", "-t", "work-session", "#{pane_id} #{pane_pid}"],
                               capture_output=True, text=True, check=True).stdout.split()
    (run_id,) = _journal_runs(sv_home, tmux_socket, pane, int(pid), 1)
    from supervisor.journal import Journal

    with Journal(sv_home / "journals" / f"{run_id}.jsonl", run_id) as j:
        j.append("pause", {"pause_reason": "the agent stopped without reporting", "rule": "idle",
                           "next_action": f"tell the agent to go on, then `supervisor runs resume {run_id}` "
                                          f"(or `supervisor runs stop {run_id}`)"})
    outputs = [run_cli("runs", "show", "nosuch", env=env), run_cli("runs", "why", env=env),
               run_cli("status", env=env), run_cli("runs", "show", run_id[4:12], env=env)]
    assert [o.returncode for o in outputs] == [2, 2, 0, 0], [o.stderr for o in outputs]
    text = "".join(o.stdout + o.stderr for o in outputs)
    prog = str((venv_bin / "supervisor").relative_to(REPO)) if venv_bin.is_relative_to(REPO) else str(
        venv_bin / "supervisor")
    assert "list runs with `" + prog + " runs`" in text
    assert f"(see `{prog} runs why --help`)" in text
    assert f"`{prog} runs resume {run_id}`" in text and f"explain a decision: {prog} runs why" in text
    assert not re.search(r"(^|[`(]|: )supervisor (runs|status|run|attach) ", text, re.M), text
    printed = set(re.findall(r"`(" + re.escape(prog) + r" [^`]+)`", text))
    assert len(printed) >= 3, printed
    for line in printed:  # each runs as printed (its --help: nothing is changed by running it)
        words = line.split()
        head = words[:next((i for i, w in enumerate(words[2:], 2) if not w.isalpha()), len(words))]
        r = subprocess.run(["bash", "-c", " ".join([*head, "--help"])], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, f"`{line}` does not run as printed: {r.stderr}"
    for prose in ("the supervisor runs verifiers", "supervisor: paused", "to type `supervisor` instead"):
        assert runnable(prose) == prose
    shown = outputs[3].stdout
    assert "┃" not in shown and "│" not in shown, "runs show: a line per decision, no table folded into 80 columns"
    assert re.search(r"^  seq \d+ \d\d:\d\d:\d\d escalation: ", shown, re.M), shown


def test_runs_why_shows_a_mostly_blank_screen_compactly() -> None:
    from supervisor.cli.runs_cmds import _screen_rows

    screen = "Aider v0.86.0\n\nsuggest this:\n" + "\n" * 23 + "rm -rf ~/\nRun shell command? [Yes]:\n\n"
    assert _screen_rows(screen) == "Aider v0.86.0\n\nsuggest this:\n(23 blank rows)\nrm -rf ~/\nRun shell command? [Yes]:"
