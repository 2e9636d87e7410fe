"""A shadow terminal per pane: the pane's output bytes (from control mode) played through a VT emulator
(``pyte``) that remembers which rows were drawn over, so the supervisor can tell text that is on the
screen from text that was put there to hide other text.

``capture-pane`` gives only the final cells: a dangerous command written and then overwritten by a
harmless one (a carriage return, backspaces, cursor left or to a column, cursor up, an erase-line
after moving back) or swallowed by an unterminated OSC string leaves no trace there. Renderers
never do that to fresh text within a row: Ink (Claude Code, Gemini CLI) erases a whole frame's rows
and writes them again from the top, ratatui (Codex) writes changed cells after absolute cursor
moves. So a row is **overwritten** when, within :data:`FRESH_S` of text being written on it, the
cursor came back over that text by a relative move (``CR``, ``BS``, ``CUB``, ``CHA``/``HPA``, ``CUP``
within the row, ``CUU``/``RI``) and either wrote different text over it, or erased it and wrote on
the row again before leaving it; and when an OSC string was cut short by another escape (tmux ends
it there, the text inside never shows). Known limit: an agent that waits longer than
:data:`FRESH_S` before overwriting, or moves back with an absolute ``CUP`` from another row, is not
caught here (the dangerous text was on the screen meanwhile).

Rows are reported only where the emulator's row text equals the capture's (a shadow that joined
the pane mid-stream, or that disagrees with tmux about a sequence, reports nothing for that row).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

import pyte

log = logging.getLogger(__name__)

FRESH_S = 1.0
"""How recent text must be for drawing over it to count as hiding it."""
BURST_S = 0.005
"""Erasing a row the cursor came back up to and writing it again is how Ink redraws a frame (the
previous frame's rows); only text written in the same burst of output, this close, counts there."""
_MAX_CARRY = 4096
_OSC_BROKEN = re.compile(r"\x1b\][^\x07\x1b]*\x1b(?!\\)")
_MAY_HIDE = re.compile(rb"\r(?!\n)|\x08|\x1b\[[0-9;]*[ADGK`PX]|\x1b\][^\x07\x1b]*(?:\x1b(?!\\)|$)|\x1bM")
"""Sequences that can draw over text in its row (``CR`` not before ``LF``, ``BS``, ``CUB``, ``CUU``,
``CHA``, ``HPA``, ``EL``, ``ECH``, ``DCH``, ``RI``, an OSC string cut short or not yet ended): output
without any is not played (a window title set with a whole OSC string hides nothing)."""


class _Row:
    __slots__ = ("fresh", "erased", "suspect", "erased_text", "under")

    def __init__(self) -> None:
        self.fresh: dict[int, float] = {}
        self.erased = False
        self.erased_text = ""
        self.suspect: str | None = None
        self.under: list[str] = []
        """The texts the row held before they were drawn over (what it was made to hide)."""


class _TrackingScreen(pyte.Screen):  # type: ignore[misc]
    """A pyte screen that records, per row, when each cell got its text and whether it was drawn over."""

    def __init__(self, columns: int, lines: int) -> None:
        self.rows: dict[int, _Row] = {}
        self.back = False
        """The cursor moved left within its row since it came to the row."""
        self.up = False
        """The cursor came to its row by a relative move up (``CUU``, ``RI``)."""
        self.now = 0.0
        """When the bytes being played arrived (``time.monotonic()``)."""
        super().__init__(columns, lines)

    def row(self, y: int) -> _Row:
        r = self.rows.get(y)
        if r is None:
            r = self.rows[y] = _Row()
        return r

    # -- where the cursor goes ---------------------------------------------------------------------
    def _moved(self, y0: int, x0: int, *, relative_up: bool = False) -> None:
        y, x = self.cursor.y, self.cursor.x
        if y != y0:
            self.rows.get(y0, _Row()).erased = False
            self.back = False
            self.up = relative_up and y < y0
        elif x < x0:
            self.back = True

    def carriage_return(self) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        super().carriage_return()
        self._moved(y0, x0)

    def backspace(self) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        super().backspace()
        self._moved(y0, x0)

    def cursor_back(self, count: int | None = None) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        super().cursor_back(count)
        self._moved(y0, x0)

    def cursor_to_column(self, column: int | None = None) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        super().cursor_to_column(column)
        self._moved(y0, x0)

    def cursor_position(self, line: int | None = None, column: int | None = None) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        super().cursor_position(line, column)
        self._moved(y0, x0)

    def cursor_up(self, count: int | None = None) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        super().cursor_up(count)
        self._moved(y0, x0, relative_up=True)

    def reverse_index(self) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        top = self.margins.top if self.margins else 0
        if y0 == top:
            bottom = self.margins.bottom if self.margins else self.lines - 1
            self.rows = {(y + 1 if top <= y < bottom else y): r for y, r in self.rows.items()
                         if y != bottom}
        super().reverse_index()
        self._moved(y0, x0, relative_up=True)

    def index(self) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        top = self.margins.top if self.margins else 0
        bottom = self.margins.bottom if self.margins else self.lines - 1
        if y0 == bottom:  # the region scrolls up: rows move with their text
            self.rows = {(y - 1 if top < y <= bottom else y): r for y, r in self.rows.items() if y != top}
        super().index()
        self._moved(y0, x0)

    def cursor_down(self, count: int | None = None) -> None:
        y0, x0 = self.cursor.y, self.cursor.x
        super().cursor_down(count)
        self._moved(y0, x0)

    # -- what is written and erased ------------------------------------------------------------------
    def text(self, y: int) -> str:
        line = self.buffer[y]
        return "".join(line[x].data for x in range(self.columns)).rstrip()

    def draw(self, data: str) -> None:
        y, x0 = self.cursor.y, self.cursor.x
        line = self.buffer[y]
        span = range(x0, min(self.columns, x0 + len(data)))
        before = [line[x].data for x in span]
        was = self.text(y) if self.back or self.up else ""
        super().draw(data)
        now = self.now
        r = self.row(y)
        if r.erased:
            r.suspect = r.suspect or "overwritten-text"
            r.under.append(r.erased_text)
            r.erased = False
        after = self.buffer[y]
        for k, x in enumerate(span):
            old, new = before[k], after[x].data
            if (self.back or self.up) and old.strip() and new != old and now - r.fresh.get(x, -1e9) < FRESH_S:
                r.suspect = r.suspect or "overwritten-text"
                if not r.under or r.under[-1] != was:
                    r.under.append(was)
            if new.strip():
                r.fresh[x] = now

    def _erase(self, xs: range, within: float = 0.0) -> None:
        """Cells erased: with ``within``, text written that recently among them marks the row erased
        (a write on it before the cursor leaves is then an overwrite)."""
        y = self.cursor.y
        r = self.rows.get(y)
        if r is None:
            return
        now = self.now
        line = self.buffer[y]
        hit = within > 0 and any(line[x].data.strip() and now - r.fresh.get(x, -1e9) < within for x in xs)
        if hit:
            r.erased = True
            r.erased_text = self.text(y)
        for x in xs:
            r.fresh.pop(x, None)

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        x = self.cursor.x
        xs = range(x, self.columns) if how == 0 else range(0, x + 1) if how == 1 else range(0, self.columns)
        self._erase(xs, FRESH_S if self.back or how == 1 else BURST_S if self.up or how == 2 else 0.0)
        super().erase_in_line(how, private)

    def erase_characters(self, count: int | None = None) -> None:
        x = self.cursor.x
        self._erase(range(x, min(self.columns, x + (count or 1))), FRESH_S if self.back else BURST_S)
        super().erase_characters(count)

    def delete_characters(self, count: int | None = None) -> None:
        x = self.cursor.x
        self._erase(range(x, self.columns), FRESH_S if self.back else BURST_S)
        super().delete_characters(count)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        if how in (2, 3):
            self.rows.clear()
            self.back = self.up = False
        super().erase_in_display(how, *args, **kwargs)

    def reset(self) -> None:
        self.rows = {}
        self.back = self.up = False
        super().reset()

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        self.rows = {}
        super().resize(lines, columns)

    def mark_osc_cut(self, swallowed: str) -> None:
        """An OSC string was cut short by another escape: what it swallowed sat on this row."""
        r = self.row(self.cursor.y)
        r.suspect = "overwritten-text"
        r.under.append(self.text(self.cursor.y) + swallowed)


class ShadowTerminal:
    """One pane's shadow. The control-mode reader thread only queues the pane's output with its arrival
    time (:meth:`add`, cheap); the emulator plays it only when the supervisor asks (a prompt it might
    answer is on the screen), in that pane's worker: pyte costs about 10 ms per full 100x30 frame, far
    too much for every frame of a streaming agent. Never raises: a sequence the emulator rejects is
    skipped; of more than :data:`MAX_PENDING` bytes waiting only the newest are played, on a fresh
    screen (rows it then places wrongly do not match the capture and are not reported)."""

    MAX_PENDING = 16 * 1024

    def __init__(self, width: int = 80, height: int = 24) -> None:
        self.screen = _TrackingScreen(max(width, 2), max(height, 2))
        self.stream = pyte.Stream(self.screen)
        self._carry = b""
        self._pending: list[tuple[float, bytes]] = []
        self._pending_bytes = 0
        self._lost = False
        self._lock = threading.Lock()

    def add(self, data: bytes, at: float | None = None) -> None:
        """Queue output bytes as they arrived (any thread)."""
        with self._lock:
            self._pending.append((time.monotonic() if at is None else at, data))
            self._pending_bytes += len(data)
            while self._pending_bytes > self.MAX_PENDING and len(self._pending) > 1:
                self._pending_bytes -= len(self._pending.pop(0)[1])
                self._lost = True

    def _play(self) -> None:
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        if self._lost:  # older output was dropped: what is left is played on a fresh screen
            self._lost, self._carry = False, b""
            self.screen.reset()
        for at, data in pending:
            raw = self._carry + data
            cut = len(raw)  # keep a partial UTF-8 character for the next chunk
            for k in range(1, min(4, len(raw)) + 1):
                b = raw[-k]
                if b & 0xC0 == 0x80:
                    continue
                if b >= 0xC0 and k < (2 if b < 0xE0 else 3 if b < 0xF0 else 4):
                    cut = len(raw) - k
                break
            self._carry = raw[cut:][:_MAX_CARRY]
            self.screen.now = at
            try:
                self._feed_text(raw[:cut].decode("utf-8", "replace"))
            except Exception:  # noqa: BLE001 - what an agent prints must not stop supervision
                log.debug("shadow terminal skipped a chunk", exc_info=True)

    def _feed_text(self, text: str) -> None:
        pos = 0
        for m in _OSC_BROKEN.finditer(text):
            # tmux ends an OSC string at the next escape; pyte would keep swallowing: end it there, as tmux does
            self.stream.feed(text[pos:m.end() - 1] + "\x1b\\")
            self.screen.mark_osc_cut(m.group()[2:-1].partition(";")[2])
            pos = m.end() - 1
        self.stream.feed(text[pos:])

    def overwritten_rows(self, captured_rows: list[str], width: int, height: int) -> dict[int, str]:
        """Rows drawn over (see the module docstring) whose text the capture agrees with, each with what
        it held before (texts joined with `` | ``), after playing what arrived since the last look."""
        with self._lock:
            if (self.screen.columns, self.screen.lines) != (max(width, 2), max(height, 2)):
                self.screen.resize(max(height, 2), max(width, 2))
            if self._pending and not any(_MAY_HIDE.search(data) for _, data in self._pending):
                # nothing in it can draw over text: skip the emulator (it starts over next time)
                self._pending, self._pending_bytes, self._lost = [], 0, True
                return {}
            self._play()
            out: dict[int, str] = {}
            for y, r in sorted(self.screen.rows.items()):
                if r.suspect is None or y >= len(captured_rows):
                    continue
                if self.screen.text(y) == captured_rows[y].rstrip():
                    out[y] = " | ".join(dict.fromkeys(u.strip() for u in r.under if u.strip()))[-1000:]
            return out
