"""Helpers for tests that drive the scripted agent under a real supervisor in real tmux.

When a :class:`LiveHarness` stops, every agent it started is checked for stray keys (a key that
reached the agent while no prompt was live fails the test; pass ``stray_ok=True`` to
:meth:`LiveHarness.start_agent` only where a test sends one on purpose), and every run it
supervised is replayed from its journal under its recorded policy: each decision must come out
the same (the journal holds everything a decision depended on)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import yaml

from evals.agent import agent_command, answers, read_record, stray_keys
from supervisor.journal import iter_events
from supervisor.models import Event
from supervisor.policy import Policy, baseline_policy
from supervisor.runner import PaneRunner, RunConfig, Supervisor
from supervisor.settings import Settings
from supervisor.surfaces.base import PaneInfo
from supervisor.surfaces.tmux import TmuxSurface
from tests.helpers import retry_until

REPO = Path(__file__).resolve().parents[1]


def fast_policy(**timing: Any) -> Policy:
    """The baseline with short timers so tests finish quickly."""
    pol = baseline_policy().model_copy(deep=True)
    values = {"settle_ms": 60, "recheck_s": 0.4, "confirm_timeout_s": 2.0, "human_quiet_s": 30.0} | timing
    for k, v in values.items():
        setattr(pol.timing, k, v)
    pol.name = "test-fast"
    return pol


def _tail(runner: PaneRunner, n: int = 8) -> list[str]:
    """The run's last journal events, shortly (what a timed-out wait shows of where the run stood)."""
    out = []
    for e in list(iter_events(runner.journal.path))[-n:]:
        if e.kind == "observation":
            o = e.payload["observation"]
            out.append(f"observation {e.payload.get('trigger')} {o['state']}")
        else:
            out.append(f"{e.kind} {json.dumps(e.payload, default=str)[:160]}")
    return out


def write_script(tmp: Path, steps: list[dict[str, Any]], *, style: str = "claude", name: str = "script",
                 **top: Any) -> Path:
    """A scripted-agent script file (``top``: ``mode``, ``cwd``, ``paste_enter_gap_s``...)."""
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"style": style, "cwd": "/tmp/proj", **top, "steps": steps}, allow_unicode=True))
    return path


__all__ = ["LiveHarness", "agent_command", "answers", "assert_no_stray_keys", "events", "fast_policy", "read_record",
           "replay_under_recorded_policy", "write_script"]


def assert_no_stray_keys(*records: Path) -> None:
    """No key reached these agents while no prompt was live."""
    stray = {str(r): s for r in records if (s := stray_keys(r))}
    assert not stray, f"stray keys reached the agent: {stray}"


def replay_under_recorded_policy(evs: list) -> tuple[int, list[tuple]]:
    """Re-decide every recorded (rules) decision of a run from its journal alone: the policy from
    ``run_started``, the Screen from the observation's fields, the state from the one fold
    (supervisor.runstate) of every event before the decision. Returns (decisions, mismatches)."""
    from supervisor.classify import classify
    from supervisor.decide import decide
    from supervisor.models import RunState, Screen
    from supervisor.policy import Policy
    from supervisor.runstate import RunFold

    started = next(e.payload for e in evs if e.kind == "run_started")
    policy = Policy.model_validate(started["policies"][started["policy_id"]])
    fold = RunFold(state=RunState(run_id=evs[0].run_id), recheck_s=policy.timing.recheck_s)
    screens: dict[str, dict] = {}
    n, mismatches = 0, []
    for ev in evs:
        if ev.kind == "observation":
            screens[ev.event_id] = ev.payload["screen"]
        if ev.kind == "decision" and ev.payload["decision"].get("source") == "rules":
            recorded = ev.payload["decision"]
            fields = {k: v for k, v in screens[recorded["trigger_id"]].items() if k != "screen_hash"}
            screen = Screen.model_validate(fields)
            obs = classify(screen, policy)
            if screen.dead and obs.state != "exited":
                obs = obs.model_copy(update={"state": "exited"})
            if obs.agent == "unknown" and started["agent"] != "unknown":
                obs = obs.model_copy(update={"agent": started["agent"]})
            assert fold.state.now == ev.payload["now"]
            d = decide(obs, fold.state, policy, policy_id=policy.policy_id)
            n += 1
            if (d.kind, d.keys, d.rule) != (recorded["kind"], recorded["keys"], recorded["rule"]):
                mismatches.append((ev.seq, (d.kind, d.keys, d.rule), (recorded["kind"], recorded["keys"],
                                                                       recorded["rule"])))
        fold.apply(ev)
    return n, mismatches


def events(runner: PaneRunner, kind: str | None = None) -> list[Event]:
    return [e for e in runner.journal.events() if kind is None or e.kind == kind]


class LiveHarness:
    """A tmux surface on the test's private socket, and a Supervisor running in a thread."""

    def __init__(self, socket: str, home: Path, policy: Policy | None = None, **config: Any) -> None:
        self.surface = TmuxSurface(socket, poll_s=config.pop("poll_s", None))
        self.settings = Settings(home=home).ensure()
        config.setdefault("turns", 1)  # most tests end the run at its first finished turn
        self.config = RunConfig(policy=policy or fast_policy(), **config)
        self.sup = Supervisor(self.surface, self.settings, self.config, socket=socket)
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self._n = 0
        self.records: list[Path] = []
        """Records of the agents started here: checked for stray keys by :meth:`stop`."""

    def work_seen(self, flag: Path) -> dict[str, Any]:
        """A script step: the agent works (a spinner) until the supervisor has seen it working (a busy
        observation journaled). A finish needs work seen first; a short fixed spinner can be over
        before a loaded host lets the supervisor look, and then the run never finishes."""
        chained = self.sup.on_journal

        def hook(runner: PaneRunner, ev: Event) -> None:
            if ev.kind == "observation" and ev.payload["observation"]["state"] == "busy":
                flag.touch()
            if chained is not None:
                chained(runner, ev)

        self.sup.on_journal = hook
        return {"spinner": {"until": str(flag)}}

    def start_agent(self, script: Path, record: Path, *, session: str | None = None, stray_ok: bool = False,
                    width: int = 100, height: int = 30, cwd: Path | None = None) -> PaneInfo:
        """Start the scripted agent in a new session; ``cwd``: the pane's directory (the project the
        supervisor places paths in; default the repository)."""
        self._n += 1
        if not stray_ok:
            self.records.append(record)
        return self.surface.new_session(session or f"agent{self._n}", agent_command(script, record),
                                        width=width, height=height, cwd=str(cwd or REPO))

    def supervise(self, *panes: PaneInfo) -> list[PaneRunner]:
        runners = [self.sup.add_pane(p) for p in panes]
        self.start()
        return runners

    def run_to_end(self, script: Path, record: Path, seconds: float = 60) -> PaneRunner:
        """Supervise one agent playing ``script`` (recording to ``record``) and wait, at most
        ``seconds``, until its run has ended."""
        (runner,) = self.supervise(self.start_agent(script, record))
        retry_until(lambda: runner.done, seconds,
                    message=lambda: f"the run to end; record={read_record(record)[-3:]}; journal={_tail(runner)}")
        return runner

    def start(self) -> None:
        def loop() -> None:
            try:
                self.sup.run()
            except BaseException as exc:  # noqa: BLE001 - surfaced by stop()
                self.error = exc

        if self._thread is None:
            self._thread = threading.Thread(target=loop, daemon=True)
            self._thread.start()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        self.sup.stop()
        if self._thread is not None:
            self._thread.join(timeout=20)
        self.sup.close(final_sync=False)
        if self.error is not None:
            raise self.error
        assert_no_stray_keys(*self.records)
        for runner in self.sup.runners.values():
            if runner.journal.path.exists():
                _, mismatches = replay_under_recorded_policy(runner.journal.events())
                assert mismatches == [], f"replay of {runner.run_id} differs: {mismatches}"
