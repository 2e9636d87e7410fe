"""Helpers for tests that drive the scripted agent under a real supervisor in real tmux."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from supervisor.models import Event
from supervisor.policy import Policy, baseline_policy
from supervisor.runner import PaneRunner, RunConfig, Supervisor
from supervisor.settings import Settings
from supervisor.surfaces.base import PaneInfo
from supervisor.surfaces.tmux import TmuxSurface

REPO = Path(__file__).resolve().parents[1]


def fast_policy(**timing: Any) -> Policy:
    """The baseline with short timers so tests finish quickly."""
    pol = baseline_policy().model_copy(deep=True)
    values = {"settle_ms": 60, "recheck_s": 0.4, "confirm_timeout_s": 2.0, "human_quiet_s": 30.0} | timing
    for k, v in values.items():
        setattr(pol.timing, k, v)
    pol.name = "test-fast"
    return pol


def write_script(tmp: Path, steps: list[dict[str, Any]], *, style: str = "claude", name: str = "script") -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"style": style, "cwd": "/tmp/proj", "steps": steps}, allow_unicode=True))
    return path


def agent_command(script: Path, record: Path) -> list[str]:
    return [sys.executable, "-m", "supervisor.demo_agent", str(script), "--record", str(record)]


def read_record(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def answers(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in read_record(path) if r["event"] == "answer"}


def events(runner: PaneRunner, kind: str | None = None) -> list[Event]:
    return [e for e in runner.journal.events() if kind is None or e.kind == kind]


class LiveHarness:
    """A tmux surface on the test's private socket, and a Supervisor running in a thread."""

    def __init__(self, socket: str, home: Path, policy: Policy | None = None, **config: Any) -> None:
        self.surface = TmuxSurface(socket, poll_s=config.pop("poll_s", None))
        self.settings = Settings(home=home).ensure()
        self.config = RunConfig(policy=policy or fast_policy(), **config)
        self.sup = Supervisor(self.surface, self.settings, self.config, socket=socket)
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self._n = 0

    def start_agent(self, script: Path, record: Path, *, session: str | None = None) -> PaneInfo:
        self._n += 1
        return self.surface.new_session(session or f"agent{self._n}", agent_command(script, record),
                                        width=100, height=30, cwd=str(REPO))

    def supervise(self, *panes: PaneInfo) -> list[PaneRunner]:
        runners = [self.sup.add_pane(p) for p in panes]
        self.start()
        return runners

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
