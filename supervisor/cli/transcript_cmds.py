"""`supervisor follow TRANSCRIPT --spec SPEC`: a workflow run observed from an agent's JSONL
transcript alone (no pane; observe-only)."""

from __future__ import annotations

from pathlib import Path

import click

from supervisor.cli import echo, settings_from
from supervisor.errors import EXIT_CHECK_FAILED, EXIT_ESCALATED

_EXIT = {"finished": 0, "stopped": 0, "escalated": EXIT_ESCALATED, "timeout": EXIT_CHECK_FAILED}


@click.command("follow")
@click.argument("transcript", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--spec", "spec_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The approved workflow spec the run is held to.")
@click.option("--cwd", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Where the verifiers run (the agent's project; default: the current directory).")
@click.option("--agent", default="unknown", help="The agent writing the transcript (claude, codex...), for the record.")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="The policy (default: $SUPERVISOR_POLICY, else the promoted one).")
@click.option("--profile", default=None,
              help="The worker profile (its supervision mode shapes the workflow; default: $SUPERVISOR_PROFILE, "
                   "the preference `profile.AGENT` or `profile`, the profile listing --agent, the policy's "
                   "default).")
@click.option("--run-id", default=None, help="Continue this run from its journal (after a restart).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None, help="Stop following after SECONDS.")
@click.pass_context
def follow_cmd(ctx: click.Context, transcript: Path, spec_path: Path, cwd: Path | None, agent: str,
               policy_path: Path | None, profile: str | None, run_id: str | None, timeout: float | None) -> None:
    """Follow a workflow run from an agent's JSONL transcript alone (no pane, observe-only): checkpoints
    are read from the transcript, verifiers run in --cwd, and each instruction for the agent is
    journaled and sent as a notification instead of typed. `supervisor session jsonl PANE` finds a
    pane's transcript. Exit 0 when the workflow finished (or was stopped), 5 when stopped while
    paused, 1 at --timeout."""
    import os

    from supervisor.cli.live_cmds import resolve_policy
    from supervisor.workflow.transcript_only import follow_transcript

    s = settings_from(ctx).ensure()
    policy = resolve_policy(s, policy_path)
    rid, outcome = follow_transcript(s, transcript, spec_path, policy=policy, cwd=cwd, run_id=run_id,
                                     timeout=timeout, agent=agent,
                                     profile=profile or os.environ.get("SUPERVISOR_PROFILE") or None, echo=click.echo)
    echo(f"run {rid} {outcome}")
    ctx.exit(_EXIT[outcome])
