"""Supervising an agent over the Agent Client Protocol: the ACP counterpart of the pane runner.

``supervisor run --acp -- COMMAND...`` starts COMMAND as an ACP agent (:mod:`supervisor.surfaces.acp`),
opens a session in the working directory and supervises it as one run with one journal, in the
journal's common vocabulary, so the warehouse, ``runs why``, replay, compare and canaries read it
like a tmux run:

* every message of the agent that matters becomes an ``observation`` (its screen is the message as
  JSON, see :mod:`supervisor.classify_acp`) and a ``decision`` by the same ``classify`` and
  ``decide`` as a screen, under the same policy, with shadows deciding alongside;
* a **permission request** is a prompt: ``decide`` answers it with one of the offered option ids
  (journaled as the action's keys: intent, delivered, confirmed: an ACP answer cannot fail to
  arrive while the agent lives), or escalates it: the request waits, the run is paused with the
  reason and the options, and a human answers with ``supervisor runs answer RUN_ID OPTION`` from
  any shell (a control request, like ``runs task``: picked up at once through the run's wake FIFO,
  checked against the request still waiting, journaled as a ``resume`` by the human with the
  option selected, then sent). One request is decided at a time: a second one waits for the first;
* a **task** (``--task``, ``supervisor runs task``, a workflow's instruction) is one prompt turn:
  journaled as a task action, confirmed when the agent shows it took it, and its end (the prompt's
  stop reason) is a ``turn_finished``: no idle confirmations are needed, the protocol says so. A
  run given a task ends when its tasks are done; one without waits for ``runs task`` until the
  agent exits or the run is stopped;
* a prompt the agent answers with an error (401, rate limit, "authentication required") is a
  blocker: the run is paused; handing a new task is the human's answer to it. Silence while
  working for ``stall_timeout_s`` is a stall, as on a screen;
* the agent exiting ends the run (``exited``, with the blocker its last stderr lines show);
* with a **workflow spec** (``--spec``) the run follows the plan as a tmux run does: the first
  prompt gives the agent the checkpoint protocol and the plan, the checkpoint blocks in its
  messages go to the :class:`~supervisor.workflow.controller.WorkflowController`, whose
  instructions (next step, retry with the failing output) are the next prompts (a paste, for the
  controller: :class:`_PromptSurface`), and the run ends when the finish gate passes.

The agent is the supervisor's child: a run cannot outlive its supervisor, so an ACP run is never
resumed (``status`` closes one whose supervisor is gone). Everything runs on one asyncio loop;
the journal is written (and fsynced) before the agent is answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket as socketlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

from supervisor import __version__
from supervisor.agents import agent_from_argv, agent_of_command, agent_of_title, is_shell
from supervisor.classify import classify
from supervisor.classify_acp import acp_screen
from supervisor.control import RunControl
from supervisor.decide import decide, selected_option
from supervisor.errors import AgentProtocolError, SurfaceError, UsageError
from supervisor.ids import new_id
from supervisor.journal import Journal
from supervisor.models import Action, Decision, Event, Friction, FrictionKind, Observation, Prompt, Screen
from supervisor.redact import clip
from supervisor.runner import BUSY_JOURNAL_EVERY_S, RunConfig, shadow_decision_payload
from supervisor.runstate import RunFold, new_instance_id
from supervisor.settings import Settings, user_name

log = logging.getLogger(__name__)

Outcome = Literal["finished", "exited", "stopped", "escalated"]
"""How an ACP run ended: its tasks (or turns) finished; the agent exited; the run was stopped;
stopped while paused on an escalation."""

MESSAGE_TAIL = 2000
"""Characters of the agent's current message kept on an observation's screen."""
QUIET_UPDATES = frozenset({"user_message_chunk", "available_commands_update", "current_mode_update",
                           "config_option_update", "session_info_update", "usage_update"})
"""Session updates that say nothing about the agent working (no observation of their own)."""
STARTUP_TIMEOUT_S = 180.0
"""How long the agent may take to answer ``initialize`` and ``session/new`` (Gemini CLI takes ~10 s)."""
EXIT_GRACE_S = 5.0
"""After the connection closes, how long the agent has to exit before the run says so anyway."""


def pick_option(options: list[dict[str, Any]], choice: str) -> dict[str, Any] | None:
    """The offered option (``{"optionId", "name", "kind"}``) a human means by ``choice``: its id (exact,
    else case-insensitive), its number in the list (1-based), or its name (case-insensitive); None
    when nothing or more than one option fits."""
    c = choice.strip()
    for match in (lambda o: o.get("optionId") == c,
                  lambda o: str(o.get("optionId") or "").lower() == c.lower(),
                  lambda o: " ".join(str(o.get("name") or "").split()).lower() == " ".join(c.split()).lower()):
        found = [o for o in options if match(o)]
        if len(found) == 1:
            return found[0]
        if found:
            return None
    if c.isdigit() and 1 <= int(c) <= len(options):
        return options[int(c) - 1]
    return None


def describe_options(options: list[dict[str, Any]]) -> str:
    return ", ".join(f"{o.get('optionId')} ({o.get('name')})" for o in options)


@dataclass
class _Waiting:
    """An escalated permission request waiting for a human's ``runs answer``."""

    future: asyncio.Future[tuple[dict[str, Any], str | None, str]]
    options: list[dict[str, Any]]
    signature: str
    paused_at: float
    reason: str


class _PromptSurface:
    """What the workflow controller takes for a pane, for an ACP agent: pasting an instruction
    sends it as the next prompt (queued behind the turn in progress), and the "screen" shows every
    prompt sent, so an instruction's marker is visible once it went out."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self._send = send
        self.sent: list[str] = []

    def paste_buffer(self, pane_id: str, text: str, *, submit: bool = False) -> None:
        """A prompt is submitted as it is sent (``submit`` changes nothing)."""
        self.sent.append(text)
        self._send(text)

    def send_keys(self, pane_id: str, keys: list[str]) -> None:
        """Enter after a paste: the prompt is already submitted."""

    def capture(self, pane_id: str, scrollback: int = 0) -> SimpleNamespace:
        return SimpleNamespace(text="\n".join(self.sent), scrollback="")


def plan_prompt(spec: Any, run_id: str) -> str:
    """The first prompt of a workflow run: the checkpoint protocol (with the run id) and the plan."""
    from supervisor.workflow.skill import protocol_text

    steps = "\n".join(f"- {s.id}: {s.objective}" for s in spec.steps if s.objective)
    return (protocol_text().replace("RUN_ID_IF_GIVEN", run_id)
            + f"\n\n# The plan: {spec.name}\n\nGoal: {spec.goal}\n\nSteps (in order):\n{steps}\n\n"
            "Start with the first step now.")


class _Shadow:
    """A candidate policy riding along: its own classification of every ACP screen, its own fold,
    its decisions journaled (``shadow_decision``), never acted on."""

    def __init__(self, policy: Any, run_id: str, started_at: float) -> None:
        self.policy = policy
        self.policy_id = policy.policy_id
        self.fold = RunFold(recheck_s=policy.timing.recheck_s)
        self.fold.state.run_id = run_id
        self.fold.state.started_at = started_at

    def step(self, screen: Screen, now: float, last_output_at: float, instance_id: str | None
             ) -> tuple[Observation, Decision, dict[str, Any] | None]:
        obs = classify(screen, self.policy)
        live = _live(obs, instance_id)
        self.fold.apply(Event(event_id="shadow", run_id=self.fold.state.run_id, seq=0, kind="observation", at=now,
                              payload={"observation": obs.model_dump(mode="json"), "now": now,
                                       "last_output_at": last_output_at, "live_prompt": live, "human": None}))
        d = decide(obs, self.fold.state, self.policy, policy_id=self.policy_id)
        self.fold.simulate(obs, d, now, self.policy.timing.recheck_s, live)
        return obs, d, live


def _live(obs: Observation, instance_id: str | None) -> dict[str, Any] | None:
    """The live prompt of an ACP observation: every permission request is one prompt instance."""
    if obs.state != "asking" or obs.prompt is None or instance_id is None:
        return None
    return {"signature": obs.prompt.signature, "agent": obs.agent, "kind": obs.prompt.kind, "first": None,
            "last": None, "first_row": None, "last_row": None, "history_size": 0, "again": False,
            "instance_id": instance_id}


def _screen_fields(screen: Screen) -> dict[str, Any]:
    return {"screen_hash": screen.screen_hash} | screen.model_dump(mode="json")


def _merge_tool(known: dict[str, Any] | None, update: dict[str, Any]) -> dict[str, Any]:
    """A tool call as last described: ACP sends a call's fields once and then only what changes
    (a permission request names a call the agent announced in a session update)."""
    out = dict(known or {})
    for k, v in update.items():
        if k not in ("sessionUpdate", "sessionId") and v is not None:
            out[k] = v
    return out


class AcpRunner:
    """Supervises one ACP agent as one run (see the module docstring). Use :meth:`run` on an event
    loop; :meth:`request_stop` (a signal) and the run's control requests end it early."""

    def __init__(self, settings: Settings, config: RunConfig, command: list[str], *, cwd: str | None = None,
                 run_id: str | None = None, echo: Callable[[str], None] | None = None, spec: Any = None,
                 spec_path: str | None = None, workdir: str | None = None) -> None:
        self.settings = settings
        self.config = config
        self.policy = config.policy
        self.policy_id = config.policy.policy_id
        self.command = list(command)
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.run_id = run_id or new_id("run_")
        self.pane_id = "acp"
        """What the console shows where a tmux run shows its pane (journal events carry no pane)."""
        self.control = RunControl(settings, self.run_id)
        if not self.control.held:
            self.control.close()
            raise UsageError(f"run {self.run_id} is already supervised by another process", "see `supervisor status`")
        self.journal = Journal(settings.journal_path(self.run_id), self.run_id)
        self.fold = RunFold(recheck_s=self.policy.timing.recheck_s)
        self.fold.state.run_id = self.run_id
        known = agent_from_argv(self.command, self.policy)
        self.agent = "unknown" if is_shell(known) else known
        self.shadows = [_Shadow(p, self.run_id, time.time()) for p in config.shadows]
        self.echo = echo
        self.on_journal: Callable[[Any, Event], None] | None = None
        """Called after every journaled event (the CLI prints answers, pauses, resumes)."""
        self.on_change: Callable[[Event], None] | None = None
        """Called after every journaled event too (the warehouse feeder's poke)."""
        self.outcome: Outcome | None = None
        self.exit_code: int | None = None
        self.end_extra: dict[str, Any] = {}
        self.interrupted = False
        self._acp: Any = None
        self._tools: dict[str, dict[str, Any]] = {}
        self._message = ""
        self._last_output_at = time.time()
        self._last_busy_at = 0.0
        self._prompt: asyncio.Task[None] | None = None
        self._delivery: tuple[str, str, bool] | None = None
        """The task being worked on: (task id, its action id, whether the agent showed it took it)."""
        self._waiting: _Waiting | None = None
        self._permission_lock: asyncio.Lock | None = None
        self._done: asyncio.Event | None = None
        self._stall: asyncio.TimerHandle | None = None
        self._pause_rule: str | None = None
        self._offpane: Any = None
        self._instructions: deque[str] = deque()
        self._wf_loop: asyncio.Task[None] | None = None
        """Workflow instructions waiting for the turn in progress to end."""
        self.spec = spec
        self.spec_path = spec_path
        self.workflow: Any = None
        if spec is not None:
            from supervisor.workflow.controller import WorkflowController
            from supervisor.workflow.notify import NotificationHub, offpane_channels

            self._prompts = _PromptSurface(self._send_instruction)
            self.workflow = WorkflowController(
                spec, self.journal, self._prompts, self.policy, settings, self.run_id, pane_id=self.pane_id,
                cwd=workdir or self.cwd, control=self.control, on_event=self._wf_event,
                hub=NotificationHub(offpane_channels(settings),
                                    record=lambda payload: self.journal.append("notification", payload)))

    # -- journal ----------------------------------------------------------------------------------------
    @property
    def state(self) -> Any:
        return self.fold.state

    @property
    def done(self) -> bool:
        return self.outcome is not None

    def _append(self, kind: Any, payload: dict[str, Any], *, event_id: str | None = None) -> Event | None:
        if self.done:  # nothing follows run_ended (a late callback of an agent being closed)
            log.debug("run %s has ended: %s not journaled", self.run_id, kind)
            return None
        event = self.journal.append(kind, payload, event_id=event_id)
        self.fold.apply(event)
        self._wf_event(event)
        return event

    def _friction(self, kind: FrictionKind, detail: str, seconds_lost: float | None = None, **extra: Any) -> None:
        self._append("friction", Friction(kind=kind, detail=detail, seconds_lost=seconds_lost).model_dump(mode="json")
                     | extra)

    def _say(self, text: str) -> None:
        if self.echo is not None:
            try:
                self.echo(text)
            except Exception:  # noqa: BLE001 - a printer must not stop supervision
                log.warning("echo failed", exc_info=True)

    # -- the run ------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Start the agent, supervise it until the run ends, end the agent."""
        from supervisor.surfaces.acp import AcpAgent

        loop = asyncio.get_running_loop()
        self._done = asyncio.Event()
        self._permission_lock = asyncio.Lock()
        self._start_journal()
        stderr_log = self.settings.home / "logs" / f"acp-{self.run_id}.log"
        try:
            async with AcpAgent(self.command, cwd=self.cwd, stderr_path=stderr_log, on_update=self._on_update,
                                on_permission=self._on_permission) as agent:
                self._acp = agent
                self._append("note", {"type": "acp_started", "agent_pid": agent.pid, "stderr_log": str(stderr_log)})
                watcher = asyncio.create_task(self._watch_exit())
                if self.control.wake_fd is not None:
                    loop.add_reader(self.control.wake_fd, self._on_wake)
                try:
                    if await self._session_or_end():
                        if self.workflow is not None:
                            self._send_instruction(plan_prompt(self.spec, self.run_id))
                            self._wf_loop = asyncio.create_task(self._workflow_loop())
                        elif self.config.task:
                            self.queue_task(self.config.task, source="run --task")
                        self._on_wake()  # requests left before the session was up
                    await self._done.wait()  # every way a run ends comes through end()
                finally:
                    if self.control.wake_fd is not None:
                        loop.remove_reader(self.control.wake_fd)
                    await self._wind_down(watcher)
        except SurfaceError as exc:  # the agent could not even be started
            self._append("note", {"type": "acp_error", "error": exc.one_line()})
            self.end("exited", reason=exc.one_line())
            raise
        finally:
            if self.outcome is None:
                self.end("stopped", reason="supervisor stopped")
            self.journal.close()
            self.control.close()

    async def _wind_down(self, watcher: asyncio.Task[None]) -> None:
        """The run ended (or is ending): answer what waits with "cancelled", stop the turn in flight."""
        if self._stall is not None:
            self._stall.cancel()
        if self._wf_loop is not None:
            self._wf_loop.cancel()
        if self._waiting is not None and not self._waiting.future.done():
            self._waiting.future.cancel()
        turn = self._prompt
        if turn is not None and not turn.done():
            await self._acp.cancel()
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(turn), timeout=2.0)
            turn.cancel()
        if self.outcome is None:
            self.end("stopped", reason="supervisor stopped")
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watcher

    def _start_journal(self) -> None:
        policies = {self.policy_id: self.policy.canonical()}
        for sh in self.shadows:
            policies[sh.policy_id] = sh.policy.canonical()
        self._append("run_started", {
            "run_id": self.run_id, "command": self.command, "surface": "acp", "pane_id": None, "pane_pid": None,
            "session": None, "socket": None, "policy_id": self.policy_id, "policy_name": self.policy.name,
            "shadow_policy_ids": [sh.policy_id for sh in self.shadows], "policies": policies, "agent": self.agent,
            "cwd": self.cwd, "task": self.config.task, "turns": self.config.turns, "exit_on_finish": False,
            "host": socketlib.gethostname(), "pid": os.getpid(), "user": user_name(), "package_version": __version__,
        } | ({"spec_id": self.spec.content_hash, "spec_path": self.spec_path} if self.spec is not None else {}))
        if self.spec is not None:
            self._append("note", {"type": "workflow", "spec_id": self.spec.content_hash, "spec_name": self.spec.name,
                                  "spec_path": self.spec_path, "pane_id": None, "pid": os.getpid()})

    async def _session_or_end(self) -> bool:
        """Open the session, unless the run ends first (stopped, interrupted, the agent gone) or the
        agent takes longer than ``STARTUP_TIMEOUT_S`` (then the run ends with that reason)."""
        assert self._done is not None
        opening = asyncio.create_task(self._open_session())
        ending = asyncio.create_task(self._done.wait())
        try:
            await asyncio.wait({opening, ending}, timeout=STARTUP_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ending.cancel()
        if opening.done():
            return opening.result()
        opening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await opening
        if not self.done:
            reason = f"the agent did not open a session within {STARTUP_TIMEOUT_S:g}s"
            self._append("note", {"type": "acp_error", "error": reason})
            self.end("exited", reason=reason)
        return False

    async def _open_session(self) -> bool:
        """initialize and session/new; on failure the run ends (its exit, or the error escalated)."""
        agent = self._acp
        try:
            info = await agent.initialize()
            named = info.get("agentInfo") or {}
            if self.agent == "unknown" and isinstance(named, dict):
                for guess in (agent_of_command(str(named.get("name") or ""), self.policy),
                              agent_of_title(str(named.get("title") or named.get("name") or ""), self.policy)):
                    if guess != "unknown" and not is_shell(guess):
                        self.agent = guess
                        break
            self._append("note", {"type": "acp_initialized", "agent": self.agent, "agent_info": named,
                                  "protocol_version": info.get("protocolVersion"),
                                  "auth_methods": [m.get("id") for m in info.get("authMethods") or []
                                                   if isinstance(m, dict)]})
            session = await agent.new_session()
        except AgentProtocolError as exc:
            if await self._went_away(exc):
                return False
            obs, decision, _ = self._observe({"event": "error", "code": exc.code, "message": exc.message,
                                              "stderr": agent.stderr_tail()[-1000:]}, trigger="acp:error")
            if decision.kind == "escalate":
                self._pause(decision, obs, next_action=self._blocker_next(decision, retry=False))
            self.end("escalated" if self.state.paused else "exited", reason=exc.one_line())
            return False
        self._append("note", {"type": "acp_session", "session_id": session, "cwd": self.cwd})
        self._observe({"event": "ready", "session_id": session}, trigger="acp:ready")
        if not self.config.task:
            self._say(f"agent ready; hand it a task: supervisor runs task {self.run_id} TEXT")
        return True

    async def _went_away(self, exc: AgentProtocolError) -> bool:
        """Whether a failed request means the agent is gone (then the exit watcher ends the run, or,
        for a connection that closed while the process lingers, this does)."""
        grace = EXIT_GRACE_S if exc.code is None else 0.2
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._acp.wait_exit()), timeout=grace)
        if self._acp.returncode is not None:
            return True
        if exc.code is None:
            self.end("exited", reason=exc.one_line())
            return True
        return False

    async def _watch_exit(self) -> None:
        code = await self._acp.wait_exit()
        await asyncio.sleep(0.05)  # let the last messages it wrote be handled first
        if self.done:
            return
        tail = self._acp.stderr_tail()
        obs, decision, _ = self._observe({"event": "exit", "exit_code": code, "stderr": tail[-2000:],
                                       "message": self._message[-MESSAGE_TAIL:]}, trigger="acp:exit")
        if self._waiting is not None and not self._waiting.future.done():
            self._waiting.future.cancel()
        if decision.kind == "escalate":  # it died of an error a human must fix
            blocker = obs.blocker.model_dump(mode="json") if obs.blocker is not None else None
            self._pause(decision, obs, next_action=decision.next_action or "read the agent's log: "
                        f"{self._acp.stderr_path}")
            self.end_extra = {"blocker": blocker, "next_action": decision.next_action, "rule": decision.rule}
        self.end("exited", exit_code=code, reason=decision.reason)

    def end(self, outcome: Outcome, *, exit_code: int | None = None, reason: str = "") -> None:
        if self.outcome is not None:
            return
        rs = self.state
        self._append("run_ended", {"outcome": outcome, "exit_code": exit_code, "pane_id": None, "surface": "acp",
                                   "reason": reason, "paused": rs.paused, "pause_reason": rs.pause_reason,
                                   "interventions": rs.interventions, "stalls": rs.stalls,
                                   "turns": self.fold.turn - 1} | self.end_extra)
        self.outcome = outcome
        self.exit_code = exit_code
        if self.workflow is not None:
            self.workflow.close()
        if self._offpane is not None:
            self._offpane.close()
        if self._done is not None:
            self._done.set()

    def request_stop(self, why: str = "interrupted") -> None:
        """End the run now (Ctrl-C, SIGTERM): ``escalated`` when paused, else ``stopped``."""
        self.interrupted = why == "interrupted"
        self._append("note", {"type": "stop", "by": why})
        paused = self.state.paused or (self.workflow is not None and self.workflow.paused)
        self.end("escalated" if paused else "stopped", reason=f"supervisor stopped ({why})")

    # -- observing --------------------------------------------------------------------------------------
    def _observe(self, doc: dict[str, Any], *, trigger: str, instance: bool = False, extra: dict[str, Any] | None = None
                 ) -> tuple[Observation, Decision, dict[str, Any] | None]:
        """Journal one ACP message as an observation, decide on it (journaled), let shadows decide.
        With ``instance`` (a permission request) its prompt is a new prompt instance (the live prompt)."""
        now = time.time()
        screen = acp_screen(doc, cwd=self.cwd, agent=self.agent)
        obs = classify(screen, self.policy)
        live = _live(obs, new_instance_id() if instance else None)
        obs_id = new_id()
        obs.observation_id = obs_id
        obs.policy_id = self.policy_id
        self._append("observation", {"observation": obs.model_dump(mode="json"), "surface": "acp", "pane_id": None,
                                     "trigger": trigger, "now": now, "last_output_at": self._last_output_at,
                                     "screen": _screen_fields(screen), "live_prompt": live, "human": None}
                     | (extra or {}), event_id=obs_id)
        decision = decide(obs, self.state, self.policy, policy_id=self.policy_id)
        decision.decision_id = new_id()
        decision.trigger_id = obs_id
        self._append("decision", {"decision": decision.model_dump(mode="json"), "pane_id": None, "now": now},
                     event_id=decision.decision_id)
        self._shadow(screen, now, obs_id, live)
        if self.workflow is not None and obs.checkpoint_blocks:
            self._workflow(lambda wf: wf.on_observation(obs))
        if decision.rule == "stall":
            self._friction("stall", decision.reason, seconds_lost=round(now - self._last_output_at, 3))
        return obs, decision, live

    def _shadow(self, screen: Screen, now: float, obs_id: str, live: dict[str, Any] | None) -> None:
        for sh in self.shadows:
            try:
                obs, d, slive = sh.step(screen, now, self._last_output_at, live["instance_id"] if live else None)
            except Exception as exc:  # noqa: BLE001 - a broken candidate must not stop a live run
                log.warning("shadow policy %s failed: %s", sh.policy_id, exc)
                self._append("note", {"shadow_policy_id": sh.policy_id, "error": f"{type(exc).__name__}: {exc}"})
                continue
            d.decision_id = new_id()
            d.trigger_id = obs_id
            self._append("shadow_decision", shadow_decision_payload(
                d, obs, live=slive is not None, shadow_policy_id=sh.policy_id, acting_policy_id=self.policy_id,
                pane_id=None, now=now), event_id=d.decision_id)

    def _heard(self) -> None:
        """The agent said something: it is alive (the stall clock restarts)."""
        self._last_output_at = time.time()
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        if self._prompt is not None and not self.done:
            delay = self.policy.timing.stall_timeout_s * (1 + min(self.state.stalls, self.policy.budgets.max_stalls))
            self._stall = asyncio.get_running_loop().call_later(delay, self._stall_check)

    def _stall_check(self) -> None:
        self._stall = None
        if self.done or self._prompt is None or self._waiting is not None:
            return
        obs, decision, _ = self._observe({"event": "update", "update": "silence",
                                       "message": self._message[-MESSAGE_TAIL:]}, trigger="timer")
        if decision.kind == "escalate":
            self._pause(decision, obs, next_action=f"the agent has said nothing for a while: wait, or stop it: "
                                                   f"supervisor runs stop {self.run_id}")
        delay = self.policy.timing.stall_timeout_s
        self._stall = asyncio.get_running_loop().call_later(delay, self._stall_check)

    def _resume_on_progress(self) -> None:
        """A stall's pause ends when the agent speaks again."""
        if self.state.paused and self._waiting is None and self.fold.pause_kind == "prompt" \
                and self._pause_rule == "stall":
            self._append("resume", {"by": "blocker_cleared", "was": self.state.pause_reason, "pane_id": None,
                                    "waited_s": round(time.time() - (self.fold.paused_at or time.time()), 3),
                                    "human_keys": [], "selected": None, "signature": self.fold.pause_signature})

    # -- the agent's messages ------------------------------------------------------------------------------
    async def _on_update(self, update: dict[str, Any]) -> None:
        if self.done:
            return
        kind = str(update.get("sessionUpdate") or "")
        tool = None
        if kind in ("tool_call", "tool_call_update") and isinstance(update.get("toolCallId"), str):
            tool = self._tools[update["toolCallId"]] = _merge_tool(self._tools.get(update["toolCallId"]), update)
            if self._message and not self._message.endswith("\n"):
                self._message += "\n"  # the agent's next message starts a line of its own
        elif kind == "agent_message_chunk":
            content = update.get("content")
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                self._message = (self._message + content["text"])[-8 * MESSAGE_TAIL:]
        if kind in QUIET_UPDATES or self._prompt is None:
            if kind == "current_mode_update":
                self._append("note", {"type": "acp_mode", "mode": update.get("currentModeId")})
            return
        self._heard()
        self._took_task("the agent is working on it")
        self._resume_on_progress()
        status = (tool or {}).get("status")
        meaningful = kind == "tool_call" or kind == "plan" or (kind == "tool_call_update" and status in
                                                               ("completed", "failed"))
        now = time.time()
        if not meaningful and now - self._last_busy_at < BUSY_JOURNAL_EVERY_S:
            return
        self._last_busy_at = now
        doc: dict[str, Any] = {"event": "update", "update": kind, "message": self._message[-MESSAGE_TAIL:]}
        if tool is not None:
            doc["tool_call"] = {k: tool.get(k) for k in ("toolCallId", "kind", "title", "status", "locations")
                                if tool.get(k) is not None}
            if kind == "tool_call":
                self._say(f"tool: {clip(str(tool.get('title') or tool.get('kind') or ''), 160)}")
        if kind == "plan":
            doc["plan"] = update.get("entries")
        self._observe(doc, trigger=f"acp:{kind}")

    async def _on_permission(self, request: dict[str, Any]) -> str | None:
        assert self._permission_lock is not None
        async with self._permission_lock:  # one request decided (or waiting for a human) at a time
            if self.done:
                return None
            return await self._permission(request)

    async def _permission(self, request: dict[str, Any]) -> str | None:
        self._heard()
        self._took_task("the agent asked permission for a tool")
        self._resume_on_progress()
        raw_call = request.get("toolCall")
        call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
        tid = call.get("toolCallId")
        tool = _merge_tool(self._tools.get(tid) if isinstance(tid, str) else None, call)
        if isinstance(tid, str):
            self._tools[tid] = tool
        options = [o for o in request.get("options") or [] if isinstance(o, dict)]
        obs, decision, live = self._observe({"event": "permission", "session_id": request.get("sessionId"),
                                             "tool_call": tool, "options": options},
                                            trigger="acp:request_permission", instance=True,
                                            extra={"acp": {"tool_call_id": tid}})
        prompt = obs.prompt
        if decision.kind == "answer" and prompt is not None and live is not None:
            option = selected_option(prompt, decision.keys)
            if option is not None and option.key:
                self._send_answer(decision, live, option.key, prompt)
                self._say(f"approved: {clip(prompt.question, 120)} -> {option.label}" if decision.approves
                          else f"answered: {clip(prompt.question, 120)} -> {option.label}")
                return option.key
        if decision.kind != "escalate":
            decision = decision.model_copy(update={
                "kind": "escalate", "reason": f"{decision.reason}; a permission request cannot wait, so a human "
                                              "answers it"})
        waiting = self._escalate_request(decision, obs, options)
        try:
            chosen, request_id, by = await waiting.future
        except asyncio.CancelledError:
            return None  # the run is ending (or the agent went away): the request is cancelled
        finally:
            self._waiting = None
        now = time.time()
        option_id = str(chosen.get("optionId"))
        self._append("resume", {"by": "human", "was": waiting.reason, "waited_s": round(now - waiting.paused_at, 3),
                                "human_keys": [option_id], "selected": chosen.get("name"), "pane_id": None,
                                "signature": waiting.signature, "request_id": request_id, "answered_by": by})
        action = Action(action_id=new_id(), decision_id=None, kind="send_keys", keys=[option_id], delivered=True,
                        confirmed=True)
        self._append("action", action.model_dump(mode="json") | {"option_id": option_id, "by": "human",
                                                                  "request_id": request_id, "surface": "acp"})
        self._say(f"answered by {by}: {clip(prompt.question if prompt else '', 120)} -> {chosen.get('name')}")
        return option_id

    def _send_answer(self, decision: Decision, live: dict[str, Any], option_id: str, prompt: Prompt) -> None:
        """Journal our answer: intent, delivered, confirmed (the response goes out as the handler returns)."""
        action = Action(action_id=new_id(), decision_id=decision.decision_id, kind="send_keys", keys=[option_id])
        extra = {"instance_id": live["instance_id"], "signature": live["signature"], "retry": False,
                 "option_id": option_id, "surface": "acp"}
        self._append("action", action.model_dump(mode="json") | extra)
        self._append("action", action.model_copy(update={"delivered": True}).model_dump(mode="json") | extra)
        self._append("action", action.model_copy(update={"delivered": True, "confirmed": True}).model_dump(mode="json")
                     | extra)

    def _escalate_request(self, decision: Decision, obs: Observation, options: list[dict[str, Any]]) -> _Waiting:
        signature = decision.signature or (obs.prompt.signature if obs.prompt is not None else "")
        listed = describe_options(options) or "(none offered)"
        next_action = (f"answer it from any shell: supervisor runs answer {self.run_id} OPTION "
                       f"(OPTION: {clip(listed, 300)})")
        reason = self._pause(decision, obs, next_action=next_action, options=options)
        loop = asyncio.get_running_loop()
        self._waiting = _Waiting(loop.create_future(), options, signature, time.time(), reason)
        return self._waiting

    def _pause(self, decision: Decision, obs: Observation, *, next_action: str | None,
               options: list[dict[str, Any]] | None = None) -> str:
        """Journal the pause (and its friction and notification); returns the reason given."""
        risk = obs.prompt.risk if obs.prompt is not None else None
        danger = ""
        if risk is not None and risk.level == "dangerous" and not all(m in decision.reason for m in risk.matched):
            danger = f" [dangerous: {', '.join(risk.matched) or risk.subject or 'per policy'}]"
        reason = decision.reason + danger
        nxt = next_action or decision.next_action or f"see supervisor runs why {self.run_id}"
        self._pause_rule = decision.rule
        self._append("pause", {"pause_reason": reason, "next_action": nxt, "pane_id": None, "surface": "acp",
                               "rule": decision.rule, "state": obs.state,
                               "risk": risk.model_dump(mode="json") if risk is not None else None,
                               "blocker": obs.blocker.model_dump(mode="json") if obs.blocker is not None else None,
                               "signature": decision.signature or (obs.prompt.signature if obs.prompt else None),
                               "decision_id": decision.decision_id, "observation_id": obs.observation_id}
                     | ({"options": options} if options is not None else {}))
        self._friction("escalation", reason)
        self._notify(f"paused: {reason}", nxt)
        return reason

    def _notify(self, title: str, next_action: str) -> None:
        from supervisor.workflow.notify import Notification, NotificationHub, offpane_channels

        if self._offpane is None:
            self._offpane = NotificationHub(offpane_channels(self.settings),
                                            record=lambda payload: self._append("notification", payload))
        self._offpane.notify(Notification(run_id=self.run_id, pane_id=None, kind="escalation", title=clip(title, 200),
                                          body=title, next_action=next_action))

    def _blocker_next(self, decision: Decision, *, retry: bool) -> str:
        what = (decision.next_action or "fix what the agent reported").split(", then ")[0]
        if retry:
            return f"{what}, then hand the task again: supervisor runs task {self.run_id} TEXT"
        return f"{what}, then start the run again"

    # -- tasks ---------------------------------------------------------------------------------------------
    def queue_task(self, text: str, *, source: str, request_id: str | None = None) -> str:
        tid = new_id("task_")
        self._append("task", {"task_id": tid, "text": text, "status": "queued", "source": source,
                              "request_id": request_id})
        self._next_task()
        return tid

    def _next_task(self) -> None:
        """Send the next queued task as a prompt when no turn is in progress."""
        if self.done or self._prompt is not None or self._acp is None or self._acp.session_id is None:
            return
        if self._instructions:  # a workflow instruction (journaled by the controller as a handoff)
            self._message = ""
            self._delivery = None
            text = self._instructions.popleft()
            self._prompt = asyncio.get_running_loop().create_task(self._run_prompt(None, text, None))
            self._heard()
            return
        queued = self.fold.queued_tasks
        if not queued:
            return
        task = queued[0]
        if self.state.paused and self._waiting is None:
            # A blocker or a stall paused the run: handing over a new task is the human's answer.
            self._append("resume", {"by": "human", "was": self.state.pause_reason, "pane_id": None,
                                    "waited_s": round(time.time() - (self.fold.paused_at or time.time()), 3),
                                    "human_keys": [], "selected": None, "signature": self.fold.pause_signature,
                                    "note": "a new task was handed over"})
        aid = new_id()
        base = {"action_id": aid, "decision_id": None, "kind": "task", "task_id": task.task_id, "phase": "submit",
                "text": task.text, "surface": "acp"}
        self._append("action", base | {"delivered": False})
        self._message = ""
        self._delivery = (task.task_id, aid, False)
        self._prompt = asyncio.get_running_loop().create_task(self._run_prompt(task.task_id, task.text, aid))
        self._append("action", base | {"delivered": True})
        self._heard()

    def _took_task(self, why: str) -> None:
        """The agent shows it took the task (its first update, request or answer): confirm it once."""
        d = self._delivery
        if d is None or d[2]:
            return
        self._delivery = (d[0], d[1], True)
        self._append("action", {"action_id": d[1], "kind": "task", "task_id": d[0], "phase": "submit",
                                "delivered": True, "confirmed": True, "note": why, "surface": "acp"})
        self._append("task", {"task_id": d[0], "status": "started", "why": why})

    async def _run_prompt(self, task_id: str | None, text: str, action_id: str | None) -> None:
        try:
            stop = await self._acp.prompt(text)
        except AgentProtocolError as exc:
            self._prompt = None
            if not self.done and not await self._went_away(exc):
                self._turn_failed(task_id, action_id, exc)
            return
        self._prompt = None
        if not self.done:
            self._turn_ended(stop)

    def _turn_ended(self, stop_reason: str) -> None:
        self._took_task("the agent answered the prompt")
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        obs, decision, _ = self._observe({"event": "turn_end", "stop_reason": stop_reason,
                                       "message": self._message[-MESSAGE_TAIL:]}, trigger="acp:turn_end")
        fold = self.fold
        task = fold.current_task
        now = time.time()
        payload: dict[str, Any] = {"turn": fold.turn, "started_at": fold.turn_started_at,
                                   "duration_s": round(now - fold.turn_started_at, 3), "prompts": fold.turn_prompts,
                                   "answered": fold.turn_answered, "escalated": fold.turn_escalated,
                                   "decision_id": decision.decision_id, "stop_reason": stop_reason, "pane_id": None}
        if task is not None:
            payload |= {"task": task.text, "task_id": task.task_id}
        self._delivery = None
        if self._message.strip():
            said = clip(self._message.strip(), 1200).replace("\n", "\n       ")  # its line breaks kept, indented
            self._say(f"agent: {said}")
        self._append("turn_finished", payload)
        if self.workflow is not None:
            self._workflow_turn_ended(decision.decision_id)
            return
        cfg = self.config
        tasks_done = fold.run_task and not fold.queued_tasks and fold.current_task is None
        turns_done = cfg.turns is not None and fold.turn - 1 >= cfg.turns
        if tasks_done or turns_done:
            self.end("finished", reason="the task is finished" if tasks_done else f"{cfg.turns} turn(s) finished")
            return
        self._next_task()

    def _turn_failed(self, task_id: str | None, action_id: str | None, exc: AgentProtocolError) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        self._delivery = None
        if task_id is not None:  # (a workflow instruction's failure shows as the error's blocker)
            self._append("action", {"action_id": action_id, "kind": "task", "task_id": task_id, "phase": "submit",
                                    "delivered": True, "confirmed": False, "note": exc.message, "surface": "acp"})
            self._append("task", {"task_id": task_id, "status": "failed", "why": exc.message})
        obs, decision, _ = self._observe({"event": "error", "code": exc.code, "message": exc.message,
                                          "stderr": self._acp.stderr_tail()[-1000:]}, trigger="acp:error")
        if decision.kind == "escalate":
            self._pause(decision, obs, next_action=self._blocker_next(decision, retry=True))
        else:
            self._next_task()

    # -- the workflow (--spec) ---------------------------------------------------------------------------------
    def _send_instruction(self, text: str) -> None:
        self._instructions.append(text)
        if self._acp is not None and self._acp.session_id is not None:
            self._next_task()

    def _wf_event(self, event: Event) -> None:
        """Tell the printer and the journal hook about an event (the run's own and the workflow's)."""
        try:
            if self.on_change is not None:
                self.on_change(event)
            if self.on_journal is not None:
                self.on_journal(self, event)
        except Exception as exc:  # noqa: BLE001 - a printer must not stop supervision
            log.warning("journal hook failed: %s", exc)

    def _workflow(self, call: Callable[[Any], Any]) -> None:
        """Run one controller call; nothing an agent prints may crash the supervisor."""
        if self.workflow is None or self.done:
            return
        try:
            call(self.workflow)
        except Exception as exc:  # noqa: BLE001
            self._append("note", {"type": "workflow_error", "error": f"{type(exc).__name__}: {exc}"[:500]})
        wf = self.workflow
        if wf.finished:
            self.end("finished", reason="workflow finished: acceptance holds")
        elif wf.stop_requested:
            self.end("escalated" if wf.paused or self.state.paused else "stopped", reason="stop requested")

    def _workflow_turn_ended(self, decision_id: str | None) -> None:
        """A turn ended: its whole message goes to the controller (a checkpoint block longer than an
        observation keeps); then the next instruction, or, when the plan waits on an agent that
        stopped without reporting, the controller escalates."""
        message = self._message
        self._workflow(lambda wf: wf.on_output(message, "output"))
        if self.done:
            return
        if self._instructions:
            self._next_task()
        else:
            self._workflow(lambda wf: wf.agent_idle(decision_id))

    async def _workflow_loop(self) -> None:
        """Collect verifier results and control requests while the run lasts."""
        while not self.done:
            self._workflow(lambda wf: wf.tick())
            busy = self.workflow is not None and self.workflow.busy()
            await asyncio.sleep(0.2 if busy else 1.0)

    # -- requests from other processes (supervisor runs answer|task|stop|resume) ----------------------------
    def _on_wake(self) -> None:
        if self.done:
            return
        self.control.drain_wake()
        for req in self.control.requests():
            try:
                self._handle_request(req)
            finally:
                self.control.done(req)
            if self.done:
                return

    def _ignore(self, req: dict[str, Any], why: str) -> None:
        self._append("note", {"type": "request_ignored", "request_id": req.get("request_id"),
                              "request": req.get("type"), "why": why})

    def _handle_request(self, req: dict[str, Any]) -> None:
        kind, rid = req.get("type"), req.get("request_id")
        if self.workflow is not None and (kind == "review" or kind in ("stop", "resume") and self._waiting is None
                                          and not self.state.paused):
            # the workflow's finish gate, its pause, its stop (a permission request's pause stays the runner's)
            self.workflow.take_request(req)
            self._workflow(lambda wf: wf.tick())
            return
        if kind == "answer":
            w = self._waiting
            if w is None or w.future.done():
                self._ignore(req, "no permission request is waiting for an answer")
                return
            if req.get("signature") and req["signature"] != w.signature:
                self._ignore(req, "the request it answered is gone; another one waits: "
                                  f"{clip(w.reason, 200)} (options: {describe_options(w.options)})")
                return
            chosen = pick_option(w.options, str(req.get("option") or ""))
            if chosen is None:
                self._ignore(req, f"no single option matches {str(req.get('option'))[:80]!r}; offered: "
                                  f"{describe_options(w.options)}")
                return
            w.future.set_result((chosen, rid, str(req.get("by") or "human")))
        elif kind == "task" and isinstance(req.get("text"), str) and req["text"].strip():
            self.queue_task(req["text"], source="runs task", request_id=rid)
        elif kind == "stop":
            self._append("note", {"type": "stop", "by": req.get("by") or "human", "note": req.get("note", ""),
                                  "request_id": rid})
            self.end("escalated" if self.state.paused else "stopped", reason="stopped by `supervisor runs stop`")
        elif kind == "resume":
            if self._waiting is not None:
                self._ignore(req, "a permission request waits for an answer: supervisor runs answer "
                                  f"{self.run_id} OPTION ({describe_options(self._waiting.options)})")
            elif self.state.paused:
                self._append("resume", {"by": "supervisor", "request_id": rid, "was": self.state.pause_reason,
                                        "pane_id": None, "signature": self.fold.pause_signature,
                                        "waited_s": round(time.time() - (self.fold.paused_at or time.time()), 3),
                                        "human_keys": [], "selected": None})
            else:
                self._ignore(req, "the run is not paused")
        else:
            self._ignore(req, req.get("error") or "an ACP run does not take that request")
