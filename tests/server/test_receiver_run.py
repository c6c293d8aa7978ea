"""``run()`` in a real process: serve, take traffic, SIGTERM/SIGINT, drain, exit status."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_helpers import agent_spans

from tracescore.server import run

SCRIPT = Path(__file__).with_name("serve_script.py")
EXIT_DEADLINE_S = 30


class Serving:
    """``serve_script.py`` running in a child process, with its bound ports."""

    def __init__(self, marker: Path, mode: str, drain_timeout_s: float) -> None:
        self.marker = marker
        self.process = subprocess.Popen(
            [sys.executable, str(SCRIPT), str(marker), mode, str(drain_timeout_s)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # blocks until started (or EOF if it died)
        if not line.startswith("PORTS "):
            self.process.kill()
            _, err = self.process.communicate()
            raise AssertionError(f"serve_script did not start: {line!r}\n{err}")
        http, grpc = line.split()[1:]
        self.http_port, self.grpc_port = int(http), int(grpc)

    def stop(self, sig: signal.Signals) -> tuple[int, float, str]:
        """Send ``sig``; the exit status, seconds to exit, and stderr."""
        started = time.monotonic()
        self.process.send_signal(sig)
        _, err = self.process.communicate(timeout=EXIT_DEADLINE_S)
        return self.process.returncode, time.monotonic() - started, err

    def state(self) -> dict[str, object]:
        state: dict[str, object] = json.loads(self.marker.read_text(encoding="utf-8"))
        return state


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[list[Serving]]:
    started: list[Serving] = []
    yield started
    for child in started:
        if child.process.poll() is None:
            child.process.kill()
            child.process.communicate()


def start(serving: list[Serving], tmp_path: Path, mode: str, drain_timeout_s: float) -> Serving:
    child = Serving(tmp_path / "drained.json", mode, drain_timeout_s)
    serving.append(child)
    return child


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_drains_and_exits_0(
    serving: list[Serving], tmp_path: Path, sig: signal.Signals
) -> None:
    child = start(serving, tmp_path, "ok", drain_timeout_s=10.0)
    spans = agent_spans(2)
    http = HttpSpans(endpoint=f"http://127.0.0.1:{child.http_port}/v1/traces", timeout=10)
    grpc = GrpcSpans(endpoint=f"127.0.0.1:{child.grpc_port}", insecure=True, timeout=10)
    try:
        assert http.export(spans) is SpanExportResult.SUCCESS
        assert grpc.export(spans) is SpanExportResult.SUCCESS
    finally:
        http.shutdown()  # type: ignore[no-untyped-call]  # OTLP/HTTP exporter: unannotated
        grpc.shutdown()

    code, elapsed, err = child.stop(sig)

    assert code == 0, err
    assert elapsed < 10
    state = child.state()
    assert state["spans"] == 2 * len(spans)
    assert state["draining"] is True
    assert state["thread"] == "tracescore-drain"
    assert 0 < state["timeout_s"] <= 10.0  # type: ignore[operator]
    assert "shutting down" in err
    assert "drained; shutdown complete" in err


def test_drain_reporting_unfinished_exits_1(serving: list[Serving], tmp_path: Path) -> None:
    child = start(serving, tmp_path, "late", drain_timeout_s=2.0)
    code, _, err = child.stop(signal.SIGTERM)
    assert code == 1, err
    assert "drain did not finish within" in err
    assert child.state()["spans"] == 0


def test_drain_that_never_returns_is_abandoned_at_the_deadline(
    serving: list[Serving], tmp_path: Path
) -> None:
    child = start(serving, tmp_path, "hang", drain_timeout_s=1.0)
    code, elapsed, err = child.stop(signal.SIGTERM)
    assert code == 1, err
    assert "drain abandoned" in err
    # drain_timeout_s plus the one second of slack, and process exit, not forever.
    assert 1.0 <= elapsed < 10
    assert child.state()["timeout_s"] <= 1.0  # type: ignore[operator]


def test_second_signal_abandons_the_drain(serving: list[Serving], tmp_path: Path) -> None:
    child = start(serving, tmp_path, "hang", drain_timeout_s=60.0)
    started = time.monotonic()
    child.process.send_signal(signal.SIGTERM)
    child.process.send_signal(signal.SIGINT)  # queued even if the first is still handled
    _, err = child.process.communicate(timeout=EXIT_DEADLINE_S)
    assert child.process.returncode == 1, err
    assert time.monotonic() - started < 30
    assert "a second signal arrived" in err


def test_run_in_process_stops_on_sigterm_and_drains() -> None:
    """In pytest's main thread: on_started signals this very process."""
    from prometheus_client import CollectorRegistry
    from server_helpers import ListIntake

    from tracescore.server import OTLPServer, ServeOptions

    intake = ListIntake()
    ports: list[int | None] = []

    def started(server: OTLPServer) -> None:
        ports.extend((server.http_port, server.grpc_port))
        os.kill(os.getpid(), signal.SIGTERM)

    options = ServeOptions(http_port=0, grpc_port=0, drain_timeout_s=5.0)
    code = run(intake, registry=CollectorRegistry(), options=options, on_started=started)
    assert code == 0
    assert len(intake.drain_calls) == 1
    assert 0 < intake.drain_calls[0] <= 5.0
    assert all(ports)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", ports[0])) != 0  # closed again


def test_on_started_error_stops_the_server_and_propagates() -> None:
    from prometheus_client import CollectorRegistry
    from server_helpers import ListIntake

    from tracescore.server import OTLPServer, ServeOptions

    ports: list[int | None] = []

    def started(server: OTLPServer) -> None:
        ports.append(server.http_port)
        raise ValueError("boom")

    options = ServeOptions(http_port=0, grpc_port=None)
    with pytest.raises(ValueError, match="boom"):
        run(ListIntake(), registry=CollectorRegistry(), options=options, on_started=started)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", ports[0])) != 0


def test_run_outside_the_main_thread_is_refused() -> None:
    import threading

    from prometheus_client import CollectorRegistry
    from server_helpers import ListIntake

    from tracescore.server import ServeOptions

    errors: list[BaseException] = []

    def call() -> None:
        try:
            run(ListIntake(), registry=CollectorRegistry(), options=ServeOptions(http_port=0))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join(30)
    assert len(errors) == 1
    assert isinstance(errors[0], RuntimeError)
    assert "main thread" in str(errors[0])
