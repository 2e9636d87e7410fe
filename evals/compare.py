"""Blind A/B compare of two policies on the same cases.

How blindness is kept:

1. Both policies produce their outputs; each output is scrubbed (fields naming a policy
   dropped, policy names / ids / file names / rule names masked).
2. Pairs are put in a seeded random order and given opaque ids (``p0001``...); for each pair
   a seeded coin decides whether the candidate is A or B. That mapping lives in a
   :class:`SealedMapping` the scorer never receives.
3. The scorer sees only :class:`~evals.scorers.BlindPair` objects. Identical outputs are a
   tie without asking anyone.
4. Only after every pair is scored is the mapping revealed and the verdicts turned into
   wins / losses / ties for the candidate; the mapping is stored in its own table.

Statistics: win rate = wins / (wins + losses) with a 95% Wilson interval, and a two-sided
exact sign test (binomial, p = 0.5) over the non-tied pairs.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evals.scorers import BlindPair, Scorer, Verdict

Z95 = 1.959963984540054


# --------------------------------------------------------------------------- statistics


def wilson_interval(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval for a proportion ``wins / n`` (``(0, 1)`` when n is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    p = wins / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, center - half), min(1.0, center + half))


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test: P(a split at least this uneven | no difference). Ties excluded."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


# --------------------------------------------------------------------------- blinding


_ID_KEYS = re.compile(r"policy|candidate|baseline|variant|rule", re.IGNORECASE)
_RULE_NAME = re.compile(r"\brule [\w.:-]+:?\s*")


def scrub(output: dict[str, Any], hide: Iterable[str]) -> dict[str, Any]:
    """An output with identifying fields dropped and ``hide`` strings (names, ids, paths) masked."""
    secrets = sorted({h for h in hide if h and len(h) >= 3}, key=len, reverse=True)

    def mask(v: Any) -> Any:
        if isinstance(v, str):
            v = _RULE_NAME.sub("", v)
            for s in secrets:
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

    def _seal(self, pair_id: str, side: str) -> None:
        self._sides[pair_id] = side

    def reveal(self) -> dict[str, str]:
        self.revealed_at = time.time()
        return dict(self._sides)

    def __repr__(self) -> str:
        return f"SealedMapping({len(self._sides)} pairs, sealed)"


@dataclass
class CompareItem:
    """One case both policies ran on. ``context`` is what the scorer may see."""

    suite: str
    case_id: str
    context: dict[str, Any]
    baseline: dict[str, Any]
    candidate: dict[str, Any]


class PairResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pair_id: str
    suite: str
    case_id: str
    output_a: dict[str, Any]
    output_b: dict[str, Any]
    verdict: str
    """A / B / tie as the scorer said, before unblinding."""
    detail: str = ""
    winner: str | None = None
    """candidate / baseline / tie, filled in after unblinding."""


class CompareSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    compare_run_id: str
    created_at: float
    baseline_policy_id: str
    candidate_policy_id: str
    baseline_name: str
    candidate_name: str
    source: str
    """``suites:NAME,...`` or ``replay:...``."""
    suites: list[str] = Field(default_factory=list)
    scorer: str
    seed: int
    pairs: int = 0
    identical: int = 0
    """Pairs whose scrubbed outputs were identical (ties without scoring)."""
    wins: int = 0
    losses: int = 0
    ties: int = 0
    win_rate: float | None = None
    """wins / (wins + losses); None when every pair tied."""
    ci_low: float = 0.0
    ci_high: float = 1.0
    p_value: float = 1.0
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
    count, judge calls, judge cost). Nothing here tells the scorer which side is which."""
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
        sealed._seal(pair_id, side)
        a, b = (cand, base) if side == "A" else (base, cand)
        if a == b:
            identical += 1
            verdict = Verdict(winner="tie", detail="identical outputs")
        else:
            verdict = scorer.score(BlindPair(pair_id=pair_id, context=scrub(item.context, hide), output_a=a,
                                             output_b=b))
            calls += verdict.judge_calls
            cost += verdict.judge_cost_usd
        pairs.append(PairResult(pair_id=pair_id, suite=item.suite, case_id=item.case_id, output_a=a, output_b=b,
                                verdict=verdict.winner, detail=verdict.detail))
        if progress is not None:
            progress(i)
    return pairs, sealed, identical, calls, cost


def unblind(pairs: list[PairResult], mapping: dict[str, str]) -> tuple[int, int, int]:
    wins = losses = ties = 0
    for p in pairs:
        if p.verdict == "tie":
            p.winner = "tie"
            ties += 1
        elif p.verdict == mapping[p.pair_id]:
            p.winner = "candidate"
            wins += 1
        else:
            p.winner = "baseline"
            losses += 1
    return wins, losses, ties


def summarize(compare_run_id: str, pairs: list[PairResult], mapping: dict[str, str], *, baseline_id: str,
              candidate_id: str, baseline_name: str, candidate_name: str, source: str, suites: list[str],
              scorer: str, seed: int, identical: int, judge_calls: int, judge_cost: float,
              code_version: str) -> CompareSummary:
    wins, losses, ties = unblind(pairs, mapping)
    decided = wins + losses
    lo, hi = wilson_interval(wins, decided)
    return CompareSummary(
        compare_run_id=compare_run_id, created_at=time.time(), baseline_policy_id=baseline_id,
        candidate_policy_id=candidate_id, baseline_name=baseline_name, candidate_name=candidate_name, source=source,
        suites=suites, scorer=scorer, seed=seed, pairs=len(pairs), identical=identical, wins=wins, losses=losses,
        ties=ties, win_rate=round(wins / decided, 4) if decided else None, ci_low=round(lo, 4), ci_high=round(hi, 4),
        p_value=sign_test_p(wins, losses), judge_calls=judge_calls, judge_cost_usd=round(judge_cost, 6),
        code_version=code_version)


# --------------------------------------------------------------------------- building items


def suite_items(suites: list[Any], baseline: Any, candidate: Any, *, with_expected: bool,
                progress: Callable[[str, int], None] | None = None) -> list[CompareItem]:
    """Run both policies over the suites' screen and gate cases (episodes are not compared)."""
    from evals.runner import run_case
    from evals.suites import ScreenCase

    items: list[CompareItem] = []
    for suite in suites:
        for i, case in enumerate(suite.cases, 1):
            if case.kind == "episode":
                continue
            rb = run_case(suite, case, baseline, episodes=False)
            rc = run_case(suite, case, candidate, episodes=False)
            if rb.status in ("skip",) or rc.status in ("skip",):
                continue
            ctx: dict[str, Any] = {"kind": case.kind}
            if isinstance(case, ScreenCase):
                text = suite.screen_text(case)
                ctx["screen_tail"] = "\n".join(text.rstrip().splitlines()[-25:])
            else:
                ctx["checkpoints"] = case.input.checkpoints
                ctx["verifier_results"] = case.input.verifier_results
            if with_expected:
                ctx["expected"] = rb.expected or rc.expected
            items.append(CompareItem(suite=suite.name, case_id=case.id, context=ctx,
                                     baseline=rb.actual or {"error": "; ".join(rb.failures)},
                                     candidate=rc.actual or {"error": "; ".join(rc.failures)}))
            if progress is not None:
                progress(suite.name, i)
    return items


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
