"""Each agent's dialog grammar (``AgentProfile.dialogs``): the agent's real dialogs fit it, are known
whole once drawn (by their recorded cursor), and a prompt that fits none of it is not the agent's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals import styles as S
from supervisor.classify import NOT_OWN_DIALOG, classify, frame_end_test
from supervisor.decide import decide
from supervisor.models import RunState
from supervisor.policy import Policy, baseline_policy
from supervisor.screen import make_screen

CAPTURES = Path(__file__).resolve().parents[1] / "suites" / "captures"
GRAMMAR_AGENTS = ("claude", "codex", "gemini", "aider", "shell")
NOT_WHOLE = {"claude/first-run-trust-folder.w120", "gemini/first-run-api-key-entry.w120",
             "gemini/first-run-api-key-entry.w200", "gemini/first-run-api-key-entry.w80"}
"""Captured dialogs not known whole: one capture of 2.1.197's trust dialog was taken before its key hints
were drawn; the key entry is a text field."""
POLICY = baseline_policy()
RS = RunState(run_id="r", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True)


def _captured_dialogs() -> list[tuple[str, dict]]:
    out = []
    for meta in sorted(CAPTURES.glob("*/*.json")):
        d = json.loads(meta.read_text())
        if d.get("expected", {}).get("state") == "asking" and d["agent"] in GRAMMAR_AGENTS:
            out.append((d["case_id"], d))
    return out


def _screen(d: dict):
    files = d["files"]
    raw = (CAPTURES / d["case_id"].split("/")[0] / (files.get("ansi") or files["plain"])).read_text()
    cx, cy = d.get("cursor") or (None, None)
    return make_screen(raw, width=d["width"], height=d["height"], title=d.get("title", ""),
                       current_command=d.get("current_command", ""), cursor_x=cx, cursor_y=cy)


@pytest.mark.parametrize(("case_id", "meta"), _captured_dialogs(), ids=[c for c, _ in _captured_dialogs()])
def test_real_dialogs_fit_their_agents_grammar(case_id: str, meta: dict) -> None:
    obs = classify(_screen(meta), POLICY)
    assert obs.state == "asking" and obs.prompt is not None, obs.evidence
    if obs.agent not in GRAMMAR_AGENTS:  # the screen does not say which agent it is (80 columns of a shell)
        assert obs.agent == "unknown" and obs.prompt.frame is None
        return
    assert obs.prompt.frame is not None, (obs.agent, obs.evidence)
    assert NOT_OWN_DIALOG not in obs.prompt.risk.matched
    if case_id not in NOT_WHOLE:
        assert obs.prompt.whole, (obs.prompt.frame, meta.get("cursor"), obs.evidence)


def test_a_dialog_is_whole_only_once_its_footer_is_drawn_and_the_cursor_is_back() -> None:
    """Claude Code draws its dialog top down: before the key-hint row is drawn it is not whole (the settle
    time applies); with the row drawn but the cursor still above the question (mid-drawing), not either."""
    text = S.claude_permission("npm test", "Run the unit tests", width=100).text
    rows = text.split("\n")
    opt = next(i for i, r in enumerate(rows) if "1. Yes" in r)
    whole = classify(make_screen(text, width=100, height=40, cursor_x=1, cursor_y=opt), POLICY)
    assert whole.prompt is not None and whole.prompt.frame == "dialog" and whole.prompt.whole
    half = "\n".join(rows[:-1])  # the footer not drawn yet
    obs = classify(make_screen(half, width=100, height=40, cursor_x=1, cursor_y=opt), POLICY)
    assert obs.prompt is not None and obs.prompt.frame == "dialog" and not obs.prompt.whole
    question = next(i for i, r in enumerate(rows) if "Do you want to proceed?" in r)
    obs = classify(make_screen(text, width=100, height=40, cursor_x=5, cursor_y=question - 3), POLICY)
    assert obs.prompt is not None and not obs.prompt.whole


def test_a_dialog_in_another_agents_style_is_not_its_own() -> None:
    """A Codex approval in a Claude Code session (its pane title says Claude, a message above): no dialog
    of Claude's own. Its risk is unknown (never approved) and says so; the same dialog in a Codex pane is
    answered. (Alone on a screen, with nothing of a session above, a dialog fits Claude's ``screen``
    frame: the generic rules judge it, after the settle time.)"""
    text = S.codex_permission("npm test", "run the tests", width=100).text
    shown = "\n".join(["⏺ I will run the tests.", "", text])
    obs = classify(make_screen(shown, width=100, height=40, title="✳ Claude Code"), POLICY)
    assert obs.agent == "claude" and obs.prompt is not None and obs.prompt.frame is None, obs.evidence
    assert NOT_OWN_DIALOG in obs.prompt.risk.matched and obs.prompt.risk.level == "unknown"
    assert decide(obs, RS, POLICY).kind == "escalate"
    own = classify(make_screen(text, width=100, height=40, title="proj", current_command="codex"), POLICY)
    assert own.prompt is not None and own.prompt.frame == "dialog" and decide(own, RS, POLICY).kind == "answer"


def test_a_line_question_is_no_dialog_of_an_agent_that_has_none() -> None:
    """Claude Code never asks on one line: a ``[Y/n]`` question at the bottom of its pane (printed by
    something it runs) is not its own; in a shell it is the program's question."""
    text = "\n".join(["⏺ Bash(make)", "  ⎿  gcc -c main.c", "", "Apply the pending migrations? [Y/n] "])
    obs = classify(make_screen(text, width=100, height=40, title="✳ Claude Code"), POLICY)
    assert obs.prompt is not None and NOT_OWN_DIALOG in obs.prompt.risk.matched
    shell = classify(make_screen("$ ./migrate\nApply the pending migrations? [Y/n] ", width=100, height=40,
                                 current_command="bash", cursor_x=37, cursor_y=1), POLICY)
    assert shell.prompt is not None and shell.prompt.frame == "question" and shell.prompt.whole


def test_the_grammar_is_policy_data() -> None:
    """A candidate that gives Claude Code no dialog grammar is back to the generic rules (the Codex-style
    dialog is then judged like any other); one that changes the footer changes what is whole."""
    shown = "\n".join(["⏺ I will run the tests.", "", S.codex_permission("npm test", "run the tests", width=100).text])
    base = POLICY.canonical()
    claude = dict(base["agents"]["claude"], dialogs=[])
    loose = Policy.model_validate({**base, "agents": {**base["agents"], "claude": claude}})
    obs = classify(make_screen(shown, width=100, height=40, title="✳ Claude Code"), loose)
    assert obs.prompt is not None and obs.prompt.frame is None and NOT_OWN_DIALOG not in obs.prompt.risk.matched
    rows = S.claude_permission("npm test", "Run", width=100).text.split("\n")
    opt = next(i for i, r in enumerate(rows) if "1. Yes" in r)
    frames = [dict(f, footer=["^never drawn$"]) if f["name"] == "dialog" else f for f in base["agents"]["claude"]["dialogs"]]
    strict = Policy.model_validate({**base, "agents": {**base["agents"], "claude": dict(base["agents"]["claude"],
                                                                                           dialogs=frames)}})
    obs = classify(make_screen("\n".join(rows), width=100, height=40, cursor_x=1, cursor_y=opt), strict)
    assert obs.prompt is not None and obs.prompt.frame == "dialog" and not obs.prompt.whole


def test_frame_end_rows_are_recognised_in_output() -> None:
    claude = frame_end_test(POLICY, "claude")
    assert claude is not None and claude(" Esc to cancel · Tab to amend · ctrl+e to explain")
    assert not claude("✻ Thinking… (esc to interrupt · 3s)") and not claude("❯ 1. Yes")
    aider = frame_end_test(POLICY, "aider")
    assert aider is not None and aider("Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:")
    assert frame_end_test(POLICY, "opencode") is None  # no grammar: the settle time applies
