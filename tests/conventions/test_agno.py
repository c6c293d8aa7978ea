"""agno's paused runs and refused calls under OpenInference (tracescore.conventions.agno)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tracescore.conventions.agno import SCOPE, failed_calls, paused_for
from tracescore.conventions.base import SpanView
from tracescore.conventions.messages import ToolResultPart
from tracescore.conventions.openinference import OpenInference
from tracescore.spans import AttrValue, SpanRecord


def _span(output: AttrValue, *, scope: str = SCOPE, kind: str = "AGENT") -> SpanRecord:
    return SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="refunder.run",
        attributes={"openinference.span.kind": kind, "output.value": output},
        scope=scope,
    )


@pytest.mark.parametrize(
    ("output", "waits"),
    [
        (
            "I have tools to execute, but I need confirmation.",
            "agno: I have tools to execute, but I need confirmation",
        ),
        (
            "I have tools to execute, but I need confirmation, user input, or external execution.",
            "agno: I have tools to execute, but I need confirmation, user input, or external"
            " execution",
        ),
        (
            "I have tools to execute, but it needs external execution.",
            "agno: I have tools to execute, but it needs external execution",
        ),
        (
            "Team run paused. The following require input:\n- billing: refund requires"
            " confirmation",
            "agno: Team run paused (billing: refund requires confirmation)",
        ),
        ("Team run paused.", "agno: Team run paused"),
    ],
)
def test_agno_s_sentence_for_a_paused_run_is_a_pause(output: str, waits: str) -> None:
    assert paused_for(_span(output)) == waits
    assert OpenInference().paused_for(SpanView(_span(output))) == waits


@pytest.mark.parametrize(
    "span",
    [
        _span("Order 4 is refunded."),
        _span("I have tools to execute, but I need confirmation. Sorry!"),  # the model's own
        _span("I have tools to execute, but I need confirmation.", kind="LLM"),
        _span("I have tools to execute, but I need confirmation.", scope="other"),
        _span(None),
        _span(3),
    ],
)
def test_anything_else_is_no_pause(span: SpanRecord) -> None:
    assert paused_for(span) is None
    assert OpenInference().paused_for(SpanView(span)) is None


_REFUSED = "Tool call limit reached. Tool call get_weather not executed."


def _model_call(messages: Any, *, scope: str = SCOPE) -> SpanRecord:
    """An agno model call: flat input messages, and agno's own dump in ``input.value``."""
    flat: dict[str, AttrValue] = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Paris, then Rome?",
    }
    for n, (call_id, content) in enumerate([("c1", "sunny"), ("c2", _REFUSED)], 1):
        flat[f"llm.input_messages.{n}.message.role"] = "tool"
        flat[f"llm.input_messages.{n}.message.tool_call_id"] = call_id
        flat[f"llm.input_messages.{n}.message.content"] = content
    value = messages if isinstance(messages, str) else json.dumps({"messages": messages})
    return SpanRecord(
        trace_id="1" * 32,
        span_id="3" * 16,
        parent_span_id="2" * 16,
        name="OpenAIChat.invoke",
        attributes={**flat, "input.value": value},
        scope=scope,
    )


def _tool(call_id: object, error: object) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call_id, "content": "…", "tool_call_error": error}


_AGNO_INPUT = [
    {"role": "user", "content": "Paris, then Rome?"},
    _tool("c1", False),
    _tool("c2", True),
]


def test_a_result_agno_flags_as_an_error_is_marked_failed_in_the_input() -> None:
    assert failed_calls(_model_call(_AGNO_INPUT)) == {"c2"}
    found = OpenInference().llm_input(SpanView(_model_call(_AGNO_INPUT)))
    assert found is not None
    results = [p for m in found.value for p in m.tool_results()]
    assert [(r.id, r.response, r.failed) for r in results] == [
        ("c1", "sunny", False),
        ("c2", _REFUSED, True),
    ]


@pytest.mark.parametrize(
    "messages",
    [
        [_tool("c2", "true"), _tool("c2", 1), _tool(2, True)],  # not agno's types
        [{"role": "assistant", "tool_call_id": "c2", "tool_call_error": True}],
        {"messages": "c2"},
        [],
        "not json",
        '{"messages": [{"role": "tool", "tool_call_id": "c2", "tool_call_error": tr',  # cut
    ],
)
def test_anything_else_marks_nothing(messages: Any) -> None:
    span = _model_call(messages if not isinstance(messages, dict) else json.dumps(messages))
    assert failed_calls(span) == frozenset()
    found = OpenInference().llm_input(SpanView(span))
    assert found is not None
    assert not any(p.failed for m in found.value for p in m.parts if isinstance(p, ToolResultPart))


def test_only_agno_s_spans_are_read_so() -> None:
    span = _model_call(_AGNO_INPUT, scope="openinference.instrumentation.openai")
    assert failed_calls(span) == frozenset()
    found = OpenInference().llm_input(SpanView(span))
    assert found is not None
    assert [p.failed for m in found.value for p in m.tool_results()] == [False, False]
