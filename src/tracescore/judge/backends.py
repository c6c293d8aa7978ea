"""Judge providers: Gemini through google-genai, and OpenAI-compatible chat servers.

Each backend implements :class:`~tracescore.judge.types.JudgeBackend`: ``generate`` makes
exactly one attempt, bounded by ``timeout_s``, and raises only the
:class:`~tracescore.exceptions.JudgeError` family (``raise ... from`` the provider's
error), so retries, limits and the circuit breaker in the judge client behave the same for
every provider. Request options a provider does not know are a :class:`ConfigError`.

Lifecycle: a backend can be built outside any event loop. Its httpx connection pool belongs
to the loop that first uses it; if ``generate`` later runs in another loop (a second
``asyncio.run``), a fresh pool is started there and the old one dropped (its connections
cannot be used from a new loop). ``aclose`` releases the pool; the backend is then done.
google-genai is given our own ``httpx.AsyncClient`` so that it never switches to aiohttp.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any, Final

import google.auth.exceptions as auth_errors
import httpx
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from tracescore.exceptions import (
    ConfigError,
    JudgeBlocked,
    JudgeConnectionError,
    JudgeEmptyReply,
    JudgeHTTPError,
    JudgeTimeout,
)
from tracescore.judge.transport import ShardedTransport
from tracescore.judge.types import JudgeReply, JudgeRequest

__all__ = ["GeminiBackend", "OpenAIBackend"]

logger = logging.getLogger(__name__)

#: Candidate finish reasons that mean a safety filter withheld the reply.
_BLOCKING_FINISH: Final = frozenset(
    {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"}
    | {"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT"}
)
#: GenerateContentConfig fields the backend sets itself: a request's ``config`` may not.
_GEMINI_OWNED: Final = frozenset(
    {"system_instruction", "response_mime_type", "response_schema", "response_json_schema"}
    | {"http_options", "should_return_http_response"}
)
#: GenerateContentConfig field names, by field name and by camelCase alias.
_GEMINI_FIELDS: Final = {
    key: name
    for name, info in genai_types.GenerateContentConfig.model_fields.items()
    for key in (name, info.alias or name)
}
#: Chat-completion body keys the backend sets itself.
_OPENAI_OWNED: Final = frozenset({"model", "messages", "response_format", "stream"})
_CREDENTIALS_HELP: Final = (
    "set GOOGLE_API_KEY or GEMINI_API_KEY for the Gemini API, or GOOGLE_GENAI_USE_VERTEXAI=true"
    " with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (and application default"
    " credentials) for Vertex AI"
)
_MAX_MESSAGE: Final = 300


def _retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110 §10.2.3), if there is one.

    Args:
        headers: Response headers; the name is matched case-insensitively.
        now: Current Unix time, for HTTP-date values (defaults to ``time.time()``).

    Returns:
        The delta-seconds value, or the time until the HTTP-date (0 if it is past);
        None when the header is absent or unreadable.

    """
    value = next((v.strip() for k, v in (headers or {}).items() if k.lower() == "retry-after"), "")
    seconds = _seconds(value)
    if seconds is not None or not value:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _google_retry_delay(details: Any) -> float | None:
    """``retryDelay`` of a ``google.rpc.RetryInfo`` in a Google error body (``"31s"``)."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not str(item.get("@type", "")).endswith("RetryInfo"):
            continue
        delay = item.get("retryDelay")
        return _seconds(delay[:-1]) if isinstance(delay, str) and delay.endswith("s") else None
    return None


def _seconds(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _short(text: object) -> str:
    """One bounded line of provider text for an error message."""
    line = " ".join(str(text).split())
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 1] + "…"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _env_vertexai() -> bool | None:
    """``GOOGLE_GENAI_USE_ENTERPRISE``, else ``GOOGLE_GENAI_USE_VERTEXAI`` (as genai reads them)."""
    for var in ("GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_GENAI_USE_VERTEXAI"):
        value = os.environ.get(var)
        if value is not None:
            return value.strip().lower() in ("true", "1")
    return None


#: Limits of the pools httpx opens itself, for proxies from the environment. Unbounded as
#: JudgeClient's concurrency cap bounds the calls in flight: httpx's default of 20 idle
#: connections made a cap of 32 close and reopen 12 connections on every round of calls.
_PROXY_POOL_LIMITS: Final = httpx.Limits(max_connections=None, max_keepalive_connections=None)


def _new_http(**kwargs: Any) -> httpx.AsyncClient:
    # No client-side timeout (the caller bounds each call); small pools (see transport.py);
    # httpx honours SSL_CERT_FILE / SSL_CERT_DIR and proxies from the env.
    return httpx.AsyncClient(
        timeout=None, transport=ShardedTransport(), limits=_PROXY_POOL_LIMITS, **kwargs
    )


def _new_gemini_http() -> httpx.AsyncClient:
    return _new_http(follow_redirects=True)  # as google-genai's own client


class GeminiBackend:
    """Gemini (Gemini API or Vertex AI) through google-genai's async client.

    Credentials and endpoint default to what google-genai reads from the environment:
    ``GOOGLE_API_KEY`` / ``GEMINI_API_KEY``, ``GOOGLE_GENAI_USE_VERTEXAI``,
    ``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``, and ``GOOGLE_GEMINI_BASE_URL`` /
    ``GOOGLE_VERTEX_BASE_URL`` for the base URL. google-genai's own retries are disabled.

    Args:
        api_key: API key (Gemini API, or Vertex AI express mode).
        vertexai: Use Vertex AI; None reads ``GOOGLE_GENAI_USE_VERTEXAI``.
        project: Google Cloud project (Vertex AI only).
        location: Google Cloud location (Vertex AI only).
        base_url: Endpoint override; None keeps the env var or the public endpoint.

    Raises:
        ConfigError: Missing or contradictory credentials (the message names the env vars).

    """

    name = "gemini"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        vertexai: bool | None = None,
        project: str | None = None,
        location: str | None = None,
        base_url: str | None = None,
    ) -> None:
        # google-genai picks GOOGLE_VERTEX_BASE_URL only when vertexai is passed explicitly:
        # with GOOGLE_GENAI_USE_VERTEXAI alone it would read GOOGLE_GEMINI_BASE_URL.
        self._settings: dict[str, Any] = {
            "api_key": api_key,
            "vertexai": _env_vertexai() if vertexai is None else vertexai,
            "project": project,
            "location": location,
        }
        self._base_url = base_url
        self._http = _new_gemini_http()
        self._client = self._new_client(self._http)
        self._loop: asyncio.AbstractEventLoop | None = None

    def _new_client(self, http: httpx.AsyncClient) -> genai.Client:
        options = genai_types.HttpOptions(
            retry_options=genai_types.HttpRetryOptions(attempts=1),
            httpx_async_client=http,
        )
        if self._base_url is not None:
            options.base_url = self._base_url
        try:
            return genai.Client(**self._settings, http_options=options)
        # ValueError: google-genai's "No API key was provided", "... project/location", ...
        except (auth_errors.DefaultCredentialsError, ValueError) as exc:
            raise ConfigError(f"gemini judge: {_short(exc)}; {_CREDENTIALS_HELP}") from exc

    def _client_for_running_loop(self) -> genai.Client:
        loop = asyncio.get_running_loop()
        if self._http.is_closed or (self._loop is not None and self._loop is not loop):
            # A new event loop, or reused after aclose(): a fresh connection pool.
            logger.debug("gemini judge: starting a new connection pool")
            self._client.close()  # the sync side; the old async pool cannot be closed from here
            self._http = _new_gemini_http()
            self._client = self._new_client(self._http)
        self._loop = loop
        return self._client

    async def generate(self, request: JudgeRequest, *, timeout_s: float) -> JudgeReply:
        """One ``generateContent`` call, bounded by ``timeout_s`` seconds.

        Raises:
            JudgeTimeout: No reply in time.
            JudgeHTTPError: An HTTP error status (``retry_after`` from ``Retry-After`` or
                the error's ``google.rpc.RetryInfo``); 401 for credentials that fail to refresh.
            JudgeConnectionError: Connection refused or reset, a half-written or
                non-JSON response body.
            JudgeBlocked: The prompt or the reply was blocked by a safety filter.
            JudgeEmptyReply: No candidate, or a candidate without text.
            ConfigError: ``request.config`` names an unknown or reserved option.

        """
        config = _gemini_config(request)
        client = self._client_for_running_loop()
        call = client.aio.models.generate_content(
            model=request.model, contents=request.prompt, config=config
        )
        try:
            response = await asyncio.wait_for(call, timeout_s)
        except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
            raise JudgeTimeout(f"gemini: no reply within {timeout_s:g} s") from exc
        except genai_errors.APIError as exc:
            raise _gemini_http_error(exc) from exc
        except (httpx.RequestError, OSError, auth_errors.TransportError) as exc:
            raise JudgeConnectionError(f"gemini: {type(exc).__name__}: {_short(exc)}") from exc
        except (json.JSONDecodeError, pydantic.ValidationError) as exc:
            raise JudgeConnectionError(f"gemini: malformed response body: {_short(exc)}") from exc
        except auth_errors.GoogleAuthError as exc:  # e.g. RefreshError: credentials rejected
            raise JudgeHTTPError(401, f"gemini: credentials: {_short(exc)}") from exc
        return _gemini_reply(response)

    async def aclose(self) -> None:
        """Close the connection pool (when its loop is still usable) and the sync client."""
        self._client.close()
        loop = asyncio.get_running_loop()
        if self._loop is None or self._loop is loop:
            await self._http.aclose()
        self._loop = None


def _gemini_config(request: JudgeRequest) -> genai_types.GenerateContentConfig:
    options: dict[str, Any] = {}
    for key, value in request.config.items():
        name = _GEMINI_FIELDS.get(key)
        if name is None:
            raise ConfigError(f"gemini judge: unknown generation config key {key!r}")
        if name in _GEMINI_OWNED:
            raise ConfigError(f"gemini judge: generation config key {key!r} is set by tracescore")
        options[name] = value
    options.setdefault(
        "automatic_function_calling", genai_types.AutomaticFunctionCallingConfig(disable=True)
    )
    options.update(
        system_instruction=request.system,
        response_mime_type="application/json",
        response_json_schema=dict(request.schema),
    )
    if request.temperature is not None:
        options["temperature"] = request.temperature
    if request.max_output_tokens is not None:
        options["max_output_tokens"] = request.max_output_tokens
    try:
        return genai_types.GenerateContentConfig(**options)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"gemini judge: generation config {where}: {first['msg']}") from exc


def _gemini_http_error(exc: genai_errors.APIError) -> JudgeHTTPError:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    retry_after = _retry_after(headers) if isinstance(headers, Mapping) else None
    if retry_after is None:
        retry_after = _google_retry_delay(exc.details)
    status = exc.code if isinstance(exc.code, int) else 500
    text = " ".join(str(part) for part in (exc.status, exc.message) if part)
    return JudgeHTTPError(status, f"gemini: HTTP {status} {_short(text)}", retry_after=retry_after)


def _gemini_reply(response: genai_types.GenerateContentResponse) -> JudgeReply:
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        reason = getattr(feedback.block_reason, "value", feedback.block_reason)
        detail = _short(feedback.block_reason_message or "")
        raise JudgeBlocked(f"gemini blocked the prompt: {reason} {detail}".rstrip())
    if not response.candidates:
        raise JudgeEmptyReply("gemini: no candidate in the reply")
    finish = response.candidates[0].finish_reason
    finish_name = str(getattr(finish, "value", finish)) if finish is not None else None
    if finish_name in _BLOCKING_FINISH:
        raise JudgeBlocked(f"gemini blocked the reply: finish reason {finish_name}")
    text = response.text
    if not text:
        raise JudgeEmptyReply(f"gemini: no text in the reply (finish reason {finish_name})")
    usage = response.usage_metadata or genai_types.GenerateContentResponseUsageMetadata()
    return JudgeReply(
        text=text,
        input_tokens=usage.prompt_token_count or 0,
        # Thinking tokens are billed as output.
        output_tokens=(usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
        model_version=response.model_version,
    )


class OpenAIBackend:
    """An OpenAI-compatible ``/chat/completions`` server (OpenAI, vLLM, Ollama, LiteLLM).

    Replies are requested as structured output (``response_format`` ``json_schema``,
    strict). The httpx client is created on first use, inside the running loop.

    Args:
        base_url: API root including the version, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: Bearer token; None reads ``OPENAI_API_KEY``; none at all sends no
            ``Authorization`` header (self-hosted servers).
        headers: Extra headers sent with every request.

    Raises:
        ConfigError: ``base_url`` is not an http(s) URL.

    """

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"openai judge: base_url must be an http(s) URL, got {base_url!r}")
        self._url = base_url.rstrip("/") + "/chat/completions"
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._headers.update(headers or {})
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _http_for_running_loop(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            self._http = _new_http(headers=self._headers)
            self._loop = loop
        return self._http

    async def generate(self, request: JudgeRequest, *, timeout_s: float) -> JudgeReply:
        """One chat-completion call, bounded by ``timeout_s`` seconds.

        Raises:
            JudgeTimeout: No reply in time.
            JudgeHTTPError: A non-2xx status (message from ``error.message``,
                ``retry_after`` from ``Retry-After``).
            JudgeConnectionError: Connection refused or reset, a half-written or
                non-JSON response body.
            JudgeBlocked: ``finish_reason`` ``content_filter``, or a ``refusal``.
            JudgeEmptyReply: No choice, or no content.
            ConfigError: ``request.config`` sets a key the backend owns.

        """
        body = _openai_body(request)
        http = self._http_for_running_loop()
        try:
            response = await asyncio.wait_for(http.post(self._url, json=body), timeout_s)
        except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
            raise JudgeTimeout(f"openai: no reply within {timeout_s:g} s") from exc
        except (httpx.RequestError, OSError) as exc:
            raise JudgeConnectionError(f"openai: {type(exc).__name__}: {_short(exc)}") from exc
        try:
            payload = response.json()
        except ValueError:  # JSONDecodeError or UnicodeDecodeError
            payload = None
        if not 200 <= response.status_code < 300:
            raise JudgeHTTPError(
                response.status_code,
                f"openai: HTTP {response.status_code} {_openai_error(payload, response.text)}",
                retry_after=_retry_after(response.headers),
            )
        if not isinstance(payload, dict):
            raise JudgeConnectionError(f"openai: malformed response body: {_short(response.text)}")
        return _openai_reply(payload)

    async def aclose(self) -> None:
        """Close the httpx client, if one was created in this loop."""
        http, self._http = self._http, None
        if http is not None and self._loop is asyncio.get_running_loop():
            await http.aclose()
        self._loop = None


def _openai_body(request: JudgeRequest) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key, value in request.config.items():
        if key in _OPENAI_OWNED:
            raise ConfigError(f"openai judge: request option {key!r} is set by tracescore")
        body[key] = value
    body.update(
        model=request.model,
        messages=[
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.prompt},
        ],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": dict(request.schema), "strict": True},
        },
    )
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_output_tokens is not None:
        body["max_tokens"] = request.max_output_tokens
    return body


def _openai_error(payload: object, text: str) -> str:
    error = payload.get("error", payload) if isinstance(payload, dict) else None
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail")
        if message:
            return _short(message)
    if isinstance(error, str):
        return _short(error)
    return _short(text)


def _openai_reply(payload: dict[str, Any]) -> JudgeReply:
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise JudgeEmptyReply("openai: no choice in the reply")
    choice = choices[0]
    message = _dict(choice.get("message"))
    if choice.get("finish_reason") == "content_filter":
        raise JudgeBlocked("openai: reply stopped by the content filter")
    if message.get("refusal"):
        raise JudgeBlocked(f"openai: the model refused: {_short(message['refusal'])}")
    content = message.get("content")
    if not isinstance(content, str) or not content:
        raise JudgeEmptyReply(f"openai: no content (finish reason {choice.get('finish_reason')})")
    usage = _dict(payload.get("usage"))
    model = payload.get("model")
    return JudgeReply(
        text=content,
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        model_version=model if isinstance(model, str) else None,
    )
