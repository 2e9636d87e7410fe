"""Every pattern of the baseline policy is exercised by a case the project owns.

"Own cases" are the screen cases of the golden suites (suites/*.yaml, our own screens and the
team's real captures) and the capture files under suites/captures/. The shared corpus does not
count: it has been used for tuning (it is in-sample), and a pattern that only it exercises is a
pattern fitted to other projects' fixtures. A pattern is exercised when it matches a line of an
own screen (or the screen's lines joined, for patterns over a whole dialog). The failure lists
every pattern no own case exercises: write a case for it (suites/authoring/) or drop it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from evals.suites import ScreenCase, iter_suites
from supervisor.policy import Policy, baseline_policy
from supervisor.screen import make_screen
from tests.conftest import REPO

_EDGES = " \t│┃║▌▐╎╏|█"
_OPTION_HEAD = re.compile(r"^[❯›>▶➤●◉◆→▸*]?\s*(\d{1,2}[.)]\s*)?")


def own_screens() -> list[str]:
    texts: list[str] = []
    for suite in iter_suites(REPO / "suites"):
        for case in suite.cases:
            if isinstance(case, ScreenCase):
                screen = make_screen(suite.screen_text(case), width=case.input.width, height=case.input.height)
                texts.append(screen.text + "\n" + case.input.title)
    for path in sorted((REPO / "suites" / "captures").rglob("*.txt")):
        texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return texts


def baseline_patterns(policy: Policy) -> Iterator[tuple[str, str]]:
    c = policy.classifier
    for knob in ("busy_markers", "weak_busy_markers", "idle_markers", "prompt_patterns", "menu_hints", "dialog_hints",
                 "completion_markers", "not_blocker_patterns", "input_lines", "arrow_menu_hints", "title_busy_markers",
                 "cwd_patterns", "shell_prompts"):
        for p in getattr(c, knob):
            yield f"classifier.{knob}", p
    for knob in ("approve_option", "decline_option", "persistent_option"):
        yield f"classifier.{knob}", getattr(c, knob)
    for b in c.blocker_patterns:
        yield f"classifier.blocker_patterns[{b.name}]", b.pattern
    for kind, pats in c.prompt_kinds.items():
        for p in pats:
            yield f"classifier.prompt_kinds.{kind}", p
    for sp in c.subject_patterns:
        yield "classifier.subject_patterns", sp.pattern
        if sp.when:
            yield "classifier.subject_patterns.when", sp.when
    for name, profile in policy.agents.items():
        for knob in ("markers", "input_lines", "composer_header", "cwd_patterns", "footer", "title_directory"):
            for p in getattr(profile, knob):
                yield f"agents.{name}.{knob}", p
        for sp in profile.subject_patterns:
            yield f"agents.{name}.subject_patterns", sp.pattern
    for d in policy.answers.danger_patterns:
        yield f"answers.danger_patterns[{d.name}]", d.pattern
    for d in policy.answers.write_risk.paths:
        yield f"answers.write_risk.paths[{d.name}]", d.pattern
    for p in policy.answers.always_escalate:
        yield "answers.always_escalate", p
    for r in policy.answers.rules:
        for field in ("question", "subject", "option"):
            p = getattr(r.when, field)
            if p:
                yield f"answers.rules[{r.name}].when.{field}", p


def test_every_baseline_pattern_is_exercised_by_an_own_case() -> None:
    lines: set[str] = set()
    for text in own_screens():
        rows = [row.strip(_EDGES) for row in text.split("\n")]
        lines.update(row for row in rows if row)
        lines.update(_OPTION_HEAD.sub("", row) for row in rows if row)  # option labels ("❯ 1. Yes" -> "Yes")
        lines.add(" ".join(row for row in rows if row))  # dialogs judged as a whole, wrapped commands
    searchable = sorted(lines)
    unexercised = [f"{where}: {pattern}" for where, pattern in baseline_patterns(baseline_policy())
                   if not any(re.search(pattern, line, re.I | re.M) for line in searchable)]
    assert not unexercised, "baseline patterns no own case exercises:\n  " + "\n  ".join(unexercised)


def test_the_check_does_not_read_the_held_out_split() -> None:
    """The held-out captures are scored only by bench/heldout.py: they are not own cases here."""
    assert not any("heldout" in p.relative_to(REPO).parts for p in Path(REPO / "suites").glob("*.yaml"))
