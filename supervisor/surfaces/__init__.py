"""Surfaces: the only code that talks to the agent's terminal.

``base`` defines the :class:`~supervisor.surfaces.base.Surface` protocol; ``tmux`` implements
it with libtmux (sessions, panes, send-keys, capture-pane, display-message); ``control`` is a
tmux control-mode client that turns ``%output`` notifications into per-pane events, so the
supervisor reacts within milliseconds and uses no CPU while panes are quiet.
"""

from __future__ import annotations

from supervisor.surfaces.base import OutputEvent, PaneInfo, RawScreen, Surface

__all__ = ["OutputEvent", "PaneInfo", "RawScreen", "Surface"]
