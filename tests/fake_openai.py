"""A scripted, local, OpenAI-compatible server for tests.

``FakeOpenAI`` serves ``POST /v1/chat/completions`` and ``POST /v1/responses``
(non-streaming only) on 127.0.0.1 at a free port, from a thread. Each request, on either
route, pops the next scripted response body (the script is written for the API the
client uses); the JSON
request bodies are kept in ``requests`` so a test can check what the client sent. No
network beyond loopback, no sleeps: the caller waits on an Event for the thread to run.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionToolParam

MODEL = "gpt-fake-1"


def completion(
    message: dict[str, Any],
    *,
    finish_reason: str,
    prompt_tokens: int,
    completion_tokens: int,
    response_id: str,
) -> dict[str, Any]:
    """A ``chat.completion`` response body with one choice and a ``usage`` block."""
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_fake",
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Sequence[dict[str, Any]]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/v1/responses"):
            self._reply(404, {"error": {"message": f"no route {self.path}", "type": "fake"}})
            return
        if request.get("stream"):
            self._reply(400, {"error": {"message": "streaming unsupported", "type": "fake"}})
            return
        with self.server.lock:
            self.server.requests.append(request)
            body = self.server.script.pop(0) if self.server.script else None
        if body is None:
            self._reply(500, {"error": {"message": "script exhausted", "type": "fake"}})
            return
        self._reply(200, body)


class FakeOpenAI:
    """Context manager: a running fake server; ``base_url`` is its ``/v1`` root."""

    def __init__(self, script: Sequence[dict[str, Any]]) -> None:
        self._server = _Server(script)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        host, port = self._server.server_address[:2]
        self.base_url = f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """JSON bodies of the chat-completion requests received, in order."""
        return self._server.requests

    def _serve(self) -> None:
        self._ready.set()
        # A short poll keeps shutdown() quick (the default waits up to 0.5 s).
        self._server.serve_forever(poll_interval=0.01)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        if not self._ready.wait(timeout=5):
            raise RuntimeError("fake OpenAI server thread did not start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# The weather scenario both real-instrumentation tests script: chat 1 answers with text
# and a ``get_weather`` call, chat 2 with the final answer.
SYSTEM = "Answer weather questions."
USER = "Weather in Paris?"
THINKING = "Let me check the weather in Paris."
FINAL = "It is 21C and sunny in Paris."
CALL_ID = "call_Xy12"
TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str) -> str:
    return f"21C and sunny in {city}"


def script() -> list[dict[str, Any]]:
    """Chat 1: text plus a ``get_weather`` tool call; chat 2: the final answer."""
    call = {
        "id": CALL_ID,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
    }
    return [
        completion(
            {"role": "assistant", "content": THINKING, "tool_calls": [call]},
            finish_reason="tool_calls",
            prompt_tokens=50,
            completion_tokens=12,
            response_id="chatcmpl-1",
        ),
        completion(
            {"role": "assistant", "content": FINAL},
            finish_reason="stop",
            prompt_tokens=80,
            completion_tokens=9,
            response_id="chatcmpl-2",
        ),
    ]
