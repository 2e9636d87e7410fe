"""Rules first, the judge where they cannot decide, and the rules' safety checks over the judge.

:func:`judged_decision` is what the runner calls instead of ``decide`` when
``policy.judge.consult != "never"`` (with ``never`` it is exactly ``decide`` and makes no
call, so the runner may call it unconditionally):

1. ``decide(observation, run_state, policy)`` runs first, always;
2. the judge is consulted only per policy (:func:`consult_reason`): ``uncertain`` means the
   observation's confidence is below ``policy.classifier.uncertain_below``, or the rules could
   only escalate an asking screen they cannot answer (a free-text question, a prompt no answer
   rule knows, or one the classifier could not parse) and nothing marks it dangerous or
   default-No; ``always`` means every observation of a live pane. Never while a human is
   typing or the run is paused;
3. the judge's proposal passes :func:`vet_keys`: it can never approve what the policy marks
   dangerous (the classifier's risk, or the danger patterns over the subject or live lines), a
   prompt whose default is No, an ``always_escalate`` question, or a persistent "don't ask
   again" option; it cannot press keys whose effect on a menu we cannot tell, nor answer
   beyond the intervention budget or the strike limit, nor type into an agent the rules are
   sure is busy (that becomes ``wait``) or past a blocker they are sure of. A refused proposal
   becomes ``escalate``; the judge can always choose to escalate or wait;
4. a judge that failed, is over budget or has no key proposes ``escalate`` (fail safe).

Everything here is pure given the judge: with a cached judge (replays, evals) the same
inputs give the same decision. The runner journals the returned :class:`JudgeCall` as a
``judge_call`` event and the decision as usual; :class:`PaneJudge` keeps the per-pane
history and change hint for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from supervisor.ids import new_id
from supervisor.judge.base import (
    ChangeHint,
    Judge,
    JudgeCall,
    JudgeExchange,
    JudgeHistory,
    JudgeVerdict,
    change_hint,
)
from supervisor.models import Decision, DecisionKind, Observation, Prompt, PromptOption, RunState, Screen
from supervisor.policy import Policy
from supervisor.regexes import RegexBudgetExceeded, policy_regex

DecideFn = Callable[[Observation, RunState, Policy], Decision]

JUDGE_CONFIDENCE = 0.75
"""Confidence given to decisions the judge made (the rules' own decisions keep theirs)."""

_DEFAULT_NO = re.compile(r"[\[(]\s*y(es)?\s*/\s*N(o)?\s*[\])]")
"""``[y/N]``, ``(yes/No)``: the capital marks the default (case-sensitive on purpose)."""
_PERSISTENT = re.compile(r"don'?t ask again|always allow|allow always|for (the rest of )?(this|the) session|"
                         r"remember (this|my) (choice|decision)|do not ask again", re.IGNORECASE)
_APPROVE_KEYS = {"y", "yes"}
_DECLINE_KEYS = {"n", "no"}
UNKNOWN_PROMPT_RULES = frozenset({"no-rule", "unknown-command"})
"""``decide``'s rule names for "no answer rule matches this prompt" and "a part of the command is not
known" (an unknown prompt or command the judge may help with; a dangerous one never goes to it); its
other escalations (danger, default-No, always-escalate, strike guard, budget)
are deliberate and never sent to the judge in ``uncertain`` mode."""
_SAFETY_LINES = 15
"""Live lines scanned for danger when there is no parsed prompt (the classifier's job otherwise)."""


def consult_reason(policy: Policy, observation: Observation, rules: Decision, run_state: RunState) -> str | None:
    """Why the judge should be consulted on this observation, or None (no call)."""
    mode = policy.judge.consult
    if mode == "never":
        return None
    if run_state.paused or run_state.human_active_until > run_state.now or observation.state == "exited":
        return None
    if mode == "always":
        return "consult: always"
    if observation.confidence < policy.classifier.uncertain_below:
        return f"uncertain screen (confidence {observation.confidence:.2f} < {policy.classifier.uncertain_below:.2f})"
    if rules.kind == "escalate" and observation.state == "asking":
        p = observation.prompt
        if p is None:
            return "a prompt the classifier could not parse"
        if p.risk.level == "dangerous" or p.default_approves is False:
            return None  # the judge could not approve it anyway: do not pay to be told so
        if p.kind == "free_text":
            return "a free-text question the rules cannot answer"
        if _unknown_prompt(policy, rules.rule):
            return "a prompt no answer rule knows"
    return None


def _unknown_prompt(policy: Policy, rule_name: str | None) -> bool:
    """True when ``decide`` escalated because no specific rule knows the prompt: no rule matched,
    or only a catch-all ``then: escalate`` rule with an empty ``when`` (the baseline's escalate-rest)."""
    if rule_name in UNKNOWN_PROMPT_RULES:
        return True
    rule = next((r for r in policy.answers.rules if r.name == rule_name), None)
    if rule is None or rule.then != "escalate":
        return False
    return all(v is None for v in rule.when.model_dump().values())


def _live_lines(screen_text: str, n: int) -> str:
    lines = [ln for ln in screen_text.rstrip().splitlines()]
    return "\n".join(lines[-n:])


def selected_option(prompt: Prompt, keys: Sequence[str]) -> PromptOption | None:
    """The option ``keys`` would pick on ``prompt``, or None when we cannot tell."""
    opts = prompt.options
    if not opts or not keys:
        return None
    first = keys[0]
    if first not in ("Up", "Down", "Enter"):
        matches = [o for o in opts if o.key is not None and o.key.lower() == first.lower()]
        if len(matches) == 1 and all(k == "Enter" for k in keys[1:]):
            return matches[0]
        return None
    idx = prompt.highlighted if prompt.highlighted is not None else prompt.default
    if idx is None:
        return None
    for i, k in enumerate(keys):
        if k == "Up":
            idx -= 1
        elif k == "Down":
            idx += 1
        elif k == "Enter" and i == len(keys) - 1:
            break
        else:
            return None
    else:
        return None  # arrows without Enter pick nothing we can vouch for
    by_index = [o for o in opts if o.index == idx]
    return by_index[0] if len(by_index) == 1 else None


def _approves_without_options(prompt: Prompt, keys: Sequence[str]) -> bool | None:
    if not keys:
        return None
    k = keys[0].lower()
    if k in _APPROVE_KEYS:
        return True
    if k in _DECLINE_KEYS:
        return False
    if keys[0] == "Enter" and len(keys) == 1:
        return prompt.default_approves
    return None


def _danger(policy: Policy, text: str) -> str | None:
    for dp in policy.answers.danger_patterns:
        if dp.level != "dangerous":
            continue
        try:
            if policy_regex(dp.pattern, re.IGNORECASE | re.MULTILINE).search(text):
                return dp.name
        except RegexBudgetExceeded:  # a pattern that would not finish counts as a match: fail safe
            return dp.name
    return None


def _always_escalate(policy: Policy, text: str) -> str | None:
    for pat in policy.answers.always_escalate:
        try:
            if policy_regex(pat, re.IGNORECASE | re.MULTILINE).search(text):
                return pat
        except RegexBudgetExceeded:
            return pat
    return None


def vet_keys(observation: Observation, screen_text: str, run_state: RunState, policy: Policy,
             keys: Sequence[str]) -> tuple[str | None, bool | None]:
    """Check keys the judge proposes against the policy's safety rules.

    Returns (refusal, approves): ``refusal`` says why the keys may not be sent (None: they may);
    ``approves`` is True/False when we can tell the keys approve/decline the prompt."""
    if run_state.interventions >= policy.budgets.max_interventions:
        return f"the intervention budget ({policy.budgets.max_interventions}) is spent", None
    p = observation.prompt
    if p is not None:
        if (p.signature and p.signature == run_state.last_prompt_signature
                and run_state.answers_to_same_prompt >= policy.budgets.strike_limit):
            return f"this prompt was already answered {run_state.answers_to_same_prompt} times without effect", None
        if (pat := _always_escalate(policy, p.question)) is not None:
            return f"the policy always escalates this question ({pat})", None
        if list(keys) == ["Escape"]:
            return None, False  # Escape dismisses a prompt: it never approves anything
        chosen = selected_option(p, keys)
        if p.options and chosen is None:
            return f"cannot tell which option keys {list(keys)} pick", None
        if chosen is not None and (chosen.persistent or _PERSISTENT.search(chosen.label)):
            return f"option {chosen.label!r} widens permissions (don't ask again)", None
        approves = chosen.approves if chosen is not None else _approves_without_options(p, keys)
        if approves is not False:
            subject = " ".join(x for x in (p.question, p.risk.subject or "") if x)
            if p.risk.level == "dangerous":
                why = ", ".join(p.risk.matched) or "dangerous"
                return f"the policy marks what this prompt approves as dangerous ({why})", approves
            if (name := _danger(policy, subject)) is not None:
                return f"the policy marks what this prompt approves as dangerous ({name})", approves
            if p.default_approves is False:
                return "the prompt's default is No; only an explicit policy rule may answer it", approves
        return None, approves
    # No parsed prompt: the judge saw something the classifier did not. Be strict about the live lines.
    live = _live_lines(screen_text, _SAFETY_LINES)
    if (name := _danger(policy, live)) is not None:
        return f"the screen shows something the policy marks dangerous ({name})", None
    if (pat := _always_escalate(policy, live)) is not None:
        return f"the policy always escalates this question ({pat})", None
    if _DEFAULT_NO.search(live):
        return "the screen shows a default-No prompt; only an explicit policy rule may answer it", None
    for k in keys:
        if k.isdigit():
            for line in live.splitlines():
                if re.match(rf"^\W*{re.escape(k)}[.)]\s", line.strip()) and _PERSISTENT.search(line):
                    return f"key {k} picks an option that widens permissions (don't ask again)", None
    approves = True if keys and keys[0].lower() in _APPROVE_KEYS else None
    return None, approves


def verdict_to_decision(verdict: JudgeVerdict, observation: Observation, screen_text: str, run_state: RunState,
                        policy: Policy, rules: Decision) -> tuple[Decision, str]:
    """The decision a verdict leads to, after the safety checks, and a short outcome for the history."""
    pid = rules.policy_id or policy.policy_id
    # The runner's strike guard and escalation dedupe key on the prompt's (or blocker's) signature.
    signature = rules.signature or (observation.prompt.signature if observation.prompt is not None else None)

    def make(kind: DecisionKind, reason: str, *, rule: str = "judge", keys: Sequence[str] = (),
             approves: bool | None = None, next_action: str | None = None,
             confidence: float = JUDGE_CONFIDENCE) -> Decision:
        return Decision(kind=kind, keys=list(keys), approves=approves, reason=reason, confidence=confidence,
                        trigger_id=observation.observation_id, rule=rule, next_action=next_action, policy_id=pid,
                        source="judge", signature=signature)

    sure = observation.confidence >= policy.classifier.uncertain_below
    if verdict.action == "send_keys" and sure and observation.state == "busy":
        # The rules are sure the agent is working: whatever looks like a prompt is its output.
        return make("wait", f"judge proposed keys {verdict.keys} ({verdict.reason}) but the agent is busy; "
                    "keys would land in its input", rule="judge:safety", confidence=1.0), "overridden: busy"
    if verdict.action == "send_keys":
        refusal, approves = vet_keys(observation, screen_text, run_state, policy, verdict.keys)
        if refusal is None and sure and observation.state == "blocked":
            refusal = "the rules see a blocker a human must fix"
        if refusal is not None:
            return make("escalate", f"judge proposed keys {verdict.keys} ({verdict.reason}) but {refusal}",
                        rule="judge:safety", next_action="look at the pane and answer it yourself",
                        confidence=1.0), f"overridden: {refusal}"
        return make("answer", f"judge: {verdict.reason}", keys=verdict.keys, approves=approves), "sent"
    if verdict.action == "not_waiting":
        return make("wait", f"judge: not waiting: {verdict.reason}"), "waited"
    if verdict.action == "agent_finished":
        # The judge cannot end a run on its own: the same conditions as the rules' finish apply.
        if (observation.state == "idle" and run_state.saw_work
                and run_state.idle_streak + 1 >= policy.timing.finish_confirmations):
            return make("finish", f"judge: finished: {verdict.reason}"), "finished"
        return make("wait", f"judge says the agent finished ({verdict.reason}); waiting for the finish "
                    "confirmations"), "waited"
    if verdict.ok:
        return make("escalate", f"judge: {verdict.reason}", next_action=verdict.next_action,
                    confidence=1.0), "escalated"
    return make("escalate", verdict.reason, rule=f"judge:{verdict.call.outcome}", next_action=verdict.next_action,
                confidence=1.0), "escalated"


def judged_decision(
    observation: Observation,
    screen: Screen | str,
    run_state: RunState,
    policy: Policy,
    judge: Judge | None,
    history: JudgeHistory | Sequence[JudgeExchange] = (),
    hint: ChangeHint = "first_look",
    *,
    decide_fn: DecideFn | None = None,
    policy_id: str | None = None,
) -> tuple[Decision, JudgeCall | None]:
    """``decide`` first; the judge per ``policy.judge.consult``; its proposal through the safety rules.

    Returns the decision and the judge call to journal (None when the judge was not consulted).
    When ``history`` is a :class:`JudgeHistory`, the exchange is appended to it. ``policy_id`` is
    passed on to ``decide`` (callers that know it save a hash per decision)."""
    decision, verdict = _judged(observation, screen, run_state, policy, judge, history, hint, decide_fn=decide_fn,
                                policy_id=policy_id)
    return decision, (verdict.call if verdict is not None else None)


def _judged(
    observation: Observation,
    screen: Screen | str,
    run_state: RunState,
    policy: Policy,
    judge: Judge | None,
    history: JudgeHistory | Sequence[JudgeExchange],
    hint: ChangeHint,
    *,
    decide_fn: DecideFn | None = None,
    policy_id: str | None = None,
    reuse: JudgeVerdict | None = None,
) -> tuple[Decision, JudgeVerdict | None]:
    """:func:`judged_decision`, returning the new verdict (None: no consultation). ``reuse``: the
    verdict the judge gave on this same unchanged screen, applied again without a call; an
    escalation is not repeated (the human already has it)."""
    if decide_fn is not None:
        rules = decide_fn(observation, run_state, policy)
    else:
        from supervisor.decide import decide

        rules = decide(observation, run_state, policy, policy_id=policy_id)
    text = screen.text if isinstance(screen, Screen) else screen
    if judge is None or not text.strip() or consult_reason(policy, observation, rules, run_state) is None:
        return rules, None  # a blank screen (an agent starting up) holds nothing to judge
    if reuse is not None:
        if reuse.action == "escalate":
            return Decision(kind="wait", reason="the judge already escalated this unchanged screen; waiting for it "
                            "to change", confidence=1.0, trigger_id=observation.observation_id, rule="judge:reuse",
                            policy_id=rules.policy_id or policy.policy_id, source="judge",
                            signature=rules.signature), None
        decision, _ = verdict_to_decision(reuse, observation, text, run_state, policy, rules)
        return decision.model_copy(update={"rule": f"{decision.rule}:reuse"}), None
    past = history.items() if isinstance(history, JudgeHistory) else list(history)
    try:
        verdict = judge.judge(text, hint, past, run_id=run_state.run_id, trigger_id=observation.observation_id)
    except Exception as exc:  # any Judge implementation: a crash fails safe, it never takes the runner down
        call = JudgeCall(judge_call_id=new_id("jc_"), run_id=run_state.run_id, trigger_id=observation.observation_id,
                         model=policy.judge.model, prompt_version=policy.judge.prompt_version, request_hash="",
                         outcome="error", error=f"the judge raised {type(exc).__name__}: {exc}"[:500],
                         action="escalate")
        verdict = JudgeVerdict(action="escalate", reason=f"the judge failed ({call.error}); failing safe",
                               next_action="answer the pane yourself", call=call)
    decision, outcome = verdict_to_decision(verdict, observation, text, run_state, policy, rules)
    if isinstance(history, JudgeHistory) and verdict.ok:
        history.add(text, hint, verdict, outcome)
    return decision, verdict


class PaneJudge:
    """The judge's per-pane state for a live run or a replay: the rolling history and the change
    hint (relative to the judge's previous look, and whether any decision sent keys since).

    The runner makes one per pane and calls :meth:`decide` where it called ``decide``::

        pane_judge = PaneJudge(build_judge(policy, settings), policy)
        decision, call = pane_judge.decide(obs, screen, run_state, policy_id=policy_id)
        if call is not None:
            journal.append("judge_call", call)

    With ``judge=None`` (``consult: never``) it is exactly ``decide``. An unchanged screen with no
    keys sent since the judge's last look is not sent again before ``policy.judge.reconsult_s``
    (its last verdict stands; an escalation is not repeated), so rechecks of a quiet pane cost
    nothing. Replaying the same screens at the same ``run_state.now`` rebuilds the same hints
    and history, hence the same cache keys."""

    def __init__(self, judge: Judge | None, policy: Policy) -> None:
        self.judge = judge
        self.policy = policy
        self.history = JudgeHistory(policy.judge.history_size)
        self._prev_hash: str | None = None
        self._keys_since = False
        self._last: JudgeVerdict | None = None
        self._last_at = 0.0

    def decide(self, observation: Observation, screen: Screen | str, run_state: RunState, *,
               policy_id: str | None = None) -> tuple[Decision, JudgeCall | None]:
        shash = screen.screen_hash if isinstance(screen, Screen) else observation.screen_hash
        hint = change_hint(self._prev_hash, self._keys_since, shash)
        reuse = None
        if (hint == "identical_no_keys" and self._last is not None
                and run_state.now - self._last_at < self.policy.judge.reconsult_s):
            reuse = self._last
        decision, verdict = _judged(observation, screen, run_state, self.policy, self.judge, self.history, hint,
                                    policy_id=policy_id, reuse=reuse)
        if verdict is not None:
            self._prev_hash, self._keys_since = shash, False
            self._last, self._last_at = verdict, run_state.now
        if decision.keys or decision.text:
            self._keys_since = True
        return decision, (verdict.call if verdict is not None else None)
