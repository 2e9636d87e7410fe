"""Reading the friction views many times without computing them many times.

``friction_events`` is a view over the events (see ``migrations.m_friction_time``): always
current, never backfilled, but each query computes it again. A report or a notebook asks a
dozen questions of it; :func:`friction_snapshot` computes it once into a temporary table of the
same name, which shadows the view (and every view built on it) for that connection until the
block ends. It works on read-only connections too: temporary tables live in memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from supervisor.warehouse import Warehouse


@contextlib.contextmanager
def friction_snapshot(wh: Warehouse) -> Iterator[Warehouse]:
    """Within the block, ``friction_events`` (and the roll-ups over it) read one computed copy.
    Nested blocks reuse the outer copy."""
    exists = wh.con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary "
                            "AND table_name = 'friction_events'").fetchall()[0][0]
    if exists:
        yield wh
        return
    wh.con.execute("CREATE TEMP TABLE friction_events AS SELECT * FROM main.friction_events")
    try:
        yield wh
    finally:
        wh.con.execute("DROP TABLE IF EXISTS temp.friction_events")
