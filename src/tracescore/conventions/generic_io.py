"""The last-resort reader: the generic ``input.value`` / ``output.value`` pair.

OpenInference writes every span's input and output there (REFERENCE §5.3), and other
instrumentations use the same two keys; the payload is whatever the instrumented call
took or returned: a chat request, a message list, a provider's response, plain text.
This reader is asked about model-call spans only, after every convention-specific one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from tracescore.conventions.base import ConventionReader, Found, SpanView, parse_content
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    TextPart,
    message_from_obj,
    messages_from_value,
    response_reply,
)

__all__ = [
    "INPUT_VALUE",
    "OUTPUT_MIME_TYPE",
    "OUTPUT_VALUE",
    "GenericIO",
    "output_messages",
]

INPUT_VALUE: Final = "input.value"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"


def _input_messages(data: JsonValue) -> list[Message]:
    if isinstance(data, str):
        return [Message(role="user", parts=(TextPart(text=data),))]
    if isinstance(data, list):
        return messages_from_value(data)
    if not isinstance(data, dict):
        return []
    for key in ("messages", "contents"):
        value = data.get(key)
        if isinstance(value, list):
            return messages_from_value(value)
    for key in ("prompt", "input", "query"):
        value = data.get(key)
        if isinstance(value, str):
            return [Message(role="user", parts=(TextPart(text=value),))]
    if "role" in data:
        return messages_from_value(data)
    return []


def output_messages(data: JsonValue) -> list[Message]:
    """The reply (as messages) in an ``output.value`` payload of any known shape."""
    if isinstance(data, str):
        return [Message(role="assistant", parts=(TextPart(text=data),))]
    if isinstance(data, list):
        # The OpenAI Agents SDK's streamed Chat Completions calls record [Response].
        if data and isinstance(data[0], dict) and data[0].get("object") == "response":
            return output_messages(data[0])
        return messages_from_value(data, default_role="assistant")
    if not isinstance(data, dict):
        return []
    if data.get("object") == "response":
        reply = response_reply(data)
        return [reply] if reply is not None else []
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        first = choices[0]
        msg = message_from_obj(first.get("message"), default_role="assistant")
        if msg is None and isinstance(first.get("text"), str):
            return [Message(role="assistant", parts=(TextPart(text=str(first["text"])),))]
        return [msg] if msg is not None else []
    content = data.get("content")
    if isinstance(content, Mapping):
        msg = message_from_obj(content, default_role="assistant")
        return [msg] if msg is not None else []
    if "role" in data or isinstance(content, (str, list)):
        return messages_from_value(data, default_role="assistant")
    return []


class GenericIO(ConventionReader):
    """Last resort for model spans: the generic ``input.value`` / ``output.value`` pair.

    ``input.value`` may be a JSON object with ``messages`` (chat), ``contents`` (Gemini) or
    ``prompt`` (completion), a JSON message list, or plain text (one user message).
    ``output.value`` may be an OpenAI response (``choices``), a Responses API
    ``Response`` (``output`` items; the OpenAI Agents SDK records a streamed Chat
    Completions call as ``[Response]``), a Gemini/ADK response (``content``), a message,
    or plain text (the assistant's reply). Only asked about
    model-call spans, after every convention-specific reader.
    """

    name = "generic"

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """``input.value``."""
        found = parse_content(view, view.span.attributes.get(INPUT_VALUE), INPUT_VALUE)
        if found is None:
            return None
        msgs = _input_messages(found.value)
        return Found(msgs, INPUT_VALUE, found.truncated) if msgs else None

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """``output.value``."""
        found = parse_content(view, view.span.attributes.get(OUTPUT_VALUE), OUTPUT_VALUE)
        if found is None:
            return None
        msgs = output_messages(found.value)
        return Found(msgs, OUTPUT_VALUE, found.truncated) if msgs else None
