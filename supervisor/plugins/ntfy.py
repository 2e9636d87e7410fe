"""Example notification plugin: push pauses and escalations to an ntfy topic (https://ntfy.sh or a
self-hosted server).

Configured by ``SUPERVISOR_NTFY_URL`` (the topic URL, e.g. ``https://ntfy.sh/my-agents``) and,
for a protected topic, ``SUPERVISOR_NTFY_TOKEN``. Registered through this package's own
``paneward.notifiers`` entry point, exactly as a third-party plugin registers in its
``pyproject.toml``::

    [project.entry-points."paneward.notifiers"]
    ntfy = "supervisor.plugins.ntfy:make_notifier"
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from typing import Any

from supervisor.redact import redact

TIMEOUT_S = 3.0
_PRIORITY = {"escalation": "high", "pause": "high", "review_needed": "default", "verifier_failed": "default",
             "finished": "low", "resumed": "low", "info": "low"}


class NtfyNotifier:
    channel = "ntfy"

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.token = token

    def send(self, n: Any) -> bool:
        body = redact(n.body or n.title)
        if n.next_action:
            body += f"\nnext: {redact(n.next_action)}"
        req = urllib.request.Request(self.url, data=body.encode("utf-8"), method="POST")
        # ntfy reads the title from a header: headers are latin-1, so anything else is replaced
        req.add_header("Title", redact(n.title).encode("latin-1", "replace").decode("latin-1"))
        req.add_header("Priority", _PRIORITY.get(n.kind, "default"))
        req.add_header("Tags", f"paneward,{n.kind}")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:  # noqa: S310 - the user's own URL
                return 200 <= resp.status < 300
        except (urllib.error.URLError, OSError, ValueError):
            return False


def make_notifier(settings: Any) -> NtfyNotifier | None:
    """The entry point: a notifier when ``SUPERVISOR_NTFY_URL`` is set, else None."""
    url = os.environ.get("SUPERVISOR_NTFY_URL")
    if not url:
        return None
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"SUPERVISOR_NTFY_URL must be an http(s) URL, not {url!r}")
    return NtfyNotifier(url, os.environ.get("SUPERVISOR_NTFY_TOKEN") or None)
