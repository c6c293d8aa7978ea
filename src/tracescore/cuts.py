"""Where the parts of a parallel import meet: decide what a one-process import would do.

A worker imports its part of a file as if it were the whole input (:mod:`tracescore.part_worker`),
except for the traces that may cross a cut, which it sends back raw: those it *held*
(first seen near the start of its part, with an id also seen near the end of the part
before) and those still in flight at its end whose id shows up in the next part's head.
:class:`CutJoiner` takes the parts' reports in order and replays, for those traces only,
the rules of :class:`tracescore.assembly.TraceAssembler`, which depend on record
positions alone: counted from the start of the input, a trace is released after the
first batch that ends at least a window after its last record, and a record of a
released trace is late while it comes within ``recent_records`` of the release. So a
piece of a trace is merged into the piece before it, dropped as late, or starts the
trace, exactly as one assembler reading the whole input would have done.

Some inputs cannot be settled from the edges: a trace whose records come back far into
a later part (an export retried long after, say) was already turned into invocations by
two workers, and ``max_traces`` evictions depend on what all parts hold at once. Those
raise :class:`Diverged`, and the caller imports the input in one process instead: slower,
never different.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tracescore.assembly import AssembledTrace

__all__ = ["CutJoiner", "Diverged", "PartEdges"]


class Diverged(Exception):
    """A part's outcome may differ from a one-process import's: import in one process."""


@dataclass(slots=True, kw_only=True)
class PartEdges:
    """What a worker reports about its part besides the invocations it built.

    Positions are counted from the start of the part (its assembler's record count).
    """

    #: Records the part's assembler counted (dropped ones included).
    records: int
    #: Id of every trace the worker started, sent back or not.
    trace_ids: list[str]
    #: The traces sent back raw, in the order the worker had them.
    boundary: list[AssembledTrace]
    #: Traces the worker released near its end: id → position of the release.
    released_tail: dict[str, int]
    peak_in_flight: int = 0
    evictions: int = 0
    largest_batch: int = 0


@dataclass(slots=True)
class _Carried:
    trace: AssembledTrace
    #: Position of its last record so far, from the start of the input.
    last: int
    root: bool


@dataclass(slots=True)
class CutJoiner:
    """Joins the traces sent back by the workers, part after part.

    Args:
        idle_records: The assemblers' idle window.
        recent_records: The assemblers' ``recent_records``.
        max_traces: The assemblers' ``max_traces``.
        max_spans_per_trace: The assemblers' span cap.

    """

    idle_records: int
    recent_records: int
    max_traces: int
    max_spans_per_trace: int
    #: Records dropped (or re-labelled: ``trace_too_large`` may go negative) by the
    #: joining: add to the parts' own counts.
    dropped: Counter[str] = field(default_factory=Counter)
    _offset: int = 0
    _carry: dict[str, _Carried] = field(default_factory=dict)
    #: Released traces: id → (earliest, latest) position the release may have had.
    _gone: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Earlier parts: (position of their last record, ids of the traces they started).
    _earlier: list[tuple[int, frozenset[str]]] = field(default_factory=list)
    _largest_batch: int = 0

    def add(self, edges: PartEdges) -> list[AssembledTrace]:
        """Take the next part's report; return the traces now complete, to rebuild.

        Raises:
            Diverged: The part's outcome cannot be settled from the edges.

        """
        start = self._offset
        if edges.evictions or edges.peak_in_flight + len(self._carry) > self.max_traces:
            raise Diverged("the traces in flight reached max_traces in a part")
        self._largest_batch = max(self._largest_batch, edges.largest_batch)
        sent = {t.trace_id for t in edges.boundary}
        # Where in the part a trace the worker built began is not reported: its start
        # stands for it (which can only find more traces met before).
        seen_before = self._seen_before(start)
        for tid in edges.trace_ids:
            if tid not in sent and (tid in seen_before or tid in self._carry or tid in self._gone):
                raise Diverged(f"trace {tid} has records far apart, in two parts (a retry?)")
        done: list[AssembledTrace] = []
        for piece in edges.boundary:
            self._place(piece, start, done)
        end = start + edges.records
        for tid, carried in list(self._carry.items()):
            due = carried.last + self._window(carried.root)
            if end >= due:
                # Released after a batch of this part (its last one ends at `end`): no
                # record of it came since (this part sent every one it had). A part
                # shorter than the window may not get there: then it waits for the next.
                del self._carry[tid]
                self._gone[tid] = (due, end)
                done.append(carried.trace)
        for tid, seq in edges.released_tail.items():
            self._gone[tid] = (start + seq, start + seq)
        self._offset = end
        self._earlier.append((self._offset, frozenset(edges.trace_ids)))
        self._forget(self._offset)
        return done

    def finish(self) -> list[AssembledTrace]:
        """The traces still in flight at the end of the input."""
        done = [c.trace for c in self._carry.values()]
        self._carry.clear()
        return done

    def _window(self, root: bool) -> int:
        return self.idle_records if root else 2 * self.idle_records

    def _reach(self) -> int:
        # A trace last seen at or before position `end` was released by end + 2 windows
        # + a batch; a record more than `recent_records` after that starts a new trace.
        return self.recent_records + 2 * self.idle_records + self._largest_batch

    def _seen_before(self, position: int) -> set[str]:
        """Ids started by earlier parts whose release a record at ``position`` may meet."""
        found: set[str] = set()
        for end, ids in self._earlier:
            if position - end <= self._reach():
                found |= ids
        return found

    def _forget(self, now: int) -> None:
        reach = self._reach()
        self._earlier = [(end, ids) for end, ids in self._earlier if now - end <= reach]
        self._gone = {t: (lo, hi) for t, (lo, hi) in self._gone.items() if now - hi <= reach}

    def _place(self, piece: AssembledTrace, start: int, done: list[AssembledTrace]) -> None:
        """Merge, drop or start ``piece`` (positions relative to ``start``)."""
        tid = piece.trace_id
        first, last = start + piece.first_seq, start + piece.last_seq
        carried = self._carry.get(tid)
        if carried is not None:
            window = self._window(carried.root)
            if start + piece.first_start < carried.last + window:
                self._check_gaps(piece, rooted=carried.root)
                self._merge(carried, piece)
                carried.last = last
                carried.root = carried.root or piece.root_seen
                return
            # Released before the batch that brought this piece.
            del self._carry[tid]
            self._gone[tid] = (carried.last + window, start + piece.first_start)
            done.append(carried.trace)
        gone = self._gone.get(tid)
        if gone is not None:
            earliest, latest = gone
            if last - earliest <= self.recent_records:  # every record of it comes late
                self.dropped["late_record"] += len(piece.spans) + len(piece.logs) + piece.capped
                self.dropped["trace_too_large"] -= piece.capped
                return
            if first - latest <= self.recent_records:
                raise Diverged(f"trace {tid} comes back about when its release is forgotten")
            del self._gone[tid]  # forgotten: a new trace
        elif any(tid in ids and first - end <= self._reach() for end, ids in self._earlier):
            raise Diverged(f"trace {tid} has records far apart, in two parts (a retry?)")
        self._check_gaps(piece, rooted=False)
        self._carry[tid] = _Carried(piece, last, piece.root_seen)

    def _check_gaps(self, piece: AssembledTrace, *, rooted: bool) -> None:
        """A held piece was never released in its part: it must not have been due."""
        if rooted:
            ok = max(piece.gap_open, piece.gap_rooted) < self.idle_records
        else:
            ok = piece.gap_open < 2 * self.idle_records and piece.gap_rooted < self.idle_records
        if not ok:
            raise Diverged(f"trace {piece.trace_id} pauses longer than the idle window at a cut")

    def _merge(self, carried: _Carried, piece: AssembledTrace) -> None:
        into = carried.trace
        room = max(0, self.max_spans_per_trace - len(into.spans))
        into.spans.extend(piece.spans[:room])
        self.dropped["trace_too_large"] += max(0, len(piece.spans) - room)
        into.logs.extend(piece.logs)
        into.root_seen = into.root_seen or piece.root_seen
