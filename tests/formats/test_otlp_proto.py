from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import SEVERITY_NUMBER_INFO, ResourceLogs, ScopeLogs
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord as PBLogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from tracescore.formats.otlp_proto import (
    decode_logs_request,
    decode_proto_message,
    decode_trace_request,
    detect_signal,
    parse_message,
)
from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.spans import Origin, SpanRecord

ORIGIN = Origin("traces.binpb", 3)


def _without_origin(records: Iterable[SpanRecord]) -> list[SpanRecord]:
    return sorted(
        (dataclasses.replace(record, origin=None) for record in records),
        key=lambda record: record.span_id or "",
    )


def test_trace_request_round_trip(sdk_spans: list[ReadableSpan]) -> None:
    batch = decode_trace_request(encode_spans(sdk_spans), origin=ORIGIN)
    assert batch.errors == []
    assert all(record.origin == ORIGIN for record in batch.spans)
    expected = [from_readable_span(s) for s in sdk_spans]
    assert _without_origin(batch.spans) == _without_origin(expected)


def test_logs_request_round_trip(sdk_logs: list[ReadableLogRecord]) -> None:
    batch = decode_logs_request(encode_logs(sdk_logs), origin=ORIGIN)
    assert batch.errors == []
    assert [dataclasses.replace(r, origin=None) for r in batch.logs] == [
        from_sdk_log(r) for r in sdk_logs
    ]


def test_serialized_messages_are_detected(
    sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord]
) -> None:
    traces = encode_spans(sdk_spans).SerializeToString()
    logs = encode_logs(sdk_logs).SerializeToString()
    assert detect_signal(traces) == "traces"
    assert detect_signal(logs) == "logs"
    assert len(decode_proto_message(traces, origin=ORIGIN).spans) == len(sdk_spans)
    assert len(decode_proto_message(logs, origin=ORIGIN).logs) == len(sdk_logs)
    assert len(decode_proto_message(logs, origin=ORIGIN, signal="logs").logs) == len(sdk_logs)


def _logs_request(*records: PBLogRecord) -> bytes:
    request = ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=list(records))])]
    )
    data: bytes = request.SerializeToString()
    return data


def _trace_request(*spans: Span) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])]
    )


@pytest.mark.parametrize(
    "record",
    [
        PBLogRecord(time_unix_nano=5),  # field 1 is fixed64 in a log record, bytes in a span
        PBLogRecord(observed_time_unix_nano=5),
        PBLogRecord(severity_number=SEVERITY_NUMBER_INFO),  # 9
        PBLogRecord(span_id=b"\x01" * 8),
        PBLogRecord(severity_text="INFO", event_name="e"),  # fits both: no span ids, so logs
    ],
)
def test_log_records_are_told_from_spans_by_their_fields(record: PBLogRecord) -> None:
    data = _logs_request(record)
    assert detect_signal(data) == "logs"
    assert len(decode_proto_message(data, origin=ORIGIN).logs) == 1


def test_a_span_without_ids_is_a_located_error_whatever_the_guess() -> None:
    data = _trace_request(Span(name="x")).SerializeToString()
    batch = decode_proto_message(data, origin=ORIGIN, signal="traces")
    [error] = batch.errors
    assert "invalid span_id" in error.detail


def test_empty_and_malformed_messages() -> None:
    assert detect_signal(b"") is None
    assert decode_proto_message(b"", origin=ORIGIN).errors == []
    empty = ExportTraceServiceRequest(resource_spans=[ResourceSpans()]).SerializeToString()
    assert detect_signal(empty) is None
    for garbage in (b"\xff\xff\xff", b"\x0a\x10abc", b"\x0f"):
        batch = decode_proto_message(garbage, origin=ORIGIN)
        [error] = batch.errors
        assert (error.path, error.line) == ("traces.binpb", 3)
        assert "bad protobuf" in error.detail
    batch = decode_proto_message(b"\x0a\x10abc", origin=ORIGIN, signal="traces")
    assert "bad protobuf traces request" in batch.errors[0].detail


def test_bad_spans_and_log_ids_cost_only_themselves() -> None:
    good = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, parent_span_id=b"\x00" * 8, name="ok")
    request = _trace_request(
        good,
        Span(trace_id=b"\x01" * 15, span_id=b"\x03" * 8, name="short trace id"),
        Span(trace_id=b"\x01" * 16, span_id=b"\x00" * 8, name="zero span id"),
        Span(trace_id=b"\x01" * 16, span_id=b"\x04" * 8, parent_span_id=b"\x05", name="parent"),
        Span(trace_id=b"\x01" * 16, span_id=b"\x06" * 8, kind=9, name="kind"),  # type: ignore[arg-type]
    )
    batch = decode_trace_request(request, origin=ORIGIN)
    [span] = batch.spans
    assert (span.name, span.parent_span_id, span.trace_id) == ("ok", None, "01" * 16)
    short, zero, parent, kind = batch.errors
    assert (short.span_id, zero.span_id, parent.span_id, kind.span_id) == (
        "03" * 8, None, "04" * 8, "06" * 8,
    )  # fmt: skip
    assert "resource_spans[0].scope_spans[0].spans[1]: invalid trace_id" in short.detail
    assert "invalid kind 9" in kind.detail
    logs = ExportLogsServiceRequest(
        resource_logs=[
            ResourceLogs(
                scope_logs=[
                    ScopeLogs(
                        log_records=[
                            PBLogRecord(trace_id=b"\x01" * 3),
                            PBLogRecord(trace_id=b"\x00" * 16, span_id=b"\x00" * 8),
                        ]
                    )
                ]
            )
        ]
    )
    batch = decode_logs_request(logs, origin=ORIGIN)
    [record] = batch.logs
    assert (record.trace_id, record.span_id, record.body) == (None, None, None)
    [error] = batch.errors
    assert "log_records[0]: invalid trace_id" in error.detail


# -- invalid UTF-8 in string fields ------------------------------------------------------------

MARK = "MARK"
BAD = b"M\xffRK"  # what a C++, Go or Rust agent may put in a string; the Collector passes it on
READ = "M\ufffdRK"


def _marked_traces(sdk_spans: list[ReadableSpan], mark: str) -> ExportTraceServiceRequest:
    """The spans' request with ``mark`` in a resource attribute, the scope name, a span
    name, an event name and a string four levels down an attribute's AnyValue."""
    request = encode_spans(sdk_spans)
    block = request.resource_spans[0]
    block.resource.attributes.add(key="host", value={"string_value": f"{mark}-host"})
    scope_block = block.scope_spans[-1]
    scope_block.scope.name = f"{mark}-scope"
    span = scope_block.spans[-1]
    span.name = f"{mark}-span"
    span.events.add(name=f"{mark}-event", time_unix_nano=1)
    deep = {"kvlist_value": {"values": [{"key": "k", "value": {"array_value": {"values": [
        {"string_value": f"{mark}-deep"}]}}}]}}  # fmt: skip
    span.attributes.add(key=f"{mark}-key", value=deep)
    return request


def test_invalid_utf8_in_strings_reads_as_replacement_characters(
    sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord]
) -> None:
    # protobuf's Python runtime refuses the whole message for one such string, so one span
    # cost a whole batch; the OTLP spec recommends U+FFFD for each bad sequence.
    data = _marked_traces(sdk_spans, MARK).SerializeToString().replace(MARK.encode(), BAD)
    assert data.count(BAD) == 6
    with pytest.raises(DecodeError):
        ExportTraceServiceRequest.FromString(data)
    batch = decode_proto_message(data, origin=ORIGIN)
    assert batch.errors == []
    expected = decode_trace_request(_marked_traces(sdk_spans, READ), origin=ORIGIN)
    assert batch.spans == expected.spans
    [span] = [s for s in batch.spans if s.name == f"{READ}-span"]
    assert span.attributes[f"{READ}-key"] == {"k": [f"{READ}-deep"]}
    assert (span.scope, span.resource["host"]) == (f"{READ}-scope", f"{READ}-host")

    logs = encode_logs(sdk_logs)
    logs.resource_logs[0].scope_logs[0].log_records[0].body.string_value = "cut-XY"
    data = logs.SerializeToString().replace(b"cut-XY", b"cut-\xc3Y")  # a cut sequence
    assert decode_proto_message(data, origin=ORIGIN).logs[0].body == "cut-\ufffdY"


def test_invalid_utf8_does_not_hide_other_damage(sdk_spans: list[ReadableSpan]) -> None:
    data = _marked_traces(sdk_spans, MARK).SerializeToString().replace(MARK.encode(), BAD)
    for damaged in (data[:-3], data + b"\x0a\x05\x12", data + b"\x0b"):  # cut; open; a group
        [error] = decode_proto_message(damaged, origin=ORIGIN, signal="traces").errors
        assert "bad protobuf traces request" in error.detail


@given(st.binary(max_size=200), st.sampled_from([b"", b"\xff", b"\xc3", b"\xed\xa0\x80"]))
def test_any_bytes_parse_or_fail_with_the_parsers_error(data: bytes, junk: bytes) -> None:
    for raw in (data, data + junk, junk + data):
        message = ExportTraceServiceRequest()
        try:
            parse_message(message, raw)
        except (DecodeError, RecursionError, ValueError):
            continue
        message.SerializeToString()  # what parsed holds valid strings only
