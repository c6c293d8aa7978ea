"""Jaeger v1 JSON (``/api/traces`` replies, UI trace downloads) to span records.

``{"data": [{"traceID", "spans", "processes": {"p1": {"serviceName", "tags"}}}], "errors"}``
maps onto :class:`~tracescore.spans.SpanRecord` as follows:

* ids: hex without leading zeros, so lowercased and left-padded to 32 / 16 digits;
* parent: the first ``CHILD_OF`` reference (no ``refType`` is ``CHILD_OF``, the protobuf
  default), else the first other reference in the same trace (``FOLLOWS_FROM``), else the
  legacy ``parentSpanID``. References to other traces are links, never parents;
* ``startTime`` / ``duration`` are microseconds; ``end_ns = (startTime + duration) * 1000``;
* tags: attributes with typed values (``int64`` a number or decimal string, ``binary``
  base64 → ``bytes``). The OTel Jaeger translator's tags are read back as the Collector's
  Jaeger receiver does, then dropped: ``span.kind`` → ``kind``; ``error=true``, else
  ``otel.status_code``, → status, ``otel.status_description`` → its message;
  ``otel.scope.name``/``otel.library.name`` → ``scope`` (versions dropped, as for OTLP);
* logs: events named by their ``event`` field (then dropped), else ``"log"``;
* a process (``processes[processID]`` or an embedded ``process``) is the resource: its
  tags plus ``service.name`` from ``serviceName``, one dict shared per process;
* ``warnings`` and ``flags`` are ignored.

Errors never escape :func:`decode_jaeger_v1`: a bad span is skipped with one located
:class:`~tracescore.exceptions.TraceFormatError`; its neighbours are kept.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Final, TypeAlias, TypeVar

from tracescore.exceptions import TraceFormatError
from tracescore.formats.anyvalue import INT64_MAX, UINT64_MAX, decode_base64, json_int, type_name
from tracescore.formats.base import Batch
from tracescore.spans import Attributes, AttrValue, Origin, SpanEvent, SpanRecord

__all__ = ["decode_jaeger_v1", "looks_like_jaeger_v1"]

logger = logging.getLogger(__name__)

_HEX: Final = frozenset("0123456789abcdef")
_KINDS: Final = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_CODES: Final = {"OK": 1, "ERROR": 2}  # SpanRecord.status_code
_SCOPE_TAGS: Final = ("otel.scope.name", "otel.library.name",
                       "otel.scope.version", "otel.library.version")  # fmt: skip
_NAMES: Final[dict[type, str]] = {str: "a string", list: "an array", dict: "an object"}
#: Times are nanoseconds in 64 unsigned bits (OTLP ``fixed64``): start plus duration too.
_MAX_MICROS: Final = UINT64_MAX // 1000 // 2
_T = TypeVar("_T")
_Resources: TypeAlias = dict[str, "Attributes | str"]  # process id -> resource, or error


def looks_like_jaeger_v1(doc: object) -> bool:
    """Whether ``doc`` is a Jaeger v1 reply: a ``data`` array, or ``errors`` with ``data``."""
    if not isinstance(doc, dict):
        return False
    data = doc.get("data")
    return isinstance(data, list) or (data is None and isinstance(doc.get("errors"), list))


def decode_jaeger_v1(doc: object, *, origin: Origin | None) -> Batch:
    """Decode one parsed Jaeger v1 JSON document into span records.

    Args:
        doc: The value ``orjson.loads`` returned for one JSON Lines line or one file.
        origin: Where the document came from; copied onto every record and error.

    Returns:
        The spans that decoded, and one located error for each span (or malformed trace,
        or error the API reported) that did not. Never raises for bad input.

    """
    batch = Batch(origin=origin)
    try:
        _document(doc, batch)
    except Exception as exc:  # a bug here must cost one batch, not the whole import
        logger.error("internal error decoding Jaeger JSON at %s", origin, exc_info=True)
        _fail(batch, f"internal error while decoding: {exc!r}")
    return batch


def _fail(batch: Batch, detail: str, span_id: str | None = None) -> None:
    """Record a :class:`TraceFormatError` located at the batch's origin and ``span_id``."""
    origin = batch.origin
    path, line = (origin.path, origin.line) if origin is not None else (None, None)
    batch.errors.append(TraceFormatError(detail, path=path, line=line, span_id=span_id))


def _typed(value: object, cls: type[_T], what: str) -> _T | None:
    """``value`` when it is None or a ``cls``; raises ValueError otherwise."""
    if value is None or isinstance(value, cls):
        return value
    raise ValueError(f"{what} must be {_NAMES[cls]}, got {type_name(value)}")


def _document(doc: object, batch: Batch) -> None:
    if not isinstance(doc, dict):
        _fail(batch, f"expected a JSON object, got {type_name(doc)}")
        return
    api_errors = doc.get("errors")
    for api_error in api_errors if isinstance(api_errors, list) else ():
        message = api_error.get("msg") if isinstance(api_error, dict) else api_error
        _fail(batch, f"the trace API returned an error: {message!r}")
    data = doc.get("data")
    if data is not None and not isinstance(data, list):
        _fail(batch, f"data must be an array, got {type_name(data)}")
        return
    for index, raw in enumerate(data or ()):
        try:
            trace = _typed(raw, dict, "trace") or {}
            spans = _typed(trace.get("spans"), list, "spans") or []
            processes = _typed(trace.get("processes"), dict, "processes") or {}
        except ValueError as exc:
            _fail(batch, f"data[{index}]: {exc}")
            continue
        resources = {key: _process(key, value) for key, value in processes.items()}
        for span_index, span in enumerate(spans):
            result = _span(span, trace.get("traceID"), resources, batch.origin)
            if isinstance(result, SpanRecord):
                batch.spans.append(result)
            else:
                _fail(batch, f"data[{index}].spans[{span_index}]: {result[0]}", result[1])


def _span(
    span: object, default_trace_id: object, resources: _Resources, origin: Origin | None
) -> SpanRecord | tuple[str, str | None]:
    """Decode one span; returns the record, or why it was rejected and its id if readable."""
    if not isinstance(span, dict):
        return f"span must be an object, got {type_name(span)}", None
    span_id = None
    try:
        span_id = _id(span.get("spanID"), 16, "spanID")
        trace_id = _id(span.get("traceID") or default_trace_id, 32, "traceID")
        name = _typed(span.get("operationName"), str, "operationName") or ""
        start_ns = _micros(span.get("startTime"), "startTime", required=True)
        attributes = _tags(span.get("tags"), "tag")
        kind, code, message, scope = _otel_tags(attributes)
        return SpanRecord(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=_parent(span, trace_id),
            name=name,
            kind=kind,
            start_ns=start_ns,
            end_ns=start_ns + _micros(span.get("duration"), "duration"),
            attributes=attributes,
            events=_logs(span.get("logs")) or (),
            status_code=code,
            status_message=message,
            resource=_resource(span, resources),
            scope=scope,
            origin=origin,
        )
    except ValueError as exc:
        return str(exc), span_id


def _id(value: object, digits: int, what: str) -> str:
    """A required, non-zero id (see :func:`_optional_id`)."""
    hex_id = _optional_id(value, digits, what)
    if hex_id is None:
        raise ValueError(f"{what} is all zeros" if value else f"missing {what}")
    return hex_id


def _optional_id(value: object, digits: int, what: str) -> str | None:
    """A hex id of at most ``digits`` digits, left-padded; missing, empty or all-zero is None."""
    text = (_typed(value, str, what) or "").lower()
    if len(text) > digits or not _HEX.issuperset(text):
        raise ValueError(f"{what} {value!r:.40} is not a hex id of at most {digits} digits")
    return text.rjust(digits, "0") if text.strip("0") else None


def _parent(span: dict[str, Any], trace_id: str) -> str | None:
    other = None
    for index, item in enumerate(_typed(span.get("references"), list, "references") or ()):
        where = f"references[{index}]"
        ref = _typed(item, dict, where) or {}
        ref_type = _typed(ref.get("refType"), str, f"{where}.refType")
        parent = _optional_id(ref.get("spanID"), 16, f"{where}.spanID")
        if ref.get("spanID") in (None, ""):
            raise ValueError(f"missing {where}.spanID")
        if parent is None:
            continue  # all zeros: no parent
        if _optional_id(ref.get("traceID"), 32, f"{where}.traceID") not in (None, trace_id):
            continue  # a link to another trace
        if ref_type is None or ref_type.upper() == "CHILD_OF":
            return parent
        other = other or parent
    return other or _optional_id(span.get("parentSpanID"), 16, "parentSpanID")


def _micros(value: object, what: str, *, required: bool = False) -> int:
    """A microsecond count (number or decimal string) in nanoseconds."""
    if value is None and required:
        raise ValueError(f"missing {what}")
    micros = 0 if value is None else json_int(value, what)
    if micros < 0:
        raise ValueError(f"{what} must not be negative, got {micros}")
    if micros > _MAX_MICROS:
        raise ValueError(f"{what} {micros} is out of range (at most {_MAX_MICROS} µs)")
    return micros * 1000


def _tags(kvs: object, what: str) -> Attributes:
    """A Jaeger ``[{key, type, value}]`` list as attributes; a repeated key keeps the last."""
    out: Attributes = {}
    for item in _typed(kvs, list, f"{what}s") or ():
        kv = _typed(item, dict, what) or {}
        key = kv.get("key")
        if not isinstance(key, str):
            raise ValueError(f"{what} key must be a string, got {type_name(key)}")
        try:
            out[key] = _tag_value(kv.get("type"), kv.get("value"))
        except ValueError as exc:
            raise ValueError(f"{what} {key!r}: {exc}") from None
    return out


def _tag_value(kind: object, value: object) -> AttrValue:
    if kind is None and (value is None or isinstance(value, (str, bool, int, float))):
        return value  # untyped: a scalar as it is
    kind = (_typed(kind, str, "type") or "").lower()
    if kind == "string" and isinstance(value, str):
        return value
    if (
        kind == "bool"
        and isinstance(value, (bool, str))
        and str(value).lower() in ("true", "false")
    ):
        return str(value).lower() == "true"
    if kind == "int64":
        return json_int(value, "int64 value", high=INT64_MAX)
    if kind == "float64" and isinstance(value, (int, float, str)) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            return float(value)
    if kind == "binary" and isinstance(value, str):
        return decode_base64(value)
    if kind not in ("string", "bool", "int64", "float64", "binary"):
        raise ValueError(f"unknown type {kind!r:.40}" if kind else "missing type")
    raise ValueError(f"not a valid {kind} value: {type_name(value)} {value!r:.40}")


def _otel_tags(attributes: Attributes) -> tuple[int, int, str | None, str | None]:
    """Kind, status code and message, and scope, removed from the tags (see module doc)."""
    kind = _KINDS.get(str(attributes.get("span.kind")).lower(), 0)
    if kind:
        del attributes["span.kind"]
    code = message = None
    if str(attributes.get("error")).lower() == "true":  # a bool, or a string
        code = 2
        del attributes["error"]
    value = attributes.get("otel.status_code")
    if isinstance(value, str):
        del attributes["otel.status_code"]
        code = code or _CODES.get(value.upper())
    if code and isinstance(attributes.get("otel.status_description"), str):
        message = str(attributes.pop("otel.status_description")) or None
    scopes = [attributes.pop(key, None) for key in _SCOPE_TAGS]
    scope = next((name for name in scopes[:2] if isinstance(name, str) and name), None)  # names
    return kind, code or 0, message, scope


def _logs(value: object) -> list[SpanEvent]:
    events = []
    for index, item in enumerate(_typed(value, list, "logs") or ()):
        try:
            log = _typed(item, dict, "log") or {}
            time_ns = _micros(log.get("timestamp"), "timestamp")
            fields = _tags(log.get("fields"), "field")
        except ValueError as exc:
            raise ValueError(f"logs[{index}]: {exc}") from None
        name = fields.pop("event", None) if isinstance(fields.get("event"), str) else None
        events.append(SpanEvent(name=str(name or "log"), time_ns=time_ns, attributes=fields))
    return events


def _resource(span: dict[str, Any], resources: _Resources) -> Attributes:
    """The span's process as resource attributes (shared by the spans of one process)."""
    if span.get("process") is not None:  # embedded in the span instead of the processes map
        resource = _process("", span["process"])
    else:
        process_id = _typed(span.get("processID"), str, "processID")
        if not process_id:
            return {}
        missing = f"processID {process_id!r} is not in the trace's processes"
        resource = resources.get(process_id, missing)
    if isinstance(resource, str):
        raise ValueError(resource)
    return resource


def _process(process_id: str, value: object) -> Attributes | str:
    """A process as resource attributes, or why it is malformed."""
    try:
        process = _typed(value, dict, "process") or {}
        resource = _tags(process.get("tags"), "tag")
        service = _typed(process.get("serviceName"), str, "serviceName")
    except ValueError as exc:
        return f"process {process_id!r}: {exc}" if process_id else f"process: {exc}"
    if service:
        resource["service.name"] = service
    return resource
