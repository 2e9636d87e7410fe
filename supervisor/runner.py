"""The live supervision loop: observe -> classify -> decide -> act -> check -> record.

One :class:`PaneRunner` supervises one pane as one run with its own journal. A
:class:`Supervisor` drives any number of them: surface reader threads put output events on a
queue, the loop blocks on that queue and hands each pane's due work (look at the screen,
decide, act) to a worker pool, so one pane's settle delay, capture, keys, exit-status wait or
LLM judge call never delays another pane's prompt. The only timers are the ones a pending
decision needs (settle after output, answer confirmation, a dismissing prompt's grace, stall
check, finish re-check, the end of a cooldown or of a human's turn, a task's paste/submit). A
quiet pane costs nothing.

Order of operations, always: journal (fsynced) first, then act. The runner changes its state
only by journaling events and folding them (:class:`supervisor.runstate.RunFold`), so a
supervisor restarted on the journal continues the same run with the same state. The warehouse
is fed from a child process (:class:`~supervisor.feeder.WarehouseFeeder`) and may be locked by a notebook;
supervision never waits for it.

At most one answer per prompt instance: a live prompt is matched to an instance (see
:mod:`supervisor.runstate`); once answered, the instance is never answered again while it waits
to go (``answer_skipped`` says why); still live after ``confirm_timeout_s`` means the answer did
not take: one retry after the cooldown, then the strike guard escalates. A prompt that is not
the live bottom of the screen (output follows it, or, for line prompts, the cursor has moved on)
gets no keys. Keys are never sent when no live prompt is on screen.

A run lasts as long as the agent: each finished turn is a ``turn_finished`` event; a run given a
task (``--task``, ``supervisor runs task``) types it once the agent is ready and ends when its
tasks are done (``--turns N`` ends after N turns; ``--exit-on-finish`` quits the agent at the end).

Human at the keyboard (the heuristic, documented): tmux does not tell us who typed a key, so
we attribute screen changes. Output within ``confirm_timeout_s`` of keys we sent is ours.
Otherwise, a changed screen while a human's tmux client on that session shows activity
(``client_activity``, whole seconds), a prompt we saw (and did not answer) that disappears, or
a changed input box while the agent sits idle is the human. Only keys a human sends while a
prompt is live (or that answer it) keep our hands off prompts for ``policy.timing.human_quiet_s``
(said in the pane with display-message); typing a message into the agent's input box does not,
though it holds back the end of a turn and the typing of a queued task. A paused prompt or
blocker that goes away is a ``resume``, with who or what ended it, how long it waited, and
what the human selected when the screen shows it.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import re
import selectors
import socket as socketlib
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from supervisor import __version__
from supervisor.agents import agent_from_argv, agent_of_pane, exit_keys, is_shell
from supervisor.control import RunControl, control_dir
from supervisor.errors import JournalWriteError, PaneGone, SurfaceError, UsageError
from supervisor.feeder import WarehouseFeeder, block_signals
from supervisor.ids import new_id
from supervisor.journal import Journal, iter_events
from supervisor.models import Action, Decision, Event, Friction, FrictionKind, Observation, Prompt, Screen
from supervisor.policy import Policy
from supervisor.redact import clip
from supervisor.runstate import DISMISS_GRACE_S, RunFold, new_instance_id, prompt_face
from supervisor.settings import Settings, user_name
from supervisor.surfaces.base import OutputEvent, PaneInfo, RawScreen, Surface
from supervisor.suspension import Suspension

log = logging.getLogger(__name__)

Outcome = Literal["finished", "exited", "stopped", "escalated", "lost"]
"""How a run ended: its task (or its turns) finished; the agent exited (or its pane was
closed); the supervisor was stopped; stopped while paused on an escalation; the tmux server
went away (what happened to the agent is unknown)."""

BUSY_JOURNAL_EVERY_S = 5.0
"""While a pane stays busy and keeps printing, journal its observation at most this often."""
MAX_IDLE_WAIT_S = 10.0
"""The loop wakes at least this often (a few microseconds of CPU) so signals are never missed."""
DRAIN_BUDGET_S = 0.05
"""After one event, the loop handles what else is queued for at most this long before it serves the
runs' deadlines again (busy panes can fill the queue as fast as it drains)."""
MAX_SETTLE_DELAY_S = 1.0
"""Under continuous output (a spinner), observe at least this often anyway."""
MAX_ANSWERS_PER_INSTANCE = 2
"""An answer and at most one retry per prompt instance; then it is escalated."""
TASK_READY_S = 0.5
"""The agent must have sat idle this long before a task is typed (its input box is up)."""
TASK_SUBMIT_GAP_S = 0.3
"""Between pasting a task and pressing Enter (Codex takes a fast Enter as part of the paste)."""
LINE_STYLES = ("letter_enter", "text")
"""Prompts answered on their own line: live only while the cursor sits on it."""
KEYS_ARRIVE_S = 0.15
"""How long after tmux confirmed our keys an empty terminal input queue is not yet taken as "read"
(tmux writes them into the pane's terminal asynchronously)."""
READ_WAIT_S = 0.5
"""How long the pane's program has to read an answer from its terminal. A program showing its own
live prompt reads keys within milliseconds; keys still unread after this are discarded (they would
answer whatever it draws next: typeahead), and nothing more is typed until it reads again."""


class DrawingPace:
    """How the pane's program goes on drawing once it has drawn a row that closes a dialog frame,
    measured from its output events: the gaps between such output (``OutputEvent.hint``) and more
    output of the same drawing (closer than ``policy.timing.draw_gap_ms``): a status line drawn under
    a dialog, the rest of a frame written in pieces. A dialog drawn whole is answered once no output
    has followed it for :meth:`quiet_s`, a few times the longest such gap seen lately, so that the
    rest of a drawing still arriving is never mistaken for its end."""

    def __init__(self, draw_gap_s: float) -> None:
        self.draw_gap_s = draw_gap_s
        self.gaps: collections.deque[float] = collections.deque(maxlen=32)

    def add(self, gap: float, *, after_frame_end: bool) -> None:
        """The gap between two output events; ``after_frame_end``: the first one may have closed a frame."""
        if after_frame_end and 0.0 <= gap < self.draw_gap_s:
            self.gaps.append(gap)

    def quiet_s(self, floor_s: float, factor: float, ceiling_s: float) -> float:
        """The quiet window: ``factor`` times the 90th percentile of the gaps seen lately, at least
        ``floor_s``, at most ``ceiling_s`` (the settle time)."""
        if not self.gaps:
            return min(floor_s, ceiling_s)
        ordered = sorted(self.gaps)
        typical = ordered[int(0.9 * (len(ordered) - 1))]
        return min(ceiling_s, max(floor_s, factor * typical))


_CANONICAL: dict[int, tuple[Policy, dict[str, Any], str]] = {}


def _policy_facts(policy: Policy) -> tuple[dict[str, Any], str]:
    """``policy.canonical()`` and its id, once per policy object: every run journals its policy's content
    at its start, and computing either costs tens of milliseconds for the baseline (a supervisor attaching
    200 panes computed them 200 times). Policies are not mutated once in use (``classify`` memoizes its
    compiled rules per policy object the same way)."""
    hit = _CANONICAL.get(id(policy))
    if hit is None or hit[0] is not policy:
        from supervisor.policy import policy_id as id_of

        if len(_CANONICAL) > 32:
            _CANONICAL.clear()
        hit = _CANONICAL[id(policy)] = (policy, policy.canonical(), id_of(policy))
    return hit[1], hit[2]


def _canonical(policy: Policy) -> dict[str, Any]:
    return _policy_facts(policy)[0]


def runs_us(info: PaneInfo) -> bool:
    """Whether this process is the pane's process or one of its descendants."""
    import psutil

    if not info.pid:
        return False
    try:
        me = psutil.Process(os.getpid())
        return info.pid == me.pid or any(p.pid == info.pid for p in me.parents())
    except (psutil.Error, OSError):
        return False


@dataclass
class RunConfig:
    """How to supervise: the acting policy, shadow policies, and lifecycle switches."""

    policy: Policy
    shadows: list[Policy] = field(default_factory=list)
    exit_on_finish: bool = False
    """Quit the agent (its exit keys) when the run is finished."""
    task: str | None = None
    """Type this into the agent once it is ready; the run ends when its tasks are finished."""
    turns: int | None = None
    """End the run after this many finished turns (None: the run lasts as long as the agent)."""
    scrollback: int = 0
    command: list[str] | str | None = None
    """The command ``run`` started (journaled in ``run_started``)."""
    settle_ms: int | None = None
    """Override of ``policy.timing.settle_ms`` (benchmarks)."""


def _now() -> float:
    return time.time()


# -- where a prompt sits, and whether it is live ------------------------------------------------------
def _head(text: str, n: int = 24) -> str:
    return " ".join(text.split())[:n]


def prompt_rows(screen: Screen, prompt: Prompt) -> tuple[int, int] | None:
    """The rows (0-based, in ``screen.text``) the prompt occupies: the classifier's placement
    (``Prompt.first_row``/``last_row``) when it gives one, else found by its last option's label
    (menus) or its question (line prompts), searching from the bottom."""
    first, last = getattr(prompt, "first_row", None), getattr(prompt, "last_row", None)
    if isinstance(first, int) and isinstance(last, int):
        return first, last
    lines = [" ".join(ln.split()) for ln in screen.text.split("\n")]
    q = _head(prompt.question)

    def find(needle: str, below: int) -> int | None:
        if not needle:
            return None
        for i in range(below, -1, -1):
            if needle in lines[i]:
                return i
        return None

    bottom = len(lines) - 1
    if prompt.input_style in LINE_STYLES or not prompt.options:
        row = find(q, bottom)
        return (row, row) if row is not None else None
    last_row = find(_head(prompt.options[-1].label, 20), bottom)
    if last_row is None:
        return None
    first_row = find(q, last_row)
    return (first_row if first_row is not None else max(0, last_row - len(prompt.options)), last_row)


def prompt_is_live(screen: Screen, prompt: Prompt, rows: tuple[int, int] | None,
                   below_state: Callable[[str], str] | None = None) -> tuple[bool, str]:
    """Whether the prompt is the live bottom of the screen (and why not), checked by the runner
    whatever the classifier said: a line prompt is live only while nothing follows it and the
    cursor has not moved past it; a menu is not live when what follows it shows the agent at
    work (``below_state``: the classifier's state of the rows below; a frame, footer or status
    line below a dialog is fine: that is the agent's own frame)."""
    if rows is None:
        return True, ""  # placement unknown: the classifier's word stands
    first, last = rows
    lines = screen.text.split("\n")
    below = [ln for ln in lines[last + 1:] if ln.strip()]
    if prompt.input_style in LINE_STYLES:
        if below:
            return False, "output follows the prompt"
        # A program that reads its answer under its question (open-interpreter prints a blank row, then
        # waits with the cursor on the next) is still waiting while only blank rows follow and the
        # cursor sits within two rows of the question; further down, something was typed or printed.
        if screen.cursor_y is not None and screen.cursor_y > last + 2:
            return False, "the cursor has moved past the prompt"
        return True, ""
    content = [ln for ln in below if not _frame_row(ln)]
    if len(content) > MAX_CONTENT_BELOW:
        return False, f"{len(content)} rows of output follow the prompt"
    if below and below_state is not None and below_state("\n".join(lines[last + 1:])) == "busy":
        return False, "the agent is at work below the prompt"
    return True, ""


_FRAME_CHARS = frozenset("│┃║╭╮╰╯└┘┌┐├┤┬┴┼─━═╌▔▁▏▕")
MAX_CONTENT_BELOW = 4
"""Rows of content a dialog may have under it and stay live: its own footer lines (hermes-agent draws
the running command, a key hint, a status line and its composer under its dialog)."""
"""Rows (not frame or blank) a live dialog may have below its last option: its footer hints and
the agent's status line. Real agents' dialogs show at most two (measured on the tuning captures);
more is output that followed the prompt, which is then history."""


def _frame_row(row: str) -> bool:
    """A row that is part of a box (a border, an empty box row): frame, not content."""
    t = row.strip()
    return not t or t[0] in _FRAME_CHARS


class PaneRunner:
    """Supervises one pane as one run. Not thread-safe for its work: the :class:`Supervisor` runs at
    most one :meth:`tick` of a runner at a time; :meth:`on_event` may come from another thread."""

    def __init__(self, surface: Surface, pane: PaneInfo, settings: Settings, config: RunConfig, *,
                 run_id: str | None = None, on_change: Callable[[PaneRunner, Event], None] | None = None,
                 socket: str | None = None, resume: bool = False) -> None:
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
        self.policy_id = _policy_facts(config.policy)[1]
        self.socket = socket
        self.run_id = run_id or new_id("run_")
        self.control = RunControl(settings, self.run_id)
        if not self.control.held:
            self.control.close()
            raise UsageError(f"run {self.run_id} is already supervised by another process",
                             "see `supervisor status`; stop that supervisor first")
        path = settings.journal_path(self.run_id)
        self.resuming = resume and path.exists()
        earlier = list(iter_events(path)) if self.resuming else []
        self.journal = Journal(path, self.run_id)
        self.suspension = Suspension(control_dir(settings, self.run_id))
        """Set while the journal cannot be written: the pane is not acted on (supervisor.suspension)."""
        self.on_notice: Callable[[PaneRunner, str], None] | None = None
        """Told what the human must know that no journal event carries (a suspension, its end)."""
        self._offpane: Any = None
        """The NotificationHub for escalations, made at the first one (its webhook has a thread)."""
        self._on_change = on_change
        timing = self.policy.timing
        self.fold = RunFold.from_events(earlier, self.run_id, recheck_s=timing.recheck_s)
        self.shadows = [_Shadow(p, self) for p in config.shadows]
        settle = config.settle_ms if config.settle_ms is not None else timing.settle_ms
        self.settle_s = settle / 1000.0
        self.outcome: Outcome | None = None
        self.exit_code: int | None = None
        self.suspended: str | None = None
        """Why supervision was suspended (the supervisor got a signal): the run has not ended."""
        self.last_obs: Observation | None = None
        self.last_screen: Screen | None = None
        self.last_hash: str | None = None
        self.last_live: dict[str, Any] | None = None
        self._sched = threading.Lock()
        self._last_journaled_at = 0.0
        self._observe_at: float | None = None
        self._first_unobserved: float | None = None
        self._pace = DrawingPace(timing.draw_gap_ms / 1000.0)
        self._hinted_at = 0.0
        self._keys_going_at = 0.0
        """When keys last started on their way to the pane (output after it is the agent taking them)."""
        """When output last drew a row that may close a dialog frame (``OutputEvent.hint``)."""
        self._deferring = False
        """Inside one look at the screen: journal lines are fsynced together (see :meth:`_append`)."""
        self._decided_version: int | None = None
        """The pane's output count the screen last decided on reflects (``RawScreen.version``)."""
        self._frame_agent: str | None = None
        self._timer_at: float | None = None
        self._reason = "start"
        self._requests_due = False
        self._our_keys_at = 0.0
        self._keys_settled = True
        """Our last keys were read and a screen since shows no prompt: they answered the prompt they
        were for (it went away), so a prompt drawn after this cannot have been answered by them."""
        self._last_full_obs_at = 0.0
        self._stall_recorded_at: float | None = None
        self._end_extra: dict[str, Any] = {}
        self._last_output_at = self.fold.state.last_output_at or _now()
        self._idle_since: float | None = None
        self._holding_shown = False
        self._paused_prompt: Prompt | None = None
        self._paused_highlight: int | None = None
        """The escalated prompt as last seen, and its highlight when escalated (what a human chose)."""
        self._pause_absent_since: float | None = None
        self._task: _TaskDelivery | None = None
        self._not_live_why = ""
        self._not_reading: dict[str, Any] | None = None
        """Set when the agent did not read our last answer from its terminal (the keys were
        discarded): nothing more is typed until the screen shows it reading again."""
        self._typeahead_flag: dict[str, Any] | None = None
        self._recheck_at: float | None = None
        """When to look again at a prompt whose program was not waiting for input (backing off)."""
        self._busy_checks = 0
        self._unread_since: dict[str, Any] | None = None
        """When input typed earlier (not ours) was first seen unread under this prompt."""
        self._history_noted: set[str] = set()
        """Signatures of prompts whose escalation was skipped as history (noted once each)."""
        known = agent_from_argv(config.command, self.policy)
        if known == "unknown":
            known = agent_of_pane(pane, self.policy)
        self.known_agent = "unknown" if is_shell(known) else known
        """The agent the runner knows it supervises (the command it launched, the pane's process):
        filled into observations whose screen does not name it."""
        self.observations = 0
        self.decisions: list[Decision] = []
        from supervisor.judge import PaneJudge, build_judge

        # The optional LLM judge (issue 7); with judge.consult: never it is None and decide runs alone.
        self.judge = PaneJudge(build_judge(self.policy, settings), self.policy)

    @property
    def state(self) -> Any:
        """The run state decide sees (folded from the journal)."""
        return self.fold.state

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        info = self.pane
        if self.resuming:
            self._append("note", {"type": "supervision_resumed", "pane_id": self.pane_id, "pid": os.getpid(),
                                  "host": socketlib.gethostname(), "socket": self.socket,
                                  "policy_id": self.policy_id})
            self._reconcile_unknown()
        else:
            cmd = self.config.command
            policies = {self.policy_id: _canonical(self.policy)}
            for sh in self.shadows:
                policies[sh.policy_id] = _canonical(sh.policy)
            self._append("run_started", {
                "run_id": self.run_id, "command": cmd if cmd is not None else info.current_command,
                "pane_id": self.pane_id, "pane_pid": info.pid, "session": info.session, "socket": self.socket,
                "policy_id": self.policy_id, "policy_name": self.policy.name,
                "shadow_policy_ids": [sh.policy_id for sh in self.shadows], "policies": policies,
                "agent": self.known_agent, "cwd": info.current_path or os.getcwd(), "task": self.config.task,
                "turns": self.config.turns, "exit_on_finish": self.config.exit_on_finish,
                "host": socketlib.gethostname(), "pid": os.getpid(), "user": user_name(), "package_version": __version__,
            })
            if self.config.task:
                self.queue_task(self.config.task, source="run --task")
        self._watch_frames(self.known_agent)
        # Look once right away: the pane may already show a prompt; requests may be waiting.
        self._observe_at = _now()
        self._requests_due = True

    def end(self, outcome: Outcome, *, exit_code: int | None = None, reason: str = "") -> None:
        if self.done:
            return
        self.outcome = outcome
        self.exit_code = exit_code
        if self._offpane is not None:  # bounded: a dead webhook delays the end by close_timeout_s at most
            self._offpane.close()
        rs = self.state
        try:
            self._append("run_ended", {"outcome": outcome, "exit_code": exit_code, "pane_id": self.pane_id,
                                       "reason": reason, "paused": rs.paused, "pause_reason": rs.pause_reason,
                                       "interventions": rs.interventions, "stalls": rs.stalls,
                                       "turns": self.fold.turn - 1}
                         | self._end_extra)
        except JournalWriteError as exc:  # the run ends all the same (the agent is gone, or we stop)
            log.warning("run %s ended (%s) but its end could not be journaled: %s", self.run_id, outcome, exc.why)
            self._tell(f"run {self.run_id} ended ({outcome}); its end could not be journaled: {exc.why}")
        self.journal.close()
        self.suspension.close()
        self.control.close()

    def stop(self) -> None:
        """End the run because the supervisor stops: ``escalated`` if paused."""
        self.end("escalated" if self.state.paused else "stopped", reason="supervisor stopped")

    def suspend(self, reason: str) -> None:
        """Stop supervising without ending the run (the supervisor process got SIGTERM, SIGINT or
        SIGHUP): journaled as a ``supervision_suspended`` note; the agent keeps running, and
        ``supervisor runs resume`` or ``attach`` on its pane continue the same run with its state.
        ``supervisor runs stop`` is what ends a run."""
        if self.done:
            return
        self.suspended = reason
        if self._offpane is not None:
            self._offpane.close()
        self._append("note", {"type": "supervision_suspended", "reason": reason, "pane_id": self.pane_id,
                              "paused": self.state.paused, "pause_reason": self.state.pause_reason})
        self.journal.close()
        self.control.close()

    @property
    def done(self) -> bool:
        return self.outcome is not None or self.suspended is not None

    # -- events (any thread) ---------------------------------------------------------------------------
    def on_event(self, ev: OutputEvent) -> None:
        if self.done:
            return
        now = ev.at or _now()
        with self._sched:
            if ev.kind == "output":
                # (output that follows our keys is the agent taking them, not the rest of a drawing)
                self._pace.add(now - self._last_output_at, after_frame_end=self._hinted_at == self._last_output_at
                               and self._keys_going_at < self._last_output_at)
                self._last_output_at = now
                self._stall_recorded_at = None
                if self._first_unobserved is None:
                    self._first_unobserved = now
                if ev.hint:
                    self._hinted_at = now
                cap = self._first_unobserved + max(MAX_SETTLE_DELAY_S, 4 * self.settle_s)
                # output that may have closed a dialog's frame (or the rest of that drawing): read the
                # screen after the quiet window; any other output: after the settle time
                early = ev.hint or now - self._hinted_at < self._pace.draw_gap_s
                self._observe_at = min(now + (self.quiet_s() if early else self.settle_s), cap)
                self._reason = "output"
            elif ev.kind == "tick":
                self._observe_at = now
                self._reason = "poll"
            elif ev.kind in ("pane_dead", "pane_gone"):
                self._observe_at = now
                self._reason = ev.kind
            elif ev.kind == "requests":
                self._requests_due = True

    def next_deadline(self) -> float | None:
        if self.done:
            return None
        with self._sched:
            if self.suspension.active:  # only the next attempt to write, or the agent's exit
                gone = self._observe_at is not None and self._reason in ("pane_dead", "pane_gone")
                return min(self.suspension.retry_at, self._observe_at) if gone and self._observe_at else \
                    self.suspension.retry_at
            if self._requests_due:
                return 0.0  # due at once
            times = [t for t in (self._observe_at, self._timer_at) if t is not None]
        return min(times) if times else None

    def tick(self, now: float) -> None:
        """Run whatever is due at ``now``; while the journal cannot be written, only try to write
        again (and notice the agent's exit)."""
        if self.done:
            return
        if self.suspension.active:
            self._retry_suspended(now)
            return
        try:
            self._tick(now)
        except JournalWriteError as exc:
            self._suspend(exc, now)

    def _suspend(self, exc: JournalWriteError, now: float) -> None:
        """Stop acting on this pane: what it would do could not be recorded (journal before act)."""
        self.last_hash = None  # once back, read the screen afresh: what was shown meanwhile is judged then
        if self.suspension.begin(exc.why, str(self.journal.path), _now()):
            log.warning("supervision of %s suspended: %s", self.pane_id, exc.message)
            self._tell(f"supervision of pane {self.pane_id} SUSPENDED: cannot write its journal ({exc.why}); "
                       "nothing is answered there until it can; retrying")
        if self.suspension.notice_due(now):
            self._flash(f"paneward: supervision of this pane is SUSPENDED: cannot write the journal ({exc.why}). "
                        "Nothing is answered until it can; free space, it resumes by itself.")

    def _retry_suspended(self, now: float) -> None:
        with self._sched:
            gone = self._reason in ("pane_dead", "pane_gone") and self._observe_at is not None
        if now < self.suspension.retry_at and not gone:
            return
        dead = False
        try:
            dead = self.surface.pane_info(self.pane_id).dead
        except PaneGone:
            dead = True
        except SurfaceError:
            pass
        since, why = self.suspension.since or _now(), self.suspension.why
        try:
            self._append("note", {"type": "journal_writable_again", "pane_id": self.pane_id, "suspended_at": since,
                                  "suspended_s": round(_now() - since, 3), "why": why})
        except JournalWriteError as exc:
            if dead:  # the agent is gone: the run ends, journaled or not, and the supervisor goes on
                self.end("exited", reason=f"the pane's program exited while its journal could not be written: "
                                          f"{exc.why}")
                return
            self._suspend(exc, now)
            return
        lasted = self.suspension.end()
        log.warning("supervision of %s resumed after %.1f s", self.pane_id, lasted)
        self._tell(f"supervision of pane {self.pane_id} resumed (the journal can be written again after {lasted:.0f}s)")
        self._flash("paneward: supervision of this pane resumed")
        with self._sched:
            self._observe_at = now
            self._timer_at = now  # a forced look: the screen may hold what arrived meanwhile
            self._requests_due = True

    def _flash(self, msg: str) -> None:
        """Show a message on the pane without journaling it (the journal may be what failed)."""
        try:
            self.surface.display_message(self.pane_id, msg[:400], ms=max(self.policy.pause.display_ms, 10_000))
        except SurfaceError as exc:
            log.info("cannot show a message on %s: %s", self.pane_id, exc.one_line())

    def _tell(self, text: str) -> None:
        if self.on_notice is not None:
            try:
                self.on_notice(self, text)
            except Exception as exc:  # noqa: BLE001 - a printer must not stop supervision
                log.warning("notice callback failed: %s", exc)

    def _tick(self, now: float) -> None:
        with self._sched:
            requests, self._requests_due = self._requests_due, False
        if requests:
            self._handle_requests(now)
            if self.done:
                return
        with self._sched:
            due_observe = self._observe_at is not None and self._observe_at <= now
            due_timer = self._timer_at is not None and self._timer_at <= now
            if due_observe or due_timer:
                trigger = self._reason if due_observe else "timer"
                self._observe_at = None
                if due_timer:
                    self._timer_at = None
        if (due_observe or due_timer) and not self.done:
            self.observe(now, trigger=trigger, force=due_timer)

    # -- one observation ---------------------------------------------------------------------------
    def observe(self, now: float, *, trigger: str = "output", force: bool = False) -> Decision | None:
        """Look at the screen once: classify, decide, act, record (its journal lines fsynced together,
        before any act and at the end at the latest)."""
        self._deferring = True
        try:
            return self._observe(now, trigger=trigger, force=force)
        finally:
            self._deferring = False
            if not self.journal.closed:
                self.journal.sync()

    def _observe(self, now: float, *, trigger: str = "output", force: bool = False) -> Decision | None:
        try:
            raw = self.surface.capture(self.pane_id, scrollback=self.config.scrollback)
        except PaneGone as exc:
            server = "server is not running" in exc.message
            self.end("lost" if server else "exited",
                     reason=("the tmux server went away" if server else "pane gone") + f": {exc.message}")
            return None
        except SurfaceError as exc:
            self._append("note", {"error": exc.one_line(), "pane_id": self.pane_id})
            with self._sched:
                self._timer_at = now + max(1.0, self.policy.timing.recheck_s)
            return None
        self.pane = raw.info
        screen, obs = self._read(raw)
        # a look for output waits out the settle time (or a whole dialog's quiet window); so does every
        # look that finds a prompt, whatever made it: the first look at start, a timer, a re-read, a poll,
        # a session or window change anywhere on the server (each makes every pane be looked at) may fall
        # just after a dialog began to be drawn, and must not answer it half drawn
        settle_applies = (trigger == "output" and not force) or obs.state == "asking"
        if settle_applies and not raw.info.dead and self._too_early(now, obs, screen, raw):
            if force:
                # a forced look (a re-check of a prompt left unanswered) put off to the end of the settle
                # time stays forced: the screen it finds is the same one, and an unforced look would
                # pass over it (the re-check lost, the prompt left unanswered)
                with self._sched:
                    when = self._observe_at
                    if when is not None:
                        self._timer_at = when if self._timer_at is None else min(self._timer_at, when)
                self._recheck_at = when
            return None
        with self._sched:
            self._first_unobserved = None
        self._decided_version = raw.version
        self._watch_frames(obs.agent if obs.agent != "unknown" else self.known_agent)
        shash = screen.screen_hash
        if not force and shash == self.last_hash and not raw.info.dead:
            self._schedule(now)  # (a re-check still due stays among its times)
            return None
        self._recheck_at = None
        if shash != self.last_hash:
            self._busy_checks = 0
        if trigger == "poll" and shash != self.last_hash:
            self._last_output_at = now  # polling: a changed screen is the only sign of output
            self._stall_recorded_at = None
        if raw.info.dead and obs.state != "exited":
            obs = obs.model_copy(update={"state": "exited"})
        classified_agent = obs.agent
        if obs.agent == "unknown" and self.known_agent != "unknown":
            obs = obs.model_copy(update={"agent": self.known_agent})
        prev_obs, prev_screen = self.last_obs, self.last_screen
        busy_repeat = (obs.state == "busy" and prev_obs is not None and prev_obs.state == "busy"
                       and trigger in ("output", "poll") and now - self._last_journaled_at < BUSY_JOURNAL_EVERY_S
                       and self._task is None)
        self.last_obs, self.last_screen, self.last_hash = obs, screen, shash
        self.observations += 1
        if obs.state == "idle" and shows_input(obs):
            self._idle_since = self._idle_since or now
        else:
            self._idle_since = None
        if busy_repeat:
            self._schedule(now)
            return None

        live = self._live_prompt(obs, screen, raw.info)
        new_instance = live is not None and live["instance_id"] not in self.fold.instances
        if self._not_reading is not None and screen.screen_hash != self._not_reading["screen_hash"] and (
                (live is not None and live["signature"] != self._not_reading["signature"])
                or (obs.state == "idle" and shows_input(obs))):
            self._not_reading = None  # a new prompt, or its input box: the agent reads again
        self._typeahead_flag = None
        if (live is None and obs.state in ("busy", "idle") and self._not_reading is None
                and self._our_keys_at and not self._keys_settled):
            self._keys_settled = True  # read, and the prompt they answered is gone
        if (new_instance and obs.prompt is not None and obs.prompt.risk.level == "dangerous"
                and not self._keys_settled
                and self._our_keys_at and now - self._our_keys_at < self.policy.timing.confirm_timeout_s):
            self._typeahead_flag = {"instance_id": live["instance_id"] if live else None,
                                    "since_keys_s": round(now - self._our_keys_at, 3)}
        human = self._notice_human(now, obs, prev_obs, screen, prev_screen)
        new_human_stretch = human is not None and now >= self.fold.human_until
        obs_id = new_id()
        obs.observation_id = obs_id
        obs.policy_id = obs.policy_id or self.policy_id
        self._append("observation", {
            "observation": obs.model_dump(mode="json"), "pane_id": self.pane_id, "trigger": trigger, "now": now,
            "last_output_at": self._last_output_at, "screen": _screen_fields(screen),
            "live_prompt": live, "human": human,
        }, event_id=obs_id)
        self.last_live = live
        self._last_journaled_at = now
        if human is not None and new_human_stretch:
            self._friction("human_keystrokes", human["what"], where=human["where"])
        if live is not None and new_instance and obs.prompt is not None:
            again = [i for i in self.fold.instances.values() if i.closed and i.answers
                     and i.signature == live["signature"]]
            if again:
                self._friction("repeated_prompt", f"the prompt came back after we answered it: "
                               f"{clip(obs.prompt.question, 80)!r}", instance_id=live["instance_id"])
        self._maybe_resume(now, obs, screen)
        self._check_instances(now)
        self._last_full_obs_at = now

        decision = self._decide_on(obs, screen, classified_agent)
        decision.decision_id = new_id()
        decision.trigger_id = obs_id
        self._append("decision", {"decision": decision.model_dump(mode="json"), "pane_id": self.pane_id,
                                  "now": now}, event_id=decision.decision_id)
        self.decisions.append(decision)
        self._shadow(screen, now, raw.info, human)
        self._act(decision, obs, raw, now, live)
        if not self.done:
            self._task_step(now, obs, screen)
            self._schedule(now)
        return decision

    def _decide_on(self, obs: Observation, screen: Screen, classified_agent: str) -> Decision:
        if self.judge.judge is None:
            decision = self._decide(obs, self.state, self.policy, policy_id=self.policy_id)
            if classified_agent != obs.agent and self._agent_keys_rule(decision):
                # Fixed keys written for one agent's screen: only when the screen itself says it
                # is that agent. Approve/decline keys come from the prompt's input style, which
                # classify read off the screen, so the filled-in agent is safe there.
                decision = self._decide(obs.model_copy(update={"agent": classified_agent}), self.state,
                                        self.policy, policy_id=self.policy_id)
            return decision
        # rules first, the judge where they cannot decide, the safety rules over it
        decision, judge_call = self.judge.decide(obs, screen, self.state, policy_id=self.policy_id)
        if judge_call is not None:
            self._append("judge_call", judge_call.model_dump(mode="json"))
        return decision

    def _agent_keys_rule(self, decision: Decision) -> bool:
        """Whether an answer came from an agent-scoped rule that sends fixed keys."""
        if decision.kind != "answer" or decision.rule is None:
            return False
        rule = next((r for r in self.policy.answers.rules if r.name == decision.rule), None)
        return rule is not None and rule.then == "keys" and rule.when.agents is not None

    def _live_prompt(self, obs: Observation, screen: Screen, info: PaneInfo,
                     fold: RunFold | None = None) -> dict[str, Any] | None:
        """The live prompt on this screen and its instance (None when nothing asks, or the prompt is
        history: output follows it, the cursor moved on)."""
        prompt = obs.prompt
        if obs.state != "asking" or prompt is None:
            return None
        rows = prompt_rows(screen, prompt)
        live, why = prompt_is_live(screen, prompt, rows, self._state_of_text)
        base = info.history_size
        first = base + rows[0] if rows else None
        last = base + rows[1] if rows else None
        out: dict[str, Any] = {"signature": prompt.signature, "agent": obs.agent, "kind": prompt.kind,
                               "face": prompt_face(prompt),
                               "first": first, "last": last, "first_row": rows[0] if rows else None,
                               "last_row": rows[1] if rows else None, "history_size": base}
        if not live:
            if fold is None:
                self._not_live_why = why
            return None
        f = fold or self.fold
        out["again"] = again = rows is not None and _copies_above(screen, prompt, rows[0]) > 0
        out["instance_id"] = (f.match_instance(prompt.signature, first=first, again=again, face=out["face"])
                              or new_instance_id())
        return out

    def quiet_s(self) -> float:
        """How long no output must follow a dialog drawn whole before it is answered (see DrawingPace)."""
        t = self.policy.timing
        return self._pace.quiet_s(t.frame_quiet_ms / 1000.0, t.frame_quiet_factor, self.settle_s)

    def _too_early(self, now: float, obs: Observation, screen: Screen, raw: RawScreen) -> bool:
        """A screen read before the pane has been quiet for the settle time is used only when it shows a
        dialog drawn whole by its agent's grammar, live, with no output since the quiet window began and
        none since the capture; otherwise the look is put off (to the end of the quiet window, or of the
        settle time) and nothing is journaled. Under output that never stops, the cap still applies."""
        with self._sched:
            last = self._last_output_at
            first = self._first_unobserved
        settle_due = last + self.settle_s
        if now >= settle_due - 1e-4:
            return False
        if first is not None and now - first >= max(MAX_SETTLE_DELAY_S, 4 * self.settle_s):
            return False  # printing without pause: look anyway
        when = settle_due
        prompt = obs.prompt
        if obs.state == "asking" and prompt is not None and prompt.whole:
            rows = prompt_rows(screen, prompt)
            live, _ = prompt_is_live(screen, prompt, rows, self._state_of_text)
            if live:
                quiet_until = last + self.quiet_s()
                version = getattr(self.surface, "output_version", None)
                drawn_since = raw.version is not None and version is not None and version(self.pane_id) != raw.version
                if now >= quiet_until - 1e-4 and not drawn_since:
                    return False
                when = max(quiet_until, now + 0.0005)
        with self._sched:
            self._observe_at = when if self._observe_at is None else min(self._observe_at, when)
            self._reason = "output"
        return True

    def _watch_frames(self, agent: str) -> None:
        """Ask the surface to mark output that may close a dialog frame of the pane's agent (once per agent)."""
        if agent == self._frame_agent:
            return
        self._frame_agent = agent
        watch = getattr(self.surface, "watch_frame_ends", None)
        if watch is not None:
            from supervisor.classify import frame_end_test

            watch(self.pane_id, frame_end_test(self.policy, agent))

    def _state_of_text(self, text: str) -> str:
        """The classifier's state of a piece of the screen (what follows a prompt)."""
        return self._classify(self._make_screen(text), self.policy).state

    def _read(self, raw: RawScreen) -> tuple[Screen, Observation]:
        """The capture as a Screen and its classification. A screen that asks is read again with the
        rows the agent drew over (the surface's shadow terminal; only then, it costs an emulator)."""
        screen = self._screen(raw)
        obs = self._classify(screen, self.policy)
        overwritten = getattr(self.surface, "overwritten_rows", None)
        if obs.state == "asking" and overwritten is not None:
            rows = overwritten(raw)
            if rows:
                screen = self._screen(raw, rows)
                obs = self._classify(screen, self.policy)
        return screen, obs

    def _screen(self, raw: RawScreen, overwritten: dict[int, str] | None = None) -> Screen:
        i = raw.info
        screen = self._make_screen(raw.text, width=i.width, height=i.height, title=i.title,
                                   current_command=i.current_command, dead=i.dead, cursor_x=i.cursor_x,
                                   cursor_y=i.cursor_y, scrollback=raw.scrollback, overwritten_rows=overwritten)
        screen.cwd = i.current_path  # write/edit risk is judged by where the path lands
        return screen

    # -- bookkeeping -------------------------------------------------------------------------------
    def _shadow(self, screen: Screen, now: float, info: PaneInfo, human: dict[str, Any] | None) -> None:
        for sh in self.shadows:
            try:
                sh.step(screen, now, info, human)
            except Exception as exc:  # noqa: BLE001 - a broken candidate must not stop a live run
                log.warning("shadow policy %s failed: %s", sh.policy_id, exc)
                self._append("note", {"shadow_policy_id": sh.policy_id, "error": f"{type(exc).__name__}: {exc}"})

    def _friction(self, kind: FrictionKind, detail: str, seconds_lost: float | None = None, **extra: Any) -> None:
        self._append("friction", Friction(kind=kind, detail=detail, seconds_lost=seconds_lost).model_dump(mode="json")
                     | {"pane_id": self.pane_id} | extra)

    def _append(self, kind: Any, payload: dict[str, Any], *, event_id: str | None = None) -> Event:
        """Journal an event and fold it. Within one look at the screen the lines are fsynced together:
        before anything is done to the pane (:meth:`_durable`) and at the end of the look at the latest."""
        event = self.journal.append(kind, payload, event_id=event_id, sync=not self._deferring)
        self.fold.apply(event)
        if self._on_change is not None:
            self._on_change(self, event)
        return event

    def _durable(self) -> None:
        """Journal before act: every event written so far is on disk before the pane is acted on."""
        self.journal.sync()

    def _skip(self, decision: Decision, why: str, signature: str | None = None, **extra: Any) -> None:
        self._append("answer_skipped", {"signature": signature or decision.signature, "why": why,
                                        "decision_id": decision.decision_id, "pane_id": self.pane_id} | extra)

    # -- human, resume, confirmation ------------------------------------------------------------------
    def _notice_human(self, now: float, obs: Observation, prev: Observation | None, screen: Screen,
                      prev_screen: Screen | None) -> dict[str, Any] | None:
        if prev is None or prev_screen is None:
            return None
        if now - self._our_keys_at < self.policy.timing.confirm_timeout_s:
            return None
        if any(i.status in ("sending", "pending") for i in self.fold.instances.values()):
            return None
        what, where = None, "input box"
        client_input = getattr(self.surface, "client_input_since", None)
        # Only where a human's keys matter (a prompt staying up, the input box staying up): a new
        # prompt (the agent's output) is not delayed by a tmux round trip.
        if (client_input is not None and prev.state in ("idle", "asking") and obs.state == prev.state
                and screen.text != prev_screen.text  # normalized text: a highlight moving is not typing
                and client_input(self.pane.session, self._last_full_obs_at)):
            what = "input from an attached tmux client"
            where = "prompt" if prev.state == "asking" else "input box"
        elif prev.state == "asking" and prev.prompt is not None and not self.state.paused:
            sig = prev.prompt.signature
            gone = obs.state != "asking" or obs.prompt is None or obs.prompt.signature != sig
            # We answered that very prompt: its going is our doing, however late (on a loaded
            # machine) the next full observation comes after our keys.
            ours = any(i.signature == sig and i.answers > 0 and (i.sent_at or 0) >= self._last_full_obs_at - 0.001
                       for i in self.fold.instances.values())
            if gone and not ours and obs.state != "exited":
                what, where = f"prompt answered without us: {clip(prev.prompt.question, 80)!r}", "prompt"
        elif prev.state == "idle" and obs.state == "idle" and _input_changed(prev_screen, screen):
            what = "typing in the agent's input box"
        if what is None:
            return None
        until = now + self.policy.timing.human_quiet_s
        return {"what": what, "where": where, "until": until, "hands_off_until": until if where == "prompt" else None}

    def _maybe_resume(self, now: float, obs: Observation, screen: Screen) -> None:
        """A pause ends when what it was about is gone: at once on progress (the agent busy, another
        prompt, the agent exiting); after :data:`~supervisor.runstate.DISMISS_GRACE_S` off the screen
        otherwise (a frame caught mid-redraw is not a human's answer)."""
        rs, fold = self.state, self.fold
        if not rs.paused:
            self._paused_prompt, self._pause_absent_since = None, None
            return
        sig = obs.prompt.signature if obs.prompt is not None else None
        if obs.state == "blocked" or (obs.state == "asking" and (sig is None or sig == rs.escalated_signature)):
            self._pause_absent_since = None
            if obs.prompt is not None and sig == rs.escalated_signature:
                self._paused_prompt = obs.prompt
            return
        progress = obs.state in ("busy", "exited") or obs.state == "asking"
        if not progress:
            self._pause_absent_since = self._pause_absent_since or now
            if now - self._pause_absent_since < DISMISS_GRACE_S:
                return
        was_prompt = self._paused_prompt
        if obs.state == "exited":
            by = "agent_exit"
        elif fold.pause_kind == "blocker" and fold.human_until <= (fold.paused_at or 0.0):
            by = "blocker_cleared"
        else:
            by = "human"
        selected, keys = ((None, []) if was_prompt is None or by != "human"
                          else _infer_selection(was_prompt, screen, self._paused_highlight))
        gone_at = self._pause_absent_since or now  # when it went (a resume after the grace is journaled late)
        self._append("resume", {"pane_id": self.pane_id, "state": obs.state, "was": rs.pause_reason, "by": by,
                                "waited_s": round(gone_at - (fold.paused_at or gone_at), 3), "gone_at": gone_at,
                                "human_keys": keys, "selected": selected, "signature": fold.pause_signature})
        self._paused_prompt, self._pause_absent_since = None, None

    def _check_instances(self, now: float) -> None:
        """Journal what became known about answered prompt instances: gone (the answer took), or
        still live after ``confirm_timeout_s`` (it did not: friction, then the cooldown)."""
        t = self.policy.timing
        for inst in list(self.fold.instances.values()):
            if inst.status not in ("pending", "unknown"):
                continue
            base = {"action_id": inst.action_id, "decision_id": inst.decision_id, "instance_id": inst.instance_id,
                    "signature": inst.signature, "pane_id": self.pane_id, "kind": "send_keys"}
            if inst.closed:
                self._append("action", base | {"delivered": True, "confirmed": True})
            elif (self.fold.live_instance == inst.instance_id and inst.sent_at is not None
                  and now - inst.sent_at >= t.confirm_timeout_s):
                self._append("action", base | {"delivered": True, "confirmed": False})
                until = now + self.policy.budgets.cooldown_s
                self._friction("answer_not_taken", f"the prompt was still there {now - inst.sent_at:.1f}s after "
                               f"our keys (confirm_timeout_s {t.confirm_timeout_s:g})",
                               seconds_lost=round(now - inst.sent_at, 3), cooldown_until=until,
                               instance_id=inst.instance_id)

    def _reconcile_unknown(self) -> None:
        """After a restart: actions journaled as intent with no outcome may or may not have reached
        the pane. Journal them as ``unknown``; the screen then tells (a prompt that is gone took
        its answer; one still live after the timeout did not, and gets at most its one retry)."""
        for aid, p in list(self.fold.pending_actions.items()):
            self._append("action", {k: v for k, v in p.items() if k != "at"}
                         | {"action_id": aid, "outcome": "unknown", "delivered": False,
                            "note": "the supervisor stopped before it knew whether these keys arrived"})
        task = self.fold.current_task
        if task is not None and task.status == "delivering":
            self._task = _TaskDelivery(task.task_id, task.text, phase="recovering", at=_now())

    # -- acting ------------------------------------------------------------------------------------
    def _act(self, decision: Decision, obs: Observation, raw: RawScreen, now: float,
             live: dict[str, Any] | None) -> None:
        if decision.rule == "stall" and self._stall_recorded_at is None:
            quiet = now - self._last_output_at
            self._friction("stall", decision.reason, seconds_lost=quiet)
            self._stall_recorded_at = now
        kind = decision.kind
        if obs.state == "exited":
            if kind == "escalate":  # rule exited-blocked: it died of an error a human must fix
                self._exited_blocked(decision, obs)
            d = self._task
            if d is not None and d.phase == "submitted":  # the task made the agent exit (``/exit``)
                self._task = None
                self._append("action", {"action_id": d.action_id, "kind": "task", "task_id": d.task_id,
                                        "phase": "submit", "delivered": True, "confirmed": True,
                                        "note": "the agent exited on it", "pane_id": self.pane_id})
                self._append("task", {"task_id": d.task_id, "status": "finished", "why": "the agent exited on it",
                                      "pane_id": self.pane_id})
            self.end("exited", exit_code=self._exit_status(raw.info), reason=decision.reason)
            return
        if decision.rule == "human-active":
            self._show_holding_back(now)
        elif self._holding_shown and now >= self.state.human_active_until:
            self._holding_shown = False
        if self._typeahead_flag is not None and live is not None:
            # keys we sent a moment ago may have reached this prompt before we saw it: a human looks
            self._append("note", {"type": "possibly_answered_by_typeahead", "decision_id": decision.decision_id,
                                  "signature": decision.signature, "pane_id": self.pane_id}
                         | self._typeahead_flag)
            self._escalate(decision.model_copy(update={
                "kind": "escalate", "rule": "typeahead", "keys": [],
                "reason": f"a dangerous prompt appeared {self._typeahead_flag['since_keys_s']:g}s after our keys: "
                          "it may have been answered by them",
                "next_action": "check in the pane what the agent ran; supervision resumes once the prompt is gone"}),
                obs)
            return
        from supervisor.classify import NOT_OWN_DIALOG

        if live is not None and obs.prompt is not None and NOT_OWN_DIALOG in obs.prompt.risk.matched:
            # a prompt at the bottom that is not one of the agent's own dialogs (by its grammar): no keys;
            # a human looks (it may be the agent's, in a shape this policy does not know)
            if kind != "escalate":
                self._skip(decision, "the prompt fits none of the agent's dialog frames: it is not its own "
                           "dialog, so no keys go to it", instance_id=live["instance_id"])
            self._escalate(decision.model_copy(update={
                "kind": "escalate", "rule": "not-own-dialog", "keys": [],
                "reason": decision.reason if kind == "escalate" else
                f"a prompt {obs.agent} did not draw in any of its dialog frames (a quoted or printed one, or a "
                "shape the policy does not know)",
                "next_action": "look at the pane; answer it yourself if it is the agent's"}), obs)
            return
        if kind == "answer":
            self._answer(decision, live, now)
        elif kind == "escalate" and obs.state == "asking" and obs.prompt is not None and live is None:
            # a prompt that is history (output follows it, it was quoted) is not a question: no pause
            if decision.signature not in self._history_noted:
                self._history_noted.add(decision.signature or "")
                self._append("note", {"type": "escalation_skipped", "decision_id": decision.decision_id,
                                      "signature": decision.signature, "pane_id": self.pane_id,
                                      "why": f"the prompt is not live ({self._not_live_why})"})
        elif kind == "escalate" and live is not None and self._awaiting(live):
            # the prompt we answered, redrawn as it dismisses (its chosen option marked): no pause
            # unless it is still there after the confirmation timeout (then the answer did not take)
            self._append("note", {"type": "escalation_skipped", "decision_id": decision.decision_id,
                                  "signature": decision.signature, "pane_id": self.pane_id,
                                  "instance_id": live["instance_id"],
                                  "why": "we answered this prompt; waiting for it to go"})
        elif kind == "escalate":
            self._escalate(decision, obs)
        elif kind == "finish":
            self._finish(decision, obs, now)

    def _awaiting(self, live: dict[str, Any]) -> bool:
        """Whether this live prompt is an instance we answered and are waiting to see go."""
        inst = self.fold.instance(live["instance_id"])
        return inst is not None and inst.status in ("sending", "pending", "unknown")

    def _answer(self, decision: Decision, live: dict[str, Any] | None, now: float) -> None:
        if live is None:
            why = self._not_live_why or "nothing on the screen asks"
            self._skip(decision, f"no live prompt on the screen ({why})")
            return
        inst = self.fold.instance(live["instance_id"])
        if inst is not None and inst.status in ("sending", "pending", "unknown"):
            waited = now - (inst.sent_at or now)
            self._skip(decision, f"already answered this prompt {waited:.1f}s ago; waiting up to "
                       f"{self.policy.timing.confirm_timeout_s:g}s for it to go", instance_id=inst.instance_id)
            return
        answers = inst.answers if inst is not None else 0
        if answers >= MAX_ANSWERS_PER_INSTANCE:
            self._skip(decision, f"answered this prompt {answers} times and it is still there",
                       instance_id=live["instance_id"])
            self._escalate(decision.model_copy(update={
                "kind": "escalate", "rule": "retry-limit", "keys": [],
                "reason": f"answered this prompt {answers} times and it is still there",
                "next_action": "answer it yourself in the pane (tmux attach); supervision resumes once it is gone"}),
                self.last_obs)
            return
        if not self._may_type(decision, live, now):
            return
        aid = self._send(decision.decision_id, decision.keys, text=decision.text, kind="send_keys",
                         extra={"instance_id": live["instance_id"], "signature": live["signature"],
                                "retry": answers > 0})
        if aid is not None:
            self._check_read(aid, live)

    def _may_type(self, decision: Decision, live: dict[str, Any], now: float) -> bool:
        """Whether keys may go now (else the skip is journaled): the agent read our last keys, nothing
        typed earlier waits unread in its terminal, and a fresh read of the screen shows the same
        prompt, live, as when the decision was made."""
        nr = self._not_reading
        if nr is not None:
            if nr["signature"] == live["signature"] and now - nr["at"] >= self.policy.timing.confirm_timeout_s:
                self._skip(decision, "the agent did not read our answer to this prompt", instance_id=live["instance_id"])
                self._not_reading = None
                self._hand_over(decision, "not-reading",
                                "the agent did not read our answer to this prompt (it is not reading its terminal)")
                return False
            self._skip(decision, "the agent did not read our last keys; nothing more is typed until it reads again",
                       instance_id=live["instance_id"])
            return False
        reading = getattr(self.surface, "reading_input", None)
        if reading is not None and reading(self.pane_id) is False:
            # not now; when it reads again it has usually just drawn something: that screen decides
            wait = self._look_again(now)
            self._skip(decision, "the agent is not waiting for input (it works, or waits for a program it runs): "
                       f"this prompt is not its own live one; looking again in {wait:.2g}s",
                       instance_id=live["instance_id"])
            return False
        # nothing drawn since the screen decided on (counted after a round trip to tmux, so that what the
        # program drew before it started reading is in): no need to read the screen again
        settled = getattr(self.surface, "settled_version", None)
        unchanged = (self._decided_version is not None and settled is not None
                     and settled(self.pane_id) == self._decided_version)
        why = "" if unchanged else self._changed_since_decision(live)
        if why:
            self._skip(decision, f"the screen changed before the keys were sent: {why}", instance_id=live["instance_id"])
            with self._sched:
                self._observe_at = _now()  # look again at once
                self._reason = "changed"
            return False
        unread_input = getattr(self.surface, "unread_input", None)
        unread = unread_input(self.pane_id) if unread_input is not None else None
        if not unread:
            self._unread_since = None
            return True
        # Not ours (ours are checked as sent): a human's typeahead, or a terminal's reply (a focus
        # report) the program reads a moment later. Never discarded; looked at again, backing off, and
        # a human is told when it stays.
        since = self._unread_since
        if since is None or since["signature"] != live["signature"]:
            since = self._unread_since = {"signature": live["signature"], "at": now}
        if now - since["at"] >= self.policy.timing.confirm_timeout_s:
            self._skip(decision, f"{unread} bytes typed earlier stay unread in the agent's terminal",
                       instance_id=live["instance_id"])
            self._unread_since = None
            self._hand_over(decision, "unread-input", f"{unread} bytes typed earlier stay unread in the agent's "
                            "terminal: keys sent now would follow them and could answer something else")
            return False
        wait = self._look_again(now)
        self._skip(decision, f"{unread} bytes typed earlier are still unread: the agent is not reading "
                   f"its terminal, so this prompt is not its own live one; looking again in {wait:.2g}s",
                   instance_id=live["instance_id"])
        return False

    def _look_again(self, now: float) -> float:
        """Schedule another look at a prompt that cannot be answered yet, backing off (twice the settle
        time, doubling, at most ``timing.recheck_s``); returns the wait."""
        self._busy_checks += 1
        wait = min(self.policy.timing.recheck_s, max(2 * self.settle_s, 0.05) * 2 ** (self._busy_checks - 1))
        self._recheck_at = now + wait
        return wait

    def _hand_over(self, decision: Decision, rule: str, reason: str) -> None:
        """Escalate a prompt that keys cannot answer safely (the terminal is not the agent's to type into
        now): the human answers it in the pane."""
        self._escalate(decision.model_copy(update={
            "kind": "escalate", "rule": rule, "keys": [], "reason": reason,
            "next_action": "answer it yourself in the pane (tmux attach); supervision resumes once it is gone"}),
            self.last_obs)

    def _changed_since_decision(self, live: dict[str, Any]) -> str:
        """Read the screen again right before typing: "" when it is the screen decided on, or the same
        prompt (question, subject, options, risk) in the same rows, still live; else what changed."""
        try:
            raw = self.surface.capture(self.pane_id, scrollback=self.config.scrollback)
        except SurfaceError as exc:
            return f"it could not be read again ({exc.one_line()})"
        screen, obs = self._read(raw)
        if screen.screen_hash == self.last_hash:
            return ""
        before = self.last_obs.prompt if self.last_obs is not None else None
        if obs.state != "asking" or obs.prompt is None or before is None:
            return f"the pane is now {obs.state}"
        if obs.prompt.signature != before.signature:
            return "another prompt is on the screen"
        if obs.prompt.risk.model_dump() != before.risk.model_dump():
            return f"the prompt's risk now reads {obs.prompt.risk.level} ({', '.join(obs.prompt.risk.matched)})"
        now_live = self._live_prompt(obs, screen, raw.info, fold=self.fold)
        if now_live is None:
            return "the prompt is no longer live"
        if (now_live["first"], now_live["last"]) != (live["first"], live["last"]):
            return "the prompt moved"
        return ""

    def _check_read(self, action_id: str, live: dict[str, Any]) -> None:
        """The agent must read the keys just sent: keys it leaves in its terminal would answer whatever
        it draws next. Still unread after :data:`READ_WAIT_S`: discarded, journaled, and nothing more
        is typed until the agent reads again."""
        unread_input = getattr(self.surface, "unread_input", None)
        if unread_input is None:
            return
        start = _now()
        deadline, seen = start + READ_WAIT_S, False
        while True:
            # tmux may write the keys into the terminal a moment after it confirmed them: an empty
            # queue means "read" once the keys were seen there, or once they had time to arrive
            left = unread_input(self.pane_id)
            now = _now()
            if left:
                seen = True
                if now >= deadline:
                    break
            elif seen or now - start >= KEYS_ARRIVE_S:
                return
            time.sleep(0.005)
        self._durable()
        discarded = self.surface.discard_input(self.pane_id)  # type: ignore[attr-defined]
        self._not_reading = {"at": _now(), "screen_hash": self.last_hash, "signature": live["signature"],
                             "instance_id": live["instance_id"]}
        self._append("note", {"type": "keys_discarded", "action_id": action_id, "bytes": discarded,
                              "instance_id": live["instance_id"], "signature": live["signature"],
                              "pane_id": self.pane_id,
                              "why": f"the agent did not read them within {READ_WAIT_S:g}s: it is not reading "
                                     "its terminal, so the prompt was not its own live one"})
        self._friction("answer_not_taken", "the agent did not read our keys; they were discarded",
                       instance_id=live["instance_id"])

    def _escalate(self, decision: Decision, obs: Observation | None) -> None:
        rs = self.state
        if rs.paused and rs.escalated_signature == decision.signature:
            return
        next_action = decision.next_action or f"look at pane {self.pane_id} and handle it yourself"
        risk = obs.prompt.risk if obs is not None and obs.prompt is not None else None
        danger = ""
        if risk is not None and risk.level == "dangerous" and not all(m in decision.reason for m in risk.matched):
            danger = f" [dangerous: {', '.join(risk.matched) or risk.subject or 'per policy'}]"
        if obs is not None and obs.prompt is not None:
            self._paused_prompt, self._paused_highlight = obs.prompt, obs.prompt.highlighted
        self._append("pause", {"pause_reason": decision.reason + danger, "next_action": next_action,
                               "pane_id": self.pane_id, "rule": decision.rule,
                               "state": obs.state if obs is not None else None,
                               "risk": risk.model_dump(mode="json") if risk is not None else None,
                               "blocker": obs.blocker.model_dump(mode="json") if obs is not None and obs.blocker
                               else None, "signature": decision.signature, "decision_id": decision.decision_id})
        self._friction("escalation", decision.reason + danger)
        self._notify_offpane(f"paused: {decision.reason}{danger}", next_action)
        if self.policy.pause.display_message:
            self._display("paused", f"supervisor paused {self.pane_id}: {decision.reason}{danger} | next: {next_action}")

    def _display(self, title: str, msg: str) -> None:
        self._durable()
        try:
            self.surface.display_message(self.pane_id, msg[:400], ms=self.policy.pause.display_ms)
            self._append("notification", {"channel": "tmux", "title": title, "body": msg, "ok": True,
                                          "pane_id": self.pane_id})
        except SurfaceError as exc:
            self._append("notification", {"channel": "tmux", "title": title, "body": msg, "ok": False,
                                          "error": exc.one_line(), "pane_id": self.pane_id})

    def _show_holding_back(self, now: float) -> None:
        if self._holding_shown:
            return
        self._holding_shown = True
        left = max(0.0, self.state.human_active_until - now)
        self._display("holding back", f"supervisor: holding back on {self.pane_id} while you work on the prompt "
                      f"(hands off for {left:.0f}s more)")

    def _finish(self, decision: Decision, obs: Observation, now: float) -> None:
        """A finished turn: journal it, then end the run if its task (or its turns) is done."""
        fold = self.fold
        if now < fold.human_until and fold.human_where == "input box":
            self._append("note", {"type": "finish_held", "why": "a human is typing in the agent's input box",
                                  "decision_id": decision.decision_id, "pane_id": self.pane_id})
            with self._sched:  # look again when the hands-off time ends, even if the screen stays the same
                again = fold.human_until + 0.05
                self._timer_at = again if self._timer_at is None else min(self._timer_at, again)
            return
        if self._task is not None:
            return  # a task is being typed: the idle screen is ours, not the agent's finish
        if fold.run_task and fold.turn == 1 and not any(t.started_at for t in fold.tasks):
            return  # the agent got ready (a start-up spinner is not a turn): its task comes first
        task = fold.current_task
        turn = fold.turn
        payload: dict[str, Any] = {"turn": turn, "started_at": fold.turn_started_at,
                                   "duration_s": round(now - fold.turn_started_at, 3), "prompts": fold.turn_prompts,
                                   "answered": fold.turn_answered, "escalated": fold.turn_escalated,
                                   "decision_id": decision.decision_id, "pane_id": self.pane_id}
        if task is not None:
            payload |= {"task": task.text, "task_id": task.task_id}
        self._append("turn_finished", payload)
        cfg = self.config
        tasks_done = fold.run_task and not fold.queued_tasks and fold.current_task is None
        turns_done = cfg.turns is not None and turn >= cfg.turns
        plain_exit = cfg.exit_on_finish and not fold.run_task and cfg.turns is None
        if tasks_done or turns_done or plain_exit:
            if cfg.exit_on_finish:
                keys = exit_keys(obs.agent, self.policy)
                if keys:
                    self._send(decision.decision_id, keys, kind="exit_agent")
            self.end("finished", reason=decision.reason if not fold.run_task else "the task is finished")

    def _exited_blocked(self, decision: Decision, obs: Observation) -> None:
        """The agent exited showing a blocker (401, usage limit...): journal the pause (so
        ``status``/``runs show`` say why and what to do) and a journal-only notification (a
        display-message on a dead pane reaches nobody); ``run_ended`` carries the blocker too."""
        next_action = decision.next_action or f"look at pane {self.pane_id} and handle it yourself"
        blocker = obs.blocker.model_dump(mode="json") if obs.blocker is not None else None
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
        self._durable()
        self._offpane.notify(Notification(run_id=self.run_id, pane_id=self.pane_id, kind="escalation",
                                          title=clip(title, 200), body=title, next_action=next_action))

    def _send(self, decision_id: str | None, keys: list[str], *, text: str | None = None,
              kind: Literal["send_keys", "exit_agent", "task"] = "send_keys", extra: dict[str, Any] | None = None,
              paste: bool = False) -> str | None:
        """Journal the intent, send, journal the delivery (or the error). The action id if delivered."""
        action = Action(action_id=new_id(), decision_id=decision_id, kind=kind, keys=list(keys),
                        text=text, pane_id=self.pane_id, delivered=False)
        more = extra or {}
        self._append("action", action.model_dump(mode="json") | more)
        self._durable()
        self._keys_going_at = _now()
        try:
            if text and paste:
                self.surface.paste_buffer(self.pane_id, text)
            elif text:
                self.surface.paste_text(self.pane_id, text)
            self.surface.send_keys(self.pane_id, list(keys))
        except SurfaceError as exc:
            self._append("action", action.model_copy(update={"error": exc.one_line()}).model_dump(mode="json") | more)
            return None
        self._our_keys_at = _now()
        self._keys_settled = False
        self._append("action", action.model_copy(update={"delivered": True}).model_dump(mode="json") | more)
        return action.action_id

    def _exit_status(self, info: PaneInfo) -> int | None:
        """The dead pane's exit status. tmux marks a pane dead when its pty closes, which can be a
        moment before it has reaped the process and knows the status: ask again briefly (in this
        pane's worker: other panes are not held up)."""
        deadline = _now() + 1.0
        while info.dead_status is None and info.dead and _now() < deadline:
            time.sleep(0.05)
            try:
                info = self.surface.pane_info(self.pane_id)
            except SurfaceError:
                break
        return info.dead_status

    # -- tasks -----------------------------------------------------------------------------------------
    def queue_task(self, text: str, *, source: str, request_id: str | None = None) -> str:
        tid = new_id("task_")
        self._append("task", {"task_id": tid, "text": text, "status": "queued", "source": source,
                              "request_id": request_id, "pane_id": self.pane_id})
        with self._sched:
            self._timer_at = _now()  # look now (even at an unchanged screen): the agent may be ready for it
        return tid

    def _task_step(self, now: float, obs: Observation, screen: Screen) -> None:
        """Type the next queued task once the agent is ready; paste, pause, Enter, confirm."""
        d = self._task
        fold = self.fold
        if d is None:
            queued = fold.queued_tasks
            if not queued or fold.current_task is not None or not self._ready_for_task(now, obs):
                return
            task = queued[0]
            if not self._send(None, [], text=task.text, kind="task", paste="\n" in task.text,
                              extra={"task_id": task.task_id, "phase": "paste"}):
                self._append("task", {"task_id": task.task_id, "status": "failed", "why": "the paste failed"})
                return
            self._task = _TaskDelivery(task.task_id, task.text, phase="pasted", at=now, before=screen.text)
            return
        if d.phase == "recovering":  # a restart mid-delivery: the screen tells how far it got
            if obs.state in ("busy", "asking"):
                self._task_confirmed(d, True, "the agent is working on it")
            elif _composer_has(screen, d.text):
                d.phase, d.at, d.before = "pasted", now - TASK_SUBMIT_GAP_S, ""
            else:
                self._task_confirmed(d, False, "a supervisor restart interrupted its delivery; hand it again")
            return
        if d.phase == "pasted":
            if obs.state != "idle":  # a dialog (or output) came up over the paste: Enter would answer it
                d.interrupted = True
                return
            if d.interrupted and not _composer_has(screen, d.text):
                self._repaste(d, now, obs, screen)
                return
            if now - d.at < TASK_SUBMIT_GAP_S:
                return
            if screen.text == d.before and now - d.at < self.policy.timing.confirm_timeout_s:
                return  # the paste has not shown yet
            aid = self._send(None, ["Enter"], kind="task", extra={"task_id": d.task_id, "phase": "submit"})
            if aid:
                d.phase, d.at, d.enters, d.submitted, d.action_id = "submitted", now, d.enters + 1, screen.text, aid
            else:
                self._task_confirmed(d, False, "Enter could not be sent")
            return
        if d.phase == "submitted":
            if obs.state in ("busy", "asking", "exited") or (screen.text != d.submitted
                                                              and not _composer_has(screen, d.text)):
                self._task_confirmed(d, True, "the agent took it")
            elif now - d.at >= self.policy.timing.confirm_timeout_s:
                if d.enters < 2 and _composer_has(screen, d.text):
                    aid = self._send(None, ["Enter"], kind="task", extra={"task_id": d.task_id, "phase": "submit",
                                                                          "retry": True})
                    d.at, d.enters, d.submitted, d.action_id = now, d.enters + 1, screen.text, aid or d.action_id
                else:
                    self._task_confirmed(d, False, "the agent did not take it")

    def _repaste(self, d: _TaskDelivery, now: float, obs: Observation, screen: Screen) -> None:
        """The paste went into a dialog that came up over it, or was lost: once the agent is ready
        again, paste the task once more (once; then it is escalated)."""
        if d.repastes >= 1:
            self._task_confirmed(d, False, "the paste was lost twice (a dialog came up over it)")
            return
        if not self._ready_for_task(now, obs):
            return
        if not self._send(None, [], text=d.text, kind="task", paste="\n" in d.text,
                          extra={"task_id": d.task_id, "phase": "paste", "retry": True}):
            self._task_confirmed(d, False, "the paste failed")
            return
        d.at, d.before, d.interrupted, d.repastes = now, screen.text, False, d.repastes + 1

    def _task_confirmed(self, d: _TaskDelivery, ok: bool, why: str) -> None:
        self._task = None
        self._append("action", {"action_id": d.action_id, "kind": "task", "task_id": d.task_id, "phase": "submit",
                                "delivered": True, "confirmed": ok, "note": why, "pane_id": self.pane_id})
        self._append("task", {"task_id": d.task_id, "status": "started" if ok else "failed", "why": why,
                              "pane_id": self.pane_id})
        if not ok:
            self._escalate(Decision(kind="escalate", reason=f"could not hand the agent its task: {why}",
                                    rule="task-not-taken", signature=f"task:{d.task_id}",
                                    next_action=f"type the task into the pane yourself: {d.text[:120]!r}"), None)

    def _ready_for_task(self, now: float, obs: Observation) -> bool:
        fold = self.fold
        return (obs.state == "idle" and not self.state.paused and self._idle_since is not None
                and now - self._idle_since >= TASK_READY_S and not fold.awaiting_confirmation
                and not (now < fold.human_until and fold.human_where == "input box"))

    # -- requests from other processes (supervisor runs task|stop|resume|review) -----------------------
    def _handle_requests(self, now: float) -> None:
        self.control.drain_wake()
        for req in self.control.requests():
            self._handle_request(req, now)
            self.control.done(req)
            if self.done:
                return

    def _handle_request(self, req: dict[str, Any], now: float) -> None:
        kind, rid = req.get("type"), req.get("request_id")
        if kind == "task" and isinstance(req.get("text"), str) and req["text"].strip():
            self.queue_task(req["text"], source="runs task", request_id=rid)
        elif kind == "stop":
            self._append("note", {"type": "stop", "by": req.get("by") or "human", "note": req.get("note", ""),
                                  "request_id": rid})
            self.stop()
        elif kind == "resume":
            if self.state.paused:
                self._append("resume", {"pane_id": self.pane_id, "by": "supervisor", "request_id": rid,
                                        "was": self.state.pause_reason, "signature": self.fold.pause_signature,
                                        "waited_s": round(now - (self.fold.paused_at or now), 3), "human_keys": [],
                                        "selected": None})
        else:
            self._append("note", {"type": "request_ignored", "request_id": rid, "request": kind,
                                  "why": req.get("error") or "this run does not take that request"})

    # -- timers --------------------------------------------------------------------------------------
    def _schedule(self, now: float) -> None:
        """Set the one timer the current situation needs (or none)."""
        t = self.policy.timing
        rs, fold, obs = self.state, self.fold, self.last_obs
        cands: list[float] = []
        for inst in fold.instances.values():
            if inst.status not in ("pending", "unknown"):
                continue
            if inst.sent_at is not None:
                cands.append(inst.sent_at + t.confirm_timeout_s)
            if not inst.closed and inst.absent_since is not None:
                cands.append(inst.absent_since + DISMISS_GRACE_S + 0.01)
        if self._task is not None:
            d = self._task
            if not d.interrupted:
                cands.append(d.at + (TASK_SUBMIT_GAP_S if d.phase == "pasted" else t.confirm_timeout_s))
            elif self._idle_since is not None:  # the prompt over the paste has gone: paste again once ready
                cands.append(max(now + 0.05, self._idle_since + TASK_READY_S))
        elif fold.queued_tasks and obs is not None and obs.state == "idle" and self._idle_since is not None:
            ready_at = self._idle_since + TASK_READY_S
            if ready_at > now:  # once due, what else holds the task back has its own timer or event
                cands.append(ready_at)
        if obs is not None and not self.done:
            if obs.state == "busy":
                stalled = rs.stalls if self._stall_recorded_at else 0
                base = self._last_output_at + t.stall_timeout_s * (1 + stalled)
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
            if fold.human_until > now and obs.state == "idle":
                cands.append(fold.human_until + 0.01)
            if rs.paused and self._pause_absent_since is not None:
                cands.append(self._pause_absent_since + DISMISS_GRACE_S + 0.01)
        if self._recheck_at is not None and self._recheck_at > now:
            cands.append(self._recheck_at)
        with self._sched:
            self._timer_at = min(cands) if cands else None


UNREADY_IDLE = ("idle:blank", "idle:no-marker")
"""Idle evidence that shows no input box: a blank screen, or nothing an agent draws when it takes
input (an agent still starting up: keys typed now are read later, as answers to whatever it asks
first)."""


def shows_input(obs: Observation) -> bool:
    """Whether an idle screen positively shows the agent taking input (its input line or idle
    marker): only then is a task typed."""
    return obs.state == "idle" and bool(obs.evidence) and obs.evidence[0] not in UNREADY_IDLE


@dataclass
class _TaskDelivery:
    """A task being typed: pasted, then submitted, then confirmed (runner-local; the journal has
    each step, so a restart mid-way continues from the screen)."""

    task_id: str
    text: str
    phase: Literal["pasted", "submitted", "recovering"]
    at: float
    before: str = ""
    submitted: str = ""
    enters: int = 0
    action_id: str | None = None
    interrupted: bool = False
    """A prompt came up after the paste (before Enter): Enter is held until it has gone."""
    repastes: int = 0


class _Shadow:
    """A candidate policy riding along: it classifies every screen with its own policy, decides
    with its own folded state, and is journaled (``shadow_decision``), never acted on."""

    def __init__(self, policy: Policy, runner: PaneRunner) -> None:
        self.policy = policy
        self.policy_id = _policy_facts(policy)[1]
        self.runner = runner
        self.fold = RunFold(recheck_s=policy.timing.recheck_s)
        self.fold.state.run_id = runner.run_id
        self.fold.state.started_at = runner.state.started_at

    def step(self, screen: Screen, now: float, info: PaneInfo, human: dict[str, Any] | None) -> None:
        r = self.runner
        obs = r._classify(screen, self.policy)
        if screen.dead and obs.state != "exited":
            obs = obs.model_copy(update={"state": "exited"})
        if obs.agent == "unknown" and r.known_agent != "unknown":
            obs = obs.model_copy(update={"agent": r.known_agent})
        live = r._live_prompt(obs, screen, info, fold=self.fold)
        self.fold.apply(Event(event_id="shadow", run_id=r.run_id, seq=0, kind="observation", at=now, payload={
            "observation": obs.model_dump(mode="json"), "now": now, "last_output_at": r._last_output_at,
            "live_prompt": live, "human": human}))
        d = r._decide(obs, self.fold.state, self.policy, policy_id=self.policy_id)
        d.decision_id = new_id()
        d.trigger_id = r.last_obs.observation_id if r.last_obs is not None else None
        r._append("shadow_decision", shadow_decision_payload(d, obs, live=live is not None, shadow_policy_id=self.policy_id,
                                                             acting_policy_id=r.policy_id, pane_id=r.pane_id, now=now),
                  event_id=d.decision_id)
        self.fold.simulate(obs, d, now, self.policy.timing.recheck_s, live)


def shadow_decision_payload(d: Decision, obs: Observation, *, live: bool, shadow_policy_id: str,
                            acting_policy_id: str, pane_id: str | None, now: float) -> dict[str, Any]:
    """The ``shadow_decision`` event's payload (both surfaces write it, evals and reports read it): the
    shadow's decision and a summary of the shadow's own observation of the screen."""
    prompt = obs.prompt
    summary = {"state": obs.state, "agent": obs.agent, "evidence": obs.evidence[:12],
               "prompt": None if prompt is None else {"kind": prompt.kind, "signature": prompt.signature,
                                                      "question": prompt.question[:200],
                                                      "risk": prompt.risk.model_dump(mode="json")},
               "blocker": obs.blocker.model_dump(mode="json") if obs.blocker is not None else None,
               "live": live}
    return {"decision": d.model_dump(mode="json"), "shadow_policy_id": shadow_policy_id,
            "acting_policy_id": acting_policy_id, "pane_id": pane_id, "now": now, "observation": summary}


def _copies_above(screen: Screen, prompt: Prompt, first_row: int) -> int:
    """Rows above the live prompt that show the same question: an earlier copy still on screen."""
    q = _head(prompt.question, 40)
    if not q:
        return 0
    return sum(1 for ln in screen.text.split("\n")[:first_row] if q in " ".join(ln.split()))


def _screen_fields(screen: Screen) -> dict[str, Any]:
    """Every Screen field, for the journal (replay rebuilds the exact Screen from them)."""
    return {"screen_hash": screen.screen_hash, "text": screen.text, "width": screen.width, "height": screen.height,
           "cursor_x": screen.cursor_x, "cursor_y": screen.cursor_y, "title": screen.title,
           "current_command": screen.current_command, "dead": screen.dead,
           "highlights": [list(h) for h in screen.highlights], "scrollback": screen.scrollback,
           "cwd": screen.cwd, "untrusted": [list(u) for u in screen.untrusted]}




_DECLINE_ECHO = re.compile(r"user declined|you canceled|interrupted|declined", re.I)


def _infer_selection(prompt: Prompt, screen: Screen, initial: int | None) -> tuple[str | None, list[str]]:
    """What a human chose on an escalated prompt, when the screen shows it: a line prompt's echoed
    answer (``... [Yes]: n``), a moved highlight, or an agent's decline echo. (None, []) otherwise."""
    lines = screen.text.split("\n")
    q = _head(prompt.question, 30)
    if prompt.input_style in LINE_STYLES and q:
        for ln in reversed(lines):
            if q in " ".join(ln.split()):
                typed = ln.rsplit(":", 1)[-1].strip() if ":" in ln else ""
                if typed:
                    opt = next((o for o in prompt.options if o.key and o.key.lower() == typed[:1].lower()), None)
                    if opt is not None:
                        return opt.label, [typed, "Enter"]
                break
    if prompt.highlighted is not None and initial is not None and prompt.highlighted != initial:
        opt = next((o for o in prompt.options if o.index == prompt.highlighted), None)
        if opt is not None:
            delta = prompt.highlighted - initial
            return opt.label, (["Down"] * delta if delta > 0 else ["Up"] * -delta) + ["Enter"]
    tail = "\n".join([ln for ln in lines if ln.strip()][-8:])
    if _DECLINE_ECHO.search(tail):
        opt = next((o for o in prompt.options if o.approves is False), None)
        if opt is not None:
            return opt.label, [opt.key] if opt.key else []
    return None, []


def _composer_has(screen: Screen, text: str) -> bool:
    """Whether the agent's input box (the bottom rows) still holds this text (or a collapsed paste)."""
    first = _head(text.strip().split("\n")[0], 24)
    bottom = [" ".join(ln.split()) for ln in screen.text.split("\n")[-8:]]
    return any((first and first in ln) or "[Pasted text" in ln for ln in bottom)


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


class _Waker:
    """One thread that waits on every live run's wake FIFO and turns a poke into a ``requests``
    event for that run (no polling)."""

    def __init__(self, deliver: Callable[[OutputEvent], None]) -> None:
        self.deliver = deliver
        self.sel = selectors.DefaultSelector()
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        self.sel.register(self._r, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, fd: int | None, pane_id: str) -> None:
        if fd is None:
            return
        with self._lock, contextlib.suppress(ValueError, OSError):
            if fd in self.sel.get_map():  # the number of an ended run's closed FIFO, reused
                self.sel.unregister(fd)
            self.sel.register(fd, selectors.EVENT_READ, pane_id)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="control-waker", daemon=True)
            self._thread.start()
        os.write(self._w, b"x")

    def remove(self, fd: int | None) -> None:
        if fd is None:
            return
        with self._lock, contextlib.suppress(KeyError, ValueError, OSError):
            self.sel.unregister(fd)
        with contextlib.suppress(OSError):
            os.write(self._w, b"x")

    def _loop(self) -> None:
        block_signals()
        while not self._closed:
            try:
                with self._lock:
                    keys = self.sel.get_map()
                ready = self.sel.select(timeout=None) if keys else []
            except (OSError, ValueError):  # an fd closed under us: the next add/remove rebuilds the set
                continue
            for key, _ in ready:
                if key.data is None:
                    with contextlib.suppress(OSError):
                        os.read(self._r, 4096)
                    continue
                with contextlib.suppress(OSError):
                    while os.read(key.fd, 512):
                        pass
                self.deliver(OutputEvent("requests", key.data, time.time()))

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            os.write(self._w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2)
        with contextlib.suppress(OSError):
            os.close(self._r)
            os.close(self._w)
        self.sel.close()


Discover = Callable[[], Iterable[PaneInfo]]


class Supervisor:
    """Supervises many panes. Output events arrive on a queue from the surface's reader threads;
    the loop sleeps until the next event or the earliest timer and hands each due pane's work to a
    worker pool (one pane's work at a time per pane; panes never wait for each other)."""

    def __init__(self, surface: Surface, settings: Settings, config: RunConfig, *, socket: str | None = None,
                 discover: Discover | None = None, feeder: WarehouseFeeder | None = None,
                 renew_finished: bool = False, workers: int = 16, auto_resume: bool = False) -> None:
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
        from supervisor.classify import warm_up

        warm_up(config.policy)  # the first dialog is answered at full speed, however many panes ask at once
        self._stopping = threading.Event()
        self._rescan = False
        self._ignored: dict[str, float] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pane")
        self._busy: set[str] = set()
        self._busy_lock = threading.Lock()
        self._waker = _Waker(self._enqueue)
        self.on_run_started: Callable[[PaneRunner], None] | None = None
        self.on_run_ended: Callable[[PaneRunner], None] | None = None
        self.on_journal: Callable[[PaneRunner, Event], None] | None = None
        """Called after every journaled event (the CLI prints answers, pauses, resumes)."""
        self.on_notice: Callable[[PaneRunner, str], None] | None = None
        """Called with what a runner must tell the human outside the journal (a suspended pane)."""
        self.rescan_every: float | None = None
        """With ``discover``: also rescan this often (poll mode, or no tmux server to listen to)."""
        self._next_rescan: float | None = None
        self.errors: list[str] = []
        self.auto_resume = auto_resume
        """A pane whose earlier run never ended and lost its supervisor continues that run."""
        self._unended: tuple[float, list[Any]] | None = None
        self._unended_cost = 0.0

    # -- panes ---------------------------------------------------------------------------------------
    def add_pane(self, pane: PaneInfo | str, *, command: Any = None, run_id: str | None = None,
                 resume: bool = False, config: RunConfig | None = None) -> PaneRunner:
        """Supervise a pane: continue ``run_id`` (``resume``), or the pane's unended run whose
        supervisor is gone (``auto_resume``), or start a new run. A pane another live supervisor
        holds is refused (:class:`~supervisor.errors.UsageError`)."""
        info = pane if isinstance(pane, PaneInfo) else self.surface.pane_info(pane)
        existing = self.runners.get(info.pane_id)
        if existing is not None and not existing.done:
            return existing
        if run_id is None:
            taken = next((r for r in self._unended_runs() if r.live and r.pane_id == info.pane_id
                          and r.socket == self.socket), None)
            if taken is not None:
                raise UsageError(f"pane {info.pane_id} is already supervised (run {taken.run_id}, process "
                                 f"{taken.started.get('pid')})", "see `supervisor status`")
            if self.auto_resume:
                found = self._resumable(info)
                if found is not None:
                    run_id, resume = found, True
                    self._unended = None
        cfg = config or self.config
        if command is not None:
            cfg = _replace(cfg, command=command)
        runner = self._make_runner(info, cfg, run_id=run_id, resume=resume)
        runner.on_notice = self._noticed
        self.runners[info.pane_id] = runner
        runner.start()
        try:
            self.surface.watch([info.pane_id], self._enqueue)
        except SurfaceError as exc:
            # the pane or its server went away between the run's start and here: the runner's first
            # look (due now) finds it gone and ends the run as such; the caller sees a run, not an error
            log.info("pane %s: cannot watch its output (%s); its run ends on the first look", info.pane_id,
                        exc.one_line())
        blind = getattr(self.surface, "overwrite_blindness", None)
        why = blind(info.pane_id) if blind is not None else None
        if why and not runner.done:
            runner._append("note", {"type": "overwrites_not_visible", "pane_id": info.pane_id, "why": why})
            runner._tell(f"pane {info.pane_id}: text an agent draws over other text cannot be seen ({why}); "
                         "dialogs there are judged by what they show")
        self._waker.add(runner.control.wake_fd, info.pane_id)
        if self.on_run_started:
            self.on_run_started(runner)
        return runner

    def _unended_runs(self) -> list[Any]:
        """Unended runs (from the journals), read again at most every two seconds, or every ten times as
        long as the last reading took (each journal opens with its run's whole policy: reading them for
        every one of 200 panes being attached made attaching quadratic). Runs this supervisor started
        itself need no reading: :meth:`add_pane` knows its own panes."""
        from supervisor.lifecycle import unended_runs

        now = _now()
        if self._unended is None or now - self._unended[0] > max(2.0, 10 * self._unended_cost):
            t0 = time.monotonic()
            self._unended = (now, unended_runs(self.settings))
            self._unended_cost = time.monotonic() - t0
        return self._unended[1]

    def _resumable(self, info: PaneInfo) -> str | None:
        """The unended run of this pane whose supervisor is gone (held to no spec)."""
        for r in self._unended_runs():
            recorded = r.started.get("pane_pid")
            if (not r.live and r.pane_id == info.pane_id and r.socket == self.socket and r.workflow is None
                    and (recorded is None or info.pid is None or recorded == info.pid)):
                return r.run_id
        return None

    def _make_runner(self, info: PaneInfo, cfg: RunConfig, *, run_id: str | None = None,
                     resume: bool = False) -> PaneRunner:
        """The runner for a newly added pane (subclasses supervise panes with their own runner)."""
        return PaneRunner(self.surface, info, self.settings, cfg, socket=self.socket, on_change=self._journaled,
                          run_id=run_id, resume=resume)

    def _journaled(self, runner: PaneRunner, event: Event) -> None:
        self.feeder.poke()
        if self.on_journal is not None:
            try:
                self.on_journal(runner, event)
            except Exception as exc:  # noqa: BLE001 - a printer must not stop supervision
                log.warning("on_journal callback failed: %s", exc)

    def _noticed(self, runner: PaneRunner, text: str) -> None:
        if self.on_notice is not None:
            self.on_notice(runner, text)

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
        while not self._stopping.is_set():
            now = _now()
            for r in list(self.runners.values()):
                d = r.next_deadline()
                if d is not None and d <= now:
                    self._submit(r, now)
            self._reap()
            if until is not None and until():
                break
            if self.discover is None and not self.active and not self._busy:
                break
            if end_at is not None and now >= end_at:
                break
            if (self.discover is not None and self.rescan_every
                    and (self._next_rescan is None or now >= self._next_rescan)):
                self.scan()
                self._next_rescan = now + self.rescan_every
            with self._busy_lock:
                busy = set(self._busy)
            deadlines = [d for r in self.runners.values() if r.pane_id not in busy
                         and (d := r.next_deadline()) is not None]
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
            # drain what else is queued without sleeping, but only for a moment: with many busy panes
            # the queue can fill as fast as it drains, and the deadlines (settled screens, timers,
            # ``until``) above must still be served
            drain_end = _now() + DRAIN_BUDGET_S
            while _now() < drain_end:
                try:
                    ev = self.events.get_nowait()
                except queue.Empty:
                    break
                self._dispatch(ev)
            if self._rescan:
                self._rescan = False
                self.scan()

    def _submit(self, runner: PaneRunner, now: float) -> None:
        with self._busy_lock:
            if runner.pane_id in self._busy:
                return
            self._busy.add(runner.pane_id)

        def work() -> None:
            try:
                runner.tick(_now())
            except Exception as exc:  # noqa: BLE001 - one pane's bug must not stop the others
                log.exception("supervising %s failed", runner.pane_id)
                self.errors.append(f"{runner.pane_id}: {type(exc).__name__}: {exc}")
                with contextlib.suppress(Exception):
                    runner._append("note", {"type": "supervisor_error", "error": f"{type(exc).__name__}: {exc}"[:500]})
                    runner.stop()
            finally:
                with self._busy_lock:
                    self._busy.discard(runner.pane_id)
                self.events.put(None)  # wake the loop: this pane's next deadline may have changed

        try:
            self._pool.submit(work)
        except RuntimeError:  # the pool is shut down (closing)
            with self._busy_lock:
                self._busy.discard(runner.pane_id)

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
            alive = list(self.active)
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
            try:
                started.append(self.add_pane(info))
            except UsageError as exc:  # another supervisor has it
                log.info("not supervising %s: %s", info.pane_id, exc.message)
                self._ignored[info.pane_id] = _now()
        return started

    def _reap(self) -> None:
        for r in list(self.runners.values()):
            if r.done and r not in self.ended:
                self.ended.append(r)
                self._waker.remove(r.control.wake_fd)
                if self.on_run_ended:
                    self.on_run_ended(r)

    def stop(self) -> None:
        self._stopping.set()
        self.events.put(None)

    def close(self, *, final_sync: bool = True, suspend: str | None = None) -> None:
        """Let running work finish, end every active run as stopped (or escalated), or with
        ``suspend`` (why) leave each one resumable, close the surface, sync the warehouse."""
        self._pool.shutdown(wait=True)
        for r in self.active:
            if suspend is not None:
                r.suspend(suspend)
            else:
                r.stop()
        self._reap()
        self._waker.close()
        try:
            self.surface.close()
        except Exception as exc:  # noqa: BLE001 - closing must finish
            log.warning("closing the surface failed: %s", exc)
        self.feeder.stop(final_sync=final_sync)


def _replace(cfg: RunConfig, **changes: Any) -> RunConfig:
    from dataclasses import replace

    return replace(cfg, **changes)

