"""`supervisor runs`: list runs; `supervisor runs show RUN_ID`: one run in detail; `supervisor
runs why RUN_ID [SEQ|DECISION_ID|--last]`: why one decision was made.

Reads the warehouse after ingesting new journal lines. When another process holds the
warehouse lock, the list falls back to reading the journals directly (they are the
source of truth) and says so. Every ``runs`` command takes a run id, a unique prefix of one,
or ``last`` (:data:`RUN_ID`).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import click
from rich.panel import Panel
from rich.text import Text

from supervisor.cli import console, err_console, settings_from
from supervisor.cli.output import df_records, print_df, print_json
from supervisor.errors import InputError, WarehouseLocked
from supervisor.runref import resolve_run_id
from supervisor.settings import Settings

if TYPE_CHECKING:
    from supervisor.analysis.why import DecisionExplanation



class RunRef(click.ParamType):
    """A run id, a unique prefix of one (with or without ``run_``), or ``last``; resolved against
    the journals folder of the invocation's settings."""

    name = "RUN_ID"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        s = settings_from(ctx) if ctx is not None else Settings()
        return resolve_run_id(str(value), s.journals_dir)


RUN_ID = RunRef()
"""The parameter type of every ``RUN_ID`` argument (``runs ...``, ``report run``)."""

LIST_COLUMNS = ["run_id", "started_at", "agent", "outcome", "paused", "duration_s", "observations", "answers",
                "escalations", "friction_events", "friction_seconds"]


@click.group("runs", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print runs as a JSON array.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Show at most this many.")
@click.pass_context
def runs(ctx: click.Context, as_json: bool, limit: int) -> None:
    """List supervised runs, newest first. Subcommands act on one run."""
    if ctx.invoked_subcommand is not None:
        return
    from supervisor.history import list_runs
    from supervisor.warehouse import reader

    s = settings_from(ctx).ensure()
    try:
        with reader(s) as wh:
            df = wh.runs_df().head(limit)
    except WarehouseLocked as exc:
        err_console.print(f"[yellow]{exc.one_line()}; listing from journals instead[/]")
        rows = [r.to_dict() for r in list_runs(s.journals_dir)[:limit]]
        if as_json:
            print_json(rows)
        else:
            for r in rows:
                started = dt.datetime.fromtimestamp(r["started_at"] or 0).isoformat(timespec="seconds")
                console.print(f"{r['run_id']}  {started}  {r['agent'] or '-'}  {r['outcome'] or r['state'] or '-'}"
                              f"{'  PAUSED: ' + str(r['pause_reason']) if r['paused'] else ''}")
        return
    if as_json:
        print_json(df_records(df))
        return
    if df.height == 0:
        console.print(f"no runs yet in {s.warehouse} (start one with `supervisor run -- COMMAND`)")
        return
    print_df(console, df.select([c for c in LIST_COLUMNS if c in df.columns]), title="runs")


@runs.command("show")
@click.argument("run_id", type=RUN_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the run, its decisions and friction as JSON.")
@click.option("--events", "n_events", type=click.IntRange(min=0), default=15, show_default=True,
              help="How many of the latest decisions to show.")
@click.pass_context
def show(ctx: click.Context, run_id: str, as_json: bool, n_events: int) -> None:
    """Show one run: where it stands, what was decided, what friction it met (and the seconds it cost)."""
    from supervisor.warehouse import reader

    s = settings_from(ctx).ensure()
    with reader(s) as wh:
        run = wh.run_df(run_id)
        if run.height == 0:
            raise InputError(f"no run {run_id!r} in {s.warehouse}", "list runs with `supervisor runs`")
        decisions = wh.sql(
            "SELECT d.decision_id, d.occurred_at, d.kind, d.keys, d.approves, d.reason, d.rule, d.next_action, "
            "o.state, o.prompt_kind, o.question FROM decisions d LEFT JOIN observations o "
            "ON o.observation_id = d.trigger_id WHERE d.run_id = ? ORDER BY d.seq", [run_id])
        friction = wh.sql("SELECT friction_id, seq, occurred_at, kind, seconds_lost, ended_by, selected, rule, "
                          "pattern, detail FROM friction_events WHERE run_id = ? ORDER BY seq", [run_id])
        counts = wh.sql("SELECT kind, count(*) AS n FROM events WHERE run_id = ? GROUP BY kind ORDER BY kind",
                        [run_id])
    if as_json:
        print_json({"run": df_records(run)[0], "event_counts": {r["kind"]: r["n"] for r in df_records(counts)},
                    "decisions": df_records(decisions), "friction": df_records(friction)})
        return
    row = df_records(run)[0]
    for key in ("run_id", "started_at", "ended_at", "command", "agent", "pane_id", "policy_id", "outcome",
                "paused", "pause_reason", "next_action", "events"):
        if row.get(key) not in (None, ""):
            console.print(f"[bold]{key:14}[/] {row[key]}")
    console.print("[bold]events        [/] " + ", ".join(f"{r['kind']}={r['n']}" for r in df_records(counts)))
    if decisions.height:
        print_df(console, decisions.tail(n_events).select(
            ["occurred_at", "kind", "keys", "approves", "state", "question", "reason"]), title="latest decisions")
    if friction.height:
        print_df(console, friction.select(["seq", "occurred_at", "kind", "seconds_lost", "ended_by", "pattern",
                                           "detail"]), title="friction")
        console.print(f"explain a decision: supervisor runs why {run_id} SEQ")


@runs.command("why")
@click.argument("run_id", type=RUN_ID)
@click.argument("target", required=False, metavar="[SEQ|DECISION_ID]")
@click.option("--last", "last", is_flag=True, help="Explain the run's last decision.")
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as one JSON object.")
@click.pass_context
def why(ctx: click.Context, run_id: str, target: str | None, last: bool, as_json: bool) -> None:
    """Why a decision was made: the screen it saw (redacted), the classification and the rules
    that fired, the rule that decided, what was sent and whether it took, what happened next,
    and for an escalation how long it waited and what the human did. SEQ is any journal seq of
    the run (a decision, the screen that triggered one, or an event that belongs to one);
    without SEQ or --last: the run's latest escalation, else its latest decision that acted."""
    from supervisor.analysis.why import explain_decision
    from supervisor.warehouse import reader

    if last and target is not None:
        raise click.UsageError("give SEQ/DECISION_ID or --last, not both")
    s = settings_from(ctx).ensure()
    pick: int | str | None = int(target) if target is not None and target.isdigit() else target
    with reader(s) as wh:
        x = explain_decision(wh, run_id, pick, last=last)
    if as_json:
        print_json(x.model_dump(mode="json"))
        return
    _print_why(x)


def _say(text: str, style: str = "") -> None:
    """Print text that may come from an agent's screen: never read as rich markup."""
    console.print(Text(text, style=style))


def _print_why(x: DecisionExplanation) -> None:
    policy = f"{x.policy_name} ({x.policy_id})" if x.policy_name else str(x.policy_id)
    _say(f"run {x.run_id} · decision {x.decision_id} (seq {x.seq}) at {x.at} · agent {x.agent} · policy {policy}",
         "bold")
    c = x.classification
    if x.screen is not None:
        where = f"seq {c.seq}, " if c is not None else ""
        body = "\n".join(x.screen.strip("\n").splitlines()) or "(blank)"
        console.print(Panel(Text(body), title=f"screen ({where}as stored, secrets redacted)", title_align="left",
                            expand=False))
    if c is not None:
        _say("classification", "bold")
        line = f"  {c.trigger} {c.trigger_id}: {c.state}"
        if c.confidence is not None:
            line += f", confidence {c.confidence:g}"
        _say(line)
        if c.prompt:
            p = c.prompt
            _say(f"  prompt {p.get('kind')}: {p.get('question')!r} (answered by {p.get('input_style')})")
            for o in p.get("options") or []:
                marks = [m for m, on in (("highlighted", o.get("highlighted")), ("persistent", o.get("persistent")))
                         if on]
                role = {True: "approves", False: "declines", None: "neutral"}[o.get("approves")]
                _say(f"    {o.get('key') or '-'}  {o.get('label')}  [{', '.join([role, *marks])}]")
            risk = p.get("risk") or {}
            matched = ", ".join(risk.get("matched") or []) or "no pattern"
            _say(f"  risk {risk.get('level')} ({matched}); subject: {risk.get('subject') or '-'}")
        if c.blocker:
            _say(f"  blocker {c.blocker.get('kind')}: {c.blocker.get('message')}")
        _say(f"  rules that fired: {', '.join(c.evidence) or '-'}")
    d = x.decision
    _say("decision", "bold")
    _say(f"  {d.get('kind')} by rule {x.rule or '-'} ({d.get('source')}): {d.get('reason')}")
    if d.get("keys") or d.get("text"):
        _say(f"  keys {' '.join(d.get('keys') or []) or '-'}" + (f", text {d['text']!r}" if d.get("text") else "")
             + f", approves {d.get('approves')}")
    if d.get("next_action"):
        _say(f"  next action for a human: {d['next_action']}")
    _say("sent", "bold")
    if not x.sent:
        _say("  nothing")
    for a in x.sent:
        confirmed = a.get("confirmed")
        state = (("error: " + str(a["error"])) if a.get("error") else "took" if confirmed is True
                 else "did not take" if confirmed is False else "delivered" if a.get("delivered")
                 else "intent journaled")
        _say(f"  seq {a['seq']} {a['at']}: {a.get('kind')} {' '.join(a.get('keys') or [])} -> {state}")
    if x.escalation:
        e = x.escalation
        _say("the escalation", "bold")
        human = ""
        if e.get("human_keys"):
            human += f"; the human pressed {' '.join(map(str, e['human_keys']))}"
        if e.get("selected"):
            human += f", selecting {e['selected']!r}"
        _say(f"  waited {e.get('seconds_lost')} s, ended by {e.get('ended_by')} at {e.get('ended_at')}{human}")
    _say("what happened next", "bold")
    if not x.next:
        _say("  nothing yet")
    for h in x.next:
        _say(f"  seq {h.seq} {h.at}: {h.what}")
    other = [f for f in x.friction if f["kind"] != "escalation"]
    if other:
        _say("friction", "bold")
        for f in other:
            _say(f"  {f['kind']}: {f['seconds_lost']} s lost ({f['detail']})")
    if x.shadows:
        _say("shadow policies on the same screen", "bold")
        for sh in x.shadows:
            same = "agrees" if (sh.get("kind"), sh.get("keys") or []) == (d.get("kind"), d.get("keys") or []) \
                else "DIFFERS"
            _say(f"  {sh.get('shadow_policy_id')}: {sh.get('kind')} {' '.join(sh.get('keys') or [])} "
                 f"by {sh.get('rule')} ({same})")


def _register_workflow() -> None:
    """The run-workflow commands (review, stop, resume, task, replay...) and ACP's ``runs answer`` live in
    their own modules and add themselves to ``runs``."""
    from supervisor.cli import acp_cmds, runs_workflow_cmds  # noqa: F401 - importing registers the commands


_register_workflow()
