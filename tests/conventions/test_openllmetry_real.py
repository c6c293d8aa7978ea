"""The real OpenLLMetry ``opentelemetry-instrumentation-openai`` around the real ``openai`` client.

The client talks to :class:`fake_openai.FakeOpenAI` on 127.0.0.1 (scripted: a tool call,
then the answer). The agent and tool spans are written by hand the way traceloop-sdk
0.62.4 writes them (``decorators/base.py`` and the SDK span processor's ``on_start``):

* ``@agent`` → span ``weather_agent.agent`` with ``traceloop.span.kind=agent``,
  ``traceloop.entity.name``, ``traceloop.entity.input`` = ``{"args": [...], "kwargs": {...}}``
  JSON and ``traceloop.entity.output`` JSON (both only when ``TRACELOOP_TRACE_CONTENT`` is
  true); the agent name is put on the context, and the processor copies it to every span
  started under it as ``gen_ai.agent.name`` (the agent span included);
* ``@tool`` → span ``get_weather.tool``, same keys plus ``gen_ai.tool.name``;
* ``Traceloop.set_association_properties({"session_id": ...})`` → the processor writes
  ``traceloop.association.properties.session_id`` on every span started afterwards.

What the instrumentation (0.62.4, ``opentelemetry-semantic-conventions-ai`` 0.5.1) emits
for a chat call — no ``llm.request.type`` and no indexed ``gen_ai.prompt.{i}.*`` /
``gen_ai.completion.{i}.*`` keys any more:

* default (``use_attributes=True``): span ``openai.chat`` (scope
  ``opentelemetry.instrumentation.openai.v1``, status UNSET) with ``gen_ai.operation.name``,
  ``gen_ai.provider.name``, ``gen_ai.usage.{input,output}_tokens`` and the messages as the
  GenAI ≥1.37 JSON strings ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (parts
  ``text``, ``tool_call`` with *decoded* ``arguments``, ``tool_call_response``; the system
  message stays in the input list) plus ``gen_ai.tool.definitions``;
* ``use_attributes=False`` with a logger provider: nothing on the span but usage; one log
  record per message, ``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice``.
  Unlike semconv (and openai-v2), the ``gen_ai.choice`` body holds ``tool_calls`` *beside*
  ``message`` rather than inside it, and the ``gen_ai.tool.message`` body has no ``id``.
* ``TRACELOOP_TRACE_CONTENT=false``: no messages on the span; in events mode the log
  records are still emitted, stripped of ``content`` and tool ``arguments``; usage stays.

Findings pinned here: (1) with the instrumentation alone, only the scope
(``…openai.v1``) tells its spans from openai-v2's, so the content-capture hint has to
come from the scope (``conventions/traceloop.py``); (2) in events mode ``gen_ai.choice``
carries ``tool_calls`` beside ``message``, not inside it (``genai_events.legacy_message``
reads both); (3) ``uninstrument()`` unwraps nothing (see the ``instrument`` fixture);
(4) a streamed call's ``gen_ai.choice`` records are emitted in the caller's context (the
agent span), not the call's: each belongs to the call running when it was emitted
(``trace_tree``). Every full-trajectory case also runs streamed.
``Config`` of the instrumentation is process-wide class state: each test restores it.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import openai
import pytest
import wrapt
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionMessageToolCall
from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.openai.shared.config import Config
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import Span, SpanProcessor, TracerProvider
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

with warnings.catch_warnings():
    # 0.62.4's responses_wrappers declares a pydantic model with a class-based ``Config``.
    warnings.simplefilter("ignore", DeprecationWarning)
    from opentelemetry.instrumentation.openai import v1 as openai_v1

ENV_CONTENT = "TRACELOOP_TRACE_CONTENT"
ASSOCIATION = "traceloop.association.properties"
SCOPE = "opentelemetry.instrumentation.openai.v1"

AGENT = "weather_agent"
SESSION = "sess-42"


# --- traceloop-sdk 0.62.4, by hand ------------------------------------------------------


class TraceloopOnStart(SpanProcessor):
    """traceloop-sdk's ``default_span_processor_on_start``: context values → attributes."""

    def on_start(self, span: Span, parent_context: context_api.Context | None = None) -> None:
        agent = context_api.get_value("agent_name")
        if agent is not None:
            span.set_attribute("gen_ai.agent.name", str(agent))
        props = context_api.get_value("association_properties")
        if isinstance(props, dict):
            for key, value in props.items():
                span.set_attribute(f"{ASSOCIATION}.{key}", value)


def send_content() -> bool:
    """The decorators' ``_should_send_prompts`` (env only: no override in these tests)."""
    return (os.getenv(ENV_CONTENT) or "true").lower() == "true"


@contextmanager
def set_association_properties(props: dict[str, str]) -> Iterator[None]:
    token = context_api.attach(context_api.set_value("association_properties", props))
    try:
        yield
    finally:
        context_api.detach(token)


class Entity:
    """The open span of a decorated call; ``output()`` records the return value."""

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def output(self, value: Any) -> Any:
        if send_content():
            self.span.set_attribute("traceloop.entity.output", json.dumps(value))
        return value


@contextmanager
def entity(
    tracer: trace.Tracer, name: str, kind: str, args: list[Any], kwargs: dict[str, Any]
) -> Iterator[Entity]:
    """``entity_method``: ``_setup_span`` + ``_handle_span_input`` ... ``_cleanup_span``."""
    name_token = (
        context_api.attach(context_api.set_value("agent_name", name)) if kind == "agent" else None
    )
    span = tracer.start_span(f"{name}.{kind}")
    ctx_token = context_api.attach(trace.set_span_in_context(span))
    span.set_attribute("traceloop.span.kind", kind)
    span.set_attribute("traceloop.entity.name", name)
    if kind == "tool":
        span.set_attribute("gen_ai.tool.name", name)
    if send_content():
        span.set_attribute("traceloop.entity.input", json.dumps({"args": args, "kwargs": kwargs}))
    try:
        yield Entity(span)
    finally:
        span.end()
        context_api.detach(ctx_token)
        if name_token is not None:
            context_api.detach(name_token)


# --- the run --------------------------------------------------------------------------


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
        return [s for s in self.spans if s.name == "openai.chat"]

    def logs_of(self, span: Any) -> list[Any]:
        return [r.log_record for r in self.logs if r.log_record.span_id == span.context.span_id]

    def log_names(self, span: Any) -> list[str | None]:
        return [r.event_name for r in self.logs_of(span)]


@pytest.fixture
def instrument(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Call with (content, use_attributes) to instrument openai on local providers.

    0.62.4's ``uninstrument()`` is a no-op: it calls ``unwrap("openai.resources.chat.completions",
    "Completions.create")``, which ``opentelemetry.instrumentation.utils.unwrap`` reads as
    attribute ``"Completions.create"`` of module ``openai.resources.chat.completions``, finds
    nothing and returns. Wrappers would pile up (one more per test, each emitting its own
    events) and leak into the openai-v2 tests. So every ``wrap_function_wrapper`` of the
    instrumentation goes through ``monkeypatch``, which puts the original back at teardown.
    """
    for name in ("use_legacy_attributes", "event_logger"):
        monkeypatch.setattr(Config, name, getattr(Config, name))  # restored at teardown

    def wrap_undone_at_teardown(module: str, name: str, wrapper: Any) -> Any:
        parent, attribute, original = wrapt.resolve_path(module, name)
        monkeypatch.setattr(parent, attribute, original)  # registers the restore
        return wrapt.wrap_function_wrapper(module, name, wrapper)

    monkeypatch.setattr(openai_v1, "wrap_function_wrapper", wrap_undone_at_teardown)
    original_create = vars(openai.resources.chat.completions.Completions)["create"]
    state: dict[str, Any] = {}

    def start(*, content: str | None, use_attributes: bool) -> tuple[TracerProvider, Any, Any]:
        if content is None:
            monkeypatch.delenv(ENV_CONTENT, raising=False)
        else:
            monkeypatch.setenv(ENV_CONTENT, content)
        span_exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(TraceloopOnStart())
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
        log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        instrumentor = OpenAIInstrumentor(use_attributes=use_attributes)
        assert not instrumentor.is_instrumented_by_opentelemetry
        instrumentor.instrument(
            tracer_provider=tracer_provider,
            logger_provider=logger_provider,
            meter_provider=meter_provider,
        )
        state.update(instrumentor=instrumentor, meter_provider=meter_provider)
        return tracer_provider, span_exporter, log_exporter

    yield start
    instrumentor = state.get("instrumentor")
    if instrumentor is not None:
        instrumentor.uninstrument()  # resets the instrumentor's flag; unwraps nothing
        assert not instrumentor.is_instrumented_by_opentelemetry
        state["meter_provider"].shutdown()
    monkeypatch.undo()
    assert vars(openai.resources.chat.completions.Completions)["create"] is original_create


def run_agent(
    instrument: Any,
    *,
    content: str | None,
    use_attributes: bool = True,
    decorated: bool = True,
    stream: bool = False,
) -> Captured:
    """Instrument, then play one agent turn against the fake server.

    ``decorated=False``: the instrumentation alone (no agent/tool spans, no session).
    ``stream``: both model calls streamed (``fake_openai.chat_completion``).
    """
    tracer_provider, span_exporter, log_exporter = instrument(
        content=content, use_attributes=use_attributes
    )
    tracer = tracer_provider.get_tracer("traceloop.tracer")

    @contextmanager
    def maybe(name: str, kind: str, args: list[Any], kwargs: dict[str, Any]) -> Iterator[Any]:
        if not decorated:
            yield None
            return
        with entity(tracer, name, kind, args, kwargs) as ent:
            yield ent

    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
    ]
    session = {"session_id": SESSION} if decorated else {}
    # Without decorators a plain parent span stands in for the application's request span.
    with (
        FakeOpenAI(script()) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0) as client,
        set_association_properties(session),
        (
            entity(tracer, AGENT, "agent", [USER], {})
            if decorated
            else tracer.start_as_current_span("handle_request")
        ) as agent,
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
            kwargs = json.loads(call.function.arguments)
            with maybe(call.function.name, "tool", [], kwargs) as tool:
                result = get_weather(**kwargs)
                if tool is not None:
                    tool.output(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        second = chat_completion(client, stream=stream, model=MODEL, messages=messages, tools=TOOLS)
        answer = second.choices[0].message.content
        assert answer == FINAL
        if decorated:
            agent.output(answer)
        requests = list(server.requests)
    return Captured(
        spans=list(span_exporter.get_finished_spans()),
        logs=list(log_exporter.get_finished_logs()),
        requests=requests,
    )


def assert_full_trajectory(inv: Invocation, tool_span: Any) -> None:
    assert inv.status == "ok", inv.reason
    assert inv.reason_code is None
    assert inv.agent == AGENT
    assert inv.agents == (AGENT,)
    assert inv.conversation_id == SESSION
    assert inv.user_content == USER
    assert [(c.name, c.args, c.id, c.result, c.error) for c in inv.tool_calls] == [
        ("get_weather", {"city": "Paris"}, CALL_ID, get_weather("Paris"), None)
    ]
    # Joined to the hand-made ``get_weather.tool`` span.
    assert inv.tool_calls[0].span_id == format(tool_span.context.span_id, "016x")
    assert inv.tool_calls[0].agent == AGENT
    assert inv.intermediate_responses == (AgentText(author=AGENT, text=THINKING),)
    assert inv.final_response == FINAL
    assert inv.usage == TokenUsage(input_tokens=50 + 80, output_tokens=12 + 9)
    assert inv.inference_calls == 2
    assert inv.warnings == ()


def tool_span(captured: Captured) -> Any:
    (span,) = [s for s in captured.spans if s.name == "get_weather.tool"]
    return span


ATTRS_PROVENANCE = {
    "user_content": "gen_ai.input.messages",
    "responses": "gen_ai.output.messages",
    "tool_calls": "gen_ai.output.messages",
    "tool_definitions": "gen_ai.tool.definitions",
    "conversation_id": f"{ASSOCIATION}.session_id",
}


@pytest.mark.parametrize(
    ("content", "use_attributes", "provenance", "system"),
    [
        pytest.param("true", True, ATTRS_PROVENANCE, None, id="attributes-content-true"),
        # TRACELOOP_TRACE_CONTENT defaults to true.
        pytest.param(None, True, ATTRS_PROVENANCE, None, id="attributes-content-unset"),
        pytest.param(
            "true",
            False,
            {
                "user_content": "log:gen_ai.*.message",
                "responses": "log:gen_ai.choice",
                "tool_calls": "log:gen_ai.choice",
                "system_instructions": "log:gen_ai.system.message",
                "conversation_id": f"{ASSOCIATION}.session_id",
            },
            SYSTEM,
            id="events",
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_real_openllmetry_full_trajectory(
    instrument: Any,
    stream: bool,
    content: str | None,
    use_attributes: bool,
    provenance: dict[str, str],
    system: str | None,
) -> None:
    captured = run_agent(instrument, content=content, use_attributes=use_attributes, stream=stream)

    # The fake server saw the real loop: chat 2 carries the tool result for the model's id.
    assert len(captured.requests) == 2
    assert captured.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": CALL_ID,
        "content": get_weather("Paris"),
    }

    inv = captured.invocation()
    assert_full_trajectory(inv, tool_span(captured))
    assert inv.provenance == provenance
    # The system message stays inside gen_ai.input.messages (no gen_ai.system_instructions).
    assert inv.system_instructions == system
    if use_attributes:
        assert inv.tool_definitions == [
            {"type": "function", **TOOLS[0]["function"]}  # flattened, OTel style
        ]


def test_attribute_mode_emits_genai_json_not_indexed_keys(instrument: Any) -> None:
    """0.62.4 writes GenAI ≥1.37 JSON messages; the indexed ``gen_ai.prompt.N.*`` are gone."""
    captured = run_agent(instrument, content="true")
    assert captured.logs == []
    chat1, chat2 = captured.chat_spans()
    for chat in (chat1, chat2):
        assert chat.instrumentation_scope.name == SCOPE
        assert chat.status.status_code is trace.StatusCode.UNSET
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.agent.name"] == AGENT
        assert chat.attributes[f"{ASSOCIATION}.session_id"] == SESSION
        assert "llm.request.type" not in chat.attributes
        assert not [
            k for k in chat.attributes if k.startswith(("gen_ai.prompt.", "gen_ai.completion."))
        ]
    assert json.loads(chat1.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"content": THINKING, "type": "text"},
                # arguments decoded into an object, not the JSON string OpenAI returned
                {
                    "type": "tool_call",
                    "name": "get_weather",
                    "id": CALL_ID,
                    "arguments": {"city": "Paris"},
                },
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert json.loads(chat2.attributes["gen_ai.input.messages"])[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": CALL_ID, "response": get_weather("Paris")}],
    }
    assert chat2.attributes["gen_ai.usage.input_tokens"] == 80
    assert chat2.attributes["gen_ai.usage.output_tokens"] == 9

    agent = next(s for s in captured.spans if s.name == f"{AGENT}.agent")
    assert agent.parent is None
    assert {c.parent.span_id for c in (chat1, chat2, tool_span(captured))} == {
        agent.context.span_id
    }
    assert json.loads(agent.attributes["traceloop.entity.input"]) == {"args": [USER], "kwargs": {}}
    assert dict(tool_span(captured).attributes) == {
        "gen_ai.agent.name": AGENT,
        f"{ASSOCIATION}.session_id": SESSION,
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "get_weather",
        "gen_ai.tool.name": "get_weather",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"city": "Paris"}}),
        "traceloop.entity.output": json.dumps(get_weather("Paris")),
    }


def test_events_mode(instrument: Any) -> None:
    """``use_attributes=False``: per-message log records, in OpenLLMetry's own body shapes."""
    captured = run_agent(instrument, content="true", use_attributes=False)
    chat1, chat2 = captured.chat_spans()
    assert "gen_ai.input.messages" not in chat1.attributes
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
    bodies = {r.log_record.event_name: r.log_record.body for r in captured.logs[:3]}
    # Not semconv's {"message": {"content", "tool_calls"}}: tool_calls sit beside message.
    assert bodies["gen_ai.choice"] == {
        "index": 0,
        "message": {"content": THINKING},
        "finish_reason": "tool_calls",
        "tool_calls": [
            {
                "id": CALL_ID,
                "function": {"arguments": json.dumps({"city": "Paris"}), "name": "get_weather"},
                "type": "function",
            }
        ],
    }
    tool_msg = next(
        r.log_record for r in captured.logs if r.log_record.event_name == "gen_ai.tool.message"
    )
    assert tool_msg.body == {"content": get_weather("Paris")}  # no id

    # What the product recovers from the events: the whole trajectory.
    inv = captured.invocation()
    assert inv.status == "ok", inv.reason
    assert inv.user_content == USER
    assert inv.final_response == FINAL
    assert inv.intermediate_responses == (AgentText(author=AGENT, text=THINKING),)
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [
        ("get_weather", {"city": "Paris"}, get_weather("Paris"))
    ]
    assert inv.usage == TokenUsage(input_tokens=130, output_tokens=21)
    assert inv.conversation_id == SESSION


def test_events_mode_streamed_choices_land_on_the_callers_span(instrument: Any) -> None:
    """Streamed, each call's ``gen_ai.choice`` is emitted where the stream was read.

    The stream wrapper emits the choices in the current context (the agent's span, not
    the call's) just before it ends the call's span: the call then holds its input
    only. Each choice is the reply of the one call running when it was emitted.
    """
    captured = run_agent(instrument, content="true", use_attributes=False, stream=True)
    chat1, chat2 = captured.chat_spans()
    [agent] = [s for s in captured.spans if s.name == f"{AGENT}.agent"]
    assert "gen_ai.choice" not in captured.log_names(chat1) + captured.log_names(chat2)
    assert captured.log_names(agent) == ["gen_ai.choice", "gen_ai.choice"]
    for chat, choice in zip((chat1, chat2), captured.logs_of(agent), strict=True):
        assert chat.start_time <= (choice.timestamp or choice.observed_timestamp) <= chat.end_time
    inv = captured.invocation()
    assert (inv.intermediate_responses, inv.final_response) == (
        (AgentText(author=AGENT, text=THINKING),),
        FINAL,
    )
    assert inv.provenance["responses"] == "log:gen_ai.choice"


def keys_in(value: Any) -> set[str]:
    """Every mapping key anywhere in a nested JSON-like value."""
    if isinstance(value, dict):
        return set(value).union(*(keys_in(v) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return set().union(*(keys_in(v) for v in value))
    return set()


@pytest.mark.parametrize(
    ("use_attributes", "decorated"),
    [
        pytest.param(True, True, id="attributes-decorated"),
        pytest.param(False, True, id="events-decorated"),
        # The instrumentation alone: only the scope says the span is OpenLLMetry's.
        pytest.param(True, False, id="attributes-instrumentation-only"),
    ],
)
def test_content_capture_off_is_not_evaluable(
    instrument: Any, use_attributes: bool, decorated: bool
) -> None:
    captured = run_agent(
        instrument, content="false", use_attributes=use_attributes, decorated=decorated
    )
    # Events mode still emits its log records, stripped of content and tool arguments.
    assert len(captured.logs) == (0 if use_attributes else 8)
    assert not {"content", "arguments"} & keys_in([r.log_record.body for r in captured.logs])
    assert len(captured.chat_spans()) == 2
    for span in captured.spans:
        assert not {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "traceloop.entity.input",
            "traceloop.entity.output",
        } & set(span.attributes)
    inv = captured.invocation()
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert ENV_CONTENT in (inv.reason or "")
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" not in (inv.reason or "")
    assert inv.user_content is None
    assert inv.final_response is None
    assert inv.intermediate_responses == ()
    # Structure without content survives: the tool span (when there is one) and the usage.
    expected = [("get_weather", None, None, None)] if decorated else []
    assert [(c.name, c.id, c.args, c.result) for c in inv.tool_calls] == expected
    assert inv.usage == TokenUsage(input_tokens=130, output_tokens=21)
    assert inv.inference_calls == 2
    assert inv.conversation_id == (SESSION if decorated else None)
