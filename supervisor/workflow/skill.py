"""``supervisor skill install``: put the checkpoint-protocol instructions where agents read them.

- Claude Code: a skill folder, ``.claude/skills/checkpoint-protocol/SKILL.md`` in the project
  (``~/.claude/skills/...`` with ``user=True``).
- Codex (and other agents that read AGENTS.md): a snippet between markers in the project's
  ``AGENTS.md`` (``~/.codex/AGENTS.md`` with ``user=True``). Installing again replaces the
  snippet in place: the rest of the file is never touched and nothing is duplicated.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

SKILL_NAME = "checkpoint-protocol"
BEGIN = "<!-- supervisor:checkpoint-protocol:begin -->"
END = "<!-- supervisor:checkpoint-protocol:end -->"
Target = Literal["claude", "codex"]


@dataclass(frozen=True)
class Written:
    """One file the installer wrote."""

    agent: str
    path: Path
    action: Literal["created", "updated", "unchanged"]


def protocol_text() -> str:
    return resources.files("supervisor").joinpath("data/checkpoint_protocol.md").read_text(encoding="utf-8")


def skill_md() -> str:
    front = ("---\n"
             f"name: {SKILL_NAME}\n"
             "description: Report progress to the supervisor with <checkpoint> blocks when you start or finish a "
             "step of the workflow plan, get blocked, or finish the whole plan.\n"
             "---\n\n")
    return front + protocol_text()


def _write(path: Path, text: str, agent: str) -> Written:
    old = path.read_text(encoding="utf-8") if path.exists() else None
    if old == text:
        return Written(agent, path, "unchanged")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return Written(agent, path, "created" if old is None else "updated")


def agents_md_with_snippet(existing: str | None) -> str:
    snippet = f"{BEGIN}\n{protocol_text().rstrip()}\n{END}\n"
    if not existing:
        return snippet
    if BEGIN in existing and END in existing:
        head, rest = existing.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return head + snippet.rstrip("\n") + tail
    sep = "" if existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    return existing + sep + snippet


def install(project: Path, *, user: bool = False, home: Path | None = None,
            agents: tuple[Target, ...] = ("claude", "codex")) -> list[Written]:
    """Write the instructions for each agent; return what was written where."""
    base_home = home or Path.home()
    out: list[Written] = []
    if "claude" in agents:
        root = (base_home / ".claude") if user else (project / ".claude")
        out.append(_write(root / "skills" / SKILL_NAME / "SKILL.md", skill_md(), "claude"))
    if "codex" in agents:
        path = (base_home / ".codex" / "AGENTS.md") if user else (project / "AGENTS.md")
        old = path.read_text(encoding="utf-8") if path.exists() else None
        out.append(_write(path, agents_md_with_snippet(old), "codex"))
    return out


def uninstall_snippet(text: str) -> str:
    """AGENTS.md text without our snippet (for users who want it gone)."""
    if BEGIN not in text or END not in text:
        return text
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return (head.rstrip("\n") + "\n" + tail.lstrip("\n")).lstrip("\n")
