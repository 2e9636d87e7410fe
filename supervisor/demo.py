"""``python -m supervisor.demo`` (``make demo``): the supervisor at work in under a minute.

Two scripted agents run in a private tmux server, supervised by one process:

* a Claude-style session given a task (as ``supervisor run --task``): its trust dialog is
  answered, the task is typed into its input box once it is ready, its tool/edit permissions
  are answered; a force push is escalated, and the demo then plays the human who declines it in
  the pane, so supervision resumes by itself; the task's turn finishes and the run ends;
* an aider-style session: a y/n question is answered; ``rm -rf`` of the home folder is
  escalated and left paused, so that run ends ``escalated`` and waits for a human.

Then a short workflow run: a 3-step spec, a scripted agent that reports checkpoints, one failing
verifier whose output goes back to the agent as a retry, and a finish held until a human review
(given by the demo on the human's behalf).

Everything is journaled and synced into the warehouse; a summary says where to look next.
Non-interactive (fine for CI); the private tmux server is removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from evals.agent import agent_command, stray_count
from supervisor.cli.live_cmds import with_attach
from supervisor.errors import PaneGone, WarehouseError, WarehouseLocked
from supervisor.policy import Policy, baseline_policy
from supervisor.runner import PaneRunner, RunConfig, Supervisor
from supervisor.runref import short_id
from supervisor.settings import Settings
from supervisor.warehouse import sync

CLAUDE_SCRIPT: dict[str, Any] = {
    "style": "claude",
    "cwd": "/home/dev/shop",
    "steps": [
        {"prompt": {"id": "trust", "kind": "trust_files", "dismiss": {"redraws": 1, "every_s": 0.3}}},
        {"idle": {"id": "task"}},
        {"say": "I'll start by running the test suite to see what fails."},
        {"spinner": {"seconds": 1.0, "verb": "Reading files"}},
        {"prompt": {"id": "tests", "kind": "bash", "command": "npm test", "description": "Run the test suite"}},
        {"spinner": {"seconds": 1.0, "verb": "Running tests"}},
        {"say": "Two tests fail in cart.ts: the discount is applied twice. Fixing it."},
        {"prompt": {"id": "edit", "kind": "edit", "file": "src/cart.ts"}},
        {"spinner": {"seconds": 0.8, "verb": "Editing"}},
        {"say": "Fixed. Now I'll publish the branch."},
        {"prompt": {"id": "push", "kind": "bash", "command": "git push --force origin main",
                    "description": "Force-push the fix to main",
                    "on_decline": [{"say": "Understood, I won't push. The fix is committed locally."}]}},
        {"spinner": {"seconds": 0.6, "verb": "Summarizing"}},
        {"say": "Done: the discount bug is fixed and all 14 tests pass."},
        {"done": {"seconds": 120}},
    ],
}

AIDER_SCRIPT: dict[str, Any] = {
    "style": "aider",
    "cwd": "/home/dev/tools",
    "steps": [
        {"say": "Aider v0.86.0\nMain model: sonnet with diff edit format\nGit repo: .git with 42 files"},
        {"prompt": {"id": "add", "kind": "yes_no", "question": "Add src/cleanup.py to the chat?"}},
        {"spinner": {"seconds": 0.8, "verb": "Waiting for sonnet"}},
        {"say": "To clear the caches I suggest this command:"},
        {"prompt": {"id": "rm", "kind": "yes_no", "question": "Run shell command?", "command": "rm -rf ~/"}},
        {"done": {"seconds": 120}},
    ],
}


CLAUDE_TASK = "Fix the discount bug in src/cart.ts and make the tests pass."


def demo_policy() -> Policy:
    """The baseline with the finish re-check shortened so the demo ends quickly."""
    pol = baseline_policy().model_copy(deep=True)
    pol.timing.recheck_s = 1.0
    pol.name = "baseline (demo timing)"
    return pol


def _write(folder: Path, name: str, script: dict[str, Any]) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(script, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _say(msg: str) -> None:
    print(msg, flush=True)


def look_further(home: Path | None, claude_run: str, aider_run: str, workflow_run: str, journals: Path) -> str:
    """The commands to look further, each runnable as printed in this shell (``.venv/bin/supervisor``
    until the PATH step, which is said once), runs by their short unique prefix."""
    import shlex

    from supervisor.cli.hints import path_step, program
    from supervisor.runref import short_ids

    prog = program() + (f" --home {shlex.quote(str(home))}" if home is not None else "")
    short = short_ids([claude_run, aider_run, workflow_run], journals)
    commands = [
        ("runs", "every run, newest first"),
        (f"runs show {short[claude_run]}", "the Claude-style run: decisions, friction"),
        (f"runs why {short[aider_run]}", "why `rm -rf ~/` was escalated"),
        (f"runs summarize {short[workflow_run]}", "the workflow run: steps, checks, retries"),
        (f"runs postmortem {short[workflow_run]}", "its postmortem, written under the supervisor's home"),
        ("status --all", "every run's state, pause and next action"),
        ('warehouse sql "select kind, count(*) from events group by kind order by 2 desc"', "every event"),
    ]
    width = max(len(f"{prog} {c}") for c, _ in commands[:-1])
    lines = ["\nlook further (each line runs as printed):"]
    step = path_step()
    if step is not None:
        lines.append(f"  (to type `supervisor` instead of {program()}: {step})")
    lines += [f"  {prog} {c}".ljust(width + 4) + f"  # {why}"[2 if len(f"  {prog} {c}") < width + 4 else 0:]
              for c, why in commands]
    return "\n".join(lines)


def _workbench(settings: Settings, args: argparse.Namespace) -> Any:
    """The workbench walk on its own tmux server (None with --no-workbench)."""
    if args.no_workbench:
        return None
    from supervisor.demo_workbench import default_prefix, walk
    from supervisor.surfaces.tmux import TmuxSurface

    wb_socket = f"sv-demo-wb-{os.getpid()}"
    try:
        return walk(settings.with_overrides(socket=wb_socket), wb_socket, _say, cli_prefix=default_prefix(args.home))
    finally:
        if not args.keep:
            with contextlib.suppress(PaneGone):
                TmuxSurface(wb_socket).cmd("kill-server")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m supervisor.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=None, help="supervisor home (default: $SUPERVISOR_HOME)")
    ap.add_argument("--keep", action="store_true", help="leave the private tmux server running afterwards")
    ap.add_argument("--no-workbench", action="store_true", help="skip the workbench walk (propose, gate, canary, "
                    "promote, rollback)")
    args = ap.parse_args(argv)

    from supervisor.surfaces.tmux import TmuxSurface

    settings = Settings().with_overrides(home=args.home).ensure()
    socket = f"sv-demo-{os.getpid()}"
    work = Path(tempfile.mkdtemp(prefix="sv-demo-"))
    surface = TmuxSurface(socket)
    claude_pane = surface.new_session("claude-demo", agent_command(_write(work, "claude", CLAUDE_SCRIPT),
                                                                   work / "claude.jsonl"), width=110, height=32)
    aider_pane = surface.new_session("aider-demo", agent_command(_write(work, "aider", AIDER_SCRIPT),
                                                                 work / "aider.jsonl"), width=110, height=32)
    policy = demo_policy()
    sup = Supervisor(surface, settings, RunConfig(policy=policy), socket=socket)
    t0 = time.time()
    human_done = {"claude": False}
    claude: PaneRunner | None = None

    def on_journal(runner: PaneRunner, ev: Any) -> None:
        p = ev.payload
        who = "claude-style" if runner.pane_id == claude_pane.pane_id else "aider-style "
        at = f"{ev.at - t0:5.1f}s"
        if ev.kind == "action" and p.get("kind") == "send_keys" and p.get("delivered") and p.get("confirmed") is None:
            _say(f"{at} {who} answered with {' '.join(p['keys'])}")
        elif ev.kind == "pause":
            nxt = with_attach(str(p["next_action"]), socket, runner.pane.session)
            _say(f"{at} {who} ESCALATED: {p['pause_reason']}\n{'':7}next: {nxt}")
        elif ev.kind == "resume":
            chose = f"; they chose {p['selected']!r}" if p.get("selected") else ""
            _say(f"{at} {who} resumed: the prompt is gone (by {p.get('by')} after {p.get('waited_s', 0):.1f}s{chose})")
        elif ev.kind == "task" and p.get("status") == "queued":
            _say(f"{at} {who} task: {p.get('text')}")
        elif ev.kind == "action" and p.get("kind") == "task" and p.get("confirmed"):
            _say(f"{at} {who} typed the task into the agent; it took it")
        elif ev.kind == "turn_finished":
            _say(f"{at} {who} turn {p['turn']} finished ({p['answered']} answered, {p['escalated']} escalated)")
        elif ev.kind == "run_ended":
            _say(f"{at} {who} run ended: {p['outcome']}")
        elif ev.kind == "notification" and p.get("ok") and p.get("channel") == "tmux":
            _say(f"{'':7}(shown in the pane with tmux display-message)")

    sup.on_journal = on_journal
    _say(f"demo: two scripted agents on a private tmux server (tmux -L {socket}), one supervisor\n")
    claude = sup.add_pane(claude_pane, config=RunConfig(policy=policy, task=CLAUDE_TASK))
    aider = sup.add_pane(aider_pane)

    def until() -> bool:
        # Play the human for the Claude-style session: decline the escalated force push.
        screen = claude.last_screen.text if claude.last_screen is not None else ""
        if claude.state.paused and "git push --force" in screen and not human_done["claude"]:
            human_done["claude"] = True
            _say(f"{time.time() - t0:5.1f}s human        declines the force push in the pane (tmux send-keys 3)")
            surface.send_keys(claude.pane_id, ["3"])
        # Finish once the Claude-style run is done and the aider-style one waits on its escalation.
        return claude.done and aider.state.paused

    try:
        sup.run(until=until, timeout=50)
    finally:
        sup.close(final_sync=True)
        if not args.keep:
            surface.cmd("kill-server")
    runs = [claude, aider]
    _say("\nsummary")
    for r, name in ((claude, "claude-style"), (aider, "aider-style")):
        evs = r.journal.events()
        count = {k: sum(1 for e in evs if e.kind == k) for k in ("observation", "decision", "pause", "friction")}
        answered = sum(1 for e in evs if e.kind == "action" and e.payload.get("kind") == "send_keys"
                       and e.payload.get("delivered") and e.payload.get("confirmed") is None)
        _say(f"  {name:12}  run {short_id(r.run_id, settings.journals_dir)}  outcome={r.outcome}  answers={answered}  escalations={count['pause']}  "
             f"observations={count['observation']}  friction={count['friction']}")
    synced = sup.feeder.syncs
    _say("\nworkflow: a 3-step spec with a failing verifier and a human review")
    from supervisor.workflow.demo import format_demo_summary, run_workflow_demo

    wf_socket = f"sv-demo-wf-{os.getpid()}"
    try:
        workflow = run_workflow_demo(settings.with_overrides(socket=wf_socket), timeout_s=60)
    finally:
        with contextlib.suppress(PaneGone):
            TmuxSurface(wf_socket).cmd("kill-server")
    _say(format_demo_summary(workflow, short_id(workflow["run_id"], settings.journals_dir)))
    walked = _workbench(settings, args)  # the workbench's half: supervisor/demo_workbench.py
    unsynced = ""
    try:
        sync(settings)
    except WarehouseLocked:
        unsynced = "  (locked: run `supervisor warehouse sync` later)"
    except WarehouseError as exc:  # e.g. a file a newer DuckDB wrote: the journals still hold every run
        unsynced = f"\n  not updated: {exc.one_line()}"
    else:
        if not synced:
            unsynced = "  (locked or unavailable: run `supervisor warehouse sync` later)"
    _say(f"\njournals: {settings.journals_dir}\nwarehouse: {settings.warehouse}{unsynced}")
    _say(look_further(args.home, claude.run_id, aider.run_id, workflow["run_id"], settings.journals_dir))
    stray = sum(stray_count(p) for p in (work / "claude.jsonl", work / "aider.jsonl", workflow["agent_record"]))
    _say(f"\nstray keys (keys that reached an agent while no prompt was live): {stray}")
    _say(f"done in {time.time() - t0:.1f}s")
    ok = (claude.outcome == "finished" and aider.outcome == "escalated" and workflow["outcome"] == "finished"
          and stray == 0 and (walked is None or walked.ok))
    if not ok:
        _say(f"demo did not go as planned: outcomes {[r.outcome for r in runs] + [workflow['outcome']]}, "
             f"stray keys {stray}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
