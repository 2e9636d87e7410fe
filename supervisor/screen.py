"""Screen normalization: turn raw pane text into the :class:`~supervisor.models.Screen` text
that ``classify`` reads.

Two inputs reach us. ``capture-pane`` output is already laid out row by row; with ``-e`` it
still carries SGR colours, and some agents (Claude Code, Ink apps) write runs of spaces as
cursor-forward ``ESC[nC``, so stripping escapes naively glues words together. Raw
``pipe-pane`` / PTY byte streams are different: they move the cursor around and redraw, and
only a terminal emulator can say what ends up on screen (:func:`render_stream`, backed by
``pyte``). :func:`make_screen` picks the right path.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from wcwidth import wcwidth

from supervisor.models import Screen

logger = logging.getLogger(__name__)

# One pass over every escape sequence we know: CSI (with its parameters), OSC (ended by BEL
# or ST), DCS/SOS/PM/APC strings, charset selection, and two-byte ESC sequences.
_ESCAPE = re.compile(
    r"\x1b\[([0-?]*)[ -/]*([@-~])"  # CSI params, final byte
    r"|\x9b([0-?]*)[ -/]*([@-~])"  # 8-bit CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)"  # OSC ... BEL | ST
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\|$)"  # DCS / PM / APC / SOS ... ST
    r"|\x1b[()*+\-./][0-9A-Za-z<=>%\"&`]?"  # charset designation
    r"|\x1b[ #%][0-9A-Za-z@]"  # ESC SP F, ESC # 8, ESC % G
    r"|\x1b[0-9A-Za-z=>\\<`~|{}@]"  # two-byte sequences (ESC 7, ESC =, ESC M ...)
    r"|\x1b"  # a lone ESC
)
_TITLE = re.compile(r"\x1b\][02];([^\x07\x1b]*)(?:\x07|\x1b\\)")
# Control characters other than \n, \r, \b and \t (C1 ones too, a lone 8-bit CSI): dropped.
_CONTROLS = re.compile(r"[\x00-\x07\x0b-\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
# Cursor addressing / erasing that only an emulator can lay out.
_NEEDS_EMULATOR = re.compile(r"\x1b\[[0-9;?]*[ABDEFGHJLMPSTdfr]|\x1b\[\?1049h|\x1b[78M]")


def _csi(m: re.Match[str]) -> str:
    final = m.group(2) or m.group(4)
    if final == "C":  # cursor forward: the spaces it skipped over
        params = m.group(1) if m.group(2) else m.group(3)
        try:
            n = int(params) if params else 1
        except ValueError:
            n = 1
        return " " * min(max(n, 1), 1000)
    return ""


def _escape_sub(m: re.Match[str]) -> str:
    if m.group(2) or m.group(4):
        return _csi(m)
    return ""


_MOTION = re.compile(r"[\r\b]")


def _overstrike(line: str) -> str:
    """Lay out one line the way a terminal does: a carriage return moves the cursor to column 0
    and a backspace one column left (neither erases); later text overwrites what is under the
    cursor. Linear in the line's length, however many returns it holds (a progress bar
    redrawn a million times on one line)."""
    buf: list[str] = []
    col = 0
    pos = 0
    for m in _MOTION.finditer(line):
        col = _put(buf, col, line[pos:m.start()])
        col = 0 if m.group() == "\r" else max(col - 1, 0)
        pos = m.end()
    _put(buf, col, line[pos:])
    return "".join(buf)


def _put(buf: list[str], col: int, seg: str) -> int:
    """Write ``seg`` into ``buf`` at ``col`` (overwriting, extending at the end); the new column."""
    if seg:
        end = col + len(seg)
        if col == len(buf):
            buf.extend(seg)
        else:
            buf[col:end] = seg  # same length inside the line: O(len(seg)); past the end: extends
    return col + len(seg)


def normalize(raw: str) -> str:
    """Normalize pane text: strip escapes (cursor-forward becomes spaces), apply CR and
    backspace, drop other control characters, expand tabs, trim trailing blanks of each line
    and trailing blank lines. Never raises."""
    if not raw:
        return ""
    text = raw
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPE.sub(_escape_sub, text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    text = _CONTROLS.sub("", text)
    lines = text.split("\n")
    if "\r" in text or "\b" in text:
        lines = [_overstrike(ln) if ("\r" in ln or "\b" in ln) else ln for ln in lines]
    if "\t" in text:
        lines = [ln.expandtabs(8) for ln in lines]
    lines = [ln.rstrip() for ln in lines]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _sgr_reverse(params: str, rev: bool) -> bool:
    """The reverse-video state after one SGR sequence's parameters (``7`` on; ``27``/``0`` off)."""
    parts = params.split(";") if params else ["0"]
    i = 0
    while i < len(parts):
        p = parts[i] or "0"
        if p in ("38", "48", "58"):  # extended colour: skip its sub-parameters
            i += 3 if i + 1 < len(parts) and parts[i + 1] == "5" else 5
            continue
        if p == "7":
            rev = True
        elif p in ("0", "27"):
            rev = False
        i += 1
    return rev


def reverse_spans(raw: str) -> list[tuple[int, int, int]]:
    """Reverse-video spans ``(row, first column, end column)`` of row-by-row ANSI text (what
    ``capture-pane -e`` gives). Some TUIs show the selected option only in reverse video, which
    plain text loses. Rows and columns are those of :func:`normalize`'s output."""
    if "\x1b[" not in raw or "7" not in raw:
        return []
    spans: list[tuple[int, int, int]] = []
    rev = False
    for row, line in enumerate(raw.replace("\r\n", "\n").split("\n")):
        col = 0
        start = 0 if rev else -1
        pos = 0
        for m in _ESCAPE.finditer(line):
            col += len(_CONTROLS.sub("", line[pos:m.start()]))
            pos = m.end()
            final = m.group(2)
            if final == "C":
                col += len(_csi(m))
            elif final == "m":
                now = _sgr_reverse(m.group(1), rev)
                if now and not rev:
                    start = col
                elif rev and not now and col > start >= 0:
                    spans.append((row, start, col))
                rev = now
        col += len(_CONTROLS.sub("", line[pos:]))
        if rev and col > start >= 0:
            spans.append((row, start, col))
    return spans


_BASIC = {**{str(30 + i): i for i in range(8)}, **{str(90 + i): 8 + i for i in range(8)}}
_BASIC_BG = {**{str(40 + i): i for i in range(8)}, **{str(100 + i): 8 + i for i in range(8)}}


def _sgr_state(params: str, st: list[Any]) -> None:
    """Apply one SGR sequence to ``st`` = [concealed, foreground, background, reverse] (colours as
    ``int`` palette indexes, ``(r, g, b)`` tuples, or None for the terminal's default)."""
    parts = params.split(";") if params else ["0"]
    i = 0
    while i < len(parts):
        p = parts[i] or "0"
        if p in ("38", "48"):
            colour: Any = None
            if i + 2 < len(parts) and parts[i + 1] == "5":
                colour = int(parts[i + 2]) if parts[i + 2].isdigit() else None
                i += 3
            elif i + 4 < len(parts) and parts[i + 1] == "2":
                colour = tuple(int(x) if x.isdigit() else 0 for x in parts[i + 2:i + 5])
                i += 5
            else:
                i += 1
            st[1 if p == "38" else 2] = colour
            continue
        if p == "0":
            st[:] = [False, None, None, False]
        elif p == "8":
            st[0] = True
        elif p == "28":
            st[0] = False
        elif p == "7":
            st[3] = True
        elif p == "27":
            st[3] = False
        elif p == "39":
            st[1] = None
        elif p == "49":
            st[2] = None
        elif p in _BASIC:
            st[1] = _BASIC[p]
        elif p in _BASIC_BG:
            st[2] = _BASIC_BG[p]
        i += 1


def hidden_spans(raw: str) -> list[tuple[int, int, int]]:
    """Spans ``(row, first column, end column)`` of row-by-row ANSI text (``capture-pane -e``) that the
    terminal does not show: concealed (SGR 8), or drawn in the same colour as their background
    (explicit colours on both, reverse video considered). Rows and columns are :func:`normalize`'s."""
    if "\x1b[" not in raw:
        return []
    spans: list[tuple[int, int, int]] = []
    st: list[Any] = [False, None, None, False]

    def hidden() -> bool:
        return bool(st[0]) or (st[1] is not None and st[1] == st[2])

    for row, line in enumerate(raw.replace("\r\n", "\n").split("\n")):
        col = 0
        pos = 0
        start = col if hidden() else -1
        for m in _ESCAPE.finditer(line):
            col += len(_CONTROLS.sub("", line[pos:m.start()]))
            pos = m.end()
            final = m.group(2)
            if final == "C":
                col += len(_csi(m))
            elif final == "m":
                was = hidden()
                _sgr_state(m.group(1), st)
                now = hidden()
                if now and not was:
                    start = col
                elif was and not now and col > start >= 0:
                    spans.append((row, start, col))
                    start = -1
        col += len(_CONTROLS.sub("", line[pos:]))
        if hidden() and col > start >= 0:
            spans.append((row, start, col))
    return spans


_ROW_BREAK = re.compile(r"\x1b\[[0-9;?]*[ABEFGHJKLMPSTXdfr]|\x1b[78DEM]|[\r\n\x0b\x0c]")
"""What moves the cursor to another row, or clears what it passes: where one drawn row ends."""


def output_rows(data: bytes) -> list[str]:
    """The rows a piece of raw terminal output draws, as text (escapes gone, cursor-forward as
    spaces): the pieces between its line breaks and cursor moves. A cheap look at what an output
    event draws, not a rendering (a row drawn over several events is split)."""
    text = data.decode("utf-8", "replace")
    return [row for piece in _ROW_BREAK.split(text) if (row := normalize(piece).strip())]


def needs_emulator(raw: str) -> bool:
    """True when the text moves the cursor (a raw byte stream), so only an emulator can lay it out."""
    return "\x1b" in raw and _NEEDS_EMULATOR.search(raw) is not None


def osc_title(raw: str) -> str:
    """The last window title an OSC 0/2 sequence set in ``raw`` ("" if none)."""
    if "\x1b]" not in raw:
        return ""
    titles = _TITLE.findall(raw)
    return titles[-1] if titles else ""


_MAX_COLUMNS = 1000
_MAX_LINES = 500


def _display(screen: Any) -> list[str]:
    """The emulator's rows as text. pyte's own ``display`` raises on a wide character whose
    right half was overwritten (``ESC[H中 CR 1``: the orphaned half is an empty cell), so
    rows are read cell by cell: an empty cell after a wide character is its right half and is
    skipped; an orphaned one shows as a blank."""
    rows: list[str] = []
    for y in range(screen.lines):
        line = screen.buffer[y]
        out: list[str] = []
        skip_half = False
        for x in range(screen.columns):
            data = line[x].data
            if skip_half:
                skip_half = False
                if data == "":
                    continue
            if data == "":
                out.append(" ")
                continue
            out.append(data)
            skip_half = wcwidth(data[0]) == 2
        rows.append("".join(out))
    return rows


class _Tolerant:
    """Stands in for a pyte screen in front of its parser: a sequence the screen's handler
    rejects (``ESC[0;@`` calls ``insert_characters`` with two arguments and raises TypeError)
    is skipped and the rest of the stream still renders, as a terminal would do."""

    def __init__(self, screen: Any) -> None:
        self._screen = screen

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._screen, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except Exception:  # noqa: BLE001 - one bad sequence must not stop the screen
                logger.debug("terminal emulator skipped %s%r", name, args, exc_info=True)
                return None

        return call


def render_stream(raw: str | bytes, *, width: int = 200, height: int = 50) -> str:
    """Play a raw terminal byte stream through a VT emulator and return the final screen text
    (normalized). Used for ``pipe-pane`` captures and PTY recordings. Never raises: what an
    agent prints cannot crash the supervisor; a stream the emulator rejects is normalized as
    plain text instead (and logged)."""
    import pyte  # imported here: only raw streams need it

    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    screen = pyte.Screen(min(max(width, 2), _MAX_COLUMNS), min(max(height, 2), _MAX_LINES))
    stream = pyte.Stream(_Tolerant(screen))  # type: ignore[arg-type]
    # A stream that never says CR LF was stored with bare LFs meaning "new line".
    data = raw if "\r\n" in raw else raw.replace("\n", "\r\n")
    try:
        stream.feed(data)
        rows = _display(screen)
    except Exception:  # pyte is strict about a few malformed sequences; fall back to stripping
        logger.warning("terminal emulator rejected a %d-character stream; normalizing it as text",
                       len(raw), exc_info=True)
        return normalize(raw)
    return normalize("\n".join(rows))


def _redrawn_whole(under: str, now: str) -> bool:
    """Whether every text a row held before it was drawn over is still on it, from its start (a line
    program redrawing its prompt line with the answer typed after it: nothing was hidden)."""
    parts = [p.strip() for p in under.split(" | ") if p.strip()]
    now = now.strip()
    return bool(parts) and all(now.startswith(p) for p in parts)


def make_screen(
    raw: str,
    *,
    width: int = 80,
    height: int = 24,
    title: str = "",
    current_command: str = "",
    dead: bool = False,
    cursor_x: int | None = None,
    cursor_y: int | None = None,
    scrollback: str = "",
    overwritten_rows: dict[int, str] | None = None,
) -> Screen:
    """Build a Screen from raw pane text (captured rows, or a raw stream that needs an emulator).
    The title defaults to the last OSC title found in ``raw``. Text the terminal does not show
    (concealed, same colour as its background) is blanked and its rows marked ``hidden-text``;
    ``overwritten_rows`` (the surface's shadow terminal: row -> the text drawn over) are marked
    ``overwritten-text``, with that text."""
    if not title:
        title = osc_title(raw)
    highlights: tuple[tuple[int, int, int], ...] = ()
    untrusted: dict[int, tuple[str, str]] = {}
    if needs_emulator(raw):
        text = render_stream(raw, width=max(width, 200), height=max(height, 50))
    else:
        text = normalize(raw)
        if "\x1b[" in raw:
            highlights = tuple(reverse_spans(raw))
            hidden = hidden_spans(raw)
            if hidden:
                text, untrusted = _blank(text, hidden)
    if overwritten_rows:
        shown = text.split("\n")
        for r, under in overwritten_rows.items():
            if 0 <= r < len(shown) and not _redrawn_whole(normalize(under), shown[r]):
                untrusted.setdefault(r, ("overwritten-text", normalize(under)[:1000]))
    return Screen.model_construct(
        text=text,
        width=width,
        height=height,
        cursor_x=cursor_x,
        cursor_y=cursor_y,
        title=normalize(title),
        current_command=current_command,
        dead=dead,
        scrollback=normalize(scrollback) if scrollback else "",
        highlights=highlights,
        untrusted=tuple((r, what, under) for r, (what, under) in sorted(untrusted.items())),
    )


def _blank(text: str, spans: list[tuple[int, int, int]]) -> tuple[str, dict[int, tuple[str, str]]]:
    """``text`` with the hidden spans' visible characters blanked (as the terminal shows them), and
    the rows where something was hidden."""
    lines = text.split("\n")
    rows: dict[int, tuple[str, str]] = {}
    for row, a, b in spans:
        if row >= len(lines):
            continue
        ln = lines[row]
        if ln[a:b].strip():
            hidden = ln[a:b].strip()
            lines[row] = (ln[:a] + " " * (min(b, len(ln)) - a) + ln[b:]).rstrip()
            before = rows.get(row, ("", ""))[1]
            rows[row] = ("hidden-text", (before + " " + hidden).strip()[:1000])
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines), rows
