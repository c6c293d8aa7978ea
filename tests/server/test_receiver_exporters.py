"""The real OpenTelemetry OTLP exporters (HTTP and gRPC, traces and logs) against the receiver.

Spans and logs come from the real SDK (``otlp_helpers``); what the intake receives must be
exactly what the SDK recorded, converted the way the in-process SDK adapter converts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import grpc  # type: ignore[import-untyped]  # no stubs (as in src/tracescore/server/grpc.py)
import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_helpers import agent_logs, agent_spans
from server_helpers import ListIntake, ServerThread, sample

from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.spans import LogRecord, Origin, SpanRecord

TOKEN = "s3cret-token"
HTTP = Origin("otlp-http")
GRPC = Origin("otlp-grpc")


@pytest.fixture(scope="module")
def spans() -> list[ReadableSpan]:
    return agent_spans(2)


@pytest.fixture(scope="module")
def logs() -> list[ReadableLogRecord]:
    return agent_logs()


def expected_spans(spans: Sequence[ReadableSpan], origin: Origin) -> list[SpanRecord]:
    return by_id([dataclasses.replace(from_readable_span(span), origin=origin) for span in spans])


def by_id(records: Sequence[SpanRecord]) -> list[SpanRecord]:
    """Exporters group spans by resource and scope, so the order on the wire differs."""
    return sorted(records, key=lambda record: (record.trace_id, record.span_id))


def expected_logs(logs: Sequence[ReadableLogRecord], origin: Origin) -> list[LogRecord]:
    return [dataclasses.replace(from_sdk_log(record), origin=origin) for record in logs]


def http_spans(server: ServerThread, **kwargs: object) -> HttpSpans:
    return HttpSpans(endpoint=f"{server.http_url}/v1/traces", timeout=10, **kwargs)  # type: ignore[arg-type]


def grpc_spans(server: ServerThread, **kwargs: object) -> GrpcSpans:
    return GrpcSpans(endpoint=server.grpc_target, insecure=True, timeout=10, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("compression", [None, Compression.Gzip], ids=["plain", "gzip"])
def test_http_span_exporter_delivers_exactly_the_sdk_spans(
    server: ServerThread,
    intake: ListIntake,
    spans: list[ReadableSpan],
    compression: Compression | None,
) -> None:
    exporter = http_spans(server, compression=compression)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # OTLP/HTTP exporter: unannotated
    assert by_id(intake.spans) == expected_spans(spans, HTTP)
    assert {span.resource["service.name"] for span in intake.spans} == {"weather-agent"}
    assert intake.logs == []
    registry = server.registry
    assert (
        sample(
            registry,
            "tracescore_receiver_requests_total",
            transport="http",
            signal="traces",
            code="200",
        )
        == 1
    )
    assert (
        sample(
            registry, "tracescore_receiver_request_bytes_total", transport="http", signal="traces"
        )
        > 0
    )
    assert sample(
        registry,
        "tracescore_receiver_records_total",
        transport="http",
        signal="traces",
        outcome="accepted",
    ) == len(spans)


@pytest.mark.parametrize("compression", [None, grpc.Compression.Gzip], ids=["plain", "gzip"])
def test_grpc_span_exporter_delivers_exactly_the_sdk_spans(
    server: ServerThread,
    intake: ListIntake,
    spans: list[ReadableSpan],
    compression: grpc.Compression | None,
) -> None:
    exporter = grpc_spans(server, compression=compression)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert by_id(intake.spans) == expected_spans(spans, GRPC)
    assert (
        sample(
            server.registry,
            "tracescore_receiver_requests_total",
            transport="grpc",
            signal="traces",
            code="OK",
        )
        == 1
    )


def test_http_log_exporter_delivers_exactly_the_sdk_logs(
    server: ServerThread, intake: ListIntake, logs: list[ReadableLogRecord]
) -> None:
    exporter = HttpLogs(endpoint=f"{server.http_url}/v1/logs", timeout=10)
    try:
        assert exporter.export(logs) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # OTLP/HTTP exporter: unannotated
    assert intake.logs == expected_logs(logs, HTTP)
    assert [log.name for log in intake.logs] == ["gen_ai.user.message", "gen_ai.choice", None]
    assert intake.spans == []


def test_grpc_log_exporter_delivers_exactly_the_sdk_logs(
    server: ServerThread, intake: ListIntake, logs: list[ReadableLogRecord]
) -> None:
    exporter = GrpcLogs(endpoint=server.grpc_target, insecure=True, timeout=10)
    try:
        assert exporter.export(logs) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert intake.logs == expected_logs(logs, GRPC)
    assert (
        sample(
            server.registry,
            "tracescore_receiver_requests_total",
            transport="grpc",
            signal="logs",
            code="OK",
        )
        == 1
    )


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_bearer_token_is_required_and_accepted(
    start_server: Callable[..., ServerThread],
    intake: ListIntake,
    spans: list[ReadableSpan],
    transport: str,
) -> None:
    server = start_server(auth_token=TOKEN)
    make = http_spans if transport == "http" else grpc_spans
    denied_code = "401" if transport == "http" else "UNAUTHENTICATED"

    anonymous = make(server)
    wrong = make(server, headers={"authorization": "Bearer not-the-token"})
    good = make(server, headers={"authorization": f"Bearer {TOKEN}"})
    try:
        assert anonymous.export(spans) is SpanExportResult.FAILURE
        assert wrong.export(spans) is SpanExportResult.FAILURE
        assert intake.spans == []
        assert intake.offers == 0
        assert good.export(spans) is SpanExportResult.SUCCESS
    finally:
        for exporter in (anonymous, wrong, good):
            exporter.shutdown()

    origin = HTTP if transport == "http" else GRPC
    assert by_id(intake.spans) == expected_spans(spans, origin)
    counter = "tracescore_receiver_requests_total"
    labels = {"transport": transport, "signal": "traces"}
    assert sample(server.registry, counter, code=denied_code, **labels) == 2
    assert (
        sample(server.registry, counter, code="200" if transport == "http" else "OK", **labels) == 1
    )
