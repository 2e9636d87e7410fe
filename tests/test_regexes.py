"""No policy regex can stall supervision (supervisor.regexes): patterns run on RE2 in linear time;
the few that need lookarounds run on a backtracking engine under a per-match budget whose overrun
escalates the screen; a pattern that backtracks catastrophically on its own characters is refused
when the policy loads, with its place."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from supervisor.classify import classify
from supervisor.decide import decide
from supervisor.errors import PolicyError
from supervisor.models import RunState
from supervisor.policy import baseline_policy, parse_policy
from supervisor.regexes import (
    BUDGET_S,
    backtracking_problem,
    compiled,
    needs_backtracking,
    runs_on_re2,
    to_re2,
)
from supervisor.screen import make_screen
from tests.helpers import CLAUDE_BOX_DIALOG


def _policy(extra: str) -> object:
    return parse_policy(extra, "test-policy.yaml")


def _state() -> RunState:
    return RunState(run_id="t", now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True)


def test_every_baseline_pattern_runs_and_only_lookarounds_need_backtracking() -> None:
    data = baseline_policy().model_dump(mode="json")
    found: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, dict):  # a command's other names (`also: [g++]`) are names, not patterns
            for k, x in v.items():
                if k != "also":
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and any(c in v for c in "\\[(|^$*+?"):
            try:
                re.compile(v)
            except re.error:
                return
            found.append(v)

    walk(data)
    slow = [p for p in found if not runs_on_re2(p, re.I)]
    assert len(found) > 150
    assert all(needs_backtracking(p) in ("a lookahead or lookbehind", "a negative lookahead or lookbehind")
               for p in slow), slow
    assert len(slow) <= 1, slow  # the rest run in linear time (rm-recursive's target exceptions do not)
    assert [p for p in slow if backtracking_problem(p)] == []


# The baseline's patterns that once needed lookarounds, and their lookaround-free spellings (which run
# on RE2): the same matches on text made of the characters and words that decide them.
_REWRITES = [
    (r"auto mode can.t check actions in this session(?!,)",
     "auto mode can.t check actions in this session([^,]|$)", [*", x.\n", "auto mode can't check actions in this session"]),
    (r"^[❯>›](?!\s*\d{1,2}[.)]\s)(\s|$)", r"^[❯>›](\s*$|\s+([^\d\s]|\d($|[^\d.)]|[.)]($|\S)|\d($|[^.)]|[.)]($|\S)))))",
     [*"❯>› \t1234567890.)aXy", "❯ 1. ", "> 12) ", "› ", "  "]),
    (r"^(\([\w.-]+\) )?([\w.-]+@[\w.-]+[: ]\S*|\[[\w.@-]+( \S+)?\]|[\w@.~:/-]*)\s?([$#]|(?<!\d)%)$",
     r"^(\([\w.-]+\) )?(([\w.-]+@[\w.-]+[: ]\S*|\[[\w.@-]+( \S+)?\]|[\w@.~:/-]*)(\s?[$#]|\s%)"
     r"|([\w.-]+@[\w.-]+[: ](\S*[^\s\d])?|\[[\w.@-]+( \S+)?\]|([\w@.~:/-]*[A-Za-z_@.~:/-])?)%)$",
     [*"$#% 019aZ_@.~:/-[]()x\t", "user@host:~/app", "(venv) ", "[dev@box app]", "100%", " %"]),
    # not in a path, a file name, a hyphenated name or a variable's value either (`.claude/x`, `CLAUDE.md`,
    # `claude-config`, `LLM_PROVIDER=claude`: a command another agent's dialog draws)
    (r"(?<![\w./~=-])claude(?![\w/-]|\.\w| (sonnet|opus|haiku|instant|\d))",
     r"(^|[^\w./~=-])claude($|[^\w/ .-]|\.($|\W)|[ ]($|[^sohi\d]|s($|[^o]|o($|[^n]|n($|[^n]|n($|[^e]|e($|[^t])))))"
     r"|o($|[^p]|p($|[^u]|u($|[^s])))|h($|[^a]|a($|[^i]|i($|[^k]|k($|[^u]))))"
     r"|i($|[^n]|n($|[^s]|s($|[^t]|t($|[^a]|a($|[^n]|n($|[^t]))))))))",
     [*" -_.xsohi0123SOHI\n/~=", "claude", "Claude", ".md", "sonnet", "opus", "haiku", "instant", "son", "op", "hai", "inst"]),
]


@pytest.mark.parametrize(("old", "new", "pieces"), _REWRITES, ids=["trust", "input-line", "shell-prompt", "claude"])
def test_the_baseline_spells_its_lookarounds_for_re2(old: str, new: str, pieces: list[str]) -> None:
    import random

    import regex

    policy_text = (Path(__file__).resolve().parents[1] / "candidates" / "baseline.yaml").read_text(encoding="utf-8")
    assert new in policy_text and old not in policy_text
    assert runs_on_re2(new, re.I | re.M)
    before, after = regex.compile(old, re.I | re.M), compiled(new, re.I | re.M)
    rnd = random.Random(7)
    for _ in range(20_000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 8)))
        assert (before.search(text) is None) == (after.search(text) is None), text


def test_a_match_kept_waiting_is_tried_again_and_a_slow_one_is_not() -> None:
    """The budget counts this thread's CPU time: an attempt that ran out of wall-clock time while
    the host was busy elsewhere is tried again (a live run and its replay decide alike); one that
    spent the budget working is over it."""
    from supervisor.regexes import within_budget

    tries: list[float] = []

    def kept_waiting(text: str, *, timeout: float) -> str:
        tries.append(timeout)
        if len(tries) < 3:
            time.sleep(timeout * 1.2)  # waited, used no CPU
            raise TimeoutError
        return text

    assert within_budget(kept_waiting, "x") == "x" and len(tries) == 3

    def working(text: str, *, timeout: float) -> str:
        end = time.thread_time() + timeout
        while time.thread_time() < end:
            pass
        raise TimeoutError

    with pytest.raises(TimeoutError):
        within_budget(working, "x")


def test_catastrophic_pattern_on_forty_x_finishes_at_once() -> None:
    rx = compiled(r"(x+x+)+y", re.I)
    assert rx.engine == "re2"
    start = time.perf_counter()
    for n in (40, 400, 40_000):
        assert rx.search("x" * n) is None
    assert time.perf_counter() - start < 2.0  # Python's re: minutes at n=40
    assert re.compile(r"(x+x+)+y").search("x" * 16 + "y")  # the same meaning where it matches
    assert rx.search("x" * 16 + "y") is not None


def test_a_danger_pattern_that_backtracks_is_refused_at_load_with_its_place() -> None:
    with pytest.raises(PolicyError) as err:
        _policy("answers:\n  danger_patterns:\n    - {name: mine, pattern: '(?!q)^(a|aa)+$'}\n")
    msg = err.value.one_line()
    assert "test-policy.yaml:3" in msg and "answers.danger_patterns.0.pattern" in msg
    assert "backtracks catastrophically" in msg and "lookahead" in msg


def test_a_catastrophic_pattern_re2_runs_loads_and_its_dialog_is_decided_at_once() -> None:
    pol = _policy("answers:\n  danger_patterns:\n    - {name: xx, pattern: '(x+x+)+y'}\n")
    start = time.perf_counter()
    for cmd in ("x" * 40, "x" * 40 + "y"):
        obs = classify(make_screen(CLAUDE_BOX_DIALOG.format(cmd=cmd), width=80, height=24), pol)
        d = decide(obs, _state(), pol)
        assert obs.state == "asking" and obs.prompt is not None
    assert time.perf_counter() - start < 2.0  # Python's re: minutes on the first command
    assert obs.prompt.risk.level == "dangerous" and "xx" in obs.prompt.risk.matched
    assert d.kind == "escalate"


def test_a_pattern_past_its_budget_escalates_the_screen(caplog: pytest.LogCaptureFixture) -> None:
    # The load-time probe is a heuristic (runs of the pattern's own characters); this one passes it,
    # and a crafted line makes it backtrack: the budget is what holds.
    pattern = r"(?!q)^zz(a|aa)+$"
    assert backtracking_problem(pattern) is None
    pol = _policy(f"classifier:\n  prompt_patterns: ['{pattern}']\n")
    screen = make_screen("working on it\n" + "zz" + "a" * 60 + "!\n", width=80, height=24)
    start = time.perf_counter()
    obs = classify(screen, pol)
    took = time.perf_counter() - start
    assert took < 20 * BUDGET_S + 1.0
    assert obs.state == "asking" and obs.prompt is not None
    assert obs.prompt.risk.level == "unknown" and obs.evidence == ["regex_budget"]
    assert "budget" in obs.prompt.question
    d = decide(obs, _state(), pol)
    assert d.kind == "escalate" and not d.keys
    assert any("ran past its" in r.getMessage() and "zz(a|aa)" in r.getMessage() for r in caplog.records)


def test_an_answer_rule_past_its_budget_escalates() -> None:
    pattern = r"(?!q)^zz(a|aa)+$"
    pol = _policy("answers:\n  rules:\n    - name: slow\n      when: {question: '" + pattern
                  + "'}\n      then: approve\n")
    screen = make_screen(CLAUDE_BOX_DIALOG.format(cmd="ls"), width=80, height=24)
    obs = classify(screen, pol)
    assert obs.prompt is not None
    obs.prompt.question = "zz" + "a" * 60 + "!"
    d = decide(obs, _state(), pol)
    assert d.kind == "escalate" and d.rule == "regex-budget"


def test_the_re_dialect_is_kept() -> None:
    # \s is Unicode whitespace as in re; \Z is the end; \uXXXX escapes; named groups by name.
    assert compiled(r"a\sb").search("a\u00a0b") is not None
    assert compiled(r"a\Z").search("ba") is not None and compiled(r"a\Z").search("ab") is None
    assert compiled(r"\u00e9t\u00e9").search("un été") is not None
    m = compiled(r"(?P<cmd>\w+) (?P<arg>\S+)").search("→ rm -rf /")
    assert m is not None and m.group("cmd") == "rm" and m.span("arg") == (5, 8) and m.start("arg") == 5
    assert to_re2(r"[^\]x]\s") == r"[^\]x][\t\n\x0b\f\r\x1c-\x1f \x85\p{Z}]"
    # offsets are characters, not UTF-8 bytes
    m = compiled("b+").search("ééébb")
    assert m is not None and m.span() == (3, 5) and m.group() == "bb"


def test_linear_time_on_large_inputs() -> None:
    """The whole baseline's danger alternation over a 60k-character line: linear, not quadratic."""
    from supervisor.classify import compiled_rules

    rules = compiled_rules(baseline_policy())
    assert rules.danger_any is not None
    line = ("rm " + "-" * 30 + " x" * 10 + " ://a:b" * 5) * 300
    start = time.perf_counter()
    rules.danger_any.rx.search(line)
    assert time.perf_counter() - start < 2.0
