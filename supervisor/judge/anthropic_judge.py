"""The judge through the official ``anthropic`` SDK: the only module that imports it.

:class:`AnthropicCaller` does one tool-use consultation the safe way: cache first (a hit
costs nothing and makes no HTTP call), then the budget (beyond it: no call), then the
Messages API with ``tool_choice: any`` and the SDK's own retries off, retrying timeouts,
429 (honouring ``retry-after``), 5xx/529, connection errors and malformed tool calls with
exponential backoff, all within ``policy.judge.deadline_s``. When it runs out it returns
no result and a call record saying why; the judge then fails safe by escalating. Tokens
of every response that arrived are billed, recorded in the day ledger and in the call.

:class:`AnthropicJudge` is the supervisor's :class:`~supervisor.judge.base.Judge`; the
pairwise scorer (``supervisor.judge.scorer``) uses the same caller.

No key: nothing is constructed and no call is made; cache hits still answer (so replays
of recorded runs work on machines without a key) and misses fail safe with
``outcome="no_api_key"``.
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from supervisor.errors import EnvironmentProblem, SupervisorError

try:
    import anthropic
except ImportError as exc:  # an optional extra: say which, in one line
    raise EnvironmentProblem(
        "the anthropic SDK is not installed: the LLM judge needs the `judge` extra",
        "pip install 'paneward[judge]' into the supervisor's environment, or set the policy's judge.consult: never",
    ) from exc
from supervisor.ids import new_id
from supervisor.judge.base import ChangeHint, JudgeCall, JudgeExchange, JudgeStats, JudgeVerdict
from supervisor.judge.budget import JudgeBudget, cost_usd, estimate_cost
from supervisor.judge.cache import JudgeCache, canonical_json, request_hash
from supervisor.judge.prompts import MalformedToolCall, build_judge_request, parse_tool_call, tool_calls_of
from supervisor.policy import JudgeSettings
from supervisor.settings import Settings

T = TypeVar("T")

Parser = Callable[[list[tuple[str, Any]]], T]
"""Turns a response's tool calls [(name, input)] into a result, or raises MalformedToolCall."""

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after`` seconds or date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, anthropic.APITimeoutError):
        return "timeout"
    if isinstance(exc, anthropic.APIStatusError):
        msg = getattr(exc, "api_message", None) or ""
        return f"HTTP {exc.status_code}" + (f": {msg}" if msg else "")
    if isinstance(exc, anthropic.APIConnectionError):
        return f"connection error: {exc}"
    if isinstance(exc, MalformedToolCall):
        return f"malformed tool call: {exc}"
    return f"{type(exc).__name__}: {exc}"


class AnthropicCaller:
    """Cached, budgeted, retried, fail-safe tool-use calls to the Messages API."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        cache: JudgeCache | None = None,
        budget: JudgeBudget | None = None,
        stats: JudgeStats | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.budget = budget
        self.stats = stats
        self.api_key = api_key if api_key is not None else (os.environ.get("ANTHROPIC_API_KEY") or None)
        self.base_url = base_url if base_url is not None else (os.environ.get("ANTHROPIC_BASE_URL") or None)
        self._sleep = sleep
        self._clock = clock
        self._client: anthropic.Anthropic | None = None

    def _get_client(self) -> anthropic.Anthropic:
        if self._client is None:
            # The key is passed explicitly so the SDK never goes looking for profiles or other
            # credentials on disk; its own retries are off because ours honour the deadline.
            self._client = anthropic.Anthropic(api_key=self.api_key, base_url=self.base_url, max_retries=0,
                                               timeout=self.settings.timeout_s)
        return self._client

    def _backoff(self, attempt: int) -> float:
        s = self.settings
        return min(s.backoff_s * (2 ** (attempt - 1)), s.backoff_max_s)

    def ask(self, request: dict[str, Any], parse: Parser[T], *, prompt_version: str, purpose: str = "decide",
            run_id: str = "", trigger_id: str | None = None) -> tuple[T | None, JudgeCall]:
        """One consultation. Returns (result, call); result is None when it failed or was refused."""
        started = self._clock()
        key = request_hash({"prompt_version": prompt_version, "request": request})
        call = JudgeCall(judge_call_id=new_id("jc_"), run_id=run_id, purpose=purpose,
                         trigger_id=trigger_id, model=str(request.get("model", "")), prompt_version=prompt_version,
                         request_hash=key)
        try:
            result = self._ask(request, parse, key, call)
        except Exception as exc:  # the judge must never take the supervisor down: fail safe
            call.outcome = "error"
            call.error = f"unexpected {type(exc).__name__}: {exc}"[:500]
            result = None
        finally:
            call.latency_ms = round((self._clock() - started) * 1000.0, 3)
            if self.stats is not None:
                self.stats.add(call)
        return result, call

    def _ask(self, request: dict[str, Any], parse: Parser[T], key: str, call: JudgeCall) -> T | None:
        s = self.settings
        if self.cache is not None:
            cached = self._cache_get(key)
            if cached is not None:
                try:
                    result = parse([(cached["tool"], cached["input"])])
                except (MalformedToolCall, KeyError):
                    result = None  # an entry from an older parser: fall through and ask again
                else:
                    call.cache_hit = True
                    return result
        if not self.api_key:
            call.outcome = "no_api_key"
            call.error = "no API key: set ANTHROPIC_API_KEY or judge.consult: never"
            return None
        estimate = estimate_cost(s, len(canonical_json(request)))
        if self.budget is not None and (refusal := self.budget.refusal(call.run_id, estimate)):
            call.outcome = "budget_exceeded"
            call.error = refusal
            return None
        deadline = self._clock() + s.deadline_s
        last_error = "no attempt fit within the deadline"
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0.01:
                last_error += f" (deadline {s.deadline_s:g}s reached)"
                break
            call.attempts += 1
            retry_after: float | None = None
            try:
                message = self._send(request, min(s.timeout_s, remaining))
                self._bill(call, message)
                tool_calls = tool_calls_of(message.content)
                if not tool_calls:
                    raise MalformedToolCall(f"no tool call (stop_reason={getattr(message, 'stop_reason', None)})")
                name, tool_input = tool_calls[0]
                result = parse([(name, tool_input)])
            except anthropic.APIStatusError as exc:
                last_error = _describe(exc)
                if exc.status_code not in _RETRY_STATUS and exc.status_code < 500:
                    if "temperature" in last_error and "temperature" in request:
                        last_error += " (this model does not take a temperature: unset judge.temperature)"
                    break  # 400/401/403/404...: asking again will not help
                retry_after = _retry_after(exc)
            except (anthropic.APIConnectionError, MalformedToolCall) as exc:  # timeouts are connection errors
                last_error = _describe(exc)
            except anthropic.AnthropicError as exc:
                last_error = _describe(exc)
                break
            else:
                if self.cache is not None:
                    with contextlib.suppress(OSError):  # a full disk costs a future cache hit, not this verdict
                        self.cache.put(key, request, {"tool": name, "input": tool_input, "model": call.model})
                return result
            if call.attempts > s.max_retries:
                last_error += f" (gave up after {call.attempts} attempts)"
                break
            wait = retry_after if retry_after is not None else self._backoff(call.attempts)
            if self._clock() + wait >= deadline:
                last_error += f" (next retry in {wait:g}s would pass the {s.deadline_s:g}s deadline)"
                break
            if self.budget is not None and (refusal := self.budget.refusal(call.run_id, estimate)):
                last_error += f" (no retry: {refusal})"  # malformed answers are billed: retries spend too
                break
            self._sleep(wait)
        call.outcome = "error"
        call.error = last_error
        return None

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        assert self.cache is not None
        try:
            return self.cache.get(key)
        except OSError:
            return None

    def _send(self, request: dict[str, Any], timeout: float) -> Any:
        params = dict(request)
        extra: dict[str, Any] = {}
        if "temperature" in params:
            # The SDK no longer has a temperature argument (the API deprecated it); models that
            # still take it get it in the body, the rest answer 400 and the judge fails safe.
            extra["temperature"] = params.pop("temperature")
        return self._get_client().messages.create(**params, timeout=timeout, extra_body=extra or None)

    def _bill(self, call: JudgeCall, message: Any) -> None:
        """Count the tokens of a response that arrived (even a malformed one is billed)."""
        usage = getattr(message, "usage", None)
        tin = int(getattr(usage, "input_tokens", 0) or 0)
        tout = int(getattr(usage, "output_tokens", 0) or 0)
        tcache = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        cost = cost_usd(call.model, tin, tout, self.settings.prices, tcache)
        call.input_tokens += tin
        call.output_tokens += tout
        call.cache_read_tokens += tcache
        call.cost_usd = round(call.cost_usd + cost, 9)
        if self.budget is not None:
            with contextlib.suppress(OSError):  # the call record still carries the cost (journal, warehouse)
                self.budget.record(call.run_id, cost, call.judge_call_id)


def _parse_verdict(tool_calls: list[tuple[str, Any]]) -> tuple[str, list[str], str, str | None]:
    name, tool_input = tool_calls[0]
    return parse_tool_call(name, tool_input)


class AnthropicJudge:
    """The supervisor's judge: screen + hint + history -> verdict, via :class:`AnthropicCaller`."""

    def __init__(self, settings: JudgeSettings, caller: AnthropicCaller | None = None, **caller_kwargs: Any) -> None:
        self.settings = settings
        self.caller = caller or AnthropicCaller(settings, **caller_kwargs)

    def judge(self, screen: str, hint: ChangeHint, history: Sequence[JudgeExchange], *, run_id: str = "",
              trigger_id: str | None = None) -> JudgeVerdict:
        try:
            request = build_judge_request(self.settings, screen, hint, history)
        except SupervisorError as exc:
            call = JudgeCall(judge_call_id=new_id("jc_"), run_id=run_id, trigger_id=trigger_id,
                             model=self.settings.model, prompt_version=self.settings.prompt_version, request_hash="",
                             outcome="error", error=exc.one_line())
            if self.caller.stats is not None:
                self.caller.stats.add(call)
            return fail_safe_verdict(call)
        result, call = self.caller.ask(request, _parse_verdict, prompt_version=self.settings.prompt_version,
                                       purpose="decide", run_id=run_id, trigger_id=trigger_id)
        if result is None:
            return fail_safe_verdict(call)
        action, keys, reason, next_action = result
        call.action = action  # type: ignore[assignment]
        return JudgeVerdict(action=action, keys=keys, reason=reason, next_action=next_action,
                            call=call)


def fail_safe_verdict(call: JudgeCall) -> JudgeVerdict:
    """Escalate, never approve: what a judge that could not answer proposes."""
    call.action = "escalate"
    if call.outcome == "budget_exceeded":
        reason = f"the judge was not asked: {call.error}"
        nxt = "answer the pane yourself, or raise judge.budget_usd_per_run / budget_usd_per_day in the policy"
    elif call.outcome == "no_api_key":
        reason = f"the judge was not asked: {call.error}"
        nxt = "answer the pane yourself, or set ANTHROPIC_API_KEY for the judge"
    else:
        reason = f"the judge failed ({call.error}); failing safe"
        nxt = "answer the pane yourself; the judge could not be reached or gave no usable answer"
    return JudgeVerdict(action="escalate", reason=reason, next_action=nxt, call=call)


def make_caller(judge_settings: JudgeSettings, *, settings: Settings, stats: JudgeStats | None = None,
                api_key: str | None = None, base_url: str | None = None, use_cache: bool = True,
                **kwargs: Any) -> AnthropicCaller:
    """A caller with the cache under ``settings.cache_dir/judge`` and the day ledger under
    ``settings.home/judge/spend``."""
    cache = JudgeCache(Path(settings.cache_dir) / "judge") if use_cache else None
    budget = JudgeBudget(Path(settings.home) / "judge" / "spend", judge_settings)
    return AnthropicCaller(judge_settings, cache=cache, budget=budget, stats=stats, api_key=api_key,
                           base_url=base_url, **kwargs)
