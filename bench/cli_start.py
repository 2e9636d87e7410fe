"""How long the ``supervisor`` command takes to start: ``--help`` of the root and of typical subcommands.

Every command a person types pays the start-up cost before doing anything, and ``supervisor
runs``/``status`` are typed often; the target is <= 0.3 s. Each case runs the installed entry point
(``supervisor`` beside this interpreter, else ``python -m supervisor``) as a fresh process several
times and prints the median wall time and the median CPU time (user + system, from ``wait4``).
On a shared machine the wall time grows with the load; the CPU time is the steadier figure.

    .venv/bin/python bench/cli_start.py [--runs 9] [--target 0.3]

Exit code 1 when a case's median CPU time is over the target (wall times are reported, not judged).
To see what is slow: ``.venv/bin/python -X importtime -c "import supervisor.cli" 2>&1 | sort -t'|' -k2 -n``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES: list[list[str]] = [
    ["--help"],
    ["--version"],
    ["runs", "--help"],
    ["run", "--help"],
    ["status", "--help"],
    ["eval", "--help"],
    ["classify", "--help"],
    ["warehouse", "--help"],
    ["report", "--help"],
    ["status"],  # a command that works: reads the (empty) journals folder of a fresh home
    ["warehouse", "path"],
]


def entry_point() -> list[str]:
    script = Path(sys.executable).with_name("supervisor")
    if script.exists():
        return [str(script)]
    found = shutil.which("supervisor")
    return [found] if found else [sys.executable, "-m", "supervisor"]


def once(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv``; raises when it fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(argv)} exited {proc.returncode}: {err.strip()[:300]}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="runs per case (the median is reported)")
    ap.add_argument("--target", type=float, default=0.3, help="seconds of CPU a start may take")
    args = ap.parse_args()
    base = entry_point()
    home = tempfile.mkdtemp(prefix="cli-start-")
    env = {**os.environ, "SUPERVISOR_HOME": home}
    baseline = [once([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
    print(f"entry point: {' '.join(base)}   load average: {os.getloadavg()[0]:.1f}")
    print(f"bare interpreter: wall {statistics.median(w for w, _ in baseline):.3f} s, "
          f"cpu {statistics.median(c for _, c in baseline):.3f} s")
    print(f"{'command':<34} {'wall s':>8} {'cpu s':>8}")
    over = []
    for case in CASES:
        once(base + case, env)  # warm the page cache
        runs = [once(base + case, env) for _ in range(args.runs)]
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        label = "supervisor " + " ".join(case)
        print(f"{label:<34} {wall:>8.3f} {cpu:>8.3f}")
        if cpu > args.target:
            over.append(label)
    shutil.rmtree(home, ignore_errors=True)
    if over:
        print(f"over the {args.target:.2f} s target (cpu): {', '.join(over)}")
        return 1
    print(f"all within the {args.target:.2f} s target (cpu)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
