"""OpenInference's flattened messages, folded back into :class:`Message` values.

OpenInference writes each message as indexed keys (REFERENCE §5.3)::

    llm.input_messages.N.message.{role,content,name,tool_call_id}
    llm.input_messages.N.message.contents.K.message_content.{type,text}
    llm.output_messages.N.message.tool_calls.K.tool_call.{id,function.name,function.arguments}
    llm.tools.N.tool.json_schema
    retrieval.documents.N.document.{id,content,score,metadata}

:func:`parse_flat` sorts a span's keys into messages in one pass over its attributes and
caches the result on the view; :func:`messages` builds the messages of one side;
:func:`documents` reads a RETRIEVER span's documents.
``"__REDACTED__"`` (what ``OPENINFERENCE_HIDE_*`` writes) counts as not captured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

from tracescore.conventions.base import SpanView, digits
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    OtherPart,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    is_not_captured,
    parse_arguments,
)
from tracescore.spans import AttrValue
from tracescore.unicode_case import lower

__all__ = ["Flat", "Parsed", "documents", "messages", "opt_str", "parse_flat"]

_IN: Final = "llm.input_messages."
_OUT: Final = "llm.output_messages."
_TOOLS: Final = "llm.tools."
#: ``message_content.type`` values that hold text (the reply's, or a thought's).
_TEXT_KINDS: Final = frozenset({"text", "reasoning"})
_DOCUMENTS: Final = "retrieval.documents."
_DOCUMENT_CONTENT: Final = "document.content"
_NO_ARGUMENTS: Final = "{}"

#: A flattened message: sub-key (after ``message.``) → value.
Flat = dict[str, AttrValue]
#: Parsed flattened attributes: input messages, output messages, tool schemas (by index).
Parsed = tuple[dict[int, Flat], dict[int, Flat], dict[int, AttrValue]]


def _index(rest: str) -> tuple[int, str] | None:
    head, _, tail = rest.partition(".")
    index = digits(head)
    return None if index is None else (index, tail)


def parse_flat(view: SpanView) -> Parsed:
    """Fold ``llm.input_messages.*`` / ``llm.output_messages.*`` / ``llm.tools.*`` (cached)."""
    cached = view.cache.get("openinference")
    if cached is not None:
        return cast(Parsed, cached)
    inputs: dict[int, Flat] = {}
    outputs: dict[int, Flat] = {}
    tools: dict[int, AttrValue] = {}
    for key, value in view.span.attributes.items():
        if not key.startswith("llm."):
            continue
        if key.startswith(_IN):
            target, rest = inputs, key[len(_IN) :]
        elif key.startswith(_OUT):
            target, rest = outputs, key[len(_OUT) :]
        elif key.startswith(_TOOLS):
            hit = _index(key[len(_TOOLS) :])
            if hit is not None and hit[1] == "tool.json_schema":
                tools[hit[0]] = value
            continue
        else:
            continue
        hit = _index(rest)
        if hit is not None and hit[1].startswith("message."):
            target.setdefault(hit[0], {})[hit[1][len("message.") :]] = value
    parsed = (inputs, outputs, tools)
    view.cache["openinference"] = parsed
    return parsed


def opt_str(value: object) -> str | None:
    """``value`` as text; None for a missing or empty one (an id or a name not written)."""
    return None if value is None or value == "" else str(value)


def _message(flat: Flat, default_role: str) -> Message | None:
    """One message from its flattened sub-keys; None when nothing was captured."""
    role = lower(str(flat.get("role") or default_role))
    name = opt_str(flat.get("name"))
    contents: dict[int, dict[str, AttrValue]] = {}
    calls: dict[int, dict[str, AttrValue]] = {}
    for key, value in flat.items():
        if key.startswith("contents."):
            hit = _index(key[len("contents.") :])
            if hit is not None:
                sub = hit[1].removeprefix("message_content.")
                contents.setdefault(hit[0], {})[sub] = value
        elif key.startswith("tool_calls."):
            hit = _index(key[len("tool_calls.") :])
            if hit is not None:
                calls.setdefault(hit[0], {})[hit[1].removeprefix("tool_call.")] = value
    items: list[Part] = []
    for k in sorted(contents):
        item = contents[k]
        text = item.get("text")
        kind = item.get("type", "text")
        if kind in _TEXT_KINDS:
            if not is_not_captured(text):
                # A thinking model's thought (google-genai's, google-adk's) or reasoning
                # summary (OpenAI Agents', Strands', agno's) is written as ``reasoning``:
                # a thought of the reply, as a GenAI reasoning part is.
                items.append(TextPart(text=str(text), thought=kind != "text"))
        else:
            items.append(OtherPart(type=str(item.get("type")), data=cast(JsonValue, item)))
    parts: list[Part] = []
    content = flat.get("content")
    if not is_not_captured(content):
        if role == "tool":
            parts.append(
                ToolResultPart(
                    name=name,
                    response=parse_arguments(content),
                    id=opt_str(flat.get("tool_call_id")),
                )
            )
        elif not any(isinstance(p, TextPart) and not p.thought for p in items):
            # ``content`` and ``contents`` spell one content; an instrumentation may write
            # both (OpenAI Agents, for Responses API output): the text is then taken once.
            parts.append(TextPart(text=str(content)))
    parts.extend(items)
    for k in sorted(calls):
        call = calls[k]
        # Instrumentations leave out empty arguments (OpenAI Agents skips "{}"): a call
        # named without arguments was made with none, as the model's own "{}" says.
        arguments = call.get("function.arguments", _NO_ARGUMENTS)
        parts.append(
            ToolCallPart(
                name=str(call.get("function.name") or ""),
                args=parse_arguments(arguments),
                id=opt_str(call.get("id")),
            )
        )
    fn_name = flat.get("function_call_name")
    if isinstance(fn_name, str) and fn_name:
        args = parse_arguments(flat.get("function_call_arguments_json"))
        parts.append(ToolCallPart(name=fn_name, args=args))
    if not parts:
        return None
    return Message(role=role, parts=tuple(parts), name=name)


def messages(flats: dict[int, Flat], default_role: str) -> list[Message]:
    """The messages of one side, in index order, without those where nothing was captured."""
    out = []
    for index in sorted(flats):
        msg = _message(flats[index], default_role)
        if msg is not None:
            out.append(msg)
    return out


def documents(attributes: Mapping[str, AttrValue]) -> list[str]:
    """The ``document.content`` of each ``retrieval.documents.N``, in index (rank) order.

    A document whose content was not captured (hidden, or empty) is left out.
    """
    found: dict[int, str] = {}
    for key, value in attributes.items():
        if not key.startswith(_DOCUMENTS):
            continue
        hit = _index(key[len(_DOCUMENTS) :])
        if hit is None or hit[1] != _DOCUMENT_CONTENT or not isinstance(value, str):
            continue
        if not is_not_captured(value):
            found[hit[0]] = value
    return [found[i] for i in sorted(found)]
