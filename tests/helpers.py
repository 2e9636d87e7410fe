"""Shared test helpers: wait with a deadline, never with bare sleeps; a real loopback webhook
receiver; a run journaled as the runner journals it."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.ids import new_id
from supervisor.journal import Journal
from supervisor.models import RunState
from supervisor.policy import Policy
from supervisor.screen import make_screen
from supervisor.settings import Settings
from supervisor.workflow.notify import WebhookRejected, verify_webhook

T = TypeVar("T")

CLAUDE_BOX_DIALOG = """\
⏺ Bash({cmd})

╭──────────────────────────────────────────────────────────────────────────────╮
│ Bash command                                                                 │
│                                                                              │
│   {cmd}
│                                                                              │
│ Do you want to proceed?                                                      │
│ ❯ 1. Yes                                                                     │
│   2. No, and tell Claude what to do differently (esc)                        │
╰──────────────────────────────────────────────────────────────────────────────╯
"""
"""A Claude Code Bash dialog in its boxed layout, ``{cmd}`` on its own row (the box's right edge is not
drawn on that row, so any command fits)."""


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` (``24m``) mounted at ``path`` (made if missing), unmounted afterwards: a
    disk that fills for real. Skips the test where mounting is not allowed (not root)."""
    import pytest

    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): run as root")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


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


def record_run(settings: Settings, policy: Policy, screens: list[str], *, human: str | None = None,
               shadows: tuple[Policy, ...] = (), t0: float = 1_700_000_000.0, outcome: str | None = "finished",
               extra: dict[str, Any] | None = None, width: int = 100) -> str:
    """One run journaled as the runner does, with no tmux: run_started with its policies, each
    observation with its screen (``width`` columns) and clock, the decision, shadow decisions from
    each shadow's own classification, a pause on escalation and (``human``) the human's resume
    saying what they chose, run_ended (``outcome`` None: a run still going)."""
    run_id = new_id("run_")
    j = Journal(settings.journal_path(run_id), run_id, fsync=False)
    pols = {p.policy_id: p.canonical() for p in (policy, *shadows)}
    j.append("run_started", {"policy_id": policy.policy_id, "policies": pols, "agent": "claude",
                             "shadow_policy_ids": [p.policy_id for p in shadows]}, at=t0)
    t = t0
    rs = RunState(run_id=run_id, now=t0, started_at=t0, last_output_at=t0)
    for text in screens:
        t += 5
        screen = make_screen(text, width=width, height=40)
        obs = classify(screen, policy)
        oid = new_id("obs_")
        obs.observation_id = oid
        rs.now = rs.last_output_at = t
        d = decide(obs, rs, policy)
        d.trigger_id = oid
        j.append("observation", {"observation": obs.model_dump(mode="json"), "now": t,
                                 "screen": {"screen_hash": screen.screen_hash, "text": screen.text, "width": width,
                                            "height": 40, "title": "", "current_command": "", "dead": False}},
                 at=t, event_id=oid)
        j.append("decision", {"decision": d.model_dump(mode="json"), "now": t}, at=t + 0.01)
        for sh in shadows:
            sobs = classify(screen, sh)
            sd = decide(sobs, rs, sh)
            sd.trigger_id = oid
            summary = {"state": sobs.state, "agent": sobs.agent,  # the runner journals a summary: no options
                       "prompt": None if sobs.prompt is None else {
                           "kind": sobs.prompt.kind, "signature": sobs.prompt.signature,
                           "question": sobs.prompt.question, "risk": sobs.prompt.risk.model_dump(mode="json")}}
            j.append("shadow_decision", {"decision": sd.model_dump(mode="json"), "shadow_policy_id": sh.policy_id,
                                         "acting_policy_id": policy.policy_id, "observation": summary}, at=t + 0.02)
        if d.kind == "escalate":
            j.append("pause", {"pause_reason": d.reason, "signature": d.signature}, at=t + 0.03)
            if human is not None:
                j.append("resume", {"by": "human", "waited_s": 4.0, "human_keys": ["1"], "selected": human,
                                    "signature": d.signature, "was": d.reason}, at=t + 4)
    if outcome is not None:
        j.append("run_ended", {"outcome": outcome, **(extra or {})}, at=t + 5)
    j.close()
    return run_id
