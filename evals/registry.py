"""The registry: which policy runs the agents, which candidates ride along, and how it got so.

Every change is an append-only ``registry_events`` row in the warehouse (a fleet shares one):

- ``promote``: a candidate becomes the default of new runs (who approved it, the gate result
  that said PROMOTE, or ``forced`` with a reason);
- ``rollback``: back to the policy promoted before (``previous_policy_id`` is the one removed);
- ``canary``: a candidate rides along every new run as a shadow (classifying and deciding with
  its own policy, never acting);
- ``limited``: a candidate drives a fraction of new runs, chosen deterministically by run id;
  the other runs carry it as a shadow;
- ``stop``: a canary or limited rollout ends (promoting or rejecting a candidate ends it too).

:func:`registry_state` folds the events; :func:`policies_for_new_run` is what the live
supervisor asks when it starts a run. The warehouse may be locked by a notebook, so the state
last read is also kept in ``$SUPERVISOR_HOME/registry/state.json`` and used when the warehouse
cannot be read (said in the log); with neither, no registry exists yet and the shipped
baseline runs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from supervisor.errors import CheckFailed, UsageError, WarehouseError
from supervisor.ids import new_id
from supervisor.policy import Policy, baseline_policy
from supervisor.settings import Settings

log = logging.getLogger(__name__)

RegistryKind = Literal["promote", "rollback", "canary", "limited", "stop"]
Arm = Literal["control", "candidate"]
STATE_FORMAT_VERSION = 1


class RegistryEvent(BaseModel):
    """One append-only registry row."""

    model_config = ConfigDict(extra="forbid")
    registry_event_id: str
    occurred_at: float
    kind: RegistryKind
    candidate_id: str | None = None
    policy_id: str | None = None
    """The policy this event is about (promoted, restored, on canary)."""
    previous_policy_id: str | None = None
    """For promote/rollback: the policy that was the default before. For limited: the control."""
    fraction: float | None = None
    actor: str | None = None
    """Who did it (``--approved-by``, ``--by``)."""
    reason: str | None = None
    forced: bool = False
    gate_result_id: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class ActiveCandidate(BaseModel):
    """A candidate on canary (shadow) or limited rollout right now."""

    model_config = ConfigDict(extra="forbid")
    candidate_id: str
    policy_id: str
    phase: Literal["canary", "limited"]
    fraction: float = 0.0
    """For limited rollouts: the share of new runs it drives."""
    since: float
    rollout_id: str
    """The registry event that started this phase: it seeds the run-id assignment."""
    control_policy_id: str | None = None


class RegistryState(BaseModel):
    """The registry folded: the promoted policy, the promotion stack, the active candidates."""

    model_config = ConfigDict(extra="forbid")
    format_version: int = STATE_FORMAT_VERSION
    promoted_policy_id: str | None = None
    """None: nothing promoted yet (or everything rolled back): the shipped baseline."""
    promoted_candidate_id: str | None = None
    stack: list[tuple[str, str | None]] = Field(default_factory=list)
    """(policy id, candidate id) in promotion order; rollback pops."""
    active: list[ActiveCandidate] = Field(default_factory=list)
    events: int = 0
    policies: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Content of the promoted and active policies (so the cache alone can start a run)."""
    read_at: float = 0.0
    source: str = "warehouse"


def fold_registry(events: list[RegistryEvent]) -> RegistryState:
    st = RegistryState(events=len(events))
    for e in events:
        if e.kind == "promote" and e.policy_id:
            st.stack.append((e.policy_id, e.candidate_id))
            st.active = [a for a in st.active if a.policy_id != e.policy_id and a.candidate_id != e.candidate_id]
        elif e.kind == "rollback" and st.stack:
            st.stack.pop()
        elif e.kind == "canary" and e.policy_id and e.candidate_id:
            st.active = [a for a in st.active if a.candidate_id != e.candidate_id]
            st.active.append(ActiveCandidate(candidate_id=e.candidate_id, policy_id=e.policy_id, phase="canary",
                                             since=e.occurred_at, rollout_id=e.registry_event_id))
        elif e.kind == "limited" and e.policy_id and e.candidate_id:
            st.active = [a for a in st.active if a.candidate_id != e.candidate_id]
            st.active.append(ActiveCandidate(candidate_id=e.candidate_id, policy_id=e.policy_id, phase="limited",
                                             fraction=e.fraction or 0.0, since=e.occurred_at,
                                             rollout_id=e.registry_event_id, control_policy_id=e.previous_policy_id))
        elif e.kind == "stop":
            st.active = [a for a in st.active if a.candidate_id != e.candidate_id]
    if st.stack:
        st.promoted_policy_id, st.promoted_candidate_id = st.stack[-1]
    return st


# --------------------------------------------------------------------------- reading


def _cache_path(settings: Settings) -> Path:
    return settings.registry_dir / "state.json"


def _write_cache(settings: Settings, state: RegistryState) -> None:
    path = _cache_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of its own per writer: several runs starting at once each refresh the cache, and a
    # shared temporary name lets one writer move the other's file away under it
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(state.model_dump_json(indent=1))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _events(frame: Any) -> list[RegistryEvent]:
    return [RegistryEvent(registry_event_id=r["registry_event_id"], occurred_at=r["at"], kind=r["kind"],
                          candidate_id=r["candidate_id"], policy_id=r["policy_id"],
                          previous_policy_id=r["previous_policy_id"], fraction=r["fraction"], actor=r["actor"],
                          reason=r["reason"], forced=bool(r["forced"]), gate_result_id=r["gate_result_id"],
                          details=json.loads(r["details"] or "{}")) for r in frame.to_dicts()]


def _read_warehouse_state(wh: Any) -> RegistryState:
    from supervisor.warehouse.evals_store import read_policy_content, read_registry_events

    st = fold_registry(_events(read_registry_events(wh)))
    for pid in {st.promoted_policy_id, *(a.policy_id for a in st.active)} - {None}:
        content = read_policy_content(wh, str(pid))
        if content is not None:
            st.policies[str(pid)] = content
    st.read_at = time.time()
    return st


def registry_state(settings: Settings, *, wait_s: float = 1.0, quiet: bool = False) -> RegistryState:
    """The registry as the warehouse has it (refreshing the cache), else as last cached, else empty
    (``quiet``: say so in the debug log only, as help text does)."""
    if settings.warehouse.exists():
        from supervisor.warehouse import open_warehouse  # DuckDB only when there is a warehouse to read

        try:
            with open_warehouse(settings.warehouse, read_only=True, wait_s=wait_s) as wh:
                st = _read_warehouse_state(wh)
            _write_cache(settings, st)
            return st
        except WarehouseError as exc:
            log.log(logging.DEBUG if quiet else logging.WARNING,
                    "registry: the warehouse cannot be read (%s); using the state cached at %s", exc.one_line(),
                    _cache_path(settings))
    path = _cache_path(settings)
    if path.exists():
        try:
            st = RegistryState.model_validate_json(path.read_text(encoding="utf-8"))
            st.source = "cache"
            return st
        except ValueError as exc:
            log.warning("registry: cached state %s is unreadable (%s)", path, exc)
    return RegistryState(source="none")


_LOADED: dict[str, Policy] = {}
"""Policies read from the registry's stored content, by id: an id is its content's hash, so one read
serves every later look-up (a supervisor starting many runs reads the same few policies each time).
Callers must not change what they get (copy it first)."""


def _policy(state: RegistryState, policy_id: str) -> Policy:
    from evals.workbench import stored_policy

    known = _LOADED.get(policy_id)
    if known is not None:
        return known
    content = state.policies.get(policy_id)
    if content is None:
        raise WarehouseError(f"the registry names policy {policy_id} but the warehouse has no content for it",
                             "run `supervisor warehouse sync`, or roll back with `supervisor eval rollback`")
    policy = stored_policy(policy_id, content)
    if len(_LOADED) >= 64:
        _LOADED.clear()
    _LOADED[policy_id] = policy
    return policy


def promoted_policy(settings: Settings, state: RegistryState | None = None) -> tuple[Policy, str]:
    """The default policy of new runs and where it comes from (``promoted <candidate>`` or
    ``shipped baseline``)."""
    return _promoted(state or registry_state(settings))


def _promoted(st: RegistryState) -> tuple[Policy, str]:
    if st.promoted_policy_id is None:
        return baseline_policy(), "shipped baseline"
    return _policy(st, st.promoted_policy_id), f"promoted {st.promoted_candidate_id or st.promoted_policy_id}"


class NewRunPolicies(BaseModel):
    """What a new run uses, by the registry."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    acting: Policy
    acting_source: str
    """``shipped baseline``, ``promoted <candidate>``, or ``limited <candidate>``."""
    shadows: list[Policy] = Field(default_factory=list)
    """Candidates on canary (and limited candidates this run does not act under)."""
    arm: Arm | None = None
    """Under a limited rollout: which arm this run is in."""
    candidate_id: str | None = None
    """The limited-rollout candidate this run's arm refers to."""
    rollout_id: str | None = None


def arm_of(rollout_id: str, run_id: str, fraction: float) -> Arm:
    """Deterministic by run id: the candidate's arm when the hash of (rollout, run) falls under
    ``fraction``, the control's otherwise."""
    h = int.from_bytes(hashlib.sha256(f"{rollout_id}:{run_id}".encode()).digest()[:8], "big") / 2 ** 64
    return "candidate" if h < fraction else "control"


def policies_for_new_run(settings: Settings, run_id: str | None) -> NewRunPolicies:
    """The acting policy of a new run, the candidates it carries as shadows, and its arm.

    The promoted policy acts (the shipped baseline when nothing is promoted); candidates on
    canary ride along as shadows; a limited rollout makes its candidate act on the runs its
    fraction selects (by run id) and ride along on the others. Without a run id (a supervisor
    whose runs are not started one by one) every candidate only rides along."""
    return choose_policies(registry_state(settings), run_id)


def choose_policies(st: RegistryState, run_id: str | None) -> NewRunPolicies:
    """:func:`policies_for_new_run` on a registry state already read (pure)."""
    acting, source = _promoted(st)
    out = NewRunPolicies(acting=acting, acting_source=source)
    for a in st.active:
        policy = _policy(st, a.policy_id)
        if a.phase == "limited" and out.arm is None and run_id is not None:
            out.arm = arm_of(a.rollout_id, run_id, a.fraction)
            out.candidate_id, out.rollout_id = a.candidate_id, a.rollout_id
            if out.arm == "candidate":
                out.shadows.append(out.acting)  # the control still decides alongside, never acting
                out.acting, out.acting_source = policy, f"limited {a.candidate_id}"
                continue
        out.shadows.append(policy)
    unique: dict[str, Policy] = {}
    for p in out.shadows:
        if p.policy_id != out.acting.policy_id:
            unique.setdefault(p.policy_id, p)
    out.shadows = list(unique.values())
    return out


def default_policy_help(settings: Settings) -> str:
    """One line for ``run --help``: which policy new runs use by default."""
    st = registry_state(settings, wait_s=0.2, quiet=True)
    if st.promoted_policy_id is None:
        return "the shipped baseline (nothing promoted yet)"
    return f"the promoted policy {st.promoted_candidate_id or ''} ({st.promoted_policy_id})".replace("  ", " ")


# --------------------------------------------------------------------------- writing


def _append(settings: Settings, event: RegistryEvent, policies: list[Policy]) -> RegistryState:
    """Append one event (and store the policies it names) in one transaction; refresh the cache."""
    from supervisor.warehouse import open_warehouse
    from supervisor.warehouse.evals_store import append_registry_event, save_policies

    with open_warehouse(settings.warehouse, read_only=False, wait_s=10.0) as wh:
        wh.con.execute("BEGIN TRANSACTION")
        try:
            save_policies(wh, {p.policy_id: p.model_dump(mode="json") for p in policies},
                          f"registry:{event.registry_event_id}")
            append_registry_event(wh, event.model_dump(mode="json"))
            wh.con.execute("COMMIT")
        except Exception:
            wh.con.execute("ROLLBACK")
            raise
        st = _read_warehouse_state(wh)
    _write_cache(settings, st)
    return st


def _event(kind: RegistryKind, **fields: Any) -> RegistryEvent:
    return RegistryEvent(registry_event_id=new_id("reg_"), occurred_at=time.time(), kind=kind, **fields)


def latest_gate(settings: Settings, candidate_policy_id: str) -> dict[str, Any] | None:
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_gate_results

    with reader(settings) as wh:
        rows = read_gate_results(wh, candidate_policy_id=candidate_policy_id).head(1).to_dicts()
    return rows[0] if rows else None


def promote(settings: Settings, candidate_id: str, policy: Policy, *, approved_by: str, force: bool = False,
            reason: str | None = None) -> RegistryEvent:
    """Make ``policy`` the default of new runs. Refused unless the latest gate of this exact policy
    said PROMOTE against the policy promoted now; ``force`` (with a reason) overrides, recorded."""
    if not approved_by.strip():
        raise UsageError("--approved-by is empty", "say who approves the promotion")
    if force and not (reason or "").strip():
        raise UsageError("--force needs --reason", "say why the gate is overridden; it is recorded")
    st = registry_state(settings)
    current, _ = promoted_policy(settings, st)
    if current.policy_id == policy.policy_id:
        raise UsageError(f"{candidate_id} ({policy.policy_id}) is already the promoted policy", "nothing to do")
    gate = latest_gate(settings, policy.policy_id)
    problem = None
    if gate is None:
        problem = f"no gate result for {candidate_id} ({policy.policy_id})"
    elif gate["verdict"] != "PROMOTE":
        problem = f"the latest gate of {candidate_id} said {gate['verdict']} ({gate['gate_result_id']})"
    elif gate["baseline_policy_id"] != current.policy_id:
        problem = (f"the latest gate of {candidate_id} compared it with {gate['baseline_policy_id']}, but the "
                   f"promoted policy is now {current.policy_id}")
    if problem is not None and not force:
        raise CheckFailed(f"refusing to promote: {problem}",
                          f"run `supervisor eval gate-candidate {candidate_id}` until it says PROMOTE, or pass "
                          "--force --reason WHY (recorded)")
    event = _event("promote", candidate_id=candidate_id, policy_id=policy.policy_id,
                   previous_policy_id=st.promoted_policy_id, actor=approved_by, reason=reason,
                   forced=problem is not None, gate_result_id=gate["gate_result_id"] if gate else None,
                   details={"overridden": problem} if problem else {})
    _append(settings, event, [policy])
    return event


def rollback(settings: Settings, *, by: str, reason: str | None = None) -> RegistryEvent:
    """Return to the policy promoted before the current one (the shipped baseline at the bottom)."""
    st = registry_state(settings)
    if not st.stack:
        raise UsageError("nothing is promoted: new runs already use the shipped baseline", "nothing to roll back")
    removed = st.stack[-1][0]
    restored = st.stack[-2] if len(st.stack) > 1 else (None, None)
    event = _event("rollback", candidate_id=restored[1], policy_id=restored[0], previous_policy_id=removed,
                   actor=by, reason=reason)
    _append(settings, event, [])
    return event


def start_canary(settings: Settings, candidate_id: str, policy: Policy, *, by: str,
                 reason: str | None = None) -> RegistryEvent:
    """Put a candidate on shadow canary: every new run carries it as a shadow."""
    current, _ = promoted_policy(settings)
    if current.policy_id == policy.policy_id:
        raise UsageError(f"{candidate_id} is the promoted policy", "a canary compares a candidate with it")
    event = _event("canary", candidate_id=candidate_id, policy_id=policy.policy_id,
                   previous_policy_id=current.policy_id, actor=by, reason=reason)
    _append(settings, event, [policy, current])
    return event


def start_limited(settings: Settings, candidate_id: str, policy: Policy, fraction: float, *, by: str,
                  reason: str | None = None) -> RegistryEvent:
    """Let a candidate drive ``fraction`` of new runs (the rest carry it as a shadow)."""
    if not 0.0 < fraction <= 1.0:
        raise UsageError(f"--fraction {fraction} is not in (0, 1]", "e.g. --fraction 0.2")
    current, _ = promoted_policy(settings)
    if current.policy_id == policy.policy_id:
        raise UsageError(f"{candidate_id} is the promoted policy", "a rollout compares a candidate with it")
    event = _event("limited", candidate_id=candidate_id, policy_id=policy.policy_id,
                   previous_policy_id=current.policy_id, fraction=fraction, actor=by, reason=reason)
    _append(settings, event, [policy, current])
    return event


def stop(settings: Settings, candidate_id: str, *, by: str, reason: str | None = None) -> RegistryEvent:
    st = registry_state(settings)
    active = next((a for a in st.active if a.candidate_id == candidate_id), None)
    if active is None:
        raise UsageError(f"{candidate_id} is not on canary or limited rollout", "see `supervisor eval rollout-history`")
    event = _event("stop", candidate_id=candidate_id, policy_id=active.policy_id, actor=by, reason=reason)
    _append(settings, event, [])
    return event


def history(settings: Settings, kinds: tuple[str, ...]) -> list[RegistryEvent]:
    """Registry events of these kinds, oldest first."""
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_registry_events

    with reader(settings) as wh:
        return _events(read_registry_events(wh, list(kinds)))
