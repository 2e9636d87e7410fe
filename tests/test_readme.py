"""The README's commands run as printed: every command line of its plain fenced blocks is either
run here, in order, by a newcomer's shell (a fresh home, a private tmux server, the documented
PATH step, agents on PATH that are the scripted stand-in agent under the real program names),
or named below with the reason it cannot run here. A new command line in the README that is in
neither list fails the test, and so does one that no longer works.

Placeholders are filled as a reader would: ``RUN_ID`` with a run of theirs (by its short id),
``%3 %7`` with their agents' panes, ``plan.yaml`` with an approved spec.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.agent import agent_named, inputs
from supervisor.runref import short_id
from tests.conftest import REPO
from tests.helpers import retry_until
from tests.live_helpers import write_script

COMMAND = re.compile(r"^\s*(\.venv/bin/supervisor|supervisor|make|pip|createdb|export)\s")

NOT_HERE: list[tuple[str, str]] = [
    (r"^make (test|test-slow|e2e|lint|bench)$", "the test tiers and CI themselves (this test runs in make test-slow)"),
    (r"^make (report|lab)$", "install JupyterLab (the notebooks extra); the notebooks and reports have their own tests"),
    (r"^make demo$", "run by test_a_newcomer_walks_the_readme as `python -m supervisor.demo` in a fresh home"),
    (r"^pip install 'paneward\[fleet\]'$", "the fleet extra is installed by make test (tests/warehouse)"),
    (r"^createdb paneward$|^export SUPERVISOR_WAREHOUSE=\"ducklake|warehouse migrate --to",
     "a PostgreSQL server for a DuckLake (tests/warehouse/test_ducklake*.py start one)"),
    (r"--acp|runs answer RUN_ID OPTION", "Gemini CLI over ACP (make e2e runs it; tests/acp the scripted ACP agent)"),
    (r"^supervisor run --spec plan\.yaml", "a workflow run (tests/workflow/test_e2e_workflow.py runs `run --spec`)"),
    (r"^supervisor eval ", "the workbench walk (tests/evals run each eval command on its own lab)"),
    (r"^export PATH=", "the PATH step itself: this test's shell has it"),
]


def readme_commands(text: str) -> list[str]:
    """Every command line of the README's plain fenced blocks, without its trailing comment."""
    out = []
    for lang, body in re.findall(r"^```([a-z]*)\n(.*?)^```", text, re.S | re.M):
        first = next((ln for ln in body.splitlines() if ln.strip()), "")
        if lang or not COMMAND.match(first + " "):  # YAML, a folder layout: not commands
            continue
        for line in body.splitlines():
            if COMMAND.match(line + " "):
                out.append(re.split(r"\s+#\s", line.strip(), maxsplit=1)[0].strip())
    return out


def _why_not(line: str) -> str | None:
    return next((why for pattern, why in NOT_HERE if re.search(pattern, line)), None)


def test_every_readme_command_line_is_run_or_says_why_not() -> None:
    lines = readme_commands((REPO / "README.md").read_text(encoding="utf-8"))
    assert "supervisor status" in lines and ".venv/bin/supervisor runs" in lines
    unknown = [ln for ln in lines if _why_not(ln) is None and ln not in RUN_HERE]
    assert not unknown, f"README command lines neither run by tests/test_readme.py nor listed in NOT_HERE: {unknown}"


RUN_HERE = [
    ".venv/bin/supervisor runs",
    ".venv/bin/supervisor runs show last",
    ".venv/bin/supervisor runs why last",
    '.venv/bin/supervisor warehouse sql "select kind, count(*) from events group by kind"',
    "supervisor run -- claude",
    'supervisor run --task "fix the failing test" -- claude',
    'supervisor runs task RUN_ID "now add a changelog entry"',
    "supervisor attach %3 %7",
    "supervisor watch",
    "supervisor status",
    "supervisor runs resume RUN_ID",
    "supervisor runs stop RUN_ID",
    "supervisor runs review RUN_ID --by human",
]
"""Every README command this test runs, as the README prints it."""


class Shell:
    """A newcomer's shell: bash running each line as printed from the repository folder, with the
    documented PATH step and their own home and tmux server. ``readme`` runs a README line with its
    placeholders filled and remembers which README lines ran."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.readme_lines: set[str] = set()

    def popen(self, line: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.logs / f"out-{len(list(self.logs.glob('out-*')))}.txt"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(["bash", "-c", line], env=self.env, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        return proc, log

    def run(self, line: str, *, codes: tuple[int, ...] = (0,), timeout: float = 120) -> str:
        proc, log = self.popen(line)
        proc.wait(timeout=timeout)
        out = log.read_text()
        assert proc.returncode in codes, f"`{line}` exited {proc.returncode}:\n{out}"
        assert "Traceback" not in out, out
        return out

    def readme(self, line: str, fill: dict[str, str] | None = None, **kw: Any) -> str:
        assert line in RUN_HERE, line
        self.readme_lines.add(line)
        typed = line
        for placeholder, value in (fill or {}).items():
            typed = typed.replace(placeholder, value)
        return self.run(typed, **kw)

    def start_readme(self, line: str, fill: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
        assert line in RUN_HERE, line
        self.readme_lines.add(line)
        for placeholder, value in fill.items():
            line = line.replace(placeholder, value)
        return self.popen(line)


def _journal(home: Path, run_id: str) -> list[dict]:
    return [json.loads(ln) for ln in (home / "journals" / f"{run_id}.jsonl").read_text().splitlines() if ln]


def _noted(home: Path, run_id: str, note: str) -> bool:
    return any(e["kind"] == "note" and e["payload"].get("type") == note for e in _journal(home, run_id))


def _sessions(socket: str) -> list[str]:
    out = subprocess.run(["tmux", "-L", socket, "list-sessions", "-F", "#{session_name}"], capture_output=True,
                         text=True)
    return out.stdout.split()


def _stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    proc.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_newcomer_walks_the_readme(tmp_path: Path, cli_env: dict[str, str], tmux_socket: str) -> None:
    """The demo, then every README command this machine can run, typed as printed, in the README's
    order of use; nothing is left on the tmux server but agents still running, and a `kill -TERM`
    of a detached supervisor followed by `runs resume` continues the same run."""
    home = Path(cli_env["SUPERVISOR_HOME"])
    journals = home / "journals"
    bin_dir = tmp_path / "bin"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = dict(cli_env, SUPERVISOR_TMUX_SOCKET=tmux_socket, COLUMNS="80",
               PATH=f"{bin_dir}:{REPO / '.venv' / 'bin'}:{Path(sys.executable).parent}:{os.environ['PATH']}")
    sh = Shell(env, logs)

    def agent(steps: list[dict], name: str = "claude") -> Path:
        """`NAME` on PATH is the scripted agent playing these steps; returns its record."""
        n = len(list(tmp_path.glob("rec-*.jsonl")))
        record = tmp_path / f"rec-{n}.jsonl"
        agent_named(name, bin_dir, write_script(tmp_path, steps, name=f"script-{n}"), record)
        return record

    def runs() -> set[str]:
        return {p.stem for p in journals.glob("*.jsonl")}

    # make demo: every command it prints to look further runs as printed
    # the demo's supervised runs take seconds, its workbench walk (evaluating two policies over every
    # suite) minutes: on shared cores under load, up to about ten
    demo = subprocess.run([sys.executable, "-m", "supervisor.demo"], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    printed = [ln.split("  #")[0].strip() for ln in demo.stdout.split("look further")[1].splitlines()
               if ln.strip().startswith((".venv/bin/supervisor ", "supervisor "))]
    assert len(printed) == 7, demo.stdout
    for line in printed:
        sh.run(line)
    for line in RUN_HERE[:4]:
        sh.readme(line)

    # Daily use: a run until the agent exits (its session is closed), a run with a task
    agent([{"say": "Hello."}, {"exit": {"code": 0}}])
    out = sh.readme("supervisor run -- claude")
    assert "closed tmux session" in out, out
    agent([{"idle": {"id": "task"}}, {"spinner": {"seconds": 0.5}}, {"say": "Fixed."}, {"done": {"seconds": 600}}])
    sh.readme('supervisor run --task "fix the failing test" -- claude')

    # a run in the background: its next task, kill -TERM of its supervisor, resume, stop
    rec = agent([{"idle": {"id": "t1", "seconds": 600}}, {"spinner": {"seconds": 0.3}}, {"say": "Changelog added."},
                 {"done": {"seconds": 600}}])
    before = runs()
    out = sh.run("supervisor run --detach --session bg -- claude")
    assert f"tmux -L {tmux_socket} attach -t bg" in out, out
    run_id = retry_until(lambda: list(runs() - before), 60, message="the background run's journal")[0]
    ref = short_id(run_id, journals)
    retry_until(lambda: any(e["kind"] == "observation" for e in _journal(home, run_id)), 60,
                message="the background run to look at its pane")
    sh.readme('supervisor runs task RUN_ID "now add a changelog entry"', {"RUN_ID": ref})
    retry_until(lambda: inputs(rec) == ["now add a changelog entry"], 60, message="the task typed into the agent")
    out = sh.readme("supervisor status")
    assert ref in out and f"tmux -L {tmux_socket} attach -t bg" in out, out
    pid = next(e["payload"]["pid"] for e in _journal(home, run_id) if e["kind"] == "run_started")
    os.kill(pid, signal.SIGTERM)
    retry_until(lambda: _noted(home, run_id, "supervision_suspended"), 30, message="the run suspended")
    resumed, resumed_log = sh.start_readme("supervisor runs resume RUN_ID", {"RUN_ID": ref})
    try:
        retry_until(lambda: _noted(home, run_id, "supervision_resumed"), 60, message="the same run continued")
        out = sh.readme("supervisor runs stop RUN_ID", {"RUN_ID": ref})
        assert "handed to the live supervisor" in out, out
        resumed.wait(timeout=60)
    finally:
        _stop(resumed, signal.SIGKILL)
    assert resumed.returncode == 0, resumed_log.read_text()
    assert [e["payload"]["outcome"] for e in _journal(home, run_id) if e["kind"] == "run_ended"] == ["stopped"]
    assert runs() - before == {run_id}, "the same run went on"
    assert inputs(rec) == ["now add a changelog entry"], "nothing typed twice"

    # attach to two panes that already run agents
    panes = []
    for i in range(2):
        agent([{"spinner": {"seconds": 0.3}}, {"prompt": {"id": "p", "kind": "bash", "command": "npm test"}},
               {"say": "Done."}, {"exit": {"code": 0}}], name=f"agent{i}")
        panes.append(subprocess.run(["tmux", "-L", tmux_socket, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s",
                                     f"mine{i}", "-x", "120", "-y", "40", str(bin_dir / f"agent{i}")],
                                    env=env, capture_output=True, text=True, check=True).stdout.strip())
    sh.readme("supervisor attach %3 %7", {"%3 %7": " ".join(panes)})

    # watch the server until Ctrl-C
    watch, watch_log = sh.start_readme("supervisor watch", {})
    try:
        retry_until(lambda: "watching" in watch_log.read_text(), 60, message="watch to say what it watches")
        _stop(watch, signal.SIGINT)
    finally:
        _stop(watch, signal.SIGKILL)
    assert watch.returncode == 130 and f"watching tmux -L {tmux_socket}" in watch_log.read_text(), \
        watch_log.read_text()
    sh.readme("supervisor runs review RUN_ID --by human", {"RUN_ID": "last"})

    assert sh.readme_lines == set(RUN_HERE), set(RUN_HERE) - sh.readme_lines
    for name in _sessions(tmux_socket):  # nothing left behind but agents still running
        dead = subprocess.run(["tmux", "-L", tmux_socket, "list-panes", "-t", name, "-F", "#{pane_dead}"],
                              capture_output=True, text=True).stdout.split()
        assert "1" not in dead, f"session {name} was left behind with a dead pane"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_fresh_clone_runs_make_demo_as_the_readme_says(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """`git clone` of this commit, then `make demo` with nothing prepared: each install step says
    what it does and how long it took, no packaging deprecation is printed, the demo passes, every
    command it prints to look further runs as printed in the clone, and no tmux session is left."""
    clone = tmp_path / "paneward"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=120)
    env = {k: v for k, v in cli_env.items() if k not in ("VIRTUAL_ENV", "SUPERVISOR_TMUX_SOCKET")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    made = subprocess.run(["make", "demo"], cwd=clone, env=env, capture_output=True, text=True, timeout=1100)
    out = made.stdout + made.stderr
    assert made.returncode == 0, out[-4000:]
    assert "==> installing paneward" in out and re.search(r"==> done in \d+ s", out), out[:2000]
    assert "deprecated" not in out.lower() and "SetuptoolsDeprecationWarning" not in out, out[:4000]
    assert "export PATH=" in out  # the PATH step, said once by the install and by the demo
    printed = [ln.split("  #")[0].strip() for ln in made.stdout.split("look further")[1].splitlines()
               if ln.strip().startswith(".venv/bin/supervisor ")]
    assert len(printed) == 7, made.stdout
    for line in printed:
        r = subprocess.run(["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "Traceback" not in r.stderr, f"`{line}`: {r.stdout}{r.stderr}"
    assert not list(clone.glob("reports/postmortem-*")), "the postmortem went under the home, not the clone"
    socket = re.search(r"tmux -L (\S+)\)", made.stdout)
    assert socket is not None
    left = subprocess.run(["tmux", "-L", socket.group(1), "list-sessions"], capture_output=True, text=True)
    assert left.returncode != 0, f"the demo left sessions behind: {left.stdout}"
