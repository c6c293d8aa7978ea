"""The unit every reader yields: the records of one export batch, plus what was wrong in it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tracescore.exceptions import TraceFormatError
from tracescore.spans import LogRecord, Origin, SpanRecord

__all__ = ["Batch"]


@dataclass(slots=True, kw_only=True)
class Batch:
    """Records decoded from one export batch (one JSON line, one protobuf message, ...).

    A batch with errors may still carry good records: one bad span never costs its
    neighbours. ``errors`` are located (path, line, span id when known). ``reread``,
    when the reader can offer it cheaply (its bytes are still in memory), decodes the
    batch again into equal records (see parking in :mod:`tracescore.assembly`).
    """

    origin: Origin | None = None
    spans: list[SpanRecord] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    errors: list[TraceFormatError] = field(default_factory=list)
    reread: Callable[[], Batch] | None = None
