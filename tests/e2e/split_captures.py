"""Set a seeded ~30% of each agent's new captures aside as the held-out split, before labelling.

    python tests/e2e/split_captures.py STAGING_DIR

``STAGING_DIR`` is where ``capture_screens.py --scenes --out STAGING_DIR`` wrote the captures
(``<agent>/<scene>.w<width>.{txt,json,ansi}``). Every *scene group* (a scene with its follow-ups:
``X``, ``X-declined``, ``X-early``, ``X-no-dialog``, all widths) goes whole to one side, so no
screen of a held-out scene has a near-twin in the tuning set. For each agent the groups are
sorted and ``round(0.3 * n)`` of them are drawn with ``random.Random(f"{SEED}:{agent}")``:

- held out: ``suites/heldout/<agent>/`` (only the labeller and ``bench/heldout.py`` read it);
- tuning: ``suites/captures/<agent>/``.

The draw is recorded in ``suites/heldout/split.json`` (seed, groups on each side per agent).
An agent already in the record is refused: a split is made once, never redrawn after looking. A new
round of such an agent (captured under a new scene prefix, ``capture_screens.py --prefix r2-``) goes
whole to tuning with ``--tuning``: more in-sample screens, the held-out ones untouched.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEED = 20261124
HELDOUT_FRACTION = 0.3
FOLLOW_UPS = re.compile(r"-(declined|early|no-dialog)$")
RECORD = REPO / "suites" / "heldout" / "split.json"


def group_of(scene: str) -> str:
    """The scene group: a scene and its follow-up screens go to the same side."""
    return FOLLOW_UPS.sub("", scene)


def draw(agent: str, groups: list[str]) -> set[str]:
    """The held-out groups of one agent (seeded; the same input always gives the same draw)."""
    ordered = sorted(set(groups))
    k = round(HELDOUT_FRACTION * len(ordered))
    return set(random.Random(f"{SEED}:{agent}").sample(ordered, k))


def split_agent(staging: Path, agent: str, record: dict) -> tuple[int, int]:
    sidecars = sorted((staging / agent).glob("*.json"))
    metas = {p: json.loads(p.read_text(encoding="utf-8")) for p in sidecars}
    groups = sorted({group_of(m["scene"]) for m in metas.values()})
    held = draw(agent, groups)
    record["agents"][agent] = {"heldout": sorted(held), "tuning": sorted(set(groups) - held)}
    counts = [0, 0]
    for path, meta in metas.items():
        side = "heldout" if group_of(meta["scene"]) in held else "tuning"
        dest = REPO / "suites" / ("heldout" if side == "heldout" else "captures") / agent
        dest.mkdir(parents=True, exist_ok=True)
        meta["split"] = side
        meta["split_seed"] = SEED
        for name in meta["files"].values():
            shutil.move(str(staging / agent / name), dest / name)
        (dest / path.name).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        path.unlink()
        counts[side == "heldout"] += 1
    return counts[0], counts[1]


def add_to_tuning(staging: Path, agent: str, record: dict) -> int:
    """Move a new round of an already split agent's captures to tuning whole; refuse a scene group
    that exists already on either side (a new round has a prefix of its own)."""
    metas = {p: json.loads(p.read_text(encoding="utf-8")) for p in sorted((staging / agent).glob("*.json"))}
    groups = sorted({group_of(m["scene"]) for m in metas.values()})
    side = record["agents"].setdefault(agent, {"heldout": [], "tuning": []})
    clash = [g for g in groups if g in side["tuning"] or g in side["heldout"]]
    if clash:
        raise SystemExit(f"error: {agent}: scene groups already split: {', '.join(clash)} (capture with --prefix)")
    dest = REPO / "suites" / "captures" / agent
    dest.mkdir(parents=True, exist_ok=True)
    for path, meta in metas.items():
        meta["split"] = "tuning"
        meta["split_seed"] = SEED
        for name in meta["files"].values():
            shutil.move(str(staging / agent / name), dest / name)
        (dest / path.name).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        path.unlink()
    side["tuning"] = sorted(set(side["tuning"]) | set(groups))
    return len(metas)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("staging", type=Path)
    parser.add_argument("--agent", action="append", help="only these agents (default: every one staged)")
    parser.add_argument("--tuning", action="store_true",
                        help="a new round of agents already split: every staged scene goes to tuning")
    args = parser.parse_args()
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {
        "seed": SEED, "fraction": HELDOUT_FRACTION,
        "method": "per agent: scene groups sorted, round(0.3*n) drawn with random.Random(f'{seed}:{agent}')",
        "agents": {}}
    agents = sorted(p.name for p in args.staging.iterdir() if p.is_dir() and any(p.glob("*.json"))
                    and (not args.agent or p.name in args.agent))
    if args.tuning:
        for agent in agents:
            n = add_to_tuning(args.staging, agent, record)
            print(f"{agent}: {n} more tuning captures")
        RECORD.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    refused = [a for a in agents if a in record["agents"]]
    if refused:
        print(f"error: already split: {', '.join(refused)} (a split is drawn once; move new captures of these "
              "agents under a new scene prefix)", file=sys.stderr)
        return 2
    for agent in agents:
        tuning, heldout = split_agent(args.staging, agent, record)
        print(f"{agent}: {tuning} tuning, {heldout} held out "
              f"({len(record['agents'][agent]['heldout'])} of "
              f"{len(record['agents'][agent]['heldout']) + len(record['agents'][agent]['tuning'])} scene groups)")
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
