"""matplotlib figures from the analysis frames: the same figures in notebooks and in
``supervisor report``.

Figures are made with ``pyplot.subplots`` and the backend is never chosen here: a notebook
kernel keeps its inline backend (so the figure shows under the cell), a headless CLI gets
matplotlib's own non-interactive default. Every axis says what it measures and in which unit;
axes that count things have integer ticks; an empty frame gives an explicit "no data" figure
rather than blank axes. Callers that save a figure close it (:func:`save_png`).

matplotlib is the optional ``analysis`` extra: :func:`require_matplotlib` turns its absence
into one line naming the extra.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import polars as pl

from supervisor.errors import EnvironmentProblem

Figure = Any  # matplotlib.figure.Figure; matplotlib is imported lazily (an optional extra)

KIND_COLORS = {
    "escalation": "#c0504d", "stall": "#9bbb59", "answer_not_taken": "#f79646", "repeated_prompt": "#8064a2",
    "human_keystrokes": "#4bacc6", "retry": "#4f81bd", "manual": "#7f7f7f",
}
ENDED_BY_COLORS = {
    "human": "#4f81bd", "blocker_cleared": "#9bbb59", "agent_exit": "#7f7f7f", "timeout": "#f79646",
    "supervisor": "#8064a2", "review": "#4bacc6", "superseded": "#bfbfbf", "run_ended": "#c0504d",
    "open": "#000000",
}
STATE_COLORS = {"busy": "#9bbb59", "asking": "#f79646", "blocked": "#c0504d", "idle": "#bfbfbf",
                "exited": "#595959"}
ARM_COLORS = ("#4f81bd", "#c0504d", "#9bbb59", "#8064a2")
MAX_BARS = 15


def require_matplotlib() -> Any:
    """``matplotlib.pyplot``, or a one-line error naming the extra that provides it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise EnvironmentProblem(
            "matplotlib is not installed: plots, reports and notebooks need the `analysis` extra",
            "pip install 'paneward[analysis]' into the supervisor's environment, or run `make notebooks`",
        ) from exc
    return plt


def _color(table: dict[str, str], key: Any, i: int = 0) -> str:
    return table.get(str(key), ARM_COLORS[i % len(ARM_COLORS)])


def _integer_ticks(axis: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _short(text: Any, n: int = 48) -> str:
    s = " ".join(str(text if text is not None else "-").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def no_data_figure(title: str, why: str = "nothing recorded yet") -> Figure:
    """An explicit "no data" figure (never a blank one): the title and why there is nothing."""
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(7, 2.4))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.45, f"no data: {why}", ha="center", va="center", fontsize=12, color="#595959",
            transform=ax.transAxes, bbox={"boxstyle": "round", "facecolor": "#f2f2f2", "edgecolor": "#bfbfbf"})
    return fig


def save_png(fig: Figure, path: Path, dpi: int = 100) -> Path:
    """Write the figure as PNG and close it (reports make many)."""
    plt = require_matplotlib()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- friction


def plot_time_lost(df: pl.DataFrame, by: str = "kind", *, title: str | None = None) -> Figure:
    """Seconds lost per ``by`` value, each bar split by friction kind (a frame from
    :func:`supervisor.analysis.time_lost`); the occurrences are written at the bar's end."""
    title = title or f"Time lost by {by}"
    if df.height == 0:
        return no_data_figure(title, "no friction recorded")
    plt = require_matplotlib()
    label_cols = {"pattern": ["rule", "pattern"], "policy": ["policy_name", "policy_id"], "run": ["run_id"]}.get(
        by, [by])
    frame = df.with_columns(pl.concat_str([pl.col(c).cast(pl.Utf8).fill_null("-") for c in label_cols],
                                          separator=" / ").alias("_label"))
    totals = (frame.group_by("_label").agg(pl.col("seconds_lost").sum().alias("s"), pl.col("events").sum().alias("n"))
              .sort(["s", "n", "_label"], descending=[True, True, False]).head(MAX_BARS))
    labels = totals["_label"].to_list()[::-1]
    kinds = sorted(frame["kind"].unique().to_list())
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.42 * len(labels)))
    left = [0.0] * len(labels)
    for k in kinds:
        part = frame.filter(pl.col("kind") == k).group_by("_label").agg(pl.col("seconds_lost").sum())
        got = dict(zip(part["_label"].to_list(), part["seconds_lost"].to_list(), strict=True))
        widths = [float(got.get(lbl) or 0.0) for lbl in labels]
        ax.barh([_short(lbl, 40) for lbl in labels], widths, left=left, color=_color(KIND_COLORS, k), label=k)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    counts = dict(zip(totals["_label"].to_list(), totals["n"].to_list(), strict=True))
    for i, lbl in enumerate(labels):
        n = int(counts[lbl])
        ax.annotate(f" {n} ×", (left[i], i), va="center", fontsize=8, color="#404040")
    ax.set_xlabel("time lost (seconds)")
    ax.set_ylabel(by)
    ax.set_title(title)
    ax.set_xlim(0, max(left) * 1.15 if max(left) > 0 else 1.0)
    if by != "kind":
        ax.legend(title="friction kind", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_friction_by_kind(df: pl.DataFrame, ax: Any = None) -> Figure:
    """Occurrences per friction kind (a frame from :func:`supervisor.analysis.friction_by_kind`)."""
    if df.height == 0 and ax is None:
        return no_data_figure("Friction by kind", "no friction recorded")
    plt = require_matplotlib()
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 1.2 + 0.42 * max(df.height, 1)))
    frame = df.sort("events")
    kinds = frame["kind"].to_list()
    ax.barh(kinds, frame["events"].to_list(), color=[_color(KIND_COLORS, k) for k in kinds])
    _integer_ticks(ax.xaxis)
    ax.set_xlabel("occurrences (count)")
    ax.set_ylabel("friction kind")
    ax.set_title("Friction by kind")
    ax.figure.tight_layout()
    return ax.figure


def plot_escalation_waits(df: pl.DataFrame) -> Figure:
    """How long each escalation waited, coloured by what ended it (a frame from
    :func:`supervisor.analysis.escalations`); the most recent :data:`MAX_BARS`."""
    title = "Escalations: how long each waited, and what ended it"
    if df.height == 0:
        return no_data_figure(title, "no escalations recorded")
    plt = require_matplotlib()
    frame = df.tail(MAX_BARS)
    labels = [f"{_short(p, 28)} · {str(r)[-6:]}#{s}" for p, r, s in
              zip(frame["pattern"].to_list(), frame["run_id"].to_list(), frame["seq"].to_list(), strict=True)]
    ended = [str(e) for e in frame["ended_by"].to_list()]
    waits = [float(w or 0.0) for w in frame["seconds_lost"].to_list()]
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.42 * len(labels)))
    ax.barh(range(len(labels)), waits, color=[_color(ENDED_BY_COLORS, e) for e in ended])
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    for i, (w, sel) in enumerate(zip(waits, frame["selected"].to_list(), strict=True)):
        if sel:
            ax.annotate(f" chose: {_short(sel, 30)}", (w, i), va="center", fontsize=7, color="#404040")
    from matplotlib.patches import Patch

    seen = list(dict.fromkeys(ended))
    ax.legend(handles=[Patch(color=_color(ENDED_BY_COLORS, e), label=e) for e in seen], title="ended by",
              fontsize=8, loc="lower right")
    ax.set_xlabel("waited (seconds)")
    ax.set_ylabel("cause · run#seq")
    ax.set_xlim(0, max(waits) * 1.35 if max(waits) > 0 else 1.0)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_friction_trend(df: pl.DataFrame) -> Figure:
    """Seconds lost per day, stacked by kind (a frame from :func:`supervisor.analysis.friction_trend`)."""
    title = "Time lost per day"
    if df.height == 0:
        return no_data_figure(title, "no friction recorded")
    plt = require_matplotlib()
    days = sorted(df["day"].unique().to_list())
    kinds = sorted(df["kind"].unique().to_list())
    fig, ax = plt.subplots(figsize=(8, 3.6))
    bottom = [0.0] * len(days)
    x = list(range(len(days)))
    for k in kinds:
        part = df.filter(pl.col("kind") == k)
        got = dict(zip(part["day"].to_list(), part["seconds_lost"].to_list(), strict=True))
        h = [float(got.get(d) or 0.0) for d in days]
        ax.bar(x, h, bottom=bottom, color=_color(KIND_COLORS, k), label=k, width=0.6)
        bottom = [a + b for a, b in zip(bottom, h, strict=True)]
    runs = df.group_by("day").agg(pl.col("day_runs").max())
    per_day_runs = dict(zip(runs["day"].to_list(), runs["day_runs"].to_list(), strict=True))
    for i, d in enumerate(days):
        ax.annotate(f"{int(per_day_runs.get(d) or 0)} runs", (i, bottom[i]), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [d.isoformat() if isinstance(d, dt.date) else str(d) for d in days], rotation=30, ha="right")
    ax.set_xlabel("day (UTC)")
    ax.set_ylabel("time lost (seconds)")
    ax.set_ylim(0, max(bottom) * 1.2 if max(bottom) > 0 else 1.0)
    ax.set_xlim(-0.75, len(days) - 0.25)
    ax.set_title(title)
    ax.legend(title="friction kind", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_top_prompts(df: pl.DataFrame) -> Figure:
    """The prompts seen most often and how they were handled (a frame from
    :func:`supervisor.analysis.top_prompts`)."""
    title = "Prompts seen most often"
    if df.height == 0:
        return no_data_figure(title, "no prompts recorded")
    plt = require_matplotlib()
    frame = df.head(MAX_BARS)
    labels = [f"{a}: {_short(q, 44)}" for a, q in zip(frame["agent"].to_list(), frame["question"].to_list(),
                                                       strict=True)]
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.42 * len(labels)))
    left = [0] * len(labels)
    for col, color in (("answered", "#9bbb59"), ("escalated", "#c0504d"), ("waited", "#bfbfbf")):
        vals = [int(v or 0) for v in frame[col].to_list()]
        ax.barh(range(len(labels)), vals, left=left, color=color, label=col)
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    _integer_ticks(ax.xaxis)
    ax.set_xlabel("decisions on the prompt (count)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_stalls(df: pl.DataFrame) -> Figure:
    """Each stall: the quiet time before it was noticed and the escalation's wait after (a frame
    from :func:`supervisor.analysis.stalls`)."""
    title = "Stalls: quiet time, then the wait for a human"
    if df.height == 0:
        return no_data_figure(title, "no stalls recorded")
    plt = require_matplotlib()
    frame = df.tail(MAX_BARS)
    labels = [f"{str(r)[-6:]}#{s} ({a})" for r, s, a in zip(frame["run_id"].to_list(), frame["seq"].to_list(),
                                                             frame["agent"].to_list(), strict=True)]
    quiet = [float(v or 0.0) for v in frame["quiet_s"].to_list()]
    wait = [float(v or 0.0) for v in frame["escalation_wait_s"].to_list()]
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.42 * len(labels)))
    ax.barh(range(len(labels)), quiet, color=KIND_COLORS["stall"], label="quiet before noticed")
    ax.barh(range(len(labels)), wait, left=quiet, color=KIND_COLORS["escalation"], label="escalated, waiting")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time lost (seconds)")
    ax.set_ylabel("run#seq (agent)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
