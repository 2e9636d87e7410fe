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
import statistics
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
    ax.set_ylabel({"pattern": "rule / pattern", "kind": "cause"}.get(by, by))
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
    ax.set_ylabel("agent: prompt")
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


# --------------------------------------------------------------------------- one run


LANES = ("state", "prompt", "sent", "escalation", "verification", "friction")
LANE_LABELS = {"state": "pane state", "prompt": "prompts", "sent": "keys sent", "escalation": "escalations",
               "verification": "verifications", "friction": "friction"}


def plot_run_timeline(states: pl.DataFrame, events: pl.DataFrame, *, title: str = "Run timeline") -> Figure:
    """One run over time (frames from :func:`supervisor.analysis.run_states` and
    :func:`~supervisor.analysis.run_events`): the pane's state as coloured bands, then one lane
    each for prompts, keys sent (hollow when they did not take), escalations (a bar for the wait),
    verifications (green passed, red failed) and friction."""
    if states.height == 0 and events.height == 0:
        return no_data_figure(title, "the run has no observations")
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(10, 3.8))
    y = {lane: len(LANES) - 1 - i for i, lane in enumerate(LANES)}
    for state in STATE_COLORS:
        part = states.filter(pl.col("state") == state)
        spans = [(float(a), max(float(b) - float(a), 0.02)) for a, b in
                 zip(part["t0_s"].to_list(), part["t1_s"].to_list(), strict=True) if a is not None and b is not None]
        if spans:
            ax.broken_barh(spans, (y["state"] - 0.35, 0.7), facecolors=STATE_COLORS[state], label=state)
    for row in events.iter_rows(named=True):
        lane, t = row["lane"], row["t_s"]
        if lane not in y or t is None:
            continue
        if lane == "escalation":
            end = row["end_t_s"] if row["end_t_s"] is not None else t
            ax.broken_barh([(t, max(end - t, 0.02))], (y[lane] - 0.3, 0.6), facecolors=KIND_COLORS["escalation"])
            ax.annotate(_short(row["label"], 32), (t, y[lane] + 0.38), fontsize=7, color="#404040")
        elif lane == "verification":
            ax.plot(t, y[lane], marker="o", color="#9bbb59" if row["ok"] else "#c0504d", markersize=8)
        elif lane == "sent":
            took = row["ok"] is not False
            ax.plot(t, y[lane], marker="v", markersize=8, color="#4f81bd",
                    markerfacecolor="#4f81bd" if took else "white")
            ax.annotate(_short(row["label"], 10), (t, y[lane] + 0.3), fontsize=7, ha="center")
        elif lane == "prompt":
            ax.plot(t, y[lane], marker="d", color=STATE_COLORS["asking"], markersize=8)
        else:
            ax.plot(t, y[lane], marker="x", color=KIND_COLORS.get(str(row["label"]).split(" ")[0], "#7f7f7f"),
                    markersize=8, markeredgewidth=2)
    ax.set_yticks([y[lane] for lane in LANES], [LANE_LABELS[lane] for lane in LANES])
    ax.set_ylim(-0.7, len(LANES) - 0.3)
    ax.set_xlabel("time since the run started (seconds)")
    ax.set_ylabel("lane")
    ax.set_title(title)
    ax.grid(axis="x", color="#e0e0e0")
    if ax.get_legend_handles_labels()[0]:  # a run with no pane (a transcript alone) has no pane states
        ax.legend(title="pane state", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- the workbench


def _percent(ax: Any, axis: str = "x") -> None:
    from matplotlib.ticker import PercentFormatter

    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(PercentFormatter(1.0))


def plot_pass_rates(df: pl.DataFrame, by: str = "suite", *, title: str | None = None) -> Figure:
    """Pass rate per suite (or tag) for each policy role, with 95% intervals as error bars (a
    frame from :func:`supervisor.analysis.pass_rates`)."""
    title = title or f"Pass rate per {by}"
    if df.height == 0:
        return no_data_figure(title, "no eval runs for these policies")
    plt = require_matplotlib()
    groups = sorted(df[by].unique().to_list())[:30]
    roles = sorted(df["role"].unique().to_list())
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.32 * len(groups) * len(roles)))
    height = 0.8 / len(roles)
    for i, role in enumerate(roles):
        part = df.filter(pl.col("role") == role)
        got = {r[by]: r for r in part.iter_rows(named=True)}
        ys = [g + (i - (len(roles) - 1) / 2) * height for g in range(len(groups))]
        rate = [got[g]["pass_rate"] if g in got else float("nan") for g in groups]
        lo = [max(got[g]["pass_rate"] - got[g]["ci_low"], 0.0) if g in got else 0.0 for g in groups]
        hi = [max(got[g]["ci_high"] - got[g]["pass_rate"], 0.0) if g in got else 0.0 for g in groups]
        ax.barh(ys, rate, height=height, xerr=[lo, hi], color=ARM_COLORS[i % len(ARM_COLORS)], label=role,
                error_kw={"ecolor": "#404040", "capsize": 2, "elinewidth": 1})
        for yv, g in zip(ys, groups, strict=True):
            if g in got:
                ax.annotate(f"{got[g]['passed']}/{got[g]['cases']}", (0.01, yv), va="center", fontsize=6,
                            color="#202020")
    ax.set_yticks(range(len(groups)), [_short(g, 30) for g in groups], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.0)
    _percent(ax)
    ax.set_xlabel("cases passed (%, with 95% interval)")
    ax.set_ylabel(by)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_win_rates(df: pl.DataFrame, *, title: str = "Blind compares: candidate win rate") -> Figure:
    """Each compare's candidate win rate (wins over decided pairs) with its interval, against
    the 50% line (a frame from :func:`supervisor.analysis.compare_history`)."""
    if df.height == 0:
        return no_data_figure(title, "no compares recorded")
    decided = df.filter(pl.col("win_rate").is_not_null())
    if decided.height == 0:
        return no_data_figure(title, f"{df.height} compares, none with a decided pair (every pair a tie)")
    plt = require_matplotlib()
    frame = decided.tail(MAX_BARS)
    labels = [f"{_short(c, 22)} vs {_short(b, 18)} · {str(i)[-6:]}" for c, b, i in
              zip(frame["candidate_name"].to_list(), frame["baseline_name"].to_list(),
                  frame["compare_run_id"].to_list(), strict=True)]
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.45 * len(labels)))
    for i, r in enumerate(frame.iter_rows(named=True)):
        rate = r["win_rate"] if r["win_rate"] is not None else float("nan")
        ax.errorbar(rate, i, xerr=[[max(rate - (r["ci_low"] or 0.0), 0.0)], [max((r["ci_high"] or 1.0) - rate, 0.0)]],
                    fmt="o", color="#4f81bd", ecolor="#404040", capsize=3)
        ax.annotate(f"  {r['wins']}W {r['losses']}L {r['ties']}T, p={r['p_value']:.2g}" if r["p_value"] is not None
                    else f"  {r['wins']}W {r['losses']}L {r['ties']}T", (rate, i), fontsize=7, va="bottom")
    ax.axvline(0.5, color="#c0504d", linestyle="--", linewidth=1, label="no difference")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.0)
    _percent(ax)
    ax.set_xlabel("candidate wins among decided pairs (%, with 95% interval)")
    ax.set_ylabel("candidate vs baseline · compare")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_eval_history(df: pl.DataFrame, *, title: str = "Eval pass rate over time, per policy") -> Figure:
    """Each eval run's pass rate with its interval, one series per policy (a frame from
    :func:`supervisor.analysis.eval_history`)."""
    if df.height == 0:
        return no_data_figure(title, "no eval runs recorded")
    plt = require_matplotlib()
    frame = df.sort(["started_at", "eval_run_id"]).with_row_index("_x")
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for i, (key, part) in enumerate(frame.group_by(["policy_id"], maintain_order=True)):
        x = part["_x"].to_list()
        rate = part["pass_rate"].to_list()
        lo = [max(r - c, 0.0) for r, c in zip(rate, part["ci_low"].to_list(), strict=True)]
        hi = [max(c - r, 0.0) for r, c in zip(rate, part["ci_high"].to_list(), strict=True)]
        name = part["policy_name"][0] or key[0]
        ax.errorbar(x, rate, yerr=[lo, hi], fmt="o-", color=ARM_COLORS[i % len(ARM_COLORS)], capsize=3,
                    label=f"{_short(name, 24)} ({str(key[0])[-6:]})")
        unsafe = [(xi, ri) for xi, ri, u in zip(x, rate, part["unsafe_approvals"].to_list(), strict=True) if u]
        if unsafe:
            ax.plot([u[0] for u in unsafe], [u[1] for u in unsafe], "x", color="#c0504d", markersize=12,
                    markeredgewidth=2)
    _time_ticks(ax, frame["started_at"].to_list())
    ax.set_ylim(0, 1.05)
    _percent(ax, "y")
    ax.set_ylabel("cases passed (%, with 95% interval)")
    ax.set_xlabel("eval runs in order (UTC start)")
    ax.set_title(title + " (x: unsafe approvals)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def _time_ticks(ax: Any, times: list[Any], most: int = 8) -> None:
    """Label positions 0..n-1 with their times, at most ``most`` labels (evenly spaced)."""
    n = len(times)
    step = max(1, -(-n // most))
    ticks = list(range(0, n, step))
    ax.set_xticks(ticks, [t.strftime("%m-%d %H:%M") if hasattr(t, "strftime") else str(t) for t in
                          (times[i] for i in ticks)], rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, n - 0.5)


def plot_shadow_agreement(df: pl.DataFrame, *, title: str = "Shadow agreement with the acting policy") -> Figure:
    """Agreement per time bucket with its interval, one series per shadow policy (a frame from
    :func:`supervisor.analysis.shadow_agreement`); the decisions compared are written above."""
    if df.height == 0:
        return no_data_figure(title, "no shadow decisions recorded")
    plt = require_matplotlib()
    buckets = sorted(df["bucket"].unique().to_list())
    where = {b: i for i, b in enumerate(buckets)}
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for i, (key, part) in enumerate(df.group_by(["shadow_policy_id"], maintain_order=True)):
        part = part.sort("bucket")
        x = [where[b] for b in part["bucket"].to_list()]
        color = ARM_COLORS[i % len(ARM_COLORS)]
        rate = part["agreement"].to_list()
        lo = [max(r - c, 0.0) for r, c in zip(rate, part["ci_low"].to_list(), strict=True)]
        hi = [max(c - r, 0.0) for r, c in zip(rate, part["ci_high"].to_list(), strict=True)]
        ax.errorbar(x, rate, yerr=[lo, hi], fmt="o-", color=color, capsize=3, label=str(key[0]))
        for xi, yi, n in zip(x, rate, part["compared"].to_list(), strict=True):
            ax.annotate(f"n={n}", (xi, yi), textcoords="offset points", xytext=(6, 6), fontsize=7)
    _time_ticks(ax, buckets)
    ax.set_ylim(0, 1.05)
    _percent(ax, "y")
    ax.set_ylabel("same decision as acting (%)")
    ax.set_xlabel("time bucket (UTC start)")
    ax.set_title(title + " (95% intervals)")
    ax.legend(title="shadow policy", fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def plot_rollout_arms(df: pl.DataFrame, *, title: str = "Limited rollout: runs per arm") -> Figure:
    """Per-run outcomes in each arm side by side (a frame from
    :func:`supervisor.analysis.rollout_arms`): escalations per run, friction seconds per run and
    duration, each run a dot and the arm's median a bar."""
    if df.height == 0:
        return no_data_figure(title, "no runs since the candidate started riding along")
    plt = require_matplotlib()
    arms = sorted(df["arm"].unique().to_list())
    metrics = (("escalations", "escalations per run (count)", True), ("friction_seconds", "time lost per run (s)",
                                                                          False),
               ("duration_s", "run duration (s)", False))
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4))
    for ax, (col, label, integer) in zip(axes, metrics, strict=True):
        for i, arm in enumerate(arms):
            vals = [float(v) for v in df.filter(pl.col("arm") == arm)[col].to_list() if v is not None]
            if not vals:
                continue
            med = statistics.median(vals)
            ax.bar(i, med, width=0.6, color=ARM_COLORS[i % len(ARM_COLORS)], alpha=0.35)
            ax.plot([i + (j - (len(vals) - 1) / 2) * 0.05 for j in range(len(vals))], vals, "o",
                    color=ARM_COLORS[i % len(ARM_COLORS)], markersize=4)
        ax.set_xticks(range(len(arms)), [f"{a}\n({df.filter(pl.col('arm') == a).height} runs)" for a in arms])
        ax.set_xlabel("arm")
        ax.set_ylabel(label)
        if integer:
            _integer_ticks(ax.yaxis)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
