"""Invocations as flat JSON records (``--format jsonl``), one per line.

The record is the stable, documented face of an invocation for other tools: ids,
agent, user content, tool calls with results, intermediate responses, final response,
status and reason, plus usage, timing, warnings and provenance.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO

import orjson

from tracescore.conventions.messages import JsonValue
from tracescore.model import Invocation

__all__ = ["invocation_record", "write_jsonl"]


def _jsonable(value: JsonValue) -> JsonValue:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def invocation_record(inv: Invocation) -> dict[str, JsonValue]:
    """The JSON Lines record of one invocation."""
    return {
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


def write_jsonl(invocations: Iterable[Invocation], out: IO[bytes]) -> int:
    """Write one record per line; return how many were written."""
    n = 0
    for inv in invocations:
        out.write(orjson.dumps(invocation_record(inv), default=str))
        out.write(b"\n")
        n += 1
    return n
