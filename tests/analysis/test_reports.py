"""`supervisor report ...` on the warehouse of real supervised runs: markdown that links every
plot it wrote, plots whose pixels are not all one colour (as the notebooks' are checked), whose
axes say what they measure and in which unit, with integer ticks for counts, and an explicit
"no data" plot when there is nothing; a missing `analysis` extra is one line naming it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from supervisor.analysis import plots
from supervisor.cli import main
from tests.analysis.conftest import FilledHome
from tests.analysis.test_notebooks import varied

pytestmark = pytest.mark.slow
Figures = list[tuple[str, list[str], bool]]
"""Each figure a report saved: its file name, what is wrong with it, whether it says "no data"."""


@pytest.fixture(autouse=True)
def figures(monkeypatch: pytest.MonkeyPatch) -> Figures:
    """Each figure a report saves, with what is wrong with it (checked before it is written)."""
    seen: Figures = []
    save = plots.save_png

    def checked(fig: Any, path: Path, dpi: int = 100) -> Path:
        seen.append((path.name, figure_problems(fig), all(not ax.axison for ax in fig.axes)))
        return save(fig, path, dpi)

    monkeypatch.setattr(plots, "save_png", checked)
    return seen


def figure_problems(fig: Any) -> list[str]:
    """A plot names what each axis measures, with the unit of every quantity (``(seconds)``,
    ``(count)``, ``(%...)``, ``(UTC...)``); counts have integer ticks; an empty plot says "no data"."""
    from matplotlib.category import StrCategoryLocator
    from matplotlib.ticker import FixedLocator, MaxNLocator

    problems = []
    for ax in fig.axes:
        if not ax.axison:
            if not any(t.get_text().startswith("no data") for t in ax.texts):
                problems.append(f"an axes without axis lines and no 'no data' text: {ax.get_title()!r}")
            continue
        for name, axis, label in (("x", ax.xaxis, ax.get_xlabel()), ("y", ax.yaxis, ax.get_ylabel())):
            # not categories (labelled ticks, a bar per name) nor dates
            quantity = not isinstance(axis.get_major_locator(), FixedLocator | StrCategoryLocator)
            if not label:
                problems.append(f"{ax.get_title()!r}: no {name} label")
            elif quantity and not re.search(r"\((seconds|s|count|%[^)]*)\)", label):
                problems.append(f"{ax.get_title()!r}: {name} label {label!r} has no unit")
            locator = axis.get_major_locator()
            if "(count)" in label and not (isinstance(locator, MaxNLocator) and locator._integer):
                problems.append(f"{ax.get_title()!r}: counts on {name} without integer ticks")
    return problems


def invoke(home: FilledHome, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args), env=home.env())
    return res.exit_code, res.stdout, res.stderr


def check_report(out: Path, stdout: str, min_images: int, figures: Figures) -> str:
    md = Path(re.search(r"report: (\S+report\.md)", stdout).group(1))  # type: ignore[union-attr]
    assert md.is_relative_to(out)
    text = md.read_text()
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert len(linked) >= min_images
    assert sorted(linked) == sorted(f[0] for f in figures)  # every figure went through the check
    assert not [f for f in figures if f[1]], [f for f in figures if f[1]]
    for name in linked:
        png = (md.parent / name).read_bytes()
        assert png.startswith(b"\x89PNG") and varied(png), name
    return text


def test_report_friction(filled_home: FilledHome, tmp_path: Path, figures: Figures) -> None:
    code, out, err = invoke(filled_home, "report", "friction", "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 7, figures)
    assert "## Escalations" in text and "git-push-force" in text and "| human " in text
    assert re.search(r"\d+ runs, \d+ friction occurrences, [\d.]+ s lost", text)


def test_report_friction_json(filled_home: FilledHome) -> None:
    code, out, err = invoke(filled_home, "report", "friction", "--json")
    assert code == 0, err
    kinds = {r["kind"]: r for r in json.loads(out)}
    assert kinds["escalation"]["events"] >= 5 and kinds["escalation"]["seconds_lost"] > 5


def test_report_run(filled_home: FilledHome, tmp_path: Path, figures: Figures) -> None:
    rid = filled_home.run_ids["shop"]
    code, out, err = invoke(filled_home, "report", "run", rid[:14], "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 1, figures)
    assert f"# Run {rid}" in text and "git-push-force" in text and "| human " in text
    assert "approve-tools-and-edits" in text  # the decisions that acted


def test_report_candidate(filled_home: FilledHome, tmp_path: Path, figures: Figures) -> None:
    code, out, err = invoke(filled_home, "report", "candidate", filled_home.candidate.policy_id[:10],
                            "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 5, figures)
    assert "# Candidate cautious-candidate" in text
    assert "Latest verdict: **REJECT**" in text and "| pass_rate " in text  # the gate's reasons
    # per-suite pass rates: the baseline passes the whole claude suite; the candidate, which escalates
    # every tool and edit permission, only the cases that expect no approval
    rows = {m[0]: (int(m[1]), int(m[2])) for m in re.findall(r"\| (baseline|candidate)\s+\| claude\s+\| (\d+)\s+\| (\d+) ", text)}
    assert rows["baseline"][0] == rows["baseline"][1] == rows["candidate"][0] >= 40, rows
    assert 0 < rows["candidate"][1] < rows["candidate"][0], rows
    assert "Do you want to proceed?" in text  # a disagreement's screen
    assert "saved_escalations" in text  # the workbench's canary verdicts
    assert "Judged per metric" in text and "| completion " in text  # the limited rollout, per metric


def test_report_evals(filled_home: FilledHome, tmp_path: Path, figures: Figures) -> None:
    code, out, err = invoke(filled_home, "report", "evals", "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 2, figures)
    assert re.search(r"\d+ eval runs and \d+ compares", text) and "cautious-candidate" in text
    assert "## Gate verdicts" in text and "REJECT" in text
    assert "| promote " in text and "| limited " in text  # the registry's history


def test_reports_on_an_empty_warehouse_say_no_data(tmp_path: Path, figures: Figures) -> None:
    from supervisor.settings import Settings

    home = FilledHome(Settings(home=tmp_path / "empty").ensure(), None, tmp_path, {}, {})  # type: ignore[arg-type]
    for report, plots_written in (("evals", 2), ("friction", 7)):
        figures.clear()
        code, out, err = invoke(home, "report", report, "--out", str(tmp_path / report))
        assert code == 0, err
        check_report(tmp_path / report, out, plots_written, figures)  # explicit "no data" images: not blank
        assert all(no_data for _, _, no_data in figures), figures
    code, out, err = invoke(home, "report", "candidate", "nope", "--out", str(tmp_path / "out"))
    assert code == 2 and "no policy 'nope'" in err


def test_missing_analysis_extra_is_one_line(filled_home: FilledHome, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib is installed in the test environment; hiding it from the import system is the
    only way to see what a user without the extra gets."""
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = invoke(filled_home, "report", "friction", "--out", str(tmp_path))
    assert code == 3
    assert err.count("\n") == 1 and "paneward[analysis]" in err and "matplotlib is not installed" in err
    assert not list(tmp_path.iterdir())
