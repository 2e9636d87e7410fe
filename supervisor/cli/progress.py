"""Progress and elapsed time for the slow commands (``eval run``, ``gate-candidate``, ``propose``...).

On a terminal: a rich progress bar per step on stderr (the step, items done of the total, elapsed
time). Not a terminal (a pipe, CI, a log): one plain line per step as it starts and as it ends with
its count and time. Either way a command that succeeds ends with one line saying how long it took. Everything
goes to stderr, so ``--json`` output on stdout stays one clean document.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console


class CommandProgress:
    """:class:`evals.progress.Progress` for one command run (see the module's docstring)."""

    def __init__(self, label: str, *, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.t0 = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        self._name: str | None = None
        self._done = 0
        self._total: int | None = None
        self._step_t0 = self.t0
        self._started = False

    def __enter__(self) -> CommandProgress:
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(file=self.stream), transient=False)
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def step(self, name: str, total: int | None = None) -> None:
        self._end_step()
        self._started = True
        self._name, self._total, self._done, self._step_t0 = name, total, 0, time.monotonic()
        if self._bar is not None:
            self._task = self._bar.add_task(name, total=total)
        else:
            self._line(f"{self.label}: {name}" + (f" ({total})" if total else "") + " ...")

    def advance(self, n: int = 1) -> None:
        self._done += n
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, n)

    def _end_step(self) -> None:
        if self._name is None:
            return
        took = time.monotonic() - self._step_t0
        if self._bar is not None and self._task is not None:
            if not self._total:  # a step without a count shows as done when the next one starts
                self._bar.update(self._task, total=max(self._done, 1), completed=max(self._done, 1))
            self._bar.stop_task(self._task)
        else:
            count = f"{self._done} of {self._total}" if self._total else (f"{self._done}" if self._done else "")
            self._line(f"{self.label}: {self._name}: done" + (f" ({count})" if count else "") + f" in {took:.1f}s")
        self._name = None

    def finish(self) -> float:
        self._end_step()
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        took = time.monotonic() - self.t0
        self._line(f"{self.label}: done in {took:.1f}s")
        return took

    def stop(self) -> None:
        """The command failed: end the bar, and say how long it ran if any step had started."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._started:
            self._line(f"{self.label}: stopped after {time.monotonic() - self.t0:.1f}s")

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


@contextmanager
def command_progress(label: str, *, stream: TextIO | None = None, live: bool | None = None
                     ) -> Iterator[CommandProgress]:
    """A :class:`CommandProgress` that ends with how long the command took. One that fails after some
    of its steps ran says how long it ran ("stopped after"); one that fails before any step (bad input)
    leaves the stream to its one-line error alone."""
    prog = CommandProgress(label, stream=stream, live=live)
    with prog:
        try:
            yield prog
        except BaseException:
            prog.stop()
            raise
        prog.finish()
