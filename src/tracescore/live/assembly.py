"""Group live span and log records into whole traces, by wall-clock windows.

Unlike file import (:mod:`tracescore.assembly`, windows counted in records so a file
reads the same on any host), live traffic has pauses: a trace is complete when its root
span has ended and no record for it arrived for ``idle_s`` seconds; a trace whose root
never comes (a remote parent, a crashed agent) is released as *incomplete* after
``orphan_ttl_s`` seconds without news. Both windows count from the trace's last record,
so a long agent run that keeps producing spans is never cut.

Memory is bounded: ``max_traces`` in flight (beyond it the least recently active trace
is dropped, counted), ``max_spans_per_trace`` (more are dropped, counted). Records of a
trace released recently are *late* and dropped, counted: scoring a trace twice would
count it twice. A trace can be marked *damaged* (the processor's queue dropped one of its
spans): it is then released as dropped, never scored on partial data.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from tracescore.spans import LogRecord, SpanRecord

__all__ = ["LiveAssembler", "LiveTrace", "ReleaseKind", "SpanDropReason"]

#: Why records were not assembled.
SpanDropReason = Literal["late_record", "trace_too_large", "trace_evicted", "no_trace_id"]
#: How a trace left the assembler.
ReleaseKind = Literal["complete", "incomplete", "dropped"]

_RECENT_MAX: Final = 100_000


@dataclass(slots=True, kw_only=True)
class LiveTrace:
    """The records of one trace in flight, and how it left.

    Attributes:
        trace_id: Hex trace id.
        spans: Spans in arrival order.
        logs: Correlated log records in arrival order.
        root_seen: A span without a (local) parent arrived.
        damaged: Some of its records were lost before assembly.
        last_s: Clock time of its last record.
        kind: Set on release.
        drop_reason: Why a dropped trace was dropped.

    """

    trace_id: str
    spans: list[SpanRecord] = field(default_factory=list)
    #: A tuple until the first log record (most live traces have none): one object
    #: fewer for the garbage collector per trace in flight.
    logs: Sequence[LogRecord] = ()
    root_seen: bool = False
    damaged: bool = False
    last_s: float = 0.0
    kind: ReleaseKind = "complete"
    drop_reason: str | None = None


class LiveAssembler:
    """Collects live records per trace and releases traces when complete.

    Not thread-safe: fed and polled from the live worker only.

    Args:
        idle_s: Quiet time after which a trace whose root arrived is complete.
        orphan_ttl_s: Quiet time after which a rootless trace is released incomplete.
        max_traces: Traces in flight; beyond it the least recently active is dropped.
        max_spans_per_trace: Spans kept per trace; more are dropped and counted.
        clock: Seconds, monotonic (injected by tests).

    """

    def __init__(
        self,
        *,
        idle_s: float = 2.0,
        orphan_ttl_s: float = 120.0,
        max_traces: int = 10_000,
        max_spans_per_trace: int = 10_000,
        clock: Callable[[], float],
    ) -> None:
        self.idle_s = idle_s
        self.orphan_ttl_s = max(orphan_ttl_s, idle_s)
        self.max_traces = max_traces
        self.max_spans_per_trace = max_spans_per_trace
        self._clock = clock
        self._pending: OrderedDict[str, LiveTrace] = OrderedDict()
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._evicted: list[LiveTrace] = []
        #: Records not assembled, by reason (read and reset by the worker).
        self.dropped: Counter[SpanDropReason] = Counter()

    @property
    def in_flight(self) -> int:
        """Traces currently held."""
        return len(self._pending)

    def _trace(self, trace_id: str, now: float) -> LiveTrace | None:
        trace = self._pending.get(trace_id)
        if trace is None:
            if trace_id in self._recent:
                return None
            if len(self._pending) >= self.max_traces:
                # Make room first, so the bound holds even while a batch is being added
                # (the in-flight gauge is read from another thread).
                _, oldest = self._pending.popitem(last=False)
                self.dropped["trace_evicted"] += len(oldest.spans)
                self._evicted.append(self._release(oldest, "dropped", "max_traces"))
            trace = LiveTrace(trace_id=trace_id)
            self._pending[trace_id] = trace
        else:
            self._pending.move_to_end(trace_id)
        trace.last_s = now
        return trace

    def add(
        self,
        spans: Sequence[SpanRecord],
        logs: Sequence[LogRecord] = (),
        *,
        local_roots: frozenset[str] = frozenset(),
    ) -> list[LiveTrace]:
        """Add records; return traces dropped to respect ``max_traces`` (possibly none).

        Args:
            spans: Spans to add.
            logs: Log records to add.
            local_roots: Ids of spans whose parent is remote: roots of this process's
                part of the trace (the processor knows; OTLP input does not say).

        """
        now = self._clock()
        for span in spans:
            trace = self._trace(span.trace_id, now)
            if trace is None:
                self.dropped["late_record"] += 1
            elif len(trace.spans) >= self.max_spans_per_trace:
                self.dropped["trace_too_large"] += 1
            else:
                trace.spans.append(span)
                if span.parent_span_id is None or span.span_id in local_roots:
                    trace.root_seen = True
        for log in logs:
            if not log.trace_id:
                self.dropped["no_trace_id"] += 1
                continue
            trace = self._trace(log.trace_id, now)
            if trace is None:
                self.dropped["late_record"] += 1
            elif isinstance(trace.logs, list):
                trace.logs.append(log)
            else:
                trace.logs = [log]
        return self._evict()

    def damage(self, trace_id: str) -> list[LiveTrace]:
        """Mark a trace as having lost records; it will be released as dropped.

        A trace not seen yet is opened (its other records may still come); one released
        already is left alone (the lost record was late anyway). Returns the traces
        dropped to make room, as :meth:`add` does.
        """
        trace = self._trace(trace_id, self._clock())
        if trace is not None:
            trace.damaged = True
        return self._evict()

    def _evict(self) -> list[LiveTrace]:
        out, self._evicted = self._evicted, []
        return out

    def due(self) -> list[LiveTrace]:
        """Traces whose window has passed, least recently active first."""
        now = self._clock()
        ripe = []
        # Only the quiet head is visited (no copy of every key): the worker calls this
        # between every chunk of a backlog.
        for trace_id, trace in self._pending.items():
            quiet = now - trace.last_s
            if quiet < self.idle_s:
                break  # ordered by last activity: everything after is fresher
            if trace.root_seen or quiet >= self.orphan_ttl_s:
                ripe.append(trace_id)
        out = []
        for trace_id in ripe:
            trace = self._pending.pop(trace_id)
            out.append(self._release(trace, "complete" if trace.root_seen else "incomplete"))
        return out

    def flush(self) -> list[LiveTrace]:
        """Release every trace in flight (force flush, shutdown)."""
        out = [
            self._release(t, "complete" if t.root_seen else "incomplete")
            for t in self._pending.values()
        ]
        self._pending.clear()
        return out

    def _release(self, trace: LiveTrace, kind: ReleaseKind, reason: str | None = None) -> LiveTrace:
        if trace.damaged and kind != "dropped":
            kind, reason = "dropped", "queue_full"
        trace.kind = kind
        trace.drop_reason = reason
        self._recent[trace.trace_id] = None
        if len(self._recent) > _RECENT_MAX:
            self._recent.popitem(last=False)
        return trace
