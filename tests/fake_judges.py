"""Scriptable local fakes of the judge providers, for the real clients to talk to.

``FakeGemini`` serves the Gemini API's ``POST /v1beta/models/{model}:generateContent`` the
way google-genai calls it when ``GOOGLE_GEMINI_BASE_URL`` (or ``HttpOptions.base_url``)
points at ``base_url``. ``FakeOpenAIJudge`` serves an OpenAI-compatible
``POST /v1/chat/completions``; its ``base_url`` ends in ``/v1``.

Both run a ``ThreadingHTTPServer`` on 127.0.0.1 at a free port (one daemon thread per
connection, so slow replies do not serialize) and are scripted by a *responder*:

* a list of :class:`FakeReply`, popped one per request (an exhausted script answers 500);
* or a callable ``(request_json, n) -> FakeReply`` with ``n`` the 0-based request index,
  for benchmarks and concurrency tests.

A :class:`FakeReply` can also misbehave: reply late (``delay_s``), never reply (``hang``),
reset the connection (``reset``) or send half a body (``truncate``). Leaving the context
manager sets an Event every waiting handler watches and closes every open connection, so
shutdown is quick even with hung requests. Every request is recorded (``requests``,
``received``, ``calls``), under a lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import socket
import struct
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from threaded_server import ThreadedServer

__all__ = [
    "FakeGemini",
    "FakeOpenAIJudge",
    "FakeReply",
    "ReceivedRequest",
    "Responder",
    "gemini_blocked_candidate",
    "gemini_blocked_prompt",
    "gemini_empty",
    "gemini_error",
    "gemini_json",
    "gemini_text",
    "openai_content_filter",
    "openai_error",
    "openai_json",
    "openai_refusal",
    "openai_text",
]

GEMINI_PATH = re.compile(
    r"^/v1beta/models/(?P<model>[^/:]+):(?:generateContent|streamGenerateContent\?alt=sse)$"
)
OPENAI_PATH = "/v1/chat/completions"
OPENAI_MODEL = "gpt-fake-judge-1"


@dataclass(frozen=True, kw_only=True)
class FakeReply:
    """What the fake does with one request.

    Attributes:
        status: HTTP status code.
        body: JSON body (ignored when ``raw`` is set).
        raw: Bytes sent as the body instead of JSON (malformed JSON, garbage).
        headers: Extra response headers (e.g. ``Retry-After``).
        delay_s: Seconds to wait before replying; shutdown interrupts the wait.
        hang: Never reply; the connection is closed when the server shuts down.
        reset: Close the connection abruptly (TCP RST), without any response.
        truncate: Send the headers with a ``Content-Length`` larger than what follows,
            then half the body, then close: a half-written reply.
        events: Server-sent events instead of one JSON body: each dict goes out as a
            ``data:`` line (``text/event-stream``), as Gemini's
            ``streamGenerateContent?alt=sse`` answers.

    """

    status: int = 200
    body: dict[str, Any] | None = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    hang: bool = False
    reset: bool = False
    truncate: bool = False
    events: tuple[dict[str, Any], ...] | None = None

    def payload(self) -> bytes:
        """The body bytes this reply sends (complete, before any truncation)."""
        if self.raw is not None:
            return self.raw
        if self.events is not None:
            return b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in self.events)
        return json.dumps(self.body if self.body is not None else {}).encode()


@dataclass(frozen=True, kw_only=True)
class ReceivedRequest:
    """One request as the fake received it."""

    path: str
    headers: dict[str, str]
    json: Any


Responder = Sequence[FakeReply] | Callable[[dict[str, Any], int], FakeReply]


# --- Gemini builders -----------------------------------------------------------------------

_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _usage(input_tokens: int, output_tokens: int, thoughts_tokens: int = 0) -> dict[str, Any]:
    usage = {
        "promptTokenCount": input_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": input_tokens + output_tokens + thoughts_tokens,
    }
    if thoughts_tokens:
        usage["thoughtsTokenCount"] = thoughts_tokens
    return usage


def gemini_text(
    text: str,
    *,
    input_tokens: int = 100,
    output_tokens: int = 20,
    model_version: str = "gemini-2.5-flash-001",
    finish_reason: str = "STOP",
    thoughts_tokens: int = 0,
) -> FakeReply:
    """A ``generateContent`` response whose single candidate's text is ``text``."""
    return FakeReply(
        body={
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": finish_reason,
                    "index": 0,
                }
            ],
            "usageMetadata": _usage(input_tokens, output_tokens, thoughts_tokens),
            "modelVersion": model_version,
            "responseId": "fake-response-id",
        }
    )


def gemini_json(
    obj: Any,
    *,
    input_tokens: int = 100,
    output_tokens: int = 20,
    model_version: str = "gemini-2.5-flash-001",
    thoughts_tokens: int = 0,
) -> FakeReply:
    """A ``generateContent`` response whose candidate's text is ``json.dumps(obj)``."""
    return gemini_text(
        json.dumps(obj),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model_version=model_version,
        thoughts_tokens=thoughts_tokens,
    )


def gemini_blocked_prompt(reason: str = "SAFETY") -> FakeReply:
    """The prompt itself was blocked: ``promptFeedback.blockReason``, no candidates."""
    return FakeReply(
        body={
            "promptFeedback": {"blockReason": reason},
            "usageMetadata": {"promptTokenCount": 100, "totalTokenCount": 100},
            "modelVersion": "gemini-2.5-flash-001",
        }
    )


def gemini_blocked_candidate(reason: str = "SAFETY") -> FakeReply:
    """The reply was blocked: one candidate with ``finishReason`` ``reason``, no content."""
    return FakeReply(
        body={
            "candidates": [{"finishReason": reason, "index": 0}],
            "usageMetadata": _usage(100, 0),
            "modelVersion": "gemini-2.5-flash-001",
        }
    )


def gemini_empty() -> FakeReply:
    """A 200 reply with ``candidates: []``."""
    return FakeReply(
        body={
            "candidates": [],
            "usageMetadata": _usage(100, 0),
            "modelVersion": "gemini-2.5-flash-001",
        }
    )


def gemini_error(
    status: int,
    message: str = "fake error",
    headers: dict[str, str] | None = None,
    *,
    details: list[dict[str, Any]] | None = None,
) -> FakeReply:
    """A Google API error: ``{"error": {"code", "message", "status"[, "details"]}}``."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _GOOGLE_STATUS.get(status, "UNKNOWN"),
    }
    if details is not None:
        error["details"] = details
    return FakeReply(status=status, body={"error": error}, headers=dict(headers or {}))


# --- OpenAI builders -----------------------------------------------------------------------


def _completion(
    message: dict[str, Any],
    *,
    finish_reason: str,
    prompt_tokens: int,
    completion_tokens: int,
    model: str,
) -> FakeReply:
    return FakeReply(
        body={
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def openai_text(
    text: str | None,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    model: str = OPENAI_MODEL,
    finish_reason: str = "stop",
) -> FakeReply:
    """A ``chat.completion`` with one assistant message whose content is ``text``."""
    return _completion(
        {"role": "assistant", "content": text, "refusal": None},
        finish_reason=finish_reason,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model,
    )


def openai_json(
    obj: Any,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    model: str = OPENAI_MODEL,
) -> FakeReply:
    """A ``chat.completion`` whose message content is ``json.dumps(obj)``."""
    return openai_text(
        json.dumps(obj),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model,
    )


def openai_refusal(text: str = "I can't help with that.") -> FakeReply:
    """A structured-output refusal: ``message.refusal`` set, ``content`` null."""
    return _completion(
        {"role": "assistant", "content": None, "refusal": text},
        finish_reason="stop",
        prompt_tokens=100,
        completion_tokens=8,
        model=OPENAI_MODEL,
    )


def openai_content_filter() -> FakeReply:
    """A reply stopped by the content filter: ``finish_reason: content_filter``."""
    return _completion(
        {"role": "assistant", "content": None},
        finish_reason="content_filter",
        prompt_tokens=100,
        completion_tokens=0,
        model=OPENAI_MODEL,
    )


def openai_error(
    status: int,
    message: str = "fake error",
    headers: dict[str, str] | None = None,
    *,
    error_type: str = "server_error",
) -> FakeReply:
    """An OpenAI-style error: ``{"error": {"message", "type", "param", "code"}}``."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
    return FakeReply(status=status, body=body, headers=dict(headers or {}))


# --- the server ----------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Many clients connect at once in concurrency tests: a short accept queue would drop
    # SYNs and pace them by the kernel's 1 s retransmit.
    request_queue_size = 256

    def __init__(self, fake: _FakeServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client hangs up (timeouts, closed pools); report anything else."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError) and not self.fake.stopping.is_set():
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle holds the
        # body until the client's delayed ACK (~40 ms), which is not the judge's latency.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        try:
            payload: Any = json.loads(data or b"{}")
        except ValueError:
            payload = {"_undecodable": data.decode(errors="replace")}
        fake = self.server.fake
        reply = fake._next(self.path, dict(self.headers.items()), payload)
        self._send(reply)

    def _send(self, reply: FakeReply) -> None:
        stopping = self.server.fake.stopping
        if reply.hang:
            stopping.wait()
            self._abort()
            return
        if reply.delay_s > 0 and stopping.wait(reply.delay_s):
            self._abort()
            return
        if reply.reset:
            self._abort()
            return
        data = reply.payload()
        self.send_response(reply.status)
        kind = "text/event-stream" if reply.events is not None else "application/json"
        self.send_header("Content-Type", f"{kind}; charset=UTF-8")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.truncate:
            self.send_header("Content-Length", str(len(data) * 2 + 16))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            # An orderly close (FIN), not a reset: the client sees the body end early.
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_WR)
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _abort(self) -> None:
        """Close the connection with a TCP RST (SO_LINGER 0), without a response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()


class _FakeServer(ThreadedServer):
    """Base of the two fakes: threading, scripting, recording, quick shutdown."""

    _thread_name = "fake-judge"

    def __init__(self, responder: Responder) -> None:
        self._responder = responder if callable(responder) else list(responder)
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._received: list[ReceivedRequest] = []
        self._connections: set[socket.socket] = set()
        self._opened = 0
        self._calls = 0
        self.stopping = threading.Event()
        super().__init__(_Server(self), self._thread_name)

    # -- what a test reads --

    @property
    def requests(self) -> list[dict[str, Any]]:
        """JSON bodies of the requests received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def received(self) -> list[ReceivedRequest]:
        """Path, headers and JSON of every request received so far (a copy)."""
        with self._lock:
            return list(self._received)

    @property
    def connections_opened(self) -> int:
        """How many TCP connections clients opened so far (reuse keeps this low)."""
        with self._lock:
            return self._opened

    @property
    def calls(self) -> int:
        """How many requests reached the server (routed or not)."""
        with self._lock:
            return self._calls

    # -- routing, overridden per provider --

    def _route_ok(self, path: str) -> bool:
        raise NotImplementedError

    def _not_found(self, path: str) -> FakeReply:
        raise NotImplementedError

    def _exhausted(self) -> FakeReply:
        raise NotImplementedError

    def _responder_failed(self, exc: Exception) -> FakeReply:
        return FakeReply(status=500, body={"error": {"message": f"responder raised {exc!r}"}})

    # -- called from handler threads --

    def _next(self, path: str, headers: dict[str, str], payload: Any) -> FakeReply:
        with self._lock:
            n = self._calls
            self._calls += 1
            self._received.append(ReceivedRequest(path=path, headers=headers, json=payload))
            if not self._route_ok(path):
                return self._not_found(path)
            self._requests.append(payload)
            if not callable(self._responder):
                return self._responder.pop(0) if self._responder else self._exhausted()
            responder = self._responder
        try:
            return responder(payload, n)
        except Exception as exc:  # a broken test responder: answer, do not kill the thread
            return self._responder_failed(exc)

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
                self._opened += 1
            else:
                self._connections.discard(conn)

    # -- lifecycle --

    def close(self) -> None:
        """Stop serving: wake waiting handlers, close open connections, join the thread."""
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # unblock handlers waiting for a next keep-alive request
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)


class FakeGemini(_FakeServer):
    """A fake Gemini API (``generateContent``) server; ``base_url`` is its root URL.

    The google-genai client posts to ``{base_url}/v1beta/models/{model}:generateContent``
    (or ``:streamGenerateContent?alt=sse``, answered by a reply with ``events``) with the
    API key in the ``x-goog-api-key`` header.
    """

    _thread_name = "fake-gemini"

    def __init__(
        self,
        responder: Responder,
        *,
        chunks: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None,
    ) -> None:
        """A fake answering with ``responder``'s replies.

        Args:
            responder: The script (see the module docstring).
            chunks: How a streamed request gets a reply's body: as these chunks, one
                server-sent event each (default: the whole body as one).

        """
        super().__init__(responder)
        self.base_url = self.root_url
        self._chunks = chunks or (lambda body: [body])

    def _next(self, path: str, headers: dict[str, str], payload: Any) -> FakeReply:
        reply = super()._next(path, headers, payload)
        if path.endswith(":streamGenerateContent?alt=sse") and reply.body and reply.status == 200:
            return dataclasses.replace(reply, events=tuple(self._chunks(reply.body)))
        return reply

    def _route_ok(self, path: str) -> bool:
        return GEMINI_PATH.match(path) is not None

    def _not_found(self, path: str) -> FakeReply:
        return gemini_error(404, f"no route {path}")

    def _exhausted(self) -> FakeReply:
        return gemini_error(500, "fake script exhausted")


class FakeOpenAIJudge(_FakeServer):
    """A fake OpenAI-compatible chat-completions server; ``base_url`` ends in ``/v1``."""

    _thread_name = "fake-openai-judge"

    def __init__(self, responder: Responder) -> None:
        super().__init__(responder)
        self.base_url = f"{self.root_url}/v1"

    def _route_ok(self, path: str) -> bool:
        return path.rstrip("/") == OPENAI_PATH

    def _not_found(self, path: str) -> FakeReply:
        return openai_error(404, f"no route {path}", error_type="invalid_request_error")

    def _exhausted(self) -> FakeReply:
        return openai_error(500, "fake script exhausted")
