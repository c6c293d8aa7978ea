"""``OTLPServer``: the HTTP (uvicorn) and gRPC (grpc.aio) listeners on one event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any

import uvicorn
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette

from tracescore.exceptions import ConfigError
from tracescore.live.intake import Intake
from tracescore.server.grpc import add_services, create_grpc_server
from tracescore.server.http import build_http_app
from tracescore.server.metrics import ReceiverMetrics
from tracescore.server.options import ServeOptions
from tracescore.server.protocol import guarded_h11
from tracescore.server.receiver import Receiver

__all__ = ["OTLPServer"]

logger = logging.getLogger(__name__)


class OTLPServer:
    """An OTLP receiver feeding ``intake``: gRPC and HTTP listeners, ``/metrics``, health.

    Lifecycle: construct, ``await start()`` inside a running event loop, ``await
    stop(grace_s)`` in the same loop. ``start`` and ``stop`` are each meant to be called
    once; a second ``stop`` returns at once. Both listeners serve from the loop that
    called ``start``; request bodies over 1 MiB are decoded in one worker thread, and
    ``intake.offer`` is always called on the loop thread.

    Args:
        intake: Where decoded records go; its ``offer`` must not block.
        registry: Where the receiver's metrics are registered and what ``/metrics``
            serves. One server per registry (metric names are registered once).
        options: Listen addresses, auth token and limits.

    Attributes:
        http_port: The bound HTTP port after ``start`` (None before, or without HTTP).
        grpc_port: The bound gRPC port after ``start`` (None before, or without gRPC).

    """

    def __init__(
        self, intake: Intake, *, registry: CollectorRegistry, options: ServeOptions
    ) -> None:
        self.options = options
        self.http_port: int | None = None
        self.grpc_port: int | None = None
        self._registry = registry
        self._receiver = Receiver(intake, metrics=ReceiverMetrics(registry), options=options)
        self._app: Starlette | None = None
        self._grpc: Any = None  # grpc.aio.Server
        self._uvicorn: uvicorn.Server | None = None
        self._http_socket: socket.socket | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._stopped = False

    def http_app(self) -> Starlette:
        """The ASGI app the HTTP listener serves (the same object on every call).

        Usable on its own (tests, mounting in another ASGI server); ``/readyz`` answers
        503 until ``start`` has run.
        """
        if self._app is None:
            self._app = build_http_app(self._receiver, self._registry)
        return self._app

    @property
    def draining(self) -> bool:
        """True once shutdown began: ``/readyz`` answers 503 from then on."""
        return self._receiver.draining

    def begin_draining(self) -> None:
        """Make ``/readyz`` fail (so load balancers stop sending) while still serving."""
        self._receiver.draining = True

    async def start(self) -> None:
        """Bind and start the configured listeners; the bound ports are then set.

        Raises:
            ConfigError: a port cannot be bound (in use, no permission, bad host).
            RuntimeError: ``start`` was called twice or after ``stop``.

        """
        if self._grpc is not None or self._uvicorn is not None or self._stopped:
            raise RuntimeError("OTLPServer.start() may only be called once")
        options = self.options
        try:
            if options.grpc_port is not None:
                await self._start_grpc(options.host, options.grpc_port)
            if options.http_port is not None:
                await self._start_http(options.host, options.http_port)
        except BaseException:
            await self._shutdown(0.0)
            raise
        self._receiver.started = True
        logger.info(
            "OTLP receiver listening on %s (gRPC: %s, HTTP: %s)",
            options.host,
            self.grpc_port if self.grpc_port is not None else "off",
            self.http_port if self.http_port is not None else "off",
        )

    async def stop(self, grace_s: float) -> None:
        """Stop accepting, give in-flight requests up to ``grace_s`` seconds, then close.

        Readiness turns false first. Requests still running after the grace period are
        cancelled (their senders see a reset connection or ``CANCELLED`` and retry).
        Idempotent: later calls return at once.
        """
        if self._stopped:
            return
        self.begin_draining()
        await self._shutdown(max(0.0, grace_s))

    async def _shutdown(self, grace_s: float) -> None:
        self._stopped = True
        try:
            await asyncio.gather(self._stop_grpc(grace_s), self._stop_http(grace_s))
        finally:
            self._receiver.close()

    async def _start_grpc(self, host: str, port: int) -> None:
        server = create_grpc_server(
            max_request_bytes=self.options.max_request_bytes,
            max_calls=self.options.max_connections,
            handshake_timeout_s=self.options.request_timeout_s,
        )
        add_services(server, self._receiver)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            bound = server.add_insecure_port(address)
        except RuntimeError as exc:  # grpc raises RuntimeError("Failed to bind to address")
            raise ConfigError(f"serve: cannot listen for OTLP/gRPC on {address}: {exc}") from exc
        if not bound:  # older grpc returned 0 instead of raising
            raise ConfigError(f"serve: cannot listen for OTLP/gRPC on {address}")
        self._grpc = server
        await server.start()
        self.grpc_port = bound

    async def _start_http(self, host: str, port: int) -> None:
        # The socket is bound here rather than by uvicorn, which calls sys.exit() when
        # binding fails; it also gives the bound port before anything is served.
        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
            sock = socket.create_server((host, port), family=family)
        except OSError as exc:
            raise ConfigError(
                f"serve: cannot listen for OTLP/HTTP on {host}:{port}: {exc}"
            ) from exc
        self._http_socket = sock
        self.http_port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.http_app(),
            log_config=None,  # a library never configures logging
            lifespan="off",
            ws="none",
            server_header=False,
            http=guarded_h11(self.options.request_timeout_s),
            limit_concurrency=self.options.max_connections,
        )
        config.load()
        server = uvicorn.Server(config)
        # Server.serve() would also install its own SIGINT/SIGTERM handlers; run() owns
        # the signals, so the pieces of serve() are driven here instead.
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self._uvicorn = server
        # main_loop refreshes the Date header once a second and returns on should_exit.
        self._ticker = asyncio.get_running_loop().create_task(server.main_loop())

    async def _stop_grpc(self, grace_s: float) -> None:
        if self._grpc is not None:
            await self._grpc.stop(grace_s)

    async def _stop_http(self, grace_s: float) -> None:
        server = self._uvicorn
        if server is None:
            if self._http_socket is not None:
                self._http_socket.close()
            return
        server.should_exit = True
        if self._ticker is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        # Closes the listener, asks idle keep-alive connections to close and busy ones to
        # close after their response, waits for them up to the grace period, then
        # cancels what is left.
        # uvicorn annotates it as int | None, but hands it to asyncio.wait_for as is.
        server.config.timeout_graceful_shutdown = grace_s  # type: ignore[assignment]
        await server.shutdown(sockets=[self._http_socket] if self._http_socket else None)
