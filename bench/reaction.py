"""Prompt-to-answer latency of the live supervisor: event-driven (tmux control mode) vs polling.

The scripted agent (``python -m evals.agent --random N``) shows a busy spinner for a
random time, then a safe permission prompt, and records when the prompt was drawn and when the
answering key arrived. The supervisor runs in this process with the baseline policy.

    .venv/bin/python bench/reaction.py [--prompts 30] [--poll-prompts 12] [--settle-ms 30]

Reports p50/p95/max for: event-driven with the baseline's settle_ms, event-driven with
``--settle-ms``, and ``--poll 2.0``. Targets (event-driven): p50 <= 50 ms, p95 <= 150 ms.
settle_ms (quiet time required before reading a screen) is part of the latency by design.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from supervisor.policy import baseline_policy
from supervisor.runner import RunConfig, Supervisor
from supervisor.settings import Settings
from supervisor.surfaces.tmux import TmuxSurface


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(q / 100 * (len(s) - 1))))
    return s[k]


def measure(label: str, prompts: int, *, poll: float | None, settle_ms: int | None, seed: int) -> dict:
    socket = f"svbench-{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="sv-reaction-"))
    record = work / "agent.jsonl"
    surface = TmuxSurface(socket, poll_s=poll)
    try:
        pane = surface.new_session("bench", [sys.executable, "-m", "evals.agent", "--random", str(prompts),
                                             "--seed", str(seed), "--gap", "0.3", "1.2", "--record", str(record)],
                                   width=110, height=32)
        policy = baseline_policy()
        settings = Settings(home=work / "home").ensure()
        sup = Supervisor(surface, settings, RunConfig(policy=policy, settle_ms=settle_ms), socket=socket)
        sup.add_pane(pane)

        def answered() -> int:
            if not record.exists():
                return 0
            return sum(1 for line in record.read_text().splitlines() if '"event": "answer"' in line)

        deadline = time.time() + prompts * (3 + (poll or 0) * 2) + 30
        sup.run(until=lambda: answered() >= prompts, timeout=deadline - time.time())
        sup.close(final_sync=False)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    drawn: dict[str, float] = {}
    lat: list[float] = []
    for line in record.read_text().splitlines():
        r = json.loads(line)
        if r["event"] == "drawn":
            drawn[r["id"]] = r["drawn_at"]
        elif r["event"] == "answer" and r.get("answered_at") and r["id"] in drawn:
            lat.append((r["answered_at"] - drawn[r["id"]]) * 1000)
    return {"label": label, "n": len(lat), "p50": pct(lat, 50), "p95": pct(lat, 95), "max": max(lat, default=0),
            "mean": statistics.fmean(lat) if lat else float("nan"), "settle_ms": settle_ms
            if settle_ms is not None else baseline_policy().timing.settle_ms}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=30, help="prompts per event-driven configuration")
    ap.add_argument("--poll-prompts", type=int, default=12, help="prompts for the --poll 2.0 configuration")
    ap.add_argument("--settle-ms", type=int, default=30, help="the lower settle delay to compare with the baseline's")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    base_settle = baseline_policy().timing.settle_ms
    rows = [
        measure(f"event-driven (settle {base_settle} ms, baseline)", args.prompts, poll=None, settle_ms=None,
                seed=args.seed),
        measure(f"event-driven (settle {args.settle_ms} ms)", args.prompts, poll=None, settle_ms=args.settle_ms,
                seed=args.seed),
        measure("--poll 2.0", args.poll_prompts, poll=2.0, settle_ms=None, seed=args.seed),
    ]
    print(f"\nprompt-to-answer latency (ms), scripted agent, {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(f"{'configuration':44} {'n':>4} {'p50':>8} {'p95':>8} {'max':>8} {'mean':>8}")
    for r in rows:
        print(f"{r['label']:44} {r['n']:>4} {r['p50']:>8.1f} {r['p95']:>8.1f} {r['max']:>8.1f} {r['mean']:>8.1f}")
    print("targets (event-driven): p50 <= 50 ms, p95 <= 150 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
