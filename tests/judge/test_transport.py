"""ShardedTransport: small connection pools, reused, against a real local HTTP server.

The fake judge server records every TCP connection a client opens, so connection reuse
(and the churn it prevents) is counted, not assumed. Concurrency is made exact with a
barrier in the server: every request of a round waits there until the whole round has
arrived, so all of them are in flight at once.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from fake_judges import FakeGemini, FakeOpenAIJudge, FakeReply, gemini_json, openai_json
from tracescore.judge.backends import GeminiBackend
from tracescore.judge.transport import ShardedTransport
from tracescore.judge.types import JudgeRequest

OK = openai_json({"ok": True})


def together(n: int, reply: FakeReply) -> Callable[[Any, int], FakeReply]:
    """A responder that holds each request until ``n`` are in flight."""
    barrier = threading.Barrier(n, timeout=10)

    def respond(_request: Any, _n: int) -> FakeReply:
        barrier.wait()
        return reply

    return respond


async def post_all(client: httpx.AsyncClient, url: str, n: int) -> list[int]:
    responses = await asyncio.gather(*(client.post(url, json={"i": i}) for i in range(n)))
    return [r.status_code for r in responses]


def test_concurrent_requests_spread_over_pools_of_bounded_size() -> None:
    transport = ShardedTransport(shard_connections=4)
    with FakeOpenAIJudge(together(10, OK)) as fake:

        async def go() -> list[int]:
            async with httpx.AsyncClient(transport=transport) as client:
                statuses = await post_all(client, f"{fake.base_url}/chat/completions", 10)
                assert transport.pools == 3  # 4 + 4 + 2
                assert transport.in_flight == 0
                return statuses

        assert asyncio.run(go()) == [200] * 10
        assert fake.connections_opened == 10


def test_connections_are_reused_round_after_round() -> None:
    # httpx's default pool keeps 20 idle connections: 24 in flight would close and reopen
    # 4 on every round. Pools of 8 keep all 24.
    rounds, n = 3, 24
    with FakeOpenAIJudge(together(n, OK)) as fake:

        async def go() -> None:
            transport = ShardedTransport(shard_connections=8)
            async with httpx.AsyncClient(transport=transport) as client:
                for _ in range(rounds):
                    assert (
                        await post_all(client, f"{fake.base_url}/chat/completions", n) == [200] * n
                    )
                assert transport.pools == 3

        asyncio.run(go())
        assert fake.calls == rounds * n
        assert fake.connections_opened == n


def test_sequential_requests_stay_on_one_connection() -> None:
    with FakeOpenAIJudge(lambda _r, _n: OK) as fake:

        async def go() -> ShardedTransport:
            transport = ShardedTransport()
            async with httpx.AsyncClient(transport=transport) as client:
                for _ in range(5):
                    assert (
                        await client.post(f"{fake.base_url}/chat/completions", json={})
                    ).status_code == 200
            return transport

        transport = asyncio.run(go())
        assert (fake.connections_opened, transport.pools) == (1, 0)  # closed with the client


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_failed_request_gives_its_slot_back() -> None:
    url = f"http://127.0.0.1:{free_port()}/"  # nothing listens there: connection refused

    async def go() -> tuple[int, int]:
        transport = ShardedTransport(shard_connections=1)
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(5):
                with pytest.raises(httpx.ConnectError):
                    await client.post(url, json={})
            return transport.pools, transport.in_flight

    assert asyncio.run(go()) == (1, 0)


def test_a_cancelled_request_gives_its_slot_back() -> None:
    release = threading.Event()

    def slow_then_fast(_request: Any, n: int) -> FakeReply:
        if n == 0:
            release.wait(10)
        return OK

    with FakeOpenAIJudge(slow_then_fast) as fake:

        async def go() -> tuple[int, int, int]:
            transport = ShardedTransport(shard_connections=1)
            async with httpx.AsyncClient(transport=transport) as client:
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(
                        client.post(f"{fake.base_url}/chat/completions", json={}), 0.1
                    )
                release.set()
                status = (
                    await client.post(f"{fake.base_url}/chat/completions", json={})
                ).status_code
                return status, transport.pools, transport.in_flight

        assert asyncio.run(go()) == (200, 1, 0)


def test_a_streamed_response_holds_its_slot_until_closed() -> None:
    with FakeOpenAIJudge(lambda _r, _n: OK) as fake:

        async def go() -> list[int]:
            transport = ShardedTransport(shard_connections=1)
            seen = []
            async with httpx.AsyncClient(transport=transport) as client:
                async with client.stream(
                    "POST", f"{fake.base_url}/chat/completions", json={}
                ) as response:
                    seen.append(transport.in_flight)
                    await response.aread()
                    await response.aclose()
                    seen.append(transport.in_flight)
                seen.append(transport.in_flight)  # closing twice releases once
            return seen

        assert asyncio.run(go()) == [1, 0, 0]


def test_shard_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ShardedTransport(shard_connections=0)


def test_gemini_backend_keeps_its_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    # Through google-genai: 24 calls in flight twice open 24 connections, not 24 + churn.
    n = 24
    request = JudgeRequest(model="gemini-2.5-flash", system="s", prompt="p", schema={})
    for var in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_VERTEX_BASE_URL", "GEMINI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with FakeGemini(together(n, gemini_json({"ok": True}))) as fake:

        async def go() -> None:
            backend = GeminiBackend(api_key="k", base_url=fake.base_url)
            try:
                for _ in range(2):
                    calls = [backend.generate(request, timeout_s=10) for _ in range(n)]
                    replies = await asyncio.gather(*calls)
                    assert {r.text for r in replies} == {'{"ok": true}'}
            finally:
                await backend.aclose()

        asyncio.run(go())
        assert (fake.calls, fake.connections_opened) == (2 * n, n)
