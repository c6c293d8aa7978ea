"""The OpenAI Agents SDK, as its two instrumentations write it: held calls, errors.

Tool calls held for a human's approval (``needs_approval``):

A function tool made with ``needs_approval`` is not run when the model calls it: the SDK
opens the call's function span, records its arguments, and ends it with no output; the
run then returns with the call among its ``interruptions``, and the run resumed from its
state (the call approved or rejected) is a trace of its own. No span says the run
paused: both instrumentations write the held call as a tool span with arguments and no
result (OpenInference: ``input.value`` and no ``output.value``; OpenLLMetry:
``gen_ai.tool.call.arguments`` and no ``gen_ai.tool.call.result``), and the run's
agent span ends OK right after it.

A tool the SDK did run records its result, and the model is called again after it: a
held call is told by both, a tool span without a result after the run's last model
call (see :func:`tracescore.run_errors.pause`). One exception cannot be told apart: a
run stopped on its first tool's result (``tool_use_behavior``) whose tool returned
``None``.

Errors: the SDK's span error is ``{"message", "data"}``. OpenInference writes it as
``message: data``; OpenLLMetry as the dict's Python repr, read back here into the same
words (:func:`error_text`).
"""

from __future__ import annotations

import ast
from typing import Final

from tracescore.spans import STATUS_ERROR, SpanRecord

__all__ = ["OI_SCOPE", "OPENLLMETRY_SCOPE", "error_text", "held_for_approval"]

#: The instrumentation scopes of OpenInference's and OpenLLMetry's OpenAI Agents tracing.
OI_SCOPE: Final = "openinference.instrumentation.openai_agents"
OPENLLMETRY_SCOPE: Final = "opentelemetry.instrumentation.openai_agents"
_SCOPES: Final = frozenset({OI_SCOPE, OPENLLMETRY_SCOPE})


def held_for_approval(span: SpanRecord) -> str | None:
    """The tool's name when ``span`` is an SDK tool span with arguments and no result.

    None for any other span: another instrumentation's, one in error, one whose
    arguments were not captured (nothing can be said), one with a result.
    """
    scope = span.scope
    if scope not in _SCOPES or span.status_code == STATUS_ERROR:
        return None  # nearly every span: one set lookup
    attrs = span.attributes
    if scope == OI_SCOPE:
        if attrs.get("openinference.span.kind") != "TOOL" or "output.value" in attrs:
            return None
        args, name = attrs.get("input.value"), attrs.get("tool.name")
    else:
        if "gen_ai.tool.call.result" in attrs:
            return None
        args, name = attrs.get("gen_ai.tool.call.arguments"), attrs.get("gen_ai.tool.name")
    return name if isinstance(args, str) and isinstance(name, str) and name else None


#: OpenLLMetry's repr of the SDK's error starts so; longer ones are left as written.
_ERROR_REPR: Final = "{'message': "
_MAX_ERROR_REPR: Final = 16 * 1024


def error_text(span: SpanRecord) -> str | None:
    """The span's status message, OpenLLMetry's repr of an SDK error as ``message: data``.

    ``{'message': 'Max turns exceeded', 'data': {'max_turns': 1}}`` reads as
    ``Max turns exceeded: {'max_turns': 1}``, as OpenInference writes it. Anything else,
    and any span of another scope, is its status message as written.
    """
    message = span.status_message
    if (
        span.scope != OPENLLMETRY_SCOPE
        or not message
        or not message.startswith(_ERROR_REPR)
        or len(message) > _MAX_ERROR_REPR
    ):
        return message
    try:
        value = ast.literal_eval(message)  # literals only: nothing is run
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return message
    if not isinstance(value, dict) or not isinstance(text := value.get("message"), str):
        return message
    data = value.get("data")
    return f"{text}: {data}" if data else text
