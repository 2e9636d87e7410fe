"""`supervisor profiles`: worker profiles and supervision modes, as the policy defines them."""

from __future__ import annotations

import os
from pathlib import Path

import click

from supervisor.cli import echo, settings_from
from supervisor.cli.output import print_json


@click.command("profiles")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="The policy (default: $SUPERVISOR_POLICY, else the promoted one).")
@click.option("--agent", default=None,
              help="Also say which profile and mode a workflow run of this agent gets (with $SUPERVISOR_PROFILE and "
                   "the preferences `profile.AGENT` and `profile` as they stand now).")
@click.option("--json", "as_json", is_flag=True, help="Print profiles, modes and each mode's workflow settings as JSON.")
@click.pass_context
def profiles_cmd(ctx: click.Context, policy_path: Path | None, agent: str | None, as_json: bool) -> None:
    """Worker profiles (provider, model, trust) and the supervision mode each gets, with what every mode
    sets: retries per step before a human is asked, instruction wording, pause handling."""
    from supervisor.cli.live_cmds import resolve_policy
    from supervisor.workflow.profiles import apply_mode, check_supervision, choose, mode_of

    policy = resolve_policy(settings_from(ctx), policy_path)
    check_supervision(policy)
    sup = policy.supervision
    modes = {}
    for name in ("strict_verifier", "collaborative_reviewer", "directive_lead"):
        eff = apply_mode(policy, name)  # type: ignore[arg-type]
        m = sup.modes.get(name)  # type: ignore[call-overload]
        modes[name] = {"description": m.description if m else "", "max_retries_per_node": eff.budgets.max_retries_per_node,
                       "pause": eff.pause.mode, "max_auto_interventions": eff.pause.max_auto_interventions,
                       "templates": sorted(m.templates) if m else []}
    profiles = {n: {**p.model_dump(mode="json"), "mode": mode_of(p)} for n, p in sup.profiles.items()}
    chosen = None
    if agent:
        from supervisor import ledger

        prefs = {k: a.text for k, a in ledger.prefs(settings_from(ctx).annotations_path).items()}
        chosen = choose(policy, agent, os.environ.get("SUPERVISOR_PROFILE") or None, prefs).to_dict()
    if as_json:
        print_json({"default_profile": sup.default_profile, "profiles": profiles, "modes": modes, "agent": chosen})
        return
    echo("profiles:")
    for n, p in profiles.items():
        who = ", ".join(x for x in (p["provider"] if p["provider"] != "unknown" else "", p["model"]) if x) or "-"
        echo(f"  {n}{' (default)' if n == sup.default_profile else ''}: {who}, trust {p['trust']} -> "
                   f"{p['mode']}" + (f"; agents {', '.join(p['agents'])}" if p["agents"] else ""))
    echo("modes:")
    for n, m in modes.items():
        retries = m["max_retries_per_node"]
        echo(f"  {n}: {retries} {'retry' if retries == 1 else 'retries'} per step, pause {m['pause']}"
                   + (f" (up to {m['max_auto_interventions']} tries)" if m["pause"] == "notify_then_ai" else "")
                   + (f", own wording for {', '.join(m['templates'])}" if m["templates"] else "")
                   + (f". {m['description']}" if m["description"] else ""))
    if chosen:
        from supervisor.workflow.live import supervision_line

        echo(f"a workflow run of {agent}: {supervision_line(chosen)}")
