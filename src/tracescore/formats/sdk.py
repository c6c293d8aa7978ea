"""The OTel Python SDK's finished spans and log records as records (the live processor's input).

Both converters are cheap enough for a span processor's worker: no parsing, one pass over
the attributes, and resource attributes converted once per ``Resource`` object and then
shared (records must treat ``resource`` as read-only, see :class:`~tracescore.spans.SpanRecord`).

Span kinds use OTLP numbering (0 unspecified, 1 internal, 2 server, 3 client, 4 producer,
5 consumer), as the OTLP exporter writes them, so a span decoded here equals the same span
exported and decoded from OTLP; the SDK's own ``SpanKind`` values start at 0 for internal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, overload

from opentelemetry._logs import LogRecord as APILogRecord
from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from tracescore.json_text import clean_text
from tracescore.spans import Attributes, AttrValue, LogRecord, SpanEvent, SpanRecord

__all__ = ["from_readable_span", "from_sdk_log"]

_RESOURCE_CACHE_SIZE: Final = 32
_SCALARS: Final = frozenset({str, bool, int, float})
# Allocating and calling __init__ directly skips the kwargs dict CPython builds when a
# class is called with keyword arguments: same __init__, about half the cost.
_new: Final = object.__new__
_init_span: Final = SpanRecord.__init__
_init_event: Final = SpanEvent.__init__
_init_log: Final = LogRecord.__init__

# id(resource) -> (resource, its attributes). Keeping the Resource in the value pins it,
# so its id cannot be reused while cached; a process has one or a few resources.
_resource_cache: dict[int, tuple[Resource, Attributes]] = {}


#: Deeper values (log bodies of arbitrary structure) are cut here instead of recursing
#: into a RecursionError; no instrumentation nests anywhere near this.
_MAX_DEPTH: Final = 200
_TOO_DEEP: Final = f"<nested deeper than {_MAX_DEPTH} levels>"


def _plain(value: object, depth: int = 0) -> AttrValue:
    """An SDK attribute or log body value as a plain value (sequences and mappings unwrapped)."""
    if depth >= _MAX_DEPTH:
        return _TOO_DEEP
    if isinstance(value, (tuple, list)):  # the SDK stores sequences as tuples
        scalars = _SCALARS
        # An exact class in _SCALARS is an AttrValue (mypy cannot see that from `in`);
        # only non-ASCII strings need the call that cleans them.
        return [
            item  # type: ignore[misc]
            if item.__class__ in scalars and (item.__class__ is not str or item.isascii())
            else _plain(item, depth + 1)
            for item in value
        ]
    if isinstance(value, str):
        return clean_text(value)
    if value is None or isinstance(value, (int, float, bytes)):  # bool is an int
        return value
    if isinstance(value, Mapping):
        return {clean_text(str(key)): _plain(item, depth + 1) for key, item in value.items()}
    return clean_text(str(value))


@overload
def _text(value: str) -> str: ...
@overload
def _text(value: str | None) -> str | None: ...
def _text(value: str | None) -> str | None:
    """A name or message as the SDK holds it, without lone surrogates (see ``json_text``)."""
    if isinstance(value, str) and not value.isascii():
        return clean_text(value)
    return value


def _attributes(attributes: Mapping[str, object] | None) -> Attributes:
    if attributes is None:
        return {}
    out: Attributes = {}
    scalars = _SCALARS
    # Keys and [], not items(): on the SDK's BoundedAttributes behind a MappingProxy,
    # items() runs the Mapping ABC in Python, iterating keys stays in C.
    for key in attributes:
        value = attributes[key]
        if value.__class__ not in scalars or (value.__class__ is str and not value.isascii()):
            value = _plain(value)
        # A bare API log record's keys are not checked: any hashable may come here.
        name = key if key.__class__ is str and key.isascii() else clean_text(str(key))
        out[name] = value  # type: ignore[assignment]  # see _plain
    return out


def _resource_attributes(resource: Resource | None) -> Attributes:
    if resource is None:
        return {}
    entry = _resource_cache.get(id(resource))
    if entry is not None and entry[0] is resource:
        return entry[1]
    attributes = _attributes(resource.attributes)
    if len(_resource_cache) >= _RESOURCE_CACHE_SIZE:
        _resource_cache.clear()
    _resource_cache[id(resource)] = (resource, attributes)
    return attributes


def from_readable_span(span: ReadableSpan) -> SpanRecord:
    """A finished SDK span as a :class:`SpanRecord` (``origin`` is None).

    Raises:
        ValueError: the span has no span context (never the case for SDK spans).

    """
    context = span.context
    if context is None:
        raise ValueError(f"span {span.name!r} has no span context")
    parent = span.parent
    status = span.status
    scope = span.instrumentation_scope
    record = _new(SpanRecord)
    _init_span(
        record,
        trace_id=f"{context.trace_id:032x}",
        span_id=f"{context.span_id:016x}",
        parent_span_id=f"{parent.span_id:016x}" if parent is not None and parent.span_id else None,
        name=_text(span.name),
        kind=span.kind.value + 1,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=_attributes(span.attributes),
        events=[_event(event) for event in span.events] if span.events else (),
        status_code=status.status_code.value,
        status_message=_text(status.description) or None,
        resource=_resource_attributes(span.resource),
        scope=(_text(scope.name) or None) if scope is not None else None,
    )
    return record


def _event(event: Event) -> SpanEvent:
    record = _new(SpanEvent)
    _init_event(
        record,
        name=_text(event.name),
        time_ns=event.timestamp,
        attributes=_attributes(event.attributes),
    )
    return record


def from_sdk_log(record: ReadableLogRecord | ReadWriteLogRecord | APILogRecord) -> LogRecord:
    """An SDK log record as a :class:`LogRecord` (``origin`` is None).

    Accepts what the SDK hands to exporters and processors (``ReadableLogRecord``,
    ``ReadWriteLogRecord``) and a bare API ``LogRecord``, which has no resource or scope.
    Older SDKs' ``LogData`` (a ``log_record`` plus ``instrumentation_scope``, with the
    resource on the inner record) is read the same way. A zero trace or span id is None;
    the time is ``timestamp``, else ``observed_timestamp``.
    """
    inner: APILogRecord
    scope: InstrumentationScope | None
    if isinstance(record, (ReadableLogRecord, ReadWriteLogRecord)):
        inner = record.log_record
        resource = record.resource
        scope = record.instrumentation_scope
    else:
        legacy = getattr(record, "log_record", None)  # an older SDK's LogData
        inner = record if legacy is None else legacy
        resource = getattr(inner, "resource", None)
        scope = getattr(record, "instrumentation_scope", None)
    trace_id = inner.trace_id
    span_id = inner.span_id
    log = _new(LogRecord)
    _init_log(
        log,
        trace_id=f"{trace_id:032x}" if trace_id else None,
        span_id=f"{span_id:016x}" if span_id else None,
        time_ns=inner.timestamp or inner.observed_timestamp or 0,
        event_name=_text(getattr(inner, "event_name", None)) or None,
        body=_plain(inner.body),
        attributes=_attributes(inner.attributes),
        severity_text=_text(inner.severity_text) or None,
        resource=_resource_attributes(resource),
        scope=(_text(scope.name) or None) if scope is not None else None,
    )
    return log
