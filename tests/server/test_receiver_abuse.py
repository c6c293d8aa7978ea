"""Abusive clients on 127.0.0.1: slow loris (headers and bodies), idle connections,
connection floods beyond ``max_connections``, request floods beyond the intake. The
server must shed them with the right answer and keep serving honest senders."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import httpx
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from server_helpers import ListIntake, ServerThread, sample

PROTOBUF = {"Content-Type": "application/x-protobuf"}
PARTIAL_HEADERS = b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic"
#: How long a test waits for the server to act on a deadline of ``TIMEOUT_S`` at most.
TIMEOUT_S = 0.5
SLACK_S = 10.0


def body(spans: int = 2) -> bytes:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("abuse")
    for i in range(spans):
        with tracer.start_as_current_span(f"s{i}"):
            pass
    data: bytes = encode_spans(exporter.get_finished_spans()).SerializePartialToString()
    return data


@contextmanager
def connection(port: int, first: bytes = b"") -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=SLACK_S)
    try:
        if first:
            sock.sendall(first)
        yield sock
    finally:
        sock.close()


def closed_by_server(sock: socket.socket) -> bool:
    """Block (at most SLACK_S) until the server answers or closes; True when it closed."""
    try:
        data = sock.recv(4096)
    except ConnectionResetError:
        return True
    return data == b""


def port_of(server: ServerThread) -> int:
    assert server.server is not None and server.server.http_port is not None
    return server.server.http_port


def post(server: ServerThread, data: bytes) -> int:
    return httpx.post(f"{server.http_url}/v1/traces", content=data, headers=PROTOBUF).status_code


def test_slow_loris_headers_are_cut_off_and_honest_senders_go_on(
    start_server: Callable[..., ServerThread], intake: ListIntake
) -> None:
    server = start_server(request_timeout_s=TIMEOUT_S)
    port = port_of(server)
    with ExitStack() as stack:
        loris = [stack.enter_context(connection(port, PARTIAL_HEADERS)) for _ in range(50)]
        # Meanwhile a real exporter is served at once.
        assert post(server, body(3)) == 200
        started = time.monotonic()
        assert all(closed_by_server(sock) for sock in loris)
        assert time.monotonic() - started < SLACK_S
    assert len(intake.spans) == 3


def test_a_connection_that_never_speaks_is_closed(
    start_server: Callable[..., ServerThread],
) -> None:
    server = start_server(request_timeout_s=TIMEOUT_S)
    with connection(port_of(server)) as sock:
        assert closed_by_server(sock)


def test_keep_alive_does_not_reopen_the_door(start_server: Callable[..., ServerThread]) -> None:
    """After one honest request, a trickled second request on the same connection is cut."""
    server = start_server(request_timeout_s=TIMEOUT_S)
    data = body()
    request = (
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-protobuf\r\n"
        + f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    with connection(port_of(server), request) as sock:
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.sendall(PARTIAL_HEADERS)
        assert closed_by_server(sock)


def test_slow_body_is_408_within_the_deadline(
    start_server: Callable[..., ServerThread], intake: ListIntake, registry: CollectorRegistry
) -> None:
    server = start_server(request_timeout_s=TIMEOUT_S)
    headers = (
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n"
    )
    with connection(port_of(server), headers + b"\x0a\x00") as sock:
        started = time.monotonic()
        answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
        assert time.monotonic() - started < SLACK_S
    assert intake.offers == 0
    assert sample(registry, "tracescore_receiver_requests_total",
                  transport="http", signal="traces", code="408") == 1  # fmt: skip


def test_connections_beyond_the_cap_get_503_until_they_close(
    start_server: Callable[..., ServerThread],
) -> None:
    server = start_server(request_timeout_s=30.0, max_connections=4)
    port = port_of(server)
    with ExitStack() as stack:
        for _ in range(4):
            stack.enter_context(connection(port, PARTIAL_HEADERS))
        assert post(server, body()) == 503
    # The held connections are gone: honest senders are served again.
    deadline = time.monotonic() + SLACK_S
    while (status := post(server, body())) == 503 and time.monotonic() < deadline:
        time.sleep(0.05)  # the server notices the closed sockets on its own loop
    assert status == 200


def test_request_flood_beyond_the_intake_is_429_never_a_crash(
    start_server: Callable[..., ServerThread], intake: ListIntake
) -> None:
    intake.capacity = 100  # records: fills after 50 requests of 2 spans
    server = start_server()
    data = body()
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def sender() -> None:
        with httpx.Client() as client:
            for _ in range(40):
                code = client.post(
                    f"{server.http_url}/v1/traces", content=data, headers=PROTOBUF
                ).status_code
                with lock:
                    statuses[code] += 1

    threads = [threading.Thread(target=sender) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(statuses) == {200, 429}
    assert statuses[200] == 50 and statuses[429] == 8 * 40 - 50
    assert len(intake.spans) == 100
    assert httpx.get(f"{server.http_url}/healthz").status_code == 200


def test_grpc_connection_that_never_handshakes_is_closed(
    start_server: Callable[..., ServerThread],
) -> None:
    server = start_server(request_timeout_s=TIMEOUT_S)
    assert server.server is not None and server.server.grpc_port is not None
    with connection(server.server.grpc_port, b"PRI * HTTP/2.0\r\n") as sock:
        started = time.monotonic()
        while not closed_by_server(sock):  # the server's own SETTINGS frame comes first
            assert time.monotonic() - started < SLACK_S
