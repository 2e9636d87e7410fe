"""Reliability benchmark: SIGKILL the supervisor at random instants during scripted workflow runs
in real tmux (50 kills by default: 5 runs x 10), then plain runs (2 x 10 by default; every prompt
answered once, no stray key), restart it each time, and print what happened:
kills, journaled events, events lost or missing from the warehouse, duplicates (instructions
delivered twice, checkpoints processed twice), resumes (against restarts that had something to
resume), leaked supervisor processes, and how each run ended.

    .venv/bin/python bench/reliability.py [--runs 5] [--kills 10] [--plain 2] [--seed 15]
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.kills import KillReport, kill_run, plain_kill_run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kills", type=int, default=10, help="kills per run")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--plain", type=int, default=2, help="plain (no spec) runs, with --kills kills each, after those")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    socket = f"svbench-{uuid.uuid4().hex[:8]}"
    root = Path(tempfile.mkdtemp(prefix="sv-reliability-"))
    reports: list[KillReport] = []
    t0 = time.monotonic()
    try:
        for i in range(args.runs):
            home = root / f"home{i}"
            home.mkdir()
            r = kill_run(root / f"run{i}", socket, home, run_id=f"run_bench_{i}_{uuid.uuid4().hex[:8]}", kills=args.kills, rng=rng)
            reports.append(r)
            print(f"workflow run {i}: kills {r.kills}, events {r.events}, lost {r.lost}, missing {r.missing}, "
                  f"duplicates {r.duplicates}, resumes {r.resumes}/{r.restarts}, leaks {r.leaks}, "
                  f"outcome {r.outcome}", flush=True)
        for i in range(args.plain):
            home = root / f"plain_home{i}"
            home.mkdir()
            r = plain_kill_run(root / f"plain{i}", socket, home, kills=args.kills, rng=rng)
            reports.append(r)
            print(f"plain run {i}: kills {r.kills}, events {r.events}, lost {r.lost}, missing {r.missing}, "
                  f"duplicates {r.duplicates}, resumes {r.resumes}/{r.restarts}, outcome {r.outcome}", flush=True)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
    total = {k: sum(getattr(r, k) for r in reports)
             for k in ("kills", "events", "lost", "missing", "duplicates", "resumes", "restarts", "leaks")}
    finished = sum(r.outcome == "finished" for r in reports)
    print(f"\nkills {total['kills']}  events {total['events']}  lost {total['lost']}  "
          f"missing from warehouse {total['missing']}  duplicates {total['duplicates']}  "
          f"resumes {total['resumes']}/{total['restarts']}  leaks {total['leaks']}  "
          f"runs finished {finished}/{len(reports)}  ({time.monotonic() - t0:.0f} s)")
    return 0 if all(r.ok() for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
