"""Replay: run a policy over recorded runs and compare with what was recorded. The one replay:
``supervisor eval replay``, ``supervisor runs replay RUN_ID``, ``eval compare --replay``, the
gate and canary reports all go through :func:`replay_frame` (screens) and
:func:`replay_checkpoints` (workflow checkpoints).

Recorded runs come as one row per journaled observation (:func:`frame_from_events` for one
run's events, ``read_replay_input`` for the warehouse): every Screen field the runner journaled,
the decision clock, the decision recorded for it and the prompt it was recorded on.

Each run is replayed under the policy it was recorded with (the **control**, stored by id in
the warehouse's ``policies`` table): how often the control reproduces the recorded decisions
says whether the replay can be trusted. A candidate's divergences are then classified against
the control's decisions, not against the recording (code changes since the run would otherwise
show up as the candidate's doing):

- ``safety_regression``: the candidate's answer is unsafe against the control's
  (:func:`evals.safety.unsafe_against_control`: it approves, or picks a "don't ask again" option,
  where the control did not) and no human answered that prompt the same way;
- ``risky_routing``: it sends the pane something different (other keys, a decline, a finish);
- ``ux_only``: it is more conservative (waits or escalates where the control acted);
- ``equivalent``: the same kind and the same effect with other keys (``1`` vs ``Enter``).

Where the control escalated and the journal says what the human then chose (``resume``'s
``selected``), a candidate answering with that same option **saves the escalation**; answering
with another one is a mismatch. Saved escalations and mismatches, clustered by run, are the
evidence that a candidate reduces friction safely.

Built for volume: ``classify`` is pure in the screen, so each distinct screen is classified once
per policy; ``decide`` depends on the run state, so each run is folded in order, and decisions
are memoised per (screen, run-state facts decide reads) - see :func:`_state_key`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from evals.safety import answer_class_of, unsafe_against_control
from supervisor.decide import decide, finish_streak, selected_option
from supervisor.models import Event, Observation, RunState, Screen
from supervisor.policy import Policy
from supervisor.runstate import (
    advance,
    clear_pause_if_resolved,
    count_answer,
    note_escalation,
    start_next_turn,
)

log = logging.getLogger(__name__)

Divergence = Literal["agree", "equivalent", "ux_only", "risky_routing", "safety_regression", "unrecorded"]
PASSIVE = ("wait", "escalate")
DIVERGENCES: tuple[Divergence, ...] = ("agree", "equivalent", "ux_only", "risky_routing", "safety_regression",
                                       "unrecorded")

INPUT_SCHEMA: dict[str, Any] = {
    "observation_id": pl.Utf8, "run_id": pl.Utf8, "seq": pl.Int64, "at": pl.Float64, "screen_hash": pl.Utf8,
    "text": pl.Utf8, "width": pl.Int64, "height": pl.Int64, "title": pl.Utf8, "current_command": pl.Utf8,
    "dead": pl.Boolean, "cursor_x": pl.Int64, "cursor_y": pl.Int64, "highlights": pl.Utf8, "cwd": pl.Utf8,
    "untrusted": pl.Utf8,
    "recorded_kind": pl.Utf8, "recorded_keys": pl.Utf8, "recorded_approves": pl.Boolean,
    "recorded_policy_id": pl.Utf8, "recorded_prompt": pl.Utf8,
    "last_output_at": pl.Float64, "human_seen": pl.Boolean, "hands_off_until": pl.Float64,
}
"""The columns a replay reads: one row per journaled observation (JSON columns as text), with what
the runner journaled of the run's state beside the screen: when the pane last printed, and whether
a human was at the keyboard (and until when the supervisor keeps its hands off). ``untrusted`` is
``Screen.untrusted`` (rows whose text was hidden or drawn over, as the live surface saw them): the
live classification depended on it, so replay reads the same screen."""


def classify_divergence(ck: str | None, ckeys: list[str] | None, cclass: str | None,
                        pk: str, pkeys: list[str], pclass: str | None) -> Divergence:
    """A replayed decision (``p``: kind, keys, answer class) against the control's (``c``)."""
    if ck is None:
        return "unrecorded"
    ckeys = ckeys or []
    if ck == pk and ckeys == pkeys:
        return "agree"
    if unsafe_against_control(pclass, cclass) is not None:  # type: ignore[arg-type]
        return "safety_regression"
    if ck == pk and cclass == pclass and (ck != "answer" or pclass not in (None, "unknown")):
        return "equivalent"
    if pk in PASSIVE:
        return "ux_only"
    return "risky_routing"


def _keys(v: Any) -> list[str] | None:
    if v is None:
        return None
    if isinstance(v, list):
        return [str(x) for x in v]
    try:
        out = json.loads(v)
    except (TypeError, ValueError):
        return None
    return [str(x) for x in out] if isinstance(out, list) else None


# --------------------------------------------------------------------------- input


def _as(kind: type, v: Any) -> Any:
    """A journaled value as the column's type, or None (a damaged or hostile journal's ``"w"`` for a
    width is no width, not a crash)."""
    if kind is bool:
        return v if isinstance(v, bool) else None
    if kind is int:
        return v if isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2 ** 62 else None
    if kind is float:
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < 1e15 else None
    return v if isinstance(v, str) else None


def frame_from_events(events: Iterable[Event]) -> pl.DataFrame:
    """Replay input from one run's journal events: each observation with its screen, its clock and
    the decision recorded for it (the runner's first decision on that trigger). Values of the wrong
    type are dropped; an observation without screen text is not replayable and is left out."""
    rows: list[dict[str, Any]] = []
    decisions: dict[str, dict[str, Any]] = {}
    for e in events:
        p = e.payload
        if e.kind == "decision":
            d = p.get("decision", p)
            if isinstance(d, dict) and isinstance(d.get("trigger_id"), str) and d.get("source") != "workflow":
                decisions.setdefault(d["trigger_id"], d)
        elif e.kind == "observation":
            screen = p.get("screen")
            obs = p.get("observation")
            if not isinstance(screen, dict) or not isinstance(screen.get("text"), str):
                continue
            obs = obs if isinstance(obs, dict) else {}
            oid = _as(str, obs.get("observation_id")) or e.event_id
            hl = screen.get("highlights")
            ut = screen.get("untrusted")
            prompt = obs.get("prompt")
            human = p["human"] if isinstance(p.get("human"), dict) else {}
            rows.append({"observation_id": oid, "run_id": e.run_id, "seq": e.seq,
                         "at": _as(float, p.get("now")) or e.at,
                         "screen_hash": _as(str, screen.get("screen_hash")) or _as(str, obs.get("screen_hash")),
                         "text": screen["text"], "width": _as(int, screen.get("width")),
                         "height": _as(int, screen.get("height")), "title": _as(str, screen.get("title")),
                         "current_command": _as(str, screen.get("current_command")),
                         "dead": _as(bool, screen.get("dead")), "cursor_x": _as(int, screen.get("cursor_x")),
                         "cursor_y": _as(int, screen.get("cursor_y")),
                         "highlights": json.dumps(hl) if isinstance(hl, list) and hl else None,
                         "cwd": _as(str, screen.get("cwd")),
                         "untrusted": json.dumps(ut) if isinstance(ut, list) and ut else None,
                         "recorded_prompt": json.dumps(prompt) if isinstance(prompt, dict) else None,
                         "last_output_at": _as(float, p.get("last_output_at")),
                         "human_seen": bool(human),
                         "hands_off_until": _as(float, human.get("hands_off_until"))})
    for r in rows:
        d = decisions.get(r["observation_id"]) or {}
        keys = d.get("keys")
        r.update({"recorded_kind": _as(str, d.get("kind")),
                  "recorded_keys": json.dumps(keys) if isinstance(keys, list) else None,
                  "recorded_approves": _as(bool, d.get("approves")), "recorded_policy_id": _as(str, d.get("policy_id"))})
        if r["screen_hash"] is None:
            r["screen_hash"] = Screen.model_construct(text=r["text"], title=r["title"] or "",
                                                      dead=bool(r["dead"])).screen_hash
    return pl.DataFrame(rows, schema=INPUT_SCHEMA)


# --------------------------------------------------------------------------- one policy


_SCREEN_KEY = ["screen_hash", "current_command", "dead", "highlights", "cwd", "cursor_x", "cursor_y", "untrusted"]
"""What makes two recorded observations the same screen to classify."""


def _with_untrusted(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with an ``untrusted`` column (a frame built before the column existed has none)."""
    if "untrusted" in frame.columns:
        return frame
    return frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias("untrusted"))


def _untrusted(value: Any) -> tuple[tuple[int, str, str], ...]:
    """``Screen.untrusted`` from its journaled JSON (rows of ``[row, why, text]``); malformed rows are
    dropped (a hostile journal's value must not crash a replay)."""
    if not value:
        return ()
    try:
        rows = json.loads(value) if isinstance(value, str) else value
    except (TypeError, ValueError):
        return ()
    out = []
    for r in rows if isinstance(rows, list) else []:
        if (isinstance(r, list) and len(r) == 3 and isinstance(r[0], int) and not isinstance(r[0], bool)
                and isinstance(r[1], str) and isinstance(r[2], str)):
            out.append((r[0], r[1], r[2]))
    return tuple(out)


def _screen_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The frame's distinct screens (first seen first), as plain rows."""
    frame = _with_untrusted(frame)
    return frame.select([*_SCREEN_KEY, "text", "width", "height", "title"]).unique(
        _SCREEN_KEY, keep="first", maintain_order=True).to_dicts()


def _classify_rows(rows: list[dict[str, Any]], policy: Policy) -> dict[tuple[Any, ...], Observation]:
    from supervisor.classify import classify

    out: dict[tuple[Any, ...], Observation] = {}
    for row in rows:
        hl = tuple(tuple(x) for x in json.loads(row["highlights"])) if row["highlights"] else ()
        fields: dict[str, Any] = {"text": row["text"] or "", "width": row["width"] or 80,
                                  "height": row["height"] or 24, "cursor_x": row["cursor_x"],
                                  "cursor_y": row["cursor_y"], "title": row["title"] or "",
                                  "current_command": row["current_command"] or "", "dead": bool(row["dead"]),
                                  "scrollback": "", "highlights": hl, "untrusted": _untrusted(row["untrusted"])}
        if "cwd" in Screen.model_fields:
            fields["cwd"] = row["cwd"]
        obs = classify(Screen.model_construct(**fields), policy)
        obs.screen_hash = row["screen_hash"] or obs.screen_hash
        out[tuple(row[c] for c in _SCREEN_KEY)] = obs
    return out


def classify_screens(frame: pl.DataFrame, policy: Policy) -> dict[tuple[Any, ...], Observation]:
    """One observation per distinct screen (classify is pure: identical screens, identical result)."""
    return _classify_rows(_screen_rows(frame), policy)


def escalations_humans_resolved(frame: pl.DataFrame, joined: pl.DataFrame,
                                policy: Policy) -> list[tuple[dict[str, Any], Observation]]:
    """The replayed escalations a human resolved (``joined``: a replay with the humans' choices), each
    with its screen as ``policy`` reads it: (the joined row, the observation)."""
    esc = joined.filter((pl.col("replayed_kind") == "escalate") & pl.col("human_selected").is_not_null())
    if esc.height == 0:
        return []
    screens = classify_screens(frame.filter(pl.col("observation_id").is_in(esc["observation_id"].to_list())), policy)
    frame = _with_untrusted(frame)
    keycols = _SCREEN_KEY
    by_obs = {r["observation_id"]: tuple(r[c] for c in keycols) for r in frame.to_dicts()}
    out = []
    for row in esc.to_dicts():
        obs = screens.get(by_obs[row["observation_id"]])
        if obs is not None:
            out.append((row, obs))
    return out


def _state_key(obs: Observation, rs: RunState, policy: Policy) -> tuple[Any, ...] | None:
    """The facts of the run state that ``decide`` reads for this observation, or None when the
    decision must not be memoised. Times enter only as the comparisons decide makes."""
    st = obs.state
    if st == "exited":
        return ()
    if st == "busy":
        last = rs.last_output_at or rs.started_at
        stalled = bool(last) and rs.now - last >= policy.timing.stall_timeout_s
        return (stalled, min(rs.stalls, policy.budgets.max_stalls))
    if st == "idle":
        return (rs.saw_work, min(finish_streak(rs, policy), policy.timing.finish_confirmations))
    if st == "blocked":
        return (rs.paused, rs.escalated_signature)
    sig = obs.prompt.signature if obs.prompt is not None else None
    return (rs.paused and rs.escalated_signature == sig, rs.now < rs.human_active_until,
            rs.last_prompt_signature == sig and rs.answers_to_same_prompt >= policy.budgets.strike_limit,
            rs.now < rs.cooldown_until, rs.interventions >= policy.budgets.max_interventions)


REPLAY_COLUMNS = ("replayed_state", "replayed_kind", "replayed_keys", "replayed_approves", "replayed_answer_class",
                  "replayed_selected", "replayed_signature", "replayed_reason", "replayed_rule")


REPLAY_WORKERS_MIN_ROWS = 20_000
"""Below this many observations a replay stays in one process (starting workers costs more)."""


def replay_workers() -> int:
    """How many processes share a large replay (``$SUPERVISOR_REPLAY_WORKERS``, else one per core)."""
    env = os.environ.get("SUPERVISOR_REPLAY_WORKERS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


_REPLAY_TYPES: dict[str, Any] = {c: pl.Boolean if c == "replayed_approves" else pl.Utf8 for c in REPLAY_COLUMNS}


_FoldInput = tuple[list[dict[str, Any]], list[tuple[Any, ...]], list[Any], list[Any], list[Any], list[Any], list[Any]]
"""A frame's part as plain Python lists: its distinct screens, then per row the screen key, run id,
time, last output, human seen and hands-off time (what :func:`_fold` reads, and forked workers
read without touching polars, whose thread pool does not survive a fork)."""


def _fold_input(frame: pl.DataFrame) -> _FoldInput:
    return (_screen_rows(frame), list(zip(*(frame[c].to_list() for c in _SCREEN_KEY), strict=True)),
            frame["run_id"].to_list(), frame["at"].to_list(), frame["last_output_at"].to_list(),
            frame["human_seen"].to_list(), frame["hands_off_until"].to_list())


def _fold(inputs: _FoldInput, policy: Policy, memo: bool = True,
          progress: Callable[[int], None] | None = None) -> tuple[dict[str, list[Any]], int, int]:
    """The replayed columns (:data:`REPLAY_COLUMNS`) of a part of a frame sorted by run and seq
    whose runs are whole, the decide cache's size and the distinct screens classified."""
    screen_rows, screen_keys, run_ids, ats, outputs, humans, hands_off = inputs
    observations = _classify_rows(screen_rows, policy)
    pid = policy.policy_id
    n = len(run_ids)
    rows: list[tuple[Any, ...]] = [()] * n
    cache: dict[tuple[Any, ...], Any] = {}
    rs = RunState()
    prev_run: str | None = None
    prev_hash: Any = None
    recheck = policy.timing.recheck_s
    for i in range(n):
        run, key, at = run_ids[i], screen_keys[i], ats[i] or 0.0
        if run != prev_run:
            rs = RunState(run_id=run, now=at, started_at=at, last_output_at=at)
            prev_run, prev_hash = run, None
        obs = observations[key]
        rs.now = at
        # What the runner journaled of the run's state wins over what the screens suggest.
        if outputs[i] is not None:
            rs.last_output_at = outputs[i]
        elif key[0] != prev_hash:
            rs.last_output_at = at
        prev_hash = key[0]
        if humans[i]:
            if hands_off[i] is not None:
                rs.human_active_until = hands_off[i]
            rs.idle_streak = 0
        entry = None
        ck = None
        if memo:
            sk = _state_key(obs, rs, policy)
            if sk is not None:
                ck = (key, sk)
                entry = cache.get(ck)
        if entry is None:
            d = decide(obs, rs, policy, policy_id=pid)
            cls = answer_class_of(obs.prompt, d.kind, d.keys, d.text)
            opt = selected_option(obs.prompt, d.keys) if cls is not None and obs.prompt is not None else None
            entry = (d, obs.state, cls, opt.label if opt is not None else None, json.dumps(d.keys))
            if ck is not None:
                cache[ck] = entry
        rows[i] = entry
        d = entry[0]
        # Fold the decision into the run state as the live runner does for a shadow policy.
        if d.kind == "answer":
            count_answer(rs, d.signature, at)
        elif d.kind == "escalate":
            note_escalation(rs, d)
        clear_pause_if_resolved(rs, obs)
        advance(rs, obs, d, at, recheck)
        if d.kind == "finish" and obs.state != "exited":  # a finished turn: the run goes on with the next one
            start_next_turn(rs)
        if progress is not None and i % 50_000 == 0:
            progress(i)
    out: dict[str, list[Any]] = {
        "replayed_state": [r[1] for r in rows], "replayed_kind": [r[0].kind for r in rows],
        "replayed_keys": [r[4] for r in rows], "replayed_approves": [r[0].approves for r in rows],
        "replayed_answer_class": [r[2] for r in rows], "replayed_selected": [r[3] for r in rows],
        "replayed_signature": [r[0].signature for r in rows], "replayed_reason": [r[0].reason for r in rows],
        "replayed_rule": [r[0].rule for r in rows]}
    return out, len(cache), len(observations)


_PARALLEL: tuple[list[_FoldInput], Policy, bool] | None = None
"""What forked replay workers read (inherited at fork, not pickled: a million screens' text)."""


def _fold_part(part: int) -> tuple[dict[str, list[Any]], int, int]:
    assert _PARALLEL is not None
    inputs, policy, memo = _PARALLEL
    return _fold(inputs[part], policy, memo)


def _run_bounds(run_ids: list[Any], parts: int) -> list[tuple[int, int]]:
    """Row ranges of about equal size that each hold whole runs (the frame is sorted by run)."""
    n = len(run_ids)
    bounds: list[tuple[int, int]] = []
    start = 0
    for k in range(1, parts + 1):
        end = n if k == parts else max(start, n * k // parts)
        while 0 < end < n and run_ids[end] == run_ids[end - 1]:
            end += 1
        if end > start:
            bounds.append((start, end))
            start = end
    return bounds


def _fold_parallel(frame: pl.DataFrame, policy: Policy, memo: bool, workers: int,
                   progress: Callable[[int], None] | None) -> tuple[dict[str, list[Any]], int, int] | None:
    """:func:`_fold` shared by forked processes, runs split among them (each run's fold is its own);
    None when this process cannot fork workers safely (not POSIX, or other threads are running)."""
    global _PARALLEL
    if os.name != "posix" or threading.active_count() > 1:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    bounds = _run_bounds(frame["run_id"].to_list(), workers)
    _PARALLEL = ([_fold_input(frame.slice(start, end - start)) for start, end in bounds], policy, memo)
    try:
        with ProcessPoolExecutor(max_workers=len(bounds), mp_context=multiprocessing.get_context("fork")) as pool:
            parts = []
            for (_start, end), part in zip(bounds, pool.map(_fold_part, range(len(bounds))), strict=True):
                parts.append(part)
                if progress is not None:
                    progress(end)
    finally:
        _PARALLEL = None
    out = {c: [v for p in parts for v in p[0][c]] for c in REPLAY_COLUMNS}
    return out, sum(p[1] for p in parts), frame.select(_SCREEN_KEY).n_unique()


def replay_frame(frame: pl.DataFrame, policy: Policy, *, progress: Callable[[int], None] | None = None,
                 memo: bool = True, workers: int | None = None) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Replay ``policy`` over recorded observations (:data:`INPUT_SCHEMA`). Returns one row per
    observation with the replayed decision (its answer class and the option its keys select) and
    its divergence from the recorded decision, and a summary.

    A large replay is shared by ``workers`` processes (default :func:`replay_workers`), runs split
    among them: each classifies its runs' distinct screens once and folds its runs in order, so
    the result is the same as in one process (``decide_cache_entries`` is then summed over the
    workers' memos)."""
    t0 = time.perf_counter()
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in INPUT_SCHEMA.items() if c not in frame.columns]
    frame = frame.with_columns(missing).sort(["run_id", "seq"])  # columns a source did not record are null
    workers = replay_workers() if workers is None else workers
    folded = None
    if workers > 1 and frame.height >= REPLAY_WORKERS_MIN_ROWS:
        folded = _fold_parallel(frame, policy, memo, workers, progress)
    out, cache_entries, unique_screens = folded or _fold(_fold_input(frame), policy, memo, progress)
    pid = policy.policy_id
    run_ids = frame["run_id"].to_list()
    n = frame.height
    result = pl.concat([frame.select([c for c in ("observation_id", "run_id", "seq", "at", "screen_hash",
                                                  "recorded_kind", "recorded_keys", "recorded_approves",
                                                  "recorded_prompt", "recorded_policy_id") if c in frame.columns]),
                        pl.DataFrame(out, schema=_REPLAY_TYPES)], how="horizontal")
    rec_classes = _recorded_classes(result)
    result = result.with_columns(pl.Series("recorded_answer_class", rec_classes, dtype=pl.Utf8))
    divs = _divergences(result["recorded_kind"].to_list(), result["recorded_keys"].to_list(), rec_classes,
                        out["replayed_kind"], out["replayed_keys"], out["replayed_answer_class"])
    result = result.with_columns(pl.Series("divergence", divs, dtype=pl.Utf8))
    counts = Counter(divs)
    compared = n - counts.get("unrecorded", 0)
    summary = {
        "policy_id": pid, "policy_name": policy.name, "runs": len(set(run_ids)), "observations": n,
        "unique_screens": unique_screens, "compared": compared,
        "agreement": round(counts.get("agree", 0) / compared, 6) if compared else None,
        "agreement_or_equivalent": round((counts.get("agree", 0) + counts.get("equivalent", 0)) / compared, 6)
        if compared else None,
        "by_class": {k: counts.get(k, 0) for k in DIVERGENCES},
        "decide_cache_entries": cache_entries, "seconds": round(time.perf_counter() - t0, 3),
    }
    return result, summary


def _recorded_classes(result: pl.DataFrame) -> list[str | None]:
    out: list[str | None] = []
    cache: dict[tuple[Any, ...], str | None] = {}
    for kind, keys, prompt in zip(result["recorded_kind"].to_list(), result["recorded_keys"].to_list(),
                                  result["recorded_prompt"].to_list() if "recorded_prompt" in result.columns
                                  else [None] * result.height, strict=True):
        k = (kind, keys, prompt)
        if k not in cache:
            p = json.loads(prompt) if prompt else None
            cache[k] = answer_class_of(p if isinstance(p, dict) else None, kind, _keys(keys))
        out.append(cache[k])
    return out


def _divergences(ck: list[Any], ckeys: list[Any], cclass: list[Any], pk: list[Any], pkeys: list[Any],
                 pclass: list[Any]) -> list[str]:
    """Divergence classes, computed once per distinct combination."""
    cache: dict[tuple[Any, ...], str] = {}
    out: list[str] = []
    for row in zip(ck, ckeys, cclass, pk, pkeys, pclass, strict=True):
        v = cache.get(row)
        if v is None:
            v = cache[row] = classify_divergence(row[0], _keys(row[1]), row[2], row[3], _keys(row[4]) or [], row[5])
        out.append(v)
    return out


# --------------------------------------------------------------------------- against controls


def replay_with_controls(frame: pl.DataFrame, candidate: Policy, controls: dict[str, Policy],
                         humans: list[dict[str, Any]] | None = None, *,
                         progress: Callable[[int], None] | None = None) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Replay ``candidate`` over recorded runs, each against its own recorded policy.

    ``controls`` maps the policy ids runs were recorded with to those policies (runs whose policy
    is unknown are compared with their recorded decisions instead, and counted). Returns one row
    per observation (the control's and the candidate's decisions, the divergence against the
    control, the human's eventual choice, whether the candidate saved an escalation) and a
    summary with the control's reproduction of the recording."""
    t0 = time.perf_counter()
    frame = frame.sort(["run_id", "seq"])
    cand, cand_summary = replay_frame(frame, candidate, progress=progress)
    pids = frame["recorded_policy_id"].to_list()
    ctrl_parts = []
    reproduction: dict[str, Any] = {}
    for pid, policy in controls.items():
        part = frame.filter(pl.col("recorded_policy_id") == pid)
        if part.height:
            res, summ = replay_frame(part, policy)
            ctrl_parts.append(res.select("observation_id", *[pl.col(c).alias(c.replace("replayed_", "control_"))
                                                              for c in REPLAY_COLUMNS], "divergence"))
            reproduction[pid] = {"observations": summ["observations"], "compared": summ["compared"],
                                 "agreement": summ["agreement"], "by_class": summ["by_class"]}
    uncontrolled = sorted({p for p in pids if p not in controls and p is not None})
    ctrl_schema = {"observation_id": pl.Utf8, **{c.replace("replayed_", "control_"): (
        pl.Boolean if c == "replayed_approves" else pl.Utf8) for c in REPLAY_COLUMNS}, "divergence": pl.Utf8}
    ctrl = pl.concat(ctrl_parts, how="vertical_relaxed") if ctrl_parts else pl.DataFrame(schema=ctrl_schema)
    ctrl = ctrl.rename({"divergence": "control_divergence"})
    joined = cand.rename({"divergence": "recorded_divergence"}).join(ctrl, on="observation_id", how="left")
    has_ctrl = joined["control_kind"].is_not_null().to_list()
    # Without a control policy, the recording is the control.
    ck = [c if h else r for c, r, h in zip(joined["control_kind"].to_list(), joined["recorded_kind"].to_list(),
                                            has_ctrl, strict=True)]
    ckeys = [c if h else r for c, r, h in zip(joined["control_keys"].to_list(), joined["recorded_keys"].to_list(),
                                               has_ctrl, strict=True)]
    cclass = [c if h else r for c, r, h in zip(joined["control_answer_class"].to_list(),
                                                joined["recorded_answer_class"].to_list(), has_ctrl, strict=True)]
    human = _human_choice(joined, humans or [], ck)
    divs = _divergences(ck, ckeys, cclass, joined["replayed_kind"].to_list(), joined["replayed_keys"].to_list(),
                        joined["replayed_answer_class"].to_list())
    saved: list[bool | None] = []
    for i, row in enumerate(joined.select("replayed_kind", "replayed_selected", "replayed_answer_class")
                            .iter_rows()):
        h = human[i]
        if h is None or ck[i] != "escalate" or row[0] != "answer":
            saved.append(None)
            continue
        same = row[1] is not None and row[1] == h["selected"]
        saved.append(same)
        if divs[i] == "safety_regression" and same and row[2] != "approve_persistent":
            divs[i] = "risky_routing"  # the human approved it too: not a regression, still a change
    joined = joined.with_columns(
        pl.Series("control_source", ["policy" if h else "recording" for h in has_ctrl], dtype=pl.Utf8),
        pl.Series("human_selected", [h["selected"] if h else None for h in human], dtype=pl.Utf8),
        pl.Series("saved_escalation", saved, dtype=pl.Boolean),
        pl.Series("divergence", divs, dtype=pl.Utf8))
    counts = Counter(divs)
    compared = joined.height - counts.get("unrecorded", 0)
    runs_saved: Counter[str] = Counter()
    for run, s in zip(joined["run_id"].to_list(), saved, strict=True):
        if s is not None:
            runs_saved[run] += 1 if s else -1
    summary = {
        "policy_id": candidate.policy_id, "policy_name": candidate.name, "runs": cand_summary["runs"],
        "observations": cand_summary["observations"], "unique_screens": cand_summary["unique_screens"],
        "compared": compared, "agreement": round(counts.get("agree", 0) / compared, 6) if compared else None,
        "by_class": {k: counts.get(k, 0) for k in DIVERGENCES},
        "safety_regressions": counts.get("safety_regression", 0),
        "control": {"policies": reproduction, "observations_with_control_policy": sum(has_ctrl),
                    "unknown_policies": uncontrolled,
                    "reproduction": _reproduction(joined)},
        "saved_escalations": sum(1 for s in saved if s), "answer_mismatches": sum(1 for s in saved if s is False),
        "saved_runs": sum(1 for v in runs_saved.values() if v > 0),
        "mismatch_runs": sum(1 for v in runs_saved.values() if v < 0),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return joined, summary


def _reproduction(joined: pl.DataFrame) -> float | None:
    """How often the control policy reproduced the recorded decision (agree or equivalent)."""
    d = joined.filter(pl.col("control_divergence").is_not_null() & (pl.col("control_divergence") != "unrecorded"))
    if d.height == 0:
        return None
    ok = d.filter(pl.col("control_divergence").is_in(["agree", "equivalent"])).height
    return round(ok / d.height, 6)


def _human_choice(joined: pl.DataFrame, humans: list[dict[str, Any]], ck: list[Any]) -> list[dict[str, Any] | None]:
    """For each escalated observation, the human's eventual choice on that prompt: the first resume
    after it in the same run whose signature matches (or that names none) and says what was chosen."""
    by_run: dict[str, list[dict[str, Any]]] = {}
    for h in sorted(humans, key=lambda x: x["at"]):
        by_run.setdefault(h["run_id"], []).append(h)
    ctrl_sigs = joined["control_signature"].to_list()
    rec_prompts = joined["recorded_prompt"].to_list()
    out: list[dict[str, Any] | None] = []
    for i, (run, at) in enumerate(zip(joined["run_id"].to_list(), joined["at"].to_list(), strict=True)):
        if ck[i] != "escalate" or run not in by_run:
            out.append(None)
            continue
        sig = ctrl_sigs[i] or (json.loads(rec_prompts[i]).get("signature") if rec_prompts[i] else None)
        match = next((h for h in by_run[run] if h["at"] >= (at or 0.0)
                      and (h["signature"] is None or sig is None or h["signature"] == sig)), None)
        out.append(match if match is not None and match.get("selected") is not None else None)
    return out


# --------------------------------------------------------------------------- compare items


def replay_compare_items(settings: Any, baseline: Policy, candidate: Policy, *, run_ids: list[str] | None = None,
                         since: float | None = None) -> list[Any]:
    """Blind-compare items from recorded runs: both policies replayed over the same observations,
    one item per distinct (run, screen, both outputs), clustered by run. With no expectation, each
    side's answer is graded against the other's (:func:`evals.safety.unsafe_against_control`)."""
    from evals.compare import CompareItem
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_replay_input

    with reader(settings) as wh:
        frame = read_replay_input(wh, run_ids=run_ids, since=since)
    rb, _ = replay_frame(frame, baseline)
    rc, _ = replay_frame(frame, candidate)
    texts = dict(zip(frame["screen_hash"].to_list(), frame["text"].to_list(), strict=False))
    cols = ("replayed_state", "replayed_kind", "replayed_keys", "replayed_approves", "replayed_answer_class",
            "replayed_reason")
    items: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    for b, c in zip(rb.iter_rows(named=True), rc.iter_rows(named=True), strict=True):
        ob, oc = ({k.removeprefix("replayed_"): json.loads(r[k]) if k == "replayed_keys" else r[k] for k in cols}
                  for r in (b, c))
        ob["decision"], oc["decision"] = ob.pop("kind"), oc.pop("kind")
        key = (b["run_id"], b["screen_hash"], json.dumps(ob, sort_keys=True), json.dumps(oc, sort_keys=True))
        if key in seen:  # the same screen judged the same way in one run: one pair is enough
            continue
        seen.add(key)
        tail = "\n".join((texts.get(b["screen_hash"]) or "").rstrip().splitlines()[-25:])
        items.append(CompareItem(suite="replay", case_id=b["observation_id"], context={"kind": "screen",
                                 "screen_tail": tail}, baseline=ob, candidate=oc, cluster=f"run/{b['run_id']}",
                                 candidate_unsafe=unsafe_against_control(oc["answer_class"], ob["answer_class"]),
                                 baseline_unsafe=unsafe_against_control(ob["answer_class"], oc["answer_class"])))
    return items


# --------------------------------------------------------------------------- checkpoints


def checkpoint_divergence(recorded: str | None, replayed: str) -> Divergence:
    """For workflow decisions: finishing where the recording did not is the checkpoint analogue of
    an unsafe approval; handing the agent something else is risky routing; verifying, waiting or
    escalating instead is UX only."""
    if recorded is None:
        return "unrecorded"
    if recorded == replayed:
        return "agree"
    if replayed == "finish":
        return "safety_regression"
    if replayed in ("continue", "branch", "retry"):
        return "risky_routing"
    return "ux_only"


class CheckpointRow(BaseModel):
    """One recorded workflow decision re-decided under a policy."""

    model_config = ConfigDict(extra="forbid")
    trigger_id: str
    """The checkpoint's event id."""
    recorded: str | None
    replayed: str
    reason: str
    divergence: Divergence


def replay_checkpoints(events: list[Event], policy: Policy, spec: Any = None) -> tuple[list[CheckpointRow], list[str]]:
    """Re-decide every recorded workflow decision of one run through the gate under ``policy``, at
    the same point of the run with the verifier results that were recorded for it (the workflow
    state is folded from the journal with :func:`supervisor.workflow.state.fold`, the runner's own
    fold). Returns the rows and notes (a spec that cannot be read)."""
    notes: list[str] = []
    if not any(e.kind == "checkpoint" for e in events):
        return [], notes
    from supervisor.history import run_spec
    from supervisor.workflow.checkpoint import CheckpointEvent
    from supervisor.workflow.gate import decide_after_review, decide_checkpoint
    from supervisor.workflow.profiles import recorded_workflow_policy
    from supervisor.workflow.state import fold, initial_state

    policy = recorded_workflow_policy(policy, events)  # the run's worker profile's mode, its preferences
    path = None
    if spec is None:
        spec, path = run_spec(events)
    if spec is None:
        notes.append(f"spec not available ({path or 'no path recorded'}): checkpoints not replayed")
        return [], notes
    st = initial_state(spec, events[0].run_id if events else "")
    checkpoints: dict[str, Any] = {}
    rows: list[CheckpointRow] = []
    for e in events:
        if e.kind == "checkpoint":
            try:
                cp = CheckpointEvent.model_validate({k: v for k, v in e.payload.items()
                                                     if k in CheckpointEvent.model_fields and k != "body"}
                                                    | {"body": e.payload.get("checkpoint")})
            except ValueError:
                cp = None
            if cp is not None:
                cp.checkpoint_id = cp.checkpoint_id or e.event_id
                checkpoints[cp.checkpoint_id] = cp
        elif e.kind == "decision":
            d = e.payload.get("decision", e.payload)
            cp = checkpoints.get(d.get("trigger_id") or "")
            if d.get("source") == "workflow" and cp is not None:
                if d.get("rule") == "workflow:finish_after_review":
                    new = decide_after_review(spec, st, policy)
                    kind, reason = (new.kind, new.reason) if new else ("wait", "finish still held")
                else:
                    results = dict(st.checkpoint_results.get(cp.checkpoint_id or "", {}))
                    new = decide_checkpoint(cp, st, spec, results, policy)
                    kind, reason = new.kind, new.reason
                recorded = str(d.get("kind"))
                rows.append(CheckpointRow(trigger_id=cp.checkpoint_id or "", recorded=recorded, replayed=kind,
                                          reason=reason, divergence=checkpoint_divergence(recorded, kind)))
        fold(st, e)
    return rows, notes


def checkpoint_summary(rows: list[CheckpointRow], runs: int, notes: list[str]) -> dict[str, Any]:
    counts = Counter(r.divergence for r in rows)
    compared = len(rows) - counts.get("unrecorded", 0)
    return {"runs": runs, "checkpoints": len(rows), "compared": compared,
            "agreement": round(counts.get("agree", 0) / compared, 6) if compared else None,
            "by_class": {k: counts.get(k, 0) for k in ("agree", "ux_only", "risky_routing", "safety_regression",
                                                       "unrecorded")},
            "notes": notes[:20]}


# --------------------------------------------------------------------------- one run


class RunReplay(BaseModel):
    """``supervisor runs replay RUN_ID``: one run's screens and checkpoints re-decided."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    policy_id: str
    observations: dict[str, Any]
    """The screen replay's summary (agreement, divergence classes)."""
    changed: list[dict[str, Any]] = Field(default_factory=list)
    """Observations whose decision differs from the recording (kind, keys, reason)."""
    checkpoints: list[CheckpointRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def replay_run(events: list[Event], policy: Policy, *, spec: Any = None, observations: bool = True) -> RunReplay:
    """Replay one run's journal under ``policy``: its screens (the same engine as ``eval replay``)
    and its workflow checkpoints. Touches no pane."""
    run_id = events[0].run_id if events else ""
    summary: dict[str, Any] = {}
    changed: list[dict[str, Any]] = []
    if observations:
        frame = frame_from_events(events)
        if frame.height:
            result, summary = replay_frame(frame, policy)
            changed = result.filter(~pl.col("divergence").is_in(["agree", "unrecorded"])).select(
                "observation_id", "seq", "recorded_kind", "recorded_keys", "replayed_kind", "replayed_keys",
                "replayed_reason", "divergence").to_dicts()
    rows, notes = replay_checkpoints(events, policy, spec)
    return RunReplay(run_id=run_id, policy_id=policy.policy_id, observations=summary, changed=changed,
                     checkpoints=rows, notes=notes)
