"""Friction analysis over the warehouse: where supervised runs lose human or agent time.

Tidy polars DataFrames that always carry their id columns, and matplotlib figures made
from them. Notebooks and ``supervisor report friction`` call these; they hold no logic
of their own.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import polars as pl

from supervisor.warehouse import Warehouse


def friction_by_kind(wh: Warehouse) -> pl.DataFrame:
    """Friction events per kind: how many, in how many runs, and the seconds lost."""
    return wh.sql(
        "SELECT kind, count(*) AS events, count(DISTINCT run_id) AS runs, "
        "round(sum(coalesce(seconds_lost, 0)), 1) AS seconds_lost "
        "FROM friction GROUP BY kind ORDER BY events DESC, kind"
    )


def friction_by_run(wh: Warehouse) -> pl.DataFrame:
    """Per run: its agent, outcome, duration and friction counts by kind (one column per kind)."""
    df = wh.sql(
        "SELECT r.run_id, r.agent, r.outcome, r.duration_s, f.kind, count(f.friction_id) AS n "
        "FROM run_summary r LEFT JOIN friction f USING (run_id) GROUP BY ALL ORDER BY r.run_id"
    )
    if df.height == 0:
        return pl.DataFrame(schema={"run_id": pl.Utf8, "agent": pl.Utf8, "outcome": pl.Utf8,
                                    "duration_s": pl.Float64, "total": pl.Int64})
    wide = (
        df.with_columns(pl.col("kind").fill_null("none"))
        .pivot(on="kind", index=["run_id", "agent", "outcome", "duration_s"], values="n", aggregate_function="sum")
        .fill_null(0)
    )
    if "none" in wide.columns:
        wide = wide.drop("none")
    kinds = [c for c in wide.columns if c not in ("run_id", "agent", "outcome", "duration_s")]
    total = pl.sum_horizontal(*[pl.col(k) for k in kinds]) if kinds else pl.lit(0)
    return wide.with_columns(total.alias("total")).sort("total", descending=True)


def escalations(wh: Warehouse) -> pl.DataFrame:
    """Every escalation with what it was about (state, prompt kind, risk, blocker) and the advice given."""
    return wh.sql(
        "SELECT decision_id, run_id, occurred_at, state, agent, prompt_kind, risk_level, blocker_kind, "
        "rule, reason, next_action FROM escalations ORDER BY occurred_at"
    )


def answer_latency(wh: Warehouse) -> pl.DataFrame:
    """For each answered prompt: seconds from the observation to the delivered keys."""
    return wh.sql(
        "SELECT d.decision_id, d.run_id, o.observation_id, o.agent, o.prompt_kind, "
        "date_diff('millisecond', o.occurred_at, a.delivered_at) / 1000.0 AS seconds "
        "FROM decisions d JOIN observations o ON o.observation_id = d.trigger_id "
        "JOIN (SELECT decision_id, min(occurred_at) AS delivered_at FROM actions WHERE delivered "
        "      GROUP BY decision_id) a ON a.decision_id = d.decision_id "
        "WHERE d.kind = 'answer' ORDER BY d.run_id, d.decision_id"
    )


def daily_friction(wh: Warehouse) -> pl.DataFrame:
    """Friction events per day and kind (for trend plots)."""
    return wh.sql(
        "SELECT date_trunc('day', occurred_at) AS day, kind, count(*) AS events "
        "FROM friction GROUP BY ALL ORDER BY day, kind"
    )


def plot_friction_by_kind(df: pl.DataFrame, ax: Any = None) -> Any:
    """A horizontal bar chart of friction events per kind; returns the matplotlib Axes."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(7, 3.5))
    kinds = df["kind"].to_list() if df.height else []
    counts = df["events"].to_list() if df.height else []
    ax.barh(kinds[::-1], counts[::-1], color="#c0504d")
    ax.set_xlabel("friction events")
    ax.set_title("Where supervised runs lose time")
    ax.figure.tight_layout()
    return ax


def write_friction_report(wh: Warehouse, out_dir: Path, *, now: dt.datetime | None = None) -> Path:
    """Write a markdown friction report with a PNG plot into ``out_dir``; returns the markdown path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    by_kind = friction_by_kind(wh)
    by_run = friction_by_run(wh)
    esc = escalations(wh)
    png = out_dir / f"friction-{stamp}.png"
    ax = plot_friction_by_kind(by_kind)
    ax.figure.savefig(png, dpi=100)
    import matplotlib.pyplot as plt

    plt.close(ax.figure)
    md = out_dir / f"friction-{stamp}.md"
    lines = [
        f"# Friction report ({stamp})",
        "",
        f"Warehouse: `{wh.path}`. Runs: {by_run.height}. Friction events: {int(by_kind['events'].sum() or 0)}. "
        f"Escalations: {esc.height}.",
        "",
        f"![friction by kind]({png.name})",
        "",
        "## By kind",
        "",
        _markdown_table(by_kind),
        "",
        "## Runs with the most friction",
        "",
        _markdown_table(by_run.head(10)),
        "",
        "## Latest escalations",
        "",
        _markdown_table(esc.tail(10).select(["run_id", "state", "prompt_kind", "risk_level", "blocker_kind",
                                             "reason"]) if esc.height else esc),
        "",
    ]
    md.write_text("\n".join(lines), encoding="utf-8")
    return md


def _markdown_table(df: pl.DataFrame) -> str:
    if df.height == 0:
        return "_none_"
    cols = df.columns
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.iter_rows():
        out.append("| " + " | ".join("" if v is None else str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(out)
