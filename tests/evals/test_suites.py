"""Suite files: validation with one-line errors naming file, line, case and field; the shipped suites."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.suites import iter_suites, load_suite_file, parse_suite, resolve_suites
from supervisor.errors import SuiteError

GOOD_CASE = """  - id: c1
    input: {text: "$ ls"}
    expected: {state: idle}
"""


def _err(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite_file(p)
    msg = info.value.one_line()
    assert "\n" not in msg
    return msg


def test_good_yaml_and_jsonl(tmp_path: Path) -> None:
    y = tmp_path / "a.yaml"
    y.write_text("suite: a\ncases:\n" + GOOD_CASE)
    s = load_suite_file(y)
    assert s.name == "a" and [c.id for c in s.cases] == ["c1"] and s.lines["c1"] == 3
    j = tmp_path / "b.jsonl"
    j.write_text('{"suite": "b", "version": 3}\n{"id": "x", "input": {"text": "hi"}, "expected": {"state": "idle"}}\n')
    sj = load_suite_file(j)
    assert sj.version == 3 and sj.cases[0].expected.state == "idle"
    assert len(sj.content_hash) == 16


def test_bad_state_names_file_line_case_field(tmp_path: Path) -> None:
    msg = _err(tmp_path, "bad.yaml", "suite: bad\ncases:\n" + GOOD_CASE +
               "  - id: c2\n    input: {text: hi}\n    expected:\n      state: sleeping\n")
    assert "bad.yaml:9" in msg and "'c2'" in msg and "expected.state" in msg


def test_unknown_field(tmp_path: Path) -> None:
    msg = _err(tmp_path, "u.yaml", "suite: u\ncases:\n  - id: c1\n    input: {text: hi, colour: red}\n"
               "    expected: {state: idle}\n")
    assert "u.yaml:4" in msg and "input.colour" in msg and "unknown field" in msg


def test_text_and_file_both(tmp_path: Path) -> None:
    msg = _err(tmp_path, "tf.yaml", "suite: tf\ncases:\n  - id: c1\n    input: {text: hi, file: x.txt}\n"
               "    expected: {state: idle}\n")
    assert "exactly one of `text` or `file`" in msg and "'c1'" in msg


def test_duplicate_id_and_missing_expected(tmp_path: Path) -> None:
    msg = _err(tmp_path, "d.yaml", "suite: d\ncases:\n" + GOOD_CASE + GOOD_CASE)
    assert "duplicate id" in msg and "d.yaml:6" in msg
    msg = _err(tmp_path, "m.yaml", "suite: m\ncases:\n  - id: c1\n    input: {text: hi}\n")
    assert "expected" in msg and "field required" in msg


def test_invalid_yaml_and_json(tmp_path: Path) -> None:
    msg = _err(tmp_path, "y.yaml", "suite: y\ncases:\n  - id: [unclosed\n")
    assert "y.yaml:" in msg and "not valid YAML" in msg
    msg = _err(tmp_path, "j.jsonl", '{"id": "a", "input": {"text": "x"}, "expected": {}}\n{"id": "b",\n')
    assert "j.jsonl:2" in msg and "not valid JSON" in msg


def test_bad_keys_and_run_state(tmp_path: Path) -> None:
    msg = _err(tmp_path, "k.yaml", "suite: k\ncases:\n  - id: c1\n    input:\n      text: hi\n"
               "      run_state: {idle_streek: 1}\n    expected: {state: idle}\n")
    assert "idle_streek" in msg and "k.yaml:6" in msg


def test_missing_capture_file_is_clear(tmp_path: Path) -> None:
    from evals.runner import screen_of

    p = tmp_path / "c.yaml"
    p.write_text("suite: c\ncases:\n  - id: c1\n    input: {file: nowhere.txt}\n    expected: {state: idle}\n")
    s = load_suite_file(p)
    with pytest.raises(SuiteError, match="nowhere.txt cannot be read"):
        screen_of(s, s.cases[0])  # type: ignore[arg-type]


def test_unknown_suite_name_lists_known(small_suites: Path) -> None:
    with pytest.raises(SuiteError) as info:
        resolve_suites("nope", small_suites)
    assert "known suites: gates, mini" in info.value.one_line()


def test_shipped_suites_load_and_are_big_enough() -> None:
    suites = list(iter_suites())
    assert len(suites) >= 8
    assert sum(len(s.cases) for s in suites) >= 300
    kinds = {c.kind for s in suites for c in s.cases}
    assert {"screen", "gate"} <= kinds


def test_parse_suite_is_pure_of_path_existence() -> None:
    s = parse_suite("suite: z\ncases:\n" + GOOD_CASE, Path("/nonexistent/z.yaml"))
    assert s.name == "z"
