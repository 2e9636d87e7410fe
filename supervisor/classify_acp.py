"""ACP messages as observations: what ``classify`` does for the screens an ACP surface builds.

An agent that speaks the Agent Client Protocol hands the supervisor structured messages instead
of a screen: permission requests (``session/request_permission``), session updates, the end of a
prompt turn, errors, its exit. The ACP surface journals each one as a :class:`Screen` whose text
is the message as JSON (:func:`acp_screen`) and whose ``current_command`` is :data:`ACP_SCREEN`;
:func:`supervisor.classify.classify` hands such screens here. Every consumer of recorded screens
(replay, compare, canaries, shadows, ``runs why``) therefore reads an ACP run the way it reads a
tmux run, under any policy.

A permission request becomes the same :class:`Prompt` a screen dialog does, judged by the same
policy:

* **kind**: an ``edit``/``delete``/``move`` tool call is an ``edit_approval``, anything else a
  ``tool_permission``; the **question** is the tool call's title;
* **options**: one per offered option, its key the option id (the answer names it: input style
  ``letter``, a key that selects at once); nothing is highlighted, nothing is a default. An option
  approves when its ACP kind is ``allow_*`` and its label does not read as a decline, declines when
  ``reject_*`` and its label does not read as an approval (a contradiction is neither), and is
  persistent when its kind is ``*_always`` or its label reads so ("Always allow"); an option id that
  is empty, repeated, or a key name the answer grammar reserves (``Enter``, ``Down``...) gets no key;
* **subject**: what the policy's ``acp_subjects`` find (the agent's own first, then
  ``classifier.acp_subjects``): a command from the raw input (a shell's ``-c`` script when it is an
  argv list wrapping one, as Codex sends; or, for Gemini CLI, the title), file
  paths from the locations or diffs, a URL; none found: risk ``unknown``, never approved;
* **risk**: :func:`supervisor.classify.assess_risk`, the function screen dialogs are judged by,
  over every line the request shows (title, raw input, locations, content, options), each path
  placed against the session's working directory (``Screen.cwd``); the riskiest path counts.

Other messages: an update (a tool call starting or progressing, message text streaming) is
``busy``; the session ready or a turn ended is ``idle``; an error answering a prompt is
``blocked`` (the policy's blocker patterns over its message; ACP's "authentication required"
is ``auth``); the agent's exit is ``exited``, with the blocker its last stderr lines show. A screen
whose JSON cannot be read (a redaction that cut through a quote) is read fail-safe: a permission
request without a readable prompt (escalated), else what its event name says.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from typing import Any

from supervisor.classify import assess_risk, compiled_rules
from supervisor.models import (
    ACP_SCREEN,
    Blocker,
    Observation,
    PaneState,
    Prompt,
    PromptKind,
    PromptOption,
    RiskAssessment,
    Screen,
    SubjectKind,
)
from supervisor.policy import AcpSubject, Policy
from supervisor.regexes import policy_regex
from supervisor.workflow.checkpoint import BLOCK_RE

ACP_FORMAT = 1
"""Version of the JSON an ACP screen holds (its ``acp`` key)."""

MAX_STRING = 4000
"""Characters kept of any one string of a message (a file's new content, a long command)."""
MAX_LINES = 400
"""Lines of a request's content kept for its risk (a screen shows less)."""

EDIT_TOOL_KINDS = frozenset({"edit", "delete", "move"})
RESERVED_KEYS = frozenset({"enter", "c-m", "escape", "esc", "c-[", "down", "up", "tab", "btab"})
"""Key names :func:`supervisor.decide.selected_option` reads as moves or Enter/Escape."""
SHELL_WRAPPERS = frozenset({"bash", "sh", "zsh", "dash"})
"""Shells an argv list may wrap a command in (Codex sends ``["/bin/bash", "-lc", "rm -rf ~"]``)."""
SHELL_SCRIPT_FLAGS = frozenset({"-c", "-lc", "-ic", "-lic", "-cl"})
AUTH_REQUIRED = -32000
"""ACP's JSON-RPC error code for "authentication required"."""

_ORDER = {"none": 0, "low": 1, "unknown": 2, "dangerous": 3}
_EVENT = re.compile(r'"event"\s*:\s*"(\w+)"')


def _clip(text: str, limit: int = MAX_STRING) -> str:
    return text if len(text) <= limit else text[:limit] + f"…[{len(text) - limit} more]"


def _clipped(value: Any, depth: int = 0) -> Any:
    """A JSON value with every string clipped and nesting bounded (what the screen keeps)."""
    if isinstance(value, str):
        return _clip(value)
    if depth > 6:
        return _clip(json.dumps(value, default=str))
    if isinstance(value, dict):
        return {str(k): _clipped(v, depth + 1) for k, v in list(value.items())[:100]}
    if isinstance(value, list):
        return [_clipped(v, depth + 1) for v in value[:200]]
    if value is None or isinstance(value, bool | int | float):
        return value
    return _clip(str(value))


def acp_screen(doc: dict[str, Any], *, cwd: str, agent: str) -> Screen:
    """The screen an ACP surface journals for one message: ``doc`` (the message's JSON: ``event``
    and its fields, tool calls and options in ACP's own camelCase) clipped, as indented JSON."""
    body = {"acp": ACP_FORMAT, "agent": agent} | _clipped(doc)
    text = json.dumps(body, indent=1, ensure_ascii=False, sort_keys=False)
    return Screen.model_construct(text=text, width=120, height=text.count("\n") + 1, cursor_x=None, cursor_y=None,
                                  title=f"acp {agent} {doc.get('event', '')}".strip(), current_command=ACP_SCREEN,
                                  dead=doc.get("event") == "exit", scrollback="", cwd=cwd, highlights=())


def classify_acp(screen: Screen, policy: Policy) -> Observation:
    """The observation of an ACP screen (see the module docstring). Pure."""
    shash = screen.screen_hash
    try:
        doc = json.loads(screen.text)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
    except ValueError:
        m = _EVENT.search(screen.text)
        return _unreadable(shash, m.group(1) if m else "", policy)
    agent = str(doc.get("agent") or "unknown")
    event = doc.get("event")
    raw_message = doc.get("message")
    message = raw_message if isinstance(raw_message, str) else ""
    blocks = [m.group(0) for m in BLOCK_RE.finditer(message)] if message else []
    if event == "permission":
        prompt, evidence = permission_prompt(doc, policy, agent=agent, cwd=screen.cwd)
        return _obs(shash, "asking", agent, policy, prompt=prompt, evidence=evidence, blocks=blocks)
    if event in ("ready", "turn_end"):
        why = f"acp:{event}" + (f":{doc['stop_reason']}" if isinstance(doc.get("stop_reason"), str) else "")
        return _obs(shash, "idle", agent, policy, evidence=[why], blocks=blocks)
    if event == "error":
        code = doc.get("code")
        blocker = _blocker(message or str(doc.get("error") or ""), policy,
                           auth=code == AUTH_REQUIRED, fallback=True)
        return _obs(shash, "blocked", agent, policy, blocker=blocker, evidence=[f"acp:error:{code}"])
    if event == "exit":
        code = doc.get("exit_code")
        raw_stderr = doc.get("stderr")
        stderr = raw_stderr if isinstance(raw_stderr, str) else ""
        blocker = _blocker(stderr, policy, auth=False, fallback=False) if code not in (0, None) else None
        return _obs(shash, "exited", agent, policy, blocker=blocker, evidence=[f"acp:exit:{code}"], blocks=blocks)
    return _obs(shash, "busy", agent, policy, evidence=[f"acp:{doc.get('update') or event or 'update'}"],
                blocks=blocks)


def permission_prompt(doc: dict[str, Any], policy: Policy, *, agent: str, cwd: str) -> tuple[Prompt, list[str]]:
    """The prompt of a permission request (``doc``: ``tool_call`` and ``options`` as ACP sends them)
    and the evidence of how it was read."""
    rules = compiled_rules(policy)
    raw_tool = doc.get("tool_call")
    tool: dict[str, Any] = raw_tool if isinstance(raw_tool, dict) else {}
    tool_kind = tool.get("kind") if isinstance(tool.get("kind"), str) else "other"
    title = " ".join(str(tool.get("title") or "").split())
    kind: PromptKind = "edit_approval" if tool_kind in EDIT_TOOL_KINDS else "tool_permission"
    raw_options = [o for o in doc.get("options") or [] if isinstance(o, dict)]
    ids = [str(o.get("optionId") or "") for o in raw_options]
    options: list[PromptOption] = []
    for i, (o, oid) in enumerate(zip(raw_options, ids, strict=True)):
        label = " ".join(str(o.get("name") or oid).split())
        okind = str(o.get("kind") or "")
        approves: bool | None = None
        if okind.startswith("allow") and rules.decline.search(label) is None:
            approves = True
        elif okind.startswith("reject") and rules.approve.search(label) is None:
            approves = False
        usable = bool(oid) and oid.lower() not in RESERVED_KEYS and sum(x.lower() == oid.lower() for x in ids) == 1
        options.append(PromptOption.model_construct(
            index=i, label=label, key=oid if usable else None, highlighted=False, approves=approves,
            persistent=okind.endswith("_always") or rules.persistent.search(label) is not None))
    subject_kind, subjects, source = find_subjects(policy, agent, tool)
    dialog = _dialog_lines(tool, options)
    risks = [assess_risk(policy, subject_kind=subject_kind, subject=s, dialog=dialog, question=title, cwd=cwd,
                         prompt_kind=kind) for s in subjects] or [
        assess_risk(policy, subject_kind=None, subject="", dialog=dialog, question=title, cwd=cwd, prompt_kind=kind)]
    risk = _worst(risks)
    sig = "prm_" + hashlib.blake2b("\x1f".join(["acp", agent, kind, title, *subjects, *(o.label for o in options)])
                                   .encode("utf-8", "replace"), digest_size=8).hexdigest()
    prompt = Prompt.model_construct(kind=kind, question=title, options=options, highlighted=None, default=None,
                                    default_approves=None, input_style="letter", risk=risk, signature=sig,
                                    first_row=None, last_row=None)
    evidence = ["acp:permission", f"acp:tool:{tool_kind}"] + ([f"acp-subject:{source}"] if source else [])
    return prompt, evidence


def find_subjects(policy: Policy, agent: str, tool: dict[str, Any]) -> tuple[SubjectKind | None, list[str], str]:
    """What the tool call would act on: the kind of the first of the policy's ``acp_subjects`` (the
    agent's own first) that finds something, and everything every entry of that kind finds (a move's
    two paths, a diff naming another file than the locations do: each is judged). Returns (kind,
    subjects, where they were found), or (None, [], "")."""
    profile = policy.agents.get(agent)
    specs = (profile.acp_subjects if profile is not None else []) + policy.classifier.acp_subjects
    tool_kind = tool.get("kind") if isinstance(tool.get("kind"), str) else "other"
    kind: SubjectKind | None = None
    found: list[str] = []
    where: list[str] = []
    for spec in specs:
        if (spec.tool_kinds is not None and tool_kind not in spec.tool_kinds) or kind not in (None, spec.kind):
            continue
        got = [s for s in (x.strip() if spec.kind == "command" else " ".join(x.split()) for x in _read(spec, tool))
               if any(ch.isalnum() for ch in s) and s not in found]
        if got:
            kind = spec.kind
            found += got
            where.append(spec.source + (f".{'|'.join(spec.fields)}" if spec.fields else ""))
    return kind, found, ",".join(where)


def _read(spec: AcpSubject, tool: dict[str, Any]) -> list[str]:
    if spec.source == "raw_input":
        raw = tool.get("rawInput")
        if not isinstance(raw, dict):
            return []
        for field in spec.fields:
            v = raw.get(field)
            if isinstance(v, str) and v.strip():
                return [v]
            if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                return [command_of(v)] if spec.kind == "command" else list(v)
        return []
    if spec.source == "title":
        title = tool.get("title")
        if not isinstance(title, str):
            return []
        if spec.pattern is None:
            return [title]
        m = policy_regex(spec.pattern, re.I).search(title)
        if m is None:
            return []
        return [m.groupdict().get("subject") or title]
    items = tool.get("locations") if spec.source == "locations" else tool.get("content")
    paths = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or (spec.source == "diff" and item.get("type") != "diff"):
            continue
        if isinstance(item.get("path"), str):
            paths.append(item["path"])
    return paths


def command_of(argv: list[str]) -> str:
    """The command an argv list runs: the script of a shell's ``-c`` (what the agent's screen shows,
    ``$ rm -rf ~``), else the words joined as a shell command line."""
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in SHELL_WRAPPERS and argv[1] in SHELL_SCRIPT_FLAGS:
        return argv[2]
    return shlex.join(argv)


def _dialog_lines(tool: dict[str, Any], options: list[PromptOption]) -> list[str]:
    """Every line a permission request shows: what danger patterns are matched against."""
    lines: list[str] = [str(tool.get("title") or "")]
    raw = tool.get("rawInput")
    if isinstance(raw, dict):
        for k, v in raw.items():
            words = isinstance(v, list) and all(isinstance(x, str) for x in v)
            text = v if isinstance(v, str) else shlex.join(v) if words else json.dumps(v, ensure_ascii=False)
            lines += f"{k}: {text}".split("\n")
            if words and command_of(v) != text:
                lines += command_of(v).split("\n")
    elif raw is not None:
        lines += json.dumps(raw, ensure_ascii=False).split("\n")
    for loc in tool.get("locations") or []:
        if isinstance(loc, dict) and isinstance(loc.get("path"), str):
            lines.append(loc["path"])
    for c in tool.get("content") or []:
        if not isinstance(c, dict):
            continue
        if c.get("type") == "diff":
            lines.append(str(c.get("path") or ""))
            lines += str(c.get("newText") or "").split("\n")
        inner = c.get("content")
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            lines += inner["text"].split("\n")
    lines += [o.label for o in options]
    return lines[:MAX_LINES]


def _worst(risks: list[RiskAssessment]) -> RiskAssessment:
    """The riskiest of several assessments (one per path), with every pattern any of them matched."""
    worst = max(risks, key=lambda r: _ORDER[r.level])
    matched = list(dict.fromkeys(m for r in risks for m in r.matched))
    return RiskAssessment.model_construct(level=worst.level, matched=matched, subject=worst.subject,
                                          subject_kind=worst.subject_kind, reason=worst.reason, parts=worst.parts)


def _blocker(text: str, policy: Policy, *, auth: bool, fallback: bool) -> Blocker | None:
    """The blocker a message names: the first line a blocker pattern of the policy matches (and no
    not-a-blocker pattern does); ``auth`` for ACP's "authentication required"; with ``fallback``,
    an ``other`` blocker with the message's first line when no pattern matches."""
    rules = compiled_rules(policy)
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    for ln in lines[-40:]:
        if rules.not_blocker is not None and rules.not_blocker.search(ln):
            continue
        for kind, _name, rx in rules.blockers:
            if rx.search(ln):
                return Blocker.model_construct(kind=kind, message=_clip(ln, 300), retry_after=None)
    if auth:
        return Blocker.model_construct(kind="auth", message=_clip(lines[0] if lines else "authentication required",
                                                                 300), retry_after=None)
    if fallback:
        return Blocker.model_construct(kind="other", message=_clip(lines[0] if lines else "the agent reported an error",
                                                                  300), retry_after=None)
    return None


def _unreadable(shash: str, event: str, policy: Policy) -> Observation:
    states: dict[str, PaneState] = {"permission": "asking", "exit": "exited", "ready": "idle", "turn_end": "idle",
                                    "error": "blocked"}
    state = states.get(event, "busy")
    blocker = Blocker.model_construct(kind="other", message="an unreadable error", retry_after=None) \
        if state == "blocked" else None
    return _obs(shash, state, "unknown", policy, blocker=blocker, evidence=["acp:unreadable"], confidence=0.0)


def _obs(shash: str, state: PaneState, agent: str, policy: Policy, *, prompt: Prompt | None = None,
         blocker: Blocker | None = None, evidence: list[str], blocks: list[str] | None = None,
         confidence: float = 1.0) -> Observation:
    return Observation.model_construct(schema_version=1, observation_id=None, screen_hash=shash, state=state,
                                       agent=agent, prompt=prompt, blocker=blocker, evidence=evidence,
                                       confidence=confidence, policy_id=compiled_rules(policy).policy_id,
                                       checkpoint_blocks=blocks or [])
