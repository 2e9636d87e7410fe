"""Where an agent's own session lives: the Claude Code or Codex transcript of a working directory.

- Claude Code writes ``$CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl`` (default
  ``~/.claude``), the folder being the working directory with every character that is not a
  letter or digit replaced by ``-``; each line carries ``sessionId`` and ``cwd`` (a folder spelled
  otherwise is found by the ``cwd`` its transcripts record).
- Codex writes ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`` (default
  ``~/.codex``); its first line is ``{"type": "session_meta", "payload": {"id", "cwd", ...}}``.

A pane's session is the newest transcript (by modification time) whose working directory is the
pane's; with ``since`` (the pane process's start), transcripts untouched since are not it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

SessionAgent = Literal["claude", "codex"]
AGENTS: tuple[SessionAgent, ...] = ("claude", "codex")

_HEAD_LINES = 20
"""Lines read from a transcript's start to find its session id and working directory."""


@dataclass(frozen=True)
class AgentSession:
    """One agent session found on disk."""

    agent: SessionAgent
    session_id: str
    transcript: str
    """The JSONL transcript's path."""
    cwd: str | None
    modified_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def claude_home() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def claude_project_dir(cwd: str) -> Path:
    """The folder Claude Code keeps a working directory's transcripts in."""
    return claude_home() / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _head(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(_HEAD_LINES), fh, strict=False):
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    out.append(obj)
    except OSError:
        return []
    return out


def _claude_session(path: Path) -> AgentSession | None:
    head = _head(path)
    sid = next((str(o["sessionId"]) for o in head if o.get("sessionId")), path.stem)
    cwd = next((str(o["cwd"]) for o in head if o.get("cwd")), None)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    return AgentSession("claude", sid, str(path), cwd, mtime)


def _codex_session(path: Path) -> AgentSession | None:
    head = _head(path)
    meta = next((o.get("payload") or {} for o in head if o.get("type") == "session_meta"), {})
    m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", path.name)
    sid = str(meta.get("id") or (m.group(1) if m else path.stem))
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    return AgentSession("codex", sid, str(path), meta.get("cwd"), mtime)


def _transcripts(agent: SessionAgent, cwd: str | None) -> Iterator[AgentSession]:
    if agent == "claude":
        folder = claude_project_dir(cwd) if cwd else None
        if folder is not None and folder.is_dir():
            for p in folder.glob("*.jsonl"):
                s = _claude_session(p)
                if s is not None and s.cwd in (None, cwd):
                    yield s
            return
        # no folder under the expected name (another Claude Code version's spelling): the
        # transcripts' own `cwd` says where they belong
        for p in (claude_home() / "projects").glob("*/*.jsonl"):
            s = _claude_session(p)
            if s is not None and (cwd is None or s.cwd == cwd):
                yield s
    else:
        for p in (codex_home() / "sessions").glob("*/*/*/rollout-*.jsonl"):
            s = _codex_session(p)
            if s is not None and (cwd is None or s.cwd == cwd):
                yield s


def list_sessions(agent: SessionAgent | None = None, cwd: str | None = None, *, limit: int = 20) -> list[AgentSession]:
    """Sessions on disk, newest first (of one agent, of one working directory)."""
    found = [s for a in ((agent,) if agent else AGENTS) for s in _transcripts(a, cwd)]
    return sorted(found, key=lambda s: (s.modified_at, s.transcript), reverse=True)[:limit]


def detect_session(cwd: str, agent: SessionAgent | None = None, *, since: float | None = None) -> AgentSession | None:
    """The session an agent working in ``cwd`` writes now: the newest transcript of that directory
    (modified at or after ``since`` when given)."""
    for s in list_sessions(agent, cwd, limit=50):
        if since is None or s.modified_at >= since:
            return s
    return None


def session_agent(agent: str) -> SessionAgent | None:
    """The transcript format of an agent name from the policy (``claude``, ``codex``...), if we know one."""
    low = agent.lower()
    if low.startswith("claude"):
        return "claude"
    if low.startswith("codex"):
        return "codex"
    return None
