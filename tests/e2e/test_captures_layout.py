"""The captured real screens in suites/captures keep their documented layout (fast; runs in `make test`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from supervisor.models import BlockerKind, DecisionKind, PaneState, PromptKind, RiskLevel

CAPTURES = Path(__file__).resolve().parents[2] / "suites" / "captures"
SIDECARS = sorted(CAPTURES.glob("*/*.json"))
STATES = set(PaneState.__args__)  # type: ignore[attr-defined]
KINDS = set(PromptKind.__args__)  # type: ignore[attr-defined]
DECISIONS = set(DecisionKind.__args__)  # type: ignore[attr-defined]
RISKS = set(RiskLevel.__args__)  # type: ignore[attr-defined]
BLOCKERS = set(BlockerKind.__args__)  # type: ignore[attr-defined]


def test_there_are_captures_of_every_agent() -> None:
    agents = {p.parent.name for p in SIDECARS}
    assert {"claude", "codex", "aider", "shell"} <= agents
    assert len(SIDECARS) >= 100


@pytest.mark.parametrize("sidecar", SIDECARS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_sidecar_is_complete_and_names_real_files(sidecar: Path) -> None:
    meta = json.loads(sidecar.read_text())
    assert meta["format_version"] == 1
    assert meta["case_id"] == f"{sidecar.parent.name}/{sidecar.stem}"
    assert meta["agent"] == sidecar.parent.name
    assert sidecar.stem == f"{meta['scene']}.w{meta['width']}"
    text = (sidecar.parent / meta["files"]["plain"]).read_text()
    assert len(text.rstrip("\n").split("\n")) <= meta["height"]
    assert max(len(line) for line in text.split("\n")) <= meta["width"] + 2  # wide glyphs aside
    if "ansi" in meta["files"]:
        ansi = (sidecar.parent / meta["files"]["ansi"]).read_text()
        assert meta["agent"] == "shell" or "\x1b[" in ansi, "the agents' screens have colors"
    exp = meta["expected"]
    assert exp["state"] in STATES
    assert exp["prompt_kind"] is None or exp["prompt_kind"] in KINDS
    assert exp["decision"] is None or exp["decision"] in DECISIONS
    assert exp["risk"] is None or exp["risk"] in RISKS
    assert exp["blocker_kind"] is None or exp["blocker_kind"] in BLOCKERS
    if exp["decision"] == "answer":
        assert exp["keys"], "an answer names its keys"
    if exp["state"] == "blocked":
        assert exp["blocker_kind"], "a blocked screen names its blocker"
    assert meta["shows"]
