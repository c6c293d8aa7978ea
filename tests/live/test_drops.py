"""QueueDrops: what the hot path dropped when the queue was full, and from which traces."""

from __future__ import annotations

from collections import deque
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracescore.live.drops import QueueDrops


def spans_of(traces: int, per_trace: int) -> list[ReadableSpan]:
    """Real SDK spans: ``per_trace`` children ended, then their root, trace after trace."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for _ in range(traces):
        with tracer.start_as_current_span("root"):
            for _ in range(per_trace - 1):
                tracer.start_span("child").end()
    return list(exporter.get_finished_spans())


def hex_id(span: ReadableSpan) -> str:
    assert span.context is not None
    return f"{span.context.trace_id:032x}"


def test_each_trace_is_remembered_once_per_run_of_its_spans() -> None:
    spans = spans_of(traces=3, per_trace=4)
    queue: deque[ReadableSpan] = deque(spans)
    drops = QueueDrops(max_traces=10)
    for _ in range(len(spans)):
        drops.drop_oldest(queue)
    assert not queue
    assert list(drops.take_traces()) == [hex_id(spans[i]) for i in (0, 4, 8)]
    assert list(drops.take_traces()) == []  # taken means forgotten
    assert drops.new_counts() == (12, 0)
    assert drops.new_counts() == (0, 0)  # counts since the previous call


def test_beyond_its_bound_the_oldest_id_is_forgotten_and_counted() -> None:
    spans = spans_of(traces=5, per_trace=1)
    queue: deque[ReadableSpan] = deque(spans)
    drops = QueueDrops(max_traces=2)
    for _ in range(5):
        drops.drop_oldest(queue)
    assert list(drops.take_traces()) == [hex_id(s) for s in spans[3:]]
    assert drops.new_counts() == (5, 3)


def test_an_empty_queue_drops_nothing() -> None:
    # The worker may empty the queue between the hot path's length check and its drop.
    drops = QueueDrops(max_traces=2)
    drops.drop_oldest(deque())
    drops.drop_log(deque())
    assert drops.new_counts() == (0, 0)


def test_dropped_log_records_are_counted_and_mark_no_trace() -> None:
    logs: deque[Any] = deque(["a", "b"])
    drops = QueueDrops(max_traces=2)
    drops.drop_log(logs)
    assert list(logs) == ["b"]
    assert (drops.new_counts(), list(drops.take_traces())) == ((1, 0), [])
