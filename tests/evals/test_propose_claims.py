"""`supervisor eval propose` writes proposals a reviewer would accept: one distinct candidate per
change, named after what it changes (never a temporary path), with a manifest whose claims were
checked (the golden cases it changes, listed and counted); a proposal that changes no case is not
written; an objective that finds nothing says what it looked at and what would produce a proposal.
Real suite files in a temporary folder, real candidate folders, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evals import styles
from evals.candidates import load_candidate
from evals.propose import propose
from evals.workbench import PolicyRef
from supervisor.policy import baseline_policy
from supervisor.settings import Settings
from tests.conftest import run_cli

DB = ("Which database should the service use?", ["PostgreSQL", "SQLite", "Type something."])
FORMAT = ("Which format for /tmp/paneward-capture-3f9a2c1d/notes?", ["Markdown", "Plain text", "Type something."])


def _case(cid: str, question: str, options: list[str], width: int, keys: list[str]) -> dict[str, object]:
    return {"id": cid, "input": {"text": styles.claude_menu(question, options, width=width), "width": width},
            "expected": {"state": "asking", "decision": "answer", "keys": [keys]}}


@pytest.fixture
def suites(tmp_path: Path) -> Path:
    """Golden cases a careful human answers that the baseline escalates for want of a rule: the
    database question at two widths (one change, two cases) and a question naming a temporary
    folder."""
    root = tmp_path / "suites"
    root.mkdir()
    cases = [_case("db-w100", *DB, 100, ["Down", "Enter"]), _case("db-w80", *DB, 80, ["Down", "Enter"]),
             _case("format-tmp", *FORMAT, 100, ["Enter"])]
    (root / "menus.yaml").write_text(yaml.safe_dump({"suite": "menus", "version": 1, "description": "menus",
                                                     "cases": cases}, allow_unicode=True, sort_keys=False))
    return root


def test_false_escalation_proposals_are_distinct_named_by_change_and_their_claims_hold(
        sv_home: Path, suites: Path, tmp_path: Path) -> None:
    notes: list[str] = []
    made = propose(Settings(home=sv_home).ensure(), "reduce_false_escalation",
                   parent=PolicyRef(baseline_policy(), "baseline"), parent_arg="baseline", suites_root=suites,
                   candidates_root=tmp_path / "candidates", judge=False, notes=notes)
    names = sorted(c.candidate_id for c in made)
    assert names == ["answer-which-database-should-the-service-use", "answer-which-format-for-notes"], (names, notes)
    assert len({c.policy.policy_id for c in made}) == 2
    assert sorted(p.name for p in (tmp_path / "candidates").iterdir()) == names, "nothing else written"
    by = {c.candidate_id: c for c in made}
    db = load_candidate("answer-which-database-should-the-service-use", tmp_path / "candidates")
    claims = db.manifest.claims
    assert claims is not None and claims.golden_cases == 3
    assert claims.golden_changed == ["menus/db-w100", "menus/db-w80"], "both cases of the one change, listed"
    assert by["answer-which-format-for-notes"].manifest.claims.golden_changed == ["menus/format-tmp"]
    assert "tmp" not in by["answer-which-format-for-notes"].candidate_id
    # the claims hold: the review (parent and candidate over the same suites) finds exactly them
    r = run_cli("eval", "review-candidate", db.candidate_id, "--json", "--suites-dir", str(suites),
                "--candidates-dir", str(tmp_path / "candidates"))
    assert r.returncode == 0, r.stderr
    review = json.loads(r.stdout)["decided_differently"]
    assert review["count"] == 2 and review["better"] == 2 and review["worse"] == 0
    assert sorted(f"{x['suite']}/{x['case_id']}" for x in review["examples"]) == claims.golden_changed


def test_a_proposal_that_changes_no_case_is_not_written(sv_home: Path, tmp_path: Path) -> None:
    """The same database question, but the golden case expects the default (Enter on PostgreSQL):
    no stall, no recorded runs, and a rule from a case that the baseline already passes changes
    nothing, so nothing is written and the notes say why."""
    root = tmp_path / "suites"
    root.mkdir()
    quiet = {"id": "idle", "input": {"text": styles.claude_idle(["> hi", "Hello."], width=100), "width": 100},
             "expected": {"state": "idle"}}
    (root / "idle.yaml").write_text(yaml.safe_dump({"suite": "idle", "version": 1, "description": "idle",
                                                    "cases": [quiet]}, sort_keys=False))
    notes: list[str] = []
    made = propose(Settings(home=sv_home).ensure(), "reduce_false_escalation",
                   parent=PolicyRef(baseline_policy(), "baseline"), parent_arg="baseline", suites_root=root,
                   candidates_root=tmp_path / "candidates", judge=False, notes=notes)
    assert made == [] and not (tmp_path / "candidates").exists()
    text = "\n".join(notes)
    assert "recorded runs: none" in text and "golden suites: no screen case" in text, text


def test_an_objective_that_finds_nothing_says_what_it_looked_at_and_what_would_help(
        cli_env: dict[str, str], suites: Path, tmp_path: Path) -> None:
    r = run_cli("eval", "propose", "--objective", "reduce_friction", "--suites-dir", str(suites),
                "--candidates-dir", str(tmp_path / "c"), "--from", "baseline", "--no-judge", env=cli_env)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "nothing to propose for reduce_friction. What was looked at:" in out, out
    assert "recorded runs: none in" in out and "what would produce a proposal:" in out and "--min-support" in out
    assert "propose: done in" in r.stderr, "it ends with how long it took"
