"""The OTLP/JSON messages as msgspec structs, for :mod:`~tracescore.formats.otlp_json_typed`.

They live apart from the decoder because the decoder is compiled with mypyc (see
``hatch_build.py``), and mypyc drops a class statement's keywords: compiled, these
structs would lose ``forbid_unknown_fields`` (another spelling of a field would be
skipped silently), ``frozen`` and ``gc``. This module stays interpreted; a test holds
every compiled module to class statements without keywords.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType

from tracescore.formats.anyvalue import INT64_MAX, INT64_MIN

__all__ = [
    "AnyValue",
    "ArrayValue",
    "Document",
    "EntityRef",
    "Event",
    "KeyValue",
    "KeyValueList",
    "Link",
    "Log",
    "Resource",
    "ResourceLogs",
    "ResourceSpans",
    "Scope",
    "ScopeLogs",
    "ScopeSpans",
    "Span",
    "Status",
]

# Integers within the signed 64-bit range (msgspec checks bounds up to there); any other
# goes to the reference path, which reads unsigned 64-bit values and knows what orjson
# does beyond them (floats, then failure past the float range). Fields the records do
# not keep are typed all the same (no ``Raw``, no ``Any``): skipped bytes would escape
# the checks orjson makes (UTF-8, number range), and a line it rejects could decode here.
_Int = Annotated[int, Meta(ge=INT64_MIN, le=INT64_MAX)]


# The structs mirror the OTLP/JSON messages field for field; unknown keys are refused so
# that another spelling of a known field (``parent_span_id``) can never be skipped
# silently. None are tracked by the garbage collector: they hold no cycles and live for
# one document.
class AnyValue(Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """OTLP/JSON ``AnyValue``, in the Collector's spelling."""

    stringValue: str | UnsetType = UNSET
    intValue: _Int | str | UnsetType = UNSET
    boolValue: bool | UnsetType = UNSET
    doubleValue: float | str | UnsetType = UNSET
    bytesValue: str | UnsetType = UNSET
    arrayValue: ArrayValue | UnsetType = UNSET
    kvlistValue: KeyValueList | UnsetType = UNSET


class ArrayValue(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``ArrayValue``, in the Collector's spelling."""

    values: list[AnyValue] = []


class KeyValueList(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``KeyValueList``, in the Collector's spelling."""

    values: list[KeyValue] = []


class KeyValue(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``KeyValue``, in the Collector's spelling."""

    key: str = ""  # proto3 JSON omits an empty key
    value: AnyValue = AnyValue()  # absent: no value, as an empty one


class EntityRef(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``EntityRef``, in the Collector's spelling."""

    schemaUrl: str = ""
    type: str = ""
    idKeys: list[str] = []
    descriptionKeys: list[str] = []


class Resource(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Resource``, in the Collector's spelling."""

    attributes: list[KeyValue] = []
    droppedAttributesCount: _Int = 0
    entityRefs: list[EntityRef] = []


class Scope(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Scope``, in the Collector's spelling."""

    name: str = ""
    version: str = ""
    attributes: list[KeyValue] = []
    droppedAttributesCount: _Int = 0


class Event(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Event``, in the Collector's spelling."""

    timeUnixNano: _Int | str
    name: str = ""
    attributes: list[KeyValue] = []
    droppedAttributesCount: _Int = 0


class Link(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Link``, in the Collector's spelling."""

    traceId: str = ""
    spanId: str = ""
    traceState: str = ""
    attributes: list[KeyValue] = []
    droppedAttributesCount: _Int = 0
    flags: _Int = 0


class Status(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Status``, in the Collector's spelling."""

    code: int = 0
    message: str = ""


class Span(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Span``, in the Collector's spelling."""

    traceId: str
    spanId: str
    startTimeUnixNano: _Int | str  # both required, as in the fast path
    endTimeUnixNano: _Int | str
    parentSpanId: str = ""
    name: str = ""
    kind: int = 0
    attributes: list[KeyValue] = []
    events: list[Event] | UnsetType = UNSET  # absent from most spans: no list to make
    status: Status | UnsetType = UNSET
    traceState: str = ""
    flags: _Int = 0
    links: list[Link] | UnsetType = UNSET
    droppedAttributesCount: _Int = 0
    droppedEventsCount: _Int = 0
    droppedLinksCount: _Int = 0


class ScopeSpans(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``ScopeSpans``, in the Collector's spelling."""

    scope: Scope | UnsetType = UNSET
    spans: list[Span] = []
    schemaUrl: str = ""


class ResourceSpans(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``ResourceSpans``, in the Collector's spelling."""

    resource: Resource | UnsetType = UNSET
    scopeSpans: list[ScopeSpans] = []
    schemaUrl: str = ""


class Log(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Log``, in the Collector's spelling."""

    timeUnixNano: _Int | str | UnsetType = UNSET
    observedTimeUnixNano: _Int | str | UnsetType = UNSET
    traceId: str = ""
    spanId: str = ""
    eventName: str = ""
    severityText: str = ""
    body: AnyValue | UnsetType = UNSET
    attributes: list[KeyValue] = []
    severityNumber: _Int = 0
    flags: _Int = 0
    droppedAttributesCount: _Int = 0


class ScopeLogs(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``ScopeLogs``, in the Collector's spelling."""

    scope: Scope | UnsetType = UNSET
    logRecords: list[Log] = []
    schemaUrl: str = ""


class ResourceLogs(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``ResourceLogs``, in the Collector's spelling."""

    resource: Resource | UnsetType = UNSET
    scopeLogs: list[ScopeLogs] = []
    schemaUrl: str = ""


class Document(Struct, forbid_unknown_fields=True, gc=False):
    """OTLP/JSON ``Document``, in the Collector's spelling."""

    resourceSpans: list[ResourceSpans] | UnsetType = UNSET
    resourceLogs: list[ResourceLogs] | UnsetType = UNSET
