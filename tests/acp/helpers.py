"""Helpers for ACP tests: a scripted ACP agent (tests/acp/scripted_agent.py, a real subprocess over
stdio) under the real ``supervisor run --acp`` CLI (a real subprocess too), read through its journal."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from supervisor.journal import iter_events
from supervisor.models import Event
from supervisor.policy import baseline_policy
from tests.helpers import retry_until

REPO = Path(__file__).resolve().parents[2]
AGENT = Path(__file__).resolve().parent / "scripted_agent.py"


def write_agent_script(tmp: Path, turns: list[list[dict[str, Any]]], **top: Any) -> tuple[Path, Path]:
    """A scripted ACP agent's script and the log it will write (what it received and "ran")."""
    log = tmp / "agent-log.jsonl"
    script = tmp / "agent-script.json"
    script.write_text(json.dumps({"log": str(log), "turns": turns, **top}), encoding="utf-8")
    return script, log


def agent_argv(script: Path) -> list[str]:
    return [sys.executable, str(AGENT), str(script)]


def agent_log(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(ln) for ln in log.read_text(encoding="utf-8").splitlines() if ln.strip()]


def permissions(log: Path) -> dict[str, dict[str, Any]]:
    """What the agent was answered, by tool title."""
    return {r["title"]: r for r in agent_log(log) if r["event"] == "permission"}


def ran(log: Path) -> list[str]:
    """The titles of the tools the agent "ran" (only after an allow_* answer, or unasked)."""
    return [r["title"] for r in agent_log(log) if r["event"] == "ran"]


def policy_file(tmp: Path, *, rules_first: list[dict[str, Any]] | None = None, **timing: float) -> Path:
    """The baseline policy with extra answer rules in front (and timing overrides), as a file."""
    doc = baseline_policy().canonical()
    doc["name"] = "acp-test"
    if rules_first:
        doc["answers"]["rules"] = rules_first + doc["answers"]["rules"]
    doc["timing"] |= timing
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def start_run(env: dict[str, str], cwd: Path, argv: list[str], *options: str) -> subprocess.Popen[str]:
    """``supervisor run --acp [OPTIONS] -- ARGV`` in the background, in ``cwd``."""
    return subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--acp", *options, "--", *argv],
                            cwd=cwd, env=env | {"PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@contextmanager
def acp_run(env: dict[str, str], cwd: Path, argv: list[str], *options: str) -> Iterator[subprocess.Popen[str]]:
    """``start_run`` for a block that talks to the run while it lasts: whatever the block raises, the
    run is not left behind (killed and reaped if still alive)."""
    proc = start_run(env, cwd, argv, *options)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the run did not end within {timeout}s:\n{out}\n{err}") from None
    return proc.returncode, out, err


def journal(home: Path) -> tuple[str, list[Event]]:
    """The one run under ``home``: its id and journal events."""
    paths = list((home / "journals").glob("run_*.jsonl"))
    assert len(paths) == 1, paths
    return paths[0].stem, list(iter_events(paths[0]))


def wait_for_event(home: Path, pred: Any, what: str, seconds: float = 60) -> Event:
    def look() -> Event | None:
        paths = list((home / "journals").glob("run_*.jsonl")) if (home / "journals").exists() else []
        for p in paths:
            for e in iter_events(p):
                if pred(e):
                    return e
        return None

    return retry_until(look, seconds, message=what)


def decisions(evs: list[Event]) -> list[dict[str, Any]]:
    """The acting policy's decisions on permission requests, in order, with their observation's prompt."""
    obs = {e.event_id: e.payload["observation"] for e in evs if e.kind == "observation"}
    out = []
    for e in evs:
        if e.kind == "decision":
            d = e.payload["decision"]
            o = obs[d["trigger_id"]]
            if o["state"] == "asking":
                out.append(d | {"prompt": o["prompt"], "agent": o["agent"]})
    return out
