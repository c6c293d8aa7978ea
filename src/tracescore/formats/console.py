r"""What the OTel Python SDK's console exporters print, as records.

``ConsoleSpanExporter`` and ``ConsoleLogRecordExporter`` print each span or log record
as its ``to_json()``: a JSON object, over many lines by default (``indent=4``), or one
per line with ``formatter=lambda s: s.to_json(indent=None) + "\n"``. Saved to a file
(an agent run under development with its stdout redirected), that is a stream of JSON
objects, not one document:

* one object per line is JSON Lines: each line is decoded as a JSON document, and
  :func:`~tracescore.formats.otlp_json.decode_json_document` hands it here
  (:func:`looks_like_console`), or, when orjson refuses it (``NaN``), the reader does
  (:func:`decode_console_line`);
* pretty-printed objects fail as one document; :func:`decode_console_stream` reads them
  one after another. Text printed between them (the agent's own output) is one located
  bad record per stretch, and the records after it still count.

The printout is not OTLP: ids are ``0x``-prefixed hex, the span kind is the enum's name
(``SpanKind.CLIENT``), times are ISO 8601 in microseconds (nanoseconds are cut), and the
instrumentation scope is not printed at all (records have none). Attribute values are the
SDK's own: strings, numbers, booleans and lists of them; log bodies any JSON value. The
SDK writes them with ``json.dumps``, so NaN and infinite doubles (``NaN``, ``Infinity``)
are read too, and half a surrogate pair escaped alone reads as U+FFFD.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Final

from tracescore import json_text
from tracescore.exceptions import TraceFormatError
from tracescore.formats.base import Batch
from tracescore.spans import Attributes, AttrValue, LogRecord, Origin, SpanEvent, SpanRecord

__all__ = [
    "decode_console_line",
    "decode_console_record",
    "decode_console_stream",
    "decode_console_text",
    "looks_like_console",
]

_KINDS: Final = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
_CODES: Final = {"UNSET": 0, "OK": 1, "ERROR": 2}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SPAN_KEYS: Final = frozenset({"name", "context", "kind", "start_time", "end_time"})
_LOG_KEYS: Final = frozenset({"body", "severity_number", "observed_timestamp", "trace_id"})
_SNIPPET_CHARS: Final = 40
_PEEK: Final = 64 * 1024
#: A line that opens a printed span (``name`` comes first) or log record (``body``).
_RECORD_START: Final = re.compile(r'^\{\s*"(?:name|body)"\s*:', re.MULTILINE)
_RECORD_START_BYTES: Final = re.compile(_RECORD_START.pattern.encode(), re.MULTILINE)


def looks_like_console(doc: object) -> bool:
    """Whether ``doc`` is a span or a log record as the console exporters print them."""
    return isinstance(doc, dict) and (doc.keys() >= _SPAN_KEYS or doc.keys() >= _LOG_KEYS)


def decode_console_record(doc: object, *, origin: Origin | None) -> Batch:
    """One printed span or log record (see :func:`looks_like_console`) as a batch.

    Never raises for bad input: a record that does not decode is one located error.
    """
    batch = Batch(origin=origin)
    span_id = None
    try:
        if not isinstance(doc, dict):
            raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
        if doc.keys() >= _SPAN_KEYS:
            context = _object(doc.get("context"), "context")
            span_id = _id(context.get("span_id"), 16, "span_id")
            batch.spans.append(_span(doc, context, span_id, origin))
        else:
            batch.logs.append(_log(doc, origin))
    except (ValueError, TypeError, OverflowError) as exc:
        batch.errors.append(_error(origin, f"console exporter record: {exc}", span_id))
    return batch


def decode_console_line(data: bytes | bytearray, *, origin: Origin | None) -> Batch | None:
    """One JSON line that orjson refused, if it is a printed record; else None.

    The SDK prints NaN and infinite doubles as ``NaN`` and ``Infinity``, which orjson
    (rightly, for OTLP) refuses: such a line is read here with Python's ``json``.
    """
    try:
        doc = json.loads(_text(data))
    except (ValueError, RecursionError):
        return None
    return decode_console_record(doc, origin=origin) if looks_like_console(doc) else None


def decode_console_text(head: bytes, read: Callable[[int], bytes], path: str) -> Batch | None:
    """The records of a file that starts with other text (the agent's prints), or None.

    Only the first 64 KiB are searched for a line that opens a record (so for
    :func:`decode_console_stream` too); the rest of the file is read (``read(-1)``) only
    when one does.

    Args:
        head: The bytes read from the file so far.
        read: The file's ``read``.
        path: The file's name, for the records' origins.

    """
    head += read(_PEEK)
    if _RECORD_START_BYTES.search(head) is None:
        return None
    return decode_console_stream(head + read(-1), path)


def decode_console_stream(data: bytes | bytearray, path: str) -> Batch | None:
    """Every record of a file of console exporter output, or None.

    None: no line in the first 64 KiB opens a printed record, or the first one that
    seems to is not one (the file is something else). Otherwise the batch holds every
    record that decoded, each with the line it starts on, and one located error per
    record that did not and per stretch of other text (the agent's own prints, before
    or between the records).
    """
    # Checked on the first bytes before anything is decoded: this runs on every JSON
    # document that failed, a cut-short 500 MB one included.
    if _RECORD_START_BYTES.search(data, 0, _PEEK) is None:
        return None
    text = _text(data)
    decoder = json.JSONDecoder()
    start = _RECORD_START.search(text)
    if start is None:
        return None
    try:
        first, _ = decoder.raw_decode(text, start.start())
    except (ValueError, RecursionError):
        return None
    if not looks_like_console(first):
        return None
    batch = Batch(origin=Origin(path))
    line, counted = 1, 0  # the line number at text[counted]
    pos = _skip_space(text, 0)
    while pos < len(text):
        line += text.count("\n", counted, pos)
        counted = pos
        origin = Origin(path, line)
        try:
            value, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):  # other output (a number, a word): to the next record
            snippet = text[pos : pos + _SNIPPET_CHARS].split("\n", 1)[0]
            detail = f"not a record of the console exporter: text starting {snippet!r}"
            batch.errors.append(_error(origin, detail))
            following = text.find("\n{", pos)  # the next printed record starts a line
            if following < 0:
                break
            pos = following + 1
            continue
        if looks_like_console(value):
            record = decode_console_record(value, origin=origin)
        else:
            keys = ", ".join(sorted(str(k) for k in value)[:5])
            detail = f"not a span or log record of the console exporter: {{{keys}}}"
            record = Batch(errors=[_error(origin, detail)])
        batch.spans += record.spans
        batch.logs += record.logs
        batch.errors += record.errors
        pos = _skip_space(text, end)
    return batch


def _span(
    doc: dict[str, object], context: dict[str, object], span_id: str, origin: Origin | None
) -> SpanRecord:
    name = doc.get("name")
    if not isinstance(name, str):
        raise ValueError("the span has no name")
    status = doc.get("status")
    status = status if isinstance(status, dict) else {}
    description = status.get("description")
    kind = doc.get("kind")
    return SpanRecord(
        trace_id=_id(context.get("trace_id"), 32, "trace_id"),
        span_id=span_id,
        parent_span_id=_optional_id(doc.get("parent_id"), 16, "parent_id"),
        name=name,
        kind=_KINDS.get(kind.rpartition(".")[2], 0) if isinstance(kind, str) else 0,
        start_ns=_time_ns(doc.get("start_time"), "start_time"),
        end_ns=_time_ns(doc.get("end_time"), "end_time"),
        attributes=_attributes(doc.get("attributes"), "attributes"),
        events=[_event(event) for event in _list(doc.get("events"), "events")] or (),
        status_code=_CODES.get(str(status.get("status_code", "UNSET")), 0),
        status_message=description if isinstance(description, str) and description else None,
        resource=_resource(doc.get("resource")),
        origin=origin,
    )


def _event(event: object) -> SpanEvent:
    event = _object(event, "event")
    name = event.get("name")
    return SpanEvent(
        name=name if isinstance(name, str) else "",
        time_ns=_time_ns(event.get("timestamp"), "event timestamp"),
        attributes=_attributes(event.get("attributes"), "event attributes"),
    )


def _log(doc: dict[str, object], origin: Origin | None) -> LogRecord:
    time_ns = _time_ns(doc.get("timestamp"), "timestamp") or _time_ns(
        doc.get("observed_timestamp"), "observed_timestamp"
    )
    event_name = doc.get("event_name")
    severity = doc.get("severity_text")
    body: AttrValue = doc.get("body")  # type: ignore[assignment]  # JSON, an AttrValue
    return LogRecord(
        trace_id=_optional_id(doc.get("trace_id"), 32, "trace_id"),
        span_id=_optional_id(doc.get("span_id"), 16, "span_id"),
        time_ns=time_ns,
        event_name=event_name if isinstance(event_name, str) and event_name else None,
        body=body,
        attributes=_attributes(doc.get("attributes"), "attributes"),
        severity_text=severity if isinstance(severity, str) and severity else None,
        resource=_resource(doc.get("resource")),
        origin=origin,
    )


def _id(value: object, width: int, what: str) -> str:
    if not isinstance(value, str) or not value.lower().startswith("0x"):
        raise ValueError(f"{what} {value!r} is not 0x-prefixed hex")
    try:
        number = int(value[2:], 16)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not 0x-prefixed hex") from None
    if number == 0 or number >= 1 << (4 * width):
        raise ValueError(f"{what} {value!r} is not a valid id")
    return f"{number:0{width}x}"


def _optional_id(value: object, width: int, what: str) -> str | None:
    """An id that may be absent: null, or all zeros (a log record outside any span)."""
    if value is None or (isinstance(value, (str, int)) and not int(str(value), 0)):
        return None
    return _id(value, width, what)


def _time_ns(value: object, what: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, str):
        raise ValueError(f"{what} {value!r} is not an ISO 8601 time")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{what} {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:  # the SDK prints UTC
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def _attributes(value: object, what: str) -> Attributes:
    if value is None:
        return {}
    return {str(key): item for key, item in _object(value, what).items()}  # type: ignore[misc]  # JSON values


def _resource(value: object) -> Attributes:
    if isinstance(value, str):  # older SDKs print the resource as JSON text
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if isinstance(value, dict):
        attributes = value.get("attributes", value)
        if isinstance(attributes, dict):
            return {str(key): item for key, item in attributes.items()}
    return {}


def _object(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not an object")
    return value


def _list(value: object, what: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} is not a list")
    return value


def _text(data: bytes | bytearray) -> str:
    """The bytes as text for Python's ``json``: bad UTF-8 and lone surrogates as U+FFFD."""
    text = bytes(data).decode("utf-8", "replace")
    return json_text.repair_escapes(text) if "\\u" in text else text


def _skip_space(text: str, pos: int) -> int:
    length = len(text)
    while pos < length and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _error(origin: Origin | None, detail: str, span_id: str | None = None) -> TraceFormatError:
    if origin is None:
        return TraceFormatError(detail, span_id=span_id)
    return TraceFormatError(detail, path=origin.path, line=origin.line, span_id=span_id)
