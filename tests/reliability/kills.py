"""SIGKILL the supervisor at random instants during a scripted run, restart it, and account for
what happened: the harness behind ``test_kills.py`` (in ``make test``) and ``bench/reliability.py``.

One run: the scripted checkpoint agent works through the 3-step plan in a real tmux pane (write,
a failing check that needs a retry, the fix, docs) while a real supervisor process follows it.
The supervisor is killed at a random instant (most of the time a random delay after it journaled
its first event, the rest while it is still starting up), ``kills`` times, each time restarted on
the same run id; then one last supervisor sees the run to its review and the end. Afterwards:

- lost: events journaled before a kill that are no longer in the journal (the journal is
  append-only: every earlier journal is a prefix of the final one);
- missing: journaled events absent from the warehouse after a sync;
- duplicates: instructions the agent received twice, checkpoints processed twice;
- resumes: restarts that journaled ``supervision_resumed`` (the run continued with its state),
  against ``restarts``: starts that found the run's journal already there and lived long enough
  to journal anything (one killed while still importing did nothing to resume);
- leaks: supervisor processes of the run still alive at the end.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from supervisor.models import Event
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse, sync
from tests.conftest import run_cli
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import journal_events, kinds, script3, start_agent
from tests.workflow.test_e2e_workflow import env_for, held_for_review, policy_file, start_supervisor


@dataclass
class KillReport:
    run_id: str
    kills: int = 0
    events: int = 0
    lost: int = 0
    missing: int = 0
    duplicates: int = 0
    resumes: int = 0
    restarts: int = 0
    leaks: int = 0
    outcome: str | None = None
    instructions: int = 0
    checkpoints: int = 0
    kill_delays: list[float] = field(default_factory=list)
    missing_detail: str = ""
    """Where missing events sit (their seqs and kinds) and what the sync said, for the failure message."""

    def tally_storage(self, home: Path, snapshots: list[list[str]]) -> list[Event]:
        """The run's journal events after the kills, counting events lost from it (an id an earlier
        snapshot saw no longer in its place) and events the warehouse lacks after a sync."""
        evs = journal_events(home, self.run_id)
        ids = [e.event_id for e in evs]
        self.events = len(ids)
        self.lost = sum(1 for snap in snapshots for i, eid in enumerate(snap) if i >= len(ids) or ids[i] != eid)
        settings = Settings(home=home).ensure()
        synced = sync(settings, wait_s=30)
        with open_warehouse(settings.warehouse, read_only=True, wait_s=30) as wh:
            stored = set(wh.sql("SELECT event_id FROM events WHERE run_id = ?", [self.run_id])["event_id"].to_list())
            state = wh.sql("SELECT * FROM ingest_state").to_dicts()
            rejects = wh.sql("SELECT journal_path, line_no, reason FROM ingest_rejects").to_dicts()
        gone = [e for e in evs if e.event_id not in stored]
        self.missing = len(gone)
        if gone:
            journal = settings.journals_dir / f"{self.run_id}.jsonl"
            self.missing_detail = (f"missing seqs {[e.seq for e in gone][:60]} kinds {dict(Counter(e.kind for e in gone))}; "
                                   f"journal {len(ids)} events, {journal.stat().st_size} bytes; "
                                   f"sync {synced}; ingest_state {state}; rejects {rejects[:5]}")
        return evs

    def kill_at_random(self, proc: subprocess.Popen[bytes], home: Path, before: int, rng: random.Random,
                       max_delay_s: float, snapshots: list[list[str]]) -> None:
        """SIGKILL ``proc`` at a random instant, then snapshot the journal's event ids. Most kills
        land while it works: once the journal holds more than ``before`` events (however long a
        busy machine takes to start it), a random delay up to ``max_delay_s`` later; the rest
        within its first second, while it is still starting up."""
        if rng.random() < 0.8:
            retry_until(lambda: proc.poll() is not None or len(journal_events(home, self.run_id)) > before, 120,
                        message="the supervisor to journal something")
            delay = rng.uniform(0.0, max_delay_s)
        else:
            delay = rng.uniform(0.0, 1.0)
        self.kill_delays.append(round(delay, 3))
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=delay)  # the random instant (returns early if it ended by itself)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            self.kills += 1
        proc.wait(30)
        snapshots.append([e.event_id for e in journal_events(home, self.run_id)])

    def ok(self) -> bool:
        return (self.lost == 0 and self.missing == 0 and self.duplicates == 0 and self.leaks == 0
                and self.outcome == "finished" and self.resumes == self.restarts)


def _alive_supervisors(run_id: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info.get("cmdline") or []
        if "--run-id" in cmd and run_id in cmd:
            out.append(p)
    return out


def kill_run(tmp: Path, socket: str, home: Path, *, run_id: str, kills: int, rng: random.Random,
             max_delay_s: float = 3.0, work_s: float = 0.6) -> KillReport:
    """One run with ``kills`` SIGKILLs of its supervisor at random instants; see the module doc."""
    tmp.mkdir(parents=True, exist_ok=True)
    report = KillReport(run_id)
    agent = start_agent(tmp, socket, script3(work_s=work_s), name=run_id[-12:])
    env = env_for(home, socket)
    pol = policy_file(tmp)
    log = tmp / "supervisor.log"
    snapshots: list[list[str]] = []
    proc: subprocess.Popen[bytes] | None = None
    try:
        for _ in range(kills):
            before = len(journal_events(home, run_id))
            proc = start_supervisor(agent.pane_id, agent.spec_path, run_id, env, pol, log)
            report.kill_at_random(proc, home, before, rng, max_delay_s, snapshots)
        proc = start_supervisor(agent.pane_id, agent.spec_path, run_id, env, pol, log)
        retry_until(lambda: held_for_review(home, run_id), 300,
                    message=lambda: log.read_text()[-3000:] if log.exists() else "no log")
        r = run_cli("runs", "review", run_id, "--by", "human", env=env)
        if r.returncode != 0:
            raise AssertionError(f"review failed: {r.stderr}")
        proc.wait(120)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(30)
    evs = report.tally_storage(home, snapshots)
    ids = [e.event_id for e in evs]
    markers = Counter(r["marker"] for r in agent.records("instruction"))
    checkpoints = Counter(c["checkpoint_key"] for c in kinds(evs, "checkpoint"))
    report.duplicates = sum(n - 1 for c in (markers, checkpoints) for n in c.values())
    report.instructions = len(markers)
    report.checkpoints = len(checkpoints)
    # Each supervisor's own events: what it added between the journal it found and the one it left.
    kinds_by_id = {e.event_id: (e.kind, e.payload.get("type")) for e in evs}
    bounds = [[], *snapshots, ids]
    for before, after in zip(bounds, bounds[1:], strict=False):
        added = after[len(before):]
        if before and added:
            report.restarts += 1
            report.resumes += any(kinds_by_id.get(eid) == ("note", "supervision_resumed") for eid in added)
    ended = kinds(evs, "run_ended")
    report.outcome = ended[-1].get("outcome") if ended else None
    deadline = time.monotonic() + 10
    while _alive_supervisors(run_id) and time.monotonic() < deadline:
        time.sleep(0.1)  # a killed process's exit is asynchronous: give the kernel a moment
    report.leaks = len(_alive_supervisors(run_id))
    return report


PLAIN_PROMPTS = 5


def _supervisor_cmd(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    import sys

    from tests.conftest import REPO

    fh = open(log, "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, "-m", "supervisor", *args], env=env, cwd=REPO, stdout=fh,
                            stderr=subprocess.STDOUT)


def plain_kill_run(tmp: Path, socket: str, home: Path, *, kills: int, rng: random.Random,
                   max_delay_s: float = 3.0) -> KillReport:
    """The same for a plain run (no spec): the scripted agent asks five safe permission prompts;
    the supervisor (``supervisor run``, then ``supervisor attach`` on the pane after each kill)
    answers them. Duplicates here are prompts the agent got an answer for twice plus keys that
    reached it while no prompt was live (stray keys)."""
    from evals.agent import agent_command, read_record, stray_keys
    from supervisor.policy import dump_policy
    from tests.live_helpers import fast_policy, write_script

    tmp.mkdir(parents=True, exist_ok=True)
    steps: list[dict[str, object]] = [{"spinner": {"seconds": 0.3}}]
    for i in range(PLAIN_PROMPTS):
        steps += [{"prompt": {"id": f"p{i}", "kind": "bash", "command": f"npm test -- --shard {i}",
                              "description": "Run the tests"}},
                  {"spinner": {"seconds": 2.0}}]  # long enough for several kills
    steps.append({"done": {}})
    script = write_script(tmp, steps)
    rec = tmp / "rec.jsonl"
    policy = tmp / "policy.yaml"
    policy.write_text(dump_policy(fast_policy(confirm_timeout_s=2.0)))
    env = env_for(home, socket)
    log = tmp / "supervisor.log"
    session = f"plain{uuid.uuid4().hex[:6]}"
    proc = _supervisor_cmd(["run", "--policy", str(policy), "--session", session, "--turns", "1", "--",
                            *agent_command(script, rec)], env, log)
    retry_until(lambda: list((home / "journals").glob("*.jsonl")), 120, message=lambda: log.read_text()[-2000:])
    journal = next((home / "journals").glob("*.jsonl"))
    run_id = journal.stem
    report = KillReport(run_id)
    pane = retry_until(lambda: next((e.payload.get("pane_id") for e in journal_events(home, run_id)
                                     if e.kind == "run_started"), None), 120, message="run_started")
    snapshots: list[list[str]] = []
    try:
        for k in range(kills):
            if k:
                proc = _supervisor_cmd(["attach", "--policy", str(policy), "--turns", "1", pane], env, log)
            report.kill_at_random(proc, home, len(journal_events(home, run_id)), rng, max_delay_s, snapshots)
            if any(e.kind == "run_ended" for e in journal_events(home, run_id)):
                break
        if not any(e.kind == "run_ended" for e in journal_events(home, run_id)):
            proc = _supervisor_cmd(["attach", "--policy", str(policy), "--turns", "1", pane], env, log)
            retry_until(lambda: any(e.kind == "run_ended" for e in journal_events(home, run_id)), 300,
                        message=lambda: log.read_text()[-3000:])
            proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    evs = report.tally_storage(home, snapshots)
    ids = [e.event_id for e in evs]
    answered = Counter(r["id"] for r in read_record(rec) if r["event"] == "answer")
    report.duplicates = sum(n - 1 for n in answered.values()) + len(stray_keys(rec))
    report.instructions = len(answered)
    kinds_by_id = {e.event_id: (e.kind, e.payload.get("type")) for e in evs}
    bounds = [[], *snapshots, ids]
    for before_ids, after_ids in zip(bounds, bounds[1:], strict=False):
        added = after_ids[len(before_ids):]
        if before_ids and added and before_ids != ids:
            report.restarts += 1
            report.resumes += any(kinds_by_id.get(eid) == ("note", "supervision_resumed") for eid in added)
    ended = kinds(evs, "run_ended")
    report.outcome = ended[-1].get("outcome") if ended else None
    return report
