"""ADK's legacy reader: what only ADK's own records can tell (real runs: test_adk_agreement)."""

from __future__ import annotations

import pytest

from tracescore.conventions.adk import awaits_long_running_result, is_callback_reply
from tracescore.conventions.base import Found
from tracescore.conventions.messages import JsonValue
from tracescore.spans import AttrValue, SpanRecord

_CONTENT: JsonValue = {"role": "model", "parts": [{"text": "I can't help with that."}]}


@pytest.mark.parametrize(
    ("response", "callback"),
    [
        # A before_model_callback's LlmResponse: only what the callback set.
        ({"content": _CONTENT}, True),
        ({"content": _CONTENT, "finish_reason": "STOP"}, True),
        # A model's reply always says what it used, or which model it was.
        ({"content": _CONTENT, "usage_metadata": {"prompt_token_count": 3}}, False),
        ({"content": _CONTENT, "usageMetadata": {"promptTokenCount": 3}}, False),
        ({"content": _CONTENT, "model_version": "gemini-2.5-flash-001"}, False),
        ({"content": _CONTENT, "modelVersion": "gemini-2.5-flash-001"}, False),
        # Nothing captured ("{}" in ADK's no-content modes): nothing to tell.
        ({}, False),
        ("I can't help with that.", False),
    ],
)
def test_a_reply_without_usage_or_model_version_came_from_a_callback(
    response: JsonValue, callback: bool
) -> None:
    assert is_callback_reply(Found(response, "gcp.vertex.agent.llm_response")) is callback


def test_a_truncated_reply_is_not_judged() -> None:
    """Cut at the backend's limit, the usage may be what was cut off."""
    reply: JsonValue = {"content": _CONTENT}
    cut = Found(reply, "gcp.vertex.agent.llm_response", truncated=True)
    assert not is_callback_reply(cut)
    assert not is_callback_reply(None)


@pytest.mark.parametrize(
    ("tool_type", "call_id", "waits"),
    [
        ("LongRunningFunctionTool", "<not specified>", True),  # returned None: no response
        ("LongRunningFunctionTool", "adk-1", False),  # it answered (a pending status)
        ("FunctionTool", "<not specified>", False),
        (None, "<not specified>", False),
    ],
)
def test_a_long_running_tool_without_a_response_is_awaited(
    tool_type: str | None, call_id: str, waits: bool
) -> None:
    attrs: dict[str, AttrValue] = {"gen_ai.tool.call.id": call_id}
    if tool_type is not None:
        attrs["gen_ai.tool.type"] = tool_type
    span = SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="execute_tool ask",
        attributes=attrs,
    )
    assert awaits_long_running_result(span) is waits
