"""Fleet reading benchmark: the friction notebook's queries over a DuckLake fleet catalog of
10,000,000 events (issue 28: each <= 3 s on a quiet machine).

The events are journals as the runner writes them (``bench/friction.py``'s generator: observations,
decisions, actions with confirmations, pauses and resumes, every friction kind, stalls, workflow
retries), ingested into a local DuckDB file and copied into a DuckLake (catalog in a private
PostgreSQL server, Parquet in a local folder) with ``supervisor warehouse migrate --to``, the way
a host moves onto the fleet. To reach ten million without generating and ingesting them one by
one, the DuckLake's runs are then copied ``--copies - 1`` times more as other hosts' runs (every
id in every column and payload given a per-copy suffix, so each copy is runs, events and links of
its own); none of that is timed. Then, as ``notebooks/friction.ipynb`` does,
over the DuckLake: ``friction_snapshot`` (the friction view computed once) and every query the
notebook makes within it, each timed (median of three after a warm-up), plus the runs list.

    .venv/bin/python bench/fleet_read.py [--events 10000000] [--runs 5000]

Needs PostgreSQL's binaries (``apt-get install postgresql``) and the fleet extra.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.friction import write_journals  # noqa: E402
from supervisor import analysis  # noqa: E402
from supervisor.settings import Settings  # noqa: E402
from supervisor.warehouse import Warehouse, open_warehouse, sync  # noqa: E402
from supervisor.warehouse.transfer import migrate_warehouse  # noqa: E402
from tests.warehouse.pg import postgres_server  # noqa: E402

TARGET_S = 3.0

QUERIES: list[tuple[str, Callable[[Warehouse], Any]]] = [
    ("friction_totals", analysis.friction_totals),
    *[(f"time_lost by {by}", lambda w, by=by: analysis.time_lost(w, by)) for by in ("kind", "agent", "pattern",
                                                                                    "policy")],
    ("escalations", analysis.escalations),
    ("human_answers", analysis.human_answers),
    ("top_prompts", lambda w: analysis.top_prompts(w, 15)),
    ("stalls", analysis.stalls),
    ("friction_trend", analysis.friction_trend),
    ("friction_by_run", analysis.friction_by_run),
]
"""What notebooks/friction.ipynb asks, in its order."""


REPLICATED = ("events", "observations", "decisions", "shadow_decisions", "actions", "checkpoints", "verifications",
              "judge_calls", "notifications", "friction", "runs")
"""The tables of runs (screens and policies are stored once by content, whoever saw them)."""
_ID = r"(^|[^0-9A-Za-z])([0-7][0-9A-HJKMNP-TV-Z]{25})($|[^0-9A-Za-z])"
"""A ULID (every id the generator makes: runs, events, decisions, actions...) standing alone."""


def replicate(wh: Warehouse, copies: int) -> None:
    """Add ``copies - 1`` copies of every run's rows, each id suffixed ``x<copy>`` wherever it
    appears (columns and JSON payloads), in one transaction."""
    wh.con.execute("BEGIN TRANSACTION")
    for table in REPLICATED:
        cols = wh.con.execute("SELECT column_name, data_type FROM information_schema.columns "
                              "WHERE table_name = ? AND table_catalog = current_database() ORDER BY ordinal_position",
                              [table]).fetchall()
        exprs = []
        for name, kind in cols:
            if kind in ("VARCHAR", "JSON"):
                text = f"regexp_replace(\"{name}\"::VARCHAR, '{_ID}', '\\1\\2x' || k || '\\3', 'g')"
                exprs.append(f"CAST({text} AS {kind})")
            else:
                exprs.append(f'"{name}"')
        wh.con.execute(f"INSERT INTO {table} SELECT {', '.join(exprs)} FROM {table}, range(1, {copies}) AS r(k)")
    wh.con.execute("COMMIT")


def _median(fn: Callable[[], Any]) -> float:
    fn()  # warm
    times = []
    for _ in range(3):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[1]


def _line(label: str, seconds: float) -> bool:
    ok = seconds <= TARGET_S
    print(f"  {label:40} {seconds:7.2f} s  target <= {TARGET_S:.0f} s: {'met' if ok else 'MISSED'}  "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="events generated and ingested")
    ap.add_argument("--runs", type=int, default=500, help="runs (journals) they are in")
    ap.add_argument("--copies", type=int, default=10, help="the DuckLake holds this many copies of them")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="paneward-fleet-read-") as tmp, postgres_server() as pg:
        root = Path(tmp)
        settings = Settings(home=root / "home", warehouse_path=root / "local.duckdb")
        t = time.perf_counter()
        write_journals(settings.journals_dir, args.events, args.runs)
        print(f"generated {args.events:,} events in {args.runs:,} journals in {time.perf_counter() - t:.0f} s "
              "(not timed)", flush=True)
        t = time.perf_counter()
        report = sync(settings)
        print(f"ingested {report.new_events:,} into the local file in {time.perf_counter() - t:.0f} s (not timed)",
              flush=True)
        lake = pg.location(pg.create_database("read"), root / "lake")
        t = time.perf_counter()
        migrate_warehouse(settings.warehouse, lake)
        print(f"copied into the DuckLake in {time.perf_counter() - t:.0f} s (not timed)", flush=True)
        if args.copies > 1:
            t = time.perf_counter()
            with open_warehouse(lake) as wh:
                replicate(wh, args.copies)
            print(f"copied {args.copies - 1} times more as other hosts' runs in {time.perf_counter() - t:.0f} s "
                  "(not timed)", flush=True)
        ok = True
        with open_warehouse(lake, read_only=True) as wh:
            events, distinct = wh.sql("SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM events").row(0)
            if events != distinct:
                raise SystemExit(f"the copies share event ids: {events:,} events, {distinct:,} distinct")
            print(f"DuckLake: {events:,} events, {int(wh.sql('SELECT count(*) AS n FROM runs')['n'][0]):,} runs; "
                  "the friction notebook's queries:")

            def snapshot() -> None:
                with analysis.friction_snapshot(wh):
                    pass

            ok &= _line("friction_snapshot (the view, computed once)", _median(snapshot))
            with analysis.friction_snapshot(wh):
                for label, fn in QUERIES:
                    ok &= _line(f"{label} (within the snapshot)", _median(lambda fn=fn: fn(wh)))
            ok &= _line("runs list (run_summary)", _median(wh.runs_df))
        print(f"TARGETS {'MET' if ok else 'MISSED'} (each query <= {TARGET_S:.0f} s over {events:,} events in a DuckLake)")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
