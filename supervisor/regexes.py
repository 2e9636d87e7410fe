"""Policy regexes that cannot stall supervision.

A policy's patterns (classifier markers, agents, danger patterns, write paths, answer rules) are
written in Python's ``re`` dialect, but Python's engine backtracks: a danger pattern such as
``(x+x+)+y`` takes minutes on forty ``x`` characters, and while it runs nothing else of that pane
is supervised. So every pattern runs on RE2 (``google-re2``), which matches in time linear in the
text, whatever the pattern.

RE2 cannot run lookarounds and backreferences. A pattern that needs them runs on the ``regex``
module (a backtracking engine with a per-match timeout) under :data:`BUDGET_S`; an overrun raises
:class:`RegexBudgetExceeded`, which :func:`supervisor.classify.classify` turns into a prompt of
unknown risk (escalated, never answered), and the pattern is logged. Such a pattern is also probed
when the policy loads: one that backtracks catastrophically on its own characters is refused,
with its place in the policy.

The dialect is kept where RE2 differs: ``\\s`` (and ``\\S``) is Unicode whitespace as in ``re``,
``\\Z`` is RE2's ``\\z`` and ``\\uXXXX`` its ``\\x{XXXX}``. ``\\w``, ``\\d`` and ``\\b`` stay ASCII, as
RE2 has them: their Unicode forms make every pattern's automaton about thirty times larger (and the
classifier three times slower), and the policies use them around ASCII words, commands and paths
(``\\W`` therefore matches every non-ASCII character, such as a box border or a bullet).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from re import _parser as sre_parse  # type: ignore[attr-defined]  # re's own parser: what a pattern holds
from typing import Any, cast

import re2
import regex

log = logging.getLogger(__name__)

BUDGET_S = 0.05
"""How much CPU time one match of a pattern on the backtracking engine may take (lookarounds only)."""
MAX_TRIES = 8
"""The engine's timeout is wall-clock: a match that ran out of it having used less than the budget in
CPU time was only kept waiting (a loaded host, other threads holding the interpreter), not slow, and is
tried again, up to this many times. So a pattern's verdict does not depend on the machine's load (a
replay decides as the live run did), and a pane waits at most this many budgets."""

_S = r"\t\n\x0b\f\r\x1c-\x1f \x85\p{Z}"
_OUTSIDE = {"s": f"[{_S}]", "S": f"[^{_S}]", "Z": r"\z"}
_INSIDE = {"s": _S}


class RegexBudgetExceeded(Exception):  # noqa: N818 - it is an event, not a programming error
    """A pattern on the backtracking engine ran past :data:`BUDGET_S` on one text."""

    def __init__(self, pattern: str, length: int) -> None:
        super().__init__(f"the policy pattern {pattern[:120]!r} ran past its {BUDGET_S * 1000:.0f} ms budget "
                         f"on a {length}-character text")
        self.pattern = pattern


def to_re2(pattern: str) -> str:
    """The pattern in RE2's syntax with ``re``'s meaning of ``\\w \\d \\s \\Z`` kept. A negated class
    escape inside brackets (``[\\W_]``) cannot be spelled in RE2 with the Unicode meaning: it is left
    as RE2's ASCII one."""
    out: list[str] = []
    i, n, depth = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt in "uU":  # re's \uXXXX and \UXXXXXXXX are RE2's \x{...}
                size = 4 if nxt == "u" else 8
                code = pattern[i + 2:i + 2 + size]
                if len(code) == size and all(c in "0123456789abcdefABCDEF" for c in code):
                    out.append(f"\\x{{{code}}}")
                    i += 2 + size
                    continue
            table = _INSIDE if depth else _OUTSIDE
            out.append(table.get(nxt, ch + nxt))
            i += 2
            continue
        if depth:
            if ch == "]":
                depth = False
        elif ch == "[":
            depth = True
            out.append(ch)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a literal ']' first in a class
                out.append("\\]")
                i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _re2_options() -> Any:
    opts = re2.Options()
    opts.log_errors = False
    opts.max_mem = 64 << 20  # large alternations of many patterns
    return opts


_OPTIONS = _re2_options()
_FLAGS = ((re.I, "i"), (re.M, "m"), (re.S, "s"))


class _Re2Match:
    """A match of RE2 as ``re.Match``, made from RE2's byte spans (google-re2's own match objects cost
    a generator per search and cannot take group names in ``start``/``end``/``span``)."""

    __slots__ = ("string", "_spans", "_names", "pos", "endpos")

    def __init__(self, string: str, spans: list[tuple[int, int]], names: dict[str, int], pos: int,
                 endpos: int) -> None:
        self.string, self._spans, self._names, self.pos, self.endpos = string, spans, names, pos, endpos

    def _g(self, group: int | str) -> int:
        g = self._names[group] if isinstance(group, str) else group
        if not 0 <= g < len(self._spans):
            raise IndexError("no such group")
        return g

    def span(self, group: int | str = 0) -> tuple[int, int]:
        return self._spans[self._g(group)]

    def start(self, group: int | str = 0) -> int:
        return self._spans[self._g(group)][0]

    def end(self, group: int | str = 0) -> int:
        return self._spans[self._g(group)][1]

    def _one(self, group: int | str, default: Any = None) -> Any:
        a, b = self._spans[self._g(group)]
        return default if a < 0 else self.string[a:b]

    def group(self, *groups: int | str) -> Any:
        if len(groups) <= 1:
            return self._one(groups[0] if groups else 0)
        return tuple(self._one(g) for g in groups)

    def __getitem__(self, group: int | str) -> Any:
        return self._one(group)

    def groups(self, default: Any = None) -> tuple[Any, ...]:
        return tuple(self._one(g, default) for g in range(1, len(self._spans)))

    def groupdict(self, default: Any = None) -> dict[str, Any]:
        return {name: self._one(g, default) for name, g in self._names.items()}

    @property
    def lastindex(self) -> int | None:
        best, end = None, -1
        for g in range(1, len(self._spans)):
            a, b = self._spans[g]
            if a >= 0 and b > end:
                best, end = g, b
        return best


def _char_spans(text: str, data: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """RE2's byte offsets as offsets into ``text`` (equal when the text is ASCII)."""
    if len(data) == len(text):
        return spans
    cache: dict[int, int] = {-1: -1}
    out = []
    for a, b in spans:
        for off in (a, b):
            if off not in cache:
                cache[off] = len(data[:off].decode("utf-8", "surrogatepass"))
        out.append((cache[a], cache[b]))
    return out


_UNANCHORED = re2._re2.RE2.Anchor.UNANCHORED
_ANCHOR_START = re2._re2.RE2.Anchor.ANCHOR_START
_ANCHOR_BOTH = re2._re2.RE2.Anchor.ANCHOR_BOTH


class PolicyRegex:
    """One policy pattern, compiled for the engine that can run it without stalling. Has the
    methods of ``re.Pattern`` the supervisor uses (``search``, ``match``, ``fullmatch``,
    ``finditer``, ``sub``); ``engine`` says which engine runs it."""

    __slots__ = ("pattern", "flags", "engine", "rx_pattern", "_rx", "_names")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        inline = "".join(c for f, c in _FLAGS if flags & f)
        self.rx_pattern = (f"(?{inline})" if inline else "") + to_re2(pattern)
        """The pattern as RE2 reads it (flags inline)."""
        try:
            self._rx: Any = re2.compile(self.rx_pattern, _OPTIONS)
            self.engine = "re2"
            self._names: dict[str, int] = dict(self._rx.groupindex)
        except re2.error:
            rflags = (regex.I if flags & re.I else 0) | (regex.M if flags & re.M else 0) | \
                     (regex.S if flags & re.S else 0)
            self._rx = regex.compile(pattern, rflags | regex.V0)
            self.engine = "backtracking"
            self._names = {}

    def _re2(self, anchor: Any, text: str, pos: int, endpos: int | None) -> Any:
        n = len(text)
        end = n if endpos is None else max(0, min(endpos, n))
        pos = max(0, min(pos, n))
        if pos > end:
            return None
        data = text.encode("utf-8", "surrogatepass")
        if len(data) == n:
            bpos, bend = pos, end
        else:
            bpos = len(text[:pos].encode("utf-8", "surrogatepass"))
            bend = bpos + len(text[pos:end].encode("utf-8", "surrogatepass"))
        spans = self._rx._regexp.Match(anchor, data, bpos, bend)
        if spans[0][0] < 0:
            return None
        return _Re2Match(text, _char_spans(text, data, spans), self._names, pos, end)

    def _budget(self, call: Callable[..., Any], text: str, *args: Any) -> Any:
        try:
            return within_budget(call, text, *args)
        except TimeoutError:
            log.warning("policy pattern %r ran past its %.0f ms budget on a %d-character text; the screen is "
                        "escalated", self.pattern[:200], BUDGET_S * 1000, len(text))
            raise RegexBudgetExceeded(self.pattern, len(text)) from None

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        if self.engine == "re2":
            return self._re2(_UNANCHORED, text, pos, endpos)
        return self._budget(self._rx.search, text, pos, len(text) if endpos is None else endpos)

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        if self.engine == "re2":
            return self._re2(_ANCHOR_START, text, pos, endpos)
        return self._budget(self._rx.match, text, pos, len(text) if endpos is None else endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        if self.engine == "re2":
            return self._re2(_ANCHOR_BOTH, text, pos, endpos)
        return self._budget(self._rx.fullmatch, text, pos, len(text) if endpos is None else endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[Any]:
        end = len(text) if endpos is None else endpos
        if self.engine == "re2":
            return (_Re2Match(text, m._spans, self._names, pos, end) for m in self._rx.finditer(text, pos, end))
        return iter(self._budget(lambda t, *a, timeout: list(self._rx.finditer(t, *a, timeout=timeout)),
                                 text, pos, end))

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        if self.engine == "re2":
            if self.search(text) is None:
                return text
            fn = (lambda m: repl(_Re2Match(text, m._spans, self._names, 0, len(text)))) if callable(repl) else repl
            return str(self._rx.sub(fn, text, count))
        return str(self._budget(lambda t, timeout: self._rx.sub(repl, t, count, timeout=timeout), text))

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._rx.groupindex)

    @property
    def groups(self) -> int:
        return int(self._rx.groups)

    def __repr__(self) -> str:
        return f"PolicyRegex({self.pattern!r}, engine={self.engine})"


_CACHE: dict[tuple[str, int], PolicyRegex] = {}


def compiled(pattern: str, flags: int = 0) -> PolicyRegex:
    """The compiled pattern (memoized: every policy object of a process shares its patterns)."""
    key = (pattern, flags)
    hit = _CACHE.get(key)
    if hit is None:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        hit = _CACHE[key] = PolicyRegex(pattern, flags)
    return hit


def policy_regex(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """:func:`compiled`, typed as the ``re.Pattern`` whose methods it has, so judgment code keeps its
    annotations whichever engine runs the pattern."""
    return cast("re.Pattern[str]", compiled(pattern, flags))


def runs_on_re2(pattern: str, flags: int = 0) -> bool:
    """Whether the linear-time engine runs ``pattern`` (else the budgeted backtracking one)."""
    return compiled(pattern, flags).engine == "re2"


_NEEDS = {"ASSERT": "a lookahead or lookbehind", "ASSERT_NOT": "a negative lookahead or lookbehind",
          "GROUPREF": "a backreference", "GROUPREF_EXISTS": "a conditional group",
          "ATOMIC_GROUP": "an atomic group", "POSSESSIVE_REPEAT": "a possessive quantifier"}


def needs_backtracking(pattern: str) -> str | None:
    """What in ``pattern`` RE2 cannot run (``None`` when RE2 runs it)."""
    if runs_on_re2(pattern):
        return None
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return "a construct RE2 does not support"
    stack: list[Any] = [parsed]
    while stack:
        item = stack.pop()
        for op, av in (item.data if hasattr(item, "data") else item):
            name = str(op)
            if name in _NEEDS:
                return _NEEDS[name]
            for sub in (av if isinstance(av, list | tuple) else [av]):
                if isinstance(sub, sre_parse.SubPattern) or (isinstance(sub, list) and sub
                                                             and isinstance(sub[0], tuple)):
                    stack.append(sub)
                elif isinstance(sub, tuple | list):
                    stack.extend(x for x in sub if isinstance(x, sre_parse.SubPattern))
    return "a construct RE2 does not support"


def _probe_chars(pattern: str) -> list[str]:
    """Characters the pattern itself matches: what an input that makes it backtrack is made of."""
    chars: list[str] = []
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return ["a"]
    stack: list[Any] = [parsed]
    category = {"CATEGORY_DIGIT": "1", "CATEGORY_WORD": "a", "CATEGORY_SPACE": " ", "CATEGORY_NOT_SPACE": "a",
                "CATEGORY_NOT_WORD": "-", "CATEGORY_NOT_DIGIT": "a"}
    while stack and len(chars) < 16:
        item = stack.pop()
        for op, av in (item.data if isinstance(item, sre_parse.SubPattern) else item):
            name = str(op)
            if name == "LITERAL":
                chars.append(chr(av))
            elif name == "ANY":
                chars.append("a")
            elif name == "IN":
                for sop, sav in av:
                    if str(sop) == "LITERAL":
                        chars.append(chr(sav))
                        break
                    if str(sop) == "RANGE":
                        chars.append(chr(sav[0]))
                        break
                    if str(sop) == "CATEGORY":
                        chars.append(category.get(str(sav), "a"))
                        break
            for sub in (av if isinstance(av, list | tuple) else [av]):
                if isinstance(sub, sre_parse.SubPattern):
                    stack.append(sub)
                elif isinstance(sub, list | tuple):
                    stack.extend(x for x in sub if isinstance(x, sre_parse.SubPattern))
    return list(dict.fromkeys(chars)) or ["a"]


def within_budget(call: Callable[..., Any], text: str, *args: Any) -> Any:
    """``call(text, *args, timeout=...)`` on the backtracking engine, given :data:`BUDGET_S` of this
    thread's CPU time (see :data:`MAX_TRIES`); ``TimeoutError`` when the match needs more."""
    for _ in range(MAX_TRIES):
        cpu0 = time.thread_time()
        try:
            return call(text, *args, timeout=BUDGET_S)
        except TimeoutError:
            if time.thread_time() - cpu0 >= BUDGET_S / 2:
                raise  # it was working all along: the pattern is slow on this text
    raise TimeoutError(f"no attempt of {MAX_TRIES} got the CPU for {BUDGET_S * 1000:.0f} ms")


def backtracking_problem(pattern: str, flags: int = re.I) -> str | None:
    """Why a pattern that must run on the backtracking engine would stall (``None``: it does not):
    it is matched against runs of its own characters, each followed by a character that fails the
    match, which is what makes nested repetition (``(a|aa)+$``) backtrack exponentially."""
    rx = compiled(pattern, flags)
    if rx.engine == "re2":
        return None
    chars = _probe_chars(pattern)
    probes = [c * 32 + tail for c in chars for tail in ("\x00", "")]
    probes.append("".join(chars) * 8 + "\x00")
    for text in probes:
        try:
            within_budget(rx._rx.search, text)
        except TimeoutError:
            shown = text[:12] + ("…" if len(text) > 12 else "")
            return (f"backtracks catastrophically: matching {shown!r} ({len(text)} characters) took over "
                    f"{BUDGET_S * 1000:.0f} ms")
    return None
