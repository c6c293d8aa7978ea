"""Evaluation results as ``gen_ai.evaluation.result`` events: in memory, then over real OTLP."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc  # type: ignore[import-untyped]  # no stubs (as in src/tracescore/server/grpc.py)
import pytest
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord as ProtoLogRecord
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import TraceFlags

import tracescore
from tracescore.criteria.base import CriterionResult
from tracescore.exceptions import ConfigError
from tracescore.model import Invocation
from tracescore.scoring import GoldenTurn, InvocationResult, Outcome
from tracescore.sinks.otel_events import EVENT_NAME, EvaluationEventSink

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
ROOT_SPAN_ID = "b7ad6b7169203331"

#: Every piece of prompt/completion text below contains this marker.
SECRET = "SECRET"

RESULTS = (
    CriterionResult(
        criterion="tool_trajectory_avg_score",
        version="1",
        score=1.0,
        status="passed",
        threshold=1.0,
    ),
    CriterionResult(
        criterion="response_match_score",
        version="2",
        score=0.25,
        status="failed",
        threshold=0.8,
    ),
    CriterionResult(
        criterion="final_response_match_v2",
        version="1",
        score=1.0,
        status="passed",
        threshold=0.5,
        details={
            "votes": ["valid", "valid"],
            "rationales": ["SECRET rationale one", "SECRET rationale two"],
            "failed_samples": 0,
        },
    ),
    CriterionResult(
        criterion="rubric_based_final_response_quality_v1",
        version="1",
        score=None,
        status="not_evaluated",
        threshold=0.8,
        reason="judge timeout",
        details={"error": "SECRET provider reply"},
    ),
    CriterionResult(
        criterion="safety_v1",
        version="1",
        score=None,
        status="not_evaluated",
        threshold=0.5,
        reason="criterion error: KeyError: 'SECRET user text'",
    ),
    CriterionResult(
        criterion="response_evaluation_score",
        version="1",
        score=None,
        status="not_evaluated",
        threshold=None,
        reason="no golden",
    ),
    CriterionResult(
        criterion="tool_call_count",
        version="1",
        score=2.0,
        status="informational",
        threshold=None,
    ),
)


def invocation(**kw: Any) -> Invocation:
    fields: dict[str, Any] = {
        "trace_id": TRACE_ID,
        "invocation_id": "e-42",
        "root_span_id": ROOT_SPAN_ID,
        "conversation_id": "session-7",
        "agent": "weather_agent",
        "user_content": "SECRET question: weather in Paris?",
        "final_response": "SECRET answer: sunny",
    }
    fields.update(kw)
    return Invocation(**fields)


def scored(
    inv: Invocation | None = None,
    results: Sequence[CriterionResult] = RESULTS,
    *,
    golden: GoldenTurn | None = None,
    outcome: Outcome = "judge_error",
) -> InvocationResult:
    return InvocationResult(
        invocation=inv or invocation(),
        golden=golden or GoldenTurn(eval_set_id="weather", eval_id="paris", turn=1),
        expected=None,
        outcome=outcome,
        reason=None,
        results=tuple(results),
    )


SHARED = {
    "tracescore.outcome": "judge_error",
    "tracescore.invocation.id": "e-42",
    "gen_ai.agent.name": "weather_agent",
    "gen_ai.conversation.id": "session-7",
    "tracescore.golden.eval_set_id": "weather",
    "tracescore.golden.eval_id": "paris",
    "tracescore.golden.turn": 1,
}

#: The attributes each of RESULTS gives by default (content excluded), in order.
EXPECTED = [
    {
        "gen_ai.evaluation.name": "tool_trajectory_avg_score",
        "gen_ai.evaluation.score.label": "passed",
        "gen_ai.evaluation.score.value": 1.0,
        "tracescore.criterion.version": "1",
        "tracescore.criterion.threshold": 1.0,
        **SHARED,
    },
    {
        "gen_ai.evaluation.name": "response_match_score",
        "gen_ai.evaluation.score.label": "failed",
        "gen_ai.evaluation.score.value": 0.25,
        "tracescore.criterion.version": "2",
        "tracescore.criterion.threshold": 0.8,
        **SHARED,
    },
    {
        "gen_ai.evaluation.name": "final_response_match_v2",
        "gen_ai.evaluation.score.label": "passed",
        "gen_ai.evaluation.score.value": 1.0,
        "tracescore.criterion.version": "1",
        "tracescore.criterion.threshold": 0.5,
        **SHARED,
    },
    {
        "gen_ai.evaluation.name": "rubric_based_final_response_quality_v1",
        "gen_ai.evaluation.score.label": "not_evaluated",
        "gen_ai.evaluation.explanation": "judge timeout",
        "error.type": "judge timeout",
        "tracescore.criterion.version": "1",
        "tracescore.criterion.threshold": 0.8,
        **SHARED,
    },
    {
        "gen_ai.evaluation.name": "safety_v1",
        "gen_ai.evaluation.score.label": "not_evaluated",
        "gen_ai.evaluation.explanation": "criterion error: KeyError",
        "error.type": "KeyError",
        "tracescore.criterion.version": "1",
        "tracescore.criterion.threshold": 0.5,
        **SHARED,
    },
    {
        "gen_ai.evaluation.name": "response_evaluation_score",
        "gen_ai.evaluation.score.label": "not_evaluated",
        "gen_ai.evaluation.explanation": "no golden",
        "tracescore.criterion.version": "1",
        **SHARED,
    },
    {
        "gen_ai.evaluation.name": "tool_call_count",
        "gen_ai.evaluation.score.label": "informational",
        "gen_ai.evaluation.score.value": 2.0,
        "tracescore.criterion.version": "1",
        **SHARED,
    },
]


@pytest.fixture
def memory() -> Iterator[tuple[LoggerProvider, InMemoryLogRecordExporter]]:
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def attributes(exporter: InMemoryLogRecordExporter) -> list[dict[str, Any]]:
    return [dict(r.log_record.attributes or {}) for r in exporter.get_finished_logs()]


# -- in memory ---------------------------------------------------------------------


def test_one_event_per_result_on_the_root_span(
    memory: tuple[LoggerProvider, InMemoryLogRecordExporter],
) -> None:
    provider, exporter = memory
    sink = EvaluationEventSink(provider)

    assert sink.emit(scored()) == len(RESULTS)

    logs = exporter.get_finished_logs()
    assert len(logs) == len(RESULTS)
    for log in logs:
        record = log.log_record
        assert record.event_name == EVENT_NAME == "gen_ai.evaluation.result"
        assert record.trace_id == int(TRACE_ID, 16)
        assert record.span_id == int(ROOT_SPAN_ID, 16)
        assert record.trace_flags == TraceFlags(TraceFlags.SAMPLED)
        assert record.body is None
        assert record.timestamp is not None
        assert log.instrumentation_scope is not None
        assert log.instrumentation_scope.name == "tracescore.evaluation"
        assert log.instrumentation_scope.version == tracescore.__version__
    assert attributes(exporter) == EXPECTED


def test_content_stays_out_by_default(
    memory: tuple[LoggerProvider, InMemoryLogRecordExporter],
) -> None:
    provider, exporter = memory
    EvaluationEventSink(provider).emit(scored())

    leaked = [
        (key, value)
        for attrs in attributes(exporter)
        for key, value in attrs.items()
        if SECRET in str(value)
    ]
    assert leaked == []
    assert all(
        "tracescore.user_content" not in a and "tracescore.final_response" not in a
        for a in attributes(exporter)
    )


def test_content_on_opt_in(memory: tuple[LoggerProvider, InMemoryLogRecordExporter]) -> None:
    provider, exporter = memory
    EvaluationEventSink(provider, include_content=True).emit(scored())

    got = attributes(exporter)
    content = {
        "tracescore.user_content": "SECRET question: weather in Paris?",
        "tracescore.final_response": "SECRET answer: sunny",
    }
    explanations = {
        "final_response_match_v2": "SECRET rationale one\nSECRET rationale two",
        "rubric_based_final_response_quality_v1": "judge timeout",
        "safety_v1": "criterion error: KeyError: 'SECRET user text'",
    }
    for attrs, default in zip(got, EXPECTED, strict=True):
        expected = {**default, **content}
        name = default["gen_ai.evaluation.name"]
        if name in explanations:
            expected["gen_ai.evaluation.explanation"] = explanations[name]
        assert attrs == expected


def test_nested_rationales_follow_the_reason(
    memory: tuple[LoggerProvider, InMemoryLogRecordExporter],
) -> None:
    provider, exporter = memory
    result = CriterionResult(
        criterion="rubric_based_tool_use_quality_v1",
        version="1",
        score=None,
        status="not_evaluated",
        threshold=0.5,
        reason="no rubric verdicts",
        details={
            "rubrics": [
                {"rubric_id": "r1", "verdict": None, "rationale": "calls the tool"},
                {"rubric_id": "r2", "verdict": None, "rationale": None},
            ],
            "turn_rationales": ["calls the tool", "asks back"],
        },
    )
    EvaluationEventSink(provider, include_content=True).emit(scored(results=[result]))

    (attrs,) = attributes(exporter)
    assert attrs["gen_ai.evaluation.explanation"] == "no rubric verdicts\ncalls the tool\nasks back"
    assert "error.type" not in attrs  # nothing failed: there was nothing to judge


def test_optional_invocation_attributes_are_left_out(
    memory: tuple[LoggerProvider, InMemoryLogRecordExporter],
) -> None:
    provider, exporter = memory
    inv = invocation(agent=None, conversation_id=None, user_content=None, final_response=None)
    result = InvocationResult(
        invocation=inv,
        golden=None,
        expected=None,
        outcome="scored",
        reason=None,
        results=RESULTS[:1],
    )
    EvaluationEventSink(provider, include_content=True).emit(result)

    assert attributes(exporter) == [
        {
            "gen_ai.evaluation.name": "tool_trajectory_avg_score",
            "gen_ai.evaluation.score.label": "passed",
            "gen_ai.evaluation.score.value": 1.0,
            "tracescore.criterion.version": "1",
            "tracescore.criterion.threshold": 1.0,
            "tracescore.outcome": "scored",
            "tracescore.invocation.id": "e-42",
        }
    ]


@pytest.mark.parametrize(
    ("trace_id", "root_span_id"),
    [
        ("", ROOT_SPAN_ID),
        (TRACE_ID, None),
        (TRACE_ID, ""),
        ("not-hex", ROOT_SPAN_ID),
        ("0" * 32, ROOT_SPAN_ID),
        (TRACE_ID, "0" * 16),
        ("f" * 33, ROOT_SPAN_ID),
    ],
)
def test_invocations_without_ids_emit_nothing(
    memory: tuple[LoggerProvider, InMemoryLogRecordExporter],
    trace_id: str,
    root_span_id: str | None,
) -> None:
    provider, exporter = memory
    inv = invocation(trace_id=trace_id, root_span_id=root_span_id)

    assert EvaluationEventSink(provider).emit(scored(inv)) == 0
    assert exporter.get_finished_logs() == ()


def test_the_callers_current_span_does_not_leak_in(
    memory: tuple[LoggerProvider, InMemoryLogRecordExporter],
) -> None:
    provider, exporter = memory
    tracer = TracerProvider().get_tracer("host")
    with tracer.start_as_current_span("host work"):
        EvaluationEventSink(provider).emit(scored(results=RESULTS[:1]))

    (log,) = exporter.get_finished_logs()
    assert (log.log_record.trace_id, log.log_record.span_id) == (
        int(TRACE_ID, 16),
        int(ROOT_SPAN_ID, 16),
    )


class _Exploding(LogRecordProcessor):
    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        raise RuntimeError("processor bug")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        raise RuntimeError("flush bug")


class _FailingExporter(LogRecordExporter):
    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        raise ConnectionError("collector down")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_pipeline_errors_never_reach_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(_Exploding())
    sink = EvaluationEventSink(provider)

    with caplog.at_level(logging.WARNING, logger="tracescore.sinks.otel_events"):
        assert sink.emit(scored()) == 0
        assert sink.force_flush() is False
    assert "7 of 7 evaluation events of trace" in caplog.text
    assert "flushing evaluation events failed" in caplog.text


def test_a_failing_exporter_never_reaches_the_caller() -> None:
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(_FailingExporter()))

    # The SDK's processor logs the export error; the events were handed over.
    assert EvaluationEventSink(provider).emit(scored()) == len(RESULTS)


class _CountingProvider(LoggerProvider):
    def __init__(self) -> None:
        super().__init__(shutdown_on_exit=False)
        self.shutdowns = 0

    def shutdown(self) -> None:
        self.shutdowns += 1
        super().shutdown()


@pytest.mark.parametrize("owns", [True, False])
def test_shutdown_is_idempotent_and_touches_only_an_owned_provider(owns: bool) -> None:
    provider = _CountingProvider()
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    sink = EvaluationEventSink(provider, owns_provider=owns)

    sink.shutdown()
    sink.shutdown()

    assert provider.shutdowns == (1 if owns else 0)
    assert sink.emit(scored()) == 0
    assert sink.force_flush() is False
    assert exporter.get_finished_logs() == ()


class _RecordingExporter(LogRecordExporter):
    def __init__(self) -> None:
        self.instrumentation_enabled: list[bool] = []
        self.records = 0

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        self.instrumentation_enabled.append(is_instrumentation_enabled())
        self.records += len(batch)
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_batch_export_runs_with_instrumentation_suppressed() -> None:
    # Guards the claim in EvaluationEventSink's docstring against SDK upgrades: an
    # instrumented HTTP/gRPC client must not trace our own export (we would score it).
    exporter = _RecordingExporter()
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    sink = EvaluationEventSink(provider, owns_provider=True)
    try:
        sink.emit(scored())
        assert sink.force_flush()
    finally:
        sink.shutdown()
    assert exporter.records == len(RESULTS)
    assert exporter.instrumentation_enabled
    assert not any(exporter.instrumentation_enabled)


def test_to_otlp_rejects_bad_settings() -> None:
    with pytest.raises(ConfigError, match="empty"):
        EvaluationEventSink.to_otlp("  ")
    with pytest.raises(ConfigError, match="unknown OTLP protocol"):
        EvaluationEventSink.to_otlp("http://127.0.0.1:1", protocol="kafka")  # type: ignore[arg-type]


# -- over OTLP ---------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # requests and grpc both honour proxy variables: loopback must stay loopback.
    for name in ("http_proxy", "https_proxy", "all_proxy", "grpc_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


class _CollectorHTTP(ThreadingHTTPServer):
    def __init__(self, status: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status = status
        self.posts: list[tuple[str, dict[str, str], bytes]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _CollectorHTTP

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.posts.append((self.path, dict(self.headers), body))
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector_http(request: pytest.FixtureRequest) -> Iterator[_CollectorHTTP]:
    server = _CollectorHTTP(getattr(request, "param", 200))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def proto_value(kv: KeyValue) -> Any:
    kind = kv.value.WhichOneof("value")
    assert kind is not None
    return getattr(kv.value, kind)


def decoded(
    requests: Sequence[logs_service_pb2.ExportLogsServiceRequest],
) -> tuple[list[ProtoLogRecord], dict[str, Any], set[str]]:
    records: list[ProtoLogRecord] = []
    resource: dict[str, Any] = {}
    scopes: set[str] = set()
    for req in requests:
        for rl in req.resource_logs:
            resource.update({kv.key: proto_value(kv) for kv in rl.resource.attributes})
            for sl in rl.scope_logs:
                scopes.add(sl.scope.name)
                records.extend(sl.log_records)
    return records, resource, scopes


def assert_records(records: Sequence[ProtoLogRecord]) -> None:
    assert len(records) == len(RESULTS)
    got = []
    for record in records:
        assert record.event_name == "gen_ai.evaluation.result"
        assert record.trace_id == bytes.fromhex(TRACE_ID)
        assert record.span_id == bytes.fromhex(ROOT_SPAN_ID)
        assert record.flags & 0xFF == 1  # sampled
        got.append({kv.key: proto_value(kv) for kv in record.attributes})
    by_name = {a["gen_ai.evaluation.name"]: a for a in got}
    assert by_name == {a["gen_ai.evaluation.name"]: a for a in EXPECTED}


def test_otlp_http_end_to_end(collector_http: _CollectorHTTP) -> None:
    port = collector_http.server_address[1]
    sink = EvaluationEventSink.to_otlp(
        f"http://127.0.0.1:{port}/v1/logs",
        protocol="http",
        headers={"Authorization": "Bearer t0ken"},
        resource_attributes={"service.name": "evals", "deployment.environment": "test"},
    )
    try:
        assert sink.emit(scored()) == len(RESULTS)
        assert sink.force_flush(5_000)
    finally:
        sink.shutdown()

    assert collector_http.posts
    requests = []
    for path, headers, body in collector_http.posts:
        assert path == "/v1/logs"
        assert headers["Authorization"] == "Bearer t0ken"
        assert headers["Content-Type"] == "application/x-protobuf"
        assert SECRET.encode() not in body  # nothing of the conversation on the wire
        requests.append(logs_service_pb2.ExportLogsServiceRequest.FromString(body))
    records, resource, scopes = decoded(requests)
    assert_records(records)
    assert resource["service.name"] == "evals"
    assert resource["deployment.environment"] == "test"
    assert scopes == {"tracescore.evaluation"}


def test_otlp_http_base_url_gets_the_logs_path(collector_http: _CollectorHTTP) -> None:
    port = collector_http.server_address[1]
    sink = EvaluationEventSink.to_otlp(f"http://127.0.0.1:{port}", include_content=True)
    try:
        sink.emit(scored(results=RESULTS[:1]))
        assert sink.force_flush(5_000)
    finally:
        sink.shutdown()

    ((path, _, body),) = collector_http.posts
    assert path == "/v1/logs"
    records, resource, _ = decoded([logs_service_pb2.ExportLogsServiceRequest.FromString(body)])
    attrs = {kv.key: proto_value(kv) for kv in records[0].attributes}
    assert attrs["tracescore.final_response"] == "SECRET answer: sunny"
    assert resource["service.name"] == "tracescore"


@pytest.mark.parametrize("collector_http", [400], indirect=True)
def test_a_rejecting_collector_never_reaches_the_caller(collector_http: _CollectorHTTP) -> None:
    port = collector_http.server_address[1]
    sink = EvaluationEventSink.to_otlp(f"http://127.0.0.1:{port}/v1/logs")
    try:
        assert sink.emit(scored()) == len(RESULTS)
        sink.force_flush(5_000)  # the exporter logs the 400; nothing is raised
    finally:
        sink.shutdown()
    assert len(collector_http.posts) == 1  # 400 is not retried


class _CollectorGRPC(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self) -> None:
        self.requests: list[logs_service_pb2.ExportLogsServiceRequest] = []
        self.metadata: list[dict[str, str]] = []

    def Export(
        self, request: logs_service_pb2.ExportLogsServiceRequest, context: grpc.ServicerContext
    ) -> logs_service_pb2.ExportLogsServiceResponse:
        self.requests.append(request)
        self.metadata.append({k: str(v) for k, v in context.invocation_metadata()})
        return logs_service_pb2.ExportLogsServiceResponse()


def test_otlp_grpc_end_to_end() -> None:
    collector = _CollectorGRPC()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(collector, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        sink = EvaluationEventSink.to_otlp(
            f"http://127.0.0.1:{port}", protocol="grpc", headers={"X-Tenant": "team-a"}
        )
        try:
            assert sink.emit(scored()) == len(RESULTS)
            assert sink.force_flush(5_000)
        finally:
            sink.shutdown()
    finally:
        server.stop(grace=None)

    assert collector.requests
    assert all(m["x-tenant"] == "team-a" for m in collector.metadata)
    assert all(SECRET.encode() not in r.SerializeToString() for r in collector.requests)
    records, resource, _ = decoded(collector.requests)
    assert_records(records)
    assert resource["service.name"] == "tracescore"
