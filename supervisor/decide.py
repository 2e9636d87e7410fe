"""decide(observation, run_state, policy) -> Decision: what to do about what the pane shows.

Pure: ``run_state.now`` is the clock, so a recorded run replays to the same decisions under
any policy. Safety comes before rules: a prompt the policy marks dangerous, a prompt whose
default declines, a "don't ask again" option and free-text questions are never answered
automatically unless an explicit rule allows exactly that; the strike guard, the cooldown,
the human-at-the-keyboard window and the intervention budget all stop us from fighting a
prompt that does not go away.

What counts as work (``RunState.saw_work``, kept by the runner; an idle agent finishes only
after work, see :func:`counts_as_work`, which the runner should call on every observation):

* an observation in state ``busy`` (a spinner, a streaming answer, a busy pane title);
* an observation ``asking`` a ``tool_permission`` or ``edit_approval`` prompt, whoever answers
  it (we, or a human after an escalation) and however quick the turn around it was: an agent
  that asks to run a command or edit a file is working on the task.

Not work: answering (or escalating) a ``trust_dialog``, a first-run settings menu, a plain
``yes_no`` or ``numbered_menu`` question, a ``free_text`` question, a blocker, or an exit. Those
happen before any task starts (``supervisor run -- aider`` asks three first-run questions), so
counting them would "finish" the run seconds after start-up. ``decide`` itself never sets
``saw_work``; it only reads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from supervisor.classify import blocker_signature, compiled_rules
from supervisor.models import Blocker, Decision, DecisionKind, Observation, Prompt, PromptOption, RunState
from supervisor.policy import AnswerMatch, AnswerRule
from supervisor.redact import clip
from supervisor.regexes import RegexBudgetExceeded, policy_regex

if TYPE_CHECKING:
    from supervisor.policy import Policy

_RX_CACHE: dict[str, re.Pattern[str]] = {}


def _rx(pattern: str) -> re.Pattern[str]:
    rx = _RX_CACHE.get(pattern)
    if rx is None:
        if len(_RX_CACHE) > 2048:
            _RX_CACHE.clear()
        rx = _RX_CACHE[pattern] = policy_regex(pattern, re.I | re.M)
    return rx


_WORK_PROMPTS = frozenset({"tool_permission", "edit_approval"})


def counts_as_work(observation: Observation) -> bool:
    """Whether this observation shows the agent working on the task (the runner sets
    ``RunState.saw_work`` from it): busy, or asking to run a tool or make an edit. A trust dialog,
    a first-run menu or a plain question is not work."""
    if observation.state == "busy":
        return True
    prompt = observation.prompt
    return observation.state == "asking" and prompt is not None and prompt.kind in _WORK_PROMPTS


def finish_streak(rs: RunState, policy: Policy) -> int:
    """Idle confirmations including the observation being decided: it adds one only when it comes
    ``timing.recheck_s`` after the last counted one (see :func:`supervisor.runstate.idle_spaced`)."""
    spaced = rs.idle_confirmed_at is None or rs.now - rs.idle_confirmed_at >= policy.timing.recheck_s
    return rs.idle_streak + (1 if spaced else 0)


def _decision(kind: DecisionKind, obs: Observation, policy_id: str, reason: str, *, rule: str | None = None,
              keys: list[str] | None = None, approves: bool | None = None, next_action: str | None = None,
              confidence: float | None = None, signature: str | None = None) -> Decision:
    return Decision.model_construct(
        schema_version=1, decision_id=None, kind=kind, keys=keys or [], text=None, approves=approves,
        reason=reason, confidence=obs.confidence if confidence is None else confidence,
        trigger_id=obs.observation_id, rule=rule, next_action=next_action, policy_id=policy_id,
        source="rules", signature=signature,
    )


def _resume_hint(run_state: RunState) -> str:
    return f"`supervisor runs resume {run_state.run_id or 'RUN_ID'}`"


_BLOCKER_ACTIONS = {
    "auth": "run /login in the pane (or fix the API key in the agent's environment), then {resume}",
    "usage_limit": "wait until the usage limit resets{when} (or switch account/plan), then {resume}",
    "rate_limit": "wait for the rate limit to pass{when}, then {resume}",
    "merge_conflict": "resolve the merge conflict in the pane (edit the files, `git add`, continue), then {resume}",
    "git_fatal": "read the git error in the pane and fix the repository state, then {resume}",
    "missing_tool": "install the missing tool (or fix PATH / the MCP server config), then {resume}",
    "model_unavailable": "pick another model in the pane (e.g. /model) or wait until it is back, then {resume}",
    "network": "check the network / API endpoint, then {resume}",
    "other": "read the error in the pane and fix it, then {resume}",
}


def _blocker_next_action(blocker: Blocker, run_state: RunState) -> str:
    when = f" ({blocker.retry_after})" if blocker.retry_after else ""
    template = _BLOCKER_ACTIONS.get(blocker.kind, _BLOCKER_ACTIONS["other"])
    return template.format(when=when, resume=_resume_hint(run_state))


def _prompt_next_action(prompt: Prompt) -> str:
    q = prompt.question.strip() or "the prompt"
    if len(q) > 80:
        q = clip(q, 77) + "..."
    choices = " / ".join(clip(o.label, 40) for o in prompt.options[:6])
    shown = f" ({choices}{' / ...' if len(prompt.options) > 6 else ''})" if choices else ""
    return (f"answer \"{q}\"{shown} in the pane yourself (tmux attach); supervision resumes once the prompt is "
            "gone")


def keys_for(prompt: Prompt, option: PromptOption) -> list[str] | None:
    """The tmux keys that choose ``option`` in this prompt's input style, or None when the
    screen does not say enough to choose it safely (an arrow menu whose cursor we cannot see)."""
    style = prompt.input_style
    key = option.key
    if style in ("digit", "letter") and key:
        if key.lower() in ("esc", "escape"):
            return ["Escape"]
        return [key]
    if style == "letter_enter" and key:
        return [key, "Enter"]
    if style == "enter":
        if option.highlighted or prompt.default == option.index or len(prompt.options) == 1:
            return ["Enter"]
        return None  # only Enter is known to work here (side-by-side options move with keys we cannot see)
    # arrows from the highlighted option; without a visible cursor, Enter could pick anything
    if prompt.highlighted is None:
        return None
    delta = option.index - prompt.highlighted
    return (["Down"] * delta if delta > 0 else ["Up"] * (-delta)) + ["Enter"]


_MOVES = {"Down": 1, "Up": -1, "Tab": 1, "BTab": -1}
_ESC_LABEL = re.compile(r"\(\s*esc\b|\besc to (cancel|reject|deny|decline)\b", re.I)


def selected_option(prompt: Prompt, keys: list[str]) -> PromptOption | None:
    """The option ``keys`` pick in ``prompt``, given its input style and highlighted option, or None
    when that cannot be known (no cursor to move from, keys that pick nothing, Enter with nothing
    highlighted). Every verdict about an answer (approve, decline, persistent) comes from this."""
    options = prompt.options
    if not keys or not options:
        return None
    cursor = prompt.highlighted if prompt.highlighted is not None else prompt.default
    if cursor is None and len(options) == 1 and prompt.input_style in ("enter", "letter_enter"):
        cursor = 0
    by_key = {o.key.lower(): o for o in options if o.key}
    for key in keys:
        if key in _MOVES:
            if cursor is None:
                return None
            cursor += _MOVES[key]
            if not 0 <= cursor < len(options):
                return None
        elif key in ("Enter", "C-m"):
            return options[cursor] if cursor is not None else None
        elif key in ("Escape", "C-["):
            return next((o for o in options if _ESC_LABEL.search(o.label)), None)
        elif key.lower() in by_key:
            option = by_key[key.lower()]
            if prompt.input_style in ("digit", "letter"):
                return option  # the key selects at once
            cursor = option.index  # a letter then Enter (aider, [y/N]); a digit that moves the cursor (Codex)
        else:
            return None
    return None  # moved, but nothing was chosen


AnswerClass = Literal["approve", "approve_persistent", "decline", "neutral", "unknown"]


def answer_class(prompt: Prompt, keys: list[str]) -> AnswerClass:
    """What sending ``keys`` to ``prompt`` amounts to: approving (and widening future permissions,
    ``approve_persistent``), declining, choosing something that is neither (``neutral``: a theme, a
    notice), or ``unknown`` (the keys pick nothing we can name). Eval runs, compares, replay, shadows
    and gates count unsafe approvals with this one definition."""
    if not keys:
        return "neutral"
    option = selected_option(prompt, keys)
    if option is None:
        return "unknown"
    if option.approves is True:
        return "approve_persistent" if option.persistent else "approve"
    if option.approves is False:
        return "decline"
    return "neutral"


def _rule_matches(rule: AnswerRule, obs: Observation, prompt: Prompt) -> bool:
    w = rule.when
    if w.agents is not None and obs.agent not in w.agents:
        return False
    if w.kinds is not None and prompt.kind not in w.kinds:
        return False
    if w.risk is not None and prompt.risk.level not in w.risk:
        return False
    if w.question is not None and not _rx(w.question).search(prompt.question):
        return False
    if w.subject is not None and not _rx(w.subject).search(prompt.risk.subject or ""):
        return False
    return not (w.option is not None and not any(_rx(w.option).search(o.label) for o in prompt.options))


def _pick(prompt: Prompt, want: bool, allow_persistent: bool) -> PromptOption | None:
    """The first option that approves (``want``=True) or declines, never a persistent one unless
    allowed; the highlighted one wins a tie so Enter-only prompts keep working."""
    candidates = [o for o in prompt.options if o.approves is want and (allow_persistent or not o.persistent)]
    if not candidates:
        return None
    for o in candidates:
        if o.highlighted:
            return o
    return candidates[0]


def _decide_prompt(obs: Observation, rs: RunState, policy: Policy, pid: str) -> Decision:
    prompt = obs.prompt
    assert prompt is not None
    sig = prompt.signature
    answers = policy.answers
    budgets = policy.budgets

    if rs.paused and rs.escalated_signature == sig:
        return _decision("wait", obs, pid, "already escalated this prompt; waiting for a human", rule="escalated",
                         signature=sig)
    if rs.now < rs.human_active_until:
        return _decision("wait", obs, pid, "a human is typing in the pane; hands off", rule="human-active",
                         signature=sig)
    if rs.last_prompt_signature == sig and rs.answers_to_same_prompt >= budgets.strike_limit:
        return _escalate(obs, pid, prompt, f"answered this prompt {rs.answers_to_same_prompt} times and it is "
                         "still there (strike guard)", "strike-guard")
    if rs.now < rs.cooldown_until:
        return _decision("wait", obs, pid, "cooling down after an answer that did not take", rule="cooldown",
                         signature=sig)
    if rs.interventions >= budgets.max_interventions:
        return _escalate(obs, pid, prompt, f"intervention budget spent ({rs.interventions} answers)",
                         "budget")
    for pat in answers.always_escalate:
        if _rx(pat).search(prompt.question):
            return _escalate(obs, pid, prompt, f"the policy always escalates prompts like this ({pat!r})",
                             "always-escalate")
    if prompt.kind == "free_text" and answers.escalate_free_text:
        return _escalate(obs, pid, prompt, "the agent asks a question that wants typed text", "free-text")

    rule = next((r for r in answers.rules if _rule_matches(r, obs, prompt)), None)
    if prompt.risk.level == "dangerous" and not (rule is not None and (rule.allow_dangerous or rule.then == "decline")):
        return _escalate(obs, pid, prompt, _danger_reason(prompt), "danger")
    if obs.agent == "unknown" and not any(e.startswith("acp:") for e in obs.evidence):
        # A screen of an agent the policy does not know: which key approves, what is preselected and
        # what Esc does are not known (an ACP request's options are structured, so it may be answered).
        return _escalate(obs, pid, prompt, "an agent the policy does not know asks: its keys are not known",
                         "unknown-agent")
    if rule is None or (rule.then == "escalate" and rule.when == AnswerMatch()):
        # nothing approved it: say why approving would not do (its default, the part not known safe)
        if prompt.default_approves is False:
            return _escalate(obs, pid, prompt, "the prompt's default is No; only a rule that allows default-No "
                             "prompts may answer it", "default-no")
        if prompt.risk.reason or prompt.risk.level == "unknown":
            refusal = _approval_refusal(prompt, AnswerRule(name="none", then="escalate"))
            if refusal is not None:
                return _escalate(obs, pid, prompt, refusal[0], refusal[1])
    if rule is None:
        return _escalate(obs, pid, prompt, "no answer rule matches this prompt", "no-rule")
    if rule.then == "escalate":
        return _escalate(obs, pid, prompt, f"rule {rule.name} escalates this prompt", rule.name)
    option: PromptOption | None = None
    if rule.then == "approve":
        option = _pick(prompt, True, rule.allow_persistent)
    elif rule.then == "decline":
        option = _pick(prompt, False, rule.allow_persistent)
    elif rule.then == "option":
        rx = _rx(rule.option or "^$")
        option = next((o for o in prompt.options if rx.search(o.label)
                       and (rule.allow_persistent or not o.persistent)), None)
    if rule.then == "keys":
        keys = list(rule.keys or [])
        if not keys:
            return _escalate(obs, pid, prompt, f"rule {rule.name} has no keys", rule.name)
    else:
        if option is None:
            return _escalate(obs, pid, prompt, f"rule {rule.name} wants to {rule.then} but no suitable option is "
                             "shown (persistent and unknown options are never picked)", rule.name)
        found = keys_for(prompt, option)
        if found is None or selected_option(prompt, found) is not option:
            return _escalate(obs, pid, prompt, "cannot see which option is highlighted, so no key is safe to send",
                             "no-cursor")
        keys = found
    # Judge the keys by what they select, whatever the rule type.
    verdict = answer_class(prompt, keys)
    chosen = selected_option(prompt, keys)
    approving = verdict in ("approve", "approve_persistent")
    if verdict == "unknown" and any(o.approves for o in prompt.options):
        return _escalate(obs, pid, prompt, f"rule {rule.name}: cannot tell which option {' '.join(keys)} picks, "
                         "and one of them approves", "unknown-selection")
    if approving:
        refusal = _approval_refusal(prompt, rule)
        if refusal is not None:
            return _escalate(obs, pid, prompt, refusal[0], refusal[1])
    if verdict == "approve_persistent" and not rule.allow_persistent:
        return _escalate(obs, pid, prompt, f"rule {rule.name} would pick {chosen.label if chosen else 'an option'!r}, "
                         "which widens future permissions (only a rule with allow_persistent may)", "persistent")
    approves = True if approving else (False if verdict == "decline" else None)
    verb = {True: "approve", False: "decline", None: "choose"}[approves]
    what = f"{verb} with {chosen.label!r}" if chosen is not None else f"send {' '.join(keys)}"
    return _decision("answer", obs, pid, f"rule {rule.name}: {what}", rule=rule.name, keys=keys,
                     approves=approves, signature=sig)


def _approval_refusal(prompt: Prompt, rule: AnswerRule) -> tuple[str, str] | None:
    """Why approving this prompt under ``rule`` is not allowed (reason, rule name), or None."""
    risk = prompt.risk
    if risk.level == "unknown":
        if risk.reason:
            return (f"approving needs every part of the command known safe: {clip(risk.reason, 300)}",
                    "unknown-command")
        if risk.subject_kind is not None:
            what = ", ".join(risk.matched) or "unknown"
            return (f"approving needs a subject known safe ({what}): {clip(risk.subject or '', 200)}".strip(),
                    "unknown-subject")
        return ("approving needs a positively identified subject (command, path or URL); none was found "
                "in this dialog", "unknown-subject")
    if risk.level == "dangerous" and not rule.allow_dangerous:
        return (_danger_reason(prompt), "danger")
    if prompt.default_approves is False and not rule.allow_default_no:
        return ("the prompt's default is No; only a rule that allows default-No prompts may answer it",
                "default-no")
    return None


def _danger_reason(prompt: Prompt) -> str:
    """Why approving is dangerous: the danger patterns that matched, and the command judgment's part."""
    risk = prompt.risk
    what = ", ".join(risk.matched) or "dangerous"
    if risk.reason:
        return f"approving would be dangerous ({what}): {clip(risk.reason, 300)}"
    return f"approving would be dangerous ({what}): {clip(risk.subject or '', 200)}".strip()


def _escalate(obs: Observation, pid: str, prompt: Prompt, reason: str, rule: str) -> Decision:
    return _decision("escalate", obs, pid, reason, rule=rule, next_action=_prompt_next_action(prompt),
                     signature=prompt.signature)


def decide(observation: Observation, run_state: RunState, policy: Policy, *, policy_id: str | None = None) -> Decision:
    """Decide what to do about one observation. Pure: same inputs, same decision.

    The decision carries the id of the policy that decided (a shadow policy deciding on the live
    policy's observation signs its own decision); ``policy_id`` may be passed by a caller that
    already knows it."""
    obs, rs = observation, run_state
    pid = policy_id or compiled_rules(policy).policy_id  # memoized per policy object
    state = obs.state
    if state == "exited":
        if obs.blocker is not None and policy.answers.escalate_blockers:
            # It died of an error a human must fix (no network, no credentials): not a finish.
            blocker = obs.blocker
            return _decision("escalate", obs, pid, f"the agent exited: {blocker.kind}: {blocker.message}",
                             rule="exited-blocked", next_action=_blocker_next_action(blocker, rs),
                             signature=blocker_signature(blocker))
        return _decision("finish", obs, pid, "the agent exited (the pane's program is gone)", rule="exited")
    if state == "asking" and obs.prompt is not None:
        try:
            return _decide_prompt(obs, rs, policy, pid)
        except RegexBudgetExceeded as exc:  # an answer rule's pattern would not finish: a human decides
            return _decision("escalate", obs, pid, str(exc), rule="regex-budget", signature=obs.prompt.signature,
                             next_action="answer it yourself, and rewrite the pattern without nested repetition")
    if state == "asking":
        return _decision("escalate", obs, pid, "asking without a readable prompt", rule="no-prompt",
                         next_action="look at the pane and answer it yourself (tmux attach)")
    if state == "blocked":
        blocker = obs.blocker or Blocker.model_construct(kind="other", message="unknown error", retry_after=None)
        sig = blocker_signature(blocker)
        if rs.paused and rs.escalated_signature == sig:
            return _decision("wait", obs, pid, "already escalated this blocker; waiting for a human", rule="escalated",
                             signature=sig)
        if not policy.answers.escalate_blockers:
            return _decision("wait", obs, pid, f"blocked ({blocker.kind}); the policy does not escalate blockers",
                             rule="blocker", signature=sig)
        return _decision("escalate", obs, pid, f"blocked: {blocker.kind}: {blocker.message}", rule="blocker",
                         next_action=_blocker_next_action(blocker, rs), signature=sig)
    if state == "busy":
        last = rs.last_output_at or rs.started_at
        quiet = rs.now - last if last else 0.0
        if last and quiet >= policy.timing.stall_timeout_s:
            if rs.stalls < policy.budgets.max_stalls:
                return _decision("wait", obs, pid, f"stalled: busy with no output for {quiet:.0f}s "
                                 f"(stall {rs.stalls + 1} of {policy.budgets.max_stalls} before escalating)",
                                 rule="stall")
            return _decision("escalate", obs, pid, f"stalled: busy with no output for {quiet:.0f}s, "
                             f"{rs.stalls} stalls already", rule="stall",
                             next_action="look at the pane: the agent may be hung; press Escape to interrupt it "
                             f"or give it a nudge, then {_resume_hint(rs)}")
        return _decision("wait", obs, pid, "the agent is working", rule="busy")
    # idle
    streak = finish_streak(rs, policy)
    if rs.paused:
        # the escalated prompt went away (a human answered it) but the pause has not ended yet: it ends
        # once the prompt stays gone (the runner journals the resume), and only then may the run finish
        return _decision("wait", obs, pid, "idle, but the escalation is not over yet (its prompt must stay gone)",
                         rule="idle")
    if rs.saw_work and streak >= policy.timing.finish_confirmations:
        return _decision("finish", obs, pid, f"idle {streak} times in a row after work: finished",
                         rule="finish")
    if not rs.saw_work:
        return _decision("wait", obs, pid, "idle, but the agent has not worked yet in this run", rule="idle")
    return _decision("wait", obs, pid, f"idle ({streak} of {policy.timing.finish_confirmations} "
                     "confirmations before finishing)", rule="idle")
