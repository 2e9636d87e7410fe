"""Suites: named sets of cases, each an input and the result a careful human supervisor wants.

A suite is a YAML file (a header plus ``cases:``) or a JSONL file (an optional header line
with ``suite:``, then one case per line) under ``suites/``. Three case kinds:

- ``screen``: a pane capture (inline text or a file relative to the suite) with optional
  size, title and run-state overrides -> expected state / agent / prompt kind / decision /
  keys / approves / blocker / risk;
- ``gate``: a sequence of checkpoints with a workflow spec and verifier results -> the
  expected workflow decision;
- ``episode``: a script for the scripted demo agent, run for real in tmux -> the expected
  outcome (finished / escalated), interventions and friction.

Only fields given in ``expected`` are checked. Every validation error is reported as one
line naming the file, the line, the case id and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from supervisor.errors import SuiteError
from supervisor.models import (
    AgentName,
    BlockerKind,
    DecisionKind,
    FrictionKind,
    PaneState,
    PromptKind,
    RiskLevel,
)
from supervisor.yamlio import SafeLoader, read_text, yaml_error

SUITE_FORMAT_VERSION = 1
CaseKind = Literal["screen", "gate", "episode"]
EpisodeOutcome = Literal["finished", "escalated", "exited", "stalled", "timeout"]

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SUITES_DIR = REPO_ROOT / "suites"


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- screen cases


class ScreenInput(_M):
    """A pane capture and what the surface would know besides the text."""

    text: str | None = None
    """The capture, inline (plain text or with ANSI escapes)."""
    file: str | None = None
    """A capture file, relative to the suite file (``captures/claude/trust.txt``)."""
    width: int = Field(120, ge=10, le=1000)
    """Pane width in columns."""
    height: int = Field(40, ge=3, le=1000)
    """Pane height in rows."""
    title: str = ""
    """The pane title (OSC), e.g. a spinner glyph while working."""
    current_command: str = ""
    """The pane's foreground command."""
    dead: bool = False
    """The pane's program has exited."""
    cwd: str = ""
    """The pane's working directory (tmux ``pane_current_path``): writes are judged by where they land."""
    run_state: dict[str, Any] = Field(default_factory=dict)
    """Overrides of a fresh :class:`supervisor.models.RunState` (``idle_streak``, ``saw_work``,
    ``paused``...). Times are relative: ``now`` defaults to 1000.0."""

    @model_validator(mode="after")
    def _one_source(self) -> ScreenInput:
        if (self.text is None) == (self.file is None):
            raise ValueError("give exactly one of `text` or `file`")
        return self

    @field_validator("run_state")
    @classmethod
    def _known_fields(cls, v: dict[str, Any]) -> dict[str, Any]:
        from supervisor.models import RunState

        unknown = sorted(set(v) - set(RunState.model_fields))
        if unknown:
            raise ValueError(f"unknown run_state field(s) {', '.join(unknown)}")
        return v


def _as_key_options(v: Any) -> Any:
    """``keys: ["1"]`` means one acceptable sequence; ``keys: [["1"], ["Enter"]]`` several;
    ``keys: []`` means no keys at all."""
    if v == []:
        return [[]]
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return [v]
    if isinstance(v, str):
        return [[v]]
    return v


class ScreenExpected(_M):
    """What a careful supervisor concludes and does on this screen. Only given fields count."""

    state: PaneState | None = None
    agent: AgentName | list[AgentName] | None = None
    """The agent, or several acceptable ones."""
    prompt_kind: PromptKind | list[PromptKind] | None = None
    """The live prompt's kind (or acceptable kinds); ``null`` means no live prompt."""
    decision: DecisionKind | None = None
    """What to do in a fresh run (or under ``input.run_state``)."""
    keys: list[list[str]] | None = None
    """Acceptable key sequences; any one of them passes."""
    approves: bool | None = None
    """True: the answer approves; False: it declines; null: nothing is answered."""
    blocker: BlockerKind | None = None
    risk: RiskLevel | None = None
    """The risk level of what the prompt would approve."""
    next_action_contains: list[str] | None = None
    """Pause UX: an escalation must tell the human what to do; each string must appear
    (case-insensitive) in the decision's ``next_action``."""

    @field_validator("next_action_contains", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("keys", mode="before")
    @classmethod
    def _keys(cls, v: Any) -> Any:
        return _as_key_options(v)


# --------------------------------------------------------------------------- gate cases


class GateInput(_M):
    """A workflow moment: the spec, the checkpoints the agent emitted, what the verifiers said."""

    spec: dict[str, Any] | None = None
    """A workflow spec inline (the WorkflowSpec YAML as a mapping)."""
    spec_file: str | None = None
    """Or a spec file relative to the suite."""
    checkpoints: list[dict[str, Any]] = Field(default_factory=list)
    """Checkpoint bodies in order (``status``, ``current_node``, ``summary``, ``evidence``...), or raw
    block text as ``{raw: "..."}`` when the case tests parsing. The last one is graded."""
    verifier_results: list[dict[str, Any]] = Field(default_factory=list)
    """Verifier outcomes (``verifier``, ``passed``, ``node``, ``detail``; ``checkpoint``: the 1-based
    checkpoint they belong to, default the last)."""
    workflow_state: dict[str, Any] = Field(default_factory=dict)
    """Overrides of a fresh ``WorkflowState`` (``nodes``, ``interventions``, ``finished``...)."""

    @model_validator(mode="after")
    def _spec_source(self) -> GateInput:
        if (self.spec is None) == (self.spec_file is None):
            raise ValueError("give exactly one of `spec` or `spec_file`")
        return self


class GateExpected(_M):
    decision: DecisionKind
    """The workflow decision (``finish``, ``retry``, ``continue``, ``escalate``, ``branch``...)."""
    step_id: str | None = None
    """The step the decision concerns, when it matters."""
    reason_contains: str | None = None


# --------------------------------------------------------------------------- episode cases


class HumanStep(_M):
    """Something a human does in the agent's pane during an episode (keys sent with tmux from
    outside the supervisor, as a person at another terminal would)."""

    after: str
    """When: once the scripted agent has recorded this event (``done``, ``prompt_shown:p1``, ``answer:p1``,
    ``say:Anything else``: an event name, optionally ``:`` a prompt or line id or a piece of said text)."""
    delay_s: float = Field(0.5, ge=0, le=120)
    """How long after that event the human starts."""
    type: str = ""
    """Text typed one character at a time (``key_interval_s`` apart)."""
    key_interval_s: float = Field(0.15, ge=0, le=10)
    pause_s: float = Field(0.0, ge=0, le=120)
    """A thinking pause after typing ``type`` and before ``then_type``."""
    then_type: str = ""
    keys: list[str] = Field(default_factory=list)
    """tmux key names sent at the end (``Enter``)."""


class EpisodeInput(_M):
    """A scripted-agent episode played for real in tmux under the supervisor."""

    script: dict[str, Any] | None = None
    """The demo agent's script inline."""
    script_file: str | None = None
    timeout_s: float = Field(60.0, gt=0, le=900)
    supervisor_args: list[str] = Field(default_factory=list)
    """Extra ``supervisor run`` arguments."""
    human: list[HumanStep] = Field(default_factory=list)
    """A human at the keyboard: what they type into the pane, and when."""

    @model_validator(mode="after")
    def _script_source(self) -> EpisodeInput:
        if (self.script is None) == (self.script_file is None):
            raise ValueError("give exactly one of `script` or `script_file`")
        return self


class EpisodeExpected(_M):
    outcome: EpisodeOutcome
    interventions: int | None = None
    """Exact number of automatic answers/instructions, when it matters."""
    max_interventions: int | None = None
    friction: list[FrictionKind] | None = None
    """Friction kinds that must be recorded (others may be too)."""
    keys_received: list[str] | None = None
    """What the scripted agent must have received, in order."""
    escalate: list[str] | None = None
    """Prompt ids a human must answer: the supervisor answering any of them is unsafe."""
    max_stray_keys: int | None = 0
    """Keys the supervisor may send while no prompt is live (the human's own keys do not count;
    ``--exit-on-finish``'s exit command counts only when it lands on a line a human is typing)."""


# --------------------------------------------------------------------------- cases


class _CaseBase(_M):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/~+-]*$")
    """Unique within the suite; stable across edits (results are joined on it)."""
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    severity: float = Field(1.0, gt=0, le=100)
    """Weight in the pass rate (a dangerous approval case weighs more than a cosmetic one)."""
    must_pass: bool = False
    """No candidate may break this case."""
    origin: str | None = None
    """For synthetic variants: the golden case id it came from."""
    origin_hash: str | None = None
    """For synthetic variants: the golden case's content hash when it was expanded (a changed
    origin makes the variant stale: the expanded suite is refused until regenerated)."""
    transform: str | None = None
    """For synthetic variants: the transform(s) that made it."""
    seed: int | None = None
    """For synthetic variants: the expansion seed."""
    note: str = ""
    """Why the expectation is what it is (for reviewers)."""


class ScreenCase(_CaseBase):
    kind: Literal["screen"] = "screen"
    input: ScreenInput
    expected: ScreenExpected


class GateCase(_CaseBase):
    kind: Literal["gate"] = "gate"
    input: GateInput
    expected: GateExpected


class EpisodeCase(_CaseBase):
    kind: Literal["episode"] = "episode"
    input: EpisodeInput
    expected: EpisodeExpected


Case = Annotated[ScreenCase | GateCase | EpisodeCase, Field(discriminator="kind")]


class SuiteHeader(_M):
    suite: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    format_version: int = SUITE_FORMAT_VERSION
    version: int = 1
    """Bumped by hand when expectations change meaningfully."""
    description: str = ""
    kind: CaseKind = "screen"
    """Default kind of the cases."""
    defaults: dict[str, Any] = Field(default_factory=dict)
    """Default ``tags`` (added to every case), ``severity``, and ``input`` fields (``width``...)."""
    origin_suite: str | None = None
    """For expanded suites: the golden suite they came from."""
    seed: int | None = None
    variants_per_case: int | None = None
    origin_hash: str | None = None
    """For expanded suites: the content hash of the golden suite at expansion time."""


@dataclass
class Suite:
    """A loaded, validated suite."""

    header: SuiteHeader
    cases: list[ScreenCase | GateCase | EpisodeCase]
    path: Path
    content_hash: str
    """sha256 of the file bytes (first 16 hex): the suite's exact identity in results."""
    lines: dict[str, int] = field(default_factory=dict)
    """Case id -> line in the file."""

    @property
    def name(self) -> str:
        return self.header.suite

    @property
    def version(self) -> int:
        return self.header.version

    @property
    def kinds(self) -> set[str]:
        return {c.kind for c in self.cases}

    @property
    def expanded(self) -> bool:
        return self.header.origin_suite is not None

    def read_capture(self, rel: str) -> str:
        p = (self.path.parent / rel).resolve()
        try:
            return p.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            raise SuiteError(f"{self.path}: capture file {rel} cannot be read: {exc.strerror}",
                             "fix the path; it is relative to the suite file") from exc

    def screen_text(self, case: ScreenCase) -> str:
        if case.input.text is not None:
            return case.input.text
        assert case.input.file is not None
        return self.read_capture(case.input.file)


# --------------------------------------------------------------------------- loading


class _LineLoader(SafeLoader):
    """A safe loader that remembers the line of every mapping and of each of its keys."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[str, Any]:
    mapping: dict[str, Any] = {str(k): v for k, v in loader.construct_mapping(node, deep=True).items()}
    mapping["__line__"] = node.start_mark.line + 1
    mapping["__keylines__"] = {
        k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)
    }
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _strip_lines(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_lines(v) for k, v in obj.items() if k not in ("__line__", "__keylines__")}
    if isinstance(obj, list):
        return [_strip_lines(v) for v in obj]
    return obj


def _line_of(obj: Any, loc: tuple[Any, ...], fallback: int | None) -> int | None:
    """The line of the deepest key of ``loc`` that the YAML loader recorded."""
    line = fallback
    cur = obj
    for part in loc:
        if isinstance(cur, dict):
            kl = cur.get("__keylines__", {})
            if part in kl:
                line = kl[part]
            if part in cur:
                cur = cur[part]
                if isinstance(cur, dict) and "__line__" in cur:
                    line = cur["__line__"]
                continue
            break
        if isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            cur = cur[part]
            if isinstance(cur, dict) and "__line__" in cur:
                line = cur["__line__"]
            continue
        break
    return line


_KIND_TAGS = {"screen", "gate", "episode"}


def _first_error(exc: ValidationError) -> tuple[tuple[Any, ...], str]:
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    # Drop the discriminator tag pydantic inserts (``cases.0.screen.input``).
    loc = tuple(p for i, p in enumerate(loc) if not (p in _KIND_TAGS and i == 0))
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif err["type"] == "missing":
        msg = "field required"
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return loc, msg


def _apply_defaults(raw: dict[str, Any], header: SuiteHeader) -> dict[str, Any]:
    case = dict(raw)
    case.setdefault("kind", header.kind)
    d = header.defaults
    if "tags" in d:
        case["tags"] = list(dict.fromkeys([*d["tags"], *case.get("tags", [])]))
    if "severity" in d:
        case.setdefault("severity", d["severity"])
    if isinstance(d.get("input"), dict) and isinstance(case.get("input"), dict):
        inp = dict(case["input"])
        for k, v in d["input"].items():
            inp.setdefault(k, v)
        case["input"] = inp
    return case


def _validate_case(raw: Any, header: SuiteHeader, src: str, line: int | None) -> ScreenCase | GateCase | EpisodeCase:
    where = f"{src}:{line}" if line else src
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: a case must be a mapping, got {type(raw).__name__}",
                         "see suites/README.md for the case format")
    cid = raw.get("id", "?")
    clean = _apply_defaults(_strip_lines(raw), header)
    try:
        return _CASE_ADAPTER.validate_python(clean)
    except ValidationError as exc:
        loc, msg = _first_error(exc)
        if loc and loc[0] in ("screen", "gate", "episode"):
            loc = loc[1:]
        fline = _line_of(raw, loc, line)
        where = f"{src}:{fline}" if fline else src
        fieldname = ".".join(str(p) for p in loc) or "(case)"
        more = len(exc.errors()) - 1
        extra = f" (+{more} more)" if more > 0 else ""
        raise SuiteError(f"{where}: case {cid!r}: {fieldname}: {msg}{extra}",
                         "see suites/README.md for the case format") from exc


_CASE_ADAPTER: TypeAdapter[Any] = TypeAdapter(Case)


def _header_from(data: dict[str, Any], src: str, path: Path) -> SuiteHeader:
    hdr = {k: v for k, v in _strip_lines(data).items() if k != "cases"}
    hdr.setdefault("suite", path.name.split(".")[0])
    try:
        return SuiteHeader.model_validate(hdr)
    except ValidationError as exc:
        loc, msg = _first_error(exc)
        line = _line_of(data, loc, None)
        where = f"{src}:{line}" if line else src
        raise SuiteError(f"{where}: suite header: {'.'.join(map(str, loc))}: {msg}",
                         "see suites/README.md for the suite format") from exc


def parse_suite(text: str, path: Path) -> Suite:
    """Parse and validate one suite file's text; errors are one line with file, line, case, field."""
    src = str(path)
    content_hash = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    cases: list[ScreenCase | GateCase | EpisodeCase] = []
    lines: dict[str, int] = {}
    if path.suffix == ".jsonl":
        header = SuiteHeader(suite=path.name.split(".")[0])
        raw_cases: list[tuple[Any, int]] = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SuiteError(f"{src}:{n}: not valid JSON: {exc.msg} (column {exc.colno})",
                                 "each line must be one JSON object") from exc
            if isinstance(obj, dict) and "suite" in obj and "id" not in obj:
                if cases or raw_cases:
                    raise SuiteError(f"{src}:{n}: suite header must be the first line", "move it to the top")
                header = _header_from(obj, src, path)
                continue
            raw_cases.append((obj, n))
        for obj, n in raw_cases:
            case = _validate_case(obj, header, src, n)
            _add_case(cases, lines, case, src, n)
    else:
        try:
            data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError as exc:
            raise yaml_error(exc, src, SuiteError) from exc
        if not isinstance(data, dict):
            raise SuiteError(f"{src}: a suite must be a YAML mapping with `suite:` and `cases:`",
                             "see suites/README.md")
        header = _header_from(data, src, path)
        raw_list = data.get("cases")
        if not isinstance(raw_list, list) or not raw_list:
            line = data.get("__keylines__", {}).get("cases")
            raise SuiteError(f"{src}{':' + str(line) if line else ''}: `cases:` must be a non-empty list",
                             "add at least one case")
        for raw in raw_list:
            at: int | None = raw.get("__line__") if isinstance(raw, dict) else None
            case = _validate_case(raw, header, src, at)
            _add_case(cases, lines, case, src, at)
    return Suite(header=header, cases=cases, path=path, content_hash=content_hash, lines=lines)


def _add_case(cases: list[Any], lines: dict[str, int], case: Any, src: str, n: int | None) -> None:
    if case.id in lines:
        raise SuiteError(f"{src}:{n}: case {case.id!r}: duplicate id (first at line {lines[case.id]})",
                         "give every case a unique id")
    lines[case.id] = n or 0
    cases.append(case)


def load_suite_file(path: str | Path, *, check_origin: bool = True) -> Suite:
    """Load and validate a suite file. An expanded suite is checked against its golden suite (beside
    its folder): variants of origin cases that changed since are refused."""
    p = Path(path)
    text = read_text(p, SuiteError, "suite file", "run `supervisor eval list` to see the suites")
    suite = parse_suite(text, p)
    if check_origin and suite.expanded:
        from evals.expand import check_origins

        origin = suite.header.origin_suite
        golden = next((f for f in suite_files(p.parent.parent) if suite_name_of(f) == origin), None)
        if golden is None:
            raise SuiteError(f"{p}: its golden suite {origin!r} is not in {p.parent.parent}",
                             "delete the expanded file, or put the golden suite back")
        check_origins(suite, load_suite_file(golden, check_origin=False))
    return suite


def suite_files(root: Path | None = None, *, include_expanded: bool = False) -> list[Path]:
    root = root or DEFAULT_SUITES_DIR
    files = sorted(p for p in root.glob("*") if p.suffix in (".yaml", ".yml", ".jsonl") and p.is_file())
    if include_expanded and (root / "expanded").is_dir():
        files += sorted(p for p in (root / "expanded").glob("*.jsonl"))
    return files


def suite_name_of(path: Path) -> str:
    """The name a suite file is known by: its stem (``claude``, ``expanded/claude.s7``)."""
    stem = path.name.rsplit(".", 1)[0]
    return f"expanded/{stem}" if path.parent.name == "expanded" else stem


def iter_suites(root: Path | None = None, *, include_expanded: bool = False) -> Iterator[Suite]:
    for p in suite_files(root, include_expanded=include_expanded):
        yield load_suite_file(p)


def resolve_suites(spec: str, root: Path | None = None) -> list[Suite]:
    """``all``, a suite name, a comma list of names, or a path to a suite file."""
    root = root or DEFAULT_SUITES_DIR
    if spec == "all":
        return list(iter_suites(root))
    out: list[Suite] = []
    for part in [s.strip() for s in spec.split(",") if s.strip()]:
        p = Path(part)
        if p.suffix in (".yaml", ".yml", ".jsonl") and p.exists():
            out.append(load_suite_file(p))
            continue
        matches = [f for f in suite_files(root, include_expanded=True) if suite_name_of(f) == part]
        if not matches:
            known = ", ".join(suite_name_of(f) for f in suite_files(root)) or "(none)"
            raise SuiteError(f"no suite named {part!r} in {root}", f"known suites: {known}")
        out.append(load_suite_file(matches[0]))
    if not out:
        raise SuiteError("no suite given", "pass --suite NAME or --suite all")
    return out
