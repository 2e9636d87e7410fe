"""Reports: markdown plus PNG plots in a folder of their own under ``reports/``, made from the
same frames and figures the notebooks show (``supervisor report friction|run|candidate|evals``).

Each report is one folder (``reports/friction-20250101-120000/report.md`` and its PNGs), so it
can be attached or published as a whole; ``reports/`` stays out of git.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from supervisor.analysis import friction as fr
from supervisor.analysis import plots
from supervisor.warehouse import Warehouse

TABLE_ROWS = 15
CELL_CHARS = 70


@dataclass
class Report:
    """What a report writer produced."""

    markdown: Path
    """The report's markdown file."""
    images: list[Path] = field(default_factory=list)
    """The PNG plots it links, in order."""


def markdown_table(df: pl.DataFrame, *, rows: int = TABLE_ROWS) -> str:
    """A markdown table of the first ``rows`` rows (cells shortened, pipes and newlines escaped)."""
    if df.height == 0:
        return "_none_"
    text_cols = [c for c, t in df.schema.items() if t == pl.Utf8]
    frame = df.head(rows).with_columns(
        [pl.col(c).str.replace_all(r"\s+", " ").str.replace_all(r"\|", r"\|") for c in text_cols])
    with pl.Config(tbl_formatting="MARKDOWN", tbl_hide_column_data_types=True, tbl_hide_dataframe_shape=True,
                   tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=CELL_CHARS, tbl_width_chars=60_000):
        out = str(frame)
    if df.height > rows:
        out += f"\n\n_{df.height - rows} more rows not shown_"
    return out


class _Writer:
    """Collects sections and images for one report folder."""

    def __init__(self, out_dir: Path, name: str) -> None:
        self.folder = out_dir / name
        self.folder.mkdir(parents=True, exist_ok=True)
        self.lines: list[str] = []
        self.images: list[Path] = []

    def text(self, *lines: str) -> None:
        self.lines.extend([*lines, ""])

    def figure(self, fig: plots.Figure, name: str, alt: str) -> None:
        path = plots.save_png(fig, self.folder / f"{name}.png")
        self.images.append(path)
        self.text(f"![{alt}]({path.name})")

    def table(self, df: pl.DataFrame, *, rows: int = TABLE_ROWS) -> None:
        self.text(markdown_table(df, rows=rows))

    def finish(self) -> Report:
        md = self.folder / "report.md"
        md.write_text("\n".join(self.lines), encoding="utf-8")
        return Report(md, self.images)


def _stamp(now: dt.datetime | None) -> str:
    return (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")


def write_friction_report(wh: Warehouse, out_dir: Path, *, now: dt.datetime | None = None) -> Report:
    """Where runs lose time: seconds lost by cause, agent, rule and policy; escalations and how
    humans answered them; the prompts seen most often; stalls; the trend per day."""
    plots.require_matplotlib()
    stamp = _stamp(now)
    w = _Writer(out_dir, f"friction-{stamp}")
    t = fr.friction_totals(wh).row(0, named=True)
    esc = fr.escalations(wh)
    w.text(f"# Friction report ({stamp})", "",
           f"Warehouse `{wh.path}`: {t['runs']} runs, {t['friction']} friction occurrences, "
           f"{t['seconds_lost']:.1f} s lost in all, {t['escalations']} escalations "
           f"({t['ended_by_human']} ended by a human).",
           "Seconds lost are measured from the journal's event times (see `friction_events` in the "
           "warehouse): an escalation costs its wait, a stall its quiet time, a retry the time until "
           "the step was verified again.")
    sections: list[tuple[str, str, Callable[[], pl.DataFrame], Callable[[pl.DataFrame], plots.Figure] | None]] = [
        ("Time lost by cause", "by-kind", lambda: fr.time_lost(wh, "kind"),
         lambda df: plots.plot_time_lost(df, "kind", title="Time lost by cause")),
        ("Time lost by agent", "by-agent", lambda: fr.time_lost(wh, "agent"),
         lambda df: plots.plot_time_lost(df, "agent", title="Time lost by agent")),
        ("Time lost by rule and pattern", "by-rule", lambda: fr.time_lost(wh, "pattern"),
         lambda df: plots.plot_time_lost(df, "pattern", title="Time lost by rule / pattern")),
        ("Time lost by policy", "by-policy", lambda: fr.time_lost(wh, "policy"), None),
    ]
    for heading, name, frame, figure in sections:
        df = frame()
        w.text(f"## {heading}")
        if figure is not None:
            w.figure(figure(df), name, heading.lower())
        w.table(df)
    w.text("## Escalations: how long they waited and what ended them")
    w.figure(plots.plot_escalation_waits(esc), "escalations", "escalation waits")
    w.text("How humans answered, per cause:")
    w.table(fr.human_answers(wh))
    w.table(esc.select(["run_id", "seq", "agent", "pattern", "question", "seconds_lost", "ended_by", "human_keys",
                        "selected"]).reverse())
    prompts = fr.top_prompts(wh)
    w.text("## Prompts seen most often")
    w.figure(plots.plot_top_prompts(prompts), "top-prompts", "prompts seen most often")
    w.table(prompts.drop(["first_seen", "last_seen"]))
    st = fr.stalls(wh)
    w.text("## Stalls")
    w.figure(plots.plot_stalls(st), "stalls", "stalls")
    w.table(st.drop(["friction_id", "pause_id"]))
    trend = fr.friction_trend(wh)
    w.text("## Trend per day")
    w.figure(plots.plot_friction_trend(trend), "trend", "time lost per day")
    w.table(trend)
    w.text("## Runs with the most time lost")
    w.table(fr.friction_by_run(wh), rows=10)
    return w.finish()
