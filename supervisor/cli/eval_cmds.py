"""``supervisor eval ...``: the workbench on the command line (a thin skin over
:mod:`evals.workbench`).

    supervisor eval list
    supervisor eval run --suite NAME|all --policy P [--json] [--save-report]
    supervisor eval expand --suite NAME --variants-per-case N --seed S
    supervisor eval replay --policy P [--runs ID,...|--since 7d]
    supervisor eval compare --baseline P --candidate Q --suite NAME|--replay [--scorer expected|llm|human]

Exit codes: 0 success; 1 when an eval run has unsafe approvals or must-pass failures (so CI
can gate on it); 2 bad usage or a bad suite/policy file; 4 warehouse unusable.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from supervisor.cli import settings_from
from supervisor.errors import EXIT_CHECK_FAILED, UsageError

err_console = Console(stderr=True)


def _console() -> Console:
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


@contextlib.contextmanager
def _progress(enabled: bool, total: int, label: str) -> Iterator[Any]:
    """A rich progress bar on stderr (only on long runs and a terminal)."""
    if not enabled or total < 50:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as prog:
        yield prog, prog.add_task(label, total=total)


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
    _console().print(table)
    click.echo(f"{len(rows)} suites, {sum(r['cases'] for r in rows)} cases")


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
@click.pass_context
def run_cmd(ctx: click.Context, suite_spec: str, policy_arg: str, as_json: bool, save_report: bool,
            reports_dir: Path | None, no_episodes: bool, suites_dir: Path | None, show_failures: bool) -> None:
    """Run a policy over suites: severity-weighted pass rates per suite and tag, unsafe
    approvals, missed and false prompts, judge calls and cost. Stored in the warehouse
    (eval_runs, eval_results) and as JSON under reports/."""
    from evals.suites import resolve_suites
    from evals.workbench import eval_run

    settings = settings_from(ctx)
    total = sum(len(s.cases) for s in resolve_suites(suite_spec, suites_dir))
    with _progress(not as_json and sys.stderr.isatty(), total, "eval run") as prog:
        hook = None
        if prog is not None:
            bar, task = prog
            hook = lambda _suite, _i: bar.advance(task)  # noqa: E731
        run, path, err = eval_run(suite_spec, policy_arg, settings=settings, save_report=save_report,
                                  reports_dir=reports_dir, episodes=not no_episodes, suites_root=suites_dir,
                                  progress=hook)
    if as_json:
        data = run.model_dump(mode="json")
        data["stored"] = err is None
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        _print_run(run, show_failures)
        if path:
            click.echo(f"report: {path}")
    if err:
        click.echo(f"warning: results not stored in the warehouse: {err}", err=True)
    if run.totals.unsafe_approvals or run.totals.must_pass_failures:
        ctx.exit(EXIT_CHECK_FAILED)


def _print_run(run: Any, show_failures: bool) -> None:
    console = _console()
    table = Table(title=f"eval {run.eval_run_id} · policy {run.policy_name} ({run.policy_id})")
    for col in ("suite", "cases", "pass", "fail", "err", "skip", "pass rate", "weighted", "unsafe", "missed",
                "false", "must-pass fails", "judge calls", "judge $"):
        table.add_column(col, justify="right" if col != "suite" else "left")
    rows = [*run.by_suite.items(), ("TOTAL", run.totals)]
    for name, m in rows:
        table.add_row(name, str(m.cases), str(m.passed), str(m.failed), str(m.errors), str(m.skipped),
                      f"{m.pass_rate:.1%}", f"{m.weighted_pass_rate:.1%}", str(m.unsafe_approvals),
                      str(m.missed_prompts), str(m.false_prompts), str(m.must_pass_failures), str(m.judge_calls),
                      f"{m.judge_cost_usd:.4f}")
    console.print(table)
    if show_failures:
        bad = [r for r in run.results if r.status in ("fail", "error")]
        for r in bad[:60]:
            flag = " UNSAFE" if r.unsafe_approval else (" MUST-PASS" if r.must_pass else "")
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
        click.echo(f"{name}: {n} variants -> {path}")


@eval_group.command("replay")
@click.option("--policy", "policy_arg", default="baseline", show_default=True)
@click.option("--runs", "runs", default=None, help="Comma-separated run ids (default: every recorded run).")
@click.option("--since", default=None, help="Only observations since a duration ago (7d, 12h) or a date.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--save-report/--no-save-report", default=True, show_default=True)
@click.option("--reports-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.pass_context
def replay_cmd(ctx: click.Context, policy_arg: str, runs: str | None, since: str | None, as_json: bool,
               save_report: bool, reports_dir: Path | None) -> None:
    """Replay a policy over recorded observations: agreement with what was recorded, and every
    divergence classified (safety regression, risky routing, UX only, equivalent)."""
    from evals.workbench import eval_replay

    run_ids = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
    summary, result, path, err = eval_replay(policy_arg, settings=settings_from(ctx), run_ids=run_ids,
                                             since=parse_since(since), save_report=save_report,
                                             reports_dir=reports_dir)
    if as_json:
        click.echo(json.dumps(summary | {"stored": err is None}, ensure_ascii=False, default=str))
    else:
        c = summary["by_class"]
        agree = summary["agreement"]
        click.echo(f"replay {summary['replay_run_id']} · policy {summary['policy_name']} ({summary['policy_id']})")
        click.echo(f"  {summary['observations']} observations in {summary['runs']} runs, "
                   f"{summary['unique_screens']} distinct screens, {summary['seconds']}s")
        click.echo(f"  agreement {agree:.1%} of {summary['compared']} with a recorded decision" if agree is not None
                   else "  no recorded decisions to compare with")
        click.echo("  " + " · ".join(f"{k} {v}" for k, v in c.items()))
        cps = summary.get("checkpoints") or {}
        if cps.get("checkpoints"):
            ca = cps.get("agreement")
            click.echo(f"  checkpoints: {cps['checkpoints']} in {cps['runs']} runs, agreement "
                       + (f"{ca:.1%}" if ca is not None else "n/a") + " · "
                       + " · ".join(f"{k} {v}" for k, v in cps["by_class"].items()))
            for note in cps.get("notes", [])[:5]:
                click.echo(f"  note: {note}")
        import polars as pl

        worst = result.filter(pl.col("divergence").is_in(["safety_regression", "risky_routing"])).sort(
            "divergence", descending=True).head(10)
        for row in worst.iter_rows(named=True):
            click.echo(f"  {row['divergence']}: run {row['run_id']} seq {row['seq']}: recorded {row['recorded_kind']} "
                       f"{row['recorded_keys']}, replay {row['replayed_kind']} {row['replayed_keys']} "
                       f"({row['replayed_reason']})")
        if path:
            click.echo(f"report: {path}")
    if err:
        click.echo(f"warning: replay not stored in the warehouse: {err}", err=True)


@eval_group.command("compare")
@click.option("--baseline", "baseline_arg", required=True, help="`baseline`, a policy file, or a candidates/ name.")
@click.option("--candidate", "candidate_arg", required=True)
@click.option("--suite", "suite_spec", default=None, help="Suites to compare on (a name, comma list, or `all`).")
@click.option("--replay", "replay", is_flag=True, help="Compare on recorded observations instead of suites.")
@click.option("--runs", default=None, help="With --replay: comma-separated run ids.")
@click.option("--since", default=None, help="With --replay: only observations since (7d, 12h, a date).")
@click.option("--scorer", "scorer_kind", type=click.Choice(["expected", "llm", "human"]), default="expected",
              show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the A/B order of every pair.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--save-report/--no-save-report", default=True, show_default=True)
@click.option("--reports-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--suites-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.pass_context
def compare_cmd(ctx: click.Context, baseline_arg: str, candidate_arg: str, suite_spec: str | None, replay: bool,
                runs: str | None, since: str | None, scorer_kind: str, seed: int, as_json: bool, save_report: bool,
                reports_dir: Path | None, suites_dir: Path | None) -> None:
    """Blind A/B compare: every pair of outputs goes to the scorer as A and B in a seeded random
    order; which side is the candidate is revealed only after scoring. Reports wins, losses,
    ties, the win rate with a 95% Wilson interval and an exact sign-test p-value."""
    from evals.workbench import eval_compare

    if (suite_spec is None) == (not replay):
        raise UsageError("give exactly one of --suite or --replay", "e.g. --suite all, or --replay --since 7d")
    if (runs or since) and not replay:
        raise UsageError("--runs and --since go with --replay", "add --replay, or drop them")
    run_ids = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
    human_io = None
    if scorer_kind == "human" and not sys.stdin.isatty():
        # Driven from a pipe: read one answer per line, show pairs on stdout.
        human_io = (lambda _q: sys.stdin.readline().strip(), click.echo)
    outcome, path, err = eval_compare(baseline_arg, candidate_arg, suite_spec=suite_spec, replay=replay,
                                      run_ids=run_ids, since=parse_since(since), scorer_kind=scorer_kind, seed=seed,
                                      settings=settings_from(ctx), save_report=save_report,
                                      reports_dir=reports_dir, suites_root=suites_dir, human_io=human_io)
    s = outcome.summary
    if as_json:
        click.echo(json.dumps(s.model_dump(mode="json") | {"by_suite": outcome.by_suite, "stored": err is None},
                              ensure_ascii=False))
    else:
        wr = f"{s.win_rate:.1%}" if s.win_rate is not None else "n/a"
        click.echo(f"compare {s.compare_run_id} · scorer {s.scorer} · seed {s.seed} · {s.source}")
        click.echo(f"  baseline  {s.baseline_name} ({s.baseline_policy_id})")
        click.echo(f"  candidate {s.candidate_name} ({s.candidate_policy_id})")
        click.echo(f"  {s.pairs} pairs ({s.identical} identical): candidate wins {s.wins}, losses {s.losses}, "
                   f"ties {s.ties}")
        click.echo(f"  win rate {wr} (95% Wilson {s.ci_low:.3f}-{s.ci_high:.3f}), sign test p = {s.p_value:.4g}")
        if s.judge_calls:
            click.echo(f"  judge calls {s.judge_calls}, cost ${s.judge_cost_usd:.4f}")
        for suite, d in sorted(outcome.by_suite.items()):
            if d["wins"] or d["losses"]:
                click.echo(f"    {suite}: +{d['wins']} -{d['losses']} ={d['ties']}")
        if path:
            click.echo(f"report: {path}")
    if err:
        click.echo(f"warning: compare not stored in the warehouse: {err}", err=True)


COMMANDS = [eval_group]
