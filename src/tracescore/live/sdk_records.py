"""The span processor's queued SDK records, converted for the assembler one at a time.

A queued ``ReadableSpan`` is a dozen objects the garbage collector scans again at every
collection, on whichever thread allocates, the agent's included; a span in the assembler
is packed into tuples the collector stops tracking (see :mod:`tracescore.live.assembly`).
So the worker converts them lazily, each record handed over before the next exists.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.spans import LogRecord, SpanRecord

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["Taken", "take_logs", "take_spans"]


@dataclass(slots=True)
class Taken:
    """What one step took from the queues: converted records, and the local roots.

    ``local_roots``: ids of spans whose parent is remote (another process's span), the
    roots of this process's part of a distributed trace.
    """

    spans: int = 0
    logs: int = 0
    local_roots: set[str] = field(default_factory=set)


def take_spans(
    queue: deque[ReadableSpan], count: int, taken: Taken, unreadable: Callable[[], None]
) -> Iterator[SpanRecord]:
    """Pop ``count`` spans off ``queue`` as records; ``unreadable()`` for each one skipped."""
    for _ in range(count):
        span = queue.popleft()
        try:
            record = from_readable_span(span)
        except Exception:  # a span the converter cannot read: count, go on
            unreadable()
            continue
        parent = span.parent
        if parent is not None and parent.is_remote:
            taken.local_roots.add(record.span_id)
        taken.spans += 1
        yield record


def take_logs(
    queue: deque[ReadableLogRecord | ReadWriteLogRecord],
    count: int,
    taken: Taken,
    unreadable: Callable[[], None],
) -> Iterator[LogRecord]:
    """Pop ``count`` log records off ``queue`` as records (same contract)."""
    for _ in range(count):
        try:
            record = from_sdk_log(queue.popleft())
        except Exception:  # a record the converter cannot read: count, go on
            unreadable()
            continue
        taken.logs += 1
        yield record
