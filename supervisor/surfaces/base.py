"""The Surface protocol: what the runner needs from a terminal, and nothing more.

A surface reads a pane's screen, sends keys, pastes text, shows a message to the human,
describes the pane, and delivers output events. The runner never imports libtmux; it sees
these small value types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

OutputKind = Literal["output", "pane_dead", "pane_gone", "panes_changed", "server_gone", "tick", "requests"]
"""What an event says: the pane printed something; the pane's program exited (pane kept by
``remain-on-exit``); the pane no longer exists; panes were added or removed (rescan); the tmux
server (or control client) is gone; a poll tick (``--poll`` mode); a request for the pane's run
arrived from another process (``supervisor runs task|stop|resume``)."""


@dataclass(frozen=True)
class OutputEvent:
    """One event from a surface, delivered on the surface's reader thread."""

    kind: OutputKind
    pane_id: str | None
    at: float
    """``time.time()`` when the event was read."""
    nbytes: int = 0
    """Bytes of output carried (``output`` events)."""
    hint: bool = False
    """The output may have completed a dialog's frame (it drew a row the agent ends its dialogs
    with: see ``DialogFrame.footer``), so the screen is worth reading before the settle time."""


@dataclass(frozen=True)
class PaneInfo:
    """What tmux knows about a pane."""

    pane_id: str
    session: str
    window_id: str = ""
    title: str = ""
    current_command: str = ""
    dead: bool = False
    dead_status: int | None = None
    """The exit status of the pane's program once it is dead (``remain-on-exit``)."""
    width: int = 80
    height: int = 24
    cursor_x: int | None = None
    cursor_y: int | None = None
    pid: int | None = None
    in_mode: bool = False
    """The pane shows copy mode or another tmux mode (the screen is not the program's)."""
    current_path: str = ""
    history_size: int = 0
    """Lines of history above the visible area."""
    tty: str = ""
    """The pane's terminal device (``/dev/pts/N``), where tmux says."""


@dataclass(frozen=True)
class RawScreen:
    """A capture: raw text plus the pane facts ``make_screen`` needs."""

    text: str
    """The visible rows as captured: with SGR escapes from tmux (``capture-pane -e``), so
    ``make_screen`` sees reverse-video highlights. Use :attr:`plain` to search the text."""
    info: PaneInfo
    scrollback: str = ""
    captured_at: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)
    version: int | None = None
    """How many output notifications of the pane this capture reflects (control mode: tmux answers
    a capture behind the output it has drawn); None when unknown (``--poll``, no control client).
    The surface's ``output_version`` still equal to it later means nothing was drawn since."""

    @property
    def plain(self) -> str:
        """The visible text without escapes (what a human reads)."""
        from supervisor.screen import normalize

        return normalize(self.text)


OutputCallback = Callable[[OutputEvent], None]


@runtime_checkable
class Surface(Protocol):
    """A terminal the supervisor can watch and type into."""

    def capture(self, pane_id: str, *, scrollback: int = 0) -> RawScreen:
        """Read the visible screen (plus ``scrollback`` lines of history) and the pane's facts."""
        ...

    def pane_info(self, pane_id: str) -> PaneInfo:
        ...

    def send_keys(self, pane_id: str, keys: list[str]) -> None:
        """Send tmux key names (``1``, ``y``, ``Enter``, ``Down``, ``Escape``) in order."""
        ...

    def paste_text(self, pane_id: str, text: str) -> None:
        """Type literal text into the pane (no key-name lookup)."""
        ...

    def paste_buffer(self, pane_id: str, text: str, *, submit: bool = False) -> None:
        """Paste text as one paste (bracketed when the program asked for it): multi-line text
        arrives as text, its newlines do not submit it; ``submit``: then Enter, in the same
        request to the terminal (never the paste without it)."""
        ...

    def display_message(self, pane_id: str, text: str, *, ms: int = 10_000) -> None:
        """Show ``text`` to whoever looks at the pane (tmux status line)."""
        ...

    def watch(self, pane_ids: list[str], callback: OutputCallback) -> None:
        """Deliver output events for these panes to ``callback`` (from a reader thread)."""
        ...

    def close(self) -> None:
        ...
