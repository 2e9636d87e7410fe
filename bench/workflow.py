"""Workflow overheads: what following a spec costs per observation.

Prints: checkpoint blocks parsed per second; screens per second through the exactly-once
filter when a screen shows 5 already-processed blocks (the common case: old checkpoints still
visible); gate decisions per second; and one real `command` verifier round trip.

    .venv/bin/python bench/workflow.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from supervisor.policy import Policy
from supervisor.workflow.checkpoint import CheckpointTracker, find_blocks, format_checkpoint, parse_body
from supervisor.workflow.gate import decide_checkpoint
from supervisor.workflow.spec import CommandVerifier, parse_spec
from supervisor.workflow.state import VerifierResult, initial_state
from supervisor.workflow.verifiers import run_verifier


def rate(n: int, fn) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    for i in range(n):
        fn(i)
    return n / (time.perf_counter() - t)


def main() -> None:
    blocks = [format_checkpoint({"checkpoint_seq": i, "status": "step_done", "current_node": f"s{i}",
                                 "summary": "did the thing " * 4, "evidence": ["ran pytest: 12 passed"]})
              for i in range(1, 6)]
    screen = "\n".join(["⏺ some output line"] * 20 + blocks + ["❯ "])
    print(f"parse: {rate(5000, lambda i: parse_body(blocks[i % 5])):,.0f} blocks/s")
    tracker = CheckpointTracker()
    tracker.admit_all(find_blocks(screen))
    print(f"exactly-once filter, screen with 5 old blocks: {rate(2000, lambda i: tracker.admit_all(find_blocks(screen))):,.0f} screens/s")
    spec = parse_spec("steps:\n  - id: s1\n    verify: [{type: command, run: 'true', id: t}]\n  - id: s2\n")
    st = initial_state(spec, "r")
    ev = CheckpointTracker().admit(blocks[0].replace("current_node: s1", "current_node: s1"))
    assert ev is not None
    ev.checkpoint_id = "c1"
    pol = Policy()
    res = {"t": VerifierResult(verifier="t", type="command", passed=False, output="boom")}
    print(f"gate: {rate(5000, lambda i: decide_checkpoint(ev, st, spec, res, pol)):,.0f} decisions/s")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        r = run_verifier(CommandVerifier(id="c", run="true"), Path(d))
        print(f"command verifier round trip (`true`): {(time.perf_counter() - t) * 1000:.1f} ms, passed={r.passed}")


if __name__ == "__main__":
    main()
