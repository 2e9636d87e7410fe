"""Notification channels as plugins: a channel such as Slack, ntfy or a chat webhook is a small
package that declares an entry point in the ``paneward.notifiers`` group.

The interface (see ``docs/plugins.md``): the entry point names a callable ``factory(settings)``
that returns a notifier, or ``None`` when the channel is not configured (its environment variable
is unset). A notifier has a ``channel`` name and ``send(notification) -> bool``; ``send`` must
return within a few seconds and never raise (a failure is ``False``: the supervisor journals it
and goes on). It may have ``close()``. The notification is a
:class:`supervisor.workflow.notify.Notification` (kind, title, body, next_action, run and pane).

Built in: tmux ``display-message``, the JSONL file and the signed webhook. Example plugin:
:mod:`supervisor.plugins.ntfy` (registered by this package itself).
A plugin that fails to load or to build is reported (``supervisor doctor``, the log) and left
out; it never stops supervision.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

logger = logging.getLogger(__name__)

NOTIFIER_GROUP = "paneward.notifiers"


@dataclass(frozen=True)
class PluginStatus:
    """What loading one plugin gave: a channel, nothing (not configured), or a problem."""

    name: str
    value: str
    """The entry point's target (``module:factory``)."""
    channel: str | None = None
    problem: str | None = None


def load_notifier_plugins(settings: Any) -> tuple[list[Any], list[PluginStatus]]:
    """The configured plugin channels, and the status of every plugin found."""
    channels: list[Any] = []
    statuses: list[PluginStatus] = []
    for ep in sorted(entry_points(group=NOTIFIER_GROUP), key=lambda e: e.name):
        try:
            factory = ep.load()
            notifier = factory(settings)
            if notifier is not None and (not isinstance(getattr(notifier, "channel", None), str)
                                         or not callable(getattr(notifier, "send", None))):
                raise TypeError("the factory returned something without `channel` and `send`")
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, never fatal
            logger.warning("notification plugin %s (%s) failed to load: %s", ep.name, ep.value, exc)
            statuses.append(PluginStatus(ep.name, ep.value, problem=f"{type(exc).__name__}: {exc}"))
            continue
        if notifier is not None:
            channels.append(notifier)
        statuses.append(PluginStatus(ep.name, ep.value, channel=getattr(notifier, "channel", None)))
    return channels, statuses
