"""The first-class objects of a supervised run, as pydantic models.

Everything persisted is one of these (or an event envelope around one), carries a
format version, and uses ``Literal`` aliases for its states. The judgment core
(``classify``, ``decide``) takes and returns these and nothing else.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

PaneState = Literal["busy", "asking", "blocked", "idle", "exited"]
"""What the pane is doing: working; waiting on a prompt; stuck on an error a human must
fix; nothing pending; the program (or pane) is gone."""

AgentName = str
"""Which agent's screen this is: a name from the policy's ``agents:`` section, ``shell`` (a plain
shell or a shell program's prompt) or ``unknown``. An open set: a new agent is a policy change."""

PromptKind = Literal[
    "yes_no",
    "numbered_menu",
    "trust_dialog",
    "tool_permission",
    "edit_approval",
    "free_text",
]
"""What kind of prompt is waiting. ``tool_permission``/``edit_approval`` are menus or y/n
prompts that approve an action (a command, an edit); ``trust_dialog`` is a first-run
workspace trust or settings dialog; ``free_text`` is a question the agent asks the user."""

RiskLevel = Literal["none", "low", "dangerous", "unknown"]
"""What approving a prompt would risk: ``none``/``low`` (a positively identified subject that no
danger pattern flags), ``dangerous`` (a danger pattern matched the dialog), ``unknown`` (no command,
path or URL could be identified: never approved automatically)."""

SubjectKind = Literal["command", "path", "url"]
"""What a prompt's subject is: a command to run, a file path to write or edit, a URL to fetch."""

InputStyle = Literal["digit", "letter", "letter_enter", "arrows", "enter", "text"]
"""How a prompt takes an answer (see ``Prompt.input_style``)."""

BlockerKind = Literal[
    "auth",
    "usage_limit",
    "rate_limit",
    "merge_conflict",
    "git_fatal",
    "missing_tool",
    "model_unavailable",
    "network",
    "other",
]

DecisionKind = Literal["wait", "answer", "continue", "verify", "retry", "branch", "escalate", "finish"]

EventKind = Literal[
    "run_started",
    "run_ended",
    "observation",
    "checkpoint",
    "decision",
    "action",
    "verification",
    "judge_call",
    "notification",
    "friction",
    "shadow_decision",
    "pause",
    "resume",
    "note",
    "answer_skipped",
    "turn_finished",
    "task",
]

FrictionKind = Literal[
    "repeated_prompt",
    "answer_not_taken",
    "escalation",
    "human_keystrokes",
    "stall",
    "retry",
    "manual",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Screen(_Model):
    """The normalized visible text of a pane at one moment. Content-addressed by ``screen_hash``."""

    text: str
    """Visible text: ANSI stripped, trailing blanks trimmed, one line per row."""
    width: int = 80
    """Pane width in columns."""
    height: int = 24
    """Pane height in rows."""
    cursor_x: int | None = None
    """Cursor column, when the surface knows it."""
    cursor_y: int | None = None
    """Cursor row, when the surface knows it."""
    title: str = ""
    """The pane title (agents set it with OSC sequences; Claude and Codex show a spinner there)."""
    current_command: str = ""
    """The pane's foreground command (``pane_current_command``)."""
    dead: bool = False
    """True when the pane's program has exited (``pane_dead``)."""
    scrollback: str = ""
    """A bounded slice of history above the visible area (may be empty)."""
    cwd: str = ""
    """The pane's working directory (tmux ``pane_current_path``; ``supervisor classify --cwd``):
    file writes and edits are judged by where their path lands relative to it. Empty: unknown."""
    highlights: tuple[tuple[int, int, int], ...] = ()
    """Reverse-video spans ``(row, first column, end column)`` in ``text``, found in raw ANSI input
    (``capture-pane -e``). Some agents (opencode) mark the selected option only this way; plain
    captures leave this empty. (A tuple, not a list with a default factory: screens are built on
    the hot path, and ``model_construct`` inspects a factory's signature on every call.)"""

    untrusted: tuple[tuple[int, str, str], ...] = ()
    """Rows of ``text`` whose text cannot be taken at its word: ``(row, why, the text concerned)``.
    ``hidden-text``: concealed cells, or drawn in their background's colour (blanked in ``text``, as
    the terminal shows them; the hidden text kept here); ``overwritten-text``: other text was written
    there first and drawn over, as the surface's shadow terminal saw (the text drawn over kept here).
    A dialog whose rows include one approves nothing automatically; the kept text is judged too."""

    @property
    def screen_hash(self) -> str:
        text = self.text
        if self.highlights:  # a moved selection is a different screen
            text += "\x00hl" + repr(self.highlights)
        if self.untrusted:  # the same letters, some of them hidden or drawn over: judged otherwise
            text += "\x00ut" + repr(self.untrusted)
        if self.cwd:  # the same edit prompt in another directory is judged differently
            text += "\x00cwd" + self.cwd
        return screen_hash(text, self.title, self.dead)


ACP_SCREEN = "\x1facp"
"""``Screen.current_command`` of a screen an ACP surface built from one protocol message (its text is
the message as JSON; see :mod:`supervisor.classify_acp`): ``classify`` reads such screens as messages.
tmux never reports a command holding ``\x1f`` (the field separator of the supervisor's pane format),
so no pane can pass for one."""


def screen_hash(text: str, title: str = "", dead: bool = False) -> str:
    h = hashlib.sha256()
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\x00" + title.encode("utf-8", "surrogatepass") + (b"\x00dead" if dead else b""))
    return h.hexdigest()[:32]


class PromptOption(_Model):
    """One answer a prompt offers."""

    index: int
    """0-based position in the menu as shown."""
    label: str
    """The option's text, e.g. ``Yes, and don't ask again for npm commands``."""
    key: str | None = None
    """The key that selects it directly (``1``, ``y``, ``p``), when there is one."""
    highlighted: bool = False
    """The option under the cursor (Enter picks it)."""
    approves: bool | None = None
    """True if choosing it approves the prompted action, False if it declines, None if neither."""
    persistent: bool = False
    """True for "don't ask again"/"always allow" options that widen future permissions."""


class CommandPart(_Model):
    """One simple command of a command subject, as the command judgment read it (``runs why`` shows these)."""

    text: str
    level: RiskLevel
    reason: str
    """Why this level, naming the part that decided (``redis-cli is not a known command``)."""
    rule: str
    """What decided: ``table:git status``, ``unknown-program``, ``write-outside-project``, a path rule."""


class RiskAssessment(_Model):
    """How dangerous it would be to approve what the prompt asks."""

    level: RiskLevel = "none"
    matched: list[str] = Field(default_factory=list)
    """Names of the policy's danger patterns that matched."""
    subject: str | None = None
    """The command, file or URL being approved, when the screen shows it."""
    subject_kind: SubjectKind | None = None
    """What ``subject`` is; None when no subject was positively identified (risk ``unknown``)."""
    reason: str | None = None
    """For a command judged ``unknown`` or ``dangerous``: the part that decided and why
    (```redis-cli FLUSHALL`: redis-cli is not a known command``)."""
    parts: list[CommandPart] = Field(default_factory=list)
    """For a command: each of its simple commands with its level and the rule that decided."""


class Prompt(_Model):
    """A live interactive prompt waiting for an answer."""

    kind: PromptKind
    question: str
    """The question line(s) as shown, joined with spaces."""
    options: list[PromptOption] = Field(default_factory=list)
    highlighted: int | None = None
    """Index of the highlighted option, if any."""
    default: int | None = None
    """Index of the option Enter would pick (the highlighted one, or ``[Y/n]``'s capital)."""
    default_approves: bool | None = None
    """Whether the default approves. A default that declines (``[y/N]``, ``❯ 2. No``) is never
    answered automatically unless a policy rule names the prompt explicitly."""
    input_style: InputStyle = "enter"
    """How this agent's prompt takes an answer: a digit selects at once; a letter selects at
    once; a letter then Enter (aider, shell ``[y/N]``); arrows then Enter; Enter only; typed text."""
    risk: RiskAssessment = Field(default_factory=RiskAssessment)
    signature: str = ""
    """A stable hash of kind, question and options: the same prompt shown again has the same one."""
    first_row: int | None = None
    """The first row (0-based, in ``Screen.text``) the live prompt occupies (its question or title)."""
    last_row: int | None = None
    """The last row (0-based, in ``Screen.text``) the live prompt occupies (its last option or hint)."""
    frame: str | None = None
    """The agent's dialog frame it fits (``AgentProfile.dialogs``, by name); None when the agent's
    grammar is not known, or when it has one and the prompt fits none of it (``risk.matched`` then
    says ``not-the-agent's-dialog``: never answered)."""
    whole: bool = False
    """Drawn whole by that frame: its footer under its options, nothing after it but what the frame
    allows, the cursor where the agent leaves it. Only such a dialog is answered before the settle
    time has passed (once no further output followed it for the pane's quiet window)."""


class Blocker(_Model):
    """An error a human must fix."""

    kind: BlockerKind
    message: str
    """The line that shows it."""
    retry_after: str | None = None
    """When the agent says the limit resets, as shown ("3pm (UTC)", "in 2 days")."""


class Observation(_Model):
    """What ``classify(screen, policy)`` concluded about one screen. Pure output: no ids or
    times of its own; the runner journals it as an ``observation`` event, whose
    ``event_id`` becomes ``observation_id``."""

    schema_version: int = SCHEMA_VERSION
    observation_id: str | None = None
    """Set by the runner once journaled; decisions point at it."""
    screen_hash: str
    state: PaneState
    agent: AgentName = "unknown"
    prompt: Prompt | None = None
    blocker: Blocker | None = None
    evidence: list[str] = Field(default_factory=list)
    """Short names of the rules that fired (``busy:esc-to-interrupt``, ``prompt:claude-menu``)."""
    confidence: float = 1.0
    """How sure the rules are (uncertain screens may be sent to the judge)."""
    policy_id: str | None = None
    checkpoint_blocks: list[str] = Field(default_factory=list)
    """Raw ``<checkpoint>…</checkpoint>`` blocks visible on the screen (parsed by the workflow layer)."""


class RunState(_Model):
    """What ``decide`` needs to know about the run so far. Maintained by the runner, passed in
    whole, so ``decide`` stays a pure function (``now`` is an input, not a clock read)."""

    run_id: str = ""
    now: float = 0.0
    """Seconds since the epoch at the moment of deciding."""
    started_at: float = 0.0
    last_output_at: float = 0.0
    """When the pane last produced output."""
    last_state: PaneState | None = None
    idle_streak: int = 0
    """Consecutive idle observations (finish needs ``policy.timing.finish_confirmations``)."""
    idle_confirmed_at: float | None = None
    """When the last idle observation that counted toward ``idle_streak`` was seen; a new one
    counts only ``policy.timing.recheck_s`` later."""
    busy_since: float | None = None
    last_prompt_signature: str | None = None
    answers_to_same_prompt: int = 0
    """How many times we answered the prompt with ``last_prompt_signature`` (the strike guard)."""
    last_answer_at: float | None = None
    interventions: int = 0
    """Automatic answers/instructions sent so far (budget: ``policy.budgets.max_interventions``)."""
    paused: bool = False
    pause_reason: str | None = None
    human_active_until: float = 0.0
    """Until then a human is typing in the pane: do not fight them."""
    cooldown_until: float = 0.0
    """Per-pane cooldown after an answer that did not take."""
    escalated_signature: str | None = None
    """The prompt/blocker we already escalated (not escalated twice)."""
    stalls: int = 0
    finished: bool = False
    saw_work: bool = False
    """True once the agent has been busy or answered a prompt in this run (finish needs it)."""


class Decision(_Model):
    """What to do about an observation (or checkpoint). Every decision names its trigger."""

    schema_version: int = SCHEMA_VERSION
    decision_id: str | None = None
    kind: DecisionKind
    keys: list[str] = Field(default_factory=list)
    """tmux key names to send, in order (``1``, ``y``, ``Enter``, ``Down``)."""
    text: str | None = None
    """Literal text to paste (a HandoffInstruction's body), sent before ``keys``."""
    approves: bool | None = None
    """True when the keys approve the prompted action, False when they decline, None otherwise."""
    reason: str
    confidence: float = 1.0
    trigger_id: str | None = None
    """The observation or checkpoint event id that triggered this decision."""
    rule: str | None = None
    """The policy rule that chose it."""
    next_action: str | None = None
    """For ``escalate``: the exact thing a human should do next."""
    policy_id: str | None = None
    source: Literal["rules", "judge", "human", "workflow"] = "rules"
    signature: str | None = None
    """The prompt's or blocker's signature this decision is about (the runner keeps it as
    ``RunState.escalated_signature`` after an escalation, so the same thing is not escalated twice)."""


class Action(_Model):
    """Something the supervisor did to the pane, linked to its decision. Journaled as intent
    (``delivered=False``) before sending and again once delivered."""

    schema_version: int = SCHEMA_VERSION
    action_id: str | None = None
    decision_id: str | None = None
    kind: Literal["send_keys", "paste", "display_message", "exit_agent", "handoff", "task"] = "send_keys"
    keys: list[str] = Field(default_factory=list)
    text: str | None = None
    pane_id: str | None = None
    delivered: bool = False
    confirmed: bool | None = None
    """Whether the screen changed as expected afterwards (None: not checked yet)."""
    error: str | None = None


class Friction(_Model):
    """A signal of wasted human or agent time."""

    kind: FrictionKind
    detail: str = ""
    seconds_lost: float | None = None
    author: str = "supervisor"


class Event(_Model):
    """One journal line. ``payload`` is a model dumped to JSON-able data."""

    event_id: str
    run_id: str
    seq: int
    kind: EventKind
    at: float
    """Seconds since the epoch."""
    payload: dict[str, Any] = Field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
