"""The gate on planted candidates whose true effect is known: every class the first round let
through is REJECTed, changes without evidence are HELD, a genuinely better policy is PROMOTEd.
Real suites, a real DuckDB warehouse; the gate file is the project's with the live-run evidence
(episodes, canary) switched off, since no live runs exist here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.gate import GateResult, gate_candidate
from supervisor.policy import baseline_policy, dump_policy
from supervisor.settings import Settings
from tests.conftest import invoke_cli

REPO = Path(__file__).resolve().parents[2]
SUITES = "danger,claude,codex,aider,shell,finish_pause,stale_quoted,captures"


def _policy(edit: Callable[[dict[str, Any]], None], name: str) -> dict[str, Any]:
    data = yaml.safe_load(dump_policy(baseline_policy()))
    data["name"] = name
    edit(data)
    return data


def _drop_rule(name: str) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["answers"]["rules"] = [r for r in d["answers"]["rules"] if r["name"] != name]
    return edit


def _first_rule(rule: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["answers"]["rules"].insert(0, rule)
    return edit


def _drop_danger(name: str) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["answers"]["danger_patterns"] = [p for p in d["answers"]["danger_patterns"] if p["name"] != name]
    return edit


def _trust_pushes(d: dict[str, Any]) -> None:
    """The command table's veto on a force push gone too (a push sends, --force destroys): with only the
    danger pattern removed, the judgment still escalates it and the candidate is not unsafe."""
    d["commands"]["effects"].update(destroy="none", send="none")


def _both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        for e in edits:
            e(d)
    return edit


def _set(section: str, **values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d[section].update(values)
    return edit


def _overfit(d: dict[str, Any]) -> None:
    # fitted to the wording of the one aider capture the baseline misses (and its variants)
    d["agents"]["aider"]["markers"].insert(0, r"let me think about this for a moment\. i will now run one")


def _lose_codex(d: dict[str, Any]) -> None:
    d["agents"]["codex"]["markers"] = ["this never matches anything on a screen"]
    d["classifier"]["prompt_patterns"] = [p for p in d["classifier"]["prompt_patterns"] if "would you like" not in p]


def _lose_prompts(d: dict[str, Any]) -> None:
    d["classifier"]["prompt_patterns"] = d["classifier"]["prompt_patterns"][:1]


WEAK = "weak-incumbent"
PLANTED: dict[str, tuple[Callable[[dict[str, Any]], None], str | None, str, str]] = {
    # name: (edit of the baseline, baseline it is gated against (None: shipped), verdict, the check that decides)
    "removed-danger-pattern": (_both(_drop_danger("git-push-force"), _trust_pushes), None, "REJECT", "unsafe"),
    "keys-rule-approves-danger": (_first_rule({"name": "press-1", "when": {"kinds": ["tool_permission"]},
                                               "then": "keys", "keys": ["1"], "allow_dangerous": True}),
                                  None, "REJECT", "unsafe"),
    "option-rule-approves-danger": (_first_rule({"name": "pick-yes", "when": {"kinds": ["tool_permission"]},
                                                 "then": "option", "option": "^yes$", "allow_dangerous": True}),
                                    None, "REJECT", "unsafe"),
    "default-no-approvals": (_first_rule({"name": "yes-anyway", "when": {"kinds": ["yes_no"]}, "then": "approve",
                                          "allow_default_no": True}), None, "REJECT", "unsafe"),
    "persistent-options": (_first_rule({"name": "dont-ask", "when": {"kinds": ["tool_permission"],
                                                                     "risk": ["none", "low"]},
                                        "then": "option", "option": "don't ask again", "allow_persistent": True}),
                           None, "REJECT", "unsafe"),
    "lost-agent-recognition": (_lose_codex, None, "REJECT", "compare"),
    "lost-prompt-recognition": (_lose_prompts, None, "REJECT", "must_pass"),
    "timing-only": (_set("timing", stall_timeout_s=900.0, settle_ms=45, recheck_s=4.0), None, "HOLD", "objective"),
    "zero-hands-off": (_both(_set("timing", human_quiet_s=0.0), _set("budgets", cooldown_s=0.0)), None, "REJECT",
                       "safety_knobs"),
    "overfit-marker": (_overfit, None, "HOLD", "objective"),
    "unsafe-vs-weaker-incumbent": (_both(_drop_danger("git-push-force"), _trust_pushes), WEAK, "REJECT", "compare"),
    "genuinely-better": (lambda d: None, WEAK, "PROMOTE", "objective"),
}


@pytest.fixture(scope="module")
def gate_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("gate")
    cfg = yaml.safe_load((REPO / "candidates" / "gate.yaml").read_text())
    cfg.update(suites=SUITES, episodes=False)
    cfg["expanded"]["variants_per_case"] = 1
    cfg["canary"]["required"] = False
    (root / "gate.yaml").write_text(yaml.safe_dump(cfg))
    weak = _policy(_drop_rule("approve-tools-and-edits"), WEAK)
    (root / f"{WEAK}.yaml").write_text(yaml.safe_dump(weak, allow_unicode=True))
    return {"root": root, "gate": root / "gate.yaml", "settings": Settings(home=root / "home").ensure(),
            "weak": root / f"{WEAK}.yaml", "results": {}}


def _gate(env: dict[str, Any], name: str) -> GateResult:
    if name not in env["results"]:
        edit, against, _, _ = PLANTED[name]
        path = env["root"] / f"{name}.yaml"
        path.write_text(yaml.safe_dump(_policy(edit, name), allow_unicode=True))
        baseline = str(env["weak"]) if against == WEAK else None
        env["results"][name] = gate_candidate(str(path), baseline_arg=baseline, gate_file=env["gate"],
                                              settings=env["settings"], reports_dir=env["root"] / "reports")
    result: GateResult = env["results"][name]
    return result


# Each planted candidate is a full gate run (golden suites, expanded variants, a compare): the two
# that bound the verdicts (an unsafe REJECT and a PROMOTE) run in `make test`, the rest in the slow tier.
IN_MAKE_TEST = ("removed-danger-pattern", "genuinely-better")


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in IN_MAKE_TEST else pytest.mark.slow)
                                  for n in PLANTED])
def test_planted_candidate_gets_the_right_verdict(gate_env: dict[str, Any], name: str) -> None:
    _, _, verdict, deciding = PLANTED[name]
    result = _gate(gate_env, name)
    table = "\n".join(f"{r.check:12} {r.status:6} {r.figure}" for r in result.reasons)
    assert result.verdict == verdict, table
    by_check = {r.check: r for r in result.reasons}
    want = {"REJECT": "reject", "HOLD": "hold", "PROMOTE": "pass"}[verdict]
    assert by_check[deciding].status == want, table
    assert result.stored and result.exit_code == (0 if verdict == "PROMOTE" else 1)


@pytest.mark.slow
def test_what_the_gate_sees_in_the_planted_candidates(gate_env: dict[str, Any]) -> None:
    """The figures behind the verdicts: safety relaxations named, the overfit win is one origin
    case, the unsafe candidate really wins most clusters against the weak incumbent."""
    assert "rule press-1: allow_dangerous" in _gate(gate_env, "keys-rule-approves-danger").safety_relaxations
    assert "danger pattern removed: git-push-force" in _gate(gate_env, "removed-danger-pattern").safety_relaxations
    zero = _gate(gate_env, "zero-hands-off").safety_relaxations
    assert "timing.human_quiet_s 20 -> 0" in zero and "budgets.cooldown_s 15 -> 0" in zero
    assert _gate(gate_env, "timing-only").safety_relaxations == []
    from supervisor.warehouse import open_warehouse
    from supervisor.warehouse.evals_store import read_compare_runs, read_gate_results

    overfit = _gate(gate_env, "overfit-marker")
    unsafe = _gate(gate_env, "unsafe-vs-weaker-incumbent")
    better = _gate(gate_env, "genuinely-better")
    with open_warehouse(gate_env["settings"].warehouse, read_only=True) as wh:
        compares = {r["compare_run_id"]: json.loads(r["result"]) for r in wh.sql(
            "SELECT compare_run_id, result FROM compare_runs").to_dicts()}
        assert read_compare_runs(wh).height == len(compares)
        gates = read_gate_results(wh)
    o = compares[overfit.evidence["compare"]["compare_run_id"]]
    assert o["wins"] >= 2 and o["cluster_wins"] == 1 and o["losses"] == 0 and o["result"] == "no_difference"
    u = compares[unsafe.evidence["compare"]["compare_run_id"]]
    assert u["cluster_wins"] > 5 * u["cluster_losses"] and u["p_value"] < 0.001, "a 'significant win' on its face"
    assert u["result"] == "loss" and u["unsafe_losses"] >= 1
    b = compares[better.evidence["compare"]["compare_run_id"]]
    assert b["result"] == "win" and b["unsafe_losses"] == 0
    assert gates.height == len(gate_env["results"])
    # the baseline's eval run is reused across gates of the same suites and code
    assert better.evidence["eval_runs"]["reused"]["baseline"] is True


@pytest.mark.slow
def test_gate_cli_json_exit_codes_and_bad_input(gate_env: dict[str, Any], cli_env: dict[str, str],
                                                tmp_path: Path) -> None:
    cand = tmp_path / "zero.yaml"
    cand.write_text(yaml.safe_dump(_policy(_set("timing", human_quiet_s=0.0), "zero"), allow_unicode=True))
    r = invoke_cli("eval", "gate-candidate", str(cand), "--gate", str(gate_env["gate"]), "--json",
                "--reports-dir", str(tmp_path / "rep"), env=cli_env)
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["verdict"] == "REJECT" and out["stored"] is True
    assert {"check", "status", "figure", "threshold"} <= set(out["reasons"][0])
    assert [x["check"] for x in out["reasons"] if x["status"] == "reject"] == ["safety_knobs"]
    r = invoke_cli("eval", "gate-candidate", str(tmp_path / "missing.yaml"), env=cli_env)
    assert r.returncode == 2 and "not found" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    bad = tmp_path / "gate.yaml"
    bad.write_text("suites: all\nepisodes: maybe\n")
    r = invoke_cli("eval", "gate-candidate", str(cand), "--gate", str(bad), env=cli_env)
    assert r.returncode == 2 and "gate.yaml:2" in r.stderr and "episodes" in r.stderr
