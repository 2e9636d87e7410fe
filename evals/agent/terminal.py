"""The scripted agent's terminal: raw-mode stdin, keys parsed into tmux's key names, whole-screen
redraws or appended lines on stdout, and a JSONL recorder flushed line by line (tests read it
while the agent runs)."""

from __future__ import annotations

import json
import os
import select
import sys
import termios
import time
import tty
from typing import Any, TextIO

Key = str

PASTE_START, PASTE_END = "PasteStart", "PasteEnd"
"""Bracketed-paste markers (the agent turns bracketed paste on, as Claude Code and Codex do)."""

_ESCAPES = {
    b"\x1b[200~": PASTE_START, b"\x1b[201~": PASTE_END,
    b"\x1b[A": "Up", b"\x1b[B": "Down", b"\x1b[C": "Right", b"\x1b[D": "Left", b"\x1bOA": "Up",
    b"\x1bOB": "Down", b"\x1bOC": "Right", b"\x1bOD": "Left", b"\x1b[Z": "BTab", b"\x1b[3~": "Delete",
}
_SINGLE = {b"\r": "Enter", b"\n": "Enter", b"\x1b": "Escape", b"\x7f": "BSpace", b"\x08": "BSpace",
           b"\t": "Tab", b"\x03": "C-c", b"\x04": "C-d"}


def parse_keys(data: bytes) -> list[Key]:
    """Bytes read from the terminal as key names (tmux's names: Enter, Up, Escape, or the text)."""
    keys: list[Key] = []
    i = 0
    while i < len(data):
        for seq, name in _ESCAPES.items():
            if data.startswith(seq, i):
                keys.append(name)
                i += len(seq)
                break
        else:
            one = data[i:i + 1]
            if one in _SINGLE:
                keys.append(_SINGLE[one])
                i += 1
                continue
            b0 = data[i]
            n = 4 if b0 >= 0xF0 else 3 if b0 >= 0xE0 else 2 if b0 >= 0xC0 else 1
            keys.append(data[i:i + n].decode("utf-8", "replace"))
            i += n
    return keys


class Recorder:
    """Appends one JSON object per line (``t``, ``event``, data), flushed at once."""

    def __init__(self, path: str | None) -> None:
        self._fh: TextIO | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def __call__(self, event: str, **data: Any) -> None:
        if self._fh is None:
            return
        self._fh.write(json.dumps({"t": time.time(), "event": event, **data}, ensure_ascii=False) + "\n")
        self._fh.flush()


class Terminal:
    """Raw-mode stdin; stdout as a full screen (``draw``) or a scrolling log (``write``)."""

    def __init__(self, *, row_delay_s: float = 0.0) -> None:
        self.fd = sys.stdin.fileno()
        self.out = sys.stdout
        self._saved: list[Any] | None = None
        self._pending = b""
        self.row_delay_s = row_delay_s
        """A slow-drawing program: each row of a redraw is written on its own, this long after the last."""

    def __enter__(self) -> Terminal:
        if os.isatty(self.fd):
            self._saved = termios.tcgetattr(self.fd)
            # TCSANOW, not setraw's default TCSAFLUSH: keys typed before we started are kept, as
            # a real agent keeps what was typed while it loaded
            tty.setraw(self.fd, termios.TCSANOW)
        self.out.write("\x1b[?2004h")  # bracketed paste on: tmux's paste-buffer -p wraps pastes
        self.out.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        self.out.write("\x1b[?2004l")
        self.out.flush()
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    @property
    def size(self) -> tuple[int, int]:
        try:
            sz = os.get_terminal_size(self.out.fileno())
            return sz.columns, sz.lines
        except OSError:
            return 100, 40

    def title(self, text: str) -> None:
        self.out.write(f"\x1b]2;{text}\x07")
        self.out.flush()

    def draw(self, lines: list[str], cursor: tuple[int, int] | None = None) -> None:
        """Redraw the whole screen; put the cursor at (row, column) like a TUI's input box does."""
        _, height = self.size
        lines = lines[-height:]
        move = f"\x1b[{cursor[0] + 1};{cursor[1] + 1}H" if cursor is not None else ""
        if self.row_delay_s > 0:  # row by row, as a slow renderer does: a half-drawn frame is on screen meanwhile
            self.out.write("\x1b[H\x1b[2J")
            for i, line in enumerate(lines):
                self.out.write(("\r\n" if i else "") + line)
                self.out.flush()
                time.sleep(self.row_delay_s)
            self.out.write(move)
            self.out.flush()
            return
        self.out.write("\x1b[H\x1b[2J" + "\r\n".join(lines) + move)
        self.out.flush()

    def unread(self) -> int:
        """Bytes typed into the terminal and not read yet."""
        import fcntl
        import struct

        try:
            return struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            return 0

    def write(self, text: str) -> None:
        """Append to the screen like a line-based program (the terminal scrolls)."""
        self.out.write(text.replace("\r\n", "\n").replace("\n", "\r\n"))
        self.out.flush()

    def read_keys(self, timeout: float | None) -> list[Key] | None:
        """Keys typed within ``timeout`` seconds ([] when none; None at end of input)."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        data = os.read(self.fd, 4096)
        if not data:
            return None
        if data.endswith(b"\x1b") or (b"\x1b[20" in data[-6:] and not data.endswith(b"~")):
            # a lone Escape, or the start of a sequence split across reads
            more, _, _ = select.select([self.fd], [], [], 0.03)
            if more:
                data += os.read(self.fd, 4096)
        return parse_keys(data)
