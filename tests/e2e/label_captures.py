"""Write the label of a captured scene, read by a person, into its sidecars (every width).

    python tests/e2e/label_captures.py DIR SCENE state=asking kind=tool_permission decision=answer \\
        keys='1|Enter' risk=none subject='touch hello.txt' note='...'

``DIR`` is ``suites/captures/<agent>`` or ``suites/heldout/<agent>``. Fields: ``state`` (required),
``kind`` (prompt kind), ``decision``, ``keys`` (acceptable key sequences separated by ``|``, keys
of one sequence by spaces: ``'Down Enter|y'``), ``risk``, ``subject`` (the command, path or URL
the dialog approves; leave it out when the screen names none), ``blocker``, ``default_approves``
(``true``/``false``), ``note``. The provisional label the capture script wrote is replaced whole;
``labelled_by: read`` marks it as read. Then run ``capture_suites.py`` to rebuild the suites.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FIELDS = {"state", "kind", "decision", "keys", "risk", "subject", "blocker", "default_approves", "note"}


def parse(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in FIELDS:
            raise SystemExit(f"error: {pair!r}: expected FIELD=VALUE with FIELD one of {', '.join(sorted(FIELDS))}")
        out[key] = value
    if "state" not in out:
        raise SystemExit("error: state= is required")
    return out


def label(fields: dict[str, str]) -> dict[str, object]:
    keys = [seq.split() for seq in fields["keys"].split("|")] if fields.get("keys") else None
    dflt = fields.get("default_approves")
    exp: dict[str, object] = {
        "state": fields["state"], "prompt_kind": fields.get("kind"), "decision": fields.get("decision"),
        "keys": keys, "risk": fields.get("risk"), "subject": fields.get("subject"),
        "blocker_kind": fields.get("blocker"),
        "default_approves": None if dflt is None else dflt == "true",
        "labelled_by": "read",
    }
    if fields.get("note"):
        exp["note"] = fields["note"]
    return exp


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("scene")
    parser.add_argument("fields", nargs="+")
    parser.add_argument("--width", type=int, action="append", help="only these widths (a screen that differs)")
    args = parser.parse_intermixed_args()
    exp = label(parse(args.fields))
    paths = sorted(p for p in args.dir.glob(f"{args.scene}.w*.json")
                   if not args.width or any(p.name.endswith(f".w{w}.json") for w in args.width))
    if not paths:
        print(f"error: no sidecars {args.dir}/{args.scene}.w*.json", file=sys.stderr)
        return 2
    for path in paths:
        meta = json.loads(path.read_text(encoding="utf-8"))
        meta["expected"] = exp
        path.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.scene}: {len(paths)} sidecar(s) labelled {exp['state']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
