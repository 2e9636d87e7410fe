"""Warehouse benchmark: ingest throughput for 1,000,000 synthetic journal events, and the
time of a friction-style aggregate over them.

Targets (issue 2): >= 50,000 events/s ingest; aggregate < 1 s.

    .venv/bin/python bench/warehouse.py [--events N] [--runs R]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.journals import generated_home  # noqa: E402
from supervisor.ids import new_id  # noqa: E402
from supervisor.warehouse import open_warehouse, sync  # noqa: E402

KINDS = ["observation"] * 55 + ["decision"] * 25 + ["action"] * 10 + ["friction"] * 5 + ["shadow_decision"] * 5
STATES = ["busy", "asking", "idle", "blocked"]
FRICTION = ["repeated_prompt", "answer_not_taken", "escalation", "human_keystrokes", "stall", "retry"]


def write_journals(journals: Path, n_events: int, n_runs: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    journals.mkdir(parents=True, exist_ok=True)
    per_run = n_events // n_runs
    t0 = 1_790_000_000.0
    screens = [f"{i:032x}" for i in range(2000)]
    for r in range(n_runs):
        run_id = new_id("run_")
        lines = []
        at = t0 + r * 3600
        last_obs = None
        for seq in range(1, per_run + 1):
            at += rng.random() * 2
            if seq == 1:
                kind, payload = "run_started", {"command": ["claude"], "agent": "claude", "policy_id": "pol_bench"}
            elif seq == per_run:
                kind, payload = "run_ended", {"outcome": "finished", "exit_code": 0}
            else:
                kind = rng.choice(KINDS)
                if kind == "observation":
                    h = rng.choice(screens)
                    payload = {"observation": {"screen_hash": h, "state": rng.choice(STATES), "agent": "claude",
                                               "confidence": 0.9, "evidence": ["busy:spinner"]},
                               "pane_id": "%1", "screen": {"text": f"screen {h}", "width": 120, "height": 40}}
                elif kind in ("decision", "shadow_decision"):
                    payload = {"decision": {"kind": rng.choice(["wait", "answer", "escalate"]), "keys": ["1"],
                                            "reason": "bench", "trigger_id": last_obs}, "shadow_policy_id": "pol_s"}
                elif kind == "action":
                    payload = {"action": {"kind": "send_keys", "keys": ["1"], "delivered": True}}
                else:
                    payload = {"kind": rng.choice(FRICTION), "detail": "bench", "seconds_lost": rng.random() * 30}
            eid = new_id()
            if kind == "observation":
                last_obs = eid
            lines.append(json.dumps({"event_id": eid, "run_id": run_id, "seq": seq, "kind": kind, "at": at,
                                     "payload": payload, "schema_version": 1}, separators=(",", ":")))
        (journals / f"{run_id}.jsonl").write_text("\n".join(lines) + "\n")


FRICTION_AGGREGATE = """
SELECT r.agent, f.kind, count(*) AS events, count(DISTINCT f.run_id) AS runs,
       sum(f.seconds_lost) AS seconds_lost,
       count(*) FILTER (WHERE f.occurred_at >= r.started_at + INTERVAL 1 HOUR) AS late_events
FROM friction f JOIN runs r USING (run_id)
GROUP BY ALL ORDER BY seconds_lost DESC
"""

EVENTS_AGGREGATE = """
SELECT e.run_id, r.agent, count(*) AS events,
       count(*) FILTER (WHERE e.kind = 'friction') AS friction,
       count(*) FILTER (WHERE e.kind = 'decision') AS decisions,
       date_diff('second', min(e.occurred_at), max(e.occurred_at)) AS span_s
FROM events e JOIN runs r USING (run_id)
GROUP BY ALL ORDER BY friction DESC
"""


def _median_s(wh: object, query: str) -> float:
    times = []
    for _ in range(5):
        t = time.perf_counter()
        wh.sql(query)  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t)
    return sorted(times)[2]


def main() -> None:
    with generated_home(__doc__, write_journals, runs=200) as (settings, args, report):
        rate = report.new_events / report.seconds
        print(f"ingest: {report.new_events:,} events in {report.seconds:.2f}s = {rate:,.0f} events/s "
              f"(target >= 50,000) {'OK' if rate >= 50_000 else 'MISSED'}")
        again = sync(settings)
        print(f"re-ingest (idempotent): {again.new_events} new events in {again.seconds:.2f}s")
        with open_warehouse(settings.warehouse, read_only=True) as wh:
            wh.sql(FRICTION_AGGREGATE)  # warm
            times = []
            for _ in range(5):
                t = time.perf_counter()
                df = wh.sql(FRICTION_AGGREGATE)
                times.append(time.perf_counter() - t)
            best, median = min(times), sorted(times)[2]
            print(f"friction aggregate over {wh.stats()['friction']:,} friction rows: median {median * 1000:.0f} ms, "
                  f"best {best * 1000:.0f} ms (target < 1 s) {'OK' if median < 1 else 'MISSED'}")
            print(df.head(6))
            med = _median_s(wh, EVENTS_AGGREGATE)
            print(f"friction-style aggregate over all {wh.stats()['events']:,} events (per run and kind): "
                  f"median {med * 1000:.0f} ms (target < 1 s) {'OK' if med < 1 else 'MISSED'}")
            t = time.perf_counter()
            wh.runs_df()
            print(f"run_summary view over {args.runs} runs: {(time.perf_counter() - t) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
