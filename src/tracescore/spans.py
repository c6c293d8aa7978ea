"""The normalised span and log records every input source is turned into.

Three sources feed the pipeline: the OTel SDK's ``ReadableSpan`` (live processor), OTLP
protobuf (receiver, binary files) and OTLP JSON (receiver, files). Each has an adapter in
:mod:`tracescore.formats` that yields the records below; nothing past that point knows
where a span came from.

Attribute values are plain Python values (``AttrValue``): OTLP ``AnyValue`` unwrapped, with
``kvlistValue`` as ``dict`` and ``arrayValue`` as ``list``. Content attributes that carry JSON
as a *string* (most GenAI conventions) stay strings here; convention readers parse them
only when they need them, which keeps import fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

__all__ = [
    "STATUS_ERROR",
    "STATUS_OK",
    "STATUS_UNSET",
    "AttrValue",
    "Attributes",
    "LogRecord",
    "Origin",
    "SpanEvent",
    "SpanRecord",
]

AttrValue: TypeAlias = (
    str | bool | int | float | bytes | None | list["AttrValue"] | dict[str, "AttrValue"]
)
Attributes: TypeAlias = dict[str, AttrValue]

STATUS_UNSET: Final = 0
STATUS_OK: Final = 1
STATUS_ERROR: Final = 2

_EMPTY: Final[Attributes] = {}


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a record was read from, for error messages.

    Attributes:
        path: File path, ``"-"`` for stdin, or a label such as ``"otlp-http"``.
        line: 1-based line (JSON Lines) or record number (length-prefixed protobuf).

    """

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"


@dataclass(slots=True, kw_only=True)
class SpanEvent:
    """An event recorded on a span."""

    name: str
    time_ns: int = 0
    attributes: Attributes = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class SpanRecord:
    """One finished span, independent of the source it was read from.

    Ids are lowercase hex (32 chars for traces, 16 for spans); ``parent_span_id`` is
    ``None`` for a root span. ``kind`` uses OTLP numbering (0 unspecified, 1 internal,
    2 server, 3 client, 4 producer, 5 consumer), i.e. the SDK's ``SpanKind`` value + 1.
    ``resource`` is shared by all spans of one resource block and must be treated as
    read-only.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    attributes: Attributes = field(default_factory=dict)
    #: A tuple when empty (most spans): one object fewer for the garbage collector to
    #: scan per span held in flight.
    events: Sequence[SpanEvent] = ()
    status_code: int = STATUS_UNSET
    status_message: str | None = None
    resource: Attributes = field(default_factory=dict)
    scope: str | None = None
    origin: Origin | None = None


@dataclass(slots=True, kw_only=True)
class LogRecord:
    """One OTel log record; GenAI content events are log records correlated by ids.

    ``trace_id``/``span_id`` are ``None`` when the record carries none; such a record
    cannot be tied to a trajectory and is only counted.
    """

    trace_id: str | None
    span_id: str | None
    time_ns: int = 0
    event_name: str | None = None
    body: AttrValue = None
    attributes: Attributes = field(default_factory=dict)
    severity_text: str | None = None
    resource: Attributes = field(default_factory=dict)
    scope: str | None = None
    origin: Origin | None = None

    @property
    def name(self) -> str | None:
        """The event name: ``eventName`` or, for older emitters, the ``event.name`` attribute."""
        if self.event_name:
            return self.event_name
        value = self.attributes.get("event.name")
        return value if isinstance(value, str) else None
