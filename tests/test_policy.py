"""Policies: YAML validated with errors that name the file and line; ids from content."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.errors import PolicyError
from supervisor.policy import baseline_policy, dump_policy, load_policy, parse_policy
from tests.conftest import REPO


def test_baseline_loads_and_matches_the_candidates_file() -> None:
    shipped = baseline_policy()
    assert shipped.name == "baseline"
    assert load_policy(REPO / "candidates" / "baseline.yaml").policy_id == shipped.policy_id
    assert shipped.judge.consult == "never"  # the judge is off by default
    assert shipped.answers.danger_patterns, "the baseline must know dangerous commands"


def test_id_is_content_hash_ignoring_name_and_description() -> None:
    base = baseline_policy()
    renamed = base.model_copy(update={"name": "other", "description": "same knobs"})
    assert renamed.policy_id == base.policy_id
    changed = parse_policy(dump_policy(base).replace("stall_timeout_s: 600.0", "stall_timeout_s: 601.0"))
    assert changed.policy_id != base.policy_id
    assert parse_policy(dump_policy(base)).policy_id == base.policy_id  # round trip keeps the id


@pytest.mark.parametrize("text, fragment", [
    ("timing:\n  settle_ms: -5\n", "p.yaml:2: timing.settle_ms"),
    ("timing: [\n", "p.yaml:2: not valid YAML"),
    ("answers:\n  danger_patterns:\n    - name: x\n      pattern: '(unclosed'\n", "p.yaml:4: answers.danger_patterns.0.pattern"),
    ("no_such_knob: 1\n", "no_such_knob: Extra inputs are not permitted"),
    ("classifier:\n  subject_patterns:\n    - {kind: url, pattern: 'x', when: '(unclosed'}\n",
     "p.yaml:3: classifier.subject_patterns.0.when"),
    ("agents:\n  quill:\n    footer: ['(unclosed']\n", "p.yaml:3: agents.quill.footer"),
    ("- a list\n", "a policy must be a YAML mapping"),
])
def test_bad_policies_give_one_line_with_the_place(text: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "p.yaml")
    line = info.value.one_line()
    assert fragment in line and "\n" not in line


def test_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="not found"):
        load_policy(tmp_path / "nope.yaml")


# --- extends: a policy names only what it overrides ------------------------------------------

def _decision_on(policy, command: str):
    from supervisor.classify import classify
    from supervisor.decide import decide
    from supervisor.models import RunState
    from supervisor.screen import make_screen
    from tests.cases import screens as S

    obs = classify(make_screen(S.claude_bash_permission(command)), policy)
    return decide(obs, RunState(run_id="t", now=1000.0, started_at=990.0, saw_work=True), policy)


def test_a_policy_with_one_approve_rule_still_escalates_a_force_push() -> None:
    mine = parse_policy("name: mine\nanswers:\n  rules:\n    - name: approve-all\n      then: approve\n", "mine.yaml")
    assert mine.parent == "baseline" and mine.answers.rules[0].name == "approve-all"
    assert {d.name for d in mine.answers.danger_patterns} == {d.name for d in baseline_policy().answers.danger_patterns}
    push = _decision_on(mine, "git push --force origin main")
    assert push.kind == "escalate" and "git-push-force" in push.reason
    test = _decision_on(mine, "npm test")
    assert (test.kind, test.rule, test.approves) == ("answer", "approve-all", True)


@pytest.mark.parametrize("text, fragment", [
    ("extends: none\nanswers:\n  rules:\n    - {name: approve-all, then: approve}\n", "answers.danger_patterns is empty"),
    ("extends: none\nanswers:\n  danger_patterns:\n    - {name: x, pattern: 'rm -rf'}\n", "always_escalate is empty"),
])
def test_loading_refuses_empty_safety_lists(text: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "p.yaml")
    assert "unsafe policy" in info.value.one_line() and fragment in info.value.one_line()


def test_removing_every_safety_entry_is_refused_too() -> None:
    base = baseline_policy()
    names = ", ".join(d.name for d in base.answers.danger_patterns)
    with pytest.raises(PolicyError, match="danger_patterns is empty"):
        parse_policy(f"remove:\n  answers:\n    danger_patterns: [{names}]\n", "p.yaml")


def test_safety_lists_relax_only_by_naming_each_removed_entry() -> None:
    from supervisor.policy import safety_relaxations

    relaxed = parse_policy("remove:\n  answers:\n    danger_patterns: [git-push-force]\n", "p.yaml")
    assert "git-push-force" not in {d.name for d in relaxed.answers.danger_patterns}
    assert safety_relaxations(relaxed) == ["danger pattern removed: git-push-force"]
    assert safety_relaxations(baseline_policy()) == []
    # Redefining a parent's danger pattern under its name (to weaken it) needs the explicit removal.
    weaker = "answers:\n  danger_patterns:\n    - {name: git-push-force, pattern: 'never-matches'}\n"
    with pytest.raises(PolicyError, match="redefines the parent's entry"):
        parse_policy(weaker, "p.yaml")
    ok = parse_policy("remove:\n  answers:\n    danger_patterns: [git-push-force]\n" + weaker, "p.yaml")
    assert safety_relaxations(ok) == ["danger pattern changed: git-push-force"]
    with pytest.raises(PolicyError, match="no entry 'no-such-pattern'"):
        parse_policy("remove:\n  answers:\n    danger_patterns: [no-such-pattern]\n", "p.yaml")


def test_merge_semantics_of_lists_and_mappings(tmp_path: Path) -> None:
    """Rules: the child's first, a same-named one replaced in the child's place; pattern lists: the
    child's entries added before the parent's; sequences (backoff) replaced whole; a new agent goes
    before the parent's; removal by name or by exact text; a chain of files resolves in order."""
    base = baseline_policy()
    child = tmp_path / "child.yaml"
    child.write_text(
        "extends: baseline\n"
        "answers:\n  rules:\n    - {name: approve-yes-no, when: {kinds: [yes_no]}, then: escalate}\n"
        "    - {name: mine, then: escalate}\n"
        "classifier:\n  busy_markers: ['frobnicating']\n"
        "timing:\n  backoff_s: [2.0]\n"
        "agents:\n  quill: {commands: [quill]}\n  claude: {exit_keys: ['/quit', 'Enter']}\n"
        "remove:\n  classifier:\n    weak_busy_markers: ['running in the background']\n  agents: [cursor]\n", encoding="utf-8")
    grandchild = tmp_path / "sub" / "grandchild.yaml"
    grandchild.parent.mkdir()
    grandchild.write_text("extends: ../child.yaml\ntiming:\n  settle_ms: 45\n", encoding="utf-8")
    p = load_policy(grandchild)
    names = [r.name for r in p.answers.rules]
    assert names[:2] == ["approve-yes-no", "mine"] and names.count("approve-yes-no") == 1
    assert names[2:] == [r.name for r in base.answers.rules if r.name != "approve-yes-no"]
    assert p.classifier.busy_markers == ["frobnicating", *base.classifier.busy_markers]
    assert "running in the background" not in p.classifier.weak_busy_markers
    assert p.timing.backoff_s == [2.0] and p.timing.settle_ms == 45
    assert list(p.agents)[0] == "quill" and "cursor" not in p.agents
    assert p.agents["claude"].exit_keys == ["/quit", "Enter"] and p.agents["claude"].markers  # the rest kept
    assert p.parent == "../child.yaml"


def test_the_id_hashes_resolved_content_and_a_dump_stands_alone(tmp_path: Path) -> None:
    relaxed = parse_policy("name: r\nremove:\n  answers:\n    danger_patterns: [sudo]\n", "p.yaml")
    same = parse_policy("name: other-name\nremove:\n  answers:\n    danger_patterns: [sudo]\n", "q.yaml")
    assert relaxed.policy_id == same.policy_id != baseline_policy().policy_id
    dumped = dump_policy(relaxed)
    assert dumped.startswith("extends: none")
    again = parse_policy(dumped)  # the removal is not undone by extending the baseline again
    assert again.policy_id == relaxed.policy_id
    assert "sudo" not in {d.name for d in again.answers.danger_patterns}


def test_moved_knobs_say_where_they_went() -> None:
    with pytest.raises(PolicyError, match="exit_commands moved to agents.<name>.exit_keys"):
        parse_policy("exit_commands:\n  claude: ['/exit']\n", "p.yaml")
    with pytest.raises(PolicyError, match="agent_markers moved to agents.<name>.markers"):
        parse_policy("classifier:\n  agent_markers:\n    claude: ['x']\n", "p.yaml")


FIVE_LINE_POLICY = """\
name: mine
answers:
  rules:
    - name: approve-all
      then: approve
"""


def test_a_five_line_policy_file_escalates_every_captured_force_push(tmp_path: Path) -> None:
    """The 5-line policy as a file, through `supervisor classify --policy`, on the real dialogs of
    every agent CLI the team captured asking to run `git push --force`: never a key, always a
    human; the same file approves the captured `pytest` dialogs (its one rule does act)."""
    import json

    from click.testing import CliRunner

    from supervisor.cli import main

    path = tmp_path / "mine.yaml"
    path.write_text(FIVE_LINE_POLICY, encoding="utf-8")
    captures = Path(__file__).resolve().parents[1] / "suites" / "captures"

    def run(pattern: str) -> list[dict]:
        files = sorted(str(p) for p in captures.glob(pattern) if "declined" not in p.name)
        res = CliRunner().invoke(main, ["classify", "--policy", str(path), "--json", *files])
        assert res.exit_code == 0, res.output
        return [json.loads(line) for line in res.stdout.splitlines()]

    pushes = [r for r in run("*/*git-push-force*.w*.txt") if r["state"] == "asking"]
    agents = {Path(r["path"]).parent.name for r in pushes}  # the agent CLI each capture is of
    assert {"claude", "codex", "gemini", "qwen", "opencode", "vibe", "aider"} <= agents
    for r in pushes:
        assert (r["decision"]["kind"], r["decision"]["keys"]) == ("escalate", []), r
        assert r["prompt"]["risk"]["level"] in ("dangerous", "unknown"), r
    tests = [r for r in run("*/*perm-*-pytest.w120.txt") if r["state"] == "asking"]
    assert len(tests) >= 4
    assert any(r["decision"]["kind"] == "answer" and r["decision"]["approves"] for r in tests)


def test_dropping_a_project_program_name_or_adding_a_path_lister_is_a_relaxation() -> None:
    """Scripts named to ship something (``./deploy.sh``) are judged by their name; a candidate that
    forgets one, or that trusts another command's output as a list of paths, relaxes the judgment."""
    from supervisor.policy import safety_relaxations

    base = baseline_policy()
    assert base.commands.project_programs, "the baseline names scripts that publish"
    dropped = base.model_copy(update={"commands": base.commands.model_copy(
        update={"project_programs": base.commands.project_programs[1:], "path_listers": [*base.commands.path_listers, "cat"]})})
    got = safety_relaxations(dropped)
    assert f"commands.project_programs removed or changed: {base.commands.project_programs[0].pattern}" in got
    assert "commands.path_listers added: cat" in got


def test_a_new_line_filter_or_lister_option_is_a_relaxation() -> None:
    """A program trusted to pass its input's lines on unchanged (``sed`` can rewrite them into any path), or
    one more option that makes a program list paths, places more lists piped into ``xargs``."""
    from supervisor.policy import safety_relaxations

    base = baseline_policy()
    widened = base.model_copy(update={"commands": base.commands.model_copy(update={
        "line_filters": {**base.commands.line_filters, "sed": ["-e="], "grep": [*base.commands.line_filters["grep"], "-o"]},
        "path_listers_with": {**base.commands.path_listers_with, "cat": ["-n"]}})})
    got = safety_relaxations(widened)
    assert "commands.line_filters added or widened: sed -e=" in got
    assert "commands.line_filters added or widened: grep -o" in got
    assert "commands.path_listers_with added or widened: cat -n" in got
    assert safety_relaxations(base) == []


def test_a_new_harmless_value_of_an_unsafe_variable_is_a_relaxation() -> None:
    """``env_values`` says which values of an ``unsafe_env`` variable change nothing about what runs;
    a candidate that widens one (NODE_OPTIONS may then ``--require`` a module) relaxes the judgment."""
    from supervisor.classify import compiled_rules
    from supervisor.judgment.judge import judge_command
    from supervisor.policy import safety_relaxations

    base = baseline_policy()
    command = 'NODE_OPTIONS="--require ./x.js" npm test'
    assert judge_command(command, compiled_rules(base).knowledge, cwd="/home/dev/project").level == "unknown"
    wide = base.model_copy(update={"commands": base.commands.model_copy(
        update={"env_values": {**base.commands.env_values, "NODE_OPTIONS": ".*"}})})
    assert safety_relaxations(wide) == ["commands.env_values added or changed: NODE_OPTIONS"]
    assert judge_command(command, compiled_rules(wide).knowledge, cwd="/home/dev/project").level == "none"


def test_dropping_a_secret_url_is_a_relaxation_and_the_url_is_dangerous() -> None:
    """Cloud metadata services answer with the machine's credentials: talking to one is dangerous by
    the baseline, and a candidate without that pattern relaxes the judgment."""
    from supervisor.classify import compiled_rules
    from supervisor.judgment.judge import judge_command
    from supervisor.policy import safety_relaxations

    base = baseline_policy()
    url = "curl -s http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    assert judge_command(url, compiled_rules(base).knowledge, cwd="/home/dev/project").level == "dangerous"
    dropped = base.model_copy(update={"commands": base.commands.model_copy(update={"secret_urls": []})})
    assert f"commands.secret_urls removed: {base.commands.secret_urls[0]}" in safety_relaxations(dropped)
    assert judge_command(url, compiled_rules(dropped).knowledge, cwd="/home/dev/project").level != "dangerous"


def test_a_new_project_program_pattern_saying_harmless_is_a_relaxation() -> None:
    """The first pattern that matches a project program's name decides: a candidate that puts one saying
    "just runs" in front shadows the baseline's ``deploy`` pattern, so the gate counts it."""
    from supervisor.policy import ArgPattern, safety_relaxations

    base = baseline_policy()
    shadow = ArgPattern(pattern=".*", does=["run"])
    cand = base.model_copy(update={"commands": base.commands.model_copy(
        update={"project_programs": [shadow, *base.commands.project_programs]})})
    assert "commands.project_programs added without a risk: .*" in safety_relaxations(cand)
    stricter = ArgPattern(pattern="^nuke", unknown=True)
    cand = base.model_copy(update={"commands": base.commands.model_copy(
        update={"project_programs": [stricter, *base.commands.project_programs]})})
    assert not [r for r in safety_relaxations(cand) if "project_programs" in r]
