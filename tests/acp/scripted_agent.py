"""A scripted ACP agent: a real subprocess speaking the Agent Client Protocol over stdio, written with
the same ``agent-client-protocol`` package the supervisor's ACP surface uses.

    python tests/acp/scripted_agent.py SCRIPT.json

The script (JSON) lists what the agent does on each prompt turn, in order:

``{"log": PATH, "agent_name": NAME, "turns": [[STEP, ...], ...]}``, each STEP one of

* ``{"say": TEXT}``: an agent message chunk;
* ``{"tool": {kind, title, rawInput, locations, content}, "ask": true, "options": [...],
  "announce": true, "request": "minimal" | "full"}``: announce the tool call (a ``tool_call``
  session update), ask permission (``session/request_permission``: with ``minimal``, only the
  call's id, title and raw input, as Claude Code's adapter does; with ``full``, every field, as
  Gemini CLI does), and "run" the tool only when an ``allow_*`` option was selected;
* ``{"sleep": SECONDS}``; ``{"fail": {"code": C, "message": M}}``: answer the prompt with that
  error; ``{"crash": {"code": C, "stderr": TEXT}}``: print TEXT to stderr and exit with C at once;
* ``{"print": TEXT}``: write TEXT as a raw line on stdout, the protocol's channel (what a careless
  agent or one of its libraries does);
* ``{"write": {"path": P, "text": T}}``: write a file (relative to the session's directory);
* ``{"checkpoint": {status, current_node, summary, ...}}``: say a checkpoint block (the
  supervisor's checkpoint protocol), numbered in order, with the run id the first prompt gave.

Top level ``"hang_initialize": true``: never answer ``initialize`` (an agent stuck at start).

Running a tool never executes anything: it is recorded (``{"event": "ran", ...}``) in the log, a
JSONL file of everything the agent received (initialize, the session's cwd, each prompt's text,
each permission outcome), so tests assert what was approved, denied and "run".
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, text_block, update_agent_message
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

DEFAULT_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always Allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
]


class ScriptedAgent:
    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script
        self.turn = 0
        self.calls = 0
        self.log = Path(script["log"])
        self.conn: Any = None
        self.cwd = "."
        self.run_id = ""
        self.checkpoints = 0

    def record(self, **event: Any) -> None:
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(event) + "\n")

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        self.record(event="initialize", client=client_info.name if client_info else None,
                    fs=bool(client_capabilities and client_capabilities.fs and client_capabilities.fs.write_text_file))
        if self.script.get("hang_initialize"):
            await asyncio.Event().wait()
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(),
                                  agent_info=Implementation(name=self.script.get("agent_name", "scripted-acp"),
                                                            version="1.0"))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        self.record(event="session", cwd=cwd)
        self.cwd = cwd
        return NewSessionResponse(session_id="sess-1")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.record(event="cancel")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(b, "text", "") for b in prompt)
        turns = self.script.get("turns") or []
        steps = turns[self.turn] if self.turn < len(turns) else [{"say": "nothing more to do"}]
        self.turn += 1
        self.record(event="prompt", text=text, turn=self.turn)
        m = re.search(r"run_id: (run_\w+)", text)
        if m and not self.run_id:
            self.run_id = m.group(1)
        for step in steps:
            if "say" in step:
                await self.conn.session_update(session_id, update_agent_message(text_block(step["say"])))
            elif "sleep" in step:
                await asyncio.sleep(float(step["sleep"]))
            elif "fail" in step:
                raise RequestError(int(step["fail"]["code"]), step["fail"]["message"])
            elif "crash" in step:
                sys.stderr.write(step["crash"].get("stderr", "") + "\n")
                sys.stderr.flush()
                os._exit(int(step["crash"].get("code", 1)))
            elif "print" in step:
                sys.stdout.write(step["print"] + "\n")
                sys.stdout.flush()
            elif "write" in step:
                path = Path(self.cwd) / step["write"]["path"]
                path.write_text(step["write"]["text"], encoding="utf-8")
                self.record(event="wrote", path=str(path))
            elif "checkpoint" in step:
                self.checkpoints += 1
                fields = {"run_id": self.run_id, "checkpoint_seq": self.checkpoints} | step["checkpoint"]
                body = "\n".join(f"{k}: {json.dumps(v)}" for k, v in fields.items())
                block = f"\n<checkpoint>\n{body}\n</checkpoint>\n"
                await self.conn.session_update(session_id, update_agent_message(text_block(block)))
            elif "tool" in step:
                await self.tool(session_id, step)
        return PromptResponse(stop_reason=self.script.get("stop_reason", "end_turn"))

    async def tool(self, session_id: str, step: dict[str, Any]) -> None:
        self.calls += 1
        call_id = f"call-{self.calls}"
        spec = dict(step["tool"])
        if step.get("announce", True):
            await self.conn.session_update(session_id, ToolCallStart(
                session_update="tool_call", tool_call_id=call_id, status="pending", **_fields(spec)))
        if step.get("ask", True):
            fields = _fields(spec) if step.get("request", "full") == "full" else {
                k: v for k, v in _fields(spec).items() if k in ("title", "raw_input")}
            options = [PermissionOption.model_validate(o) for o in step.get("options") or DEFAULT_OPTIONS]
            resp = await self.conn.request_permission(options=options, session_id=session_id,
                                                      tool_call=ToolCallUpdate(tool_call_id=call_id, **fields))
            outcome = resp.outcome
            chosen = getattr(outcome, "option_id", None)
            kind = next((o.kind for o in options if o.option_id == chosen), None)
            self.record(event="permission", tool_call_id=call_id, title=spec.get("title"), outcome=outcome.outcome,
                        option_id=chosen, option_kind=kind)
            if kind is None or not kind.startswith("allow"):
                await self.conn.session_update(session_id, ToolCallProgress(
                    session_update="tool_call_update", tool_call_id=call_id, status="failed"))
                return
        self.record(event="ran", tool_call_id=call_id, title=spec.get("title"), raw_input=spec.get("rawInput"))
        await self.conn.session_update(session_id, ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id, status="completed"))


def _fields(spec: dict[str, Any]) -> dict[str, Any]:
    """A tool step's fields as the SDK's keyword arguments (``rawInput`` -> ``raw_input``)."""
    names = {"rawInput": "raw_input"}
    return {names.get(k, k): v for k, v in spec.items()}


def main() -> None:
    script = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    asyncio.run(run_agent(ScriptedAgent(script)))


if __name__ == "__main__":
    main()
