"""Judge benchmark: what the optional judge adds to one decision.

Prints, per judged decision (classify + decide + judge + safety checks):
- consult: never (the default): overhead over classify + decide alone;
- a cache hit (replays, evals of recorded runs): no HTTP;
- a call through the real anthropic SDK to a loopback Messages API server (no model time:
  this is our + the SDK's overhead, the floor under any real call);
and the request size sent per consultation.

    .venv/bin/python bench/judge.py [--n N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from supervisor.classify import classify  # noqa: E402
from supervisor.decide import decide  # noqa: E402
from supervisor.judge import build_judge, judged_decision  # noqa: E402
from supervisor.judge.cache import canonical_json  # noqa: E402
from supervisor.judge.prompts import build_judge_request  # noqa: E402
from supervisor.models import RunState, Screen  # noqa: E402
from supervisor.policy import baseline_policy  # noqa: E402
from supervisor.settings import Settings  # noqa: E402
from tests.judge.messages_server import RunningServer, tool_reply  # noqa: E402

SCREEN = "\n".join([f"step {i}: compiled module_{i}.py" for i in range(30)]
                   + ["Press any key when you have inserted the next disk"])


def _ms(samples: list[float]) -> str:
    qs = statistics.quantiles(samples, n=20)
    return f"median {statistics.median(samples) * 1000:8.3f} ms   p95 {qs[18] * 1000:8.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    args = ap.parse_args()
    base = baseline_policy()
    state = RunState(run_id="run_bench", now=1000.0, started_at=900.0, last_output_at=999.0)

    def timed(fn) -> list[float]:  # type: ignore[no-untyped-def]
        out = []
        for i in range(args.n):
            t0 = time.perf_counter()
            fn(i)
            out.append(time.perf_counter() - t0)
        return out

    screens = [Screen(text=SCREEN + f"\n(batch {i})") for i in range(args.n)]
    rules_only = timed(lambda i: decide(classify(screens[i], base), state, base))
    never = timed(lambda i: judged_decision(classify(screens[i], base), screens[i], state, base, None))

    with tempfile.TemporaryDirectory() as tmp, RunningServer() as api:
        api.default = tool_reply("send_keys", {"keys": ["Enter"], "reason": "disk inserted"})
        policy = base.model_copy(update={"judge": base.judge.model_copy(update={
            "consult": "always", "budget_usd_per_run": 1e9, "budget_usd_per_day": 1e9})})
        judge = build_judge(policy, Settings(home=Path(tmp)), api_key="bench", base_url=api.base_url)
        assert judge is not None
        http = timed(lambda i: judged_decision(classify(screens[i], policy), screens[i], state, policy, judge))
        calls = api.calls
        hits = timed(lambda i: judged_decision(classify(screens[i], policy), screens[i], state, policy, judge))
        assert api.calls == calls, "cache hits must not call"
        size = len(canonical_json(build_judge_request(policy.judge, SCREEN, "first_look", [])))

    print(f"judge bench over {args.n} screens ({len(SCREEN)} chars each)")
    print(f"  classify + decide (rules only)          {_ms(rules_only)}")
    print(f"  judged_decision, consult: never         {_ms(never)}")
    print(f"  judged_decision, judge cache hit        {_ms(hits)}")
    print(f"  judged_decision, loopback HTTP via SDK  {_ms(http)}   ({calls} calls)")
    print(f"  request size per consultation           {size} chars of JSON (~{size // 4} tokens)")


if __name__ == "__main__":
    main()
