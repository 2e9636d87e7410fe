"""Screens in each agent's own style, written from the agents' real wording: the one renderer.

Used to author golden cases (``suites/authoring/``), by synthetic expansion's "another agent's
style" transform, and by the scripted agent (:mod:`evals.agent`), which draws its live screens
with these same functions (passing ``highlighted``/``typed`` as its user moves and types).
Every function is pure and returns pane text (no ANSI unless a style needs reverse video);
layouts follow what the agents draw in a tmux pane: Claude Code's rule-delimited input box
and permission panels, Codex's ``›`` menus with letter shortcuts, Gemini's boxed tool
confirmations, aider's ``(Y)es/(N)o`` line prompts and opencode's permission panel.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

CWD = "/home/dev/app"


@dataclass(frozen=True)
class Rendered:
    """A screen and the keys a careful supervisor would send to approve it (if any)."""

    text: str
    approve_keys: tuple[tuple[str, ...], ...] = ()
    """Acceptable key sequences that approve once (never a "don't ask again" option)."""
    decline_keys: tuple[tuple[str, ...], ...] = ()


def _rule(width: int) -> str:
    return "─" * width


def _wrap(line: str, width: int, indent: str = "") -> list[str]:
    if len(line) <= width:
        return [line]
    return textwrap.wrap(line, width=width, subsequent_indent=indent, break_long_words=True,
                         break_on_hyphens=False) or [line]


def menu_lines(labels: list[str], highlighted: int | None = 0, *, marker: str = "❯", indent: str = " ",
               numbered: bool = True) -> list[str]:
    """A vertical menu as agents draw it: ``{indent}❯ 1. Yes`` for the highlighted option and the
    same with a blank marker for the others."""
    out = []
    for i, label in enumerate(labels):
        mark = marker if i == highlighted else " "
        out.append(f"{indent}{mark} {f'{i + 1}. ' if numbered else ''}{label}")
    return out


def _fit(lines: list[str], width: int) -> str:
    out: list[str] = []
    for ln in lines:
        out.extend(_wrap(ln, width, "  "))
    return "\n".join(out)


def _transcript(items: list[str], bullet: str, keep: tuple[str, ...] = ()) -> list[str]:
    """Transcript lines, each followed by a blank line: an item that starts with one of ``keep`` (the
    user's message, tool output) stays as it is, anything else becomes a ``bullet`` message."""
    out: list[str] = []
    for it in items:
        out += [it if it.startswith(keep) else f"{bullet} {it}", ""]
    return out


# --------------------------------------------------------------------------- Claude Code


def claude_history(items: list[str]) -> list[str]:
    """Transcript lines: ``> user text`` stays, anything else becomes a ``⏺`` message."""
    return _transcript(items, "⏺", ("> ", "  ⎿", "⏺"))


def claude_input_box(width: int, footer: str = "  ? for shortcuts", text: str = "") -> list[str]:
    return [_rule(width), f"❯ {text}".rstrip() if text else "❯ ", _rule(width), footer]


def claude_idle(history: list[str], *, width: int = 100, done: str | None = "✻ Worked for 42s",
                footer: str = "  ? for shortcuts") -> str:
    lines = claude_history(history)
    if done:
        lines += [done, ""]
    return _fit(lines + claude_input_box(width, footer), width)


def claude_busy(history: list[str], *, width: int = 100, spinner: str = "✻ Cultivating… (esc to interrupt · 12s · ↓ 220 tokens)",
                footer: str = "  ? for shortcuts") -> str:
    lines = claude_history(history) + [spinner, ""]
    return _fit(lines + claude_input_box(width, footer), width)


def claude_permission_options(command: str, cwd: str = CWD) -> list[str]:
    first = command.split()[0] if command.split() else command
    return ["Yes", f"Yes, and don't ask again for {first} commands in {cwd}",
            "No, and tell Claude what to do differently (esc)"]


def claude_permission(command: str, description: str, *, history: list[str] | None = None, width: int = 100,
                      header: str = "Bash command", cwd: str = CWD, tool_line: str | None = None,
                      highlighted: int = 0) -> Rendered:
    """Claude Code's Bash permission panel: ``❯ 1. Yes`` highlighted, a "don't ask again" option."""
    lines = claude_history(history or [])
    lines += [tool_line or f"⏺ Bash({command})", "  ⎿  Waiting…", "", _rule(width), f" {header}", ""]
    lines += [f"   {ln}" for ln in command.split("\n")] + [f"   {description}", ""]
    lines += [" Do you want to proceed?", *menu_lines(claude_permission_options(command, cwd), highlighted), "",
              " Esc to cancel · Tab to amend · ctrl+e to explain"]
    return Rendered(_fit(lines, width), approve_keys=(("1",), ("Enter",)), decline_keys=(("3",), ("Escape",)))


CLAUDE_EDIT_OPTIONS = ["Yes", "Yes, allow all edits during this session (shift+tab)",
                       "No, and tell Claude what to do differently (esc)"]


def claude_edit(path: str, diff: list[str], *, create: bool = False, history: list[str] | None = None,
                width: int = 100, highlighted: int = 0) -> Rendered:
    name = path.rsplit("/", 1)[-1]
    lines = claude_history(history or [])
    verb = "Write" if create else "Update"
    lines += [f"⏺ {verb}({path})", "", _rule(width), f" {'Create file' if create else 'Edit file'}",
              f" {path}", " " + "╌" * (width - 2)]
    lines += [f" {d}" for d in diff]
    lines += [" " + "╌" * (width - 2)]
    q = f" Do you want to create {name}?" if create else f" Do you want to make this edit to {name}?"
    lines += [q, *menu_lines(CLAUDE_EDIT_OPTIONS, highlighted), "", " Esc to cancel · Tab to amend"]
    return Rendered(_fit(lines, width), approve_keys=(("1",), ("Enter",)), decline_keys=(("3",), ("Escape",)))


def claude_menu(question: str, options: list[str], *, highlighted: int = 0, history: list[str] | None = None,
                width: int = 100, footer: str = "Enter to select · ↑/↓ to navigate · Esc to cancel",
                bullet: str = "●") -> str:
    lines = claude_history(history or [])
    lines += [_rule(width), f"{bullet} {question}" if bullet else f" {question}", ""]
    lines += menu_lines(options, highlighted)
    lines += ["", footer]
    return _fit(lines, width)


CLAUDE_TRUST_OPTIONS = ["Yes, I trust this folder", "No, exit"]
CLAUDE_TRUST_FILES_OPTIONS = ["Yes, proceed", "No, exit"]
CLAUDE_BYPASS_OPTIONS = ["No, exit", "Yes, I accept"]


def claude_trust(cwd: str = CWD, *, history: list[str] | None = None, width: int = 100, highlighted: int = 0) -> str:
    """Claude Code's first-run workspace trust dialog (current wording)."""
    lines = claude_history(history or [])
    lines += [_rule(width), " Accessing workspace:", "", f" {cwd}", "",
              " Quick safety check: Is this a project you created or one you trust?",
              " Claude Code'll be able to read, edit, and execute files here.", "",
              *menu_lines(CLAUDE_TRUST_OPTIONS, highlighted), "", " Enter to confirm · Esc to cancel"]
    return _fit(lines, width)


def claude_trust_files(cwd: str = CWD, *, history: list[str] | None = None, width: int = 100,
                       highlighted: int = 0) -> str:
    """The older "Do you trust the files in this folder?" dialog."""
    lines = claude_history(history or [])
    lines += [_rule(width), " Do you trust the files in this folder?", "", f" {cwd}", "",
              " Claude Code may read, write, or execute files contained in this directory. This can pose",
              " security risks, so only use files from trusted sources.", "",
              *menu_lines(CLAUDE_TRUST_FILES_OPTIONS, highlighted), "", " Enter to confirm · Esc to cancel"]
    return _fit(lines, width)


def claude_bypass(*, history: list[str] | None = None, width: int = 100, highlighted: int = 0) -> str:
    """The Bypass Permissions warning: its default (highlighted) option is "No, exit"."""
    lines = claude_history(history or [])
    lines += [_rule(width), " WARNING: Claude Code running in Bypass Permissions mode", "",
              " In Bypass Permissions mode, Claude Code will not ask for your approval before running",
              " potentially dangerous commands.", "",
              *menu_lines(CLAUDE_BYPASS_OPTIONS, highlighted), "", " Enter to confirm · Esc to cancel"]
    return _fit(lines, width)


def claude_spinner(verb: str = "Thinking", seconds: float = 0, frame: int = 0) -> str:
    """Claude Code's busy line (the spinner glyph changes every frame)."""
    tokens = 40 + int(seconds * 37)
    return f"{'·✢✳✶✻✽'[frame % 6]} {verb}… (esc to interrupt · {int(seconds)}s · ↓ {tokens} tokens)"


# --------------------------------------------------------------------------- Codex CLI


def codex_history(items: list[str]) -> list[str]:
    """Transcript lines: ``› user text`` and tool output stay, anything else becomes a ``•`` message."""
    return _transcript(items, "•", ("› ", "  └", "    "))


def codex_footer(width: int, context: int = 97) -> list[str]:
    left = "  ? for shortcuts"
    right = f"{context}% context left"
    return [left + " " * max(2, width - len(left) - len(right)) + right]


def codex_input_box(width: int, text: str = "", *, placeholder: str = "Ask Codex to do anything",
                    context: int = 93) -> list[str]:
    return [f"› {text or placeholder}", "", *codex_footer(width, context)]


def codex_idle(history: list[str], *, width: int = 100, placeholder: str = "Ask Codex to do anything",
               context: int = 93) -> str:
    lines = codex_history(history) + codex_input_box(width, placeholder=placeholder, context=context)
    return _fit(lines, width)


def codex_spinner(verb: str = "Working", seconds: float = 0, frame: int = 0) -> str:
    return f"{'•◦'[frame % 2]} {verb} ({int(seconds)}s • esc to interrupt)"


def codex_busy(history: list[str], *, width: int = 100, status: str = "Working (13s • esc to interrupt)",
               context: int = 91) -> str:
    lines = codex_history(history) + [f"• {status}", "", "› Ask Codex to do anything", ""]
    return _fit(lines + codex_footer(width, context), width)


def codex_permission_options(command: str) -> list[str]:
    prefix = " ".join(command.split()[:2])
    return ["Yes, proceed (y)", f"Yes, and don't ask again for commands that start with `{prefix}` (p)",
            "No, and tell Codex what to do differently (esc)"]


def codex_permission(command: str, reason: str, *, history: list[str] | None = None, width: int = 100,
                     highlighted: int = 0) -> Rendered:
    lines = codex_history(history or [])
    lines += ["  Would you like to run the following command?", "", f"  Reason: {reason}", ""]
    lines += [f"  $ {ln}" for ln in command.split("\n")] + [""]
    lines += [*menu_lines(codex_permission_options(command), highlighted, marker="›", indent=""), "",
              "  Press enter to confirm or esc to cancel"]
    return Rendered(_fit(lines, width), approve_keys=(("y",), ("1",), ("Enter",)),
                    decline_keys=(("Escape",), ("3",)))


CODEX_EDIT_OPTIONS = ["Yes, proceed (y)", "Yes, and don't ask again for these files (a)",
                      "No, and tell Codex what to do differently (esc)"]


def codex_edit(files: list[tuple[str, int, int]], reason: str, *, history: list[str] | None = None,
               width: int = 100, highlighted: int = 0) -> Rendered:
    lines = codex_history(history or [])
    lines += ["  Would you like to make the following edits?", "", f"  Reason: {reason}", ""]
    lines += [f"  └ {p} (+{a} -{d})" for p, a, d in files] + [""]
    lines += [*menu_lines(CODEX_EDIT_OPTIONS, highlighted, marker="›", indent=""), "",
              "  Press enter to confirm or esc to cancel"]
    return Rendered(_fit(lines, width), approve_keys=(("y",), ("1",), ("Enter",)),
                    decline_keys=(("Escape",), ("3",)))


# --------------------------------------------------------------------------- Gemini CLI


def _box(rows: list[str], width: int) -> list[str]:
    inner = width - 4
    out = [" ╭" + "─" * (inner + 0) + "╮"]
    # a row of several lines (a command's) is drawn a row per line: a wrap would turn its newlines to spaces
    for r in (line for row in rows for line in row.split("\n")):
        for part in _wrap(r, inner - 2) if r else [""]:
            out.append(" │ " + part.ljust(inner - 2) + " │")
    out.append(" ╰" + "─" * inner + "╯")
    return out


def gemini_footer(width: int, model: str = "gemini-2.5-pro", ctx: int = 98) -> list[str]:
    left = "~/app (main*)"
    mid = "no sandbox (see /docs)"
    right = f"{model} ({ctx}% context left)"
    gap = max(2, (width - len(left) - len(mid) - len(right)) // 2)
    return [left + " " * gap + mid + " " * gap + right]


def gemini_idle(history: list[str], *, width: int = 100) -> str:
    lines = _transcript(history, "✦", (">",))
    lines += _box([">   Type your message or @path/to/file"], width) + gemini_footer(width)
    return _fit(lines, width)


def gemini_busy(history: list[str], *, width: int = 100, status: str = "⠴ Analyzing the test failures (esc to cancel, 9s)") -> str:
    lines = _transcript(history, "✦", (">",))
    lines += [status, ""] + _box([">   Type your message or @path/to/file"], width) + gemini_footer(width)
    return _fit(lines, width)


GEMINI_PERMISSION_OPTIONS = ["Yes, allow once", "Yes, allow always ...", "No, suggest changes (esc)"]


def gemini_permission(command: str, description: str, *, history: list[str] | None = None,
                      width: int = 100, highlighted: int = 0) -> Rendered:
    root = command.split()[0] if command.split() else command
    rows = [f"?  Shell {command} ({description})", "", f"   {command}", "", f"Allow execution of: '{root}'?", "",
            *menu_lines(GEMINI_PERMISSION_OPTIONS, highlighted, marker="●", indent=""), ""]
    lines = _transcript(history or [], "✦")
    lines += _box(rows, width) + ["", "⠏ Waiting for user confirmation..."]
    return Rendered(_fit(lines, width), approve_keys=(("1",), ("Enter",)), decline_keys=(("Escape",), ("3",)))


def gemini_edit(path: str, diff: list[str], *, history: list[str] | None = None, width: int = 100) -> Rendered:
    name = path.rsplit("/", 1)[-1]
    rows = [f"?  Edit {path}: {name} => {name}", ""] + [f" {d}" for d in diff] + [
        "", "Apply this change?", "", "● 1. Yes, allow once", "  2. Yes, allow always",
        "  3. Modify with external editor", "  4. No, suggest changes (esc)", ""]
    lines = _transcript(history or [], "✦")
    lines += _box(rows, width)
    return Rendered(_fit(lines, width), approve_keys=(("1",), ("Enter",)), decline_keys=(("Escape",), ("4",)))


# --------------------------------------------------------------------------- aider


def aider_banner(model: str = "anthropic/claude-sonnet-4-5") -> list[str]:
    return ["Aider v0.86.1", f"Main model: {model} with diff edit format, infinite output",
            "Weak model: anthropic/claude-haiku-4-5", "Git repo: .git with 214 files",
            "Repo-map: using 4096 tokens, auto refresh", "Use /help <question> for help, run \"aider --help\" to see cmd line args"]


def aider_history(items: list[str], width: int) -> list[str]:
    """aider's transcript: a rule and ``diff> `` before each user message, ``Tokens:`` after replies."""
    out: list[str] = []
    for it in items:
        if it.startswith("> "):
            out += [_rule(width), "diff" + it, ""]
        else:
            out.append(it)
    return out


def aider_idle(history: list[str], *, width: int = 100, files: str = "src/app.py", tokens: bool = True) -> str:
    lines = aider_banner() + aider_history(history, width)
    if history and tokens:
        lines += ["", "Tokens: 3.1k sent, 212 received. Cost: $0.01 message, $0.04 session."]
    lines += [_rule(width), files, "diff> "]
    return _fit(lines, width)


def aider_question(question: str, *, dont_ask: bool = True, default: str = "Yes") -> str:
    """aider's one-line question, up to where the user types (``... [Yes]: ``)."""
    opts = "(Y)es/(N)o/(D)on't ask again" if dont_ask else "(Y)es/(N)o"
    return f"{question} {opts} [{default}]: "


def aider_prompt(question: str, history: list[str], *, width: int = 100, dont_ask: bool = True,
                 default: str = "Yes", command: str | None = None, typed: str = "") -> Rendered:
    """An aider question; with ``command``, the shell command aider proposes is printed right above it."""
    lines = aider_banner() + aider_history(history, width)
    lines += ["", "Tokens: 2.4k sent, 96 received. Cost: $0.0098 message, $0.03 session.", ""]
    if command:
        lines += command.split("\n")
    lines.append(aider_question(question, dont_ask=dont_ask, default=default) + typed)
    return Rendered(_fit(lines, width), approve_keys=(("y", "Enter"),), decline_keys=(("n", "Enter"),))


def aider_spinner(verb: str = "Waiting for sonnet", seconds: float = 0, frame: int = 0) -> str:
    return f"{'░▒▓█'[frame % 4]} {verb}..."


def shell_yes_no(question: str = "Continue?", *, default_no: bool = True, typed: str = "") -> str:
    """A shell tool's line question (``Continue? [y/N] ``); its capital letter is the default."""
    return f"{question} {'[y/N]' if default_no else '[Y/n]'} {typed}"


# --------------------------------------------------------------------------- opencode


def opencode_idle(history: list[str], *, width: int = 100) -> str:
    lines = [f"  {h}" for h in history] + ["", "┃", "┃  Ask anything... \"Fix a TODO in the codebase\"", "┃",
                                            "┃  Build  Claude Sonnet 4.5 Anthropic", "",
                                            "  tab agents  ctrl+p commands" + " " * 20 + "opencode 1.0.150"]
    return _fit(lines, width)


def opencode_busy(history: list[str], *, width: int = 100) -> str:
    lines = [f"  {h}" for h in history] + ["", "  ■■■■⬝⬝⬝⬝  esc interrupt", "",
                                            "┃", "┃  Ask anything...", "┃", "┃  Build  Claude Sonnet 4.5 Anthropic"]
    return _fit(lines, width)


def opencode_permission(command: str, description: str, *, history: list[str] | None = None,
                        width: int = 100) -> Rendered:
    lines = [f"  {h}" for h in history or []] + [
        "", "  △ Permission required", f"    # {description}",
        # a command of several lines shows each (a wrap of the whole would turn its newlines into spaces)
        *(f"    {'$ ' if n == 0 else '  '}{line}" for n, line in enumerate(command.split("\n"))), "",
        # The selection is drawn in reverse video only (as `capture-pane -e` shows it); Allow once is the default.
        "  \x1b[7m Allow once \x1b[27m   Allow always    Reject", "",
        "  ⇆ select  enter confirm  esc dismiss"]
    return Rendered(_fit(lines, width), approve_keys=(("Enter",),), decline_keys=(("Escape",),))


# --------------------------------------------------------------------------- the permission prompt in any style

AGENT_STYLES = ("claude", "codex", "gemini", "aider", "opencode")


def permission_in_style(agent: str, command: str, description: str, *, width: int = 100,
                        history: list[str] | None = None) -> Rendered:
    """The same command-approval prompt as ``agent`` would draw it."""
    if agent == "claude":
        return claude_permission(command, description, width=width, history=history)
    if agent == "codex":
        return codex_permission(command, description, width=width, history=history)
    if agent == "gemini":
        return gemini_permission(command, description, width=width, history=history)
    if agent == "aider":
        return aider_prompt("Run shell command?", history or [], width=width, command=command)
    if agent == "opencode":
        return opencode_permission(command, description, width=width, history=history)
    raise ValueError(f"unknown agent style {agent!r}")
