"""What OpenInference TOOL spans carry besides the call: schemas and result envelopes.

A TOOL span's ``tool.parameters`` is usually the tool's schema, seldom its arguments;
its ``output.value`` may wrap the result in the envelope its instrumentation wrote
(OpenInference's ADK tool output, a LangChain ``ToolMessage``). Used by
:meth:`tracescore.conventions.openinference.OpenInference.tool_io`.
"""

from __future__ import annotations

from typing import Final

from tracescore.conventions.messages import JsonValue, parse_arguments

__all__ = ["looks_like_schema", "tool_message_call_id", "unwrap_response"]

_SCHEMA_KEYS: Final = frozenset({"$schema", "properties", "parameters", "json_schema"})


def looks_like_schema(value: JsonValue) -> bool:
    """True for a JSON schema or a function declaration (what ``tool.parameters`` usually is)."""
    if not isinstance(value, dict):
        return True
    if _SCHEMA_KEYS.intersection(value):
        return True
    return value.get("type") == "object"


def unwrap_response(value: JsonValue, tool: str | None) -> JsonValue:
    """A tool's result out of the envelope its instrumentation wrote around it.

    ``{"id", "name", "response"}``: OpenInference's ADK tool output. ``{"type": "tool",
    "data": {"content", ...}}``: a LangChain ``ToolMessage`` as OpenInference's LangChain
    instrumentation serializes it; the result is its ``content`` (JSON text read as its
    value, as everywhere).
    """
    if not isinstance(value, dict):
        return value
    if (
        "response" in value
        and set(value) <= {"id", "name", "response"}
        and value.get("name") in (None, tool)
    ):
        return value["response"]
    data = value.get("data")
    if _is_tool_message(value) and isinstance(data, dict):
        return parse_arguments(data["content"])
    return value


def tool_message_call_id(value: JsonValue) -> str | None:
    """The ``tool_call_id`` of a serialized LangChain ``ToolMessage`` result, if it is one.

    OpenInference's LangChain instrumentation writes no call id on TOOL spans; without it
    the calls of one model turn join their executions by name and start order, and a
    ``ToolNode`` runs parallel calls on threads, in any order.
    """
    data = value.get("data") if isinstance(value, dict) else None
    if _is_tool_message(value) and isinstance(data, dict):
        call_id = data.get("tool_call_id")
        if isinstance(call_id, str) and call_id:
            return call_id
    return None


def _is_tool_message(value: JsonValue) -> bool:
    """True for a LangChain ``ToolMessage`` as OpenInference serializes it."""
    data = value.get("data") if isinstance(value, dict) else None
    return (
        isinstance(value, dict)
        and value.get("type") == "tool"
        and isinstance(data, dict)
        and data.get("type") == "tool"
        and "content" in data
    )
