"""The webhook, point by point, against real HTTP servers on 127.0.0.1: what is journaled is
what happened (queued is not delivered); closing is bounded however dead or hung the endpoint;
timestamps are integers; the signed string is length-prefixed (no byte moves between nonce and
body); remembered nonces expire with the window; plain runs' escalations reach the webhook."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor.journal import Journal
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse, sync
from supervisor.workflow.notify import (
    HEADER_NONCE,
    HEADER_SIG,
    HEADER_TS,
    WINDOW_S,
    NonceStore,
    Notification,
    NotificationHub,
    WebhookNotifier,
    WebhookRejected,
    sign,
    signed_headers,
    signed_string,
    verify_webhook,
)
from tests.helpers import WEBHOOK_SECRET, WebhookReceiver, retry_until

BODY = b'{"notifications":[]}'


class HungServer:
    """Accepts requests and never answers until released (a hung endpoint)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                outer.hits += 1
                outer.release.wait(60)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()



def _dead_url() -> str:
    """A loopback port with nothing listening (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def _note(i: int = 1) -> Notification:
    return Notification(run_id="run_w", kind="escalation", title=f"paused {i}", next_action="supervisor runs resume")


def _hub(url: str, **kw: Any) -> tuple[NotificationHub, list[dict[str, Any]]]:
    recorded: list[dict[str, Any]] = []
    return NotificationHub([WebhookNotifier(url, WEBHOOK_SECRET, **kw)], record=recorded.append), recorded


# -- the journal says what happened ----------------------------------------------------------------------------

def test_queued_is_not_delivered_and_the_outcome_is_recorded(receiver: WebhookReceiver) -> None:
    hub, recorded = _hub(receiver.url, batch_window_s=0.05, backoff_s=[])
    hub.notify(_note())
    assert recorded[0]["status"] == "queued" and recorded[0]["ok"] is None
    retry_until(lambda: len(recorded) == 2, 30, message="the delivery outcome")
    hub.close()
    assert recorded[1]["status"] == "delivered" and recorded[1]["ok"] is True and receiver.accepted


def test_a_dead_endpoint_is_journaled_as_failed_not_ok(tmp_path: Path) -> None:
    settings_ = Settings(home=tmp_path / "home").ensure()
    journal = Journal(settings_.journal_path("run_w"), "run_w")
    hub = NotificationHub([WebhookNotifier(_dead_url(), WEBHOOK_SECRET, batch_window_s=0.05, backoff_s=[0.05])],
                          record=lambda p: journal.append("notification", p))
    hub.notify(_note())
    retry_until(lambda: len([e for e in journal.events() if e.kind == "notification"]) == 2, 30,
                message="the failure to be journaled")
    hub.close()
    journal.close()
    statuses = [(e.payload["status"], e.payload["ok"]) for e in journal.events()]
    assert statuses == [("queued", None), ("failed", False)]
    assert "ConnectionRefused" in journal.events()[1].payload["why"] or "URLError" in journal.events()[1].payload["why"]
    sync(settings_)
    with open_warehouse(settings_.warehouse, read_only=True) as wh:
        assert wh.notifications_df()["ok"].to_list() == [None, False]


def test_a_receiver_that_refuses_is_failed(receiver: WebhookReceiver) -> None:
    hub, recorded = _hub(receiver.url, batch_window_s=0.05, backoff_s=[])
    hub.channels[0].secret = "wrong secret"  # the receiver answers 401
    hub.notify(_note())
    retry_until(lambda: len(recorded) == 2, 30, message="the outcome")
    hub.close()
    assert (recorded[1]["status"], recorded[1]["why"]) == ("failed", "HTTP 401")


# -- a bounded queue ---------------------------------------------------------------------------------------------

def test_a_hung_endpoint_never_grows_the_queue_nor_blocks_the_sender() -> None:
    """A hung endpoint holds the first batch; every notification after it waits in a queue of at most
    ``max_queued``: queuing one more drops the oldest waiting (journaled ``abandoned``, with the count),
    and queuing never waits for the endpoint."""
    hung = HungServer()
    try:
        wh = WebhookNotifier(hung.url, WEBHOOK_SECRET, batch_window_s=0.0, backoff_s=[], timeout_s=30,
                             close_timeout_s=0.2, max_queued=5)
        recorded: list[dict[str, Any]] = []
        hub = NotificationHub([wh], record=recorded.append)
        hub.notify(_note(0))
        retry_until(lambda: hung.hits == 1, 10, message="the first batch to reach the hung endpoint")
        slowest = 0.0
        for i in range(1, 41):
            t0 = time.monotonic()
            hub.notify(_note(i))
            slowest = max(slowest, time.monotonic() - t0)
        assert wh._q.qsize() == 5 and wh.dropped == 35
        dropped = [r for r in recorded if r["status"] == "abandoned"]
        assert [r["title"] for r in dropped] == [f"paused {i}" for i in range(1, 36)]
        assert "queue was full" in dropped[-1]["why"] and "35 dropped so far" in dropped[-1]["why"]
        assert slowest < 1.0, slowest  # never waits for the endpoint (a generous bound for a loaded host)
        hub.close()
    finally:
        hung.close()
    kept = [r["title"] for r in recorded if r["status"] == "abandoned" and "closed" in r["why"]]
    assert kept == [f"paused {i}" for i in range(36, 41)]


# -- bounded shutdown --------------------------------------------------------------------------------------------

def test_closing_with_a_hung_endpoint_is_bounded_and_says_unknown() -> None:
    hung = HungServer()
    try:
        hub, recorded = _hub(hung.url, batch_window_s=0.0, backoff_s=[0.5, 2.0, 8.0], timeout_s=30.0,
                             close_timeout_s=1.0)
        hub.notify(_note(1))
        retry_until(lambda: hung.hits == 1, 30, message="the request to hang")
        hub.notify(_note(2))  # queued behind the hung request
        t0 = time.monotonic()
        hub.close()
        took = time.monotonic() - t0
    finally:
        hung.close()
    # A ceiling, not a benchmark: the request itself would hang 30 s and the backoff adds 10.5 s.
    assert took < 10, took
    outcomes = {r["title"]: r["status"] for r in recorded if r["status"] != "queued"}
    assert outcomes == {"paused 1": "unknown", "paused 2": "abandoned"}


def test_closing_with_a_dead_endpoint_stops_retrying() -> None:
    hub, recorded = _hub(_dead_url(), batch_window_s=0.0, backoff_s=[5.0, 5.0, 5.0], close_timeout_s=1.0)
    hub.notify(_note())
    retry_until(lambda: len(hub.channels[0].attempts) >= 1, 30, message="a first attempt")
    t0 = time.monotonic()
    hub.close()
    assert time.monotonic() - t0 < 10  # the old sender slept through 15 s of backoff
    final = [r for r in recorded if r["status"] != "queued"]
    assert [r["status"] for r in final] == ["failed"] and "closing" in final[0]["why"]
    assert len(hub.channels[0].attempts) == 1


def test_sending_after_close_is_abandoned_not_queued() -> None:
    hub, recorded = _hub(_dead_url(), close_timeout_s=0.5)
    hub.close()
    hub.notify(_note())
    assert [r["status"] for r in recorded] == ["abandoned"]


# -- integer timestamps, unambiguous signatures, expiring nonces --------------------------------------------------

@pytest.mark.parametrize("ts", ["nan", "NaN", "inf", "1e9", "1700000000.5", " 1700000000", "-1700000000", "0x65", ""])
def test_only_integer_timestamps_pass(ts: str, receiver: WebhookReceiver) -> None:
    headers = {HEADER_TS: ts, HEADER_NONCE: "nonce-abcdef", HEADER_SIG: "v1=" + sign(WEBHOOK_SECRET, ts, "nonce-abcdef", BODY)}
    with pytest.raises(WebhookRejected, match="missing|not an integer"):
        verify_webhook(headers, BODY, WEBHOOK_SECRET, time.time(), NonceStore())
    req = urllib.request.Request(receiver.url, data=BODY, method="POST", headers=headers)
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=30)
    assert exc.value.code == 401 and not receiver.accepted


def test_bytes_cannot_move_between_nonce_and_body(receiver: WebhookReceiver) -> None:
    # Under the old "ts.nonce.body" string, nonce "abcd1234.x" with body B signed the same bytes as
    # nonce "abcd1234" with body "x." + B. Now the fields are length-prefixed, and nonces are plain.
    ts = str(int(time.time()))
    assert signed_string(ts, "abcd1234.x", BODY) != signed_string(ts, "abcd1234", b"x." + BODY)
    good = signed_headers(WEBHOOK_SECRET, b"x." + BODY, nonce="abcd1234")
    moved = dict(good, **{HEADER_NONCE: "abcd1234.x"})
    for headers, body in ((moved, BODY), (dict(good, **{HEADER_NONCE: "abcd1234x"}), BODY)):
        req = urllib.request.Request(receiver.url, data=body, method="POST", headers=headers)
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(req, timeout=30)
    assert receiver.rejected == ["malformed nonce", "bad signature"]


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.text("0123456789", min_size=1, max_size=12), st.binary(max_size=40), st.binary(max_size=40),
       st.integers(0, 40))
def test_fuzz_no_two_field_splits_sign_the_same_bytes(ts: str, a: bytes, b: bytes, cut: int) -> None:
    """Any two different (nonce, body) splits of the same bytes sign different strings."""
    joined = a + b
    cut = min(cut, len(joined))
    n1, b1 = a.decode("latin-1"), b
    n2, b2 = joined[:cut].decode("latin-1"), joined[cut:]
    if (n1, b1) != (n2, b2):
        assert signed_string(ts, n1, b1) != signed_string(ts, n2, b2)


def test_nonces_expire_with_the_window_and_memory_stays_bounded() -> None:
    store = NonceStore(window_s=WINDOW_S)
    t = 1_700_000_000
    for i in range(3000):  # one request a second for 50 minutes
        now = t + i
        h = signed_headers(WEBHOOK_SECRET, BODY, now=now, nonce=f"nonce-{i:06d}")
        assert verify_webhook(h, BODY, WEBHOOK_SECRET, now, store)
        assert len(store) <= WINDOW_S + 2  # only nonces whose timestamps can still pass
    old = signed_headers(WEBHOOK_SECRET, BODY, now=t, nonce="nonce-000000")
    with pytest.raises(WebhookRejected, match="window"):  # forgotten, yet a replay still fails
        verify_webhook(old, BODY, WEBHOOK_SECRET, t + 3000, store)
    recent = signed_headers(WEBHOOK_SECRET, BODY, now=t + 2999, nonce="nonce-002999")
    with pytest.raises(WebhookRejected, match="replay"):
        verify_webhook(recent, BODY, WEBHOOK_SECRET, t + 3000, store)
    full = NonceStore(max_entries=2)
    for n in ("nonce-aaaa1", "nonce-aaaa2"):
        verify_webhook(signed_headers(WEBHOOK_SECRET, BODY, now=t, nonce=n), BODY, WEBHOOK_SECRET, t, full)
    with pytest.raises(WebhookRejected, match="store full"):
        verify_webhook(signed_headers(WEBHOOK_SECRET, BODY, now=t, nonce="nonce-aaaa3"), BODY, WEBHOOK_SECRET, t, full)


# -- plain runs notify too ----------------------------------------------------------------------------------------

def test_a_plain_run_escalation_reaches_the_webhook(tmux_socket: str, sv_home: Path, tmp_path: Path,
                                                     receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.live_helpers import LiveHarness, events, write_script

    monkeypatch.setenv("SUPERVISOR_WEBHOOK_URL", receiver.url)
    monkeypatch.setenv("SUPERVISOR_WEBHOOK_SECRET", WEBHOOK_SECRET)
    script = write_script(tmp_path, [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "danger", "kind": "bash", "command": "rm -rf /tmp/proj/src", "description": "Remove"}},
    ])
    h = LiveHarness(tmux_socket, sv_home)
    try:
        (runner,) = h.supervise(h.start_agent(script, tmp_path / "rec.jsonl"))
        retry_until(lambda: receiver.accepted, 60, message="the escalation at the webhook")
        delivered = retry_until(lambda: [e for e in events(runner, "notification")
                                         if e.payload.get("channel") == "webhook" and e.payload.get("status") == "delivered"],
                                30, message="the delivery journaled")
    finally:
        h.stop()
    [batch] = receiver.accepted
    [n] = batch["notifications"]
    assert n["kind"] == "escalation" and n["run_id"] == runner.run_id and "rm -rf" in n["title"]
    assert n["next_action"] and delivered[0].payload["ok"] is True
