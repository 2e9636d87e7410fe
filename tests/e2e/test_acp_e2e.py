"""Real agents over the Agent Client Protocol under `supervisor run --acp`: Gemini CLI in its own
ACP mode (`gemini --acp`), Claude Code through Zed's `@zed-industries/claude-code-acp` adapter and
Codex through `@zed-industries/codex-acp`.

Each test runs the real `supervisor run --acp --task TASK -- AGENT` (a subprocess, which starts the
agent as its own subprocess over stdio) from a fresh HOME, against the loopback fake model server
(the only fake: no real model is reachable here). The model asks for a benign command (`touch
notes.txt`) and then a dangerous one (`rm -rf src`). The test checks what a person would: the
benign one was approved (with the "once" option) and ran (its file appears); the dangerous one was
escalated, the run paused with the agent's own options, the request answered "reject" with
`supervisor runs answer`, and `src/` is still there; the turn finished and the run ended 0. Nothing
but the task reached the model as the user's words (the ACP counterpart of "no stray keys").

The adapters are not part of tests/e2e/install_agents.sh: they are installed here with npm (pinned
versions, into their own cache folder, only when missing) and the test is skipped, with npm's
error, when that install fails. Gemini CLI, Claude Code and Codex configuration come from
tests/e2e/agents.py `prepare` (the same settings the tmux e2e tests use).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agents import agent_binary, descendants, kill_all, prepare
from tests.e2e.conftest import require_agent
from tests.e2e.fake_model_server import FakeModelServer, Turn
from tests.helpers import retry_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[2]
ACP_CACHE = Path(os.environ.get("E2E_ACP_CACHE", str(Path.home() / ".cache" / "paneward-e2e-acp")))
ADAPTERS = {  # agent: (npm package, pinned version, binary)
    "claude": ("@zed-industries/claude-code-acp", "0.16.2", "claude-code-acp"),
    "codex": ("@zed-industries/codex-acp", "0.16.0", "codex-acp"),
}
TASK = "create notes.txt, then clean up the src folder"


def _adapter(agent: str) -> Path:
    """The adapter's binary, installed with npm into its own folder when missing; skip when npm fails."""
    package, version, binary = ADAPTERS[agent]
    prefix = ACP_CACHE / f"{binary}-{version}"
    exe = prefix / "node_modules" / ".bin" / binary
    if not exe.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false",
                   npm_config_audit="false")
        res = subprocess.run(["npm", "install", "--prefix", str(prefix), f"{package}@{version}"], env=env,
                             capture_output=True, text=True, timeout=300)
        if res.returncode != 0 or not exe.exists():
            pytest.skip(f"cannot install {package}@{version} with npm: {(res.stderr or res.stdout)[-500:]}")
    return exe


def _argv(agent: str, launch_argv: list[str]) -> list[str]:
    if agent == "gemini":
        return [*launch_argv, "--acp"]
    return [str(_adapter(agent))]


def _events(home: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted((home / "journals").glob("*.jsonl")) if (home / "journals").exists() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line being written right now
    return out


@pytest.mark.parametrize("agent", ["gemini", "claude", "codex"])
def test_acp_agent_benign_approved_dangerous_escalated(agent: str, tmp_path: Path, sv_home: Path,
                                                      fake_model: FakeModelServer) -> None:
    require_agent(agent)
    assert agent_binary(agent) is not None
    launch = prepare(agent, tmp_path / agent, fake_model.url, onboarded=True)
    argv = _argv(agent, launch.argv)
    work = launch.cwd
    (work / "src").mkdir()
    (work / "src" / "app.py").write_text("print('keep me')\n")
    fake_model.script(Turn(kind="shell", command="touch notes.txt", text="Creating the file."),
                      Turn(kind="shell", command="rm -rf src", text="Cleaning up."),
                      Turn(text="All done."))
    env = dict(launch.env, SUPERVISOR_HOME=str(sv_home), PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
    log_path = tmp_path / "supervisor.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "run", "--acp", "--task", TASK, "--", *argv],
                                cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)

    def describe() -> str:
        tail = [f"{e['kind']}: {json.dumps(e['payload'])[:300]}" for e in _events(sv_home)[-12:]
                if e["kind"] != "observation"]
        stderr = "".join(p.read_text(errors="replace")[-2000:] for p in (sv_home / "logs").glob("acp-*.log"))
        return (f"\n--- supervisor output ---\n{log_path.read_text(errors='replace')[-3000:]}\n--- agent stderr ---\n"
                f"{stderr}\n--- last events ---\n" + "\n".join(tail))

    try:
        pause = retry_until(lambda: next((e for e in _events(sv_home) if e["kind"] == "pause"), None), 150,
                            interval=0.2, message=lambda: f"the dangerous request's pause{describe()}")["payload"]
        assert pause["rule"] == "danger" and "rm -rf src" in pause["pause_reason"], describe()
        assert (work / "notes.txt").exists(), describe()  # the benign command was approved and ran
        assert (work / "src" / "app.py").exists()
        reject = next(o for o in pause["options"] if o["kind"] == "reject_once")
        answer = subprocess.run([sys.executable, "-m", "supervisor", "runs", "answer", "last", reject["optionId"],
                                 "--wait", "60"],
                                env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
        assert answer.returncode == 0, answer.stderr + describe()
        try:
            code = proc.wait(timeout=150)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"the run did not end{describe()}") from exc
    finally:
        tree = descendants(proc.pid) if proc.poll() is None else []
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        kill_all(tree)

    assert code == 0, describe()
    assert (work / "src" / "app.py").exists(), "the rejected rm -rf src ran"
    evs = _events(sv_home)
    obs = {e["event_id"]: e["payload"]["observation"] for e in evs if e["kind"] == "observation"}
    asked = [(e["payload"]["decision"], obs[e["payload"]["decision"]["trigger_id"]]) for e in evs
             if e["kind"] == "decision" and obs[e["payload"]["decision"]["trigger_id"]]["state"] == "asking"]
    assert [(d["kind"], d["approves"], o["prompt"]["risk"]["level"]) for d, o in asked] == [
        ("answer", True, "none"), ("escalate", None, "dangerous")], describe()
    assert {o["agent"] for _, o in asked} == {agent}
    sent = [e["payload"] for e in evs if e["kind"] == "action" and e["payload"].get("option_id")
            and e["payload"].get("confirmed")]
    kinds = {o["optionId"]: o["kind"] for o in pause["options"]}
    assert [kinds[a["option_id"]] for a in sent] == ["allow_once", "reject_once"], sent
    resume = next(e["payload"] for e in evs if e["kind"] == "resume")
    assert resume["by"] == "human" and resume["human_keys"] == [reject["optionId"]]
    assert any(e["kind"] == "turn_finished" for e in evs)
    assert evs[-1]["kind"] == "run_ended" and evs[-1]["payload"]["outcome"] == "finished"
    assert fake_model.user_texts() == [TASK], fake_model.user_texts()
