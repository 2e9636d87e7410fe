"""`supervisor report ...` on the warehouse of real supervised runs: markdown that links every
plot it wrote, and plots whose pixels are not all one colour; a missing `analysis` extra is one
line naming it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from supervisor.cli import main
from tests.analysis.conftest import FilledHome
from tests.analysis.test_notebooks import varied

pytestmark = pytest.mark.slow


def invoke(home: FilledHome, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args), env=home.env())
    return res.exit_code, res.stdout, res.stderr


def check_report(out: Path, stdout: str, min_images: int) -> str:
    md = Path(re.search(r"report: (\S+report\.md)", stdout).group(1))  # type: ignore[union-attr]
    assert md.is_relative_to(out)
    text = md.read_text()
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert len(linked) >= min_images
    for name in linked:
        png = (md.parent / name).read_bytes()
        assert png.startswith(b"\x89PNG") and varied(png), name
    return text


def test_report_friction(filled_home: FilledHome, tmp_path: Path) -> None:
    code, out, err = invoke(filled_home, "report", "friction", "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 7)
    assert "## Escalations" in text and "git-push-force" in text and "| human " in text
    assert re.search(r"\d+ runs, \d+ friction occurrences, [\d.]+ s lost", text)


def test_report_friction_json(filled_home: FilledHome) -> None:
    code, out, err = invoke(filled_home, "report", "friction", "--json")
    assert code == 0, err
    kinds = {r["kind"]: r for r in json.loads(out)}
    assert kinds["escalation"]["events"] >= 5 and kinds["escalation"]["seconds_lost"] > 5


def test_report_run(filled_home: FilledHome, tmp_path: Path) -> None:
    rid = filled_home.run_ids["shop"]
    code, out, err = invoke(filled_home, "report", "run", rid[:14], "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 1)
    assert f"# Run {rid}" in text and "git-push-force" in text and "| human " in text
    assert "approve-tools-and-edits" in text  # the decisions that acted


def test_report_candidate(filled_home: FilledHome, tmp_path: Path) -> None:
    code, out, err = invoke(filled_home, "report", "candidate", filled_home.candidate.policy_id[:10],
                            "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 5)
    assert "# Candidate cautious-candidate" in text
    assert "Latest verdict: **REJECT**" in text and "| pass_rate " in text  # the gate's reasons
    assert re.search(r"\| candidate \| claude\s+\| 45\s+\| 19 ", text)  # per-suite pass rates
    assert "Do you want to proceed?" in text  # a disagreement's screen
    assert "saved_escalations" in text  # the workbench's canary verdicts
    assert "Judged per metric" in text and "| completion " in text  # the limited rollout, per metric


def test_report_evals(filled_home: FilledHome, tmp_path: Path) -> None:
    code, out, err = invoke(filled_home, "report", "evals", "--out", str(tmp_path))
    assert code == 0, err
    text = check_report(tmp_path, out, 2)
    assert re.search(r"\d+ eval runs and \d+ compares", text) and "cautious-candidate" in text
    assert "## Gate verdicts" in text and "REJECT" in text
    assert "| promote " in text and "| limited " in text  # the registry's history


def test_reports_on_an_empty_warehouse_say_no_data(tmp_path: Path) -> None:
    from supervisor.settings import Settings

    home = FilledHome(Settings(home=tmp_path / "empty").ensure(), None, tmp_path, {}, {})  # type: ignore[arg-type]
    code, out, err = invoke(home, "report", "evals", "--out", str(tmp_path / "out"))
    assert code == 0, err
    check_report(tmp_path / "out", out, 2)  # explicit "no data" images: still not blank
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
