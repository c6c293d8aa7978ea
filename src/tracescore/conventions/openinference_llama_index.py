"""LlamaIndex's spans as OpenInference's instrumentation writes them.

What a ``<class>.<method>`` span is (:func:`step_kind`), the agent a step's event names,
and the question of a query or chat engine's call: the OpenInference side of
:mod:`tracescore.conventions.llama_index`.
"""

from __future__ import annotations

from typing import Final

from tracescore.conventions import llama_index
from tracescore.conventions.base import Found, SpanView, StepKind, parse_content
from tracescore.conventions.generic_io import INPUT_VALUE
from tracescore.conventions.messages import JsonValue, decoded_json, is_not_captured
from tracescore.spans import SpanRecord

__all__ = ["PARSE", "agent", "engine_question", "step_kind"]

#: The method of a LlamaIndex output parser's span (``ReActOutputParser.parse``).
PARSE: Final = "parse"
INPUT_MIME_TYPE: Final = "input.mime_type"
JSON_MIME_TYPE: Final = "application/json"


def step_kind(span: SpanRecord, step: StepKind) -> StepKind:
    """A LlamaIndex span's step (:mod:`tracescore.conventions.llama_index`).

    An agent's run (``<agent class>.run``) is the agent run, each ``run_agent_step`` a
    turn of the agent it names, a ReAct output parser's ``parse`` the agent's reading
    of the reply; the request preparation beside a model call is no call, and a
    ``predict`` (a query engine's) is the call inside it: its own ``input.value`` is the
    Python repr of the prompt template object, the call's the messages the model got.
    """
    name = llama_index.method(span)
    if step == "llm":
        if name == llama_index.PREPARE:
            return "other"
        return "chain" if name in llama_index.PROMPTING else "llm"
    if step == "chain":
        if name == llama_index.AGENT_STEP:
            return "turn"
        if llama_index.is_agent_run(span):
            return "workflow"
        if llama_index.is_reply_parser(span, PARSE):
            return "parse"
    return step


def engine_question(view: SpanView) -> Found[str] | None:
    """The question of a LlamaIndex engine's call (:func:`llama_index.engine_question`)."""
    span = view.span
    if not llama_index.is_engine_call(span, llama_index.ENGINE_CALLS):
        return None
    raw = span.attributes.get(INPUT_VALUE)
    if isinstance(raw, str) and span.attributes.get(INPUT_MIME_TYPE) != JSON_MIME_TYPE:
        found: Found[JsonValue] | None = None if is_not_captured(raw) else Found(raw, INPUT_VALUE)
    else:
        found = parse_content(view, raw, INPUT_VALUE)
    question = None if found is None else llama_index.engine_question(found.value)
    return (
        None if found is None or question is None else Found(question, INPUT_VALUE, found.truncated)
    )


def agent(span: SpanRecord) -> str | None:
    """The agent a LlamaIndex ``run_agent_step`` span's event names."""
    if llama_index.method(span) != llama_index.AGENT_STEP:
        return None
    arguments = decoded_json(span.attributes.get(INPUT_VALUE))
    event = arguments.get("ev") if isinstance(arguments, dict) else None
    return llama_index.agent_in_event(event)
