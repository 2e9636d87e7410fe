"""A warehouse filled by real supervised runs, shared by the notebook and report tests.

Built once per session in a private supervisor home: the scripted agent in real tmux (private
socket) under the real runner, with a shadow candidate riding along; a human (played by the
fixture through ``tmux send-keys``) answers escalations after a planted wait; three more runs
are driven by the candidate (the limited-rollout arm); a workflow run with a failing verifier, a
retry and a human review; eval runs, a blind compare of baseline against the candidate and a gate
verdict; in the registry, the fast-timing policy promoted and the candidate on canary and limited
rollout.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from supervisor.policy import Policy, dump_policy
from supervisor.runner import PaneRunner
from supervisor.settings import Settings
from supervisor.warehouse import sync
from tests.conftest import REPO
from tests.helpers import retry_until
from tests.live_helpers import LiveHarness, fast_policy, write_script

HUMAN_WAIT_S = 1.5
"""How long the fixture's human takes to answer an escalation."""
HUMAN_TYPING_S = 1.5
"""How long the fixture's human leaves a typed line in the agent's input box before Enter (the
supervisor notices typing by seeing the box change, so it must have a look in between)."""
WORK_S = 1.5
"""The agent's last stretch of work before it finishes, in runs with no prompt to answer."""
RUNS_END_WITHIN_S = 240
"""Every run of the fixture ends within this (about 10 s on an idle machine)."""


@dataclass
class FilledHome:
    """The filled supervisor home and what the fixture knows about it."""

    settings: Settings
    candidate: Policy
    candidate_path: Path
    run_ids: dict[str, str]
    """Script name -> run id."""
    human_keys: dict[str, list[str]]
    """Script name -> the keys the fixture's human pressed on its escalation."""

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["SUPERVISOR_HOME"] = str(self.settings.home)
        env.pop("SUPERVISOR_WAREHOUSE", None)
        return env


def cautious_candidate(acting: Policy) -> Policy:
    """A candidate that escalates every tool and edit permission instead of approving it: it
    disagrees with ``acting`` on many screens and never approves anything new."""
    pol = acting.model_copy(deep=True)
    pol.answers.rules = [r for r in pol.answers.rules if r.name != "approve-tools-and-edits"]
    pol.name = "cautious-candidate"
    return pol


SCRIPTS: dict[str, dict[str, Any]] = {
    "shop": {"style": "claude", "steps": [
        {"prompt": {"id": "trust", "kind": "trust_files"}},
        {"spinner": {"seconds": 0.4, "verb": "Reading files"}},
        {"prompt": {"id": "tests", "kind": "bash", "command": "npm test", "description": "Run the test suite"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "edit", "kind": "edit", "file": "src/cart.ts"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "push", "kind": "bash", "command": "git push --force origin main",
                    "description": "Force-push the fix", "on_decline": [{"say": "Not pushing."}]}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ]},
    "cleanup": {"style": "aider", "steps": [
        {"prompt": {"id": "add", "kind": "yes_no", "question": "Add src/cleanup.py to the chat?"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "rm", "kind": "yes_no", "question": "Run shell command?", "command": "rm -rf ~/"}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ]},
    "sticky": {"style": "claude", "steps": [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "make", "kind": "bash", "command": "make", "description": "Build", "ignore": 1}},
        # long enough that a loaded machine still observes the prompt gone before it comes back
        {"spinner": {"seconds": 3.0}},
        {"prompt": {"id": "make2", "kind": "bash", "command": "make", "description": "Build"}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ]},
    # Spinners before a finish last WORK_S: on a saturated machine the supervisor still sees the
    # agent work (a run finishes only after work), however late its next look comes.
    "login": {"style": "claude", "steps": [
        {"spinner": {"seconds": WORK_S}},
        {"blocker": {"kind": "auth", "seconds": 1.5}},
        {"spinner": {"seconds": 0.3}},
        # enough output after it that the cleared error scrolls out of what classify reads
        {"say": "\n".join(f"Re-authenticated; step {i} of 30 done." for i in range(1, 31))},
        {"spinner": {"seconds": WORK_S}},
        {"done": {}},
    ]},
    "ask": {"style": "claude", "steps": [
        {"say": "What should I do next?"},
        {"idle": {"id": "next"}},
        {"spinner": {"seconds": WORK_S}},
        {"done": {}},
    ]},
    "compile": {"style": "claude", "steps": [
        {"spinner": {"seconds": 0.3}},
        {"spinner": {"seconds": 3.0, "animate": False, "verb": "Compiling"}},
        {"done": {}},
    ]},
}
HUMAN_ANSWERS = {"shop": ["3"], "cleanup": ["n", "Enter"], "rollout-a": ["1"], "compile": None, "login": None}
"""The fixture's human: keys pressed on each script's escalation (None: lets it clear by itself)."""
ROLLOUT_SCRIPTS = {  # the candidate's arm of the limited rollout
    "rollout-a": {"style": "claude", "steps": [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "lint", "kind": "bash", "command": "npm run lint", "description": "Lint"}},
        {"spinner": {"seconds": WORK_S}},
        {"done": {}},
    ]},
    "rollout-b": {"style": "aider", "steps": [
        {"prompt": {"id": "add", "kind": "yes_no", "question": "Add README.md to the chat?"}},
        {"spinner": {"seconds": WORK_S}},
        {"done": {}},
    ]},
    "rollout-c": {"style": "claude", "steps": [
        {"say": "Reading the docs."},
        {"spinner": {"seconds": WORK_S}},
        {"done": {}},
    ]},
}


def _tmux(socket: str, *args: str) -> None:
    subprocess.run(["tmux", "-L", socket, *args], check=True, capture_output=True)


def _supervise(socket: str, home: Path, tmp: Path, scripts: dict[str, dict[str, Any]], policy: Policy,
               shadows: list[Policy], run_ids: dict[str, str], human_keys: dict[str, list[str]]) -> None:
    """Run ``scripts`` under one supervisor until every run ended, playing the human."""
    h = LiveHarness(socket, home, policy=policy, shadows=shadows)
    runners: dict[str, PaneRunner] = {}
    timers: list[threading.Timer] = []

    def on_journal(runner: PaneRunner, ev: Any) -> None:
        name = next((n for n, r in runners.items() if r is runner), None)
        if name is None:
            return
        if ev.kind == "pause" and HUMAN_ANSWERS.get(name) and name not in human_keys:
            keys = HUMAN_ANSWERS[name] or []
            human_keys[name] = keys
            t = threading.Timer(HUMAN_WAIT_S, _tmux, args=(socket, "send-keys", "-t", runner.pane_id, *keys))
            timers.append(t)
            t.start()
        if (name == "ask" and ev.kind == "observation" and "human_typed" not in human_keys
                and "What should I do next?" in ev.payload["screen"]["text"]
                and ev.payload["observation"]["state"] == "idle"):
            human_keys["human_typed"] = ["please lint", "Enter"]
            t = threading.Timer(0.3, lambda: (_tmux(socket, "send-keys", "-t", runner.pane_id, "-l", "please lint"),
                                              time.sleep(HUMAN_TYPING_S),
                                              _tmux(socket, "send-keys", "-t", runner.pane_id, "Enter")))
            timers.append(t)
            t.start()

    h.sup.on_journal = on_journal
    try:
        panes = {}
        for name, script in scripts.items():
            path = write_script(tmp, script["steps"], style=script["style"], name=name)
            panes[name] = h.start_agent(path, tmp / f"{name}.rec.jsonl", session=name)
        for name, pane in panes.items():
            runners[name] = h.sup.add_pane(pane)
        h.start()
        retry_until(lambda: all(r.done for r in runners.values()), RUNS_END_WITHIN_S,
                    message=lambda: "every run to end: " + ", ".join(
                        f"{n}={r.outcome or 'running'} (last screen {r.last_obs.state if r.last_obs else '-'}"
                        f"{', paused' if r.state.paused else ''})" for n, r in runners.items()))
    finally:
        for t in timers:
            t.cancel()
        h.stop()
    run_ids.update({n: r.run_id for n, r in runners.items()})


@pytest.fixture(scope="session")
def filled_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FilledHome]:
    from evals.gate import gate_candidate
    from evals.registry import promote, start_canary, start_limited
    from evals.workbench import eval_compare, eval_run
    from supervisor.workflow.demo import run_workflow_demo

    root = tmp_path_factory.mktemp("filled")
    settings = Settings(home=root / "home").ensure()
    policy = fast_policy(stall_timeout_s=1.2, confirm_timeout_s=0.8, human_quiet_s=2.0)
    policy.budgets.max_stalls = 1
    policy.budgets.cooldown_s = 0.3
    candidate = cautious_candidate(policy)
    candidate_path = root / "cautious-candidate.yaml"
    candidate_path.write_text(dump_policy(candidate), encoding="utf-8")
    run_ids: dict[str, str] = {}
    human_keys: dict[str, list[str]] = {}
    socket = f"svfill-{uuid.uuid4().hex[:8]}"
    # The registry as a team would have it: the fast-timing policy promoted (forced: no gate ran
    # for it), the candidate on shadow canary and on a limited rollout against it.
    promote(settings, "fast-baseline", policy, approved_by="fixture", force=True,
            reason="the fixture's runs use the baseline with short timers")
    start_canary(settings, "cautious-candidate", candidate, by="fixture")
    start_limited(settings, "cautious-candidate", candidate, 0.3, by="fixture")
    try:
        _supervise(socket, settings.home, root, SCRIPTS, policy, [candidate], run_ids, human_keys)
        _supervise(socket, settings.home, root, ROLLOUT_SCRIPTS, candidate, [], run_ids, human_keys)
        wf = run_workflow_demo(settings.with_overrides(socket=socket), timeout_s=60)
        run_ids["workflow"] = wf["run_id"]
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    sync(settings)
    reports = root / "eval-reports"
    eval_run("claude", "baseline", settings=settings, reports_dir=reports, episodes=False)
    eval_run("claude", str(candidate_path), settings=settings, reports_dir=reports, episodes=False)
    eval_compare("baseline", str(candidate_path), suite_spec="claude", settings=settings, reports_dir=reports, seed=7)
    gate_cfg = yaml.safe_load((REPO / "candidates" / "gate.yaml").read_text(encoding="utf-8"))
    gate_cfg.update(suites="claude", episodes=False)
    gate_cfg["expanded"]["variants_per_case"] = 1
    (root / "gate.yaml").write_text(yaml.safe_dump(gate_cfg), encoding="utf-8")
    gate_candidate(str(candidate_path), gate_file=root / "gate.yaml", settings=settings, reports_dir=reports)
    yield FilledHome(settings, candidate, candidate_path, run_ids, human_keys)
