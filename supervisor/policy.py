"""Policy: every tunable choice of the supervisor, as data.

A policy is a YAML file validated by :class:`Policy`. Its id is the hash of its
canonical content (names and descriptions excluded, so two files that behave the same
have the same id). Code holds mechanisms; the policy holds choices. The shipped default
is ``candidates/baseline.yaml`` (packaged as ``supervisor/data/baseline.yaml``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from supervisor.errors import PolicyError
from supervisor.models import AgentName, BlockerKind, PromptKind, RiskLevel, SubjectKind
from supervisor.regexes import backtracking_problem, needs_backtracking
from supervisor.yamlio import format_validation, parse_yaml, read_text

POLICY_FORMAT_VERSION = 1
REPO_CANDIDATES = Path(__file__).resolve().parents[1] / "candidates"
"""Where candidate policies live in a checkout (``extends: NAME`` looks there)."""


class _P(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_regexes(values: list[str]) -> list[str]:
    for v in values:
        try:
            re.compile(f"(?:{v})")  # patterns of a list are combined as one alternation
        except re.error as exc:
            raise ValueError(f"bad regular expression {v!r}: {exc}") from exc
        # Patterns run on a linear-time engine; one that needs backtracking (a lookaround) runs under a
        # time budget, and is refused here if it stalls on its own characters (see supervisor.regexes).
        try:
            problem = backtracking_problem(v)
        except Exception as exc:  # noqa: BLE001 - a construct re accepts and neither engine runs
            raise ValueError(f"regular expression {v!r} cannot run on the supervisor's regex engines: {exc}; "
                             "rewrite it in plain re syntax without lookarounds") from exc
        if problem is not None:
            raise ValueError(f"regular expression {v!r} {problem} (it uses {needs_backtracking(v)}, so it cannot run "
                             "on the linear-time engine); remove the nested repetition, or the lookaround") from None
    return values


def _check_regex(value: str) -> str:
    _check_regexes([value])
    return value


Regex = Annotated[str, AfterValidator(_check_regex)]
"""A policy field holding one regular expression: a bad one is a validation error naming it."""

RegexList = Annotated[list[str], AfterValidator(_check_regexes)]
"""A policy field holding a list of regular expressions (checked the way they are combined)."""


class BlockerPattern(_P):
    """A regex that marks a blocker of a kind when it matches a live line."""

    kind: BlockerKind
    pattern: Regex
    """Case-insensitive regular expression."""
    name: str = ""


class DangerPattern(_P):
    """A regex over what a prompt would approve (command, file, URL) that marks it risky."""

    name: str
    pattern: Regex
    """Case-insensitive regular expression matched against the subject and the question."""
    level: RiskLevel = "dangerous"
    unless: Regex | None = None
    """A match whose text this (case-insensitive) regex finds does not count: the pattern fires only
    on a match it does not excuse (``.env`` but not ``.env.example``). Every match in a text is
    looked at, so one excused match never hides another."""


class SubjectPattern(_P):
    """How to find what a dialog would approve: a regex over one line of the dialog region. The
    subject is the match's ``subject`` group (else the whole line), or the next / previous
    non-blank line of the region (a "Bash command" header with the command under it)."""

    kind: SubjectKind
    """What the subject is: a command, a file path, or a URL."""
    pattern: Regex
    """Case-insensitive regular expression over one line of the dialog (the question included)."""
    take: Literal["match", "next", "previous", "fenced", "block"] = "match"
    """``fenced``: every line between the first pair of dashed rules (``╌``) after the match, joined
    with newlines (Claude Code fences a command there, one or many lines); none: the next pattern.
    ``block``: the lines right above the match up to a blank line, joined with newlines (aider prints
    the shell commands it proposes there, one or several)."""
    continues: bool = False
    """The subject goes on over the lines right below the match (no blank line between): a command
    of several lines (``$ cd build && make`` and the line under it), joined with newlines."""
    when: Regex | None = None
    """A regex some line of the dialog must match for the pattern to apply at all (a URL is what
    a dialog approves only when the dialog is about fetching or opening one)."""


AcpSource = Literal["raw_input", "title", "locations", "diff"]
"""Where in an ACP tool call a subject is read (see :class:`AcpSubject`)."""


class AcpSubject(_P):
    """Where an ACP permission request (``session/request_permission``) names what approving it would
    act on, in the tool call's structured data. A request whose subject none of them finds has risk
    ``unknown`` and is never approved, as on a screen."""

    kind: SubjectKind
    """What the subject is: a command, a file path, or a URL."""
    tool_kinds: list[str] | None = None
    """The ACP tool kinds (``execute``, ``edit``, ``delete``, ``move``, ``read``, ``fetch``...) it applies
    to; None: any."""
    source: AcpSource
    """``raw_input``: the first of ``fields`` present in the tool call's raw input (a string, or a list
    of words joined as a shell command); ``title``: the tool call's title (the ``subject`` group of
    ``pattern`` when given, else the whole title); ``locations``: every location's path; ``diff``:
    every diff's path. Paths are each judged by where they land; the riskiest one counts."""
    fields: list[str] = Field(default_factory=list)
    """For ``raw_input``: the keys to read, in order."""
    pattern: Regex | None = None
    """For ``title``: a regex the title must match (its ``subject`` group, if any, is the subject)."""


class ClassifierRules(_P):
    """What the classifier looks for. Patterns are case-insensitive regular expressions matched
    within one line (``^``/``$`` are the line's ends); ones that start with a literal word run
    fastest, and a pattern whose every match must contain some literal text is only tried on
    lines that hold it."""

    recent_lines: int = Field(40, ge=5, le=500)
    """How many lines from the bottom of the screen count as live."""
    busy_markers: RegexList = Field(default_factory=list)
    """Lines that mean the agent is working (spinners, "esc to interrupt")."""
    idle_markers: RegexList = Field(default_factory=list)
    """Lines that mean the agent waits for a new instruction (empty input box, shell prompt)."""
    prompt_patterns: RegexList = Field(default_factory=list)
    """Lines that mark a live interactive prompt ("Do you want to proceed?", "[y/N]")."""
    question_lead_words: list[str] = Field(default_factory=list)
    """Words that open a question to the user ("do you", "would you", "should I")."""
    blocker_patterns: list[BlockerPattern] = Field(default_factory=list)
    completion_markers: RegexList = Field(default_factory=list)
    """Lines that say a turn finished ("Worked for 7s", "Cooked for 1m")."""
    not_blocker_patterns: RegexList = Field(default_factory=list)
    """Lines that look like blockers but are not ("Approaching your usage limit")."""
    uncertain_below: float = Field(0.6, ge=0.0, le=1.0)
    """Observations less confident than this count as uncertain (the judge may be consulted)."""
    weak_busy_markers: RegexList = Field(default_factory=list)
    """Lines that suggest work ("Thinking...", "Processing...") but count only as the last lines of
    output, and lose to a completion marker below them."""
    menu_hints: RegexList = Field(default_factory=list)
    """Footer hints shown under a live menu ("Esc to cancel", "Enter to confirm", "↑/↓ to navigate")."""
    dialog_hints: RegexList = Field(default_factory=list)
    """Hints that by themselves, as the bottom line, mean a dialog waits for an answer
    ("Enter to confirm", "Tab to amend", "↑↓ select · enter submit")."""
    prompt_kinds: dict[PromptKind, list[str]] = Field(default_factory=dict)
    """Regexes over a prompt's question and header that give its kind; the first kind listed that
    matches wins (unmatched menus are ``numbered_menu``, unmatched y/n prompts ``yes_no``)."""
    approve_option: Regex = r"^(yes|allow|approve|accept|proceed|trust|run|continue|ok|confirm|apply)\b"
    """Regex over an option's label: choosing it approves the prompted action."""
    decline_option: Regex = r"^(no|deny|reject|decline|cancel|skip|quit|exit|abort|don'?t)\b"
    """Regex over an option's label: choosing it declines."""
    persistent_option: Regex = r"don'?t ask again|always|for this session|during this session|allow all|trust all"
    """Regex over an option's label: choosing it widens future permissions ("don't ask again")."""
    input_lines: RegexList = Field(default_factory=lambda: [
        r"^[❯>›](\s*$|\s+([^\d\s]|\d($|[^\d.)]|[.)]($|\S)|\d($|[^.)]|[.)]($|\S)))))"])
    """Regexes for the input line of an agent's composer ("❯ ", "> fix the bug"), whatever the agent;
    each agent's ``agents.<name>.input_lines`` add to them. The default is "a glyph, then blank or text
    that is not a numbered option" (``(?!\\s*\\d{1,2}[.)]\\s)``) spelled without a lookahead, so that it
    runs on the linear-time engine."""
    highlight_glyphs: str = "❯›>▶➤●◉◆→▸"
    """Glyphs drawn before the highlighted option of a menu (each agent's ``highlight_glyphs`` add)."""
    message_bullets: str = "⏺•●"
    """Glyphs that open an agent's message or tool call ("⏺ Bash(...)", "• Ran ..."): a prompt inside
    such a message is quoted, not live. A glyph that is also a highlight glyph and is followed by a
    digit is a menu option instead."""
    arrow_menu_hints: RegexList = Field(default_factory=lambda: [r"\benter\b( to)? continue\b"])
    """Footer hints under a highlighted menu that mean a digit only moves the cursor ("enter continue"):
    such menus are answered with arrows and Enter."""
    title_busy_markers: RegexList = Field(default_factory=lambda: ["^[⠀-⣿◐◓◑◒]"])
    shell_prompts: RegexList = Field(default_factory=lambda: [
        # `$`/`#`, or `%` not after a digit (zsh's prompt, not "100%"), without a lookbehind
        r"^(\([\w.-]+\) )?(([\w.-]+@[\w.-]+[: ]\S*|\[[\w.@-]+( \S+)?\]|[\w@.~:/-]*)(\s?[$#]|\s%)"
        r"|([\w.-]+@[\w.-]+[: ](\S*[^\s\d])?|\[[\w.@-]+( \S+)?\]|([\w@.~:/-]*[A-Za-z_@.~:/-])?)%)$",
        r"^(\([\w.-]+\) )?➜\s+\S+( git:\(\S+\))?( ✗)?$"])
    """Regexes for a shell's prompt line: one below an agent's last lines means the agent exited (its
    last frame is history, and nothing of it streams any more)."""
    subject_patterns: list[SubjectPattern] = Field(default_factory=list)
    """Where a dialog names what it would approve, tried in order (each agent's own patterns first).
    A dialog whose subject none of them finds has risk ``unknown`` and is never approved."""
    cwd_patterns: RegexList = Field(default_factory=list)
    """Regexes with a ``cwd`` group for an agent's header or footer that shows its working directory:
    used to place a write when the pane's directory is not known."""
    """Regexes over the pane title that mean the agent works (a spinner glyph the agent animates there)."""
    acp_subjects: list[AcpSubject] = Field(default_factory=list)
    """Where ACP permission requests name what they would approve, tried in order (each agent's own
    ``acp_subjects`` first): the same role ``subject_patterns`` play for screens."""
    blocker_lines: int = Field(12, ge=1, le=200)
    """How many non-blank lines from the bottom a blocker message must be within to count as live."""

    @field_validator("prompt_kinds")
    @classmethod
    def _valid_map(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for pats in v.values():
            _check_regexes(pats)
        return v


CursorPlace = Literal["option", "footer", "question_end", "anywhere"]
"""Where an agent leaves the cursor once a dialog is drawn whole: on one of its options' rows (Claude
Code's highlighted option); on its footer row or below it (Codex parks it on the last row); at the
end of its question's row (a line prompt waiting for its answer); anywhere."""


class DialogFrame(_P):
    """One shape of an agent's live dialog, as a whole: what opens it, where it sits, what closes it,
    what the agent draws under it while it waits, and where it leaves the cursor. A prompt is the
    agent's own live dialog only if it fits one of its agent's frames; it is drawn *whole* (the
    supervisor may answer it at once, without waiting out the settle time) once the frame's footer is
    drawn under its options, nothing but the frame's ``below`` rows follows, and the cursor is where
    the frame says."""

    name: str
    style: Literal["menu", "line"] = "menu"
    """``menu``: options on rows of their own (numbered, arrows, buttons); ``line``: a question on one
    row answered by typing (``[Y/n]``, aider's ``(Y)es/(N)o [Yes]:``)."""
    question: RegexList = Field(default_factory=list)
    """What its question row looks like (line frames: the row itself); none given: any question."""
    top: RegexList = Field(default_factory=list)
    """A row above its question that opens the frame (a rule across the pane, a box's top edge, a
    header), at most ``reach`` rows up, with none of the agent's messages or its composer between.
    None given: no opening row is needed."""
    reach: int = Field(40, ge=1, le=500)
    whole_screen: bool = False
    """It fills the screen (a first-run wizard): no message of the agent, tool output or composer
    anywhere above it."""
    footer: RegexList = Field(default_factory=list)
    """Its last row under its options (key hints, a box's bottom edge): once drawn, the frame is whole.
    None given: a menu frame is never known whole (the settle time applies); a line frame is whole at
    its question row."""
    below: RegexList = Field(default_factory=list)
    """Rows the agent draws under the frame while it waits (an animated status line, a status bar):
    any other row below it means output followed the dialog, which is then not live."""
    cursor: list[CursorPlace] = Field(default_factory=lambda: list[CursorPlace](["anywhere"]))
    """Where the cursor is once the frame is drawn whole (any of these)."""


class AgentProfile(_P):
    """What the supervisor knows about one agent CLI, as data: how to recognise it (its process, its
    pane title, its screen), how its composer and dialogs look, how to make it exit, and the few
    behaviours of its screen that need a rule of their own. A new agent, or a new version of one, is
    a change here plus suite cases, never a code change. An agent not listed gets the generic grammar
    (``classifier``) and the same fail-safe answer rules."""

    commands: list[str] = Field(default_factory=list)
    """Program names that start it (``claude``, ``cursor-agent``): the basename of the command, or of
    the script an interpreter runs (``node .../claude.js``). A one-letter name counts only as the
    program itself."""
    packages: list[str] = Field(default_factory=list)
    """Package names (substrings of an interpreter's arguments) that run it: ``@anthropic-ai/claude-code``
    under ``npx``, ``aider-chat`` in a ``pipx``/``uvx`` path."""
    titles: list[str] = Field(default_factory=list)
    """Lowercase substrings of the pane title it sets (``claude code``)."""
    markers: RegexList = Field(default_factory=list)
    """Regexes over the bottom lines of the screen (and the pane title) that only this agent draws.
    The first agent listed whose marker shows wins."""
    input_lines: RegexList = Field(default_factory=list)
    """Regexes for its composer's input line (``diff> ``, ``[dev] 16% λ >``), added to
    ``classifier.input_lines``. An input line that starts with a letter is the composer only as the
    last line of the screen."""
    composer_header: RegexList = Field(default_factory=list)
    """Regexes for lines it draws between the composer's rule and its input line (aider lists the
    files in the chat there)."""
    highlight_glyphs: str = ""
    """Extra glyphs it draws before the highlighted option of a menu."""
    message_bullets: str = ""
    """Extra glyphs that open its messages or tool calls."""
    subject_patterns: list[SubjectPattern] = Field(default_factory=list)
    """Where its dialogs name what they would approve (tried before ``classifier.subject_patterns``)."""
    cwd_patterns: RegexList = Field(default_factory=list)
    """Regexes with a ``cwd`` group for where it shows its working directory (a header or footer)."""
    acp_subjects: list[AcpSubject] = Field(default_factory=list)
    """Where its ACP permission requests name their subject (tried before ``classifier.acp_subjects``):
    Gemini CLI puts the shell command only in the tool call's title."""
    title_directory: RegexList = Field(default_factory=list)
    """Regexes with a ``name`` group for the name of its working directory in the pane title it
    sets (``Qwen - work``). Where the full directory is not known, a write to an absolute path with
    no directory of that name on its way lands outside the project (never the other way round)."""
    footer: RegexList = Field(default_factory=list)
    """Regexes for the last line it draws under its composer (Gemini CLI's directory, sandbox and
    model line), for an agent that does not clear the screen when the pane is resized: rows below
    the first such line under its composer are left over from an earlier draw at another width and
    are not read; so are fragments of boxes below the bottom edge of a dialog it drew last."""
    side_panel: RegexList = Field(default_factory=list)
    """Regexes for a heading of the side panel it draws right of its transcript in a wide pane (Kilo
    Code's "▼ Token Usage"): when one shows well right of the left edge, every row is read only up to
    the panel's column, so that the panel's lines are not taken for the transcript's newest ones."""
    first_option_selected: bool = False
    """Its menus and button rows open with the first option selected and draw the selection only in
    colour: with no highlight on the screen, the first option is taken as the selected one."""
    exit_keys: list[str] = Field(default_factory=list)
    """Keys that make it exit (``--exit-on-finish``), e.g. ``["/exit", "Enter"]``."""
    busy_without_composer: bool = False
    """Its composer is the last line of the screen whenever it waits: output at the bottom with no
    composer below it is an answer still streaming (aider)."""
    dialog_hides_composer: bool = False
    """Its dialogs replace its input box (composer) while they ask: a dialog with its input box below it
    is one quoted in its output, never a live one (Claude Code, Codex, Gemini CLI...)."""
    busy_when_input_hidden: bool = False
    """It hides its input line while it works: a rule with only a status line under it is busy (Claude Code)."""
    menu_over_composer: bool = False
    """Its dialogs draw an arrow menu (no digits, the selected option behind a cursor glyph) right above
    its input box, which stays drawn (OpenHands' "Confirm 1 action(s)?" over "> Yes / No / Always"):
    such a menu, its question just above it, is live although the input box is below it."""
    not_questions: RegexList = Field(default_factory=list)
    """Regexes for lines it prints that read like a question over a list and ask nothing (OpenHands'
    welcome "What do you want to build?" over its numbered tips): a menu under one is not a prompt."""
    pending_action: RegexList = Field(default_factory=list)
    """Regexes for its record of an action that still waits for the user's answer (OpenHands draws
    ``▶ terminal: {...}: $ cmd`` and adds ✓ or ✗ once it ran), searched in the newest paragraph above
    its input box with its wrapped rows joined: with no busy marker on screen, it is a question whose
    dialog scrolled out of view in a short pane: asking, with no option to read (escalated)."""
    sent_message: RegexList = Field(default_factory=list)
    """Regexes for its transcript's record of the user's message (OpenHands' ``> words`` above its input
    box): as the newest line above the input area, nothing after it yet, the message is being answered
    (it shows no busy marker while its model thinks)."""
    prompt_after_answer: bool = False
    """It draws its next prompt line only once the answer is done and keeps no typed text in it
    (open-interpreter's ``> ``, a line agent): its prompt line holding the user's words as the last line
    of the screen is a message being answered, not a composer being typed into."""
    turn_ends_with_marker: bool = False
    """It closes every turn with a completion line (``classifier.completion_markers``: Codex's "Worked
    for 3s") and shows no spinner while text streams in: output below the user's last message that
    stops mid-sentence, with no completion line after it, is an answer still coming in."""
    dialogs: list[DialogFrame] = Field(default_factory=list)
    """The grammar of its live dialogs, as a whole (see :class:`DialogFrame`). When given, a prompt on
    its screen that fits none of them is not its own dialog (a quoted or printed one, or a shape this
    policy does not know): it is never answered, and is escalated when it waits at the bottom. None
    given: the generic rules of ``classifier`` decide, and every answer waits out the settle time."""


AnswerThen = Literal["approve", "decline", "escalate", "keys", "option"]


class AnswerMatch(_P):
    """When an answer rule applies. Every given field must match; omitted fields match anything."""

    agents: list[AgentName] | None = None
    kinds: list[PromptKind] | None = None
    question: Regex | None = None
    """Regular expression over the prompt's question."""
    subject: Regex | None = None
    """Regular expression over what would be approved (command, file)."""
    option: Regex | None = None
    """Regular expression that some option's label must match."""
    risk: list[RiskLevel] | None = None
    """Risk levels the rule applies to (``dangerous`` prompts are escalated regardless unless the
    rule sets ``allow_dangerous``)."""


class AnswerRule(_P):
    """What to do with prompts that match. The first matching rule wins."""

    name: str
    when: AnswerMatch = Field(default_factory=AnswerMatch)
    then: AnswerThen
    """approve: pick the approving option (never a "don't ask again" one unless allowed);
    decline: pick the declining option; escalate: hand to a human; keys: send ``keys``;
    option: pick the option whose label matches ``option``."""
    keys: list[str] | None = None
    option: str | None = None
    allow_persistent: bool = False
    """May pick a "don't ask again"/"always allow" option."""
    allow_default_no: bool = False
    """May answer a prompt whose default declines. Only an explicit rule can."""
    allow_dangerous: bool = False
    """Reserved for explicit human-written rules; the baseline never sets it."""


class WriteRisk(_P):
    """How risky a file write or edit is, by where it lands (its path resolved against the pane's
    working directory)."""

    outside_project: RiskLevel = "dangerous"
    """A write outside the working directory (or anywhere when the directory is not known and the
    path is absolute or starts with ``~``)."""
    paths: list[DangerPattern] = Field(default_factory=list)
    """Regexes over the resolved path (a home path written ``~/...``) that are risky wherever they are:
    shell startup files, ~/.ssh, ~/.aws, ~/.config, git and package-manager config, CI and hook files
    that run code (``.git/hooks/``, ``.github/workflows/``), system paths."""


Effect = Literal["none", "read", "write", "delete", "run", "install", "network", "send", "publish", "code",
                 "privilege", "destroy", "system", "secrets"]
"""What running a command does (the policy's ``commands.effects`` says how risky each is):

- ``none``: nothing outside the shell's own output (``echo``, ``true``);
- ``read``: reads files (its read arguments are placed: inside the project, or a harmless place);
- ``write`` / ``delete``: writes or deletes its write / delete arguments (each placed; a deletion
  must be recoverable);
- ``run``: runs the project's own code or tools (tests, builds, scripts inside the project);
- ``install``: installs packages from the registry into the project's environment;
- ``network``: reads from the network;
- ``send``: sends data somewhere (an upload, a POST, a push), to this machine's services too (a
  DELETE to a local database is a wipe);
- ``publish``: publishes or deploys (a release, a registry upload, a cloud or cluster change);
- ``code``: runs code that is not a file of the project (inline, fetched, decoded, from stdin);
- ``privilege``: runs with other rights (``sudo``, ``su``, setuid);
- ``destroy``: destructive by nature (a database drop, a cache flush, a force push, a ref deletion);
- ``system``: changes the machine beyond the project (services, processes, schedules, users);
- ``secrets``: shows credentials (the environment, a shell's variables): the output goes to the model."""

ArgRole = Literal["text", "read", "names", "write", "replace", "delete", "link", "cwd", "script", "code", "command",
                  "url", "ignore", "move", "include"]
"""What a command's argument is: ``text`` (not a file: a pattern, a message, a name); ``read`` / ``write``
/ ``delete`` a path it reads, writes or deletes; ``names`` a path whose names and sizes it prints, never
its contents (``ls``, ``tree``, ``find``'s roots: harmless outside the project too, but for secret places); ``move`` a path it moves away (a write where the
destination is inside the project, a deletion from the project where it is not); ``replace`` a path it writes over (an existing file it
would replace must be recoverable, where the supervisor can look); ``link`` the target a symbolic link will point at
(placed like a write); ``cwd`` a directory it works in (placed like a write); ``script`` a file it runs
as code (inside the project: ``run``; elsewhere: ``code``); ``code`` inline program text (a shell's is
parsed in turn); ``command`` the rest of the words are a command it runs (``env``, ``xargs``, ``timeout``);
``url`` where it talks to (local or not); ``ignore`` a word that names nothing; ``include`` a pattern of the
file names it reads under its paths (``grep -r --include='*.env*'``, ``rg -g '*.pem'``): one that can match
where secrets are kept reads secrets."""


class FlagSpec(_P):
    """What an option changes about a command."""

    does: list[Effect] = Field(default_factory=list)
    """Effects the option adds (``--force``: ``destroy``)."""
    sets: list[Effect] | None = None
    """Effects that replace the command's own (``git clean -n`` only reads; ``crontab -l`` lists);
    effects other options add still count."""
    args: list[str] | None = None
    """With this option, the roles of the positional arguments (``sed -i``: ``[text, write*]``)."""
    value: ArgRole | None = None
    """The option takes a value (the next word, or after ``=``) with this role."""
    unknown: bool = False
    """The option makes the command's effect unknowable (``git -c``: configuration that may run code)."""
    found: ArgRole | None = None
    """The option acts on each file the command finds (``find -delete`` deletes each): the role of those
    files, each placed as ``ROOT/**/NAME`` (its ``-name``), like a ``{}`` the command runs."""
    harmless_values: Regex | None = None
    """Values of the option (matched whole, case-insensitively) for which its ``does`` (and ``unknown``) do
    not apply: ``curl -X GET`` sends nothing, any other method does; ``git -c color.ui=never`` only
    colours, any other setting may run code. A value built at run time never matches. On an option whose
    value is optional (no ``value`` role; a value only after ``=``), the bare option is its default, harmless:
    helm's ``--dry-run`` and ``--dry-run=server`` render only, ``--dry-run=none`` installs."""


def _flag_shorthand(value: Any) -> Any:
    if isinstance(value, str):
        return {"value": value} if value in ArgRole.__args__ else {"does": [value]}  # type: ignore[attr-defined]
    if isinstance(value, list):
        return {"does": value}
    return value


FlagValue = Annotated[FlagSpec, BeforeValidator(_flag_shorthand)]


class ArgPattern(_P):
    """A regex over a positional argument that changes what the command does (``git push origin
    :branch`` deletes the branch; ``+main`` force-pushes)."""

    pattern: Regex
    does: list[Effect] = Field(default_factory=list)
    unknown: bool = False
    args: list[str] | None = None
    """With a matching argument, the roles of the positional arguments (``cp /dev/null f`` deletes ``f``)."""
    files: bool = True
    """False: an argument after the first that names a file (a ``/`` in it, or a file extension) is not
    matched. A script runner's name risks are in the script's name, not in the folders of the test files
    it is given (``bun run test features/deployment/a.test.ts`` runs tests)."""


class CommandSpec(_P):
    """What a program (or one of its subcommands) does, and the role of each of its arguments. A
    program or subcommand not in the table is ``unknown``; an option not listed keeps the effect of
    the command (unless ``strict_flags``)."""

    does: list[Effect] = Field(default_factory=lambda: list[Effect](["read"]))
    args: list[str] = Field(default_factory=lambda: ["text*"])
    """The roles of the positional arguments, in order (:data:`ArgRole`); a role ending in ``*`` takes
    every argument not taken by the roles after it (``cp``: ``[read*, write]``)."""
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    """Options that change the effect or take a value. Shorthand: a role name (``-o: write``) is an
    option taking a value of that role; an effect name or a list of them (``--force: destroy``) adds
    effects. Combined short options (``-rf``) are read one letter at a time."""
    strict_flags: bool = False
    """An option not listed makes the command ``unknown`` (programs whose options can run code)."""
    single_dash: bool = False
    """Its options are whole words after one dash (ffmpeg's ``-filter_script``), never letters combined
    (``-rf``): a word not listed is an option not listed."""
    options_until_double_dash: bool = False
    """With a ``command`` argument: the program's own options go on after its fixed arguments, up to a
    ``--`` that the command follows (``kubectl exec pod -c app -- psql``: ``-c`` is kubectl's)."""
    subcommands: dict[str, CommandSpec] | None = None
    """The program's subcommands (the first positional argument): one not listed is ``unknown``. The
    options before the subcommand are the program's own ``flags``."""
    program_prefix: str | None = None
    """With a ``command`` argument: the program it names is this prefix and the word (``npm create vite``
    runs ``create-vite``)."""
    scripts_as: str | None = None
    """With subcommands: one of them that a word which is not a subcommand is run as (``pnpm lint`` is
    ``pnpm run lint``, ``bun test:e2e`` is ``bun run test:e2e``); None: such a word is ``unknown``."""
    bins: bool = False
    """With ``scripts_as``: a word that is no script's name the table knows but a program it knows is that
    program of the project's ``node_modules/.bin``, run as itself (``bun turbo run build``, as ``pnpm
    exec`` runs one; a runner with an ``exec`` subcommand does so already)."""
    bare: list[Effect] | None = None
    """With subcommands: the effect when no subcommand is given (None: ``unknown``). Without: the
    effect when the program is run with no argument at all (``env`` alone prints the environment)."""
    max_args: int | None = Field(None, ge=0)
    """At most this many positional arguments; a command with more is a form the table does not know
    (``git config KEY`` reads a key; ``git config KEY VALUE`` would set it)."""
    only: Regex | None = None
    """Every positional argument must match this (a build tool's tasks, a script runner's script
    names): any other is a form the table does not know (``./gradlew flywayClean``)."""
    only_first: bool = False
    """With ``only``: the positional arguments after the first (the script a runner runs) that name files
    are the script's (``pnpm test:run src/a.test.tsx``), not named by ``only`` (still looked at by
    ``arg_patterns``); any other word after it still is (``bun run dev claude sprite``)."""
    arg_patterns: list[ArgPattern] = Field(default_factory=list)
    inline: Literal["shell", "python", "awk", "sed", "perl", "node", "sql"] | None = None
    """The language of its inline code (``code`` arguments), which the judgment reads: a shell's is
    parsed and judged as a command line; a Python, awk or sed program that only reads and prints, a
    Perl one of substitutions only (``s/old/new/g``), a Node one that only prints a JSON file's field
    or the versions, SQL that only reads (``psql -c "SELECT ..."``) is harmless; anything else it runs
    inline is ``code``."""
    after_double_dash: list[Effect] | None = None
    """Effects when arguments follow ``--`` (``git checkout -- file`` discards the file's changes)."""
    shows_paths: bool = False
    """Its plain arguments may name files whose contents it prints, at a revision too (``git show
    HEAD:.env``, ``git diff .env``, ``git log -p -- .env``): one that names a secret (the policy's
    ``secrets``) shows secrets. Otherwise they are not placed (a revision is no path)."""
    project_args: bool = False
    """The program it runs is the project's own (``cargo run``, ``go run .``, ``dotnet run``): its plain
    arguments are that program's, judged by the table's ``project_program_args`` as a project script's
    are (``cargo run -- submit ...``, ``go run ./cmd/tool deploy``)."""
    also: list[str] = Field(default_factory=list)
    """Other names of the same program (``python3`` for ``python``)."""
    note: str = ""

    @field_validator("args")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        for role in value:
            if role.rstrip("*") not in ArgRole.__args__:  # type: ignore[attr-defined]
                raise ValueError(f"unknown argument role {role!r} (one of: {', '.join(ArgRole.__args__)})")  # type: ignore[attr-defined]
        return value


def _default_effect_levels() -> dict[Effect, RiskLevel]:
    return {"none": "none", "read": "none", "run": "none", "install": "none", "network": "none",
            "write": "low", "delete": "low", "send": "dangerous", "publish": "dangerous", "code": "unknown",
            "privilege": "dangerous", "destroy": "dangerous", "system": "dangerous", "secrets": "dangerous"}


class CommandKnowledge(_P):
    """What the supervisor knows about shell commands: every program it may approve, what each of its
    forms does, and where the files it touches may be. Approval needs every simple command of a
    command line found here and judged safe; anything else is ``unknown``."""

    effects: dict[Effect, RiskLevel] = Field(default_factory=_default_effect_levels)
    """How risky each effect is (its placed paths aside): a command is as risky as its riskiest part."""
    programs: dict[str, CommandSpec] = Field(default_factory=dict)
    """The table, by program name (a path such as ``/usr/bin/rm`` is looked up by its last part)."""
    known_vars: dict[str, str] = Field(default_factory=lambda: {"HOME": "~", "PWD": "."})
    """Variables whose value is known where the command runs (``$HOME`` is ``~``); any other
    expansion in a program name or a placed path makes that command ``unknown``."""
    unsafe_env: list[str] = Field(default_factory=list)
    """Environment variables that change which program runs or what it loads (``PATH``,
    ``LD_PRELOAD``): setting one makes the command ``unknown``."""
    env_values: dict[str, Regex] = Field(default_factory=dict)
    """For some of ``unsafe_env``: a regex a value written out in full must match, whole, to be
    harmless (``NODE_OPTIONS=--max-old-space-size=4096`` sizes a heap; ``--require x`` runs code). A
    value built at run time, or any other, still makes the command ``unknown``."""
    recoverable: RegexList = Field(default_factory=list)
    """Regexes over a deleted path relative to the project (``build``, ``node_modules/x``): deleting
    these is recoverable (build output, caches). Any other deletion is ``unknown`` unless ``git_restorable``."""
    git_restorable: bool = True
    """A deletion inside the project is recoverable when git can restore it: every file under the path
    tracked and unchanged (checked live with git where the pane's directory is on this machine)."""
    harmless_reads: RegexList = Field(default_factory=list)
    """Regexes over an absolute (or ``~/``) path outside the project that may be read (system headers,
    package sources); never credentials, keys or configuration. Any other outside read is ``unknown``."""
    secrets: RegexList = Field(default_factory=list)
    """Regexes over a path (as placed: ``~/...`` for a home path, else as written) whose reading is
    ``dangerous`` wherever it is: keys, credentials, tokens, ``.env`` files."""
    secret_urls: RegexList = Field(default_factory=list)
    """Regexes over a URL a program talks to (``curl``, ``wget``, ``http``) whose answer is credentials
    (a cloud's instance metadata service): talking to one is ``dangerous`` whatever the request."""
    local_services: RegexList = Field(default_factory=list)
    """Regexes over a URL a program sends data to (``curl -X POST``, ``-d``) that is a service the
    project runs on this machine (its dev server on ``localhost:3000``): a send to one, every URL of
    the command one of them, no method DELETE, no file sent (``-d @file``), is local work. ``send`` to
    any other stays ``commands.effects.send``."""
    not_local_services: RegexList = Field(default_factory=list)
    """Regexes over URLs that ``local_services`` would call local but that are not the project's to
    change (a local Docker or Kubernetes API, a database's HTTP port): a send there stays a send."""
    scratch: RegexList = Field(default_factory=list)
    """Regexes over absolute paths outside the project that may be written (``/tmp/``): a write there is
    ``low``, a deletion there still needs a human."""
    path_listers: list[str] = Field(default_factory=list)
    """Forms (``find``, ``git ls-files``) whose output is a list of the paths under what they read: piped
    into ``xargs``, each item is such a path (``find . -name '*.py' | xargs wc -l`` reads inside the
    project). The output of any other command is text nobody has read: the paths it would name to
    ``xargs`` are unknown."""
    path_listers_with: dict[str, list[str]] = Field(default_factory=dict)
    """Forms that print only paths when given one of these options (``git diff --name-only``, ``grep -l``):
    path listers as ``path_listers`` are, with it."""
    line_filters: dict[str, list[str]] = Field(default_factory=dict)
    """Programs that, reading their standard input only and given only these options (one ending in ``=``
    takes a value), print some of its lines unchanged (``grep -v test``, ``sort -u``, ``head -n 20``): a
    list of paths piped through them into ``xargs`` is still that list. The grep family's pattern is their
    one plain argument."""
    project_programs: list[ArgPattern] = Field(default_factory=list)
    """Regexes over the file name of a program of the project (``./release.sh``), or, for a pattern with
    a ``/`` in it, over its path as written (``(^|/)[.]github/``): a match adds its effects (``does``) or
    makes the run ``unknown``. Any other project program runs the project's code."""
    project_program_args: list[ArgPattern] = Field(default_factory=list)
    """Regexes over the arguments of a program or script of the project (``python setup.py sdist
    upload``, ``init_db.py --drop-all``): a match adds its effects or makes the run ``unknown``."""


class AnswerRules(_P):
    """How prompts are answered."""

    rules: list[AnswerRule] = Field(default_factory=list)
    always_escalate: RegexList = Field(default_factory=list)
    """Regular expressions over the question: these prompts always go to a human."""
    danger_patterns: list[DangerPattern] = Field(default_factory=list)
    """Regexes matched against every line of a dialog (between its frame edges), not only its subject."""
    write_risk: WriteRisk = Field(default_factory=WriteRisk)
    escalate_free_text: bool = True
    """Questions that want typed text go to a human (or the judge)."""
    escalate_blockers: bool = True


class Timing(_P):
    """Delays and timeouts, in seconds unless named otherwise."""

    settle_ms: int = Field(30, ge=0, le=10_000)
    """Wait this long after the last output before classifying (screens mid-redraw lie); a dialog
    drawn whole by its agent's grammar (``AgentProfile.dialogs``) is answered without waiting it out."""
    frame_quiet_ms: float = Field(2.0, ge=0, le=10_000)
    """After the output that drew a whole dialog, how long no further output must arrive before it is
    answered, at least (the pane's measured drawing gaps can make it longer, up to ``settle_ms``)."""
    frame_quiet_factor: float = Field(2.0, ge=1, le=100)
    """The quiet window is this many times the pane's usual gap between the pieces of one drawing."""
    draw_gap_ms: float = Field(25.0, gt=0, le=10_000)
    """Gaps between output events shorter than this are pieces of one drawing (the agent's drawing
    behaviour, measured per pane); longer ones separate drawings."""
    stall_timeout_s: float = Field(600.0, gt=0)
    """Busy with no output this long is a stall."""
    recheck_s: float = Field(5.0, gt=0)
    """Re-read a quiet pane this often while a decision depends on time (stall, finish)."""
    confirm_timeout_s: float = Field(3.0, gt=0)
    """After sending keys, how long the screen has to change before the answer counts as not taken."""
    backoff_s: list[float] = Field(default_factory=lambda: [1.0, 3.0, 10.0])
    """Waits between successive approaches to the same prompt."""
    finish_confirmations: int = Field(2, ge=1, le=20)
    """Idle observations in a row (``recheck_s`` apart) before the run counts as finished."""
    human_quiet_s: float = Field(20.0, ge=0)
    """After a human types into the pane, keep hands off this long."""


class Budgets(_P):
    max_interventions: int = Field(500, ge=0)
    """Automatic answers and instructions per run; beyond it, escalate."""
    strike_limit: int = Field(2, ge=1)
    """Answers to the same prompt that did not take before escalating."""
    cooldown_s: float = Field(15.0, ge=0)
    """Per-pane pause after an answer that did not take."""
    max_retries_per_node: int = Field(2, ge=0)
    max_stalls: int = Field(3, ge=0)
    """Stalls recorded before a stall is escalated."""


class PauseHandling(_P):
    mode: Literal["notify_only", "notify_then_ai"] = "notify_only"
    """notify_only: a paused workflow waits for a human. notify_then_ai: if no human has acted
    after ``ai_after_s``, the agent is handed ``templates.unblock`` once per pause to try itself."""
    ai_after_s: float = Field(600.0, gt=0)
    """With ``notify_then_ai``: how long a human has before the agent is asked to try itself."""
    max_auto_interventions: int = Field(1, ge=1, le=20)
    """With ``notify_then_ai``: how many times per pause the agent is asked to try itself, each
    ``ai_after_s`` after the last try (thin-supervisor's ``max_auto_interventions``)."""
    display_message: bool = True
    """Show the pause on the pane with ``tmux display-message``."""
    display_ms: int = Field(10_000, ge=0)


SupervisionModeName = Literal["strict_verifier", "collaborative_reviewer", "directive_lead"]
Trust = Literal["low", "standard", "high"]


class SupervisionMode(_P):
    """How much the supervisor intervenes in a workflow run: applied over the policy's workflow knobs
    for the runs of workers that use it (see ``supervisor profiles``). Unset fields keep the policy's."""

    description: str = ""
    max_retries_per_node: int | None = Field(None, ge=0)
    """Verification strictness: failed verifications the agent fixes on its own before a human is
    asked (a spec's own ``policy.max_retries_per_node`` still wins)."""
    templates: dict[Literal["next_step", "retry", "branch", "unblock"], str] = Field(default_factory=dict)
    """Instruction style: the handoff templates this mode words differently."""
    pause_mode: Literal["notify_only", "notify_then_ai"] | None = None
    """When it asks a human: ``notify_only`` waits for one; ``notify_then_ai`` lets the agent try first."""
    max_auto_interventions: int | None = Field(None, ge=1, le=20)
    ai_after_s: float | None = Field(None, gt=0)


class WorkerProfile(_P):
    """Who the worker is: its provider, model and how far it is trusted."""

    description: str = ""
    agents: list[str] = Field(default_factory=list)
    """Agent names (as the policy's ``agents:`` names them) this profile applies to by default."""
    provider: str = "unknown"
    model: str = ""
    trust: Trust = "standard"
    mode: SupervisionModeName | None = None
    """The supervision mode; unset: by trust (low: directive_lead, standard: strict_verifier, high:
    collaborative_reviewer)."""


class Supervision(_P):
    """Worker profiles and supervision modes (thin-supervisor's WorkerProfile and SupervisionPolicy)."""

    default_profile: str = "default"
    """The profile of a worker no profile's ``agents`` names (and no --profile chooses)."""
    profiles: dict[str, WorkerProfile] = Field(default_factory=lambda: {"default": WorkerProfile()})
    modes: dict[SupervisionModeName, SupervisionMode] = Field(default_factory=dict)


class JudgePrice(_P):
    """USD per million tokens for one model (or model family prefix)."""

    input_per_mtok: float = Field(ge=0)
    """Price of uncached input tokens."""
    output_per_mtok: float = Field(ge=0)
    """Price of output tokens."""
    cache_read_per_mtok: float = Field(0.0, ge=0)
    """Price of input tokens read from the API's prompt cache."""


def default_judge_prices() -> dict[str, JudgePrice]:
    """Published list prices (USD/MTok) of current Claude models. Keys are model ids or prefixes
    (``claude-sonnet-4-5`` also prices ``claude-sonnet-4-5-20250929``); ``*`` prices any model not
    listed, deliberately at the top tier so an unknown model can never slip under a budget."""

    def p(i: float, o: float) -> JudgePrice:
        return JudgePrice(input_per_mtok=i, output_per_mtok=o, cache_read_per_mtok=round(i / 10, 4))

    return {
        "claude-opus-4-6": p(5.0, 25.0),
        "claude-opus-4-5": p(5.0, 25.0),
        "claude-opus-4-1": p(15.0, 75.0),
        "claude-opus-4": p(15.0, 75.0),
        "claude-sonnet-4-6": p(3.0, 15.0),
        "claude-sonnet-4-5": p(3.0, 15.0),
        "claude-sonnet-4": p(3.0, 15.0),
        "claude-haiku-4-5": p(1.0, 5.0),
        "claude-3-5-haiku": p(0.8, 4.0),
        "*": p(15.0, 75.0),
    }


JudgeConsult = Literal["never", "uncertain", "always"]


class JudgeSettings(_P):
    """The optional LLM judge. Off by default: no key, no calls. Rules decide what they can; with
    ``consult: uncertain`` the judge sees only screens the rules are unsure about, and whatever it
    proposes still passes the answer rules' safety checks (see ``supervisor.judge.consult``)."""

    consult: JudgeConsult = "never"
    """never: no calls at all; uncertain: only observations less confident than
    ``classifier.uncertain_below`` or prompts the rules can only escalate (free text, unknown);
    always: every observation the runner decides on."""
    model: str = "claude-sonnet-4-6"
    """Anthropic model id."""
    temperature: float | None = Field(None, ge=0.0, le=1.0)
    """Sampling temperature, sent only when set. The API deprecated it: models from Opus 4.7 and
    Sonnet 5 on reject it (HTTP 400, and the judge then fails safe), so leave it unset unless the
    model still takes it. Determinism does not depend on it: the cache replays verdicts exactly."""
    max_tokens: int = Field(512, ge=16, le=8192)
    prompt_version: str = "v1"
    """Which system prompt and tool set (``supervisor.judge.anthropic_judge.PROMPTS``); part of the cache key."""
    screen_chars: int = Field(4000, ge=200, le=100_000)
    """The judge sees the last this-many characters of the screen."""
    history_size: int = Field(6, ge=0, le=50)
    """How many earlier exchanges (what it saw, what it proposed, what was done) it is shown."""
    reconsult_s: float = Field(60.0, ge=0)
    """An unchanged screen with no keys sent since the judge's last look is shown to it again only
    after this long (with the hint "identical screen, no keys sent"); until then its last verdict
    stands, so rechecks of a quiet pane cost nothing and an escalation is not repeated."""
    timeout_s: float = Field(30.0, gt=0)
    """Per-attempt HTTP timeout."""
    deadline_s: float = Field(60.0, gt=0)
    """All attempts of one consultation (retries and their waits included) end by then; then fail safe."""
    max_retries: int = Field(3, ge=0, le=20)
    """Retries after the first attempt (timeouts, 429, 5xx, connection errors, malformed tool calls)."""
    backoff_s: float = Field(1.0, ge=0)
    """First wait between attempts; doubles each retry (a 429's retry-after wins when longer)."""
    backoff_max_s: float = Field(20.0, ge=0)
    """Longest wait between attempts (unless retry-after asks for more)."""
    budget_usd_per_run: float = Field(1.0, ge=0)
    """Spend limit per run; beyond it the judge is not called and the screen is escalated."""
    budget_usd_per_day: float = Field(10.0, ge=0)
    """Spend limit per UTC day across every run on this machine (persisted under the home)."""
    prices: dict[str, JudgePrice] = Field(default_factory=default_judge_prices)
    """USD per million tokens by model id or prefix; ``*`` for any other model. Entries here win
    over the built-in table, which still prices models this table leaves out."""
    scorer_prompt_version: str = "pairwise-v1"
    """System prompt of the pairwise LLM scorer used by blind compare (``--scorer llm``)."""


class Templates(_P):
    """Text of instructions handed to the agent (HandoffInstructions)."""

    next_step: str = "Continue with the next step: {step_id}: {objective}"
    retry: str = "The verifier for step {step_id} failed. Fix it and try again.\n\nVerifier output:\n{output}"
    branch: str = "Take branch {branch}: {objective}"
    unblock: str = ("No human has answered yet about step {step_id} ({reason}). Re-read the plan, try another way "
                    "to reach the objective ({objective}), and report a new checkpoint. If you still cannot go on, "
                    "report status: blocked with exactly what you need.")
    """``pause.mode: notify_then_ai``: handed to the agent when nobody answered a pause in time."""


class Policy(_P):
    """Every tunable knob of the supervisor."""

    format_version: int = POLICY_FORMAT_VERSION
    name: str = "unnamed"
    description: str = ""
    classifier: ClassifierRules = Field(default_factory=ClassifierRules)
    answers: AnswerRules = Field(default_factory=AnswerRules)
    timing: Timing = Field(default_factory=Timing)
    budgets: Budgets = Field(default_factory=Budgets)
    pause: PauseHandling = Field(default_factory=PauseHandling)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    templates: Templates = Field(default_factory=Templates)
    commands: CommandKnowledge = Field(default_factory=CommandKnowledge)
    """The command judgment's table: what each program does (see :class:`CommandKnowledge`)."""
    supervision: Supervision = Field(default_factory=Supervision)
    agents: dict[AgentName, AgentProfile] = Field(default_factory=dict)
    """What is known about each agent CLI, by name (``shell`` is a plain shell). Order matters: the
    first agent whose screen marker shows names the screen."""
    interpreters: list[str] = Field(default_factory=list)
    """Programs that run an agent rather than being one (``node``, ``python3``, ``npx``, ``uvx``): for
    these, the words after them say which agent runs (``agents.<name>.commands``/``packages``)."""
    parent: str | None = None
    """The policy this one was resolved from (its file's ``extends:``): lineage only, not part of the id."""

    @property
    def policy_id(self) -> str:
        return policy_id(self)

    def canonical(self) -> dict[str, Any]:
        """The resolved content the id hashes (name, description and lineage excluded)."""
        return self.model_dump(mode="json", exclude={"name", "description", "parent"})


_IDS: dict[bytes, str] = {}
"""Policy ids by a digest of the policy's serialised content: the canonical form the id hashes (its
keys sorted) takes ten times as long to make as pydantic's own serialisation, and the id is asked for
often (every run, replay, registry look-up). A policy changed in any way serialises differently, so
a stale id is never returned."""


def policy_id(policy: Policy) -> str:
    raw = policy.model_dump_json(exclude={"name", "description", "parent"})
    key = hashlib.blake2b(raw.encode(), digest_size=20).digest()
    known = _IDS.get(key)
    if known is not None:
        return known
    blob = json.dumps(policy.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    pid = "pol_" + hashlib.sha256(blob.encode()).hexdigest()[:16]
    if len(_IDS) >= 4096:
        _IDS.clear()
    _IDS[key] = pid
    return pid


PolicyResolver = Callable[[str, str], "Policy"]
"""Turns an ``extends:`` reference (and the file that names it) into the resolved parent policy."""

# How a child's lists merge into its parent's (see README "Policies extend the baseline"):
# named entries replace the parent's entry of the same name; sequences are replaced whole; every
# other list is extended (the child's entries first, then the parent's not already there).
_NAMED_LISTS = (("answers", "rules"), ("answers", "danger_patterns"), ("classifier", "blocker_patterns"),
                ("answers", "write_risk", "paths"))
_SEQUENCES = (("timing", "backoff_s"), ("agents", "*", "exit_keys"), ("agents", "*", "commands"))
_SAFETY_LISTS = (("answers", "danger_patterns"), ("answers", "always_escalate"))
_MOVED = {"exit_commands": "agents.<name>.exit_keys", "classifier.agent_markers": "agents.<name>.markers"}


def _at_path(path: tuple[str, ...], table: tuple[tuple[str, ...], ...]) -> bool:
    return any(len(t) == len(path) and all(a in ("*", b) for a, b in zip(t, path, strict=True)) for t in table)


def _entry_key(entry: Any) -> Any:
    """What identifies an entry of a named list (its name), or the entry itself."""
    if isinstance(entry, dict) and entry.get("name"):
        return entry["name"]
    return json.dumps(entry, sort_keys=True) if isinstance(entry, dict) else entry


def _merge(parent: Any, child: Any, path: tuple[str, ...] = ()) -> Any:
    """The child's content over its parent's. Mappings merge key by key (a new agent goes before the
    parent's agents, so its markers are tried first; other new keys go after); lists as above."""
    if isinstance(parent, dict) and isinstance(child, dict):
        new = [k for k in child if k not in parent]
        order = new + list(parent) if path == ("agents",) else list(parent) + new
        return {k: (_merge(parent[k], child[k], (*path, k)) if k in parent and k in child
                    else child[k] if k in child else parent[k]) for k in order}
    if isinstance(parent, list) and isinstance(child, list) and not _at_path(path, _SEQUENCES) and not (
            path[:1] == ("commands",) and path[-1] in ("args", "does", "also", "arg_patterns")):
        # (a command's argument roles and effects are replaced whole: an entry says all it does)
        if _at_path(path, _NAMED_LISTS):
            mine = {_entry_key(c) for c in child}
            return child + [p for p in parent if _entry_key(p) not in mine]
        return child + [p for p in parent if p not in child]
    return child


def _remove(parent: Any, spec: Any, path: tuple[str, ...], source: str) -> Any:
    """The parent's content without the entries ``remove:`` names (every one must exist)."""
    where = "remove." + ".".join(path) if path else "remove"
    if isinstance(spec, dict) and isinstance(parent, dict):
        out = dict(parent)
        for k, v in spec.items():
            if k not in out:
                raise PolicyError(f"{source}: {where}.{k}: the parent policy has no {k!r} to remove from",
                                  "name only entries the parent has (see candidates/baseline.yaml)")
            out[k] = _remove(out[k], v, (*path, str(k)), source)
        return out
    if isinstance(spec, list) and isinstance(parent, dict):
        for k in spec:
            if k not in parent:
                raise PolicyError(f"{source}: {where}: the parent policy has no {k!r}",
                                  "name only entries the parent has (see candidates/baseline.yaml)")
        return {k: v for k, v in parent.items() if k not in spec}
    if isinstance(spec, list) and isinstance(parent, list):
        named = _at_path(path, _NAMED_LISTS)
        keys = [(_entry_key(p) if named else p) for p in parent]
        for item in spec:
            if item not in keys:
                raise PolicyError(f"{source}: {where}: the parent policy has no entry {item!r}",
                                  "name entries exactly as the parent has them (by name for rules, "
                                  "danger and blocker patterns; the pattern text otherwise)")
        return [p for p, k in zip(parent, keys, strict=True) if k not in spec]
    raise PolicyError(f"{source}: {where} must be a list of the entries to remove, or a mapping of them",
                      "e.g. remove: {answers: {danger_patterns: [sudo]}}")


def _check_safety_overrides(parent: dict[str, Any], child: dict[str, Any], source: str) -> None:
    """A child may add safety entries, never weaken one of its parent's by redefining it under the
    same name: relaxing safety takes an explicit ``remove:``."""
    answers, mine = parent.get("answers", {}), child.get("answers") or {}
    for where, theirs_list, my_list in (
            ("danger_patterns", answers.get("danger_patterns", []), mine.get("danger_patterns") or []),
            ("write_risk.paths", answers.get("write_risk", {}).get("paths", []),
             (mine.get("write_risk") or {}).get("paths") or [])):
        theirs = {d.get("name"): d for d in theirs_list}
        for d in my_list:
            if isinstance(d, dict) and d.get("name") in theirs and _canon(d, "danger") != theirs[d["name"]]:
                raise PolicyError(f"{source}: answers.{where}: {d['name']!r} redefines the parent's entry of that "
                                  "name", f"remove it explicitly (remove: answers: {where}: [{d['name']}]) and add "
                                  "yours, or give yours another name")


def _canon(entry: dict[str, Any], what: str) -> dict[str, Any]:
    return DangerPattern.model_validate(entry).model_dump(mode="json") if what == "danger" else entry


def safety_problems(policy: Policy) -> list[str]:
    """Why a resolved policy is unsafe to load: each safety list that is empty."""
    out = []
    if not policy.answers.danger_patterns:
        out.append("answers.danger_patterns is empty")
    if not policy.answers.always_escalate:
        out.append("answers.always_escalate is empty")
    return out


def safety_relaxations(policy: Policy, reference: Policy | None = None) -> list[str]:
    """What ``policy`` relaxes relative to ``reference`` (default: the shipped baseline), by name:
    danger patterns and always-escalate entries it lacks, danger patterns it made ``low``, and
    answer rules that set an ``allow_*`` knob. For reports and gates."""
    ref = reference if reference is not None else baseline_policy()
    out: list[str] = []
    mine = {d.name: d for d in policy.answers.danger_patterns}
    for d in ref.answers.danger_patterns:
        if d.name not in mine:
            out.append(f"danger pattern removed: {d.name}")
        elif mine[d.name].pattern != d.pattern:
            out.append(f"danger pattern changed: {d.name}")
        elif d.level == "dangerous" and mine[d.name].level != "dangerous":
            out.append(f"danger pattern lowered to {mine[d.name].level}: {d.name}")
    mine_paths = {d.name: d for d in policy.answers.write_risk.paths}
    for d in ref.answers.write_risk.paths:
        if d.name not in mine_paths or mine_paths[d.name].pattern != d.pattern:
            out.append(f"write-risk path {'removed' if d.name not in mine_paths else 'changed'}: {d.name}")
    order = {"none": 0, "low": 1, "unknown": 2, "dangerous": 3}
    if order[policy.answers.write_risk.outside_project] < order[ref.answers.write_risk.outside_project]:
        out.append(f"write_risk.outside_project lowered to {policy.answers.write_risk.outside_project}")
    for pat in ref.answers.always_escalate:
        if pat not in policy.answers.always_escalate:
            out.append(f"always_escalate removed: {pat}")
    out += _command_relaxations(policy.commands, ref.commands)
    theirs_rules = {r.name: r for r in ref.answers.rules}
    for r in policy.answers.rules:
        if theirs_rules.get(r.name) == r:
            continue  # the reference's own rule, unchanged
        for knob in ("allow_dangerous", "allow_default_no", "allow_persistent"):
            if getattr(r, knob):
                out.append(f"rule {r.name}: {knob}")
    return out


def _command_relaxations(mine: CommandKnowledge, ref: CommandKnowledge) -> list[str]:
    """What a command table relaxes against the reference's: an entry the reference has that now says
    something else (its effects, roles or options), an effect rated lower, fewer secrets or unsafe
    variables, more harmless reads, recoverable or scratch places. A program the reference does not
    know is not a relaxation: the gate's command suites judge what the new entry approves."""
    order = {"none": 0, "low": 1, "unknown": 2, "dangerous": 3}
    out = [f"command knowledge changed: {name}" for name, spec in ref.programs.items()
           if name in mine.programs and mine.programs[name] != spec]
    out += [f"commands.effects.{e} lowered to {lvl}" for e, lvl in mine.effects.items()
            if order[lvl] < order[ref.effects.get(e, "dangerous")]]
    for knob in ("secrets", "secret_urls", "unsafe_env"):
        out += [f"commands.{knob} removed: {x}" for x in getattr(ref, knob) if x not in getattr(mine, knob)]
    out += [f"commands.env_values added or changed: {v}" for v, rx in mine.env_values.items()
            if ref.env_values.get(v) != rx]
    out += [f"commands.not_local_services removed: {x}" for x in ref.not_local_services
            if x not in mine.not_local_services]
    for knob in ("harmless_reads", "recoverable", "scratch", "path_listers", "local_services"):
        out += [f"commands.{knob} added: {x}" for x in getattr(mine, knob) if x not in getattr(ref, knob)]
    for knob in ("path_listers_with", "line_filters"):
        # a new path lister or line filter, or more options for one: more lists piped into xargs placed
        out += [f"commands.{knob} added or widened: {name} {', '.join(o for o in opts if o not in getattr(ref, knob).get(name, []))}"
                for name, opts in getattr(mine, knob).items() if set(opts) - set(getattr(ref, knob).get(name, []))
                or name not in getattr(ref, knob)]
    for knob in ("project_programs", "project_program_args"):
        out += [f"commands.{knob} removed or changed: {x.pattern}" for x in getattr(ref, knob)
                if x not in getattr(mine, knob)]
        # the first pattern that matches decides: a new one saying "harmless" can shadow the reference's
        out += [f"commands.{knob} added without a risk: {x.pattern}" for x in getattr(mine, knob)
                if x not in getattr(ref, knob) and not x.unknown and not set(x.does) - {"none", "read", "run"}]
    if mine.git_restorable and not ref.git_restorable:
        out.append("commands.git_restorable turned on")
    return out


def default_resolver(ref: str, source: str) -> Policy:
    """``baseline``; a policy file (relative to the file that extends it); or a name under candidates/."""
    if ref == "baseline":
        return baseline_policy()
    base = Path(source).parent if source and not source.startswith("<") else Path.cwd()
    for cand in (base / ref, Path(ref), REPO_CANDIDATES / ref, REPO_CANDIDATES / f"{ref}.yaml",
                 REPO_CANDIDATES / ref / "policy.yaml"):
        if cand.is_file():
            return load_policy(cand)
    raise PolicyError(f"{source}: extends: {ref!r} is neither `baseline`, a policy file nor a candidate",
                      "use `extends: baseline` or a path to the parent policy file")


def _validate(data: dict[str, Any], root: Any, source: str) -> Policy:
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(format_validation(exc, root, source, whole="policy"),
                          "compare with candidates/baseline.yaml") from exc


def parse_policy(text: str, source: str = "<policy>", resolver: PolicyResolver | None = None) -> Policy:
    """Parse a policy file and resolve it against the policy it extends (``extends:``, default
    ``baseline``; ``none`` for a policy that stands alone). Errors name the file, the line or the
    field. Refuses a policy whose resolved safety lists are empty."""
    data, root = parse_yaml(text, source, PolicyError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: a policy must be a YAML mapping", "see candidates/baseline.yaml")
    for old, new in _MOVED.items():
        head, _, tail = old.partition(".")
        if (tail and isinstance(data.get(head), dict) and tail in data[head]) or (not tail and head in data):
            raise PolicyError(f"{source}: {old} moved to {new}", f"move each agent's entry under agents: ({new})")
    data = dict(data)
    extends = data.pop("extends", "baseline")
    remove = data.pop("remove", None)
    _validate(data, root, source)  # the file's own content, with its line numbers
    if extends in (None, "none"):
        if remove:
            raise PolicyError(f"{source}: remove: needs a parent policy (extends: none)", "drop remove: or extends: none")
        policy = _validate(data, root, source)
    else:
        parent = (resolver or default_resolver)(str(extends), source)
        base = parent.model_dump(mode="json", exclude={"parent"})
        for k in ("name", "description"):
            base.pop(k, None)
        if remove is not None:
            base = _remove(base, remove, (), source)
        _check_safety_overrides(base, data, source)
        merged = _merge(base, data)
        merged["parent"] = str(extends)
        policy = _validate(merged, None, source)
    problems = safety_problems(policy)
    if problems:
        raise PolicyError(f"{source}: unsafe policy: " + "; ".join(problems),
                          "extend the baseline (the default) and remove only the entries you mean to relax")
    return policy


def load_policy(path: str | Path, resolver: PolicyResolver | None = None) -> Policy:
    text = read_text(path, PolicyError, "policy file", "give a path to a policy YAML file")
    return parse_policy(text, str(path), resolver)


def policy_from_canonical(data: dict[str, Any], name: str = "stored") -> Policy:
    """A policy from its stored canonical content (``Policy.canonical()``): it stands alone."""
    return Policy.model_validate({**data, "name": name})


@functools.lru_cache(maxsize=1)
def baseline_policy() -> Policy:
    """The shipped default policy (``candidates/baseline.yaml``, packaged through the link ``supervisor/data/baseline.yaml``)."""
    text = resources.files("supervisor").joinpath("data/baseline.yaml").read_text(encoding="utf-8")
    return parse_policy(text, "supervisor/data/baseline.yaml")


def dump_policy(policy: Policy) -> str:
    """The resolved policy as YAML that stands alone (``extends: none``): loading it gives the same id."""
    data = {"extends": "none", **policy.model_dump(mode="json")}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
