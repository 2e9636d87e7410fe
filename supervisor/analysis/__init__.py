"""Analysis over the warehouse: tidy polars frames (always with their id columns) and the
matplotlib figures made from them. Notebooks and ``supervisor report`` call these and hold no
logic of their own.

- :mod:`~supervisor.analysis.friction`: where runs lose time (friction and its seconds lost);
- :mod:`~supervisor.analysis.timeline`: one run over time;
- :mod:`~supervisor.analysis.workbench`: evals, compares, a candidate's evidence, canaries;
- :mod:`~supervisor.analysis.why`: why one decision was made (``supervisor runs why``);
- :mod:`~supervisor.analysis.plots`: the figures (matplotlib is the optional ``analysis`` extra);
- :mod:`~supervisor.analysis.reports`: markdown + PNG reports under ``reports/``.
"""

from __future__ import annotations

from supervisor.analysis.friction import (
    answer_latency,
    daily_friction,
    escalations,
    friction_by_kind,
    friction_by_run,
    friction_events,
    friction_totals,
    friction_trend,
    human_answers,
    stalls,
    time_lost,
    top_prompts,
)
from supervisor.analysis.plots import (
    no_data_figure,
    plot_escalation_waits,
    plot_eval_history,
    plot_friction_by_kind,
    plot_friction_trend,
    plot_pass_rates,
    plot_rollout_arms,
    plot_run_timeline,
    plot_shadow_agreement,
    plot_stalls,
    plot_time_lost,
    plot_top_prompts,
    plot_win_rates,
)
from supervisor.analysis.reports import (
    Report,
    cases_markdown,
    write_candidate_report,
    write_evals_report,
    write_friction_report,
    write_run_report,
)
from supervisor.analysis.timeline import run_decisions, run_events, run_overview, run_states
from supervisor.analysis.why import DecisionExplanation, explain_decision
from supervisor.analysis.workbench import (
    arm_summary,
    compare_decided_pairs,
    compare_history,
    default_baseline,
    disagreement_summary,
    eval_disagreements,
    eval_history,
    gate_reasons,
    latest_candidate,
    pass_rates,
    policies,
    resolve_policy_id,
    rollout_arms,
    screen_tail,
    screens_of,
    shadow_agreement,
    shadow_disagreements,
    with_screens,
)
from supervisor.warehouse.friction import friction_snapshot

__all__ = [
    "DecisionExplanation",
    "Report",
    "answer_latency",
    "arm_summary",
    "cases_markdown",
    "compare_decided_pairs",
    "compare_history",
    "daily_friction",
    "default_baseline",
    "disagreement_summary",
    "escalations",
    "eval_disagreements",
    "eval_history",
    "explain_decision",
    "friction_by_kind",
    "friction_by_run",
    "friction_events",
    "friction_snapshot",
    "friction_totals",
    "friction_trend",
    "gate_reasons",
    "human_answers",
    "latest_candidate",
    "no_data_figure",
    "pass_rates",
    "plot_escalation_waits",
    "plot_eval_history",
    "plot_friction_by_kind",
    "plot_friction_trend",
    "plot_pass_rates",
    "plot_rollout_arms",
    "plot_run_timeline",
    "plot_shadow_agreement",
    "plot_stalls",
    "plot_time_lost",
    "plot_top_prompts",
    "plot_win_rates",
    "policies",
    "resolve_policy_id",
    "rollout_arms",
    "run_decisions",
    "run_events",
    "run_overview",
    "run_states",
    "screen_tail",
    "screens_of",
    "shadow_agreement",
    "shadow_disagreements",
    "stalls",
    "time_lost",
    "top_prompts",
    "with_screens",
    "write_candidate_report",
    "write_evals_report",
    "write_friction_report",
    "write_run_report",
]
