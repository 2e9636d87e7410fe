"""`supervisor oracle consult` through the CLI against the loopback Messages API server: the
answer, the redaction of what is sent, the cache, the budget, the self-review fallback, and
storing the opinion with a run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from supervisor.policy import dump_policy
from supervisor.settings import Settings
from tests.conftest import invoke_cli
from tests.judge.conftest import judge_policy
from tests.judge.messages_server import MessagesServer, error_reply, tool_reply
from tests.warehouse.journals import write_run

SECRET = "sk-ant-api03-" + "Q" * 60
OPINION = {"summary": "The retry loop never gives up on a 400.",
           "concerns": ["retry.py:12 retries every status"], "recommendations": ["stop on 4xx except 429"],
           "confidence": "high"}


@pytest.fixture
def oracle_env(tmp_path: Path, sv_home: Path, messages_api: MessagesServer) -> dict[str, str]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(dump_policy(judge_policy(model="claude-opus-4-1")), encoding="utf-8")
    return {"SUPERVISOR_POLICY": str(policy), "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": messages_api.base_url}


def test_consult_answers_redacts_and_caches(tmp_path: Path, oracle_env: dict[str, str],
                                            messages_api: MessagesServer) -> None:
    code = tmp_path / "retry.py"
    code.write_text(f"API_KEY = '{SECRET}'\nwhile True:\n    send()\n")
    messages_api.script(tool_reply("give_opinion", OPINION))
    r = invoke_cli("oracle", "consult", "--question", "Review the retry policy", "--file", str(code),
                   env=oracle_env)
    assert r.returncode == 0, r.stderr
    assert "[review · claude-opus-4-1, $" in r.stdout and "The retry loop never gives up" in r.stdout
    assert "concern: retry.py:12 retries every status" in r.stdout and "do: stop on 4xx except 429" in r.stdout
    sent = json.dumps(messages_api.requests[0])
    assert messages_api.requests[0]["model"] == "claude-opus-4-1"
    assert "while True" in sent and "Review the retry policy" in sent
    assert SECRET not in sent and "sk-ant-api03-QQQQ" not in sent, "files are redacted before they are sent"
    again = invoke_cli("oracle", "consult", "--question", "Review the retry policy", "--file", str(code), "--json",
                       env=oracle_env)
    x = json.loads(again.stdout)
    assert x["source"] == "model" and x["call"]["cache_hit"] is True and x["call"]["cost_usd"] == 0
    assert messages_api.calls == 1, "the same question about the same files is answered from the cache"


def test_no_key_budget_and_errors_fall_back_to_a_self_review(tmp_path: Path, oracle_env: dict[str, str],
                                                             messages_api: MessagesServer) -> None:
    plan = tmp_path / "plan.md"
    plan.write_text("1. migrate\n2. deploy\n")
    no_key = {**oracle_env, "ANTHROPIC_API_KEY": ""}
    x = json.loads(invoke_cli("oracle", "consult", "-q", "Is this plan safe?", "--file", str(plan), "--mode", "plan",
                              "--json", env=no_key).stdout)
    assert x["source"] == "self_review" and "no model key" in x["fallback_reason"]
    assert any("cannot be undone" in rec for rec in x["recommendations"]) and x["concerns"] == [f"{plan}: 3 lines"]
    assert messages_api.calls == 0
    broke = tmp_path / "broke.yaml"
    broke.write_text(dump_policy(judge_policy(budget_usd_per_day=0.0)), encoding="utf-8")
    x = json.loads(invoke_cli("oracle", "consult", "-q", "Is this plan safe?", "--json",
                              env={**oracle_env, "SUPERVISOR_POLICY": str(broke)}).stdout)
    assert x["source"] == "self_review" and x["fallback_reason"].startswith("budget:")
    assert messages_api.calls == 0, "a refused budget sends nothing"
    messages_api.script(error_reply(401, kind="authentication_error", message="bad key"))
    r = invoke_cli("oracle", "consult", "-q", "Why does it hang?", "--mode", "debug", env=oracle_env)
    assert r.returncode == 0 and "[debug · self-review] No model answered (the call failed:" in r.stdout
    r = invoke_cli("oracle", "consult", "-q", "x", "--file", str(tmp_path / "missing.py"), env=oracle_env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def _journal(home: Path, run_id: str) -> list[dict]:
    return [json.loads(ln) for ln in (home / "journals" / f"{run_id}.jsonl").read_text().splitlines()
            if ln.startswith('{"event_id": "') or ln.startswith('{"event_id":"')]


def test_consult_with_run_journals_it_budgeted_cached_and_redacted(tmp_path: Path, sv_home: Path,
                                                                   oracle_env: dict[str, str],
                                                                   messages_api: MessagesServer) -> None:
    """A run with no live supervisor: each consultation is journaled with the run (the model call as a
    judge_call, the opinion as an oracle note), the question redacted; the warehouse's
    oracle_consultations view and `runs show` list them with their cost; the same question again
    comes from the cache; past the run's judge budget the answer is a self-review, journaled too."""
    write_run(Settings(home=sv_home).ensure(), "run_orc", at=time.time() + 30).close()
    messages_api.script(tool_reply("give_opinion", OPINION))
    question = f"Should the run retry? Our key is {SECRET}"
    r = invoke_cli("oracle", "consult", "-q", question, "--run", "orc", env=oracle_env)
    assert r.returncode == 0 and "stored with run_orc in its journal" in r.stdout, r.stdout + r.stderr
    again = invoke_cli("oracle", "consult", "-q", question, "--run", "orc", "--json", env=oracle_env)
    assert json.loads(again.stdout)["stored"] == "journaled" and messages_api.calls == 1, "answered from the cache"

    evs = _journal(sv_home, "run_orc")
    notes = [e["payload"] for e in evs if e["kind"] == "note" and e["payload"].get("type") == "oracle"]
    calls = [e["payload"] for e in evs if e["kind"] == "judge_call"]
    assert len(notes) == 2 and len(calls) == 2 and [c["purpose"] for c in calls] == ["oracle", "oracle"]
    assert [n["judge_call_id"] for n in notes] == [c["judge_call_id"] for c in calls]
    assert SECRET not in json.dumps(evs) and "Should the run retry?" in notes[0]["question"]
    assert notes[0]["summary"] == OPINION["summary"] and notes[0]["concerns"] == OPINION["concerns"]
    assert [e["seq"] for e in evs] == sorted({e["seq"] for e in evs}), "one writer: seqs stay unique and ordered"

    shown = json.loads(invoke_cli("runs", "show", "orc", "--json").stdout)["oracle"]
    assert [(c["source"], c["cache_hit"], c["stored_in"]) for c in shown] == [("model", False, "journal"),
                                                                              ("model", True, "journal")]
    assert shown[0]["cost_usd"] > 0 and shown[1]["cost_usd"] == 0 and shown[0]["recommendations"] == \
        OPINION["recommendations"]
    text = invoke_cli("runs", "show", "orc", env={"COLUMNS": "200"}).stdout
    assert "oracle consultations" in text and "review · claude-opus-4-1 · $" in text and "from the cache" in text
    assert OPINION["summary"] in text

    broke = tmp_path / "broke.yaml"
    spent = sum(c["cost_usd"] for c in calls)
    broke.write_text(dump_policy(judge_policy(model="claude-opus-4-1", budget_usd_per_run=spent + 1e-9)),
                     encoding="utf-8")
    x = json.loads(invoke_cli("oracle", "consult", "-q", "And now?", "--run", "orc", "--json",
                              env={**oracle_env, "SUPERVISOR_POLICY": str(broke)}).stdout)
    assert x["source"] == "self_review" and "budget for this run is spent" in x["fallback_reason"]
    assert messages_api.calls == 1, "a spent run budget sends nothing"
    r = invoke_cli("report", "run", "orc", "--out", str(tmp_path / "report"))
    assert r.returncode == 0, r.stderr
    md = next((tmp_path / "report").rglob("*.md")).read_text()
    assert "## Second opinions" in md and OPINION["summary"] in md
    rows = json.loads(invoke_cli("warehouse", "sql", "SELECT source, call_outcome, fallback_reason FROM "
                                 "oracle_consultations WHERE run_id = 'run_orc' ORDER BY seq", "--json").stdout)
    assert [r["source"] for r in rows] == ["model", "model", "self_review"]
    assert rows[2]["call_outcome"] == "budget_exceeded" and rows[2]["fallback_reason"].startswith("budget:")
    spend = list((sv_home / "judge" / "spend").glob("*"))
    assert spend and "run_orc" in "".join(p.read_text() for p in spend), "the run's judge budget counts it"
    r = invoke_cli("oracle", "consult", "-q", "x", "--run", "nosuchrun", env=oracle_env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and messages_api.calls == 1, r.stderr


@pytest.mark.slow
def test_consult_with_a_live_run_goes_through_its_supervisor(tmp_path: Path, live_env: dict[str, str],
                                                             oracle_env: dict[str, str], messages_api: MessagesServer,
                                                             tmux_socket: str) -> None:
    """A run a live supervisor holds (`run --detach` in real tmux): the consultation is handed to that
    supervisor, which journals it (one writer); an ACP run's supervisor does not take such requests,
    so its consultation is kept in the annotations ledger, and `runs show` lists both kinds."""
    from tests.acp.helpers import acp_run, agent_argv, wait_for_event, write_agent_script
    from tests.acp.helpers import journal as acp_journal
    from tests.conftest import run_cli
    from tests.helpers import retry_until
    from tests.live_helpers import agent_command, assert_no_stray_keys, write_script

    env = {**live_env, **oracle_env}
    home = Path(env["SUPERVISOR_HOME"])
    script = write_script(tmp_path, [{"idle": {"id": "wait", "seconds": 600}}])
    record = tmp_path / "rec.jsonl"
    # the supervisors run without the judge (it would answer the loopback's scripted replies itself)
    out = run_cli("run", "--detach", "--session", "orc", "--", *agent_command(script, record), env=live_env)
    assert out.returncode == 0, out.stdout + out.stderr
    journals = home / "journals"
    run_id = retry_until(lambda: [p.stem for p in journals.glob("*.jsonl")], 60, message="the run's journal")[0]
    retry_until(lambda: any(e["kind"] == "observation" for e in _journal(home, run_id)), 60,
                message="the supervisor looking at its pane")
    messages_api.script(tool_reply("give_opinion", OPINION))
    r = invoke_cli("oracle", "consult", "-q", "Is the agent stuck?", "--run", run_id, "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["stored"] == "journaled", r.stdout
    evs = _journal(home, run_id)
    pid = next(e["payload"]["pid"] for e in evs if e["kind"] == "run_started")
    note = next(e for e in evs if e["kind"] == "note" and e["payload"].get("type") == "oracle")
    assert note["payload"]["summary"] == OPINION["summary"] and note["payload"]["source"] == "model"
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1)), "the supervisor wrote it: no second writer"
    assert os.path.exists(f"/proc/{pid}"), "the run's supervisor is still supervising"
    assert run_cli("runs", "stop", run_id, env=env).returncode == 0
    shown = json.loads(invoke_cli("runs", "show", run_id, "--json", env=env).stdout)["oracle"]
    assert [(c["stored_in"], c["summary"]) for c in shown] == [("journal", OPINION["summary"])]
    assert_no_stray_keys(record)

    acp_home = tmp_path / "acp-home"
    acp_home.mkdir()
    acp_env = {**env, "SUPERVISOR_HOME": str(acp_home)}
    agent_script, _ = write_agent_script(tmp_path, [[{"say": "Hello."}]])
    with acp_run({**live_env, "SUPERVISOR_HOME": str(acp_home)}, tmp_path, agent_argv(agent_script)) as proc:  # no --task: it waits
        ready = wait_for_event(acp_home, lambda e: e.kind == "note" and e.payload.get("type") == "acp_session",
                               "the session")
        messages_api.script(tool_reply("give_opinion", OPINION))
        r = invoke_cli("oracle", "consult", "-q", "Anything to watch?", "--run", ready.run_id, env=acp_env)
        assert r.returncode == 0 and "in the annotations ledger" in r.stdout, r.stdout + r.stderr
        assert invoke_cli("runs", "stop", ready.run_id, env=acp_env).returncode == 0
        proc.communicate(timeout=60)
    _, acp_events = acp_journal(acp_home)
    assert any(e.kind == "note" and e.payload.get("type") == "request_ignored" for e in acp_events)
    shown = json.loads(invoke_cli("runs", "show", ready.run_id, "--json", env=acp_env).stdout)["oracle"]
    assert len(shown) == 1 and shown[0]["stored_in"] == "ledger" and "Anything to watch?" in shown[0]["summary"]
