"""Friction benchmark: how long the friction views take over a large warehouse.

``friction_events`` is computed at query time from the events (nothing is backfilled), so its
cost grows with the warehouse. This writes journals the way the runner does (observations,
decisions, actions with confirmations, pauses and resumes, every friction kind, human-active
waits, workflow retries and verifications), ingests them, and times the view, each roll-up,
``run_summary`` and everything a friction report reads.

Target: each query < 1 s at 1,000,000 events (a notebook cell should feel immediate). Reports
and notebooks compute the view once (``friction_snapshot``) and ask their questions of that copy;
the second half times the same questions that way.

    .venv/bin/python bench/friction.py [--events N] [--runs R]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.journals import generated_home  # noqa: E402
from supervisor import analysis  # noqa: E402
from supervisor.ids import new_id  # noqa: E402
from supervisor.warehouse import Warehouse, open_warehouse  # noqa: E402

AGENTS = ["claude", "codex", "aider", "gemini"]
POLICIES = ["pol_a", "pol_b", "pol_c"]
PATTERNS = ["git-push-force", "rm-recursive", "sql-drop", "git-reset-hard"]


class _Run:
    def __init__(self, run_id: str, at: float, rng: random.Random) -> None:
        self.run_id, self.at, self.rng, self.seq = run_id, at, rng, 0
        self.lines: list[str] = []

    def add(self, kind: str, payload: dict[str, Any], *, dt: float = 0.05, event_id: str | None = None) -> str:
        self.seq += 1
        self.at += dt * (0.5 + self.rng.random())
        eid = event_id or new_id()
        self.lines.append(json.dumps({"event_id": eid, "run_id": self.run_id, "seq": self.seq, "kind": kind,
                                      "at": self.at, "payload": payload, "schema_version": 1},
                                     separators=(",", ":")))
        return eid

    def observe(self, state: str, question: str | None = None) -> str:
        h = f"{self.rng.randrange(5000):032x}"
        prompt = None if question is None else {"kind": "tool_permission", "question": question,
                                                "signature": f"prm_{h[:8]}", "risk": {"level": "none"}}
        return self.add("observation", {"observation": {"screen_hash": h, "state": state, "agent": "claude",
                                                        "prompt": prompt, "evidence": ["bench"]},
                                        "screen": {"screen_hash": h, "text": f"screen {h}\n{question or ''}"}},
                        dt=0.5)

    def decide(self, trigger: str, kind: str, rule: str, policy: str, **extra: Any) -> str:
        return self.add("decision", {"decision": {"kind": kind, "rule": rule, "keys": ["1"] if kind == "answer" else [],
                                                  "reason": rule, "trigger_id": trigger, "policy_id": policy,
                                                  **extra}})


def write_journals(journals: Path, n_events: int, n_runs: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    journals.mkdir(parents=True, exist_ok=True)
    per_run = n_events // n_runs
    for r in range(n_runs):
        run = _Run(new_id("run_"), 1_790_000_000.0 + r * 1800, rng)
        policy = rng.choice(POLICIES)
        run.add("run_started", {"agent": rng.choice(AGENTS), "policy_id": policy, "policy_name": policy})
        while run.seq < per_run - 12:
            roll = rng.random()
            obs = run.observe("asking" if roll < 0.5 else "busy", "Proceed?" if roll < 0.5 else None)
            if roll < 0.35:  # an answer, sometimes not taken, sometimes asked again
                d = run.decide(obs, "answer", "approve-tools", policy)
                aid = new_id()
                run.add("action", {"action": {"action_id": aid, "decision_id": d, "keys": ["1"], "delivered": False}})
                run.add("action", {"action": {"action_id": aid, "decision_id": d, "keys": ["1"], "delivered": True}})
                took = rng.random() > 0.05
                run.add("action", {"action": {"action_id": aid, "decision_id": d, "keys": ["1"], "delivered": True,
                                              "confirmed": took}}, dt=0.3 if took else 2.0)
                if not took:
                    run.add("friction", {"kind": "answer_not_taken", "detail": "keys 1 did not change the prompt"})
                elif rng.random() < 0.03:
                    run.add("friction", {"kind": "repeated_prompt", "detail": "the prompt came back"})
            elif roll < 0.38:  # an escalation a human answers
                d = run.decide(obs, "escalate", "danger", policy)
                run.add("pause", {"pause_reason": "dangerous", "rule": "danger", "decision_id": d,
                                  "risk": {"level": "dangerous", "matched": [rng.choice(PATTERNS)]}})
                run.add("friction", {"kind": "escalation", "detail": "dangerous"})
                wait = rng.expovariate(1 / 40)
                run.add("resume", {"by": rng.choice(["human", "human", "blocker_cleared"]), "waited_s": wait,
                                   "human_keys": ["3"], "selected": "No"}, dt=wait)
            elif roll < 0.40:  # a human typing, the supervisor holding back
                run.add("friction", {"kind": "human_keystrokes", "detail": "typing in the agent's input box"})
                for _ in range(3):
                    run.decide(run.observe("idle"), "wait", "human-active", policy)
            elif roll < 0.41:  # a stall, then its escalation
                d = run.decide(obs, "wait", "stall", policy)
                run.add("friction", {"kind": "stall", "detail": "stalled", "seconds_lost": rng.random() * 300})
            elif roll < 0.42:  # a workflow retry, verified again later
                run.add("verification", {"verifier": "check", "node": "test", "passed": False})
                run.decide(obs, "retry", "workflow:retry", policy, node_id="test")
                run.add("verification", {"verifier": "check", "node": "test", "passed": True}, dt=20)
            else:
                run.decide(obs, "wait", "busy", policy)
        run.add("run_ended", {"outcome": "finished"})
        (journals / f"{run.run_id}.jsonl").write_text("\n".join(run.lines) + "\n")


def _time(wh: Warehouse, label: str, fn: Any) -> float:
    fn(wh)  # warm
    times = []
    for _ in range(3):
        t = time.perf_counter()
        fn(wh)
        times.append(time.perf_counter() - t)
    med = sorted(times)[1]
    print(f"  {label:34} {med * 1000:8.0f} ms  {'OK' if med < 1 else 'MISSED'}")
    return med


def main() -> None:
    with generated_home(__doc__, write_journals, runs=500) as (settings, _args, report):
        print(f"ingested in {report.seconds:.1f}s")
        with open_warehouse(settings.warehouse, read_only=True) as wh:
            stats = wh.stats()
            n = wh.sql("SELECT count(*) AS n FROM friction_events")["n"][0]
            print(f"{stats['events']:,} events, {stats['friction']:,} journaled friction rows, "
                  f"{n:,} friction_events rows (target: each < 1 s)")
            queries = [("friction_events (all rows)", lambda w: w.sql("SELECT * FROM friction_events")),
                       *[(f"time_lost by {by}", lambda w, by=by: analysis.time_lost(w, by))
                         for by in ("kind", "agent", "pattern", "policy", "day", "run")],
                       ("escalations", analysis.escalations), ("human_answers", analysis.human_answers),
                       ("stalls", analysis.stalls), ("top_prompts", analysis.top_prompts),
                       ("run_summary (runs list)", lambda w: w.runs_df())]
            print("each query on its own:")
            worst = max(_time(wh, label, fn) for label, fn in queries)
            t = time.perf_counter()
            with analysis.friction_snapshot(wh):
                print(f"within one friction_snapshot (made in {time.perf_counter() - t:.2f}s):")
                worst_snap = max(_time(wh, label, fn) for label, fn in queries)
            t = time.perf_counter()
            analysis.write_friction_report(wh, settings.home / "reports")
            print(f"whole friction report (7 plots): {time.perf_counter() - t:.1f}s; worst query {worst:.2f}s alone, "
                  f"{worst_snap:.2f}s within a snapshot")


if __name__ == "__main__":
    main()
