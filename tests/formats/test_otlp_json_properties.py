"""Property-based tests of the OTLP JSON reader (hypothesis).

1. Valid documents in random spellings (camelCase/snake_case keys, hex/base64 ids, integers
   as strings or numbers, enum names or numbers, every AnyValue type) decode to exactly
   the records they were built from.
2. Garbage, mutated documents and arbitrary values in any record field never raise out of
   ``decode_json_document``: the output is valid records plus located errors, one per
   record that was dropped.
3. The fast path agrees with the checked path wherever it returns a record.
4. The typed pass over the bytes (``decode_json_bytes``) gives exactly what
   ``json_text.loads`` (orjson, reading lone surrogate escapes as U+FFFD) +
   ``decode_json_document`` give, on all of the above.
5. The trace-id scan of a parallel import's edges (``add_line_trace_ids``) never raises
   and, wherever the document decodes without a bad record, finds exactly its trace ids
   and records.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st
from otlp_helpers import span_doc

from tracescore import json_text
from tracescore.exceptions import TraceFormatError
from tracescore.formats.base import Batch
from tracescore.formats.otlp_json import _span_lenient, decode_json_document
from tracescore.formats.otlp_json_fast import FAST_ERRORS, span_fast
from tracescore.formats.otlp_json_typed import decode_json_bytes
from tracescore.formats.trace_ids import add_line_trace_ids
from tracescore.spans import LogRecord, Origin, SpanEvent, SpanRecord

ORIGIN = Origin("traces.jsonl", 7)
HEX32 = re.compile(r"[0-9a-f]{32}")
HEX16 = re.compile(r"[0-9a-f]{16}")


INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
VALUES = st.recursive(
    st.one_of(
        st.none(), st.text(max_size=8), st.booleans(), INT64, st.floats(), st.binary(max_size=6)
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
ATTRIBUTES = st.dictionaries(st.text(max_size=10), VALUES, max_size=4)
NAMES = {"kind": ["UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"],
         "code": ["UNSET", "OK", "ERROR"]}  # fmt: skip


def _key(camel: str, snake: bool) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower() if snake else camel


def _encode_value(draw: Any, value: Any, snake: bool) -> dict[str, Any]:
    def key(name: str) -> str:
        return _key(name, snake)

    if value is None:
        return {}
    if isinstance(value, bool):
        return {key("boolValue"): value}
    if isinstance(value, int):
        return {key("intValue"): draw(st.sampled_from([str(value), value]))}
    if isinstance(value, float):
        if math.isnan(value):
            return {key("doubleValue"): "NaN"}
        if math.isinf(value):
            return {key("doubleValue"): "Infinity" if value > 0 else "-Infinity"}
        return {key("doubleValue"): value}
    if isinstance(value, str):
        return {key("stringValue"): value}
    if isinstance(value, bytes):
        return {key("bytesValue"): base64.b64encode(value).decode()}
    if isinstance(value, list):
        return {key("arrayValue"): {"values": [_encode_value(draw, v, snake) for v in value]}}
    return {key("kvlistValue"): {"values": _encode_attributes(draw, value, snake)}}


def _encode_attributes(draw: Any, attributes: dict[str, Any], snake: bool) -> list[Any]:
    return [{"key": k, "value": _encode_value(draw, v, snake)} for k, v in attributes.items()]


def _encode_id(draw: Any, data: bytes) -> str:
    style = draw(st.sampled_from(["hex", "HEX", "b64", "b64-unpadded"]))
    if style == "hex":
        return data.hex()
    if style == "HEX":
        return data.hex().upper()
    text = base64.b64encode(data).decode()
    return text if style == "b64" else text.rstrip("=")


def _encode_enum(draw: Any, value: int, field: str) -> Any:
    prefix = "SPAN_KIND_" if field == "kind" else "STATUS_CODE_"
    name = NAMES[field][value]
    return draw(st.sampled_from([value, prefix + name, name.lower()]))


NONZERO16 = st.binary(min_size=16, max_size=16).filter(any)
NONZERO8 = st.binary(min_size=8, max_size=8).filter(any)


@st.composite
def otlp_documents(draw: Any) -> tuple[Any, list[SpanRecord], list[LogRecord]]:
    """A valid OTLP JSON document in random spellings, and the records it must decode to."""
    snake = draw(st.booleans())

    def key(name: str) -> str:
        return _key(name, snake)

    spans: list[SpanRecord] = []
    logs: list[LogRecord] = []
    doc: dict[str, Any] = {}
    for signal in draw(st.sampled_from([["spans"], ["logs"], ["spans", "logs"]])):
        blocks = []
        for _ in range(draw(st.integers(1, 2))):
            resource = draw(ATTRIBUTES)
            scopes = []
            for _ in range(draw(st.integers(0, 2))):
                scope = draw(st.none() | st.text(min_size=1, max_size=6))
                items = []
                for _ in range(draw(st.integers(0, 3))):
                    if signal == "spans":
                        item, span = draw(_spans(snake, resource, scope))
                        spans.append(span)
                    else:
                        item, log = draw(_logs(snake, resource, scope))
                        logs.append(log)
                    items.append(item)
                records_key = "spans" if signal == "spans" else key("logRecords")
                scope_doc: dict[str, Any] = {records_key: items}
                if scope is not None:
                    scope_doc["scope"] = {"name": scope, "version": "1"}
                scopes.append(scope_doc)
            scopes_key = key("scopeSpans") if signal == "spans" else key("scopeLogs")
            blocks.append({"resource": {"attributes": _encode_attributes(draw, resource, snake)},
                           scopes_key: scopes})  # fmt: skip
        doc[key("resourceSpans") if signal == "spans" else key("resourceLogs")] = blocks
    if draw(st.booleans()) and "resourceSpans" in doc:
        doc = {"result": doc}
    return orjson.loads(orjson.dumps(doc)), spans, logs


@st.composite
def _spans(draw: Any, snake: bool, resource: Any, scope: str | None) -> Any:
    def key(name: str) -> str:
        return _key(name, snake)

    trace_id, span_id = draw(NONZERO16), draw(NONZERO8)
    parent = draw(st.none() | NONZERO8)
    kind, code = draw(st.integers(0, 5)), draw(st.integers(0, 2))
    start, end = draw(st.integers(0, 2**64 - 1)), draw(st.integers(0, 2**64 - 1))
    message = draw(st.none() | st.text(min_size=1, max_size=5))
    attributes = draw(ATTRIBUTES)
    events = draw(st.lists(st.tuples(st.text(max_size=5), st.integers(0, 2**63), ATTRIBUTES),
                           max_size=2))  # fmt: skip
    item: dict[str, Any] = {
        key("traceId"): _encode_id(draw, trace_id),
        key("spanId"): _encode_id(draw, span_id),
        "name": "span",
        "kind": _encode_enum(draw, kind, "kind"),
        key("startTimeUnixNano"): draw(st.sampled_from([str(start), start])),
        key("endTimeUnixNano"): str(end),
        "attributes": _encode_attributes(draw, attributes, snake),
        "events": [
            {key("timeUnixNano"): str(t), "name": n, "attributes": _encode_attributes(draw, a, snake)}
            for n, t, a in events
        ],
        "status": {"code": _encode_enum(draw, code, "code"), **({"message": message} if message else {})},
    }  # fmt: skip
    if parent is not None:
        item[key("parentSpanId")] = _encode_id(draw, parent)
    record = SpanRecord(
        trace_id=trace_id.hex(), span_id=span_id.hex(),
        parent_span_id=parent.hex() if parent else None, name="span", kind=kind,
        start_ns=start, end_ns=end, attributes=attributes,
        events=[SpanEvent(name=n, time_ns=t, attributes=a) for n, t, a in events] or (),
        status_code=code, status_message=message, resource=resource, scope=scope,
    )  # fmt: skip
    return item, record


@st.composite
def _logs(draw: Any, snake: bool, resource: Any, scope: str | None) -> Any:
    def key(name: str) -> str:
        return _key(name, snake)

    trace_id, span_id = draw(st.none() | NONZERO16), draw(st.none() | NONZERO8)
    time = draw(st.integers(0, 2**63))
    body, attributes = draw(VALUES), draw(ATTRIBUTES)
    event_name = draw(st.none() | st.text(min_size=1, max_size=5))
    item: dict[str, Any] = {
        key("observedTimeUnixNano") if draw(st.booleans()) else key("timeUnixNano"): str(time),
        "body": _encode_value(draw, body, snake),
        "attributes": _encode_attributes(draw, attributes, snake),
    }
    if trace_id is not None:
        item[key("traceId")] = _encode_id(draw, trace_id)
    if span_id is not None:
        item[key("spanId")] = _encode_id(draw, span_id)
    if event_name is not None:
        item[key("eventName")] = event_name
    record = LogRecord(
        trace_id=trace_id.hex() if trace_id else None, span_id=span_id.hex() if span_id else None,
        time_ns=time, event_name=event_name, body=body, attributes=attributes,
        resource=resource, scope=scope,
    )  # fmt: skip
    return item, record


def _comparable(value: Any) -> Any:
    """Records and values in a form where NaN equals NaN and 1, 1.0 and True differ."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {k: _comparable(v) for k, v in fields.items() if k != "origin"}
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value)
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return (type(value).__name__, value)


@settings(max_examples=150, deadline=None)
@given(otlp_documents())
def test_valid_documents_decode_to_the_expected_records(
    generated: tuple[Any, list[SpanRecord], list[LogRecord]],
) -> None:
    doc, spans, logs = generated
    batch = decode_json_document(doc, origin=ORIGIN)
    assert batch.errors == []
    assert _comparable(batch.spans) == _comparable(spans)
    assert _comparable(batch.logs) == _comparable(logs)
    _check_typed_pass_agrees(doc, ORIGIN)


# Values at the edges of what OTLP fields accept, to mix into mutations.
TRICKY: st.SearchStrategy[Any] = st.sampled_from([
    6, -1, 2**64, 1.5, True, "", "0" * 16, "0" * 32, "AAAAAAAAAAA=", "zz", "NaN", "Infinity",
    "SPAN_KIND_NOPE", "STATUS_CODE_ERROR", "1e3", [], {}, None, [{}], {"values": None},
    "09acc3d9 233945f0", {"message": 5}, [{"key": 5, "value": {"stringValue": "x"}}],
    [{"key": "k", "value": {"stringValue": 5, "intValue": "1"}}],
])  # fmt: skip
OTLP_KEYS = st.sampled_from([
    "resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "parentSpanId", "kind",
    "attributes", "key", "value", "stringValue", "intValue", "arrayValue", "kvlistValue",
    "values", "events", "status", "code", "resourceLogs", "scopeLogs", "logRecords", "body",
    "timeUnixNano", "result", "batches", "scope", "name", "message",
])  # fmt: skip


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | OTLP_KEYS, inner, max_size=4)
    ),
    max_leaves=20,
)


def _check_invariants(batch: Batch, origin: Origin) -> None:
    for error in batch.errors:
        assert isinstance(error, TraceFormatError)
        assert (error.path, error.line) == (origin.path, origin.line)
        assert "internal error" not in error.detail
        assert error.span_id is None or HEX16.fullmatch(error.span_id)
    for span in batch.spans:
        assert HEX32.fullmatch(span.trace_id)
        assert HEX16.fullmatch(span.span_id)
        assert span.parent_span_id is None or HEX16.fullmatch(span.parent_span_id)
        assert 0 <= span.kind <= 5
        assert 0 <= span.status_code <= 2
        assert isinstance(span.name, str)
        assert span.status_message is None or isinstance(span.status_message, str)
        assert span.scope is None or isinstance(span.scope, str)
        assert isinstance(span.start_ns, int)
        assert isinstance(span.end_ns, int)
        _check_attributes(span.attributes)
        for event in span.events:
            _check_attributes(event.attributes)
    for log in batch.logs:
        assert log.trace_id is None or HEX32.fullmatch(log.trace_id)
        assert log.span_id is None or HEX16.fullmatch(log.span_id)
        assert log.event_name is None or isinstance(log.event_name, str)
        assert log.severity_text is None or isinstance(log.severity_text, str)
        assert isinstance(log.time_ns, int)
        _check_attributes(log.attributes)
        _check_value(log.body)


def _outcome(decode: Callable[[], Batch]) -> Any:
    try:
        batch = decode()
    except orjson.JSONDecodeError as exc:
        return ("JSONDecodeError", str(exc))
    errors = [(str(e), e.span_id) for e in batch.errors]
    return _comparable(batch.spans), _comparable(batch.logs), errors, batch.origin


def _check_typed_pass_agrees(doc: Any, origin: Origin) -> None:
    """``decode_json_bytes`` of the document's bytes = ``decode_json_document`` of them."""
    try:
        data = orjson.dumps(doc)
    except orjson.JSONEncodeError:  # integers beyond 64 bits: bytes orjson cannot read
        data = json.dumps(doc).encode()
    reference = _outcome(lambda: decode_json_document(json_text.loads(data), origin=origin))
    assert _outcome(lambda: decode_json_bytes(data, origin=origin)) == reference
    _check_trace_ids_agree(data)


def _check_trace_ids_agree(data: bytes) -> None:
    ids: set[str] = set()
    records = add_line_trace_ids(data, ids)
    try:
        batch = decode_json_document(json_text.loads(data), origin=ORIGIN)
    except orjson.JSONDecodeError:
        assert (ids, records) == (set(), 0)
        return
    if batch.errors:
        return  # see tracescore.formats.trace_ids: a bad span may count there
    expected = {s.trace_id for s in batch.spans} | {g.trace_id for g in batch.logs if g.trace_id}
    assert (ids, records) == (expected, len(batch.spans) + len(batch.logs))


def _check_attributes(attributes: Any) -> None:
    assert isinstance(attributes, dict)
    for key, value in attributes.items():
        assert isinstance(key, str)
        _check_value(value)


def _check_value(value: Any) -> None:
    if isinstance(value, list):
        for item in value:
            _check_value(item)
    elif isinstance(value, dict):
        _check_attributes(value)
    else:
        assert value is None or isinstance(value, (str, bool, int, float, bytes))


@settings(max_examples=150, deadline=None)
@given(JSON, st.sampled_from(["top", "blocks", "scopes", "spans", "span", "attributes"]))
def test_garbage_never_raises_and_every_problem_is_located(garbage: Any, where: str) -> None:
    origin = Origin("garbage.jsonl", 3)
    wrap: Callable[[Any], Any] = {
        "top": lambda g: g,
        "blocks": lambda g: {"resourceSpans": g, "resourceLogs": g},
        "scopes": lambda g: {"resourceSpans": [{"scopeSpans": g}]},
        "spans": lambda g: {"resourceSpans": [{"scopeSpans": [{"spans": g}]}]},
        "span": lambda g: span_doc(**g) if isinstance(g, dict) else span_doc(name=g),
        "attributes": lambda g: span_doc(attributes=g),
    }[where]
    _check_invariants(decode_json_document(wrap(garbage), origin=origin), origin)
    _check_typed_pass_agrees(wrap(garbage), origin)


RECORD_FIELDS = {
    _key(name, snake)
    for name in [
        "traceId", "spanId", "parentSpanId", "kind", "startTimeUnixNano", "endTimeUnixNano",
        "status", "code", "message", "name", "events", "timeUnixNano", "observedTimeUnixNano",
        "eventName", "body", "severityText", "scope", "resource", "attributes", "events",
    ]
    for snake in (False, True)
}  # fmt: skip


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_paths(value, (*prefix, index)))
    return found


@settings(max_examples=150, deadline=None)
@given(otlp_documents(), st.data())
def test_mutated_documents_never_raise_and_every_problem_is_located(
    generated: tuple[Any, list[SpanRecord], list[LogRecord]], data: st.DataObject
) -> None:
    doc = copy.deepcopy(generated[0])
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        fields = [p for p in paths if p[-1] in RECORD_FIELDS]
        if fields and bool(data.draw(st.booleans())):  # aim at the fields decoders check
            paths = fields
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        action = data.draw(st.sampled_from(["replace", "delete", "rename"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "rename" and isinstance(parent, dict):
            parent[data.draw(OTLP_KEYS)] = parent.pop(path[-1])
        else:
            # A copy: sampled_from hands out the same mutable object every time, and a
            # later mutation inside it could put it inside itself.
            parent[path[-1]] = copy.deepcopy(data.draw(TRICKY | JSON))
    _check_invariants(decode_json_document(doc, origin=ORIGIN), ORIGIN)
    _check_typed_pass_agrees(doc, ORIGIN)


SPAN_FIELDS = st.sampled_from([
    "traceId", "spanId", "parentSpanId", "kind", "startTimeUnixNano", "endTimeUnixNano",
    "status", "name", "events", "attributes", "trace_id", "span_id", "parent_span_id",
])  # fmt: skip
LOG_FIELDS = st.sampled_from([
    "traceId", "spanId", "timeUnixNano", "observedTimeUnixNano", "eventName", "body",
    "attributes", "severityText", "trace_id", "event_name",
])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(SPAN_FIELDS, TRICKY | JSON, min_size=1, max_size=3),
       st.dictionaries(LOG_FIELDS, TRICKY | JSON, min_size=1, max_size=3))  # fmt: skip
def test_any_value_in_any_record_field_is_a_record_or_a_located_error(
    span_fields: dict[str, Any], log_fields: dict[str, Any]
) -> None:
    doc = span_doc(**span_fields)
    doc["resourceLogs"] = [{"scopeLogs": [{"logRecords": [log_fields]}]}]
    batch = decode_json_document(doc, origin=ORIGIN)
    _check_invariants(batch, ORIGIN)
    assert len(batch.spans) + len(batch.logs) + len(batch.errors) == 2
    _check_typed_pass_agrees(doc, ORIGIN)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(SPAN_FIELDS, TRICKY | JSON, max_size=3))
@example({"attributes": [{"key": "k", "value": {"stringValue": 5, "intValue": "1"}}]})
@example({"spanId": "09acc3d9 233945f0", "parent_span_id": 6})
@example({"status": {"message": 5}})
@example({"attributes": [{"key": 5, "value": {"stringValue": "x"}}]})
@example({"events": [{"timeUnixNano": "1", "attributes": [{"key": 5, "value": {}}]}]})
def test_fast_path_agrees_with_the_checked_path(span_fields: dict[str, Any]) -> None:
    """Wherever the fast path returns a record, the checked path returns the same one."""
    span = span_doc(**span_fields)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    try:
        fast = span_fast(span, {}, None, ORIGIN, {}, {})
    except FAST_ERRORS:
        return
    assert _comparable(_span_lenient(span, {}, None, ORIGIN)) == _comparable(fast)
