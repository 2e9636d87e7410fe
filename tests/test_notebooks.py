"""Notebooks run top to bottom against a real warehouse (executed with nbclient, a real kernel)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from supervisor.analysis import answer_latency, friction_by_kind, friction_by_run, write_friction_report
from supervisor.journal import Journal
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse, sync
from tests.conftest import REPO, run_cli

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _sample_runs(home: Path) -> Settings:
    s = Settings(home=home).ensure()
    t0 = 1_790_000_000.0
    for r, kinds in (("run_N1", ["stall", "repeated_prompt", "repeated_prompt"]), ("run_N2", ["escalation"])):
        j = Journal(s.journal_path(r), r)
        j.append("run_started", {"command": ["claude"], "agent": "claude"}, at=t0)
        observation = {"screen_hash": "s1", "state": "asking", "agent": "claude",
                       "prompt": {"kind": "tool_permission", "question": "Proceed?"}}
        o = j.append("observation", {"observation": observation, "screen": {"text": "Do you want to proceed?"}},
                     at=t0 + 1)
        decision = {"kind": "answer", "keys": ["1"], "approves": True, "reason": "ok", "trigger_id": o.event_id,
                    "decision_id": "dec_" + r}
        j.append("decision", {"decision": decision}, at=t0 + 1.01)
        j.append("action", {"action": {"decision_id": "dec_" + r, "keys": ["1"], "delivered": True}}, at=t0 + 1.05)
        for k in kinds:
            j.append("friction", {"kind": k, "detail": "sample", "seconds_lost": 3.0}, at=t0 + 2)
        j.append("run_ended", {"outcome": "finished", "exit_code": 0}, at=t0 + 3)
        j.close()
    sync(s)
    return s


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ has no .ipynb files"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path: Path, sv_home: Path) -> None:
    _sample_runs(sv_home)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                      for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "2 runs, 4 friction events" in outputs
    assert not any(o.get("output_type") == "error" for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))


def test_friction_frames_and_report(tmp_path: Path) -> None:
    s = _sample_runs(tmp_path / "home")
    with open_warehouse(s.warehouse, read_only=True) as wh:
        by_kind = friction_by_kind(wh)
        by_run = friction_by_run(wh)
        md = write_friction_report(wh, tmp_path / "reports")
        latency = answer_latency(wh)
    assert latency["seconds"].to_list() == pytest.approx([0.05, 0.05], abs=0.001)
    assert dict(zip(by_kind["kind"], by_kind["events"], strict=True)) == {"repeated_prompt": 2, "stall": 1,
                                                                          "escalation": 1}
    assert by_run.filter(by_run["run_id"] == "run_N1")["total"].to_list() == [3]
    text = md.read_text()
    assert "| repeated_prompt | 2 | 1 | 6.0 |" in text
    assert (md.parent / text.split("](")[1].split(")")[0]).stat().st_size > 1000  # the PNG exists


def test_report_friction_cli(cli_env: dict[str, str], sv_home: Path, tmp_path: Path) -> None:
    _sample_runs(sv_home)
    proc = run_cli("report", "friction", "--out", str(tmp_path / "out"), env=cli_env)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "out").glob("friction-*.md")) and list((tmp_path / "out").glob("friction-*.png"))
