"""Notifications: the signed webhook against a real HTTP server on 127.0.0.1, the JSONL file."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from supervisor.workflow.notify import (
    HEADER_NONCE,
    HEADER_SIG,
    HEADER_TS,
    JsonlNotifier,
    Notification,
    NotificationHub,
    WebhookNotifier,
    WebhookRejected,
    signed_headers,
    verify_webhook,
)
from tests.helpers import retry_until

SECRET = "s3cret-for-tests"


class Receiver:
    """A real loopback webhook receiver that verifies every request like a user's would."""

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
                            verify_webhook(headers, body, SECRET, time.time(), outer.seen)
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


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def note(i: int) -> Notification:
    return Notification(run_id="run_1", kind="escalation", title=f"event {i}", next_action="supervisor runs resume run_1")


def test_signature_window_and_nonce_replay() -> None:
    body = b'{"x":1}'
    now = 1_700_000_000.0
    h = signed_headers(SECRET, body, now=now, nonce="nonce-0001")
    seen: set[str] = set()
    assert verify_webhook(h, body, SECRET, now + 10, seen)
    with pytest.raises(WebhookRejected, match="nonce already used"):
        verify_webhook(h, body, SECRET, now + 10, seen)
    h2 = signed_headers(SECRET, body, now=now, nonce="nonce-0002")
    with pytest.raises(WebhookRejected, match="window"):
        verify_webhook(h2, body, SECRET, now + 301, seen)
    with pytest.raises(WebhookRejected, match="window"):
        verify_webhook(h2, body, SECRET, now - 301, seen)
    assert verify_webhook(h2, body, SECRET, now + 299, seen)
    h3 = signed_headers(SECRET, body, now=now, nonce="nonce-0003")
    with pytest.raises(WebhookRejected, match="bad signature"):
        verify_webhook(h3, b'{"x":2}', SECRET, now, seen)
    with pytest.raises(WebhookRejected, match="bad signature"):
        verify_webhook(h3, body, "other", now, seen)
    tampered = dict(h3, **{HEADER_TS: str(int(now) + 1)})
    with pytest.raises(WebhookRejected, match="bad signature"):
        verify_webhook(tampered, body, SECRET, now, seen)
    with pytest.raises(WebhookRejected, match="missing"):
        verify_webhook({HEADER_TS: "1", HEADER_NONCE: "nonce-0005"}, body, SECRET, now, seen)
    # headers are matched case-insensitively, as HTTP servers deliver them
    h4 = {k.lower(): v for k, v in signed_headers(SECRET, body, now=now, nonce="nonce-0004").items()}
    assert verify_webhook(h4, body, SECRET, now, seen)


def test_webhook_delivers_signed_batch(receiver: Receiver) -> None:
    wh = WebhookNotifier(receiver.url, SECRET, batch_window_s=0.3, backoff_s=[0.1])
    try:
        for i in range(5):
            wh.send(note(i))
        assert wh.flush(20)
    finally:
        wh.close()
    assert len(receiver.requests) == 1, "a burst within the window goes in one POST"
    [batch] = receiver.accepted
    assert [n["title"] for n in batch["notifications"]] == [f"event {i}" for i in range(5)]
    hdrs = {k.lower() for k in receiver.requests[0]["headers"]}
    assert {HEADER_TS.lower(), HEADER_NONCE.lower(), HEADER_SIG.lower()} <= hdrs


def test_replayed_request_is_rejected_by_receiver(receiver: Receiver) -> None:
    wh = WebhookNotifier(receiver.url, SECRET, batch_window_s=0.05, backoff_s=[])
    wh.send(note(1))
    assert wh.flush(20)
    wh.close()
    first = receiver.requests[0]
    import urllib.error
    import urllib.request

    req = urllib.request.Request(receiver.url, data=first["body"], method="POST", headers=first["headers"])
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=10)
    assert exc.value.code == 401 and receiver.rejected == ["nonce already used (replay)"]


def test_retries_with_backoff_on_500() -> None:
    r = Receiver(fail_first=2)
    waits: list[float] = []

    def sleep(s: float) -> None:
        waits.append(s)
        time.sleep(s)

    results: list[str] = []
    wh = WebhookNotifier(r.url, SECRET, batch_window_s=0.05, backoff_s=[0.1, 0.2, 0.4], sleep=sleep,
                         on_result=lambda batch, status, why: results.append(status))
    try:
        wh.send(note(1))
        assert wh.flush(20)
    finally:
        wh.close()
        r.close()
    assert [a[1] for a in wh.attempts] == [500, 500, 200]
    assert waits == [0.1, 0.2] and results == ["delivered"]
    nonces = {req["headers"].get(HEADER_NONCE) for req in r.requests}
    assert len(nonces) == 3, "each attempt is signed afresh"
    assert len(r.accepted) == 1


def test_gives_up_after_backoff_and_never_raises() -> None:
    r = Receiver(fail_first=100)
    results: list[tuple[str, str]] = []
    wh = WebhookNotifier(r.url, SECRET, batch_window_s=0.05, backoff_s=[0.05, 0.05],
                         on_result=lambda batch, status, why: results.append((status, why)))
    try:
        wh.send(note(1))
        assert wh.flush(20)
    finally:
        wh.close()
        r.close()
    assert results == [("failed", "HTTP 500")] and len(wh.attempts) == 3


def test_jsonl_and_hub_record(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    recorded: list[dict[str, Any]] = []
    hub = NotificationHub([JsonlNotifier(path)], record=recorded.append)
    hub.notify(Notification(run_id="r", title="paused", body="key sk-ant-api03-" + "x" * 30))
    line = json.loads(path.read_text().splitlines()[0])
    assert line["title"] == "paused" and "REDACTED" in line["body"]
    assert recorded[0]["channel"] == "jsonl" and recorded[0]["ok"] is True
    retry_until(lambda: path.exists(), 1)
