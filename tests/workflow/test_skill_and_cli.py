"""`supervisor skill install` and `supervisor spec ...` through the real CLI."""

from __future__ import annotations

from pathlib import Path

from supervisor.workflow.skill import BEGIN, END, install, uninstall_snippet
from tests.conftest import invoke_cli
from tests.workflow.e2e_helpers import SPEC3


def test_skill_install_is_idempotent_and_keeps_agents_md(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "AGENTS.md").write_text("# House rules\n\nUse tabs.\n")
    first = install(proj, home=tmp_path / "home")
    assert [(w.agent, w.action) for w in first] == [("claude", "created"), ("codex", "updated")]
    skill = (proj / ".claude/skills/checkpoint-protocol/SKILL.md").read_text()
    assert skill.startswith("---\nname: checkpoint-protocol\n") and "<checkpoint>" in skill
    agents = (proj / "AGENTS.md").read_text()
    assert agents.startswith("# House rules\n\nUse tabs.\n") and agents.count(BEGIN) == 1
    again = install(proj, home=tmp_path / "home")
    assert [w.action for w in again] == ["unchanged", "unchanged"]
    assert (proj / "AGENTS.md").read_text() == agents
    assert uninstall_snippet(agents).strip() == "# House rules\n\nUse tabs."
    user = install(proj, user=True, home=tmp_path / "home", agents=("claude", "codex"))
    assert user[0].path == tmp_path / "home/.claude/skills/checkpoint-protocol/SKILL.md"
    assert user[1].path == tmp_path / "home/.codex/AGENTS.md" and END in user[1].path.read_text()


def test_skill_install_cli_prints_what_it_wrote(tmp_path: Path, cli_env: dict[str, str]) -> None:
    r = invoke_cli("skill", "install", "--project", str(tmp_path), env=cli_env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.replace("\n", "")  # the table folds long paths at the terminal's width
    assert "SKILL.md" in out and "AGENTS.md" in out and "created" in out


def test_spec_cli_new_validate_approve_show(tmp_path: Path, cli_env: dict[str, str]) -> None:
    p = tmp_path / "s.yaml"
    r = invoke_cli("spec", "new", str(p), env=cli_env)
    assert r.returncode == 0 and p.exists()
    assert invoke_cli("spec", "new", str(p), env=cli_env).returncode == 2
    r = invoke_cli("spec", "validate", str(p), "--require-approved", env=cli_env)
    assert r.returncode == 1 and "draft" in r.stdout
    r = invoke_cli("spec", "approve", str(p), "--by", "alice", env=cli_env)
    assert r.returncode == 0 and "approved" in r.stdout
    assert invoke_cli("spec", "validate", str(p), "--require-approved", env=cli_env).returncode == 0
    r = invoke_cli("spec", "show", str(p), "--json", env=cli_env)
    assert r.returncode == 0 and '"runnable": true' in r.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(SPEC3.replace("expect: pass", "expect: maybe"))
    r = invoke_cli("spec", "validate", str(bad), env=cli_env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"error: {bad}:") and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_runs_commands_on_unknown_run(cli_env: dict[str, str]) -> None:
    for cmd in ("review", "stop", "resume", "summarize", "postmortem"):
        r = invoke_cli("runs", cmd, "run_nope", env=cli_env)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert "not found" in r.stderr and "Traceback" not in r.stderr


def test_lifecycle_commands_reach_a_live_plain_run_through_its_control_channel(sv_home: Path,
                                                                             cli_env: dict[str, str]) -> None:
    """Every run has a control channel: while its supervisor lives (here: this test process holds
    the run's control lock) the CLI hands requests over and never writes its journal; once the
    supervisor is gone, `runs stop` closes the run in its journal."""
    import json

    from supervisor.control import RunControl
    from supervisor.journal import Journal
    from supervisor.settings import Settings

    journal = sv_home / "journals" / "run_plain.jsonl"
    with Journal(journal, "run_plain") as j:
        j.append("run_started", {"pane_id": "%1"})
    control = RunControl(Settings(home=sv_home), "run_plain")
    try:
        for cmd in ("stop", "review", "resume"):
            r = invoke_cli("runs", cmd, "run_plain", env=cli_env)
            assert r.returncode == 0 and "live supervisor" in r.stdout, (cmd, r.stdout, r.stderr)
        r = invoke_cli("runs", "task", "run_plain", "fix the bug", env=cli_env)
        assert r.returncode == 0 and "handed to the live supervisor" in r.stdout, r.stderr
        requests = [json.loads(f.read_text()) for f in sorted(control.dir.glob("*.json"))]
        assert sorted(q["type"] for q in requests) == ["resume", "review", "stop", "task"]
        assert len(journal.read_text().splitlines()) == 1
    finally:
        control.close()
    r = invoke_cli("runs", "task", "run_plain", "fix the bug", env=cli_env)
    assert r.returncode == 2 and "no live supervisor" in r.stderr, r.stderr
    r = invoke_cli("runs", "stop", "run_plain", env=cli_env)
    assert r.returncode == 0 and "marked stopped" in r.stdout
    assert '"outcome":"stopped"' in journal.read_text()
