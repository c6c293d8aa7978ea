"""Parsers for the chat message shapes in the wild, into :mod:`~tracescore.conventions.chat`.

Every convention encodes model input and output as some list of messages. Three shapes
cover nearly all of them, and one parser accepts all three, message by message:

* OTel GenAI (semconv ≥ 1.37, ADK schema v2, pydantic-ai, OpenLLMetry JSON form):
  ``{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name",
  "arguments"}, {"type": "tool_call_response", "id", "response"|"result"}, ...]}``
* Gemini ``Content`` (ADK legacy ``llm_request``/``llm_response``):
  ``{"role", "parts": [{"text"}, {"function_call": {"name", "args", "id"}},
  {"function_response": {"name", "response", "id"}}, ...]}`` (camelCase too)
* OpenAI chat (semconv 1.28–1.36 events, OpenInference, Traceloop):
  ``{"role", "content", "tool_calls": [{"id", "function": {"name", "arguments"}}],
  "tool_call_id"}``

Parsers are total: unknown part types become :class:`OtherPart`, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, cast

import orjson

from tracescore import json_text
from tracescore.conventions.chat import (
    ASSISTANT_ROLES,
    USER_ROLES,
    JsonValue,
    Message,
    OtherPart,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from tracescore.unicode_case import lower

__all__ = [
    "ASSISTANT_ROLES",
    "NOT_CAPTURED_MARKERS",
    "USER_ROLES",
    "JsonValue",
    "Message",
    "OtherPart",
    "Part",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "decoded_json",
    "is_not_captured",
    "load_json",
    "message_from_obj",
    "messages_from_value",
    "openai_tool_calls",
    "parse_arguments",
    "response_reply",
    "simplify_blocks",
]

#: Values emitters write instead of content they were told not to capture.
NOT_CAPTURED_MARKERS: Final = frozenset({"__REDACTED__", "FILTERED", "<elided>", "", "{}", "[]"})


def is_not_captured(value: object) -> bool:
    """True when ``value`` is absent or a placeholder written instead of real content."""
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() in NOT_CAPTURED_MARKERS
    if isinstance(value, (list, dict)):
        return not value
    return False


def load_json(value: object) -> JsonValue:
    """Parse ``value`` when it is a JSON string/bytes; return structured values unchanged.

    Raises:
        orjson.JSONDecodeError: when a string is not valid JSON. Callers that must be
            lenient catch it (see :func:`tracescore.conventions.salvage.salvage_json`).

    """
    if isinstance(value, (str, bytes)):
        return cast(JsonValue, json_text.loads(value))
    return cast(JsonValue, value)


def parse_arguments(value: object) -> JsonValue:
    """Tool-call arguments: a JSON string becomes its value; anything else is kept.

    OpenAI-style emitters write arguments as a JSON string; ADK and GenAI write objects.
    A string that is not JSON is kept verbatim (the model may have produced bad JSON).
    """
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return cast(JsonValue, json_text.loads(stripped))
            except orjson.JSONDecodeError:
                return value
        return value
    return cast(JsonValue, value)


def decoded_json(value: object) -> object:
    """A JSON string that holds an array or object, decoded; anything else unchanged."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("[", "{"):
            try:
                return json_text.loads(stripped)
            except orjson.JSONDecodeError:
                return value
    return value


def simplify_blocks(value: object) -> JsonValue:
    """A tool result given as content blocks, reduced to its value.

    Strands/Bedrock wrap results as ``[{"text": ...}]`` or ``[{"json": ...}]``; a single
    such block becomes its text or JSON value. Anything else is returned unchanged.
    """
    value = decoded_json(value)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], Mapping):
        block = value[0]
        if len(block) == 1:
            if isinstance(block.get("text"), str):
                return cast(JsonValue, block["text"])
            if "json" in block:
                return cast(JsonValue, block["json"])
    return cast(JsonValue, value)


def _get(obj: Mapping[str, object], snake: str, camel: str) -> object:
    value = obj.get(snake)
    return obj.get(camel) if value is None else value


def _part_from_obj(obj: object) -> Part | None:
    if isinstance(obj, str):
        return TextPart(text=obj)
    # dict first, here and below: parsed JSON is all dicts, and the Mapping check (an
    # ABC's) costs several times more; other mappings still pass.
    if not isinstance(obj, (dict, Mapping)):
        return None
    ptype = obj.get("type")
    if isinstance(ptype, str):
        return _genai_part(ptype, obj)
    # Gemini Content part.
    text = obj.get("text")
    if isinstance(text, str):
        return TextPart(text=text, thought=bool(obj.get("thought")))
    call = _get(obj, "function_call", "functionCall")
    if isinstance(call, (dict, Mapping)):
        return ToolCallPart(
            name=str(call.get("name") or ""),
            args=cast(JsonValue, call.get("args")),
            id=_opt_str(call.get("id")),
        )
    resp = _get(obj, "function_response", "functionResponse")
    if isinstance(resp, (dict, Mapping)):
        return ToolResultPart(
            name=_opt_str(resp.get("name")),
            response=cast(JsonValue, resp.get("response")),
            id=_opt_str(resp.get("id")),
        )
    keys = [k for k, v in obj.items() if v is not None and k != "thought_signature"]
    return OtherPart(type=keys[0] if keys else "unknown", data=cast(JsonValue, dict(obj)))


def _genai_part(ptype: str, obj: Mapping[str, object]) -> Part:
    if ptype in ("text", "reasoning", "thinking"):
        content = obj.get("content")
        if content is None:
            content = obj.get("text")
        if content is None:
            # A text part without its text: content capture was off (pydantic-ai
            # include_content=False writes {"type": "text"}). Not an empty message.
            return OtherPart(type=ptype, data=cast(JsonValue, dict(obj)))
        if ptype == "text" and isinstance(content, str) and content.startswith('{"type": '):
            block = _dumped_block(content)
            if block is not None:
                return block
        return TextPart(text=str(content), thought=ptype != "text")
    if ptype in ("tool_call", "function_call", "function"):
        if obj.get("builtin") is True:
            return _server_tool("server_tool_call", obj)
        return ToolCallPart(
            name=str(obj.get("name") or ""),
            args=parse_arguments(obj.get("arguments", obj.get("args"))),
            id=_opt_str(obj.get("id")),
        )
    if ptype in ("tool_call_response", "tool_result", "function_response"):
        if obj.get("builtin") is True:
            return _server_tool("server_tool_call_response", obj)
        response = obj.get("response")
        if response is None:
            response = obj.get("result")
        return ToolResultPart(
            name=_opt_str(obj.get("name")),
            # Strands puts its content blocks here; one text or JSON block is the value,
            # as when the same result is read from its other encodings.
            response=simplify_blocks(parse_arguments(response)),
            id=_opt_str(obj.get("id")),
        )
    return OtherPart(type=ptype, data=cast(JsonValue, dict(obj)))


#: LangChain content blocks that are not the reply's text, by the key that holds each.
_LANGCHAIN_BLOCKS: Final = {
    "thinking": "thinking",
    "reasoning": "reasoning",
    "redacted_thinking": "data",
    "server_tool_call": "name",
    "server_tool_result": "tool_call_id",
}


def _dumped_block(text: str) -> Part | None:
    """A LangChain content block that OpenLLMetry wrote as a text part's JSON.

    OpenLLMetry's LangChain instrumentation writes a reply's text blocks as text, but
    when it has none (a thinking model's reply before a call: its thinking and the
    call), each other block becomes a text part holding ``json.dumps(block)``. Read as
    that block: a thought is a thought, a provider-run tool a part of the reply; None
    for any other text (a reply that is JSON of its own keeps being text).
    """
    try:
        block = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "reasoning" and isinstance(block.get("summary"), list):
        # langchain-openai's Responses API reasoning item: its summary texts.
        texts = [t.get("text") for t in block["summary"] if isinstance(t, dict)]
        summary = "\n".join(t for t in texts if isinstance(t, str))
        if not summary:
            return OtherPart(type=kind, data=cast(JsonValue, block))
        return TextPart(text=summary, thought=True)
    if not isinstance(kind, str) or _LANGCHAIN_BLOCKS.get(kind) not in block:
        return None
    if kind in {"thinking", "reasoning"}:
        thought = block[kind]
        return TextPart(text=thought, thought=True) if isinstance(thought, str) else None
    if kind == "server_tool_call":
        return _server_tool("server_tool_call", block)
    if kind == "server_tool_result":
        return _server_tool("server_tool_call_response", block)
    return OtherPart(type=kind, data=cast(JsonValue, block))


def _server_tool(kind: str, obj: Mapping[str, object]) -> OtherPart:
    """A call (or its result) of a tool the model's provider ran inside the model call.

    pydantic-ai writes its native tools' (a provider's web search, code execution...)
    as tool calls and results marked ``"builtin": true``; the GenAI conventions name
    them ``server_tool_call`` and ``server_tool_call_response``. The agent ran no tool:
    kept as a part of the reply, as an OpenAI hosted tool's item is
    (:mod:`tracescore.conventions.server_tools`).
    """
    return OtherPart(type=kind, data=cast(JsonValue, dict(obj)))


def _opt_str(value: object) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def message_from_obj(obj: object, *, default_role: str = "user") -> Message | None:
    """Build a :class:`Message` from any of the three shapes; None when ``obj`` is no message."""
    if not isinstance(obj, (dict, Mapping)):
        return None
    role = lower(str(obj.get("role") or default_role))
    name = _opt_str(obj.get("name"))
    raw_parts = obj.get("parts")
    if isinstance(raw_parts, list):
        # Parts are never falsy (no __bool__ or __len__): filter(None) drops the Nones.
        parts: tuple[Part, ...] = tuple(filter(None, map(_part_from_obj, raw_parts)))
        finish = obj.get("finish_reason")
        return Message(
            role=role,
            parts=parts,
            name=name,
            finish_reason=finish if isinstance(finish, str) else None,
        )
    return _chat_message(obj, role, name)


def _chat_message(obj: Mapping[str, object], role: str, name: str | None) -> Message:
    parts: list[Part] = []
    content = obj.get("content")
    if role == "tool":
        parts.append(
            ToolResultPart(
                name=name,
                response=parse_arguments(content),
                id=_opt_str(_get(obj, "tool_call_id", "toolCallId") or obj.get("id")),
            )
        )
    elif isinstance(content, str):
        parts.append(TextPart(text=content))
    elif isinstance(content, list):
        for item in content:
            part = _chat_content_item(item)
            if part is not None:
                parts.append(part)
    parts.extend(openai_tool_calls(_get(obj, "tool_calls", "toolCalls")))
    return Message(role=role, parts=tuple(parts), name=name)


def openai_tool_calls(calls: object) -> list[ToolCallPart]:
    """Parts of an OpenAI-style ``tool_calls`` list (``[{id, function{name, arguments}}]``)."""
    parts: list[ToolCallPart] = []
    if not isinstance(calls, list):
        return parts
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        fn = call.get("function")
        fn_map: Mapping[str, object] = fn if isinstance(fn, Mapping) else call
        parts.append(
            ToolCallPart(
                name=str(fn_map.get("name") or ""),
                args=parse_arguments(fn_map.get("arguments", fn_map.get("args"))),
                id=_opt_str(call.get("id")),
            )
        )
    return parts


def _chat_content_item(item: object) -> Part | None:
    if isinstance(item, str):
        return TextPart(text=item)
    if not isinstance(item, Mapping):
        return None
    if item.get("type") in (None, "text", "input_text", "output_text"):
        text = item.get("text", item.get("content"))
        if isinstance(text, str):
            return TextPart(text=text)
    return _part_from_obj(item)


def messages_from_value(value: object, *, default_role: str = "user") -> list[Message]:
    """Parse a list of messages from an attribute value (JSON string or structured).

    A single message object is accepted as a one-element list. Elements that are not
    messages are skipped.

    Raises:
        orjson.JSONDecodeError: when ``value`` is a string that is not valid JSON.

    """
    data = load_json(value)
    items: Iterable[object]
    if isinstance(data, list):
        items = data
    elif isinstance(data, dict):
        items = [data]
    else:
        return []
    out = []
    for item in items:
        msg = message_from_obj(item, default_role=default_role)
        if msg is not None:
            out.append(msg)
    return out


def response_reply(response: Mapping[str, object]) -> Message | None:
    """The reply in an OpenAI Responses API ``Response`` object (its ``output`` items).

    The items together are the reply, in order: a ``message``'s content parts, a
    ``function_call`` as a call (its id is ``call_id``: ``id`` names the item), anything
    else (reasoning, server tools) kept as an :class:`OtherPart`. None when ``response``
    has no ``output`` list or nothing in it.
    """
    output = response.get("output")
    if not isinstance(output, list):
        return None
    parts: list[Part] = []
    for item in output:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        content = item.get("content")
        if kind == "message" and isinstance(content, list):
            parts.extend(p for p in map(_chat_content_item, content) if p is not None)
        elif kind == "function_call":
            parts.append(
                ToolCallPart(
                    name=str(item.get("name") or ""),
                    args=parse_arguments(item.get("arguments")),
                    id=_opt_str(item.get("call_id") or item.get("id")),
                )
            )
        else:
            parts.append(OtherPart(type=str(kind or "unknown"), data=cast(JsonValue, dict(item))))
    return Message(role="assistant", parts=tuple(parts)) if parts else None
