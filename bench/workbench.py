"""The workbench's speed, as a user meets it: `supervisor eval run` and `supervisor eval gate-candidate`
timed through the real CLI in a fresh home, against the issue's targets.

- `eval run --suite all` (episodes included) and `--suite episodes`: at most 15 s for all;
- `eval gate-candidate` with the project's candidates/gate.yaml: at most 60 s from cold (neither
  the baseline nor the candidate evaluated yet), at most 15 s for a second candidate once the
  baseline's evaluation is in the warehouse;
- the same gate with candidates/demo-gate.yaml (no episode suites), as `make demo` runs it.

Each line gives the wall time, the CPU time of the command and its children (on a machine other
work shares, wall time can be several times the CPU time) and the load average when it ended.

    python bench/workbench.py [--quick]   # --quick: skip the episode-suite runs and the full gate
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def timed(label: str, args: list[str], env: dict[str, str], target: float | None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "supervisor", *args], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=3600)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    verdict = ""
    if "gate-candidate" in args:
        verdict = next((w for w in ("PROMOTE", "HOLD", "REJECT") if r.stdout.lstrip().startswith(w)), "?")
    goal = "" if target is None else f"  target <= {target:.0f}s: {'met' if wall <= target else 'MISSED'}"
    print(f"{label:58s} {wall:7.1f}s wall {cpu:7.1f}s cpu  load {os.getloadavg()[0]:5.1f}  exit {r.returncode}"
          f"{' ' + verdict if verdict else ''}{goal}", flush=True)
    if r.returncode not in (0, 1):
        print(r.stderr[-2000:], file=sys.stderr)
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the episode-suite runs and the full gate")
    args = ap.parse_args()
    from evals.candidates import write_candidate
    from evals.propose import answer_rule
    from supervisor.policy import baseline_policy

    tmp = Path(tempfile.mkdtemp(prefix="bench-workbench-"))
    env = dict(os.environ, SUPERVISOR_HOME=str(tmp / "home"), SUPERVISOR_CANDIDATES=str(tmp / "candidates"),
               PYTHONUNBUFFERED="1")
    for k in ("SUPERVISOR_WAREHOUSE", "SUPERVISOR_POLICY", "ANTHROPIC_API_KEY"):
        env.pop(k, None)
    base = baseline_policy()
    for name, question in (("answer-db", "● Which database should the service use?"),
                           ("answer-format", "● Which format should the report use?")):
        write_candidate(name, answer_rule("claude", "numbered_menu", question, "SQLite", name), parent="baseline",
                        parent_policy=base, objective="reduce_friction", root=tmp / "candidates")
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f} at start; home {tmp}")
    timed("eval run --suite all --no-episodes", ["eval", "run", "--suite", "all", "--no-episodes",
                                                  "--no-save-report", "--json"], env, None)
    if not args.quick:
        timed("eval run --suite episodes", ["eval", "run", "--suite", "episodes", "--no-save-report", "--json"], env,
              None)
        timed("eval run --suite all", ["eval", "run", "--suite", "all", "--no-save-report", "--json"], env, 15)
    demo_gate = str(REPO / "candidates" / "demo-gate.yaml")
    timed("gate-candidate (demo-gate.yaml), cold", ["eval", "gate-candidate", "answer-db", "--gate", demo_gate,
                                                    "--no-save-report"], env, 60)
    timed("gate-candidate (demo-gate.yaml), baseline cached", ["eval", "gate-candidate", "answer-format", "--gate",
                                                               demo_gate, "--no-save-report"], env, 15)
    if not args.quick:
        env2 = dict(env, SUPERVISOR_HOME=str(tmp / "home-full"))
        timed("gate-candidate (gate.yaml, episodes), cold", ["eval", "gate-candidate", "answer-db",
                                                             "--no-save-report"], env2, 60)
        timed("gate-candidate (gate.yaml, episodes), baseline cached", ["eval", "gate-candidate", "answer-format",
                                                                        "--no-save-report"], env2, 15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
