"""Screen habits of single agents, named in their policy entries (issue 30's Kilo Code, OpenHands and
open-interpreter): each read on a real capture of the agent (suites/captures/<agent>/, the tuning
split), and each shown to matter: the same screen under the baseline with that one entry removed
reads otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.models import Observation, RunState
from supervisor.policy import Policy, baseline_policy
from supervisor.screen import make_screen

CAPTURES = Path(__file__).resolve().parents[1] / "suites" / "captures"


@pytest.fixture(scope="module")
def policy() -> Policy:
    return baseline_policy()


def without(policy: Policy, agent: str, **fields: Any) -> Policy:
    """The policy with fields of one agent's entry set back (to their defaults)."""
    agents = dict(policy.agents)
    agents[agent] = agents[agent].model_copy(update=fields)
    return policy.model_copy(update={"agents": agents})


def capture(agent: str, stem: str, policy: Policy) -> Observation:
    """A real capture (its plain text, size, title and foreground command, as the suites read it)."""
    meta = json.loads((CAPTURES / agent / f"{stem}.json").read_text(encoding="utf-8"))
    text = (CAPTURES / agent / meta["files"]["plain"]).read_text(encoding="utf-8")
    screen = make_screen(text, width=meta["width"], height=meta["height"], title=meta["title"],
                         current_command=meta["current_command"])
    return classify(screen, policy)


def test_kilo_side_panel_is_read_apart(policy: Policy) -> None:
    """At 200 columns Kilo Code draws token counts and files right of its transcript: its 401 there is
    still the newest line (blocked); read with the panel, the panel's rows are newer (idle)."""
    obs = capture("kilo", "error-401-auth.w200", policy)
    assert (obs.agent, obs.state, obs.blocker.kind if obs.blocker else None) == ("kilo", "blocked", "auth")
    assert capture("kilo", "error-401-auth.w200", without(policy, "kilo", side_panel=[])).state != "blocked"


def test_kilo_dialog_is_answered_with_enter_and_a_dangerous_one_escalated(policy: Policy) -> None:
    benign = capture("kilo", "perm-shell-touch.w120", policy)
    decision = decide(benign, RunState(saw_work=True), policy)
    assert (benign.agent, benign.state, decision.kind, decision.keys) == ("kilo", "asking", "answer", ["Enter"])
    danger = capture("kilo", "perm-shell-rm-rf.w120", policy)
    assert danger.prompt is not None and danger.prompt.risk.level == "dangerous"
    assert decide(danger, RunState(saw_work=True), policy).kind == "escalate"


def test_kilo_reject_box_after_esc_is_a_question_for_a_human(policy: Policy) -> None:
    """Kilo's Esc does not reject: it opens a box waiting for text. That box is a live question, escalated."""
    text = "\n".join([
        "  ┃  please run touch", "  ┃", "     I will run a command.", "     $ touch hello.txt",
        "     ▣  Code · Fake Model", "  ┃", "  ┃  △ Reject permission", "  ┃",
        "  ┃  Tell Kilo what to do differently", "  ┃", "  ┃",
        "  ┃" + " " * 80 + "enter confirm  esc cancel", "  ┃"])
    obs = classify(make_screen(text, width=120, height=14, title="Kilo CLI", current_command="node"), policy)
    assert (obs.agent, obs.state) == ("kilo", "asking")
    decision = decide(obs, RunState(saw_work=True), policy)
    assert decision.kind == "escalate" and not decision.keys


def test_openhands_menu_over_its_input_box_is_live(policy: Policy) -> None:
    """'Confirm 1 action(s)?' over '> Yes / No / Always / Auto LOW/MED' with the input box still drawn:
    a live question, approved with Enter for a `touch`; without the entry's flag it reads as idle."""
    obs = capture("openhands", "perm-shell-touch.w120", policy)
    assert obs.prompt is not None and obs.prompt.kind == "tool_permission"
    assert (obs.prompt.risk.level, obs.prompt.risk.subject) == ("none", "touch hello.txt")
    decision = decide(obs, RunState(saw_work=True), policy)
    assert (decision.kind, decision.keys) == ("answer", ["Enter"])
    assert capture("openhands", "perm-shell-touch.w120", without(policy, "openhands", menu_over_composer=False)
                   ).state == "idle"


def test_openhands_command_wrapped_under_its_json_is_judged_whole(policy: Policy) -> None:
    obs = capture("openhands", "perm-shell-curl-pipe-sh.w120", policy)
    assert obs.prompt is not None and obs.prompt.risk.level == "dangerous"
    assert decide(obs, RunState(saw_work=True), policy).kind == "escalate"


def test_openhands_pending_action_with_its_question_out_of_view_is_escalated(policy: Policy) -> None:
    """At 80 columns the question scrolled above the input box: the pending '▶ file_editor' line (no ✓/✗,
    no spinner) is a question with nothing to choose: escalated, never idle."""
    obs = capture("openhands", "perm-write-inside.w80", policy)
    assert obs.state == "asking" and obs.prompt is not None and not obs.prompt.options
    assert decide(obs, RunState(saw_work=True), policy).kind == "escalate"
    assert capture("openhands", "perm-write-inside.w80", without(policy, "openhands", pending_action=[])
                   ).state == "idle"


def test_openhands_message_with_nothing_after_it_is_being_answered(policy: Policy) -> None:
    assert capture("openhands", "busy-waiting-for-model.w120", policy).state == "busy"
    assert capture("openhands", "idle-turn-finished.w120", policy).state == "idle"
    assert capture("openhands", "busy-waiting-for-model.w120", without(policy, "openhands", sent_message=[])
                   ).state == "idle"


def test_openhands_welcome_tips_are_no_question(policy: Policy) -> None:
    text = "\n".join([
        "  What do you want to build?", "  1. Ask questions, edit files, or run commands.",
        "  2. Use @ to look up a file in the folder structure",
        "  3. Type /help for help, /feedback to leave anonymous feedback, or / to scroll through available commands",
        " ╭" + "─" * 70 + "╮", " │ Type your message, @mention a file, or / for commands" + " " * 17 + "│",
        " ╰" + "─" * 70 + "╯", " [Ctrl+L for multi-line • Ctrl+X for custom editor] • /tmp/w ctx N/A • $ 0.00",
        " ^a Select all  ^x Open external editor  ^l Toggle single/multi-line input"])
    screen = make_screen(text, width=120, height=10, current_command="python")
    assert classify(screen, policy).state == "idle"
    assert classify(screen, without(policy, "openhands", not_questions=[])).state == "asking"


def test_open_interpreter_message_on_its_prompt_line_is_being_answered(policy: Policy) -> None:
    """open-interpreter shows nothing while it waits for the model: '> the user's words' as the last
    line is being answered; its bare '>' afterwards is idle."""
    assert capture("open-interpreter", "busy-waiting-for-model.w120", policy).state == "busy"
    assert capture("open-interpreter", "idle-turn-finished.w120", policy).state == "idle"
    assert capture("open-interpreter", "busy-waiting-for-model.w120",
                   without(policy, "open-interpreter", prompt_after_answer=False)).state == "idle"
