"""``supervisor eval ...``: the candidate lifecycle on the command line (a thin skin over
:mod:`evals.gate`, :mod:`evals.candidates`, :mod:`evals.canary`, :mod:`evals.registry`).

    supervisor eval new-candidate --from POLICY --name NAME [--objective O]
    supervisor eval review-candidate ID
    supervisor eval candidate-status ID [--json]
    supervisor eval propose --objective O [--budget N] [--seed S]
    supervisor eval gate-candidate CANDIDATE [--baseline POLICY] [--gate FILE] [--json]
    supervisor eval canary start|report|limited|stop ID
    supervisor eval promote-candidate ID --approved-by NAME [--force --reason WHY]
    supervisor eval rollback --by NAME
    supervisor eval promotion-history | rollout-history

Exit codes: ``gate-candidate`` 0 PROMOTE, 1 HOLD or REJECT, 2 bad input (a candidate, policy or
gate file that cannot be read); ``promote-candidate`` 1 when the latest gate did not say PROMOTE;
4 warehouse unusable.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import click

from supervisor.cli import echo, settings_from
from supervisor.cli.eval_cmds import eval_group, parse_since, table_console
from supervisor.settings import user_name

_CANDIDATES_DIR = click.option("--candidates-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                               help="Folder of candidates (default: $SUPERVISOR_CANDIDATES or the project's "
                                    "candidates/).")


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).isoformat(timespec="seconds") if t else "-"


# --------------------------------------------------------------------------- gate


@eval_group.command("gate-candidate")
@click.argument("candidate")
@click.option("--baseline", "baseline_arg", default=None,
              help="Compare with this policy (default: the promoted policy, or the shipped baseline).")
@click.option("--gate", "gate_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Thresholds (default: candidates/gate.yaml).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with `verdict` and `reasons`.")
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@_CANDIDATES_DIR
@click.option("--reports-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--save-report/--no-save-report", default=True, show_default=True)
@click.pass_context
def gate_candidate_cmd(ctx: click.Context, candidate: str, baseline_arg: str | None, gate_file: Path | None,
                       as_json: bool, suites_dir: Path | None, candidates_dir: Path | None, reports_dir: Path | None,
                       save_report: bool) -> None:
    """Say PROMOTE, HOLD or REJECT for CANDIDATE (a candidate id or a policy file) with a table of
    reasons: safety knobs, unsafe answers, must-pass regressions, pass rate, a blind compare over
    origin cases, replay over recorded runs, the shadow canary, the limited rollout, and a win on
    its objective. Thresholds come from candidates/gate.yaml. Every result is stored in the
    warehouse. Exit 0 PROMOTE, 1 HOLD or REJECT, 2 bad input."""
    from evals.gate import gate_candidate
    from supervisor.cli.progress import command_progress

    with command_progress("gate") as prog:
        result = gate_candidate(candidate, baseline_arg=baseline_arg, gate_file=gate_file,
                                settings=settings_from(ctx), suites_root=suites_dir, candidates_root=candidates_dir,
                                reports_dir=reports_dir, save_report=save_report, progress=prog)
    if as_json:
        click.echo(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
    else:
        _print_gate(result)
    ctx.exit(result.exit_code)


def _print_gate(result: Any) -> None:
    from rich.table import Table

    console = table_console()
    colour = {"PROMOTE": "green", "HOLD": "yellow", "REJECT": "red"}[result.verdict]
    who = result.candidate_id or result.candidate_path
    console.print(f"[bold {colour}]{result.verdict}[/] {who} ({result.candidate_policy_id}) against "
                  f"{result.baseline_source} ({result.baseline_policy_id}) · objective {result.objective}",
                  highlight=False)
    table = Table(title=f"gate {result.gate_result_id}")
    for col in ("check", "status", "figure", "threshold"):
        table.add_column(col, overflow="fold", max_width=None if col in ("check", "status") else 70)
    style = {"pass": "green", "hold": "yellow", "reject": "red", "skip": "dim"}
    for r in result.reasons:
        table.add_row(r.check, f"[{style[r.status]}]{r.status}[/]", r.figure, r.threshold)
    console.print(table)
    if result.report_path:
        console.print(f"report: {result.report_path}", highlight=False)
    if not result.stored:
        console.print("[yellow]warning: the gate result is not in the warehouse (locked?); promote-candidate "
                      "will not see it[/]")


# --------------------------------------------------------------------------- candidates


@eval_group.command("new-candidate")
@click.option("--from", "from_arg", required=True, help="The policy it starts from (`baseline`, a file, a candidate, "
                                                        "a policy id, or `promoted`).")
@click.option("--name", required=True, help="The candidate's id (its folder under candidates/).")
@click.option("--objective", type=click.Choice(["reduce_false_escalation", "reduce_false_approval", "reduce_friction",
                                                "faster_reaction", "overall"]), default="overall", show_default=True)
@click.option("--why", default="", help="Why it exists (kept in its manifest).")
@click.option("--author", default=None, help="Who made it (default: the current user).")
@_CANDIDATES_DIR
@click.pass_context
def new_candidate_cmd(ctx: click.Context, from_arg: str, name: str, objective: str, why: str, author: str | None,
                      candidates_dir: Path | None) -> None:
    """Create candidates/NAME/ with policy.yaml (a copy of the starting policy to edit) and
    manifest.yaml (parent, objective, knob-level diff, why, author). After editing policy.yaml,
    `supervisor eval review-candidate NAME` shows what changed."""
    from evals.candidates import write_candidate

    settings = settings_from(ctx)
    parent, parent_name = _resolve_parent(settings, from_arg)
    c = write_candidate(name, {}, parent=parent_name, parent_policy=parent.policy, objective=objective,
                        why=why, author=author or user_name("unknown"), root=candidates_dir)
    echo(f"created candidate {c.candidate_id} at {c.path} (from {from_arg}, {parent.policy.policy_id})")
    echo(f"edit {c.path / 'policy.yaml'} (it extends its parent: add only what changes), then: "
               f"supervisor eval review-candidate {name}")


def _resolve_parent(settings: Any, arg: str) -> tuple[Any, str]:
    """(the parent policy, the name a candidate's ``extends:`` should use for it). ``promoted`` is
    the registry's promoted policy: the shipped baseline when nothing is promoted, else the promoted
    candidate."""
    from evals.workbench import PolicyRef, resolve_policy

    if arg != "promoted":
        return resolve_policy(arg, settings), arg
    from evals.registry import promoted_policy, registry_state

    state = registry_state(settings)
    policy, source = promoted_policy(settings, state)
    name = "baseline" if state.promoted_policy_id is None else (state.promoted_candidate_id or "promoted")
    return PolicyRef(policy, source), name


@eval_group.command("review-candidate")
@click.argument("candidate_id")
@click.option("--json", "as_json", is_flag=True)
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@_CANDIDATES_DIR
@click.pass_context
def review_candidate_cmd(ctx: click.Context, candidate_id: str, as_json: bool, suites_dir: Path | None,
                         candidates_dir: Path | None) -> None:
    """A bounded review for a human: the knob-level diff against its parent, the safety knobs it
    touches, and which golden cases it decides differently (the first 20, with both decisions)."""
    from evals.lifecycle import review_candidate
    from supervisor.cli.progress import command_progress

    with command_progress("review") as prog:
        review = review_candidate(settings_from(ctx), candidate_id, candidates_root=candidates_dir,
                                  suites_root=suites_dir, progress=prog)
    if as_json:
        click.echo(json.dumps(review, ensure_ascii=False, default=str))
        return
    console = table_console()
    m = review["manifest"]
    console.print(f"[bold]{candidate_id}[/] ({review['policy_id']}) from {m['parent']} ({m['parent_policy_id']}) · "
                  f"objective {m['objective']} · by {m['author'] or '?'}", highlight=False)
    if review["stale_manifest"]:
        console.print("[yellow]policy.yaml changed since the manifest was written (refreshed below)[/]")
    if m["why"]:
        console.print(f"why: {m['why']}", highlight=False)
    console.print(f"[bold]changes[/] ({len(review['changes'])}):")
    for ch in review["changes"][:40]:
        console.print(f"  {ch['path']}: {json.dumps(ch['before'])[:90]} -> {json.dumps(ch['after'])[:90]}",
                      highlight=False, markup=False)
    if len(review["changes"]) > 40:
        console.print(f"  ... and {len(review['changes']) - 40} more")
    console.print("[bold]safety knobs relaxed[/]: " + ("; ".join(review["safety_relaxations"]) or "none"))
    d = review["decided_differently"]
    console.print(f"[bold]golden cases decided differently[/]: {d['count']} of {d['cases']} "
                  f"({d['better']} closer to the expectation, {d['worse']} further)")
    claims = m.get("claims")
    if claims and claims.get("recorded_observations"):
        console.print(f"[bold]recorded observations it was mined from[/]: decides {claims['recorded_changed']} of "
                      f"{claims['recorded_observations']} the way the human did (in "
                      f"{len(claims['recorded_runs'])} runs; the parent escalated them)", highlight=False)
    for row in d["examples"]:
        console.print(f"  {row['suite']}/{row['case_id']}: {row['parent']} -> {row['candidate']}", highlight=False,
                      markup=False)


@eval_group.command("candidate-status")
@click.argument("candidate_id")
@click.option("--json", "as_json", is_flag=True)
@_CANDIDATES_DIR
@click.pass_context
def candidate_status_cmd(ctx: click.Context, candidate_id: str, as_json: bool, candidates_dir: Path | None) -> None:
    """Everything about one candidate: its manifest, its eval runs, compares, canary evidence, gate
    results, and where it stands in the registry (promoted, on canary, on limited rollout)."""
    from evals.lifecycle import candidate_status

    status = candidate_status(settings_from(ctx), candidate_id, candidates_root=candidates_dir)
    if as_json:
        click.echo(json.dumps(status, ensure_ascii=False, default=str))
        return
    console = table_console()
    m = status["manifest"]
    console.print(f"[bold]{candidate_id}[/] ({status['policy_id']}) · objective {m['objective']} · registry: "
                  f"{status['registry']}", highlight=False)
    for key, label in (("eval_runs", "eval runs"), ("compares", "compares"), ("gates", "gates")):
        rows = status[key]
        console.print(f"[bold]{label}[/] ({len(rows)}):")
        for r in rows[:5]:
            console.print("  " + " · ".join(f"{k} {v}" for k, v in r.items()), highlight=False, markup=False)
    canary = status["canary"]
    console.print("[bold]canary[/]: " + (" · ".join(f"{k} {v}" for k, v in canary.items()) if canary else "none"),
                  highlight=False)


# --------------------------------------------------------------------------- propose


@eval_group.command("propose")
@click.option("--objective", required=True, type=click.Choice(["reduce_false_escalation", "reduce_false_approval",
                                                               "reduce_friction", "faster_reaction"]))
@click.option("--budget", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="How many numeric settings a search may try.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the numeric search.")
@click.option("--from", "from_arg", default="promoted", show_default=True, help="The policy to improve on.")
@click.option("--runs", default=None, help="Mine only these runs (comma-separated).")
@click.option("--since", default=None, help="Mine only runs since (7d, 12h, a date).")
@click.option("--min-support", type=click.IntRange(1, 1000), default=3, show_default=True,
              help="How many times a human must have answered a prompt the same way before a rule is proposed.")
@click.option("--judge/--no-judge", default=None,
              help="Ask the LLM judge for prompt and danger pattern edits too (default: when ANTHROPIC_API_KEY "
                   "is set); each is checked on the golden suites before it is written.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@_CANDIDATES_DIR
@click.pass_context
def propose_cmd(ctx: click.Context, objective: str, budget: int, seed: int, from_arg: str, runs: str | None,
                since: str | None, min_support: int, judge: bool | None, as_json: bool, suites_dir: Path | None,
                candidates_dir: Path | None) -> None:
    """Mine what went wrong (suite failures, replay divergences, escalations a human then answered,
    with their screens) and write concrete candidates, each with a manifest, ready for the gate.
    Never relaxes a safety knob. With an Anthropic key the judge proposes pattern edits too."""
    from evals.propose import WHAT_WOULD_HELP, propose
    from supervisor.cli.progress import command_progress

    settings = settings_from(ctx)
    run_ids = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
    parent, parent_name = _resolve_parent(settings, from_arg)
    notes: list[str] = []
    with command_progress("propose") as prog:
        made = propose(settings, objective, parent=parent, parent_arg=parent_name, budget=budget, seed=seed,
                       run_ids=run_ids, since=parse_since(since), min_support=min_support,
                       candidates_root=candidates_dir, suites_root=suites_dir, author=user_name("unknown"),
                       judge=judge, notes=notes, progress=prog)
    if as_json:
        click.echo(json.dumps([c.manifest.model_dump(mode="json") | {"path": str(c.path)} for c in made],
                              ensure_ascii=False))
        for note in notes:
            echo(f"note: {note}", err=True)
        return
    if not made:
        echo(f"nothing to propose for {objective}. What was looked at:")
    for c in made:
        cl = c.manifest.claims
        echo(f"proposed {c.candidate_id} ({c.policy.policy_id}): {c.manifest.why}")
        if cl is not None:
            golden = ", ".join(cl.golden_changed[:5]) + (" ..." if len(cl.golden_changed) > 5 else "")
            echo(f"  changes {len(cl.golden_changed)} of {cl.golden_cases} golden cases"
                       + (f" ({golden})" if golden else "") + f", {cl.recorded_changed} of "
                       f"{cl.recorded_observations} recorded observations it was mined from; manifest: "
                       f"{c.path / 'manifest.yaml'}")
        echo(f"  next: supervisor eval review-candidate {c.candidate_id}")
    for note in notes:
        echo(f"  {note}")
    if not made:
        echo(f"what would produce a proposal: {WHAT_WOULD_HELP[objective]}")


# --------------------------------------------------------------------------- canary and registry


@eval_group.group("canary")
def canary_group() -> None:
    """Shadow canaries and limited rollouts of candidates on live runs."""


@canary_group.command("start")
@click.argument("candidate_id")
@click.option("--by", default=None, help="Who starts it (default: the current user).")
@click.option("--reason", default=None)
@_CANDIDATES_DIR
@click.pass_context
def canary_start_cmd(ctx: click.Context, candidate_id: str, by: str | None, reason: str | None,
                     candidates_dir: Path | None) -> None:
    """Put CANDIDATE on shadow canary: every new run carries it as a shadow policy that classifies
    and decides with its own rules on every observation, never acting."""
    from evals.candidates import load_candidate
    from evals.registry import start_canary

    c = load_candidate(candidate_id, candidates_dir)
    e = start_canary(settings_from(ctx), candidate_id, c.policy, by=by or user_name("unknown"), reason=reason)
    echo(f"{candidate_id} ({c.policy.policy_id}) is on shadow canary ({e.registry_event_id}); new runs carry it "
               f"as a shadow. See: supervisor eval canary report {candidate_id}")


@canary_group.command("limited")
@click.argument("candidate_id")
@click.option("--fraction", type=click.FloatRange(0.0, 1.0, min_open=True), required=True,
              help="The share of new runs it drives (chosen by run id).")
@click.option("--by", default=None)
@click.option("--reason", default=None)
@_CANDIDATES_DIR
@click.pass_context
def canary_limited_cmd(ctx: click.Context, candidate_id: str, fraction: float, by: str | None, reason: str | None,
                       candidates_dir: Path | None) -> None:
    """Let CANDIDATE drive a deterministic FRACTION of new runs (by run id); the other runs keep the
    promoted policy and carry the candidate as a shadow."""
    from evals.candidates import load_candidate
    from evals.registry import start_limited

    c = load_candidate(candidate_id, candidates_dir)
    e = start_limited(settings_from(ctx), candidate_id, c.policy, fraction, by=by or user_name("unknown"), reason=reason)
    echo(f"{candidate_id} drives {fraction:.0%} of new runs ({e.registry_event_id}); the rest keep "
               f"{e.previous_policy_id}. See: supervisor eval canary report {candidate_id}")


@canary_group.command("stop")
@click.argument("candidate_id")
@click.option("--by", default=None)
@click.option("--reason", default=None)
@click.pass_context
def canary_stop_cmd(ctx: click.Context, candidate_id: str, by: str | None, reason: str | None) -> None:
    """End CANDIDATE's shadow canary or limited rollout."""
    from evals.registry import stop

    e = stop(settings_from(ctx), candidate_id, by=by or user_name("unknown"), reason=reason)
    echo(f"{candidate_id} is off canary ({e.registry_event_id})")


@canary_group.command("report")
@click.argument("candidate_id")
@click.option("--since", default=None, help="Only evidence since (7d, 12h, a date).")
@click.option("--gate", "gate_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Minimum sample sizes (default: candidates/gate.yaml).")
@click.option("--json", "as_json", is_flag=True)
@_CANDIDATES_DIR
@click.pass_context
def canary_report_cmd(ctx: click.Context, candidate_id: str, since: str | None, gate_file: Path | None,
                      as_json: bool, candidates_dir: Path | None) -> None:
    """What CANDIDATE did in shadow on live runs: agreement, disagreements by kind with their screens,
    would-be unsafe approvals, would-be saved escalations, sample sizes against gate.yaml; and its
    limited rollout's per-metric analysis when it had one."""
    from evals.lifecycle import canary_evidence

    rep, limited = canary_evidence(settings_from(ctx), candidate_id, since=parse_since(since), gate_file=gate_file,
                                   candidates_root=candidates_dir)
    if as_json:
        click.echo(json.dumps({"shadow": rep.model_dump(mode="json"),
                               "limited": limited.model_dump(mode="json") if limited else None}, ensure_ascii=False))
        return
    console = table_console()
    agree = f"{rep.agreement:.1%}" if rep.agreement is not None else "n/a"
    console.print(f"[bold]{candidate_id}[/] in shadow: {rep.observations} decisions in {rep.runs} runs "
                  f"(minimum {rep.min_observations} in {rep.min_runs}: {'enough' if rep.enough else 'not enough'}), "
                  f"agreement {agree}", highlight=False)
    console.print(f"would-be unsafe approvals: {rep.unsafe}; would-be saved escalations: {rep.saved_escalations} "
                  f"(answered otherwise than the human: {rep.mismatches})", highlight=False)
    for d in rep.disagreements[:10]:
        console.print(f"  acting {d.acting} / candidate {d.shadow}: {d.count}", highlight=False)
        for ex in d.examples[:1]:
            console.print("    " + "\n    ".join(ex["screen_tail"].splitlines()[-6:]), highlight=False,
                          markup=False)
    for ex in rep.unsafe_examples:
        console.print(f"  [red]unsafe[/] run {ex['run_id']}: candidate {ex['shadow']} {ex['shadow_keys']} "
                      f"({ex['shadow_reason']})", highlight=False)
    if limited is not None:
        console.print(f"[bold]limited rollout[/]: {limited.verdict} (score {limited.score}) over "
                      f"{limited.candidate_runs} candidate and {limited.control_runs} control runs", highlight=False)
        for m in limited.metrics:
            console.print(f"  {m.metric}: {m.status} (median {m.candidate_median} vs {m.control_median}, "
                          f"p={m.p_value})", highlight=False)


@eval_group.command("promote-candidate")
@click.argument("candidate_id")
@click.option("--approved-by", required=True, help="Who approves the promotion (recorded).")
@click.option("--force", is_flag=True, help="Promote although the latest gate did not say PROMOTE (needs --reason).")
@click.option("--reason", default=None, help="Why (recorded; required with --force).")
@_CANDIDATES_DIR
@click.pass_context
def promote_cmd(ctx: click.Context, candidate_id: str, approved_by: str, force: bool, reason: str | None,
                candidates_dir: Path | None) -> None:
    """Make CANDIDATE the default policy of new runs. Refused (exit 1) unless the latest gate of this
    exact policy said PROMOTE against the policy promoted now; --force --reason overrides, recorded."""
    from evals.candidates import load_candidate
    from evals.registry import promote

    c = load_candidate(candidate_id, candidates_dir)
    e = promote(settings_from(ctx), candidate_id, c.policy, approved_by=approved_by, force=force, reason=reason)
    forced = " (FORCED: " + str(e.details.get("overridden")) + ")" if e.forced else ""
    echo(f"promoted {candidate_id} ({c.policy.policy_id}), approved by {approved_by}{forced}; new runs use it. "
               "Undo: supervisor eval rollback --by NAME")


@eval_group.command("rollback")
@click.option("--by", required=True, help="Who rolls back (recorded).")
@click.option("--reason", default=None)
@click.pass_context
def rollback_cmd(ctx: click.Context, by: str, reason: str | None) -> None:
    """Return new runs to the policy promoted before the current one (the shipped baseline at the
    bottom of the stack)."""
    from evals.registry import rollback

    e = rollback(settings_from(ctx), by=by, reason=reason)
    now = f"{e.candidate_id} ({e.policy_id})" if e.policy_id else "the shipped baseline"
    echo(f"rolled back {e.previous_policy_id}; new runs use {now}")


def _history(ctx: click.Context, kinds: tuple[str, ...], as_json: bool, title: str) -> None:
    from rich.table import Table

    from evals.registry import history

    rows = history(settings_from(ctx), kinds)
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False))
        return
    if not rows:
        echo(f"no {title} yet")
        return
    table = Table(title=title)
    for col in ("when", "kind", "candidate", "policy", "previous", "fraction", "by", "gate", "reason"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(_when(r.occurred_at), r.kind + (" (forced)" if r.forced else ""), r.candidate_id or "-",
                      r.policy_id or "baseline", r.previous_policy_id or "-",
                      f"{r.fraction:.0%}" if r.fraction is not None else "-", r.actor or "-", r.gate_result_id or "-",
                      r.reason or "")
    table_console().print(table)


@eval_group.command("promotion-history")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def promotion_history_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every promotion and rollback, oldest first: who, which gate result, forced or not, why."""
    _history(ctx, ("promote", "rollback"), as_json, "promotions")


@eval_group.command("rollout-history")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def rollout_history_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every shadow canary, limited rollout and stop, oldest first."""
    _history(ctx, ("canary", "limited", "stop"), as_json, "rollouts")
