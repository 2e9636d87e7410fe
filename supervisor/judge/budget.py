"""What the judge costs, and the per-run and per-day limits on it.

Cost comes from the policy's price table (USD per million tokens, by model id or prefix;
``*`` for anything else), falling back to the built-in table for models the policy leaves
out. Budgets are checked *before* a call with a worst-case estimate of that call (its
prompt size, and ``max_tokens`` of output), so a budget is never overshot by more than an
estimate error; beyond it the judge is not called and the screen is escalated.

Day spend is persisted as an append-only ledger, one JSONL file per UTC day under
``<home>/judge/spend/``, so it survives restarts and is shared by every supervisor
using the same home. Each line is one paid call (``run_id``, ``cost_usd``, ``at``); a torn
last line is ignored. Per-run spend is rebuilt from today's and yesterday's ledgers, so a
resumed run keeps its count too.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from supervisor.policy import JudgePrice, JudgeSettings, default_judge_prices

CHARS_PER_TOKEN_ESTIMATE = 3.0
"""Conservative (low) characters-per-token ratio for estimating a prompt's tokens before sending."""


def price_for(model: str, prices: Mapping[str, JudgePrice] | None = None) -> JudgePrice:
    """The price of ``model``: exact id, else the longest matching prefix, from the policy's table
    then the built-in one; else the ``*`` entry (top tier)."""
    tables = [dict(prices or {}), default_judge_prices()]
    for table in tables:
        if model in table:
            return table[model]
    for table in tables:
        matches = [k for k in table if k != "*" and model.startswith(k)]
        if matches:
            return table[max(matches, key=len)]
    for table in tables:
        if "*" in table:
            return table["*"]
    raise AssertionError("the built-in price table has a '*' entry")  # pragma: no cover


def cost_usd(model: str, input_tokens: int, output_tokens: int, prices: Mapping[str, JudgePrice] | None = None,
             cache_read_tokens: int = 0) -> float:
    p = price_for(model, prices)
    return (input_tokens * p.input_per_mtok + output_tokens * p.output_per_mtok
            + cache_read_tokens * p.cache_read_per_mtok) / 1_000_000


def estimate_cost(settings: JudgeSettings, request_chars: int) -> float:
    """Worst-case cost of one call whose request JSON has ``request_chars`` characters."""
    tokens_in = int(request_chars / CHARS_PER_TOKEN_ESTIMATE) + 1
    return cost_usd(settings.model, tokens_in, settings.max_tokens, settings.prices)


def utc_day(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d")


class JudgeBudget:
    """Per-run and per-day spend against the policy's limits. Thread-safe within a process;
    across processes the ledger is append-only (O_APPEND lines), so totals stay right."""

    def __init__(self, ledger_dir: Path, settings: JudgeSettings, *, clock: Callable[[], float] = time.time) -> None:
        self.ledger_dir = Path(ledger_dir)
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()

    def _ledger(self, day: str) -> Path:
        return self.ledger_dir / f"{day}.jsonl"

    def _lines(self, day: str) -> list[dict[str, Any]]:
        try:
            raw = self._ledger(day).read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # torn last line from a crash mid-write
            if isinstance(rec, dict):
                out.append(rec)
        return out

    def spent_today(self) -> float:
        return sum(float(r.get("cost_usd", 0) or 0) for r in self._lines(utc_day(self._clock())))

    def spent_run(self, run_id: str) -> float:
        if not run_id:
            return 0.0
        now = self._clock()
        days = {utc_day(now), utc_day(now - 86_400)}
        return sum(float(r.get("cost_usd", 0) or 0) for d in days for r in self._lines(d) if r.get("run_id") == run_id)

    def refusal(self, run_id: str, estimate: float) -> str | None:
        """Why one more call of about ``estimate`` USD may not be made, or None if it may."""
        s = self.settings
        with self._lock:
            run = self.spent_run(run_id)
            day = self.spent_today()
        if run_id and run + estimate > s.budget_usd_per_run:
            return (f"judge budget for this run is spent: ${run:.4f} of ${s.budget_usd_per_run:.4f} used, "
                    f"the next call could cost ${estimate:.4f}")
        if day + estimate > s.budget_usd_per_day:
            return (f"judge budget for today (UTC) is spent: ${day:.4f} of ${s.budget_usd_per_day:.4f} used, "
                    f"the next call could cost ${estimate:.4f}")
        return None

    def record(self, run_id: str, cost: float, judge_call_id: str = "") -> None:
        """Append one paid call to today's ledger (durably)."""
        if cost <= 0:
            return
        at = self._clock()
        line = json.dumps({"run_id": run_id, "cost_usd": cost, "at": at, "judge_call_id": judge_call_id},
                          separators=(",", ":")) + "\n"
        with self._lock:
            self.ledger_dir.mkdir(parents=True, exist_ok=True)
            path = self._ledger(utc_day(at))
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = "\n" + line  # end a torn line left by a crash, keep ours whole
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
