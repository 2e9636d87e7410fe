"""``supervisor classify``: classify screen captures offline and show what the policy would do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from supervisor.errors import InputError, UsageError

if TYPE_CHECKING:  # the classifier loads when the command runs, not for --help (bench/cli_start.py)
    from supervisor.models import Observation, RunState
    from supervisor.policy import Policy


def fresh_run_state() -> RunState:
    """A run that has been working for a minute and produced output a second ago: busy screens
    wait, prompts are answered as in a fresh run (no strikes, no cooldown, budget intact), an
    idle screen finishes (as if it were the last confirmation)."""
    from supervisor.models import RunState

    return RunState(run_id="classify", now=60.0, started_at=0.0, last_output_at=59.0, saw_work=True,
                    idle_streak=1)


def _collect(paths: tuple[str, ...]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(x for x in p.rglob("*.txt") if x.is_file())
            if not found:
                raise InputError(f"folder {p} holds no .txt screen captures",
                                 "point at .txt files, e.g. from `tmux capture-pane -p -e > screen.txt`")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        elif p.exists():
            raise InputError(f"{p} is neither a file nor a folder", "give screen capture files or folders")
        else:
            raise InputError(f"{p} does not exist", "check the path: give a .txt screen capture or a folder of them")
    return files


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except PermissionError as exc:
        raise InputError(f"cannot read {path}: permission denied", "check the file's permissions") from exc
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}", "check the path") from exc
    return data.decode("utf-8", errors="replace")


def classify_file(path: Path, policy: Policy, policy_id: str, cwd: str = "") -> tuple[Observation, dict]:
    """Classify one capture file (as seen in working directory ``cwd``, when given); returns the
    observation and the JSON record for it."""
    from supervisor.classify import classify
    from supervisor.decide import decide
    from supervisor.screen import make_screen

    screen = make_screen(_read(path), width=200, height=50)
    screen.cwd = cwd
    obs = classify(screen, policy)
    dec = decide(obs, fresh_run_state(), policy, policy_id=policy_id)
    record = {
        "path": str(path),
        "state": obs.state,
        "agent": obs.agent,
        "prompt": obs.prompt.model_dump(mode="json") if obs.prompt is not None else None,
        "blocker": obs.blocker.model_dump(mode="json") if obs.blocker is not None else None,
        "decision": {"kind": dec.kind, "keys": dec.keys, "approves": dec.approves, "reason": dec.reason},
    }
    if dec.next_action:
        record["decision"]["next_action"] = dec.next_action
    record["evidence"] = obs.evidence
    return obs, record


@click.command("classify")
@click.argument("paths", nargs=-1, required=True)
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy YAML file (default: the shipped baseline).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file, one per line.")
@click.option("--cwd", "cwd", default="", metavar="DIR",
              help="The pane's working directory when the screens were captured: writes and edits are judged "
                   "by where their path lands relative to it.")
def classify_cmd(paths: tuple[str, ...], policy_path: Path | None, as_json: bool, cwd: str) -> None:
    """Classify screen captures (PATH: .txt files, plain or with ANSI, or folders walked recursively
    in sorted order) and show what the policy would do on each.

    The decision is the one a fresh run would take on that screen: the agent has been working
    (so an idle screen shows `finish`), nothing was answered before (no strikes, cooldown or
    pause), and output arrived a moment ago (so a busy screen shows `wait`, not a stall).

    A write or edit is judged by where it lands: give the directory the agent worked in with
    --cwd (without it, only relative paths and the directory an agent shows on screen place a
    write; an absolute path that cannot be placed is never approved).

    With --json each line is {"path", "state", "agent", "prompt", "blocker", "decision":
    {"kind", "keys", "approves", "reason"}, "evidence"}; `approves` is true when the keys approve
    the prompted action, false when they decline it, null when nothing is answered.
    """
    if not paths:
        raise UsageError("no screen capture given", "pass one or more .txt files or folders")
    if cwd and not cwd.startswith(("/", "~")):
        raise UsageError(f"--cwd {cwd!r} is not an absolute directory", "give the full path, e.g. --cwd /home/me/app")
    from supervisor.policy import baseline_policy, load_policy

    policy = load_policy(policy_path) if policy_path else baseline_policy()
    pid = policy.policy_id
    files = _collect(paths)
    if as_json:
        for f in files:
            _, rec = classify_file(f, policy, pid, cwd)
            click.echo(json.dumps(rec, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"classify · policy {policy.name} ({pid})")
    for col in ("path", "state", "agent", "prompt / blocker", "decision", "keys"):
        table.add_column(col, overflow="fold")
    for f in files:
        obs, rec = classify_file(f, policy, pid, cwd)
        what = ""
        if obs.prompt is not None:
            risk = "" if obs.prompt.risk.level == "none" else f" [risk: {obs.prompt.risk.level}]"
            what = f"{obs.prompt.kind}: {obs.prompt.question}{risk}"
        elif obs.blocker is not None:
            what = f"{obs.blocker.kind}: {obs.blocker.message}"
        dec = rec["decision"]
        table.add_row(escape(str(f)), obs.state, obs.agent, escape(what), escape(f"{dec['kind']}: {dec['reason']}"),
                      escape(" ".join(dec["keys"])))
    Console().print(table)

