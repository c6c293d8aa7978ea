"""The judge client end to end: real backends (google-genai, httpx) against local fakes.

Each test scripts the fake judge, asks through :class:`JudgeClient` and checks both the
outcome (verdict or the JudgeError subclass and its ``reason``) and the bookkeeping: the
client's stats, what reached the fake, the observer's records, the ledger. Waits are
never real: retries sleep through an injected no-wait (or recording) sleep, the breaker
and the rate limiter run on a fake clock where time matters, and slow judges are bounded
by a small per-call timeout.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from fake_judges import (
    FakeGemini,
    FakeOpenAIJudge,
    FakeReply,
    gemini_blocked_candidate,
    gemini_blocked_prompt,
    gemini_empty,
    gemini_error,
    gemini_json,
    gemini_text,
    openai_error,
    openai_json,
)
from judge_helpers import breaker_state, make_judge, prompt_text
from tracescore.criteria.judged import json_schema
from tracescore.exceptions import (
    BudgetExhausted,
    JudgeBlocked,
    JudgeConnectionError,
    JudgeEmptyReply,
    JudgeError,
    JudgeHTTPError,
    JudgeTimeout,
    JudgeUnavailable,
    JudgeUnparsableReply,
)
from tracescore.judge.backends import GeminiBackend
from tracescore.judge.cache import JudgeCache
from tracescore.judge.client import JudgeClient
from tracescore.judge.costs import PriceTable, SpendLedger
from tracescore.judge.limits import CircuitBreaker, RetryPolicy
from tracescore.judge.outcomes import JudgeCallRecord
from tracescore.judge.redaction import Redactor
from tracescore.judge.types import JudgeReply, JudgeRequest

MODEL = "gemini-2.5-flash"
OPENAI_MODEL = "gpt-fake-judge-1"


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Literal["valid", "invalid"]


SCHEMA = json_schema(Verdict)
REQUEST = JudgeRequest(
    model=MODEL,
    system="You grade an answer. Reply with a verdict.",
    prompt="Question: 2+2? Answer: 4",
    schema=SCHEMA,
)
VALID = {"verdict": "valid"}


async def ask(client: JudgeClient, request: JudgeRequest = REQUEST, *, sample: int = 0) -> Verdict:
    return await client.ask(request, Verdict, criterion="c", version="1", sample=sample)


async def _no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


class FakeClock:
    """Monotonic time that only moves when told to (or when ``sleep`` is awaited)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def gemini_client(base_url: str, **overrides: Any) -> JudgeClient:
    """Like ``make_judge``, but every JudgeClient argument can be replaced."""
    options: dict[str, Any] = {
        "default_model": MODEL,
        "concurrency": 8,
        "timeout_s": 10.0,
        "retry": RetryPolicy(max_attempts=3, initial_s=0.01, max_s=0.05),
        "ledger": SpendLedger(PriceTable()),
        "rng": random.Random(7),
        "sleep": _no_wait,
    }
    options.update(overrides)
    return JudgeClient(GeminiBackend(api_key="test-key", base_url=base_url), **options)


def outcomes(records: list[JudgeCallRecord]) -> list[str]:
    return [r.outcome for r in records]


# -- 1. success ---------------------------------------------------------------------------


def test_success_parses_the_verdict_and_accounts_tokens_and_cost() -> None:
    records: list[JudgeCallRecord] = []
    reply = gemini_json(
        {"verdict": "invalid"}, input_tokens=1000, output_tokens=200, thoughts_tokens=50
    )
    with FakeGemini([reply]) as fake:
        client = make_judge(fake.base_url, records=records)

        async def scenario() -> Verdict:
            try:
                return await ask(client)
            finally:
                await client.aclose()

        verdict = asyncio.run(scenario())
        assert fake.calls == 1
        sent = fake.requests[0]
    assert verdict == Verdict(verdict="invalid")
    assert sent["generationConfig"]["responseMimeType"] == "application/json"
    assert sent["generationConfig"]["responseJsonSchema"] == SCHEMA
    assert prompt_text(sent) == REQUEST.prompt
    # Thinking tokens are billed as output: 200 + 50.
    cost = (1000 * 0.30 + 250 * 2.50) / 1_000_000
    (row,) = client.ledger.rows()
    assert (row.criterion, row.model, row.calls) == ("c", MODEL, 1)
    assert (row.input_tokens, row.output_tokens) == (1000, 250)
    assert row.cost_usd == pytest.approx(cost)
    assert client.ledger.spent_today == pytest.approx(cost)
    assert (client.stats.calls, client.stats.retries, client.stats.cache_hits) == (1, 0, 0)
    assert client.stats.outcomes == {"ok": 1}
    (record,) = records
    assert (record.criterion, record.model, record.outcome) == ("c", MODEL, "ok")
    assert (record.input_tokens, record.output_tokens) == (1000, 250)
    assert record.cost_usd == pytest.approx(cost)
    assert record.duration_s > 0


# -- 2. 429 with Retry-After ----------------------------------------------------------------


def test_429_with_retry_after_is_retried_after_at_least_that_long() -> None:
    records: list[JudgeCallRecord] = []
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=60, clock=clock)
    script = [gemini_error(429, "quota", {"Retry-After": "3"}), gemini_json(VALID)]
    with FakeGemini(script) as fake:
        # The client's sleep and clock drive both the backoff and the rate limiters.
        client = gemini_client(
            fake.base_url,
            sleep=clock.sleep,
            clock=clock,
            breaker=breaker,
            observer=records.append,
        )

        async def scenario() -> Verdict:
            try:
                return await ask(client)
            finally:
                await client.aclose()

        verdict = asyncio.run(scenario())
        assert fake.calls == 2
    assert verdict == Verdict(verdict="valid")
    assert client.stats.retries == 1
    assert client.stats.calls == 2
    assert client.stats.outcomes == {"http_429": 1, "ok": 1}
    assert outcomes(records) == ["http_429", "ok"]
    # The backoff waited at least the Retry-After; the model's limiter was penalized for
    # the same 3 s, already over when the retry came, so it did not wait on top.
    assert clock.sleeps[0] >= 3
    assert len(clock.sleeps) == 1
    # Rate limiting is not an outage: a threshold-1 breaker stays closed.
    assert breaker.state == "closed"


# -- 3. 5xx storm, 4. 400 ---------------------------------------------------------------------


def test_500_storm_gives_up_after_max_attempts() -> None:
    records: list[JudgeCallRecord] = []
    with FakeGemini([gemini_error(500)] * 5) as fake:
        client = make_judge(fake.base_url, records=records, max_attempts=3)

        async def scenario() -> None:
            try:
                await ask(client)
            finally:
                await client.aclose()

        with pytest.raises(JudgeHTTPError) as info:
            asyncio.run(scenario())
        assert fake.calls == 3
    assert info.value.reason == "judge error 500"
    assert info.value.status == 500
    assert client.stats.outcomes == {"http_500": 3}
    assert (client.stats.calls, client.stats.retries) == (3, 2)
    assert outcomes(records) == ["http_500"] * 3
    assert client.ledger.rows() == []  # nothing billed


def test_400_is_not_retried_and_does_not_trip_the_breaker() -> None:
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=60)
    with FakeGemini([gemini_error(400, "bad schema"), gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, breaker=breaker, max_attempts=5)

        async def scenario() -> None:
            try:
                await ask(client)
            finally:
                await client.aclose()

        with pytest.raises(JudgeHTTPError) as info:
            asyncio.run(scenario())
        assert fake.calls == 1
    assert info.value.reason == "judge error 400"
    assert (client.stats.calls, client.stats.retries) == (1, 0)
    assert client.stats.outcomes == {"http_400": 1}
    assert breaker.state == "closed"


# -- 5. timeouts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply", [FakeReply(body={}, delay_s=2.0), FakeReply(hang=True)], ids=["slow", "hang"]
)
def test_slow_or_hanging_judge_times_out(reply: FakeReply) -> None:
    records: list[JudgeCallRecord] = []
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=60)
    with FakeGemini([reply]) as fake:
        client = make_judge(
            fake.base_url, records=records, breaker=breaker, max_attempts=1, timeout_s=0.2
        )

        async def scenario() -> float:
            loop = asyncio.get_running_loop()
            started = loop.time()
            try:
                await ask(client)
            finally:
                await client.aclose()
            return loop.time() - started

        with pytest.raises(JudgeTimeout) as info:
            asyncio.run(scenario())
        assert fake.calls == 1
    assert info.value.reason == "judge timeout"
    assert client.stats.outcomes == {"timeout": 1}
    assert client.stats.calls == 1
    assert outcomes(records) == ["timeout"]
    # The backend's own 0.2 s bound won, not the client's 1.2 s backstop.
    assert records[0].duration_s < 1.0
    # A timeout says the judge may be down.
    assert breaker.state == "open"


def test_timeout_is_retried() -> None:
    with FakeGemini([FakeReply(hang=True), gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, max_attempts=3, timeout_s=0.2)

        async def scenario() -> Verdict:
            try:
                return await ask(client)
            finally:
                await client.aclose()

        verdict = asyncio.run(scenario())
        assert fake.calls == 2
    assert verdict.verdict == "valid"
    assert client.stats.outcomes == {"timeout": 1, "ok": 1}
    assert client.stats.retries == 1


# -- 6. broken connections --------------------------------------------------------------------


@pytest.mark.parametrize(
    "broken",
    [FakeReply(reset=True), FakeReply(body={"candidates": []}, truncate=True)],
    ids=["reset", "truncated"],
)
def test_broken_connection_is_retried_then_succeeds(broken: FakeReply) -> None:
    records: list[JudgeCallRecord] = []
    with FakeGemini([broken, gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, records=records)

        async def scenario() -> Verdict:
            try:
                return await ask(client)
            finally:
                await client.aclose()

        verdict = asyncio.run(scenario())
        assert fake.calls == 2
    assert verdict.verdict == "valid"
    assert client.stats.outcomes == {"connection_error": 1, "ok": 1}
    assert (client.stats.calls, client.stats.retries) == (2, 1)
    assert outcomes(records) == ["connection_error", "ok"]


@pytest.mark.parametrize(
    "broken",
    [FakeReply(reset=True), FakeReply(body={"candidates": []}, truncate=True)],
    ids=["reset", "truncated"],
)
def test_broken_connection_every_time_raises_connection_error(broken: FakeReply) -> None:
    with FakeGemini([broken] * 2) as fake:
        client = make_judge(fake.base_url, max_attempts=2)

        async def scenario() -> None:
            try:
                await ask(client)
            finally:
                await client.aclose()

        with pytest.raises(JudgeConnectionError) as info:
            asyncio.run(scenario())
        assert fake.calls == 2
    assert info.value.reason == "judge connection error"
    assert client.stats.outcomes == {"connection_error": 2}


# -- 7. replies without a verdict -------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "error", "reason"),
    [
        (gemini_blocked_prompt(), JudgeBlocked, "blocked by safety filter"),
        (gemini_blocked_candidate(), JudgeBlocked, "blocked by safety filter"),
        (gemini_empty(), JudgeEmptyReply, "empty reply"),
    ],
    ids=["blocked-prompt", "blocked-candidate", "empty"],
)
def test_blocked_or_empty_reply_is_not_retried(
    reply: FakeReply, error: type[JudgeError], reason: str
) -> None:
    records: list[JudgeCallRecord] = []
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=60)
    with FakeGemini([reply, gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, records=records, breaker=breaker, max_attempts=5)

        async def scenario() -> None:
            try:
                await ask(client)
            finally:
                await client.aclose()

        with pytest.raises(error) as info:
            asyncio.run(scenario())
        assert fake.calls == 1
    assert info.value.reason == reason
    assert (client.stats.calls, client.stats.retries) == (1, 0)
    assert sum(client.stats.outcomes.values()) == 1
    assert "ok" not in client.stats.outcomes
    assert len(records) == 1
    assert breaker.state == "closed"  # the judge answered


def test_empty_reply_outcome_label() -> None:
    with FakeGemini([gemini_empty()]) as fake:
        client = make_judge(fake.base_url)

        async def scenario() -> None:
            try:
                await ask(client)
            finally:
                await client.aclose()

        with pytest.raises(JudgeEmptyReply):
            asyncio.run(scenario())
    assert client.stats.outcomes == {"empty": 1}


def test_blocked_outcome_label_is_blocked_as_documented() -> None:
    records: list[JudgeCallRecord] = []
    with FakeGemini([gemini_blocked_prompt()]) as fake:
        client = make_judge(fake.base_url, records=records)

        async def scenario() -> None:
            try:
                await ask(client)
            finally:
                await client.aclose()

        with pytest.raises(JudgeBlocked):
            asyncio.run(scenario())
    assert client.stats.outcomes == {"blocked": 1}
    assert outcomes(records) == ["blocked"]


@pytest.mark.parametrize(
    "reply",
    [gemini_json({"verdict": "maybe"}), gemini_text("The answer is valid.")],
    ids=["schema-violating", "not-json"],
)
def test_unparsable_reply_is_not_retried_and_not_cached(reply: FakeReply, tmp_path: Any) -> None:
    records: list[JudgeCallRecord] = []
    with FakeGemini([reply, reply, gemini_json(VALID)]) as fake:
        cache = JudgeCache(tmp_path / "c.sqlite")
        client = make_judge(fake.base_url, records=records, cache=cache, max_attempts=5)

        async def scenario() -> tuple[JudgeError, JudgeError]:
            try:
                with pytest.raises(JudgeUnparsableReply) as first:
                    await ask(client)
                with pytest.raises(JudgeUnparsableReply) as second:
                    await ask(client)  # not cached: the judge is asked again
                return first.value, second.value
            finally:
                await client.aclose()

        first, second = asyncio.run(scenario())
        assert fake.calls == 2
    assert first.reason == second.reason == "unparsable reply"
    assert "Verdict" in str(first)
    assert (client.stats.calls, client.stats.retries, client.stats.cache_hits) == (2, 0, 0)
    assert client.stats.outcomes["unparsable"] == 2
    assert outcomes(records).count("unparsable") == 2
    assert "cached" not in outcomes(records)
    assert cache.hits == 0
    # The reply was billed even though it was useless.
    (row,) = client.ledger.rows()
    assert row.calls == 2


def test_fenced_json_reply_is_accepted() -> None:
    with FakeGemini([gemini_text('```json\n{"verdict": "invalid"}\n```')]) as fake:
        client = make_judge(fake.base_url)

        async def scenario() -> Verdict:
            try:
                return await ask(client)
            finally:
                await client.aclose()

        assert asyncio.run(scenario()).verdict == "invalid"


class Explained(BaseModel):
    verdict: Literal["valid", "invalid"]
    reason: str


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"verdict": "valid", "reason": "ok \\ud83d\\ude00"}', "ok 😀"),
        ('{"verdict": "valid", "reason": "cut \\ud83d"}', "cut \ufffd"),  # half an emoji
    ],
)
def test_reply_text_is_read_as_the_trace_readers_read_json(text: str, reason: str) -> None:
    with FakeGemini([gemini_text(text)]) as fake:
        client = make_judge(fake.base_url)

        async def scenario() -> Explained:
            try:
                return await client.ask(REQUEST, Explained, criterion="c", version="1")
            finally:
                await client.aclose()

        reply = asyncio.run(scenario())
    assert (reply.verdict, reply.reason) == ("valid", reason)


# -- 8. circuit breaker -----------------------------------------------------------------------


def test_circuit_breaker_opens_refuses_then_probes_and_closes() -> None:
    records: list[JudgeCallRecord] = []
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=2, reset_after_s=60, clock=clock)
    script = [gemini_error(500), gemini_error(500), gemini_json(VALID), gemini_json(VALID)]
    with FakeGemini(script) as fake:
        client = make_judge(fake.base_url, records=records, breaker=breaker, max_attempts=1)

        async def scenario() -> None:
            try:
                for _ in range(2):
                    with pytest.raises(JudgeHTTPError):
                        await ask(client)
                assert breaker.state == "open"
                assert fake.calls == 2
                with pytest.raises(JudgeUnavailable) as info:
                    await ask(client)
                assert info.value.reason == "judge unavailable"
                assert fake.calls == 2  # refused without calling
                clock.advance(59)
                with pytest.raises(JudgeUnavailable):
                    await ask(client)
                assert fake.calls == 2
                clock.advance(2)  # past reset_after_s: one probe goes through
                assert (await ask(client)).verdict == "valid"
                assert fake.calls == 3
                assert breaker_state(breaker) == "closed"
                assert (await ask(client, sample=1)).verdict == "valid"
                assert fake.calls == 4
            finally:
                await client.aclose()

        asyncio.run(scenario())
    assert client.stats.outcomes == {"http_500": 2, "unavailable": 2, "ok": 2}
    assert client.stats.calls == 4
    assert client.stats.retries == 0
    assert outcomes(records) == ["http_500", "http_500", "unavailable", "unavailable", "ok", "ok"]
    assert breaker.opened_total == 1


def test_unavailable_is_not_retried_even_with_attempts_left() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=2, reset_after_s=60, clock=clock)
    with FakeGemini([gemini_error(503)] * 5) as fake:
        client = make_judge(fake.base_url, breaker=breaker, max_attempts=5)

        async def scenario() -> None:
            try:
                await ask(client)
            finally:
                await client.aclose()

        # Two 503s open the breaker; the third attempt is refused and ends the call.
        with pytest.raises(JudgeUnavailable):
            asyncio.run(scenario())
        assert fake.calls == 2
    assert client.stats.outcomes == {"http_503": 2, "unavailable": 1}
    assert client.stats.retries == 2


def test_calls_queued_behind_a_failing_judge_see_the_breaker_open() -> None:
    records: list[JudgeCallRecord] = []
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=60)
    with FakeGemini([gemini_error(500), gemini_json(VALID), gemini_json(VALID)]) as fake:
        client = make_judge(
            fake.base_url, records=records, breaker=breaker, max_attempts=1, concurrency=1
        )

        async def scenario() -> list[Any]:
            try:
                return await asyncio.gather(
                    *(ask(client, sample=i) for i in range(3)), return_exceptions=True
                )
            finally:
                await client.aclose()

        results = asyncio.run(scenario())
        assert fake.calls == 1
    assert [type(r) for r in results] == [JudgeHTTPError, JudgeUnavailable, JudgeUnavailable]
    assert client.stats.outcomes == {"http_500": 1, "unavailable": 2}
    assert client.stats.calls == 1
    assert outcomes(records) == ["http_500", "unavailable", "unavailable"]


def test_cancelled_probe_lets_another_probe_through() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=60, clock=clock)
    arrived = threading.Event()

    def responder(request: dict[str, Any], n: int) -> FakeReply:
        if n == 0:
            return gemini_error(500)
        if n == 1:
            arrived.set()
            return FakeReply(hang=True)
        return gemini_json(VALID)

    with FakeGemini(responder) as fake:
        client = make_judge(fake.base_url, breaker=breaker, max_attempts=1)

        async def scenario() -> Verdict:
            try:
                with pytest.raises(JudgeHTTPError):
                    await ask(client)
                assert breaker.state == "open"
                clock.advance(61)
                probe = asyncio.create_task(ask(client))
                assert await asyncio.to_thread(arrived.wait, 5)
                # While the probe is out, nobody else gets through.
                with pytest.raises(JudgeUnavailable):
                    await ask(client, sample=1)
                probe.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await probe
                return await ask(client, sample=2)
            finally:
                await client.aclose()

        verdict = asyncio.run(scenario())
        assert fake.calls == 3
    assert verdict.verdict == "valid"
    assert breaker.state == "closed"


# -- 9. budget --------------------------------------------------------------------------------


def test_budget_exhausted_refuses_without_calling() -> None:
    ledger = SpendLedger(PriceTable(), daily_cap_usd=0.000001)
    with FakeGemini([gemini_json(VALID), gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, ledger=ledger)

        async def scenario() -> BudgetExhausted:
            try:
                assert (await ask(client)).verdict == "valid"
                with pytest.raises(BudgetExhausted) as info:
                    await ask(client, sample=1)
                return info.value
            finally:
                await client.aclose()

        exc = asyncio.run(scenario())
        assert fake.calls == 1
    assert exc.reason == "budget exhausted"
    assert ledger.spent_today == pytest.approx((100 * 0.30 + 20 * 2.50) / 1_000_000)
    assert ledger.spent_today > 0.000001
    assert client.stats.calls == 1
    assert client.stats.outcomes.get("ok") == 1


def test_budget_exhausted_is_counted_and_reported() -> None:
    records: list[JudgeCallRecord] = []
    ledger = SpendLedger(PriceTable(), daily_cap_usd=0.000001)
    with FakeGemini([gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, ledger=ledger, records=records)

        async def scenario() -> None:
            try:
                await ask(client)
                with pytest.raises(BudgetExhausted):
                    await ask(client, sample=1)
            finally:
                await client.aclose()

        asyncio.run(scenario())
    assert client.stats.outcomes == {"ok": 1, "budget_exhausted": 1}
    assert outcomes(records) == ["ok", "budget_exhausted"]


def test_budget_reached_during_a_retry_backoff_stops_the_retry() -> None:
    ledger = SpendLedger(PriceTable(), daily_cap_usd=0.000001)
    backing_off = asyncio.Event()
    resume = asyncio.Event()

    async def held_sleep(seconds: float) -> None:
        backing_off.set()
        await resume.wait()

    failing = JudgeRequest(model=MODEL, system=REQUEST.system, prompt="first", schema=SCHEMA)
    with FakeGemini([gemini_error(503), gemini_json(VALID), gemini_json(VALID)]) as fake:
        client = gemini_client(fake.base_url, ledger=ledger, sleep=held_sleep)

        async def scenario() -> None:
            try:
                retrying = asyncio.create_task(ask(client, failing))
                await backing_off.wait()
                # Another call spends past the cap while the first one waits to retry.
                assert (await ask(client)).verdict == "valid"
                resume.set()
                with pytest.raises(BudgetExhausted):
                    await retrying
            finally:
                await client.aclose()

        asyncio.run(scenario())
        assert fake.calls == 2
    assert client.stats.retries == 1
    assert client.stats.outcomes == {"http_503": 1, "ok": 1, "budget_exhausted": 1}


# -- 10. cache --------------------------------------------------------------------------------


def test_cache_hits_per_sample_and_persists_across_clients(tmp_path: Any) -> None:
    path = tmp_path / "c.sqlite"
    records: list[JudgeCallRecord] = []
    with FakeGemini([gemini_json(VALID), gemini_json({"verdict": "invalid"})]) as fake:
        client = make_judge(fake.base_url, cache=JudgeCache(path), records=records)

        async def first_run() -> list[Verdict]:
            try:
                return [
                    await ask(client),
                    await ask(client),  # same request, same sample: a hit
                    await ask(client, sample=1),  # another sample: a new call
                    await ask(client, sample=1),
                ]
            finally:
                await client.aclose()

        verdicts = asyncio.run(first_run())
        assert fake.calls == 2
        assert [v.verdict for v in verdicts] == ["valid", "valid", "invalid", "invalid"]
        assert (client.stats.calls, client.stats.cache_hits) == (2, 2)
        assert client.stats.outcomes == {"ok": 2}
        assert outcomes(records) == ["ok", "cached", "ok", "cached"]
        cached = records[1]
        assert (cached.input_tokens, cached.output_tokens, cached.cost_usd) == (0, 0, None)
        assert client.ledger.rows()[0].calls == 2  # hits cost nothing

        # A new process: a new client and cache on the same file, in a new event loop.
        again = make_judge(fake.base_url, cache=JudgeCache(path))

        async def second_run() -> list[Verdict]:
            try:
                return [await ask(again), await ask(again, sample=1)]
            finally:
                await again.aclose()

        replayed = asyncio.run(second_run())
        assert fake.calls == 2  # nobody called
    assert [v.verdict for v in replayed] == ["valid", "invalid"]
    assert (again.stats.calls, again.stats.cache_hits) == (0, 2)
    assert again.ledger.rows() == []


def test_cache_key_covers_criterion_version() -> None:
    with FakeGemini([gemini_json(VALID), gemini_json({"verdict": "invalid"})]) as fake:
        client = make_judge(fake.base_url, cache=JudgeCache(None))

        async def scenario() -> tuple[Verdict, Verdict]:
            try:
                v1 = await client.ask(REQUEST, Verdict, criterion="c", version="1")
                v2 = await client.ask(REQUEST, Verdict, criterion="c", version="2")
                return v1, v2
            finally:
                await client.aclose()

        v1, v2 = asyncio.run(scenario())
        assert fake.calls == 2
    assert (v1.verdict, v2.verdict) == ("valid", "invalid")
    assert client.stats.cache_hits == 0


class HoldFirst:
    """A responder that answers ``replies`` in turn, holding the first until released."""

    def __init__(self, *replies: FakeReply) -> None:
        self.replies = list(replies)
        self.arrived = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: dict[str, Any], n: int) -> FakeReply:
        if n == 0:
            self.arrived.set()
            if not self.release.wait(timeout=10):
                return gemini_error(400, "never released")
        return self.replies[n]


async def _held(responder: HoldFirst, fake: FakeGemini) -> None:
    """Wait until the first request is held at the fake and no second one follows it.

    The absence check is bounded (0.3 s): the second ask reaches the point where it
    would call long before that.
    """
    assert await asyncio.to_thread(responder.arrived.wait, 5), "the first call never came"
    await asyncio.sleep(0.3)
    assert fake.calls == 1, "the identical call did not wait for the first one"


def test_identical_calls_in_flight_share_one_reply(tmp_path: Any) -> None:
    records: list[JudgeCallRecord] = []
    responder = HoldFirst(gemini_json(VALID))
    with FakeGemini(responder) as fake:
        client = make_judge(fake.base_url, cache=JudgeCache(tmp_path / "c.sqlite"), records=records)

        async def scenario() -> list[Verdict]:
            try:
                both = asyncio.gather(ask(client), ask(client))
                await _held(responder, fake)
                responder.release.set()
                return list(await both)
            finally:
                await client.aclose()

        verdicts = asyncio.run(scenario())
        assert fake.calls == 1
    assert [v.verdict for v in verdicts] == ["valid", "valid"]
    assert (client.stats.calls, client.stats.cache_hits) == (1, 1)
    assert sorted(outcomes(records)) == ["cached", "ok"]
    assert client._asking == {}  # nothing left behind


@pytest.mark.parametrize(
    ("first_reply", "error"),
    [
        (gemini_error(400, "bad request"), JudgeHTTPError),
        (gemini_text("no JSON here"), JudgeUnparsableReply),
    ],
    ids=["failed", "unparsable"],
)
def test_an_unusable_first_reply_is_not_shared(
    first_reply: FakeReply, error: type[JudgeError]
) -> None:
    # Only a usable reply is shared (what the cache would serve): the waiting call asks.
    responder = HoldFirst(first_reply, gemini_json(VALID))
    with FakeGemini(responder) as fake:
        client = make_judge(fake.base_url, cache=JudgeCache(None))

        async def scenario() -> list[Verdict | BaseException]:
            try:
                both = asyncio.gather(ask(client), ask(client), return_exceptions=True)
                await _held(responder, fake)
                responder.release.set()
                return list(await both)
            finally:
                await client.aclose()

        first, second = asyncio.run(scenario())
        assert fake.calls == 2
    assert isinstance(first, error)
    assert isinstance(second, Verdict) and second.verdict == "valid"
    assert client.stats.cache_hits == 0


def test_a_cancelled_first_call_leaves_the_waiting_one_to_ask() -> None:
    responder = HoldFirst(gemini_json({"verdict": "invalid"}), gemini_json(VALID))
    with FakeGemini(responder) as fake:
        client = make_judge(fake.base_url, cache=JudgeCache(None))

        async def scenario() -> Verdict:
            try:
                first = asyncio.ensure_future(ask(client))
                second = asyncio.ensure_future(ask(client))
                await _held(responder, fake)
                first.cancel()
                verdict = await second
                assert first.cancelled()
                return verdict
            finally:
                responder.release.set()
                await client.aclose()

        verdict = asyncio.run(scenario())
    assert verdict.verdict == "valid"
    assert fake.calls == 2


def test_without_a_cache_identical_calls_are_not_shared() -> None:
    responder = HoldFirst(gemini_json(VALID), gemini_json({"verdict": "invalid"}))
    with FakeGemini(responder) as fake:
        client = make_judge(fake.base_url)

        async def scenario() -> list[Verdict]:
            try:
                both = asyncio.gather(ask(client), ask(client))
                assert await asyncio.to_thread(responder.arrived.wait, 5)
                second = await asyncio.to_thread(lambda: _wait_calls(fake, 2))
                responder.release.set()
                assert second, "the second call never came"
                return list(await both)
            finally:
                responder.release.set()
                await client.aclose()

        verdicts = asyncio.run(scenario())
        assert fake.calls == 2
    assert sorted(v.verdict for v in verdicts) == ["invalid", "valid"]


def _wait_calls(fake: FakeGemini, count: int) -> bool:
    deadline = time.monotonic() + 5
    while fake.calls < count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # polling the fake's server threads
    return True


# -- 11. redaction ----------------------------------------------------------------------------

PII = "mail me at jane.doe@example.com, card 4111 1111 1111 1111"


def test_prompt_is_redacted_before_it_leaves() -> None:
    pii = JudgeRequest(model=MODEL, system=REQUEST.system, prompt=PII, schema=SCHEMA)
    other = JudgeRequest(
        model=MODEL,
        system=REQUEST.system,
        prompt=PII.replace("jane.doe", "john.roe"),
        schema=SCHEMA,
    )
    with FakeGemini([gemini_json(VALID), gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, cache=JudgeCache(None))

        async def scenario() -> None:
            try:
                await ask(client, pii)
                # Same text once redacted: the same judge input, so a cache hit.
                await ask(client, other)
            finally:
                await client.aclose()

        asyncio.run(scenario())
        assert fake.calls == 1
        sent = prompt_text(fake.requests[0])
    assert "[REDACTED:email]" in sent
    assert "[REDACTED:card]" in sent
    assert "jane.doe@example.com" not in sent
    assert "4111" not in sent
    assert client.stats.cache_hits == 1
    assert client.redactor.counts["email"] == 2


def test_disabled_redactor_sends_the_prompt_unchanged() -> None:
    pii = JudgeRequest(model=MODEL, system=REQUEST.system, prompt=PII, schema=SCHEMA)
    with FakeGemini([gemini_json(VALID)]) as fake:
        client = make_judge(fake.base_url, redactor=Redactor(enabled=False))

        async def scenario() -> None:
            try:
                await ask(client, pii)
            finally:
                await client.aclose()

        asyncio.run(scenario())
        assert prompt_text(fake.requests[0]) == PII


# -- 12. concurrency cap ----------------------------------------------------------------------


class Gate:
    """A responder that holds every request until the test releases it, oldest first."""

    def __init__(self, reply: FakeReply) -> None:
        self.reply = reply
        self.cond = threading.Condition()
        self.arrivals = 0
        self.released = 0
        self.max_held = 0

    def __call__(self, request: dict[str, Any], n: int) -> FakeReply:
        with self.cond:
            ticket = self.arrivals
            self.arrivals += 1
            self.max_held = max(self.max_held, self.arrivals - self.released)
            self.cond.notify_all()
            released = self.cond.wait_for(lambda: self.released > ticket, timeout=10)
        return self.reply if released else gemini_error(400, "gate never opened")

    def wait_arrivals(self, count: int, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.arrivals >= count, timeout)

    def release(self, count: int) -> None:
        with self.cond:
            self.released += count
            self.cond.notify_all()


def test_concurrency_cap_bounds_calls_in_flight() -> None:
    total, cap = 9, 3
    gate = Gate(gemini_json(VALID))

    def control() -> None:
        try:
            assert gate.wait_arrivals(cap, timeout=5), "the first wave never arrived"
            # All three held: a fourth must not arrive (a bounded absence check).
            assert not gate.wait_arrivals(cap + 1, timeout=0.3), "a 4th call got through"
            while gate.released < total:
                gate.release(1)
                target = min(gate.released + cap, total)
                assert gate.wait_arrivals(target, timeout=5), f"stalled at {gate.arrivals}"
        finally:
            gate.release(total)

    with FakeGemini(gate) as fake:
        client = make_judge(fake.base_url, concurrency=cap)

        async def scenario() -> list[Verdict]:
            tasks = [asyncio.create_task(ask(client, sample=i)) for i in range(total)]
            try:
                await asyncio.to_thread(control)
            finally:
                done = await asyncio.gather(*tasks, return_exceptions=True)
                await client.aclose()
            assert all(isinstance(v, Verdict) for v in done), done
            return [v for v in done if isinstance(v, Verdict)]

        verdicts = asyncio.run(scenario())
        assert fake.calls == total
    assert [v.verdict for v in verdicts] == ["valid"] * total
    assert gate.max_held == cap
    assert client.stats.outcomes == {"ok": total}


def test_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        JudgeClient(BrokenBackend(), concurrency=0)


# -- 13. OpenAI-compatible backend ------------------------------------------------------------

OPENAI_REQUEST = JudgeRequest(
    model=OPENAI_MODEL, system=REQUEST.system, prompt=REQUEST.prompt, schema=SCHEMA
)


def test_openai_backend_end_to_end_with_a_429_retry() -> None:
    records: list[JudgeCallRecord] = []
    clock = FakeClock()
    script = [
        openai_error(429, "slow down", {"Retry-After": "2"}, error_type="rate_limit_error"),
        openai_json({"verdict": "invalid"}, prompt_tokens=40, completion_tokens=7),
    ]
    with FakeOpenAIJudge(script) as fake:
        client = make_judge(
            fake.base_url, backend="openai", records=records, sleep=clock.sleep, clock=clock
        )

        async def scenario() -> Verdict:
            try:
                return await ask(client, OPENAI_REQUEST)
            finally:
                await client.aclose()

        verdict = asyncio.run(scenario())
        assert fake.calls == 2
        body = fake.requests[-1]
    assert verdict == Verdict(verdict="invalid")
    assert client.stats.retries == 1
    assert client.stats.outcomes == {"http_429": 1, "ok": 1}
    assert clock.sleeps[0] >= 2.0  # the Retry-After, honoured
    assert body["model"] == OPENAI_MODEL
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["messages"][0] == {"role": "system", "content": REQUEST.system}
    assert (records[-1].input_tokens, records[-1].output_tokens) == (40, 7)
    assert records[-1].cost_usd is None  # no price known for the fake model
    (row,) = client.ledger.rows()
    assert (row.model, row.calls, row.cost_usd) == (OPENAI_MODEL, 1, None)


def test_openai_backend_500_storm() -> None:
    with FakeOpenAIJudge([openai_error(500)] * 3) as fake:
        client = make_judge(fake.base_url, backend="openai")

        async def scenario() -> None:
            try:
                await ask(client, OPENAI_REQUEST)
            finally:
                await client.aclose()

        with pytest.raises(JudgeHTTPError) as info:
            asyncio.run(scenario())
        assert fake.calls == 3
    assert info.value.reason == "judge error 500"
    assert client.stats.outcomes == {"http_500": 3}


# -- 14. observer -----------------------------------------------------------------------------


def test_a_failing_observer_does_not_cost_the_verdict(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def observer(record: JudgeCallRecord) -> None:
        seen.append(record.outcome)
        raise RuntimeError("metrics backend down")

    with FakeGemini([gemini_error(503), gemini_json(VALID)]) as fake:
        client = gemini_client(fake.base_url, observer=observer)

        async def scenario() -> Verdict:
            try:
                return await ask(client)
            finally:
                await client.aclose()

        verdict = asyncio.run(scenario())
        assert fake.calls == 2
    assert verdict.verdict == "valid"
    assert seen == ["http_503", "ok"]
    assert client.stats.outcomes == {"http_503": 1, "ok": 1}
    assert "judge observer failed" in caplog.text


# -- 15. a broken backend ---------------------------------------------------------------------


class BrokenBackend:
    """A backend with a bug: it raises something outside the JudgeError family."""

    name = "broken"

    def __init__(self, exc: Callable[[], BaseException] = lambda: RuntimeError("boom")) -> None:
        self.exc = exc
        self.calls = 0
        self.closed = False

    async def generate(self, request: JudgeRequest, *, timeout_s: float) -> JudgeReply:
        self.calls += 1
        raise self.exc()

    async def aclose(self) -> None:
        self.closed = True


def test_backend_bug_becomes_a_counted_judge_error() -> None:
    records: list[JudgeCallRecord] = []
    backend = BrokenBackend()
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=60)
    client = JudgeClient(
        backend,
        retry=RetryPolicy(max_attempts=3, initial_s=0.01, max_s=0.05),
        breaker=breaker,
        observer=records.append,
        sleep=_no_wait,
    )

    async def scenario() -> None:
        try:
            await ask(client)
        finally:
            await client.aclose()

    with pytest.raises(JudgeError) as info:
        asyncio.run(scenario())
    assert type(info.value) is JudgeError
    assert "RuntimeError" in str(info.value) and "boom" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.reason == "judge error"
    assert backend.calls == 1  # not retried
    assert client.stats.outcomes == {"error": 1}
    assert client.stats.calls == 1
    assert outcomes(records) == ["error"]
    assert breaker.state == "closed"  # a bug of ours says nothing about the judge
    assert backend.closed


# -- reuse across event loops (what score_conversations does) --------------------------------


def _reuse_runs(client: JudgeClient, runs: int, per_run: int) -> list[list[Any]]:
    """Like repeated ``score_conversations``: one asyncio.run each, backend closed at its end."""

    async def one_run(first: int) -> list[Any]:
        try:
            return await asyncio.gather(
                *(ask(client, sample=first + i) for i in range(per_run)), return_exceptions=True
            )
        finally:
            await client.backend.aclose()

    return [asyncio.run(one_run(run * per_run)) for run in range(runs)]


@pytest.mark.parametrize(
    "backend",
    [
        "openai",
        "gemini",
    ],
)
def test_client_works_again_in_a_later_event_loop_after_backend_aclose(backend: str) -> None:
    replies = [gemini_json(VALID)] * 2 if backend == "gemini" else [openai_json(VALID)] * 2
    fake_type = FakeGemini if backend == "gemini" else FakeOpenAIJudge
    request = REQUEST if backend == "gemini" else OPENAI_REQUEST
    with fake_type(replies) as fake:
        client = make_judge(fake.base_url, backend=backend)

        async def one_run(sample: int) -> Verdict | BaseException:
            try:
                return await ask(client, request, sample=sample)
            except JudgeError as exc:
                return exc
            finally:
                await client.backend.aclose()

        results = [asyncio.run(one_run(0)), asyncio.run(one_run(1))]
        assert results == [Verdict(verdict="valid")] * 2, results
        assert fake.calls == 2
    assert client.stats.outcomes == {"ok": 2}


def test_client_reused_in_a_later_event_loop_under_contention() -> None:
    # OpenAI backend: it reopens after aclose, so only the client's own state is tested.
    with FakeOpenAIJudge([openai_json(VALID)] * 4) as fake:
        client = make_judge(fake.base_url, backend="openai", concurrency=1)
        runs = _reuse_runs(client, runs=2, per_run=2)
        assert runs == [[Verdict(verdict="valid")] * 2] * 2, runs
        assert fake.calls == 4
    assert client.stats.outcomes == {"ok": 4}
