"""What the warehouse benchmarks share: a throwaway home filled with generated journals, ingested
once (the generation is not part of any figure; the ingest is, and is returned)."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from supervisor.settings import Settings
from supervisor.warehouse import SyncReport, sync


@contextmanager
def generated_home(doc: str | None, write_journals: Callable[[Path, int, int], None], *,
                   runs: int) -> Iterator[tuple[Settings, argparse.Namespace, SyncReport]]:
    """Parse ``--events``/``--runs``, write that many events in that many journals into a temporary
    home with ``write_journals``, ingest them, and yield the home's settings, the arguments and the
    ingest's report; the home is removed afterwards."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=runs)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp))
        t = time.perf_counter()
        write_journals(settings.journals_dir, args.events, args.runs)
        print(f"generated {args.events:,} events in {args.runs} journals in {time.perf_counter() - t:.1f}s")
        yield settings, args, sync(settings)
