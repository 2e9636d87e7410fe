"""The demo's second half (``make demo``): the workbench walked from recorded friction to a promoted
policy and back, every step a real ``supervisor`` command printed as typed and run as printed.

1. **Friction.** Scripted Claude-style agents ask "Which database should the service use?"; the
   policy in force escalates it (no rule covers a free question) and the demo plays the human who
   picks SQLite every time (Down, Enter in the pane, as a person would).
2. ``supervisor eval propose --objective reduce_friction`` finds that pattern and writes one
   candidate: a rule for exactly that question choosing SQLite.
3. ``supervisor eval gate-candidate`` says HOLD: no live evidence yet.
4. ``supervisor eval canary start``: more runs carry the candidate as a shadow (it decides on every
   screen, never acts); ``supervisor eval canary limited --fraction 0.5`` lets it drive half of the
   next runs (chosen by run id).
5. ``supervisor eval gate-candidate`` again: PROMOTE, without ``--force``.
6. ``supervisor eval promote-candidate``; a new run uses it (the question is answered, nobody waits).
7. ``supervisor eval rollback``: new runs go back to the previous policy.

Runs are supervised in this process (one :class:`~supervisor.runner.Supervisor` per batch, on the
demo's private tmux server); the commands run in this process too, through the real CLI, so their
output is what a user sees. :func:`walk` returns what happened for the demo's summary and tests.
"""

from __future__ import annotations

import contextlib
import shlex
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evals.agent import agent_command
from supervisor.errors import PaneGone
from supervisor.ids import new_id
from supervisor.runner import PaneRunner, RunConfig, Supervisor
from supervisor.settings import Settings

QUESTION = "Which database should the service use?"
HUMAN_CHOICE = "SQLite"
DB_SCRIPT: dict[str, Any] = {
    "style": "claude",
    "cwd": "/home/dev/shop",
    "steps": [
        {"say": "I'll add persistence to the order service."},
        {"spinner": {"seconds": 0.5, "verb": "Reading files"}},
        {"say": "The service keeps orders in memory (src/orders.ts); it needs a database."},
        {"spinner": {"seconds": 0.4, "verb": "Reading src/orders.ts"}},
        {"say": "Orders, customers and payments each become a table."},
        {"spinner": {"seconds": 0.4, "verb": "Thinking"}},
        {"prompt": {"id": "db", "kind": "question", "question": QUESTION}},
        {"spinner": {"seconds": 0.5, "verb": "Writing the schema"}},
        {"say": "Schema written: three tables and a migration."},
        {"spinner": {"seconds": 0.4, "verb": "Updating the repository layer"}},
        {"say": "The repository layer now reads and writes the database."},
        {"spinner": {"seconds": 0.4, "verb": "Running the tests"}},
        {"say": "Persistence added: orders are stored and the tests pass."},
        {"done": {}},
    ],
}
FRICTION_RUNS = 4
"""Runs whose escalation a human answers before ``propose`` looks (it needs 3 alike by default)."""
CANARY_RUNS = 5
"""Runs that carry the candidate as a shadow (gate.yaml asks for 50 shadow decisions in 3 runs at
least; a run of the script gives about 7, and the limited rollout's control runs add theirs)."""
MAX_CANARY_RUNS = 20
"""The canary phase stops here even short of the gate's minimum (the gate then says HOLD)."""
RUN_TIMEOUT_S = 90.0
"""A batch of runs ends well within this (a few seconds on an idle machine): a ceiling."""


@dataclass
class RunRecord:
    """One supervised run of the walk: which policy acted, which rode along, who answered."""

    run_id: str
    policy_id: str
    shadow_ids: list[str]
    outcome: str | None
    escalated: bool
    human_answered: bool


@dataclass
class WalkResult:
    """What the walk did, step by step (the demo's summary and the tests read it)."""

    candidate_id: str | None = None
    candidate_policy_id: str | None = None
    baseline_policy_id: str = ""
    commands: list[tuple[str, int]] = field(default_factory=list)
    """Every command run, as printed, with its exit code."""
    verdicts: list[str] = field(default_factory=list)
    """The gate's verdicts, in order."""
    friction: list[RunRecord] = field(default_factory=list)
    canary: list[RunRecord] = field(default_factory=list)
    limited: list[RunRecord] = field(default_factory=list)
    promoted: RunRecord | None = None
    after_rollback_policy_id: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (self.candidate_id is not None and self.verdicts[-1:] == ["PROMOTE"]
                and self.promoted is not None and self.promoted.policy_id == self.candidate_policy_id
                and not self.promoted.escalated and self.after_rollback_policy_id == self.baseline_policy_id
                and all(code == 0 for cmd, code in self.commands if "gate-candidate" not in cmd))


class _Human:
    """Plays the person at the panes: an escalated database question is answered with SQLite by
    moving the highlight down (Down) and, once the supervisor has looked at the moved highlight,
    choosing it (Enter), through ``tmux send-keys`` as a person's keyboard would."""

    def __init__(self, surface: Any) -> None:
        self.surface = surface
        self.moved: dict[str, int] = {}
        self.answered: set[str] = set()
        self.observations: dict[str, int] = {}

    def seen(self, runner: PaneRunner, kind: str) -> None:
        if kind == "observation":
            self.observations[runner.run_id] = self.observations.get(runner.run_id, 0) + 1

    def step(self, runner: PaneRunner) -> None:
        rid = runner.run_id
        if rid in self.answered or runner.done:
            return
        screen = runner.last_screen.text if runner.last_screen is not None else ""
        if rid not in self.moved:
            if runner.state.paused and QUESTION in screen:
                self.moved[rid] = self.observations.get(rid, 0)
                self.surface.send_keys(runner.pane_id, ["Down"])
        elif self.observations.get(rid, 0) > self.moved[rid]:
            self.answered.add(rid)
            self.surface.send_keys(runner.pane_id, ["Enter"])


class Walk:
    """The walk's state: one home, the demo's tmux server, a folder for scripts and agent records."""

    def __init__(self, settings: Settings, socket: str, say: Callable[[str], None], *,
                 cli_prefix: list[str] | None = None) -> None:
        from supervisor.surfaces.tmux import TmuxSurface

        self.settings = settings
        self.socket = socket
        self.say = say
        self.surface = TmuxSurface(socket)
        self.work = Path(tempfile.mkdtemp(prefix="sv-demo-walk-"))
        self.script = self.work / "db.yaml"
        self.script.write_text(yaml.safe_dump(DB_SCRIPT, allow_unicode=True, sort_keys=False), encoding="utf-8")
        self.cli_prefix = cli_prefix or []
        """Global options the printed commands need (``--home`` when the demo was given one)."""
        self.result = WalkResult()
        self.t0 = time.monotonic()

    # -- commands --------------------------------------------------------------------------------------
    def cli(self, *args: str) -> int:
        """Print ``$ supervisor ARGS`` (spelled as this shell runs it: ``.venv/bin/supervisor`` until it is
        on PATH) and run it through the real CLI in this process."""
        from supervisor.cli import main
        from supervisor.cli.hints import program

        shown = " ".join([program(), *(shlex.quote(a) for a in [*self.cli_prefix, *args])])
        self.say(f"\n$ {shown}")
        code = main.main([*self.cli_prefix, *args], standalone_mode=False)
        self.result.commands.append((shown, int(code or 0)))
        return int(code or 0)

    def gate(self, candidate: str) -> str:
        """Run the gate and read its verdict back from the warehouse, where it was stored."""
        from supervisor.warehouse import reader
        from supervisor.warehouse.evals_store import read_gate_results

        def stored() -> list[str]:
            if not self.settings.warehouse.exists():
                return []
            with reader(self.settings) as wh:
                return [str(v) for v in read_gate_results(wh, candidate_id=candidate)["verdict"].to_list()]

        before = len(stored())
        self.cli("eval", "gate-candidate", candidate, "--gate", demo_gate_file())
        after = stored()
        verdict = after[0] if len(after) > before else "NOT STORED"
        self.result.verdicts.append(verdict)
        return verdict

    # -- runs ------------------------------------------------------------------------------------------
    def runs(self, n: int, label: str) -> list[RunRecord]:
        """Start ``n`` scripted agents at once, each with the policies the registry gives a new run
        (promoted policy acting, candidates on canary riding along, a limited rollout's arm by run
        id), supervise them to the end of their turn, answering escalations as the human."""
        from evals.registry import policies_for_new_run

        human = _Human(self.surface)
        sup = Supervisor(self.surface, self.settings, RunConfig(policy=policies_for_new_run(self.settings, None).acting),
                         socket=self.socket)
        sup.on_journal = lambda runner, ev: human.seen(runner, ev.kind)
        runners: list[PaneRunner] = []
        try:
            for i in range(n):
                run_id = new_id("run_")
                choice = policies_for_new_run(self.settings, run_id)
                name = f"{label}-{i + 1}-{run_id[-4:].lower()}"
                pane = self._new_session(name)
                runners.append(sup.add_pane(pane, run_id=run_id, config=RunConfig(
                    policy=choice.acting, shadows=choice.shadows, turns=1)))

            def until() -> bool:
                for r in runners:
                    human.step(r)
                return all(r.done for r in runners)

            sup.run(until=until, timeout=RUN_TIMEOUT_S)
        finally:
            sup.close(final_sync=True)
            for r in runners:
                with contextlib.suppress(PaneGone):
                    self.surface.cmd("kill-session", "-t", r.pane_id)
        out = []
        for r in runners:
            started = next((e.payload for e in r.journal.events() if e.kind == "run_started"), {})
            out.append(RunRecord(run_id=r.run_id, policy_id=str(started.get("policy_id")),
                                 shadow_ids=list(started.get("shadow_policy_ids") or []), outcome=r.outcome,
                                 escalated=any(e.kind == "pause" for e in r.journal.events()),
                                 human_answered=r.run_id in human.answered))
        return out

    def _new_session(self, name: str) -> Any:
        """A tmux session for one scripted agent."""
        return self.surface.new_session(name, agent_command(self.script, self.work / f"{name}.jsonl"), width=100,
                                        height=30)

    def report_runs(self, rows: list[RunRecord], what: str) -> None:
        esc = sum(r.escalated for r in rows)
        by_human = sum(r.human_answered for r in rows)
        self.say(f"{self._at()} {len(rows)} runs {what}: {esc} escalated the database question"
                 + (f", the human chose {HUMAN_CHOICE} in {by_human}" if by_human else "")
                 + (f", {len(rows) - esc} answered it by policy" if len(rows) - esc else ""))

    def _at(self) -> str:
        return f"{time.monotonic() - self.t0:5.1f}s"


def walk(settings: Settings, socket: str, say: Callable[[str], None], *,
         cli_prefix: list[str] | None = None) -> WalkResult | None:
    """Walk the workbench loop on ``settings``' home (see the module's docstring); None when the
    home's warehouse cannot be opened (the demo's first half says how to rebuild it)."""
    from evals.registry import policies_for_new_run
    from supervisor.errors import WarehouseError
    from supervisor.warehouse import reader

    try:  # the walk reads and writes the warehouse at every step
        with reader(settings):
            pass
    except WarehouseError as exc:
        say(f"\nworkbench walk skipped: {exc.one_line()}")
        return None
    w = Walk(settings, socket, say, cli_prefix=cli_prefix)
    res = w.result
    res.baseline_policy_id = policies_for_new_run(settings, None).acting.policy_id
    say("\nworkbench: from recorded friction to a promoted policy (every command below is runnable as printed)")
    say(f"  candidates are written to {_candidates_dir()}")

    res.friction = w.runs(FRICTION_RUNS, "friction")
    w.report_runs(res.friction, "under the policy in force")

    if w.cli("eval", "propose", "--objective", "reduce_friction") != 0:
        return _done(w)
    from evals.candidates import list_candidate_ids, load_candidate

    made = [c for c in list_candidate_ids() if c.startswith("answer-which-database")]
    if not made:
        say("demo: propose wrote no candidate for the database question")
        return _done(w)
    cand = load_candidate(made[0])
    res.candidate_id, res.candidate_policy_id = cand.candidate_id, cand.policy.policy_id

    verdict = w.gate(cand.candidate_id)
    say(f"{w._at()} the gate says {verdict}" + (": no live evidence yet, so the candidate rides along first"
                                               if verdict == "HOLD" else ""))
    if verdict == "REJECT":
        return _done(w)
    if verdict == "HOLD":
        w.cli("eval", "canary", "start", cand.candidate_id, "--by", "demo")
        res.canary = w.runs(CANARY_RUNS, "canary")
        while not _enough_canary(settings, cand.policy.policy_id) and len(res.canary) < MAX_CANARY_RUNS:
            say(f"{w._at()} not yet the shadow decisions the gate asks for: 3 more runs")
            res.canary += w.runs(3, "canary")
        w.report_runs(res.canary, f"with {cand.candidate_id} riding along as a shadow")
        w.cli("eval", "canary", "report", cand.candidate_id)
        w.cli("eval", "canary", "limited", cand.candidate_id, "--fraction", "0.5", "--by", "demo")
        arms = {"candidate": 0, "control": 0}
        while min(arms.values()) < 3 and len(res.limited) < 16:
            batch = w.runs(3, "limited")
            for r in batch:
                arms["candidate" if r.policy_id == cand.policy.policy_id else "control"] += 1
            res.limited += batch
        w.report_runs(res.limited, f"of the limited rollout ({arms['candidate']} driven by the candidate, "
                      f"{arms['control']} by the control)")
        verdict = w.gate(cand.candidate_id)
        say(f"{w._at()} the gate says {verdict}")
    if verdict != "PROMOTE":
        return _done(w)
    w.cli("eval", "promote-candidate", cand.candidate_id, "--approved-by", "demo")
    [res.promoted] = w.runs(1, "promoted")
    say(f"{w._at()} a new run under {cand.candidate_id}: "
        + ("the database question was answered by the policy, nobody waited" if not res.promoted.escalated
           else "it still escalated the question"))
    w.cli("eval", "rollback", "--by", "demo", "--reason", "the demo shows the way back")
    res.after_rollback_policy_id = policies_for_new_run(settings, None).acting.policy_id
    w.cli("eval", "promotion-history")
    return _done(w)


def _enough_canary(settings: Settings, policy_id: str) -> bool:
    """Whether the shadow canary holds the evidence the demo's gate file asks for (how many
    observations a run gives depends on how busy the machine is)."""
    from evals.canary import canary_report
    from evals.gate import load_gate_config

    k = load_gate_config(demo_gate_file()).canary
    return bool(canary_report(settings, policy_id, min_observations=k.min_observations, min_runs=k.min_runs).enough)


def demo_gate_file() -> str:
    """``candidates/demo-gate.yaml`` (the project's thresholds without the episode suites), relative
    when the demo runs from the project's folder (as ``make demo`` does)."""
    from evals.suites import REPO_ROOT

    path = REPO_ROOT / "candidates" / "demo-gate.yaml"
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


def _candidates_dir() -> Path:
    from evals.candidates import candidates_dir

    return candidates_dir()


def _done(w: Walk) -> WalkResult:
    w.result.seconds = time.monotonic() - w.t0
    import shutil

    shutil.rmtree(w.work, ignore_errors=True)
    return w.result


def default_prefix(home: Path | None) -> list[str]:
    """The global options printed commands need: ``--home`` when the demo ran in a home of its own."""
    return ["--home", str(home)] if home is not None else []
