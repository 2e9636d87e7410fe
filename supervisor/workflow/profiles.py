"""Worker profiles, supervision modes and the people's preferences: the workflow policy a run's
worker gets, and why.

A profile (``policy.supervision.profiles``) says who the worker is (provider, model, trust); its
mode is named, or follows from trust (low: ``directive_lead``, standard: ``strict_verifier``, high:
``collaborative_reviewer``). A run's profile is, in this order: the one asked for (``--profile``,
or ``$SUPERVISOR_PROFILE``); the preference ``profile.AGENT``, then ``profile`` (``supervisor prefs
set profile NAME``); the first profile whose ``agents`` lists the run's agent; ``default_profile``.
The mode is applied over the policy's workflow knobs (retries per step, handoff templates, pause
handling), and then the preferences are (:func:`apply_prefs`): a template's ``{prefs.KEY}`` is
filled with that preference, and the preference ``instructions`` ends every instruction handed to
the agent. The workflow controller obeys the result like any other policy data, and journals the
profile, the mode and the preferences it used (a resumed run keeps them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from string import Formatter
from typing import Any, Literal

from supervisor.errors import PolicyError, UsageError
from supervisor.policy import Policy, SupervisionModeName, WorkerProfile

BY_TRUST: dict[str, SupervisionModeName] = {"low": "directive_lead", "standard": "strict_verifier",
                                            "high": "collaborative_reviewer"}

ChosenBy = Literal["requested", "preference", "agent", "default"]

PREF_PROFILE = "profile"
"""The preference naming the profile of runs that ask for none (``profile.AGENT`` for one agent's runs)."""
PREF_INSTRUCTIONS = "instructions"
"""The preference whose text ends every instruction handed to the agent (unless a template places it
itself with ``{prefs.instructions}``)."""
TEMPLATE_NAMES = ("next_step", "retry", "branch", "unblock")


@dataclass(frozen=True)
class SupervisionChoice:
    """The profile and mode a run's worker gets, and why."""

    profile: str
    mode: SupervisionModeName
    provider: str
    model: str
    trust: str
    chosen_by: ChosenBy
    """``requested`` (--profile / $SUPERVISOR_PROFILE), ``preference`` (``profile.AGENT`` or ``profile``),
    ``agent`` (the profile lists the agent) or ``default``."""
    preference: str | None = None
    """With ``chosen_by: preference``: the preference's key."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def mode_of(profile: WorkerProfile) -> SupervisionModeName:
    return profile.mode or BY_TRUST[profile.trust]


def check_supervision(policy: Policy) -> None:
    """A resolved policy's ``supervision`` names a default profile it has (a child policy may add
    profiles to its parent's, so this is checked once resolved)."""
    sup = policy.supervision
    if sup.default_profile not in sup.profiles:
        raise PolicyError(f"policy {policy.name}: supervision.default_profile {sup.default_profile!r} is not one of "
                          f"its profiles ({', '.join(sorted(sup.profiles)) or 'none'})",
                          "name one of them, or add that profile under supervision.profiles")


def require_profile(policy: Policy, name: str) -> None:
    """Refuse a profile the policy does not have (a one-line error naming the ones it has)."""
    if name not in policy.supervision.profiles:
        raise UsageError(f"no worker profile {name!r} in the policy",
                         f"use one of {', '.join(sorted(policy.supervision.profiles))} "
                         "(`supervisor profiles` lists them)")


def preferred_profile(policy: Policy, agent: str | None, prefs: Mapping[str, str]) -> tuple[str, str] | None:
    """(preference key, profile) of the preference that names this run's profile, or None. A
    preference naming a profile the policy lacks is passed over (see :func:`ignored_preferences`)."""
    keys = ([f"{PREF_PROFILE}.{agent}"] if agent else []) + [PREF_PROFILE]
    for key in keys:
        name = (prefs.get(key) or "").strip()
        if name and name in policy.supervision.profiles:
            return key, name
    return None


def ignored_preferences(policy: Policy, agent: str | None, prefs: Mapping[str, str]) -> dict[str, str]:
    """Profile preferences that apply to this run but name no profile of the policy (journaled, so
    the person who set one learns why it did nothing)."""
    keys = ([f"{PREF_PROFILE}.{agent}"] if agent else []) + [PREF_PROFILE]
    return {k: prefs[k] for k in keys if (prefs.get(k) or "").strip()
            and prefs[k].strip() not in policy.supervision.profiles}


def choose(policy: Policy, agent: str | None = None, requested: str | None = None,
           prefs: Mapping[str, str] | None = None) -> SupervisionChoice:
    """The profile for a worker: ``requested`` by name, else by preference, else by agent, else the
    default profile."""
    check_supervision(policy)
    sup = policy.supervision
    pref_key: str | None = None
    how: ChosenBy
    if requested:
        require_profile(policy, requested)
        name, how = requested, "requested"
    elif (found := preferred_profile(policy, agent, prefs or {})) is not None:
        (pref_key, name), how = found, "preference"
    else:
        listed = next((n for n, p in sup.profiles.items() if agent and agent in p.agents), None)
        name, how = (listed, "agent") if listed is not None else (sup.default_profile, "default")
    p = sup.profiles[name]
    return SupervisionChoice(name, mode_of(p), p.provider, p.model, p.trust, how, pref_key)


def apply_mode(policy: Policy, mode: SupervisionModeName) -> Policy:
    """The policy with ``mode`` applied over its workflow knobs (unchanged when the mode sets nothing)."""
    m = policy.supervision.modes.get(mode)
    if m is None:
        return policy
    budgets = policy.budgets.model_copy(update={"max_retries_per_node": m.max_retries_per_node}
                                        if m.max_retries_per_node is not None else {})
    templates = policy.templates.model_copy(update={str(k): v for k, v in m.templates.items()})
    pause_update: dict[str, Any] = {}
    if m.pause_mode is not None:
        pause_update["mode"] = m.pause_mode
    if m.max_auto_interventions is not None:
        pause_update["max_auto_interventions"] = m.max_auto_interventions
    if m.ai_after_s is not None:
        pause_update["ai_after_s"] = m.ai_after_s
    pause = policy.pause.model_copy(update=pause_update)
    return policy.model_copy(update={"budgets": budgets, "templates": templates, "pause": pause})


def _literal(text: str) -> str:
    """Text placed into a template, kept literal when the template is rendered (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def fill_prefs(template: str, prefs: Mapping[str, str]) -> str:
    """``template`` with each ``{prefs.KEY}`` replaced by that preference (empty when it is not
    set); other placeholders are left for the gate to fill."""
    out = []
    try:
        parts = list(Formatter().parse(template))
    except ValueError:  # a stray brace: the gate's render leaves such a template as it is, so do we
        return template
    for literal, name, spec, conv in parts:
        out.append(_literal(literal))
        if name is None:
            continue
        if name.startswith("prefs."):
            out.append(_literal(prefs.get(name[len("prefs."):], "")))
        else:
            out.append("{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}")
    return "".join(out)


def apply_prefs(policy: Policy, prefs: Mapping[str, str]) -> Policy:
    """The policy with the people's preferences applied to the instructions it hands over: every
    ``{prefs.KEY}`` filled, and ``instructions`` appended to each template that does not place it."""
    update = {}
    extra = (prefs.get(PREF_INSTRUCTIONS) or "").strip()
    for name in TEMPLATE_NAMES:
        text = getattr(policy.templates, name)
        placed = "{prefs." + PREF_INSTRUCTIONS + "}" in text
        filled = fill_prefs(text, prefs)
        if extra and not placed:
            filled = filled.rstrip() + "\n\n" + _literal(extra)
        if filled != text:
            update[name] = filled
    if not update:
        return policy
    return policy.model_copy(update={"templates": policy.templates.model_copy(update=update)})


def workflow_policy(policy: Policy, agent: str | None = None, requested: str | None = None,
                    prefs: Mapping[str, str] | None = None) -> tuple[Policy, SupervisionChoice]:
    """The policy a workflow run obeys (the mode of its profile, then the preferences) and the choice."""
    choice = choose(policy, agent, requested, prefs)
    return apply_prefs(apply_mode(policy, choice.mode), prefs or {}), choice


def recorded_workflow_policy(policy: Policy, events: list[Any]) -> Policy:
    """``policy`` as a recorded workflow run obeyed it: the mode of the profile its ``supervision`` note
    names (when ``policy`` has that profile) and the preferences of its ``preferences`` note, so a
    replay under any policy decides as that run's worker would have been supervised."""
    notes = {e.payload.get("type"): e.payload for e in events
             if e.kind == "note" and e.payload.get("type") in ("supervision", "preferences")}
    prefs = {str(k): str(v) for k, v in ((notes.get("preferences") or {}).get("values") or {}).items()}
    name = (notes.get("supervision") or {}).get("profile")
    if name in policy.supervision.profiles:
        policy = apply_mode(policy, mode_of(policy.supervision.profiles[name]))
    return apply_prefs(policy, prefs)
