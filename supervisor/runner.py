"""The live supervision loop: observe -> classify -> decide -> act -> check -> record.

One :class:`PaneRunner` supervises one pane as one run with its own journal. A
:class:`Supervisor` drives any number of them from a single thread: surface reader threads put
output events on a queue, the loop blocks on that queue, and the only timers are the ones a
pending decision needs (settle after output, answer confirmation, stall check, finish
re-check, the end of a cooldown or of a human's turn). A quiet pane costs nothing.

Order of operations, always: journal (fsynced) first, then act. The warehouse is fed from a
background thread (:class:`WarehouseFeeder`) and may be locked by a notebook; supervision
never waits for it.

Human at the keyboard (the heuristic, documented): tmux does not tell us who typed a key, so
we attribute screen changes. Output within ``confirm_timeout_s`` of keys we sent is ours.
Otherwise, a changed screen while a human's tmux client on that session shows activity
(``client_activity``, whole seconds) is the human; a prompt we saw (and did not answer, and did not escalate) that disappears means a
human answered it; a change of the cursor row while the agent sits idle means a human is
typing in its input box. Either records ``human_keystrokes`` friction (once per human turn)
and keeps our hands off the pane for ``policy.timing.human_quiet_s``. A prompt disappearing
while the run is paused is the human resolving the escalation: that is a ``resume``.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import queue
import socket as socketlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from supervisor import __version__
from supervisor.agents import agent_from_argv, agent_of_pane, exit_keys, is_shell
from supervisor.errors import PaneGone, SurfaceError
from supervisor.ids import new_id
from supervisor.journal import Journal
from supervisor.models import Action, Decision, Event, Friction, FrictionKind, Observation, RunState, Screen
from supervisor.policy import Policy
from supervisor.redact import clip
from supervisor.runstate import advance, clear_pause_if_resolved, note_answer, note_escalation
from supervisor.settings import Settings
from supervisor.surfaces.base import OutputEvent, PaneInfo, RawScreen, Surface

logger = logging.getLogger(__name__)

Outcome = Literal["finished", "exited", "stopped", "escalated"]
"""How a run ended: the agent finished (idle confirmed after work); its program exited (or
the pane vanished); the supervisor was stopped; stopped while paused on an escalation."""

BUSY_JOURNAL_EVERY_S = 5.0
"""While a pane stays busy and keeps printing, journal its observation at most this often."""
MAX_IDLE_WAIT_S = 10.0
"""The loop wakes at least this often (a few microseconds of CPU) so signals are never missed."""
MAX_SETTLE_DELAY_S = 1.0
"""Under continuous output (a spinner), observe at least this often anyway."""


@dataclass
class RunConfig:
    """How to supervise: the acting policy, shadow policies, and lifecycle switches."""

    policy: Policy
    shadows: list[Policy] = field(default_factory=list)
    exit_on_finish: bool = False
    end_on_finish: bool = True
    """End the run once it is finished (``run``); fleets may keep the pane for a new run."""
    scrollback: int = 0
    command: list[str] | str | None = None
    """The command ``run`` started (journaled in ``run_started``)."""
    settle_ms: int | None = None
    """Override of ``policy.timing.settle_ms`` (benchmarks)."""


@dataclass
class _Pending:
    """An answer sent and not yet confirmed."""

    action: Action
    signature: str | None
    screen_hash: str
    sent_at: float


def _now() -> float:
    return time.time()


class PaneRunner:
    """Supervises one pane as one run. Not thread-safe: the :class:`Supervisor` loop owns it."""

    def __init__(self, surface: Surface, pane: PaneInfo, settings: Settings, config: RunConfig, *,
                 run_id: str | None = None, on_change: Callable[[PaneRunner, Event], None] | None = None,
                 socket: str | None = None) -> None:
        from supervisor.classify import classify
        from supervisor.decide import decide
        from supervisor.screen import make_screen

        self._classify, self._decide, self._make_screen = classify, decide, make_screen
        self.surface = surface
        self.pane = pane
        self.pane_id = pane.pane_id
        self.settings = settings
        self.config = config
        self.policy = config.policy
        self.policy_id = config.policy.policy_id
        self.shadows = [(p.policy_id, p) for p in config.shadows]
        self.socket = socket
        self.run_id = run_id or new_id("run_")
        self.journal = Journal(settings.journal_path(self.run_id), self.run_id)
        self._offpane: Any = None
        """The NotificationHub for escalations, made at the first one (its webhook has a thread)."""
        self._on_change = on_change
        now = _now()
        self.state = RunState(run_id=self.run_id, now=now, started_at=now, last_output_at=now)
        self.shadow_states = {pid: RunState(run_id=self.run_id, now=now, started_at=now, last_output_at=now)
                              for pid, _ in self.shadows}
        timing = self.policy.timing
        settle = config.settle_ms if config.settle_ms is not None else timing.settle_ms
        self.settle_s = settle / 1000.0
        self.outcome: Outcome | None = None
        self.exit_code: int | None = None
        self.last_obs: Observation | None = None
        self.last_screen: Screen | None = None
        self.last_hash: str | None = None
        self._last_journaled_at = 0.0
        self._observe_at: float | None = None
        self._first_unobserved: float | None = None
        self._timer_at: float | None = None
        self._pending: _Pending | None = None
        self._reason = "start"
        self._probes: list[float] = []
        self._last_action: Action | None = None
        self._our_keys_at = 0.0
        self._answered_sigs: dict[str, float] = {}
        self._gone_since_answer: set[str] = set()
        self._human_turn = False
        self._stall_recorded_at: float | None = None
        self._last_full_obs_at = 0.0
        self._end_extra: dict[str, Any] = {}
        known = agent_from_argv(config.command, self.policy)
        if known == "unknown":
            known = agent_of_pane(pane, self.policy)
        self.known_agent = "unknown" if is_shell(known) else known
        """The agent the runner knows it supervises (the command it launched, the pane's process):
        filled into observations whose screen does not name it."""
        """Extra ``run_ended`` fields (the blocker an exited agent showed)."""
        self.observations = 0
        self.decisions: list[Decision] = []
        from supervisor.judge import PaneJudge, build_judge

        # The optional LLM judge (issue 7); with judge.consult: never it is None and decide runs alone.
        self.judge = PaneJudge(build_judge(self.policy, settings), self.policy)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        info = self.pane
        cmd = self.config.command
        self._append("run_started", {
            "run_id": self.run_id, "command": cmd if cmd is not None else info.current_command,
            "pane_id": self.pane_id, "session": info.session, "socket": self.socket,
            "policy_id": self.policy_id, "policy_name": self.policy.name,
            "shadow_policy_ids": [pid for pid, _ in self.shadows], "agent": self.known_agent,
            "cwd": info.current_path or os.getcwd(), "host": socketlib.gethostname(), "pid": os.getpid(),
            "user": _user(), "package_version": __version__,
        })
        # Look once right away: the pane may already show a prompt.
        self._observe_at = _now()

    def end(self, outcome: Outcome, *, exit_code: int | None = None, reason: str = "") -> None:
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.exit_code = exit_code
        if self._offpane is not None:  # bounded: a dead webhook delays the end by close_timeout_s at most
            self._offpane.close()
        self._append("run_ended", {"outcome": outcome, "exit_code": exit_code, "pane_id": self.pane_id,
                                   "reason": reason, "paused": self.state.paused,
                                   "pause_reason": self.state.pause_reason,
                                   "interventions": self.state.interventions, "stalls": self.state.stalls}
                     | self._end_extra)
        self.journal.close()

    def stop(self) -> None:
        """End the run because the supervisor stops (Ctrl-C): ``escalated`` if paused."""
        self.end("escalated" if self.state.paused else "stopped", reason="supervisor stopped")

    @property
    def done(self) -> bool:
        return self.outcome is not None

    # -- events ------------------------------------------------------------------------------------
    def on_event(self, ev: OutputEvent) -> None:
        if self.done:
            return
        now = ev.at or _now()
        if ev.kind == "output":
            self.state.last_output_at = now
            self._stall_recorded_at = None
            if self._first_unobserved is None:
                self._first_unobserved = now
            cap = self._first_unobserved + max(MAX_SETTLE_DELAY_S, 4 * self.settle_s)
            self._observe_at = min(now + self.settle_s, cap)
            self._reason = "output"
        elif ev.kind == "tick":
            self._observe_at = now
            self._reason = "poll"
        elif ev.kind in ("pane_dead", "pane_gone"):
            self._observe_at = now
            self._reason = ev.kind

    def next_deadline(self) -> float | None:
        if self.done:
            return None
        times = [t for t in (self._observe_at, self._timer_at) if t is not None]
        if self._probes:
            times.append(self._probes[0])
        return min(times) if times else None

    def tick(self, now: float) -> None:
        """Run whatever is due at ``now``."""
        if self.done:
            return
        if self._probes and self._probes[0] <= now:
            while self._probes and self._probes[0] <= now:
                self._probes.pop(0)
            self._probe(now)
        due_observe = self._observe_at is not None and self._observe_at <= now
        due_timer = self._timer_at is not None and self._timer_at <= now
        if not (due_observe or due_timer):
            return
        trigger = self._reason if due_observe else "timer"
        self._observe_at = None
        self._first_unobserved = None
        if due_timer:
            self._timer_at = None
        self.observe(now, trigger=trigger, force=due_timer)

    # -- one observation ---------------------------------------------------------------------------
    def observe(self, now: float, *, trigger: str = "output", force: bool = False) -> Decision | None:
        try:
            raw = self.surface.capture(self.pane_id, scrollback=self.config.scrollback)
        except PaneGone as exc:
            self.end("exited", reason=f"pane gone: {exc.message}")
            return None
        except SurfaceError as exc:
            self._append("note", {"error": exc.one_line(), "pane_id": self.pane_id})
            self._timer_at = now + max(1.0, self.policy.timing.recheck_s)
            return None
        self.pane = raw.info
        screen = self._screen(raw)
        shash = screen.screen_hash
        if not force and shash == self.last_hash and not raw.info.dead:
            self._check_pending(now, self.last_obs, shash)
            self._schedule(now, self.last_obs)
            return None
        if trigger == "poll" and shash != self.last_hash:
            self.state.last_output_at = now  # polling: a changed screen is the only sign of output
            self._stall_recorded_at = None
        obs = self._classify(screen, self.policy)
        if raw.info.dead and obs.state != "exited":
            obs = obs.model_copy(update={"state": "exited"})
        classified_agent = obs.agent
        if obs.agent == "unknown" and self.known_agent != "unknown":
            obs = obs.model_copy(update={"agent": self.known_agent})
        prev_obs, prev_screen = self.last_obs, self.last_screen
        busy_repeat = (obs.state == "busy" and prev_obs is not None and prev_obs.state == "busy"
                       and trigger in ("output", "poll") and now - self._last_journaled_at < BUSY_JOURNAL_EVERY_S)
        self.last_obs, self.last_screen, self.last_hash = obs, screen, shash
        self.observations += 1
        if busy_repeat:
            self.state.last_state = "busy"
            self._check_pending(now, obs, shash)
            self._schedule(now, obs)
            return None

        self._notice_human(now, obs, prev_obs, screen, prev_screen)
        self._last_full_obs_at = now
        self._maybe_resume(obs)
        self._check_pending(now, obs, shash)
        self._note_repeat(obs)

        obs_id = new_id()
        obs.observation_id = obs_id
        obs.policy_id = obs.policy_id or self.policy_id
        self._append("observation", {
            "observation": obs.model_dump(mode="json"), "pane_id": self.pane_id, "trigger": trigger,
            "screen": {"screen_hash": shash, "text": screen.text, "width": screen.width,
                       "height": screen.height, "title": screen.title, "cursor_x": screen.cursor_x,
                       "cursor_y": screen.cursor_y, "current_command": screen.current_command,
                       "dead": screen.dead},
        }, event_id=obs_id)
        self._last_journaled_at = now

        self.state.now = now
        if self.judge.judge is None:
            decision = self._decide(obs, self.state, self.policy, policy_id=self.policy_id)
            if classified_agent != obs.agent and self._agent_keys_rule(decision):
                # Fixed keys written for one agent's screen: only when the screen itself says it
                # is that agent. Approve/decline keys come from the prompt's input style, which
                # classify read off the screen, so the filled-in agent is safe there.
                decision = self._decide(obs.model_copy(update={"agent": classified_agent}), self.state,
                                        self.policy, policy_id=self.policy_id)
        else:  # rules first, the judge where they cannot decide, the safety rules over it
            decision, judge_call = self.judge.decide(obs, screen, self.state, policy_id=self.policy_id)
            if judge_call is not None:
                self._append("judge_call", judge_call.model_dump(mode="json"))
        if decision.kind == "finish" and obs.state != "exited" and now < self.state.human_active_until:
            # decide() does not look at the human window for idle screens: a human typing a new
            # instruction into the input box means the run is not finished.
            decision = decision.model_copy(update={
                "kind": "wait", "rule": "human-active", "keys": [],
                "reason": "idle, but a human is typing in the pane: not finished"})
        decision.decision_id = new_id()
        decision.trigger_id = obs_id
        self._append("decision", {"decision": decision.model_dump(mode="json"), "pane_id": self.pane_id},
                     event_id=decision.decision_id)
        self.decisions.append(decision)
        self._shadow(obs, now)
        self._act(decision, obs, raw, now)
        if not self.done:
            advance(self.state, obs, decision, now, self.policy.timing.recheck_s)
            self._schedule(now, obs)
        return decision

    def _agent_keys_rule(self, decision: Decision) -> bool:
        """Whether an answer came from an agent-scoped rule that sends fixed keys."""
        if decision.kind != "answer" or decision.rule is None:
            return False
        rule = next((r for r in self.policy.answers.rules if r.name == decision.rule), None)
        return rule is not None and rule.then == "keys" and rule.when.agents is not None

    def _probe(self, now: float) -> None:
        """A quick look right after sending keys, only to confirm they took. Under continuous
        output (a spinner) the next full observation may come after the agent has already
        moved on, possibly to an identical-looking prompt; the probe sees the change first."""
        if self._pending is None:
            self._probes.clear()
            return
        try:
            raw = self.surface.capture(self.pane_id)
        except SurfaceError:
            return
        screen = self._screen(raw)
        self._check_pending(now, self._classify(screen, self.policy), screen.screen_hash, probe=True)
        if self._pending is None:
            self._probes.clear()
            # The screen changed since the last full observation: the next one must not be
            # skipped as "unchanged" even if the agent is back to an identical-looking screen
            # (the same prompt again). Make sure there is a next one.
            self.last_hash = None
            if self._observe_at is None:
                self._observe_at = now + self.settle_s
                self._reason = "output"

    def _screen(self, raw: RawScreen) -> Screen:
        i = raw.info
        return self._make_screen(raw.text, width=i.width, height=i.height, title=i.title,
                                 current_command=i.current_command, dead=i.dead, cursor_x=i.cursor_x,
                                 cursor_y=i.cursor_y, scrollback=raw.scrollback)

    # -- bookkeeping -------------------------------------------------------------------------------
    def _shadow(self, obs: Observation, now: float) -> None:
        for pid, policy in self.shadows:
            rs = self.shadow_states[pid]
            rs.now = now
            rs.last_output_at = self.state.last_output_at
            rs.human_active_until = self.state.human_active_until
            try:
                d = self._decide(obs, rs, policy, policy_id=pid)
            except Exception as exc:  # noqa: BLE001 - a broken candidate must not stop a live run
                self._append("note", {"shadow_policy_id": pid, "error": f"{type(exc).__name__}: {exc}"})
                continue
            d.decision_id = new_id()
            d.trigger_id = obs.observation_id
            self._append("shadow_decision", {"decision": d.model_dump(mode="json"), "shadow_policy_id": pid,
                                             "acting_policy_id": self.policy_id, "pane_id": self.pane_id},
                         event_id=d.decision_id)
            if d.kind == "answer":
                note_answer(rs, d, now)
            elif d.kind == "escalate":
                note_escalation(rs, d)
            clear_pause_if_resolved(rs, obs)
            advance(rs, obs, d, now, policy.timing.recheck_s)

    def _friction(self, kind: FrictionKind, detail: str, seconds_lost: float | None = None) -> None:
        self._append("friction", Friction(kind=kind, detail=detail, seconds_lost=seconds_lost).model_dump(mode="json")
                     | {"pane_id": self.pane_id})

    def _append(self, kind: Any, payload: dict[str, Any], *, event_id: str | None = None) -> None:
        event = self.journal.append(kind, payload, event_id=event_id)
        if self._on_change is not None:
            self._on_change(self, event)

    # -- human, resume, repeats, confirmation ------------------------------------------------------
    def _notice_human(self, now: float, obs: Observation, prev: Observation | None, screen: Screen,
                      prev_screen: Screen | None) -> None:
        if prev is None or prev_screen is None:
            return
        if now - self._our_keys_at < self.policy.timing.confirm_timeout_s or self._pending is not None:
            return
        what = None
        client_input = getattr(self.surface, "client_input_since", None)
        # Only where a human's keys matter (typing into the input box, answering a prompt), so a
        # new prompt after busy output is not delayed by a tmux round trip.
        if (client_input is not None and prev.state in ("idle", "asking") and obs.state != "exited"
                and screen.text != prev_screen.text  # normalized text: a highlight moving is not typing
                and client_input(self.pane.session, self._last_full_obs_at)):
            what = "input from an attached tmux client"
        elif prev.state == "asking" and prev.prompt is not None and not self.state.paused:
            gone = obs.state != "asking" or obs.prompt is None or obs.prompt.signature != prev.prompt.signature
            # We answered that very prompt when we saw it: its going is our doing, however late
            # (on a loaded machine) the next full observation comes after our keys.
            ours = self._answered_sigs.get(prev.prompt.signature, -1.0) >= self._last_full_obs_at
            if gone and not ours and obs.state != "exited":
                what = f"prompt answered without us: {clip(prev.prompt.question, 80)!r}"
        elif prev.state == "idle" and obs.state == "idle" and _input_changed(prev_screen, screen):
            what = "typing in the agent's input box"
        if what is None:
            if now >= self.state.human_active_until:
                self._human_turn = False
            return
        if not self._human_turn:
            self._friction("human_keystrokes", what)
            self._human_turn = True
        self.state.human_active_until = now + self.policy.timing.human_quiet_s
        self.state.idle_streak = 0

    def _maybe_resume(self, obs: Observation) -> None:
        rs = self.state
        if not rs.paused:
            return
        sig = obs.prompt.signature if obs.prompt is not None else None
        if obs.state == "blocked":
            return
        if obs.state == "asking" and (sig is None or sig == rs.escalated_signature):
            return
        self._append("resume", {"pane_id": self.pane_id, "state": obs.state, "was": rs.pause_reason,
                                "by": "human" if obs.state != "exited" else "exit"})
        rs.paused, rs.pause_reason, rs.escalated_signature = False, None, None

    def _note_repeat(self, obs: Observation) -> None:
        sig = obs.prompt.signature if obs.state == "asking" and obs.prompt is not None else None
        for s in list(self._answered_sigs):
            if s != sig:
                self._gone_since_answer.add(s)
        if sig is not None and sig in self._gone_since_answer and sig in self._answered_sigs:
            self._friction("repeated_prompt", f"the prompt came back after we answered it: "
                           f"{clip(obs.prompt.question, 80)!r}" if obs.prompt else "")
            self._gone_since_answer.discard(sig)

    def _check_pending(self, now: float, obs: Observation | None, shash: str, *, probe: bool = False) -> None:
        p = self._pending
        if p is None or obs is None:
            return
        still = obs.state == "asking" and obs.prompt is not None and obs.prompt.signature == p.signature
        if not still and (shash != p.screen_hash or obs.state != "asking"):
            self._pending = None
            # The answer took: strikes count answers that did not. The same prompt asked again
            # later is a new question (and a ``repeated_prompt`` friction), not a strike.
            self.state.answers_to_same_prompt = 0
            self._append("action", p.action.model_copy(update={"confirmed": True}).model_dump(mode="json"))
            return
        if not probe and now - p.sent_at >= self.policy.timing.confirm_timeout_s:
            self._pending = None
            self._append("action", p.action.model_copy(update={"confirmed": False}).model_dump(mode="json"))
            self._friction("answer_not_taken", f"keys {' '.join(p.action.keys)} did not change the prompt "
                           f"within {self.policy.timing.confirm_timeout_s:g}s")
            self.state.cooldown_until = now + self.policy.budgets.cooldown_s

    # -- acting ------------------------------------------------------------------------------------
    def _act(self, decision: Decision, obs: Observation, raw: RawScreen, now: float) -> None:
        if decision.rule == "stall" and self._stall_recorded_at is None:
            quiet = now - self.state.last_output_at
            self._friction("stall", decision.reason, seconds_lost=quiet)
            self._stall_recorded_at = now
        kind = decision.kind
        if obs.state == "exited":
            if kind == "escalate":  # rule exited-blocked: it died of an error a human must fix
                self._exited_blocked(decision, obs)
            self.end("exited", exit_code=self._exit_status(raw.info), reason=decision.reason)
            return
        if kind == "answer":
            if now < self.state.human_active_until:
                self._append("note", {"skipped": "answer", "why": "a human is active in the pane",
                                      "decision_id": decision.decision_id})
                return
            self._send(decision, decision.keys, text=decision.text, kind="send_keys")
            note_answer(self.state, decision, now)
            if decision.signature:
                self._answered_sigs[decision.signature] = now
                self._gone_since_answer.discard(decision.signature)
            if self._last_action is not None:
                self._pending = _Pending(self._last_action, decision.signature, obs.screen_hash, now)
                sent = self._our_keys_at or now
                self._probes = [sent + 0.03, sent + 0.15, sent + 0.5]
        elif kind == "escalate":
            if self.state.paused and self.state.escalated_signature == decision.signature:
                return
            note_escalation(self.state, decision)
            next_action = decision.next_action or f"look at pane {self.pane_id} and handle it yourself"
            risk = obs.prompt.risk if obs.prompt is not None else None
            danger = ""
            if risk is not None and risk.level == "dangerous" and not all(m in decision.reason for m in risk.matched):
                danger = f" [dangerous: {', '.join(risk.matched) or risk.subject or 'per policy'}]"
            self._append("pause", {"pause_reason": decision.reason + danger, "next_action": next_action,
                                   "pane_id": self.pane_id, "rule": decision.rule, "state": obs.state,
                                   "risk": risk.model_dump(mode="json") if risk is not None else None,
                                   "blocker": obs.blocker.model_dump(mode="json") if obs.blocker else None,
                                   "signature": decision.signature, "decision_id": decision.decision_id})
            self._friction("escalation", decision.reason + danger)
            self._notify_offpane(f"paused: {decision.reason}{danger}", next_action)
            if self.policy.pause.display_message:
                msg = f"supervisor paused {self.pane_id}: {decision.reason}{danger} | next: {next_action}"
                try:
                    self.surface.display_message(self.pane_id, msg[:400], ms=self.policy.pause.display_ms)
                    self._append("notification", {"channel": "tmux", "title": "paused", "body": msg, "ok": True,
                                                  "pane_id": self.pane_id})
                except SurfaceError as exc:
                    self._append("notification", {"channel": "tmux", "title": "paused", "body": msg, "ok": False,
                                                  "error": exc.one_line(), "pane_id": self.pane_id})
        elif kind == "finish":
            if self.config.exit_on_finish:
                keys = exit_keys(obs.agent, self.policy)
                if keys:
                    self._send(decision, keys, kind="exit_agent")
            if self.config.end_on_finish:
                self.end("finished", reason=decision.reason)

    def _exited_blocked(self, decision: Decision, obs: Observation) -> None:
        """The agent exited showing a blocker (401, usage limit...): journal the pause (so
        ``status``/``runs show`` say why and what to do) and a journal-only notification (a
        display-message on a dead pane reaches nobody); ``run_ended`` carries the blocker too."""
        next_action = decision.next_action or f"look at pane {self.pane_id} and handle it yourself"
        blocker = obs.blocker.model_dump(mode="json") if obs.blocker is not None else None
        note_escalation(self.state, decision)
        self._append("pause", {"pause_reason": decision.reason, "next_action": next_action, "pane_id": self.pane_id,
                               "rule": decision.rule, "state": obs.state, "risk": None, "blocker": blocker,
                               "signature": decision.signature, "decision_id": decision.decision_id})
        self._friction("escalation", decision.reason)
        self._append("notification", {"channel": "journal", "title": "exited blocked", "ok": True,
                                      "body": f"{self.pane_id} exited: {decision.reason} | next: {next_action}",
                                      "pane_id": self.pane_id})
        self._end_extra = {"blocker": blocker, "next_action": next_action, "rule": decision.rule}
        self._notify_offpane(f"exited blocked: {decision.reason}", next_action)

    def _notify_offpane(self, title: str, next_action: str) -> None:
        """Escalations of every run (not only workflows) reach the JSONL file and the webhook;
        each channel's outcome is journaled as a ``notification`` (the webhook's when known)."""
        from supervisor.workflow.notify import Notification, NotificationHub, offpane_channels

        if self._offpane is None:
            self._offpane = NotificationHub(offpane_channels(self.settings),
                                            record=lambda payload: self._append("notification", payload))
        self._offpane.notify(Notification(run_id=self.run_id, pane_id=self.pane_id, kind="escalation",
                                          title=clip(title, 200), body=title, next_action=next_action))

    def _send(self, decision: Decision, keys: list[str], *, text: str | None = None,
              kind: Literal["send_keys", "exit_agent"] = "send_keys") -> None:
        action = Action(action_id=new_id(), decision_id=decision.decision_id, kind=kind, keys=list(keys),
                        text=text, pane_id=self.pane_id, delivered=False)
        self._append("action", action.model_dump(mode="json"))
        try:
            if text:
                self.surface.paste_text(self.pane_id, text)
            self.surface.send_keys(self.pane_id, list(keys))
        except SurfaceError as exc:
            action = action.model_copy(update={"error": exc.one_line()})
            self._append("action", action.model_dump(mode="json"))
            self._last_action = action
            return
        self._our_keys_at = _now()
        action = action.model_copy(update={"delivered": True})
        self._append("action", action.model_dump(mode="json"))
        self._last_action = action

    def _exit_status(self, info: PaneInfo) -> int | None:
        """The dead pane's exit status. tmux marks a pane dead when its pty closes, which can be a
        moment before it has reaped the process and knows the status: ask again briefly."""
        deadline = _now() + 1.0
        while info.dead_status is None and info.dead and _now() < deadline:
            time.sleep(0.05)
            try:
                info = self.surface.pane_info(self.pane_id)
            except SurfaceError:
                break
        return info.dead_status

    # -- timers --------------------------------------------------------------------------------------
    def _schedule(self, now: float, obs: Observation | None) -> None:
        """Set the one timer the current situation needs (or none)."""
        t = self.policy.timing
        rs = self.state
        cands: list[float] = []
        if self._pending is not None:
            cands.append(self._pending.sent_at + t.confirm_timeout_s)
        if obs is not None and not self.done:
            if obs.state == "busy":
                base = rs.last_output_at + t.stall_timeout_s * (1 + (rs.stalls if self._stall_recorded_at else 0))
                cands.append(max(base, now + 0.05))
            elif obs.state == "idle" and rs.saw_work and not rs.finished:
                # keep a re-check already due sooner: unchanged screens (poll ticks, redraws)
                # must not push the finish confirmation out forever
                due = self._timer_at
                cands.append(due if due is not None and now < due <= now + t.recheck_s else now + t.recheck_s)
            elif obs.state == "asking" and not rs.paused:
                for until in (rs.cooldown_until, rs.human_active_until):
                    if until > now:
                        cands.append(until + 0.01)
            if rs.human_active_until > now and obs.state == "idle":
                cands.append(rs.human_active_until + 0.01)
        self._timer_at = min(cands) if cands else None


def _row(text: str, row: int) -> str:
    lines = text.split("\n")
    return lines[row] if 0 <= row < len(lines) else ""


_INPUT_MARKERS = ("❯", "›", ">", "│ >", "> ")


def _input_changed(before: Screen, after: Screen) -> bool:
    """True when the line under the cursor, or an input-box line (``❯ …``, ``› …``, ``> …``) in
    the bottom rows, differs between two idle screens: someone is typing into the agent."""
    if (before.cursor_y is not None and before.cursor_y == after.cursor_y
            and _row(before.text, before.cursor_y) != _row(after.text, after.cursor_y)):
        return True
    old = before.text.split("\n")[-8:]
    new = after.text.split("\n")[-8:]
    old_inputs = [ln for ln in old if ln.lstrip().startswith(_INPUT_MARKERS)]
    new_inputs = [ln for ln in new if ln.lstrip().startswith(_INPUT_MARKERS)]
    return bool(old_inputs) and len(old_inputs) == len(new_inputs) and old_inputs != new_inputs


def block_signals() -> None:
    """Keep SIGINT/SIGTERM away from a helper thread so the kernel delivers them to the main one."""
    import signal

    with contextlib.suppress(AttributeError, ValueError, OSError):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001
        return ""


class WarehouseFeeder:
    """Ingests journals into the warehouse from a background thread, a couple of seconds after
    new events, never blocking supervision; a locked warehouse is simply tried again later."""

    def __init__(self, settings: Settings, interval_s: float = 2.0) -> None:
        self.settings = settings
        self.interval_s = interval_s
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="warehouse-feeder", daemon=True)
        self.syncs = 0
        self.locked = 0
        self.errors: list[str] = []
        self.skipped_lines: dict[str, int] = {}
        """Journal -> lines the warehouse skipped as not valid events (reported, never fatal)."""
        try:
            from supervisor.warehouse import try_sync
        except ImportError:  # the warehouse is optional for live supervision
            self._try_sync: Callable[[Settings], Any] | None = None
        else:
            self._try_sync = try_sync

    def start(self) -> None:
        if self._try_sync is not None:
            self._thread.start()

    def poke(self) -> None:
        self._dirty.set()

    def _loop(self) -> None:
        block_signals()
        while not self._stop.is_set():
            self._dirty.wait()
            if self._stop.wait(self.interval_s):
                break
            self._dirty.clear()
            self.sync_once()

    def sync_once(self) -> None:
        if self._try_sync is None:
            return
        try:
            result = self._try_sync(self.settings)
        except Exception as exc:  # noqa: BLE001 - the journal has everything; report and go on
            self.errors.append(f"{type(exc).__name__}: {exc}")
            logger.warning("warehouse sync failed (journals keep every event): %s: %s", type(exc).__name__, exc)
            return
        if result is None:
            self.locked += 1
            self._dirty.set()
        else:
            self.syncs += 1
            for path, n in result.bad_lines.items():
                self.skipped_lines[path] = self.skipped_lines.get(path, 0) + n
                logger.warning("warehouse skipped %d line(s) of %s that are not valid events (%s); "
                               "`supervisor warehouse stats` lists them", n, path, result.reasons.get(path, "?"))

    def stop(self, *, final_sync: bool = True) -> None:
        self._stop.set()
        self._dirty.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        if final_sync:
            self.sync_once()


Discover = Callable[[], Iterable[PaneInfo]]


class Supervisor:
    """Supervises many panes from one thread. Output events arrive on a queue from the surface's
    reader threads; the loop sleeps until the next event or the earliest timer."""

    def __init__(self, surface: Surface, settings: Settings, config: RunConfig, *, socket: str | None = None,
                 discover: Discover | None = None, feeder: WarehouseFeeder | None = None,
                 renew_finished: bool = False) -> None:
        self.surface = surface
        self.settings = settings.ensure()
        self.config = config
        self.socket = socket
        self.discover = discover
        self.renew_finished = renew_finished
        self.runners: dict[str, PaneRunner] = {}
        self.ended: list[PaneRunner] = []
        self.events: queue.Queue[OutputEvent | None] = queue.Queue()
        self.feeder = feeder if feeder is not None else WarehouseFeeder(self.settings)
        self._stopping = threading.Event()
        self._rescan = False
        self._ignored: dict[str, float] = {}
        self.on_run_started: Callable[[PaneRunner], None] | None = None
        self.on_run_ended: Callable[[PaneRunner], None] | None = None
        self.on_journal: Callable[[PaneRunner, Event], None] | None = None
        """Called after every journaled event (the CLI prints answers, pauses, resumes)."""
        self.rescan_every: float | None = None
        """With ``discover``: also rescan this often (poll mode, or no tmux server to listen to)."""
        self._next_rescan: float | None = None

    # -- panes ---------------------------------------------------------------------------------------
    def add_pane(self, pane: PaneInfo | str, *, command: Any = None) -> PaneRunner:
        info = pane if isinstance(pane, PaneInfo) else self.surface.pane_info(pane)
        existing = self.runners.get(info.pane_id)
        if existing is not None and not existing.done:
            return existing
        cfg = self.config if command is None else _replace(self.config, command=command)
        runner = self._make_runner(info, cfg)
        self.runners[info.pane_id] = runner
        runner.start()
        self.surface.watch([info.pane_id], self._enqueue)
        if self.on_run_started:
            self.on_run_started(runner)
        return runner

    def _make_runner(self, info: PaneInfo, cfg: RunConfig) -> PaneRunner:
        """The runner for a newly added pane (subclasses supervise panes with their own runner)."""
        return PaneRunner(self.surface, info, self.settings, cfg, socket=self.socket, on_change=self._journaled)

    def _journaled(self, runner: PaneRunner, event: Event) -> None:
        self.feeder.poke()
        if self.on_journal is not None:
            with contextlib.suppress(Exception):
                self.on_journal(runner, event)

    def _enqueue(self, ev: OutputEvent) -> None:
        self.events.put(ev)

    @property
    def active(self) -> list[PaneRunner]:
        return [r for r in self.runners.values() if not r.done]

    # -- loop ----------------------------------------------------------------------------------------
    def run(self, *, until: Callable[[], bool] | None = None, timeout: float | None = None) -> None:
        """Supervise until ``until()`` is true, every run has ended (without ``discover``), the
        timeout passes, or :meth:`stop` is called."""
        self.feeder.start()
        end_at = None if timeout is None else _now() + timeout
        try:
            while not self._stopping.is_set():
                now = _now()
                for r in list(self.runners.values()):
                    r.tick(now)
                self._reap()
                if until is not None and until():
                    break
                if self.discover is None and not self.active:
                    break
                if end_at is not None and now >= end_at:
                    break
                if (self.discover is not None and self.rescan_every
                        and (self._next_rescan is None or now >= self._next_rescan)):
                        self.scan()
                        self._next_rescan = now + self.rescan_every
                deadlines = [d for r in self.runners.values() if (d := r.next_deadline()) is not None]
                if end_at is not None:
                    deadlines.append(end_at)
                if self._next_rescan is not None and self.rescan_every:
                    deadlines.append(self._next_rescan)
                # Capped so Ctrl-C/SIGTERM are handled even if the kernel delivers the signal to
                # another thread (Python runs handlers only when the main thread wakes up).
                wait = min(max(0.0, min(deadlines) - _now()) if deadlines else MAX_IDLE_WAIT_S, MAX_IDLE_WAIT_S)
                try:
                    ev = self.events.get(timeout=wait)
                except queue.Empty:
                    continue
                self._dispatch(ev)
                # drain what else is queued without sleeping
                while True:
                    try:
                        ev = self.events.get_nowait()
                    except queue.Empty:
                        break
                    self._dispatch(ev)
                if self._rescan:
                    self._rescan = False
                    self.scan()
        finally:
            pass

    def _dispatch(self, ev: OutputEvent | None) -> None:
        if ev is None:
            return
        if ev.kind in ("panes_changed", "server_gone"):
            self._rescan = self.discover is not None
            alive = getattr(self.surface, "server_alive", lambda: True)
            if ev.kind == "server_gone" and self.discover is not None and not self.rescan_every and not alive():
                self.rescan_every = 10.0  # nothing to listen to until a server is back
            self._check_all(ev)
            return
        runner = self.runners.get(ev.pane_id or "")
        if runner is not None and not runner.done:
            runner.on_event(ev)
        elif self.discover is not None and ev.pane_id and ev.kind == "output":
            # output from a pane we do not supervise: maybe an agent was just started there
            last = self._ignored.get(ev.pane_id, 0.0)
            if ev.at - last > 5.0:
                self._ignored[ev.pane_id] = ev.at
                self._rescan = True

    def _check_all(self, ev: OutputEvent) -> None:
        """After a window/session change or a lost control client, look at every pane we watch."""
        for r in self.active:
            r.on_event(OutputEvent("pane_gone", r.pane_id, ev.at))
        if ev.kind == "server_gone":
            alive = [r for r in self.active]
            if alive:
                with contextlib.suppress(SurfaceError):
                    self.surface.watch([r.pane_id for r in alive], self._enqueue)

    def scan(self) -> list[PaneRunner]:
        """Start runs for panes ``discover`` finds that are not supervised yet."""
        if self.discover is None:
            return []
        started = []
        try:
            panes = list(self.discover())
        except SurfaceError:
            return []
        for info in panes:
            r = self.runners.get(info.pane_id)
            if r is not None and (not r.done or not self.renew_finished):
                continue
            if info.dead:
                continue
            started.append(self.add_pane(info))
        return started

    def _reap(self) -> None:
        for _pane_id, r in list(self.runners.items()):
            if r.done and r not in self.ended:
                self.ended.append(r)
                if self.on_run_ended:
                    self.on_run_ended(r)

    def stop(self) -> None:
        self._stopping.set()
        self.events.put(None)

    def close(self, *, final_sync: bool = True) -> None:
        """End every active run as stopped (or escalated), close the surface, sync the warehouse."""
        for r in self.active:
            r.stop()
        self._reap()
        with contextlib.suppress(Exception):
            self.surface.close()
        self.feeder.stop(final_sync=final_sync)


def _replace(cfg: RunConfig, **changes: Any) -> RunConfig:
    from dataclasses import replace

    return replace(cfg, **changes)


def journal_dir_runs(settings: Settings) -> list[Path]:
    return sorted(settings.journals_dir.glob("*.jsonl"))
