"""Where a path lands: inside the project, outside it, or nowhere that can be told.

The project is the pane's working directory. A path is placed against it (and against any ``cd``
before it in the same command), and, where that directory is on this machine, through the symbolic
links that exist right now: ``config.sh`` inside the project that links to ``~/.bashrc`` is outside.
"""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
from typing import Literal

Where = Literal["inside", "outside", "unknown"]

_HOME = re.compile(r"^(/home/[^/]+|/Users/[^/]+|/root)(?=/|$)")
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})


def home_of(*paths: str) -> str:
    """The home directory seen in any of ``paths`` (``/home/dev`` in ``/home/dev/app``), or ''."""
    return next((m.group(1) for m in (_HOME.match(p) for p in paths) if m), "")


_DRIVE = re.compile(r"^([A-Za-z]):([\\/]|$)")


def windows_path(path: str) -> str:
    """A Windows path as Git Bash and MSYS2 name it: ``C:/Users/x`` and ``C:\\Users\\x`` are
    ``/c/Users/x``, a network share ``\\\\host\\share`` is ``//host/share``. Either is absolute
    (never a folder ``C:`` inside the project); any other path is returned as it is."""
    m = _DRIVE.match(path)
    if m:
        return f"/{m.group(1).lower()}/" + path[m.end():].replace("\\", "/")
    if path.startswith("\\"):  # `\\host\share`, and `\Windows` (the drive's root)
        return path.replace("\\", "/")
    return path


def place(path: str, cwd: str, dirname: str = "", *, screen_text: bool = True) -> tuple[Where, str]:
    """Where a written path lands: ``(inside | outside | unknown, the path as judged)``, home paths
    shown ``~/...``. Relative paths resolve against ``cwd``; ``~`` is the home seen in the directory
    or the path (``/home/dev``). Without a directory, a relative path that does not climb out
    (``..``) stays inside, a home path is outside, an absolute path with no directory named
    ``dirname`` (the directory's name, when only that is known) on its way is outside, and any other
    absolute path cannot be placed. ``screen_text``: the path was read off a screen, so quotes and a
    sentence's trailing punctuation around it are not part of it (a shell word is taken as it is)."""
    p = path
    if screen_text:
        p = p.strip().strip("'\"`").rstrip(":,")
        if p.endswith(".") and not p.endswith(("/.", "..")) and p != ".":
            p = p.rstrip(".")
    p = windows_path(p)
    home = home_of(cwd, p)

    def expand(x: str) -> str:
        return home + x[1:] if home and (x == "~" or x.startswith("~/")) else x

    root, p = expand(cwd), expand(p)
    if root.startswith("~") and not p.startswith("~") and p.startswith("/"):
        root = ""  # a home-relative directory and an absolute path with no home to tie them
    if p.startswith("~") and not root.startswith("~"):
        return "outside", p  # a home path; the project is elsewhere, or unknown
    if not p.startswith(("/", "~")):
        if not root:
            norm = posixpath.normpath(p)
            return ("outside" if norm == ".." or norm.startswith("../") else "inside"), p
        p = posixpath.join(root, p)
    p = posixpath.normpath(p)
    shown = "~" + p[len(home):] if home and (p == home or p.startswith(home + "/")) else p
    if not root:
        return ("outside" if dirname and dirname not in p.split("/") else "unknown"), shown
    root = posixpath.normpath(root)
    return ("inside" if p == root or p.startswith(root.rstrip("/") + "/") else "outside"), shown


def live_root(cwd: str) -> str | None:
    """The project's real directory when it exists on this machine (a live pane's), else None: only
    then are symbolic links and git consulted."""
    if not cwd.startswith("/"):
        return None
    try:
        return os.path.realpath(cwd) if os.path.isdir(cwd) else None
    except OSError:
        return None


def real_path(root: str, cwd: str, path: str) -> str:
    """``path`` (as placed against ``cwd``, the project ``root``'s directory) through the symbolic links
    that exist now: the real path of its longest existing prefix, plus the rest."""
    p = path
    if p == "~" or p.startswith("~/"):
        p = os.path.expanduser(p)
    full = p if p.startswith("/") else posixpath.join(cwd, p)
    full = posixpath.normpath(full)
    try:
        return os.path.realpath(full)
    except OSError:
        return full


def inside(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip("/") + "/")


def git_restorable(root: str, real: str, timeout: float = 2.0) -> bool:
    """Whether git could give back everything under ``real`` if it were deleted: the path is tracked,
    and nothing under it is modified, untracked or ignored (an ignored ``.env`` is not in git)."""
    rel = os.path.relpath(real, root)
    if rel.startswith(".."):
        return False
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        tracked = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", rel], capture_output=True,
                                 timeout=timeout, env=env, check=False)
        if tracked.returncode != 0 or not tracked.stdout.strip(b"\0"):
            return False
        status = subprocess.run(["git", "-C", root, "status", "--porcelain", "--ignored", "-z", "--", rel],
                                capture_output=True, timeout=timeout, env=env, check=False)
        return status.returncode == 0 and not status.stdout.strip(b"\0")
    except (OSError, subprocess.SubprocessError):
        return False
