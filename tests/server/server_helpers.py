"""Test helpers for the OTLP receiver: a bounded in-memory intake and a server thread.

Used by the tests in this folder and by ``serve_script.py`` (the subprocess that runs
``tracescore.server.run``), so it imports nothing from pytest.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client import CollectorRegistry

from tracescore.server import OTLPServer, ServeOptions
from tracescore.server.receiver import INLINE_DECODE_MAX_BYTES
from tracescore.spans import LogRecord, SpanRecord

T = TypeVar("T")

STARTUP_TIMEOUT_S = 30.0


class ListIntake:
    """An ``Intake`` keeping records in lists, up to ``capacity`` records in all.

    ``offer`` refuses a whole batch that would not fit (or everything when ``refuse`` is
    set); ``drain`` records its timeout and returns ``drain_result``.
    """

    def __init__(self, capacity: int = 100_000) -> None:
        self.capacity = capacity
        self.spans: list[SpanRecord] = []
        self.logs: list[LogRecord] = []
        self.offers = 0
        self.refuse = False
        self.is_ready = True
        self.drain_calls: list[float] = []
        self.drain_result = True
        self._lock = threading.Lock()

    def offer(self, spans: Sequence[SpanRecord], logs: Sequence[LogRecord]) -> bool:
        with self._lock:
            self.offers += 1
            held = len(self.spans) + len(self.logs)
            if self.refuse or held + len(spans) + len(logs) > self.capacity:
                return False
            self.spans.extend(spans)
            self.logs.extend(logs)
            return True

    def ready(self) -> bool:
        return self.is_ready

    def drain(self, timeout_s: float) -> bool:
        self.drain_calls.append(timeout_s)
        return self.drain_result


class ServerThread:
    """An ``OTLPServer`` on its own event loop in a daemon thread (the exporters under
    test are synchronous, so the server cannot share the test's thread).

    ``start`` returns once the listeners are bound (or raises what ``start`` raised);
    ``stop`` stops the server with a grace period and joins the thread.
    """

    def __init__(
        self, intake: Any, *, options: ServeOptions, registry: CollectorRegistry | None = None
    ) -> None:
        self.intake = intake
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.server: OTLPServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._grace_s = 1.0
        self._thread = threading.Thread(target=self._run, name="otlp-server", daemon=True)

    @property
    def http_url(self) -> str:
        assert self.server is not None and self.server.http_port is not None
        return f"http://127.0.0.1:{self.server.http_port}"

    @property
    def grpc_target(self) -> str:
        assert self.server is not None and self.server.grpc_port is not None
        return f"127.0.0.1:{self.server.grpc_port}"

    def start(self) -> ServerThread:
        self._thread.start()
        if not self._started.wait(STARTUP_TIMEOUT_S):
            raise TimeoutError("server did not start")
        if self._error is not None:
            raise self._error
        return self

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the server's loop and return its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(STARTUP_TIMEOUT_S)

    def stop(self, grace_s: float = 1.0) -> None:
        if self.server is not None and self._loop is not None and self._stop_requested:
            self._grace_s = grace_s
            self._loop.call_soon_threadsafe(self._stop_requested.set)
        self._thread.join(STARTUP_TIMEOUT_S)
        assert not self._thread.is_alive(), "server thread did not stop"

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        server = OTLPServer(self.intake, registry=self.registry, options=self.options)
        try:
            await server.start()
        except BaseException as exc:
            self._error = exc
            self._started.set()
            return
        self.server = server
        self._started.set()
        await self._stop_requested.wait()
        await server.stop(self._grace_s)


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    """A sample's value, 0.0 when it does not exist (yet)."""
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def big_request(spans: int = 300, attribute_bytes: int = 4096) -> ExportTraceServiceRequest:
    """Over ``INLINE_DECODE_MAX_BYTES``: decoded in the receiver's worker thread."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for index in range(spans):
        span = scope.spans.add()
        span.trace_id, span.span_id = b"\x01" * 16, (index + 1).to_bytes(8, "big")
        span.name = f"span {index}"
        attribute = span.attributes.add()
        attribute.key, attribute.value.string_value = "payload", "p" * attribute_bytes
    assert request.ByteSize() > INLINE_DECODE_MAX_BYTES
    return request
