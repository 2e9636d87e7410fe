"""The observe-only transcript surface: Claude Code and Codex JSONL transcripts, tailed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from supervisor.errors import SurfaceError
from supervisor.surfaces.transcript import TranscriptSurface
from supervisor.workflow.checkpoint import CheckpointTracker, find_blocks

CP = "<checkpoint>\ncheckpoint_seq: 1\nstatus: step_done\ncurrent_node: write\nsummary: wrote it\n</checkpoint>"


def line(obj: dict) -> str:
    return json.dumps(obj) + "\n"


def test_claude_and_codex_lines_and_partial_tail(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(
        line({"type": "user", "message": {"role": "user", "content": "please do it <checkpoint>x</checkpoint>"}})
        + line({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Done.\n" + CP}, {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]}})
        + "not json\n"
        + line({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                      "content": [{"type": "output_text", "text": "codex says hi"}]}})
    )
    t = TranscriptSurface(p)
    got = t.read_new()
    assert [e.line_no for e in got] == [2, 4]
    assert CP in got[0].text and got[1].text == "codex says hi"
    # a half-written line waits until it is complete
    with open(p, "a") as fh:
        half = line({"type": "event_msg", "payload": {"type": "agent_message", "message": CP.replace("1", "2")}})
        fh.write(half[:20])
    assert t.read_new() == []
    with open(p, "a") as fh:
        fh.write(half[20:])
    [e] = t.read_new()
    assert "checkpoint_seq: 2" in e.text and e.line_no == 5
    tracker = CheckpointTracker()
    assert len(tracker.admit_all(find_blocks(got[0].text + e.text), "transcript")) == 2
    assert "codex says hi" in t.capture("transcript").text


def test_observe_only(tmp_path: Path) -> None:
    t = TranscriptSurface(tmp_path / "missing.jsonl")
    assert t.read_new() == []
    with pytest.raises(SurfaceError, match="observe-only"):
        t.send_keys("transcript", ["Enter"])
