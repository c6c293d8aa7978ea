"""What the span processor's hot path dropped, and from which traces (:class:`QueueDrops`).

When the intake queue is full, a record that arrives is dropped, on the agent's thread,
as the SDK's ``BatchSpanProcessor`` drops it. Dropping the queue's oldest instead freed
an old span there, from memory long out of cache: in the load test that put
``span.end()`` at 2.1-2.6x its time without the processor, against 1.1-1.35x now (the
same runs, alternating).

A trace that lost a span must not be scored on partial data, and must still end in
exactly one counted outcome (``dropped``), even when every one of its spans was lost: so
its id is remembered here for the worker, which marks the trace in the assembler. The
ids are bounded (a trace with many dropped spans in a row is remembered once); beyond
the bound the oldest id is forgotten and counted as *untracked*, which the worker
reports.

Thread-safety without a lock: :meth:`drop` and :meth:`drop_log` run on any application
thread, at once when the queue is full, and a lock there was the hot path's cost under
overload (two agent threads dropping flat out made 1.5x fewer spans with it: every
contended acquire hands the GIL over). They use only operations CPython makes atomic
under the GIL (``deque.append``, ``next`` on ``itertools.count``); the other methods run
on the worker.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["QueueDrops"]


class QueueDrops:
    """Counts of dropped records and the ids of the traces that lost spans.

    Args:
        max_traces: Trace ids remembered until the worker takes them.

    """

    def __init__(self, max_traces: int) -> None:
        self._dropped = itertools.count()  # next() per span dropped
        self._dropped_logs = itertools.count()  # next() per log record dropped
        self._remembered = itertools.count()  # next() per trace id appended
        self._traces: deque[int] = deque(maxlen=max_traces)
        self._taken = 0  # ids the worker took
        self._reported = (0, 0, 0)  # (spans, logs, untracked) at the last new_counts()

    def drop(self, span: ReadableSpan) -> None:
        """Count ``span`` as dropped (the caller does not queue it), remember its trace.

        O(1); never raises.
        """
        next(self._dropped)
        context = span.context
        trace_id = context.trace_id if context is not None else 0
        if not trace_id:
            return
        traces = self._traces
        # Spans of one trace end one after another: remember each trace once. Racing
        # threads may remember it twice, which marks the trace twice: harmless.
        try:
            if traces[-1] == trace_id:
                return
        except IndexError:  # empty (perhaps just now, by the worker)
            pass
        traces.append(trace_id)  # beyond maxlen, forgets the oldest id
        next(self._remembered)  # after the append: the worker never over-counts losses

    def drop_log(self) -> None:
        """Count a log record as dropped (the caller does not queue it; no trace marked)."""
        next(self._dropped_logs)

    def take_traces(self) -> Iterator[str]:
        """The remembered trace ids as hex, oldest first, each forgotten as it is taken."""
        traces = self._traces
        while True:
            try:
                trace_id = traces.popleft()
            except IndexError:
                return
            self._taken += 1
            yield f"{trace_id:032x}"

    def new_counts(self) -> tuple[int, int, int]:
        """Spans dropped, log records dropped and trace ids forgotten since the previous call.

        Forgotten ids are those remembered and neither taken nor still held. An id being
        appended right now is held and not yet counted as remembered, so the figure can
        lag by one but never runs ahead: a loss is only ever reported once it happened.
        """
        spans, logs = _value(self._dropped), _value(self._dropped_logs)
        untracked = _value(self._remembered) - self._taken - len(self._traces)
        before_spans, before_logs, before_untracked = self._reported
        untracked = max(untracked, before_untracked)  # a lag is caught up next time
        self._reported = (spans, logs, untracked)
        return spans - before_spans, logs - before_logs, untracked - before_untracked


def _value(counter: itertools.count[int]) -> int:
    """The next value ``counter`` would give, without taking it: ``repr`` is ``count(N)``."""
    return int(repr(counter)[6:-1])
