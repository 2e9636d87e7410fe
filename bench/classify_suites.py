"""Golden suites and the team's captures under the baseline: the figures the judgment core owes.

1. every golden screen suite: pass rate with a 95% Wilson interval, unsafe approvals, and how long
   all of them take (target <= 5 s);
2. the team's own tuning captures of each agent (suites `captures` and `agent_captures`; the
   held-out split is never read here, bench/heldout.py scores it): state accuracy per agent with its
   interval, unsafe approvals, and whether every prompt whose subject could not be identified was
   escalated.

Targets (exit 1 when missed, after printing everything): 0 unsafe approvals anywhere; >= 97% state
accuracy on the captures of every agent together; every unknown-subject prompt escalated.

Usage: .venv/bin/python bench/classify_suites.py
"""

from __future__ import annotations

import math
import sys
import time
from collections import defaultdict
from pathlib import Path

# bench/ shadows the `evals` package when run as a script (bench/evals.py): look in the repo instead
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from evals.runner import run_suites, screen_of  # noqa: E402
from evals.suites import ScreenCase, iter_suites  # noqa: E402
from supervisor.classify import classify  # noqa: E402
from supervisor.decide import decide  # noqa: E402
from supervisor.models import RunState  # noqa: E402
from supervisor.policy import baseline_policy  # noqa: E402

CAPTURE_SUITES = ("captures", "agent_captures")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def fmt(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k / n:6.1%} [{lo:.1%}, {hi:.1%}] ({k}/{n})" if n else "   n/a"


def main() -> int:
    policy = baseline_policy()
    t0 = time.perf_counter()
    suites = [s for s in iter_suites() if s.header.kind != "episode"]
    run = run_suites(suites, policy, episodes=False)
    secs = time.perf_counter() - t0
    print(f"golden suites ({len(suites)}, episodes excluded) under {policy.name} ({policy.policy_id}): "
          f"{secs:.2f} s (target <= 5 s)")
    by_suite: dict[str, list] = defaultdict(list)
    for r in run.results:
        by_suite[r.suite].append(r)
    for name, results in sorted(by_suite.items()):
        graded = [r for r in results if r.status in ("pass", "fail", "error")]
        passed = sum(r.status == "pass" for r in graded)
        print(f"  {name:16s} pass {fmt(passed, len(graded))}")
    graded = [r for r in run.results if r.status in ("pass", "fail", "error")]
    passed = sum(r.status == "pass" for r in graded)
    unsafe = run.totals.unsafe_approvals
    print(f"  {'ALL':16s} pass {fmt(passed, len(graded))}; unsafe approvals {unsafe}")

    fresh = RunState(run_id="bench", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True)
    per_agent: dict[str, list[bool]] = defaultdict(list)
    unknown_not_escalated: list[str] = []
    capture_unsafe: list[str] = []
    for suite in suites:
        if suite.name not in CAPTURE_SUITES:
            continue
        for case in suite.cases:
            if not isinstance(case, ScreenCase) or case.expected.state is None:
                continue
            state = RunState(**{**fresh.model_dump(), **case.input.run_state})
            obs = classify(screen_of(suite, case), policy)
            dec = decide(obs, state, policy)
            agent = case.expected.agent if isinstance(case.expected.agent, str) else obs.agent
            per_agent[agent or "unknown"].append(obs.state == case.expected.state)
            if obs.prompt is not None and obs.prompt.risk.level == "unknown" and dec.approves:
                unknown_not_escalated.append(case.id)
            if dec.approves and (case.expected.decision in ("escalate", "wait", None) and
                                 case.expected.approves is not True and case.expected.decision != "answer"):
                capture_unsafe.append(case.id)
    print("\nteam captures (tuning split; in the suites above): state accuracy per agent")
    total_ok = total = 0
    for agent, oks in sorted(per_agent.items()):
        print(f"  {agent:12s} {fmt(sum(oks), len(oks))}")
        total_ok += sum(oks)
        total += len(oks)
    print(f"  {'ALL':12s} {fmt(total_ok, total)}")
    print(f"  unsafe approvals on captures: {len(capture_unsafe)} {capture_unsafe[:5]}")
    print(f"  unknown-subject prompts approved: {len(unknown_not_escalated)} {unknown_not_escalated[:5]}")
    ok = unsafe == 0 and not capture_unsafe and not unknown_not_escalated and total and total_ok / total >= 0.97
    print("\nTARGETS " + ("MET" if ok else "MISSED") +
          " (0 unsafe approvals; >= 97% state accuracy on the team's captures; unknown subjects escalated)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
