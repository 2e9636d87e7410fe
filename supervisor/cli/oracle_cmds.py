"""`supervisor oracle consult`: an advisory second opinion from a stronger model (read-only)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from supervisor.cli import echo, settings_from
from supervisor.cli.output import print_json
from supervisor.cli.runs_cmds import RUN_ID
from supervisor.settings import Settings

if TYPE_CHECKING:
    from supervisor.judge.oracle import OracleOpinion


@click.group("oracle")
def oracle() -> None:
    """A second opinion from a stronger model: advisory, read-only, cached and budgeted."""


@oracle.command("consult")
@click.option("--question", "-q", required=True, help="What to ask.")
@click.option("--file", "files", multiple=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A file to show the model (repeatable; redacted, at most 20,000 characters each).")
@click.option("--mode", type=click.Choice(["review", "plan", "debug"]), default="review", show_default=True,
              help="What kind of opinion.")
@click.option("--model", default=None, help="The model to ask (default: the policy's judge.model).")
@click.option("--run", "run_id", type=RUN_ID, default=None,
              help="Store the consultation with this run: in its journal (an `oracle` note and the model call), "
                   "shown by `runs show`; the run's judge budget applies.")
@click.option("--json", "as_json", is_flag=True, help="Print the opinion as JSON.")
@click.pass_context
def consult_cmd(ctx: click.Context, question: str, files: tuple[Path, ...], mode: str, model: str | None,
                run_id: str | None, as_json: bool) -> None:
    """Ask a stronger model for an advisory review of QUESTION and FILEs. Without a model key
    (ANTHROPIC_API_KEY), or when the budget refuses, the answer is a self-review checklist."""
    import os

    from supervisor.cli.live_cmds import resolve_policy
    from supervisor.judge.anthropic_judge import make_caller
    from supervisor.judge.oracle import consult_oracle

    s = settings_from(ctx).ensure()
    if not question.strip():
        raise click.UsageError("the question is empty")
    judge = resolve_policy(s, None).judge
    if model:
        judge = judge.model_copy(update={"model": model})
    caller = make_caller(judge, settings=s) if os.environ.get("ANTHROPIC_API_KEY") else None
    if run_id:
        from supervisor.ledger import require_run

        require_run(s.journals_dir, run_id)  # refused before anything is asked
    opinion = consult_oracle(caller, judge, mode, question, list(files), run_id=run_id or "")  # type: ignore[arg-type]
    stored = _store(s, run_id, opinion) if run_id else None
    if as_json:
        print_json(opinion.model_dump(mode="json") | ({"stored": stored} if stored else {}))
        return
    call = opinion.call
    where = (f"{opinion.model}" + (", from the cache" if call and call.cache_hit else
                                   f", ${call.cost_usd:.4f}" if call else "")) if opinion.source == "model" \
        else "self-review"
    echo(f"[{mode} · {where}] {opinion.summary}")
    for c in opinion.concerns:
        echo(f"  concern: {c}")
    for r in opinion.recommendations:
        echo(f"  do: {r}")
    if opinion.confidence:
        echo(f"  confidence: {opinion.confidence}")
    if run_id:
        from supervisor.cli.hints import program

        where = {"journaled": "in its journal", "pending": "handed to its live supervisor, which journals it",
                 "ledger": "in the annotations ledger (its live supervisor does not take journal requests)"}
        echo(f"stored with {run_id} {where[str(stored)]} (`{program()} runs show {run_id}` lists it)")


def _store(s: Settings, run_id: str, opinion: OracleOpinion) -> str:
    """Keep the consultation with the run: in its journal (through its live supervisor when it has
    one), else, when that supervisor cannot take it, as an ``oracle`` note in the annotations ledger."""
    from supervisor.settings import user_name
    from supervisor.workflow.inbox import submit

    by = user_name("unknown")
    got = submit(s, run_id, opinion.journal_events(by=by))
    if got == "journaled":
        from supervisor.warehouse import try_sync

        try_sync(s)  # into the warehouse now, when the lock allows (else the run's own ingest, or the next sync)
    if got != "refused":
        return got
    from supervisor.cli.annotation_cmds import _record
    from supervisor.ledger import last_seq

    _record(s, kind="note", type="oracle", run_id=run_id, after_seq=last_seq(s.journals_dir, run_id),
            author=f"oracle:{opinion.model or 'self-review'} for {by}",
            text=f"Q: {opinion.question}\n{opinion.as_text()}")
    return "ledger"
