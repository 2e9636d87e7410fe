"""The candidate lifecycle end to end, live: `supervisor run` in a real tmux server with the scripted
agent, a person at the keyboard played with tmux send-keys, a real DuckDB warehouse, the real CLI.

A question the shipped baseline escalates for want of a rule ("Which database should the service
use?") comes up in every run, and the human always picks the same harmless option (SQLite, by
moving the highlight down and pressing Enter). The workbench then walks the whole way:

propose (a rule for exactly that question, no safety relaxation) -> gate (HOLD: no live evidence
yet) -> shadow canary on live runs -> limited rollout (half the runs by run id) -> gate PROMOTE ->
promote -> a new run uses it (answers the question itself) -> rollback -> the next run escalates
again under the baseline; every step's records are in the warehouse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.agent import agent_command
from supervisor.policy import baseline_policy
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse
from tests.helpers import retry_until

REPO = Path(__file__).resolve().parents[2]
QUESTION = "Which database should the service use?"
SCRIPT = {"style": "claude", "steps": [
    {"say": "I'll add persistence."}, {"spinner": {"seconds": 0.5, "verb": "Reading files"}},
    {"prompt": {"id": "db", "kind": "question", "question": QUESTION}},
    {"spinner": {"seconds": 0.5, "verb": "Writing the schema"}}, {"say": "Persistence added."}, {"done": {}}]}


def _whole_lines(path: Path) -> list[str]:
    """The journal's lines written whole so far: one being written (a run's first line holds its policies,
    over a megabyte) is read by the supervisor's own readers as a torn tail, and skipped here too."""
    text = path.read_text(encoding="utf-8")
    return text[:text.rfind("\n") + 1].splitlines()


class Lab:
    """One home, one tmux server, one candidates folder; runs `supervisor ...` as the user would."""

    def __init__(self, tmp: Path, socket: str) -> None:
        self.tmp = tmp
        self.socket = socket
        self.home = tmp / "home"
        self.settings = Settings(home=self.home).ensure()
        self.candidates = tmp / "candidates"
        self.env = dict(os.environ, SUPERVISOR_HOME=str(self.home), SUPERVISOR_TMUX_SOCKET=socket,
                        SUPERVISOR_CANDIDATES=str(self.candidates), PYTHONUNBUFFERED="1")
        for k in ("SUPERVISOR_WAREHOUSE", "SUPERVISOR_POLICY"):
            self.env.pop(k, None)
        self.script = tmp / "script.yaml"
        self.script.write_text(yaml.safe_dump(SCRIPT, allow_unicode=True))
        cfg = yaml.safe_load((REPO / "candidates" / "gate.yaml").read_text())
        cfg.update(suites="danger,claude,codex", episodes=False)
        cfg["expanded"]["variants_per_case"] = 0
        cfg["canary"].update(required=True, min_observations=10, min_runs=3)
        cfg["limited"].update(required=True, min_runs_per_arm=3)
        self.gate = tmp / "gate.yaml"
        self.gate.write_text(yaml.safe_dump(cfg))

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "supervisor", *args], capture_output=True, text=True,
                              env=self.env, timeout=timeout, cwd=REPO)

    def _journal_of(self, session: str) -> Path | None:
        for p in sorted(self.settings.journals_dir.glob("*.jsonl")):
            lines = _whole_lines(p)
            if lines and json.loads(lines[0]).get("payload", {}).get("session") == session:
                return p
        return None

    def run(self) -> dict[str, Any]:
        """One supervised run of the scripted agent (one turn); a human answers any escalation of
        the question by moving down to SQLite and pressing Enter, as a person at the pane would."""
        session = f"lab-{uuid.uuid4().hex[:6]}"
        record = self.tmp / f"{session}.jsonl"
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--session", session, "--turns", "1", "--",
                                 *agent_command(self.script, record)], env=self.env, cwd=self.tmp,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        done = threading.Event()
        human: dict[str, Any] = {"answered": False}

        def person() -> None:
            journal = None
            while not done.is_set():
                journal = journal or self._journal_of(session)
                events = [json.loads(x) for x in _whole_lines(journal)] if journal else []
                if any(e["kind"] == "pause" for e in events):
                    break
                time.sleep(0.1)
            else:
                return
            send = ["tmux", "-L", self.socket, "send-keys", "-t", session]
            # let the supervisor see the highlight move (as it would a person's hand), then choose; the
            # journal is counted before the key goes (a quick supervisor looks before a count after it)
            assert journal is not None
            seen = len(_whole_lines(journal))
            subprocess.run([*send, "Down"], check=False, capture_output=True)
            retry_until(lambda: any(json.loads(x)["kind"] == "observation"
                                    for x in _whole_lines(journal)[seen:]), 30,
                        message="the supervisor to look at the moved highlight")
            subprocess.run([*send, "Enter"], check=False, capture_output=True)
            human["answered"] = True

        t = threading.Thread(target=person, daemon=True)
        t.start()
        try:
            out, err = proc.communicate(timeout=180)
        finally:
            done.set()
            t.join(timeout=40)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        journal = self._journal_of(session)
        assert journal is not None, err
        events = [json.loads(x) for x in journal.read_text().splitlines()]
        answers = [json.loads(x) for x in record.read_text().splitlines() if '"answer"' in x]
        started = events[0]["payload"]
        return {"code": proc.returncode, "stderr": err, "run_id": events[0]["run_id"], "events": events,
                "policy_id": started["policy_id"], "shadows": started.get("shadow_policy_ids") or [],
                "paused": any(e["kind"] == "pause" for e in events), "human": human["answered"],
                "chose": [a.get("label") for a in answers], "stray": [json.loads(x) for x in
                                                                       record.read_text().splitlines()
                                                                       if '"stray"' in x]}

    def runs(self, n: int, parallel: int = 3) -> list[dict[str, Any]]:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            return list(pool.map(lambda _i: self.run(), range(n)))

    def sql(self, query: str) -> list[dict[str, Any]]:
        r = self.cli("warehouse", "sql", query, "--json")
        assert r.returncode == 0, r.stderr
        out: list[dict[str, Any]] = json.loads(r.stdout)
        return out


@pytest.mark.slow
def test_propose_gate_canary_rollout_promote_rollback(tmp_path: Path, tmux_socket: str) -> None:
    lab = Lab(tmp_path, tmux_socket)
    base_id = baseline_policy().policy_id
    # -- recorded friction: every run escalates the question, the human always picks SQLite
    friction = lab.runs(6)
    for r in friction:
        assert r["code"] == 0 and r["paused"] and r["human"] and r["chose"] == ["SQLite"], r["stderr"]
        assert r["policy_id"] == base_id and r["stray"] == []
    assert lab.cli("warehouse", "sync").returncode == 0

    # -- propose: a rule for exactly that prompt, no safety relaxation
    r = lab.cli("eval", "propose", "--objective", "reduce_friction", "--json")
    assert r.returncode == 0, r.stderr
    [proposal] = json.loads(r.stdout)
    cid = proposal["candidate_id"]
    assert cid == "answer-which-database-should-the-service-use"
    assert proposal["evidence"][0]["label"] == "SQLite" and proposal["evidence"][0]["support"] == 6
    cand_id = proposal["policy_id"]
    text = (lab.candidates / cid / "policy.yaml").read_text()
    assert "extends: baseline" in text and "allow_" not in text

    # -- gate: no live evidence yet
    r = lab.cli("eval", "gate-candidate", cid, "--gate", str(lab.gate), "--json")
    gate = json.loads(r.stdout)
    assert r.returncode == 1 and gate["verdict"] == "HOLD", gate
    held = {x["check"]: x["status"] for x in gate["reasons"]}
    assert held["canary"] == "hold" and held["limited"] == "hold" and held["safety_knobs"] == "pass"
    assert held["objective"] == "pass", "six runs where the human chose what the candidate would have"

    # -- shadow canary: new runs carry it, never acting
    assert lab.cli("eval", "canary", "start", cid, "--by", "ana").returncode == 0
    shadowed = lab.runs(3)
    for r in shadowed:
        assert r["policy_id"] == base_id and cand_id in r["shadows"] and r["paused"] and r["human"], r
    assert lab.cli("warehouse", "sync").returncode == 0
    r = lab.cli("eval", "canary", "report", cid, "--gate", str(lab.gate), "--json")
    rep = json.loads(r.stdout)["shadow"]
    assert rep["runs"] == 3 and rep["unsafe"] == 0 and rep["saved_escalations"] == 3 and rep["enough"], json.dumps(rep)[:4000]

    # -- limited rollout: half the new runs act under the candidate (by run id)
    assert lab.cli("eval", "canary", "limited", cid, "--fraction", "0.5", "--by", "ana").returncode == 0
    arms: dict[str, list[dict[str, Any]]] = {"candidate": [], "control": []}
    while min(len(v) for v in arms.values()) < 3:
        assert len(arms["candidate"]) + len(arms["control"]) < 24, "the run-id split is far from half"
        for r in lab.runs(3):
            arm = "candidate" if r["policy_id"] == cand_id else "control"
            arms[arm].append(r)
    for r in arms["candidate"]:
        assert not r["paused"] and not r["human"] and r["chose"] == ["SQLite"] and r["stray"] == [], r
        assert base_id in r["shadows"], "the control still decides alongside"
    for r in arms["control"]:
        assert r["policy_id"] == base_id and r["paused"] and cand_id in r["shadows"]
    assert lab.cli("warehouse", "sync").returncode == 0

    # -- the gate with live evidence: PROMOTE
    r = lab.cli("eval", "gate-candidate", cid, "--gate", str(lab.gate), "--json")
    gate = json.loads(r.stdout)
    table = {x["check"]: (x["status"], x["figure"]) for x in gate["reasons"]}
    assert r.returncode == 0 and gate["verdict"] == "PROMOTE", table
    assert gate["evidence"]["limited"]["verdict"] == "pass"

    # -- promote, and a new run uses it
    r = lab.cli("eval", "promote-candidate", cid, "--approved-by", "ana")
    assert r.returncode == 0, r.stderr
    assert cid in lab.cli("run", "--help").stdout
    promoted = lab.run()
    assert promoted["policy_id"] == cand_id and not promoted["paused"] and promoted["chose"] == ["SQLite"]

    # -- rollback, and the next run uses the previous policy again
    assert lab.cli("eval", "rollback", "--by", "bo", "--reason", "checking the rollback").returncode == 0
    back = lab.run()
    assert back["policy_id"] == base_id and back["paused"] and back["human"]

    # -- every step is recorded in the warehouse
    assert lab.cli("warehouse", "sync").returncode == 0
    kinds = [x["kind"] for x in lab.sql("SELECT kind FROM registry_events ORDER BY registry_event_id")]
    assert kinds == ["canary", "limited", "promote", "rollback"]
    verdicts = [x["verdict"] for x in lab.sql("SELECT verdict FROM gate_results ORDER BY created_at")]
    assert verdicts == ["HOLD", "PROMOTE"]
    assert lab.sql(f"SELECT count(*) AS n FROM candidates WHERE candidate_id = '{cid}'")[0]["n"] == 1
    stored = {x["policy_id"] for x in lab.sql("SELECT policy_id FROM policies")}
    assert {base_id, cand_id} <= stored
    with open_warehouse(lab.settings.warehouse, read_only=True) as wh:
        runs = wh.sql("SELECT policy_id, count(*) AS n FROM runs GROUP BY policy_id").to_dicts()
    assert {x["policy_id"] for x in runs} == {base_id, cand_id}
    # -- replay: every recorded run, under the policy it was recorded with, decides as it did
    r = lab.cli("eval", "replay", "--policy", cid, "--json", "--no-save-report")
    replay = json.loads(r.stdout)
    assert r.returncode == 0 and replay["control"]["missing_policies"] == [], r.stderr
    assert replay["control"]["reproduction"] == 1.0, replay["control"]
    assert replay["safety_regressions"] == 0 and replay["saved_escalations"] >= 9
    r = lab.cli("eval", "promotion-history", "--json")
    hist = json.loads(r.stdout)
    assert [h["kind"] for h in hist] == ["promote", "rollback"] and hist[0]["actor"] == "ana"
    assert hist[0]["gate_result_id"] and hist[1]["reason"] == "checking the rollback"
