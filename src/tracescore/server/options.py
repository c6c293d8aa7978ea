"""The settings of ``tracescore serve``, checked once when they are made."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from tracescore.exceptions import ConfigError

__all__ = ["ServeOptions"]

# gRPC keeps message sizes in a signed 32-bit int (``grpc.max_receive_message_length``).
_MAX_MESSAGE_BYTES: Final = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    """Where and how the OTLP receiver listens.

    Attributes:
        host: Address both listeners bind to. The default keeps the receiver on loopback,
            like the Collector's ``otlp`` receiver; use ``0.0.0.0`` in a container.
        grpc_port: OTLP/gRPC port (4317 in OTLP); None for no gRPC listener, 0 for any
            free port (read it from ``OTLPServer.grpc_port`` after ``start``).
        http_port: OTLP/HTTP port (4318 in OTLP), also serving ``/metrics``, ``/healthz``
            and ``/readyz``; None for no HTTP listener, 0 for any free port.
        auth_token: When set, OTLP requests must carry ``Authorization: Bearer <token>``
            (HTTP header or gRPC metadata). ``/metrics`` and the health endpoints stay
            open. Printable ASCII without spaces, since gRPC metadata allows no more.
        max_request_bytes: Largest request body accepted, counted on the wire and again
            after decompression (a small gzip body can inflate a thousandfold).
        drain_timeout_s: On SIGTERM/SIGINT, how long :func:`~tracescore.server.run` may
            take to stop the listeners and let the intake score what it holds.
        request_timeout_s: OTLP/HTTP: how long a client may take to send a request's
            headers, and again its body; slower clients are disconnected (headers) or
            answered 408 (body), so slow-loris connections cannot pile up.
        max_connections: OTLP/HTTP: open connections (and requests in progress) beyond
            which new requests are answered 503; gRPC: concurrent calls beyond which
            new calls fail ``RESOURCE_EXHAUSTED``. Senders retry both.

    Raises:
        ConfigError: a value is out of range, or both listeners are turned off.

    """

    host: str = "127.0.0.1"
    grpc_port: int | None = 4317
    http_port: int | None = 4318
    auth_token: str | None = None
    max_request_bytes: int = 8 * 1024 * 1024
    drain_timeout_s: float = 30.0
    request_timeout_s: float = 30.0
    max_connections: int = 1024

    def __post_init__(self) -> None:
        if not self.host or self.host != self.host.strip():
            raise ConfigError(f"serve: host must be a non-empty address, got {self.host!r}")
        for name, port in (("grpc_port", self.grpc_port), ("http_port", self.http_port)):
            if port is not None and (isinstance(port, bool) or not 0 <= port <= 65535):
                raise ConfigError(f"serve: {name} must be 0-65535 or None, got {port!r}")
        if self.grpc_port is None and self.http_port is None:
            raise ConfigError(
                "serve: both listeners are off (grpc_port and http_port None, or -1 on the "
                "command line): nothing to listen on"
            )
        if self.grpc_port is not None and self.grpc_port != 0 and self.grpc_port == self.http_port:
            raise ConfigError(f"serve: grpc_port and http_port are both {self.grpc_port}")
        if self.auth_token is not None and not _is_token(self.auth_token):
            raise ConfigError("serve: auth_token must be non-empty printable ASCII without spaces")
        if not 1 <= self.max_request_bytes <= _MAX_MESSAGE_BYTES:
            raise ConfigError(
                f"serve: max_request_bytes must be 1-{_MAX_MESSAGE_BYTES}, "
                f"got {self.max_request_bytes!r}"
            )
        if not (math.isfinite(self.drain_timeout_s) and self.drain_timeout_s >= 0):
            raise ConfigError(
                f"serve: drain_timeout_s must be a finite number >= 0, got {self.drain_timeout_s!r}"
            )
        if not (math.isfinite(self.request_timeout_s) and self.request_timeout_s > 0):
            raise ConfigError(
                "serve: request_timeout_s must be a finite number > 0, "
                f"got {self.request_timeout_s!r}"
            )
        if isinstance(self.max_connections, bool) or self.max_connections < 1:
            raise ConfigError(f"serve: max_connections must be >= 1, got {self.max_connections!r}")


def _is_token(token: str) -> bool:
    return bool(token) and all(0x21 <= ord(char) <= 0x7E for char in token)
