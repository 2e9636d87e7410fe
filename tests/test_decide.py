"""decide(observation, run_state, policy): waiting, answering with the right keys, the safety
rules, the strike guard / cooldown / human-at-the-keyboard, stalls, finishing, escalations."""

from __future__ import annotations

import pytest

from supervisor.classify import blocker_signature, classify
from supervisor.decide import answer_class, decide, keys_for, selected_option
from supervisor.models import Blocker, Observation, Prompt, PromptOption, RunState
from supervisor.policy import Policy, baseline_policy, parse_policy
from supervisor.screen import make_screen
from tests.cases import screens as S


@pytest.fixture(scope="module")
def policy() -> Policy:
    return baseline_policy()


def observe(text: str, policy: Policy, obs_id: str = "evt_1") -> Observation:
    obs = classify(make_screen(text), policy)
    obs.observation_id = obs_id
    return obs


def state(**kw: object) -> RunState:
    base: dict[str, object] = {"run_id": "run_d", "now": 1000.0, "started_at": 0.0, "last_output_at": 999.0,
                               "saw_work": True}
    base.update(kw)
    return RunState(**base)  # type: ignore[arg-type]


def test_decision_links_its_trigger_and_policy(policy: Policy) -> None:
    obs = observe(S.claude_bash_permission("npm test"), policy, "evt_42")
    dec = decide(obs, state(), policy)
    assert dec.trigger_id == "evt_42"
    assert dec.policy_id == policy.policy_id
    assert dec.signature == obs.prompt.signature
    assert dec.rule == "approve-tools-and-edits"


def test_decide_is_pure(policy: Policy) -> None:
    obs = observe(S.CODEX_BUSY, policy)
    rs = state(now=5000.0, last_output_at=1000.0, stalls=1)
    assert decide(obs, rs, policy).model_dump() == decide(obs, rs, policy).model_dump()


# --- busy and stalls -----------------------------------------------------------------------

def test_busy_waits(policy: Policy) -> None:
    dec = decide(observe(S.CLAUDE_BUSY_ABOVE_BOX, policy), state(), policy)
    assert (dec.kind, dec.rule, dec.keys) == ("wait", "busy", [])


def test_quiet_busy_pane_is_a_stall_then_an_escalation(policy: Policy) -> None:
    obs = observe(S.CLAUDE_BUSY_ABOVE_BOX, policy)
    quiet_since = 1000.0 - policy.timing.stall_timeout_s - 1
    first = decide(obs, state(last_output_at=quiet_since, stalls=0), policy)
    assert (first.kind, first.rule) == ("wait", "stall")
    last_recorded = decide(obs, state(last_output_at=quiet_since, stalls=policy.budgets.max_stalls - 1), policy)
    assert (last_recorded.kind, last_recorded.rule) == ("wait", "stall")
    over = decide(obs, state(last_output_at=quiet_since, stalls=policy.budgets.max_stalls), policy)
    assert (over.kind, over.rule) == ("escalate", "stall")
    assert over.next_action and "supervisor runs resume run_d" in over.next_action


def test_output_just_before_the_timeout_is_not_a_stall(policy: Policy) -> None:
    obs = observe(S.CLAUDE_BUSY_ABOVE_BOX, policy)
    dec = decide(obs, state(last_output_at=1000.0 - policy.timing.stall_timeout_s + 1), policy)
    assert dec.rule == "busy"


# --- idle, finish, exited ------------------------------------------------------------------

def test_idle_finishes_after_the_confirmations(policy: Policy) -> None:
    obs = observe(S.CLAUDE_IDLE, policy)
    need = policy.timing.finish_confirmations
    assert decide(obs, state(idle_streak=need - 2), policy).kind == "wait"
    done = decide(obs, state(idle_streak=need - 1), policy)
    assert (done.kind, done.rule) == ("finish", "finish")


def test_idle_confirmations_must_be_recheck_apart(policy: Policy) -> None:
    """Two redraws of an idle screen 0.1 s apart are one look, not two confirmations."""
    from supervisor.models import Decision
    from supervisor.runstate import advance

    obs = observe(S.CLAUDE_IDLE, policy)
    rs = state(idle_streak=0, now=1000.0)
    first = decide(obs, rs, policy)
    advance(rs, obs, first, 1000.0, policy.timing.recheck_s)
    rs.now = 1000.1
    assert decide(obs, rs, policy).kind == "wait"  # too soon after the first look
    advance(rs, obs, Decision(kind="wait", reason="x"), 1000.1, policy.timing.recheck_s)
    assert rs.idle_streak == 1
    rs.now = 1000.0 + policy.timing.recheck_s
    assert decide(obs, rs, policy).kind == "finish"


def test_idle_while_the_escalation_is_not_over_does_not_finish(policy: Policy) -> None:
    """The escalated prompt went (a human answered it) but the pause has not ended: finishing now would
    end the run with its escalation never resumed (a loaded host: the finish look came within the
    dismiss grace, and the friction the human's wait cost was never journaled)."""
    obs = observe(S.CLAUDE_IDLE, policy)
    need = policy.timing.finish_confirmations
    dec = decide(obs, state(idle_streak=need + 3, paused=True, pause_reason="dangerous"), policy)
    assert dec.kind == "wait" and "escalation is not over" in dec.reason


def test_idle_before_any_work_never_finishes(policy: Policy) -> None:
    obs = observe(S.CLAUDE_IDLE, policy)
    assert decide(obs, state(saw_work=False, idle_streak=10), policy).kind == "wait"


def test_exited_finishes_and_says_so(policy: Policy) -> None:
    obs = classify(make_screen(S.CLAUDE_IDLE, dead=True), policy)
    dec = decide(obs, state(), policy)
    assert dec.kind == "finish" and "exited" in dec.reason


# --- asking: safety --------------------------------------------------------------------------

def test_default_no_prompt_needs_an_explicit_rule() -> None:
    base = baseline_policy()
    obs = observe(S.SHELL_DEFAULT_NO, base)
    assert decide(obs, state(), base).rule == "default-no"
    allowing = parse_policy(
        "answers:\n  rules:\n    - name: reset-db-ok\n      when: {question: 'continue'}\n"
        "      then: approve\n      allow_default_no: true\n")
    dec = decide(classify(make_screen(S.SHELL_DEFAULT_NO), allowing), state(), allowing)
    assert (dec.kind, dec.keys, dec.approves) == ("answer", ["y", "Enter"], True)


def test_persistent_options_need_allow_persistent() -> None:
    """A rule that may only pick "don't ask again" options escalates unless it allows them."""
    screen = make_screen(S.claude_bash_permission("npm test"))
    only_persistent = parse_policy(
        "answers:\n  rules:\n    - name: remember\n      when: {}\n      then: option\n"
        "      option: \"don't ask again\"\n")
    dec = decide(classify(screen, only_persistent), state(), only_persistent)
    assert dec.kind == "escalate"
    allowed = parse_policy(
        "answers:\n  rules:\n    - name: remember\n      when: {}\n      then: option\n"
        "      option: \"don't ask again\"\n      allow_persistent: true\n")
    dec = decide(classify(screen, allowed), state(), allowed)
    assert (dec.kind, dec.keys) == ("answer", ["2"])


def test_dangerous_prompt_is_escalated_even_by_an_approve_everything_rule() -> None:
    text = S.claude_bash_permission("git push --force origin main")
    policy = baseline_policy().model_copy(deep=True)
    policy.answers.rules.insert(0, policy.answers.rules[-1].model_copy(
        update={"name": "approve-all", "then": "approve"}))
    dec = decide(classify(make_screen(text), policy), state(), policy)
    assert dec.kind == "escalate" and dec.rule == "danger"
    assert "git-push-force" in dec.reason


def test_free_text_questions_are_escalated(policy: Policy) -> None:
    obs = observe("Setting up the project.\nEnter your project name:\n", policy)
    assert obs.state == "asking" and obs.prompt.kind == "free_text"
    dec = decide(obs, state(), policy)
    assert (dec.kind, dec.rule) == ("escalate", "free-text")


def test_always_escalate_patterns_win(policy: Policy) -> None:
    dec = decide(observe(S.CLAUDE_API_KEY, policy), state(), policy)
    assert (dec.kind, dec.rule) == ("escalate", "always-escalate")
    assert "answer" in (dec.next_action or "") and "pane" in (dec.next_action or "")


def test_decline_rule_picks_the_declining_option() -> None:
    policy = parse_policy("answers:\n  rules:\n    - name: no-thanks\n      when: {}\n      then: decline\n")
    dec = decide(classify(make_screen(S.codex_exec_approval("make deploy")), policy), state(), policy)
    assert dec.kind == "answer" and dec.approves is False and dec.keys == ["3"]


def test_keys_rule_is_judged_by_the_option_its_keys_select() -> None:
    """A keys rule sends its keys, and counts as what they select: Enter on a highlighted Yes approves."""
    policy = parse_policy("answers:\n  rules:\n    - name: enter\n      when: {}\n      then: keys\n"
                          "      keys: [Enter]\n")
    dec = decide(classify(make_screen(S.claude_bash_permission("npm test")), policy), state(), policy)
    assert (dec.kind, dec.keys, dec.approves) == ("answer", ["Enter"], True)


# --- asking: strike guard, cooldown, human, budget, already escalated ------------------------

def test_strike_guard_escalates_a_prompt_that_keeps_coming_back(policy: Policy) -> None:
    obs = observe(S.claude_bash_permission("npm test"), policy)
    sig = obs.prompt.signature
    limit = policy.budgets.strike_limit
    assert decide(obs, state(last_prompt_signature=sig, answers_to_same_prompt=limit - 1), policy).kind == "answer"
    dec = decide(obs, state(last_prompt_signature=sig, answers_to_same_prompt=limit), policy)
    assert (dec.kind, dec.rule) == ("escalate", "strike-guard")
    other = decide(obs, state(last_prompt_signature="prm_other", answers_to_same_prompt=limit), policy)
    assert other.kind == "answer"


def test_cooldown_and_human_activity_mean_hands_off(policy: Policy) -> None:
    obs = observe(S.claude_bash_permission("npm test"), policy)
    assert decide(obs, state(cooldown_until=1001.0), policy).rule == "cooldown"
    assert decide(obs, state(human_active_until=1001.0), policy).rule == "human-active"
    assert decide(obs, state(cooldown_until=999.0, human_active_until=999.0), policy).kind == "answer"


def test_intervention_budget(policy: Policy) -> None:
    obs = observe(S.claude_bash_permission("npm test"), policy)
    dec = decide(obs, state(interventions=policy.budgets.max_interventions), policy)
    assert (dec.kind, dec.rule) == ("escalate", "budget")


def test_an_escalated_prompt_is_not_escalated_again(policy: Policy) -> None:
    obs = observe(S.CLAUDE_BYPASS_WARNING, policy)
    first = decide(obs, state(), policy)
    assert first.kind == "escalate" and first.signature == obs.prompt.signature
    again = decide(obs, state(paused=True, escalated_signature=first.signature), policy)
    assert (again.kind, again.rule) == ("wait", "escalated")


# --- blocked ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "words"), [
    (S.CLAUDE_AUTH, "/login"),
    (S.CLAUDE_MERGE_CONFLICT, "merge conflict"),
    (S.CLAUDE_USAGE_LIMIT, "4pm (Europe/Berlin)"),
])
def test_blockers_escalate_once_with_a_next_action(text: str, words: str, policy: Policy) -> None:
    obs = observe(text, policy)
    dec = decide(obs, state(), policy)
    assert dec.kind == "escalate" and dec.rule == "blocker"
    assert words in (dec.next_action or "")
    assert "supervisor runs resume run_d" in (dec.next_action or "")
    assert dec.signature == blocker_signature(obs.blocker)
    again = decide(obs, state(paused=True, escalated_signature=dec.signature), policy)
    assert again.kind == "wait"


def test_blocked_without_details_still_escalates(policy: Policy) -> None:
    obs = Observation(screen_hash="x", state="blocked", blocker=None)
    assert decide(obs, state(), policy).kind == "escalate"
    obs2 = Observation(screen_hash="x", state="blocked", blocker=Blocker(kind="other", message="boom"))
    assert "fix it" in (decide(obs2, state(), policy).next_action or "")


# --- keys per input style --------------------------------------------------------------------

def _prompt(style: str, highlighted: int | None, n: int = 3) -> Prompt:
    options = [PromptOption(index=i, label=f"opt {i}", key=str(i + 1), highlighted=i == highlighted)
               for i in range(n)]
    return Prompt(kind="numbered_menu", question="?", options=options, highlighted=highlighted,
                  default=highlighted, input_style=style)  # type: ignore[arg-type]


def test_keys_for_each_input_style() -> None:
    assert keys_for(_prompt("digit", 0), _prompt("digit", 0).options[2]) == ["3"]
    p = _prompt("arrows", 2)
    assert keys_for(p, p.options[0]) == ["Up", "Up", "Enter"]
    assert keys_for(p, p.options[2]) == ["Enter"]
    p = _prompt("arrows", 0)
    assert keys_for(p, p.options[1]) == ["Down", "Enter"]
    assert keys_for(_prompt("arrows", None), _prompt("arrows", None).options[0]) is None
    p = _prompt("letter_enter", None)
    assert keys_for(p, p.options[1]) == ["2", "Enter"]


def test_claude_bypass_warning_is_never_approved_even_by_an_explicit_rule() -> None:
    """Accepting the bypass warning approves no command, path or URL the screen names: however
    explicit the rule, an approval without a positively identified subject is escalated."""
    from supervisor.policy import AnswerRule

    policy = baseline_policy().model_copy(deep=True)
    policy.answers.always_escalate = []
    policy.answers.rules.insert(0, AnswerRule.model_validate(
        {"name": "accept-bypass", "when": {"kinds": ["trust_dialog"], "question": "bypass"}, "then": "approve",
         "allow_default_no": True}))
    dec = decide(classify(make_screen(S.CLAUDE_BYPASS_WARNING), policy), state(), policy)
    assert (dec.kind, dec.keys, dec.rule) == ("escalate", [], "unknown-subject")


def test_a_shadow_policy_signs_its_own_decision(policy: Policy) -> None:
    obs = observe(S.claude_bash_permission("npm test"), policy)
    shadow = parse_policy("name: cautious\nanswers:\n  rules:\n    - name: all-to-humans\n      then: escalate\n")
    dec = decide(obs, state(), shadow)
    assert dec.policy_id == shadow.policy_id != policy.policy_id
    assert (dec.kind, dec.rule) == ("escalate", "all-to-humans")


# --- what keys select: one definition of approving ---------------------------------------------

def _menu(style: str, highlighted: int | None, *, default: int | None = None) -> Prompt:
    opts = [PromptOption(index=0, label="No", key="1" if style != "arrows" else None, approves=False),
            PromptOption(index=1, label="Yes", key="2" if style != "arrows" else None, approves=True),
            PromptOption(index=2, label="Yes, and don't ask again", key="3" if style != "arrows" else None,
                         approves=True, persistent=True),
            PromptOption(index=3, label="No, tell it what to do differently (esc)", key="4" if style != "arrows"
                         else None, approves=False)]
    if highlighted is not None:
        opts[highlighted].highlighted = True
    return Prompt(kind="tool_permission", question="Run it?", options=opts, highlighted=highlighted,
                  default=highlighted if default is None else default, input_style=style)  # type: ignore[arg-type]


@pytest.mark.parametrize("style, highlighted, keys, label, verdict", [
    ("digit", 0, ["2"], "Yes", "approve"),
    ("digit", 0, ["3"], "Yes, and don't ask again", "approve_persistent"),
    ("digit", 0, ["Enter"], "No", "decline"),
    ("digit", 1, ["Enter"], "Yes", "approve"),
    ("digit", 0, ["Escape"], "No, tell it what to do differently (esc)", "decline"),
    ("arrows", 0, ["Down", "Enter"], "Yes", "approve"),  # Claude 2.1.3xx auto mode: ❯ No first
    ("arrows", 0, ["Enter"], "No", "decline"),
    ("arrows", 0, ["Down", "Down", "Enter"], "Yes, and don't ask again", "approve_persistent"),
    ("arrows", None, ["Down", "Enter"], None, "unknown"),  # no cursor to move from
    ("arrows", 0, ["Up", "Enter"], None, "unknown"),  # off the menu
    ("arrows", 0, ["Down"], None, "unknown"),  # moved, chose nothing
    ("letter_enter", None, ["2", "Enter"], "Yes", "approve"),
    ("letter_enter", None, ["Enter"], "Yes", "approve"),  # the default ([Y/n]) is what Enter takes
    ("digit", 0, ["x"], None, "unknown"),
    ("digit", 0, [], None, "neutral"),
])
def test_selected_option_and_answer_class(style: str, highlighted: int | None, keys: list[str],
                                          label: str | None, verdict: str) -> None:
    prompt = _menu(style, highlighted, default=1 if style == "letter_enter" else None)
    chosen = selected_option(prompt, keys)
    assert (chosen.label if chosen else None) == label
    assert answer_class(prompt, keys) == verdict


def test_every_rule_type_is_judged_by_what_its_keys_select() -> None:
    """A keys rule that presses Yes on a dangerous prompt is an approval like any other: escalated;
    an option rule that picks "don't ask again" needs allow_persistent."""
    danger = make_screen(S.claude_bash_permission("git push --force origin main"))
    keys_yes = parse_policy("answers:\n  rules:\n    - {name: press-1, then: keys, keys: ['1']}\n")
    dec = decide(classify(danger, keys_yes), state(), keys_yes)
    assert dec.kind == "escalate" and dec.rule == "danger"
    persistent = parse_policy("answers:\n  rules:\n    - {name: remember, then: keys, keys: ['2']}\n")
    dec = decide(classify(make_screen(S.claude_bash_permission("npm test")), persistent), state(), persistent)
    assert dec.kind == "escalate" and dec.rule == "persistent"
