"""OTLP/gRPC: ``TraceService/Export`` and ``LogsService/Export`` on a ``grpc.aio`` server.

Status codes follow OTLP (opentelemetry-proto ``docs/specification.md``, "OTLP/gRPC
Response"): ``UNAUTHENTICATED`` without the bearer token, ``INVALID_ARGUMENT`` for a
request that does not parse, ``RESOURCE_EXHAUSTED`` with ``RetryInfo`` when the intake's
queue is full (OTLP clients retry it only when ``RetryInfo`` says recovery is possible),
and ``OK`` with ``partial_success`` when some records were rejected. Oversized messages
never reach us: grpc refuses them with ``RESOURCE_EXHAUSTED`` (its
``max_receive_message_length``, also checked after decompression), and handles gzip.

Requests arrive as raw bytes: the generated ``add_*Servicer_to_server`` helpers parse with
``FromString`` inside grpc, which answers a parse failure with ``UNKNOWN`` where OTLP
wants ``INVALID_ARGUMENT``; parsing here also lets large requests be parsed and decoded
off the event loop, and gives the request size without serializing again. The servicers
still accept parsed messages, so they also work when registered with those helpers.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any, Final, TypeAlias

import grpc  # type: ignore[import-untyped]
from google.protobuf.any_pb2 import Any as AnyProto  # type: ignore[import-untyped, unused-ignore]
from google.protobuf.duration_pb2 import Duration  # type: ignore[import-untyped, unused-ignore]
from google.rpc.error_details_pb2 import RetryInfo  # type: ignore[import-untyped, unused-ignore]
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped, unused-ignore]
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tracescore.server.decoding import (
    MalformedRequest,
    decode_message,
    decode_protobuf_request,
    export_response,
    partial_success,
)
from tracescore.server.metrics import Signal
from tracescore.server.receiver import RETRY_AFTER_S, Receiver
from tracescore.server.unserved import GRPC_SERVICES, UnservedLog, UnservedSignal, unserved_message
from tracescore.spans import Origin

__all__ = ["LogsService", "TraceService", "add_services", "create_grpc_server"]

logger = logging.getLogger(__name__)

# grpc ships no type hints: its objects are Any here, kept to this module.
ServicerContext: TypeAlias = Any
Response: TypeAlias = ExportTraceServiceResponse | ExportLogsServiceResponse

ORIGIN: Final = Origin("otlp-grpc")
TRACE_SERVICE: Final = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"].full_name
LOGS_SERVICE: Final = logs_service_pb2.DESCRIPTOR.services_by_name["LogsService"].full_name


def create_grpc_server(
    *, max_request_bytes: int, max_calls: int = 1024, handshake_timeout_s: float = 30.0
) -> Any:
    """A ``grpc.aio.Server`` configured for OTLP, services not yet added, not bound.

    Args:
        max_request_bytes: Largest message accepted.
        max_calls: Concurrent calls; more fail ``RESOURCE_EXHAUSTED`` (senders retry).
        handshake_timeout_s: Time a new connection has to complete its HTTP/2 handshake,
            so connections that never speak are closed.

    """
    return grpc.aio.server(
        maximum_concurrent_rpcs=max_calls,
        options=[
            ("grpc.max_receive_message_length", max_request_bytes),
            # grpc sets SO_REUSEPORT by default on Linux, so a second receiver on the same
            # port would silently share its traffic instead of failing to start.
            ("grpc.so_reuseport", 0),
            ("grpc.server_handshake_timeout_ms", max(1, round(handshake_timeout_s * 1000))),
        ],
    )


def add_services(server: Any, receiver: Receiver) -> None:
    """Register both OTLP services on ``server`` (a ``grpc.aio.Server``), taking raw bytes.

    The metrics and profiles services are registered too, to answer ``UNIMPLEMENTED``
    with a message naming the misconfigured pipeline (:mod:`tracescore.server.unserved`)
    rather than grpc's ``Method not found!``.
    """
    for name, servicer, response in (
        (TRACE_SERVICE, TraceService(receiver), ExportTraceServiceResponse),
        (LOGS_SERVICE, LogsService(receiver), ExportLogsServiceResponse),
    ):
        handler = grpc.unary_unary_rpc_method_handler(
            servicer.Export,
            request_deserializer=None,  # bytes as received; parsed in Export
            response_serializer=response.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(name, {"Export": handler}),)
        )
    log = UnservedLog("grpc")
    for name, signal in GRPC_SERVICES.items():
        refuse = partial(_unserved, receiver, log, signal, f"{name}/Export")
        handler = grpc.unary_unary_rpc_method_handler(refuse, request_deserializer=None)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(name, {"Export": handler}),)
        )


async def _unserved(
    receiver: Receiver,
    log: UnservedLog,
    signal: UnservedSignal,
    method: str,
    request: bytes,
    context: ServicerContext,
) -> None:
    log(signal, method)
    receiver.metrics.request("grpc", signal, grpc.StatusCode.UNIMPLEMENTED.name)
    await context.abort(grpc.StatusCode.UNIMPLEMENTED, unserved_message(signal))


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    """``opentelemetry.proto.collector.trace.v1.TraceService``."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver

    async def Export(
        self, request: ExportTraceServiceRequest | bytes, context: ServicerContext
    ) -> ExportTraceServiceResponse:
        """Decode, offer and answer one export request (see the module doc for codes)."""
        response = await _export(self._receiver, "traces", request, context)
        assert isinstance(response, ExportTraceServiceResponse)
        return response


class LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    """``opentelemetry.proto.collector.logs.v1.LogsService``."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver

    async def Export(
        self, request: ExportLogsServiceRequest | bytes, context: ServicerContext
    ) -> ExportLogsServiceResponse:
        """Decode, offer and answer one export request (see the module doc for codes)."""
        response = await _export(self._receiver, "logs", request, context)
        assert isinstance(response, ExportLogsServiceResponse)
        return response


async def _export(
    receiver: Receiver,
    signal: Signal,
    request: ExportTraceServiceRequest | ExportLogsServiceRequest | bytes,
    context: ServicerContext,
) -> Response:
    code, message, response = await _handle(receiver, signal, request, context)
    receiver.metrics.request("grpc", signal, code.name)
    if response is not None:
        return response
    trailing: tuple[tuple[str, bytes], ...] = ()
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        trailing = _retry_trailers(code, message)
    await context.abort(code, message, trailing_metadata=trailing)  # raises
    raise AssertionError("unreachable: context.abort returned")  # pragma: no cover


async def _handle(
    receiver: Receiver,
    signal: Signal,
    request: ExportTraceServiceRequest | ExportLogsServiceRequest | bytes,
    context: ServicerContext,
) -> tuple[Any, str, Response | None]:
    """(status code, message, response): the response is None for a failed request."""
    if not receiver.authorized(_metadata(context, "authorization")):
        return grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token", None
    try:
        if isinstance(request, bytes):
            receiver.metrics.body_bytes("grpc", signal, len(request))
            decode = partial(decode_protobuf_request, signal, request, origin=ORIGIN)
            batch = await receiver.decode(len(request), decode)
        else:
            size = request.ByteSize()
            receiver.metrics.body_bytes("grpc", signal, size)
            batch = await receiver.decode(size, partial(decode_message, request, origin=ORIGIN))
    except MalformedRequest as exc:
        logger.debug("OTLP/gRPC %s request malformed: %s", signal, exc)
        return grpc.StatusCode.INVALID_ARGUMENT, str(exc), None
    except Exception:  # a bug in decoding: one request fails, the server goes on
        logger.exception("internal error decoding an OTLP/gRPC %s request", signal)
        return grpc.StatusCode.INTERNAL, "internal error while decoding the request", None
    try:
        taken = receiver.offer("grpc", signal, batch)
    except Exception:
        logger.exception("intake.offer raised on an OTLP/gRPC %s request", signal)
        return grpc.StatusCode.INTERNAL, "internal error while queueing the records", None
    if not taken:
        return grpc.StatusCode.RESOURCE_EXHAUSTED, "receiver queue is full; retry later", None
    return grpc.StatusCode.OK, "", export_response(signal, partial_success(signal, batch))


def _metadata(context: ServicerContext, key: str) -> str | None:
    for name, value in context.invocation_metadata() or ():
        if name == key:
            return value if isinstance(value, str) else None
    return None


def _retry_trailers(code: Any, message: str) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata carrying ``RetryInfo`` for a refused request.

    Sent both where OTLP says (a detail of the ``google.rpc.Status`` in
    ``grpc-status-details-bin``) and where the Python OTLP exporter looks for it
    (``google.rpc.retryinfo-bin``).
    """
    retry = RetryInfo(retry_delay=Duration(seconds=RETRY_AFTER_S))
    detail = AnyProto()
    detail.Pack(retry)
    status = Status(code=code.value[0], message=message, details=[detail])
    return (
        ("grpc-status-details-bin", status.SerializeToString()),
        ("google.rpc.retryinfo-bin", retry.SerializeToString()),
    )
