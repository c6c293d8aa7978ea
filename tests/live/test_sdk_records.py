"""Queued SDK records converted one at a time (tracescore.live.sdk_records)."""

from __future__ import annotations

from collections import deque

from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from tracescore.live.sdk_records import Taken, take_logs, take_spans


def _spans() -> list[ReadableSpan]:
    """A local root under a remote parent (another process's span), and its child."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(1))
    with (
        tracer.start_as_current_span(
            "root", context=trace.set_span_in_context(NonRecordingSpan(remote))
        ),
        tracer.start_as_current_span("child"),
    ):
        pass
    return list(exporter.get_finished_spans())  # child first, as spans end


def test_spans_are_popped_only_as_they_are_taken() -> None:
    child, root = _spans()
    queue: deque[ReadableSpan] = deque([child, root, child])
    taken = Taken()
    records = take_spans(queue, 2, taken, lambda: None)
    assert len(queue) == 3  # nothing converted before the assembler asks
    first = next(records)
    assert (first.name, len(queue), taken.spans) == ("child", 2, 1)
    assert [r.name for r in records] == ["root"]
    assert len(queue) == 1 and taken.spans == 2
    assert taken.local_roots == {f"{root.context.span_id:016x}"}  # its parent is remote


def test_an_unreadable_span_or_log_is_counted_and_skipped() -> None:
    child, _ = _spans()
    skipped: list[str] = []
    taken = Taken()
    garbage: deque[ReadableSpan] = deque([object(), child])  # type: ignore[list-item]
    records = list(take_spans(garbage, 2, taken, lambda: skipped.append("span")))
    assert [r.name for r in records] == ["child"] and taken.spans == 1
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("test").emit(body="hello", event_name="gen_ai.user.message")
    [log] = exporter.get_finished_logs()
    logs: deque[ReadableLogRecord | ReadWriteLogRecord] = deque([object(), log])  # type: ignore[list-item]
    converted = list(take_logs(logs, 2, taken, lambda: skipped.append("log")))
    assert [r.event_name for r in converted] == ["gen_ai.user.message"]
    assert (taken.logs, skipped, len(logs)) == (1, ["span", "log"], 0)
