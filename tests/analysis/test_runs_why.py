"""Run references (id, prefix, `last`) for every `runs` command, and `supervisor runs why` on
real supervised runs: the screen, the classification, the rule, what was sent, what happened
next, and what the human did about an escalation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from supervisor.analysis.why import explain_decision
from supervisor.cli import main
from supervisor.errors import InputError
from supervisor.journal import Journal
from supervisor.runref import resolve_run_id
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse, sync
from tests.analysis.conftest import HUMAN_WAIT_S, SEEN_WITHIN_S, FilledHome


def _journal(folder: Path, run_id: str, at: float) -> None:
    with Journal(folder / f"{run_id}.jsonl", run_id) as j:
        j.append("run_started", {"agent": "claude"}, at=at)


def test_run_references(tmp_path: Path) -> None:
    jd = tmp_path / "journals"
    with pytest.raises(InputError, match="no runs yet"):
        resolve_run_id("last", jd)
    _journal(jd, "run_01AAAAAA", 300.0)  # started last, though its id sorts first
    _journal(jd, "run_01AABBBB", 200.0)
    _journal(jd, "run_01ZZCCCC", 100.0)
    assert resolve_run_id("last", jd) == resolve_run_id("LAST", jd) == "run_01AAAAAA"
    assert resolve_run_id("run_01AABBBB", jd) == "run_01AABBBB"
    assert resolve_run_id("01ZZ", jd) == resolve_run_id("run_01zz", jd) == resolve_run_id("01zz", jd) == "run_01ZZCCCC"
    with pytest.raises(InputError, match="'01AA' matches 2 runs: run_01AAAAAA, run_01AABBBB") as exc:
        resolve_run_id("01AA", jd)
    assert "more characters" in exc.value.one_line()
    with pytest.raises(InputError, match="run 'nope' not found"):
        resolve_run_id("nope", jd)


def invoke(home: FilledHome, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args), env=home.env(), terminal_width=200)
    return res.exit_code, res.stdout, res.stderr


def run_with(home: FilledHome, name: str) -> str:
    return home.run_ids[name]


@pytest.mark.slow
def test_why_explains_an_escalation_and_what_the_human_did(filled_home: FilledHome) -> None:
    rid = run_with(filled_home, "shop")
    code, out, err = invoke(filled_home, "runs", "why", rid[4:14])  # a prefix without run_
    assert code == 0, err
    assert "git push --force origin main" in out  # the screen it saw
    assert "risk dangerous (git-push-force, effect:destroy)" in out and "rules that fired: prompt:" in out
    # the command judgment, part by part: the level, the reason and the rule that decided
    assert "the command, part by part" in out
    assert "git push: is destructive by nature [effect:destroy]" in out
    assert "escalate by rule danger" in out and "next action for a human: answer" in out
    assert "ended by human" in out and "resumed (by human" in out
    assert "the human pressed 3, selecting 'No" in " ".join(out.split())  # what the human did
    assert "shadow policies on the same screen" in out
    code, out, err = invoke(filled_home, "runs", "why", rid, "--json")
    x = json.loads(out)
    assert x["decision"]["kind"] == "escalate" and x["rule"] == "danger" and x["sent"] == []
    assert x["classification"]["prompt"]["risk"]["matched"] == ["git-push-force", "effect:destroy"]
    assert [p["rule"] for p in x["classification"]["prompt"]["risk"]["parts"]] == ["effect:destroy"]
    assert x["escalation"]["ended_by"] == "human" and x["escalation"]["human_keys"] == ["3"]
    assert x["escalation"]["selected"].startswith("No")
    waited = filled_home.human_waits["shop"]
    assert waited >= HUMAN_WAIT_S and waited - 0.05 <= x["escalation"]["seconds_lost"] <= waited + SEEN_WITHIN_S
    assert [h["kind"] for h in x["next"]][:2] == ["pause", "friction"]
    assert x["shadows"] and x["shadows"][0]["shadow_policy_id"] == filled_home.candidate.policy_id


@pytest.mark.slow
def test_why_by_seq_decision_id_and_last(filled_home: FilledHome) -> None:
    rid = run_with(filled_home, "sticky")
    with open_warehouse(filled_home.settings.warehouse, read_only=True) as wh:
        events = wh.events_df(rid)
        first = explain_decision(wh, rid)
    actions = events.filter(events["kind"] == "action")
    not_taken = next(r for r in actions.iter_rows(named=True) if '"confirmed":false' in r["payload"].replace(" ", ""))
    seq = not_taken["seq"]
    code, out, err = invoke(filled_home, "runs", "why", rid, str(seq), "--json")
    assert code == 0, err
    x = json.loads(out)
    assert x["decision"]["kind"] == "answer" and x["decision"]["keys"] == ["1"]
    assert [a["confirmed"] for a in x["sent"]] == [None, None, False]
    assert [f["kind"] for f in x["friction"]] == ["answer_not_taken"] and x["friction"][0]["seconds_lost"] > 0.5
    assert any(s["kind"] == "escalate" for s in x["shadows"])  # the cautious candidate disagrees
    obs_seq = x["classification"]["seq"]
    _, out2, _ = invoke(filled_home, "runs", "why", rid, str(obs_seq), "--json")  # its screen: the same decision
    assert json.loads(out2)["decision_id"] == x["decision_id"]
    _, out3, _ = invoke(filled_home, "runs", "why", rid, x["decision_id"][:18], "--json")
    assert json.loads(out3)["seq"] == x["seq"]
    _, out4, _ = invoke(filled_home, "runs", "why", "last", "--last", "--json")
    assert json.loads(out4)["decision"]["kind"] == "finish"
    assert first.decision["kind"] != "wait"


@pytest.mark.slow
def test_bad_references_are_one_line(filled_home: FilledHome) -> None:
    rid = run_with(filled_home, "shop")
    for args, needle in ((["runs", "why", rid, "99999"], "no event with seq 99999"),
                         (["runs", "why", rid, "zz-no-such"], "no decision 'zz-no-such'"),
                         (["runs", "why", "run_"], "matches 10 runs"),
                         (["runs", "why", rid, "3", "--last"], "not both")):
        code, out, err = invoke(filled_home, *args)
        assert code == 2 and needle in err and err.count("\n") == 1, (args, err)


@pytest.mark.slow
def test_every_runs_command_takes_a_prefix_or_last(filled_home: FilledHome) -> None:
    rid = run_with(filled_home, "workflow")
    for cmd in (["show"], ["summarize", "--json"], ["export", "--format", "json"]):
        code, out, err = invoke(filled_home, "runs", cmd[0], rid[:16], *cmd[1:])
        assert code == 0, (cmd, err)
        assert rid in out, cmd
    code, out, err = invoke(filled_home, "runs", "show", "last")
    assert code == 0 and rid in out, err  # the workflow run started last


def test_why_shows_the_stored_redacted_screen(tmp_path: Path) -> None:
    s = Settings(home=tmp_path / "home").ensure()
    secret = "sk-ant-api03-" + "x" * 40
    with Journal(s.journal_path("run_secret"), "run_secret") as j:
        j.append("run_started", {"agent": "claude"})
        o = j.append("observation", {"observation": {"screen_hash": "h1", "state": "blocked",
                                                     "blocker": {"kind": "auth", "message": "401"}},
                                     "screen": {"screen_hash": "h1", "text": f"export KEY={secret}\n401 Unauthorized"}})
        j.append("decision", {"decision": {"kind": "escalate", "rule": "blocker", "reason": "blocked: auth",
                                           "trigger_id": o.event_id}})
    sync(s)
    with open_warehouse(s.warehouse, read_only=True) as wh:
        x = explain_decision(wh, "run_secret")
    assert x.screen is not None and secret not in x.screen and "401 Unauthorized" in x.screen
    assert x.classification is not None and x.classification.blocker == {"kind": "auth", "message": "401"}
    assert x.escalation is None and x.next == []  # nothing ended it, nothing happened yet
