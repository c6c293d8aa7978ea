"""Write invocations as an ADK EvalSet (``*.evalset.json``), the format ``adk eval`` reads.

Output follows what ADK itself writes: snake_case keys, ``None`` and defaults omitted,
one eval case per conversation, invocations in order, ``intermediate_data`` in the
``IntermediateData`` form (``tool_uses``, ``tool_responses``, ``intermediate_responses``).
Turning production traffic into goldens is then: import, review, commit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from tracescore.conventions.messages import JsonValue
from tracescore.model import Conversation, Invocation, ToolCall

__all__ = ["conversations_to_evalset", "invocation_to_adk"]

_ID_SAFE: Final = re.compile(r"[^A-Za-z0-9_.:-]+")


def _content(role: str, text: str | None) -> dict[str, JsonValue]:
    parts: list[JsonValue] = [{"text": text}] if text is not None else []
    return {"role": role, "parts": parts}


def _as_dict(value: JsonValue, key: str) -> dict[str, JsonValue]:
    """ADK's FunctionCall.args / FunctionResponse.response are dicts; wrap anything else.

    ADK wraps a non-dict tool return value as ``{"result": value}``; we do the same.
    """
    if isinstance(value, dict):
        return value
    return {key: value}


def _tool_use(call: ToolCall) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {"name": call.name}
    if call.args is not None:
        out["args"] = _as_dict(call.args, "value")
    if call.id:
        out["id"] = call.id
    return out


def _tool_response(call: ToolCall) -> dict[str, JsonValue]:
    response: JsonValue = call.result
    if call.error is not None and response is None:
        response = {"error": call.error}
    out: dict[str, JsonValue] = {"name": call.name, "response": _as_dict(response, "result")}
    if call.id:
        out["id"] = call.id
    return out


def invocation_to_adk(inv: Invocation) -> dict[str, JsonValue]:
    """One invocation as an ADK ``Invocation`` JSON object."""
    intermediate: dict[str, JsonValue] = {
        "tool_uses": [_tool_use(c) for c in inv.tool_calls],
        "tool_responses": [
            _tool_response(c) for c in inv.tool_calls if c.result is not None or c.error
        ],
        "intermediate_responses": [
            [r.author, [{"text": r.text}]] for r in inv.intermediate_responses
        ],
    }
    out: dict[str, JsonValue] = {
        "invocation_id": inv.invocation_id,
        "user_content": _content("user", inv.user_content),
    }
    if inv.final_response is not None:
        out["final_response"] = _content("model", inv.final_response)
    out["intermediate_data"] = intermediate
    out["creation_timestamp"] = inv.start_ns / 1e9
    return out


def _eval_id(conversation: Conversation, used: set[str]) -> str:
    base = _ID_SAFE.sub("_", conversation.conversation_id).strip("_") or "case"
    eval_id, n = base, 1
    while eval_id in used:
        n += 1
        eval_id = f"{base}-{n}"
    used.add(eval_id)
    return eval_id


def conversations_to_evalset(
    conversations: Sequence[Conversation],
    *,
    eval_set_id: str,
    description: str | None = None,
) -> tuple[dict[str, JsonValue], int, int]:
    """Build an EvalSet document; only evaluable invocations become goldens.

    Returns:
        The EvalSet as a JSON-ready dict, how many invocations it holds, and how many
        were left out because they were not evaluable (content not captured, ...).

    """
    cases: list[JsonValue] = []
    skipped = written = 0
    used: set[str] = set()
    for conv in conversations:
        turns = [i for i in conv.invocations if i.status == "ok" and i.parent_tool_span_id is None]
        skipped += len(conv.invocations) - len(turns)
        if not turns:
            continue
        written += len(turns)
        case: dict[str, JsonValue] = {
            "eval_id": _eval_id(conv, used),
            "conversation": [invocation_to_adk(i) for i in turns],
        }
        app = turns[0].agent
        if app:
            case["session_input"] = {"app_name": app, "user_id": "tracescore"}
        case["creation_timestamp"] = turns[0].start_ns / 1e9
        cases.append(case)
    doc: dict[str, JsonValue] = {"eval_set_id": eval_set_id, "name": eval_set_id}
    if description:
        doc["description"] = description
    doc["eval_cases"] = cases
    # Deterministic: the newest turn, not the wall clock, so re-imports diff cleanly.
    starts = [inv.start_ns for conv in conversations for inv in conv.invocations]
    doc["creation_timestamp"] = max(starts, default=0) / 1e9
    return doc, written, skipped
