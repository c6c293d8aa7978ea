"""Fuzzing the OTLP protobuf readers: requests from random fields, random and mutated bytes.

Contract (see ``fuzz_helpers``): :func:`decode_proto_message` never raises, whatever the
bytes; a parsed request decodes to one record or one located error per span / log record;
the receiver's :func:`decode_protobuf_request` raises only ``MalformedRequest``; framed
files (4-byte lengths) yield one batch per message and stop at the first bad frame.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from fuzz_helpers import (
    check_batch,
    fuzz_settings,
    length_prefixed,
    logs_request,
    proto_any_value,
    read_bytes,
    run_import,
    seed_traces,
    time_limit,
    trace_request,
)
from fuzz_strategies import INT64, PROTO_TEXT, mutated_bytes, one_of_seeds
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tracescore.formats.otlp_proto import decode_proto_message, detect_signal
from tracescore.server.decoding import MalformedRequest, decode_protobuf_request
from tracescore.spans import Origin

ORIGIN = Origin("fuzz.binpb", 2)
SIGNALS = (None, "traces", "logs")


_settings = fuzz_settings


def _ids(size: int) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(min_size=size, max_size=size),
        st.just(b"\x00" * size),
        st.binary(max_size=2 * size + 1),
    )


PROTO_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), INT64, st.floats(), PROTO_TEXT, st.binary(max_size=8)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(PROTO_TEXT, inner, max_size=3),
    max_leaves=8,
)
PROTO_ATTRS = st.dictionaries(
    st.sampled_from(["gen_ai.input.messages", "gen_ai.operation.name", "gen_ai.tool.name"])
    | PROTO_TEXT,
    PROTO_VALUES,
    max_size=4,
)
UINT64 = st.integers(0, 2**64 - 1)
ENUMS = st.integers(-(2**31), 2**31 - 1) | st.integers(-2, 7)


@st.composite
def trace_requests(draw: st.DrawFn) -> tuple[ExportTraceServiceRequest, int]:
    """A trace request of random fields, and how many spans it holds."""
    request = ExportTraceServiceRequest()
    total = 0
    for _ in range(draw(st.integers(0, 2))):
        block = request.resource_spans.add()
        for key, value in draw(PROTO_ATTRS).items():
            kv = block.resource.attributes.add()
            kv.key = key
            proto_any_value(value, kv.value)
        for _ in range(draw(st.integers(0, 2))):
            scope_spans = block.scope_spans.add()
            scope_spans.scope.name = draw(PROTO_TEXT)
            for _ in range(draw(st.integers(0, 3))):
                total += 1
                span = scope_spans.spans.add()
                span.trace_id = draw(_ids(16))
                span.span_id = draw(_ids(8))
                span.parent_span_id = draw(_ids(8))
                span.name = draw(PROTO_TEXT)
                span.kind = draw(ENUMS)
                span.start_time_unix_nano = draw(UINT64)
                span.end_time_unix_nano = draw(UINT64)
                for key, value in draw(PROTO_ATTRS).items():
                    kv = span.attributes.add()
                    kv.key = key
                    proto_any_value(value, kv.value)
                for name in draw(st.lists(PROTO_TEXT, max_size=2)):
                    event = span.events.add()
                    event.name = name
                    event.time_unix_nano = draw(UINT64)
                    proto_any_value(draw(PROTO_VALUES), event.attributes.add().value)
                span.status.code = draw(ENUMS)
                span.status.message = draw(PROTO_TEXT)
    return request, total


@st.composite
def logs_requests(draw: st.DrawFn) -> tuple[ExportLogsServiceRequest, int]:
    """A logs request of random fields, and how many log records it holds."""
    request = ExportLogsServiceRequest()
    total = 0
    for _ in range(draw(st.integers(0, 2))):
        scope_logs = request.resource_logs.add().scope_logs.add()
        for _ in range(draw(st.integers(0, 3))):
            total += 1
            record = scope_logs.log_records.add()
            record.trace_id = draw(_ids(16))
            record.span_id = draw(_ids(8))
            record.time_unix_nano = draw(UINT64)
            record.observed_time_unix_nano = draw(UINT64)
            record.event_name = draw(PROTO_TEXT)
            record.severity_number = draw(ENUMS)
            record.severity_text = draw(PROTO_TEXT)
            if draw(st.booleans()):
                proto_any_value(draw(PROTO_VALUES), record.body)
            for key, value in draw(PROTO_ATTRS).items():
                kv = record.attributes.add()
                kv.key = key
                proto_any_value(value, kv.value)
    return request, total


def _decode(data: bytes, signal: Any) -> Any:
    with time_limit():
        batch = decode_proto_message(data, origin=ORIGIN, signal=signal)
    check_batch(batch, path=ORIGIN.path)
    return batch


def _receiver(data: bytes) -> None:
    for signal in ("traces", "logs"):
        try:
            with time_limit():
                batch = decode_protobuf_request(signal, data, origin=ORIGIN)
        except MalformedRequest:
            continue
        check_batch(batch, path=ORIGIN.path)


@_settings(150)
@given(trace_requests())
def test_random_trace_requests(case: tuple[ExportTraceServiceRequest, int]) -> None:
    """Every span is a record or one located error; the receiver agrees with the file reader."""
    request, total = case
    data = request.SerializeToString()
    for signal in (None, "traces"):
        batch = _decode(data, signal)
        if total and (signal == "traces" or detect_signal(data) == "traces"):
            assert len(batch.spans) + len(batch.errors) == total
    received = decode_protobuf_request("traces", data, origin=ORIGIN)
    assert len(received.spans) + len(received.errors) == total
    run_import([batch])


@_settings(100)
@given(logs_requests())
def test_random_logs_requests(case: tuple[ExportLogsServiceRequest, int]) -> None:
    request, total = case
    data = request.SerializeToString()
    batch = _decode(data, "logs")
    assert len(batch.logs) + len(batch.errors) == total
    _decode(data, None)
    run_import([batch])


@_settings(200)
@given(st.binary(max_size=400), st.sampled_from(SIGNALS))
def test_random_bytes(data: bytes, signal: Any) -> None:
    batch = _decode(data, signal)
    with contextlib.suppress(ValueError):  # documented
        detect_signal(data)
    _receiver(data)
    run_import([batch])


def _seed_messages() -> list[bytes]:
    messages = []
    for spans, logs in seed_traces():
        messages.append(trace_request(spans).SerializeToString())
        if logs:
            messages.append(logs_request(logs).SerializeToString())
    return messages


SEEDS = _seed_messages()


@_settings(200)
@given(one_of_seeds(SEEDS, mutated_bytes), st.sampled_from(SIGNALS))
def test_mutated_real_messages(data: bytes, signal: Any) -> None:
    run_import([_decode(data, signal)])
    _receiver(data)


@_settings(80)
@given(
    st.lists(st.sampled_from(SEEDS), max_size=4).flatmap(
        lambda messages: mutated_bytes(length_prefixed(messages))
    )
)
def test_mutated_length_prefixed_files(data: bytes) -> None:
    with time_limit():
        batches = read_bytes(data)
    run_import(batches)
    # Damage costs only itself and reading goes on (tracescore.formats.frames): one batch
    # per message or damaged stretch, each error located at its own number.
    assert [b.origin.line for b in batches if b.origin] == list(range(1, len(batches) + 1))
    assert all(e.line == b.origin.line for b in batches if b.origin for e in b.errors)


@_settings(40)
@given(st.lists(st.sampled_from(SEEDS), min_size=1, max_size=4), st.integers(1, 3))
def test_truncated_length_prefixed_files(messages: list[bytes], cut: int) -> None:
    """Every whole frame is read; the cut one is one located error at its index."""
    data = length_prefixed(messages)[:-cut]
    with time_limit():
        batches = read_bytes(data)
    stats, _ = run_import(batches)
    assert len(batches) == len(messages)
    last = batches[-1].errors
    assert len(last) == 1 and last[0].line == len(messages)
    assert last[0].detail.startswith("truncated")
    assert stats.bad_records == sum(len(b.errors) for b in batches)


@pytest.mark.parametrize("depth", [50, 99, 100, 101, 200, 2000])
def test_deeply_nested_any_values(depth: int) -> None:
    """Nesting past protobuf's recursion limit is one located error, not a crash."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = b"\x01" * 16, b"\x02" * 8
    # built by hand from the innermost value out: the Python API recurses while copying
    data = AnyValue(string_value="x").SerializeToString()
    for _ in range(depth):
        array = b"\x0a" + _varint(len(data)) + data  # ArrayValue.values = 1
        data = b"\x2a" + _varint(len(array)) + array  # AnyValue.array_value = 5
    key_value = b"\x0a\x01k" + b"\x12" + _varint(len(data)) + data
    # append the attribute to the (only) span: re-frame span, scope_spans, resource_spans
    span_bytes = span.SerializeToString() + b"\x4a" + _varint(len(key_value)) + key_value
    scope = b"\x12" + _varint(len(span_bytes)) + span_bytes
    resource = b"\x12" + _varint(len(scope)) + scope
    payload = b"\x0a" + _varint(len(resource)) + resource
    batch = _decode(payload, None)
    assert len(batch.spans) + len(batch.errors) == 1
    run_import([batch])
    _receiver(payload)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
