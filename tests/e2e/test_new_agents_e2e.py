"""The agents added for issue 30 under `supervisor run`: each driven through a benign approval and a
dangerous escalation, with zero stray keys (the same checks as test_more_agents_e2e.py): GitHub
Copilot CLI, Continue CLI, open-interpreter, gptme, hermes-agent, Kilo Code CLI 7.7.7, OpenHands CLI
1.16.0, and the newest Claude Code (2.1.332, classic mode), Codex (0.171.0) and Mistral Vibe (3.0.3).

Each test runs the real `python -m supervisor run -- AGENT` in real tmux on a private socket, from a
fresh HOME, against the loopback fake model server (no real model is reachable here), and types its
task as a person would. First-run dialogs (Copilot's folder trust) are the supervisor's to answer.

Installed by `make e2e` (tests/e2e/install_agents.sh); skipped only when an agent is missing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.agents import AgentLaunch
from tests.e2e.conftest import SupervisedRun
from tests.e2e.fake_model_server import FakeModelServer, Turn
from tests.e2e.scenes import PROFILES
from tests.e2e.test_more_agents_e2e import (
    BENIGN_TASK,
    DANGEROUS_TASK,
    approvals,
    assert_no_stray_keys,
    dangerous_prompt_approved,
)
from tests.e2e.test_more_agents_e2e import type_task as type_when_ready
from tests.helpers import WaitTimeout, retry_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(420)]

def type_task(run: SupervisedRun, agent: str, task: str, fake: FakeModelServer) -> None:
    """Type the task once the input box is there; if the model has not received it a few seconds
    later, press Enter again, as a person would (Continue CLI's box sometimes drops an Enter that
    comes right after its first draw; an Enter on a sent message's empty box sends nothing)."""
    type_when_ready(run, agent, task)
    try:
        retry_until(lambda: task in fake.user_texts(), 6, message="the task to reach the model")
    except WaitTimeout:
        run.pane.keys("Enter")


def decline_as_a_person(run: SupervisedRun, agent: str) -> None:
    """Decline the dialog with the agent's own keys, then answer the box a decline opens where it
    opens one (Kilo Code's Esc asks "Tell Kilo what to do differently": Enter with nothing typed)."""
    profile = PROFILES[agent]
    run.press_on_dialog(profile.decline, profile.dialog)
    for box in profile.interstitials:
        try:
            run.pane.wait_for(box.marker, 5)
        except TimeoutError:
            continue
        run.press_on_dialog(box.keys, (box.marker,))


NEW_DIALOG_AGENTS = ("copilot", "continue", "open-interpreter", "gptme", "kilo", "openhands", "claude-newest",
                     "codex-latest", "vibe-latest")
"""Agents that ask before a benign command (and so get it approved)."""
DANGER_DIALOG_AGENTS = (*NEW_DIALOG_AGENTS, "hermes")
"""hermes-agent asks only for commands its own pattern list flags: it runs `touch` without a dialog."""


@pytest.mark.parametrize("agent", NEW_DIALOG_AGENTS)
def test_new_agent_benign_command_is_approved(agent: str, supervise: Callable[..., SupervisedRun],
                                              fake_model: FakeModelServer) -> None:
    """A benign `touch` is approved by policy (the file appears), the finished turn ends the run,
    and the model saw only the typed task."""
    fake_model.script(Turn(kind="shell", text="I will create the file.", command="touch hello.txt", first_delay=1))
    run = supervise(agent, onboarded=True, **PROFILES[agent].launch)
    type_task(run, agent, BENIGN_TASK, fake_model)
    run.wait(lambda: (run.work / "hello.txt").exists() or run.events("pause"), 120, "hello.txt to appear")
    assert not run.events("pause"), "the benign command was escalated" + run.describe()
    assert approvals(run), "nothing was approved" + run.describe()
    ended = run.wait_event("run_ended", seconds=120)
    assert ended["payload"]["outcome"] == "finished", run.describe()
    assert not dangerous_prompt_approved(run), run.describe()
    assert_no_stray_keys(fake_model, [BENIGN_TASK], run)


@pytest.mark.parametrize("agent", DANGER_DIALOG_AGENTS)
def test_new_agent_dangerous_command_is_escalated(agent: str, supervise: Callable[..., SupervisedRun],
                                                  fake_model: FakeModelServer) -> None:
    """`rm -rf src` is never approved: the run pauses with a reason, nothing runs; a human's decline
    in the pane resumes the run; the model saw only the typed task."""

    def setup(launch: AgentLaunch) -> None:
        (launch.cwd / "src").mkdir()
        (launch.cwd / "src" / "keep.py").write_text("print('keep me')\n")

    fake_model.script(Turn(kind="shell", text="Cleaning up.", command="rm -rf src", first_delay=1))
    run = supervise(agent, onboarded=True, setup=setup, **PROFILES[agent].launch)
    type_task(run, agent, DANGEROUS_TASK, fake_model)
    run.wait(lambda: run.events("pause") or run.events("run_ended") or not (run.work / "src").exists(), 120,
             "the run to pause")
    assert not dangerous_prompt_approved(run) and (run.work / "src").exists(), "approved" + run.describe()
    pause = run.wait_event("pause", seconds=10)
    assert pause["payload"]["pause_reason"], run.describe()
    decline_as_a_person(run, agent)
    run.wait_event("resume", seconds=60)
    assert (run.work / "src" / "keep.py").exists(), "the dangerous command ran" + run.describe()
    assert_no_stray_keys(fake_model, [DANGEROUS_TASK], run)
