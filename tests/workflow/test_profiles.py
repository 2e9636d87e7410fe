"""Worker profiles and supervision modes: policy data (`supervision:`) that `supervisor profiles`
shows and the workflow controller obeys (retries per step, instruction wording, pause handling)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.journal import Journal
from supervisor.policy import load_policy
from supervisor.settings import Settings
from supervisor.workflow.controller import WorkflowController
from supervisor.workflow.profiles import apply_prefs, choose, fill_prefs
from supervisor.workflow.spec import parse_spec
from tests.conftest import REPO, invoke_cli, run_cli
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import SPEC3, journal_events, kinds, wf_decisions
from tests.workflow.test_follow_transcript import checkpoint, follow_files, say

POLICY = """\
extends: baseline
name: team
supervision:
  profiles:
    opus:
      agents: [claude]
      provider: anthropic
      model: claude-opus-4-1
      trust: high
    intern:
      agents: [aider]
      trust: low
"""

FAILING = "import sys\nprint('FAIL: greeting should say hello, world')\nsys.exit(1)\n"


@pytest.fixture
def team_policy(tmp_path: Path) -> Path:
    p = tmp_path / "team.yaml"
    p.write_text(POLICY)
    return p


def test_profiles_lists_profiles_modes_and_an_agents_choice(team_policy: Path, sv_home: Path) -> None:
    r = invoke_cli("profiles", "--policy", str(team_policy), "--agent", "claude", "--json")
    assert r.returncode == 0, r.stderr
    x = json.loads(r.stdout)
    assert x["profiles"]["opus"]["mode"] == "collaborative_reviewer" and x["profiles"]["intern"]["mode"] == "directive_lead"
    assert x["profiles"]["default"]["mode"] == "strict_verifier"
    assert x["modes"]["directive_lead"]["max_retries_per_node"] == 1
    assert x["modes"]["collaborative_reviewer"]["pause"] == "notify_then_ai"
    assert x["modes"]["strict_verifier"]["max_retries_per_node"] == 2, "strict keeps the policy's budget"
    assert x["agent"] == {"profile": "opus", "mode": "collaborative_reviewer", "provider": "anthropic",
                          "model": "claude-opus-4-1", "trust": "high", "chosen_by": "agent", "preference": None}
    r = invoke_cli("profiles", "--policy", str(team_policy), "--agent", "gemini")
    assert "a workflow run of gemini: profile default (the policy's default), mode strict_verifier" in r.stdout
    bad = team_policy.with_name("bad.yaml")
    bad.write_text(POLICY + "  default_profile: nobody\n")
    r = invoke_cli("profiles", "--policy", str(bad))
    assert r.returncode == 2 and "supervision.default_profile 'nobody' is not one of its profiles" in r.stderr


def _retries_then(profile: str, team_policy: Path, tmp_path: Path, sv_home: Path) -> list[dict]:
    """Report the failing step again and again under ``profile``; the workflow decisions made."""
    project = tmp_path / profile
    project.mkdir()
    (project / "hello.py").write_text("print('hello, world')\n")
    (project / "check.py").write_text(FAILING)
    settings = Settings(home=sv_home).ensure()
    j = Journal(settings.journal_path(f"run_{profile}"), f"run_{profile}")
    ctl = WorkflowController(parse_spec(SPEC3), j, None, load_policy(team_policy), settings, f"run_{profile}",
                             cwd=project, profile=profile)

    def decisions() -> list[dict]:
        return [e.payload for e in j.events() if e.kind == "decision" and e.payload.get("source") == "workflow"
                and e.payload.get("kind") != "verify"]

    try:
        ctl.on_output("<checkpoint>\ncheckpoint_seq: 1\nstatus: step_done\ncurrent_node: write\n</checkpoint>")
        retry_until(lambda: (ctl.tick(), decisions())[1], 20)
        for seq in range(2, 7):
            ctl.on_output(f"<checkpoint>\ncheckpoint_seq: {seq}\nstatus: step_done\ncurrent_node: test\n</checkpoint>")
            retry_until(lambda n=seq: (ctl.tick(), len(decisions()) >= n)[1], 20, message=lambda: str(decisions()))
            if decisions()[-1]["kind"] == "escalate":
                break
    finally:
        ctl.close()
        j.close()
    assert ctl.supervision.profile == profile and ctl.supervision.chosen_by == "requested"
    return decisions()


def test_the_controller_obeys_the_mode(team_policy: Path, tmp_path: Path, sv_home: Path) -> None:
    intern = _retries_then("intern", team_policy, tmp_path, sv_home)
    assert [d["kind"] for d in intern] == ["continue", "retry", "escalate"], "directive_lead: one retry, then a human"
    assert intern[0]["text"].startswith("Do exactly this next and nothing else. Step test")
    assert intern[1]["text"].startswith("Stop. The check for step test failed.")
    opus = _retries_then("opus", team_policy, tmp_path, sv_home)
    assert [d["kind"] for d in opus] == ["continue", "retry", "retry", "retry", "escalate"], \
        "collaborative_reviewer: three retries"
    assert opus[0]["text"].startswith("Continue with the next step: test")
    assert opus[1]["text"].startswith("Step test did not pass its check yet.")
    assert "FAIL: greeting should say hello, world" in opus[1]["text"]


def test_a_run_journals_its_profile_and_an_unknown_one_is_refused(tmp_path: Path, sv_home: Path) -> None:
    spec = tmp_path / "spec.yaml"
    from supervisor.workflow.spec import approve_spec_text

    spec.write_text(approve_spec_text(SPEC3, "tests"))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    r = invoke_cli("follow", str(transcript), "--spec", str(spec), "--profile", "nobody", "--timeout", "1")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no worker profile 'nobody'" in r.stderr
    r = invoke_cli("follow", str(transcript), "--spec", str(spec), "--agent", "claude", "--timeout", "0.5")
    assert r.returncode == 1, r.stdout + r.stderr  # the timeout
    run_id = r.stdout.strip().split()[-2]
    notes = [json.loads(x)["payload"] for x in (sv_home / "journals" / f"{run_id}.jsonl").read_text().splitlines()
             if json.loads(x)["kind"] == "note"]
    sup = next(n for n in notes if n.get("type") == "supervision")
    assert sup["profile"] == "default" and sup["mode"] == "strict_verifier" and sup["chosen_by"] == "default"


def test_preferences_choose_the_profile_and_fill_the_templates(team_policy: Path) -> None:
    """`profile.AGENT` beats `profile`, both beat the policy's agent listing, a requested profile beats
    them all; a preference naming no profile is passed over. `{prefs.KEY}` is filled (empty when
    unset, braces in a value kept literal) and `instructions` ends every template that does not
    place it itself."""
    policy = load_policy(team_policy)
    assert choose(policy, "claude").profile == "opus"
    c = choose(policy, "claude", prefs={"profile": "intern"})
    assert (c.profile, c.mode, c.chosen_by, c.preference) == ("intern", "directive_lead", "preference", "profile")
    c = choose(policy, "claude", prefs={"profile": "intern", "profile.claude": "default"})
    assert (c.profile, c.preference) == ("default", "profile.claude")
    assert choose(policy, "claude", "opus", prefs={"profile.claude": "intern"}).chosen_by == "requested"
    assert choose(policy, "gemini", prefs={"profile": "nobody"}).chosen_by == "default"
    assert fill_prefs("Ticket {prefs.ticket}: step {step_id}{prefs.none}", {"ticket": "{x}"}) == \
        "Ticket {{x}}: step {step_id}"
    filled = apply_prefs(policy, {"instructions": "Use pnpm {never} npm."}).templates
    assert filled.next_step.endswith("{objective}\n\nUse pnpm {{never}} npm.")
    assert all(t.endswith("Use pnpm {{never}} npm.") for t in (filled.retry, filled.branch, filled.unblock))
    assert apply_prefs(policy, {}) is policy


PREFS_POLICY = POLICY + """\
  modes:
    directive_lead:
      templates:
        next_step: 'Ticket {prefs.ticket}. Do exactly step {step_id} now: {objective}.'
"""


def test_follow_obeys_the_preferred_profile_and_journals_what_it_used(tmp_path: Path, sv_home: Path,
                                                                      cli_env: dict[str, str]) -> None:
    """Through the CLI: `prefs set profile.claude intern` makes a claude run's worker the intern
    (directive_lead: its wording, one retry, then a human), `{prefs.ticket}` and `instructions` shape
    each instruction; the run journals profile, mode and preferences, and `runs why` shows them."""
    policy = tmp_path / "team.yaml"
    policy.write_text(PREFS_POLICY)
    for key, value in (("profile", "opus"), ("profile.claude", "intern"), ("ticket", "JIRA-7"),
                       ("instructions", "Use pnpm, never npm.")):
        assert invoke_cli("prefs", "set", key, value, env=cli_env).returncode == 0
    project, spec, transcript = follow_files(tmp_path)
    log = tmp_path / "follow.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "follow", str(transcript), "--spec", str(spec),
                                 "--cwd", str(project), "--agent", "claude", "--policy", str(policy),
                                 "--timeout", "120"], env=cli_env, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
    try:
        run_id = retry_until(lambda: next(iter(p.stem for p in (sv_home / "journals").glob("*.jsonl")), None), 60,
                             message="the run to start")

        def decided() -> list[str]:
            return [d["kind"] for d in wf_decisions(journal_events(sv_home, run_id)) if d["kind"] != "verify"]

        (project / "hello.py").write_text("print('hello, world')\n")
        (project / "check.py").write_text(FAILING)
        say(transcript, checkpoint(1, "step_done", "write", "wrote hello.py"))
        retry_until(lambda: decided() == ["continue"], 60, message=lambda: log.read_text()[-2000:])
        for seq in (2, 3):
            say(transcript, checkpoint(seq, "step_done", "test", "check written"))
            retry_until(lambda n=seq: len(decided()) == n, 60, message=lambda: log.read_text()[-2000:])
        assert decided() == ["continue", "retry", "escalate"], "directive_lead: one retry, then a human"
        evs = journal_events(sv_home, run_id)
        sup = next(n for n in kinds(evs, "note") if n.get("type") == "supervision")
        assert (sup["profile"], sup["mode"], sup["chosen_by"], sup["preference"]) == (
            "intern", "directive_lead", "preference", "profile.claude")
        used = next(n for n in kinds(evs, "note") if n.get("type") == "preferences")["values"]
        assert used == {"instructions": "Use pnpm, never npm.", "profile": "opus", "profile.claude": "intern",
                        "ticket": "JIRA-7"}
        told = [n["text"] for n in kinds(evs, "note") if n.get("type") == "instruction_undelivered"]
        assert told[0] == ("Ticket JIRA-7. Do exactly step test now: make check.py pass.\n\n"
                           "Use pnpm, never npm.")
        assert told[1].startswith("Stop. The check for step test failed.") and "FAIL: greeting" in told[1]
        assert told[1].endswith("Use pnpm, never npm.")
        why = invoke_cli("runs", "why", run_id, env=dict(cli_env, COLUMNS="200"))
        assert why.returncode == 0, why.stderr
        assert "profile intern (preference profile.claude), mode directive_lead" in why.stdout, why.stdout
        assert "instructions = Use pnpm, never npm." in why.stdout and "ticket = JIRA-7" in why.stdout
        x = json.loads(invoke_cli("runs", "why", run_id, "--json", env=cli_env).stdout)
        assert x["supervision"]["mode"] == "directive_lead" and x["run_prefs"]["ticket"] == "JIRA-7"
        seen = invoke_cli("observe", run_id, "--no-screen", env=cli_env)
        assert "profile intern (preference profile.claude), mode directive_lead" in seen.stdout, seen.stdout
        r = invoke_cli("report", "run", run_id, "--out", str(tmp_path / "report"), env=cli_env)
        assert r.returncode == 0, r.stderr
        md = next((tmp_path / "report").rglob("*.md")).read_text()
        assert "## Supervision" in md and "intern (chosen by preference (profile.claude))" in md
        assert "preference instructions" in md and "Use pnpm, never npm." in md
        # a second opinion about the live run is journaled by its supervisor (here `follow`'s controller)
        asked = invoke_cli("oracle", "consult", "-q", "Why does check.py fail?", "--run", run_id, "--json",
                           env={**cli_env, "ANTHROPIC_API_KEY": ""})
        assert json.loads(asked.stdout)["stored"] == "journaled", asked.stdout + asked.stderr
        assert [n["question"] for n in kinds(journal_events(sv_home, run_id), "note") if n.get("type") == "oracle"] \
            == ["Why does check.py fail?"]
        assert run_cli("runs", "stop", run_id, env=cli_env).returncode == 0
        proc.wait(60)
        rep = json.loads(run_cli("runs", "replay", run_id, "--no-observations", "--json", env=cli_env).stdout)
        assert {x["divergence"] for x in rep["checkpoints"]} == {"agree"}, "replayed as its worker was supervised"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_resumed_run_keeps_its_profile_and_preferences(team_policy: Path, tmp_path: Path, sv_home: Path) -> None:
    """The controller of a resumed run takes the profile and the preferences its run journaled, not
    what has been set since (a preference naming no profile is journaled as passed over)."""
    settings = Settings(home=sv_home).ensure()
    ledger_prefs = {"profile": "nobody", "instructions": "Small commits."}
    j = Journal(settings.journal_path("run_keep"), "run_keep")
    j.append("run_started", {"agent": "aider"})
    first = WorkflowController(parse_spec(SPEC3), j, None, load_policy(team_policy), settings, "run_keep",
                               cwd=tmp_path, prefs=ledger_prefs)
    first.tick()
    first.close()
    assert (first.supervision.profile, first.supervision.chosen_by) == ("intern", "agent")
    notes = [e.payload for e in j.events() if e.kind == "note"]
    assert notes[0]["ignored_preferences"] == {"profile": "nobody"}
    assert notes[1] == {"type": "preferences", "values": ledger_prefs}
    again = WorkflowController(parse_spec(SPEC3), j, None, load_policy(team_policy), settings, "run_keep",
                               cwd=tmp_path, prefs={"instructions": "Big bang."}, profile="opus")
    again.tick()
    again.close()
    j.close()
    assert again.supervision.profile == "intern" and again.preferences == ledger_prefs
    assert again.policy.templates.retry.endswith("Small commits.")
    assert len([e for e in Journal(settings.journal_path("run_keep"), "run_keep").events() if e.kind == "note"]) == 2


def test_run_profile_is_refused_before_anything_starts(tmp_path: Path, live_env: dict[str, str],
                                                       tmux_socket: str) -> None:
    spec = tmp_path / "spec.yaml"
    from supervisor.workflow.spec import approve_spec_text

    spec.write_text(approve_spec_text(SPEC3, "tests"))
    r = run_cli("run", "--profile", "default", "--", "true", env=live_env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "add --spec PLAN.yaml" in r.stderr, r.stderr
    r = run_cli("run", "--spec", str(spec), "--profile", "nobody", "--", "true", env=live_env)
    assert r.returncode == 2 and "no worker profile 'nobody' in the policy" in r.stderr, r.stderr
    r = run_cli("attach", "%0", "--spec", str(spec), "--profile", "nobody", env=live_env)
    assert r.returncode == 2 and "no worker profile 'nobody'" in r.stderr, r.stderr
    listed = subprocess.run(["tmux", "-L", tmux_socket, "list-sessions"], capture_output=True, text=True)
    assert listed.returncode != 0, f"nothing was started: {listed.stdout}"
