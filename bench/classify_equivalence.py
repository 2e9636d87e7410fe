"""Classifier equivalence check: the same screens must give the same observations and decisions.

Gathers every screen we can find: the shared corpus (rendered as bench/corpus_accuracy.py does),
every screen case of every suite (built as evals/runner.py builds them), suites/captures/**/*.txt,
the string screens in tests/cases/screens.py, seeded synthetic variants from ``eval expand``
(written to a temporary folder), the benchmark's own 50x200 panes, and seeded mutations of all
of those (tails cut off, dead panes, a known command, splices of two screens) so a change in how
far up the classifier looks shows. For each it records ``classify(screen, policy).model_dump()``
and ``decide`` on a fresh run (as ``supervisor classify`` does).

Usage:
  .venv/bin/python bench/classify_equivalence.py --write     # snapshot to /tmp/classify_golden.jsonl
  .venv/bin/python bench/classify_equivalence.py             # compare against the snapshot
Exits 1 on any difference (printing the first few, field by field).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# bench/ shadows the `evals` package when run as a script (bench/evals.py): look in the repo instead
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from supervisor.classify import classify  # noqa: E402
from supervisor.cli.classify_cmds import fresh_run_state  # noqa: E402
from supervisor.decide import decide  # noqa: E402
from supervisor.models import Screen  # noqa: E402
from supervisor.policy import baseline_policy  # noqa: E402
from supervisor.screen import make_screen, render_stream  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_OUT = Path("/tmp/classify_golden.jsonl")


def _corpus() -> Iterator[tuple[str, Screen]]:
    path = CORPUS / "labels.jsonl"
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        label = json.loads(line)
        raw = (CORPUS / label["file"]).read_bytes().decode("utf-8", errors="replace")
        if label.get("raw_stream"):
            yield f"corpus:{label['id']}", make_screen(render_stream(raw, width=200, height=50), width=200,
                                                        height=50)
        else:
            yield f"corpus:{label['id']}", make_screen(raw, width=200, height=50)


def _suite_screens(suites: list, tag: str) -> Iterator[tuple[str, Screen]]:
    from evals.runner import screen_of
    from evals.suites import ScreenCase

    for suite in suites:
        for case in suite.cases:
            if isinstance(case, ScreenCase):
                yield f"{tag}:{suite.name}:{case.id}", screen_of(suite, case)


def _suites() -> Iterator[tuple[str, Screen]]:
    from evals.suites import iter_suites

    yield from _suite_screens(list(iter_suites()), "suite")


def _expanded() -> Iterator[tuple[str, Screen]]:
    from evals.suites import load_suite_file
    from evals.workbench import eval_expand

    with tempfile.TemporaryDirectory(prefix="classify_eq_") as tmp:
        for seed in (0, 7):
            out = Path(tmp) / f"s{seed}"
            written = eval_expand("all", variants_per_case=5, seed=seed, out_dir=out)
            suites = [load_suite_file(path) for _, path, _ in written]
            yield from _suite_screens(suites, f"expanded{seed}")


def _captures() -> Iterator[tuple[str, Screen]]:
    for p in sorted((REPO / "suites" / "captures").rglob("*.txt")):
        raw = p.read_text(encoding="utf-8", errors="surrogateescape")
        yield f"capture:{p.relative_to(REPO)}", make_screen(raw, width=200, height=50)


def _test_cases() -> Iterator[tuple[str, Screen]]:
    sys.path.insert(0, str(REPO))
    import tests.cases.screens as mod

    for name in sorted(vars(mod)):
        val = getattr(mod, name)
        if isinstance(val, str) and name.isupper() and "\n" in val:
            yield f"tests:{name}", make_screen(val, width=200, height=50)
    for fn, args in ((mod.claude_bash_permission, ("rm -rf build && make",)),
                     (mod.claude_bash_permission, ("pytest -q",)),
                     (mod.codex_exec_approval, ("git push --force origin main",)),
                     (mod.codex_exec_approval, ("ls -la",)),
                     (mod.claude_boxed_permission, ("npm test",))):
        yield f"tests:{fn.__name__}{args!r}", make_screen(fn(*args), width=200, height=50)


def _bench_own() -> Iterator[tuple[str, Screen]]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_classify", REPO / "bench" / "classify.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for i, s in enumerate(mod.own_screens()):
        yield f"bench:{i}", s


def _variants(base: list[tuple[str, Screen]], seed: int = 1234) -> Iterator[tuple[str, Screen]]:
    """Seeded mutations: cut tails, dead panes, a known command, a spinner title, splices."""
    rng = random.Random(seed)
    for sid, s in base:
        lines = s.text.split("\n")
        for cut in (1, 2, 3, 5, 8, 13):
            if len(lines) > cut + 1:
                yield f"{sid}#cut{cut}", Screen.model_construct(
                    text="\n".join(lines[:-cut]), width=s.width, height=s.height, title=s.title,
                    current_command=s.current_command, dead=False, highlights=(), scrollback="",
                    cursor_x=None, cursor_y=None)
        yield f"{sid}#dead", s.model_copy(update={"dead": True})
        yield f"{sid}#cmd", s.model_copy(update={"current_command": rng.choice(["claude", "bash", "node", "aider"])})
        if rng.random() < 0.2:
            yield f"{sid}#title", s.model_copy(update={"title": "⠋ working"})
    pool = [s.text.split("\n") for _, s in base]
    for k in range(3000):
        a, b = rng.choice(pool), rng.choice(pool)
        ia = rng.randint(0, len(a))
        ib = rng.randint(0, len(b))
        ja = rng.randint(0, 40)
        text = "\n".join(a[max(0, ia - ja):ia] + b[ib:])
        yield f"splice:{k}", Screen.model_construct(text=text, width=200, height=50, title="", current_command="",
                                                    dead=False, highlights=(), scrollback="", cursor_x=None,
                                                    cursor_y=None)


def all_screens() -> list[tuple[str, Screen]]:
    base: list[tuple[str, Screen]] = []
    for gen in (_corpus, _suites, _captures, _test_cases, _bench_own, _expanded):
        base.extend(gen())
    return base + list(_variants(base))


def record(sid: str, screen: Screen, policy) -> dict:
    obs = classify(screen, policy)
    dec = decide(obs, fresh_run_state(), policy, policy_id=policy.policy_id)
    return {"id": sid, "obs": obs.model_dump(mode="json"), "decision": dec.model_dump(mode="json")}


def _diff(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += _diff(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the snapshot instead of comparing")
    ap.add_argument("--golden", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    policy = baseline_policy()
    screens = all_screens()
    if len({sid for sid, _ in screens}) != len(screens):
        print("warning: duplicate screen ids", file=sys.stderr)
    if args.write:
        with args.golden.open("w", encoding="utf-8") as fh:
            for sid, s in screens:
                fh.write(json.dumps(record(sid, s, policy), sort_keys=True, ensure_ascii=False) + "\n")
        print(f"wrote {len(screens)} screens to {args.golden}")
        return 0
    golden = {}
    with args.golden.open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            golden[rec["id"]] = rec
    diffs = 0
    missing = 0
    for sid, s in screens:
        want = golden.get(sid)
        if want is None:
            missing += 1
            continue
        got = json.loads(json.dumps(record(sid, s, policy), sort_keys=True, ensure_ascii=False))
        d = _diff(want, got)
        if d:
            diffs += 1
            if diffs <= 10:
                print(f"DIFF {sid}:")
                for x in d[:8]:
                    print(f"    {x}")
    print(f"compared {len(screens) - missing} screens ({missing} not in the snapshot): {diffs} differences")
    return 1 if diffs or missing else 0


if __name__ == "__main__":
    sys.exit(main())
