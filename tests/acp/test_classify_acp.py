"""How an ACP permission request becomes a prompt and a decision (pure: classify_acp + decide under the
baseline): fail safe wherever the request does not positively identify what approving would do or
which option approves."""

from __future__ import annotations

import json
from typing import Any

from supervisor.classify import classify
from supervisor.classify_acp import acp_screen, command_of
from supervisor.decide import decide
from supervisor.models import RunState, Screen
from supervisor.policy import baseline_policy

POLICY = baseline_policy()
CWD = "/home/dev/app"
OPTIONS = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
           {"optionId": "always", "name": "Always Allow", "kind": "allow_always"},
           {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]


def _decide(tool: dict[str, Any], options: list[dict[str, Any]] = OPTIONS, agent: str = "unknown") -> tuple:
    obs = classify(acp_screen({"event": "permission", "tool_call": tool, "options": options}, cwd=CWD, agent=agent),
                   POLICY)
    assert obs.state == "asking"
    d = decide(obs, RunState(run_id="t"), POLICY)
    return d, obs.prompt


LS = {"kind": "execute", "title": "ls", "rawInput": {"command": "ls -la"}}


def test_a_benign_command_is_approved_with_the_once_option() -> None:
    d, prompt = _decide(LS)
    assert (d.kind, d.keys, d.approves) == ("answer", ["allow"], True)
    assert prompt.risk.subject == "ls -la" and prompt.risk.level == "none"


def test_no_subject_is_never_approved() -> None:
    for tool in ({"kind": "other", "title": "Do the thing"}, {"kind": "execute", "title": "Run it"},
                 {"kind": "edit", "title": "Edit a file"}, {"title": "ls -la"}):
        d, prompt = _decide(tool)
        assert d.kind == "escalate" and prompt.risk.level == "unknown", tool


def test_options_that_contradict_themselves_or_cannot_be_named_are_never_picked() -> None:
    liar = [{"optionId": "a", "name": "Reject", "kind": "allow_once"},
            {"optionId": "r", "name": "Allow", "kind": "reject_once"}]
    d, prompt = _decide(LS, liar)
    assert d.kind == "escalate" and [o.approves for o in prompt.options] == [None, None]
    dup = [{"optionId": "x", "name": "Allow", "kind": "allow_once"}, {"optionId": "x", "name": "Reject",
                                                                     "kind": "reject_once"}]
    d, prompt = _decide(LS, dup)
    assert d.kind == "escalate" and all(o.key is None for o in prompt.options)
    reserved = [{"optionId": "Enter", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
    d, prompt = _decide(LS, reserved)
    assert d.kind == "escalate" and prompt.options[0].key is None
    only_always = [{"optionId": "always", "name": "Always Allow", "kind": "allow_always"},
                   {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
    d, _ = _decide(LS, only_always)
    assert d.kind == "escalate"  # a persistent approval is never chosen by the baseline


def test_the_riskiest_path_counts() -> None:
    tool = {"kind": "edit", "title": "Edit two files",
            "locations": [{"path": f"{CWD}/src/app.py"}, {"path": "/etc/passwd"}]}
    d, prompt = _decide(tool)
    assert d.kind == "escalate" and prompt.risk.level == "dangerous"
    inside = {"kind": "edit", "title": "Edit", "locations": [{"path": f"{CWD}/src/app.py"}],
              "content": [{"type": "diff", "path": f"{CWD}/../elsewhere/.bashrc", "newText": "x"}]}
    d, prompt = _decide(inside)
    assert d.kind == "escalate", prompt.risk


def test_danger_anywhere_in_the_request_counts() -> None:
    tool = {"kind": "execute", "title": "Clean up", "rawInput": {"command": "make clean", "then": "rm -rf ~"}}
    d, prompt = _decide(tool)
    assert d.kind == "escalate" and prompt.risk.level == "dangerous"


def test_shell_wrapped_argv_is_the_script_it_runs() -> None:
    assert command_of(["/bin/bash", "-lc", "rm -rf ~"]) == "rm -rf ~"
    assert command_of(["zsh", "-c", "ls"]) == "ls"
    assert command_of(["python3", "-c", "print(1)"]) == "python3 -c 'print(1)'"
    d, prompt = _decide({"kind": "execute", "title": "x", "rawInput": {"command": ["/bin/bash", "-lc", "rm -rf ~"]}})
    assert d.kind == "escalate" and prompt.risk.subject == "rm -rf ~"


def test_an_unreadable_request_escalates() -> None:
    text = json.dumps({"acp": 1, "agent": "unknown", "event": "permission", "tool_call": LS, "options": OPTIONS})
    screen = acp_screen({"event": "permission", "tool_call": LS, "options": OPTIONS}, cwd=CWD, agent="unknown")
    cut = Screen.model_validate(screen.model_dump() | {"text": text[: len(text) // 2]})  # a redaction cut it
    obs = classify(cut, POLICY)
    assert obs.state == "asking" and obs.prompt is None
    assert decide(obs, RunState(run_id="t"), POLICY).kind == "escalate"
