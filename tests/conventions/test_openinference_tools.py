"""What OpenInference TOOL spans carry besides the call: schemas and result envelopes."""

from __future__ import annotations

import pytest

from tracescore.conventions.messages import JsonValue
from tracescore.conventions.openinference_tools import (
    looks_like_schema,
    tool_message_call_id,
    unwrap_response,
)


def _tool_message(content: str, call_id: object = "call_1") -> dict[str, JsonValue]:
    """A LangChain ``ToolMessage`` as OpenInference's LangChain instrumentation writes it."""
    data: dict[str, JsonValue] = {"type": "tool", "content": content, "name": "get_weather"}
    if call_id is not None:
        data["tool_call_id"] = call_id  # type: ignore[assignment]
    return {"type": "tool", "data": data}


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        ({"type": "object", "properties": {"city": {"type": "string"}}}, True),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema"}, True),
        ({"name": "get_weather", "parameters": {"type": "object"}}, True),
        ({"json_schema": {}}, True),
        ({"type": "object"}, True),
        ("not an object", True),  # never arguments: a tool's arguments are an object
        (["a", "b"], True),
        ({"city": "Paris", "days": 2}, False),
        ({"type": "window", "size": 3}, False),  # an argument named "type" is no schema
    ],
)
def test_looks_like_schema(value: JsonValue, schema: bool) -> None:
    assert looks_like_schema(value) is schema


def test_unwrap_response_adk_envelope() -> None:
    wrapped: JsonValue = {"id": "adk-1", "name": "get_weather", "response": {"temp_c": 21}}
    assert unwrap_response(wrapped, "get_weather") == {"temp_c": 21}
    assert unwrap_response({"response": "ok"}, None) == "ok"


def test_unwrap_response_keeps_what_is_no_envelope() -> None:
    # Another tool's name, or keys beside the envelope's: the tool's own result.
    other: JsonValue = {"id": "adk-1", "name": "book_hotel", "response": {"ok": True}}
    assert unwrap_response(other, "get_weather") == other
    extra: JsonValue = {"response": 1, "status": "done"}
    assert unwrap_response(extra, "t") == extra
    assert unwrap_response("plain text", "t") == "plain text"
    assert unwrap_response([1, 2], "t") == [1, 2]


def test_unwrap_response_langchain_tool_message() -> None:
    # The content is read as every result is: JSON text as its value, else the text.
    assert unwrap_response(_tool_message('{"temp_c": 21}'), None) == {"temp_c": 21}
    assert unwrap_response(_tool_message("sunny"), None) == "sunny"


def test_tool_message_call_id() -> None:
    assert tool_message_call_id(_tool_message("sunny")) == "call_1"
    assert tool_message_call_id(_tool_message("sunny", call_id="")) is None
    assert tool_message_call_id(_tool_message("sunny", call_id=7)) is None
    assert tool_message_call_id(_tool_message("sunny", call_id=None)) is None
    not_a_tool_message: JsonValue = {"type": "ai", "data": {"type": "ai", "content": "x"}}
    assert tool_message_call_id(not_a_tool_message) is None
    assert tool_message_call_id("call_1") is None
