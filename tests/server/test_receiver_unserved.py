"""Metrics and profiles sent to the receiver: refused, with a message naming the pipeline.

A Collector whose metrics pipeline also lists the tracescore exporter is the mistake
these tests stand for. The real OTel metric exporters (HTTP and gRPC) send real SDK
metrics; profiles, which no Python SDK exports, go as raw requests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import grpc  # type: ignore[import-untyped]  # no stubs (as in src/tracescore/server/grpc.py)
import httpx
import orjson
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetrics,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetrics,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult, MetricsData
from server_helpers import ListIntake, ServerThread, sample

PROFILES_GRPC = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
METRICS_GRPC = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"


@pytest.fixture(scope="module")
def metrics_data() -> MetricsData:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    provider.get_meter("agent").create_counter("tool_calls").add(3, {"tool": "get_weather"})
    data = reader.get_metrics_data()
    provider.shutdown()
    assert data is not None
    return data


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as http:
        yield http


def counted(server: ServerThread, transport: str, signal: str, code: str) -> float:
    return sample(
        server.registry,
        "tracescore_receiver_requests_total",
        transport=transport,
        signal=signal,
        code=code,
    )


def test_real_http_metric_exporter_is_refused_with_a_status_naming_the_pipeline(
    server: ServerThread,
    intake: ListIntake,
    metrics_data: MetricsData,
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter = HttpMetrics(endpoint=f"{server.http_url}/v1/metrics", timeout=10)
    try:
        with caplog.at_level(logging.DEBUG, logger="tracescore.server.unserved"):
            assert exporter.export(metrics_data) is MetricExportResult.FAILURE
            # What the exporter read: a google.rpc.Status, as OTLP says a 4xx carries.
            answer = client.post(
                f"{server.http_url}/v1/metrics",
                content=b"",
                headers={"Content-Type": "application/x-protobuf"},
            )
    finally:
        exporter.shutdown()
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/x-protobuf"
    status = Status.FromString(answer.content)
    assert status.code == 12  # UNIMPLEMENTED
    assert "not metrics" in status.message
    assert "Collector's metrics pipeline" in status.message
    # One try only (404 is not retryable), then the probe: both counted, nothing queued.
    assert counted(server, "http", "metrics", "404") == 2
    assert intake.spans == [] and intake.logs == []
    # First one at WARNING, the next at DEBUG: a pipeline sends every few seconds.
    levels = [r.levelno for r in caplog.records if "/v1/metrics" in r.getMessage()]
    assert levels == [logging.WARNING, logging.DEBUG]


def test_json_request_to_an_unserved_signal_gets_a_json_status(
    server: ServerThread, client: httpx.Client
) -> None:
    answer = client.post(
        f"{server.http_url}/v1development/profiles",
        content=b"{}",
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 404
    body = orjson.loads(answer.content)
    assert body["code"] == 12
    assert "not profiles" in body["message"]
    assert counted(server, "http", "profiles", "404") == 1


def test_unserved_signal_paths_take_only_post(server: ServerThread, client: httpx.Client) -> None:
    assert client.get(f"{server.http_url}/v1/metrics").status_code == 405
    assert counted(server, "http", "metrics", "404") == 0


def test_unknown_path_lists_the_served_ones(server: ServerThread, client: httpx.Client) -> None:
    # A Collector's traces_endpoint set to the bare host posts to "/".
    plain = client.post(f"{server.http_url}/", content=b"x")
    assert plain.status_code == 404
    assert plain.text.endswith(
        "served: POST /v1/traces, POST /v1/logs, GET /metrics, GET /healthz, GET /readyz"
    )
    proto = client.post(
        f"{server.http_url}/v1/trace",
        content=b"",
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert proto.status_code == 404
    assert "no endpoint /v1/trace;" in Status.FromString(proto.content).message


def test_real_grpc_metric_exporter_is_refused_unimplemented(
    server: ServerThread, intake: ListIntake, metrics_data: MetricsData
) -> None:
    exporter = GrpcMetrics(endpoint=server.grpc_target, insecure=True, timeout=10)
    try:
        assert exporter.export(metrics_data) is MetricExportResult.FAILURE
    finally:
        exporter.shutdown()
    with (
        grpc.insecure_channel(server.grpc_target) as channel,
        pytest.raises(grpc.RpcError) as caught,
    ):
        channel.unary_unary(METRICS_GRPC)(b"", timeout=10)
    assert caught.value.code() is grpc.StatusCode.UNIMPLEMENTED
    assert "Collector's metrics pipeline" in caught.value.details()
    assert counted(server, "grpc", "metrics", "UNIMPLEMENTED") == 2
    assert intake.spans == [] and intake.logs == []


def test_grpc_profiles_are_refused_without_asking_for_the_token(
    start_server: Callable[..., ServerThread], caplog: pytest.LogCaptureFixture
) -> None:
    server = start_server(auth_token="s3cret")
    with (
        caplog.at_level(logging.DEBUG, logger="tracescore.server.unserved"),
        grpc.insecure_channel(server.grpc_target) as channel,
    ):
        for _ in range(2):
            with pytest.raises(grpc.RpcError) as caught:
                channel.unary_unary(PROFILES_GRPC)(b"\x0a\x00", timeout=10)
    assert caught.value.code() is grpc.StatusCode.UNIMPLEMENTED
    assert "not profiles" in caught.value.details()
    assert counted(server, "grpc", "profiles", "UNIMPLEMENTED") == 2
    logged = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in logged] == [logging.WARNING, logging.DEBUG]
    assert logged[0][1].startswith("OTLP/gRPC " + PROFILES_GRPC[1:] + " refused: ")
