"""The judge backends against local fakes, with the real google-genai and httpx clients.

Gemini tests point google-genai at :class:`FakeGemini` through ``GOOGLE_GEMINI_BASE_URL``
(as a user would point it at a proxy), so the request path, headers, JSON field names and
error handling are google-genai's own. Error mapping documented here:

* a 200 whose body is not JSON, is cut short, or the connection reset: JudgeConnectionError
  (a transport-level failure, retryable), never JudgeUnparsableReply, which is about the
  model's *text* not matching the schema (checked by the client, not the backend);
* a 200 that is JSON but has no candidate / choice: JudgeEmptyReply.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest

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
    openai_content_filter,
    openai_error,
    openai_json,
    openai_refusal,
    openai_text,
)
from tracescore.exceptions import (
    ConfigError,
    JudgeBlocked,
    JudgeConnectionError,
    JudgeEmptyReply,
    JudgeError,
    JudgeHTTPError,
    JudgeTimeout,
)
from tracescore.judge.backends import GeminiBackend, OpenAIBackend, _retry_after
from tracescore.judge.types import JudgeBackend, JudgeReply, JudgeRequest

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}
VERDICT = {"score": 1.0, "reason": "matches the reference"}
REQUEST = JudgeRequest(
    model="gemini-2.5-flash",
    system="You are a strict judge.",
    prompt="Judge this answer: 42",
    schema=SCHEMA,
    temperature=0.0,
    max_output_tokens=256,
)
ENV_VARS = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")


@contextlib.contextmanager
def gemini(monkeypatch: pytest.MonkeyPatch, *replies: FakeReply) -> Iterator[FakeGemini]:
    """A running FakeGemini that google-genai reaches through GOOGLE_GEMINI_BASE_URL."""
    with FakeGemini(list(replies)) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.base_url)
        yield fake


def call(
    backend: JudgeBackend, request: JudgeRequest = REQUEST, timeout_s: float = 5.0
) -> JudgeReply:
    async def go() -> JudgeReply:
        try:
            return await backend.generate(request, timeout_s=timeout_s)
        finally:
            await backend.aclose()

    return asyncio.run(go())


def gemini_call(
    monkeypatch: pytest.MonkeyPatch, reply: FakeReply, **kwargs: Any
) -> tuple[JudgeReply | JudgeError, FakeGemini]:
    """One GeminiBackend call against a fake scripted with ``reply``."""
    with gemini(monkeypatch, reply) as fake:
        try:
            return call(GeminiBackend(), **kwargs), fake
        except JudgeError as exc:
            return exc, fake


def openai_call(reply: FakeReply, **kwargs: Any) -> tuple[JudgeReply | JudgeError, FakeOpenAIJudge]:
    with FakeOpenAIJudge([reply]) as fake:
        try:
            return call(OpenAIBackend(base_url=fake.base_url), **kwargs), fake
        except JudgeError as exc:
            return exc, fake


# --- Gemini: success ---------------------------------------------------------------------


def test_gemini_success_returns_text_tokens_and_model_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reply, fake = gemini_call(
        monkeypatch, gemini_json(VERDICT, input_tokens=123, output_tokens=45, model_version="g-001")
    )
    assert reply == JudgeReply(
        text='{"score": 1.0, "reason": "matches the reference"}',
        input_tokens=123,
        output_tokens=45,
        model_version="g-001",
    )
    [received] = fake.received
    assert received.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert received.headers["x-goog-api-key"] == "test-key"
    assert received.headers["Host"].startswith("127.0.0.1:")
    sent = received.json
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "Judge this answer: 42"}]}]
    assert sent["systemInstruction"]["parts"] == [{"text": "You are a strict judge."}]
    config = sent["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA
    assert config["temperature"] == 0.0
    assert config["maxOutputTokens"] == 256
    assert fake.requests == [sent]


def test_gemini_thinking_tokens_count_as_output(monkeypatch: pytest.MonkeyPatch) -> None:
    reply, _ = gemini_call(
        monkeypatch, gemini_json(VERDICT, input_tokens=10, output_tokens=5, thoughts_tokens=30)
    )
    assert isinstance(reply, JudgeReply)
    assert (reply.input_tokens, reply.output_tokens) == (10, 35)


def test_gemini_defaults_leave_temperature_and_length_to_the_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = dataclasses.replace(REQUEST, temperature=None, max_output_tokens=None)
    _, fake = gemini_call(monkeypatch, gemini_json(VERDICT), request=request)
    config = fake.requests[0]["generationConfig"]
    assert "temperature" not in config
    assert "maxOutputTokens" not in config


def test_gemini_request_config_is_passed_through(monkeypatch: pytest.MonkeyPatch) -> None:
    request = dataclasses.replace(
        REQUEST, config={"topK": 3, "seed": 7, "thinking_config": {"thinking_budget": 0}}
    )
    _, fake = gemini_call(monkeypatch, gemini_json(VERDICT), request=request)
    config = fake.requests[0]["generationConfig"]
    assert config["topK"] == 3
    assert config["seed"] == 7
    # google-genai sends nested fields in snake_case (proto JSON accepts both spellings).
    assert config["thinkingConfig"] == {"thinking_budget": 0}
    assert config["responseJsonSchema"] == SCHEMA


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"not_a_field": 1}, "unknown generation config key 'not_a_field'"),
        ({"response_mime_type": "text/plain"}, "'response_mime_type' is set by tracescore"),
        ({"systemInstruction": "x"}, "'systemInstruction' is set by tracescore"),
        ({"topK": "many"}, "top_k"),
    ],
)
def test_gemini_bad_request_config_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, config: dict[str, Any], match: str
) -> None:
    with gemini(monkeypatch) as fake:
        request = dataclasses.replace(REQUEST, config=config)
        with pytest.raises(ConfigError, match=match):
            call(GeminiBackend(), request=request)
        assert fake.calls == 0


# --- Gemini: HTTP errors (and no retries inside google-genai) ------------------------------


def test_gemini_429_with_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    error, fake = gemini_call(
        monkeypatch, gemini_error(429, "Quota exceeded", headers={"Retry-After": "7"})
    )
    assert isinstance(error, JudgeHTTPError)
    assert (error.status, error.retry_after, error.retryable) == (429, 7.0, True)
    assert error.reason == "judge error 429"
    assert "Quota exceeded" in str(error)
    assert fake.calls == 1  # google-genai did not retry by itself


def test_gemini_429_retry_info_in_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]
    error, _ = gemini_call(monkeypatch, gemini_error(429, "Quota exceeded", details=details))
    assert isinstance(error, JudgeHTTPError)
    assert error.retry_after == 31.0


@pytest.mark.parametrize("status", [500, 503])
def test_gemini_5xx_is_retryable_and_not_retried_by_the_sdk(
    monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    error, fake = gemini_call(monkeypatch, gemini_error(status, "backend error"))
    assert isinstance(error, JudgeHTTPError)
    assert (error.status, error.retryable, error.retry_after) == (status, True, None)
    assert fake.calls == 1


def test_gemini_400_is_not_retryable(monkeypatch: pytest.MonkeyPatch) -> None:
    error, _ = gemini_call(monkeypatch, gemini_error(400, "Invalid JSON schema"))
    assert isinstance(error, JudgeHTTPError)
    assert (error.status, error.retryable) == (400, False)
    assert "INVALID_ARGUMENT" in str(error)
    assert "Invalid JSON schema" in str(error)


def test_gemini_non_json_error_body(monkeypatch: pytest.MonkeyPatch) -> None:
    error, _ = gemini_call(monkeypatch, FakeReply(status=502, raw=b"<html>Bad Gateway</html>"))
    assert isinstance(error, JudgeHTTPError)
    assert (error.status, error.retryable) == (502, True)


# --- Gemini: timeouts and broken connections -----------------------------------------------


def test_gemini_slow_reply_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    slow = dataclasses.replace(gemini_json(VERDICT), delay_s=2.0)
    error, _ = gemini_call(monkeypatch, slow, timeout_s=0.2)
    assert isinstance(error, JudgeTimeout)
    assert error.retryable
    assert "0.2 s" in str(error)
    assert time.monotonic() - started < 1.5  # bounded by timeout_s, not by the server


def test_gemini_hang_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    error, _ = gemini_call(monkeypatch, FakeReply(hang=True), timeout_s=0.2)
    assert isinstance(error, JudgeTimeout)


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply(reset=True),
        dataclasses.replace(gemini_json(VERDICT), truncate=True),
        FakeReply(raw=b'{"candidates": [{"content": '),  # complete HTTP body, broken JSON
    ],
    ids=["reset", "truncated", "malformed-json"],
)
def test_gemini_broken_replies_are_connection_errors(
    monkeypatch: pytest.MonkeyPatch, reply: FakeReply
) -> None:
    error, _ = gemini_call(monkeypatch, reply)
    assert isinstance(error, JudgeConnectionError)
    assert error.retryable


def test_gemini_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeGemini([]) as fake:
        base_url = fake.base_url
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", base_url)  # nothing listens there now
    with pytest.raises(JudgeConnectionError):
        call(GeminiBackend())


# --- Gemini: blocked and empty replies -----------------------------------------------------


@pytest.mark.parametrize("reason", ["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST"])
def test_gemini_blocked_prompt(monkeypatch: pytest.MonkeyPatch, reason: str) -> None:
    error, _ = gemini_call(monkeypatch, gemini_blocked_prompt(reason))
    assert isinstance(error, JudgeBlocked)
    assert reason in str(error)
    assert error.reason == "blocked by safety filter"
    assert not error.retryable


@pytest.mark.parametrize(
    "reason", ["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"]
)
def test_gemini_blocked_candidate(monkeypatch: pytest.MonkeyPatch, reason: str) -> None:
    error, _ = gemini_call(monkeypatch, gemini_blocked_candidate(reason))
    assert isinstance(error, JudgeBlocked)
    assert reason in str(error)


@pytest.mark.parametrize(
    "reply",
    [
        gemini_empty(),
        gemini_blocked_candidate("MAX_TOKENS"),  # a candidate without content
        gemini_text(""),
        FakeReply(body={}),
    ],
    ids=["no-candidates", "no-content", "empty-text", "empty-body"],
)
def test_gemini_empty_reply(monkeypatch: pytest.MonkeyPatch, reply: FakeReply) -> None:
    error, _ = gemini_call(monkeypatch, reply)
    assert isinstance(error, JudgeEmptyReply)
    assert error.reason == "empty reply"


def test_gemini_text_that_is_not_json_is_returned_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    # Schema validation belongs to the client (JudgeUnparsableReply), not the backend.
    reply, _ = gemini_call(monkeypatch, gemini_text("Sure! The score is 1."))
    assert isinstance(reply, JudgeReply)
    assert reply.text == "Sure! The score is 1."


# --- Gemini: configuration -----------------------------------------------------------------


def test_gemini_missing_api_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY")
    with pytest.raises(ConfigError, match="GOOGLE_API_KEY or GEMINI_API_KEY") as info:
        GeminiBackend()
    assert "GOOGLE_GENAI_USE_VERTEXAI" in str(info.value)


def test_gemini_vertex_without_credentials_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    # Application default credentials that cannot be found: no metadata-server lookup.
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="GOOGLE_CLOUD_PROJECT"):
        GeminiBackend()


def test_gemini_project_without_vertex_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="project/location"):
        GeminiBackend(project="my-project")


def test_gemini_key_from_gemini_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    _, fake = gemini_call(monkeypatch, gemini_json(VERDICT))
    assert fake.received[0].headers["x-goog-api-key"] == "gemini-key"


def test_gemini_explicit_arguments_win_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeGemini([gemini_json(VERDICT)]) as fake, FakeGemini([]) as other:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", other.base_url)
        reply = call(GeminiBackend(api_key="explicit-key", base_url=fake.base_url))
    assert isinstance(reply, JudgeReply)
    assert other.calls == 0
    assert fake.received[0].headers["x-goog-api-key"] == "explicit-key"


def test_gemini_vertex_from_env_uses_the_vertex_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    # google-genai alone would read GOOGLE_GEMINI_BASE_URL here: the backend resolves
    # GOOGLE_GENAI_USE_VERTEXAI itself so that GOOGLE_VERTEX_BASE_URL applies.
    with FakeGemini([]) as vertex, FakeGemini([]) as gemini_api:
        monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
        monkeypatch.setenv("GOOGLE_VERTEX_BASE_URL", vertex.base_url)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini_api.base_url)
        with pytest.raises(JudgeHTTPError) as info:  # the fake only serves the Gemini API path
            call(GeminiBackend())
    assert info.value.status == 404
    assert gemini_api.calls == 0
    assert vertex.received[0].path.startswith("/v1beta1/")


# --- Gemini: lifecycle and concurrency -----------------------------------------------------


def test_gemini_backend_built_outside_a_loop_works_across_asyncio_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with gemini(monkeypatch, gemini_json({"n": 0}), gemini_json({"n": 1})) as fake:
        backend = GeminiBackend()
        first = asyncio.run(backend.generate(REQUEST, timeout_s=5))
        second = call(backend)  # a new loop: the old loop's pooled connections are not reused
        assert [first.text, second.text] == ['{"n": 0}', '{"n": 1}']
        assert fake.calls == 2


def test_gemini_concurrent_calls_do_not_serialize(monkeypatch: pytest.MonkeyPatch) -> None:
    n_calls = 64
    with FakeGemini(
        lambda _req, n: dataclasses.replace(gemini_json({"n": n}), delay_s=0.2)
    ) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.base_url)

        async def go() -> list[JudgeReply]:
            backend = GeminiBackend()
            try:
                calls = [backend.generate(REQUEST, timeout_s=10) for _ in range(n_calls)]
                return await asyncio.gather(*calls)
            finally:
                await backend.aclose()

        started = time.monotonic()
        replies = asyncio.run(go())
        elapsed = time.monotonic() - started
    assert sorted(int(r.text.split()[-1].rstrip("}")) for r in replies) == list(range(n_calls))
    assert elapsed < n_calls * 0.2 / 4  # serialized would take 12.8 s


# --- OpenAI-compatible ---------------------------------------------------------------------


def test_openai_success_and_request_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    request = dataclasses.replace(REQUEST, model="llama-judge", config={"seed": 7, "top_p": 0.5})
    with FakeOpenAIJudge([openai_json(VERDICT, prompt_tokens=77, completion_tokens=9)]) as fake:
        backend = OpenAIBackend(base_url=fake.base_url + "/", headers={"X-Team": "eval"})
        reply = call(backend, request)
    assert reply == JudgeReply(
        text='{"score": 1.0, "reason": "matches the reference"}',
        input_tokens=77,
        output_tokens=9,
        model_version="gpt-fake-judge-1",
    )
    [received] = fake.received
    assert received.path == "/v1/chat/completions"
    assert received.headers["Authorization"] == "Bearer sk-test"
    assert received.headers["X-Team"] == "eval"
    assert received.json == {
        "seed": 7,
        "top_p": 0.5,
        "model": "llama-judge",
        "messages": [
            {"role": "system", "content": "You are a strict judge."},
            {"role": "user", "content": "Judge this answer: 42"},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
        },
        "temperature": 0.0,
        "max_tokens": 256,
    }


def test_openai_without_key_sends_no_authorization() -> None:
    request = dataclasses.replace(REQUEST, temperature=None, max_output_tokens=None)
    reply, fake = openai_call(openai_json(VERDICT), request=request)
    assert isinstance(reply, JudgeReply)
    headers = {k.lower() for k in fake.received[0].headers}
    assert "authorization" not in headers
    assert "temperature" not in fake.requests[0]
    assert "max_tokens" not in fake.requests[0]


def test_openai_explicit_key() -> None:
    with FakeOpenAIJudge([openai_json(VERDICT)]) as fake:
        call(OpenAIBackend(base_url=fake.base_url, api_key="sk-explicit"))
    assert fake.received[0].headers["Authorization"] == "Bearer sk-explicit"


def test_openai_429_with_retry_after_http_date() -> None:
    when = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=120), usegmt=True)
    error, _ = openai_call(openai_error(429, "Rate limit reached", headers={"Retry-After": when}))
    assert isinstance(error, JudgeHTTPError)
    assert error.status == 429
    assert error.retry_after is not None and 100 < error.retry_after <= 120
    assert "Rate limit reached" in str(error)


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (503, True), (400, False)])
def test_openai_http_errors(status: int, retryable: bool) -> None:
    error, fake = openai_call(openai_error(status, "nope", headers={"Retry-After": "2"}))
    assert isinstance(error, JudgeHTTPError)
    assert (error.status, error.retryable, error.retry_after) == (status, retryable, 2.0)
    assert fake.calls == 1


def test_openai_non_json_error_body() -> None:
    error, _ = openai_call(FakeReply(status=502, raw=b"<html>Bad Gateway</html>"))
    assert isinstance(error, JudgeHTTPError)
    assert "Bad Gateway" in str(error)


@pytest.mark.parametrize(
    "reply",
    [dataclasses.replace(openai_json(VERDICT), delay_s=2.0), FakeReply(hang=True)],
    ids=["slow", "hang"],
)
def test_openai_timeouts(reply: FakeReply) -> None:
    started = time.monotonic()
    error, _ = openai_call(reply, timeout_s=0.2)
    assert isinstance(error, JudgeTimeout)
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply(reset=True),
        dataclasses.replace(openai_json(VERDICT), truncate=True),
        FakeReply(raw=b'{"choices": ['),
        FakeReply(raw=b'"just a string"'),
    ],
    ids=["reset", "truncated", "malformed-json", "not-an-object"],
)
def test_openai_broken_replies_are_connection_errors(reply: FakeReply) -> None:
    error, _ = openai_call(reply)
    assert isinstance(error, JudgeConnectionError)


@pytest.mark.parametrize(
    ("reply", "match"),
    [(openai_content_filter(), "content filter"), (openai_refusal("I won't grade that."), "won't")],
)
def test_openai_blocked(reply: FakeReply, match: str) -> None:
    error, _ = openai_call(reply)
    assert isinstance(error, JudgeBlocked)
    assert match in str(error)


@pytest.mark.parametrize(
    "reply",
    [FakeReply(body={"choices": [], "model": "m"}), openai_text(None), openai_text("")],
    ids=["no-choices", "null-content", "empty-content"],
)
def test_openai_empty_reply(reply: FakeReply) -> None:
    error, _ = openai_call(reply)
    assert isinstance(error, JudgeEmptyReply)


def test_openai_config_cannot_override_owned_keys() -> None:
    with FakeOpenAIJudge([]) as fake:
        backend = OpenAIBackend(base_url=fake.base_url)
        with pytest.raises(ConfigError, match="'stream'"):
            call(backend, dataclasses.replace(REQUEST, config={"stream": True}))
    assert fake.calls == 0


def test_openai_bad_base_url() -> None:
    with pytest.raises(ConfigError, match="http"):
        OpenAIBackend(base_url="127.0.0.1:8000/v1")


def test_openai_backend_works_across_asyncio_runs() -> None:
    with FakeOpenAIJudge([openai_json({"n": 0}), openai_json({"n": 1})]) as fake:
        backend = OpenAIBackend(base_url=fake.base_url)
        first = asyncio.run(backend.generate(REQUEST, timeout_s=5))
        second = call(backend)
    assert [first.text, second.text] == ['{"n": 0}', '{"n": 1}']


# --- the network guard and Retry-After parsing ---------------------------------------------


def _raised_by_the_guard(exc: BaseException) -> bool:
    """Whether the guard's NetworkAccessError is ``exc`` or inside it (anyio may group it)."""
    if "may not reach the network" in str(exc):
        return True
    inner = [*getattr(exc, "exceptions", ()), exc.__cause__, exc.__context__]
    return any(_raised_by_the_guard(e) for e in inner if e is not None)


@pytest.mark.parametrize("make", [GeminiBackend, OpenAIBackend], ids=["gemini", "openai"])
def test_network_guard_stops_any_non_loopback_judge_call(make: Any) -> None:
    # 192.0.2.1 is TEST-NET-1: an IP literal, so no DNS lookup happens either. The guard's
    # error is not a JudgeError on purpose: a test reaching out fails loudly.
    base_url = "http://192.0.2.1:9" + ("/v1" if make is OpenAIBackend else "")
    with pytest.raises(BaseException) as info:  # noqa: PT011 - checked just below
        call(make(base_url=base_url))
    assert not isinstance(info.value, JudgeError)
    assert _raised_by_the_guard(info.value)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": " 1.5 "}, 1.5),
        ({"Retry-After": "-1"}, None),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),  # in the past
    ],
)
def test_retry_after_parsing(headers: dict[str, str], expected: float | None) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=timezone.utc).timestamp()
    assert _retry_after(headers, now=now) == expected
