"""Policies: YAML validated with errors that name the file and line; ids from content."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.errors import PolicyError
from supervisor.policy import baseline_policy, dump_policy, load_policy, parse_policy
from tests.conftest import REPO


def test_baseline_loads_and_matches_the_candidates_file() -> None:
    shipped = baseline_policy()
    assert shipped.name == "baseline"
    assert load_policy(REPO / "candidates" / "baseline.yaml").policy_id == shipped.policy_id
    assert shipped.judge.consult == "never"  # the judge is off by default
    assert shipped.answers.danger_patterns, "the baseline must know dangerous commands"


def test_id_is_content_hash_ignoring_name_and_description() -> None:
    base = baseline_policy()
    renamed = base.model_copy(update={"name": "other", "description": "same knobs"})
    assert renamed.policy_id == base.policy_id
    changed = parse_policy(dump_policy(base).replace("stall_timeout_s: 600.0", "stall_timeout_s: 601.0"))
    assert changed.policy_id != base.policy_id
    assert parse_policy(dump_policy(base)).policy_id == base.policy_id  # round trip keeps the id


@pytest.mark.parametrize("text, fragment", [
    ("timing:\n  settle_ms: -5\n", "p.yaml:2: timing.settle_ms"),
    ("timing: [\n", "p.yaml:2: not valid YAML"),
    ("answers:\n  danger_patterns:\n    - name: x\n      pattern: '(unclosed'\n", "p.yaml:4: answers.danger_patterns.0.pattern"),
    ("no_such_knob: 1\n", "no_such_knob: Extra inputs are not permitted"),
    ("- a list\n", "a policy must be a YAML mapping"),
])
def test_bad_policies_give_one_line_with_the_place(text: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "p.yaml")
    line = info.value.one_line()
    assert fragment in line and "\n" not in line


def test_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="not found"):
        load_policy(tmp_path / "nope.yaml")
