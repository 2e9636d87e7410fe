"""CPU used by the supervisor while the panes it watches are quiet, per pane-hour.

Starts N quiet agent panes (windows of one tmux session on a private socket; each shows a
Claude-style idle input box and then prints nothing), runs ``supervisor watch`` on them as a
separate process, lets it settle, then reads the process's CPU time (per-thread schedstat
nanoseconds, plus its tmux control-mode client children) over a quiet window and
extrapolates to seconds per pane-hour.

    .venv/bin/python bench/idle.py [--panes 1 10 50] [--seconds 40] [--poll]

Target: <= 0.5 CPU-seconds per pane-hour (event-driven). ``--poll`` also measures ``--poll 2.0``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
IDLE_SCREEN = ("printf '\\033]2;✳ Claude Code\\007⏺ Done. Tell me what to do next.\\n\\n"
               + "─" * 60 + "\\n❯ \\n" + "─" * 60 + "\\n  ? for shortcuts'; exec sleep 100000")


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` in seconds, from /proc/PID/task/*/schedstat (nanoseconds;
    utime+stime from /proc/PID/stat only counts 10 ms ticks). 0 if it is gone."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        return 0.0
    if total:
        return total / 1e9
    return _stat_seconds(pid)


def _stat_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def children(pid: int) -> list[int]:
    try:
        out = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(x) for x in out]


def measure(n: int, seconds: float, poll: float | None) -> dict[str, float]:
    socket = f"svidle-{uuid.uuid4().hex[:8]}"
    home = Path(tempfile.mkdtemp(prefix="sv-idle-"))
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "quiet", "-x", "100", "-y", "30", IDLE_SCREEN], check=True)
    for _ in range(n - 1):
        subprocess.run([*tmux, "new-window", "-d", "-t", "quiet", IDLE_SCREEN], check=True)
    env = dict(os.environ, SUPERVISOR_HOME=str(home), SUPERVISOR_TMUX_SOCKET=socket)
    cmd = [sys.executable, "-m", "supervisor", "watch", "--duration", str(seconds + 60)]
    if poll:
        cmd += ["--poll", str(poll)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # warm up: every pane found, first observations journaled, the warehouse synced once
        deadline = time.time() + 60
        while time.time() < deadline:
            if len(list((home / "journals").glob("*.jsonl"))) >= n:
                break
            time.sleep(0.5)
        time.sleep(8)
        kids = children(proc.pid)
        c0 = cpu_seconds(proc.pid)
        k0 = sum(cpu_seconds(k) for k in kids)
        time.sleep(seconds)
        c1 = cpu_seconds(proc.pid)
        k1 = sum(cpu_seconds(k) for k in kids)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)
    runs = len(list((home / "journals").glob("*.jsonl")))
    per_hour = 3600.0 / seconds
    return {"panes": n, "runs": runs, "cpu_s": c1 - c0, "children_cpu_s": k1 - k0,
            "per_pane_hour": (c1 - c0) * per_hour / n, "children_per_pane_hour": (k1 - k0) * per_hour / n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panes", type=int, nargs="+", default=[1, 10, 50])
    ap.add_argument("--seconds", type=float, default=60.0, help="quiet window measured for each pane count")
    ap.add_argument("--poll", action="store_true", help="also measure the --poll 2.0 fallback")
    args = ap.parse_args()
    modes: list[tuple[str, float | None]] = [("event-driven", None)] + ([("--poll 2.0", 2.0)] if args.poll else [])
    rows = []
    for label, poll in modes:
        for n in args.panes:
            r = measure(n, args.seconds, poll)
            r["mode"] = label
            rows.append(r)
            print(f"  measured {label} {n} panes", file=sys.stderr, flush=True)
    print(f"\nsupervisor CPU while panes are quiet ({args.seconds:g} s window, extrapolated), "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(f"{'mode':14} {'panes':>5} {'runs':>5} {'cpu s':>8} {'s/pane-hour':>12} {'tmux -C s/pane-hour':>20}")
    for r in rows:
        print(f"{r['mode']:14} {r['panes']:>5} {r['runs']:>5} {r['cpu_s']:>8.3f} {r['per_pane_hour']:>12.3f} "
              f"{r['children_per_pane_hour']:>20.3f}")
    print("target: <= 0.5 CPU-seconds per pane-hour (supervisor process); "
          f"cmd: {shlex.join(['supervisor', 'watch'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
