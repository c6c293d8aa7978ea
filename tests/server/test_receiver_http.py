"""OTLP/HTTP edge cases over a real socket with httpx: encodings, limits, errors, health."""

from __future__ import annotations

import dataclasses
import gzip
import json
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Iterator

import httpx
import pytest
import zstandard
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import agent_logs, agent_spans, to_collector_json
from server_helpers import ListIntake, ServerThread, big_request, sample
from starlette.testclient import TestClient

from tracescore.formats.sdk import from_readable_span
from tracescore.spans import Origin, SpanRecord

PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
SMALL_LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def spans() -> list[ReadableSpan]:
    return agent_spans(1)


@pytest.fixture(scope="module")
def logs() -> list[ReadableLogRecord]:
    return agent_logs()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as http:
        yield http


def requests_counted(server: ServerThread, code: str, signal: str = "traces") -> float:
    return sample(
        server.registry,
        "tracescore_receiver_requests_total",
        transport="http",
        signal=signal,
        code=code,
    )


def traces_json(spans: list[ReadableSpan]) -> dict[str, object]:
    return to_collector_json(encode_spans(spans))


def sorted_ids(records: Iterable[SpanRecord]) -> list[str]:
    return sorted(record.span_id for record in records)


# --- encodings -----------------------------------------------------------------------------


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_otlp_json_traces_are_decoded_like_files(
    server: ServerThread,
    intake: ListIntake,
    client: httpx.Client,
    spans: list[ReadableSpan],
    compressed: bool,
) -> None:
    body = json.dumps(traces_json(spans)).encode()
    headers = dict(JSON)
    if compressed:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {}
    expected = [
        dataclasses.replace(from_readable_span(span), origin=Origin("otlp-http")) for span in spans
    ]
    key = lambda record: record.span_id  # noqa: E731
    assert sorted(intake.spans, key=key) == sorted(expected, key=key)


def test_otlp_json_logs(
    server: ServerThread, intake: ListIntake, client: httpx.Client, logs: list[ReadableLogRecord]
) -> None:
    body = json.dumps(to_collector_json(encode_logs(logs)))
    response = client.post(f"{server.http_url}/v1/logs", content=body, headers=JSON)
    assert (response.status_code, response.json()) == (200, {})
    assert [log.name for log in intake.logs] == ["gen_ai.user.message", "gen_ai.choice", None]
    assert requests_counted(server, "200", "logs") == 1


def test_lone_surrogate_escapes_in_json_are_replacement_characters(
    server: ServerThread, intake: ListIntake, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    # JavaScript's JSON.stringify escapes half an emoji as \\ud83d; the Collector's Go
    # reader takes it as U+FFFD, so does the receiver (the whole request was a 400).
    doc = traces_json(spans)
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]  # type: ignore[index]
    span["attributes"].append({"key": "cut", "value": {"stringValue": "cut \ud83d"}})
    body = json.dumps(doc)
    assert "\\ud83d" in body
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=JSON)
    assert (response.status_code, response.json()) == (200, {})
    assert len(intake.spans) == len(spans)
    [cut] = [record for record in intake.spans if "cut" in record.attributes]
    assert (cut.span_id, cut.attributes["cut"]) == (span["spanId"], "cut \ufffd")


def test_protobuf_strings_that_are_not_utf8_read_as_replacement_characters(
    server: ServerThread, intake: ListIntake, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    # The Collector passes such strings on unchecked; protobuf's Python runtime refused the
    # whole request for one, a 400 that lost every span of the batch.
    body = encode_spans(spans).SerializeToString().replace(b"get_weather", b"get\xffweather")
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=PROTOBUF)
    assert response.status_code == 200
    assert not ExportTraceServiceResponse.FromString(response.content).HasField("partial_success")
    assert sorted_ids(intake.spans) == sorted(f"{s.context.span_id:016x}" for s in spans)
    assert any(record.name == "execute_tool get\ufffdweather_0" for record in intake.spans)


def test_protobuf_answer_is_an_export_response(
    server: ServerThread, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    body = encode_spans(spans).SerializeToString()
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=PROTOBUF)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success")


def test_deflate_encoding_is_accepted(
    server: ServerThread, intake: ListIntake, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    body = zlib.compress(encode_spans(spans).SerializeToString())
    headers = {**PROTOBUF, "Content-Encoding": "deflate"}
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=headers)
    assert response.status_code == 200
    assert len(intake.spans) == len(spans)


def test_zstd_encoding_is_accepted(
    server: ServerThread, intake: ListIntake, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    # The Collector's otlphttp exporter with `compression: zstd`.
    body = zstandard.ZstdCompressor().compress(encode_spans(spans).SerializeToString())
    headers = {**PROTOBUF, "Content-Encoding": "zstd"}
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=headers)
    assert response.status_code == 200
    assert len(intake.spans) == len(spans)
    cut = {**PROTOBUF, "Content-Encoding": "zstd"}
    response = client.post(f"{server.http_url}/v1/traces", content=body[:-4], headers=cut)
    assert response.status_code == 400
    assert (
        "truncated" in response.json()["message"]
        if response.headers["content-type"].startswith("application/json")
        else b"truncated" in response.content
    )


def test_large_gzip_request_is_decoded_in_the_worker(
    server: ServerThread, intake: ListIntake, client: httpx.Client
) -> None:
    body = gzip.compress(big_request().SerializeToString())
    headers = {**PROTOBUF, "Content-Encoding": "gzip"}
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=headers)
    assert response.status_code == 200
    assert len(intake.spans) == 300


def test_empty_request_is_an_empty_success(
    server: ServerThread, intake: ListIntake, client: httpx.Client
) -> None:
    response = client.post(f"{server.http_url}/v1/traces", content=b"", headers=PROTOBUF)
    assert response.status_code == 200
    response = client.post(f"{server.http_url}/v1/traces", content=b"{}", headers=JSON)
    assert (response.status_code, response.json()) == (200, {})
    assert intake.offers == 0


# --- malformed requests -------------------------------------------------------------------


def test_malformed_protobuf_is_400_with_a_status_message(
    server: ServerThread, intake: ListIntake, client: httpx.Client
) -> None:
    response = client.post(
        f"{server.http_url}/v1/traces", content=b"\x0a\x05\x12\x03\xff\xff\xff", headers=PROTOBUF
    )
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/x-protobuf"
    status = Status.FromString(response.content)
    assert status.code == 3  # INVALID_ARGUMENT
    assert "invalid protobuf ExportTraceServiceRequest" in status.message
    assert intake.offers == 0
    assert requests_counted(server, "400") == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"resourceSpans": [', "invalid JSON"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b'{"spans": []}', "no resourceSpans (keys: spans)"),
    ],
    ids=["truncated", "array", "not-otlp"],
)
def test_malformed_json_is_400_with_a_json_status(
    server: ServerThread, client: httpx.Client, body: bytes, expected: str
) -> None:
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=JSON)
    assert response.status_code == 400
    assert response.json()["code"] == 3
    assert expected in response.json()["message"]


def test_corrupt_gzip_is_400(server: ServerThread, client: httpx.Client) -> None:
    headers = {**PROTOBUF, "Content-Encoding": "gzip"}
    response = client.post(f"{server.http_url}/v1/traces", content=b"not gzip", headers=headers)
    assert response.status_code == 400
    assert "invalid compressed body" in Status.FromString(response.content).message


def test_truncated_gzip_is_400(
    server: ServerThread, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    body = gzip.compress(encode_spans(spans).SerializeToString())[:-12]
    headers = {**PROTOBUF, "Content-Encoding": "gzip"}
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=headers)
    assert response.status_code == 400
    assert "truncated" in Status.FromString(response.content).message


@pytest.mark.parametrize("content_type", ["text/plain", "application/protobuf", None])
def test_wrong_content_type_is_415(
    server: ServerThread, intake: ListIntake, client: httpx.Client, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = client.post(f"{server.http_url}/v1/traces", content=b"{}", headers=headers)
    assert response.status_code == 415
    assert "application/x-protobuf" in response.text
    assert intake.offers == 0
    assert requests_counted(server, "415") == 1


def test_unsupported_content_encoding_is_415(server: ServerThread, client: httpx.Client) -> None:
    headers = {**JSON, "Content-Encoding": "br"}
    response = client.post(f"{server.http_url}/v1/traces", content=b"{}", headers=headers)
    assert response.status_code == 415
    assert "unsupported Content-Encoding 'br'" in response.json()["message"]


def test_other_methods_are_405(server: ServerThread, client: httpx.Client) -> None:
    assert client.get(f"{server.http_url}/v1/traces").status_code == 405
    assert client.put(f"{server.http_url}/v1/logs", content=b"").status_code == 405
    assert client.post(f"{server.http_url}/metrics").status_code == 405


def test_json_request_without_token_gets_401_in_json(
    start_server: Callable[..., ServerThread], intake: ListIntake, client: httpx.Client
) -> None:
    server = start_server(auth_token="tok")
    response = client.post(f"{server.http_url}/v1/traces", content=b"{}", headers=JSON)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json() == {"code": 16, "message": "missing or invalid bearer token"}
    headers = {**JSON, "Authorization": "bearer tok"}  # the scheme is case-insensitive
    assert client.post(f"{server.http_url}/v1/traces", content=b"{}", headers=headers).is_success
    # Health and metrics stay open.
    assert client.get(f"{server.http_url}/metrics").status_code == 200
    assert client.get(f"{server.http_url}/readyz").status_code == 200


# --- limits ---------------------------------------------------------------------------------


def test_declared_length_over_the_limit_is_413_before_reading(
    start_server: Callable[..., ServerThread], intake: ListIntake, client: httpx.Client
) -> None:
    server = start_server(max_request_bytes=SMALL_LIMIT)
    response = client.post(
        f"{server.http_url}/v1/traces", content=b"\0" * (2 * SMALL_LIMIT), headers=PROTOBUF
    )
    assert response.status_code == 413
    assert "exceeds the limit of 65536" in Status.FromString(response.content).message
    assert intake.offers == 0
    assert requests_counted(server, "413") == 1


def test_chunked_body_over_the_limit_is_413(
    start_server: Callable[..., ServerThread], intake: ListIntake, client: httpx.Client
) -> None:
    server = start_server(max_request_bytes=SMALL_LIMIT)

    def chunks() -> Iterator[bytes]:
        for _ in range(8):
            yield b"\0" * (SMALL_LIMIT // 4)

    request = client.build_request(
        "POST", f"{server.http_url}/v1/traces", content=chunks(), headers=JSON
    )
    assert "content-length" not in request.headers
    assert request.headers["transfer-encoding"] == "chunked"
    response = client.send(request)
    assert response.status_code == 413
    assert "exceeds the limit" in response.json()["message"]
    assert intake.offers == 0


def test_body_exactly_at_the_limit_is_accepted(
    start_server: Callable[..., ServerThread], client: httpx.Client
) -> None:
    server = start_server(max_request_bytes=SMALL_LIMIT)
    body = b"{}" + b" " * (SMALL_LIMIT - 2)
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=JSON)
    assert response.status_code == 200


def gzip_of_zeros(size: int) -> bytes:
    """gzip of ``size`` zero bytes, built without holding them in memory."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    parts.append(packer.flush())
    return b"".join(parts)


def test_gzip_bomb_is_413_quickly_and_within_bounded_memory(
    server: ServerThread, intake: ListIntake, client: httpx.Client
) -> None:
    bomb = gzip_of_zeros(100 * 1024 * 1024)  # 100 MB inflated, ~100 KB on the wire
    assert len(bomb) < 200 * 1024
    headers = {**PROTOBUF, "Content-Encoding": "gzip"}
    tracemalloc.start()
    try:
        started = time.perf_counter()
        response = client.post(f"{server.http_url}/v1/traces", content=bomb, headers=headers)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 413
    assert "decompressed request body exceeds" in Status.FromString(response.content).message
    assert elapsed < 10
    # The default limit is 8 MiB; inflating the whole bomb would take 100 MB.
    assert peak < 32 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
    assert intake.offers == 0


# --- the intake's answer ------------------------------------------------------------------


def test_queue_full_is_429_with_retry_after(
    server: ServerThread, intake: ListIntake, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    intake.refuse = True
    body = encode_spans(spans).SerializeToString()
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=PROTOBUF)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    status = Status.FromString(response.content)
    assert (status.code, status.message) == (8, "receiver queue is full; retry later")
    assert requests_counted(server, "429") == 1
    assert sample(
        server.registry,
        "tracescore_receiver_records_total",
        transport="http",
        signal="traces",
        outcome="refused",
    ) == len(spans)
    intake.refuse = False
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=PROTOBUF)
    assert response.status_code == 200


def test_partial_success_names_the_bad_span_json(
    server: ServerThread, intake: ListIntake, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    doc = traces_json(spans)
    bad = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]  # type: ignore[index]
    bad["traceId"] = "not-a-trace-id"
    response = client.post(f"{server.http_url}/v1/traces", content=json.dumps(doc), headers=JSON)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert bad["spanId"] in partial["errorMessage"]
    assert "traceId" in partial["errorMessage"]
    assert len(intake.spans) == len(spans) - 1
    assert bad["spanId"] not in sorted_ids(intake.spans)


def test_partial_success_names_the_bad_span_protobuf(
    server: ServerThread, intake: ListIntake, client: httpx.Client, spans: list[ReadableSpan]
) -> None:
    request = encode_spans(spans)
    bad = request.resource_spans[0].scope_spans[0].spans[0]
    bad.trace_id = b"\x01\x02\x03"
    body = request.SerializeToString()
    response = client.post(f"{server.http_url}/v1/traces", content=body, headers=PROTOBUF)
    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 1
    assert bad.span_id.hex() in partial.error_message
    assert "invalid trace_id '010203'" in partial.error_message
    assert len(intake.spans) == len(spans) - 1


def test_partial_success_for_logs(
    server: ServerThread, intake: ListIntake, client: httpx.Client, logs: list[ReadableLogRecord]
) -> None:
    request: ExportLogsServiceRequest = encode_logs(logs)
    request.resource_logs[0].scope_logs[0].log_records[0].span_id = b"\x01"
    body = json.dumps(to_collector_json(request))
    response = client.post(f"{server.http_url}/v1/logs", content=body, headers=JSON)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    assert "spanId" in partial["errorMessage"]
    assert len(intake.logs) == len(logs) - 1


def test_all_spans_bad_is_still_200_and_offers_nothing(
    server: ServerThread, intake: ListIntake, client: httpx.Client
) -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"", "no span id"
    response = client.post(
        f"{server.http_url}/v1/traces", content=request.SerializeToString(), headers=PROTOBUF
    )
    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 1
    assert "invalid span_id" in partial.error_message
    assert intake.offers == 0


# --- metrics and health -------------------------------------------------------------------


def test_metrics_serves_the_registry_as_text_and_openmetrics(
    server: ServerThread, client: httpx.Client
) -> None:
    client.post(f"{server.http_url}/v1/traces", content=b"{}", headers=JSON)
    text = client.get(f"{server.http_url}/metrics")
    assert text.status_code == 200
    assert text.headers["content-type"].startswith("text/plain; version=0.0.4")
    line = 'tracescore_receiver_requests_total{code="200",signal="traces",transport="http"} 1.0'
    assert line in text.text
    open_metrics = client.get(
        f"{server.http_url}/metrics",
        headers={"Accept": "application/openmetrics-text; version=1.0.0"},
    )
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert open_metrics.text.endswith("# EOF\n")
    assert "tracescore_receiver_requests_total" in open_metrics.text


def test_health_and_readiness(
    server: ServerThread, intake: ListIntake, client: httpx.Client
) -> None:
    url = server.http_url
    assert (client.get(f"{url}/healthz").status_code, client.get(f"{url}/readyz").text) == (
        200,
        "ready",
    )
    intake.is_ready = False
    not_ready = client.get(f"{url}/readyz")
    assert (not_ready.status_code, not_ready.text) == (503, "intake not ready")
    intake.is_ready = True
    assert client.get(f"{url}/readyz").status_code == 200

    async def begin_draining() -> None:
        assert server.server is not None
        server.server.begin_draining()

    server.call(begin_draining())
    draining = client.get(f"{url}/readyz")
    assert (draining.status_code, draining.text) == (503, "draining")
    assert client.get(f"{url}/healthz").status_code == 200
    # Still serving while draining: readiness only steers the load balancer.
    assert client.post(f"{url}/v1/traces", content=b"{}", headers=JSON).status_code == 200


def test_http_app_works_without_listeners(intake: ListIntake) -> None:
    from prometheus_client import CollectorRegistry

    from tracescore.server import OTLPServer, ServeOptions

    otlp = OTLPServer(intake, registry=CollectorRegistry(), options=ServeOptions())
    app = otlp.http_app()
    assert otlp.http_app() is app
    with TestClient(app) as test_client:
        assert test_client.get("/readyz").status_code == 503
        assert test_client.get("/readyz").text == "not started"
        assert test_client.get("/healthz").status_code == 200
        body = encode_spans(agent_spans(1)).SerializeToString()
        assert test_client.post("/v1/traces", content=body, headers=PROTOBUF).status_code == 200
    assert len(intake.spans) == 4
