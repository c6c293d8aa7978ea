"""A scripted, local, OpenAI-compatible server for tests.

``FakeOpenAI`` serves ``POST /v1/chat/completions`` and ``POST /v1/responses`` on
127.0.0.1 at a free port, from a thread. Each request, on either route, pops the next
scripted response body (the script is written for the API the client uses); the JSON
request bodies are kept in ``requests`` so a test can check what the client sent. A reply
asked for with ``stream: true`` is sent as the API streams it (:func:`completion_chunks`,
:func:`response_events`). No network beyond loopback, no sleeps: the caller waits on
an Event for the thread to run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from openai.lib.streaming.chat import ChatCompletionStreamState

from threaded_server import ScriptedServer, ThreadedServer, send

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionToolParam

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


def scripted_reply(
    index: int,
    text: str | None,
    calls: Sequence[tuple[str, Any, str]] = (),
    *,
    prompt_tokens: int,
) -> dict[str, Any]:
    """The harnesses' scripted model turn ``index``: ``text`` and ``calls`` (name,
    arguments, call id), finished by ``tool_calls`` when it calls, else ``stop``."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
            }
            for name, args, call_id in calls
        ]
    return completion(
        message,
        finish_reason="tool_calls" if calls else "stop",
        prompt_tokens=prompt_tokens,
        completion_tokens=5,
        response_id=f"chatcmpl-{index}",
    )


def scripted_response(
    index: int, blocks: Sequence[str | tuple[str, Any, str]], *, input_tokens: int
) -> dict[str, Any]:
    """A Responses API ``response`` body: its output items are ``blocks`` in order, a text
    as a ``message`` item and a (name, arguments, call id) call as a ``function_call``."""
    output: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, str):
            content = [{"type": "output_text", "text": block, "annotations": []}]
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{index}_{len(output)}",
                    "role": "assistant",
                    "status": "completed",
                    "content": content,
                }
            )
        else:
            name, args, call_id = block
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call_id}",
                    "call_id": call_id,
                    "name": name,
                    "arguments": json.dumps(args, ensure_ascii=False),
                    "status": "completed",
                }
            )
    return {
        "id": f"resp_{index}",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": MODEL,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "text": {"format": {"type": "text"}},
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 5,
            "total_tokens": input_tokens + 5,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _cut(value: str) -> list[str]:
    """``value`` in three pieces (joined, they are ``value``), or whole when short."""
    if len(value) < 3:
        return [value]
    third = len(value) // 3
    return [value[:third], value[third : 2 * third], value[2 * third :]]


def completion_chunks(body: dict[str, Any], *, usage: bool) -> list[dict[str, Any]]:
    """A ``chat.completion`` body as the API streams it: ``chat.completion.chunk`` objects.

    The role first, then the text in pieces, then each tool call (its id and name, then
    its arguments in pieces), then the finish reason; with ``usage`` (the request's
    ``stream_options.include_usage``) a last chunk without choices carries the usage.
    """
    [choice] = body["choices"]
    message = choice["message"]
    head = {k: body[k] for k in ("id", "created", "model", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            **head,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _cut(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        start = {"name": function["name"], "arguments": ""}
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call["id"], "type": "function", "function": start}
                    ]
                }
            )
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _cut(function["arguments"])
        ]
    chunks.append(chunk({}, choice["finish_reason"]))
    if usage:
        chunks.append({**head, "choices": [], "usage": body["usage"]})
    return chunks


def response_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``response`` body as the Responses API streams it: its server-sent events.

    ``response.created`` (no output yet); per output item ``output_item.added``, its
    text or arguments in delta pieces, ``output_item.done``; then ``response.completed``
    with the whole response.
    """
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**body, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(body["output"]):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            for content_index, part in enumerate(item["content"]):
                events += [
                    {
                        "type": "response.output_text.delta",
                        **at,
                        "content_index": content_index,
                        "delta": piece,
                        "logprobs": [],
                    }
                    for piece in _cut(part["text"])
                ]
        else:
            started = {**item, "status": "in_progress", "arguments": ""}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": started}
            )
            events += [
                {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                for piece in _cut(item["arguments"])
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": body})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedServer[dict[str, Any]]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        send(self, status, json.dumps(body).encode(), "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/v1/responses"):
            self._reply(404, {"error": {"message": f"no route {self.path}", "type": "fake"}})
            return
        streamed = bool(request.get("stream"))
        with self.server.lock:
            self.server.requests.append(request)
            body = self.server.script.pop(0) if self.server.script else None
        if body is None:
            self._reply(500, {"error": {"message": "script exhausted", "type": "fake"}})
            return
        if streamed and self.path.rstrip("/") == "/v1/responses":
            self._stream(response_events(body), done=False)
            return
        if streamed:
            usage = bool((request.get("stream_options") or {}).get("include_usage"))
            self._stream(completion_chunks(body, usage=usage), done=True)
            return
        self._reply(200, body)

    def _stream(self, chunks: list[dict[str, Any]], *, done: bool) -> None:
        """Send ``chunks`` as server-sent events; ``done``: end with ``[DONE]`` (chat)."""
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
        data = b"".join([*events, b"data: [DONE]\n\n" if done else b""])
        send(self, 200, data, "text/event-stream")


class FakeOpenAI(ThreadedServer):
    """Context manager: a running fake server; ``base_url`` is its ``/v1`` root."""

    def __init__(self, script: Sequence[dict[str, Any]]) -> None:
        self._fake = ScriptedServer(script, _Handler)
        super().__init__(self._fake, "fake-openai")
        self.base_url = f"{self.root_url}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """JSON bodies of the chat-completion requests received, in order."""
        return self._fake.requests


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


def chat_completion(client: openai.OpenAI, *, stream: bool, **request: Any) -> ChatCompletion:
    """One chat completion, asked for whole or streamed (with usage) and put together."""
    if not stream:
        whole: ChatCompletion = client.chat.completions.create(**request)
        return whole
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(
        stream=True, stream_options={"include_usage": True}, **request
    ):
        state.handle_chunk(chunk)
    return state.get_final_completion()
