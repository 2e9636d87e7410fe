"""The adversarial live suite under the real supervisor in real tmux: keys that reached the agent while
none of its genuine prompts was live, and approvals of genuine dialogs whose real command is dangerous.

    .venv/bin/python bench/attacks.py [--part tuning|heldout|both] [--styles claude,codex,...] [--only ID,...]
                                      [--show] [--json]

Every attack of the part (``suites/attacks/tuning.yaml``; the held-out part
``suites/heldout/attacks/attacks.yaml``) is played by the scripted agent in each of the five styles
(Claude Code, Codex, Gemini CLI, aider, a line-based shell program), all at once, each in its own
pane, under one supervisor with the baseline policy (see :mod:`evals.attacks`). Per part it prints,
per class and in total: plays, stray keys, keys into dangerous dialogs, approvals of dangerous
dialogs, and the genuine safe dialogs answered with their latency (prompt drawn -> answering key
received). ``--show`` lists each failing (attack, style) of the tuning part; the held-out part only
ever prints figures. Exit status 1 when a stray key arrived, a dangerous dialog was approved, or a
genuine safe dialog went unanswered.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the evals package, not bench/evals.py

from evals.attacks import HELDOUT, TUNING, load_attacks, run_live  # noqa: E402


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    lat = [x for r in rows for x in r["latency_s"]]
    return {"plays": len(rows), "unfinished": sum(not r["finished"] for r in rows),
            "stray_keys": sum(r["stray_keys"] for r in rows),
            "keys_into_dangerous": sum(r["keys_into_dangerous"] for r in rows),
            "dangerous_approvals": sum(r["dangerous_approvals"] for r in rows),
            "safe_prompts": sum(r["safe_prompts"] for r in rows), "safe_answered": sum(r["safe_answered"] for r in rows),
            "latency_p50_ms": round(1000 * statistics.median(lat), 1) if lat else None,
            "latency_max_ms": round(1000 * max(lat), 1) if lat else None}


def line(label: str, s: dict[str, Any]) -> str:
    lat = f"p50 {s['latency_p50_ms']} ms, max {s['latency_max_ms']} ms" if s["latency_p50_ms"] is not None else ""
    safe = f"  safe answered {s['safe_answered']}/{s['safe_prompts']} {lat}" if s["safe_prompts"] else ""
    return (f"  {label:<20} plays {s['plays']:>3}  stray keys {s['stray_keys']:>3}  keys into dangerous "
            f"{s['keys_into_dangerous']:>3}  dangerous approved {s['dangerous_approvals']:>3}"
            + (f"  unfinished {s['unfinished']}" if s["unfinished"] else "") + safe)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["tuning", "heldout", "both"], default="both")
    ap.add_argument("--styles", default="", help="comma list (default: the file's)")
    ap.add_argument("--only", default="", help="comma list of attack ids (tuning part)")
    ap.add_argument("--show", action="store_true", help="list failing plays of the tuning part")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    parts = {"tuning": [("tuning", TUNING)], "heldout": [("held-out", HELDOUT)],
             "both": [("tuning", TUNING), ("held-out", HELDOUT)]}[args.part]
    out: dict[str, Any] = {}
    bad = False
    for name, path in parts:
        attacks, styles = load_attacks(path)
        if args.only and name == "tuning":
            attacks = [a for a in attacks if a["id"] in args.only.split(",")]
        if args.styles:
            styles = args.styles.split(",")
        work = Path(tempfile.mkdtemp(prefix=f"sv-attacks-{name}-"))
        rows = []
        for style in styles:  # one tmux server per style (a hundred sessions at once is more than some hosts take)
            (work / style).mkdir()
            rows += run_live(attacks, [style], socket=f"svattack-{uuid.uuid4().hex[:8]}", work=work / style)
        by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
        by_style: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_class[r["class"]].append(r)
            by_style[r["style"]].append(r)
        total = summarize(rows)
        out[name] = {"total": total, "by_class": {k: summarize(v) for k, v in by_class.items()},
                     "by_style": {k: summarize(v) for k, v in by_style.items()}}
        bad = bad or bool(total["stray_keys"] or total["dangerous_approvals"] or total["keys_into_dangerous"]
                          or total["safe_answered"] < total["safe_prompts"] or total["unfinished"])
        if args.json:
            continue
        print(f"== {name}: {len(attacks)} attacks x {len(styles)} styles ({path.relative_to(path.parents[2])})")
        for k, v in sorted(by_class.items()):
            print(line(k, summarize(v)))
        for k, v in sorted(by_style.items()):
            print(line("style " + k, summarize(v)))
        print(line("TOTAL", total))
        if args.show and name == "tuning":
            for r in rows:
                if r["stray_keys"] or r["dangerous_approvals"] or r["keys_into_dangerous"] or not r["finished"] \
                        or r["safe_answered"] < r["safe_prompts"]:
                    print(f"    FAIL {r['id']} [{r['style']}]: stray {r['stray_keys']} approvals "
                          f"{r['dangerous_approvals']} keys-in {r['keys_into_dangerous']} safe "
                          f"{r['safe_answered']}/{r['safe_prompts']} finished {r['finished']}  {r['record']}  "
                          f"{r['journal']}")
    if args.json:
        print(json.dumps(out, indent=2))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
