"""A LangGraph agent's final state, as both LangChain instrumentations write it.

A LangGraph graph (``create_agent`` of LangChain 1.x, ``create_react_agent``) ends with
its state: the conversation's ``messages`` and, with a ``response_format``, its
``structured_response``. The graph's span states it (checked with LangGraph 1.2 and
LangChain 1.5):

* OpenInference (``openinference-instrumentation-langchain``): the AGENT span's
  ``output.value``, ``{"messages": [{"type": "ai", "data": {...}}, ...], ...}``;
* OpenLLMetry (``opentelemetry-instrumentation-langchain``): the graph's ``workflow``
  span's ``traceloop.entity.output``, ``{"outputs": {"messages": [...], ...}, "kwargs":
  ...}``, each message in LangChain's own serialization (``{"lc": 1, "type":
  "constructor", "id": [..., "AIMessage"], "kwargs": {...}}``).

The state holds what no model call or tool span shows:

* a result the framework gave a call itself: ``ToolStrategy``'s structured output
  ("Returning structured response: ..."), a tool-call limit's refusal;
* a reply the framework wrote in the model's place: ``ModelCallLimitMiddleware``'s
  "Model call limits exceeded" ends the run;
* the structured response the caller gets, or the result of a ``return_direct`` tool
  that ended the graph (its last message).

Read only when asked (a run with a call lacking its result, or no final response):
the state is the whole conversation, the largest value of the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

import orjson
from msgspec.structs import replace

from tracescore.conventions.base import Found, SpanView
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    ToolResultPart,
    decoded_json,
    message_from_obj,
)

__all__ = ["OI_SCOPE", "OL_SCOPE", "State", "state"]

OI_SCOPE: Final = "openinference.instrumentation.langchain"
OL_SCOPE: Final = "opentelemetry.instrumentation.langchain"
_OI_OUTPUT: Final = "output.value"
_OL_OUTPUT: Final = "traceloop.entity.output"
#: LangChain's message types, as roles.
_ROLES: Final = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
#: What a LangChain message's fields say, as a chat message's.
_FIELDS: Final = ("content", "tool_calls", "tool_call_id", "name")


class State:
    """A graph's final state: its messages (parsed when first asked) and structured response."""

    __slots__ = ("_messages", "_raw", "source", "structured_response")

    def __init__(self, raw: list[object], structured: JsonValue, source: str) -> None:
        self._raw = raw
        self._messages: list[Message] | None = None
        self.source = source
        self.structured_response = structured

    @property
    def messages(self) -> list[Message]:
        """The state's messages, in order; what is no LangChain message is left out."""
        if self._messages is None:
            self._messages = [m for m in map(_message, self._raw) if m is not None]
        return self._messages

    def history(self) -> Found[list[Message]] | None:
        """The messages as a run's history, or None when there are none."""
        return Found(self.messages, self.source) if self.messages else None

    def direct_result(self) -> Found[str] | None:
        """The tool result the graph ended with, as text: a ``return_direct`` tool's.

        A ReAct graph ends on a tool's message only when that tool returns directly (the
        model is not called again): the caller's answer is that message.
        """
        last = _fields(self._raw[-1]) if self._raw else None
        if last is None or last.get("type") != "tool":
            return None
        content = last.get("content")
        if not isinstance(content, str) or not content.strip():
            return None
        return Found(content, f"{self.source} messages")

    def structured_text(self) -> Found[str] | None:
        """The structured response as JSON text, or None when the state has none."""
        if self.structured_response is None:
            return None
        try:
            text = orjson.dumps(self.structured_response).decode()
        except orjson.JSONEncodeError:  # nested past what orjson writes
            return None
        return Found(text, f"{self.source} structured_response")


def state(view: SpanView) -> State | None:
    """The final state the graph span of ``view`` states; None for any other span.

    Read once per view.
    """
    span = view.span
    if span.scope == OI_SCOPE:
        if span.attributes.get("openinference.span.kind") != "AGENT":
            return None
        key = _OI_OUTPUT
    elif span.scope == OL_SCOPE:
        if span.attributes.get("traceloop.span.kind") != "workflow":
            return None
        key = _OL_OUTPUT
    else:
        return None
    value = span.attributes.get(key)
    if not isinstance(value, str) or '"messages"' not in value:
        return None
    return view.cached("langgraph.state", lambda: _read(value, key))


def _read(value: str, source: str) -> State | None:
    data = decoded_json(value)
    if source == _OL_OUTPUT and isinstance(data, Mapping):
        data = data.get("outputs")
    if not isinstance(data, Mapping):
        return None
    messages = data.get("messages")
    if not isinstance(messages, list):
        return None
    return State(messages, cast(JsonValue, data.get("structured_response")), source)


def _fields(obj: object) -> Mapping[str, object] | None:
    """A LangChain message's fields (``type`` among them), in either serialization."""
    if not isinstance(obj, Mapping):
        return None
    if obj.get("lc") == 1 and obj.get("type") == "constructor":
        fields = obj.get("kwargs")  # LangChain's serialization: the kind in ``kwargs``
    else:
        fields = obj.get("data")  # ``message_to_dict``: ``{"type", "data"}``
    return fields if isinstance(fields, Mapping) else None


def _message(obj: object) -> Message | None:
    """A LangChain message, in either serialization, as a chat message."""
    fields = _fields(obj)
    if fields is None:
        return None
    role = _ROLES.get(str(fields.get("type")))
    if role is None:
        return None
    message = message_from_obj({"role": role, **{k: fields[k] for k in _FIELDS if k in fields}})
    if message is None or role != "tool" or fields.get("status") != "error":
        return message
    # A call the tool or the framework answered with an error (a refused call: the
    # tool-call limit's), which no tool span may say.
    parts = tuple(
        replace(p, failed=True) if isinstance(p, ToolResultPart) else p for p in message.parts
    )
    return replace(message, parts=parts)
