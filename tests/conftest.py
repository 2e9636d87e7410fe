"""Fixtures shared by every test: a private tmux server per test, a private supervisor home."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from libtmux import Server

from supervisor.surfaces.tmux import TmuxSurface
from tests.helpers import WebhookReceiver

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def sv_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private SUPERVISOR_HOME (journals + warehouse) for one test."""
    home = tmp_path / "svhome"
    home.mkdir()
    monkeypatch.setenv("SUPERVISOR_HOME", str(home))
    monkeypatch.delenv("SUPERVISOR_WAREHOUSE", raising=False)
    monkeypatch.delenv("SUPERVISOR_POLICY", raising=False)
    return home


@pytest.fixture
def tmux_socket(server: Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private tmux server socket name (``tmux -L NAME``) for one test: libtmux's pytest plugin
    ``server`` fixture (a unique socket; after the test the server is killed and its socket file
    removed). The supervisor talks to it through ``SUPERVISOR_TMUX_SOCKET``, as a user's would."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: run `apt-get install -y tmux` (make test does it in CI)")
    assert server.socket_name
    monkeypatch.setenv("SUPERVISOR_TMUX_SOCKET", server.socket_name)
    return server.socket_name


@pytest.fixture
def surface(tmux_socket: str) -> Iterator[TmuxSurface]:
    """The real tmux surface on this test's private server, closed after the test."""
    s = TmuxSurface(tmux_socket)
    yield s
    s.close()


@pytest.fixture
def harness(tmux_socket: str, sv_home: Path) -> Iterator[Callable[..., Any]]:
    """``harness(**kw)`` starts a :class:`tests.live_helpers.LiveHarness` (the real supervisor on this
    test's tmux server and home); every one started is stopped after the test."""
    from tests.live_helpers import LiveHarness

    made: list[LiveHarness] = []

    def make(**kw: Any) -> LiveHarness:
        h = LiveHarness(tmux_socket, sv_home, **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.stop()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    """A real loopback webhook receiver (:class:`tests.helpers.WebhookReceiver`), closed after the test."""
    r = WebhookReceiver()
    yield r
    r.close()


@pytest.fixture
def cli_env(sv_home: Path) -> dict[str, str]:
    """Environment for running the real `supervisor` CLI in a subprocess."""
    env = dict(os.environ)
    env["SUPERVISOR_HOME"] = str(sv_home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def live_env(cli_env: dict[str, str], tmux_socket: str) -> dict[str, str]:
    """:func:`cli_env` for commands that drive this test's private tmux server."""
    cli_env["SUPERVISOR_TMUX_SOCKET"] = tmux_socket
    return cli_env


def run_cli(*args: str, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `python -m supervisor ARGS` as a real subprocess: for what needs a process of its own
    (signals, a detached or killed supervisor, the real entry point). Everything else uses
    :func:`invoke_cli`."""
    return subprocess.run([sys.executable, "-m", "supervisor", *args], capture_output=True, text=True,
                          env=env, input=input, timeout=timeout, cwd=REPO)


def invoke_cli(*args: str, env: dict[str, str] | None = None,
               input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `supervisor` CLI in this process through click's ``CliRunner``, from the repository
    folder as :func:`run_cli` does, with the same result shape (returncode, stdout, stderr apart)
    but without starting an interpreter (0.5-1 s a call on a busy machine)."""
    from click.testing import CliRunner

    from supervisor.cli import main

    before = os.getcwd()
    os.chdir(REPO)
    try:
        result = CliRunner().invoke(main, list(args), env=env, input=input, catch_exceptions=False)
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["supervisor", *args], result.exit_code, result.stdout, result.stderr)
