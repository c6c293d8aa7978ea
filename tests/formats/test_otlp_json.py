from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import span_doc, to_collector_json, to_tempo_json

from tracescore.exceptions import TraceFormatError
from tracescore.formats.base import Batch
from tracescore.formats.otlp_json import decode_json_document
from tracescore.formats.otlp_json_typed import decode_json_bytes
from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.spans import Origin, SpanRecord

ORIGIN = Origin("traces.jsonl", 7)


def _strip(record: Any) -> Any:
    return dataclasses.replace(record, origin=None)


def _by_id(records: list[SpanRecord]) -> dict[str, SpanRecord]:
    return {record.span_id: _strip(record) for record in records}


Decode = Callable[[Any], Batch]
_DECODERS: dict[str, Decode] = {
    # The reference: the parsed document; and the typed pass over the bytes, which must
    # give the same records and errors.
    "document": lambda doc: decode_json_document(orjson.loads(orjson.dumps(doc)), origin=ORIGIN),
    "bytes": lambda doc: decode_json_bytes(orjson.dumps(doc), origin=ORIGIN),
}


@pytest.fixture(params=sorted(_DECODERS))
def decode(request: pytest.FixtureRequest) -> Decode:
    """Each way a document is decoded: every test that takes it runs through both."""
    return _DECODERS[request.param]


# --- round trips through real exporter output ----------------------------------------


@pytest.mark.parametrize("snake", [False, True], ids=["camelCase", "snake_case"])
def test_sdk_spans_round_trip_through_collector_json(
    sdk_spans: list[ReadableSpan], snake: bool, decode: Decode
) -> None:
    batch = decode(to_collector_json(encode_spans(sdk_spans), snake=snake))
    assert batch.errors == []
    assert _by_id(batch.spans) == _by_id([from_readable_span(s) for s in sdk_spans])
    assert all(record.origin == ORIGIN for record in batch.spans)
    resources = {id(record.resource) for record in batch.spans}
    assert len(resources) == 1  # one resource block, one shared dict


@pytest.mark.parametrize("snake", [False, True], ids=["camelCase", "snake_case"])
def test_sdk_logs_round_trip_through_collector_json(
    sdk_logs: list[ReadableLogRecord], snake: bool, decode: Decode
) -> None:
    batch = decode(to_collector_json(encode_logs(sdk_logs), snake=snake))
    assert batch.errors == []
    assert [_strip(r) for r in batch.logs] == [from_sdk_log(r) for r in sdk_logs]


def test_traces_and_logs_in_one_document(
    sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord], decode: Decode
) -> None:
    doc = {**to_collector_json(encode_spans(sdk_spans)), **to_collector_json(encode_logs(sdk_logs))}
    batch = decode(doc)
    assert (len(batch.spans), len(batch.logs), batch.errors) == (len(sdk_spans), 3, [])


def test_tempo_download_with_base64_ids_and_enum_names(
    sdk_spans: list[ReadableSpan], decode: Decode
) -> None:
    doc = to_tempo_json(encode_spans(sdk_spans))
    block = doc["batches"][0]
    assert "instrumentationLibrarySpans" in block
    span = block["instrumentationLibrarySpans"][0]["spans"][0]
    assert span["kind"].startswith("SPAN_KIND_")
    assert len(span["traceId"]) == 24  # base64
    batch = decode(doc)
    assert batch.errors == []
    assert _by_id(batch.spans) == _by_id([from_readable_span(s) for s in sdk_spans])


@pytest.mark.parametrize("wrapper", ["result", "trace"], ids=["jaeger-v3", "tempo-v2"])
def test_api_wrappers(sdk_spans: list[ReadableSpan], wrapper: str, decode: Decode) -> None:
    batch = decode({wrapper: to_collector_json(encode_spans(sdk_spans))})
    assert (len(batch.spans), batch.errors) == (len(sdk_spans), [])


def test_an_array_of_documents_reads_as_each_of_them(
    sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord], decode: Decode
) -> None:
    # Export batches gathered into one JSON array by a script: each item is a document.
    doc = [
        to_collector_json(encode_spans(sdk_spans[:2])),
        {"result": to_collector_json(encode_spans(sdk_spans[2:]))},
        to_collector_json(encode_logs(sdk_logs)),
        "not a document",
        {},
    ]
    batch = decode(doc)
    assert _by_id(batch.spans) == _by_id([from_readable_span(s) for s in sdk_spans])
    assert len(batch.logs) == len(sdk_logs)
    [error] = batch.errors
    assert (error.line, error.detail) == (7, "expected a JSON object, got string")
    assert decode([]).errors == []


# --- leniency -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "code", "expected"),
    [
        ("SPAN_KIND_SERVER", "STATUS_CODE_ERROR", (2, 2)),
        ("server", "error", (2, 2)),
        ("Client", "OK", (3, 1)),
        (5, 0, (5, 0)),
        ("4", "2", (4, 2)),
    ],
)
def test_enum_names_and_numbers(
    kind: str | int, code: str | int, expected: tuple[int, int], decode: Decode
) -> None:
    batch = decode(span_doc(kind=kind, status={"code": code, "message": "m"}))
    [span] = batch.spans
    assert (span.kind, span.status_code) == expected


def test_64_bit_integers_as_numbers_or_strings(decode: Decode) -> None:
    attributes = [
        {"key": "n", "value": {"intValue": 9007199254740993}},
        {"key": "s", "value": {"intValue": "-9223372036854775808"}},
    ]
    batch = decode(
        span_doc(
            startTimeUnixNano=1700000000000000001,
            endTimeUnixNano="1700000000000000002",
            attributes=attributes,
        )
    )
    [span] = batch.spans
    assert (span.start_ns, span.end_ns) == (1700000000000000001, 1700000000000000002)
    assert span.attributes == {"n": 9007199254740993, "s": -(2**63)}


def test_special_doubles_nested_values_and_bytes(decode: Decode) -> None:
    attributes = [
        {"key": "nan", "value": {"doubleValue": "NaN"}},
        {"key": "inf", "value": {"doubleValue": "Infinity"}},
        {"key": "ninf", "value": {"doubleValue": "-Infinity"}},
        {"key": "raw", "value": {"bytesValue": "3q2+7w=="}},
        {"key": "empty", "value": {}},
        {
            "key": "nested",
            "value": {
                "kvlistValue": {
                    "values": [
                        {"key": "list", "value": {"arrayValue": {"values": [
                            {"intValue": "1"},
                            {"kvlistValue": {"values": [{"key": "x", "value": {"boolValue": True}}]}},
                        ]}}},
                    ]
                }
            },
        },
    ]  # fmt: skip
    [span] = decode(span_doc(attributes=attributes)).spans
    assert math.isnan(span.attributes["nan"])  # type: ignore[arg-type]
    assert span.attributes["inf"] == math.inf
    assert span.attributes["ninf"] == -math.inf
    assert span.attributes["raw"] == b"\xde\xad\xbe\xef"
    assert span.attributes["empty"] is None
    assert span.attributes["nested"] == {"list": [1, {"x": True}]}


@pytest.mark.parametrize("parent", [None, "", "0000000000000000", "AAAAAAAAAAA="])
def test_root_spans(parent: str | None, decode: Decode) -> None:
    extra = {} if parent is None else {"parentSpanId": parent}
    [span] = decode(span_doc(**extra)).spans
    assert span.parent_span_id is None


def test_hex_ids_with_spaces_are_rejected(decode: Decode) -> None:
    batch = decode(span_doc(spanId="09acc3d9 233945f0"))
    [error] = batch.errors
    assert "neither 16 hex digits" in error.detail


def test_uppercase_and_base64_ids_become_lowercase_hex(decode: Decode) -> None:
    doc = span_doc(
        traceId="5B8EFFF798038103D269B633813FC60C",
        spanId="CazD2SM5RfA=",
        parentSpanId="0A0B0C0D0E0F1011",
    )
    [span] = decode(doc).spans
    assert span.trace_id == "5b8efff798038103d269b633813fc60c"
    assert span.span_id == "09acc3d9233945f0"
    assert span.parent_span_id == "0a0b0c0d0e0f1011"


def test_unknown_fields_are_ignored(decode: Decode) -> None:
    doc = span_doc(links=[{"weird": 1}], flags=1, futureField={"a": [1]}, traceState="x=y")
    doc["resourceSpans"][0]["schemaUrl"] = "https://opentelemetry.io/schemas/1.30.0"
    doc["extra"] = True
    batch = decode(doc)
    assert (len(batch.spans), batch.errors) == (1, [])


# --- errors ---------------------------------------------------------------------------


def test_one_bad_span_costs_only_itself(sdk_spans: list[ReadableSpan], decode: Decode) -> None:
    doc = to_collector_json(encode_spans(sdk_spans))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    victim = spans[1]["spanId"]
    spans[1]["traceId"] = "not-a-trace-id"
    spans[2]["spanId"] = "xyz"
    batch = decode(doc)
    assert len(batch.spans) == len(sdk_spans) - 2
    first, second = batch.errors
    assert isinstance(first, TraceFormatError)
    assert (first.path, first.line, first.span_id) == ("traces.jsonl", 7, victim)
    assert "resourceSpans[0].scopeSpans[0].spans[1]" in first.detail
    assert "traceId 'not-a-trace-id' is neither 32 hex digits nor base64" in first.detail
    assert str(first).startswith(f"traces.jsonl:7: span {victim}: ")
    assert (second.line, second.span_id) == (7, None)
    assert "spanId 'xyz'" in second.detail


@pytest.mark.parametrize(
    ("span", "message"),
    [
        ({"kind": 9}, "kind must be 0-5 or a name"),
        ({"kind": True}, "kind must be 0-5"),
        ({"status": {"code": "BROKEN"}}, "status code must be 0-2"),
        ({"status": []}, "status must be an object"),
        ({"startTimeUnixNano": "soon"}, "start time must be an integer"),
        ({"name": 5}, "name must be a string"),
        ({"attributes": {"a": 1}}, "attributes must be an array"),
        ({"attributes": [{"key": "k", "value": {"intValue": "x"}}]}, "attribute 'k': intValue"),
        ({"events": [{"name": "e", "timeUnixNano": []}]}, "events[0]: time must be an integer"),
        ({"traceId": "00000000000000000000000000000000"}, "traceId is all zeros"),
        ({"traceId": None}, "missing traceId"),
        ({"status": {"message": 5}}, "status message must be a string"),
        ({"attributes": [{"key": 5, "value": {}}]}, "attribute key must be a string"),
    ],
)
def test_bad_fields_are_located_errors(span: dict[str, Any], message: str, decode: Decode) -> None:
    batch = decode(span_doc(**span))
    assert batch.spans == []
    [error] = batch.errors
    assert message in error.detail
    assert (error.path, error.line, error.span_id) == ("traces.jsonl", 7, "09acc3d9233945f0")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([[1, 2]], "expected a JSON object, got array"),  # arrays of arrays are not read
        (7, "expected a JSON object, got number"),
        ({"resourceSpans": {}}, "resourceSpans must be an array"),
        ({"resourceSpans": [3]}, "resourceSpans[0]: must be an object"),
        ({"resourceSpans": [{"resource": []}]}, "resource must be an object"),
        ({"resourceSpans": [{"scopeSpans": [{"scope": "x"}]}]}, "scope must be an object"),
        ({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "x"}]}]}]}, "traceId 'x'"),
        ({"resourceLogs": [{"scopeLogs": [{"logRecords": [7]}]}]}, "log record must be an object"),
        ({"data": [3]}, "data[0]: trace must be an object"),
        ({"error": {"message": "trace not found"}}, "'trace not found'"),
        ({"hello": 1}, "not an OTLP document"),
        ({"eval_set_id": "s", "eval_cases": []}, "not an OTLP document but an ADK evalset"),
        ({"evalSetId": "s", "evalCases": []}, "recorded runs to score (a PATH ending in .json)"),
        (
            {"criteria": {"safety_v1": 0.8}},
            "but an ADK eval config (criteria): `tracescore replay` takes it as --config",
        ),
        (
            {"trace_id": "t", "golden": None, "outcome": "scored", "criteria": {}},
            "but a line of `tracescore replay --output` results",
        ),
        (
            {"trace_id": "t", "user_content": "hi", "tool_calls": [], "final_response": "x"},
            "but an invocation written by `tracescore import --format jsonl`",
        ),
    ],
)
def test_malformed_documents_are_located_errors(doc: Any, message: str, decode: Decode) -> None:
    batch = decode(doc)
    assert (batch.spans, batch.logs) == ([], [])
    [error] = batch.errors
    assert message in error.detail
    assert (error.path, error.line) == ("traces.jsonl", 7)


def test_empty_documents_are_fine(decode: Decode) -> None:
    doc: dict[str, Any]
    for doc in ({}, {"resourceSpans": []}, {"resourceLogs": [{"scopeLogs": []}]}):
        batch = decode(doc)
        assert (batch.spans, batch.logs, batch.errors) == ([], [], [])


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    value: dict[str, Any] = {"stringValue": "leaf"}
    for _ in range(3000):
        value = {"arrayValue": {"values": [value]}}
    doc = span_doc(attributes=[{"key": "deep", "value": value}])
    batch = decode_json_document(doc, origin=None)  # too deep for orjson; built in Python
    [error] = batch.errors
    assert "nested too deeply" in error.detail
