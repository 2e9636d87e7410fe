"""The workbench: suites -> run -> expand -> replay -> compare (then canary, gate, registry).

- :mod:`evals.suites`: suite files (YAML/JSONL) validated into cases (screen, gate, episode),
  with one-line errors naming file, line, case and field;
- :mod:`evals.runner`: a policy over suites -> case results and metrics per suite and tag
  (severity-weighted pass rate, unsafe approvals, missed/false prompts, judge calls and cost);
- :mod:`evals.gates`, :mod:`evals.episodes`: the gate and episode case kinds;
- :mod:`evals.styles`: screens in each agent's style (authoring, expansion, the scripted agent);
- :mod:`evals.agent`: the one scripted stand-in agent, run in real tmux by tests, the demo,
  the benchmarks and episode cases; it records every key it gets and counts stray keys;
- :mod:`evals.expand`: seeded, deterministic synthetic variants;
- :mod:`evals.replay`: a policy over recorded observations and checkpoints, divergences classified;
- :mod:`evals.compare`, :mod:`evals.scorers`: blind A/B compare, Wilson interval, sign test;
- :mod:`evals.workbench`: the entry points with persistence (warehouse + JSON reports), used by
  ``supervisor eval ...`` and notebooks.

Everything here sees models and dataframes; judgment stays pure (``classify``, ``decide``,
scorers) and side effects (warehouse, reports, terminal) sit at the edges.
"""

from __future__ import annotations
