"""The judge client: where every judge call is redacted, cached, limited and retried.

Calls are also timed, costed and validated here — the same for every provider.

One call of :meth:`JudgeClient.ask` goes through, in order:

1. redaction of the prompt (on by default: nothing unredacted leaves the process);
2. the reply cache (criterion version, model, config, prompt and sample index make the
   key): a hit costs nothing and calls nobody. With a cache, a call whose key is already
   being asked waits for that call's reply instead of asking again (two identical runs
   judged at once, as in a replay of repeated traffic): the reply it gets is the one the
   cache would have served a moment later. Only a usable reply is shared; when the first
   call fails or is cancelled, each waiting call asks for itself;
3. the daily spend cap (:class:`~tracescore.exceptions.BudgetExhausted`, not called);
4. the circuit breaker (:class:`~tracescore.exceptions.JudgeUnavailable` while the judge
   is considered down; one probe at a time afterwards);
5. the global concurrency cap, then the model's request/token per-minute limits;
6. the provider call, bounded by the per-call timeout;
7. on a retryable failure (timeout, 429, 5xx, connection reset) a retry after an
   exponential backoff with full jitter, at least as long as ``Retry-After``; the
   concurrency slot is released while waiting;
8. validation of the JSON reply with the criterion's pydantic model
   (:class:`~tracescore.exceptions.JudgeUnparsableReply` when it does not fit; never
   cached, never retried — ADK ignores unparsable samples).

Every attempt is reported to the optional ``observer`` (metrics) as a
:class:`JudgeCallRecord`. Everything runs on one event loop; nothing here blocks it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from tracescore import json_text
from tracescore.conventions.messages import JsonValue
from tracescore.exceptions import (
    BudgetExhausted,
    JudgeError,
    JudgeHTTPError,
    JudgeTimeout,
    JudgeUnavailable,
    JudgeUnparsableReply,
)
from tracescore.judge.cache import JudgeCache, cache_key
from tracescore.judge.costs import PriceTable, SpendLedger
from tracescore.judge.limits import CircuitBreaker, RateLimiter, RetryPolicy
from tracescore.judge.outcomes import JudgeCallRecord, JudgeStats, means_down, outcome_of
from tracescore.judge.redaction import Redactor
from tracescore.judge.types import JudgeBackend, JudgeReply, JudgeRequest

__all__ = ["JudgeClient", "ModelLimits"]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

#: Characters per token for the pre-call TPM estimate (corrected after the reply).
_CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLimits:
    """Per-model request and token rates (None: unlimited)."""

    rpm: float | None = None
    tpm: float | None = None


class JudgeClient:
    """Asks a judge backend for structured verdicts, safely and economically.

    Args:
        backend: The provider.
        default_model: The model of criteria that do not name one.
        temperature: Default sampling temperature (None: the provider's default).
        concurrency: Global cap on calls in flight.
        timeout_s: Per-call timeout (each attempt).
        limits: Per-model rates; ``default_limits`` for models not listed.
        retry: Backoff policy for retryable failures.
        breaker: Circuit breaker; a fresh default one when None.
        cache: Reply cache; None disables caching.
        ledger: Token/cost accounting and the daily spend cap.
        redactor: Applied to every prompt; a default (all built-in rules) when None.
        observer: Called with every :class:`JudgeCallRecord` (metrics); must not raise.
        rng: Jitter source (seed it for reproducible tests).
        sleep: Async sleep for backoff and rate limits (injectable for tests).
        clock: Monotonic clock of the rate limiters (injectable for tests).

    """

    def __init__(
        self,
        backend: JudgeBackend,
        *,
        default_model: str = "gemini-2.5-flash",
        temperature: float | None = None,
        concurrency: int = 16,
        timeout_s: float = 60.0,
        limits: Mapping[str, ModelLimits] | None = None,
        default_limits: ModelLimits | None = None,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        cache: JudgeCache | None = None,
        ledger: SpendLedger | None = None,
        redactor: Redactor | None = None,
        observer: Callable[[JudgeCallRecord], None] | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.backend = backend
        self.default_model = default_model
        self.temperature = temperature
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self._limits = dict(limits or {})
        self._default_limits = default_limits or ModelLimits()
        self._limiters: dict[str, RateLimiter] = {}
        self.retry = retry or RetryPolicy()
        self.breaker = breaker or CircuitBreaker()
        self.cache = cache
        self.ledger = ledger or SpendLedger(PriceTable())
        self.redactor = redactor or Redactor()
        self.observer = observer
        self.stats = JudgeStats()
        self._rng = rng or random.Random()
        self._sleep = sleep
        self._clock = clock
        # Created per event loop: asyncio primitives bind to the loop that uses them.
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Cache key -> the usable reply of the call asking it now (None: ask yourself).
        self._asking: dict[str, asyncio.Future[JudgeReply | None]] = {}

    # -- public ------------------------------------------------------------------------

    async def ask(
        self,
        request: JudgeRequest,
        reply_type: type[M],
        *,
        criterion: str,
        version: str,
        sample: int = 0,
    ) -> M:
        """One structured verdict: the reply validated as ``reply_type``.

        ``sample`` distinguishes repeated identical requests (ADK's ``num_samples``): each
        index is cached separately, so a re-run replays every sample.

        Raises:
            JudgeError: a subclass saying why no verdict came back (its ``reason`` is
                what the criterion reports as NOT_EVALUATED).

        """
        request = dataclasses.replace(request, prompt=self.redactor.redact(request.prompt))
        key = cache_key(
            criterion=criterion,
            version=version,
            model=request.model,
            config=_config_of(request),
            system=request.system,
            prompt=request.prompt,
            schema=request.schema,
            sample=sample,
        )
        if self.cache is not None:
            cached = await self.cache.get(key)
            if cached is not None:
                try:
                    parsed = _parse(cached, reply_type)
                except JudgeUnparsableReply:
                    pass  # a stale entry from an older schema: ask again
                else:
                    return self._hit(parsed, criterion=criterion, model=request.model)
            self._bind_loop()
            asking = self._asking.get(key)
            if asking is not None:
                shared = await asyncio.shield(asking)
                if shared is not None:  # usable: the first call's reply parsed
                    parsed = _parse(shared, reply_type)
                    return self._hit(parsed, criterion=criterion, model=request.model)
            if key not in self._asking:
                return await self._ask_shared(request, reply_type, criterion, key)
            # The first call failed and another waiting one asks again: ask alongside it
            # rather than after it, so a failing judge never makes the calls wait in turn.
        parsed, reply = await self._ask_and_parse(request, reply_type, criterion)
        if self.cache is not None:
            await self.cache.put(key, reply)
        return parsed

    async def _ask_shared(
        self, request: JudgeRequest, reply_type: type[M], criterion: str, key: str
    ) -> M:
        """Ask, cache the reply, and hand it to the calls that wait for ``key`` meanwhile."""
        assert self.cache is not None
        future: asyncio.Future[JudgeReply | None] = asyncio.get_running_loop().create_future()
        self._asking[key] = future
        reply: JudgeReply | None = None
        try:
            parsed, reply = await self._ask_and_parse(request, reply_type, criterion)
            await self.cache.put(key, reply)  # before the waiting calls go: no gap between
        finally:
            if self._asking.get(key) is future:
                del self._asking[key]
            future.set_result(reply)  # None (failed, unparsable, cancelled): ask yourselves
        return parsed

    def _hit(self, parsed: M, *, criterion: str, model: str) -> M:
        """Count and report a verdict that cost no call (cache, or a shared call's reply)."""
        self.stats.cache_hits += 1
        self._report(JudgeCallRecord(criterion=criterion, model=model, outcome="cached"))
        return parsed

    async def _ask_and_parse(
        self, request: JudgeRequest, reply_type: type[M], criterion: str
    ) -> tuple[M, JudgeReply]:
        """Call the judge (with retries) and validate the reply; count the outcome."""
        reply, duration, cost = await self._call_with_retries(request, criterion=criterion)
        try:
            parsed = _parse(reply, reply_type)
        except JudgeUnparsableReply:
            outcome = "unparsable"
            raise
        else:
            outcome = "ok"
        finally:
            # One outcome per answered call: "ok" only when the verdict is usable.
            self.stats.count(outcome)
            self._report(
                JudgeCallRecord(
                    criterion=criterion,
                    model=request.model,
                    outcome=outcome,
                    duration_s=duration,
                    input_tokens=reply.input_tokens,
                    output_tokens=reply.output_tokens,
                    cost_usd=cost,
                )
            )
        return parsed, reply

    async def aclose(self) -> None:
        """Close the backend and the cache."""
        await self.backend.aclose()
        if self.cache is not None:
            await self.cache.aclose()

    # -- internals -----------------------------------------------------------------------

    def _limiter(self, model: str) -> RateLimiter:
        limiter = self._limiters.get(model)
        if limiter is None:
            limits = self._limits.get(model, self._default_limits)
            limiter = RateLimiter(
                rpm=limits.rpm, tpm=limits.tpm, clock=self._clock, sleep=self._sleep
            )
            self._limiters[model] = limiter
        return limiter

    def _check_budget(self, request: JudgeRequest, *, criterion: str) -> None:
        try:
            self.ledger.check()
        except BudgetExhausted:
            self.stats.count("budget_exhausted")
            self._report(
                JudgeCallRecord(
                    criterion=criterion, model=request.model, outcome="budget_exhausted"
                )
            )
            raise

    async def _call_with_retries(
        self, request: JudgeRequest, *, criterion: str
    ) -> tuple[JudgeReply, float, float | None]:
        self._check_budget(request, criterion=criterion)
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._attempt(request, criterion=criterion)
            except JudgeError as exc:
                if isinstance(exc, JudgeUnavailable) or not exc.retryable:
                    raise
                if not self.retry.should_retry(attempt):
                    raise
                retry_after = exc.retry_after if isinstance(exc, JudgeHTTPError) else None
                delay = self.retry.delay(attempt, retry_after=retry_after, rng=self._rng)
                if isinstance(exc, JudgeHTTPError) and exc.status == 429:
                    # Everyone backs off, not just this call: the quota is shared.
                    self._limiter(request.model).penalize(retry_after or delay)
                self.stats.retries += 1
                logger.debug(
                    "judge %s: %s; retry %d in %.2fs", request.model, exc.reason, attempt, delay
                )
                await self._sleep(delay)
                # The spend cap may have been reached while we waited.
                self._check_budget(request, criterion=criterion)

    def _bind_loop(self) -> asyncio.Semaphore:
        """The concurrency semaphore of the running loop (asyncio primitives are per loop).

        A client used by successive ``asyncio.run`` calls (one replay after another) gets
        fresh primitives for each loop; rate-limit state starts over with them.
        """
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._limiters = {}
            self._asking = {}
            self._loop = loop
        return self._semaphore

    async def _attempt(
        self, request: JudgeRequest, *, criterion: str
    ) -> tuple[JudgeReply, float, float | None]:
        semaphore = self._bind_loop()
        estimate = (len(request.system) + len(request.prompt)) // _CHARS_PER_TOKEN
        limiter = self._limiter(request.model)
        admitted = False  # passed the breaker: it expects an outcome from us
        settled = False
        try:
            async with semaphore:
                # Asked only once a slot is free: calls queued behind a failing judge
                # see the breaker open instead of each trying it in turn.
                if not self.breaker.allow():
                    self.stats.count("unavailable")
                    self._report(
                        JudgeCallRecord(
                            criterion=criterion, model=request.model, outcome="unavailable"
                        )
                    )
                    raise JudgeUnavailable(
                        f"judge {self.backend.name} is unavailable (circuit open)"
                    )
                admitted = True
                await limiter.acquire(estimate)
                started = time.perf_counter()
                self.stats.calls += 1
                try:
                    reply = await _bounded(
                        self.backend.generate(request, timeout_s=self.timeout_s), self.timeout_s
                    )
                except JudgeError as exc:
                    limiter.settle(estimate, 0)
                    settled = True
                    self._failed(exc, request=request, criterion=criterion, started=started)
                    raise
        except asyncio.CancelledError:
            if admitted:
                self.breaker.record_neutral()
            raise
        except JudgeError:
            raise
        except Exception as exc:  # a backend bug must still end as a counted outcome
            if not settled:
                limiter.settle(estimate, 0)
            if admitted:
                self.breaker.record_neutral()
            self.stats.count("error")
            self._report(JudgeCallRecord(criterion=criterion, model=request.model, outcome="error"))
            raise JudgeError(f"judge backend failed: {type(exc).__name__}: {exc}") from exc
        duration = time.perf_counter() - started
        self.breaker.record_success()
        limiter.settle(estimate, reply.input_tokens + reply.output_tokens)
        cost = self.ledger.record(
            criterion=criterion,
            model=request.model,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
        )
        return reply, duration, cost

    def _failed(
        self, exc: JudgeError, *, request: JudgeRequest, criterion: str, started: float
    ) -> None:
        if means_down(exc):
            self.breaker.record_failure()
        else:
            # The judge answered (429, 4xx, blocked, empty): it is up.
            self.breaker.record_success()
        outcome = outcome_of(exc)
        self.stats.count(outcome)
        self._report(
            JudgeCallRecord(
                criterion=criterion,
                model=request.model,
                outcome=outcome,
                duration_s=time.perf_counter() - started,
            )
        )

    def _report(self, record: JudgeCallRecord) -> None:
        if self.observer is None:
            return
        try:
            self.observer(record)
        except Exception:  # metrics must never cost a verdict
            logger.warning("judge observer failed", exc_info=True)


async def _bounded(call: Awaitable[JudgeReply], timeout_s: float) -> JudgeReply:
    """The backend bounds its own call; this is the backstop for one that does not."""
    try:
        # A little grace so the backend's own (more precise) timeout wins when it works.
        return await asyncio.wait_for(call, timeout_s + 1.0)
    except asyncio.TimeoutError as exc:
        raise JudgeTimeout(f"no reply within {timeout_s:g}s") from exc


def _config_of(request: JudgeRequest) -> dict[str, JsonValue]:
    return {
        "temperature": request.temperature,
        "max_output_tokens": request.max_output_tokens,
        **dict(request.config),
    }


def _parse(reply: JudgeReply, reply_type: type[M]) -> M:
    try:
        # Lenient as the trace readers: a model's half-emoji escape reads as U+FFFD.
        data = json_text.loads(_strip_fences(reply.text))
        return reply_type.model_validate(data)
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise JudgeUnparsableReply(f"reply does not fit {reply_type.__name__}: {exc}") from exc


def _strip_fences(text: str) -> str:
    """Some OpenAI-compatible servers wrap JSON in a Markdown fence despite the schema."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped
