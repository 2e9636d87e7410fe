"""An agent the policy has never seen: its questions are seen at once and go to a human.

The made-up agent of ``tests/novel_agent.py`` ("zorp") asks in grammars no known agent uses
(``»`` arrow menus, bracketed buttons, choice words one per line, side-by-side words with a
countdown, a radio row in a box, ``[Y/n]`` and ``(y/n)`` lines), each about an action a known
agent would get approved for. Every one must be ``asking`` with its question and options, and
escalated (its keys are unknown), never read as idle; its busy timers and counters are busy; its
HTTP errors and login demands are blockers. The live test runs it in real tmux under the real
supervisor and checks each dialog paused the run, with no key sent, within the latency budget.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.models import Screen
from supervisor.policy import baseline_policy
from supervisor.runstate import RunState
from tests.helpers import retry_until
from tests.live_helpers import LiveHarness, events, fast_policy
from tests.novel_agent import BANNER, DIALOGS

POLICY = baseline_policy()
NOVEL_AGENT = Path(__file__).with_name("novel_agent.py")
ESCALATION_BUDGET_S = 3.0
"""How long a dialog of an unknown agent may wait before the run pauses for a human (the settle
delay and one classification take milliseconds; the rest is slack for a loaded two-core machine)."""


def screen(lines: list[str], command: str = "zorp") -> Screen:
    return Screen(text="\n".join(BANNER + lines), width=100, height=30, current_command=command)


def worked() -> RunState:
    return RunState(saw_work=True, now=1000.0)


@pytest.mark.parametrize(("dialog_id", "body"), DIALOGS, ids=[d for d, _ in DIALOGS])
def test_every_dialog_of_an_unknown_agent_is_asking_and_escalated(dialog_id: str, body: list[str]) -> None:
    obs = classify(screen(body), POLICY)
    assert obs.state == "asking", (dialog_id, obs.evidence)
    assert obs.agent == "unknown"
    prompt = obs.prompt
    assert prompt is not None and prompt.question and len(prompt.options) >= 2, prompt
    dec = decide(obs, worked(), POLICY)
    assert dec.kind == "escalate" and not dec.keys and dec.approves is None, dec
    # the notice names the question and the choices
    assert dec.next_action is not None and prompt.question[:30] in dec.next_action
    assert all(o.label[:20] in dec.next_action for o in prompt.options[:2]), dec.next_action


def test_a_known_safe_subject_does_not_make_an_unknown_agent_approvable() -> None:
    """A `[Y/n]` question that names a harmless command (`ls -la`, which a known agent's dialog gets
    approved for) is escalated: which key approves and what Enter does are not known for zorp."""
    body = ["  ✧ I will list the folder.", "  ✧ shell · ls -la", 'Execute "ls -la"? [Y/n] ']
    obs = classify(screen(body), POLICY)
    assert obs.state == "asking" and obs.agent == "unknown"
    assert decide(obs, worked(), POLICY).kind == "escalate"


@pytest.mark.parametrize(("lines", "evidence"), [
    (["  ✧ Looked at the repository", " [00:07] pondering"], "busy-weak:[00:07] pondering"),
    (["  ✧ Looked at the repository", " Pondering 12s"], "busy-weak:Pondering 12s"),
    (["  ✧ Looked at the repository", " ◐ 1,204 tokens received"], "busy-weak:◐ 1,204 tokens received"),
])
def test_generic_busy_timers_and_counters(lines: list[str], evidence: str) -> None:
    obs = classify(screen(lines), POLICY)
    assert obs.state == "busy" and obs.evidence == [evidence]
    assert decide(obs, worked(), POLICY).kind == "wait"


@pytest.mark.parametrize(("line", "kind"), [
    ("  ✧ Request failed: HTTP 401 Unauthorized (invalid token)", "auth"),
    (" You must log in first: run `zorp auth login` to continue.", "auth"),
    ("  ✧ The provider returned 429: slow down, you are sending requests too quickly.", "rate_limit"),
    ("  ✧ Server error (500): the model backend failed. Try again later.", "model_unavailable"),
    (" Error code 503 from the endpoint", "model_unavailable"),
])
def test_generic_blockers_in_an_agents_own_words(line: str, kind: str) -> None:
    obs = classify(screen([line, " zorp>"]), POLICY)
    assert obs.state == "blocked" and obs.blocker is not None and obs.blocker.kind == kind, obs.evidence
    assert decide(obs, worked(), POLICY).kind == "escalate"


@pytest.mark.parametrize("lines", [
    # a finished turn that lists its steps above the composer: no choice words, not a question
    ["  ✧ Here is the plan:", "   1. add a test", "   2. refactor the parser", "   3. update the docs", " zorp>"],
    # a message that ends with a question but offers no choices
    ["  ✧ Done. Do you want me to add more tests?", " zorp>"],
    # prose that mentions an HTTP status is not a blocker
    ["  ✧ I fixed the bug where the server returned 500 on empty input.", " zorp>"],
    # a numbered list of findings whose numbers do not start a menu
    ["  ✧ Which of these should I fix?", "   4. Yes, the parser", "   5. No test for it", " zorp>"],
])
def test_an_unknown_agents_idle_screens_stay_idle(lines: list[str]) -> None:
    obs = classify(screen(lines), POLICY)
    assert obs.state == "idle", obs.evidence


def test_the_generic_reading_needs_a_question_above_the_choices() -> None:
    """Choice words with nothing asking above them (a list of options in a finished message under
    a heading that asks nothing) are not a dialog."""
    obs = classify(screen(["  ✧ Release notes", "", "   Allow", "   Deny"]), POLICY)
    assert obs.state != "asking", obs.evidence


def test_a_live_unknown_agent_pauses_on_every_dialog_with_no_key_sent(tmux_socket: str, sv_home: Path,
                                                                        tmp_path: Path) -> None:
    """Every dialog of the made-up agent, in real tmux under the real supervisor: the run pauses
    within the budget with the question and the choices in the notice, the supervisor sends the
    agent no key, and once a human answers in the pane the next dialog pauses the run again."""
    record = tmp_path / "zorp.jsonl"
    h = LiveHarness(tmux_socket, sv_home, policy=fast_policy(human_quiet_s=0.2), turns=None)
    pane = h.surface.new_session("zorp", [sys.executable, str(NOVEL_AGENT), str(record)], width=100, height=30,
                                 cwd=str(tmp_path))
    latencies: list[float] = []
    try:
        (runner,) = h.supervise(pane)
        for n, (dialog_id, _) in enumerate(DIALOGS, 1):
            pause = retry_until(lambda n=n: _nth(events(runner, "pause"), n), 30,
                                message=f"the pause on dialog {dialog_id}")
            shown = [r for r in _record(record) if r["event"] == "shown" and r["dialog"] == dialog_id]
            assert shown, f"the pause came before {dialog_id} was drawn: {pause.payload}"
            latencies.append(pause.at - shown[0]["t"])
            assert pause.payload["rule"] == "unknown-agent", pause.payload
            assert "(" in pause.payload["next_action"] and " / " in pause.payload["next_action"], pause.payload
            assert not [e for e in events(runner, "action") if e.payload.get("keys")], "the supervisor sent keys"
            h.surface.send_keys(pane.pane_id, ["n"])  # the human answers in the pane
            retry_until(lambda d=dialog_id: any(r["event"] == "key" and r["dialog"] == d for r in _record(record)),
                        10, message=f"the human's key to reach {dialog_id}")
        retry_until(lambda: any(r["event"] == "idle" for r in _record(record)), 10, message="the agent's idle line")
    finally:
        h.stop()
    keys = [r for r in _record(record) if r["event"] == "key"]
    assert [r["keys"] for r in keys] == ["n"] * len(DIALOGS), keys  # only the human's keys arrived
    assert max(latencies) < ESCALATION_BUDGET_S, latencies
    print(f"unknown-agent escalation latency: median {sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms, "
          f"max {max(latencies) * 1000:.0f} ms over {len(latencies)} dialogs")


def _nth(items: list, n: int) -> object:
    return items[n - 1] if len(items) >= n else None


def _record(path: Path) -> list[dict]:
    import json

    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def test_a_line_question_read_on_the_row_below_is_live_until_something_is_typed() -> None:
    """open-interpreter asks "Would you like to run this code? (y/n)", prints a blank row and reads the
    answer on the row after it: the cursor waiting there keeps the question live; a typed answer
    (the cursor further down, or text below) ends it."""
    from supervisor.runner import prompt_is_live, prompt_rows

    text = "\n".join(["> create the file hello.txt", "  I will create the file.", "  touch hello.txt",
                      "  Would you like to run this code? (y/n)", "", ""])
    waiting = Screen(text=text, width=100, height=30, cursor_x=2, cursor_y=5, current_command="interpreter")
    obs = classify(waiting, POLICY)
    assert obs.agent == "open-interpreter" and obs.prompt is not None and obs.prompt.input_style == "letter_enter"
    rows = prompt_rows(waiting, obs.prompt)
    assert rows == (3, 3)
    assert prompt_is_live(waiting, obs.prompt, rows) == (True, "")
    moved = waiting.model_copy(update={"cursor_y": 6})
    assert prompt_is_live(moved, obs.prompt, rows)[0] is False
    answered = Screen(text=text + "  n\n", width=100, height=30, cursor_x=0, cursor_y=7, current_command="interpreter")
    assert prompt_is_live(answered, obs.prompt, rows)[0] is False


def test_a_dialog_with_its_own_footer_rows_under_it_is_live() -> None:
    """hermes-agent draws the running command, a key hint with its countdown, a status line and its
    composer under its "Dangerous Command" dialog (a real capture): the dialog is still live, so
    its escalation is not skipped."""
    from supervisor.runner import prompt_is_live, prompt_rows
    from supervisor.screen import make_screen

    path = Path(__file__).resolve().parents[1] / "suites" / "captures" / "hermes" / "perm-shell-git-push-force.w120.txt"
    screen = make_screen(path.read_text(encoding="utf-8"), width=120, height=40, current_command="hermes")
    obs = classify(screen, POLICY)
    assert obs.state == "asking" and obs.agent == "hermes" and obs.prompt is not None
    assert decide(obs, worked(), POLICY).kind == "escalate"
    live, why = prompt_is_live(screen, obs.prompt, prompt_rows(screen, obs.prompt),
                               lambda text: classify(make_screen(text, width=120, height=40), POLICY).state)
    assert live, why
