"""Invocations as flat JSON records (``--format jsonl``), one per line.

The record is the stable, documented face of an invocation for other tools: ids,
agent, user content, tool calls with results, intermediate responses, final response,
status and reason, the error the run ended in (None when it did not fail), plus usage,
timing, warnings and provenance. With the model's context (``tracescore import
--model-context``), four more keys: ``system_instructions``, ``tool_definitions``,
``retrieved`` and ``grounding`` (what a RAG dataset pairs with each question and answer).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Final

import orjson

from tracescore.conventions.messages import JsonValue
from tracescore.model import Invocation

__all__ = ["invocation_json", "invocation_record", "json_bytes", "write_jsonl"]

#: orjson writes at most 255 levels of nesting while the readers accept up to 1024 (tool
#: arguments given as deeply nested JSON text); deeper containers are written as text.
_MAX_DEPTH: Final = 200


def _jsonable(value: JsonValue) -> JsonValue:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def invocation_record(inv: Invocation, *, model_context: bool = False) -> dict[str, JsonValue]:
    """The JSON Lines record of one invocation.

    Args:
        inv: The invocation.
        model_context: Add the model's context, as read when ``inv`` was rebuilt
            (:mod:`tracescore.model_context`): ``system_instructions`` and
            ``tool_definitions`` (null when not captured), ``retrieved`` (texts) and
            ``grounding`` (``{author, metadata}``), both lists, empty when there were none.
            Only meaningful for invocations rebuilt with the model's context: without it,
            these say nothing was found.

    """
    record: dict[str, JsonValue] = {
        "trace_id": inv.trace_id,
        "conversation_id": inv.conversation_id,
        "invocation_id": inv.invocation_id,
        "agent": inv.agent,
        "agents": list(inv.agents),
        "user_content": inv.user_content,
        "tool_calls": [
            {
                "name": c.name,
                "args": _jsonable(c.args),
                "id": c.id,
                "result": _jsonable(c.result),
                "error": c.error,
                "agent": c.agent,
            }
            for c in inv.tool_calls
        ],
        "intermediate_responses": [
            {"author": r.author, "text": r.text} for r in inv.intermediate_responses
        ],
        "final_response": inv.final_response,
        "status": inv.status,
        "reason_code": inv.reason_code,
        "reason": inv.reason,
        "error": inv.error,
        "usage": {
            "input_tokens": inv.usage.input_tokens,
            "output_tokens": inv.usage.output_tokens,
            "inference_calls": inv.inference_calls,
        },
        "start_time_unix_nano": inv.start_ns,
        "duration_s": inv.duration_s,
        "warnings": list(inv.warnings),
        "provenance": dict(inv.provenance),
        "tags": dict(inv.tags),
    }
    if model_context:
        record["system_instructions"] = inv.system_instructions
        record["tool_definitions"] = _jsonable(inv.tool_definitions)
        record["retrieved"] = list(inv.retrieved)
        record["grounding"] = [
            {"author": g.author, "metadata": _jsonable(g.metadata)} for g in inv.grounding
        ]
    return record


def invocation_json(inv: Invocation, *, model_context: bool = False) -> bytes:
    """The record of ``inv`` as JSON, always writable (see :func:`json_bytes`).

    ``model_context`` as in :func:`invocation_record`.
    """
    return json_bytes(invocation_record(inv, model_context=model_context))


def json_bytes(value: object, *, option: int | None = None) -> bytes:
    """``orjson.dumps(value, default=str, option=option)`` for values read from traces.

    A value nested deeper than orjson can write (found by fuzzing: tool arguments of a
    few hundred nested lists; the readers accept 1024 levels) keeps every level:
    containers below ``_MAX_DEPTH`` become their JSON text, a string, instead of failing
    the whole output.
    """
    try:
        return orjson.dumps(value, default=str, option=option)
    except orjson.JSONEncodeError:
        return orjson.dumps(_shallow(value, _MAX_DEPTH), default=str, option=option)


def _shallow(value: object, depth: int) -> object:
    """``value`` with the containers ``depth`` levels down replaced by their JSON text."""
    if isinstance(value, dict):
        if depth == 0:
            return _json_text(value)
        return {k: _shallow(v, depth - 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if depth == 0:
            return _json_text(value)
        return [_shallow(v, depth - 1) for v in value]
    return value


class _Token(str):
    """Literal JSON punctuation on :func:`_json_text`'s stack (a plain str is a value)."""


def _scalar(value: object) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except orjson.JSONEncodeError:  # an integer past 64 bits
        return orjson.dumps(str(value)).decode()


def _json_text(value: object) -> str:
    """Compact JSON of ``value`` at any depth, without recursion."""
    out: list[str] = []
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Token:
            out.append(item)
        elif isinstance(item, dict):
            stack.append(_Token("}"))
            entries = list(item.items())
            for i in range(len(entries) - 1, -1, -1):
                key, child = entries[i]
                stack.append(child)
                stack.append(_Token(("," if i else "") + orjson.dumps(str(key)).decode() + ":"))
            stack.append(_Token("{"))
        elif isinstance(item, (list, tuple)):
            stack.append(_Token("]"))
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(_Token(","))
            stack.append(_Token("["))
        else:
            out.append(_scalar(item))
    return "".join(out)


def write_jsonl(
    invocations: Iterable[Invocation], out: IO[bytes], *, model_context: bool = False
) -> int:
    """Write one record per line; return how many were written.

    ``model_context`` as in :func:`invocation_record`.
    """
    n = 0
    for inv in invocations:
        out.write(invocation_json(inv, model_context=model_context))
        out.write(b"\n")
        n += 1
    return n
