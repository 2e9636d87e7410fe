"""`supervisor notes|friction|prefs`: what people record by hand, for the runs and for each other.

Each ``add``/``set`` appends one record to the annotations ledger (:mod:`supervisor.ledger`)
before it returns, then ingests it into the warehouse when the lock allows (a notebook holding
the file open only delays that to the next sync). ``notes list`` and ``prefs show`` read the
ledger itself; ``friction list|summarize`` read the warehouse, where friction people recorded
meets the friction the supervisor recorded itself.
"""

from __future__ import annotations

import click

from supervisor.cli import console, echo, err_console, settings_from
from supervisor.cli.output import df_records, print_df, print_json
from supervisor.cli.runs_cmds import RUN_ID
from supervisor.settings import Settings, user_name


def _record(s: Settings, **fields: object) -> str:
    from supervisor import ledger
    from supervisor.warehouse import try_sync

    rec = ledger.append(s.annotations_path, ledger.Annotation.model_validate(fields))
    if try_sync(s) is None:
        err_console.print("the warehouse is busy (another process holds it): recorded in the ledger, "
                          "ingested at the next sync", markup=False)
    return rec.annotation_id


def _author(by: str | None) -> str:
    return by or user_name("unknown")


# -- notes -----------------------------------------------------------------------------------------------


@click.group("notes")
def notes() -> None:
    """Notes shared between runs and the people watching them (by type and run)."""


@notes.command("add")
@click.argument("text")
@click.option("--type", "note_type", default="info", show_default=True,
              help="What kind of note (info, decision, handoff, todo...: letters, digits, _ . -).")
@click.option("--run", "run_id", type=RUN_ID, default=None, help="The run it is about (an id, a prefix, or last).")
@click.option("--by", default=None, help="Who writes it (default: the current user).")
@click.pass_context
def notes_add(ctx: click.Context, text: str, note_type: str, run_id: str | None, by: str | None) -> None:
    """Add a note (secrets in TEXT are redacted before it is stored)."""
    from supervisor.ledger import check_name, require_run

    if not text.strip():
        raise click.UsageError("the note is empty")
    s = settings_from(ctx).ensure()
    after = require_run(s.journals_dir, run_id) if run_id else None
    nid = _record(s, kind="note", type=check_name(note_type, "type"), text=text, run_id=run_id, after_seq=after,
                  author=_author(by))
    echo(f"note {nid} added" + (f" to {run_id}" if run_id else ""))


@notes.command("list")
@click.option("--type", "note_type", default=None, help="Only notes of this type.")
@click.option("--run", "run_id", type=RUN_ID, default=None, help="Only notes about this run.")
@click.option("--json", "as_json", is_flag=True, help="Print the notes as a JSON array.")
@click.pass_context
def notes_list(ctx: click.Context, note_type: str | None, run_id: str | None, as_json: bool) -> None:
    """List notes, oldest first."""
    import datetime as dt

    from supervisor import ledger

    s = settings_from(ctx)
    found = ledger.notes(s.annotations_path, run_id=run_id, type=note_type)
    if as_json:
        print_json([a.model_dump(mode="json") for a in found])
        return
    if not found:
        echo("no notes yet (add one with `supervisor notes add TEXT`)")
        return
    for a in found:
        when = dt.datetime.fromtimestamp(a.at).isoformat(timespec="seconds")
        echo(f"{when}  [{a.type}] {a.author}{' on ' + a.run_id if a.run_id else ''}: {a.text}")


# -- friction --------------------------------------------------------------------------------------------


@click.group("friction")
def friction() -> None:
    """Friction people saw and the supervisor could not (recorded by hand), with what it recorded itself."""


@friction.command("add")
@click.option("--kind", required=True, help="What went wrong (repeated_confirmation, wrong_answer, slow_start...).")
@click.option("--message", required=True, help="What happened, in a sentence.")
@click.option("--run", "run_id", type=RUN_ID, default="last", show_default=True,
              help="The run it happened in (an id, a prefix, or last).")
@click.option("--signal", default=None, help="The signal behind it (user_repeated_approval...).")
@click.option("--seconds-lost", type=click.FloatRange(min=0), default=None, help="The time it cost, if known.")
@click.option("--by", default=None, help="Who records it (default: the current user).")
@click.pass_context
def friction_add(ctx: click.Context, kind: str, message: str, run_id: str, signal: str | None,
                 seconds_lost: float | None, by: str | None) -> None:
    """Record friction in a run by hand; it counts in `runs show`, `runs why`, reports and notebooks."""
    from supervisor.ledger import check_name, require_run

    s = settings_from(ctx).ensure()
    after = require_run(s.journals_dir, run_id)
    fid = _record(s, kind="friction", type=check_name(kind, "kind"), text=message, run_id=run_id, after_seq=after,
                  signal=check_name(signal, "signal") if signal else None, seconds_lost=seconds_lost,
                  author=_author(by))
    echo(f"friction {fid} ({kind}) recorded in {run_id}")


def _friction_where(run_id: str | None, kind: str | None) -> tuple[str, list[object]]:
    clauses, params = [], []
    if run_id:
        clauses.append("f.run_id = ?")
        params.append(run_id)
    if kind:
        clauses.append("f.kind = ?")
        params.append(kind)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


_BY = ("CASE WHEN f.friction_id IN (SELECT annotation_id FROM annotations) THEN 'person' ELSE 'supervisor' END")


@friction.command("list")
@click.option("--run", "run_id", type=RUN_ID, default=None, help="Only this run's friction.")
@click.option("--kind", default=None, help="Only friction of this kind.")
@click.option("--json", "as_json", is_flag=True, help="Print the friction as a JSON array.")
@click.pass_context
def friction_list(ctx: click.Context, run_id: str | None, kind: str | None, as_json: bool) -> None:
    """List friction, oldest first: what people recorded and what the supervisor measured."""
    from supervisor.warehouse import reader

    s = settings_from(ctx).ensure()
    where, params = _friction_where(run_id, kind)
    with reader(s) as wh:
        df = wh.sql(f"SELECT f.friction_id, f.run_id, f.occurred_at, f.kind, round(f.seconds_lost, 3) AS seconds_lost, "
                    f"{_BY} AS recorded_by, f.author, f.detail FROM friction_events f{where} "
                    "ORDER BY f.occurred_at, f.friction_id", params)
    if as_json:
        print_json(df_records(df))
    elif df.height == 0:
        echo("no friction recorded (add some with `supervisor friction add --kind KIND --message TEXT`)")
    else:
        print_df(console, df, title="friction")


@friction.command("summarize")
@click.option("--run", "run_id", type=RUN_ID, default=None, help="Only this run's friction.")
@click.option("--kind", default=None, help="Only friction of this kind.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def friction_summarize(ctx: click.Context, run_id: str | None, kind: str | None, as_json: bool) -> None:
    """Friction by kind and by who recorded it: events, runs, seconds lost, the latest message."""
    from supervisor.warehouse import reader

    s = settings_from(ctx).ensure()
    where, params = _friction_where(run_id, kind)
    with reader(s) as wh:
        df = wh.sql(f"SELECT f.kind, {_BY} AS recorded_by, count(*) AS events, count(DISTINCT f.run_id) AS runs, "
                    "round(sum(f.seconds_lost), 3) AS seconds_lost, arg_max(f.detail, f.occurred_at) AS latest "
                    f"FROM friction_events f{where} GROUP BY ALL ORDER BY events DESC, f.kind", params)
    total = {"events": int(df["events"].sum()) if df.height else 0,
             "seconds_lost": float(df["seconds_lost"].sum() or 0.0) if df.height else 0.0}
    if as_json:
        print_json({"run_id": run_id, "kind": kind, "total": total, "by_kind": df_records(df)})
        return
    if df.height == 0:
        echo("no friction recorded")
        return
    print_df(console, df, title="friction by kind")
    echo(f"{total['events']} events, {total['seconds_lost']:g} s lost")


# -- prefs -----------------------------------------------------------------------------------------------


@click.group("prefs")
def prefs() -> None:
    """Durable preferences of the people who run the supervisor, which workflow runs use (shown in `runs why`).

    `profile.AGENT` (or `profile`) names the worker profile of workflow runs that ask for none;
    `instructions` ends every instruction handed to the agent; a policy template's `{prefs.KEY}` is
    filled with KEY's value. A run reads them when it starts and journals what it used."""


@prefs.command("set")
@click.argument("key")
@click.argument("value")
@click.option("--by", default=None, help="Who sets it (default: the current user).")
@click.pass_context
def prefs_set(ctx: click.Context, key: str, value: str, by: str | None) -> None:
    """Set KEY to VALUE (the older value stays in the history; an empty VALUE unsets KEY)."""
    from supervisor.ledger import check_name

    s = settings_from(ctx).ensure()
    _record(s, kind="pref", key=check_name(key, "key"), text=value, author=_author(by))
    echo(f"{key} = {value}" if value else f"{key} unset")


@prefs.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the preferences as a JSON object.")
@click.pass_context
def prefs_show(ctx: click.Context, as_json: bool) -> None:
    """The preferences in effect, with who set each and when."""
    import datetime as dt

    from supervisor import ledger

    s = settings_from(ctx)
    current = ledger.prefs(s.annotations_path)
    if as_json:
        print_json({k: {"value": a.text, "set_by": a.author, "set_at": a.at} for k, a in current.items()})
        return
    if not current:
        echo("no preferences set (set one with `supervisor prefs set KEY VALUE`)")
    for k, a in current.items():
        echo(f"{k} = {a.text}  (set by {a.author}, {dt.datetime.fromtimestamp(a.at).isoformat(timespec='seconds')})")
