"""Which agent a pane runs, and how to talk to it: lookups in the policy's ``agents:`` section.

Everything the supervisor knows about a particular agent CLI is data in the policy (its
commands, the packages interpreters run it from, its pane title, its exit keys; the screen
markers and dialog grammar the classifier uses). This module holds only the mechanisms:
matching a command line, a pane's process tree (through psutil, so it works wherever psutil
does, macOS included) and its title against that data. An agent the policy does not list is
``unknown``; a plain shell is ``shell`` when the policy lists it so.
"""

from __future__ import annotations

import logging
import os
import shlex
from typing import TYPE_CHECKING, Protocol

import psutil

if TYPE_CHECKING:
    from supervisor.policy import Policy

log = logging.getLogger(__name__)

UNKNOWN = "unknown"
MAX_PROCESSES = 32
"""How many processes of a pane's tree are looked at, at most (agents run a handful)."""


class PaneFacts(Protocol):
    """What :func:`agent_of_pane` needs to know about a pane (``surfaces.base.PaneInfo`` has it)."""

    current_command: str
    title: str
    pid: int | None


def _program(word: str) -> str:
    """A command word as a program name: its basename, lowercased, without a script suffix."""
    name = os.path.basename(word.lower())
    for suffix in (".js", ".mjs", ".cjs", ".py"):
        name = name.removesuffix(suffix)
    return name


def agent_of_command(command: str, policy: Policy) -> str:
    """The agent whose program is ``command`` (a pane's foreground command, ``claude``), or unknown."""
    name = _program(command or "")
    if not name:
        return UNKNOWN
    for agent, profile in policy.agents.items():
        if name in profile.commands:
            return agent
    return UNKNOWN


def is_interpreter(command: str, policy: Policy) -> bool:
    """Whether ``command`` runs agents rather than being one (``node``, ``python3.12``, ``npx``)."""
    return _program(command or "").rstrip("0123456789.") in policy.interpreters


def agent_from_argv(argv: list[str] | str | None, policy: Policy) -> str:
    """The agent a command line starts: ``aider --model x``, ``python3 -m aider``, ``npx
    @anthropic-ai/claude-code``, ``node /usr/lib/node_modules/@openai/codex/bin/codex.js`` (unknown
    if it names none). Only the program, or the first words after an interpreter, count: an agent's
    name in a later argument (``vim claude.md``) does not."""
    if argv is None:
        return UNKNOWN
    if isinstance(argv, str):
        try:
            argv = shlex.split(argv)
        except ValueError:
            argv = str(argv).split()
    words = [w for w in argv if w and "=" not in w.split("/")[0]][:4]  # skip VAR=value prefixes
    for i, word in enumerate(words):
        low = word.lower()
        name = _program(word)
        for agent, profile in policy.agents.items():
            if name in profile.commands and (i == 0 or len(name) > 1):
                return agent
            if i > 0 and any(p.lower() in low for p in profile.packages):
                return agent
        if i == 0 and not is_interpreter(word, policy):
            return UNKNOWN
    return UNKNOWN


def agent_of_process_tree(pid: int | None, policy: Policy) -> str:
    """The agent run by process ``pid`` or one of its descendants (``python3`` running aider,
    ``node`` running claude, ``sh -c`` running either), from their command lines; unknown when
    none names one (shells do not count)."""
    if not pid:
        return UNKNOWN
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)][:MAX_PROCESSES]
    except (psutil.Error, OSError) as exc:
        log.debug("process tree of %s: %s", pid, exc)
        return UNKNOWN
    for proc in procs:
        try:
            argv = proc.cmdline()
        except (psutil.Error, OSError) as exc:  # gone, or not ours to read
            log.debug("command line of %s: %s", proc.pid, exc)
            continue
        agent = agent_from_argv([a for a in argv if a], policy)
        if agent != UNKNOWN and not is_shell(agent):  # a shell (``sh -c ...``) may run the agent below it
            return agent
    return UNKNOWN


def agent_of_title(title: str, policy: Policy) -> str:
    """The agent whose title hint the pane title contains (``✳ Claude Code``), or unknown."""
    low = (title or "").lower()
    if not low:
        return UNKNOWN
    for agent, profile in policy.agents.items():
        if any(t.lower() in low for t in profile.titles):
            return agent
    return UNKNOWN


def agent_of_pane(info: PaneFacts, policy: Policy) -> str:
    """The agent a pane runs: its foreground command; for an interpreter, what the pane's process
    tree runs; else its title. A plain shell is ``shell`` only when nothing else says more."""
    by_command = agent_of_command(info.current_command, policy)
    if by_command != UNKNOWN and not is_shell(by_command):
        return by_command
    if info.pid and is_interpreter(info.current_command, policy):
        by_tree = agent_of_process_tree(info.pid, policy)
        if by_tree != UNKNOWN:
            return by_tree
    by_title = agent_of_title(info.title, policy)
    return by_title if by_title != UNKNOWN else by_command


def exit_keys(agent: str, policy: Policy) -> list[str]:
    """The keys that make ``agent`` exit (``--exit-on-finish``); empty when the policy does not say."""
    profile = policy.agents.get(agent)
    return list(profile.exit_keys) if profile is not None else []


def is_shell(agent: str) -> bool:
    """Whether ``agent`` names a plain shell rather than an agent (``shell`` in the policy)."""
    return agent == "shell"
