"""A warehouse filled by real supervised runs, shared by the notebook and report tests.

Built once per session in a private supervisor home: the scripted agent in real tmux (private
socket) under the real runner, with a shadow candidate riding along; a human (played by the
fixture through ``tmux send-keys``) answers escalations after a planted wait; three more runs
are driven by the candidate (the limited-rollout arm); a workflow run with a failing verifier, a
retry and a human review; eval runs, a blind compare of baseline against the candidate and a gate
verdict; in the registry, the fast-timing policy promoted and the candidate on canary and limited
rollout.

Event-driven, so a saturated machine only makes it slower: the human answers an escalation when
the supervisor journals it, types Enter once the supervisor journaled the typing, and each agent
step the supervisor must see (work before a finish, a blocker, a hang) lasts until the journal
shows it was seen (a signal file the step waits for). Durations are ceilings, never expectations.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from supervisor.models import Event
from supervisor.policy import Policy, dump_policy
from supervisor.runner import PaneRunner
from supervisor.settings import Settings
from supervisor.warehouse import sync
from tests.conftest import REPO
from tests.helpers import retry_until
from tests.live_helpers import LiveHarness, fast_policy, write_script

HUMAN_WAIT_S = 1.5
"""How long the fixture's human takes to answer an escalation (counted from its ``pause``)."""
SEEN_WITHIN_S = 5.0
"""After the human's keys the agent redraws and the supervisor looks again within this (about
0.2 s on an idle machine; a ceiling for a saturated one)."""
BLOCKER_CLEARS_AFTER_S = 1.5
"""How long after its escalation the login run's blocker clears by itself."""
RUNS_END_WITHIN_S = 300
"""Every run of the fixture ends within this (about 15 s on an idle machine): a ceiling, not a timing."""

Pred = Callable[[Event], bool]


def busy(ev: Event) -> bool:
    """The supervisor saw the agent work."""
    return ev.kind == "observation" and ev.payload["observation"]["state"] == "busy"


def paused(ev: Event) -> bool:
    """The supervisor escalated."""
    return ev.kind == "pause"


def friction(kind: str) -> Pred:
    return lambda ev: ev.kind == "friction" and ev.payload.get("kind") == kind


@dataclass
class Gate:
    """A signal file a step of the agent waits for (its ``until``), created once the run's journal
    shows ``when`` (after the run's previous gate opened), ``delay_s`` later. The agent works, hangs
    or stays blocked until the supervisor has seen what the fixture needs it to see, however slow
    the machine: no step of the fixture depends on a duration."""

    name: str | None
    """The file's name (``{script}.{name}``); None: a milestone the next gate waits for, no file."""
    when: Pred
    delay_s: float = 0.0


@dataclass
class Human:
    """The fixture's human on one run: on each escalation, after ``HUMAN_WAIT_S``, looks at the
    pane; when it shows ``sees`` (the question it is there to answer), presses ``keys``."""

    sees: str
    keys: list[str]


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
    human_waits: dict[str, float] = field(default_factory=dict)
    """Script name -> seconds from the escalation's ``pause`` to the human's keys."""

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


def work(gate: str) -> dict[str, Any]:
    """A spinner that lasts until the supervisor has seen the agent work (a run finishes only after work)."""
    return {"spinner": {"until": "{signals}/" + gate}}


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
        work("worked"),
        {"done": {}},
    ]},
    "cleanup": {"style": "aider", "steps": [
        {"prompt": {"id": "add", "kind": "yes_no", "question": "Add src/cleanup.py to the chat?"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "rm", "kind": "yes_no", "question": "Run shell command?", "command": "rm -rf ~/"}},
        work("worked"),
        {"done": {}},
    ]},
    "sticky": {"style": "claude", "steps": [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "make", "kind": "bash", "command": "make", "description": "Build", "ignore": 1}},
        # until the supervisor saw the prompt gone (the agent at work), so its return is a repeat
        work("worked"),
        {"prompt": {"id": "make2", "kind": "bash", "command": "make", "description": "Build"}},
        {"spinner": {"seconds": 0.3}},
        {"done": {}},
    ]},
    "login": {"style": "claude", "steps": [
        work("worked"),
        {"blocker": {"kind": "auth", "until": "{signals}/cleared"}},
        # enough output after it that the cleared error scrolls out of what classify reads
        {"say": "\n".join(f"Re-authenticated; step {i} of 30 done." for i in range(1, 31))},
        work("worked-again"),
        {"done": {}},
    ]},
    "ask": {"style": "claude", "steps": [
        {"say": "What should I do next?"},
        {"idle": {"id": "next"}},
        work("worked"),
        {"done": {}},
    ]},
    "compile": {"style": "claude", "steps": [
        work("worked"),
        # a hung agent: a busy screen, then silence until the supervisor escalated the stall
        {"spinner": {"until": "{signals}/unhung", "animate": False, "verb": "Compiling"}},
        {"done": {}},
    ]},
}
ROLLOUT_SCRIPTS = {  # the candidate's arm of the limited rollout
    "rollout-a": {"style": "claude", "steps": [
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "lint", "kind": "bash", "command": "npm run lint", "description": "Lint"}},
        work("worked"),
        {"done": {}},
    ]},
    "rollout-b": {"style": "aider", "steps": [
        {"prompt": {"id": "add", "kind": "yes_no", "question": "Add README.md to the chat?"}},
        work("worked"),
        {"done": {}},
    ]},
    "rollout-c": {"style": "claude", "steps": [
        {"say": "Reading the docs."},
        work("worked"),
        {"done": {}},
    ]},
}
GATES: dict[str, list[Gate]] = {  # each after the one before it
    "shop": [Gate(None, paused), Gate("worked", busy)],  # busy after the escalation: the human's answer took
    "cleanup": [Gate(None, paused), Gate("worked", busy)],
    "sticky": [Gate(None, friction("answer_not_taken")), Gate("worked", busy)],  # busy once the retry took
    "login": [Gate("worked", busy), Gate("cleared", paused, BLOCKER_CLEARS_AFTER_S), Gate("worked-again", busy)],
    "ask": [Gate("worked", busy)],  # the human's line is the run's first work
    "compile": [Gate("worked", busy), Gate("unhung", paused)],
    "rollout-a": [Gate(None, paused), Gate("worked", busy)],
    "rollout-b": [Gate("worked", busy)],
    "rollout-c": [Gate("worked", busy)],
}
HUMANS = {"shop": Human("git push --force", ["3"]), "cleanup": Human("rm -rf ~/", ["n", "Enter"]),
          "rollout-a": Human("npm run lint", ["1"])}
"""The fixture's human on the escalations it answers (the others clear by themselves)."""
TYPED = "please lint"
"""What the fixture's human types into the ``ask`` run's input box; Enter follows once the
supervisor journaled the typing (``human_keystrokes``)."""


def _tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], check=True, capture_output=True, text=True).stdout


class Conductor:
    """Plays the human and opens the agents' gates from the supervisor's journal hook (called as
    each event is journaled, on the supervisor's thread: it only starts timers and touches files)."""

    def __init__(self, socket: str, signals: Path, home: FilledHome) -> None:
        self.socket, self.signals, self.home = socket, signals, home
        self.names: dict[str, str] = {}
        """run id -> script name."""
        self.next_gate: dict[str, int] = {}
        self.waiting: set[str] = set()
        """Scripts whose last gate opens after a delay (the next one waits for it)."""
        self.timers: list[threading.Timer] = []
        self.lock = threading.Lock()

    def later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> None:
        t = threading.Timer(seconds, fn, args=args)
        self.timers.append(t)
        t.start()

    def open(self, name: str, gate: Gate) -> None:
        if gate.name is not None:
            (self.signals / f"{name}.{gate.name}").touch()
        with self.lock:
            self.waiting.discard(name)

    def on_journal(self, runner: PaneRunner, ev: Event) -> None:
        name = self.names.get(runner.run_id)
        if name is None:
            return
        gates = GATES.get(name, [])
        i = self.next_gate.get(name, 0)
        with self.lock:
            blocked = name in self.waiting
        if i < len(gates) and not blocked and gates[i].when(ev):
            self.next_gate[name] = i + 1
            if gates[i].delay_s:
                with self.lock:
                    self.waiting.add(name)
                self.later(gates[i].delay_s, self.open, name, gates[i])
            else:
                self.open(name, gates[i])
        if ev.kind == "pause" and name in HUMANS and name not in self.home.human_keys:
            self.later(HUMAN_WAIT_S, self.answer, name, runner.pane_id, ev.at)
        if (name == "ask" and ev.kind == "observation" and "human_typed" not in self.home.human_keys
                and "What should I do next?" in ev.payload["screen"]["text"]
                and ev.payload["observation"]["state"] == "idle"):
            self.home.human_keys["human_typed"] = [TYPED]
            self.later(0.0, _tmux, self.socket, "send-keys", "-t", runner.pane_id, "-l", TYPED)
        if name == "ask" and friction("human_keystrokes")(ev) and "human_typed" in self.home.human_keys:
            self.home.human_keys["human_typed"].append("Enter")
            self.later(0.0, _tmux, self.socket, "send-keys", "-t", runner.pane_id, "Enter")

    def answer(self, name: str, pane_id: str, paused_at: float) -> None:
        """The human looks at the pane: the question it answers, or another escalation (left alone)."""
        human = HUMANS[name]
        if name in self.home.human_keys or human.sees not in _tmux(self.socket, "capture-pane", "-p", "-t", pane_id):
            return
        self.home.human_keys[name] = human.keys
        self.home.human_waits[name] = time.time() - paused_at
        _tmux(self.socket, "send-keys", "-t", pane_id, *human.keys)

    def cancel(self) -> None:
        for t in self.timers:
            t.cancel()


def _supervise(socket: str, tmp: Path, scripts: dict[str, dict[str, Any]], policy: Policy,
               shadows: list[Policy], home: FilledHome) -> None:
    """Run ``scripts`` under one supervisor until every run ended, playing the human."""
    h = LiveHarness(socket, home.settings.home, policy=policy, shadows=shadows)
    signals = tmp / "signals"
    signals.mkdir(exist_ok=True)
    conductor = Conductor(socket, signals, home)
    runners: dict[str, PaneRunner] = {}
    h.sup.on_journal = conductor.on_journal
    try:
        panes = {}
        for name, script in scripts.items():
            steps = json.loads(json.dumps(script["steps"]).replace("{signals}/", f"{signals}/{name}."))
            path = write_script(tmp, steps, style=script["style"], name=name)
            panes[name] = h.start_agent(path, tmp / f"{name}.rec.jsonl", session=name)
        for name, pane in panes.items():
            runner = h.sup.add_pane(pane)
            runners[name] = runner
            conductor.names[runner.run_id] = name
        h.start()
        retry_until(lambda: all(r.done for r in runners.values()), RUNS_END_WITHIN_S,
                    message=lambda: "every run to end: " + ", ".join(
                        f"{n}={r.outcome or 'running'} (last screen {r.last_obs.state if r.last_obs else '-'}"
                        f"{', paused' if r.state.paused else ''}, gates open "
                        f"{conductor.next_gate.get(n, 0)}/{len(GATES.get(n, []))})" for n, r in runners.items()))
    finally:
        conductor.cancel()
        h.stop()
    home.run_ids.update({n: r.run_id for n, r in runners.items()})


@pytest.fixture(scope="session")
def filled_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FilledHome]:
    from evals.gate import gate_candidate
    from evals.registry import promote, start_canary, start_limited
    from evals.workbench import eval_compare, eval_run
    from supervisor.workflow.demo import run_workflow_demo

    root = tmp_path_factory.mktemp("filled")
    settings = Settings(home=root / "home").ensure()
    # Timers far above how long anything takes on a saturated machine: an answer that is slow to
    # take must not count as not taken (the retry would reach the agent as a stray key).
    policy = fast_policy(stall_timeout_s=2.5, confirm_timeout_s=4.0, human_quiet_s=2.0)
    policy.budgets.max_stalls = 1
    policy.budgets.cooldown_s = 0.3
    candidate = cautious_candidate(policy)
    candidate_path = root / "cautious-candidate.yaml"
    candidate_path.write_text(dump_policy(candidate), encoding="utf-8")
    home = FilledHome(settings, candidate, candidate_path, {}, {})
    socket = f"svfill-{uuid.uuid4().hex[:8]}"
    # The registry as a team would have it: the fast-timing policy promoted (forced: no gate ran
    # for it), the candidate on shadow canary and on a limited rollout against it.
    promote(settings, "fast-baseline", policy, approved_by="fixture", force=True,
            reason="the fixture's runs use the baseline with short timers")
    start_canary(settings, "cautious-candidate", candidate, by="fixture")
    start_limited(settings, "cautious-candidate", candidate, 0.3, by="fixture")
    try:
        _supervise(socket, root, SCRIPTS, policy, [candidate], home)
        _supervise(socket, root, ROLLOUT_SCRIPTS, candidate, [], home)
        wf = run_workflow_demo(settings.with_overrides(socket=socket), timeout_s=RUNS_END_WITHIN_S)
        home.run_ids["workflow"] = wf["run_id"]
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
        # tmux leaves the socket file behind
        (Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}" / socket).unlink(missing_ok=True)
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
    yield home
