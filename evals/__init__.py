"""The workbench: suites -> run -> expand -> replay -> compare (then canary, gate, registry).

- :mod:`evals.suites`: suite files (YAML/JSONL) validated into cases (screen, gate, episode),
  with one-line errors naming file, line, case and field;
- :mod:`evals.safety`: the one definition of an unsafe answer, and of knobs that relax safety;
- :mod:`evals.runner`: a policy over suites -> case results and metrics per suite and tag
  (severity-weighted pass rate, unsafe answers, missed/false prompts, judge calls and cost);
- :mod:`evals.gate_cases`, :mod:`evals.episodes`: the workflow-gate and episode case kinds;
- :mod:`evals.styles`: screens in each agent's style (authoring, expansion, the scripted agent);
- :mod:`evals.agent`: the one scripted stand-in agent, run in real tmux by tests, the demo,
  the benchmarks and episode cases; it records every key it gets and counts stray keys;
- :mod:`evals.expand`: seeded, deterministic synthetic variants;
- :mod:`evals.replay`: the one replay: a policy over recorded runs against each run's own policy;
- :mod:`evals.compare`, :mod:`evals.scorers`, :mod:`evals.stats`: blind A/B compare over origin-case
  clusters with a safety veto; Wilson intervals, sign test, cluster bootstrap, Mann-Whitney U;
- :mod:`evals.gate`: ``candidates/gate.yaml`` and the promotion gate;
- :mod:`evals.workbench`: the entry points with persistence (warehouse + JSON reports), used by
  ``supervisor eval ...`` and notebooks.

Everything here sees models and dataframes; judgment stays pure (``classify``, ``decide``,
scorers) and side effects (warehouse, reports, terminal) sit at the edges.
"""

from __future__ import annotations
