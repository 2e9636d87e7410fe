"""Real captures -> screen cases: the one reading of a capture's sidecar (suites/captures/README.md)
as a suite case, so the suites built from captures cannot drift apart in what a label means.

Used by ``make_golden.py`` (format 1: ``suites/captures.yaml``) and ``tests/e2e/capture_suites.py``
(format 2: ``suites/agent_captures.yaml`` and the held-out suite). Each caller keeps only what is
its own: which sidecars enter, the format-1 review of keys, and how its suite file is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Agents whose prompts are a line of text (aider's `(Y)es/(N)o`, shell programs): such a prompt's kind
# is a matter of naming, the answer is what counts, so any of these kinds is accepted.
LINE_AGENTS = ("aider", "shell")
LINE_KINDS = ("yes_no", "edit_approval", "tool_permission")
# A finish needs a run that worked and one idle screen before.
FINISH_RUN_STATE = {"saw_work": True, "idle_streak": 1}


def sidecars(root: Path, format_version: int) -> list[tuple[Path, dict[str, Any]]]:
    """The sidecars of one capture format below ``root`` (``<folder>/<scene>.w<width>.json``), by name;
    a sidecar without ``format_version`` is format 1."""
    out = []
    for path in sorted(root.glob("*/*.json")):
        meta = json.loads(path.read_text(encoding="utf-8"))
        if meta.get("format_version", 1) == format_version:
            out.append((path, meta))
    return out


def capture_expected(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The case's expectation from the sidecar's ``expected`` label, and the run state the screen
    needs (a finish is only right after work), or None."""
    e = meta.get("expected") or {}
    agent = meta.get("agent")
    exp: dict[str, Any] = {"state": e["state"]}
    if agent and agent != "unknown":
        exp["agent"] = agent
    if e["state"] != "asking":
        exp["prompt_kind"] = None  # no live prompt
    elif e.get("prompt_kind"):
        kind = e["prompt_kind"]
        if agent in LINE_AGENTS and kind in LINE_KINDS:
            kind = sorted({kind, "yes_no", "tool_permission"})
        exp["prompt_kind"] = kind
    run_state = None
    if e.get("decision"):
        exp["decision"] = e["decision"]
        if e["decision"] == "finish":
            run_state = dict(FINISH_RUN_STATE)
    if e.get("keys"):
        keys = e["keys"]  # one key sequence, or a list of sequences that each answer
        exp["keys"] = [list(k) for k in keys] if isinstance(keys[0], list) else [list(keys)]
    if e.get("decision") == "escalate":
        exp["approves"] = None
    if e.get("risk"):
        exp["risk"] = e["risk"]
    if e.get("blocker_kind"):
        exp["blocker"] = e["blocker_kind"]
    return exp, run_state


def capture_case(sidecar: Path, meta: dict[str, Any], rel_root: Path,
                 gaps: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The screen case of one capture, every field written out. Its id is ``cap-`` (format 1) or
    ``cap2-`` (format 2) and the case id; the screen file is named relative to ``rel_root`` (the
    suite file's folder). A dangerous subject or a prompt whose default declines makes the case
    severe and must-pass, unless ``gaps`` lists it (case id -> what the baseline gets wrong):
    then it is tagged ``known-gap`` and says so in its note."""
    gaps = gaps or {}
    e = meta.get("expected") or {}
    round2 = meta.get("format_version", 1) == 2
    cid = ("cap2-" if round2 else "cap-") + meta["case_id"].replace("/", "-")
    exp, run_state = capture_expected(meta)
    danger = e.get("risk") == "dangerous" or e.get("default_approves") is False
    tags = ["captured", *(["round2"] if round2 else []), meta["case_id"].split("/")[0], meta["scene"]]
    # Format 2 labels name the subject a dialog would approve; a permission that names none is a human's call.
    if "subject" in e and e["state"] == "asking" and e["subject"] is None \
            and e.get("prompt_kind") in ("tool_permission", "edit_approval"):
        tags.append("unknown-subject")
    if cid in gaps:
        tags.append("known-gap")
    inp: dict[str, Any] = {"file": str((sidecar.parent / meta["files"]["plain"]).relative_to(rel_root)),
                           "width": meta["width"], "height": meta["height"]}
    if meta.get("title"):
        inp["title"] = meta["title"]
    if meta.get("current_command"):
        inp["current_command"] = meta["current_command"]
    if meta.get("dead"):
        inp["dead"] = True
    if run_state:
        inp["run_state"] = run_state
    note = meta.get("shows", "") + (" · " + e["note"] if e.get("note") else "")
    if cid in gaps:
        note += f" · KNOWN GAP: {gaps[cid]}"
    return {"id": cid, "tags": tags, "severity": 3 if danger else 1, "must_pass": bool(danger and cid not in gaps),
            "note": note, "input": inp, "expected": exp}
