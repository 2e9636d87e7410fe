"""Verifiers: what the supervisor checks itself before believing "done".

``command`` runs a shell command in the run's working directory with a timeout (its whole
process group is killed on timeout), captures, truncates and redacts the output; ``artifact``
checks a path; ``git`` checks the repository; ``workflow`` and ``passed`` check the run's own
state. :class:`VerifierPool` runs them on worker threads so a slow verifier never stops the
supervision of other panes: results come back through a callback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from supervisor.redact import redact
from supervisor.workflow.spec import (
    ArtifactVerifier,
    CommandVerifier,
    GitVerifier,
    PassedVerifier,
    WorkflowVerifier,
)
from supervisor.workflow.state import VerifierResult, WorkflowState

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 8000
"""Characters of command output kept (head and tail, the middle elided)."""


def truncate(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return text[:head] + f"\n… [{len(text) - limit} characters elided] …\n" + text[-tail:]


def _result(v: Any, passed: bool, detail: str, **kw: Any) -> VerifierResult:
    return VerifierResult(verifier=v.id, type=v.type, passed=passed, detail=detail, **kw)


def run_command(v: CommandVerifier, cwd: Path, procs: set[subprocess.Popen[bytes]] | None = None) -> VerifierResult:
    where = (cwd / v.cwd) if v.cwd else cwd
    start = time.monotonic()
    try:
        proc = subprocess.Popen(["bash", "-c", v.run], cwd=where, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        return _result(v, False, f"cannot start `{v.run}` in {where}: {exc}", cwd=str(where))
    if procs is not None:
        procs.add(proc)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=v.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    finally:
        if procs is not None:
            procs.discard(proc)
    duration = time.monotonic() - start
    text = redact(truncate(out.decode("utf-8", "replace")))
    code = proc.returncode
    if timed_out:
        passed, detail = False, f"`{v.run}` timed out after {v.timeout_s:g}s"
    elif v.expect == "pass":
        passed, detail = code == 0, f"`{v.run}` exited {code} (expected 0)"
    elif v.expect == "fail":
        passed, detail = code != 0, f"`{v.run}` exited {code} (expected non-zero)"
    else:
        needle = v.expect.removeprefix("contains:")
        passed = needle in out.decode("utf-8", "replace")
        detail = f"output of `{v.run}` {'contains' if passed else 'does not contain'} {needle!r}"
    return _result(v, passed, detail, output=text, exit_code=code, timed_out=timed_out,
                   duration_s=round(duration, 3), cwd=str(where))


def run_artifact(v: ArtifactVerifier, cwd: Path) -> VerifierResult:
    p = cwd / v.path
    exists = p.exists()
    if not v.exists:
        return _result(v, not exists, f"{v.path} {'exists' if exists else 'does not exist'} (expected absent)")
    if not exists:
        return _result(v, False, f"{v.path} does not exist")
    if v.contains is not None:
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except (IsADirectoryError, OSError) as exc:
            return _result(v, False, f"cannot read {v.path}: {exc}")
        ok = v.contains in text
        return _result(v, ok, f"{v.path} {'contains' if ok else 'does not contain'} {v.contains!r}")
    return _result(v, True, f"{v.path} exists")


def _git(cwd: Path, *args: str) -> tuple[int, str]:
    try:
        p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 127, "git is not installed"
    except subprocess.TimeoutExpired:
        return 124, f"git {' '.join(args)} timed out"
    return p.returncode, (p.stdout + p.stderr).strip()


def run_git(v: GitVerifier, cwd: Path) -> VerifierResult:
    code, out = _git(cwd, "rev-parse", "--is-inside-work-tree")
    if code != 0:
        return _result(v, False, f"{cwd} is not a git repository ({out.splitlines()[0] if out else code})")
    if v.check in ("clean", "dirty"):
        code, out = _git(cwd, "status", "--porcelain")
        if code != 0:
            return _result(v, False, f"git status failed: {out}")
        dirty = bool(out.strip())
        ok = dirty if v.check == "dirty" else not dirty
        detail = "working tree is dirty" if dirty else "working tree is clean"
        return _result(v, ok, detail, output=redact(truncate(out)))
    if v.check == "branch":
        code, out = _git(cwd, "rev-parse", "--abbrev-ref", "HEAD")
        ok = code == 0 and out.strip() == v.branch
        return _result(v, ok, f"on branch {out.strip()!r} (expected {v.branch!r})")
    if v.check == "commits_ahead":
        code, out = _git(cwd, "rev-list", "--count", f"{v.base}..HEAD")
        if code != 0:
            return _result(v, False, f"cannot count commits since {v.base}: {out}")
        n = int(out.strip() or 0)
        return _result(v, n >= v.min, f"{n} commit(s) ahead of {v.base} (need {v.min})")
    # file_changed
    assert v.path is not None
    changed: set[str] = set()
    code, out = _git(cwd, "status", "--porcelain", "--untracked-files=all")
    if code == 0:
        for line in out.splitlines():
            name = line[3:].split(" -> ")[-1].strip().strip('"')
            changed.add(name)
    if v.base:
        code, out = _git(cwd, "diff", "--name-only", f"{v.base}...HEAD")
        if code == 0:
            changed.update(x.strip() for x in out.splitlines() if x.strip())
    ok = v.path in changed or any(c.startswith(v.path.rstrip("/") + "/") for c in changed)
    return _result(v, ok, f"{v.path} {'changed' if ok else 'did not change'}"
                   + (f" since {v.base}" if v.base else " (uncommitted)"))


def run_workflow(v: WorkflowVerifier, state: WorkflowState | None) -> VerifierResult:
    status = state.node(v.require_node_done).status if state else "pending"
    return _result(v, status == "done", f"node {v.require_node_done} is {status}")


def run_passed(v: PassedVerifier, state: WorkflowState | None) -> VerifierResult:
    r = state.results.get(v.verifier) if state else None
    ok = bool(r and r.passed)
    return _result(v, ok, f"verifier {v.verifier} {'passed' if ok else 'has not passed'}")


def run_verifier(v: Any, cwd: Path | str, state: WorkflowState | None = None, *,
                 procs: set[subprocess.Popen[bytes]] | None = None) -> VerifierResult:
    """Run one verifier now (blocking) and return its result; never raises on bad input."""
    cwd = Path(cwd)
    try:
        if isinstance(v, CommandVerifier):
            return run_command(v, cwd, procs)
        if isinstance(v, ArtifactVerifier):
            return run_artifact(v, cwd)
        if isinstance(v, GitVerifier):
            return run_git(v, cwd)
        if isinstance(v, WorkflowVerifier):
            return run_workflow(v, state)
        if isinstance(v, PassedVerifier):
            return run_passed(v, state)
    except Exception as exc:  # a verifier must report, not crash the supervisor
        return VerifierResult(verifier=getattr(v, "id", "?"), type=getattr(v, "type", "?"), passed=False,
                              detail=f"verifier crashed: {type(exc).__name__}: {exc}")
    return VerifierResult(verifier=getattr(v, "id", "?"), type=getattr(v, "type", "?"), passed=False,
                          detail="unknown verifier type")


class VerifierPool:
    """Runs verifiers on worker threads. Shared by every pane a supervisor watches."""

    def __init__(self, workers: int = 4) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verifier")
        self._lock = threading.Lock()
        self._closed = False
        self._procs: set[subprocess.Popen[bytes]] = set()
        """Commands running now (killed by ``close``)."""

    def submit(self, v: Any, cwd: Path | str, state: WorkflowState | None,
               callback: Callable[[VerifierResult], None]) -> Future[VerifierResult]:
        """Start ``v``; ``callback(result)`` runs on the worker thread when it is done."""
        snapshot = state.model_copy(deep=True) if state is not None else None

        def work() -> VerifierResult:
            r = run_verifier(v, cwd, snapshot, procs=self._procs)
            try:
                callback(r)
            except Exception:  # noqa: BLE001 - the callback's failure must not kill the worker
                log.exception("verifier %s's result callback failed", r.verifier)
            return r

        with self._lock:
            if self._closed:
                raise RuntimeError("verifier pool is closed")
            return self._pool.submit(work)

    def close(self, wait: bool = False) -> None:
        with self._lock:
            self._closed = True
        if not wait:
            for proc in list(self._procs):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        self._pool.shutdown(wait=wait, cancel_futures=True)
