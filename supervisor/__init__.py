"""paneward: a supervisor for AI coding agents running in tmux.

The import package keeps the design card's name, ``supervisor``; the distribution
is ``paneward`` because ``supervisor`` (supervisord) is taken on PyPI. Install it into
its own virtual environment so the two never meet.
"""

from __future__ import annotations

__version__ = "0.1.0"
