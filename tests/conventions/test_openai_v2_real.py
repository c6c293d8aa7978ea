"""The real ``opentelemetry-instrumentation-openai-v2`` around the real ``openai`` client.

The client talks to :class:`fake_openai.FakeOpenAI` on 127.0.0.1 (scripted: a tool call,
then the answer); the test plays the agent loop by hand: an ``invoke_agent`` span holding
chat 1 (instrumented) › an ``execute_tool`` span (made by hand, per semconv) › chat 2 with
the tool result. Spans and log records go to in-memory exporters of *local* providers.
Every full-trajectory case runs twice: the calls asked for whole, and streamed (the fake
sends the chunks the API streams, the usage last; ``fake_openai.chat_completion``).

What the instrumentation (2.4b0, with ``opentelemetry-util-genai`` 0.4b0) emits:

* default (GenAI semconv 1.28–1.36 path, ``…CAPTURE_MESSAGE_CONTENT=true``): one log
  record per message, ``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice``,
  content in the log *body* (OpenAI chat shape: ``content``, ``tool_calls``, tool ``id``);
  nothing on the span but usage.
* ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (≥ 1.37): the content switch
  takes ``span_only`` / ``event_only`` / ``span_and_event`` (``true`` is rejected with a
  warning: no content). ``span_only`` puts ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` on the chat span as JSON strings; ``event_only`` emits one
  ``gen_ai.client.inference.operation.details`` log record per call whose *attributes* hold
  them as structured values; ``span_and_event`` does both. System messages stay in
  ``gen_ai.input.messages`` (no ``gen_ai.system_instructions``).

The semconv opt-in is read once per process and cached on
``_OpenTelemetrySemanticConventionStability``; each test resets that cache through
``monkeypatch`` (restored afterwards) so it can pick its own mode.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionMessageToolCall
from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fake_openai import (
    CALL_ID,
    FINAL,
    MODEL,
    SYSTEM,
    THINKING,
    TOOLS,
    USER,
    FakeOpenAI,
    chat_completion,
    get_weather,
    script,
)
from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.model import AgentText, Invocation, TokenUsage
from tracescore.trajectory import build_invocations

ENV_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENV_OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
DETAILS = "gen_ai.client.inference.operation.details"

AGENT = "weather_agent"
CONVERSATION = "conv-42"


@dataclass
class Captured:
    spans: list[Any]
    logs: list[Any]
    requests: list[dict[str, Any]]

    def invocation(self) -> Invocation:
        spans = [from_readable_span(s) for s in self.spans]
        logs = [from_sdk_log(r) for r in self.logs]
        assert len({s.trace_id for s in spans}) == 1
        invocations = build_invocations(spans, logs)
        assert len(invocations) == 1
        return invocations[0]

    def chat_spans(self) -> list[Any]:
        return [s for s in self.spans if s.attributes.get("gen_ai.operation.name") == "chat"]

    def log_names(self, span: Any) -> list[str | None]:
        return [
            r.log_record.event_name
            for r in self.logs
            if r.log_record.span_id == span.context.span_id
        ]


@pytest.fixture
def instrument(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Call with (opt_in, capture) to instrument openai on local providers; undone after."""
    instrumentor = OpenAIInstrumentor()  # type: ignore[no-untyped-call]  # unannotated __init__
    state: dict[str, Any] = {}

    def start(*, opt_in: bool, capture: str | None) -> tuple[TracerProvider, Any, Any]:
        if opt_in:
            monkeypatch.setenv(ENV_OPT_IN, "gen_ai_latest_experimental")
        else:
            monkeypatch.delenv(ENV_OPT_IN, raising=False)
        if capture is None:
            monkeypatch.delenv(ENV_CAPTURE, raising=False)
        else:
            monkeypatch.setenv(ENV_CAPTURE, capture)
        # Forget the process-wide opt-in read by an earlier instrumentor (restored at teardown).
        stability = _OpenTelemetrySemanticConventionStability
        monkeypatch.setattr(stability, "_initialized", False)
        monkeypatch.setattr(stability, "_OTEL_SEMCONV_STABILITY_SIGNAL_MAPPING", {})

        span_exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
        log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
        assert not instrumentor.is_instrumented_by_opentelemetry
        instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        state["on"] = True
        return tracer_provider, span_exporter, log_exporter

    yield start
    if state.get("on"):
        instrumentor.uninstrument()
    assert not instrumentor.is_instrumented_by_opentelemetry


def run_agent(
    instrument: Any, *, opt_in: bool, capture: str | None, stream: bool = False
) -> Captured:
    """Instrument, then play one agent turn against the fake server (streamed or not)."""
    tracer_provider, span_exporter, log_exporter = instrument(opt_in=opt_in, capture=capture)
    tracer = tracer_provider.get_tracer("test.agent")
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
    ]
    agent_attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT,
        "gen_ai.conversation.id": CONVERSATION,
    }
    with (
        FakeOpenAI(script()) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0) as client,
        tracer.start_as_current_span(f"invoke_agent {AGENT}", attributes=agent_attrs),
    ):
        first = chat_completion(client, stream=stream, model=MODEL, messages=messages, tools=TOOLS)
        reply = first.choices[0].message
        assert reply.tool_calls
        # The fake server scripts function calls only (no custom tool calls).
        tool_calls = cast("list[ChatCompletionMessageToolCall]", reply.tool_calls)
        messages.append(
            {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in tool_calls
                ],
            }
        )
        for call in tool_calls:
            tool_attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.function.name,
                "gen_ai.tool.call.id": call.id,
            }
            with tracer.start_as_current_span(
                f"execute_tool {call.function.name}", attributes=tool_attrs
            ):
                result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        second = chat_completion(client, stream=stream, model=MODEL, messages=messages, tools=TOOLS)
        assert second.choices[0].message.content == FINAL
        requests = list(server.requests)
    return Captured(
        spans=list(span_exporter.get_finished_spans()),
        logs=list(log_exporter.get_finished_logs()),
        requests=requests,
    )


def assert_full_trajectory(inv: Invocation) -> None:
    assert inv.status == "ok", inv.reason
    assert inv.reason_code is None
    assert inv.agent == AGENT
    assert inv.conversation_id == CONVERSATION
    assert inv.user_content == USER
    assert [(c.name, c.args, c.id, c.result, c.error) for c in inv.tool_calls] == [
        ("get_weather", {"city": "Paris"}, CALL_ID, get_weather("Paris"), None)
    ]
    assert inv.tool_calls[0].span_id is not None  # joined to the execute_tool span
    assert inv.intermediate_responses == (AgentText(author=AGENT, text=THINKING),)
    assert inv.final_response == FINAL
    assert inv.usage == TokenUsage(input_tokens=50 + 80, output_tokens=12 + 9)
    assert inv.inference_calls == 2
    assert inv.warnings == ()


DETAILS_INPUT = f"log:{DETAILS}/gen_ai.input.messages"
DETAILS_OUTPUT = f"log:{DETAILS}/gen_ai.output.messages"


@pytest.mark.parametrize(
    ("opt_in", "capture", "provenance", "system"),
    [
        pytest.param(
            False,
            "true",
            {
                "user_content": "log:gen_ai.*.message",
                "responses": "log:gen_ai.choice",
                "tool_calls": "log:gen_ai.choice",
                "tool_results": "log:gen_ai.*.message",
            },
            SYSTEM,
            id="default-per-message-events",
        ),
        pytest.param(
            True,
            "event_only",
            {
                "user_content": DETAILS_INPUT,
                "responses": DETAILS_OUTPUT,
                "tool_calls": DETAILS_OUTPUT,
                "tool_results": DETAILS_INPUT,
            },
            None,
            id="latest-event_only",
        ),
        pytest.param(
            True,
            "span_only",
            {
                "user_content": "gen_ai.input.messages",
                "responses": "gen_ai.output.messages",
                "tool_calls": "gen_ai.output.messages",
                "tool_results": "gen_ai.input.messages",
            },
            None,
            id="latest-span_only",
        ),
        pytest.param(
            True,
            "span_and_event",
            {
                "user_content": "gen_ai.input.messages",
                "responses": "gen_ai.output.messages",
                "tool_calls": "gen_ai.output.messages",
                "tool_results": "gen_ai.input.messages",
            },
            None,
            id="latest-span_and_event",
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_real_openai_v2_full_trajectory(
    instrument: Any,
    stream: bool,
    opt_in: bool,
    capture: str,
    provenance: dict[str, str],
    system: str | None,
) -> None:
    captured = run_agent(instrument, opt_in=opt_in, capture=capture, stream=stream)

    # The fake server saw the real loop: chat 2 carries the tool result for the model's id.
    assert len(captured.requests) == 2
    assert captured.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": CALL_ID,
        "content": get_weather("Paris"),
    }

    inv = captured.invocation()
    assert_full_trajectory(inv)
    assert {k: inv.provenance.get(k) for k in provenance} == provenance
    assert inv.provenance["conversation_id"] == "gen_ai.conversation.id"
    assert inv.system_instructions == system


def test_default_mode_emits_one_log_record_per_message(instrument: Any) -> None:
    captured = run_agent(instrument, opt_in=False, capture="true")
    chat1, chat2 = captured.chat_spans()
    assert captured.log_names(chat1) == [
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.choice",
    ]
    assert captured.log_names(chat2) == [
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
    ]
    tool_msg = next(
        r.log_record for r in captured.logs if r.log_record.event_name == "gen_ai.tool.message"
    )
    assert tool_msg.body == {"content": get_weather("Paris"), "id": CALL_ID}
    assert "gen_ai.input.messages" not in chat1.attributes
    assert chat1.attributes["gen_ai.system"] == "openai"


@pytest.mark.parametrize(
    ("capture", "on_span", "details_logs"),
    [("span_only", True, 0), ("event_only", False, 1), ("span_and_event", True, 1)],
)
def test_latest_mode_content_placement(
    instrument: Any, capture: str, on_span: bool, details_logs: int
) -> None:
    captured = run_agent(instrument, opt_in=True, capture=capture)
    for chat in captured.chat_spans():
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert ("gen_ai.input.messages" in chat.attributes) is on_span
        assert ("gen_ai.output.messages" in chat.attributes) is on_span
        assert captured.log_names(chat) == [DETAILS] * details_logs
    if details_logs:
        record = captured.logs[-1].log_record
        assert record.body is None
        assert record.attributes is not None
        assert record.attributes["gen_ai.output.messages"][0]["parts"][0] == {
            "content": FINAL,
            "type": "text",
        }


@pytest.mark.parametrize(
    ("opt_in", "capture"),
    [
        pytest.param(False, None, id="default-unset"),
        pytest.param(True, None, id="latest-unset"),
        # With the opt-in, "true" is not a valid mode: a warning, and no content.
        pytest.param(True, "true", id="latest-true-rejected"),
    ],
)
def test_content_capture_off_is_not_evaluable(
    instrument: Any, opt_in: bool, capture: str | None
) -> None:
    captured = run_agent(instrument, opt_in=opt_in, capture=capture)
    assert len(captured.chat_spans()) == 2
    inv = captured.invocation()
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert ENV_CAPTURE in (inv.reason or "")
    assert inv.user_content is None
    assert inv.final_response is None
    # Structure without content survives: the tool span and the usage.
    assert [(c.name, c.id, c.args, c.result) for c in inv.tool_calls] == [
        ("get_weather", CALL_ID, None, None)
    ]
    assert inv.usage == TokenUsage(input_tokens=130, output_tokens=21)
