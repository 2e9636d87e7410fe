"""Workflows: a spec (the plan), checkpoints (what the agent says it did), verifiers (what the
supervisor checks itself), the gate (the pure decision over those), handoffs (instructions
pasted into the pane), notifications, run history.

Flow: pane output -> ``checkpoint`` (parse, exactly once) -> ``gate.decide_checkpoint`` ->
``verifiers`` (async) -> ``gate`` again -> ``handoff`` / ``notify``; ``controller`` ties them to
a run and rebuilds its state from the journal, so a restarted supervisor resumes.
"""

from __future__ import annotations
