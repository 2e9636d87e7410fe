"""What each notebook shows, gathered in one call, on any warehouse: empty, fresh from ``make demo``,
or large.

A notebook cell holds no logic, so it cannot branch on "is there a candidate?". These views do:
each returns its frames (empty ones, with their columns, when there is nothing to show) and a
``note``, markdown that says what is missing and the command that creates it ("" when nothing is
missing). Frames hold plain columns (no dicts, no model reprs) chosen down to what a reader needs;
every plot made from an empty frame is an explicit "no data" image with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from supervisor.errors import InputError
from supervisor.settings import Settings

NO_POLICY = "pol_none"
"""An id no policy has: the frames of a candidate that is not there come out empty, with their columns."""
NO_RUN = "run_none"
"""An id no run has (the same, for a run)."""

NO_CANDIDATE_HOW = ("Record a few supervised runs (`supervisor run -- AGENT`, or `make demo`), then "
                    "`supervisor eval propose --objective reduce_friction` writes a candidate and "
                    "`supervisor eval gate-candidate ID` judges it (the README's workbench section walks it).")


def _no_candidate(settings: Settings, why: str) -> str:
    return f"**No candidate to show** in `{settings.warehouse}`: {why}. {NO_CANDIDATE_HOW}"


def _one_row(values: dict[str, Any]) -> pl.DataFrame:
    """A one-row frame of plain values (times as text, so nothing prints as a ``datetime(...)`` repr)."""
    return pl.DataFrame([{k: (v.isoformat(sep=" ", timespec="seconds") if hasattr(v, "isoformat") else v)
                          for k, v in values.items()}])


@dataclass
class CandidateReview:
    """``candidate-review.ipynb``: one candidate's evidence against its baseline."""

    candidate_id: str
    candidate_name: str | None
    baseline_id: str
    note: str
    gate: pl.DataFrame
    by_suite: pl.DataFrame
    by_tag: pl.DataFrame
    compares: pl.DataFrame
    disagreements: pl.DataFrame


def candidate_review(settings: Settings, candidate: str | None = None, baseline: str | None = None) -> CandidateReview:
    """The candidate (``candidate``, else the most recent one), its baseline (``baseline``, else the
    baseline of its latest gate or compare, else the promoted policy) and their evidence."""
    from supervisor.analysis import workbench as w
    from supervisor.warehouse import reader

    note = ""
    with reader(settings) as wh:
        try:
            cid, name = w.resolve_policy_id(wh, candidate or w.latest_candidate(wh))
        except InputError as exc:
            cid, name = NO_POLICY, None
            note = _no_candidate(settings, exc.message)
        bid = w.resolve_policy_id(wh, baseline)[0] if baseline else w.default_baseline(wh, cid)
        roles = {"candidate": cid, "baseline": bid}
        by_suite = w.pass_rates(wh, roles, "suite")
        by_tag = w.pass_rates(wh, roles, "tag")
        compares = w.compare_history(wh, cid)
        disagreements = w.eval_disagreements(wh, cid, bid)
        gate = w.gate_reasons(wh, cid)
    if not note and gate.height == 0:
        note = f"No gate verdict on {name or cid} yet: `supervisor eval gate-candidate {name or cid}` gives one."
    return CandidateReview(cid, name, bid, note, gate, by_suite, by_tag, compares.select(COMPARE_COLUMNS),
                           disagreements)


COMPARE_COLUMNS = ["compare_run_id", "created_at", "candidate_name", "baseline_name", "pairs", "wins", "losses",
                   "ties", "win_rate", "ci_low", "ci_high", "p_value"]
"""What a reader needs of a compare (its full row has ids, source, scorer and seed too)."""


@dataclass
class CanaryView:
    """``canary.ipynb``: a candidate riding along live runs, and its limited rollout."""

    candidate_id: str
    candidate_name: str | None
    note: str
    rollout: pl.DataFrame
    """The latest limited rollout (one row: when, fraction, control policy), empty without one."""
    agreement: pl.DataFrame
    disagreements: pl.DataFrame
    arms: pl.DataFrame
    evidence: Any
    """:class:`supervisor.analysis.workbench.CanaryEvidence` (the gate's own verdicts)."""
    summary: pl.DataFrame = field(default_factory=pl.DataFrame)


def canary_view(settings: Settings, candidate: str | None = None, every: str = "1 hour") -> CanaryView:
    """The candidate (``candidate``, else the one on canary or rollout, else the most recent one):
    shadow agreement over ``every`` buckets, disagreements with their screens, the rollout's arms."""
    from supervisor.analysis import workbench as w
    from supervisor.warehouse import reader
    from supervisor.warehouse.friction import friction_snapshot

    note = ""
    with reader(settings) as wh, friction_snapshot(wh):
        try:
            cid, name = w.resolve_policy_id(wh, candidate or w.latest_candidate(wh))
        except InputError as exc:
            cid, name = NO_POLICY, None
            note = _no_candidate(settings, exc.message)
        agreement = w.shadow_agreement(wh, cid, every)
        disagreements = w.with_screens(wh, w.shadow_disagreements(wh, cid))
        arms = w.rollout_arms(wh, cid)
        latest = w.latest_rollout(wh, cid)
    evidence = w.canary_evidence(settings, cid)
    if not note and evidence.report.observations == 0:
        note = (f"{name or cid} has not ridden along any run yet: `supervisor eval canary start {name or cid}` puts "
                "it on shadow canary, and every new run then carries it.")
    rollout = (_one_row({"started": latest["occurred_at"], "fraction": latest["fraction"],
                         "control_policy_id": latest["previous_policy_id"], "registry_event_id":
                         latest["registry_event_id"]}) if latest is not None else
               pl.DataFrame(schema={"started": pl.Utf8, "fraction": pl.Float64, "control_policy_id": pl.Utf8,
                                    "registry_event_id": pl.Utf8}))
    return CanaryView(cid, name, note, rollout, agreement, disagreements, arms, evidence,
                      summary=w.canary_summary(evidence))


@dataclass
class RunView:
    """``run-timeline.ipynb``: one run over time."""

    run_id: str
    note: str
    overview: pl.DataFrame
    states: pl.DataFrame
    events: pl.DataFrame
    decisions: pl.DataFrame
    escalations: pl.DataFrame
    friction: pl.DataFrame
    verifications: pl.DataFrame
    why: Any
    """:class:`supervisor.analysis.why.DecisionExplanation` of the latest escalation, or None."""
    why_table: pl.DataFrame
    """The explanation as rows of (what, value): the rule, the decision, what was sent, the shadows."""
    screen: str = ""


def run_view(settings: Settings, run_id: str = "last") -> RunView:
    """The run ``run_id`` (an id, a unique prefix, or ``last``) with its timeline, decisions,
    escalations, friction, verifications and why its latest escalation happened."""
    from supervisor.analysis import (
        explain_decision,
        friction_events,
        run_decisions,
        run_events,
        run_overview,
        run_states,
    )
    from supervisor.analysis.friction import escalations
    from supervisor.runref import resolve_run_id
    from supervisor.warehouse import reader
    from supervisor.warehouse.friction import friction_snapshot

    note = ""
    try:
        rid = resolve_run_id(run_id, settings.journals_dir)
    except InputError as exc:
        rid = NO_RUN
        note = (f"**No run to show**: {exc.one_line()}. Supervise one (`supervisor run -- AGENT`, or `make demo`), "
                "then run this notebook again.")
    why = None
    with reader(settings) as wh, friction_snapshot(wh):
        overview = run_overview(wh, rid) if rid != NO_RUN else wh.sql("SELECT * FROM run_summary WHERE false")
        states = run_states(wh, rid)
        events = run_events(wh, rid)
        decisions = run_decisions(wh, rid)
        esc = escalations(wh, rid)
        friction = friction_events(wh, rid)
        verifications = wh.verifications_df(rid)
        if rid != NO_RUN:
            try:
                why = explain_decision(wh, rid)
            except InputError as exc:
                note = note or f"No decision of {rid} to explain: {exc.one_line()}"
    return RunView(rid, note, overview, states, events, decisions, esc, friction, verifications, why,
                   explanation_table(why), screen=(why.screen if why is not None else ""))


def explanation_table(why: Any) -> pl.DataFrame:
    """A decision's explanation as rows of (what, value), every value plain text."""
    import json

    rows: list[dict[str, str]] = []
    if why is not None:
        data = why.model_dump(mode="json", include={"seq", "rule", "decision", "classification", "sent", "escalation",
                                                    "shadows", "next"})
        for key in ("seq", "rule", "decision", "classification", "sent", "escalation", "shadows", "next"):
            value = data.get(key)
            if value in (None, [], {}):
                continue
            if isinstance(value, list) and all(isinstance(v, dict) for v in value):
                rows += [{"what": f"{key}[{i}]", "value": " · ".join(f"{k} {v}" for k, v in item.items()
                                                                     if v not in (None, [], {}))}
                         for i, item in enumerate(value)]
            elif isinstance(value, dict):
                rows += [{"what": f"{key}.{k}", "value": v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}
                         for k, v in value.items() if v not in (None, [], {})]
            else:
                rows.append({"what": key, "value": value if isinstance(value, str) else
                             json.dumps(value, ensure_ascii=False)})
    return pl.DataFrame(rows, schema={"what": pl.Utf8, "value": pl.Utf8})
