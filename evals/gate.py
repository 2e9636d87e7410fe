"""The promotion gate's thresholds: ``candidates/gate.yaml`` (data, not code), validated with
one-line errors that name the file, line and field. ``supervisor eval run`` takes its minimum
pass rate from it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evals.suites import REPO_ROOT
from supervisor.errors import InputError
from supervisor.yamlio import format_validation, parse_yaml, read_text

Verdict = Literal["PROMOTE", "HOLD", "REJECT"]
CheckStatus = Literal["pass", "hold", "reject", "skip"]
DEFAULT_GATE_FILE = REPO_ROOT / "candidates" / "gate.yaml"


class _C(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpandedConfig(_C):
    variants_per_case: int = Field(ge=0, le=50)
    """Synthetic variants per golden screen case made for the gate (0: none)."""
    seed: int


class EvalThresholds(_C):
    min_weighted_pass_rate: float = Field(ge=0, le=1)
    """REJECT below; ``supervisor eval run`` exits 1 below."""
    max_pass_rate_drop: float = Field(ge=0, le=1)
    """REJECT when the weighted pass rate drops more than this against the baseline."""


class SafetyThresholds(_C):
    max_unsafe_answers: int = Field(ge=0)
    max_relaxations: int = Field(ge=0)
    max_must_pass_regressions: int = Field(ge=0)


class CompareThresholds(_C):
    alpha: float = Field(gt=0, lt=1)
    scorer: Literal["expected", "llm", "human"] = "expected"


class ObjectiveThresholds(_C):
    alpha: float = Field(gt=0, lt=1)


class ReplayThresholds(_C):
    min_observations: int = Field(ge=0)
    max_safety_regressions: int = Field(ge=0)


class CanaryThresholds(_C):
    required: bool
    min_observations: int = Field(ge=0)
    min_runs: int = Field(ge=0)
    max_unsafe: int = Field(ge=0)
    min_agreement: float = Field(ge=0, le=1)


class MetricConfig(_C):
    weight: float = Field(gt=0)
    worse: Literal["increase", "decrease"]
    """Which direction of change is bad for the candidate."""


class LimitedThresholds(_C):
    required: bool
    min_runs_per_arm: int = Field(ge=1)
    alpha: float = Field(gt=0, lt=1)
    pass_score: float = Field(ge=0, le=100)
    marginal_score: float = Field(ge=0, le=100)
    metrics: dict[str, MetricConfig]


class GateConfig(_C):
    """``candidates/gate.yaml``: what the gate runs and every threshold it applies."""

    format_version: int = 1
    suites: str
    """Golden suites to run (``all``, names, a comma list); ``suites/heldout/`` is never read."""
    episodes: bool
    """Also play the episode suites (real tmux sessions) for both policies."""
    expanded: ExpandedConfig
    eval: EvalThresholds
    safety: SafetyThresholds
    compare: CompareThresholds
    objective: ObjectiveThresholds
    replay: ReplayThresholds
    canary: CanaryThresholds
    limited: LimitedThresholds
    source: str = ""
    """The file it was read from."""
    content_hash: str = ""


def load_gate_config(path: Path | str | None) -> GateConfig:
    """Read and validate a gate file (default ``candidates/gate.yaml``); errors name the field."""
    p = Path(path) if path is not None else DEFAULT_GATE_FILE
    text = read_text(p, InputError, "gate file", "pass --gate FILE (the project's is candidates/gate.yaml)")
    data, root = parse_yaml(text, str(p), InputError)
    if not isinstance(data, dict):
        raise InputError(f"{p}: a gate file must be a YAML mapping", "see candidates/gate.yaml")
    try:
        cfg = GateConfig.model_validate(data)
    except ValidationError as exc:
        raise InputError(format_validation(exc, root, str(p), whole="gate file"),
                         "compare with candidates/gate.yaml") from exc
    cfg.source = str(p)
    cfg.content_hash = hashlib.sha256(text.encode()).hexdigest()[:16]
    return cfg
