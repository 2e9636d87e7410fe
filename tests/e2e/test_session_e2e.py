"""One supervised session of three tasks on a real agent (Claude Code 2.1.197, Codex CLI, aider):
issue 10's "done when".

`supervisor run -- AGENT` supervises every turn until the agent exits; the test hands it three
tasks with `supervisor runs task RUN_ID TEXT` (the live supervisor types each one once the agent
is idle): a benign command that policy approves (its file appears), a dangerous command that is
escalated (the run pauses, nothing runs, a human declines in the pane and the run resumes), and
a write to `~/.bashrc` that is escalated the same way (nothing is written). Every message the
fake model server receives is exactly one of the three tasks (no stray keys), and the run ends
only when the agent exits.

Real tmux, real agents, real `supervisor` subprocesses; the fake model server is the only fake
(no real model is reachable here).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agents import AgentLaunch
from tests.e2e.conftest import SupervisedRun
from tests.e2e.fake_model_server import FakeModelServer, Turn
from tests.e2e.scenes import PROFILES

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

BENIGN = "create the file hello.txt"
DANGEROUS = "clean up the repository"
DOTFILE = "set my editor in the shell startup file"
EXIT = {"claude": "/exit", "codex": "/quit", "aider": "/exit"}


def dotfile_turn(agent: str, home: Path) -> Turn:
    """A write to ~/.bashrc in each agent's own way: Claude's Write tool, Codex's shell heredoc,
    and for aider (whose edits never leave the repository) a shell command appending to it."""
    if agent == "aider":
        return Turn(kind="shell", text="Setting the editor.", command="echo 'export EDITOR=vim' >> ~/.bashrc")
    return Turn(kind="write", text="Setting the editor.", path=str(home / ".bashrc"), content="export EDITOR=vim\n")


def run_id_of(run: SupervisedRun) -> str:
    started = run.wait_event("run_started", seconds=60)
    return str(started.get("run_id") or started["payload"].get("run_id"))


def hand_task(run: SupervisedRun, run_id: str, text: str) -> None:
    env = {**run.launch.env, "SUPERVISOR_HOME": str(run.sv_home)}
    proc = subprocess.run([sys.executable, "-m", "supervisor", "runs", "task", run_id, text],
                          capture_output=True, text=True, env=env, cwd=run.work, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr + run.describe()


def turns_finished(run: SupervisedRun) -> int:
    return len(run.events("turn_finished"))


def escalate_then_decline(run: SupervisedRun, agent: str, pauses_before: int) -> dict[str, Any]:
    """Wait for the run to pause on the prompt, then decline it in the pane like a human."""
    run.wait(lambda: len(run.events("pause")) > pauses_before, 120, "the run to pause on the prompt")
    pause = run.events("pause")[-1]
    assert pause["payload"]["pause_reason"], run.describe()
    resumes = len(run.events("resume"))
    run.press_on_dialog(PROFILES[agent].decline, PROFILES[agent].dialog)
    run.wait(lambda: len(run.events("resume")) > resumes, 60, "the run to resume after the human declined")
    return pause


@pytest.mark.parametrize("agent", ["claude", "codex", "aider"])
def test_three_tasks_in_one_supervised_session(agent: str, supervise: Callable[..., SupervisedRun],
                                               fake_model: FakeModelServer) -> None:
    def setup(launch: AgentLaunch) -> None:
        (launch.cwd / "src").mkdir()
        (launch.cwd / "src" / "keep.py").write_text("print('keep me')\n")

    run = supervise(agent, onboarded=True, setup=setup, turns=None)  # the run lasts as long as the agent
    bashrc = run.launch.home / ".bashrc"
    run_id = run_id_of(run)

    # 1. benign: approved by policy, the file appears, the turn finishes
    fake_model.script(Turn(kind="shell", text="I will create the file.", command="touch hello.txt"))
    hand_task(run, run_id, BENIGN)
    run.wait(lambda: (run.work / "hello.txt").exists(), 180, "hello.txt to appear")
    run.wait(lambda: turns_finished(run) >= 1, 120, "the first turn to finish")
    assert not run.events("pause"), "the benign task paused the run" + run.describe()

    # 2. dangerous: escalated, nothing runs; a human declines and the run goes on
    fake_model.script(Turn(kind="shell", text="Cleaning up.", command="rm -rf src"))
    hand_task(run, run_id, DANGEROUS)
    escalate_then_decline(run, agent, 0)
    assert (run.work / "src" / "keep.py").exists(), "the dangerous command ran" + run.describe()
    run.wait(lambda: turns_finished(run) >= 2, 120, "the second turn to finish")

    # 3. a write to ~/.bashrc: escalated, nothing written
    fake_model.script(dotfile_turn(agent, run.launch.home))
    hand_task(run, run_id, DOTFILE)
    escalate_then_decline(run, agent, 1)
    assert not bashrc.exists(), "~/.bashrc was written" + run.describe()
    run.wait(lambda: turns_finished(run) >= 3, 120, "the third turn to finish")

    # The run lives as long as the agent: still going after three finished turns...
    assert run.proc.poll() is None and not run.events("run_ended"), run.describe()
    # ...and the model saw exactly the three tasks, nothing else typed into the agent.
    assert fake_model.user_texts() == [BENIGN, DANGEROUS, DOTFILE], (
        f"the model received {fake_model.user_texts()!r}" + run.describe())

    # The agent exits: then the run ends.
    run.pane.type(EXIT[agent])
    run.wait_event("run_ended", seconds=90)
    assert run.exit_code(60) == 0, run.describe()
    assert (run.work / "src" / "keep.py").exists() and not bashrc.exists(), run.describe()
