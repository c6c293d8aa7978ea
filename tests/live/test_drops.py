"""QueueDrops: what the hot path dropped when the queue was full, and from which traces."""

from __future__ import annotations

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
    drops = QueueDrops(max_traces=10)
    for span in spans:
        drops.drop(span)
    assert list(drops.take_traces()) == [hex_id(spans[i]) for i in (0, 4, 8)]
    assert list(drops.take_traces()) == []  # taken means forgotten
    assert drops.new_counts() == (12, 0, 0)
    assert drops.new_counts() == (0, 0, 0)  # counts since the previous call


def test_a_trace_whose_spans_interleave_with_anothers_is_remembered_each_time() -> None:
    # Two agent threads: their spans alternate. Each id is remembered again (marking a
    # trace twice is harmless); none is lost.
    first, second = spans_of(traces=2, per_trace=2)[:2], spans_of(traces=1, per_trace=2)
    drops = QueueDrops(max_traces=10)
    for span in (first[0], second[0], first[1], second[1]):
        drops.drop(span)
    ids = list(drops.take_traces())
    assert ids == [hex_id(first[0]), hex_id(second[0])] * 2
    assert drops.new_counts() == (4, 0, 0)


def test_beyond_its_bound_the_oldest_id_is_forgotten_and_counted() -> None:
    spans = spans_of(traces=5, per_trace=1)
    drops = QueueDrops(max_traces=2)
    for span in spans:
        drops.drop(span)
    assert list(drops.take_traces()) == [hex_id(s) for s in spans[3:]]
    assert drops.new_counts() == (5, 0, 3)
    assert drops.new_counts() == (0, 0, 0)  # taking the held ids forgets nothing more


def test_dropped_log_records_are_counted_and_mark_no_trace() -> None:
    drops = QueueDrops(max_traces=2)
    drops.drop_log()
    drops.drop_log()
    assert (drops.new_counts(), list(drops.take_traces())) == ((0, 2, 0), [])
