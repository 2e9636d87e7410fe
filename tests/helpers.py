"""Shared test helpers: wait with a deadline, never with bare sleeps; a real loopback webhook
receiver."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from supervisor.workflow.notify import WebhookRejected, verify_webhook

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


WEBHOOK_SECRET = "s3cret-for-tests"


class WebhookReceiver:
    """A real loopback webhook receiver that verifies every request like a user's would (with
    ``WEBHOOK_SECRET``); the first ``fail_first`` requests get a 500 (settable before they come)."""

    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.requests: list[dict[str, Any]] = []
        self.accepted: list[dict[str, Any]] = []
        self.rejected: list[str] = []
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k: v for k, v in self.headers.items()}
                with outer.lock:
                    outer.requests.append({"headers": headers, "body": body, "at": time.monotonic()})
                    n = len(outer.requests)
                    if n <= outer.fail_first:
                        code = 500
                    else:
                        try:
                            verify_webhook(headers, body, WEBHOOK_SECRET, time.time(), outer.seen)
                            outer.accepted.append(json.loads(body))
                            code = 200
                        except WebhookRejected as exc:
                            outer.rejected.append(exc.reason)
                            code = 401
                self.send_response(code)
                self.end_headers()

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
