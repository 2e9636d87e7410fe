"""WorkflowSpec validation: clear errors with line numbers, approval bound to content."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.errors import SpecError
from supervisor.workflow.spec import (
    approve_spec_text,
    load_spec,
    new_spec_text,
    parse_spec,
    require_approved,
)

GOOD = """\
name: three steps
goal: a greeting module
steps:
  - id: write
    objective: write hello.py
    verify:
      - type: artifact
        path: hello.py
  - id: test
    objective: make the tests pass
    verify:
      - type: command
        run: python -m pytest -q
        expect: pass
  - id: choose
    kind: decision
    branches:
      - id: docs
        next: document
        when_choice: docs
      - id: skip
        next: end
        default: true
  - id: document
    objective: docs
acceptance:
  required_evidence:
    - type: passed
      verifier: test.command1
  must_review_by: human
"""


def test_good_spec_parses_with_default_ids() -> None:
    spec = parse_spec(GOOD, "good.yaml")
    assert [s.id for s in spec.steps] == ["write", "test", "choose", "document"]
    assert spec.steps[0].verify[0].id == "write.artifact1"
    assert spec.steps[1].verify[0].id == "test.command1"
    assert spec.next_node("write").id == "test"
    assert spec.next_node("document") is None
    assert spec.approval.status == "draft"


def test_bad_expect_names_the_line() -> None:
    text = GOOD.replace("expect: pass", "expect: maybe")
    with pytest.raises(SpecError) as exc:
        parse_spec(text, "s.yaml")
    line = text.splitlines().index("        expect: maybe") + 1
    assert f"s.yaml:{line}:" in exc.value.message
    assert "expect must be pass, fail or contains:TEXT" in exc.value.message


def test_unknown_field_and_missing_field_have_lines() -> None:
    text = GOOD.replace("    objective: write hello.py", "    objectiv: write hello.py")
    with pytest.raises(SpecError) as exc:
        parse_spec(text, "s.yaml")
    assert "s.yaml:5:" in exc.value.message and "objectiv" in exc.value.message
    with pytest.raises(SpecError) as exc2:
        parse_spec("name: x\n", "s.yaml")
    assert "steps" in exc2.value.message and "s.yaml:1" in exc2.value.message


def test_yaml_syntax_error_line() -> None:
    with pytest.raises(SpecError) as exc:
        parse_spec("name: x\nsteps:\n  - id: a\n   objective: [\n", "bad.yaml")
    assert exc.value.message.startswith("bad.yaml:")
    assert "not valid YAML" in exc.value.message


def test_links_are_checked() -> None:
    with pytest.raises(SpecError, match="unknown node 'nowhere'"):
        parse_spec(GOOD.replace("next: document", "next: nowhere"))
    with pytest.raises(SpecError, match="not defined by any step"):
        parse_spec(GOOD.replace("verifier: test.command1", "verifier: nope"))
    with pytest.raises(SpecError, match="duplicate step ids"):
        parse_spec(GOOD.replace("id: document", "id: write"))
    with pytest.raises(SpecError, match="needs `branch: NAME`"):
        parse_spec(GOOD.replace("type: artifact\n        path: hello.py", "type: git\n        check: branch"))


def test_draft_refused_until_approved_and_edit_voids_approval(tmp_path: Path) -> None:
    spec = parse_spec(GOOD)
    with pytest.raises(SpecError, match="is a draft"):
        require_approved(spec, "good.yaml")
    approved_text = approve_spec_text("# keep me\n" + GOOD, "alice", now=1000.0)
    assert approved_text.startswith("# keep me\n")
    spec2 = parse_spec(approved_text)
    assert spec2.approval.status == "approved" and spec2.approval.by == "alice"
    require_approved(spec2)
    edited = approved_text.replace("write hello.py", "write hello2.py")
    with pytest.raises(SpecError, match="changed after it was approved"):
        require_approved(parse_spec(edited))
    # re-approving an already approved file replaces the block instead of adding a second one
    again = approve_spec_text(edited, "bob")
    assert again.count("approval:") == 1 and parse_spec(again).is_approved


def test_template_is_valid(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(new_spec_text("demo", str(p)))
    spec = load_spec(p)
    assert spec.name == "demo" and spec.approval.status == "draft"
    with pytest.raises(SpecError, match="not found"):
        load_spec(tmp_path / "missing.yaml")
