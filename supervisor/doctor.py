"""`supervisor doctor`: is this machine ready to supervise? One check per part, each with the fix.

Checks, in the order a problem would bite: the tmux binary, the tmux server on the configured
socket, tmux control mode (what the supervisor listens with), the home folder, the warehouse, the
policy a new run would use, runs whose supervisor is gone, and the optional judge's key. A check
is ``ok``, ``warn`` (works, but something to know) or ``fail`` (supervision would not work).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from typing import Any, Literal

from supervisor.settings import Settings

Status = Literal["ok", "warn", "fail"]
MIN_TMUX = (3, 0)
"""Control mode's ``%output`` events and the formats the surface reads need tmux 3.0 or newer."""


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tmux_args(settings: Settings) -> list[str]:
    return ["tmux", *(["-L", settings.tmux_socket] if settings.tmux_socket else [])]


def _label(settings: Settings) -> str:
    return " ".join(_tmux_args(settings))


def check_tmux_binary() -> Check:
    path = shutil.which("tmux")
    if path is None:
        return Check("tmux", "fail", "tmux is not installed", "install tmux 3.0 or newer (apt-get install tmux)")
    out = subprocess.run(["tmux", "-V"], capture_output=True, text=True, timeout=10).stdout.strip()
    m = re.search(r"(\d+)\.(\d+)", out)
    version = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if version < MIN_TMUX:
        return Check("tmux", "fail", f"{out or 'tmux'} at {path} is too old",
                     f"install tmux {MIN_TMUX[0]}.{MIN_TMUX[1]} or newer")
    return Check("tmux", "ok", f"{out} at {path}")


def check_tmux_server(settings: Settings) -> Check:
    r = subprocess.run([*_tmux_args(settings), "list-sessions", "-F", "#{session_name}"], capture_output=True,
                       text=True, timeout=10)
    if r.returncode != 0:
        err = (r.stderr.strip().splitlines() or [""])[0]
        if "no server running" in err or "error connecting" in err or "No such file" in err:
            return Check("tmux server", "warn", f"no tmux server on `{_label(settings)}` yet",
                         "start your agent in tmux (or `supervisor run -- AGENT`); pass --socket NAME for another "
                         "server")
        return Check("tmux server", "fail", f"`{_label(settings)} list-sessions` failed: {err}",
                     "check the socket's permissions, or pass --socket NAME")
    sessions = [s for s in r.stdout.splitlines() if s]
    return Check("tmux server", "ok", f"`{_label(settings)}` answers: {len(sessions)} session(s)")


def check_control_mode(settings: Settings, timeout_s: float = 10.0) -> Check:
    """A control-mode client gets ``%begin``/``%end`` framed replies: what the supervisor listens with.
    Its stdin stays open until the reply is read (at end of input a client may leave before replying)."""
    import selectors
    import time

    proc = subprocess.Popen([*_tmux_args(settings), "-C", "list-sessions"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b""
    deadline = time.monotonic() + timeout_s
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while b"%end" not in out and b"%error" not in out and time.monotonic() < deadline:
            if not sel.select(deadline - time.monotonic()):
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err_b = proc.stderr.read() if proc.stderr is not None else b""
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    text, err = out.decode(errors="replace"), err_b.decode(errors="replace")
    if "%begin" in text and "%end" in text:
        return Check("control mode", "ok", "tmux control mode answers (output events, no polling)")
    if "no server running" in err or "error connecting" in err:
        return Check("control mode", "warn", "not checked: no tmux server", "start one, then run doctor again")
    if "%end" not in text and time.monotonic() >= deadline:
        return Check("control mode", "fail", f"a tmux control-mode client did not answer in {timeout_s:g} s",
                     "restart the tmux server, or supervise with `--poll 0.5`")
    return Check("control mode", "fail", f"no control-mode reply ({(err or text).strip()[:120]})",
                 "supervise with `--poll 0.5` (capture-pane polling) or update tmux")


def check_home(settings: Settings) -> Check:
    from supervisor.errors import SupervisorError

    try:
        settings.ensure()
        with tempfile.NamedTemporaryFile(dir=settings.journals_dir, prefix=".doctor-", delete=True) as fh:
            fh.write(b"ok\n")
            fh.flush()
            os.fsync(fh.fileno())
    except (SupervisorError, OSError) as exc:
        detail = exc.one_line() if isinstance(exc, SupervisorError) else str(exc)
        return Check("home", "fail", f"{settings.home} is not writable: {detail}",
                     "point --home (or SUPERVISOR_HOME) at a writable folder")
    usage = shutil.disk_usage(settings.home)
    free_mb = usage.free / 2**20
    if free_mb < 100:
        return Check("home", "warn", f"{settings.home}: only {free_mb:.0f} MB free",
                     "free some disk space: journals are written before every action")
    return Check("home", "ok", f"{settings.home} is writable ({free_mb / 1024:.1f} GB free)")


def check_warehouse(settings: Settings) -> Check:
    from supervisor.errors import SupervisorError, WarehouseLocked
    from supervisor.warehouse import open_warehouse

    if not settings.warehouse.exists():
        return Check("warehouse", "ok", f"{settings.warehouse} will be created at the first sync")
    try:
        with open_warehouse(settings.warehouse, read_only=True) as wh:
            runs = wh.con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    except WarehouseLocked as exc:
        return Check("warehouse", "warn", exc.one_line(), "runs keep journaling; it is ingested when released")
    except SupervisorError as exc:
        return Check("warehouse", "fail", exc.message, exc.fix or "")
    return Check("warehouse", "ok", f"{settings.warehouse}: {runs} run(s)")


def check_policy(settings: Settings) -> Check:
    from supervisor.errors import SupervisorError

    try:
        if settings.policy_path is not None:
            from supervisor.policy import load_policy

            pol = load_policy(settings.policy_path)
        else:
            from evals.registry import policies_for_new_run

            pol = policies_for_new_run(settings, None).acting
    except SupervisorError as exc:
        return Check("policy", "fail", exc.message, exc.fix or "")
    return Check("policy", "ok", f"new runs use {pol.name} ({pol.policy_id})")


def check_orphans(settings: Settings) -> Check:
    from supervisor.lifecycle import unended_runs

    lost = [r.run_id for r in unended_runs(settings) if not r.live]
    if lost:
        return Check("runs", "warn", f"{len(lost)} run(s) lost their supervisor: {', '.join(lost[:3])}"
                     + (" ..." if len(lost) > 3 else ""), "continue one with `supervisor runs resume RUN_ID`")
    live = [r.run_id for r in unended_runs(settings) if r.live]
    return Check("runs", "ok", f"{len(live)} run(s) supervised now")


def check_judge() -> Check:
    if os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        where = os.environ.get("ANTHROPIC_BASE_URL") or "api.anthropic.com"
        return Check("judge", "ok", f"a model key is set ({where}): the judge and `oracle consult` can call it")
    return Check("judge", "ok", "no model key: rules only (the judge is off by default); `oracle consult` "
                                "falls back to a self-review checklist")


def check_notifications(settings: Settings) -> Check:
    """The channels a pause would reach away from the pane: the JSONL file, the webhook, plugins."""
    from supervisor.plugins import load_notifier_plugins

    names = ["jsonl"]
    if os.environ.get("SUPERVISOR_WEBHOOK_URL") and os.environ.get("SUPERVISOR_WEBHOOK_SECRET"):
        names.append("webhook")
    _, statuses = load_notifier_plugins(settings)
    broken = [s for s in statuses if s.problem]
    names += [s.channel for s in statuses if s.channel]
    idle = [s.name for s in statuses if not s.problem and not s.channel]
    detail = f"channels: {', '.join(names)}" + (f"; plugins not configured: {', '.join(idle)}" if idle else "")
    if broken:
        return Check("notifications", "fail", detail + "; " + "; ".join(f"plugin {b.name} ({b.value}): {b.problem}"
                                                                        for b in broken),
                     "fix the plugin's configuration or uninstall it")
    return Check("notifications", "ok", detail)


def send_test_notification(settings: Settings) -> list[Check]:
    """Send one ``info`` notification through every off-pane channel; one check per channel."""
    from supervisor.workflow.notify import Notification, offpane_channels

    n = Notification(kind="info", title="paneward test notification",
                     body="`supervisor doctor --send-test` checks that this channel reaches you.")
    out = []
    for ch in offpane_channels(settings):
        try:
            ok = bool(ch.send(n))
        except Exception as exc:  # noqa: BLE001 - a broken channel is what this reports
            ok = False
            detail = f"raised {type(exc).__name__}: {exc}"
        else:
            detail = "sent" if ok else "not delivered"
        close = getattr(ch, "close", None)
        if callable(close):
            close()
        if getattr(ch, "asynchronous", False) and ok:
            detail = "queued (delivery is reported in the notifications file)"
        out.append(Check(f"send {ch.channel}", "ok" if ok else "fail", detail,
                         "" if ok else "check the channel's URL and credentials"))
    return out


def run_checks(settings: Settings) -> list[Check]:
    tmux = check_tmux_binary()
    checks = [tmux]
    if tmux.status != "fail":
        checks += [check_tmux_server(settings), check_control_mode(settings)]
    checks += [check_home(settings), check_warehouse(settings), check_policy(settings), check_orphans(settings),
               check_judge(), check_notifications(settings)]
    return checks
