"""A fleet: three supervisor processes (three simulated hosts, each with its own home and
journals) supervise scripted agents at the same time and ingest into one DuckLake in a real
PostgreSQL while a reader queries it. The policy they act under and the canary they carry are
the ones a fourth host promoted and started in the shared catalog. One host starts with a backlog of journals and is SIGKILLed in the
middle of ingesting it, then restarted: every journaled event must be in the warehouse exactly
once, and no reader may ever see an event twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evals import registry
from supervisor.settings import DuckLakeLocation, Settings
from supervisor.warehouse import open_warehouse
from tests.conftest import REPO
from tests.helpers import retry_until
from tests.live_helpers import agent_command, answers, assert_no_stray_keys, fast_policy, write_script
from tests.warehouse.journals import write_run

pytestmark = pytest.mark.e2e  # three supervisors and a backlog: too long for `make test`; `make e2e` runs it

BACKLOG_RUNS, BACKLOG_PROMPTS = 40, 150  # more lines than one ingest chunk (CHUNK_LINES)
BACKLOG_EVENTS = BACKLOG_RUNS * (9 + 4 * BACKLOG_PROMPTS)


class Reader(threading.Thread):
    """Queries the DuckLake over and over while the fleet writes, recording what it saw."""

    def __init__(self, lake: DuckLakeLocation) -> None:
        super().__init__(daemon=True)
        self.lake = lake
        self.stop = threading.Event()
        self.reads: list[tuple[int, int]] = []
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with open_warehouse(self.lake, read_only=True) as wh:
                    self.reads.append(wh.sql("SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM events").row(0))
            except Exception as exc:  # noqa: BLE001 - recorded and asserted empty at the end
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.stop.wait(0.3)


def _host(tmp: Path, name: str, lake: DuckLakeLocation, socket: str) -> dict[str, str]:
    home = tmp / name
    Settings(home=home).ensure()
    env = dict(os.environ)
    env.update(SUPERVISOR_HOME=str(home), SUPERVISOR_WAREHOUSE=lake.spec, SUPERVISOR_TMUX_SOCKET=socket,
               PYTHONUNBUFFERED="1")
    return env


def _start(tmp: Path, env: dict[str, str], tag: str) -> tuple[subprocess.Popen[bytes], Path]:
    """`supervisor run` with no --policy: the host takes the promoted policy and canary from the catalog."""
    script = write_script(tmp, [
        {"idle": {"id": "task"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test"}},
        {"spinner": {"seconds": 0.3}},
        {"prompt": {"id": "p2", "kind": "bash", "command": "ls -la"}},
        {"say": "Fixed."},
        {"done": {}},
    ], name=f"script-{tag}")
    record = tmp / f"agent-{tag}.jsonl"
    log = open(tmp / f"supervisor-{tag}.log", "ab")  # noqa: SIM115 - closed once the child has it
    proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--session", f"fleet-{tag}",
                             "--task", "fix the failing test", "--", *agent_command(script, record)],
                            env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return proc, record


def _journal_ids(*homes: Path) -> list[str]:
    ids = []
    for home in homes:
        for path in sorted((home / "journals").glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("event_id"), str):
                    ids.append(obj["event_id"])
    return ids


def _wait(procs: list[subprocess.Popen[bytes]], tmp: Path, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    for p in procs:
        try:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            logs = "\n".join(f.read_text(errors="replace")[-1500:] for f in tmp.glob("supervisor-*.log"))
            raise AssertionError(f"a supervisor did not finish: {logs}") from None
    if any(p.returncode != 0 for p in procs):
        logs = "\n".join(f"== {f.name}\n{f.read_text(errors='replace')[-3000:]}" for f in tmp.glob("supervisor-*.log"))
        raise AssertionError(f"a supervisor failed (exit codes {[p.returncode for p in procs]}):\n{logs}")


def test_three_supervisors_share_one_ducklake_and_a_killed_one_loses_and_duplicates_nothing(
        tmp_path: Path, lake: DuckLakeLocation, tmux_socket: str) -> None:
    fast, canary = fast_policy(), fast_policy(stall_timeout_s=1234.0)
    admin = Settings(home=tmp_path / "admin", warehouse_path=lake).ensure()
    with open_warehouse(lake):
        pass  # the catalog exists before the reader starts
    registry.promote(admin, "fast", fast, approved_by="lead", force=True, reason="fleet test: short timers")
    registry.start_canary(admin, "slower-stall", canary, by="lead")
    hosts = [_host(tmp_path, f"host{i}", lake, tmux_socket) for i in range(3)]
    homes = [Path(env["SUPERVISOR_HOME"]) for env in hosts]
    backlog = Settings(home=homes[2])
    for n in range(BACKLOG_RUNS):
        write_run(backlog, f"run_backlog_{n}", prompts=BACKLOG_PROMPTS, at=1_700_000_000.0 + 1000 * n).close()

    def backlog_visible() -> int:
        with open_warehouse(lake, read_only=True) as wh:
            return int(wh.sql("SELECT count(*) AS n FROM events WHERE run_id LIKE 'run_backlog_%'")["n"][0])

    reader = Reader(lake)
    reader.start()
    try:
        victim, _ = _start(tmp_path, hosts[2], "c")
        others = [_start(tmp_path, env, f"h{i}") for i, env in enumerate(hosts[:2])]
        # host C ingests its backlog in several transactions: kill it once some, not all, are committed
        at_kill = retry_until(lambda: (n := backlog_visible()) < BACKLOG_EVENTS and n, 180, interval=0.05,
                              message="host C ingesting its backlog")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        assert 0 < at_kill < BACKLOG_EVENTS
        _wait([p for p, _ in others], tmp_path)
        restarted, record_c = _start(tmp_path, hosts[2], "c2")
        _wait([restarted], tmp_path)
    finally:
        reader.stop.set()
        reader.join(timeout=30)
    records = [r for _, r in others] + [record_c]
    assert_no_stray_keys(*records)
    assert all(answers(r)["p1"]["approved"] and answers(r)["p2"]["approved"] for r in records)
    journaled = _journal_ids(*homes)
    assert len(journaled) == len(set(journaled))
    with open_warehouse(lake, read_only=True) as wh:
        stored = [str(x) for x in wh.sql("SELECT event_id FROM events")["event_id"].to_list()]
        runs = wh.runs_df()
        sessions = dict(wh.sql("SELECT run_id, session FROM runs").iter_rows())
        started = wh.sql("SELECT run_id, payload->>'$.policy_id' AS acting, "
                         "CAST(payload->'$.shadow_policy_ids' AS VARCHAR) AS shadows FROM events "
                         "WHERE kind = 'run_started' AND run_id NOT LIKE 'run_backlog_%'")
    assert len(stored) == len(set(stored)), "an event is in the warehouse twice"
    assert set(stored) == set(journaled), f"{len(set(journaled) - set(stored))} journaled events are missing"
    assert backlog_visible() == BACKLOG_EVENTS
    # the reader never saw a duplicate, and saw the warehouse grow
    assert not reader.errors, reader.errors[:3]
    assert reader.reads and all(n == d for n, d in reader.reads), reader.reads
    assert reader.reads[0][0] < reader.reads[-1][0] <= len(stored)
    live = runs.filter(~runs["run_id"].str.starts_with("run_backlog_"))
    assert live.height == 4  # C's first run too (finished or cut short by the kill)
    done = {sessions[r["run_id"]]: (r["outcome"], r["answers"]) for r in live.to_dicts()
            if sessions[r["run_id"]] != "fleet-c"}
    assert done == {f"fleet-{t}": ("finished", 2) for t in ("h0", "h1", "c2")}
    # every host's runs acted under the policy promoted in the shared catalog, carrying its canary
    assert started.height == 4
    assert set(started["acting"].to_list()) == {fast.policy_id}
    assert set(started["shadows"].to_list()) == {json.dumps([canary.policy_id]).replace(" ", "")}
