"""OpenLLMetry / Traceloop traces (REFERENCE §5.4), built from the emitter's attribute spec.

Decorator spans (``@workflow``/``@agent``/``@tool``) carry ``traceloop.*``; the OpenAI
instrumentation's ``openai.chat`` spans carry ``llm.request.type`` and indexed
``gen_ai.prompt.*`` / ``gen_ai.completion.*`` keys (older releases) or
``gen_ai.input.messages`` JSON (newer ones).
"""

from __future__ import annotations

from typing import Any

import pytest
from conv_helpers import TraceBuilder, summary, to_json

from tracescore.conventions.base import SpanView
from tracescore.conventions.registry import merged_tool_io
from tracescore.conventions.traceloop import Traceloop, unwrap_entity_input, unwrap_entity_output
from tracescore.trajectory import build_invocations

USER = "Weather in Paris?"
FINAL = "It is 21C in Paris."
SESSION = {"traceloop.association.properties.session_id": "conv-7"}


def decorator(kind: str, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "traceloop.span.kind": kind,
        "traceloop.entity.name": name,
        "traceloop.workflow.name": "weather_workflow",
        **SESSION,
        **extra,
    }


def chat(n: int, *, legacy_calls: bool = False) -> dict[str, Any]:
    """``openai.chat`` span attributes with indexed prompt/completion keys."""
    attrs: dict[str, Any] = {
        "llm.request.type": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.prompt_tokens": 40 + 20 * n,
        "gen_ai.usage.completion_tokens": 10 + 10 * n,
        "llm.usage.total_tokens": 50 + 30 * n,
        **SESSION,
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "Answer weather questions.",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": USER,
    }
    if n == 0:
        attrs["gen_ai.completion.0.role"] = "assistant"
        attrs["gen_ai.completion.0.finish_reason"] = "tool_calls"
        attrs["gen_ai.completion.0.content"] = "Let me check."
        if legacy_calls:
            attrs["gen_ai.completion.0.function_call.name"] = "get_weather"
            attrs["gen_ai.completion.0.function_call.arguments"] = '{"city": "Paris"}'
        else:
            attrs["gen_ai.completion.0.tool_calls.0.id"] = "call_1"
            attrs["gen_ai.completion.0.tool_calls.0.name"] = "get_weather"
            attrs["gen_ai.completion.0.tool_calls.0.arguments"] = '{"city": "Paris"}'
    else:
        attrs.update(
            {
                "gen_ai.prompt.2.role": "assistant",
                "gen_ai.prompt.2.content": "Let me check.",
                "gen_ai.prompt.2.tool_calls.0.id": "call_1",
                "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
                "gen_ai.prompt.2.tool_calls.0.arguments": '{"city": "Paris"}',
                "gen_ai.prompt.3.role": "tool",
                "gen_ai.prompt.3.tool_call_id": "call_1",
                "gen_ai.prompt.3.content": "21C in Paris",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.finish_reason": "stop",
                "gen_ai.completion.0.content": FINAL,
            }
        )
    return attrs


def openllmetry_trace(*, legacy_calls: bool = False) -> TraceBuilder:
    t = TraceBuilder(scope="opentelemetry.instrumentation.openai.v1")
    workflow = t.span(
        "weather_workflow.workflow",
        decorator("workflow", "weather_workflow"),
        scope="traceloop.tracer",
    )
    agent = t.span(
        "weather_agent.agent",
        decorator("agent", "weather_agent"),
        parent=workflow,
        scope="traceloop.tracer",
    )
    t.span("openai.chat", chat(0, legacy_calls=legacy_calls), parent=agent)
    t.span(
        "get_weather.tool",
        decorator(
            "tool",
            "get_weather",
            **{
                "traceloop.entity.input": to_json({"args": [], "kwargs": {"city": "Paris"}}),
                "traceloop.entity.output": to_json("21C in Paris"),
            },
        ),
        parent=agent,
        scope="traceloop.tracer",
    )
    t.span("openai.chat", chat(1), parent=agent)
    return t


@pytest.mark.parametrize("legacy_calls", [False, True], ids=["tool_calls", "function_call"])
def test_openllmetry_indexed_keys(legacy_calls: bool) -> None:
    t = openllmetry_trace(legacy_calls=legacy_calls)
    [inv] = build_invocations(t.spans)
    assert summary(inv) == {
        "user": USER,
        "tool_calls": [
            {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": None if legacy_calls else "call_1",
                "result": "21C in Paris",
                "error": None,
            }
        ],
        "intermediate": [("weather_agent", "Let me check.")],
        "final": FINAL,
        "status": "ok",
        "reason_code": None,
        "usage": (100, 30),
        "source": ("gen_ai.prompt.*", "gen_ai.completion.*"),
    }
    assert inv.agents == ("weather_workflow", "weather_agent")
    assert inv.conversation_id == "conv-7"
    assert inv.provenance["conversation_id"] == "traceloop.association.properties.session_id"
    assert inv.system_instructions == "Answer weather questions."
    assert inv.warnings == ()


def test_newer_openllmetry_json_messages_are_read_by_the_genai_reader() -> None:
    """Newer OpenLLMetry writes ``gen_ai.input.messages`` / ``gen_ai.output.messages``."""
    t = openllmetry_trace()
    for n, span in enumerate(s for s in t.spans if s.name == "openai.chat"):
        attrs = span.attributes
        for key in [k for k in attrs if k.startswith(("gen_ai.prompt.", "gen_ai.completion."))]:
            del attrs[key]
        history = [
            {"role": "system", "parts": [{"type": "text", "content": "Answer weather questions."}]},
            {"role": "user", "parts": [{"type": "text", "content": USER}]},
        ]
        call = {
            "type": "tool_call",
            "id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        }
        reply = {"role": "assistant", "parts": [{"type": "text", "content": "Let me check."}, call]}
        if n == 1:
            history += [
                reply,
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": "call_1", "response": "21C"}],
                },
            ]
            reply = {"role": "assistant", "parts": [{"type": "text", "content": FINAL}]}
        attrs["gen_ai.operation.name"] = "chat"
        attrs["gen_ai.input.messages"] = to_json(history)
        attrs["gen_ai.output.messages"] = to_json([reply])
    [inv] = build_invocations(t.spans)
    assert summary(inv) == {
        "user": USER,
        "tool_calls": [
            {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": "call_1",
                "result": "21C in Paris",
                "error": None,
            }
        ],
        "intermediate": [("weather_agent", "Let me check.")],
        "final": FINAL,
        "status": "ok",
        "reason_code": None,
        "usage": (100, 30),
        "source": ("gen_ai.input.messages", "gen_ai.output.messages"),
    }


def test_content_off_is_not_evaluable_and_names_the_switch() -> None:
    """``TRACELOOP_TRACE_CONTENT=false``: no prompt/completion keys, no entity input/output."""
    t = openllmetry_trace()
    for span in t.spans:
        for key in [
            k
            for k in span.attributes
            if k.startswith(("gen_ai.prompt.", "gen_ai.completion.", "traceloop.entity.in"))
            or k == "traceloop.entity.output"
        ]:
            del span.attributes[key]
    [inv] = build_invocations(t.spans)
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert "TRACELOOP_TRACE_CONTENT=true" in (inv.reason or "")
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [("get_weather", None, None)]


def test_step_kinds() -> None:
    t = TraceBuilder()
    reader = Traceloop()
    kinds = [
        reader.step_kind(t.span("x", {"traceloop.span.kind": k}))
        for k in ("workflow", "agent", "tool", "task", "unknown")
    ]
    assert kinds == ["workflow", "agent", "tool", "chain", "other"]
    assert reader.step_kind(t.span("x", {"llm.request.type": "completion"})) == "llm"
    assert reader.step_kind(t.span("x", {"llm.request.type": "embedding"})) == "other"
    assert reader.step_kind(t.span("x")) is None
    assert reader.agent_name(t.span("x", decorator("task", "fetch"))) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"args": [], "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        ({"args": [{"city": "Paris"}], "kwargs": {}}, {"city": "Paris"}),
        ({"kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        (
            {"args": ["Paris"], "kwargs": {"unit": "C"}},
            {"args": ["Paris"], "kwargs": {"unit": "C"}},
        ),
        ({"city": "Paris"}, {"city": "Paris"}),
        ("Paris", "Paris"),
        # LangChain's on_tool_start payload (OpenLLMetry's LangChain instrumentation).
        (
            {"input_str": "{'city': 'Paris'}", "inputs": {"city": "Paris"}, "kwargs": {}},
            {"city": "Paris"},
        ),
        ({"input_str": "Paris", "inputs": "Paris"}, {"input_str": "Paris", "inputs": "Paris"}),
    ],
)
def test_unwrap_entity_input(value: Any, expected: Any) -> None:
    assert unwrap_entity_input(value) == expected


def lc_message(kind: str, content: Any) -> dict[str, Any]:
    """A message in LangChain's own serialization (``dumpd``)."""
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", kind],
        "kwargs": {"content": content, "type": "tool", "tool_call_id": "c1"},
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"output": lc_message("ToolMessage", "sunny"), "kwargs": {"name": "w"}}, "sunny"),
        ({"output": lc_message("ToolMessage", '{"temp": 21}')}, {"temp": 21}),
        ({"output": "plain", "kwargs": {}}, "plain"),
        ({"output": {"temp": 21}}, {"temp": 21}),
        # Another serialized object is no tool message: kept whole.
        ({"output": lc_message("AIMessage", "hi")}, lc_message("AIMessage", "hi")),
        # Not a callback payload: a tool that returned these keys, or more.
        ({"output": 1, "status": "ok"}, {"output": 1, "status": "ok"}),
        ({"kwargs": {}}, {"kwargs": {}}),
        ("text", "text"),
    ],
)
def test_unwrap_entity_output(value: Any, expected: Any) -> None:
    assert unwrap_entity_output(value) == expected


def test_langchain_callback_payloads_give_args_call_id_and_result() -> None:
    t = TraceBuilder()
    start = {
        "input_str": "{'city': 'Paris'}",
        "inputs": {"city": "Paris"},
        "tags": [],
        "metadata": {"langgraph_node": "tools"},
        "kwargs": {"color": "green", "name": None, "tool_call_id": "call_7"},
    }
    end = {"output": lc_message("ToolMessage", "sunny"), "kwargs": {"name": "get_weather"}}
    span = t.span(
        "execute_tool get_weather",
        decorator(
            "tool",
            "get_weather",
            **{
                "traceloop.entity.input": start,
                "traceloop.entity.output": end,
                # 0.62 repeats both payloads here: the GenAI reader must not win with them.
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": start,
                "gen_ai.tool.call.result": end,
            },
        ),
    )
    io = merged_tool_io(SpanView(span))
    assert (io.name, io.call_id) == ("get_weather", "call_7")
    assert io.args is not None and io.args.value == {"city": "Paris"}
    assert io.result is not None and io.result.value == "sunny"
    # A decorated tool (no callback payload) that returns such a dict keeps it whole.
    decorated = t.span(
        "lookup.tool",
        decorator(
            "tool",
            "lookup",
            **{
                "traceloop.entity.input": {"args": [], "kwargs": {"q": "x"}},
                "traceloop.entity.output": {"output": "y", "kwargs": {}},
            },
        ),
    )
    io = merged_tool_io(SpanView(decorated))
    assert io.call_id is None
    assert io.result is not None and io.result.value == {"output": "y", "kwargs": {}}


def test_tool_io_decodes_json_strings_and_salvages_truncation() -> None:
    t = TraceBuilder()
    span = t.span(
        "t.tool",
        decorator(
            "tool",
            "t",
            **{
                "traceloop.entity.input": '{"args": [], "kwargs": {"q": "long te',
                "traceloop.entity.output": '"plain"',
            },
        ),
    )
    view = SpanView(span)
    io = Traceloop().tool_io(view)
    assert io is not None
    assert io.args is not None and io.args.truncated
    assert io.args.value == {"q": "long te"}
    assert io.result is not None and io.result.value == "plain"
    assert any("truncated" in w for w in view.warnings)
