"""Commands printed for the user to type next, runnable as printed.

After ``make demo`` the ``supervisor`` program is in ``.venv/bin``, not on PATH: a hint that says
``supervisor runs`` would fail with ``command not found``. :func:`program` names the program the
way this shell can run it (``supervisor`` when PATH finds this very install, else its path,
relative to the current directory when it lies below it); run ids are shown by their short
unique prefix (:func:`supervisor.runref.short_id`), and ``tmux attach`` hints carry the ``-L``
socket the run uses.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path

PROGRAM = "supervisor"


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def program(cwd: Path | None = None) -> str:
    """How to type the supervisor command here: ``supervisor`` when PATH finds this install's
    script, else the script's path (``.venv/bin/supervisor`` below the current directory), else
    ``python -m supervisor`` with this interpreter."""
    script = Path(sys.executable).parent / PROGRAM
    found = shutil.which(PROGRAM)
    if found and script.exists() and _same_file(found, script):
        return PROGRAM
    if not script.exists():
        return f"{shlex.quote(_shown(Path(sys.executable), cwd))} -m supervisor"
    return shlex.quote(_shown(script, cwd))


def _shown(path: Path, cwd: Path | None) -> str:
    here = Path(cwd or os.getcwd()).resolve()
    try:
        return str(path.relative_to(here))
    except ValueError:
        return str(path)


def on_path() -> bool:
    """Whether ``supervisor`` as typed runs this install."""
    return program() == PROGRAM


def path_step(cwd: Path | None = None) -> str | None:
    """The one shell line that puts this install's ``supervisor`` on PATH, or None when it is."""
    if on_path():
        return None
    folder = Path(sys.executable).parent
    shown = _shown(folder, cwd)
    return f'export PATH="{shown if shown.startswith("/") else "$PWD/" + shown}:$PATH"'


def tmux_attach(socket: str | None, target: str) -> str:
    """``tmux [-L SOCKET] attach -t TARGET``: the server the run's pane lives on."""
    base = f"tmux -L {shlex.quote(socket)}" if socket else "tmux"
    return f"{base} attach -t {shlex.quote(target)}"


_OPTIONS = ("--home", "--socket", "--warehouse", "--help", "--version", "-h")


def _command_pattern() -> re.Pattern[str]:
    from supervisor.cli import COMMANDS

    words = sorted((*COMMANDS, *_OPTIONS), key=len, reverse=True)
    lead = r"(?:^|(?<=[`\n(])|(?<=: )|(?<=\$ )|(?<=see ))"
    return re.compile(lead + r"supervisor(?= (?:" + "|".join(re.escape(w) for w in words) + r")(?![\w-]))", re.M)


_PATTERN: re.Pattern[str] | None = None


def runnable(text: str, cwd: Path | None = None) -> str:
    """``text`` with each command it prints (``supervisor runs resume X`` in backticks, after ``: ``,
    ``$ `` or ``see ``, or starting a line) spelled as this shell runs it (:func:`program`): the fix of
    an error, a next action, a hint. Unchanged when ``supervisor`` is on PATH; prose about "the
    supervisor" is never touched."""
    prog = program(cwd)
    if prog == PROGRAM or PROGRAM not in text:
        return text
    global _PATTERN
    if _PATTERN is None:
        _PATTERN = _command_pattern()
    return _PATTERN.sub(lambda _m: prog, text)
