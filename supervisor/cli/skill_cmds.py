"""`supervisor skill install`: teach agents the checkpoint protocol."""

from __future__ import annotations

from pathlib import Path

import click

from supervisor.cli import console
from supervisor.workflow.skill import install


@click.group("skill")
def skill() -> None:
    """Agent instructions (the checkpoint protocol) for Claude Code and Codex."""


@skill.command("install")
@click.option("--project", "project", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="The project folder to install into.")
@click.option("--user", is_flag=True, help="Install for the user (~/.claude/skills, ~/.codex/AGENTS.md) instead.")
@click.option("--agent", "agents", multiple=True, type=click.Choice(["claude", "codex"]),
              help="Only for this agent (repeatable; default: both).")
def install_cmd(project: Path, user: bool, agents: tuple[str, ...]) -> None:
    """Write the checkpoint-protocol instructions and print what was written where."""
    written = install(project.resolve(), user=user, agents=tuple(agents) or ("claude", "codex"))  # type: ignore[arg-type]
    for w in written:
        console.print(f"{w.action:9} {w.agent:6} {w.path}")

