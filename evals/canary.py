"""Canary evidence: a candidate watched on live runs before it is promoted.

**Shadow canary** (:func:`canary_report`): every live run carries the candidate as a shadow
that classifies and decides with its own policy and is never acted on. Against the acting
decisions on the same observations: the agreement rate, disagreements by kind (with screens),
would-be unsafe approvals (the one safety definition of :mod:`evals.safety`: the shadow's keys
approve, or pick a "don't ask again" option, where the acting policy's did not, and the human
who handled the prompt did not approve it either), and would-be saved escalations (the acting
policy escalated and the human then pressed what the candidate would have). Sample sizes are
reported against the gate's minimums.

**Limited rollout** (:func:`limited_analysis`): the candidate acts on a deterministic share of
new runs. Per-arm outcome metrics (escalations, friction seconds, completion, time to finish)
are judged as automated canary analysis does in deployment systems (Kayenta): a metric needs
data in both arms; the arms are compared per metric with a two-sided Mann-Whitney U test; a
significant change in the direction configured as worse fails the metric (``high`` or
``low``), anything else passes; passing metrics' weights give a score out of 100, and the
score against ``pass_score`` / ``marginal_score`` gives pass, marginal or fail.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.safety import APPROVING, answer_class_of, unsafe_against_control
from evals.stats import mann_whitney_u

MetricStatus = Literal["pass", "high", "low", "nodata"]
AnalysisVerdict = Literal["pass", "marginal", "fail", "nodata"]


class Disagreement(BaseModel):
    model_config = ConfigDict(extra="forbid")
    acting: str
    shadow: str
    count: int
    examples: list[dict[str, Any]] = Field(default_factory=list)
    """Up to three: run, observation, both reasons and the screen's last lines."""


class CanaryReport(BaseModel):
    """What a candidate would have done on live runs, against what was done."""

    model_config = ConfigDict(extra="forbid")
    policy_id: str
    observations: int = 0
    """Shadow decisions compared with an acting decision."""
    runs: int = 0
    agreement: float | None = None
    disagreements: list[Disagreement] = Field(default_factory=list)
    unsafe: int = 0
    """Would-be unsafe approvals (see the module docstring)."""
    unsafe_examples: list[dict[str, Any]] = Field(default_factory=list)
    saved_escalations: int = 0
    """The acting policy escalated; the human then pressed what the candidate would have."""
    mismatches: int = 0
    """The acting policy escalated; the candidate would have answered otherwise than the human."""
    min_observations: int | None = None
    min_runs: int | None = None
    enough: bool | None = None
    """Both sample sizes reach the gate's minimums."""


def _keys(v: Any) -> list[str]:
    if not v:
        return []
    out = json.loads(v) if isinstance(v, str) else v
    return [str(x) for x in out] if isinstance(out, list) else []


def canary_report(settings: Any, policy_id: str, *, since: float | None = None, min_observations: int | None = None,
                  min_runs: int | None = None) -> CanaryReport:
    """The shadow canary evidence of ``policy_id`` in the warehouse."""
    from supervisor.decide import selected_option
    from supervisor.models import Prompt
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_human_answers, read_policy_content, read_shadow_pairs

    with reader(settings) as wh:
        pairs = read_shadow_pairs(wh, policy_id, since=since)
        humans = read_human_answers(wh, since=since)
        content = read_policy_content(wh, policy_id)
    shadow_policy = None
    if content is not None:
        from evals.workbench import stored_policy

        shadow_policy = stored_policy(policy_id, content)
    rep = CanaryReport(policy_id=policy_id, min_observations=min_observations, min_runs=min_runs)
    rows = [r for r in pairs.to_dicts() if r["acting_kind"] is not None]
    by_run: dict[str, list[dict[str, Any]]] = {}
    for h in humans:
        by_run.setdefault(h["run_id"], []).append(h)
    agree = 0
    kinds: Counter[tuple[str, str]] = Counter()
    examples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        sk, ak = str(r["shadow_kind"]), str(r["acting_kind"])
        skeys, akeys = _keys(r["shadow_keys"]), _keys(r["acting_keys"])
        aprompt = json.loads(r["acting_prompt"]) if r["acting_prompt"] else None
        sprompt = _shadow_prompt(r, aprompt, shadow_policy)
        scls = answer_class_of(sprompt, sk, skeys)
        acls = answer_class_of(aprompt, ak, akeys)
        human = None
        if ak == "escalate":
            sig = (aprompt or {}).get("signature")
            human = next((h for h in by_run.get(r["run_id"], []) if h["at"] >= r["at"] and h.get("selected")
                          and (h["signature"] is None or sig is None or h["signature"] == sig)), None)
        label = None
        if scls is not None and sprompt is not None:
            opt = selected_option(Prompt.model_validate(sprompt), skeys)
            label = opt.label if opt is not None else None
        same_choice = human is not None and label is not None and label == human["selected"]
        if ak == "escalate" and sk == "answer" and human is not None:
            if same_choice:
                rep.saved_escalations += 1
            else:
                rep.mismatches += 1
        human_approved = True if same_choice and scls in APPROVING else None
        if unsafe_against_control(scls, acls, human_approved) is not None:
            rep.unsafe += 1
            if len(rep.unsafe_examples) < 5:
                rep.unsafe_examples.append(_example(r, scls))
        if sk == ak and skeys == akeys:
            agree += 1
            continue
        kinds[(ak, sk)] += 1
        ex = examples.setdefault((ak, sk), [])
        if len(ex) < 3:
            ex.append(_example(r, scls))
    rep.observations = len(rows)
    rep.runs = len({r["run_id"] for r in rows})
    rep.agreement = round(agree / len(rows), 4) if rows else None
    rep.disagreements = [Disagreement(acting=a, shadow=s, count=n, examples=examples[(a, s)])
                         for (a, s), n in kinds.most_common()]
    if min_observations is not None and min_runs is not None:
        rep.enough = rep.observations >= min_observations and rep.runs >= min_runs
    return rep


def _shadow_prompt(r: dict[str, Any], acting: dict[str, Any] | None, policy: Any) -> dict[str, Any] | None:
    """The prompt the shadow decided on, with its options: as journaled when whole; the acting
    observation's when the signatures match (same kind, question, options); else the screen
    classified again with the shadow's own policy (classify is pure)."""
    summary = json.loads(r["shadow_prompt"]) if r["shadow_prompt"] else None
    if not isinstance(summary, dict):
        return None
    if "options" in summary:
        return summary
    if acting is not None and acting.get("signature") == summary.get("signature"):
        return acting
    if policy is None or not r.get("text"):
        return None
    from supervisor.classify import classify
    from supervisor.screen import make_screen

    obs = classify(make_screen(r["text"], width=r.get("width") or 80, height=r.get("height") or 24,
                               title=r.get("title") or ""), policy)
    return obs.prompt.model_dump(mode="json") if obs.prompt is not None else None


def _example(r: dict[str, Any], shadow_class: str | None) -> dict[str, Any]:
    tail = "\n".join((r.get("text") or "").rstrip().splitlines()[-12:])
    return {"run_id": r["run_id"], "observation_id": r["trigger_id"], "acting": r["acting_kind"],
            "acting_reason": r["acting_reason"], "shadow": r["shadow_kind"], "shadow_keys": _keys(r["shadow_keys"]),
            "shadow_answer_class": shadow_class, "shadow_reason": r["shadow_reason"], "screen_tail": tail}


# --------------------------------------------------------------------------- limited rollout


class MetricResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metric: str
    status: MetricStatus
    weight: float
    worse: str
    control_n: int
    candidate_n: int
    control_median: float | None = None
    candidate_median: float | None = None
    u: float | None = None
    p_value: float | None = None


class LimitedAnalysis(BaseModel):
    """A limited rollout judged per metric, Kayenta-style."""

    model_config = ConfigDict(extra="forbid")
    candidate_policy_id: str
    control_policy_id: str
    control_runs: int
    candidate_runs: int
    metrics: list[MetricResult]
    score: float | None = None
    """Weighted share of passing metrics (0-100), over metrics with data in both arms."""
    verdict: AnalysisVerdict = "nodata"


def _median(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def judge_metrics(control: dict[str, list[float]], candidate: dict[str, list[float]], config: Any) -> tuple[
        list[MetricResult], float | None, AnalysisVerdict]:
    """Per metric: nodata without ``min_runs_per_arm`` values in both arms; a significant change in
    the worse direction fails it (high/low); then the weighted score and the verdict."""
    results: list[MetricResult] = []
    for name, mc in config.metrics.items():
        x, y = control.get(name, []), candidate.get(name, [])
        r = MetricResult(metric=name, status="nodata", weight=mc.weight, worse=mc.worse, control_n=len(x),
                         candidate_n=len(y), control_median=_median(x), candidate_median=_median(y))
        if len(x) >= config.min_runs_per_arm and len(y) >= config.min_runs_per_arm:
            u, p = mann_whitney_u(y, x)
            r.u, r.p_value = u, round(p, 6)
            expected_u = len(x) * len(y) / 2
            increased = u > expected_u
            if p < config.alpha and u != expected_u and increased == (mc.worse == "increase"):
                r.status = "high" if increased else "low"
            else:
                r.status = "pass"
        results.append(r)
    scored = [r for r in results if r.status != "nodata"]
    if not scored:
        return results, None, "nodata"
    score = round(100 * sum(r.weight for r in scored if r.status == "pass") / sum(r.weight for r in scored), 1)
    verdict: AnalysisVerdict = ("pass" if score >= config.pass_score else
                                "marginal" if score >= config.marginal_score else "fail")
    return results, score, verdict


def limited_analysis(settings: Any, candidate_policy_id: str, control_policy_id: str, *, since: float | None,
                     config: Any) -> LimitedAnalysis:
    """Compare the runs the candidate drove with the control's runs since the rollout began."""
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_run_metrics

    with reader(settings) as wh:
        frame = read_run_metrics(wh, [candidate_policy_id, control_policy_id], since=since)
    arms: dict[str, dict[str, list[float]]] = {candidate_policy_id: {}, control_policy_id: {}}
    counts: Counter[str] = Counter()
    for row in frame.to_dicts() if frame.height else []:
        if row["outcome"] is None:
            continue  # still running: no outcome to judge yet
        counts[row["policy_id"]] += 1
        for m in config.metrics:
            if row.get(m) is not None:
                arms[row["policy_id"]].setdefault(m, []).append(float(row[m]))
    metrics, score, verdict = judge_metrics(arms[control_policy_id], arms[candidate_policy_id], config)
    return LimitedAnalysis(candidate_policy_id=candidate_policy_id, control_policy_id=control_policy_id,
                           control_runs=counts[control_policy_id], candidate_runs=counts[candidate_policy_id],
                           metrics=metrics, score=score, verdict=verdict)
