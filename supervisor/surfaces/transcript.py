"""An observe-only surface over an agent's JSONL transcript.

Claude Code writes one JSON object per line under ``~/.claude/projects/…/SESSION.jsonl``
(``{"type": "assistant", "message": {"content": [{"type": "text", "text": …}]}}``); Codex
writes rollouts (``{"type": "response_item", "payload": {"type": "message", "role":
"assistant", "content": [{"type": "output_text", "text": …}]}}`` and ``event_msg`` /
``agent_message`` lines). :class:`TranscriptSurface` tails such a file and yields the text the
agent wrote, so checkpoint blocks are read from the transcript even when the screen
scrolled past them or wrapped them. It cannot type: ``send_keys``/``paste_text`` raise.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supervisor.errors import SurfaceError
from supervisor.surfaces.base import OutputCallback, PaneInfo, RawScreen

_ASSISTANT_TYPES = {"assistant", "agent_message", "assistant_message"}


@dataclass(frozen=True)
class TranscriptEntry:
    """One assistant message from the transcript."""

    line_no: int
    """1-based line of the JSONL file."""
    text: str
    at: float


def _texts(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        return
    if isinstance(node, dict):
        for key in ("text", "message"):
            v = node.get(key)
            if isinstance(v, str):
                yield v
        for key, v in node.items():
            if key in ("text",) or isinstance(v, str):
                continue
            yield from _texts(v)
    elif isinstance(node, list):
        for v in node:
            yield from _texts(v)


def _is_assistant(obj: dict[str, Any]) -> bool:
    if obj.get("type") in _ASSISTANT_TYPES or obj.get("role") == "assistant":
        return True
    for key in ("message", "payload", "msg"):
        inner = obj.get(key)
        if isinstance(inner, dict) and (inner.get("role") == "assistant" or inner.get("type") in _ASSISTANT_TYPES):
            return True
    return False


def assistant_text(obj: Any) -> str | None:
    """The text an assistant message carries, or None for other lines (user, tool, meta)."""
    if not isinstance(obj, dict) or not _is_assistant(obj):
        return None
    parts = [t for t in _texts(obj) if t.strip()]
    return "\n".join(parts) if parts else None


class TranscriptSurface:
    """Tails one transcript file. Observe-only."""

    def __init__(self, path: str | Path, *, pane_id: str = "transcript") -> None:
        self.path = Path(path)
        self.pane_id = pane_id
        self._offset = 0
        self._line_no = 0
        self._partial = b""
        self._recent: list[str] = []

    def read_new(self) -> list[TranscriptEntry]:
        """Assistant messages appended since the last call (a half-written last line waits)."""
        try:
            with open(self.path, "rb") as fh:
                size = fh.seek(0, 2)
                if size < self._offset:  # truncated or replaced: start over
                    self._offset, self._line_no, self._partial = 0, 0, b""
                fh.seek(self._offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        out: list[TranscriptEntry] = []
        for raw in lines:
            self._line_no += 1
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            text = assistant_text(obj)
            if text is not None:
                out.append(TranscriptEntry(self._line_no, text, time.time()))
                self._recent = (self._recent + text.splitlines())[-200:]
        return out

    # -- the Surface protocol, observe-only ------------------------------------------------------------
    def pane_info(self, pane_id: str) -> PaneInfo:
        return PaneInfo(pane_id=self.pane_id, session="transcript", title=self.path.name,
                        current_path=str(self.path.parent))

    def capture(self, pane_id: str, *, scrollback: int = 0) -> RawScreen:
        """The last lines the agent wrote, as a pseudo-screen."""
        self.read_new()
        return RawScreen(text="\n".join(self._recent[-40:]), info=self.pane_info(pane_id), captured_at=time.time())

    def send_keys(self, pane_id: str, keys: list[str]) -> None:
        raise SurfaceError("a transcript surface is observe-only", "supervise the agent's tmux pane to act on it",
                           subcommand=None)

    def paste_text(self, pane_id: str, text: str) -> None:
        self.send_keys(pane_id, [])

    def paste_buffer(self, pane_id: str, text: str, *, submit: bool = False) -> None:
        self.send_keys(pane_id, [])

    def display_message(self, pane_id: str, text: str, *, ms: int = 10_000) -> None:
        return None

    def watch(self, pane_ids: list[str], callback: OutputCallback) -> None:
        return None

    def close(self) -> None:
        return None
