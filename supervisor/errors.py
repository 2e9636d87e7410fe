"""One exceptions module. Every error carries its context and the fix, and the CLI
prints it as one line with no traceback.

Exit codes (documented in the README):

====  =====================================================================
0     success (for ``run``: the agent finished)
1     a check failed (gate HOLD/REJECT, eval failures, verifier failed)
2     bad usage or bad input (arguments, spec, policy, suite, screen file)
3     the environment is not usable (tmux missing or dead, pane missing)
4     the warehouse is locked or unusable
5     the run ended paused / escalated and needs a human
6     the agent exited (pane dead) before finishing
70    an unexpected internal error (a bug: ``SUPERVISOR_DEBUG=1`` shows the traceback)
130   interrupted (Ctrl-C)
====  =====================================================================
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_WAREHOUSE = 4
EXIT_ESCALATED = 5
EXIT_AGENT_EXITED = 6
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class SupervisorError(Exception):
    """Base error: ``message`` says what went wrong, ``fix`` what to do about it."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def one_line(self) -> str:
        text = " ".join(self.message.split())
        if self.fix:
            text += f" ({' '.join(self.fix.split())})"
        return text


class UsageError(SupervisorError):
    """Bad arguments or a bad combination of options."""


class CheckFailed(SupervisorError):
    """A check refused the request (a promotion the latest gate did not approve)."""

    exit_code = EXIT_CHECK_FAILED


class InputError(SupervisorError):
    """A malformed file the user gave us: policy, spec, suite, screen, journal."""


class PolicyError(InputError):
    """A policy file that does not validate."""


class SpecError(InputError):
    """A workflow spec that does not validate, or one that may not run (a draft)."""


class SuiteError(InputError):
    """A suite file that does not validate."""


class EnvironmentProblem(SupervisorError):
    """tmux missing or dead, a pane that does not exist, a command not found."""

    exit_code = EXIT_ENVIRONMENT


class SurfaceError(EnvironmentProblem):
    """The surface (tmux) refused or failed a command; the subcommand is named."""

    def __init__(self, message: str, fix: str | None = None, *, subcommand: str | None = None) -> None:
        super().__init__(message, fix)
        self.subcommand = subcommand


class PaneGone(SurfaceError):
    """The pane (or its tmux server) no longer exists."""


class AgentProtocolError(SurfaceError):
    """An ACP agent answered a request with an error, or its connection closed: ``code`` is the
    JSON-RPC error code it answered (None when the connection itself failed)."""

    def __init__(self, message: str, fix: str | None = None, *, code: int | None = None,
                 subcommand: str | None = None) -> None:
        super().__init__(message, fix, subcommand=subcommand)
        self.code = code


class WarehouseError(SupervisorError):
    """The warehouse cannot be opened or queried."""

    exit_code = EXIT_WAREHOUSE


class WarehouseLocked(WarehouseError):
    """Another process holds the DuckDB file's write lock."""

    def __init__(self, path: str, holder: str | None) -> None:
        who = f"{holder} holds it" if holder else "another process holds it"
        super().__init__(
            f"warehouse {path} is locked: {who}",
            "close that process (a notebook kernel?) or open the warehouse read-only; "
            "journals keep every event and `supervisor warehouse sync` ingests them later",
        )
        self.path = path
        self.holder = holder


class WarehouseBusy(WarehouseLocked):
    """A shared warehouse (DuckLake) whose commits kept conflicting with other writers' after every
    retry: like a lock, the events stay in the journals and the next sync ingests them."""

    def __init__(self, location: str, what: str, attempts: int) -> None:
        WarehouseError.__init__(
            self, f"{what} into {location} lost to other writers' commits {attempts} times in a row",
            "other supervisors are writing at the same moment; journals keep every event and the next "
            "`supervisor warehouse sync` ingests them")
        self.path = location
        self.holder = None


class JudgeError(SupervisorError):
    """The LLM judge failed (after retries); callers fail safe by escalating."""

    exit_code = EXIT_ENVIRONMENT


class JournalWriteError(EnvironmentProblem):
    """A journal line could not be written whole (a full disk, a quota, an I/O error, a read-only
    filesystem). Nothing of it stays in the file; the supervisor does not act on what it could not
    record, and suspends that pane until a write succeeds again."""

    def __init__(self, path: str, exc: OSError) -> None:
        import os

        why = os.strerror(exc.errno) if exc.errno else str(exc)
        super().__init__(f"cannot write the journal {path}: {why}",
                         "free space (or fix the filesystem) where the journals are; supervision resumes by itself")
        self.errno = exc.errno
        self.why = why
