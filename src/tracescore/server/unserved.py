"""OTLP signals the receiver does not score (metrics, profiles): a refusal that says why.

A Collector whose ``metrics`` pipeline also lists the exporter pointed at tracescore would
otherwise get a bare ``404 Not Found`` (HTTP) or grpc's ``Method not found!``
(``UNIMPLEMENTED``), and its log would not say which pipeline is wrong. These requests
get the same status codes, which OTLP senders treat as permanent (no retries), with a
message naming the signal and the fix. The Collector's ``otlphttp`` and ``otlp``
exporters log that message with the failed export. The receiver logs the first one of
each signal at WARNING (per listener) (then DEBUG: a misconfigured pipeline sends every few
seconds), and counts each in ``tracescore_receiver_requests_total``.

No bearer token is asked for: like any other path or service the receiver does not
serve, the answer tells nothing about how traces would be handled.
"""

from __future__ import annotations

import logging
import threading
from typing import Final, Literal, TypeAlias

__all__ = [
    "GRPC_SERVICES",
    "HTTP_PATHS",
    "UnservedLog",
    "UnservedSignal",
    "unserved_message",
]

logger = logging.getLogger(__name__)

UnservedSignal: TypeAlias = Literal["metrics", "profiles"]

#: OTLP/HTTP paths of the signals not served. ``/v1development/profiles`` is where the
#: Collector sends profiles today; ``/v1/profiles`` is where they will go once stable.
HTTP_PATHS: Final[dict[str, UnservedSignal]] = {
    "/v1/metrics": "metrics",
    "/v1development/profiles": "profiles",
    "/v1/profiles": "profiles",
}

#: OTLP/gRPC services of the signals not served (each has one method, ``Export``).
GRPC_SERVICES: Final[dict[str, UnservedSignal]] = {
    "opentelemetry.proto.collector.metrics.v1.MetricsService": "metrics",
    "opentelemetry.proto.collector.profiles.v1development.ProfilesService": "profiles",
    "opentelemetry.proto.collector.profiles.v1.ProfilesService": "profiles",
}


def unserved_message(signal: UnservedSignal) -> str:
    """What a sender of ``signal`` is told: tracescore scores traces and logs only."""
    return (
        f"tracescore receives OTLP traces and logs only, not {signal}: remove this "
        f"exporter from the Collector's {signal} pipeline"
    )


class UnservedLog:
    """Logs refused requests of one transport: WARNING the first time per signal, then DEBUG.

    One per listener, so that each server logs its own first refusal; thread-safe.
    """

    def __init__(self, transport: Literal["http", "grpc"]) -> None:
        self._label = "HTTP" if transport == "http" else "gRPC"
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, signal: UnservedSignal, where: str) -> None:
        """Log one refused ``signal`` request; ``where`` is the path or method called."""
        with self._lock:
            first = signal not in self._seen
            self._seen.add(signal)
        logger.log(
            logging.WARNING if first else logging.DEBUG,
            "OTLP/%s %s refused: %s%s",
            self._label,
            where,
            unserved_message(signal),
            " (further ones are logged at DEBUG)" if first else "",
        )
