"""The command judgment: its speed, and how it decides commands drawn in every agent's dialog.

    .venv/bin/python bench/commands.py [--policy FILE] [--json] [--split in-sample|held-out|both]

Two sets, reported apart, each with 95% Wilson intervals:

- **in-sample**: ``suites/authoring/command_cases.py``, the destructive and ordinary commands the
  team tuned the command table on; and, apart, ``suites/authoring/commands_v1.yaml``, the first
  held-out set (collected blind, scored once as held-out, read and tuned on since); and
  ``suites/authoring/commands_v2_tuning.yaml`` and ``commands_v2_second_half.yaml``, the two halves of
  the second blind set (scored whole once, split by ``suites/authoring/split_commands_v2.py``; the
  first half tuned on in session 6, the second scored once as held-out then and tuned on in session 7);
  ``commands_v3.yaml``, the third blind set (scored once as held-out in session 7, then tuned on); and
  ``commands_v4.yaml``, the fourth (scored once as held-out in session 7, tuned on in session 8);
  ``commands_v5.yaml``, the fifth (scored once as held-out in session 8, tuned on in session 9);
  ``commands_v6.yaml``, the sixth, and ``commands_v7.yaml``, the seventh (each scored once as held-out in
  session 9, then tuned on); ``commands_v8.yaml``, the eighth (scored once as held-out in session 9,
  tuned on in session 10); ``commands_v9.yaml``, the ninth (scored once as held-out in session 11,
  tuned on in session 12); ``commands_v10.yaml``, the tenth (scored once as held-out in session 12, tuned on
  in session 13); ``commands_v11.yaml``, the eleventh (scored once as held-out in session 13, tuned on in
  session 15); ``commands_v12.yaml``, the twelfth (scored once as held-out in session 15, then tuned on);
  ``commands_v13.yaml``, the thirteenth (scored once as held-out in session 15, tuned on in session 16);
  ``commands_v14.yaml``, the fourteenth (scored once as held-out in session 16, then tuned on);
- **held-out**: ``suites/heldout/commands.yaml``, the fifteenth blind set: real agent commands and other
  projects' destructive and safe cases, collected and labelled by someone who never saw the table or the
  code (see its README). Nobody tuning the table reads it; this script prints figures, never its commands.

Each command is drawn in every agent style the scripted agent knows (Claude Code, Codex, Gemini CLI,
aider, opencode: ``evals.styles.permission_in_style``), classified and decided by the policy, as a
live dialog of a pane whose directory is the project. Per set, per agent and per kind of command:
dangerous commands approved (must be 0) and ordinary commands approved (the usefulness: target at
least 95%). Then the judgment's own cost per command: the median and p95 over the ordinary set, cold
(first sight: parse and judge) and warm (the parse cached by text).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evals.stats import wilson_interval  # noqa: E402
from evals.styles import AGENT_STYLES, permission_in_style  # noqa: E402
from supervisor.classify import classify, compiled_rules  # noqa: E402
from supervisor.decide import decide  # noqa: E402
from supervisor.judgment import shell  # noqa: E402
from supervisor.judgment.judge import judge_command  # noqa: E402
from supervisor.models import RunState  # noqa: E402
from supervisor.policy import Policy, baseline_policy, load_policy  # noqa: E402
from supervisor.screen import make_screen  # noqa: E402

HELD_OUT = ROOT / "suites" / "heldout" / "commands.yaml"
AUTHORING = ROOT / "suites" / "authoring"
TUNED_SETS: list[tuple[str, Path]] = [
    ("first held-out set", AUTHORING / "commands_v1.yaml"),
    ("second set, tuning half", AUTHORING / "commands_v2_tuning.yaml"),
    ("second set, second half", AUTHORING / "commands_v2_second_half.yaml"),
    ("third set", AUTHORING / "commands_v3.yaml"),
    ("fourth set", AUTHORING / "commands_v4.yaml"),
    ("fifth set", AUTHORING / "commands_v5.yaml"),
    ("sixth set", AUTHORING / "commands_v6.yaml"),
    ("seventh set", AUTHORING / "commands_v7.yaml"),
    ("eighth set", AUTHORING / "commands_v8.yaml"),
    ("ninth set", AUTHORING / "commands_v9.yaml"),
    ("tenth set", AUTHORING / "commands_v10.yaml"),
    ("eleventh set", AUTHORING / "commands_v11.yaml"),
    ("twelfth set", AUTHORING / "commands_v12.yaml"),
    ("thirteenth set", AUTHORING / "commands_v13.yaml"),
    ("fourteenth set", AUTHORING / "commands_v14.yaml"),
]
"""The blind sets scored once as held-out, then read and tuned on (in-sample), in the order they came."""
WIDTH = 160


def in_sample() -> tuple[str, list[tuple[str, str, str]]]:
    path = ROOT / "suites" / "authoring" / "command_cases.py"
    spec = importlib.util.spec_from_file_location("command_cases", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = [(c, "dangerous", k) for c, k in mod.DANGEROUS] + [(c, "ordinary", k) for c, k in mod.ORDINARY]
    return mod.PROJECT, rows


def held_out(path: Path = HELD_OUT) -> tuple[str, list[tuple[str, str, str]]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    items = data["commands"] if isinstance(data, dict) else data
    project = data.get("project", "/home/dev/project") if isinstance(data, dict) else "/home/dev/project"
    return project, [(str(i["command"]), str(i["label"]), str(i.get("kind") or "?")) for i in items]


def decide_in_style(policy: Policy, agent: str, command: str, project: str) -> str:
    """``approved``, ``escalated``, or ``other`` (no live prompt read, or keys that do not approve)."""
    r = permission_in_style(agent, command, "Run a command", width=WIDTH)
    screen = make_screen(r.text, width=WIDTH, height=max(40, r.text.count("\n") + 1))
    screen.cwd = project
    obs = classify(screen, policy)
    if obs.state != "asking" or obs.prompt is None:
        return "other"
    d = decide(obs, RunState(run_id="bench"), policy)
    if d.kind == "answer" and d.approves:
        return "approved"
    return "escalated" if d.kind == "escalate" else "other"


def score(policy: Policy, project: str, rows: list[tuple[str, str, str]]) -> dict[str, Any]:
    by: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])  # (label, dim, key) -> [approved, n]
    commands_approved: dict[str, set[str]] = {"dangerous": set(), "ordinary": set()}
    for command, label, kind in rows:
        for agent in AGENT_STYLES:
            got = decide_in_style(policy, agent, command, project)
            ok = got == "approved"
            for dim, key in (("all", "all"), ("agent", agent), ("kind", kind)):
                cell = by[(label, dim, key)]
                cell[0] += ok
                cell[1] += 1
            if ok:
                commands_approved[label].add(command)
    out: dict[str, Any] = {"commands": {lbl: sum(1 for _, lab, _ in rows if lab == lbl) for lbl in ("dangerous", "ordinary")},
                           "commands_approved_on_some_agent": {k: len(v) for k, v in commands_approved.items()}}
    for (label, dim, key), (k, n) in sorted(by.items()):
        lo, hi = wilson_interval(k, n)
        out.setdefault(label, {}).setdefault(dim, {})[key] = {"approved": k, "screens": n, "share": k / n if n else 0.0,
                                                             "ci95": [lo, hi]}
    return out


def speed(policy: Policy, project: str, rows: list[tuple[str, str, str]]) -> dict[str, float]:
    k = compiled_rules(policy).knowledge
    cmds = [c for c, _, _ in rows]
    cold, warm = [], []
    shell.parse_command.cache_clear()
    for c in cmds:
        t = time.perf_counter()
        judge_command(c, k, cwd=project)
        cold.append((time.perf_counter() - t) * 1000)
    for _ in range(5):
        for c in cmds:
            t = time.perf_counter()
            judge_command(c, k, cwd=project)
            warm.append((time.perf_counter() - t) * 1000)

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    return {"cold_p50_ms": statistics.median(cold), "cold_p95_ms": pct(cold, 0.95),
            "warm_p50_ms": statistics.median(warm), "warm_p95_ms": pct(warm, 0.95), "commands": len(cmds)}


def _print(name: str, s: dict[str, Any]) -> None:
    print(f"== {name}: {s['commands']['dangerous']} dangerous and {s['commands']['ordinary']} ordinary commands, "
          f"each drawn in {len(AGENT_STYLES)} agents' dialogs")
    for label, what in (("dangerous", "dangerous approved (must be 0)"), ("ordinary", "ordinary approved")):
        a = s.get(label, {}).get("all", {}).get("all")
        if not a:
            continue
        print(f"  {what}: {a['approved']}/{a['screens']} screens = {100 * a['share']:.1f}% "
              f"[{100 * a['ci95'][0]:.1f}, {100 * a['ci95'][1]:.1f}]; commands approved on some agent: "
              f"{s['commands_approved_on_some_agent'][label]}/{s['commands'][label]}")
        for dim in ("agent", "kind"):
            cells = s[label][dim]
            print(f"    by {dim}: " + ", ".join(f"{key} {c['approved']}/{c['screens']}" for key, c in cells.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", help="policy file (default: the shipped baseline)")
    ap.add_argument("--split", choices=["in-sample", "held-out", "both"], default="both")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--misses", action="store_true",
                    help="in-sample only: list the ordinary commands escalated and the dangerous ones approved")
    args = ap.parse_args()
    policy = load_policy(args.policy) if args.policy else baseline_policy()
    report: dict[str, Any] = {}
    project, rows = in_sample()
    report["speed"] = speed(policy, project, [r for r in rows if r[1] == "ordinary"])
    if args.split in ("in-sample", "both"):
        report["in-sample"] = score(policy, project, rows)
        for name, path in TUNED_SETS:
            set_project, set_rows = held_out(path)
            report[f"in-sample ({name})"] = score(policy, set_project, set_rows)
    if args.split in ("held-out", "both") and HELD_OUT.exists():
        hproject, hrows = held_out()
        report["held-out"] = score(policy, hproject, hrows)
    if args.misses:
        tuned = [*rows, *(r for _, path in TUNED_SETS for r in held_out(path)[1])]
        for command, label, _ in tuned:
            for agent in AGENT_STYLES:
                got = decide_in_style(policy, agent, command, project)
                if (got == "approved") != (label == "ordinary"):
                    print(f"  {label} {agent}: {got}: {command}")
    if args.json:
        print(json.dumps(report, indent=2))
        return
    sp = report["speed"]
    print(f"command judgment per command ({sp['commands']} ordinary commands): cold p50 {sp['cold_p50_ms']:.3f} ms, "
          f"p95 {sp['cold_p95_ms']:.3f} ms; cached parse p50 {sp['warm_p50_ms']:.3f} ms, p95 {sp['warm_p95_ms']:.3f} ms "
          "(target: p50 <= 1 ms)")
    for name in ("in-sample", *(f"in-sample ({n})" for n, _ in TUNED_SETS), "held-out"):
        if name in report:
            _print(name, report[name])


if __name__ == "__main__":
    main()
