"""The fake judge servers themselves: routing, scripting, misbehaviour, concurrency, shutdown."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time
from typing import Any

import httpx
import pytest

from fake_judges import (
    FakeGemini,
    FakeOpenAIJudge,
    FakeReply,
    gemini_error,
    gemini_json,
    openai_json,
)

GEMINI_PATH = "/v1beta/models/gemini-2.5-flash:generateContent"


def post(base_url: str, path: str, body: Any, timeout: float = 5.0) -> tuple[int, bytes]:
    """One plain http.client POST; returns status and the full body."""
    host, port = base_url.removeprefix("http://").split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_list_responder_pops_replies_records_requests_and_runs_dry() -> None:
    with FakeGemini([gemini_json({"a": 1}), gemini_error(429, "slow down")]) as fake:
        first = post(fake.base_url, GEMINI_PATH, {"n": 1})
        second = post(fake.base_url, GEMINI_PATH, {"n": 2})
        third = post(fake.base_url, GEMINI_PATH, {"n": 3})
        missing = post(fake.base_url, "/v1/models/x:countTokens", {"n": 4})
    assert first[0] == 200
    assert json.loads(json.loads(first[1])["candidates"][0]["content"]["parts"][0]["text"]) == {
        "a": 1
    }
    assert second[0] == 429
    assert json.loads(second[1])["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert third[0] == 500  # script exhausted
    assert missing[0] == 404
    assert fake.requests == [{"n": 1}, {"n": 2}, {"n": 3}]  # routed requests only
    assert fake.calls == 4
    assert [r.path for r in fake.received][-1] == "/v1/models/x:countTokens"


def test_a_streamed_request_gets_the_replys_chunks_as_server_sent_events() -> None:
    def halves(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"half": 1, **body}, {"half": 2}]

    stream_path = GEMINI_PATH.replace(":generateContent", ":streamGenerateContent?alt=sse")
    replies = [gemini_json({"a": 1}), gemini_json({"a": 2}), gemini_error(429, "slow down")]
    with FakeGemini(replies, chunks=halves) as fake:
        streamed = post(fake.base_url, stream_path, {})
        plain = post(fake.base_url, GEMINI_PATH, {})
        refused = post(fake.base_url, stream_path, {})
    assert streamed[0] == 200
    events = streamed[1].split(b"\r\n\r\n")
    assert events[-1] == b""
    first, second = (json.loads(e.removeprefix(b"data: ")) for e in events[:-1])
    assert first["half"] == 1 and "candidates" in first
    assert second == {"half": 2}
    assert "candidates" in json.loads(plain[1])  # not streamed: one JSON body
    assert refused[0] == 429 and json.loads(refused[1])["error"]["code"] == 429


def test_callable_responder_gets_the_request_and_its_index() -> None:
    seen: list[tuple[Any, int]] = []

    def responder(request: dict[str, Any], n: int) -> FakeReply:
        seen.append((request, n))
        return openai_json({"n": n})

    with FakeOpenAIJudge(responder) as fake:
        assert fake.base_url.endswith("/v1")
        for i in range(3):
            status, _ = post(fake.base_url, "/v1/chat/completions", {"i": i})
            assert status == 200
    assert seen == [({"i": 0}, 0), ({"i": 1}, 1), ({"i": 2}, 2)]


def test_a_raising_responder_answers_500() -> None:
    def responder(request: dict[str, Any], n: int) -> FakeReply:
        raise ValueError("broken test")

    with FakeOpenAIJudge(responder) as fake:
        status, body = post(fake.base_url, "/v1/chat/completions", {})
    assert status == 500
    assert b"broken test" in body


def test_reset_truncate_and_raw() -> None:
    script = [
        FakeReply(reset=True),
        FakeReply(body={"long": "x" * 1000}, truncate=True),
        FakeReply(raw=b"{not json", status=200),
    ]
    with FakeGemini(script) as fake:
        with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
            post(fake.base_url, GEMINI_PATH, {})
        with pytest.raises(http.client.IncompleteRead):
            post(fake.base_url, GEMINI_PATH, {})
        assert post(fake.base_url, GEMINI_PATH, {}) == (200, b"{not json")


def test_extra_headers_are_sent() -> None:
    with FakeGemini([gemini_error(503, "busy", headers={"Retry-After": "9"})]) as fake:
        response = httpx.post(fake.base_url + GEMINI_PATH, json={})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "9"


@pytest.mark.parametrize("reply", [FakeReply(hang=True), FakeReply(delay_s=30.0)])
def test_shutdown_is_quick_with_a_request_in_flight(reply: FakeReply) -> None:
    arrived = threading.Event()
    finished = threading.Event()
    outcome: list[BaseException] = []

    def responder(request: dict[str, Any], n: int) -> FakeReply:
        arrived.set()
        return reply

    def client(base_url: str) -> None:
        try:
            post(base_url, GEMINI_PATH, {}, timeout=30)
        except (OSError, http.client.HTTPException) as exc:
            outcome.append(exc)
        finally:
            finished.set()

    fake = FakeGemini(responder).__enter__()
    thread = threading.Thread(target=client, args=(fake.base_url,), daemon=True)
    thread.start()
    assert arrived.wait(5)
    started = time.monotonic()
    fake.close()
    assert time.monotonic() - started < 2
    assert finished.wait(5)
    assert outcome  # the client saw the connection close without a reply


def test_64_concurrent_slow_requests_are_served_in_parallel() -> None:
    # Every handler waits at a barrier for all 64: a server that serialized requests would
    # break the barrier (and answer 500) instead of replying.
    n_requests = 64
    barrier = threading.Barrier(n_requests, timeout=10)

    def responder(request: dict[str, Any], n: int) -> FakeReply:
        barrier.wait()
        return FakeReply(body={"n": n}, delay_s=0.2)

    async def go(base_url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=20) as client:
            calls = [client.post(base_url + GEMINI_PATH, json={"i": i}) for i in range(n_requests)]
            return await asyncio.gather(*calls)

    with FakeGemini(responder) as fake:
        responses = asyncio.run(go(fake.base_url))
        assert fake.calls == n_requests
    assert [r.status_code for r in responses] == [200] * n_requests
    assert sorted(r.json()["n"] for r in responses) == list(range(n_requests))
