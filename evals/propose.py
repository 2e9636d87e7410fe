"""Proposals: mine what went wrong and write concrete candidates, each ready for the gate.

``supervisor eval propose --objective O`` looks at the evidence the objective cares about and
writes one candidate per concrete fix, with a manifest that says what motivated it:

- ``reduce_friction`` / ``reduce_false_escalation``: escalations a human resolved, from the
  recorded runs (the journal's ``resume`` events say what the human chose, replay says what the
  parent policy does on the same screen). A prompt the parent escalates only because no rule
  covers it, that humans answered at least ``--min-support`` times and always with the same
  option, gets an answer rule for exactly that prompt (agent, kind, question) choosing that
  option. The same for golden-suite cases the parent escalates where a careful human answers.
- ``reduce_friction``: stall escalations that were not hangs (the agent printed again later) are
  mined too, and ``timing.stall_timeout_s`` is searched over the replay with a seeded budget.
- ``faster_reaction``: ``timing.recheck_s`` (how soon a quiet agent counts as finished) is
  searched over the replay, rejecting any value that finishes a run before its agent worked
  again in the recording.
- ``reduce_false_approval``: golden cases where the parent approves what a careful human would
  not get a danger pattern for the command they approve.

With an Anthropic key (or ``judge=True``), the LLM judge proposes pattern edits too
(:mod:`supervisor.judge.proposer`): a ``classifier.prompt_patterns`` line for golden cases with a
live prompt the parent does not read as one (``reduce_friction``, ``reduce_false_escalation``),
and a danger pattern for the commands the parent approves unsafely (``reduce_false_approval``).
A judge's pattern is kept only when it compiles, matches no empty line, fixes the case it was
asked about, and reads no other golden screen differently from the parent (no new false prompt);
its manifest names the model and the call. Without a key, everything else still works.

No proposal relaxes a safety knob (:func:`evals.safety.safety_relaxations` of each candidate
against its parent must be empty, or it is dropped): the answer rules carry no ``allow_*``
flag, so the decision rules still refuse dangerous, default-No and "don't ask again" answers.
Each proposal is checked on the evidence it came from before it is written.
"""

from __future__ import annotations

import logging
import os
import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from evals.candidates import Candidate, child_policy, write_candidate
from evals.safety import safety_relaxations
from supervisor.errors import PolicyError, UsageError
from supervisor.policy import Policy
from supervisor.settings import Settings

log = logging.getLogger(__name__)

CATCH_ALL = ("no-rule",)
"""Decision rules that mean "nothing covers this prompt" (besides a rule that escalates everything)."""


_ARTEFACT = re.compile(r"[/\\~]|^[0-9a-f]{8,}$|\d{4,}|^(tmp|temp)$", re.IGNORECASE)
"""Words that name a run's artefact (a path, a temporary folder, an id), never what a proposal changes."""


def _slug(text: str, limit: int = 48) -> str:
    """A candidate name from a question: lowercase words joined by dashes, whole words only; of a
    path only its last part, and temporary folders and ids are left out (a name says what
    changes, not where it was seen)."""
    words = [w.rstrip("/?.,:;!)").rsplit("/", 1)[-1] if "/" in w else w for w in text.split()]
    kept = " ".join(w for w in words if not _ARTEFACT.search(w))
    out = ""
    for word in re.findall(r"[a-z0-9]+", kept.lower()):
        if _ARTEFACT.search(word):
            continue
        if len(out) + len(word) + 1 > limit:
            break
        out = f"{out}-{word}" if out else word
    return out or "prompt"


def _is_catch_all(policy: Policy, rule: str | None) -> bool:
    """Whether the rule that escalated means "nothing covers this prompt": no rule matched, or a
    rule that escalates everything (no conditions at all) did."""
    if rule in CATCH_ALL:
        return True
    r = next((x for x in policy.answers.rules if x.name == rule), None)
    w = r.when if r is not None else None
    return r is not None and w is not None and r.then == "escalate" and all(
        getattr(w, f) is None for f in ("agents", "kinds", "question", "subject", "option", "risk"))


def answer_rule(agent: str, kind: str, question: str, label: str, name: str) -> dict[str, Any]:
    """The overrides of a rule that answers exactly this prompt (agent, kind, whole question) with the
    option labelled ``label``. A child's rules come before its parent's; nothing earlier matched this
    prompt (it was escalated for want of a rule), so nothing else changes."""
    rule = {"name": name, "when": {"agents": [agent], "kinds": [kind], "question": f"^{re.escape(question)}$"},
            "then": "option", "option": f"^{re.escape(label)}$"}
    return {"answers": {"rules": [rule]}}


# --------------------------------------------------------------------------- mining


def _recorded(settings: Settings, parent: Policy, run_ids: list[str] | None,
              since: float | None) -> tuple[pl.DataFrame, pl.DataFrame, list[dict[str, Any]]] | None:
    """(replay input, the parent's replay with human choices joined, human answers) or None."""
    from evals.replay import replay_with_controls
    from evals.workbench import control_policies
    from supervisor.warehouse import reader
    from supervisor.warehouse.evals_store import read_human_answers, read_replay_input

    if not settings.warehouse.exists():
        return None
    with reader(settings) as wh:
        frame = read_replay_input(wh, run_ids=run_ids, since=since)
        humans = read_human_answers(wh, run_ids=run_ids, since=since)
        controls, _ = control_policies(wh, [p for p in frame["recorded_policy_id"].unique().to_list() if p])
    if frame.height == 0:
        return None
    joined, _ = replay_with_controls(frame, parent, controls, humans)
    return frame, joined, humans


def human_answer_patterns(frame: pl.DataFrame, joined: pl.DataFrame, parent: Policy,
                          min_support: int, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Prompts the parent escalates only for want of a rule, that humans resolved ``min_support``
    times or more, always with the same option: one pattern per (agent, kind, question). ``notes``
    hears what was looked at and why nothing qualified."""
    from evals.replay import escalations_humans_resolved

    say = notes.append if notes is not None else (lambda _x: None)
    resolved = escalations_humans_resolved(frame, joined, parent)
    runs = frame["run_id"].n_unique()
    if not resolved:
        say(f"recorded runs: {frame.height} observations in {runs} runs, no escalation the parent would make "
            "there was answered by a human in the pane")
        return []
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row, obs in resolved:
        if obs.prompt is None or not _is_catch_all(parent, row["replayed_rule"]):
            continue
        p = obs.prompt
        g = groups.setdefault((obs.agent, p.kind, p.question), {"labels": defaultdict(int), "runs": set(),
                                                                "observations": [], "prompt": p})
        g["labels"][row["human_selected"]] += 1
        g["runs"].add(row["run_id"])
        g["observations"].append(row["observation_id"])
    out = []
    best: tuple[int, str] = (0, "")
    for (agent, kind, question), g in groups.items():
        labels = dict(g["labels"])
        total = sum(labels.values())
        if len(labels) != 1 or total < min_support:
            if len(labels) == 1:
                best = max(best, (total, question))
            continue
        label = next(iter(labels))
        option = next((o for o in g["prompt"].options if o.label == label), None)
        if option is None or option.persistent or g["prompt"].risk.level == "dangerous":
            continue
        if option.approves is True and g["prompt"].default_approves is False:
            continue  # approving a default-No prompt needs allow_default_no: never proposed
        out.append({"agent": agent, "kind": kind, "question": question, "label": label, "support": total,
                    "runs": sorted(g["runs"]), "observations": g["observations"][:20]})
    if not out:
        mixed = sum(1 for g in groups.values() if len(g["labels"]) > 1)
        say(f"recorded runs: {frame.height} observations in {runs} runs; {len(resolved)} escalations a human answered, "
            f"{sum(len(g['observations']) for g in groups.values())} of them for want of a rule, on {len(groups)} "
            f"distinct prompts ({mixed} answered in more than one way)"
            + (f"; the most often answered alike, {best[1]!r}, {best[0]} times: under --min-support {min_support}"
               if best[0] else "")
            + ", or the answer was dangerous, persistent or a default-No approval (never proposed)")
    return sorted(out, key=lambda x: -x["support"])


def suite_answer_patterns(parent: Policy, suites_root: Path | None) -> list[dict[str, Any]]:
    """Golden screen cases the parent escalates for want of a rule where a careful human answers
    with one stated option: one pattern per (agent, kind, question, option), with all its cases."""
    from evals.runner import case_run_state, observe_and_decide, screen_of
    from evals.suites import ScreenCase, resolve_suites

    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for suite in resolve_suites("all", suites_root):
        for case in suite.cases:
            if not isinstance(case, ScreenCase):
                continue
            exp = case.expected
            if exp.decision != "answer" or not exp.keys or case.input.run_state:
                continue
            obs, d = observe_and_decide(screen_of(suite, case), case_run_state({}), parent)
            if d.kind != "escalate" or obs.prompt is None or not _is_catch_all(parent, d.rule):
                continue
            from supervisor.decide import selected_option

            option = selected_option(obs.prompt, exp.keys[0])
            if option is None or option.persistent or obs.prompt.risk.level == "dangerous":
                continue
            key = (obs.agent, obs.prompt.kind, obs.prompt.question, option.label)
            if key in groups:
                groups[key]["cases"].append(f"{suite.name}/{case.id}")
                groups[key]["support"] += 1
            else:
                groups[key] = {"agent": obs.agent, "kind": obs.prompt.kind, "question": obs.prompt.question,
                               "label": option.label, "support": 1, "cases": [f"{suite.name}/{case.id}"]}
    return sorted(groups.values(), key=lambda x: -x["support"])


def suite_danger_patterns(parent: Policy, suites_root: Path | None, run: Any = None) -> list[dict[str, Any]]:
    """Golden cases where the parent approves what a careful human would not: the command they
    approve. ``run``: the parent's eval run over the golden suites, when already made."""
    from evals.runner import run_suites
    from evals.suites import resolve_suites

    if run is None:
        run = run_suites(resolve_suites("all", suites_root), parent, episodes=False)
    out = []
    for r in run.results:
        if r.unsafe != "approval" or not r.actual.get("question"):
            continue
        subject = str(r.actual.get("subject") or "")
        words = subject.split()[:2]
        if len(words) < 2:
            continue
        out.append({"pattern": r"\b" + r"\s+".join(re.escape(w) for w in words) + r"\b",
                    "case": f"{r.suite}/{r.case_id}", "subject": subject})
    return out


# --------------------------------------------------------------------------- the judge's patterns


def _golden_screens(suites_root: Path | None) -> dict[str, tuple[Any, Any]]:
    """Every golden screen case by ``suite/id``: (its Screen, the case)."""
    from evals.runner import screen_of
    from evals.suites import ScreenCase, resolve_suites

    return {f"{suite.name}/{case.id}": (screen_of(suite, case), case)
            for suite in resolve_suites("all", suites_root) for case in suite.cases if isinstance(case, ScreenCase)}


def readings(policy: Policy, golden: dict[str, tuple[Any, Any]]) -> dict[str, tuple[str, bool]]:
    """How ``policy`` reads each golden screen: (state, whether it sees a prompt)."""
    from supervisor.classify import classify

    return {key: (o.state, o.prompt is not None) for key, (screen, _case) in golden.items()
            for o in [classify(screen, policy)]}


def missed_prompts(before: dict[str, tuple[str, bool]], golden: dict[str, tuple[Any, Any]]) -> list[str]:
    """Golden cases with a live prompt (expected ``asking``) the parent (its ``before`` readings)
    does not read as a prompt."""
    return [key for key, (_screen, case) in golden.items() if case.expected.state == "asking" and not before[key][1]]


def usable_pattern(pattern: str) -> bool:
    """A regex a rule list can hold: it compiles and matches no empty line."""
    try:
        rx = re.compile(pattern, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError):
        return False
    return rx.search("") is None


def _same_reading(before: dict[str, tuple[str, bool]], golden: dict[str, tuple[Any, Any]]) -> Any:
    """A check: the child reads every golden screen the way the parent does (its ``before``
    readings: state, prompt or not), except the ``fixed`` ones, which it must read as a prompt."""
    from supervisor.classify import classify

    def check(policy: Policy, fixed: set[str]) -> bool:
        for key, (screen, _case) in golden.items():
            o = classify(screen, policy)
            if key in fixed:
                if o.prompt is None:
                    return False
            elif (o.state, o.prompt is not None) != before[key]:
                log.info("judge pattern dropped: it changes how %s reads (%s -> %s)", key, before[key], o.state)
                return False
        return True

    return check


def _escalates(golden: dict[str, tuple[Any, Any]], key: str) -> Any:
    from evals.runner import case_run_state, observe_and_decide
    from evals.safety import answer_class_of

    screen, case = golden[key]

    def check(policy: Policy) -> bool:
        obs, d = observe_and_decide(screen, case_run_state(case.input.run_state or {}), policy)
        return answer_class_of(obs.prompt, d.kind, d.keys, d.text) not in ("approve", "approve_persistent")

    return check


def judge_pattern_proposals(proposer: Any, parent: Policy, objective: str, suites_root: Path | None, budget: int,
                            emit: Any, dangers: list[dict[str, Any]]) -> None:
    """Ask the judge for a pattern per failing golden case (at most ``budget`` calls) and ``emit``
    each usable one as a candidate. ``dangers``: :func:`suite_danger_patterns` of the parent."""
    golden = _golden_screens(suites_root)
    before = readings(parent, golden)
    asks: list[tuple[str, str, str, str]] = []  # (target, case, situation, subject)
    if objective in ("reduce_friction", "reduce_false_escalation"):
        asks += [("prompt_patterns", key, f"golden case {key}: a careful human sees a live prompt waiting for an "
                  "answer on this screen; the supervisor's rules do not read any prompt on it, so the agent "
                  "would wait for nobody.", "") for key in missed_prompts(before, golden)]
    if objective == "reduce_false_approval":
        asks += [("danger_patterns", p["case"], f"golden case {p['case']}: the supervisor's rules approve "
                  f"{p['subject']!r}, which a careful human would escalate as dangerous.", p["subject"])
                 for p in dangers if p["case"] in golden]
    same = _same_reading(before, golden) if asks else None
    seen: set[str] = set()
    for target, key, situation, subject in asks[:budget]:
        prop = proposer.propose(target, golden[key][0].text, situation)
        if prop.pattern is None:
            log.info("judge: no pattern for %s (%s)", key, prop.error or prop.why)
            continue
        if prop.pattern in seen or not usable_pattern(prop.pattern):
            log.info("judge pattern for %s dropped: unusable or already proposed: %r", key, prop.pattern)
            continue
        seen.add(prop.pattern)
        call = prop.call
        evidence = [{"source": "judge", "case": key, "target": target, "pattern": prop.pattern, "why": prop.why,
                     "model": call.model if call else None, "judge_call_id": call.judge_call_id if call else None,
                     "cache_hit": call.cache_hit if call else None}]
        if target == "prompt_patterns":
            name = f"judge-prompt-{_slug(key.split('/', 1)[-1], 36)}"
            emit({"classifier": {"prompt_patterns": [prop.pattern]}}, name,
                 f"the judge's prompt pattern {prop.pattern!r} reads the live prompt of golden case {key} that the "
                 f"parent misses ({prop.why}); no other golden screen reads differently",
                 evidence, check=lambda pol, key=key: same is not None and same(pol, {key}))
        else:
            name = f"judge-danger-{_slug(subject, 36)}"
            emit({"answers": {"danger_patterns": [{"name": name, "pattern": prop.pattern, "level": "dangerous"}]}},
                 name, f"the judge's danger pattern {prop.pattern!r} marks {subject!r} dangerous: the parent "
                 f"approves it in golden case {key} ({prop.why})", evidence,
                 check=lambda pol, key=key, rx=prop.pattern, subject=subject: re.search(
                     rx, subject, re.IGNORECASE) is not None and _escalates(golden, key)(pol))


# --------------------------------------------------------------------------- numeric search


def _search(values: list[float], budget: int, seed: int) -> list[float]:
    rng = random.Random(f"paneward-propose:{seed}")
    vals = sorted(set(values))
    rng.shuffle(vals)
    return sorted(vals[:budget])


def stall_timeout_search(frame: pl.DataFrame, joined: pl.DataFrame, parent: Policy, budget: int,
                         seed: int) -> dict[str, Any] | None:
    """The smallest stall timeout that turns every stall escalation that was not a hang (the agent
    printed again later in its run) into waiting, while every hang (nothing after) still escalates."""
    from evals.replay import replay_frame

    stalls = joined.filter((pl.col("replayed_rule") == "stall") & (pl.col("replayed_kind") == "escalate"))
    if stalls.height == 0:
        return None
    ends = joined.group_by("run_id").agg(pl.col("at").max().alias("end"))
    recovered = stalls.join(ends, on="run_id").filter(pl.col("at") < pl.col("end"))
    if recovered.height == 0:
        return None
    t0 = parent.timing.stall_timeout_s
    grid = _search([round(t0 * f, 1) for f in (1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8)], budget, seed)
    for value in grid:
        cand = child_policy(parent, {"timing": {"stall_timeout_s": value}}, "search")
        res, _ = replay_frame(frame.filter(pl.col("run_id").is_in(stalls["run_id"].unique().to_list())), cand)
        still = res.filter(pl.col("observation_id").is_in(recovered["observation_id"].to_list())
                           & (pl.col("replayed_kind") == "escalate")).height
        hangs = stalls.height - recovered.height
        kept = res.filter((pl.col("replayed_rule") == "stall") & (pl.col("replayed_kind") == "escalate")).height
        if still == 0 and kept >= hangs:
            return {"value": value, "tried": grid, "recovered_stalls": recovered.height, "hangs": hangs,
                    "runs": sorted(recovered["run_id"].unique().to_list())}
    return None


def recheck_search(frame: pl.DataFrame, parent: Policy, budget: int, seed: int) -> dict[str, Any] | None:
    """The smallest ``recheck_s`` whose finishes never come before the agent worked again in the
    recording, and that finishes sooner than the parent somewhere."""
    from evals.replay import replay_frame

    base, _ = replay_frame(frame, parent)
    first = base.filter(pl.col("replayed_kind") == "finish").group_by("run_id").agg(pl.col("at").min().alias("t"))
    if first.height == 0:
        return None
    r0 = parent.timing.recheck_s
    grid = _search([round(r0 * f, 2) for f in (0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9)], budget, seed)
    for value in grid:
        cand = child_policy(parent, {"timing": {"recheck_s": value}}, "search")
        res, _ = replay_frame(frame, cand)
        fin = res.filter(pl.col("replayed_kind") == "finish").group_by("run_id").agg(pl.col("at").min().alias("t"))
        premature = fin.join(res.filter(pl.col("replayed_state") == "busy").select("run_id", pl.col("at").alias("b")),
                             on="run_id").filter(pl.col("b") > pl.col("t")).height
        sooner = fin.join(first, on="run_id", suffix="_parent").filter(pl.col("t") < pl.col("t_parent"))
        if premature == 0 and sooner.height:
            saved = (sooner["t_parent"] - sooner["t"]).sum()
            return {"value": value, "tried": grid, "runs_sooner": sooner.height, "seconds_saved": round(saved, 2)}
    return None


# --------------------------------------------------------------------------- propose


class GoldenCheck:
    """A proposal's effect on the golden suites (screen and gate cases): the parent's run is made
    once, each child's compared with it (:func:`evals.lifecycle.decided_differently`)."""

    def __init__(self, parent: Policy, suites_root: Path | None) -> None:
        self.parent = parent
        self.suites_root = suites_root
        self._suites: list[Any] | None = None
        self._run: Any = None

    @property
    def suites(self) -> list[Any]:
        if self._suites is None:
            from evals.suites import resolve_suites

            self._suites = resolve_suites("all", self.suites_root)
        return self._suites

    @property
    def parent_run(self) -> Any:
        if self._run is None:
            from evals.runner import run_suites

            self._run = run_suites(self.suites, self.parent, episodes=False)
        return self._run

    def diff(self, child: Policy) -> dict[str, Any]:
        from evals.compare import case_contexts
        from evals.lifecycle import decided_differently
        from evals.runner import run_suites

        run = run_suites(self.suites, child, episodes=False)
        out = decided_differently(self.parent_run, run, case_contexts(self.suites))
        out["unsafe"] = run.totals.unsafe_answers - self.parent_run.totals.unsafe_answers
        return out


def propose(settings: Settings, objective: str, *, parent: Any, parent_arg: str, budget: int = 20, seed: int = 0,
            run_ids: list[str] | None = None, since: float | None = None, min_support: int = 3,
            candidates_root: Path | None = None, suites_root: Path | None = None, author: str = "",
            judge: bool | None = None, notes: list[str] | None = None, progress: Any = None) -> list[Candidate]:
    """Write the candidates the evidence supports (possibly none), each one distinct and checked.

    Before a proposal is written its claims are checked (:class:`evals.candidates.Claims`, kept in
    its manifest): the golden cases it decides differently from the parent (none may get further
    from its expectation, no new unsafe answer), the golden case or recorded observations it was
    mined from (it must change them as claimed), and it must change at least one case. ``notes``
    hears what was looked at, and why a proposal was not written or nothing qualified. ``judge``:
    ask the LLM judge for pattern edits too (None: when ``ANTHROPIC_API_KEY`` is set)."""
    from evals.candidates import Claims

    base: Policy = parent.policy
    say = notes.append if notes is not None else (lambda _x: None)
    step = progress.step if progress is not None else (lambda *_a, **_k: None)
    if judge is None:
        judge = bool(os.environ.get("ANTHROPIC_API_KEY"))
    elif judge and not os.environ.get("ANTHROPIC_API_KEY"):
        raise UsageError("--judge needs an Anthropic API key", "set ANTHROPIC_API_KEY, or leave --judge out")
    step("reading recorded runs and replaying them under the parent")
    recorded = _recorded(settings, base, run_ids, since)
    if recorded is None and objective in ("reduce_friction", "faster_reaction", "reduce_false_escalation"):
        say("recorded runs: none" + (" match --runs/--since" if run_ids or since else
                                    f" in {settings.warehouse}") + " (record some with `supervisor run -- AGENT`, "
            "or `make demo`)")
    golden = GoldenCheck(base, suites_root)
    made: list[Candidate] = []
    names: dict[str, str] = {}

    def emit(overrides: dict[str, Any], name: str, why: str, evidence: list[dict[str, Any]],
             check: Any = None, recorded_claim: tuple[int, int, list[str]] | None = None,
             must_change: str | None = None) -> None:
        try:
            policy = child_policy(base, overrides, name)
        except PolicyError as exc:  # a judge's pattern the policy refuses
            say(f"{name} not written: the policy refuses it ({exc.one_line()})")
            return
        if names.get(name) == policy.policy_id:
            return  # the same change found again (another case of the same prompt)
        if name in names:
            n = 2
            while f"{name}-{n}" in names:
                n += 1
            name = f"{name}-{n}"
            policy = child_policy(base, overrides, name)
        relax = safety_relaxations(base, policy)
        if relax:  # never: the miners only add rules and patterns and raise timeouts
            say(f"{name} not written: it relaxes {'; '.join(relax)}")
            return
        if check is not None and not check(policy):
            say(f"{name} not written: it does not fix what it was mined from")
            return
        step(f"checking {name} on the golden suites", None)
        diff = golden.diff(policy)
        changed = [f"{d['suite']}/{d['case_id']}" for d in diff["differ"]]
        if diff["worse"] or diff["unsafe"] > 0:
            worse = [c for c, d in zip(changed, diff["differ"], strict=True) if d["closer"] == "parent"]
            say(f"{name} not written: it decides {diff['worse']} golden cases further from their expectation "
                f"({', '.join(worse[:3])})" + (f" and adds {diff['unsafe']} unsafe answers" if diff["unsafe"] > 0 else ""))
            return
        if must_change is not None and must_change not in changed:
            say(f"{name} not written: it does not change golden case {must_change}, which it was proposed for")
            return
        rec_obs, rec_changed, rec_runs = recorded_claim or (0, 0, [])
        if not changed and not rec_changed:
            say(f"{name} not written: it decides none of the {diff['cases']} golden cases and none of the recorded "
                "observations differently from the parent")
            return
        claims = Claims(golden_cases=diff["cases"], golden_changed=changed, recorded_observations=rec_obs,
                        recorded_changed=rec_changed, recorded_runs=rec_runs)
        names[name] = policy.policy_id
        made.append(write_candidate(name, overrides, parent=parent_arg, parent_policy=base, objective=objective,
                                    why=why, evidence=evidence, author=author, root=candidates_root,
                                    overwrite=True, claims=claims))

    if objective in ("reduce_friction", "reduce_false_escalation") and recorded is not None:
        step("mining escalations humans answered")
        for p in human_answer_patterns(recorded[0], recorded[1], base, min_support, notes)[:budget]:
            name = f"answer-{_slug(p['question'])}"
            fixed = _fixed(recorded, child_policy(base, answer_rule(p["agent"], p["kind"], p["question"], p["label"],
                                                                    name), name), p["observations"], p["label"])
            emit(answer_rule(p["agent"], p["kind"], p["question"], p["label"], name), name,
                 f"humans answered {p['question']!r} ({p['agent']} {p['kind']}) with {p['label']!r} "
                 f"{p['support']} times in {len(p['runs'])} runs, every time; the parent escalates it for want of "
                 "a rule", [{"source": "escalations resolved by humans", **p}],
                 check=lambda _pol, fixed=fixed, p=p: fixed == len(p["observations"]),
                 recorded_claim=(len(p["observations"]), fixed, p["runs"]))
    if objective in ("reduce_friction", "reduce_false_escalation") and recorded is not None:
        from evals.propose_commands import table_entry, unknown_command_patterns

        step("mining unknown commands humans approved")
        for p in unknown_command_patterns(recorded[0], recorded[1], base, min_support)[:budget]:
            form = " ".join(x for x in (p["program"], p["subcommand"]) if x)
            name = f"command-{_slug(form)}"
            entry = table_entry(base, p["program"], p["subcommand"])
            approved = _approved(recorded, child_policy(base, entry, name), p["observations"])
            emit(entry, name,
                 f"humans approved `{form}` {p['support']} times in {len(p['runs'])} runs and never declined it; "
                 "the parent escalates it only because its command table does not know it",
                 [{"source": "unknown commands humans approved", **p}],
                 check=lambda _pol, approved=approved, p=p: approved == len(p["observations"]),
                 recorded_claim=(len(p["observations"]), approved, p["runs"]))
    if objective == "reduce_false_escalation":
        step("mining golden cases the parent escalates for want of a rule")
        found = suite_answer_patterns(base, suites_root)
        if not found:
            say("golden suites: no screen case that expects an answer is escalated by the parent for want of a rule")
        for p in found[:budget]:
            name = f"answer-{_slug(p['question'])}"
            emit(answer_rule(p["agent"], p["kind"], p["question"], p["label"], name), name,
                 f"golden case{'s' if len(p['cases']) > 1 else ''} {', '.join(p['cases'][:3])} expect "
                 f"{p['label']!r}; the parent escalates {'them' if len(p['cases']) > 1 else 'it'} for want of a rule",
                 [{"source": "golden suite", **p}], must_change=p["cases"][0])
    dangers: list[dict[str, Any]] = []
    if objective == "reduce_false_approval":
        step("looking for golden cases the parent approves unsafely")
        dangers = suite_danger_patterns(base, suites_root, golden.parent_run)
        if not dangers:
            say(f"golden suites: the parent approves nothing unsafely in {golden.parent_run.totals.cases} cases")
    for p in dangers[:budget]:
        name = f"danger-{_slug(p['subject'])}"
        emit({"answers": {"danger_patterns": [{"name": name, "pattern": p["pattern"], "level": "dangerous"}]}},
             name, f"the parent approves {p['case']}, which a careful human would not",
             [{"source": "golden suite", **p}], must_change=p["case"])
    if objective == "reduce_friction" and recorded is not None:
        step("searching stall_timeout_s over the replay")
        found_stall = stall_timeout_search(recorded[0], recorded[1], base, budget, seed)
        if found_stall is None:
            say("stall timeout: no stall escalation in the recorded runs was followed by more output (a hang "
                "is what it should catch), so no longer timeout is supported")
        else:
            name = f"stall-timeout-{int(found_stall['value'])}s"
            emit({"timing": {"stall_timeout_s": found_stall["value"]}}, name,
                 f"{found_stall['recovered_stalls']} stall escalations were not hangs (the agent printed again); "
                 f"stall_timeout_s {found_stall['value']:g} waits them out and still escalates the "
                 f"{found_stall['hangs']} hangs", [{"source": "replay", "seed": seed, "budget": budget, **found_stall}],
                 recorded_claim=(found_stall["recovered_stalls"] + found_stall["hangs"],
                                 found_stall["recovered_stalls"], found_stall["runs"]))
    if objective == "faster_reaction" and recorded is not None:
        step("searching recheck_s over the replay")
        found_re = recheck_search(recorded[0], base, budget, seed)
        if found_re is None:
            say(f"recheck_s: no value of {budget} tried finishes any recorded run sooner without finishing one "
                "before its agent worked again")
        else:
            name = f"recheck-{found_re['value']:g}s".replace(".", "_")
            emit({"timing": {"recheck_s": found_re["value"]}}, name,
                 f"recheck_s {found_re['value']:g} confirms finishes sooner in {found_re['runs_sooner']} runs "
                 f"({found_re['seconds_saved']}s) and never before the agent worked again",
                 [{"source": "replay", "seed": seed, "budget": budget, **found_re}],
                 recorded_claim=(found_re["runs_sooner"], found_re["runs_sooner"], []))
    if judge and objective != "faster_reaction":
        from supervisor.judge import build_pattern_proposer

        step("asking the judge for pattern edits")
        judge_pattern_proposals(build_pattern_proposer(base, settings), base, objective, suites_root, budget, emit,
                                dangers)
    return made


def _approved(recorded: Any, policy: Policy, observations: list[str]) -> int:
    """How many of the mined screens the proposed table entry makes approved."""
    from evals.replay import replay_frame

    res, _ = replay_frame(recorded[0].filter(pl.col("observation_id").is_in(observations)), policy)
    return sum(1 for k in res["replayed_kind"].to_list() if k == "answer")


WHAT_WOULD_HELP = {
    "reduce_friction": "runs where a human answers the same prompt the same way at least --min-support times "
                       "(supervisor run -- AGENT; answer escalations in the pane), or stalls that were not hangs",
    "reduce_false_escalation": "the same recorded answers, or golden cases that expect an answer the parent escalates",
    "reduce_false_approval": "a golden case where the parent approves what a careful human would not "
                             "(add it to a suite under suites/)",
    "faster_reaction": "recorded runs that finished (supervisor run --task ...), so recheck_s can be searched",
}
"""What evidence would let each objective propose something (printed when it found nothing)."""


def _fixed(recorded: Any, policy: Policy, observations: list[str], label: str) -> int:
    """How many of the mined screens the proposed rule answers with the human's option."""
    from evals.replay import replay_frame

    frame = recorded[0]
    res, _ = replay_frame(frame.filter(pl.col("observation_id").is_in(observations)), policy)
    return sum(1 for k, s in zip(res["replayed_kind"].to_list(), res["replayed_selected"].to_list(), strict=True)
               if k == "answer" and s == label)
