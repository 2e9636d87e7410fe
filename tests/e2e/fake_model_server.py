"""A scripted model server on loopback, for driving real agent CLIs without a real model.

It speaks, with streaming, the three wire formats the agents use:

- the Anthropic Messages API (``POST /v1/messages``, also ``?beta=true``; SSE or JSON;
  ``POST /v1/messages/count_tokens``) — Claude Code;
- the OpenAI Responses API (``POST /v1/responses``) — Codex CLI;
- OpenAI Chat Completions (``POST /v1/chat/completions``) — aider (through litellm), Qwen Code,
  opencode, pi, Mistral Vibe;
- the Gemini API (``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse``,
  ``:generateContent``, ``:countTokens``) — Gemini CLI.

A test scripts the conversation as a queue of :class:`Turn` s: a text answer, a shell
command the agent should run (as a tool call, or a ```bash block for aider), a file write,
a slow answer (delays between chunks, or held open until the test releases it), or an HTTP
error. Each *main* request (one that offers tools, or any chat-completions request) takes
the next turn; side requests (Claude's title and prefix requests, which offer no tools) get
a sensible answer without consuming the script. When the script is exhausted every request
gets a short text answer, so an agent always finishes its turn.

Every request is logged (path, headers with secrets removed, body) for assertions.

Run it by hand to drive an agent yourself::

    python tests/e2e/fake_model_server.py --port 8765
    curl -s localhost:8765/_fake/script -d '[{"kind": "shell", "command": "touch x"}]'
    curl -s localhost:8765/_fake/requests

Loopback only: it binds 127.0.0.1 and never calls anything.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import json
import re
import sys
import threading
import time
import uuid
import zlib
from collections import deque
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import urlsplit

TurnKind = Literal["text", "shell", "write", "tool", "error"]
"""text: a plain answer; shell: run a command; write: create a file; tool: a raw tool call
by name and arguments; error: an HTTP error response."""

Api = Literal["anthropic", "responses", "chat", "gemini", "other"]

DEFAULT_TEXT = "All done."
HOLD_LIMIT_S = 300.0
"""A held answer finishes by itself after this long, so a forgotten release never hangs a test."""
SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "cookie", "proxy-authorization"}


@dataclass
class Turn:
    """One scripted model answer."""

    kind: TurnKind = "text"
    text: str = ""
    """The answer text (``text``), or text said before the tool call (``shell``/``write``)."""
    command: str = ""
    """The shell command for ``shell``."""
    path: str = ""
    """The file for ``write`` (absolute for Claude, which requires it)."""
    content: str = ""
    """The file content for ``write``."""
    tool: str = ""
    """The tool name for ``tool`` (a raw call; ``arguments`` as given)."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Raw tool arguments for ``tool``; extra arguments merged into ``shell`` calls."""
    escalate: bool = True
    """For Codex ``shell``: ask for escalated permissions, so the CLI always asks for approval."""
    status: int = 500
    """HTTP status for ``error``."""
    error_type: str = ""
    """API error type for ``error`` (default chosen from the status)."""
    message: str = "fake server error"
    """Error message for ``error``."""
    retry_after: str | None = None
    """A ``retry-after`` header value for ``error``."""
    repeat: int | None = 1
    """How many requests this turn answers; ``None`` answers every request from now on
    (agents retry errors, so error turns are usually sticky)."""
    chunks: int = 4
    """How many pieces the streamed text is cut into."""
    chunk_delay: float = 0.0
    """Seconds to wait between streamed pieces (a slow answer keeps the agent busy)."""
    first_delay: float = 0.0
    """Seconds between the stream's first event and the first piece of content (time to first
    token: agents show their "waiting" spinner)."""
    hold: bool = False
    """Stream the first piece, then wait until :meth:`FakeModelServer.release` is called."""
    side: bool = False
    """Also answer side requests (those that offer no tools) with this turn."""

    def __post_init__(self) -> None:
        self._gate = threading.Event()  # not a field: set by FakeModelServer.release()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LoggedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    query: str
    api: Api
    headers: dict[str, str]
    body: Any
    """Parsed JSON body, or the raw text when it is not JSON."""
    main: bool
    """True when it took a scripted turn (offered tools, or a chat completion)."""
    turn: str | None
    """The kind of turn that answered it (``default`` when the script was exhausted)."""
    at: float

    def text(self) -> str:
        """The whole body as text, for ``in`` checks."""
        return self.body if isinstance(self.body, str) else json.dumps(self.body)


# --------------------------------------------------------------------------------------
# helpers over request bodies


def _tool_names(api: Api, body: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if api == "gemini":
            names += [str(f.get("name", "")) for f in t.get("functionDeclarations") or [] if isinstance(f, dict)]
            continue
        if api == "chat" and isinstance(t.get("function"), dict):
            names.append(str(t["function"].get("name", "")))
        else:
            names.append(str(t.get("name", "")))
    return names


def _tool_schema(api: Api, body: dict[str, Any], name: str) -> dict[str, Any]:
    """The JSON schema of one offered tool's parameters ({} when it is not offered)."""
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        decls = t.get("functionDeclarations") if api == "gemini" else [t.get("function", t)]
        for d in decls or []:
            if isinstance(d, dict) and d.get("name") == name:
                schema = d.get("parameters") or d.get("input_schema") or d.get("parametersJsonSchema") or {}
                return schema if isinstance(schema, dict) else {}
    return {}


def _tool_params(api: Api, body: dict[str, Any], name: str) -> list[str]:
    """The parameter names of one offered tool (from its JSON schema), in schema order."""
    return [str(k) for k in (_tool_schema(api, body, name).get("properties") or {})]


REQUIRED_EXTRAS = {"security_risk": "LOW", "summary": "Run the requested action"}
"""Values for required arguments an agent's tool asks of the model beside the command or file
(OpenHands wants the model's own ``security_risk`` and a ``summary`` on every call)."""


def _with_required(api: Api, body: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` plus a plain value for every required argument of the tool's schema it lacks."""
    schema = _tool_schema(api, body, name)
    props = schema.get("properties") or {}
    out = dict(args)
    for key in schema.get("required") or []:
        if key not in out:
            sub = props.get(key) if isinstance(props.get(key), dict) else {}
            out[key] = REQUIRED_EXTRAS.get(key, _fill_schema(sub))
    return out


def _arg(params: list[str], *candidates: str) -> str:
    """The first of ``candidates`` the tool's schema names (the first candidate when none is)."""
    for c in candidates:
        if c in params:
            return c
    return candidates[0]


SHELL_TOOLS = ("Bash", "exec_command", "shell", "run_shell_command", "bash", "run_command", "execute", "terminal")
WRITE_TOOLS = ("Write", "write_file", "write", "create_file", "file_editor")
PATH_ARGS = ("file_path", "filePath", "filepath", "path", "absolute_path", "filename")
CONTENT_ARGS = ("content", "contents", "text", "file_text")


def _shell_call(api: Api, body: dict[str, Any], tools: list[str], turn: Turn) -> tuple[str, dict[str, Any]]:
    name = _pick(tools, *SHELL_TOOLS) or (tools[0] if tools else "bash")
    params = _tool_params(api, body, name)
    args: dict[str, Any] = {_arg(params, "command", "cmd", "code"): turn.command}
    if "description" in params:
        args["description"] = "Run a command"
    if "language" in params:  # open-interpreter's `execute(language, code)`
        args["language"] = "shell"
    return name, _with_required(api, body, name, {**args, **turn.arguments})


def _write_call(api: Api, body: dict[str, Any], tools: list[str], turn: Turn) -> tuple[str, dict[str, Any]] | None:
    name = _pick(tools, *WRITE_TOOLS)
    if name is None:
        return None
    schema = _tool_schema(api, body, name)
    params = [str(k) for k in (schema.get("properties") or {})]
    args: dict[str, Any] = {_arg(params, *PATH_ARGS): turn.path, _arg(params, *CONTENT_ARGS): turn.content}
    command = (schema.get("properties") or {}).get("command") or {}
    if "create" in (command.get("enum") or []):  # an editor tool with sub-commands (OpenHands' file_editor)
        args["command"] = "create"
    return name, _with_required(api, body, name, {**args, **turn.arguments})


INJECTED_PREFIXES = ("<", "#", "Here are summaries", "I added these files", "I have *added these files",
                     "I switched to a new code base", "I am not sharing any files", "Here are the", "Caveat:",
                     "[Request interrupted by user", "Given the following... please reply with a title",
                     "The following command was flagged as", "User: ")
"""What agents put in user messages by themselves: tagged context blocks (``<system-reminder>``,
``<environment_context>``, ``<session_context>``), instruction files (``# AGENTS.md``), aider's
repository map and file lists (and its examples: see :data:`AIDER_EXAMPLES_END`), Claude Code's note after a tool use was declined (``[Request
interrupted by user for tool use]``), Continue CLI's request for a chat title, hermes-agent's
own risk check of a flagged command and its summary of the conversation (``User: ... Assistant: ...``)."""


AIDER_EXAMPLES_END = "I switched to a new code base"
"""aider opens every request with example exchanges (its few-shot prompt), closed by a user
message starting with this: the user messages before it are aider's, not the user's."""
AIDER_REMINDER = "\n\n# *SEARCH/REPLACE block* Rules:"
"""aider appends its format rules to the newest user message: the user's text is what precedes them."""


LEADING_CONTEXT = re.compile(r"^(?:\s*<(?P<tag>[\w-]+)>.*?</(?P=tag)>)+", re.S)
"""Tagged context blocks an agent puts before the user's words in the same message (GitHub Copilot
CLI's ``<current_datetime>``): the user's text is what follows them."""


def _injected(text: str) -> bool:
    return text.startswith(INJECTED_PREFIXES) or len(text) > 400


def user_texts_of(api: Api, body: dict[str, Any]) -> list[str]:
    """The texts of the user's own messages in one request body (all turns of the history): what a
    person typed into the agent. Tool results and agent-injected context are left out."""
    texts: list[str] = []

    def add(t: Any) -> None:
        if not isinstance(t, str):
            return
        if t.startswith(AIDER_EXAMPLES_END):
            texts.clear()
        t = LEADING_CONTEXT.sub("", t.split(AIDER_REMINDER)[0]).strip()
        if t and not _injected(t):
            texts.append(t)

    if api == "gemini":
        for c in body.get("contents") or []:
            if isinstance(c, dict) and c.get("role") == "user":
                for part in c.get("parts") or []:
                    if isinstance(part, dict):
                        add(part.get("text"))
        return texts
    items = body.get("input") if api == "responses" else body.get("messages")
    for m in items or []:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            add(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
                    add(block.get("text"))
    return texts


def _anthropic_system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


SIDE_REQUEST_RE = re.compile(r"commit message|summariz|title generator|generate a (short )?title|short title|"
                             r"conversation title|thread title|session title", re.I)


def _is_chat_side_request(body: dict[str, Any]) -> bool:
    """A request the agent makes for itself (a commit message, a summary, a session title), not a
    turn of the conversation: it takes no scripted turn."""
    if body.get("tools"):
        return False
    messages = body.get("messages") or []
    first = messages[0] if messages and isinstance(messages[0], dict) else {}
    system = first.get("content") if first.get("role") == "system" else ""
    text = system if isinstance(system, str) else json.dumps(system)
    return bool(SIDE_REQUEST_RE.search(text))


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return [""]
    pieces = max(1, min(pieces, len(text)))
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _pick(names: list[str], *candidates: str) -> str | None:
    lowered = {n.lower(): n for n in names}
    for c in candidates:
        if c.lower() in lowered:
            return lowered[c.lower()]
    return None


# --------------------------------------------------------------------------------------
# the server


class FakeModelServer:
    """A threaded loopback HTTP server answering from a script. Use as a context manager."""

    def __init__(self, turns: list[Turn] | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 model: str = "fake-model") -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the fake model server binds loopback only")
        self.model = model
        self._lock = threading.Lock()
        self._turns: deque[Turn] = deque(turns or [])
        self._held: list[Turn] = []
        self.requests: list[LoggedRequest] = []
        self._ids = itertools.count(1)
        handler = type("Handler", (_Handler,), {"fake": self})
        self.httpd = _QuietServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # lifecycle ------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModelServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-model-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # scripting ------------------------------------------------------------------------
    def script(self, *turns: Turn, replace: bool = False) -> None:
        """Queue turns (after those already queued, or instead of them)."""
        with self._lock:
            if replace:
                self._turns.clear()
            self._turns.extend(turns)
            self._held.extend(t for t in turns if t.hold)

    def pending(self) -> int:
        with self._lock:
            return len(self._turns)

    def release(self) -> None:
        """Let every held (``hold=True``) turn scripted so far finish, whether it is streaming now
        or still queued; turns scripted later hold again."""
        with self._lock:
            held, self._held = self._held, []
        for turn in held:
            turn._gate.set()

    def main_requests(self, api: Api | None = None) -> list[LoggedRequest]:
        with self._lock:
            return [r for r in self.requests if r.main and (api is None or r.api == api)]

    def user_texts(self) -> list[str]:
        """Every distinct user-authored text the agents sent in main requests, in order of first
        appearance, with what the agents add by themselves left out (see :func:`user_texts_of`)."""
        seen: dict[str, None] = {}
        for r in self.main_requests():
            if isinstance(r.body, dict):
                for text in user_texts_of(r.api, r.body):
                    seen.setdefault(text, None)
        return list(seen)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}{uuid.uuid4().hex[:12]}"

    def take(self, main: bool) -> Turn | None:
        """The turn that answers a request, or None for the default answer."""
        with self._lock:
            if not self._turns:
                return None
            turn = self._turns[0]
            if not main and not (turn.side or turn.kind == "error"):
                return None
            if turn.repeat is not None:
                turn.repeat -= 1
                if turn.repeat <= 0:
                    self._turns.popleft()
            return turn

    def log(self, entry: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(entry)


class _QuietServer(ThreadingHTTPServer):
    """Agents hang up mid-request when interrupted or when they exit: that is not an error."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeModelServer
    protocol_version = "HTTP/1.1"
    server_version = "FakeModel/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
        pass

    # plumbing -------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16) if line else 0
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        enc = self.headers.get("Content-Encoding", "").lower()
        if enc == "gzip":
            data = gzip.decompress(data)
        elif enc == "deflate":
            data = zlib.decompress(data)
        return data

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _sse(self, event: str | None, data: Any) -> None:
        payload = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {event}\n" if event else ""
        self._chunk(f"{head}data: {payload}\n\n".encode())

    def _first_delay(self, turn: Turn | None) -> None:
        if turn is not None and turn.first_delay:
            time.sleep(turn.first_delay)

    def _pause(self, turn: Turn | None, i: int) -> None:
        """Between streamed pieces: the per-piece delay, and the hold after the first one."""
        if turn is None:
            return
        if turn.chunk_delay:
            time.sleep(turn.chunk_delay)
        if turn.hold and i == 0:
            turn._gate.wait(HOLD_LIMIT_S)

    # routing --------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._send_json(200, {})

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        self._log("GET", path, None, "other", main=False, turn=None)
        if path == "/_fake/requests":
            with self.fake._lock:
                self._send_json(200, [asdict(r) for r in self.fake.requests])
        elif path.endswith("/models"):
            self._send_json(200, {
                "object": "list", "has_more": False, "first_id": self.fake.model, "last_id": self.fake.model,
                "data": [{"id": self.fake.model, "object": "model", "type": "model", "created": 0,
                          "created_at": "2025-01-01T00:00:00Z", "display_name": "Fake Model",
                          "owned_by": "fake"}],
                "models": [],
            })
        elif "/models/" in path:
            name = path.rsplit("/", 1)[1]
            self._send_json(200, {"id": name, "object": "model", "type": "model", "created": 0,
                                  "display_name": name, "owned_by": "fake"})
        else:
            self._send_json(200, {"ok": True, "fake": True})

    def do_POST(self) -> None:
        split = urlsplit(self.path)
        path = split.path.rstrip("/")
        raw = self._read_body()
        try:
            body: Any = json.loads(raw) if raw else {}
        except (ValueError, UnicodeDecodeError):
            body = raw.decode("utf-8", "replace")
        try:
            if path == "/_fake/script":
                turns = body if isinstance(body, list) else [body]
                self.fake.script(*(Turn(**t) for t in turns))
                self._log("POST", path, body, "other", main=False, turn=None, query=split.query)
                self._send_json(200, {"queued": self.fake.pending()})
            elif path == "/_fake/release":
                self.fake.release()
                self._send_json(200, {"released": True})
            elif path.endswith("/messages/count_tokens"):
                self._log("POST", path, body, "anthropic", main=False, turn=None, query=split.query)
                self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            elif path.endswith("/messages"):
                self._model_call("anthropic", path, split.query, body)
            elif path.endswith("/responses"):
                self._model_call("responses", path, split.query, body)
            elif path.endswith("/chat/completions"):
                self._model_call("chat", path, split.query, body)
            elif path.endswith(":countTokens"):
                self._log("POST", path, body, "gemini", main=False, turn=None, query=split.query)
                self._send_json(200, {"totalTokens": max(1, len(raw) // 4)})
            elif path.endswith(":streamGenerateContent") or path.endswith(":generateContent"):
                self._model_call("gemini", path, split.query, body)
            else:
                self._log("POST", path, body, "other", main=False, turn=None, query=split.query)
                self._send_json(404, {"error": {"type": "not_found_error", "message": f"no route {path}"}})
        except ConnectionError:
            pass  # the agent hung up mid-stream (interrupted): nothing to do

    def _log(self, method: str, path: str, body: Any, api: Api, *, main: bool, turn: str | None,
             query: str = "") -> None:
        headers = {k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}
        self.fake.log(LoggedRequest(method=method, path=path, query=query, api=api, headers=headers, body=body,
                                    main=main, turn=turn, at=time.time()))

    def _error(self, api: Api, turn: Turn) -> None:
        default_types = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                         404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}
        etype = turn.error_type or default_types.get(turn.status, "api_error")
        headers = {"retry-after": turn.retry_after} if turn.retry_after else {}
        if api == "anthropic":
            obj: dict[str, Any] = {"type": "error", "error": {"type": etype, "message": turn.message}}
        elif api == "gemini":
            status = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                      429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}.get(turn.status, "INTERNAL")
            obj = {"error": {"code": turn.status, "message": turn.message, "status": status}}
        else:
            code = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(turn.status)
            obj = {"error": {"message": turn.message, "type": etype, "param": None, "code": code}}
        self._send_json(turn.status, obj, headers)

    def _model_call(self, api: Api, path: str, query: str, body: dict[str, Any]) -> None:
        """A model request in any of the wire formats: the agent's turn takes the next scripted turn
        (a side request, such as a session title, only a side turn), the request is logged, an error
        turn is answered the API's way, any other by the API's own handler."""
        tools = _tool_names(api, body)
        # A turn offers tools; on Chat Completions (aider offers none) every request but a side request
        # (a commit message, a chat summary) is a turn.
        main = not _is_chat_side_request(body) if api == "chat" else bool(tools)
        turn = self.fake.take(main)
        self._log("POST", path, body, api, main=main, turn=turn.kind if turn else "default", query=query)
        if turn is not None and turn.kind == "error":
            return self._error(api, turn)
        answer = {"anthropic": self._anthropic, "responses": self._responses, "chat": self._chat,
                  "gemini": self._gemini}[api]
        answer(path, body, tools, turn)

    # Anthropic Messages ---------------------------------------------------------------
    def _anthropic(self, path: str, body: dict[str, Any], tools: list[str], turn: Turn | None) -> None:
        blocks = self._anthropic_blocks(turn, tools, body)
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        msg_id = self.fake.next_id("msg")
        model = str(body.get("model") or self.fake.model)
        usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self._send_json(200, {
                "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
                "stop_reason": stop_reason, "stop_sequence": None, "usage": {**usage, "output_tokens": 5},
            })
        self._start_stream()
        self._sse("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}})
        self._sse("ping", {"type": "ping"})
        self._first_delay(turn)
        n = 0
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                self._sse("content_block_start", {"type": "content_block_start", "index": index,
                                                  "content_block": {"type": "text", "text": ""}})
                for piece in _split(block["text"], turn.chunks if turn else 2):
                    self._sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "text_delta", "text": piece}})
                    self._pause(turn, n)
                    n += 1
            else:
                self._sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                for piece in _split(json.dumps(block["input"]), 2):
                    self._sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "input_json_delta", "partial_json": piece}})
            self._sse("content_block_stop", {"type": "content_block_stop", "index": index})
        self._sse("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                    "usage": {"output_tokens": 5}})
        self._sse("message_stop", {"type": "message_stop"})
        self._end_stream()

    def _anthropic_blocks(self, turn: Turn | None, tools: list[str], body: dict[str, Any]) -> list[dict[str, Any]]:
        if turn is None:
            system = _anthropic_system_text(body).lower()
            if not tools and "title" in system:
                return [{"type": "text", "text": json.dumps({"title": "Fake session"})}]
            return [{"type": "text", "text": DEFAULT_TEXT}]
        blocks: list[dict[str, Any]] = []
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        if turn.kind == "shell":
            name = _pick(tools, "Bash") or "Bash"
            blocks.append({"type": "tool_use", "id": self.fake.next_id("toolu"), "name": name,
                           "input": {"command": turn.command, "description": "Run a command",
                                     **turn.arguments}})
        elif turn.kind == "write":
            name = _pick(tools, "Write") or "Write"
            blocks.append({"type": "tool_use", "id": self.fake.next_id("toolu"), "name": name,
                           "input": {"file_path": turn.path, "content": turn.content}})
        elif turn.kind == "tool":
            blocks.append({"type": "tool_use", "id": self.fake.next_id("toolu"), "name": turn.tool,
                           "input": turn.arguments})
        if not blocks:
            blocks.append({"type": "text", "text": DEFAULT_TEXT})
        return blocks

    # OpenAI Responses -----------------------------------------------------------------
    def _responses(self, path: str, body: dict[str, Any], tools: list[str], turn: Turn | None) -> None:
        resp_id = self.fake.next_id("resp")
        model = str(body.get("model") or self.fake.model)
        items = self._responses_items(turn, tools)
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model}
        if not body.get("stream"):
            return self._send_json(200, {**base, "status": "completed", "output": items, "usage": usage})
        self._start_stream()
        seq = itertools.count()
        self._sse("response.created", {"type": "response.created", "sequence_number": next(seq),
                                       "response": {**base, "status": "in_progress", "output": []}})
        self._first_delay(turn)
        n = 0
        for index, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                self._sse("response.output_item.added", {
                    "type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []}})
                for piece in _split(text, turn.chunks if turn else 2):
                    self._sse("response.output_text.delta", {
                        "type": "response.output_text.delta", "sequence_number": next(seq), "item_id": item["id"],
                        "output_index": index, "content_index": 0, "delta": piece})
                    self._pause(turn, n)
                    n += 1
                self._sse("response.output_text.done", {
                    "type": "response.output_text.done", "sequence_number": next(seq), "item_id": item["id"],
                    "output_index": index, "content_index": 0, "text": text})
            else:
                self._sse("response.output_item.added", {
                    "type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                    "item": {**item, "status": "in_progress", "arguments": ""}})
                self._sse("response.function_call_arguments.delta", {
                    "type": "response.function_call_arguments.delta", "sequence_number": next(seq),
                    "item_id": item["id"], "output_index": index, "delta": item["arguments"]})
            self._sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq),
                                                    "output_index": index, "item": item})
        self._sse("response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                         "response": {**base, "status": "completed", "output": items,
                                                      "usage": usage}})
        self._end_stream()

    def _responses_items(self, turn: Turn | None, tools: list[str]) -> list[dict[str, Any]]:
        def message(text: str) -> dict[str, Any]:
            return {"type": "message", "id": self.fake.next_id("msg"), "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}

        def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            return {"type": "function_call", "id": self.fake.next_id("fc"), "call_id": self.fake.next_id("call"),
                    "name": name, "arguments": json.dumps(args), "status": "completed"}

        if turn is None:
            return [message(DEFAULT_TEXT)]
        items: list[dict[str, Any]] = []
        if turn.text:
            items.append(message(turn.text))
        command = turn.command
        if turn.kind == "write":
            command = f"cat > {turn.path} <<'EOF_FAKE'\n{turn.content}\nEOF_FAKE"
        if turn.kind in ("shell", "write"):
            justification = "The fake model needs this command to run."
            if _pick(tools, "exec_command") or not _pick(tools, "shell"):
                args: dict[str, Any] = {"cmd": command}
                if turn.escalate:
                    args.update(sandbox_permissions="require_escalated", justification=justification)
                items.append(call(_pick(tools, "exec_command") or "exec_command", {**args, **turn.arguments}))
            else:
                args = {"command": ["bash", "-lc", command]}
                if turn.escalate:
                    args.update(with_escalated_permissions=True, sandbox_permissions="require_escalated",
                                justification=justification)
                items.append(call(_pick(tools, "shell") or "shell", {**args, **turn.arguments}))
        elif turn.kind == "tool":
            items.append(call(turn.tool, turn.arguments))
        if not items:
            items.append(message(DEFAULT_TEXT))
        return items

    # OpenAI Chat Completions ----------------------------------------------------------
    def _chat(self, path: str, body: dict[str, Any], tools: list[str], turn: Turn | None) -> None:
        text, calls = self._chat_answer(turn, tools, body)
        cid = self.fake.next_id("chatcmpl")
        model = str(body.get("model") or self.fake.model)
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            return self._send_json(200, {"id": cid, "object": "chat.completion", "created": int(time.time()),
                                         "model": model, "usage": usage,
                                         "choices": [{"index": 0, "message": message, "finish_reason": finish}]})

        def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
            return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], **extra}

        self._start_stream()
        self._sse(None, chunk({"role": "assistant", "content": ""}))
        self._first_delay(turn)
        for i, piece in enumerate(_split(text, turn.chunks if turn else 2) if text else []):
            self._sse(None, chunk({"content": piece}))
            self._pause(turn, i)
        for i, c in enumerate(calls):
            self._sse(None, chunk({"tool_calls": [{**c, "index": i}]}))
        self._sse(None, chunk({}, finish, usage=usage))
        self._sse(None, "[DONE]")
        self._end_stream()

    def _chat_answer(self, turn: Turn | None, tools: list[str],
                     body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """Text and tool calls (arguments named as the offered tool's schema names them). Without
        tools (aider), commands and writes become fenced blocks."""
        if turn is None:
            return DEFAULT_TEXT, []
        text = turn.text
        calls: list[dict[str, Any]] = []

        def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            return {"id": self.fake.next_id("call"), "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}

        if turn.kind == "tool":
            calls.append(call(turn.tool, turn.arguments))
        elif turn.kind == "shell":
            if tools:
                calls.append(call(*_shell_call("chat", body, tools, turn)))
            else:
                text = (text + "\n\n" if text else "Run this:\n\n") + f"```bash\n{turn.command}\n```\n"
        elif turn.kind == "write" and (write := _write_call("chat", body, tools, turn)) is not None:
            calls.append(call(*write))
        elif turn.kind == "write":
            # aider's diff edit format: an empty SEARCH section creates the file.
            text = (text + "\n\n" if text else "") + (
                f"{turn.path}\n```\n<<<<<<< SEARCH\n=======\n{turn.content}\n>>>>>>> REPLACE\n```\n")
        if not text and not calls:
            text = DEFAULT_TEXT
        return text, calls


    # Gemini API --------------------------------------------------------------------------
    def _gemini(self, path: str, body: dict[str, Any], tools: list[str], turn: Turn | None) -> None:
        stream = path.endswith(":streamGenerateContent")
        parts = self._gemini_parts(turn, tools, body)
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        model = path.rsplit("/", 1)[-1].split(":")[0]

        def chunk(ps: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
            cand: dict[str, Any] = {"content": {"parts": ps, "role": "model"}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            out: dict[str, Any] = {"candidates": [cand], "modelVersion": model}
            if finish:
                out["usageMetadata"] = usage
            return out

        if not stream:
            return self._send_json(200, chunk(parts, "STOP"))
        self._start_stream()
        self._first_delay(turn)
        n = 0
        for part in parts:
            if "text" in part:
                for piece in _split(part["text"], turn.chunks if turn else 2):
                    self._sse(None, chunk([{"text": piece}]))
                    self._pause(turn, n)
                    n += 1
            else:
                self._sse(None, chunk([part]))
        self._sse(None, chunk([{"text": ""}], "STOP"))
        self._end_stream()

    def _gemini_parts(self, turn: Turn | None, tools: list[str], body: dict[str, Any]) -> list[dict[str, Any]]:
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if turn is None and not tools and isinstance(schema, dict):
            # A side request that wants JSON (model router, next-speaker check, loop check).
            return [{"text": json.dumps(_fill_schema(schema))}]
        if turn is None:
            return [{"text": DEFAULT_TEXT}]
        parts: list[dict[str, Any]] = []
        if turn.text:
            parts.append({"text": turn.text})
        if turn.kind == "shell":
            name, args = _shell_call("gemini", body, tools, turn)
            parts.append({"functionCall": {"name": name, "args": args}})
        elif turn.kind == "write" and (write := _write_call("gemini", body, tools, turn)) is not None:
            parts.append({"functionCall": {"name": write[0], "args": write[1]}})
        elif turn.kind == "tool":
            parts.append({"functionCall": {"name": turn.tool, "args": turn.arguments}})
        if not parts:
            parts.append({"text": DEFAULT_TEXT})
        return parts


def _fill_schema(schema: dict[str, Any]) -> Any:
    """A plain value that satisfies a JSON schema: what a side request that wants JSON gets."""
    prefer = {"next_speaker": "user", "model_choice": "flash"}
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        out: dict[str, Any] = {}
        for key, sub in (schema.get("properties") or {}).items():
            out[key] = prefer[key] if key in prefer else _fill_schema(sub if isinstance(sub, dict) else {})
        return out
    return {"string": "fake", "number": 0, "integer": 0, "boolean": False, "array": []}.get(kind, "fake")


def main() -> None:  # pragma: no cover - by-hand use
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="a JSON file with a list of turns")
    args = parser.parse_args()
    server = FakeModelServer(port=args.port)
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            server.script(*(Turn(**t) for t in json.load(fh)))
    print(f"fake model server on {server.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.httpd.serve_forever()


if __name__ == "__main__":
    main()
