"""`supervisor runs`: list runs; `supervisor runs show RUN_ID`: one run in detail; `supervisor
runs why RUN_ID [SEQ|DECISION_ID|--last]`: why one decision was made.

Reads the warehouse after ingesting new journal lines. When another process holds the
warehouse lock, the list falls back to reading the journals directly (they are the
source of truth) and says so. Every ``runs`` command takes a run id, a unique prefix of one,
or ``last`` (:data:`RUN_ID`).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import click
from rich.panel import Panel
from rich.text import Text

from supervisor.cli import console, err_console, settings_from
from supervisor.cli.output import df_records, print_json
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
            console.print(runs_table(rows, s), markup=False, highlight=False)
        return
    if as_json:
        print_json(df_records(df))
        return
    if df.height == 0:
        console.print(f"no runs yet in {s.warehouse} (start one with `supervisor run -- COMMAND`)")
        return
    console.print(runs_table(df_records(df), s), markup=False, highlight=False)
    console.print("newest first; lost: seconds lost to friction. `supervisor runs show RUN` shows one run "
                  "(any unique prefix of its id works; --json gives full ids)", style="dim", highlight=False)


def runs_table(rows: list[dict[str, Any]], s: Settings) -> Any:
    """The run list at any terminal width: a row per run on one line, each run by its short unique
    prefix (never cut), the other columns cut with an ellipsis when narrow."""
    from supervisor.cli.output import fitted_table, seconds
    from supervisor.runref import short_ids

    short = short_ids([r["run_id"] for r in rows], s.journals_dir)
    out = []
    for r in rows:
        started = r.get("started_at")
        if isinstance(started, str):
            started = dt.datetime.fromisoformat(started)
        elif isinstance(started, int | float):  # from the journals
            started = dt.datetime.fromtimestamp(started)
        outcome = r.get("outcome") or ("paused" if r.get("paused") else "live")
        out.append([short[r["run_id"]], started.strftime("%m-%d %H:%M") if started else "-", r.get("agent") or "-",
                    outcome, seconds(r.get("duration_s")),
                    str(r["answers"] if "answers" in r else (r.get("decisions") or {}).get("answer", 0)),
                    str(r.get("escalations") if "escalations" in r else len(r.get("pauses") or [])),
                    seconds(r.get("friction_seconds"))])
    return fitted_table([("run", "left"), ("started", "left"), ("agent", "left"), ("outcome", "left"),
                         ("time", "right"), ("answers", "right"), ("escalations", "right"), ("lost", "right")],
                        out, width=console.width)


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
            "SELECT d.decision_id, d.seq, d.occurred_at, d.kind, d.keys, d.approves, d.reason, d.rule, d.next_action, "
            "o.state, o.prompt_kind, o.question FROM decisions d LEFT JOIN observations o "
            "ON o.observation_id = d.trigger_id WHERE d.run_id = ? ORDER BY d.seq", [run_id])
        friction = wh.sql("SELECT friction_id, seq, occurred_at, kind, seconds_lost, ended_by, selected, rule, "
                          "pattern, detail FROM friction_events WHERE run_id = ? ORDER BY seq", [run_id])
        counts = wh.sql("SELECT kind, count(*) AS n FROM events WHERE run_id = ? GROUP BY kind ORDER BY kind",
                        [run_id])
        oracle = wh.sql("SELECT consultation_id, seq, occurred_at, mode, source, model, question, summary, "
                        "CAST(concerns AS VARCHAR) AS concerns, CAST(recommendations AS VARCHAR) AS recommendations, "
                        "fallback_reason, asked_by, cost_usd, cache_hit, stored_in FROM oracle_consultations "
                        "WHERE run_id = ? ORDER BY occurred_at, consultation_id", [run_id])
    if as_json:
        consultations = df_records(oracle)
        for c in consultations:
            for key in ("concerns", "recommendations"):
                c[key] = json.loads(c[key]) if c.get(key) else []
        print_json({"run": df_records(run)[0], "event_counts": {r["kind"]: r["n"] for r in df_records(counts)},
                    "decisions": df_records(decisions), "friction": df_records(friction), "oracle": consultations})
        return
    from supervisor.runref import short_id

    row = df_records(run)[0]
    for key in ("run_id", "started_at", "ended_at", "command", "agent", "pane_id", "policy_id", "outcome",
                "paused", "pause_reason", "next_action", "events"):
        if row.get(key) not in (None, ""):
            _say(f"{key:14} {_clock(row[key], date=True) if key.endswith('_at') else row[key]}", "")
    _say("event kinds    " + ", ".join(f"{r['kind']}={r['n']}" for r in df_records(counts)))
    # One line per decision and per friction row, each starting with its seq (`runs why RUN SEQ` takes
    # it); what is prose (a reason, a question) wraps, nothing is folded into narrow columns.
    if decisions.height:
        shown = df_records(decisions.tail(n_events))
        _say(f"latest decisions ({len(shown)} of {decisions.height})", "bold")
        for d in shown:
            keys = " ".join(json.loads(d["keys"]) if isinstance(d["keys"], str) else d["keys"] or [])
            on = f"{d['state']}" + (f' "{d["question"]}"' if d.get("question") else "") if d.get("state") else ""
            _say(f"  seq {d['seq']} {_clock(d['occurred_at'])} {d['kind']}" + (f" {keys}" if keys else "")
                 + (f" · {on}" if on else "") + f" · {d['reason']}")
    if friction.height:
        _say("friction", "bold")
        for f in df_records(friction):
            ended = f" (ended by {f['ended_by']})" if f.get("ended_by") else ""
            lost = f"{f['seconds_lost']:.1f} s lost" if f.get("seconds_lost") is not None else "time lost unknown"
            _say(f"  seq {f['seq']} {_clock(f['occurred_at'])} {f['kind']}: {lost}{ended}"
                 + (f" · {f['pattern']}" if f.get("pattern") else "") + (f" · {f['detail']}" if f.get("detail") else ""))
    if decisions.height or friction.height:
        console.print(f"explain a decision: supervisor runs why {short_id(run_id, s.journals_dir)} SEQ",
                      style="dim", highlight=False)
    if oracle.height:
        _say("oracle consultations (advisory; nothing acted on them)", "bold")
        for c in df_records(oracle):
            who = c["model"] if c["source"] == "model" else "self-review" if c["source"] else "note"
            cost = ("from the cache" if c["cache_hit"] else f"${c['cost_usd']:.4f}") if c["cost_usd"] is not None \
                else c["fallback_reason"] or c["stored_in"]
            _say(f"  seq {c['seq']} {_clock(c['occurred_at'], date=True)} [{c['mode'] or '-'} · {who} · {cost}] asked by {c['asked_by']}: "
                 f"{c['question'] or ''}")
            _say(f"    {c['summary']}")


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
    from supervisor.cli.live_cmds import first_event, with_attach

    first = first_event(s.journal_path(run_id)).get("payload", {})
    next_action = x.decision.get("next_action")
    if next_action:  # "tmux attach" with the run's own socket and session
        x.decision["next_action"] = with_attach(str(next_action), first.get("socket"), first.get("session"))
    _print_why(x)


def _say(text: str, style: str = "") -> None:
    """Print text that may come from an agent's screen: never read as rich markup."""
    console.print(Text(text, style=style))


def _clock(value: Any, *, date: bool = False) -> str:
    """A warehouse time as a person reads it: ``22:08:04`` (with the date when asked), to the second."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")
    return "-" if value is None else str(value)


def _screen_rows(text: str) -> str:
    """A stored screen for reading: a run of more than two blank rows (a mostly empty pane) shows as
    one line saying how many."""
    out: list[str] = []
    blank = 0
    for line in [*text.strip("\n").splitlines(), None]:
        if line is not None and not line.strip():
            blank += 1
            continue
        if blank > 2:
            out.append(f"({blank} blank rows)")
        else:
            out += [""] * blank
        blank = 0
        if line is not None:
            out.append(line)
    return "\n".join(out)


def _print_why(x: DecisionExplanation) -> None:
    policy = f"{x.policy_name} ({x.policy_id})" if x.policy_name else str(x.policy_id)
    _say(f"run {x.run_id} · decision {x.decision_id} (seq {x.seq}) at {x.at} · agent {x.agent} · policy {policy}",
         "bold")
    c = x.classification
    if x.screen is not None:
        where = f"seq {c.seq}, " if c is not None else ""
        body = _screen_rows(x.screen) or "(blank)"
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
            if risk.get("parts"):
                _say("  the command, part by part (command judgment):")
                for part in risk["parts"]:
                    _say(f"    {part.get('level'):9} {part.get('text')}  · {part.get('reason')} [{part.get('rule')}]")
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
    if x.people:
        _say("what people recorded about this run", "bold")
        for n in x.people:
            signal = f" (signal: {n['signal']})" if n.get("signal") else ""
            _say(f"  {n['occurred_at']} {n['kind']} [{n['type']}] by {n['author']} after seq {n['after_seq']}: "
                 f"{n['text']}{signal}")
    if x.supervision:
        from supervisor.workflow.live import supervision_line

        _say("supervision", "bold")
        _say(f"  {supervision_line(x.supervision)}")
    if x.run_prefs:
        _say("preferences this run's instructions use (as they stood when it started)", "bold")
        for k, v in x.run_prefs.items():
            _say(f"  {k} = {v}")
    if x.prefs and x.prefs != x.run_prefs:
        _say("preferences in effect then", "bold")
        for k, v in x.prefs.items():
            _say(f"  {k} = {v}")
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
