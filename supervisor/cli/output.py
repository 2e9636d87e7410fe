"""Shared output helpers for CLI commands: rich tables for people, JSON for programs.

polars is named for the type checker only: every command imports this module, and importing
polars costs more than the 0.3 s a command may take to start (``bench/cli_start.py``).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    import polars as pl


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return value


def df_records(df: pl.DataFrame) -> list[dict[str, Any]]:
    return [{k: _jsonable(v) for k, v in row.items()} for row in df.iter_rows(named=True)]


def print_json(data: Any) -> None:
    print(json.dumps(data, default=_jsonable, ensure_ascii=False))


def print_df(console: Console, df: pl.DataFrame, *, title: str | None = None, max_width: int = 60) -> None:
    table = Table(title=title, show_lines=False)
    for name in df.columns:
        table.add_column(name, overflow="fold", max_width=max_width)
    for row in df.iter_rows():
        table.add_row(*["" if v is None else str(_jsonable(v)) for v in row])
    console.print(table)


def fitted_table(columns: list[tuple[str, str]], rows: list[list[str]], *, width: int,
                 keep: tuple[int, ...] = (0,)) -> str:
    """A plain table whose rows never wrap at ``width`` columns: each cell stays on one line; when
    it is too wide, the widest columns are cut with an ellipsis, never the ``keep`` columns (an id
    the user types next). ``columns`` are (header, ``left``|``right``) pairs."""
    gap = 2
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, (h, _) in enumerate(columns)]
    floor = [len(h) if i in keep else min(widths[i], 3) for i, (h, _) in enumerate(columns)]
    for i in keep:
        floor[i] = widths[i]
    while sum(widths) + gap * (len(widths) - 1) > width:
        cut = [i for i in range(len(widths)) if widths[i] > floor[i]]
        if not cut:
            break
        widest = max(cut, key=lambda i: widths[i])
        widths[widest] -= 1

    def cell(text: str, i: int) -> str:
        w = widths[i]
        if len(text) > w:
            text = text[:w - 1] + "…" if w > 1 else text[:w]
        return text.rjust(w) if columns[i][1] == "right" else text.ljust(w)

    lines = [(" " * gap).join(cell(h, i) for i, (h, _) in enumerate(columns)).rstrip(),
             (" " * gap).join("─" * w for w in widths)]
    lines += [(" " * gap).join(cell(v, i) for i, v in enumerate(r)).rstrip() for r in rows]
    return "\n".join(lines)


def seconds(value: float | None) -> str:
    """A duration the way a person reads it: 42s, 3m05s, 2h07m."""
    if value is None:
        return "-"
    s = int(round(value))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
