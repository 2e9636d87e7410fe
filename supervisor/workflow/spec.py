"""WorkflowSpec: the YAML plan of a supervised run.

A spec lists steps (each with an objective and the verifiers that prove it done), optional
decision nodes with branches, the finish policy and the acceptance contract (evidence the
supervisor checks itself, forbidden states, who must review). A run refuses a draft spec,
and an approval is bound to the content it approved: editing an approved spec makes it a
draft again until it is re-approved.

Errors name the file and the line: ``spec.yaml:12: steps.1.verify.0.expect: ...``.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from supervisor.errors import SpecError
from supervisor.yamlio import format_validation, parse_yaml, read_text

SPEC_FORMAT_VERSION = 1

ApprovalStatus = Literal["draft", "approved"]
Reviewer = Literal["human", "stronger_reviewer"]
RiskClass = Literal["low", "medium", "high"]
ForbiddenState = Literal["failing_tests", "uncommitted_changes", "unverified_steps", "blocked"]
GitCheck = Literal["clean", "dirty", "branch", "commits_ahead", "file_changed"]

_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


class _S(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _VerifierBase(_S):
    id: str = ""
    """Unique within the spec; defaults to ``<step id>.<type><n>``. Acceptance refers to it."""
    description: str = ""


class CommandVerifier(_VerifierBase):
    """Run a shell command in the pane's working directory."""

    type: Literal["command"] = "command"
    run: str
    """The shell command (run with ``bash -c``)."""
    expect: str = "pass"
    """``pass`` (exit 0), ``fail`` (non-zero exit) or ``contains:TEXT`` (output contains TEXT)."""
    timeout_s: float = Field(300.0, gt=0)
    cwd: str | None = None
    """Working directory, relative to the run's working directory (default: that directory)."""
    is_test: bool = True
    """Counts as a test for the ``failing_tests`` forbidden state."""

    @field_validator("expect")
    @classmethod
    def _expect(cls, v: str) -> str:
        if v in ("pass", "fail") or (v.startswith("contains:") and len(v) > len("contains:")):
            return v
        raise ValueError("expect must be pass, fail or contains:TEXT")


class ArtifactVerifier(_VerifierBase):
    """A file or folder that must (or must not) exist."""

    type: Literal["artifact"] = "artifact"
    path: str
    """Relative to the run's working directory."""
    exists: bool = True
    contains: str | None = None
    """Text the file must contain (when ``exists``)."""


class GitVerifier(_VerifierBase):
    """A fact about the git repository in the working directory."""

    type: Literal["git"] = "git"
    check: GitCheck
    branch: str | None = None
    """For ``branch``: the expected current branch."""
    base: str | None = None
    """For ``commits_ahead``/``file_changed``: the base ref (``main``, a sha)."""
    min: int = Field(1, ge=0)
    """For ``commits_ahead``: at least this many commits ahead of ``base``."""
    path: str | None = None
    """For ``file_changed``: the path that must have changed (uncommitted or since ``base``)."""

    @model_validator(mode="after")
    def _needs(self) -> GitVerifier:
        if self.check == "branch" and not self.branch:
            raise ValueError("check: branch needs `branch: NAME`")
        if self.check == "commits_ahead" and not self.base:
            raise ValueError("check: commits_ahead needs `base: REF`")
        if self.check == "file_changed" and not self.path:
            raise ValueError("check: file_changed needs `path: FILE`")
        return self


class WorkflowVerifier(_VerifierBase):
    """A fact about the workflow itself."""

    type: Literal["workflow"] = "workflow"
    require_node_done: str


class PassedVerifier(_VerifierBase):
    """Acceptance only: the verifier with this id must have passed during the run."""

    type: Literal["passed"] = "passed"
    verifier: str


Verifier = Annotated[
    CommandVerifier | ArtifactVerifier | GitVerifier | WorkflowVerifier | PassedVerifier,
    Field(discriminator="type"),
]


class Branch(_S):
    """One way out of a decision node."""

    id: str
    next: str
    """The node to go to."""
    objective: str = ""
    when_verifier: str | None = None
    """Take this branch when the verifier with this id passed (``when_result: fail``: failed)."""
    when_result: Literal["pass", "fail"] = "pass"
    when_choice: str | None = None
    """Take this branch when one of the checkpoint's ``candidate_next_actions`` mentions this text."""
    default: bool = False
    """Take this branch when no other matches."""


class Step(_S):
    """A node of the plan: a step (do ``objective``, prove it with ``verify``) or a decision."""

    id: str
    kind: Literal["step", "decision"] = "step"
    objective: str = ""
    verify: list[Verifier] = Field(default_factory=list)
    branches: list[Branch] = Field(default_factory=list)
    next: str | None = None
    """The node after this one (default: the next in the list; ``end`` finishes)."""

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID_RE.match(v) or v == "end":
            raise ValueError("a node id is letters, digits, `_`, `-`, `.` (and not `end`)")
        return v

    @model_validator(mode="after")
    def _shape(self) -> Step:
        if self.kind == "decision" and not self.branches:
            raise ValueError("a decision node needs `branches`")
        if self.kind == "step" and self.branches:
            raise ValueError("only `kind: decision` nodes have branches")
        return self


class FinishPolicy(_S):
    require_all_steps_done: bool = True
    """Every step on the path taken must be done (its verifiers passed)."""
    require_verification_pass: bool = True
    """The last result of every verifier that ran must be a pass."""


class SpecPolicy(_S):
    default_continue: bool = True
    """After a verified step, hand the agent the next step without asking a human."""
    max_retries_per_node: int | None = Field(None, ge=0)
    """Overrides ``policy.budgets.max_retries_per_node`` for this spec."""


class Acceptance(_S):
    """The contract a run must meet before it may finish."""

    required_evidence: list[Verifier] = Field(default_factory=list)
    """Checks the supervisor runs itself at the finish (``type: passed`` names a verifier that
    must have passed during the run)."""
    forbidden_states: list[ForbiddenState] = Field(default_factory=list)
    must_review_by: Reviewer | None = None
    """Finish waits for ``supervisor runs review RUN_ID --by human|stronger_reviewer``."""
    risk_class: RiskClass = "low"
    """``high`` requires a human review even when ``must_review_by`` is not set."""


class Approval(_S):
    status: ApprovalStatus = "draft"
    by: str | None = None
    at: float | None = None
    """Seconds since the epoch."""
    content_hash: str | None = None
    """The spec content this approval covers; an edited spec is a draft again."""


class WorkflowSpec(_S):
    """A workflow plan. Validated from YAML by :func:`parse_spec`."""

    format_version: int = SPEC_FORMAT_VERSION
    kind: Literal["linear_plan"] = "linear_plan"
    name: str = "unnamed"
    goal: str = ""
    workdir: str | None = None
    """Where verifiers run, relative to the spec file (default: the pane's working directory)."""
    steps: list[Step] = Field(min_length=1)
    finish_policy: FinishPolicy = Field(default_factory=FinishPolicy)
    policy: SpecPolicy = Field(default_factory=lambda: SpecPolicy(max_retries_per_node=None))
    acceptance: Acceptance = Field(default_factory=Acceptance)
    approval: Approval = Field(default_factory=Approval)

    @model_validator(mode="after")
    def _links(self) -> WorkflowSpec:
        ids = [s.id for s in self.steps]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate step ids: {', '.join(dup)}")
        known = set(ids) | {"end"}
        for s in self.steps:
            if s.next and s.next not in known:
                raise ValueError(f"step {s.id}: next {s.next!r} is not a step id")
            for b in s.branches:
                if b.next not in known:
                    raise ValueError(f"step {s.id}: branch {b.id} goes to unknown node {b.next!r}")
        vids: list[str] = []
        for s in self.steps:
            counters: dict[str, int] = {}
            for v in s.verify:
                counters[v.type] = counters.get(v.type, 0) + 1
                if not v.id:
                    v.id = f"{s.id}.{v.type}{counters[v.type]}"
                vids.append(v.id)
        for n, v in enumerate(self.acceptance.required_evidence, 1):
            if not v.id:
                v.id = f"acceptance.{v.type}{n}"
            vids.append(v.id)
        dupv = sorted({i for i in vids if vids.count(i) > 1})
        if dupv:
            raise ValueError(f"duplicate verifier ids: {', '.join(dupv)}")
        for s in self.steps:
            for v in s.verify:
                if isinstance(v, PassedVerifier):
                    raise ValueError(f"step {s.id}: `type: passed` is for acceptance.required_evidence only")
                if isinstance(v, WorkflowVerifier) and v.require_node_done not in ids:
                    raise ValueError(f"step {s.id}: require_node_done {v.require_node_done!r} is not a step id")
        for v in self.acceptance.required_evidence:
            if isinstance(v, PassedVerifier) and v.verifier not in vids:
                raise ValueError(f"acceptance: verifier {v.verifier!r} is not defined by any step")
        for s in self.steps:
            for b in s.branches:
                if b.when_verifier and b.when_verifier not in vids:
                    raise ValueError(f"step {s.id}: branch {b.id} names unknown verifier {b.when_verifier!r}")
        return self

    # -- navigation ------------------------------------------------------------------------------------
    def node(self, node_id: str | None) -> Step | None:
        return next((s for s in self.steps if s.id == node_id), None)

    def first_node(self) -> Step:
        return self.steps[0]

    def next_node(self, node_id: str) -> Step | None:
        """The node after ``node_id`` on the default path (None: the plan ends)."""
        for i, s in enumerate(self.steps):
            if s.id == node_id:
                if s.next:
                    return self.node(s.next)
                return self.steps[i + 1] if i + 1 < len(self.steps) else None
        return None

    def verifier(self, verifier_id: str) -> Any:
        for s in self.steps:
            for v in s.verify:
                if v.id == verifier_id:
                    return v
        for v in self.acceptance.required_evidence:
            if v.id == verifier_id:
                return v
        return None

    # -- identity and approval ------------------------------------------------------------------------
    @property
    def content_hash(self) -> str:
        return spec_content_hash(self)

    @property
    def is_approved(self) -> bool:
        """Approved, and the approval covers this exact content."""
        a = self.approval
        return a.status == "approved" and (a.content_hash is None or a.content_hash == self.content_hash)


def spec_content_hash(spec: WorkflowSpec) -> str:
    data = spec.model_dump(mode="json", exclude={"approval"})
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "spec_" + hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- parsing with line numbers ------------------------------------------------------------------------


_UNION_TAGS = {"command", "artifact", "git", "workflow", "passed"}


def parse_spec(text: str, source: str = "<spec>") -> WorkflowSpec:
    """Parse and validate spec YAML. Errors are :class:`SpecError` naming ``source:line``."""
    data, root = parse_yaml(text, source, SpecError)
    if data is None:
        raise SpecError(f"{source}: the spec is empty", "start from `supervisor spec new`")
    if not isinstance(data, dict):
        raise SpecError(f"{source}:1: a spec must be a YAML mapping", "start from `supervisor spec new`")
    try:
        return WorkflowSpec.model_validate(data)
    except ValidationError as exc:
        if looks_like_thin_spec(data):
            raise SpecError(f"{source}: this is a thin-supervisor spec, not one of ours",
                            f"convert it with `supervisor spec import {source}`, review, approve the result") from exc
        raise SpecError(format_validation(exc, root, source, skip_parts=_UNION_TAGS, whole="spec"),
                        "fix the spec (see `supervisor spec new`)") from exc


def looks_like_thin_spec(data: object) -> bool:
    """A mapping in thin-supervisor's format rather than ours (``id`` without ``name``, ``nodes``,
    ``type`` on a step, or ``approval.required``)."""
    if not isinstance(data, dict):
        return False
    steps = data.get("steps") or data.get("nodes") or []
    typed = isinstance(steps, list) and any(isinstance(s, dict) and "type" in s for s in steps)
    approval = data.get("approval")
    return (("id" in data and "name" not in data) or "nodes" in data or typed
            or (isinstance(approval, dict) and "required" in approval))


def load_spec(path: str | Path) -> WorkflowSpec:
    text = read_text(path, SpecError, "spec file", "give the path of a workflow spec YAML file")
    return parse_spec(text, str(path))


def require_approved(spec: WorkflowSpec, source: str = "the spec") -> None:
    """Refuse a draft (or an approved spec edited after its approval)."""
    if spec.approval.status != "approved":
        raise SpecError(f"{source} is a draft and may not run",
                        f"review it, then `supervisor spec approve {source} --by NAME`")
    if not spec.is_approved:
        raise SpecError(f"{source} changed after it was approved",
                        f"review the changes, then `supervisor spec approve {source} --by NAME`")


def approve_spec_text(text: str, by: str, source: str = "<spec>", *, now: float | None = None) -> str:
    """Return ``text`` with its ``approval:`` block replaced (comments elsewhere kept)."""
    spec = parse_spec(text, source)
    block = (
        "approval:\n"
        "  status: approved\n"
        f"  by: {json.dumps(by)}\n"
        f"  at: {round(time.time() if now is None else now, 3)}\n"
        f"  content_hash: {spec.content_hash}\n"
    )
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.match(r"^approval\s*:", ln)), None)
    if start is None:
        out = text if text.endswith("\n") or not text else text + "\n"
        return out + block
    end = start + 1
    while end < len(lines) and (lines[end].startswith((" ", "\t", "#")) or not lines[end].strip()):
        end += 1
    return "".join(lines[:start]) + block + "".join(lines[end:])


TEMPLATE = """\
# A workflow spec: the plan the supervisor holds the agent to.
# Validate: supervisor spec validate {path}   Approve: supervisor spec approve {path} --by NAME
format_version: 1
kind: linear_plan
name: {name}
goal: Describe the outcome in one sentence.
steps:
  - id: implement
    objective: Implement the change.
    verify:
      - type: command
        run: python -m pytest -q
        expect: pass
        timeout_s: 300
  - id: document
    objective: Document the change in README.md.
    verify:
      - type: artifact
        path: README.md
finish_policy:
  require_all_steps_done: true
  require_verification_pass: true
policy:
  default_continue: true
  max_retries_per_node: 2
acceptance:
  required_evidence:
    - type: passed
      verifier: implement.command1
  forbidden_states: [failing_tests]
  must_review_by: human
  risk_class: medium
approval:
  status: draft
"""


def new_spec_text(name: str, path: str = "SPEC.yaml") -> str:
    return TEMPLATE.format(name=json.dumps(name), path=path)
