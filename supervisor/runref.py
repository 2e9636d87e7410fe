"""Run references: what a person types where a run id is expected.

A full run id (``run_01JABC...``), any unique prefix of one (with or without ``run_``), or
``last`` (the run that started most recently). Resolved against the journals folder, the
source of truth, so it works while another process holds the warehouse; every ``supervisor
runs ...`` and ``report run`` command goes through :func:`resolve_run_id`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from supervisor.errors import InputError

LAST = "last"
RUN_PREFIX = "run_"
SHORT_MIN = 8
"""The fewest characters of a run id (after ``run_``) shown: its time to about a second."""


def _started_at(path: Path) -> float:
    """When the run started: its first journal line's time (0 when unreadable)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
        return float(json.loads(first).get("at") or 0.0)
    except (OSError, ValueError, AttributeError):
        return 0.0


def known_run_ids(journals_dir: Path) -> list[str]:
    """Every run id that has a journal, sorted."""
    folder = Path(journals_dir)
    return sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []


def last_run_id(journals_dir: Path) -> str | None:
    """The run that started most recently (ties: the greater id), or None without runs."""
    paths = list(Path(journals_dir).glob("*.jsonl")) if Path(journals_dir).is_dir() else []
    if not paths:
        return None
    return max(paths, key=lambda p: (_started_at(p), p.stem)).stem


def resolve_run_id(ref: str, journals_dir: Path) -> str:
    """The run id ``ref`` names: itself, the one run it is a prefix of, or ``last``.

    Raises :class:`InputError` naming the fix when nothing or more than one run matches.
    """
    text = ref.strip()
    if not text:
        raise InputError("no run id given", "pass a run id, a prefix of one, or `last` (`supervisor runs` lists them)")
    ids = known_run_ids(journals_dir)
    if text.lower() == LAST:
        last = last_run_id(journals_dir)
        if last is None:
            raise InputError(f"there are no runs yet in {journals_dir}", "start one with `supervisor run -- COMMAND`")
        return last
    if text in ids:
        return text
    if RUN_PREFIX + text in ids:  # a short id that is a whole id without its `run_`
        return RUN_PREFIX + text
    prefixes = {text, RUN_PREFIX + text} if not text.startswith(RUN_PREFIX) else {text}
    matches = [i for i in ids if any(i.startswith(p) for p in prefixes)]
    if not matches:
        upper = {p.upper() for p in prefixes}  # ids are upper-case base32: accept a lower-case prefix
        matches = [i for i in ids if any(i.upper().startswith(p) for p in upper)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InputError(f"run {text!r} not found in {journals_dir}", "list runs with `supervisor runs`")
    shown = ", ".join(matches[:5]) + (f" and {len(matches) - 5} more" if len(matches) > 5 else "")
    raise InputError(f"{text!r} matches {len(matches)} runs: {shown}", "give more characters of the run id")


def short_ids(ids: Iterable[str], journals_dir: Path | None = None) -> dict[str, str]:
    """Each run id's shortest unique prefix (as git abbreviates commits): at least
    :data:`SHORT_MIN` characters after ``run_`` (which is dropped), unique among ``ids`` and the
    runs with a journal, so :func:`resolve_run_id` finds the run again from it."""
    wanted = list(dict.fromkeys(ids))
    universe = sorted({*wanted, *(known_run_ids(journals_dir) if journals_dir is not None else [])})
    bare = [i[len(RUN_PREFIX):] if i.startswith(RUN_PREFIX) else i for i in universe]

    def common(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a.upper(), b.upper(), strict=False):
            if x != y:
                break
            n += 1
        return n

    need: dict[str, str] = {}
    for k, (full, b) in enumerate(zip(universe, bare, strict=True)):
        lcp = max(common(b, bare[k - 1]) if k else 0, common(b, bare[k + 1]) if k + 1 < len(bare) else 0)
        need[full] = b[:max(SHORT_MIN, lcp + 1)]
    return {i: need[i] for i in wanted}


def short_id(run_id: str, journals_dir: Path | None = None) -> str:
    """One run id's shortest unique prefix (see :func:`short_ids`)."""
    return short_ids([run_id], journals_dir)[run_id]
