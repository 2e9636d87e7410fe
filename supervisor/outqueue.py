"""Printing never blocks supervising.

A terminal can stop reading (Ctrl-S, a stuck ``| less``, a full ``ssh`` buffer, a pipe nobody
reads); a pane worker that printed there itself would stop with it, and that pane would go
unsupervised. So the supervisor's own output goes through a bounded queue drained by one thread:
a pane worker only queues what to print and goes on. When the queue is full the oldest lines are
dropped and counted, and the next line printed says how many ("N lines not shown; see the
journal"): every event is in the journal anyway.

When the output never drains, the process still ends: :func:`output_stuck` tells the CLI to exit
without the final flush of stdout (which would block for ever).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

_STUCK = threading.Event()


def output_stuck() -> bool:
    """Whether the CLI's output could not drain when its queue was closed (its reader is gone)."""
    return _STUCK.is_set()


def mark_output_stuck() -> None:
    """Say that this process's output will never drain (the CLI then exits without flushing it)."""
    _STUCK.set()


class OutputQueue:
    """What to print, as callables run in order by one thread; at most ``maxlen`` waiting."""

    def __init__(self, *, maxlen: int = 1000, on_dropped: Callable[[int], None] | None = None,
                 name: str = "printer") -> None:
        self.maxlen = maxlen
        self.on_dropped = on_dropped
        self.dropped_total = 0
        self._dropped = 0
        self._items: collections.deque[Callable[[], None]] = collections.deque()
        self._cond = threading.Condition()
        self._busy = False
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def put(self, item: Callable[[], None]) -> None:
        """Queue something to print; never blocks (drops the oldest waiting item when full)."""
        with self._cond:
            if len(self._items) >= self.maxlen:
                self._items.popleft()
                self._dropped += 1
                self.dropped_total += 1
            self._items.append(item)
            self._cond.notify()

    def wrap(self, fn: Callable[..., None]) -> Callable[..., None]:
        """``fn`` made to run on the printing thread: calling the result only queues the call."""
        def queued(*args: object, **kw: object) -> None:
            self.put(lambda: fn(*args, **kw))
        return queued

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._items)

    def _loop(self) -> None:
        from supervisor.feeder import block_signals

        block_signals()
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if not self._items:
                    return
                item = self._items.popleft()
                dropped, self._dropped = self._dropped, 0
                self._busy = True
            try:
                if dropped and self.on_dropped is not None:
                    self.on_dropped(dropped)
                item()
            except Exception as exc:  # noqa: BLE001 - a broken line must not stop the printing
                log.debug("printing failed: %s", exc)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def close(self, timeout: float = 2.0) -> bool:
        """Print what is waiting, for up to ``timeout`` seconds. False when the output did not drain:
        its reader is gone or stopped."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            while (self._items or self._busy) and time.monotonic() < deadline:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
            drained = not self._items and not self._busy
        if drained:
            with contextlib.suppress(RuntimeError):
                self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return drained


class QueuedLogHandler(logging.Handler):
    """Log records written to stderr by an :class:`OutputQueue`'s thread: a pane worker that logs a
    warning does not wait for a terminal either."""

    def __init__(self, out: OutputQueue, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self.out = out
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # noqa: BLE001 - as logging.Handler.handleError would, minus the print
            return

        def write() -> None:
            import sys

            sys.stderr.write(text + "\n")
            sys.stderr.flush()

        self.out.put(write)
