"""GenAI content carried by events: ≥ 1.37 details events, 1.28–1.36 and ≤ 1.27 events.

Hand-built traces follow the semantic conventions (REFERENCE §5.2) and, for Strands, the
shapes of ``strands.telemetry.tracer`` (``invoke_agent`` › ``execute_event_loop_cycle``
› ``chat`` + ``execute_tool``, content as span events). Real ADK traces come from
``adk_harness`` (ADK schema 1 and 2 with ``EVENT_ONLY`` content).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conv_helpers import TraceBuilder, by_trace, summary, to_json

from tracescore.conventions.base import SpanView
from tracescore.conventions.genai_events import (
    DETAILS_EVENT,
    GenAIEvents,
    GenAILegacyEvents,
    legacy_message,
    simplify_blocks,
)
from tracescore.conventions.messages import TextPart, ToolCallPart, ToolResultPart
from tracescore.formats.sdk import from_readable_span as from_sdk_span
from tracescore.formats.sdk import from_sdk_log
from tracescore.spans import AttrValue, SpanEvent
from tracescore.trajectory import build_invocations

USER = "Weather in Paris?"
FINAL = "It is 21C in Paris."
INPUT_1: list[AttrValue] = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
CALL: dict[str, AttrValue] = {
    "type": "tool_call",
    "id": "call_1",
    "name": "get_weather",
    "arguments": {"city": "Paris"},
}
OUTPUT_1: list[AttrValue] = [
    {
        "role": "assistant",
        "parts": [{"type": "text", "content": "Let me check."}, CALL],
        "finish_reason": "tool_call",
    }
]
RESULT: dict[str, AttrValue] = {
    "type": "tool_call_response",
    "id": "call_1",
    "response": "21C in Paris",
}
INPUT_2: list[AttrValue] = [*INPUT_1, OUTPUT_1[0], {"role": "tool", "parts": [RESULT]}]
OUTPUT_2: list[AttrValue] = [{"role": "assistant", "parts": [{"type": "text", "content": FINAL}]}]
SYSTEM = [{"type": "text", "content": "Answer weather questions."}]
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]


def expected(source: tuple[str | None, str | None], **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
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
        "source": source,
    }
    base.update(changes)
    return base


def chat_attrs(n: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.usage.input_tokens": 40 + 20 * n,
        "gen_ai.usage.output_tokens": 10 + 10 * n,
    }


def agent_span(t: TraceBuilder) -> Any:
    return t.span(
        "invoke_agent weather_agent",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
    )


TOOL_ATTRS = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "get_weather",
    "gen_ai.tool.call.id": "call_1",
}


# --- ≥ 1.37: gen_ai.client.inference.operation.details -------------------------------


def test_details_as_span_events_strands_latest_shape() -> None:
    """Strands with gen_ai_latest_experimental: JSON strings in span events, input and
    output in separate events of one span; the tool span's I/O in details events too."""
    t = TraceBuilder()
    root = agent_span(t)
    cycle = t.span("execute_event_loop_cycle", {"event_loop.cycle_id": "c1"}, parent=root)
    t.span(
        "chat",
        chat_attrs(0),
        parent=cycle,
        events=[
            (
                DETAILS_EVENT,
                {
                    "gen_ai.input.messages": to_json(INPUT_1),
                    "gen_ai.system_instructions": to_json(SYSTEM),
                },
            ),
            (DETAILS_EVENT, {"gen_ai.output.messages": to_json(OUTPUT_1)}),
        ],
    )
    tool_in = [{"role": "tool", "parts": [CALL]}]
    tool_out = [
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "call_1",
                    "response": [{"text": "21C in Paris"}],
                }
            ],
        }
    ]
    t.span(
        "execute_tool get_weather",
        TOOL_ATTRS,
        parent=cycle,
        events=[
            (DETAILS_EVENT, {"gen_ai.input.messages": to_json(tool_in)}),
            (DETAILS_EVENT, {"gen_ai.output.messages": to_json(tool_out)}),
        ],
    )
    cycle2 = t.span("execute_event_loop_cycle", {"event_loop.cycle_id": "c2"}, parent=root)
    t.span(
        "chat",
        chat_attrs(1),
        parent=cycle2,
        events=[
            (DETAILS_EVENT, {"gen_ai.input.messages": to_json(INPUT_2)}),
            (DETAILS_EVENT, {"gen_ai.output.messages": to_json(OUTPUT_2)}),
        ],
    )
    [inv] = build_invocations(t.spans, t.logs)
    assert summary(inv) == expected(
        (
            f"event:{DETAILS_EVENT}/gen_ai.input.messages",
            f"event:{DETAILS_EVENT}/gen_ai.output.messages",
        )
    )
    assert inv.system_instructions == "Answer weather questions."
    assert inv.warnings == ()


@pytest.mark.parametrize("carrier", ["attributes", "body"])
def test_details_as_log_records(carrier: str) -> None:
    """Structured AnyValues in the log record's attributes (ADK) or in a map body."""
    t = TraceBuilder()
    root = agent_span(t)
    for n, (inp, out) in enumerate([(INPUT_1, OUTPUT_1), (INPUT_2, OUTPUT_2)]):
        chat = t.span("chat m", chat_attrs(n), parent=root)
        payload: dict[str, Any] = {
            "gen_ai.input.messages": inp,
            "gen_ai.output.messages": out,
            "gen_ai.system_instructions": SYSTEM,
            "gen_ai.tool.definitions": TOOLS,
        }
        if carrier == "attributes":
            t.log(chat, DETAILS_EVENT, attrs=payload)
        else:
            t.log(chat, DETAILS_EVENT, body=payload)
        if n == 0:
            t.span(
                "execute_tool get_weather",
                {**TOOL_ATTRS, "gen_ai.tool.call.result": "21C in Paris"},
                parent=root,
            )
    [inv] = build_invocations(t.spans, t.logs)
    assert summary(inv) == expected(
        (
            f"log:{DETAILS_EVENT}/gen_ai.input.messages",
            f"log:{DETAILS_EVENT}/gen_ai.output.messages",
        )
    )
    assert inv.system_instructions == "Answer weather questions."
    assert inv.tool_definitions == TOOLS
    assert inv.provenance["tool_definitions"] == f"log:{DETAILS_EVENT}/gen_ai.tool.definitions"


def test_span_events_win_over_log_records_and_usage_from_event() -> None:
    t = TraceBuilder()
    chat = t.span(
        "chat m",
        {"gen_ai.operation.name": "chat"},
        events=[(DETAILS_EVENT, {"gen_ai.output.messages": to_json(OUTPUT_2)})],
    )
    t.log(chat, DETAILS_EVENT, attrs={"gen_ai.output.messages": OUTPUT_1})
    t.log(
        chat,
        DETAILS_EVENT,
        attrs={"gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3},
    )
    view = SpanView(chat, list(t.logs))
    out = GenAIEvents().llm_output(view)
    assert out is not None
    assert out.value[0].text() == FINAL
    assert GenAIEvents().usage(SpanView(t.span("x"))) is None
    log_only = SpanView(replace(chat, events=[]), list(t.logs))
    usage = GenAIEvents().usage(log_only)
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (7, 3)


def test_truncated_details_payload_is_salvaged_with_a_warning() -> None:
    whole = to_json(
        [*INPUT_1, {"role": "assistant", "parts": [{"type": "text", "content": "Let"}]}]
    )
    truncated = whole[: whole.index("Let") + 2]
    t = TraceBuilder()
    root = agent_span(t)
    chat = t.span("chat m", chat_attrs(0), parent=root)
    t.log(
        chat,
        DETAILS_EVENT,
        attrs={"gen_ai.input.messages": truncated, "gen_ai.output.messages": to_json(OUTPUT_2)},
    )
    [inv] = build_invocations(t.spans, t.logs)
    assert summary(inv) == expected(
        (
            f"log:{DETAILS_EVENT}/gen_ai.input.messages",
            f"log:{DETAILS_EVENT}/gen_ai.output.messages",
        ),
        tool_calls=[],
        intermediate=[],
        usage=(40, 10),
    )
    assert any("truncated" in w and "gen_ai.input.messages" in w for w in inv.warnings)


# --- 1.28–1.36: per-message events ------------------------------------------------------

OPENAI_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def _legacy_trace(carrier: str) -> TraceBuilder:
    """An OpenAI-style agent with 1.28–1.36 events (arguments as JSON strings)."""
    t = TraceBuilder()
    root = agent_span(t)

    def emit(span: Any, name: str, payload: dict[str, Any]) -> None:
        if carrier == "span_event":
            span.events = [*span.events, SpanEvent(name=name, attributes=payload)]
        else:
            t.log(span, name, body=payload, name_in_attribute=carrier == "log_event_name_attr")

    chat1 = t.span("chat m", chat_attrs(0), parent=root)
    emit(chat1, "gen_ai.system.message", {"content": "Answer weather questions."})
    emit(chat1, "gen_ai.user.message", {"content": USER})
    emit(
        chat1,
        "gen_ai.choice",
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {"content": "Let me check.", "tool_calls": [OPENAI_CALL]},
        },
    )
    t.span(
        "execute_tool get_weather",
        {**TOOL_ATTRS, "gen_ai.tool.call.result": "21C in Paris"},
        parent=root,
    )
    chat2 = t.span("chat m", chat_attrs(1), parent=root)
    emit(chat2, "gen_ai.system.message", {"content": "Answer weather questions."})
    emit(chat2, "gen_ai.user.message", {"content": USER})
    emit(
        chat2, "gen_ai.assistant.message", {"content": "Let me check.", "tool_calls": [OPENAI_CALL]}
    )
    emit(chat2, "gen_ai.tool.message", {"id": "call_1", "content": "21C in Paris"})
    emit(
        chat2,
        "gen_ai.choice",
        {"index": 1, "finish_reason": "stop", "message": {"content": "nope"}},
    )
    emit(
        chat2, "gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"content": FINAL}}
    )
    return t


@pytest.mark.parametrize("carrier", ["span_event", "log_event_name", "log_event_name_attr"])
def test_per_message_events(carrier: str) -> None:
    t = _legacy_trace(carrier)
    [inv] = build_invocations(t.spans, t.logs)
    origin = "event" if carrier == "span_event" else "log"
    assert summary(inv) == expected((f"{origin}:gen_ai.*.message", f"{origin}:gen_ai.choice"))
    assert inv.system_instructions == "Answer weather questions."
    assert inv.warnings == ()


def _choices_on_the_agent_span(t: TraceBuilder, offset: int = 1) -> None:
    """Move each ``gen_ai.choice`` to the agent span, ``offset`` ns into its call's time.

    That is where OpenLLMetry's openai instrumentation (0.62) emits the choices of a
    streamed call: in the context the stream was read in, just before it ends the
    call's span.
    """
    root = t.spans[0]
    start = {s.span_id: s.start_ns for s in t.spans if s.name == "chat m"}
    t.logs = [
        replace(log, span_id=root.span_id, time_ns=start[log.span_id or ""] + offset)
        if log.event_name == "gen_ai.choice"
        else log
        for log in t.logs
    ]


def test_choices_emitted_in_the_callers_context_belong_to_the_call_then_running() -> None:
    t = _legacy_trace("log_event_name")
    _choices_on_the_agent_span(t)
    [inv] = build_invocations(t.spans, t.logs)
    assert summary(inv) == expected(("log:gen_ai.*.message", "log:gen_ai.choice"))
    assert inv.warnings == ()


def test_a_choice_in_no_calls_time_or_in_two_stays_where_it_is() -> None:
    t = _legacy_trace("log_event_name")
    _choices_on_the_agent_span(t, offset=600_000)  # after each call ended (500 µs)
    [outside] = build_invocations(t.spans, t.logs)
    assert outside.status == "not_evaluable"
    assert "model output missing" in (outside.reason or "")
    t = _legacy_trace("log_event_name")
    _choices_on_the_agent_span(t)
    first, second = (s for s in t.spans if s.name == "chat m")
    t.spans[t.spans.index(first)] = replace(first, end_ns=second.end_ns)  # overlapping calls
    [overlapping] = build_invocations(t.spans, t.logs)
    # The first call's choice, in its time only, is its own; the second's is in both.
    assert [r.text for r in overlapping.intermediate_responses] == ["Let me check."]
    assert overlapping.final_response is None


def test_per_message_events_without_content_are_not_evaluable() -> None:
    """opentelemetry-instrumentation-openai-v2 with capture off: bodies keep roles, ids and
    tool names, never content or arguments."""
    t = TraceBuilder()
    root = agent_span(t)
    chat = t.span("chat m", chat_attrs(0), parent=root)
    t.log(chat, "gen_ai.user.message", body={})
    call: dict[str, AttrValue] = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather"},
    }
    t.log(
        chat,
        "gen_ai.choice",
        body={"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [call]}},
    )
    [inv] = build_invocations(t.spans, t.logs)
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in (inv.reason or "")
    assert [(c.name, c.args) for c in inv.tool_calls] == [("get_weather", None)]


def test_legacy_message_shapes() -> None:
    # ADK schema 1 logs: a Gemini Content under "content"; the reply under "content" too.
    msg = legacy_message(
        "gen_ai.user.message",
        {
            "content": {
                "role": "model",
                "parts": [{"function_call": {"name": "f", "args": {"a": 1}}}],
            }
        },
    )
    assert msg is not None
    assert msg.role == "model"
    assert msg.parts == (ToolCallPart(name="f", args={"a": 1}),)
    choice = legacy_message(
        "gen_ai.choice",
        {
            "content": {"role": "model", "parts": [{"text": "hi"}]},
            "index": 0,
            "finish_reason": "STOP",
        },
    )
    assert choice is not None
    assert choice.text() == "hi"
    assert legacy_message("gen_ai.choice", {"content": "<elided>", "index": 0}) is None
    assert legacy_message("gen_ai.user.message", {"content": "<elided>"}) is None
    # Strands: Bedrock content blocks as a JSON string.
    blocks = legacy_message(
        "gen_ai.tool.message",
        {
            "content": to_json(
                [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "status": "success",
                            "content": [{"json": {"x": 1}}],
                        }
                    }
                ]
            )
        },
    )
    assert blocks is not None
    assert blocks.parts == (ToolResultPart(name=None, response={"x": 1}, id="t1"),)
    text = legacy_message("gen_ai.user.message", {"content": "[not json"})
    assert text is not None
    assert text.parts == (TextPart(text="[not json"),)
    assert simplify_blocks([{"text": "a"}, {"text": "b"}]) == [{"text": "a"}, {"text": "b"}]


# --- ≤ 1.27: gen_ai.content.prompt / gen_ai.content.completion ------------------------


def test_prompt_and_completion_span_events() -> None:
    t = TraceBuilder()
    root = agent_span(t)
    prompt_1 = [
        {"role": "system", "content": "Answer weather questions."},
        {"role": "user", "content": USER},
    ]
    completion_1 = [{"role": "assistant", "content": "Let me check.", "tool_calls": [OPENAI_CALL]}]
    prompt_2 = [
        *prompt_1,
        completion_1[0],
        {"role": "tool", "tool_call_id": "call_1", "content": "21C in Paris"},
    ]
    completion_2 = [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": FINAL}}
    ]
    old = {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"}
    for n, (prompt, completion) in enumerate([(prompt_1, completion_1), (prompt_2, completion_2)]):
        t.span(
            "openai.chat",
            {
                **old,
                "gen_ai.usage.prompt_tokens": 40 + 20 * n,
                "gen_ai.usage.completion_tokens": 10 + 10 * n,
            },
            parent=root,
            events=[
                ("gen_ai.content.prompt", {"gen_ai.prompt": to_json(prompt)}),
                ("gen_ai.content.completion", {"gen_ai.completion": to_json(completion)}),
            ],
        )
        if n == 0:
            t.span(
                "execute_tool get_weather",
                {**TOOL_ATTRS, "gen_ai.tool.call.result": "21C in Paris"},
                parent=root,
            )
    [inv] = build_invocations(t.spans, t.logs)
    assert summary(inv) == expected(
        (
            "event:gen_ai.content.prompt/gen_ai.prompt",
            "event:gen_ai.content.completion/gen_ai.completion",
        )
    )


def test_plain_text_prompt_and_completion() -> None:
    t = TraceBuilder()
    t.span(
        "llm",
        {"gen_ai.request.model": "m"},
        events=[
            ("gen_ai.content.prompt", {"gen_ai.prompt": USER}),
            ("gen_ai.content.completion", {"gen_ai.completion": FINAL}),
        ],
    )
    [inv] = build_invocations(t.spans)
    assert (inv.user_content, inv.final_response, inv.status) == (USER, FINAL, "ok")


# --- Strands (default conventions): content as 1.28–1.36 span events ------------------


def test_strands_shaped_trace() -> None:
    t = TraceBuilder(scope="strands.telemetry.tracer")
    root = t.span(
        "invoke_agent weather_agent",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.system": "strands-agents",
            "gen_ai.agent.name": "weather_agent",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 30,
        },
        events=[
            ("gen_ai.user.message", {"content": to_json([{"text": USER}])}),
            ("gen_ai.choice", {"message": FINAL, "finish_reason": "end_turn"}),
        ],
    )
    tool_use = {
        "toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}
    }
    tool_result = {
        "toolResult": {
            "toolUseId": "tooluse_1",
            "status": "success",
            "content": [{"text": "21C in Paris"}],
        }
    }
    cycle = t.span("execute_event_loop_cycle", {"event_loop.cycle_id": "c1"}, parent=root)
    t.span(
        "chat",
        {**chat_attrs(0), "gen_ai.system": "strands-agents"},
        parent=cycle,
        events=[
            ("gen_ai.user.message", {"content": to_json([{"text": USER}])}),
            (
                "gen_ai.choice",
                {
                    "finish_reason": "tool_use",
                    "message": to_json([{"text": "Let me check."}, tool_use]),
                },
            ),
        ],
    )
    t.span(
        "execute_tool get_weather",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "tooluse_1",
        },
        parent=cycle,
        events=[
            (
                "gen_ai.tool.message",
                {"role": "tool", "content": to_json({"city": "Paris"}), "id": "tooluse_1"},
            ),
            ("gen_ai.choice", {"message": to_json([{"text": "21C in Paris"}]), "id": "tooluse_1"}),
        ],
    )
    cycle2 = t.span("execute_event_loop_cycle", {"event_loop.cycle_id": "c2"}, parent=cycle)
    t.span(
        "chat",
        {**chat_attrs(1), "gen_ai.system": "strands-agents"},
        parent=cycle2,
        events=[
            ("gen_ai.user.message", {"content": to_json([{"text": USER}])}),
            (
                "gen_ai.assistant.message",
                {"content": to_json([{"text": "Let me check."}, tool_use])},
            ),
            ("gen_ai.tool.message", {"content": to_json([tool_result])}),
            ("gen_ai.choice", {"finish_reason": "end_turn", "message": to_json([{"text": FINAL}])}),
        ],
    )
    [inv] = build_invocations(t.spans, t.logs)
    assert summary(inv) == expected(
        ("event:gen_ai.*.message", "event:gen_ai.choice"),
        tool_calls=[
            {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": "tooluse_1",
                "result": "21C in Paris",
                "error": None,
            }
        ],
    )
    assert inv.agent == "weather_agent"


def test_strands_tool_span_io() -> None:
    t = TraceBuilder()
    span = t.span(
        "execute_tool get_weather",
        {"gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "t1"},
        events=[
            ("gen_ai.tool.message", {"role": "tool", "content": '{"city": "Paris"}', "id": "t1"}),
            ("gen_ai.choice", {"message": '[{"json": {"temp": 21}}]', "id": "t1"}),
        ],
    )
    io = GenAILegacyEvents().tool_io(SpanView(span))
    assert io is not None
    assert io.call_id == "t1"
    assert io.args is not None and io.args.value == {"city": "Paris"}
    assert io.result is not None and io.result.value == {"temp": 21}
    assert GenAILegacyEvents().tool_io(SpanView(t.span("plain"))) is None


# --- real ADK ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def harness() -> Any:
    import adk_harness

    return adk_harness


def _rebuild(run: Any) -> list[Any]:
    spans = [from_sdk_span(s) for s in run.spans]
    logs = [from_sdk_log(r) for r in run.logs]
    return [inv for s, lg in by_trace(spans, logs) for inv in build_invocations(s, lg)]


def test_adk_schema2_event_only_reads_log_records(harness: Any) -> None:
    """ADK schema 2, EVENT_ONLY: spans carry no content; the details log records do."""
    run = harness.run_scenario("two_sequential_tools", schema="v2", content="EVENT_ONLY")
    [inv] = _rebuild(run)
    [theirs] = run.adk_invocations
    source = f"log:{DETAILS_EVENT}/gen_ai.input.messages"
    assert summary(inv) == {
        "user": theirs.user_content.parts[0].text,
        "tool_calls": [
            {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": inv.tool_calls[0].id,
                "result": {"city": "Paris", "temp_c": 21.5, "condition": "sunny"},
                "error": None,
            },
            {
                "name": "convert_temperature",
                "args": {"celsius": 21.5, "precision": 1},
                "id": inv.tool_calls[1].id,
                "result": {"fahrenheit": 70.7},
                "error": None,
            },
        ],
        "intermediate": [],
        "final": theirs.final_response.parts[0].text,
        "status": "ok",
        "reason_code": None,
        "usage": (480, 37),
        "source": (source, f"log:{DETAILS_EVENT}/gen_ai.output.messages"),
    }
    assert all((c.id or "").startswith("adk-") for c in inv.tool_calls)
    assert (
        inv.provenance["system_instructions"] == f"log:{DETAILS_EVENT}/gen_ai.system_instructions"
    )


def test_adk_schema1_event_only_logs_when_spans_hold_no_content(harness: Any) -> None:
    """ADK schema 1 with span content off but EVENT_ONLY: only the 1.28–1.36-style logs
    (Gemini ``Content`` bodies, ``gen_ai.choice`` reply under ``content``) hold content."""
    run = harness.run_scenario(
        "text_and_call",
        schema="v1",
        content="EVENT_ONLY",
        extra_env={"ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"},
    )
    [inv] = _rebuild(run)
    [theirs] = run.adk_invocations
    assert summary(inv) == {
        "user": theirs.user_content.parts[0].text,
        "tool_calls": [
            {
                "name": "get_weather",
                "args": {"city": "Berlin"},
                "id": inv.tool_calls[0].id,
                "result": {"city": "Berlin", "temp_c": 15.5, "condition": "rainy"},
                "error": None,
            }
        ],
        "intermediate": [("weather_agent", "Let me check Berlin for you.")],
        "final": theirs.final_response.parts[0].text,
        "status": "ok",
        "reason_code": None,
        "usage": (200, 40),
        "source": ("log:gen_ai.*.message", "log:gen_ai.choice"),
    }


def test_adk_schema1_no_content_events_are_elided(harness: Any) -> None:
    run = harness.run_scenario("no_tools", schema="v1", content="NO_CONTENT")
    [inv] = _rebuild(run)
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS" in (inv.reason or "")
