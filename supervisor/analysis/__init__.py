"""Analysis over the warehouse: tidy polars frames (always with their id columns) and the
matplotlib figures made from them. Notebooks and ``supervisor report`` call these and hold no
logic of their own.

- :mod:`~supervisor.analysis.friction`: where runs lose time (friction and its seconds lost);
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
    plot_friction_by_kind,
    plot_friction_trend,
    plot_stalls,
    plot_time_lost,
    plot_top_prompts,
)
from supervisor.analysis.reports import Report, write_friction_report

__all__ = [
    "Report",
    "answer_latency",
    "daily_friction",
    "escalations",
    "friction_by_kind",
    "friction_by_run",
    "friction_events",
    "friction_totals",
    "friction_trend",
    "human_answers",
    "no_data_figure",
    "plot_escalation_waits",
    "plot_friction_by_kind",
    "plot_friction_trend",
    "plot_stalls",
    "plot_time_lost",
    "plot_top_prompts",
    "stalls",
    "time_lost",
    "top_prompts",
    "write_friction_report",
]
