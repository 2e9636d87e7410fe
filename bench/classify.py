"""Classifier throughput: screens per second on one core over a realistic mix.

The mix: every corpus screen (../shared/corpus, rendered once up front; skipped if absent)
plus our own full-size panes (50 rows x 200 columns) in each agent's style: long
conversations above an idle input box, spinners, permission dialogs, y/n prompts, blockers,
and a pane of wide build output. Each screen object is classified as a new object every
time (no caching by content); the policy is compiled once, as in the live supervisor.
Target: >= 20,000 screens/s.

Usage: .venv/bin/python bench/classify.py [--seconds 3] [--no-corpus]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.models import RunState, Screen
from supervisor.policy import baseline_policy
from supervisor.screen import make_screen, render_stream

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
RULE = "─" * 200


def _conversation(rng: random.Random, rows: int) -> list[str]:
    words = ["the", "build", "step", "now", "writes", "its", "cache", "under", "target", "and", "the", "tests", "read", "it", "back", "before", "we", "compare", "snapshots", "of", "every", "module", "that", "changed", "since", "the", "last", "green", "run"]
    out: list[str] = []
    while len(out) < rows:
        kind = rng.random()
        if kind < 0.3:
            out.append(f"⏺ Bash(pytest tests/test_{rng.randint(1, 99)}.py -q)")
            out.append(f"  ⎿  {rng.randint(1, 300)} passed in {rng.random() * 9:.2f}s")
        elif kind < 0.5:
            out.append(f"⏺ Update(src/module_{rng.randint(1, 50)}.py)")
            out.append(f"  ⎿  Updated src/module.py with {rng.randint(1, 20)} additions and 2 removals")
            for n in range(rng.randint(2, 6)):
                out.append(f"      {100 + n} +    value = compute(item, cache={rng.randint(0, 9)})")
        else:
            out.append("⏺ " + " ".join(rng.choice(words) for _ in range(rng.randint(10, 30))))
        out.append("")
    return out[-rows:]


def own_screens(seed: int = 7) -> list[Screen]:
    rng = random.Random(seed)
    screens: list[Screen] = []
    for _ in range(6):
        body = _conversation(rng, 44)
        screens.append(Screen(text="\n".join(body + [RULE, "❯ ", RULE, "  ? for shortcuts"]), width=200, height=50))
        screens.append(Screen(text="\n".join(body[:-2] + ["✻ Cultivating… (12s · ↓ 1.2k tokens · esc to interrupt)",
                                                          "", RULE, "❯ ", RULE,
                                                          "  ⏵⏵ accept edits on (shift+tab to cycle)"]),
                              width=200, height=50))
        screens.append(Screen(text="\n".join(body[:-12] + [
            RULE, " Bash command", "", "   rm -rf build/ && npm run build", "   Clean and rebuild", "",
            " Do you want to proceed?", " ❯ 1. Yes",
            "   2. Yes, and don't ask again for npm run build commands in /home/dev/project",
            "   3. No, and tell Claude what to do differently (esc)", "", " Esc to cancel · Tab to amend"]),
            width=200, height=50))
        screens.append(Screen(text="\n".join(body[:-8] + [
            "• Ran cargo test --workspace", "  └ test result: ok. 214 passed", "",
            "• Working (1m 04s • esc to interrupt)", "", "› Ask Codex to do anything", "",
            "  ? for shortcuts                                        74% context left"]), width=200, height=50))
        screens.append(Screen(text="\n".join(body[:-6] + [
            "Would you like to run the following command?", "", "  $ git push origin feature/cache", "",
            "› 1. Yes, proceed (y)", "  2. Yes, and don't ask again for commands that start with `git push` (p)",
            "  3. No, and tell Codex what to do differently (esc)", "", "  Press enter to confirm or esc to cancel"]),
            width=200, height=50))
        screens.append(Screen(text="\n".join(body[:-3] + [
            "src/cache.py", "Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:"]), width=200, height=50))
        screens.append(Screen(text="\n".join(body[:-4] + [
            "⏺ API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}} · Please run /login",
            "", RULE, "❯ ", RULE]), width=200, height=50))
        build = [f"   Compiling crate_{i} v0.{i}.0 (/home/dev/project/crates/crate_{i})" + " " * 40 + "x" * 60
                 for i in range(48)]
        screens.append(Screen(text="\n".join(build + ["dev@box:~/project$ "]), width=200, height=50))
    return screens


def corpus_screens() -> list[Screen]:
    path = CORPUS / "labels.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        label = json.loads(line)
        raw = (CORPUS / label["file"]).read_bytes().decode("utf-8", errors="replace")
        if label.get("raw_stream"):
            raw = render_stream(raw, width=200, height=50)
        out.append(make_screen(raw, width=200, height=50))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--no-corpus", action="store_true")
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    policy = baseline_policy()
    pid = policy.policy_id
    own = own_screens()
    corpus = [] if args.no_corpus else corpus_screens()
    mix = corpus + own * max(1, len(corpus) // max(1, len(own)))  # about half our full-size panes
    texts = [(s.text, s.title) for s in mix]
    avg_lines = sum(t.count("\n") + 1 for t, _ in texts) / len(texts)
    avg_chars = sum(len(t) for t, _ in texts) / len(texts)
    for text, title in texts[:200]:  # warm up (compiles the policy)
        classify(Screen.model_construct(text=text, title=title, dead=False, current_command=""), policy)

    def run(with_decide: bool, texts: list[tuple[str, str]] = texts) -> tuple[int, float]:
        n = 0
        state = RunState(now=100.0, last_output_at=99.0, saw_work=True)
        start = time.process_time()
        deadline = start + args.seconds
        while True:
            for text, title in texts:
                screen = Screen.model_construct(text=text, title=title, dead=False, current_command="")
                obs = classify(screen, policy)
                if with_decide:
                    decide(obs, state, policy, policy_id=pid)
            n += len(texts)
            now = time.process_time()
            if now >= deadline:
                return n, now - start

    n, secs = run(False)
    rate = n / secs
    n2, secs2 = run(True)
    rate2 = n2 / secs2
    print(f"screens in mix: {len(texts)} ({len(corpus)} corpus, {len(texts) - len(corpus)} own 50x200 panes); "
          f"avg {avg_lines:.0f} lines, {avg_chars:.0f} chars")
    print(f"classify:          {rate:,.0f} screens/s  ({1e6 / rate:.1f} µs/screen, one core)")
    for name, subset in (("corpus screens", [(s.text, s.title) for s in corpus]),
                         ("own 50x200 panes", [(s.text, s.title) for s in own])):
        if subset:
            k, secs_k = run(False, subset)
            print(f"  {name + ':':19s}{k / secs_k:,.0f} screens/s")
    print(f"classify + decide: {rate2:,.0f} screens/s  ({1e6 / rate2:.1f} µs/screen)")
    ok = rate >= 20_000
    print("TARGET " + ("MET" if ok else "MISSED") + " (>= 20,000 screens/s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
