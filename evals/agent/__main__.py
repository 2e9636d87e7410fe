"""``python -m evals.agent``: run the scripted agent (see :mod:`evals.agent`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from evals.agent.player import Agent, play_turns_forever, run_at, run_random, turns_to_steps
from evals.agent.terminal import Recorder, Terminal


def load_script(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SystemExit(f"scripted agent: cannot read script {path}: {exc}") from exc
    if not isinstance(data, dict) or not (isinstance(data.get("steps"), list) or isinstance(data.get("turns"), list)):
        raise SystemExit(f"scripted agent: {path} needs a mapping with a `steps:` or `turns:` list")
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.agent", description="The scripted stand-in agent.")
    ap.add_argument("script", nargs="?", help="a script (YAML); see the evals.agent docstring")
    ap.add_argument("--record", help="append everything received to this JSONL file")
    ap.add_argument("--cwd", default=None, help="where file actions happen (checkpoint scripts)")
    ap.add_argument("--random", type=int, default=0, metavar="N", help="show N prompts at random moments")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gap", type=float, nargs=2, default=(0.3, 1.5), metavar=("MIN", "MAX"))
    ap.add_argument("--dismiss", type=int, default=0, metavar="N", help="random mode: redraw answered prompts N times")
    ap.add_argument("--at", default=None, metavar="T1,T2|@FILE",
                    help="show a prompt at each of these epoch times (@FILE: wait for FILE, then read them from it)")
    ap.add_argument("--style", default=None, help="claude | codex | aider (default: the script's, or claude)")
    ap.add_argument("--mode", default=None, help="redraw | append (default: the script's, or redraw)")
    ap.add_argument("--row-delay-ms", type=float, default=0.0, metavar="MS",
                    help="draw each row of a redraw on its own, MS apart (a slow-drawing agent; also the "
                         "script's row_delay_ms)")
    args = ap.parse_args(argv)
    record = Recorder(args.record)
    script: dict[str, Any] = load_script(args.script) if args.script else {"steps": []}
    style = args.style or script.get("style", "claude")
    mode = args.mode or script.get("mode", "redraw")
    workdir = Path(args.cwd).resolve() if args.cwd else Path.cwd()
    row_delay_ms = args.row_delay_ms or float(script.get("row_delay_ms", 0) or 0)
    with Terminal(row_delay_s=row_delay_ms / 1000.0) as term:
        agent = Agent(term, record, style=style, cwd=str(script.get("cwd", workdir)), mode=mode, workdir=workdir,
                      script=script)
        record("start", pid=os.getpid(), style=style, mode=mode, script=args.script)
        try:
            if args.random:
                run_random(agent, args.random, args.seed, (args.gap[0], args.gap[1]), dismiss=args.dismiss)
            elif args.at is not None:
                run_at(agent, args.at)
            elif "turns" in script:
                agent.run_steps(turns_to_steps(script))
                if agent.exit_code is None:
                    play_turns_forever(agent)
            else:
                agent.run_steps(script["steps"])
        except KeyboardInterrupt:
            agent.exit_code = 130
        code = agent.exit_code if agent.exit_code is not None else 0
        record("end", code=code)
        term.out.write("\r\n")
        term.out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
