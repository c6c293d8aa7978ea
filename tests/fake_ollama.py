"""A scripted, local, Ollama-compatible server for tests.

``FakeOllama`` serves ``POST /api/chat`` on 127.0.0.1 at a free port, from a thread. Each
request pops the next scripted reply, ``(text, calls)``: the assistant's text (or None)
and its tool calls as ``(name, arguments)`` (Ollama's tool calls carry no ids). A request
with ``stream`` (Ollama's default) gets newline-delimited JSON as Ollama streams it: the
text in two pieces, the tool calls in one chunk of their own, then the closing chunk with
the token counts (``prompt_eval_count`` 13, ``eval_count`` 5); other requests get one
JSON body. The JSON request bodies are kept in ``requests``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from threaded_server import ScriptedServer, ThreadedServer, send

MODEL = "llama3.1"
PROMPT_TOKENS = 13
COMPLETION_TOKENS = 5

#: One scripted reply: the text (or None) and the tool calls (name, arguments), and the
#: model's thinking, when it thinks (sent first, as Ollama's ``message.thinking``).
Reply = (
    tuple[str | None, Sequence[tuple[str, dict[str, Any]]]]
    | tuple[str | None, Sequence[tuple[str, dict[str, Any]]], str]
)


def _chunk(message: dict[str, Any], *, done: bool) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "model": MODEL,
        "created_at": "2026-11-27T00:00:00Z",
        "message": {"role": "assistant", **message},
        "done": done,
    }
    if done:
        chunk.update(
            done_reason="stop",
            total_duration=1_000_000,
            load_duration=1_000,
            prompt_eval_count=PROMPT_TOKENS,
            prompt_eval_duration=1_000,
            eval_count=COMPLETION_TOKENS,
            eval_duration=1_000,
        )
    return chunk


def chunks(reply: Reply, *, stream: bool) -> list[dict[str, Any]]:
    """The response to a chat request, as Ollama sends it (one body unless ``stream``)."""
    text, calls = reply[0], reply[1]
    thinking = reply[2] if len(reply) > 2 else None
    tool_calls = [{"function": {"name": n, "arguments": a}} for n, a in calls]
    if not stream:
        message: dict[str, Any] = {"content": text or ""}
        if thinking:
            message["thinking"] = thinking
        if tool_calls:
            message["tool_calls"] = tool_calls
        return [_chunk(message, done=True)]
    out = []
    if thinking:
        out.append(_chunk({"content": "", "thinking": thinking}, done=False))
    if text:
        half = len(text) // 2
        out += [_chunk({"content": piece}, done=False) for piece in (text[:half], text[half:])]
    if tool_calls:
        out.append(_chunk({"content": "", "tool_calls": tool_calls}, done=False))
    out.append(_chunk({"content": ""}, done=True))
    return out


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedServer[Reply]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") != "/api/chat":
            send(self, 404, json.dumps({"error": f"no route {self.path}"}).encode(), "text/json")
            return
        with self.server.lock:
            self.server.requests.append(request)
            reply = self.server.script.pop(0) if self.server.script else None
        if reply is None:
            send(self, 500, b'{"error": "script exhausted"}', "application/json")
            return
        stream = bool(request.get("stream", True))
        lines = [json.dumps(c).encode() + b"\n" for c in chunks(reply, stream=stream)]
        send(self, 200, b"".join(lines), "application/x-ndjson")


class FakeOllama(ThreadedServer):
    """Context manager: a running fake server; ``base_url`` is its root."""

    def __init__(self, script: Sequence[Reply]) -> None:
        self._fake = ScriptedServer(script, _Handler)
        super().__init__(self._fake, "fake-ollama")
        self.base_url = self.root_url

    @property
    def requests(self) -> list[dict[str, Any]]:
        """JSON bodies of the chat requests received, in order."""
        return self._fake.requests
