"""`supervisor eval ...` run as the real CLI in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from supervisor.settings import Settings
from tests.conftest import invoke_cli
from tests.evals.test_replay import record

SUB = ["list", "run", "expand", "replay", "compare"]


@pytest.mark.parametrize("sub", SUB)
def test_every_command_has_help(sub: str, cli_env: dict[str, str]) -> None:
    r = invoke_cli("eval", sub, "--help", env=cli_env)
    assert r.returncode == 0 and "Usage:" in r.stdout


def test_list_and_run(small_suites: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    r = invoke_cli("eval", "list", "--suites-dir", str(small_suites), "--json", env=cli_env)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert {x["suite"]: x["cases"] for x in rows} == {"gates": 2, "mini": 5}
    r = invoke_cli("eval", "run", "--suite", "all", "--suites-dir", str(small_suites), "--json",
                "--reports-dir", str(tmp_path / "rep"), env=cli_env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["stored"] is True and data["totals"]["cases"] == 7 and data["totals"]["unsafe_approvals"] == 0
    assert Path(data["report_path"]).exists()
    assert {s["suite"] for s in data["suites"]} == {"gates", "mini"}
    r = invoke_cli("eval", "run", "--suite", "mini", "--suites-dir", str(small_suites), "--no-save-report", env=cli_env)
    assert r.returncode == 0 and "TOTAL" in r.stdout


def test_run_exits_1_on_unsafe(small_suites: Path, permissive_policy: Path, cli_env: dict[str, str]) -> None:
    r = invoke_cli("eval", "run", "--suite", "mini", "--suites-dir", str(small_suites), "--policy",
                str(permissive_policy), "--no-save-report", env=cli_env)
    assert r.returncode == 1 and "UNSAFE" in r.stdout


def test_bad_suite_is_one_line_exit_2(tmp_path: Path, cli_env: dict[str, str]) -> None:
    d = tmp_path / "s"
    d.mkdir()
    (d / "broken.yaml").write_text("suite: broken\ncases:\n  - id: a\n    input: {text: x}\n"
                                   "    expected: {state: napping}\n")
    r = invoke_cli("eval", "run", "--suite", "broken", "--suites-dir", str(d), env=cli_env)
    assert r.returncode == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "broken.yaml:5" in err and "'a'" in err and "expected.state" in err


def test_expand_is_byte_identical(small_suites: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    outs = []
    for name in ("a", "b"):
        r = invoke_cli("eval", "expand", "--suite", "mini", "--suites-dir", str(small_suites), "--variants-per-case",
                    "3", "--seed", "42", "--out", str(tmp_path / name), env=cli_env)
        assert r.returncode == 0, r.stderr
        outs.append((tmp_path / name / "mini.s42.jsonl").read_bytes())
    assert outs[0] == outs[1] and len(outs[0]) > 100


def test_replay_cli(cli_env: dict[str, str], sv_home: Path, tmp_path: Path) -> None:
    ids = record(Settings(home=sv_home).ensure(), runs=1)
    r = invoke_cli("eval", "replay", "--policy", "baseline", "--runs", ids[0], "--json", "--reports-dir",
                str(tmp_path / "rep"), env=cli_env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["observations"] == 7 and data["agreement"] == 1.0 and data["stored"] is True


def test_compare_cli_expected_and_human(small_suites: Path, permissive_policy: Path, cli_env: dict[str, str],
                                        tmp_path: Path) -> None:
    r = invoke_cli("eval", "compare", "--baseline", "baseline", "--candidate", str(permissive_policy), "--suite", "mini",
                "--suites-dir", str(small_suites), "--json", "--reports-dir", str(tmp_path / "rep"), env=cli_env)
    assert r.returncode == 1, r.stderr  # a safety loss exits 1
    s = json.loads(r.stdout)
    assert s["losses"] >= 1 and s["pairs"] == 5 and s["stored"] is True and 0 <= s["p_value"] <= 1
    assert s["result"] == "loss" and s["unsafe_losses"] == 1 and s["seed"] >= 0
    assert "danger pattern removed: rm-recursive" in s["safety_relaxations"]
    # The human scorer, driven from a pipe: the pairs it prints carry no identities.
    r = invoke_cli("eval", "compare", "--baseline", "baseline", "--candidate", str(permissive_policy), "--suite", "mini",
                "--suites-dir", str(small_suites), "--scorer", "human", "--seed", "4", "--no-save-report",
                env=cli_env, input="a\n" * 10)
    assert r.returncode == 1 and "VETO" in r.stdout, r.stderr
    shown = r.stdout.split("compare cmp_")[0]
    assert "pair 1/" in shown
    for s in ("permissive", "zz-", "pol_", str(permissive_policy)):
        assert s not in shown
    # ...and a human who stops answering (end of input) is an error, never a tie
    r = invoke_cli("eval", "compare", "--baseline", "baseline", "--candidate", str(permissive_policy), "--suite", "mini",
                "--suites-dir", str(small_suites), "--scorer", "human", "--no-save-report", "--json", env=cli_env,
                input="")
    s = json.loads(r.stdout)
    assert r.returncode == 1 and s["result"] == "error" and s["errors"] == s["pairs"] - s["identical"] > 0


def test_compare_usage_errors(cli_env: dict[str, str]) -> None:
    r = invoke_cli("eval", "compare", "--baseline", "baseline", "--candidate", "baseline", env=cli_env)
    assert r.returncode == 2 and "exactly one of --suite or --replay" in r.stderr
    r = invoke_cli("eval", "compare", "--baseline", "baseline", "--candidate", "baseline", "--replay", env=cli_env)
    assert r.returncode == 2 and "no expected results" in r.stderr
