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
