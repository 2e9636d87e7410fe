"""The ACP surface: an agent that speaks the Agent Client Protocol (JSON-RPC over stdio), started
as the supervisor's own subprocess.

Where the tmux surface reads a screen and types keys, this one talks to the agent in structured
messages: it starts the agent, initializes the connection, opens a session in the working
directory, sends prompts, and passes everything the agent sends on to a handler as plain
JSON-able dicts in ACP's own camelCase (never SDK models): each ``session/update``, and each
``session/request_permission``, which the handler answers with one of the offered option ids (or
None: cancelled). The runner (:mod:`supervisor.acp_runner`) decides; this module only carries.

Only this module imports the ``acp`` package (the ``agent-client-protocol`` distribution).

Only JSON objects on the agent's stdout reach the protocol: anything else an agent (or a library
it loads) prints there is written to its log instead, so a stray banner or a bare JSON number
neither stops the connection nor prints a traceback.

The supervisor offers the agent no file system and no terminal of its own: the agent reads,
writes and runs commands itself and asks permission for what its settings say to ask, exactly as
on a screen. The agent's stderr goes to a log file (its tail says why an agent died), redacted
line by line on the way like everything else the supervisor stores. The agent
and everything it started are ended with the run: an agent over stdio has nobody else to talk to
(Gemini CLI re-runs itself as a child process, which would otherwise outlive it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil
from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, spawn_stdio_transport, text_block
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
)
from pydantic import BaseModel

from supervisor import __version__
from supervisor.errors import AgentProtocolError, SurfaceError
from supervisor.redact import redact

log = logging.getLogger(__name__)

UpdateHandler = Callable[[dict[str, Any]], Awaitable[None]]
PermissionHandler = Callable[[dict[str, Any]], Awaitable[str | None]]

STDERR_DRAIN_S = 1.0
"""After the agent exits, how long its stderr may take to reach the log."""
STDERR_TAIL_BYTES = 8192
"""How much of the end of the agent's stderr is read when it exits."""
SHUTDOWN_S = 2.0
"""How long the agent has to exit once its stdin is closed (then SIGTERM, then SIGKILL)."""
NOISE_SHOWN = 300
"""Characters of a line that is not a protocol message kept in the agent's log."""


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    """One line of any length (b"" at the end of the stream)."""
    chunks: list[bytes] = []
    try:
        while True:
            try:
                chunks.append(await reader.readuntil(b"\n"))
                return b"".join(chunks)
            except asyncio.LimitOverrunError as exc:
                chunks.append(await reader.readexactly(exc.consumed))
    except asyncio.IncompleteReadError as exc:
        chunks.append(exc.partial)
        return b"".join(chunks)


def is_message(line: bytes) -> bool:
    """Whether a line of the agent's stdout is a JSON-RPC message (a JSON object); blank lines pass
    too (the protocol's reader skips them)."""
    text = line.strip()
    if not text:
        return True
    if not text.startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _plain(value: Any) -> Any:
    """An SDK model (or a list of them) as JSON-able data with ACP's field names."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class _Client:
    """The client side of the connection: what the agent may ask of the supervisor."""

    def __init__(self, on_update: UpdateHandler, on_permission: PermissionHandler) -> None:
        self._on_update = on_update
        self._on_permission = on_permission

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await self._on_update({"sessionId": session_id} | _plain(update))

    async def request_permission(self, options: Any, session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        chosen = await self._on_permission({"sessionId": session_id, "toolCall": _plain(tool_call),
                                            "options": _plain(options)})
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=chosen, outcome="selected"))

    def on_connect(self, conn: Any) -> None:
        """Nothing to do: the connection is used through :class:`AcpAgent`."""


def protocol_error(exc: BaseException, what: str) -> AgentProtocolError:
    """An SDK or connection failure as the supervisor's error (JSON-RPC code kept)."""
    if isinstance(exc, RequestError):
        data = exc.data
        detail = ""
        if isinstance(data, dict):
            detail = str(data.get("details") or data.get("message") or "")
        elif data is not None:
            detail = str(data)
        msg = f"{what}: the agent answered error {exc.code}: {exc}" + (f" ({detail})" if detail else "")
        return AgentProtocolError(msg, code=exc.code, subcommand=what)
    if isinstance(exc, ConnectionError):
        return AgentProtocolError(f"{what}: the connection to the agent closed", subcommand=what)
    return AgentProtocolError(f"{what}: {type(exc).__name__}: {exc}", subcommand=what)


class AcpAgent:
    """One ACP agent subprocess and the connection to it (use ``async with``)."""

    def __init__(self, argv: list[str], *, cwd: str, stderr_path: Path, on_update: UpdateHandler,
                 on_permission: PermissionHandler, env: dict[str, str] | None = None) -> None:
        if not argv:
            raise SurfaceError("no agent command given", "put it after --, e.g. `supervisor run --acp -- gemini --acp`")
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(os.environ if env is None else env)
        self.stderr_path = stderr_path
        self._client = _Client(on_update, on_permission)
        self._stack = contextlib.AsyncExitStack()
        self._conn: Any = None
        self._proc: Any = None
        self._stderr: Any = None
        self._sifter: asyncio.Task[None] | None = None
        self._stderr_pump: asyncio.Task[None] | None = None
        self.noise_lines = 0
        """Lines of its stdout that were not protocol messages (written to its log instead)."""
        self.session_id: str | None = None
        self.info: dict[str, Any] = {}
        """What ``initialize`` said: protocolVersion, agentInfo, authMethods, agentCapabilities."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The agent's exit status once it has exited (None while it runs)."""
        return self._proc.returncode if self._proc is not None else None

    async def __aenter__(self) -> AcpAgent:
        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        self._stderr = open(self.stderr_path, "ab")  # noqa: SIM115 - closed in close()
        try:
            raw, writer, self._proc = await self._stack.enter_async_context(spawn_stdio_transport(
                self.argv[0], *self.argv[1:], env=self.env, cwd=self.cwd, stderr=asyncio.subprocess.PIPE,
                limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES, shutdown_timeout=SHUTDOWN_S))
        except OSError as exc:
            self._stderr.close()
            raise SurfaceError(f"cannot start the agent {self.argv[0]!r}: {exc.strerror or exc}",
                               "check the command after -- (is it installed and on PATH?)",
                               subcommand="spawn") from exc
        clean = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
        loop = asyncio.get_running_loop()
        self._sifter = loop.create_task(self._sift(raw, clean))
        if self._proc.stderr is not None:
            self._stderr_pump = loop.create_task(self._pump_stderr(self._proc.stderr))
        self._stack.push_async_callback(self._stop_readers)
        self._conn = connect_to_agent(self._client, writer, clean)
        self._stack.push_async_callback(self._conn.close)
        return self

    async def _sift(self, raw: asyncio.StreamReader, clean: asyncio.StreamReader) -> None:
        """Pass the agent's protocol messages on; log everything else it prints on stdout."""
        try:
            while line := await _read_line(raw):
                if is_message(line):
                    clean.feed_data(line if line.endswith(b"\n") else line + b"\n")
                    continue
                self.noise_lines += 1
                shown = line.decode("utf-8", "replace").rstrip("\n")
                shown = shown if len(shown) <= NOISE_SHOWN else shown[:NOISE_SHOWN] + "…"
                self._log_line(f"[paneward] not a protocol message on stdout: {shown}")
        except Exception as exc:  # noqa: BLE001 - the connection then sees the end of the stream
            log.warning("reading the ACP agent's stdout: %s: %s", type(exc).__name__, exc)
        finally:
            clean.feed_eof()

    async def _pump_stderr(self, err: asyncio.StreamReader) -> None:
        """The agent's stderr, redacted, into its log."""
        try:
            while line := await _read_line(err):
                self._log_line(line.decode("utf-8", "replace").rstrip("\n"))
        except Exception as exc:  # noqa: BLE001 - a log that cannot be written loses only the log
            log.warning("reading the ACP agent's stderr: %s: %s", type(exc).__name__, exc)

    def _log_line(self, text: str) -> None:
        if self._stderr is not None:
            self._stderr.write((redact(text) + "\n").encode("utf-8", "replace"))
            self._stderr.flush()

    async def _stop_readers(self) -> None:
        for task in (self._sifter, self._stderr_pump):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def initialize(self) -> dict[str, Any]:
        try:
            resp = await self._conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False),
                client_info=Implementation(name="paneward", title="paneward supervisor", version=__version__))
        except Exception as exc:  # noqa: BLE001 - any failure is the agent's, reported as one line
            raise protocol_error(exc, "initialize") from exc
        self.info = _plain(resp)
        return self.info

    async def new_session(self) -> str:
        try:
            resp = await self._conn.new_session(cwd=self.cwd, mcp_servers=[])
        except Exception as exc:  # noqa: BLE001
            raise protocol_error(exc, "session/new") from exc
        self.session_id = resp.session_id
        return resp.session_id

    async def prompt(self, text: str) -> str:
        """Send one prompt; returns the turn's stop reason once the agent ends the turn."""
        try:
            resp = await self._conn.prompt(session_id=self.session_id, prompt=[text_block(text)])
        except Exception as exc:  # noqa: BLE001
            raise protocol_error(exc, "session/prompt") from exc
        return str(resp.stop_reason)

    async def cancel(self) -> None:
        """Ask the agent to stop the turn in progress (it answers its prompt with ``cancelled``)."""
        if self._conn is None or self.session_id is None:
            return
        try:
            await self._conn.cancel(session_id=self.session_id)
        except Exception as exc:  # noqa: BLE001 - the agent may be gone already; stopping goes on
            log.debug("session/cancel failed: %s: %s", type(exc).__name__, exc)

    async def wait_exit(self) -> int | None:
        """Wait until the agent process exits (and its last stderr lines are in the log, unless a
        process it started keeps stderr open); its exit status."""
        if self._proc is None:
            return None
        code = await self._proc.wait()
        if self._stderr_pump is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_pump), timeout=STDERR_DRAIN_S)
        return code

    def stderr_tail(self) -> str:
        try:
            with open(self.stderr_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - STDERR_TAIL_BYTES))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    async def close(self) -> None:
        """Close the connection and end the agent and every process it started."""
        tree: list[psutil.Process] = []
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(psutil.Error, OSError):
                tree = psutil.Process(self._proc.pid).children(recursive=True)
        try:
            await self._stack.aclose()  # stdin closed, a grace period, then SIGTERM and SIGKILL
        except Exception as exc:  # noqa: BLE001 - closing must finish
            log.warning("closing the ACP agent: %s: %s", type(exc).__name__, exc)
        alive = [p for p in tree if p.is_running()]
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        _gone, left = psutil.wait_procs(alive, timeout=SHUTDOWN_S)
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.kill()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
