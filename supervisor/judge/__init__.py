"""The optional LLM judge: rules decide what they can, the judge helps where they cannot.

Off by default (``judge.consult: never``): no key needed, no calls, nothing imported from the
SDK. Modules: ``base`` (the :class:`Judge` protocol, :class:`JudgeVerdict`, the persisted
:class:`JudgeCall`, :class:`JudgeHistory`, :class:`JudgeStats`), ``prompts`` (system prompts,
tools, the request layout), ``cache`` (durable cache by request hash), ``budget`` (prices,
per-run and per-day budgets), ``anthropic_judge`` (the only module importing ``anthropic``),
``consult`` (:func:`judged_decision`: decide first, judge per policy, safety after),
``scorer`` (the pairwise LLM scorer for blind compare) and ``proposer`` (pattern proposals for
``supervisor eval propose``).

Integration:
- runner: one ``PaneJudge(build_judge(policy, settings), policy)`` per pane (``build_judge``
  returns None when ``consult == "never"``: then it is exactly ``decide``); where it called
  ``decide``: ``decision, call = pane_judge.decide(observation, screen, run_state,
  policy_id=...)``; journal ``call`` (when not None) as a ``judge_call`` event before acting on
  ``decision``. (Lower level: ``judged_decision`` with your own ``JudgeHistory`` and
  ``change_hint``.)
- evals (``supervisor eval run``): pass one ``JudgeStats()`` per suite to ``build_judge`` and
  report ``stats.as_dict()``; recorded runs replay from the cache with zero HTTP calls.
- blind compare ``--scorer llm``: ``build_pairwise_scorer(policy, settings)`` and
  ``score_both_orders(scorer, case, output_a, output_b)``.
- ``supervisor eval propose`` with a key: ``build_pattern_proposer(policy, settings)`` and
  ``proposer.propose(target, screen, situation)``; the workbench checks every pattern.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from supervisor.judge.base import (
    HINT_TEXT,
    ChangeHint,
    Judge,
    JudgeAction,
    JudgeCall,
    JudgeExchange,
    JudgeHistory,
    JudgeOutcome,
    JudgeStats,
    JudgeVerdict,
    change_hint,
)
from supervisor.judge.consult import PaneJudge, consult_reason, judged_decision, vet_keys

if TYPE_CHECKING:
    from supervisor.judge.proposer import LLMPatternProposer
    from supervisor.judge.scorer import LLMPairwiseScorer
    from supervisor.policy import Policy
    from supervisor.settings import Settings

__all__ = [
    "HINT_TEXT",
    "ChangeHint",
    "Judge",
    "JudgeAction",
    "JudgeCall",
    "JudgeExchange",
    "JudgeHistory",
    "JudgeOutcome",
    "JudgeStats",
    "JudgeVerdict",
    "PaneJudge",
    "build_judge",
    "build_pairwise_scorer",
    "build_pattern_proposer",
    "change_hint",
    "consult_reason",
    "judged_decision",
    "vet_keys",
]


def build_judge(policy: Policy, settings: Settings | None = None, *, stats: JudgeStats | None = None,
                api_key: str | None = None, base_url: str | None = None, force: bool = False,
                **kwargs: Any) -> Judge | None:
    """The judge a run or an eval should use: None when ``policy.judge.consult == "never"``
    (unless ``force``), else an Anthropic judge with its cache under ``settings.cache_dir/judge``
    and its day ledger under ``settings.home/judge/spend``. Never calls the API itself; the SDK is
    imported only here, lazily. Raises PolicyError for an unknown prompt version (at start)."""
    if policy.judge.consult == "never" and not force:
        return None
    from supervisor.judge.anthropic_judge import AnthropicJudge, make_caller
    from supervisor.judge.prompts import check_prompt_versions
    from supervisor.settings import Settings as _Settings

    check_prompt_versions(policy.judge)
    s = settings or _Settings()
    caller = make_caller(policy.judge, settings=s, stats=stats, api_key=api_key, base_url=base_url, **kwargs)
    return AnthropicJudge(policy.judge, caller)


def build_pairwise_scorer(policy: Policy, settings: Settings | None = None, *, stats: JudgeStats | None = None,
                          api_key: str | None = None, base_url: str | None = None,
                          **kwargs: Any) -> LLMPairwiseScorer:
    """The LLM scorer for blind compare, on the same caller (cache, budget, retries) as the judge."""
    from supervisor.judge.anthropic_judge import make_caller
    from supervisor.judge.prompts import check_prompt_versions
    from supervisor.judge.scorer import LLMPairwiseScorer
    from supervisor.settings import Settings as _Settings

    check_prompt_versions(policy.judge)
    s = settings or _Settings()
    caller = make_caller(policy.judge, settings=s, stats=stats, api_key=api_key, base_url=base_url, **kwargs)
    return LLMPairwiseScorer(policy.judge, caller)


def build_pattern_proposer(policy: Policy, settings: Settings | None = None, *, stats: JudgeStats | None = None,
                           api_key: str | None = None, base_url: str | None = None,
                           **kwargs: Any) -> LLMPatternProposer:
    """The pattern proposer of ``supervisor eval propose``, on the same caller (cache, budget,
    retries) as the judge, with the policy's judge settings (model, budgets)."""
    from supervisor.judge.anthropic_judge import make_caller
    from supervisor.judge.proposer import LLMPatternProposer
    from supervisor.settings import Settings as _Settings

    s = settings or _Settings()
    caller = make_caller(policy.judge, settings=s, stats=stats, api_key=api_key, base_url=base_url, **kwargs)
    return LLMPatternProposer(policy.judge, caller)
