"""Fuzzed inputs a user hands the supervisor: checkpoint blocks, workflow specs, policies and
suites. Whatever the text (valid documents with fields deleted, added or given values of the
wrong type; documents cut and spliced with junk; arbitrary text), loading it returns the object
or raises the documented one-line error (an ``InputError``), never anything else. Example counts
are fixed and derandomized: the time is bounded and a failure reproduces."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evals.suites import parse_suite
from supervisor.errors import InputError
from supervisor.policy import parse_policy
from supervisor.workflow.checkpoint import checkpoint_key, find_blocks, format_checkpoint, parse_body
from supervisor.workflow.spec import parse_spec
from tests.workflow.e2e_helpers import SPEC3

FUZZ = settings(max_examples=1500, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                  st.text(max_size=8), st.just(""), st.just("[REDACTED]"), st.just("{{x}}"),
                  st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))
_TEXT_JUNK = st.text(alphabet=st.sampled_from(list("ab:-\n\t #'\"[]{}|>&*!%@`,?\\\x00\u2028☃")), max_size=20)


def _slots(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _slots(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _slots(v, (*path, i))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def _mutated(draw: st.DrawFn, base: dict[str, Any]) -> str:
    """``base`` with 1-4 mutations (replace, delete, add), dumped as YAML; or its YAML text cut and
    spliced with junk."""
    if draw(st.integers(0, 3)) == 0:
        text = yaml.safe_dump(base, allow_unicode=True, sort_keys=False)
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        return text[:i] + draw(_TEXT_JUNK) + text[j:]
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_slots(doc)))
        if not path:
            continue
        parent = _get(doc, path[:-1])
        op = draw(st.sampled_from(["replace", "delete", "add"]))
        if op == "replace":
            parent[path[-1]] = draw(_JUNK)
        elif op == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(_JUNK)
        else:
            parent.append(draw(_JUNK))
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


def _one_line_or_ok(load: Any, text: str) -> None:
    try:
        load(text)
    except InputError as exc:
        assert "\n" not in exc.one_line()


SPEC_DOC = yaml.safe_load(SPEC3)
POLICY_DOC = {"timing": {"settle_ms": 60, "recheck_s": 0.4, "confirm_timeout_s": 2.0},
              "budgets": {"max_interventions": 10, "strike_limit": 2},
              "pause": {"mode": "notify_only", "display_ms": 5000},
              "classifier": {"busy_markers": ["esc to interrupt", "^working"], "recent_lines": 30},
              "answers": {"escalate_free_text": True, "always_escalate": ["api key", "delete|remove"]}}
SUITE_TEXT = """suite: fuzz
format_version: 1
version: 1
kind: screen
cases:
- id: c1
  tags: [shell]
  input: {text: "Delete file? [y/N]", width: 80, height: 24}
  expected: {state: asking, decision: escalate}
- id: c2
  input: {text: "$ ", width: 80, height: 24}
  expected: {state: idle}
"""
SUITE_DOC = yaml.safe_load(SUITE_TEXT)


def test_the_bases_are_valid() -> None:
    parse_spec(SPEC3)
    parse_policy(yaml.safe_dump(POLICY_DOC))
    assert len(parse_suite(SUITE_TEXT, Path("fuzz.yaml")).cases) == 2


@pytest.mark.slow
@FUZZ
@given(_mutated(SPEC_DOC))
def test_fuzz_specs(text: str) -> None:
    _one_line_or_ok(parse_spec, text)


@pytest.mark.slow
@FUZZ
@given(st.one_of(_mutated(POLICY_DOC), _TEXT_JUNK))
def test_fuzz_policies(text: str) -> None:
    _one_line_or_ok(parse_policy, text)


@pytest.mark.slow
@FUZZ
@given(_mutated(SUITE_DOC))
def test_fuzz_suites(text: str) -> None:
    _one_line_or_ok(lambda t: parse_suite(t, Path("fuzz.yaml")), text)


_CP_VALUE = st.one_of(st.integers(-(2**40), 2**70), st.text(max_size=12), st.just("step_done"), st.just("blocked"),
                      st.just("workflow_done"), st.just("[a, b]"), st.just("{x: 1}"), st.just("1e309"), st.just("nan"))
_CP_KEY = st.sampled_from(["checkpoint_seq", "status", "current_node", "summary", "evidence", "question",
                           "STATUS", "  status", "x", ""])


@st.composite
def _checkpoint_text(draw: st.DrawFn) -> str:
    lines = [f"{draw(_CP_KEY)}: {draw(_CP_VALUE)}" for _ in range(draw(st.integers(0, 6)))]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(_TEXT_JUNK))
    body = "\n".join(lines)
    open_tag = draw(st.sampled_from(["<checkpoint>", "<CHECKPOINT>", "<checkpoint >", "```checkpoint\n<checkpoint>"]))
    close = draw(st.sampled_from(["</checkpoint>", "", "</checkpoint></checkpoint>", "<checkpoint>"]))
    return draw(_TEXT_JUNK) + open_tag + "\n" + body + "\n" + close + draw(_TEXT_JUNK)


@pytest.mark.slow
@settings(FUZZ, max_examples=3000)
@given(_checkpoint_text())
def test_fuzz_checkpoints(text: str) -> None:
    for block in find_blocks(text):
        body, error = parse_body(block)
        assert (body is None) != (error is None)
        checkpoint_key(block, body)
        if body is not None:  # what parses formats back into a block that parses the same
            again, err = parse_body(format_checkpoint(body.model_dump(mode="json", exclude_none=True)))
            assert err is None and again == body
