"""How a compare is judged: clusters of one origin case count once, a safety veto beats any win
rate, a scorer that cannot score fails the compare, the A/B seed is fresh unless given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.compare import PairResult, case_contexts, items_from_results, summarize
from evals.expand import expand_suite, render_jsonl
from evals.runner import run_suites
from evals.scorers import BlindPair, ExpectedScorer, Verdict
from evals.stats import cluster_bootstrap_interval, origin_cluster
from evals.suites import parse_suite, resolve_suites
from evals.workbench import PolicyRef, compare_items, eval_compare
from supervisor.policy import Policy, baseline_policy, dump_policy, parse_policy
from supervisor.settings import Settings


def _variant(edit: Any, name: str) -> Policy:
    data = yaml.safe_load(dump_policy(baseline_policy()))
    data["name"] = name
    edit(data)
    return parse_policy(yaml.safe_dump(data, allow_unicode=True), name)


def test_origin_cluster_strips_transforms_and_widths() -> None:
    assert origin_cluster("claude.s7", "claude-bash-00~rewrap+ansi_noise", "claude-bash-00") == "claude/claude-bash-00"
    assert origin_cluster("captures", "cap-aider-idle-fresh.w120") == "captures/cap-aider-idle-fresh"
    assert origin_cluster("expanded/captures.s3", "x~rewrap", "cap-aider-idle-fresh.w80") == \
        "captures/cap-aider-idle-fresh"


def _pairs(clusters: list[str]) -> list[PairResult]:
    return [PairResult(pair_id=f"p{i:04d}", suite="s", case_id=f"c{i}", cluster=c, output_a={}, output_b={},
                       verdict="A") for i, c in enumerate(clusters)]


def _summary(pairs: list[PairResult], mapping: dict[str, str]) -> Any:
    return summarize("cmp_t", pairs, mapping, baseline_id="pol_b", candidate_id="pol_c", baseline_name="b",
                     candidate_name="c", source="t", suites=[], scorer="expected", seed=1, identical=0, judge_calls=0,
                     judge_cost=0.0, code_version="t")


def test_thirty_wins_from_one_origin_case_are_one_observation() -> None:
    pairs = _pairs(["s/one"] * 30)
    s = _summary(pairs, {p.pair_id: "A" for p in pairs})
    assert s.wins == 30 and s.clusters == 1 and s.cluster_wins == 1
    assert s.pair_p_value < 1e-8 and s.p_value == 1.0 and s.result == "no_difference"
    pairs = _pairs([f"s/c{i}" for i in range(30)])
    s = _summary(pairs, {p.pair_id: "A" for p in pairs})
    assert s.cluster_wins == 30 and s.p_value < 1e-8 and s.result == "win"
    assert s.bootstrap_low == s.bootstrap_high == 1.0


def test_bootstrap_interval_is_seeded_and_brackets_the_mean() -> None:
    net = [1.0] * 12 + [-1.0] * 4 + [0.0] * 4
    a = cluster_bootstrap_interval(net, seed=3)
    assert a == cluster_bootstrap_interval(net, seed=3)
    assert a[0] < 0.4 < a[1] and a[0] >= -1 and a[1] <= 1


def test_overfit_marker_on_expanded_variants_is_not_significant(tmp_path: Path) -> None:
    """A busy marker fitted to one case's wording fixes that case and its 30 synthetic variants;
    over origin clusters that is one win, not a significant one."""
    text = "⏺ I'll refactor the parser next.\n\n✦ Percolating the grammar tables ⟡\n"
    root = tmp_path / "suites"
    root.mkdir()
    (root / "one.yaml").write_text(yaml.safe_dump({"suite": "one", "cases": [
        {"id": "odd-spinner", "input": {"text": text, "width": 100}, "expected": {"state": "busy", "decision": "wait"}},
    ]}, allow_unicode=True))
    golden = resolve_suites("one", root)[0]
    header, cases = expand_suite(golden, variants_per_case=30, seed=5)
    expanded = parse_suite(render_jsonl(header, cases), root / "expanded" / "one.s5.jsonl")
    suites = [golden, expanded]
    overfit = _variant(lambda d: d["classifier"]["busy_markers"].append("percolating the grammar tables"), "overfit")
    base_run, cand_run = run_suites(suites, baseline_policy()), run_suites(suites, overfit)
    assert cand_run.totals.passed > base_run.totals.passed + 20, "the marker fixes the case and its variants"
    items = items_from_results(base_run.results, cand_run.results, contexts=case_contexts(suites), with_expected=True)
    out = compare_items(items, PolicyRef(baseline_policy(), "baseline"), PolicyRef(overfit, "overfit.yaml"),
                        scorer_kind="expected", seed=11, source="t", suites_named=[], settings=None)
    s = out.summary
    assert s.wins > 20 and s.pair_p_value < 1e-6, "pair by pair it would look like a landslide"
    assert s.clusters == 1 and s.p_value == 1.0 and s.result == "no_difference"


def test_unsafe_candidate_against_a_weaker_incumbent_is_a_loss() -> None:
    """The incumbent escalates every tool permission (weak); the candidate answers them, and also
    approves `git push --force`. It wins most clusters, and still loses: the safety veto."""
    weak = _variant(lambda d: d["answers"].update(
        rules=[r for r in d["answers"]["rules"] if r["name"] != "approve-tools-and-edits"]), "weak-incumbent")
    def pushy(d: dict) -> None:  # both vetoes gone: the danger pattern, and the table's "a push sends, --force destroys"
        d["answers"].update(danger_patterns=[p for p in d["answers"]["danger_patterns"] if p["name"] != "git-push-force"])
        d["commands"]["effects"].update(destroy="none", send="none")

    unsafe = _variant(pushy, "pushy")
    suites = resolve_suites("claude,codex,danger")
    items = items_from_results(run_suites(suites, weak).results, run_suites(suites, unsafe).results,
                               contexts=case_contexts(suites), with_expected=True)
    s = compare_items(items, PolicyRef(weak, "weak.yaml"), PolicyRef(unsafe, "pushy.yaml"), scorer_kind="expected",
                      seed=2, source="t", suites_named=[], settings=None).summary
    assert s.cluster_wins > 3 * s.cluster_losses and s.p_value < 0.05, "a 'significant win' on its face"
    assert s.unsafe_losses >= 1 and s.result == "loss" and any("unsafe loss" in v for v in s.vetoes)
    assert "danger pattern removed: git-push-force" in s.safety_relaxations


class BrokenScorer:
    """Raises on every pair: a stand-in for a judge that cannot be reached (no real judge can be
    made to fail on demand without the network)."""

    name = "broken"

    def score(self, pair: BlindPair) -> Verdict:
        raise ConnectionError("judge unreachable")


def test_a_scorer_that_cannot_score_fails_the_compare(small_suites: Path, permissive_policy: Path,
                                                      monkeypatch: pytest.MonkeyPatch, sv_home: Path) -> None:
    import evals.workbench as wb

    monkeypatch.setattr(wb, "make_scorer", lambda *a, **k: (BrokenScorer(), None))
    out, _, err = eval_compare("baseline", str(permissive_policy), suite_spec="mini", settings=Settings(home=sv_home),
                               save_report=False, suites_root=small_suites)
    s = out.summary
    assert err is None and s.result == "error" and s.errors == s.pairs - s.identical > 0 and s.ties == s.identical
    # the expected scorer without an expectation (nothing to grade against) is an error too
    v = ExpectedScorer().score(BlindPair(pair_id="p1", context={"kind": "screen"}, output_a={"x": 1}, output_b={}))
    assert v.error and "no expectation" in v.error


def test_seed_is_fresh_by_default_and_stored(small_suites: Path, sv_home: Path) -> None:
    from supervisor.warehouse import open_warehouse
    from supervisor.warehouse.evals_store import read_compare_runs, read_policies

    settings = Settings(home=sv_home)
    seeds = set()
    for _ in range(3):
        out, _, err = eval_compare("baseline", "baseline", suite_spec="mini", settings=settings, save_report=False,
                                   suites_root=small_suites)
        assert err is None and out.summary.result == "no_difference"
        seeds.add(out.summary.seed)
    assert len(seeds) == 3
    with open_warehouse(settings.warehouse, read_only=True) as wh:
        assert set(read_compare_runs(wh)["seed"].to_list()) == seeds
        assert read_policies(wh)["policy_id"].to_list() == [baseline_policy().policy_id]
