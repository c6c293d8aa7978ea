"""``tracescore serve`` end to end: real OTLP exporters → the running service → /metrics.

The service runs as a subprocess (its own signals and event loop), on free ports of
127.0.0.1 written to ``--ready-file``; agents are simulated with the real OTel SDK and
exported with opentelemetry-exporter-otlp's own exporters, over gRPC and HTTP.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from live_agent import run_agent
from live_fixtures import PARIS, write_goldens
from serve_process import Service, start_service


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    write_goldens(
        tmp_path, {"paris": (PARIS, [("get_weather", {"city": "Paris"})], "It is 21C in Paris.")}
    )
    svc = start_service(tmp_path, "--goldens", str(tmp_path / "live.evalset.json"))
    yield svc
    svc.stop()


def agent_provider(exporter: object) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[arg-type]
    return provider


def test_grpc_and_http_exporters_are_scored(service: Service) -> None:
    grpc = agent_provider(
        GrpcSpanExporter(endpoint=f"127.0.0.1:{service.grpc_port}", insecure=True)
    )
    http = agent_provider(
        HttpSpanExporter(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces")
    )
    for provider in (grpc, http):
        tracer = provider.get_tracer("agent")
        run_agent(tracer)  # matches the golden: passes
        run_agent(tracer, tools=[("get_weather", {"city": "Rome"}, "25C")])  # fails
        run_agent(tracer, user="never seen")  # no golden
        provider.shutdown()
    key = ("tracescore_traces_total", (("outcome", "no_golden"),))
    metrics = service.wait_for(key, 2)
    inv = "tracescore_invocations_total"
    agent = ("agent", "weather_agent")
    assert metrics[(inv, (agent, ("outcome", "scored")))] == 4
    assert metrics[(inv, (agent, ("outcome", "no_golden")))] == 2
    traj = (agent, ("criterion", "tool_trajectory_avg_score"))
    assert metrics[("tracescore_evaluations_total", (*traj, ("status", "passed")))] == 2
    assert metrics[("tracescore_evaluations_total", (*traj, ("status", "failed")))] == 2
    assert metrics[("tracescore_spans_received_total", ())] == 6 * 4
    assert metrics[("tracescore_threshold", (("criterion", "response_match_score"),))] == 0.5
    requests = "tracescore_receiver_requests_total"
    by_transport = {
        dict(labels)["transport"]: v for (name, labels), v in metrics.items() if name == requests
    }
    assert by_transport == {"grpc": 12, "http": 12}  # SimpleSpanProcessor: one per span
    assert httpx.get(f"http://127.0.0.1:{service.http_port}/readyz").status_code == 200
    # OpenMetrics exposition carries the exemplars linking scores to traces
    om = httpx.get(
        f"http://127.0.0.1:{service.http_port}/metrics",
        headers={"Accept": "application/openmetrics-text; version=1.0.0"},
    ).text
    assert '# {trace_id="' in om


def test_sigterm_drains_and_exits_zero(service: Service) -> None:
    provider = agent_provider(
        HttpSpanExporter(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces")
    )
    for _ in range(5):
        run_agent(provider.get_tracer("agent"))
    provider.shutdown()
    service.proc.send_signal(signal.SIGTERM)
    assert service.proc.wait(timeout=60) == 0


def test_sigterm_mid_load_drains_within_its_deadline(tmp_path: Path) -> None:
    """Senders keep sending while SIGTERM arrives: the service stops taking records, scores
    what it holds and exits 0 well within --drain-timeout."""
    write_goldens(
        tmp_path, {"paris": (PARIS, [("get_weather", {"city": "Paris"})], "It is 21C in Paris.")}
    )
    svc = start_service(
        tmp_path, "--goldens", str(tmp_path / "live.evalset.json"), "--drain-timeout", "5"
    )
    stop = threading.Event()
    sent = threading.Semaphore(0)

    def sender() -> None:
        provider = agent_provider(
            HttpSpanExporter(endpoint=f"http://127.0.0.1:{svc.http_port}/v1/traces", timeout=2)
        )
        tracer = provider.get_tracer("agent")
        while not stop.is_set():
            run_agent(tracer)
            sent.release()
        provider.shutdown()

    threads = [threading.Thread(target=sender) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for _ in range(40):  # well into the load
            assert sent.acquire(timeout=60)
        started = time.monotonic()
        svc.proc.send_signal(signal.SIGTERM)
        assert svc.proc.wait(timeout=60) == 0  # everything taken in was scored
        assert time.monotonic() - started < 5 + 3  # the deadline, plus process exit
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        svc.stop()


def test_bad_settings_exit_2_with_one_line(tmp_path: Path) -> None:
    settings = tmp_path / "bad.toml"
    settings.write_text("[sampling]\nrate = 3\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tracescore", "--settings", str(settings), "serve"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1
    assert "sampling.rate" in proc.stderr.decode()


def test_a_taken_port_or_unwritable_ready_file_exit_2_with_one_line(tmp_path: Path) -> None:
    import socket

    def serve(*args: str) -> subprocess.CompletedProcess[bytes]:
        cmd = [sys.executable, "-m", "tracescore", "serve", "--grpc-port", "-1", *args]
        return subprocess.run(cmd, capture_output=True, timeout=60, check=False, cwd=tmp_path)

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = serve("--http-port", str(port))
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert stderr.count("\n") == 1
    assert f"error: serve: cannot listen for OTLP/HTTP on 127.0.0.1:{port}" in stderr
    missing = tmp_path / "gone" / "ready.json"
    proc = serve("--http-port", "0", "--ready-file", str(missing))
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert stderr == f"error: {missing}: directory {missing.parent} does not exist\n"
