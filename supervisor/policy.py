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
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from supervisor.errors import PolicyError
from supervisor.models import AgentName, BlockerKind, PromptKind, RiskLevel
from supervisor.yamlio import format_validation, parse_yaml, read_text

POLICY_FORMAT_VERSION = 1


class _P(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_regexes(values: list[str]) -> list[str]:
    for v in values:
        try:
            re.compile(f"(?:{v})")  # patterns of a list are combined as one alternation
        except re.error as exc:
            raise ValueError(f"bad regular expression {v!r}: {exc}") from exc
    return values


class BlockerPattern(_P):
    """A regex that marks a blocker of a kind when it matches a live line."""

    kind: BlockerKind
    pattern: str
    """Case-insensitive regular expression."""
    name: str = ""

    @field_validator("pattern")
    @classmethod
    def _valid(cls, v: str) -> str:
        _check_regexes([v])
        return v


class DangerPattern(_P):
    """A regex over what a prompt would approve (command, file, URL) that marks it risky."""

    name: str
    pattern: str
    """Case-insensitive regular expression matched against the subject and the question."""
    level: RiskLevel = "dangerous"

    @field_validator("pattern")
    @classmethod
    def _valid(cls, v: str) -> str:
        _check_regexes([v])
        return v


class ClassifierRules(_P):
    """What the classifier looks for. Patterns are case-insensitive regular expressions matched
    within one line (``^``/``$`` are the line's ends); ones that start with a literal word run
    fastest, and a pattern whose every match must contain some literal text is only tried on
    lines that hold it."""

    recent_lines: int = Field(40, ge=5, le=500)
    """How many lines from the bottom of the screen count as live."""
    busy_markers: list[str] = Field(default_factory=list)
    """Lines that mean the agent is working (spinners, "esc to interrupt")."""
    idle_markers: list[str] = Field(default_factory=list)
    """Lines that mean the agent waits for a new instruction (empty input box, shell prompt)."""
    prompt_patterns: list[str] = Field(default_factory=list)
    """Lines that mark a live interactive prompt ("Do you want to proceed?", "[y/N]")."""
    question_lead_words: list[str] = Field(default_factory=list)
    """Words that open a question to the user ("do you", "would you", "should I")."""
    blocker_patterns: list[BlockerPattern] = Field(default_factory=list)
    completion_markers: list[str] = Field(default_factory=list)
    """Lines that say a turn finished ("Worked for 7s", "Cooked for 1m")."""
    not_blocker_patterns: list[str] = Field(default_factory=list)
    """Lines that look like blockers but are not ("Approaching your usage limit")."""
    uncertain_below: float = Field(0.6, ge=0.0, le=1.0)
    """Observations less confident than this count as uncertain (the judge may be consulted)."""
    weak_busy_markers: list[str] = Field(default_factory=list)
    """Lines that suggest work ("Thinking...", "Processing...") but count only as the last lines of
    output, and lose to a completion marker below them."""
    menu_hints: list[str] = Field(default_factory=list)
    """Footer hints shown under a live menu ("Esc to cancel", "Enter to confirm", "↑/↓ to navigate")."""
    dialog_hints: list[str] = Field(default_factory=list)
    """Hints that by themselves, as the bottom line, mean a dialog waits for an answer
    ("Enter to confirm", "Tab to amend", "↑↓ select · enter submit")."""
    prompt_kinds: dict[PromptKind, list[str]] = Field(default_factory=dict)
    """Regexes over a prompt's question and header that give its kind; the first kind listed that
    matches wins (unmatched menus are ``numbered_menu``, unmatched y/n prompts ``yes_no``)."""
    approve_option: str = r"^(yes|allow|approve|accept|proceed|trust|run|continue|ok|confirm|apply)\b"
    """Regex over an option's label: choosing it approves the prompted action."""
    decline_option: str = r"^(no|deny|reject|decline|cancel|skip|quit|exit|abort|don'?t)\b"
    """Regex over an option's label: choosing it declines."""
    persistent_option: str = r"don'?t ask again|always|for this session|during this session|allow all|trust all"
    """Regex over an option's label: choosing it widens future permissions ("don't ask again")."""
    agent_markers: dict[AgentName, list[str]] = Field(default_factory=dict)
    """Regexes over the recent lines and the title that identify the agent (first agent listed wins)."""
    blocker_lines: int = Field(12, ge=1, le=200)
    """How many non-blank lines from the bottom a blocker message must be within to count as live."""

    @field_validator("busy_markers", "idle_markers", "prompt_patterns", "completion_markers", "not_blocker_patterns",
                     "weak_busy_markers", "menu_hints", "dialog_hints")
    @classmethod
    def _valid(cls, v: list[str]) -> list[str]:
        return _check_regexes(v)

    @field_validator("approve_option", "decline_option", "persistent_option")
    @classmethod
    def _valid_one(cls, v: str) -> str:
        _check_regexes([v])
        return v

    @field_validator("prompt_kinds", "agent_markers")
    @classmethod
    def _valid_map(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for pats in v.values():
            _check_regexes(pats)
        return v


AnswerThen = Literal["approve", "decline", "escalate", "keys", "option"]


class AnswerMatch(_P):
    """When an answer rule applies. Every given field must match; omitted fields match anything."""

    agents: list[AgentName] | None = None
    kinds: list[PromptKind] | None = None
    question: str | None = None
    """Regular expression over the prompt's question."""
    subject: str | None = None
    """Regular expression over what would be approved (command, file)."""
    option: str | None = None
    """Regular expression that some option's label must match."""
    risk: list[RiskLevel] | None = None
    """Risk levels the rule applies to (``dangerous`` prompts are escalated regardless unless the
    rule sets ``allow_dangerous``)."""

    @field_validator("question", "subject", "option")
    @classmethod
    def _valid(cls, v: str | None) -> str | None:
        if v is not None:
            _check_regexes([v])
        return v


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


class AnswerRules(_P):
    """How prompts are answered."""

    rules: list[AnswerRule] = Field(default_factory=list)
    always_escalate: list[str] = Field(default_factory=list)
    """Regular expressions over the question: these prompts always go to a human."""
    danger_patterns: list[DangerPattern] = Field(default_factory=list)
    escalate_free_text: bool = True
    """Questions that want typed text go to a human (or the judge)."""
    escalate_blockers: bool = True

    @field_validator("always_escalate")
    @classmethod
    def _valid(cls, v: list[str]) -> list[str]:
        return _check_regexes(v)


class Timing(_P):
    """Delays and timeouts, in seconds unless named otherwise."""

    settle_ms: int = Field(30, ge=0, le=10_000)
    """Wait this long after the last output before classifying (screens mid-redraw lie)."""
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
    display_message: bool = True
    """Show the pause on the pane with ``tmux display-message``."""
    display_ms: int = Field(10_000, ge=0)


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
    exit_commands: dict[str, list[str]] = Field(default_factory=dict)
    """Keys that make each agent exit (``--exit-on-finish``), e.g. ``claude: ["/exit", "Enter"]``."""

    @property
    def policy_id(self) -> str:
        return policy_id(self)

    def canonical(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude={"name", "description"})


def policy_id(policy: Policy) -> str:
    blob = json.dumps(policy.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "pol_" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def parse_policy(text: str, source: str = "<policy>") -> Policy:
    """Parse and validate policy YAML text; errors name the file, the line or the field."""
    data, root = parse_yaml(text, source, PolicyError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: a policy must be a YAML mapping", "see candidates/baseline.yaml")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(format_validation(exc, root, source, whole="policy"),
                          "compare with candidates/baseline.yaml") from exc


def load_policy(path: str | Path) -> Policy:
    text = read_text(path, PolicyError, "policy file", "give a path to a policy YAML file")
    return parse_policy(text, str(path))


@functools.lru_cache(maxsize=1)
def baseline_policy() -> Policy:
    """The shipped default policy."""
    text = resources.files("supervisor").joinpath("data/baseline.yaml").read_text(encoding="utf-8")
    return parse_policy(text, "supervisor/data/baseline.yaml")


def dump_policy(policy: Policy) -> str:
    return yaml.safe_dump(policy.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=120)
