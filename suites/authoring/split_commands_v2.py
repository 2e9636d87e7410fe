"""Split the second blind command set (``/work/heldout-v2``, 536 commands collected and labelled by a
helper who never saw the judgment) into a tuning half and a held-out half, once.

    .venv/bin/python suites/authoring/split_commands_v2.py SET.yaml

The set was scored whole, once, as held-out (figures in CHANGELOG). Then it was split with a seeded
draw, stratified by label: half to ``suites/authoring/commands_v2_tuning.yaml`` (read and tuned on),
half to ``suites/heldout/commands.yaml`` (never read, scored once after the tuning; read and tuned on
since session 7, and so moved to ``suites/authoring/commands_v2_second_half.yaml``). The first four
entries of the set had been seen while copying it in; they go to the tuning half.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261201
SEEN = 4


def main(src: Path) -> None:
    items = yaml.safe_load(src.read_text(encoding="utf-8"))
    items = items["commands"] if isinstance(items, dict) else items
    tuning, held = list(items[:SEEN]), []
    rng = random.Random(SEED)
    for label in ("dangerous", "ordinary"):
        rest = [i for i in items[SEEN:] if i["label"] == label]
        rng.shuffle(rest)
        want = sum(1 for i in items if i["label"] == label) // 2 - sum(1 for i in tuning if i["label"] == label)
        tuning += rest[:want]
        held += rest[want:]
    for path, part in ((ROOT / "suites/authoring/commands_v2_tuning.yaml", tuning),
                       (ROOT / "suites/authoring/commands_v2_second_half.yaml", held)):
        path.write_text(yaml.safe_dump(part, sort_keys=False, allow_unicode=True, width=200), encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(part)} commands "
              f"({sum(1 for i in part if i['label'] == 'dangerous')} dangerous)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
