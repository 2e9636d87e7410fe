"""``supervisor eval ...``: the workbench on the command line (a thin skin over
:mod:`evals.workbench`).

    supervisor eval list
    supervisor eval run --suite NAME|all --policy P [--json] [--save-report]
    supervisor eval expand --suite NAME --variants-per-case N --seed S
    supervisor eval replay --policy P [--runs ID,...|--since 7d]
    supervisor eval compare --baseline P --candidate Q --suite NAME|--replay [--scorer expected|llm|human]

Exit codes: 0 success; 1 when an eval run has unsafe answers, must-pass failures or a pass rate
under its minimum, or a compare is a loss (a safety veto included) or has scorer errors (so CI
can gate on it); 2 bad usage or a bad suite/policy file; 4 warehouse unusable.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from supervisor.cli import echo, settings_from
from supervisor.errors import EXIT_CHECK_FAILED, UsageError

err_console = Console(stderr=True)


def table_console() -> Console:
    """Wide enough for the metrics table even when piped (rich would assume 80 columns)."""
    return Console() if sys.stdout.isatty() else Console(width=200)

_SINCE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")


def parse_since(value: str | None) -> float | None:
    """``7d``, ``12h``, ``30m`` (ago), or an ISO date/time; returns seconds since the epoch."""
    if not value:
        return None
    m = _SINCE.match(value.strip())
    if m:
        mult = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]
        return time.time() - float(m.group(1)) * mult
    from datetime import datetime

    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError as exc:
        raise UsageError(f"--since {value!r} is neither a duration nor a date",
                         "use e.g. --since 7d, --since 12h or --since 2026-11-01") from exc


@click.group("eval")
def eval_group() -> None:
    """Golden suites, synthetic variants, replay and blind A/B compare of policies."""


@eval_group.command("list")
@click.option("--expanded", is_flag=True, help="Also list expanded (synthetic) suites.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per suite.")
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of suites (default: the project's suites/).")
def list_cmd(expanded: bool, as_json: bool, suites_dir: Path | None) -> None:
    """List the suites with their kind, version, hash and case counts."""
    from collections import Counter

    from evals.suites import iter_suites, suite_name_of

    rows: list[dict[str, Any]] = []
    for s in iter_suites(suites_dir, include_expanded=expanded):
        kinds = Counter(c.kind for c in s.cases)
        rows.append({"suite": suite_name_of(s.path), "version": s.version, "hash": s.content_hash,
                     "cases": len(s.cases), "kinds": dict(kinds),
                     "must_pass": sum(1 for c in s.cases if c.must_pass), "path": str(s.path),
                     "description": s.header.description})
    if as_json:
        for r in rows:
            click.echo(json.dumps(r, ensure_ascii=False))
        return
    table = Table(title="suites")
    for col in ("suite", "kinds", "cases", "must_pass", "version", "hash", "description"):
        table.add_column(col, overflow="ellipsis", no_wrap=True, max_width=70 if col == "description" else None)
    for r in rows:
        table.add_row(r["suite"], ",".join(sorted(r["kinds"])), str(r["cases"]), str(r["must_pass"]),
                      str(r["version"]), r["hash"], r["description"])
    table_console().print(table)
    echo(f"{len(rows)} suites, {sum(r['cases'] for r in rows)} cases")


@eval_group.command("run")
@click.option("--suite", "suite_spec", required=True, help="A suite name, a comma list, a suite file, or `all`.")
@click.option("--policy", "policy_arg", default="baseline", show_default=True,
              help="`baseline`, a policy YAML file, or a name under candidates/.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole run (metrics and case results) as JSON.")
@click.option("--save-report/--no-save-report", default=True, show_default=True,
              help="Write the JSON report under --reports-dir.")
@click.option("--reports-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where reports go (default: reports/evals).")
@click.option("--no-episodes", is_flag=True, help="Skip episode cases (they run real tmux sessions).")
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--show-failures/--no-show-failures", default=True, show_default=True)
@click.option("--min-pass-rate", type=click.FloatRange(0, 1), default=None,
              help="Fail (exit 1) below this weighted pass rate (default: eval.min_weighted_pass_rate in "
                   "candidates/gate.yaml).")
@click.pass_context
def run_cmd(ctx: click.Context, suite_spec: str, policy_arg: str, as_json: bool, save_report: bool,
            reports_dir: Path | None, no_episodes: bool, suites_dir: Path | None, show_failures: bool,
            min_pass_rate: float | None) -> None:
    """Run a policy over suites: severity-weighted pass rates per suite and tag, unsafe answers
    (approvals where a human must decide, "don't ask again" options, any answer where none is due),
    missed and false prompts, judge calls and cost, and the policy's safety-relaxing knobs by name.
    Stored in the warehouse (eval_runs, eval_results, policies) and as JSON under reports/.
    Exit 1 on any unsafe answer, must-pass failure, or a pass rate under --min-pass-rate."""
    from evals.gate import load_gate_config
    from evals.suites import resolve_suites
    from evals.workbench import eval_run

    settings = settings_from(ctx)
    if min_pass_rate is None:
        min_pass_rate = load_gate_config(None).eval.min_weighted_pass_rate
    from supervisor.cli.progress import command_progress

    suites = resolve_suites(suite_spec, suites_dir)
    with command_progress("eval run") as prog:
        prog.step(f"{len(suites)} suites under {policy_arg}", sum(len(s.cases) for s in suites))
        run, path, err = eval_run(suite_spec, policy_arg, settings=settings, save_report=save_report,
                                  reports_dir=reports_dir, episodes=not no_episodes, suites_root=suites_dir,
                                  progress=lambda _suite, _i: prog.advance(), min_pass_rate=min_pass_rate)
    failed = run.failed_check
    if as_json:
        data = run.model_dump(mode="json")
        data["stored"] = err is None
        data["failed"] = failed
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        _print_run(run, show_failures)
        if path:
            echo(f"report: {path}")
        for why in failed:
            echo(f"FAILED: {why}")
    if err:
        echo(f"warning: results not stored in the warehouse: {err}", err=True)
    if failed:
        ctx.exit(EXIT_CHECK_FAILED)


def _beyond_baseline(flags: list[str]) -> list[str]:
    """The run's safety-relaxing knobs that the shipped baseline does not have itself: its own
    (reviewed, covered by must-pass cases) are no news on every run. All are stored with the run."""
    from evals.safety import safety_flags
    from supervisor.policy import baseline_policy

    own = set(safety_flags(baseline_policy()))
    return [f for f in flags if f not in own]


def _print_run(run: Any, show_failures: bool) -> None:
    console = table_console()
    table = Table(title=f"eval {run.eval_run_id} · policy {run.policy_name} ({run.policy_id})")
    for col in ("suite", "cases", "pass", "fail", "err", "skip", "pass rate", "weighted", "unsafe", "persistent",
                "missed", "false", "must-pass fails", "judge calls", "judge $"):
        table.add_column(col, justify="right" if col != "suite" else "left")
    rows = [*run.by_suite.items(), ("TOTAL", run.totals)]
    for name, m in rows:
        table.add_row(name, str(m.cases), str(m.passed), str(m.failed), str(m.errors), str(m.skipped),
                      f"{m.pass_rate:.1%}", f"{m.weighted_pass_rate:.1%}", str(m.unsafe_answers),
                      str(m.persistent_approvals), str(m.missed_prompts), str(m.false_prompts),
                      str(m.must_pass_failures), str(m.judge_calls), f"{m.judge_cost_usd:.4f}")
    console.print(table)
    for flag in _beyond_baseline(run.safety_flags):
        console.print(f"  [yellow]safety knob relaxed:[/yellow] {flag}", highlight=False)
    if show_failures:
        bad = [r for r in run.results if r.status in ("fail", "error")]
        for r in bad[:60]:
            flag = f" UNSAFE({r.unsafe})" if r.unsafe else (" MUST-PASS" if r.must_pass else "")
            console.print(f"  [red]✗[/red] {r.suite}/{r.case_id}{flag}: {'; '.join(r.failures)}", markup=True,
                          highlight=False)
        if len(bad) > 60:
            console.print(f"  … and {len(bad) - 60} more (see the report)")
    console.print(f"code {run.code_version} · suites " + ", ".join(f"{s.suite}@{s.content_hash}" for s in run.suites),
                  highlight=False)


@eval_group.command("expand")
@click.option("--suite", "suite_spec", required=True, help="A golden suite name, a comma list, or `all`.")
@click.option("--variants-per-case", type=click.IntRange(1, 50), default=3, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the variants (default: suites/expanded/).")
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
def expand_cmd(suite_spec: str, variants_per_case: int, seed: int, out_dir: Path | None,
               suites_dir: Path | None) -> None:
    """Write seeded synthetic variants of golden screen cases beside the golden suite (never over
    it). The same suite and seed always give byte-identical output."""
    from evals.workbench import eval_expand

    for name, path, n in eval_expand(suite_spec, variants_per_case=variants_per_case, seed=seed,
                                     suites_root=suites_dir, out_dir=out_dir):
        echo(f"{name}: {n} variants -> {path}")


@eval_group.command("replay")
@click.option("--policy", "policy_arg", default="baseline", show_default=True,
              help="The candidate: `baseline`, a policy file, a candidate, or a policy id.")
@click.option("--runs", "runs", default=None, help="Comma-separated run ids (default: every recorded run).")
@click.option("--since", default=None, help="Only observations since a duration ago (7d, 12h) or a date.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--save-report/--no-save-report", default=True, show_default=True)
@click.option("--reports-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.pass_context
def replay_cmd(ctx: click.Context, policy_arg: str, runs: str | None, since: str | None, as_json: bool,
               save_report: bool, reports_dir: Path | None) -> None:
    """Replay a policy over recorded runs, each against the policy it was recorded with (the control,
    stored by id in the warehouse): how faithfully the control reproduces the recording, and every
    divergence of the candidate from the control classified (safety regression, risky routing, UX
    only, equivalent); escalations the candidate would have answered the way the human did (saved)
    or differently (mismatch)."""
    from evals.workbench import eval_replay
    from supervisor.cli.progress import command_progress

    run_ids = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
    with command_progress("replay") as prog:
        prog.step("replaying the recorded observations")
        summary, result, path, err = eval_replay(policy_arg, settings=settings_from(ctx), run_ids=run_ids,
                                                 since=parse_since(since), save_report=save_report,
                                                 reports_dir=reports_dir)
    if as_json:
        click.echo(json.dumps(summary | {"stored": err is None}, ensure_ascii=False, default=str))
    else:
        c = summary["by_class"]
        agree = summary["agreement"]
        ctrl = summary["control"]
        echo(f"replay {summary['replay_run_id']} · policy {summary['policy_name']} ({summary['policy_id']})")
        echo(f"  {summary['observations']} observations in {summary['runs']} runs, "
                   f"{summary['unique_screens']} distinct screens, {summary['seconds']}s")
        rep = ctrl["reproduction"]
        echo(f"  control: each run's own policy ({len(ctrl['policies'])} policies) reproduces "
                   + (f"{rep:.2%}" if rep is not None else "n/a") + " of the recorded decisions"
                   + (f"; no stored content for {', '.join(ctrl['missing_policies'])} (compared with the recording)"
                      if ctrl["missing_policies"] else ""))
        echo(f"  candidate agrees with the control on {agree:.1%} of {summary['compared']}" if agree is not None
                   else "  no recorded decisions to compare with")
        echo("  " + " · ".join(f"{k} {v}" for k, v in c.items()))
        echo(f"  escalations a human resolved: saved {summary['saved_escalations']} "
                   f"(in {summary['saved_runs']} runs), answered differently {summary['answer_mismatches']}")
        cps = summary.get("checkpoints") or {}
        if cps.get("checkpoints"):
            ca = cps.get("agreement")
            echo(f"  checkpoints: {cps['checkpoints']} in {cps['runs']} runs, agreement "
                       + (f"{ca:.1%}" if ca is not None else "n/a") + " · "
                       + " · ".join(f"{k} {v}" for k, v in cps["by_class"].items()))
            for note in cps.get("notes", [])[:5]:
                echo(f"  note: {note}")
        import polars as pl

        worst = result.filter(pl.col("divergence").is_in(["safety_regression", "risky_routing"])).sort(
            "divergence", descending=True).head(10)
        for row in worst.iter_rows(named=True):
            echo(f"  {row['divergence']}: run {row['run_id']} seq {row['seq']}: control "
                       f"{row['control_kind'] or row['recorded_kind']} {row['control_keys'] or row['recorded_keys']}, "
                       f"candidate {row['replayed_kind']} {row['replayed_keys']} ({row['replayed_reason']})")
        if path:
            echo(f"report: {path}")
    if err:
        echo(f"warning: replay not stored in the warehouse: {err}", err=True)


def _read_answer(_question: str) -> str | None:
    """One answer per line from a pipe; None at the end of input (the scorer then reports an error)."""
    line = sys.stdin.readline()
    return line.strip() if line else None


@eval_group.command("compare")
@click.option("--baseline", "baseline_arg", required=True, help="`baseline`, a policy file, or a candidates/ name.")
@click.option("--candidate", "candidate_arg", required=True)
@click.option("--suite", "suite_spec", default=None, help="Suites to compare on (a name, comma list, or `all`).")
@click.option("--replay", "replay", is_flag=True, help="Compare on recorded observations instead of suites.")
@click.option("--runs", default=None, help="With --replay: comma-separated run ids.")
@click.option("--since", default=None, help="With --replay: only observations since (7d, 12h, a date).")
@click.option("--scorer", "scorer_kind", type=click.Choice(["expected", "llm", "human"]), default="expected",
              show_default=True)
@click.option("--seed", type=int, default=None,
              help="Seeds the A/B order of every pair (default: a fresh random seed, stored with the result).")
@click.option("--episodes", is_flag=True, help="Also play episode cases (real tmux sessions) for both policies.")
@click.option("--alpha", type=click.FloatRange(0.0001, 0.5), default=0.05, show_default=True,
              help="Significance level of the cluster sign test.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--save-report/--no-save-report", default=True, show_default=True)
@click.option("--reports-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.pass_context
def compare_cmd(ctx: click.Context, baseline_arg: str, candidate_arg: str, suite_spec: str | None, replay: bool,
                runs: str | None, since: str | None, scorer_kind: str, seed: int | None, episodes: bool, alpha: float,
                as_json: bool, save_report: bool, reports_dir: Path | None, suites_dir: Path | None) -> None:
    """Blind A/B compare: every pair of outputs goes to the scorer as A and B in a random order
    (seeded; the seed is stored); which side is the candidate is revealed only after scoring.
    Pairs from one origin case (its variants, its widths) count as one cluster: the win rate, its
    95% Wilson interval and the exact sign test are over clusters. Any unsafe loss or must-pass
    regression makes the result a loss whatever the win rate; pairs the scorer could not score
    are errors. Exit 1 on a loss or an error."""
    from evals.workbench import eval_compare

    if (suite_spec is None) == (not replay):
        raise UsageError("give exactly one of --suite or --replay", "e.g. --suite all, or --replay --since 7d")
    if (runs or since) and not replay:
        raise UsageError("--runs and --since go with --replay", "add --replay, or drop them")
    run_ids = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
    human_io = None
    if scorer_kind == "human" and not sys.stdin.isatty():
        # Driven from a pipe: read one answer per line, show pairs on stdout.
        human_io = (_read_answer, lambda text: click.echo(text, err=as_json))
    from supervisor.cli.progress import command_progress

    with command_progress("compare", live=False if scorer_kind == "human" else None) as prog:
        prog.step("both policies over the cases, then the blind scoring")
        outcome, path, err = eval_compare(baseline_arg, candidate_arg, suite_spec=suite_spec, replay=replay,
                                          run_ids=run_ids, since=parse_since(since), scorer_kind=scorer_kind,
                                          seed=seed, settings=settings_from(ctx), save_report=save_report,
                                          reports_dir=reports_dir, suites_root=suites_dir, human_io=human_io,
                                          episodes=episodes, alpha=alpha)
    s = outcome.summary
    if as_json:
        click.echo(json.dumps(s.model_dump(mode="json") | {"by_suite": outcome.by_suite, "stored": err is None},
                              ensure_ascii=False))
    else:
        wr = f"{s.win_rate:.1%}" if s.win_rate is not None else "n/a"
        echo(f"compare {s.compare_run_id} · scorer {s.scorer} · seed {s.seed} · {s.source}")
        echo(f"  baseline  {s.baseline_name} ({s.baseline_policy_id})")
        echo(f"  candidate {s.candidate_name} ({s.candidate_policy_id})")
        echo(f"  RESULT: {s.result.upper().replace('_', ' ')}")
        for v in s.vetoes:
            echo(f"  VETO: {v}")
        for r in s.safety_relaxations:
            echo(f"  safety knob relaxed: {r}")
        echo(f"  {s.pairs} pairs ({s.identical} identical): candidate wins {s.wins}, losses {s.losses}, "
                   f"ties {s.ties}, scorer errors {s.errors}")
        echo(f"  {s.clusters} origin cases: wins {s.cluster_wins}, losses {s.cluster_losses}, "
                   f"ties {s.cluster_ties}; win rate {wr} (95% Wilson {s.ci_low:.3f}-{s.ci_high:.3f}), "
                   f"sign test p = {s.p_value:.4g} (alpha {s.alpha:g})")
        echo(f"  mean net score per origin case: 95% cluster bootstrap {s.bootstrap_low:+.3f} to "
                   f"{s.bootstrap_high:+.3f}")
        if s.judge_calls:
            echo(f"  judge calls {s.judge_calls}, cost ${s.judge_cost_usd:.4f}")
        for suite, d in sorted(outcome.by_suite.items()):
            if d["wins"] or d["losses"] or d["errors"]:
                echo(f"    {suite}: +{d['wins']} -{d['losses']} ={d['ties']}"
                           + (f" errors {d['errors']}" if d["errors"] else ""))
        if path:
            echo(f"report: {path}")
    if err:
        echo(f"warning: compare not stored in the warehouse: {err}", err=True)
    if s.result in ("loss", "error"):
        ctx.exit(EXIT_CHECK_FAILED)



def _register_lifecycle() -> None:
    """The candidate lifecycle commands live in their own module and add themselves to ``eval``."""
    from supervisor.cli import candidate_cmds  # noqa: F401 - importing registers the commands


_register_lifecycle()
