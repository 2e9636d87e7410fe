"""Large panes stay fast: per-screen work linear in the screen's size, answer latency on a
400x150 pane, and many panes under one supervisor.

1. **Per-screen cost by size**: what the runner does with one screen before it can answer (make
   the Screen, classify, decide, redact the observation and the decision as the journal does), on
   screens full of text and ``://`` (the input that made URL-password redaction quadratic), with
   a permission dialog at the bottom; from 100x40 to 400x150 and a 1,000-column one. Linear means
   the cost per 1,000 characters stays flat.
2. **Live answer latency on a 400x150 pane**: the scripted agent fills the pane with such text,
   then asks; the time from the prompt drawn to the answering key received (target p50 < 100 ms).
3. **Many panes under one supervisor**: ``bench/reaction.py``'s burst (every pane a scripted
   agent in one tmux server, some showing a prompt at the same instant): p50, p95, p99 (target
   p99 < 250 ms for 200 panes).

    .venv/bin/python bench/large_panes.py [--prompts 15] [--panes 200] [--rounds 5] [--skip-live]

Targets (issue 24 and 28, quiet machine): per-screen cost per 1,000 cells flat (linear); 400x150 answer
latency p50 < 100 ms; 200 panes under one supervisor p99 <= 250 ms. Each figure is printed with the
machine's 1-minute load average before and after it: above the core count, the figures measure the
machine's queue, not the supervisor.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from evals.agent import read_record  # noqa: E402
from supervisor.classify import classify  # noqa: E402
from supervisor.decide import decide  # noqa: E402
from supervisor.models import RunState  # noqa: E402
from supervisor.policy import baseline_policy  # noqa: E402
from supervisor.redact import redact_data  # noqa: E402
from supervisor.runner import RunConfig, Supervisor  # noqa: E402
from supervisor.screen import make_screen  # noqa: E402
from supervisor.settings import Settings  # noqa: E402
from supervisor.surfaces.tmux import TmuxSurface  # noqa: E402

DIALOG = [
    "╭" + "─" * 78 + "╮",
    "│ Bash command" + " " * 65 + "│",
    "│   npm test" + " " * 67 + "│",
    "│ Do you want to proceed?" + " " * 54 + "│",
    "│ ❯ 1. Yes" + " " * 69 + "│",
    "│   2. No, and tell Claude what to do differently (esc)" + " " * 24 + "│",
    "╰" + "─" * 78 + "╯",
]


def filler_rows(width: int, rows: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words = ["see", "https://example.com/a:b", "path://x:y", "src/app.py:12", "ok", "fetch", "ftp://h:p",
             "".join(rng.choice(string.ascii_lowercase) for _ in range(6))]
    out = []
    for _ in range(rows):
        line = ""
        while len(line) < width - 12:
            line += rng.choice(words) + " "
        out.append(line[:width - 1])
    return out


def per_screen(width: int, height: int, repeat: int) -> tuple[float, float]:
    """(p50 ms, max ms) of the runner's work on one new screen of this size."""
    policy = baseline_policy()
    rs = RunState(run_id="b", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True)
    times = []
    for k in range(repeat):
        rows = filler_rows(width, height - len(DIALOG) - 1, seed=k) + DIALOG
        raw = "\n".join(rows)
        start = time.perf_counter()
        screen = make_screen(raw, width=width, height=height)
        obs = classify(screen, policy)
        d = decide(obs, rs, policy)
        redact_data({"observation": obs.model_dump(mode="json"), "screen": {"text": screen.text, "width": width}})
        redact_data({"decision": d.model_dump(mode="json")})
        times.append((time.perf_counter() - start) * 1000)
        assert obs.state == "asking" and d.kind == "answer", (obs.state, d.kind, d.reason)
    return statistics.median(times), max(times)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(q / 100 * (len(s) - 1))))] if s else float("nan")


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


def live_large_pane(prompts: int) -> list[float]:
    """Answer latencies on a 400x150 pane that the agent fills with text and URLs before each prompt."""
    socket = f"svlarge-{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="sv-large-"))
    record = work / "agent.jsonl"
    steps: list[dict] = []
    for i in range(prompts):
        steps += [{"say": "\n".join(filler_rows(396, 130, seed=i))}, {"spinner": {"seconds": 0.4}},
                  {"prompt": {"id": f"p{i}", "kind": "bash", "command": f"npm test -- --shard={i}"}}]
    steps.append({"exit": 0})
    script = work / "script.yaml"
    script.write_text(yaml.safe_dump({"style": "claude", "cwd": "/tmp/proj", "steps": steps}))
    surface = TmuxSurface(socket)
    try:
        pane = surface.new_session("large", [sys.executable, "-m", "evals.agent", str(script), "--record",
                                             str(record)], width=400, height=150, cwd=str(ROOT))
        settings = Settings(home=work / "home").ensure()
        sup = Supervisor(surface, settings, RunConfig(policy=baseline_policy()), socket=socket)
        sup.add_pane(pane)
        sup.run(until=lambda: sum(r["event"] == "answer" for r in read_record(record)) >= prompts,
                timeout=prompts * 10 + 30)
        sup.close(final_sync=False)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return latencies([record])


def many_panes(panes: int, simultaneous: int, rounds: int) -> list[float]:
    spec = importlib.util.spec_from_file_location("bench_reaction", Path(__file__).with_name("reaction.py"))
    assert spec is not None and spec.loader is not None
    reaction = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reaction)
    got: dict[str, list[Path]] = {}
    original = reaction.row

    def keep(label: str, records: list[Path], expected: int, load: tuple[float, float] | None = None) -> dict:
        got["records"] = records
        return original(label, records, expected, load)

    reaction.row = keep
    reaction.burst(panes, simultaneous, rounds, seed=7)
    return latencies(got["records"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="screens per size (per-screen cost)")
    ap.add_argument("--prompts", type=int, default=15, help="prompts on the live 400x150 pane")
    ap.add_argument("--panes", type=int, default=200)
    ap.add_argument("--simultaneous", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--skip-live", action="store_true", help="only the in-process per-screen figures")
    args = ap.parse_args()

    print("per-screen work (make_screen + classify + decide + redaction of what is journaled), new screens:")
    for w, h in ((100, 40), (200, 75), (400, 150), (1000, 150)):
        p50, mx = per_screen(w, h, args.repeat)
        print(f"  {w}x{h} ({w * h:,} cells): p50 {p50:.1f} ms, max {mx:.1f} ms, "
              f"{p50 / (w * h / 1000):.2f} ms per 1,000 cells")
    if args.skip_live:
        return 0
    load0 = os.getloadavg()[0]
    lat = live_large_pane(args.prompts)
    print(f"live 400x150 pane full of text and URLs: {len(lat)}/{args.prompts} answered, p50 {pct(lat, 50):.0f} ms, "
          f"p95 {pct(lat, 95):.0f} ms, max {max(lat, default=float('nan')):.0f} ms (target p50 < 100 ms); "
          f"load {load0:.1f}-{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    load0 = os.getloadavg()[0]
    lat = many_panes(args.panes, args.simultaneous, args.rounds)
    print(f"{args.panes} panes under one supervisor, {args.simultaneous} prompts at once x {args.rounds}: "
          f"{len(lat)} answered, p50 {pct(lat, 50):.0f} ms, p95 {pct(lat, 95):.0f} ms, p99 {pct(lat, 99):.0f} ms "
          f"(target p99 <= 250 ms); load {load0:.1f}-{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
