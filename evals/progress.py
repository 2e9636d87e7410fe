"""Progress of the workbench's slow steps, reported to whoever is watching.

The workbench calls :meth:`Progress.step` as each step starts (with how many items it has, when it
knows) and :meth:`Progress.advance` as items finish; the CLI draws it (a rich bar on a terminal,
plain lines otherwise: :mod:`supervisor.cli.progress`); notebooks and tests pass nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Progress(Protocol):
    """Where a slow command reports its steps."""

    def step(self, name: str, total: int | None = None) -> None:
        """A new step starts: ``name`` says what it does, ``total`` how many items it has (None: unknown)."""

    def advance(self, n: int = 1) -> None:
        """``n`` more items of the current step are done."""


class NoProgress:
    """Reports nothing (the library's default)."""

    def step(self, name: str, total: int | None = None) -> None:
        return None

    def advance(self, n: int = 1) -> None:
        return None


def suite_hook(progress: Progress | None) -> Callable[[str, int], None] | None:
    """A :data:`evals.runner.ProgressHook` that advances ``progress`` by one per case (None: none)."""
    if progress is None:
        return None

    def hook(_suite: str, _done: int) -> None:
        progress.advance()

    return hook
