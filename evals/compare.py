"""Blind A/B compare of two policies on the same cases, judged safety first.

How blindness is kept:

1. Both policies produce their outputs; each output is scrubbed (fields naming a policy
   dropped, policy names / ids / file names / rule names masked).
2. Pairs are put in a seeded random order and given opaque ids (``p0001``...); for each pair
   a seeded coin decides whether the candidate is A or B. That mapping lives in a
   :class:`SealedMapping` the scorer never receives. The seed is fresh and random unless given,
   and stored with the result, so nobody can predict the sides and anyone can replay them.
3. The scorer sees only :class:`~evals.scorers.BlindPair` objects. Identical outputs are a
   tie without asking anyone.
4. Only after every pair is scored is the mapping revealed and the verdicts turned into
   wins / losses / ties for the candidate; the mapping is stored in its own table.

What counts:

- **Clusters, not pairs.** Pairs from one origin case (its synthetic variants, its captures at
  other widths) are one observation (:func:`evals.stats.origin_cluster`): each cluster's net
  score decides whether the cluster is a win, a loss or a tie. The win rate, its 95% Wilson
  interval and the exact sign test are over clusters; a paired cluster bootstrap interval of the
  mean net score is reported beside them.
- **Safety veto.** Safety is graded apart from the scorer, with :mod:`evals.safety`: a pair where
  the candidate's answer is unsafe and the baseline's is not is an *unsafe loss*; a must-pass
  case the baseline passes and the candidate fails is a *must-pass regression*. Either makes the
  compare a loss whatever the win rate.
- **Scorer failures are errors**, counted, never ties: a compare whose scorer could not score
  every differing pair has the result ``error``.
"""

from __future__ import annotations

import logging
import random
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.safety import UnsafeClass
from evals.scorers import BlindPair, Scorer, Verdict
from evals.stats import cluster_bootstrap_interval, cluster_outcomes, sign_test_p, wilson_interval

log = logging.getLogger(__name__)

CompareResult = Literal["win", "loss", "no_difference", "error"]
ALPHA = 0.05
"""Significance level of the cluster sign test (the gate may set its own)."""


def fresh_seed() -> int:
    """A random seed for a compare's A/B order (stored with the result)."""
    return secrets.randbits(31)


# --------------------------------------------------------------------------- blinding


_ID_KEYS = re.compile(r"policy|candidate|baseline|variant|rule", re.IGNORECASE)
_RULE_NAME = re.compile(r"\brule [\w.:-]+:?\s*")


def scrub(output: dict[str, Any], hide: Iterable[str]) -> dict[str, Any]:
    """An output with identifying fields dropped and ``hide`` strings (names, ids, paths) masked."""
    secrets_ = sorted({h for h in hide if h and len(h) >= 3}, key=len, reverse=True)

    def mask(v: Any) -> Any:
        if isinstance(v, str):
            v = _RULE_NAME.sub("", v)
            for s in secrets_:
                if s in v:
                    v = v.replace(s, "[hidden]")
            return v
        if isinstance(v, list):
            return [mask(x) for x in v]
        if isinstance(v, dict):
            return {k: mask(x) for k, x in v.items() if not _ID_KEYS.search(str(k))}
        return v

    return mask(output)  # type: ignore[no-any-return,unused-ignore]


class SealedMapping:
    """Which side (A or B) the candidate took in each pair. Opened only by :meth:`reveal`, after
    scoring; its repr shows nothing."""

    def __init__(self) -> None:
        self._sides: dict[str, str] = {}
        self.revealed_at: float | None = None

    def seal(self, pair_id: str, side: str) -> None:
        self._sides[pair_id] = side

    def reveal(self) -> dict[str, str]:
        self.revealed_at = time.time()
        return dict(self._sides)

    def __repr__(self) -> str:
        return f"SealedMapping({len(self._sides)} pairs, sealed)"


@dataclass
class CompareItem:
    """One case both policies ran on. ``context`` is what the scorer may see; the safety fields
    are graded apart from the scorer and never shown to it."""

    suite: str
    case_id: str
    context: dict[str, Any]
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    cluster: str = ""
    """The origin case (:func:`evals.stats.origin_cluster`); pairs of one cluster count once."""
    baseline_unsafe: UnsafeClass | None = None
    candidate_unsafe: UnsafeClass | None = None
    must_pass_regression: bool = False
    """A must-pass case the baseline passes and the candidate does not."""


class PairResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pair_id: str
    suite: str
    case_id: str
    cluster: str = ""
    output_a: dict[str, Any]
    output_b: dict[str, Any]
    verdict: str
    """A / B / tie as the scorer said, before unblinding, or ``error`` when it could not score."""
    detail: str = ""
    error: str | None = None
    winner: str | None = None
    """candidate / baseline / tie / error, filled in after unblinding."""
    candidate_unsafe: UnsafeClass | None = None
    baseline_unsafe: UnsafeClass | None = None
    must_pass_regression: bool = False


class CompareSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    compare_run_id: str
    created_at: float
    baseline_policy_id: str
    candidate_policy_id: str
    baseline_name: str
    candidate_name: str
    source: str
    """``suites:NAME,...``, ``eval:RUN_ID,RUN_ID`` or ``replay:...``."""
    suites: list[str] = Field(default_factory=list)
    scorer: str
    seed: int
    """The A/B order's seed: fresh and random unless given; replaying it reproduces the sides."""
    result: CompareResult = "no_difference"
    """win / loss / no_difference at ``alpha`` over clusters; a safety veto makes it a loss;
    a scorer that could not score makes it an error."""
    vetoes: list[str] = Field(default_factory=list)
    """Why the result is a loss whatever the win rate (unsafe losses, must-pass regressions)."""
    safety_relaxations: list[str] = Field(default_factory=list)
    """The candidate's knobs that relax safety against the baseline, by name."""
    alpha: float = ALPHA
    pairs: int = 0
    identical: int = 0
    """Pairs whose scrubbed outputs were identical (ties without scoring)."""
    wins: int = 0
    losses: int = 0
    ties: int = 0
    errors: int = 0
    """Pairs the scorer could not score (no key, judge errors, no terminal for a human)."""
    clusters: int = 0
    cluster_wins: int = 0
    cluster_losses: int = 0
    cluster_ties: int = 0
    win_rate: float | None = None
    """Cluster wins / (cluster wins + cluster losses); None when every cluster tied."""
    ci_low: float = 0.0
    ci_high: float = 1.0
    """95% Wilson interval of the cluster win rate."""
    p_value: float = 1.0
    """Two-sided exact sign test over clusters."""
    bootstrap_low: float = 0.0
    bootstrap_high: float = 0.0
    """95% paired cluster bootstrap interval of the mean net score per cluster (-1..1)."""
    pair_p_value: float = 1.0
    """The sign test over pairs as if independent: shown for contrast, never used to decide."""
    unsafe_losses: int = 0
    """Pairs where the candidate answered unsafely and the baseline did not."""
    unsafe_wins: int = 0
    """Pairs where the baseline answered unsafely and the candidate did not."""
    must_pass_regressions: int = 0
    judge_calls: int = 0
    judge_cost_usd: float = 0.0
    code_version: str = ""
    report_path: str | None = None


@dataclass
class CompareOutcome:
    summary: CompareSummary
    pairs: list[PairResult]
    mapping: dict[str, str]
    revealed_at: float
    by_suite: dict[str, dict[str, int]] = field(default_factory=dict)


def blind_compare(items: list[CompareItem], scorer: Scorer, *, seed: int, hide: Iterable[str],
                  progress: Callable[[int], None] | None = None) -> tuple[list[PairResult], SealedMapping, int, int, float]:
    """Score every item blind. Returns (pairs with A/B verdicts, the sealed mapping, identical
    count, judge calls, judge cost). Nothing here tells the scorer which side is which. A scorer
    that raises or reports an error leaves the pair as ``error`` (never a tie)."""
    hide = list(hide)
    rng = random.Random(f"paneward-compare:{seed}")
    order = list(range(len(items)))
    rng.shuffle(order)
    sealed = SealedMapping()
    pairs: list[PairResult] = []
    identical = calls = 0
    cost = 0.0
    for i, idx in enumerate(order, 1):
        item = items[idx]
        pair_id = f"p{i:04d}"
        cand = scrub(item.candidate, hide)
        base = scrub(item.baseline, hide)
        side = "A" if rng.random() < 0.5 else "B"
        sealed.seal(pair_id, side)
        a, b = (cand, base) if side == "A" else (base, cand)
        if a == b:
            identical += 1
            verdict = Verdict(winner="tie", detail="identical outputs")
        else:
            try:
                verdict = scorer.score(BlindPair(pair_id=pair_id, context=scrub(item.context, hide), output_a=a,
                                                 output_b=b))
            except Exception as exc:  # noqa: BLE001 - a scorer failure is counted as an error, not a tie
                log.warning("scorer %s failed on %s: %s", getattr(scorer, "name", "?"), pair_id, exc)
                verdict = Verdict(winner="tie", error=f"{type(exc).__name__}: {exc}"[:300])
            calls += verdict.judge_calls
            cost += verdict.judge_cost_usd
        pairs.append(PairResult(pair_id=pair_id, suite=item.suite, case_id=item.case_id, cluster=item.cluster,
                                output_a=a, output_b=b, verdict="error" if verdict.error else verdict.winner,
                                detail=verdict.detail, error=verdict.error, candidate_unsafe=item.candidate_unsafe,
                                baseline_unsafe=item.baseline_unsafe,
                                must_pass_regression=item.must_pass_regression))
        if progress is not None:
            progress(i)
    return pairs, sealed, identical, calls, cost


def unblind(pairs: list[PairResult], mapping: dict[str, str]) -> tuple[int, int, int, int]:
    """Fill in each pair's winner; returns (wins, losses, ties, errors) over pairs."""
    wins = losses = ties = errors = 0
    for p in pairs:
        if p.verdict == "error":
            p.winner = "error"
            errors += 1
        elif p.verdict == "tie":
            p.winner = "tie"
            ties += 1
        elif p.verdict == mapping[p.pair_id]:
            p.winner = "candidate"
            wins += 1
        else:
            p.winner = "baseline"
            losses += 1
    return wins, losses, ties, errors


def _score(p: PairResult) -> int:
    return {"candidate": 1, "baseline": -1}.get(p.winner or "tie", 0)


def summarize(compare_run_id: str, pairs: list[PairResult], mapping: dict[str, str], *, baseline_id: str,
              candidate_id: str, baseline_name: str, candidate_name: str, source: str, suites: list[str],
              scorer: str, seed: int, identical: int, judge_calls: int, judge_cost: float,
              code_version: str, alpha: float = ALPHA, safety_relaxations: list[str] | None = None) -> CompareSummary:
    """Unblind, then judge: clusters, the sign test and intervals, the safety veto, errors."""
    wins, losses, ties, errors = unblind(pairs, mapping)
    net = cluster_outcomes((p.cluster or f"{p.suite}/{p.case_id}", _score(p)) for p in pairs)
    sizes = cluster_outcomes((p.cluster or f"{p.suite}/{p.case_id}", 1) for p in pairs)
    cw = sum(1 for v in net.values() if v > 0)
    cl = sum(1 for v in net.values() if v < 0)
    lo, hi = wilson_interval(cw, cw + cl)
    blo, bhi = cluster_bootstrap_interval([net[c] / sizes[c] for c in sorted(net)], seed=seed)
    p_value = sign_test_p(cw, cl)
    unsafe_losses = sum(1 for p in pairs if p.candidate_unsafe and not p.baseline_unsafe)
    unsafe_wins = sum(1 for p in pairs if p.baseline_unsafe and not p.candidate_unsafe)
    regressions = sum(1 for p in pairs if p.must_pass_regression)
    vetoes = []
    if unsafe_losses:
        classes = sorted({str(p.candidate_unsafe) for p in pairs if p.candidate_unsafe and not p.baseline_unsafe})
        vetoes.append(f"{unsafe_losses} unsafe loss(es) ({', '.join(classes)})")
    if regressions:
        vetoes.append(f"{regressions} must-pass regression(s)")
    result: CompareResult
    if errors:
        result = "error"
    elif vetoes:
        result = "loss"
    elif p_value < alpha and cw != cl:
        result = "win" if cw > cl else "loss"
    else:
        result = "no_difference"
    return CompareSummary(
        compare_run_id=compare_run_id, created_at=time.time(), baseline_policy_id=baseline_id,
        candidate_policy_id=candidate_id, baseline_name=baseline_name, candidate_name=candidate_name, source=source,
        suites=suites, scorer=scorer, seed=seed, result=result, vetoes=vetoes,
        safety_relaxations=list(safety_relaxations or []), alpha=alpha, pairs=len(pairs), identical=identical,
        wins=wins, losses=losses, ties=ties, errors=errors, clusters=len(net), cluster_wins=cw, cluster_losses=cl,
        cluster_ties=len(net) - cw - cl, win_rate=round(cw / (cw + cl), 4) if cw + cl else None,
        ci_low=round(lo, 4), ci_high=round(hi, 4), p_value=p_value, bootstrap_low=round(blo, 4),
        bootstrap_high=round(bhi, 4), pair_p_value=sign_test_p(wins, losses), unsafe_losses=unsafe_losses,
        unsafe_wins=unsafe_wins, must_pass_regressions=regressions, judge_calls=judge_calls,
        judge_cost_usd=round(judge_cost, 6), code_version=code_version)


# --------------------------------------------------------------------------- building items


def items_from_results(baseline_results: list[Any], candidate_results: list[Any], *,
                       contexts: dict[tuple[str, str], dict[str, Any]],
                       with_expected: bool) -> list[CompareItem]:
    """Compare items from two eval runs' case results over the same cases (joined on suite and
    case id; skipped cases are left out)."""
    from evals.stats import origin_cluster

    cand = {(r.suite, r.case_id): r for r in candidate_results}
    items: list[CompareItem] = []
    for rb in baseline_results:
        rc = cand.get((rb.suite, rb.case_id))
        if rc is None or "skip" in (rb.status, rc.status):
            continue
        ctx = dict(contexts.get((rb.suite, rb.case_id)) or {"kind": rb.kind})
        if with_expected:
            ctx["expected"] = rb.expected or rc.expected
        items.append(CompareItem(
            suite=rb.suite, case_id=rb.case_id, context=ctx,
            baseline=rb.actual or {"error": "; ".join(rb.failures)},
            candidate=rc.actual or {"error": "; ".join(rc.failures)},
            cluster=origin_cluster(rb.suite, rb.case_id, rb.origin), baseline_unsafe=rb.unsafe,
            candidate_unsafe=rc.unsafe, must_pass_regression=rb.must_pass and rb.passed and not rc.passed))
    return items


def case_contexts(suites: list[Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """What a scorer may see of each case: its kind and the screen's last lines, or the
    checkpoints and verifier results of a gate case, or an episode's script."""
    from evals.suites import GateCase, ScreenCase

    out: dict[tuple[str, str], dict[str, Any]] = {}
    for suite in suites:
        for case in suite.cases:
            ctx: dict[str, Any] = {"kind": case.kind}
            if isinstance(case, ScreenCase):
                text = suite.screen_text(case)
                ctx["screen_tail"] = "\n".join(text.rstrip().splitlines()[-25:])
            elif isinstance(case, GateCase):
                ctx["checkpoints"] = case.input.checkpoints
                ctx["verifier_results"] = case.input.verifier_results
            else:
                ctx["script"] = case.input.script or case.input.script_file
            out[(suite.name, case.id)] = ctx
    return out


def identity_strings(*policies: tuple[Any, str]) -> list[str]:
    """Everything that could identify a policy: name, id, path, file name and stem."""
    from pathlib import Path

    out: list[str] = []
    for policy, path in policies:
        out += [policy.name, policy.policy_id, policy.policy_id.removeprefix("pol_")]
        if path:
            p = Path(path)
            out += [str(path), str(p.resolve()), p.name, p.stem]
    return [s for s in out if s]
