"""Prompt-to-answer latency of the live supervisor, and the stray keys it sends (there must be none).

The scripted agent (``python -m evals.agent``) shows a busy spinner for a random time, then a
safe permission prompt, and records when the prompt was drawn, when the answering key arrived,
and every key that arrived while no prompt was live. The supervisor runs in this process with
the baseline policy.

    .venv/bin/python bench/reaction.py [--prompts 30] [--burst-rounds 5] [--poll-prompts 8]

Configurations:

* single pane, event-driven (tmux control mode), Claude/Codex-style prompts that go at once;
* single pane, slow-dismissing prompts (redrawn twice, through a blank frame, before they go);
* single pane, an appending (line-based) agent: answered prompts stay on screen, output below;
* burst: 50 panes under one supervisor, 10 of them showing a prompt at the same instant, several
  rounds (one pane's prompt must not wait behind another's);
* ``--poll 2.0`` (the fallback), for comparison.

Targets: event-driven p50 <= 50 ms and p95 <= 150 ms (single pane, slow-dismiss and appending
included); burst p95 <= 150 ms; 0 stray keys everywhere. Exit status 1 when a stray key arrived
or a prompt went unanswered (every prompt shown is one the baseline approves).
settle_ms (quiet time required before reading a screen) is part of the latency by design.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the evals package, not bench/evals.py

from evals.agent import read_record, stray_count  # noqa: E402
from supervisor.policy import baseline_policy  # noqa: E402
from supervisor.runner import RunConfig, Supervisor  # noqa: E402
from supervisor.settings import Settings  # noqa: E402
from supervisor.surfaces.tmux import TmuxSurface  # noqa: E402


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(q / 100 * (len(s) - 1))))
    return s[k]


def latencies(records: list[Path]) -> list[float]:
    lat: list[float] = []
    for rec in records:
        drawn: dict[str, float] = {}
        for r in read_record(rec):
            if r["event"] == "drawn":
                drawn[r["id"]] = r["drawn_at"]
            elif r["event"] == "answer" and r.get("answered_at") and r["id"] in drawn:
                lat.append((r["answered_at"] - drawn[r["id"]]) * 1000)
    return lat


def answered(records: list[Path]) -> int:
    return sum(1 for rec in records for r in read_record(rec) if r["event"] == "answer")


def row(label: str, records: list[Path], expected: int) -> dict:
    lat = latencies(records)
    return {"label": label, "n": len(lat), "expected": expected, "p50": pct(lat, 50), "p95": pct(lat, 95),
            "max": max(lat, default=float("nan")), "mean": statistics.fmean(lat) if lat else float("nan"),
            "stray": sum(stray_count(r) for r in records)}


def single(label: str, prompts: int, *, seed: int, poll: float | None = None, extra: list[str] | None = None) -> dict:
    socket = f"svbench-{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="sv-reaction-"))
    record = work / "agent.jsonl"
    surface = TmuxSurface(socket, poll_s=poll)
    try:
        pane = surface.new_session("bench", [sys.executable, "-m", "evals.agent", "--random", str(prompts),
                                             "--seed", str(seed), "--gap", "0.3", "1.2", "--record", str(record),
                                             *(extra or [])], width=110, height=32)
        settings = Settings(home=work / "home").ensure()
        sup = Supervisor(surface, settings, RunConfig(policy=baseline_policy()), socket=socket)
        sup.add_pane(pane)
        timeout = prompts * (4 + (poll or 0) * 2) + 30
        sup.run(until=lambda: answered([record]) >= prompts, timeout=timeout)
        # let confirmations and any late (stray) keys land before counting
        end = time.time() + 2.5
        sup.run(timeout=max(0.1, end - time.time()))
        sup.close(final_sync=False)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return row(label, [record], prompts)


def burst(panes: int, simultaneous: int, rounds: int, *, seed: int) -> dict:
    """``panes`` agents under one supervisor; in each round ``simultaneous`` of them show a prompt
    at the same instant."""
    socket = f"svburst-{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="sv-burst-"))
    surface = TmuxSurface(socket)
    records = [work / f"a{i}.jsonl" for i in range(panes)]
    schedules = [work / f"at{i}.txt" for i in range(panes)]
    per_session = 10
    try:
        infos = []
        for i in range(panes):
            cmd = [sys.executable, "-m", "evals.agent", "--at", f"@{schedules[i]}", "--record", str(records[i])]
            session = f"b{i // per_session}"
            if i % per_session == 0:
                infos.append(surface.new_session(session, cmd, width=110, height=32))
            else:
                out = surface.cmd("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", session, *_shell(cmd))
                infos.append(surface.pane_info(out[0].strip()))
        deadline = time.time() + 120
        while time.time() < deadline and not all(any(r["event"] == "start" for r in read_record(rec))
                                                 for rec in records):
            time.sleep(0.2)
        settings = Settings(home=work / "home").ensure()
        sup = Supervisor(surface, settings, RunConfig(policy=baseline_policy()), socket=socket)
        for info in infos:
            sup.add_pane(info)
        rng = random.Random(seed)
        t0 = time.time() + 3.0
        times: list[list[float]] = [[] for _ in range(panes)]
        for r in range(rounds):
            for i in rng.sample(range(panes), simultaneous):
                times[i].append(t0 + r * 4.0)
        for i, path in enumerate(schedules):
            tmp = path.with_suffix(".tmp")
            tmp.write_text(",".join(f"{t:.3f}" for t in times[i]))
            tmp.rename(path)
        expected = rounds * simultaneous
        sup.run(until=lambda: answered(records) >= expected, timeout=rounds * 4.0 + 60)
        end = time.time() + 2.5
        sup.run(timeout=max(0.1, end - time.time()))
        sup.close(final_sync=False)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return row(f"burst: {panes} panes, {simultaneous} prompts at once", records, expected)


def _shell(cmd: list[str]) -> list[str]:
    import shlex

    return [shlex.join(cmd)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=30, help="prompts per single-pane configuration")
    ap.add_argument("--burst-panes", type=int, default=50)
    ap.add_argument("--burst-prompts", type=int, default=10, help="prompts shown at the same instant")
    ap.add_argument("--burst-rounds", type=int, default=5)
    ap.add_argument("--poll-prompts", type=int, default=8, help="prompts for the --poll 2.0 configuration")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="also print the rows as JSON")
    args = ap.parse_args()
    settle = baseline_policy().timing.settle_ms
    rows = [
        single(f"single pane (settle {settle} ms)", args.prompts, seed=args.seed),
        single("slow-dismissing prompts", args.prompts, seed=args.seed + 1, extra=["--dismiss", "2"]),
        single("appending agent", args.prompts, seed=args.seed + 2, extra=["--mode", "append"]),
        burst(args.burst_panes, args.burst_prompts, args.burst_rounds, seed=args.seed),
    ]
    if args.poll_prompts:
        rows.append(single("--poll 2.0", args.poll_prompts, seed=args.seed, poll=2.0))
    print(f"\nprompt-to-answer latency (ms), scripted agent, {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(f"{'configuration':42} {'n':>7} {'p50':>8} {'p95':>8} {'max':>8} {'mean':>8} {'stray':>6}")
    for r in rows:
        n = f"{r['n']}/{r['expected']}"
        print(f"{r['label']:42} {n:>7} {r['p50']:>8.1f} {r['p95']:>8.1f} {r['max']:>8.1f} {r['mean']:>8.1f} "
              f"{r['stray']:>6}")
    print("targets (event-driven): p50 <= 50 ms, p95 <= 150 ms (burst: p95 <= 150 ms); 0 stray keys")
    if args.json:
        print(json.dumps(rows))
    missed = [r["label"] for r in rows if r["n"] < r["expected"]]
    if missed:  # an escalated (or unanswered) prompt has no latency: the figures above leave it out
        print(f"prompts left unanswered in: {', '.join(missed)}")
    return 1 if missed or any(r["stray"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
