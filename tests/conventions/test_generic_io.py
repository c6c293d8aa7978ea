"""The generic ``input.value`` / ``output.value`` reader, on every payload shape it knows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conv_helpers import TraceBuilder

from tracescore.conventions.base import SpanView
from tracescore.conventions.generic_io import GenericIO, output_messages
from tracescore.conventions.messages import JsonValue, TextPart, ToolCallPart


def _view(**attrs: Any) -> SpanView:
    return SpanView(TraceBuilder().span("llm", {k.replace("_", "."): v for k, v in attrs.items()}))


def test_redacted_values_are_not_captured() -> None:
    view = _view(input_value="__REDACTED__", output_value="__REDACTED__")
    assert GenericIO().llm_input(view) is None
    assert GenericIO().llm_output(view) is None


@pytest.mark.parametrize(
    "payload",
    [
        "Hi",
        json.dumps({"messages": [{"role": "user", "content": "Hi"}]}),
        json.dumps({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}),
        json.dumps({"prompt": "Hi"}),
        json.dumps([{"role": "user", "content": "Hi"}]),
        json.dumps({"role": "user", "content": "Hi"}),
    ],
    ids=["text", "chat", "gemini", "completion", "message-list", "message"],
)
def test_input_shapes(payload: str) -> None:
    found = GenericIO().llm_input(_view(input_value=payload))
    assert found is not None and found.source == "input.value"
    [message] = found.value
    assert (message.role, message.text()) == ("user", "Hi")


CALL: JsonValue = {
    "type": "function_call",
    "id": "fc_9",
    "call_id": "c9",
    "name": "f",
    "arguments": "{}",
}
TEXT: JsonValue = {"type": "output_text", "text": "Hi", "annotations": []}
MESSAGE: JsonValue = {"type": "message", "role": "assistant", "content": [TEXT]}
RESPONSE: JsonValue = {"object": "response", "output": [MESSAGE, CALL]}


@pytest.mark.parametrize(
    ("payload", "calls"),
    [
        ("Hi", []),
        ({"choices": [{"message": {"role": "assistant", "content": "Hi"}}]}, []),
        ({"choices": [{"text": "Hi"}]}, []),
        ({"content": {"role": "model", "parts": [{"text": "Hi"}]}}, []),
        ({"role": "assistant", "content": "Hi"}, []),
        (RESPONSE, ["c9"]),
        ([RESPONSE], ["c9"]),  # the OpenAI Agents SDK's streamed Chat Completions call
    ],
    ids=["text", "chat", "completion", "gemini", "message", "response", "response-list"],
)
def test_output_shapes(payload: Any, calls: list[str]) -> None:
    [reply] = output_messages(payload)
    assert reply.is_assistant and reply.text() == "Hi"
    assert [c.id for c in reply.tool_calls()] == calls


def test_unknown_or_empty_outputs_give_nothing() -> None:
    assert output_messages({"object": "response", "output": []}) == []
    assert output_messages({"unrelated": 1}) == []
    assert output_messages(3) == []
    assert GenericIO().llm_output(_view(output_value=json.dumps({"unrelated": 1}))) is None


def test_a_response_keeps_its_items_in_order() -> None:
    [reply] = output_messages({"object": "response", "output": [CALL, MESSAGE]})
    assert reply.parts == (ToolCallPart(name="f", args={}, id="c9"), TextPart(text="Hi"))
