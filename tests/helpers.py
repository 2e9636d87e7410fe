"""Shared test helpers: wait with a deadline, never with bare sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    pass


def retry_until(condition: Callable[[], T], seconds: float = 10.0, interval: float = 0.05,
                message: str | Callable[[], str] = "condition") -> T:
    """Call ``condition`` until it returns something truthy; return that. Fail after ``seconds``.

    Not libtmux's ``libtmux.test.retry.retry_until``: that one returns only True/False and raises a
    bare ``WaitTimeout`` with no message, while a failing live test here has to say what it waited
    for and what it last saw (``message``, the last value), and callers use the value found (a
    screen, an event). Its deadline is on the monotonic clock, so a clock step cannot end it early.
    """
    deadline = time.monotonic() + seconds
    last: T | None = None
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() >= deadline:
            msg = message() if callable(message) else message
            raise WaitTimeout(f"timed out after {seconds}s waiting for {msg} (last value: {last!r})")
        time.sleep(interval)
