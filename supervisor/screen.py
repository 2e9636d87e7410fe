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

import re

from supervisor.models import Screen

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
# Control characters other than \n, \r, \b and \t: dropped.
_CONTROLS = re.compile(r"[\x00-\x07\x0b-\x0c\x0e-\x1a\x1c-\x1f\x7f]")
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


def _overstrike(line: str) -> str:
    """Apply carriage returns (later text overwrites from column 0) and backspaces."""
    if "\b" in line:
        out: list[str] = []
        for ch in line:
            if ch == "\b":
                if out:
                    out.pop()
            else:
                out.append(ch)
        line = "".join(out)
    if "\r" in line:
        parts = line.split("\r")
        buf = parts[0]
        for seg in parts[1:]:
            buf = seg + buf[len(seg):]
        line = buf
    return line


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


def needs_emulator(raw: str) -> bool:
    """True when the text moves the cursor (a raw byte stream), so only an emulator can lay it out."""
    return "\x1b" in raw and _NEEDS_EMULATOR.search(raw) is not None


def osc_title(raw: str) -> str:
    """The last window title an OSC 0/2 sequence set in ``raw`` ("" if none)."""
    if "\x1b]" not in raw:
        return ""
    titles = _TITLE.findall(raw)
    return titles[-1] if titles else ""


def render_stream(raw: str | bytes, *, width: int = 200, height: int = 50) -> str:
    """Play a raw terminal byte stream through a VT emulator and return the final screen text
    (normalized). Used for ``pipe-pane`` captures and PTY recordings."""
    import pyte  # imported here: only raw streams need it

    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    screen = pyte.Screen(max(width, 2), max(height, 2))
    stream = pyte.Stream(screen)
    # A stream that never says CR LF was stored with bare LFs meaning "new line".
    data = raw if "\r\n" in raw else raw.replace("\n", "\r\n")
    try:
        stream.feed(data)
    except Exception:  # pyte is strict about a few malformed sequences; fall back to stripping
        return normalize(raw)
    return normalize("\n".join(screen.display))


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
) -> Screen:
    """Build a Screen from raw pane text (captured rows, or a raw stream that needs an emulator).
    The title defaults to the last OSC title found in ``raw``."""
    if not title:
        title = osc_title(raw)
    highlights: tuple[tuple[int, int, int], ...] = ()
    if needs_emulator(raw):
        text = render_stream(raw, width=max(width, 200), height=max(height, 50))
    else:
        text = normalize(raw)
        if "\x1b[" in raw:
            highlights = tuple(reverse_spans(raw))
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
    )
