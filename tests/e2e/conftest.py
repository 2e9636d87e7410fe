"""Fixtures for the end-to-end tests: a fake model server, and real agents under `supervisor run`.

Each e2e test starts the real CLI (``python -m supervisor run --session NAME -- AGENT ...``) as a
subprocess, in a fresh HOME and work folder, on the test's private tmux server, and reads the
run's journal (``$SUPERVISOR_HOME/journals/*.jsonl``) and the pane to see what happened.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agents import AgentLaunch, Pane, agent_binary, descendants, kill_all, prepare
from tests.e2e.fake_model_server import FakeModelServer
from tests.helpers import retry_until

REPO = Path(__file__).resolve().parents[2]


def require_agent(agent: str) -> None:
    """Skip (with the fix) when the agent is not installed; `make e2e` installs it."""
    if agent_binary(agent) is None:
        pytest.skip(f"{agent} is not installed: run `make e2e` (tests/e2e/install_agents.sh)")


@pytest.fixture
def fake_model() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


@dataclass
class SupervisedRun:
    """One `supervisor run` subprocess supervising one real agent."""

    proc: subprocess.Popen[str]
    pane: Pane
    launch: AgentLaunch
    sv_home: Path
    log_path: Path

    @property
    def work(self) -> Path:
        return self.launch.cwd

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for path in sorted((self.sv_home / "journals").glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue  # a line being written right now
                if kind is None or ev.get("kind") == kind:
                    out.append(ev)
        return out

    def decisions(self) -> list[dict[str, Any]]:
        return [e["payload"]["decision"] for e in self.events("decision")]

    def observations(self) -> list[dict[str, Any]]:
        return [e["payload"]["observation"] for e in self.events("observation")]

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def describe(self) -> str:
        """What a failing test should print: the screen, the supervisor's output, the last events."""
        try:
            screen = self.pane.text()
        except Exception as exc:  # noqa: BLE001 - diagnostics only
            screen = f"<no screen: {exc}>"
        last = [f"{e['kind']}: " + json.dumps(e["payload"])[:300] for e in self.events()[-12:]
                if e["kind"] != "observation"]
        return (f"\n--- screen ---\n{screen}\n--- supervisor output ---\n{self.output()[-3000:]}"
                f"\n--- last events ---\n" + "\n".join(last))

    def wait_event(self, kind: str, pred: Callable[[dict[str, Any]], bool] = lambda p: True,
                   seconds: float = 60.0) -> dict[str, Any]:
        """The first ``kind`` event whose payload satisfies ``pred``, waiting up to ``seconds``."""
        def found() -> dict[str, Any] | None:
            return next((e for e in self.events(kind) if pred(e["payload"])), None)

        return retry_until(found, seconds, interval=0.2, message=lambda: f"a {kind} event{self.describe()}")

    def wait(self, cond: Callable[[], Any], seconds: float, what: str) -> Any:
        return retry_until(cond, seconds, interval=0.2, message=lambda: f"{what}{self.describe()}")

    def press_on_dialog(self, keys: Sequence[str], markers: Sequence[str], *, tries: int = 3,
                        patience_s: float = 5.0) -> int:
        """Press ``keys`` on the dialog marked by any of ``markers`` the way a person does: when the
        dialog is still there, unchanged, ``patience_s`` later, press them again (at most ``tries``
        times in all). Some agents draw a dialog a moment before it takes keys: Mistral Vibe 3.0
        drops every key (Escape, digits, arrows) pressed in about the first 0.3 s after its
        permission dialog appears. Pressing again only while the very same dialog is on screen sends
        nothing into the composer: a stray key would still show in what the model receives.
        Returns how many times the keys were pressed."""
        for attempt in range(1, tries + 1):
            before = self.pane.text()
            self.pane.keys(*keys)
            deadline = time.monotonic() + patience_s
            while not dialog_gone(before, self.pane.text(), markers):
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.2)
            else:
                return attempt
        return tries

    def exit_code(self, seconds: float = 60.0) -> int:
        try:
            return self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"supervisor still running after {seconds}s{self.describe()}") from exc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def dialog_gone(before: str, now: str, markers: Sequence[str]) -> bool:
    """Whether the dialog on ``before`` (the screen when keys were pressed) has gone from ``now``:
    its marker is no longer on screen, or what follows its last marker changed (a line agent
    appends the answer below its question). No marker on ``before``: nothing to wait for."""
    shown = [m for m in markers if m in before]
    if not shown:
        return True
    marker = max(shown, key=before.rfind)
    return marker not in now or now.rpartition(marker)[2] != before.rpartition(marker)[2]


@pytest.fixture
def supervise(tmp_path: Path, tmux_socket: str, sv_home: Path,
              fake_model: FakeModelServer) -> Iterator[Callable[..., SupervisedRun]]:
    """Start ``supervisor run -- AGENT ARGS`` in a fresh HOME; returns the :class:`SupervisedRun`.

    ``supervise(agent, *args, policy=None, setup=None, env=None, turns=1, **prepare_kw)``:
    ``setup(launch)`` runs before the start (to make files in the work folder); ``env`` adds to
    the agent's environment; ``turns`` (``--turns``) ends the run at that many finished turns, as
    most scenes want (None: the run lasts as long as the agent); ``prepare_kw`` goes to
    :func:`prepare`.
    """
    runs: list[SupervisedRun] = []

    def start(agent: str, *args: str, policy: Path | None = None,
              setup: Callable[[AgentLaunch], None] | None = None, env: dict[str, str] | None = None,
              turns: int | None = 1, **prepare_kw: Any) -> SupervisedRun:
        require_agent(agent)
        launch = prepare(agent, tmp_path / agent, fake_model.url, **prepare_kw)
        launch.argv += list(args)
        launch.env.update(env or {})
        if setup is not None:
            setup(launch)
        env = dict(launch.env)
        env.update(SUPERVISOR_HOME=str(sv_home), SUPERVISOR_TMUX_SOCKET=tmux_socket, PYTHONUNBUFFERED="1",
                   COLUMNS="200")
        session = f"e2e-{agent}"
        cmd = [sys.executable, "-m", "supervisor", "run", "--session", session, "--width", "120", "--height", "40"]
        if turns is not None:
            cmd += ["--turns", str(turns)]
        if policy is not None:
            cmd += ["--policy", str(policy)]
        cmd += ["--", *launch.argv]
        log_path = tmp_path / f"supervisor-{agent}.log"
        log = open(log_path, "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(cmd, cwd=launch.cwd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        log.close()
        run = SupervisedRun(proc=proc, pane=Pane(tmux_socket, session), launch=launch, sv_home=sv_home,
                            log_path=log_path)
        runs.append(run)
        run.wait(lambda: proc.poll() is not None or _has_session(tmux_socket, session), 30,
                 "the supervisor to create its tmux session")
        return run

    yield start
    for run in runs:
        pid = run.pane.pid()
        tree = descendants(pid) if pid else []
        run.stop()
        run.pane.kill()
        kill_all(tree)


def _has_session(socket: str, session: str) -> bool:
    return subprocess.run(["tmux", "-L", socket, "has-session", "-t", session], capture_output=True).returncode == 0


def make_policy(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the baseline policy changed by ``edit`` (a function over its YAML data)."""
    import yaml

    data = yaml.safe_load((REPO / "candidates" / "baseline.yaml").read_text())
    edit(data)
    data["name"] = "e2e-test"
    path = tmp_path / "e2e-policy.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path

