"""Blind A/B compare: statistics, blindness (the scorer provably never sees a policy's identity),
unblinding after scoring, storage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.compare import SealedMapping, blind_compare, scrub
from evals.scorers import BlindPair, ExpectedScorer, HumanScorer, Verdict
from evals.stats import sign_test_p, wilson_interval
from evals.workbench import eval_compare
from supervisor.policy import baseline_policy, load_policy
from supervisor.settings import Settings


def test_wilson_interval_known_values() -> None:
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(0, 5)
    assert lo == 0.0 and hi == pytest.approx(0.4345, abs=1e-4)


def test_sign_test_exact() -> None:
    assert sign_test_p(8, 2) == pytest.approx(0.109375)
    assert sign_test_p(10, 0) == pytest.approx(2 / 1024)
    assert sign_test_p(0, 0) == 1.0 and sign_test_p(3, 3) == 1.0


class RecordingScorer:
    """Records every object it is handed, as text, and prefers the output that declines/escalates
    (a stand-in for a judge; the point is what it receives). A recorder, not a fake of a real
    thing: no real scorer can show what it was given."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.mapping_revealed_during_scoring: list[bool] = []
        self.sealed: SealedMapping | None = None

    def score(self, pair: BlindPair) -> Verdict:
        self.seen.append(pair.model_dump_json())
        self.seen.append(repr(pair))
        a_approves = pair.output_a.get("approves") is True
        b_approves = pair.output_b.get("approves") is True
        if a_approves == b_approves:
            return Verdict(winner="tie")
        return Verdict(winner="B" if a_approves else "A")


def test_scorer_never_sees_policy_identity(small_suites: Path, permissive_policy: Path, sv_home: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    rec = RecordingScorer()
    import evals.workbench as wb

    monkeypatch.setattr(wb, "make_scorer", lambda *a, **k: (rec, None))
    settings = Settings(home=sv_home)
    outcome, path, err = eval_compare("baseline", str(permissive_policy), suite_spec="mini", scorer_kind="expected",
                                      seed=7, settings=settings, reports_dir=sv_home / "reports",
                                      suites_root=small_suites)
    assert err is None and rec.seen, "the scorer saw at least one differing pair"
    cand = load_policy(permissive_policy)
    base = baseline_policy()
    forbidden = [cand.name, cand.policy_id, cand.policy_id.removeprefix("pol_"), base.policy_id,
                 base.policy_id.removeprefix("pol_"), str(permissive_policy), permissive_policy.name,
                 permissive_policy.stem, "permissive", "candidate", "baseline", "zz-"]
    blob = "\n".join(rec.seen).lower()
    for s in forbidden:
        assert s.lower() not in blob, f"scorer saw {s!r}"
    s = outcome.summary
    # the permissive candidate approves rm -rf: the recorder prefers the side that does not approve
    assert s.losses >= 1 and s.wins == 0
    assert s.result == "loss" and s.unsafe_losses == 1 and s.vetoes
    assert set(outcome.mapping.values()) <= {"A", "B"} and len(outcome.mapping) == s.pairs
    assert outcome.revealed_at > 0


def test_order_is_seeded(small_suites: Path, permissive_policy: Path) -> None:
    from evals.compare import case_contexts, identity_strings, items_from_results
    from evals.runner import run_suites
    from evals.suites import resolve_suites

    base, cand = baseline_policy(), load_policy(permissive_policy)
    suites = resolve_suites("mini", small_suites)
    items = items_from_results(run_suites(suites, base).results, run_suites(suites, cand).results,
                               contexts=case_contexts(suites), with_expected=True)
    hide = identity_strings((base, "baseline"), (cand, str(permissive_policy)))
    runs = [blind_compare(items, ExpectedScorer(), seed=s, hide=hide) for s in (1, 1, 2)]
    sides = [sealed.reveal() for _, sealed, *_ in runs]
    order = [[p.case_id for p in pairs] for pairs, *_ in runs]
    assert sides[0] == sides[1] and order[0] == order[1]
    assert (sides[0], order[0]) != (sides[2], order[2])


def test_sealed_mapping_repr_reveals_nothing() -> None:
    m = SealedMapping()
    m.seal("p0001", "A")
    assert "A" not in repr(m).replace("SealedMapping", "") and m.revealed_at is None
    assert m.reveal() == {"p0001": "A"} and m.revealed_at is not None


def test_scrub_masks_and_drops() -> None:
    out = scrub({"reason": "rule approve-safe: approve with 'Yes' (policy pol_abc123 my-cand)",
                 "policy_id": "pol_abc123", "keys": ["1"], "nested": {"candidate_name": "x", "a": "my-cand"}},
                ["pol_abc123", "my-cand"])
    assert out == {"reason": "approve with 'Yes' (policy [hidden] [hidden])", "keys": ["1"],
                   "nested": {"a": "[hidden]"}}


def test_human_scorer_from_answers() -> None:
    shown: list[str] = []
    answers = iter(["x", "b"])
    h = HumanScorer(ask=lambda q: next(answers), show=shown.append, total=1)
    v = h.score(BlindPair(pair_id="p0001", context={"screen_tail": "❯ 1. Yes"},
                          output_a={"state": "asking", "decision": "answer", "keys": ["1"], "approves": True},
                          output_b={"state": "asking", "decision": "escalate", "keys": [], "approves": None}))
    assert v.winner == "B" and any("answer a, b or t" in s for s in shown)


def test_compare_stored_with_mapping_apart(small_suites: Path, permissive_policy: Path, sv_home: Path) -> None:
    from supervisor.warehouse import open_warehouse
    from supervisor.warehouse.evals_store import read_compare_pairs, read_compare_runs

    settings = Settings(home=sv_home)
    outcome, path, err = eval_compare("baseline", str(permissive_policy), suite_spec="mini,gates",
                                      scorer_kind="expected", seed=3, settings=settings,
                                      reports_dir=sv_home / "reports", suites_root=small_suites)
    assert err is None and path is not None and json.loads(path.read_text())["summary"]["pairs"] == 7
    with open_warehouse(settings.warehouse, read_only=True) as wh:
        runs = read_compare_runs(wh)
        assert runs.height == 1 and runs["losses"][0] == outcome.summary.losses
        blind = read_compare_pairs(wh, outcome.summary.compare_run_id, unblind=False)
        assert "candidate_is" not in blind.columns and blind.height == 7
        full = read_compare_pairs(wh, outcome.summary.compare_run_id)
        assert set(full["candidate_is"].to_list()) <= {"A", "B"}
        mapping: dict[str, Any] = dict(zip(full["pair_id"], full["candidate_is"], strict=True))
        assert mapping == outcome.mapping
