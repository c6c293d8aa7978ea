"""pydantic-ai traces, recorded live from the real library with a scripted ``FunctionModel``.

Instrumentation versions 2, 3, the default and 6 are produced at test time (a run takes
milliseconds). Version 1 (``events`` / ``all_messages_events``) is no longer emitted by the
installed pydantic-ai; its fixture is built from that release's source
(``InstrumentedModel.event_to_dict`` / ``messages_to_otel_events``).
"""

from __future__ import annotations

import warnings
from typing import Any, Literal, cast

import pytest
from conv_helpers import TraceBuilder, summary, to_json
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import (  # type: ignore[attr-defined]  # implicit re-export
    DEFAULT_INSTRUMENTATION_VERSION,
    InstrumentationSettings,
)

from tracescore.conventions.base import SpanView
from tracescore.conventions.pydantic_ai import PydanticAI, output_retried, output_tools
from tracescore.formats.sdk import from_readable_span as from_sdk_span
from tracescore.spans import SpanRecord
from tracescore.trajectory import build_invocations

USER = "Weather in Paris?"
FINAL = "It is 21C in Paris."


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """First turn: text plus a tool call; after the tool result: the answer."""
    del info
    if len(messages) == 1:
        return ModelResponse(
            parts=[
                TextPart("Let me check."),
                ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_1"),
            ]
        )
    return ModelResponse(parts=[TextPart(FINAL)])


def run_agent(version: int, *, include_content: bool = True) -> list[SpanRecord]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2-4 are deprecated
        settings = InstrumentationSettings(
            tracer_provider=provider,
            include_content=include_content,
            # pydantic-ai types its DEFAULT_INSTRUMENTATION_VERSION as a plain int
            version=cast("Literal[2, 3, 4, 5, 6]", version),
        )
    Agent.instrument_all(settings)
    try:
        agent = Agent(
            FunctionModel(scripted), name="weather_agent", instructions="Answer about weather."
        )

        @agent.tool_plain
        def get_weather(city: str) -> str:
            """Weather for a city."""
            return f"21C in {city}"

        agent.run_sync(USER)
    finally:
        Agent.instrument_all(False)
    return [from_sdk_span(s) for s in exporter.get_finished_spans()]


EXPECTED: dict[str, Any] = {
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
    "usage": (109, 24),
    "source": ("gen_ai.input.messages", "gen_ai.output.messages"),
}
VERSIONS = [2, 3, DEFAULT_INSTRUMENTATION_VERSION, 6]


@pytest.fixture(params=VERSIONS, ids=[f"v{v}" for v in VERSIONS])
def spans(request: pytest.FixtureRequest) -> list[SpanRecord]:
    return run_agent(request.param)


def test_real_pydantic_ai_trajectory(spans: list[SpanRecord]) -> None:
    [inv] = build_invocations(spans)
    assert summary(inv) == EXPECTED
    assert inv.agents == ("weather_agent",)
    assert inv.system_instructions == "Answer about weather."
    assert inv.inference_calls == 2
    assert inv.warnings == ()


def test_history_of_the_agent_run_span(spans: list[SpanRecord]) -> None:
    [agent] = [s for s in spans if "pydantic_ai.all_messages" in s.attributes]
    found = PydanticAI().history(SpanView(agent))
    assert found is not None
    assert found.source == "pydantic_ai.all_messages"
    # Tool results are role "user" before version 6, "tool" from version 6 on.
    roles = [m.role for m in found.value]
    assert roles in (
        ["user", "assistant", "user", "assistant"],
        ["user", "assistant", "tool", "assistant"],
    )
    assert found.value[-1].text() == FINAL
    assert found.value[1].tool_calls()[0].args == {"city": "Paris"}


def test_history_fills_in_when_model_spans_lost_their_content(spans: list[SpanRecord]) -> None:
    for span in spans:
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            span.attributes.pop(key, None)
    [inv] = build_invocations(spans)
    assert summary(inv) == {
        **EXPECTED,
        "source": ("pydantic_ai.all_messages", "pydantic_ai.all_messages"),
    }


def test_version_2_tool_spans_keep_io_in_tool_arguments() -> None:
    spans = run_agent(2)
    [tool] = [s for s in spans if "tool_arguments" in s.attributes]
    assert "gen_ai.tool.call.arguments" not in tool.attributes
    io = PydanticAI().tool_io(SpanView(tool))
    assert io is not None
    assert (io.name, io.call_id) == ("get_weather", "call_1")
    assert io.args is not None and io.args.value == {"city": "Paris"}
    assert io.result is not None and io.result.value == "21C in Paris"


def test_agent_run_detected_by_attributes_not_name() -> None:
    """Older releases' ``agent run`` spans had no ``gen_ai.operation.name``."""
    reader = PydanticAI()
    t = TraceBuilder()
    run = t.span("anything", {"agent_name": "a", "model_name": "m", "final_result": "x"})
    tool = t.span("anything", {"gen_ai.tool.name": "f", "tool_arguments": "{}"})
    other = t.span("agent run", {"agent_name": "a"})
    assert reader.step_kind(run) == "agent"
    assert reader.agent_name(run) == "a"
    assert reader.step_kind(tool) == "tool"
    assert reader.step_kind(other) is None


DEFERRED = (
    '{"calls":[{"tool_name":"lookup","args":{},"tool_call_id":"c1"}],'
    '"approvals":[{"tool_name":"refund","args":{"order_id":4},"tool_call_id":"c2"}],'
    '"metadata":{},"_kinds":{}}'
)


@pytest.mark.parametrize(
    ("final_result", "paused", "answer"),
    [
        (DEFERRED, "DeferredToolRequests for lookup, refund", None),
        ('{"calls":[],"approvals":[]}', "DeferredToolRequests for its tools", None),
        # an output of the user's own that has those keys, and more, is an answer
        ('{"calls":[],"approvals":[],"total":3}', None, '{"calls":[],"approvals":[],"total":3}'),
        ('{"calls":"none","approvals":[]}', None, '{"calls":"none","approvals":[]}'),
        ("Order 4 is refunded.", None, "Order 4 is refunded."),
    ],
)
def test_deferred_tool_requests_are_a_pause_not_an_answer(
    final_result: str, paused: str | None, answer: str | None
) -> None:
    reader = PydanticAI()
    t = TraceBuilder()
    run = SpanView(t.span("invoke_agent a", {"agent_name": "a", "final_result": final_result}))
    assert reader.paused_for(run) == paused
    stated = reader.final_output(run)
    assert (stated.value if stated is not None else None) == answer


def test_include_content_false_is_not_evaluable() -> None:
    spans = run_agent(DEFAULT_INSTRUMENTATION_VERSION, include_content=False)
    [inv] = build_invocations(spans)
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert "InstrumentationSettings(include_content=True)" in (inv.reason or "")
    assert (inv.user_content, inv.final_response) == (None, None)
    assert [(c.name, c.id) for c in inv.tool_calls] == [("get_weather", "call_1")]


# --- version 1 (hand-built from the 0.x source) -------------------------------------------

SYSTEM_EVENT = {"content": "Answer about weather.", "role": "system", "gen_ai.system": "function"}
USER_EVENT = {
    "content": USER,
    "role": "user",
    "gen_ai.message.index": 0,
    "gen_ai.system": "function",
}
ASSISTANT_1 = {
    "role": "assistant",
    "content": "Let me check.",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
        }
    ],
}
TOOL_EVENT = {
    "role": "tool",
    "id": "call_1",
    "name": "get_weather",
    "content": "21C in Paris",
    "gen_ai.message.index": 2,
}
ASSISTANT_2 = {"role": "assistant", "content": FINAL}


def version_1_trace(*, with_event_names: bool) -> TraceBuilder:
    def named(name: str, event: dict[str, Any]) -> dict[str, Any]:
        return {**event, "event.name": name} if with_event_names else event

    def choice(message: dict[str, Any]) -> dict[str, Any]:
        return named("gen_ai.choice", {"index": 0, "message": message, "gen_ai.system": "function"})

    t = TraceBuilder(scope="pydantic-ai")
    history = [
        named("gen_ai.system.message", SYSTEM_EVENT),
        named("gen_ai.user.message", USER_EVENT),
        named("gen_ai.assistant.message", {**ASSISTANT_1, "gen_ai.message.index": 1}),
        named("gen_ai.tool.message", TOOL_EVENT),
        named("gen_ai.assistant.message", {**ASSISTANT_2, "gen_ai.message.index": 3}),
    ]
    run = t.span(
        "agent run",
        {
            "model_name": "function:scripted",
            "agent_name": "weather_agent",
            "logfire.msg": "weather_agent run",
            "all_messages_events": to_json(history),
            "final_result": FINAL,
        },
    )
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "function",
        "gen_ai.request.model": "function:scripted",
        "model_request_parameters": "{}",
    }
    t.span(
        "chat function:scripted",
        {
            **chat,
            "gen_ai.usage.input_tokens": 53,
            "gen_ai.usage.output_tokens": 9,
            "events": to_json([*history[:2], choice(ASSISTANT_1)]),
        },
        parent=run,
    )
    t.span(
        "running tool",
        {
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1",
            "tool_arguments": '{"city":"Paris"}',
            "tool_response": "21C in Paris",
            "logfire.msg": "running tool: get_weather",
        },
        parent=run,
    )
    t.span(
        "chat function:scripted",
        {
            **chat,
            "gen_ai.usage.input_tokens": 56,
            "gen_ai.usage.output_tokens": 15,
            "events": to_json([*history[:4], choice(ASSISTANT_2)]),
        },
        parent=run,
    )
    return t


@pytest.mark.parametrize("with_event_names", [True, False], ids=["event_name", "by_role"])
def test_version_1_events_attribute(with_event_names: bool) -> None:
    t = version_1_trace(with_event_names=with_event_names)
    [inv] = build_invocations(t.spans)
    assert summary(inv) == {**EXPECTED, "source": ("events", "events")}
    assert inv.system_instructions == "Answer about weather."
    assert inv.agents == ("weather_agent",)


def test_version_1_all_messages_events_history() -> None:
    t = version_1_trace(with_event_names=False)
    for span in t.spans:
        span.attributes.pop("events", None)
    [inv] = build_invocations(t.spans)
    assert summary(inv) == {
        **EXPECTED,
        "source": ("all_messages_events", "all_messages_events"),
    }


def test_history_with_fewer_model_spans_than_replies() -> None:
    """Only one ``chat`` span survived (sampling, a lost batch); the run span's history
    still holds every turn and the tool spans have no results."""
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    t = TraceBuilder(scope="pydantic-ai")
    run = t.span(
        "invoke_agent weather_agent",
        {"gen_ai.operation.name": "invoke_agent", "agent_name": "weather_agent"},
    )
    t.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}, parent=run)
    for n, city in enumerate(["Paris", "Rome"]):
        call_id = f"call_{n}"
        call = {
            "type": "tool_call",
            "id": call_id,
            "name": "get_weather",
            "arguments": {"city": city},
        }
        history.append({"role": "assistant", "parts": [call]})
        result = {
            "type": "tool_call_response",
            "id": call_id,
            "name": "get_weather",
            "result": city,
        }
        history.append({"role": "user", "parts": [result]})
        t.span(
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": call_id,
            },
            parent=run,
        )
    history.append({"role": "assistant", "parts": [{"type": "text", "content": FINAL}]})
    run.attributes["pydantic_ai.all_messages"] = to_json(history)
    [inv] = build_invocations(t.spans)
    assert (inv.user_content, inv.final_response) == (USER, FINAL)
    assert [(c.args, c.result) for c in inv.tool_calls] == [
        ({"city": "Paris"}, "Paris"),
        ({"city": "Rome"}, "Rome"),
    ]


def _model_span(params: object) -> SpanRecord:
    return SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="chat model",
        start_ns=1,
        end_ns=2,
        attributes={} if params is None else {"model_request_parameters": to_json(params)},
        scope="pydantic-ai",
    )


def test_output_tools_are_read_from_the_first_model_span_naming_them() -> None:
    no_outputs = _model_span({"function_tools": [{"name": "get_weather"}], "output_tools": []})
    outputs = _model_span({"output_tools": [{"name": "final_result"}, {"name": "final_Alt"}]})
    later = _model_span({"output_tools": [{"name": "other"}]})
    spans = [_model_span(None), no_outputs, outputs, later]
    assert output_tools(spans) == {"final_result", "final_Alt"}
    assert output_tools([no_outputs, _model_span(None)]) == frozenset()
    # Damaged or foreign parameters name none.
    assert output_tools([_model_span('{"output_tools": [1, {"name": 2}]'), later]) == {"other"}
    assert output_tools([_model_span({"output_tools": [1, {"name": 2}]})]) == frozenset()


@pytest.mark.parametrize(
    ("result", "retried"),
    [
        ("Final result processed.", False),
        ("Output tool not used - a final result was already processed.", False),
        ("Output tool not used - output failed validation.", False),  # a success to it
        ("temp too high", True),  # an output validator's ModelRetry
        ([{"type": "missing", "loc": ["temp"], "msg": "Field required"}], True),
        ({"final": "result processed"}, True),
    ],
)
def test_what_pydantic_ai_answers_an_output_tool_call(result: object, retried: bool) -> None:
    assert output_retried(result) is retried
