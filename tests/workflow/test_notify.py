"""Notifications: the signed webhook against a real HTTP server on 127.0.0.1, the JSONL file."""

from __future__ import annotations

import json
import time
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
from tests.helpers import WEBHOOK_SECRET, WebhookReceiver, retry_until


def note(i: int) -> Notification:
    return Notification(run_id="run_1", kind="escalation", title=f"event {i}", next_action="supervisor runs resume run_1")


def test_signature_window_and_nonce_replay() -> None:
    body = b'{"x":1}'
    now = 1_700_000_000.0
    h = signed_headers(WEBHOOK_SECRET, body, now=now, nonce="nonce-0001")
    seen: set[str] = set()
    assert verify_webhook(h, body, WEBHOOK_SECRET, now + 10, seen)
    with pytest.raises(WebhookRejected, match="nonce already used"):
        verify_webhook(h, body, WEBHOOK_SECRET, now + 10, seen)
    h2 = signed_headers(WEBHOOK_SECRET, body, now=now, nonce="nonce-0002")
    with pytest.raises(WebhookRejected, match="window"):
        verify_webhook(h2, body, WEBHOOK_SECRET, now + 301, seen)
    with pytest.raises(WebhookRejected, match="window"):
        verify_webhook(h2, body, WEBHOOK_SECRET, now - 301, seen)
    assert verify_webhook(h2, body, WEBHOOK_SECRET, now + 299, seen)
    h3 = signed_headers(WEBHOOK_SECRET, body, now=now, nonce="nonce-0003")
    with pytest.raises(WebhookRejected, match="bad signature"):
        verify_webhook(h3, b'{"x":2}', WEBHOOK_SECRET, now, seen)
    with pytest.raises(WebhookRejected, match="bad signature"):
        verify_webhook(h3, body, "other", now, seen)
    tampered = dict(h3, **{HEADER_TS: str(int(now) + 1)})
    with pytest.raises(WebhookRejected, match="bad signature"):
        verify_webhook(tampered, body, WEBHOOK_SECRET, now, seen)
    with pytest.raises(WebhookRejected, match="missing"):
        verify_webhook({HEADER_TS: "1", HEADER_NONCE: "nonce-0005"}, body, WEBHOOK_SECRET, now, seen)
    # headers are matched case-insensitively, as HTTP servers deliver them
    h4 = {k.lower(): v for k, v in signed_headers(WEBHOOK_SECRET, body, now=now, nonce="nonce-0004").items()}
    assert verify_webhook(h4, body, WEBHOOK_SECRET, now, seen)


def deliver(wh: WebhookNotifier, *notes: Notification) -> None:
    """Send ``notes``, wait (bounded) until the notifier has delivered them or given up, close it."""
    try:
        for n in notes:
            wh.send(n)
        assert wh.flush(20)
    finally:
        wh.close()


def test_webhook_delivers_signed_batch(receiver: WebhookReceiver) -> None:
    deliver(WebhookNotifier(receiver.url, WEBHOOK_SECRET, batch_window_s=0.3, backoff_s=[0.1]),
            *(note(i) for i in range(5)))
    assert len(receiver.requests) == 1, "a burst within the window goes in one POST"
    [batch] = receiver.accepted
    assert [n["title"] for n in batch["notifications"]] == [f"event {i}" for i in range(5)]
    hdrs = {k.lower() for k in receiver.requests[0]["headers"]}
    assert {HEADER_TS.lower(), HEADER_NONCE.lower(), HEADER_SIG.lower()} <= hdrs


def test_replayed_request_is_rejected_by_receiver(receiver: WebhookReceiver) -> None:
    deliver(WebhookNotifier(receiver.url, WEBHOOK_SECRET, batch_window_s=0.05, backoff_s=[]), note(1))
    first = receiver.requests[0]
    import urllib.error
    import urllib.request

    req = urllib.request.Request(receiver.url, data=first["body"], method="POST", headers=first["headers"])
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=10)
    assert exc.value.code == 401 and receiver.rejected == ["nonce already used (replay)"]


def test_retries_with_backoff_on_500(receiver: WebhookReceiver) -> None:
    receiver.fail_first = 2
    waits: list[float] = []

    def sleep(s: float) -> None:
        waits.append(s)
        time.sleep(s)

    results: list[str] = []
    wh = WebhookNotifier(receiver.url, WEBHOOK_SECRET, batch_window_s=0.05, backoff_s=[0.1, 0.2, 0.4], sleep=sleep,
                         on_result=lambda batch, status, why: results.append(status))
    deliver(wh, note(1))
    assert [a[1] for a in wh.attempts] == [500, 500, 200]
    assert waits == [0.1, 0.2] and results == ["delivered"]
    nonces = {req["headers"].get(HEADER_NONCE) for req in receiver.requests}
    assert len(nonces) == 3, "each attempt is signed afresh"
    assert len(receiver.accepted) == 1


def test_gives_up_after_backoff_and_never_raises(receiver: WebhookReceiver) -> None:
    receiver.fail_first = 100
    results: list[tuple[str, str]] = []
    wh = WebhookNotifier(receiver.url, WEBHOOK_SECRET, batch_window_s=0.05, backoff_s=[0.05, 0.05],
                         on_result=lambda batch, status, why: results.append((status, why)))
    deliver(wh, note(1))
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
