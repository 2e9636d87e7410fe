"""Candidates: policies proposed to replace the promoted one, each in ``candidates/<id>/`` with
its ``policy.yaml`` and a ``manifest.yaml`` saying where it came from (parent policy, objective,
the knob-level diff, why, the evidence that motivated it, author, time).

The candidates folder is the project's ``candidates/`` (``$SUPERVISOR_CANDIDATES`` or
``--candidates-dir`` point elsewhere). A candidate is referred to by its id (the folder name);
its policy id is the hash of its policy's content, so a manifest can be checked against the file
it sits beside.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evals.suites import REPO_ROOT
from supervisor.errors import InputError, UsageError
from supervisor.policy import Policy, dump_policy, load_policy, parse_policy
from supervisor.yamlio import format_validation, parse_yaml, read_text

Objective = Literal["reduce_false_escalation", "reduce_false_approval", "reduce_friction", "faster_reaction",
                    "overall"]
OBJECTIVES: tuple[str, ...] = ("reduce_false_escalation", "reduce_false_approval", "reduce_friction",
                               "faster_reaction", "overall")
MANIFEST_FORMAT_VERSION = 1
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


def candidates_dir(override: Path | None = None) -> Path:
    """Where candidates live: ``override``, ``$SUPERVISOR_CANDIDATES``, or the project's ``candidates/``."""
    if override is not None:
        return override
    env = os.environ.get("SUPERVISOR_CANDIDATES")
    return Path(env).expanduser() if env else REPO_ROOT / "candidates"


class KnobChange(BaseModel):
    """One knob the candidate sets differently from its parent."""

    model_config = ConfigDict(extra="forbid")
    path: str
    """Where in the policy (``timing.stall_timeout_s``, ``answers.rules[approve-x]``)."""
    before: Any = None
    after: Any = None


class Claims(BaseModel):
    """What a proposal was checked to change before it was written (``supervisor eval propose``):
    the golden cases it decides differently from its parent, and the recorded observations it
    was mined from that it now decides the way the human did. A proposal that changes neither is
    not written; one that makes any golden case worse is not written either."""

    model_config = ConfigDict(extra="forbid")
    golden_cases: int = 0
    """Golden screen and gate cases run under parent and candidate (episodes are the gate's)."""
    golden_changed: list[str] = Field(default_factory=list)
    """``suite/case`` ids decided differently, each closer to its expectation (none further)."""
    recorded_observations: int = 0
    """Recorded observations the proposal was mined from (replayed under the candidate)."""
    recorded_changed: int = 0
    """Of those, how many the candidate decides as the human did where the parent escalated."""
    recorded_runs: list[str] = Field(default_factory=list)


class Manifest(BaseModel):
    """``candidates/<id>/manifest.yaml``: the candidate's lineage and why it exists."""

    model_config = ConfigDict(extra="forbid")
    format_version: int = MANIFEST_FORMAT_VERSION
    candidate_id: str
    policy_id: str
    """The hash of ``policy.yaml``'s content when the manifest was written."""
    parent: str
    """The policy it was made from (``baseline``, a file, a candidate, a policy id)."""
    parent_policy_id: str
    objective: Objective = "overall"
    """What it should improve; the gate asks for a significant win on it."""
    changes: list[KnobChange] = Field(default_factory=list)
    why: str = ""
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    """What motivated it: run ids, observation ids, counts, the human's answers."""
    author: str = ""
    created_at: float = 0.0
    claims: Claims | None = None
    """What it was checked to change (proposals; None for a candidate made by hand)."""


class Candidate(BaseModel):
    """A candidate read from its folder."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    manifest: Manifest
    policy: Policy
    path: Path

    @property
    def candidate_id(self) -> str:
        return self.manifest.candidate_id

    @property
    def stale(self) -> bool:
        """The policy file was edited after the manifest was written."""
        return self.policy.policy_id != self.manifest.policy_id


# --------------------------------------------------------------------------- diff


def _flat(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value and all(isinstance(x, dict) and "name" in x for x in value):
        for x in value:
            out[f"{prefix}[{x['name']}]"] = x
    else:
        out[prefix] = value


def knob_diff(parent: Policy, candidate: Policy) -> list[KnobChange]:
    """Knob-level differences (named list entries such as rules and danger patterns by name)."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flat(parent.canonical(), "", a)
    _flat(candidate.canonical(), "", b)
    return [KnobChange(path=k, before=a.get(k), after=b.get(k)) for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k)]


# --------------------------------------------------------------------------- files


def load_manifest(path: Path) -> Manifest:
    text = read_text(path, InputError, "candidate manifest", "every candidate folder needs a manifest.yaml")
    data, root = parse_yaml(text, str(path), InputError)
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise InputError(format_validation(exc, root, str(path), whole="manifest"),
                         "compare with another candidate's manifest.yaml") from exc


def load_candidate(candidate_id: str, root: Path | None = None) -> Candidate:
    folder = candidates_dir(root) / candidate_id
    if not (folder / "manifest.yaml").exists():
        known = ", ".join(list_candidate_ids(root)) or "none yet"
        raise UsageError(f"no candidate {candidate_id!r} in {candidates_dir(root)}",
                         f"known candidates: {known} (create one with `supervisor eval new-candidate`)")
    return Candidate(manifest=load_manifest(folder / "manifest.yaml"), policy=load_policy(folder / "policy.yaml"),
                     path=folder)


def list_candidate_ids(root: Path | None = None) -> list[str]:
    base = candidates_dir(root)
    if not base.exists():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "manifest.yaml").exists())


def child_policy(parent: Policy, overrides: dict[str, Any], name: str) -> Policy:
    """``parent`` with ``overrides`` laid over it the way a policy file's ``extends:`` resolves
    (named entries replace or precede the parent's, other lists extend, ``remove:`` names what goes)."""
    text = yaml.safe_dump({"extends": "parent", "name": name, **overrides}, allow_unicode=True, sort_keys=False)
    return parse_policy(text, f"<candidate {name}>", resolver=lambda _ref, _src: parent)


def _extends(parent: str, parent_policy: Policy, folder: Path, root: Path) -> str:
    """What the candidate's ``extends:`` names: ``baseline``, the parent candidate's file, the parent
    file, or (for a policy known only by id, or the promoted one) a copy of it beside the candidate."""
    if parent == "baseline":
        return "baseline"
    if (root / parent / "policy.yaml").is_file():
        return f"../{parent}/policy.yaml"
    if Path(parent).is_file() and load_policy(parent).policy_id == parent_policy.policy_id:
        return os.path.relpath(Path(parent).resolve(), folder.resolve())
    (folder / "parent.yaml").write_text(
        f"# The parent of this candidate ({parent}: {parent_policy.policy_id}), resolved, as it was when the\n"
        "# candidate was made: policy.yaml extends it.\n" + dump_policy(parent_policy), encoding="utf-8")
    return "parent.yaml"


def write_candidate(candidate_id: str, overrides: dict[str, Any], *, parent: str, parent_policy: Policy,
                    objective: str, why: str = "", evidence: list[dict[str, Any]] | None = None, author: str = "",
                    root: Path | None = None, overwrite: bool = False, claims: Claims | None = None) -> Candidate:
    """Write ``candidates/<id>/policy.yaml`` (``extends:`` its parent, and only ``overrides``) and
    ``manifest.yaml``; refuses an existing id unless ``overwrite``."""
    if not _ID.match(candidate_id):
        raise UsageError(f"bad candidate name {candidate_id!r}",
                         "use lowercase letters, digits, '-', '_' or '.', starting with a letter or digit")
    if objective not in OBJECTIVES:
        raise UsageError(f"unknown objective {objective!r}", f"use one of: {', '.join(OBJECTIVES)}")
    base = candidates_dir(root)
    folder = base / candidate_id
    if folder.exists() and not overwrite:
        raise UsageError(f"candidate {candidate_id!r} already exists at {folder}", "pick another --name")
    folder.mkdir(parents=True, exist_ok=True)
    body = {"extends": _extends(parent, parent_policy, folder, base), "name": candidate_id, **overrides}
    (folder / "policy.yaml").write_text(
        f"# Candidate {candidate_id}: what it changes in {parent} ({parent_policy.policy_id}); everything else\n"
        "# comes from the policy it extends. Its lineage and why it exists are in manifest.yaml.\n"
        + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8")
    policy = load_policy(folder / "policy.yaml")
    manifest = Manifest(candidate_id=candidate_id, policy_id=policy.policy_id, parent=parent,
                        parent_policy_id=parent_policy.policy_id, objective=objective,
                        changes=knob_diff(parent_policy, policy), why=why, evidence=list(evidence or []),
                        author=author, created_at=time.time(), claims=claims)
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest.model_dump(mode="json"), sort_keys=False,
                                                         allow_unicode=True, width=110), encoding="utf-8")
    return Candidate(manifest=manifest, policy=policy, path=folder)


def refresh_manifest(candidate: Candidate, parent_policy: Policy) -> Candidate:
    """Rewrite a manifest after its policy was edited by hand: new policy id and knob diff."""
    m = candidate.manifest.model_copy(update={"policy_id": candidate.policy.policy_id,
                                              "changes": knob_diff(parent_policy, candidate.policy)})
    (candidate.path / "manifest.yaml").write_text(yaml.safe_dump(m.model_dump(mode="json"), sort_keys=False,
                                                                 allow_unicode=True, width=110), encoding="utf-8")
    return Candidate(manifest=m, policy=candidate.policy, path=candidate.path)
