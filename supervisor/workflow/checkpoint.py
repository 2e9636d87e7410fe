"""The checkpoint protocol: agents print ``<checkpoint> ... </checkpoint>`` blocks saying where
they are in the plan. This module finds and parses them and decides which are new.

Exactly once: a block's identity is the hash of its normalized content (which includes its
``checkpoint_seq``), and the identities already processed live in the journal, so a block
still visible on the screen (or redrawn from scrollback) is never processed again, even by a
supervisor restarted after a crash. An agent restart shows up as a new block whose seq is not
above the last one processed (seq back to 1): that opens a new *epoch*, and seqs count again.
A malformed block is recorded once with its parse error and never raises.
"""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
from collections.abc import Iterable
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

CheckpointStatus = Literal["working", "blocked", "step_done", "workflow_done"]
CheckpointSource = Literal["screen", "output", "transcript"]

BLOCK_RE = re.compile(r"<checkpoint>(.*?)</checkpoint>", re.DOTALL | re.IGNORECASE)
_FIELDS = (
    "run_id",
    "checkpoint_seq",
    "status",
    "current_node",
    "summary",
    "evidence",
    "candidate_next_actions",
    "needs",
    "question_for_supervisor",
)
_LIST_FIELDS = {"evidence", "candidate_next_actions", "needs"}
# Box borders some TUIs draw around output lines.
_BOX_RE = re.compile(r"^\s*[│┃]\s?|\s?[│┃]\s*$")


class CheckpointBody(BaseModel):
    """The fields an agent puts in a checkpoint block."""

    model_config = ConfigDict(extra="ignore")

    run_id: str | None = None
    """The run id the supervisor gave the agent (informational)."""
    checkpoint_seq: int = Field(ge=0)
    """1, 2, 3... per agent session; back to 1 after an agent restart."""
    status: CheckpointStatus
    current_node: str | None = None
    """The spec node (step id) the agent is on."""
    summary: str = ""
    evidence: list[str] = Field(default_factory=list)
    """What the agent offers as proof (commands run, files written). The supervisor verifies itself."""
    candidate_next_actions: list[str] = Field(default_factory=list)
    needs: list[str] = Field(default_factory=list)
    """What the agent needs from a human (credentials, a decision)."""
    question_for_supervisor: str | None = None

    @field_validator("evidence", "candidate_next_actions", "needs", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            return [v] if v.strip() else []
        if isinstance(v, list):
            return [str(x) if not isinstance(x, str) else x for x in v]
        return v

    @field_validator("run_id", "current_node", "question_for_supervisor", "summary", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            return v
        return str(v)

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, v: Any) -> Any:
        return v.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(v, str) else v


class CheckpointEvent(BaseModel):
    """One checkpoint as processed: journaled as a ``checkpoint`` event (whose event id is
    ``checkpoint_id``, the trigger of the decisions it causes)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    checkpoint_id: str | None = None
    """The journal event id, once journaled."""
    checkpoint_key: str
    """Identity: hash of the normalized content (includes the seq)."""
    epoch: int = 0
    """Agent session number as seen by the supervisor: +1 each time the agent's seq restarts."""
    source: CheckpointSource = "screen"
    raw: str
    """The block's text between the tags (redacted when journaled)."""
    body: CheckpointBody | None = None
    """The parsed fields; None when malformed."""
    parse_error: str | None = None
    """Why the block could not be parsed (malformed blocks are recorded, never acted on)."""
    restart: bool = False
    """This block's seq went back: the agent was restarted (a new epoch begins here)."""
    seq_gap: bool = False
    """Seqs were skipped before this block (a lost or unseen checkpoint)."""

    @property
    def malformed(self) -> bool:
        return self.body is None


def find_blocks(text: str) -> list[str]:
    """The raw bodies of every complete ``<checkpoint>`` block in ``text``, in order."""
    return [m.group(1) for m in BLOCK_RE.finditer(text or "")]


def _strip_tags(block: str) -> str:
    m = BLOCK_RE.search(block)
    return m.group(1) if m else block


def _clean(raw: str) -> str:
    lines = [_BOX_RE.sub("", ln).rstrip() for ln in raw.splitlines()]
    return textwrap.dedent("\n".join(lines)).strip("\n")


def _kv_value(key: str, value: str) -> Any:
    """One ``key: value`` value: YAML where it parses to a scalar or a list (``[]``, ``null``, ``3``),
    else the text itself; list fields also accept ``a; b``."""
    try:
        v: Any = yaml.safe_load(value) if value else None
    except yaml.YAMLError:
        v = value
    if isinstance(v, dict):
        v = value
    if key in _LIST_FIELDS:
        if v is None:
            return []
        if isinstance(v, list):
            return [str(x) for x in v]
        return [x.strip() for x in str(value).split(";") if x.strip()]
    return v


def _kv_parse(text: str) -> dict[str, Any]:
    """The lenient ``key: value`` form: one field per line, ``- item`` lines extend a list."""
    data: dict[str, Any] = {}
    key: str | None = None
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*[:=]\s*(.*)$", s)
        if m and m.group(1).lower() in _FIELDS:
            key = m.group(1).lower()
            data[key] = _kv_value(key, m.group(2).strip())
            continue
        if key is None:
            raise ValueError(f"line {s[:60]!r} is not `key: value`")
        item = s[2:].strip() if s.startswith("- ") else s
        if key in _LIST_FIELDS:
            data.setdefault(key, []).append(item)
        else:
            data[key] = (str(data.get(key, "")) + " " + item).strip()
    return data


def parse_body(raw: str) -> tuple[CheckpointBody | None, str | None]:
    """Parse a block body (YAML, or lenient ``key: value`` lines). Returns (body, error)."""
    text = _clean(_strip_tags(raw))
    if not text.strip():
        return None, "empty checkpoint block"
    data: Any = None
    yaml_error: str | None = None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        yaml_error = str(getattr(exc, "problem", None) or exc).splitlines()[0]
    if not isinstance(data, dict):
        try:
            data = _kv_parse(text)
        except ValueError as exc:
            return None, f"not YAML ({yaml_error or 'not a mapping'}) nor key: value lines ({exc})"
    data = {str(k).strip().lower(): v for k, v in data.items()}
    try:
        return CheckpointBody.model_validate(data), None
    except ValidationError as exc:
        errs = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'block'}: {e['msg']}" for e in exc.errors()[:3])
        return None, errs


def checkpoint_key(raw: str, body: CheckpointBody | None) -> str:
    """Identity from content: the parsed fields when the block parses (so rewrapping or
    re-indenting the same block does not make it new), else the whitespace-normalized text."""
    if body is not None:
        data = {k: (" ".join(v.split()) if isinstance(v, str) else [" ".join(x.split()) for x in v]
                    if isinstance(v, list) else v) for k, v in body.model_dump(mode="json").items()}
        blob = json.dumps(data, sort_keys=True, ensure_ascii=False)
    else:
        blob = " ".join(_strip_tags(raw).split())
    return "ck_" + hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:24]


class CheckpointTracker:
    """Which checkpoints were already processed; decides which blocks are new.

    State is rebuilt from journaled checkpoint events with :meth:`remember`, so it survives a
    restart of the supervisor."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._seen_text: set[str] = set()
        """Whitespace-normalized texts of processed blocks: a block still on the screen is
        recognised without parsing it again (the common case, on every observation)."""
        self.epoch = 0
        self.last_seq: int | None = None

    def remember(self, event: CheckpointEvent) -> None:
        """Fold in a checkpoint already processed (from the journal or just now)."""
        self.seen.add(event.checkpoint_key)
        self._seen_text.add(" ".join(event.raw.split()))
        self.epoch = max(self.epoch, event.epoch)
        if event.body is not None and event.epoch == self.epoch:
            seq = event.body.checkpoint_seq
            if event.restart or self.last_seq is None or seq > self.last_seq:
                self.last_seq = seq

    def admit(self, raw: str, source: CheckpointSource = "screen") -> CheckpointEvent | None:
        """A new checkpoint event for ``raw``, or None if it was processed before. Call
        :meth:`remember` once it is journaled (``admit_all`` does both for a batch)."""
        text = " ".join(_strip_tags(raw).split())
        if text in self._seen_text:
            return None
        body, error = parse_body(raw)
        key = checkpoint_key(raw, body)
        if key in self.seen:
            self._seen_text.add(text)
            return None
        restart = gap = False
        epoch = self.epoch
        if body is not None and self.last_seq is not None:
            if body.checkpoint_seq <= self.last_seq:
                restart = True
                epoch = self.epoch + 1
            elif body.checkpoint_seq > self.last_seq + 1:
                gap = True
        return CheckpointEvent(checkpoint_key=key, epoch=epoch, source=source, raw=_strip_tags(raw).strip("\n"),
                               body=body, parse_error=error, restart=restart, seq_gap=gap)

    def admit_all(self, blocks: Iterable[str], source: CheckpointSource = "screen") -> list[CheckpointEvent]:
        """New checkpoints among ``blocks`` (in screen order), remembered as they are admitted."""
        out = []
        for raw in blocks:
            ev = self.admit(raw, source)
            if ev is not None:
                self.remember(ev)
                out.append(ev)
        return out


def format_checkpoint(body: dict[str, Any]) -> str:
    """A checkpoint block as an agent should print it (used by the skill text and the demo)."""
    return "<checkpoint>\n" + yaml.safe_dump(body, sort_keys=False, allow_unicode=True).rstrip() + "\n</checkpoint>"
