"""OTLP protobuf export requests (traces and logs) to records.

Used by the receiver and by length-prefixed protobuf files (the Collector ``file``
exporter with ``format: proto``). Ids become lowercase hex; an empty or all-zero parent
id means a root span, an all-zero trace or span id on a log record means "none". As in
:mod:`tracescore.formats.otlp_json`, a bad span or log record is skipped with one located
:class:`~tracescore.exceptions.TraceFormatError` and its neighbours are kept; nothing
raises for bad input.

Telling traces from logs without being told (:func:`detect_signal`): both requests carry
their resource blocks as field 1 and, one level down, their scope blocks as field 2 and
records as field 2 again, so the outer layers look alike. The records do not: a span
starts with ``trace_id`` (field 1, length-delimited) while a log record's field 1 is
``time_unix_nano`` (fixed64), and most other field numbers differ in wire type too
(span 2 ``span_id`` bytes vs log 2 ``severity_number`` varint, span 10 varint vs log 10
``span_id`` bytes, span 11 ``events`` vs log 11 ``observed_time_unix_nano``, ...). So the
wire format is walked down to the records and each record's fields are checked against
both schemas; the first record that fits exactly one of them decides. A record that fits
both has no span ids (neither field 1 nor field 2 is set) and cannot be a valid span, so
it is read as a log record. Only field tags and lengths are read, and the walk stops at
the first deciding record, which is almost always its first field.

Invalid UTF-8 in string fields (:func:`parse_message`): protobuf's Python runtime
refuses a whole message for one bad string, but the Collector's does not check them and
passes them on, so one span with bytes that are not UTF-8 (from an agent in C++, Go or
Rust) cost the request all its spans. The OTLP specification recommends reading such
strings with U+FFFD for each bad sequence; :func:`parse_message` does that, on a repaired
copy of the bytes, only after the runtime has refused them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Final, Literal

from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped, unused-ignore]
from google.protobuf.message import DecodeError, Message  # type: ignore[import-untyped, unused-ignore]
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracescore.formats.anyvalue import proto_any_value, proto_attributes
from tracescore.formats.base import Batch
from tracescore.formats.otlp_json import located_error
from tracescore.spans import LogRecord, Origin, SpanEvent, SpanRecord

__all__ = [
    "decode_logs_request",
    "decode_proto_message",
    "decode_trace_request",
    "detect_signal",
    "parse_message",
    "well_formed",
]

Signal = Literal["traces", "logs"]

logger = logging.getLogger(__name__)

# Allocating and calling __init__ directly skips the kwargs dict CPython builds when a
# class is called with keyword arguments: same __init__, about half the cost.
_new: Final = object.__new__
_init_span: Final = SpanRecord.__init__
_init_event: Final = SpanEvent.__init__
_init_log: Final = LogRecord.__init__

# field number -> wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32)
_SPAN_WIRE_TYPES: Final = {
    1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 0, 7: 1, 8: 1,
    9: 2, 10: 0, 11: 2, 12: 0, 13: 2, 14: 0, 15: 2, 16: 5,
}  # fmt: skip
_LOG_WIRE_TYPES: Final = {
    1: 1, 2: 0, 3: 2, 5: 2, 6: 2, 7: 0, 8: 5, 9: 2, 10: 2, 11: 1, 12: 2,
}  # fmt: skip


def decode_trace_request(req: ExportTraceServiceRequest, *, origin: Origin | None) -> Batch:
    """The spans of one trace export request; bad spans become located errors."""
    batch = Batch(origin=origin)
    spans = batch.spans
    for block_index, block in enumerate(req.resource_spans):
        resource = proto_attributes(block.resource.attributes)
        for scope_index, scope_spans in enumerate(block.scope_spans):
            scope = scope_spans.scope.name or None
            for index, span in enumerate(scope_spans.spans):
                span_id = span.span_id
                trace_id = span.trace_id
                parent = span.parent_span_id
                status = span.status
                reason = _span_problem(span_id, trace_id, parent, span.kind, status.code)
                if reason is not None:
                    where = f"resource_spans[{block_index}].scope_spans[{scope_index}]"
                    readable = None if reason.startswith("invalid span_id") else span_id.hex()
                    detail = f"{where}.spans[{index}]: {reason}"
                    batch.errors.append(located_error(origin, detail, readable))
                    continue
                record = _new(SpanRecord)
                _init_span(
                    record,
                    trace_id=trace_id.hex(),
                    span_id=span_id.hex(),
                    parent_span_id=parent.hex() if any(parent) else None,
                    name=span.name,
                    kind=span.kind,
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes=proto_attributes(span.attributes),
                    events=[_event(event) for event in span.events] if span.events else (),
                    status_code=status.code,
                    status_message=status.message or None,
                    resource=resource,
                    scope=scope,
                    origin=origin,
                )
                spans.append(record)
    return batch


def _span_problem(
    span_id: bytes, trace_id: bytes, parent: bytes, kind: int, code: int
) -> str | None:
    if len(span_id) != 8 or not any(span_id):
        return f"invalid span_id {span_id.hex()!r}"
    if len(trace_id) != 16 or not any(trace_id):
        return f"invalid trace_id {trace_id.hex()!r}"
    if parent and len(parent) != 8:
        return f"invalid parent_span_id {parent.hex()!r}"
    if not 0 <= kind <= 5:
        return f"invalid kind {kind}"
    if not 0 <= code <= 2:
        return f"invalid status code {code}"
    return None


def _event(event: Span.Event) -> SpanEvent:
    record = _new(SpanEvent)
    _init_event(
        record,
        name=event.name,
        time_ns=event.time_unix_nano,
        attributes=proto_attributes(event.attributes),
    )
    return record


def _optional_id(data: bytes, size: int) -> str | None:
    if len(data) not in (0, size):
        raise ValueError(f"invalid {'trace' if size == 16 else 'span'}_id {data.hex()!r}")
    return data.hex() if any(data) else None


def decode_logs_request(req: ExportLogsServiceRequest, *, origin: Origin | None) -> Batch:
    """The log records of one logs export request; bad records become located errors."""
    batch = Batch(origin=origin)
    logs = batch.logs
    for block_index, block in enumerate(req.resource_logs):
        resource = proto_attributes(block.resource.attributes)
        for scope_index, scope_logs in enumerate(block.scope_logs):
            scope = scope_logs.scope.name or None
            for index, record in enumerate(scope_logs.log_records):
                try:
                    trace_id = _optional_id(record.trace_id, 16)
                    span_id = _optional_id(record.span_id, 8)
                except ValueError as exc:
                    where = f"resource_logs[{block_index}].scope_logs[{scope_index}]"
                    detail = f"{where}.log_records[{index}]: {exc}"
                    batch.errors.append(located_error(origin, detail))
                    continue
                log = _new(LogRecord)
                _init_log(
                    log,
                    trace_id=trace_id,
                    span_id=span_id,
                    time_ns=record.time_unix_nano or record.observed_time_unix_nano,
                    event_name=record.event_name or None,
                    body=proto_any_value(record.body) if record.HasField("body") else None,
                    attributes=proto_attributes(record.attributes),
                    severity_text=record.severity_text or None,
                    resource=resource,
                    scope=scope,
                    origin=origin,
                )
                logs.append(log)
    return batch


def decode_proto_message(
    data: bytes, *, origin: Origin | None, signal: Signal | None = None
) -> Batch:
    """Parse and decode one serialized OTLP trace or logs export request.

    Args:
        data: The serialized message.
        origin: Where it came from; copied onto every record and error.
        signal: ``"traces"`` or ``"logs"`` when known (an OTLP endpoint path says it);
            None to detect it with :func:`detect_signal`.

    Returns:
        The decoded batch; a message that does not parse is a batch with one error.

    """
    if signal is None:
        try:
            signal = detect_signal(data)
        except ValueError as exc:
            return Batch(origin=origin, errors=[located_error(origin, f"bad protobuf: {exc}")])
        if signal is None:
            return Batch(origin=origin)
    try:
        if signal == "traces":
            traces = ExportTraceServiceRequest()
            parse_message(traces, data)
            return decode_trace_request(traces, origin=origin)
        logs = ExportLogsServiceRequest()
        parse_message(logs, data)
        return decode_logs_request(logs, origin=origin)
    except (DecodeError, RecursionError, ValueError) as exc:
        detail = f"bad protobuf {signal} request: {exc}"
        return Batch(origin=origin, errors=[located_error(origin, detail)])


def _varint(data: bytes | bytearray, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise ValueError("varint longer than 10 bytes")


def well_formed(data: bytes | bytearray, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` is protobuf fields, the last ending exactly at ``end``.

    Its top level only, nothing copied: a quick first test of a message.
    """
    try:
        for _ in _fields(data, start, end):
            pass
    except ValueError:
        return False
    return True


def _fields(data: bytes | bytearray, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, start, end) of each field of the message at data[pos:end]."""
    while pos < end:
        tag, pos = _varint(data, pos, end)
        number, wire_type = tag >> 3, tag & 7
        start = pos
        if wire_type == 0:
            _, pos = _varint(data, pos, end)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, start = _varint(data, pos, end)
            pos = start + length
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire_type} (field {number})")
        if pos > end or number == 0:
            raise ValueError("truncated or corrupt message")
        yield number, wire_type, start, pos


def _fits(data: bytes, start: int, end: int, schema: dict[int, int]) -> bool:
    return all(
        schema.get(number, wire_type) == wire_type
        for number, wire_type, _, _ in _fields(data, start, end)
    )


def detect_signal(data: bytes) -> Signal | None:
    """Whether serialized OTLP export request bytes hold traces or logs (see module doc).

    Returns:
        ``"traces"`` or ``"logs"``; None when the message holds no records at all.

    Raises:
        ValueError: the bytes are not a well-formed protobuf message down to the records.

    """
    seen_records = False
    for number, wire_type, start, end in _fields(data, 0, len(data)):
        if number != 1 or wire_type != 2:
            continue
        for number2, wire_type2, start2, end2 in _fields(data, start, end):
            if number2 != 2 or wire_type2 != 2:
                continue
            for number3, wire_type3, start3, end3 in _fields(data, start2, end2):
                if number3 != 2 or wire_type3 != 2:
                    continue
                seen_records = True
                span = _fits(data, start3, end3, _SPAN_WIRE_TYPES)
                log = _fits(data, start3, end3, _LOG_WIRE_TYPES)
                if span != log:
                    return "traces" if span else "logs"
    return "logs" if seen_records else None


#: Messages nest at most this deep in a repair (protobuf's own parser stops at 100).
_MAX_NESTING: Final = 100
_STRING: Final = FieldDescriptor.TYPE_STRING
_MESSAGE: Final = FieldDescriptor.TYPE_MESSAGE


def parse_message(message: Message, data: bytes | bytearray) -> None:
    """``message.ParseFromString(data)``; invalid UTF-8 in its strings read as U+FFFD.

    Raises:
        DecodeError: the bytes are not a valid message for another reason (the parser's
            own error; ``RecursionError`` and ``ValueError`` also pass through from it).

    """
    try:
        message.ParseFromString(data)
        return
    except (DecodeError, ValueError) as exc:  # the pure-Python runtime raises ValueError
        first = exc
    try:
        repaired = _repair_utf8(bytes(data), 0, len(data), message.DESCRIPTOR, 0)
    except ValueError:  # not well-formed down to the strings: the parser's error stands
        repaired = None
    if repaired is None:
        raise first
    try:
        message.ParseFromString(repaired)
    except (DecodeError, ValueError):
        raise first from None
    logger.debug("invalid UTF-8 in protobuf string fields read as U+FFFD")


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _repair_utf8(
    data: bytes, start: int, end: int, descriptor: Descriptor, depth: int
) -> bytes | None:
    """The message at ``data[start:end]`` with its strings made valid UTF-8 (None: all are).

    Unknown fields and fields of other types are copied as they are.

    Raises:
        ValueError: the bytes are not well-formed, or nest deeper than protobuf allows.

    """
    if depth > _MAX_NESTING:
        raise ValueError("nested too deep")
    parts: list[bytes] = []
    copied = key_start = start
    for number, wire_type, value_start, value_end in _fields(data, start, end):
        field = descriptor.fields_by_number.get(number) if wire_type == 2 else None
        new: bytes | None = None
        if field is not None and field.type == _STRING:
            value = data[value_start:value_end]
            if not value.isascii():
                try:
                    value.decode("utf-8")
                except UnicodeDecodeError:
                    new = value.decode("utf-8", "replace").encode("utf-8")
        elif field is not None and field.type == _MESSAGE:
            new = _repair_utf8(data, value_start, value_end, field.message_type, depth + 1)
        if new is not None:
            parts += (data[copied:key_start], _varint_bytes(number << 3 | 2))
            parts += (_varint_bytes(len(new)), new)
            copied = value_end
        key_start = value_end
    if not parts:
        return None
    parts.append(data[copied:end])
    return b"".join(parts)
