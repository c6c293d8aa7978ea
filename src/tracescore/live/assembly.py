"""Group live span and log records into whole traces, by wall-clock windows.

Unlike file import (:mod:`tracescore.assembly`, windows counted in records so a file
reads the same on any host), live traffic has pauses: a trace is complete when its root
span has ended (the span that marks the end of its run: :mod:`tracescore.conventions.run_end`)
and no record for it arrived for ``idle_s`` seconds; a trace whose root
never comes (a remote parent, a crashed agent) is released as *incomplete* after
``orphan_ttl_s`` seconds without news. Both windows count from the trace's last record,
so a long agent run that keeps producing spans is never cut.

Memory is bounded: ``max_traces`` in flight (beyond it the traces already due are
released, else the least recently active trace: scored if its root has ended, else
dropped and counted), ``max_spans_per_trace`` (more are dropped, counted). Records of a
trace released recently are *late* and dropped, counted: scoring a trace twice would
count it twice. A trace can be marked *damaged* (the processor's queue dropped one of its
spans): it is then released as dropped, never scored on partial data.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from tracescore.conventions import run_end
from tracescore.spans import Attributes, LogRecord, SpanRecord

__all__ = ["LiveAssembler", "LiveTrace", "ReleaseKind", "SpanDropReason"]

#: Why records were not assembled.
SpanDropReason = Literal["late_record", "trace_too_large", "trace_evicted", "no_trace_id"]
#: How a trace left the assembler.
ReleaseKind = Literal["complete", "incomplete", "dropped"]

_RECENT_MAX: Final = 100_000
#: Distinct resource maps a span can be packed with (a process has one or a few).
_MAX_RESOURCES: Final = 64
#: Spans of a trace in flight kept in a tuple (copied on each append, see _Flight).
_TUPLE_SPANS: Final = 64
#: Fields before the attributes in a packed span.
_PACKED_FIELDS: Final = 11

#: A span held in flight: packed (see _SpanPacker) or, when it cannot be, as it came.
_Held = tuple[Any, ...] | SpanRecord


class _SpanPacker:
    """Keeps spans in flight in a form the garbage collector stops tracking.

    Why: spans wait here ``idle_s`` after their trace's last record, so a busy agent keeps
    tens of thousands in flight, and every full collection walks them all, on whichever
    thread crosses the threshold: mostly the agent's, in the span processor. Measured on
    the processor benchmark's agent loop (20k runs): full collections took ~40 ms each with
    SpanRecords held against ~1 ms without the scorer.

    A SpanRecord instance is always tracked; a tuple is untracked at its first collection
    when it holds only strings, numbers, None and such tuples (a dict or a list inside
    keeps it tracked, even an untracked dict). So a span is packed as a tuple of its
    fields followed by its attributes' keys, then their values (a list value as a tuple:
    attribute values are never tuples, see ``AttrValue``), with its resource map as an
    index into a small table (resource maps are shared between spans and must stay
    shared). Spans with events or an origin (OTLP input) are kept as they came: the
    processor's spans rarely have events, and OTLP input is not scored on the agent's
    thread.
    """

    __slots__ = ("_index", "_resources")

    def __init__(self) -> None:
        self._resources: list[Attributes] = []  # also pins the maps, so ids stay unique
        self._index: dict[int, int] = {}

    def pack(self, span: SpanRecord) -> _Held:
        if span.events or span.origin is not None:
            return span
        resource = self._index.get(id(span.resource))
        if resource is None:
            if len(self._resources) >= _MAX_RESOURCES:
                return span
            resource = self._index[id(span.resource)] = len(self._resources)
            self._resources.append(span.resource)
        attributes = span.attributes
        values: tuple[Any, ...] = tuple(attributes.values())
        if list in map(type, values):
            values = tuple([tuple(v) if v.__class__ is list else v for v in values])
        # Keys then values flat after the fields, not a nested tuple of pairs: each
        # collection untracks one level of nesting only.
        return (
            span.trace_id,
            span.span_id,
            span.parent_span_id,
            span.name,
            span.kind,
            span.start_ns,
            span.end_ns,
            span.status_code,
            span.status_message,
            resource,
            span.scope,
            *attributes,
            *values,
        )

    def unpack(self, held: _Held) -> SpanRecord:
        if isinstance(held, SpanRecord):
            return held
        trace_id, span_id, parent, name, kind, start, end, code, message, resource, scope = held[
            :_PACKED_FIELDS
        ]
        middle = (len(held) + _PACKED_FIELDS) // 2
        values = held[middle:]
        attributes = dict(zip(held[_PACKED_FIELDS:middle], values, strict=True))
        if tuple in map(type, values):
            for key, value in attributes.items():
                if value.__class__ is tuple:
                    attributes[key] = list(value)
        return SpanRecord(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            name=name,
            kind=kind,
            start_ns=start,
            end_ns=end,
            attributes=attributes,
            status_code=code,
            status_message=message,
            resource=self._resources[resource],
            scope=scope,
        )


@dataclass(slots=True, kw_only=True)
class LiveTrace:
    """The records of one released trace, and how it left.

    Its spans stay packed (see :class:`_SpanPacker`) until :attr:`spans` is first read:
    when the worker falls behind, hundreds of released traces wait to be scored, and
    unpacked they would be a dozen tracked objects per span for every collection to walk,
    on the agent's thread too.

    Attributes:
        trace_id: Hex trace id.
        held: Its spans as they were held in flight (emptied once unpacked).
        unpack: Turns a held span back into its record.
        logs: Correlated log records in arrival order.
        root_seen: A span without a (local) parent arrived: one that marks the end of the
            run (:mod:`tracescore.conventions.run_end`).
        damaged: Some of its records were lost before assembly.
        last_s: Clock time of its last record.
        kind: How it left.
        drop_reason: Why a dropped trace was dropped.

    """

    trace_id: str
    held: Sequence[_Held]
    unpack: Callable[[_Held], SpanRecord]
    logs: Sequence[LogRecord] = ()
    root_seen: bool = False
    damaged: bool = False
    last_s: float = 0.0
    kind: ReleaseKind = "complete"
    drop_reason: str | None = None
    _spans: list[SpanRecord] | None = field(default=None, init=False, repr=False)

    @property
    def spans(self) -> list[SpanRecord]:
        """Spans in arrival order (unpacked on first read, then kept)."""
        spans = self._spans
        if spans is None:
            spans = self._spans = list(map(self.unpack, self.held))
            self.held = ()
        return spans


# A trace in flight is a plain tuple, replaced on every record: (last_s, root_seen,
# damaged, spans, logs). An object of a class is always tracked by the collector; a tuple
# of untracked items is untracked after one collection, so a busy agent's thousands of
# traces in flight are not walked by every full collection. ``spans`` holds packed spans
# (see _SpanPacker), in a tuple copied on append until _TUPLE_SPANS, then in a list;
# ``logs`` is () until the first log record (most live traces have none).
_Flight = tuple[float, bool, bool, "tuple[_Held, ...] | list[_Held]", Sequence[LogRecord]]
_LAST: Final = 0
_ROOT: Final = 1
_DAMAGED: Final = 2
_SPANS: Final = 3
_LOGS: Final = 4
_NEW: Final[_Flight] = (0.0, False, False, (), ())


class LiveAssembler:
    """Collects live records per trace and releases traces when complete.

    Not thread-safe: fed and polled from the live worker only.

    Args:
        idle_s: Quiet time after which a trace whose root arrived is complete.
        orphan_ttl_s: Quiet time after which a rootless trace is released incomplete.
        max_traces: Traces in flight; beyond it the due ones are released, else the
            least recently active (dropped unless its root has ended).
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
        self._pending: OrderedDict[str, _Flight] = OrderedDict()
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._released: list[LiveTrace] = []  # released while adding
        self._packer = _SpanPacker()
        #: Records not assembled, by reason (read and reset by the worker).
        self.dropped: Counter[SpanDropReason] = Counter()

    @property
    def in_flight(self) -> int:
        """Traces currently held."""
        return len(self._pending)

    def _open(self, trace_id: str, now: float) -> _Flight | None:
        """The trace's state, moved to the most recent end; None when it was released.

        A trace not seen yet gets a fresh state, which the caller stores (making room
        first, so the bound holds even while a batch is being added: the in-flight gauge
        is read from another thread).
        """
        pending = self._pending
        flight = pending.get(trace_id)
        if flight is not None:
            pending.move_to_end(trace_id)
            return flight
        if trace_id in self._recent:
            return None
        if len(pending) >= self.max_traces:
            self._make_room(now)
        return _NEW

    def _make_room(self, now: float) -> None:
        """Free one place at least: release the due traces, else the oldest one.

        Due traces go first: when the worker falls behind, the assembler fills with traces
        that are complete and only waiting for their window. When none is due, the least
        recently active trace leaves: released at once when its root has ended (its
        window cut short: a record still to come is late, counted), dropped otherwise.
        Why not drop it either way: a worker working off a backlog assembles traces
        faster than their windows pass, so the oldest is usually complete, and dropping
        finished work makes an overloaded worker fall further behind.
        """
        released = self._released
        ripe = self._release_ripe(now)
        if ripe:
            released.extend(ripe)
            return
        oldest_id, oldest = self._pending.popitem(last=False)
        if oldest[_ROOT]:
            released.append(self._release(oldest_id, oldest))
            return
        self.dropped["trace_evicted"] += len(oldest[_SPANS])
        released.append(self._release(oldest_id, oldest, "dropped", "max_traces"))

    def add(
        self,
        spans: Iterable[SpanRecord],
        logs: Iterable[LogRecord] = (),
        *,
        local_roots: Container[str] = frozenset(),
    ) -> list[LiveTrace]:
        """Add records; return traces released to respect ``max_traces`` (possibly none).

        Args:
            spans: Spans to add, read once: a generator that converts them one at a time
                keeps a single span object alive, not a batch of them.
            logs: Log records to add, read once.
            local_roots: Ids of spans whose parent is remote: roots of this process's
                part of the trace (the processor knows; OTLP input does not say). Asked
                about a span after ``spans`` has yielded it.

        """
        now = self._clock()
        pending = self._pending
        pack = self._packer.pack
        limit = self.max_spans_per_trace
        end_scopes = run_end.SCOPES
        for span in spans:
            trace_id = span.trace_id
            flight = self._open(trace_id, now)
            if flight is None:
                self.dropped["late_record"] += 1
                continue
            _, root, damaged, held, trace_logs = flight
            if len(held) >= limit:
                self.dropped["trace_too_large"] += 1
            else:
                if isinstance(held, list):
                    held.append(pack(span))
                elif len(held) < _TUPLE_SPANS:
                    held = (*held, pack(span))
                else:
                    held = [*held, pack(span)]
                ends = span.parent_span_id is None or span.span_id in local_roots
                if span.scope in end_scopes:
                    ends = run_end.ends_run(span, root=ends)
                if ends:
                    root = True
            pending[trace_id] = (now, root, damaged, held, trace_logs)
        for log in logs:
            if not log.trace_id:
                self.dropped["no_trace_id"] += 1
                continue
            trace_id = log.trace_id
            flight = self._open(trace_id, now)
            if flight is None:
                self.dropped["late_record"] += 1
                continue
            _, root, damaged, held, trace_logs = flight
            if isinstance(trace_logs, list):
                trace_logs.append(log)
            else:
                trace_logs = [log]
            pending[trace_id] = (now, root, damaged, held, trace_logs)
        return self._take_released()

    def damage(self, trace_id: str) -> list[LiveTrace]:
        """Mark a trace as having lost records; it will be released as dropped.

        It leaves once quiet for ``idle_s``, root or not. A trace not seen yet is opened
        (its other records may still come); one released already is left alone (the lost
        record was late anyway). Returns the traces released to make room, as
        :meth:`add` does.
        """
        now = self._clock()
        flight = self._open(trace_id, now)
        if flight is not None:
            self._pending[trace_id] = (now, flight[_ROOT], True, flight[_SPANS], flight[_LOGS])
        return self._take_released()

    def _take_released(self) -> list[LiveTrace]:
        out, self._released = self._released, []
        return out

    def due(self) -> list[LiveTrace]:
        """Traces whose window has passed, least recently active first."""
        return self._release_ripe(self._clock())

    def _release_ripe(self, now: float) -> list[LiveTrace]:
        """Release the traces whose window has passed at ``now``, oldest first."""
        ripe = []
        # Only the quiet head is visited (no copy of every key): the worker calls this
        # between every chunk of a backlog.
        for trace_id, flight in self._pending.items():
            quiet = now - flight[_LAST]
            if quiet < self.idle_s:
                break  # ordered by last activity: everything after is fresher
            # A damaged trace is dropped whatever comes: waiting for its root (perhaps
            # the span the queue lost) would hold its place for the orphan TTL.
            if flight[_ROOT] or flight[_DAMAGED] or quiet >= self.orphan_ttl_s:
                ripe.append(trace_id)
        return [self._release(t, self._pending.pop(t)) for t in ripe]

    def flush(self) -> list[LiveTrace]:
        """Release every trace in flight (force flush, shutdown)."""
        out = [self._release(t, flight) for t, flight in self._pending.items()]
        self._pending.clear()
        return out

    def _release(
        self,
        trace_id: str,
        flight: _Flight,
        kind: ReleaseKind | None = None,
        reason: str | None = None,
    ) -> LiveTrace:
        """The released trace, spans still packed; ``kind`` None: complete once rooted."""
        last_s, root, damaged, held, logs = flight
        if kind is None:
            kind = "complete" if root else "incomplete"
        if damaged and kind != "dropped":
            kind, reason = "dropped", "queue_full"
        self._recent[trace_id] = None
        if len(self._recent) > _RECENT_MAX:
            self._recent.popitem(last=False)
        return LiveTrace(
            trace_id=trace_id,
            held=held,
            unpack=self._packer.unpack,
            logs=logs,
            root_seen=root,
            damaged=damaged,
            last_s=last_s,
            kind=kind,
            drop_reason=reason,
        )
