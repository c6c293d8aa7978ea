from __future__ import annotations

from collections.abc import Iterable
from types import SimpleNamespace

from opentelemetry._logs import LogRecord as APILogRecord
from opentelemetry.sdk._logs import (
    LoggerProvider,
    LogRecordProcessor,
    ReadableLogRecord,
    ReadWriteLogRecord,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Status, StatusCode
from otlp_helpers import RESOURCE, make_tracer_provider

from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.spans import STATUS_ERROR, STATUS_OK, STATUS_UNSET


def _by_name(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name.startswith(prefix)]


def test_span_ids_are_lowercase_hex_and_root_has_no_parent(sdk_spans: list[ReadableSpan]) -> None:
    root = from_readable_span(_by_name(sdk_spans, "invoke_agent")[0])
    context = _by_name(sdk_spans, "invoke_agent")[0].context
    assert root.trace_id == f"{context.trace_id:032x}"
    assert root.span_id == f"{context.span_id:016x}"
    assert root.parent_span_id is None
    child = from_readable_span(_by_name(sdk_spans, "chat")[0])
    assert child.parent_span_id == root.span_id
    assert child.trace_id == root.trace_id


def test_kinds_use_otlp_numbering(sdk_spans: list[ReadableSpan]) -> None:
    kinds = {from_readable_span(s).name.split()[0]: from_readable_span(s).kind for s in sdk_spans}
    assert kinds == {"invoke_agent": 2, "chat": 3, "execute_tool": 1}  # server, client, internal


def test_attributes_tuples_become_lists_and_scalars_keep_types(
    sdk_spans: list[ReadableSpan],
) -> None:
    record = from_readable_span(_by_name(sdk_spans, "invoke_agent")[0])
    assert record.attributes["tags"] == ["prod", "eu"]
    assert record.attributes["retries"] == [1, 2, 3]
    assert record.attributes["flags"] == [True, False]
    assert record.attributes["weights"] == [0.5, 1.5]
    assert record.attributes["streaming"] is False
    assert record.attributes["turn"] == 0
    assert isinstance(record.attributes["sample.rate"], float)
    values: Iterable[object] = record.attributes.values()  # typed without tuple: check it
    assert all(type(v) is not tuple for v in values)


def test_events_status_scope_and_resource(sdk_spans: list[ReadableSpan]) -> None:
    failing = from_readable_span(_by_name(sdk_spans, "execute_tool get_weather_1")[0])
    assert failing.status_code == STATUS_ERROR
    assert failing.status_message == "upstream timeout"
    [event] = failing.events
    assert event.name == "exception"
    assert event.attributes["exception.type"] == "RuntimeError"
    assert event.time_ns > 0
    ok = from_readable_span(_by_name(sdk_spans, "execute_tool get_weather_0")[0])
    assert (ok.status_code, ok.status_message) == (STATUS_OK, None)
    chat = from_readable_span(_by_name(sdk_spans, "chat")[0])
    assert chat.status_code == STATUS_UNSET
    assert chat.scope == "openinference.instrumentation.test"
    assert failing.scope == "tracescore.tests.agent"
    assert chat.resource["service.name"] == "weather-agent"
    assert chat.resource["host.cpus"] == 8
    assert 0 < chat.start_ns <= chat.end_ns
    assert chat.origin is None


def test_resource_attributes_are_converted_once_per_resource(sdk_spans: list[ReadableSpan]) -> None:
    records = [from_readable_span(s) for s in sdk_spans]
    assert all(r.resource is records[0].resource for r in records)
    provider, exporter = make_tracer_provider(RESOURCE.merge(RESOURCE.create({"x": "y"})))
    with provider.get_tracer("t").start_as_current_span("other"):
        pass
    other = from_readable_span(exporter.get_finished_spans()[0])
    assert other.resource["x"] == "y"
    assert "x" not in records[0].resource


def test_log_records_from_the_in_memory_exporter(sdk_logs: list[ReadableLogRecord]) -> None:
    user, choice, outside = (from_sdk_log(r) for r in sdk_logs)
    assert user.event_name == "gen_ai.user.message"
    assert user.name == "gen_ai.user.message"
    assert user.body == {"content": "Weather in Oslo?", "parts": [{"type": "text", "n": 1}]}
    assert user.attributes == {"gen_ai.system": "gemini", "turn": 3}
    assert user.severity_text == "INFO"
    assert user.scope == "tracescore.tests.events"
    assert user.resource["service.name"] == "weather-agent"
    assert user.trace_id is not None
    assert len(user.trace_id) == 32
    assert user.span_id is not None
    assert len(user.span_id) == 16
    assert (choice.trace_id, choice.span_id) == (user.trace_id, user.span_id)
    assert choice.attributes["raw"] == b"\x00\x01\xff"
    assert choice.body == {
        "index": 0,
        "finish_reason": "stop",
        "message": {"content": "Sunny, 21C"},
    }
    assert (outside.trace_id, outside.span_id, outside.event_name) == (None, None, None)
    assert outside.body == "outside any span"
    assert outside.time_ns == sdk_logs[2].log_record.observed_timestamp  # no timestamp set


class _Capture(LogRecordProcessor):
    def __init__(self) -> None:
        self.records: list[ReadWriteLogRecord] = []

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        self.records.append(log_record)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_read_write_records_bare_api_records_and_legacy_log_data() -> None:
    provider = LoggerProvider(resource=RESOURCE)
    capture = _Capture()
    provider.add_log_record_processor(capture)
    provider.get_logger("scope.a").emit(
        timestamp=123, event_name="e", body=("a", 1), attributes={"k": (1, 2)}
    )
    [writable] = capture.records
    record = from_sdk_log(writable)
    assert (record.time_ns, record.event_name, record.scope) == (123, "e", "scope.a")
    assert record.body == ["a", 1]
    assert record.attributes == {"k": [1, 2]}
    assert record.resource["service.name"] == "weather-agent"

    bare = from_sdk_log(APILogRecord(timestamp=5, body={"nested": {"x": [1.5]}}))
    assert (bare.time_ns, bare.resource, bare.scope) == (5, {}, None)
    assert bare.body == {"nested": {"x": [1.5]}}

    legacy = SimpleNamespace(
        log_record=writable.log_record, instrumentation_scope=writable.instrumentation_scope
    )
    assert from_sdk_log(legacy).scope == "scope.a"  # type: ignore[arg-type]


def test_spans_without_events_hold_no_collectable_container(sdk_spans: list[ReadableSpan]) -> None:
    """A live trace waits seconds in the assembler: every container it holds is scanned
    by each garbage collection, on whichever thread allocates (the agent's included)."""
    import gc

    records = [from_readable_span(s) for s in sdk_spans if not s.events]
    assert records
    assert all(r.events == () and not gc.is_tracked(r.events) for r in records)
    failing = from_readable_span(_by_name(sdk_spans, "execute_tool get_weather_1")[0])
    assert len(failing.events) == 1  # spans with events keep them


def test_lone_surrogates_in_the_agents_strings_become_replacement_characters() -> None:
    # Python strings can hold half a surrogate pair (text decoded with surrogateescape, a
    # string cut inside an emoji); nothing downstream could encode one (Prometheus labels,
    # OTLP, JSON), so every string a record takes from the SDK is cleaned.
    cut = "cut \ud83d"
    provider, exporter = make_tracer_provider(Resource.create({"service.name": cut}))
    tracer = provider.get_tracer(cut)
    with tracer.start_as_current_span(
        f"invoke_agent {cut}",
        attributes={"gen_ai.agent.name": cut, f"key {cut}": (cut, "ok"), "n": 1},
    ) as span:
        span.add_event(cut, {"e": cut})
        span.set_status(Status(StatusCode.ERROR, cut))
    [sdk_span] = exporter.get_finished_spans()
    record = from_readable_span(sdk_span)
    clean = "cut \ufffd"
    assert record.name == f"invoke_agent {clean}"
    assert record.attributes == {
        "gen_ai.agent.name": clean,
        f"key {clean}": [clean, "ok"],
        "n": 1,
    }
    assert (record.events[0].name, record.events[0].attributes) == (clean, {"e": clean})
    assert (record.status_message, record.scope) == (clean, clean)
    assert record.resource["service.name"] == clean
    halves = "halves \ud83d\ude00"  # two code points that make a pair: joined
    assert from_sdk_log(APILogRecord(body={cut: [halves]})).body == {clean: ["halves 😀"]}
    log = from_sdk_log(APILogRecord(event_name=cut, severity_text=cut, body=cut))
    assert (log.event_name, log.severity_text, log.body) == (clean, clean, clean)
    # A bare API record's attribute keys are not checked by the SDK: any hashable.
    odd_keys = {1: "int key", cut: "v"}
    assert from_sdk_log(APILogRecord(attributes=odd_keys)).attributes == {  # type: ignore[arg-type]
        "1": "int key",
        clean: "v",
    }
    logger_provider = LoggerProvider(resource=RESOURCE)
    capture = _Capture()
    logger_provider.add_log_record_processor(capture)
    logger_provider.get_logger(cut).emit(body="in a scope")
    assert from_sdk_log(capture.records[0]).scope == clean
