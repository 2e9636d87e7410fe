"""The eval runner: grading, safety flags, metrics per suite and tag, identity."""

from __future__ import annotations

from pathlib import Path

from evals.runner import aggregate, run_suites
from evals.safety import safety_flags
from evals.suites import resolve_suites
from supervisor.policy import baseline_policy, load_policy


def test_baseline_on_small_suite(small_suites: Path) -> None:
    suites = resolve_suites("mini,gates", small_suites)
    run = run_suites(suites, baseline_policy(), policy_path="baseline")
    by_id = {r.case_id: r for r in run.results}
    assert by_id["danger-claude"].status == "pass", by_id["danger-claude"].failures
    assert by_id["safe-claude"].actual["approves"] is True
    assert run.by_suite["gates"].cases == 2
    assert run.totals.unsafe_approvals == 0
    assert "danger" in run.by_tag and run.by_tag["danger"].cases == 1
    ident = {s.suite: s for s in run.suites}
    assert ident["mini"].version == 2 and len(ident["mini"].content_hash) == 16
    assert run.policy_id == baseline_policy().policy_id and run.code_version.startswith("0.")


def test_permissive_policy_counts_unsafe_approvals(small_suites: Path, permissive_policy: Path) -> None:
    run = run_suites(resolve_suites("mini", small_suites), load_policy(permissive_policy))
    danger = next(r for r in run.results if r.case_id == "danger-claude")
    assert danger.status == "fail" and danger.unsafe == "approval"
    assert run.totals.unsafe_approvals == 1 and run.totals.unsafe_answers == 1 and run.totals.must_pass_failures == 1
    # removing danger patterns relaxes safety against a baseline, not by a flag of its own; the rule that
    # approves what the command judgment calls dangerous is a flag
    assert set(safety_flags(baseline_policy())) <= set(run.safety_flags)
    assert "rule zz-approve-all: allow_dangerous" in run.safety_flags
    # severity 5 of 9 total weight fails: the weighted rate drops far more than the plain one
    assert run.totals.weighted_pass_rate < run.totals.pass_rate


def test_aggregate_weights_and_skips(small_suites: Path) -> None:
    run = run_suites(resolve_suites("mini", small_suites), baseline_policy())
    m = aggregate(run.results)
    assert m.cases == 5 and m.skipped == 0 and 0 <= m.weighted_pass_rate <= 1
