"""Mine the command table from what humans approved: ``eval propose`` proposes an entry for a command
form the supervisor escalated as unknown and humans approved, every time, at least ``min_support``
times.

The proposal is as narrow as the evidence: the program with the very subcommand (or the bare
program) that was approved, reading its arguments as paths to place (never as text that could hide
a path), with effect ``read``, or ``run`` when the form runs the project's tools. It is never made for
a form a danger pattern names, whose words say it destroys, publishes, sends or runs code, or whose
command had any dangerous part; a human then reviews and the gate judges it on the command suites.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from supervisor.classify import compiled_rules
from supervisor.judgment.shell import parse_command
from supervisor.policy import Policy

RISKY_WORDS = re.compile(
    r"(?i)\b(rm|del(ete)?|drop|flush\w*|purge|wipe|truncate|destroy|kill|reset|clean|prune|remove|uninstall|"
    r"publish|deploy|release|push|upload|send|post|put|patch|apply|exec|eval|run-?script|shell|sudo|su|chmod|"
    r"chown|mv|cp|write|set|config|login|logout|token|secret|key|password|import|restore|migrate|rollback)\b")
"""Words that make a form more than a read: a miner never proposes an entry for one."""


def _unknown_form(obs: Any) -> tuple[str, str | None] | None:
    """(program, subcommand or None) of the one part of an escalated command that was unknown only
    because the table does not list it (every other part known safe), or None."""
    risk = obs.prompt.risk if obs.prompt is not None else None
    if risk is None or risk.level != "unknown" or risk.subject_kind != "command" or not risk.parts:
        return None
    unknown = [p for p in risk.parts if p.level not in ("none", "low")]
    if len(unknown) != 1 or unknown[0].rule not in ("unknown-program", "unknown-form") or risk.matched != [unknown[0].rule]:
        return None
    parsed = parse_command(unknown[0].text)
    if parsed.problems or len(parsed.commands) != 1:
        return None
    words = parsed.commands[0].words
    if not words or any(w.dynamic or w.glob for w in words) or "/" in words[0].text:
        return None
    prog = words[0].text
    sub = next((w.text for w in words[1:] if not w.text.startswith("-")), None)
    if sub is not None and ("/" in sub or "." in sub or "=" in sub):
        sub = None  # an argument (a path, a setting), not a subcommand
    if RISKY_WORDS.search(" ".join(w.text for w in words)):
        return None
    return prog, sub


def unknown_command_patterns(frame: pl.DataFrame, joined: pl.DataFrame, parent: Policy,
                             min_support: int) -> list[dict[str, Any]]:
    """Command forms the parent escalates as unknown that humans approved ``min_support`` times or more
    and never declined: one per (program, subcommand)."""
    from evals.replay import escalations_humans_resolved

    groups: dict[tuple[str, str | None], dict[str, Any]] = {}
    for row, obs in escalations_humans_resolved(frame, joined, parent):
        form = _unknown_form(obs)
        if form is None:
            continue
        option = next((o for o in obs.prompt.options if o.label == row["human_selected"]), None)
        g = groups.setdefault(form, {"approved": 0, "declined": 0, "runs": set(), "observations": [],
                                     "commands": set(), "agents": set()})
        if option is not None and option.approves is True and not option.persistent:
            g["approved"] += 1
        else:
            g["declined"] += 1
        g["runs"].add(row["run_id"])
        g["observations"].append(row["observation_id"])
        g["commands"].add(obs.prompt.risk.subject or "")
        g["agents"].add(obs.agent)
    out = []
    for (prog, sub), g in groups.items():
        if g["declined"] or g["approved"] < min_support:
            continue
        out.append({"program": prog, "subcommand": sub, "support": g["approved"], "runs": sorted(g["runs"]),
                    "agents": sorted(g["agents"]), "commands": sorted(g["commands"])[:10],
                    "observations": g["observations"][:20]})
    return sorted(out, key=lambda x: -x["support"])


def table_entry(parent: Policy, program: str, subcommand: str | None) -> dict[str, Any]:
    """The policy override that makes exactly this form known: a read whose arguments are placed."""
    form: dict[str, Any] = {"does": ["read"], "args": ["read*"],
                            "note": "mined from escalations humans approved (eval propose)"}
    known = parent.commands.programs.get(program)
    if subcommand is None:
        return {"commands": {"programs": {program: form}}}
    if known is not None and known.subcommands is not None:
        return {"commands": {"programs": {program: {"subcommands": {subcommand: form}}}}}
    return {"commands": {"programs": {program: {"does": ["read"], "subcommands": {subcommand: form},
                                                "note": form["note"]}}}}


def still_safe(policy: Policy, p: dict[str, Any]) -> bool:
    """No danger pattern of the policy names the form (a second look, over the commands humans approved)."""
    rules = compiled_rules(policy)
    return not any(rules.danger_any is not None and rules.danger_any.search(c) for c in p["commands"])
