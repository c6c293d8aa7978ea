"""What a judge sees of an invocation, rendered as prompt sections.

Each section is written only from what the telemetry carried; what it did not carry is
stated ("not captured in the telemetry") rather than invented, so the judge never
mistakes missing context for a missing behaviour. Large payloads (tool results, tool
definitions) are cut at a fixed size with a marker saying how much was left out, so one
huge tool result cannot blow the judge's context window or the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from tracescore.conventions.messages import JsonValue
from tracescore.export import json_bytes
from tracescore.model import Invocation, ToolCall

__all__ = [
    "NOT_CAPTURED",
    "clip",
    "render_final",
    "render_history",
    "render_instructions",
    "render_intermediate",
    "render_sources",
    "render_tool_calls",
    "render_tool_definitions",
    "render_user",
    "render_value",
    "response_text",
    "section",
]

NOT_CAPTURED = "(not captured in the telemetry)"
#: Characters kept of one rendered payload (tool args/result, definitions, texts).
MAX_PAYLOAD_CHARS = 6_000


def clip(text: str, limit: int = MAX_PAYLOAD_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters not shown]"


def render_value(value: JsonValue) -> str:
    """A JSON value as compact text (strings as they are)."""
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, bytes):
        return clip(value.decode("utf-8", "replace"))
    return clip(json_bytes(value, option=orjson.OPT_SORT_KEYS).decode())


def section(title: str, body: str | None) -> str:
    """A Markdown section; an empty body says it was not captured."""
    text = body.strip() if body else ""
    return f"## {title}\n{text or NOT_CAPTURED}\n"


def render_instructions(inv: Invocation) -> str:
    """The developer (system) instructions section."""
    return section("Developer instructions", clip(inv.system_instructions or ""))


def render_tool_definitions(inv: Invocation) -> str:
    """The available-tools section."""
    if inv.tool_definitions in (None, [], {}):
        return section("Available tools", None)
    return section("Available tools", render_value(inv.tool_definitions))


def _call_line(i: int, call: ToolCall) -> str:
    head = f"{i}. {call.name}({render_value(call.args) if call.args is not None else ''})"
    if call.error:
        return f"{head}\n   error: {clip(call.error)}"
    if call.result is None:
        return f"{head}\n   result: {NOT_CAPTURED}"
    return f"{head}\n   result: {render_value(call.result)}"


def render_tool_calls(calls: Sequence[ToolCall], *, title: str = "Tool calls and results") -> str:
    """Numbered tool calls with their arguments and results (or errors)."""
    if not calls:
        return f"## {title}\n(no tool was called)\n"
    return f"## {title}\n" + "\n".join(_call_line(i, c) for i, c in enumerate(calls, 1)) + "\n"


def render_sources(inv: Invocation) -> list[str]:
    """The sections of what the run's model was given besides its tools: none to two.

    The documents a retriever found (a RAG pipeline's: its model gets them, often inside
    a prompt template the user text is not), and the grounding metadata of replies a
    model's built-in search grounded (Gemini's Google Search: the only trace of what it
    found), as ADK's judges are shown it. A run with neither gets the prompts it had.
    """
    sections = []
    if inv.retrieved:
        lines = [f"{i}. {clip(text)}" for i, text in enumerate(inv.retrieved, 1)]
        sections.append("## Retrieved documents given to the agent\n" + "\n".join(lines) + "\n")
    if inv.grounding:
        entries: list[JsonValue] = [
            {"author": g.author, "grounding_metadata": g.metadata} for g in inv.grounding
        ]
        sections.append(f"## Grounding metadata of the model's search\n{render_value(entries)}\n")
    return sections


def render_intermediate(inv: Invocation) -> str:
    """Text the agent(s) wrote before the final response."""
    if not inv.intermediate_responses:
        return "## Intermediate agent text\n(none)\n"
    lines = [f"[{t.author}] {clip(t.text)}" for t in inv.intermediate_responses]
    return "## Intermediate agent text\n" + "\n".join(lines) + "\n"


def render_history(earlier: Sequence[Invocation], *, limit: int = 10) -> str:
    """Earlier turns of the conversation: user text and final answer, the newest ``limit``."""
    if not earlier:
        return "## Earlier turns\n(this is the first turn)\n"
    shown = earlier[-limit:]
    lines = []
    if len(earlier) > len(shown):
        lines.append(f"({len(earlier) - len(shown)} earlier turns not shown)")
    for inv in shown:
        lines.append(f"user: {clip(inv.user_content or NOT_CAPTURED)}")
        lines.append(f"agent: {clip(inv.final_response or '(no final response)')}")
    return "## Earlier turns\n" + "\n".join(lines) + "\n"


def render_user(inv: Invocation) -> str:
    """The user prompt section."""
    return section("User prompt", clip(inv.user_content or ""))


def response_text(inv: Invocation, *, include_intermediate: bool = False) -> str | None:
    """The final response, after the intermediate texts when asked.

    ADK's ``include_intermediate_responses_in_final``: texts joined by newlines.
    """
    if not include_intermediate:
        return inv.final_response
    parts = [t.text for t in inv.intermediate_responses if t.text]
    if inv.final_response:
        parts.append(inv.final_response)
    return "\n".join(parts) if parts else None


def render_final(
    inv: Invocation, *, title: str = "Final response", include_intermediate: bool = False
) -> str:
    """The final response section (says so when the run produced none)."""
    text = response_text(inv, include_intermediate=include_intermediate)
    if text is None:
        return f"## {title}\n(the agent produced no final response)\n"
    return f"## {title}\n{clip(text)}\n"
