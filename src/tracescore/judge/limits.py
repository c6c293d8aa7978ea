"""Staying within a judge provider's limits: rate limits, retries and a circuit breaker.

:class:`RateLimiter` paces calls under RPM/TPM quotas (and pauses everyone after a 429 with
``Retry-After``, read by :func:`parse_retry_after`); :class:`RetryPolicy` says whether and
how long to wait before a retry; :class:`CircuitBreaker` stops calling a judge that is down.
All of it is for one asyncio event loop (the judge client's): no threads, no locks across
threads. Time and sleep are injected so tests run on a fake clock.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timezone
from typing import Literal

__all__ = ["CircuitBreaker", "RateLimiter", "RetryPolicy", "parse_retry_after"]

logger = logging.getLogger(__name__)

# Slack for floating-point refill arithmetic: after sleeping exactly the computed wait, the
# bucket may still be a few ulps short; without this the waiter would sleep again for ~0 s.
_EPSILON = 1e-9

_DELTA_SECONDS = re.compile(r"\d+(?:\.\d+)?")


class _Bucket:
    """A token bucket refilled continuously, ``capacity`` per minute; its level may go negative."""

    __slots__ = ("capacity", "level", "rate")

    def __init__(self, per_minute: float) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute

    def refill(self, elapsed: float) -> None:
        self.level = min(self.capacity, self.level + elapsed * self.rate)

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 when it already is)."""
        if self.level + _EPSILON >= amount:
            return 0.0
        return (amount - self.level) / self.rate


class RateLimiter:
    """Per-model requests-per-minute and tokens-per-minute limits.

    Each limit is a token bucket refilled continuously whose capacity is one minute's
    allowance, so a burst of up to a minute's quota goes through at once and later calls are
    paced at the steady rate. ``None`` means unlimited for that dimension.

    Waiters are served strictly in arrival order (FIFO): only the oldest waiter sleeps on the
    buckets, the others queue behind it, so a call needing many tokens is not starved by a
    stream of small ones (and, in turn, holds back the small ones queued after it).

    One event loop only. ``settle`` and ``penalize`` do not wake a sleeping waiter: it
    re-checks buckets and penalty when it wakes, so a refund may be used a little late, but a
    penalty or an extra debit is always honoured.

    Args:
        rpm: Requests per minute, or ``None`` for no request limit.
        tpm: Tokens per minute, or ``None`` for no token limit.
        clock: Monotonic time in seconds.
        sleep: Async sleep used while waiting (``asyncio.sleep``; a fake one in tests).

    Raises:
        ValueError: If ``rpm`` or ``tpm`` is not a positive finite number.

    """

    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive number or None, got {value!r}")
        self._requests = _Bucket(rpm) if rpm is not None else None
        self._tokens = _Bucket(tpm) if tpm is not None else None
        self._clock = clock
        self._sleep = sleep
        self._updated = clock()
        self._blocked_until = -math.inf
        # asyncio.Lock is documented as fair: it is acquired in the order waiters arrived,
        # and a cancelled waiter is skipped. Holding it while sleeping gives the FIFO queue.
        self._queue = asyncio.Lock()

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until one request and ``tokens`` tokens are available, then debit them.

        A request for more tokens than the whole ``tpm`` capacity is clamped to the capacity:
        it waits for a full bucket rather than forever (:meth:`settle` then charges the rest).

        Cancellation-safe: a caller cancelled while waiting debits nothing and its place in
        the queue goes to the next waiter.

        Args:
            tokens: Estimated tokens of the call (prompt plus expected reply).

        Raises:
            ValueError: If ``tokens`` is negative.

        """
        if tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {tokens}")
        async with self._queue:
            needed = self._clamp(tokens)
            while True:
                wait = self._wait_time(needed)
                if wait <= 0.0:
                    # No await between the check and the debit: nobody can slip in between,
                    # and a cancellation can only land before the debit.
                    if self._requests is not None:
                        self._requests.level -= 1.0
                    if self._tokens is not None:
                        self._tokens.level -= needed
                    return
                logger.debug("rate limit: waiting %.3f s", wait)
                await self._sleep(wait)

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token debit of a finished call by ``actual - estimated``.

        A positive difference is an extra debit (the bucket may go negative, which delays
        later calls); a negative one is a refund (never above the capacity). ``estimated`` is
        what was passed to :meth:`acquire`; if it was clamped there, the clamped debit is
        corrected. No-op without a token limit.

        Args:
            estimated: The ``tokens`` passed to :meth:`acquire`.
            actual: Tokens the call really used (from the reply's usage).

        """
        if self._tokens is None:
            return
        self._refill()
        difference = actual - self._clamp(estimated)
        self._tokens.level = min(self._tokens.capacity, self._tokens.level - difference)

    def penalize(self, seconds: float) -> None:
        """Let nobody acquire for ``seconds`` from now (a 429 with ``Retry-After``).

        A shorter penalty never shortens one already in force; ``seconds <= 0`` is a no-op.

        Args:
            seconds: How long the server asked us to wait.

        """
        if not seconds > 0:
            return
        until = self._clock() + seconds
        if until > self._blocked_until:
            logger.info("rate limit: judge asked to wait %.1f s; pausing all calls", seconds)
            self._blocked_until = until

    def _clamp(self, tokens: int) -> float:
        if self._tokens is None:
            return float(max(tokens, 0))
        return min(float(max(tokens, 0)), self._tokens.capacity)

    def _refill(self) -> float:
        now = self._clock()
        elapsed = max(0.0, now - self._updated)  # a clock going backwards adds nothing
        self._updated = max(now, self._updated)
        for bucket in (self._requests, self._tokens):
            if bucket is not None:
                bucket.refill(elapsed)
        return now

    def _wait_time(self, tokens: float) -> float:
        now = self._refill()
        wait = self._blocked_until - now
        if self._requests is not None:
            wait = max(wait, self._requests.wait_for(1.0))
        if self._tokens is not None:
            wait = max(wait, self._tokens.wait_for(tokens))
        return wait


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """When and how long to wait before retrying a failed judge call.

    Only retryable errors (``JudgeError.retryable``: timeouts, 408, 429, 5xx, connection
    errors) are worth retrying; the caller decides that, this class only does the arithmetic.

    Attributes:
        max_attempts: Attempts in total, including the first (1 = never retry).
        initial_s: Backoff ceiling of the first retry, in seconds.
        max_s: Largest backoff ceiling, in seconds.
        multiplier: Growth of the ceiling from one retry to the next.
        max_retry_after_s: A server's ``Retry-After`` longer than this is capped (and logged).

    Raises:
        ValueError: On a negative duration, ``max_attempts < 1`` or ``multiplier < 1``.

    """

    max_attempts: int = 5
    initial_s: float = 0.5
    max_s: float = 30.0
    multiplier: float = 2.0
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be >= 1, got {self.multiplier}")
        for name in ("initial_s", "max_s", "max_retry_after_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def delay(
        self, attempt: int, *, retry_after: float | None = None, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait before retry number ``attempt``.

        Exponential backoff with full jitter: uniform in
        ``[0, min(max_s, initial_s * multiplier ** (attempt - 1))]``. When the server sent
        ``Retry-After``, the wait is ``max(retry_after capped at max_retry_after_s, backoff)``.

        Args:
            attempt: 1 for the first retry, 2 for the second, ...
            retry_after: Seconds the server asked for, if it did (negative counts as 0).
            rng: Source of the jitter (seeded in tests); the ``random`` module if omitted.

        Raises:
            ValueError: If ``attempt < 1``.

        """
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        try:
            ceiling = min(self.max_s, self.initial_s * self.multiplier ** (attempt - 1))
        except OverflowError:
            ceiling = self.max_s
        backoff = rng.uniform(0.0, ceiling) if rng is not None else random.uniform(0.0, ceiling)
        if retry_after is None:
            return backoff
        floor = max(0.0, retry_after)
        if floor > self.max_retry_after_s:
            logger.warning(
                "judge asked to retry after %.1f s; capping at %.1f s",
                floor,
                self.max_retry_after_s,
            )
            floor = self.max_retry_after_s
        return max(floor, backoff)

    def should_retry(self, attempt: int) -> bool:
        """Whether to try again after attempt number ``attempt`` (1-based) failed."""
        return attempt < self.max_attempts


def parse_retry_after(value: str | None, *, now: Callable[[], float] = time.time) -> float | None:
    """Read an HTTP ``Retry-After`` header (RFC 9110 §10.2.3) as seconds from now.

    Args:
        value: The header value: delta-seconds (``"3"``; ``"1.5"`` is accepted too) or an
            HTTP-date (``"Wed, 21 Oct 2015 07:28:00 GMT"``), or ``None`` when absent.
        now: Wall-clock time (epoch seconds) an HTTP-date is compared with.

    Returns:
        Seconds to wait; ``0.0`` for a date in the past; ``None`` when absent, negative or
        unreadable.

    """
    if value is None:
        return None
    text = value.strip()
    if _DELTA_SECONDS.fullmatch(text):
        seconds = float(text)
        return seconds if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000" means UTC with no zone information (RFC 5322 §3.3)
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now())


BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Stops calling a judge that is down; probes again later.

    * **closed**: calls go through; ``failure_threshold`` consecutive failures open it.
    * **open**: calls are refused (the caller raises ``JudgeUnavailable``) until
      ``reset_after_s`` has passed since it opened.
    * **half_open**: exactly one probe call is let through. Its success closes the breaker;
      its failure opens it again with the reset time doubled (up to ``max_reset_after_s``);
      a neutral end (e.g. the caller was cancelled) lets another probe through.

    The caller feeds it only outcomes that say whether the judge is up: timeouts, 5xx and
    connection errors are failures. A 429 is rate limiting, not an outage, and a 4xx, a
    blocked or unparsable reply means the judge answered: report those as successes (or not
    at all), never as failures.

    Single event loop only; not thread-safe.

    Attributes:
        opened_total: How many times the breaker has opened (for metrics).

    Args:
        failure_threshold: Consecutive failures that open a closed breaker.
        reset_after_s: Time an open breaker waits before letting a probe through.
        max_reset_after_s: Cap of the reset time doubled by failed probes.
        clock: Monotonic time in seconds.

    Raises:
        ValueError: On ``failure_threshold < 1``, a non-positive reset time, or
            ``max_reset_after_s < reset_after_s``.

    """

    def __init__(
        self,
        *,
        failure_threshold: int = 5,
        reset_after_s: float = 30.0,
        max_reset_after_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, got {failure_threshold}")
        if not reset_after_s > 0:
            raise ValueError(f"reset_after_s must be > 0, got {reset_after_s!r}")
        if not max_reset_after_s >= reset_after_s:
            raise ValueError("max_reset_after_s must be >= reset_after_s")
        self._threshold = failure_threshold
        self._base_reset = reset_after_s
        self._max_reset = max_reset_after_s
        self._clock = clock
        self._state: BreakerState = "closed"
        self._failures = 0
        self._reset_after = reset_after_s
        self._opened_at = 0.0
        self._probe_out = False
        self.opened_total = 0

    @property
    def state(self) -> BreakerState:
        """The current state; ``open`` turns ``half_open`` only in :meth:`allow`."""
        return self._state

    def allow(self) -> bool:
        """Whether a call may go to the judge now (a ``True`` in half_open is the probe)."""
        if self._state == "closed":
            return True
        if self._state == "open":
            if self._clock() - self._opened_at < self._reset_after:
                return False
            self._state = "half_open"
            self._probe_out = False
            logger.info("judge circuit breaker half-open: probing the judge")
        if self._probe_out:
            return False
        self._probe_out = True
        return True

    def record_success(self) -> None:
        """A call reached the judge and it answered: close, reset counters and backoff."""
        if self._state != "closed":
            logger.info("judge circuit breaker closed: the judge answers again")
        self._state = "closed"
        self._failures = 0
        self._reset_after = self._base_reset
        self._probe_out = False

    def record_failure(self) -> None:
        """A call failed in a way that means the judge is down (timeout, 5xx, connection)."""
        if self._state == "closed":
            self._failures += 1
            if self._failures >= self._threshold:
                self._open()
        elif self._state == "half_open":
            self._reset_after = min(self._max_reset, self._reset_after * 2)
            self._open()
        # open: a call let through before it opened failed late; nothing new to learn.

    def record_neutral(self) -> None:
        """The probe ended without telling whether the judge is up: allow another probe."""
        if self._state == "half_open":
            self._probe_out = False

    def _open(self) -> None:
        self._state = "open"
        self._opened_at = self._clock()
        self._probe_out = False
        self._failures = 0
        self.opened_total += 1
        logger.warning(
            "judge circuit breaker open: judge considered down, next probe in %.1f s",
            self._reset_after,
        )
