"""The fake model server itself: fast, no agents needed (runs in `make test`).

Clients are the real anthropic SDK and plain ``http.client``; the server is a real loopback
HTTP server."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from tests.e2e.fake_model_server import DEFAULT_TEXT, FakeModelServer, Turn, user_texts_of
from tests.helpers import retry_until

BASH_TOOL = {"name": "Bash", "description": "run a command",
             "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


def client(fake: FakeModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-test-secret", max_retries=0)


def post(fake: FakeModelServer, path: str, body: dict[str, Any],
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=30)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    data = resp.read().decode()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def sse(data: str) -> list[tuple[str | None, Any]]:
    """(event, data) pairs of an SSE body; ``[DONE]`` stays a string."""
    out = []
    for block in data.strip().split("\n\n"):
        event, payload = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                raw = line[6:]
                payload = raw if raw == "[DONE]" else json.loads(raw)
        out.append((event, payload))
    return out


def test_anthropic_stream_tool_use_then_default_text(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="shell", text="I will create it.", command="touch x.txt"))
    c = client(fake)
    with c.messages.stream(model="m", max_tokens=50, tools=[BASH_TOOL],
                           messages=[{"role": "user", "content": "make x"}]) as stream:
        msg = stream.get_final_message()
    assert msg.stop_reason == "tool_use"
    assert msg.content[0].type == "text" and msg.content[0].text == "I will create it."
    tool = msg.content[1]
    assert tool.type == "tool_use" and tool.name == "Bash" and tool.input["command"] == "touch x.txt"
    # The script is exhausted: a short text answer ends the turn.
    with c.messages.stream(model="m", max_tokens=50, tools=[BASH_TOOL],
                           messages=[{"role": "user", "content": "again"}]) as stream:
        msg = stream.get_final_message()
    assert msg.stop_reason == "end_turn" and msg.content[0].text == DEFAULT_TEXT


def test_anthropic_raw_events_and_beta_query(fake: FakeModelServer) -> None:
    fake.script(Turn(text="hello world", chunks=3))
    status, headers, body = post(fake, "/v1/messages?beta=true", {"model": "m", "stream": True, "tools": [BASH_TOOL],
                                                                   "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = [e for e, _ in sse(body)]
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    deltas = [d["delta"]["text"] for e, d in sse(body) if e == "content_block_delta"]
    assert len(deltas) == 3 and "".join(deltas) == "hello world"
    assert fake.requests[-1].query == "beta=true" and fake.requests[-1].main


def test_anthropic_write_turn_and_non_streaming(fake: FakeModelServer) -> None:
    write_tool = {"name": "Write", "description": "write", "input_schema": {"type": "object"}}
    fake.script(Turn(kind="write", path="/tmp/w/notes.md", content="# hi\n"))
    msg = client(fake).messages.create(model="m", max_tokens=50, tools=[BASH_TOOL, write_tool],
                                       messages=[{"role": "user", "content": "write"}])
    assert msg.content[0].type == "tool_use" and msg.content[0].name == "Write"
    assert msg.content[0].input == {"file_path": "/tmp/w/notes.md", "content": "# hi\n"}


def test_side_requests_do_not_take_the_script(fake: FakeModelServer) -> None:
    fake.script(Turn(text="main answer"))
    c = client(fake)
    title = c.messages.create(model="m", max_tokens=50, system="Generate a title. Return JSON with a single title.",
                              messages=[{"role": "user", "content": "<session>fix it</session>"}])
    assert json.loads(title.content[0].text) == {"title": "Fake session"}
    other = c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "quota"}])
    assert other.content[0].text == DEFAULT_TEXT
    assert fake.pending() == 1
    main = c.messages.create(model="m", max_tokens=50, tools=[BASH_TOOL], messages=[{"role": "user", "content": "x"}])
    assert main.content[0].text == "main answer" and fake.pending() == 0
    assert [r.main for r in fake.requests] == [False, False, True]


def test_count_tokens(fake: FakeModelServer) -> None:
    status, _, body = post(fake, "/v1/messages/count_tokens", {"model": "m", "messages": [{"role": "user",
                                                                                             "content": "hi"}]})
    assert status == 200 and json.loads(body)["input_tokens"] >= 1


def test_errors_are_sticky_and_shaped_per_api(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="error", status=429, message="slow down", retry_after="7", repeat=None))
    with pytest.raises(anthropic.RateLimitError) as info:
        client(fake).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    status, _, body = post(fake, "/v1/chat/completions", {"model": "m", "messages": []})
    assert status == 429 and json.loads(body)["error"]["code"] == "rate_limit_exceeded"
    fake.script(replace=True)
    status, _, _ = post(fake, "/v1/chat/completions", {"model": "m", "messages": []})
    assert status == 200


def test_auth_and_model_errors(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="error", status=401), Turn(kind="error", status=404, message="model: nope"))
    with pytest.raises(anthropic.AuthenticationError):
        client(fake).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(anthropic.NotFoundError, match="model: nope"):
        client(fake).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])


def test_responses_api_function_call_asks_for_escalation(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="shell", text="Running it.", command="touch y"))
    tools = [{"type": "function", "name": "exec_command"}, {"type": "function", "name": "write_stdin"}]
    status, _, body = post(fake, "/v1/responses", {"model": "m", "stream": True, "tools": tools, "input": []})
    assert status == 200
    events = sse(body)
    kinds = [e for e, _ in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds and "response.output_item.added" in kinds
    done = [d["item"] for e, d in events if e == "response.output_item.done"]
    assert [i["type"] for i in done] == ["message", "function_call"]
    args = json.loads(done[1]["arguments"])
    assert done[1]["name"] == "exec_command" and args["cmd"] == "touch y"
    assert args["sandbox_permissions"] == "require_escalated"
    completed = events[-1][1]["response"]
    assert completed["usage"]["total_tokens"] > 0 and len(completed["output"]) == 2


def test_responses_api_legacy_shell_tool(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="shell", command="ls -la"))
    status, _, body = post(fake, "/v1/responses", {"model": "m", "stream": False,
                                                   "tools": [{"type": "function", "name": "shell"}]})
    item = json.loads(body)["output"][0]
    assert item["name"] == "shell" and json.loads(item["arguments"])["command"] == ["bash", "-lc", "ls -la"]


def test_chat_completions_stream_and_aider_blocks(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="shell", command="touch z"), Turn(kind="write", path="notes.md", content="# N"))
    status, _, body = post(fake, "/v1/chat/completions", {"model": "m", "stream": True, "messages": []})
    events = sse(body)
    assert status == 200 and events[-1] == (None, "[DONE]")
    text = "".join(d["choices"][0]["delta"].get("content") or "" for _, d in events[:-1])
    assert "```bash\ntouch z\n```" in text
    assert events[-2][1]["choices"][0]["finish_reason"] == "stop"
    status, _, body = post(fake, "/v1/chat/completions", {"model": "m", "stream": False, "messages": []})
    content = json.loads(body)["choices"][0]["message"]["content"]
    assert "notes.md\n```\n<<<<<<< SEARCH\n=======\n# N\n>>>>>>> REPLACE" in content


def test_chat_completions_tool_calls_when_offered(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="shell", command="echo hi"))
    tools = [{"type": "function", "function": {"name": "run_command"}}]
    status, _, body = post(fake, "/v1/chat/completions", {"model": "m", "stream": False, "tools": tools})
    choice = json.loads(body)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {"command": "echo hi"}


def test_held_answer_streams_first_piece_then_waits_for_release(fake: FakeModelServer) -> None:
    fake.script(Turn(text="one two three four", chunks=4, hold=True))
    pieces: list[str] = []
    done = threading.Event()

    def consume() -> None:
        with client(fake).messages.stream(model="m", max_tokens=50, tools=[BASH_TOOL],
                                          messages=[{"role": "user", "content": "x"}]) as stream:
            for text in stream.text_stream:
                pieces.append(text)
        done.set()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    retry_until(lambda: pieces, 10, message="the first streamed piece")
    assert not done.is_set() and len(pieces) == 1
    fake.release()
    retry_until(done.is_set, 10, message="the held answer to finish")
    assert "".join(pieces) == "one two three four"


def test_gets_logging_and_control_endpoints(fake: FakeModelServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    assert models["data"][0]["id"] == "fake-model"
    conn.request("GET", "/some/unknown/thing")
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["fake"] is True
    conn.close()
    status, _, body = post(fake, "/v1/nowhere", {})
    assert status == 404 and "no route" in body
    status, _, body = post(fake, "/_fake/script", [{"kind": "text", "text": "queued by hand"}])
    assert status == 200 and json.loads(body) == {"queued": 1}
    post(fake, "/v1/messages", {"model": "m", "tools": [BASH_TOOL], "messages": []},
         headers={"Authorization": "Bearer sk-secret-value", "x-api-key": "sk-other"})
    logged = fake.requests[-1]
    assert logged.turn == "text" and logged.headers["authorization"] == "<redacted>"
    assert "sk-secret-value" not in json.dumps(logged.headers) and "sk-other" not in json.dumps(logged.headers)


def test_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback"):
        FakeModelServer(host="0.0.0.0")


def test_aider_commit_message_requests_do_not_take_the_script(fake: FakeModelServer) -> None:
    fake.script(Turn(text="the real answer"))
    system = {"role": "system", "content": "Generate a one-line Git commit message for these changes."}
    status, _, body = post(fake, "/v1/chat/completions", {"model": "m", "messages": [system]})
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == DEFAULT_TEXT
    assert fake.pending() == 1 and not fake.requests[-1].main


GEMINI_TOOLS = [{"functionDeclarations": [
    {"name": "run_shell_command", "parameters": {"type": "object", "properties": {
        "command": {"type": "string"}, "description": {"type": "string"}}}},
    {"name": "write_file", "parameters": {"type": "object", "properties": {
        "file_path": {"type": "string"}, "content": {"type": "string"}}}}]}]


def test_gemini_stream_function_call_then_text(fake: FakeModelServer) -> None:
    """Gemini CLI's wire format: SSE chunks of candidates; a shell turn is a functionCall part named
    and shaped as the offered declaration says."""
    fake.script(Turn(kind="shell", text="I will create it.", command="touch x.txt"))
    body = {"contents": [{"role": "user", "parts": [{"text": "<session_context>ctx</session_context>"},
                                                    {"text": "create x"}]}], "tools": GEMINI_TOOLS}
    status, headers, data = post(fake, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    chunks = [d for _, d in sse(data)]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "I will create it."
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    assert calls == [{"name": "run_shell_command", "args": {"command": "touch x.txt", "description": "Run a command"}}]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in chunks[-1]
    # the next turn (script exhausted) is the default text; the user text excludes injected context
    status, _, data = post(fake, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body)
    assert "".join(p.get("text", "") for _, d in sse(data) for p in d["candidates"][0]["content"]["parts"]) \
        == DEFAULT_TEXT
    assert fake.user_texts() == ["create x"]


def test_gemini_side_request_gets_json_by_schema_and_count_tokens(fake: FakeModelServer) -> None:
    """A side request without tools that wants JSON (Gemini's model router) gets a value of its schema
    and takes no scripted turn; countTokens answers a count."""
    fake.script(Turn(text="kept for the main request"))
    schema = {"type": "object", "properties": {"reasoning": {"type": "string"},
                                               "model_choice": {"type": "string", "enum": ["flash", "pro"]}}}
    body = {"contents": [{"role": "user", "parts": [{"text": "route"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}
    status, _, data = post(fake, "/v1beta/models/flash:generateContent", body)
    answer = json.loads(json.loads(data)["candidates"][0]["content"]["parts"][0]["text"])
    assert status == 200 and answer == {"reasoning": "fake", "model_choice": "flash"}
    assert fake.pending() == 1
    status, _, data = post(fake, "/v1beta/models/flash:countTokens", body)
    assert status == 200 and json.loads(data)["totalTokens"] > 0


def test_gemini_error_shape(fake: FakeModelServer) -> None:
    fake.script(Turn(kind="error", status=429, message="quota", repeat=None))
    status, _, data = post(fake, "/v1beta/models/x:streamGenerateContent?alt=sse", {"tools": GEMINI_TOOLS})
    assert status == 429 and json.loads(data)["error"] == {"code": 429, "message": "quota",
                                                           "status": "RESOURCE_EXHAUSTED"}


def test_chat_tool_arguments_follow_the_offered_schema(fake: FakeModelServer) -> None:
    """opencode's `write` takes filePath, Qwen's `write_file` file_path: the call uses whichever the
    schema names; a title-generator request is a side request."""
    tools = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object", "properties": {
        "filePath": {"type": "string"}, "content": {"type": "string"}}}}}]
    fake.script(Turn(kind="write", path="/w/notes.md", content="hi"))
    title = {"messages": [{"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
                          {"role": "user", "content": "make a title"}]}
    status, _, data = post(fake, "/v1/chat/completions", title)
    assert status == 200 and fake.pending() == 1
    body = {"messages": [{"role": "user", "content": "write notes"}], "tools": tools}
    status, _, data = post(fake, "/v1/chat/completions", body)
    call = json.loads(data)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "write" and json.loads(call["arguments"]) == {"filePath": "/w/notes.md", "content": "hi"}
    assert fake.user_texts() == ["write notes"]


def test_user_texts_leave_out_what_agents_add_by_themselves() -> None:
    """What a person typed, without aider's example exchanges and appended format rules, or Claude
    Code's note after a declined tool use: the e2e tests compare it with what they typed."""
    aider = {"messages": [
        {"role": "system", "content": "Act as an expert software developer."},
        {"role": "user", "content": "Change get_factorial() to use math.factorial"},
        {"role": "assistant", "content": "To make this change..."},
        {"role": "user", "content": "I switched to a new code base. Please don't consider the above files."},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "I am not sharing any files that you can edit yet."},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "create the file hello.txt"},
        {"role": "assistant", "content": "I will create the file."},
        {"role": "user", "content": "clean up\n\n# *SEARCH/REPLACE block* Rules:\n\n" + "x" * 3000},
    ]}
    assert user_texts_of("chat", aider) == ["create the file hello.txt", "clean up"]
    claude = {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "clean up the repository"}]},
        {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]},
        {"role": "user", "content": [{"type": "text", "text": "1clean up again"}]},
    ]}
    assert user_texts_of("anthropic", claude) == ["clean up the repository", "1clean up again"]


def test_user_texts_leave_out_tagged_context_before_the_users_words() -> None:
    """GitHub Copilot CLI puts a ``<current_datetime>`` block before the user's words in one message:
    the user's text is what follows it (a message of context blocks alone is no user text)."""
    body = {"messages": [
        {"role": "user", "content": "<current_datetime>2026-11-28T09:00:00Z</current_datetime>\n\nfix the test"},
        {"role": "user", "content": "<system-reminder>be brief</system-reminder>"},
    ]}
    assert user_texts_of("chat", body) == ["fix the test"]
