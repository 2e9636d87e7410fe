"""Agent knowledge is data: a made-up agent supported by a policy file alone, and the lookups of
``supervisor.agents`` (command lines, a real process tree through psutil, titles, exit keys)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from supervisor.agents import (
    agent_from_argv,
    agent_of_command,
    agent_of_pane,
    agent_of_process_tree,
    agent_of_title,
    exit_keys,
)
from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.models import RunState, Screen
from supervisor.policy import Policy, baseline_policy, load_policy
from tests.helpers import retry_until

# A made-up agent CLI, "quill": its own banner, message glyph, highlight glyph and composer (which
# it hides while a dialog is up, as real agents do).
QUILL_POLICY = """\
name: with-quill
# extends: baseline (the default): only what is new about quill is named here
agents:
  quill:
    commands: [quill]
    packages: [quill-cli]
    titles: [quill]
    markers: ['^✎ quill\\b', '^quill λ>']
    input_lines: ['^quill λ>(\\s|$)']
    highlight_glyphs: '▷'
    message_bullets: '◇'
    exit_keys: [':quit', 'Enter']
"""


def quill_dialog(command: str) -> str:
    return f"""\
✎ quill 0.3 · model fake-1 · ~/proj

◇ I will check the project first.

◇ shell({command})

┌ quill needs permission ─────────────────────────────┐
│ Command: {command:<43}│
│ Let quill run this command?                          │
│ ▷ 1. Allow                                           │
│   2. Deny                                            │
└──────────────────────────────────────────────────────┘
"""


QUILL_IDLE = """\
✎ quill 0.3 · model fake-1 · ~/proj

◇ Done: the tests pass.

quill λ>
"""


@pytest.fixture()
def quill(tmp_path: Path) -> Policy:
    path = tmp_path / "quill.yaml"
    path.write_text(QUILL_POLICY, encoding="utf-8")
    return load_policy(path)


def fresh() -> RunState:
    return RunState(run_id="t", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True)


def test_a_made_up_agent_is_a_policy_change_only(quill: Policy) -> None:
    """Detected by its command and by its screen; its dialog (a highlight glyph and a composer the
    baseline has never seen) understood; a benign command approved with the key its menu takes; a
    dangerous one escalated (the danger patterns come from the baseline it extends)."""
    benign = Screen(text=quill_dialog("npm test"), current_command="quill")
    obs = classify(benign, quill)
    assert (obs.agent, obs.state) == ("quill", "asking")
    assert obs.prompt is not None and obs.prompt.kind == "tool_permission"
    assert [o.label for o in obs.prompt.options] == ["Allow", "Deny"] and obs.prompt.highlighted == 0
    dec = decide(obs, fresh(), quill)
    assert (dec.kind, dec.keys, dec.approves) == ("answer", ["1"], True)

    assert classify(Screen(text=quill_dialog("npm test")), quill).agent == "quill"  # by its banner alone

    dangerous = classify(Screen(text=quill_dialog("rm -rf ~/"), current_command="quill"), quill)
    assert dangerous.state == "asking" and dangerous.prompt.risk.level == "dangerous"
    dec = decide(dangerous, fresh(), quill)
    assert dec.kind == "escalate" and not dec.keys and "rm-" in dec.reason

    idle = classify(Screen(text=QUILL_IDLE, current_command="quill"), quill)
    assert (idle.agent, idle.state) == ("quill", "idle")
    assert exit_keys("quill", quill) == [":quit", "Enter"]


def test_without_its_entry_the_made_up_agent_is_unknown_and_nothing_is_approved() -> None:
    """The same screens under the plain baseline: the agent is unknown and its menu is not
    understood, so no key is sent (fail safe)."""
    base = baseline_policy()
    obs = classify(Screen(text=quill_dialog("npm test"), current_command="quill"), base)
    assert obs.agent == "unknown"
    assert decide(obs, fresh(), base).keys == []


def test_command_lines_name_the_agent_they_start() -> None:
    policy = baseline_policy()
    assert agent_from_argv(["aider", "--model", "x"], policy) == "aider"
    assert agent_from_argv(["python3", "-m", "aider", "--model", "x"], policy) == "aider"
    assert agent_from_argv("npx @anthropic-ai/claude-code", policy) == "claude"
    assert agent_from_argv(["node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"], policy) == "codex"
    assert agent_from_argv(["env", "TERM=xterm", "gemini"], policy) == "gemini"
    assert agent_from_argv(["q", "chat"], policy) == "kiro"
    assert agent_from_argv(["npx", "q"], policy) == "unknown"  # a one-letter name only as the program
    assert agent_from_argv(["vim", "claude.md"], policy) == "unknown"
    assert agent_from_argv(["python3", "-m", "http.server"], policy) == "unknown"
    assert agent_of_command("claude", policy) == "claude"
    assert agent_of_command("bash", policy) == "shell"
    assert agent_of_title("✳ Claude Code", policy) == "claude"
    assert exit_keys("claude", policy) == ["/exit", "Enter"] and exit_keys("nobody", policy) == []


@dataclass
class _Pane:
    current_command: str
    title: str = ""
    pid: int | None = None


def test_the_process_tree_names_an_agent_run_by_an_interpreter(quill: Policy, tmp_path: Path) -> None:
    """A real interpreter process running a script named after the agent (psutil reads its tree)."""
    script = tmp_path / "quill.py"
    script.write_text("import time\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        retry_until(lambda: agent_of_process_tree(proc.pid, quill) == "quill", 10,
                    message="the process tree to show quill")
        assert agent_of_pane(_Pane("python3", pid=proc.pid), quill) == "quill"
        assert agent_of_pane(_Pane("python3", pid=proc.pid), baseline_policy()) == "unknown"
    finally:
        proc.kill()
        proc.wait()
    assert agent_of_process_tree(proc.pid, quill) == "unknown"  # gone: nothing to read, no error
    assert agent_of_pane(_Pane("bash", title="quill: editing"), quill) == "quill"  # by its title
    assert agent_of_pane(_Pane("bash"), quill) == "shell"


# A second made-up agent, "loom", whose dialog grammar is nothing the baseline knows: a button row
# with no highlight glyph (its first button is the selected one, drawn only in colour), a hint line
# of its own, the command named after "loom wants to run:", and a busy line of its own. All of it
# is policy data, added to the baseline's lists (patterns are merged, the baseline's stay).
LOOM_POLICY = """\
name: with-loom
agents:
  loom:
    commands: [loom]
    markers: ['^loom ·', '\\bloom wants to\\b']
    input_lines: ['^loom> ']
    subject_patterns:
      - {kind: command, pattern: '^loom wants to run: (?P<subject>.+)$'}
      - {kind: path, pattern: '^loom wants to write (?P<subject>\\S+)$'}
    first_option_selected: true
    exit_keys: [C-d]
classifier:
  dialog_hints: ['^⏎ choose · ⎋ refuse$']
  busy_markers: ['^loom is weaving \\d+s$']
"""


def loom_dialog(subject_line: str) -> str:
    return f"""\
loom · 1.0 · ~/proj

loom> make the tests pass

  {subject_line}

  Go ahead?

  Allow   Allow for this session   Deny

⏎ choose · ⎋ refuse
"""


@pytest.fixture()
def loom(tmp_path: Path) -> Policy:
    path = tmp_path / "loom.yaml"
    path.write_text(LOOM_POLICY, encoding="utf-8")
    return load_policy(path)


def test_a_made_up_dialog_grammar_is_a_policy_change_only(loom: Policy) -> None:
    """Button row, hint line, subject line and busy line all from the policy file: a benign command
    approved with the one key known to pick the selected button (Enter), never the persistent
    button; a dangerous command, a write outside the project and a dialog naming no subject are
    escalated; the same screens under the plain baseline get no key at all."""
    obs = classify(Screen(text=loom_dialog("loom wants to run: npm test"), current_command="loom"), loom)
    assert (obs.agent, obs.state) == ("loom", "asking")
    prompt = obs.prompt
    assert prompt is not None and [o.label for o in prompt.options] == ["Allow", "Allow for this session", "Deny"]
    assert [o.approves for o in prompt.options] == [True, True, False] and prompt.options[1].persistent
    assert (prompt.risk.level, prompt.risk.subject, prompt.risk.subject_kind) == ("none", "npm test", "command")
    dec = decide(obs, fresh(), loom)
    assert (dec.kind, dec.keys, dec.approves) == ("answer", ["Enter"], True)

    for line, why in [("loom wants to run: git push --force origin main", "git-push-force"),
                      ("loom wants to write ~/.bashrc", "~/.bashrc"),
                      ("loom would like to do something", "")]:
        obs = classify(Screen(text=loom_dialog(line), current_command="loom"), loom)
        assert obs.state == "asking" and obs.prompt is not None, line
        dec = decide(obs, fresh(), loom)
        assert (dec.kind, dec.keys) == ("escalate", []) and why in dec.reason, (line, dec.reason)
    assert obs.prompt.risk.level == "unknown"  # the last: no subject named, so nothing to approve

    busy = classify(Screen(text="loom · 1.0 · ~/proj\n\nloom> make the tests pass\n\nloom is weaving 12s\n",
                           current_command="loom"), loom)
    assert (busy.agent, busy.state) == ("loom", "busy")
    assert exit_keys("loom", loom) == ["C-d"]

    base = baseline_policy()
    plain = classify(Screen(text=loom_dialog("loom wants to run: npm test"), current_command="loom"), base)
    assert plain.agent == "unknown" and decide(plain, fresh(), base).keys == []
