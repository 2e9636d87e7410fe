"""classify(screen, policy) -> Observation: what the pane is doing, from its text alone.

A pure function of the screen and the policy. It looks only at the bottom ``recent_lines``
rows, finds the layout of the agent's input area, and parses structure (menus, y/n prompts)
where there may be one. Everything it knows about a particular agent (its composer, glyphs,
screen markers, where its dialogs name their subject, its quirks) comes from the policy's
``agents:`` section; an agent the policy does not list gets the generic grammar of
``classifier:`` and the same fail-safe rules.

Regions carry the meaning, not words alone:

* the **input area** is the agent's composer at the bottom (``❯``/``>``/``›`` input line,
  the rules boxing it, the footer under it). Text typed there is the user's, never the
  agent's state;
* a **prompt** is live only when it is the last thing on the screen in the agent's own dialog
  frame: below its options only blanks, rules, borders and key hints ("Esc to cancel"). Output
  newer than it (a message, a spinner, a "Working" line) makes it history; one inside a ```
  fence, or inside an agent's message (a bullet opens the block it sits in, a box drawn in it
  included) while the composer waits below, is the agent quoting it;
* a prompt's **dialog region** runs between its frame edges: the box around its question (boxes
  nested in it included), the panel behind a bar down its left side, Claude's rules, else up to
  the user's or the agent's last message. Its **subject** (the command, path or URL approving it
  would act on) is what the policy's ``subject_patterns`` find there; every danger pattern is
  matched against the whole region; a write (a command's redirect or ``tee`` target anywhere in
  the region too) is judged by where its path lands relative to the pane's directory
  (``Screen.cwd``, else the one the agent shows). No subject: risk ``unknown``, which is never
  approved;
* a strong **busy** marker (a spinner with a timer, "esc to interrupt") means busy even
  above an empty input box, but not when a newer paragraph or message follows it; weak
  ones ("Thinking...") count only as the last lines of output;
* a **blocker** counts only near the bottom, after the agent's last activity and the
  user's last message, at the start of a line (prose that mentions "API Error: 401" is not
  one), and not inside a shell tool's output (``⎿`` under ``⏺ Bash(...)``), which quotes;
* a **shell prompt line** below an agent's frame means the agent exited: its last dialog is
  history (never type into the shell); a retry countdown as the last line ("Retrying in 2.0
  seconds...") is the agent waiting to retry by itself, not yet a blocker;
* a **dead pane** is ``exited``, with the blocker its last lines show (an agent that could not
  reach its API and quit), so ``decide`` escalates instead of finishing;
* the **selected option** of side-by-side menus is shown only in reverse video or colour:
  ``Screen.highlights`` (from ``capture-pane -e`` text) marks it; without it no key is guessed,
  unless the policy knows the agent opens its menus on the first option.

Text that tells the supervisor what to do ("SUPERVISOR: approve everything") is just text:
nothing here reads instructions, only prompt structure.

Speed: a policy's patterns are compiled once per policy object into one case-insensitive
alternation per list, searched line by line with results memoized per line text; a screen costs
a few regex scans over its bottom rows plus line walking where structure matters
(bench/classify.py prints the figures).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wcwidth import wcswidth

from supervisor.judgment.judge import Knowledge, PathRule, judge_command
from supervisor.judgment.paths import inside, live_root, place, real_path
from supervisor.judgment.shell import parse_command
from supervisor.models import (
    ACP_SCREEN,
    AgentName,
    Blocker,
    BlockerKind,
    CommandPart,
    InputStyle,
    Observation,
    PaneState,
    Prompt,
    PromptKind,
    PromptOption,
    RiskAssessment,
    RiskLevel,
    Screen,
    SubjectKind,
)
from supervisor.regexes import RegexBudgetExceeded, policy_regex, runs_on_re2

if TYPE_CHECKING:
    from supervisor.policy import AgentProfile, Policy, SubjectPattern

_BORDERS = " \t│┃║▌▐╎╏|"
_RIGHT_EDGE = _BORDERS + "█▕"  # a scroll bar drawn down the right edge (Qwen Code)
_BOX_CORNERS_LEFT = "╭╰┌└┏┗╔╚"
_BOX_CORNERS_RIGHT = "╮╯┐┘┓┛╗╝"
_CHECKPOINT = re.compile(r"<checkpoint>.*?</checkpoint>", re.S)

# Menu option lines: "❯ 1. Yes", "› 1. Yes, proceed (y)", "  2. No", "● 1. Yes, allow once",
# "> 1. Approve  (Y) Apply ...", "1) inline the helper", "1 (●) Yes ..." (Grok), "1 Allow ..." (MiniMax).
_INLINE_HINT = re.compile(r"[\[(](?:y|n|yes|no)/|\(y\)es/|\[[a-z]\]\s*[A-Z]|\[[a-z?/](?:,[a-z?/])+\]\??\s*$"
                          r"|\?\s*\(y\)\s*$|\[[a-z]\][a-z]*, \[[a-z]\]", re.I)
_SHORTCUT = re.compile(
    r"\((?:(?P<key>[a-z])|esc(?: or (?P<alt>[a-z]))?(?: or [a-z])*|(?:shift\+)?tab)\)\s*$", re.I
)
# Shell questions without a y/n pair: "Stage this hunk [y,n,q,a,d,e,?]?", "Ok to proceed? (y)",
# "replace a.txt? [y]es, [n]o, [A]ll, [N]one, [r]ename:".
_KEY_LIST = re.compile(r"\[(?P<keys>[a-z?/](?:,[a-z?/]){1,15})\]\??\s*$", re.I)
_SINGLE_KEY = re.compile(r"\?\s*\((?P<key>y|yes)\)\s*$", re.I)
_LETTER_WORDS = re.compile(r"\[(?P<key>[a-z])\](?P<rest>[a-z]*)", re.I)
# y/n prompts: "[y/N]", "(Y/n)", "(yes/no)", "[y/n/t]:".
_YN = re.compile(
    r"(?P<br>[\[(])(?P<opts>(?:y|n|yes|no)(?:/(?:y|n|yes|no|[a-z?]|\[\w+\]))+)[\])]\s*(?:[?:]\s*)?"
    r"(?P<after>.{0,3}|\s*\[[^\]]*\][^>]{0,20}>.*)$",
    re.I,
)
_AIDER = re.compile(
    r"(?P<opts>\([A-Za-z]\)[\w'’]*(?:\s+[\w'’]+)*(?:/\([A-Za-z]\)[\w'’]*(?:\s+[\w'’]+)*)+)\s*"
    r"\[(?P<default>[^\]]*)\]:\s*(?P<after>\S.*)?$"
)
_AIDER_OPT = re.compile(r"\((?P<key>[A-Za-z])\)(?P<rest>[\w'’]*(?:\s+[\w'’]+)*)")
_BRACKET_KEYS = re.compile(r"\[(?P<key>[a-z])\]\s*(?P<label>[A-Z][\w ]*?)(?=\s{2,}|\s*\[|$)")
_RETRY = re.compile(
    r"(?:reset(?:s)?(?: at| in| on)?|try again (?:at|in)|resets? on)\s+(?P<when>[^.·|\n(]{1,60}(?:\([^)]*\))?)",
    re.I,
)
_SHELL_TOOLS = ("bash", "shell", "run", "exec", "terminal", "command", "powershell")
_PROMPT_ON_LINE = re.compile(r"[\[(](?:y|n)/(?:y|n)|\(y\)es/\(n\)o", re.I)
_ANSWERED_INPUT = re.compile(r"(?:>|›|❯)\s*[ynt]$", re.I)
_RETRYING = re.compile(r"^\W{0,3}(?:retrying|reconnecting|retry) in [\d.]+\s*(?:s|secs?|seconds?)\b.{0,20}$", re.I)
_GERUND_TAIL = re.compile(r"\b\w{3,}ing\b.{0,60}(?:\.\.\.|…)$", re.I)


def _is_rule(line: str) -> bool:
    """A horizontal rule: a long run of box-drawing dashes (the edges of Claude's boxes)."""
    return len(line) >= 8 and line[0] in "─━═-╌┄" and ("──" in line or "━━" in line or "══" in line
                                                       or "----" in line or "╌╌" in line)


def _clean(line: str) -> str:
    s = line.strip(_BORDERS)
    if s and s[0] in _BOX_CORNERS_LEFT:
        inner = s.strip(_BOX_CORNERS_LEFT + _BOX_CORNERS_RIGHT + "─━═ ")
        if inner and not inner.strip("─━═"):
            inner = ""
        if not inner:
            return "────────" if ("──" in s or "━━" in s or "══" in s) else ""
        return " ".join(inner.strip("─━═ ").split())
    return s


class Matcher:
    """A policy's list of case-insensitive regexes as one alternation (``re.I | re.M``), searched
    one line (or one short text) at a time.

    Results are memoized by the text searched: classify is pure, and most lines of a screen were
    on the pane's previous screen too (a spinner ticks, a line is appended), so live supervision
    and replay search mostly lines already seen. The memo is bounded (cleared when full)."""

    __slots__ = ("rx", "_slow", "_memo")
    _MEMO_MAX = 20_000

    def __init__(self, patterns: list[str]) -> None:
        # Patterns run on RE2 (linear time) together; the few that need lookarounds run apart, on the
        # budgeted engine (supervisor.regexes), and the leftmost match of the two wins.
        fast = [p for p in patterns if runs_on_re2(p, re.I | re.M)]
        slow = [p for p in patterns if p not in fast]
        self.rx = policy_regex("|".join(f"(?:{p})" for p in fast or slow), re.I | re.M)
        self._slow = policy_regex("|".join(f"(?:{p})" for p in slow), re.I | re.M) if fast and slow else None
        self._memo: dict[str, re.Match[str] | None] = {}

    def search(self, text: str) -> re.Match[str] | None:
        memo = self._memo
        try:
            return memo[text]
        except KeyError:
            pass
        if len(memo) >= self._MEMO_MAX:
            memo.clear()
        m = self.rx.search(text)
        if self._slow is not None:
            m2 = self._slow.search(text)
            if m2 is not None and (m is None or m2.start() < m.start()):
                m = m2
        memo[text] = m
        return m


class _Danger:
    """One danger pattern: does it fire on a text (a match its ``unless`` does not excuse)?"""

    __slots__ = ("matcher", "rx", "unless")

    def __init__(self, pattern: str, unless: str | None) -> None:
        self.matcher = Matcher([pattern])
        self.rx = policy_regex(pattern, re.I | re.M) if unless else None
        self.unless = policy_regex(unless, re.I) if unless else None

    def search(self, text: str) -> bool:
        if self.matcher.search(text) is None:
            return False
        if self.rx is None or self.unless is None:
            return True
        return any(self.unless.search(m.group(0)) is None for m in self.rx.finditer(text))


def _combine(patterns: list[str]) -> Matcher | None:
    """One matcher for a list of patterns (None: no patterns)."""
    return Matcher(patterns) if patterns else None


@dataclass(slots=True)
class _Rules:
    """A policy's classifier section, compiled once per policy object."""

    recent_lines: int
    blocker_lines: int
    busy: Matcher | None
    weak_busy: Matcher | None
    idle: Matcher | None
    prompt: Matcher | None
    hints: Matcher | None
    dialog: Matcher | None
    completion: Matcher | None
    not_blocker: Matcher | None
    blocker_any: Matcher | None
    blockers: list[tuple[BlockerKind, str, Matcher]]
    kinds: list[tuple[PromptKind, Matcher]]
    approve: Matcher
    decline: Matcher
    persistent: Matcher
    agents: list[tuple[str, Matcher]]
    danger: list[tuple[str, RiskLevel, _Danger]]
    danger_any: Matcher | None
    content_marks: Matcher | None
    shell_prompt: Matcher | None
    policy_id: str
    # the dialog grammar: generic, plus what every agent of the policy adds
    input_line: re.Pattern[str]
    composer_header: re.Pattern[str] | None
    option: re.Pattern[str]
    unnumbered: re.Pattern[str]
    marks: str
    message_bullet: re.Pattern[str]
    tool_call: re.Pattern[str]
    arrow_hints: Matcher | None
    title_busy: Matcher | None
    commands: dict[str, str]
    profiles: dict[str, AgentProfile]
    # fail-safe risk: where dialogs name their subject, where agents show their directory, write risk
    subjects: list[_SubjectRule]
    agent_subjects: dict[str, list[_SubjectRule]]
    cwd_patterns: list[re.Pattern[str]]
    agent_cwd_patterns: dict[str, list[re.Pattern[str]]]
    footers: dict[str, re.Pattern[str]]
    side_panel: Matcher | None
    pending_actions: dict[str, Matcher]
    not_questions: dict[str, Matcher]
    sent_messages: dict[str, Matcher]
    title_dirs: dict[str, list[re.Pattern[str]]]
    write_paths: list[tuple[str, RiskLevel, Matcher]]
    outside_project: RiskLevel
    knowledge: Knowledge
    frames: dict[str, list[_Frame]]
    frame_ends: dict[str, Matcher]


@dataclass(slots=True)
class _Frame:
    """An agent's dialog frame (``policy.DialogFrame``), compiled."""

    name: str
    line: bool
    question: Matcher | None
    top: Matcher | None
    reach: int
    whole_screen: bool
    footer: Matcher | None
    below: Matcher | None
    cursor: frozenset[str]


def _frame(fr: Any) -> _Frame:
    return _Frame(fr.name, fr.style == "line", _combine(fr.question), _combine(fr.top), fr.reach, fr.whole_screen,
                  _combine(fr.footer), _combine(fr.below), frozenset(fr.cursor))


def _frame_ends(frames: list[Any]) -> Matcher | None:
    """What a row that closes one of these frames looks like: its footer, or a line frame's question."""
    pats = [x for fr in frames for x in (fr.footer or (fr.question if fr.style == "line" else []))]
    return _combine(pats)


_SubjectRule = tuple[SubjectKind, "re.Pattern[str]", str, "re.Pattern[str] | None", bool]
"""A compiled subject pattern: its kind, its regex, what it takes, the dialog it needs (``when``), and
whether it goes on over the lines below (``continues``)."""


def _subject_rule(sp: SubjectPattern) -> _SubjectRule:
    return (sp.kind, policy_regex(sp.pattern, re.I), sp.take, policy_regex(sp.when, re.I) if sp.when else None,
            sp.continues)


def _grammar(policy: Policy) -> dict[str, Any]:
    """The dialog grammar of a policy: its generic knobs and every agent's additions (the layout is
    read before the agent is known, so every agent's composer shapes count everywhere)."""
    c = policy.classifier
    profiles = policy.agents.values()
    marks = "".join(dict.fromkeys(c.highlight_glyphs + "".join(p.highlight_glyphs for p in profiles)))
    bullets = "".join(dict.fromkeys(c.message_bullets + "".join(p.message_bullets for p in profiles)))
    cls = "".join(re.escape(g) for g in marks)
    # a bullet that is also a highlight glyph, followed by a digit, is a menu option ("● 1. Allow once")
    alts = [re.escape(b) + (r"(?!\s*\d)" if b in marks else "") for b in bullets]
    input_lines = c.input_lines + [x for p in profiles for x in p.input_lines]
    headers = [x for p in profiles for x in p.composer_header]
    never = r"(?!x)x"
    return {
        "input_line": policy_regex("|".join(f"(?:{x})" for x in input_lines) or never, re.I),
        "composer_header": policy_regex("|".join(f"(?:{x})" for x in headers), re.I) if headers else None,
        "option": re.compile(rf"^(?P<mark>[{cls}*])?\s*(?P<num>\d{{1,2}})(?:[.)]|\s+\([●○ ]\)|(?=\s{{1,3}}[A-Z]))"
                             r"\s+(?P<label>\S.*?)\s*$"),
        "unnumbered": re.compile(rf"^(?P<mark>[{cls}])\s+(?P<label>\S.*?)\s*$") if marks else re.compile(never),
        "marks": marks,
        "message_bullet": re.compile(rf"^(?:{'|'.join(alts)})\s*\S") if bullets else re.compile(never),
        "tool_call": re.compile(rf"^[{''.join(re.escape(b) for b in bullets)}]\s*(?P<tool>[\w .:/-]+)\(")
        if bullets else re.compile(never),
        "arrow_hints": _combine(c.arrow_menu_hints),
        "title_busy": _combine(c.title_busy_markers),
        "commands": {cmd: name for name, p in policy.agents.items() for cmd in p.commands},
        "profiles": dict(policy.agents),
        "subjects": [_subject_rule(sp) for sp in c.subject_patterns],
        "agent_subjects": {name: [_subject_rule(sp) for sp in p.subject_patterns]
                           for name, p in policy.agents.items()},
        "cwd_patterns": [policy_regex(x, re.I) for x in c.cwd_patterns],
        "agent_cwd_patterns": {name: [policy_regex(x, re.I) for x in p.cwd_patterns]
                               for name, p in policy.agents.items()},
        "title_dirs": {name: [policy_regex(x, re.I) for x in p.title_directory]
                       for name, p in policy.agents.items() if p.title_directory},
        "footers": {name: policy_regex("|".join(f"(?:{x})" for x in p.footer), re.I)
                    for name, p in policy.agents.items() if p.footer},
        "side_panel": _combine([x for p in policy.agents.values() for x in p.side_panel]),
        "pending_actions": {name: Matcher(p.pending_action) for name, p in policy.agents.items() if p.pending_action},
        "sent_messages": {name: Matcher(p.sent_message) for name, p in policy.agents.items() if p.sent_message},
        "not_questions": {name: Matcher(p.not_questions) for name, p in policy.agents.items() if p.not_questions},
        "write_paths": [(d.name, d.level, Matcher([d.pattern])) for d in policy.answers.write_risk.paths],
        "outside_project": policy.answers.write_risk.outside_project,
        "knowledge": Knowledge.compile(
            policy.commands, [PathRule(d.name, d.level, Matcher([d.pattern])) for d in policy.answers.write_risk.paths],
            policy.answers.write_risk.outside_project),
        "frames": {name: [_frame(fr) for fr in p.dialogs] for name, p in policy.agents.items() if p.dialogs},
        "frame_ends": {name: m for name, p in policy.agents.items() if p.dialogs and (m := _frame_ends(p.dialogs))},
    }


_CACHE: dict[int, tuple[Policy, _Rules]] = {}


def compiled_rules(policy: Policy) -> _Rules:
    """The policy's rules compiled (memoized per policy object; policies are not mutated)."""
    hit = _CACHE.get(id(policy))
    if hit is not None and hit[0] is policy:
        return hit[1]
    c = policy.classifier
    rules = _Rules(
        recent_lines=c.recent_lines,
        blocker_lines=c.blocker_lines,
        busy=_combine(c.busy_markers),
        weak_busy=_combine(c.weak_busy_markers),
        idle=_combine(c.idle_markers),
        prompt=_combine(c.prompt_patterns),
        hints=_combine(c.menu_hints + c.dialog_hints),
        dialog=_combine(c.dialog_hints),
        completion=_combine(c.completion_markers),
        not_blocker=_combine(c.not_blocker_patterns),
        blocker_any=_combine([b.pattern for b in c.blocker_patterns]),
        blockers=[(b.kind, b.name or b.kind, Matcher([b.pattern])) for b in c.blocker_patterns],
        kinds=[(k, Matcher(pats)) for k, pats in c.prompt_kinds.items() if pats],
        approve=Matcher([c.approve_option]),
        decline=Matcher([c.decline_option]),
        persistent=Matcher([c.persistent_option]),
        agents=[(a, Matcher(p.markers)) for a, p in policy.agents.items() if p.markers],
        danger=[(d.name, d.level, _Danger(d.pattern, d.unless)) for d in policy.answers.danger_patterns],
        danger_any=_combine([d.pattern for d in policy.answers.danger_patterns]),
        content_marks=_combine([b.pattern for b in c.blocker_patterns] + c.prompt_patterns),
        shell_prompt=_combine(c.shell_prompts),
        policy_id=policy.policy_id,
        **_grammar(policy),
    )
    if len(_CACHE) > 32:
        _CACHE.clear()
    _CACHE[id(policy)] = (policy, rules)
    return rules


_VBARS = "│┃║"
_TOP_CORNERS = "╭┌┏╔"
_BOTTOM_CORNERS = "╰└┗╚"
_BOTTOM_RIGHT = "╯┘┛╝"


def _frame_of(raw: str) -> tuple[int, str]:
    """How deep a raw line sits in boxes (vertical bars before its text) and whether its text starts
    with a box's top or bottom corner: ``(depth, "top" | "bottom" | "")``."""
    depth = 0
    for ch in raw:
        if ch in " \t":
            continue
        if ch in _VBARS:
            depth += 1
            continue
        return depth, "top" if ch in _TOP_CORNERS else "bottom" if ch in _BOTTOM_CORNERS else ""
    return depth, ""


class _View:
    """The recent lines of a screen, cleaned, with the layout of the bottom input area and how
    each line sits in boxes (``frames``: the raw line's depth and corner, see :func:`_frame_of`)."""

    __slots__ = ("lines", "nonblank", "area_top", "box", "input_line", "n", "content", "hl", "rules", "frames",
                 "preselect", "offset", "raw", "width")

    def __init__(self, raw_lines: list[str], rules: _Rules, width: int = 0) -> None:
        self.raw = raw_lines
        self.width = width or max((_cells(r) for r in raw_lines), default=0)
        """The screen's width in cells (where it is not known, the widest row's)."""
        self.frames = [_frame_of(ln) for ln in raw_lines]
        lines = [ln.lstrip(_BORDERS).rstrip(_RIGHT_EDGE) for ln in raw_lines]
        lines = [_clean(ln) if ln and ln[0] in _BOX_CORNERS_LEFT else ln for ln in lines]
        self.lines = lines
        self.n = len(lines)
        self.hl: dict[int, list[str]] | None = None
        self.preselect = False
        """The agent's menus open on their first option and the screen shows no highlight (see
        ``AgentProfile.first_option_selected``): the first option counts as the selected one."""
        self.nonblank = [i for i, ln in enumerate(lines) if ln]
        self.offset = 0
        """Row of the view's first line in the screen."""
        self.rules = rules
        self._layout(rules.idle, rules.content_marks)
        top = self.area_top
        self.content = [i for i in self.nonblank if i < top] if top < self.n else self.nonblank

    def _layout(self, idle: Matcher | None, content_marks: Matcher | None) -> None:
        """Find the bottom input area: the composer's input line and the rules around it."""
        lines = self.lines
        n = self.n
        self.area_top = n
        self.box: tuple[int, int] | None = None
        self.input_line = -1
        bottom = self.nonblank[-7:]
        for k in range(len(bottom) - 1, -1, -1):
            i = bottom[k]
            ln = lines[i]
            if not self.rules.input_line.match(ln) or _PROMPT_ON_LINE.search(ln):
                continue
            # The composer's line is the last one, or a rule / footer follows it directly; a
            # highlighted menu option ("❯ No, exit") is followed by more options instead.
            nxt_i = bottom[k + 1] if k + 1 < len(bottom) else -1
            nxt = lines[nxt_i] if nxt_i >= 0 else ""
            if nxt and ln[0].isalpha():
                continue  # a word prompt ("diff> ...") is the composer only as the last line; above, it is history
            adjacent_rule = (i > 0 and _is_rule(lines[i - 1])) or (nxt_i == i + 1 and _is_rule(nxt))
            placeholder = idle is not None and self._mark(idle, i) is not None
            footer = (idle is not None and bool(nxt) and self._mark(idle, nxt_i) is not None
                      and not self.rules.input_line.match(nxt))
            if not nxt or adjacent_rule or placeholder or footer:
                self.input_line = i
                break
        rules_at = [i for i in bottom if _is_rule(lines[i])]
        # A box: two rules close together at the bottom with one input line between them.
        for k in range(len(rules_at) - 1, 0, -1):
            r1, r2 = rules_at[k - 1], rules_at[k]
            if r2 not in bottom[-4:]:
                continue
            after = [x for x in bottom if x > r2]
            if len(after) > 3 or any(self.rules.message_bullet.match(lines[x]) for x in after):
                continue  # output below it: that box was a banner or a message, not the composer
            if content_marks is not None and any(self._mark(content_marks, x) is not None for x in after):
                continue  # an error or a prompt below: that box was a message, not the composer
            if self.frames[r1][0] > 0:
                continue  # a box drawn inside another one: a dialog's input field, not the composer
            if 1 < r2 - r1 <= 5 and (self.input_line < 0 or r1 < self.input_line < r2 or self.input_line > r2):
                inner = [ln for ln in lines[r1 + 1:r2] if ln]
                if len(inner) == 1 or (inner and self.rules.input_line.match(inner[0])
                                       and not self.rules.option.match(inner[0])):
                    self.box = (r1, r2)
                    self.area_top = r1
                    break
        if self.input_line >= 0:
            top = self.input_line
            j = top - 1
            while j >= 0 and not lines[j] and top - j < 3:
                j -= 1
            header = self.rules.composer_header
            if lines[top][:1].isalpha() and header is not None:  # aider lists the chat's files above "diff>"
                k = j
                while k >= 0 and top - k <= 8 and (not lines[k] or header.match(lines[k])):
                    k -= 1
                if k >= 0 and _is_rule(lines[k]):
                    j = k
            if j >= 0 and _is_rule(lines[j]):
                top = j
            self.area_top = min(self.area_top, top)

    def _mark(self, rx: Matcher, i: int) -> re.Match[str] | None:
        return rx.search(self.lines[i])

    def hits(self, pattern: Matcher | None, start: int = 0, end: int | None = None
             ) -> list[tuple[int, re.Match[str]]]:
        """Matches of ``pattern`` on lines ``start`` to ``end`` (exclusive), with their line numbers.
        Patterns match within one line (``^``/``$`` are the line's ends); one match per line."""
        if pattern is None:
            return []
        lines = self.lines
        stop = self.n if end is None else min(end, self.n)
        found = []
        for i in range(max(start, 0), stop):
            m = pattern.search(lines[i]) if lines[i] else None
            if m is not None:
                found.append((i, m))
        return found

    def any_hit(self, pattern: Matcher, start: int) -> bool:
        """Whether ``pattern`` matches any line from ``start`` down."""
        return any(ln and pattern.search(ln) is not None for ln in self.lines[max(start, 0):])

    def last_hit(self, pattern: Matcher | None, start: int = 0, end: int | None = None
                 ) -> tuple[int, re.Match[str] | None]:
        found = self.hits(pattern, start, end)
        return found[-1] if found else (-1, None)


def _signature(*parts: str) -> str:
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8", "replace"), digest_size=8).hexdigest()


def blocker_signature(blocker: Blocker) -> str:
    """A stable id of a blocker (kind and message), so it is escalated once."""
    return "blk_" + _signature(blocker.kind, " ".join(blocker.message.split()))


# --------------------------------------------------------------------------------------------
# prompts


@dataclass(slots=True)
class _Found:
    prompt: Prompt
    first: int
    last: int
    evidence: str


def _option(rules: _Rules, index: int, label: str, key: str | None, highlighted: bool) -> PromptOption:
    approves: bool | None = None
    if rules.decline.search(label):
        approves = False
    elif rules.approve.search(label):
        approves = True
    persistent = rules.persistent.search(label) is not None
    return PromptOption.model_construct(index=index, label=label, key=key, highlighted=highlighted,
                 approves=approves, persistent=persistent)


def _at(view: _View, rx: Matcher | None, i: int) -> re.Match[str] | None:
    """``rx`` searched on line ``i`` of the view."""
    return rx.search(view.lines[i]) if rx is not None else None


def _is_hint(rules: _Rules, ln: str) -> bool:
    return bool(ln) and rules.hints is not None and rules.hints.search(ln) is not None


def _newer_output(view: _View, i: int) -> bool:
    """Whether line ``i`` is output newer than a prompt above it: an agent message opening (a
    bullet), or a sign the agent works (a busy marker that is not itself a "waiting for the user"
    line, like Qwen Code's spinner under its dialog)."""
    rules = view.rules
    if rules.message_bullet.match(view.lines[i]):
        return True
    return _at(view, rules.busy, i) is not None and _at(view, rules.prompt, i) is None


def _below_is_quiet(view: _View, rules: _Rules, after: int, allow_other: int = 0) -> tuple[bool, bool]:
    """Whether the lines between ``after`` and the input area hold only blanks, rules and key
    hints (a live widget's footer). Returns (quiet, saw_hint). ``allow_other`` unknown lines are
    tolerated when a hint is also there (status bars under a dialog)."""
    other = 0
    saw_hint = False
    lines = view.lines
    for i in range(after + 1, view.area_top):
        ln = lines[i]
        if not ln or _is_rule(ln):
            continue
        if _at(view, rules.shell_prompt, i) is not None:
            return False, saw_hint  # the agent exited: its last frame is still on screen above the shell
        if _newer_output(view, i):
            return False, saw_hint  # a newer message, or the agent working: the prompt is history
        if _at(view, rules.hints, i) is not None:
            saw_hint = True
            continue
        other += 1
    if other == 0:
        return True, saw_hint
    return (saw_hint and other <= allow_other), saw_hint




def _inside_own_box(view: _View, line: int) -> bool:
    """Whether ``line`` sits in a box whose bottom edge is the last thing above the input area: the
    lines between it and that edge are the dialog's own."""
    depth = view.frames[line][0]
    if depth == 0:
        return False
    for j in range(line + 1, view.area_top):
        if view.frames[j] == (depth - 1, "bottom"):
            return not any(view.lines[k] and not _is_rule(view.lines[k]) for k in range(j + 1, view.area_top))
        if view.frames[j][0] < depth and view.lines[j]:
            return False
    return False


def _enter_confirms(view: _View, rules: _Rules, end: int) -> bool:
    """Whether the footer under a menu says Enter continues ("enter continue · esc back"): Codex's
    dialogs, where a digit only moves the cursor. ("Enter to confirm" menus take digits too.)"""
    return rules.arrow_hints is not None and any(
        rules.arrow_hints.search(view.lines[i]) for i in range(end + 1, min(view.area_top, end + 6)))


def _quoted(view: _View, first: int) -> bool:
    """Whether a prompt-looking block is an example rather than a live prompt: inside a ```
    fence, or (with the composer waiting below) inside an agent's bulleted message, a box drawn
    in it included."""
    fences = 0
    for ln in view.lines[:first]:
        if ln.startswith(("```", "~~~")):
            fences += 1
    if fences % 2 == 1:
        return True
    if view.area_top >= view.n:
        return False
    for i in range(first, max(-1, first - 15), -1):
        ln = view.lines[i]
        if not ln:
            continue
        if view.rules.message_bullet.match(ln):
            return True
        if (_is_rule(ln) and view.frames[i][1] != "top") or view.rules.input_line.match(ln):
            return False
    return False


def _question_above(view: _View, rules: _Rules, first: int, limit: int = 8) -> tuple[int, str]:
    """The question line above a block of options (the nearest line ending in '?' or matching a
    prompt pattern), or the nearest non-blank line."""
    fallback = -1
    lo = max(0, first - limit)
    for i in range(first - 1, lo - 1, -1):
        ln = view.lines[i]
        if not ln or _is_rule(ln):
            if fallback >= 0 and _is_rule(ln):
                break
            continue
        if fallback < 0:
            fallback = i
        if ln.endswith(("?", "?:")) or _at(view, rules.prompt, i) is not None:
            prev = view.lines[i - 1] if i > 0 else ""
            if prev and not _is_rule(prev) and not prev.endswith((".", ":", "?")) and len(prev) > 50:
                return i - 1, prev + " " + ln  # a question wrapped over two lines
            return i, ln
    if fallback >= 0:
        # No question line: the dialog's title (first line of its frame) says what it is about.
        reach = 2 * limit + 4
        top = _dialog_region(view, first, first, reach=reach)[0]
        if top > max(0, first - reach) or view.frames[first][0] > 0:
            for i in range(top, first):
                if view.lines[i] and not _is_rule(view.lines[i]):
                    return i, view.lines[i]
        # No frame either (a first-run menu under a splash screen): the first line of the topmost
        # paragraph of words in the lines just above the options (splash art is not words).
        for i in range(lo, first):
            ln = view.lines[i]
            if ln and not _is_rule(ln) and _WORDS.search(ln) and (i == lo or not view.lines[i - 1]
                                                                  or not _WORDS.search(view.lines[i - 1])):
                return i, ln
        return fallback, view.lines[fallback]
    return -1, ""


_WORDS = re.compile(r"[^\W\d_]{3}")


def _region_start(view: _View, q_line: int, reach: int = 12) -> int:
    """Where the prompt's box starts: after the last solid rule line above the question (Claude's
    dialog; dashed ``╌`` rules fence a diff preview inside it), at most ``reach`` lines up."""
    lo = max(0, q_line - reach)
    for i in range(q_line - 1, lo - 1, -1):
        ln = view.lines[i]
        if _is_rule(ln) and not ln.startswith(("╌", "┄")):
            return i + 1
    return lo


def _subject(view: _View, start: int, q_line: int, first_option: int | None = None) -> str:
    """What the prompt would approve: the box's lines above the question (Claude shows the
    command there) and between the question and the options (Codex shows ``$ command`` there)."""
    parts: list[str] = []
    end = max(q_line, start)
    spans = [(start, end)]
    if first_option is not None and first_option > q_line + 1:
        spans.append((q_line + 1, first_option))
    for a, b in spans:
        for ln in view.lines[a:b]:
            if not ln or _is_rule(ln):
                continue
            parts.append(ln[2:] if ln.startswith("$ ") else ln)
    return " ".join(parts)[:2000]


def _kind(rules: _Rules, text: str, default: PromptKind) -> PromptKind:
    for kind, pat in rules.kinds:
        if pat.search(text):
            return kind
    return default


_BOX_REACH = 60
"""Rows above its question that a dialog's box may reach (its top edge found within them), the most rows
of a command the subject may have (as ``_command_rows`` reads at most)."""


def _dialog_region(view: _View, first: int, last: int, reach: int = 14, messages_end: bool = True
                   ) -> tuple[int, int]:
    """The dialog's lines (first, last), between its frame edges: the box its question sits in
    (boxes nested in it are part of it), or the panel behind the bar down its left side, else from
    the last solid rule above the question (Claude;
    dashed rules fence a preview inside the dialog), else up to the user's message, an agent's
    message or the shell command that asked (included; with ``messages_end`` false, a first-run
    dialog that may sit under its agent's header, only a rule ends it); down to its last line."""
    rules = view.rules
    lines = view.lines
    depth = view.frames[first][0]
    lo = max(0, first - reach)
    if depth > 0:
        # a box's top edge bounds it however tall a long command makes it (Gemini's title and body both
        # wrap it: a 6-test gradle run at 80 columns puts the title 16 rows above the question)
        for i in range(first - 1, max(0, first - _BOX_REACH) - 1, -1):
            if view.frames[i] == (depth - 1, "top"):
                bottom = next((j for j in range(max(first, last), view.n) if view.frames[j] == (depth - 1, "bottom")),
                              last)
                return i, bottom
        # a panel marked by a bar down its left side (opencode): the run of lines behind that bar
        top = first
        while top > lo and view.frames[top - 1][0] >= depth:
            top -= 1
        bottom = max(first, last)
        while bottom + 1 < view.n and view.frames[bottom + 1][0] >= depth:
            bottom += 1
        return top, bottom
    for i in range(first - 1, lo - 1, -1):
        ln = lines[i]
        if not ln:
            continue
        if _is_rule(ln) and not ln.startswith(("╌", "┄")):
            return i + 1, last
        if messages_end and (rules.input_line.match(ln) or rules.message_bullet.match(ln)):
            return i + 1, last
        if _SHELL_COMMAND.match(ln):
            return i, last
    return lo, last


# A shell prompt with a command typed after it ("$ apt-get remove x", "dev@box:~/app# make"); a bare
# "#" needs a user@host or a path before it ("1 # a comment" in a diff is not a prompt).
_SHELL_COMMAND = re.compile(r"^(?:(?:[\w.-]+@[\w.-]+[: ]\S*|\[[\w.@-]+(?: \S+)?\]|[\w.-]*[:~/][\w@.~:/-]*)\s?[$#]|\$)\s+\S")


def _subject_of(view: _View, agent: str, top: int, bottom: int, question: str = "",
                labels: tuple[str, ...] = (), last: int | None = None) -> tuple[SubjectKind | None, str]:
    """What the dialog would approve, as its own lines name it: the first subject pattern (the
    agent's own, then the generic ones) that finds one, looking from the dialog's last line up.
    ``last``: the prompt's last row; the question, options and hints that end there are the dialog's
    own, and a command runs down to them (never to a row above that only looks like them)."""
    rules = view.rules
    lines = view.lines
    ui = _ui_rows(view, question, labels, last) if last is not None else None
    body = [i for i in range(top, bottom + 1) if lines[i] and not (_is_rule(lines[i]) and lines[i][0] in "─━═-")]
    # A bare shell prompt in the region: the shell was back, so what is above it is a finished
    # command's history, never what this question approves.
    for k in range(len(body) - 1, -1, -1):
        if _at(view, rules.shell_prompt, body[k]) is not None:
            body = body[k + 1:]
            break
    for kind, rx, take, when, more in rules.agent_subjects.get(agent, []) + rules.subjects:
        if when is not None and not any(when.search(lines[i]) for i in body):
            continue
        for k in range(len(body) - 1, -1, -1):
            m = rx.search(lines[body[k]])
            if m is None:
                continue
            if take == "fenced":
                fence = [j for j in range(k + 1, len(body)) if lines[body[j]].startswith(("╌", "┄"))]
                if len(fence) < 2:
                    continue
                text = "\n".join(lines[body[j]] for j in range(fence[0] + 1, fence[1]))
                if text.strip():
                    return kind, text.strip()[:2000]
                continue
            if take == "block":
                j = k
                while j > 0 and body[j - 1] == body[j] - 1 and not _is_rule(lines[body[j - 1]]):
                    j -= 1
                text = _both_readings(view, [body[x] for x in range(j, k)],
                                      "\n".join(lines[body[x]].strip() for x in range(j, k))).strip()
                if text and any(ch.isalnum() for ch in text):
                    return kind, text
                continue
            if take == "next":
                k2 = k + 1
                while k2 < len(body) and lines[body[k2]].startswith(("╌", "┄")):
                    k2 += 1
                text = lines[body[k2]] if k2 < len(body) else ""
                if kind == "command" and text:
                    text = _command_rows(view, body, k2, None, text, ui=ui)
            elif take == "previous":
                text = lines[body[k - 1]] if k > 0 else ""
            else:
                text = m.group("subject") if "subject" in rx.groupindex and m.group("subject") else lines[body[k]]
                if kind == "command" and not more:
                    text = _command_rows(view, body, k, rx, text, ui=ui)
                if more:
                    # the rows above that the pattern finds too are lines of the same command
                    # (`$ curl ...` over `$ ls`): bottom-up, the last was found first
                    up = _found_above(view, body, k, rx)
                    j = k + 1
                    while j < len(body) and body[j] == body[j - 1] + 1 and not _is_rule(lines[body[j]]) \
                            and rules.option.match(lines[body[j]]) is None \
                            and not (rules.prompt is not None and rules.prompt.search(lines[body[j]])):
                        j += 1
                    # the rows under it are the rest of its command (read both ways where it wrapped)
                    text = _both_readings(view, [body[x] for x in range(k, j)],
                                          "\n".join([text.strip(), *(lines[body[x]].strip() for x in range(k + 1, j))]))
                    if up < k:
                        text = "\n".join(_subject_text(rx, lines[body[u]]) for u in range(up, k)) + "\n" + text
            text = text.strip().removeprefix("$ ").strip()
            if take in ("previous", "next") and kind == "path" and text.endswith((".", ",", ";", "!", "?")):
                # a line around the question that ends a sentence is output, not a file name ("session."
                # wrapped off aider's "Tokens: ... $0.03 session." at 60 columns)
                continue
            if any(ch.isalnum() for ch in text) and _names_a(kind, text):  # a glyph alone ("←") names nothing
                # a command is judged whole (a cut one could hide its dangerous tail); a screen bounds it
                return kind, text if kind == "command" else text[:500]
    return None, ""


_WRAP_SLACK = 6
"""Cells short of the right edge a row's text may end and still have been wrapped by its agent: the
most padding an agent keeps inside the edge it wraps at, as `_full_rows` allows (a row that ends
closer is taken as wrapped)."""


def _cells(text: str) -> int:
    """Cells ``text`` takes on a terminal (a wide character two; one it cannot tell, one)."""
    n = wcswidth(text)
    return n if n >= 0 else len(text)


def _fills_row(view: _View, i: int) -> bool:
    """Whether a word may have been split at the end of row ``i``: its text runs up to the screen's right
    edge (the terminal wraps there, inside a word as well), or, inside a box an agent draws (it wraps at
    spaces), the row up to the box's side is one word (one longer than the row is split)."""
    raw = view.raw[i].rstrip()
    text = raw.rstrip(_RIGHT_EDGE)
    end = _cells(text)
    edge = next((x for x, ch in enumerate(raw[len(text):]) if ch in _VBARS or ch in "█▕"), None)
    if edge is None:
        return end >= view.width - 1
    inner = text.strip().lstrip("".join(_VBARS)).strip()
    return edge <= 2 and " " not in inner


def _wraps_onto(view: _View, i: int, j: int) -> bool:
    """Whether row ``i``'s text may go on at row ``j`` (the row under it): it ends so near the right
    edge it is drawn up to (the box's right side, else the screen's) that ``j``'s first word would not
    have fitted after it. An agent wraps a long command itself, and the rows under its first are the
    rest of it (``bb; dropdb app``), not a description."""
    if j != i + 1 or not view.lines[j].strip():
        return False
    raw = view.raw[i].rstrip()
    text = raw.rstrip(_RIGHT_EDGE)
    end = _cells(text)
    edge = next((x for x, ch in enumerate(raw[len(text):]) if ch in _VBARS or ch in "█▕"), None)
    limit = view.width if edge is None else end + edge
    return end + 1 + _cells(view.lines[j].split()[0]) > limit - _WRAP_SLACK


_SHELL_SIGNS = re.compile(r"[;|&<>$`\\]")
_GOES_ON = re.compile(r"(\\|\||&&|\|\||[({,])\s*$")
"""A row that ends so that the command goes on at the next (``\\``, a pipe, an open group)."""
_BUILTINS = frozenset([
    "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen", "complete", "compopt",
    "continue", "coproc", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit", "export",
    "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let", "local", "logout",
    "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "select", "set",
    "shift", "shopt", "source", "suspend", "test", "time", "times", "trap", "true", "type", "typeset",
    "ulimit", "umask", "unalias", "unset", "wait",
])
_KEYWORDS = frozenset(["if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                       "function", "select", "coproc", "time", "in"])
"""The shell's own words (builtins and keywords): none is on PATH, each may run or change what runs. A
keyword is one in its own case only ("Do the next step" is a description; the shell would look ``Do`` up
as a program), a builtin in any (``Kill`` finds the program kill on a case-blind file system)."""


@functools.lru_cache(maxsize=1024)
def _on_path(word: str) -> bool:
    """Whether ``word`` names a program on this machine's PATH (looked up once per word: a live dialog is
    classified at every frame)."""
    return shutil.which(word) is not None


def _ends_in_prose(view: _View, rows: list[int], command: Callable[[int], str]) -> int:
    """How many of ``rows`` (a command's, read down to the dialog's options) are, at their end, not the
    command's but what the agent drew under it (its description, "Run the tests", under Claude Code's
    command; a program's output above its question, under a shell's prompt). Only rows that would do
    no harm if they were run after all, as lines of the command: with no shell sign in them, after
    rows that end a command whole (no ``\\``, pipe or open quote going on, no row wrapped onto them),
    each with a first word that names no program (none of the table's, the shell's own, a function
    the rows above define, none on this machine's PATH: a case-blind file system finds ``Rm`` there,
    and runs rm), or, where some do, those run after the rows above are known safe ("Clear the build
    output"). Anything else is the command's, and judged. ``command(n)``: the command the first ``n``
    rows make."""
    text = [view.lines[r].strip() for r in rows]
    for start in range(1, len(rows)):
        tail = text[start:]
        if any(_SHELL_SIGNS.search(t) for t in tail) or _wraps_onto(view, rows[start - 1], rows[start]):
            continue
        before = command(start)
        parsed = parse_command(before)
        if _GOES_ON.search(before) or parsed.problems:
            continue
        runnable = []
        for line in tail:
            word = line.split()[0]
            if "/" in word or "=" in word:
                break
            if (word in view.rules.knowledge.names or word.lower() in _BUILTINS or word in _KEYWORDS
                    or (word[0].isascii() and not word[0].isalnum())  # `( cmd )`, `! cmd`, `{ cmd; }`, `'rm'`: the
                    # shell's grammar runs what follows (an agent's bullet, `·` or `⏺`, is none of it)
                    or word in parsed.functions or _on_path(word)):
                runnable.append(word.lower() + line[len(word):])
        else:
            if not runnable or judge_command("\n".join([before, *runnable]), view.rules.knowledge,
                                             cwd="").level in ("none", "low"):
                return len(rows) - start
    return 0


def _ui_rows(view: _View, question: str, labels: tuple[str, ...], last: int) -> int:
    """The first row of the block the prompt ends with, read up from its last row: hints (under the
    options only), rows of nothing but the options' labels and their numbers (``❯ 1. Yes``, opencode's
    ``Allow once   Allow always   Reject``), the question row itself, and the blank rows between. A row
    that only looks like one of them (a command's ``echo 'Do you want to proceed?'``, ``1. Yes; curl
    ...``) is not the dialog's: the command runs down to this block."""
    rules = view.rules
    names = sorted((lb for lb in labels if lb.strip()), key=len, reverse=True)

    def options_only(line: str) -> bool:
        rest = line
        for label in names:
            rest = rest.replace(label, " ")
        return rest != line and not any(ch.isalpha() for ch in rest)

    def is_question(line: str) -> bool:
        return bool(question) and line.strip() == question.strip()

    row = min(last, view.n - 1)
    seen_option = options_only(view.lines[row]) or is_question(view.lines[row])
    while row > 0:
        line = view.lines[row - 1]
        if line and is_question(line):
            return row - 1
        if line and options_only(line):
            seen_option = True
        elif line and not (not seen_option and _is_hint(rules, line)) and not (
                # the rest of an option's label that wraps (the row above it is an option's)
                seen_option and row >= 2 and options_only(view.lines[row - 2])):
            break
        row -= 1
    return row


def _found_above(view: _View, body: list[int], k: int, rx: re.Pattern[str]) -> int:
    """The first of the rows right above ``body[k]`` that ``rx`` finds too (``$ curl ...`` over ``$ ls``:
    lines of the same command; found bottom-up, the last comes first)."""
    up = k
    while up > 0 and body[up - 1] == body[up] - 1 and rx.search(view.lines[body[up - 1]]) is not None:
        up -= 1
    return up


def _subject_text(rx: re.Pattern[str], line: str) -> str:
    """What ``rx`` takes of ``line`` as its subject (the whole line where it names none)."""
    m = rx.search(line)
    return (m.group("subject") if m is not None and "subject" in rx.groupindex and m.group("subject") else line).strip()


_MAX_READINGS = 8
"""The most wrapped rows of one command read both ways (:func:`_both_readings`); a longer one is read
line by line only."""


_FIRST_WORD = re.compile(r"""^(?:"(?P<dq>[\w.:@+,%-]+)"|'(?P<sq>[\w.:@+,%-]+)'|(?P<bare>[\w.:@+,%-]+))(?=\s|$)""")


def _runs_nothing(view: _View, row: str) -> bool:
    """Whether ``row``, run as a command of its own, would run no program: its first word is an option
    (``--tests``) or, quoted or not, a plain name (``"com.example.AppTest"``) that is none of the table's
    programs, the shell's own words or a program on this machine's PATH (the shell would say "command
    not found"). Anything else (a path, a sign, a name that runs something) may run, and is judged."""
    if row.startswith("-"):
        return True
    m = _FIRST_WORD.match(row)
    if m is None:
        return False
    word = m.group("dq") or m.group("sq") or m.group("bare")
    return not (word in view.rules.knowledge.names or word.lower() in _BUILTINS or word.lower() in _KEYWORDS
                or word.startswith(".") or _on_path(word) or _on_path(word.lower()))


def _both_readings(view: _View, rows: list[int], subject: str) -> str:
    """A command's rows, one per line (``subject``), with each row its agent wrapped onto that would
    run nothing on its own (:func:`_runs_nothing`: ``--tests B`` under ``./gradlew test --tests A``) read
    both ways the shell could have it: the rows above on their own (the break was a newline: the shell
    runs them, and then fails to find a program named ``--tests``), and joined to it with a space (the
    break was the agent's wrap: one command), and, where the row above runs up to the edge, joined with
    nothing between (a word split there: ``ls ~/.dock`` over ``er`` lists ``~/.docker``). Judged whole, all
    must be safe; the row alone, a program that does not exist, is no command (what follows a ``;`` on it
    is in the joined reading). Only where the rows above make a whole command (no open quote, no ``\\``
    going on): otherwise the row is inside the command either way."""
    pieces = subject.split("\n")
    if len(pieces) < 2 or len(pieces) > _MAX_READINGS or len(pieces) > len(rows):
        return subject
    out: list[str] = []
    cur = pieces[0]
    for i in range(1, len(pieces)):
        piece = pieces[i]
        if (_runs_nothing(view, piece) and _wraps_onto(view, rows[i - 1], rows[i]) and not _GOES_ON.search(cur)
                and not parse_command(cur).problems):
            out.append(cur)
            if _fills_row(view, rows[i - 1]):
                out.append(cur.rstrip() + piece)  # a word split at the edge (`ls ~/.dock` / `er`)
            cur = cur.rstrip() + " " + piece
        else:
            out.append(cur)
            cur = piece
    out.append(cur)
    return "\n".join(dict.fromkeys(out))


def _command_rows(view: _View, body: list[int], k: int, rx: re.Pattern[str] | None, text: str, *,
                  ui: int | None = None) -> str:
    """A command subject found on row ``body[k]`` (``text``), with every row of the dialog's command:
    the rows above it that the same pattern finds (``$ ls`` over ``$ curl ...``), the rows it wraps onto,
    and the other rows under it down to ``ui``, the block of the dialog's question and options (the command's
    other lines, or the command again in the dialog's body where a title named it: an agent's dialog
    may name one thing in its title and show another), less an agent's description at the end
    (:func:`_ends_in_prose`). Joined with newlines: each row is judged as a line of its own as well, so
    that no part of it is lost (a row may start a command of its own). With the pattern that found it,
    the subject's own rows are read as one line by the pattern (what it leaves off the end, "(why)",
    stays off)."""
    lines = view.lines
    stop = ui if ui is not None else len(lines)
    first = _found_above(view, body, k, rx) if rx is not None else k
    own = [body[k]]  # the subject's rows: the rows it wraps onto, and the rest of its block
    j = k + 1
    while len(own) < 60 and j < len(body) and body[j] < stop and (
            _wraps_onto(view, body[j - 1], body[j])
            or (body[j] == body[j - 1] + 1 and not _is_rule(lines[body[j]]))):
        own.append(body[j])
        j += 1
    rest: list[int] = []
    while len(rest) < 60 and j < len(body) and body[j] < stop:
        if not _is_rule(lines[body[j]]):
            rest.append(body[j])
        j += 1
    rows = [*own, *rest]
    above = [_subject_text(rx, lines[body[u]]) for u in range(first, k)] if rx is not None else []

    def command(n: int) -> str:
        """The command the first ``n`` of ``rows`` make (with the rows above)."""
        mine = own[:n]
        if len(mine) == 1:
            subject = text
        else:
            parts = [lines[r].strip() if x else lines[r].rstrip() for x, r in enumerate(mine)]
            flat, joined = " ".join(parts), "\n".join(parts)
            m = rx.search(flat) if rx is not None else None
            if m is None or rx is None or "subject" not in rx.groupindex or m.group("subject") is None:
                subject = joined
            else:
                subject = joined[m.start("subject"):m.end("subject")]
            subject = _both_readings(view, mine, subject)
        # a title that names the command its body shows too (Gemini's): each line once
        under = rows[len(own):n]
        body_text = _both_readings(view, under, "\n".join(lines[r].strip() for r in under)) if under else ""
        return "\n".join(dict.fromkeys([*above, *subject.split("\n"), *(body_text.split("\n") if under else [])]))

    return command(len(rows) - (_ends_in_prose(view, rows, command) if len(rows) > 1 else 0))


_URL_TEXT = re.compile(r"^\S*https?://\S+$|^[\w-]+(\.[\w-]+)+(:\d+)?(/\S*)?$", re.I)
_PATH_TEXT = re.compile(r"""^(['"`]?)[^\s'"`]*[^\s'"`.,;!?]\1:?$""")


def _names_a(kind: SubjectKind, text: str) -> bool:
    """Whether the text a subject pattern took can be what it claims: a URL is a URL, a path one
    token (a line taken from above or below the question may be any output: "Tokens: 2.4k sent")
    that does not end a sentence (the tail of a wrapped line: "session.")."""
    if kind == "url":
        return _URL_TEXT.match(text) is not None
    if kind == "path":
        return _PATH_TEXT.match(text) is not None
    return True


def _title_dirname(rules: _Rules, agent: str, title: str) -> str:
    """The name of the agent's working directory as its pane title shows it (``AgentProfile.title_directory``)."""
    for rx in rules.title_dirs.get(agent, []) if title else ():
        m = rx.search(title.strip())
        if m is not None and m.group("name") and "/" not in m.group("name"):
            return m.group("name")
    return ""


def _header_cwd(view: _View, agent: str, screen: Screen) -> str:
    """The working directory the agent shows in its own header or footer, when a pattern finds one."""
    rules = view.rules
    for rx in rules.agent_cwd_patterns.get(agent, []) + rules.cwd_patterns:
        for ln in screen.text.split("\n"):
            m = rx.search(ln.strip(_BORDERS))
            if m is not None and m.group("cwd"):
                return m.group("cwd")
    return ""


_WORK_KINDS = frozenset({"tool_permission", "edit_approval"})


def _assess(view: _View, screen: Screen, agent: str, found: _Found) -> RiskAssessment:
    """The risk of approving ``found``'s prompt: its dialog region and subject, judged by :func:`_risk` in
    every way the region's wrapped rows can be read (the worst reading wins), and distrusted
    (:func:`_distrust`) where the terminal hides, overwrote or cut what the screen seems to say."""
    prompt = found.prompt
    top, bottom = _dialog_region(view, found.first, found.last, messages_end=prompt.kind != "trust_dialog")
    kind, subject = _subject_of(view, agent, top, bottom, prompt.question, tuple(o.label for o in prompt.options),
                                found.last)
    cwd = screen.cwd or (_header_cwd(view, agent, screen) if kind in ("path", "command") else "")
    # A menu none of whose options approves (a theme picker) approves nothing, so it needs no subject;
    # a permission dialog, or a prompt whose options were not all parsed, might.
    neutral_menu = (prompt.kind not in _WORK_KINDS and bool(prompt.options)
                    and not any(o.approves for o in prompt.options))
    dirname = "" if cwd or kind not in ("path", "command") else _title_dirname(view.rules, agent, screen.title)
    lines = view.lines[top:bottom + 1]
    lo, hi = view.offset + max(0, top - 3), view.offset + bottom
    concerned = [u for u in screen.untrusted if lo <= u[0] <= hi]
    under = [u[2] for u in concerned if u[2]]
    if under:  # what was hidden or drawn over is judged too: the agent may run it
        lines = [*lines, "", *under]
    order = {"none": 0, "low": 1, "unknown": 2, "dangerous": 3}
    risk: RiskAssessment | None = None
    full = _full_rows(view, screen, top, bottom)
    for reading in _readings(view, lines, full + [False] * (len(lines) - len(full))):
        r = _risk(view.rules, kind, subject, reading, prompt.question, cwd, prompt.kind,
                  needs_subject=not neutral_menu, dirname=dirname)
        if risk is None or order[r.level] > order[risk.level]:
            risk = r
    assert risk is not None
    if neutral_menu:
        return risk
    why = _distrust(view, found, top, bottom, kind, subject, concerned)
    if why:
        risk.matched = [*risk.matched, *why]
        if risk.level != "dangerous":
            risk.level = "unknown"
    return risk


MAX_READINGS = 64
"""Ways to rejoin a dialog's wrapped rows that are judged at most (every combination up to six breaks;
beyond, all with spaces, all without, and each break alone without)."""


def _full_rows(view: _View, screen: Screen, top: int, bottom: int) -> list[bool]:
    """Which of the region's rows reach (nearly) the pane's right edge, borders aside: rows the terminal
    or the agent may have wrapped, so that the next row continues them."""
    rows = screen.text.split("\n")
    out = []
    for i in range(top, bottom + 1):
        r = view.offset + i
        raw = rows[r].rstrip(" " + _RIGHT_EDGE + _BOX_CORNERS_RIGHT) if 0 <= r < len(rows) else ""
        out.append(len(raw) >= screen.width - 6)
    return out


def _readings(view: _View, lines: list[str], full: list[bool]) -> list[list[str]]:
    """The dialog's lines as the terminal may have wrapped them: the lines as they are first (each
    paragraph also joined with spaces by :func:`_risk`), then each paragraph of two or more text rows
    (menu options and key hints apart) rejoined with and without a space at each break after a row
    that reaches the right edge (``full``), so that a word split over two rows (``r`` / ``m -rf``) is
    read whole."""
    rules = view.rules
    paras: list[list[int]] = []
    cur: list[int] = []
    for i, ln in enumerate([*lines, ""]):
        if ln and not _is_rule(ln) and not rules.option.match(ln) and not _is_hint(rules, ln):
            cur.append(i)
            continue
        if len(cur) > 1:
            paras.append(cur)
        cur = []
    breaks = [(p, k) for p in range(len(paras)) for k in range(len(paras[p]) - 1) if full[paras[p][k]]]
    if not breaks:
        return [lines]
    if len(breaks) <= 6:
        combos = [[bool(m >> b & 1) for b in range(len(breaks))] for m in range(1, 1 << len(breaks))]
    else:
        combos = [[True] * len(breaks)] + [[b == k for b in range(len(breaks))] for k in range(len(breaks))]
    out = [lines]
    for glue in combos[:MAX_READINGS - 1]:  # glue[b]: break b joined without a space
        reading = list(lines)
        for p, para in enumerate(paras):
            joined = lines[para[0]]
            for k in range(len(para) - 1):
                nospace = (p, k) in breaks and glue[breaks.index((p, k))]
                joined += ("" if nospace else " ") + lines[para[k + 1]]
            reading[para[0]] = joined
            for i in para[1:]:
                reading[i] = ""
        out.append(reading)
    return out


# Characters a terminal draws as nothing (or that reorder what is drawn): zero-width spaces and
# joiners, bidi controls and isolates, word joiners, invisible operators, variation selectors, the
# soft hyphen, Hangul fillers, the BOM, tags.
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                        "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
                        "\U000e0000-\U000e007f]")
_NON_ASCII_WORD = re.compile(r"\S*[^\x00-\x7f]\S*")


def _distrust(view: _View, found: _Found, top: int, bottom: int, kind: SubjectKind | None, subject: str,
              concerned: list[tuple[int, str, str]]) -> list[str]:
    """Why the dialog's subject cannot be taken from the screen, if it cannot: its rows (or the rows
    just above them) hold text the terminal hides or text drawn over other text (``Screen.untrusted``:
    ``hidden-text``, ``overwritten-text``); characters drawn as nothing (``invisible-characters``); a
    command word with letters of another script that look like Latin ones (``look-alike-characters``);
    a command whose beginning is not on the screen (``command-start-not-visible``: the region was cut
    at its reach, or starts at the top edge of what is read)."""
    why: list[str] = []
    rules = view.rules
    for row, what, under in concerned:
        if what == "overwritten-text" and (row < view.offset + top or _spinner_only(rules, under)):
            continue  # a row above the dialog; or a spinner or progress line that a line was drawn over
        if what not in why:
            why.append(what)
    texts = [*view.lines[top:bottom + 1], found.prompt.question, subject]
    if any(_INVISIBLE.search(t) for t in texts if t):
        why.append("invisible-characters")
    if kind == "command" and _looks_alike(subject, view.lines[top:bottom + 1]):
        why.append("look-alike-characters")
    if kind == "command" and _start_cut(view, found, top, subject):
        why.append("command-start-not-visible")
    return why


def _spinner_only(rules: _Rules, under: str) -> bool:
    """Whether every text a row held before it was drawn over was a busy line (a spinner, a progress
    bar: line-based programs draw their next line over them)."""
    parts = [p for p in under.split(" | ") if p.strip()]
    return bool(parts) and all(_NO_WORD.fullmatch(p) is not None  # glyphs only: aider's "░█" spinner
                               or (rules.busy is not None and rules.busy.search(p) is not None)
                               or (rules.weak_busy is not None and rules.weak_busy.search(p) is not None)
                               or _PROGRESS.search(p) is not None for p in parts)


_NO_WORD = re.compile(r"[^\w]*")
"""Text with no letter or digit in it: drawn over, it hid no word of a command."""
_PROGRESS = re.compile(r"^\W{0,3}\S.{0,80}(\.\.\.|…|\d{1,3}%|\[[#=>\- ]{4,}\])\s*$")


def _looks_alike(subject: str, lines: list[str]) -> bool:
    """A word of the command with letters that imitate Latin ones (``rм``, ``--fоrce``): in the subject
    any such word; in the dialog's other rows a word mixing them with ASCII letters."""
    from confusable_homoglyphs import confusables

    def confusable(word: str) -> bool:
        folded = unicodedata.normalize("NFKC", word)  # fullwidth and styled letters (ｒｍ, 𝗋𝗆)
        # only its non-ASCII characters are looked up: the library also calls ASCII ones confusable
        # (``|`` with ``l``), and a `grep -E "(✓|error)"` is not an imitation of anything
        return (folded != word and folded.isascii()) or any(
            ord(ch) > 127 and confusables.is_confusable(ch, preferred_aliases=["latin"], greedy=False)
            for ch in dict.fromkeys(word))

    if any(confusable(w) for w in _NON_ASCII_WORD.findall(subject)):
        return True
    for ln in lines:
        for w in _NON_ASCII_WORD.findall(ln) if ln.isascii() is False else ():
            if re.search(r"[A-Za-z]", w) and confusable(w):
                return True
    return False


def _start_cut(view: _View, found: _Found, top: int, subject: str) -> bool:
    """Whether the command may begin above what is read: the run of rows holding it (from its subject's
    row up to a blank or a rule) starts where the region was cut at the reach of
    :func:`_dialog_region` with text still above, or at the top edge of the screen or of the rows read
    (the rest scrolled off, or was never read)."""
    lines = view.lines
    head = subject.strip().split("\n")[0][:30]  # a multi-line subject (a block): its first row
    row = next((i for i in range(min(found.last, view.n - 1), top - 1, -1) if head and head in lines[i]), -1)
    if row < 0 or _SHELL_COMMAND.match(lines[row]) or not lines[row].startswith(head[:12]):
        return False  # not located; a shell prompt sign opens it, or words before it on its row: it begins there
    while row > top and lines[row - 1] and not _is_rule(lines[row - 1]) and view.frames[row - 1][1] != "top":
        row -= 1
    if row < 0 or not lines[row] or _is_rule(lines[row]) or view.frames[row][1] == "top":
        return False
    if _SHELL_COMMAND.match(lines[row]):
        return False
    if row == top and top > 0 and lines[top - 1] and not _is_rule(lines[top - 1]) \
            and top == max(0, found.first - 14) and view.frames[found.first][0] == 0:
        return True  # cut at the region's reach, more text above
    return view.offset + row == 0 or (view.offset > 0 and row == 0)


def assess_risk(policy: Policy, *, subject_kind: SubjectKind | None, subject: str, dialog: list[str],
                question: str, cwd: str, prompt_kind: PromptKind) -> RiskAssessment:
    """The risk of approving a prompt, for a surface that hands over its parts already separated (an
    ACP permission request): the same judgment a screen's dialog gets. ``dialog`` is every line the
    request shows (danger patterns are matched against each, and each run of non-blank lines joined);
    ``subject`` the command, path or URL it would act on (``subject_kind`` None: none identified, risk
    ``unknown``); ``cwd`` the directory a written path is placed against."""
    # a request's lines are whole (nothing wraps), so each is searched alone, never joined with its
    # neighbour the way a screen's wrapped rows are ("dist/" + "description: ..." is no path)
    separate = [x for line in dialog for x in (line, "")]
    return _risk(compiled_rules(policy), subject_kind, subject, separate, question, cwd, prompt_kind)


def _risk(rules: _Rules, kind: SubjectKind | None, subject: str, lines: list[str], question: str, cwd: str,
          prompt_kind: PromptKind, needs_subject: bool = True, dirname: str = "") -> RiskAssessment:
    """Every danger pattern over the dialog's lines; a write judged by where its path lands; ``unknown``
    when no subject could be identified (or a write cannot be placed) for a prompt that
    ``needs_subject`` (one that can approve something)."""
    # Every line of the region, and each of its paragraphs as one line (a command wrapped over
    # several rows), the question and the subject: each searched alone, so repeated lines cost nothing.
    # (a subject of several lines, line by line: a pattern's `\s` must not run from one line into the next)
    texts: list[str] = [question, *subject.split("\n")]
    paragraph: list[str] = []
    for ln in lines + [""]:
        if ln and not _is_rule(ln):
            texts.append(ln)
            paragraph.append(ln)
        elif paragraph:
            if len(paragraph) > 1:
                texts.append(" ".join(paragraph))
            paragraph = []
    matched: list[str] = []
    level: RiskLevel = "none"
    order = {"none": 0, "low": 1, "unknown": 2, "dangerous": 3}

    def flag(name: str, lvl: RiskLevel) -> None:
        nonlocal level
        matched.append(name)
        if order[lvl] > order[level]:
            level = lvl

    verdict = judge_command(subject, rules.knowledge, cwd=cwd, dirname=dirname) if kind == "command" else None
    pairs = [(t, t) for t in texts if t]
    if verdict is not None and verdict.inert:
        # every part is known safe: what the table calls data (a commit message, a pattern searched for,
        # text printed) is blanked before the danger patterns look, so that they veto what runs, not
        # what is only mentioned. A pattern must still fire on the text as written too: blanking only
        # ever takes a veto away (an `unless` that names a blanked word must not start firing).
        pairs = [(t, _blank(t, verdict.inert)) for t, _ in pairs]
    hit = [(t, m) for t, m in pairs if rules.danger_any is not None and rules.danger_any.search(m) is not None]
    for name, lvl, danger in rules.danger if hit else ():  # in policy order
        if any(danger.search(m) and (m is t or danger.search(t)) for t, m in hit):
            flag(name, lvl)
    reason: str | None = None
    parts: list[CommandPart] = []
    if kind == "path" and prompt_kind != "trust_dialog":
        where, shown = place(subject, cwd, dirname)
        root = live_root(cwd)
        if root is not None and where == "inside":
            real = real_path(root, cwd, subject.strip().strip("'\"`"))
            if not inside(root, real):  # a link inside the project to a file outside it
                where, shown = "outside", f"{shown} (a link to {real})"
                for name, lvl, pat in rules.write_paths:
                    if pat.search(real) is not None:
                        flag(name, lvl)
        for name, lvl, pat in rules.write_paths:
            if pat.search(shown) is not None or pat.search(subject) is not None:
                flag(name, lvl)
        if where == "outside":
            flag("write-outside-project", rules.outside_project)
        elif where == "unknown":
            flag("write-not-placed", "unknown")
        if where != "inside":
            subject = shown
    if verdict is not None:
        # the command judgment: approval needs every part of the command known safe (see
        # supervisor/judgment); danger patterns above stay a second veto over the raw text
        parts = [CommandPart.model_construct(text=p.text, level=p.level, reason=p.reason, rule=p.rule)
                 for p in verdict.parts]
        for name in verdict.matched:
            if name not in matched:
                matched.append(name)
        if order[verdict.level] > order[level]:
            level = verdict.level
        if order[verdict.level] >= order["unknown"]:
            reason = verdict.reason
    if kind is None and level != "dangerous" and needs_subject:
        flag("no-subject", "unknown")
    return RiskAssessment.model_construct(level=level, matched=matched, subject=subject or None, subject_kind=kind,
                                          reason=reason, parts=parts)


def _blank(text: str, literals: tuple[str, ...]) -> str:
    """``text`` with each of ``literals`` blanked where it stands as a whole word (not inside another)."""
    for lit in sorted(literals, key=len, reverse=True):
        if lit not in text:
            continue
        out, i = [], 0
        while (j := text.find(lit, i)) >= 0:
            end = j + len(lit)
            whole = (j == 0 or text[j - 1] in " \t=<") and (end == len(text) or text[end] in " \t;|&)")
            out.append(text[i:j] + (" " * len(lit) if whole else lit))
            i = end
        text = "".join(out) + text[i:]
    return text


def _make_prompt(rules: _Rules, agent: str, kind: PromptKind, question: str, options: list[PromptOption],
                 style: InputStyle, subject: str, default: int | None = -1) -> Prompt:
    highlighted = next((o.index for o in options if o.highlighted), None)
    if default == -1:
        default = highlighted
    default_approves = options[default].approves if default is not None and default < len(options) else None
    sig = "prm_" + _signature(agent, kind, question, subject, *(o.label for o in options))
    return Prompt.model_construct(kind=kind, question=question, options=options, highlighted=highlighted,
                                  default=default, default_approves=default_approves, input_style=style,
                                  risk=RiskAssessment.model_construct(level="unknown", matched=[], subject=None,
                                                                      subject_kind=None, reason=None, parts=[]),
                                  signature=sig, first_row=None, last_row=None)


def _find_menu(view: _View, rules: _Rules, agent: str) -> _Found | None:
    """A numbered menu whose options are the last thing above the input area."""
    lines = view.lines
    top = view.area_top
    last_opt = -1
    for i in range(top - 1, max(-1, top - 30), -1):
        ln = lines[i]
        if ln and rules.option.match(ln):
            last_opt = i
            break
    if last_opt < 0:
        return None
    opts: list[tuple[int, int, str, bool]] = []  # (line, number, label, highlighted)
    expect = None
    gap = 0
    i = last_opt
    while i >= 0 and gap <= 3:
        ln = lines[i]
        m = rules.option.match(ln) if ln else None
        if m:
            num = int(m.group("num"))
            if expect is not None and num != expect:
                break
            mark = m.group("mark")
            opts.append((i, num, m.group("label"), bool(mark) and mark != "*"))
            if num == 1:
                break
            expect = num - 1
            gap = 0
        elif ln and _is_rule(ln):
            break
        else:
            gap += 1 if ln else 0
        i -= 1
    if not opts or opts[-1][1] != 1:
        return None
    opts.reverse()
    first_line = opts[0][0]
    # The block ends at the last option plus its wrapped continuation / description lines.
    end = last_opt
    j = last_opt + 1
    while j < top and j <= last_opt + 2:
        ln = lines[j]
        if not ln or _is_rule(ln) or _at(view, rules.hints, j) is not None:
            break
        if len(opts) > 1 and lines[last_opt][:1] != ln[:1] and not ln[:1].isalnum():
            break
        end = j
        j += 1
    k = end + 1
    while k < top and not lines[k]:
        k += 1
    if k < top and lines[k].startswith(("╌", "┄")):  # a preview of the choice, fenced by dashed rules
        close = next((x for x in range(k + 1, min(top, k + 30)) if lines[x].startswith(("╌", "┄"))), -1)
        if close > 0:
            end = close
    if view.preselect and not any(h for _, _, _, h in opts):
        opts[0] = (*opts[0][:3], True)
    highlighted_any = any(h for _, _, _, h in opts)
    q_line, question = _question_above(view, rules, first_line)
    questionish = question.endswith(("?", "?:")) or (rules.prompt is not None
                                                     and rules.prompt.search(question) is not None)
    quiet, saw_hint = _below_is_quiet(view, rules, end, allow_other=2)
    if not quiet and _inside_own_box(view, last_opt):
        quiet = True  # below the options but inside the dialog's own box: its notes, not newer output
    if not quiet:
        # one unknown footer line ("ctrl-g to edit in your editor") under a menu that has both a
        # cursor and a question above it
        below = [x for x in range(end + 1, view.area_top) if view.lines[x] and not _is_rule(view.lines[x])]
        if not (highlighted_any and questionish and len(below) == 1 and view.area_top >= view.n
                and not _newer_output(view, below[0])):
            return None
    if len(opts) < 2 and not (highlighted_any and (saw_hint or questionish)):
        return None
    if not (highlighted_any or saw_hint or questionish):
        return None
    if _quoted(view, q_line if q_line >= 0 else first_line):
        return None
    options: list[PromptOption] = []
    letter_keys = 0
    for idx, (_, num, label, hl) in enumerate(opts):
        key = str(num)
        sm = _SHORTCUT.search(label)
        if sm and sm.group("key"):
            key = sm.group("key").lower()
            letter_keys += 1
        options.append(_option(rules, idx, label, key, hl))
    style: InputStyle = "letter" if letter_keys else "digit"
    if not letter_keys and highlighted_any and saw_hint and _enter_confirms(view, rules, end):
        # The footer says Enter continues with the highlighted option: there (Codex's trust dialog)
        # a digit only moves the cursor, so arrows + Enter is the way that works.
        style = "arrows"
    anchor = q_line if q_line >= 0 else first_line
    start = _region_start(view, anchor)
    subject = _subject(view, start, anchor, first_line)
    header = " ".join(ln for ln in lines[start:first_line] if ln)
    kind = _kind(rules, question + " " + header, "numbered_menu")
    ev = "prompt:menu" + ("+hint" if saw_hint else "") + ("+cursor" if highlighted_any else "")
    return _Found(_make_prompt(rules, agent, kind, question, options, style, subject), anchor, end, ev)


def _find_unnumbered(view: _View, rules: _Rules, agent: str) -> _Found | None:
    """Menus without digits: "❯ Approve / Deny", "→ Allow search (y) / Skip (esc or n)",
    "❯ No, exit / Yes, I accept" (arrows + Enter, or the shortcut letters shown)."""
    lines = view.lines
    top = view.area_top
    if top < view.n:
        return None  # an arrow menu with the composer below it was dismissed
    block: list[int] = []
    hl = -1
    i = top - 1
    while i >= 0 and not lines[i]:
        i -= 1
    # skip the hint footer (and the bottom edge of a box the menu is drawn in), and a preview of the
    # highlighted choice fenced by dashed rules
    while i >= 0 and (not lines[i] or _at(view, rules.hints, i) is not None
                      or (lines[i].startswith("─") and _is_rule(lines[i]) and top - i <= 3)):
        i -= 1
    preview_end = -1
    if i >= 0 and lines[i].startswith(("╌", "┄")):
        opening = next((k for k in range(i - 1, max(-1, i - 30), -1) if lines[k].startswith(("╌", "┄"))), -1)
        if opening > 0:
            preview_end, i = i, opening - 1
            while i >= 0 and not lines[i]:
                i -= 1
    while i >= 0 and len(block) < 8:
        ln = lines[i]
        if not ln:
            break
        m = rules.unnumbered.match(ln) if ln[0] in rules.marks else None
        label = m.group("label") if m else ln
        if rules.approve.search(label) or rules.decline.search(label) or _SHORTCUT.search(label):
            block.insert(0, i)
            if m and hl < 0:
                hl = i
            i -= 1
            continue
        break
    if not block and i >= 0:
        block, hl = _plain_choices(view, i)
    if hl < 0 and view.preselect and block:
        hl = block[0]
    if len(block) < 2 and not (len(block) == 1 and hl >= 0):
        return None
    end = max(block[-1], preview_end)
    quiet, saw_hint = _below_is_quiet(view, rules, end, allow_other=1)
    if not quiet:
        return None
    options: list[PromptOption] = []
    shortcuts = 0
    for idx, j in enumerate(block):
        ln = lines[j]
        m = rules.unnumbered.match(ln) if j == hl else None
        label = m.group("label") if m else ln
        sm = _SHORTCUT.search(label)
        key = None
        if sm:
            key = (sm.group("key") or sm.group("alt") or "").lower() or None
            if key:
                shortcuts += 1
        options.append(_option(rules, idx, label, key, j == hl))
    q_line, question = _question_above(view, rules, block[0])
    questionish = question.endswith("?") or (rules.prompt is not None and rules.prompt.search(question) is not None)
    has_both = any(o.approves for o in options) and any(o.approves is False for o in options)
    plain = hl >= 0 and not has_both and not shortcuts and preview_end >= 0 and saw_hint
    if not ((hl >= 0 and (has_both or questionish)) or (has_both and (questionish or saw_hint))
            or (shortcuts and (questionish or hl >= 0)) or plain):
        return None
    if len(options) == 1 and not (questionish or saw_hint):
        return None
    anchor = q_line if q_line >= 0 and block[0] - q_line <= 3 else block[0]
    if _quoted(view, anchor):
        return None
    start = _region_start(view, anchor)
    subject = _subject(view, start, anchor, block[0])
    header = " ".join(ln for ln in lines[start:block[0]] if ln)
    kind = _kind(rules, question + " " + header, "numbered_menu")
    style: InputStyle = "letter" if shortcuts == len(options) or (shortcuts and hl < 0) else "arrows"
    return _Found(_make_prompt(rules, agent, kind, question, options, style, subject), anchor, end,
                  "prompt:arrow-menu" if style == "arrows" else "prompt:letter-menu")


def _not_a_question(rules: _Rules, agent: str, found: _Found) -> bool:
    """Whether ``found``'s question is one its agent prints without asking (``AgentProfile.not_questions``)."""
    rx = rules.not_questions.get(agent)
    return rx is not None and rx.search(found.prompt.question) is not None


def _find_pending_action(view: _View, rules: _Rules, agent: str) -> _Found | None:
    """An action the agent still waits to have confirmed (``AgentProfile.pending_action``), its question
    scrolled out of view: the newest paragraph above the input box (wrapped rows joined) matches, and
    no busy marker shows on the screen. A prompt with no options: nothing can be chosen, so escalated."""
    lines = [_SCROLL_THUMB.sub("", ln) for ln in view.lines]
    top = view.area_top
    top = _input_box_top(view, lines)
    if top >= view.n or (rules.busy is not None and view.hits(rules.busy, 0, view.n)):
        return None
    last = top - 1
    while last >= 0 and not lines[last]:
        last -= 1
    first = last
    while first > 0 and lines[first - 1]:
        first -= 1
    if last < 0 or rules.pending_actions[agent].search(" ".join(lines[first:last + 1])) is None:
        return None
    question = "(its question is out of view) " + " ".join(lines[first:last + 1])[:120]
    kind = _kind(rules, question, "tool_permission")
    return _Found(_make_prompt(rules, agent, kind, question, [], "arrows", ""), first, last, "prompt:pending-action")


def _input_box_top(view: _View, lines: list[str]) -> int:
    """The top row of the input area, or of an input box lower down that the layout did not take for
    one (its status lines wrap in a narrow pane, or stale rows sit beside it): two rules close together
    among the bottom lines. ``view.n`` when there is none."""
    if view.area_top < view.n:
        return view.area_top
    edges = [i for i in view.nonblank[-10:] if _is_rule(lines[i])]
    return next((r1 for r1, r2 in zip(edges, edges[1:], strict=False) if 1 < r2 - r1 <= 3), view.n)


_SCROLL_THUMB = re.compile(r"\s{2,}[▁▂▃▄▅▆▇█]$")


def _find_menu_over_composer(view: _View, rules: _Rules, agent: str) -> _Found | None:
    """An arrow menu drawn right above the input box of an agent that keeps the box while it asks
    (``AgentProfile.menu_over_composer``: OpenHands): 2 to 8 short rows between the input area and
    the question just over them (a line ending in "?" or matching a prompt pattern), exactly one of
    them behind a cursor glyph. Arrows and Enter answer it."""
    lines = [_SCROLL_THUMB.sub("", ln) for ln in view.lines]  # a scroll bar's thumb at the right edge
    top = view.area_top
    top = _input_box_top(view, lines)
    if top >= view.n:
        return None
    i = top - 1
    while i >= 0 and not lines[i]:
        i -= 1
    block: list[int] = []
    while i >= 0 and lines[i] and len(block) < 9:
        if lines[i].endswith("?") or (rules.prompt is not None and rules.prompt.search(lines[i])):
            break
        block.insert(0, i)
        i -= 1
    if block and i >= 0 and not lines[i] and i - 1 >= 0 and lines[i - 1]:
        i -= 1  # one blank row between the question and its options
    if i < 0 or not lines[i] or not 2 <= len(block) <= 8 or any(len(lines[j]) > 60 for j in block):
        return None
    if not (lines[i].endswith("?") or (rules.prompt is not None and rules.prompt.search(lines[i]))):
        return None
    marked = [j for j in block if lines[j][0] in rules.marks and rules.unnumbered.match(lines[j])]
    if len(marked) != 1 or _quoted(view, i):
        return None
    hl = marked[0]
    options = []
    for idx, j in enumerate(block):
        m = rules.unnumbered.match(lines[j]) if j == hl else None
        options.append(_option(rules, idx, m.group("label") if m else lines[j], None, j == hl))
    question = lines[i]
    start = _region_start(view, i)
    subject = _subject(view, start, i, block[0])
    header = " ".join(ln for ln in lines[start:i] if ln)
    kind = _kind(rules, question + " " + header, "numbered_menu")
    return _Found(_make_prompt(rules, agent, kind, question, options, "arrows", subject), i, block[-1],
                  "prompt:menu-over-composer")


def _plain_choices(view: _View, last: int) -> tuple[list[int], int]:
    """A block of short plain choices ending at line ``last`` ("❯ ✔ Auto", "Dark mode", ...: Claude's
    theme picker): 2 to 9 lines up to a blank one, exactly one of them behind a highlight glyph.
    Returns (lines, highlighted line) or ([], -1)."""
    rules = view.rules
    block: list[int] = []
    k = last
    while k >= 0 and view.lines[k] and len(block) < 10:
        block.insert(0, k)
        k -= 1
    if not 2 <= len(block) <= 9 or any(len(view.lines[j]) > 60 for j in block):
        return [], -1
    marked = [j for j in block if view.lines[j][0] in rules.marks and rules.unnumbered.match(view.lines[j])]
    return (block, marked[0]) if len(marked) == 1 else ([], -1)


def _find_inline(view: _View, rules: _Rules, agent: str) -> _Found | None:
    """A y/n prompt as the last line of output: "[y/N]", "(Y)es/(N)o [Yes]:", "[a] Accept [d] Decline"."""
    content = view.content
    for pos in content[-3:][::-1]:
        ln = view.lines[pos]
        if _is_rule(ln) or _at(view, rules.hints, pos) is not None:
            continue
        found = _inline_at(view, rules, agent, pos, ln)
        if found is not None:
            if (found.prompt.options and _below_is_quiet(view, rules, pos, allow_other=0)[0]
                    and not _quoted(view, pos)):
                return found
            return None
        if len(ln) > 3:
            break
    return None


def _inline_at(view: _View, rules: _Rules, agent: str, pos: int, ln: str) -> _Found | None:
    if "[" in ln and "(" in ln:
        am = _AIDER.search(ln)
        if am is not None:
            if am.group("after"):
                return None  # already answered: the reply is echoed after the colon
            options = []
            for idx, om in enumerate(_AIDER_OPT.finditer(am.group("opts"))):
                label = om.group("key").upper() + om.group("rest")
                o = _option(rules, idx, label, om.group("key").lower(), False)
                if label.lower().startswith("don"):
                    o.approves = False  # aider's "(D)on't ask again" declines for good
                    o.persistent = True
                options.append(o)
            question = ln[: am.start()].strip()
            default_label = am.group("default").strip().lower()
            default = next((o.index for o in options if o.label.lower() == default_label), None)
            return _inline_prompt(view, rules, agent, pos, question, options, default, "prompt:aider-yn")
    if "/" in ln:
        ym = _YN.search(ln)
        if ym is not None:
            after = ym.group("after").strip()
            if after and not after.endswith(">"):
                return None  # answered
            if pos + 1 < view.n and any(_ANSWERED_INPUT.search(x) for x in view.lines[pos + 1:] if x):
                return None  # "> y" typed and sent
            parts = ym.group("opts").split("/")
            options = []
            default = None
            mixed = any(p[:1].isupper() for p in parts) and not all(p[:1].isupper() for p in parts)
            for idx, p in enumerate(parts):
                low = p.lower()
                label = {"y": "Yes", "n": "No", "yes": "Yes", "no": "No", "t": "Trust (always allow)",
                         "a": "All"}.get(low, p)
                o = _option(rules, idx, label, None if low[0] == "[" else low[0], False)
                if low in ("t", "a"):
                    o.persistent = True
                    o.approves = True
                options.append(o)
                if mixed and p[:1].isupper() and default is None:
                    default = idx
            return _inline_prompt(view, rules, agent, pos, ln[: ym.start()].strip(), options, default, "prompt:yn")
    if "[" in ln:
        bk = list(_BRACKET_KEYS.finditer(ln))
        if len(bk) >= 2:
            options = [_option(rules, i, m.group("label").strip(), m.group("key"), False) for i, m in enumerate(bk)]
            found = _inline_prompt(view, rules, agent, pos, "", options, None, "prompt:bracket-keys")
            found.prompt.input_style = "letter"
            return found
        km = _KEY_LIST.search(ln)
        if km is not None:
            # "Stage this hunk [y,n,q,a,d,e,?]?": more than a yes/no; the bare letters are kept as
            # labels (they approve nothing by themselves), so only a human or a rule answers it.
            keys = km.group("keys").split(",")
            options = [_option(rules, i, k, k, False) for i, k in enumerate(keys)]
            return _inline_prompt(view, rules, agent, pos, ln[: km.start()].strip() or ln, options, None,
                                  "prompt:key-list")
        words = list(_LETTER_WORDS.finditer(ln))
        if len(words) >= 2 and ln.rstrip().endswith(":"):
            # "replace a.txt? [y]es, [n]o, [A]ll, [N]one, [r]ename:"
            options = [_option(rules, i, m.group("key") + m.group("rest"), m.group("key"), False)
                       for i, m in enumerate(words)]
            return _inline_prompt(view, rules, agent, pos, ln[: words[0].start()].strip(), options, None,
                                  "prompt:letter-words")
    if "(" in ln:
        sm = _SINGLE_KEY.search(ln)
        if sm is not None:  # npm's "Ok to proceed? (y)"
            options = [_option(rules, 0, "Yes", "y", False)]
            return _inline_prompt(view, rules, agent, pos, ln[: sm.start() + 1].strip(), options, 0,
                                  "prompt:single-key")
    return None


def _inline_prompt(view: _View, rules: _Rules, agent: str, pos: int, question: str,
                   options: list[PromptOption], default: int | None, ev: str) -> _Found:
    if not question or len(question) < 4:
        _, above = _question_above(view, rules, pos, limit=4)
        question = (above + " " + question).strip() if question else above
    start = _region_start(view, pos, 20)
    subject = _subject(view, start, pos)
    if default is not None:
        options[default].highlighted = True
    kind = _kind(rules, question + " " + subject[-200:], "yes_no")
    prompt = _make_prompt(rules, agent, kind, question, options, "letter_enter", subject, default)
    prompt.highlighted = None
    return _Found(prompt, pos, pos, ev)


def _find_bare(view: _View, rules: _Rules, agent: str) -> _Found | None:
    """A prompt line at the bottom with no options we can parse ("Proceed?", "Allow command?",
    "Press Enter to continue", or a dialog's key hints alone): asking, answered with Enter only
    when the screen says Enter continues."""
    content = view.content
    if not content:
        return None
    for pos in content[-3:][::-1]:
        ln = view.lines[pos]
        is_prompt = _at(view, rules.prompt, pos) is not None
        is_dialog = _at(view, rules.dialog, pos) is not None
        if not is_dialog and rules.dialog is not None and len(content) > 1 and pos == content[-2] == content[-1] - 1:
            # a hint line wrapped onto the last line by a narrow pane ("... accept edits mode and / stop · Esc to cancel")
            is_dialog = rules.dialog.search(ln + " " + view.lines[content[-1]]) is not None
        if not (is_prompt or is_dialog):
            continue
        if is_dialog and not is_prompt and view.area_top < view.n:
            continue  # a dialog's hints with the composer back below it: dismissed
        if is_dialog and pos != content[-1]:
            below = [x for x in range(pos + 1, view.area_top) if view.lines[x] and not _is_rule(view.lines[x])]
            if len(below) > 2 or any(_at(view, rules.idle, x) is not None for x in below):
                continue
        elif pos != content[-1]:
            quiet, _ = _below_is_quiet(view, rules, pos, allow_other=2 if ln.endswith("?") else 0)
            if not quiet and not (ln.endswith("?") and len(content) - content.index(pos) <= 3
                                  and not any(_at(view, rules.idle, x) is not None
                                              for x in content[content.index(pos) + 1:])):
                continue
        anchor = pos
        question = ln
        if is_dialog and not is_prompt:
            q_line, q = _question_above(view, rules, pos, limit=10)
            if q_line >= 0:
                question, anchor = q, q_line
        if _quoted(view, anchor):
            return None
        low = ln.lower()
        options: list[PromptOption] = []
        first_option = -1
        style: InputStyle = "text"
        entry = False
        if "press enter" in low or "enter to continue" in low or "enter to confirm" in low:
            em = re.search(r"enter to (\w+)", low)
            label = em.group(1).capitalize() if em else "Continue"
            # "Press Enter to submit": Enter sends what is typed in the dialog's field (a key, a
            # token, an answer), which approves nothing the screen names: a question for a human.
            entry = label == "Submit"
            options = [PromptOption.model_construct(index=0, label=label, key="Enter", highlighted=True,
                             approves=None if entry else True, persistent=False)]
            style = "enter"
        elif is_dialog:
            style = "arrows"
            options, first_option = _options_above(view, rules, anchor, pos)
            if options and first_option >= 0 and all(o.label in view.lines[first_option] for o in options):
                style = "enter"  # side by side (opencode): Enter takes the selected one; arrows are not ours to guess
            elif not options and (em := _ENTER_DOES.search(ln)) is not None:
                # no options drawn, but the hint says what Enter does ("Enter to stay in auto mode · ...")
                options, style = [_option(rules, 0, em.group("act").strip().capitalize(), "Enter", True)], "enter"
        start = _region_start(view, anchor)
        subject = _subject(view, start, anchor, first_option if first_option > anchor else None)
        default_kind: PromptKind = ("yes_no" if not entry and (options or question.endswith("?") or is_dialog)
                                    else "free_text")
        kind = _kind(rules, question + " " + subject[-200:], default_kind)
        prompt = _make_prompt(rules, agent, kind, question, options, style, subject)
        return _Found(prompt, anchor, pos, "prompt:dialog-hint" if is_dialog else "prompt:bare")
    return None


# --------------------------------------------------------------------------------------------
# the generic question: any agent's choices at the bottom, in no grammar the policy knows

_CHOICE_WORD = (r"(?:yes|no|y|n|allow|deny|accept|reject|decline|approve|continue|cancel|proceed|skip|stop|abort"
                r"|ok|okay|run|always|never|once|trust|don'?t|go ahead|confirm|refuse|block|permit|retry|quit)")
_GENERIC_NUMBERED = re.compile(r"^(?P<mark>[^\w\s]{1,2})?\s*[\[(]?(?P<num>\d{1,2})\s*[.):\]]\s+(?P<label>\S.*?)\s*$")
_GENERIC_WORD = re.compile(rf"^(?P<mark>[^\w\s\[(<]{{1,2}})?\s*(?P<label>{_CHOICE_WORD}\b[^\n]{{0,60}}?)\s*$", re.I)
_GENERIC_BUTTON = re.compile(r"[\[<(]\s*(?P<label>[A-Za-z][\w',&/ -]{0,40}?)\s*[\]>)]")
_GENERIC_CHOICE = re.compile(rf"^\W{{0,3}}{_CHOICE_WORD}\b", re.I)
_GENERIC_HINT = re.compile(
    r"\b(enter|return|esc(ape)?|tab|space|arrows?|select|choose|confirm|pick|navigate|move)\b|[↑↓←→⏎↵]"
    r"|\bauto-?(deny|denies|reject|rejects|cancel|approve)|\b\d+\s*(s|secs?|seconds)\b", re.I)
_GENERIC_QUESTION = re.compile(
    r"\?\s*$|:\s*$|\b(allow|permission|permit|approve|approval|confirm|proceed|wants? to|needs? to|would like to"
    r"|ok to|continue)\b", re.I)


def _generic_row(text: str) -> list[tuple[str, bool]]:
    """Side-by-side choices on one line: bracketed buttons ("[ Accept ]  [ Reject ]") or words apart
    ("Continue     Reject"), each with whether a glyph marks it selected; fewer than two: none."""
    buttons = [m.group("label").strip() for m in _GENERIC_BUTTON.finditer(text)]
    if len(buttons) >= 2 and len("".join(_GENERIC_BUTTON.sub("", text).split())) <= 3:
        return [(b, False) for b in buttons]
    parts = [p.strip() for p in re.split(r"\s{3,}", text.strip()) if p.strip()]
    out = []
    for p in parts:
        m = _GENERIC_WORD.match(p)
        if m is not None:
            out.append((m.group("label").strip(), m.group("mark") is not None))
        elif out and _GENERIC_HINT.search(p):
            break  # a countdown or a key hint after the buttons
        else:
            return []
    return out if len(out) >= 2 else []


def _generic_glyph(lines: list[str], first: int, last: int, label: str) -> str:
    """The glyph drawn just before a choice's label in lines ``first`` to ``last``."""
    for ln in lines[first:last + 1]:
        at = ln.find(label)
        if at > 0:
            before = ln[:at].rstrip()
            return before[-1:] if before else ""
    return ""


def _find_generic(view: _View, rules: _Rules, agent: str) -> _Found | None:
    """A question with choices as the last thing on the screen, in whatever grammar: numbered
    options ("» 1) Go ahead"), a button row ("[ Accept ]  [ Reject ]", "Continue   Reject"), or
    choice words one per line ("◇ Allow" / "◆ Deny"), under a question, with at most a key hint or
    a countdown below. Read for an agent the policy does not know (or any agent with no composer on
    screen), so a dialog of an agent never seen is a question, never idle. Its keys are not known:
    no option gets a key, and the answer rules escalate it."""
    content = view.content
    if len(content) < 2:
        return None
    lines = view.lines
    k = len(content) - 1
    hints = 0
    while k >= 0 and hints < 2 and _GENERIC_HINT.search(lines[content[k]]) and not _newer_output(view, content[k]) \
            and not _GENERIC_NUMBERED.match(lines[content[k]]) and not _generic_row(lines[content[k]]) \
            and not _GENERIC_WORD.match(lines[content[k]]):
        k -= 1
        hints += 1
    if k < 1:
        return None
    choices: list[tuple[str, bool]] = []
    first = last = content[k]
    row = _generic_row(lines[last])
    if row:
        choices = row
    else:
        j = k
        numbered = _GENERIC_NUMBERED.match(lines[content[j]]) is not None
        rx = _GENERIC_NUMBERED if numbered else _GENERIC_WORD
        picked: list[tuple[str, bool]] = []
        while j >= 0 and len(picked) < 9:
            ln = lines[content[j]]
            m = rx.match(ln)
            if m is None:
                break
            picked.append((m.group("label"), m.group("mark") is not None))
            first = content[j]
            j -= 1
        if len(picked) < 2:
            return None
        if numbered:
            nums = [int(m.group("num")) for ln in (lines[content[x]] for x in range(j + 1, k + 1))
                    if (m := rx.match(ln)) is not None]
            if nums != list(range(nums[0], nums[0] + len(nums))) or nums[0] not in (0, 1):
                return None  # not a menu: numbers out of order (a list of findings, a diff)
        choices = picked[::-1]
        k = j + 1
    if not any(_GENERIC_CHOICE.match(label) for label, _ in choices):
        return None  # a list of steps or files, not choices
    marked = [i for i, (_, m) in enumerate(choices) if m]
    if len(marked) == len(choices) > 1:
        # every choice has a glyph: the one drawn unlike the others is the cursor ("◉ Yes  ○ No")
        glyphs = [_generic_glyph(lines, first, last, label) for label, _ in choices]
        odd = [i for i, g in enumerate(glyphs) if glyphs.count(g) == 1]
        marked = odd if len(odd) == 1 and len(set(glyphs)) == 2 else []
    q_line, question = -1, ""
    above = [i for i in content if i < first and not _is_rule(lines[i])][-3:]
    for i in reversed(above):
        if first - i > 4:
            break
        if _GENERIC_QUESTION.search(lines[i]) is not None:
            q_line, question = i, lines[i]
            break
    if q_line < 0:
        return None
    if _quoted(view, q_line) or _mid_message(view, q_line):
        return None
    options = [_option(rules, i, label, None, len(marked) == 1 and i == marked[0])
               for i, (label, _) in enumerate(choices)]
    start = _region_start(view, q_line)
    subject = _subject(view, start, q_line)
    kind = _kind(rules, question + " " + subject[-200:], "numbered_menu" if not row else "yes_no")
    prompt = _make_prompt(rules, agent, kind, question, options, "arrows", subject)
    return _Found(prompt, q_line, last, "prompt:generic-choices")


_ENTER_DOES = re.compile(r"^\W{0,3}(?:press )?enter to (?P<act>[a-z][\w' -]{1,40}?)\s*(?:·|,|$)", re.I)


def _row_options(view: _View, rules: _Rules, line: int, text: str, start: int = 0) -> list[PromptOption]:
    """The options laid out side by side on one row ("Allow once   Allow always   Reject"); the
    one drawn in reverse video (when the screen kept it) is highlighted."""
    marks = view.hl.get(line, ()) if view.hl else ()
    out: list[PromptOption] = []
    for p in re.split(r"\s{3,}", text):
        p = p.strip()
        if p:
            out.append(_option(rules, len(out), p, None, any(p == h or (len(h) > 2 and h in p) for h in marks)))
    if out and view.preselect and not any(o.highlighted for o in out):
        out[0].highlighted = True
    return out


def _options_above(view: _View, rules: _Rules, q_line: int, hint_line: int) -> tuple[list[PromptOption], int]:
    """Plain option lines between a question and a dialog's hint line (opencode's question tool and
    permission panel), and the line of the first option (-1: none). A row of side-by-side options
    is the choice; the lines above it (``$ command``) say what it approves."""
    out: list[PromptOption] = []
    hint = view.lines[hint_line]
    hm = rules.hints.search(hint) if rules.hints is not None else None
    row = hint[: hm.start()].strip() if hm else ""
    if len([p for p in re.split(r"\s{3,}", row) if p]) >= 2:
        return _row_options(view, rules, hint_line, row), hint_line
    body = [i for i in range(q_line + 1, hint_line)
            if view.lines[i] and not _is_rule(view.lines[i]) and not _is_hint(rules, view.lines[i])]
    for i in reversed(body):
        if len([p for p in re.split(r"\s{3,}", view.lines[i]) if p]) >= 2:
            opts = _row_options(view, rules, i, view.lines[i])
            return (opts, i) if 2 <= len(opts) <= 9 else ([], -1)
    first = -1
    for i in body:
        ln = view.lines[i]
        if len(ln) > 60:
            return [], -1
        if first < 0:
            first = i
        out.append(_option(rules, len(out), ln, None, any(ln == h for h in (view.hl.get(i, ()) if view.hl else ()))))
    return (out, first) if 2 <= len(out) <= 9 else ([], -1)


# --------------------------------------------------------------------------------------------
# the agent's dialog grammar: does a prompt fit one of its frames, and is it drawn whole?

NOT_OWN_DIALOG = "not-the-agent's-dialog"
"""``RiskAssessment.matched`` of a prompt that fits none of its agent's dialog frames."""
_LINE_STYLES = ("letter_enter", "text")


def _edge(raw: str) -> str:
    """A raw row as a frame's edges and hints are matched: trailing blanks and a right border trimmed."""
    return raw.rstrip(" \t").rstrip(_RIGHT_EDGE + _BOX_CORNERS_RIGHT).rstrip()


def _is_frame_only(raw: str) -> bool:
    """A row of nothing but box drawing and blanks (an empty box row, an edge, a rule)."""
    return not raw.strip(" \t" + _BORDERS + _RIGHT_EDGE + _BOX_CORNERS_LEFT + _BOX_CORNERS_RIGHT + "─━═╌┄")


def fit_frame(view: _View, raw_lines: list[str], screen: Screen, found: _Found,
              frames: list[_Frame]) -> tuple[str, bool] | None:
    """The first of the agent's dialog frames the prompt fits, and whether it is drawn whole; None when
    it fits none (not the agent's own dialog). A frame fits when the prompt is of its style, its
    question row looks like the frame's, the frame's opening row is above it (with none of the agent's
    messages or its composer between) or, for a whole-screen frame, nothing of a session is above it at
    all, and below its options there is nothing but the frame's own rows: notes and hints, its footer,
    then only what the frame allows under it. It is whole once its footer is drawn (a line frame: at its
    question) and the cursor is where the frame says the agent leaves it."""
    prompt = found.prompt
    line = prompt.input_style in _LINE_STYLES
    rules = view.rules
    q = found.first
    for fr in frames:
        if fr.line != line:
            continue
        if fr.question is not None and not (fr.question.search(view.lines[q]) or fr.question.search(_edge(raw_lines[q]))):
            continue
        if fr.top is not None and not _opened(view, raw_lines, fr, q):
            continue
        if fr.whole_screen and _session_above(view, screen, q):
            continue
        # the footer may be the prompt's own last row (a bare question whose options were not parsed)
        footer_row = next((k for k in range(q + 1, found.last + 1)
                           if fr.footer is not None and fr.footer.search(_edge(raw_lines[k]).strip())), -1)
        fits = True
        for k in range(found.last + 1, len(raw_lines)):
            raw = _edge(raw_lines[k])
            if not raw.strip():
                continue
            if footer_row < 0 and fr.footer is not None and fr.footer.search(raw.strip()):
                footer_row = k
                continue
            if _is_frame_only(raw):
                continue
            text = view.lines[k] if k < view.n else raw.strip()
            if footer_row < 0:
                if fr.below is not None and fr.below.search(raw.strip()):
                    continue
                if _newer_output(view, k) or rules.input_line.match(text) or (
                        fr.footer is None and not _is_hint(rules, text)):
                    fits = False  # output newer than the dialog, the composer, or rows a footer-less frame has not
                    break
                continue  # the dialog's own notes and hints between its options and its footer
            if (fr.below is None or not fr.below.search(raw.strip())) and not _is_hint(rules, text):
                fits = False  # something drawn under the frame's footer (its key hints wrapped aside): not the last
                break
        if not fits:
            continue
        whole = (footer_row >= 0 or (fr.line and fr.footer is None)) and _cursor_fits(
            screen, view.offset, fr.cursor, found, footer_row, raw_lines)
        return fr.name, whole
    return None


def _opened(view: _View, raw_lines: list[str], fr: _Frame, q: int) -> bool:
    """Whether the frame's opening row is at most ``fr.reach`` rows above row ``q`` (the question), with
    no message of the agent and no composer line between."""
    assert fr.top is not None
    rules = view.rules
    for i in range(q, max(-1, q - fr.reach - 1), -1):
        if fr.top.search(_edge(raw_lines[i])):
            return True
        ln = view.lines[i]
        if i < q and ln and (rules.message_bullet.match(ln) or rules.input_line.match(ln)):
            return False
    return False


def _session_above(view: _View, screen: Screen, q: int) -> bool:
    """Whether anything of an agent's session shows above row ``q``: a message, tool output, a composer
    line (a whole-screen frame, such as a first-run wizard, has none of it above)."""
    rules = view.rules
    lines = [ln.lstrip(_BORDERS) for ln in screen.text.split("\n")[:view.offset]] + view.lines[:q]
    return any(ln and (rules.message_bullet.match(ln) or rules.input_line.match(ln) or ln.startswith("⎿"))
               for ln in lines)


def _cursor_fits(screen: Screen, offset: int, places: frozenset[str], found: _Found, footer_row: int,
                 raw_lines: list[str]) -> bool:
    """Whether the cursor is where the frame says the agent leaves it once the dialog is drawn whole."""
    if "anywhere" in places:
        return True
    y, x = screen.cursor_y, screen.cursor_x
    if y is None:
        return False
    row = y - offset
    if "option" in places and found.first <= row <= found.last:
        return True
    if "footer" in places and row >= (footer_row if footer_row >= 0 else found.last + 1):
        return True
    if "question_end" in places and row == found.last and x is not None:
        return x >= len(raw_lines[row].rstrip())
    return False


def frame_end_test(policy: Policy, agent: str) -> Callable[[str], bool] | None:
    """A test of one drawn row (``supervisor.screen.output_rows``): does it look like a row that closes
    one of the agent's dialog frames (a footer, a line frame's question)? None when the policy knows no
    dialog grammar for the agent. The surface marks output that draws such a row, so that the screen is
    read at once rather than after the settle time."""
    rules = compiled_rules(policy)
    m = rules.frame_ends.get(agent)
    if m is None:
        return None

    def test(row: str) -> bool:
        row = row.strip(_BORDERS).rstrip(_RIGHT_EDGE + _BOX_CORNERS_RIGHT).strip()
        return bool(row) and m.search(row) is not None

    return test


# --------------------------------------------------------------------------------------------
# the classifier


SIDE_PANEL_MIN_COLUMN = 60
"""A side panel's heading starts at least this far right (a heading at the left edge is the transcript's)."""


def _without_side_panel(screen: Screen, rules: _Rules) -> Screen:
    """The screen read only up to the column of a side panel an agent draws right of its transcript
    (``AgentProfile.side_panel``), as a pane that narrow: the panel's rows (token counts, a file list)
    are not the transcript's newest lines, and a row of the transcript that reaches the panel may wrap
    on the next (the wrap readings see the narrower width). A screen without one is returned as is."""
    matcher = rules.side_panel
    if matcher is None:
        return screen
    rows = screen.text.split("\n")
    cols = []
    for row in rows:
        m = matcher.search(row)
        if m is not None and m.start() >= SIDE_PANEL_MIN_COLUMN and row[m.start() - 2:m.start()] == "  ":
            cols.append(m.start())
    if not cols:
        return screen
    col = min(cols)
    text = "\n".join(row[:col].rstrip() for row in rows)
    return screen.model_copy(update={"text": text, "width": col})


def _agent(rules: _Rules, screen: Screen, view: _View, start: int) -> str:
    """The agent whose program runs in the pane (its foreground command), else the first agent (in
    policy order) whose marker shows in the bottom lines or the title; a plain shell last."""
    by_command = rules.commands.get(os.path.basename((screen.current_command or "").lower()))
    if by_command is not None and by_command != "shell":
        return by_command
    title = screen.title
    for name, rx in rules.agents:
        if view.any_hit(rx, start) or (title and rx.search(title)):
            return name
    return by_command or "unknown"


def _live_after(view: _View, rules: _Rules, line: int) -> bool:
    """Whether ``line`` is still the latest activity: below it, before the input area, only its
    own continuation lines, blanks, rules, hints and footer paragraphs (ones holding an idle
    marker, like a status bar), no newer paragraph or message. A marker among the last lines of
    the screen is in the footer itself."""
    if view.box is not None and view.box[0] < line < view.box[1]:
        return False  # typed into the input box
    if line >= view.area_top:
        return view.input_line != line
    if line in view.nonblank[-3:]:
        return True
    paragraph: list[int] = []
    seen_blank = False
    lines = view.lines
    for i in range(line + 1, view.area_top + 1):
        ln = lines[i] if i < view.area_top else ""
        if ln:
            if rules.message_bullet.match(ln) and not seen_blank:
                return False
            if seen_blank:
                paragraph.append(i)
            continue
        if paragraph:
            if not any(_is_rule(lines[x]) or _at(view, rules.hints, x) is not None
                       or _at(view, rules.idle, x) is not None for x in paragraph):
                return False
            paragraph = []
        seen_blank = True
    return True


def _tool_quotes(view: _View, line: int, kind: str) -> bool:
    """Whether a ``⎿`` result line belongs to a tool call that merely quotes text."""
    for k in range(line - 1, max(-1, line - 10), -1):
        prev = view.lines[k]
        m = view.rules.tool_call.match(prev)
        if m:
            tool = m.group("tool").strip().lower()
            if tool.startswith(_SHELL_TOOLS):
                return True
            return kind not in ("usage_limit", "rate_limit", "auth", "model_unavailable")
        if view.rules.input_line.match(prev):
            return False
    return False


def _mid_message(view: _View, line: int) -> bool:
    """Whether ``line`` continues a sentence of a bulleted agent message (``⏺``/``•``) from the
    line above: prose about an error, not the error."""
    lines = view.lines
    prev = lines[line - 1] if line > 0 else ""
    if not prev or not (prev[-1].islower() or prev[-1] == ","):
        return False
    for k in range(line - 1, max(-1, line - 12), -1):
        if not lines[k]:
            return False
        if view.rules.message_bullet.match(lines[k]):
            return True
    return False


def _blocker(view: _View, rules: _Rules, floor: int) -> tuple[Blocker, str] | None:
    if rules.blocker_any is None:
        return None
    content = view.content
    if not content:
        return None
    lo = content[-rules.blocker_lines] if len(content) >= rules.blocker_lines else content[0]
    lo = max(lo, floor + 1)
    for line, _m in reversed(view.hits(rules.blocker_any, lo, view.area_top)):
        if line < lo:
            break
        ln = view.lines[line]
        if rules.input_line.match(ln):
            continue  # the user's words
        if not ln:
            continue
        if ln[0].isalnum() and _mid_message(view, line):
            continue  # a sentence of the agent's answer wrapped onto this line ("...the API answers / 401 ...")
        if rules.not_blocker is not None and rules.not_blocker.search(ln):
            continue
        for kind, name, pat in rules.blockers:
            if not pat.search(ln):
                continue
            if ln.startswith("⎿") and _tool_quotes(view, line, kind):
                break
            if kind == "other" and not _live_after(view, rules, line):
                break  # a generic error line with newer output below it is history
            blob = ln + " " + (view.lines[line + 1] if line + 1 < view.n else "")
            rm = _RETRY.search(blob)
            retry = rm.group("when").strip().rstrip(".") if rm else None
            msg = ln.lstrip("⎿⏺●•■✗✘⚠❌ ").strip()
            blocker = Blocker.model_construct(kind=kind, message=msg[:500], retry_after=retry)
            return blocker, f"blocked:{name}"
    return None


def classify(screen: Screen, policy: Policy) -> Observation:
    """Classify one screen. Pure: the same screen and policy give the same observation. A policy
    pattern that runs past its time budget (see :mod:`supervisor.regexes`) makes the screen a prompt
    of unknown risk: escalated, never answered."""
    try:
        return _classify(screen, policy)
    except RegexBudgetExceeded as exc:
        question = f"(this screen could not be judged: {exc})"
        prompt = Prompt.model_construct(kind="free_text", question=question, options=[], highlighted=None,
                                        default=None, default_approves=None, input_style="text",
                                        risk=RiskAssessment(level="unknown"), signature=screen.screen_hash,
                                        first_row=None, last_row=None)
        return Observation.model_construct(schema_version=1, observation_id=None, screen_hash=screen.screen_hash,
                                           state="asking", agent="unknown", prompt=prompt, blocker=None,
                                           evidence=["regex_budget"], confidence=0.0, policy_id=policy.policy_id,
                                           checkpoint_blocks=[])


_WARM_DIALOG = "\n".join([
    "╭" + "─" * 58 + "╮",
    "│ Bash command" + " " * 45 + "│",
    "│   npm test -- --runInBand" + " " * 32 + "│",
    "│ Do you want to proceed?" + " " * 34 + "│",
    "│ ❯ 1. Yes" + " " * 49 + "│",
    "│   2. No, and tell Claude what to do differently (esc)" + " " * 4 + "│",
    "╰" + "─" * 58 + "╯",
])


def warm_up(policy: Policy) -> None:
    """Do once, now, what the first prompt would otherwise pay for: the policy's rules compiled, the
    command judgment's parser and tables, the look-alike characters' data loaded. Paid at the first
    dialog instead, it is hundreds of milliseconds, and every pane asking at that moment waits for it."""
    from supervisor.screen import make_screen

    screen = make_screen(_WARM_DIALOG, width=60, height=12)
    screen.cwd = "/"
    with contextlib.suppress(Exception):  # a warm-up only: the real looks report their own errors
        classify(screen, policy)


def _classify(screen: Screen, policy: Policy) -> Observation:
    if screen.current_command == ACP_SCREEN:  # an ACP message, not a terminal
        from supervisor.classify_acp import classify_acp

        return classify_acp(screen, policy)
    rules = compiled_rules(policy)
    screen = _without_side_panel(screen, rules)
    text = screen.text
    shash = screen.screen_hash
    blocks = _CHECKPOINT.findall(text) if "<checkpoint>" in text else []
    raw_lines = text.split("\n")
    if screen.dead:
        return _exited(screen, rules, raw_lines, shash, blocks)
    while raw_lines and not raw_lines[-1].strip():
        raw_lines.pop()
    offset = max(0, len(raw_lines) - rules.recent_lines)  # row of the view's first line in the screen
    raw_lines = raw_lines[offset:]
    view = _View(raw_lines, rules, screen.width)
    view.offset = offset
    if screen.highlights:
        view.hl = _highlight_map(screen, raw_lines)
    nb = view.nonblank
    window = nb[-14] if len(nb) >= 14 else 0  # the bottom lines where live state shows
    agent = _agent(rules, screen, view, window)
    footer = rules.footers.get(agent)
    cut = _stale_end(view, raw_lines, rules, footer) if footer is not None else -1
    if cut >= 0:  # rows left below its footer by an earlier draw at another width: not read
        raw_lines = raw_lines[:cut + 1]
        view = _View(raw_lines, rules, screen.width)
        view.offset = offset
        if screen.highlights:
            view.hl = _highlight_map(screen, raw_lines)
        nb = view.nonblank
        window = nb[-14] if len(nb) >= 14 else 0
    profile = rules.profiles.get(agent)
    view.preselect = not screen.highlights and profile is not None and profile.first_option_selected
    if not view.nonblank:
        return _obs(shash, "idle", agent, None, None, ["idle:blank"], 0.5, rules, blocks)

    # 1. A live prompt just above the input area (or at the bottom).
    top = view.area_top
    found = _find_menu(view, rules, agent)
    # Inline y/n prompts only where one of the last lines shows a y/n or key-list marker; menus
    # without digits only with no composer below and a cursor glyph or a shortcut among the lines.
    if found is None and any(("[" in ln or "(" in ln) and _INLINE_HINT.search(ln)
                             for ln in [view.lines[i] for i in view.content[-3:]]):
        found = _find_inline(view, rules, agent)
    if found is None and top >= view.n and any(
            view.lines[i][0] in rules.marks or view.lines[i].endswith(")") for i in view.content[-10:]):
        found = _find_unnumbered(view, rules, agent)
    if found is not None and _not_a_question(rules, agent, found):
        found = None
    if found is None and profile is not None and profile.menu_over_composer:
        found = _find_menu_over_composer(view, rules, agent)
    if found is None and agent in rules.pending_actions:
        found = _find_pending_action(view, rules, agent)
    if found is None:
        found = _find_bare(view, rules, agent)
    if found is None and (agent == "unknown" or top >= view.n):
        found = _find_generic(view, rules, agent)
    if (found is not None and profile is not None and profile.dialog_hides_composer and top < view.n
            and any(o.approves for o in found.prompt.options)
            and (_in_message(view, raw_lines, found.first)
                 or (view.input_line >= 0 and view.lines[view.input_line][:1].isalpha()))):
        # its dialogs replace its input box: one in its message with the input box below is quoted, and
        # anything above a line composer ("diff> ": the agent reads a new message) is history
        found = None
    if found is not None:
        found.prompt.risk = _assess(view, screen, agent, found)
        frames = rules.frames.get(agent)
        if frames:
            fit = fit_frame(view, raw_lines, screen, found, frames)
            found.prompt.frame, found.prompt.whole = fit if fit is not None else (None, False)
            if fit is None:
                risk = found.prompt.risk
                risk.matched = [*risk.matched, NOT_OWN_DIALOG]
                if risk.level != "dangerous":
                    risk.level = "unknown"
                    risk.reason = (f"it is not a dialog of {agent}'s own (it fits none of the dialog frames the "
                                   "policy knows for it): a quoted or printed one, or a shape this policy does "
                                   "not know")
                found.evidence += "+frame:none"
            else:
                found.evidence += f"+frame:{fit[0]}" + ("+whole" if fit[1] else "")
        found.prompt.first_row = offset + found.first
        found.prompt.last_row = offset + found.last
        conf = 0.95 if found.prompt.options else 0.7
        return _obs(shash, "asking", agent, found.prompt, None, [found.evidence], conf, rules, blocks)

    # 2. Busy: a strong marker that is still the latest activity.
    done_line, done_m = view.last_hit(rules.completion, window)
    busy_line = -1
    for line, m in reversed(view.hits(rules.busy, window)):
        if line > done_line and _live_after(view, rules, line):
            return _obs(shash, "busy", agent, None, None, [f"busy:{m.group(0)[:40].strip()}"], 0.9, rules, blocks)
        busy_line = max(busy_line, line)
        break
    title = screen.title
    if title and rules.title_busy is not None and rules.title_busy.search(title):
        return _obs(shash, "busy", agent, None, None, ["busy:title-spinner"], 0.8, rules, blocks)

    # 3. A retry countdown as the last line: the agent waits to try again by itself (aider between
    # attempts), so the error above it is not yet one a human must fix.
    if view.content and view.area_top >= view.n and _RETRYING.match(view.lines[view.content[-1]]):
        return _obs(shash, "busy", agent, None, None, ["busy-weak:retry-countdown"], 0.6, rules, blocks)

    # 4. Blocked: an error a human must fix, after the agent's last activity and the user's last words.
    floor = busy_line
    for i in range(view.area_top - 1, floor, -1):
        ln = view.lines[i]
        if ln and rules.input_line.match(ln) and len(ln) > 2:
            floor = i
            break
    blk = _blocker(view, rules, floor)
    if blk is not None:
        return _obs(shash, "blocked", agent, None, blk[0], [blk[1]], 0.85, rules, blocks)

    # 5. aider's composer ("diff>") is its last line whenever it waits; output below the last one
    # without a prompt back at the bottom is an answer still streaming.
    # A stream redrawn row by row (each line the one above it, grown) is an answer still coming in,
    # whoever prints it: aider's live view, once its banner has scrolled away.
    if view.input_line < 0 and view.box is None and rules.commands.get(screen.current_command) != "shell":
        last = view.lines[view.content[-1]] if view.content else ""
        if last and _at(view, rules.idle, view.content[-1]) is None \
                and _at(view, rules.shell_prompt, view.content[-1]) is None:
            if profile is not None and profile.busy_without_composer:
                return _obs(shash, "busy", agent, None, None, ["busy-weak:aider-streaming"], 0.6, rules, blocks)
            if agent == "unknown" and _redrawn_stream(view):
                return _obs(shash, "busy", agent, None, None, ["busy-weak:redrawn-stream"], 0.5, rules, blocks)

    # 6. Weak busy markers count as the last lines of output, unless the turn completed after them.
    content = view.content
    recent = content[-2:]
    for line, m in reversed(view.hits(rules.weak_busy, recent[0] if recent else view.n, view.area_top)):
        if line in recent and line > done_line:
            return _obs(shash, "busy", agent, None, None, [f"busy-weak:{m.group(0)[:40].strip()}"], 0.6, rules,
                        blocks)
        break
    tail = [i for i in content[-3:] if _at(view, rules.hints, i) is None]
    if tail and view.area_top >= view.n and tail[-1] > done_line and _GERUND_TAIL.search(view.lines[tail[-1]]):
        return _obs(shash, "busy", agent, None, None, ["busy-weak:trailing-ellipsis"], 0.5, rules, blocks)

    # 7. Claude hides its input line while it works: a rule with only a status line under it.
    if view.input_line < 0 and view.box is None and profile is not None and profile.busy_when_input_hidden:
        nb = view.nonblank
        if len(nb) >= 2 and _is_rule(view.lines[nb[-2]]) and nb[-1] > done_line:
            return _obs(shash, "busy", agent, None, None, ["busy-weak:no-input-line"], 0.5, rules, blocks)

    # 8. An agent that closes every turn with a completion line ("Worked for 3s": Codex) and shows
    # no spinner while text streams in: its answer below the user's last message, with no such line
    # after it yet and stopping mid-sentence, is still coming in.
    if profile is not None and profile.turn_ends_with_marker and view.input_line >= 0 and view.content:
        asked = next((i for i in reversed(view.content) if rules.input_line.match(view.lines[i])), -1)
        last = view.lines[view.content[-1]]
        prose = " · " not in last and not last.startswith(("└", "⎿"))  # a status line is not a sentence
        if 0 <= asked < view.content[-1] and asked > done_line and prose and (last[-1].isalnum() or last[-1] in ",;-"):
            return _obs(shash, "busy", agent, None, None, ["busy-weak:turn-not-finished"], 0.5, rules, blocks)

    if _message_being_answered(view, rules, agent, profile):
        return _obs(shash, "busy", agent, None, None, ["busy-weak:message-sent"], 0.5, rules, blocks)

    # 9. Idle.
    idle_line, idle_m = view.last_hit(rules.idle, max(window, nb[-6] if len(nb) >= 6 else 0))
    if view.input_line >= 0:
        return _obs(shash, "idle", agent, None, None, ["idle:input-line"], 0.85, rules, blocks)
    if idle_m is not None:
        return _obs(shash, "idle", agent, None, None, [f"idle:{idle_m.group(0)[:40].strip()}"], 0.85, rules, blocks)
    if done_m is not None:
        return _obs(shash, "idle", agent, None, None, [f"idle-done:{done_m.group(0)[:40].strip()}"], 0.8, rules,
                    blocks)
    return _obs(shash, "idle", agent, None, None, ["idle:no-marker"], 0.4, rules, blocks)


def _message_being_answered(view: _View, rules: _Rules, agent: str, profile: AgentProfile | None) -> bool:
    """8b. An agent that draws its next prompt line only once an answer is done
    (``AgentProfile.prompt_after_answer``: open-interpreter): its prompt line with the user's words on it
    as the last line of the screen is the message it is answering (nothing came back yet)."""
    if profile is None or not view.nonblank:
        return False
    if profile.sent_message:  # the user's words on the transcript's last line, right above the input box
        top = _input_box_top(view, view.lines)
        last = max((i for i in view.nonblank if i < top), default=-1)
        sent = rules.sent_messages.get(agent)
        return (top < view.n and last >= 0 and sent is not None
                and sent.search(_SCROLL_THUMB.sub("", view.lines[last])) is not None)
    if not profile.prompt_after_answer or view.input_line < 0:
        return False
    line = view.lines[view.input_line]
    return view.input_line == view.nonblank[-1] and len(line[1:].strip()) >= 2


def _in_message(view: _View, raw_lines: list[str], first: int) -> bool:
    """Whether the block at line ``first`` sits in one of the agent's messages: a message bullet above
    it before anything that ends a message (the composer's line, a rule drawn from the left edge: the
    agent's own dialog starts at one; a rule indented under a bullet is part of what the message shows)."""
    rules = view.rules
    for i in range(first, -1, -1):
        ln = view.lines[i]
        if not ln:
            continue
        if rules.message_bullet.match(ln):
            return True
        if rules.input_line.match(ln) or (_is_rule(ln) and not raw_lines[i][:1].isspace()):
            return False
    return False


def _stale_end(view: _View, raw_lines: list[str], rules: _Rules, footer: re.Pattern[str]) -> int:
    """The last line an agent that does not clear the screen on a resize drew this time, when rows
    left over from an earlier draw at another width follow it (see ``AgentProfile.footer``), else -1:
    its footer under its composer (the first composer line followed within a few lines by the
    footer is the live one; the user's messages above have no footer); with no composer, a dialog
    drawn last: its box's bottom edge, when only fragments of boxes follow it."""
    lines = view.lines
    for j in view.nonblank:
        if not rules.input_line.match(lines[j]):
            continue
        for i in range(j + 1, min(j + 6, view.n)):
            if lines[i] and footer.search(lines[i]):
                return i if any(k > i for k in view.nonblank) else -1
    debris = False
    for k in range(len(raw_lines) - 1, -1, -1):
        t = raw_lines[k].strip()
        if not t:
            continue
        if len(t) > 2 and t[0] in _BOTTOM_CORNERS and t[-1] in _BOTTOM_RIGHT:
            return k if debris else -1
        # a fragment: box glyphs alone, or a box row cut off on one side ("│ (Press Enter to ...")
        if any(ch.isalnum() for ch in t) and (t[0] in _VBARS) == (t[-1] in _VBARS):
            return -1
        debris = True
    return -1


def _redrawn_stream(view: _View) -> bool:
    """Whether the bottom lines are one growing line printed again and again (each a prefix of
    the next, at least one longer than the one before): a live view re-rendering a stream."""
    content = view.content
    chain = 1
    grew = False
    for k in range(len(content) - 1, max(0, len(content) - 16), -1):
        above, below = view.lines[content[k - 1]], view.lines[content[k]]
        if not below.startswith(above):
            break
        chain += 1
        grew = grew or len(below) > len(above)
    return chain >= 4 and grew


def _highlight_map(screen: Screen, raw_lines: list[str]) -> dict[int, list[str]]:
    """Reverse-video text per view line (the view holds the last ``len(raw_lines)`` rows)."""
    rows = screen.text.split("\n")
    end = len(rows)
    while end and not rows[end - 1].strip():
        end -= 1
    offset = end - len(raw_lines)
    out: dict[int, list[str]] = {}
    for row, a, b in screen.highlights:
        if offset <= row < end:
            piece = rows[row][a:b].strip()
            if piece:
                out.setdefault(row - offset, []).append(piece)
    return out


def _exited(screen: Screen, rules: _Rules, raw_lines: list[str], shash: str, blocks: list[str]) -> Observation:
    """A dead pane: exited, with the agent's last words when they say why (an agent that cannot
    reach its API prints the reason and quits: that is a blocker a human must fix, not a finish)."""
    lines = [ln for ln in raw_lines if not ln.startswith("Pane is dead")]  # tmux's remain-on-exit note
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[-rules.recent_lines:]
    view = _View(lines, rules, screen.width)
    nb = view.nonblank
    agent = _agent(rules, screen, view, nb[-14] if len(nb) >= 14 else 0)
    blk = _blocker(view, rules, -1) if nb else None
    if blk is not None:
        return _obs(shash, "exited", agent, None, blk[0], ["exited:pane-dead", blk[1]], 1.0, rules, blocks)
    return _obs(shash, "exited", agent, None, None, ["exited:pane-dead"], 1.0, rules, blocks)


def _obs(shash: str, state: PaneState, agent: AgentName, prompt: Prompt | None, blocker: Blocker | None,
         evidence: list[str], confidence: float, rules: _Rules, blocks: list[str]) -> Observation:
    return Observation.model_construct(schema_version=1, observation_id=None,
                 screen_hash=shash, state=state, agent=agent, prompt=prompt, blocker=blocker, evidence=evidence,
                 confidence=confidence, policy_id=rules.policy_id, checkpoint_blocks=blocks)
