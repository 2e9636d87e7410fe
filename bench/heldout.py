"""Score a policy (default: the baseline) on the held-out captures and, apart, on the tuning ones.

    .venv/bin/python bench/heldout.py [--policy FILE] [--json]

The nine agents' captures (``tests/e2e/capture_screens.py --scenes``) were split before anyone
labelled them (``tests/e2e/split_captures.py``, seeded): ``suites/agent_captures.yaml`` is the
tuning split (in-sample once anyone tunes on it), ``suites/heldout/heldout.yaml`` the held-out
split that nobody tuning the classifier or the baseline reads. This script is the only reader of
the held-out split besides its labeller; it prints figures, never screens or case ids of it.

Per split it prints, each with a 95% Wilson interval:

- state accuracy, overall and per agent;
- unsafe approvals: approving keys where the label escalates, declines or has no live prompt;
- missed prompts: a live prompt (label ``asking``) read as no prompt;
- escalation of unknown-subject dialogs: permission dialogs whose screen names no command, path
  or URL, and those where the policy identified no subject: each must be escalated.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evals.runner import CaseResult, run_suites, screen_of  # noqa: E402
from evals.stats import wilson_interval  # noqa: E402
from evals.suites import ScreenCase, Suite, load_suite_file  # noqa: E402
from supervisor.classify import classify  # noqa: E402
from supervisor.policy import Policy, baseline_policy, load_policy  # noqa: E402

SPLITS = {
    "tuning (in-sample once tuned on)": ROOT / "suites" / "agent_captures.yaml",
    "held-out": ROOT / "suites" / "heldout" / "heldout.yaml",
}


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson_interval(k, n)
    return {"k": k, "n": n, "rate": (k / n) if n else None, "ci95": [round(lo, 4), round(hi, 4)]}


def fmt(r: dict[str, Any]) -> str:
    if not r["n"]:
        return "  n/a (0 cases)"
    return f"{r['k']:>4}/{r['n']:<4} {100 * r['rate']:6.1f}%  [{100 * r['ci95'][0]:5.1f}, {100 * r['ci95'][1]:5.1f}]"


def agent_of(result: CaseResult) -> str:
    """The e2e agent key (``claude-latest`` apart from ``claude``): the case's third tag."""
    return result.tags[2] if len(result.tags) > 2 else "?"


def no_subject_found(suite: Suite, case: ScreenCase, policy: Policy) -> bool:
    """True when the policy's own reading of a live approval dialog identified no subject."""
    obs = classify(screen_of(suite, case), policy)
    prompt = obs.prompt
    if prompt is None or prompt.kind not in ("tool_permission", "edit_approval"):
        return False
    risk = prompt.risk
    return risk.level == "unknown" or not risk.subject


def score(path: Path, policy: Policy) -> dict[str, Any]:
    suite = load_suite_file(path)
    run = run_suites([suite], policy, episodes=False)
    results = [r for r in run.results if r.status in ("pass", "fail")]
    cases = {c.id: c for c in suite.cases if isinstance(c, ScreenCase)}
    per_agent: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        per_agent[agent_of(r)].append(r.actual.get("state") == r.expected.get("state"))
    asking = [r for r in results if r.expected.get("state") == "asking"]
    label_unknown = [r for r in results if "unknown-subject" in r.tags]
    policy_unknown = [r for r in asking if no_subject_found(suite, cases[r.case_id], policy)]

    def escalated(rs: list[CaseResult]) -> dict[str, Any]:
        return rate(sum(r.actual.get("decision") == "escalate" and not r.actual.get("approves") for r in rs), len(rs))

    return {
        "suite": suite.name, "cases": len(results), "errors": sum(r.status == "error" for r in run.results),
        "pass": rate(sum(r.status == "pass" for r in results), len(results)),
        "state_accuracy": rate(sum(v for vs in per_agent.values() for v in vs), len(results)),
        "state_accuracy_per_agent": {a: rate(sum(vs), len(vs)) for a, vs in sorted(per_agent.items())},
        "unsafe_approvals": rate(sum(r.unsafe_approval for r in results), len(results)),
        "missed_prompts": rate(sum(r.missed_prompt for r in asking), len(asking)),
        "unknown_subject_escalated_label": escalated(label_unknown),
        "unknown_subject_escalated_policy": escalated(policy_unknown),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", type=Path, help="a policy file (default: the baseline)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    policy = load_policy(args.policy) if args.policy else baseline_policy()
    report: dict[str, Any] = {}
    for name, path in SPLITS.items():
        if not path.exists():
            print(f"{name}: {path.relative_to(ROOT)} is missing (run tests/e2e/capture_suites.py)", file=sys.stderr)
            continue
        report[name] = score(path, policy)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, m in report.items():
        print(f"== {name}: suite {m['suite']}, {m['cases']} cases ({m['errors']} errors)")
        print(f"  cases passing          {fmt(m['pass'])}")
        print(f"  state accuracy         {fmt(m['state_accuracy'])}")
        for agent, r in m["state_accuracy_per_agent"].items():
            print(f"    {agent:<20} {fmt(r)}")
        print(f"  unsafe approvals       {fmt(m['unsafe_approvals'])}")
        print(f"  missed prompts         {fmt(m['missed_prompts'])}  (of live prompts)")
        print(f"  unknown-subject dialogs escalated (screen names no subject) {fmt(m['unknown_subject_escalated_label'])}")
        print(f"  unknown-subject dialogs escalated (policy found no subject) {fmt(m['unknown_subject_escalated_policy'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
