"""Rate limiter, retry policy, Retry-After parsing and circuit breaker, on a fake clock."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

import pytest

from judge_helpers import breaker_state
from tracescore.judge.limits import CircuitBreaker, RateLimiter, RetryPolicy, parse_retry_after


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeSleep:
    """Advances the fake clock by the requested time, records it, and yields to the loop."""

    def __init__(self, clock: FakeClock, on_sleep: Callable[[float], None] | None = None) -> None:
        self.clock = clock
        self.calls: list[float] = []
        self.on_sleep = on_sleep

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        self.clock.advance(seconds)
        if self.on_sleep is not None:
            self.on_sleep(seconds)
        await asyncio.sleep(0)  # a yield, not a real sleep


class GatedSleep:
    """Records the requested time and then blocks until cancelled (the clock does not move)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await asyncio.Event().wait()


def limiter(clock: FakeClock, sleep: object, **kw: float | None) -> RateLimiter:
    return RateLimiter(clock=clock, sleep=sleep, **kw)  # type: ignore[arg-type]


async def _yield(times: int = 5) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


# --- RateLimiter ------------------------------------------------------------------------------


def test_rpm_burst_of_one_minute_then_paced() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, rpm=60)

    async def main() -> None:
        for _ in range(60):
            await rl.acquire()
        assert sleep.calls == []
        await rl.acquire()  # the 61st waits one request's refill: 1 s at 60/min

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(1.0)]
    assert clock.now == pytest.approx(1001.0)


def test_rpm_bucket_refills_with_time() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, rpm=60)

    async def main() -> None:
        for _ in range(60):
            await rl.acquire()
        clock.advance(30)  # refills 30 requests, no more
        for _ in range(30):
            await rl.acquire()
        assert sleep.calls == []
        await rl.acquire()

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(1.0)]


def test_tpm_large_and_small_requests() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, tpm=600)  # 10 tokens/s

    async def main() -> None:
        await rl.acquire(500)
        assert sleep.calls == []
        await rl.acquire(200)  # 100 left: 100 more needed at 10/s
        assert sleep.calls == [pytest.approx(10.0)]
        await rl.acquire(50)  # bucket empty: 5 s
        assert sleep.calls == [pytest.approx(10.0), pytest.approx(5.0)]

    asyncio.run(main())


def test_rpm_and_tpm_wait_for_the_slower_of_both() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, rpm=6, tpm=600)  # 1 request / 10 s, 10 tokens / s

    async def main() -> None:
        for _ in range(6):
            await rl.acquire(10)
        await rl.acquire(10)  # tokens are plenty; the request bucket needs 10 s

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(10.0)]


def test_waiters_are_served_in_arrival_order() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, tpm=600)
    done: list[str] = []

    async def call(name: str, tokens: int) -> None:
        await rl.acquire(tokens)
        done.append(name)

    async def main() -> None:
        await rl.acquire(600)  # empty the bucket
        tasks = [
            asyncio.create_task(call("big", 500)),
            asyncio.create_task(call("small1", 10)),
            asyncio.create_task(call("small2", 10)),
        ]
        await asyncio.gather(*tasks)

    asyncio.run(main())
    # The big request is not starved by the small ones that arrived after it.
    assert done == ["big", "small1", "small2"]
    assert sleep.calls == [pytest.approx(50.0), pytest.approx(1.0), pytest.approx(1.0)]


def test_request_above_capacity_is_clamped_to_a_full_bucket() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, tpm=600)

    async def main() -> None:
        await rl.acquire(10_000)  # full bucket: goes through, debits 600
        assert sleep.calls == []
        await rl.acquire(10_000)  # waits for a full bucket again, not forever

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(60.0)]


def test_settle_refunds_unused_tokens() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, tpm=600)

    async def main() -> None:
        await rl.acquire(100)
        rl.settle(100, 40)  # 60 back: 560 available
        await rl.acquire(560)
        assert sleep.calls == []
        await rl.acquire(10)

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(1.0)]


def test_settle_extra_debit_can_go_negative_and_delays_later_calls() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, tpm=600)

    async def main() -> None:
        await rl.acquire(100)
        rl.settle(100, 700)  # 500 - 600 = -100
        await rl.acquire(0)  # back to 0 takes 10 s

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(10.0)]


def test_settle_refund_never_exceeds_capacity() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, tpm=600)

    async def main() -> None:
        rl.settle(500, 0)  # bucket already full
        await rl.acquire(600)
        await rl.acquire(1)

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(0.1)]


def test_settle_after_clamped_acquire_corrects_the_clamped_debit() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, tpm=600)

    async def main() -> None:
        await rl.acquire(1000)  # debits 600 (clamped)
        rl.settle(1000, 900)  # used 300 more than debited
        await rl.acquire(0)

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(30.0)]


def test_penalize_blocks_everyone_even_when_unlimited() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep)

    async def main() -> None:
        rl.penalize(5.0)
        rl.penalize(2.0)  # a shorter penalty does not shorten the first
        await rl.acquire(100)
        await rl.acquire(100)  # penalty over: no wait

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(5.0)]
    assert clock.now == pytest.approx(1005.0)


def test_penalty_arriving_while_waiting_is_honoured() -> None:
    clock = FakeClock()
    rl: RateLimiter

    def on_sleep(_: float) -> None:
        if len(sleep.calls) == 1:
            rl.penalize(5.0)  # a 429 seen by another call during the first wait

    sleep = FakeSleep(clock, on_sleep)
    rl = limiter(clock, sleep, rpm=60)

    async def main() -> None:
        for _ in range(60):
            await rl.acquire()
        await rl.acquire()

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(1.0), pytest.approx(5.0)]


def test_cancelled_head_waiter_debits_nothing_and_frees_the_queue() -> None:
    clock = FakeClock()
    sleep = GatedSleep()
    rl = limiter(clock, sleep, rpm=60)

    async def main() -> None:
        for _ in range(60):
            await rl.acquire()
        head = asyncio.create_task(rl.acquire())
        await _yield()
        assert sleep.calls == [pytest.approx(1.0)]  # head is sleeping on the bucket
        head.cancel()
        await _yield()
        assert head.cancelled()
        clock.advance(1.0)  # exactly one request refilled
        nxt = asyncio.create_task(rl.acquire())
        await _yield()
        # Had the cancelled head debited its request, this one would have to sleep.
        assert nxt.done()
        assert len(sleep.calls) == 1

    asyncio.run(main())


def test_cancelled_queued_waiter_debits_nothing() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep, rpm=60)

    async def main() -> None:
        for _ in range(60):
            await rl.acquire()
        a = asyncio.create_task(rl.acquire())
        b = asyncio.create_task(rl.acquire())
        c = asyncio.create_task(rl.acquire())
        await asyncio.sleep(0)  # a sleeps on the bucket, b and c queue behind it
        b.cancel()
        await asyncio.gather(a, c, return_exceptions=True)
        assert b.cancelled()
        assert a.done() and c.done()

    asyncio.run(main())
    assert sleep.calls == [pytest.approx(1.0), pytest.approx(1.0)]
    assert clock.now == pytest.approx(1002.0)


def test_unlimited_never_sleeps() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    rl = limiter(clock, sleep)

    async def main() -> None:
        for _ in range(1000):
            await rl.acquire(1_000_000)
        rl.settle(0, 10**9)

    asyncio.run(main())
    assert sleep.calls == []


def test_limiter_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="rpm"):
        RateLimiter(rpm=0)
    with pytest.raises(ValueError, match="tpm"):
        RateLimiter(tpm=float("inf"))
    with pytest.raises(ValueError, match="tokens"):
        asyncio.run(RateLimiter().acquire(-1))


# --- RetryPolicy ------------------------------------------------------------------------------


def test_delay_is_full_jitter_within_the_exponential_ceiling() -> None:
    policy = RetryPolicy(initial_s=0.5, max_s=4.0, multiplier=2.0)
    rng = random.Random(1)
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 4.0), (50, 4.0)]:
        delays = [policy.delay(attempt, rng=rng) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > 0.9 * ceiling  # the whole range is used ...
        assert min(delays) < 0.1 * ceiling  # ... down to near zero (full jitter)


def test_delay_is_deterministic_with_a_seeded_rng() -> None:
    policy = RetryPolicy()
    first = [policy.delay(a, rng=random.Random(42)) for a in range(1, 6)]
    second = [policy.delay(a, rng=random.Random(42)) for a in range(1, 6)]
    assert first == second
    assert policy.delay(3, rng=random.Random(7)) == random.Random(7).uniform(0.0, 2.0)


def test_delay_for_huge_attempt_does_not_overflow() -> None:
    assert 0.0 <= RetryPolicy(max_s=30.0).delay(100_000, rng=random.Random(0)) <= 30.0


def test_delay_honours_retry_after() -> None:
    policy = RetryPolicy(initial_s=0.5, max_s=30.0)
    assert policy.delay(1, retry_after=10.0, rng=random.Random(0)) == 10.0
    # A backoff longer than Retry-After wins: max(retry_after, jittered backoff).
    rng_seed = 3
    backoff = RetryPolicy(initial_s=100.0, max_s=100.0).delay(1, rng=random.Random(rng_seed))
    assert backoff > 1.0
    assert RetryPolicy(initial_s=100.0, max_s=100.0).delay(
        1, retry_after=1.0, rng=random.Random(rng_seed)
    ) == pytest.approx(backoff)
    assert policy.delay(1, retry_after=-5.0, rng=random.Random(0)) <= 0.5


def test_retry_after_is_capped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    policy = RetryPolicy(max_retry_after_s=120.0)
    with caplog.at_level(logging.WARNING, logger="tracescore.judge.limits"):
        assert policy.delay(1, retry_after=3600.0, rng=random.Random(0)) == 120.0
    assert "capping at 120.0 s" in caplog.text


def test_should_retry_counts_the_first_attempt() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert [policy.should_retry(a) for a in (1, 2, 3, 4)] == [True, True, False, False]
    assert RetryPolicy(max_attempts=1).should_retry(1) is False


def test_retry_policy_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="multiplier"):
        RetryPolicy(multiplier=0.5)
    with pytest.raises(ValueError, match="initial_s"):
        RetryPolicy(initial_s=-1.0)
    with pytest.raises(ValueError, match="attempt"):
        RetryPolicy().delay(0)


# --- parse_retry_after ------------------------------------------------------------------------

_DATE = "Wed, 21 Oct 2015 07:28:00 GMT"
_DATE_TS = 1445412480.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("3", 3.0), (" 1.5 ", 1.5), ("0", 0.0), ("120", 120.0)],
)
def test_parse_retry_after_seconds(value: str, expected: float) -> None:
    assert parse_retry_after(value) == expected


@pytest.mark.parametrize(
    "value", [None, "", "-1", "abc", "nan", "inf", "1e3", "1_000", "3 s", "Wed, 99 Foo 2015"]
)
def test_parse_retry_after_garbage_is_none(value: str | None) -> None:
    assert parse_retry_after(value) is None


def test_parse_retry_after_http_date() -> None:
    assert parse_retry_after(_DATE, now=lambda: _DATE_TS - 30.0) == pytest.approx(30.0)
    assert parse_retry_after(_DATE, now=lambda: _DATE_TS + 600.0) == 0.0  # in the past
    # "-0000" parses to a naive datetime: read as UTC.
    assert parse_retry_after(
        "Wed, 21 Oct 2015 07:28:00 -0000", now=lambda: _DATE_TS - 5.0
    ) == pytest.approx(5.0)


# --- CircuitBreaker ---------------------------------------------------------------------------


def open_breaker(clock: FakeClock, **kw: float) -> CircuitBreaker:
    cb = CircuitBreaker(failure_threshold=3, reset_after_s=30.0, clock=clock, **kw)
    for _ in range(3):
        cb.record_failure()
    return cb


def test_breaker_opens_after_consecutive_failures_only() -> None:
    clock = FakeClock()
    cb = CircuitBreaker(failure_threshold=3, clock=clock)
    cb.record_failure()
    cb.record_failure()
    cb.record_success()  # resets the count
    cb.record_failure()
    cb.record_failure()
    assert cb.state == "closed"
    assert cb.allow() is True
    cb.record_failure()
    assert breaker_state(cb) == "open"
    assert cb.opened_total == 1
    assert cb.allow() is False


def test_breaker_half_opens_after_reset_and_lets_one_probe_through() -> None:
    clock = FakeClock()
    cb = open_breaker(clock)
    clock.advance(29.9)
    assert cb.allow() is False
    assert cb.state == "open"
    clock.advance(0.1)
    assert cb.allow() is True  # the probe
    assert breaker_state(cb) == "half_open"
    assert [cb.allow() for _ in range(3)] == [False, False, False]


def test_successful_probe_closes_the_breaker() -> None:
    clock = FakeClock()
    cb = open_breaker(clock)
    clock.advance(30)
    assert cb.allow() is True
    cb.record_success()
    assert cb.state == "closed"
    assert all(cb.allow() for _ in range(5))
    # Counters reset: it takes the full threshold to open again, with the base reset time.
    cb.record_failure()
    cb.record_failure()
    assert cb.state == "closed"
    cb.record_failure()
    assert breaker_state(cb) == "open"
    assert cb.opened_total == 2
    clock.advance(30)
    assert cb.allow() is True


def test_failed_probe_reopens_with_doubled_reset_capped() -> None:
    clock = FakeClock()
    cb = open_breaker(clock, max_reset_after_s=100.0)
    expected_resets = [60.0, 100.0, 100.0]  # 30 doubled, then capped at 100
    clock.advance(30)
    for reset in expected_resets:
        assert cb.allow() is True
        cb.record_failure()
        assert cb.state == "open"
        clock.advance(reset - 0.5)
        assert cb.allow() is False
        clock.advance(0.5)
    assert cb.allow() is True
    assert cb.opened_total == 4
    cb.record_success()  # backoff reset to 30 s
    for _ in range(3):
        cb.record_failure()
    clock.advance(30)
    assert cb.allow() is True


def test_neutral_probe_allows_another_probe() -> None:
    clock = FakeClock()
    cb = open_breaker(clock)
    clock.advance(30)
    assert cb.allow() is True
    assert cb.allow() is False
    cb.record_neutral()
    assert cb.state == "half_open"
    assert cb.allow() is True
    assert cb.allow() is False
    assert cb.opened_total == 1


def test_neutral_when_closed_does_not_reset_failures() -> None:
    cb = CircuitBreaker(failure_threshold=2, clock=FakeClock())
    cb.record_failure()
    cb.record_neutral()
    cb.record_failure()
    assert cb.state == "open"


def test_late_failure_while_open_does_not_extend_it() -> None:
    clock = FakeClock()
    cb = open_breaker(clock)
    clock.advance(20)
    cb.record_failure()  # a call let through before the breaker opened
    assert cb.opened_total == 1
    clock.advance(10)
    assert cb.allow() is True


def test_breaker_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="failure_threshold"):
        CircuitBreaker(failure_threshold=0)
    with pytest.raises(ValueError, match="reset_after_s"):
        CircuitBreaker(reset_after_s=0)
    with pytest.raises(ValueError, match="max_reset_after_s"):
        CircuitBreaker(reset_after_s=60, max_reset_after_s=30)
