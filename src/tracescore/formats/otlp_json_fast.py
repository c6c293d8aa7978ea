"""OTLP/JSON spans in the Collector's own spelling, decoded from parsed JSON with few checks.

The quick path of :mod:`tracescore.formats.otlp_json` for documents already parsed into
dicts (a trace file read whole, a Jaeger v3 ``result``, a receiver request the typed
decoder of :mod:`tracescore.formats.otlp_json_typed` declined). It handles camelCase
keys, hex ids, integers as decimal strings, and integer enums with little more than
dict lookups.

Contract: :func:`span_fast` either returns exactly the record the checked path
(``otlp_json._span_lenient``) returns for the same span, or raises one of
:data:`FAST_ERRORS`, after which the caller decodes the span again on the checked path,
which is the reference for what is accepted and for the error message. A property test
holds the two to that.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

from tracescore.formats.anyvalue import INT64_MAX, INT64_MIN, UINT64_MAX, json_any_value
from tracescore.spans import Attributes, Origin, SpanEvent, SpanRecord

__all__ = ["FAST_ERRORS", "NotFast", "span_fast"]

# Decoded, untrusted JSON. Every access to it is guarded: any surprise raises one of
# FAST_ERRORS and the record is decoded again by the checked path.
UntrustedJSON: TypeAlias = Any


class NotFast(Exception):
    """The quick path met something it does not handle; use the checked path."""


#: What :func:`span_fast` raises for a span it does not handle.
FAST_ERRORS: Final = (NotFast, KeyError, TypeError, ValueError, AttributeError, RecursionError)
# Calling a dataclass with keyword arguments makes CPython build a kwargs dict (through
# type.__call__); allocating and calling __init__ directly runs the same __init__ about
# twice as fast, which matters on per-record paths.
_new: Final = object.__new__
_init_span: Final = SpanRecord.__init__
_init_event: Final = SpanEvent.__init__
_ZERO_TRACE_ID: Final = "0" * 32
_ZERO_SPAN_ID: Final = "0" * 16


def _attrs_fast(kvs: UntrustedJSON) -> Attributes:
    if kvs.__class__ is not list:
        if kvs is None:
            return {}
        raise NotFast
    out: Attributes = {}
    for kv in kvs:
        key = kv["key"]
        value = kv["value"]
        if key.__class__ is not str:
            raise NotFast
        string = value.get("stringValue")
        if string.__class__ is str:
            out[key] = string
            continue
        integer = value.get("intValue")  # alone: with other keys, the first one decides
        if integer.__class__ is str and len(value) == 1:
            number = int(integer)
            if number < INT64_MIN or number > INT64_MAX:
                raise NotFast
            out[key] = number
        else:
            out[key] = json_any_value(value)
    return out


def _id(raw: UntrustedJSON, ids: dict[str, str], zero: str) -> str:
    """Lowercase hex of a hex id as long as ``zero`` and not all zeros, remembered in ``ids``."""
    hex_id = ids.get(raw)
    if hex_id is None:
        hex_id = bytes.fromhex(raw).hex()
        if len(hex_id) != len(zero) or len(raw) != len(zero) or hex_id == zero:
            raise NotFast
        ids[raw] = hex_id
    return hex_id


def span_fast(
    span: UntrustedJSON,
    resource: Attributes,
    scope: str | None,
    origin: Origin | None,
    trace_ids: dict[str, str],
    span_ids: dict[str, str],
) -> SpanRecord:
    """The Collector's own JSON, decoded quickly; raises one of :data:`FAST_ERRORS` otherwise.

    ``trace_ids`` and ``span_ids`` map raw ids already checked in this batch to their hex
    form: trace ids and parent ids repeat. A raw id is cached only after passing the
    length check of its kind; one map per kind, as bad input may put the text of a span
    id where a trace id belongs.
    """
    trace_id = _id(span["traceId"], trace_ids, _ZERO_TRACE_ID)
    span_id = _id(span["spanId"], span_ids, _ZERO_SPAN_ID)
    raw = span.get("parentSpanId")
    if raw is None and "parent_span_id" in span:
        raise NotFast  # mixed key styles: the checked path reads the snake_case key
    if raw is None or raw == "":
        parent = None
    else:
        parent = span_ids.get(raw)
        if parent is None:
            parent = bytes.fromhex(raw).hex()
            if len(parent) != 16 or len(raw) != 16:
                raise NotFast
            if parent == _ZERO_SPAN_ID:
                parent = None
            else:
                span_ids[raw] = parent
    name = span.get("name", "")
    kind = span.get("kind", 0)
    start = span.get("startTimeUnixNano")  # a missing time may be spelled in snake_case
    end = span.get("endTimeUnixNano")
    if (
        name.__class__ is not str
        or kind.__class__ is not int
        or kind < 0
        or kind > 5
        or (start.__class__ is not str and start.__class__ is not int)
        or (end.__class__ is not str and end.__class__ is not int)
    ):
        raise NotFast
    attributes = _attrs_fast(span.get("attributes"))
    events: list[SpanEvent] = []
    raw_events = span.get("events")
    if raw_events is not None:
        if raw_events.__class__ is not list:
            raise NotFast
        for event in raw_events:
            time = event.get("timeUnixNano")
            event_name = event.get("name", "")
            if (
                time.__class__ is not str and time.__class__ is not int
            ) or event_name.__class__ is not str:
                raise NotFast
            time_ns = int(time)
            if time_ns < INT64_MIN or time_ns > UINT64_MAX:
                raise NotFast
            record = _new(SpanEvent)
            _init_event(
                record,
                name=event_name,
                time_ns=time_ns,
                attributes=_attrs_fast(event.get("attributes")),
            )
            events.append(record)
    code = 0
    message = None
    status = span.get("status")
    if status is not None:
        code = status.get("code", 0)
        message = status.get("message")
        if code.__class__ is not int or code < 0 or code > 2:
            raise NotFast
        if message is not None:
            if message.__class__ is not str:
                raise NotFast
            message = message or None
    start_ns = int(start)
    end_ns = int(end)
    if start_ns < INT64_MIN or start_ns > UINT64_MAX or end_ns < INT64_MIN or end_ns > UINT64_MAX:
        raise NotFast
    span_record = _new(SpanRecord)
    _init_span(
        span_record,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=kind,
        start_ns=start_ns,
        end_ns=end_ns,
        attributes=attributes,
        events=events or (),
        status_code=code,
        status_message=message,
        resource=resource,
        scope=scope,
        origin=origin,
    )
    return span_record
