"""Writes and edits are judged by where they land: the path a dialog names, resolved against the
pane's working directory (``Screen.cwd``; ``supervisor classify --cwd``). Inside the project the
normal rules apply; outside it, and for shell startup files, ~/.ssh, ~/.aws, ~/.config, git and
package-manager config, CI and hook files and system paths wherever they are, the prompt is
escalated with the path in the reason. One dialog per agent, in each agent's layout (our own
file names and contents)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.models import RiskAssessment, RunState, Screen
from supervisor.policy import Policy, baseline_policy, parse_policy

RULE = "─" * 90
DASH = "╌" * 90
CWD = "/home/dev/shop"


def claude(path: str) -> str:
    return f"""\
● Write({path})

{RULE}
 Create file
 {path}
{DASH}
  1 # packing list for the release
{DASH}
 Do you want to create {path.rsplit("/", 1)[-1]}?
 ❯ 1. Yes
   2. Yes, allow all edits during this session (shift+tab)
   3. No

 Esc to cancel · Tab to amend
"""


def codex(path: str) -> str:
    return f"""\
• Editing the release notes.

  Would you like to make the following edits?

  Reason: record the packing list

  {path} (+1 -0)

› 1. Yes, proceed (y)
  2. No, and tell Codex what to do differently (esc)

  Press enter to confirm or esc to cancel
"""


def aider(path: str) -> str:
    return f"""\
diff> keep a packing list

I will create the file.

{path}
Create new file? (Y)es/(N)o [Yes]: """


def gemini(path: str) -> str:
    return f"""\
✦ I will write the packing list.

╭────────────────────────────────────────────────────────────────────────────────╮
│ ? WriteFile  Writing to {path:<55}│
│ ╭────────────────────────────────────────────────────────────────────────────╮ │
│ │ 1 # packing list for the release                                           │ │
│ ╰────────────────────────────────────────────────────────────────────────────╯ │
│ Apply this change?                                                             │
│                                                                                │
│ ● 1. Allow once                                                                │
│   2. Allow for this session                                                    │
│   3. No, suggest changes (esc)                                                 │
╰────────────────────────────────────────────────────────────────────────────────╯
"""


def qwen(path: str) -> str:
    return f"""\
  > keep a packing list

  ◆︎ I will write the packing list.
  ? WriteFile Writing to {path} ←

   1 # packing list for the release

   Apply this change?

   › 1. Yes, allow once
     2. Yes, allow always
     3. No, suggest changes (esc)


  ⠏ Waiting for user confirmation...
"""


def opencode(path: str) -> str:
    return f"""\
     I will write the packing list.

     ← Write {path}

  ┃
  ┃  △ Permission required
  ┃    → Edit {path}
  ┃
  ┃  1 + # packing list for the release
  ┃
  ┃   Allow once   Allow always   Reject                     ⇆ select  enter confirm
"""


def vibe(path: str) -> str:
    return f"""\
■ Creating {path}

⣄  Writing file… (0s Esc/Ctrl+C to interrupt)
┌──────────────────────────────────────────────────────────────────────────────┐
│ Permission for the file_system.write_file tool                               │
│ File: {path:<71}│
│                                                                              │
│ # packing list for the release                                               │
│                                                                              │
│   1. Allow once                                                              │
│   2. Allow for remainder of this session                                     │
│   3. Always allow                                                            │
│   4. Deny                                                                    │
│                                                                              │
│ ↑↓/jk navigate  Enter select  Esc reject                                     │
└──────────────────────────────────────────────────────────────────────────────┘
"""


AGENTS = {"claude": claude, "codex": codex, "aider": aider, "gemini": gemini, "qwen": qwen,
          "opencode": opencode, "vibe": vibe}


@pytest.fixture(scope="module")
def policy() -> Policy:
    return baseline_policy()


def judge(text: str, policy: Policy, cwd: str = CWD):
    obs = classify(Screen(text=text, width=100, height=40, cwd=cwd), policy)
    assert obs.state == "asking" and obs.prompt is not None, obs.evidence
    dec = decide(obs, RunState(run_id="w", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True), policy)
    return obs.prompt, dec


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_write_inside_the_project_is_approved(agent: str, policy: Policy) -> None:
    for path in ("notes/packing.md", f"{CWD}/notes/packing.md"):
        prompt, dec = judge(AGENTS[agent](path), policy)
        assert prompt.risk.subject_kind == "path" and prompt.risk.level == "none", (path, prompt.risk)
        assert dec.kind == "answer" and dec.approves is True, (path, dec.reason)


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize("path, why", [
    ("../home/.bashrc", "shell-startup"),  # relative, climbing out to a dotfile (Claude shows this)
    ("~/.zshrc", "shell-startup"),
    ("/home/dev/.ssh/authorized_keys", "ssh"),
    ("~/.aws/credentials", "cloud-credentials"),
    ("/home/dev/.config/tool/settings.json", "user-config"),
    ("~/.gitconfig", "git-config"),
    ("~/.npmrc", "package-manager-config"),
    (".git/hooks/pre-commit", "code-hooks"),  # inside the project, but it runs code
    (".github/workflows/release.yml", "code-hooks"),
    ("/etc/hosts", "system-path"),
    ("../other-project/notes.md", "write-outside-project"),
])
def test_writes_that_land_outside_or_run_code_are_escalated_with_the_path(agent: str, path: str, why: str,
                                                                          policy: Policy) -> None:
    prompt, dec = judge(AGENTS[agent](path), policy)
    assert prompt.risk.level == "dangerous" and why in prompt.risk.matched, prompt.risk
    assert dec.kind == "escalate" and not dec.keys
    shown = prompt.risk.subject or ""
    assert shown and shown in dec.reason, dec.reason  # the path is in the reason


def test_home_paths_are_shown_with_a_tilde_when_the_home_is_known(policy: Policy) -> None:
    prompt, dec = judge(claude("../.bashrc"), policy)
    assert prompt.risk.subject == "~/.bashrc" and "~/.bashrc" in dec.reason


def test_without_a_directory_an_absolute_write_cannot_be_placed(policy: Policy) -> None:
    """No pane directory and none on screen: a relative path stays inside, an absolute one is never
    approved (risk unknown), a dotfile is dangerous wherever it is."""
    prompt, dec = judge(qwen("notes/packing.md"), policy, cwd="")
    assert prompt.risk.level == "none" and dec.approves is True
    prompt, dec = judge(qwen("/srv/data/notes.md"), policy, cwd="")
    assert prompt.risk.level == "unknown" and dec.kind == "escalate"
    prompt, dec = judge(qwen("/srv/data/.bashrc"), policy, cwd="")
    assert prompt.risk.level == "dangerous" and dec.kind == "escalate"


def test_the_agents_own_footer_places_a_write(policy: Policy) -> None:
    """Mistral Vibe shows its working directory in its footer: that places an absolute path."""
    footer = f"\n{CWD} [PID 4242]                                    3/200k tokens (1%)\n"
    prompt, dec = judge(vibe(f"{CWD}/notes/packing.md") + footer, policy, cwd="")
    assert prompt.risk.level == "none" and dec.approves is True
    prompt, dec = judge(vibe("/srv/elsewhere/notes.md") + footer, policy, cwd="")
    assert prompt.risk.level == "dangerous" and "write-outside-project" in prompt.risk.matched


@pytest.mark.parametrize("question", ["Do you want to create settings.toml?",
                                      "Do you want to make this edit to settings.toml?"])
def test_a_file_named_only_by_its_basename_is_not_placed(question: str, policy: Policy) -> None:
    """Claude Code's question names only the file's basename; its path is in the dialog above. With
    that part scrolled away (a long preview), "settings.toml" is not taken for a file in the project
    (it may be ~/.config/tool/settings.toml): no subject, escalated. aider's questions name the file
    as the project knows it, and still place it."""
    text = f" {question}\n ❯ 1. Yes\n   2. Yes, allow all edits during this session (shift+tab)\n   3. No\n\n Esc to cancel\n"
    prompt, dec = judge(text, policy)
    assert prompt.risk.level == "unknown" and prompt.risk.subject is None
    assert dec.kind == "escalate" and not dec.keys
    prompt, dec = judge("diff> add the ignore rules\n\nAdd .aider* to .gitignore (recommended)? (Y)es/(N)o [Yes]: ",
                        policy)
    assert (prompt.risk.subject, prompt.risk.level) == (".gitignore", "none") and dec.approves is True
    prompt, dec = judge("diff> look at the exporter\n\nAdd src/export.py to the chat? (Y)es/(N)o [Yes]: ", policy)
    assert (prompt.risk.subject, prompt.risk.level) == ("src/export.py", "none") and dec.approves is True


def test_the_directory_named_in_the_pane_title_places_a_write_only_outside(policy: Policy) -> None:
    """Qwen Code names its directory in the pane title ("Qwen - shop"): with no full directory known,
    an absolute path with no "shop" on its way lands outside; one with it may be inside or not, so
    it stays unknown (the name never makes a write inside); a known directory wins over the title."""
    def titled(path: str, cwd: str = "") -> RiskAssessment:
        obs = classify(Screen(text=qwen(path), width=100, height=40, title="✳︎ Qwen - shop", cwd=cwd), policy)
        assert obs.prompt is not None
        return obs.prompt.risk

    outside = titled("/srv/elsewhere/notes.md")
    assert outside.level == "dangerous" and "write-outside-project" in outside.matched
    assert titled("/srv/shop/notes.md").level == "unknown"
    assert titled("/srv/shop/notes.md", cwd="/srv/shop").level == "none"
    assert titled("notes.md").level == "none"
    base = classify(Screen(text=qwen("/srv/elsewhere/notes.md"), width=100, height=40), policy).prompt
    assert base is not None and base.risk.level == "unknown"  # no title, no name: cannot be placed


def test_write_risk_knobs_are_policy_data(policy: Policy) -> None:
    """A policy may accept writes outside the project (naming the knob) and add its own paths."""
    lenient = parse_policy("answers:\n  write_risk:\n    outside_project: none\n"
                           "    paths:\n      - {name: secrets-dir, pattern: '(^|/)secrets/'}\n")
    prompt, dec = judge(claude("../other-project/notes.md"), lenient)
    assert prompt.risk.level == "none" and dec.approves is True
    prompt, dec = judge(claude("secrets/token.txt"), lenient)
    assert "secrets-dir" in prompt.risk.matched and dec.kind == "escalate"
    from supervisor.policy import safety_relaxations

    assert "write_risk.outside_project lowered to none" in safety_relaxations(lenient)


def test_classify_cli_takes_the_working_directory(tmp_path: Path) -> None:
    from supervisor.cli import main

    capture = tmp_path / "write.txt"
    capture.write_text(claude("/home/dev/shop/notes/packing.md"), encoding="utf-8")
    inside = CliRunner().invoke(main, ["classify", "--json", "--cwd", "/home/dev/shop", str(capture)])
    outside = CliRunner().invoke(main, ["classify", "--json", "--cwd", "/home/dev/elsewhere", str(capture)])
    assert inside.exit_code == 0 and '"approves": true' in inside.stdout
    assert outside.exit_code == 0 and "write-outside-project" in outside.stdout and '"kind": "escalate"' in outside.stdout
    bad = CliRunner().invoke(main, ["classify", "--cwd", "relative/dir", str(capture)])
    assert bad.exit_code == 2 and "absolute" in bad.output


def codex_command(command: str, *more: str) -> str:
    """Codex's "run the following command?" dialog for ``command`` (and its further lines)."""
    text = codex(command).replace("make the following edits?", "run the following command?")
    return text.replace(f"  {command} (+1 -0)", "\n".join([f"  $ {command}", *(f"  {ln}" for ln in more)]))


@pytest.mark.parametrize("command, dangerous", [
    ("echo 'export EDITOR=vim' >> ~/.bashrc", True),
    ("cat > /home/dev/.ssh/config <<'EOF'", True),
    ("printf '[user]\\n' | tee -a ~/.gitconfig", True),
    ("pytest -q > /tmp/../home/dev/test-log.txt 2>&1", True),  # /tmp named, the home written
    ("pytest -q > /tmp/test-log.txt 2>&1", False),  # the policy's scratch place: a log under /tmp
    ("cat > ../other-project/notes.md <<'EOF'", True),
    ("echo done | tee /srv/elsewhere/status.txt", True),
    ("pytest -q > test-log.txt 2>&1", False),
    ("make docs > build/docs.log", False),
    (f"cat > {CWD}/notes/packing.md <<'EOF'", False),
    ("pytest -q 2>/dev/null", False),
])
def test_a_command_that_writes_a_file_is_judged_by_the_file(command: str, dangerous: bool, policy: Policy) -> None:
    """A redirect or tee is a write, judged like a file write: a shell startup file, ~/.ssh or git
    config as its target, or a target outside the project, is escalated whatever else the command
    does; a log file inside the project is not."""
    prompt, dec = judge(codex_command(command), policy)
    assert prompt.risk.subject_kind == "command"
    assert (prompt.risk.level == "dangerous") is dangerous, prompt.risk
    assert (dec.kind == "escalate") is dangerous
    assert bool(dec.approves) is (not dangerous)


def test_a_command_writing_where_it_cannot_be_placed_is_never_approved(policy: Policy) -> None:
    """No pane directory and none on screen: a command writing an absolute path is not approved (risk
    unknown), as a file write there is not; a relative target stays inside; the directory's name in
    the pane title places a path without it outside (and never one with it inside)."""
    prompt, dec = judge(codex_command("cat > /srv/shop/notes.md <<'EOF'"), policy, cwd="")
    assert prompt.risk.level == "unknown" and "write-not-placed" in prompt.risk.matched
    assert dec.kind == "escalate" and not dec.keys
    prompt, dec = judge(codex_command("pytest -q > test-log.txt 2>&1"), policy, cwd="")
    assert prompt.risk.level == "none" and dec.approves is True

    def titled(command: str) -> RiskAssessment:
        text = codex_command(command)
        obs = classify(Screen(text=text, width=100, height=40, title="[ ! ] Action Required | shop"), policy)
        assert obs.prompt is not None
        return obs.prompt.risk

    outside = titled("cat > /srv/elsewhere/notes.md <<'EOF'")
    assert outside.level == "dangerous" and "write-outside-project" in outside.matched
    assert titled("cat > /srv/shop/notes.md <<'EOF'").level == "unknown"


def test_a_write_on_a_later_line_of_the_command_is_judged_too(policy: Policy) -> None:
    """Danger is read over the whole dialog: a multi-line command whose first line writes nothing
    still has every redirect in it placed."""
    prompt, dec = judge(codex_command("cd build && make docs", "cp docs.log /tmp/ && echo ok > /srv/elsewhere/ok"),
                        policy)
    assert prompt.risk.level == "dangerous" and "write-outside-project" in prompt.risk.matched, prompt.risk
    assert dec.kind == "escalate" and not dec.keys
