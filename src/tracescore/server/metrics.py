"""The receiver's own Prometheus metrics, registered on an injected registry."""

from __future__ import annotations

from typing import Literal, TypeAlias

from prometheus_client import CollectorRegistry, Counter

from tracescore.server.unserved import UnservedSignal

__all__ = ["ReceiverMetrics", "Signal", "Transport"]

Signal: TypeAlias = Literal["traces", "logs"]
Transport: TypeAlias = Literal["http", "grpc"]
RecordOutcome: TypeAlias = Literal["accepted", "invalid", "refused"]


class ReceiverMetrics:
    """Counters of requests, bytes and records, with bounded labels.

    * ``tracescore_receiver_requests_total{transport, signal, code}``: one per answered
      export request; ``code`` is the HTTP status (``"200"``, ``"429"``, ...) or the gRPC
      status name (``"OK"``, ``"RESOURCE_EXHAUSTED"``, ...), a closed set either way.
      Requests of the signals not served count here too (``signal="metrics"`` or
      ``"profiles"``, ``code="404"`` or ``"UNIMPLEMENTED"``): a Collector pipeline that
      sends them is misconfigured.
    * ``tracescore_receiver_request_bytes_total{transport, signal}``: request bodies as
      read (HTTP: on the wire, before decompression; gRPC: the message grpc handed us,
      after its own decompression).
    * ``tracescore_receiver_records_total{transport, signal, outcome}``: spans or log
      records ``accepted`` by the intake, ``invalid`` (rejected in a partial success) or
      ``refused`` (the intake's queue was full; the sender is told to retry).

    Registering twice on one registry fails (``ValueError``), as prometheus_client does
    for every duplicate: one receiver per registry.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._requests = Counter(
            "tracescore_receiver_requests",
            "OTLP export requests answered by the receiver, by transport, signal and status.",
            ["transport", "signal", "code"],
            registry=registry,
        )
        self._bytes = Counter(
            "tracescore_receiver_request_bytes",
            "Bytes of OTLP export request bodies read by the receiver.",
            ["transport", "signal"],
            registry=registry,
        )
        self._records = Counter(
            "tracescore_receiver_records",
            "Spans and log records received, by what became of them.",
            ["transport", "signal", "outcome"],
            registry=registry,
        )

    def request(self, transport: Transport, signal: Signal | UnservedSignal, code: str) -> None:
        """Count one answered request."""
        self._requests.labels(transport, signal, code).inc()

    def body_bytes(self, transport: Transport, signal: Signal, size: int) -> None:
        """Count ``size`` bytes of request body."""
        if size:
            self._bytes.labels(transport, signal).inc(size)

    def records(
        self, transport: Transport, signal: Signal, outcome: RecordOutcome, count: int
    ) -> None:
        """Count ``count`` records with one outcome."""
        if count:
            self._records.labels(transport, signal, outcome).inc(count)
