"""agno's runs as OpenInference's instrumentation writes them: a run that paused.

``openinference-instrumentation-agno`` (1.0) writes a run as an AGENT span
``<agent>.run`` (``<agent>.continue_run`` for a resumed one), its ``output.value`` the
run's ``content``. When a tool needs a human (``requires_confirmation``,
``requires_user_input``) or runs elsewhere (``external_execution``), agno pauses the run
before the tool runs (``RunStatus.paused``) and sets its content to a fixed sentence
(``agno.utils.response.get_paused_content``; a team's, ``"Team run paused."`` and what
each member waits for). Nothing else on the span says the run paused: the sentence is
the sign, and no answer. ``continue_run`` resumes it, in a trace of its own whose model
calls see the whole turn. Checked with agno 3.1.

A call agno refuses without running it (past the agent's ``tool_call_limit``) has no tool
span: its result, agno's "Tool call limit reached. …", reaches the next model call as a
tool message, which ``llm.input_messages`` writes as any other. Only the model call's
``input.value``, agno's own dump of its messages, marks it ``tool_call_error``
(:func:`failed_calls`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from msgspec.structs import replace

from tracescore.conventions.base import SpanView
from tracescore.conventions.generic_io import INPUT_VALUE
from tracescore.conventions.messages import Message, Part, ToolResultPart, decoded_json
from tracescore.spans import SpanRecord

__all__ = ["SCOPE", "failed_calls", "mark_failed", "paused_for"]

SCOPE: Final = "openinference.instrumentation.agno"
#: What ``get_paused_content`` sets a paused agent run's content to.
_AGENT_PAUSED: Final = frozenset(
    {
        "I have tools to execute, but I need confirmation, user input, or external execution.",
        "I have tools to execute, but I need confirmation or user input.",
        "I have tools to execute, but I need confirmation or external execution.",
        "I have tools to execute, but I need user input or external execution.",
        "I have tools to execute, but I need confirmation.",
        "I have tools to execute, but I need user input.",
        "I have tools to execute, but it needs external execution.",
    }
)
#: How a paused team run's content starts.
_TEAM_PAUSED: Final = "Team run paused."


def paused_for(span: SpanRecord) -> str | None:
    """What an agno run span that paused says it waits for, None for any other span.

    ``"agno: I have tools to execute, but I need confirmation"``; a team's, ``"agno: Team
    run paused (billing: refund requires confirmation)"``.
    """
    attrs = span.attributes
    if span.scope != SCOPE or attrs.get("openinference.span.kind") != "AGENT":
        return None
    output = attrs.get("output.value")
    if not isinstance(output, str):
        return None
    if output in _AGENT_PAUSED:
        return f"agno: {output.rstrip('.')}"
    if output.startswith(_TEAM_PAUSED):
        waits = [line[2:] for line in output.splitlines()[1:] if line.startswith("- ")]
        return "agno: Team run paused" + (f" ({'; '.join(waits)})" if waits else "")
    return None


def failed_calls(span: SpanRecord) -> frozenset[str]:
    """Ids of the tool calls an agno model call's input says failed (``tool_call_error``).

    ``input.value`` there is ``{"messages": [...]}``, agno's ``Message`` objects as it
    sent them (``role``, ``tool_call_id``, ``tool_call_error``...). Empty for any other
    span, or input in another shape.
    """
    if span.scope != SCOPE:
        return frozenset()
    doc = decoded_json(span.attributes.get(INPUT_VALUE))
    messages = doc.get("messages") if isinstance(doc, Mapping) else None
    if not isinstance(messages, list):
        return frozenset()
    return frozenset(
        m["tool_call_id"]
        for m in messages
        if isinstance(m, Mapping)
        and m.get("role") == "tool"
        and m.get("tool_call_error") is True
        and isinstance(m.get("tool_call_id"), str)
    )


def mark_failed(view: SpanView, messages: list[Message]) -> list[Message]:
    """``messages`` (an agno model call's input) with the results agno says failed marked.

    Their ``failed`` flag makes a call no tool span answered take its result as its error
    too (:mod:`tracescore.tool_calls`). Only an input that holds tool results is looked
    at again, in ``input.value`` (read once per view).
    """
    if not any(m.tool_results() for m in messages):
        return messages
    failed = view.cached("agno.failed_calls", lambda: failed_calls(view.span))
    if not failed:
        return messages
    return [
        replace(m, parts=tuple(_marked(p, failed) for p in m.parts)) if m.tool_results() else m
        for m in messages
    ]


def _marked(part: Part, failed: frozenset[str]) -> Part:
    if isinstance(part, ToolResultPart) and part.id in failed:
        return replace(part, failed=True)
    return part
