"""Group a stream of span and log records into whole traces, with bounded memory.

Input arrives as export batches in which traces are spread out and interleaved (the
Collector's ``file`` exporter writes one batch per line). A trace is complete when its
root span has arrived (or the span that marks the end of a run whose root ends first:
:mod:`tracescore.conventions.run_end`) and nothing new for it arrived during an *idle
window*; a trace whose root never comes is flushed after a longer window (its root may
be remote: an agent called from another service). Windows are counted in records, not seconds, so
reading a file is deterministic and independent of the host clock.

The rules depend only on record positions, never on where counting started, so that a
file imported in parts (:mod:`tracescore.parallel`) can be held to the same outcome:

* after each batch, a trace is released when at least a window of records came after
  its last one (``idle_records`` once its root arrived, twice that before);
* a record of a trace released at most ``recent_records`` records before it is *late*
  (dropped, counted); after that, it starts a new trace.

Memory is bounded by the traces in flight, not the input size: ``max_traces`` and
``max_spans_per_trace`` cap it; what exceeds them is counted, never silently lost.

*Parking.* A trace's root span is usually its last record (spans are exported as they
end), yet the trace stays in flight for a whole idle window after it. Holding its
records that long is what an import pays most for: a window of decoded spans is tens of
megabytes of small objects, and every batch decoded meanwhile lands in memory that is no
longer in the CPU caches (measured: decoding took 1.4x as long, rebuilding invocations
1.1x). So a consumer may *park* a trace once its root arrived: it computes its result
from the records right away (:meth:`TraceAssembler.parkable`), and the assembler drops
the records, keeping only how to decode again the batches they came in (``source``
of :meth:`TraceAssembler.add`: a JSON line still in memory, say). Release order and
timing are unchanged. Should a record of a parked trace still arrive, the trace's
records are decoded again from those batches and the result is discarded
(:attr:`AssembledTrace.prebuilt`), so what is released is exactly what it would have
been; when that happens to many parked traces (input written parents first, say),
parking stops.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from tracescore.conventions import run_end
from tracescore.formats.base import Batch
from tracescore.spans import LogRecord, SpanRecord

__all__ = [
    "DEFAULT_IDLE_RECORDS",
    "MAX_SOURCES",
    "AssembledTrace",
    "DropReason",
    "Source",
    "TraceAssembler",
]

DropReason = Literal["late_record", "trace_too_large", "no_trace_id"]

#: Default of ``recent_records``, in idle windows: 200,000 records at the default window
#: (the released ids kept are at most that many; ~13,000 for agent traffic).
_RECENT_WINDOWS: Final = 40
#: Records that must pass without news of a trace whose root arrived before it is
#: complete: above a Collector batch of concurrent traffic. A window too small for an
#: input shows up as ``late_record`` drops in the import summary (raise it then).
DEFAULT_IDLE_RECORDS: Final = 5_000
#: Parking stops once more than one parked trace in this many had to be restored, ...
_RESTORES_PER_PARK: Final = 8
#: ... counted after this many parks (a few restores early on say little).
_PARKS_BEFORE_JUDGING: Final = 64

#: Batches a trace may span and still be parked: each one it came in stays in memory
#: (whole) while the trace is in flight. Agent traces in the import benchmark span 1-7.
MAX_SOURCES: Final = 16

#: Decodes one batch again, as it was decoded the first time.
Source = Callable[[], Batch]


@dataclass(slots=True, kw_only=True)
class AssembledTrace:
    """The records of one trace, handed on once it is considered complete.

    Attributes:
        trace_id: Hex trace id.
        spans: Spans in arrival order.
        logs: Correlated log records in arrival order.
        root_seen: Whether a span without parent arrived: one that marks the end of the
            run (:mod:`tracescore.conventions.run_end`).
        evicted: True when pushed out by ``max_traces`` before its idle window ended.
        parked: True when ``spans`` and ``logs`` were dropped (empty) and ``prebuilt``
            holds what the consumer computed from them (see the module docstring).
        prebuilt: The consumer's result for a parked trace, opaque to the assembler.

    """

    trace_id: str
    spans: list[SpanRecord] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    root_seen: bool = False
    evicted: bool = False
    held: bool = False
    #: Positions (records counted by this assembler): its first record, the records
    #: before the batch that brought it, its last record.
    first_seq: int = 0
    first_start: int = 0
    last_seq: int = 0
    #: Held traces only (never released before :meth:`TraceAssembler.drain`): the
    #: largest run of records between two of its batches before its root arrived, and
    #: after; a part's consumer decides with them what an undivided input would have done.
    gap_open: int = 0
    gap_rooted: int = 0
    #: Spans dropped because the trace reached ``max_spans_per_trace``.
    capped: int = 0
    parked: bool = False
    prebuilt: Any = None
    #: The batches the records came in, to decode again (None: some cannot be).
    sources: list[Source] | None = None


class TraceAssembler:
    """Collects records per trace id and releases traces when complete.

    Not thread-safe: one assembler per pipeline, fed from one thread.

    Args:
        idle_records: Records that must pass without news of a trace whose root has
            arrived before it is released. Rootless traces wait twice as long.
        max_traces: Traces held at once; beyond it the oldest is released early.
        max_spans_per_trace: Spans kept per trace; more are dropped and counted.
        hold_head: Traces first seen within this many records are *held*: never
            released before :meth:`drain` (one part of a larger input, whose traces
            may have begun in the part before; see :mod:`tracescore.part_worker`).
        hold_only: When given, only head traces whose id it contains are held.
        recent_records: How long a released trace's id is remembered, in records (see
            the module docstring); default 40 idle windows.
        track_ids: Keep the id of every trace started (:attr:`trace_ids`).

    """

    def __init__(
        self,
        *,
        idle_records: int = DEFAULT_IDLE_RECORDS,
        max_traces: int = 100_000,
        max_spans_per_trace: int = 20_000,
        hold_head: int = 0,
        hold_only: Container[str] | None = None,
        recent_records: int | None = None,
        track_ids: bool = False,
    ) -> None:
        self.idle_records = idle_records
        self.max_traces = max_traces
        self.max_spans_per_trace = max_spans_per_trace
        self.hold_head = hold_head
        self.hold_only = hold_only
        self.recent_records = (
            _RECENT_WINDOWS * idle_records if recent_records is None else recent_records
        )
        self._pending: OrderedDict[str, AssembledTrace] = OrderedDict()
        #: Released trace ids → the record count at release (to spot late records), in
        #: release order; forgotten ``recent_records`` records later.
        self._recent: OrderedDict[str, int] = OrderedDict()
        self._seq = 0
        #: Records before the batch being added.
        self._start = 0
        #: Traces started, when tracked.
        self._ids: list[str] | None = [] if track_ids else None
        #: Most traces in flight at once, traces evicted by ``max_traces``, largest batch.
        self.peak_in_flight = 0
        self.evictions = 0
        self.largest_batch = 0
        #: Records not assembled, by reason.
        self.dropped: Counter[DropReason] = Counter()
        #: Traces whose root arrived during the last :meth:`add`, for :meth:`parkable`.
        self._rooted: list[AssembledTrace] = []
        self._parks = 0
        self._restores = 0

    @property
    def in_flight(self) -> int:
        """Traces currently held."""
        return len(self._pending)

    @property
    def records(self) -> int:
        """Records added so far (dropped ones included): the position of the last one."""
        return self._seq

    @property
    def trace_ids(self) -> list[str]:
        """Ids of the traces started, in order (``track_ids``; else empty)."""
        return [] if self._ids is None else self._ids

    @property
    def parks(self) -> int:
        """Traces parked so far."""
        return self._parks

    @property
    def restores(self) -> int:
        """Parked traces whose records had to be decoded again (a record came after)."""
        return self._restores

    def _trace(self, trace_id: str, source: Source | None) -> AssembledTrace | None:
        trace = self._pending.get(trace_id)
        seq = self._seq
        if trace is None:
            released = self._recent.get(trace_id)
            if released is not None:
                if seq - released <= self.recent_records:
                    return None
                del self._recent[trace_id]  # long gone: a new trace
            held = seq <= self.hold_head and (self.hold_only is None or trace_id in self.hold_only)
            trace = AssembledTrace(
                trace_id=trace_id,
                held=held,
                first_seq=seq,
                first_start=self._start,
                sources=None if source is None else [source],
            )
            self._pending[trace_id] = trace
            if self._ids is not None:
                self._ids.append(trace_id)
        else:
            self._pending.move_to_end(trace_id)
            if trace.held:
                gap = self._start - trace.last_seq
                if trace.root_seen:
                    trace.gap_rooted = max(trace.gap_rooted, gap)
                else:
                    trace.gap_open = max(trace.gap_open, gap)
            if trace.parked:
                self._restore(trace)
            sources = trace.sources
            if sources is not None and sources[-1] is not source:
                if source is None or len(sources) >= MAX_SOURCES:
                    trace.sources = None  # cannot be parked: let go of the batches
                else:
                    sources.append(source)
        trace.last_seq = seq
        return trace

    def add(
        self,
        spans: Iterable[SpanRecord],
        logs: Iterable[LogRecord] = (),
        source: Source | None = None,
    ) -> list[AssembledTrace]:
        """Add records; return the traces that became complete (possibly none).

        Args:
            spans: Span records, in arrival order.
            logs: Log records, after the spans.
            source: Decodes the batch these records came from again, giving the same
                records; traces whose every record came with one can be parked.

        """
        rooted = self._rooted
        rooted.clear()
        self._start = self._seq
        end_scopes = run_end.SCOPES
        for span in spans:
            self._seq += 1
            trace = self._trace(span.trace_id, source)
            if trace is None:
                self.dropped["late_record"] += 1
            elif len(trace.spans) >= self.max_spans_per_trace:
                self.dropped["trace_too_large"] += 1
                trace.capped += 1
            else:
                trace.spans.append(span)
                root = span.parent_span_id is None
                if span.scope in end_scopes:
                    root = run_end.ends_run(span, root=root)
                if root:
                    trace.root_seen = True
                    rooted.append(trace)
        for log in logs:
            self._seq += 1
            if not log.trace_id:
                self.dropped["no_trace_id"] += 1
                continue
            trace = self._trace(log.trace_id, source)
            if trace is None:
                self.dropped["late_record"] += 1
            else:
                trace.logs.append(log)
        self.largest_batch = max(self.largest_batch, self._seq - self._start)
        self.peak_in_flight = max(self.peak_in_flight, len(self._pending))
        done: list[AssembledTrace] = []
        while len(self._pending) > self.max_traces:
            _, trace = self._pending.popitem(last=False)
            trace.evicted = True
            self.evictions += 1
            done.append(self._release(trace))
        # After every batch, not every so many records: when a trace is released then
        # depends only on positions, never on where counting started.
        done.extend(self._expire())
        return done

    def parkable(self) -> list[AssembledTrace]:
        """Traces the consumer may :meth:`park`: their root arrived in the last :meth:`add`.

        Only traces still in flight, not held, whose records can all be decoded again;
        none once parking stopped paying (see the module docstring).
        """
        if self._parks >= _PARKS_BEFORE_JUDGING and (
            self._restores * _RESTORES_PER_PARK > self._parks
        ):
            return []
        pending = self._pending
        found: dict[str, AssembledTrace] = {}
        for trace in self._rooted:
            if (
                not trace.parked
                and not trace.held
                and trace.sources is not None
                and pending.get(trace.trace_id) is trace
            ):
                found[trace.trace_id] = trace
        return list(found.values())

    def park(self, trace: AssembledTrace, prebuilt: object) -> None:
        """Drop a :meth:`parkable` trace's records, keeping ``prebuilt`` in their place.

        ``prebuilt`` must be what the consumer computes from the records as they are
        now; it is handed back with the trace on release, or dropped (``parked`` False,
        the records back) if a record of the trace arrives first.
        """
        if trace.sources is None or trace.held:
            raise ValueError(f"trace {trace.trace_id} cannot be parked")
        trace.spans = []
        trace.logs = []
        trace.prebuilt = prebuilt
        trace.parked = True
        self._parks += 1

    def _restore(self, trace: AssembledTrace) -> None:
        """Decode a parked trace's records again, in their order, as :meth:`add` kept them."""
        assert trace.sources is not None
        trace_id = trace.trace_id
        spans: list[SpanRecord] = []
        logs: list[LogRecord] = []
        for source in trace.sources:
            batch = source()
            spans.extend(s for s in batch.spans if s.trace_id == trace_id)
            logs.extend(r for r in batch.logs if r.trace_id == trace_id)
        # The records it kept: all its logs, its spans up to the cap (no late records:
        # a trace in flight takes every record of its id).
        trace.spans = spans[: self.max_spans_per_trace]
        trace.logs = logs
        trace.prebuilt = None
        trace.parked = False
        self._restores += 1

    def _expire(self) -> list[AssembledTrace]:
        horizon = self._seq - self.idle_records
        due = []
        for trace in self._pending.values():
            if trace.last_seq > horizon:
                # Ordered by last activity: everything after this is fresher.
                break
            if trace.held:
                continue
            if trace.root_seen or trace.last_seq <= horizon - self.idle_records:
                due.append(trace)
        for trace in due:
            del self._pending[trace.trace_id]
            self._release(trace)
        return due

    def _release(self, trace: AssembledTrace) -> AssembledTrace:
        recent = self._recent
        recent[trace.trace_id] = self._seq
        forget = self._seq - self.recent_records
        while next(iter(recent.values())) < forget:
            recent.popitem(last=False)
        return trace

    def flush(self) -> list[AssembledTrace]:
        """Release every trace in flight (end of input), oldest activity first.

        Traces marked ``held`` are released too; use :meth:`drain` to keep them apart.
        """
        done = [self._release(t) for t in self._pending.values()]
        self._pending.clear()
        return done

    def drain(
        self, *, continued: Container[str] = frozenset()
    ) -> tuple[list[AssembledTrace], list[AssembledTrace]]:
        """End of one part of a larger input: ``(complete, boundary)`` traces.

        ``boundary`` holds the traces that may continue in a neighbouring part: the held
        ones and those in flight whose id is in ``continued`` (the ids the next part
        begins with). The rest are complete.
        """
        complete: list[AssembledTrace] = []
        boundary: list[AssembledTrace] = []
        for trace in self._pending.values():
            if trace.held or trace.trace_id in continued:
                if trace.parked:  # its records go on: they are needed, not the result
                    self._restore(trace)
                boundary.append(trace)
            else:
                complete.append(self._release(trace))
        self._pending.clear()
        return complete, boundary

    def released_since(self, records: int) -> dict[str, int]:
        """Traces released within the last ``records`` records: id → position, oldest first."""
        horizon = self._seq - records
        return {tid: seq for tid, seq in self._recent.items() if seq > horizon}
