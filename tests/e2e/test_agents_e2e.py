"""Real agent CLIs (Claude Code, Codex CLI, aider) end to end under `supervisor run`.

Each test runs the real `supervisor run -- AGENT` in real tmux on a private socket, from a
fresh HOME, against the loopback fake model server (the only fake: no real model is reachable
here). It checks what a person would: the first-run dialogs get answered by policy, a benign
permission prompt is approved (the file appears), a dangerous one is escalated (nothing runs,
the run pauses with a reason, a human answer resumes it), busy is seen while the model streams,
and the finished turn ends the run.

Installed by `make e2e` (tests/e2e/install_agents.sh); skipped only when an agent is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agents import AgentLaunch
from tests.e2e.conftest import SupervisedRun, make_policy
from tests.e2e.fake_model_server import FakeModelServer, Turn
from tests.e2e.scenes import PROFILES

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(420)]

SLOW_TEXT = "Let me think about this for a moment. I will now run one command to do what you asked."
DANGEROUS = ["rm -rf src", "git push --force origin main"]
# How each agent is given its task: Claude and Codex take it on the command line; aider has no
# such option (--message exits after one turn), so the test types it like a person would.
TASK_ON_COMMAND_LINE = {"claude": True, "codex": True, "aider": False}


AGENTS = ("claude", "codex", "aider")

# Gaps in other parts of the supervisor that these tests found (details and the real screens:
# /work/team/captures.md, suites/captures). Each makes its case an expected failure (not strict:
# an XPASS means it got fixed, so delete the entry). None open as of the last run.
GAPS: dict[tuple[str, str], str] = {}
API_KEY_QUESTION = "Do you want to use this API key?"


def agents_for(test: str) -> list[Any]:
    """The agents, each known gap marked as an expected failure with its reason."""
    return [pytest.param(a, marks=pytest.mark.xfail(reason=GAPS[(test, a)], strict=False))
            if (test, a) in GAPS else a for a in AGENTS]


def start_with_task(supervise: Callable[..., SupervisedRun], agent: str, task: str, **kw: Any) -> SupervisedRun:
    if TASK_ON_COMMAND_LINE[agent]:
        return supervise(agent, task, **kw)
    run = supervise(agent, **kw)
    # aider: once the supervisor has answered the first-run questions, type the task at `diff>`.
    run.wait(lambda: run.pane.text().rstrip().endswith("diff>"), 90, "aider's input prompt")
    run.pane.type(task, pause=0.3)
    return run


def answered(run: SupervisedRun) -> list[dict[str, Any]]:
    return [d for d in run.decisions() if d["kind"] == "answer"]


def dangerous_prompt_approved(run: SupervisedRun) -> bool:
    """True if any decision approved a prompt the classifier marked dangerous."""
    obs = {e["event_id"]: e["payload"]["observation"] for e in run.events("observation")}
    for d in run.decisions():
        o = obs.get(d.get("trigger_id") or "")
        prompt = (o or {}).get("prompt") or {}
        if d["kind"] == "answer" and d.get("approves") and (prompt.get("risk") or {}).get("level") == "dangerous":
            return True
    return False


@pytest.mark.parametrize("agent", agents_for("first_run"))
def test_first_run_busy_benign_permission_and_finish(agent: str, supervise: Callable[..., SupervisedRun],
                                                      fake_model: FakeModelServer) -> None:
    """From a fresh HOME: first-run dialogs answered by policy, busy seen while the answer streams,
    the benign `touch` approved (the file appears), the finished turn ends the run with exit 0."""
    fake_model.script(Turn(kind="shell", text=SLOW_TEXT, command="touch hello.txt", first_delay=2, hold=True,
                           chunks=6))
    run = start_with_task(supervise, agent, "create the file hello.txt")

    # The task reached the model: the first-run dialogs were answered by the supervisor.
    run.wait(lambda: fake_model.main_requests(), 90, "the agent's first model request")
    assert answered(run), "no first-run dialog was answered by policy" + run.describe()

    # Busy while the answer streams (held open by the fake server until we see it).
    run.wait_event("observation", lambda p: p["observation"]["state"] == "busy", 60)
    fake_model.release()

    # The benign permission prompt is approved by policy and the command runs.
    run.wait(lambda: (run.work / "hello.txt").exists(), 90, "hello.txt to appear")
    approvals = [d for d in answered(run) if d.get("approves")]
    assert approvals, "no approving answer was journaled" + run.describe()

    # The finished turn ends the run.
    ended = run.wait_event("run_ended", seconds=120)
    assert ended["payload"]["outcome"] == "finished", run.describe()
    assert run.exit_code() == 0, run.describe()
    assert not run.events("pause"), "the run paused on something policy should answer" + run.describe()


@pytest.mark.parametrize("command", DANGEROUS, ids=["rm-rf", "git-push-force"])
@pytest.mark.parametrize("agent", agents_for("dangerous"))
def test_dangerous_command_escalates_and_human_resumes(agent: str, command: str,
                                                       supervise: Callable[..., SupervisedRun],
                                                       fake_model: FakeModelServer) -> None:
    """A dangerous command is never approved: the run pauses with a reason, nothing runs, and a
    human's answer (declining in the pane) resumes the run, which then finishes."""

    def setup(launch: AgentLaunch) -> None:
        (launch.cwd / "src").mkdir()
        (launch.cwd / "src" / "keep.py").write_text("print('keep me')\n")

    # A slowly streamed answer, so the supervisor sees the agent work before the prompt.
    fake_model.script(Turn(kind="shell", text=SLOW_TEXT, command=command, first_delay=2, chunks=6,
                           chunk_delay=0.5))
    # First-run dialogs are the other test's subject: start as a returning user.
    run = start_with_task(supervise, agent, "clean up the repository", setup=setup, onboarded=True)

    pause = run.wait_event("pause", seconds=120)
    assert pause["payload"]["pause_reason"], run.describe()
    assert (run.work / "src" / "keep.py").exists(), "the dangerous command ran" + run.describe()
    assert not dangerous_prompt_approved(run), run.describe()
    screen = run.pane.text()
    assert command in screen or command.split()[0] in screen, "the prompt is not on screen" + run.describe()

    # A human answers: decline in the pane. The supervisor notices and resumes.
    run.press_on_dialog(PROFILES[agent].decline, PROFILES[agent].dialog)
    run.wait_event("resume", seconds=60)
    ended = run.wait_event("run_ended", seconds=90)
    assert ended["payload"]["outcome"] == "finished", run.describe()
    assert (run.work / "src" / "keep.py").exists(), "the dangerous command ran" + run.describe()
    assert not dangerous_prompt_approved(run), run.describe()


def _allow_api_key(data: dict[str, Any]) -> None:
    answers = data.setdefault("answers", {})
    answers["always_escalate"] = [p for p in answers.get("always_escalate", []) if p != "api key"]
    answers.setdefault("rules", []).insert(0, {
        "name": "e2e-use-the-test-api-key",
        "when": {"agents": ["claude"], "question": "use this api key"},
        "then": "approve",
        "allow_default_no": True,
    })


def test_claude_api_key_question_is_escalated_by_baseline(supervise: Callable[..., SupervisedRun],
                                                          fake_model: FakeModelServer) -> None:
    """'Do you want to use this API key?' defaults to No: the baseline must not answer it."""
    run = supervise("claude", "say hello", api_key=True, onboarded=True)
    pause = run.wait_event("pause", seconds=120)
    assert "api key" in (pause["payload"]["pause_reason"] + str(pause["payload"].get("next_action"))).lower() \
        or API_KEY_QUESTION in run.pane.text(), run.describe()
    assert API_KEY_QUESTION in run.pane.text(), run.describe()
    assert not fake_model.main_requests(), "the key was used without a policy rule allowing it" + run.describe()


def test_claude_api_key_question_escalated_despite_explicit_rule_and_human_answer_resumes(
        tmp_path: Path, supervise: Callable[..., SupervisedRun], fake_model: FakeModelServer) -> None:
    """'Do you want to use this API key?' names no command, path or URL, so its risk is unknown,
    and unknown is escalated even when the policy has an explicit `allow_default_no` rule to
    approve it (fail-safe first): the run pauses with a reason and the key is not used. The user
    then answers it in the pane (1. Yes): the run resumes, the key is used (the server sees
    x-api-key), the turn finishes, and the model received only the task."""
    policy = make_policy(tmp_path, _allow_api_key)
    fake_model.script(Turn(text="Hello from the fake model."))
    run = supervise("claude", "say hello", api_key=True, onboarded=True, policy=policy)
    pause = run.wait_event("pause", seconds=120)
    assert pause["payload"]["pause_reason"], run.describe()
    assert API_KEY_QUESTION in run.pane.text(), run.describe()
    assert "e2e-use-the-test-api-key" not in {d.get("rule") for d in answered(run)}, "the rule approved it" \
        + run.describe()
    assert not fake_model.main_requests(), "the key was used before anyone answered" + run.describe()

    run.press_on_dialog(["1"], [API_KEY_QUESTION])
    resume = run.wait_event("resume", seconds=60)
    assert resume["payload"]["by"] == "human", run.describe()
    run.wait(lambda: fake_model.main_requests(), 120, "a model request made with the API key")
    assert "x-api-key" in fake_model.main_requests()[0].headers, run.describe()
    ended = run.wait_event("run_ended", seconds=120)
    assert ended["payload"]["outcome"] == "finished", run.describe()
    assert fake_model.user_texts() == ["say hello"], f"the model received {fake_model.user_texts()!r}" + run.describe()


@pytest.mark.parametrize("agent", agents_for("auth"))
def test_auth_error_blocks_and_pauses_the_run(agent: str, supervise: Callable[..., SupervisedRun],
                                               fake_model: FakeModelServer) -> None:
    """The model API answers 401: the agent shows it, the supervisor sees a blocker a human must fix,
    pauses with that reason, and a stopped supervisor exits 5 (ended paused)."""
    fake_model.script(Turn(kind="error", status=401, error_type="authentication_error",
                           message="Incorrect API key provided: dummy.", repeat=None))
    # Claude retries a 401 ten times with backoff (minutes; the supervisor rightly sees it busy):
    # one retry is enough here.
    run = start_with_task(supervise, agent, "say hello", onboarded=True, env={"CLAUDE_CODE_MAX_RETRIES": "1"})
    pause = run.wait_event("pause", seconds=90)
    blocked = [o for o in run.observations() if o["state"] == "blocked"]
    assert blocked and blocked[-1]["blocker"]["kind"] == "auth", run.describe()
    assert pause["payload"]["pause_reason"], run.describe()
    run.stop()
    assert run.exit_code(30) == 5, run.describe()
