"""Notifications: tell a human the run needs them (paused, escalated, held for review, done).

Three channels: ``tmux display-message`` on the pane (through the Surface), a JSONL file
(``Settings.notifications_path``), and a signed webhook. The webhook POSTs a JSON batch with
``X-Supervisor-Timestamp`` (integer Unix seconds), ``X-Supervisor-Nonce`` (8-128 of
``[A-Za-z0-9_-]``) and ``X-Supervisor-Signature`` = ``v1=`` + hex HMAC-SHA256 over the
length-prefixed string ``v1:<len(ts)>:<ts>:<len(nonce)>:<nonce>:<body>`` (no byte can move between
fields); :func:`verify_webhook` is the receiver's side (±5 minute window, reused nonces rejected,
remembered by a :class:`NonceStore` only as long as the window). Bursts within ``batch_window_s``
go in one POST; failures (5xx, connection errors) are retried with backoff, each attempt freshly
signed. Sending happens on a background thread: a slow or dead endpoint never stalls
supervision, and closing waits at most ``close_timeout_s``. Its queue is bounded
(``max_queued``): when an endpoint is down for long, the oldest waiting notifications are dropped
(each journaled ``abandoned``, with how many were dropped so far), never the supervision.

What is journaled is what happened: a webhook ``send`` is recorded as ``status: queued`` (``ok``
unknown), and the outcome of each notification is recorded when known: ``delivered``,
``failed`` (with why), or, at shutdown, ``abandoned`` (never sent) / ``unknown`` (a request was
in flight).

Configuration: ``SUPERVISOR_WEBHOOK_URL`` and ``SUPERVISOR_WEBHOOK_SECRET``.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import json
import logging
import math
import os
import queue
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, MutableMapping, MutableSet
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from supervisor.ids import new_id
from supervisor.redact import redact, redact_data

logger = logging.getLogger(__name__)

NotificationKind = Literal["pause", "escalation", "review_needed", "finished", "verifier_failed", "resumed", "info"]

WINDOW_S = 300.0
HEADER_TS = "X-Supervisor-Timestamp"
HEADER_NONCE = "X-Supervisor-Nonce"
HEADER_SIG = "X-Supervisor-Signature"


class Notification(BaseModel):
    """One thing a human should know. Journaled (per channel) as a ``notification`` event."""

    model_config = ConfigDict(extra="forbid")

    notification_id: str = Field(default_factory=lambda: new_id("ntf_"))
    run_id: str = ""
    pane_id: str | None = None
    kind: NotificationKind = "info"
    title: str
    body: str = ""
    next_action: str | None = None
    """The exact command a human should run next."""
    at: float = Field(default_factory=time.time)


class Notifier(Protocol):
    """A channel. ``send`` must not block for long nor raise."""

    channel: str

    def send(self, n: Notification) -> bool:
        ...


class TmuxNotifier:
    """``tmux display-message`` on the run's pane."""

    channel = "tmux"

    def __init__(self, surface: Any, ms: int = 10_000) -> None:
        self.surface = surface
        self.ms = ms

    def send(self, n: Notification) -> bool:
        if not n.pane_id:
            return False
        from supervisor.cli.hints import runnable

        text = f"supervisor: {n.title}" + (f" — next: {runnable(n.next_action)}" if n.next_action else "")
        try:
            self.surface.display_message(n.pane_id, redact(text).replace("#", "##"), ms=self.ms)
        except Exception:  # noqa: BLE001 - a missing client or pane is not an error worth crashing for
            logger.debug("display-message on %s failed", n.pane_id, exc_info=True)
            return False
        return True


class JsonlNotifier:
    """Appends one JSON line per notification (a file a human or a tool can tail)."""

    channel = "jsonl"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def send(self, n: Notification) -> bool:
        line = json.dumps(redact_data(n.model_dump(mode="json")), ensure_ascii=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock, open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError:
            return False
        return True


# -- webhook signing ------------------------------------------------------------------------------------


class WebhookRejected(ValueError):
    """A webhook request that must not be trusted; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_NONCE = re.compile(r"[A-Za-z0-9_\-]{8,128}")
_TS = re.compile(r"[0-9]{1,12}")


def signed_string(timestamp: str, nonce: str, body: bytes) -> bytes:
    """What is signed: every field length-prefixed, so no byte can move from one to another."""
    return f"v1:{len(timestamp)}:{timestamp}:{len(nonce)}:{nonce}:".encode() + body


def sign(secret: str | bytes, timestamp: str, nonce: str, body: bytes) -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, signed_string(timestamp, nonce, body), hashlib.sha256).hexdigest()


def signed_headers(secret: str | bytes, body: bytes, *, now: float | None = None,
                   nonce: str | None = None) -> dict[str, str]:
    ts = str(int(time.time() if now is None else now))
    nonce = nonce or uuid.uuid4().hex
    return {HEADER_TS: ts, HEADER_NONCE: nonce, HEADER_SIG: "v1=" + sign(secret, ts, nonce, body),
            "Content-Type": "application/json"}


class NonceStore:
    """Nonces a receiver has accepted, each kept only as long as its timestamp could still pass
    the window check (a replay older than that fails on its timestamp), so memory stays bounded
    by the traffic of one window; ``max_entries`` caps it even under a flood (the receiver then
    refuses new requests rather than forgetting nonces still inside the window)."""

    def __init__(self, window_s: float = WINDOW_S, max_entries: int = 100_000) -> None:
        self.window_s = window_s
        self.max_entries = max_entries
        self._expiry: dict[str, float] = {}

    def __contains__(self, nonce: object) -> bool:
        return nonce in self._expiry

    def __len__(self) -> int:
        return len(self._expiry)

    def prune(self, now: float) -> None:
        for nonce in [n for n, until in self._expiry.items() if until < now]:
            del self._expiry[nonce]

    def add(self, nonce: str, ts: int, now: float) -> None:
        self.prune(now)
        if len(self._expiry) >= self.max_entries:
            raise WebhookRejected("too many requests in the window (nonce store full)")
        self._expiry[nonce] = ts + self.window_s


def verify_webhook(headers: Mapping[str, str], body: bytes, secret: str | bytes, now: float,
                   seen_nonces: NonceStore | MutableSet[str] | MutableMapping[str, float], *,
                   window_s: float = WINDOW_S) -> bool:
    """The receiver's check. Returns True, or raises :class:`WebhookRejected`: missing headers,
    a timestamp that is not an integer or is outside ±``window_s`` of ``now``, a malformed nonce,
    a bad signature, or a nonce seen before (remembered only once everything else checks out).
    Pass a :class:`NonceStore` so remembered nonces expire with the window."""
    low = {k.lower(): v for k, v in headers.items()}
    ts, nonce, sig = (low.get(h.lower()) for h in (HEADER_TS, HEADER_NONCE, HEADER_SIG))
    if not ts or not nonce or not sig:
        raise WebhookRejected("missing signature headers")
    if not _TS.fullmatch(ts):
        raise WebhookRejected("timestamp is not an integer")
    ts_val = int(ts)
    if not (math.isfinite(now) and abs(now - ts_val) <= window_s):
        raise WebhookRejected("timestamp outside the allowed window")
    if not _NONCE.fullmatch(nonce):
        raise WebhookRejected("malformed nonce")
    expected = "v1=" + sign(secret, ts, nonce, body)
    if not hmac.compare_digest(expected.encode(), sig.encode()):
        raise WebhookRejected("bad signature")
    if nonce in seen_nonces:
        raise WebhookRejected("nonce already used (replay)")
    if isinstance(seen_nonces, NonceStore):
        seen_nonces.add(nonce, ts_val, now)
    elif isinstance(seen_nonces, MutableMapping):
        seen_nonces[nonce] = float(ts_val)
    else:
        seen_nonces.add(nonce)
    return True


# -- webhook sender ---------------------------------------------------------------------------------------


DeliveryStatus = Literal["queued", "delivered", "failed", "abandoned", "unknown"]
"""What became of a notification on an asynchronous channel: handed to the sender thread; the
receiver answered 2xx; it refused or every attempt failed; never attempted before shutdown; a
request was still in flight at shutdown (it may or may not have arrived)."""

OnResult = Callable[[list[Notification], DeliveryStatus, str], None]


class WebhookNotifier:
    """POSTs batches of notifications to a URL from a background thread. ``send`` only queues:
    the outcome of each batch goes to ``on_result`` when it is known."""

    channel = "webhook"
    asynchronous = True

    MAX_QUEUED = 1000
    """Notifications waiting to be sent at most; beyond it the oldest waiting one is dropped."""

    def __init__(self, url: str, secret: str, *, batch_window_s: float = 0.5, backoff_s: list[float] | None = None,
                 timeout_s: float = 3.0, close_timeout_s: float = 2.0, on_result: OnResult | None = None,
                 sleep: Callable[[float], None] | None = None, max_queued: int | None = None) -> None:
        self.url = url
        self.secret = secret
        self.batch_window_s = batch_window_s
        self.backoff_s = list(backoff_s if backoff_s is not None else [0.5, 2.0, 8.0])
        self.timeout_s = timeout_s
        self.close_timeout_s = close_timeout_s
        self.on_result = on_result
        self._sleep = sleep
        self.max_queued = max(1, max_queued if max_queued is not None else self.MAX_QUEUED)
        self.dropped = 0
        """Notifications dropped because the queue was full (each reported ``abandoned``)."""
        self._q = _DropOldest(self.max_queued)
        self._idle = threading.Event()
        self._idle.set()
        self._closing = threading.Event()
        self._deadline = math.inf
        self._pending = 0
        self._inflight: list[Notification] = []
        self._lock = threading.Lock()
        self.attempts: list[tuple[int, int | str]] = []
        """(batch size, HTTP status or error) per attempt, for tests and diagnostics."""
        self._thread = threading.Thread(target=self._loop, name="webhook", daemon=True)
        self._thread.start()

    def send(self, n: Notification) -> bool:
        """Queue ``n``; True means queued, not delivered (``on_result`` says what happened)."""
        if self._closing.is_set():
            self._report([n], "abandoned", "the notifier was closing")
            return False
        with self._lock:
            self._pending += 1
            self._idle.clear()
        old = self._q.put(n)
        if old is not None:  # the queue was full: the oldest waiting one goes, never the caller's time
            with self._lock:
                self.dropped += 1
                dropped = self.dropped
                self._pending -= 1
            logger.warning("webhook queue full (%d waiting): dropped the oldest notification (%d dropped so far)",
                           self.max_queued, dropped)
            self._report([old], "abandoned", f"dropped: the webhook queue was full ({self.max_queued} waiting; "
                         f"{dropped} dropped so far); see the journal")
        return True

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until everything queued was sent (or given up on)."""
        return self._idle.wait(timeout_s)

    def close(self, timeout_s: float | None = None) -> None:
        """Deliver what is queued within ``timeout_s`` (default ``close_timeout_s``), without further
        retries, then give up: never-sent notifications are reported ``abandoned``, a request still
        in flight ``unknown``. Returns within the timeout however dead or slow the endpoint is."""
        budget = self.close_timeout_s if timeout_s is None else timeout_s
        self._deadline = time.monotonic() + budget
        self._closing.set()
        self._q.put(None)
        self._thread.join(budget)
        with self._lock:
            inflight, self._inflight = self._inflight, []
        left: list[Notification] = []
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                left.append(item)
        if inflight and self._thread.is_alive():
            self._report(inflight, "unknown", f"a request was in flight when the notifier closed ({budget:g}s)")
        if left:
            self._report(left, "abandoned", "not sent before the notifier closed")

    def _report(self, batch: list[Notification], status: DeliveryStatus, why: str) -> None:
        if self.on_result is not None:
            try:
                self.on_result(batch, status, why)
            except Exception:  # noqa: BLE001 - a broken recorder must not kill the sender
                logger.warning("recording a webhook outcome failed", exc_info=True)

    def _loop(self) -> None:
        while True:
            first = self._q.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + (0 if self._closing.is_set() else self.batch_window_s)
            stop = False
            while True:
                left = deadline - time.monotonic()
                try:
                    nxt = self._q.get(timeout=left) if left > 0 else self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            with self._lock:
                self._inflight = batch
            ok, why = self._post(batch)
            with self._lock:
                reported = bool(self._inflight)  # close() took it over when it timed out
                self._inflight = []
            if reported:
                self._report(batch, "delivered" if ok else "failed", why)
            with self._lock:
                self._pending -= len(batch)
                if self._pending <= 0:
                    self._pending = 0
                    self._idle.set()
            if stop:
                return

    def _wait(self, seconds: float) -> bool:
        """Back off; False when closing (no more retries then)."""
        if self._sleep is not None:
            self._sleep(seconds)
            return not self._closing.is_set()
        return not self._closing.wait(seconds)

    def _post(self, batch: list[Notification]) -> tuple[bool, str]:
        body = json.dumps({"batch_id": new_id("bat_"), "notifications": [redact_data(n.model_dump(mode="json"))
                                                                          for n in batch]},
                          ensure_ascii=False, separators=(",", ":")).encode()
        why = ""
        for attempt in range(len(self.backoff_s) + 1):
            if attempt and (self._closing.is_set() or not self._wait(self.backoff_s[attempt - 1])):
                return False, (why + "; " if why else "") + "no more retries: the notifier is closing"
            timeout = min(self.timeout_s, max(0.1, self._deadline - time.monotonic()))
            req = urllib.request.Request(self.url, data=body, method="POST",
                                         headers=signed_headers(self.secret, body))
            try:
                with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - user-set URL
                    self.attempts.append((len(batch), resp.status))
                    return True, f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:
                self.attempts.append((len(batch), exc.code))
                why = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    return False, why  # the receiver refused it: retrying will not help
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                self.attempts.append((len(batch), type(exc).__name__))
                why = f"{type(exc).__name__}: {exc}"
        return False, why


class _DropOldest:
    """A FIFO of notifications for the sender thread that never blocks the one putting: at most
    ``maxlen`` notifications wait; putting one more drops (and returns) the oldest waiting. ``None``
    (the closing marker) is always kept."""

    def __init__(self, maxlen: int) -> None:
        self.maxlen = maxlen
        self._items: collections.deque[Notification | None] = collections.deque()
        self._count = 0
        self._cond = threading.Condition()

    def put(self, item: Notification | None) -> Notification | None:
        dropped: Notification | None = None
        with self._cond:
            if item is not None and self._count >= self.maxlen:
                for k, old in enumerate(self._items):
                    if old is not None:
                        del self._items[k]
                        self._count -= 1
                        dropped = old
                        break
            self._items.append(item)
            if item is not None:
                self._count += 1
            self._cond.notify()
        return dropped

    def get(self, timeout: float | None = None) -> Notification | None:
        """The oldest item, waiting up to ``timeout`` (None: for ever); :class:`queue.Empty` when none came."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise queue.Empty
                self._cond.wait(left)
            item = self._items.popleft()
            if item is not None:
                self._count -= 1
            return item

    def get_nowait(self) -> Notification | None:
        with self._cond:
            if not self._items:
                raise queue.Empty
            item = self._items.popleft()
            if item is not None:
                self._count -= 1
            return item

    def qsize(self) -> int:
        with self._cond:
            return self._count


class NotificationHub:
    """Fans a notification out to every channel and records what happened on each: synchronous
    channels' result at once, asynchronous ones (the webhook) as ``queued`` and then their
    outcome when the sender knows it."""

    def __init__(self, channels: list[Any], record: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.channels = channels
        self.record = record
        for ch in channels:
            if getattr(ch, "asynchronous", False) and getattr(ch, "on_result", None) is None:
                ch.on_result = self._outcome_recorder(ch.channel)

    def _payload(self, n: Notification, channel: str, status: str, ok: bool | None, **extra: Any) -> dict[str, Any]:
        suffix = "" if status in ("sent", "queued") else f".{status}"
        return {"notification_id": f"{n.notification_id}.{channel}{suffix}", "channel": channel,
                "title": n.title, "body": n.body, "ok": ok, "status": status, "kind": n.kind,
                "next_action": n.next_action, "pane_id": n.pane_id} | extra

    def _outcome_recorder(self, channel: str) -> OnResult:
        def record(batch: list[Notification], status: DeliveryStatus, why: str) -> None:
            if self.record is None:
                return
            for n in batch:
                self.record(self._payload(n, channel, status, status == "delivered", why=why))

        return record

    def notify(self, n: Notification) -> None:
        for ch in self.channels:
            asynchronous = getattr(ch, "asynchronous", False)
            ok = False
            try:
                ok = bool(ch.send(n))
            except Exception:  # noqa: BLE001 - one broken channel must not stop the others
                logger.warning("notification channel %s failed", ch.channel, exc_info=True)
                ok = False
            if self.record is not None and not (asynchronous and not ok):  # a refused send reported itself
                if asynchronous:
                    self.record(self._payload(n, ch.channel, "queued", None))
                else:
                    self.record(self._payload(n, ch.channel, "sent" if ok else "failed", ok))

    def close(self) -> None:
        """Close every channel (the webhook within its bounded ``close_timeout_s``)."""
        for ch in self.channels:
            close = getattr(ch, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing one channel must not stop the others
                    logger.warning("closing notification channel %s failed", ch.channel, exc_info=True)


def offpane_channels(settings: Any) -> list[Any]:
    """The channels that reach a human away from the pane: the JSONL file and, when configured,
    the webhook (the runner shows pauses in the pane itself)."""
    return default_channels(settings, None)


def default_channels(settings: Any, surface: Any | None, *, display_ms: int = 10_000,
                     display: bool = True) -> list[Any]:
    """tmux (when there is a surface and the policy shows messages), the JSONL file, the
    webhook when ``SUPERVISOR_WEBHOOK_URL``/``SUPERVISOR_WEBHOOK_SECRET`` are set, and every
    configured plugin channel (:mod:`supervisor.plugins`)."""
    chans: list[Any] = []
    if surface is not None and display:
        chans.append(TmuxNotifier(surface, display_ms))
    chans.append(JsonlNotifier(settings.notifications_path))
    url = os.environ.get("SUPERVISOR_WEBHOOK_URL")
    secret = os.environ.get("SUPERVISOR_WEBHOOK_SECRET")
    if url and secret:
        chans.append(WebhookNotifier(url, secret))
    from supervisor.plugins import load_notifier_plugins

    chans.extend(load_notifier_plugins(settings)[0])
    return chans
