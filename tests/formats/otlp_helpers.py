"""Real OTel telemetry for tests: SDK spans and logs, encoded the way exporters write them.

Spans and logs come from the real SDK (TracerProvider / LoggerProvider with in-memory
exporters) and are encoded with the real OTLP exporter encoders. OTLP JSON is produced
the way the Collector's JSON marshaler writes it: protobuf's canonical JSON mapping
(camelCase keys, 64-bit integers as strings, integer enums), except that trace and span
ids are hex instead of base64.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})

RESOURCE = Resource.create(
    {"service.name": "weather-agent", "deployment.environment": "test", "host.cpus": 8}
)


def make_tracer_provider(
    resource: Resource = RESOURCE,
) -> tuple[TracerProvider, InMemorySpanExporter]:
    provider = TracerProvider(resource=resource)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def record_agent_run(provider: TracerProvider, *, turn: int = 0, tools: int = 2) -> None:
    """One agent invocation: an agent span with LLM and tool children, many value types."""
    agent = provider.get_tracer("tracescore.tests.agent", "1.0")
    llm = provider.get_tracer("openinference.instrumentation.test")
    with agent.start_as_current_span(
        "invoke_agent weather_agent",
        kind=SpanKind.SERVER,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather_agent",
            "gen_ai.conversation.id": f"session-{turn // 3}",
            "turn": turn,
            "sample.rate": 0.25,
            "streaming": False,
            "tags": ["prod", "eu"],
            "retries": [1, 2, 3],
            "weights": [0.5, 1.5],
            "flags": [True, False],
        },
    ):
        with llm.start_as_current_span(
            "chat gemini-2.0-flash",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gemini-2.0-flash",
                "gen_ai.usage.input_tokens": 1200 + turn,
                "gen_ai.usage.output_tokens": 87,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]}]
                ),
            },
        ) as chat:
            chat.add_event("gen_ai.content.prompt", {"gen_ai.prompt": "Weather in Oslo?"})
        for index in range(tools):
            with agent.start_as_current_span(
                f"execute_tool get_weather_{index}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": f"get_weather_{index}",
                    "gen_ai.tool.call.id": f"call-{turn}-{index}",
                    "gen_ai.tool.call.arguments": '{"city": "Oslo"}',
                },
            ) as tool:
                if index == tools - 1:
                    tool.record_exception(RuntimeError("upstream timeout"))
                    tool.set_status(Status(StatusCode.ERROR, "upstream timeout"))
                else:
                    tool.set_status(Status(StatusCode.OK))


def agent_spans(runs: int = 1, *, tools: int = 2) -> list[ReadableSpan]:
    provider, exporter = make_tracer_provider()
    for turn in range(runs):
        record_agent_run(provider, turn=turn, tools=tools)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def agent_logs() -> list[ReadableLogRecord]:
    """GenAI content events as log records: two inside a span, one outside any span."""
    provider = LoggerProvider(resource=RESOURCE)
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("tracescore.tests.events", "1.0")
    tracer_provider, _ = make_tracer_provider()
    tracer = tracer_provider.get_tracer("tracescore.tests.agent")
    with tracer.start_as_current_span("chat gemini-2.0-flash"):
        logger.emit(
            event_name="gen_ai.user.message",
            body={"content": "Weather in Oslo?", "parts": [{"type": "text", "n": 1}]},
            attributes={"gen_ai.system": "gemini", "turn": 3},
            severity_text="INFO",
        )
        logger.emit(
            event_name="gen_ai.choice",
            body={"index": 0, "finish_reason": "stop", "message": {"content": "Sunny, 21C"}},
            attributes={"gen_ai.system": "gemini", "raw": b"\x00\x01\xff"},
        )
    logger.emit(body="outside any span", severity_text="WARN")
    provider.shutdown()
    return list(exporter.get_finished_logs())


def hex_ids(value: Any) -> Any:
    """A MessageToDict result with its base64 trace/span ids rewritten as hex, in place."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                value[key] = base64.b64decode(item).hex()
            else:
                hex_ids(item)
    elif isinstance(value, list):
        for item in value:
            hex_ids(item)
    return value


def span_doc(**span: Any) -> dict[str, Any]:
    """An OTLP JSON document of one span: a minimal valid one, with ``span``'s fields set."""
    base = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "09acc3d9233945f0",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000000000001",
    }  # what the fast path takes: the Collector always writes both times
    return {"resourceSpans": [{"scopeSpans": [{"spans": [{**base, **span}]}]}]}


def to_collector_json(message: Message, *, snake: bool = False) -> dict[str, Any]:
    """An OTLP export request as the Collector's JSON marshaler writes it (as a dict)."""
    doc = MessageToDict(message, use_integers_for_enums=True, preserving_proto_field_name=snake)
    collector: dict[str, Any] = hex_ids(doc)
    return collector


def to_tempo_json(message: Message) -> dict[str, Any]:
    """A trace export request as Tempo's v1 API returns it: ``batches``, the deprecated
    ``instrumentationLibrarySpans``/``instrumentationLibrary`` keys, base64 ids, enum names."""
    doc = MessageToDict(message)
    for block in doc.get("resourceSpans", []):
        for scope_spans in block.get("scopeSpans", []):
            if "scope" in scope_spans:
                scope_spans["instrumentationLibrary"] = scope_spans.pop("scope")
        block["instrumentationLibrarySpans"] = block.pop("scopeSpans", [])
    return {"batches": doc.get("resourceSpans", [])}


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def spans_to_otlp_json_lines(
    spans: Sequence[ReadableSpan], batch_size: int = 100, *, snake: bool = False
) -> list[str]:
    """One Collector-style JSON line (no newline) per ``batch_size`` spans."""
    return [
        json.dumps(to_collector_json(encode_spans(chunk), snake=snake), separators=(",", ":"))
        for chunk in _chunks(spans, batch_size)
    ]


def logs_to_otlp_json(logs: Sequence[ReadableLogRecord], *, snake: bool = False) -> str:
    """One Collector-style JSON line (no newline) holding all ``logs``."""
    return json.dumps(to_collector_json(encode_logs(logs), snake=snake), separators=(",", ":"))


def length_prefixed(messages: Iterable[bytes]) -> bytes:
    """Messages framed as the Collector file exporter's ``format: proto`` writes them."""
    return b"".join(len(message).to_bytes(4, "big") + message for message in messages)


def spans_to_proto_file_bytes(spans: Sequence[ReadableSpan], batch_size: int = 100) -> bytes:
    return length_prefixed(
        encode_spans(chunk).SerializeToString() for chunk in _chunks(spans, batch_size)
    )


def logs_to_proto_file_bytes(logs: Sequence[ReadableLogRecord], batch_size: int = 100) -> bytes:
    return length_prefixed(
        encode_logs(chunk).SerializeToString() for chunk in _chunks(logs, batch_size)
    )
