"""Slow workbench commands show their steps and end with how long they took: plain lines when not
a terminal (stderr, so --json on stdout stays one document), a rich bar on a terminal."""

from __future__ import annotations

import io
import json
import re

from supervisor.cli.progress import command_progress
from tests.conftest import run_cli


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_say_each_step_with_its_count_and_time() -> None:
    out = io.StringIO()
    with command_progress("gate", stream=out) as prog:
        prog.step("baseline: evaluating", 3)
        for _ in range(3):
            prog.advance()
        prog.step("replay over the recorded runs")
    lines = out.getvalue().splitlines()
    assert lines[0] == "gate: baseline: evaluating (3) ..."
    assert re.fullmatch(r"gate: baseline: evaluating: done \(3 of 3\) in \d+\.\ds", lines[1]), lines
    assert lines[2] == "gate: replay over the recorded runs ..."
    assert re.fullmatch(r"gate: done in \d+\.\ds", lines[-1]), lines


def test_a_terminal_gets_a_bar_per_step_and_the_elapsed_time_also_on_failure() -> None:
    out = _Tty()
    try:
        with command_progress("eval run", stream=out) as prog:
            prog.step("12 suites under baseline", 10)
            prog.advance(4)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    text = out.getvalue()
    assert "12 suites under baseline" in text and "4/10" in text, text
    assert re.search(r"eval run: stopped after \d+\.\ds", text) and "done in" not in text, text


def test_a_failure_before_any_step_leaves_only_the_error() -> None:
    out = io.StringIO()
    try:
        with command_progress("gate", stream=out):
            raise FileNotFoundError("missing.yaml")
    except FileNotFoundError:
        pass
    assert out.getvalue() == ""


def test_eval_run_json_stays_clean_and_stderr_ends_with_the_time(cli_env: dict[str, str]) -> None:
    r = run_cli("eval", "run", "--suite", "danger", "--no-episodes", "--no-save-report", "--json", env=cli_env)
    assert r.returncode in (0, 1), r.stderr
    data = json.loads(r.stdout)
    assert data["totals"]["cases"] > 0
    assert "eval run: 1 suites under baseline" in r.stderr
    assert re.search(r"eval run: done in \d+\.\ds\s*$", r.stderr), r.stderr
