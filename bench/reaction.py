"""Prompt-to-answer latency of the live supervisor, and the stray keys and double answers it sends
(there must be none).

The scripted agent (``python -m evals.agent``) shows a busy spinner for a random time, then a
safe permission prompt in its own style, and records when the prompt was drawn, when the answering
key arrived, and every key that arrived while no prompt was live. The supervisor runs in this
process with the baseline policy.

    .venv/bin/python bench/reaction.py [--prompts 30] [--burst-rounds 5] [--poll-prompts 8]

Configurations:

* single pane, event-driven (tmux control mode), Claude Code's and Codex's dialogs (answered as soon as
  the frame is whole by the agent's dialog grammar and no output followed it for the quiet window);
* single pane, slow-dismissing prompts (redrawn twice, through a blank frame, before they go);
* single pane, a slow-drawing agent (each row of every frame written 4 ms after the last);
* single pane, an appending (line-based) agent: answered prompts stay on screen, output below;
* burst: 50 panes under one supervisor, 10 of them showing a prompt at the same instant, several
  rounds (one pane's prompt must not wait behind another's);
* ``--poll 2.0`` (the fallback), for comparison.

Targets (issue 28, quiet machine): single pane p50 <= 15 ms and p95 <= 40 ms; 50-pane burst p95 <= 60 ms;
0 stray keys and 0 double answers in every configuration (the 200-pane figure is
``bench/large_panes.py``'s). The figures are printed with the machine's load average at the start and
end of each configuration: on a shared, loaded machine they are not the targets' figures. Exit status 1
when a stray key or a double answer arrived or a prompt went unanswered (every prompt shown is one
the baseline approves).
"""

from __future__ import annotations

import argparse
import json
import os
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


def doubles(records: list[Path]) -> int:
    """Prompts answered more than once, and keys that came after a prompt's answer was taken."""
    n = 0
    for rec in records:
        ids = [r["id"] for r in read_record(rec) if r["event"] == "answer" and not r.get("timeout")]
        n += len(ids) - len(set(ids))
        n += sum(1 for r in read_record(rec) if r["event"] == "stray" and "after the prompt was answered" in r["why"])
    return n


def row(label: str, records: list[Path], expected: int, load: tuple[float, float] | None = None) -> dict:
    lat = latencies(records)
    return {"label": label, "n": len(lat), "expected": expected, "p50": pct(lat, 50), "p95": pct(lat, 95),
            "p99": pct(lat, 99), "max": max(lat, default=float("nan")),
            "mean": statistics.fmean(lat) if lat else float("nan"),
            "stray": sum(stray_count(r) for r in records), "double": doubles(records),
            "load": load or (os.getloadavg()[0], os.getloadavg()[0])}


def single(label: str, prompts: int, *, seed: int, poll: float | None = None, extra: list[str] | None = None) -> dict:
    load0 = os.getloadavg()[0]
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
    return row(label, [record], prompts, (load0, os.getloadavg()[0]))


def burst(panes: int, simultaneous: int, rounds: int, *, seed: int) -> dict:
    """``panes`` agents under one supervisor; in each round ``simultaneous`` of them show a prompt
    at the same instant."""
    load0 = os.getloadavg()[0]
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
    return row(f"burst: {panes} panes, {simultaneous} prompts at once", records, expected, (load0, os.getloadavg()[0]))


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
    target = "p50<=15 p95<=40"
    configs = [
        (f"single pane, Claude Code (settle {settle} ms)", target,
         lambda: single(f"single pane, Claude Code (settle {settle} ms)", args.prompts, seed=args.seed)),
        ("single pane, Codex", target,
         lambda: single("single pane, Codex", args.prompts, seed=args.seed + 3, extra=["--style", "codex"])),
        ("slow-dismissing prompts", target,
         lambda: single("slow-dismissing prompts", args.prompts, seed=args.seed + 1, extra=["--dismiss", "2"])),
        ("slow-drawing agent (4 ms a row)", "0 stray",
         lambda: single("slow-drawing agent (4 ms a row)", args.prompts, seed=args.seed + 4,
                        extra=["--row-delay-ms", "4"])),
        ("appending agent", target,
         lambda: single("appending agent", args.prompts, seed=args.seed + 2, extra=["--mode", "append", "--style",
                                                                                   "aider"])),
        (f"burst: {args.burst_panes} panes", "p95<=60",
         lambda: burst(args.burst_panes, args.burst_prompts, args.burst_rounds, seed=args.seed)),
    ]
    if args.poll_prompts:
        configs.append(("--poll 2.0", "(fallback)",
                        lambda: single("--poll 2.0", args.poll_prompts, seed=args.seed, poll=2.0)))
    rows = []
    for _, tgt, run in configs:
        r = run()
        r["target"] = tgt
        rows.append(r)
    print(f"\nprompt-to-answer latency (ms), scripted agent, {time.strftime('%Y-%m-%d %H:%M:%S')}, "
          f"{os.cpu_count()} cores")
    print(f"{'configuration':42} {'n':>7} {'p50':>7} {'p95':>7} {'p99':>7} {'max':>7} {'stray':>5} {'double':>6} "
          f"{'load':>9}  target")
    for r in rows:
        n = f"{r['n']}/{r['expected']}"
        load = f"{r['load'][0]:.1f}-{r['load'][1]:.1f}"
        print(f"{r['label']:42} {n:>7} {r['p50']:>7.1f} {r['p95']:>7.1f} {r['p99']:>7.1f} {r['max']:>7.1f} "
              f"{r['stray']:>5} {r['double']:>6} {load:>9}  {r['target']}, 0 stray, 0 double")
    print("targets (issue 28, on a quiet machine): single pane p50 <= 15 ms, p95 <= 40 ms; 50-pane burst p95 <= 60 ms; "
          "200 panes p99 <= 250 ms (bench/large_panes.py); 0 stray keys and 0 double answers everywhere. "
          "`load` is the 1-minute load average before and after: above the core count, the figures measure the "
          "machine's queue, not the supervisor.")
    if args.json:
        print(json.dumps(rows))
    missed = [r["label"] for r in rows if r["n"] < r["expected"]]
    if missed:  # an escalated (or unanswered) prompt has no latency: the figures above leave it out
        print(f"prompts left unanswered in: {', '.join(missed)}")
    return 1 if missed or any(r["stray"] or r["double"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
