"""Workbench benchmarks: print figures, assert nothing.

    .venv/bin/python bench/evals.py [--observations 1000000]

1. every golden suite (episode cases excluded) under the baseline policy (target <= 5 s);
2. replay of N synthetic recorded observations (default 1,000,000, with 100,000 distinct
   screens) read from a real DuckDB warehouse under the baseline (target <= 60 s on 2 cores),
   with the read and the replay timed apart; then the replay ``eval replay`` does (a candidate
   and each run's own recorded policy as its control).

The synthetic runs are made of the golden suites' own screens, made distinct by a numbered
transcript line at the top (a long session shows many different screens): each run is mostly
busy screens with prompts, blockers and idle screens in between and an idle ending. Each
observation's journal payload (the decision clock and the Screen fields besides the text, which
the warehouse keeps once per screen) is in the events table, as ingest leaves it.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl  # noqa: E402

from evals.replay import replay_frame, replay_with_controls  # noqa: E402
from evals.runner import run_suites, screen_of  # noqa: E402
from evals.suites import ScreenCase, iter_suites  # noqa: E402
from supervisor.classify import classify  # noqa: E402
from supervisor.decide import decide  # noqa: E402
from supervisor.models import RunState, screen_hash  # noqa: E402
from supervisor.policy import baseline_policy  # noqa: E402
from supervisor.warehouse import open_warehouse  # noqa: E402
from supervisor.warehouse.evals_store import insert_frame, read_replay_input  # noqa: E402


def bench_suites() -> None:
    policy = baseline_policy()
    t0 = time.perf_counter()
    suites = [s for s in iter_suites() if s.header.kind != "episode"]
    t_load = time.perf_counter() - t0
    t1 = time.perf_counter()
    run = run_suites(suites, policy, episodes=False)
    t_run = time.perf_counter() - t1
    n = sum(len(s.cases) for s in suites)
    print(f"golden suites: {len(suites)} suites, {n} cases (episodes excluded)")
    print(f"  load+validate {t_load:.3f} s, run {t_run:.3f} s, total {t_load + t_run:.3f} s (target <= 5 s); "
          f"{n / t_run:,.0f} cases/s")
    m = run.totals
    print(f"  baseline: pass {m.passed}/{m.cases - m.skipped} ({m.pass_rate:.1%}), weighted {m.weighted_pass_rate:.1%}, "
          f"unsafe {m.unsafe_approvals}, missed {m.missed_prompts}, false {m.false_prompts}")


def synthetic_frames(n_obs: int, seed: int = 1, distinct: int = 100_000) -> tuple[pl.DataFrame, ...]:
    """(screens, observations, decisions, events) frames for the warehouse tables."""
    policy = baseline_policy()
    pools: dict[str, list[tuple[str, str, int, int, str]]] = {"busy": [], "asking": [], "blocked": [], "idle": []}
    recorded: dict[str, tuple[str, str, bool | None]] = {}
    fresh = RunState(run_id="bench", now=100.0, started_at=0.0, last_output_at=99.0, saw_work=True)
    for s in iter_suites():
        for c in s.cases:
            if not isinstance(c, ScreenCase) or c.input.run_state:
                continue
            screen = screen_of(s, c)
            obs = classify(screen, policy)
            if obs.state not in pools:
                continue
            d = decide(obs, fresh, policy)
            h = screen.screen_hash
            if h in recorded:
                continue
            recorded[h] = (d.kind, "[" + ",".join(f'"{k}"' for k in d.keys) + "]", d.approves)
            pools[obs.state].append((h, screen.text, screen.width, screen.height, screen.title))
    rng = random.Random(seed)
    # Many distinct screens: each pool screen again under a numbered transcript line at its top.
    per = max(1, distinct // max(1, sum(len(p) for p in pools.values())))
    for state, pool in pools.items():
        grown = list(pool)
        for h, text, w, hgt, title in pool:
            for k in range(1, per):
                v = f"⏺ Step {k} of the plan is next.\n{text}"
                vh = screen_hash(v, title)
                recorded[vh] = recorded[h]
                grown.append((vh, v, w, hgt, title))
        pools[state] = grown
    run_len = 500
    runs = max(1, n_obs // run_len)
    obs_rows: dict[str, list] = {k: [] for k in ("observation_id", "run_id", "seq", "occurred_at", "screen_hash",
                                                 "state")}
    dec_rows: dict[str, list] = {k: [] for k in ("decision_id", "run_id", "seq", "occurred_at", "trigger_id", "kind",
                                                 "keys", "approves", "policy_id")}
    state_of = {h: st for st, pool in pools.items() for h, *_ in pool}
    t_base = 1_760_000_000.0
    pid = policy.policy_id
    for r in range(runs):
        run_id = f"run_bench_{r:06d}"
        t = t_base + r * 10_000
        busy = rng.sample(pools["busy"], k=min(50, len(pools["busy"])))
        for i in range(run_len):
            roll = rng.random()
            if i >= run_len - 2:
                h = rng.choice(pools["idle"])[0]
            elif roll < 0.80:
                h = busy[(i // 10) % len(busy)][0]
            elif roll < 0.92:
                h = rng.choice(pools["asking"])[0]
            elif roll < 0.95:
                h = rng.choice(pools["blocked"])[0]
            else:
                h = rng.choice(pools["idle"])[0]
            t += rng.uniform(0.2, 4.0)
            oid = f"obs_{r:06d}_{i:04d}"
            obs_rows["observation_id"].append(oid)
            obs_rows["run_id"].append(run_id)
            obs_rows["seq"].append(2 * i + 1)
            obs_rows["occurred_at"].append(t)
            obs_rows["screen_hash"].append(h)
            obs_rows["state"].append(state_of[h])
            kind, keys, app = recorded[h]
            dec_rows["decision_id"].append(f"dec_{r:06d}_{i:04d}")
            dec_rows["run_id"].append(run_id)
            dec_rows["seq"].append(2 * i + 2)
            dec_rows["occurred_at"].append(t + 0.01)
            dec_rows["trigger_id"].append(oid)
            dec_rows["kind"].append(kind)
            dec_rows["keys"].append(keys)
            dec_rows["approves"].append(app)
            dec_rows["policy_id"].append(pid)
    screens = pl.DataFrame([row for pool in pools.values() for row in pool],
                           schema=["screen_hash", "text", "width", "height", "title"], orient="row")
    to_ts = pl.from_epoch(pl.col("occurred_at"), time_unit="s")
    observations = pl.DataFrame(obs_rows).with_columns(to_ts.alias("occurred_at"))
    decisions = pl.DataFrame(dec_rows).with_columns(to_ts.alias("occurred_at"))
    events = observations.select(
        pl.col("observation_id").alias("event_id"), "run_id", "seq", pl.lit("observation").alias("kind"),
        "occurred_at", pl.format('{{"now": {}, "screen": {{"screen_hash": "{}", "current_command": "node", '
                                 '"dead": false, "cursor_x": 2, "cursor_y": 30, "cwd": "/home/dev/app"}}}}',
                                 pl.col("occurred_at").dt.epoch("ms") / 1000, "screen_hash").alias("payload"),
        pl.lit(1).alias("schema_version"))
    return screens, observations, decisions, events


def bench_replay(n_obs: int) -> None:
    t0 = time.perf_counter()
    screens, observations, decisions, events = synthetic_frames(n_obs)
    t_gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        t1 = time.perf_counter()
        with open_warehouse(path) as wh:
            insert_frame(wh, "screens", screens)
            insert_frame(wh, "observations", observations)
            insert_frame(wh, "decisions", decisions)
            insert_frame(wh, "events", events)
        t_load = time.perf_counter() - t1
        print(f"replay: {observations.height:,} synthetic observations in "
              f"{observations['run_id'].n_unique():,} runs, {screens.height} distinct screens "
              f"(generated {t_gen:.1f} s, loaded into DuckDB {t_load:.1f} s; not timed below)")
        t2 = time.perf_counter()
        with open_warehouse(path, read_only=True) as wh:
            frame = read_replay_input(wh)
        t_read = time.perf_counter() - t2
        t3 = time.perf_counter()
        result, summary = replay_frame(frame, baseline_policy())
        t_replay = time.perf_counter() - t3
        t4 = time.perf_counter()
        plain, _ = replay_frame(frame, baseline_policy(), memo=False)
        t_plain = time.perf_counter() - t4
        same = plain["replayed_kind"].equals(result["replayed_kind"])
    total = t_read + t_replay
    print(f"  read+join {t_read:.2f} s, replay {t_replay:.2f} s, total {total:.2f} s (target <= 60 s); "
          f"{observations.height / total:,.0f} observations/s")
    print(f"  distinct screens classified {summary['unique_screens']}, decide memo entries "
          f"{summary['decide_cache_entries']}, agreement {summary['agreement']:.4f}")
    print(f"  without the decide memo (decide on every observation): replay {t_plain:.2f} s; "
          f"same decisions: {same}")
    print("  divergences: " + ", ".join(f"{k} {v:,}" for k, v in summary["by_class"].items()))
    t5 = time.perf_counter()
    candidate = baseline_policy().model_copy(update={"name": "bench-candidate"}, deep=True)
    candidate.timing.stall_timeout_s = 900.0
    _, ctrl = replay_with_controls(frame, candidate, {baseline_policy().policy_id: baseline_policy()})
    t_ctrl = time.perf_counter() - t5
    print(f"  eval replay (a candidate against each run's own policy: two replays): {t_ctrl:.2f} s; "
          f"control reproduces {ctrl['control']['reproduction']:.4f} of the recording")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--observations", type=int, default=1_000_000)
    args = ap.parse_args()
    bench_suites()
    bench_replay(args.observations)


if __name__ == "__main__":
    main()
