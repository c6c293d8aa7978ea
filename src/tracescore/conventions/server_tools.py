"""Tools the model's provider runs itself: OpenAI's Responses API *hosted tools*.

A file search, a web search, a code interpreter run... happen inside the model call:
the reply lists them as output items (``file_search_call``, ``web_search_call``...)
beside its text, no agent code runs them, and no tool span is written. Like the Google
Search grounding of a Gemini reply, they are not calls of the agent's trajectory (the
agent called no tool), but what they found is what the model answered from: a file
search's results are the run's retrieved documents.

The ``Response`` object keeps them as items of their own (read as
:class:`~tracescore.conventions.messages.OtherPart`). OpenInference's flattened output
messages write each as a tool call named after its item type, and a file search's
results as a ``tool`` message answering it within the same output; :func:`hosted_calls`
turns those back into the items they were. (A call the agent makes is never answered
in the output that asks for it: its result comes with the next request.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from tracescore.conventions.messages import (
    JsonValue,
    Message,
    OtherPart,
    Part,
    ToolCallPart,
    ToolResultPart,
)

__all__ = ["FILE_SEARCH", "HOSTED_ITEMS", "file_search_texts", "hosted_calls"]

#: Output item types of the Responses API's tools that run on OpenAI's side. Computer
#: use, local shell and custom tools are asked of the client, as function calls are.
HOSTED_ITEMS: Final = frozenset(
    {
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
    }
)
FILE_SEARCH: Final = "file_search_call"


def hosted_calls(messages: Sequence[Message]) -> list[Message]:
    """One Responses API call's output messages with its hosted tools as the items they are.

    A tool call named after a hosted item type, or answered by a ``tool`` message of the
    same output, becomes an :class:`OtherPart` of that type holding its arguments, id
    and results (``{"type", "id", ..., "results"}``, as the ``Response`` item has them);
    the messages answering them are dropped. Other messages are returned as they are.
    """
    answered: dict[str, JsonValue] = {
        part.id: part.response
        for msg in messages
        if msg.role == "tool"
        for part in msg.parts
        if isinstance(part, ToolResultPart) and part.id
    }
    out: list[Message] = []
    for msg in messages:
        if msg.role == "tool" and all(isinstance(p, ToolResultPart) and p.id for p in msg.parts):
            continue  # answers a hosted call: its results are in the call's item now
        parts = tuple(_as_item(p, answered) for p in msg.parts)
        same = all(a is b for a, b in zip(parts, msg.parts, strict=True))
        out.append(
            msg
            if same
            else Message(role=msg.role, parts=parts, name=msg.name, finish_reason=msg.finish_reason)
        )
    return out


def _as_item(part: Part, answered: Mapping[str, JsonValue]) -> Part:
    if not isinstance(part, ToolCallPart):
        return part
    hosted = part.name in HOSTED_ITEMS or (part.id is not None and part.id in answered)
    if not hosted:
        return part
    item: dict[str, JsonValue] = {"type": part.name, "id": part.id}
    if isinstance(part.args, dict):
        item.update({k: v for k, v in part.args.items() if k not in ("type", "id")})
    if part.id is not None and part.id in answered:
        item["results"] = answered[part.id]
    return OtherPart(type=part.name, data=item)


def file_search_texts(messages: Sequence[Message]) -> list[str]:
    """The texts of the file search results in ``messages`` (model replies), in order."""
    texts: list[str] = []
    for msg in messages:
        for part in msg.parts:
            if not isinstance(part, OtherPart) or part.type != FILE_SEARCH:
                continue
            results = part.data.get("results") if isinstance(part.data, dict) else None
            if not isinstance(results, list):
                continue
            for result in results:
                text = result.get("text") if isinstance(result, dict) else None
                if isinstance(text, str):
                    texts.append(text)
    return texts
