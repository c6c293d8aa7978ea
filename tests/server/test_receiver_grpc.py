"""OTLP/gRPC status codes with raw grpc stubs: queue full, malformed, oversized, partial."""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Callable, Iterator

import grpc  # type: ignore[import-untyped]  # no stubs (as in src/tracescore/server/grpc.py)
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import agent_spans
from prometheus_client import CollectorRegistry
from server_helpers import ListIntake, ServerThread, big_request, sample

from tracescore.formats.base import Batch
from tracescore.server import ServeOptions
from tracescore.server.grpc import TraceService
from tracescore.server.metrics import ReceiverMetrics
from tracescore.server.receiver import INLINE_DECODE_MAX_BYTES, Receiver
from tracescore.spans import Origin

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SMALL_LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def spans() -> list[ReadableSpan]:
    return agent_spans(1)


@pytest.fixture
def channel(server: ServerThread) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.grpc_target) as chan:
        yield chan


def raw_export(chan: grpc.Channel) -> Callable[..., bytes]:
    """The trace Export method taking and returning raw bytes."""
    export: Callable[..., bytes] = chan.unary_unary(EXPORT)
    return export


def counted(server: ServerThread, code: str, signal: str = "traces") -> float:
    return sample(
        server.registry,
        "tracescore_receiver_requests_total",
        transport="grpc",
        signal=signal,
        code=code,
    )


def test_queue_full_is_resource_exhausted_with_retry_info(
    server: ServerThread, intake: ListIntake, channel: grpc.Channel, spans: list[ReadableSpan]
) -> None:
    intake.refuse = True
    with pytest.raises(grpc.RpcError) as caught:
        TraceServiceStub(channel).Export(encode_spans(spans), timeout=10)  # type: ignore[no-untyped-call]  # generated stub
    error = caught.value
    assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error.details() == "receiver queue is full; retry later"
    trailers = dict(error.trailing_metadata())
    status = Status.FromString(trailers["grpc-status-details-bin"])
    assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    retry = RetryInfo()
    assert status.details[0].Unpack(retry)
    assert retry.retry_delay.seconds == 1
    assert RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]).retry_delay.seconds == 1
    assert counted(server, "RESOURCE_EXHAUSTED") == 1


def test_logs_queue_full_is_resource_exhausted(
    server: ServerThread, intake: ListIntake, channel: grpc.Channel
) -> None:
    intake.capacity = 0
    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add()
    record.event_name = "gen_ai.choice"
    with pytest.raises(grpc.RpcError) as caught:
        LogsServiceStub(channel).Export(request, timeout=10)  # type: ignore[no-untyped-call]  # generated stub
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert counted(server, "RESOURCE_EXHAUSTED", "logs") == 1


def test_malformed_request_is_invalid_argument(
    server: ServerThread, intake: ListIntake, channel: grpc.Channel
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        raw_export(channel)(b"\x0a\x05\x12\x03\xff\xff\xff", timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "invalid protobuf ExportTraceServiceRequest" in caught.value.details()
    assert intake.offers == 0
    assert counted(server, "INVALID_ARGUMENT") == 1


def test_strings_that_are_not_utf8_are_read_not_refused(
    server: ServerThread, intake: ListIntake, channel: grpc.Channel, spans: list[ReadableSpan]
) -> None:
    body = encode_spans(spans).SerializeToString().replace(b"get_weather", b"get\xffweather")
    answer = ExportTraceServiceResponse.FromString(raw_export(channel)(body, timeout=10))
    assert not answer.HasField("partial_success")
    assert len(intake.spans) == len(spans)
    assert any(record.name == "execute_tool get\ufffdweather_0" for record in intake.spans)
    assert counted(server, "OK") == 1


def test_partial_success_in_the_response(
    server: ServerThread, intake: ListIntake, channel: grpc.Channel, spans: list[ReadableSpan]
) -> None:
    request = encode_spans(spans)
    bad = request.resource_spans[0].scope_spans[-1].spans[-1]
    bad.kind = 9
    response = TraceServiceStub(channel).Export(request, timeout=10)  # type: ignore[no-untyped-call]  # generated stub
    assert response.partial_success.rejected_spans == 1
    assert bad.span_id.hex() in response.partial_success.error_message
    assert "invalid kind 9" in response.partial_success.error_message
    assert len(intake.spans) == len(spans) - 1


def test_large_request_is_decoded_in_the_worker(
    server: ServerThread, intake: ListIntake, channel: grpc.Channel
) -> None:
    TraceServiceStub(channel).Export(big_request(), timeout=30)  # type: ignore[no-untyped-call]  # generated stub
    assert len(intake.spans) == 300
    assert intake.spans[-1].attributes["payload"] == "p" * 4096


def test_decode_runs_inline_when_small_and_in_one_worker_when_big() -> None:
    receiver = Receiver(
        ListIntake(), metrics=ReceiverMetrics(CollectorRegistry()), options=ServeOptions()
    )

    def where() -> Batch:
        return Batch(origin=Origin(threading.current_thread().name))

    async def go() -> list[str]:
        names = [
            await receiver.decode(INLINE_DECODE_MAX_BYTES, where),
            await receiver.decode(INLINE_DECODE_MAX_BYTES + 1, where),
            await receiver.decode(10 * INLINE_DECODE_MAX_BYTES, where),
        ]
        return [str(batch.origin) for batch in names]

    inline, worker, again = asyncio.run(go())
    receiver.close()
    receiver.close()
    assert inline == "MainThread"
    assert worker.startswith("tracescore-otlp-decode")
    assert again == worker


@pytest.mark.parametrize("compression", [None, grpc.Compression.Gzip], ids=["plain", "gzip"])
def test_message_over_the_limit_is_refused_by_grpc(
    start_server: Callable[..., ServerThread],
    intake: ListIntake,
    compression: grpc.Compression | None,
) -> None:
    server = start_server(max_request_bytes=SMALL_LIMIT)
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "x" * (4 * SMALL_LIMIT)
    if compression is not None:  # compresses to well under the limit: only inflated is it big
        assert len(gzip.compress(request.SerializeToString())) < SMALL_LIMIT
    with grpc.insecure_channel(server.grpc_target) as chan, pytest.raises(grpc.RpcError) as caught:
        TraceServiceStub(chan).Export(request, timeout=10, compression=compression)  # type: ignore[no-untyped-call]  # generated stub
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert intake.offers == 0


class _Context:
    """Just enough of ``grpc.aio.ServicerContext`` for a successful call."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", "Bearer tok"),)


def test_servicer_also_takes_parsed_messages(spans: list[ReadableSpan]) -> None:
    """As registered by the generated ``add_TraceServiceServicer_to_server`` helper."""
    intake = ListIntake()
    registry = CollectorRegistry()
    receiver = Receiver(
        intake, metrics=ReceiverMetrics(registry), options=ServeOptions(auth_token="tok")
    )
    response = asyncio.run(TraceService(receiver).Export(encode_spans(spans), _Context()))
    assert isinstance(response, ExportTraceServiceResponse)
    assert len(intake.spans) == len(spans)
    assert (
        registry.get_sample_value(
            "tracescore_receiver_request_bytes_total", {"transport": "grpc", "signal": "traces"}
        )
        == encode_spans(spans).ByteSize()
    )
