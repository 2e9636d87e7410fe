"""A loopback HTTP server that speaks enough of the Anthropic Messages API for the judge tests.

It is a real server on 127.0.0.1 (port 0) that the real ``anthropic`` SDK talks to over
HTTP. Each test scripts its replies in order (a tool_use message, a status error with
headers, a slow reply, a reply with no tool call...) and every request is logged, so
tests assert on the request bodies (tools, screen text, hint, history, model,
temperature) and on the number of calls.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]


def tool_reply(name: str, tool_input: dict[str, Any], *, input_tokens: int = 1200, output_tokens: int = 60,
               model: str = "claude-sonnet-4-5") -> Reply:
    """A 200 Messages API response whose only content block is one tool_use."""
    return {"status": 200, "body": {
        "id": "msg_loopback", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "tool_use", "id": "toolu_loopback", "name": name, "input": tool_input}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }}


def text_reply(text: str = "I think you should press 1.", *, input_tokens: int = 1200, output_tokens: int = 20) -> Reply:
    """A 200 response with a text block and no tool call (the judge must treat it as malformed)."""
    return {"status": 200, "body": {
        "id": "msg_loopback", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }}


def error_reply(status: int, *, headers: dict[str, str] | None = None, kind: str = "api_error",
                message: str = "scripted error") -> Reply:
    return {"status": status, "headers": headers or {},
            "body": {"type": "error", "error": {"type": kind, "message": message}}}


def slow(reply: Reply, seconds: float) -> Reply:
    """The same reply, sent only after ``seconds`` (to run past the client's timeout)."""
    return {**reply, "delay": seconds}


@dataclass
class MessagesServer:
    """Scripted replies, a request log, and the base URL to give the SDK."""

    replies: list[Reply] = field(default_factory=list)
    default: Reply | Callable[[dict[str, Any]], Reply] | None = None
    """Used when the script runs out (None: answer 500 so a test sees it)."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self.replies:
                return self.replies.pop(0)
            default = self.default
        if default is None:
            return error_reply(500, message="loopback script exhausted")
        return default(body) if callable(default) else default


def _handler(server: MessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body go out as separate writes: without this, Nagle + delayed ACK add ~40 ms
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if self.path.split("?")[0] != "/v1/messages":
                self._send({"status": 404, "body": {"type": "error", "error": {"type": "not_found_error",
                                                                              "message": self.path}}})
                return
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            reply = server._next(body, {k.lower(): v for k, v in self.headers.items()})
            delay = float(reply.get("delay", 0))
            if delay and server._stop.wait(delay):
                return
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            data = json.dumps(reply["body"]).encode()
            try:
                self.send_response(int(reply["status"]))
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", "req_loopback")
                for k, v in reply.get("headers", {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): that is what slow replies test

    return Handler


class RunningServer:
    """Context manager: start the loopback server in a thread, stop it afterwards."""

    def __init__(self) -> None:
        self.api = MessagesServer()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.api))
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self.api.base_url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self) -> MessagesServer:
        self._thread.start()
        return self.api

    def __exit__(self, *exc: object) -> None:
        self.api._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
