"""A LangGraph graph's final state from its span (tracescore.conventions.langgraph)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tracescore.conventions.base import SpanView
from tracescore.conventions.langgraph import OI_SCOPE, OL_SCOPE, state
from tracescore.conventions.messages import TextPart, ToolCallPart, ToolResultPart
from tracescore.conventions.openinference import OpenInference
from tracescore.conventions.traceloop import Traceloop
from tracescore.spans import AttrValue, SpanRecord

#: One run's messages as ``message_to_dict`` writes them (OpenInference).
DICTS: list[dict[str, Any]] = [
    {"type": "human", "data": {"content": "Oslo?", "type": "human"}},
    {
        "type": "ai",
        "data": {
            "content": "",
            "type": "ai",
            "tool_calls": [{"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1"}],
        },
    },
    {
        "type": "tool",
        "data": {"content": "sunny", "type": "tool", "tool_call_id": "c1", "status": "success"},
    },
    {"type": "ai", "data": {"content": "Model call limits exceeded", "type": "ai"}},
]


def _lc(message: dict[str, Any]) -> dict[str, Any]:
    """The same message in LangChain's serialization (OpenLLMetry)."""
    kind = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}[message["type"]]
    ident = ["langchain", "schema", "messages", kind]
    return {"lc": 1, "type": "constructor", "id": ident, "kwargs": message["data"]}


def _oi(output: AttrValue, kind: str = "AGENT", scope: str = OI_SCOPE) -> SpanView:
    attrs: dict[str, AttrValue] = {"openinference.span.kind": kind, "output.value": output}
    return SpanView(_span(attrs, scope))


def _ol(output: AttrValue, kind: str = "workflow") -> SpanView:
    attrs: dict[str, AttrValue] = {"traceloop.span.kind": kind, "traceloop.entity.output": output}
    return SpanView(_span(attrs, OL_SCOPE))


def _span(attrs: dict[str, AttrValue], scope: str) -> SpanRecord:
    return SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="weather_agent",
        attributes=attrs,
        scope=scope,
    )


STRUCTURED = {"city": "Oslo", "sky": "sunny"}
VIEWS = [
    _oi(json.dumps({"messages": DICTS, "structured_response": STRUCTURED})),
    _ol(
        json.dumps(
            {
                "outputs": {"messages": [_lc(m) for m in DICTS], "structured_response": STRUCTURED},
                "kwargs": {"tags": []},
            }
        )
    ),
]


@pytest.mark.parametrize("view", VIEWS)
def test_both_serializations_give_the_same_messages(view: SpanView) -> None:
    found = state(view)
    assert found is not None
    user, call, result, last = found.messages
    assert (user.role, user.text()) == ("user", "Oslo?")
    assert call.is_assistant and call.tool_calls() == [
        ToolCallPart(name="get_weather", args={"city": "Oslo"}, id="c1")
    ]
    [part] = result.parts
    assert isinstance(part, ToolResultPart) and (part.id, part.response) == ("c1", "sunny")
    assert last.is_assistant and last.parts == (TextPart(text="Model call limits exceeded"),)
    structured = found.structured_text()
    assert structured is not None and json.loads(structured.value) == STRUCTURED


@pytest.mark.parametrize("view", VIEWS)
def test_the_readers_answer_from_it(view: SpanView) -> None:
    reader = OpenInference() if view.span.scope == OI_SCOPE else Traceloop()
    history = reader.history(view)
    assert history is not None and len(history.value) == 4
    final = reader.final_output(view)
    assert final is not None and json.loads(final.value) == STRUCTURED


def test_no_structured_response_is_no_final_output() -> None:
    view = _oi(json.dumps({"messages": DICTS, "structured_response": None}))
    assert OpenInference().final_output(view) is None
    assert Traceloop().final_output(_ol(json.dumps({"outputs": {"messages": DICTS}}))) is None


@pytest.mark.parametrize(
    "view",
    [
        _oi(json.dumps({"messages": DICTS}), kind="CHAIN"),  # a node's update, not the graph's
        _oi(json.dumps({"messages": DICTS}), scope="other"),
        _ol(json.dumps({"outputs": {"messages": DICTS}}), kind="task"),
        _oi("The answer, as text."),
        _oi('{"messages": "none"}'),
        _oi('{"messages": [1, 2'),  # cut short
        _ol(json.dumps({"messages": DICTS})),  # no "outputs"
        _oi(None),
    ],
)
def test_anything_else_is_no_state(view: SpanView) -> None:
    found = state(view)
    assert found is None or found.messages == []


def test_what_is_no_langchain_message_is_left_out() -> None:
    odd = [{"type": "remove", "data": {"id": "x"}}, {"lc": 1, "type": "secret"}, 3]
    found = state(_oi(json.dumps({"messages": [*odd, DICTS[0]]})))
    assert found is not None
    assert [m.text() for m in found.messages] == ["Oslo?"]
    assert state(_oi(json.dumps({"messages": odd}))) is not None
    assert OpenInference().history(_oi(json.dumps({"messages": odd}))) is None


def test_a_graph_that_ended_on_a_tool_s_message_answers_with_it() -> None:
    """A ``return_direct`` tool ends the graph: its message is the graph's answer."""
    ended = [*DICTS[:3]]
    found = state(_oi(json.dumps({"messages": ended})))
    assert found is not None
    direct = found.direct_result()
    assert direct is not None and direct.value == "sunny"
    final = OpenInference().final_output(_oi(json.dumps({"messages": ended})))
    assert final is not None and final.value == "sunny"
    # Not when an AI message is last, nor for a tool message without text.
    found = state(_oi(json.dumps({"messages": DICTS})))
    assert found is not None and found.direct_result() is None
    empty = [*DICTS[:2], {"type": "tool", "data": {"type": "tool", "content": ""}}]
    found = state(_oi(json.dumps({"messages": empty})))
    assert found is not None and found.direct_result() is None


def test_a_tool_message_with_an_error_status_is_a_failed_result() -> None:
    refused = {
        "type": "tool",
        "data": {"content": "limit", "type": "tool", "tool_call_id": "c2", "status": "error"},
    }
    found = state(_oi(json.dumps({"messages": [*DICTS[:3], refused]})))
    assert found is not None
    results = [p for m in found.messages for p in m.tool_results()]
    assert [(p.id, p.failed) for p in results] == [("c1", False), ("c2", True)]
