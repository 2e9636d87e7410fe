"""Notifications: tell a human the run needs them (paused, escalated, held for review, done).

Three channels: ``tmux display-message`` on the pane (through the Surface), a JSONL file
(``Settings.notifications_path``), and a signed webhook. The webhook POSTs a JSON batch with
``X-Supervisor-Timestamp``, ``X-Supervisor-Nonce`` and ``X-Supervisor-Signature`` =
hex HMAC-SHA256 over ``timestamp.nonce.body``; :func:`verify_webhook` is the receiver's side
(±5 minute window, reused nonces rejected). Bursts within ``batch_window_s`` go in one POST;
failures (5xx, connection errors) are retried with backoff, each attempt freshly signed.
Sending happens on a background thread: a slow or dead endpoint never stalls supervision.

Configuration: ``SUPERVISOR_WEBHOOK_URL`` and ``SUPERVISOR_WEBHOOK_SECRET``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import queue
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
        text = f"supervisor: {n.title}" + (f" — next: {n.next_action}" if n.next_action else "")
        try:
            self.surface.display_message(n.pane_id, redact(text).replace("#", "##"), ms=self.ms)
        except Exception:  # noqa: BLE001 - a missing client or pane is not an error worth crashing for
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


def sign(secret: str | bytes, timestamp: str, nonce: str, body: bytes) -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, timestamp.encode() + b"." + nonce.encode() + b"." + body, hashlib.sha256).hexdigest()


def signed_headers(secret: str | bytes, body: bytes, *, now: float | None = None,
                   nonce: str | None = None) -> dict[str, str]:
    ts = str(int(time.time() if now is None else now))
    nonce = nonce or uuid.uuid4().hex
    return {HEADER_TS: ts, HEADER_NONCE: nonce, HEADER_SIG: "sha256=" + sign(secret, ts, nonce, body),
            "Content-Type": "application/json"}


def verify_webhook(headers: Mapping[str, str], body: bytes, secret: str | bytes, now: float,
                   seen_nonces: MutableSet[str] | MutableMapping[str, float], *, window_s: float = WINDOW_S) -> bool:
    """The receiver's check. Returns True, or raises :class:`WebhookRejected`: missing headers,
    a timestamp outside ±``window_s`` of ``now``, a bad signature, or a nonce seen before (the
    nonce is remembered only once everything else checks out)."""
    low = {k.lower(): v for k, v in headers.items()}
    ts, nonce, sig = (low.get(h.lower()) for h in (HEADER_TS, HEADER_NONCE, HEADER_SIG))
    if not ts or not nonce or not sig:
        raise WebhookRejected("missing signature headers")
    try:
        ts_val = float(ts)
    except ValueError as exc:
        raise WebhookRejected("timestamp is not a number") from exc
    if abs(now - ts_val) > window_s:
        raise WebhookRejected("timestamp outside the allowed window")
    expected = "sha256=" + sign(secret, ts, nonce, body)
    if not hmac.compare_digest(expected, sig if sig.startswith("sha256=") else "sha256=" + sig):
        raise WebhookRejected("bad signature")
    if nonce in seen_nonces:
        raise WebhookRejected("nonce already used (replay)")
    if isinstance(seen_nonces, MutableMapping):
        seen_nonces[nonce] = ts_val
    else:
        seen_nonces.add(nonce)
    return True


# -- webhook sender ---------------------------------------------------------------------------------------


class WebhookNotifier:
    """POSTs batches of notifications to a URL from a background thread."""

    channel = "webhook"

    def __init__(self, url: str, secret: str, *, batch_window_s: float = 0.5, backoff_s: list[float] | None = None,
                 timeout_s: float = 5.0, on_result: Callable[[list[Notification], bool, str], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.url = url
        self.secret = secret
        self.batch_window_s = batch_window_s
        self.backoff_s = list(backoff_s if backoff_s is not None else [0.5, 2.0, 8.0])
        self.timeout_s = timeout_s
        self.on_result = on_result
        self._sleep = sleep
        self._q: queue.Queue[Notification | None] = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()
        self.attempts: list[tuple[int, int | str]] = []
        """(batch size, HTTP status or error) per attempt, for tests and diagnostics."""
        self._thread = threading.Thread(target=self._loop, name="webhook", daemon=True)
        self._thread.start()

    def send(self, n: Notification) -> bool:
        with self._lock:
            self._pending += 1
            self._idle.clear()
        self._q.put(n)
        return True

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until everything queued was sent (or given up on)."""
        return self._idle.wait(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        self.flush(timeout_s)
        self._q.put(None)
        self._thread.join(timeout_s)

    def _loop(self) -> None:
        while True:
            first = self._q.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self.batch_window_s
            stop = False
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    nxt = self._q.get(timeout=left)
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            ok, why = self._post(batch)
            if self.on_result is not None:
                with contextlib.suppress(Exception):
                    self.on_result(batch, ok, why)
            with self._lock:
                self._pending -= len(batch)
                if self._pending <= 0:
                    self._pending = 0
                    self._idle.set()
            if stop:
                return

    def _post(self, batch: list[Notification]) -> tuple[bool, str]:
        body = json.dumps({"batch_id": new_id("bat_"), "notifications": [redact_data(n.model_dump(mode="json"))
                                                                          for n in batch]},
                          ensure_ascii=False, separators=(",", ":")).encode()
        why = ""
        for attempt in range(len(self.backoff_s) + 1):
            if attempt:
                self._sleep(self.backoff_s[attempt - 1])
            req = urllib.request.Request(self.url, data=body, method="POST",
                                         headers=signed_headers(self.secret, body))
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 - user-set URL
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


class NotificationHub:
    """Fans a notification out to every channel and records each delivery."""

    def __init__(self, channels: list[Any], record: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.channels = channels
        self.record = record

    def notify(self, n: Notification) -> None:
        for ch in self.channels:
            ok = False
            try:
                ok = bool(ch.send(n))
            except Exception:  # noqa: BLE001 - one broken channel must not stop the others
                ok = False
            if self.record is not None:
                self.record({"notification_id": f"{n.notification_id}.{ch.channel}", "channel": ch.channel,
                             "title": n.title, "body": n.body, "ok": ok, "kind": n.kind,
                             "next_action": n.next_action, "pane_id": n.pane_id})

    def close(self) -> None:
        for ch in self.channels:
            close = getattr(ch, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()


def default_channels(settings: Any, surface: Any | None, *, display_ms: int = 10_000,
                     display: bool = True) -> list[Any]:
    """tmux (when there is a surface and the policy shows messages), the JSONL file, and the
    webhook when ``SUPERVISOR_WEBHOOK_URL``/``SUPERVISOR_WEBHOOK_SECRET`` are set."""
    chans: list[Any] = []
    if surface is not None and display:
        chans.append(TmuxNotifier(surface, display_ms))
    chans.append(JsonlNotifier(settings.notifications_path))
    url = os.environ.get("SUPERVISOR_WEBHOOK_URL")
    secret = os.environ.get("SUPERVISOR_WEBHOOK_SECRET")
    if url and secret:
        chans.append(WebhookNotifier(url, secret))
    return chans
