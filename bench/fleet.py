"""Fleet benchmark: ingest throughput with 1, 2 and 4 writers (simulated hosts: one process
each, its own home and journals) into a DuckLake (catalog in a private PostgreSQL server, data
as Parquet in a local folder) versus the local DuckDB file.

Each writer ingests all of its own journals with ``supervisor.warehouse.sync``; all start at
one signal. Into the file, writers take turns (DuckDB's lock: a writer waits for it); into the
DuckLake they commit concurrently and a commit that conflicts with another is run again (the
conflicts are counted, and so are syncs that gave up after 90 s of them and were run again, as
the live supervisor does). Throughput is every writer's events over the wall time from the
signal to the last writer done; a fresh warehouse per measurement, checked to hold every event
exactly once.

    .venv/bin/python bench/fleet.py [--runs R] [--prompts P] [--writers 1,2,4]

Needs PostgreSQL's binaries (``apt-get install postgresql``) and the fleet extra.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from supervisor.settings import Settings  # noqa: E402
from supervisor.warehouse import open_warehouse  # noqa: E402
from tests.warehouse.journals import write_run  # noqa: E402
from tests.warehouse.pg import postgres_server  # noqa: E402

WRITER = textwrap.dedent("""
    import json, logging, sys, time
    from pathlib import Path
    from supervisor.settings import Settings, parse_warehouse
    from supervisor.errors import WarehouseBusy
    from supervisor.warehouse import sync

    conflicts = 0

    class Count(logging.Handler):
        def emit(self, record):
            global conflicts
            conflicts += "commit conflict" in record.getMessage()

    logging.getLogger("supervisor.warehouse.backend").addHandler(Count())
    logging.getLogger("supervisor.warehouse.backend").setLevel(logging.INFO)
    home, target, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    s = Settings(home=home, warehouse_path=parse_warehouse(target))
    (home / "ready").touch()
    while not go.exists():
        time.sleep(0.005)
    busy = 0
    while True:  # as the live supervisor does: a sync that gave up is tried again
        try:
            sync(s, wait_s=600)
            break
        except WarehouseBusy:
            busy += 1
    print(json.dumps({"done": time.time(), "conflicts": conflicts, "gave_up": busy}))
""")


def make_homes(root: Path, writers: int, runs: int, prompts: int) -> list[Path]:
    homes = []
    for w in range(writers):
        home = root / f"host{w}"
        s = Settings(home=home).ensure()
        for r in range(runs):
            write_run(s, f"run_h{w}_{r}", prompts=prompts, at=1_790_000_000.0 + 10_000 * w + 1000 * r).close()
        homes.append(home)
    return homes


def measure(target: str, homes: list[Path], work: Path) -> dict[str, float]:
    go = work / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(h), target, str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h in homes]
    deadline = time.monotonic() + 300
    while not all((h / "ready").exists() for h in homes):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise SystemExit("a writer did not start: " + " ".join(p.stderr.read() for p in procs if p.stderr))
        time.sleep(0.01)
    start = time.time()
    go.touch()
    outs = [p.communicate(timeout=1800) for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("a writer failed: " + " | ".join(e[-1500:] for _, e in outs))
    results = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    seconds = max(r["done"] for r in results) - start
    return {"seconds": seconds, "conflicts": sum(r["conflicts"] for r in results),
            "gave_up": sum(r["gave_up"] for r in results)}


def check(target: str, expected: int) -> None:
    with open_warehouse(target, read_only=True) as wh:
        n, d = wh.sql("SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM events").row(0)
    if not n == d == expected:
        raise SystemExit(f"{target}: {n} events ({d} distinct), expected {expected} once each")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4, help="runs (journals) per writer")
    ap.add_argument("--prompts", type=int, default=100, help="prompts per run (4 events each, plus 9)")
    ap.add_argument("--writers", default="1,2,4", help="writer counts to measure")
    args = ap.parse_args()
    counts = [int(x) for x in args.writers.split(",")]
    per_writer = args.runs * (9 + 4 * args.prompts)
    print(f"fleet ingest: {per_writer:,} events per writer ({args.runs} journals of {9 + 4 * args.prompts} "
          f"events); duckdb {__import__('duckdb').__version__}; {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'backend':10} {'writers':>7} {'events':>8} {'seconds':>8} {'events/s':>9} {'conflicts':>9} {'gave_up':>7}")
    with tempfile.TemporaryDirectory(prefix="paneward-fleet-") as tmp, postgres_server() as pg:
        root = Path(tmp)
        for w in counts:
            homes = make_homes(root / f"w{w}", w, args.runs, args.prompts)
            for backend in ("file", "ducklake"):
                work = root / f"w{w}-{backend}"
                work.mkdir()
                for h in homes:
                    (h / "ready").unlink(missing_ok=True)
                if backend == "file":
                    target = str(work / "warehouse.duckdb")
                else:
                    target = pg.location(pg.create_database("fleet"), work / "lake").spec
                with open_warehouse(target):
                    pass  # created once: the writers measure ingest, not creating the schema
                r = measure(target, homes, work)
                events = w * per_writer
                check(target, events)
                print(f"{backend:10} {w:>7} {events:>8,} {r['seconds']:>8.2f} {events / r['seconds']:>9,.0f} "
                      f"{r['conflicts']:>9} {r['gave_up']:>7}", flush=True)


if __name__ == "__main__":
    main()
