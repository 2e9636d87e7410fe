"""Reports: markdown plus PNG plots in a folder of their own under ``reports/``, made from the
same frames and figures the notebooks show (``supervisor report friction|run|candidate|evals``).

Each report is one folder (``reports/friction-20250101-120000/report.md`` and its PNGs), so it
can be attached or published as a whole; ``reports/`` stays out of git.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Concatenate, ParamSpec

import polars as pl

from supervisor.analysis import friction as fr
from supervisor.analysis import plots
from supervisor.analysis import timeline as tl
from supervisor.analysis import workbench as wb
from supervisor.warehouse import Warehouse
from supervisor.warehouse.friction import friction_snapshot

TABLE_ROWS = 15
CELL_CHARS = 70


@dataclass
class Report:
    """What a report writer produced."""

    markdown: Path
    """The report's markdown file."""
    images: list[Path] = field(default_factory=list)
    """The PNG plots it links, in order."""


def markdown_table(df: pl.DataFrame, *, rows: int = TABLE_ROWS) -> str:
    """A markdown table of the first ``rows`` rows (cells shortened, pipes and newlines escaped)."""
    if df.height == 0:
        return "_none_"
    text_cols = [c for c, t in df.schema.items() if t == pl.Utf8]
    frame = df.head(rows).with_columns(
        [pl.col(c).str.replace_all(r"\s+", " ").str.replace_all(r"\|", r"\|") for c in text_cols])
    with pl.Config(tbl_formatting="MARKDOWN", tbl_hide_column_data_types=True, tbl_hide_dataframe_shape=True,
                   tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=CELL_CHARS, tbl_width_chars=60_000):
        out = str(frame)
    if df.height > rows:
        out += f"\n\n_{df.height - rows} more rows not shown_"
    return out


class _Writer:
    """Collects sections and images for one report folder."""

    def __init__(self, out_dir: Path, name: str) -> None:
        self.folder = out_dir / name
        self.folder.mkdir(parents=True, exist_ok=True)
        self.lines: list[str] = []
        self.images: list[Path] = []

    def text(self, *lines: str) -> None:
        self.lines.extend([*lines, ""])

    def figure(self, fig: plots.Figure, name: str, alt: str) -> None:
        path = plots.save_png(fig, self.folder / f"{name}.png")
        self.images.append(path)
        self.text(f"![{alt}]({path.name})")

    def table(self, df: pl.DataFrame, *, rows: int = TABLE_ROWS) -> None:
        self.text(markdown_table(df, rows=rows))

    def finish(self) -> Report:
        md = self.folder / "report.md"
        md.write_text("\n".join(self.lines), encoding="utf-8")
        return Report(md, self.images)


P = ParamSpec("P")


def _one_friction_snapshot(fn: Callable[Concatenate[Warehouse, P], Report]) -> Callable[Concatenate[Warehouse, P], Report]:
    """A report asks many questions of ``friction_events``: compute it once for the whole report."""

    @functools.wraps(fn)
    def wrapper(wh: Warehouse, /, *args: P.args, **kwargs: P.kwargs) -> Report:
        with friction_snapshot(wh):
            return fn(wh, *args, **kwargs)

    return wrapper


def _stamp(now: dt.datetime | None) -> str:
    return (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")


@_one_friction_snapshot
def write_friction_report(wh: Warehouse, out_dir: Path, *, now: dt.datetime | None = None) -> Report:
    """Where runs lose time: seconds lost by cause, agent, rule and policy; escalations and how
    humans answered them; the prompts seen most often; stalls; the trend per day."""
    plots.require_matplotlib()
    stamp = _stamp(now)
    w = _Writer(out_dir, f"friction-{stamp}")
    t = fr.friction_totals(wh).row(0, named=True)
    esc = fr.escalations(wh)
    w.text(f"# Friction report ({stamp})", "",
           f"Warehouse `{wh.path}`: {t['runs']} runs, {t['friction']} friction occurrences, "
           f"{t['seconds_lost']:.1f} s lost in all, {t['escalations']} escalations "
           f"({t['ended_by_human']} ended by a human).",
           "Seconds lost are measured from the journal's event times (see `friction_events` in the "
           "warehouse): an escalation costs its wait, a stall its quiet time, a retry the time until "
           "the step was verified again.")
    sections: list[tuple[str, str, Callable[[], pl.DataFrame], Callable[[pl.DataFrame], plots.Figure] | None]] = [
        ("Time lost by cause", "by-kind", lambda: fr.time_lost(wh, "kind"),
         lambda df: plots.plot_time_lost(df, "kind", title="Time lost by cause")),
        ("Time lost by agent", "by-agent", lambda: fr.time_lost(wh, "agent"),
         lambda df: plots.plot_time_lost(df, "agent", title="Time lost by agent")),
        ("Time lost by rule and pattern", "by-rule", lambda: fr.time_lost(wh, "pattern"),
         lambda df: plots.plot_time_lost(df, "pattern", title="Time lost by rule / pattern")),
        ("Time lost by policy", "by-policy", lambda: fr.time_lost(wh, "policy"), None),
    ]
    for heading, name, frame, figure in sections:
        df = frame()
        w.text(f"## {heading}")
        if figure is not None:
            w.figure(figure(df), name, heading.lower())
        w.table(df)
    w.text("## Escalations: how long they waited and what ended them")
    w.figure(plots.plot_escalation_waits(esc), "escalations", "escalation waits")
    w.text("How humans answered, per cause:")
    w.table(fr.human_answers(wh))
    w.table(esc.select(["run_id", "seq", "agent", "pattern", "question", "seconds_lost", "ended_by", "human_keys",
                        "selected"]).reverse())
    prompts = fr.top_prompts(wh)
    w.text("## Prompts seen most often")
    w.figure(plots.plot_top_prompts(prompts), "top-prompts", "prompts seen most often")
    w.table(prompts.drop(["first_seen", "last_seen", "last_observation_id", "last_screen_hash"]))
    st = fr.stalls(wh)
    w.text("## Stalls")
    w.figure(plots.plot_stalls(st), "stalls", "stalls")
    w.table(st.drop(["friction_id", "pause_id"]))
    trend = fr.friction_trend(wh)
    w.text("## Trend per day")
    w.figure(plots.plot_friction_trend(trend), "trend", "time lost per day")
    w.table(trend)
    w.text("## Runs with the most time lost")
    w.table(fr.friction_by_run(wh), rows=10)
    return w.finish()


def _fenced(text: str | None) -> str:
    """A screen as a fenced block that no backticks in it can close."""
    body = (text or "(no screen)").rstrip()
    fence = "`" * max(4, max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    return f"{fence}text\n{body}\n{fence}"


def cases_markdown(df: pl.DataFrame, *, limit: int = 10) -> str:
    """Disagreements (from :func:`~supervisor.analysis.eval_disagreements`,
    :func:`~supervisor.analysis.compare_decided_pairs` or
    :func:`~supervisor.analysis.shadow_disagreements` with a ``screen`` column) as markdown: a
    heading per case saying what each side did, then the screen's last lines."""
    if df.height == 0:
        return "_none_"
    out = []
    for r in df.head(limit).iter_rows(named=True):
        if "case_id" in r:
            head = f"### {r.get('suite')} / {r['case_id']}{' (UNSAFE)' if r.get('unsafe') else ''}"
            said = (f"baseline: {r.get('baseline_did')}; candidate: {r.get('candidate_did')}"
                    + (f"; expected: {r['expected']}" if r.get("expected") else "")
                    + (f"; won by {r['winner']}: {r['why']}" if r.get("winner") else ""))
        else:
            head = f"### run {r.get('run_id')} seq {r.get('seq')}: {r.get('acting_kind')} -> {r.get('shadow_kind')}"
            said = (f"acting: {r.get('acting_kind')} {r.get('acting_keys') or ''} ({r.get('acting_rule')}); "
                    f"shadow: {r.get('shadow_kind')} {r.get('shadow_keys') or ''} ({r.get('shadow_rule')})")
        out += [head, "", said, "", _fenced(wb.screen_tail(r.get("screen"))), ""]
    if df.height > limit:
        out.append(f"_{df.height - limit} more not shown_")
    return "\n".join(out)


@_one_friction_snapshot
def write_run_report(wh: Warehouse, run_id: str, out_dir: Path) -> Report:
    """One run: its timeline (states, prompts, keys sent, escalations, verifications, friction),
    the decisions that acted, its escalations with what the human did, and its friction."""
    plots.require_matplotlib()
    overview = tl.run_overview(wh, run_id).row(0, named=True)
    w = _Writer(out_dir, f"run-{run_id}")
    w.text(f"# Run {run_id}", "",
           f"Agent {overview['agent']}, policy `{overview['policy_id']}`, outcome **{overview['outcome']}**, "
           f"{overview['duration_s'] or 0:.1f} s, {overview['answers']} answers, {overview['escalations']} "
           f"escalations, {overview['friction_seconds']:.1f} s lost to friction. "
           f"`supervisor runs why {run_id} SEQ` explains any decision.")
    states, events = tl.run_states(wh, run_id), tl.run_events(wh, run_id)
    w.figure(plots.plot_run_timeline(states, events, title=f"Run {run_id}"), "timeline", "run timeline")
    w.text("## Decisions that acted")
    w.table(tl.run_decisions(wh, run_id).drop(["run_id", "occurred_at"]), rows=40)
    esc = fr.escalations(wh, run_id)
    w.text("## Escalations")
    w.table(esc.select(["seq", "pattern", "question", "seconds_lost", "ended_by", "human_keys", "selected"]))
    w.text("## Friction")
    w.table(fr.friction_events(wh, run_id).select(["seq", "kind", "seconds_lost", "rule", "pattern", "detail"]))
    ver = wh.verifications_df(run_id)
    if ver.height:
        w.text("## Verifications")
        w.table(ver.select(["seq", "node", "verifier", "passed", "output"]))
    sup = tl.run_supervision(wh, run_id)
    if sup.height:
        w.text("## Supervision", "The worker profile and mode the workflow obeyed, and the people's preferences "
               "its instructions used.")
        w.table(sup)
    oracle = tl.run_oracle(wh, run_id)
    if oracle.height:
        w.text("## Second opinions", "Advisory: nothing acted on them.")
        w.table(oracle)
    return w.finish()


@_one_friction_snapshot
def write_candidate_report(wh: Warehouse, candidate: str, out_dir: Path, *, baseline: str | None = None,
                           evidence: wb.CanaryEvidence | None = None, now: dt.datetime | None = None) -> Report:
    """One candidate's evidence against its baseline: the gate's reasons, per-suite and per-tag
    pass rates with intervals, compares with win rates, the cases where they disagree (with
    screens), and on live runs: shadow agreement over time, the canary's verdicts (``evidence``,
    from :func:`~supervisor.analysis.canary_evidence`), disagreements with screens, and the
    limited rollout's arms judged per metric."""
    plots.require_matplotlib()
    cid, cname = wb.resolve_policy_id(wh, candidate)
    bid = wb.resolve_policy_id(wh, baseline)[0] if baseline else wb.default_baseline(wh, cid)
    bname = next(iter(wb.policies(wh).filter(pl.col("policy_id") == bid)["name"].to_list()), None)
    w = _Writer(out_dir, f"candidate-{cid}-{_stamp(now)}")
    w.text(f"# Candidate {cname or cid}", "", f"Candidate `{cid}` judged against {bname or 'the policy'} `{bid}`.")
    gate = wb.gate_reasons(wh, cid)
    w.text("## The gate")
    if gate.height:
        w.text(f"Latest verdict: **{gate['verdict'][0]}**")
        w.table(gate.drop(["gate_result_id", "verdict"]))
    else:
        w.text(f"No gate result recorded yet: run `supervisor eval gate-candidate {candidate}`.")
    roles = {"candidate": cid, "baseline": bid}
    for by in ("suite", "tag"):
        rates = wb.pass_rates(wh, roles, by)
        w.text(f"## Pass rate per {by}")
        w.figure(plots.plot_pass_rates(rates, by, title=f"Pass rate per {by}: candidate vs baseline"),
                 f"pass-rate-{by}", f"pass rate per {by}")
        w.table(rates.drop(["policy_id", "eval_run_id"]), rows=40)
    compares = wb.compare_history(wh, cid)
    w.text("## Blind compares")
    w.figure(plots.plot_win_rates(compares), "win-rate", "win rate")
    w.table(compares.select(["compare_run_id", "baseline_name", "pairs", "wins", "losses", "ties", "win_rate",
                             "ci_low", "ci_high", "p_value"]))
    dis = wb.eval_disagreements(wh, cid, bid, limit=10)
    w.text("## Cases where they disagree", f"{dis.height} shown (unsafe approvals first).")
    w.text(cases_markdown(dis))
    agreement = wb.shadow_agreement(wh, cid)
    shadow = wb.shadow_disagreements(wh, cid)
    arms = wb.rollout_arms(wh, cid)
    w.text("## On live runs: shadow canary")
    w.figure(plots.plot_shadow_agreement(agreement), "shadow-agreement", "shadow agreement")
    if evidence is not None:
        w.text("The workbench's verdicts (`evals.canary`, against `gate.yaml`'s minimums):")
        w.table(wb.canary_summary(evidence))
        w.table(wb.canary_disagreements(evidence).drop("screen"))
    w.text("Screens where the candidate would have done otherwise:")
    w.text(cases_markdown(wb.with_screens(wh, shadow), limit=5))
    w.text("## Limited rollout: the arms")
    w.figure(plots.plot_rollout_arms(arms), "rollout-arms", "rollout arms")
    w.table(wb.arm_summary(arms))
    if evidence is not None:
        metrics = wb.limited_metrics(evidence)
        w.text("Judged per metric (Mann-Whitney U; `gate.yaml`'s `limited` section):" if metrics.height else
               "No limited rollout of this candidate in the registry.")
        w.table(metrics)
    return w.finish()


def write_evals_report(wh: Warehouse, out_dir: Path, *, now: dt.datetime | None = None) -> Report:
    """Eval, compare and gate history per policy, and the registry's promotions and rollouts."""
    plots.require_matplotlib()
    w = _Writer(out_dir, f"evals-{_stamp(now)}")
    evals, compares = wb.eval_history(wh), wb.compare_history(wh)
    w.text("# Evals and compares", "", f"{evals.height} eval runs and {compares.height} compares in `{wh.path}`.")
    w.text("## Eval runs")
    w.figure(plots.plot_eval_history(evals), "eval-history", "eval pass rate over time")
    w.table(evals.select(["eval_run_id", "started_at", "policy_name", "policy_id", "cases", "passed", "pass_rate",
                          "ci_low", "ci_high", "unsafe_approvals", "must_pass_failures"]).reverse(), rows=30)
    w.text("## Compares")
    w.figure(plots.plot_win_rates(compares), "compares", "compare win rates")
    w.table(compares.select(["compare_run_id", "created_at", "candidate_name", "baseline_name", "pairs", "wins",
                             "losses", "ties", "win_rate", "ci_low", "ci_high", "p_value"]).reverse(), rows=30)
    w.text("## Gate verdicts")
    w.table(wb.gate_history(wh).reverse(), rows=30)
    w.text("## Promotions, rollbacks, canaries and rollouts")
    w.table(wb.registry_history(wh).reverse(), rows=30)
    w.text("## Policies seen")
    w.table(wb.policies(wh), rows=30)
    return w.finish()
