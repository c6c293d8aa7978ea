"""OTLP/JSON documents (traces and logs) to records: the hot loop of ``tracescore import``.

Accepted shapes (REFERENCE.md section 6), dispatched on top-level keys:

* OTLP export requests: ``resourceSpans`` and/or ``resourceLogs`` in one document;
* Tempo: ``batches`` instead of ``resourceSpans``, ``instrumentationLibrarySpans`` /
  ``instrumentationLibrary`` instead of ``scopeSpans`` / ``scope``, base64 ids, enum names;
* Jaeger v3 API: ``{"result": {...OTLP...}}`` (and Tempo v2's ``{"trace": {...}}``);
* Jaeger v1 JSON (``{"data": [...]}``): handed to :mod:`tracescore.formats.jaeger`;
* snake_case spellings of every key (``resource_spans``, ``trace_id``, ...).

Ids become lowercase hex. An id is read as hex when it has 32 (trace) or 16 (span) hex
digits, else as base64 that must decode to 16/8 bytes. A missing, empty or all-zero
``parentSpanId`` means a root span. Enums are integers or names (``SPAN_KIND_SERVER``,
``SERVER``, ``STATUS_CODE_ERROR``, ``ERROR``; case-insensitive). 64-bit integers are
decimal strings or numbers. Unknown fields are ignored.

Errors never escape :func:`decode_json_document`: each problem becomes a located
:class:`~tracescore.exceptions.TraceFormatError` in ``Batch.errors`` (origin path and
line, span id when it could be read, and the JSON path of the bad record). A span or log
record is either decoded completely or skipped with one error; its neighbours are kept.

Speed: every span first goes through
:func:`~tracescore.formats.otlp_json_fast.span_fast`, which handles the Collector's own
output (camelCase keys, hex ids, string integers, integer enums) with little more than
dict lookups. Anything it does not expect raises, and the span is decoded again by
:func:`_span_lenient`, which is the reference for what is accepted and why not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from tracescore.documents import Kind, identify
from tracescore.exceptions import TraceFormatError
from tracescore.formats.anyvalue import (
    json_any_value,
    json_attributes,
    json_enum,
    json_id,
    json_int,
    json_optional_id,
    type_name,
)
from tracescore.formats.base import Batch
from tracescore.formats.console import decode_console_record, looks_like_console
from tracescore.formats.jaeger import decode_jaeger_v1, looks_like_jaeger_v1
from tracescore.formats.otlp_json_fast import FAST_ERRORS, span_fast
from tracescore.spans import Attributes, LogRecord, Origin, SpanEvent, SpanRecord

__all__ = ["decode_json_document", "looks_like_document", "located_error"]

logger = logging.getLogger(__name__)

# Calling a dataclass with keyword arguments makes CPython build a kwargs dict (through
# type.__call__); allocating and calling __init__ directly runs the same __init__ about
# twice as fast, which matters on per-record paths.
_new: Final = object.__new__
_init_log: Final = LogRecord.__init__

_RESOURCE_SPANS: Final = ("resourceSpans", "resource_spans", "batches")
_RESOURCE_LOGS: Final = ("resourceLogs", "resource_logs")
_SCOPE_SPANS: Final = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans",
                       "instrumentation_library_spans")  # fmt: skip
_SCOPE_LOGS: Final = ("scopeLogs", "scope_logs", "instrumentationLibraryLogs",
                      "instrumentation_library_logs")  # fmt: skip
_SCOPE: Final = ("scope", "instrumentationLibrary", "instrumentation_library")
_WRAPPERS: Final = ("result", "trace")
_TOP_LEVEL_KEYS: Final = frozenset((*_RESOURCE_SPANS, *_RESOURCE_LOGS, *_WRAPPERS))
#: What a JSON document of another kind is told, by :func:`identify`'s kind.
_NOT_TRACES: Final[dict[Kind | None, str]] = {
    "eval_config": "not an OTLP document but an ADK eval config (criteria): "
    "`tracescore replay` takes it as --config",
    "eval_result": "not an OTLP document but an ADK eval result (adk eval history): "
    "`tracescore replay` scores its recorded runs (a PATH)",
    "results": "not an OTLP document but a line of `tracescore replay --output` results: "
    "results are not traces, leave them out of the inputs",
    "invocations": "not an OTLP document but an invocation written by `tracescore import "
    "--format jsonl`: import and replay read the traces themselves",
}

_KINDS: Final = {"UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4,
                  "CONSUMER": 5}  # fmt: skip
_CODES: Final = {"UNSET": 0, "OK": 1, "ERROR": 2}


def decode_json_document(doc: object, *, origin: Origin | None) -> Batch:
    """Decode one parsed OTLP/JSON document (one export batch) into records.

    Args:
        doc: The value ``orjson.loads`` returned for one JSON Lines line or one file: a
            document, or an array of documents (each decoded as if alone; an item that
            is not an object is one located error).
        origin: Where the document came from; copied onto every record and error.

    Returns:
        A batch with the spans and log records that decoded, and one located error for
        each one that did not (or for each malformed block around them). Never raises
        for bad input.

    """
    batch = Batch(origin=origin)
    try:
        if isinstance(doc, list):  # export batches gathered in one array by a script
            for item in doc:
                _document(item, batch, wrapped=False)
        else:
            _document(doc, batch, wrapped=False)
    except Exception as exc:  # a bug here must cost one batch, not the whole import
        logger.error("internal error decoding OTLP JSON at %s", origin, exc_info=True)
        batch.errors.append(located_error(origin, f"internal error while decoding: {exc!r}"))
    return batch


def looks_like_document(doc: object) -> bool:
    """Whether ``doc`` is a JSON object with one of the top-level keys decoded here."""
    if isinstance(doc, dict) and any(key in doc for key in _TOP_LEVEL_KEYS):
        return True
    return looks_like_jaeger_v1(doc)


def located_error(
    origin: Origin | None, detail: str, span_id: str | None = None
) -> TraceFormatError:
    """A :class:`TraceFormatError` located at ``origin`` (path and line) and ``span_id``."""
    if origin is None:
        return TraceFormatError(detail, span_id=span_id)
    return TraceFormatError(detail, path=origin.path, line=origin.line, span_id=span_id)


def _pick(obj: dict[str, object], keys: tuple[str, ...]) -> object:
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def _get2(obj: dict[str, object], camel: str, snake: str) -> object:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _document(doc: object, batch: Batch, *, wrapped: bool) -> None:
    origin = batch.origin
    if not isinstance(doc, dict):
        batch.errors.append(located_error(origin, f"expected a JSON object, got {type_name(doc)}"))
        return
    spans = _pick(doc, _RESOURCE_SPANS)
    logs = _pick(doc, _RESOURCE_LOGS)
    if spans is not None:
        _each_block(spans, "resourceSpans", batch, _resource_spans)
    if logs is not None:
        _each_block(logs, "resourceLogs", batch, _resource_logs)
    if spans is not None or logs is not None:
        return
    inner = None if wrapped else _pick(doc, _WRAPPERS)
    if isinstance(inner, dict):
        _document(inner, batch, wrapped=True)
    elif isinstance(doc.get("error"), dict):  # Jaeger v3 API error reply
        message = doc["error"].get("message")
        batch.errors.append(located_error(origin, f"the trace API returned an error: {message!r}"))
    elif looks_like_jaeger_v1(doc):
        jaeger = decode_jaeger_v1(doc, origin=origin)
        batch.spans += jaeger.spans
        batch.errors += jaeger.errors
    elif looks_like_console(doc):  # the SDK's console exporter, one record per line
        console = decode_console_record(doc, origin=origin)
        batch.spans += console.spans
        batch.logs += console.logs
        batch.errors += console.errors
    elif "eval_cases" in doc or "evalCases" in doc:  # (an eval result has neither)
        batch.errors.append(
            located_error(
                origin,
                "not an OTLP document but an ADK evalset: `tracescore replay` reads it "
                "as goldens (--goldens) or as recorded runs to score (a PATH ending in .json)",
            )
        )
    elif (kind := identify(doc)) in _NOT_TRACES:
        batch.errors.append(located_error(origin, _NOT_TRACES[kind]))
    elif doc:
        keys = ", ".join(sorted(str(key) for key in doc)[:5])
        batch.errors.append(
            located_error(
                origin, f"not an OTLP document: no resourceSpans or resourceLogs ({keys})"
            )
        )


def _each_block(
    blocks: object, where: str, batch: Batch, decode: Callable[[object, str, Batch], None]
) -> None:
    if not isinstance(blocks, list):
        detail = f"{where} must be an array, got {type_name(blocks)}"
        batch.errors.append(located_error(batch.origin, detail))
        return
    for index, block in enumerate(blocks):
        decode(block, f"{where}[{index}]", batch)


def _block_parts(
    block: object, where: str, batch: Batch, scope_keys: tuple[str, ...]
) -> tuple[Attributes, list[object]] | None:
    """Resource attributes and scope list of one resource block, or None after an error."""
    try:
        if not isinstance(block, dict):
            raise ValueError(f"must be an object, got {type_name(block)}")
        resource = block.get("resource")
        if resource is None:
            attributes: Attributes = {}
        elif isinstance(resource, dict):
            attributes = json_attributes(resource.get("attributes"))
        else:
            raise ValueError(f"resource must be an object, got {type_name(resource)}")
        scopes = _pick(block, scope_keys)
        if scopes is None:
            return attributes, []
        if not isinstance(scopes, list):
            raise ValueError(f"{scope_keys[0]} must be an array, got {type_name(scopes)}")
    except (ValueError, RecursionError) as exc:
        batch.errors.append(located_error(batch.origin, f"{where}: {exc}"))
        return None
    return attributes, scopes


def _scope_parts(
    scope_block: object, where: str, batch: Batch, records_keys: tuple[str, str]
) -> tuple[str | None, list[object]] | None:
    """Scope name and record list of one scope block, or None after an error."""
    try:
        if not isinstance(scope_block, dict):
            raise ValueError(f"must be an object, got {type_name(scope_block)}")
        scope = _pick(scope_block, _SCOPE)
        name = None
        if scope is not None:
            if not isinstance(scope, dict):
                raise ValueError(f"scope must be an object, got {type_name(scope)}")
            name = scope.get("name")
            if name is not None and not isinstance(name, str):
                raise ValueError(f"scope name must be a string, got {type_name(name)}")
        records = _get2(scope_block, *records_keys)
        if records is None:
            return name or None, []
        if not isinstance(records, list):
            raise ValueError(f"{records_keys[0]} must be an array, got {type_name(records)}")
    except ValueError as exc:
        batch.errors.append(located_error(batch.origin, f"{where}: {exc}"))
        return None
    return name or None, records


def _resource_spans(block: object, where: str, batch: Batch) -> None:
    parts = _block_parts(block, where, batch, _SCOPE_SPANS)
    if parts is None:
        return
    resource, scopes = parts
    origin = batch.origin
    append = batch.spans.append
    fast = span_fast
    trace_ids: dict[str, str] = {}  # raw id -> hex, see span_fast
    span_ids: dict[str, str] = {}
    for scope_index, scope_block in enumerate(scopes):
        scope_where = f"{where}.scopeSpans[{scope_index}]"
        scope_parts = _scope_parts(scope_block, scope_where, batch, ("spans", "spans"))
        if scope_parts is None:
            continue
        scope, spans = scope_parts
        for span in spans:
            try:
                append(fast(span, resource, scope, origin, trace_ids, span_ids))
            except FAST_ERRORS:
                checked = _span_lenient(span, resource, scope, origin)
                if isinstance(checked, tuple):
                    reason, span_id = checked
                    index = next(i for i, item in enumerate(spans) if item is span)
                    detail = f"{scope_where}.spans[{index}]: {reason}"
                    batch.errors.append(located_error(origin, detail, span_id))
                else:
                    append(checked)


def _time(value: object, what: str) -> int:
    return 0 if value is None else json_int(value, what)


def _optional_str(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise ValueError(f"{what} must be a string, got {type_name(value)}")


def _events(value: object) -> list[SpanEvent]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"events must be an array, got {type_name(value)}")
    events = []
    for index, event in enumerate(value):
        if not isinstance(event, dict):
            raise ValueError(f"events[{index}] must be an object, got {type_name(event)}")
        try:
            events.append(
                SpanEvent(
                    name=_optional_str(event.get("name"), "name") or "",
                    time_ns=_time(_get2(event, "timeUnixNano", "time_unix_nano"), "time"),
                    attributes=json_attributes(event.get("attributes")),
                )
            )
        except ValueError as exc:
            raise ValueError(f"events[{index}]: {exc}") from None
    return events


def _status(value: object) -> tuple[int, str | None]:
    if value is None:
        return 0, None
    if not isinstance(value, dict):
        raise ValueError(f"status must be an object, got {type_name(value)}")
    code = json_enum(value.get("code"), _CODES, "STATUS_CODE_", "status code")
    return code, _optional_str(value.get("message"), "status message")


def _span_lenient(
    span: object, resource: Attributes, scope: str | None, origin: Origin | None
) -> SpanRecord | tuple[str, str | None]:
    """Decode one span checking everything; the reference for what is accepted.

    Returns the record, or why it was rejected and its span id when that could be read.
    """
    if not isinstance(span, dict):
        return f"span must be an object, got {type_name(span)}", None
    try:
        span_id = json_id(_get2(span, "spanId", "span_id"), 8, "spanId")
    except ValueError as exc:
        return str(exc), None
    try:
        trace_id = json_id(_get2(span, "traceId", "trace_id"), 16, "traceId")
        parent = json_optional_id(_get2(span, "parentSpanId", "parent_span_id"), 8, "parentSpanId")
        kind = json_enum(span.get("kind"), _KINDS, "SPAN_KIND_", "kind")
        start = _time(_get2(span, "startTimeUnixNano", "start_time_unix_nano"), "start time")
        end = _time(_get2(span, "endTimeUnixNano", "end_time_unix_nano"), "end time")
        code, message = _status(span.get("status"))
        return SpanRecord(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            name=_optional_str(span.get("name"), "name") or "",
            kind=kind,
            start_ns=start,
            end_ns=end,
            attributes=json_attributes(span.get("attributes")),
            events=_events(span.get("events")) or (),
            status_code=code,
            status_message=message,
            resource=resource,
            scope=scope,
            origin=origin,
        )
    except (ValueError, RecursionError) as exc:
        return _reason(exc), span_id


def _reason(exc: Exception) -> str:
    return "values nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _resource_logs(block: object, where: str, batch: Batch) -> None:
    parts = _block_parts(block, where, batch, _SCOPE_LOGS)
    if parts is None:
        return
    resource, scopes = parts
    origin = batch.origin
    for scope_index, scope_block in enumerate(scopes):
        scope_where = f"{where}.scopeLogs[{scope_index}]"
        scope_parts = _scope_parts(scope_block, scope_where, batch, ("logRecords", "log_records"))
        if scope_parts is None:
            continue
        scope, records = scope_parts
        for index, record in enumerate(records):
            try:
                batch.logs.append(_log(record, resource, scope, origin))
            except (ValueError, RecursionError) as exc:
                detail = f"{scope_where}.logRecords[{index}]: {_reason(exc)}"
                batch.errors.append(located_error(origin, detail))


def _log(
    record: object, resource: Attributes, scope: str | None, origin: Origin | None
) -> LogRecord:
    """Decode one log record; raises ValueError for a malformed one."""
    if not isinstance(record, dict):
        raise ValueError(f"log record must be an object, got {type_name(record)}")
    time = _time(_get2(record, "timeUnixNano", "time_unix_nano"), "time")
    if not time:
        observed = _get2(record, "observedTimeUnixNano", "observed_time_unix_nano")
        time = _time(observed, "observed time")
    log = _new(LogRecord)
    _init_log(
        log,
        trace_id=json_optional_id(_get2(record, "traceId", "trace_id"), 16, "traceId"),
        span_id=json_optional_id(_get2(record, "spanId", "span_id"), 8, "spanId"),
        time_ns=time,
        event_name=_optional_str(_get2(record, "eventName", "event_name"), "eventName"),
        body=json_any_value(record.get("body")),
        attributes=json_attributes(record.get("attributes")),
        severity_text=_optional_str(_get2(record, "severityText", "severity_text"), "severityText"),
        resource=resource,
        scope=scope,
        origin=origin,
    )
    return log
